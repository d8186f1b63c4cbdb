"""``kgtool decode-batch``: decode Kafka log segments (record batches) exactly, with damage shown."""

from __future__ import annotations

import dataclasses
import enum
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

import typer

from kgtool.cli import dump_log, render
from kgtool.codec.batch import out_of_memory
from kgtool.codec.printer import Printed, scan_for_print
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.report import MAX_PROBLEM_LINES, ProblemReporter
from kgtool.codec.legacy import RECORD_OVERHEAD_V0
from kgtool.codec.segment import DEFAULT_MAX_MESSAGE_SIZE, open_segment, scan_segment
from kgtool.codec.summary import ScanSummary, summarize_segment
from kgtool.coordinator.payloads import DecodeMode, PayloadDecoders, auto_mode
from kgtool.errors import FindingsReported, UsageError
from kgtool.inputs import STDIN, read_bytes
from kgtool.storage.files import segment_inputs, split_inputs, topic_partition_of_dir

HELP = """Decode Kafka log segments: record batches (magic 0, 1, 2), every codec, control markers.

Reads segment files (NNNNNNNNNNNNNNNNNNNN.log), partition directories (every *.log inside, in
name order), '-' (stdin) or --hex bytes. Verifies CRCs, decompresses, decodes records and, with
--decode (automatic inside __consumer_offsets-N / __transaction_state-N /
__share_group_state-N directories), their payloads. Damage (CRC mismatch, malformed batch, corrupt header) is reported with file, byte
position and reason, and decoding goes on with the next batch; a truncated tail (an active
segment) is reported but is an error only with --strict. A partial entry at the end is a
truncated tail only if its header is one Kafka writes (a length up to --max-message-size, magic
0-2); otherwise it is damage. Index, snapshot and checkpoint files decode too (--files: all of
a directory's); --verify checks them against the log; --from-offset and --from-time seek with
them as the broker does. Exit 0: clean, or only a truncated tail; 1: damage reported; 2:
usage or input error.
"""


class BytesFormat(str, enum.Enum):
    base64 = "base64"
    hex = "hex"
    utf8 = "utf8"


class DumpFormat(str, enum.Enum):
    """decode-batch's ``--format``: the common three, and kafka-dump-log's own text layout."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    text = "text"

    def common(self) -> render.OutputFormat:
        """The format of the tables the other modes print (summary, verify): text's is table."""
        return render.OutputFormat.table if self is DumpFormat.text else render.OutputFormat(self.value)


#: Progress bars appear above this many bytes of input (and only on a terminal).
_PROGRESS_MIN_BYTES = 64 * 1024 * 1024


@dataclass
class _Input:
    name: str
    data: Any
    auto_mode: DecodeMode
    #: The (topic, partition) of the partition directory holding the file, when named so.
    topic_partition: Optional[tuple[str, int]] = None


# --- inputs -----------------------------------------------------------------------------------

def _collect_inputs(paths: list[str], hex_text: Optional[str]) -> Iterator[_Input]:
    if hex_text is not None:
        cleaned = re.sub(r"\s+", "", hex_text)
        if cleaned.lower().startswith("0x"):
            cleaned = cleaned[2:]
        try:
            data = bytes.fromhex(cleaned)
        except ValueError:
            raise UsageError("--hex: not a hexadecimal string (pairs of 0-9a-f, blanks allowed)") from None
        yield _Input("<hex>", data, DecodeMode.none)
    stdin_used = False
    for p in paths:
        if p == STDIN:
            if stdin_used:
                raise UsageError("'-' (stdin) given more than once")
            stdin_used = True
            yield _Input("<stdin>", read_bytes(STDIN), DecodeMode.none)
        else:
            for full in segment_inputs(p):
                data, _ = open_segment(full)
                yield _Input(full, data, auto_mode(full), _topic_partition(full))


def _topic_partition(path: str) -> Optional[tuple[str, int]]:
    return topic_partition_of_dir(os.path.basename(os.path.dirname(os.path.abspath(path))))


class _Run(ProblemReporter):
    """State of one command run: counters, problem lines, the payload decoder."""

    def __init__(self, mode: DecodeMode, fmt: BytesFormat, strict: bool) -> None:
        super().__init__(render.warn, strict)
        self.bytes_fmt = fmt
        self.render_bytes = dump_log.bytes_renderer(fmt.value)
        self.decoders = PayloadDecoders(mode)

    def decoder_for(self, inp: _Input):
        return self.decoders.of(inp.auto_mode)


# --- the command ------------------------------------------------------------------------------

def command(
    inputs: Optional[list[str]] = typer.Argument(
        None,
        metavar="[INPUT]...",
        help="Segment files (*.log), partition directories (all *.log inside, in order), or '-' "
        "for stdin.",
        show_default=False,
    ),
    hex_text: Optional[str] = typer.Option(
        None, "--hex", metavar="HEX", help="Decode these bytes, given as hexadecimal (blanks allowed).",
        show_default=False,
    ),
    start_position: int = typer.Option(
        0, "--start-position", metavar="BYTES", min=0,
        help="Start at this byte position of each input (a batch boundary, e.g. from the offset index).",
    ),
    max_bytes: Optional[int] = typer.Option(
        None, "--max-bytes", metavar="BYTES", min=1,
        help="Decode only batches that start within this many bytes after the start position.",
        show_default=False,
    ),
    decode: DecodeMode = typer.Option(
        DecodeMode.auto, "--decode", case_sensitive=False, metavar="DECODER",
        help="Payload decoder: offsets (__consumer_offsets), txn (__transaction_state), share-state "
        "(__share_group_state), utf8, hex, base64, none. auto: offsets/txn/share-state inside "
        "__consumer_offsets-N/__transaction_state-N/__share_group_state-N directories, else none.",
    ),
    output_format: DumpFormat = typer.Option(
        DumpFormat.table, "--format", case_sensitive=False,
        help="table (for people), json (the objects of jsonl in one array), jsonl (a batch line, then "
        "one line per record; one line per batch with --batches-only; the schema is in docs/reference/jsonl.md), "
        "text (kafka-dump-log.sh --deep-iteration --print-data-log's layout, line for line).",
    ),
    bytes_format: Optional[BytesFormat] = typer.Option(
        None, "--bytes", case_sensitive=False,
        help="How keys, values and header values are shown: base64, hex, or utf8 (invalid "
        "sequences become U+FFFD). Default: utf8 for --format text (kafka-dump-log's "
        "StringDecoder), base64 otherwise.", show_default=False,
    ),
    batches_only: bool = typer.Option(False, "--batches-only", help="One object (row) per batch, no records."),
    summary: bool = typer.Option(
        False, "--summary",
        help="Decode everything (CRC, decompression, records, payloads) but print only the summary: "
        "bytes decoded/skipped/truncated, batches, records, CRC failures, compression mix, "
        "offsets and time range, producers, control markers, payload kinds, problems.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="A truncated tail (or zero padding) is an error too (exit 1)."
    ),
    no_crc: bool = typer.Option(False, "--no-verify-crc", help="Do not verify CRCs (crc_valid is null)."),
    max_message_size: int = typer.Option(
        DEFAULT_MAX_MESSAGE_SIZE, "--max-message-size", metavar="BYTES", min=RECORD_OVERHEAD_V0,
        help="The largest entry length believed without a CRC (DumpLogSegments' option of that name, "
        "same default): a partial entry at the end claiming more is damage, not a truncated tail, "
        "and resynchronisation lands only on batches up to it. Raise it with the topic's "
        "max.message.bytes.",
    ),
    files: bool = typer.Option(
        False, "--files",
        help="With a partition directory, decode its other files too: .index, .timeindex, .txnindex, "
        ".snapshot, leader-epoch-checkpoint, partition.metadata (each also decodes when given by name).",
    ),
    verify: bool = typer.Option(
        False, "--verify",
        help="Check a partition directory's (or a segment's) indexes, transaction index, producer "
        "snapshots and leader-epoch-checkpoint against its log; one row per mismatch (kind, file, "
        "entry, expected, found); exit 1 when there is any.",
    ),
    from_offset: Optional[int] = typer.Option(
        None, "--from-offset", metavar="OFFSET", min=0,
        help="Start at the record with this offset, found as the broker does: segment file names, the "
        ".index, then a scan of at most one index interval (one directory or segment).",
        show_default=False,
    ),
    from_time: Optional[str] = typer.Option(
        None, "--from-time", metavar="TIME",
        help="Start at the first record whose timestamp is at least TIME (ISO-8601, or epoch "
        "milliseconds), with ListOffsets semantics: the first segment whose largest timestamp is at "
        "least TIME, its .timeindex, then a scan (one directory or segment).",
        show_default=False,
    ),
    count: Optional[int] = typer.Option(
        None, "--count", metavar="N", min=1, help="Stop after N records.", show_default=False,
    ),
) -> None:
    paths = list(inputs or [])
    if not paths and hex_text is None:
        raise UsageError("no input: give segment files, partition directories, '-' (stdin) or --hex")
    if summary and batches_only:
        raise UsageError("--summary and --batches-only are exclusive")
    if bytes_format is None:
        bytes_format = BytesFormat.utf8 if output_format is DumpFormat.text else BytesFormat.base64
    run = _Run(decode, bytes_format, strict)
    paths, storage_files = split_inputs(paths, files, summary)
    if verify:
        _verify_command(paths + storage_files, output_format.common())
        return
    if from_offset is not None or from_time is not None or count is not None:
        _seek_command(run, paths, hex_text, from_offset, from_time, count, output_format, batches_only,
                      not no_crc, max_message_size, summary or bool(storage_files))
        return
    progress = _ByteProgress.maybe()
    summaries: list[ScanSummary] = []
    writer = dump_log.Writer(output_format, run, verify_crc=not no_crc)
    try:
        for inp in _collect_inputs(paths, hex_text):
            start = start_position
            end = None if max_bytes is None else start + max_bytes
            if start > len(inp.data):
                raise UsageError(f"--start-position {start} is past the end of {inp.name} ({len(inp.data)} bytes)")
            decoder, fast = run.decoder_for(inp)
            if progress is not None:
                progress.begin(inp.name, (end if end is not None else len(inp.data)) - start, start)
            if summary:
                s = summarize_segment(
                    inp.data, source=inp.name, start=start, end=end, chain_from=start,
                    verify_crc=not no_crc, payload=decoder, fast_offsets=fast,
                    progress=progress.update if progress is not None else None,
                    max_message_size=max_message_size,
                )
                summaries.append(s)
                run.total.merge(s)
                run.end_input(inp.name, inp.data, start, end, s.batches, s.problems)
                for m in s.payload_messages[:MAX_PROBLEM_LINES]:
                    run.line(f"{inp.name}: {m}")
                continue
            writer.begin_input(inp.name, inp.topic_partition)
            # An input's problems wait for its first batch: if none comes, the input is no
            # log segment, said in one line (ProblemReporter.end_input).
            held: list[ScanProblem] = []

            def show_held() -> None:
                for p in held:
                    run.show(p)
                held.clear()

            # Problems before the first batch go out before anything of it (its payload lines too).
            writer.before_output = show_held
            batches = 0
            options = writer.print_options(decoder, fast is not None, batches_only)
            for item in scan_for_print(inp.data, source=inp.name, start=start, end=end, verify_crc=not no_crc,
                                       max_message_size=max_message_size, options=options,
                                       record_sink=writer.record_sink if options is not None else None):
                if isinstance(item, Printed):
                    show_held()
                    batches += item.batches
                    writer.printed(item)
                    if progress is not None:
                        progress.update(item.end_position)
                    continue
                if isinstance(item, ScanProblem):
                    if batches:
                        run.problem(item)
                    else:
                        run.total.add_problem(item)
                        held.append(item)
                    continue
                show_held()
                batches += 1
                run.total.add_batch_header(item)
                try:
                    writer.batch(inp.name, item, decoder, batches_only)
                except MemoryError:
                    raise out_of_memory(inp.name, item.position, "print its records") from None
                if progress is not None:
                    progress.update(item.end_position)
            writer.before_output = _nothing  # held problems are end_input's now
            writer.end_input(run.end_input(inp.name, inp.data, start, end, batches, held) if not batches else True)
        if progress is not None:
            # Gone before the results: a bar left on screen would sit frozen above them.
            progress.stop()
        run.refuse_if_nothing_decoded()
        for path in storage_files:
            _decode_storage_file(run, writer, path)
        if summary:
            _print_summaries(summaries, run.total, output_format.common(),
                             _overviews(run, paths, summaries) if hex_text is None else [])
        else:
            writer.close()
    except BrokenPipeError:
        _stdout_closed()
        return
    finally:
        if progress is not None:
            progress.stop()
    run.finish()


def _nothing() -> None:
    pass


class _ByteProgress:
    """A Rich progress bar on stderr for large inputs, whenever stderr is a terminal (output
    redirected to a file still shows that the run goes on). Transient: stopped, it leaves
    nothing on screen."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        # Lines written to stdout pass above the bar only when stdout is that terminal too;
        # redirected, stdout must stay untouched (Rich would otherwise route it to stderr).
        on_terminal = sys.stdout.isatty()
        self.p = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                          TimeRemainingColumn(), console=render.err(), transient=True,
                          redirect_stdout=on_terminal, redirect_stderr=False)
        self.task = None
        self.started = False
        self.origin = 0
        self.total = 0

    @classmethod
    def maybe(cls) -> Optional[_ByteProgress]:
        if not sys.stderr.isatty():
            return None
        return cls()

    def begin(self, name: str, total: int, origin: int) -> None:
        if self.task is not None:
            self.p.remove_task(self.task)
            self.task = None
        self.origin = origin
        if total < _PROGRESS_MIN_BYTES:
            return
        if not self.started:
            self.p.start()
            self.started = True
        self.total = total
        self.task = self.p.add_task(os.path.basename(name), total=total)

    def update(self, position: int) -> None:
        if self.task is not None:
            # The last batch may end past --max-bytes: the bar stops at its total.
            self.p.update(self.task, completed=min(position - self.origin, self.total))

    def stop(self) -> None:
        if self.started:
            self.p.stop()
            self.started = False


def _print_summaries(summaries: list[ScanSummary], total: ScanSummary, fmt: render.OutputFormat,
                     overviews: list | None = None) -> None:
    overviews = overviews or []
    if fmt is render.OutputFormat.jsonl:
        render.write_json_lines(s.to_json() for s in summaries)
        render.write_json_lines({"partition_directory": ov.to_json()} for ov in overviews)
        return
    if fmt is render.OutputFormat.json:
        doc = {"inputs": [s.to_json() for s in summaries]}
        if len(summaries) > 1:
            t = total.to_json()
            t["source"] = None
            doc["total"] = t
        if overviews:
            doc["partition_directories"] = [ov.to_json() for ov in overviews]
        render.print_json(doc)
        return
    items = list(summaries)
    if len(summaries) > 1:
        items.append(total)
    for s in items:
        j = s.to_json()
        title = f"summary of {s.source}" if s.source else "summary of all inputs"
        c = render.count
        b = j["bytes"]
        p = j["payload"]
        rows = [
            ["bytes", f"{c(b['total'])} total: {c(b['decoded'])} decoded, {c(b['skipped'])} skipped, "
                      f"{c(b['truncated'])} truncated"],
            ["batches", c(j["batches"])],
            ["records", f"{c(j['records'])} ({c(j['control_records'])} control)"],
            ["crc failures", c(j["crc_failures"])],
            ["compression", _mix(j["compression"])],
            ["magic", _mix(j["magic"])],
            ["offsets", render.MISSING if j["first_offset"] is None else f"{j['first_offset']}..{j['last_offset']}"],
            ["timestamps", render.MISSING if j["min_timestamp"] is None
             else f"{render.iso_ms(j['min_timestamp'])} .. {render.iso_ms(j['max_timestamp'])}"],
            ["producers", f"{c(j['producers'])} ({c(j['transactional_batches'])} transactional batches)"],
            ["control markers", _mix(j["control_markers"])],
            ["keys / values", f"{c(j['key_bytes'])} / {c(j['value_bytes'])} bytes; {c(j['null_keys'])} null keys, "
                              f"{c(j['null_values'])} null values"],
            ["payloads", _mix(p["kinds"]) + f"; {c(p['tombstones'])} tombstones, {c(p['warnings'])} warnings, "
                         f"{c(p['errors'])} errors"],
            ["problems", _mix(j["problems"])],
        ]
        render.print_table(["", "value"], rows, title=title)
    for ov in overviews:
        _print_overview_table(ov)


def _mix(d: dict) -> str:
    return ", ".join(f"{k}: {render.count(v)}" for k, v in d.items()) or "none"



def _stdout_closed() -> None:
    """Output piped into `head` and closed: stop quietly, what was written is fine (later
    writes, and the interpreter's final flush, go nowhere)."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    except OSError:
        pass


# --- the other files of a partition directory (kgtool.storage): decode, verify, seek, overview --

def _show(v: Any) -> str:
    """A table cell of the storage files: absent values as every table shows them."""
    return render.MISSING if v is None else str(v)


def _decode_storage_file(run: _Run, writer: dump_log.Writer, path: str) -> None:
    from kgtool.storage.decode import decode_file

    f = decode_file(path)
    if writer.fmt in ("table", "text"):
        rows: list[list[str]] = []
        for row in f.rows():
            rows.append([_show(row.get(c)) for c in f.columns])
            if len(rows) == 10000:  # a long file prints as consecutive tables, never held whole
                render.print_table(list(f.columns), rows, title=f"{path} ({f.kind.value})")
                rows = []
        if rows or not f.problems.count:
            render.print_table(list(f.columns), rows, title=f"{path} ({f.kind.value})")
    else:
        for row in f.rows():
            writer.file_row({"source": path, "kind": f.kind.value, **row})
    for p in f.problems.items:
        run.problem(p)
    if f.problems.count > len(f.problems.items):
        run.total.problem_counts["malformed"] += f.problems.count - len(f.problems.items)
    for note in f.notes:
        render.info(note)


def _verify_command(paths: list[str], fmt: render.OutputFormat) -> None:
    from kgtool.storage.verify import verify_paths

    report = verify_paths(paths)
    rows, count, notes, checked = report.rows, report.count, report.notes, report.checked
    objs = [{"kind": m.kind, "file": m.file, "entry": m.entry, "expected": m.expected, "found": m.found} for m in rows]
    if fmt is render.OutputFormat.jsonl:
        render.write_json_lines(objs)
    elif fmt is render.OutputFormat.json:
        render.print_json(objs)
    elif objs:
        render.print_table(["kind", "file", ("entry", "right"), "expected", "found"],
                           [[o["kind"], o["file"], _show(o["entry"]), o["expected"], o["found"]] for o in objs],
                           title="verify: mismatches")
    for text, n in sorted(notes.items()):
        render.info(f"note: {text}" + (f" ({n})" if n > 1 else ""))
    render.info("verify: checked " + (", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(checked.items()))
                                      or "nothing") + f"; {count} mismatches")
    if count:
        raise FindingsReported(f"verify: {count} mismatches" + (f" ({len(rows)} shown)" if len(rows) < count else ""))


def _seek_command(run: _Run, paths: list[str], hex_text: Optional[str], from_offset: Optional[int],
                  from_time: Optional[str], count: Optional[int], fmt: DumpFormat, batches_only: bool,
                  verify_crc: bool, max_message_size: int, refused: bool) -> None:
    from kgtool.storage.seek import plan

    segments, res = plan(paths, from_offset=from_offset, from_time=from_time, refused=refused,
                         hex_text=hex_text is not None)
    for note in res.notes:
        render.warn(note)
    writer = dump_log.Writer(fmt, run, verify_crc=verify_crc)
    left = count
    try:
        if res.segment is None:
            render.info("no record at or after " + (f"offset {from_offset}" if from_offset is not None
                                                    else f"time {from_time}"))
        for k in range(res.segment if res.segment is not None else len(segments), len(segments)):
            seg = segments[k]
            data, _ = open_segment(seg.log)
            start = res.position if k == res.segment else 0
            decoder, _fast = run.decoder_for(_Input(seg.log, data, auto_mode(seg.log)))
            for item in scan_segment(data, source=seg.log, start=start, chain_from=start, verify_crc=verify_crc,
                                     max_message_size=max_message_size):
                if isinstance(item, ScanProblem):
                    run.problem(item)
                    continue
                if item.last_offset < res.offset:
                    continue
                run.total.add_batch_header(item)
                left = _write_window(writer, seg.log, item, decoder, batches_only, res.offset, left)
                if left == 0:
                    break
            if left == 0:
                break
        writer.close()
    except BrokenPipeError:
        _stdout_closed()
        return
    run.finish()


def _write_window(writer: dump_log.Writer, source: str, b: RecordBatch, decoder, batches_only: bool, min_offset: int,
                  left: Optional[int]) -> Optional[int]:
    """Write batch ``b`` keeping only records at or after ``min_offset``, at most ``left``
    (None: all); returns what is left (batches count with --batches-only)."""
    if batches_only:
        writer.batch(source, b, decoder, True)
        return None if left is None else left - 1
    first = True
    for records in dump_log.record_chunks(b):
        keep = [r for r in records if r.offset >= min_offset]
        if left is not None:
            keep = keep[:left]
            left -= len(keep)
        if first and (keep or not records):
            writer.batch(source, dataclasses.replace(b, records=keep), decoder, False)
            first = False
        elif keep:
            writer.more_records(b, keep)  # the batch's line is out already
        if left == 0:
            break
    return left


def _overviews(run: _Run, paths: list[str], summaries: list[ScanSummary]) -> list:
    from kgtool.storage.overview import overviews

    out = overviews(paths, summaries)
    for ov in out:
        for prob in ov.problems:
            run.problem(prob)
    return out


def _print_overview_table(ov) -> None:
    title = f"partition directory {ov.directory}"
    render.print_table(
        [("base offset", "right"), ("size", "right"), "offsets", "timestamps", "active", ("index", "right"),
         ("timeindex", "right")],
        [[str(s.base_offset), render.count(s.size), render.MISSING if s.first_offset is None else f"{s.first_offset}..{s.last_offset}",
          render.MISSING if s.first_timestamp is None else f"{render.iso_ms(s.first_timestamp)} .. {render.iso_ms(s.last_timestamp)}",
          ("active" + (" (untrimmed indexes)" if s.untrimmed else "")) if s.active
          else ("untrimmed indexes" if s.untrimmed else ""),
          _show(s.index_entries), _show(s.time_index_entries)] for s in ov.segments],
        title=title)
    facts = [["topic", f"{_show(ov.topic)} partition {_show(ov.partition)}"], ["topic id", _show(ov.topic_id)],
             ["log end offset", _show(ov.log_end_offset)],
             ["high watermark", _show(ov.high_watermark) + ("" if ov.high_watermark is not None
                                                            else " (no replication-offset-checkpoint one level up)")],
             ["log start offset", _show(ov.log_start_offset)], ["recovery point", _show(ov.recovery_point)],
             ["leader epochs", ", ".join(f"{e['epoch']} from {e['start_offset']}" for e in ov.leader_epochs) or render.MISSING],
             ["aborted transactions", render.count(ov.aborted_transaction_count)],
             ["producers", f"{render.count(ov.producer_count)} in {_show(ov.snapshot and os.path.basename(ov.snapshot))}"]]
    render.print_table(["", "value"], facts, title=f"{title}: files")
    shown = 50
    if ov.aborted_transactions:
        render.print_table(["producer_id", "first_offset", "last_offset", "last_stable_offset"],
                           [[str(t[c]) for c in ("producer_id", "first_offset", "last_offset", "last_stable_offset")]
                            for t in ov.aborted_transactions[:shown]], title="aborted transactions",
                           caption=None if ov.aborted_transaction_count <= shown
                           else f"first {shown} of {ov.aborted_transaction_count}")
    if ov.producers:
        cols = ["producer_id", "producer_epoch", "last_sequence", "last_offset", "timestamp", "coordinator_epoch",
                "current_txn_first_offset"]
        render.print_table(cols, [[str(pr[c]) for c in cols] for pr in ov.producers[:shown]],
                           title=f"producers in {os.path.basename(ov.snapshot)}",
                           caption=None if ov.producer_count <= shown else f"first {shown} of {ov.producer_count}")

MAN_SECTIONS: dict[str, str] = {
    "FORMATS": (
        "kgtool decode-batch reads Kafka log segments offline and prints every batch and record "
        "exactly as Kafka's own readers (FileRecords, DefaultRecordBatch, LegacyRecord) see them: "
        "record batches v2 (all header fields and attribute bits, CRC-32C), legacy message sets "
        "v0/v1 (CRC-32, compressed wrappers, relative offsets, LogAppendTime), gzip, snappy "
        "(xerial framing and raw blocks), lz4 (including the pre-0.10 broken header checksum of "
        "magic 0) and zstd, and control batches (COMMIT/ABORT markers). Payloads of "
        "__consumer_offsets, __transaction_state and __share_group_state are decoded with --decode "
        "offsets|txn|share-state, automatically inside __consumer_offsets-N, __transaction_state-N "
        "and __share_group_state-N directories, with the record layouts of Kafka 4.0 to 4.4."
    ),
    "OUTPUT": (
        "--format table (the default) prints what kafka-dump-log.sh --print-data-log prints: a "
        "'Dumping FILE' line per input (with the topic and partition when its directory names "
        "them), one line per batch (position, offsets, record count, magic, codec, size, CRC, "
        "timestamp type and maximum timestamp, producer, leader epoch, flags), then one line per "
        "record beginning with '|': offset, timestamp, and the decoded payload (kind, key, value) "
        "or the key and value per --bytes, headers, or the control marker. Times are ISO-8601 "
        "UTC, sizes have thousands separators, and nothing is cut short.\n\n"
        "--format text prints kafka-dump-log.sh --deep-iteration --print-data-log's layout line for "
        "line (DumpLogSegments): 'Dumping FILE', 'Log starting offset: N', one 'baseOffset: ... "
        "isvalid: true' line per batch and one '| offset: N CreateTime: T keySize: K valueSize: V "
        "sequence: S headerKeys: [..] key: .. payload: ..' line per record; keys and values as UTF-8 "
        "text (StringDecoder) unless --bytes says otherwise, and with --decode offsets the key and "
        "value as OffsetsMessageParser prints them ({\"type\":\"1\",\"data\":{..}}, "
        "{\"version\":\"3\",\"data\":{..}} with Kafka's field names, <DELETE> for a tombstone). "
        "Legacy records omit kafka-dump-log's per-message isValid/crc.\n\n"
        "--format jsonl prints a batch line, {\"type\": \"batch\", source, topic and partition (only "
        "when the input's directory is a partition directory, TOPIC-PARTITION, as kcat -J gives them), "
        "position, base_offset, last_offset, batch_length, size_in_bytes, partition_leader_epoch, "
        "magic, crc, crc_valid, attributes, compression, timestamp_type, is_transactional, "
        "is_control, delete_horizon_ms, last_offset_delta, base_timestamp, max_timestamp, "
        "producer_id, producer_epoch, base_sequence, last_sequence, record_count}, then one line per "
        "record: {\"type\": \"record\", position (its batch's byte position, the position of the "
        "batch line it follows), offset, timestamp (LogAppendTime applied), key, value (per --bytes: "
        "base64, hex or utf8; null stays null), headers ([{key, value}])}, plus control ({type, "
        "type_name, version, coordinator_epoch}) for the records of control batches, and payload "
        "(the decoded key and value: record_type, kind, tombstone, key, value_version, value; "
        "warnings only when there are some; raw_key and raw_value for an unknown record type) when a "
        "payload decoder applies, or payload_error when it failed. The schema is declared in "
        "kgtool/codec/lines.py and tabled in docs/reference/jsonl.md. With --batches-only: the batch lines only. "
        "Legacy (magic 0/1) batches carry Kafka's defaults for fields their format lacks "
        "(producer_id -1, partition_leader_epoch -1; last_offset_delta and base_timestamp null). "
        "--format json prints the same objects in one array. With --summary: one object per input "
        "(jsonl) or {inputs, total} (json). Records are printed by the C extension at the speed they "
        "decode (the pure-Python writer prints the same bytes)."
    ),
    "DIAGNOSTICS": (
        "Problems go to stderr, one line each, with file, byte position, structure path and "
        "reason, e.g. 'seg.log: byte 96 (batch@79.crc): stored crc 0x3a30e034 != computed "
        "0xf1669b91; batch@79 (70 bytes) skipped'. A file in which nothing parses as a record batch "
        "is said to be no Kafka log segment, naming its first bytes. Above 64 MB of input, a "
        "progress bar shows on stderr whenever stderr is a terminal; it is cleared before the "
        "results. Exit status 0: everything decoded (a "
        "truncated tail is reported on stderr but is not an error). "
        "1: something was reported: a CRC mismatch, a malformed or corrupt batch, a payload that "
        "does not decode, or, with --strict, a truncated tail or zero padding. 2: usage or input "
        "error (missing file, bad --hex, bad option, or no input is a log segment at all: nothing "
        "in any of them decodes). A partial entry at the end is a truncated "
        "tail only when its header is one Kafka writes, checked in the order of Kafka's "
        "ByteBufferLogInputStream: a length of at least 14 and at most --max-message-size, magic "
        "0, 1 or 2, a non-negative offset, and (when present) a known codec, no unused attribute "
        "bits, a v2 partition leader epoch of at least -1 and a non-negative record count; "
        "anything else running past the end (random bytes claiming a 900 MB batch) is corrupt."
    ),
    "PARTITION DIRECTORIES": (
        "Besides segments, decode-batch decodes every other file of a partition directory, given by "
        "name or, for a whole directory, with --files: .index (OffsetIndex: offset, position), .timeindex "
        "(TimeIndex: timestamp, offset), .txnindex (AbortedTxn: version, producer_id, first_offset, "
        "last_offset, last_stable_offset), .snapshot (the producer state: version 1, CRC-32C, one row per "
        "producer), leader-epoch-checkpoint (epoch, start_offset), partition.metadata (version, topic_id) "
        "and the broker's offset checkpoint files (replication-offset-checkpoint and the others: topic, "
        "partition, offset). An active segment's index is preallocated (segment.index.bytes) and ends in "
        "zeros: its entries end, as kafka-dump-log finds, at the first entry after the first whose offset "
        "is the base offset (for a time index, also a zero timestamp), and the rest, all zeros, is reported "
        "on stderr as N preallocated empty entries, not as damage. --verify checks a directory's files "
        "against its log: each .index entry is the position of the batch whose last offset is the entry's "
        "offset (KAFKA-7487; headers only, no CRC, as kafka-dump-log --verify-index-only), each .timeindex entry holds the largest batch timestamp so far, every ABORT "
        "marker that ends a transaction has its .txnindex entry and every entry its marker, the snapshots' "
        "CRC and producers (last offset, epoch, last sequence, open transaction) agree with the log below "
        "their offset, and every batch carries the leader epoch that leader-epoch-checkpoint gives its "
        "offset. Multi-batch appends indexed once (brokers before KAFKA-806), history the directory no "
        "longer holds and offsets removed by compaction are counted in notes, not reported as mismatches. "
        "--from-offset and --from-time seek as the broker does (segment file names, the .index or the "
        ".timeindex, then a scan of about one index interval): the cost does not grow with the log. A "
        "missing index, or an entry that does not match the batch it leads to, is a scan of that segment, "
        "with a note on stderr. With --summary, a directory gets an overview: its segments (base offset, "
        "size, offsets, timestamps, the active one, untrimmed indexes), aborted transactions, the producers "
        "of the newest snapshot, the leader epochs, and the high watermark, log start offset and recovery "
        "point from the checkpoint files one level up."
    ),
    "EXAMPLES": (
        "$ kgtool decode-batch /data/kafka/__consumer_offsets-12/00000000000000000000.log\n"
        "$ kgtool decode-batch --verify /data/kafka/orders-3\n"
        "$ kgtool decode-batch /data/kafka/orders-3 --from-time 2024-05-01T14:03:00Z --count 20\n"
        "$ kgtool decode-batch /data/kafka/orders-3/00000000000000000000.index --format jsonl\n"
        "$ kgtool decode-batch --summary /data/kafka/__consumer_offsets-12\n"
        "$ kgtool decode-batch --format jsonl --decode offsets seg.log | jq 'select(.payload.kind==\"offset_commit\")'\n"
        "$ kgtool decode-batch --format text --decode offsets seg.log | grep orders-service\n"
        "$ kgtool decode-batch --start-position 4096 --max-bytes 65536 --batches-only segment.log\n"
        "$ kgtool decode-batch --hex '0000000000000000 0000003a ...'\n"
        "$ cat segment.log | kgtool decode-batch - --format jsonl --bytes utf8"
    ),
    "NOTES": (
        "Files are memory-mapped, so a multi-GiB segment decodes in bounded memory; stdin is read "
        "whole. A batch whose length is trustworthy but whose content is bad is skipped and "
        "reported; after a header that cannot be trusted the scanner resynchronises on the next "
        "v2 batch whose header is plausible and whose CRC checks out, in time linear in the bytes "
        "it skips. The summary accounts for every byte: decoded + skipped + "
        "truncated = total. The C extension kgtool.codec._speedups is used when it was built; "
        "KGTOOL_PURE_PYTHON=1 forces the pure-Python codec (same output, slower)."
    ),
}

__all__ = ["command", "HELP", "MAN_SECTIONS"]
