"""Classic-protocol records of ``__consumer_offsets``: offset commits and group metadata.

Transcribed from Apache Kafka 4.x ``group-coordinator/src/main/resources/common/message/``:
``LegacyOffsetCommitKey.json`` / ``LegacyOffsetCommitValue.json`` (record type 0),
``OffsetCommitKey.json`` / ``OffsetCommitValue.json`` (record type 1) and
``GroupMetadataKey.json`` / ``GroupMetadataValue.json`` (record type 2).

.. code-block:: text

    key   = record_type:int16  key fields (read at version 0)        CoordinatorRecordSerde
    value = value_version:int16 value fields, or null (a tombstone)

    OffsetCommitKey          group:string topic:string partition:int32
    OffsetCommitValue v0-4   offset:int64 leader_epoch:int32 (v3+) metadata:string
                             commit_timestamp:int64 expire_timestamp:int64 (v1 only);
                             flexible from v4
    GroupMetadataKey         group:string
    GroupMetadataValue v0-4  protocol_type generation protocol? leader? current_state_timestamp (v2+)
                             members[member_id group_instance_id? (v3+) client_id client_host
                             rebalance_timeout (v1+) session_timeout subscription:bytes
                             assignment:bytes]; flexible from v4
"""

from __future__ import annotations

from kgtool.coordinator.schema import F, MessageSchema

_DIR = "group-coordinator/src/main/resources/common/message/"

LEGACY_OFFSET_COMMIT_KEY = MessageSchema.of(
    "LegacyOffsetCommitKey",
    api_key=0,
    versions="0",
    flexible="none",
    source=_DIR + "LegacyOffsetCommitKey.json",
    fields=[
        F("group", "string", "0"),
        F("topic", "string", "0"),
        F("partition", "int32", "0"),
    ],
)

# Kafka 4.x declares LegacyOffsetCommitValue v0 for record type 0, the layout of
# OffsetCommitValue v0; a type-0 key followed by a v1+ value (written by old brokers) is decoded
# with OffsetCommitValue below, as the pre-4.0 serde did (see records.py).
LEGACY_OFFSET_COMMIT_VALUE = MessageSchema.of(
    "LegacyOffsetCommitValue",
    api_key=0,
    versions="0",
    flexible="none",
    source=_DIR + "LegacyOffsetCommitValue.json",
    fields=[
        F("offset", "int64", "0"),
        F("metadata", "string", "0"),
        F("commit_timestamp", "int64", "0"),
    ],
)

OFFSET_COMMIT_KEY = MessageSchema.of(
    "OffsetCommitKey",
    api_key=1,
    versions="0",
    flexible="none",
    source=_DIR + "OffsetCommitKey.json",
    fields=[
        F("group", "string", "0"),
        F("topic", "string", "0"),
        F("partition", "int32", "0"),
    ],
)

OFFSET_COMMIT_VALUE = MessageSchema.of(
    "OffsetCommitValue",
    api_key=1,
    versions="0-4",
    flexible="4+",
    source=_DIR + "OffsetCommitValue.json",
    fields=[
        F("offset", "int64", "0+"),
        F("leader_epoch", "int32", "3+", default=-1, ignorable=True),
        F("metadata", "string", "0+"),
        F("commit_timestamp", "int64", "0+"),
        F("expire_timestamp", "int64", "1", default=-1, ignorable=True),
    ],
)

GROUP_METADATA_KEY = MessageSchema.of(
    "GroupMetadataKey",
    api_key=2,
    versions="0",
    flexible="none",
    source=_DIR + "GroupMetadataKey.json",
    fields=[F("group", "string", "0")],
)

GROUP_METADATA_VALUE = MessageSchema.of(
    "GroupMetadataValue",
    api_key=2,
    versions="0-4",
    flexible="4+",
    source=_DIR + "GroupMetadataValue.json",
    fields=[
        F("protocol_type", "string", "0+"),
        F("generation", "int32", "0+"),
        F("protocol", "string", "0+", nullable="0+"),
        F("leader", "string", "0+", nullable="0+"),
        F("current_state_timestamp", "int64", "2+", default=-1, ignorable=True),
        F(
            "members",
            "[]MemberMetadata",
            "0+",
            fields=[
                F("member_id", "string", "0+"),
                F("group_instance_id", "string", "3+", nullable="3+", default=None, ignorable=True),
                F("client_id", "string", "0+"),
                F("client_host", "string", "0+"),
                F("rebalance_timeout", "int32", "1+", ignorable=True),
                F("session_timeout", "int32", "0+"),
                F("subscription", "bytes", "0+"),
                F("assignment", "bytes", "0+"),
            ],
        ),
    ],
)
