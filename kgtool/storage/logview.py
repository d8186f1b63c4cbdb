"""The batches of a segment as the broker's bookkeeping sees them: headers only.

Verification, seeking and the writer need, per batch, its position and size, offsets, max
timestamp, leader epoch and producer fields (``FileChannelRecordBatch``'s header view), and for
control batches the marker type. :func:`batch_headers` is :func:`kgtool.codec.scan_segment` with
``decode_records=False`` (no second batch parser), decoding the records of control batches only.
"""

from __future__ import annotations

from collections.abc import Iterator

from kgtool.codec.batch import CrcMismatch, decode_batch_v2
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.segment import scan_segment
from kgtool.errors import DecodeError


def batch_headers(data, *, source: str | None = None, start: int = 0, end: int | None = None,
                  verify_crc: bool = True) -> Iterator[RecordBatch | ScanProblem]:
    """The batches (records empty, except control batches') and problems of ``data`` from
    ``start`` (a batch boundary) to ``end``; see :func:`kgtool.codec.scan_segment`."""
    for item in scan_segment(data, source=source, start=start, end=end, chain_from=start, verify_crc=verify_crc,
                             decode_records=False):
        if isinstance(item, RecordBatch) and item.is_control and item.magic == 2:
            try:
                item = decode_batch_v2(data, item.position, source=source, verify_crc=False)
            except (CrcMismatch, DecodeError) as exc:
                item = ScanProblem(kind="malformed", position=item.position, length=item.size_in_bytes,
                                   reason=exc.reason if isinstance(exc, DecodeError) else str(exc),
                                   message=f"{exc}; batch@{item.position} ({item.size_in_bytes} bytes) skipped",
                                   source=source, context=getattr(exc, "context", None),
                                   base_offset=item.base_offset)
        yield item
