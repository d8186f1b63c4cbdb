"""After every batch of logs written by Kafka 4.4's own group coordinator, kgtool's replay holds
what a fresh Kafka 4.4 shard holds after loading that prefix (``loaded.jsonl``): every consumer,
classic, share and streams group with its members, target assignment, tasks and topology, and
every committed offset."""

from __future__ import annotations

import pytest

from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.shard.views import loaded_view
from tests.kip848.test_shard import batches as _batches
from tests.kip848.test_shard import stored_offsets
from tests.kafka44.golden import IDS, SCENARIOS, jsonl, kafka_group, kgtool_group, segment


def batches(scenario):
    return _batches(_Scenario(scenario))


class _Scenario:
    """A kafka44 scenario where tests.kip848's helpers look for its segment."""

    def __init__(self, path):
        self.path = path

    def __truediv__(self, name):
        return self.path / name


def kafka_offsets(line: dict) -> dict:
    return {gid: {(t, int(p)): (o["offset"], o["leader_epoch"], o["commit_timestamp"])
                  for t, parts in by_topic.items() for p, o in parts.items()}
            for gid, by_topic in line["offsets"].items()}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_state_after_every_batch_equals_kafka_44s_loaded_state(scenario):
    rp = PartitionReplay(0)
    lines = jsonl(scenario / "loaded.jsonl")
    got_batches = list(batches(scenario))
    assert len(got_batches) == len(lines)
    for batch, line in zip(got_batches, lines):
        rp.feed_entries(batch)
        assert batch[-1].offset + 1 == line["log_end_offset"]
        where = f"{scenario.name} after batch {line['batch']} ({line['op']})"
        shard = rp.shard.groups
        got = {gid: kgtool_group(loaded_view(gid, g, shard)) for gid, g in shard.groups.items()}
        want = {g["group_id"]: kafka_group(g) for g in line["groups"]}
        assert sorted(got) == sorted(want), where
        for gid in want:
            assert got[gid] == want[gid], (where, gid)
        offsets = kafka_offsets(line)
        for gid in set(offsets) | set(rp.groups):
            assert stored_offsets(rp, gid) == offsets.get(gid, {}), (where, gid)
    assert not rp.shard.incomplete, rp.shard.incomplete
