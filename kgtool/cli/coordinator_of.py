"""``kgtool coordinator-of``: the internal-topic partition (hence coordinator) of ids."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from kgtool.cli import render
from kgtool.cli.histogram import render_histogram
from kgtool.cli.render import OutputFormat, json_quote
from kgtool.coordinator import idlist
from kgtool.coordinator.lookup import (
    CoordinatorLookup,
    KeyKind,
    SharePartition,
    histogram,
    locate,
)
from kgtool.coordinator.topic_description import DEFAULT_MAX_PARTITIONS, parse_topic_description
from kgtool.data import SAMPLE_GROUP_IDS, sample_path
from kgtool.errors import UsageError
from kgtool.inputs import MAX_INPUT_BYTES, STDIN, InputTooLarge, display_name, read_bytes, read_text

HELP = """Print the __consumer_offsets partition (hence the coordinator) serving each group id.

Computed exactly as the broker does: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions,
with Java's String.hashCode over UTF-16 code units. Ids come from arguments, from --file
(one per line, '-' for stdin) or from a '-' argument (stdin).
"""

# Above this many rows a Rich table costs more than it helps: plain aligned columns instead.
_RICH_TABLE_LIMIT = 5_000


def command(
    group_ids: Optional[list[str]] = typer.Argument(
        None,
        metavar="[GROUP_ID]...",
        help="Group ids (or transactional ids with --transactional-id). '-' reads ids from stdin.",
        show_default=False,
    ),
    file: Optional[list[str]] = typer.Option(
        None,
        "--file",
        "-f",
        metavar="PATH",
        help="Read ids from PATH, one per line, exactly as written (only the \\n or \\r\\n "
        "terminator is removed; empty lines are skipped). '-' is stdin. Repeatable.",
        show_default=False,
    ),
    partitions: Optional[int] = typer.Option(
        None,
        "--partitions",
        "-p",
        metavar="N",
        help="Partition count of the internal topic (offsets.topic.num.partitions, or "
        "transaction.state.log.num.partitions with --transactional-id). Default: the topic "
        "description's PartitionCount, else 50.",
        show_default=False,
    ),
    transactional_id: bool = typer.Option(
        False,
        "--transactional-id",
        help="The ids are transactional ids: compute the __transaction_state partition.",
    ),
    share_partition: Optional[str] = typer.Option(
        None,
        "--share-partition",
        metavar="TOPIC_ID:PARTITION",
        help="The ids are share group ids: compute the __share_group_state partition holding "
        "the state of this share partition (KIP-932; key 'group:topicId:partition').",
        show_default=False,
    ),
    topic_description: Optional[Path] = typer.Option(
        None,
        "--topic-description",
        "-t",
        metavar="FILE",
        help="Output of 'kafka-topics.sh --describe --topic __consumer_offsets', or a YAML/JSON "
        "partition -> leader map: also print the coordinator broker of each id.",
        show_default=False,
    ),
    show_histogram: bool = typer.Option(
        False,
        "--histogram",
        help="Instead of one line per id, count the ids per partition (and per broker with "
        "--topic-description) to spot an overloaded coordinator; the busiest come first.",
    ),
    sample: bool = typer.Option(
        False,
        "--sample",
        help="Also read the sample list of 2,000 group ids shipped with kgtool (for a demo).",
    ),
    output_format: OutputFormat = typer.Option(
        OutputFormat.table,
        "--format",
        help="table (Rich, for people), json (one array or object), jsonl (one object per line).",
        case_sensitive=False,
    ),
    max_partitions: int = typer.Option(
        DEFAULT_MAX_PARTITIONS,
        "--max-partitions",
        metavar="N",
        min=1,
        help="Most partitions a --topic-description may list and a --histogram may show (one "
        "entry each). The lookup itself takes any count up to 2147483647.",
    ),
) -> None:
    if transactional_id and share_partition is not None:
        raise UsageError("--transactional-id and --share-partition are exclusive")
    kind = KeyKind.GROUP
    share = None
    if transactional_id:
        kind = KeyKind.TRANSACTIONAL_ID
    elif share_partition is not None:
        kind = KeyKind.SHARE_STATE
        share = _parse_share_partition(share_partition)

    files = list(file or [])
    if sample:
        files.append(str(sample_path(SAMPLE_GROUP_IDS)))
    description_path = None if topic_description is None else str(topic_description)
    if description_path == STDIN and (STDIN in (group_ids or []) or STDIN in files):
        raise UsageError("'-' (stdin) given for both the ids and --topic-description")
    ids = _collect_ids(group_ids or [], files)
    description = None
    if description_path is not None:
        description = parse_topic_description(
            read_text(description_path, max_bytes=MAX_INPUT_BYTES), display_name(description_path),
            max_partitions=max_partitions,
        )

    lookup = locate(ids, kind=kind, partitions=partitions, description=description, share_partition=share)
    counts = histogram(lookup, description, max_partitions=max_partitions) if show_histogram else None
    for w in lookup.warnings:
        render.warn(w)
    if counts is not None:
        render_histogram(counts, output_format)
    else:
        _render_lookup(lookup, output_format, share)


def _parse_share_partition(text: str) -> SharePartition:
    topic_id, sep, part = text.rpartition(":")
    if not sep or not topic_id:
        raise UsageError(f"--share-partition expects TOPIC_ID:PARTITION, got {text!r}")
    try:
        partition = int(part)
    except ValueError:
        raise UsageError(f"--share-partition: partition {part!r} is not a number") from None
    return SharePartition(topic_id=topic_id, partition=partition)


def _collect_ids(args: list[str], files: list[str]) -> idlist.IdList:
    parts: list[idlist.IdList] = []
    literal: list[str] = []

    def flush() -> None:
        if literal:
            parts.append(idlist.id_list_from_strings(list(literal)))
            literal.clear()

    budget = idlist.MAX_ID_BYTES

    def read_ids(path: str) -> idlist.IdList:
        nonlocal budget
        try:
            data = read_bytes(path, max_bytes=budget)
        except InputTooLarge:
            raise InputTooLarge(
                f"{display_name(path)}: the ids read come to more than {idlist.MAX_ID_BYTES // 2**20} MiB, "
                "the most coordinator-of reads at once: split the list"
            ) from None
        budget -= len(data)
        return idlist.parse_id_lines(data, display_name(path))

    stdin_used = False
    for i, arg in enumerate(args, start=1):
        if arg == STDIN:
            flush()
            if stdin_used:
                raise UsageError("'-' (stdin) given more than once")
            stdin_used = True
            parts.append(read_ids(STDIN))
            continue
        _check_argument_text(arg, i)
        literal.append(arg)
    flush()
    for path in files:
        if path == STDIN:
            if stdin_used:
                raise UsageError("'-' (stdin) given more than once")
            stdin_used = True
        parts.append(read_ids(path))
    if not parts:
        raise UsageError("no ids given: pass GROUP_ID arguments, --file PATH, or '-' for stdin")
    return idlist.concat(parts)


def _check_argument_text(arg: str, index: int) -> None:
    # Python decodes undecodable argv bytes to lone surrogates (surrogateescape): such an
    # argument is not valid UTF-8, and no broker could receive it as a group id.
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"argument {index} is not valid UTF-8") from None


def _key_name(lookup: CoordinatorLookup) -> str:
    return lookup.kind.field_name


_CHUNK = 65_536


def _render_lookup(lookup: CoordinatorLookup, fmt: OutputFormat, share: SharePartition | None) -> None:
    key = _key_name(lookup)
    parts = lookup.partitions.tolist()
    if fmt is OutputFormat.table:
        _render_lookup_table(lookup, parts)
        return
    # Fast path: JSON text built directly, in chunks (bounded memory), with only C-level work
    # per item: ids quoted by the C encoder, partitions as cached strings.
    q = json_quote
    extra = ""
    if share is not None:
        extra = f', "topic_id": {q(share.topic_id)}, "share_partition": {share.partition}'
    head = f'{{"{key}": '
    mid = ', "partition": '
    pstr_table = _int_string_table(lookup.num_partitions, len(parts))
    n = len(parts)
    out = render.JsonOut(fmt)
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        quoted = map(q, lookup.ids[lo:hi])
        pstr = _int_strings(parts[lo:hi], pstr_table)
        if lookup.coordinators is None:
            tail = extra + "}"
            items = [head + i + mid + p + tail for i, p in zip(quoted, pstr)]
        else:
            mid_c = extra + ', "coordinator": '
            cstr = ["null" if c is None else str(c) for c in lookup.coordinators[lo:hi]]
            items = [head + i + mid + p + mid_c + c + "}" for i, p, c in zip(quoted, pstr, cstr)]
        out.texts(items)
    out.close()


def _int_string_table(bound: int, count: int) -> list[str] | None:
    """Strings of 0..bound-1 when that table is cheaper than converting ``count`` ints."""
    return [str(i) for i in range(bound)] if bound <= 4 * count + 1024 else None


def _int_strings(values: list[int], table: list[str] | None) -> list[str]:
    if table is not None:
        return [table[v] for v in values]
    return list(map(str, values))


def _render_lookup_table(lookup: CoordinatorLookup, parts: list[int]) -> None:
    key = _key_name(lookup)
    coords = lookup.coordinators
    columns: list = [key, ("partition", "right")]
    if coords is not None:
        columns.append(("coordinator", "right"))
    n = len(lookup.ids)
    limit = render.DISPLAY_LIMIT
    if any(len(i) > limit for i in lookup.ids):
        render.info(f"ids longer than {limit} characters are shortened here; --format json prints them whole")
    if n > _RICH_TABLE_LIMIT:
        # Plain columns, streamed: a person can still read or grep them (no Rich markup).
        render.info(f"{render.count(n)} ids: plain columns instead of a table (use --format json/jsonl for scripts)")
        header = ["partition"] + (["coordinator"] if coords is not None else []) + [key]
        render.write_raw("\t".join(header) + "\n")
        for lo in range(0, n, _CHUNK):  # in chunks: bounded memory, like the JSON path
            hi = min(n, lo + _CHUNK)
            shown = [render.display_text(i, limit=limit, markup=False) for i in lookup.ids[lo:hi]]
            if coords is None:
                lines = [f"{p}\t{i}\n" for i, p in zip(shown, parts[lo:hi])]
            else:
                lines = [f"{p}\t{render.MISSING if c is None else c}\t{i}\n" for i, p, c in zip(shown, parts[lo:hi], coords[lo:hi])]
            render.write_raw("".join(lines))
        return
    rows = []
    for idx, (i, p) in enumerate(zip(lookup.ids, parts)):
        row = [render.display_text(i, limit=limit), str(p)]
        if coords is not None:
            row.append(render.MISSING if coords[idx] is None else str(coords[idx]))
        rows.append(row)
    render.print_table(
        columns,
        rows,
        title=f"{lookup.topic} partition of each {key.replace('_', ' ')} ({lookup.num_partitions} partitions)",
    )


# Keep the module importable without side effects; sys is used by tests that patch stdin.
__all__ = ["command", "HELP", "sys"]

MAN_SECTIONS = {
    "INPUT": """
        Ids come from arguments, from --file PATH (repeatable) or from '-' (standard input), one
        per line. A line is the id exactly as written: leading and trailing spaces are kept, any
        Unicode and NUL included; only the terminator (\\n or \\r\\n) is removed. Empty lines are
        skipped; the empty id can still be given as an argument (''). Invalid UTF-8 is an error
        naming the line. A file that starts with a byte-order mark is read as written (the BOM is
        part of the first id, as a broker would see it) and a warning says so.

        --topic-description accepts the text printed by
        'kafka-topics.sh --describe --topic __consumer_offsets' (lines 'Partition: N  Leader: B';
        'Leader: none' means no leader), or a YAML/JSON map {partition: leader}, also as
        {topic: NAME, partitions: {...}} or {partitions: [{partition: N, leader: B}, ...]}.
    """,
    "LIMITS": """
        The partition count (--partitions, PartitionCount, or the highest partition described + 1)
        may be anything up to 2147483647, Kafka's int limit: the lookup needs no memory per
        partition. A topic description may list at most --max-partitions partitions (default
        1,000,000), and --histogram, which has a row per partition, refuses a count above it.
        Partition ids must be 0 to 2147483646 and leaders -1 to 2147483647. A YAML/JSON
        description may have at most 64 MiB, 100 levels of nesting and 5,000,000 values (YAML
        aliases counted as all they name); a description file at most 256 MiB. At most 128 MiB
        of ids are read in one run (files and stdin together). In table output
        an id longer than 200 characters is shortened (--format json prints it whole). Each
        refusal is one line on stderr, exit 2.
    """,
    "FORMULA": """
        partition = Utils.abs(id.hashCode()) % N, where hashCode is Java's String.hashCode over
        UTF-16 code units with 32-bit overflow (a character outside the BMP counts as two
        surrogates) and Utils.abs maps Integer.MIN_VALUE to 0. Sources:
        GroupCoordinatorService.partitionFor (groups, N = offsets.topic.num.partitions),
        TransactionStateManager.partitionFor (transactional ids, N =
        transaction.state.log.num.partitions), ShareCoordinatorService.partitionFor (share-group
        state, key "groupId:topicId:partition", N = share.coordinator.state.topic.num.partitions).
        All three default to 50.
    """,
    "OUTPUT": """
        --format table prints a Rich table (plain tab-separated columns above 5,000 ids);
        --format json prints an array in input order of objects {"group_id", "partition"} (plus
        "coordinator" with --topic-description; "transactional_id" instead of "group_id" with
        --transactional-id; "topic_id" and "share_partition" with --share-partition);
        --format jsonl prints the same objects one per line. With --histogram, json prints
        {"topic", "num_partitions", "total", "min", "max", "mean", "stddev", "partitions": [...],
        "brokers": [...]} and jsonl one object per partition.
    """,
    "EXAMPLES": """
          $ kgtool coordinator-of orders-service
          $ kgtool coordinator-of --partitions 200 --format json a b c
          $ kafka-consumer-groups.sh --bootstrap-server b:9092 --list | kgtool coordinator-of -
          $ kgtool coordinator-of -f groups.txt -t offsets-describe.txt --histogram
          $ kgtool coordinator-of --transactional-id payments-tx-0
    """,
}
