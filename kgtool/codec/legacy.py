"""Legacy message sets, magic 0 and 1: decoder and encoder (``LegacyRecord``,
``AbstractLegacyRecordBatch``).

Wire schema (Kafka protocol guide, "Messagesets")::

    MessageSet => [Offset MessageSize Message]
      Offset => Int64          (LOG_OVERHEAD = 12 with MessageSize)
      MessageSize => Int32
    Message =>
      Crc => Uint32            offset 0: CRC-32 (IEEE) of Magic..end
      Magic => Int8            offset 4
      Attributes => Int8       offset 5: compression bits 0-2, timestamp type bit 3 (v1)
      Timestamp => Int64       offset 6 (v1 only)
      Key => Int32 length (-1: null) + bytes
      Value => Int32 length (-1: null) + bytes

A compressed message (a *wrapper*) holds in its value a compressed message set of inner
messages. ``AbstractLegacyRecordBatch.DeepRecordsIterator``: inner offsets are absolute in
magic 0 and relative in magic 1, where absolute = wrapper offset - last inner offset + inner
offset (a wrapper offset of 0, written by some librdkafka versions, means base 0); inner
magic-1 messages take the wrapper's timestamp when the wrapper says LOG_APPEND_TIME; inner
messages must not be compressed; zstd is not allowed below magic 2.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from kgtool.codec import batch as _batch
from kgtool.codec import compression as _comp
from kgtool.codec.batch import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP_TYPE,
    RECORDS_CHUNK,
    RECORDS_CHUNK_BYTES,
    CrcMismatch,
    RecordStream,
    _as_record_fields,
    _b,
    out_of_memory,
)
from kgtool.codec.model import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Record,
    RecordBatch,
)
from kgtool.codec.primitives import Reader, crc32
from kgtool.errors import DecodeError

CRC_OFFSET = 0
CRC_LENGTH = 4
MAGIC_OFFSET = CRC_OFFSET + CRC_LENGTH
MAGIC_LENGTH = 1
ATTRIBUTES_OFFSET = MAGIC_OFFSET + MAGIC_LENGTH
ATTRIBUTES_LENGTH = 1
TIMESTAMP_OFFSET = ATTRIBUTES_OFFSET + ATTRIBUTES_LENGTH
TIMESTAMP_LENGTH = 8
KEY_SIZE_OFFSET_V0 = ATTRIBUTES_OFFSET + ATTRIBUTES_LENGTH
KEY_SIZE_OFFSET_V1 = TIMESTAMP_OFFSET + TIMESTAMP_LENGTH
KEY_SIZE_LENGTH = 4
VALUE_SIZE_LENGTH = 4
RECORD_OVERHEAD_V0 = KEY_SIZE_OFFSET_V0 + KEY_SIZE_LENGTH + VALUE_SIZE_LENGTH  # 14
RECORD_OVERHEAD_V1 = KEY_SIZE_OFFSET_V1 + KEY_SIZE_LENGTH + VALUE_SIZE_LENGTH  # 22

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08


class _Message:
    __slots__ = ("offset", "size", "crc", "magic", "attributes", "timestamp", "key", "value", "crc_valid")


def _read_message(r: Reader, offset: int, size: int, verify_crc: bool, ctx: str) -> _Message:
    """Read the message body of ``size`` bytes at ``r.pos`` (after Offset and MessageSize)."""
    start = r.pos
    m = _Message()
    m.offset = offset
    m.size = size
    if size < RECORD_OVERHEAD_V0:
        raise r.error(f"message size {size} is smaller than the minimum {RECORD_OVERHEAD_V0}",
                      at=start - 4, field="message_size")
    end = start + size
    sub = Reader(r.data, start, end, base=r.base, source=r.source, context=ctx)
    m.crc = sub.read_uint32("crc")
    m.magic = sub.read_int8("magic")
    if m.magic not in (0, 1):
        raise sub.error(f"magic {m.magic} is not 0 or 1 inside a message set", at=start + MAGIC_OFFSET,
                        field="magic")
    if m.magic == 1 and size < RECORD_OVERHEAD_V1:
        raise r.error(f"message size {size} is smaller than the magic-1 minimum {RECORD_OVERHEAD_V1}",
                      at=start - 4, field="message_size")
    m.crc_valid = None
    if verify_crc:
        computed = crc32(memoryview(r.data)[start + MAGIC_OFFSET:end])
        m.crc_valid = computed == m.crc
        if not m.crc_valid:
            raise CrcMismatch(f"stored crc 0x{m.crc:08x} != computed 0x{computed:08x}",
                              source=r.source, position=r.base + start, context=ctx + ".crc",
                              batch_size=size + LOG_OVERHEAD, base_offset=offset)
    m.attributes = sub.read_int8("attributes")
    m.timestamp = sub.read_int64("timestamp") if m.magic == 1 else NO_TIMESTAMP
    klen = sub.read_int32("key_length")
    m.key = None if klen < 0 else sub.read_bytes(klen, "key")
    vlen = sub.read_int32("value_length")
    m.value = None if vlen < 0 else sub.read_bytes(vlen, "value")
    r.pos = end
    return m


def _ts_type(magic: int, attributes: int) -> str:
    if magic == 0:
        return NO_TIMESTAMP_TYPE
    return LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME


def decode_legacy_entry(
    data,
    pos: int = 0,
    *,
    source: str | None = None,
    base_position: int = 0,
    verify_crc: bool = True,
    decode_records: bool = True,
    max_decompressed_size: int = _comp.DEFAULT_MAX_DECOMPRESSED,
) -> RecordBatch:
    """Decode the top-level magic 0/1 message at index ``pos`` as one :class:`RecordBatch`.

    The caller has checked that Offset + MessageSize fit in ``data``. With
    ``decode_records=False`` a compressed wrapper is not decompressed, so its ``base_offset``
    is the wrapper's offset (Kafka's ``baseOffset()`` is the first inner offset, which needs
    the records) and ``records`` is empty.

    Raises:
        CrcMismatch: the (wrapper) message's CRC-32 does not match.
        DecodeError: malformed message, bad compressed payload, bad inner messages.
    """
    position = base_position + pos
    ctx = f"batch@{position}"
    r = Reader(data, pos, base=base_position, source=source, context=ctx)
    offset = r.read_int64("offset")
    size = r.read_int32("message_size")
    if size > r.remaining:
        raise r.error(f"message size {size} exceeds the {r.remaining} bytes remaining", at=pos + 8,
                      field="message_size")
    try:
        outer = _read_message(r, offset, size, verify_crc, ctx)
    except MemoryError:
        raise out_of_memory(source, position, f"read its {size}-byte message") from None
    codec = outer.attributes & COMPRESSION_CODEC_MASK
    if codec not in _comp.COMPRESSION_NAMES:
        raise DecodeError(f"unknown compression type id {codec}", source=source,
                          position=position + LOG_OVERHEAD + ATTRIBUTES_OFFSET, context=ctx + ".attributes")
    ts_type = _ts_type(outer.magic, outer.attributes)
    batch = RecordBatch(
        position=position,
        base_offset=offset,
        last_offset=offset,
        batch_length=size,
        size_in_bytes=size + LOG_OVERHEAD,
        partition_leader_epoch=NO_PARTITION_LEADER_EPOCH,
        magic=outer.magic,
        crc=outer.crc,
        crc_valid=outer.crc_valid,
        attributes=outer.attributes & 0xFF,
        compression=_comp.COMPRESSION_NAMES[codec],
        timestamp_type=ts_type,
        is_transactional=False,
        is_control=False,
        delete_horizon_ms=None,
        last_offset_delta=None,
        base_timestamp=None,
        max_timestamp=outer.timestamp,
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
        base_sequence=NO_SEQUENCE,
        record_count=None,
    )
    if codec == _comp.NONE:
        batch.records = [Record(offset, outer.timestamp, NO_SEQUENCE, outer.key, outer.value, [],
                                outer.attributes & 0xFF, size + LOG_OVERHEAD, None)]
        return batch
    if not decode_records:
        return batch
    value_pos = position + size + LOG_OVERHEAD - (0 if outer.value is None else len(outer.value))
    if codec == _comp.ZSTD:
        raise DecodeError(f"zstd compression is not allowed with magic {outer.magic}", source=source,
                          position=position + LOG_OVERHEAD + ATTRIBUTES_OFFSET, context=ctx + ".attributes")
    if outer.value is None:
        raise DecodeError("compressed message set with a null value", source=source,
                          position=value_pos - 4, context=ctx + ".value")
    try:
        inner_data = _comp.decompress(codec, outer.value, magic=outer.magic, max_size=max_decompressed_size)
    except _comp.CompressionFailure as exc:
        raise DecodeError(str(exc), source=source, position=value_pos, context=ctx + ".value") from None
    except MemoryError:
        raise out_of_memory(source, position, f"decompress its {batch.compression} message set") from None
    try:
        return _inner_records(batch, inner_data, outer, offset, ts_type, verify_crc, source, ctx, value_pos)
    except MemoryError:
        raise out_of_memory(source, position, "decode its inner messages") from None


def _wrap64(v: int) -> int:
    return ((v + (1 << 63)) % (1 << 64)) - (1 << 63)


def _next_inner(ir: Reader, idx: int, verify_crc: bool, source: str | None, ctx: str, value_pos: int) -> _Message:
    """The inner message at ``ir.pos`` (``AbstractLegacyRecordBatch.DeepRecordsIterator``)."""
    ictx = f"{ctx}.records[{idx}]"
    try:
        if ir.remaining < LOG_OVERHEAD:
            raise ir.error(f"{ir.remaining} bytes after the last inner message")
        ioff = ir.read_int64()
        isize = ir.read_int32()
        if isize > ir.remaining:
            raise ir.error(f"inner message size {isize} exceeds the {ir.remaining} bytes remaining",
                           at=ir.pos - 4)
        ir.context = ictx
        m = _read_message(ir, ioff, isize, verify_crc, ictx)
    except DecodeError as exc:
        # Positions inside decompressed data are not file positions: name both.
        raise DecodeError(
            f"{exc.reason} (at byte {exc.position} of the decompressed message set)",
            source=source, position=value_pos, context=exc.context or ictx,
        ) from None
    if m.attributes & COMPRESSION_CODEC_MASK:
        raise DecodeError("inner messages must not be compressed", source=source, position=value_pos,
                          context=ictx + ".attributes")
    return m


def _inner_records(batch: RecordBatch, inner_data: bytes, outer: _Message, offset: int, ts_type: str,
                   verify_crc: bool, source: str | None, ctx: str, value_pos: int) -> RecordBatch:
    """Check every inner message, then attach them as records: a list, or for more than
    RECORDS_CHUNK of them a :class:`RecordStream` that reads them again chunk by chunk (the
    absolute offsets of magic 1 depend on the last inner offset, known only at the end)."""
    sp = _batch.speedups()
    if sp is not None:
        bad, idx, first_inner, last_inner, marks, firsts = sp.index_legacy_inner(
            inner_data, 0, len(inner_data), verify_crc, RECORDS_CHUNK, RECORDS_CHUNK_BYTES)
        if bad >= 0:
            # The Python reader words the error: re-read from the chunk the bad message is in.
            ir = Reader(inner_data, marks[-1], source=source, context=ctx)
            for j in range(firsts[-1], bad + 1):
                _next_inner(ir, j, verify_crc, source, ctx, value_pos)
            raise DecodeError(f"inner message {bad} is malformed", source=source,  # pragma: no cover
                              position=value_pos, context=f"{ctx}.records[{bad}]")
    else:
        ir = Reader(inner_data, 0, source=source, context=ctx)
        marks, firsts = [], []
        idx = 0
        first_inner = last_inner = 0
        while ir.remaining > 0:
            if not idx or idx - firsts[-1] >= RECORDS_CHUNK or ir.pos - marks[-1] >= RECORDS_CHUNK_BYTES:
                marks.append(ir.pos)
                firsts.append(idx)
            m = _next_inner(ir, idx, verify_crc, source, ctx, value_pos)
            if idx == 0:
                first_inner = m.offset
            last_inner = m.offset
            idx += 1
    marks.append(len(inner_data))
    firsts.append(idx)
    if not idx:
        raise DecodeError("compressed message set with no inner messages", source=source,
                          position=value_pos, context=ctx + ".value")
    position = batch.position
    if outer.magic == 1:
        if offset == 0:
            abs_base = 0
        elif offset < last_inner:
            raise DecodeError(
                f"wrapper offset {offset} is less than the last inner offset {last_inner} and not zero",
                source=source, position=position, context=ctx + ".offset",
            )
        else:
            abs_base = _wrap64(offset - last_inner)
    else:
        abs_base = None

    lat = outer.timestamp if ts_type == LOG_APPEND_TIME else None

    def fields(off: int, magic: int, attributes: int, timestamp: int, key, value, size: int) -> tuple:
        """Record fields (as RecordStream hands them out; _speedups.decode_legacy_inner is the
        C twin)."""
        if abs_base is not None:
            off = _wrap64(off + abs_base)  # Java long arithmetic
        ts = NO_TIMESTAMP if magic == 0 else (timestamp if lat is None else lat)
        return (off, ts, NO_SEQUENCE, key, value, [], attributes & 0xFF, size + LOG_OVERHEAD)

    def chunk(k: int) -> list[tuple]:
        n = firsts[k + 1] - firsts[k]
        if sp is not None:
            return sp.decode_legacy_inner(inner_data, marks[k], n, verify_crc, abs_base, lat)
        cr = Reader(inner_data, marks[k], source=source, context=ctx)
        out = []
        for j in range(n):
            m = _next_inner(cr, firsts[k] + j, verify_crc, source, ctx, value_pos)
            out.append(fields(m.offset, m.magic, m.attributes, m.timestamp, m.key, m.value, m.size))
        return out

    def summarize_chunk(k: int, with_payloads: bool, slow: list) -> dict:
        return sp.summarize_legacy_inner(inner_data, marks[k], firsts[k + 1] - firsts[k],
                                                       verify_crc, abs_base, lat, 2 if with_payloads else 0, slow)

    if len(firsts) == 2:  # one chunk
        batch.records = [Record(*t, None) for t in chunk(0)]
    else:
        batch.records = RecordStream(firsts, chunk, source, position,
                                     summarize_chunk=summarize_chunk if sp is not None else None)
    batch.base_offset = first_inner if abs_base is None else _wrap64(abs_base + first_inner)
    return batch


# --- encoder ----------------------------------------------------------------------------------

def encode_legacy_message(offset: int, key, value, *, magic: int = 1, timestamp: int = NO_TIMESTAMP,
                          attributes: int = 0) -> bytes:
    """One top-level entry Offset + MessageSize + Message (``LegacyRecord.write``)."""
    key = _b(key)
    value = _b(value)
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    elif magic != 0:
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    crc = crc32(body)
    msg = struct.pack(">I", crc) + bytes(body)
    return struct.pack(">qi", offset, len(msg)) + msg


def encode_message_set(
    records: Iterable[Any] = (),
    *,
    magic: int = 1,
    base_offset: int = 0,
    compression: str | int = "none",
    timestamp_type: str = CREATE_TIME,
    log_append_time: int | None = None,
    timestamp: int | None = None,
    wrapper_offset: int | None = None,
) -> bytes:
    """Encode records as a magic 0/1 message set (``MemoryRecordsBuilder`` for magic < 2).

    Uncompressed: one message per record at consecutive offsets. Compressed: one wrapper whose
    value is the compressed inner message set (inner offsets absolute for magic 0, relative
    0..n-1 for magic 1) and whose offset is the last absolute offset (``wrapper_offset``
    overrides it). With LOG_APPEND_TIME (magic 1) messages carry ``log_append_time``.

    Items are as for :func:`kgtool.codec.batch.encode_batch_v2` (headers must be empty).
    """
    codec = _comp.compression_id(compression)
    if codec == _comp.ZSTD:
        raise ValueError(f"zstd compression is not supported for magic {magic}")
    lat = timestamp_type == LOG_APPEND_TIME
    if lat and (magic != 1 or log_append_time is None):
        raise ValueError("LOG_APPEND_TIME needs magic 1 and log_append_time")
    ts_attr = TIMESTAMP_TYPE_MASK if lat else 0
    default_ts = NO_TIMESTAMP if timestamp is None else timestamp
    items = []
    for i, item in enumerate(records):
        off_delta, ts, key, value, headers, attrs = _as_record_fields(item, i, base_offset)
        if headers:
            raise ValueError("legacy messages have no headers")
        ts = default_ts if ts is None else ts
        if lat:
            ts = log_append_time
        items.append((i if off_delta is None else off_delta, ts, key, value))
    if codec == _comp.NONE:
        return b"".join(
            encode_legacy_message(base_offset + od, k, v, magic=magic,
                                  timestamp=ts if magic == 1 else NO_TIMESTAMP, attributes=ts_attr)
            for od, ts, k, v in items
        )
    if not items:
        return b""
    inner = b"".join(
        encode_legacy_message(od if magic == 1 else base_offset + od, k, v, magic=magic,
                              timestamp=ts if magic == 1 else NO_TIMESTAMP, attributes=ts_attr)
        for od, ts, k, v in items
    )
    last = base_offset + items[-1][0]
    wrapper_ts = NO_TIMESTAMP
    if magic == 1:
        wrapper_ts = log_append_time if lat else max(it[1] for it in items)
    return encode_legacy_message(
        last if wrapper_offset is None else wrapper_offset,
        None,
        _comp.compress(codec, inner, magic=magic),
        magic=magic,
        timestamp=wrapper_ts,
        attributes=codec | ts_attr,
    )
