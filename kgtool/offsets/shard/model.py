"""The groups a group coordinator holds, as Kafka's classes hold them.

Named after, and shaped like, Apache Kafka 4.x ``group-coordinator``:
``classic.ClassicGroup`` / ``ClassicGroupMember``, ``modern.consumer.ConsumerGroup`` /
``ConsumerGroupMember``, ``modern.share.ShareGroup`` and the streams group of KIP-1071. Only
what the records persist is kept (the "hard state" a loaded coordinator has): no join futures,
no timers. Every object also remembers the log offset and time of the record that last changed
it, which the audit's tables and rules use.

Partitions are held as Kafka holds them, by topic id (``Map<Uuid, Set<Integer>>``); names are
resolved when a view is asked for (:class:`TopicNames`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

#: ``ConsumerGroupMember.LEAVE_GROUP_MEMBER_EPOCH`` (and the static leave, -2).
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
#: the group epoch and target assignment epoch of a new consumer, share or streams group: 1 since
#: Kafka 4.3 (``ModernGroup`` constructor, ``TargetAssignmentMetadata.INITIAL``); 0 in 4.0-4.2
NEW_GROUP_EPOCH = 1

TopicIdAssignment = dict[str, frozenset[int]]  # topic id (Kafka's Uuid string) -> partitions


class GroupType(str, Enum):
    """``Group.GroupType``: the names ``kafka-consumer-groups.sh --describe`` prints, lowercased."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"
    STREAMS = "streams"


class _StateByte(Enum):
    """A member state stored as a byte; any other byte reads as UNKNOWN (``fromValue``)."""

    @classmethod
    def from_value(cls, value: int) -> Any:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN  # type: ignore[attr-defined]


class MemberState(_StateByte):
    """``modern.MemberState``: the byte stored in ``ConsumerGroupCurrentMemberAssignmentValue.state``."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class StreamsMemberState(_StateByte):
    """``streams.MemberState`` (KIP-1071): the byte in ``StreamsGroupCurrentMemberAssignmentValue.state``."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


#: subtopology id -> partitions (``TasksTuple``'s maps)
TaskSet = dict[str, frozenset[int]]
#: subtopology id -> {partition: assignment epoch} (``TasksTupleWithEpochs``' active tasks)
TaskEpochs = dict[str, dict[int, int]]


@dataclass(frozen=True)
class TasksTuple:
    """``streams.TasksTuple``: a streams member's active, standby and warm-up tasks, each
    subtopology id -> partitions (the target assignment's ``TasksTuple.fromTargetAssignmentRecord``)."""

    active: TaskSet = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    @classmethod
    def from_record(cls, v: dict[str, Any], prefix: str = "", suffix: str = "") -> TasksTuple:
        def one(name: str) -> TaskSet:
            return {str(t["subtopology_id"]): frozenset(int(p) for p in t.get("partitions") or ())
                    for t in v.get(f"{prefix}{name}_tasks{suffix}") or ()}
        return cls(one("active"), one("standby"), one("warmup"))


@dataclass(frozen=True)
class TasksTupleWithEpochs:
    """``streams.TasksTupleWithEpochs``: a member's current tasks, the active ones with the epoch
    each was assigned in (4.2+ ``AssignmentEpochs``; a record without them, or with a list of
    another length, gives every partition the member epoch: ``fromCurrentAssignmentRecord``)."""

    active: TaskEpochs = field(default_factory=dict)
    standby: TaskSet = field(default_factory=dict)
    warmup: TaskSet = field(default_factory=dict)

    @classmethod
    def from_record(cls, v: dict[str, Any], member_epoch: int, suffix: str = "") -> TasksTupleWithEpochs:
        active: TaskEpochs = {}
        for t in v.get(f"active_tasks{suffix}") or ():
            parts = [int(p) for p in t.get("partitions") or ()]
            epochs = t.get("assignment_epochs")
            if epochs is not None and len(epochs) == len(parts):
                active[str(t["subtopology_id"])] = {p: int(e) for p, e in zip(parts, epochs)}
            else:
                active[str(t["subtopology_id"])] = {p: member_epoch for p in parts}
        simple = TasksTuple.from_record(v, suffix=suffix)
        return cls(active, simple.standby, simple.warmup)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)


class TopicNames:
    """Topic id -> name, learnt from ``ConsumerGroupPartitionMetadata`` records (and from the
    ``partition.metadata`` files of data partitions given as input); an unknown id stays an id."""

    MEMO = 1 << 16  # assignments whose pairs are remembered (then forgotten at once)

    def __init__(self, names: dict[str, str] | None = None) -> None:
        self.names: dict[str, str] = dict(names or {})
        #: the names of strong sources only (partition.metadata files, v4 commits' TopicIds): a
        #: group record's name may come from a record compaction removes (see ArrowOutput._topic_ids)
        self.strong: dict[str, str] = dict(self.names)
        self.version = 0  # bumped when a name changes: remembered pairs are stale
        self._memo: dict[int, tuple[TopicIdAssignment, int, list[tuple[str, int]]]] = {}

    def learn(self, topic_id: str, name: str, *, weak: bool = False) -> None:
        """Name ``topic_id``; a ``weak`` source (a group record) does not rename an id already named."""
        if weak and topic_id in self.names:
            return
        if not weak:
            self.strong[topic_id] = name
        if self.names.get(topic_id) != name:
            self.names[topic_id] = name
            self.version += 1

    def name(self, topic_id: str) -> str:
        return self.names.get(topic_id, topic_id)

    def pairs(self, assignment: TopicIdAssignment | None) -> list[tuple[str, int]]:
        """Sorted (topic, partition) pairs of an assignment (read-only: an assignment object,
        never changed once built, keeps its list while the names stay the same; the audit asks
        again for the same members' assignments after every batch)."""
        if not assignment:
            return []
        hit = self._memo.get(id(assignment))
        if hit is not None and hit[0] is assignment and hit[1] == self.version:
            return hit[2]
        get = self.names.get
        out = sorted((get(t, t), p) for t, ps in assignment.items() for p in ps)
        if len(self._memo) >= self.MEMO:
            self._memo.clear()
        self._memo[id(assignment)] = (assignment, self.version, out)
        return out


def assignment_from_record(items: Any) -> TopicIdAssignment:
    """``Utils.assignmentFromTopicPartitions``: [{topic_id, partitions}] -> {topic_id: partitions}.
    A topic listed twice keeps its last list, as ``Collectors.toMap`` would refuse and Kafka never
    writes; empty lists are kept (Kafka keeps them too)."""
    out: dict[str, frozenset[int]] = {}
    for tp in items or ():
        out[str(tp["topic_id"])] = frozenset(int(p) for p in tp.get("partitions") or ())
    return out


def assignment_epochs_from_record(items: Any, member_epoch: int) -> dict[str, dict[int, int]]:
    """``Utils.assignmentFromTopicPartitions(log, groupId, topicPartitions, defaultEpoch)`` (4.3+):
    topic id -> {partition: the epoch it was assigned in}; without ``AssignmentEpochs`` (or with a
    list of another length) every partition takes ``max(member_epoch, 0)`` (a legacy static
    member's -2 is not an epoch)."""
    default = max(member_epoch, 0)
    out: dict[str, dict[int, int]] = {}
    for tp in items or ():
        parts = [int(p) for p in tp.get("partitions") or ()]
        epochs = tp.get("assignment_epochs")
        if epochs is not None and len(epochs) == len(parts):
            out[str(tp["topic_id"])] = {p: int(e) for p, e in zip(parts, epochs)}
        else:
            out[str(tp["topic_id"])] = dict.fromkeys(parts, default)
    return out


def _set_client(m: Any, v: dict[str, Any]) -> None:
    """The rack and client fields every member metadata record of a modern group carries
    (``ConsumerGroupMember``, ``ShareGroupMember``, ``StreamsGroupMember`` builders' ``updateWith``)."""
    m.rack_id = v.get("rack_id")
    m.client_id = v.get("client_id", "")
    m.client_host = v.get("client_host", "")


def _set_epochs(m: Any, v: dict[str, Any], touch: Any, state: Any) -> None:
    """A current-assignment record's epochs and state (every modern member's ``updateWith``), and
    when the member reached them (``state_since``: a new state or epoch)."""
    if state is not m.state or int(v["member_epoch"]) != m.member_epoch:
        m.state_since = touch
    m.member_epoch = int(v["member_epoch"])
    m.previous_member_epoch = int(v["previous_member_epoch"])
    m.state = state


@dataclass
class Touch:
    """The record that last changed an object: log offset and batch timestamp."""

    offset: int = -1
    timestamp: int = -1


# ---- classic ------------------------------------------------------------------------------------


TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ConsumerProtocolView:
    """A classic member's ``ConsumerProtocol`` subscription and assignment as the records decode
    them (``subscription_decoded``, ``assignment_decoded``), read once: the decoder shares one
    object between records whose bytes are equal, so :func:`consumer_protocol_view` keeps the view
    of each pair of objects. Lists are shared between members and rows: read-only."""

    #: the assigned partitions, sorted, each once; None when the assignment is not decoded (a
    #: protocol type other than "consumer", bytes that do not decode, empty bytes)
    assigned: list[TopicPartition] | None = None
    #: the same as the assignment lists them (a partition listed twice is there twice)
    listed: list[TopicPartition] | None = None
    #: ``topic-partition`` names of ``assigned``; ``[]`` for a decoded assignment without partitions
    assigned_names: list[str] | None = None
    #: ConsumerProtocol v1+: the partitions the member owned when it joined (names)
    owned_names: list[str] | None = None
    #: ConsumerProtocol v3+: the member's rack
    rack_id: str | None = None
    #: the subscribed topics, sorted; None when the subscription is not decoded
    topics: list[str] | None = None


NO_PROTOCOL = ConsumerProtocolView()


def topic_partitions(items: Any) -> list[TopicPartition] | None:
    """``ConsumerProtocol`` partitions, ``[{topic, partitions: [..]}]`` (or ``[topic, partition]``
    pairs) -> the sorted (topic, partition) pairs as listed; None if absent."""
    if items is None:
        return None
    out: list[TopicPartition] = []
    for it in items:
        if isinstance(it, (list, tuple)) and len(it) == 2:
            out.append((str(it[0]), int(it[1])))
            continue
        topic = it.get("topic")
        if topic is None:
            continue
        topic = str(topic)
        out.extend((topic, int(p)) for p in it.get("partitions") or ())
    out.sort()
    return out


def _names(tps: list[TopicPartition] | None) -> list[str] | None:
    return None if tps is None else [f"{t}-{p}" for t, p in tps]


def _view(sub: Any, asg: Any) -> ConsumerProtocolView:
    if not isinstance(sub, dict) and not isinstance(asg, dict):
        return NO_PROTOCOL
    assigned = listed = names = None
    if isinstance(asg, dict):
        listed = topic_partitions(asg.get("assigned_partitions"))
        if listed is None:
            names = []
        else:
            assigned = listed if len(set(listed)) == len(listed) else sorted(set(listed))
            names = _names(assigned)
    if not isinstance(sub, dict):
        return ConsumerProtocolView(assigned, listed, names)
    owned = topic_partitions(sub.get("owned_partitions"))
    topics = sub.get("topics")
    return ConsumerProtocolView(assigned, listed, names, _names(None if owned is None else sorted(set(owned))),
                                sub.get("rack_id"), sorted(topics) if topics else [])


class _ProtocolViews:
    """:func:`_view` once per pair of decoded objects (members' subscriptions and assignments
    repeat from one generation to the next): an identity check, bounded, the objects kept alive
    with their view."""

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self.cache: dict[tuple[int, int], tuple[Any, Any, ConsumerProtocolView]] = {}

    def __call__(self, sub: Any, asg: Any) -> ConsumerProtocolView:
        hit = self.cache.get((id(sub), id(asg)))
        if hit is not None and hit[0] is sub and hit[1] is asg:
            return hit[2]
        if len(self.cache) >= self.size:
            self.cache.clear()
        view = _view(sub, asg)
        self.cache[(id(sub), id(asg))] = (sub, asg, view)
        return view


#: the :class:`ConsumerProtocolView` of a member's decoded subscription and assignment
consumer_protocol_view = _ProtocolViews()


@dataclass
class ClassicGroupMember:
    """``ClassicGroupMember`` as ``GroupMetadataManager.replay(GroupMetadataKey, ...)`` builds it."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    #: the record's RebalanceTimeout, or its session timeout when that is -1 (a v0 record has no
    #: such field and reads its default, -1): Kafka's rule in 4.0 and 4.4 alike
    rebalance_timeout_ms: int
    session_timeout_ms: int
    #: ``ConsumerProtocol`` assignment when the protocol type is "consumer" (empty bytes: []),
    #: else None; (topic name, partition) pairs, as the classic protocol names topics.
    assigned: list[tuple[str, int]] | None
    subscription: list[str] | None = None
    #: the decoded subscription and assignment (rack, owned partitions, partitions each once...)
    protocol: ConsumerProtocolView = NO_PROTOCOL

    @property
    def assigned_names(self) -> list[str] | None:
        """The assigned partitions as both the ``members`` and ``group_members`` tables list them:
        ``topic-partition``, sorted, each once; ``[]`` for empty assignment bytes (Kafka writes
        them for a member that has not synced yet: it holds nothing), None when the bytes do not
        decode or the protocol type is not "consumer"."""
        names = self.protocol.assigned_names
        if names is None and self.assigned is not None and not self.assigned:
            return []
        return names


@dataclass
class ClassicGroup:
    """``ClassicGroup`` as loaded: Empty without members, Stable with (a loaded classic group is
    never PreparingRebalance or CompletingRebalance: those states are not persisted)."""

    group_id: str
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    current_state_timestamp: int | None = None
    members: dict[str, ClassicGroupMember] = field(default_factory=dict)
    touched: Touch = field(default_factory=Touch)
    type: GroupType = GroupType.CLASSIC
    #: why the replay could not follow this group (a record that does not decode); a later
    #: GroupMetadata record replaces the group whole, and with it this
    incomplete: str | None = None
    #: the members as the record lists them: a member id listed twice is there twice (``members``,
    #: like Kafka's map, keeps the last); the generations and members tables show the record
    listed_members: list[ClassicGroupMember] = field(default_factory=list)
    #: the record's ProtocolType and CurrentStateTimestamp as written ("" and -1 kept; None: absent,
    #: e.g. a v0 or v1 record's timestamp), where the fields above hold Kafka's Optionals
    recorded_protocol_type: str | None = None
    recorded_state_timestamp: int | None = None

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def is_simple_group(self) -> bool:
        """``ClassicGroup.isSimpleGroup``: no protocol type and no members (a group created to
        hold offsets committed without the membership protocol; a consumer group may replace it)."""
        return self.protocol_type is None and not self.members


# ---- modern (consumer, share, streams) ------------------------------------------------------------


@dataclass
class ConsumerGroupMember:
    """``ConsumerGroupMember``, with ``ConsumerGroupMember.Builder``'s defaults."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = ""
    server_assignor: str | None = None
    assigned: TopicIdAssignment = field(default_factory=dict)
    pending_revocation: TopicIdAssignment = field(default_factory=dict)
    #: the epoch each assigned (and pending) partition was assigned in: 4.3+ ``AssignmentEpochs``,
    #: else the member epoch (``Utils.assignmentFromTopicPartitions``)
    assigned_epochs: dict[str, dict[int, int]] = field(default_factory=dict)
    pending_epochs: dict[str, dict[int, int]] = field(default_factory=dict)
    #: ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``: session timeout and supported
    #: protocols of a member that speaks the classic protocol to a consumer group; None otherwise.
    classic_member_metadata: dict[str, Any] | None = None
    #: when it reached its current state (the record that set it), for the audit's rules
    state_since: Touch = field(default_factory=Touch)
    #: the rebalance timeout armed for it, as (armed at, member epoch, timeout ms); None: none runs
    #: (see :meth:`update_with_assignment`)
    rebalance_timer: tuple[int, int, int] | None = None
    touched: Touch = field(default_factory=Touch)

    @property
    def uses_classic_protocol(self) -> bool:
        """``ConsumerGroupMember.useClassicProtocol``."""
        return self.classic_member_metadata is not None

    @property
    def session_timeout_ms(self) -> int | None:
        c = self.classic_member_metadata
        return None if c is None else c.get("session_timeout_ms")

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """``ModernGroupMember.isReconciledTo``."""
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    def update_with_metadata(self, v: dict[str, Any]) -> None:
        """``ConsumerGroupMember.Builder.updateWith(ConsumerGroupMemberMetadataValue)``."""
        self.instance_id = v.get("instance_id")
        _set_client(self, v)
        self.subscribed_topic_names = frozenset(v.get("subscribed_topic_names") or ())
        self.subscribed_topic_regex = v.get("subscribed_topic_regex")
        self.rebalance_timeout_ms = v.get("rebalance_timeout_ms", -1)
        self.server_assignor = v.get("server_assignor")
        # an absent tag is Kafka's default, the empty struct (see the schema)
        self.classic_member_metadata = v.get(
            "classic_member_metadata", {"session_timeout_ms": 0, "supported_protocols": []})

    def update_with_assignment(self, v: dict[str, Any], touch: Touch) -> None:
        """``ConsumerGroupMember.Builder.updateWith(ConsumerGroupCurrentMemberAssignmentValue)``."""
        _set_epochs(self, v, touch, MemberState.from_value(int(v.get("state", 0))))
        # GroupMetadataManager.maybeReconcile: a reconciliation record that leaves a member of the
        # consumer protocol UNREVOKED_PARTITIONS (re)arms its rebalance timeout with the member's
        # epoch and timeout of that moment; any other reconciliation cancels it. The -2 record of a
        # static member's leave (consumerGroupStaticMemberGroupLeave) does neither: the timer then
        # finds another epoch than it was armed with and does nothing.
        if self.member_epoch >= 0:
            if self.state is MemberState.UNREVOKED_PARTITIONS and not self.uses_classic_protocol:
                self.rebalance_timer = (touch.timestamp, self.member_epoch, self.rebalance_timeout_ms)
            else:
                self.rebalance_timer = None
        self.assigned_epochs = assignment_epochs_from_record(v.get("assigned_partitions"), self.member_epoch)
        self.pending_epochs = assignment_epochs_from_record(v.get("partitions_pending_revocation"), self.member_epoch)
        self.assigned = {t: frozenset(ps) for t, ps in self.assigned_epochs.items()}
        self.pending_revocation = {t: frozenset(ps) for t, ps in self.pending_epochs.items()}

    def update_with_share_metadata(self, v: dict[str, Any]) -> None:
        """``ShareGroupMember.Builder.updateWith(ShareGroupMemberMetadataValue)``: rack, client and
        subscription only (a share member has no instance id, assignor or rebalance timeout)."""
        _set_client(self, v)
        self.subscribed_topic_names = frozenset(v.get("subscribed_topic_names") or ())

    def update_with_share_assignment(self, v: dict[str, Any], touch: Touch) -> None:
        """``ShareGroupMember.Builder.updateWith(ShareGroupCurrentMemberAssignmentValue)``."""
        _set_epochs(self, v, touch, MemberState.from_value(int(v.get("state", 0))))
        self.assigned = assignment_from_record(v.get("assigned_partitions"))
        self.assigned_epochs = {t: dict.fromkeys(ps, self.member_epoch) for t, ps in self.assigned.items()}


@dataclass
class StreamsGroupMember:
    """``streams.StreamsGroupMember``, with ``StreamsGroupMember.Builder.withDefaults`` (what
    ``getOrCreateUninitializedMember`` starts from)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: StreamsMemberState = StreamsMemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    topology_epoch: int = -1
    process_id: str = ""
    #: ``StreamsGroupMemberMetadataValue.Endpoint`` as ``host:port``, or None
    user_endpoint: str | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    assigned_tasks: TasksTupleWithEpochs = field(default_factory=TasksTupleWithEpochs)
    tasks_pending_revocation: TasksTupleWithEpochs = field(default_factory=TasksTupleWithEpochs)
    state_since: Touch = field(default_factory=Touch)
    touched: Touch = field(default_factory=Touch)
    # what the tables read of every modern member: a streams member holds tasks, not partitions
    assigned: TopicIdAssignment = field(default_factory=dict)
    pending_revocation: TopicIdAssignment = field(default_factory=dict)
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    classic_member_metadata: dict[str, Any] | None = None

    uses_classic_protocol = False
    session_timeout_ms = None

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """``StreamsGroupMember.isReconciledTo``."""
        return self.state is StreamsMemberState.STABLE and self.member_epoch == target_assignment_epoch

    def update_with_metadata(self, v: dict[str, Any]) -> None:
        """``StreamsGroupMember.Builder.updateWith(StreamsGroupMemberMetadataValue)``."""
        self.instance_id = v.get("instance_id")
        _set_client(self, v)
        self.rebalance_timeout_ms = int(v.get("rebalance_timeout_ms", -1))
        self.topology_epoch = int(v.get("topology_epoch", 0))
        self.process_id = v.get("process_id", "")
        ep = v.get("user_endpoint")
        self.user_endpoint = None if ep is None else f"{ep.get('host', '')}:{ep.get('port', 0)}"
        self.client_tags = {str(t["key"]): str(t["value"]) for t in v.get("client_tags") or ()}

    def update_with_assignment(self, v: dict[str, Any], touch: Touch) -> None:
        """``StreamsGroupMember.Builder.updateWith(log, groupId, StreamsGroupCurrentMemberAssignmentValue)``."""
        _set_epochs(self, v, touch, StreamsMemberState.from_value(int(v.get("state", 0))))
        self.assigned_tasks = TasksTupleWithEpochs.from_record(v, self.member_epoch)
        self.tasks_pending_revocation = TasksTupleWithEpochs.from_record(v, self.member_epoch, "_pending_revocation")


@dataclass
class ShareStatePartitionMetadata:
    """``GroupMetadataManager.ShareGroupStatePartitionMetadataInfo`` (KIP-932): the topics whose
    share-partition state is being initialized, is initialized, or is being deleted, by topic id
    (initializing and initialized: topic name and partitions)."""

    initializing: dict[str, tuple[str, frozenset[int]]] = field(default_factory=dict)
    initialized: dict[str, tuple[str, frozenset[int]]] = field(default_factory=dict)
    deleting: frozenset[str] = frozenset()
    touched: Touch = field(default_factory=Touch)

    @classmethod
    def from_record(cls, v: dict[str, Any], touch: Touch) -> ShareStatePartitionMetadata:
        def topics(name: str) -> dict[str, tuple[str, frozenset[int]]]:
            return {str(t["topic_id"]): (str(t.get("topic_name", "")), frozenset(int(p) for p in t.get("partitions") or ()))
                    for t in v.get(name) or ()}
        return cls(topics("initializing_topics"), topics("initialized_topics"),
                   frozenset(str(t["topic_id"]) for t in v.get("deleting_topics") or ()), touch)


@dataclass
class ModernGroup:
    """``ModernGroup``: group epoch, target assignment and its epoch, members."""

    group_id: str
    type: GroupType = GroupType.CONSUMER
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Any] = field(default_factory=dict)  # ConsumerGroupMember | StreamsGroupMember
    target_assignment: dict[str, TopicIdAssignment] = field(default_factory=dict)
    #: ``ConsumerGroupPartitionMetadata``: topic name -> (topic id, partition count)
    subscription_metadata: dict[str, tuple[str, int]] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    metadata_hash: int = 0
    #: ``TargetAssignmentMetadata.assignmentTimestamp`` (4.3+ ``AssignmentTimestamp``; 0 before)
    assignment_timestamp: int = 0
    #: ``ConsumerGroupRegularExpression`` records: regex -> (topics, version, timestamp)
    resolved_regular_expressions: dict[str, tuple[frozenset[str], int, int]] = field(default_factory=dict)
    #: ``ConsumerGroup.hasSubscriptionMetadataRecord``: a 4.0 partition metadata record is still in the log
    has_subscription_metadata_record: bool = False
    # streams groups (KIP-1071)
    validated_topology_epoch: int = -1
    stored_description_topology_epoch: int = -1
    failed_description_topology_epoch: int = -1
    last_assignment_configs: dict[str, str] = field(default_factory=dict)
    #: ``StreamsGroupTopologyValue`` as decoded (epoch, subtopologies), or None
    topology: dict[str, Any] | None = None
    #: a streams member's target tasks (``StreamsGroup.targetAssignment``)
    target_tasks: dict[str, TasksTuple] = field(default_factory=dict)
    touched: Touch = field(default_factory=Touch)
    #: why the replay could not follow this group (a record Kafka's loader would refuse)
    incomplete: str | None = None

    @property
    def state(self) -> str:
        """``ConsumerGroup.maybeUpdateGroupState`` (its inputs change only where Kafka calls it, so
        computing it on demand gives the same answer): Empty, Assigning, Reconciling, Stable."""
        if not self.members:
            return "Empty"
        if self.type is GroupType.SHARE:
            return "Stable"  # ShareGroup.maybeUpdateGroupState: EMPTY or STABLE
        if self.type is GroupType.STREAMS and (
                self.topology is None or int(self.topology.get("epoch", -1)) != self.validated_topology_epoch):
            return "NotReady"  # StreamsGroup.maybeUpdateGroupState: no topology validated at its epoch
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if not m.is_reconciled_to(self.assignment_epoch):
                return "Reconciling"
        return "Stable"

    def get_or_create_member(self, member_id: str) -> ConsumerGroupMember | StreamsGroupMember:
        m = self.members.get(member_id)
        if m is not None:
            return m
        return StreamsGroupMember(member_id) if self.type is GroupType.STREAMS else ConsumerGroupMember(member_id)

    def update_member(self, m: ConsumerGroupMember) -> None:
        """``ConsumerGroup.updateMember`` (and ``updateStaticMember``)."""
        self.members[m.member_id] = m
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id

    def remove_member(self, member_id: str) -> None:
        """``ConsumerGroup.removeMember`` (and ``removeStaticMember``)."""
        old = self.members.pop(member_id, None)
        if old is not None and old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)

    def target(self, member_id: str) -> TopicIdAssignment:
        """``ModernGroup.targetAssignment(memberId)``: empty when absent."""
        return self.target_assignment.get(member_id, {})


Group = ClassicGroup | ModernGroup
