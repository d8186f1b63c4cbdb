"""Segment bytes -> :class:`~kgtool.offsets.entries.LogEntry`: kgtool's codec plus the
``__consumer_offsets`` record schemas.

Used by the Spark executors (one byte range of a segment per task) and by the pure-Python
audit. Following ``DumpLogSegments``, nothing is dropped silently: a stretch that is not a
valid batch (corruption, a truncated tail) and a record whose key or value does not decode
become :data:`~kgtool.offsets.entries.PROBLEM` entries that say where and why.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from kgtool.coordinator.schema import UNKNOWN_TAGGED_FIELD
from kgtool.coordinator.schemas import OFFSETS_RECORD_TYPES as _KNOWN_TYPES
from kgtool.errors import DecodeError, KgtoolError
from kgtool.offsets.entries import CONTROL, PROBLEM, UNKNOWN, LogEntry

# The replay only reads decoded subscriptions and assignments: equal bytes decode once.
_PROTOCOL_CACHE: dict = {}


def _group_of(key: dict[str, Any] | None) -> str | None:
    if not key:
        return None
    g = key.get("group", key.get("group_id"))
    return None if g is None else str(g)


def entries_from_bytes(
    data: Any,
    *,
    source: str,
    log_partition: int,
    start: int = 0,
    end: int | None = None,
    base_position: int = 0,
    chain_from: int | None = None,
) -> Iterator[LogEntry]:
    """Decode the batches that start in ``[start, end)`` of ``data`` into entries.

    Args:
        data: the segment bytes (or an mmap / a slice beginning at ``base_position``).
        source: the file name for positions and problems.
        log_partition: the ``__consumer_offsets`` partition the segment belongs to.
        start, end, base_position, chain_from: as :func:`kgtool.codec.segment.scan_segment`.

    Yields:
        Entries in log order: records, transaction markers, problems.
    """
    from kgtool.codec.segment import scan_segment

    kwargs: dict[str, Any] = dict(source=source, start=start, end=end, base_position=base_position)
    if chain_from is not None:
        kwargs["chain_from"] = chain_from
    for item in scan_segment(data, **kwargs):
        yield from entries_of(item, source, log_partition, data, base_position)


def entries_from_file(path: str, *, log_partition: int, start: int = 0, end: int | None = None,
                      chain_from: int | None = None) -> Iterator[LogEntry]:
    """:func:`entries_from_bytes` over a local segment file, memory-mapped."""
    from kgtool.codec.segment import open_segment

    data, _size = open_segment(path)
    try:
        yield from entries_from_bytes(data, source=path, log_partition=log_partition, start=start, end=end,
                                      chain_from=chain_from)
    finally:
        close = getattr(data, "close", None)
        if close is not None:
            try:
                close()
            except BufferError:
                pass


def _problem_text(problem: Any) -> str:
    """What went wrong, without the file and position (the entry carries those)."""
    where = f" ({problem.context})" if problem.context else ""
    return f"{problem.kind}{where}: {problem.reason}"


def entries_of(item: Any, source: str, log_partition: int, data: Any = None, base_position: int = 0
                ) -> Iterator[LogEntry]:
    if not hasattr(item, "records"):
        # At the byte decode-batch names (ScanProblem.byte: a skipped batch's CRC field, not its start).
        yield LogEntry(log_partition=log_partition, offset=-1, position=item.byte, source=source,
                       timestamp=-1, kind=PROBLEM, problem=_problem_text(item))
        return
    for r in item.records:
        yield from record_entries(item, r, source, log_partition, data, base_position)


def record_entries(b: Any, r: Any, source: str, log_partition: int, data: Any = None,
                    base_position: int = 0) -> Iterator[LogEntry]:
    """The entries of one record of batch ``b``. ``data`` (the bytes the batch was read from,
    starting at ``base_position``) lets a record that does not decode be placed to the byte."""
    from kgtool.coordinator.records import decode_offsets_record

    common = dict(
        log_partition=log_partition, position=b.position, source=source, producer_id=b.producer_id,
        producer_epoch=b.producer_epoch, is_transactional=bool(b.is_transactional), is_control=bool(b.is_control),
    )
    if b.is_control or r.control is not None:
        c = r.control
        yield LogEntry(offset=r.offset, timestamp=r.timestamp, kind=CONTROL,
                       control_type=None if c is None else c.type_name,
                       coordinator_epoch=None if c is None else c.coordinator_epoch, **common)
        return
    try:
        rec = decode_offsets_record(r.key, r.value, protocol_cache=_PROTOCOL_CACHE)
    except DecodeError as exc:
        yield _undecodable(b, r, exc, common, data, base_position)
        return
    except KgtoolError as exc:
        yield LogEntry(offset=r.offset, timestamp=r.timestamp, kind=PROBLEM,
                       problem=f"record at offset {r.offset} (batch@{b.position}): {exc}", **common)
        return
    key = rec.key if isinstance(rec.key, dict) else None
    if rec.kind == UNKNOWN and rec.record_type in _KNOWN_TYPES:
        # A known record type with a value version Kafka does not know: Kafka's loader fails
        # (CoordinatorRecordSerde.readMessage throws), unlike an unknown record type, skipped.
        rt = _KNOWN_TYPES[rec.record_type]
        exc = DecodeError(f"unknown {rt.value.name} version {rec.value_version} (known {rt.value.valid_versions})",
                          position=0, context="value")
        yield _undecodable(b, r, exc, common, data, base_position, rec, rt.kind)
        return
    tags = 0
    for w in rec.warnings:
        if w.startswith(UNKNOWN_TAGGED_FIELD):
            tags += 1
    yield LogEntry(offset=r.offset, timestamp=r.timestamp, kind=rec.kind, group=_group_of(key), key=key,
                   value=rec.value, value_version=getattr(rec, "value_version", None), unknown_tagged_fields=tags,
                   **common)


def _undecodable(b: Any, r: Any, exc: DecodeError, common: dict[str, Any], data: Any, base_position: int,
                 rec: Any = None, kind: str | None = None) -> LogEntry:
    """The PROBLEM entry of a record whose key or value does not decode: at the byte of the field
    that failed when the batch is not compressed (else at the batch), naming the field; with the
    record's kind and group when its key decodes (the replay marks that group incomplete)."""
    from kgtool.coordinator.records import decode_offsets_record

    if rec is None and exc.context and exc.context.startswith("value"):
        try:  # the key alone: the group whose record this is
            rec = decode_offsets_record(r.key, None)
        except KgtoolError:
            rec = None
    key = rec.key if rec is not None and isinstance(rec.key, dict) else None
    group = _group_of(key)
    place = None if data is None else record_place(data, base_position, b.position, r.offset)
    context = exc.context or "key"
    position = b.position
    if place is not None:
        index, key_at, value_at = place
        at = value_at if context.startswith("value") else key_at
        where = f"batch@{b.position}.records[{index}].{context}"
        if at is not None and exc.position is not None:
            position = at + exc.position
    else:
        where = f"batch@{b.position}, {context} byte {exc.position}"
    of = "" if group is None else f" of group {group!r}"
    return LogEntry(offset=r.offset, timestamp=r.timestamp, kind=PROBLEM, group=group, key=key,
                    record_kind=kind if kind is not None else None if rec is None else rec.kind,
                    problem=f"record{of} at offset {r.offset} ({where}): {exc.reason}",
                    **{**common, "position": position})


def record_place(data: Any, base_position: int, batch_position: int, offset: int
                 ) -> tuple[int, int | None, int | None] | None:
    """Where the record at ``offset`` of the uncompressed v2 batch at ``batch_position`` lies in
    ``data`` (which starts at ``base_position``): ``(index in the batch, byte of its key, byte of
    its value)``, absolute, key or value None when null; None for a compressed or legacy batch
    (its records are not file bytes) or when the batch does not hold it. The record headers are
    walked as ``DefaultRecord.readFrom`` reads them, once per batch (the last batch's places are
    kept: a batch of many bad records is walked once, not once per record)."""
    i = batch_position - base_position
    # DefaultRecordBatch: BaseOffset 0, Length 8, Magic 16, CRC 17, Attributes 21, RecordsCount 57, records 61
    if i < 0 or i + 61 > len(data) or data[i + 16] != 2 or data[i + 22] & 0x07:
        return None
    key = (id(data), batch_position, bytes(data[i:i + 61]))
    if _PLACES[0] != key:
        _PLACES[:] = [key, _walk_places(data, i, base_position)]
    return _PLACES[1].get(offset)


_PLACES: list[Any] = [None, {}]


def _walk_places(data: Any, i: int, base_position: int) -> dict[int, tuple[int, int | None, int | None]]:
    from kgtool.codec.primitives import VarintError, read_varint_py, read_varlong_py

    base_offset, length = struct.unpack_from(">qi", data, i)
    (count,) = struct.unpack_from(">i", data, i + 57)
    end = min(len(data), i + 12 + length)
    j = i + 61
    out: dict[int, tuple[int, int | None, int | None]] = {}
    try:
        for index in range(max(count, 0)):
            size, j = read_varint_py(data, j, end)
            nxt = j + size
            j += 1  # attributes
            _ts, j = read_varlong_py(data, j, end)
            delta, j = read_varint_py(data, j, end)
            key_len, j = read_varint_py(data, j, end)
            key_at = None if key_len < 0 else j + base_position
            j += max(key_len, 0)
            value_len, j = read_varint_py(data, j, end)
            out[base_offset + delta] = (index, key_at, None if value_len < 0 else j + base_position)
            j = nxt
            if j > end:
                break
    except VarintError:
        pass
    return out
