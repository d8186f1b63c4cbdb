"""Each stale-commit rule: the positive case and its legitimate look-alike.

Scenarios are scripts (kgtool.offsets.scenario) replayed by the pure model; the same scripts
are written as real segments for the end-to-end tests (tests/spark, tests/cli).
"""

from __future__ import annotations

from kgtool.offsets.audit import AuditOptions, audit_entries
from kgtool.offsets.scenario import Script

DAY = 24 * 3600 * 1000
T0, T1 = ("t", 0), ("t", 1)


def audit(s: Script, **opts):
    return audit_entries(s.entries(), options=AuditOptions(**opts))


def findings(s: Script, **opts) -> list[tuple]:
    r = audit(s, **opts)
    return [(f["rule"], f["group"], f["topic"], f["partition"], f["offset"], f["previous_offset"]) for f in r.tables["findings"]]


def stable(s: Script, gen: int = 1, group: str = "g") -> None:
    s.generation(group, gen, {"a-1": [T0, T1]})


# ---- rewind ---------------------------------------------------------------------------
def test_rewind_lower_commit_while_stable():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.commit("g", {T0: 60})
    assert findings(s) == [("rewind", "g", "t", 0, 60, 100)]


def test_rewind_lookalike_reset_while_empty():
    # kafka-consumer-groups.sh --reset-offsets requires an inactive group: Empty generation.
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.generation("g", 2, {})
    s.commit("g", {T0: 60})
    r = audit(s)
    assert r.tables["findings"] == []
    assert r.tables["commits"][-1]["note"] == "reset while Empty"
    assert r.tables["commits"][-1]["group_state"] == "Empty"


def test_rewind_lookalike_after_offset_delete():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.delete_offsets("g", [T0])
    s.commit("g", {T0: 10})
    assert findings(s) == []


# ---- zombie ---------------------------------------------------------------------------
def _moved() -> Script:
    s = Script()
    s.generation("g", 1, {"a-1": [T0, T1]})
    s.commit("g", {T0: 100, T1: 100})
    s.generation("g", 2, {"a-1": [T1], "b-1": [T0]})  # t-0 moves from a to b
    s.commit("g", {T0: 150})  # b progresses
    return s


def test_zombie_old_owner_commits_below_new_owner():
    s = _moved()
    s.commit("g", {T0: 120})  # a, still running, commits its stale position
    r = audit(s)
    assert [(f["rule"], f["offset"], f["previous_offset"], f["generation_id"], f["previous_generation_id"])
            for f in r.tables["findings"]] == [("zombie", 120, 150, 2, 2)]


def test_zombie_lookalike_new_owner_progresses():
    s = _moved()
    s.commit("g", {T0: 180})
    assert findings(s) == []


def test_zombie_lookalike_lower_commit_on_unmoved_partition_is_rewind():
    s = _moved()
    s.commit("g", {T1: 90})  # t-1 stayed with a: a plain rewind, not a zombie
    assert findings(s) == [("rewind", "g", "t", 1, 90, 100)]


# ---- orphan ---------------------------------------------------------------------------
def test_orphan_commit_for_unowned_partition():
    s = Script()
    s.generation("g", 1, {"a-1": [T0]})
    s.commit("g", {("t", 5): 10})
    assert findings(s) == [("orphan", "g", "t", 5, 10, None)]


def test_orphan_lookalike_empty_group_admin_commit():
    s = Script()
    s.generation("g", 1, {})
    s.commit("g", {("t", 5): 10})
    assert findings(s) == []


def test_orphan_lookalike_cooperative_revocation_in_transit():
    s = Script()
    s.generation("g", 1, {"a-1": [T0, T1]}, protocol="cooperative-sticky")
    # b joins; cooperative-sticky first revokes t-1 from a (assigned to nobody in gen 2)
    s.generation("g", 2, {"a-1": [T0], "b-1": []}, protocol="cooperative-sticky", topics=["t"])
    s.commit("g", {T1: 50})  # a commits t-1 in onPartitionsRevoked
    r = audit(s)
    assert r.tables["findings"] == []
    assert r.tables["commits"][-1]["note"] == "owner revoking (cooperative)"


def test_orphan_lookalike_unknown_protocol_assignments():
    s = Script()
    s.generation("g", 1, {"w-1": [T0]}, protocol_type="connect")
    s.commit("g", {("t", 5): 10})
    r = audit(s)
    assert r.tables["findings"] == []
    assert r.tables["commits"][-1]["owners"] is None


# ---- epoch-regression -----------------------------------------------------------------
def test_epoch_regression():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100}, leader_epoch=5)
    s.commit("g", {T0: 110}, leader_epoch=4)
    r = audit(s)
    assert [(f["rule"], f["offset"], f["previous_offset"]) for f in r.tables["findings"]] == [
        ("epoch-regression", 110, 100)
    ]


def test_epoch_regression_lookalike_unknown_epoch():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100}, leader_epoch=5)
    s.commit("g", {T0: 110}, leader_epoch=-1)  # admin tools / v1 values carry no epoch
    s.commit("g", {T0: 120}, leader_epoch=6)
    assert findings(s) == []


# ---- expiring -------------------------------------------------------------------------
def test_expiring_empty_group_past_retention():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.generation("g", 2, {})  # Empty
    s.commit("other", {T0: 1}, at=9 * DAY)  # the log goes on (another group): log end is day 9
    r = audit(s)
    assert [(f["rule"], f["group"], f["offset"]) for f in r.tables["findings"]] == [("expiring", "g", 100)]


def test_expiring_lookalike_within_retention_and_stable_group():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.generation("h", 1, {})
    s.commit("h", {T0: 5})
    s.commit("other", {T0: 1}, at=6 * DAY)  # 6 days < 7
    assert findings(s) == []
    # g is Stable: its old offsets do not expire even after 30 days.
    s.commit("other", {T0: 2}, at=30 * DAY)
    # "other" was just committed (day 30 is the end of the log); h is Empty since day 0.
    assert [f[:2] for f in findings(s)] == [("expiring", "h")]
    assert [f[:2] for f in findings(s, retention_ms=60 * DAY)] == []


def test_expiring_expire_timestamp_v1():
    s = Script()
    s.commit("simple", {T0: 7}, expire_timestamp=Script().start_ms + 2 * DAY)
    s.commit("x", {T0: 1}, at=3 * DAY)
    assert [f[:2] for f in findings(s, retention_ms=60 * DAY)] == [("expiring", "simple")]


# ---- transactions ---------------------------------------------------------------------
P1, P2 = (5000, 0), (6000, 3)


def test_aborted_txn_would_be_latest():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.commit("g", {T0: 150}, producer=P1)
    s.marker(P1, "ABORT")
    r = audit(s)
    assert [(f["rule"], f["offset"], f["previous_offset"]) for f in r.tables["findings"]] == [("aborted-txn", 150, 100)]
    assert r.tables["commits"][-1]["txn_result"] == "ABORT"


def test_aborted_txn_lookalike_retried_and_committed():
    s = Script()
    stable(s)
    s.commit("g", {T0: 150}, producer=P1)
    s.marker(P1, "ABORT")
    s.commit("g", {T0: 150}, producer=(5000, 1))
    s.marker((5000, 1), "COMMIT")
    r = audit(s)
    assert r.tables["findings"] == []
    assert r.tables["commits"][-1]["effective"] is True


def test_pending_txn():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.commit("g", {T0: 150}, producer=P1)
    assert findings(s) == [("pending-txn", "g", "t", 0, 150, 100)]


def test_pending_txn_lookalike_committed_by_marker():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.commit("g", {T0: 150}, producer=P1)
    s.marker(P1, "COMMIT")
    r = audit(s)
    assert r.tables["findings"] == []
    assert [c["effective_at_offset"] for c in r.tables["commits"]] == [1, 3]


def test_pending_txn_lookalike_superseded_by_later_commit():
    s = Script()
    stable(s)
    s.commit("g", {T0: 150}, producer=P1)
    s.commit("g", {T0: 200})
    assert findings(s) == []


def test_committed_txn_replaces_only_lower_record_offset():
    # OffsetMetadataManager.replayEndTransactionMarker: recordOffset must be greater.
    s = Script()
    stable(s)
    s.commit("g", {T0: 300}, producer=P2)
    s.commit("g", {T0: 310})
    s.marker(P2, "COMMIT")
    r = audit(s)
    assert r.replays[s.log_partition].offsets("g") == {T0: 310}
    assert r.tables["commits"][0]["note"] == "committed, superseded by a later commit record"


def test_offset_tombstone_drops_pending_transactional_offsets():
    s = Script()
    stable(s)
    s.commit("g", {T0: 150}, producer=P1)
    s.delete_offsets("g", [T0])
    s.marker(P1, "COMMIT")
    assert audit(s).replays[s.log_partition].offsets("g") == {}
    assert findings(s) == []


def test_marker_resolves_only_its_producer():
    s = Script()
    stable(s)
    s.commit("g", {T0: 150}, producer=P1)
    s.commit("g", {T1: 20}, producer=P2)
    s.marker(P2, "COMMIT")
    assert findings(s) == [("pending-txn", "g", "t", 0, 150, None)]


# ---- filters --------------------------------------------------------------------------
def test_group_filter_and_since_until():
    s = Script()
    stable(s)
    s.commit("g", {T0: 100})
    s.commit("g", {T0: 60})  # rewind at t=3s
    stable(s, group="h")
    s.commit("h", {T0: 100})
    s.commit("h", {T0: 50})
    assert [f[1] for f in findings(s)] == ["g", "h"]
    assert [f[1] for f in findings(s, group_pattern="^h$")] == ["h"]
    assert [f[1] for f in findings(s, until=s.start_ms + 3500)] == ["g"]
    assert [f[1] for f in findings(s, since=s.start_ms + 3500)] == ["h"]


# ---- KIP-848 consumer groups ----------------------------------------------------------
def _kip848() -> Script:
    s = Script()
    tid = "AAAAAAAAAAAAAAAAAAAAAQ"
    s.raw("consumer_group_partition_metadata", {"group_id": "k"},
          {"topics": [{"topic_id": tid, "topic_name": "t", "num_partitions": 4}]})
    for m in ("m1", "m2"):
        s.raw("consumer_group_member_metadata", {"group_id": "k", "member_id": m},
              {"client_id": f"c-{m}", "client_host": "/10.0.0.9", "instance_id": None, "rack_id": None,
               "subscribed_topic_names": ["t"], "rebalance_timeout_ms": 300000,
           "classic_member_metadata": None})
    s.raw("consumer_group_metadata", {"group_id": "k"}, {"epoch": 4})
    for m, parts in (("m1", [0, 1]), ("m2", [2, 3])):
        s.raw("consumer_group_target_assignment_member", {"group_id": "k", "member_id": m},
              {"topic_partitions": [{"topic_id": tid, "partitions": parts}]})
    s.raw("consumer_group_target_assignment_metadata", {"group_id": "k"}, {"assignment_epoch": 4})
    s.raw("consumer_group_current_member_assignment", {"group_id": "k", "member_id": "m1"},
          {"member_epoch": 4, "previous_member_epoch": 3, "state": 0,
           "assigned_partitions": [{"topic_id": tid, "partitions": [0, 1]}], "partitions_pending_revocation": []})
    s.raw("consumer_group_current_member_assignment", {"group_id": "k", "member_id": "m2"},
          {"member_epoch": 3, "previous_member_epoch": 2, "state": 1,  # UNREVOKED_PARTITIONS
           "assigned_partitions": [{"topic_id": tid, "partitions": [2]}],
           "partitions_pending_revocation": [{"topic_id": tid, "partitions": [3]}]})
    return s


def test_kip848_group_epochs_members_and_attribution():
    s = _kip848()
    s.commit("k", {T1: 10, ("t", 3): 5})
    r = audit(s)
    gens = r.tables["generations"]
    assert [(g["protocol"], g["generation_id"], g["member_count"], g["state"]) for g in gens] == [
        ("consumer", 4, 2, "Reconciling")  # m2 still revokes t-3 (ConsumerGroup.maybeUpdateGroupState)
    ]
    members = r.tables["members"]
    assert [(m["member_id"], m["member_epoch"], m["client_id"], m["assigned_partitions"]) for m in members] == [
        ("m1", 4, "c-m1", ["t-0", "t-1"]), ("m2", 3, "c-m2", ["t-2", "t-3"]),
    ]
    assert [(c["topic"], c["partition"], c["owners"], c["generation_id"]) for c in r.tables["commits"]] == [
        ("t", 1, ["m1"], 4), ("t", 3, ["m2"], 4),
    ]
    assert r.tables["findings"] == []


def test_kip848_orphan():
    s = _kip848()
    s.commit("k", {("t", 7): 5})
    assert findings(s) == [("orphan", "k", "t", 7, 5, None)]


def test_orphan_transactional_judged_at_write_reported_when_committed():
    s = Script()
    s.generation("g", 1, {"a-1": [T0]})
    s.commit("g", {T1: 9}, producer=P1)  # t-1 owned by nobody in generation 1
    s.generation("g", 2, {"a-1": [T0, T1]})  # owned by the time the marker comes
    s.marker(P1, "COMMIT")
    s.commit("g", {T1: 5}, producer=P2)  # owned in generation 2: no orphan, but aborted and latest
    s.marker(P2, "ABORT")
    r = audit(s)
    assert [(f["rule"], f["offset"], f["generation_id"]) for f in r.tables["findings"]] == [
        ("orphan", 9, 1), ("aborted-txn", 5, 2)
    ]
