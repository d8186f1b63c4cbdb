"""Kafka's own decoding of two real __consumer_offsets segments, record by record, both ways."""

from __future__ import annotations

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
    assert got["record_type"] == want["record_type"]
    assert got["key_version"] == want["record_type"]
    assert got["kind"] == want["kind"]
    assert got["tombstone"] == want["tombstone"]
    assert got["key"] == want["key"]
    assert got["value_version"] == want["value_version"]
    assert got["value"] == want["value"]
    assert got["warnings"] == []


@pytest.mark.parametrize("where,key,value,golden", RECORDS, ids=[r[0] for r in RECORDS])
def test_encode_gives_kafkas_bytes(where, key, value, golden):
    rec = decode_offsets_record(key, value)
    # the version Kafka 4.x picks by default, and the version read back
    assert encode_offsets_record(rec.kind, rec.key, rec.value) == (key, value)
    assert encode_offsets_record(rec.kind, rec.key, rec.value, value_version=rec.value_version) == (key, value)


def _members():
    for where, key, value, golden in RECORDS:
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
