"""Coverage: what a ``__consumer_offsets`` partition still holds.

Compaction (``cleanup.policy=compact``) keeps only the latest record per key and drops
tombstones after ``delete.retention.ms``; segment deletion and copying only some files also
remove history. The coverage row says which offsets and times the audit saw, so a reader
knows what can and cannot be concluded (e.g. a generation whose GroupMetadata was compacted
away is invisible).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgtool.offsets.entries import (
    CONTROL,
    GROUP_METADATA,
    OFFSET_COMMIT_KINDS,
    PROBLEM,
    UNKNOWN,
    LogEntry,
)
from kgtool.offsets.shard import RECORD_GROUP_TYPE, GroupType

#: The counters of a coverage row that count records by kind (:func:`classify`), and
#: ``unknown_tagged_fields`` (fields, not records: :attr:`LogEntry.unknown_tagged_fields`).
COUNTERS = ("offset_commits", "offset_tombstones", "group_metadata", "group_tombstones", "consumer_group_records",
            "other_records", "unknown_record_types", "unknown_tagged_fields", "control_records")


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
    if RECORD_GROUP_TYPE.get(e.kind) is GroupType.CONSUMER:  # type: ignore[arg-type]
        return "consumer_group_records"
    if e.kind == UNKNOWN:  # CoordinatorLoaderImpl: "Unknown record type ... Ignoring it"
        return "unknown_record_types"
    return "other_records"
