"""A compacted ``__consumer_offsets`` partition: how far it is cleaned, and what it can still tell.

``__consumer_offsets`` has ``cleanup.policy=compact``: the broker's log cleaner (Kafka 4.4's
``storage`` module: ``Cleaner.doClean``, ``cleanInto``, ``MemoryRecords.filterTo``) rewrites the
segments below the first uncleanable offset (the active segment's base, or later with a
compaction lag) keeping the latest record of each key. A tombstone stays until a day
(``delete.retention.ms``) after the round that first kept it (its batch's delete horizon); the
data of aborted transactions goes, and their markers once nothing of them is left; a batch
emptied of its records stays as a header when it is the last one of an active producer. The
first offset it did not clean is written to the log directory's ``cleaner-offset-checkpoint``
(``topic partition offset``).

Below that offset the log is exact for the latest value of each key (the state at the end, the
final groups and offsets, are those of the uncleaned log), but history is gone: superseded
records (earlier generations, members that left, older commits) and the state at an instant
inside the cleaned range cannot be rebuilt. So each partition gets its cleaned range, from:

- ``checkpoint``: the ``cleaner-offset-checkpoint`` of the broker's log directory (one level above
  the ``__consumer_offsets-N`` directories), when it names the partition with an offset inside
  the log read;
- ``log``: without it (segments copied alone), what the cleaner leaves in the log: offsets with
  no record between records, or before a segment's first record (the file name is its base
  offset), batches with fewer records than offsets (``overrideLastOffset`` keeps a cleaned
  batch's last offset), empty batches, and the delete-horizon attribute bit. The cleaned range
  reaches at least the last such sign; an uncleaned log has none (every offset of a
  ``__consumer_offsets`` batch holds a record).

``compacted_below_offset`` is the first offset known to be uncleaned (null: nothing shows
compaction), ``compacted_below_time`` the timestamp of the first record at or above it: an
instant before it is inside the cleaned range.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgtool.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from kgtool.offsets.entries import PROBLEM

CHECKPOINT = "checkpoint"
LOG = "log"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"  # LogCleanerManager.OFFSET_CHECKPOINT_FILE
MAX_CHECKPOINT_BYTES = 1 << 20  # a line per compacted partition of the log directory


@dataclass(frozen=True)
class CleanerCheckpoint:
    """One partition's entry of a ``cleaner-offset-checkpoint``: the first dirty offset."""

    offset: int
    path: str
    line: int


def read_cleaner_checkpoint(path: str, data: bytes) -> tuple[dict[int, CleanerCheckpoint], list[str]]:
    """The ``__consumer_offsets`` entries of a ``cleaner-offset-checkpoint`` (``OffsetCheckpointFile``:
    a version line 0, a count line, ``topic partition offset`` lines), by partition, and one
    warning per problem (naming the file and line): a file that does not parse gives none."""
    from kgtool.storage.checkpoints import CheckpointHeader, scan_checkpoint
    from kgtool.storage.files import FileKind
    from kgtool.storage.indexes import Problems

    problems = Problems()
    entries = list(scan_checkpoint(path, data, FileKind.offset_checkpoint, CheckpointHeader(), problems))
    warnings = [f"{p.message}: the log's own signs of cleaning are used" for p in problems.items]
    if warnings and (not entries or any("version" in w or "count" in w for w in warnings)):
        return {}, warnings
    lines: dict[tuple[str, int, int], int] = {}
    for i, line in enumerate(data.decode("utf-8", "replace").splitlines()):
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit() and parts[2].lstrip("-").isdigit():
            lines.setdefault((parts[0], int(parts[1]), int(parts[2])), i + 1)
    out: dict[int, CleanerCheckpoint] = {}
    for _n, (topic, partition, offset) in entries:
        if topic != CONSUMER_OFFSETS_TOPIC:
            continue
        line = lines.get((topic, partition, offset), 0)
        if offset < 0:
            warnings.append(f"{path}: line {line}: offset {offset} of {topic}-{partition} is negative: the "
                            "log's own signs of cleaning are used")
            continue
        out[partition] = CleanerCheckpoint(offset, path, line)
    return out, warnings


def base_offset_of(source: str) -> int | None:
    """A segment's base offset from its name (``LogFileUtils``: 20 digits, ``.log``)."""
    name = os.path.basename(source)
    stem, dot, ext = name.partition(".")
    return int(stem) if dot and ext == "log" and len(stem) == 20 and stem.isdigit() else None


class _Below:
    """The timestamp of the first record at or above an offset, and the largest timestamp of
    the records before it (what ``--until`` needs: the cut, at the first record stamped at or
    after the instant, is past every record below the offset exactly when the instant is later
    than all their timestamps), found as the log is read."""

    __slots__ = ("target", "time", "max_before")

    def __init__(self, target: int | None = None) -> None:
        self.target = target
        self.time: int | None = None  # the first record at or above target: its timestamp
        self.max_before: int | None = None  # the records below target: their largest timestamp

    def look(self, offsets: np.ndarray, timestamps: np.ndarray, running: int | None) -> None:
        """A chunk's records (``running``: the largest timestamp before them)."""
        if self.target is None or self.time is not None:
            return
        i = int(np.searchsorted(offsets, self.target))
        if i < len(offsets):
            self.time = int(timestamps[i])
            before = int(timestamps[:i].max()) if i else None
            self.max_before = before if running is None else running if before is None else max(before, running)


def _first_repeat(codes: np.ndarray, seen: np.ndarray) -> int | None:
    """The index of the first code seen before (``seen``) or earlier in ``codes``, or None: a
    stable sort puts each later occurrence right after its earlier one."""
    again = np.flatnonzero(seen[codes])
    order = np.argsort(codes, kind="stable")
    ranked = codes[order]
    later = order[1:][ranked[1:] == ranked[:-1]]
    first = min(int(again[0]) if len(again) else len(codes), int(later.min()) if len(later) else len(codes))
    return None if first == len(codes) else first


class CompactionWatch:
    """One partition's signs of cleaning, read chunk by chunk in log order (every record read,
    also after ``--until``'s cut), and its checkpoint entry.

    Besides the signs (a lower bound of the cleaned range), the log gives an upper bound: below
    the cleaned range no key has two records (the cleaner keeps the latest of each; control
    records aside), so the first record whose key was seen before is at or above it. An instant
    is exact when the cut is past that bound (with a checkpoint: past its offset)."""

    def __init__(self, checkpoint: CleanerCheckpoint | None = None) -> None:
        self.checkpoint = checkpoint
        self.sign_end = -1  # the cleaned range reaches at least below this offset (-1: no sign)
        self.missing = 0  # offsets with no record between records, or before a segment's first
        self.empty_batches = 0
        self.horizon_batches = 0
        self.first_base: int | None = None  # the first segment's base offset (its name)
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.max_timestamp: int | None = None  # of every record read
        self.repeat: int | None = None  # the first record whose key came before (log order)
        self._repeat = _Below()
        self._seen_codes = np.zeros(0, np.bool_)  # commit keys (KeyTable codes) seen
        self._seen_keys: set[tuple[str, str]] = set()  # other records' keys seen
        self._source: str | None = None
        self._at_sign = _Below()
        self._at_checkpoint = _Below(None if checkpoint is None else checkpoint.offset)
        self.warnings: list[str] = []
        self._after_problem = False  # the last chunk ended with an undecodable stretch

    def add(self, chunk: Any) -> None:
        """A decoded chunk (:class:`kgtool.offsets.columns.CommitChunk`): its commit rows and
        rare entries in log order, and its batches' signs."""
        n = chunk.n
        offs = np.asarray(chunk.record_offset[:n], np.int64)
        ts = np.asarray(chunk.timestamp[:n], np.int64)
        rare = [(i, e) for i, e in chunk.rare if e.kind != PROBLEM]
        # a stretch that did not decode (a problem) hides what it held: the offsets missing
        # around it are no sign of cleaning (excused: merged positions of the records after one)
        excused: set[int] = {0} if self._after_problem else set()
        kept = 0
        for i, e in chunk.rare:
            if e.kind == PROBLEM:
                excused.add(i + kept)
            else:
                kept += 1
        if rare:
            at = [i for i, _ in rare]
            offs = np.insert(offs, at, [e.offset for _, e in rare])
            ts = np.insert(ts, at, [e.timestamp for _, e in rare])
        signs = getattr(chunk, "signs", None)
        if signs is not None:
            self.empty_batches += signs.empty_batches
            self.horizon_batches += signs.horizon_batches
            if signs.end > self.sign_end:
                self.sign_end = signs.end
        if chunk.source != self._source:
            self._source = chunk.source
            base = base_offset_of(chunk.source)
            if self.first_base is None and base is not None and self.last_offset is None:
                self.first_base = base
                if len(offs) and offs[0] > base and 0 not in excused:  # the segment's first records are gone
                    self.missing += int(offs[0]) - base
                    self.sign_end = max(self.sign_end, int(offs[0]))
        if len(offs):
            prev = self.last_offset
            steps = np.diff(offs) if prev is None else np.diff(offs, prepend=prev)
            gaps = np.flatnonzero(steps > 1)
            if len(gaps) and excused:
                shift = 0 if prev is not None else 1
                gaps = np.array([g for g in gaps.tolist() if g + shift not in excused], np.int64)
            if len(gaps):
                self.missing += int((steps[gaps] - 1).sum())
                k = int(gaps[-1]) + (0 if prev is not None else 1)
                self.sign_end = max(self.sign_end, int(offs[k]))
            if self.first_offset is None:
                self.first_offset = int(offs[0])
            self.last_offset = int(offs[-1])
        self._after_problem = len(offs) in excused
        if self.repeat is None:
            self._find_repeat(chunk, n, rare)
        running = self.max_timestamp
        if self.sign_end >= 0 and self._at_sign.target != self.sign_end:
            self._at_sign = _Below(self.sign_end)
        for b in (self._at_sign, self._at_checkpoint, self._repeat):
            b.look(offs, ts, running)
        if len(ts):
            m = int(ts.max())
            self.max_timestamp = m if running is None else max(m, running)

    def _find_repeat(self, chunk: Any, n: int, rare: list) -> None:
        """The first record of the chunk whose key came before (commit keys by code, other
        records by kind and key; control records have no key of their own)."""
        found: list[int] = []
        if n:
            codes = np.asarray(chunk.key[:n], np.int64)
            size = int(codes.max()) + 1
            if len(self._seen_codes) < size:
                self._seen_codes = np.concatenate([self._seen_codes, np.zeros(size - len(self._seen_codes), np.bool_)])
            # an uncleaned log repeats a key within its first rows: look there first
            for m in (min(n, 1024), n):
                hit = _first_repeat(codes[:m], self._seen_codes)
                if hit is not None or m == n:
                    break
            if hit is not None:
                found.append(int(chunk.record_offset[hit]))
            self._seen_codes[codes] = True
        for _i, e in rare:
            if e.is_control or e.key is None:
                continue
            key = (str(e.kind), repr(sorted(e.key.items())))
            if key in self._seen_keys:
                found.append(e.offset)
                break
            self._seen_keys.add(key)
        if found:
            self.repeat = min(found)
            self._repeat = _Below(self.repeat)
            self._seen_codes = np.zeros(0, np.bool_)
            self._seen_keys = set()

    # ---- the answer -------------------------------------------------------------------------
    def result(self, whole: bool = True) -> tuple[int | None, int | None, str | None]:
        """(compacted_below_offset, compacted_below_time, compaction_source). ``whole``: the
        partition was read to its end (a checkpoint past the last offset read is then outside
        the log)."""
        ck = self._usable_checkpoint(whole)
        if ck is not None:
            start = self.first_base if self.first_base is not None else self.first_offset
            if start is not None and ck.offset <= start:
                return None, None, None  # nothing below the checkpoint: not cleaned yet
            return ck.offset, self._at_checkpoint.time, CHECKPOINT
        if self.sign_end < 0:
            return None, None, None
        return self.sign_end, self._at_sign.time, LOG

    def exact_from(self, whole: bool = True) -> int | None:
        """The earliest ``--until`` instant whose state the log still holds whole (None: every
        instant; the end of the log is always exact): later than every record below the
        checkpoint, or without one, below the first record whose key came before."""
        below, _time, source = self.result(whole)
        if below is None:
            return None
        bounds = [self._at_checkpoint] if source == CHECKPOINT else [self._repeat]
        if source == CHECKPOINT and self.sign_end > below:  # the log shows more: its bound too
            bounds.append(self._repeat)
        out = None
        for bound in bounds:
            if bound.time is None:  # not reached: the whole log is below it (its end is exact)
                at = None if self.max_timestamp is None else self.max_timestamp + 1
            else:  # at or after the first record at the bound, and later than every record below it
                at = bound.time if bound.max_before is None else max(bound.time, bound.max_before + 1)
            if at is not None and (out is None or at > out):
                out = at
        return out

    def _usable_checkpoint(self, whole: bool) -> CleanerCheckpoint | None:
        ck = self.checkpoint
        if ck is None or self.last_offset is None:
            return None
        start = self.first_base if self.first_base is not None else self.first_offset
        end = self.last_offset + 1
        where = f"{ck.path}: line {ck.line}"
        if whole and ck.offset > end:
            self._warn(f"{where}: offset {ck.offset} of {CONSUMER_OFFSETS_TOPIC} is past the end of the log read "
                       f"({end}): the log's own signs of cleaning are used")
            return None
        if start is not None and ck.offset < start:
            self._warn(f"{where}: offset {ck.offset} of {CONSUMER_OFFSETS_TOPIC} is below the log's start "
                       f"({start}): the log's own signs of cleaning are used")
            return None
        if self.sign_end > ck.offset:  # Kafka's cleaner leaves none there: a file older than the segments?
            self._warn(f"{where}: the log shows cleaning up to offset {self.sign_end}, past the checkpoint's "
                       f"{ck.offset} (is the file older than the segments?): the checkpoint is used, and --until "
                       "is exact only past both")
        return ck

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def inexact_at(self, instant: int | None, whole: bool = True) -> bool:
        """Whether the state at ``instant`` (None: the end of the log) is not whole in the log:
        records it had are gone (see :meth:`exact_from`)."""
        if instant is None:
            return False
        earliest = self.exact_from(whole)
        if self.result(whole)[0] is None:
            return False
        return earliest is not None and instant < earliest
