"""The objects ``decode-batch --format jsonl`` prints (and ``--format json``, in one array): one
schema, declared here as data, as ``kgtool.offsets.tables`` declares the audit's tables.

A batch goes out once, as a ``"type": "batch"`` line, before its records (as
``kafka-dump-log.sh`` prints a batch line before its ``|`` record lines); each record line
carries its own fields and the byte ``position`` of its batch, which names the batch line it
belongs to (with the file: batch lines carry ``source``). Read by the Python writer
(:mod:`kgtool.cli.dump_log`), checked against the C writer (``_speedups.dump_segment``, whose
field names ``tests/codec/test_lines.py`` holds against these), by ``docs/reference/jsonl.md``
(rendered from it by ``python -m kgtool.docs``) and by readers of the output (``assign``'s group-metadata input, tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kgtool.codec.model import Record, RecordBatch


@dataclass(frozen=True)
class LineKey:
    """One key of a line: its name, JSON type and meaning; ``when``: present only then ("when
    ...", "for ...")."""

    name: str
    type: str
    doc: str
    when: str | None = None


#: ``type`` of a batch line and of a record line.
BATCH = "batch"
RECORD = "record"

#: Batch fields that are :class:`~kgtool.codec.model.RecordBatch` attributes, in line order
#: (Kafka's ``RecordBatch`` accessors in snake_case).
BATCH_HEADER: tuple[LineKey, ...] = (
    LineKey("position", "integer", "byte position of the batch in the file"),
    LineKey("base_offset", "integer", "offset of its first record"),
    LineKey("last_offset", "integer", "offset of its last record"),
    LineKey("batch_length", "integer", "the length field (bytes after it)"),
    LineKey("size_in_bytes", "integer", "bytes in the file, length field included"),
    LineKey("partition_leader_epoch", "integer", "-1 for magic 0/1"),
    LineKey("magic", "integer", "0, 1 or 2"),
    LineKey("crc", "integer", "the stored CRC (CRC-32C for v2, CRC-32 for magic 0/1)"),
    LineKey("crc_valid", "boolean or null", "null with --no-verify-crc"),
    LineKey("attributes", "integer", "the attributes field"),
    LineKey("compression", "string", "none, gzip, snappy, lz4, zstd"),
    LineKey("timestamp_type", "string", "CREATE_TIME, LOG_APPEND_TIME or NO_TIMESTAMP_TYPE (magic 0)"),
    LineKey("is_transactional", "boolean", "attribute bit 4"),
    LineKey("is_control", "boolean", "attribute bit 5"),
    LineKey("delete_horizon_ms", "integer or null", "the base timestamp when attribute bit 6 is set, else null"),
    LineKey("last_offset_delta", "integer or null", "null for magic 0/1"),
    LineKey("base_timestamp", "integer or null", "null for magic 0/1"),
    LineKey("max_timestamp", "integer", "-1 for magic 0"),
    LineKey("producer_id", "integer", "-1 without a producer (and for magic 0/1)"),
    LineKey("producer_epoch", "integer", "-1 without"),
    LineKey("base_sequence", "integer", "-1 without"),
    LineKey("last_sequence", "integer", "base_sequence + last_offset_delta, wrapping past 2^31-1 "
          "(DefaultRecordBatch.lastSequence); -1 without"),
    LineKey("record_count", "integer", "records in the batch (inner messages for a compressed magic 0/1 wrapper)"),
)

BATCH_FIELDS: tuple[LineKey, ...] = (
    LineKey("type", "string", '"batch"'),
    LineKey("source", "string", "the input: file path, <stdin> or <hex>"),
    LineKey("topic", "string", "the topic", when="when the file's directory is a partition directory (TOPIC-PARTITION)"),
    LineKey("partition", "integer", "the partition", when="when the file's directory is a partition directory"),
    *BATCH_HEADER,
)

#: ``control`` of a control record (``ControlRecordType``, ``EndTransactionMarker``).
CONTROL_FIELDS: tuple[LineKey, ...] = (
    LineKey("type", "integer", "ControlRecordType id"),
    LineKey("type_name", "string", "ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, ... or UNKNOWN"),
    LineKey("version", "integer", "the control key version"),
    LineKey("coordinator_epoch", "integer or null", "for ABORT and COMMIT markers, else null"),
)

RECORD_FIELDS: tuple[LineKey, ...] = (
    LineKey("type", "string", '"record"'),
    LineKey("position", "integer", "byte position of the record's batch: its batch line has the same"),
    LineKey("offset", "integer", "the record's absolute offset"),
    LineKey("timestamp", "integer", "its timestamp, LogAppendTime applied (the batch's max_timestamp); -1 for magic 0"),
    LineKey("key", "string or null", "per --bytes (base64, hex or utf8); null stays null"),
    LineKey("value", "string or null", "per --bytes; null stays null"),
    LineKey("headers", "array", '[{"key": string, "value": string or null}], values per --bytes'),
    LineKey("control", "object", "{" + ", ".join(f.name for f in CONTROL_FIELDS) + "}",
          when="for the records of control batches"),
    LineKey("payload", "object", "the decoded payload: offsets/txn {record_type, kind, tombstone, key, "
          "value_version, value, warnings (when any), raw_key/raw_value (unknown record type)}; "
          "utf8/hex/base64 {kind, key, value, warnings}",
          when="when a payload decoder applies (--decode, automatic in __consumer_offsets-N) and it decodes"),
    LineKey("payload_error", "string", "why the payload does not decode (exit 1)",
          when="when a payload decoder applies and it does not decode"),
)

#: LineKey names, in line order.
BATCH_NAMES = tuple(f.name for f in BATCH_FIELDS)
BATCH_HEADER_NAMES = tuple(f.name for f in BATCH_HEADER)
RECORD_NAMES = tuple(f.name for f in RECORD_FIELDS)
CONTROL_NAMES = tuple(f.name for f in CONTROL_FIELDS)
HEADER_NAMES = ("key", "value")


def batch_object(b: RecordBatch, head: dict[str, Any]) -> dict[str, Any]:
    """A batch line: ``type``, ``head`` (source, and topic/partition when known), the header."""
    obj: dict[str, Any] = {"type": BATCH, **head}
    for name in BATCH_HEADER_NAMES:
        obj[name] = getattr(b, name)
    if b.record_count is None:  # a legacy message: countOrNull() is null, its records are counted
        obj["record_count"] = len(b.records)
    return obj


def control_object(r: Record) -> dict[str, Any]:
    c = r.control
    return {"type": c.type, "type_name": c.type_name, "version": c.version, "coordinator_epoch": c.coordinator_epoch}


def record_object(r: Record, position: int, render_bytes, payload: Any = None,
                  payload_error: str | None = None) -> dict[str, Any]:
    """A record line. ``render_bytes``: ``--bytes`` (bytes or None -> str or None);
    ``payload``: the decoded payload's ``to_json()``, or ``payload_error``."""
    obj: dict[str, Any] = {
        "type": RECORD,
        "position": position,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": render_bytes(r.key),
        "value": render_bytes(r.value),
        "headers": [{"key": k, "value": render_bytes(v)} for k, v in r.headers],
    }
    if r.control is not None:
        obj["control"] = control_object(r)
    if payload is not None:
        obj["payload"] = payload
    elif payload_error is not None:
        obj["payload_error"] = payload_error
    return obj


def is_record(obj: Any) -> bool:
    """A record line (of this schema)."""
    return isinstance(obj, dict) and obj.get("type") == RECORD


def with_batches(objs: Iterable[Any]) -> Iterator[tuple[dict[str, Any] | None, dict[str, Any]]]:
    """The record lines of an output read back, each with the batch line it follows (None for a
    record before any batch line, e.g. a stream cut at its start); other objects are skipped."""
    batch = None
    for obj in objs:
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind == BATCH:
            batch = obj
        elif kind == RECORD:
            yield batch, obj


def readme_table(fields: tuple[LineKey, ...]) -> list[str]:
    """The rows of a schema table of ``docs/reference/jsonl.md`` (``python -m kgtool.docs``)."""
    rows = ["| field | type | meaning |", "|---|---|---|"]
    for f in fields:
        meaning = f.doc if f.when is None else f"{f.doc}; only {f.when}"
        rows.append(f"| `{f.name}` | {f.type} | {meaning} |")
    return rows
