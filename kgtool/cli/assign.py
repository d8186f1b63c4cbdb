"""``kgtool assign``: what Kafka's assignors compute for a described group, and what-ifs."""

from __future__ import annotations

import re
from itertools import chain, groupby
from operator import itemgetter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Optional

import typer

from kgtool.assignors import analysis, group_input, registry
from kgtool.assignors.model import Assignment, GroupSpec
from kgtool.cli import params, render
from kgtool.cli.render import OutputFormat, json_quote
from kgtool.errors import FindingsReported, UsageError
from kgtool.inputs import MAX_INPUT_BYTES, STDIN, display_name, read_text

HELP = (
    "Compute the assignment Kafka's assignors give a consumer group, exactly as Kafka 4.x does.\n\n"
    "GROUP_FILE describes the group: YAML or JSON (topics with partition counts and racks, members with "
    "subscriptions, owned partitions, generation, rack, group.instance.id), the text of "
    "'kafka-consumer-groups.sh --describe --group G --members --verbose' (any Kafka version since 2.0), or the "
    "group-metadata records "
    "printed by 'kgtool decode-batch --format jsonl' (then each recorded generation is replayed and compared "
    "with what the assignor computes). '-' reads stdin.\n\n"
    "Assignors: range, roundrobin, sticky, cooperative-sticky (client side) and server-uniform, server-range "
    "(KIP-848 group coordinator). --remove, --add and --partitions simulate the next rebalance from the "
    "current assignment; --compare shows how many partitions each strategy moves and revokes; --validate "
    "checks a given assignment.\n"
)

MAN_SECTIONS: dict[str, str] = {
    "EXAMPLES": (
        "kgtool assign group.yaml\n"
        "kgtool assign group.yaml --assignor cooperative-sticky --format json\n"
        "kgtool assign group.yaml --remove consumer-2 --add consumer-9=orders,payments\n"
        "kgtool assign group.yaml --partitions orders=12 --compare range,sticky,cooperative-sticky\n"
        "kafka-consumer-groups.sh --bootstrap-server b:9092 --describe --group G --members --verbose "
        "| kgtool assign - --assignor range\n"
        "kgtool decode-batch 00000000000000000000.log --format jsonl | kgtool assign - --group orders-service\n"
        "kgtool assign group.yaml --validate assignment.json"
    ),
    "GROUP FILE": (
        "YAML or JSON: 'assignor' (optional), 'group' (optional id), 'topics' (name: partition count, or "
        "name: {partitions: N, racks: [[rack, ...] per partition]}), 'members' (a list of {id, topics, owned, "
        "generation, rack, instance_id}); 'owned' is {topic: [partitions]} or [[topic, partition], ...] in the "
        "order the member reported them. Duplicate members, unknown topics, owned partitions out of range and "
        "a member owning a partition twice are errors (exit 2). The describe text gives neither subscriptions "
        "nor partition counts: every member is taken as subscribed to every topic listed, and a topic's "
        "partition count is its highest partition seen + 1 (--partitions corrects it)."
    ),
    "LIMITS": (
        "A group whose topics have more than --max-partitions partitions in all (default 1,000,000; "
        "after --partitions) is refused. A YAML/JSON document may have at most 64 MiB, 100 levels of "
        "nesting and 5,000,000 values (YAML aliases counted as all they name; an alias inside its own "
        "anchor is refused); an input file at most 256 MiB. Every field of a YAML/JSON group is "
        "type-checked and a wrong one is named by its path (members[0].owned['t'][2]). Each refusal "
        "is one line on stderr, exit 2."
    ),
    "STATISTICS": (
        "moved: partitions that had an owner and end with another; revoked: partitions members stop "
        "consuming during the rebalance (everything they own under the eager protocol of range, roundrobin "
        "and sticky; only the partitions leaving them under cooperative-sticky and the KIP-848 assignors); "
        "withheld: partitions cooperative-sticky holds back until their owner revoked them (a follow-up "
        "rebalance assigns them, shown as 'settled')."
    ),
}

MAN_EXIT_STATUS: dict[int, str] = {
    1: "A replayed generation differs from its recorded assignment, or --validate found problems "
    "(partitions withheld by cooperative-sticky are reported, and are not problems).",
    2: "Usage or input error (one line on stderr), including an input past the LIMITS.",
}


def _assignor_names() -> list[tuple[str, str]]:
    return [(name, registry.ASSIGNORS[name].summary) for name in registry.names()]


# Above this many members (or partitions) a Rich table costs more than it helps.
_RICH_MEMBER_LIMIT = 300
_RICH_PARTITION_LIMIT = 50_000


def command(
    group_file: str = typer.Argument(
        ..., metavar="GROUP_FILE", help="Described group: YAML/JSON, describe text, or decode-batch JSONL. '-' is stdin.",
        show_default=False,
    ),
    assignor: Optional[str] = typer.Option(
        None, "--assignor", "-a", metavar="NAME",
        help=f"Assignor ({', '.join(registry.names())}); default: the file's 'assignor' or the recorded protocol.",
        show_default=False, autocompletion=params.completer(_assignor_names),
    ),
    group: Optional[str] = typer.Option(
        None, "--group", "-g", metavar="GROUP_ID", help="The group to take when the input describes several.",
        show_default=False,
    ),
    remove: Optional[list[str]] = typer.Option(
        None, "--remove", metavar="MEMBER", help="What-if: MEMBER leaves the group. Repeatable.", show_default=False,
    ),
    add: Optional[list[str]] = typer.Option(
        None, "--add", metavar="MEMBER=TOPIC,...", help="What-if: a new member subscribed to these topics. Repeatable.",
        show_default=False,
    ),
    partitions: Optional[list[str]] = typer.Option(
        None, "--partitions", metavar="TOPIC=N",
        help="What-if: TOPIC has N partitions (a new topic is created). Repeatable.", show_default=False,
    ),
    compare_names: Optional[str] = typer.Option(
        None, "--compare", metavar="NAME,NAME,...",
        help="Compare strategies on the next rebalance: moved and revoked partitions of each.",
        show_default=False, autocompletion=params.completer(_assignor_names, comma_list=True),
    ),
    validate_file: Optional[str] = typer.Option(
        None, "--validate", metavar="ASSIGNMENT_FILE",
        help="Check this assignment (JSON/YAML {member: {topic: [partitions]}}, or kgtool's --format json "
        "output) against the group instead. Under the cooperative protocol, partitions withheld while their "
        "owner revokes them are reported as pending revocation, not as problems.",
        show_default=False,
    ),
    output_format: OutputFormat = typer.Option(
        OutputFormat.table, "--format",
        help="table (Rich, for people), json (one object), jsonl (one object per member).", case_sensitive=False,
    ),
    max_partitions: int = typer.Option(
        group_input.DEFAULT_MAX_PARTITIONS, "--max-partitions", metavar="N", min=1,
        help="Refuse a group whose topics have more than N partitions in all (after --partitions): the "
        "assignors hold a few arrays of one entry per partition.",
    ),
) -> None:
    if validate_file == STDIN and group_file == STDIN:
        raise UsageError("'-' (stdin) given for both GROUP_FILE and --validate")
    if validate_file is not None and compare_names:
        raise UsageError("--validate and --compare are exclusive")
    what_if = analysis.WhatIf(
        remove=list(remove or []),
        add=[analysis.parse_add(a) for a in add or []],
        partitions=dict(analysis.parse_partitions(p) for p in partitions or []),
    )
    source = display_name(group_file)
    with _progress(f"reading {source}"):
        loaded = group_input.load_group(
            read_text(group_file, max_bytes=MAX_INPUT_BYTES), source, group_id=group, max_partitions=max_partitions
        )
    _check_what_if_size(loaded.group, what_if, max_partitions)
    # Notes go out with the result, not before an error: an error is one line.
    with _out_of_memory_hint(loaded.group, what_if, max_partitions):
        if validate_file is not None:
            g = analysis.apply_what_if(loaded.group, what_if) if what_if else loaded.group
            _validate(g, validate_file, output_format, loaded, assignor)
            return
        if compare_names:
            names = registry.parse_names(compare_names)
            with _progress(f"comparing {', '.join(names)}"):
                rows = analysis.compare(names, loaded.group, what_if)
            _print_notes(loaded)
            _render_compare(rows, loaded, what_if, output_format)
            return
        if loaded.rounds and not what_if:
            _replay(loaded, assignor, output_format)
            return
        name = assignor or loaded.group.assignor
        if not name:
            raise UsageError(f"no assignor: give --assignor ({', '.join(registry.names())}) or 'assignor:' in the file")
        with _progress(f"running {registry.canonical_name(name)}"):
            result = analysis.analyse(name, loaded.group, what_if)
        _print_notes(loaded)
        _render_result(result, loaded, output_format)


def _print_notes(loaded: group_input.LoadedGroup) -> None:
    for note in loaded.notes:
        render.info(f"note: {note}")


def _partition_counts(g: GroupSpec, what_if: analysis.WhatIf) -> dict[str, int]:
    """Partition counts once the what-if ran (--partitions may only create or grow a topic)."""
    counts = {t: spec.partitions for t, spec in g.topics.items()}
    for t, n in what_if.partitions.items():
        counts[t] = max(n, counts.get(t, 0))
    return counts


def _check_what_if_size(g: GroupSpec, what_if: analysis.WhatIf, limit: int) -> None:
    if not what_if.partitions:
        return
    problem = group_input.partition_total_problem(_partition_counts(g, what_if), limit)
    if problem is not None:
        raise UsageError(f"--partitions: {problem}")


@contextmanager
def _out_of_memory_hint(g: GroupSpec, what_if: analysis.WhatIf, limit: int) -> Iterator[None]:
    """Running out of memory under a raised --max-partitions is the user's limit, not a bug:
    one line naming the option (the default keeps far below this machine's memory)."""
    try:
        yield
    except MemoryError:
        total = sum(_partition_counts(g, what_if).values())
        raise UsageError(
            f"out of memory for {total:,} partitions: lower --max-partitions (now {limit:,}) or use a larger machine"
        ) from None


@contextmanager
def _progress(what: str) -> Iterator[None]:
    """A spinner on stderr while ``what`` runs, only when stderr is a terminal."""
    console = render.err()
    with console.status(f"{what}...") if console.is_terminal else nullcontext():
        yield


# ---------------------------------------------------------------------------------------------
# JSON, built as text: a million partitions must not go through the pure-Python indenting
# encoder of json.dumps(indent=...).


def _by_topic(parts: list) -> dict[str, list[int]]:
    """Partitions grouped by topic, topics in first-seen order, partitions in assignor order."""
    out: dict[str, list[int]] = {}
    get = out.get
    for t, p in parts:
        lst = get(t)
        if lst is None:
            out[t] = lst = []
        lst.append(p)
    return out


# Kafka's legal topic characters (Topic.validate: [a-zA-Z0-9._-]) need no JSON escaping.
_SAFE_TOPIC = re.compile(r"[A-Za-z0-9._-]+")
_ONE_PARTITION = '"{0[0]}": [{0[1]}]'.format
_topic_of = itemgetter(0)
_partition_of = itemgetter(1)


def _member_json(parts: list, safe: bool = False) -> str:
    """One member's ``{topic: [partitions]}``; topics in first-seen order, partitions in the
    assignor's order. Built with C-level loops: a million partitions must render in well under
    a second."""
    if not parts:
        return "{}"
    distinct = len(set(map(_topic_of, parts)))
    if safe and distinct == len(parts):
        # One partition per topic (e.g. range over many topics with as many members as
        # partitions): one format call per partition.
        return "{" + ", ".join(map(_ONE_PARTITION, parts)) + "}"
    runs = [(t, ", ".join(map(str, map(_partition_of, g)))) for t, g in groupby(parts, _topic_of)]
    if len(runs) != distinct:  # a topic in several runs: merge them
        runs = [(t, ", ".join(map(str, ps))) for t, ps in _by_topic(parts).items()]
    if safe:
        return "{" + ", ".join([f'"{t}": [{text}]' for t, text in runs]) + "}"
    return "{" + ", ".join([f"{json_quote(t)}: [{text}]" for t, text in runs]) + "}"


def assignment_json(assignment: Assignment, indent: str = "  ", topics: Iterable[str] | None = None) -> str:
    """``{member: {topic: [partitions]}}`` as JSON text, one member per line.

    ``topics``: every topic the assignment may name (the group's), to skip collecting them."""
    if not assignment:
        return "{}"
    if topics is None:
        topics = set(map(_topic_of, chain.from_iterable(assignment.values())))
    safe = all(_SAFE_TOPIC.fullmatch(t) for t in topics)
    lines = [f"{indent}  {json_quote(m)}: {_member_json(parts, safe)}" for m, parts in assignment.items()]
    return "{\n" + ",\n".join(lines) + f"\n{indent}}}"


def _render_result(result: analysis.AssignResult, loaded: group_input.LoadedGroup, fmt: OutputFormat) -> None:
    if fmt is OutputFormat.jsonl:
        render.JsonOut(fmt).texts([
            f'{{"member_id": {json_quote(m)}, "assignment": {_member_json(parts)}}}'
            for m, parts in result.assignment.items()
        ])
        return
    if fmt is OutputFormat.json:
        fields: list[tuple[str, object]] = [
            ("group", loaded.group_id),
            ("input", loaded.kind),
            ("assignor", result.assignor),
            ("rebalance_protocol", result.rebalance_protocol),
        ]
        if result.what_if:
            fields.append(("what_if", result.what_if))
        fields.append(("assignment", render.RawJson(assignment_json(result.assignment, topics=result.group.topics))))
        fields.append(("stats", result.stats.to_json()))
        if result.settled is not None and result.settled_stats is not None:
            fields.append(("settled", render.RawJson(
                "{\n    \"rebalances\": %d,\n    \"assignment\": %s,\n    \"stats\": %s\n  }" % (
                    result.rebalances,
                    assignment_json(result.settled, indent="    "),
                    render.indented_json(result.settled_stats.to_json(), "    "),
                )
            )))
        if result.baseline is not None:
            fields.append(("baseline", render.RawJson(assignment_json(result.baseline))))
        fields.append(("notes", loaded.notes))
        render.write_raw(render.json_document(fields))
        return
    _render_result_table(result, loaded)


# ---------------------------------------------------------------------------------------------
# Tables


def compact(parts: list) -> str:
    """``t0: 0-2,5; t1: 3`` (sorted, consecutive runs collapsed) for people."""
    chunks = []
    for t, ps in sorted(_by_topic(parts).items()):
        ps = sorted(ps)
        runs = []
        start = prev = ps[0]
        for p in ps[1:]:
            if p == prev + 1:
                prev = p
                continue
            runs.append(f"{start}-{prev}" if prev > start else str(start))
            start = prev = p
        runs.append(f"{start}-{prev}" if prev > start else str(start))
        chunks.append(f"{t}: {','.join(runs)}")
    return "; ".join(chunks)


def _render_result_table(result: analysis.AssignResult, loaded: group_input.LoadedGroup) -> None:
    s = result.stats
    title = f"{result.assignor} ({result.rebalance_protocol})"
    if loaded.group_id:
        title += f" for group {loaded.group_id}"
    if result.what_if:
        title += " after: " + "; ".join(result.what_if)
    show_movement = bool(s.moved or s.kept or s.revoked)
    final = result.settled if result.settled is not None else None
    c = render.count
    summary = (
        f"{c(s.members)} members, {c(s.assigned)} partitions assigned"
        + (f", {c(s.withheld)} withheld until revoked" if s.withheld else "")
        + f"; per member min {c(s.min)}, max {c(s.max)}, stddev {s.stddev:,.2f}"
        + (f"; idle: {c(len(s.idle_members))}" if s.idle_members else "")
        + (f"; moved {c(s.moved)}, kept {c(s.kept)}, revoked {c(s.revoked)}" if show_movement else "")
    )
    ss = result.settled_stats
    if ss is not None:
        summary += (
            f"; after {result.rebalances} rebalances: moved {c(ss.moved)}, kept {c(ss.kept)}"
            + (f", still {c(ss.withheld)} withheld" if ss.withheld else "")
        )
    if s.members > _RICH_MEMBER_LIMIT or s.assigned > _RICH_PARTITION_LIMIT:
        render.info(f"{c(s.members)} members: plain columns instead of a table (use --format json for scripts)")
        lines = ["member\tpartitions\trevoked\tassignment"]
        for m, parts in result.assignment.items():
            text = compact(parts) if parts else "-"
            if len(text) > 200:
                text = text[:197] + "..."
            lines.append(f"{render.display_text(m, limit=render.DISPLAY_LIMIT, markup=False)}\t{len(parts)}\t{s.revoked_by_member.get(m, 0)}\t{text}")
        lines.append(summary)
        render.write_raw("\n".join(lines) + "\n")
        return
    columns: list = ["member", ("partitions", "right")]
    if show_movement:
        columns.append(("revoked", "right"))
    columns.append("assignment")
    if final is not None:
        columns.append(f"after {result.rebalances} rebalances")
    rows = []
    for m, parts in result.assignment.items():
        row = [render.display_text(m, limit=render.DISPLAY_LIMIT), c(len(parts))]
        if show_movement:
            row.append(c(s.revoked_by_member.get(m, 0)))
        row.append(render.escape(compact(parts)) if parts else "[dim]idle[/dim]")
        if final is not None:
            row.append(render.escape(compact(final.get(m, []))) or "[dim]idle[/dim]")
        rows.append(row)
    render.print_table(columns, rows, title=title, caption=summary)


def _render_compare(
    rows: list[analysis.CompareRow], loaded: group_input.LoadedGroup, what_if: analysis.WhatIf, fmt: OutputFormat
) -> None:
    if fmt is not OutputFormat.table:
        doc = {
            "group": loaded.group_id,
            "input": loaded.kind,
            "what_if": what_if.describe(),
            "compare": [r.to_json() for r in rows],
            "notes": loaded.notes,
        }
        if fmt is OutputFormat.jsonl:
            render.JsonOut(fmt).items(doc["compare"])
        else:
            render.print_json(doc)
        return
    title = "next rebalance by strategy"
    if what_if:
        title += " after: " + "; ".join(what_if.describe())
    console = render.out()
    if not console.is_terminal:
        # Ten short columns: an 80-column default for pipes would truncate the strategy names.
        console.width = max(console.width, 120)
    console.print(render.table(
        ["assignor", "protocol", ("rebalances", "right"), ("moved", "right"), ("revoked", "right"),
         ("kept", "right"), ("min", "right"), ("max", "right"), ("stddev", "right"), ("idle", "right")],
        [
            [r.assignor, r.rebalance_protocol, str(r.rebalances), render.count(r.moved),
             f"[bold red]{render.count(r.revoked)}[/bold red]" if r.rebalance_protocol == "eager" and r.revoked
             else render.count(r.revoked),
             render.count(r.kept), render.count(r.min), render.count(r.max), f"{r.stddev:,.2f}",
             render.count(r.idle_members)]
            for r in rows
        ],
        title=title,
        caption="revoked: partitions members stop consuming during the rebalance (eager protocols revoke everything)",
    ))


def _validate(
    g: GroupSpec, path: str, fmt: OutputFormat, loaded: group_input.LoadedGroup, assignor: Optional[str]
) -> None:
    group_id = loaded.group_id
    text = read_text(path, max_bytes=MAX_INPUT_BYTES)
    source = display_name(path)
    kind = group_input.detect_kind(text)
    doc = group_input.parse_json(text, source) if kind.startswith("json") else group_input.parse_yaml(text, source)
    assignment = analysis.assignment_from_document(doc, source)
    protocol = analysis.validation_protocol(doc, assignor or loaded.group.assignor)
    report = analysis.validate(g, assignment, protocol=protocol)
    _print_notes(loaded)
    pending = report.pending_count
    if fmt is OutputFormat.table:
        if report.valid:
            render.out().print(f"[green]valid[/green]: {render.count(report.checked_partitions)} partitions, every "
                               "subscribed partition exactly once and only to a subscriber"
                               + (f"; {render.count(pending)} more pending revocation" if pending else ""))
        else:
            render.print_table(["problem"], [[render.escape(p)] for p in report.problems],
                               title=f"{source}: {len(report.problems)} problem(s)")
        if pending:
            # Reported, not a problem: the cooperative protocol withholds them one rebalance.
            render.print_table(
                ["owner", "revokes, then a follow-up rebalance assigns"],
                [[render.display_text(m, limit=render.DISPLAY_LIMIT), render.escape(compact(parts))]
                 for m, parts in report.pending_revocation.items()],
                title="pending revocation (cooperative protocol, KIP-429)",
            )
    elif fmt is OutputFormat.jsonl:
        render.JsonOut(fmt).items({"problem": p} for p in report.problems)
    else:
        render.write_raw(render.json_document([
            ("group", group_id), ("valid", report.valid), ("rebalance_protocol", report.rebalance_protocol),
            ("checked_partitions", report.checked_partitions), ("problems", report.problems),
            ("pending_revocation", render.RawJson(assignment_json(report.pending_revocation))),
        ]))
    if not report.valid:
        raise FindingsReported(f"{source}: the assignment is not valid ({len(report.problems)} problem(s))")


def _replay(loaded: group_input.LoadedGroup, assignor: Optional[str], fmt: OutputFormat) -> None:
    results = analysis.replay(loaded.rounds, assignor)
    differing = [r for r in results if not r.matches]
    _print_notes(loaded)
    if fmt is OutputFormat.table:
        rows = []
        for r in results:
            status = "[green]matches[/green]" if r.matches else f"[bold red]differs ({len(r.differences)} members)[/bold red]"
            rows.append([str(r.generation), "-" if r.offset is None else str(r.offset), r.assignor, status])
        render.print_table(["generation", ("offset", "right"), "assignor", "recorded vs computed"], rows,
                           title=f"replay of group {loaded.group_id!r}")
        for r in differing:
            render.print_table(
                ["member", "recorded", "computed"],
                [[render.display_text(m, limit=render.DISPLAY_LIMIT), render.escape(compact(a)) or "-", render.escape(compact(b)) or "-"]
                 for m, (a, b) in r.differences.items()],
                title=f"generation {r.generation}: differences",
            )
    else:
        items = []
        for r in results:
            diffs = ", ".join(
                f"{json_quote(m)}: {{\"recorded\": {_member_json(a)}, \"computed\": {_member_json(b)}}}"
                for m, (a, b) in r.differences.items()
            )
            items.append(
                f'{{"group": {json_quote(r.group_id)}, "generation": {r.generation}, '
                f'"offset": {"null" if r.offset is None else r.offset}, "assignor": {json_quote(r.assignor)}, '
                f'"matches": {"true" if r.matches else "false"}, "differences": {{{diffs}}}, '
                f'"recorded": {assignment_json(r.recorded, "    ")}, "computed": {assignment_json(r.computed, "    ")}}}'
            )
        if fmt is OutputFormat.jsonl:
            render.JsonOut(fmt).texts([i.replace("\n", "") for i in items])
        else:
            render.write_raw(render.json_document([
                ("group", loaded.group_id or ""), ("input", "group-metadata"), ("all_match", not differing),
                ("rounds", render.RawJson(render.json_array_text(items, "  "))),
            ]))
    if differing:
        gens = ", ".join(str(r.generation) for r in differing)
        raise FindingsReported(
            f"{len(differing)} of {len(results)} recorded generation(s) differ from what the assignor computes ({gens})"
        )


__all__ = ["command", "HELP", "MAN_SECTIONS", "assignment_json", "compact"]
