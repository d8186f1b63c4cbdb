"""Hypothesis strategies for described groups (shared by the assignor tests of this branch)."""

from __future__ import annotations

from hypothesis import strategies as st

from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec


@st.composite
def groups(draw, *, uniform: bool | None = None, max_members: int = 12, max_topics: int = 5,
           max_partitions: int = 24, with_racks: bool = False, with_instance_ids: bool = False,
           equal_partitions: bool = False) -> GroupSpec:
    n_topics = draw(st.integers(1, max_topics))
    names = [f"t{i}" for i in range(n_topics)]
    rack_names = ["r0", "r1", "r2"]
    topics = {}
    shared = draw(st.integers(1, max_partitions))
    for t in names:
        n = shared if equal_partitions else draw(st.integers(1, max_partitions))
        racks = None
        if with_racks and draw(st.booleans()):
            racks = tuple(
                tuple(draw(st.lists(st.sampled_from(rack_names), min_size=1, max_size=2, unique=True)))
                for _ in range(n)
            )
        topics[t] = TopicSpec(t, n, racks)
    n_members = draw(st.integers(1, max_members))
    is_uniform = draw(st.booleans()) if uniform is None else uniform
    common = tuple(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
    members = []
    for i in range(n_members):
        subs = common if is_uniform else tuple(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
        rack = draw(st.sampled_from([None, *rack_names])) if with_racks else None
        inst = draw(st.sampled_from([None, f"i{(i * 7) % 11}"])) if with_instance_ids else None
        members.append(MemberSpec(member_id=f"m{draw(st.integers(0, 999))}-{i}", topics=subs, rack=rack,
                                  instance_id=inst))
    return GroupSpec(topics=topics, members=members)
