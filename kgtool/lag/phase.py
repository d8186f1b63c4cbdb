"""The lag phase of ``spark-audit``: each data partition given (its copies, read from the longest)
is one piece of work of a task, after the offsets-log tasks.

Its inputs are what those tasks collected for the partition (:class:`kgtool.lag.collector.LagInput`,
as arrays): per group that committed on it, the offsets that took effect and when, and the owners
over time. The partition answers ListOffsets by timestamp for every instant needed, all at once
(``end(T)``: the time index and a bounded scan per instant, one forward walk a segment,
:meth:`kgtool.lag.list_offsets.PartitionLog.ends_at`), and the timestamps at the committed
offsets likewise; the rows of the ``lag`` table and Burrow's verdicts come from the lag kernel
(:func:`kgtool.lag.timeline.partition_lag`) as arrays, handed to pyarrow's writer as they are. The task writes the ``lag`` and ``lag_episodes``
tables and the partition's rows of the ``offsets`` table with their lag at the audit's end (or
``--until``), and hands the driver its episodes (for the rules, which span a group's partitions)
and a small summary. Nothing per record of the data partition leaves the task.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgtool.lag.burrow import Status
from kgtool.lag.timeline import (DELETED, LagArrays, PartitionLag, Runs, answer, partition_lag, partition_runs,
                                questions, window_evidence)
from kgtool.lag.collector import LagInput
from kgtool.offsets.options import AuditOptions

#: A data partition's tables part files are numbered after the offsets-log tasks' (the
#: partitions of __consumer_offsets are 0..offsets.topic.num.partitions-1, at most a few hundred).
PART_BASE = 1 << 20
#: The data partitions a lag task prepares ahead of the one it finishes (their pages asked for),
#: read by one thread (two ahead and two threads made the lag phase slower in Spark's workers).
LOOKAHEAD = 1
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


def _lag_over_time(t: np.ndarray, committed: np.ndarray, log: Any, cells: int = SPARK_WIDTH) -> list[int]:
    """The lag at ``cells`` instants evenly spread from the first point to the last: the
    committed offset then (the last point at or before) against the log end then."""
    t0, t1 = int(t[0]), int(t[-1])
    at = np.array([t0 + (t1 - t0) * c // max(cells - 1, 1) for c in range(cells)], np.int64)
    u = np.unique(at)
    ends = log.ends_at(u)[np.searchsorted(u, at)]
    k = np.maximum(np.searchsorted(t, at, "right") - 1, 0)
    return np.maximum(ends - committed[k], 0).tolist()


class _Sequences:
    """A data partition's sequences (one per group and offsets partition) from its inputs: the
    commits concatenated in sequence order, the owners as a table with timelines."""

    def __init__(self, inputs: list[LagInput]) -> None:
        inputs = sorted(inputs, key=lambda i: i.log_partition)
        self.group: list[str] = []
        self.log_partition: list[int] = []
        self.offset_rows: dict[int, dict[str, Any]] = {}
        sizes, when, offset = [], [], []
        owner_of: dict[tuple[Any, Any, Any], int] = {}
        #: each owner's [log partition, id in its offsets partition's owner table] (the driver
        #: has those tables), or the owner itself when its input did not say
        self.owner_refs: list[list[Any]] = []
        otimes, oids, obounds = [], [], [np.zeros(1, np.int64)]
        for inp in inputs:
            base = len(self.group)
            self.group.extend(inp.groups)
            self.log_partition.extend([inp.log_partition] * len(inp.groups))
            sizes.append(np.diff(inp.group_bounds))
            when.append(inp.when)
            offset.append(inp.offset)
            for c, row in inp.offset_rows.items():
                self.offset_rows[base + int(c)] = row
            # the input's owner table into the partition's (an owner may hold it from two inputs)
            refs = inp.owner_refs if len(inp.owner_refs) == len(inp.owners) else [None] * len(inp.owners)
            codes = []
            for o, ref in zip(inp.owners, refs):
                key = tuple(o)
                code = owner_of.get(key)
                if code is None:
                    code = owner_of[key] = len(owner_of)
                    self.owner_refs.append(list(key) if ref is None else [inp.log_partition, ref])
                codes.append(code)
            lut = np.array(codes + [-1], np.int32)
            oids.append(lut[np.where(inp.owner_ids >= 0, inp.owner_ids, len(inp.owners))])
            otimes.append(inp.owner_times)
            obounds.append(inp.owner_bounds[1:] + sum(len(t) for t in otimes[:-1]))
        self.owners: list[tuple[Any, Any, Any]] = list(owner_of)

        def cat(xs: list[np.ndarray], t: Any) -> np.ndarray:
            return np.concatenate(xs).astype(t, copy=False) if xs else np.zeros(0, t)

        self.when, self.offset = cat(when, np.int64), cat(offset, np.int64)
        self.bounds = np.zeros(len(self.group) + 1, np.int64)
        np.cumsum(cat(sizes, np.int64), out=self.bounds[1:])
        self.owner_bounds = cat(obounds, np.int64)
        self.owner_times = cat(otimes, np.int64)
        self.owner_ids = cat(oids, np.int32)

    def owner(self, k: int) -> tuple[Any, Any, Any]:
        return self.owners[k] if k >= 0 else (None, None, None)


_STATUS_NAMES = [s.name for s in sorted(Status)]


def _lag_table(rows: LagArrays, seqs: _Sequences, topic: str, partition: int,
               exact_from: dict[int, int] | None = None) -> Any:
    """The lag table's rows as an Arrow table for pyarrow's Parquet writer (as every table is
    written): the integer columns are the rows' arrays, not copied; the string columns are
    dictionary arrays, codes into their few values (the file holds plain strings either way)."""
    import pyarrow as pa

    from kgtool.offsets.tables import table_schema

    owners = seqs.owners
    n = len(rows)
    schema = table_schema("lag")  # as the table's files hold it: the columns never null not nullable

    def text(indices: np.ndarray, values: list[Any]) -> Any:
        return _dictionary_array(n, *_dictionary_codes(indices, values))

    columns = {
        "group": text(rows.seq, seqs.group),
        "log_partition": pa.array(np.take(np.array(seqs.log_partition, np.int32), rows.seq)),
        "topic": text(np.zeros(n, np.int32), [topic]),
        "partition": pa.array(np.full(n, partition, np.int32)),
        "timestamp": pa.array(rows.t), "committed_offset": pa.array(rows.committed),
        "log_end_offset": pa.array(rows.end), "lag": pa.array(rows.lag), "lag_ms": pa.array(rows.lag_ms),
        "lag_status": text(rows.status, _STATUS_NAMES),
        "consumer_id": text(rows.owner, [o[0] for o in owners]),
        "host": text(rows.owner, [o[1] for o in owners]),
        "client_id": text(rows.owner, [o[2] for o in owners]),
        "exact": pa.array(_exact(rows, seqs, exact_from or {})),
    }
    return pa.Table.from_arrays(list(columns.values()), schema=pa.schema(
        [pa.field(name, a.type, nullable=schema.field(name).nullable) for name, a in columns.items()]))


def _dictionary_codes(indices: np.ndarray, values: list[Any]) -> tuple[np.ndarray, list[str]]:
    """``values[indices]`` as codes (int32, -1 for null) into distinct values: (codes, values).
    An index -1, or a value None, is null."""
    place: dict[Any, int] = {}
    lut = np.array([-1 if v is None else place.setdefault(v, len(place)) for v in values] + [-1], np.int32)
    if len(place) == len(values) and indices.dtype == np.int32 and indices.flags.c_contiguous:
        codes = indices  # each value once, none None: the indices are the codes (-1 null), no gather
    else:
        codes = np.take(lut, indices)  # index -1 takes the last: -1, null
    return codes, list(place)


def _dictionary_array(n: int, codes: np.ndarray, values: list[str]) -> Any:
    """A dictionary-encoded string array of ``codes`` (-1: null) into ``values``, built from its
    buffers: ``pa.array`` of a list of strings imports pandas (a quarter of a second in a fresh
    worker) to look for its objects, and a mask given to it goes through pandas too."""
    import pyarrow as pa

    nulls = int(np.count_nonzero(codes < 0))
    bitmap = None
    if nulls:  # nulls point at value 0, masked
        bitmap = pa.py_buffer(np.packbits(codes >= 0, bitorder="little"))
        codes = np.maximum(codes, 0)
    idx = pa.Array.from_buffers(pa.int32(), n, [bitmap, pa.py_buffer(np.ascontiguousarray(codes, np.int32))], nulls)
    data = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    dictionary = pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data)))
    return pa.DictionaryArray.from_arrays(idx, dictionary, safe=False)


def _exact(rows: LagArrays, seqs: _Sequences, exact_from: dict[int, int]) -> np.ndarray:
    """Each row's ``exact``: at or after its group's log partition's earliest exact instant."""
    if not exact_from:
        return np.ones(len(rows), np.bool_)
    since = np.array([exact_from.get(p, np.iinfo(np.int64).min) for p in seqs.log_partition], np.int64)
    return rows.t >= np.take(since, rows.seq)


@dataclass
class _Work:
    """A data partition's lag, prepared (:func:`prepare`): its copy chosen, its sequences, what
    it asks of the log, and the answers (a future when a thread of the task's finds them)."""

    index: int
    choice: Any  # kgtool.lag.list_offsets.CopyChoice
    seqs: _Sequences
    asked: tuple[np.ndarray, np.ndarray]
    answers: Any = None  # concurrent.futures.Future of kgtool.lag.timeline.answer, or None
    read: list[int] = field(default_factory=list)  # the log partitions of the inputs read


def prepare(index: int, inputs: list[LagInput], options: AuditOptions, end_instant: int | None,
            reader: Any = None) -> _Work:
    """The first half of :func:`lag_partition`: the copy chosen, the sequences, the questions,
    the pages the answers need asked of the kernel (``PartitionLog.prefetch``), and with a
    ``reader`` (a one-thread executor) the answers looked for on it. A task prepares the next
    partition before it finishes this one: that one's reads, which wait on the disk and leave
    the GIL, overlap this one's work."""
    from kgtool.lag.list_offsets import choose_copy

    _tp, dirs = options.lag_partitions[index]
    choice = choose_copy(list(dirs))
    seqs = _Sequences(inputs)
    asked = questions(seqs.bounds, seqs.when, seqs.offset, options.lag_step_ms, end_instant)
    choice.chosen.prefetch(*asked)
    answers = reader.submit(answer, choice.chosen, asked) if reader is not None else None
    return _Work(index, choice, seqs, asked, answers, sorted(i.log_partition for i in inputs))


def lag_partition(index: int, inputs: list[LagInput], options: AuditOptions, end_instant: int | None,
                  write: Callable[[str, int, Any], None] | None = None) -> dict[str, Any]:
    """One data partition's lag; ``write(table, part, rows)`` writes table rows (an Arrow table or
    dicts; when the audit writes tables). Returns its summary (episodes, offsets with lag, the copy
    read)."""
    return finish(prepare(index, inputs, options, end_instant), options, end_instant, write)


def finish(work: _Work, options: AuditOptions, end_instant: int | None,
           write: Callable[[str, int, Any], None] | None = None) -> dict[str, Any]:
    """The second half of :func:`lag_partition`."""
    index, choice, seqs = work.index, work.choice, work.seqs
    (topic, partition), _dirs = options.lag_partitions[index]
    log = choice.chosen
    out = partition_lag(seqs.bounds, seqs.when, seqs.offset, seqs.owner_bounds, seqs.owner_times, seqs.owner_ids,
                        log, step_ms=options.lag_step_ms, until=options.until, end=end_instant, asked=work.asked,
                        answers=work.answers.result() if work.answers is not None else None)
    rows = out.rows
    part = PART_BASE + index
    if options.since is not None:
        shown = rows.t >= options.since
        if not shown.all():
            rows = rows.take(shown)
    table_rows = len(rows)
    if write is not None:
        write("lag", part, _lag_table(rows, seqs, topic, partition, dict(options.exact_from)))
    # the episodes over every row and the state at the end after the last (a consumer that
    # stopped for good is STOP there)
    runs = partition_runs(out, len(seqs.group))
    evidence = window_evidence(seqs.bounds, seqs.when, seqs.offset, runs.seq, runs.start, runs.last)
    episode_rows, found = _episodes(runs, evidence, seqs, topic, partition)
    peaks: dict[str, list[Any]] = {}
    lines: dict[str, str] = {}
    worst_of = runs.seq_worst.tolist()
    # the worst status a sequence's episodes with evidence had (OK without one): what the
    # findings say, not the vacuous verdicts of a window of one commit
    judged = np.full(len(seqs.group), int(Status.OK), np.uint8)
    if len(runs.seq):
        np.maximum.at(judged, runs.seq[evidence], runs.status[evidence])
    for s, (lag, ms, w) in enumerate(zip(runs.seq_peak_lag.tolist(), runs.seq_peak_lag_ms.tolist(), worst_of)):
        if not w:
            continue  # no point
        group = seqs.group[s]
        peak = peaks.setdefault(group, [0, 0, "OK"])
        peak[0], peak[1] = max(peak[0], lag), max(peak[1], ms)
        if judged[s] > Status[peak[2]]:
            peak[2] = Status(int(judged[s])).name
    if options.group_pattern is not None:  # --group's sparklines
        everything = out.rows
        starts = np.searchsorted(everything.seq, np.arange(len(seqs.group) + 1))
        for s, group in enumerate(seqs.group):
            if not worst_of[s] or not options.group_matches(group):
                continue
            a, z = int(starts[s]), int(starts[s + 1])
            t, committed = everything.t[a:z], everything.committed[a:z]
            k = int(out.last[s])
            if k >= out.n:  # the state at the end, after the rows
                t, committed = np.append(t, out.room.t[k]), np.append(committed, out.room.committed[k])
            lines[group] = sparkline(_lag_over_time(t, committed, log))
    offsets, ahead = _offsets_with_lag(out, seqs, log, end_instant)
    if write is not None:
        write("lag_episodes", part, episode_rows)
        write("offsets", part, offsets)
    return {
        "index": index, "topic": topic, "partition": partition, "copy": log.directory,
        "log_end_offset": log.log_end_offset, "behind": [[d, n] for d, n in choice.behind],
        "problems": choice.problems + log.damage(), "notes": sorted(set(log.notes)) + ahead,
        "rows": table_rows,
        "inputs": work.read,  # the driver checks every input sent was read (kgtool.spark.job)
        "episodes": found,
        # the group statuses at the end (Burrow's, of their partitions), and --group's describe rows
        "statuses": [[o["group"], o["lag_status"]] for o in offsets if o["lag_status"] is not None],
        "offsets": [{k: o[k] for k in ("group", "topic", "partition", "offset", "log_end_offset", "lag", "lag_ms",
                                        "lag_status", "consumer_id", "host", "client_id")} for o in offsets
                    if options.group_pattern is not None and options.group_matches(o["group"])],
        "sparklines": lines,
        "peaks": peaks,
    }


def _episodes(runs: Runs, evidence: np.ndarray, seqs: _Sequences, topic: str, partition: int
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The lag_episodes table's rows (:class:`kgtool.lag.timeline.Runs`' episodes), and the same
    for the driver's rules, compact (:data:`EPISODE_FIELDS` lists, groups and owners as indices
    into tables beside them; an owner there as its :attr:`_Sequences.owner_refs`: the driver
    has every offsets partition's owners once, not each data partition's copies)."""
    rows: list[dict[str, Any]] = []
    owner_index: dict[int, int] = {}
    found: dict[str, Any] = {"groups": seqs.group, "log_partitions": seqs.log_partition, "rows": []}
    for e, (s, st, start, end, last, peak, peak_ms, ev) in enumerate(zip(
            runs.seq.tolist(), runs.status.tolist(), runs.start.tolist(), runs.end.tolist(), runs.last.tolist(),
            runs.peak_lag.tolist(), runs.peak_lag_ms.tolist(), evidence.tolist())):
        held = runs.held(e)
        status = Status(st).name
        end_ = None if end == DELETED else end
        rows.append({"group": seqs.group[s], "log_partition": seqs.log_partition[s], "topic": topic,
                     "partition": partition, "status": status, "start": start, "end": end_,
                     "peak_lag": peak, "peak_lag_ms": peak_ms, "owners": [seqs.owner(k)[0] for k in held],
                     "evidence": ev})
        found["rows"].append([s, status, start, end_, last, peak, peak_ms,
                              [owner_index.setdefault(k, len(owner_index)) for k in held], ev])
    found["owners"] = [seqs.owner_refs[k] for k in owner_index]
    return rows, found


#: The fields of an episode handed to the driver (``found["rows"]``), in order.
EPISODE_FIELDS = ("seq", "status", "start", "end", "last", "peak_lag", "peak_lag_ms", "owners", "evidence")


def _offsets_with_lag(out: PartitionLag, seqs: _Sequences, log: Any, end_instant: int | None
                      ) -> tuple[list[dict[str, Any]], list[str]]:
    """The offsets table's rows of the partition with their lag columns: the state at the end
    instant; when no commit of the offset was seen (before --since), the log end alone. And a
    note for each committed offset past the log end of the copy read."""
    res, ahead = [], []
    end = int(log.ends_at(np.array([end_instant], np.int64))[0]) if end_instant is not None else None
    for s, row in sorted(seqs.offset_rows.items()):
        group = seqs.group[s]
        if row["offset"] > log.log_end_offset:
            ahead.append(f"group {group!r} committed offset {row['offset']}, past the log end "
                         f"{log.log_end_offset} of {log.directory}: the copy given holds less than the group read")
        k = int(out.last[s]) if s < len(out.last) else -1
        if k >= 0 and out.room.committed[k] == row["offset"]:
            r = out.row(k)
            member, host, client = seqs.owner(r["owner"])
            lag_cols = {"log_end_offset": r["end"], "lag": r["lag"], "lag_ms": r["lag_ms"],
                        "lag_status": Status(r["status"]).name, "consumer_id": member, "host": host,
                        "client_id": client}
        else:
            lag_cols = {"log_end_offset": end, "lag": None if end is None else end - row["offset"], "lag_ms": None,
                        "lag_status": None, "consumer_id": None, "host": None, "client_id": None}
        res.append({**row, **lag_cols})
    return res, ahead


def task(options: AuditOptions, end_instant: int | None, out_root: str | None, fmt: str,
         storage: dict[str, str]) -> Callable[[list[tuple[int, Callable[[], list[LagInput]]]]], Iterator[str]]:
    """A lag task of the Spark job (:func:`kgtool.spark.job._lag_task` runs it in a
    ``mapInArrow`` over what Spark moved to it): given its data partitions, each as (index, a
    function that decodes its inputs, run on the task's reader thread ahead of their turn), a
    summary per data partition with inputs, as JSON strings."""
    def run(parts: list[tuple[int, Callable[[], list[LagInput]]]]) -> Iterator[str]:
        from kgtool.spark.output import table_writers

        def done(work: _Work) -> str:
            with table_writers() as writers:
                def write(name: str, part: int, rows: Any) -> None:
                    if out_root is None:
                        return
                    from kgtool.offsets.tables import table_schema
                    from kgtool.spark.output import TableWriter

                    if name not in writers:
                        writers[name] = TableWriter(out_root, name, part, table_schema(name), fmt, storage)
                    if len(rows):
                        writers[name].write(rows)

                summary = finish(work, options, end_instant, write)
            return json.dumps(summary, separators=(",", ":"))

        from concurrent.futures import ThreadPoolExecutor

        pending: deque[_Work] = deque()  # prepared: their reads under way while the ones before finish
        with ThreadPoolExecutor(1, thread_name_prefix="kgtool-lag-reads") as reader:
            # the reader thread also decodes each partition's inputs, after the answers before
            inputs_of = reader.submit(parts[0][1]) if parts else None
            for i, (index, _load) in enumerate(parts):
                inputs = inputs_of.result()
                inputs_of = reader.submit(parts[i + 1][1]) if i + 1 < len(parts) else None
                if not inputs:
                    continue
                pending.append(prepare(index, inputs, options, end_instant, reader))
                if len(pending) > LOOKAHEAD:
                    yield done(pending.popleft())
            while pending:
                yield done(pending.popleft())

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
            missing: int, owners: dict[int, list[list[Any]]] | None = None
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The tasks' summaries as the lag rules' findings (one per group and episode: the
    overlapping episodes of its partitions with one status) and the console's lag section.
    ``owners``: each offsets partition's owner table (the offsets-log tasks' ``lag_owners``),
    which the episodes' owners refer to."""
    from kgtool.lag.burrow import Status, group_status
    from kgtool.lag.timeline import Episode, Owner, group_episodes, rule_of
    from kgtool.offsets.tables import group_finding

    by_group: dict[str, dict[tuple[str, int], list[Episode]]] = {}
    log_partition: dict[str, int] = {}
    copy_of: dict[tuple[str, int], str] = {}
    tables = {lp: [tuple(o) for o in table] for lp, table in (owners or {}).items()}
    for r in results:
        tp = (r["topic"], r["partition"])
        copy_of[tp] = r["copy"]
        eps = r["episodes"]
        # (consumer_id, host, client_id): Owner's fields, from its offsets partition's table
        owned = [tables[o[0]][o[1]] if len(o) == 2 else tuple(o) for o in eps["owners"]]
        for seq, status, start, end, last_, peak, peak_ms, held, evidence in eps["rows"]:
            group = eps["groups"][seq]
            ep = Episode(status, start, end, last_, peak, peak_ms, [owned[k] for k in held], evidence)
            by_group.setdefault(group, {}).setdefault(tp, []).append(ep)
            log_partition[group] = eps["log_partitions"][seq]
    last = end_instant if end_instant is not None else max(
        (e.last for g in by_group.values() for eps in g.values() for e in eps), default=0)
    findings = []
    for group in sorted(by_group):
        for ge in group_episodes(group, by_group[group]):
            rule = rule_of(ge, last, options.lag_warn_ms)
            if rule is None:
                continue
            parts = ", ".join(f"{t}-{p}" for t, p in ge.partitions)
            owners = "; ".join(f"{o.consumer_id} (client {o.client_id}, host {o.host})"
                               for o in map(Owner._make, ge.owners)) or "no member"
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
        for group, status in r["statuses"]:
            if group in worst:
                worst[group]["statuses"].append(Status[status])
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
