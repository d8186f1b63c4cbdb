"""Split planning at batch boundaries (pure Python: no Spark needed)."""

from __future__ import annotations

import os

from kgtool.codec.segment import scan_file
from kgtool.spark.plan import plan_ranges
from tests.offsets.golden import FIXTURES

SEGMENT = str(FIXTURES / "scenario1_generations" / "00000000000000000000.log")


def _batch_positions(path):
    return [b.position for b in scan_file(path) if hasattr(b, "records")]


def test_ranges_start_at_batch_boundaries_and_tile_the_file():
    size = os.path.getsize(SEGMENT)
    positions = _batch_positions(SEGMENT)
    for split in (1, 500, 1000, 4096, 1 << 30):
        ranges = plan_ranges(SEGMENT, size, split)
        assert ranges[0][0] == 0 and ranges[-1][1] == size
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert {s for s, _ in ranges} <= set(positions)
    assert len(plan_ranges(SEGMENT, size, 1)) == len(positions)
    assert plan_ranges(SEGMENT, size, 1 << 30) == [(0, size)]


def test_truncated_tail_goes_to_the_last_range(tmp_path):
    data = open(SEGMENT, "rb").read()
    cut = tmp_path / "00000000000000000000.log"
    cut.write_bytes(data[:-10])
    ranges = plan_ranges(str(cut), len(data) - 10, 1)
    positions = _batch_positions(SEGMENT)
    assert ranges[-1] == (positions[-1], len(data) - 10)


def test_empty_file(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"")
    assert plan_ranges(str(p), 0) == []
