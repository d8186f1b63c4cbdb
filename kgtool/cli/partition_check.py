"""``kgtool partition-of --check DIR``: the thin CLI over :mod:`kgtool.partitioner.check`."""

from __future__ import annotations

from typing import Any

from kgtool.cli import render
from kgtool.cli.render import OutputFormat
from kgtool.codec.report import ProblemReporter
from kgtool.codec.segment import scan_file
from kgtool.coordinator.lookup import partition_count
from kgtool.coordinator.topic_description import TopicDescription
from kgtool.errors import InputError, UsageError
from kgtool.storage.files import log_files
from kgtool.partitioner.check import (
    CANDIDATES,
    SAME_AS,
    CheckResult,
    Evidence,
    check_partition,
    parse_partition_dir,
    verdict_of,
)

#: Producers listed in full; the rest are summed up in one line.
_MAX_PRODUCERS = 100


def run_check(directory: str, partitions: int | None, description: TopicDescription | None, fmt: OutputFormat) -> None:
    """Check the partition directory and print the result; exit 1 (after printing) when damaged
    batches were reported, as decode-batch does.

    Raises:
        InputError, UsageError: not a partition directory, no partition count, a description of
        another topic. FindingsReported: damage in the segments.
    """
    topic, partition = parse_partition_dir(directory)
    if description is not None and description.topic not in (None, topic):
        raise InputError(f"{description.source}: describes topic {description.topic!r}, but {directory} holds {topic!r}")
    n = partition_count(partitions, description)
    if n is None:
        raise UsageError("--check needs the topic's partition count: --partitions N or --topic-description FILE")
    segments = log_files(directory, offset_named=False)
    if not segments:
        render.warn(f"{directory}: no *.log segment files: an empty partition")
    reporter = ProblemReporter(render.warn)

    def batches():
        for path in segments:
            yield from scan_file(path)

    result = check_partition(directory, n, batches(), topic=topic, partition=partition,
                             on_problem=reporter.problem, segments=len(segments))
    if fmt is OutputFormat.table:
        _table(result, reporter)
    elif fmt is OutputFormat.jsonl:
        render.write_json_lines([_producer_json(e) for e in result.producers])
    else:
        render.print_json(result_json(result, reporter.total.problem_counts))
    reporter.finish()


#: The clients' defaults under "partitioners"; the other candidates under "other_partitioners".
_CLIENTS = ("java", "librdkafka", "sarama")


def _partitioners_json(ev: Evidence, labels=_CLIENTS) -> dict[str, Any]:
    # librdkafka's share leaves out empty keys, which consistent_random places at random.
    return {label: {"matching": ev.matching[label], "share": ev.share(label)} for label in labels}


def _others_json(ev: Evidence) -> dict[str, Any]:
    return _partitioners_json(ev, [label for label in CANDIDATES if label not in _CLIENTS])


def _producer_json(ev: Evidence) -> dict[str, Any]:

    v = verdict_of(ev)
    return {
        "producer_id": ev.producer_id,
        "records": ev.records,
        "keyed": ev.keyed,
        "null_keys": ev.null_keys,
        "first_offset": ev.first_offset,
        "last_offset": ev.last_offset,
        "partitioners": _partitioners_json(ev),
        "other_partitioners": _others_json(ev),
        "verdict": _verdict_json(v),
    }


def _verdict_json(v) -> dict[str, Any]:
    return {"kind": v.kind, "partitioners": v.partitioners, "from_partitions": v.from_partitions, "message": v.message}


def result_json(r: CheckResult, problem_counts: dict[str, int]) -> dict[str, Any]:
    """The ``--format json`` object of a check."""
    ev = r.overall
    return {
        "directory": r.directory,
        "topic": r.topic,
        "partition": r.partition,
        "num_partitions": r.num_partitions,
        "segments": r.segments,
        "records": ev.records,
        "keyed": ev.keyed,
        "null_keys": ev.null_keys,
        "empty_keys": ev.empty_keys,
        "partitioners": _partitioners_json(ev),
        "other_partitioners": _others_json(ev),
        "verdict": _verdict_json(r.verdict),
        "producers": [_producer_json(e) for e in r.producers[:_MAX_PRODUCERS]],
        "more_producers": max(0, len(r.producers) - _MAX_PRODUCERS),
        "problems": dict(sorted(problem_counts.items())),
    }


def _pct(x: float | None) -> str:
    return render.MISSING if x is None else f"{100 * x:.1f}%"


def _table(r: CheckResult, reporter: ProblemReporter) -> None:
    ev = r.overall
    render.print_table(
        ["partitioner", ("matching", "right"), ("share", "right"), "same partitions as"],
        [[label, render.count(ev.matching[label]), _pct(ev.share(label)),
          SAME_AS[label]] for label in CANDIDATES],
        title=f"{r.topic}-{r.partition} ({render.count(r.num_partitions)} partitions): {render.count(ev.records)} "
        f"records, {render.count(ev.keyed)} keyed, {render.count(ev.null_keys)} null keys",
    )
    if len(r.producers) > 1 or (r.producers and r.verdict.kind == "mixed"):

        rows = []
        for e in r.producers[:_MAX_PRODUCERS]:
            rows.append([str(e.producer_id), render.count(e.records), render.count(e.keyed),
                         *[_pct(e.share(label)) for label in CANDIDATES], verdict_of(e).kind])
        render.print_table(
            [("producer id", "right"), ("records", "right"), ("keyed", "right"),
             *[(label, "right") for label in CANDIDATES], "verdict"],
            rows, title="by producer id",
            caption=(f"and {render.count(len(r.producers) - _MAX_PRODUCERS)} more producers"
                     if len(r.producers) > _MAX_PRODUCERS else None),
        )
    style = {"partitioner": "green", "partition_count_change": "yellow", "mixed": "yellow"}.get(r.verdict.kind, "red")
    from rich.markup import escape

    render.out().print(f"[bold {style}]verdict:[/bold {style}] {escape(r.verdict.message)}")
    counts = reporter.total.problem_counts
    if counts:
        render.out().print(
            "damaged batches skipped (their keys are not counted): "
            + ", ".join(f"{render.count(v)} {k}" for k, v in sorted(counts.items()))
        )
