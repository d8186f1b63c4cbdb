"""The ``slow-revocation`` rule and the reconciliation columns on hand-made consumer groups: the
timer's arithmetic (re-armed by every assignment record while UNREVOKED_PARTITIONS), and the
look-alikes that must stay quiet. Kafka-made logs: tests/kip848/test_reconciliation.py."""

from __future__ import annotations

import pytest

from kgtool.offsets.audit import audit_entries
from kgtool.offsets.scenario import Script

TID = "AAAAAAAAAAAAAAAAAAAAAQ"
KEY = {"group_id": "k"}


def parts(ps):
    return [{"topic_id": TID, "partitions": ps}] if ps else []


def member(mid, *, classic=False, timeout=30_000):
    return ("consumer_group_member_metadata", {**KEY, "member_id": mid}, {
        "client_id": f"c-{mid}", "client_host": f"/10.0.0.{ord(mid[-1]) % 200}", "instance_id": None, "rack_id": None,
        "subscribed_topic_names": ["t"], "subscribed_topic_regex": None, "rebalance_timeout_ms": timeout,
        "server_assignor": "uniform",
        "classic_member_metadata": {"session_timeout_ms": 10_000, "supported_protocols": []} if classic else None})


def current(mid, epoch, prev, state, ps, pending=()):
    return ("consumer_group_current_member_assignment", {**KEY, "member_id": mid}, {
        "member_epoch": epoch, "previous_member_epoch": prev, "state": state, "assigned_partitions": parts(ps),
        "partitions_pending_revocation": parts(list(pending))})


def target(mid, ps):
    return ("consumer_group_target_assignment_member", {**KEY, "member_id": mid}, {"topic_partitions": parts(ps)})


def epoch(n):
    return ("consumer_group_metadata", KEY, {"epoch": n})


def assignment_epoch(n):
    return ("consumer_group_target_assignment_metadata", KEY, {"assignment_epoch": n})


def removal(mid):
    return [("consumer_group_current_member_assignment", {**KEY, "member_id": mid}, None),
            ("consumer_group_target_assignment_member", {**KEY, "member_id": mid}, None),
            ("consumer_group_member_metadata", {**KEY, "member_id": mid}, None)]


def revocation(*, removed_after: int, rearm_after: int | None = None, classic: bool = False,
               a_state: int = 1, static_leave_after: int | None = None, timeout_lowered_after: int | None = None
               ) -> Script:
    """a holds t-0..3; b joins (epoch 2); a keeps t-2, t-3 pending revocation from 2 s
    (``a_state``: the state written), optionally gives one up at ``rearm_after`` (a record that
    re-arms the timer, still UNREVOKED_PARTITIONS), leaves as a static member does (epoch -2:
    ``static_leave_after``), lowers its rebalance timeout to 20 s in a heartbeat that reconciles
    nothing (``timeout_lowered_after``), and is removed ``removed_after`` ms after 2 s."""
    s = Script()
    s.batch([("consumer_group_partition_metadata", KEY,
              {"topics": [{"topic_id": TID, "topic_name": "t", "num_partitions": 4}]}),
             member("a", classic=classic), epoch(1), target("a", [0, 1, 2, 3]), assignment_epoch(1),
             current("a", 1, 0, 0, [0, 1, 2, 3])], at=0)
    s.batch([member("b"), epoch(2), target("a", [0, 1]), target("b", [2, 3]), assignment_epoch(2),
             current("b", 2, 0, 2, [])], at=1_000)
    if a_state == 1:
        s.batch([current("a", 1, 0, 1, [0, 1], [2, 3])], at=2_000)
    else:  # nothing to revoke: a reaches epoch 2 at once
        s.batch([current("a", 2, 1, 0, [0, 1])], at=2_000)
    if rearm_after is not None:
        s.batch([current("a", 1, 0, 1, [0, 1], [3])], at=2_000 + rearm_after)
        s.batch([current("b", 2, 0, 2, [2])], at=2_000 + rearm_after + 100)
    if static_leave_after is not None:  # consumerGroupStaticMemberGroupLeave: epoch -2, state kept
        s.batch([current("a", -2, 0, 1, [0, 1])], at=2_000 + static_leave_after)
    if timeout_lowered_after is not None:  # a member metadata record alone: the timer keeps its 30 s
        s.batch([member("a", timeout=20_000)], at=2_000 + timeout_lowered_after)
    gone = 2_000 + removed_after
    s.batch([*removal("a"), epoch(3), target("b", [0, 1, 2, 3]), assignment_epoch(3)], at=gone)
    s.batch([current("b", 3, 2, 0, [0, 1, 2, 3])], at=gone + 700)
    return s


def slow(s: Script) -> list[dict]:
    return [f for f in audit_entries(s.entries()).tables["findings"] if f["rule"] == "slow-revocation"]


def test_fenced_at_its_rebalance_timeout():
    (f,) = slow(revocation(removed_after=30_000))
    assert f["group"] == "k" and f["topic"] is None and f["generation_id"] == 2 and f["previous_generation_id"] == 1
    assert f["timestamp"] == Script().start_ms + 32_000
    assert "member a (c-a@10.0.0.97)" in f["message"] and "(t-2, t-3)" in f["message"] and "30.0 s" in f["message"]
    assert "30000 ms" in f["message"]


@pytest.mark.parametrize("case", [
    dict(removed_after=29_999),  # leaves on its own a millisecond before the timer
    dict(removed_after=30_000, rearm_after=5_000),  # a record at 7 s re-armed the timer: it fires at 37 s
    dict(removed_after=30_000, classic=True),  # a classic-protocol member has join and sync timers only
    dict(removed_after=50_000, a_state=0),  # nothing to revoke: a session timeout, not a rebalance timeout
    dict(removed_after=45_000, static_leave_after=1_000),  # static leave (-2): its timer found epoch -2
    dict(removed_after=25_000, timeout_lowered_after=3_000),  # armed with 30 s: it would fire at 32 s
], ids=["voluntary-leave", "re-armed", "classic-protocol", "session-timeout", "static-leave", "timeout-lowered"])
def test_look_alikes_stay_quiet(case):
    assert slow(revocation(**case)) == []


def test_re_armed_timer_fires_from_the_last_record():
    (f,) = slow(revocation(removed_after=35_000, rearm_after=5_000))
    assert "(t-3)" in f["message"]  # what it still held


def test_reconciliation_columns():
    rows = {r["to_generation"]: r for r in audit_entries(revocation(removed_after=30_000).entries()).tables["rebalances"]}
    assert rows[1]["completed_at"] == rows[1]["timestamp"] and rows[1]["completion_seconds"] == 0
    # epoch 2 never completes: a never revoked; t-2 and t-3 waited 30 s in a's hands
    assert rows[2]["completed_at"] is None and rows[2]["cause"] == "member-joined"
    assert rows[2]["revocation_waits"] == ["t-2:a:30000", "t-3:a:30000"]
    assert rows[2]["members_reached"] == ["b:0"]
    # epoch 3: a fenced, b takes everything 700 ms later: the consumption gap
    assert rows[3]["cause"] == "member-fenced" and rows[3]["completed_at"] == rows[3]["timestamp"] + 700
    assert rows[3]["completion_seconds"] == 0.7 and rows[3]["members_reached"] == ["b:700"]
    assert (rows[3]["consumption_gap_ms"], rows[3]["consumption_gap_partition"]) == (700, "t-0")


def test_classic_rows_complete_at_their_record():
    s = Script()
    s.generation("g", 1, {"m-1": [("t", 0)]})
    (row,) = audit_entries(s.entries()).tables["rebalances"]
    assert row["completed_at"] == row["timestamp"] and row["members_reached"] == [] and row["completion_seconds"] is None


def test_partitions_in_transit_are_not_orphans():
    """t-2 released by a (its revocation acknowledged) and not yet taken by b (UNRELEASED_PARTITIONS):
    a commit of it then is a's last commit in onPartitionsRevoked, or b's first: owned in transit.
    t-9, in no one's target, is an orphan."""
    s = revocation(removed_after=30_000, rearm_after=5_000)
    s.events.sort(key=lambda ev: ev.timestamp)
    s.commit("k", {("t", 2): 40, ("t", 9): 1}, at=7_050)
    s.events.sort(key=lambda ev: ev.timestamp)
    findings = audit_entries(s.entries()).tables["findings"]
    assert [(f["rule"], f["topic"], f["partition"]) for f in findings if f["rule"] == "orphan"] == [("orphan", "t", 9)]


def burst(bursts: int, *, gap_ms: int = 60_000) -> Script:
    """Kafka 4.3's assignment batching: in each burst two members join 200 ms apart (two group
    epochs) and one target assignment, computed on the next heartbeat at the second epoch, serves
    both; the members reconcile once."""
    s = Script()
    s.batch([("consumer_group_partition_metadata", KEY,
              {"topics": [{"topic_id": TID, "topic_name": "t", "num_partitions": 4}]}),
             member("a"), epoch(1), target("a", [0, 1, 2, 3]), assignment_epoch(1),
             current("a", 1, 0, 0, [0, 1, 2, 3])], at=0)
    e, at = 1, 0
    for i in range(bursts):
        at += gap_ms
        x, y = f"x{i}", f"y{i}"
        s.batch([member(x), epoch(e + 1), current(x, 0, 0, 0, [])], at=at)  # no target yet (Assigning)
        s.batch([member(y), epoch(e + 2), current(y, 0, 0, 0, [])], at=at + 200)
        e += 2
        s.batch([target("a", [0, 1, 2, 3]), target(x, []), target(y, []), assignment_epoch(e),
                 current("a", e, e - 2, 0, [0, 1, 2, 3])], at=at + 1_000)
        s.batch([current(x, e, 0, 0, [])], at=at + 1_100)
        s.batch([current(y, e, 0, 0, [])], at=at + 1_200)
        s.batch([*removal(x), epoch(e + 1), target("a", [0, 1, 2, 3]), assignment_epoch(e + 1),
                 current("a", e + 1, e, 0, [0, 1, 2, 3])], at=at + 30_000)
        s.batch([*removal(y), epoch(e + 2), target("a", [0, 1, 2, 3]), assignment_epoch(e + 2),
                 current("a", e + 2, e + 1, 0, [0, 1, 2, 3])], at=at + 30_100)
        e += 2
    return s


def test_batched_target_assignment_is_not_an_unfinished_rebalance():
    rows = {r["to_generation"]: r for r in audit_entries(burst(1).entries()).tables["rebalances"]}
    start = Script().start_ms
    # epoch 2 was bumped past before any target: epoch 3's, computed at 61 s, served it
    assert rows[2]["target_epoch"] == 3 and rows[2]["assigned_at"] == start + 61_000
    assert rows[2]["completed_at"] is None and "batched, not an unfinished rebalance" in rows[2]["message"]
    assert rows[3]["target_epoch"] == 3 and rows[3]["assigned_at"] == start + 61_000
    assert rows[3]["completed_at"] == start + 61_200 and "batched" not in rows[3]["message"]
    assert [rows[n]["target_epoch"] for n in (1, 4, 5)] == [1, 4, 5]
    assert [r["to_generation"] for r in audit_entries(burst(1).entries()).tables["rebalances"]] == [1, 2, 3, 4, 5]


def test_storm_counts_one_rebalance_per_target_assignment():
    """Three bursts in 3 minutes: 12 group epochs, 9 target assignments (each burst's two joins
    share one): a storm of 9 at --storm 9/10m, none at 10/10m."""
    from kgtool.offsets.options import AuditOptions

    entries = burst(3).entries()

    def storms(count):
        opts = AuditOptions(storm_count=count, storm_window_ms=600_000)
        return [f for f in audit_entries(entries, options=opts).tables["findings"] if f["rule"] == "rebalance-storm"]

    assert storms(10) == []
    (f,) = storms(9)
    assert f["message"].startswith("9 rebalances in ")
    assert "churned most: c-x0@" in f["message"]  # its join, batched, counts with the epoch that served it
