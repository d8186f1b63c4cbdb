"""The ``offsets`` table: the committed offsets the coordinator would serve at the end of the
log read, or at ``--until T``, against the independent reference of ``OffsetMetadataManager``
(tests/offsets/reference_offsets.py) on random logs dense in same-key collisions (transactions
interleaved with plain commits and tombstones, markers, OffsetCommitValue v1, metadata, clocks
that go back), through the entry path and the columnar path, on the compiled and the pure-Python
commit loops. The ``expired`` column against the oracle's expiring rule. No Spark here.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.offsets.tables import OFFSET_LAG_COLUMNS
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.partition import PartitionReplay, until_cut
from kgtool.offsets.scenario import Script
from tests.offsets.chunks import ToyKeys, to_chunks
from tests.offsets.oracle_audit import canonical, oracle_audit, read_until
from tests.offsets.reference_offsets import committed_offsets
from tests.twins import have_compiled

GROUPS = ("g1", "g2")
TPS = (("t", 0), ("t", 1))
PIDS = (7, 8)
HOUR = 3_600_000
LOOPS = [pytest.param(True, id="python")] + ([pytest.param(False, id="c")] if have_compiled("kgtool.offsets._replay") else [])
META = st.sampled_from(["", "m", "ckpt,7", 'q"uote', "é"])

commit = st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 9),
                   st.integers(-1, 2), META)
txn = st.tuples(st.just("txn"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 9),
                st.sampled_from(PIDS), META)
marker = st.tuples(st.just("marker"), st.sampled_from(PIDS), st.sampled_from(["COMMIT", "ABORT"]))
op = st.one_of(
    commit, txn, marker, commit, txn, marker, commit, txn,  # weighted: same-key collisions are the point
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TPS)),
    st.tuples(st.just("v1"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 9),
              st.integers(-1, 30)),
    st.tuples(st.just("generation"), st.sampled_from(GROUPS), st.booleans()),
    st.tuples(st.just("idle"), st.integers(1, 200)),
    st.tuples(st.just("back"), st.integers(1, 5)),  # the coordinator's clock goes back (seconds)
    # A transactional commit, something on the same key before its marker, the marker.
    st.tuples(st.just("race"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.sampled_from(PIDS),
              st.sampled_from(["plain", "tombstone", "other-txn", "nothing"]), st.sampled_from(["COMMIT", "ABORT"])),
)


def build(ops) -> Script:
    s = Script(log_partition=4)
    gens = dict.fromkeys(GROUPS, 0)
    for o in ops:
        kind = o[0]
        if kind == "commit":
            s.commit(o[1], {o[2]: o[3]}, leader_epoch=o[4], metadata=o[5])
        elif kind == "txn":
            s.commit(o[1], {o[2]: o[3]}, producer=(o[4], 0), metadata=o[5])
        elif kind == "marker":
            s.marker((o[1], 0), o[2])
        elif kind == "delete":
            s.delete_offsets(o[1], [o[2]])
        elif kind == "v1":
            s.commit(o[1], {o[2]: o[3]}, expire_timestamp=-1 if o[4] < 0 else s.start_ms + s.clock + o[4] * HOUR)
        elif kind == "generation":
            gens[o[1]] += 1
            s.generation(o[1], gens[o[1]], {"a-1": list(TPS)} if o[2] else {})
        elif kind == "race":
            _, g, tp, pid, between, result = o
            s.commit(g, {tp: 30}, producer=(pid, 0), metadata="race")
            if between == "plain":
                s.commit(g, {tp: 40})
            elif between == "tombstone":
                s.delete_offsets(g, [tp])
            elif between == "other-txn":
                s.commit(g, {tp: 50}, producer=(PIDS[0] + PIDS[1] - pid, 0))
            s.marker((pid, 0), result)
        elif kind == "idle":
            s.clock += o[1] * HOUR // 10
        else:
            s.clock = max(0, s.clock - o[1] * 1000 - 1000)
    return s


def instants(s: Script) -> st.SearchStrategy:
    """--until: none, or any instant around the script's records (exactly on one included)."""
    stamps = sorted({e.timestamp for e in s.entries()}) or [s.start_ms]
    return st.one_of(st.none(), st.sampled_from(stamps), st.integers(stamps[0] - 1, stamps[-1] + 2 * HOUR))


def columnar(entries, opts: AuditOptions, pure: bool, max_rows: int) -> list[dict]:
    rp = PartitionReplay(4, opts, pure=pure)
    keys = ToyKeys()
    for chunk in to_chunks(sorted(entries, key=lambda e: (e.offset, e.position)), keys, max_rows):
        rp.feed(chunk, keys)
    rp.finish()
    return rp.offset_rows


def without_expired(rows: list[dict]) -> dict:
    return {(r["group"], r["topic"], r["partition"]): {c: v for c, v in r.items()
                                                      if c not in ("group", "topic", "partition", "log_partition",
                                                                   "expired", "topic_id", "exact", *OFFSET_LAG_COLUMNS)}
            for r in rows}


@pytest.mark.parametrize("pure", LOOPS)
@settings(max_examples=400, deadline=None)
@given(data=st.data(), ops=st.lists(op, min_size=3, max_size=40), max_rows=st.integers(1, 5),
       retention=st.sampled_from([HOUR, 24 * HOUR]), pattern=st.sampled_from([None, "1$"]))
def test_offsets_table_equals_reference(pure, data, ops, max_rows, retention, pattern):
    s = build(ops)
    entries = s.entries()
    until = data.draw(instants(s))
    opts = AuditOptions(group_pattern=pattern, until=until, retention_ms=retention)
    want = oracle_audit(entries, options=opts)["offsets"]
    # The state at T is the reference model's after the log read up to T.
    model = {k: v for k, v in committed_offsets(read_until(sorted(entries, key=lambda e: e.offset), until)).items()
             if opts.group_matches(k[0])}
    assert without_expired(want) == model
    got = audit_entries(entries, options=opts, pure=pure).tables["offsets"]
    assert canonical("offsets", got) == canonical("offsets", want)
    assert canonical("offsets", columnar(entries, opts, pure, max_rows)) == canonical("offsets", want)


@pytest.mark.parametrize("pure", LOOPS)
def test_transactional_commit_loses_to_a_later_plain_commit(pure):
    """replayEndTransactionMarker stores a committed transactional offset only if its record
    offset is greater than the stored one's: a plain commit written after it (before the marker)
    stays, though the marker comes last."""
    s = Script()
    s.commit("g", {("t", 0): 10}, producer=(7, 0), metadata="txn")
    s.commit("g", {("t", 0): 20}, metadata="plain", leader_epoch=3)
    s.marker((7, 0), "COMMIT")
    s.commit("g", {("t", 1): 5}, producer=(7, 0))
    s.marker((7, 0), "COMMIT")
    rows = audit_entries(s.entries(), pure=pure).tables["offsets"]
    assert [(r["partition"], r["offset"], r["metadata"], r["leader_epoch"], r["record_offset"]) for r in rows] == [
        (0, 20, "plain", 3, 1), (1, 5, "", -1, 3)]


@pytest.mark.parametrize("pure", LOOPS)
def test_aborted_and_pending_commits_are_not_served(pure):
    s = Script()
    s.commit("g", {("t", 0): 10})
    s.commit("g", {("t", 0): 99}, producer=(7, 0))
    s.marker((7, 0), "ABORT")
    s.commit("g", {("t", 0): 98, ("t", 1): 97}, producer=(8, 0))  # no marker: pending
    rows = audit_entries(s.entries(), pure=pure).tables["offsets"]
    assert [(r["partition"], r["offset"]) for r in rows] == [(0, 10)]


@pytest.mark.parametrize("pure", LOOPS)
def test_tombstone_deletes_the_offset_and_the_pending_one(pure):
    s = Script()
    s.commit("g", {("t", 0): 10, ("t", 1): 11})
    s.commit("g", {("t", 0): 12}, producer=(7, 0))
    s.delete_offsets("g", [("t", 0)])
    s.marker((7, 0), "COMMIT")  # its offset for t-0 went with the tombstone
    rows = audit_entries(s.entries(), pure=pure).tables["offsets"]
    assert [(r["partition"], r["offset"]) for r in rows] == [(1, 11)]


def test_simple_consumer_gets_offsets_rows_and_no_generations():
    """A group that only commits (no GroupMetadata: a simple consumer, assign() + commitSync)."""
    s = Script()
    s.commit("simple", {("t", 0): 7}, metadata="m", expire_timestamp=s.start_ms + 10 * HOUR)
    r = audit_entries(s.entries(), options=AuditOptions(retention_ms=HOUR))
    assert r.tables["generations"] == []
    assert [(o["group"], o["offset"], o["metadata"], o["expire_timestamp"], o["expired"])
            for o in r.tables["offsets"]] == [("simple", 7, "m", s.start_ms + 10 * HOUR, False)]
    # At an instant past its expire timestamp (OffsetCommitValue v1) it is expired.
    r = audit_entries(s.entries(), options=AuditOptions(until=s.start_ms + 11 * HOUR))
    assert [o["expired"] for o in r.tables["offsets"]] == [True]
    assert [f["rule"] for f in r.tables["findings"]] == ["expiring"]


def test_until_reads_up_to_the_first_record_at_or_after_the_instant():
    """A record stamped T was appended during millisecond T: the state at instant T has only
    the records stamped before it. A later record stamped before T (the clock went back) is
    after the cut."""
    s = Script()
    t1 = s.commit("g", {("t", 0): 1})
    t2 = s.commit("g", {("t", 0): 2})
    s.commit("g", {("t", 0): 3}, at=t2 - s.start_ms - 500)  # stamped before t2, written after it

    def offset_at(until):
        return [r["offset"] for r in audit_entries(s.entries(), options=AuditOptions(until=until)).tables["offsets"]]

    assert offset_at(t1) == []
    assert offset_at(t1 + 1) == [1]
    assert offset_at(t2) == [1]  # the third record, stamped t2 - 500, is after the cut
    assert offset_at(t2 + 1) == [3]
    assert offset_at(None) == [3]


def test_until_cut_in_a_chunk():
    """until_cut: commit rows and rare entries in log order (rare entry (i, e) before row i)."""
    from kgtool.offsets.entries import LogEntry

    def rare(offset, ts):
        return LogEntry(log_partition=0, offset=offset, position=0, source="s", timestamp=ts)

    problem = LogEntry(log_partition=0, offset=-1, position=0, source="s", timestamp=-1, kind="problem")
    ts = np.array([1, 2, 9, 3], np.int64)
    assert until_cut(ts, [], 10) is None
    assert until_cut(ts, [], 9) == (2, 0)
    assert until_cut(ts, [(0, rare(0, 1)), (2, rare(5, 2)), (2, problem), (3, rare(6, 1))], 9) == (2, 3)
    assert until_cut(ts, [(1, rare(1, 9))], 9) == (1, 0)  # before row 1
    assert until_cut(ts, [(2, problem), (2, rare(1, 9))], 9) == (2, 1)
    assert until_cut(ts, [(4, rare(9, 20))], 10) == (4, 0)  # after every row


@pytest.mark.parametrize("pure", LOOPS)
def test_distinct_metadata_on_every_commit_stays_bounded(pure):
    """Metadata strings are kept per key, not per commit: a log where every commit carries new
    metadata keeps at most max(1024, 2 x keys) strings, and the last one of each key."""
    s = Script()
    for i in range(3000):
        s.commit("g", {("t", i % 3): i}, metadata=f"m{i}")
    rp = PartitionReplay(0, pure=pure)
    keys = ToyKeys()
    for chunk in to_chunks(s.entries(), keys, 7):
        rp.feed(chunk, keys)
        assert len(rp.store.metadata) <= 1024 + 7
    rp.finish()
    assert [(r["offset"], r["metadata"]) for r in rp.offset_rows] == [(2997, "m2997"), (2998, "m2998"),
                                                                       (2999, "m2999")]
