"""Scanning a log segment: the chain of batches, and everything that breaks it.

A segment (``NNNNNNNNNNNNNNNNNNNN.log``) is a concatenation of entries that all start with
``Offset => Int64, Length => Int32`` (``Records.LOG_OVERHEAD``) and carry the magic byte at
offset 16 (``FileLogInputStream.nextBatch``), whatever their format. The scanner follows
that chain and separates, as ``DumpLogSegments`` does, three outcomes:

- a partial tail (the data ends inside an entry: an active segment being written, or a
  copy taken mid-write): :class:`ScanProblem` kind ``truncated``; zero bytes where the next
  entry should start (preallocated, never-written space): kind ``padding``;
- a batch whose length is trustworthy but whose content is bad (CRC mismatch, malformed
  records, a compressed payload that does not decompress, an unknown magic):
  ``crc_mismatch`` / ``malformed`` / ``unsupported``, skipped, and scanning continues after it;
- a header that cannot be trusted (length below the minimum, or beyond the data while more
  than a tail): ``corrupt``; the scanner resynchronises on the next position that holds a
  plausible v2 batch header with a valid CRC, and reports the bytes in between.

A partial entry at the end is a truncated tail only when its header is one Kafka could have
written, checked in the order of ``ByteBufferLogInputStream.nextBatchSize`` /
``FileLogInputStream.nextBatch``: a length of at least ``RECORD_OVERHEAD_V0`` and at most the
largest message size (``max_message_size``, DumpLogSegments' ``--max-message-size``: "Record
size %d exceeds the largest allowable message size"), magic 0, 1 or 2 ("Invalid magic found
in record"), and the other header fields present sane (:func:`implausible_header`). Anything
else running past the end (a file of random bytes claiming a 900 MB batch) is ``corrupt``.

Resynchronisation is linear in the bytes scanned, whatever they hold (see :func:`_resync`).

Every byte of the range is accounted for: decoded batches plus problems cover it exactly.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kgtool.codec import batch as _batch
from kgtool.codec import compression as _comp
from kgtool.codec.batch import (  # noqa: I001
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    CrcMismatch,
    decode_batch_v2,
)
from kgtool.codec.legacy import RECORD_OVERHEAD_V0, decode_legacy_entry
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.primitives import crc32c, crc32c_extender, crc32c_shift, crc32c_shift_many
from kgtool.errors import DecodeError, EnvironmentProblem
from kgtool.inputs import input_error

if TYPE_CHECKING:
    import numpy as np  # imported when a resynchronisation needs it (start-up time)

#: Offset + Length + PartitionLeaderEpoch/CRC + Magic: ``Records.HEADER_SIZE_UP_TO_MAGIC``.
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1

#: The largest entry length (the ``Length`` field) believed without a CRC: a partial entry at
#: the end claiming more is damage, not a tail, and resynchronisation lands only on batches up
#: to it. DumpLogSegments' ``--max-message-size`` default (5 MiB); the broker's own limit,
#: ``message.max.bytes``, is 1 MiB + 12 by default (raise this with it).
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024

_OFFSET_SIZE = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_RESYNC_WINDOW = 64 * 1024 * 1024


def _problem(kind: str, source: str | None, position: int, length: int, reason: str,
             context: str | None = None, base_offset: int | None = None, at: int | None = None) -> ScanProblem:
    where = f"{source}: " if source else ""
    ctx = f" ({context})" if context else ""
    return ScanProblem(
        kind=kind, position=position, length=length, reason=reason,
        message=f"{where}byte {position if at is None else at}{ctx}: {reason}", source=source, context=context,
        base_offset=base_offset, at=at,
    )


def skipped_batch(kind: str, exc: DecodeError, source: str | None, position: int, size: int,
                  base_offset: int | None = None) -> ScanProblem:
    """A batch at ``position`` (``size`` bytes, its length trusted) skipped for ``exc``: the
    problem covers the batch and names the byte of the field at fault (``exc.position``; the
    batch's first byte when the error has none): ``seg.log: byte 96 (batch@79.crc): stored crc
    ...; batch@79 (70 bytes) skipped``. Every reader of a skipped batch reports it this way."""
    p = _problem(kind, source, position, size, exc.reason, context=exc.context, base_offset=base_offset,
                 at=exc.position)
    p.message += f"; batch@{position} ({size} bytes) skipped"
    return p


def _min_size(magic: int) -> int:
    """Smallest valid entry for a magic (header included)."""
    if magic >= 2:
        return RECORD_BATCH_OVERHEAD
    return LOG_OVERHEAD + RECORD_OVERHEAD_V0 + (8 if magic == 1 else 0)


def _is_zero(data, i: int, j: int) -> bool:
    mv = memoryview(data)
    step = 1 << 20
    while i < j:
        k = min(j, i + step)
        chunk = mv[i:k]
        if chunk.tobytes().count(0) != k - i:
            return False
        i = k
    return True


_RELEASE_STEP = 32 * 1024 * 1024
_PAGE = mmap.PAGESIZE


class PageReleaser:
    """Keeps the resident size of a memory-mapped segment bounded: pages behind the scan are
    dropped from this process (``madvise(MADV_DONTNEED)``; they stay in the page cache), so a
    1 GiB segment is read with a few tens of MB resident instead of the whole file."""

    __slots__ = ("data", "done")

    def __init__(self, data, start: int = 0) -> None:
        ok = isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED")
        self.data = data if ok else None
        self.done = start - start % _PAGE

    def advance(self, index: int) -> None:
        if self.data is None or index - self.done < _RELEASE_STEP:
            return
        upto = index - index % _PAGE
        self.release(self.done, upto)
        self.done = upto

    def release(self, start: int, end: int) -> None:
        """Drop the whole pages of ``[start, end)`` now (whatever was released before: a range
        read again, as the chunks of a huge batch iterated twice, is dropped again)."""
        lo = start - start % _PAGE
        hi = end - end % _PAGE
        if self.data is None or hi <= lo:
            return
        try:
            self.data.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (OSError, ValueError):  # pragma: no cover - not supported here: keep going
            self.data = None


def implausible_header(data, i: int, available: int, max_message_size: int) -> tuple[str, str] | None:
    """Why the entry header at index ``i`` (``available`` bytes of it readable, at least
    ``LOG_OVERHEAD``) is not one Kafka writes, as ``(field, reason)``; None when it is.

    Checked in Kafka's order (``ByteBufferLogInputStream.nextBatchSize``): the length against
    the largest message size, then the magic ("Invalid magic found in record"); then the
    fields Kafka never writes out of range: a negative offset, a v2 partition leader epoch
    below -1 (``NO_PARTITION_LEADER_EPOCH``), attributes with an unknown codec
    (``CompressionType.forId``; zstd only with magic 2) or unused bits set, a negative v2
    record count. The length's lower bounds are the caller's (they come first).
    """
    base_offset, length = _OFFSET_SIZE.unpack_from(data, i)
    if length > max_message_size:
        return "batch_length", f"length {length} exceeds the largest message size {max_message_size}"
    magic = data[i + MAGIC_OFFSET] if available > MAGIC_OFFSET else None
    if magic is not None and magic > 2:
        return "magic", f"magic {magic} is not 0, 1 or 2"
    if base_offset < 0:
        return "base_offset", f"offset {base_offset} is negative"
    if magic is None:
        return None
    if magic == 2:
        (epoch,) = _INT32.unpack_from(data, i + PARTITION_LEADER_EPOCH_OFFSET)
        if epoch < -1:
            return "partition_leader_epoch", f"partition leader epoch {epoch} is below -1"
        if available >= ATTRIBUTES_OFFSET + 2:
            (attributes,) = _INT16.unpack_from(data, i + ATTRIBUTES_OFFSET)
            if attributes & 0xFF80:
                return "attributes", f"attributes 0x{attributes & 0xFFFF:04x} set unused bits (7-15)"
            if attributes & 0x07 > 4:
                return "attributes", f"compression codec {attributes & 0x07} is unknown"
        if available >= RECORDS_COUNT_OFFSET + 4:
            (count,) = _INT32.unpack_from(data, i + RECORDS_COUNT_OFFSET)
            if count < 0:
                return "record_count", f"record count {count} is negative"
    elif available > MAGIC_OFFSET + 1:
        attributes = data[i + MAGIC_OFFSET + 1]  # LegacyRecord: crc, magic, attributes
        if attributes & (0xF0 if magic == 1 else 0xF8):  # bit 3: timestamp type, v1 only
            return "attributes", f"attributes 0x{attributes:02x} set unused bits for magic {magic}"
        if attributes & 0x07 > 3:
            return "attributes", f"compression codec {attributes & 0x07} is not one of magic {magic}'s (0-3)"
    return None


# Resynchronisation: the next index holding a plausible v2 batch (implausible_header finds
# nothing wrong with its 61-byte header, its length is at least the minimum and within the
# data) whose CRC-32C checks out. _speedups.resync_v2 is the C twin (the same index, tested).
#
# Linear in the bytes scanned whatever they hold (a file where every byte starts a header
# claiming megabytes used to cost bytes x claimed length): candidates come from a vectorised
# filter on the cheap header fields, and a candidate's CRC costs O(1) however long its span,
# from two prefix CRCs and CRC-32C's linearity (primitives.crc32c_shift), a running one at the
# span's start and one at its end from checkpoints (each byte hashed once).

_PY_DIRECT = 4096  # spans up to this many bytes: CRC-32C directly (a few candidates)
_PY_STRIDE = 1024  # prefix-CRC checkpoint spacing


class _PrefixCrc:
    """CRC-32C of ``mv[origin:k]``, for the span start (k only grows) and for any k."""

    __slots__ = ("mv", "origin", "k", "crc", "checkpoints", "work")

    def __init__(self, mv: memoryview, origin: int) -> None:
        self.mv = mv
        self.origin = origin
        self.k = origin
        self.crc = 0
        self.checkpoints = [0]  # CRC-32C of mv[origin:origin + j * _PY_STRIDE]
        self.work = 0  # bytes hashed

    def running(self, k: int) -> int:
        self.crc = crc32c(self.mv[self.k:k], self.crc)
        self.work += k - self.k
        self.k = k
        return self.crc

    def at(self, k: int) -> int:
        ck = self.checkpoints
        j = (k - self.origin) // _PY_STRIDE
        while len(ck) <= j:
            base = self.origin + (len(ck) - 1) * _PY_STRIDE
            ck.append(crc32c(self.mv[base:base + _PY_STRIDE], ck[-1]))
            self.work += _PY_STRIDE
        base = self.origin + j * _PY_STRIDE
        self.work += k - base
        return crc32c(self.mv[base:k], ck[j])

    def running_many(self, ks: list[int]) -> list[int]:
        """``running`` for each of ``ks`` (ascending)."""
        f, mv, k0, crc = crc32c_extender(), self.mv, self.k, self.crc
        out = []
        for k in ks:
            crc = f(mv[k0:k], crc)
            out.append(crc)
            k0 = k
        self.work += k0 - self.k
        self.k, self.crc = k0, crc
        return out

    def at_many(self, ks: np.ndarray) -> list[int]:
        """``at`` for each of ``ks`` (an int64 array, any order)."""
        if not len(ks):
            return []
        self.at(int(ks.max()))  # the checkpoints as far as needed
        j = (ks - self.origin) // _PY_STRIDE
        bases = self.origin + j * _PY_STRIDE
        self.work += int((ks - bases).sum())
        f, mv, ck = crc32c_extender(), self.mv, self.checkpoints
        return [f(mv[b:k], ck[c]) for b, k, c in zip(bases.tolist(), ks.tolist(), j.tolist())]


def _be32(a: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The int32 (big-endian, signed) at each index of ``at``."""
    import numpy as np

    v = a[at].astype(np.int64) << 24
    v |= a[at + 1].astype(np.int64) << 16
    v |= a[at + 2].astype(np.int64) << 8
    v |= a[at + 3]
    return v - ((v >> 31) << 32)


def _v2_candidates(mv: memoryview, s: int, e: int, n: int, max_message_size: int) -> np.ndarray:
    """The indexes q in [s, e) whose 61 bytes (all within the data) are a plausible v2 batch
    header within the data: implausible_header's checks on every index at once."""
    import numpy as np

    a = np.frombuffer(mv[s:min(n, e + RECORD_BATCH_OVERHEAD - 1)], np.uint8)
    w = e - s

    def field(offset: int) -> np.ndarray:  # the byte at q + offset, for every q in [s, e)
        return a[offset:offset + w]

    ok = field(MAGIC_OFFSET) == 2
    ok &= field(ATTRIBUTES_OFFSET) == 0
    ok &= field(0) < 0x80
    flags = field(ATTRIBUTES_OFFSET + 1)
    ok &= (flags & 0x87) <= 4  # bit 7 clear, codec 0-4
    ok &= field(RECORDS_COUNT_OFFSET) < 0x80
    r = np.flatnonzero(ok)
    if r.size:
        length = _be32(a, r + LOG_OVERHEAD - 4)
        r = r[(length >= RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) & (length <= max_message_size)
              & (length + LOG_OVERHEAD <= n - s - r) & (_be32(a, r + PARTITION_LEADER_EPOCH_OFFSET) >= -1)]
    return r + s


def _first_valid(mv: memoryview, qs: np.ndarray, prefix: _PrefixCrc) -> int:
    """The first of the candidate indexes ``qs`` whose CRC-32C checks out, or -1."""
    import numpy as np

    if len(qs) < 64:
        for q in qs.tolist():
            (length,) = _INT32.unpack_from(mv, q + LOG_OVERHEAD - 4)
            (stored,) = _UINT32.unpack_from(mv, q + CRC_OFFSET)
            b = q + length + LOG_OVERHEAD
            span = b - q - ATTRIBUTES_OFFSET
            if span <= _PY_DIRECT:
                crc = crc32c(mv[q + ATTRIBUTES_OFFSET:b])
                prefix.work += span
            else:
                crc = prefix.at(b) ^ crc32c_shift(prefix.running(q + ATTRIBUTES_OFFSET), span)
            if crc == stored:
                return q
        return -1
    # Many candidates (a file built to pass the cheap checks): every span from prefix CRCs,
    # the multiplications vectorised.
    a = np.frombuffer(mv, np.uint8)
    length = _be32(a, qs + LOG_OVERHEAD - 4)
    stored = _be32(a, qs + CRC_OFFSET) & 0xFFFFFFFF
    del a
    head = np.array(prefix.running_many((qs + ATTRIBUTES_OFFSET).tolist()), np.uint64)
    whole = np.array(prefix.at_many(qs + length + LOG_OVERHEAD), np.uint64)
    spans = (length + LOG_OVERHEAD - ATTRIBUTES_OFFSET).astype(np.uint64)
    hit = np.flatnonzero((whole ^ crc32c_shift_many(head, spans)) == stored.astype(np.uint64))
    return int(qs[hit[0]]) if hit.size else -1


def _resync_py(data, i: int, limit: int, max_message_size: int) -> tuple[int, int]:
    """Pure-Python twin of ``_speedups.resync_v2``: (the first index in (i, limit) holding a
    plausible v2 batch whose CRC-32C checks out, or -1; bytes hashed)."""
    n = len(data)
    end = min(limit, n - RECORD_BATCH_OVERHEAD + 1)  # q + 61 <= n
    with memoryview(data) as mv:
        prefix = _PrefixCrc(mv, i + 1)  # every span starts after i + 1
        s = i + 1
        step = 1 << 12
        while s < end:
            e = min(end, s + step)
            qs = _v2_candidates(mv, s, e, n, max_message_size)
            if qs.size:
                q = _first_valid(mv, qs, prefix)
                if q >= 0:
                    return q, prefix.work
            s = e
            step = min(step * 4, 1 << 20)
        return -1, prefix.work


def _resync(data, i: int, n: int, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> tuple[int, bool]:
    """Where scanning goes on after the untrustworthy header at index ``i``: ``(index, True)``,
    the next plausible v2 batch whose CRC checks out within a 64 MiB window; else
    ``(end of the window, False)``."""
    limit = min(n, i + _RESYNC_WINDOW)
    resync_v2 = getattr(_batch.speedups(), "resync_v2", None)
    if resync_v2 is not None:
        q = resync_v2(data, i, limit, max_message_size)[0]
    else:
        q = _resync_py(data, i, limit, max_message_size)[0]
    return (q, True) if q >= 0 else (limit, False)


def _skipped(found: bool, nxt: int, i: int, n: int) -> str:
    if found:
        return f"skipped {nxt - i} bytes to the next valid batch"
    if nxt >= n:
        return f"no valid batch after it: skipped the remaining {nxt - i} bytes"
    return f"no valid batch in the next {nxt - i} bytes: skipped them"


def align_chain(data, lo: int, base_position: int = 0, chain_from: int | None = None) -> int:
    """The index of the first entry at or after index ``lo``, following the chain of entry
    headers from ``chain_from`` (default: the start of ``data``); ``lo`` if the chain breaks."""
    n = len(data)
    if chain_from is None:
        chain_from = base_position
    c = max(chain_from - base_position, 0)
    if c >= lo:
        return c
    # Follow the chain headers up to the range start (cheap: 12 bytes per entry).
    while c < lo and c + HEADER_SIZE_UP_TO_MAGIC <= n:
        _o, length = _OFFSET_SIZE.unpack_from(data, c)
        if length < RECORD_OVERHEAD_V0 or length + LOG_OVERHEAD > n - c:
            return lo  # chain broken before the range: trust ``lo`` as a boundary
        c += length + LOG_OVERHEAD
    return c if c >= lo else lo


def scan_segment(
    data,
    *,
    source: str | None = None,
    start: int = 0,
    end: int | None = None,
    verify_crc: bool = True,
    decode_records: bool = True,
    base_position: int = 0,
    chain_from: int | None = None,
    max_decompressed_size: int = _comp.DEFAULT_MAX_DECOMPRESSED,
    record_sink=None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    decompress=None,
) -> Iterator[RecordBatch | ScanProblem]:
    """Yield the batches (and the problems) whose start position is in ``[start, end)``.

    Args:
        data: bytes, bytearray, memoryview or mmap holding the segment (or a part of it).
        source: file name used in problems and errors.
        start, end: absolute positions; ``end`` defaults to the end of ``data``. A batch
            that starts before ``end`` is read to its own end (which may lie beyond ``end``).
        verify_crc: check CRC-32C (v2) / CRC-32 (legacy); mismatches become problems.
        decode_records: decompress and decode records (else batches come with headers only).
        base_position: absolute position of ``data[0]`` in the file.
        chain_from: where the batch chain is known to start. By default, when ``start`` is
            past the beginning of ``data``, the chain is followed from ``base_position``
            reading only the 12-byte entry headers, so that any byte range (a Spark split)
            yields exactly the batches that start in it; pass ``chain_from=start`` when
            ``start`` is itself a batch boundary (``--start-position``).
        max_decompressed_size: decompression bomb guard per batch.
        record_sink, decompress: passed to :func:`~kgtool.codec.batch.decode_batch_v2` (summaries).
        max_message_size: the largest entry length believed without a CRC (a partial entry
            at the end claiming more is ``corrupt``, not a truncated tail; resynchronisation
            lands only on batches up to it). Entries wholly within the data may be larger.

    Yields:
        :class:`RecordBatch` and :class:`ScanProblem` in position order; together they cover
        every byte from the first batch in range to the end of the last one.
    """
    n = len(data)
    lo = max(start - base_position, 0)
    hi = n if end is None else min(max(end - base_position, 0), n)
    i = align_chain(data, lo, base_position, chain_from)
    releaser = PageReleaser(data, i)
    while i < hi:
        releaser.advance(i)
        position = base_position + i
        remaining = n - i
        if remaining < LOG_OVERHEAD:
            if _is_zero(data, i, n):
                yield _problem("padding", source, position, remaining,
                               f"{remaining} zero bytes at the end (preallocated, never written)")
            else:
                yield _problem("truncated", source, position, remaining,
                               f"partial entry at the end: {remaining} bytes, fewer than the "
                               f"{LOG_OVERHEAD}-byte offset and length")
            return
        base_offset, length = _OFFSET_SIZE.unpack_from(data, i)
        magic = data[i + MAGIC_OFFSET] if remaining > MAGIC_OFFSET else None
        if base_offset == 0 and length == 0 and _is_zero(data, i, n):
            yield _problem("padding", source, position, remaining,
                           f"{remaining} zero bytes at the end (preallocated, never written)")
            return
        size = length + LOG_OVERHEAD
        minimum = RECORD_OVERHEAD_V0 + LOG_OVERHEAD if magic is None or magic > 2 else _min_size(magic)
        if length < RECORD_OVERHEAD_V0 or size < minimum:
            # FileLogInputStream: "Found record size N smaller than minimum record overhead"
            nxt, found = _resync(data, i, n, max_message_size)
            of = "" if magic is None else f" for magic {magic}"
            yield _problem("corrupt", source, position, nxt - i,
                           f"entry length {length} is smaller than the minimum {minimum - LOG_OVERHEAD}{of}; "
                           f"{_skipped(found, nxt, i, n)}",
                           context=f"batch@{position}.batch_length", base_offset=base_offset)
            i = nxt
            continue
        if size > remaining:
            nxt, found = _resync(data, i, n, max_message_size)
            if found:
                # A valid batch follows: this length is damage, not the end of the data.
                yield _problem("corrupt", source, position, nxt - i,
                               f"entry length {length} runs past the end of the data, but a valid batch "
                               f"starts at byte {base_position + nxt}; skipped {nxt - i} bytes",
                               context=f"batch@{position}.batch_length", base_offset=base_offset)
                i = nxt
                continue
            why = implausible_header(data, i, remaining, max_message_size)
            if why is not None:
                # Not a header Kafka writes: random bytes, not the tail of an active segment.
                yield _problem("corrupt", source, position, nxt - i,
                               f"entry of {size} bytes (length {length}) runs past the end of the data "
                               f"({remaining} bytes remain) and is not a partial batch: its {why[1]}; "
                               f"{_skipped(found, nxt, i, n)}",
                               context=f"batch@{position}.{why[0]}", base_offset=base_offset)
                i = nxt
                continue
            yield _problem("truncated", source, position, remaining,
                           f"entry of {size} bytes (length {length}) but only {remaining} bytes remain: "
                           "partial batch at the end",
                           context=f"batch@{position}", base_offset=base_offset)
            return
        if magic > 2:
            yield _problem("unsupported", source, position, size, f"unknown magic {magic}; entry skipped",
                           context=f"batch@{position}.magic", base_offset=base_offset)
            i += size
            continue
        try:
            if magic == 2:
                batch = decode_batch_v2(data, i, source=source, base_position=base_position,
                                        verify_crc=verify_crc, decode_records=decode_records,
                                        max_decompressed_size=max_decompressed_size,
                                        record_sink=record_sink, decompress=decompress)
            else:
                batch = decode_legacy_entry(data, i, source=source, base_position=base_position,
                                            verify_crc=verify_crc, decode_records=decode_records,
                                            max_decompressed_size=max_decompressed_size)
        except DecodeError as exc:  # CrcMismatch included
            yield skipped_batch("crc_mismatch" if isinstance(exc, CrcMismatch) else "malformed", exc, source,
                                position, size, base_offset)
            i += size
            continue
        yield batch
        i += size


def open_segment(path: str):
    """Map a segment file read-only (bounded memory: pages come and go with the OS).

    Returns an object usable as ``data`` (an mmap, or ``b""`` for an empty file) and the size.

    Raises:
        InputError: missing, a directory, unreadable.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise input_error(path, exc, "a segment file") from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return b"", 0
        try:
            m = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
            if hasattr(mmap, "MADV_SEQUENTIAL"):
                try:
                    m.madvise(mmap.MADV_SEQUENTIAL)
                except OSError:  # pragma: no cover
                    pass
            return m, size
        except (OSError, ValueError):  # not mappable (a pipe, /proc, no address space left): read it
            try:
                with os.fdopen(os.dup(fd), "rb") as fh:
                    data = fh.read()
            except MemoryError:
                raise EnvironmentProblem(
                    f"{path}: not enough memory to map or read this {size}-byte file (MemoryError): "
                    "give kgtool more memory (address space)"
                ) from None
            return data, len(data)
    finally:
        os.close(fd)


def scan_file(path: str, **kwargs) -> Iterator[RecordBatch | ScanProblem]:
    """:func:`scan_segment` over a file, memory-mapped (bounded RSS on multi-GiB segments)."""
    data, _size = open_segment(path)
    kwargs.setdefault("source", path)
    try:
        yield from scan_segment(data, **kwargs)
    finally:
        if isinstance(data, mmap.mmap):
            try:
                data.close()
            except BufferError:  # a memoryview on it is still alive; the GC closes it
                pass


# --- what an input is -------------------------------------------------------------------------

def not_a_segment(batches: int, problems: list[ScanProblem]) -> bool:
    """Whether a scanned range is no log segment at all: not one batch decoded, and every byte
    skipped as ``corrupt`` (no header Kafka could have written, and no batch to resynchronise
    on). A partial header (``truncated``), zero padding, or a batch that is damaged but whose
    header is plausible (``crc_mismatch``, ``malformed``, ``unsupported``) still reads as a
    segment, damaged."""
    return batches == 0 and bool(problems) and all(p.kind == "corrupt" for p in problems)


def describe_start(data, start: int = 0, width: int = 16) -> str:
    """The first bytes of ``data`` from ``start``, for a message: text when they are printable
    ASCII (``'group: g1\\nmemb'``), else hexadecimal (``89 50 4e 47 ...``)."""
    head = bytes(data[start:start + width])
    text = head.decode("ascii", "replace")
    if head and all(c.isprintable() or c in "\n\r\t" for c in text):
        return repr(text)
    return " ".join(f"{b:02x}" for b in head) + (" ..." if len(data) - start > width else "")
