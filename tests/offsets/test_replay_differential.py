"""The columnar replay (kgtool.offsets.replay) equals the frozen row-at-a-time oracle
(tests/offsets/oracle_replay.py) on every table, for random logs and for every scenario."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.offsets import samples
from kgtool.offsets.entries import (
    ENTRY_NAMES,
    annotate_transactions,
    entry_to_tuple,
)
from kgtool.offsets.replay import replay_columns, replay_group
from kgtool.offsets.scenario import Script
from tests.offsets import oracle_replay
from tests.offsets.test_properties import apply_offset_op

GROUPS = ("g1", "g2")
TPS = (("t", 0), ("t", 1), ("u", 0))
MEMBERS = ("a-1", "b-1", "c-1")
PIDS = (7, 8)

assignment = st.dictionaries(st.sampled_from(MEMBERS), st.lists(st.sampled_from(TPS), unique=True, max_size=3),
                             max_size=3)
op = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 40),
              st.integers(-1, 4)),
    st.tuples(st.just("txn"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 40),
              st.sampled_from(PIDS)),
    st.tuples(st.just("marker"), st.sampled_from(PIDS), st.sampled_from(["COMMIT", "ABORT"])),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TPS)),
    st.tuples(st.just("generation"), st.sampled_from(GROUPS), assignment, st.booleans()),
    st.tuples(st.just("delete_group"), st.sampled_from(GROUPS)),
    st.tuples(st.just("idle"), st.integers(0, 10 * 24)),
    # All partitions to one member, another member with none: moves, zombies, cooperative revocation.
    st.tuples(st.just("owner"), st.sampled_from(GROUPS), st.sampled_from(MEMBERS), st.sampled_from(MEMBERS)),
)


def build(ops) -> Script:
    s = Script(log_partition=5)
    gens = {g: 0 for g in GROUPS}
    for o in ops:
        if apply_offset_op(s, o):
            continue
        if o[0] == "generation":
            gens[o[1]] += 1
            s.generation(o[1], gens[o[1]], o[2], protocol="cooperative-sticky" if o[3] else "range")
        elif o[0] == "owner":
            gens[o[1]] += 1
            s.generation(o[1], gens[o[1]], {o[3]: [], o[2]: list(TPS)})
        elif o[0] == "delete_group":
            s.delete_group(o[1], list(TPS))
        else:
            s.clock += o[1] * 3_600_000
    return s


def both(entries, end_ts):
    annotated = list(annotate_transactions(entries))
    for g in sorted({e.group for e in annotated if e.group is not None}):
        mine = [e for e in annotated if e.group == g]
        new = replay_group(mine, log_end_timestamp=end_ts)
        old = oracle_replay.replay_group(mine, log_end_timestamp=end_ts)
        yield g, new, old, mine


def assert_same(entries, end_ts):
    for g, new, old, mine in both(entries, end_ts):
        for name in ("generations", "members", "commits", "findings"):
            assert new.tables()[name] == old.tables()[name], (g, name)
        assert new.offsets == old.offsets, g
        # The row form the Spark job uses (flat offset commits, JSON key/value) gives the same.
        rows = [entry_to_tuple(e) for e in mine]
        cols = {n: list(c) for n, c in zip(ENTRY_NAMES, zip(*rows))}
        flat = replay_columns(cols, log_end_timestamp=end_ts)
        assert flat.tables() == new.tables(), g


@settings(max_examples=500, deadline=None)
@given(st.lists(op, max_size=40))
def test_columnar_replay_equals_oracle(ops):
    entries = build(ops).entries()
    end = max((e.timestamp for e in entries), default=None)
    assert_same(entries, end)


def test_sample_partitions_equal_oracle():
    for script in samples.sample_scripts():
        entries = script.entries()
        assert_same(entries, max(e.timestamp for e in entries))
