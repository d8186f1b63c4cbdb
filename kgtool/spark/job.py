"""The ``spark-audit`` job: one task per ``__consumer_offsets`` partition, one Spark job.

A group's records all live in its coordinator's partition, and a transaction's marker follows its
records in that same partition. So the job replays each partition in log order inside one task,
the way Kafka's coordinator loads a partition (:mod:`kgtool.spark.task`): no shuffle, no window
and no JVM cache of records. Each task decodes its segments (plain offset commits as typed
columns), replays them, writes its partition's tables itself (:mod:`kgtool.spark.output`) and
hands Spark only a few small rows: the coverage row, counts, the first findings and problems.
The driver collects those rows (the one Spark job of the audit), writes the coverage table and
publishes the output directory.

With data partition directories (lag), the query has a second stage: each offsets-log task also
hands Spark its lag inputs, one per data partition, and Spark's shuffle takes each to the lag
task of its data partition (:func:`audit_partitions`), wherever the executors run: no directory
is shared between the stages, so nothing depends on the driver's /tmp or on an executor seeing
another's disk. The driver checks that every input written was read (:func:`check_lag_inputs`).
Measured against the files of an exchange directory (what it replaced) on the lag benchmark
(``benchmarks/bench_spark_audit.py --lag-only --repeat 1``, runs of both alternated on a 2-core
machine shared with other work, 2026-12-02): the lag added 24.7-27.6 s of CPU with files (4
runs), 26.1-31.2 s with the shuffle (2 runs); its wall-time overhead was 58-67% either way
(64-72% with the shuffle), the machine's load deciding more than the exchange.

Memory: a task holds one chunk of decoded commits (about 256k rows) plus the partition's state,
which grows with its groups, committed keys and producers, not with its records; the driver
holds file lists and one summary per partition; the JVMs hold no records, only the lag inputs
in the shuffle (about 4 bytes a commit, spilled to the executors' local dirs by Spark).

Run with ``spark-submit``: ``spark-submit kgtool/spark/job.py [OPTIONS] PATH...`` takes the
options of ``kgtool spark-audit`` and prints what it prints (kgtool must be importable on the
driver and the executors: ``pip install`` it there, or ship it with ``--py-files``).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kgtool.documents import collector_paused
from kgtool.errors import InputError, UsageError
from kgtool.offsets.audit import AuditOptions
from kgtool.offsets.coverage import SegmentFile
from kgtool.offsets.partition import SHOWN_PROBLEMS, sort_key
from kgtool.offsets.tables import RULES, TABLE_NAMES, TABLES
from kgtool.spark.files import is_s3
from kgtool.spark.plan import DEFAULT_SPLIT_BYTES
from kgtool.spark.task import (
    RESULT_COLUMNS,
    SHOWN_FINDINGS,
    PartitionFiles,
    PartitionSummary,
    audit_partition,
    summary_from_rows,
    summary_rows,
)

ROWS_PER_ARROW_BATCH = 8192
PARTITION_COLUMNS: list[tuple[str, str]] = [
    ("log_partition", "int32"),
    ("paths", "list<string>"),
    ("sizes", "list<int64>"),
]


@dataclass
class AuditSummary:
    """What the console shows: small, built from the tasks' summaries."""

    out: str | None
    files: int
    bytes: int
    splits: int  # tasks: one per log partition
    coverage: list[dict[str, Any]]
    counts: dict[str, int]
    groups: int
    findings_by_rule: dict[str, int]
    worst_groups: list[dict[str, Any]]
    findings: list[dict[str, Any]]  # the first SHOWN_FINDINGS, sorted
    problems: list[dict[str, Any]]  # the first SHOWN_PROBLEMS
    problem_count: int
    options: dict[str, Any] = field(default_factory=dict)
    all_findings: list[dict[str, Any]] = field(default_factory=list)
    offsets: list[list[Any]] = field(default_factory=list)  # keep_offsets: [group, topic, partition, offset, expired]
    # the rebalances panel: counts, storms (largest first) and the groups with the most rebalances
    rebalances: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # --group: per group
    # --group: per group, its row of the groups table ("group") and of group_members ("members")
    describe: dict[str, dict[str, Any]] = field(default_factory=dict)
    describe_total: int = 0  # the groups --group matched: more than described when a partition has many
    #: lag (data partitions given): the copies read, groups by worst status, --group's describe rows
    lag: dict[str, Any] = field(default_factory=dict)
    #: the cleaner-offset-checkpoint entries kgtool did not use as given (kgtool.offsets.compaction)
    compaction_warnings: list[str] = field(default_factory=list)

    @property
    def finding_count(self) -> int:
        return sum(self.findings_by_rule.values())


def partition_files(files: list[SegmentFile], empty: tuple[int, ...] = ()) -> list[PartitionFiles]:
    """Group segment files by log partition, in base-offset order (the file names)."""
    by_part: dict[int, list[SegmentFile]] = {p: [] for p in empty}
    for f in files:
        by_part.setdefault(f.log_partition, []).append(f)
    out = []
    for part in sorted(by_part):
        fs = sorted(by_part[part], key=lambda f: f.path.rsplit("/", 1)[-1])
        out.append(PartitionFiles(part, [f.path for f in fs], [f.size for f in fs]))
    return out


# ---- executor side (top level: pickled by reference) ---------------------------------------------
#: With data partitions (lag), the offsets-log tasks' rows: their summary rows (RESULT_COLUMNS),
#: each routed to a lag task (``task``) that passes them on, and what the lag tasks need: a
#: ``lag-meta`` row for every lag task (the partition's last timestamp and earliest exact
#: instant), and each data partition's lag input (:meth:`LagInput.encode`) in ``piece`` rows of
#: at most PIECE_BYTES, for the data partition's lag task.
EXCHANGE_COLUMNS: list[tuple[str, str]] = RESULT_COLUMNS + [
    ("task", "int32"), ("data_partition", "int32"), ("piece", "int32"), ("payload", "binary")]
LAG_INPUT, LAG_META, LAG_SUMMARY = "lag-input", "lag-meta", "lag"
#: A lag input's bytes a row at most: Spark's rows and Arrow's binary arrays (32-bit offsets,
#: cut at spark.sql.execution.arrow.maxBytesPerBatch) stay far from 2 GiB.
PIECE_BYTES = 16 << 20


def _task(options: AuditOptions, out_root: str | None, fmt: str, storage: dict[str, str], split_bytes: int,
          keep_findings: bool, keep_offsets: bool = False,
          route: list[int] | None = None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """:func:`audit_partition` as a ``mapInArrow`` function over :data:`PARTITION_COLUMNS`.
    ``route``: with data partitions, the ``task`` column's value that takes a row to each lag
    task (:func:`_to_lag_tasks`); the rows are then :data:`EXCHANGE_COLUMNS`."""
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from kgtool.spark.faults import maybe_pause
        from kgtool.offsets.tables import arrow_schema

        schema = arrow_schema(RESULT_COLUMNS if route is None else EXCHANGE_COLUMNS)
        for b in batches:
            for d in b.to_pylist():
                maybe_pause(f"partition {d['log_partition']}")
                files = PartitionFiles(d["log_partition"], list(d["paths"]), list(d["sizes"]))
                encoded: list[tuple[int, Any]] = []
                sink = None if route is None else (lambda index, inp: encoded.append((index, inp.encode())))
                summary = audit_partition(files, options, out_root=out_root, fmt=fmt, storage=storage,
                                          split_bytes=split_bytes, keep_findings=keep_findings,
                                          keep_offsets=keep_offsets, lag_sink=sink)
                rows = summary_rows(summary)
                if route is not None:
                    yield from _exchange_batches(summary, rows, encoded, route, schema)
                    continue
                for i in range(0, len(rows), ROWS_PER_ARROW_BATCH):
                    part = rows[i:i + ROWS_PER_ARROW_BATCH]
                    yield pa.RecordBatch.from_arrays(
                        [pa.array([r[c] for r in part], type=f.type) for c, f in enumerate(schema)], schema=schema)

    return run


def _exchange_batches(summary: PartitionSummary, rows: list[tuple[str, int, str]], encoded: list[tuple[int, Any]],
                      route: list[int], schema: Any) -> Iterator[Any]:
    """An offsets-log task's rows for the lag tasks (:data:`EXCHANGE_COLUMNS`): its summary rows
    for lag task ``log_partition % tasks`` to pass on, a ``lag-meta`` row for each lag task, and
    each lag input as pieces for lag task ``data_partition % tasks``, sliced from its buffer
    (one Arrow batch an input, no copy). ``encoded`` is emptied as it goes."""
    import numpy as np
    import pyarrow as pa

    tasks, part = len(route), summary.log_partition
    meta = json.dumps({"last_timestamp": summary.last_timestamp, "exact_from": summary.exact_from})
    small = [(kind, part, text, route[part % tasks]) for kind, _p, text in rows]
    small += [(LAG_META, part, meta, route[k]) for k in range(tasks)]
    for i in range(0, len(small), ROWS_PER_ARROW_BATCH):
        chunk = small[i:i + ROWS_PER_ARROW_BATCH]
        n = len(chunk)
        yield pa.RecordBatch.from_arrays(
            [pa.array([r[0] for r in chunk], pa.string()), pa.array([r[1] for r in chunk], pa.int32()),
             pa.array([r[2] for r in chunk], pa.string()), pa.array([r[3] for r in chunk], pa.int32()),
             pa.nulls(n, pa.int32()), pa.nulls(n, pa.int32()), pa.nulls(n, pa.binary())], schema=schema)
    encoded.reverse()
    while encoded:
        index, buf = encoded.pop()
        size = len(buf)
        pieces = max(1, -(-size // PIECE_BYTES))
        bounds = np.minimum(np.arange(pieces + 1, dtype=np.int64) * PIECE_BYTES, size).astype(np.int32)
        payload = pa.Array.from_buffers(pa.binary(), pieces, [None, pa.py_buffer(bounds), pa.py_buffer(buf)])
        head = json.dumps({"pieces": pieces, "bytes": size})
        yield pa.RecordBatch.from_arrays(
            [pa.array([LAG_INPUT] * pieces, pa.string()), pa.array([part] * pieces, pa.int32()),
             pa.array([head] * pieces, pa.string()), pa.array([route[index % tasks]] * pieces, pa.int32()),
             pa.array([index] * pieces, pa.int32()), pa.array(range(pieces), pa.int32()), payload], schema=schema)
        del buf, payload


def _lag_task(options: AuditOptions, out_root: str | None, fmt: str,
              storage: dict[str, str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A lag task as a ``mapInArrow`` function over what Spark moved to it
    (:data:`EXCHANGE_COLUMNS`): it passes the summary rows on, learns the audit's end instant
    and the exact instants from the ``lag-meta`` rows (one from every offsets-log task), and
    runs :func:`kgtool.lag.phase.task` over the data partitions it was given inputs for; their
    summaries leave as ``lag`` rows (:data:`RESULT_COLUMNS`). It holds its inputs as they came
    (about 4 bytes a commit) until the last row has arrived: a data partition's inputs come
    from every offsets-log task, in no order."""
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        from kgtool.lag import phase
        from kgtool.offsets.tables import arrow_schema

        schema = arrow_schema(RESULT_COLUMNS)
        last: dict[int, int | None] = {}
        exact: dict[int, int] = {}
        # data partition -> log partition -> [pieces expected, {piece: buffer}]
        inputs: dict[int, dict[int, list[Any]]] = {}
        for b in batches:
            kind = b.column(0)
            passed = pc.invert(pc.is_in(kind, pa.array([LAG_INPUT, LAG_META])))
            if pc.any(passed).as_py():
                rows = b.filter(passed)
                yield pa.RecordBatch.from_arrays([rows.column(c) for c in range(len(schema))], schema=schema)
            kinds = kind.to_pylist()
            parts, texts = b.column(1), b.column(2)
            dps, pieces, payload = b.column(4), b.column(5), b.column(6)
            for i, k in enumerate(kinds):
                if k == LAG_META:
                    m = json.loads(texts[i].as_py())
                    lp = parts[i].as_py()
                    last[lp] = m["last_timestamp"]
                    if m["exact_from"] is not None:
                        exact[lp] = m["exact_from"]
                elif k == LAG_INPUT:
                    got = inputs.setdefault(dps[i].as_py(), {}).setdefault(parts[i].as_py(), [None, {}])
                    got[0] = json.loads(texts[i].as_py())["pieces"]
                    got[1][pieces[i].as_py()] = payload[i].as_buffer()
        end = end_instant(options.until, last.values())
        opts = dataclasses.replace(options, exact_from=tuple(sorted(exact.items())))
        work = [(index, _decoder(inputs.pop(index))) for index in sorted(inputs)]
        for text in phase.task(opts, end, out_root, fmt, storage)(work):
            yield pa.RecordBatch.from_arrays([pa.array([LAG_SUMMARY], pa.string()), pa.array([-1], pa.int32()),
                                              pa.array([text], pa.string())], schema=schema)

    return run


def _decoder(by_log_partition: dict[int, list[Any]]) -> Callable[[], list[Any]]:
    """A data partition's inputs, decoded when called (:meth:`LagInput.decode`): those whose
    pieces all came (an input missing a piece is left out, and the driver says so:
    :func:`check_lag_inputs`)."""
    def decode() -> list[Any]:
        from kgtool.lag.collector import LagInput

        out = []
        for _lp, (count, pieces) in sorted(by_log_partition.items()):
            if count is None or sorted(pieces) != list(range(count)):
                continue
            data = pieces[0] if count == 1 else b"".join(pieces[k] for k in range(count))
            out.append(LagInput.decode(data))
        by_log_partition.clear()  # the buffers go once decoded
        return out

    return decode


def end_instant(until: int | None, last_timestamps: Any) -> int | None:
    """The instant lag is judged at: ``--until``, else the latest last record of the log
    partitions (the driver and every lag task compute it alike)."""
    if until is not None:
        return until
    ends = [t for t in last_timestamps if t is not None]
    return max(ends) if ends else None


# ---- driver side -----------------------------------------------------------------------------------
def audit_partitions(spark: Any, parts: list[PartitionFiles], options: AuditOptions, *, out_root: str | None,
                     fmt: str, storage: dict[str, str], split_bytes: int,
                     keep_findings: bool, keep_offsets: bool = False,
                     ) -> tuple[list[PartitionSummary], list[dict[str, Any]], int | None]:
    """The offsets-log tasks (one per log partition, largest first), then, when data partitions
    were given, the lag tasks (a few data partitions a task): their summaries, the lag tasks',
    and the instant lag is judged at (``--until``, else the log's last record).

    With data partitions it is one Spark query of two stages. Each offsets-log task hands Spark,
    beside its summary rows, its lag input for each data partition its groups committed on
    (about 4 bytes a commit: 16-bit steps, those that do not fit beside, :meth:`LagInput.pack`),
    as binary rows for the data partition's lag task (:data:`EXCHANGE_COLUMNS`); Spark's shuffle
    takes each row to its task (``repartitionById``), wherever the executors run: no file system
    is shared but the data partitions' and the output's. Each lag task also gets every
    offsets-log task's last timestamp and exact instant (``lag-meta`` rows), so the end instant
    is known there without a return to the driver, and passes the summary rows on to the
    driver's one ``collect``. The driver then checks that every input written was read
    (:func:`check_lag_inputs`)."""
    from kgtool.spark.schemas import spark_schema

    if not parts:
        return [], [], None
    ordered = sorted(parts, key=lambda p: (-sum(p.sizes), p.log_partition))
    rows = [(p.log_partition, p.paths, p.sizes) for p in ordered]
    rdd = spark.sparkContext.parallelize(rows, len(rows))
    df = spark.createDataFrame(rdd, spark_schema(PARTITION_COLUMNS))
    if not options.lag_partitions:
        result = df.mapInArrow(_task(options, out_root, fmt, storage, split_bytes, keep_findings, keep_offsets),
                               spark_schema(RESULT_COLUMNS))
        return summary_from_rows([(r["kind"], r["log_partition"], r["json"]) for r in result.collect()]), [], None
    # a few data partitions a task (a task's start costs more than a small partition's lag,
    # and each task's first partition waits for its reads): at most 2 tasks a core, data
    # partition k in task k % tasks
    n = min(len(options.lag_partitions), 2 * max(1, spark.sparkContext.defaultParallelism))
    by_id = hasattr(df, "repartitionById")  # Spark 4.1+
    route = list(range(n)) if by_id else hash_routes(n)
    staged = df.mapInArrow(_task(options, out_root, fmt, storage, split_bytes, keep_findings, keep_offsets,
                                 route), spark_schema(EXCHANGE_COLUMNS))
    moved = _to_lag_tasks(staged, n, by_id)
    # as a DataFrame's mapInArrow, as the offsets-log tasks: the same Python workers run them,
    # numpy, pyarrow and kgtool imported already (an RDD's tasks start workers of their own)
    out = moved.mapInArrow(_lag_task(options, out_root, fmt, storage), spark_schema(RESULT_COLUMNS)).collect()
    # acyclic lists and dicts: the collector's passes over the driver's objects as they are made
    # cost as much as the decoding (in the driver, not in Spark's shared workers)
    with collector_paused():
        summaries = summary_from_rows([(r["kind"], r["log_partition"], r["json"]) for r in out
                                       if r["kind"] != LAG_SUMMARY])
        results = sorted((json.loads(r["json"]) for r in out if r["kind"] == LAG_SUMMARY), key=lambda r: r["index"])
    return summaries, results, end_instant(options.until, [s.last_timestamp for s in summaries])


def _to_lag_tasks(staged: Any, tasks: int, by_id: bool) -> Any:
    """``staged`` shuffled so that a row goes to partition ``task`` (:func:`hash_routes`' values
    on a Spark without ``repartitionById``, whose hash partitioning sends them there)."""
    if by_id:
        return staged.repartitionById(tasks, "task")
    return staged.repartition(tasks, "task")


def hash_routes(tasks: int) -> list[int]:
    """For Spark 4.0 (no ``repartitionById``): for each partition ``k`` of ``tasks``, an int
    that ``repartition(tasks, col)`` sends there, ``pmod(hash(v), tasks) == k`` (Spark's
    HashPartitioning: Murmur3Hash of the column, seed 42)."""
    routes: dict[int, int] = {}
    v = 0
    while len(routes) < tasks:
        routes.setdefault(murmur3_int(v) % tasks, v)
        v += 1
    return [routes[k] for k in range(tasks)]


def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of one int column (``Murmur3_x86_32.hashInt``), as a signed int32."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k1 = rotl((value & mask) * 0xCC9E2D51 & mask, 15) * 0x1B873593 & mask
    h1 = (rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & mask
    h1 ^= 4  # the length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & mask
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & mask
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def check_lag_inputs(summaries: list[PartitionSummary], results: list[dict[str, Any]],
                     options: AuditOptions) -> list[dict[str, Any]]:
    """Every lag input an offsets-log task wrote against those the lag tasks read: each
    coverage row gets ``lag_inputs`` and ``lag_inputs_read`` (null without data partitions),
    and each input written but not read is a problem (its data partition's lag rows lack the
    offsets partition's groups), returned."""
    read = {(lp, r["index"]) for r in results for lp in r["inputs"]}
    problems = []
    for s in summaries:
        got = [k for k in s.lag_sent if (s.log_partition, k) in read]
        s.coverage["lag_inputs"], s.coverage["lag_inputs_read"] = len(s.lag_sent), len(got)
        for k in sorted(set(s.lag_sent) - set(got)):
            (topic, partition), dirs = options.lag_partitions[k]
            problems.append({
                "source": f"__consumer_offsets-{s.log_partition}", "position": None, "log_partition": s.log_partition,
                "problem": f"its lag input for {topic}-{partition} was written but no lag task read it: the lag "
                           f"table lacks this partition's groups on {topic}-{partition} ({dirs[0]})"})
    return problems


def combine(summaries: list[PartitionSummary], parts: list[PartitionFiles], out: str | None,
            options: AuditOptions, lag_findings: list[dict[str, Any]] | None = None,
            lag: dict[str, Any] | None = None) -> AuditSummary:
    counts = Counter()
    by_rule: Counter = Counter()
    per_group: dict[str, Counter] = {}
    findings: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    for s in summaries:
        counts.update(s.counts)
        by_rule.update(s.findings_by_rule)
        for g, c in s.group_findings.items():
            per_group.setdefault(g, Counter()).update(c)
        findings.extend(s.findings)
        problems.extend(s.problems)
    for f in lag_findings or ():
        counts["findings"] += 1
        by_rule[f["rule"]] += 1
        per_group.setdefault(f["group"], Counter())[f["rule"]] += 1
        findings.append(f)
    worst = sorted(per_group.items(), key=lambda gc: (-sum(gc[1].values()), gc[0]))[:10]
    return AuditSummary(
        out=out,
        files=sum(len(p.paths) for p in parts),
        bytes=sum(sum(p.sizes) for p in parts),
        splits=len(parts),
        coverage=[s.coverage for s in summaries],
        counts={t: int(counts.get(t, 0)) for t in ("generations", "members", "commits", "findings", "offsets")},
        groups=sum(s.groups for s in summaries),
        findings_by_rule={r: by_rule[r] for r in RULES if by_rule.get(r)},
        worst_groups=[{"group": g, "total": sum(c.values()), **{r: int(c.get(r, 0)) for r in RULES}}
                      for g, c in worst],
        findings=sorted(findings, key=sort_key("findings"))[:SHOWN_FINDINGS],
        problems=sorted(problems, key=lambda p: (p["source"], p["position"]))[:SHOWN_PROBLEMS],
        problem_count=sum(s.problem_count for s in summaries),
        compaction_warnings=[w for s in summaries for w in s.compaction_warnings],
        options={
            "group": options.group_pattern,
            "since": options.since,
            "until": options.until,
            "retention_ms": options.retention_ms,
            "storm_count": options.storm_count,
            "storm_window_ms": options.storm_window_ms,
        },
        all_findings=[f for s in summaries for f in s.all_findings] + list(lag_findings or ()),
        offsets=[o for s in summaries for o in s.offsets],
        describe=dict(sorted(((g, d) for s in summaries for g, d in s.describe.items()), key=lambda gd: gd[0])),
        describe_total=sum(s.describe_total for s in summaries),
        lag=lag or {},
        **combine_rebalances(summaries),
    )


SHOWN_STORMS = 20
SHOWN_REBALANCE_GROUPS = 10


def combine_rebalances(summaries: list[PartitionSummary]) -> dict[str, Any]:
    """The tasks' rebalance summaries as one: a group lives in one partition, so the groups with
    the most rebalances are among each partition's own top ones."""
    storms = sorted((st for s in summaries for st in s.storms),
                    key=lambda st: (-st["count"], st["group"], st["start"]))[:SHOWN_STORMS]
    groups = sorted((g for s in summaries for g in s.rebalance_groups),
                    key=lambda g: (-g["rebalances"], g["group"]))[:SHOWN_REBALANCE_GROUPS]
    timeline: dict[str, list[dict[str, Any]]] = {}
    for s in summaries:
        timeline.update(s.timeline)
    return {
        "rebalances": {
            "count": sum(s.rebalance_count for s in summaries),
            "no_rebalance": sum(s.no_rebalance_count for s in summaries),
            "storm_count": sum(s.storm_count for s in summaries),
            "storms": storms,
            "worst_groups": groups,
        },
        "timeline": dict(sorted(timeline.items())),
    }


def run_audit(
    spark: Any,
    files: list[SegmentFile],
    options: AuditOptions,
    *,
    out: str | None = None,
    fmt: str = "parquet",
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Callable[[str], None] | None = None,
    findings_sink: Callable[[Iterator[dict[str, Any]]], None] | None = None,
    empty_partitions: tuple[int, ...] = (),
    keep_offsets: bool = False,
    read_tables: Callable[[str, str, dict[str, str]], None] | None = None,
) -> AuditSummary:
    """The whole job: audit every partition (writing the tables under ``out``), summarize.

    ``findings_sink`` receives every finding, sorted by log partition, group and record offset.
    ``keep_offsets``: the summary carries every row of the offsets table (``--reset-plan``).
    ``read_tables(root, fmt, storage)`` is called once every table is complete, before the
    summary is returned: ``root`` is ``out`` once published, or, without ``out``, a temporary
    local directory the tasks wrote the tables to (removed afterwards: the driver and the tasks
    must share the filesystem, as with a ``local`` master). An exception it raises fails the
    audit (``out`` is then published, the temporary directory removed).
    """
    from kgtool.spark import output
    from kgtool.spark.files import storage_options
    from kgtool.offsets.tables import table_schema

    if fmt not in ("parquet", "jsonl"):
        raise UsageError(f"unknown output format {fmt!r} (parquet or jsonl)")
    parts = partition_files(files, empty_partitions)
    if not parts:
        raise InputError("no segment files to audit")
    say = progress or (lambda _m: None)
    remote_s3 = any(is_s3(p) for part in parts for p in part.paths) or (out is not None and is_s3(out))
    storage = storage_options(spark) if remote_s3 else {}
    tmp = None
    if out is not None:
        tmp = output.temporary_root(out)
        output.prepare(tmp, storage)
    elif read_tables is not None:
        import tempfile

        tmp = tempfile.mkdtemp(prefix="kgtool-tables-")
    try:
        say(f"auditing {len(parts)} partition(s), {sum(len(p.paths) for p in parts)} segment file(s)")
        summaries, lag_results, end_instant = audit_partitions(
            spark, parts, options, out_root=tmp, fmt=fmt, storage=storage, split_bytes=split_bytes,
            keep_findings=findings_sink is not None, keep_offsets=keep_offsets)
        lag_findings, lag, unread = None, None, []
        if options.lag_partitions:
            unread = check_lag_inputs(summaries, lag_results, options)
            from kgtool.lag import phase as lag_task

            with collector_paused():
                lag_findings, lag = lag_task.combine(lag_results, options, end_instant,
                                                     sum(s.lag_missing for s in summaries),
                                                     {s.log_partition: s.lag_owners for s in summaries})
        if tmp is not None:
            from kgtool.lag.phase import PART_BASE

            # the lag rules' findings; the lag tables always exist (empty without data partitions)
            for name, rows in (("findings", lag_findings or []), ("lag", []), ("lag_episodes", [])):
                w = output.TableWriter(tmp, name, PART_BASE - 1, table_schema(name), fmt, storage)
                w.write(rows)
                w.close()
        summary = combine(summaries, parts, out, options, lag_findings, lag)
        for r in lag_results:  # copies of a data partition that disagree: problems, as decode problems are
            for file, position, text in r["problems"]:
                summary.problems.append({"source": file, "position": position, "log_partition": -1, "problem": text})
                summary.problem_count += 1
        summary.problems.extend(unread)  # lag inputs written and not read: never silent
        summary.problem_count += len(unread)
        if tmp is not None:
            if out is not None:
                say(f"writing tables to {out}")
            cov = output.TableWriter(tmp, "coverage", 0, table_schema("coverage"), fmt, storage)
            cov.write(summary.coverage)
            cov.close()
            if out is not None:
                output.publish(tmp, out, TABLE_NAMES, storage)
                tmp = None
        if read_tables is not None:
            read_tables(out if out is not None else tmp, fmt, storage)
    finally:
        if tmp is not None:
            output.discard(tmp, storage)
    if findings_sink is not None:
        findings_sink(iter(summary.all_findings))  # each task sorted its own; partitions in order
    return summary


def summary_json(summary: AuditSummary) -> dict[str, Any]:
    return {
        "out": summary.out,
        "files": summary.files,
        "bytes": summary.bytes,
        "tasks": summary.splits,
        "groups": summary.groups,
        "counts": summary.counts,
        "findings_by_rule": summary.findings_by_rule,
        "worst_groups": summary.worst_groups,
        "findings": summary.findings,
        "problem_count": summary.problem_count,
        "problems": summary.problems,
        "coverage": summary.coverage,
        "options": summary.options,
        "rebalances": summary.rebalances,
        "timeline": summary.timeline,
        "describe": summary.describe,
        "describe_total": summary.describe_total,
        "lag": summary.lag,
    }


def main(argv: list[str] | None = None) -> int:
    """``spark-submit kgtool/spark/job.py [OPTIONS] [PATH]...``: ``kgtool spark-audit`` itself
    (its options, console output and exit statuses), on the session spark-submit configured.

    The entry point of a script, so it may reach up to the CLI: the job has one set of options
    and one rendering, not a second copy of them here."""
    import sys

    from kgtool.cli.main import run_subcommand

    _stderr_to_spark_submit()
    return run_subcommand("spark-audit", sys.argv[1:] if argv is None else argv)


def _stderr_to_spark_submit() -> bool:
    """Spark's PythonRunner starts the driver's Python with its stderr merged into its stdout
    (``ProcessBuilder.redirectErrorStream``), so kgtool's one-line errors and warnings would
    land in the data (``--format json``...). On Linux, write them to spark-submit's own stderr
    (the parent JVM's) instead; elsewhere, or not under spark-submit, nothing changes."""
    import os

    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return False
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/comm", encoding="utf-8") as fh:
            if fh.read().strip() != "java":
                return False
        fd = os.open(f"/proc/{parent}/fd/2", os.O_WRONLY | os.O_APPEND)
    except OSError:
        return False
    os.dup2(fd, 2)
    os.close(fd)
    return True


if __name__ == "__main__":  # pragma: no cover - spark-submit entry point
    import os
    import sys

    # Run as a script, this file's directory heads sys.path: its modules (files, plan, task...)
    # must not shadow top-level ones.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    raise SystemExit(main())
