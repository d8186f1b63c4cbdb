"""The batches of a segment as the broker's bookkeeping sees them: headers only.

Verification, seeking and the writer need, per batch, its position and size, offsets, max
timestamp, leader epoch and producer fields (``FileChannelRecordBatch``'s header view), and for
control batches the marker type. :func:`batch_headers` is :func:`kgtool.codec.scan_segment` with
``decode_records=False`` (no second batch parser), decoding the records of control batches only.
"""

from __future__ import annotations

from collections.abc import Iterator

from kgtool.codec import compression as _comp
from kgtool.codec.batch import (
    _HEADER,
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG_MASK,
    CREATE_TIME,
    DELETE_HORIZON_FLAG_MASK,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    CrcMismatch,
    decode_batch_v2,
)
from kgtool.codec.primitives import crc32c
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.segment import PageReleaser, scan_segment, skipped_batch
from kgtool.errors import DecodeError

#: Attribute bits sent to the codec's general path: unused bits 7-15, control batches (their
#: records are decoded), a delete horizon (BaseTimestamp means something else).
_SLOW_ATTRIBUTES = 0xFF80 | CONTROL_FLAG_MASK | DELETE_HORIZON_FLAG_MASK


def batch_headers(data, *, source: str | None = None, start: int = 0, end: int | None = None,
                  verify_crc: bool = True) -> Iterator[RecordBatch | ScanProblem]:
    """The batches (records empty, except control batches') and problems of ``data`` from
    ``start`` (a batch boundary) to ``end``; see :func:`kgtool.codec.scan_segment`.

    A plain v2 data batch whose header is one Kafka writes (magic 2, no unused attribute bit,
    a known codec, a length within the data, a leader epoch of at least -1, a non-negative
    count) is taken from its 61-byte header here, as ``decode_batch_v2`` reads it without its
    records; every other entry (control batches, legacy message sets, anything damaged, the
    tail) goes through ``scan_segment`` one entry at a time, so problems are the codec's."""
    n = len(data)
    hi = n if end is None else min(end, n)
    i = start
    unpack = _HEADER.unpack_from
    names = _comp.COMPRESSION_NAMES
    releaser = PageReleaser(data, start)  # bounded resident memory over a multi-GiB segment
    with memoryview(data) as mv:
        while i < hi:
            releaser.advance(i)
            if n - i >= RECORD_BATCH_OVERHEAD:
                (base, length, ple, magic, crc, attrs, delta, base_ts, max_ts, pid, pepoch, bseq,
                 count) = unpack(data, i)
                size = length + LOG_OVERHEAD
                if (magic == 2 and not attrs & _SLOW_ATTRIBUTES and attrs & 7 <= 4 and RECORD_BATCH_OVERHEAD <= size
                        <= n - i and ple >= -1 and count >= 0 and base >= 0
                        and (not verify_crc or crc32c(mv[i + ATTRIBUTES_OFFSET:i + size]) == crc)):
                    yield RecordBatch(i, base, base + delta, length, size, ple, 2, crc, True if verify_crc else None,
                                      attrs, names[attrs & 7], LOG_APPEND_TIME if attrs & TIMESTAMP_TYPE_MASK
                                      else CREATE_TIME, bool(attrs & TRANSACTIONAL_FLAG_MASK), False, None, delta,
                                      base_ts, max_ts, pid, pepoch, bseq, count)
                    i += size
                    continue
            nxt = None
            for item in _one_entry(data, source, i, verify_crc):
                nxt = item.end_position
                yield item
            if nxt is None or nxt <= i:
                return
            i = nxt


def _one_entry(data, source: str | None, i: int, verify_crc: bool) -> Iterator[RecordBatch | ScanProblem]:
    """The codec's view of the entry at ``i`` (or of the damage there): ``scan_segment`` over
    ``[i, i + 1)``, control batches with their records."""
    for item in scan_segment(data, source=source, start=i, end=i + 1, chain_from=i, verify_crc=verify_crc,
                             decode_records=False):
        if isinstance(item, RecordBatch) and item.is_control and item.magic == 2:
            try:
                item = decode_batch_v2(data, item.position, source=source, verify_crc=False)
            except (CrcMismatch, DecodeError) as exc:
                item = skipped_batch("malformed", exc, source, item.position, item.size_in_bytes, item.base_offset)
        yield item
