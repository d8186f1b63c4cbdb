"""Every record of Kafka's KIP-848 segments decodes as ``GroupCoordinatorRecordSerde`` decodes it
(decode.jsonl: the generated ``*JsonConverter`` view), through the replay's own entry decoder."""

from __future__ import annotations

import base64
import re
import struct

import pytest

from kgtool.coordinator.records import decode_offsets_record, encode_offsets_record
from kgtool.coordinator.schema import decode_message
from kgtool.coordinator.release_specs import declared_schema

CGMV = declared_schema("ConsumerGroupMemberMetadataValue")
from kgtool.offsets.decode import entries_from_file
from tests.kip848.golden import IDS, SCENARIOS, jsonl, segment


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def kafka_json(obj):
    """kgtool's decoded dict in the JsonConverter's spelling (camelCase, bytes as base64), without
    the consumer-protocol views kgtool adds beside a classic member's bytes (``*_decoded``)."""
    if isinstance(obj, dict):
        return {camel(k): kafka_json(v) for k, v in obj.items() if not k.endswith("_decoded")}
    if isinstance(obj, list):
        return [kafka_json(v) for v in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode()
    return obj


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_every_record_decodes_as_kafka_decodes_it(scenario):
    want = jsonl(scenario / "decode.jsonl")
    got = list(entries_from_file(segment(scenario), log_partition=0))
    assert len(got) == len(want)
    for e, w in zip(got, want):
        where = f"offset {w['offset']}"
        assert e.offset == w["offset"], where
        assert (e.timestamp, e.producer_id, e.producer_epoch) == (w["timestamp"], w["producer_id"], w["producer_epoch"])
        assert e.is_transactional == w["transactional"] and e.is_control == w["control"], where
        if w["control"]:
            assert (e.kind, e.control_type, e.coordinator_epoch) == ("control", w["control_type"], w["coordinator_epoch"])
            continue
        assert e.problem is None, (where, e.problem)
        assert kafka_json(e.key) == w["key"], where
        assert e.value_version == (w["value_version"] if w["value"] is not None else e.value_version)
        assert kafka_json(e.value) == w["value"], where
        # the key's class is the record type's: ConsumerGroupMemberMetadataKey <-> consumer_group_member_metadata
        assert re.sub(r"(?<!^)([A-Z])", r"_\1", w["key_class"][: -len("Key")]).lower() == e.kind


def _raw_records(scenario):
    from kgtool.codec import scan_file

    for b in scan_file(segment(scenario)):
        if not b.is_control:
            yield from b.records


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_every_record_encodes_back_to_kafkas_bytes(scenario):
    for r in _raw_records(scenario):
        rec = decode_offsets_record(r.key, r.value)
        assert encode_offsets_record(rec.kind, rec.key, rec.value, value_version=rec.value_version) == (
            r.key, r.value), r.offset


def _uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


HEAD = (b"\x00" + b"\x00" + _uv(2) + b"c" + _uv(2) + b"h" + _uv(1) + b"\x01" + struct.pack(">i", 30000)
        + _uv(8) + b"uniform")


def test_classic_member_metadata_null_marker_is_a_varint():
    """MessageDataGenerator: a tagged nullable struct is [tag, size, uvarint marker (0 = null), struct];
    Java reads the marker into an int, so one of 2**31 or more is negative: null as well."""
    assert decode_message(CGMV, 0, HEAD + b"\x01\x00\x01\x00")[0]["classic_member_metadata"] is None
    huge = _uv(0x80000000)
    assert decode_message(CGMV, 0, HEAD + b"\x01\x00" + _uv(len(huge)) + huge)[0]["classic_member_metadata"] is None
    body = struct.pack(">i", 10000) + _uv(2) + _uv(6) + b"range" + _uv(2) + b"\x07" + b"\x00" + b"\x00"
    present = HEAD + b"\x01\x00" + _uv(len(body) + 1) + b"\x01" + body
    assert decode_message(CGMV, 0, present)[0]["classic_member_metadata"] == {
        "session_timeout_ms": 10000, "supported_protocols": [{"name": "range", "metadata": b"\x07"}]}


def test_classic_member_metadata_absent_is_the_empty_struct():
    """An encoder that leaves the tag out (Kafka's never does) gives Kafka's field default: the
    spec's JSON null default is no default, so ``new ClassicMemberMetadata()``, not null."""
    v, _ = decode_message(CGMV, 0, HEAD + b"\x00")
    assert "classic_member_metadata" not in v  # at its default: left out of the view, as Kafka's JSON does
    from kgtool.coordinator.schema import default_value

    f = next(f for f in CGMV.fields if f.name == "classic_member_metadata")
    assert default_value(f) == {"session_timeout_ms": 0, "supported_protocols": []}
