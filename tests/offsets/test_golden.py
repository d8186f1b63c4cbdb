"""The model on the golden segments written and decoded by Kafka's own code."""

from __future__ import annotations


from kgtool.offsets.audit import audit_entries
from kgtool.offsets.entries import LogEntry
from tests.offsets.golden import golden_entries


def _offsets(entries: list[LogEntry], group: str, before: int | None = None):
    items = [e for e in entries if (before is None or e.offset < before)]
    (rp,) = audit_entries(items).replays.values()
    return rp.offsets(group)


def test_scenario3_state_before_offset_delete():
    entries = golden_entries("scenario3_transactions_tombstones")
    delete_at = next(e.offset for e in entries if e.kind == "offset_commit" and e.value is None)
    res = _offsets(entries, "txn-group", before=delete_at)
    assert res == {("input", 0): 150, ("input", 1): 310, ("input", 2): 50}


def test_scenario3_end_state_and_txn_outcomes():
    entries = golden_entries("scenario3_transactions_tombstones")
    assert _offsets(entries, "txn-group") == {}
    assert _offsets(entries, "other-group") == {("input", 0): 7}
    r = audit_entries(entries)
    by_offset = {(c["group"], c["record_offset"]): c for c in r.tables["commits"]}
    outcomes = sorted(
        (c["offset"], c["txn_result"], c["effective"]) for c in r.tables["commits"] if c["transactional"]
    )
    # txn A (5000) aborted; B (6000) committed; C (7000) committed but superseded by 310.
    assert outcomes == [(100, "ABORT", False), (150, "COMMIT", True), (200, "ABORT", False), (300, "COMMIT", False)]
    assert by_offset[("other-group", 10)]["group_state"] == "Empty"
    states = [(g["generation_id"], g["state"]) for g in r.tables["generations"]]
    assert states == [(1, "Stable"), (2, "Empty"), (None, "Dead")]
    assert r.tables["findings"] == []


def test_scenario1_generations_and_attribution():
    r = audit_entries(golden_entries("scenario1_generations"))
    gens = r.tables["generations"]
    assert [(g["generation_id"], g["member_count"], g["leader"].split("-")[0]) for g in gens] == [
        (1, 1, "consumerA"), (2, 2, "consumerA"), (3, 3, "consumerA"), (4, 2, "consumerB"), (5, 3, "consumerB"),
    ]
    assert {g["protocol_name"] for g in gens} == {"cooperative-sticky"}
    static = [m for m in r.tables["members"] if m["group_instance_id"]]
    assert {m["group_instance_id"] for m in static} == {"orders-static-c"}
    # Every commit's metadata names the member that wrote it ("gen=G member=M"); the
    # attribution must agree: the generation in effect and an owner of the partition.
    checked = 0
    for c in r.tables["commits"]:
        meta = c["metadata"]
        if not meta.startswith("gen="):
            continue
        gen_text, member_text = meta.split()
        assert c["generation_id"] == int(gen_text[4:])
        assert member_text[7:] in c["owners"], c
        checked += 1
    assert checked == 36
    last = r.tables["commits"][-1]
    assert (last["value_version"], last["leader_epoch"], last["expire_timestamp"]) == (1, -1, 1717258132000)
    assert r.tables["findings"] == []
    cov = r.tables["coverage"][0]
    assert (cov["log_partition"], cov["records"], cov["batches"], cov["first_offset"], cov["last_offset"]) == (
        12, 42, 15, 0, 41,
    )
