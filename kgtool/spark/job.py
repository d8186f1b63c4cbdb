"""The ``spark-audit`` job: DataFrame transforms plus a thin I/O entry point.

Stages (each one a Spark stage; the driver holds only file lists, split lists, one coverage
row per partition and the summary counts):

1. plan: one task per segment file walks the batch chain and emits byte ranges of about
   ``split_bytes`` (:mod:`kgtool.spark.plan`); the ranges come back to the driver (one row
   per range).
2. decode: one task per range decodes its batches with kgtool's codec and the
   ``__consumer_offsets`` schemas (``mapInArrow``: entries leave Python as Arrow batches of
   at most 8192 rows). The entries are persisted (memory and disk).
3. coverage: an aggregation per log partition.
4. transactions: a window per (log partition, producer id) gives each transactional record
   the marker that resolves it (``first(marker) over (order by offset rows between 1
   following and unbounded following)``), the distributed twin of
   :func:`kgtool.offsets.entries.annotate_transactions`.
5. replay: ``groupBy(log_partition, group).applyInArrow`` runs the pure-Python replay
   (:func:`kgtool.offsets.replay.replay_columns`) per group, in offset order; all records of a
   group are in one log partition, so groups are independent.
6. output: each table is parsed from the replay's JSON rows with its schema, sorted, and
   written as Parquet or JSON Lines into a temporary directory that is renamed into place.

Run with ``spark-submit``: ``spark-submit kgtool/spark/job.py PATH... --out DIR`` (kgtool
must be importable on the driver and the executors: ``pip install`` it there, or ship a zip
with ``--py-files``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kgtool.errors import InputError, UsageError
from kgtool.offsets.audit import AuditOptions, apply_since
from kgtool.offsets.coverage import SegmentFile
from kgtool.offsets.entries import (
    CONTROL,
    ENTRY_NAMES,
    PROBLEM,
)
from kgtool.offsets.tables import COVERAGE, RULES, TABLE_NAMES, TABLES
from kgtool.spark.faults import maybe_pause
from kgtool.spark.files import is_s3, storage_options
from kgtool.spark.plan import DEFAULT_SPLIT_BYTES, plan_ranges
from kgtool.spark.schemas import (
    FILE_COLUMNS,
    REPLAY_COLUMNS,
    SPLIT_COLUMNS,
    arrow_schema,
    entry_schema,
    spark_schema,
    table_schema,
)

ROWS_PER_ARROW_BATCH = 8192
SORT_KEYS: dict[str, list[str]] = {
    "generations": ["log_partition", "group", "record_offset"],
    "members": ["log_partition", "group", "record_offset", "member_id"],
    "commits": ["log_partition", "group", "record_offset"],
    "findings": ["log_partition", "group", "record_offset", "rule", "topic", "partition"],
    "coverage": ["log_partition"],
}
SHOWN_FINDINGS = 50
SHOWN_PROBLEMS = 20


@dataclass
class AuditSummary:
    """What the console shows: small, collected from aggregations."""

    out: str | None
    files: int
    bytes: int
    splits: int
    coverage: list[dict[str, Any]]
    counts: dict[str, int]
    groups: int
    findings_by_rule: dict[str, int]
    worst_groups: list[dict[str, Any]]
    findings: list[dict[str, Any]]  # the first SHOWN_FINDINGS, sorted
    problems: list[dict[str, Any]]  # the first SHOWN_PROBLEMS
    problem_count: int
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def finding_count(self) -> int:
        return sum(self.findings_by_rule.values())


# ---- executor-side functions (top level: pickled by reference) ----------------------------
def _plan_partition(split_bytes: int, storage: dict[str, str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = arrow_schema(SPLIT_COLUMNS)
        for b in batches:
            rows = []
            for f in b.to_pylist():
                for start, end in plan_ranges(f["path"], f["size"], split_bytes, storage):
                    rows.append({"path": f["path"], "log_partition": f["log_partition"], "start": start, "end": end})
            yield pa.RecordBatch.from_pylist(rows, schema=schema)

    return run


def decode_range(path: str, log_partition: int, start: int, end: int,
                 storage: dict[str, str] | None = None) -> Iterator[tuple]:
    """Entry rows (tuples) of the batches starting in ``[start, end)`` of ``path`` (only that
    range is read for remote files; local ones are memory-mapped)."""
    from kgtool.offsets.decode import rows_from_bytes
    from kgtool.spark.files import RangeReader

    with RangeReader(path, storage) as rd:
        if rd.data is not None:
            yield from rows_from_bytes(rd.data, source=path, log_partition=log_partition, start=start,
                                       end=end, chain_from=start)
        else:
            data = rd.read(start, end - start)
            yield from rows_from_bytes(data, source=path, log_partition=log_partition, start=start,
                                       end=end, base_position=start, chain_from=start)


def _to_batch(rows: list[tuple], schema: Any) -> Any:
    import pyarrow as pa

    columns = list(zip(*rows))
    return pa.RecordBatch.from_arrays(
        [pa.array(col, type=f.type) for col, f in zip(columns, schema)], schema=schema
    )


def _decode_partition(options: AuditOptions, storage: dict[str, str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        maybe_pause("decode task")
        schema = arrow_schema_entries()
        until = options.until
        ts_i, off_i = ENTRY_NAMES.index("timestamp"), ENTRY_NAMES.index("offset")
        rows: list[tuple] = []
        for b in batches:
            for s in b.to_pylist():
                for row in decode_range(s["path"], s["log_partition"], s["start"], s["end"], storage):
                    # AuditOptions.keep_record, on the tuple
                    if until is not None and row[off_i] >= 0 and row[ts_i] >= until:
                        continue
                    rows.append(row)
                    if len(rows) >= ROWS_PER_ARROW_BATCH:
                        yield _to_batch(rows, schema)
                        rows = []
        if rows:
            yield _to_batch(rows, schema)

    return run


def arrow_schema_entries() -> Any:
    from kgtool.offsets.entries import ENTRY_COLUMNS

    return arrow_schema(ENTRY_COLUMNS)


def _replay_group(end_ts: dict[int, int | None], options: AuditOptions) -> Callable[[Any], Any]:
    def run(table: Any) -> Any:
        import pyarrow as pa

        from kgtool.offsets.replay import replay_columns

        schema = arrow_schema(REPLAY_COLUMNS)
        if table.num_rows == 0:
            return schema.empty_table()
        part = table.column("log_partition")[0].as_py()
        group = table.column("group")[0].as_py()
        if not options.group_matches(group):
            return schema.empty_table()
        cols = table.sort_by("offset").to_pydict()
        result = replay_columns(cols, log_end_timestamp=end_ts.get(part), retention_ms=options.retention_ms)
        result = apply_since(result, options.since)
        parts = []
        n = len(result.commit_columns["offset"])
        if n:
            cc = result.commit_columns
            arrays = [pa.array(["commits"] * n, type=pa.string())]
            arrays += [pa.array(cc[f.name], type=f.type) for f in schema if f.name not in ("table", "row")]
            arrays.append(pa.nulls(n, type=pa.string()))
            parts.append(pa.Table.from_arrays(arrays, schema=schema))
        small = [(name, r) for name, rows in (("generations", result.generations), ("members", result.members),
                                               ("findings", result.findings)) for r in rows]
        if small:
            m = len(small)
            arrays = []
            for f in schema:
                if f.name == "table":
                    arrays.append(pa.array([name for name, _r in small], type=f.type))
                elif f.name in ("group", "log_partition", "record_offset"):
                    arrays.append(pa.array([r[f.name] for _n, r in small], type=f.type))
                elif f.name == "row":
                    arrays.append(pa.array([json.dumps(r, separators=(",", ":")) for _n, r in small], type=f.type))
                else:
                    arrays.append(pa.nulls(m, type=f.type))
            parts.append(pa.Table.from_arrays(arrays, schema=schema))
        return pa.concat_tables(parts) if parts else schema.empty_table()

    return run


# ---- transforms -------------------------------------------------------------------------
def plan_splits(spark: Any, files: list[SegmentFile], split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[dict[str, Any]]:
    """Byte ranges of every file, planned by executors (one task per file, at most
    ``defaultParallelism * 4`` tasks)."""
    if not files:
        return []
    rows = [(f.path, f.size, f.log_partition) for f in files]
    n = max(1, min(len(rows), spark.sparkContext.defaultParallelism * 4))
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, n), spark_schema(FILE_COLUMNS))
    storage = storage_options(spark) if any(is_s3(f.path) for f in files) else {}
    splits = df.mapInArrow(_plan_partition(split_bytes, storage), spark_schema(SPLIT_COLUMNS)).collect()
    return sorted((r.asDict() for r in splits), key=lambda r: (r["log_partition"], r["path"], r["start"]))


def decode_entries(spark: Any, splits: list[dict[str, Any]], options: AuditOptions) -> Any:
    """A DataFrame of entries (:data:`kgtool.offsets.entries.ENTRY_COLUMNS`), one task per split."""
    rows = [(s["path"], s["log_partition"], s["start"], s["end"]) for s in splits]
    rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
    df = spark.createDataFrame(rdd, spark_schema(SPLIT_COLUMNS))
    storage = storage_options(spark) if any(is_s3(s["path"]) for s in splits) else {}
    return df.mapInArrow(_decode_partition(options, storage), entry_schema())


def coverage_aggregates(entries: Any) -> Any:
    """Per log partition: the counters of :mod:`kgtool.offsets.coverage` (without file sizes)."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    cls = (
        F.when(kind == PROBLEM, F.lit("problems"))
        .when((kind == CONTROL) | F.col("is_control"), F.lit("control_records"))
        .when(kind.isin("offset_commit", "legacy_offset_commit") & F.col("value").isNull()
              & F.col("commit_offset").isNull(), F.lit("offset_tombstones"))
        .when(kind.isin("offset_commit", "legacy_offset_commit"), F.lit("offset_commits"))
        .when((kind == "group_metadata") & F.col("value").isNull(), F.lit("group_tombstones"))
        .when(kind == "group_metadata", F.lit("group_metadata"))
        .when(kind.startswith("consumer_group_"), F.lit("consumer_group_records"))
        .otherwise(F.lit("other_records"))
    )
    df = entries.withColumn("_cls", cls)
    rec = F.col("_cls") != "problems"
    counters = [
        "offset_commits", "offset_tombstones", "group_metadata", "group_tombstones",
        "consumer_group_records", "other_records", "control_records", "problems",
    ]
    return df.groupBy("log_partition").agg(
        F.count_distinct(F.when(rec, F.struct("source", "position"))).alias("batches"),
        F.sum(F.when(rec, 1).otherwise(0)).alias("records"),
        F.min(F.when(rec, F.col("offset"))).alias("first_offset"),
        F.max(F.when(rec, F.col("offset"))).alias("last_offset"),
        F.min(F.when(rec, F.col("timestamp"))).alias("first_timestamp"),
        F.max(F.when(rec, F.col("timestamp"))).alias("last_timestamp"),
        F.count_distinct(F.when(rec, F.col("group"))).alias("groups"),
        *[F.sum(F.when(F.col("_cls") == c, 1).otherwise(0)).alias(c) for c in counters],
    )


def coverage_table(aggregates: list[dict[str, Any]], files: list[SegmentFile]) -> list[dict[str, Any]]:
    """Final coverage rows (same as :func:`kgtool.offsets.coverage.coverage_rows`)."""
    seg: dict[int, list[int]] = {}
    for f in files:
        s = seg.setdefault(f.log_partition, [0, 0])
        s[0] += 1
        s[1] += f.size
    by_part = {a["log_partition"]: a for a in aggregates}
    rows = []
    for part in sorted(set(by_part) | set(seg)):
        a = by_part.get(part, {})
        n = int(a.get("records") or 0)
        first, last = a.get("first_offset"), a.get("last_offset")
        row = {
            "log_partition": part,
            "segments": seg.get(part, [0, 0])[0],
            "bytes": seg.get(part, [0, 0])[1],
            "batches": int(a.get("batches") or 0),
            "records": n,
            "first_offset": first,
            "last_offset": last,
            "offsets_absent": None if not n else last - first + 1 - n,
            "first_timestamp": a.get("first_timestamp"),
            "last_timestamp": a.get("last_timestamp"),
        }
        for name, _t in COVERAGE:
            if name not in row:
                row[name] = int(a.get(name) or 0)
        rows.append({name: row[name] for name, _t in COVERAGE})
    return rows


def annotate_transactions(entries: Any) -> Any:
    """Give each transactional record the marker that resolves it (see module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    txn_cond = (F.col("producer_id") != -1) & (F.col("is_transactional") | F.col("is_control"))
    txn = entries.filter(txn_cond)
    rest = entries.filter(~txn_cond)
    w = (
        Window.partitionBy("log_partition", "producer_id")
        .orderBy("offset")
        .rowsBetween(1, Window.unboundedFollowing)
    )
    is_marker = F.col("is_control") & (F.col("kind") == CONTROL)
    marker = F.when(is_marker, F.struct(
        F.col("offset").alias("o"), F.col("control_type").alias("t"),
        F.col("position").alias("p"), F.col("timestamp").alias("ts"),
    ))
    nxt = F.first(marker, ignorenulls=True).over(w)
    target = F.col("is_transactional") & ~F.col("is_control")
    annotated = (
        txn.withColumn("_m", nxt)
        .withColumn("marker_offset", F.when(target, F.col("_m.o")))
        .withColumn("marker_type", F.when(target, F.col("_m.t")))
        .withColumn("marker_position", F.when(target, F.col("_m.p")))
        .withColumn("marker_timestamp", F.when(target, F.col("_m.ts")))
        .drop("_m")
    )
    return annotated.unionByName(rest)


def _group_filter(options: AuditOptions) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        for b in batches:
            groups = b.column(b.schema.get_field_index("group"))
            keep = [g for g in pc.unique(groups).to_pylist() if g is not None and options.group_matches(g)]
            yield b.filter(pc.is_in(groups, value_set=pa.array(keep, type=pa.string())))

    return run


def replay(entries: Any, end_ts: dict[int, int | None], options: AuditOptions) -> Any:
    """The replay output rows (:data:`kgtool.spark.schemas.REPLAY_COLUMNS`)."""
    from pyspark.sql import functions as F

    records = entries.filter((F.col("kind") != PROBLEM) | F.col("kind").isNull())
    ann = annotate_transactions(records).filter(F.col("group").isNotNull())
    if options.group_pattern is not None:
        # --group is a Python regex: drop other groups in Python before the shuffle.
        ann = ann.mapInArrow(_group_filter(options), ann.schema)
    return ann.groupBy("log_partition", "group").applyInArrow(
        _replay_group(end_ts, options), spark_schema(REPLAY_COLUMNS)
    )


def table_from_replay(replayed: Any, name: str) -> Any:
    """One output table, typed; sorted within each partition (no global sort: the replay's
    partitioning is deterministic, so a re-run writes the same files). Commits leave the
    replay in order (groups in the shuffle's sorted order, commits in record order), so only
    the small tables are sorted."""
    from pyspark.sql import functions as F

    rows = replayed.filter(F.col("table") == name)
    if name == "commits":
        return rows.select(*[c for c, _t in TABLES[name]])
    return (
        rows.select(F.from_json("row", table_schema(name)).alias("r"))
        .select(*[F.col(f"r.`{c}`").alias(c) for c, _t in TABLES[name]])
        .sortWithinPartitions(*SORT_KEYS[name])
    )


@dataclass
class AuditFrames:
    """The DataFrames of one run (tests read them; the job writes them)."""

    files: list[SegmentFile]
    splits: list[dict[str, Any]]
    entries: Any
    coverage: list[dict[str, Any]]
    replayed: Any

    def table(self, spark: Any, name: str) -> Any:
        if name == "coverage":
            return spark.createDataFrame(self.coverage, table_schema("coverage")).orderBy("log_partition")
        return table_from_replay(self.replayed, name)

    def unpersist(self) -> None:
        for df in (self.entries, self.replayed):
            try:
                df.unpersist()
            except Exception:  # noqa: BLE001 - best effort cleanup
                pass


def build(
    spark: Any,
    files: list[SegmentFile],
    options: AuditOptions,
    *,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    progress: Callable[[str], None] | None = None,
) -> AuditFrames:
    """Plan, decode, cover and replay; returns persisted DataFrames."""
    from pyspark import StorageLevel

    say = progress or (lambda _m: None)
    say(f"planning splits of {len(files)} segment file(s)")
    splits = plan_splits(spark, files, split_bytes)
    say(f"decoding {len(splits)} split(s)")
    entries = decode_entries(spark, splits, options).persist(StorageLevel.MEMORY_AND_DISK)
    say("computing coverage")
    aggregates = [r.asDict() for r in coverage_aggregates(entries).collect()]
    cov = coverage_table(aggregates, files)
    end_ts = {r["log_partition"]: r["last_timestamp"] for r in cov}
    say("replaying groups")
    replayed = replay(entries, end_ts, options).persist(StorageLevel.MEMORY_AND_DISK)
    return AuditFrames(files=files, splits=splits, entries=entries, coverage=cov, replayed=replayed)


def write_tables(spark: Any, frames: AuditFrames, out: str, fmt: str) -> None:
    """Write every table under ``out`` (one directory per table) via a temporary directory
    renamed into place: an interrupted run leaves ``out`` as it was."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    Path = jvm.org.apache.hadoop.fs.Path
    target = Path(out)
    fs = target.getFileSystem(conf)
    parent = target.getParent()
    tmp = Path(parent, f".{target.getName()}.tmp-{uuid.uuid4().hex[:12]}")
    try:
        for name in TABLE_NAMES:
            df = frames.table(spark, name)
            if name == "coverage":
                df = df.coalesce(1)
            w = df.write.mode("errorifexists")
            dest = tmp.toString() + "/" + name
            if fmt == "jsonl":
                w.option("ignoreNullFields", "false").json(dest)
            else:
                w.parquet(dest)
        if fs.exists(target):
            if not fs.getFileStatus(target).isDirectory():
                raise InputError(f"{out}: exists and is not a directory")
            old = Path(parent, f".{target.getName()}.old-{uuid.uuid4().hex[:12]}")
            if not fs.rename(target, old):
                raise InputError(f"{out}: cannot move the previous output aside")
            if not fs.rename(tmp, target):
                fs.rename(old, target)
                raise InputError(f"{out}: cannot rename the new output into place")
            fs.delete(old, True)
        else:
            if parent is not None and not fs.exists(parent):
                fs.mkdirs(parent)
            if not fs.rename(tmp, target):
                raise InputError(f"{out}: cannot rename the new output into place")
    finally:
        if fs.exists(tmp):
            fs.delete(tmp, True)


def summarize(spark: Any, frames: AuditFrames, out: str | None, options: AuditOptions) -> AuditSummary:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    # One pass over the replay output for the counts; the rest reads the (small) findings.
    tables = ("generations", "members", "commits", "findings")
    agg = frames.replayed.agg(
        F.count_distinct("log_partition", "group").alias("groups"),
        *[F.sum(F.when(F.col("table") == t, 1).otherwise(0)).alias(t) for t in tables],
    ).collect()[0]
    counts = {t: int(agg[t] or 0) for t in tables}
    groups = int(agg["groups"] or 0)
    findings = table_from_replay(frames.replayed, "findings").persist(StorageLevel.MEMORY_AND_DISK)
    try:
        by_rule = {r["rule"]: int(r["count"]) for r in findings.groupBy("rule").count().collect()}
        worst = (
            findings.groupBy("group").pivot("rule", list(RULES)).count()
            .withColumn("total", sum((F.coalesce(F.col(f"`{r}`"), F.lit(0)) for r in RULES), F.lit(0)))
            .orderBy(F.desc("total"), "group").limit(10).collect()
        )
        shown = [r.asDict(recursive=True)
                 for r in findings.orderBy(*SORT_KEYS["findings"]).limit(SHOWN_FINDINGS).collect()]
    finally:
        findings.unpersist()
    worst_groups = [
        {"group": w["group"], "total": int(w["total"]), **{r: int(w[r] or 0) for r in RULES}} for w in worst
    ]
    probs_df = frames.entries.filter(F.col("kind") == PROBLEM)
    problem_count = probs_df.count()
    problems = [
        {"source": r["source"], "position": r["position"], "log_partition": r["log_partition"], "problem": r["problem"]}
        for r in probs_df.orderBy("source", "position").limit(SHOWN_PROBLEMS).collect()
    ]
    return AuditSummary(
        out=out,
        files=len(frames.files),
        bytes=sum(f.size for f in frames.files),
        splits=len(frames.splits),
        coverage=frames.coverage,
        counts=counts,
        groups=groups,
        findings_by_rule={r: by_rule[r] for r in RULES if r in by_rule},
        worst_groups=[w for w in worst_groups if w["total"] > 0],
        findings=shown,
        problems=problems,
        problem_count=problem_count,
        options={
            "group": options.group_pattern,
            "since": options.since,
            "until": options.until,
            "retention_ms": options.retention_ms,
        },
    )


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
) -> AuditSummary:
    """The whole job: build the frames, write the tables (``out``), summarize.

    ``findings_sink`` receives every finding (sorted), streamed to the driver one Spark
    partition at a time (``toLocalIterator``), not collected at once.
    """
    if fmt not in ("parquet", "jsonl"):
        raise UsageError(f"unknown output format {fmt!r} (parquet or jsonl)")
    if not files:
        raise InputError("no segment files to audit")
    frames = build(spark, files, options, split_bytes=split_bytes, progress=progress)
    try:
        if out is not None:
            (progress or (lambda _m: None))(f"writing tables to {out}")
            write_tables(spark, frames, out, fmt)
        (progress or (lambda _m: None))("summarizing")
        summary = summarize(spark, frames, out, options)
        if findings_sink is not None:
            ordered = table_from_replay(frames.replayed, "findings").orderBy(*SORT_KEYS["findings"])
            findings_sink(r.asDict(recursive=True) for r in ordered.toLocalIterator())
        return summary
    finally:
        frames.unpersist()


def summary_json(summary: AuditSummary) -> dict[str, Any]:
    return {
        "out": summary.out,
        "files": summary.files,
        "bytes": summary.bytes,
        "splits": summary.splits,
        "groups": summary.groups,
        "counts": summary.counts,
        "findings_by_rule": summary.findings_by_rule,
        "worst_groups": summary.worst_groups,
        "findings": summary.findings,
        "problem_count": summary.problem_count,
        "problems": summary.problems,
        "coverage": summary.coverage,
        "options": summary.options,
    }


def main(argv: list[str] | None = None) -> int:
    """``spark-submit kgtool/spark/job.py PATH... [--out DIR] ...``: uses the session that
    spark-submit configured; prints the summary as JSON; exit 1 when findings."""
    import argparse
    import sys
    import warnings

    # PySpark 4.x warns about pandas 3 on import; kgtool uses no pandas conversion.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession

    from kgtool.spark.files import resolve_inputs

    ap = argparse.ArgumentParser(prog="kgtool-spark-audit")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--out")
    ap.add_argument("--format", default="parquet", choices=["parquet", "jsonl"])
    ap.add_argument("--group")
    ap.add_argument("--since", type=int, help="epoch ms")
    ap.add_argument("--until", type=int, help="epoch ms")
    ap.add_argument("--retention-ms", type=int, default=AuditOptions().retention_ms)
    ap.add_argument("--split-bytes", type=int, default=DEFAULT_SPLIT_BYTES)
    a = ap.parse_args(argv)
    spark = SparkSession.builder.appName("kgtool spark-audit").getOrCreate()
    options = AuditOptions(group_pattern=a.group, since=a.since, until=a.until, retention_ms=a.retention_ms)
    summary = run_audit(spark, resolve_inputs(a.paths, spark), options, out=a.out, fmt=a.format,
                        split_bytes=a.split_bytes)
    sys.stdout.write(json.dumps(summary_json(summary), indent=2) + "\n")
    return 1 if summary.finding_count or summary.problem_count else 0


if __name__ == "__main__":  # pragma: no cover - spark-submit entry point
    raise SystemExit(main())
