"""The stale-commit rules: their findings, as rows of the ``findings`` table.

What fires each rule, its legitimate look-alike and the fields of its finding are declared once,
as data, in :mod:`kgtool.offsets.catalog` (rendered into ``--help``, the man page and the docs).

``rebalance-storm`` (group-level: no topic partition) lives with the rebalances it counts, in
:mod:`kgtool.offsets.rebalances`; ``slow-revocation`` (a consumer-group member fenced by its
rebalance timeout while partitions were pending revocation) with reconciliation, in
:mod:`kgtool.offsets.reconciliation`.

The checks that compare a commit with the past run in the commit loop
(:mod:`kgtool.offsets.store`); this module words what they found and evaluates the rules about
the end of the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgtool.offsets import catalog
from kgtool.offsets.generations import TopicPartition, tp_name
from kgtool.offsets.store import NULL

#: Rules about the state at the end of the log: ``--since`` does not hide them.
END_OF_LOG_RULES = catalog.END_OF_LOG


def _n(v: int) -> int | None:
    return None if v == NULL else int(v)


@dataclass(frozen=True)
class CommitRef:
    """A commit as a finding names it: its key and where it sits in the log."""

    topic: str
    partition: int
    offset: int
    record_offset: int
    position: int
    source: str
    timestamp: int
    generation_id: int | None


@dataclass(frozen=True)
class Previous:
    """The earlier commit a finding compares with (offset, record offset, position, generation)."""

    offset: int | None
    record_offset: int | None
    position: int | None
    generation_id: int | None

    @classmethod
    def of(cls, values: Any) -> Previous | None:
        """From (offset, record, position, source, generation) with NULL for none."""
        if values is None or values[0] == NULL:
            return None
        return cls(_n(values[0]), _n(values[1]), _n(values[2]), _n(values[4]))


def finding(rule: str, group: str, log_partition: int, c: CommitRef, message: str,
            previous: Previous | None = None) -> dict[str, Any]:
    return {
        "rule": rule,
        "group": group,
        "log_partition": log_partition,
        "topic": c.topic,
        "partition": c.partition,
        "offset": c.offset,
        "record_offset": c.record_offset,
        "position": c.position,
        "source": c.source,
        "timestamp": c.timestamp,
        "generation_id": c.generation_id,
        "previous_offset": None if previous is None else previous.offset,
        "previous_record_offset": None if previous is None else previous.record_offset,
        "previous_position": None if previous is None else previous.position,
        "previous_generation_id": None if previous is None else previous.generation_id,
        "message": message,
    }


def zombie_message(tp: TopicPartition, offset: int, top: Previous) -> str:
    return (
        f"commit of {tp_name(tp)} at offset {offset} goes below offset "
        f"{top.offset} that the partition's new owner committed in generation "
        f"{top.generation_id} after the rebalance that moved it: a previous owner "
        f"still committing (records from {offset} will be reprocessed)"
    )


def rewind_message(tp: TopicPartition, offset: int, prev: Previous) -> str:
    return (
        f"commit of {tp_name(tp)} moves the offset back from {prev.offset} to "
        f"{offset} while the group is not Empty (not a reset): "
        f"{prev.offset - offset} records will be consumed again"  # type: ignore[operator]
    )


def epoch_message(tp: TopicPartition, leader_epoch: int, best: int) -> str:
    return (
        f"commit of {tp_name(tp)} carries leader epoch {leader_epoch}, below "
        f"epoch {best} of an earlier commit: written from stale metadata"
    )


def orphan_message(tp: TopicPartition, offset: int, generation_id: int, members: int) -> str:
    return (
        f"commit of {tp_name(tp)} at offset {offset} while generation "
        f"{generation_id} has {members} member(s) and none owns the partition"
    )


def aborted_message(tp: TopicPartition, offset: int, producer_id: int, current: int | None) -> str:
    return (
        f"transactional commit of {tp_name(tp)} at offset {offset} (producer "
        f"{producer_id}) was ABORTED and nothing later replaced it: the group "
        + (f"stays at offset {current}" if current is not None else "has no committed offset for it")
    )


def pending_message(tp: TopicPartition, offset: int, producer_id: int) -> str:
    return (
        f"transactional commit of {tp_name(tp)} at offset {offset} (producer "
        f"{producer_id}) has no COMMIT or ABORT marker by the end of the log: "
        "the offset is not visible until the transaction completes"
    )


def expiration(end: int, commit_ts: int | None, record_ts: int, expire_ts: int | None,
               empty_since: int | None, retention_ms: int) -> tuple[bool, str]:
    """``ClassicGroup.offsetExpirationCondition`` / ``OffsetExpirationConditionImpl`` at ``end``:
    (expired, why)."""
    if expire_ts is not None and expire_ts >= 0:
        return end >= expire_ts, f"its expire timestamp {expire_ts} has passed"
    base = commit_ts if commit_ts is not None else record_ts
    basis = "commit"
    if empty_since is not None and empty_since >= 0:
        base = empty_since
        basis = "group became Empty"
    return (
        end - base >= retention_ms,
        f"{(end - base) / 3_600_000:.1f} h since {basis}, retention {retention_ms / 3_600_000:.1f} h",
    )


def expiring_message(tp: TopicPartition, offset: int, why: str) -> str:
    return (
        f"group is Empty and its offset {offset} for {tp_name(tp)} is expired at the "
        f"end of the log ({why}): the coordinator deletes it at its next expiration check"
    )
