"""Record-level dispatch: every record type, tombstones, unknown types/versions, the fast path."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool import native
from kgtool.coordinator import records
from kgtool.coordinator.records import (
    CoordinatorRecord,
    decode_offset_commit,
    decode_offsets_record,
    decode_share_state_record,
    decode_transaction_record,
    encode_offsets_record,
    encode_share_state_record,
    encode_transaction_record,
)
from kgtool.coordinator.schema import DECODER_FAILURES, strict_decoder
from kgtool.coordinator.schemas import (
    OFFSETS_RECORD_TYPES,
    SHARE_STATE_RECORD_TYPES,
    TRANSACTION_RECORD_TYPES,
)
from kgtool.errors import DecodeError

from tests.coordinator.strategies import kafka_view, message_strategy

OFFSETS_CASES = [
    (t, v)
    for t in OFFSETS_RECORD_TYPES.values()
    for v in range(t.value.valid_versions.lowest, t.value.valid_versions.highest + 1)
]


def test_record_type_ids_are_kafkas():
    # CoordinatorRecordType ids (the apiKey of each coordinator-key spec)
    expected = {
        0: "legacy_offset_commit", 1: "offset_commit", 2: "group_metadata",
        3: "consumer_group_metadata", 4: "consumer_group_partition_metadata",
        5: "consumer_group_member_metadata", 6: "consumer_group_target_assignment_metadata",
        7: "consumer_group_target_assignment_member", 8: "consumer_group_current_member_assignment",
        9: "share_group_partition_metadata", 10: "share_group_member_metadata",
        11: "share_group_metadata", 12: "share_group_target_assignment_metadata",
        13: "share_group_target_assignment_member", 14: "share_group_current_member_assignment",
        15: "share_group_state_partition_metadata", 16: "consumer_group_regular_expression",
        17: "streams_group_metadata",
        19: "streams_group_member_metadata", 20: "streams_group_target_assignment_metadata",
        21: "streams_group_target_assignment_member", 22: "streams_group_current_member_assignment",
        23: "streams_group_topology",
    }
    assert {i: t.kind for i, t in OFFSETS_RECORD_TYPES.items()} == expected
    assert {i: t.kind for i, t in TRANSACTION_RECORD_TYPES.items()} == {0: "transaction_log"}
    assert {i: t.kind for i, t in SHARE_STATE_RECORD_TYPES.items()} == {0: "share_snapshot", 1: "share_update"}


@pytest.mark.parametrize("rt,version", OFFSETS_CASES, ids=[f"{t.kind}-v{v}" for t, v in OFFSETS_CASES])
def test_every_offsets_record_type_round_trips(rt, version):
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(message_strategy(rt.key, 0), message_strategy(rt.value, version), st.booleans())
    def check(key, value, tombstone):
        kb, vb = encode_offsets_record(rt.kind, key, None if tombstone else value, value_version=version)
        assert struct.unpack(">h", kb[:2])[0] == rt.id
        rec = decode_offsets_record(kb, vb)
        assert (rec.kind, rec.record_type, rec.key_version) == (rt.kind, rt.id, rt.id)
        assert rec.key == key
        assert rec.tombstone is tombstone
        if tombstone:
            assert vb is None and rec.value is None and rec.value_version is None
        else:
            assert rec.value_version == version
            got = {k: v for k, v in rec.value.items()}
            for m in got.get("members") or ():
                m.pop("subscription_decoded", None)
                m.pop("assignment_decoded", None)
            assert got == kafka_view(rt.value.fields, version, value)
        assert encode_offsets_record(rec.kind, rec.key, rec.value, value_version=rec.value_version) == (kb, vb)
        json.dumps(rec.to_json())  # always JSON-able

    check()


@settings(max_examples=50, deadline=None)
@given(message_strategy(TRANSACTION_RECORD_TYPES[0].key, 0),
       message_strategy(TRANSACTION_RECORD_TYPES[0].value, 0),
       message_strategy(TRANSACTION_RECORD_TYPES[0].value, 1))
def test_transaction_records_round_trip(key, v0, v1):
    for version, value in ((0, v0), (1, v1), (None, v1)):
        kb, vb = encode_transaction_record(key, value, value_version=version)
        rec = decode_transaction_record(kb, vb)
        assert rec.kind == "transaction_log" and rec.record_type == 0
        v = 1 if version is None else version
        assert rec.key == key and rec.value == kafka_view(TRANSACTION_RECORD_TYPES[0].value.fields, v, value)
        assert rec.value_version == v
    kb, vb = encode_transaction_record(key, None)
    rec = decode_transaction_record(kb, vb)
    assert rec.tombstone and rec.value is None


@pytest.mark.parametrize("rt", list(SHARE_STATE_RECORD_TYPES.values()), ids=lambda t: t.kind)
def test_share_state_records_round_trip(rt):
    @settings(max_examples=30, deadline=None)
    @given(message_strategy(rt.key, 0), message_strategy(rt.value, 0))
    def check(key, value):
        kb, vb = encode_share_state_record(rt.kind, key, value)
        rec = decode_share_state_record(kb, vb)
        assert (rec.kind, rec.key, rec.value) == (rt.kind, key, kafka_view(rt.value.fields, 0, value))

    check()


# -- the offset-commit fast path agrees with the generic decoder --------------------------------

OCV = OFFSETS_RECORD_TYPES[1].value


def generic(key, value):
    return records._decode_generic(key, value, OFFSETS_RECORD_TYPES, "__consumer_offsets")


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["offset_commit", "legacy_offset_commit"]),
    message_strategy(OFFSETS_RECORD_TYPES[1].key, 0),
    st.integers(0, 4).flatmap(lambda v: st.tuples(st.just(v), message_strategy(OCV, v))),
    st.booleans(),
)
def test_fast_path_equals_generic(kind, key, version_value, tombstone):
    version, value = version_value
    kb, vb = encode_offsets_record(kind, key, None if tombstone else value, value_version=version)
    records._KEY_CACHE.clear()
    fast = records._fast_offsets_record(kb, vb)
    slow = generic(kb, vb)
    assert decode_offsets_record(kb, vb) == slow
    if fast is not None:  # the fast path may decline (e.g. long compact strings), never differ
        assert fast == slow
    flat = decode_offset_commit(kb, vb)
    if flat is not None:
        assert flat[:4] == (slow.record_type, key["group"], key["topic"], key["partition"])
        assert flat[4] == slow.value_version
        if not tombstone:
            assert flat[5] == value["offset"] and flat[7] == value["metadata"]
            assert flat[8] == value["commit_timestamp"]
            assert flat[6] == value.get("leader_epoch") and flat[9] == value.get("expire_timestamp")


def test_fast_path_covers_what_kafka_writes():
    key = {"group": "g", "topic": "t", "partition": 0}
    for value, version in (
        ({"offset": 1, "leader_epoch": 2, "metadata": "", "commit_timestamp": 3}, 3),
        ({"offset": 1, "leader_epoch": 2, "metadata": "meta", "commit_timestamp": 3}, 3),
        ({"offset": 1, "metadata": "", "commit_timestamp": 3, "expire_timestamp": 4}, 1),
        ({"offset": 1, "metadata": "", "commit_timestamp": 3}, 0),
        ({"offset": 1, "metadata": "", "commit_timestamp": 3}, 2),
        ({"offset": 1, "leader_epoch": 2, "metadata": "m", "commit_timestamp": 3}, 4),
    ):
        kb, vb = encode_offsets_record("offset_commit", key, value, value_version=version)
        assert records._fast_offsets_record(kb, vb) is not None
        assert decode_offset_commit(kb, vb) is not None
    assert decode_offset_commit(*encode_offsets_record("group_metadata", {"group": "g"}, None)) is None


def test_offset_commit_key_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(records, "_KEY_CACHE_MAX", 4)
    records._KEY_CACHE.clear()
    for p in range(10):
        kb, vb = encode_offsets_record("offset_commit", {"group": "g", "topic": "t", "partition": p},
                                       {"offset": p, "metadata": "", "commit_timestamp": 0})
        assert decode_offsets_record(kb, vb).key["partition"] == p
        assert len(records._KEY_CACHE) <= 4


# -- unknown, tombstone, malformed ----------------------------------------------------------------


def test_unknown_record_type_is_kept_raw_with_a_warning():
    key = struct.pack(">h", 99) + b"whatever"
    value = struct.pack(">h", 0) + b"\x01\x02"
    rec = decode_offsets_record(key, value)
    assert rec.kind == "unknown" and rec.record_type == 99 and rec.value is None
    assert rec.raw_key == key and rec.raw_value == value and not rec.tombstone
    assert rec.warnings == ["unknown __consumer_offsets record type 99: key and value kept raw"]
    j = rec.to_json()
    assert j["raw_key"] == "AGN3aGF0ZXZlcg==" and j["raw_value"] == "AAABAg=="
    assert decode_offsets_record(struct.pack(">h", -1), None).kind == "unknown"
    assert decode_transaction_record(struct.pack(">h", 1) + b"x", None).kind == "unknown"


def test_unknown_value_version_keeps_the_key():
    kb, _ = encode_offsets_record("group_metadata", {"group": "g"}, None)
    rec = decode_offsets_record(kb, struct.pack(">h", 9) + b"future")
    assert rec.kind == "unknown" and rec.key == {"group": "g"} and rec.value_version == 9
    assert "unknown GroupMetadataValue version 9 (known 0-4)" in rec.warnings[0]
    kb, _ = encode_offsets_record("offset_commit", {"group": "g", "topic": "t", "partition": 1}, None)
    rec = decode_offsets_record(kb, struct.pack(">h", 5) + b"\x00" * 30)
    assert rec.kind == "unknown" and rec.value_version == 5


def test_trailing_bytes_are_a_warning():
    kb, vb = encode_offsets_record("offset_commit", {"group": "g", "topic": "t", "partition": 1},
                                   {"offset": 1, "leader_epoch": 1, "metadata": "", "commit_timestamp": 0})
    rec = decode_offsets_record(kb, vb + b"\x00\x00")
    assert rec.kind == "offset_commit" and rec.value["offset"] == 1
    assert rec.warnings == ["2 trailing bytes after the OffsetCommitValue v3 ignored"]
    rec = decode_offsets_record(kb + b"\x01", vb)
    assert rec.warnings == ["1 trailing bytes after the OffsetCommitKey ignored"]


@pytest.mark.parametrize(
    "key,value,position,context,reason",
    [
        (None, None, 0, "key", "a coordinator record needs a key, found null"),
        (b"\x00", None, 0, "key", "expected the 2-byte key version, 1 bytes present"),
        (b"\x00\x01\x00\x05ab", None, 2, "key.group", "length 5 exceeds 2 bytes remaining"),
        (b"\x00\x02\x00\x01g", b"\x00", 0, "value", "expected the 2-byte value version, 1 bytes present"),
        (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x03" + b"\x00" * 10, 10, "value.leader_epoch",
         "expected 4 bytes for int32, 2 remaining"),
    ],
)
def test_malformed_records_raise_with_position(key, value, position, context, reason):
    with pytest.raises(DecodeError) as info:
        decode_offsets_record(key, value)
    e = info.value
    assert (e.position, e.context, e.reason) == (position, context, reason)
    moved = e.located(source="seg.log", offset=1000, context="batch@0.records[3]." + e.context)
    assert str(moved) == f"seg.log: byte {1000 + position} (batch@0.records[3].{context}): {reason}"


def test_group_metadata_with_undecodable_subscription_is_a_warning():
    member = {"member_id": "m", "group_instance_id": None, "client_id": "c", "client_host": "h",
              "rebalance_timeout": 1, "session_timeout": 2,
              "subscription": b"\x00\x00\x00\x00\x00\x09", "assignment": b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"}
    kb, vb = encode_offsets_record("group_metadata", {"group": "g"},
                                   {"protocol_type": "consumer", "generation": 1, "protocol": "range",
                                    "leader": "m", "current_state_timestamp": 0, "members": [member]})
    rec = decode_offsets_record(kb, vb)
    m = rec.value["members"][0]
    assert m["subscription_decoded"] is None
    assert m["assignment_decoded"] == {"assigned_partitions": [], "user_data": None, "_version": 0}
    assert len(rec.warnings) == 1
    assert rec.warnings[0] == (
        "subscription of member 'm' not decoded: byte 2 of its 6 bytes (value.members[0].subscription.topics): "
        "array count 9 needs at least 18 bytes, 0 remaining"
    )
    # not a consumer group (e.g. Connect): the bytes stay opaque
    kb, vb = encode_offsets_record("group_metadata", {"group": "g"},
                                   {"protocol_type": "connect", "generation": 1, "protocol": "sessioned",
                                    "leader": "m", "current_state_timestamp": 0, "members": [member]})
    rec = decode_offsets_record(kb, vb)
    assert "subscription_decoded" not in rec.value["members"][0] and rec.warnings == []


# -- the compiled GroupMetadataValue decoder agrees with the schema's ----------------------------

GMV = OFFSETS_RECORD_TYPES[2].value


def schema_view(vb):
    """What the schema-generated decoder makes of a value, or None when it warns or fails."""
    warnings = []
    try:
        vd, end = strict_decoder(GMV, struct.unpack(">h", vb[:2])[0])(vb, 2, len(vb), warnings)
    except (DECODER_FAILURES + (struct.error, KeyError)):
        return None
    return vd if end == len(vb) and not warnings else None


def same_dicts(a, b):
    """Equal, with the keys in the same order (the members' too): JSON output shows the order."""
    return a == b and list(a) == list(b) and all(list(x) == list(y) for x, y in zip(a["members"], b["members"]))


compiled = pytest.mark.skipif(native.pure_forced(), reason="KGTOOL_PURE_PYTHON: no compiled decoder")


@compiled
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 4).flatmap(lambda v: st.tuples(st.just(v), message_strategy(GMV, v))), st.data())
def test_compiled_group_metadata_value_equals_the_schema_decoder(version_value, data):
    """Every version: the C decoder returns the generated decoder's dict, key order included,
    and declines (None) whatever that decoder warns about or rejects: truncated, damaged or
    extended bytes (tagged fields, trailing bytes, bad UTF-8, negative lengths)."""
    version, value = version_value
    _kb, vb = encode_offsets_record("group_metadata", {"group": "g"}, value, value_version=version)
    expect = schema_view(vb)
    got = records._group_metadata_value(vb)
    if "_unknown_tagged_fields" in repr(value):
        assert got is None
    else:
        assert expect is not None and got is not None and same_dicts(got, expect)
    cut = data.draw(st.integers(0, len(vb)), label="cut")
    at = data.draw(st.integers(0, max(len(vb) - 1, 0)), label="at")
    flipped = bytearray(vb)
    if flipped:
        flipped[at] ^= data.draw(st.integers(1, 255), label="xor")
    for damaged in (vb[:cut], bytes(flipped), vb + b"\x00"):
        got = records._group_metadata_value(damaged)
        if got is not None:
            expect = schema_view(damaged)
            assert expect is not None and same_dicts(got, expect)


@compiled
def test_compiled_group_metadata_value_declines_what_the_schema_decoder_warns_about():
    member = {"member_id": "m", "group_instance_id": None, "client_id": "c", "client_host": "/h",
              "rebalance_timeout": 1, "session_timeout": 2, "subscription": b"", "assignment": b""}
    value = {"protocol_type": "consumer", "generation": 1, "protocol": None, "leader": None,
             "current_state_timestamp": -1, "members": [member]}
    _kb, vb = encode_offsets_record("group_metadata", {"group": "g"}, value, value_version=3)
    assert same_dicts(records._group_metadata_value(vb), schema_view(vb))
    # protocol (nullable) with length -2: Kafka reads null, the schema decoder warns
    i = vb.index(b"\xff\xff")
    assert records._group_metadata_value(vb[:i] + b"\xff\xfe" + vb[i + 2:]) is None
    # invalid UTF-8 in member_id: the schema decoder's lenient retry replaces it and warns
    j = vb.index(b"\x00\x01m")
    assert records._group_metadata_value(vb[:j + 2] + b"\xff" + vb[j + 3:]) is None
    rec = decode_offsets_record(_kb, vb[:j + 2] + b"\xff" + vb[j + 3:])
    assert rec.value["members"][0]["member_id"] == "\ufffd" and rec.warnings
    assert records._group_metadata_value(b"\x00\x05" + vb[2:]) is None  # unknown version


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=48), st.none() | st.binary(max_size=64))
def test_random_records_never_crash(key, value):
    for fn in (decode_offsets_record, decode_transaction_record, decode_share_state_record):
        try:
            rec = fn(key, value)
        except DecodeError as e:
            assert e.position is not None and e.context
        else:
            assert isinstance(rec, CoordinatorRecord)
            json.dumps(rec.to_json())


def test_the_reference_lists_every_record_type():
    from pathlib import Path

    section = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "record-types.md").read_text()
    from kgtool.coordinator.schemas import record_types_markdown

    # the table is generated from the declarations: python -m kgtool.docs
    assert record_types_markdown() in section
    for rt in OFFSETS_RECORD_TYPES.values():
        assert f"| {rt.id} | `{rt.kind}` |" in section
    for kind in ("transaction_log", "share_snapshot", "share_update"):
        assert f"`{kind}`" in section


def test_offset_commit_v4_with_unknown_tags_is_json_able():
    kb, vb = encode_offsets_record("offset_commit", {"group": "g", "topic": "t", "partition": 0},
                                   {"offset": 1, "leader_epoch": 0, "metadata": "", "commit_timestamp": 0},
                                   value_version=4)
    vb = vb[:-1] + b"\x01\x05\x01\xff"  # one unknown tag (5) of one byte
    rec = decode_offsets_record(kb, vb)
    assert rec.value["_unknown_tagged_fields"] == [{"tag": 5, "data": b"\xff"}]
    assert rec.warnings == ["unknown tagged field 5 (1 bytes) in OffsetCommitValue v4 kept raw"]
    assert json.loads(json.dumps(rec.to_json()))["value"]["_unknown_tagged_fields"] == [{"tag": 5, "data": "/w=="}]
    assert encode_offsets_record(rec.kind, rec.key, rec.value, value_version=4) == (kb, vb)


def test_bytes_like_inputs():
    kb, vb = encode_offsets_record("offset_commit", {"group": "g", "topic": "t", "partition": 0},
                                   {"offset": 1, "leader_epoch": 0, "metadata": "m", "commit_timestamp": 0})
    for conv in (bytearray, memoryview):
        assert decode_offset_commit(conv(kb), conv(vb)) == decode_offset_commit(kb, vb)
        assert decode_offsets_record(conv(kb), conv(vb)) == decode_offsets_record(kb, vb)
        assert decode_transaction_record(*encode_transaction_record({"transactional_id": "x"}, None)).key == {
            "transactional_id": "x"}
