"""Segment bytes -> :class:`~kgtool.offsets.entries.LogEntry`: kgtool's codec plus the
``__consumer_offsets`` record schemas.

Used by the Spark executors (one byte range of a segment per task) and by the pure-Python
audit. Following ``DumpLogSegments``, nothing is dropped silently: a stretch that is not a
valid batch (corruption, a truncated tail) and a record whose key or value does not decode
become :data:`~kgtool.offsets.entries.PROBLEM` entries that say where and why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kgtool.errors import KgtoolError
from kgtool.offsets.entries import CONTROL, PROBLEM, LogEntry

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
        yield from _entries_of(item, source, log_partition)


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


def _entries_of(item: Any, source: str, log_partition: int) -> Iterator[LogEntry]:
    if not hasattr(item, "records"):
        yield LogEntry(log_partition=log_partition, offset=-1, position=item.position, source=source,
                       timestamp=-1, kind=PROBLEM, problem=_problem_text(item))
        return
    for r in item.records:
        yield from _record_entries(item, r, source, log_partition)


def _record_entries(b: Any, r: Any, source: str, log_partition: int) -> Iterator[LogEntry]:
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
    except KgtoolError as exc:
        yield LogEntry(offset=r.offset, timestamp=r.timestamp, kind=PROBLEM,
                       problem=f"record at offset {r.offset} (batch@{b.position}): {exc}", **common)
        return
    key = rec.key if isinstance(rec.key, dict) else None
    yield LogEntry(offset=r.offset, timestamp=r.timestamp, kind=rec.kind, group=_group_of(key), key=key,
                   value=rec.value, value_version=getattr(rec, "value_version", None), **common)
