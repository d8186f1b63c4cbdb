"""Kafka-made segments rewritten record by record with kgtool's encoder (tests only).

:func:`rewrite` re-encodes every batch of a segment as it was (offsets, timestamps, producer,
flags, leader epoch; the CRC recomputed) after passing each record's key and value through
``edit(key, value) -> (key, value) | None`` (None drops the record; a batch left empty is
dropped). Control batches are copied unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

from kgtool.codec.batch import encode_batch_v2
from kgtool.codec.model import Record
from kgtool.codec.segment import scan_file

Edit = Callable[[bytes, bytes | None], tuple[bytes, bytes | None] | None]


def record_type(key: bytes) -> int:
    """The int16 record type that heads a ``__consumer_offsets`` key (CoordinatorRecordSerde)."""
    return struct.unpack_from(">h", key, 0)[0]


def rewrite(src: str | Path, dst: str | Path, edit: Edit, compression: str | None = None) -> list[tuple[int, int]]:
    """Write ``dst``: ``src`` with every record edited (batches compressed with ``compression``,
    else as they were). Returns (batch position in ``dst``, record offset) of each record whose
    key or value ``edit`` changed."""
    raw = Path(src).read_bytes()
    out = bytearray()
    changed: list[tuple[int, int]] = []
    for b in scan_file(str(src)):
        assert hasattr(b, "records"), b  # a Kafka-made segment has no damage
        if b.is_control:
            out += raw[b.position:b.position + b.size_in_bytes]
            continue
        kept, edits = [], []
        for r in b.records:
            new = edit(r.key, r.value)
            if new is None:
                continue
            if new != (r.key, r.value):
                edits.append(r.offset)
            kept.append(Record(offset=r.offset, timestamp=r.timestamp, sequence=r.sequence, key=new[0], value=new[1]))
        if not kept:
            continue
        changed.extend((len(out), off) for off in edits)
        out += encode_batch_v2(
            kept, base_offset=b.base_offset, compression=compression or b.compression,
            partition_leader_epoch=b.partition_leader_epoch,
            producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
            is_transactional=b.is_transactional, base_timestamp=b.base_timestamp, max_timestamp=b.max_timestamp,
            last_offset_delta=b.last_offset_delta)
    Path(dst).write_bytes(bytes(out))
    return changed
