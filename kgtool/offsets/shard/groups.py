"""Group records replayed as ``GroupMetadataManager.replay(key, value)`` replays them, one method
per record type (Kafka 4.x group-coordinator). Where Kafka's loader throws (a record that
contradicts the state, e.g. a member deleted before its assignment), kgtool records why on the
group (``incomplete``) and in ``problems``, and goes on.
"""

from __future__ import annotations

from typing import Any

from kgtool.offsets.shard.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ClassicGroup,
    ClassicGroupMember,
    Group,
    GroupType,
    ModernGroup,
    TopicNames,
    Touch,
    assignment_from_record,
)


class ReplayRefused(Exception):
    """A record Kafka's ``GroupMetadataManager`` refuses (IllegalStateException)."""


def _classic_assigned(protocol_type: str | None, m: dict[str, Any]) -> list[tuple[str, int]] | None:
    """A classic member's assignment as ``ConsumerProtocol`` decodes it (protocol type "consumer";
    empty bytes: no partitions); None for other protocol types or bytes that do not decode."""
    if protocol_type != "consumer":
        return None
    raw = m.get("assignment")
    if not raw:
        return []
    decoded = m.get("assignment_decoded")
    if decoded is None:
        from kgtool.coordinator.consumer_protocol import decode_assignment
        from kgtool.errors import DecodeError

        try:
            decoded = decode_assignment(bytes(raw))
        except DecodeError:
            return None
    return sorted((t["topic"], int(p)) for t in decoded.get("assigned_partitions") or () for p in t["partitions"])


def _subscription(protocol_type: str | None, m: dict[str, Any]) -> list[str] | None:
    if protocol_type != "consumer":
        return None
    decoded = m.get("subscription_decoded")
    return None if decoded is None else sorted(decoded.get("topics") or ())


class GroupMetadataManager:
    """The groups of one ``__consumer_offsets`` partition."""

    def __init__(self, topic_names: TopicNames | None = None) -> None:
        self.groups: dict[str, Group] = {}
        self.topic_names = topic_names if topic_names is not None else TopicNames()
        #: (group, log offset, why) of each record refused
        self.problems: list[tuple[str, int, str]] = []

    # ---- lookups (GroupMetadataManager.group / getOrMaybeCreate*) ---------------------------------
    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def _modern(self, group_id: str, create: bool, type_: GroupType) -> ModernGroup | None:
        """``getOrMaybeCreatePersistedConsumerGroup`` (and its share/streams twins): None where
        Kafka throws GroupIdNotFoundException (the caller ignores the tombstone)."""
        g = self.groups.get(group_id)
        if g is None:
            if not create:
                return None
            g = self.groups[group_id] = ModernGroup(group_id, type=type_)
            return g
        if isinstance(g, ModernGroup) and g.type is type_:
            return g
        if isinstance(g, ClassicGroup) and g.is_simple_group():
            # "Simple classic groups are not backed by any records ... we can safely replace it"
            g = self.groups[group_id] = ModernGroup(group_id, type=type_)
            return g
        raise ReplayRefused(f"Group {group_id} is not a {type_.value} group")

    # ---- classic ---------------------------------------------------------------------------------
    def replay_group_metadata(self, group_id: str, v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(GroupMetadataKey, GroupMetadataValue)``: a tombstone removes the group, a value
        replaces it whole (Empty without members, else Stable)."""
        if v is None:
            self.groups.pop(group_id, None)
            return
        pt = v.get("protocol_type")
        protocol_type = pt if pt else None
        members = {}
        for m in v.get("members") or ():
            session = int(m.get("session_timeout", 0))
            rebalance = int(m.get("rebalance_timeout", -1))
            members[m["member_id"]] = ClassicGroupMember(
                member_id=m["member_id"], instance_id=m.get("group_instance_id"), client_id=m.get("client_id", ""),
                client_host=m.get("client_host", ""),
                rebalance_timeout_ms=session if rebalance == -1 else rebalance, session_timeout_ms=session,
                assigned=_classic_assigned(protocol_type, m), subscription=_subscription(protocol_type, m))
        cst = v.get("current_state_timestamp", -1)
        self.groups[group_id] = ClassicGroup(
            group_id, generation=int(v.get("generation", 0)), protocol_type=protocol_type,
            protocol_name=v.get("protocol"), leader=v.get("leader"),
            current_state_timestamp=None if cst in (None, -1) else cst, members=members, touched=touch)

    # ---- consumer (KIP-848), share (KIP-932), streams (KIP-1071) ------------------------------------
    def replay_metadata(self, type_: GroupType, group_id: str, v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(ConsumerGroupMetadataKey, ConsumerGroupMetadataValue)``: the group epoch, or the
        group's deletion (only once its members, target assignment and assignment epoch are gone)."""
        if v is not None:
            g = self._modern(group_id, True, type_)
            assert g is not None
            g.group_epoch = int(v["epoch"])
            g.metadata_hash = int(v.get("metadata_hash", 0))
            g.creation_time_ms = int(v.get("creation_time_ms", -1))
            g.touched = touch
            return
        g = self._modern(group_id, False, type_)
        if g is None:
            return
        if g.members:
            raise ReplayRefused(f"tombstone of group {group_id} while it still has {len(g.members)} members")
        if g.target_assignment:
            raise ReplayRefused(f"tombstone of group {group_id} while its target assignment still has "
                                f"{len(g.target_assignment)} members")
        if g.assignment_epoch != -1 and type_ is not GroupType.STREAMS:
            raise ReplayRefused(f"tombstone of group {group_id} before the tombstone of its target assignment metadata")
        del self.groups[group_id]

    def replay_partition_metadata(self, type_: GroupType, group_id: str, v: dict[str, Any] | None,
                                  touch: Touch) -> None:
        """``replay(ConsumerGroupPartitionMetadataKey, ...)``: the subscription metadata (topic name ->
        id and partition count); the ids' names are learnt for every group of the partition."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        if v is None:
            g.subscription_metadata = {}
            return
        meta = {}
        for t in v.get("topics") or ():
            meta[t["topic_name"]] = (t["topic_id"], int(t.get("num_partitions", 0)))
            self.topic_names.learn(t["topic_id"], t["topic_name"])
        g.subscription_metadata = meta

    def replay_member_metadata(self, type_: GroupType, group_id: str, member_id: str, v: dict[str, Any] | None,
                               touch: Touch) -> None:
        """``replay(ConsumerGroupMemberMetadataKey, ...)``: the member's subscription, or its removal
        (only after its current assignment's and target assignment's tombstones)."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        if v is not None:
            m = g.get_or_create_member(member_id)
            m.update_with_metadata(v)
            m.touched = touch
            g.update_member(m)
            return
        m = g.members.get(member_id)
        if m is None:
            return
        if m.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise ReplayRefused(f"tombstone of member {member_id} before its current assignment's tombstone")
        if member_id in g.target_assignment:
            raise ReplayRefused(f"tombstone of member {member_id} before its target assignment's tombstone")
        g.remove_member(member_id)

    def replay_target_assignment_metadata(self, type_: GroupType, group_id: str, v: dict[str, Any] | None,
                                          touch: Touch) -> None:
        """``replay(ConsumerGroupTargetAssignmentMetadataKey, ...)``: the assignment epoch (-1 once deleted)."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        if v is not None:
            g.assignment_epoch = int(v["assignment_epoch"])
            return
        if g.target_assignment:
            raise ReplayRefused(f"tombstone of the target assignment of {group_id} while it still has "
                                f"{len(g.target_assignment)} members")
        g.assignment_epoch = -1

    def replay_target_assignment_member(self, type_: GroupType, group_id: str, member_id: str,
                                        v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(ConsumerGroupTargetAssignmentMemberKey, ...)``: a member's target assignment."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        if v is None:
            g.target_assignment.pop(member_id, None)
        else:
            g.target_assignment[member_id] = assignment_from_record(
                v.get("topic_partitions", v.get("active_tasks")))

    def replay_current_member_assignment(self, type_: GroupType, group_id: str, member_id: str,
                                         v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(ConsumerGroupCurrentMemberAssignmentKey, ...)``: epochs, state and partitions; a
        tombstone leaves the member at epoch -1 with nothing (its metadata tombstone removes it)."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        m = g.members.get(member_id)
        if v is not None:
            m = m if m is not None else g.get_or_create_member(member_id)
            m.update_with_assignment(v, touch)
            m.touched = touch
            g.update_member(m)
            return
        if m is None:
            return
        m.member_epoch = m.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH
        m.assigned, m.pending_revocation = {}, {}
        m.touched = m.state_since = touch
        g.update_member(m)
