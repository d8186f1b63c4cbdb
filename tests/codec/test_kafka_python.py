"""Cross-checks against an independent implementation, kafka-python, both ways and for every
codec it supports: batches it builds decode in kgtool; kgtool's encoder output reads back in it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.codec import encode_batch_v2, encode_message_set, scan_segment
from kgtool.codec.model import RecordBatch

kafka_records = pytest.importorskip("kafka.record")
from kafka.record import MemoryRecords, MemoryRecordsBuilder  # noqa: E402

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# kafka-python refuses zstd below magic 2, as Kafka does.
COMBOS = [(m, c) for m in (0, 1, 2) for c in CODECS if not (c == "zstd" and m < 2)]

keys = st.one_of(st.none(), st.binary(max_size=40))
values = st.one_of(st.none(), st.binary(max_size=200))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)
ts = st.integers(0, 1 << 41)


def kp_build(magic: int, codec: int, recs, base_offset: int = 0) -> bytes:
    b = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 24, offset=base_offset)
    for key, value, hdrs, t in recs:
        assert b.append(t, key, value, hdrs if magic == 2 else None) is not None
    b.close()
    return bytes(b.buffer())


def kp_read(data: bytes) -> list[tuple]:
    out = []
    mr = MemoryRecords(data)
    while True:
        batch = mr.next_batch()
        if batch is None:
            break
        assert batch.validate_crc()
        for r in batch:
            out.append((r.offset, r.timestamp, r.key, r.value, list(r.headers)))
    return out


def kg_read(data: bytes) -> list[tuple]:
    out = []
    for b in scan_segment(data):
        assert isinstance(b, RecordBatch), b
        assert b.crc_valid
        for r in b.records:
            out.append((r.offset, r.timestamp, r.key, r.value, list(r.headers)))
    return out


@pytest.mark.parametrize("magic,codec", COMBOS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=st.lists(st.tuples(keys, values, headers, ts), min_size=1, max_size=8),
       base=st.integers(0, (1 << 31) - 100))  # kafka-python's v2 builder packs offsets as int32
def test_kafka_python_batches_decode_in_kgtool(magic, codec, recs, base, impl):
    if magic < 2:
        recs = [(k, v, [], t) for k, v, _h, t in recs]
    data = kp_build(magic, CODECS[codec], recs, base)
    got = kg_read(data)
    expect_ts = (lambda t: -1) if magic == 0 else (lambda t: t)
    want = [(base + i, expect_ts(t), k, v, [(hk, hv) for hk, hv in h]) for i, (k, v, h, t) in enumerate(recs)]
    assert got == want
    assert [(o, -1 if t is None else t, k, v, h) for o, t, k, v, h in kp_read(data)] == got


@pytest.mark.parametrize("magic,codec", COMBOS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=st.lists(st.tuples(keys, values, headers, ts), min_size=1, max_size=8),
       base=st.integers(0, 1 << 40))
def test_kgtool_batches_read_back_in_kafka_python(magic, codec, recs, base, impl):
    if magic == 2:
        data = encode_batch_v2(recs, base_offset=base, compression=codec)
    else:
        recs = [(k, v, [], t) for k, v, _h, t in recs]
        data = encode_message_set(recs, magic=magic, base_offset=base, compression=codec)
    got = kp_read(data)
    expect_ts = (lambda t: None if magic == 0 else t)
    want = [(base + i, expect_ts(t), k, v, [(hk, hv) for hk, hv in h]) for i, (k, v, h, t) in enumerate(recs)]
    if magic == 0:
        got = [(o, None, k, v, h) for o, _t, k, v, h in got]
    assert got == want


def test_kafka_python_transactional_batch_and_idempotent_fields(impl):
    b = MemoryRecordsBuilder(magic=2, compression_type=1, batch_size=1 << 20, offset=0, transactional=True,
                             producer_id=77, producer_epoch=3, base_sequence=2147483646)
    for i in range(3):
        b.append(1000 + i, b"k%d" % i, b"v", [])
    b.close()
    (batch,) = list(scan_segment(bytes(b.buffer())))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 2147483646)
    assert batch.is_transactional
    assert [r.sequence for r in batch.records] == [2147483646, 2147483647, 0]


@pytest.mark.parametrize("commit", [True, False])
def test_kgtool_end_txn_markers_read_back_in_kafka_python(commit):
    from kgtool.codec import encode_end_txn_marker

    data = encode_end_txn_marker(commit=commit, producer_id=42, producer_epoch=7, coordinator_epoch=5,
                                 base_offset=1000, timestamp=1700000000000)
    batch = MemoryRecords(data).next_batch()
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_offset) == (42, 7, 1000)
    (rec,) = list(batch)
    assert (rec.commit, rec.abort, rec.version, rec.offset) == (commit, not commit, 0, 1000)
