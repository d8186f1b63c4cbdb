"""A partition task with ``--until``: the read stops at the partition's first record stamped at
or after the instant (later chunks and segments are not decoded), and the offsets table written
by the task is the state at that instant. No Spark here: the task function itself."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

import kgtool.spark.task as task
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.scenario import Script
from kgtool.offsets.writer import write_segment
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.spark.test_task import PATHS


def two_segments(tmp_path) -> tuple[PartitionFiles, int]:
    """Segment 1: 40 commits, one a second; segment 2: 40 more, a day later. Returns the files and
    the timestamp of the 11th commit."""
    d = str(tmp_path / "__consumer_offsets-9")
    first = Script(log_partition=9)
    stamps = [first.commit("g", {("t", i % 4): i}, metadata=f"m{i}") for i in range(40)]
    second = Script(log_partition=9, start_ms=first.start_ms + 86_400_000)
    for i in range(40, 80):
        second.commit("g", {("t", i % 4): i})
    paths = [write_segment(first, d), write_segment(second, d, base_offset=40)]
    return PartitionFiles(9, paths, [os.path.getsize(p) for p in paths]), stamps[10]


@pytest.mark.parametrize("pure", PATHS)
def test_read_stops_at_the_cut(tmp_path, monkeypatch, pure):
    files, t10 = two_segments(tmp_path)
    opened, fed = [], []
    reader = task.RangeReader

    def counting_reader(path, storage=None):
        opened.append(os.path.basename(path))
        return reader(path, storage)

    feed = PartitionReplay.feed

    def counting_feed(self, chunk, keys):
        fed.append(chunk.n)
        return feed(self, chunk, keys)

    monkeypatch.setattr(task, "RangeReader", counting_reader)
    monkeypatch.setattr(PartitionReplay, "feed", counting_feed)
    out = str(tmp_path / "out")
    s = audit_partition(files, AuditOptions(until=t10), out_root=out, pure=pure, max_rows=4)
    # last_markers' pre-pass maps both segments (control batches only) and the replay reads through
    # the same mappings: the first segment only, and only up to the chunk holding the cut (rows 8..11).
    assert opened == ["00000000000000000000.log", "00000000000000000040.log"]
    assert fed == [4, 4, 4]
    assert s.coverage["records"] == 10 and s.coverage["last_offset"] == 9 and s.counts["commits"] == 10
    rows = pq.read_table(os.path.join(out, "offsets", "part-00009.parquet")).to_pylist()
    assert [(r["partition"], r["offset"], r["metadata"], r["record_offset"]) for r in rows] == [
        (0, 8, "m8", 8), (1, 9, "m9", 9), (2, 6, "m6", 6), (3, 7, "m7", 7)]
    assert s.counts["offsets"] == 4


@pytest.mark.parametrize("pure", PATHS)
def test_without_until_every_segment_is_read(tmp_path, pure):
    files, _t10 = two_segments(tmp_path)
    s = audit_partition(files, AuditOptions(), pure=pure, keep_offsets=True)
    assert s.coverage["records"] == 80
    assert sorted(s.offsets) == [["g", "t", p, 76 + p, False] for p in range(4)]


def test_mappings_kept_between_the_passes_are_bounded(tmp_path, monkeypatch):
    """The markers pre-pass keeps at most KEEP_MAPPED_BYTES of segments mapped for the replay;
    the other segments are mapped again (read twice, never held all at once)."""
    files, _t10 = two_segments(tmp_path)
    opened = []
    reader = task.RangeReader

    def counting_reader(path, storage=None):
        opened.append(os.path.basename(path))
        return reader(path, storage)

    monkeypatch.setattr(task, "RangeReader", counting_reader)
    monkeypatch.setattr(task, "KEEP_MAPPED_BYTES", files.sizes[0])
    audit_partition(files, AuditOptions())
    assert opened == ["00000000000000000000.log", "00000000000000000040.log", "00000000000000000040.log"]
