"""Hypothesis round trips: encode -> decode for every format and codec, every header field."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.codec import RecordBatch, encode_batch_v2, encode_message_set, scan_segment
from kgtool.codec.model import Record

KEYS = st.one_of(st.none(), st.binary(max_size=30))
HEADERS = st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=6))), max_size=3)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT16 = st.integers(-(1 << 15), (1 << 15) - 1)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(
    recs=st.lists(st.tuples(KEYS, KEYS, HEADERS, st.integers(0, 1 << 45)), max_size=6),
    gaps=st.lists(st.integers(0, 3), min_size=6, max_size=6),
    base_offset=st.integers(0, 1 << 62),
    codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
    ple=INT32, pid=INT64, epoch=INT16, seq=st.one_of(st.just(-1), st.integers(0, (1 << 31) - 1)),
    txn=st.booleans(), lat=st.one_of(st.none(), st.integers(0, 1 << 45)),
    horizon=st.one_of(st.none(), st.integers(0, 1 << 45)),
)
def test_v2_round_trip(recs, gaps, base_offset, codec, ple, pid, epoch, seq, txn, lat, horizon, impl):
    offs, o = [], 0
    for g in gaps[: len(recs)]:
        o += g
        offs.append(o)
        o += 1
    items = [Record(base_offset + d, t, -1, k, v, h) for d, (k, v, h, t) in zip(offs, recs)]
    data = encode_batch_v2(items, base_offset=base_offset, compression=codec, partition_leader_epoch=ple,
                           producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn,
                           timestamp_type="LOG_APPEND_TIME" if lat is not None else "CREATE_TIME",
                           log_append_time=lat, delete_horizon_ms=horizon if lat is None else None)
    (b,) = list(scan_segment(b"\x00" * 0 + data, base_position=1 << 33))
    assert isinstance(b, RecordBatch)
    assert b.position == 1 << 33 and b.size_in_bytes == len(data) and b.crc_valid
    assert (b.base_offset, b.compression, b.partition_leader_epoch, b.producer_id, b.producer_epoch,
            b.base_sequence, b.is_transactional, b.record_count) == (
        base_offset, codec, ple, pid, epoch, seq, txn, len(items))
    assert b.last_offset == base_offset + (offs[-1] if offs else -1)
    if lat is None and horizon is not None:
        assert b.delete_horizon_ms == horizon and b.base_timestamp == horizon
    else:
        assert b.delete_horizon_ms is None
    for r, it in zip(b.records, items):
        assert (r.offset, r.key, r.value, r.headers) == (it.offset, it.key, it.value, it.headers)
        assert r.timestamp == (lat if lat is not None else it.timestamp)
        if seq >= 0:
            d = r.offset - base_offset
            assert r.sequence == (seq + d if seq <= 2147483647 - d else d - (2147483647 - seq) - 1)
        else:
            assert r.sequence == -1


@SETTINGS
@given(
    recs=st.lists(st.tuples(KEYS, KEYS, st.integers(0, 1 << 45)), min_size=1, max_size=6),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(["none", "gzip", "snappy", "lz4"]),
    base_offset=st.integers(0, 1 << 62),
    lat=st.one_of(st.none(), st.integers(0, 1 << 45)),
)
def test_legacy_round_trip(recs, magic, codec, base_offset, lat):
    lat = lat if magic == 1 else None
    data = encode_message_set([(k, v, [], t) for k, v, t in recs], magic=magic, base_offset=base_offset,
                              compression=codec, timestamp_type="LOG_APPEND_TIME" if lat is not None else "CREATE_TIME",
                              log_append_time=lat)
    batches = list(scan_segment(data))
    assert all(isinstance(b, RecordBatch) and b.crc_valid for b in batches)
    assert len(batches) == (len(recs) if codec == "none" else 1)
    got = [r for b in batches for r in b.records]
    assert [r.offset for r in got] == [base_offset + i for i in range(len(recs))]
    assert [(r.key, r.value) for r in got] == [(k, v) for k, v, _t in recs]
    want_ts = [-1] * len(recs) if magic == 0 else [lat if lat is not None else t for _k, _v, t in recs]
    assert [r.timestamp for r in got] == want_ts
    assert sum(b.size_in_bytes for b in batches) == len(data)
    for b in batches:
        assert (b.producer_id, b.producer_epoch, b.base_sequence, b.partition_leader_epoch, b.record_count) == (
            -1, -1, -1, -1, None)
