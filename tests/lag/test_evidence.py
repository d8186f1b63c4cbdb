"""Issue 42: the lag table goes on after a consumer's last commit, so its STOP episode starts when
Burrow's rule first holds; and a lag finding needs evidence (a window of two commits at least),
so the vacuous verdicts of one commit fire nothing.

The data partitions are tests/lag/scenario's (a record a second on orders-0 and orders-1 for 20
minutes); the offsets log is this file's: groups committing every 5 s, as consumers do by
default (auto.commit.interval.ms)."""

from __future__ import annotations

import os

import pytest

from kgtool.lag import phase as lag_task
from kgtool.lag.timeline import DELETED, window_evidence
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.scenario import Script
from kgtool.offsets.writer import write_segment
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.lag import scenario as S

import numpy as np

STEP = 60_000
LAST_STOPPER_COMMIT = 300_000


def _broker(root: str) -> dict:
    broker = S.write(root)
    d = os.path.join(broker["root"], "__consumer_offsets-0")
    for name in os.listdir(d):
        os.remove(os.path.join(d, name))
    s = Script(log_partition=0, start_ms=S.START)
    members = {"stopper": "x-1", "stalled": "s-1", "lagging": "l-1"}
    for g, m in members.items():
        s.generation(g, 1, {m: [("orders", 0), ("orders", 1)]}, at=0, clients={m: (f"client-{g}", "/10.1.0.1")})
    for k in range(1, S.SECONDS // 5 + 1):
        at = 5_000 * k
        now = S.end_at(S.T0 + at)
        if at <= LAST_STOPPER_COMMIT:
            s.commit("stopper", {("orders", 0): now, ("orders", 1): now}, at=at)
        s.commit("stalled", {("orders", 0): min(now, 200), ("orders", 1): now}, at=at)
        # slow from its first commit: 3 records behind, then 2, then 3... never caught up, never stuck
        s.commit("lagging", {("orders", 0): now - (3 if k % 2 else 2), ("orders", 1): now - (2 if k % 2 else 1)}, at=at)
    write_segment(s, d)
    return broker


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    broker = _broker(str(tmp_path_factory.mktemp("evidence")))
    parts = tuple(((("orders", p), (os.path.join(broker["root"], f"orders-{p}"),)) for p in (0, 1)))
    options = AuditOptions(lag_partitions=parts, lag_step_ms=STEP)
    d = os.path.join(broker["root"], "__consumer_offsets-0")
    segs = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".log"))
    s = audit_partition(PartitionFiles(0, segs, [os.path.getsize(p) for p in segs]), options)
    end = s.last_timestamp
    tables: dict[str, list] = {}

    def write(name, _part, rows):
        tables.setdefault(name, []).extend(rows.to_pylist() if hasattr(rows, "to_pylist") else rows)

    results = [lag_task.lag_partition(i, [p for k, p in s.lag if k == i], options, end, write) for i in (0, 1)]
    findings, section = lag_task.combine(results, options, end, 0, {s.log_partition: s.lag_owners})
    return {"tables": tables, "findings": findings, "section": section, "end": end}


def test_a_stopped_consumer_has_rows_to_the_end_and_stops_at_burrows_instant(audited):
    end = audited["end"]
    assert end == S.T0 + S.SECONDS * 5_000 // 5  # the last commit of the others
    rows = sorted((r["timestamp"] - S.T0, r["lag_status"]) for r in audited["tables"]["lag"]
                  if r["group"] == "stopper" and r["partition"] == 0)
    after = [(t, st) for t, st in rows if t > LAST_STOPPER_COMMIT]
    # every step from the first commit (5 s) on, to the end of the span
    assert [t for t, _ in after] == list(range(5_000 + STEP * 5, end - S.T0, STEP))
    # Burrow: the window is the last 10 commits (255 s .. 300 s, a 45 s span), and STOP needs
    # none of the last 10 polls (10 s apart) at or below the committed offset 300: t - 90 s > 300 s
    first_stop = min(t for t, st in after if st == "STOP")
    assert first_stop == 425_000 and all(st == "STOP" for t, st in after if t >= first_stop)
    assert all(st == "OK" for t, st in after if t < first_stop)
    (stop,) = [f for f in audited["findings"] if f["rule"] == "consumer-stopped"]
    assert stop["group"] == "stopper" and stop["timestamp"] == S.T0 + first_stop
    assert stop["timestamp"] - (S.T0 + LAST_STOPPER_COMMIT) < 180_000  # within three minutes
    eps = [e for e in audited["tables"]["lag_episodes"] if e["group"] == "stopper"]
    assert {(e["partition"], e["status"], e["start"] - S.T0, e["end"], e["evidence"]) for e in eps} == {
        (0, "STOP", first_stop, None, True), (1, "STOP", first_stop, None, True)}


def test_only_the_stalled_group_stalls(audited):
    got = sorted((f["rule"], f["group"]) for f in audited["findings"])
    assert got == [("consumer-stopped", "stopper"), ("lag-stall", "stalled")]
    # the slow consumer's first commit: Burrow's window of one commit says STALL (every offset of
    # it "the same"); the lag_episodes table keeps Burrow's verdict, without evidence
    lagging = [e for e in audited["tables"]["lag_episodes"] if e["group"] == "lagging"]
    assert lagging and all(not e["evidence"] for e in lagging)
    assert {e["status"] for e in lagging} <= {"STALL", "WARN"}
    # the groups by worst status agree with the findings
    worst = {g["group"]: g["worst"] for g in audited["section"]["groups"]}
    assert worst == {"stalled": "STALL", "stopper": "STOP", "lagging": "OK"}


def test_window_evidence_follows_burrows_window():
    # one sequence: commits at 0, 0.5 s (merged into the first), 2 s (the second entry), a
    # deletion at 10 s, a commit at 20 s (alone again)
    when = np.array([0, 500, 2_000, 10_000, 20_000], np.int64)
    offset = np.array([1, 2, 3, DELETED, 5], np.int64)
    bounds = np.array([0, 5], np.int64)
    seq = np.zeros(4, np.int32)
    start = np.array([0, 0, 2_000, 20_000], np.int64)
    last = np.array([0, 1_999, 2_000, 30_000], np.int64)
    assert window_evidence(bounds, when, offset, seq, start, last).tolist() == [False, False, True, False]


def _brute_evidence(when, offset, bounds, s, start, last):
    """Burrow's window itself (burrow.CommitWindow, a deletion starting it over): did it hold two
    commits at some instant of [start, last]?"""
    from kgtool.lag.burrow import CommitWindow

    w, held = CommitWindow(), False
    for j in range(int(bounds[s]), int(bounds[s + 1])):
        t = int(when[j])
        if t > last:
            break
        if t > start and len(w.commits) >= 2:
            held = True  # in force from before t, inside the episode
        if offset[j] == DELETED:
            w = CommitWindow()
        else:
            w.add(int(offset[j]), t, 0)
    return held or len(w.commits) >= 2


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3_000), st.booleans()), min_size=1, max_size=12), min_size=1,
                max_size=5),
       st.lists(st.tuples(st.integers(0, 4), st.integers(-500, 20_000), st.integers(0, 20_000)), max_size=20))
def test_window_evidence_is_burrows_window(seqs, eps):
    when, offset, bounds = [], [], [0]
    for commits in seqs:
        t = 0
        for dt, deleted in commits:
            t += dt
            when.append(1_700_000_000_000 + t)
            offset.append(DELETED if deleted else len(when))
        bounds.append(len(when))
    when, offset, bounds = np.array(when, np.int64), np.array(offset, np.int64), np.array(bounds, np.int64)
    eps = [(s % len(seqs), 1_700_000_000_000 + a, 1_700_000_000_000 + a + d) for s, a, d in eps]
    seq = np.array([e[0] for e in eps], np.int32)
    start = np.array([e[1] for e in eps], np.int64)
    last = np.array([e[2] for e in eps], np.int64)
    got = window_evidence(bounds, when, offset, seq, start, last).tolist()
    want = [_brute_evidence(when, offset, bounds, s, a, z) for s, a, z in eps]
    assert got == want
