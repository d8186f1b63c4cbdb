"""The stale-commit rules: their findings, as rows of the ``findings`` table.

Exact semantics (the README and the man page repeat them):

- ``rewind``: a commit becomes effective with an offset lower than the partition's previous
  effective offset while the group has members (not Empty) and the ``zombie`` rule does not
  apply. A lower commit while the group is Empty (no generation, or a generation without
  members: what ``kafka-consumer-groups.sh --reset-offsets`` requires) is a deliberate reset:
  no finding, ``note`` = "reset while Empty" in the commits table.
- ``zombie``: a commit becomes effective lower than the previous effective offset, after the
  partition moved (its owner set in some generation differs from the last non-empty owner set
  before it) and the new owners already committed, since the move, an offset above it.
- ``orphan``: a commit record written while the group has members and known assignments
  (classic ``consumer`` protocol, or KIP-848) for a partition no member owns, unless a member
  that owned it in the previous generation is still a member (a cooperative revocation in
  transit: the member commits in ``onPartitionsRevoked`` before its next join). A
  transactional commit is judged against the generation of its write and reported once its
  COMMIT marker makes it effective.
- ``epoch-regression``: a commit becomes effective with a leader epoch (>= 0) lower than the
  highest leader epoch of the partition's earlier effective commits since its last offset
  tombstone. Leader epoch -1 (unknown, e.g. admin tools and OffsetCommitValue v1) is not compared.
- ``expiring``: at the end of the log, the group is Empty (or a simple group without
  metadata), and one of its offsets is expired by Kafka's condition
  (``ClassicGroup.offsetExpirationCondition``, ``OffsetExpirationConditionImpl``): with an
  expire timestamp (v1 values), ``end >= expire_timestamp``; otherwise
  ``end - base >= retention`` where base is the group's ``current_state_timestamp`` when
  known, else the commit timestamp. Offsets with an open transaction are kept (as
  ``cleanupExpiredOffsets`` does). ``end`` is the last record timestamp of the partition, or
  the ``--until`` instant. The offsets table's ``expired`` column is this rule per offset.
- ``aborted-txn``: a transactional commit whose transaction was ABORTed, and which would
  otherwise be the latest offset of its partition at the log's end: no effective commit or
  offset tombstone at a higher record offset followed it.
- ``pending-txn``: the same for a transactional commit with no marker by the log's end.

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

from kgtool.offsets.generations import TopicPartition, tp_name
from kgtool.offsets.store import NULL

#: Rules about the state at the end of the log: ``--since`` does not hide them.
END_OF_LOG_RULES = frozenset({"expiring", "pending-txn", "aborted-txn"})


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
