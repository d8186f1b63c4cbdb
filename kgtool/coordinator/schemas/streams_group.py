"""Records of Kafka Streams groups (KIP-1071) in ``__consumer_offsets``, record types 17-24.

Transcribed from Apache Kafka 4.x ``group-coordinator/src/main/resources/common/message/``
``StreamsGroup*Key.json`` / ``StreamsGroup*Value.json``; one version, 0, flexible.

.. code-block:: text

    17 StreamsGroupMetadata                    key group_id; value epoch metadata_hash
                                               validated_topology_epoch (tag 0) assignment_configs[key value]
    18 StreamsGroupPartitionMetadata           key group_id; value topics[topic_id topic_name
                                               num_partitions partition_metadata[partition racks]]
    19 StreamsGroupMemberMetadata              key group_id member_id; value instance_id? rack_id?
                                               client_id client_host rebalance_timeout_ms
                                               topology_epoch process_id user_endpoint? client_tags[key value]
    20 StreamsGroupTargetAssignmentMetadata    key group_id; value assignment_epoch
    21 StreamsGroupTargetAssignmentMember      key group_id member_id; value active/standby/warmup_tasks[subtopology_id partitions]
    22 StreamsGroupCurrentMemberAssignment     key group_id member_id; value member_epoch
                                               previous_member_epoch state active/standby/warmup_tasks
                                               and the three *_pending_revocation task lists
    23 StreamsGroupTopology                    key group_id; value epoch subtopologies[...]
    24 StreamsGroupTargetAssignmentResolvedTopicIds  key group_id; value assignment_epoch
                                               resolved_topic_ids_by_subtopology[subtopology_id topic_ids[]uuid]
"""

from __future__ import annotations

from kgtool.coordinator.schema import F
from kgtool.coordinator.schemas._keys import group_key, value

_KEY_VALUE = [F("key", "string"), F("value", "string")]
_TASK_IDS = [F("subtopology_id", "string"), F("partitions", "[]int32")]

STREAMS_GROUP_METADATA_KEY = group_key("StreamsGroupMetadataKey", 17)
STREAMS_GROUP_METADATA_VALUE = value(
    "StreamsGroupMetadataValue",
    17,
    [
        F("epoch", "int32"),
        F("metadata_hash", "int64"),
        F("validated_topology_epoch", "int32", tag=0, tagged="0+", default=-1),
        F("assignment_configs", "[]AssignmentConfig", fields=_KEY_VALUE),
    ],
)

STREAMS_GROUP_PARTITION_METADATA_KEY = group_key("StreamsGroupPartitionMetadataKey", 18)
STREAMS_GROUP_PARTITION_METADATA_VALUE = value(
    "StreamsGroupPartitionMetadataValue",
    18,
    [
        F(
            "topics",
            "[]TopicMetadata",
            fields=[
                F("topic_id", "uuid"),
                F("topic_name", "string"),
                F("num_partitions", "int32"),
                F(
                    "partition_metadata",
                    "[]PartitionMetadata",
                    fields=[F("partition", "int32"), F("racks", "[]string")],
                ),
            ],
        ),
    ],
)

STREAMS_GROUP_MEMBER_METADATA_KEY = group_key("StreamsGroupMemberMetadataKey", 19, "member_id")
STREAMS_GROUP_MEMBER_METADATA_VALUE = value(
    "StreamsGroupMemberMetadataValue",
    19,
    [
        F("instance_id", "string", nullable="0+"),
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("topology_epoch", "int32"),
        F("process_id", "string"),
        F(
            "user_endpoint",
            "Endpoint",
            nullable="0+",
            default=None,
            fields=[F("host", "string"), F("port", "uint16")],
        ),
        F("client_tags", "[]KeyValue", fields=_KEY_VALUE),
    ],
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = group_key("StreamsGroupTargetAssignmentMetadataKey", 20)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = value(
    "StreamsGroupTargetAssignmentMetadataValue", 20, [F("assignment_epoch", "int32")]
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = group_key(
    "StreamsGroupTargetAssignmentMemberKey", 21, "member_id"
)
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = value(
    "StreamsGroupTargetAssignmentMemberValue",
    21,
    [
        F("active_tasks", "[]TaskIds", fields=_TASK_IDS),
        F("standby_tasks", "[]TaskIds", fields=_TASK_IDS),
        F("warmup_tasks", "[]TaskIds", fields=_TASK_IDS),
    ],
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = group_key(
    "StreamsGroupCurrentMemberAssignmentKey", 22, "member_id"
)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = value(
    "StreamsGroupCurrentMemberAssignmentValue",
    22,
    [
        F("member_epoch", "int32"),
        F("previous_member_epoch", "int32"),
        F("state", "int8"),
        F("active_tasks", "[]TaskIds", fields=_TASK_IDS),
        F("standby_tasks", "[]TaskIds", fields=_TASK_IDS),
        F("warmup_tasks", "[]TaskIds", fields=_TASK_IDS),
        F("active_tasks_pending_revocation", "[]TaskIds", fields=_TASK_IDS),
        F("standby_tasks_pending_revocation", "[]TaskIds", fields=_TASK_IDS),
        F("warmup_tasks_pending_revocation", "[]TaskIds", fields=_TASK_IDS),
    ],
)

_TOPIC_INFO = [
    F("name", "string"),
    F("partitions", "int32"),
    F("replication_factor", "int16"),
    F("topic_configs", "[]TopicConfig", fields=_KEY_VALUE),
]

STREAMS_GROUP_TOPOLOGY_KEY = group_key("StreamsGroupTopologyKey", 23)
STREAMS_GROUP_TOPOLOGY_VALUE = value(
    "StreamsGroupTopologyValue",
    23,
    [
        F("epoch", "int32"),
        F(
            "subtopologies",
            "[]Subtopology",
            fields=[
                F("subtopology_id", "string"),
                F("source_topics", "[]string"),
                F("source_topic_regex", "[]string"),
                F("state_changelog_topics", "[]TopicInfo", fields=_TOPIC_INFO),
                F("repartition_sink_topics", "[]string"),
                F("repartition_source_topics", "[]TopicInfo", fields=_TOPIC_INFO),
                F(
                    "copartition_groups",
                    "[]CopartitionGroup",
                    fields=[
                        F("source_topics", "[]int16"),
                        F("source_topic_regex", "[]int16"),
                        F("repartition_source_topics", "[]int16"),
                    ],
                ),
            ],
        ),
    ],
)

STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS_KEY = group_key(
    "StreamsGroupTargetAssignmentResolvedTopicIdsKey", 24
)
STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS_VALUE = value(
    "StreamsGroupTargetAssignmentResolvedTopicIdsValue",
    24,
    [
        F("assignment_epoch", "int32"),
        F(
            "resolved_topic_ids_by_subtopology",
            "[]ResolvedTopicIds",
            fields=[F("subtopology_id", "string"), F("topic_ids", "[]uuid")],
        ),
    ],
)
