"""The lag phase of ``spark-audit``: one task per data partition given (its copies, read from the
longest), after the offsets-log tasks.

Its inputs are what those tasks collected for the partition (:mod:`kgtool.offsets.lag_input`): per
group that committed on it, the offsets that took effect and when, and the owners over time. The
task answers ListOffsets by timestamp for every instant needed (``end(T)``: the time index and one
bounded scan per instant, :mod:`kgtool.storage.list_offsets`), computes the rows of the ``lag``
table and Burrow's verdicts (:mod:`kgtool.offsets.lag`), writes the ``lag`` and ``lag_episodes``
tables and the partition's rows of the ``offsets`` table with their lag at the audit's end (or
``--until``), and hands the driver its episodes (for the rules, which span a group's partitions)
and a small summary. Nothing per record of the data partition leaves the task.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kgtool.offsets.burrow import Status
from kgtool.offsets.lag import LogView, episodes, lag_rows
from kgtool.offsets.lag_input import effective_of, owners_of
from kgtool.offsets.options import AuditOptions

#: A data partition's tables part files are numbered after the offsets-log tasks' (the
#: partitions of __consumer_offsets are 0..offsets.topic.num.partitions-1, at most a few hundred).
PART_BASE = 1 << 20
#: Owners listed per episode, sparkline width.
SPARK_WIDTH = 40
_BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(values: list[int], width: int = SPARK_WIDTH) -> str:
    """``values`` as at most ``width`` block characters (each the largest of its stretch)."""
    if not values:
        return ""
    n = len(values)
    cells = [max(values[k * n // width:max((k + 1) * n // width, k * n // width + 1)]) for k in range(min(width, n))]
    top = max(cells)
    if top <= 0:
        return _BLOCKS[1] * len(cells)
    return "".join(_BLOCKS[1 + min(7, (v * 8 - 1) // top)] if v > 0 else _BLOCKS[1] for v in cells)


def _lag_over_time(rows: list[Any], view: LogView, cells: int = SPARK_WIDTH) -> list[int]:
    """The lag at ``cells`` instants evenly spread from the first row to the last: the committed
    offset then (the last row at or before) against the log end then."""
    t0, t1 = rows[0].timestamp, rows[-1].timestamp
    out, k = [], 0
    for c in range(cells):
        t = t0 + (t1 - t0) * c // max(cells - 1, 1)
        while k + 1 < len(rows) and rows[k + 1].timestamp <= t:
            k += 1
        out.append(max(view.end(t) - rows[k].committed_offset, 0))
    return out


def lag_partition(index: int, payloads: Iterable[dict[str, Any]], options: AuditOptions, end_instant: int | None,
                  write: Callable[[str, int, list[dict[str, Any]]], None] | None = None) -> dict[str, Any]:
    """One data partition's lag; ``write(table, part, rows)`` writes table rows (when the audit
    writes tables). Returns its summary (episodes, offsets with lag, the copy read)."""
    from kgtool.storage.list_offsets import choose_copy

    (topic, partition), dirs = options.lag_partitions[index]
    choice = choose_copy(list(dirs))
    log = choice.chosen
    view = LogView(log.end_at, log.timestamp_at)
    table_rows: list[dict[str, Any]] = []
    episode_rows: list[dict[str, Any]] = []
    offsets: list[dict[str, Any]] = []
    found: list[dict[str, Any]] = []
    lines: dict[str, str] = {}
    peaks: dict[str, list[Any]] = {}  # group -> [peak lag, peak lag ms, worst status] over the span
    ahead: list[str] = []  # committed offsets past the log end of the copy read
    rows_written = 0
    part = PART_BASE + index
    since = options.since
    for p in payloads:
        group, lp = p["group"], p["log_partition"]
        head = {"group": group, "log_partition": lp, "topic": topic, "partition": partition}
        rows, at_end = lag_rows(effective_of(p), owners_of(p), view, step_ms=options.lag_step_ms,
                                until=options.until, end=end_instant)
        shown = [r for r in rows if since is None or r.timestamp >= since]
        table_rows.extend({**head, **r.to_dict()} for r in shown)
        # the episodes run to the end: a consumer that stopped for good is STOP there
        points = rows + [at_end] if at_end is not None and (not rows or at_end.timestamp > rows[-1].timestamp) \
            else rows
        for e in episodes(points):
            d = {**head, "status": e.status, "start": e.start, "end": e.end, "peak_lag": e.peak_lag,
                 "peak_lag_ms": e.peak_lag_ms, "owners": [o.consumer_id for o in e.owners]}
            episode_rows.append(d)
            found.append({**d, "last": e.last, "owner_details": [[o.consumer_id, o.host, o.client_id]
                                                                 for o in e.owners]})
        if points:
            peak = peaks.setdefault(group, [0, 0, "OK"])
            peak[0] = max(peak[0], max(r.lag for r in points))
            peak[1] = max(peak[1], max(r.lag_ms for r in points))
            worst = max((Status[r.lag_status] for r in points), default=Status.OK)
            if worst > Status[peak[2]]:
                peak[2] = worst.name
        if options.group_pattern is not None and options.group_matches(group) and points:
            lines[group] = sparkline(_lag_over_time(points, view))  # --group's describe table only
        row = p.get("offset_row")
        if row is not None and row["offset"] > log.log_end_offset:
            ahead.append(f"group {group!r} committed offset {row['offset']}, past the log end "
                         f"{log.log_end_offset} of {log.directory}: the copy given holds less than the group read")
        if row is not None:
            row = {**row, **_lag_columns(at_end if at_end is not None and at_end.committed_offset == row["offset"]
                                         else None, row["offset"], view, end_instant)}
            offsets.append(row)
        if write is not None and len(table_rows) >= 65536:  # bounded: rows go out as they come
            write("lag", part, table_rows)
            rows_written += len(table_rows)
            table_rows = []
    if write is not None:
        write("lag", part, table_rows)
        write("lag_episodes", part, episode_rows)
        write("offsets", part, offsets)
    rows_written += len(table_rows)
    return {
        "index": index, "topic": topic, "partition": partition, "copy": log.directory,
        "log_end_offset": log.log_end_offset, "behind": [[d, n] for d, n in choice.behind],
        "problems": choice.problems + log.problems, "notes": sorted(set(log.notes)) + ahead,
        "rows": rows_written,
        "episodes": found,
        "offsets": [{k: o[k] for k in ("group", "topic", "partition", "offset", "log_end_offset", "lag", "lag_ms",
                                        "lag_status", "consumer_id", "host", "client_id")} for o in offsets
                    if options.group_matches(o["group"])],
        "sparklines": lines,
        "peaks": peaks,
    }


def _lag_columns(at_end: Any, offset: int, view: LogView, end_instant: int | None) -> dict[str, Any]:
    """The offsets table's lag columns: the state at the end instant, or, when no commit of the
    offset was seen (before --since), the log end alone."""
    if at_end is not None:
        d = at_end.to_dict()
        return {k: d[k] for k in ("log_end_offset", "lag", "lag_ms", "lag_status", "consumer_id", "host",
                                  "client_id")}
    end = view.end(end_instant) if end_instant is not None else None
    return {"log_end_offset": end, "lag": None if end is None else end - offset, "lag_ms": None,
            "lag_status": None, "consumer_id": None, "host": None, "client_id": None}


def task(options: AuditOptions, end_instant: int | None, out_root: str | None, fmt: str,
         storage: dict[str, str]) -> Callable[[int, Iterator[Any]], Iterator[str]]:
    """The Spark task (``mapPartitionsWithIndex`` over the lag inputs partitioned by data
    partition): its summary as one JSON string."""
    def run(index: int, items: Iterator[Any]) -> Iterator[str]:
        payloads = [json.loads(text) for _k, text in items]
        if not payloads or index >= len(options.lag_partitions):
            return
        from kgtool.spark.output import table_writers

        with table_writers() as writers:
            def write(name: str, part: int, rows: list[dict[str, Any]]) -> None:
                if out_root is None:
                    return
                from kgtool.offsets.tables import TABLES, arrow_schema
                from kgtool.spark.output import TableWriter

                if name not in writers:
                    writers[name] = TableWriter(out_root, name, part, arrow_schema(TABLES[name]), fmt, storage)
                if rows:
                    writers[name].write(rows)

            summary = lag_partition(index, payloads, options, end_instant, write)
        yield json.dumps(summary, separators=(",", ":"))

    return run


# ---- driver side -----------------------------------------------------------------------------------

def iso_ms(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC (a finding's message)."""
    import datetime as dt

    t = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _fmt_ms(ms: int) -> str:
    s = ms // 1000
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{ms / 1000:g}s"


def combine(results: list[dict[str, Any]], options: AuditOptions, end_instant: int | None,
            missing: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The tasks' summaries as the lag rules' findings (one per group and episode: the
    overlapping episodes of its partitions with one status) and the console's lag section."""
    from kgtool.offsets.burrow import Status, group_status
    from kgtool.offsets.lag import Episode, Owner, group_episodes, rule_of
    from kgtool.offsets.tables import group_finding

    by_group: dict[str, dict[tuple[str, int], list[Episode]]] = {}
    log_partition: dict[str, int] = {}
    copy_of: dict[tuple[str, int], str] = {}
    for r in results:
        copy_of[(r["topic"], r["partition"])] = r["copy"]
        for e in r["episodes"]:
            ep = Episode(e["status"], e["start"], e["end"], e["last"], e["peak_lag"], e["peak_lag_ms"],
                         [Owner(*o) for o in e["owner_details"]])
            by_group.setdefault(e["group"], {}).setdefault((e["topic"], e["partition"]), []).append(ep)
            log_partition[e["group"]] = e["log_partition"]
    last = end_instant if end_instant is not None else max(
        (e.last for g in by_group.values() for eps in g.values() for e in eps), default=0)
    findings = []
    for group in sorted(by_group):
        for ge in group_episodes(group, by_group[group]):
            rule = rule_of(ge, last, options.lag_warn_ms)
            if rule is None:
                continue
            parts = ", ".join(f"{t}-{p}" for t, p in ge.partitions)
            owners = "; ".join(f"{o.consumer_id} (client {o.client_id}, host {o.host})" for o in ge.owners) \
                or "no member"
            until = "still at the end" if ge.end is None else f"until {iso_ms(ge.end)}"
            what = {"lag-stall": "commits went on but the offset did not move while data kept arriving",
                    "consumer-stopped": "no commit while the lag grew",
                    "lag-growing": f"the lag did not go down for longer than {_fmt_ms(options.lag_warn_ms)}"}[rule]
            message = (f"group {group!r} on {parts}: {what} ({ge.status} from {iso_ms(ge.start)}, {until}; "
                       f"peak lag {ge.peak_lag:,} records, {_fmt_ms(ge.peak_lag_ms)}); owned by {owners}")
            tp = ge.partitions[0]
            row = group_finding(rule, group, log_partition[group], record_offset=None, position=None,
                                source=copy_of.get(tp), timestamp=ge.start, generation_id=None,
                                previous_generation_id=None, message=message)
            row["topic"], row["partition"] = (tp[0], tp[1]) if len(ge.partitions) == 1 else (None, None)
            findings.append(row)
    # groups by worst status over the span, then peak lag (the console's summary); their
    # status at the end (or --until) as Burrow gives a group's
    worst: dict[str, dict[str, Any]] = {}
    for r in results:
        for g, (lag, lag_ms, status) in r["peaks"].items():
            w = worst.setdefault(g, {"group": g, "worst": "OK", "peak_lag": 0, "peak_lag_ms": 0, "statuses": []})
            w["peak_lag"] = max(w["peak_lag"], lag)
            w["peak_lag_ms"] = max(w["peak_lag_ms"], lag_ms)
            if Status[status] > Status[w["worst"]]:
                w["worst"] = status
        for o in r["offsets"]:
            if o["lag_status"] is not None and o["group"] in worst:
                worst[o["group"]]["statuses"].append(Status[o["lag_status"]])
    groups = []
    for w in worst.values():
        status = group_status(w.pop("statuses")).name
        groups.append({**w, "status": status})
    groups.sort(key=lambda g: (-int(Status[g["worst"]]), -g["peak_lag"], g["group"]))
    section = {
        "at": end_instant,
        "partitions": [{k: r[k] for k in ("topic", "partition", "copy", "log_end_offset", "behind", "problems",
                                          "notes", "rows")} for r in results],
        "groups": groups,
        "describe": sorted((o for r in results for o in r["offsets"]),  # --group's table only
                           key=lambda o: (o["group"], o["topic"], o["partition"])) if options.group_pattern else [],
        "sparklines": {f"{g}|{r['topic']}-{r['partition']}": line for r in results for g, line in
                       r["sparklines"].items()},
        "without_data": missing,
    }
    return findings, section
