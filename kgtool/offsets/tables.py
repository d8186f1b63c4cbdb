"""The audit's output tables, as data: one list of ``(column, type)`` per table.

Types are a small vocabulary (``string``, ``int32``, ``int64``, ``float64``, ``bool``, ``list<string>``)
that :func:`arrow_schema` turns into Arrow schemas (and :mod:`kgtool.spark.schemas` into Spark
ones); the replay produces rows with exactly these columns, in this order: dicts, except the
members table's tuples (:data:`MEMBER`).

Naming: ``log_partition`` is the ``__consumer_offsets`` partition a record was read from;
``topic``/``partition`` are the committed topic partition; ``record_offset`` and ``position``
are where the record sits in the ``__consumer_offsets`` log (offset, and byte position of its
batch in ``source``); ``offset`` is the committed consumer offset.
"""

from __future__ import annotations

from typing import Any

from kgtool.offsets import catalog

TABLE_NAMES = ("generations", "members", "commits", "findings", "coverage", "offsets", "rebalances", "groups",
               "group_members", "lag", "lag_episodes")

GENERATIONS = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("protocol", "string"),  # "classic" (GroupMetadata) or "consumer" (KIP-848 records)
    ("generation_id", "int32"),  # classic generation, or KIP-848 group epoch; null for a tombstone
    ("protocol_type", "string"),
    ("protocol_name", "string"),  # the assignor (classic) / server assignor (KIP-848)
    ("leader", "string"),
    ("state", "string"),  # Empty / Stable / Dead (group tombstone)
    ("member_count", "int32"),
    ("current_state_timestamp", "int64"),
    ("record_offset", "int64"),
    ("position", "int64"),
    ("source", "string"),
    ("timestamp", "int64"),
    ("end_record_offset", "int64"),  # record offset of the next generation record, null if last
    ("commit_count", "int64"),  # offset commit records written while this generation was in effect
]

MEMBERS = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("protocol", "string"),
    ("generation_id", "int32"),
    ("member_id", "string"),
    ("group_instance_id", "string"),
    ("client_id", "string"),
    ("client_host", "string"),
    ("rack_id", "string"),
    ("session_timeout_ms", "int32"),
    ("rebalance_timeout_ms", "int32"),
    ("is_leader", "bool"),
    ("member_epoch", "int32"),  # KIP-848 only
    ("subscribed_topics", "list<string>"),
    ("owned_partitions", "list<string>"),  # ConsumerProtocol v1+ subscription (classic)
    ("assigned_partitions", "list<string>"),  # "topic-partition", sorted
    ("record_offset", "int64"),
    ("timestamp", "int64"),
]

COMMITS = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("record_offset", "int64"),
    ("position", "int64"),
    ("source", "string"),
    ("timestamp", "int64"),
    ("topic", "string"),
    ("partition", "int32"),
    ("tombstone", "bool"),
    ("offset", "int64"),
    ("leader_epoch", "int32"),
    ("metadata", "string"),
    ("commit_timestamp", "int64"),
    ("expire_timestamp", "int64"),
    ("value_version", "int32"),
    ("transactional", "bool"),
    ("producer_id", "int64"),
    ("producer_epoch", "int32"),
    ("txn_result", "string"),  # COMMIT / ABORT / PENDING for transactional commits
    ("txn_marker_offset", "int64"),
    ("effective", "bool"),  # became the group's committed offset for the partition
    ("effective_at_offset", "int64"),  # record offset where it took effect (the marker for txns)
    ("generation_id", "int32"),  # the generation in effect when the record was written
    ("protocol", "string"),
    ("group_state", "string"),
    ("owners", "list<string>"),  # members owning the partition in that generation; null if unknown
    ("note", "string"),  # why a lower commit raised no finding (e.g. "reset while Empty")
    ("topic_id", "string"),  # OffsetCommitValue v4's TopicId (4.1+, a commit by topic id); null none
]

FINDINGS = [
    ("rule", "string"),
    ("group", "string"),
    ("log_partition", "int32"),
    ("topic", "string"),
    ("partition", "int32"),
    ("offset", "int64"),
    ("record_offset", "int64"),
    ("position", "int64"),
    ("source", "string"),
    ("timestamp", "int64"),
    ("generation_id", "int32"),
    ("previous_offset", "int64"),
    ("previous_record_offset", "int64"),
    ("previous_position", "int64"),
    ("previous_generation_id", "int32"),
    ("message", "string"),
]

def group_finding(rule: str, group: str, log_partition: int, *, record_offset: int, position: int | None,
                  source: str, timestamp: int, generation_id: int | None, previous_generation_id: int | None,
                  message: str, previous_record_offset: int | None = None) -> dict[str, Any]:
    """A FINDINGS row about a group, not a commit (rebalance-storm, slow-revocation): no topic
    partition and no offsets; where in the log, and the generations (or epochs) it spans."""
    return {
        "rule": rule, "group": group, "log_partition": log_partition, "topic": None, "partition": None,
        "offset": None, "record_offset": record_offset, "position": position, "source": source,
        "timestamp": timestamp, "generation_id": generation_id, "previous_offset": None,
        "previous_record_offset": previous_record_offset, "previous_position": None,
        "previous_generation_id": previous_generation_id, "message": message,
    }


COVERAGE = [
    ("log_partition", "int32"),
    ("segments", "int32"),
    ("bytes", "int64"),
    ("batches", "int64"),
    ("records", "int64"),
    ("first_offset", "int64"),
    ("last_offset", "int64"),
    ("offsets_absent", "int64"),  # offsets from the first segment's base offset to last with no record
    # the log cleaner's range (kgtool.offsets.compaction): the first offset known to be uncleaned
    # (null: nothing shows compaction), the timestamp of the first record at or above it, and
    # where it was learnt ("checkpoint": cleaner-offset-checkpoint, "log": the log's own signs)
    ("compacted_below_offset", "int64"),
    ("compacted_below_time", "int64"),
    ("compaction_source", "string"),
    ("first_timestamp", "int64"),
    ("last_timestamp", "int64"),
    ("offset_commits", "int64"),
    ("offset_tombstones", "int64"),
    ("group_metadata", "int64"),
    ("group_tombstones", "int64"),
    ("consumer_group_records", "int64"),  # KIP-848 records
    ("other_records", "int64"),  # other coordinator record types (share groups, streams, ...)
    # record types Kafka does not define: skipped, as CoordinatorLoaderImpl skips them (never an error)
    ("unknown_record_types", "int64"),
    # tagged fields a record's schema does not know: kept raw, as Kafka's readers keep them
    ("unknown_tagged_fields", "int64"),
    ("control_records", "int64"),
    ("groups", "int64"),
    ("problems", "int64"),  # undecodable stretches (corruption, truncated tail)
    # with data partitions (lag): the lag inputs the partition's task wrote (one per data
    # partition its groups committed on) and those the lag tasks read; null without
    ("lag_inputs", "int64"),
    ("lag_inputs_read", "int64"),
]

# The committed offsets the coordinator would serve at the end of the log read (``--until``: at
# that instant): OffsetMetadataManager's ``offsets`` after the replay, one row per stored
# (group, topic, partition). Pending transactional offsets are not in it (not visible).
OFFSETS = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("topic", "string"),
    ("partition", "int32"),
    ("offset", "int64"),
    ("leader_epoch", "int32"),  # -1: none (OffsetCommitValue v0-v2, admin tools)
    ("metadata", "string"),
    ("commit_timestamp", "int64"),
    ("expire_timestamp", "int64"),  # null unless OffsetCommitValue v1 carried one
    ("record_offset", "int64"),  # the commit record that set it (for a transactional one: not its marker)
    ("expired", "bool"),  # past the retention at that instant: the expiring rule holds for it
    # lag at that instant (kgtool.lag.timeline), when the data partition's directory was given; else null
    ("log_end_offset", "int64"),  # end(T): ListOffsets by timestamp T, the log end offset when none
    ("lag", "int64"),  # log_end_offset - offset
    ("lag_ms", "int64"),  # T - the timestamp of the next record the group reads; 0 caught up
    ("lag_status", "string"),  # Burrow's partition status: OK, WARN, STOP, STALL, REWIND
    ("consumer_id", "string"),  # the owner at T, as kafka-consumer-groups.sh --describe shows it
    ("host", "string"),
    ("client_id", "string"),
    ("topic_id", "string"),  # the topic's id (a v4 commit's TopicId, partition.metadata, a 4.0 record); null unknown
    # false: --until's instant is inside the partition's cleaned range (kgtool.offsets.compaction),
    # where records the state had then are gone: the row is what the log still holds, not that state
    ("exact", "bool"),
]

#: The lag columns of OFFSETS (null when the partition's data directory was not given).
OFFSET_LAG_COLUMNS = ("log_end_offset", "lag", "lag_ms", "lag_status", "consumer_id", "host", "client_id")

# Lag through time (kgtool.lag.timeline): one row per (group, topic, partition) at each commit of it,
# every --lag-step between its first and last, and at the end (or --until); the state of that instant.
LAG = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("topic", "string"),
    ("partition", "int32"),
    ("timestamp", "int64"),
    ("committed_offset", "int64"),
    ("log_end_offset", "int64"),
    ("lag", "int64"),
    ("lag_ms", "int64"),
    ("lag_status", "string"),
    ("consumer_id", "string"),
    ("host", "string"),
    ("client_id", "string"),
    # false: before its __consumer_offsets partition's earliest exact instant (a compacted log's
    # cleaned range, kgtool.offsets.compaction): the commits behind the row may not all be there
    ("exact", "bool"),
]

# Each stretch where a partition was not OK (Burrow's status held from row to row).
LAG_EPISODES = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("topic", "string"),
    ("partition", "int32"),
    ("status", "string"),
    ("start", "int64"),
    ("end", "int64"),  # the first row after it with another status; null: still open at the end
    ("peak_lag", "int64"),
    ("peak_lag_ms", "int64"),
    ("owners", "list<string>"),  # consumer ids during it
    # Burrow's window held two commits at least during it: without, STALL/WARN/STOP are vacuous
    # (one commit) and no lag rule fires (kgtool.lag.timeline.window_evidence)
    ("evidence", "bool"),
]

# One row per change of a group's generation (kgtool.offsets.rebalances): a classic
# GroupMetadata record with a new generation id, a KIP-848 group epoch bump; a metadata record
# that keeps the generation (a static member replaced, KIP-345) is a row with rebalance false.
REBALANCES = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("protocol", "string"),  # "classic" / "consumer" (KIP-848)
    ("from_generation", "int32"),  # null: the group's first generation record (or after a tombstone)
    ("to_generation", "int32"),
    ("rebalance", "bool"),  # false: the same generation rewritten (no rebalance)
    ("record_offset", "int64"),
    ("position", "int64"),
    ("source", "string"),
    ("timestamp", "int64"),
    ("seconds_since_previous", "float64"),  # since the group's previous rebalance; null for the first
    ("members_before", "int32"),
    ("members_after", "int32"),
    ("joined", "list<string>"),  # member ids new in this generation (not rejoins)
    ("left", "list<string>"),  # member ids gone (not back under a new id in this change)
    ("rejoined", "list<string>"),  # new member ids of clients back (same client id and host, new member id)
    ("static_replaced", "list<string>"),  # group.instance.id of static members whose member id was replaced
    ("protocol_name", "string"),  # the assignor
    ("rebalance_protocol", "string"),  # eager / cooperative (from the assignor; KIP-848: cooperative); null unknown
    ("partitions_moved", "int32"),  # given to other owners than they last had; null when assignments are unknown
    ("partitions_revoked", "int32"),  # eager: every partition owned before; cooperative: those leaving their owner
    ("session_timeout_ms", "int32"),  # smallest recorded among the members (after the change, else before)
    ("rebalance_timeout_ms", "int32"),  # smallest recorded rebalance timeout (max.poll.interval.ms)
    # KIP-848 reconciliation (kgtool.offsets.reconciliation); classic rows: completed_at only
    ("completed_at", "int64"),  # Stable at this epoch (every member at it, nothing pending); classic: the record's time
    ("completion_seconds", "float64"),  # completed_at - timestamp
    ("members_reached", "list<string>"),  # "member_id:ms" after the bump, when each member reached the epoch
    ("revocation_waits", "list<string>"),  # "topic-partition:member_id:ms" pending revocation, longest first
    ("consumption_gap_ms", "int64"),  # longest time a partition had no owner (given up, not yet taken)
    ("consumption_gap_partition", "string"),  # that partition
    ("target_epoch", "int32"),  # KIP-848: the target assignment that served the epoch; above to_generation: batched (4.3+)
    ("assigned_at", "int64"),  # when that target assignment was computed
    ("cause", "string"),  # member-joined, member-left, member-rejoined, static-member-replaced, ...
    ("message", "string"),
]

# The groups the coordinator holds at the end of the read (``--until``: at that instant), as
# ``kafka-consumer-groups.sh --describe --state`` shows them (kgtool.offsets.shard: the state a
# GroupCoordinatorShard has after loading that prefix of the log). A deleted group has no row; a
# group known only by its committed offsets is a classic "simple" group (Empty, no protocol type).
GROUPS = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("type", "string"),  # classic / consumer / share / streams
    ("state", "string"),  # Kafka's names: Empty, Stable, Assigning, Reconciling (PreparingRebalance etc. are never loaded)
    ("group_epoch", "int32"),  # modern groups
    ("assignment_epoch", "int32"),  # modern groups: the target assignment's epoch (-1 once deleted)
    ("generation", "int32"),  # classic
    ("protocol_type", "string"),  # classic; null for a simple group
    ("protocol_name", "string"),  # classic: the assignor the generation chose
    ("leader", "string"),  # classic
    ("member_count", "int32"),
    ("assignor", "string"),  # classic: protocol_name; modern: the server assignor most members asked for
    ("record_offset", "int64"),  # the group record that last changed the group (null for a simple group)
    ("timestamp", "int64"),
    ("incomplete", "string"),  # why the replay could not follow the group (a record Kafka's loader refuses)
    ("assignment_timestamp", "int64"),  # modern: when the target assignment was computed (4.3+; 0 before)
    ("topology_epoch", "int32"),  # streams: the epoch of the group's topology record (null: none)
    ("validated_topology_epoch", "int32"),  # streams: the topology epoch the coordinator validated (-1: none)
    # share: ShareGroupStatePartitionMetadata, "topic-partition" (or topic ids being deleted)
    ("share_initializing", "list<string>"),
    ("share_initialized", "list<string>"),
    ("share_deleting", "list<string>"),
    ("exact", "bool"),  # false: --until inside the partition's cleaned range (as in OFFSETS)
]

# One row per member of GROUPS' groups: ``kafka-consumer-groups.sh --describe --members --verbose``.
GROUP_MEMBERS = [
    ("group", "string"),
    ("log_partition", "int32"),
    ("type", "string"),
    ("member_id", "string"),
    ("instance_id", "string"),
    ("client_id", "string"),
    ("client_host", "string"),
    ("rack_id", "string"),
    ("member_epoch", "int32"),  # modern: CURRENT-EPOCH
    ("previous_member_epoch", "int32"),
    ("member_state", "string"),  # MemberState: STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, UNKNOWN
    ("assigned", "list<string>"),  # CURRENT-ASSIGNMENT, sorted "topic-partition"
    ("pending_revocation", "list<string>"),  # still owned, to be revoked
    ("target", "list<string>"),  # TARGET-ASSIGNMENT (modern)
    ("target_epoch", "int32"),  # TARGET-EPOCH: the group's assignment epoch (modern)
    ("subscribed_topic_names", "list<string>"),
    ("subscribed_topic_regex", "string"),
    ("rebalance_timeout_ms", "int32"),
    ("session_timeout_ms", "int32"),  # classic members, and classic-protocol members of a consumer group
    ("server_assignor", "string"),
    ("uses_classic_protocol", "bool"),
    ("record_offset", "int64"),  # the record that last changed the member
    ("timestamp", "int64"),
    ("state_since", "int64"),  # when the member reached its state and epoch (modern)
    # streams members (KIP-1071): tasks as "subtopology:partition,partition", one item a subtopology
    ("active_tasks", "list<string>"),
    ("standby_tasks", "list<string>"),
    ("warmup_tasks", "list<string>"),
    ("active_tasks_pending_revocation", "list<string>"),
    ("target_active_tasks", "list<string>"),
    ("target_standby_tasks", "list<string>"),
    ("target_warmup_tasks", "list<string>"),
    ("topology_epoch", "int32"),
    ("process_id", "string"),
    ("user_endpoint", "string"),  # host:port
    ("client_tags", "list<string>"),  # key=value
    ("exact", "bool"),  # false: --until inside the partition's cleaned range (as in OFFSETS)
]

# The replay makes the members table's rows as tuples in MEMBERS' column order, the other tables'
# as dicts: a generation record makes a row per member, and a tuple costs a tenth of a dict to
# build and half as much to turn into columns. MEMBER names each column's index; member_dicts()
# gives the rows as dicts.
MEMBER: dict[str, int] = {name: i for i, (name, _t) in enumerate(MEMBERS)}


def member_dicts(rows: Any) -> list[dict[str, Any]]:
    """Members-table rows (tuples, see :data:`MEMBER`) as dicts."""
    return [dict(zip(MEMBER, r)) for r in rows]


TABLES: dict[str, list[tuple[str, str]]] = {
    "generations": GENERATIONS,
    "members": MEMBERS,
    "commits": COMMITS,
    "findings": FINDINGS,
    "coverage": COVERAGE,
    "offsets": OFFSETS,
    "rebalances": REBALANCES,
    "groups": GROUPS,
    "group_members": GROUP_MEMBERS,
    "lag": LAG,
    "lag_episodes": LAG_EPISODES,
}

#: The rules, declared once in :mod:`kgtool.offsets.catalog` (meaning, look-alike, finding fields).
#: The rules of the lag phase (they need data partition directories among the inputs).
LAG_RULES = catalog.LAG_NAMES
#: The rules of the offsets log alone.
LOG_RULES = catalog.LOG_NAMES
RULES = LOG_RULES + LAG_RULES
#: The rules that judge the log's history: on a compacted partition they do not judge evidence
#: below its cleaned range (kgtool.offsets.compaction); expiring and pending-txn judge the end.
HISTORY_RULES = catalog.HISTORY
#: The history rules whose finding compares with an earlier commit (previous_record_offset).
COMPARING_RULES = catalog.COMPARING


def arrow_type(t: str) -> Any:
    """The Arrow type of a vocabulary type."""
    import pyarrow as pa

    return {
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "binary": pa.binary(),
        "list<string>": pa.list_(pa.string()),
        "list<int64>": pa.list_(pa.int64()),
    }[t]


def arrow_schema(columns: list[tuple[str, str]]) -> Any:
    """The Arrow schema of a table's ``(column, type)`` list."""
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t)) for n, t in columns])


#: Columns never null, by table: required in the table's Parquet files, whose writer then
#: encodes no definition levels for them (the lag table, a row per commit: 40 -> 30 ms a million
#: rows). Spark reads every Parquet column as nullable all the same.
REQUIRED: dict[str, frozenset[str]] = {
    "lag": frozenset({"group", "log_partition", "topic", "partition", "timestamp", "committed_offset",
                      "log_end_offset", "lag", "lag_ms", "lag_status"}),
}


def table_schema(name: str) -> Any:
    """The Arrow schema of table ``name`` as its files hold it: :func:`arrow_schema`, the
    :data:`REQUIRED` columns not nullable."""
    import pyarrow as pa

    required = REQUIRED.get(name, frozenset())
    return pa.schema([pa.field(n, arrow_type(t), nullable=n not in required) for n, t in TABLES[name]])
