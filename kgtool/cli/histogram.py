"""Rendering of a keys-per-partition histogram (``coordinator-of --histogram``,
``partition-of --histogram``): a Rich bar chart, JSON, or JSON Lines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgtool.cli import render
from kgtool.cli.render import OutputFormat
from kgtool.coordinator.lookup import Histogram


@dataclass(frozen=True)
class Wording:
    """What is counted and what the leader of a partition is to the reader."""

    unit: str = "ids"  # "ids per __consumer_offsets partition"
    broker_field: str = "coordinator"  # the JSON field of a partition's leader
    broker_role: str = "coordinator broker"  # "ids per coordinator broker"


def histogram_doc(h: Histogram, wording: Wording, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object of a histogram; ``extra`` fields follow ``num_partitions``."""
    doc: dict[str, Any] = {"topic": h.topic, "num_partitions": h.num_partitions, **(extra or {})}
    doc.update(
        total=h.total, min=h.min, max=h.max, mean=h.mean, stddev=h.stddev,
        partitions=[
            {"partition": p, "count": c, **({wording.broker_field: b} if h.per_broker is not None else {})}
            for p, c, b in h.per_partition
        ],
    )
    if h.per_broker is not None:
        doc["brokers"] = [{"broker": b, "count": c, "partitions": k} for b, c, k in h.per_broker]
    return doc


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
    if fmt is not OutputFormat.table:
        doc = histogram_doc(h, wording, extra)
        if fmt is OutputFormat.jsonl:
            render.write_json_lines(doc["partitions"])
        else:
            render.print_json(doc)
        return
    peak = max((c for _, c, _ in h.per_partition), default=0)
    columns: list = [("partition", "right")]
    if h.per_broker is not None:
        columns.append(("broker", "right"))
    columns += [(wording.unit, "right"), "load"]
    rows = []
    for p, c, b in h.per_partition:
        row = [str(p)]
        if h.per_broker is not None:
            row.append("-" if b is None else str(b))
        style = "bold red" if c == peak and c > 0 and h.max > h.mean * 1.5 else "cyan"
        row += [str(c), f"[{style}]{render.bar(c, peak)}[/{style}]"]
        rows.append(row)
    stats = (
        f"{h.total} {wording.unit} over {h.num_partitions} partitions: min {h.min}, max {h.max}, "
        f"mean {h.mean:.2f}, stddev {h.stddev:.2f}"
    )
    render.print_table(
        columns,
        rows,
        title=title or f"{wording.unit} per {h.topic} partition",
        caption=stats if caption is None else f"{stats}; {caption}",
    )
    if h.per_broker is not None:
        bpeak = max((c for _, c, _ in h.per_broker), default=0)
        render.print_table(
            [("broker", "right"), ("partitions led", "right"), (wording.unit, "right"), "load"],
            [
                ["none" if b is None else str(b), str(k), str(c), f"[cyan]{render.bar(c, bpeak)}[/cyan]"]
                for b, c, k in h.per_broker
            ],
            title=f"{wording.unit} per {wording.broker_role}",
        )
