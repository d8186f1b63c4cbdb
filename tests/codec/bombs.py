"""Generators of hostile inputs: decompression bombs of every codec and record-count bombs.

Each bomb is built from one small compressed piece repeated, so that a bomb of gigabytes of
zeros costs milliseconds to make and megabytes to hold. Used by the tests (with small totals
and caps) and for manual measurement (``python -m tests.codec.bombs OUT.log KIND TOTAL``,
e.g. ``snappy-framing 4GiB``).
"""

from __future__ import annotations

import struct
import sys
import zlib

from kgtool.codec import compression as C
from kgtool.codec.batch import _AFTER_CRC, ATTRIBUTES_OFFSET, RECORDS_OFFSET
from kgtool.codec.legacy import encode_legacy_message
from kgtool.codec.primitives import crc32c

KINDS = ("gzip", "gzip-members", "lz4", "zstd", "zstd-frames", "snappy-raw", "snappy-xerial", "snappy-framing")
_PIECE = 64 * 1024


def _gzip_member(n: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [c.compress(bytes(min(n, 1 << 20))) for _ in range(n >> 20)] if n >= 1 << 20 else [c.compress(bytes(n))]
    return b"".join(out) + c.flush()


def _snappy_block_body(n: int) -> bytes:
    """The elements (no length preamble) of a raw snappy block of ``n`` zeros (n <= 64 KiB)."""
    import cramjam

    raw = bytes(cramjam.snappy.compress_raw(bytes(n)))
    i = 0
    while raw[i] & 0x80:
        i += 1
    return raw[i + 1:]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zeros_bomb(kind: str, total: int) -> bytes:
    """A payload of codec ``kind`` that inflates to ``total`` zero bytes (a multiple of 64 KiB)."""
    reps = max(total // _PIECE, 1)
    if kind == "gzip":  # one member: deflate of zeros, built in 1 MiB steps
        return _gzip_member(total)
    if kind == "gzip-members":  # many members of 64 KiB each
        return _gzip_member(_PIECE) * reps
    if kind == "lz4":  # one frame of independent 64 KiB blocks (what Kafka writes)
        frame = C.compress(C.LZ4, bytes(_PIECE))
        # magic(4) FLG BD HC | block size(4) block | end mark(4)
        head, block = frame[:7], frame[7:-4]
        return head + block * reps + b"\x00\x00\x00\x00"
    if kind == "zstd":  # one frame without content size, streamed
        import zstandard

        c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
        z = bytes(1 << 20)
        return b"".join(c.compress(z) for _ in range(max(total >> 20, 1))) + c.flush()
    if kind == "zstd-frames":
        import zstandard

        return zstandard.ZstdCompressor().compress(bytes(_PIECE)) * reps
    if kind == "snappy-raw":  # one block; its preamble declares the whole size
        return _uvarint(min(reps * _PIECE, 0xFFFFFFFF)) + _snappy_block_body(_PIECE) * reps
    if kind == "snappy-xerial":
        import cramjam

        block = bytes(cramjam.snappy.compress_raw(bytes(_PIECE)))
        return C.XERIAL_MAGIC + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block)) + block) * reps
    if kind == "snappy-framing":
        import cramjam

        block = bytes(cramjam.snappy.compress_raw(bytes(_PIECE)))
        body = struct.pack("<I", C._masked_crc32c(bytes(_PIECE))) + block
        chunk = b"\x00" + len(body).to_bytes(3, "little") + body
        return C.SNAPPY_FRAMING_MAGIC + chunk * reps
    raise ValueError(kind)


CODEC_OF = {"gzip": C.GZIP, "gzip-members": C.GZIP, "lz4": C.LZ4, "zstd": C.ZSTD, "zstd-frames": C.ZSTD,
            "snappy-raw": C.SNAPPY, "snappy-xerial": C.SNAPPY, "snappy-framing": C.SNAPPY}


def raw_batch_v2(payload: bytes, codec: int, count: int, *, base_offset: int = 0) -> bytes:
    """A v2 batch around an arbitrary (compressed or not) records section, CRC computed."""
    after_crc = _AFTER_CRC.pack(codec, max(count - 1, 0), 0, 0, -1, -1, -1, count) + payload
    length = RECORDS_OFFSET - 12 + len(payload)
    crc = crc32c(after_crc)
    out = struct.pack(">qiibI", base_offset, length, -1, 2, crc) + after_crc
    assert len(out) - len(after_crc) == ATTRIBUTES_OFFSET
    return out


EMPTY_RECORD_V2 = b"\x0c\x00\x00\x00\x01\x01\x00"  # length 6: attributes, ts 0, offset 0, null key/value, 0 headers


def empty_records_v2(n: int) -> bytes:
    """``n`` minimal (7-byte) v2 records, all at offset delta 0."""
    return EMPTY_RECORD_V2 * n


def many_inner_v1(n: int, *, codec: int = C.GZIP, wrapper_offset: int | None = None) -> bytes:
    """A magic-1 wrapper holding ``n`` minimal inner messages at relative offsets 0..n-1."""
    inner = b"".join(encode_legacy_message(i, None, None, magic=1, timestamp=i) for i in range(n))
    last = n - 1 if wrapper_offset is None else wrapper_offset
    return encode_legacy_message(last, None, C.compress(codec, inner, magic=1), magic=1, timestamp=n - 1,
                                 attributes=codec)


def _size(text: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, m in units.items():
        if text.endswith(u):
            return int(float(text[: -len(u)]) * m)
    return int(text)


def write_plain_batch(path: str, total: int, value_size: int = 1 << 20) -> int:
    """Write one uncompressed v2 batch of about ``total`` bytes of records (each with a
    ``value_size``-byte value of zeros) without holding it in memory; returns the record count."""
    import mmap

    from kgtool.codec.primitives import write_varint

    body = b"\x00\x00\x00\x01" + write_varint(value_size)  # attributes, ts 0, offset 0, null key
    rec_len = len(body) + value_size + 1  # + header count 0
    head = write_varint(rec_len) + body
    per = len(head) + value_size + 1
    count = max(min(total, 0x7FFFFFFF - RECORDS_OFFSET) // per, 1)
    value = bytes(value_size)
    with open(path, "wb") as fh:
        fh.write(struct.pack(">qiibI", 0, RECORDS_OFFSET - 12 + per * count, -1, 2, 0))
        fh.write(_AFTER_CRC.pack(0, count - 1, 0, 0, -1, -1, -1, count))
        for i in range(count):
            fh.write(head + value + b"\x00")
    with open(path, "r+b") as fh:
        m = mmap.mmap(fh.fileno(), 0)
        struct.pack_into(">I", m, 17, crc32c(memoryview(m)[ATTRIBUTES_OFFSET:]))
        m.flush()
        m.close()
    return count


def main(argv: list[str]) -> None:
    """OUT KIND TOTAL: write one v2 batch holding a bomb of KIND (one of KINDS) inflating to
    TOTAL (e.g. 4GiB), or KIND 'plain': an uncompressed batch of TOTAL bytes of 1 MiB records."""
    out, kind, total = argv[0], argv[1], _size(argv[2])
    if kind == "plain":
        write_plain_batch(out, total)
        return
    with open(out, "wb") as fh:
        fh.write(raw_batch_v2(zeros_bomb(kind, total), CODEC_OF[kind], 1))


if __name__ == "__main__":
    main(sys.argv[1:])
