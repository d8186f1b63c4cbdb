"""Legacy message sets (magic 0/1) and the compression codecs, including Kafka's odd corners."""

from __future__ import annotations

import struct
import zlib

import pytest

from kgtool.codec import compression as C
from kgtool.codec import decode_legacy_entry, encode_legacy_message, encode_message_set, scan_segment
from kgtool.codec.legacy import CrcMismatch
from kgtool.errors import DecodeError


def only_batch(data: bytes):
    (b,) = list(scan_segment(data))
    return b


def test_v1_wrapper_relative_offsets():
    data = encode_message_set([(b"a", b"1", [], 10), (b"b", b"2", [], 11), (b"c", b"3", [], 12)],
                              magic=1, base_offset=500, compression="gzip")
    b = only_batch(data)
    assert (b.base_offset, b.last_offset, b.magic, b.compression) == (500, 502, 1, "gzip")
    assert [r.offset for r in b.records] == [500, 501, 502]
    assert b.max_timestamp == 12 and b.timestamp_type == "CREATE_TIME"


def test_v1_wrapper_offset_zero_means_base_zero():
    # AbstractLegacyRecordBatch: "The outer offset may be 0 ... from certain versions of librdkafka"
    data = encode_message_set([(b"a", b"1"), (b"b", b"2")], magic=1, base_offset=0, compression="gzip",
                              wrapper_offset=0)
    assert [r.offset for r in only_batch(data).records] == [0, 1]


def test_v1_wrapper_offset_below_last_inner_is_malformed():
    inner = b"".join(encode_legacy_message(i, b"k", b"v", magic=1, timestamp=1) for i in range(5))
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    wrapper = encode_legacy_message(2, None, c.compress(inner) + c.flush(), magic=1, timestamp=1, attributes=1)
    (p,) = list(scan_segment(wrapper, source="s"))
    assert p.kind == "malformed"
    assert p.reason == "wrapper offset 2 is less than the last inner offset 4 and not zero"


def test_v0_wrapper_absolute_offsets():
    data = encode_message_set([(b"a", b"1"), (b"b", b"2")], magic=0, base_offset=70, compression="snappy")
    b = only_batch(data)
    assert [r.offset for r in b.records] == [70, 71] and b.timestamp_type == "NO_TIMESTAMP_TYPE"
    assert all(r.timestamp == -1 for r in b.records)


def test_v1_log_append_time_overrides_inner_timestamps():
    inner = b"".join(encode_legacy_message(i, b"k", b"v", magic=1, timestamp=5 + i) for i in range(2))
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    wrapper = encode_legacy_message(1, None, c.compress(inner) + c.flush(), magic=1, timestamp=999,
                                    attributes=1 | 0x08)
    b = only_batch(wrapper)
    assert b.timestamp_type == "LOG_APPEND_TIME" and [r.timestamp for r in b.records] == [999, 999]


def test_inner_compressed_message_is_malformed():
    inner = encode_legacy_message(0, None, b"x", magic=1, timestamp=1, attributes=1)
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    wrapper = encode_legacy_message(0, None, c.compress(inner) + c.flush(), magic=1, timestamp=1, attributes=1)
    (p,) = list(scan_segment(wrapper))
    assert p.kind == "malformed" and p.reason == "inner messages must not be compressed"


def test_zstd_wrapper_and_null_wrapper_value():
    w = encode_legacy_message(0, None, b"\x00", magic=1, timestamp=1, attributes=4)
    with pytest.raises(DecodeError, match="zstd compression is not allowed with magic 1"):
        decode_legacy_entry(w)
    w = encode_legacy_message(0, None, None, magic=0, attributes=1)
    with pytest.raises(DecodeError, match="compressed message set with a null value"):
        decode_legacy_entry(w)


def test_legacy_crc_mismatch_position():
    m = bytearray(encode_legacy_message(3, b"key", b"value", magic=1, timestamp=7))
    m[-1] ^= 1
    with pytest.raises(CrcMismatch) as ei:
        decode_legacy_entry(bytes(m), base_position=100, source="s")
    assert ei.value.position == 112 and ei.value.context == "batch@100.crc"
    assert ei.value.reason.startswith("stored crc 0x")


def test_legacy_key_length_beyond_message():
    m = bytearray(encode_legacy_message(3, b"key", b"value", magic=0))
    struct.pack_into(">i", m, 12 + 6, 1000)  # key length field of a magic-0 message
    with pytest.raises(DecodeError) as ei:
        decode_legacy_entry(bytes(m), verify_crc=False)
    assert ei.value.context == "batch@0.key" and ei.value.position == 22
    assert ei.value.reason == "length 1000 exceeds 12 bytes remaining"


def test_message_size_below_minimum_is_corrupt():
    data = struct.pack(">qi", 0, 10) + b"\x00" * 10
    (p,) = list(scan_segment(data))
    assert p.kind == "corrupt" and p.length == len(data)


# --- compression ----------------------------------------------------------------------------

PAYLOAD = b"".join(b"record-%06d " % i for i in range(5000))


@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
def test_codec_round_trip_and_bomb_guard(codec):
    comp = C.compress(codec, PAYLOAD)
    assert C.decompress(codec, comp) == PAYLOAD
    with pytest.raises(C.CompressionFailure, match="decompression bomb guard"):
        C.decompress(codec, comp, max_size=len(PAYLOAD) - 1)
    assert C.decompress(codec, comp, max_size=len(PAYLOAD)) == PAYLOAD


@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
def test_codec_garbage_and_truncation_are_compression_failures(codec):
    comp = C.compress(codec, PAYLOAD)
    for bad in (comp[: len(comp) // 2], b"\x00" * 20, comp[:3]):
        with pytest.raises(C.CompressionFailure):
            C.decompress(codec, bad)


def test_snappy_raw_block_and_framing_format():
    import cramjam

    raw = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert C.decompress(C.SNAPPY, raw) == PAYLOAD  # what librdkafka writes
    framed = bytes(cramjam.snappy.compress(PAYLOAD))
    assert framed.startswith(C.SNAPPY_FRAMING_MAGIC)
    assert C.decompress(C.SNAPPY, framed) == PAYLOAD


def test_snappy_xerial_concatenated_streams():
    a, b = C.compress(C.SNAPPY, b"first "), C.compress(C.SNAPPY, b"second")
    assert C.decompress(C.SNAPPY, a + b) == b"first second"


def test_xerial_stream_matches_kafka_python():
    from kafka.codec import snappy_encode

    xerial = snappy_encode(PAYLOAD, xerial_compatible=True)
    assert xerial.startswith(C.XERIAL_MAGIC) and C.decompress(C.SNAPPY, xerial) == PAYLOAD


def test_lz4_broken_header_checksum_only_for_magic_0():
    broken = C.compress(C.LZ4, PAYLOAD, magic=0)
    assert broken != C.compress(C.LZ4, PAYLOAD, magic=1)
    assert C.decompress(C.LZ4, broken, magic=0) == PAYLOAD
    with pytest.raises(C.CompressionFailure, match="pre-0.10 broken checksum"):
        C.decompress(C.LZ4, broken, magic=1)


def test_lz4_blocks_are_read_each_on_its_own_as_kafka_does():
    # KafkaLZ4BlockInputStream.readBlock decompresses every block alone into a buffer of the
    # maximum block size: a block that refers back to the one before (a "linked" frame, which
    # Kafka never writes) fails there, and here.
    import lz4.frame

    linked = lz4.frame.compress(PAYLOAD * 3, block_linked=True, content_checksum=True, block_checksum=True,
                                block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    with pytest.raises(C.CompressionFailure, match="depend on each other: Kafka reads each on its own"):
        C.decompress(C.LZ4, linked)
    # Checksums and a stored content size (python-lz4's frame writer, independent blocks).
    data = lz4.frame.compress(PAYLOAD * 3, block_linked=False, content_checksum=True, block_checksum=True,
                              store_size=True)
    assert C.decompress(C.LZ4, data) == PAYLOAD * 3


def test_lz4_frame_is_what_kafka_writes():
    # KafkaLZ4BlockOutputStream: FLG 0x60 (version 1, independent blocks), BD 0x40 (64 KiB),
    # 64 KiB blocks, an incompressible block stored as is (high bit of its length), end mark 0.
    import os
    import struct

    import lz4.frame

    data = PAYLOAD * 40 + os.urandom(70_000)
    frame = C.compress(C.LZ4, data)
    assert frame[:6] == struct.pack("<IBB", C.LZ4_FRAME_MAGIC, 0x60, 0x40) and frame.endswith(b"\0\0\0\0")
    sizes, pos = [], 7
    while (size := struct.unpack_from("<I", frame, pos)[0]) != 0:
        sizes.append(size)
        pos += 4 + (size & 0x7FFFFFFF)
    assert any(s & 0x80000000 for s in sizes) and not all(s & 0x80000000 for s in sizes)
    assert lz4.frame.decompress(frame) == data  # an independent reader agrees
    assert C.decompress(C.LZ4, frame) == data


def test_lz4_block_checksum_is_verified():
    import lz4.frame

    data = bytearray(lz4.frame.compress(PAYLOAD, block_linked=False, block_checksum=True, store_size=False))
    assert C.decompress(C.LZ4, bytes(data)) == PAYLOAD
    data[20] ^= 0x01  # inside the first block
    with pytest.raises(C.CompressionFailure, match="lz4 block checksum mismatch"):
        C.decompress(C.LZ4, bytes(data))


def test_zstd_multiple_frames_and_no_content_size():
    import zstandard

    a = zstandard.ZstdCompressor().compress(b"abc")
    b = zstandard.ZstdCompressor(write_content_size=False).compress(b"def")
    assert C.decompress(C.ZSTD, a + b) == b"abcdef"
    assert C.decompress(C.ZSTD, b) == b"def"


def test_gzip_concatenated_members():
    def gz(x):
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(x) + c.flush()

    assert C.decompress(C.GZIP, gz(b"ab") + gz(b"cd")) == b"abcd"


def test_xxh32_reference_vectors():
    # xxHash reference: XXH32("", 0) = 0x02CC5D05, XXH32("abc", 0) = 0x32D153FF
    assert C.xxh32(b"") == 0x02CC5D05
    assert C.xxh32(b"abc") == 0x32D153FF
    import xxhash

    for n in (1, 15, 16, 17, 100):
        d = bytes(range(n))
        assert C.xxh32(d) == xxhash.xxh32_intdigest(d)
