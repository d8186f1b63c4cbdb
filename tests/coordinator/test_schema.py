"""The generic schema engine: every table, every version, both ways; boundaries and errors."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.coordinator.schema import (
    F,
    MessageSchema,
    VersionRange,
    camel_to_snake,
    decode_message,
    default_value,
    encode_message,
    uuid_from_str,
    uuid_to_str,
)
from kgtool.coordinator.schemas import ALL_SCHEMAS
from kgtool.coordinator.schemas.consumer_protocol import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    COOPERATIVE_STICKY_ASSIGNOR_USER_DATA,
    STICKY_ASSIGNOR_USER_DATA,
)
from kgtool.errors import DecodeError

from tests.coordinator.strategies import kafka_view, message_strategy

SCHEMAS = ALL_SCHEMAS + [
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    STICKY_ASSIGNOR_USER_DATA,
    COOPERATIVE_STICKY_ASSIGNOR_USER_DATA,
]
CASES = [
    (s, v)
    for s in SCHEMAS
    for v in range(s.valid_versions.lowest, s.valid_versions.highest + 1)
]


def uvarint(n: int) -> bytes:
    """An unsigned varint written independently of kgtool (for hand-built vectors)."""
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out += bytes([low | 0x80])
        else:
            return out + bytes([low])


def both_ways(schema, version, obj, data):
    """Two-way golden check: decode(data) == obj and encode(obj) == data, padded on both sides."""
    padded = b"\xAA\xBB" + data + b"\xCC"
    got, end = decode_message(schema, version, padded, 2, len(padded) - 1)
    assert end == len(padded) - 1
    assert got == kafka_view(schema.fields, version, obj)
    assert encode_message(schema, version, obj) == data
    assert encode_message(schema, version, got) == data


def test_every_table_cites_its_source():
    for s in SCHEMAS:
        assert s.source.endswith((".json", ".java")), s.name
        assert s.name in s.source or s.source.endswith(".java"), s.name


@pytest.mark.parametrize("schema,version", CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
def test_round_trip_every_schema_version(schema, version):
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(message_strategy(schema, version))
    def check(obj):
        data = encode_message(schema, version, obj)
        got, end = decode_message(schema, version, data)
        assert end == len(data)
        assert got == kafka_view(schema.fields, version, obj)
        assert encode_message(schema, version, got) == data
        # every strict prefix is an error (never a wrong answer or another exception);
        # a proper message is never empty: each has at least one field or a tag count
        for cut in range(len(data)):
            with pytest.raises(DecodeError) as info:
                decode_message(schema, version, data[:cut])
            assert 0 <= info.value.position <= cut

    check()


@pytest.mark.parametrize("schema,version", CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
def test_defaults_encode_and_decode(schema, version):
    obj = {f.name: default_value(f) for f in schema.fields if f.present_in(version) or f.tagged_in(version)}
    data = encode_message(schema, version, obj)
    got = decode_message(schema, version, data)[0]
    assert got == kafka_view(schema.fields, version, obj)
    assert not any(f.tagged_in(version) for f in schema.fields if f.name in got)  # defaults: not shown
    assert encode_message(schema, version, {}) == data


# -- hand-built vectors (the layout written out independently) --------------------------------

OCV = next(s for s in SCHEMAS if s.name == "OffsetCommitValue")
GMV = next(s for s in SCHEMAS if s.name == "GroupMetadataValue")
TLV = next(s for s in SCHEMAS if s.name == "TransactionLogValue")
CGMV = next(s for s in SCHEMAS if s.name == "ConsumerGroupMemberMetadataValue")
CGCMA = next(s for s in SCHEMAS if s.name == "ConsumerGroupCurrentMemberAssignmentValue")


@pytest.mark.parametrize(
    "version,obj,data",
    [
        (0, {"offset": 0, "metadata": "", "commit_timestamp": -1},
         struct.pack(">qh", 0, 0) + struct.pack(">q", -1)),
        (1, {"offset": 2**63 - 1, "metadata": "m", "commit_timestamp": 5, "expire_timestamp": -1},
         struct.pack(">qh", 2**63 - 1, 1) + b"m" + struct.pack(">qq", 5, -1)),
        (2, {"offset": -(2**63), "metadata": "é", "commit_timestamp": 0},
         struct.pack(">qh", -(2**63), 2) + "é".encode() + struct.pack(">q", 0)),
        (3, {"offset": 63, "leader_epoch": -1, "metadata": "", "commit_timestamp": 64},
         struct.pack(">qih", 63, -1, 0) + struct.pack(">q", 64)),
        (4, {"offset": 1, "leader_epoch": 2**31 - 1, "metadata": "x" * 200, "commit_timestamp": 3},
         struct.pack(">qi", 1, 2**31 - 1) + uvarint(201) + b"x" * 200 + struct.pack(">q", 3) + b"\x00"),
    ],
)
def test_offset_commit_value_vectors(version, obj, data):
    both_ways(OCV, version, obj, data)


def test_group_metadata_v0_and_nulls():
    obj = {"protocol_type": "consumer", "generation": 0, "protocol": None, "leader": None, "members": []}
    data = struct.pack(">h", 8) + b"consumer" + struct.pack(">ihhi", 0, -1, -1, 0)
    both_ways(GMV, 0, obj, data)


def test_group_metadata_v4_is_flexible():
    member = {
        "member_id": "m", "group_instance_id": None, "client_id": "c", "client_host": "h",
        "rebalance_timeout": 1, "session_timeout": 2, "subscription": b"", "assignment": b"\x01",
    }
    obj = {"protocol_type": "", "generation": 7, "protocol": None, "leader": "l",
           "current_state_timestamp": -1, "members": [member]}
    data = (
        uvarint(1) + struct.pack(">i", 7) + b"\x00" + uvarint(2) + b"l" + struct.pack(">q", -1)
        + uvarint(2)
        + uvarint(2) + b"m" + b"\x00" + uvarint(2) + b"c" + uvarint(2) + b"h"
        + struct.pack(">ii", 1, 2) + uvarint(1) + uvarint(2) + b"\x01" + b"\x00"
        + b"\x00"
    )
    both_ways(GMV, 4, obj, data)


def test_transaction_log_value_tagged_fields():
    obj = {
        "producer_id": 5, "previous_producer_id": 4, "next_producer_id": -1, "producer_epoch": 3,
        "transaction_timeout_ms": 60000, "transaction_status": 1,
        "transaction_partitions": [{"topic": "t", "partition_ids": [0, 2]}],
        "transaction_last_update_timestamp_ms": 10, "transaction_start_timestamp_ms": 9,
        "client_transaction_version": 2,
    }
    data = (
        struct.pack(">qhib", 5, 3, 60000, 1)
        + uvarint(2) + uvarint(2) + b"t" + uvarint(3) + struct.pack(">ii", 0, 2) + b"\x00"
        + struct.pack(">qq", 10, 9)
        # tags in ascending order; next_producer_id is at its default and not written
        + uvarint(2) + uvarint(0) + uvarint(8) + struct.pack(">q", 4)
        + uvarint(2) + uvarint(2) + struct.pack(">h", 2)
    )
    both_ways(TLV, 1, obj, data)
    # Kafka's JSON view: schema order, the tagged field at its default (next_producer_id) left out
    assert list(decode_message(TLV, 1, data)[0]) == [
        "producer_id", "previous_producer_id", "producer_epoch", "transaction_timeout_ms",
        "transaction_status", "transaction_partitions", "transaction_last_update_timestamp_ms",
        "transaction_start_timestamp_ms", "client_transaction_version",
    ]
    v0 = {k: v for k, v in obj.items() if k not in ("previous_producer_id", "next_producer_id", "client_transaction_version")}
    v0["transaction_partitions"] = None
    data0 = struct.pack(">qhib", 5, 3, 60000, 1) + struct.pack(">i", -1) + struct.pack(">qq", 10, 9)
    both_ways(TLV, 0, v0, data0)


def test_unknown_tagged_fields_are_kept_reported_and_rewritten():
    base = encode_message(CGCMA, 0, {"member_epoch": 1, "previous_member_epoch": 0, "state": 0,
                                     "assigned_partitions": [], "partitions_pending_revocation": []})
    assert base.endswith(b"\x00")
    data = base[:-1] + uvarint(2) + uvarint(7) + uvarint(2) + b"\xde\xad" + uvarint(300) + uvarint(0)
    warnings: list[str] = []
    obj, end = decode_message(CGCMA, 0, data, warnings=warnings)
    assert end == len(data)
    assert obj["_unknown_tagged_fields"] == [{"tag": 7, "data": b"\xde\xad"}, {"tag": 300, "data": b""}]
    assert len(warnings) == 2 and "unknown tagged field 7" in warnings[0]
    assert encode_message(CGCMA, 0, obj) == data


def test_nested_tagged_field_and_nullable_tagged_struct():
    uuid = uuid_to_str(bytes(range(16)))
    obj = {
        "member_epoch": 3, "previous_member_epoch": 2, "state": 1,
        "assigned_partitions": [{"topic_id": uuid, "partitions": [1], "assignment_epochs": [3]}],
        # absent: Kafka's default for a tagged array whose JSON default is null is the empty list
        "partitions_pending_revocation": [{"topic_id": uuid, "partitions": []}],
    }
    tp1 = bytes(range(16)) + uvarint(2) + struct.pack(">i", 1) + uvarint(1) + uvarint(0) + uvarint(5) + uvarint(2) + struct.pack(">i", 3)
    tp2 = bytes(range(16)) + uvarint(1) + b"\x00"
    data = struct.pack(">iib", 3, 2, 1) + uvarint(2) + tp1 + uvarint(2) + tp2 + b"\x00"
    both_ways(CGCMA, 0, obj, data)

    member = {"instance_id": None, "rack_id": "r", "client_id": "c", "client_host": "h",
              "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
              "rebalance_timeout_ms": -1, "server_assignor": "uniform",
              "classic_member_metadata": {"session_timeout_ms": 45000,
                                          "supported_protocols": [{"name": "range", "metadata": b"\x00"}]}}
    cmm = b"\x01" + struct.pack(">i", 45000) + uvarint(2) + uvarint(6) + b"range" + uvarint(2) + b"\x00" + b"\x00" + b"\x00"
    data = (b"\x00" + uvarint(2) + b"r" + uvarint(2) + b"c" + uvarint(2) + b"h" + uvarint(2) + uvarint(2) + b"t"
            + b"\x00" + struct.pack(">i", -1) + uvarint(8) + b"uniform"
            + uvarint(1) + uvarint(0) + uvarint(len(cmm)) + cmm)
    both_ways(CGMV, 0, member, data)
    # Null is written explicitly, as Kafka writes it (tag 0, size 1, varint marker 0): the spec's
    # default is JSON null, i.e. the empty struct, so null is not the default.
    member_null = dict(member, classic_member_metadata=None)
    data_null = data[: data.index(b"uniform") + 7] + uvarint(1) + uvarint(0) + uvarint(1) + b"\x00"
    both_ways(CGMV, 0, member_null, data_null)
    # The empty struct is the default: not written, and read back from an absent tag.
    member_empty = dict(member, classic_member_metadata={"session_timeout_ms": 0, "supported_protocols": []})
    both_ways(CGMV, 0, member_empty, data[: data.index(b"uniform") + 7] + b"\x00")


# -- errors: exact reason, position and path ----------------------------------------------------


def err(schema, version, data) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode_message(schema, version, data, context="value")
    return info.value


def test_error_names_position_and_path():
    member = {"member_id": "m", "group_instance_id": None, "client_id": "c", "client_host": "h",
              "rebalance_timeout": 1, "session_timeout": 2, "subscription": b"abc", "assignment": b""}
    obj = {"protocol_type": "consumer", "generation": 1, "protocol": "range", "leader": "m",
           "current_state_timestamp": 0, "members": [member, member, member]}
    data = bytearray(encode_message(GMV, 3, obj))
    # third member's subscription length: patch it to claim more than what is left
    third = data.rindex(b"\x00\x00\x00\x03abc")
    data[third:third + 4] = struct.pack(">i", 10_000)
    e = err(GMV, 3, bytes(data))
    assert e.position == third
    assert e.context == "value.members[2].subscription"
    assert e.reason == f"length 10000 exceeds {len(data) - third - 4} bytes remaining"


def test_array_count_guarded_before_allocation():
    data = struct.pack(">h", 1) + b"x" + struct.pack(">i", 1) + struct.pack(">hhq", -1, -1, 0) + struct.pack(">i", 2**31 - 1)
    e = err(GMV, 2, data)
    assert e.context == "value.members"
    assert "array count 2147483647" in e.reason
    assert e.position == len(data) - 4


def test_null_in_non_nullable_and_negative_lengths():
    e = err(OCV, 3, struct.pack(">qih", 1, 1, -1) + b"\x00" * 8)
    assert e.context == "value.metadata" and e.position == 12 and "non-nullable" in e.reason
    # a nullable field: Kafka's generated read() takes any negative length as null
    w: list[str] = []
    obj, _ = decode_message(GMV, 0, struct.pack(">h", 1) + b"x" + struct.pack(">i", 0) + struct.pack(">hhi", -2, -1, 0),
                            warnings=w)
    assert obj["protocol"] is None and w == ["length -2 of protocol at byte 7 read as null, as Kafka does"]
    # a 5-byte varint of 2**32 - 1 is -1 as a Java int: compact length -2, null in a nullable field
    w = []
    obj, _ = decode_message(CGMV, 0, b"\xff\xff\xff\xff\x0f" + b"\x00" + b"\x01\x01" + b"\x01" + b"\x00"
                            + struct.pack(">i", 1) + b"\x00" + b"\x00", warnings=w)
    assert obj["instance_id"] is None and obj["rack_id"] is None
    assert w == ["length -2 of instance_id at byte 0 read as null, as Kafka does"]


def test_varint_too_long_and_truncated():
    e = err(CGCMA, 0, struct.pack(">iib", 1, 1, 0) + b"\x80\x80\x80\x80\x80\x01")
    assert "longer than 5 bytes" in e.reason and e.position == 9
    e = err(CGCMA, 0, struct.pack(">iib", 1, 1, 0) + b"\x80")
    assert "truncated varint" in e.reason and e.position == 9


def test_tagged_field_size_mismatch_and_overflow():
    base = encode_message(TLV, 1, {"producer_id": 1, "producer_epoch": 0, "transaction_timeout_ms": 1,
                                   "transaction_status": 0, "transaction_partitions": None,
                                   "transaction_last_update_timestamp_ms": 0,
                                   "transaction_start_timestamp_ms": 0})
    body = base[:-1]
    e = err(TLV, 1, body + uvarint(1) + uvarint(0) + uvarint(9) + b"\x00" * 9)
    assert "declared 9 bytes but its value took 8" in e.reason
    e = err(TLV, 1, body + uvarint(1) + uvarint(0) + uvarint(50) + b"\x00" * 9)
    assert "size 50 exceeds 9 bytes remaining" in e.reason and e.position == len(body) + 1


def test_invalid_utf8_is_replaced_with_a_warning():
    data = struct.pack(">qih", 1, 1, 2) + b"\xff\xfe" + struct.pack(">q", 0)
    w: list[str] = []
    obj, _ = decode_message(OCV, 3, data, warnings=w)
    assert obj["metadata"] == "\ufffd\ufffd"
    assert w and "invalid UTF-8" in w[0]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.sampled_from(CASES))
def test_random_bytes_only_raise_decode_errors(data, case):
    schema, version = case
    try:
        obj, end = decode_message(schema, version, data, warnings=[])
    except DecodeError as e:
        assert 0 <= e.position <= len(data)
    else:
        assert end <= len(data)


def test_version_ranges_and_names():
    assert 3 in VersionRange.parse("3+") and 2 not in VersionRange.parse("3+")
    assert 1 in VersionRange.parse("1") and 2 not in VersionRange.parse("1")
    assert 0 not in VersionRange.parse("none")
    assert str(VersionRange.parse("0-2")) == "0-2"
    assert camel_to_snake("ConsumerGroupTargetAssignmentMemberValue") == "consumer_group_target_assignment_member_value"
    assert camel_to_snake("leaderEpoch") == "leader_epoch"
    assert camel_to_snake("TopicId") == "topic_id"
    raw = bytes(range(16))
    assert uuid_from_str(uuid_to_str(raw)) == raw
    assert uuid_to_str(b"\x00" * 16) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_encoder_rejects_what_the_version_cannot_carry():
    with pytest.raises(ValueError, match="non-nullable"):
        encode_message(OCV, 3, {"offset": 1, "metadata": None, "commit_timestamp": 0})
    with pytest.raises(ValueError, match="does not fit int32"):
        encode_message(OCV, 3, {"offset": 1, "leader_epoch": 2**31, "metadata": "", "commit_timestamp": 0})
    with pytest.raises(ValueError, match="no version 5"):
        encode_message(OCV, 5, {})
    # an ignorable field the version lacks is dropped, as Kafka's generated write() does
    assert encode_message(OCV, 1, {"offset": 1, "leader_epoch": 9, "metadata": "", "commit_timestamp": 0}) == \
        encode_message(OCV, 1, {"offset": 1, "metadata": "", "commit_timestamp": 0})
    strict = MessageSchema.of("T", versions="0-1", flexible="none", source="T.json",
                              fields=[F("a", "int32", "1+")])
    with pytest.raises(ValueError, match="not in version 0"):
        encode_message(strict, 0, {"a": 5})


FLEXIBLE_CASES = [(s, v) for s, v in CASES if s.is_flexible(v)]


@pytest.mark.parametrize("schema,version", FLEXIBLE_CASES, ids=[f"{s.name}-v{v}" for s, v in FLEXIBLE_CASES])
def test_unknown_top_level_tags_survive_a_round_trip(schema, version):
    known = {f.tag for f in schema.fields if f.tagged_in(version)}

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        message_strategy(schema, version),
        st.dictionaries(st.integers(0, 2000).filter(lambda t: t not in known), st.binary(max_size=6),
                        min_size=1, max_size=3),
    )
    def check(obj, unknown):
        raw = [{"tag": t, "data": d} for t, d in sorted(unknown.items())]
        data = encode_message(schema, version, dict(obj, _unknown_tagged_fields=raw))
        w: list[str] = []
        got, end = decode_message(schema, version, data, warnings=w)
        assert end == len(data)
        assert got == dict(kafka_view(schema.fields, version, obj), _unknown_tagged_fields=raw)
        assert len(w) == len(raw)
        assert encode_message(schema, version, got) == data

    check()
