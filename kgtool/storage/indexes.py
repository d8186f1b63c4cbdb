"""Offset, time and transaction indexes: reader, end-of-entries rule, lookup, writer.

Layouts (Kafka 4.x, ``storage/.../internals/log/``)::

    OffsetIndex (B.index), 8-byte entries (OffsetIndex.ENTRY_SIZE):
      RelativeOffset => Int32    offset - B
      Position => Int32          byte position of a batch in B.log
    TimeIndex (B.timeindex), 12-byte entries (TimeIndex.ENTRY_SIZE):
      Timestamp => Int64         the largest batch timestamp so far in the segment
      RelativeOffset => Int32    the offset that timestamp was seen at, - B
    TransactionIndex (B.txnindex), 34-byte AbortedTxn entries (AbortedTxn.TOTAL_SIZE):
      Version => Int16 (0)  ProducerId => Int64  FirstOffset => Int64  LastOffset => Int64
      LastStableOffset => Int64

``LogSegment.append`` (KAFKA-806) adds, per batch, an offset index entry (the batch's last
offset, its position) once more than ``index.interval.bytes`` (4096) were appended since the
previous one, and a time index entry (the largest batch timestamp so far, the last offset of the
batch that holds it) when that timestamp grew (``TimeIndex.maybeAppend``).

The active segment's offset and time indexes are preallocated (``AbstractIndex``: the file is
``segment.index.bytes``, 10 MiB, rounded down to whole entries) and trimmed only when the
segment rolls or the broker stops; nothing records how many entries are written. A copy taken
from a running broker therefore ends in zero-filled slots. The end of the entries is found as
``DumpLogSegments`` does: the first entry after the first whose offset equals the base offset
(relative offset 0; for the time index, a zero timestamp too) starts the unwritten tail, which
must be all zeros. The transaction index is appended to, never preallocated.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from kgtool.codec.model import ScanProblem
from kgtool.storage.files import FileKind, file_problem

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
ABORTED_TXN = struct.Struct(">hqqqq")
ABORTED_TXN_VERSION = 0  # AbortedTxn.CURRENT_VERSION
#: Problems kept per file (the rest are counted).
MAX_FILE_PROBLEMS = 1000
_ZERO_STEP = 1 << 20


def _all_zero(data, start: int, end: int) -> int:
    """-1 when ``data[start:end]`` is all zeros, else the index of the first non-zero byte."""
    mv = memoryview(data)
    i = start
    while i < end:
        j = min(end, i + _ZERO_STEP)
        chunk = mv[i:j].tobytes()
        if chunk.count(0) != j - i:
            return i + len(chunk) - len(chunk.lstrip(b"\0"))
        i = j
    return -1


#: The kind of an offset index entry that does not follow the previous one (offset or position
#: not increasing): the entries still each say where a batch is, so --verify compares them
#: with the log one by one, as kafka-dump-log.sh --verify-index-only does, to name the wrong one.
OUT_OF_ORDER = "out_of_order"


@dataclass
class Problems:
    """Problems of one file: the first :data:`MAX_FILE_PROBLEMS` kept, all counted."""

    items: list[ScanProblem] = field(default_factory=list)
    count: int = 0

    def add(self, p: ScanProblem) -> None:
        self.count += 1
        if len(self.items) < MAX_FILE_PROBLEMS:
            self.items.append(p)


class SparseIndex:
    """An offset (``.index``) or time (``.timeindex``) index over a mapped file.

    Args:
        path: the file (for messages). base_offset: the segment's base offset.
        data: the file's bytes (an mmap). kind: :attr:`FileKind.offset_index` or ``time_index``.
    """

    def __init__(self, path: str, base_offset: int, data, kind: FileKind) -> None:
        self.path = path
        self.base_offset = base_offset
        self.data = data
        self.kind = kind
        self.entry = OFFSET_ENTRY if kind is FileKind.offset_index else TIME_ENTRY
        self.size = self.entry.size
        #: Whole entries in the file (AbstractIndex: the length rounded down to entries).
        self.slots = len(data) // self.size
        #: Bytes after the last whole entry: a file cut mid-entry.
        self.trailing = len(data) % self.size
        self._rel_at = 0 if kind is FileKind.offset_index else 8
        self._entries: int | None = None

    # --- one entry -------------------------------------------------------------------------

    def relative(self, n: int) -> int:
        return struct.unpack_from(">i", self.data, n * self.size + self._rel_at)[0]

    def raw(self, n: int) -> tuple[int, int]:
        """Entry ``n`` as stored: (relative offset, position) or (timestamp, relative offset)."""
        return self.entry.unpack_from(self.data, n * self.size)

    def offset_position(self, n: int) -> tuple[int, int]:
        """Offset index entry ``n``: (offset, position) (``OffsetIndex.parseEntry``)."""
        rel, pos = self.raw(n)
        return self.base_offset + rel, pos

    def timestamp_offset(self, n: int) -> tuple[int, int]:
        """Time index entry ``n``: (timestamp, offset) (``TimeIndex.parseEntry``)."""
        ts, rel = self.raw(n)
        return ts, self.base_offset + rel

    def key(self, n: int) -> int:
        """What lookups search: the offset (offset index) or the timestamp (time index)."""
        if self.kind is FileKind.offset_index:
            return self.base_offset + self.relative(n)
        return self.raw(n)[0]

    def _is_end_mark(self, n: int) -> bool:
        # DumpLogSegments: "since it is a sparse file ... there may be many zero entries, stop
        # if we see one": an entry after the first whose offset equals the base offset.
        if n == 0:
            return False
        if self.kind is FileKind.offset_index:
            return self.relative(n) == 0
        ts, rel = self.raw(n)
        return rel == 0 and ts == 0

    # --- the end of the entries -----------------------------------------------------------

    @property
    def entries(self) -> int:
        """The entries written, by the end-of-entries rule, found in O(log n) slots: for a file
        Kafka wrote, "slot n is the end mark" is false up to the end and true after it."""
        if self._entries is None:
            lo, hi = 1, self.slots
            while lo < hi:
                mid = (lo + hi) // 2
                if self._is_end_mark(mid):
                    hi = mid
                else:
                    lo = mid + 1
            n = min(lo, self.slots)
            if n == 1 and self.slots >= 1 and not any(self.raw(0)) and self._all_zero_from(0):
                n = 0  # nothing but zeros: no entry at all
            self._entries = n
        return self._entries

    def _all_zero_from(self, n: int) -> bool:
        return _all_zero(self.data, n * self.size, self.slots * self.size) < 0

    # --- lookups (AbstractIndex.largestLowerBoundSlotFor) ----------------------------------

    def largest_lower_bound(self, target: int) -> int:
        """The last slot whose key (offset or timestamp) is at most ``target``, or -1."""
        lo, hi = 0, self.entries - 1
        if hi < 0 or self.key(0) > target:
            return -1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.key(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # --- the whole file ---------------------------------------------------------------------

    def scan(self, problems: Problems, log_size: int | None = None) -> Iterator[tuple[int, int, int]]:
        """Every entry up to the end rule, as ``(n, a, b)``: (n, offset, position) for an
        offset index, (n, timestamp, offset) for a time index; structural damage goes to
        ``problems`` (offsets and positions that do not increase, negative relative offsets,
        positions past ``log_size``, non-zero bytes after the end, a partial entry).

        Sets :attr:`entries` to what the sequential rule finds (Kafka's)."""
        src, size, base = self.path, self.size, self.base_offset
        offsets = self.kind is FileKind.offset_index
        prev_a = prev_b = None
        n = 0
        end = self.slots
        if self.slots and not any(self.raw(0)) and self._all_zero_from(0):
            end = 0  # nothing but zeros: no entry was ever written
        with memoryview(self.data) as mv:
            for n, (x, y) in enumerate(self.entry.iter_unpack(mv[:end * size])):
                if n and ((offsets and x == 0) or (not offsets and x == 0 and y == 0)):
                    end = n
                    break
                at = n * size
                if offsets:
                    rel, a, b = x, base + x, y
                    if b < 0 or (log_size is not None and b >= log_size):
                        where = "is negative" if b < 0 else f"is past the end of the log ({log_size} bytes)"
                        problems.add(file_problem(src, at + 4, f"entry {n}: position {b} {where}",
                                                  context="position"))
                    elif prev_b is not None and b <= prev_b:
                        problems.add(file_problem(
                            src, at + 4, f"entry {n}: position {b} does not follow the previous entry's {prev_b} "
                            "(positions increase with offsets)", context="position", kind=OUT_OF_ORDER))
                else:
                    rel, a, b = y, x, base + y
                    if prev_a is not None and a <= prev_a:
                        problems.add(file_problem(
                            src, at, f"entry {n}: timestamp {a} does not follow the previous entry's {prev_a} "
                            "(TimeIndex.maybeAppend: timestamps strictly increase)", context="timestamp"))
                if rel < 0:
                    problems.add(file_problem(src, at + self._rel_at, f"entry {n}: relative offset {rel} is negative",
                                              context="relative_offset"))
                elif offsets and prev_a is not None and a <= prev_a:
                    problems.add(file_problem(
                        src, at, f"entry {n}: offset {a} does not follow the previous entry's {prev_a} "
                        "(OffsetIndex.append: offsets strictly increase)", context="relative_offset",
                        kind=OUT_OF_ORDER))
                elif not offsets and prev_b is not None and b < prev_b:
                    problems.add(file_problem(
                        src, at + 8, f"entry {n}: offset {b} is below the previous entry's {prev_b} "
                        "(TimeIndex.maybeAppend)", context="relative_offset"))
                prev_a, prev_b = a, b
                yield n, a, b
        if end < self.slots:
            bad = _all_zero(self.data, end * size, self.slots * size)
            if bad >= 0:
                problems.add(file_problem(
                    src, bad, f"entry {end} is the end mark (offset {base}, the base offset) but the bytes after "
                    "it are not all zero: not an untrimmed index's preallocated tail", context="tail"))
        self._entries = end
        if self.trailing:
            at = self.slots * size
            problems.add(file_problem(
                src, at, f"{self.trailing} bytes after the last whole {size}-byte entry: the file ends mid-entry "
                f"(AbstractIndex.sanityCheck: the length {len(self.data)} is not a multiple of {size})",
                context=f"entry {self.slots}", length=self.trailing))

    @property
    def preallocated(self) -> int:
        """Zero-filled slots after the entries (an untrimmed, active segment's index)."""
        return self.slots - self.entries


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One transaction index entry (``AbortedTxn``)."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def scan_txn_index(path: str, data, base_offset: int, problems: Problems) -> Iterator[tuple[int, AbortedTxn]]:
    """The entries of a ``.txnindex``, ``(n, entry)``; damage goes to ``problems``: an unknown
    version (``TransactionIndex``: "Unexpected aborted transaction version"), last offsets that
    do not increase (``TransactionIndex.append``), a first offset after the last, a last
    offset below the segment's base offset (``TransactionIndex.sanityCheck``), a partial entry."""
    size = ABORTED_TXN.size
    whole = len(data) // size
    prev = None
    with memoryview(data) as mv:
        for n, t in enumerate(ABORTED_TXN.iter_unpack(mv[:whole * size])):
            e = AbortedTxn(*t)
            at = n * size
            if e.version != ABORTED_TXN_VERSION:
                problems.add(file_problem(path, at, f"entry {n}: version {e.version} is not "
                                          f"{ABORTED_TXN_VERSION} (AbortedTxn.CURRENT_VERSION)", context="version"))
            if e.first_offset > e.last_offset:
                problems.add(file_problem(path, at + 10, f"entry {n}: first offset {e.first_offset} is after the "
                                          f"last offset {e.last_offset}", context="first_offset"))
            if e.last_offset < base_offset:
                problems.add(file_problem(path, at + 18, f"entry {n}: last offset {e.last_offset} is below the "
                                          f"segment's base offset {base_offset} (TransactionIndex.sanityCheck)",
                                          context="last_offset"))
            elif prev is not None and e.last_offset <= prev:
                problems.add(file_problem(path, at + 18, f"entry {n}: last offset {e.last_offset} does not follow "
                                          f"the previous entry's {prev} (TransactionIndex.append)",
                                          context="last_offset"))
            prev = e.last_offset
            yield n, e
    rest = len(data) - whole * size
    if rest:
        problems.add(file_problem(path, whole * size, f"{rest} bytes after the last whole {size}-byte entry: the "
                                  "file ends mid-entry", context=f"entry {whole}", length=rest))


# --- writers (tests, benchmarks, fixtures) -----------------------------------------------------

def encode_offset_index(entries, base_offset: int, preallocate: int = 0) -> bytes:
    """An ``.index`` of ``(offset, position)`` entries, zero-padded to ``preallocate`` bytes."""
    out = b"".join(OFFSET_ENTRY.pack(o - base_offset, p) for o, p in entries)
    return out + b"\0" * max(0, preallocate - len(out))


def encode_time_index(entries, base_offset: int, preallocate: int = 0) -> bytes:
    """A ``.timeindex`` of ``(timestamp, offset)`` entries, zero-padded to ``preallocate`` bytes."""
    out = b"".join(TIME_ENTRY.pack(t, o - base_offset) for t, o in entries)
    return out + b"\0" * max(0, preallocate - len(out))


def encode_aborted_txn(producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int,
                       version: int = ABORTED_TXN_VERSION) -> bytes:
    """One ``AbortedTxn`` entry."""
    return ABORTED_TXN.pack(version, producer_id, first_offset, last_offset, last_stable_offset)
