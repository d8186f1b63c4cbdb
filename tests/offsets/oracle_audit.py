"""Test oracle: the whole audit as kgtool 0.1 computed it, group by group, with the frozen
row-at-a-time replay (tests/offsets/oracle_replay.py). Not imported by kgtool.

Steps, as the first Spark job ran them: ``--until`` drops records; coverage per log partition;
``--group`` keeps matching groups; transactional records are annotated with their marker; each
(log partition, group) is replayed; ``--since`` hides rows (end-of-log findings stay).

Since then: ``--until T`` reads each partition's log (offset order) up to its first record stamped
at or after T, and the end-of-log rules are judged at T; the offsets table comes from the
independent reference model of tests/offsets/reference_offsets.py, its ``expired`` column from
this oracle's expiring findings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from collections.abc import Mapping

from kgtool.offsets.coverage import SegmentFile, classify
from dataclasses import replace
from collections.abc import Iterator

from kgtool.offsets.entries import CONTROL, NO_PRODUCER_ID, LogEntry
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.rules import END_OF_LOG_RULES
from kgtool.offsets.tables import TABLE_NAMES, TABLES
from tests.offsets import oracle_replay, reference_offsets


#: What kgtool 0.1 computed, and so what the oracle can judge: the tables and rules added since
#: (the rebalances table, the rebalance-storm rule) have their own tests
#: (tests/offsets/test_rebalances.py).
ORACLE_TABLES = ("generations", "members", "commits", "findings", "coverage")
ORACLE_RULES = frozenset({"rewind", "zombie", "orphan", "epoch-regression", "expiring", "aborted-txn", "pending-txn"})


def _keep(table: str, row: dict[str, Any], since: int | None) -> bool:
    if since is None or table == "coverage":
        return True
    if table == "findings" and row["rule"] in END_OF_LOG_RULES:
        return True
    ts = row.get("timestamp")
    return ts is None or ts >= since


def oracle_audit(entries: Iterable[LogEntry], *, files: Iterable[SegmentFile] = (),
                 options: AuditOptions = AuditOptions()) -> dict[str, list[dict[str, Any]]]:
    by_partition: dict[int, list[LogEntry]] = defaultdict(list)
    for e in entries:
        by_partition[e.log_partition].append(e)
    for part, items in by_partition.items():
        by_partition[part] = read_until(sorted(items, key=lambda x: (x.offset, x.position)), options.until)
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLE_NAMES}
    cov = coverage_rows(by_partition, files)
    tables["coverage"] = cov
    end_ts = {r["log_partition"]: r["last_timestamp"] if options.until is None else options.until for r in cov}
    for part in sorted(by_partition):
        items = by_partition[part]
        groups: dict[str, list[LogEntry]] = defaultdict(list)
        for e in annotate_transactions(x for x in items if x.problem is None):
            if e.group is not None and options.group_matches(e.group):
                groups[e.group].append(e)
        expired = set()
        for g in sorted(groups):
            res = oracle_replay.replay_group(groups[g], log_end_timestamp=end_ts.get(part),
                                             retention_ms=options.retention_ms)
            for name, rows in res.tables().items():
                tables[name].extend(r for r in rows if _keep(name, r, options.since))
                expired |= {(r["group"], r["topic"], r["partition"]) for r in rows
                            if name == "findings" and r["rule"] == "expiring"}
        tables["offsets"] += reference_offsets.offsets_rows(items, part, expired, options.group_matches)
    return tables


def read_until(items: list[LogEntry], until: int | None) -> list[LogEntry]:
    """A partition's entries (offset order) read up to its first record stamped at or after
    ``until`` (decode problems, without offset or time, stay)."""
    if until is None:
        return items
    for i, e in enumerate(items):
        if e.offset >= 0 and e.timestamp >= until:
            return items[:i]
    return items


def canonical(name: str, rows: list[dict[str, Any]]) -> list[tuple]:
    """Rows of a table as tuples in column order, sorted (order-insensitive comparison); findings
    of rules the oracle does not know are left out."""
    cols = [c for c, _t in TABLES[name]]
    out = []
    for r in rows:
        if name == "findings" and r["rule"] not in ORACLE_RULES:
            continue
        assert list(r) == cols, (name, list(r))
        out.append(tuple(r[c] for c in cols))
    return sorted(out, key=lambda t: tuple((v is None, str(type(v)), repr(v)) for v in t))


def annotate_transactions(entries: Iterable[LogEntry]) -> Iterator[LogEntry]:
    """Attach to each record of a transactional batch the marker that resolves it.

    ``entries`` are those of ONE log partition in offset order. A marker of producer P
    resolves every pending transactional record of P before it
    (``OffsetMetadataManager.replayEndTransactionMarker`` removes all of P's pending offsets),
    so a record's marker is the first control record of the same producer id at a higher
    offset. Records with no such marker stay unannotated (pending at the log's end).

    This was the single-process twin of the Spark job's window ``first(marker) over
    (partition by log_partition, producer_id order by offset rows between 1 following and
    unbounded following)``.
    """
    items = list(entries)
    next_marker: dict[int, LogEntry] = {}
    out: list[LogEntry] = [None] * len(items)  # type: ignore[list-item]
    for i in range(len(items) - 1, -1, -1):
        e = items[i]
        if e.is_control and e.kind == CONTROL and e.producer_id != NO_PRODUCER_ID:
            out[i] = e
            next_marker[e.producer_id] = e
            continue
        if e.is_transactional and not e.is_control and e.producer_id != NO_PRODUCER_ID:
            m = next_marker.get(e.producer_id)
            if m is not None:
                e = replace(
                    e,
                    marker_offset=m.offset,
                    marker_type=m.control_type,
                    marker_position=m.position,
                    marker_timestamp=m.timestamp,
                )
        out[i] = e
    return iter(out)


# kgtool 0.1's coverage, entry by entry (the partition replay computes it in its own pass)
_COUNTERS = (
    "offset_commits",
    "offset_tombstones",
    "group_metadata",
    "group_tombstones",
    "consumer_group_records",
    "other_records",
    "unknown_record_types",
    "unknown_tagged_fields",
    "control_records",
)


def coverage_rows(
    by_partition: Mapping[int, Iterable[LogEntry]], files: Iterable[SegmentFile] = ()
) -> list[dict]:
    """One coverage row per log partition (sorted), from its entries and files."""
    seg: dict[int, list[int]] = {}
    for f in files:
        s = seg.setdefault(f.log_partition, [0, 0])
        s[0] += 1
        s[1] += f.size
    rows = []
    for part in sorted(set(by_partition) | set(seg)):
        counts = dict.fromkeys(_COUNTERS, 0)
        problems = 0
        offsets: list[int] = []
        times: list[int] = []
        batches: set[tuple[str, int]] = set()
        groups: set[str] = set()
        for e in by_partition.get(part, ()):
            c = classify(e)
            if c == "problems":
                problems += 1
                continue
            counts[c] += 1
            counts["unknown_tagged_fields"] += e.unknown_tagged_fields
            offsets.append(e.offset)
            times.append(e.timestamp)
            batches.add((e.source, e.position))
            if e.group is not None:
                groups.add(e.group)
        n = len(offsets)
        first = min(offsets) if offsets else None
        last = max(offsets) if offsets else None
        rows.append(
            {
                "log_partition": part,
                "segments": seg.get(part, [0, 0])[0],
                "bytes": seg.get(part, [0, 0])[1],
                "batches": len(batches),
                "records": n,
                "first_offset": first,
                "last_offset": last,
                "offsets_absent": None if not n else last - first + 1 - n,  # type: ignore[operator]
                # scripts hold every offset: nothing shows compaction (kgtool.offsets.compaction)
                "compacted_below_offset": None,
                "compacted_below_time": None,
                "compaction_source": None,
                "first_timestamp": min(times) if times else None,
                "last_timestamp": max(times) if times else None,
                **counts,
                "groups": len(groups),
                "problems": problems,
                # no data partitions: no lag inputs (kgtool.spark.job.check_lag_inputs)
                "lag_inputs": None,
                "lag_inputs_read": None,
            }
        )
    return rows
