"""What each column of the audit's tables means, for ``docs/reference/tables.md``.

The tables, their columns, their order and their types are :mod:`kgtool.offsets.tables`' (the one
source); this module only words them. :func:`meaning` raises when a column has no wording and
the generator refuses a wording for a column that no longer exists, so the page cannot drift
from the code (``tests/test_docs.py``).
"""

from __future__ import annotations

from kgtool.offsets.rebalances import DEPARTED_CAP

#: What a table is, one paragraph each, in :data:`kgtool.offsets.tables.TABLE_NAMES` order.
TABLE_INTROS: dict[str, str] = {
    "generations": "One row per generation record of a group: a classic `GroupMetadata` record, or a KIP-848 "
                   "`ConsumerGroupMetadata` record (its group epoch); a group tombstone is a row with state Dead.",
    "members": "One row per member per generation, as the generation record lists it (\"what did each "
               "generation record say\"; a member id the record lists twice is there twice).",
    "commits": "Every offset commit record, in log order (log partition, record offset), with its attribution: "
               "the generation in effect when it was written and the members owning the partition then.",
    "findings": "One row per finding; what each column holds for each rule is in [rules.md](rules.md).",
    "coverage": "One row per `__consumer_offsets` partition read: what the log holds and what it no longer "
                "shows. What the schemas do not know is counted here, never an error.",
    "offsets": "The committed offsets the group coordinator would serve at the end of the log read (with "
               "`--until`, at TIME): the offset store of `OffsetMetadataManager` after the replay, one row per "
               "group, topic and partition. An offset tombstone deletes; a transactional commit counts once its "
               "COMMIT marker has been read, and only if its record offset is greater than the stored offset's "
               "(`replayEndTransactionMarker`); an aborted commit never counts, and a pending one is not served "
               "(the `pending-txn` rule reports it). A group with no generation records (a simple consumer that "
               "only commits) has its rows like any other. Sorted by log partition, group, topic and partition.",
    "rebalances": "One row per change of a group's generation: a `GroupMetadata` record with a new generation id "
                  "(classic groups), or a `ConsumerGroupMetadata` record with a new group epoch (KIP-848). A "
                  "metadata record that keeps the generation (a static member, KIP-345, rejoining while the group "
                  "is Stable: `ClassicGroup.replaceStaticMember`) is a row with `rebalance` false, not left out.",
    "groups": "The groups of each `__consumer_offsets` partition at the end of the read (with `--until`, at "
              "TIME), exactly as Kafka's group coordinator holds them after loading that prefix of its log "
              "(`kafka-consumer-groups.sh --describe --state`). A deleted group has no row; a group known only "
              "by its committed offsets is a \"simple\" classic group (Empty, no protocol type).",
    "group_members": "A row per member of the `groups` rows (`kafka-consumer-groups.sh --describe --members "
                     "--verbose`): \"what does the coordinator hold now\" (Kafka's map: the last of a repeated "
                     "member id).",
    "lag": "With data partition directories among the inputs: one row per (group, topic, partition) at each "
           "commit of it and at every `--lag-step` (default `1m`) from its first commit to the end of the audited "
           "span (the inputs' last record, or `--until`), while the group holds a committed offset. A row at T holds the state of instant T: the offset committed at or before T (a "
           "transactional commit counts from its COMMIT marker), the log end of records stamped before T.",
    "share_partitions": "With local `__share_group_state-N` directories among the inputs: one row per share "
                        "partition live at the end of the replay (or at `--until`), replayed as "
                        "`ShareCoordinatorShard` loads them (`kgtool/offsets/share_state.py`); also on the console "
                        "and under `share_partitions` in `--format json`.",
    "lag_episodes": "Each stretch of consecutive `lag` rows of a partition with the same status other than OK "
                    "(the state at the end closes it: a consumer that stopped for good is STOP there). The lag "
                    "rules fire on them.",
}

#: Columns that mean the same wherever they appear (a table's own entry wins).
COMMON: dict[str, str] = {
    "group": "the group id",
    "log_partition": "the `__consumer_offsets` partition the record was read from (the group's coordinator "
                     "partition)",
    "record_offset": "the record's offset in the `__consumer_offsets` log",
    "position": "the byte position of the record's batch in `source`",
    "source": "the segment file the record was read from",
    "timestamp": "the record's timestamp (epoch ms)",
    "topic": "the committed topic",
    "partition": "the committed partition",
    "protocol": "`classic` (GroupMetadata records) or `consumer` (KIP-848 records)",
    "generation_id": "the classic generation id, or the KIP-848 group epoch",
    "protocol_type": "the classic protocol type (`consumer`, `connect`, ...); null for a simple group",
    "protocol_name": "the assignor the generation chose (classic), the server assignor (KIP-848)",
    "leader": "the classic group's leader member id",
    "member_count": "members",
    "member_id": "the member id",
    "client_id": "the member's `client.id`",
    "client_host": "the member's host as the coordinator saw it",
    "rack_id": "the member's `client.rack`",
    "session_timeout_ms": "`session.timeout.ms`",
    "rebalance_timeout_ms": "the rebalance timeout (`max.poll.interval.ms`); Kafka's reading: a v0 record's "
                            "members, which have none, take their session timeout",
    "member_epoch": "KIP-848: the member epoch (CURRENT-EPOCH)",
    "offset": "the committed offset",
    "leader_epoch": "its leader epoch, -1 when none (OffsetCommitValue v0-v2, admin tools)",
    "metadata": "the commit's metadata string",
    "commit_timestamp": "the commit timestamp from the value",
    "expire_timestamp": "null unless an OffsetCommitValue v1 carried one",
    "topic_id": "the topic's id: a v4 commit's TopicId (Kafka 4.1+), else named from `partition.metadata` files "
                "or a 4.0 partition metadata record; null when unknown",
    "log_end_offset": "end(T): what ListOffsets by timestamp T answers (the first offset whose record is stamped "
                      "at or after T), the log end offset when none is",
    "lag": "`log_end_offset` - the committed offset",
    "lag_ms": "T - the timestamp of the next record the group reads; 0 when caught up",
    "lag_status": "Burrow's partition status: OK, WARN, STOP, STALL, REWIND",
    "consumer_id": "the owner at T, as `kafka-consumer-groups.sh --describe` shows it",
    "host": "the owner's host",
    "exact": "false when the instant is inside the partition's cleaned range of a compacted log: the row is what "
             "the log still holds, not the state then; true elsewhere",
    "type": "`classic`, `consumer` (KIP-848), `share` (KIP-932), `streams` (KIP-1071)",
    "message": "one sentence",
    "owners": "the members owning the partition",
}

#: Per table: the columns a table words its own way, and those only it has.
TABLE_COLUMNS: dict[str, dict[str, str]] = {
    "generations": {
        "generation_id": "the classic generation, or the KIP-848 group epoch; null for a tombstone",
        "state": "Empty, Stable, or Dead (a group tombstone)",
        "current_state_timestamp": "when the group reached its state (the base of the `expiring` rule)",
        "record_offset": "the generation record's offset",
        "timestamp": "the generation record's timestamp",
        "end_record_offset": "the record offset of the group's next generation record; null if last",
        "commit_count": "offset commit records written while this generation was in effect",
    },
    "members": {
        "group_instance_id": "`group.instance.id` of a static member",
        "rack_id": "the `ConsumerProtocol` v3 subscription's rack (`group_members` shows null for a classic "
                   "member, as Kafka's describe does)",
        "is_leader": "the member is the generation's leader",
        "subscribed_topics": "the subscription's topics",
        "owned_partitions": "the `ownedPartitions` of a ConsumerProtocol v1+ subscription (classic)",
        "assigned_partitions": "the assignment, `topic-partition` sorted; null when the assignment bytes are empty",
        "record_offset": "the generation record's offset",
        "timestamp": "the generation record's timestamp",
    },
    "commits": {
        "tombstone": "an offset tombstone (a deletion)",
        "value_version": "the OffsetCommitValue version",
        "transactional": "written in a transaction (`TxnOffsetCommit`)",
        "producer_id": "the transactional producer's id",
        "producer_epoch": "its epoch",
        "txn_result": "COMMIT, ABORT or PENDING for transactional commits",
        "txn_marker_offset": "the offset of the transaction's marker",
        "effective": "it became the group's committed offset for the partition",
        "effective_at_offset": "the record offset where it took effect (for a transactional commit, its marker)",
        "generation_id": "the generation in effect when the record was written",
        "group_state": "the group's state then",
        "owners": "the members owning the partition in that generation; null if unknown",
        "note": "why a lower commit raised no finding (e.g. `reset while Empty`)",
        "topic_id": "OffsetCommitValue v4's TopicId (4.1+, a commit by topic id); null if none",
    },
    "findings": {
        "rule": "the rule's name ([rules.md](rules.md))",
        "topic": "the commit's topic; null for a finding about a group",
        "partition": "the commit's partition; null for a finding about a group",
        "offset": "the committed offset; null for a finding about a group",
        "record_offset": "where the finding's record is (per rule: [rules.md](rules.md))",
        "timestamp": "the finding's time",
        "generation_id": "the generation in effect (per rule)",
        "previous_offset": "the earlier commit the finding compares with: its offset",
        "previous_record_offset": "its record offset",
        "previous_position": "its batch's byte position",
        "previous_generation_id": "its generation",
        "message": "the finding's sentence",
    },
    "coverage": {
        "segments": "segment files read",
        "bytes": "bytes read",
        "batches": "record batches",
        "records": "records present",
        "first_offset": "the first offset read",
        "last_offset": "the last offset read (with `--until`: where the partition stopped)",
        "offsets_absent": "offsets from the first segment's base offset to the last with no record (what the "
                          "cleaner removed)",
        "compacted_below_offset": "the first offset known to be uncleaned (null: nothing shows compaction)",
        "compacted_below_time": "the timestamp of the first record at or above it",
        "compaction_source": "where it was learnt: `checkpoint` (the broker log directory's "
                             "`cleaner-offset-checkpoint`) or `log` (the log's own signs)",
        "first_timestamp": "the first record's timestamp",
        "last_timestamp": "the last record's timestamp (with `--until`: where the partition stopped)",
        "offset_commits": "offset commit records",
        "offset_tombstones": "offset tombstones",
        "group_metadata": "GroupMetadata records",
        "group_tombstones": "GroupMetadata tombstones",
        "consumer_group_records": "KIP-848 records",
        "other_records": "other coordinator record types (share groups, streams, ...)",
        "unknown_record_types": "record types Kafka does not define: skipped, as `CoordinatorLoaderImpl` skips "
                                "them (never an error)",
        "unknown_tagged_fields": "tagged fields a record's schema does not know: kept raw, as Kafka's generated "
                                 "readers keep them; the record is replayed",
        "control_records": "transaction markers",
        "groups": "groups seen",
        "problems": "decode problems: undecodable stretches (corruption, truncated tail), group records that do "
                    "not decode",
        "lag_inputs": "with data partitions among the inputs: the lag inputs the partition's task handed to Spark "
                      "(one per data partition its groups committed on); null without",
        "lag_inputs_read": "those of them the lag tasks read; fewer than `lag_inputs` is a problem naming the data "
                           "partition (exit 1), never a silently short `lag` table",
    },
    "offsets": {
        "log_partition": "the `__consumer_offsets` partition",
        "record_offset": "the commit record that set it (for a transactional commit its own record, not its "
                         "marker)",
        "expired": "the `expiring` rule for this offset at TIME: the group is Empty or has no metadata, the offset "
                   "is past `--retention` (or its expire timestamp) and has no open transaction, so the "
                   "coordinator deletes it at its next expiration check",
        "log_end_offset": "the lag at TIME when the partition's data directory was among the inputs (null "
                          "otherwise): end(T), what ListOffsets by timestamp T answers, the log end offset when "
                          "none is",
        "client_id": "the owner's `client.id`",
        "exact": "false: `--until`'s instant is inside the partition's cleaned range, where records the state had "
                 "then are gone: the row is what the log still holds, not that state",
    },
    "rebalances": {
        "protocol": "`classic` or `consumer` (KIP-848)",
        "from_generation": "the generation before; null for the group's first record (or the first after a group "
                           "tombstone)",
        "to_generation": "the generation after",
        "rebalance": "false: the same generation rewritten (no rebalance)",
        "record_offset": "where the generation record is",
        "timestamp": "the generation record's time",
        "seconds_since_previous": "since the group's previous rebalance (null for the first)",
        "members_before": "member count before",
        "members_after": "member count after",
        "joined": "member ids new in this generation (not rejoins, not static replacements)",
        "left": "member ids gone (not back under a new id in this change)",
        "rejoined": "new member ids of clients back with a new member id: the same client id and host, i.e. a "
                    "restart or an expulsion (a consumer exceeding `max.poll.interval.ms` leaves and rejoins with "
                    "a new id); the departure may be in an earlier rebalance (a group remembers its last "
                    f"{DEPARTED_CAP} departed clients)",
        "static_replaced": "`group.instance.id` of static members whose member id was replaced",
        "protocol_name": "the assignor",
        "rebalance_protocol": "`eager` (`range`, `roundrobin`, `sticky`) or `cooperative` (`cooperative-sticky`, "
                              "Streams' `stream`, every KIP-848 group); null when unknown (custom assignors, other "
                              "protocol types)",
        "partitions_moved": "partitions given to other owners than they last had (a move as the `zombie` rule "
                            "sees it: first assignments and partitions left unowned are not moves); null when "
                            "assignments are unknown",
        "partitions_revoked": "eager: every partition owned in the previous generation (`onJoinPrepare` revokes "
                              "all); cooperative: the partitions leaving their owner (KIP-429); 0 without a "
                              "rebalance",
        "session_timeout_ms": "the smallest recorded among the members (after the change, else before): "
                              "`session.timeout.ms`",
        "rebalance_timeout_ms": "the smallest recorded rebalance timeout: `max.poll.interval.ms`",
        "completed_at": "KIP-848: when the group became Stable at this epoch (every member at the target "
                        "assignment's epoch, nothing pending: `ConsumerGroup`'s state); null if it never did (a "
                        "later bump came first, the group emptied, the log ends). Classic rows: the generation "
                        "record's time (the rebalance's start is not in the log)",
        "completion_seconds": "`completed_at` - `timestamp`",
        "members_reached": "KIP-848: `member_id:ms`, when each member reached the epoch, in ms after the bump",
        "revocation_waits": "KIP-848: `topic-partition:member_id:ms`, each partition a member kept pending "
                            "revocation and for how long, longest first",
        "consumption_gap_ms": "KIP-848: the longest time a partition had no owner in this rebalance, from the "
                              "record in which its member gave it up (or was removed) to the one that assigned it "
                              "to the next member; one still waiting at the log's end counts up to then",
        "consumption_gap_partition": "that partition",
        "target_epoch": "KIP-848: the target assignment that served this epoch. A later epoch's when none was "
                        "computed at this one: after a departure the coordinator waits for a heartbeat, and Kafka "
                        "4.3+ computes at most one per `group.consumer.assignment.interval.ms` (default 1 s), so a "
                        "burst of joins shares one. Such a batched epoch has no `completed_at`, is not an "
                        "unfinished rebalance, and `rebalance-storm` counts it with the epoch that served it. Null: "
                        "no target came before the group emptied or the log ended",
        "assigned_at": "when that target assignment was computed",
        "cause": "a code: `first-generation`, `member-joined`, `member-left`, `member-rejoined` (a restart, or an "
                 "expulsion after `max.poll.interval.ms` or `session.timeout.ms`), `static-member-replaced`, "
                 "`group-emptied`, `cooperative-follow-up` (KIP-429's second rebalance), `leader-change` or "
                 "`assignment-only` (same members: a subscription or topic metadata change); for consumer groups "
                 "(KIP-848) `member-fenced` (by its rebalance timeout: see `slow-revocation`), `member-left` (a "
                 "leave heartbeat, or the session timeout: the same records), `subscription-changed`, "
                 "`metadata-changed`, `kip848-epoch-bump` (same members, nothing else seen); `same-generation`",
        "message": "the change in a sentence; gaps in generation ids (compacted records) are noted",
    },
    "groups": {
        "log_partition": "the group's `__consumer_offsets` partition",
        "state": "Kafka's name, as `kafka-consumer-groups.sh --describe --state` prints it: a loaded classic group "
                 "is Stable or Empty (PreparingRebalance and CompletingRebalance are never written to the log); a "
                 "consumer group's state is derived as `ConsumerGroup.maybeUpdateGroupState` derives it: Empty "
                 "without members, Assigning while the group epoch is ahead of the target assignment's, "
                 "Reconciling while a member is not STABLE at the assignment epoch, else Stable",
        "group_epoch": "modern groups: the group epoch",
        "assignment_epoch": "modern groups: the target assignment's epoch (-1 once deleted)",
        "generation": "classic groups: the generation",
        "protocol_type": "classic groups; null for a simple group",
        "protocol_name": "classic groups: the assignor the generation chose",
        "leader": "classic groups",
        "assignor": "classic: the protocol the generation chose; consumer: the server assignor most members ask "
                    "for (`ConsumerGroup.preferredServerAssignor`; null: none asked, so the broker's first "
                    "`group.consumer.assignors`, `uniform` by default)",
        "record_offset": "the group record that last changed it (null for a simple group)",
        "timestamp": "that record's timestamp",
        "incomplete": "why the replay could not follow the group (a record Kafka's loader refuses, e.g. a member's "
                      "tombstone before its assignment's, or one of its records that does not decode: where and "
                      "what); null normally",
        "assignment_timestamp": "modern: when the target assignment was computed (4.3+; 0 before)",
        "topology_epoch": "streams: the epoch of the group's topology record (null: none)",
        "validated_topology_epoch": "streams: the topology epoch the coordinator validated (-1: none)",
        "share_initializing": "share: `ShareGroupStatePartitionMetadata`'s initializing topics, `topic-partition`",
        "share_initialized": "share: the initialized ones",
        "share_deleting": "share: the topics (or topic ids) being deleted",
        "exact": "false: `--until` inside the partition's cleaned range (as in `offsets`)",
    },
    "group_members": {
        "type": "the group's type",
        "instance_id": "`group.instance.id`",
        "rack_id": "the member's rack (null for a classic member, as Kafka's describe shows it)",
        "previous_member_epoch": "modern: the member's previous epoch",
        "member_state": "`MemberState`: STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, UNKNOWN",
        "assigned": "CURRENT-ASSIGNMENT, sorted `topic-partition` (`[]` for a classic member whose assignment bytes "
                    "are empty, Kafka's reading)",
        "pending_revocation": "still owned, to be revoked",
        "target": "TARGET-ASSIGNMENT (modern)",
        "target_epoch": "TARGET-EPOCH: the group's assignment epoch (modern)",
        "subscribed_topic_names": "the subscribed topics",
        "subscribed_topic_regex": "the subscribed regular expression",
        "session_timeout_ms": "classic members, and classic-protocol members of a consumer group",
        "server_assignor": "the server assignor the member asks for",
        "uses_classic_protocol": "a consumer-group member speaking the classic protocol (UPGRADED false)",
        "record_offset": "the record that last changed the member",
        "timestamp": "that record's timestamp",
        "state_since": "when the member reached its state and epoch (modern)",
        "active_tasks": "streams (KIP-1071): active tasks as `subtopology:partition,partition`, one item a "
                        "subtopology",
        "standby_tasks": "streams: standby tasks",
        "warmup_tasks": "streams: warm-up tasks",
        "active_tasks_pending_revocation": "streams: active tasks pending revocation",
        "target_active_tasks": "streams: the target's active tasks",
        "target_standby_tasks": "streams: the target's standby tasks",
        "target_warmup_tasks": "streams: the target's warm-up tasks",
        "topology_epoch": "streams: the member's topology epoch",
        "process_id": "streams: the member's process id",
        "user_endpoint": "streams: `host:port`",
        "client_tags": "streams: `key=value`",
        "exact": "false: `--until` inside the partition's cleaned range (as in `offsets`)",
    },
    "lag": {
        "topic": "the data topic",
        "partition": "the data partition",
        "timestamp": "the instant T of the row",
        "committed_offset": "the offset committed at or before T",
        "exact": "false before its `__consumer_offsets` partition's earliest exact instant (a compacted log's "
                 "cleaned range): the commits behind the row may not all be there",
    },
    "lag_episodes": {
        "topic": "the data topic",
        "partition": "the data partition",
        "status": "Burrow's status held through the episode (not OK)",
        "start": "the episode's first row",
        "end": "the first row after it with another status; null: still open at the end",
        "peak_lag": "the largest lag in records",
        "peak_lag_ms": "the largest lag in time",
        "owners": "the consumer ids during it",
        "evidence": "Burrow's window held two commits at least during it; without, STALL, WARN and STOP are "
                    "vacuous (one commit) and no lag rule fires",
    },
    "share_partitions": {
        "log_partition": "the `__share_group_state` partition",
        "group_id": "the share group id",
        "topic_id": "the topic's id (Kafka's `Uuid.toString`, base64url)",
        "partition": "the share partition's partition",
        "snapshot_epoch": "the epoch of the last `ShareSnapshot`",
        "state_epoch": "`ShareGroupOffset.stateEpoch` (0 when only updates were seen)",
        "leader_epoch": "`ShareGroupOffset.leaderEpoch` (what `ReadShareGroupStateSummary` reports)",
        "max_state_epoch": "the largest state epoch seen (`stateEpochMap`; null when no snapshot since the last "
                           "tombstone)",
        "max_leader_epoch": "the largest leader epoch seen (`leaderEpochMap`)",
        "start_offset": "the share partition's start offset",
        "delivery_complete_count": "records delivered completely (4.2+); -1: unknown",
        "state_batches": "the in-flight batches as `first-last:state:count`, in the state's order",
        "create_timestamp": "when the state was created",
        "write_timestamp": "when it was last written",
        "updates_since_snapshot": "`ShareUpdate` records since the last snapshot (`snapshotUpdateCount`)",
        "record_offset": "the last record that changed the state",
        "timestamp": "its timestamp",
    },
}


def meaning(table: str, column: str) -> str:
    """The wording of ``column`` of ``table``; raises ``KeyError`` when it has none."""
    own = TABLE_COLUMNS.get(table, {})
    if column in own:
        return own[column]
    if column in COMMON:
        return COMMON[column]
    raise KeyError(f"{table}.{column}: no meaning in kgtool/docs/columns.py")
