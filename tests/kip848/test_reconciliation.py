"""Consumer-group rebalances against Kafka's own logs: when each group epoch's reconciliation
completed, when each member reached it, and the ``slow-revocation`` rule, all read from the state
Kafka's coordinator holds after loading each batch (``loaded.jsonl``)."""

from __future__ import annotations

import pytest

from kgtool.codec import encode_batch_v2, scan_file
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.columns import KeyTable, decode_commit_chunks
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.decode import entries_from_file
from tests.kip848.golden import IDS, SCENARIOS, loaded_states, segment, truth


def kafka_epochs(scenario, merged: dict[int, int] | None = None) -> dict[tuple[str, int], dict]:
    """Per (consumer group, group epoch) in Kafka's loaded states: the batch time it began, the
    first batch time at which the group was Stable at it (None: never), and the first batch
    time at which each member was at it. ``merged``: batches merged with the next one (base
    offset -> the next's): no state is served between them."""
    epochs: dict[tuple[str, int], dict] = {}
    for line, groups, _offsets in loaded_states(scenario):
        if merged and line["batch_base_offset"] in merged:
            continue
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


def _record_types(b) -> set[int]:
    return {int.from_bytes(r.key[:2], "big") for r in b.records if r.key}


def linger_merged(scenario, out_dir) -> tuple[str, dict[int, int]]:
    """The scenario's segment as a broker's 10 ms append linger writes it: each batch of
    consumer-group records followed by a batch of offset commits alone becomes one batch (the
    records keep their own timestamps). Returns the segment and the merged pairs (base offsets)."""
    batches = [b for b in scan_file(segment(scenario)) if hasattr(b, "records")]
    out, merged, i = bytearray(), {}, 0
    while i < len(batches):
        b = batches[i]
        recs = [{"offset": r.offset, "key": r.key, "value": r.value, "timestamp": r.timestamp} for r in b.records]
        nxt = batches[i + 1] if i + 1 < len(batches) else None
        plain = not (b.is_control or b.is_transactional)
        if (plain and nxt is not None and not (nxt.is_control or nxt.is_transactional)
                and _record_types(b) & CONSUMER_GROUP_TYPES and _record_types(nxt) <= {0, 1}):
            recs += [{"offset": r.offset, "key": r.key, "value": r.value, "timestamp": r.timestamp}
                     for r in nxt.records]
            merged[b.base_offset] = nxt.base_offset
            i += 1
        out += encode_batch_v2(recs, base_offset=b.base_offset, producer_id=b.producer_id,
                               producer_epoch=b.producer_epoch, is_transactional=b.is_transactional,
                               is_control=b.is_control, partition_leader_epoch=b.partition_leader_epoch)
        i += 1
    path = out_dir / "00000000000000000000.log"
    path.write_bytes(bytes(out))
    return str(path), merged


#: ConsumerGroupMetadata .. ConsumerGroupCurrentMemberAssignment, ConsumerGroupRegularExpression
CONSUMER_GROUP_TYPES = {3, 4, 5, 6, 7, 8, 16}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_completed_at_and_members_reached_equal_kafkas_loaded_state(scenario):
    check_epochs(kafka_epochs(scenario), audit(scenario).tables["rebalances"])


def _mergeable(scenario) -> bool:
    bs = [b for b in scan_file(segment(scenario)) if hasattr(b, "records")]
    return any(_record_types(a) & CONSUMER_GROUP_TYPES and _record_types(b) <= {0, 1} for a, b in zip(bs, bs[1:]))


#: the scenarios with a consumer-group batch followed by a commit batch (all but n09 and n10)
MERGEABLE = [s for s in SCENARIOS if _mergeable(s)]


@pytest.mark.parametrize("scenario", MERGEABLE, ids=[s.name for s in MERGEABLE])
def test_linger_merged_batches_settle_after_the_whole_batch(scenario, tmp_path):
    """A heartbeat's records and a commit merged into one batch (the broker's append linger): the
    group is read as the whole batch left it, at the batch's largest timestamp, and the commits
    are judged as before (the same findings)."""
    path, merged = linger_merged(scenario, tmp_path)
    assert merged
    rp = columnar(path)
    check_epochs(kafka_epochs(scenario, merged), rp.rebalances)
    plain = columnar(segment(scenario))

    def key(f):
        return (f["rule"], f["record_offset"], f["topic"], f["partition"], f["group"])

    # the same findings, but the merged batches' own positions
    assert sorted(map(key, rp.findings), key=str) == sorted(map(key, plain.findings), key=str)


def columnar(path: str) -> PartitionReplay:
    """The audit's own path through a segment: commit columns in chunks, group records aside."""
    with open(path, "rb") as f:
        data = f.read()
    keys = KeyTable()
    rp = PartitionReplay(0)
    for chunk in decode_commit_chunks(data, source=path, log_partition=0, keys=keys):
        rp.feed(chunk, keys)
    rp.finish()
    return rp


def check_epochs(want, rebalances):
    rows = [r for r in rebalances if r["protocol"] == "consumer"]
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
