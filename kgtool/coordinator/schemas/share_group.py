"""Records of share groups (KIP-932) in ``__consumer_offsets``, record types 9-15.

Transcribed from Apache Kafka 4.x ``group-coordinator/src/main/resources/common/message/``
``ShareGroup*Key.json`` / ``ShareGroup*Value.json``; one version, 0, flexible.

.. code-block:: text

    9  ShareGroupPartitionMetadata          key group_id; value topics[topic_id topic_name
                                            num_partitions partition_metadata[partition racks]]
    10 ShareGroupMemberMetadata             key group_id member_id; value rack_id? client_id
                                            client_host subscribed_topic_names
    11 ShareGroupMetadata                   key group_id; value epoch metadata_hash
    12 ShareGroupTargetAssignmentMetadata   key group_id; value assignment_epoch, assignment_timestamp (tag 0)
    13 ShareGroupTargetAssignmentMember     key group_id member_id; value topic_partitions[topic_id partitions]
    14 ShareGroupCurrentMemberAssignment    key group_id member_id; value member_epoch
                                            previous_member_epoch state assigned_partitions[topic_id partitions]
    15 ShareGroupStatePartitionMetadata     key group_id; value initializing_topics[...]
                                            initialized_topics[topic_id topic_name partitions
                                            create_timestamp] deleting_topics[topic_id topic_name]
"""

from __future__ import annotations

from kgtool.coordinator.schema import F
from kgtool.coordinator.schemas._keys import group_key, value

SHARE_GROUP_PARTITION_METADATA_KEY = group_key("ShareGroupPartitionMetadataKey", 9)
SHARE_GROUP_PARTITION_METADATA_VALUE = value(
    "ShareGroupPartitionMetadataValue",
    9,
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

SHARE_GROUP_MEMBER_METADATA_KEY = group_key("ShareGroupMemberMetadataKey", 10, "member_id")
SHARE_GROUP_MEMBER_METADATA_VALUE = value(
    "ShareGroupMemberMetadataValue",
    10,
    [
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("subscribed_topic_names", "[]string"),
    ],
)

SHARE_GROUP_METADATA_KEY = group_key("ShareGroupMetadataKey", 11)
SHARE_GROUP_METADATA_VALUE = value(
    "ShareGroupMetadataValue", 11, [F("epoch", "int32"), F("metadata_hash", "int64")]
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = group_key("ShareGroupTargetAssignmentMetadataKey", 12)
# assignment_timestamp: tag 0, as in ConsumerGroupTargetAssignmentMetadataValue (KIP-1263, 4.3;
# GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentMetadataRecord takes the time).
# Tagged, so records written before it decode the same.
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = value(
    "ShareGroupTargetAssignmentMetadataValue",
    12,
    [
        F("assignment_epoch", "int32"),
        F("assignment_timestamp", "int64", tag=0, tagged="0+", default=0, ignorable=True),
    ],
)

_TOPIC_PARTITION = [F("topic_id", "uuid"), F("partitions", "[]int32")]

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = group_key("ShareGroupTargetAssignmentMemberKey", 13, "member_id")
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = value(
    "ShareGroupTargetAssignmentMemberValue",
    13,
    [F("topic_partitions", "[]TopicPartition", fields=_TOPIC_PARTITION)],
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = group_key("ShareGroupCurrentMemberAssignmentKey", 14, "member_id")
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = value(
    "ShareGroupCurrentMemberAssignmentValue",
    14,
    [
        F("member_epoch", "int32"),
        F("previous_member_epoch", "int32"),
        F("state", "int8"),
        F("assigned_partitions", "[]TopicPartitions", fields=_TOPIC_PARTITION),
    ],
)

_TOPIC_PARTITIONS_INFO = [
    F("topic_id", "uuid"),
    F("topic_name", "string"),
    F("partitions", "[]int32"),
    F("create_timestamp", "int64"),
]

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = group_key("ShareGroupStatePartitionMetadataKey", 15)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = value(
    "ShareGroupStatePartitionMetadataValue",
    15,
    [
        F("initializing_topics", "[]TopicPartitionsInfo", fields=_TOPIC_PARTITIONS_INFO),
        F("initialized_topics", "[]TopicPartitionsInfo", fields=_TOPIC_PARTITIONS_INFO),
        F("deleting_topics", "[]TopicInfo", fields=[F("topic_id", "uuid"), F("topic_name", "string")]),
    ],
)
