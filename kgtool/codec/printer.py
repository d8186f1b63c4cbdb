"""A segment scanned for printing: the C extension prints the plain v2 batches itself (no Python
object per record, ``_speedups.dump_segment``), everything else comes out of
:func:`~kgtool.codec.segment.scan_segment` as batches and problems for the Python writer.

The two write the same bytes for the same batch (``tests/codec/test_dump_twin.py``): the C walk
declines, before writing anything of it, every batch it cannot print exactly (legacy, control,
damaged, very large, a payload outside the OffsetCommit layout, bytes that are not UTF-8 where
text is printed), and the general path takes exactly that entry, as
:func:`~kgtool.codec.summary.summarize_segment` interleaves its two paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kgtool.codec import batch as _batch
from kgtool.codec import compression as _comp
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.segment import DEFAULT_MAX_MESSAGE_SIZE, PageReleaser, align_chain, scan_segment

#: Output the C walk writes before it hands it over (and the input it covers at most, for the
#: progress bar and the pages released behind it).
CHUNK_OUTPUT = 1 << 20
CHUNK_INPUT = 8 << 20

JSONL, JSON, TEXT = 0, 1, 2
BYTES_MODES = {"base64": 0, "hex": 1, "utf8": 2}


@dataclass(frozen=True)
class PrintOptions:
    """What the C walk prints (``_dump.h``'s ``dctx_t``): ``fmt`` JSONL, JSON or TEXT;
    ``bytes_mode`` as ``--bytes``; ``offsets``: OffsetCommit payloads decoded (``--decode
    offsets``); the JSON separators; ``pre``/``post``: around each item (an array's ",\\n  ", a
    line's newline); ``head``: a batch line's text up to its position (type, source, topic,
    partition)."""

    fmt: int
    bytes_mode: int
    offsets: bool
    verify_crc: bool
    comma: str
    colon: str
    pre: str
    post: str
    head: str

    def as_tuple(self) -> tuple:
        return (self.fmt, self.bytes_mode, int(self.offsets), int(self.verify_crc), self.comma, self.colon,
                self.pre, self.post, self.head)


@dataclass(frozen=True)
class Printed:
    """Batches the C walk printed: their text, how many, their bytes, where they end."""

    text: bytes
    batches: int
    size: int
    end_position: int


def _decompress(codec: int, payload) -> bytes | None:
    """The C walk's decompression: a batch that does not fit in memory is declined (None), and
    the general path reports it with its position (``batch.out_of_memory``)."""
    try:
        return _comp.decompress_or_none(codec, payload)
    except MemoryError:
        return None


def scan_for_print(data: Any, *, source: str | None, start: int = 0, end: int | None = None,
                   verify_crc: bool = True, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                   options: PrintOptions | None = None,
                   record_sink=None) -> Iterator[RecordBatch | ScanProblem | Printed]:
    """:func:`scan_segment` of ``[start, end)`` (``start`` a batch boundary), with runs of plain v2
    batches already printed (:class:`Printed`) when the C extension is there and ``options`` is
    given; in position order, every byte covered as scan_segment covers it. ``record_sink``
    (with the C extension only): given to the general path's v2 batches (``decode_batch_v2``)."""
    sp = _batch.speedups() if options is not None else None
    common = dict(source=source, verify_crc=verify_crc, max_message_size=max_message_size)
    if sp is None:
        yield from scan_segment(data, start=start, end=end, chain_from=start, **common)
        return
    opts = options.as_tuple()
    n = len(data)
    hi = n if end is None else min(max(end, 0), n)
    i = align_chain(data, start, 0, start)
    releaser = PageReleaser(data, i)
    while i < hi:
        try:
            j, batches, size, text = sp.dump_segment(data, i, min(hi, i + CHUNK_INPUT), 0, opts, _decompress,
                                                     CHUNK_OUTPUT)
        except MemoryError:
            batches = 0  # the general path takes the entry at i and names what did not fit
        if batches:
            yield Printed(text, batches, size, j)
        else:
            # The entry at i is the general path's: exactly that one entry.
            for item in scan_segment(data, start=i, end=i + 1, chain_from=i, record_sink=record_sink, **common):
                yield item
                j = item.end_position
            if j == i:  # pragma: no cover - scan_segment always yields for i < hi
                break
        i = j
        releaser.advance(i)
