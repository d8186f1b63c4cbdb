"""Shared helpers of the sticky / cooperative-sticky tests: small group builders, strategies,
and the comparison of the package's array implementation with the line-by-line port."""

from __future__ import annotations

from hypothesis import strategies as st

import tests.assignors.sticky_reference as ref
from kgtool.assignors import _sticky_fast
from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec
from kgtool.assignors.sticky import CooperativeStickyAssignor, StickyAssignor, sticky_input


def group(topics: dict[str, int], members: dict[str, dict], racks: dict[str, list[list[str]]] | None = None) -> GroupSpec:
    """``group({"t": 3}, {"c1": {"topics": ["t"], "owned": [("t", 0)], "generation": 1}})``."""
    racks = racks or {}
    return GroupSpec(
        topics={t: TopicSpec(t, n, tuple(tuple(r) for r in racks[t]) if t in racks else None) for t, n in topics.items()},
        members=[
            MemberSpec(
                member_id=m,
                topics=tuple(spec["topics"]),
                owned=tuple(spec.get("owned", ())),
                generation=spec.get("generation"),
                rack=spec.get("rack"),
            )
            for m, spec in members.items()
        ],
    )


def next_round(g: GroupSpec, assignment: dict[str, list], generation: int) -> GroupSpec:
    """The same group, each member owning what it was just assigned, in ``generation``."""
    return GroupSpec(
        topics=g.topics,
        members=[
            MemberSpec(m.member_id, m.topics, tuple(assignment[m.member_id]), generation, m.rack, m.instance_id)
            for m in g.members
        ],
    )


@st.composite
def groups(draw, *, uniform: bool | None = None, max_members: int = 12, with_racks: bool = True) -> GroupSpec:
    """Random first-round groups: 1-12 members, 1-5 topics of 1-24 partitions, optional racks."""
    n_topics = draw(st.integers(1, 5))
    topics = {f"t{i}": draw(st.integers(1, 24)) for i in range(n_topics)}
    names = list(topics)
    rack_names = ["r0", "r1", "r2"]
    use_racks = with_racks and draw(st.booleans())
    racks = None
    if use_racks:
        racks = {
            t: [draw(st.lists(st.sampled_from(rack_names), min_size=1, max_size=2, unique=True)) for _ in range(n)]
            for t, n in topics.items()
        }
    n_members = draw(st.integers(1, max_members))
    same = uniform if uniform is not None else draw(st.booleans())
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    members = {}
    for i in range(n_members):
        subs = common if same else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        members[f"C{i}"] = {
            "topics": subs,
            "rack": draw(st.sampled_from(rack_names + [None])) if use_racks else None,
        }
    return group(topics, members, racks)


@st.composite
def later_rounds(draw, *, uniform: bool | None = None, with_racks: bool = False, conflicts: bool = True) -> GroupSpec:
    """Groups whose members own partitions: random claims, generations, stale and double claims."""
    g = draw(groups(uniform=uniform, with_racks=with_racks))
    all_tps = [(t, p) for t, spec in g.topics.items() for p in range(spec.partitions)]
    members = []
    taken: set = set()
    for m in g.members:
        k = draw(st.integers(0, min(len(all_tps), 30)))
        owned = draw(st.lists(st.sampled_from(all_tps), max_size=k, unique=True)) if all_tps else []
        if not conflicts:
            owned = [tp for tp in owned if tp not in taken]
            taken.update(owned)
        generation = draw(st.sampled_from([None, 3, 4, 4, 4]))
        if generation is None and owned and draw(st.booleans()):
            generation = 4
        members.append(MemberSpec(m.member_id, m.topics, tuple(owned), generation, m.rack))
    return GroupSpec(topics=g.topics, members=members)


# --- the array implementation against the line-by-line port ---

def reference(g: GroupSpec, *, cooperative: bool) -> dict:
    """The port's assignment (after ``adjustAssignment`` for the cooperative assignor)."""
    inp = sticky_input(g, cooperative=cooperative)
    assignment, transferring = ref.assign_partitions(inp)
    if cooperative:
        if transferring is None:
            transferring = ref.partitions_transferring_ownership(inp, assignment)
        ref.adjust_assignment(assignment, transferring)
    return {m.member_id: assignment[m.member_id] for m in g.members}


def outcome(fn):
    """The result, or the failure Kafka's assignor would throw (both implementations must agree)."""
    try:
        return fn()
    except ref.StickyAssignorFailure as e:
        return ("Kafka throws", str(e))


def assert_fast_path_ran(g: GroupSpec, *, cooperative: bool, expected) -> None:
    """The array implementation decided the group itself: a result, or, where Kafka's assignor
    throws (``expected`` is then ``("Kafka throws", message)``), the same failure."""
    fast = outcome(lambda: _sticky_fast.assign(sticky_input(g, cooperative=cooperative), cooperative=cooperative))
    thrown = isinstance(expected, tuple) and expected and expected[0] == "Kafka throws"
    if thrown:
        assert fast == expected
    else:
        assert isinstance(fast, tuple) and len(fast) == 3 and isinstance(fast[0], dict), fast


def assert_same_as_reference(g: GroupSpec) -> None:
    """Both assignors give the port's result (or its failure), decided by the array implementation."""
    for cooperative, assignor in ((False, StickyAssignor()), (True, CooperativeStickyAssignor())):
        expected = outcome(lambda: reference(g, cooperative=cooperative))
        assert outcome(lambda: assignor.assign(g)) == expected
        if g.members:
            assert_fast_path_ran(g, cooperative=cooperative, expected=expected)
