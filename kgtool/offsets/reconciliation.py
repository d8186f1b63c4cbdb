"""A consumer group's rebalance as its members live it (KIP-848): reconciliation and fencing.

A consumer-protocol group rebalances by bumping its group epoch (``ConsumerGroupMetadata``) and
computing a new target assignment; each member then reconciles towards it on its heartbeats
(``CurrentAssignmentBuilder``): a member that must give partitions up stays at its epoch in
UNREVOKED_PARTITIONS until it acknowledges their revocation, then moves to the new epoch, STABLE,
or UNRELEASED_PARTITIONS while another member still holds partitions meant for it. The group is
Stable at the epoch once every member is at the target assignment's epoch with nothing pending
(``ConsumerGroup.maybeUpdateGroupState``). Every step is a ``ConsumerGroupCurrentMemberAssignment``
record, so the log tells, per epoch:

- ``completed_at``: when the group became Stable at that epoch (null if it never did: a later
  bump came first, the group emptied, or the log ends before);
- when each member reached the epoch;
- which partitions waited for revocation, held by which member, and how long;
- the consumption gap: the longest time a partition had no owner, from the record in which its
  member gave it up (revoked, or removed with the member) to the record that assigned it to the
  next one. A partition no target assignment holds any more is not waiting for an owner;
- the target assignment that served it (``target_epoch``, computed at ``assigned_at``): its own,
  or a later epoch's. The coordinator computes a target on a member's heartbeat, not when a
  member departs (the group is Assigning until then), and from Kafka 4.3 at most once per
  ``group.consumer.assignment.interval.ms`` (default 1 s; ``canComputeNextTargetAssignment``):
  members joining and leaving in a burst bump the group epoch each, and one target assignment,
  computed at the last epoch, serves them all. Such an epoch never becomes Stable (no
  ``completed_at``) and is no unfinished rebalance: its change was batched into the later one.
  Null: no target came before the group emptied, was deleted or the log ended.

State is read as Kafka's loader leaves it after each batch (one coordinator write: a heartbeat's
records, a timer's), never inside a batch, where the records of one write are half applied.

Fencing by the rebalance timeout (``GroupMetadataManager.scheduleConsumerGroupRebalanceTimeout``):
each current-assignment record that leaves a consumer-protocol member in UNREVOKED_PARTITIONS
(re)arms a timer of its rebalance timeout, with the member's epoch; any other reconciliation
record cancels it (``maybeReconcile``). When it fires with the member still at that epoch,
``consumerGroupFenceMember`` writes the same records as a voluntary leave. It is inferred: a
member removed while such a timer runs, at least its timeout after it was armed, at the epoch it
was armed with. A member leaving on its own before that, a session timeout of a member with
nothing to revoke, a static member that left with epoch -2 (its timer then finds another epoch)
and a classic-protocol member (join and sync timers, no rebalance timer) are not fenced this way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgtool.offsets.shard.model import MemberState
from kgtool.offsets.tables import group_finding

if TYPE_CHECKING:  # pragma: no cover
    from kgtool.offsets.entries import LogEntry
    from kgtool.offsets.shard.model import ConsumerGroupMember, ModernGroup, TopicIdAssignment, TopicNames

SLOW_REVOCATION_RULE = "slow-revocation"
SHOWN = 5  # partitions named in a sentence

IdPartition = tuple[str, int]  # (topic id, partition): names may be learnt later in the log


def _pairs(a: TopicIdAssignment) -> set[IdPartition]:
    return {(t, p) for t, ps in a.items() for p in ps}


def _tp(names: TopicNames, tp: IdPartition) -> str:
    return f"{names.name(tp[0])}-{tp[1]}"


@dataclass
class EpochProgress:
    """One group epoch's reconciliation: the columns it adds to its ``rebalances`` row."""

    epoch: int
    started: int  # the bump's timestamp
    names: TopicNames  # the partition's topic names (learnt as the log goes on)
    completed_at: int | None = None
    reached: dict[str, int] = field(default_factory=dict)  # member id -> when it reached the epoch
    waits: list[tuple[IdPartition, str, int]] = field(default_factory=list)  # (partition, member, ms)
    gap_ms: int | None = None
    gap_partition: IdPartition | None = None
    target_epoch: int | None = None  # the target assignment that served it (its own, or a later one)
    assigned_at: int | None = None  # when that target was computed (the batch that wrote it)

    def gap(self, tp: IdPartition, ms: int) -> None:
        if self.gap_ms is None or ms > self.gap_ms or (ms == self.gap_ms and tp < self.gap_partition):  # type: ignore[operator]
            self.gap_ms, self.gap_partition = ms, tp

    def columns(self) -> dict[str, Any]:
        """The ``rebalances`` columns (tables.REBALANCES) this epoch fills."""
        names = self.names
        done = self.completed_at
        return {
            "completed_at": done,
            "completion_seconds": None if done is None else (done - self.started) / 1000,
            "members_reached": [f"{m}:{t - self.started}" for m, t in sorted(self.reached.items(),
                                                                            key=lambda kv: (kv[1], kv[0]))],
            "revocation_waits": [f"{_tp(names, tp)}:{m}:{ms}" for tp, m, ms in
                                 sorted(self.waits, key=lambda w: (-w[2], _tp(names, w[0]), w[1]))],
            "consumption_gap_ms": self.gap_ms,
            "consumption_gap_partition": None if self.gap_partition is None else _tp(names, self.gap_partition),
            "target_epoch": self.target_epoch,
            "assigned_at": self.assigned_at,
        }

    @property
    def batched(self) -> bool:
        """No target assignment was computed at this epoch: a later epoch's served its change."""
        return self.target_epoch is not None and self.target_epoch > self.epoch


#: the columns of a row with no reconciliation (classic groups; its completed_at is set apart)
NO_PROGRESS: dict[str, Any] = {"completed_at": None, "completion_seconds": None, "members_reached": [],
                               "revocation_waits": [], "consumption_gap_ms": None, "consumption_gap_partition": None,
                               "target_epoch": None, "assigned_at": None}


class ConsumerGroupWatch:
    """One consumer group's members as reconciliation moves them, batch by batch."""

    def __init__(self) -> None:
        self.progress: EpochProgress | None = None
        self.pending: dict[str, set[IdPartition]] = {}  # member -> partitions pending revocation
        self.owned: dict[str, set[IdPartition]] = {}  # member -> assigned and pending revocation
        self.owners: dict[IdPartition, int] = {}  # partition -> members holding it
        self.pending_since: dict[tuple[str, IdPartition], tuple[int, EpochProgress | None]] = {}
        self.unowned_since: dict[IdPartition, tuple[int, EpochProgress | None]] = {}
        self.changed: set[str] = set()  # members touched by the batch being read
        self.awaiting: list[EpochProgress] = []  # epochs bumped past before any target was computed

    def bump(self, epoch: int, timestamp: int, names: TopicNames) -> EpochProgress:
        """A new group epoch: its reconciliation starts."""
        if self.progress is not None and self.progress.target_epoch is None:
            self.awaiting.append(self.progress)
        p = self.progress = EpochProgress(epoch, timestamp, names)
        for tp, (since, _prog) in self.unowned_since.items():
            self.unowned_since[tp] = (since, p)  # released before the bump, reassigned by this epoch
        return p

    def touch(self, member_id: str) -> None:
        self.changed.add(member_id)

    def reset(self) -> None:
        """The group is gone (tombstone, or converted to a classic group)."""
        self.__init__()  # type: ignore[misc]

    def observe(self, group: ModernGroup, timestamp: int, settled: bool = True) -> None:
        """The group as the batch just read left it (``timestamp``: the batch's); ``settled``
        False: as a batch's records before its epoch bump left it."""
        changed, self.changed = self.changed, set()
        p = self.progress
        released: set[IdPartition] = set()
        acquired: set[IdPartition] = set()
        for mid in changed:
            m = group.members.get(mid)
            live = m is not None and m.member_epoch >= 0
            pending = _pairs(m.pending_revocation) if live else set()  # type: ignore[union-attr]
            owned = (_pairs(m.assigned) | pending) if live else set()  # type: ignore[union-attr]
            before = self.pending.get(mid, set())
            for tp in pending - before:
                self.pending_since[(mid, tp)] = (timestamp, p)
            for tp in before - pending:
                since, prog = self.pending_since.pop((mid, tp))
                if prog is not None:
                    prog.waits.append((tp, mid, timestamp - since))
            held = self.owned.get(mid, set())
            for tp in held - owned:
                n = self.owners[tp] - 1
                if n:
                    self.owners[tp] = n
                else:
                    del self.owners[tp]
                    released.add(tp)
            for tp in owned - held:
                self.owners[tp] = self.owners.get(tp, 0) + 1
                acquired.add(tp)
            if owned:
                self.pending[mid], self.owned[mid] = pending, owned
            else:
                self.pending.pop(mid, None)
                self.owned.pop(mid, None)
            if p is not None and live and m.member_epoch == p.epoch and mid not in p.reached:  # type: ignore[union-attr]
                p.reached[mid] = timestamp
        for tp in released:
            if tp not in self.owners:
                self.unowned_since.setdefault(tp, (timestamp, p))
        for tp in acquired:
            start = self.unowned_since.pop(tp, None)
            if start is not None and start[1] is not None:
                start[1].gap(tp, timestamp - start[0])
        if settled and self.unowned_since and (group.assignment_epoch >= group.group_epoch or not group.members):
            # a partition the up-to-date target assignment does not hold (unsubscribed, topic
            # deleted), or of a group left without members, waits for no one; judged once the
            # batch is whole and the target computed (Assigning: it comes with a later heartbeat)
            targeted = set().union(*map(_pairs, group.target_assignment.values()))
            for tp in [tp for tp in self.unowned_since if tp not in targeted]:
                del self.unowned_since[tp]
        if p is not None and p.target_epoch is None and group.assignment_epoch >= p.epoch:
            # the target assignment of the epoch, or of a later one that epochs bumped past before
            # any target was computed share (Kafka 4.3+: at most one computation per
            # group.consumer.assignment.interval.ms, GroupMetadataManager.canComputeNextTargetAssignment)
            for q in (*self.awaiting, p):
                q.target_epoch, q.assigned_at = group.assignment_epoch, timestamp
            self.awaiting.clear()
        if p is not None and p.completed_at is None and group.group_epoch == p.epoch and group.state == "Stable":
            p.completed_at = timestamp

    def close(self, timestamp: int) -> None:
        """The end of the read: a partition still without its next owner counts up to now (a
        lower bound). At a bump, open gaps carry over to the new epoch, which reassigns them."""
        for tp, (since, prog) in self.unowned_since.items():
            if prog is not None:
                prog.gap(tp, timestamp - since)


def fenced_by_rebalance_timeout(m: ConsumerGroupMember, removed_at: int) -> bool:
    """Whether removing ``m`` now is its rebalance timeout firing: a timer armed by its last
    reconciliation record (``ConsumerGroupMember.rebalance_timer``) whose deadline has come, with
    the member still at the epoch it was armed at (``scheduleConsumerGroupRebalanceTimeout``)."""
    timer = m.rebalance_timer
    if timer is None or m.state is not MemberState.UNREVOKED_PARTITIONS:
        return False
    armed, epoch, timeout = timer
    return armed >= 0 and timeout >= 0 and m.member_epoch == epoch and removed_at - armed >= timeout


def slow_revocation_finding(group: str, log_partition: int, m: ConsumerGroupMember, names: TopicNames,
                            e: LogEntry, group_epoch: int) -> dict[str, Any]:
    """The ``slow-revocation`` finding of a member fenced by its rebalance timeout: a
    group-level row (no topic partition) naming the member and what it held."""
    held = sorted(f"{names.name(t)}-{p}" for t, ps in m.pending_revocation.items() for p in ps)
    timeout = m.rebalance_timer[2] if m.rebalance_timer is not None else m.rebalance_timeout_ms
    since = m.state_since.timestamp
    shown = ", ".join(held[:SHOWN]) + (f" and {len(held) - SHOWN} more" if len(held) > SHOWN else "")
    host = (m.client_host or "").lstrip("/") or "?"
    who = f"member {m.member_id} ({m.client_id or '?'}@{host}" + (
        f", instance {m.instance_id})" if m.instance_id is not None else ")")
    message = (
        f"{who} kept {len(held)} partition(s) pending revocation ({shown}) for "
        f"{(e.timestamp - since) / 1000:.1f} s at epoch {m.member_epoch}, past its rebalance timeout "
        f"({timeout} ms, max.poll.interval.ms): the coordinator fenced it "
        "(GroupMetadataManager's rebalance timeout). Its partitions went to other members only then; "
        "onPartitionsRevoked, or the poll loop that runs it, was slower than the timeout")
    return group_finding(SLOW_REVOCATION_RULE, group, log_partition, record_offset=e.offset, position=e.position, source=e.source,
                         timestamp=e.timestamp, generation_id=group_epoch, previous_generation_id=m.member_epoch,
                         previous_record_offset=m.state_since.offset if m.state_since.offset >= 0 else None,
                         message=message)
