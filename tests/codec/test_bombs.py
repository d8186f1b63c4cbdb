"""Hostile inputs (fuzz campaign): decompression bombs of every codec, record-count bombs,
many-member payloads. Built by the small generators of ``tests/codec/bombs.py``; bounded work
is asserted structurally (what the decoders were fed or asked to allocate), not by timing."""

from __future__ import annotations

import random
import struct
import zlib

import pytest

from kgtool.codec import compression as C
from tests.codec.bombs import CODEC_OF, KINDS, zeros_bomb

MiB = 1 << 20


# --- every codec refuses a bomb while it inflates --------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_zeros_bomb_of_every_codec_is_refused_at_the_cap(kind):
    payload = zeros_bomb(kind, 64 * MiB)
    assert C.decompress(CODEC_OF[kind], payload) == bytes(64 * MiB)  # under the default cap
    with pytest.raises(C.CompressionFailure) as e:
        C.decompress(CODEC_OF[kind], payload, max_size=MiB)
    assert str(e.value).endswith("decompresses to more than 1048576 bytes (1 MiB): refused "
                                 "(decompression bomb guard)")


@pytest.mark.parametrize("kind", ["snappy-xerial", "snappy-framing"])
def test_snappy_streams_stop_decompressing_at_the_cap(kind, monkeypatch):
    import cramjam

    calls = []
    real = cramjam.snappy.decompress_raw
    monkeypatch.setattr(cramjam.snappy, "decompress_raw", lambda b: calls.append(len(b)) or real(b))
    with pytest.raises(C.CompressionFailure, match="bomb guard"):
        C.decompress(C.SNAPPY, zeros_bomb(kind, 256 * MiB), max_size=MiB)
    # 64 KiB chunks: the 16 that fit, then the 17th is refused by its declared length.
    assert len(calls) == 16


def test_raw_snappy_block_is_refused_by_its_declared_length_before_allocating(monkeypatch):
    import cramjam

    def boom(_):
        raise AssertionError("decompressed a block whose preamble is over the cap")

    monkeypatch.setattr(cramjam.snappy, "decompress_raw", boom)
    payload = zeros_bomb("snappy-raw", 64 * MiB)
    with pytest.raises(C.CompressionFailure, match="more than 1048576 bytes"):
        C.decompress(C.SNAPPY, payload, max_size=MiB)
    # 4 GiB - 1 declared (the largest a uint32 preamble holds), a few bytes of body
    with pytest.raises(C.CompressionFailure, match="bomb guard"):
        C.decompress(C.SNAPPY, b"\xff\xff\xff\xff\x0f\x00\x00")


def test_codec_library_errors_never_have_an_empty_reason():
    with pytest.raises(C.CompressionFailure) as e:
        C.decompress(C.SNAPPY, b"\x05\x00")
    assert not str(e.value).rstrip().endswith(":")


def test_snappy_framing_chunks_checksums_and_reserved_types():
    import cramjam

    data = bytes(range(256)) * 300
    framed = bytes(cramjam.snappy.compress(data))
    assert C.decompress(C.SNAPPY, framed) == data
    # an uncompressed chunk (type 0x01) and padding (0xfe) between two streams
    raw = b"plain bytes"
    unc = struct.pack("<I", C._masked_crc32c(raw)) + raw
    pad = b"\xfe\x03\x00\x00abc"
    stream = framed + pad + C.SNAPPY_FRAMING_MAGIC + b"\x01" + len(unc).to_bytes(3, "little") + unc
    assert C.decompress(C.SNAPPY, stream) == data + raw
    bad = bytearray(framed)
    bad[14] ^= 0xFF  # the first chunk's checksum
    with pytest.raises(C.CompressionFailure, match="checksum mismatch"):
        C.decompress(C.SNAPPY, bytes(bad))
    with pytest.raises(C.CompressionFailure, match="type 0x02 .* reserved"):
        C.decompress(C.SNAPPY, C.SNAPPY_FRAMING_MAGIC + b"\x02\x00\x00\x00")
    with pytest.raises(C.CompressionFailure, match="exceeds the 2 bytes remaining"):
        C.decompress(C.SNAPPY, C.SNAPPY_FRAMING_MAGIC + b"\x00\x10\x00\x00ab")


# --- many gzip members / zstd frames cost linear time ----------------------------------------

class _Fed:
    """Wraps a streaming decoder object and counts the input bytes it is given."""

    total = 0

    def __init__(self, inner):
        self._inner = inner

    def decompress(self, data, *args):
        _Fed.total += len(data)
        return self._inner.decompress(data, *args)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _gz(x: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(x) + c.flush()


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_many_members_or_frames_are_read_in_linear_work(codec, monkeypatch):
    import zstandard

    _Fed.total = 0
    if codec == "gzip":
        real = zlib.decompressobj
        monkeypatch.setattr(C.zlib, "decompressobj", lambda **kw: _Fed(real(**kw)))
        member = _gz(b"")
    else:
        dctx = zstandard.ZstdDecompressor()
        monkeypatch.setattr(C, "_ZSTD", type("D", (), {"decompressobj": lambda self: _Fed(dctx.decompressobj())})())
        member = zstandard.ZstdCompressor().compress(b"")
    n = 5000
    payload = member * n
    assert C.decompress(C.GZIP if codec == "gzip" else C.ZSTD, payload) == b""
    # Re-reading the rest of the payload once per member (the old way) feeds n * len / 2.
    assert _Fed.total <= 3 * len(payload) + C._FIRST_PIECE * n


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_members_and_frames_of_mixed_sizes_round_trip(codec):
    import zstandard

    rng = random.Random(7)
    pieces = [rng.randbytes(rng.choice([0, 1, 100, 3000, 70000, 300000])) for _ in range(40)]
    if codec == "gzip":
        payload = b"".join(_gz(p) for p in pieces)
        cid = C.GZIP
    else:
        z = zstandard.ZstdCompressor(write_content_size=False)
        payload = b"".join(z.compress(p) for p in pieces)
        cid = C.ZSTD
    assert C.decompress(cid, payload) == b"".join(pieces)
    assert C.decompress(cid, memoryview(payload)) == b"".join(pieces)
    with pytest.raises(C.CompressionFailure, match="truncated"):
        C.decompress(cid, payload[:-5])
    with pytest.raises(C.CompressionFailure, match="bomb guard"):
        C.decompress(cid, payload, max_size=len(b"".join(pieces)) - 1)


def test_gzip_bytes_after_a_member_without_the_magic_end_the_stream():
    # GZIPInputStream.readTrailer: trailing bytes that are not a member are ignored
    assert C.decompress(C.GZIP, _gz(b"ab") + _gz(b"cd") + b"\x00garbage") == b"abcd"
