"""Kafka's compression codecs: gzip, snappy, lz4, zstd (``CompressionType``, ids 0-4).

Readers, as the Java client reads them:

- gzip: RFC 1952 members (``GZIPInputStream``; concatenated members are read in turn).
- snappy: ``SnappyFactory`` wraps xerial's ``SnappyInputStream``: the xerial stream
  (``\\x82SNAPPY\\x00``, int32 version, int32 compatible version, then chunks of int32 length +
  raw snappy block; a repeated header mid-stream is skipped). Without that header xerial reads
  the whole input as ONE raw snappy block, as librdkafka and others write it: kgtool too.
  The snappy framing format (``\\xff\\x06\\x00\\x00sNaPpY``) is also accepted.
- lz4: the LZ4 frame format (``KafkaLZ4BlockInputStream``), parsed here and each block
  decompressed on its own, as Kafka does (a frame of dependent blocks is not Kafka's: a block
  that needs the one before it fails there, and here). Magic-0 messages were written by Kafka
  < 0.10 with a header checksum computed over the magic bytes too (KAFKA-3160,
  ``useBrokenFlagDescriptorChecksum``); as Kafka, the header checksum is not checked for magic
  0. No LZ4 library's frame reader would take those frames, hence the parsing here.
- zstd: zstd frames (``ZstdFactory``), magic 2 only.

Every reader caps the decompressed size (``max_size``): a decompression bomb is a
:class:`~kgtool.errors.DecodeError`, not an out-of-memory. Writers produce what the Java client
produces (xerial framing for snappy; for lz4 what ``KafkaLZ4BlockOutputStream`` writes: 64 KiB
independent blocks, an incompressible block stored as is, no checksums).

Libraries (measured by ``benchmarks/bench_codecs.py``): cramjam for snappy and lz4 blocks
(``decompress_block_into``: 1.3-3.6x python-lz4's ``lz4.block.decompress`` on Kafka's 64 KiB
blocks); zstandard for zstd, whose streaming decompressor lets a bomb stop at the cap in
bounded memory (cramjam's one-shot ``zstd.decompress`` inflates a 32 KB frame to 1 GiB before
anything can refuse it) and is also 1.1-2.2x faster on 16 KiB-1 MiB batches.
"""

from __future__ import annotations

import struct
import zlib


NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
#: CompressionType.id -> name, as Kafka names them (``CompressionType.name``).
COMPRESSION_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
COMPRESSION_IDS = {v: k for k, v in COMPRESSION_NAMES.items()}

#: Default cap on one batch's decompressed size (Kafka's own limit is the batch size the
#: broker accepted; a compressed batch that inflates beyond this is treated as hostile).
DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_LEN = 16
SNAPPY_FRAMING_MAGIC = b"\xff\x06\x00\x00sNaPpY"
LZ4_FRAME_MAGIC = 0x184D2204


class CompressionFailure(Exception):
    """Internal: the compressed bytes are bad; the batch decoder adds position and context."""


def compression_id(name_or_id: str | int) -> int:
    """The attribute id of a codec given by name (``"gzip"``) or id."""
    if isinstance(name_or_id, int):
        if name_or_id not in COMPRESSION_NAMES:
            raise ValueError(f"unknown compression type id {name_or_id}")
        return name_or_id
    try:
        return COMPRESSION_IDS[name_or_id.lower()]
    except KeyError:
        raise ValueError(f"unknown compression {name_or_id!r}") from None


# --- decompression ----------------------------------------------------------------------------

def decompress(codec: int, data, *, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """Decompress one batch's (or wrapper message's) payload.

    Time is linear in the payload plus the output, and no more than about ``max_size`` bytes
    of output are ever held (a bomb is refused while it inflates, not after).

    Raises:
        CompressionFailure: corrupt data, unsupported codec, or output beyond ``max_size``.
        MemoryError: the output (at most ``max_size`` bytes) could not be allocated; the
            caller names the batch.
    """
    try:
        if codec == GZIP:
            return _gunzip(data, max_size)
        if codec == SNAPPY:
            return _unsnappy(memoryview(data), max_size)
        if codec == LZ4:
            return _unlz4(bytes(data), max_size, ignore_header_checksum=(magic == 0))
        if codec == ZSTD:
            return _unzstd(data, max_size)
    except (CompressionFailure, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - codec libraries raise assorted types
        name = COMPRESSION_NAMES.get(codec, str(codec))
        raise CompressionFailure(f"{name} data does not decompress: {str(exc) or type(exc).__name__}") from None
    raise CompressionFailure(f"unknown compression type id {codec}")


def _too_big(name: str, max_size: int) -> CompressionFailure:
    mib = f" ({max_size / (1 << 20):g} MiB)" if max_size >= 1 << 20 else ""
    return CompressionFailure(
        f"{name} data decompresses to more than {max_size} bytes{mib}: refused (decompression bomb guard)"
    )


#: First input piece fed to a streaming decoder for a gzip member or zstd frame after the
#: first; pieces double while the member goes on. What a decoder reads past the end of its
#: member (and hands back as ``unused_data``) is at most one piece, no more than the member
#: itself plus this: reading N members costs O(payload + N * piece), not O(N * payload).
#: (The first member is fed the whole payload: one copy of the rest at most.)
_FIRST_PIECE = 256
_MAX_PIECE = 1 << 20
_MAX_OUTPUT = 16 << 20


def _gunzip(data, max_size: int) -> bytes:
    """GZIPInputStream: RFC 1952 members in turn; bytes after a member that do not start with
    the gzip magic end the stream (``GZIPInputStream.readTrailer``)."""
    # The usual payload, one complete member and nothing after it: one call. Anything else
    # (several members, trailing bytes, corruption, the size cap) takes the loop below.
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data, min(max_size + 1, _MAX_OUTPUT))
    except zlib.error:
        pass
    else:
        if d.eof and not d.unused_data and len(out) <= max_size:
            return out
    mv = memoryview(data)
    n = len(mv)
    if not n:
        raise CompressionFailure("gzip data is empty")
    parts = []
    total = 0
    pos = 0
    # The first member (usually the only one) is given the whole payload in one call.
    piece = n
    while True:
        d = zlib.decompressobj(wbits=31)
        while not d.eof:
            if pos >= n:
                raise CompressionFailure("gzip data is truncated (no end of stream)")
            buf = mv[pos:pos + piece]
            pos += len(buf)
            piece = min(piece * 2, _MAX_PIECE)
            while buf:
                try:
                    # max_length bounds the output of this call: at most one byte past the cap,
                    # in steps of _MAX_OUTPUT (no single buffer regrown up to the cap).
                    chunk = d.decompress(buf, min(max_size - total + 1, _MAX_OUTPUT))
                except zlib.error as exc:
                    raise CompressionFailure(f"gzip data is corrupt: {exc}") from None
                total += len(chunk)
                if total > max_size:
                    raise _too_big("gzip", max_size)
                if chunk:
                    parts.append(chunk)
                if d.eof:
                    break
                buf = d.unconsumed_tail
        pos -= len(d.unused_data)
        # GZIPInputStream reads a following member only if it starts with the gzip magic.
        if pos >= n or mv[pos:pos + 2] != b"\x1f\x8b":
            break
        piece = _FIRST_PIECE
    return b"".join(parts)


def _snappy_length(block, what: str) -> int:
    """The uncompressed length a raw snappy block declares (unsigned varint, at most 5 bytes):
    read before anything is allocated."""
    n = 0
    shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n
    raise CompressionFailure(f"{what} has a bad length preamble")


def _snappy_raw(block, max_size: int, before: int = 0) -> bytes:
    """One raw snappy block, refused by its declared length when ``before`` bytes already
    decompressed plus this block would pass ``max_size``."""
    import cramjam

    if before + _snappy_length(block, "snappy block") > max_size:
        raise _too_big("snappy", max_size)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unsnappy(data: memoryview, max_size: int) -> bytes:
    if data[:len(XERIAL_MAGIC)] == XERIAL_MAGIC:
        return _unsnappy_xerial(data, max_size)
    if data[:len(SNAPPY_FRAMING_MAGIC)] == SNAPPY_FRAMING_MAGIC:
        return _unsnappy_framing(data, max_size)
    return _snappy_raw(data, max_size)


def _unsnappy_xerial(data: memoryview, max_size: int) -> bytes:
    parts = []
    total = 0
    pos = XERIAL_HEADER_LEN
    if len(data) < XERIAL_HEADER_LEN:
        raise CompressionFailure("xerial snappy header is truncated")
    n = len(data)
    while pos < n:
        # SnappyInputStream.hasNextChunk: a concatenated stream repeats the header.
        if data[pos:pos + len(XERIAL_MAGIC)] == XERIAL_MAGIC:
            pos += XERIAL_HEADER_LEN
            continue
        if pos + 4 > n:
            raise CompressionFailure(f"xerial snappy chunk length truncated at byte {pos} of the payload")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or size > n - pos:
            raise CompressionFailure(
                f"xerial snappy chunk of {size} bytes at byte {pos - 4} of the payload "
                f"exceeds the {n - pos} bytes remaining"
            )
        out = _snappy_raw(data[pos:pos + size], max_size, total)
        total += len(out)
        parts.append(out)
        pos += size
    return b"".join(parts)


#: Snappy framing format (google/snappy framing_format.txt): chunk = type (1 byte) + length
#: (3 bytes, little-endian) + data; a data chunk holds at most 65536 uncompressed bytes.
_FRAMING_MAX_CHUNK = 65536


def _masked_crc32c(data) -> int:
    from kgtool.codec.primitives import crc32c

    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _unsnappy_framing(data: memoryview, max_size: int) -> bytes:
    """The snappy framing format, chunk by chunk: each chunk's size is checked against the cap
    before it is decompressed, and checksums are verified (as the reference decoder does)."""
    import cramjam

    parts = []
    total = 0
    pos = 0
    n = len(data)
    while pos < n:
        if pos + 4 > n:
            raise CompressionFailure(f"snappy framing chunk header truncated at byte {pos} of the payload")
        kind = data[pos]
        length = data[pos + 1] | data[pos + 2] << 8 | data[pos + 3] << 16
        body = pos + 4
        if length > n - body:
            raise CompressionFailure(
                f"snappy framing chunk of {length} bytes at byte {pos} of the payload exceeds the "
                f"{n - body} bytes remaining"
            )
        pos = body + length
        if kind == 0xFF:  # stream identifier (repeated when streams are concatenated)
            if data[body - 4:pos] != SNAPPY_FRAMING_MAGIC:
                raise CompressionFailure(f"snappy framing stream identifier at byte {body - 4} is invalid")
            continue
        if kind >= 0x80:  # skippable (padding)
            continue
        if kind > 0x01:
            raise CompressionFailure(f"snappy framing chunk type 0x{kind:02x} at byte {body - 4} is reserved")
        if length < 4:
            raise CompressionFailure(f"snappy framing chunk at byte {body - 4} is too short for its checksum")
        (stored,) = struct.unpack_from("<I", data, body)
        block = data[body + 4:pos]
        if kind == 0x00:
            size = _snappy_length(block, "snappy framing chunk")
            if size > _FRAMING_MAX_CHUNK:
                raise CompressionFailure(
                    f"snappy framing chunk at byte {body - 4} declares {size} bytes, more than {_FRAMING_MAX_CHUNK}"
                )
            if total + size > max_size:
                raise _too_big("snappy", max_size)
            out = bytes(cramjam.snappy.decompress_raw(block))
        else:
            if length - 4 > _FRAMING_MAX_CHUNK:
                raise CompressionFailure(
                    f"snappy framing chunk at byte {body - 4} holds {length - 4} bytes, more than {_FRAMING_MAX_CHUNK}"
                )
            if total + length - 4 > max_size:
                raise _too_big("snappy", max_size)
            out = bytes(block)
        if _masked_crc32c(out) != stored:
            raise CompressionFailure(f"snappy framing chunk at byte {body - 4}: checksum mismatch")
        total += len(out)
        parts.append(out)
    return b"".join(parts)


# xxHash32 (only the LZ4 frame header checksum needs it: a few bytes, pure Python is fine).
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (reference algorithm)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + k * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _xxh32_fast(data: bytes) -> int:
    try:  # the xxhash package when installed (a test dependency), else the reference above
        import xxhash
    except ImportError:
        return xxh32(data)
    return xxhash.xxh32_intdigest(data)


def _lz4_header(data: bytes, ignore_header_checksum: bool) -> tuple[int, int, int]:
    """Parse an LZ4 frame descriptor: (descriptor end index, stored HC, correct HC)."""
    if len(data) < 7:
        raise CompressionFailure("lz4 frame header is truncated")
    (magic,) = struct.unpack_from("<I", data, 0)
    if magic != LZ4_FRAME_MAGIC:
        raise CompressionFailure(f"lz4 frame magic 0x{magic:08x} != 0x{LZ4_FRAME_MAGIC:08x}")
    flg = data[4]
    if flg >> 6 != 1:
        raise CompressionFailure(f"lz4 frame version {flg >> 6} is not supported (expected 1)")
    desc_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) < desc_end + 1:
        raise CompressionFailure("lz4 frame header is truncated")
    stored = data[desc_end]
    correct = (xxh32(data[4:desc_end]) >> 8) & 0xFF
    if not ignore_header_checksum and stored != correct:
        # KafkaLZ4BlockInputStream.readHeader: "Stream frame descriptor corrupted"
        broken = (xxh32(data[0:desc_end]) >> 8) & 0xFF
        hint = " (the pre-0.10 broken checksum, valid only for magic 0)" if stored == broken else ""
        raise CompressionFailure(
            f"lz4 frame descriptor checksum 0x{stored:02x} != computed 0x{correct:02x}{hint}"
        )
    return desc_end, stored, correct


_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def _unlz4(data: bytes, max_size: int, *, ignore_header_checksum: bool) -> bytes:
    """LZ4 frame, as KafkaLZ4BlockInputStream reads it: each block decompressed on its own into
    a buffer of the descriptor's maximum block size, block checksums verified when flagged, the
    content size and content checksum skipped."""
    import cramjam

    desc_end, _stored, _correct = _lz4_header(data, ignore_header_checksum)
    flg = data[4]
    bd = data[5]
    block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 0x07)
    if block_max is None:
        raise CompressionFailure(f"lz4 frame block maximum size code {(bd >> 4) & 0x07} is invalid")
    independent = flg & 0x20
    block_checksum = 4 if flg & 0x10 else 0
    decompress_into = cramjam.lz4.decompress_block_into
    buf = bytearray(block_max)
    pos = desc_end + 1
    n = len(data)
    parts = []
    total = 0
    while True:
        if pos + 4 > n:
            raise CompressionFailure("lz4 frame is truncated (no end mark)")
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if size == 0:
            break
        raw = size & 0x80000000
        size &= 0x7FFFFFFF
        if size > block_max or pos + size + block_checksum > n:
            raise CompressionFailure(f"lz4 block of {size} bytes is too large or truncated")
        block = data[pos:pos + size]
        if block_checksum:
            # KafkaLZ4BlockInputStream.readBlock: the checksum of the stored block is verified
            # (the content checksum at the end is skipped, as there).
            (stored_sum,) = struct.unpack_from("<I", data, pos + size)
            if _xxh32_fast(block) != stored_sum:
                raise CompressionFailure(f"lz4 block checksum mismatch at byte {pos} of the payload")
        if raw:
            out = block
        else:
            try:
                out = bytes(memoryview(buf)[:decompress_into(block, buf)])
            except Exception as exc:  # noqa: BLE001 - cramjam's DecompressionError
                dependent = "" if independent else " (the frame's blocks depend on each other: Kafka reads each on its own)"
                raise CompressionFailure(
                    f"lz4 block at byte {pos} of the payload does not decompress: {exc}{dependent}"
                ) from None
        pos += size + block_checksum
        total += len(out)
        if total > max_size:
            raise _too_big("lz4", max_size)
        parts.append(out)
    return parts[0] if len(parts) == 1 else b"".join(parts)


_ZSTD = None
#: Most bytes one byte of zstd input can become: a 4-byte RLE block (3-byte header + the
#: byte) stands for up to 128 KiB (Block_Maximum_Size, RFC 8878 3.1.1.2).
_ZSTD_MAX_RATIO = 32768


def _unzstd(data, max_size: int) -> bytes:
    """ZstdInputStream: frames in turn, each of which must end. Fed in pieces small enough that
    one piece cannot inflate far past the cap, growing while a frame goes on (see _FIRST_PIECE)."""
    global _ZSTD
    import zstandard

    if _ZSTD is None:
        _ZSTD = zstandard.ZstdDecompressor()
    mv = memoryview(data)
    n = len(mv)
    parts = []
    total = 0
    pos = 0
    piece = n  # the first frame (usually the only one) in pieces as large as the cap allows
    while pos < n:
        dobj = _ZSTD.decompressobj()
        while not dobj.eof:
            if pos >= n:
                raise CompressionFailure("zstd data is truncated (the frame does not end)")
            # No piece may inflate beyond the room left under the cap (+ one minimal piece).
            room = max(max_size - total, 0) // _ZSTD_MAX_RATIO
            take = max(min(piece, room), 64)
            buf = mv[pos:pos + take]
            pos += len(buf)
            piece *= 2
            chunk = dobj.decompress(buf)
            total += len(chunk)
            if total > max_size:
                raise _too_big("zstd", max_size)
            if chunk:
                parts.append(chunk)
        pos -= len(dobj.unused_data)
        piece = _FIRST_PIECE
    return b"".join(parts)


# --- compression ------------------------------------------------------------------------------

def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    """Compress ``data`` as the Java client would for ``codec`` (see the module doc)."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        import cramjam

        # SnappyOutputStream: xerial header (version 1, compatible 1), 32 KiB chunks.
        out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
        for i in range(0, len(data), 32 * 1024):
            block = bytes(cramjam.snappy.compress_raw(data[i:i + 32 * 1024]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)
    if codec == LZ4:
        return _lz4_frame(data, broken_header_checksum=(magic == 0))
    if codec == ZSTD:
        import zstandard

        return zstandard.ZstdCompressor(level=3).compress(data)
    raise ValueError(f"unknown compression type id {codec}")


#: KafkaLZ4BlockOutputStream: FLG version 1, independent blocks, no checksums, no content
#: size; BD block maximum size 64 KiB (code 4).
_LZ4_FLG = 0x60
_LZ4_BD = 0x40
_LZ4_WRITE_BLOCK = 64 * 1024
_LZ4_INCOMPRESSIBLE = 0x80000000  # KafkaLZ4BlockOutputStream.LZ4_FRAME_INCOMPRESSIBLE_MASK


def _lz4_frame(data: bytes, *, broken_header_checksum: bool) -> bytes:
    """The frame KafkaLZ4BlockOutputStream writes; ``broken_header_checksum``: the descriptor
    checksum over the magic bytes too, as Kafka < 0.10 wrote it for magic 0 (KAFKA-3160)."""
    import cramjam

    head = struct.pack("<IBB", LZ4_FRAME_MAGIC, _LZ4_FLG, _LZ4_BD)
    checked = head if broken_header_checksum else head[4:]
    out = bytearray(head + bytes([(xxh32(checked) >> 8) & 0xFF]))
    for i in range(0, len(data), _LZ4_WRITE_BLOCK):
        chunk = bytes(data[i:i + _LZ4_WRITE_BLOCK])
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):  # writeBlock: stored as is when compression does not pay
            out += struct.pack("<I", len(chunk) | _LZ4_INCOMPRESSIBLE) + chunk
        else:
            out += struct.pack("<I", len(block)) + block
    out += struct.pack("<I", 0)  # end mark
    return bytes(out)



_GZIP_FIRST_OUTPUT = min(DEFAULT_MAX_DECOMPRESSED + 1, _MAX_OUTPUT)  # as _gunzip's first step


def decompress_or_none(codec: int, payload) -> bytes | None:
    """For the C walks (the audit's scan, decode-batch's printer): a v2 batch's records, or
    None when the codec fails (the general path then reports it with its position). Same cap
    as decode_batch_v2's default."""
    if codec == GZIP:
        # _gunzip's first step, inline: a log of small gzip batches (one per consumer's commit,
        # offsets.topic.compression.codec=gzip) pays the call layers per batch. Anything but one
        # complete member within the cap goes the whole way below.
        d = zlib.decompressobj(wbits=31)
        try:
            out = d.decompress(payload, _GZIP_FIRST_OUTPUT)
        except zlib.error:
            pass
        else:
            if d.eof and not d.unused_data and len(out) <= DEFAULT_MAX_DECOMPRESSED:
                return out
    try:
        out = decompress(codec, payload, magic=2, max_size=DEFAULT_MAX_DECOMPRESSED)
    except CompressionFailure:
        return None
    return out if type(out) is bytes else bytes(out)
