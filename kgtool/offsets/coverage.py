"""Coverage: what a ``__consumer_offsets`` partition still holds.

Compaction (``cleanup.policy=compact``) keeps only the latest record per key and drops
tombstones after ``delete.retention.ms``; segment deletion and copying only some files also
remove history. The coverage row says which offsets and times the audit saw, so a reader
knows what can and cannot be concluded (e.g. a generation whose GroupMetadata was compacted
away is invisible).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgtool.offsets.entries import CONSUMER_GROUP_PREFIX, CONTROL, GROUP_METADATA, OFFSET_COMMIT_KINDS, PROBLEM, LogEntry


@dataclass(frozen=True)
class SegmentFile:
    """One segment file of the input: where it is, its size, its log partition."""

    path: str
    size: int
    log_partition: int


def classify(e: LogEntry) -> str:
    """The coverage counter a record adds to (names of :data:`kgtool.offsets.tables.COVERAGE`)."""
    if e.kind == PROBLEM:
        return "problems"
    if e.kind == CONTROL or e.is_control:
        return "control_records"
    if e.kind in OFFSET_COMMIT_KINDS:
        return "offset_tombstones" if e.value is None else "offset_commits"
    if e.kind == GROUP_METADATA:
        return "group_tombstones" if e.value is None else "group_metadata"
    if e.kind is not None and e.kind.startswith(CONSUMER_GROUP_PREFIX):
        return "consumer_group_records"
    return "other_records"


_COUNTERS = (
    "offset_commits",
    "offset_tombstones",
    "group_metadata",
    "group_tombstones",
    "consumer_group_records",
    "other_records",
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
                "first_timestamp": min(times) if times else None,
                "last_timestamp": max(times) if times else None,
                **counts,
                "groups": len(groups),
                "problems": problems,
            }
        )
    return rows
