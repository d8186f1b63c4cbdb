"""Every record Kafka 4.4's own serdes wrote decodes as Kafka decodes it, and encodes back to its bytes.

``fixtures/kafka44/`` (``../shared/golden/kafka44``): segments of ``__consumer_offsets``,
``__transaction_state`` and ``__share_group_state`` serialized by Kafka 4.4 (release branch head
``87943b2f``): every record type and value version, random field values, tagged fields present
and absent. Beside each ``NNN.log``, ``NNN.decode.jsonl`` is Kafka's generated
``*JsonConverter.write`` view of every key and value, and for GroupMetadata values Kafka's
``ConsumerProtocol`` decoding of each member's subscription and assignment.
"""

from __future__ import annotations

import base64
import collections
import json
from pathlib import Path

import pytest

from kgtool.codec import scan_file
from kgtool.coordinator.records import (
    RECORD_DECODERS,
    decode_offsets_record,
    encode_offsets_record,
    encode_share_state_record,
    encode_transaction_record,
    to_jsonable,
)
from kgtool.coordinator.schema import UNKNOWN_TAGGED_FIELD
from tests.kip848.test_decode import camel, kafka_json

KAFKA44 = Path(__file__).resolve().parents[2] / "fixtures" / "kafka44"
LOGS = sorted(KAFKA44.glob("*/*/*.log"))
IDS = [f"{p.parent.parent.name}/{p.parent.name}/{p.stem}" for p in LOGS]


def topic_of(log: Path) -> str:
    """``__consumer_offsets-3`` -> ``__consumer_offsets``; a coordinator scenario's directory
    holds one ``__consumer_offsets`` partition."""
    name = log.parent.name
    return name.rsplit("-", 1)[0] if name.startswith("__") else "__consumer_offsets"


DECODER = {"__consumer_offsets": "offsets", "__transaction_state": "txn", "__share_group_state": "share"}


def kafka_lines(log: Path) -> dict[int, dict]:
    lines = (json.loads(x) for x in log.with_suffix(".decode.jsonl").read_text("utf-8").split("\n") if x.strip())
    return {w["offset"]: w for w in lines if not w["control"]}


def records(log: Path):
    for b in scan_file(str(log)):
        if not b.is_control:
            yield from b.records


@pytest.mark.parametrize("log", LOGS, ids=IDS)
def test_every_record_decodes_as_kafka_44_decodes_it(log):
    want = kafka_lines(log)
    decode = RECORD_DECODERS[DECODER[topic_of(log)]]
    seen = 0
    for r in records(log):
        w = want[r.offset]
        rec = decode(r.key, r.value)
        where = f"{log.name} offset {r.offset} ({w['record_type_name']})"
        assert rec.kind != "unknown", (where, rec.warnings)
        assert rec.record_type == w["record_type"], where
        assert rec.tombstone == w["tombstone"], where
        assert kafka_json(rec.key) == w["key"], where
        assert kafka_json(rec.value) == w["value"], where
        if not w["tombstone"]:
            assert rec.value_version == w["value_version"], where
        # zero unknown-tag notes on what Kafka 4.4 writes
        assert not [x for x in rec.warnings if x.startswith(UNKNOWN_TAGGED_FIELD)], (where, rec.warnings)
        seen += 1
    assert seen == len(want)


def _kafka_embedded(part: dict):
    """Kafka's ConsumerProtocol view of one subscription/assignment, or None for an error."""
    return None if "error" in part else dict(part["data"], _version=part["version"])


@pytest.mark.parametrize("log", [p for p in LOGS if topic_of(p) == "__consumer_offsets"],
                         ids=[i for p, i in zip(LOGS, IDS) if topic_of(p) == "__consumer_offsets"])
def test_embedded_consumer_protocol_decodes_as_kafkas_consumer_protocol(log):
    want = kafka_lines(log)
    for r in records(log):
        w = want[r.offset]
        if "members" not in w.get("embedded", {}):  # GroupMetadata values (not a classic member's protocols)
            continue
        rec = decode_offsets_record(r.key, r.value)
        for member, kafka in zip(rec.value["members"], w["embedded"]["members"]):
            assert member["member_id"] == kafka["memberId"]
            for part in ("subscription", "assignment"):
                got = member[f"{part}_decoded"]
                expect = _kafka_embedded(kafka[part])
                where = (log.name, r.offset, member["member_id"], part, kafka[part])
                if expect is None:
                    assert got is None, where
                    continue
                assert got is not None, where
                view = {camel(k) if k != "_version" else k: v for k, v in to_jsonable(got).items()}
                view = {k: kafka_json(v) if k != "_version" else v for k, v in view.items()}
                assert {k: v for k, v in view.items() if k in expect} == expect, where


@pytest.mark.parametrize("log", LOGS, ids=IDS)
def test_every_record_encodes_back_to_kafkas_bytes(log):
    topic = topic_of(log)
    decode = RECORD_DECODERS[DECODER[topic]]
    for r in records(log):
        rec = decode(r.key, r.value)
        if topic == "__consumer_offsets":
            got = encode_offsets_record(rec.kind, rec.key, rec.value, value_version=rec.value_version)
        elif topic == "__transaction_state":
            got = encode_transaction_record(rec.key, rec.value, value_version=rec.value_version)
        else:
            got = encode_share_state_record(rec.kind, rec.key, rec.value,
                                            value_version=rec.value_version or 0)
        assert got == (r.key, r.value), (log.name, r.offset)


def test_the_golden_set_covers_every_record_type_of_the_three_topics():
    counts: collections.Counter = collections.Counter()
    for log in LOGS:
        for w in kafka_lines(log).values():
            counts[(topic_of(log), w["record_type_name"], w["value_version"])] += 1
    names = {n for _, n, _ in counts}
    assert {"OFFSET_COMMIT", "GROUP_METADATA", "STREAMS_GROUP_TOPOLOGY", "SHARE_GROUP_STATE_PARTITION_METADATA",
            "SHARE_SNAPSHOT", "SHARE_UPDATE", "TRANSACTION_LOG"} <= names
    assert {v for (_, n, v) in counts if n == "OFFSET_COMMIT"} >= {0, 1, 2, 3, 4}
    assert sum(counts.values()) > 4500


def test_offset_commit_v4_topic_id_is_decoded():
    """4.1+ writes OffsetCommitValue v4 with the TopicId tag (KIP-848 commits by topic id)."""
    seen = 0
    for log in LOGS:
        if topic_of(log) != "__consumer_offsets":
            continue
        for r in records(log):
            if r.value is None or r.key[:2] != b"\x00\x01" or r.value[:2] != b"\x00\x04":
                continue
            rec = decode_offsets_record(r.key, r.value)
            raw = base64.b64decode(kafka_lines(log)[r.offset]["value_base64"])
            assert raw == r.value
            if "topic_id" in rec.value:
                seen += 1
                assert len(rec.value["topic_id"]) == 22
    assert seen > 50
