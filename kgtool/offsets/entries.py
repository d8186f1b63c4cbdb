"""One entry of a ``__consumer_offsets`` log, as the replay consumes it.

A :class:`LogEntry` is a decoded record with the fields of its batch that the coordinator's
replay depends on (``CoordinatorLoaderImpl`` passes ``producerId``/``producerEpoch`` of the
batch to ``replay`` and turns control batches into ``replayEndTransactionMarker``), a control
record (transaction marker), or a decode problem (a stretch of bytes that is not a valid batch).

The same entries flow through the pure-Python audit and the Spark job: in Spark they are rows
of :data:`ENTRY_COLUMNS` (offset commits flat, other key and value as JSON text; see
:func:`entry_to_row`), which :func:`kgtool.offsets.replay.replay_columns` replays as columns.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any

# Kinds this model interprets (the names kgtool.coordinator.records gives record types).
OFFSET_COMMIT = "offset_commit"
LEGACY_OFFSET_COMMIT = "legacy_offset_commit"  # record type 0: replayed as an offset commit
OFFSET_COMMIT_KINDS = frozenset({OFFSET_COMMIT, LEGACY_OFFSET_COMMIT})
GROUP_METADATA = "group_metadata"
CONTROL = "control"  # a transaction marker (control record of a control batch)
PROBLEM = "problem"  # bytes that did not decode; ``problem`` says why
CONSUMER_GROUP_PREFIX = "consumer_group_"  # KIP-848 record types

NO_PRODUCER_ID = -1  # RecordBatch.NO_PRODUCER_ID


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record of one ``__consumer_offsets`` partition, with its batch's replay fields."""

    log_partition: int
    offset: int
    position: int  # byte position of the record's batch in ``source``
    source: str
    timestamp: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    is_transactional: bool = False
    is_control: bool = False
    control_type: str | None = None  # "COMMIT" / "ABORT" for transaction markers
    coordinator_epoch: int | None = None
    kind: str | None = None  # coordinator record kind; CONTROL; PROBLEM
    group: str | None = None
    key: dict[str, Any] | None = None
    value: dict[str, Any] | None = None  # None: a tombstone
    value_version: int | None = None
    problem: str | None = None
    # Filled by annotate_transactions() for records of transactional batches: the first
    # transaction marker of the same producer that follows (it resolves the record).
    marker_offset: int | None = None
    marker_type: str | None = None
    marker_position: int | None = None
    marker_timestamp: int | None = None

    @property
    def tombstone(self) -> bool:
        return self.value is None


ENTRY_COLUMNS: list[tuple[str, str]] = [
    ("log_partition", "int32"),
    ("offset", "int64"),
    ("position", "int64"),
    ("source", "string"),
    ("timestamp", "int64"),
    ("producer_id", "int64"),
    ("producer_epoch", "int32"),
    ("is_transactional", "bool"),
    ("is_control", "bool"),
    ("control_type", "string"),
    ("coordinator_epoch", "int32"),
    ("kind", "string"),
    ("group", "string"),
    ("key", "string"),  # JSON text; null for an offset commit in flat form
    ("value", "string"),  # JSON text; null for a tombstone or a flat offset commit
    # Offset commits (the bulk of the log) travel flat, without JSON: key and value fields.
    ("topic", "string"),
    ("partition", "int32"),
    ("commit_offset", "int64"),  # OffsetCommitValue.offset; null for a tombstone
    ("leader_epoch", "int32"),  # v3+
    ("metadata", "string"),
    ("commit_timestamp", "int64"),
    ("expire_timestamp", "int64"),  # v1
    ("value_version", "int32"),
    ("problem", "string"),
    ("marker_offset", "int64"),
    ("marker_type", "string"),
    ("marker_position", "int64"),
    ("marker_timestamp", "int64"),
]

_JSON_FIELDS = ("key", "value")
_FIELD_NAMES = [f.name for f in fields(LogEntry)]


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if hasattr(obj, "__dict__"):
        return vars(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def dumps(obj: Any) -> str:
    """Stable compact JSON (bytes as base64), the form entries and payloads travel in."""
    return json.dumps(obj, default=_json_default, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


_FLAT_KEY = frozenset({"group", "topic", "partition"})
_FLAT_VALUE = ("offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp")
_FLAT_COLUMNS = ("commit_offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp")
_ENTRY_FIELDS = [n for n, _ in ENTRY_COLUMNS if n in {f.name for f in fields(LogEntry)}]


def _flat(entry: LogEntry) -> bool:
    if entry.kind not in OFFSET_COMMIT_KINDS or entry.key is None or set(entry.key) != _FLAT_KEY:
        return False
    v = entry.value
    if v is None:
        return True
    return (
        set(v) <= set(_FLAT_VALUE)
        and all(v.get(k) is not None for k in ("offset", "metadata", "commit_timestamp"))
        and all(k not in v or v[k] is not None for k in _FLAT_VALUE)
    )


def entry_to_row(entry: LogEntry) -> dict[str, Any]:
    """The row form used by the Spark job: offset commits flat (typed columns), other
    records with key and value as JSON text."""
    row: dict[str, Any] = {name: getattr(entry, name) for name in _ENTRY_FIELDS}
    if _flat(entry):
        k, v = entry.key, entry.value
        row["key"] = row["value"] = None
        row["topic"], row["partition"] = k["topic"], k["partition"]  # type: ignore[index]
        if v is not None:
            for col, name in zip(_FLAT_COLUMNS, _FLAT_VALUE):
                row[col] = v.get(name)
        return row
    for name in _JSON_FIELDS:
        if row[name] is not None:
            row[name] = dumps(row[name])
    return row


def entry_from_row(row: dict[str, Any]) -> LogEntry:
    """Inverse of :func:`entry_to_row` (round trip: ``entry_from_row(entry_to_row(e)) == e``
    for entries whose key and value hold only JSON types)."""
    kw: dict[str, Any] = {}
    for name in _FIELD_NAMES:
        v = row.get(name)
        if name in _JSON_FIELDS and v is not None:
            v = json.loads(v)
        if v is not None and name in ("is_transactional", "is_control"):
            v = bool(v)
        kw[name] = v
    if kw["kind"] in OFFSET_COMMIT_KINDS and kw["key"] is None and row.get("topic") is not None:
        kw["key"] = {"group": kw["group"], "topic": row["topic"], "partition": row["partition"]}
        if row.get("commit_offset") is not None:
            kw["value"] = {
                name: row[col] for col, name in zip(_FLAT_COLUMNS, _FLAT_VALUE) if row.get(col) is not None
            }
    for flag in ("is_transactional", "is_control"):
        if kw[flag] is None:
            kw[flag] = False
    for num in ("producer_id",):
        if kw[num] is None:
            kw[num] = NO_PRODUCER_ID
    if kw["producer_epoch"] is None:
        kw["producer_epoch"] = -1
    return LogEntry(**kw)


ENTRY_NAMES = [n for n, _ in ENTRY_COLUMNS]


def entry_to_tuple(entry: LogEntry) -> tuple:
    """:func:`entry_to_row` as a tuple in :data:`ENTRY_COLUMNS` order."""
    row = entry_to_row(entry)
    return tuple(row.get(n) for n in ENTRY_NAMES)


def annotate_transactions(entries: Iterable[LogEntry]) -> Iterator[LogEntry]:
    """Attach to each record of a transactional batch the marker that resolves it.

    ``entries`` are those of ONE log partition in offset order. A marker of producer P
    resolves every pending transactional record of P before it
    (``OffsetMetadataManager.replayEndTransactionMarker`` removes all of P's pending offsets),
    so a record's marker is the first control record of the same producer id at a higher
    offset. Records with no such marker stay unannotated (pending at the log's end).

    This is the single-process twin of the Spark job's window ``first(marker) over
    (partition by log_partition, producer_id order by offset rows between 1 following and
    unbounded following)``.
    """
    items = list(entries)
    next_marker: dict[int, LogEntry] = {}
    out: list[LogEntry] = [None] * len(items)  # type: ignore[list-item]
    for i in range(len(items) - 1, -1, -1):
        e = items[i]
        if e.is_control and e.kind == CONTROL and e.producer_id != NO_PRODUCER_ID:
            out[i] = e
            next_marker[e.producer_id] = e
            continue
        if e.is_transactional and not e.is_control and e.producer_id != NO_PRODUCER_ID:
            m = next_marker.get(e.producer_id)
            if m is not None:
                e = replace(
                    e,
                    marker_offset=m.offset,
                    marker_type=m.control_type,
                    marker_position=m.position,
                    marker_timestamp=m.timestamp,
                )
        out[i] = e
    return iter(out)
