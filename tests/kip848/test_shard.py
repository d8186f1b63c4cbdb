"""After every batch of Kafka's KIP-848 segments, the audit's replay (the columnar offset store and
the group shard) holds what Kafka's coordinator holds after loading that prefix (loaded.jsonl, made
by a fresh ``GroupCoordinatorShard`` replaying the log as ``CoordinatorLoaderImpl`` does): every
group, member and committed offset."""

from __future__ import annotations

import pytest

from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.store import K
from tests.kip848.golden import IDS, SCENARIOS, got_rows, jsonl, loaded_states, segment, want_rows


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


def stored_offsets(rp: PartitionReplay, gid: str) -> dict:
    g = rp.groups.get(gid)
    if g is None:
        return {}
    rows = rp.store.k
    return {tp: (int(rows[k, K["st_offset"]]), int(rows[k, K["st_leader_epoch"]]), int(rows[k, K["st_commit_ts"]]))
            for tp, k in g.keys.items() if rows[k, K["st_has"]]}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_state_after_every_batch_equals_kafkas_loaded_state(scenario):
    rp = PartitionReplay(0)
    n = 0
    for batch, (line, loaded, offsets) in zip(batches(scenario), loaded_states(scenario), strict=True):
        assert batch[0].offset == line["batch_base_offset"] and batch[-1].offset == line["last_offset"]
        rp.feed_entries(batch)
        where = f"after the batch at offset {line['batch_base_offset']}"
        groups, members = rp.state_tables()
        assert got_rows({"groups": groups, "group_members": members}) == tuple(map(sorted, want_rows(loaded))), where
        for gid in set(offsets) | set(rp.groups):
            want = {tp: (o[0], o[1], o[3]) for tp, o in offsets.get(gid, {}).items()}
            assert stored_offsets(rp, gid) == want, (where, gid)
        n += 1
    assert not rp.shard.incomplete and not rp.shard.ignored
    assert n == len(jsonl(scenario / "loaded.jsonl"))
