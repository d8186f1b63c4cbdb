"""The whole audit in one process, on decoded entries: what the Spark job does per partition.

Each log partition is replayed by :class:`~kgtool.offsets.partition.PartitionReplay` (the same
code the Spark tasks run), its records in offset order. Used by the tests and by small inputs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kgtool.offsets.coverage import SegmentFile
from kgtool.offsets.entries import LogEntry
from kgtool.offsets.options import DEFAULT_RETENTION_MS, AuditOptions
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.rules import END_OF_LOG_RULES
from kgtool.offsets.tables import TABLE_NAMES, member_dicts

__all__ = ["AuditOptions", "AuditResult", "DEFAULT_RETENTION_MS", "END_OF_LOG_RULES", "audit_entries"]


@dataclass
class AuditResult:
    """All tables, rows as dicts with the columns of :mod:`kgtool.offsets.tables`."""

    tables: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {name: [] for name in TABLE_NAMES}
    )
    problems: list[LogEntry] = field(default_factory=list)
    replays: dict[int, PartitionReplay] = field(default_factory=dict)


def audit_entries(
    entries: Iterable[LogEntry],
    *,
    files: Iterable[SegmentFile] = (),
    options: AuditOptions = AuditOptions(),
    pure: bool | None = None,
) -> AuditResult:
    """Audit decoded entries of any number of log partitions (any order: sorted here by
    offset within each partition)."""
    by_partition: dict[int, list[LogEntry]] = defaultdict(list)
    for e in entries:
        by_partition[e.log_partition].append(e)  # --until: the replay stops each partition's read
    seg: dict[int, list[int]] = {}
    for f in files:
        s = seg.setdefault(f.log_partition, [0, 0])
        s[0] += 1
        s[1] += f.size
    result = AuditResult()
    for part in sorted(set(by_partition) | set(seg)):
        items = sorted(by_partition.get(part, []), key=lambda x: (x.offset, x.position))
        tables: list[Any] = []
        rp = PartitionReplay(part, options, sink=tables.append, pure=pure, keep_problems=len(items))
        if items:
            rp.feed_entries(items)
        rp.finish()
        result.replays[part] = rp
        for t in tables:
            result.tables["commits"].extend(t.to_pylist())
        result.tables["generations"].extend(rp.generations)
        result.tables["members"].extend(member_dicts(rp.members))
        result.tables["findings"].extend(rp.findings)
        result.tables["offsets"].extend(rp.offset_rows)
        result.tables["rebalances"].extend(rp.rebalances)
        result.tables["groups"].extend(rp.group_rows)
        result.tables["group_members"].extend(rp.group_member_rows)
        segments, size = seg.get(part, [0, 0])
        result.tables["coverage"].append(rp.coverage(segments, size))
        result.problems.extend(rp.problems)
    return result
