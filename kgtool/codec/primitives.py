"""Primitive types of Kafka's record formats: fixed-width big-endian ints, zig-zag varints.

Wire types (Kafka protocol guide, "Protocol Primitive Types"; ``ByteUtils``)::

    INT8 INT16 INT32 INT64 UINT32   big-endian, two's complement
    VARINT   zig-zag, base-128, at most 5 bytes   (ByteUtils.readVarint / writeVarint)
    VARLONG  zig-zag, base-128, at most 10 bytes  (ByteUtils.readVarlong / writeVarlong)

Kafka's readers keep only the low 32 (64) bits of what the 5 (10) bytes carry and reject a
continuation bit in the last allowed byte ("Varint is too long"); this module does the same,
so ``read_varint(b"\\xff\\xff\\xff\\xff\\x0f")`` is -2147483648 exactly as in Java.

:class:`Reader` tracks the absolute byte position (``base`` + index) of what it reads, and is
the only place that detects a short read: it raises :class:`~kgtool.errors.DecodeError` with
its own position and context, never ``IndexError`` or ``struct.error``.
"""

from __future__ import annotations

import os
import struct
import zlib

from kgtool.errors import DecodeError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_S_INT16 = struct.Struct(">h")
_S_INT32 = struct.Struct(">i")
_S_UINT32 = struct.Struct(">I")
_S_INT64 = struct.Struct(">q")

_crc32c_impl = None
if os.environ.get("KGTOOL_PURE_PYTHON", "") not in ("1", "true", "yes"):
    try:  # kgtool's own C extension (SSE4.2 when the CPU has it): no extra import cost.
        from kgtool.codec._speedups import crc32c as _crc32c_impl  # type: ignore[no-redef]
    except ImportError:
        _crc32c_impl = None
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


def _crc32c_py(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): a table-driven reference."""
    crc ^= 0xFFFFFFFF
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


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE, zlib) as the legacy formats use it (``LegacyRecord.computeChecksum``)."""
    return zlib.crc32(data) & 0xFFFFFFFF


# --- zig-zag --------------------------------------------------------------------------------

def zigzag_encode(value: int, bits: int = 64) -> int:
    """Zig-zag map of a signed int to an unsigned one (``(v << 1) ^ (v >> 63)``)."""
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode` for an unsigned input."""
    return (value >> 1) ^ -(value & 1)


# --- writers ----------------------------------------------------------------------------------

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


def write_int8(v: int) -> bytes:
    return struct.pack(">b", v)


def write_int16(v: int) -> bytes:
    return _S_INT16.pack(v)


def write_int32(v: int) -> bytes:
    return _S_INT32.pack(v)


def write_uint32(v: int) -> bytes:
    return _S_UINT32.pack(v)


def write_int64(v: int) -> bytes:
    return _S_INT64.pack(v)


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

    def _read_base128(self, max_bytes: int, bits: int, field: str | None, what: str) -> int:
        start = self.pos
        data = self.data
        value = 0
        shift = 0
        for i in range(max_bytes):
            if self.pos >= self.end:
                raise self.error(f"{what} runs past the end of the data", at=start, field=field)
            b = data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value & ((1 << bits) - 1)
            shift += 7
        # ByteUtils: "Varint is too long, the most significant bit in the 5th byte is set"
        raise self.error(
            f"{what} is too long: the continuation bit is set in byte {max_bytes} "
            f"(at most {max_bytes} bytes)",
            at=start,
            field=field,
        )

    def read_unsigned_varint(self, field: str | None = None) -> int:
        return self._read_base128(5, 32, field, "unsigned varint")

    def read_varint(self, field: str | None = None) -> int:
        """Zig-zag varint, at most 5 bytes, low 32 bits kept (``ByteUtils.readVarint``)."""
        u = self._read_base128(5, 32, field, "varint")
        return (u >> 1) ^ -(u & 1)

    def read_varlong(self, field: str | None = None) -> int:
        """Zig-zag varlong, at most 10 bytes, low 64 bits kept (``ByteUtils.readVarlong``)."""
        u = self._read_base128(10, 64, field, "varlong")
        return (u >> 1) ^ -(u & 1)

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
