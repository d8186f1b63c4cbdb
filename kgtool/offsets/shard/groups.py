"""Group records replayed as ``GroupMetadataManager.replay(key, value)`` replays them, one method
per record type (Kafka 4.x group-coordinator). Where Kafka's loader throws (a record that
contradicts the state, e.g. a member deleted before its assignment), kgtool records why on the
group (``incomplete``) and in ``problems``, and goes on.
"""

from __future__ import annotations

from typing import Any

from kgtool.offsets.shard.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    NEW_GROUP_EPOCH,
    ClassicGroup,
    NO_PROTOCOL,
    ClassicGroupMember,
    Group,
    GroupType,
    ModernGroup,
    ShareStatePartitionMetadata,
    StreamsGroupMember,
    TasksTuple,
    TasksTupleWithEpochs,
    TopicNames,
    Touch,
    assignment_from_record,
    consumer_protocol_view,
)


class ReplayRefused(Exception):
    """A record Kafka's ``GroupMetadataManager`` refuses (IllegalStateException)."""


def _decoded_assignment(m: dict[str, Any]) -> Any:
    """A classic member's decoded ``ConsumerProtocol`` assignment: the decoder's
    (``assignment_decoded``: None when the bytes do not decode), or decoded here, once, for a
    value built without the decoder."""
    if "assignment_decoded" in m:
        return m["assignment_decoded"]
    raw = m.get("assignment")
    if not raw:
        return None
    from kgtool.coordinator.consumer_protocol import decode_assignment
    from kgtool.errors import DecodeError

    try:
        return decode_assignment(bytes(raw))
    except DecodeError:
        return None


def classic_member(m: dict[str, Any], consumer: bool) -> ClassicGroupMember:
    """One ``GroupMetadataValue.MemberMetadata`` as ``GroupMetadataManager.replay`` loads it
    (``consumer``: the group's protocol type is "consumer", whose bytes ``ConsumerProtocol``
    decodes). The rebalance timeout: ``rebalanceTimeout() == -1 ? sessionTimeout() :
    rebalanceTimeout()`` (Kafka 4.0 and 4.4 alike); RebalanceTimeout is a v1+ field whose default
    is -1, so a v0 member's is its session timeout."""
    session = int(m.get("session_timeout", 0))
    rebalance = int(m.get("rebalance_timeout", -1))
    view = consumer_protocol_view(m.get("subscription_decoded"), _decoded_assignment(m)) if consumer else NO_PROTOCOL
    if not consumer:
        assigned = None
    elif not m.get("assignment"):
        assigned = []  # empty bytes: no partitions (Kafka's ConsumerProtocol is never asked)
    else:  # as listed; a decoded assignment without partitions: none
        assigned = view.listed if view.listed is not None or view.assigned_names is None else []
    return ClassicGroupMember(
        member_id=m["member_id"], instance_id=m.get("group_instance_id"), client_id=m.get("client_id", ""),
        client_host=m.get("client_host", ""), rebalance_timeout_ms=session if rebalance == -1 else rebalance,
        session_timeout_ms=session, assigned=assigned, subscription=view.topics, protocol=view)


class GroupMetadataManager:
    """The groups of one ``__consumer_offsets`` partition."""

    def __init__(self, topic_names: TopicNames | None = None) -> None:
        self.groups: dict[str, Group] = {}
        self.topic_names = topic_names if topic_names is not None else TopicNames()
        #: (group, log offset, why) of each record refused
        self.problems: list[tuple[str, int, str]] = []
        #: ``GroupMetadataManager.shareGroupStatePartitionMetadata``: kept by group id, beside the
        #: groups (a share group's deletion does not remove it; its own tombstone does)
        self.share_state_metadata: dict[str, ShareStatePartitionMetadata] = {}

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
            g = self.groups[group_id] = self._new_modern(group_id, type_)
            return g
        if isinstance(g, ModernGroup) and g.type is type_:
            return g
        if isinstance(g, ClassicGroup) and g.is_simple_group():
            # "Simple classic groups are not backed by any records ... we can safely replace it"
            g = self.groups[group_id] = self._new_modern(group_id, type_)
            return g
        raise ReplayRefused(f"Group {group_id} is not a {type_.value} group")

    @staticmethod
    def _new_modern(group_id: str, type_: GroupType) -> ModernGroup:
        """A new consumer, share or streams group: Kafka 4.3+ starts it at group epoch 1 and target
        assignment epoch 1 (``ModernGroup``/``StreamsGroup`` constructors,
        ``TargetAssignmentMetadata.INITIAL``)."""
        return ModernGroup(group_id, type=type_, group_epoch=NEW_GROUP_EPOCH, assignment_epoch=NEW_GROUP_EPOCH)

    # ---- classic ---------------------------------------------------------------------------------
    def replay_group_metadata(self, group_id: str, v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(GroupMetadataKey, GroupMetadataValue)``: a tombstone removes the group, a value
        replaces it whole (Empty without members, else Stable)."""
        if v is None:
            self.groups.pop(group_id, None)
            return
        pt = v.get("protocol_type")
        consumer = pt == "consumer"
        listed = [classic_member(m, consumer) for m in v.get("members") or ()]
        cst = v.get("current_state_timestamp", -1)
        self.groups[group_id] = ClassicGroup(
            group_id, generation=int(v.get("generation", 0)), protocol_type=pt if pt else None,
            protocol_name=v.get("protocol"), leader=v.get("leader"),
            current_state_timestamp=None if cst in (None, -1) else cst, members={m.member_id: m for m in listed},
            touched=touch, listed_members=listed, recorded_protocol_type=pt,
            recorded_state_timestamp=v.get("current_state_timestamp"))

    # ---- consumer (KIP-848), share (KIP-932), streams (KIP-1071) ------------------------------------
    def replay_metadata(self, type_: GroupType, group_id: str, v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(ConsumerGroupMetadataKey, ...)`` (and the share and streams twins): the group epoch
        and metadata hash (streams: the topology epochs and last assignment configs too), or the
        group's deletion, once its members and target assignment are gone."""
        if v is not None:
            g = self._modern(group_id, True, type_)
            assert g is not None
            g.group_epoch = int(v["epoch"])
            g.metadata_hash = int(v.get("metadata_hash", 0))
            if type_ is GroupType.STREAMS:
                g.validated_topology_epoch = int(v.get("validated_topology_epoch", -1))
                g.stored_description_topology_epoch = int(v.get("stored_description_topology_epoch", -1))
                g.failed_description_topology_epoch = int(v.get("failed_description_topology_epoch", -1))
                configs = v.get("last_assignment_configs")
                g.last_assignment_configs = {} if configs is None else {str(c["key"]): str(c["value"]) for c in configs}
            g.touched = touch
            return
        g = self._modern(group_id, False, type_)
        if g is None:
            return
        if g.members:
            raise ReplayRefused(f"tombstone of group {group_id} while it still has {len(g.members)} members")
        # StreamsGroup's tombstone check has no target-assignment test (GroupMetadataManager.replay)
        targets = g.target_tasks if type_ is GroupType.STREAMS else g.target_assignment
        if targets and type_ is not GroupType.STREAMS:
            raise ReplayRefused(f"tombstone of group {group_id} while its target assignment still has "
                                f"{len(targets)} members")
        if g.assignment_epoch != -1:
            raise ReplayRefused(f"tombstone of group {group_id} before the tombstone of its target assignment metadata")
        del self.groups[group_id]

    def replay_partition_metadata(self, type_: GroupType, group_id: str, v: dict[str, Any] | None,
                                  touch: Touch) -> None:
        """``replay(ConsumerGroupPartitionMetadataKey, ...)``: since 4.1 only a flag (the record is
        replaced by the metadata hash and deleted at the next heartbeat); kgtool still learns the
        topic names it gives (the weakest of its name sources)."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        g.has_subscription_metadata_record = v is not None
        if v is None:
            g.subscription_metadata = {}
            return
        meta = {}
        for t in v.get("topics") or ():
            meta[t["topic_name"]] = (t["topic_id"], int(t.get("num_partitions", 0)))
            self.topic_names.learn(t["topic_id"], t["topic_name"], weak=True)
        g.subscription_metadata = meta

    def replay_regular_expression(self, group_id: str, regex: str, v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(ConsumerGroupRegularExpressionKey, ...)``: a resolved regular expression (it creates
        the consumer group), or its removal."""
        g = self._modern(group_id, v is not None, GroupType.CONSUMER)
        if g is None:
            return
        if v is None:
            g.resolved_regular_expressions.pop(regex, None)
        else:
            g.resolved_regular_expressions[regex] = (
                frozenset(str(t) for t in v.get("topics") or ()), int(v.get("version", 0)), int(v.get("timestamp", 0)))

    def replay_topology(self, type_: GroupType, group_id: str, v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(StreamsGroupTopologyKey, ...)``: the group's topology, or none."""
        g = self._modern(group_id, v is not None, GroupType.STREAMS)
        if g is None:
            return
        g.topology = None if v is None else v

    def replay_share_state_partition_metadata(self, type_: GroupType, group_id: str, v: dict[str, Any] | None,
                                              touch: Touch) -> None:
        """``replay(ShareGroupStatePartitionMetadataKey, ...)``: the share partitions being initialized,
        initialized and being deleted (a value creates the share group; a tombstone drops the info)."""
        self._modern(group_id, v is not None, GroupType.SHARE)
        if v is None:
            self.share_state_metadata.pop(group_id, None)
            return
        self.share_state_metadata[group_id] = ShareStatePartitionMetadata.from_record(v, touch)
        for info in (v.get("initializing_topics") or (), v.get("initialized_topics") or (), v.get("deleting_topics") or ()):
            for t in info:
                if t.get("topic_name"):
                    self.topic_names.learn(str(t["topic_id"]), str(t["topic_name"]), weak=True)

    def replay_member_metadata(self, type_: GroupType, group_id: str, member_id: str, v: dict[str, Any] | None,
                               touch: Touch) -> None:
        """``replay(ConsumerGroupMemberMetadataKey, ...)`` (and twins): the member's subscription, or its
        removal (only after its current assignment's and target assignment's tombstones)."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        if v is not None:
            m = g.get_or_create_member(member_id)
            if type_ is GroupType.SHARE:
                m.update_with_share_metadata(v)
            else:
                m.update_with_metadata(v)
            m.touched = touch
            g.update_member(m)
            return
        m = g.members.get(member_id)
        if m is None:
            return
        if m.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise ReplayRefused(f"tombstone of member {member_id} before its current assignment's tombstone")
        targets = g.target_tasks if type_ is GroupType.STREAMS else g.target_assignment
        if member_id in targets:
            raise ReplayRefused(f"tombstone of member {member_id} before its target assignment's tombstone")
        g.remove_member(member_id)

    def replay_target_assignment_metadata(self, type_: GroupType, group_id: str, v: dict[str, Any] | None,
                                          touch: Touch) -> None:
        """``replay(ConsumerGroupTargetAssignmentMetadataKey, ...)``: the assignment epoch and time
        (4.3+), or -1 and 0 once deleted."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        if v is not None:
            g.assignment_epoch = int(v["assignment_epoch"])
            g.assignment_timestamp = int(v.get("assignment_timestamp", 0))
            return
        targets = g.target_tasks if type_ is GroupType.STREAMS else g.target_assignment
        if targets:
            raise ReplayRefused(f"tombstone of the target assignment of {group_id} while it still has "
                                f"{len(targets)} members")
        g.assignment_epoch, g.assignment_timestamp = -1, 0

    def replay_target_assignment_member(self, type_: GroupType, group_id: str, member_id: str,
                                        v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(ConsumerGroupTargetAssignmentMemberKey, ...)``: a member's target assignment
        (streams: its target tasks, ``TasksTuple.fromTargetAssignmentRecord``)."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        if type_ is GroupType.STREAMS:
            if v is None:
                g.target_tasks.pop(member_id, None)
            else:
                g.target_tasks[member_id] = TasksTuple.from_record(v)
            return
        if v is None:
            g.target_assignment.pop(member_id, None)
        else:
            g.target_assignment[member_id] = assignment_from_record(v.get("topic_partitions"))

    def replay_current_member_assignment(self, type_: GroupType, group_id: str, member_id: str,
                                         v: dict[str, Any] | None, touch: Touch) -> None:
        """``replay(ConsumerGroupCurrentMemberAssignmentKey, ...)``: epochs, state and partitions (streams:
        tasks); a tombstone leaves the member at epoch -1 with nothing (its metadata tombstone removes it)."""
        g = self._modern(group_id, v is not None, type_)
        if g is None:
            return
        m = g.members.get(member_id)
        if v is not None:
            m = m if m is not None else g.get_or_create_member(member_id)
            if type_ is GroupType.SHARE:
                m.update_with_share_assignment(v, touch)
            else:
                m.update_with_assignment(v, touch)
            m.touched = touch
            g.update_member(m)
            return
        if m is None:
            return
        m.member_epoch = m.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH
        if isinstance(m, StreamsGroupMember):
            m.assigned_tasks = m.tasks_pending_revocation = TasksTupleWithEpochs()
        else:
            m.assigned, m.pending_revocation = {}, {}
            m.assigned_epochs, m.pending_epochs = {}, {}
        m.touched = m.state_since = touch
        g.update_member(m)
