"""The whole audit in one process: the reference that the Spark job must agree with.

The steps are the Spark job's, in the same order and with the same functions:

1. ``--until``: drop records at or after it (the log is read as if it ended there);
2. coverage per log partition (:mod:`kgtool.offsets.coverage`), over all records;
3. ``--group``: keep the records of matching groups (markers and problems are kept);
4. annotate transactional records with their marker (per log partition);
5. replay each (log partition, group) (:func:`kgtool.offsets.replay.replay_group`);
6. ``--since``: keep rows at or after it (end-of-log findings are always kept).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kgtool.offsets.coverage import SegmentFile, coverage_rows
from kgtool.offsets.entries import LogEntry, annotate_transactions
from kgtool.offsets.replay import DEFAULT_RETENTION_MS, GroupResult, replay_group
from kgtool.offsets.tables import TABLE_NAMES

# Rules about the state at the end of the log: --since does not hide them.
END_OF_LOG_RULES = frozenset({"expiring", "pending-txn", "aborted-txn"})


@dataclass(frozen=True)
class AuditOptions:
    """Options shared by the pure-Python audit and the Spark job."""

    group_pattern: str | None = None  # Python regex, re.search on the group id
    since: int | None = None  # epoch ms, inclusive
    until: int | None = None  # epoch ms, exclusive
    retention_ms: int = DEFAULT_RETENTION_MS

    def group_matches(self, group: str | None) -> bool:
        if group is None or self.group_pattern is None:
            return True
        return re.search(self.group_pattern, group) is not None

    def keep_record(self, e: LogEntry) -> bool:
        return self.until is None or e.offset < 0 or e.timestamp < self.until


@dataclass
class AuditResult:
    """All tables, rows as dicts with the columns of :mod:`kgtool.offsets.tables`."""

    tables: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {name: [] for name in TABLE_NAMES}
    )
    problems: list[LogEntry] = field(default_factory=list)


def keep_row(table: str, row: dict[str, Any], since: int | None) -> bool:
    """``--since`` applied to one output row."""
    if since is None or table == "coverage":
        return True
    if table == "findings" and row["rule"] in END_OF_LOG_RULES:
        return True
    ts = row.get("timestamp")
    return ts is None or ts >= since


def apply_since(result: GroupResult, since: int | None) -> GroupResult:
    """``--since`` applied to one group's replay (in place; returns it)."""
    if since is None:
        return result
    result.generations = [r for r in result.generations if keep_row("generations", r, since)]
    result.members = [r for r in result.members if keep_row("members", r, since)]
    result.findings = [r for r in result.findings if keep_row("findings", r, since)]
    cc = result.commit_columns
    keep = [i for i, ts in enumerate(cc["timestamp"]) if ts is None or ts >= since]
    if len(keep) < len(cc["timestamp"]):
        result.commit_columns = {name: [col[i] for i in keep] for name, col in cc.items()}
    return result


def group_rows(
    entries: Iterable[LogEntry], *, log_end_timestamp: int | None, options: AuditOptions
) -> dict[str, list[dict[str, Any]]]:
    """Replay one group and apply ``--since``: the rows of each table."""
    result = replay_group(entries, log_end_timestamp=log_end_timestamp, retention_ms=options.retention_ms)
    return apply_since(result, options.since).tables()


def audit_entries(
    entries: Iterable[LogEntry],
    *,
    files: Iterable[SegmentFile] = (),
    options: AuditOptions = AuditOptions(),
) -> AuditResult:
    """Audit decoded entries of any number of log partitions (any order across partitions,
    offset order not required: entries are sorted here)."""
    by_partition: dict[int, list[LogEntry]] = defaultdict(list)
    for e in entries:
        if options.keep_record(e):
            by_partition[e.log_partition].append(e)
    result = AuditResult()
    cov = coverage_rows(by_partition, files)
    result.tables["coverage"] = cov
    end_ts = {r["log_partition"]: r["last_timestamp"] for r in cov}
    for part in sorted(by_partition):
        items = sorted(by_partition[part], key=lambda x: (x.offset, x.position))
        result.problems.extend(e for e in items if e.problem is not None)
        groups: dict[str, list[LogEntry]] = defaultdict(list)
        for e in annotate_transactions(x for x in items if x.problem is None):
            if e.group is not None and options.group_matches(e.group):
                groups[e.group].append(e)
        for g in sorted(groups):
            for name, rows in group_rows(groups[g], log_end_timestamp=end_ts.get(part), options=options).items():
                result.tables[name].extend(rows)
    return result
