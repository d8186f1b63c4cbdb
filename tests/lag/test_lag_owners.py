"""Owners over time for the lag phase (kgtool.lag.collector): the classic groups' arrays
(LagCollector.owner_changes over the flat members rows, _classic_entries) against the
event-by-event timelines (_owner_timelines), as the owner at every instant that matters; and a
group that is not classic-only takes the event path."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.lag.collector import LagCollector, _GroupOwners, _owner_timelines
from kgtool.offsets.tables import MEMBER

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


def _owner_changes(groups: dict[str, _GroupOwners]):
    """LagCollector.owner_changes of the groups' events fed as the replay hands its rows on (members
    rows as tuples, generation rows as dicts; data partition k is t-k), and the group codes."""
    li = LagCollector({("t", k): k for k in range(5)}, 0)
    width = max(MEMBER.values()) + 1
    members, gens = [], []
    for name, o in groups.items():
        for rec, ts, kind, payload in o.events:
            if kind == "gen":
                gens.append({"group": name, "record_offset": rec, "timestamp": ts, "protocol": o.protocol})
                continue
            member, client, host, assigned = payload
            row = [None] * width
            for field, v in (("group", name), ("record_offset", rec), ("timestamp", ts), ("member_id", member),
                             ("client_id", client), ("client_host", host),
                             ("assigned_partitions", [f"t-{k}" for k in assigned])):
                row[MEMBER[field]] = v
            members.append(tuple(row))
    li.history_rows("members", members)
    li.history_rows("generations", gens)
    for name, o in groups.items():
        li.owners[name].protocol = o.protocol
    table, arrays = li.owner_changes()
    return table, arrays, dict(li._groups)


def _owner_at(times, owners, t):
    k = bisect_right(times, t) - 1
    return owners[k] if k >= 0 else None


@settings(max_examples=300, deadline=None)
@given(classic_groups())
def test_the_classic_arrays_give_the_owners_of_the_events(groups):
    table, (dp, grp, ts, ids), codes = _owner_changes(groups)
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


@settings(max_examples=150, deadline=None)
@given(classic_groups())
def test_the_compiled_classic_owners_are_the_numpy_ones(groups):
    """kernel.lag_classic (and lag_members before it) against their NumPy twins, array for array."""
    from kgtool.lag import collector as lag_input
    from tests.twins import compiled

    replay = compiled("kgtool.lag._kernel")
    got = []
    for kernel in (replay, None):
        saved = lag_input.kernel
        lag_input.kernel = kernel
        try:
            table, arrays, codes = _owner_changes(groups)
        finally:
            lag_input.kernel = saved
        got.append((table, [a.tolist() for a in arrays], codes))
    assert got[0] == got[1]


def test_a_group_with_member_records_of_its_own_takes_the_event_path():
    o = _GroupOwners(protocol="consumer")
    o.events += [(5, 100, "member", ("m-a", "c-a", "h", [0, 1])), (9, 200, "member", ("m-b", "c-b", "h", [1]))]
    table, (dp, grp, ts, ids), _codes = _owner_changes({"g": o})
    got = {(int(d), int(t)): table[i] for d, t, i in zip(dp, ts, ids)}
    assert got == {(0, 100): ("m-a", "h", "c-a"), (1, 100): ("m-a", "h", "c-a"), (1, 200): ("m-b", "h", "c-b")}
    assert np.all(np.diff(dp) >= 0)


def test_a_transactional_commit_takes_effect_at_its_marker_and_a_deletion_is_kept():
    """LagCollector on chunks of the replay's commits: the instant of a commit is its record's time,
    or its COMMIT marker's (known from the task's pre-pass before the replay); a deleted offset
    (a tombstone) stays a deletion; commits that did not take effect, other topics and data
    partitions not given are left out; each group's commits come by time, log order among
    equal instants, in chunks merged by record offset."""
    from kgtool.lag.timeline import DELETED
    from kgtool.lag.collector import ReplayedCommits, LagCollector
    from kgtool.offsets.store import NULL

    markers = {50: 9_000}
    inputs = LagCollector({("orders", 0): 0, ("orders", 1): 1}, 7, markers)
    keys = [("g", "orders", 0), ("g", "other", 0), ("h", "orders", 1), ("g", "orders", 5), ("h", "orders", 0)]

    def chunk(key, ts, rec, offset, deleted=None, effective=None, at=None):
        n = len(key)
        return ReplayedCommits(np.array(key, np.int64), np.array(ts, np.int64), np.array(rec, np.int64),
                           np.array(offset, np.int64), np.array(deleted or [False] * n),
                           np.array(effective or [True] * n), np.array(at or rec, np.int64))

    inputs.commits([chunk([0, 0, 1, 2, 3, 4], [1_000, 2_000, 3_000, 4_000, 5_000, 5_500], [1, 2, 3, 4, 5, 6],
                          [10, 0, 30, 40, 50, 60], deleted=[False, True, False, False, False, False],
                          effective=[True, True, True, True, True, False], at=[50, 2, 3, 4, 5, NULL])],
                   len(keys), lambda k: keys[k])
    # a chunk replayed inside another: merged by record offset (h's two commits at one instant)
    inputs.commits([chunk([2], [7_000], [9], [42]), chunk([2], [7_000], [8], [41])], len(keys), lambda k: keys[k])
    got = {k: inp for k, inp in inputs.payloads()}
    assert sorted(got) == [0, 1]
    zero = got[0]
    assert zero.groups == ["g"] and zero.log_partition == 7 and zero.group_bounds.tolist() == [0, 2]
    # sorted by time within the group: the deletion at 2,000, then the transaction's commit at its marker
    assert zero.when.tolist() == [2_000, 9_000] and zero.offset.tolist() == [DELETED, 10]
    one = got[1]
    assert one.groups == ["h"] and one.when.tolist() == [4_000, 7_000, 7_000] and one.offset.tolist() == [40, 41, 42]


def test_the_counting_sort_keeps_each_keys_log_order_with_or_without_the_kernel():
    from kgtool.lag.collector import _scatter, _scatter_py

    rng = np.random.default_rng(7)
    key = rng.integers(0, 50, 5_000).astype(np.int32)
    when = np.arange(5_000, dtype=np.int64)
    counts = np.bincount(key, minlength=50)
    rows = np.stack([when, -when], axis=1)
    outs = []
    for fn in (_scatter, _scatter_py):
        place = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)
        out = np.empty((5_000, 2), np.int64)
        for a in range(0, 5_000, 700):  # chunk by chunk
            fn(key[a:a + 700], place, rows[a:a + 700], out)
        outs.append((out[:, 0].tolist(), out[:, 1].tolist(), place.tolist()))
    assert outs[0] == outs[1]
    order = np.argsort(key, kind="stable")
    assert outs[0][0] == when[order].tolist() and outs[0][1] == (-when[order]).tolist()


@pytest.mark.parametrize("deleted,in_txn,jump", [(0.05, 0.2, 0), (0.0, 0.0, 0), (0.0, 0.0, 100_000),
                                                  (0.0, 0.0, 3 << 31), (0.002, 0.01, 0)])
def test_the_compiled_pick_and_sort_give_the_inputs_numpy_gives(monkeypatch, deleted, in_txn, jump):
    """LagCollector over random chunks (keys on given and other partitions, several store keys of
    one (group, topic, partition) as a group deleted and made again has, deletions, commits that
    did not take effect, transactions at markers, chunks replayed inside others, offsets that jump
    past an int32 step): the same inputs with ``_lag.h``'s lag_pick, lag_pick_steps and their
    passes as with NumPy alone, each group's commits one sequence in time order. Chunks with no
    deletion and no instant going back are kept as steps; the others as lag_pick gives them."""
    from kgtool.lag import collector as LI
    from kgtool.offsets.store import NULL

    if LI.kernel is None:
        pytest.skip("the compiled extension is not built")
    rng = np.random.default_rng(11)
    keys = [(f"g{k % 7}", "orders" if k % 5 else "other", k % 4) for k in range(40)]
    markers = {10_000 + m: 50_000 + m for m in range(0, 400, 7)}

    def chunks(seed):
        r = np.random.default_rng(seed)
        out, rec = [], 0
        for _ in range(12):
            n = int(r.integers(0, 300))
            recs = rec + np.arange(n, dtype=np.int64)
            rec += n
            at = np.where(r.random(n) < in_txn, 10_000 + r.integers(0, 400, n), recs)
            at = np.where(r.random(n) < 0.05, NULL, at)
            offsets = r.integers(0, 9_000, n) + np.where(r.random(n) < 0.1, jump, 0)
            parts = [LI.ReplayedCommits(r.integers(0, 40, n), 1_000 * recs // 7, recs, offsets,
                                    r.random(n) < deleted, r.random(n) < 0.9, at)]
            if n and r.random() < 0.3:  # one replayed inside it: interleaved record offsets
                k = int(r.integers(1, n + 1))
                parts = [LI.ReplayedCommits(*(getattr(parts[0], f)[::2] for f in ("key", "timestamp", "record_offset",
                                                                                "offset", "deleted", "effective",
                                                                                "effective_at"))),
                         LI.ReplayedCommits(*(getattr(parts[0], f)[1::2] for f in ("key", "timestamp", "record_offset",
                                                                                 "offset", "deleted", "effective",
                                                                                 "effective_at")))][:max(1, k % 3)]
            out.append(parts)
        return out

    def inputs(compiled):
        monkeypatch.setattr(LI, "kernel", LI.kernel if compiled else None)
        li = LI.LagCollector({("orders", p): p for p in range(4)}, 3, dict(markers))
        for parts in chunks(5):
            li.commits(parts, len(keys), lambda k: keys[k])
        kinds.append(sorted({f"steps{c.dt.itemsize * 8}" if isinstance(c, LI._Steps) else "rows" for c in li._chunks}))
        return {k: (v.groups, v.group_bounds.tolist(), v.when.tolist(), v.offset.tolist())
                for k, v in li.payloads()}

    kinds: list[list[str]] = []
    compiled = inputs(True)
    assert compiled == inputs(False)
    # each form met where the chunks call for it (NumPy keeps rows): 16-bit steps where they fit,
    # 32-bit past int16, rows past int32 or with a deletion or an instant going back
    expected = {(0.05, 0.2, 0): ["rows", "steps16"], (0.0, 0.0, 0): ["steps16"],
                (0.0, 0.0, 100_000): ["steps16", "steps32"], (0.0, 0.0, 3 << 31): ["rows", "steps16"],
                (0.002, 0.01, 0): ["rows", "steps16"]}[(deleted, in_txn, jump)]
    assert kinds == [expected, ["rows"]]
    assert sum(len(v[2]) for v in compiled.values()) > 500
    for groups, bounds, when, _offset in compiled.values():
        assert len(bounds) == len(groups) + 1 and bounds[-1] == len(when)
        assert all(when[a:b] == sorted(when[a:b]) for a, b in zip(bounds, bounds[1:]))


def test_data_partitions_given_without_commits_are_no_trouble():
    """Data partitions given that no group committed on (after the last one that has commits,
    as a broker's log directory holds many topics): inputs for the committed one only."""
    from kgtool.lag.collector import ReplayedCommits, LagCollector

    li = LagCollector({("t", 0): 0, ("t", 1): 1, ("t", 2): 2}, 0, {})
    n = 3
    rec = np.arange(n, dtype=np.int64)
    li.commits([ReplayedCommits(np.zeros(n, np.int64), rec * 10, rec, rec, np.zeros(n, np.bool_), np.ones(n, np.bool_),
                            rec)], 1, lambda k: ("g", "t", 1))
    got = {k: (v.groups, v.when.tolist(), v.offset.tolist()) for k, v in li.payloads()}
    assert got == {1: (["g"], [0, 10, 20], [0, 1, 2])}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["g1", "g2", None]), st.integers(0, 50), st.integers(0, 10**13),
                          st.sampled_from(range(len(MEMBERS))), st.integers(0, 3), st.booleans()),
                max_size=60))
def test_the_compiled_members_columns_are_the_pure_ones(rows):
    """kernel.lag_members against LagCollector._member_columns: the same columns, owner and member
    ids, group codes and owners made, partitions not given left out, None and shared lists."""
    from kgtool.lag import collector as lag_input
    from tests.twins import compiled

    replay = compiled("kgtool.lag._kernel")
    width = max(MEMBER.values()) + 1
    shared = [["t-1", "t-2"], [], None, ["t-0", "u-0", "t-4"], ["t-9", "t-3"]]  # u-0, t-9: not given
    tuples = []
    for group, rec, ts, m, lst, fresh in rows:
        member, host, client = MEMBERS[m]
        row = [None] * width
        assigned = shared[lst] if not fresh or shared[lst] is None else list(shared[lst])
        for field, v in (("group", group), ("record_offset", rec), ("timestamp", ts), ("member_id", member),
                         ("client_id", client), ("client_host", host), ("assigned_partitions", assigned)):
            row[MEMBER[field]] = v
        tuples.append(tuple(row))
    got = {}
    for mode in ("c", "py"):
        li = LagCollector({("t", k): k for k in range(5)}, 0)
        li._groups["g0"] = 0  # a group already coded (from its commits)
        saved = lag_input.kernel
        lag_input.kernel = replay if mode == "c" else None
        try:  # two calls: ids and codes go on from the first
            li.member_tuples(tuples[: len(tuples) // 2])
            li.member_tuples(tuples[len(tuples) // 2:])
        finally:
            lag_input.kernel = saved
        got[mode] = ({k: [c.tolist() for c in v] for k, v in li._members.items()}, dict(li._groups),
                     dict(li._owner_ids), dict(li._member_ids), sorted(li.owners), dict(li._tp_cache))
    assert got["c"] == got["py"]
