"""How ``decode-batch`` shows what it decoded: kafka-dump-log's layout for people, JSON for scripts.

The table format follows ``kafka-dump-log.sh --print-data-log`` (``DumpLogSegments``): a
``Dumping FILE`` line per input, one line per batch, then one compact line per record, here
with the decoded key and value (no raw bytes beside them), ISO-8601 UTC times, and nothing cut
short; long lines are left to the terminal to wrap::

    Dumping __consumer_offsets-12/00000000000000000000.log (topic __consumer_offsets, partition 12)
    batch@0  offsets 0..1  2 records  magic 2  none  190 bytes  crc 0x5a11c3f4 ok  CreateTime 2024-06-01T14:03:00.123Z
    | offset 0  2024-06-01T14:03:00.120Z  offset_commit  key: {"group":"g","topic":"t","partition":0}  value: {...}
    | offset 1  2024-06-01T14:03:00.123Z  control: COMMIT (version 0, coordinator epoch 9)

Sizes and counts carry thousands separators; offsets, positions and ids are printed as they are
(they are copied into other commands). The JSON Lines objects (``--format jsonl``, and ``json``
as one array) are the schema of the README; ``topic`` and ``partition`` follow ``source`` when
the input's directory is a partition directory (``orders-3/``), as kcat ``-J`` gives them.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

from kgtool.cli import render
from kgtool.codec.batch import RecordStream
from kgtool.codec.model import Record, RecordBatch
from kgtool.codec.summary import ScanSummary
from kgtool.errors import DecodeError


def bytes_renderer(fmt: str) -> Callable[[Any], Any]:
    """``--bytes``: how key, value and header bytes are shown (``None`` stays ``None``)."""
    if fmt == "hex":
        return lambda b: None if b is None else bytes(b).hex()
    if fmt == "utf8":
        return lambda b: None if b is None else bytes(b).decode("utf-8", "replace")
    return lambda b: None if b is None else base64.b64encode(bytes(b)).decode("ascii")


def batch_json(b: RecordBatch) -> dict[str, Any]:
    """The ``batch`` object of the JSON Lines schema (Kafka's field names in snake_case)."""
    return {
        "position": b.position,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "batch_length": b.batch_length,
        "size_in_bytes": b.size_in_bytes,
        "partition_leader_epoch": b.partition_leader_epoch,
        "magic": b.magic,
        "crc": b.crc,
        "crc_valid": b.crc_valid,
        "attributes": b.attributes,
        "compression": b.compression,
        "timestamp_type": b.timestamp_type,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
        "last_offset_delta": b.last_offset_delta,
        "base_timestamp": b.base_timestamp,
        "max_timestamp": b.max_timestamp,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": b.last_sequence,
        "record_count": b.record_count if b.record_count is not None else len(b.records),
    }


def control_json(r: Record) -> dict | None:
    c = r.control
    if c is None:
        return None
    return {"type": c.type, "type_name": c.type_name, "version": c.version,
            "coordinator_epoch": c.coordinator_epoch}


def record_chunks(b: RecordBatch) -> Iterator[list[Record]]:
    """The records of a batch as lists: the list itself, or a RecordStream's chunks."""
    if isinstance(b.records, RecordStream):
        for k in range(b.records.chunks):
            yield b.records.chunk_records(k)
    else:
        yield b.records


def counted_records(total: ScanSummary, b: RecordBatch) -> Iterator[Record]:
    """The records of a batch, each chunk added to the run's counters as it is read (a big
    batch is decoded once)."""
    for records in record_chunks(b):
        total.add_records(records, None, b.position)
        yield from records


def decode_payload(run: Any, decoder: Any, r: Record, b: RecordBatch, source: str) -> tuple[Any, str | None]:
    """(decoded payload, None), (None, error text) when the decoder refused it, or (None, None)
    when no decoder applies. ``run``: the command's counters and problem lines."""
    if decoder is None or r.control is not None:
        return None, None
    try:
        return decoder(r.key, r.value), None
    except DecodeError as exc:
        run.total.payload_errors += 1
        run.payload_problem(f"{source}: batch@{b.position} offset {r.offset}: payload: {exc}")
        return None, str(exc)


# --- the table format: kafka-dump-log's lines -------------------------------------------------

def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _text(value: Any) -> str:
    """A key or value for people: ``null``; a string as is unless empty, padded or unprintable
    (then JSON-quoted, so that nothing hides); anything else as compact JSON."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return render.display_text(value, markup=False)
    return _compact(value)


def input_line(source: str, topic_partition: tuple[str, int] | None) -> str:
    """``Dumping FILE`` (DumpLogSegments' first line), with the topic and partition when known."""
    line = f"Dumping {source}"
    if topic_partition is not None:
        line += f" (topic {topic_partition[0]}, partition {topic_partition[1]})"
    return line


def batch_line(b: RecordBatch) -> str:
    """One line for a batch: where, which offsets, format, integrity, time, producer, flags."""
    count = b.record_count if b.record_count is not None else len(b.records)
    crc = "" if b.crc_valid is None else (" ok" if b.crc_valid else " BAD")
    parts = [
        f"batch@{b.position}",
        f"offsets {b.base_offset}..{b.last_offset}",
        f"{render.count(count)} record{'' if count == 1 else 's'}",
        f"magic {b.magic}",
        b.compression,
        f"{render.count(b.size_in_bytes)} bytes",
        f"crc 0x{b.crc:08x}{crc}",
        f"{b.timestamp_type} {render.iso_ms(b.max_timestamp)}",
    ]
    if b.producer_id >= 0:
        parts.append(f"producer {b.producer_id} epoch {b.producer_epoch} seq {b.base_sequence}")
    if b.partition_leader_epoch >= 0:
        parts.append(f"leader epoch {b.partition_leader_epoch}")
    if b.delete_horizon_ms is not None:
        parts.append(f"delete horizon {render.iso_ms(b.delete_horizon_ms)}")
    parts += [flag for flag, on in (("transactional", b.is_transactional), ("control", b.is_control)) if on]
    return "  ".join(parts)


def record_line(r: Record, shown_key: Any, shown_value: Any, payload: Any, error: str | None,
                headers: dict | None) -> str:
    """One line for a record: offset, time, then the decoded payload, or key and value."""
    head = f"| offset {r.offset}  {render.iso_ms(r.timestamp)}"
    c = r.control
    if c is not None:
        epoch = f", coordinator epoch {c.coordinator_epoch}" if c.coordinator_epoch is not None else ""
        return f"{head}  control: {c.type_name} (type {c.type}, version {c.version}{epoch})"
    if payload is not None:
        pj = payload.to_json()
        line = f"{head}  {pj.get('kind')}  key: {_text(pj.get('key'))}  value: {_text(pj.get('value'))}"
        if payload.tombstone:
            line += " (tombstone)"
        if payload.warnings:
            line += "  warnings: " + "; ".join(payload.warnings)
    else:
        line = f"{head}  key: {_text(shown_key)}  value: {_text(shown_value)}"
        if error is not None:
            line += f"  [payload error: {error}]"
    if headers:
        line += f"  headers: {_compact(headers)}"
    return line


# --- the writer -------------------------------------------------------------------------------

class Writer:
    """Writes batches and records as kafka-dump-log lines, JSON Lines or one JSON array, to stdout.

    ``run`` carries the counters (``total``), the ``--bytes`` renderer (``render_bytes``) and
    the problem lines of the command."""

    def __init__(self, fmt: render.OutputFormat, run: Any) -> None:
        self.fmt = fmt
        self.run = run
        self.json = render.JsonOut(fmt)
        self.seps = self.json.separators
        self.where: dict[str, Any] = {}
        #: ``Dumping FILE``, written with the input's first batch (or at its end).
        self.pending_line: str | None = None

    def begin_input(self, source: str, topic_partition: tuple[str, int] | None) -> None:
        """A new input starts (its topic and partition, when its directory names them)."""
        self.where = {} if topic_partition is None else {"topic": topic_partition[0], "partition": topic_partition[1]}
        if self.fmt is render.OutputFormat.table:
            self.pending_line = input_line(source, topic_partition)

    def end_input(self, shown: bool = True) -> None:
        """The input is done; ``shown=False``: it was no log segment, and prints nothing."""
        if shown:
            self._input_line()
        self.pending_line = None

    def _input_line(self) -> None:
        if self.pending_line is not None:
            sys.stdout.write(self.pending_line + "\n")
            self.pending_line = None

    def _head(self, source: str) -> dict[str, Any]:
        return {"source": source, **self.where}

    def _emit(self, obj: dict, batch_text: str | None = None, tail_text: str | None = None) -> None:
        text = json.dumps(obj, ensure_ascii=False, separators=self.seps)
        if batch_text is not None:
            # The batch object is the same for all its records: serialised once per batch.
            text = f"{text[:-1]}{self.seps[0]}\"batch\"{self.seps[1]}{batch_text}"
            # Keep the documented key order: ..., batch, payload.
            text += f"{self.seps[0]}{tail_text[1:]}" if tail_text is not None else "}"
        self.json.text(text)

    def close(self) -> None:
        if self.fmt is render.OutputFormat.json:
            self.json.close()

    def batch(self, source: str, b: RecordBatch, decoder: Any, batches_only: bool) -> None:
        run = self.run
        total = run.total
        if batches_only or not b.records:
            total.add_batch_records(b, None)
        if self.fmt is render.OutputFormat.table:
            self._input_line()
            self._lines(source, b, decoder, batches_only)
            return
        bj = batch_json(b)
        if batches_only:
            self._emit({**self._head(source), **bj})
            return
        rb = run.render_bytes
        batch_text = json.dumps(bj, ensure_ascii=False, separators=self.seps)
        head = self._head(source)
        for r in counted_records(total, b):
            obj = {
                **head,
                "position": b.position,
                "offset": r.offset,
                "timestamp": r.timestamp,
                "timestamp_type": b.timestamp_type,
                "sequence": r.sequence,
                "key": rb(r.key),
                "value": rb(r.value),
                "headers": [{"key": k, "value": rb(v)} for k, v in r.headers],
                "control": control_json(r),
            }
            rec, error = decode_payload(run, decoder, r, b, source)
            tail = None
            if rec is not None:
                tail = json.dumps({"payload": rec.to_json()}, ensure_ascii=False, separators=self.seps)
                if rec.warnings:
                    total.payload_warnings += len(rec.warnings)
            elif error is not None:
                tail = json.dumps({"payload_error": error}, ensure_ascii=False, separators=self.seps)
            self._emit(obj, batch_text, tail)

    def _lines(self, source: str, b: RecordBatch, decoder: Any, batches_only: bool) -> None:
        lines = [batch_line(b)]
        if not batches_only:
            run = self.run
            rb = run.render_bytes
            for r in counted_records(run.total, b):
                rec, error = decode_payload(run, decoder, r, b, source)
                if rec is not None and rec.warnings:
                    run.total.payload_warnings += len(rec.warnings)
                headers = {k: rb(v) for k, v in r.headers} if r.headers else None
                lines.append(record_line(r, rb(r.key), rb(r.value), rec, error, headers))
                if len(lines) >= 4096:  # a big batch streams out in bounded memory
                    sys.stdout.write("\n".join(lines) + "\n")
                    lines = []
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
