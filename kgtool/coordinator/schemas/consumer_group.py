"""Records of the new consumer group protocol (KIP-848) in ``__consumer_offsets``.

Transcribed from Apache Kafka 4.x ``group-coordinator/src/main/resources/common/message/``
``ConsumerGroup*Key.json`` / ``ConsumerGroup*Value.json`` (record types 3-8 and 16). Every value
has one version, 0, flexible (compact strings and arrays, tagged fields).

.. code-block:: text

    3  ConsumerGroupMetadata                 key group_id; value epoch, metadata_hash (tag 0,
                                             KIP-1101), creation_time_ms (tag 1, KIP-1282)
    4  ConsumerGroupPartitionMetadata        key group_id; value topics[topic_id topic_name
                                             num_partitions partition_metadata[partition racks]]
                                             (deprecated since 4.1; still read)
    5  ConsumerGroupMemberMetadata           key group_id member_id; value instance_id? rack_id?
                                             client_id client_host subscribed_topic_names
                                             subscribed_topic_regex? rebalance_timeout_ms
                                             server_assignor? classic_member_metadata? (tag 0)
    6  ConsumerGroupTargetAssignmentMetadata key group_id; value assignment_epoch,
                                             assignment_timestamp (tag 0, KIP-1263)
    7  ConsumerGroupTargetAssignmentMember   key group_id member_id; value topic_partitions[topic_id partitions]
    8  ConsumerGroupCurrentMemberAssignment  key group_id member_id; value member_epoch
                                             previous_member_epoch state assigned_partitions[...]
                                             partitions_pending_revocation[...]; each
                                             [topic_id partitions assignment_epochs? (tag 0, KIP-1251)]
    16 ConsumerGroupRegularExpression        key group_id regular_expression; value topics version timestamp
"""

from __future__ import annotations

from kgtool.coordinator.schema import F
from kgtool.coordinator.schemas._keys import group_key, value

CONSUMER_GROUP_METADATA_KEY = group_key("ConsumerGroupMetadataKey", 3)
CONSUMER_GROUP_METADATA_VALUE = value(
    "ConsumerGroupMetadataValue",
    3,
    [
        F("epoch", "int32"),
        F("metadata_hash", "int64", tag=0, tagged="0+", default=0),
        F("creation_time_ms", "int64", tag=1, tagged="0+", default=-1),
    ],
)

CONSUMER_GROUP_PARTITION_METADATA_KEY = group_key("ConsumerGroupPartitionMetadataKey", 4)
CONSUMER_GROUP_PARTITION_METADATA_VALUE = value(
    "ConsumerGroupPartitionMetadataValue",
    4,
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
    notes="deprecated since Kafka 4.1 (replaced by ConsumerGroupMetadataValue.metadata_hash)",
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = group_key("ConsumerGroupMemberMetadataKey", 5, "member_id")
CONSUMER_GROUP_MEMBER_METADATA_VALUE = value(
    "ConsumerGroupMemberMetadataValue",
    5,
    [
        F("instance_id", "string", nullable="0+"),
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("subscribed_topic_names", "[]string"),
        F("subscribed_topic_regex", "string", nullable="0+"),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("server_assignor", "string", nullable="0+"),
        F(
            "classic_member_metadata",
            "ClassicMemberMetadata",
            nullable="0+",
            # The spec's "default": null is JSON null, which Kafka's FieldSpec reads as no default:
            # an absent tag decodes as the empty struct (new ClassicMemberMetadata()), and a null
            # value is written explicitly (tag 0, marker 0). Kafka's own writer always writes it.
            tag=0,
            tagged="0+",
            fields=[
                F("session_timeout_ms", "int32"),
                F(
                    "supported_protocols",
                    "[]ClassicProtocol",
                    fields=[F("name", "string"), F("metadata", "bytes")],
                ),
            ],
        ),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = group_key("ConsumerGroupTargetAssignmentMetadataKey", 6)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = value(
    "ConsumerGroupTargetAssignmentMetadataValue",
    6,
    [
        F("assignment_epoch", "int32"),
        F("assignment_timestamp", "int64", tag=0, tagged="0+", default=0, ignorable=True),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = group_key(
    "ConsumerGroupTargetAssignmentMemberKey", 7, "member_id"
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = value(
    "ConsumerGroupTargetAssignmentMemberValue",
    7,
    [F("topic_partitions", "[]TopicPartition", fields=[F("topic_id", "uuid"), F("partitions", "[]int32")])],
)

_TOPIC_PARTITIONS = [
    F("topic_id", "uuid"),
    F("partitions", "[]int32"),
    F("assignment_epochs", "[]int32", nullable="0+", tag=0, tagged="0+", default=None),
]

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = group_key(
    "ConsumerGroupCurrentMemberAssignmentKey", 8, "member_id"
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = value(
    "ConsumerGroupCurrentMemberAssignmentValue",
    8,
    [
        F("member_epoch", "int32"),
        F("previous_member_epoch", "int32"),
        F("state", "int8"),
        F("assigned_partitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
        F("partitions_pending_revocation", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
    ],
)

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = group_key(
    "ConsumerGroupRegularExpressionKey", 16, "regular_expression"
)
CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = value(
    "ConsumerGroupRegularExpressionValue",
    16,
    [F("topics", "[]string"), F("version", "int64"), F("timestamp", "int64")],
)
