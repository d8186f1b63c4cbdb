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
               a_state: int = 1) -> Script:
    """a holds t-0..3; b joins (epoch 2); a keeps t-2, t-3 pending revocation from 2 s
    (``a_state``: the state written), optionally gives one up at ``rearm_after`` (a record that
    re-arms the timer, still UNREVOKED_PARTITIONS), and is removed ``removed_after`` ms after 2 s."""
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
], ids=["voluntary-leave", "re-armed", "classic-protocol", "session-timeout"])
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
