"""Generations of the groups of one ``__consumer_offsets`` partition, read from the shard.

The shard (:mod:`kgtool.offsets.shard`, ``GroupMetadataManager``) parses every group record once
into the groups as Kafka holds them; a generation is read from that model right after the
shard replayed its record:

- classic: ``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)`` replaced the
  ``ClassicGroup`` whole (protocol type, assignor, leader, members with their decoded
  subscriptions and assignments): a new generation; a tombstone removed the group.
- KIP-848: the ``ConsumerGroup`` and its ``ConsumerGroupMember`` objects; each group epoch is
  that protocol's generation; ownership is the members' current assignment (assigned plus
  pending revocation), and a partition of the target assignment that no member holds yet is in
  transit (released by one member, not yet taken by the next), not orphaned. Reconciliation and
  fencing: :mod:`kgtool.offsets.reconciliation`.

A group's generation decides what its commits are attributed to (generation, protocol, state,
owners of the partition) and what the orphan and zombie rules see; :class:`GroupState` keeps
that snapshot in the :class:`~kgtool.offsets.store.Store` arrays that the commit loop reads,
and refreshes it only when the generation changes. Generations and members are rows of their
tables (rare: one per generation record); each generation change is then handed, with the
previous generation, to :mod:`kgtool.offsets.rebalances` (the rebalances table), last.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from kgtool import native
from kgtool.offsets.entries import LogEntry
from kgtool.offsets.rebalances import MemberInfo
from kgtool.offsets.reconciliation import (
    ConsumerGroupWatch,
    EpochProgress,
    fenced_by_rebalance_timeout,
    slow_revocation_finding,
)
from kgtool.offsets.shard.model import (
    ClassicGroup,
    ClassicGroupMember,
    ConsumerGroupMember,
    ModernGroup,
    TopicNames,
    TopicPartition,
)
from kgtool.offsets.shard.views import preferred_server_assignor
from kgtool.offsets.store import G, K, NULL, Store

if TYPE_CHECKING:  # pragma: no cover
    from kgtool.offsets.rebalances import RebalanceLog

# the KIP-848 record kinds the generation follows (GroupCoordinatorRecordSerde's names, snake_case)
GROUP_EPOCH = "consumer_group_metadata"
MEMBER_METADATA = "consumer_group_member_metadata"
CURRENT_ASSIGNMENT = "consumer_group_current_member_assignment"
PARTITION_METADATA = "consumer_group_partition_metadata"
_K_OWNERS, _K_ORPHAN, _K_MOVED, _K_TOP_HAS = K["owners"], K["orphan"], K["moved"], K["top_has"]


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def track_moves_py(owners: dict[TopicPartition, Any], last: dict[TopicPartition, Any], keys: dict[TopicPartition, int],
                    moved_at: dict[TopicPartition, int], token: int, kk: np.ndarray) -> int:
    """The partitions whose owners differ from their last known ones moved: ``last`` and
    ``moved_at`` updated, the key rows of those with commits marked (moved at ``token``, no top
    commit since), their number returned. The twin of ``kgtool.offsets._replay.track_moves``."""
    moved = []
    n = 0
    # the partitions whose owners are new or differ (a set difference in C); of those, the ones
    # with a last known owner moved
    for tp, _now in owners.items() - last.items():
        if tp in last:
            n += 1
            moved_at[tp] = token
            k = keys.get(tp)
            if k is not None:
                moved.append(k)
    last.update(owners)
    if moved:
        kk[moved, _K_MOVED] = token
        kk[moved, _K_TOP_HAS] = 0
    return n


def attribute_keys_py(keys: dict[TopicPartition, int], owners: dict[TopicPartition, tuple[str, ...]],
                       codes: dict[tuple[str, ...], int], intern: Callable[[tuple[str, ...]], int],
                       kk: np.ndarray) -> list[tuple[TopicPartition, int]]:
    """Attribute every key to its partition's owners in ``owners`` (``()`` when absent): its row
    gets the owner list's code (``codes``, ``intern`` for a new list) and no orphan state. The
    partitions without an owner are returned with their keys (their orphan state is the
    caller's). The twin of ``kgtool.offsets._replay.attribute_keys``."""
    tps = list(keys)
    given = list(map(owners.get, tps, repeat(())))
    found = list(map(codes.get, given))
    idx = np.fromiter(keys.values(), np.int64, len(tps))
    kk[idx, _K_OWNERS] = found if None not in found else list(map(intern, given))
    kk[idx, _K_ORPHAN] = 0
    return [(tp, k) for tp, k, o in zip(tps, keys.values(), given) if not o]


_moves = getattr(native.load("kgtool.offsets._replay"), "track_moves", track_moves_py)
_attribute_keys = getattr(native.load("kgtool.offsets._replay"), "attribute_keys", attribute_keys_py)


@dataclass
class Generation:
    """A generation in effect: classic (GroupMetadata) or KIP-848 (group epoch)."""

    protocol: str  # "classic" / "consumer"
    generation_id: int
    record_offset: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    current_state_timestamp: int | None = None
    members: list[str] = field(default_factory=list)
    # Sorted owner member ids per partition; None when assignments are unknown (a non-consumer
    # protocol, undecodable assignments).
    owners: dict[TopicPartition, tuple[str, ...]] | None = None
    row: dict[str, Any] | None = None  # its generations-table row, updated as the log goes on
    # Per member: instance id, client id, host and timeouts (compared with the previous
    # generation's: kgtool.offsets.rebalances): the shard's ClassicGroupMember objects, or a
    # consumer group's MemberInfo snapshots; None for a group tombstone.
    member_info: Mapping[str, MemberInfo | ClassicGroupMember] | None = None
    # Partitions given to other owners than their last known ones while the generation is in
    # effect (the zombie rule's moves: at its start for classic, during reconciliation for KIP-848).
    moved: int = 0
    #: KIP-848: target-assignment partitions no member holds yet (in transit, not orphaned)
    transit: frozenset[TopicPartition] = frozenset()
    #: KIP-848: the reconciliation of this epoch (its rebalances-row columns)
    progress: EpochProgress | None = None
    #: KIP-848: members fenced by their rebalance timeout since the previous epoch (-> timeout)
    fenced: dict[str, int] = field(default_factory=dict)
    #: KIP-848: what else changed since the previous epoch ("subscription", "metadata")
    changes: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.members


class OwnerLists:
    """Interned owner lists (sorted member ids): the commits table's ``owners`` column is a code
    per commit into this list."""

    def __init__(self) -> None:
        self.lists: list[tuple[str, ...]] = []
        self.known: dict[tuple[str, ...], int] = {}  # list -> code

    def code(self, owners: tuple[str, ...]) -> int:
        c = self.known.get(owners)
        if c is None:
            c = self.known[owners] = len(self.lists)
            self.lists.append(owners)
        return c


class GroupState:
    """One group's generations, members and the snapshot its commits are attributed to."""

    def __init__(self, name: str, log_partition: int, store: Store, owner_lists: OwnerLists,
                 generations: list[dict[str, Any]], members: list[tuple],
                 rebalances: RebalanceLog | None = None) -> None:
        self.name = name
        self.log_partition = log_partition
        self.store = store
        self.owner_lists = owner_lists
        self.gid = store.add_group()
        self.generations = generations  # the partition's table rows (shared)
        self.members = members
        self.records = 0  # records of this group replayed (for a memory error's message)
        self.gen: Generation | None = None
        self.prev_gen: Generation | None = None
        self.keys: dict[TopicPartition, int] = {}
        self.last_owners: dict[TopicPartition, tuple[str, ...]] = {}
        self.moved_at: dict[TopicPartition, int] = {}  # record offset of the generation of the last move
        # KIP-848: reconciliation, and what happened since the last epoch bump (its cause)
        self.watch = ConsumerGroupWatch()
        self.fenced: dict[str, int] = {}
        self.changes: set[str] = set()
        self.metadata_hash = 0
        self._moves_seen: dict[TopicPartition, Any] | None = None  # owners last given to _track_moves
        self._attributed: dict[TopicPartition, Any] | None = None  # owners under which every key is owned
        self.rebalances = None if rebalances is None else rebalances.track(name)  # rows of generation changes

    # ---- keys ----------------------------------------------------------------------------
    def key(self, tp: TopicPartition) -> int:
        k = self.keys.get(tp)
        if k is None:
            self._attributed = None  # a new key: the next snapshot attributes every key again
            k = self.keys[tp] = self.store.add_key(self.gid)
            moved = self.moved_at.get(tp)
            if moved is not None:
                self.store.k[k, K["moved"]] = moved
            self._attribute({tp: k})
        return k

    # ---- the snapshot commits are attributed to ------------------------------------------
    def _attribute(self, keys: dict[TopicPartition, int]) -> bool:
        """Attribute these keys' commits written from now on: per key, the code of its
        partition's sorted owner list (-1 unknown) and the orphan rule's state: 0 no finding, 1
        orphan, 2 the previous owner is still a member (a cooperative revocation in transit:
        noted, not reported). True when every key has an owner in a non-empty generation."""
        gen = self.gen
        kk = self.store.k
        if gen is None or gen.owners is None:
            idx = np.fromiter(keys.values(), np.int64, len(keys))
            kk[idx, _K_OWNERS] = -1
            kk[idx, _K_ORPHAN] = 0
            return False
        unowned = _attribute_keys(keys, gen.owners, self.owner_lists.known, self.owner_lists.code, kk)
        if gen.empty:
            return False  # no member: no orphan either
        if unowned:
            prev = self.prev_gen
            revoking = prev is not None and bool(prev.owners) and gen.record_offset != prev.record_offset
            members = set(gen.members) if revoking else set()
            prev_owners = prev.owners if revoking else {}
            transit = gen.transit
            for tp, k in unowned:
                in_transit = tp in transit or (
                    revoking and not members.isdisjoint(prev_owners.get(tp, ())))  # type: ignore[union-attr]
                kk[k, _K_ORPHAN] = 2 if in_transit else 1
        return not unowned

    def snapshot(self) -> None:
        """Refresh what commits written from now on are attributed to."""
        gen = self.gen
        g = self.store.g[self.gid]
        if gen is None:
            g[G["generation"]], g[G["protocol"]], g[G["token"]] = NULL, 0, -1
        else:
            g[G["generation"]] = gen.generation_id
            g[G["protocol"]] = 1 if gen.protocol == "classic" else 2
            g[G["token"]] = gen.record_offset
        g[G["state"]] = 0 if gen is None or gen.empty else 1
        if gen is not None and not gen.empty and gen.owners is not None and gen.owners == self._attributed:
            return  # every key owned under the same owner map: codes unchanged, no orphan state
        self._attributed = None
        if self.keys and self._attribute(self.keys):
            self._attributed = dict(gen.owners)  # type: ignore[union-attr, arg-type]

    def orphan_message(self, tp: TopicPartition, offset: int) -> str:
        gen = self.gen
        assert gen is not None
        return (
            f"commit of {tp_name(tp)} at offset {offset} while generation "
            f"{gen.generation_id} has {len(gen.members)} member(s) and none owns the partition"
        )

    def _close_generation(self, end_offset: int) -> None:
        """The generation in effect ends at ``end_offset``: its row gets its commit count."""
        g = self.store.g[self.gid]
        if self.gen is not None and self.gen.row is not None:
            self.gen.row["end_record_offset"] = end_offset
            self.gen.row["commit_count"] += int(g[G["count"]])
        g[G["count"]] = 0

    def finish(self, end: int | None = None) -> None:
        """The end of the read (``end``: its instant): open rows are completed."""
        if end is not None:
            self.watch.close(end)
        if self.rebalances is not None:
            self.rebalances.finish()
        if self.gen is not None and self.gen.row is not None:
            self.gen.row["commit_count"] += int(self.store.g[self.gid, G["count"]])
        self.store.g[self.gid, G["count"]] = 0

    # ---- generations ---------------------------------------------------------------------
    def _start_generation(self, gen: Generation, e: LogEntry, state: str) -> None:
        self._close_generation(e.offset)
        self.prev_gen = self.gen
        self.gen = gen
        if gen.owners is not None:
            self._track_moves(gen)
        gen.row = self._generation_row(gen, e, state)
        self.generations.append(gen.row)
        self.snapshot()
        if self.rebalances is not None:
            self.rebalances.change(self.prev_gen, gen, e)

    def _generation_row(self, gen: Generation | None, e: LogEntry, state: str) -> dict[str, Any]:
        """A generations-table row (``gen`` None: the Dead row of a group tombstone)."""
        return {
            "group": self.name,
            "log_partition": self.log_partition,
            "protocol": "classic" if gen is None else gen.protocol,
            "generation_id": None if gen is None else gen.generation_id,
            "protocol_type": None if gen is None else gen.protocol_type,
            "protocol_name": None if gen is None else gen.protocol_name,
            "leader": None if gen is None else gen.leader,
            "state": state,
            "member_count": 0 if gen is None else len(gen.members),
            "current_state_timestamp": None if gen is None else gen.current_state_timestamp,
            "record_offset": e.offset,
            "position": e.position,
            "source": e.source,
            "timestamp": e.timestamp,
            "end_record_offset": None,
            "commit_count": 0,
        }

    def _track_moves(self, gen: Generation) -> None:
        """A partition moved when its owner set differs from the last known one (zombie rule)."""
        assert gen.owners is not None
        if gen.owners == self._moves_seen:
            return  # the same owners as the last generation tracked: nothing moves, nothing changes
        self._moves_seen = dict(gen.owners)
        token = gen.record_offset
        gen.moved += _moves(gen.owners, self.last_owners, self.keys, self.moved_at, token, self.store.k)

    def group_deleted(self, e: LogEntry) -> None:
        """A group tombstone (classic ``GroupMetadata``, or a consumer group's deletion): the
        generation ends, a Dead row, and the rebalances learn the group is gone."""
        self._close_generation(e.offset)
        self.prev_gen = self.gen
        self.gen = None
        self.store.g[self.gid, G["exists"]] = 0
        self.snapshot()
        self.generations.append(self._generation_row(None, e, "Dead"))
        if self.rebalances is not None:
            self.rebalances.tombstone()

    def classic_metadata(self, e: LogEntry, group: ClassicGroup | None) -> None:
        """A GroupMetadata record, after the shard replayed it (``group``: the shard's group, None
        once a tombstone removed it): the generation, its members' rows, and the owners its
        commits are attributed to, read from the shard's model."""
        if group is None:
            self.group_deleted(e)
            return
        gen_id, leader = group.generation, group.leader
        owners: dict[TopicPartition, Any] | None = {}
        member_rows = []
        known = group.protocol_type == "consumer"
        name, part, offset, timestamp = self.name, self.log_partition, e.offset, e.timestamp
        listed = group.listed_members
        for m in listed:
            mid, view = m.member_id, m.protocol
            assigned = view.assigned
            if assigned is None:
                known = False
            elif assigned:
                if owners.keys().isdisjoint(assigned):  # type: ignore[union-attr]
                    owners.update(dict.fromkeys(assigned, (mid,)))  # type: ignore[union-attr]
                else:  # a partition given to two members (or a member listed twice): every owner, sorted
                    for tp in assigned:
                        owners[tp] = tuple(sorted(owners.get(tp, ()) + (mid,)))  # type: ignore[union-attr]
            member_rows.append((  # a members-table row (tables.MEMBER: the column order)
                name, part, "classic", gen_id, mid, m.instance_id, m.client_id, m.client_host, view.rack_id,
                m.session_timeout_ms, m.rebalance_timeout_ms, mid == leader,
                None,  # member_epoch: KIP-848 only
                view.topics,
                view.owned_names, m.assigned_names,  # lists shared between rows (read-only): converted once
                offset, timestamp,
            ))
        if not known:
            owners = None
        gen = Generation(
            protocol="classic",
            generation_id=gen_id,
            record_offset=e.offset,
            protocol_type=group.recorded_protocol_type,
            protocol_name=group.protocol_name,
            leader=leader,
            current_state_timestamp=group.recorded_state_timestamp,
            members=[m.member_id for m in listed],
            owners=owners if listed else {},
            member_info=group.members,  # the shard's members (a member id listed twice: the last)
        )
        self.store.g[self.gid, G["exists"]] = 1
        self.members.extend(member_rows)
        self._start_generation(gen, e, "Empty" if not listed else "Stable")

    # ---- consumer groups (KIP-848) ----------------------------------------------------------------
    def before_consumer_record(self, e: LogEntry, group: ModernGroup | None, names: TopicNames,
                               findings: list[dict[str, Any]]) -> None:
        """A consumer-group record, before the shard replays it: what it ends or changes that the
        shard forgets (a member's state when its tombstone comes, a subscription's last value)."""
        if group is None:
            return
        kind, v = e.kind, e.value
        if kind == CURRENT_ASSIGNMENT and v is None:
            m = group.members.get(str(e.key["member_id"]))
            if m is not None and fenced_by_rebalance_timeout(m, e.timestamp):
                self.fenced[m.member_id] = m.rebalance_timer[2]  # type: ignore[index]
                findings.append(slow_revocation_finding(self.name, self.log_partition, m, names, e,
                                                        group.group_epoch))
        elif kind == MEMBER_METADATA and v is not None:
            m = group.members.get(str(e.key["member_id"]))
            if m is not None and (frozenset(v.get("subscribed_topic_names") or ()) != m.subscribed_topic_names
                                  or v.get("subscribed_topic_regex") != m.subscribed_topic_regex):
                self.changes.add("subscription")
        elif kind == PARTITION_METADATA:
            self.changes.add("metadata")

    def consumer_record(self, e: LogEntry, group: ModernGroup | None, names: TopicNames) -> None:
        """A consumer-group record, after the shard replayed it (``group``: the shard's group)."""
        kind = e.kind
        if kind == GROUP_EPOCH:
            if e.value is None:
                self.group_deleted(e)
                self.watch.reset()
                self.fenced.clear()
                self.changes.clear()
                return
            if group is None:
                return
            gen = self.gen
            if gen is not None and gen.protocol == "consumer" and gen.generation_id == group.group_epoch:
                return  # the same epoch written again: no rebalance
            if group.metadata_hash != self.metadata_hash:  # KIP-1101: the subscribed topics' metadata
                if self.metadata_hash:
                    self.changes.add("metadata")
                self.metadata_hash = group.metadata_hash
            # what the batch did before the bump (a member removed, partitions released) belongs to
            # the epoch that ends; the shard already holds the new epoch, so nothing completes here
            self.watch.observe(group, e.timestamp, settled=False)
            members = group.members
            gen = Generation(
                protocol="consumer",
                generation_id=group.group_epoch,
                record_offset=e.offset,
                protocol_type="consumer",
                protocol_name=preferred_server_assignor(group),
                members=sorted(members),
                owners={},
                member_info={mid: _member_info(m) for mid, m in members.items()},
                progress=self.watch.bump(group.group_epoch, e.timestamp, names),
                fenced=self.fenced,
                changes=frozenset(self.changes),
            )
            self.fenced = {}
            self.changes.clear()
            self.store.g[self.gid, G["exists"]] = 1
            self._consumer_owners(gen, group, names)
            self._start_generation(gen, e, group.state)
            return
        member_id = e.key.get("member_id") if isinstance(e.key, dict) else None
        if group is None or member_id is None:
            return
        self.watch.touch(str(member_id))
        if kind == CURRENT_ASSIGNMENT and e.value is not None:
            m = group.members.get(str(member_id))
            if m is not None:
                self._member_row(m, names, e)

    def settle_consumer(self, group: ModernGroup | None, timestamp: int, names: TopicNames,
                        observe: bool = True) -> None:
        """The end of a batch of the group's records: reconciliation, owners, the generation's row.
        ``observe`` False: commits of the same batch follow; owners only (what they are judged
        with), reconciliation waits for the batch's end."""
        gen = self.gen
        if group is None or gen is None or gen.protocol != "consumer":
            if observe:
                self.watch.changed.clear()
            return
        if observe:
            self.watch.observe(group, timestamp)
        gen.members = sorted(group.members)
        if gen.row is not None:
            gen.row["member_count"] = len(gen.members)
            gen.row["state"] = group.state
        self._consumer_owners(gen, group, names)
        self._track_moves(gen)
        self.snapshot()

    def rename_owners(self, group: ModernGroup | None, names: TopicNames) -> None:
        """Topic ids just named: the owners of a consumer group's generation again, by name, and
        what its commits are attributed to."""
        gen = self.gen
        if group is None or gen is None or gen.protocol != "consumer" or gen.owners is None:
            return
        self._consumer_owners(gen, group, names)
        self._track_moves(gen)
        self.snapshot()

    @staticmethod
    def _consumer_owners(gen: Generation, group: ModernGroup, names: TopicNames) -> None:
        """The owners of each partition: the members holding it (assigned, or pending revocation),
        and the target-assignment partitions no one holds yet (in transit)."""
        owners: dict[TopicPartition, Any] = {}
        pairs = names.pairs
        shared = False
        for mid in sorted(group.members):  # owner lists come out sorted
            m = group.members[mid]
            if m.member_epoch < 0:
                continue
            one = (mid,)
            for held in (m.assigned, m.pending_revocation):
                if not held:
                    continue
                tps = pairs(held)
                if shared or not owners.keys().isdisjoint(tps):
                    shared = True
                    for tp in tps:
                        owners[tp] = owners.get(tp, ()) + one
                else:
                    owners.update(dict.fromkeys(tps, one))
        gen.owners = owners
        targeted: set[TopicPartition] = set()
        for a in group.target_assignment.values():
            targeted.update(pairs(a))
        gen.transit = frozenset(targeted.difference(owners))

    def _member_row(self, m: ConsumerGroupMember, names: TopicNames, e: LogEntry) -> None:
        self.members.append((  # a members-table row (tables.MEMBER: the column order)
            self.name, self.log_partition, "consumer", None if self.gen is None else self.gen.generation_id,
            m.member_id, m.instance_id, m.client_id, m.client_host, m.rack_id,
            m.session_timeout_ms if m.uses_classic_protocol else None,  # else the group's, not recorded
            None if m.rebalance_timeout_ms < 0 else m.rebalance_timeout_ms,
            False,  # is_leader
            m.member_epoch,
            sorted(m.subscribed_topic_names),
            None,  # owned_partitions: classic only
            [tp_name(t) for t in sorted(set(names.pairs(m.assigned)) | set(names.pairs(m.pending_revocation)))],
            e.offset, e.timestamp,
        ))


def _member_info(m: ConsumerGroupMember) -> MemberInfo:
    """A consumer group member's identity and timeouts: the session timeout is the group's
    (``group.consumer.session.timeout.ms``, not recorded) unless the member speaks the classic
    protocol (``ClassicMemberMetadata``)."""
    session = m.session_timeout_ms if m.uses_classic_protocol else None
    rebalance = m.rebalance_timeout_ms
    return MemberInfo(m.instance_id, m.client_id, m.client_host, session, None if rebalance < 0 else rebalance)
