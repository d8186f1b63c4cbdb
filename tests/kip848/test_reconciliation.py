"""Consumer-group rebalances against Kafka's own logs: when each group epoch's reconciliation
completed, when each member reached it, and the ``slow-revocation`` rule, all read from the state
Kafka's coordinator holds after loading each batch (``loaded.jsonl``)."""

from __future__ import annotations

import pytest

from kgtool.offsets.audit import audit_entries
from kgtool.offsets.decode import entries_from_file
from tests.kip848.golden import IDS, SCENARIOS, loaded_states, segment, truth


def kafka_epochs(scenario) -> dict[tuple[str, int], dict]:
    """Per (consumer group, group epoch) in Kafka's loaded states: the batch time it began, the
    first batch time at which the group was Stable at it (None: never), and the first batch
    time at which each member was at it."""
    epochs: dict[tuple[str, int], dict] = {}
    for line, groups, _offsets in loaded_states(scenario):
        ts = line["timestamp"]
        for gid, g in groups.items():
            if g.get("type") != "consumer":
                continue
            e = epochs.setdefault((gid, g["group_epoch"]), {"start": ts, "completed_at": None, "reached": {}})
            if g["state"] == "Stable" and e["completed_at"] is None:
                e["completed_at"] = ts
            for m in g["members"]:
                if m["member_epoch"] == g["group_epoch"]:
                    e["reached"].setdefault(m["member_id"], ts)
    return epochs


def audit(scenario):
    return audit_entries(list(entries_from_file(segment(scenario), log_partition=0)))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_completed_at_and_members_reached_equal_kafkas_loaded_state(scenario):
    want = kafka_epochs(scenario)
    rows = [r for r in audit(scenario).tables["rebalances"] if r["protocol"] == "consumer"]
    assert rows or not want
    got = {}
    for r in rows:
        if r["to_generation"] is None:
            continue
        reached = dict(x.rsplit(":", 1) for x in r["members_reached"])
        got[(r["group"], r["to_generation"])] = {
            "start": r["timestamp"], "completed_at": r["completed_at"],
            "reached": {m: r["timestamp"] + int(ms) for m, ms in reached.items()}}
        if r["completed_at"] is not None:
            assert r["completion_seconds"] == (r["completed_at"] - r["timestamp"]) / 1000
    # every epoch Kafka's coordinator held (one that began and ended inside one batch never shows
    # in a loaded state: its row is there, never completed)
    for key, w in want.items():
        assert got[key]["completed_at"] == w["completed_at"], key
        assert got[key]["reached"] == w["reached"], key
    for key, g in got.items():
        if key not in want:
            assert g["completed_at"] is None, key


def test_slow_revocation_names_the_fenced_member_only():
    """n05: a member kept partitions pending revocation for its whole rebalance timeout and the
    coordinator's timer fenced it; the other members of the same log left on their own."""
    scenario = next(s for s in SCENARIOS if s.name.startswith("n05"))
    fenced = [e for e in truth(scenario)["events"] if e["kind"] == "timer" and "rebalance-timeout" in e["description"]]
    assert len(fenced) == 1
    result = audit(scenario)
    slow = [f for f in result.tables["findings"] if f["rule"] == "slow-revocation"]
    assert len(slow) == 1
    f = slow[0]
    member = fenced[0]["description"].split("rebalance-timeout-g-slow-", 1)[1]
    assert f["timestamp"] == fenced[0]["ts"] and f["record_offset"] == fenced[0]["first_offset"]
    assert member in f["message"] and "consumer-g-slow-slow@10.0.0.11" in f["message"]
    assert "logs-3, logs-4, logs-5" in f["message"] and "20000 ms" in f["message"]
    causes = [(r["to_generation"], r["cause"]) for r in result.tables["rebalances"] if r["group"] == "g-slow"]
    assert (3, "member-fenced") in causes
    # the partitions waited 20 s for revocation in epoch 2's rebalance; fenced, all six it held
    # (logs-0..5) waited 300 ms for their next owner (ties: the first partition named)
    by_epoch = {r["to_generation"]: r for r in result.tables["rebalances"] if r["group"] == "g-slow"}
    assert sorted(w.split(":")[0] for w in by_epoch[2]["revocation_waits"]) == ["logs-3", "logs-4", "logs-5"]
    assert {int(w.split(":")[2]) for w in by_epoch[2]["revocation_waits"]} == {20000}
    assert by_epoch[3]["consumption_gap_ms"] == 300 and by_epoch[3]["consumption_gap_partition"] == "logs-0"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_slow_revocation_fires_exactly_for_kafkas_rebalance_timeouts(scenario):
    """Every member a rebalance-timeout timer fenced, and nothing else: not a member leaving on
    its own, not a session timeout (n04, n03), not a classic-protocol member (n11)."""
    t = truth(scenario)
    want = sorted((e["ts"], e["first_offset"]) for e in t["events"]
                  if e["kind"] == "timer" and "rebalance-timeout" in (e.get("description") or "")
                  and e.get("record_count"))
    got = sorted((f["timestamp"], f["record_offset"]) for f in audit(scenario).tables["findings"]
                 if f["rule"] == "slow-revocation")
    assert got == want
