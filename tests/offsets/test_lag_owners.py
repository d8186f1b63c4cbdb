"""Owners over time for the lag phase (kgtool.offsets.lag_input): the classic groups' arrays
(_classic_entries) against the event-by-event timelines (_owner_timelines), as the owner at
every instant that matters; and a group that is not classic-only takes the event path."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.offsets.lag_input import _GroupOwners, _owner_entries, _owner_timelines

MEMBERS = [("m-a", "/10.0.0.1", "c-a"), ("m-b", "/10.0.0.2", "c-b"), ("m-c", "/10.0.0.3", "c-c")]


@st.composite
def classic_groups(draw):
    """Groups whose records are GroupMetadata snapshots: a generation row, then its members'
    rows at the same record offset and time (times may repeat; a coordinator clock going back
    leaves both paths' times out of order, and the owner at an instant is not defined then)."""
    groups = {}
    rec = 0
    for name in ("g1", "g2", "g3")[:draw(st.integers(1, 3))]:
        o = _GroupOwners()
        t = 1000
        for _ in range(draw(st.integers(1, 12))):
            rec += draw(st.integers(1, 5))
            t += draw(st.sampled_from([0, 0, 7, 1000]))
            o.events.append((rec, t, "gen", None))
            for m in draw(st.lists(st.sampled_from(range(3)), max_size=3)):  # a member twice: the later wins
                member, host, client = MEMBERS[m]
                o.events.append((rec, t, "member", (member, client, host,
                                                    draw(st.lists(st.integers(0, 4), max_size=4, unique=True)))))
        if draw(st.booleans()):  # as the replay hands them on: generation rows after their members'
            o.events.sort(key=lambda e: e[2] == "gen")
        groups[name] = o
    return groups


def _owner_at(times, owners, t):
    k = bisect_right(times, t) - 1
    return owners[k] if k >= 0 else None


@settings(max_examples=300, deadline=None)
@given(classic_groups())
def test_the_classic_arrays_give_the_owners_of_the_events(groups):
    codes = {name: k for k, name in enumerate(groups)}
    table, (dp, grp, ts, ids) = _owner_entries(groups, dict(codes))
    instants = sorted({e[1] + d for o in groups.values() for e in o.events for d in (-1, 0, 1)})
    for name, o in groups.items():
        want = _owner_timelines(o)
        for k in range(5):
            sel = (grp == codes[name]) & (dp == k)
            times, owners = ts[sel].tolist(), [None if i < 0 else table[i] for i in ids[sel].tolist()]
            w = want.get(k, ([], []))
            assert times == sorted(times)
            for t in instants:
                assert _owner_at(times, owners, t) == _owner_at(*w, t), (name, k, t)


def test_a_group_with_member_records_of_its_own_takes_the_event_path():
    o = _GroupOwners(protocol="consumer")
    o.events += [(5, 100, "member", ("m-a", "c-a", "h", [0, 1])), (9, 200, "member", ("m-b", "c-b", "h", [1]))]
    table, (dp, grp, ts, ids) = _owner_entries({"g": o}, {"g": 0})
    got = {(int(d), int(t)): table[i] for d, t, i in zip(dp, ts, ids)}
    assert got == {(0, 100): ("m-a", "h", "c-a"), (1, 100): ("m-a", "h", "c-a"), (1, 200): ("m-b", "h", "c-b")}
    assert np.all(np.diff(dp) >= 0)


def test_a_transactional_commit_takes_effect_at_its_marker_and_a_deletion_is_kept():
    """LagInputs on a chunk of the commits table: the instant of a commit is its record's time,
    or its COMMIT marker's (known from the task's pre-pass before the replay); a deleted offset
    (null) stays a deletion; other topics and data partitions not given are left out."""
    import pyarrow as pa

    from kgtool.offsets.lag import DELETED
    from kgtool.offsets.lag_input import LagInputs

    markers = {50: 9_000}
    inputs = LagInputs({("orders", 0): 0, ("orders", 1): 1}, 7, markers)
    table = pa.table({
        "group": pa.array(["g", "g", "g", "h", "g"]).dictionary_encode(),
        "topic": pa.array(["orders", "orders", "other", "orders", "orders"]).dictionary_encode(),
        "partition": pa.array([0, 0, 0, 1, 5], pa.int32()),
        "timestamp": pa.array([1_000, 2_000, 3_000, 4_000, 5_000], pa.int64()),
        "offset": pa.array([10, None, 30, 40, 50], pa.int64()),
        "record_offset": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "effective_at_offset": pa.array([50, 2, 3, 4, 5], pa.int64()),
        "effective": pa.array([True, True, True, True, True]),
    })
    inputs.commits_table(table)
    got = {k: inp for k, inp in inputs.payloads()}
    assert sorted(got) == [0, 1]
    zero = got[0]
    assert zero.groups == ["g"] and zero.log_partition == 7
    # sorted by time within the group: the deletion at 2,000, then the transaction's commit at its marker
    assert zero.when.tolist() == [2_000, 9_000] and zero.offset.tolist() == [DELETED, 10]
    assert got[1].groups == ["h"] and got[1].when.tolist() == [4_000] and got[1].offset.tolist() == [40]
