"""Rendering of a keys-per-partition histogram (``coordinator-of --histogram``,
``partition-of --histogram``): a Rich bar chart (plain columns above 5,000 partitions), JSON,
or JSON Lines.

For people the rows come by load, the busiest partition (and broker) first, ties by number;
JSON keeps partition order, for scripts. A partition without a leader shows as
:data:`render.MISSING`, as kafka-consumer-groups.sh prints a missing value."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kgtool.cli import render
from kgtool.cli.render import OutputFormat
from kgtool.coordinator.lookup import Histogram

# Above this many partitions a Rich table costs more than it helps: plain columns instead.
_RICH_TABLE_LIMIT = 5_000


@dataclass(frozen=True)
class Wording:
    """What is counted and what the leader of a partition is to the reader."""

    unit: str = "ids"  # "ids per __consumer_offsets partition"
    broker_field: str = "coordinator"  # the JSON field of a partition's leader
    broker_role: str = "coordinator broker"  # "ids per coordinator broker"


def _rows(h: Histogram, wording: Wording) -> list[str]:
    # One row per partition, up to --max-partitions of them: built as text with C-level
    # formatting (json.dumps(indent=2) of a million small objects takes seconds).
    if h.per_broker is not None:
        field = wording.broker_field
        return [
            f'{{"partition": {p}, "count": {c}, "{field}": {"null" if b is None else b}}}'
            for p, c, b in h.per_partition
        ]
    return [f'{{"partition": {p}, "count": {c}}}' for p, c, _ in h.per_partition]


def histogram_doc(h: Histogram, wording: Wording, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object of a histogram as a dict; ``extra`` fields follow ``num_partitions``."""
    return json.loads(_json_text(h, wording, extra))


def _json_text(h: Histogram, wording: Wording, extra: dict[str, Any] | None) -> str:
    head = {"topic": h.topic, "num_partitions": h.num_partitions, **(extra or {})}
    head.update(total=h.total, min=h.min, max=h.max, mean=h.mean, stddev=h.stddev)
    fields: list[tuple[str, Any]] = [*head.items(), ("partitions", render.RawJson(render.json_array_text(_rows(h, wording), "  ")))]
    if h.per_broker is not None:
        fields.append(("brokers", [{"broker": b, "count": c, "partitions": k} for b, c, k in h.per_broker]))
    return render.json_document(fields)


def render_histogram(
    h: Histogram,
    fmt: OutputFormat,
    wording: Wording = Wording(),
    *,
    extra: dict[str, Any] | None = None,
    title: str | None = None,
    caption: str | None = None,
) -> None:
    """Print one histogram: a table (and a table per broker), one JSON object, or one JSON
    object per partition."""
    with_broker = h.per_broker is not None
    if fmt is OutputFormat.jsonl:
        render.JsonOut(fmt).texts(_rows(h, wording))
        return
    if fmt is OutputFormat.json:
        render.write_raw(_json_text(h, wording, extra))
        return
    c_ = render.count
    stats = (
        f"{c_(h.total)} {wording.unit} over {c_(h.num_partitions)} partitions: min {c_(h.min)}, max {c_(h.max)}, "
        f"mean {h.mean:,.2f}, stddev {h.stddev:,.2f}"
    )
    missing = render.MISSING
    by_load = sorted(h.per_partition, key=lambda row: (-row[1], row[0]))
    brokers = sorted(h.per_broker or (), key=lambda row: (-row[1], row[0] is None, row[0] or 0))
    if caption is not None:
        stats = f"{stats}; {caption}"
    if h.num_partitions > _RICH_TABLE_LIMIT:
        render.info(f"{render.count(h.num_partitions)} partitions: plain columns instead of a table (use --format json for scripts)")
        header = "partition\t" + ("broker\t" if with_broker else "") + wording.unit
        if with_broker:
            lines = [f"{p}\t{missing if b is None else b}\t{c}" for p, c, b in by_load]
        else:
            lines = [f"{p}\t{c}" for p, c, _ in by_load]
        render.write_raw(header + "\n" + "".join(line + "\n" for line in lines) + stats + "\n")
        if with_broker:
            render.write_raw(
                f"broker\tpartitions led\t{wording.unit}\n"
                + "".join(f"{missing if b is None else b}\t{k}\t{c}\n" for b, c, k in brokers)
            )
        return
    peak = max((c for _, c, _ in h.per_partition), default=0)
    columns: list = [("partition", "right")]
    if with_broker:
        columns.append(("broker", "right"))
    columns += [(wording.unit, "right"), "load"]
    rows = []
    for p, c, b in by_load:
        row = [str(p)]
        if with_broker:
            row.append(missing if b is None else str(b))
        style = "bold red" if c == peak and c > 0 and h.max > h.mean * 1.5 else "cyan"
        row += [c_(c), f"[{style}]{render.bar(c, peak)}[/{style}]"]
        rows.append(row)
    render.print_table(columns, rows, title=title or f"{wording.unit} per {h.topic} partition", caption=stats)
    if with_broker:
        bpeak = max((c for _, c, _ in h.per_broker or ()), default=0)
        render.print_table(
            [("broker", "right"), ("partitions led", "right"), (wording.unit, "right"), "load"],
            [
                [missing if b is None else str(b), c_(k), c_(c), f"[cyan]{render.bar(c, bpeak)}[/cyan]"]
                for b, c, k in brokers
            ],
            title=f"{wording.unit} per {wording.broker_role}",
        )
