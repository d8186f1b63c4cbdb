"""Split planning: cut each segment at batch boundaries into byte ranges of bounded size.

Every entry of a log segment, whatever its magic, starts with ``offset: int64`` and
``length: int32`` (v2 ``baseOffset``/``batchLength``, v0/v1 ``offset``/``message_size``;
``DefaultRecordBatch`` / ``LegacyRecord``), so the chain of batches is followed by reading
12 bytes per batch. A task walks one file's chain (an executor-side job, in parallel over
files) and emits ranges of about ``split_bytes``; each range is then decoded by its own task
with ``chain_from=start`` (no re-walk). The driver only receives the list of ranges: one row
per ``split_bytes`` of input.

Walking the chain costs a few microseconds per batch, negligible next to decoding. The alternative (fixed byte ranges, each task resynchronizing by validating
candidate headers and CRCs) avoids the walk but can be fooled by bytes that look like a batch
inside record data, and costs a CRC per candidate position; it was not chosen.

A header that cannot be a batch (length below the minimum, or past the end of the file)
stops the walk: the rest of the file becomes the last range, whose decoding reports the
problem with its byte position.
"""

from __future__ import annotations

import struct

from kgtool.spark.files import RangeReader

DEFAULT_SPLIT_BYTES = 32 * 1024 * 1024
HEADER = struct.Struct(">qi")  # offset / baseOffset, length / batchLength
HEADER_SIZE = 12
# The smallest legal entry after the 12-byte header: a v0 message (crc 4, magic 1,
# attributes 1, key length 4, value length 4) = 14 bytes; LegacyRecord.RECORD_OVERHEAD_V0.
MIN_ENTRY_LENGTH = 14
_BLOCK = 4 * 1024 * 1024


def plan_ranges(path: str, size: int, split_bytes: int = DEFAULT_SPLIT_BYTES,
                storage: dict[str, str] | None = None) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` of ``path`` that start at batch boundaries.

    Every batch starts in exactly one range; a range ends where the next begins; the last
    ends at ``size``. An empty file has no range.
    """
    if size <= 0:
        return []
    ranges: list[tuple[int, int]] = []
    with RangeReader(path, storage) as rd:
        size = min(size, rd.size)
        data = rd.data
        block_start, block = 0, b""
        pos = 0
        split_start = 0
        unpack = HEADER.unpack_from
        while pos + HEADER_SIZE <= size:
            if data is not None:
                _off, length = unpack(data, pos)
            else:
                if pos + HEADER_SIZE > block_start + len(block):
                    block_start = pos
                    block = rd.read(pos, min(_BLOCK, size - pos))
                _off, length = unpack(block, pos - block_start)
            if length < MIN_ENTRY_LENGTH or pos + HEADER_SIZE + length > size:
                break
            pos += HEADER_SIZE + length
            if pos - split_start >= split_bytes:
                ranges.append((split_start, pos))
                split_start = pos
    if split_start < size:
        ranges.append((split_start, size))
    return ranges
