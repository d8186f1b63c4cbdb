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

import mmap
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgtool import native
from kgtool.codec.model import RecordBatch
from kgtool.codec.summary import TAIL_KINDS
from kgtool.storage.files import FileKind, list_segments
from kgtool.storage.logview import batch_headers
from kgtool.storage.seek import segment_at, SeekSegment, seek_time_in

_speedups: Any = native.load("kgtool.codec._speedups")
#: seek_sweep's answer where it declines (kgtool/codec/_seek.h): the Python reader answers.
ASK_PYTHON = np.iinfo(np.int64).min
_NONE = np.zeros(0, np.int64)
#: The bytes :meth:`PartitionLog._prefetch` counts past a question's next index entry: a batch of
#: a producer's default ``batch.size``, which the walk reads whole to check its CRC.
PREFETCH_BATCH = 16 * 1024
#: A run of the questions' ranges that touch is read whole, in one request, when it spans at
#: least WHOLE_ENTRIES index entries and questions start at WHOLE_SHARE of them or more: there
#: nearly every batch holds an answer, and one long read costs less than a read a batch.
WHOLE_ENTRIES, WHOLE_SHARE = 4, 0.75
#: The batches :meth:`PartitionLog._fetch` follows from a question's start to the batch holding
#: its answer (a walk beyond finds its pages by faults of its own).
FETCH_HOPS = 64
#: A v2 batch header's fields :meth:`PartitionLog._fetch` reads: (offset, size) each, and the
#: header's size (DefaultRecordBatch: BASE_OFFSET, LENGTH, MAGIC, ATTRIBUTES, LAST_OFFSET_DELTA,
#: MAX_TIMESTAMP; RECORD_BATCH_OVERHEAD)
_HEADER_FIELDS = ((0, 8), (8, 4), (16, 1), (21, 2), (23, 4), (35, 8))
_HEADER_BYTES = 61
_HEADER_COLUMNS = np.concatenate([np.arange(o, o + n) for o, n in _HEADER_FIELDS])


class PartitionLog:
    """One partition directory, opened for many ListOffsets questions (segments opened once)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.segments = list_segments(directory)
        self.notes: list[str] = []
        self._open: dict[int, SeekSegment] = {}
        self._arrays: dict[int, dict[FileKind, Any]] = {}
        self._running_max: list[int] | None = None
        self._leo: int | None = None
        self._last_batch: RecordBatch | None = None
        self.last_file: str | None = None  # the segment holding the last batch
        #: damage met on the way to the log end (file, byte, message): the log end found is
        #: where the readable log ends, said, never taken silently
        self.problems: list[tuple[str, int, str]] = []
        #: per segment, the positions of the batches whose CRC a walk checked, ascending
        self._checked: dict[int, np.ndarray] = {}
        #: what :meth:`prefetch` planned, by mode (0 ends_at, 1 stamps_at): (keys given, plan)
        self._planned: dict[int, tuple[np.ndarray, list[tuple]]] = {}
        #: the segments advised MADV_RANDOM (:meth:`_prefetch`: their questions are sparse)
        self._random: set[int] = set()

    def _seg(self, k: int) -> SeekSegment:
        seg = self._open.get(k)
        if seg is None:
            seg = self._open[k] = SeekSegment(self.segments[k])
        return seg

    def damage(self) -> list[tuple[str, int, str]]:
        """:attr:`problems` and every batch a question met that did not decode (file, byte,
        what is wrong): its records were not read, the answer came from the batches after it."""
        out = list(self.problems)
        for k in sorted(self._open):
            seg = self._open[k]
            out += [(seg.files.log, pos, f"a batch asked about does not decode ({why}): the answer skips it")
                    for pos, why in sorted(seg.undecoded.items())]
        return out

    def _index_arrays(self, k: int, kind: FileKind) -> tuple[np.ndarray, np.ndarray] | None:
        """A segment's usable offset index as (offsets, positions), or time index as (timestamps,
        offsets), absolute, in entry order; None when it is absent or fails its check."""
        seg = self._seg(k)
        cache = self._arrays.setdefault(k, {})
        if kind not in cache:
            idx = seg.index(kind, self.notes)
            if idx is None:
                cache[kind] = None
            else:
                dt = np.dtype([("a", ">i4"), ("b", ">i4")]) if kind is FileKind.offset_index else \
                    np.dtype([("a", ">i8"), ("b", ">i4")])
                raw = np.frombuffer(idx.data, dtype=dt, count=idx.entries) if idx.entries else np.zeros(0, dt)
                a, b = raw["a"].astype(np.int64), raw["b"].astype(np.int64)
                if kind is FileKind.offset_index:
                    a += idx.base_offset
                else:
                    b += idx.base_offset
                cache[kind] = (a, b)
        return cache[kind]

    def _starts(self, k: int, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``OffsetIndex.lookup`` for each offset (-1: none): (position, the entry's offset or -1)."""
        oi = self._index_arrays(k, FileKind.offset_index)
        if oi is None:
            self._seg(k).position_for(0, self.notes)  # the note position_for gives
            return np.zeros(len(offsets), np.int64), np.full(len(offsets), -1, np.int64)
        slot = np.searchsorted(oi[0], offsets, "right") - 1
        ok = (slot >= 0) & (offsets >= 0)
        slot = np.maximum(slot, 0)
        pos = np.where(ok, oi[1][slot] if len(oi[1]) else 0, 0)
        self._prefetch(k, np.where(ok, slot, -1), oi[1])
        return pos.astype(np.int64), np.where(ok, oi[0][slot] if len(oi[0]) else -1, -1).astype(np.int64)

    def _prefetch(self, k: int, slots: np.ndarray, positions: np.ndarray) -> None:
        """Ask the kernel, all at once, for the first pages the walks will read; the reads then
        overlap instead of waiting one fault at a time. A question's answer lies from its offset
        index entry to the batch at the entry after it (about two index intervals): where the
        ranges of the questions touch in a run whose index entries nearly all start a question
        (WHOLE_ENTRIES, WHOLE_SHARE), the run is asked for whole; elsewhere only the headers at
        the two entries, and :meth:`_fetch` asks for the batches they lead to."""
        data = self._seg(k).data
        if not isinstance(data, mmap.mmap) or not len(slots):
            return
        size = len(data)
        bounds = np.append(np.append(0, positions), [size, size])  # entry -1 (none): from the start
        used = np.unique(slots)
        lo, nxt = bounds[used + 1], bounds[used + 2]
        hi = np.minimum(nxt + PREFETCH_BATCH, size)
        page = mmap.PAGESIZE
        # the runs of ranges that touch (a page apart at most)
        first = np.r_[0, np.flatnonzero(lo[1:] // page > (np.maximum.accumulate(hi)[:-1] - 1) // page + 1) + 1]
        run_lo, run_hi = lo[first] // page * page, np.maximum.reduceat(hi, first)
        questions = np.diff(np.r_[first, len(used)])
        entries = np.searchsorted(positions, run_hi, "left") - np.searchsorted(positions, run_lo, "left")
        whole = (entries >= WHOLE_ENTRIES) & (questions >= WHOLE_SHARE * entries)
        if not whole.all() and k not in self._random:
            # sparse questions: the walks read what :meth:`_fetch` asks for, so no readahead
            # around a fault (with the kernel's default a fault reads megabytes around it,
            # read_ahead_kb; MADV_SEQUENTIAL more). Not where every run is read whole: there a
            # walk that overtakes the reads would fault page by page (5x the time measured)
            self._random.add(k)
            _advise(data, "MADV_RANDOM")
        for start, end in zip(run_lo[whole].tolist(), run_hi[whole].tolist()):
            _will_need(data, start, end - start)
        heads = ~np.repeat(whole, questions)
        at = np.concatenate([lo[heads], nxt[heads]])
        _will_need_ranges(data, at, at + _HEADER_BYTES)

    def _fetch(self, k: int, mode: int, keys: np.ndarray, starts: np.ndarray) -> None:
        """Ask the kernel for the batches the walk of ``keys`` from ``starts`` will read whole
        (:meth:`_sweep`, mode 0 or 1): each question's headers followed from its start to the
        batch that answers it (the first whose max timestamp reaches T; the first data batch
        whose last offset reaches O), read from pages :meth:`_prefetch` asked for, all
        questions at once; the batches found, asked for together. A header that does not hold
        ends the question's search here (the walk then finds what is wrong)."""
        data = self._seg(k).data
        if not isinstance(data, mmap.mmap) or not len(keys) or k not in self._random:
            return  # (not advised random: every run of its questions was asked for whole)
        size = len(data)
        u8 = np.frombuffer(data, np.uint8)
        try:
            cur, key = starts.astype(np.int64), keys.astype(np.int64)
            found_lo, found_hi = [], []
            for hop in range(FETCH_HOPS):
                ok = (cur >= 0) & (cur <= size - _HEADER_BYTES)
                cur, key = cur[ok], key[ok]
                if not len(cur):
                    break
                at, inv = np.unique(cur, return_inverse=True)
                if hop:  # the first headers were asked for by _prefetch
                    _will_need_ranges(data, at, at + _HEADER_BYTES)
                raw = u8[at[:, None] + _HEADER_COLUMNS]
                cols, c = [], 0
                for _o, n in _HEADER_FIELDS:
                    cols.append(np.ascontiguousarray(raw[:, c:c + n]).view(f">i{n}").ravel().astype(np.int64))
                    c += n
                base, length, magic, attributes, delta, max_ts = (col[inv] for col in cols)
                total = length + 12
                sound = (magic == 2) & (length >= _HEADER_BYTES - 12) & (total <= size - cur)
                if mode == 0:
                    here = max_ts >= key
                else:
                    here = (base + delta >= key) & ((attributes & 0x20) == 0)  # not a control batch
                here &= sound
                found_lo.append(cur[here])
                found_hi.append(cur[here] + total[here])
                on = sound & ~here
                cur, key = cur[on] + total[on], key[on]
            if found_lo:
                _will_need_ranges(data, np.concatenate(found_lo), np.concatenate(found_hi))
        finally:
            del u8  # the mapping stays closable

    def prefetch(self, times: np.ndarray, offsets: np.ndarray) -> None:
        """Plan :meth:`ends_at` of ``times`` and :meth:`stamps_at` of ``offsets`` (the same arrays
        given to them later), asking the kernel now for the pages they will read: the reads then
        go on while the caller does something else."""
        if _speedups is None or not self.segments:
            return
        self._planned = {0: (times, self._end_plan(np.ascontiguousarray(times, np.int64))),
                         1: (offsets, self._stamp_plan(np.ascontiguousarray(offsets, np.int64)))}

    def _plan(self, mode: int, keys: np.ndarray, given: np.ndarray) -> list[tuple]:
        got = self._planned.pop(mode, None)
        if got is not None and got[0] is given:
            return got[1]
        return self._end_plan(keys) if mode == 0 else self._stamp_plan(keys)

    def _end_plan(self, times: np.ndarray) -> list[tuple]:
        """Per segment asked about: (segment, first and last question + 1, keys, starts, the
        offset index entries they came from, the time index entries to hold to the log)."""
        plan = []
        first = np.searchsorted(np.asarray(self._largest(), np.int64), times, "left")  # bisect_left, as end_at
        bounds = np.searchsorted(first, np.arange(len(self.segments) + 1), "left")
        for k in range(len(self.segments)):
            a, b = bounds[k], bounds[k + 1]
            if a == b:
                continue
            keys = times[a:b]
            ti = self._index_arrays(k, FileKind.time_index)
            if ti is not None and self._index_arrays(k, FileKind.offset_index) is not None and len(ti[0]):
                slot = np.searchsorted(ti[0], keys, "right") - 1  # TimeIndex.lookup
                has = slot >= 0
                slot = np.maximum(slot, 0)
                check_off = np.where(has, ti[1][slot], -1).astype(np.int64)
                check_ts = np.where(has, ti[0][slot], 0).astype(np.int64)
            else:
                check_off = np.full(len(keys), -1, np.int64)
                check_ts = np.zeros(len(keys), np.int64)
            starts, soffs = self._starts(k, check_off)
            plan.append((k, a, b, keys, starts, soffs, check_off, check_ts))
        return plan

    def _stamp_plan(self, offsets: np.ndarray) -> list[tuple]:
        """Per segment asked about: (segment, first question, keys (those before the log end),
        starts, the offset index entries they came from)."""
        plan = []
        leo = self.log_end_offset
        floor = np.maximum(np.searchsorted(np.asarray([s.base_offset for s in self.segments], np.int64),
                                           offsets, "right") - 1, 0)  # segment_at
        bounds = np.searchsorted(floor, np.arange(len(self.segments) + 1), "left")
        for k in range(len(self.segments)):
            a, b = bounds[k], bounds[k + 1]
            keys = offsets[a:b]
            keys = keys[keys < leo]
            if not len(keys):
                continue
            starts, soffs = self._starts(k, keys)
            plan.append((k, a, keys, starts, soffs))
        return plan

    def _sweep(self, k: int, mode: int, keys: np.ndarray, starts: np.ndarray, soffs: np.ndarray,
               check_off: np.ndarray, check_ts: np.ndarray) -> np.ndarray:
        """``_speedups.seek_sweep`` over segment ``k``; each batch's CRC is checked once over all
        the walks of the segment (the positions checked kept, ascending)."""
        before = self._checked.get(k, _NONE)
        got, now = _speedups.seek_sweep(self._seg(k).data, mode, keys, starts, soffs, check_off, check_ts, before)
        if now:
            self._checked[k] = np.union1d(before, np.frombuffer(now, np.int64))
        return np.frombuffer(got, np.int64)

    def ends_at(self, times: np.ndarray) -> np.ndarray:
        """:meth:`end_at` of each of ``times`` (ascending, int64), one walk per segment
        (``_speedups.seek_sweep``); what the walk declines is answered by :meth:`end_at`."""
        return self.ends_and_stamps(times, None)[0]

    def stamps_at(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`timestamp_at` of each of ``offsets`` (ascending, int64): (timestamps, known),
        ``known`` False where it is None; one walk per segment, as :meth:`ends_at`."""
        _ends, stamps, known = self.ends_and_stamps(None, offsets)
        return stamps, known

    def ends_and_stamps(self, times: np.ndarray | None, offsets: np.ndarray | None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`ends_at` of ``times`` and :meth:`stamps_at` of ``offsets`` (either None: none),
        segment by segment: a segment read whole is read once for both."""
        given_t, given_o = times, offsets
        times = np.ascontiguousarray(_NONE if times is None else times, np.int64)
        offsets = np.ascontiguousarray(_NONE if offsets is None else offsets, np.int64)
        ends = np.full(len(times), self.log_end_offset, np.int64)
        stamps = np.zeros(len(offsets), np.int64)
        known = np.zeros(len(offsets), np.bool_)
        if not self.segments:
            return ends, stamps, known
        if _speedups is None:
            ends = np.fromiter((self.end_at(int(t)) for t in times), np.int64, len(times))
            for i, o in enumerate(offsets):
                ts = self.timestamp_at(int(o))
                stamps[i], known[i] = (0, False) if ts is None else (ts, True)
            return ends, stamps, known
        walks = [(p[0], 1, p) for p in (self._plan(1, offsets, given_o) if len(offsets) else ())]
        walks += [(p[0], 0, p) for p in (self._plan(0, times, given_t) if len(times) else ())]
        for k, mode, p in walks:  # every batch to be read whole asked for before the first walk waits
            self._fetch(k, mode, *((p[3], p[4]) if mode == 0 else (p[2], p[3])))
        for _k, mode, p in sorted(walks, key=lambda w: (w[0], w[1])):  # by segment
            if mode == 0:
                k, a, b, keys, starts, soffs, check_off, check_ts = p
                got = self._sweep(k, 0, keys, starts, soffs, check_off, check_ts).copy()
                for i in np.flatnonzero(got == ASK_PYTHON):
                    got[i] = self.end_at(int(keys[i]))
                ends[a:b] = got
                continue
            k, a, keys, starts, soffs = p
            none = np.full(len(keys), -1, np.int64)
            got = self._sweep(k, 1, keys, starts, soffs, none, none)
            ok = got != ASK_PYTHON
            stamps[a:a + len(keys)][ok] = got[ok]
            known[a:a + len(keys)][ok] = True
            for i in np.flatnonzero(~ok):
                ts = self.timestamp_at(int(keys[i]))
                if ts is not None:
                    stamps[a + i], known[a + i] = ts, True
        return ends, stamps, known

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
        for k in range(segment_at(self.segments, offset), len(self.segments)):
            seg = self._seg(k)
            start = seg.position_for(offset, self.notes) if k == segment_at(self.segments, offset) else 0
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
    k = segment_at(log.segments, offset)
    seg = log._seg(k)
    for b in batch_headers(seg.data, source=seg.files.log, start=seg.position_for(offset, log.notes),
                           verify_crc=False):
        if isinstance(b, RecordBatch) and b.last_offset >= offset:
            return b if b.base_offset <= offset else None
    return None


def _will_need(data: Any, start: int, length: int) -> None:
    """``madvise(MADV_WILLNEED)`` on a mapping's range where the platform has it (not Windows);
    elsewhere the pages come by faults, as they would without the advice."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_WILLNEED") and length > 0:
        data.madvise(mmap.MADV_WILLNEED, start, length)


def _will_need_ranges(data: Any, lo: np.ndarray, hi: np.ndarray) -> None:
    """:func:`_will_need` of the byte ranges [lo, hi), as whole pages, the ranges whose pages
    touch asked for in one request."""
    if not isinstance(data, mmap.mmap) or not hasattr(mmap, "MADV_WILLNEED") or not len(lo):
        return
    page = mmap.PAGESIZE
    order = np.argsort(lo, kind="stable")
    first_page, end_page = lo[order] // page, (np.minimum(hi[order], len(data)) + page - 1) // page
    reach = np.maximum.accumulate(end_page)
    run = np.r_[0, np.flatnonzero(first_page[1:] > reach[:-1]) + 1]
    for a, z in zip(first_page[run].tolist(), np.maximum.reduceat(end_page, run).tolist()):
        if z > a:
            data.madvise(mmap.MADV_WILLNEED, a * page, (z - a) * page)


def _advise(data: Any, name: str) -> None:
    """``madvise`` of a whole mapping with the advice ``mmap.<name>`` where the platform has it."""
    advice = getattr(mmap, name, None)
    if isinstance(data, mmap.mmap) and advice is not None:
        try:
            data.madvise(advice)
        except OSError:  # pragma: no cover - advice is a hint
            pass
