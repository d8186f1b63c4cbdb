"""Kafka's own decoding of two real __consumer_offsets segments, record by record, both ways."""

from __future__ import annotations

import json

import pytest

from kgtool.coordinator.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgtool.coordinator.records import decode_offsets_record, encode_offsets_record

from tests.coordinator.golden import golden_records, snake_keys

RECORDS = golden_records()


def test_every_scenario_is_there():
    kinds = {g["kind"] for _, _, _, g in RECORDS}
    assert len(RECORDS) >= 50
    assert kinds == {"offset_commit", "group_metadata"}
    assert any(g["tombstone"] for _, _, _, g in RECORDS)
    assert any(g.get("valueVersion") == 1 for _, _, _, g in RECORDS)


@pytest.mark.parametrize("where,key,value,golden", RECORDS, ids=[r[0] for r in RECORDS])
def test_decode_matches_kafka(where, key, value, golden):
    rec = decode_offsets_record(key, value)
    got = rec.to_json()
    want = snake_keys(golden)
    assert rec.key_version == rec.record_type == want["record_type"]
    assert rec.warnings == []
    # field by field first (readable failures), then the whole object, order included
    for name in ("record_type", "kind", "tombstone", "key", "value_version", "value"):
        assert got[name] == want[name], name
    assert json.dumps(got) == json.dumps(want)


@pytest.mark.parametrize("where,key,value,golden", RECORDS, ids=[r[0] for r in RECORDS])
def test_encode_gives_kafkas_bytes(where, key, value, golden):
    rec = decode_offsets_record(key, value)
    # the version Kafka 4.x picks by default, and the version read back
    assert encode_offsets_record(rec.kind, rec.key, rec.value) == (key, value)
    assert encode_offsets_record(rec.kind, rec.key, rec.value, value_version=rec.value_version) == (key, value)


def _members():
    for where, _key, _value, golden in RECORDS:
        if golden["kind"] == "group_metadata" and golden["value"]:
            for i, m in enumerate(golden["value"]["members"]):
                yield f"{where}:m{i}", m


MEMBERS = list(_members())


@pytest.mark.parametrize("where,member", MEMBERS, ids=[m[0] for m in MEMBERS])
def test_consumer_protocol_matches_kafka(where, member):
    import base64

    sub = base64.b64decode(member["subscription"])
    asg = base64.b64decode(member["assignment"])
    got_sub = decode_subscription(sub)
    got_asg = decode_assignment(asg)
    from kgtool.coordinator.records import to_jsonable

    assert to_jsonable(got_sub) == snake_keys(member["subscriptionDecoded"])
    assert to_jsonable(got_asg) == snake_keys(member["assignmentDecoded"])
    assert encode_subscription(got_sub) == sub
    assert encode_assignment(got_asg) == asg


# -- fuzz around Kafka's own records: truncations and bit flips give kgtool errors only ----------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kgtool.coordinator.records import CoordinatorRecord  # noqa: E402
from kgtool.errors import DecodeError  # noqa: E402


@pytest.mark.parametrize("where,key,value,golden", RECORDS[:12], ids=[r[0] for r in RECORDS[:12]])
def test_every_truncation_is_an_error_at_or_before_the_cut(where, key, value, golden):
    for cut in range(len(key)):
        with pytest.raises(DecodeError) as info:
            decode_offsets_record(key[:cut], value)
        assert info.value.context.startswith("key") and info.value.position <= cut
    if value is not None:
        for cut in range(len(value)):
            with pytest.raises(DecodeError) as info:
                decode_offsets_record(key, value[:cut])
            assert info.value.context.startswith("value") and info.value.position <= cut


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(RECORDS), st.data())
def test_bit_flips_give_a_record_or_a_decode_error(record, data):
    _, key, value, _ = record
    target = data.draw(st.sampled_from(["key", "value"] if value else ["key"]))
    raw = bytearray(key if target == "key" else value)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
    k, v = (bytes(raw), value) if target == "key" else (key, bytes(raw))
    try:
        rec = decode_offsets_record(k, v)
    except DecodeError as e:
        part = e.context.split(".")[0]
        # A flipped key can change the record type, and then the intact value is read with
        # another schema: the error is then (rightly) in the value.
        assert part == target or (target == "key" and part == "value"), e
        assert 0 <= e.position <= len(raw if part == target else value)
    else:
        assert isinstance(rec, CoordinatorRecord)


COMMITS = [r for r in RECORDS if r[3]["kind"] == "offset_commit"]


@pytest.mark.parametrize("where,key,value,golden", COMMITS, ids=[r[0] for r in COMMITS])
def test_bulk_tuple_path_matches_kafka(where, key, value, golden):
    from kgtool.coordinator.records import decode_offset_commit

    got = decode_offset_commit(key, value)
    k, v = golden["key"], golden["value"] or {}
    assert got == (
        golden["recordType"], k["group"], k["topic"], k["partition"], golden["valueVersion"],
        v.get("offset"), v.get("leaderEpoch"), v.get("metadata"), v.get("commitTimestamp"),
        v.get("expireTimestamp"), v.get("topicId"),
    )
