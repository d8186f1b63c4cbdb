"""Primitive types of Kafka's record formats: fixed-width big-endian ints, zig-zag varints.

Wire types (Kafka protocol guide, "Protocol Primitive Types"; ``ByteUtils``)::

    INT8 INT16 INT32 INT64 UINT32   big-endian, two's complement
    VARINT   zig-zag, base-128, at most 5 bytes   (ByteUtils.readVarint / writeVarint)
    VARLONG  zig-zag, base-128, at most 10 bytes  (ByteUtils.readVarlong / writeVarlong)

Kafka's readers keep only the low 32 (64) bits of what the 5 (10) bytes carry and reject a
continuation bit in the last allowed byte ("Varint is too long"); this module's varint readers
(the only ones in kgtool, with a C twin) do the same, so
``read_varint(b"\\xff\\xff\\xff\\xff\\x0f", 0, 5)`` is ``(-2147483648, 5)`` exactly as in Java.

:class:`Reader` tracks the absolute byte position (``base`` + index) of what it reads: it and
the varint readers are the only places that detect a short read, and it raises
:class:`~kgtool.errors.DecodeError` with its own position and context, never ``IndexError`` or
``struct.error``.
"""

from __future__ import annotations

import struct
import zlib

from kgtool import native
from kgtool.errors import DecodeError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_S_INT16 = struct.Struct(">h")
_S_INT32 = struct.Struct(">i")
_S_UINT32 = struct.Struct(">I")
_S_INT64 = struct.Struct(">q")

_crc32c_impl = getattr(native.load("kgtool.codec._speedups"), "crc32c", None)  # SSE4.2 when the CPU has it
if _crc32c_impl is None:
    try:  # The crc32c package: hardware CRC instructions, else a fast software table.
        from crc32c import crc32c as _crc32c_impl  # type: ignore[import-not-found,no-redef]
    except ImportError:  # pragma: no cover - exercised by tests through _crc32c_py directly
        _crc32c_impl = None


def _make_crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _make_crc32c_table()


def _crc32c_py(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): a table-driven reference;
    ``value`` is the CRC of what comes before ``data`` (0: nothing)."""
    crc = value ^ 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in memoryview(data).cast("B"):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of ``data`` as Kafka's ``Crc32C.compute`` returns it (unsigned 32-bit);
    ``crc``: the CRC of what precedes ``data`` (a CRC computed piece by piece)."""
    if _crc32c_impl is not None:
        return _crc32c_impl(data, crc) if crc else _crc32c_impl(data)
    return _crc32c_py(data, crc)


def crc32c_extender():
    """``f(data, value)``: :func:`crc32c` continuing from ``value``, without the dispatch (for
    tight loops): the C extension's, else the crc32c package's, else the table reference."""
    return _crc32c_impl if _crc32c_impl is not None else _crc32c_py


# CRC-32C arithmetic. CRC-32C is linear: crc(a + b) = crc(a) * x^(8 len(b)) ^ crc(b) modulo the
# Castagnoli polynomial (zlib's crc32_combine), so the CRC of any span follows from two prefix
# CRCs with two multiplications, whatever its length. Polynomials are bit-reflected as in the
# CRC register (bit 31 is x^0). Twin of _speedups' gf_mul / crc32c_shift.

_CRC32C_POLY = 0x82F63B78
_XPOW_LO: list[int] = []  # x^(8k), k < 65536
_XPOW_HI: list[int] = []  # x^(8 * 65536 * k), as far as needed


def gf_mul(a: int, b: int) -> int:
    """``a * b`` modulo the CRC-32C polynomial (32-bit reflected operands)."""
    # The carry-less product, shifted to put x^0 at bit 63, is hi (x^0..x^31) + lo * x^32;
    # four zero bytes through the CRC register turn lo into lo * x^32 mod P.
    p = 0
    while a:
        low = a & -a
        p ^= b * low
        a ^= low
    p <<= 1
    v = p & 0xFFFFFFFF
    table = _CRC32C_TABLE
    v = (v >> 8) ^ table[v & 0xFF]
    v = (v >> 8) ^ table[v & 0xFF]
    v = (v >> 8) ^ table[v & 0xFF]
    v = (v >> 8) ^ table[v & 0xFF]
    return (p >> 32) ^ v


def crc32c_shift(crc: int, n: int) -> int:
    """``crc * x^(8n)``: ``crc32c(a + b) == crc32c_shift(crc32c(a), len(b)) ^ crc32c(b)``
    (``0 <= n < 2**31``)."""
    if not _XPOW_LO:
        v = 1 << 31
        table = _CRC32C_TABLE
        lo = []
        for _ in range(65536):
            lo.append(v)
            v = (v >> 8) ^ table[v & 0xFF]  # one zero byte: times x^8
        _XPOW_HI.extend((1 << 31, v))
        _XPOW_LO.extend(lo)
    hi = n >> 16
    while len(_XPOW_HI) <= hi:
        _XPOW_HI.append(gf_mul(_XPOW_HI[-1], _XPOW_HI[1]))
    w = _XPOW_LO[n & 0xFFFF]
    if hi:
        w = gf_mul(w, _XPOW_HI[hi])
    return gf_mul(w, crc)


def _xpow_tables():
    crc32c_shift(0, 0)  # builds _XPOW_LO
    import numpy as np

    return np.array(_XPOW_LO, np.uint64), np.array(_CRC32C_TABLE, np.uint64)


def _gf_mul_many(a, b, table):
    """gf_mul over NumPy uint64 arrays (32-bit values)."""
    p = (b << 0) & 0
    for k in range(32):
        p ^= (b << k) & (0 - ((a >> k) & 1))
    p <<= 1
    v = p & 0xFFFFFFFF
    for _ in range(4):
        v = (v >> 8) ^ table[v & 0xFF]
    return (p >> 32) ^ v


_XPOW_NP: list = []


def crc32c_shift_many(crcs, ns):
    """:func:`crc32c_shift` over NumPy arrays (``crcs`` and ``ns`` uint64, ``ns < 2**31``)."""
    import numpy as np

    if not _XPOW_NP:
        _XPOW_NP.extend(_xpow_tables())
    lo, table = _XPOW_NP[:2]
    hi = ns >> 16
    w = lo[ns & 0xFFFF]
    far = np.flatnonzero(hi)
    if far.size:
        top = int(hi[far].max())
        if len(_XPOW_NP) == 2 or len(_XPOW_NP[2]) <= top:
            while len(_XPOW_HI) <= top:
                _XPOW_HI.append(gf_mul(_XPOW_HI[-1], _XPOW_HI[1]))
            _XPOW_NP[2:] = [np.array(_XPOW_HI, np.uint64)]
        w[far] = _gf_mul_many(w[far], _XPOW_NP[2][hi[far]], table)
    return _gf_mul_many(w, crcs, table)


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE, zlib) as the legacy formats use it (``LegacyRecord.computeChecksum``)."""
    return zlib.crc32(data) & 0xFFFFFFFF


# --- varints: the one reader and writer ----------------------------------------------------------
#
# ByteUtils.readUnsignedVarint / readVarint / readVarlong: base 128, least significant group
# first, at most 5 (10) bytes; a continuation bit in the last allowed byte is "Varint is too
# long"; only the low 32 (64) bits are kept. Every decoder calls these functions (the v2
# record loop, the schema compiler's flexible lengths and tagged fields, :class:`Reader`); the
# C extension's functions of the same names (``rd_base128`` in _speedups.c) replace them when
# it is in use (:mod:`kgtool.native`).


class VarintError(Exception):
    """A malformed varint: ``args = (index of its first byte, reason, field)``; ``truncated``
    tells a varint cut by the end of the data from one that is too long. Callers turn it into
    a :class:`~kgtool.errors.DecodeError` with their position and context."""

    @property
    def truncated(self) -> bool:
        return self.args[1].endswith("runs past the end of the data")


def _base128(data, i: int, end: int, max_bytes: int, what: str, field) -> tuple[int, int]:
    """The multi-byte form: (unsigned value, all bits read, index after it)."""
    value = 0
    shift = 0
    for k in range(i, i + max_bytes):
        if k >= end:
            raise VarintError(i, f"{what} runs past the end of the data", field)
        b = data[k]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, k + 1
        shift += 7
    raise VarintError(i, f"{what} is too long: the continuation bit is set in byte {max_bytes} "
                         f"(at most {max_bytes} bytes)", field)


def read_unsigned_varint_py(data, i: int, end: int, field=None) -> tuple[int, int]:
    """``ByteUtils.readUnsignedVarint`` at ``data[i]`` (not past ``end``): (value as an
    unsigned 32-bit int, index after it). Raises :class:`VarintError`."""
    if i < end:
        b = data[i]
        if b < 0x80:
            return b, i + 1
    u, i = _base128(data, i, end, 5, "unsigned varint", field)
    return u & 0xFFFFFFFF, i


def read_varint_py(data, i: int, end: int, field=None) -> tuple[int, int]:
    """``ByteUtils.readVarint`` (zig-zag, 5 bytes at most, low 32 bits): (value, index after)."""
    if i < end:
        b = data[i]
        if b < 0x80:  # one byte, the common case
            return (b >> 1) ^ -(b & 1), i + 1
    u, i = _base128(data, i, end, 5, "varint", field)
    u &= 0xFFFFFFFF
    return (u >> 1) ^ -(u & 1), i


def read_varlong_py(data, i: int, end: int, field=None) -> tuple[int, int]:
    """``ByteUtils.readVarlong`` (zig-zag, 10 bytes at most, low 64 bits): (value, index after)."""
    if i < end:
        b = data[i]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), i + 1
    u, i = _base128(data, i, end, 10, "varlong", field)
    u &= 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), i


_sp = native.load("kgtool.codec._speedups")
if _sp is not None:
    _sp.set_varint_error(VarintError)
    read_unsigned_varint = _sp.read_unsigned_varint
    read_varint = _sp.read_varint
    read_varlong = _sp.read_varlong
else:
    read_unsigned_varint = read_unsigned_varint_py
    read_varint = read_varint_py
    read_varlong = read_varlong_py


def zigzag_encode(value: int, bits: int = 64) -> int:
    """Zig-zag map of a signed int to an unsigned one (``(v << 1) ^ (v >> 63)``)."""
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


def write_unsigned_varint(value: int) -> bytes:
    """Base-128 encoding of a non-negative int (``ByteUtils.writeUnsignedVarint/Varlong``)."""
    if value < 0:
        raise ValueError("unsigned varint of a negative value")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_varint(value: int) -> bytes:
    """Zig-zag varint of a 32-bit signed int (``ByteUtils.writeVarint``)."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint out of int32 range: {value}")
    return write_unsigned_varint(zigzag_encode(value, 32))


def write_varlong(value: int) -> bytes:
    """Zig-zag varlong of a 64-bit signed int (``ByteUtils.writeVarlong``)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong out of int64 range: {value}")
    return write_unsigned_varint(zigzag_encode(value, 64))


def size_of_varint(value: int) -> int:
    """Bytes that :func:`write_varint` uses for ``value`` (``ByteUtils.sizeOfVarint``)."""
    return len(write_varint(value))


def size_of_varlong(value: int) -> int:
    """Bytes that :func:`write_varlong` uses for ``value`` (``ByteUtils.sizeOfVarlong``)."""
    return len(write_varlong(value))


# --- reader ---------------------------------------------------------------------------------

class Reader:
    """Sequential reader over a buffer slice that knows where it is in the file.

    Args:
        data: bytes, bytearray, memoryview or mmap.
        pos: index in ``data`` to start at.
        end: index in ``data`` not to read past (default: ``len(data)``).
        base: absolute file position of ``data[0]`` (positions in errors are absolute).
        source: file name for error messages.
        context: structural path for error messages (``batch@4096.records[17]``).
    """

    __slots__ = ("data", "pos", "end", "base", "source", "context")

    def __init__(
        self,
        data,
        pos: int = 0,
        end: int | None = None,
        *,
        base: int = 0,
        source: str | None = None,
        context: str | None = None,
    ) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        self.base = base
        self.source = source
        self.context = context

    @property
    def position(self) -> int:
        """Absolute position of the next byte."""
        return self.base + self.pos

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def error(self, reason: str, *, at: int | None = None, field: str | None = None) -> DecodeError:
        """A DecodeError at index ``at`` (default: the current index) of ``data``."""
        ctx = self.context
        if field:
            ctx = f"{ctx}.{field}" if ctx else field
        return DecodeError(
            reason,
            source=self.source,
            position=self.base + (self.pos if at is None else at),
            context=ctx,
        )

    def _need(self, n: int, field: str | None, what: str) -> None:
        if n > self.end - self.pos:
            raise self.error(
                f"{what} needs {n} bytes, {max(self.end - self.pos, 0)} remaining", field=field
            )

    def read_int8(self, field: str | None = None) -> int:
        self._need(1, field, "int8")
        v = self.data[self.pos]
        self.pos += 1
        return v - 256 if v > 127 else v

    def read_int16(self, field: str | None = None) -> int:
        self._need(2, field, "int16")
        v = _S_INT16.unpack_from(self.data, self.pos)[0]
        self.pos += 2
        return v

    def read_int32(self, field: str | None = None) -> int:
        self._need(4, field, "int32")
        v = _S_INT32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return v

    def read_uint32(self, field: str | None = None) -> int:
        self._need(4, field, "uint32")
        v = _S_UINT32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return v

    def read_int64(self, field: str | None = None) -> int:
        self._need(8, field, "int64")
        v = _S_INT64.unpack_from(self.data, self.pos)[0]
        self.pos += 8
        return v

    def _read(self, reader, field: str | None) -> int:
        try:
            value, self.pos = reader(self.data, self.pos, self.end, field)
        except VarintError as exc:
            raise self.error(exc.args[1], at=exc.args[0], field=field) from None
        return value

    def read_unsigned_varint(self, field: str | None = None) -> int:
        """Unsigned varint, at most 5 bytes, low 32 bits kept (``ByteUtils.readUnsignedVarint``)."""
        return self._read(read_unsigned_varint, field)

    def read_varint(self, field: str | None = None) -> int:
        """Zig-zag varint, at most 5 bytes, low 32 bits kept (``ByteUtils.readVarint``)."""
        return self._read(read_varint, field)

    def read_varlong(self, field: str | None = None) -> int:
        """Zig-zag varlong, at most 10 bytes, low 64 bits kept (``ByteUtils.readVarlong``)."""
        return self._read(read_varlong, field)

    def read_bytes(self, n: int, field: str | None = None) -> bytes:
        """``n`` bytes; the length is checked against what remains before anything is copied."""
        if n < 0:
            raise self.error(f"negative length {n}", field=field)
        if n > self.end - self.pos:
            raise self.error(
                f"length {n} exceeds {max(self.end - self.pos, 0)} bytes remaining", field=field
            )
        v = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return v

    def skip(self, n: int, field: str | None = None) -> None:
        self._need(n, field, "field")
        self.pos += n
