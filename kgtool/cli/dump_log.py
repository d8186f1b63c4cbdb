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
as one array) are the schema of ``kgtool.codec.lines`` (docs/reference/jsonl.md); ``topic`` and ``partition`` follow ``source`` when
the input's directory is a partition directory (``orders-3/``), as kcat ``-J`` gives them.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

from kgtool.cli import render
from kgtool.codec import batch as _batch
from kgtool.codec import lines
from kgtool.codec.batch import RecordStream
from kgtool.codec.model import Record, RecordBatch
from kgtool.codec.printer import BYTES_MODES, CHUNK_OUTPUT, JSON, JSONL, TEXT, PrintOptions, Printed
from kgtool.codec.summary import ScanSummary
from kgtool.errors import DecodeError


def bytes_renderer(fmt: str) -> Callable[[Any], Any]:
    """``--bytes``: how key, value and header bytes are shown (``None`` stays ``None``)."""
    if fmt == "hex":
        return lambda b: None if b is None else bytes(b).hex()
    if fmt == "utf8":
        return lambda b: None if b is None else bytes(b).decode("utf-8", "replace")
    return lambda b: None if b is None else base64.b64encode(bytes(b)).decode("ascii")


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


# --- the text format: kafka-dump-log --deep-iteration --print-data-log, line for line ------------

#: TimestampType.toString() (``TimestampType``'s names).
_TS_NAMES = {"CREATE_TIME": "CreateTime", "LOG_APPEND_TIME": "LogAppendTime", "NO_TIMESTAMP_TYPE": "NoTimestampType"}


def _jackson(obj: Any) -> str:
    """Compact JSON as Jackson's ``JsonNode.toString`` writes it: UTF-8 as is, control characters
    as ``\\u00XX`` with upper-case digits (json.dumps writes them lower-case)."""
    text = _compact(obj)
    if "\\u00" not in text:
        return text
    return _ESCAPE.sub(lambda m: "\\u" + m.group(0)[2:].upper() if m.group(0)[1] == "u" else m.group(0), text)


#: Every escape of json.dumps' output, left to right (so an escaped backslash is one token).
_ESCAPE = re.compile(r"\\(?:u00[0-9a-f]{2}|.)")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _kafka_names(obj: Any) -> Any:
    """The generated JsonConverters' field names (camelCase) for kgtool's decoded payloads."""
    if isinstance(obj, dict):
        return {_camel(k): _kafka_names(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_kafka_names(v) for v in obj]
    return obj


def text_input_lines(source: str) -> str:
    """``Dumping FILE`` and, for a segment named by its base offset, ``Log starting offset: N``."""
    name = os.path.basename(source)
    stem, dot, suffix = name.partition(".")
    if dot and suffix == "log" and stem.isdigit():
        return f"Dumping {source}\nLog starting offset: {int(stem)}"
    return f"Dumping {source}"


def text_batch_line(b: RecordBatch) -> str:
    """``DumpLogSegments.printBatchLevel``."""
    if b.magic >= 2:
        horizon = "OptionalLong.empty" if b.delete_horizon_ms is None else f"OptionalLong[{b.delete_horizon_ms}]"
        head = (f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
                f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
                f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
                f"isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)} "
                f"deleteHorizonMs: {horizon}")
    else:
        head = f"offset: {b.last_offset}"
    valid = "unchecked" if b.crc_valid is None else _bool(b.crc_valid)
    return (f"{head} position: {b.position} {_TS_NAMES[b.timestamp_type]}: {b.max_timestamp} "
            f"size: {b.size_in_bytes} magic: {b.magic} compresscodec: {b.compression} crc: {b.crc} isvalid: {valid}")


#: _dump.h's ts_labels
_TS_LABELS = {"CREATE_TIME": 0, "LOG_APPEND_TIME": 1, "NO_TIMESTAMP_TYPE": 2}


def _bool(v: bool) -> str:
    return "true" if v else "false"


def text_record_line(r: Record, b: RecordBatch, rendered_key: Any, rendered_value: Any, payload: Any,
                     error: str | None) -> str:
    """One ``|`` line of ``dumpLog``: the record's metadata, then (``--print-data-log``) its key and
    payload: the decoder's text (``OffsetsMessageParser``: ``{"type":..,"data":..}`` and
    ``{"version":..,"data":..}``, ``<DELETE>`` for a tombstone) or the bytes per ``--bytes``."""
    line = (f"| offset: {r.offset} {_TS_NAMES[b.timestamp_type]}: {r.timestamp} "
            f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)}")
    if b.magic >= 2:
        line += f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]"
    c = r.control
    if c is not None:
        if c.type_name in ("ABORT", "COMMIT"):
            return f"{line} endTxnMarker: {c.type_name} coordinatorEpoch: {c.coordinator_epoch}"
        return f"{line} controlType: {c.type_name}({c.type})"
    if error is not None:
        return f"{line} key: Error at offset {r.offset}, skipping. {error}"
    if payload is not None and hasattr(payload, "record_type"):
        pj = payload.to_json()
        if pj.get("raw_key") is not None or pj.get("kind") == "unknown":
            return f"{line} key: Unknown record type {pj.get('record_type')} at offset {r.offset}, skipping."
        key = _jackson({"type": str(pj["record_type"]), "data": _kafka_names(pj["key"])})
        value = "<DELETE>" if pj["value"] is None else _jackson(
            {"version": str(pj["value_version"]), "data": _kafka_names(pj["value"])})
        return f"{line} key: {key} payload: {value}"
    if payload is not None:  # utf8 / hex / base64
        rendered_key, rendered_value = payload.key, payload.value
    if rendered_key is not None:
        line += f" key: {rendered_key}"
    if rendered_value is not None:
        line += f" payload: {rendered_value}"
    return line


# --- the writer -------------------------------------------------------------------------------

class Writer:
    """Writes batches and records to stdout: kafka-dump-log-like lines for people (table), its
    exact layout (text), JSON Lines or one JSON array (the :mod:`kgtool.codec.lines` schema).

    ``run`` carries the counters (``total``), the ``--bytes`` renderer (``render_bytes``,
    ``bytes_fmt``) and the problem lines of the command. Batches come from the general path
    (:meth:`batch`) or already printed by the C walk (:meth:`printed`); with the C extension,
    the general path prints a v2 batch's records through it too (:meth:`record_sink`)."""

    def __init__(self, fmt: str, run: Any, verify_crc: bool = True) -> None:
        #: table, text, jsonl or json
        self.fmt = getattr(fmt, "value", fmt)
        self.run = run
        self.verify_crc = verify_crc
        self.json = render.JsonOut(render.OutputFormat.json if self.fmt == "json" else render.OutputFormat.jsonl)
        self.seps = self.json.separators
        self.head: dict[str, Any] = {}
        #: ``Dumping FILE``, written with the input's first batch (or at its end).
        self.pending_line: str | None = None
        self._options: PrintOptions | None = None
        #: The batch whose line the record sink printed (its records follow from the sink).
        self._sunk: RecordBatch | None = None
        self._decoder: Any = None
        #: Called before anything of a batch is written (the command shows held problems).
        self.before_output: Callable[[], None] = lambda: None

    # inputs

    def begin_input(self, source: str, topic_partition: tuple[str, int] | None) -> None:
        """A new input starts (its topic and partition, when its directory names them)."""
        self.head = {"source": source}
        if topic_partition is not None:
            self.head.update(topic=topic_partition[0], partition=topic_partition[1])
        if self.fmt == "table":
            self.pending_line = input_line(source, topic_partition)
        elif self.fmt == "text":
            self.pending_line = text_input_lines(source)
        self._options = None

    def end_input(self, shown: bool = True) -> None:
        """The input is done; ``shown=False``: it was no log segment, and prints nothing."""
        if shown:
            self._input_line()
        self.pending_line = None

    def _input_line(self) -> None:
        self.before_output()
        if self.pending_line is not None:
            sys.stdout.write(self.pending_line + "\n")
            self.pending_line = None

    def close(self) -> None:
        if self.fmt == "json":
            self.json.close()

    # the C walk

    def print_options(self, decoder: Any, offsets: bool, batches_only: bool) -> PrintOptions | None:
        """What the C walk prints for this input, or None when it prints nothing here (the table
        format, --batches-only, a payload decoder other than OffsetCommit's, text with --bytes
        other than utf8)."""
        self._decoder = decoder
        self._options = None
        if (batches_only or self.fmt == "table" or (decoder is not None and not offsets)
                or _batch.speedups() is None):
            return None
        bytes_fmt = self.run.bytes_fmt.value
        if self.fmt == "text":
            if bytes_fmt != "utf8":
                return None
            opts = PrintOptions(TEXT, BYTES_MODES[bytes_fmt], offsets, self.verify_crc, "", "", "", "", "")
        else:
            head = self.json.dumps({"type": lines.BATCH, **self.head})[:-1]
            pre, post = self.json.framing
            opts = PrintOptions(JSON if self.fmt == "json" else JSONL, BYTES_MODES[bytes_fmt], offsets, self.verify_crc,
                                self.seps[0], self.seps[1], pre, post, head)
        self._options = opts
        return opts

    def printed(self, chunk: Printed) -> None:
        """Batches the C walk printed."""
        self._input_line()
        total = self.run.total
        total.batches += chunk.batches
        total.bytes_decoded += chunk.size
        self._raw(chunk.text)

    def _raw(self, text: bytes) -> None:
        """Lines or items the C writer encoded (framed as :meth:`_item` frames them)."""
        if self.fmt == "text":
            if text:
                render.write_bytes(text)
        else:
            self.json.raw(text)

    def record_sink(self, buf, rstart: int, rend: int, count: int, base_offset: int, base_ts: int, lat,
                    b: RecordBatch) -> bool:
        """``decode_batch_v2``'s sink: a v2 batch's records (or a chunk of a big one) printed in C,
        one record at a time in Python where the C writer declines; the batch line first.

        Records handed over whole were not checked yet: the range is printed only when every
        record parses and they end exactly at ``rend``; otherwise nothing is written and False
        leaves them to the codec, which reports what is wrong."""
        opts = self._options
        if opts is None:
            return False
        dump = _batch.speedups().dump_records
        pieces: list = []  # output bytes, or (start, end) of a record for the Python writer
        pos, left = rstart, count
        while left:
            text, done, pos, declined = dump(buf, pos, rend, left, base_offset, base_ts, lat, b.base_sequence,
                                             b.position, opts.as_tuple(), 1 << 62)
            pieces.append(text)
            left -= done
            if not left:
                break
            if declined < 0:
                return False  # a record that does not parse
            pieces.append((pos, declined))
            pos, left = declined, left - 1
        if pos != rend:
            return False  # bytes after the last record
        out = []
        if self._sunk is not b:
            self._input_line()
            out.append(self._item(self._batch_text(b)))
            self._sunk = b
        for piece in pieces:
            if isinstance(piece, bytes):
                out.append(piece)
                continue
            tuples, err = _batch.decode_v2_records(buf, piece[0], piece[1], 1, base_offset, base_ts, b.base_sequence, lat)
            if err is not None:  # pragma: no cover - dump_records parsed it
                return False
            out.extend(self._item(t) for t in self._record_texts(b, [Record(*tuples[0])]))
        self._raw(b"".join(out))
        self.run.total.records += count
        return True

    def _item(self, text: str) -> bytes:
        """One item as the C walk writes it (framed as JsonOut frames items, or a text line)."""
        if self.fmt == "text":
            return (text + "\n").encode("utf-8")
        pre, post = self.json.framing
        return (pre + text + post).encode("utf-8")

    # the general path

    def batch(self, source: str, b: RecordBatch, decoder: Any, batches_only: bool) -> None:
        """A batch from the general path: its line, then its records (unless the sink printed them)."""
        run = self.run
        if batches_only or not b.records:
            run.total.add_batch_records(b, None)
        if self._sunk is b:
            self._sunk = None
            return
        self._decoder = decoder
        self._input_line()
        if self.fmt == "table":
            self._lines(source, b, decoder, batches_only)
            return
        self._batch_line(b)
        if batches_only:
            return
        if isinstance(b.records, RecordStream) and not b.is_control and self._options is not None:
            # A big batch's chunks as the codec's field tuples, printed in C (no Record built).
            for k in range(b.records.chunks):
                tuples = b.records.chunk_tuples(k)
                run.total.records += len(tuples)
                self._tuples(b, tuples)
            return
        for records in record_chunks(b):
            run.total.records += len(records)
            self._records(b, records)

    def _tuples(self, b: RecordBatch, tuples: list[tuple]) -> None:
        dump = _batch.speedups().dump_tuples
        opts = self._options.as_tuple()
        label = _TS_LABELS[b.timestamp_type]
        k, n = 0, len(tuples)
        while k < n:
            text, j = dump(tuples, k, b.position, b.magic, label, opts, CHUNK_OUTPUT)
            self._raw(text)
            if j == k:  # the C writer declines this one: the Python writer prints it
                self._records(b, [Record(*tuples[k])])
                j += 1
            k = j

    def _batch_text(self, b: RecordBatch) -> str:
        if self.fmt == "text":
            return text_batch_line(b)
        return self.json.dumps(lines.batch_object(b, self.head))

    def _batch_line(self, b: RecordBatch) -> None:
        self._texts([self._batch_text(b)])

    def _record_texts(self, b: RecordBatch, records: list[Record]) -> Iterator[str]:
        run = self.run
        rb = run.render_bytes
        source = self.head.get("source", "")
        text = self.fmt == "text"
        for r in records:
            rec, error = decode_payload(run, self._decoder, r, b, source)
            if rec is not None and rec.warnings:
                run.total.payload_warnings += len(rec.warnings)
            if text:
                yield text_record_line(r, b, rb(r.key), rb(r.value), rec, error)
            else:
                yield self.json.dumps(lines.record_object(r, b.position, rb, None if rec is None else rec.to_json(),
                                                          error))

    def _records(self, b: RecordBatch, records: list[Record]) -> None:
        out: list[str] = []
        for text in self._record_texts(b, records):
            out.append(text)
            if len(out) >= 4096:  # a big batch streams out in bounded memory
                self._texts(out)
                out = []
        self._texts(out)

    def _texts(self, texts: list[str]) -> None:
        if self.fmt == "text":
            if texts:
                sys.stdout.write("\n".join(texts) + "\n")
        else:
            self.json.texts(texts)

    def file_row(self, obj: dict) -> None:
        """A row of a partition directory's other files (--files)."""
        self.json.item(obj)

    def more_records(self, b: RecordBatch, records: list[Record]) -> None:
        """More records of a batch whose line is out already (a --from-offset window)."""
        if self.fmt == "table":
            self._lines(self.head.get("source", ""), dataclasses.replace(b, records=records), self._decoder, False,
                        with_batch=False)
            return
        self.run.total.records += len(records)
        self._records(b, records)

    def _lines(self, source: str, b: RecordBatch, decoder: Any, batches_only: bool, with_batch: bool = True) -> None:
        out = [batch_line(b)] if with_batch else []
        if not batches_only:
            run = self.run
            rb = run.render_bytes
            for r in counted_records(run.total, b):
                rec, error = decode_payload(run, decoder, r, b, source)
                if rec is not None and rec.warnings:
                    run.total.payload_warnings += len(rec.warnings)
                headers = {k: rb(v) for k, v in r.headers} if r.headers else None
                out.append(record_line(r, rb(r.key), rb(r.value), rec, error, headers))
                if len(out) >= 4096:  # a big batch streams out in bounded memory
                    sys.stdout.write("\n".join(out) + "\n")
                    out = []
        if out:
            sys.stdout.write("\n".join(out) + "\n")
