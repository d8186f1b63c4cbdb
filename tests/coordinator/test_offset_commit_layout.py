"""One definition of the OffsetCommit layout: the schema tables. The C extension's checks and
``records.decode_offset_commit`` (the bulk paths) are proved equal to them on every version.

The codec's C extension recognises "plain" ``__consumer_offsets`` OffsetCommit records without
importing the coordinator (``offset_commit_key_ok`` / ``offset_commit_value_ok`` for
``--summary``, ``commit_value`` for the offset columns). Here every key and value version of
``OffsetCommitKey`` / ``OffsetCommitValue`` (``kgtool.coordinator.schemas.classic``), encoded
by the schema encoder and then cut, extended and patched field by field, gets three verdicts
that must agree:

- the schema: ``decode_message`` reads all the bytes, without a warning (no unknown tagged
  field, no invalid UTF-8, no null read for a non-nullable string);
- the C checks, through their Python entry points (``summarize_records_v2`` in payload mode 1,
  ``KeyIndex.add``, ``CommitScanner.add``), and the decoded columns;
- ``kgtool.coordinator.records.decode_offset_commit`` and its decoded fields.

The bulk paths (C columns, ``decode_offset_commit``) read a v4 metadata length as one byte: a
v4 value with a metadata of 127 bytes or more is declined (the general decoder takes it); the
``--summary`` check reads the whole varint.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.codec import batch as B
from kgtool.codec import encode_batch_v2
from kgtool.coordinator.records import decode_offset_commit
from kgtool.coordinator.schema import decode_message, encode_message, uuid_to_str
from kgtool.coordinator.release_specs import declared_schema

OFFSET_COMMIT_KEY = declared_schema("OffsetCommitKey")
OFFSET_COMMIT_VALUE = declared_schema("OffsetCommitValue")
from kgtool.errors import DecodeError
from tests.twins import compiled

#: Every version the schema defines (0-4).
VALUE_VERSIONS = list(range(OFFSET_COMMIT_VALUE.valid_versions.lowest, OFFSET_COMMIT_VALUE.valid_versions.highest + 1))

# -- the schema's verdict ---------------------------------------------------------------------


def schema_key(raw: bytes) -> tuple[int, dict] | None:
    """(record type, fields) when ``raw`` is a plain OffsetCommitKey by the schema, else None."""
    if len(raw) < 2:
        return None
    (record_type,) = struct.unpack_from(">h", raw)
    if record_type not in (0, 1):  # CoordinatorRecordType: LegacyOffsetCommit, OffsetCommit
        return None
    w: list[str] = []
    try:
        obj, end = decode_message(OFFSET_COMMIT_KEY, 0, raw, 2, warnings=w)
    except DecodeError:
        return None
    return (record_type, obj) if end == len(raw) and not w else None


def schema_value(raw: bytes) -> tuple[int, dict] | None:
    """(version, fields) when ``raw`` is a plain OffsetCommitValue by the schema, else None."""
    if len(raw) < 2:
        return None
    (version,) = struct.unpack_from(">h", raw)
    if not OFFSET_COMMIT_VALUE.supports(version):
        return None
    w: list[str] = []
    try:
        obj, end = decode_message(OFFSET_COMMIT_VALUE, version, raw, 2, warnings=w)
    except DecodeError:
        return None
    return (version, obj) if end == len(raw) and not w else None


def one_byte_length(version: int, obj: dict) -> bool:
    """Inside the bulk paths' domain: v0-v3, or v4 with a one-byte compact metadata length."""
    return version < 4 or len(obj["metadata"].encode()) + 1 < 0x80


# -- the C verdicts ---------------------------------------------------------------------------


def c_summary_accepts(key: bytes, value: bytes | None) -> bool:
    """``summarize_records_v2`` in payload mode 1 counts the record itself (not handed back)."""
    sp = compiled("kgtool.codec._speedups")
    sec = encode_batch_v2([(key, value)])[B.RECORDS_OFFSET:]
    slow: list = []
    st_ = sp.summarize_records_v2(sec, 0, len(sec), 1, 0, 0, None, 1, slow, 0)
    counted = st_["offset_commits_0"] + st_["offset_commits_1"] + st_["offset_tombstones_0"] + st_["offset_tombstones_1"]
    assert counted + len(slow) == 1
    return counted == 1


def c_columns(key: bytes, value: bytes | None) -> dict | None:
    """``CommitScanner.add`` of one record: the decoded value columns, or None (declined)."""
    sp = compiled("kgtool.codec._speedups")
    ki = sp.KeyIndex()
    cols = sp.CommitScanner(ki, 16)
    if not cols.add(0, 0, 0, -1, -1, False, key, value):
        assert cols.n == 0
        return None
    t = cols.take()
    assert t[0] == 1
    col = {name: np.frombuffer(t[1 + k], dtype)[0].item() for k, (name, dtype) in enumerate([
        ("record_offset", np.int64), ("position", np.int64), ("timestamp", np.int64), ("producer_id", np.int64),
        ("producer_epoch", np.int16), ("transactional", np.uint8), ("key", np.int32), ("version", np.int8),
        ("offset", np.int64), ("leader_epoch", np.int32), ("metadata", np.int32), ("commit_timestamp", np.int64),
        ("expire_timestamp", np.int64)])}
    metas, tids = t[-2], t[-1]
    tid = np.frombuffer(t[14], np.int32)[0].item()
    return {"version": col["version"], "offset": col["offset"], "leader_epoch": col["leader_epoch"],
            "metadata": metas[col["metadata"]] if col["metadata"] >= 0 else None,
            "commit_timestamp": col["commit_timestamp"], "expire_timestamp": col["expire_timestamp"],
            "topic_id": uuid_to_str(tids[tid]) if tid >= 0 else None}


# -- the inputs -------------------------------------------------------------------------------

KEYS = [{"group": g, "topic": t, "partition": p} for g, t, p in [
    ("orders-service", "orders", 3), ("", "", 0), ("g\u00e9", "t\U0001F600", -1), ("x" * 300, "y", 2**31 - 1)]]


def key_bytes(record_type: int, fields: dict) -> bytes:
    return struct.pack(">h", record_type) + encode_message(OFFSET_COMMIT_KEY, 0, fields)


def value_dicts(version: int) -> list[dict]:
    out = []
    for metadata in ("", "gen=3", "\u00e9t\u00e9", "m" * 125, "m" * 126, "m" * 127, "m" * 300):
        v = {"offset": 42, "metadata": metadata, "commit_timestamp": 1_700_000_000_000}
        if version == 1:
            v["expire_timestamp"] = 1_700_000_100_000
        if version >= 3:
            v["leader_epoch"] = 7
        out.append(v)
    out.append({"offset": -1, "metadata": "", "commit_timestamp": -(2**63), "leader_epoch": -1,
                "expire_timestamp": 2**63 - 1})
    return out


def value_bytes(version: int, fields: dict) -> bytes:
    return struct.pack(">h", version) + encode_message(OFFSET_COMMIT_VALUE, version, fields)


def variants(raw: bytes) -> list[bytes]:
    """``raw``, every cut of it, one or six bytes added (a v3 value with empty metadata plus six
    is 30 bytes: no shortcut may take it for a whole value), and each byte set to 0x00, 0x7f,
    0x80, 0xff."""
    out = [raw, raw + b"\x00", raw + b"\x01", raw + bytes(6)] + [raw[:i] for i in range(len(raw))]
    for i in range(min(len(raw), 40)):
        for b in (0x00, 0x7F, 0x80, 0xFF):
            if raw[i] != b:
                out.append(raw[:i] + bytes([b]) + raw[i + 1:])
    return out


VALUES = [value_bytes(v, d) for v in VALUE_VERSIONS for d in value_dicts(v)]
VALUES += [  # versions outside the schema, invalid UTF-8, a v4 tagged field, a v4 null metadata
    struct.pack(">h", 5) + VALUES[0][2:], struct.pack(">h", -1) + VALUES[0][2:],
    value_bytes(3, value_dicts(3)[1]).replace(b"gen=3", b"gen\xff3"),
    value_bytes(4, value_dicts(4)[0])[:-1] + b"\x01\x00\x00",
    struct.pack(">hqi", 4, 1, 0) + b"\x00" + struct.pack(">q", 5) + b"\x00",
    # v4's TopicId tag (4.1+): a topic id, the zero uuid (its default, read as none), a wrong size,
    # an unknown tag beside it
    value_bytes(4, dict(value_dicts(4)[1], topic_id="a6Rjf_LEnaitkj24Ssgd3Q")),
    value_bytes(4, value_dicts(4)[0])[:-1] + b"\x01\x00\x10" + bytes(16),
    value_bytes(4, value_dicts(4)[0])[:-1] + b"\x01\x00\x0f" + bytes(15),
    value_bytes(4, value_dicts(4)[0])[:-1] + b"\x02\x00\x10" + bytes(range(16)) + b"\x05\x00",
]


# -- the tests --------------------------------------------------------------------------------


def test_every_value_version_of_the_schema_is_tested():
    assert VALUE_VERSIONS == [0, 1, 2, 3, 4]
    assert sorted({struct.unpack_from(">h", v)[0] for v in VALUES if schema_value(v)}) == VALUE_VERSIONS


@pytest.mark.parametrize("record_type", [0, 1])
@pytest.mark.parametrize("fields", KEYS, ids=range(len(KEYS)))
def test_keys_agree_with_the_schema(record_type, fields):
    sp = compiled("kgtool.codec._speedups")
    raws = variants(key_bytes(record_type, fields)) + [struct.pack(">h", 2) + key_bytes(1, fields)[2:]]
    plain_seen = 0
    for raw in raws:
        expected = schema_key(raw)
        assert (sp.KeyIndex().add(raw) >= 0) == (expected is not None), raw
        assert c_summary_accepts(raw, None) == (expected is not None), raw  # a tombstone
        got = decode_offset_commit(raw, None)
        assert (got is not None) == (expected is not None), raw
        if expected is not None:
            plain_seen += 1
            rtype, obj = expected
            assert got[:4] == (rtype, obj["group"], obj["topic"], obj["partition"])
            assert c_columns(raw, None)["version"] == -1
    assert plain_seen >= 1


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_values_agree_with_the_schema(value):
    key = key_bytes(1, KEYS[0])
    for raw in variants(value):
        expected = schema_value(raw)
        assert c_summary_accepts(key, raw) == (expected is not None), raw
        bulk = decode_offset_commit(key, raw)
        cols = c_columns(key, raw)
        if expected is None or not one_byte_length(*expected):
            assert bulk is None and cols is None, raw
            continue
        version, obj = expected
        fields = {"version": version, "offset": obj["offset"], "leader_epoch": obj.get("leader_epoch"),
                  "metadata": obj["metadata"], "commit_timestamp": obj["commit_timestamp"],
                  "expire_timestamp": obj.get("expire_timestamp"), "topic_id": obj.get("topic_id")}
        assert bulk[4:] == tuple(fields.values()), raw
        # the columns say -1 for a field the version lacks (a topic id: none)
        assert cols == {k: (-1 if v is None and k != "topic_id" else v) for k, v in fields.items()}, raw


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(VALUES), edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=4),
       cut=st.integers(0, 500))
def test_mutated_values_agree_with_the_schema(base, edits, cut):
    raw = bytearray(base)
    for i, b in edits:
        if raw:
            raw[i % len(raw)] = b
    raw = bytes(raw[:cut])
    key = key_bytes(0, KEYS[2])
    expected = schema_value(raw)
    assert c_summary_accepts(key, raw) == (expected is not None)
    in_domain = expected is not None and one_byte_length(*expected)
    assert (decode_offset_commit(key, raw) is not None) == in_domain
    assert (c_columns(key, raw) is not None) == in_domain
