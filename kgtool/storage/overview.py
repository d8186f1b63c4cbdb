"""``decode-batch DIR --summary``: what a partition directory holds, file by file.

Per segment: base offset, size, offsets, first and last timestamps, whether it is the active
segment (the one with the largest base offset, ``LocalLog.activeSegment``) and whether its
indexes are untrimmed (preallocated: a copy of a running broker). Then the aborted transactions
(every ``.txnindex``), the producers of the newest snapshot, the leader epochs, the topic id,
and from the broker's log directory one level up the high watermark
(``replication-offset-checkpoint``), the log start offset and the recovery point.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kgtool.codec.model import RecordBatch
from kgtool.codec.segment import open_segment
from kgtool.storage.decode import decode_file
from kgtool.storage.files import (
    HIGH_WATERMARK_FILE,
    LEADER_EPOCH_FILE,
    LOG_START_OFFSET_FILE,
    FileKind,
    list_segments,
    list_snapshots,
    map_file,
    topic_partition,
)
from kgtool.storage.indexes import SparseIndex
from kgtool.storage.logview import batch_headers

#: Rows kept of long lists (aborted transactions, producers); the rest are counted.
MAX_LISTED = 1000


@dataclass
class SegmentOverview:
    base_offset: int
    file: str
    size: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    active: bool
    untrimmed: bool
    index_entries: int | None
    time_index_entries: int | None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class PartitionOverview:
    directory: str
    topic: str | None
    partition: int | None
    topic_id: str | None = None
    segments: list[SegmentOverview] = field(default_factory=list)
    log_end_offset: int | None = None
    high_watermark: int | None = None
    log_start_offset: int | None = None
    recovery_point: int | None = None
    aborted_transactions: list[dict] = field(default_factory=list)
    aborted_transaction_count: int = 0
    snapshot: str | None = None
    producers: list[dict] = field(default_factory=list)
    producer_count: int = 0
    leader_epochs: list[dict] = field(default_factory=list)
    problems: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["segments"] = [s.to_json() for s in self.segments]
        d.pop("problems")
        return d


def _stats(path: str) -> tuple:
    """(first offset, last offset, smallest and largest batch max timestamp) from the headers."""
    data, _ = open_segment(path)
    first = last = lo = hi = None
    for b in batch_headers(data, source=path, verify_crc=False):
        if isinstance(b, RecordBatch):
            first = b.base_offset if first is None else first
            last = b.last_offset
            if b.max_timestamp >= 0:
                lo = b.max_timestamp if lo is None else min(lo, b.max_timestamp)
                hi = b.max_timestamp if hi is None else max(hi, b.max_timestamp)
    return first, last, lo, hi


def _checkpoint_value(path: str, topic: str, partition: int, problems: list) -> int | None:
    if not os.path.isfile(path):
        return None
    f = decode_file(path, FileKind.offset_checkpoint)
    value = None
    for row in f.rows():
        if row["topic"] == topic and row["partition"] == partition:
            value = row["offset"]
    problems.extend(f.problems.items)
    return value


def _listed(path: str, into: list[dict], problems: list) -> int:
    """Decode ``path``: its entries (without their entry number) appended to ``into`` up to
    MAX_LISTED in all, its problems to ``problems``; returns how many entries it holds."""
    f = decode_file(path)
    n = 0
    for row in f.rows():
        n += 1
        if len(into) < MAX_LISTED:
            into.append({k: v for k, v in row.items() if k != "entry"})
    problems.extend(f.problems.items)
    return n


def partition_overview(directory: str, stats: dict[str, tuple] | None = None) -> PartitionOverview:
    """The overview of a partition directory.

    Args:
        stats: per segment path, ``(first_offset, last_offset, first_timestamp, last_timestamp)``
            already computed (``--summary`` decodes every segment); the rest come from the headers.

    Raises:
        InputError: the directory or a file cannot be read.
    """
    tp = topic_partition(directory)
    ov = PartitionOverview(directory, *(tp if tp else (None, None)))
    segments = list_segments(directory)
    for k, seg in enumerate(segments):
        st = (stats or {}).get(seg.log) or _stats(seg.log)
        counts, untrimmed = [], False
        for path, kind in ((seg.index, FileKind.offset_index), (seg.timeindex, FileKind.time_index)):
            if path is None:
                counts.append(None)
                continue
            idx = SparseIndex(path, seg.base_offset, map_file(path), kind)
            counts.append(idx.entries)
            untrimmed = untrimmed or idx.preallocated > 0
        ov.segments.append(SegmentOverview(seg.base_offset, seg.log, os.path.getsize(seg.log), st[0], st[1], st[2],
                                           st[3], k == len(segments) - 1, untrimmed, counts[0], counts[1]))
        if st[1] is not None:
            ov.log_end_offset = st[1] + 1
        if seg.txnindex:
            ov.aborted_transaction_count += _listed(seg.txnindex, ov.aborted_transactions, ov.problems)
    snaps = list_snapshots(directory)
    if snaps:
        ov.snapshot = snaps[-1][1]
        ov.producer_count += _listed(ov.snapshot, ov.producers, ov.problems)
    epochs = os.path.join(directory, LEADER_EPOCH_FILE)
    if os.path.isfile(epochs):
        f = decode_file(epochs)
        ov.leader_epochs = [{"epoch": r["epoch"], "start_offset": r["start_offset"]} for r in f.rows()]
        ov.problems.extend(f.problems.items)
    meta = os.path.join(directory, "partition.metadata")
    if os.path.isfile(meta):
        f = decode_file(meta)
        for r in f.rows():
            ov.topic_id = r["topic_id"]
        ov.problems.extend(f.problems.items)
    if tp is not None:
        parent = os.path.dirname(os.path.abspath(directory))
        ov.high_watermark = _checkpoint_value(os.path.join(parent, HIGH_WATERMARK_FILE), *tp, ov.problems)
        ov.log_start_offset = _checkpoint_value(os.path.join(parent, LOG_START_OFFSET_FILE), *tp, ov.problems)
        ov.recovery_point = _checkpoint_value(os.path.join(parent, "recovery-point-offset-checkpoint"), *tp,
                                              ov.problems)
    return ov


__all__ = ["PartitionOverview", "SegmentOverview", "partition_overview"]


def overviews(paths: list[str], summaries: list) -> list[PartitionOverview]:
    """The overview of every partition directory among ``paths``, reusing what the summaries
    (:class:`kgtool.codec.summary.ScanSummary`, one per segment) already computed."""
    from kgtool.inputs import STDIN

    stats = {s.source: (s.first_offset, s.last_offset, s.min_timestamp, s.max_timestamp) for s in summaries}
    return [partition_overview(p, stats) for p in paths if p != STDIN and os.path.isdir(p)]
