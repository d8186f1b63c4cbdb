"""Seeking in a partition directory as the broker does: segment file names, then the indexes,
then a scan of at most about one index interval.

- By offset (``LogSegment.translateOffset``): the segment with the largest base offset at most
  N (``LogSegments.floorSegment``), ``OffsetIndex.lookup(N)`` (the last entry at most N), then
  the batches from that position up to the one holding N.
- By timestamp (``UnifiedLog.fetchOffsetByTimestamp``, ListOffsets semantics): the first
  segment whose largest timestamp is at least T, ``TimeIndex.lookup(T)``, the offset index at
  that entry's offset, then a scan for the first batch whose max timestamp is at least T and
  its first record whose timestamp is at least T (``FileRecords.searchForTimestamp``).
  A segment's largest timestamp is its time index's last entry, or larger in the batches after
  its last offset index entry (the active segment's tail, not yet indexed).

Every index entry used is checked against the batch it leads to (in the file, a batch starts
there, and it does not start after the entry's offset; the time index entry's batch has that max
timestamp). A missing index, or an entry that does not match, makes that segment's seek a scan
from its start, and says so in :attr:`SeekResult.notes`. With sound indexes the work does not
grow with the size of the log: a binary search over an index and a bounded scan.
"""

from __future__ import annotations

import datetime as _dt
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from kgtool.codec.batch import decode_v2_records
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.segment import open_segment, scan_segment
from kgtool.errors import DecodeError, UsageError
from kgtool.storage.files import FileKind, SegmentFiles, map_file
from kgtool.storage.indexes import SparseIndex
from kgtool.storage.logview import batch_headers


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_RECORDS_CACHED = 64


@dataclass
class SeekResult:
    """Where output starts: segment ``segment`` (an index into the list given), the batch at
    byte ``position``, records from offset ``offset`` on. ``segment`` is None when nothing
    matches (an offset past the log end, a timestamp after every record's)."""

    segment: int | None
    position: int = 0
    offset: int = 0
    notes: list[str] = field(default_factory=list)


def parse_time(text: str) -> int:
    """``--from-time``: epoch milliseconds, or ISO-8601 (``2024-05-01T14:03:00Z``; no zone: UTC).

    Raises:
        UsageError: neither.
    """
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    try:
        d = _dt.datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith(("Z", "z")) else t)
    except ValueError:
        raise UsageError(f"--from-time {text!r}: not epoch milliseconds or an ISO-8601 time "
                         "(e.g. 2024-05-01T14:03:00Z)") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return (d - _EPOCH) // _dt.timedelta(milliseconds=1)


class SeekSegment:
    """A segment opened for seeking: its data and, lazily, its indexes."""

    def __init__(self, files: SegmentFiles) -> None:
        self.files = files
        self.data, self.size = open_segment(files.log)
        self._oi = self._ti = None
        #: the (offset, timestamp) of the records of the last batches decoded, by position (a
        #: partition asked about many nearby instants decodes each batch once)
        self._records: dict[int, list[tuple[int, int]] | None] = {}
        #: batches asked about that did not decode: position -> what is wrong
        self.undecoded: dict[int, str] = {}

    def records_at(self, position: int) -> list[tuple[int, int]] | None:
        """(offset, timestamp) of each record of the batch at ``position``; None when it does not
        decode."""
        if position in self._records:
            return self._records[position]
        got: list[tuple[int, int]] = []

        def sink(buf, rstart, rend, count, base_offset, base_ts, lat, b) -> bool:
            # the codec's field tuples straight from its record walk: no Record built
            tuples, err = decode_v2_records(buf, rstart, rend, count, base_offset, base_ts, b.base_sequence, lat)
            if err is not None:
                return False  # the codec then reports what is wrong
            got.extend((t[0], t[1]) for t in tuples)
            return True

        full = next(scan_segment(self.data, source=self.files.log, start=position, chain_from=position,
                                 record_sink=sink), None)
        out = None
        if isinstance(full, RecordBatch):
            try:
                out = got if got else [(r.offset, r.timestamp) for r in full.records]
            except DecodeError as exc:
                self.undecoded[position] = str(exc)
        else:
            self.undecoded[position] = f"{full.kind}: {full.reason}" if isinstance(full, ScanProblem) \
                else "no batch there"
        if len(self._records) >= _RECORDS_CACHED:
            self._records.pop(next(iter(self._records)))
        self._records[position] = out
        return out

    def index(self, kind: FileKind, notes: list[str] | None = None) -> SparseIndex | None:
        """The segment's offset or time index; None when absent or when it fails the sanity
        check (then ``notes`` says so, once)."""
        path = self.files.index if kind is FileKind.offset_index else self.files.timeindex
        if path is None:
            return None
        attr = "_oi" if kind is FileKind.offset_index else "_ti"
        if getattr(self, attr) is None:
            idx = SparseIndex(path, self.files.base_offset, map_file(path), kind)
            why = self._insane(idx)
            setattr(self, attr, idx if why is None else False)
            if why is not None and notes is not None:
                notes.append(f"{path}: {why}: scanning the segment instead")
        return getattr(self, attr) or None

    def _insane(self, idx: SparseIndex) -> str | None:
        """``AbstractIndex.sanityCheck`` and more, on the first and last entries (O(1)): whole
        entries, offsets at or above the base offset and increasing, positions in the log,
        timestamps increasing."""
        if idx.trailing:
            return f"{idx.trailing} bytes after the last whole entry"
        n = idx.entries
        if n == 0:
            return None
        if idx.kind is FileKind.offset_index:
            (o0, p0), (o1, p1) = idx.offset_position(0), idx.offset_position(n - 1)
            if o0 < idx.base_offset or o1 < o0 or not (0 <= p0 <= p1 < self.size):
                return "the index fails the sanity check (offsets or positions out of order or out of the log)"
        else:
            (t0, o0), (t1, o1) = idx.timestamp_offset(0), idx.timestamp_offset(n - 1)
            if o0 < idx.base_offset or o1 < o0 or t1 < t0:
                return "the index fails the sanity check (timestamps or offsets out of order)"
        return None

    def first_batch(self, position: int) -> RecordBatch | None:
        if not 0 <= position < self.size:
            return None
        b = next(batch_headers(self.data, source=self.files.log, start=position, verify_crc=False), None)
        return b if isinstance(b, RecordBatch) else None

    def position_for(self, offset: int, notes: list[str]) -> int:
        """``OffsetIndex.lookup(offset).position``, checked; 0 (a scan from the start) without a
        usable index."""
        oi = self.index(FileKind.offset_index, notes)
        if oi is None:
            if self.files.index is None:
                notes.append(f"{self.files.log}: no offset index: scanning the segment from its start")
            return 0
        slot = oi.largest_lower_bound(offset)
        if slot < 0:
            return 0
        o, p = oi.offset_position(slot)
        b = self.first_batch(p)
        if b is None or b.base_offset > o:
            why = (f"position {p} holds no batch" if b is None
                   else f"the batch at position {p} starts at offset {b.base_offset}, after the entry's {o}")
            notes.append(f"{oi.path}: entry {slot} does not match the log ({why}): scanning the segment from its start")
            return 0
        return p

    def largest_timestamp(self, notes: list[str]) -> int:
        """The segment's largest batch timestamp (``LogSegment.maxTimestampSoFar``): the time
        index's last entry, checked, and the batches after the last offset index entry."""
        ti = self.index(FileKind.time_index, notes)
        oi = self.index(FileKind.offset_index, notes)
        largest, start = -1, 0
        if ti is None or oi is None:
            if self.files.timeindex is None or self.files.index is None:
                notes.append(f"{self.files.log}: no {'time' if self.files.timeindex is None else 'offset'} index: "
                             "scanning the segment for its largest timestamp")
        else:
            if ti.entries:
                ts, off = ti.timestamp_offset(ti.entries - 1)
                if self._holder_max(off, notes) == ts:
                    largest = ts
                    if oi.entries:
                        o, p = oi.offset_position(oi.entries - 1)
                        start = p if self.first_batch(p) is not None else 0
                else:
                    notes.append(f"{ti.path}: the last entry ({ts}, offset {off}) does not match the log: scanning "
                                 "the segment for its largest timestamp")
        for b in batch_headers(self.data, source=self.files.log, start=start, verify_crc=False):
            if isinstance(b, RecordBatch) and b.max_timestamp > largest:
                largest = b.max_timestamp
        return largest

    def _holder_max(self, offset: int, notes: list[str]) -> int | None:
        """The max timestamp of the batch holding ``offset``, found through the offset index."""
        for b in batch_headers(self.data, source=self.files.log, start=self.position_for(offset, notes),
                               verify_crc=False):
            if isinstance(b, RecordBatch) and b.last_offset >= offset:
                return b.max_timestamp if b.base_offset <= offset else None
        return None


def segment_at(segments: list[SegmentFiles], offset: int) -> int:
    """The index of the segment holding ``offset``: the last whose base offset is at most it (0 below all)."""
    return max(0, bisect_right([s.base_offset for s in segments], offset) - 1)


def seek_offset(segments: list[SegmentFiles], target: int) -> SeekResult:
    """Where the record at offset ``target`` (or the first after it) is."""
    out = SeekResult(None, offset=target)
    for k in range(segment_at(segments, target), len(segments)):
        seg = SeekSegment(segments[k])
        start = seg.position_for(target, out.notes) if k == segment_at(segments, target) else 0
        for b in batch_headers(seg.data, source=seg.files.log, start=start, verify_crc=False):
            if isinstance(b, RecordBatch) and b.last_offset >= target:
                out.segment, out.position = k, b.position
                return out
    return out


def seek_time(segments: list[SegmentFiles], target: int) -> SeekResult:
    """Where the first record (in offset order) whose timestamp is at least ``target`` is."""
    out = SeekResult(None)
    for k, files in enumerate(segments):
        seg = SeekSegment(files)
        if seg.largest_timestamp(out.notes) < target:
            continue
        found = seek_time_in(seg, target, out.notes)
        if found is not None:
            out.segment, out.position, out.offset = k, found[0], found[1]
            return out
    return out


def seek_time_in(seg: SeekSegment, target: int, notes: list[str]) -> tuple[int, int] | None:
    """In one segment: (position of the batch, offset) of the first record whose timestamp is at
    least ``target`` (``LogSegment.findOffsetByTimestamp``: ``TimeIndex.lookup``, the offset
    index at that entry's offset, then ``FileRecords.searchForTimestamp``), or None."""
    start = 0
    ti = seg.index(FileKind.time_index, notes)
    if ti is not None and seg.index(FileKind.offset_index, notes) is not None:
        slot = ti.largest_lower_bound(target)
        if slot >= 0:
            ts, off = ti.timestamp_offset(slot)
            if seg._holder_max(off, notes) == ts:
                start = seg.position_for(off, notes)
            else:
                notes.append(f"{ti.path}: entry {slot} ({ts}, offset {off}) does not match the log: "
                             "scanning the segment from its start")
    return _first_at_or_after(seg, start, target)


def _first_at_or_after(seg: SeekSegment, start: int, target: int) -> tuple[int, int] | None:
    for b in batch_headers(seg.data, source=seg.files.log, start=start, verify_crc=False):
        if not isinstance(b, RecordBatch) or b.max_timestamp < target:
            continue
        for offset, ts in seg.records_at(b.position) or ():
            if ts >= target:
                return b.position, offset
    return None


def plan(paths: list[str], *, from_offset: int | None, from_time: str | None, refused: bool = False,
         hex_text: bool = False) -> tuple[list[SegmentFiles], SeekResult]:
    """``--from-offset`` / ``--from-time`` / ``--count``: the segments of the one input and where
    output starts (``--count`` alone: the start of the log).

    Raises:
        UsageError: with ``refused`` (``--summary``, or other files than segments), both
            positions, ``--hex``, or not exactly one directory or segment file.
        InputError: a directory without segments.
    """
    import os

    from kgtool.errors import InputError
    from kgtool.inputs import STDIN
    from kgtool.storage.files import list_segments, segment_of

    if refused:
        raise UsageError("--from-offset, --from-time and --count print records: not with --summary or "
                         "index, snapshot and checkpoint files")
    if from_offset is not None and from_time is not None:
        raise UsageError("--from-offset and --from-time are exclusive")
    if hex_text or len(paths) != 1 or paths[0] == STDIN:
        raise UsageError("--from-offset, --from-time and --count take one partition directory or segment file")
    p = paths[0]
    segments = list_segments(p) if os.path.isdir(p) else [segment_of(p)]
    if not segments:
        raise InputError(f"{p}: no *.log segment files in this directory")
    if from_offset is not None:
        return segments, seek_offset(segments, from_offset)
    if from_time is not None:
        return segments, seek_time(segments, parse_time(from_time))
    return segments, SeekResult(0)
