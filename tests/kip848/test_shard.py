"""After every batch of Kafka's KIP-848 segments, the shard holds what Kafka's coordinator holds
after loading that prefix (loaded.jsonl, made by a fresh ``GroupCoordinatorShard`` replaying the
log as ``CoordinatorLoaderImpl`` does): every group, member and committed offset."""

from __future__ import annotations

import pytest

from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.shard import GroupCoordinatorShard
from kgtool.offsets.shard.views import group_view
from tests.kip848.golden import IDS, SCENARIOS, jsonl, loaded_states, segment

#: fields loaded.jsonl has for a consumer-group member (kgtool's view has a few more)
MODERN_MEMBER = ("member_id", "instance_id", "client_id", "client_host", "member_epoch", "previous_member_epoch",
                 "state", "assigned", "pending_revocation", "target", "subscribed_topic_names",
                 "rebalance_timeout_ms", "server_assignor", "uses_classic_protocol")


def _pairs(items):
    return [tuple(x) for x in items] if items is not None else None


def comparable(view: dict) -> dict:
    out = {k: v for k, v in view.items() if k != "members"}
    members = []
    for m in view["members"]:
        if view["type"] == "classic":
            members.append({**m, "assigned": _pairs(m["assigned"])})
        else:
            m = {k: m[k] for k in MODERN_MEMBER}
            for k in ("assigned", "pending_revocation", "target"):
                m[k] = _pairs(m[k])
            members.append(m)
    out["members"] = members
    return out


def batches(scenario):
    """The entries of each batch, in log order (a batch: entries sharing a position)."""
    current, pos = [], None
    for e in entries_from_file(segment(scenario), log_partition=0):
        if pos is not None and e.position != pos:
            yield current
            current = []
        pos = e.position
        current.append(e)
    if current:
        yield current


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_state_after_every_batch_equals_kafkas_loaded_state(scenario):
    want_lines = jsonl(scenario / "loaded.jsonl")
    shard = GroupCoordinatorShard()
    n = 0
    for batch, (line, loaded, offsets) in zip(batches(scenario), loaded_states(scenario), strict=True):
        assert batch[0].offset == line["batch_base_offset"] and batch[-1].offset == line["last_offset"]
        for e in batch:
            shard.replay_entry(e)
        groups = {gid: {**g, "members": [
            {**m, **{k: _pairs(m[k]) for k in ("assigned", "pending_revocation", "target") if k in m}}
            for m in g["members"]]} for gid, g in loaded.items()}
        where = f"after the batch at offset {line['batch_base_offset']}"
        got = {gid: comparable(group_view(g, shard.topic_names)) for gid, g in shard.groups.groups.items()}
        assert sorted(got) == sorted(groups), where
        for gid in groups:
            assert got[gid] == groups[gid], (where, gid)
        for gid in set(offsets) | set(shard.offsets.offsets):
            stored = {tp: (o.offset, o.leader_epoch, o.metadata, o.commit_timestamp)
                      for tp, o in shard.offsets.fetch_all_offsets(gid).items()}
            assert stored == offsets.get(gid, {}), (where, gid)
        n += 1
    assert not shard.incomplete and not shard.ignored
    assert n == len(want_lines)
