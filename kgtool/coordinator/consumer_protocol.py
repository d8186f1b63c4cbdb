"""The classic consumer protocol's subscription and assignment bytes, and assignor user data.

These bytes travel in JoinGroup/SyncGroup and are stored, opaque to the broker, in every
``GroupMetadataValue`` member (``subscription`` / ``assignment``) of ``__consumer_offsets``.

.. code-block:: text

    subscription = version:int16 ConsumerProtocolSubscription (v0-3, non-flexible)
        topics:[]string user_data:bytes? owned_partitions:[topic partitions:[]int32] (v1+)
        generation_id:int32 (v2+) rack_id:string? (v3+)
    assignment   = version:int16 ConsumerProtocolAssignment (v0-3, non-flexible)
        assigned_partitions:[topic partitions:[]int32] user_data:bytes?

Source: ``org.apache.kafka.clients.consumer.internals.ConsumerProtocol``: a version above the
highest known is read as the highest (``checkSubscriptionVersion`` / ``checkAssignmentVersion``:
newer versions only append fields), a negative one is an error, and trailing bytes are ignored.
The decoded dicts carry Kafka's field names in snake_case plus ``_version``, the version read
from the header, as in the golden ``decode.jsonl``.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable

from kgtool.coordinator.schema import decode_message, encode_message
from kgtool.coordinator.schemas.consumer_protocol import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    COOPERATIVE_STICKY_ASSIGNOR_USER_DATA,
    STICKY_ASSIGNOR_USER_DATA,
)
from kgtool.errors import DecodeError
from kgtool.java import string_hash_order

__all__ = [
    "decode_subscription",
    "encode_subscription",
    "decode_assignment",
    "encode_assignment",
    "decode_sticky_user_data",
    "encode_sticky_user_data",
    "decode_cooperative_sticky_user_data",
    "encode_cooperative_sticky_user_data",
    "group_partitions_by_topic",
]

#: ``StickyAssignor.DEFAULT_GENERATION`` (AbstractStickyAssignor).
DEFAULT_GENERATION = -1

HIGHEST_SUBSCRIPTION_VERSION = 3
HIGHEST_ASSIGNMENT_VERSION = 3


def _read_header(data: bytes, what: str, context: str) -> int:
    if len(data) < 2:
        raise DecodeError(
            f"expected the 2-byte {what} version, {len(data)} bytes present", position=0, context=context
        )
    (version,) = struct.unpack_from(">h", data, 0)
    if version < 0:
        raise DecodeError(f"unsupported {what} version {version}", position=0, context=context)
    return version


def _decode(data: bytes, schema: Any, highest: int, what: str, context: str) -> dict:
    if not isinstance(data, bytes):
        data = bytes(data)
    version = _read_header(data, what, context)
    obj, end = decode_message(schema, min(version, highest), data, 2, context=context)
    obj["_version"] = version
    if end != len(data):
        # ConsumerProtocol ignores what follows (a newer version's fields); kgtool says so.
        obj["_trailing_bytes"] = len(data) - end
    return obj


def decode_subscription(data: bytes, *, context: str = "subscription") -> dict:
    """Decode ``ConsumerProtocol`` subscription bytes (header version + ConsumerProtocolSubscription).

    Returns ``{"topics", "user_data", "owned_partitions" (v1+), "generation_id" (v2+),
    "rack_id" (v3+), "_version"}`` (plus ``_trailing_bytes`` when bytes follow). Raises
    :class:`DecodeError` (position inside ``data``) for truncated or malformed bytes.
    """
    return _decode(data, CONSUMER_PROTOCOL_SUBSCRIPTION, HIGHEST_SUBSCRIPTION_VERSION, "subscription", context)


def decode_assignment(data: bytes, *, context: str = "assignment") -> dict:
    """Decode ``ConsumerProtocol`` assignment bytes: ``{"assigned_partitions", "user_data", "_version"}``.

    Raises :class:`DecodeError` for truncated or malformed bytes.
    """
    return _decode(data, CONSUMER_PROTOCOL_ASSIGNMENT, HIGHEST_ASSIGNMENT_VERSION, "assignment", context)


def group_partitions_by_topic(partitions: Iterable[Any]) -> list[dict]:
    """``[(topic, p), ...]`` or ``[{"topic", "partitions"}]`` -> ``[{"topic", "partitions"}]``.

    Topics keep their first-appearance order, as ConsumerProtocol's ``TopicPartitionCollection``
    (an insertion-ordered multi-collection keyed by topic) does in ``serializeSubscription``.
    """
    out: dict[str, list[int]] = {}
    for item in partitions:
        if isinstance(item, dict):
            out.setdefault(item["topic"], []).extend(item["partitions"])
        else:
            topic, partition = item
            out.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": ps} for t, ps in out.items()]


def _topic_partitions(items: Iterable[Any]) -> list[dict]:
    """Grouped dicts are written as given (even with a topic twice, as read); pairs are grouped."""
    items = list(items)
    if all(isinstance(item, dict) for item in items):
        return items
    return group_partitions_by_topic(items)


def encode_subscription(subscription: dict, version: int | None = None) -> bytes:
    """Encode a subscription dict (as :func:`decode_subscription` returns) with its version header.

    ``version`` defaults to the dict's ``_version``, else 3 (``ConsumerProtocol`` writes the
    highest). ``owned_partitions`` may also be given as ``(topic, partition)`` pairs, grouped
    as ``ConsumerProtocol.serializeSubscription`` does.
    """
    if version is None:
        version = subscription.get("_version", HIGHEST_SUBSCRIPTION_VERSION)
    body = dict(subscription)
    if body.get("owned_partitions"):
        body["owned_partitions"] = _topic_partitions(body["owned_partitions"])
    return struct.pack(">h", version) + encode_message(CONSUMER_PROTOCOL_SUBSCRIPTION, version, body)


def encode_assignment(assignment: dict, version: int | None = None) -> bytes:
    """Encode an assignment dict (as :func:`decode_assignment` returns) with its version header.

    ``assigned_partitions`` may also be given as ``(topic, partition)`` pairs.
    """
    if version is None:
        version = assignment.get("_version", HIGHEST_ASSIGNMENT_VERSION)
    body = dict(assignment)
    body["assigned_partitions"] = _topic_partitions(body.get("assigned_partitions") or ())
    return struct.pack(">h", version) + encode_message(CONSUMER_PROTOCOL_ASSIGNMENT, version, body)


# -- StickyAssignor / CooperativeStickyAssignor user data -------------------------------------


def decode_sticky_user_data(data: bytes | None) -> dict:
    """Decode the StickyAssignor's subscription user data, exactly as Kafka reads it.

    ``StickyAssignor.memberData``: null or empty user data is "no previous assignment, no
    generation". Otherwise ``deserializeTopicPartitionAssignment`` tries the V1 schema
    (previous_assignment + generation), falls back to V0 (previous_assignment only), and when
    neither parses ignores the data: no partitions, generation ``DEFAULT_GENERATION`` (-1).

    Returns ``{"previous_assignment": [{"topic", "partitions"}], "generation": int | None,
    "_version": 1 | 0 | None}``; when nothing parsed, ``_error`` holds the V0 failure. Never
    raises for bad bytes (Kafka does not either).
    """
    if data is None or len(data) == 0:
        return {"previous_assignment": [], "generation": None, "_version": None}
    if not isinstance(data, bytes):
        data = bytes(data)
    try:
        obj, _ = decode_message(STICKY_ASSIGNOR_USER_DATA, 1, data, context="user_data")
        obj["_version"] = 1
        return obj
    except DecodeError:
        pass
    try:
        obj, _ = decode_message(STICKY_ASSIGNOR_USER_DATA, 0, data, context="user_data")
        obj["generation"] = None
        obj["_version"] = 0
        return obj
    except DecodeError as exc:
        return {
            "previous_assignment": [],
            "generation": DEFAULT_GENERATION,
            "_version": None,
            "_error": str(exc),
        }


def encode_sticky_user_data(previous_assignment: Iterable[Any], generation: int | None) -> bytes:
    """StickyAssignor ``serializeTopicPartitionAssignment``: V1 with a generation, V0 without.

    ``previous_assignment`` as ``(topic, partition)`` pairs is grouped the way Kafka's
    ``CollectionUtils.groupPartitionsByTopic`` does: into a ``java.util.HashMap``, so topics
    come out in that map's iteration order (:func:`kgtool.java.string_hash_order`), partitions in input
    order. Already grouped ``{"topic", "partitions"}`` dicts are written as given.
    """
    items = list(previous_assignment)
    if items and not isinstance(items[0], dict):
        grouped: dict[str, list[int]] = {}
        for topic, partition in items:
            grouped.setdefault(topic, []).append(partition)
        topics = [{"topic": t, "partitions": grouped[t]} for t in string_hash_order(grouped)]
    else:
        topics = items
    if generation is None:
        return encode_message(STICKY_ASSIGNOR_USER_DATA, 0, {"previous_assignment": topics})
    return encode_message(
        STICKY_ASSIGNOR_USER_DATA, 1, {"previous_assignment": topics, "generation": generation}
    )


def decode_cooperative_sticky_user_data(data: bytes | None) -> int | None:
    """CooperativeStickyAssignor ``memberData``: the generation encoded in the user data.

    Null user data -> ``None`` (no generation); bytes that do not parse ->
    ``DEFAULT_GENERATION`` (-1), as Kafka does. (Kafka prefers the subscription's own
    ``generation_id`` when present, v2+; that choice belongs to the assignor.)
    """
    if data is None:
        return None
    try:
        obj, _ = decode_message(COOPERATIVE_STICKY_ASSIGNOR_USER_DATA, 0, bytes(data))
    except DecodeError:
        return DEFAULT_GENERATION
    return obj["generation"]


def encode_cooperative_sticky_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor ``subscriptionUserData``: the generation as one int32."""
    return encode_message(COOPERATIVE_STICKY_ASSIGNOR_USER_DATA, 0, {"generation": generation})
