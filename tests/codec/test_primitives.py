"""Varints, fixed-width ints and CRCs against exact bytes and an independent reference."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgtool import native
from kgtool.codec import primitives as P
from kgtool.errors import DecodeError
from tests.twins import compiled

# (value, exact bytes): shared by encode, decode and size tests (ByteUtilsTest vectors).
VARINT_VECTORS = [
    (0, b"\x00"),
    (-1, b"\x01"),
    (1, b"\x02"),
    (63, b"\x7e"),
    (-64, b"\x7f"),
    (64, b"\x80\x01"),
    (-65, b"\x81\x01"),
    (8191, b"\xfe\x7f"),
    (-8192, b"\xff\x7f"),
    (8192, b"\x80\x80\x01"),
    (-8193, b"\x81\x80\x01"),
    (1048575, b"\xfe\xff\x7f"),
    (-1048576, b"\xff\xff\x7f"),
    (1048576, b"\x80\x80\x80\x01"),
    (134217727, b"\xfe\xff\xff\x7f"),
    (-134217728, b"\xff\xff\xff\x7f"),
    (134217728, b"\x80\x80\x80\x80\x01"),
    (2147483647, b"\xfe\xff\xff\xff\x0f"),
    (-2147483648, b"\xff\xff\xff\xff\x0f"),
]
VARLONG_VECTORS = VARINT_VECTORS + [
    (2147483648, b"\x80\x80\x80\x80\x10"),
    (-2147483649, b"\x81\x80\x80\x80\x10"),
    (9223372036854775807, b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
    (-9223372036854775808, b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
]


def ref_varlong(v: int) -> bytes:
    """Independent reference: zig-zag by arithmetic, groups by string slicing of the binary."""
    z = 2 * v if v >= 0 else -2 * v - 1
    bits = bin(z)[2:]
    groups = [bits[max(0, i - 7):i] for i in range(len(bits), 0, -7)] or ["0"]
    out = bytearray()
    for k, g in enumerate(groups):
        out.append(int(g, 2) | (0x80 if k < len(groups) - 1 else 0))
    return bytes(out)


@pytest.mark.parametrize("value,raw", VARINT_VECTORS)
def test_varint_boundary_vectors(value, raw):
    assert P.write_varint(value) == raw
    assert P.size_of_varint(value) == len(raw)
    padded = b"\xaa" + raw + b"\xbb"
    r = P.Reader(padded, 1)
    assert r.read_varint() == value
    assert r.pos == 1 + len(raw)
    assert ref_varlong(value) == raw


@pytest.mark.parametrize("value,raw", VARLONG_VECTORS)
def test_varlong_boundary_vectors(value, raw):
    assert P.write_varlong(value) == raw
    assert P.size_of_varlong(value) == len(raw)
    r = P.Reader(b"\xaa" + raw + b"\xbb", 1)
    assert r.read_varlong() == value
    assert r.pos == 1 + len(raw)


def test_varint_too_long_names_its_position():
    r = P.Reader(b"\x00\x00\x80\x80\x80\x80\x80\x01", 2, base=1000, source="seg.log", context="batch@1000")
    with pytest.raises(DecodeError) as ei:
        r.read_varint("key_length")
    e = ei.value
    assert e.position == 1002
    assert e.context == "batch@1000.key_length"
    assert "varint is too long" in e.reason and "byte 5" in e.reason
    assert str(e).startswith("seg.log: byte 1002 (batch@1000.key_length): ")


def test_varlong_too_long():
    with pytest.raises(DecodeError, match="varlong is too long.*byte 10"):
        P.Reader(b"\x80" * 10 + b"\x01").read_varlong()


def test_varint_keeps_low_32_bits_like_java():
    # ByteUtils.readVarint: a 5th byte of 0x7f overflows silently; only the low 4 bits count.
    assert P.Reader(b"\xff\xff\xff\xff\x7f").read_varint() == P.Reader(b"\xff\xff\xff\xff\x0f").read_varint()


def test_short_reads_raise_decode_errors_with_position():
    for fn, data in [("read_int8", b""), ("read_int16", b"\x00"), ("read_int32", b"\x00" * 3),
                     ("read_int64", b"\x00" * 7), ("read_varint", b"\x80"), ("read_varlong", b"\xff\xff")]:
        r = P.Reader(b"\x00" * 4 + data, 4, base=100)
        with pytest.raises(DecodeError) as ei:
            getattr(r, fn)()
        assert ei.value.position == 104
    r = P.Reader(b"abc", base=10)
    with pytest.raises(DecodeError, match="length 5 exceeds 3 bytes remaining") as ei:
        r.read_bytes(5, "key")
    assert ei.value.position == 10


@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_varint_round_trip_against_reference(v):
    raw = P.write_varint(v)
    assert raw == ref_varlong(v)
    assert P.Reader(raw).read_varint() == v


@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_varlong_round_trip_against_reference(v):
    raw = P.write_varlong(v)
    assert raw == ref_varlong(v)
    assert P.Reader(raw).read_varlong() == v
    assert P.size_of_varlong(v) == len(raw)


def test_writers_refuse_out_of_range():
    with pytest.raises(ValueError):
        P.write_varint(1 << 31)
    with pytest.raises(ValueError):
        P.write_varlong(1 << 63)


@pytest.mark.parametrize("data,crc", [(b"", 0), (b"123456789", 0xE3069283), (b"\x00" * 32, 0x8A9136AA),
                                      (b"\xff" * 32, 0x62A8AB43)])
def test_crc32c_known_vectors(data, crc):
    # RFC 3720 B.4 test vectors for CRC-32C
    assert P.crc32c(data) == crc
    assert P._crc32c_py(data) == crc
    try:
        from kgtool.codec import _speedups
    except ImportError:
        return
    assert _speedups.crc32c(data) == crc


def test_crc32c_uses_the_cpus_crc_instructions():
    """The codec's CRC-32C runs on the CPU's CRC instructions where it has them, as the record
    batches' CRCs are checked on every batch read: SSE4.2 on x86-64, ARMv8's CRC32 on aarch64
    (tests/native/crc32c_aarch64.c holds that path to the table under qemu, .ci/compilers)."""
    import platform

    sp = compiled("kgtool.codec._speedups")
    assert sp.crc32c(b"123456789") == 0xE3069283
    machine = platform.machine().lower()
    if platform.system() == "Darwin" and machine == "arm64":  # every Apple silicon core has them
        assert sp.crc32c_path() == "armv8-crc32"
    if platform.system() != "Linux":
        assert sp.crc32c_path() in ("sse4.2", "armv8-crc32", "table")
        return
    flags = open("/proc/cpuinfo").read()  # the kernel's CPU flags (x86: sse4_2; arm64: crc32)
    if machine in ("x86_64", "amd64") and " sse4_2" in flags:
        assert sp.crc32c_path() == "sse4.2"
    elif machine == "aarch64" and " crc32" in flags:
        assert sp.crc32c_path() == "armv8-crc32"
    else:
        assert sp.crc32c_path() == "table"


@given(st.binary(max_size=300))
def test_crc32c_implementations_agree(data):
    import crc32c

    assert P._crc32c_py(data) == crc32c.crc32c(data) == P.crc32c(data)


# -- the varint readers the decoders call: C and Python, directly and through the record loops --

READER_IMPLS = ["python", "c"]


def _readers(impl: str):
    """(read_unsigned_varint, read_varint, read_varlong) of one implementation."""
    if impl == "python":
        return P.read_unsigned_varint_py, P.read_varint_py, P.read_varlong_py
    sp = compiled("kgtool.codec._speedups")
    return sp.read_unsigned_varint, sp.read_varint, sp.read_varlong


def _record_loops(impl: str):
    from kgtool.codec import batch as B

    if impl == "python":
        return B.decode_v2_records_py
    return compiled("kgtool.codec._speedups").decode_records_v2


def test_the_readers_in_use_are_the_twins():
    # What every decoder calls is one of the two implementations tested here.
    sp = native.load("kgtool.codec._speedups")
    expected = (sp.read_varint if sp is not None else P.read_varint_py)
    assert P.read_varint is expected


@pytest.mark.parametrize("impl", READER_IMPLS)
@pytest.mark.parametrize("value,raw", VARLONG_VECTORS)
def test_vectors_on_the_decoders_readers(impl, value, raw):
    unsigned, varint, varlong = _readers(impl)
    padded = b"\xaa" + raw + b"\x80"
    assert varlong(padded, 1, len(padded)) == (value, 1 + len(raw))
    if (value, raw) not in VARINT_VECTORS:
        return
    assert varint(padded, 1, len(padded)) == (value, 1 + len(raw))
    assert unsigned(padded, 1, len(padded)) == (P.zigzag_encode(value, 32), 1 + len(raw))
    for cut in range(1, len(raw)):  # every truncation of a multi-byte varint
        with pytest.raises(P.VarintError) as ei:
            varint(padded, 1, 1 + cut, "f")
        assert ei.value.args == (1, "varint runs past the end of the data", "f") and ei.value.truncated


@pytest.mark.parametrize("impl", READER_IMPLS)
def test_overlong_and_java_overflow_on_the_decoders_readers(impl):
    unsigned, varint, varlong = _readers(impl)
    data = b"\x00\x80\x80\x80\x80\x80\x01"
    for fn, what in ((unsigned, "unsigned varint"), (varint, "varint")):
        with pytest.raises(P.VarintError) as ei:
            fn(data, 1, len(data), "key_length")
        assert ei.value.args == (1, f"{what} is too long: the continuation bit is set in byte 5 (at most 5 bytes)",
                                 "key_length")
        assert not ei.value.truncated
    long_data = b"\x80" * 10 + b"\x01"
    with pytest.raises(P.VarintError, match="varlong is too long: the continuation bit is set in byte 10"):
        varlong(long_data, 0, len(long_data))
    # ByteUtils.readVarint / readUnsignedVarint keep the low 32 bits: a 5th byte of 0x7f is 0x0f.
    assert varint(b"\xff\xff\xff\xff\x7f", 0, 5) == varint(b"\xff\xff\xff\xff\x0f", 0, 5) == (-(2**31), 5)
    assert unsigned(b"\xff\xff\xff\xff\x7f", 0, 5) == (2**32 - 1, 5)
    # readVarlong keeps the low 64 bits of a 10th byte
    assert varlong(b"\xff" * 9 + b"\x7f", 0, 10) == varlong(b"\xff" * 9 + b"\x01", 0, 10)
    # `end` bounds the read even when the buffer goes on
    with pytest.raises(P.VarintError) as ei:
        varint(b"\x00\x80\x01", 1, 2)
    assert ei.value.truncated and ei.value.args[0] == 1


def _record(ts_raw: bytes, off_raw: bytes) -> bytes:
    # DefaultRecord: length, attributes, timestampDelta (varlong), offsetDelta (varint),
    # key length -1 (null), value length -1 (null), 0 headers
    body = b"\x00" + ts_raw + off_raw + b"\x01\x01\x00"
    return P.write_varint(len(body)) + body


@pytest.mark.parametrize("impl", READER_IMPLS)
def test_vectors_through_the_record_decoders(impl):
    decode = _record_loops(impl)
    base_offset, base_ts = 1 << 40, 1 << 41
    for value, raw in VARINT_VECTORS:
        data = b"\xaa" + _record(b"\x00", raw) + b"\xbb"
        records, err = decode(data, 1, len(data) - 1, 1, base_offset, base_ts, -1, None)
        assert err is None and records[0][0] == base_offset + value, (value, raw)
    for value, raw in VARLONG_VECTORS:
        if not -(1 << 40) < value < (1 << 40):
            continue  # the timestamp would wrap (tested in test_batch)
        data = _record(raw, b"\x00")
        records, err = decode(data, 0, len(data), 1, base_offset, base_ts, -1, None)
        assert err is None and records[0][1] == base_ts + value, (value, raw)
    # overlong offset delta and truncated timestamp delta: the record loops name the field
    data = _record(b"\x00", b"\x80\x80\x80\x80\x80\x01")
    _, err = decode(data, 0, len(data), 1, 0, 0, -1, None)
    assert err == (3, 0, "offset_delta", "varint is too long: the continuation bit is set in byte 5 (at most 5 bytes)")
    body = b"\x00\x80\x80"
    data = P.write_varint(len(body)) + body
    _, err = decode(data, 0, len(data), 1, 0, 0, -1, None)
    assert err == (2, 0, "timestamp_delta", "varlong runs past the end of the data")


@given(st.binary(min_size=1000, max_size=6000), st.integers(0, 40))
def test_crc32c_of_long_spans_agrees(data, cut):
    """From 1 KiB on the compiled CRC runs three streams joined by crc32c_shift: every length
    and start, as the reference computes it."""
    import crc32c

    assert P.crc32c(data) == crc32c.crc32c(data)
    assert P.crc32c(memoryview(data)[cut:]) == crc32c.crc32c(data[cut:])
    try:
        from kgtool.codec import _speedups
    except ImportError:
        return
    assert _speedups.crc32c(data[cut:]) == crc32c.crc32c(data[cut:])
