"""The golden __consumer_offsets segments (written by Kafka's group coordinator) decode to
exactly the batch and record views in their decode.jsonl (Kafka's FileRecords view)."""

from __future__ import annotations

import json

import pytest

from kgtool.codec import RecordBatch, scan_file
from tests.codec.golden import BATCHES, kafka_view

SCENARIOS = sorted((BATCHES.parent / "offsets").glob("*/00000000000000000000.log"))


@pytest.mark.parametrize("seg", SCENARIOS, ids=[p.parent.name for p in SCENARIOS])
def test_offsets_segment_batches_and_records(seg, impl):
    rows = [json.loads(line) for line in (seg.parent / "decode.jsonl").read_text().splitlines() if line.strip()]
    want_batches = [r for r in rows if r["type"] == "batch"]
    want_records = [r for r in rows if r["type"] == "record"]
    items = list(scan_file(str(seg)))
    assert all(isinstance(b, RecordBatch) for b in items)
    assert len(items) == len(want_batches)
    got_records = []
    for b, w in zip(items, want_batches):
        v = kafka_view(b)
        assert {k: v[k] for k in w if k != "type"} == {k: x for k, x in w.items() if k != "type"}
        for r in v["records"]:
            got_records.append({"batchBaseOffset": b.base_offset, **r})
    assert len(got_records) == len(want_records)
    for g, w in zip(got_records, want_records):
        keys = [k for k in w if k not in ("type", "offsetsTopic")]
        assert {k: g[k] for k in keys} == {k: w[k] for k in keys}
