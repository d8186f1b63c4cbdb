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
  v2 batch with a valid CRC, and reports the bytes in between.

Every byte of the range is accounted for: decoded batches plus problems cover it exactly.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator

from kgtool.codec import compression as _comp
from kgtool.codec.batch import (  # noqa: I001
    ATTRIBUTES_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    CrcMismatch,
    decode_batch_v2,
)
from kgtool.codec.legacy import RECORD_OVERHEAD_V0, decode_legacy_entry
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.primitives import crc32c
from kgtool.errors import DecodeError, EnvironmentProblem
from kgtool.inputs import input_error

#: Offset + Length + PartitionLeaderEpoch/CRC + Magic: ``Records.HEADER_SIZE_UP_TO_MAGIC``.
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1

_OFFSET_SIZE = struct.Struct(">qi")
_RESYNC_WINDOW = 64 * 1024 * 1024


def _problem(kind: str, source: str | None, position: int, length: int, reason: str,
             context: str | None = None, base_offset: int | None = None) -> ScanProblem:
    where = f"{source}: " if source else ""
    ctx = f" ({context})" if context else ""
    return ScanProblem(
        kind=kind, position=position, length=length, reason=reason,
        message=f"{where}byte {position}{ctx}: {reason}", source=source, context=context,
        base_offset=base_offset,
    )


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


def _find(data, needle: bytes, lo: int, hi: int) -> int:
    if hasattr(data, "find"):
        return data.find(needle, lo, hi)
    j = bytes(memoryview(data)[lo:hi]).find(needle)  # a memoryview: search a copy of the window
    return -1 if j < 0 else lo + j


def _resync(data, i: int, n: int) -> int:
    """The next index after ``i`` (within a 64 MiB window) holding a v2 batch whose CRC-32C
    checks out, or -1."""
    limit = min(n, i + _RESYNC_WINDOW)
    q = i + 1
    while True:
        m = _find(data, b"\x02", q + MAGIC_OFFSET, limit + MAGIC_OFFSET)
        if m < 0:
            return -1
        q = m - MAGIC_OFFSET
        if q + RECORD_BATCH_OVERHEAD <= n:
            _off, length = _OFFSET_SIZE.unpack_from(data, q)
            size = length + LOG_OVERHEAD
            if RECORD_BATCH_OVERHEAD <= size <= n - q:
                (stored,) = struct.unpack_from(">I", data, q + MAGIC_OFFSET + 1)
                if crc32c(memoryview(data)[q + ATTRIBUTES_OFFSET:q + size]) == stored:
                    return q
        q += 1


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
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            if _is_zero(data, i, n):
                yield _problem("padding", source, position, remaining,
                               f"{remaining} zero bytes at the end (preallocated, never written)")
            else:
                yield _problem("truncated", source, position, remaining,
                               f"partial entry at the end: {remaining} bytes, fewer than the "
                               f"{HEADER_SIZE_UP_TO_MAGIC}-byte header")
            return
        base_offset, length = _OFFSET_SIZE.unpack_from(data, i)
        magic = data[i + MAGIC_OFFSET]
        if base_offset == 0 and length == 0 and _is_zero(data, i, n):
            yield _problem("padding", source, position, remaining,
                           f"{remaining} zero bytes at the end (preallocated, never written)")
            return
        size = length + LOG_OVERHEAD
        if length < RECORD_OVERHEAD_V0 or (magic <= 2 and size < _min_size(magic)):
            # FileLogInputStream: "Found record size N smaller than minimum record overhead"
            nxt = _resync(data, i, n)
            if nxt < 0:
                nxt = min(n, i + _RESYNC_WINDOW)
            yield _problem("corrupt", source, position, nxt - i,
                           f"entry length {length} is smaller than the minimum "
                           f"{(_min_size(magic) if magic <= 2 else LOG_OVERHEAD + RECORD_OVERHEAD_V0) - LOG_OVERHEAD}"
                           f" for magic {magic}; skipped {nxt - i} bytes to the next valid batch"
                           if nxt < n else
                           f"entry length {length} is smaller than the minimum for magic {magic}; "
                           f"no valid batch after it: skipped the remaining {nxt - i} bytes",
                           context=f"batch@{position}.batch_length", base_offset=base_offset)
            i = nxt
            continue
        if size > remaining:
            nxt = _resync(data, i, n)
            if nxt >= 0:
                # A valid batch follows: this length is damage, not the end of the data.
                yield _problem("corrupt", source, position, nxt - i,
                               f"entry length {length} runs past the end of the data, but a valid batch "
                               f"starts at byte {base_position + nxt}; skipped {nxt - i} bytes",
                               context=f"batch@{position}.batch_length", base_offset=base_offset)
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
        except CrcMismatch as exc:
            p = _problem("crc_mismatch", source, position, size, exc.reason, context=exc.context,
                         base_offset=base_offset)
            p.message = f"{exc}; batch@{position} ({size} bytes) skipped"
            yield p
            i += size
            continue
        except DecodeError as exc:
            p = _problem("malformed", source, position, size, exc.reason, context=exc.context,
                         base_offset=base_offset)
            p.message = f"{exc}; batch@{position} ({size} bytes) skipped"
            yield p
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
