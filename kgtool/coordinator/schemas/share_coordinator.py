"""Records of ``__share_group_state`` (the share coordinator, KIP-932), record types 0-1.

Transcribed from Apache Kafka 4.x ``share-coordinator/src/main/resources/common/message/``
``ShareSnapshotKey.json`` / ``ShareSnapshotValue.json`` (type 0) and ``ShareUpdateKey.json`` /
``ShareUpdateValue.json`` (type 1); framing as ``__consumer_offsets`` (CoordinatorRecordSerde).

.. code-block:: text

    0 ShareSnapshot  key group_id topic_id:uuid partition; value snapshot_epoch state_epoch
                     leader_epoch start_offset delivery_complete_count (tag 0, KIP-1226)
                     create_timestamp write_timestamp state_batches[first_offset last_offset
                     delivery_state:int8 delivery_count:int16]
    1 ShareUpdate    key group_id topic_id partition; value snapshot_epoch leader_epoch
                     start_offset delivery_complete_count (tag 0) state_batches[...]
"""

from __future__ import annotations

from kgtool.coordinator.schema import F, MessageSchema

_DIR = "share-coordinator/src/main/resources/common/message/"

_KEY_FIELDS = [F("group_id", "string", "0"), F("topic_id", "uuid", "0"), F("partition", "int32", "0")]
_STATE_BATCH = [
    F("first_offset", "int64"),
    F("last_offset", "int64"),
    F("delivery_state", "int8"),
    F("delivery_count", "int16"),
]

SHARE_SNAPSHOT_KEY = MessageSchema.of(
    "ShareSnapshotKey", api_key=0, versions="0", flexible="none", source=_DIR + "ShareSnapshotKey.json",
    fields=_KEY_FIELDS,
)
SHARE_SNAPSHOT_VALUE = MessageSchema.of(
    "ShareSnapshotValue",
    api_key=0,
    versions="0",
    flexible="0+",
    source=_DIR + "ShareSnapshotValue.json",
    fields=[
        F("snapshot_epoch", "int32"),
        F("state_epoch", "int32"),
        F("leader_epoch", "int32"),
        F("start_offset", "int64"),
        F("delivery_complete_count", "int32", tag=0, tagged="0+", default=-1),
        F("create_timestamp", "int64"),
        F("write_timestamp", "int64"),
        F("state_batches", "[]StateBatch", fields=_STATE_BATCH),
    ],
)

SHARE_UPDATE_KEY = MessageSchema.of(
    "ShareUpdateKey", api_key=1, versions="0", flexible="none", source=_DIR + "ShareUpdateKey.json",
    fields=_KEY_FIELDS,
)
SHARE_UPDATE_VALUE = MessageSchema.of(
    "ShareUpdateValue",
    api_key=1,
    versions="0",
    flexible="0+",
    source=_DIR + "ShareUpdateValue.json",
    fields=[
        F("snapshot_epoch", "int32"),
        F("leader_epoch", "int32"),
        F("start_offset", "int64"),
        F("delivery_complete_count", "int32", tag=0, tagged="0+", default=-1),
        F("state_batches", "[]StateBatch", fields=_STATE_BATCH),
    ],
)
