"""Decode and encode the records of ``__consumer_offsets`` and ``__transaction_state``.

.. code-block:: text

    __consumer_offsets (CoordinatorRecordSerde, Kafka 4.x group coordinator)
        key   = record_type:int16 key_message (read at version 0)
        value = value_version:int16 value_message | null (tombstone)
    __transaction_state (TransactionLog.readTxnRecordKey / readTxnRecordValue)
        key   = key_version:int16 (0) TransactionLogKey
        value = value_version:int16 (0-1) TransactionLogValue | null (tombstone)

The record types and their schemas are tables in :mod:`kgtool.coordinator.schemas`. An
unknown record type or value version is not an error (Kafka's ``CoordinatorLoaderImpl`` skips
unknown record types with a log line; ``DumpLogSegments`` prints them as unknown): it decodes
to a :class:`CoordinatorRecord` of kind ``"unknown"`` with the raw bytes and a warning.
Malformed bytes raise :class:`kgtool.errors.DecodeError` with ``position`` = the byte offset
inside the key or value and ``context`` such as ``value.members[2].subscription``; the batch
codec shifts the position into the file with :meth:`DecodeError.located`.

OffsetCommitKey and OffsetCommitValue v0-v4 (millions per segment) take a dedicated fast path
(:func:`decode_offset_commit`); anything that path does not fully recognise goes through the
generic compiled decoder, which gives the exact error.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field
from typing import Any

from kgtool.coordinator.consumer_protocol import decode_assignment, decode_subscription
from kgtool.coordinator.schema import (
    DECODER_FAILURES,
    uuid_to_str,
    decode_message,
    encode_message,
    strict_decoder,
)
from kgtool.coordinator.schemas import (
    OFFSETS_RECORD_TYPES,
    OFFSETS_RECORD_TYPES_BY_KIND,
    SHARE_STATE_RECORD_TYPES,
    SHARE_STATE_RECORD_TYPES_BY_KIND,
    TRANSACTION_RECORD_TYPES,
    RecordType,
)
from kgtool.errors import DecodeError
from kgtool.native import load as _load_native

__all__ = [
    "CoordinatorRecord",
    "decode_offsets_record",
    "decode_transaction_record",
    "encode_offsets_record",
    "encode_transaction_record",
    "decode_share_state_record",
    "encode_share_state_record",
    "decode_offset_commit",
    "default_offsets_value_version",
    "to_jsonable",
    "RECORD_DECODERS",
    "INTERNAL_TOPICS",
]

UNKNOWN = "unknown"
#: Kinds whose decoded key and value hold only ints and strings (no bytes to convert).
_FLAT_KINDS = frozenset({"offset_commit", "legacy_offset_commit"})


@dataclass(slots=True)
class CoordinatorRecord:
    """One decoded coordinator record.

    ``record_type`` is the key's int16 prefix (``CoordinatorRecordType`` id in
    ``__consumer_offsets``; 0 in ``__transaction_state``), equal to ``key_version``. ``value``
    is ``None`` for a tombstone (``tombstone`` True) and for an unknown record type or version
    (kind ``"unknown"``, raw bytes in ``raw_key`` / ``raw_value``).
    """

    kind: str
    record_type: int
    key_version: int
    key: dict
    value_version: int | None
    value: dict | None
    tombstone: bool
    warnings: list[str] = field(default_factory=list)
    raw_key: bytes | None = None
    raw_value: bytes | None = None

    def to_json(self) -> dict:
        """A JSON-able dict: bytes as standard base64, consumer-protocol bytes also decoded.

        Keys: ``record_type``, ``kind``, ``tombstone``, ``key``, ``value_version``, ``value``,
        then ``warnings`` (when any) and ``raw_key`` / ``raw_value`` (kind ``unknown``).
        """
        if self.kind in _FLAT_KINDS and (self.value is None or "_unknown_tagged_fields" not in self.value):
            # no bytes inside: shallow copies are enough (hot path)
            key = dict(self.key)
            value = None if self.value is None else dict(self.value)
        else:
            key = to_jsonable(self.key)
            value = to_jsonable(self.value)
        # The shape of the golden decode.jsonl's "offsetsTopic" (snake_case): key_version is
        # record_type and is not repeated; warnings and raw bytes appear only when there are some.
        out: dict[str, Any] = {
            "record_type": self.record_type,
            "kind": self.kind,
            "tombstone": self.tombstone,
            "key": key,
            "value_version": self.value_version,
            "value": value,
        }
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.raw_key is not None or self.raw_value is not None:
            out["raw_key"] = _b64(self.raw_key)
            out["raw_value"] = _b64(self.raw_value)
        return out


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def to_jsonable(obj: Any) -> Any:
    """Recursively convert decoded values to JSON-able ones (bytes -> standard base64)."""
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    return obj


# ---------------------------------------------------------------------------------------------
# The offset-commit fast path

_S_KEY_HEAD = struct.Struct(">hh").unpack_from  # record type, group length
_S_H = struct.Struct(">h").unpack_from
_S_I = struct.Struct(">i").unpack_from
_S_Q = struct.Struct(">q").unpack_from
_S_QQ = struct.Struct(">qq").unpack_from
_S_V3 = struct.Struct(">hqih").unpack_from  # version, offset, leader_epoch, metadata length
_S_V0 = struct.Struct(">hqh").unpack_from  # version, offset, metadata length (v0, v1, v2)
_S_V4 = struct.Struct(">hqi").unpack_from  # version, offset, leader_epoch (then compact string)


def _fast_key(key: bytes) -> tuple[str, str, int] | None:
    """OffsetCommitKey (types 0 and 1): (group, topic, partition), or None to take the slow path."""
    try:
        _, gl = _S_KEY_HEAD(key, 0)
        p = 4 + gl
        group = key[4:p].decode()
        (tl,) = _S_H(key, p)
        q = p + 2 + tl
        topic = key[p + 2 : q].decode()
        (partition,) = _S_I(key, q)
    except (struct.error, UnicodeDecodeError):
        return None
    if gl < 0 or tl < 0 or q + 4 != len(key):
        return None
    return group, topic, partition


def _fast_value(value: bytes) -> tuple | None:
    """OffsetCommitValue v0-v4: (version, offset, leader_epoch, metadata, commit_ts, expire_ts,
    topic_id).

    Fields a version lacks are None; ``topic_id`` is v4's TopicId tag (4.1+, KIP-848 commits by
    topic id), the only tagged field the bulk path reads. None (the whole result) means "take
    the slow path".
    """
    n = len(value)
    try:
        version = value[0] << 8 | value[1]
        if version == 3:
            _, offset, epoch, ml = _S_V3(value, 0)
            p = 16 + ml
            metadata = value[16:p].decode()
            (commit,) = _S_Q(value, p)
            if ml < 0 or p + 8 != n:
                return None
            return 3, offset, epoch, metadata, commit, None, None
        if version == 1:
            _, offset, ml = _S_V0(value, 0)
            p = 12 + ml
            metadata = value[12:p].decode()
            commit, expire = _S_QQ(value, p)
            if ml < 0 or p + 16 != n:
                return None
            return 1, offset, None, metadata, commit, expire, None
        if version == 0 or version == 2:
            _, offset, ml = _S_V0(value, 0)
            p = 12 + ml
            metadata = value[12:p].decode()
            (commit,) = _S_Q(value, p)
            if ml < 0 or p + 8 != n:
                return None
            return version, offset, None, metadata, commit, None, None
        if version == 4:
            _, offset, epoch = _S_V4(value, 0)
            ml = value[14] - 1  # compact string: uvarint length + 1
            if ml < 0 or ml >= 127:
                return None
            p = 15 + ml
            metadata = value[15:p].decode()
            (commit,) = _S_Q(value, p)
            if p + 9 == n and value[p + 8] == 0:  # no tagged fields
                return 4, offset, epoch, metadata, commit, None, None
            # one tagged field, TopicId (tag 0, size 16); the zero uuid is its default (Kafka
            # leaves it out): read as none, as the schema's view shows it
            if p + 27 != n or value[p + 8 : p + 11] != b"\x01\x00\x10":
                return None
            tid = value[p + 11 : n]
            return 4, offset, epoch, metadata, commit, None, None if tid == _ZERO16 else uuid_to_str(tid)
    except (struct.error, UnicodeDecodeError, IndexError):
        return None
    return None


#: OffsetCommitKey bytes -> (record_type, group, topic, partition). A segment repeats the same
#: few keys (one per group and partition) millions of times; bounded, cleared when full.
_KEY_CACHE: dict[bytes, tuple[int, str, str, int]] = {}
_KEY_CACHE_MAX = 1 << 16
_S_V3_EMPTY = struct.Struct(">hqihq").unpack_from  # v3 with empty metadata: 24 bytes, one call


def _offset_commit_key(key: bytes) -> tuple[int, str, str, int] | None:
    k = _KEY_CACHE.get(key)
    if k is None:
        if len(key) < 2 or key[0] != 0 or key[1] > 1:
            return None
        t = _fast_key(key)
        if t is None:
            return None
        k = (key[1],) + t
        if len(_KEY_CACHE) >= _KEY_CACHE_MAX:
            _KEY_CACHE.clear()
        _KEY_CACHE[key] = k
    return k


def decode_offset_commit(key: bytes, value: bytes | None) -> tuple | None:
    """The bulk path: an offset commit as a flat tuple, or None when it is not a plain one.

    Returns ``(record_type, group, topic, partition, value_version, offset, leader_epoch,
    metadata, commit_timestamp, expire_timestamp, topic_id)``, with ``value_version`` and the
    value fields None for a tombstone and fields a version lacks None. Returns None for any other
    record (or anything unusual, such as a tagged field other than v4's TopicId, or trailing
    bytes): use :func:`decode_offsets_record` then. Never raises (bytes-like inputs are copied
    to ``bytes``).
    """
    if type(key) is not bytes:
        key = bytes(key)
    if value is not None and type(value) is not bytes:
        value = bytes(value)
    k = _KEY_CACHE.get(key)
    if k is None:
        k = _offset_commit_key(key)
        if k is None:
            return None
    if value is None:
        return k + _TOMBSTONE_TAIL
    if len(value) == 24 and value[1] == 3 and value[0] == 0 and value[14] == 0 and value[15] == 0:
        _, offset, epoch, _, commit = _S_V3_EMPTY(value, 0)
        return k + (3, offset, epoch, "", commit, None, None)
    v = _fast_value(value)
    if v is None:
        return None
    return k + v


_TOMBSTONE_TAIL = (None, None, None, None, None, None, None)
_ZERO16 = bytes(16)


def _fast_offsets_record(key: bytes, value: bytes | None) -> CoordinatorRecord | None:
    k = _KEY_CACHE.get(key)
    if k is None:
        k = _offset_commit_key(key)
        if k is None:
            return None
    rtype = k[0]
    kind = "offset_commit" if rtype == 1 else "legacy_offset_commit"
    kd = {"group": k[1], "topic": k[2], "partition": k[3]}
    if value is None:
        return CoordinatorRecord(kind, rtype, rtype, kd, None, None, True, [])
    if len(value) == 24 and value[1] == 3 and value[0] == 0 and value[14] == 0 and value[15] == 0:
        _, offset, epoch, _, commit = _S_V3_EMPTY(value, 0)
        vd = {"offset": offset, "leader_epoch": epoch, "metadata": "", "commit_timestamp": commit}
        return CoordinatorRecord(kind, rtype, rtype, kd, 3, vd, False, [])
    v = _fast_value(value)
    if v is None:
        return None
    version = v[0]
    if version == 3 or version == 4:
        vd = {"offset": v[1], "leader_epoch": v[2], "metadata": v[3], "commit_timestamp": v[4]}
        if v[6] is not None:
            vd["topic_id"] = v[6]
    elif version == 1:
        vd = {"offset": v[1], "metadata": v[3], "commit_timestamp": v[4], "expire_timestamp": v[5]}
    else:
        vd = {"offset": v[1], "metadata": v[3], "commit_timestamp": v[4]}
    return CoordinatorRecord(kind, rtype, rtype, kd, version, vd, False, [])


# ---------------------------------------------------------------------------------------------
# Generic decoding


def _version_of(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise DecodeError(
            f"expected the 2-byte {what} version, {len(data)} bytes present", position=0, context=what
        )
    return struct.unpack_from(">h", data, 0)[0]


def _decode_generic(
    key: bytes, value: bytes | None, registry: dict[int, RecordType], topic: str,
    protocol_cache: dict | None = None,
) -> CoordinatorRecord:
    if type(key) is not bytes:
        key = bytes(key)
    if value is not None and type(value) is not bytes:
        value = bytes(value)
    rtype = _version_of(key, "key")
    rt = registry.get(rtype)
    if rt is None:
        return CoordinatorRecord(
            UNKNOWN,
            rtype,
            rtype,
            {},
            None if value is None else _peek_version(value),
            None,
            value is None,
            [f"unknown {topic} record type {rtype}: key and value kept raw"],
            raw_key=key,
            raw_value=value,
        )
    warnings: list[str] = []
    try:
        kd, end = strict_decoder(rt.key, 0)(key, 2, len(key), warnings)
    except DECODER_FAILURES:
        del warnings[:]
        kd, end = decode_message(rt.key, 0, key, 2, context="key", warnings=warnings)
    if end != len(key):
        warnings.append(f"{len(key) - end} trailing bytes after the {rt.key.name} ignored")
    if value is None:
        return CoordinatorRecord(rt.kind, rtype, rtype, kd, None, None, True, warnings)
    vversion = _version_of(value, "value")
    if not rt.value.supports(vversion):
        warnings.append(
            f"unknown {rt.value.name} version {vversion} (known {rt.value.valid_versions}): value kept raw"
        )
        return CoordinatorRecord(
            UNKNOWN, rtype, rtype, kd, vversion, None, False, warnings, raw_key=key, raw_value=value
        )
    vd = _group_metadata_value(value) if rt.kind == "group_metadata" and _group_metadata_value else None
    if vd is None:  # anything but a regular GroupMetadataValue, or no compiled decoder
        mark = len(warnings)
        try:
            vd, end = strict_decoder(rt.value, vversion)(value, 2, len(value), warnings)
        except DECODER_FAILURES:
            del warnings[mark:]
            older = _superseded_value(rt.value, vversion, value, warnings)
            if older is not None:
                return CoordinatorRecord(rt.kind, rtype, rtype, kd, vversion, older, False, warnings)
            vd, end = decode_message(rt.value, vversion, value, 2, context="value", warnings=warnings)
        if end != len(value):
            older = _superseded_value(rt.value, vversion, value, warnings)
            if older is not None:
                return CoordinatorRecord(rt.kind, rtype, rtype, kd, vversion, older, False, warnings)
            warnings.append(f"{len(value) - end} trailing bytes after the {rt.value.name} v{vversion} ignored")
    if rt.kind == "group_metadata":
        _decode_members(vd, warnings, protocol_cache)
    return CoordinatorRecord(rt.kind, rtype, rtype, kd, vversion, vd, False, warnings)


def _superseded_value(schema, version: int, value: bytes, warnings: list[str]) -> dict | None:
    """A value the current layout does not read, read whole by an older incompatible one.

    Kafka 4.1 changed the 4.0 early-access share-group records (KIP-932) in place: a 4.0
    broker's ShareGroupMetadataValue or ShareSnapshotValue v0 is not 4.1's v0. Returns the value
    decoded by the first superseded layout that reads every byte without a note (with a warning
    naming it), or None.
    """
    for old in schema.superseded:
        if not old.supports(version):
            continue
        notes: list[str] = []
        try:
            vd, end = strict_decoder(old, version)(value, 2, len(value), notes)
        except DECODER_FAILURES:
            continue
        if end == len(value) and not notes:
            warnings.append(
                f"{schema.name} v{version} in Kafka {old.until}'s layout (changed incompatibly after "
                f"{old.until}): decoded with it"
            )
            return vd
    return None


_speedups = _load_native("kgtool.codec._speedups")
#: GroupMetadataValue v0-v4 in C: the schema decoder's dict, or None for anything unusual (the
#: schema decoder then warns or fails with the position); rebalance-heavy logs hold one such
#: value, with every member, per generation.
_group_metadata_value = getattr(_speedups, "decode_group_metadata_value", None)


def _peek_version(value: bytes) -> int | None:
    return struct.unpack_from(">h", value, 0)[0] if len(value) >= 2 else None


PROTOCOL_CACHE_ENTRIES = 4096


def _decode_members(vd: dict, warnings: list[str], cache: dict | None = None) -> None:
    """Decode each member's consumer-protocol bytes when the group speaks ``consumer``.

    Those bytes are opaque to the broker (it stores whatever the client sent), so bytes that
    do not decode are a warning on the record (with the position and path), not an error.
    With ``cache`` (bytes -> decoded, at most PROTOCOL_CACHE_ENTRIES), equal bytes decode once
    and records SHARE the decoded objects: for read-only callers only. Members' subscriptions
    and assignments repeat a lot from one generation to the next.
    """
    if vd.get("protocol_type") != "consumer":
        return
    for i, member in enumerate(vd.get("members") or ()):
        for name, decoded_name, fn in _PROTOCOL_FIELDS:
            raw = member[name]
            if cache is not None:
                ck = (name, raw if type(raw) is bytes else bytes(raw))
                hit = cache.get(ck)
                if hit is not None:
                    member[decoded_name] = hit
                    continue
            try:
                member[decoded_name] = decoded = fn(raw, context=f"value.members[{i}].{name}")
                if cache is not None:
                    if len(cache) >= PROTOCOL_CACHE_ENTRIES:
                        cache.clear()
                    cache[ck] = decoded
            except DecodeError as exc:
                member[decoded_name] = None
                warnings.append(
                    f"{name} of member {member.get('member_id')!r} not decoded: byte {exc.position} of its "
                    f"{len(member[name])} bytes ({exc.context}): {exc.reason}"
                )


_PROTOCOL_FIELDS = (("subscription", "subscription_decoded", decode_subscription),
                    ("assignment", "assignment_decoded", decode_assignment))


def decode_offsets_record(key: bytes | None, value: bytes | None, *,
                          protocol_cache: dict | None = None) -> CoordinatorRecord:
    """Decode one ``__consumer_offsets`` record from its key and value bytes.

    Args:
        key: the record key (Kafka never writes a null key here; a null key is reported).
        value: the record value, or None for a tombstone.
        protocol_cache: see :func:`_decode_members` (read-only callers: decoded members'
            subscriptions and assignments may be shared between records).

    Returns:
        A :class:`CoordinatorRecord`; kind ``"unknown"`` (with a warning) for an unknown record
        type or value version.

    Raises:
        DecodeError: truncated or malformed bytes; ``position`` is the offset inside the key or
        value, ``context`` starts with ``key`` or ``value``.
    """
    if key is None:
        raise DecodeError("a coordinator record needs a key, found null", position=0, context="key")
    if type(key) is bytes and (value is None or type(value) is bytes):
        rec = _fast_offsets_record(key, value)
        if rec is not None:
            return rec
    return _decode_generic(key, value, OFFSETS_RECORD_TYPES, "__consumer_offsets", protocol_cache)


def decode_transaction_record(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """Decode one ``__transaction_state`` record (TransactionLogKey / TransactionLogValue).

    Same contract as :func:`decode_offsets_record`; kind ``"transaction_log"``.
    """
    if key is None:
        raise DecodeError("a transaction log record needs a key, found null", position=0, context="key")
    return _decode_generic(key, value, TRANSACTION_RECORD_TYPES, "__transaction_state")


def decode_share_state_record(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """Decode one ``__share_group_state`` record (ShareSnapshot / ShareUpdate, KIP-932).

    Same contract as :func:`decode_offsets_record`; kinds ``"share_snapshot"``, ``"share_update"``.
    """
    if key is None:
        raise DecodeError("a share state record needs a key, found null", position=0, context="key")
    return _decode_generic(key, value, SHARE_STATE_RECORD_TYPES, "__share_group_state")


# ---------------------------------------------------------------------------------------------
# Encoding


def default_offsets_value_version(kind: str, value: dict) -> int:
    """The value version Kafka 4.x writes for ``kind``.

    OffsetCommitValue: v1 when an ``expire_timestamp`` is set (not -1), else v3
    (``GroupCoordinatorRecordHelpers.newOffsetCommitRecord``); GroupMetadataValue: v3
    (``newGroupMetadataRecord``); the KIP-848 / share / streams records: v0.
    """
    rt = OFFSETS_RECORD_TYPES_BY_KIND.get(kind)
    if rt is None:
        raise ValueError(f"unknown __consumer_offsets record kind {kind!r}")
    if kind in ("offset_commit", "legacy_offset_commit"):
        expire = value.get("expire_timestamp", -1)
        if expire is not None and expire != -1:
            return 1
        return rt.default_value_version
    return rt.default_value_version


def encode_offsets_record(
    kind: str, key: dict, value: dict | None, *, value_version: int | None = None
) -> tuple[bytes, bytes | None]:
    """Encode a ``__consumer_offsets`` record: the exact inverse of :func:`decode_offsets_record`.

    Args:
        kind: the record kind (``"offset_commit"``, ``"group_metadata"``, ...).
        key: the key fields (``{"group", "topic", "partition"}`` for an offset commit).
        value: the value fields, or None for a tombstone. ``*_decoded`` member entries are
            ignored (the raw ``subscription`` / ``assignment`` bytes are written).
        value_version: defaults to what Kafka 4.x writes (:func:`default_offsets_value_version`).

    Returns ``(key_bytes, value_bytes_or_None)``. Raises ``ValueError`` for an unknown kind or a
    value that the version cannot carry.
    """
    rt = OFFSETS_RECORD_TYPES_BY_KIND.get(kind)
    if rt is None:
        raise ValueError(f"unknown __consumer_offsets record kind {kind!r}")
    kb = struct.pack(">h", rt.id) + encode_message(rt.key, 0, key)
    if value is None:
        return kb, None
    if value_version is None:
        value_version = default_offsets_value_version(kind, value)
    vb = struct.pack(">h", value_version) + encode_message(rt.value, value_version, value)
    return kb, vb


def encode_transaction_record(
    key: dict, value: dict | None, *, value_version: int | None = None
) -> tuple[bytes, bytes | None]:
    """Encode a ``__transaction_state`` record (TransactionLogKey v0, TransactionLogValue).

    ``value_version`` defaults to 1 (flexible, with tagged producer ids), what a Kafka 4.x
    broker writes (``TransactionVersion.transactionLogValueVersion``, TV_1+; 0 for TV_0).
    """
    rt = TRANSACTION_RECORD_TYPES[0]
    kb = struct.pack(">h", 0) + encode_message(rt.key, 0, key)
    if value is None:
        return kb, None
    if value_version is None:
        value_version = 1
    vb = struct.pack(">h", value_version) + encode_message(rt.value, value_version, value)
    return kb, vb


def encode_share_state_record(
    kind: str, key: dict, value: dict | None, *, value_version: int = 0
) -> tuple[bytes, bytes | None]:
    """Encode a ``__share_group_state`` record (``"share_snapshot"`` or ``"share_update"``)."""
    rt = SHARE_STATE_RECORD_TYPES_BY_KIND.get(kind)
    if rt is None:
        raise ValueError(f"unknown __share_group_state record kind {kind!r}")
    kb = struct.pack(">h", rt.id) + encode_message(rt.key, 0, key)
    if value is None:
        return kb, None
    return kb, struct.pack(">h", value_version) + encode_message(rt.value, value_version, value)


#: ``--decode`` name -> record decoder, for the internal topics whose records kgtool knows.
#: (``offsets``: ``__consumer_offsets``; ``txn``: ``__transaction_state``; ``share``:
#: ``__share_group_state``.)
RECORD_DECODERS = {
    "offsets": decode_offsets_record,
    "txn": decode_transaction_record,
    "share": decode_share_state_record,
}

#: Internal topic name -> ``--decode`` name (to choose a decoder from a ``TOPIC-N`` directory).
INTERNAL_TOPICS = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "txn",
    "__share_group_state": "share",
}
