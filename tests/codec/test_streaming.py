"""Record-count bombs and huge batches (fuzz campaign defects 2 and 5): records stream, a
summary builds no Record, counts the bytes cannot hold are damage, nothing copies a batch, and
a failed allocation is one clear error naming the batch. Every test runs on C and Python."""

from __future__ import annotations

import tracemalloc

import pytest

from kgtool.codec import batch as B
from kgtool.codec import compression as C
from kgtool.codec import decode_batch_v2, decode_legacy_entry, encode_batch_v2, scan_segment, summarize_segment
from kgtool.codec import summary as S
from kgtool.codec.batch import RECORDS_CHUNK, RecordStream
from kgtool.errors import DecodeError, EnvironmentProblem
from tests.codec.bombs import EMPTY_RECORD_V2, empty_records_v2, many_inner_v1, raw_batch_v2
from tests.twins import compiled

N = 3 * RECORDS_CHUNK + 5  # more than one chunk, a partial last one


def _no_records(monkeypatch):
    """Make building a Record an error (where the summary must not build any)."""
    class NoRecord:
        def __init__(self, *a, **k):
            raise AssertionError("a Record was built")

    monkeypatch.setattr(B, "Record", NoRecord)
    import kgtool.codec.legacy as L
    monkeypatch.setattr(L, "Record", NoRecord)


@pytest.mark.parametrize("codec", [C.NONE, C.GZIP])
def test_many_records_stream_in_chunks(impl, codec, monkeypatch):
    section = empty_records_v2(N)
    data = raw_batch_v2(C.compress(codec, section) if codec else section, codec, N, base_offset=100)
    calls = []
    real = B.decode_v2_records
    monkeypatch.setattr(B, "decode_v2_records", lambda *a: calls.append(a[3]) or real(*a))
    b = decode_batch_v2(data, 0)
    assert isinstance(b.records, RecordStream) and len(b.records) == N
    assert calls == []  # checked, nothing decoded yet
    offsets = [r.offset for r in b.records]
    assert offsets == [100] * N and max(calls) == RECORDS_CHUNK and sum(calls) == N
    assert b.records[-1].offset == 100 and b.records[RECORDS_CHUNK].size_in_bytes == len(EMPTY_RECORD_V2)
    with pytest.raises(IndexError):
        b.records[N]


def test_a_bad_record_deep_in_a_big_batch_fails_the_batch_before_any_record(impl):
    section = bytearray(empty_records_v2(N))
    bad = 3 * RECORDS_CHUNK + 2
    section[bad * 7 + 6] = 0x02  # header count 1 in a record with no room for it
    data = raw_batch_v2(bytes(section), C.NONE, N)
    with pytest.raises(DecodeError) as e:
        decode_batch_v2(data, 0, source="seg.log", base_position=4096)
    assert e.value.context == f"batch@4096.records[{bad}].header_count"
    assert e.value.position == 4096 + B.RECORDS_OFFSET + bad * 7 + 7
    # the same count of records with bytes left over
    data = raw_batch_v2(empty_records_v2(N) + b"\x00", C.NONE, N)
    with pytest.raises(DecodeError, match=f"1 bytes remain after the {N} records"):
        decode_batch_v2(data, 0)


def test_a_big_control_batch_checks_every_control_key(impl):
    marker = encode_batch_v2([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")])[B.RECORDS_OFFSET:]
    section = marker * (RECORDS_CHUNK + 3)
    data = raw_batch_v2(section, B.CONTROL_FLAG_MASK | B.TRANSACTIONAL_FLAG_MASK, RECORDS_CHUNK + 3)
    b = decode_batch_v2(data, 0)
    assert [r.control.type_name for r in b.records] == ["COMMIT"] * (RECORDS_CHUNK + 3)
    bad = bytearray(section)
    bad[len(marker) * (RECORDS_CHUNK + 1) + 5] = 0xFF  # a negative key version in record CHUNK+1
    with pytest.raises(DecodeError) as e:
        decode_batch_v2(raw_batch_v2(bytes(bad), B.CONTROL_FLAG_MASK, RECORDS_CHUNK + 3), 0)
    assert e.value.context == f"batch@0.records[{RECORDS_CHUNK + 1}].key"


@pytest.mark.parametrize("codec", [C.NONE, C.GZIP])
def test_a_record_count_the_bytes_cannot_hold_is_damage(impl, codec):
    section = empty_records_v2(10)
    count = len(section) // 7 + 1  # a record takes at least 7 bytes
    data = raw_batch_v2(C.compress(codec, section) if codec else section, codec, count)
    with pytest.raises(DecodeError) as e:
        decode_batch_v2(data, 0, source="seg.log")
    assert e.value.context == "batch@0.record_count" and "at least 7 bytes" in e.value.reason
    (p,) = list(scan_segment(data, source="seg.log"))
    assert p.kind == "malformed" and p.length == len(data)


@pytest.mark.parametrize("mode", ["none", "payload"])
def test_summary_of_a_record_bomb_builds_no_record(impl, mode, monkeypatch):
    section = empty_records_v2(N)
    data = raw_batch_v2(C.compress(C.GZIP, section), C.GZIP, N) + raw_batch_v2(section, C.NONE, N)
    seen = []

    def payload(key, value):
        seen.append(1)
        return type("P", (), {"kind": "text", "tombstone": value is None, "warnings": []})()

    _no_records(monkeypatch)
    kw = {"payload": payload} if mode == "payload" else {}
    compiled("kgtool.codec._speedups")
    sums = [summarize_segment(data, use_speedups=u, **kw).to_json() for u in (True, False)]
    assert sums[0] == sums[1]
    assert sums[0]["records"] == 2 * N and sums[0]["null_values"] == 2 * N
    if mode == "payload":
        assert len(seen) == 4 * N and sums[0]["payload"]["tombstones"] == 2 * N


def test_summary_decompresses_a_failing_batch_once(impl, monkeypatch):
    # a gzip batch whose records are damaged: the C walk decompresses it and stops, the
    # general path reports it from the same bytes
    section = bytearray(empty_records_v2(10))
    section[-1] = 0x02
    data = raw_batch_v2(C.compress(C.GZIP, bytes(section)), C.GZIP, 10)
    calls = []
    real = C.decompress
    monkeypatch.setattr(C, "decompress", lambda *a, **k: calls.append(1) or real(*a, **k))
    s = summarize_segment(data)
    assert s.problem_counts == {"malformed": 1} and len(calls) == 1


def test_legacy_wrapper_with_many_inner_messages_streams(impl):
    n = 2 * RECORDS_CHUNK + 3
    data = many_inner_v1(n, wrapper_offset=5000 + n - 1)
    b = decode_legacy_entry(data, 0)
    assert isinstance(b.records, RecordStream) and len(b.records) == n
    assert b.base_offset == 5000 and [r.offset for r in b.records] == list(range(5000, 5000 + n))
    assert [r.timestamp for r in b.records[-2:]] == [n - 2, n - 1]
    s = summarize_segment(data).to_json()
    assert (s["records"], s["first_offset"], s["last_offset"]) == (n, 5000, 5000 + n - 1)


def test_python_path_reads_a_plain_batch_without_copying_it(impl):
    value = bytes(8 << 20)
    data = bytearray(encode_batch_v2([(b"k", value)]))
    tracemalloc.start()
    try:
        b = decode_batch_v2(memoryview(data), 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert b.records[0].value == value and type(b.records[0].value) is bytes
    assert peak < len(value) * 1.5  # the value itself, not the records section again


def test_a_failed_allocation_names_the_batch(impl, monkeypatch):
    def no_memory(*a, **k):
        raise MemoryError

    data = encode_batch_v2([(b"k", b"v")], compression="gzip")
    monkeypatch.setattr(C, "decompress", no_memory)
    with pytest.raises(EnvironmentProblem) as e:
        decode_batch_v2(data, 0, source="seg.log", base_position=4096)
    assert str(e.value).startswith("seg.log: byte 4096 (batch@4096): not enough memory to decompress its gzip")
    with pytest.raises(EnvironmentProblem, match="seg.log: byte 0 .*not enough memory"):
        summarize_segment(data, source="seg.log")
    monkeypatch.setattr(B, "decode_v2_records", no_memory)
    with pytest.raises(EnvironmentProblem, match=r"seg.log: byte 4096 \(batch@4096\): not enough memory to decode"):
        decode_batch_v2(encode_batch_v2([(b"k", b"v")]), 0, source="seg.log", base_position=4096)


def test_summary_twin_counts_like_c():
    assert B._speedups is compiled("kgtool.codec._speedups")
    section = encode_batch_v2([(b"k%d" % i, None if i % 3 else b"v", [], 1000 + i) for i in range(50)])
    sec = section[B.RECORDS_OFFSET:]
    args = (sec, 0, len(sec), 50, 7, 1000, None, 2)
    a, b = [], []
    assert B._speedups.summarize_records_v2(*args, a, 4096) == S.summarize_records_py(*args, b, 4096)
    assert a == b and a[0][3] == 4096  # (offset, key, value, batch position)


def test_summary_of_a_big_legacy_wrapper_builds_no_record(monkeypatch):
    n = 2 * RECORDS_CHUNK + 3
    data = many_inner_v1(n, wrapper_offset=70 + n - 1)
    payloads = []

    def payload(key, value):
        payloads.append(1)
        return type("P", (), {"kind": "text", "tombstone": value is None, "warnings": []})()

    _no_records(monkeypatch)
    sums = []
    assert B._speedups is compiled("kgtool.codec._speedups")
    for c in (B._speedups, None):
        monkeypatch.setattr(B, "_speedups", c)
        sums.append(summarize_segment(data, payload=payload).to_json())
    assert sums[0] == sums[1] and len(payloads) == 2 * n
    assert (sums[0]["records"], sums[0]["first_offset"], sums[0]["last_offset"]) == (n, 70, 70 + n - 1)
    assert (sums[0]["min_timestamp"], sums[0]["max_timestamp"]) == (0, n - 1)


def test_legacy_inner_checks_agree_between_c_and_python(monkeypatch):
    """Every single-byte mutation of an inner message set: the C walk and the Python reader
    accept and reject the same messages (the Python reader words every error)."""
    assert B._speedups is compiled("kgtool.codec._speedups")
    from kgtool.codec.legacy import encode_legacy_message

    inner = (encode_legacy_message(3, b"key", b"value", magic=1, timestamp=7)
             + encode_legacy_message(4, None, b"v", magic=0) + encode_legacy_message(5, b"k", None, magic=1))
    for i in range(len(inner)):
        for v in (0x00, 0x01, 0x7F, 0xFF):
            if inner[i] == v:
                continue
            bad = bytearray(inner)
            bad[i] = v
            data = encode_legacy_message(9, None, C.compress(C.GZIP, bytes(bad), magic=1), magic=1,
                                         timestamp=7, attributes=C.GZIP)
            for verify in (True, False):
                got = []
                for c in (B._speedups, None):
                    monkeypatch.setattr(B, "_speedups", c)
                    try:
                        got.append(_outcome_v(data, verify))
                    finally:
                        monkeypatch.undo()
                assert got[0] == got[1], (i, v, verify)


def _outcome_v(data: bytes, verify: bool):
    try:
        b = decode_legacy_entry(data, 0, source="s.log", verify_crc=verify)
    except DecodeError as exc:
        return str(exc)
    return [(r.offset, r.timestamp, r.key, r.value, r.attributes, r.size_in_bytes) for r in b.records]


def test_a_batch_of_big_records_streams_in_chunks_bounded_in_bytes(impl, tmp_path, monkeypatch):
    from kgtool.codec import scan_file
    from tests.codec.bombs import write_plain_batch

    path = str(tmp_path / "00000000000000000000.log")
    count = write_plain_batch(path, 40 << 20, value_size=1 << 20)
    spans = []
    real = B.decode_v2_records
    monkeypatch.setattr(B, "decode_v2_records", lambda *a: spans.append(a[2] - a[1]) or real(*a))
    (b,) = list(scan_file(path))
    assert isinstance(b.records, RecordStream) and len(b.records) == count == 39
    assert sum(len(r.value) for r in b.records) == count << 20
    assert len(spans) > 2 and max(spans) <= B.RECORDS_CHUNK_BYTES + (1 << 20) + 16
    s = summarize_segment(open(path, "rb").read(), payload=lambda k, v: type(
        "P", (), {"kind": "x", "tombstone": False, "warnings": []})()).to_json()
    assert s["records"] == count and s["value_bytes"] == count << 20 and s["payload"]["kinds"] == {"x": count}


def test_a_huge_mapped_batch_is_read_by_windows_with_pages_released(impl, tmp_path, monkeypatch):
    from kgtool.codec import scan_file
    from kgtool.codec.segment import PageReleaser
    from tests.codec.bombs import write_plain_batch

    monkeypatch.setattr(B, "HUGE_BATCH", 1 << 20)  # windows of 1 MiB, chunks of 256 KiB
    monkeypatch.setattr(B, "RECORDS_CHUNK_BYTES", 256 << 10)
    path = str(tmp_path / "00000000000000000000.log")
    count = write_plain_batch(path, 6 << 20, value_size=100_000)
    dropped = []
    real = PageReleaser.release
    monkeypatch.setattr(PageReleaser, "release", lambda self, a, b: dropped.append((a, b)) or real(self, a, b))
    advanced = []
    real_adv = PageReleaser.advance
    monkeypatch.setattr(PageReleaser, "advance", lambda self, i: advanced.append(i) or real_adv(self, i))
    (b,) = list(scan_file(path))
    assert b.crc_valid is True and len(advanced) >= 2 * 6  # CRC and check, window by window
    dropped.clear()
    assert sum(len(r.value) for r in b.records) == count * 100_000
    assert len(dropped) == b.records.chunks and dropped[-1][1] == b.end_position
    # the chunks of a second pass are dropped again
    dropped.clear()
    assert len(list(b.records)) == count and len(dropped) == b.records.chunks


def test_checking_records_window_by_window_is_the_same_check(impl, monkeypatch):
    section = bytearray(empty_records_v2(N))
    whole = B._index_records(bytes(section), 0, len(section), N, B.RECORDS_CHUNK, 1000)

    class Releaser:
        def advance(self, i):
            pass

    monkeypatch.setattr(B, "HUGE_BATCH", 3000)
    monkeypatch.setattr(B, "RECORDS_CHUNK_BYTES", 1000)
    assert B._index_by_windows(bytes(section), 0, len(section), N, Releaser()) == whole
    section[7 * (N - 3) + 6] = 0x02  # a bad record in the last window
    whole = B._index_records(bytes(section), 0, len(section), N, B.RECORDS_CHUNK, 1000)
    err = B._index_by_windows(bytes(section), 0, len(section), N, Releaser())[0]
    assert err == whole[0] and err[1] == N - 3
