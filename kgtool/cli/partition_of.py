"""``kgtool partition-of``: the partition of a data topic each key lands on, per producer client."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Optional

import typer

from kgtool.cli import render
from kgtool.cli.histogram import Wording, histogram_doc, render_histogram
from kgtool.cli.render import OutputFormat, json_quote
from kgtool.coordinator.lookup import check_histogram_size, leader_warnings, partition_count
from kgtool.coordinator.topic_description import DEFAULT_MAX_PARTITIONS, TopicDescription, parse_topic_description
from kgtool.errors import UsageError
from kgtool.inputs import MAX_INPUT_BYTES, STDIN, display_name, read_text
from kgtool.partitioner import keys as _keys
from kgtool.partitioner.keys import KIND_EMPTY, KIND_NULL, KeyFormat, KeySource
from kgtool.partitioner.lookup import (
    NULL_KEY_NOTE,
    Column,
    Placement,
    PlacementSummary,
    disagreements,
    histograms,
    place,
    summarize,
)
from kgtool.partitioner.rules import EMPTY_NOTE, PARTITIONER_NAMES, Choice, client_defaults, resolve

HELP = """Print the partition of a data topic that each key lands on, as the producing client computes it.

The Java producer hashes the serialized key with murmur2 (toPositive(murmur2(key)) % N);
librdkafka (kcat, confluent-kafka-python/-go) defaults to consistent_random, a CRC32; Sarama
to FNV-1a with its own sign handling: one key lands on different partitions. Keys come from
arguments, from --file (one per line) or from '-' (stdin). --compare shows every client side by
side, --from-partitions M which keys move when the topic grows from M to N partitions,
--histogram the load per partition, and --check DIR which partitioner wrote a partition directory.
"""

#: ``--partitioner`` choices (an enum, so that help and shell completion list them).
PartitionerName = enum.Enum(  # type: ignore[misc]
    "PartitionerName", {n.replace("-", "_"): n for n in PARTITIONER_NAMES}, type=str
)

# Above this many rows a Rich table costs more than it helps: plain aligned columns instead.
_RICH_TABLE_LIMIT = 5_000
_WORDING = Wording(unit="keys", broker_field="leader", broker_role="leader broker")


def command(
    key_args: Optional[list[str]] = typer.Argument(
        None,
        metavar="[KEY]...",
        help="Keys, in the --key-format. '-' reads keys from stdin, one per line.",
        show_default=False,
    ),
    file: Optional[list[str]] = typer.Option(
        None, "--file", "-f", metavar="PATH",
        help="Read keys from PATH, one per line, exactly as written (only the \\n or \\r\\n "
        "terminator is removed). '-' is stdin. Repeatable.",
        show_default=False,
    ),
    partitions: Optional[int] = typer.Option(
        None, "--partitions", "-p", metavar="N",
        help="Partition count of the topic (required unless --topic-description gives it).",
        show_default=False,
    ),
    topic_description: Optional[Path] = typer.Option(
        None, "--topic-description", "-t", metavar="FILE",
        help="Output of 'kafka-topics.sh --describe --topic T', or a YAML/JSON partition -> leader "
        "map: gives the partition count and the leader broker of each key's partition.",
        show_default=False,
    ),
    key_format: KeyFormat = typer.Option(
        KeyFormat.string, "--key-format", case_sensitive=False,
        help="How keys are written: string (UTF-8, StringSerializer), hex or base64 (raw bytes), "
        "long, int, uuid (LongSerializer, IntegerSerializer, UUIDSerializer).",
    ),
    partitioner: Optional[list[PartitionerName]] = typer.Option(  # type: ignore[valid-type]
        None, "--partitioner", "-P", metavar="NAME", case_sensitive=True,
        help="The producer's partitioner: java (default), librdkafka (its default, "
        "consistent_random), sarama, librdkafka's own names, or sarama-reference. Repeatable "
        "with --compare.",
        show_default=False,
    ),
    compare: bool = typer.Option(
        False, "--compare",
        help="Show the partition of every client (java, librdkafka, sarama; or the --partitioner "
        "values) side by side and flag the keys on which they disagree.",
    ),
    from_partitions: Optional[int] = typer.Option(
        None, "--from-partitions", metavar="M",
        help="Also compute each key's partition with M partitions: which keys move when the topic "
        "grows from M to N (their per-key ordering breaks), and the share that moved.",
        show_default=False,
    ),
    show_histogram: bool = typer.Option(
        False, "--histogram",
        help="Instead of one line per key, count the keys per partition (and per leader broker "
        "with --topic-description) to spot a hot partition.",
    ),
    check: Optional[Path] = typer.Option(
        None, "--check", metavar="DIR",
        help="Decode the keys of a partition directory (TOPIC-PARTITION) and tell which client's "
        "partitioner, or which earlier partition count, explains them, per producer id.",
        show_default=False,
    ),
    null_marker: Optional[str] = typer.Option(
        None, "--null-marker", metavar="TEXT",
        help="A key equal to TEXT is a null key (as kafka-console-producer's null.marker, KIP-810).",
        show_default=False,
    ),
    output_format: OutputFormat = typer.Option(
        OutputFormat.table, "--format", case_sensitive=False,
        help="table (Rich, for people), json (one array in input order, or one object), jsonl "
        "(one object per line).",
    ),
    max_partitions: int = typer.Option(
        DEFAULT_MAX_PARTITIONS, "--max-partitions", metavar="N", min=1,
        help="Most partitions a --topic-description may list and a --histogram may show (one "
        "entry each). The lookup itself takes any count up to 2147483647.",
    ),
) -> None:
    description = None
    if topic_description is not None:
        path = str(topic_description)
        if path == STDIN and (STDIN in (key_args or []) or STDIN in (file or [])):
            raise UsageError("'-' (stdin) given for both the keys and --topic-description")
        description = parse_topic_description(
            read_text(path, max_bytes=MAX_INPUT_BYTES), display_name(path), max_partitions=max_partitions
        )
    names = [p.value for p in partitioner or []]
    if check is not None:
        if key_args or file or compare or show_histogram or from_partitions is not None or names:
            raise UsageError(
                "--check reads keys from the directory and tries every client: give no keys, "
                "--file, --partitioner, --compare, --histogram or --from-partitions with it"
            )
        from kgtool.cli.partition_check import run_check

        run_check(str(check), partitions, description, output_format)
        return
    n = partition_count(partitions, description)
    if n is None:
        raise UsageError("--partitions N is required (or --topic-description FILE, which gives it)")
    if compare and from_partitions is not None:
        raise UsageError("--compare and --from-partitions are exclusive")
    if len(names) > 1 and not compare:
        raise UsageError("--partitioner is given more than once: only with --compare")
    choices: list[Choice]
    if compare:
        choices = [resolve(nm) for nm in dict.fromkeys(names)] if len(names) >= 2 else client_defaults()
        if len(names) == 1:
            raise UsageError("--compare with --partitioner needs at least two partitioners")
    else:
        choices = [resolve(names[0] if names else "java")]
    columns = [Column(c.label, c.partitioner, n) for c in choices]
    if from_partitions is not None:
        m = partition_count(from_partitions, None, "--from-partitions")
        assert m is not None
        columns.append(Column(choices[0].label, choices[0].partitioner, m))
    mode = "compare" if compare else "from" if from_partitions is not None else "one"
    if show_histogram:
        for col in columns[:1] if mode == "from" else columns:
            check_histogram_size(col.num_partitions, max_partitions, description.topic if description else None)

    sources = _collect_sources(key_args or [], list(file or []))
    try:
        for src in sources:
            w = _keys.bom_warning(src, key_format)
            if w:
                render.warn(w)
        # Pass 1 reads every key: a bad line stops the command before anything is printed.
        summary = summarize(
            place(sources, key_format, columns, null_marker=null_marker), columns,
            histogram=show_histogram, description=description,
            # With --from-partitions the second column is the old count: its leaders are not today's.
            current=1 if mode == "from" else None,
        )
        if description is not None:
            _warn_leaders(summary, description)
        topic = description.topic if description is not None else None
        if show_histogram:
            _render_histograms(summary, topic, description, mode, key_format, output_format)
            return
        _render_keys(
            place(sources, key_format, columns, null_marker=null_marker, with_texts=True),
            summary, mode, description, output_format,
        )
    finally:
        for src in sources:
            src.close()


def _collect_sources(args: list[str], files: list[str]) -> list[KeySource]:
    sources: list[KeySource] = []
    literal: list[tuple[int, str]] = []
    stdin_used = False

    def claim_stdin() -> None:
        nonlocal stdin_used
        if stdin_used:
            raise UsageError("'-' (stdin) given more than once")
        stdin_used = True

    for i, arg in enumerate(args, start=1):
        if arg == STDIN:
            if literal:
                sources.append(_keys.literal_keys(literal))
                literal = []
            claim_stdin()
            sources.append(_keys.open_lines(STDIN))
        else:
            literal.append((i, arg))
    if literal:
        sources.append(_keys.literal_keys(literal))
    for path in files:
        if path == STDIN:
            claim_stdin()
        sources.append(_keys.open_lines(path))
    if not sources:
        raise UsageError("no keys given: pass KEY arguments, --file PATH, or '-' for stdin")
    return sources


def _warn_leaders(summary: PlacementSummary, description: TopicDescription) -> None:
    assert summary.leaders is not None
    for w in leader_warnings(
        description, summary.leaders.used(),
        "a producer cannot write to them right now (NOT_LEADER_OR_FOLLOWER, retried until it has one)",
    ):
        render.warn(w)


# -- one row per key ---------------------------------------------------------------------------

_CHUNK = 65_536


def _render_keys(placements, summary: PlacementSummary, mode: str, description, fmt: OutputFormat) -> None:
    columns = summary.columns
    leader_of = description.leaders.get if description is not None else None
    if fmt is OutputFormat.table:
        _render_table(placements, summary, mode, leader_of)
        return
    q = json_quote
    out = render.JsonOut(fmt)
    for pl in placements:
        for lo in range(0, len(pl.kinds), _CHUNK):
            out.texts(_json_rows(pl, lo, min(len(pl.kinds), lo + _CHUNK), mode, columns, leader_of, q))
    out.close()
    _summary_lines(summary, mode)


def _num(p: int) -> str:
    return "null" if p < 0 else str(p)


def _leader(leader_of, p: int) -> str:
    if p < 0:
        return "null"
    b = leader_of(p)
    return "null" if b is None else str(b)


def _json_rows(pl: Placement, lo: int, hi: int, mode: str, columns: list[Column], leader_of, q) -> list[str]:
    texts = pl.texts[lo:hi] if pl.texts is not None else [None] * (hi - lo)
    kinds = pl.kinds[lo:hi].tolist()
    parts = [p[lo:hi].tolist() for p in pl.partitions]
    keys = ["null" if t is None else q(t) for t in texts]
    out: list[str] = []
    if mode == "one":
        col = columns[0]
        notes = {KIND_NULL: q(col.partitioner.null_note), KIND_EMPTY: q(EMPTY_NOTE)}
        for key, kind, p in zip(keys, kinds, parts[0]):
            s = f'{{"key": {key}, "partition": {_num(p)}'
            if leader_of is not None:
                s += f', "leader": {_leader(leader_of, p)}'
            if p < 0:
                s += f', "note": {notes[kind]}'
            out.append(s + "}")
        return out
    if mode == "from":
        col = columns[0]
        notes = {KIND_NULL: q(col.partitioner.null_note), KIND_EMPTY: q(EMPTY_NOTE)}
        for key, kind, p, m in zip(keys, kinds, parts[0], parts[1]):
            moved = "null" if p < 0 or m < 0 else ("true" if p != m else "false")
            s = f'{{"key": {key}, "partition": {_num(p)}, "from_partition": {_num(m)}, "moved": {moved}'
            if leader_of is not None:
                s += f', "leader": {_leader(leader_of, p)}'
            if p < 0:
                s += f', "note": {notes[kind]}'
            out.append(s + "}")
        return out
    labels = [q(c.label) for c in columns]
    differ = disagreements([p for p in pl.partitions], pl.kinds)[lo:hi].tolist()
    null_note = q(NULL_KEY_NOTE)
    empty_note = q(EMPTY_NOTE)
    for i, (key, kind) in enumerate(zip(keys, kinds)):
        ps = [col[i] for col in parts]
        body = ", ".join(f"{lab}: {_num(p)}" for lab, p in zip(labels, ps))
        agree = "null" if kind == KIND_NULL else ("false" if differ[i] else "true")
        s = f'{{"key": {key}, "partitions": {{{body}}}, "agree": {agree}'
        if leader_of is not None:
            s += ', "leaders": {' + ", ".join(f"{lab}: {_leader(leader_of, p)}" for lab, p in zip(labels, ps)) + "}"
        if kind == KIND_NULL:
            s += f', "note": {null_note}'
        elif min(ps) < 0:
            s += f', "note": {empty_note}'
        out.append(s + "}")
    return out


def _cell(p: int) -> str:
    return render.MISSING if p < 0 else str(p)


def _render_table(placements, summary: PlacementSummary, mode: str, leader_of) -> None:
    columns = summary.columns
    n = columns[0].num_partitions
    header: list = ["key"]
    if mode == "one":
        header += [("partition", "right")]
    elif mode == "from":
        header += [(f"with {columns[1].num_partitions}", "right"), (f"with {n}", "right"), "moved"]
    else:
        header += [(c.label, "right") for c in columns] + ["agree"]
    if leader_of is not None and mode != "compare":
        header.append(("leader", "right"))
    notes: dict[str, None] = {}
    rows: list[list[str]] = []
    plain = summary.keys > _RICH_TABLE_LIMIT
    if plain:
        render.info(f"{render.count(summary.keys)} keys: plain columns instead of a table (use --format json/jsonl for scripts)")
        render.write_raw("\t".join(h if isinstance(h, str) else h[0] for h in header[1:] + header[:1]) + "\n")
    for pl in placements:
        texts = pl.texts or []
        kinds = pl.kinds.tolist()
        parts = [p.tolist() for p in pl.partitions]
        differ = disagreements(pl.partitions, pl.kinds).tolist() if mode == "compare" else None
        chunk_rows = []
        for i, (t, kind) in enumerate(zip(texts, kinds)):
            ps = [col[i] for col in parts]
            if kind == KIND_NULL:
                key = "(null key)" if plain else "[dim](null key)[/dim]"
                notes[NULL_KEY_NOTE if mode == "compare" else columns[0].partitioner.null_note] = None
            else:
                key = render.display_text(t or "", limit=render.DISPLAY_LIMIT, markup=not plain)
                if min(ps) < 0:
                    notes[EMPTY_NOTE] = None
            if mode == "one":
                cells = [_cell(ps[0])]
            elif mode == "from":
                moved = "" if min(ps) < 0 or ps[0] == ps[1] else ("moved" if plain else "[yellow]moved[/yellow]")
                cells = [_cell(ps[1]), _cell(ps[0]), moved]
            else:
                agree = "" if kind == KIND_NULL else ("differ" if differ[i] else "")
                if agree and not plain:
                    agree = "[bold red]differ[/bold red]"
                cells = [_cell(p) for p in ps] + [agree]
            if leader_of is not None and mode != "compare":
                b = leader_of(ps[0]) if ps[0] >= 0 else None
                cells.append(render.MISSING if b is None else str(b))
            chunk_rows.append([key, *cells])
        if plain:
            render.write_raw("".join("\t".join(r[1:] + r[:1]) + "\n" for r in chunk_rows))
        else:
            rows.extend(chunk_rows)
    caption = _summary_text(summary, mode)
    if not plain:
        what = {"one": f"{columns[0].label} partitioner", "from": f"{columns[0].label} partitioner",
                "compare": "compared partitioners"}[mode]
        render.print_table(header, rows, title=f"partition of each key ({n} partitions, {what})", caption=caption)
    elif caption:
        render.info(caption)
    for note in notes:
        render.info(f"-: {note}")


def _summary_text(summary: PlacementSummary, mode: str) -> str | None:
    if mode == "from" and summary.compared:
        m, n = summary.columns[1].num_partitions, summary.columns[0].num_partitions
        return (
            f"{render.count(summary.moved)} of {render.count(summary.compared)} keys move from {m} to {n} partitions "
            f"({100 * (summary.moved_share or 0):.1f}%): per-key ordering breaks for them"
        )
    if mode == "compare":
        return f"the clients disagree on {render.count(summary.disagree)} of {render.count(summary.keys)} keys"
    return None


def _summary_lines(summary: PlacementSummary, mode: str) -> None:
    text = _summary_text(summary, mode)
    if text:
        render.info(text)


# -- histogram ---------------------------------------------------------------------------------

def _render_histograms(summary: PlacementSummary, topic: str | None, description, mode: str,
                       key_format: KeyFormat, fmt: OutputFormat) -> None:
    hs = histograms(summary, topic or "", description)
    for h in hs:
        h.topic = topic  # type: ignore[assignment]  # None when unknown: "topic": null
    where = f"{topic} partition" if topic else "partition"
    if mode == "compare":
        if fmt is OutputFormat.table:
            for col, h, u in zip(summary.columns, hs, summary.undetermined):
                render_histogram(h, fmt, _WORDING, title=f"keys per {where}: {col.label}",
                                 caption=f"{u} keys without a deterministic partition" if u else None)
            render.info(_summary_text(summary, mode) or "")
            return
        docs = {
            col.label: histogram_doc(h, _WORDING, {"partitioner": col.partitioner.name, "undetermined": u})
            for col, h, u in zip(summary.columns, hs, summary.undetermined)
        }
        if fmt is OutputFormat.jsonl:
            render.write_json_lines(
                {"partitioner": label, **row} for label, d in docs.items() for row in d["partitions"]
            )
            return
        render.print_json({
            "topic": topic, "num_partitions": summary.columns[0].num_partitions, "key_format": key_format.value,
            "keys": summary.keys, "null_keys": summary.null_keys, "disagree": summary.disagree,
            "histograms": docs,
        })
        return
    col = summary.columns[0]
    extra = {
        "partitioner": col.label,
        "key_format": key_format.value,
        "keys": summary.keys,
        "null_keys": summary.null_keys,
        "undetermined": summary.undetermined[0],
    }
    caption = f"{summary.undetermined[0]} keys without a deterministic partition" if summary.undetermined[0] else None
    if mode == "from":
        extra.update(
            from_num_partitions=summary.columns[1].num_partitions,
            moved=summary.moved,
            moved_share=summary.moved_share,
        )
        text = _summary_text(summary, mode)
        caption = text if caption is None else f"{caption}; {text}"
    render_histogram(hs[0], fmt, _WORDING, extra=extra, title=f"keys per {where} ({col.label} partitioner)",
                     caption=caption)


__all__ = ["command", "HELP"]

MAN_SECTIONS = {
    "INPUT": """
        Keys come from arguments, from --file PATH (repeatable) or from '-' (standard input), one
        per line. A line is the key text exactly as written (spaces, any Unicode, NUL kept); only
        the terminator (\\n or \\r\\n) is removed. Empty lines are skipped with --key-format string,
        long, int and uuid; with hex and base64 an empty line is the empty key. The empty string
        key can always be given as an argument (''). A line equal to --null-marker is a null key.
        A negative number given as an argument needs '--' before it (-- -42), or it reads as an
        option.

        --key-format gives the bytes the producer's serializer wrote: string is StringSerializer
        (UTF-8; invalid UTF-8 is an error naming the line); hex and base64 are raw bytes (base64:
        RFC 4648 standard alphabet, padding optional); long and int are LongSerializer and
        IntegerSerializer (8 or 4 bytes big-endian of a decimal in range); uuid is UUIDSerializer,
        which writes uuid.toString(): the 36-character text in lowercase, not 16 bytes.

        --topic-description accepts the text printed by 'kafka-topics.sh --describe --topic T'
        (PartitionCount and 'Partition: N  Leader: B' lines), or a YAML/JSON map
        {partition: leader}, also as {topic: NAME, partitions: {...}}.
    """,
    "PARTITIONERS": """
        java (default): the Java producer, BuiltInPartitioner.partitionForKey:
        Utils.toPositive(Utils.murmur2(key)) % N, where toPositive is & 0x7fffffff, not Math.abs.

        librdkafka: librdkafka's default, consistent_random: CRC32(key) % N (rd_crc32, unsigned),
        and an empty key goes to the sticky partition. librdkafka's own names are accepted:
        consistent, consistent_random, murmur2, murmur2_random (Java's hash), fnv1a, fnv1a_random
        (Sarama's hash).

        sarama: Sarama's NewHashPartitioner: FNV-1a 32, int32(hash) % N, negated when negative.
        sarama-reference: NewReferenceHashPartitioner, (int32(hash) & 0x7fffffff) % N.

        A null key has no deterministic partition with any client (the Java producer and
        librdkafka use a sticky partition, Sarama a random one); nor has an empty key under
        librdkafka's consistent_random. Such keys get partition null and a note.
    """,
    "OUTPUT": """
        --format json prints an array in input order of {"key", "partition"} (plus "leader" with
        --topic-description, and "note" when the partition is null); with --compare
        {"key", "partitions": {"java", "librdkafka", "sarama"}, "agree"} (plus "leaders");
        with --from-partitions M {"key", "partition", "from_partition", "moved"}. --format jsonl
        prints the same objects one per line; the share of keys that moved, or on which the
        clients disagree, goes to stderr. With --histogram, json prints {"topic",
        "num_partitions", "partitioner", "key_format", "keys", "null_keys", "undetermined",
        "total", "min", "max", "mean", "stddev", "partitions": [...], "brokers": [...]} (plus
        "from_num_partitions", "moved", "moved_share" with --from-partitions, or one histogram per
        client under "histograms" with --compare); jsonl one object per partition.

        --check DIR prints {"directory", "topic", "partition", "num_partitions", "records",
        "keyed", "null_keys", "empty_keys", "partitioners": {"java": {"matching", "share"},
        "librdkafka": {...}, "sarama": {...}}, "other_partitioners": {"sarama-reference": {...}},
        "verdict": {"kind", "partitioners", "from_partitions", "message"},
        "producers": [...], "problems"}; --format jsonl one object per producer id.
    """,
    "LIMITS": """
        The partition count (--partitions, PartitionCount, or the highest partition described + 1)
        may be anything up to 2147483647: the lookup needs no memory per partition. A topic
        description may list at most --max-partitions partitions (default 1,000,000), and
        --histogram, which has a row per partition, refuses a count above it. A key line longer
        than 64 MiB is refused (the newline is looked for only that far); a key longer than 1 MiB
        is printed cut, with its length (the whole key is hashed), and in a table a key longer
        than 200 characters is shortened. Files are mapped and standard input is spooled to a
        temporary file: memory stays bounded whatever the number of keys. --check follows at
        most 10,000 producer ids one by one (the others are pooled as producer_id null) and
        lists 100 of them. Each refusal is one line on stderr, exit 2.
    """,
    "WHY KEYS MOVE": """
        A key's partition is h % N for a hash h that does not depend on N. When a topic doubles
        from N to 2N partitions, h % 2N is either h % N or h % N + N, depending on one more bit
        of h: about half the keys stay and half move to a new partition, and records of a moved
        key written before and after the change are in two partitions, so per-key ordering
        breaks for those keys. In general a share min(N, M) / lcm(N, M) of the keys stays (6 to 8
        partitions: a quarter).
    """,
    "EXAMPLES": """
          $ kgtool partition-of --partitions 12 customer-42
          $ kgtool partition-of -p 12 --compare --format json customer-42 customer-43
          $ kgtool partition-of -p 12 --partitioner librdkafka -f keys.txt
          $ kgtool partition-of -p 12 --from-partitions 6 -f keys.txt --histogram
          $ kgtool partition-of -t orders-describe.txt --key-format long 42 43
          $ kgtool partition-of --check /var/lib/kafka/data/orders-3 -p 12
    """,
}
