"""ListOffsets, offline: where a data partition's log ended at an instant, read from its files.

``end(T)`` is what a ListOffsets request with timestamp T answers (``UnifiedLog.fetchOffsetByTimestamp``,
the offset ``kafka-consumer-groups.sh --reset-offsets --to-datetime T`` uses): the offset of the first
record, in offset order, whose timestamp is at least T, or the log end offset when there is none. It
is found as the broker finds it: the first segment whose largest timestamp is at least T (one binary
search over the segments' running maximum), its ``.timeindex``, the ``.index`` at that entry, then a
scan of about one index interval (:func:`kgtool.storage.seek.seek_time_in`); never a scan of the
partition. A segment without usable indexes is scanned, once, with a note.

With ``message.timestamp.type=LogAppendTime`` record timestamps are the broker's append times and
``end(T)`` is exactly the log end at T; with CreateTime they are the producers' clocks.

A partition copied off several brokers (a leader and its followers) is read from its longest copy
(:func:`choose_copy`); the others are said to be behind by so many offsets, and a copy whose last
batch differs from the longest copy's batch at the same offset is a problem naming both files.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from kgtool.codec.model import RecordBatch
from kgtool.codec.summary import TAIL_KINDS
from kgtool.storage.files import FileKind, list_segments
from kgtool.storage.logview import batch_headers
from kgtool.storage.seek import _floor, _Segment, seek_time_in


class PartitionLog:
    """One partition directory, opened for many ListOffsets questions (segments opened once)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.segments = list_segments(directory)
        self.notes: list[str] = []
        self._open: dict[int, _Segment] = {}
        self._running_max: list[int] | None = None
        self._leo: int | None = None
        self._last_batch: RecordBatch | None = None
        self.last_file: str | None = None  # the segment holding the last batch
        #: damage met on the way to the log end (file, byte, message): the log end found is
        #: where the readable log ends, said, never taken silently
        self.problems: list[tuple[str, int, str]] = []

    def _seg(self, k: int) -> _Segment:
        seg = self._open.get(k)
        if seg is None:
            seg = self._open[k] = _Segment(self.segments[k])
        return seg

    def _largest(self) -> list[int]:
        """Each segment's largest timestamp so far, as a running maximum (ascending)."""
        if self._running_max is None:
            out, top = [], -1
            for k in range(len(self.segments)):
                top = max(top, self._seg(k).largest_timestamp(self.notes))
                out.append(top)
            self._running_max = out
        return self._running_max

    @property
    def log_end_offset(self) -> int:
        """The offset after the last batch (``UnifiedLog.logEndOffset``); an empty last segment
        (rolled, nothing appended yet) ends the log at its base offset."""
        if self._leo is None:
            self._leo = self.segments[-1].base_offset if self.segments else 0
            for k in range(len(self.segments) - 1, -1, -1):
                last = self._last_batch_of(k)
                if last is not None:
                    self._last_batch = last
                    self.last_file = self.segments[k].log
                    if k == len(self.segments) - 1:
                        self._leo = last.last_offset + 1
                    break
        return self._leo

    @property
    def last_batch(self) -> RecordBatch | None:
        """The log's last batch (its header)."""
        _ = self.log_end_offset
        return self._last_batch

    def _last_batch_of(self, k: int) -> RecordBatch | None:
        seg = self._seg(k)
        start = 0
        oi = seg.index(FileKind.offset_index, self.notes)
        if oi is not None and oi.entries:
            _o, p = oi.offset_position(oi.entries - 1)
            if seg.first_batch(p) is not None:
                start = p
        last = None
        for b in batch_headers(seg.data, source=seg.files.log, start=start, verify_crc=False):
            if isinstance(b, RecordBatch):
                last = b
            elif b.kind not in TAIL_KINDS:  # a truncated tail is an active segment's, not damage
                where = f" ({b.context})" if b.context else ""
                self.problems.append((seg.files.log, b.position, f"{b.kind}{where}: {b.reason}"))
        return last

    def end_at(self, t: int) -> int:
        """``end(T)``: the first offset whose record timestamp is at least ``t``, else the log end."""
        largest = self._largest()
        k = bisect_left(largest, t)  # the first segment whose largest timestamp is at least t
        for j in range(k, len(self.segments)):
            found = seek_time_in(self._seg(j), t, self.notes)
            if found is not None:
                return found[1]
        return self.log_end_offset

    def timestamp_at(self, offset: int) -> int | None:
        """The timestamp of the record at ``offset``, or of the first data record after it (past
        compacted records and transaction markers): the next record a consumer that committed
        ``offset`` reads. None when there is none."""
        if offset >= self.log_end_offset or not self.segments:
            return None
        for k in range(_floor(self.segments, offset), len(self.segments)):
            seg = self._seg(k)
            start = seg.position_for(offset, self.notes) if k == _floor(self.segments, offset) else 0
            for b in batch_headers(seg.data, source=seg.files.log, start=start, verify_crc=False):
                if not isinstance(b, RecordBatch) or b.last_offset < offset or b.is_control:
                    continue
                for off, ts in seg.records_at(b.position) or ():
                    if off >= offset:
                        return ts
        return None


@dataclass
class CopyChoice:
    """The copy read for a partition, the others and how far behind each is, and disagreements."""

    chosen: PartitionLog
    behind: list[tuple[str, int]] = field(default_factory=list)  # (directory, offsets behind)
    #: (segment file of the shorter copy, byte position of its batch, what differs)
    problems: list[tuple[str, int, str]] = field(default_factory=list)


def choose_copy(directories: list[str]) -> CopyChoice:
    """The longest copy of a partition (largest log end offset; the first given on a tie), the
    others' lag behind it, and a problem for each copy whose last batch is not the longest copy's
    batch at the same offset (base offset, last offset and CRC compared: headers only)."""
    logs = [PartitionLog(d) for d in directories]
    best = max(range(len(logs)), key=lambda k: (logs[k].log_end_offset, -k))
    out = CopyChoice(logs[best])
    for k, log in enumerate(logs):
        if k == best:
            continue
        out.behind.append((log.directory, out.chosen.log_end_offset - log.log_end_offset))
        mine = log.last_batch
        if mine is None:
            continue
        theirs = _batch_at(out.chosen, mine.base_offset)
        if theirs is None or (theirs.base_offset, theirs.last_offset, theirs.crc) != (
                mine.base_offset, mine.last_offset, mine.crc):
            what = "no batch" if theirs is None else f"offsets {theirs.base_offset}..{theirs.last_offset} crc {theirs.crc:#010x}"
            out.problems.append((log.last_file or log.directory, mine.position,
                                 f"copies disagree at offset {mine.base_offset}: {log.directory} has offsets "
                                 f"{mine.base_offset}..{mine.last_offset} crc {mine.crc:#010x} (batch@{mine.position}), "
                                 f"{out.chosen.directory} has {what}"))
    return out


def _batch_at(log: PartitionLog, offset: int) -> RecordBatch | None:
    """The header of the batch holding ``offset`` in ``log``."""
    if not log.segments:
        return None
    k = _floor(log.segments, offset)
    seg = log._seg(k)
    for b in batch_headers(seg.data, source=seg.files.log, start=seg.position_for(offset, log.notes),
                           verify_crc=False):
        if isinstance(b, RecordBatch) and b.last_offset >= offset:
            return b if b.base_offset <= offset else None
    return None
