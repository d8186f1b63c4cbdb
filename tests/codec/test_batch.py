"""Record batch v2: mutation tests (patch one named field, assert the exact error and byte
position), control records, compression guards; every test runs on the C and Python paths."""

from __future__ import annotations

import struct
import zlib

import pytest

from kgtool.codec import CrcMismatch, ScanProblem, decode_batch_v2, encode_batch_v2, scan_segment
from kgtool.codec import batch as B
from kgtool.codec.primitives import crc32c, write_varint, write_varlong
from kgtool.errors import DecodeError

BASE = 4096  # batches are placed at this absolute position: errors must add it


def records_section(*records: bytes) -> bytes:
    return b"".join(records)


def raw_record(body: bytes) -> bytes:
    return write_varint(len(body)) + body


def body(key: bytes | None = b"k", value: bytes | None = b"v", headers=(), ts_delta=0, off_delta=0,
         attributes=0) -> bytes:
    out = bytes([attributes]) + write_varlong(ts_delta) + write_varint(off_delta)
    out += write_varint(-1) if key is None else write_varint(len(key)) + key
    out += write_varint(-1) if value is None else write_varint(len(value)) + value
    out += write_varint(len(headers))
    for hk, hv in headers:
        out += write_varint(len(hk)) + hk + (write_varint(-1) if hv is None else write_varint(len(hv)) + hv)
    return out


def batch_with(section: bytes, count: int, *, attributes: int = 0, base_offset: int = 0,
               base_timestamp: int = 1000, max_timestamp: int = 1000) -> bytes:
    """A v2 batch around arbitrary record bytes, with a correct CRC."""
    after = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), base_timestamp, max_timestamp,
                        -1, -1, -1, count) + section
    return struct.pack(">qiibI", base_offset, len(after) + 9, -1, 2, crc32c(after)) + after


def refresh_crc(b: bytearray) -> bytearray:
    struct.pack_into(">I", b, B.CRC_OFFSET, crc32c(bytes(b[B.ATTRIBUTES_OFFSET:])))
    return b


def decode_err(data: bytes, **kw) -> DecodeError:
    with pytest.raises(DecodeError) as ei:
        decode_batch_v2(data, 0, source="seg.log", base_position=BASE, **kw)
    return ei.value


@pytest.fixture
def valid():
    return bytearray(encode_batch_v2(
        [(b"k0", b"v0", [("h", b"x")], 1000), (b"key1", b"value1", [], 1001), (None, b"v2", [], 1002)],
        base_offset=100, partition_leader_epoch=3,
    ))


def test_valid_batch_fields(valid, impl):
    b = decode_batch_v2(bytes(valid), 0, base_position=BASE)
    assert (b.position, b.base_offset, b.last_offset, b.record_count, b.crc_valid) == (BASE, 100, 102, 3, True)
    assert b.size_in_bytes == len(valid) and b.batch_length == len(valid) - 12
    assert b.partition_leader_epoch == 3 and b.magic == 2 and b.compression == "none"
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records] == [
        (100, 1000, b"k0", b"v0", [("h", b"x")]),
        (101, 1001, b"key1", b"value1", []),
        (102, 1002, None, b"v2", []),
    ]


def test_crc_mismatch_names_both_crcs(valid, impl):
    stored = struct.unpack_from(">I", valid, B.CRC_OFFSET)[0]
    valid[-2] ^= 0xFF  # the last byte of the last value (the header count follows)
    computed = crc32c(bytes(valid[B.ATTRIBUTES_OFFSET:]))
    e = decode_err(bytes(valid))
    assert isinstance(e, CrcMismatch)
    assert e.position == BASE + B.CRC_OFFSET
    assert e.context == f"batch@{BASE}.crc"
    assert e.reason == f"stored crc 0x{stored:08x} != computed 0x{computed:08x}"
    # Without verification the bytes decode (the patched byte is inside the last value).
    b = decode_batch_v2(bytes(valid), 0, verify_crc=False)
    assert b.crc_valid is None and b.records[2].value == b"v" + bytes([ord("2") ^ 0xFF])


def test_magic_field(valid):
    valid[B.MAGIC_OFFSET] = 3
    e = decode_err(bytes(valid))
    assert (e.position, e.context, e.reason) == (BASE + 16, f"batch@{BASE}.magic", "magic 3 is not 2")


def test_batch_length_below_minimum(valid):
    struct.pack_into(">i", valid, B.LENGTH_OFFSET, 48)
    e = decode_err(bytes(valid))
    assert (e.position, e.context) == (BASE + 8, f"batch@{BASE}.batch_length")
    assert e.reason == "batch length 48 is smaller than the minimum 49"


def test_batch_length_beyond_data(valid):
    struct.pack_into(">i", valid, B.LENGTH_OFFSET, len(valid))
    e = decode_err(bytes(valid))
    assert e.reason == f"batch length {len(valid)} exceeds the {len(valid) - 12} bytes remaining"


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_compression_id(valid, codec):
    struct.pack_into(">h", valid, B.ATTRIBUTES_OFFSET, codec)
    refresh_crc(valid)
    e = decode_err(bytes(valid))
    assert (e.position, e.reason) == (BASE + B.ATTRIBUTES_OFFSET, f"unknown compression type id {codec}")


def test_record_count_too_high(valid, impl):
    struct.pack_into(">i", valid, B.RECORDS_COUNT_OFFSET, 4)
    refresh_crc(valid)
    e = decode_err(bytes(valid))
    assert e.position == BASE + len(valid)
    assert e.context == f"batch@{BASE}.records[3].length"
    assert e.reason == "varint runs past the end of the data"


def test_record_count_too_low(valid, impl):
    struct.pack_into(">i", valid, B.RECORDS_COUNT_OFFSET, 2)
    refresh_crc(valid)
    third = len(valid) - len(raw_record(body(None, b"v2", off_delta=2, ts_delta=2)))
    e = decode_err(bytes(valid))
    assert (e.position, e.context) == (BASE + third, f"batch@{BASE}.records")
    assert e.reason == f"{len(valid) - third} bytes remain after the 2 records the header declares"


def test_negative_record_count(valid):
    struct.pack_into(">i", valid, B.RECORDS_COUNT_OFFSET, -1)
    refresh_crc(valid)
    e = decode_err(bytes(valid))
    assert (e.position, e.reason) == (BASE + B.RECORDS_COUNT_OFFSET, "invalid record count -1")


def test_record_count_that_cannot_fit(valid):
    struct.pack_into(">i", valid, B.RECORDS_COUNT_OFFSET, 1 << 30)
    refresh_crc(valid)
    e = decode_err(bytes(valid))
    assert e.context == f"batch@{BASE}.record_count" and "cannot fit" in e.reason


def test_key_length_varint_too_long(impl):
    bad = b"\x00" + write_varlong(0) + write_varint(0) + b"\x80\x80\x80\x80\x80\x01"
    data = batch_with(raw_record(bad), 1)
    e = decode_err(data)
    # record: length varint (1 byte) at 61, attributes 62, ts 63, offset delta 64, key length 65
    assert (e.position, e.context) == (BASE + 65, f"batch@{BASE}.records[0].key_length")
    assert e.reason == "varint is too long: the continuation bit is set in byte 5 (at most 5 bytes)"


def test_timestamp_delta_varlong_too_long(impl):
    bad = b"\x00" + b"\xff" * 10 + b"\x01" + write_varint(0) + b"\x02\x02\x00"
    e = decode_err(batch_with(raw_record(bad), 1))
    assert (e.position, e.context) == (BASE + 63, f"batch@{BASE}.records[0].timestamp_delta")
    assert "varlong is too long" in e.reason and "byte 10" in e.reason


def test_key_longer_than_record(impl):
    bad = b"\x00\x00\x00" + write_varint(50) + b"abc"
    e = decode_err(batch_with(raw_record(bad), 1))
    assert (e.position, e.context) == (BASE + 66, f"batch@{BASE}.records[0].key")
    assert e.reason == "length 50 exceeds 3 bytes remaining"


def test_negative_header_count(impl):
    bad = body(headers=()) [:-1] + write_varint(-1)
    e = decode_err(batch_with(raw_record(bad), 1))
    assert e.context == f"batch@{BASE}.records[0].header_count"
    assert e.reason == "invalid number of record headers -1"


def test_negative_header_key_length(impl):
    bad = body(headers=())[:-1] + write_varint(1) + write_varint(-1) + write_varint(-1)
    e = decode_err(batch_with(raw_record(bad), 1))
    assert e.context == f"batch@{BASE}.records[0].headers[0].key_length"
    assert e.reason == "invalid negative header key size -1"


def test_record_with_trailing_bytes(impl):
    bad = body() + b"\x00\x00"
    e = decode_err(batch_with(raw_record(bad), 1))
    assert e.context == f"batch@{BASE}.records[0].length"
    assert e.reason == f"record length {len(bad)} but its fields end after {len(bad) - 2} bytes"
    assert e.position == BASE + 61 + 1 + len(bad) - 2


def test_record_length_beyond_batch(impl):
    data = batch_with(write_varint(100) + body(), 1)
    e = decode_err(data)
    assert (e.position, e.context) == (BASE + 61 + len(write_varint(100)), f"batch@{BASE}.records[0].length")
    assert e.reason == f"record length 100 exceeds {len(body())} bytes remaining"


def test_error_inside_compressed_records_names_the_batch_and_decompressed_offset(impl):
    section = raw_record(b"\x00\x00\x00" + write_varint(50) + b"abc")
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)
    gz = comp.compress(section) + comp.flush()
    e = decode_err(batch_with(gz, 1, attributes=1))
    assert (e.position, e.context) == (BASE + 61, f"batch@{BASE}.records[0].key")
    assert e.reason == "length 50 exceeds 3 bytes remaining (at byte 5 of the decompressed records)"


def test_decompression_bomb_is_an_error(impl):
    section = raw_record(body(value=b"\x00" * (4 << 20)))
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    gz = comp.compress(section) + comp.flush()
    assert len(gz) < 10_000
    e = decode_err(batch_with(gz, 1, attributes=1), max_decompressed_size=1 << 20)
    assert e.context == f"batch@{BASE}.records"
    assert e.reason == "gzip data decompresses to more than 1048576 bytes (1 MiB): refused (decompression bomb guard)"


def test_corrupt_compressed_payload(impl):
    e = decode_err(batch_with(b"\x1f\x8b garbage", 1, attributes=1))
    assert e.position == BASE + 61 and e.reason.startswith("gzip data is corrupt")


def test_sequence_wraps_and_log_append_time(impl):
    data = encode_batch_v2([(b"a", b"1", [], 5), (b"b", b"2", [], 6)], producer_id=9, producer_epoch=1,
                           base_sequence=2147483647, timestamp_type="LOG_APPEND_TIME", log_append_time=77)
    b = decode_batch_v2(data)
    assert [r.sequence for r in b.records] == [2147483647, 0]
    assert b.last_sequence == 0
    assert [r.timestamp for r in b.records] == [77, 77]
    assert b.timestamp_type == "LOG_APPEND_TIME" and b.max_timestamp == 77 and b.base_timestamp == 5


def test_end_txn_markers(impl):
    for commit, name in ((True, "COMMIT"), (False, "ABORT")):
        data = encode_end_txn_marker_bytes(commit)
        b = decode_batch_v2(data)
        assert b.is_control and b.is_transactional and b.attributes == 0x30
        (r,) = b.records
        assert (r.control.type_name, r.control.coordinator_epoch, r.control.version) == (name, 42, 0)


def encode_end_txn_marker_bytes(commit: bool) -> bytes:
    from kgtool.codec import encode_end_txn_marker

    return encode_end_txn_marker(commit=commit, producer_id=5, producer_epoch=1, coordinator_epoch=42,
                                 base_offset=7, timestamp=1000)


def test_other_control_types_are_shown_by_id(impl):
    data = encode_batch_v2([(struct.pack(">hh", 0, 17), b"", [], 1)], is_control=True)
    (r,) = decode_batch_v2(data).records
    assert (r.control.type, r.control.type_name, r.control.coordinator_epoch) == (17, "UNKNOWN", None)


def test_bad_control_key(impl):
    data = encode_batch_v2([(b"\x00", b"", [], 1)], is_control=True)
    e = decode_err(data)
    assert e.context == f"batch@{BASE}.records[0].key"
    assert e.reason == "control record key must have at least 4 bytes, found 1"


def test_scan_continues_after_a_bad_batch(valid, impl):
    good = bytes(valid)
    bad = bytearray(valid)
    bad[-1] ^= 1
    items = list(scan_segment(good + bytes(bad) + good, source="s.log"))
    kinds = [x.kind if isinstance(x, ScanProblem) else "batch" for x in items]
    assert kinds == ["batch", "crc_mismatch", "batch"]
    assert items[1].position == len(good) and items[1].length == len(good)
    assert items[1].message.startswith(f"s.log: byte {len(good) + 17} (batch@{len(good)}.crc): stored crc")
    assert items[1].message.endswith(f"; batch@{len(good)} ({len(good)} bytes) skipped")


def test_empty_batch_round_trip(impl):
    data = encode_batch_v2([], base_offset=5)
    b = decode_batch_v2(data)
    assert b.records == [] and b.record_count == 0 and b.last_offset_delta == -1
