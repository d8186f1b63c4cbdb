"""The report's model, read from the audit's tables with pyarrow on the driver.

Memory stays bounded whatever the size of the log: the small tables (groups, generations,
rebalances, findings, offsets, group_members) are read column by column, and the two that grow
with the records, ``commits`` and ``lag``, are streamed record batch by record batch, one part
file (one log partition) at a time, and reduced on the fly to at most :data:`BUCKETS` buckets per
series (a group's topic partition) with pyarrow's hash aggregations: each bucket keeps the
minimum, the maximum and the last value (the min/max decimation that keeps every spike and dip
of a series, as time-series databases downsample: a rewind stays visible however long the log),
and for the lag the worst Burrow status. Per group at most :data:`MAX_SERIES` partitions are
drawn, :data:`MAX_ROWS` rows of each list kept (generations, rebalances, findings, members,
offsets), the rest counted.

Only the groups with findings or rebalances get a section (with charts); every group gets an
overview row, its sparkline the commits per :data:`SPARK_BUCKETS` of the log's time span.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgtool.lag.burrow import Status
from kgtool.offsets.tables import RULES, TABLES

BUCKETS = 150
SPARK_BUCKETS = 24
MAX_SERIES = 24
MAX_ROWS = 500
SPARK_CHARS = "▁▂▃▄▅▆▇█"
STORM_RULE = "rebalance-storm"


@dataclass
class ReportData:
    """What the page shows: ``overview`` rows for every group, ``sections`` for the groups with
    findings or rebalances (the order they are drawn in: most findings first)."""

    overview: list[dict[str, Any]]
    sections: list[dict[str, Any]]
    span: tuple[int | None, int | None]
    lag: bool  # data partitions were among the inputs: the lag columns and charts exist
    meta: dict[str, Any] = field(default_factory=dict)


# ---- reading the tables ---------------------------------------------------------------------------
class Tables:
    """The part files of an audit's output directory (local, or any URI :mod:`pyarrow.fs` reads)."""

    def __init__(self, root: str, fmt: str, storage: dict[str, str] | None = None) -> None:
        import pyarrow.fs as pafs

        from kgtool.spark.files import arrow_fs, is_local, local_path

        self.fmt = fmt
        if is_local(root):
            self.fs, self.root = pafs.LocalFileSystem(), local_path(root)
        else:
            self.fs, self.root = arrow_fs(root, storage)
        self.root = self.root.rstrip("/")

    def parts(self, table: str) -> list[str]:
        """The table's part files, in name order (one per log partition)."""
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(f"{self.root}/{table}", allow_not_found=True))
        ext = ".parquet" if self.fmt == "parquet" else ".json"
        return sorted(i.path for i in infos if i.is_file and i.base_name.startswith("part-")
                      and i.base_name.endswith(ext))

    def batches(self, path: str, table: str, columns: list[str]) -> Any:
        """Record batches of one part file, only ``columns``."""
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            with self.fs.open_input_file(path) as fh:
                yield from pq.ParquetFile(fh).iter_batches(columns=columns, batch_size=262_144)
            return
        import pyarrow.json as pj

        from kgtool.offsets.tables import arrow_schema

        if self.fs.get_file_info(path).size == 0:  # a partition without rows: pyarrow refuses an empty file
            return
        options = pj.ParseOptions(explicit_schema=arrow_schema(TABLES[table]), unexpected_field_behavior="ignore")
        with self.fs.open_input_stream(path) as fh:
            # open_json streams block by block (pyarrow >= 15); read_json holds the whole file
            if hasattr(pj, "open_json"):
                for b in pj.open_json(fh, parse_options=options):
                    yield b.select(columns)
                return
            t = pj.read_json(fh, parse_options=options)
        yield from t.select(columns).to_batches(max_chunksize=262_144)

    def rows(self, table: str, columns: list[str]) -> list[dict[str, Any]]:
        """Every row of a small table, only ``columns``."""
        out: list[dict[str, Any]] = []
        for path in self.parts(table):
            for b in self.batches(path, table, columns):
                out.extend(b.to_pylist())
        return out


# ---- the model ----------------------------------------------------------------------------------------
def gather(root: str, fmt: str, storage: dict[str, str] | None = None, *, until: int | None = None) -> ReportData:
    """The report's model from the tables under ``root`` (``fmt``: parquet or jsonl).

    Args:
        storage: the ``fs.s3a.*`` settings for an ``s3a://`` root (:mod:`kgtool.spark.files`).
        until: ``--until``: the instant audited (else the log's last record).
    """
    t = Tables(root, fmt, storage)
    groups = {r["group"]: r for r in t.rows("groups", ["group", "log_partition", "type", "state", "member_count",
                                                         "assignor", "group_epoch", "generation"])}
    coverage = t.rows("coverage", ["first_timestamp", "last_timestamp"])
    firsts = [c["first_timestamp"] for c in coverage if c["first_timestamp"] is not None]
    lasts = [c["last_timestamp"] for c in coverage if c["last_timestamp"] is not None]
    end = until if until is not None else (max(lasts) if lasts else None)
    span = (min(firsts) if firsts else None, end)
    gens = _by_group(t.rows("generations", ["group", "log_partition", "protocol", "generation_id", "protocol_type",
                                            "protocol_name", "state", "member_count", "timestamp"]))
    rebs = _by_group(t.rows("rebalances", [
        "group", "log_partition", "protocol", "from_generation", "to_generation", "rebalance", "timestamp",
        "members_before", "members_after", "joined", "left", "rejoined", "static_replaced", "protocol_name",
        "rebalance_protocol", "partitions_moved", "partitions_revoked", "completed_at", "members_reached",
        "revocation_waits", "consumption_gap_ms", "consumption_gap_partition", "cause", "message"]))
    finds = _by_group(t.rows("findings", ["rule", "group", "log_partition", "topic", "partition", "offset",
                                          "timestamp", "generation_id", "previous_generation_id", "message"]))
    offsets = _by_group(t.rows("offsets", ["group", "log_partition", "topic", "partition", "offset", "leader_epoch",
                                           "commit_timestamp", "expired", "log_end_offset", "lag", "lag_ms",
                                           "lag_status", "consumer_id", "host", "client_id"]))
    members = _by_group(t.rows("group_members", [
        "group", "member_id", "instance_id", "client_id", "client_host", "member_epoch", "member_state", "assigned",
        "pending_revocation", "target", "target_epoch", "uses_classic_protocol"]))
    lag_by_group = _lag_peaks(t)
    activity, extent = _commit_activity(t, span)
    names = sorted(set(groups) | set(gens) | set(rebs) | set(finds) | set(offsets) | set(activity))
    overview = []
    detailed = []
    for g in names:
        row = groups.get(g)
        gen_rows = gens.get(g, [])
        reb_rows = rebs.get(g, [])
        f_rows = finds.get(g, [])
        by_rule: dict[str, int] = {}
        for f in f_rows:
            by_rule[f["rule"]] = by_rule.get(f["rule"], 0) + 1
        lag = lag_by_group.get(g)
        o = {
            "group": g,
            "type": row["type"] if row else _type_of(gen_rows),
            "state": row["state"] if row else ("Dead" if gen_rows else None),
            "members": row["member_count"] if row else 0,
            "rebalances": sum(1 for r in reb_rows if r["rebalance"] and r["from_generation"] is not None),
            "storms": by_rule.get(STORM_RULE, 0),
            "findings": {r: by_rule[r] for r in RULES if r in by_rule},
            "worst": lag["worst"] if lag else None,
            "peak_lag": lag["peak_lag"] if lag else None,
            "spark": _sparkline(activity.get(g)),
        }
        overview.append(o)
        if f_rows or o["rebalances"]:
            detailed.append(o)
    detailed.sort(key=lambda o: (-sum(o["findings"].values()), -o["rebalances"], o["group"]))
    spans = {}
    for o in detailed:
        g = o["group"]
        times = [r["timestamp"] for r in gens.get(g, []) + rebs.get(g, []) + finds.get(g, []) if r["timestamp"]]
        times += [r["completed_at"] for r in rebs.get(g, []) if r["completed_at"]]
        times += list(extent.get(g, ()))
        spans[g] = (min(times), max(times)) if times else span
    series = _series(t, "commits", spans)
    lag_series = _series(t, "lag", spans) if lag_by_group else {}
    sections = []
    for i, o in enumerate(detailed):
        g = o["group"]
        o["section"] = i
        sections.append(_section(g, groups.get(g), spans[g], gens.get(g, []), rebs.get(g, []), finds.get(g, []),
                                 offsets.get(g, []), members.get(g, []), series.get(g, {}), lag_series.get(g, {})))
    overview.sort(key=lambda o: (-sum(o["findings"].values()), -o["rebalances"], o["group"]))
    return ReportData(overview=overview, sections=sections, span=span, lag=bool(lag_by_group),
                      meta={"end": end, "groups": len(overview)})


def _by_group(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["group"], []).append(r)
    return out


def _type_of(gen_rows: list[dict[str, Any]]) -> str | None:
    """A group no longer held (deleted): its last generation's protocol."""
    return gen_rows[-1]["protocol"] if gen_rows else None


def _sparkline(counts: list[int] | None) -> str:
    """Commits per bucket as block characters (a space: none), scaled to the group's busiest bucket."""
    if not counts or not max(counts):
        return ""
    top = max(counts)
    return "".join(" " if c == 0 else SPARK_CHARS[min(len(SPARK_CHARS) - 1, (c * len(SPARK_CHARS) - 1) // top)]
                   for c in counts)


def _commit_activity(t: Tables, span: tuple[int | None, int | None]
                     ) -> tuple[dict[str, list[int]], dict[str, tuple[int, int]]]:
    """Per group: commits per :data:`SPARK_BUCKETS` of the log's span, and its first and last
    commit's timestamp; streamed, hash-aggregated per record batch."""
    import pyarrow as pa
    import pyarrow.compute as pc

    activity: dict[str, list[int]] = {}
    extent: dict[str, tuple[int, int]] = {}
    t0, t1 = span
    if t0 is None or t1 is None:
        return activity, extent
    width = max(1, t1 - t0 + 1)
    for path in t.parts("commits"):
        for b in t.batches(path, "commits", ["group", "timestamp"]):
            if b.num_rows == 0:
                continue
            ts = b.column("timestamp")
            bucket = pc.min_element_wise(pc.divide(pc.multiply(pc.subtract(ts, t0), SPARK_BUCKETS), width),
                                         SPARK_BUCKETS - 1)
            tb = pa.table({"group": b.column("group"), "b": bucket, "t": ts})
            for r in tb.group_by(["group", "b"]).aggregate([("t", "count"), ("t", "min"), ("t", "max")]).to_pylist():
                g = r["group"]
                counts = activity.setdefault(g, [0] * SPARK_BUCKETS)
                counts[max(0, r["b"])] += r["t_count"]
                lo, hi = extent.get(g, (r["t_min"], r["t_max"]))
                extent[g] = (min(lo, r["t_min"]), max(hi, r["t_max"]))
    return activity, extent


_STATUS_RANK = {s.name: int(s) for s in Status}
_RANK_STATUS = {int(s): s.name for s in Status}


def _ranks(statuses: Any) -> Any:
    """Burrow's statuses (strings) as their ranks (:class:`kgtool.lag.burrow.Status`: larger is worse)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array(list(_STATUS_RANK))
    ranks = pa.array(list(_STATUS_RANK.values()), type=pa.int32())
    return pc.fill_null(pc.take(ranks, pc.index_in(statuses, value_set=names)), 0)


def _lag_peaks(t: Tables) -> dict[str, dict[str, Any]]:
    """Per group with lag rows: the peak lag (records) over the lag table, and the worst status
    of its episodes with evidence (OK without one), as the lag findings and the console judge
    it: a window of one commit's STALL or STOP is Burrow's vacuous verdict, not the group's
    (``lag_episodes.evidence``, kgtool.lag.timeline.window_evidence)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    peaks: dict[str, dict[str, Any]] = {}
    for path in t.parts("lag"):
        for b in t.batches(path, "lag", ["group", "lag"]):
            if b.num_rows == 0:
                continue
            tb = pa.table({"group": b.column("group"), "lag": b.column("lag")})
            for r in tb.group_by("group").aggregate([("lag", "max")]).to_pylist():
                p = peaks.setdefault(r["group"], {"peak_lag": 0, "rank": _STATUS_RANK["OK"]})
                p["peak_lag"] = max(p["peak_lag"], r["lag_max"] or 0)
    for path in t.parts("lag_episodes"):
        for b in t.batches(path, "lag_episodes", ["group", "status", "evidence"]):
            b = b.filter(pc.fill_null(b.column("evidence"), False))
            if b.num_rows == 0:
                continue
            tb = pa.table({"group": b.column("group"), "rank": _ranks(b.column("status"))})
            for r in tb.group_by("group").aggregate([("rank", "max")]).to_pylist():
                p = peaks.setdefault(r["group"], {"peak_lag": 0, "rank": _STATUS_RANK["OK"]})
                p["rank"] = max(p["rank"], r["rank_max"] or 0)
    return {g: {"peak_lag": p["peak_lag"], "worst": _RANK_STATUS[p["rank"]]} for g, p in peaks.items()}


def _series(t: Tables, table: str, spans: dict[str, tuple[int, int]]) -> dict[str, dict[str, list[list[Any]]]]:
    """The sections' groups' series of ``table`` (commits: the effective committed offset; lag:
    records, ms and Burrow's status), :data:`BUCKETS` buckets over each group's span: per
    bucket ``[last timestamp, min, max, last]`` (commits) or ``[last timestamp, max lag, max lag
    ms, worst status]`` (lag). Keyed by group, then ``topic-partition``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not spans:
        return {}
    names = pa.array(sorted(spans))
    t0 = np.array([spans[g][0] for g in names.to_pylist()], dtype=np.int64)
    width = np.array([max(1, spans[g][1] - spans[g][0] + 1) for g in names.to_pylist()], dtype=np.int64)
    if table == "commits":
        columns = ["group", "topic", "partition", "timestamp", "offset", "effective"]
        aggs = [("timestamp", "max"), ("value", "min"), ("value", "max"), ("value", "last")]
    else:
        columns = ["group", "topic", "partition", "timestamp", "lag", "lag_ms", "lag_status"]
        aggs = [("timestamp", "max"), ("value", "max"), ("lag_ms", "max"), ("rank", "max")]
    keys = ["group", "topic", "partition", "b"]
    out: dict[str, dict[str, list[list[Any]]]] = {}
    for path in t.parts(table):
        partials = []
        for b in t.batches(path, table, columns):
            mask = pc.is_in(b.column("group"), value_set=names)
            if table == "commits":
                mask = pc.and_(mask, pc.fill_null(b.column("effective"), False))
            b = b.filter(mask)
            if b.num_rows == 0:
                continue
            idx = pc.index_in(b.column("group"), value_set=names).to_numpy(zero_copy_only=False)
            ts = b.column("timestamp").to_numpy(zero_copy_only=False)
            bucket = np.clip((ts - t0[idx]) * BUCKETS // width[idx], 0, BUCKETS - 1)
            cols = {"group": b.column("group"), "topic": b.column("topic"), "partition": b.column("partition"),
                    "b": pa.array(bucket), "timestamp": b.column("timestamp")}
            if table == "commits":
                cols["value"] = b.column("offset")
            else:
                cols["value"] = b.column("lag")
                cols["lag_ms"] = b.column("lag_ms")
                cols["rank"] = _ranks(b.column("lag_status"))
            partials.append(pa.table(cols).group_by(keys, use_threads=False).aggregate(aggs))
        if not partials:
            continue
        # the batches' buckets merged: a bucket may straddle two record batches
        merged = pa.concat_tables(partials)
        again = [("timestamp_max", "max")] + (
            [("value_min", "min"), ("value_max", "max"), ("value_last", "last")] if table == "commits"
            else [("value_max", "max"), ("lag_ms_max", "max"), ("rank_max", "max")])
        merged = merged.group_by(keys, use_threads=False).aggregate(again)
        for r in merged.sort_by([("group", "ascending"), ("topic", "ascending"), ("partition", "ascending"),
                                 ("b", "ascending")]).to_pylist():
            tp = f"{r['topic']}-{r['partition']}"
            if table == "commits":
                point = [r["timestamp_max_max"], r["value_min_min"], r["value_max_max"], r["value_last_last"]]
            else:
                point = [r["timestamp_max_max"], r["value_max_max"], r["lag_ms_max_max"],
                         _RANK_STATUS.get(r["rank_max_max"])]
            out.setdefault(r["group"], {}).setdefault(tp, []).append(point)
    return out


def _section(g: str, row: dict[str, Any] | None, span: tuple[int, int], gens: list[dict[str, Any]],
             rebs: list[dict[str, Any]], finds: list[dict[str, Any]], offsets: list[dict[str, Any]],
             members: list[dict[str, Any]], series: dict[str, list[list[Any]]],
             lag: dict[str, list[list[Any]]]) -> dict[str, Any]:
    """One group's detail, each list capped at :data:`MAX_ROWS` (its last rows) and the series
    at :data:`MAX_SERIES` partitions (the first in topic-partition order)."""
    storms = []
    for f in finds:
        if f["rule"] == STORM_RULE:
            # the storm's window: from its start (the finding's time) to the rebalance that
            # reached its last generation (the finding's generation_id)
            ends = [r["timestamp"] for r in rebs if r["to_generation"] == f["generation_id"]
                    and r["timestamp"] >= f["timestamp"]]
            storms.append([f["timestamp"], min(ends) if ends else f["timestamp"]])
    keys = sorted(set(series) | set(lag), key=_tp_order)
    drawn = keys[:MAX_SERIES]
    return {
        "group": g,
        "log_partition": row["log_partition"] if row else (gens or rebs or finds or [{"log_partition": None}])[0][
            "log_partition"],
        "span": list(span),
        "describe": {k: row[k] for k in ("type", "state", "member_count", "assignor", "group_epoch", "generation")}
        if row else None,
        "generations": [[r["timestamp"], r["generation_id"], r["member_count"], r["protocol_name"], r["protocol"],
                         r["state"], r["protocol_type"]] for r in gens[-MAX_ROWS:]],
        "rebalances": [{k: [] if v is None and k in _LISTS else v for k, v in r.items()
                        if k not in ("group", "log_partition")} for r in rebs[-MAX_ROWS:]],
        "findings": [{k: f[k] for k in ("rule", "timestamp", "topic", "partition", "offset", "generation_id",
                                        "message")} for f in finds[:MAX_ROWS]],
        "storms": storms,
        "offsets": {k: series[k] for k in drawn if k in series},
        "lag": {k: lag[k] for k in drawn if k in lag},
        "members": members[:MAX_ROWS],
        "committed": [{k: o[k] for k in o if k not in ("group", "log_partition")} for o in offsets[:MAX_ROWS * 2]],
        "omitted": {"generations": max(0, len(gens) - MAX_ROWS), "rebalances": max(0, len(rebs) - MAX_ROWS),
                    "findings": max(0, len(finds) - MAX_ROWS), "members": max(0, len(members) - MAX_ROWS),
                    "committed": max(0, len(offsets) - MAX_ROWS * 2), "series": max(0, len(keys) - MAX_SERIES)},
    }


#: The rebalances table's list columns: never null on the page (the script joins them).
_LISTS = frozenset(n for n, t in TABLES["rebalances"] if t.startswith("list"))


def _tp_order(tp: str) -> tuple[str, int]:
    topic, _sep, p = tp.rpartition("-")
    return topic, int(p) if p.lstrip("-").isdigit() else 0
