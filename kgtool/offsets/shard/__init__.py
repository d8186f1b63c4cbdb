"""The groups of a ``__consumer_offsets`` partition replayed as Kafka's group coordinator loads them.

:class:`GroupCoordinatorShard` mirrors Kafka 4.x ``GroupCoordinatorShard.replay``: one dispatch on
the record type to :class:`GroupMetadataManager`, one method per record type. Offset commits and
transaction markers (``OffsetMetadataManager.replay`` and ``replayEndTransactionMarker``) are the
columnar offset store's (:mod:`kgtool.offsets.store`): the audit's replay
(:mod:`kgtool.offsets.partition`) keeps commits there and hands this shard every other record.
Together they hold, after any prefix of the log, what Kafka's coordinator holds after loading
that prefix (checked after every batch of Kafka-made logs: ``tests/kip848``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kgtool.offsets.shard.groups import GroupMetadataManager, ReplayRefused
from kgtool.offsets.shard.model import (
    ClassicGroup,
    ClassicGroupMember,
    ConsumerGroupMember,
    Group,
    ShareStatePartitionMetadata,
    StreamsGroupMember,
    StreamsMemberState,
    TasksTuple,
    TasksTupleWithEpochs,
    GroupType,
    MemberState,
    ModernGroup,
    TopicNames,
    Touch,
)

__all__ = [
    "ClassicGroup",
    "ClassicGroupMember",
    "ConsumerGroupMember",
    "Group",
    "GroupCoordinatorShard",
    "GroupMetadataManager",
    "GroupType",
    "MemberState",
    "ModernGroup",
    "RECORD_GROUP_TYPE",
    "ShareStatePartitionMetadata",
    "StreamsGroupMember",
    "StreamsMemberState",
    "TasksTuple",
    "TasksTupleWithEpochs",
    "TopicNames",
]

#: record kind -> (group type, GroupMetadataManager method, keyed by member?): the dispatch of
#: Kafka 4.4's ``GroupCoordinatorShard.replay`` (one case per ``CoordinatorRecordType``)
_MODERN: dict[str, tuple[GroupType, str, bool]] = {}
for _prefix, _type in (("consumer_group", GroupType.CONSUMER), ("share_group", GroupType.SHARE),
                       ("streams_group", GroupType.STREAMS)):
    _MODERN[f"{_prefix}_metadata"] = (_type, "replay_metadata", False)
    _MODERN[f"{_prefix}_member_metadata"] = (_type, "replay_member_metadata", True)
    _MODERN[f"{_prefix}_target_assignment_metadata"] = (_type, "replay_target_assignment_metadata", False)
    _MODERN[f"{_prefix}_target_assignment_member"] = (_type, "replay_target_assignment_member", True)
    _MODERN[f"{_prefix}_current_member_assignment"] = (_type, "replay_current_member_assignment", True)
_MODERN["consumer_group_partition_metadata"] = (GroupType.CONSUMER, "replay_partition_metadata", False)
_MODERN["consumer_group_regular_expression"] = (GroupType.CONSUMER, "replay_regular_expression", False)
_MODERN["share_group_state_partition_metadata"] = (GroupType.SHARE, "replay_share_state_partition_metadata", False)
_MODERN["streams_group_topology"] = (GroupType.STREAMS, "replay_topology", False)

#: record types a 4.1+ loader skips as unknown: ShareGroupPartitionMetadata (type 9, Kafka 4.0's
#: early-access share groups only; 4.1's ``CoordinatorRecordType`` has no such id). Decoded, counted
#: in ``ignored``, never replayed.
_NO_STATE = frozenset({"share_group_partition_metadata"})

#: the group type of every modern group record kind (GroupCoordinatorRecordSerde's record types):
#: how the audit routes a record without a prefix test
RECORD_GROUP_TYPE: dict[str, GroupType] = {
    **{kind: route[0] for kind, route in _MODERN.items()},
    **{kind: GroupType(kind.split("_group_", 1)[0]) for kind in _NO_STATE},
}


class GroupCoordinatorShard:
    """The groups of one ``__consumer_offsets`` partition, replayed record by record."""

    def __init__(self, topic_names: dict[str, str] | None = None) -> None:
        """``topic_names``: topic id -> name known beside the log (``partition.metadata`` files);
        ``ConsumerGroupPartitionMetadata`` records name ids too, and win."""
        self.topic_names = TopicNames(topic_names)
        self.groups = GroupMetadataManager(self.topic_names)
        #: record kinds replayed, and those that change no state (or that kgtool does not know)
        self.replayed: Counter[str] = Counter()
        self.ignored: Counter[str] = Counter()
        #: groups whose replay met a record Kafka's loader refuses: group -> why
        self.incomplete: dict[str, str] = {}

    def replay(self, offset: int, kind: str | None, key: dict[str, Any] | None,
               value: dict[str, Any] | None, timestamp: int = -1) -> str | None:
        """``GroupCoordinatorShard.replay(offset, producerId, producerEpoch, record)`` for a group
        record (offset commits are the offset store's). Returns why the record was refused (the
        group is then marked incomplete), None when it was replayed or ignored."""
        if key is None or kind is None:
            self.ignored[str(kind)] += 1
            return None
        touch = Touch(offset, timestamp)
        try:
            if kind == "group_metadata":
                self.replayed[kind] += 1
                self.groups.replay_group_metadata(str(key["group"]), value, touch)
                return
            route = _MODERN.get(kind)
            if route is None:
                self.ignored[kind] += 1
                return
            self.replayed[kind] += 1
            type_, method, by_member = route
            fn = getattr(self.groups, method)
            if method == "replay_regular_expression":
                fn(str(key["group_id"]), str(key.get("regular_expression", "")), value, touch)
            elif by_member:
                fn(type_, str(key["group_id"]), str(key["member_id"]), value, touch)
            else:
                fn(type_, str(key["group_id"]), value, touch)
        except ReplayRefused as exc:
            group = str(key.get("group_id", key.get("group")))
            self._mark(group, offset, f"record at offset {offset}: {exc} (Kafka's loader refuses it)", str(exc))
            return f"{exc} (Kafka's loader refuses it)"
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # a record whose fields kgtool cannot replay (a value it decoded but does not expect):
            # never an abort of the whole audit; its group is marked incomplete, with one warning
            group = str(key.get("group_id", key.get("group")))
            why = f"kgtool could not replay it ({type(exc).__name__}: {exc})"
            self._mark(group, offset, f"record at offset {offset} ({kind}): {why}", why)
            return why
        return None

    def replay_undecodable(self, offset: int, kind: str | None, group: str, why: str) -> None:
        """A record of ``group`` (``why``: where and what) whose value does not decode (or has a version Kafka does not
        know): Kafka's loader fails the whole partition (``CoordinatorLoaderImpl``: "Deserializing
        record ... failed"); kgtool skips the record and marks the group incomplete. The group
        exists from then on, as the record's replay would have created it (a tombstone decodes)."""
        route = _MODERN.get(kind or "")
        try:
            if route is not None:
                self.groups._modern(group, True, route[0])
            elif kind == "group_metadata" and group not in self.groups.groups:
                self.groups.groups[group] = ClassicGroup(group)
        except ReplayRefused:
            pass  # a group of another type: marked as it is
        self._mark(group, offset, f"{why}: the record was skipped, so the group lacks what it changed", why)

    def _mark(self, group: str, offset: int, why: str, problem: str) -> None:
        self.incomplete.setdefault(group, why)
        self.groups.problems.append((group, offset, problem))
        g = self.groups.group(group)
        if g is not None and g.incomplete is None:
            g.incomplete = why

    def group_ids(self) -> list[str]:
        return sorted(self.groups.groups)
