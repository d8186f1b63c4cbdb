"""The classic consumer protocol: subscription and assignment bytes in JoinGroup/SyncGroup.

Transcribed from Apache Kafka 4.x ``clients/src/main/resources/common/message/``
``ConsumerProtocolSubscription.json`` and ``ConsumerProtocolAssignment.json`` (framed with an
int16 version by ``ConsumerProtocol.serializeSubscription/Assignment``), and the StickyAssignor's
user data (``StickyAssignor.STICKY_ASSIGNOR_USER_DATA_V0/V1``, old-style ``Schema`` with no
version prefix) and the CooperativeStickyAssignor's (``COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0``).

.. code-block:: text

    Subscription v0-3  topics:[]string user_data:bytes? owned_partitions:[topic partitions:[]int32] (v1+)
                       generation_id:int32 (v2+, default -1) rack_id:string? (v3+)
    Assignment v0-3    assigned_partitions:[topic partitions:[]int32] user_data:bytes?
                       (v1-v3 only mark support for cooperative rebalancing; same fields)
    StickyAssignorUserData v0  previous_assignment:[topic partitions:[]int32]
    StickyAssignorUserData v1  previous_assignment:[topic partitions:[]int32] generation:int32
"""

from __future__ import annotations

from kgtool.coordinator.schema import F, MessageSchema

_DIR = "clients/src/main/resources/common/message/"

_TOPIC_PARTITION = [
    F("topic", "string", "0+"),
    F("partitions", "[]int32", "0+"),
]

CONSUMER_PROTOCOL_SUBSCRIPTION = MessageSchema.of(
    "ConsumerProtocolSubscription",
    versions="0-3",
    flexible="none",
    source=_DIR + "ConsumerProtocolSubscription.json",
    fields=[
        F("topics", "[]string", "0+"),
        F("user_data", "bytes", "0+", nullable="0+", default=None),
        F("owned_partitions", "[]TopicPartition", "1+", ignorable=True, fields=_TOPIC_PARTITION),
        F("generation_id", "int32", "2+", default=-1, ignorable=True),
        F("rack_id", "string", "3+", nullable="3+", default=None, ignorable=True),
    ],
)

CONSUMER_PROTOCOL_ASSIGNMENT = MessageSchema.of(
    "ConsumerProtocolAssignment",
    versions="0-3",
    flexible="none",
    source=_DIR + "ConsumerProtocolAssignment.json",
    fields=[
        F("assigned_partitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION),
        F("user_data", "bytes", "0+", nullable="0+", default=None),
    ],
)

# StickyAssignor (clients/.../consumer/StickyAssignor.java): org.apache.kafka.common.protocol.types
# Schema with ArrayOf(TOPIC_ASSIGNMENT) (non-nullable) and no version prefix.
STICKY_ASSIGNOR_USER_DATA = MessageSchema.of(
    "StickyAssignorUserData",
    versions="0-1",
    flexible="none",
    source="clients/src/main/java/org/apache/kafka/clients/consumer/StickyAssignor.java",
    fields=[
        F("previous_assignment", "[]TopicAssignment", "0+", fields=_TOPIC_PARTITION),
        F("generation", "int32", "1+"),
    ],
)

# CooperativeStickyAssignor.COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0: just the generation.
COOPERATIVE_STICKY_ASSIGNOR_USER_DATA = MessageSchema.of(
    "CooperativeStickyAssignorUserData",
    versions="0",
    flexible="none",
    source="clients/src/main/java/org/apache/kafka/clients/consumer/CooperativeStickyAssignor.java",
    fields=[F("generation", "int32", "0+")],
)
