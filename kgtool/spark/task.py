"""One ``spark-audit`` task: a whole ``__consumer_offsets`` partition, as its coordinator loads it.

A group's records all live in its coordinator's partition and a transaction's marker follows its
records there, so a partition is audited by one task, in log order, with no shuffle:

1. a pre-pass over the control batches finds each producer's last transaction marker (so a
   commit whose transaction never ends is known at once: :class:`PartitionReplay`);
2. the segments, in base-offset order, are decoded into chunks (plain offset commits as typed
   columns, rare records as entries: :mod:`kgtool.offsets.columns`) and replayed
   (:class:`~kgtool.offsets.partition.PartitionReplay`);
3. the tables are written by the task itself (:mod:`kgtool.spark.output`), the commits table
   streamed chunk by chunk;
4. what the driver needs (the coverage row, counts, the first findings and problems) leaves as a
   few small rows.

Local segments are memory-mapped; remote ones are read range by range (``split_bytes``, cut at
batch boundaries). The same function audits a partition in one process (tests, benchmarks).
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from kgtool.errors import SparkFailure
from kgtool.offsets.entries import CONTROL, END_TXN_TYPES, NO_PRODUCER_ID
from kgtool.lag.collector import LagCollector
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.partition import PartitionReplay, sort_key
from kgtool.offsets.tables import TABLES, member_dicts
from kgtool.spark.files import RangeReader
from kgtool.spark.plan import DEFAULT_SPLIT_BYTES, plan_ranges

SHOWN_FINDINGS = 50
#: Segment bytes a task keeps mapped from the markers pre-pass to the replay (2.5 segments of
#: Kafka's default offsets.topic.segment.bytes, 100 MiB): a mapping read twice costs its page
#: faults once, and the pages it holds are clean page cache,
#: bounded by this whatever the partition's size.
KEEP_MAPPED_BYTES = 256 << 20
SHOWN_REBALANCE_GROUPS = 10  # groups with the most rebalances, per partition (a group lives in one)
TIMELINE_GROUPS = 20  # --group: generation timelines of at most this many groups per partition ...
TIMELINE_ROWS = 500  # ... of their last this many generation changes
#: --group: the groups and group_members rows of at most this many groups per partition (the
#: console's describe view), and at most this many members of each.
DESCRIBE_GROUPS = TIMELINE_GROUPS
DESCRIBE_MEMBERS = 500
_TIMELINE_DROP = frozenset({"group", "log_partition", "position", "source"})
_GROUP_REBALANCE_CAUSE = itemgetter("group", "rebalance", "cause")
#: The tables a task writes (coverage is the driver's: one row per partition).
TASK_TABLES = ("generations", "members", "commits", "findings", "offsets", "rebalances", "groups", "group_members")


@dataclass
class PartitionFiles:
    """The segments of one log partition, in base-offset order (file names)."""

    log_partition: int
    paths: list[str]
    sizes: list[int]


@dataclass
class PartitionSummary:
    """What the driver receives from a task."""

    log_partition: int
    coverage: dict[str, Any]
    counts: dict[str, int]
    groups: int
    findings_by_rule: dict[str, int]
    group_findings: dict[str, dict[str, int]]  # group -> rule -> count (groups with findings)
    findings: list[dict[str, Any]]  # the first SHOWN_FINDINGS, sorted
    problems: list[dict[str, Any]]
    problem_count: int
    all_findings: list[dict[str, Any]] = field(default_factory=list)  # when asked for
    offsets: list[list[Any]] = field(default_factory=list)  # when asked for: [group, topic, partition, offset, expired]
    # the rebalances table, summarized: rows with and without a rebalance, the groups with the most
    # rebalances, the first storms (kgtool.offsets.rebalances), and --group's timelines
    rebalance_count: int = 0
    no_rebalance_count: int = 0
    rebalance_groups: list[dict[str, Any]] = field(default_factory=list)
    storms: list[dict[str, Any]] = field(default_factory=list)
    storm_count: int = 0
    timeline: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # --group: the matched groups' rows of the groups table ("group") and group_members ("members"),
    # the first DESCRIBE_GROUPS of describe_total
    describe: dict[str, dict[str, Any]] = field(default_factory=dict)
    describe_total: int = 0
    #: the lag phase's inputs: (data partition index, kgtool.lag.collector.LagInput), when the
    #: task is not given a sink for them (in-process use)
    lag: list[tuple[int, Any]] = field(default_factory=list)
    #: the data partitions (indices) this partition's task made a lag input for: the driver
    #: checks that the lag tasks read every one (kgtool.spark.job.check_lag_inputs)
    lag_sent: list[int] = field(default_factory=list)
    #: the partition's last record timestamp (the audit's end instant is the latest of them)
    last_timestamp: int | None = None
    #: committed partitions (offsets rows) whose data partition was not given: no lag for them
    lag_missing: int = 0
    #: a compacted partition's earliest exact instant (kgtool.offsets.compaction): lag rows
    #: before it are exact = false; None: every instant is
    exact_from: int | None = None
    #: the cleaner-offset-checkpoint entry's problems (outside the log...): warnings
    compaction_warnings: list[str] = field(default_factory=list)
    #: the owners the lag inputs name by id ([member_id, host, client_id] at each id,
    #: kgtool.lag.collector.LagCollector.owner_table): the lag phase's episodes refer to them
    lag_owners: list[list[Any]] = field(default_factory=list)


def _ranges(rd: RangeReader, path: str, size: int, split_bytes: int,
            storage: dict[str, str] | None) -> Iterator[tuple[Any, int, int, int]]:
    """(data, start, end, base_position) pieces of one file: the whole mmap for a local file,
    batch-aligned ranges read one at a time for a remote one."""
    if rd.data is not None:
        yield rd.data, 0, len(rd.data), 0
        return
    for start, end in plan_ranges(path, size, split_bytes, storage):
        yield rd.read(start, end - start), start, end, start


def _decoder() -> tuple[Callable[..., Any], Callable[..., Any], Any]:
    from kgtool.offsets.columns import KeyTable, decode_commit_chunks, transaction_markers

    return decode_commit_chunks, transaction_markers, KeyTable


def last_markers(files: PartitionFiles, options: AuditOptions, split_bytes: int,
                 storage: dict[str, str] | None, keep: dict[str, RangeReader] | None = None,
                 times: dict[int, int] | None = None) -> dict[int, int]:
    """Each producer's last transaction marker in the partition (record offset). ``keep``: the
    first memory-mapped (local) files, up to :data:`KEEP_MAPPED_BYTES`, are left open there for
    the main pass to read through the same mappings (their pages are faulted in once, not twice;
    the others are mapped again). ``times``: filled with every marker's timestamp by record offset
    (when a transaction's offsets took effect, for lag)."""
    _decode, markers, _keys = _decoder()
    last: dict[int, int] = {}
    until = options.until
    kept = 0
    for path, size in zip(files.paths, files.sizes):
        rd = RangeReader(path, storage)
        try:
            for data, start, end, base in _ranges(rd, path, size, split_bytes, storage):
                for m in markers(data, source=path, log_partition=files.log_partition, start=start, end=end,
                                 base_position=base, chain_from=start):
                    if m.kind != CONTROL or not m.is_control or m.producer_id == NO_PRODUCER_ID \
                            or m.control_type not in END_TXN_TYPES:
                        continue
                    if until is not None and m.offset >= 0 and m.timestamp >= until:
                        continue
                    if times is not None:
                        times[m.offset] = m.timestamp
                    if m.offset > last.get(m.producer_id, -1):
                        last[m.producer_id] = m.offset
        finally:
            if keep is not None and rd.data is not None and kept + size <= KEEP_MAPPED_BYTES:
                keep[path] = rd
                kept += size
            else:
                rd.close()
    return last


def audit_partition(
    files: PartitionFiles,
    options: AuditOptions,
    *,
    out_root: str | None = None,
    fmt: str = "parquet",
    storage: dict[str, str] | None = None,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    keep_findings: bool = False,
    keep_offsets: bool = False,
    pure: bool | None = None,
    sink: Callable[[str, Any], None] | None = None,
    max_rows: int = 1 << 18,
    lag_sink: Callable[[int, Any], None] | None = None,
) -> PartitionSummary:
    """Audit one log partition; write its tables under ``out_root`` (if given); summarize.

    ``sink(table, arrow_table)`` also receives every table as it is produced (tests).
    ``keep_offsets``: the summary carries the offsets table's rows (for ``--reset-plan``).
    ``lag_sink(index, input)``: receives the lag phase's inputs, one per data partition (its
    index in ``options.lag_partitions``, a :class:`~kgtool.lag.collector.LagInput`) as they are
    made (the Spark job hands them to Spark); without it they stay in the summary (in-process
    use). Either way the summary's ``lag_sent`` lists the data partitions given an input."""
    from kgtool.spark.output import TableWriter
    from kgtool.offsets.tables import table_schema

    part = files.log_partition
    decode, _markers, KeyTable = _decoder()
    writers: dict[str, Any] = {}
    if out_root is not None:
        for name in TASK_TABLES:
            writers[name] = TableWriter(out_root, name, part, table_schema(name), fmt, storage)

    marker_times: dict[int, int] | None = {} if options.lag_partitions else None
    lag = LagCollector(options.lag_index(), files.log_partition, marker_times) if options.lag_partitions else None

    def commits(table: Any) -> None:
        if "commits" in writers:
            writers["commits"].write(table)
        if sink is not None:
            sink("commits", table)

    counts: Counter = Counter()
    by_rule: Counter = Counter()
    per_group: dict[str, Counter] = {}
    head: list[dict[str, Any]] = []  # the first SHOWN_FINDINGS findings in sort order
    every: list[dict[str, Any]] = []
    plan: list[list[Any]] = []
    rebalances = RebalanceSummary(options.group_pattern is not None)
    describe: dict[str, dict[str, Any]] = {}

    def rows(name: str, batch: Any) -> None:  # dict rows; the offsets table as an Arrow table
        counts[name] += len(batch)
        written = batch
        if lag is not None and name == "offsets":
            written = lag.offsets_table(batch)  # the lag phase writes the others, with their lag
        if name in writers:
            writers[name].write(written)
        if sink is not None:
            sink(name, member_dicts(written) if name == "members" else written)
        if name == "offsets" and keep_offsets:  # an Arrow table
            plan.extend(map(list, zip(*(batch.column(c).to_pylist()
                                        for c in ("group", "topic", "partition", "offset", "expired")))))
        if name == "rebalances":
            rebalances.add(batch)
        if name in ("groups", "group_members") and options.group_pattern is not None:
            keep_described(describe, name, batch)
        if name != "findings":
            return
        for f in batch:
            by_rule[f["rule"]] += 1
            per_group.setdefault(f["group"], Counter())[f["rule"]] += 1
        head.extend(batch)
        head.sort(key=sort_key("findings"))
        del head[SHOWN_FINDINGS:]
        if keep_findings:
            every.extend(batch)

    try:
        mapped: dict[str, RangeReader] = {}
        try:
            rp = PartitionReplay(part, options, sink=commits, pure=pure, rows_sink=rows,
                                 history_sink=lag.replay_chunk if lag is not None else None,
                                 history_rows=lag.history_rows if lag is not None else None,
                                 last_markers=last_markers(files, options, split_bytes, storage, keep=mapped,
                                                           times=marker_times))
        except BaseException:
            for rd in mapped.values():
                rd.close()
            raise
        keys = KeyTable()
        try:
            stop = False
            for path, size in zip(files.paths, files.sizes):
                with mapped.pop(path, None) or RangeReader(path, storage) as rd:
                    for data, start, end, base in _ranges(rd, path, size, split_bytes, storage):
                        for chunk in decode(data, source=path, log_partition=part, keys=keys, start=start,
                                            end=end, base_position=base, chain_from=start, pure=pure,
                                            max_rows=max_rows):
                            # --until: the read stops at the first record past the instant, unless
                            # the log was cleaned before it (read on: exactness at T, names)
                            stop = rp.read(chunk, keys)
                            if stop:
                                break
                        if stop:
                            break
                if stop:
                    break
            rp.cover.whole = not stop
            rp.finish()
        except MemoryError:
            raise SparkFailure(_out_of_memory(part, rp)) from None
        finally:
            for rd in mapped.values():  # files after an --until cut, or after an error
                rd.close()
        # the lag phase's inputs before the tables are published: a failure there leaves none
        # of them behind
        lag_inputs, lag_sent = _lag_inputs(lag, lag_sink) if lag is not None else ([], [])
        for w in writers.values():
            w.close()
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    return PartitionSummary(
        log_partition=part,
        coverage=rp.coverage(len(files.paths), sum(files.sizes)),
        counts={"generations": counts["generations"], "members": counts["members"], "commits": rp.commit_rows,
                "findings": counts["findings"], "offsets": counts["offsets"]},
        groups=rp.output_groups(),
        findings_by_rule=dict(by_rule),
        group_findings={g: dict(c) for g, c in per_group.items()},
        findings=head,
        problems=[{"source": p.source, "position": p.position, "log_partition": part, "problem": p.problem}
                  for p in rp.problems],
        problem_count=rp.problem_count,
        all_findings=sorted(every, key=sort_key("findings")) if keep_findings else [],
        offsets=plan,
        describe=describe,
        describe_total=counts["groups"] if options.group_pattern is not None else 0,
        lag=lag_inputs,
        lag_sent=lag_sent,
        lag_missing=lag.missing if lag is not None else 0,
        lag_owners=[list(o) for o in lag.owner_table] if lag is not None else [],
        last_timestamp=rp.cover.last_timestamp if rp.cover.last_timestamp is not None and
        rp.cover.last_timestamp >= 0 else None,
        exact_from=rp.compaction.exact_from(rp.cover.whole),
        compaction_warnings=list(rp.compaction.warnings),
        **rebalances.result(rp, per_group),
    )


def keep_described(describe: dict[str, dict[str, Any]], table: str, rows: list[dict[str, Any]]) -> None:
    """Keep --group's rows of the groups and group_members tables (dicts) for the console's
    describe view: the first :data:`DESCRIBE_GROUPS` groups, :data:`DESCRIBE_MEMBERS` members
    of each (the group row's member_count says how many there are)."""
    if table == "groups":
        for r in rows:
            if len(describe) < DESCRIBE_GROUPS:
                describe[r["group"]] = {"group": r, "members": []}
        return
    for r in rows:
        d = describe.get(r["group"])
        if d is not None and len(d["members"]) < DESCRIBE_MEMBERS:
            d["members"].append(r)


class RebalanceSummary:
    """The rebalances rows of a partition as the summary shows them: counts per group (bounded
    by the partition's groups) and, with ``--group``, each matched group's generation timeline
    (bounded: TIMELINE_GROUPS groups, their last TIMELINE_ROWS changes)."""

    def __init__(self, timeline: bool) -> None:
        self.count = 0
        self.no_rebalance = 0
        self.groups: dict[str, list[Any]] = {}  # group -> [rebalances, no rebalance, causes]
        self.timeline: dict[str, deque] | None = {} if timeline else None

    def add(self, rows: list[dict[str, Any]]) -> None:
        # counted in C (a row per generation record: rows repeat a few keys)
        for (group, rebalance, cause), n in Counter(map(_GROUP_REBALANCE_CAUSE, rows)).items():
            g = self.groups.get(group)
            if g is None:
                g = self.groups[group] = [0, 0, Counter()]
            if rebalance:
                self.count += n
                g[0] += n
            else:
                self.no_rebalance += n
                g[1] += n
            g[2][cause] += n
        if self.timeline is None:
            return
        for r in rows:
            lines = self.timeline.get(r["group"])
            if lines is None:
                if len(self.timeline) >= TIMELINE_GROUPS:
                    continue
                lines = self.timeline[r["group"]] = deque(maxlen=TIMELINE_ROWS)
            lines.append({k: v for k, v in r.items() if k not in _TIMELINE_DROP})

    def result(self, rp: PartitionReplay, findings_per_group: dict[str, Counter]) -> dict[str, Any]:
        from kgtool.offsets.rebalances import STORM_RULE

        worst = sorted(self.groups.items(), key=lambda kv: (-kv[1][0], kv[0]))[:SHOWN_REBALANCE_GROUPS]
        return {
            "rebalance_count": self.count,
            "no_rebalance_count": self.no_rebalance,
            "rebalance_groups": [
                {"group": name, "rebalances": n, "no_rebalance": m,
                 "storms": int(findings_per_group.get(name, Counter()).get(STORM_RULE, 0)),
                 "causes": dict(causes.most_common())}
                for name, (n, m, causes) in worst if n or m],
            "storms": rp.rebalance_log.storms,
            "storm_count": rp.rebalance_log.storm_total,
            "timeline": {} if self.timeline is None else {g: list(v) for g, v in sorted(self.timeline.items())},
        }


def _out_of_memory(part: int, rp: PartitionReplay) -> str:
    """One line for a task that ran out of memory: the partition, its largest group."""
    big = rp.largest_group()
    where = "" if big is None else f" (its largest group, {big[0]!r}, has {big[1]:,} records so far)"
    return (f"spark-audit: __consumer_offsets-{part} does not fit the Python worker's memory{where}: "
            "raise spark.executor.pyspark.memory (e.g. --conf spark.executor.pyspark.memory=4g), or "
            "spark.executor.memoryOverhead on a cluster")


def _lag_inputs(lag: LagCollector, sink: Callable[[int, Any], None] | None
                ) -> tuple[list[tuple[int, Any]], list[int]]:
    """The lag phase's inputs: handed to ``sink`` one at a time (the Spark job), else kept; and
    the data partitions given one."""
    if sink is None:
        kept = list(lag.payloads())
        return kept, [index for index, _inp in kept]
    sent = []
    for index, inp in lag.payloads():
        sink(index, inp)
        sent.append(index)
    return [], sent


# ---- the summary as rows (the only data a task hands to Spark) ----------------------------------
RESULT_COLUMNS: list[tuple[str, str]] = [("kind", "string"), ("log_partition", "int32"), ("json", "string")]


def summary_rows(s: PartitionSummary) -> list[tuple[str, int, str]]:
    head = {k: v for k, v in s.__dict__.items() if k not in ("all_findings", "offsets", "lag")}
    rows = [("summary", s.log_partition, json.dumps(head, separators=(",", ":")))]
    rows += [("finding", s.log_partition, json.dumps(f, separators=(",", ":"))) for f in s.all_findings]
    rows += [("offset", s.log_partition, json.dumps(o, separators=(",", ":"))) for o in s.offsets]
    return rows


def summary_from_rows(rows: list[tuple[str, int, str]]) -> list[PartitionSummary]:
    summaries: dict[int, PartitionSummary] = {}
    findings: dict[int, list[dict[str, Any]]] = {}
    offsets: dict[int, list[list[Any]]] = {}
    for kind, part, text in rows:
        if kind == "summary":
            summaries[part] = PartitionSummary(**json.loads(text))
        elif kind == "offset":
            offsets.setdefault(part, []).append(json.loads(text))
        else:
            findings.setdefault(part, []).append(json.loads(text))
    for part, fs in findings.items():
        summaries[part].all_findings = fs  # in the task's (sorted) order
    for part, os_ in offsets.items():
        summaries[part].offsets = os_
    return [summaries[p] for p in sorted(summaries)]
