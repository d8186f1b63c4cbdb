"""A whole Parquet file of integer, boolean and dictionary-encoded string columns, encoded by kgtool's C
encoders: the ``lag`` table's, a million rows a data partition.

pyarrow's writer took 30-40 ms of the lag phase's 110-125 ms of CPU a data partition of a million
rows whatever its options (every encoding, compression, page and batch size: 37-43 ms), a third of
the phase. The columns arrive already in the shape a Parquet file wants (integers, and strings
as codes into a small table of values), so this module writes them as pages directly:

- integer columns as ``DELTA_BINARY_PACKED`` (what :func:`kgtool.spark.output.parquet_options`
  asks pyarrow for on 64-bit columns; the two 32-bit partition columns, constant in a lag file,
  too: PLAIN they were 4 MB each before compression), min/max statistics on the columns of
  :data:`kgtool.spark.output.STATISTICS_COLUMNS`;
- string columns as a dictionary page (``PLAIN``) and ``RLE_DICTIONARY`` data pages, nullable
  ones with their definition levels (RLE); boolean columns ``PLAIN`` (bit-packed, NumPy);
- pages of at most :data:`PAGE_ROWS` rows, each compressed with Snappy (pyarrow's codec: Spark's
  default), one row group; the footer (Thrift compact protocol) as parquet-format's
  ``parquet.thrift`` describes it, with the column order and encoding statistics pyarrow writes.

The encoders are ``kgtool.offsets._replay``'s ``parquet_delta`` and ``parquet_rle``
(``_parquet.h``). Without them (not built, or ``KGTOOL_PURE_PYTHON``) the same columns go to
pyarrow's writer (:func:`arrow_table`): the file differs, the table read back does not
(``tests/spark/test_parquet_pages.py`` reads both, with pyarrow and with Spark).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgtool import __version__
from kgtool.native import load

_native = load("kgtool.offsets._replay")

#: Rows a data page holds at most (pyarrow closes its pages at about 1 MiB; a lag file's
#: integer columns take 70-250 KB a million rows, encoded).
PAGE_ROWS = 1 << 20

# parquet.thrift's enums
_BOOLEAN, _INT32, _INT64, _BYTE_ARRAY = 0, 1, 2, 6
_PLAIN, _RLE, _DELTA_BINARY_PACKED, _RLE_DICTIONARY = 0, 3, 5, 8
_SNAPPY = 1
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_REQUIRED, _OPTIONAL = 0, 1
_UTF8 = 0
# the compact protocol's field types
_T_I32, _T_I64, _T_BINARY, _T_LIST, _T_STRUCT = 5, 6, 8, 9, 12


def available() -> bool:
    """Whether the C encoders are here (else :func:`arrow_table` and pyarrow's writer)."""
    return _native is not None


@dataclass
class IntColumn:
    """An integer column: ``values`` int32 or int64, never null."""

    name: str
    values: np.ndarray


@dataclass
class BoolColumn:
    """A boolean column, never null (PLAIN: bit-packed, least significant bit first)."""

    name: str
    values: np.ndarray


@dataclass
class DictColumn:
    """A string column as ``codes`` (int32; -1: null) into ``values`` (distinct strings)."""

    name: str
    codes: np.ndarray
    values: list[str]
    nullable: bool = False


@dataclass
class Columns:
    """A table of ``n`` rows as columns (:class:`IntColumn`, :class:`DictColumn`) of ``schema``
    (an Arrow schema: the names, the types as the file holds them, what is nullable), which
    :meth:`kgtool.spark.output.TableWriter.write` writes whole with :func:`write_file`."""

    n: int
    columns: list[IntColumn | BoolColumn | DictColumn]
    schema: Any

    def __len__(self) -> int:
        return self.n

    def arrow(self) -> Any:
        return arrow_table(self.n, self.columns, self.schema)

    def to_pylist(self) -> list[dict[str, Any]]:
        return self.arrow().to_pylist()


def dictionary_codes(indices: np.ndarray, values: list[Any]) -> tuple[np.ndarray, list[str]]:
    """``values[indices]`` as codes (int32, -1 for null) into distinct values: (codes, values).
    An index -1, or a value None, is null."""
    place: dict[Any, int] = {}
    lut = np.array([-1 if v is None else place.setdefault(v, len(place)) for v in values] + [-1], np.int32)
    if len(place) == len(values) and indices.dtype == np.int32 and indices.flags.c_contiguous:
        codes = indices  # each value once, none None: the indices are the codes (-1 null), no gather
    else:
        codes = np.take(lut, indices)  # index -1 takes the last: -1, null (take: faster than lut[indices])
    return codes, list(place)


def arrow_table(n: int, columns: list[IntColumn | BoolColumn | DictColumn], schema: Any) -> Any:
    """The columns as an Arrow table of ``schema`` (string columns dictionary-encoded, integer
    columns not copied): what pyarrow's writer takes, and the JSON Lines writer."""
    import pyarrow as pa

    arrays = []
    for c in columns:
        if isinstance(c, (IntColumn, BoolColumn)):
            arrays.append(pa.array(c.values))
            continue
        codes = c.codes
        nulls = int(np.count_nonzero(codes < 0))
        bitmap = None
        if nulls:  # the validity bitmap made here (pa.array's mask= goes through pandas); nulls point at 0
            bitmap = pa.py_buffer(np.packbits(codes >= 0, bitorder="little"))
            codes = np.maximum(codes, 0)
        idx = pa.Array.from_buffers(pa.int32(), n, [bitmap, pa.py_buffer(codes)], nulls)
        arrays.append(pa.DictionaryArray.from_arrays(idx, strings(c.values), safe=False))
    return pa.Table.from_arrays(arrays, schema=pa.schema(
        [pa.field(c.name, a.type, nullable=schema.field(c.name).nullable) for c, a in zip(columns, arrays)]))


def strings(values: list[str]) -> Any:
    """``pa.array(values, pa.string())``, built from its buffers: pyarrow's conversion of a list
    imports pandas (a quarter of a second in a fresh worker) to look for its objects."""
    import pyarrow as pa

    data = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data)))


class _Compact:
    """Thrift's compact protocol, the few shapes a Parquet footer and page header take."""

    def __init__(self) -> None:
        self.out = bytearray()
        self._last = [0]

    def _varint(self, v: int) -> None:
        while v >= 0x80:
            self.out.append((v & 0x7F) | 0x80)
            v >>= 7
        self.out.append(v)

    def _zigzag(self, v: int) -> None:
        self._varint((v << 1) ^ (v >> 63) if v < 0 else v << 1)

    def _field(self, fid: int, ftype: int) -> None:
        delta = fid - self._last[-1]
        if 0 < delta <= 15:
            self.out.append(delta << 4 | ftype)
        else:
            self.out.append(ftype)
            self._zigzag(fid)
        self._last[-1] = fid

    def i32(self, fid: int, v: int) -> _Compact:
        self._field(fid, _T_I32)
        self._zigzag(v)
        return self

    def i64(self, fid: int, v: int) -> _Compact:
        self._field(fid, _T_I64)
        self._zigzag(v)
        return self

    def binary(self, fid: int, v: bytes) -> _Compact:
        self._field(fid, _T_BINARY)
        self._varint(len(v))
        self.out += v
        return self

    def begin(self, fid: int) -> _Compact:
        """A struct field; :meth:`end` closes it."""
        self._field(fid, _T_STRUCT)
        self._last.append(0)
        return self

    def end(self) -> _Compact:
        self.out.append(0)
        self._last.pop()
        return self

    def list(self, fid: int, etype: int, size: int) -> _Compact:
        self._field(fid, _T_LIST)
        if size < 15:
            self.out.append(size << 4 | etype)
        else:
            self.out.append(0xF0 | etype)
            self._varint(size)
        return self

    def element(self) -> _Compact:
        """A struct element of a list; :meth:`end` closes it."""
        self._last.append(0)
        return self

    def i32s(self, fid: int, values: list[int]) -> _Compact:
        self.list(fid, _T_I32, len(values))
        for v in values:
            self._zigzag(v)
        return self

    def strings(self, fid: int, values: list[bytes]) -> _Compact:
        self.list(fid, _T_BINARY, len(values))
        for v in values:
            self._varint(len(v))
            self.out += v
        return self


def _page_header(kind: int, raw: int, packed: int, values: int, encoding: int) -> bytes:
    t = _Compact().i32(1, kind).i32(2, raw).i32(3, packed)
    if kind == _DATA_PAGE:  # DataPageHeader: levels RLE (data page v1)
        t.begin(5).i32(1, values).i32(2, encoding).i32(3, _RLE).i32(4, _RLE).end()
    else:  # DictionaryPageHeader
        t.begin(7).i32(1, values).i32(2, encoding).end()
    t.out.append(0)
    return bytes(t.out)


@dataclass
class _Chunk:
    name: str
    ptype: int
    nullable: bool
    encodings: list[int]
    pages: list[tuple[int, int]]  # (page type, encoding) of each page, in order
    values: int
    raw: int
    packed: int
    data_offset: int
    dict_offset: int | None
    stats: tuple[bytes, bytes] | None


def write_file(stream: Any, n: int, columns: list[IntColumn | BoolColumn | DictColumn],
               statistics: frozenset[str]) -> int:
    """The columns (``n`` rows each, at least one) as one Parquet file written to ``stream``
    (``write(bytes)``); min/max statistics on the integer columns named in ``statistics``.
    Returns the bytes written."""
    import pyarrow as pa

    if _native is None:
        raise RuntimeError("kgtool's Parquet encoders are not built: write with pyarrow (arrow_table)")
    pos = 0

    def put(b: bytes) -> None:
        nonlocal pos
        stream.write(b)
        pos += len(b)

    def page(kind: int, body: bytes, values: int, encoding: int) -> tuple[int, int]:
        packed = pa.compress(body, codec="snappy", asbytes=True)
        head = _page_header(kind, len(body), len(packed), values, encoding)
        put(head)
        put(packed)
        return len(head) + len(body), len(head) + len(packed)

    for c in columns:  # a footer saying n rows over columns of other lengths would be a broken file
        have = len(c.values) if isinstance(c, (IntColumn, BoolColumn)) else len(c.codes)
        if have != n:
            raise ValueError(f"column {c.name!r}: {have} values, not {n}")
    put(b"PAR1")
    chunks: list[_Chunk] = []
    for c in columns:
        start = pos
        raw = packed = 0
        pages: list[tuple[int, int]] = []
        dict_offset = None
        stats = None
        if isinstance(c, BoolColumn):  # PLAIN: one bit a value, least significant first
            values = np.ascontiguousarray(c.values, np.bool_)
            for a in range(0, n, PAGE_ROWS):
                body = np.packbits(values[a:a + PAGE_ROWS], bitorder="little").tobytes()
                r, p = page(_DATA_PAGE, body, min(PAGE_ROWS, n - a), _PLAIN)
                raw, packed = raw + r, packed + p
                pages.append((_DATA_PAGE, _PLAIN))
            chunks.append(_Chunk(c.name, _BOOLEAN, False, [_PLAIN, _RLE], pages, n, raw, packed, start, None, None))
            continue
        if isinstance(c, IntColumn):
            values = np.ascontiguousarray(c.values)
            width = values.dtype.itemsize
            if values.dtype not in (np.int32, np.int64):
                raise ValueError(f"column {c.name!r}: int32 or int64, not {values.dtype}")
            ptype = _INT32 if width == 4 else _INT64
            lows, highs = [], []
            for a in range(0, n, PAGE_ROWS):
                body, low, high = _native.parquet_delta(values[a:a + PAGE_ROWS], width, c.name in statistics)
                r, p = page(_DATA_PAGE, body, min(PAGE_ROWS, n - a), _DELTA_BINARY_PACKED)
                raw, packed = raw + r, packed + p
                pages.append((_DATA_PAGE, _DELTA_BINARY_PACKED))
                lows.append(low)
                highs.append(high)
            if c.name in statistics:
                fmt = "<i" if width == 4 else "<q"
                stats = (struct.pack(fmt, min(lows)), struct.pack(fmt, max(highs)))
            chunks.append(_Chunk(c.name, ptype, False, [_RLE, _DELTA_BINARY_PACKED], pages, n, raw, packed,
                                 start, None, stats))
            continue
        codes = np.ascontiguousarray(c.codes, np.int32)  # a null in a column without: parquet_rle says so
        texts = [v.encode("utf-8") for v in c.values]
        body = b"".join(struct.pack("<i", len(t)) + t for t in texts)
        dict_offset = pos
        r, p = page(_DICTIONARY_PAGE, body, len(texts), _PLAIN)
        raw, packed = raw + r, packed + p
        pages.append((_DICTIONARY_PAGE, _PLAIN))
        data_offset = pos
        width = max(1, int(len(texts) - 1).bit_length())
        for a in range(0, n, PAGE_ROWS):
            part = codes[a:a + PAGE_ROWS]
            body = b""
            if c.nullable:
                levels, _ = _native.parquet_rle(part, 1, 2)
                body = struct.pack("<i", len(levels)) + levels
            indices, _ = _native.parquet_rle(part, width, 1 if c.nullable else 0)
            r, p = page(_DATA_PAGE, body + bytes((width,)) + indices, len(part), _RLE_DICTIONARY)
            raw, packed = raw + r, packed + p
            pages.append((_DATA_PAGE, _RLE_DICTIONARY))
        chunks.append(_Chunk(c.name, _BYTE_ARRAY, c.nullable, [_PLAIN, _RLE, _RLE_DICTIONARY], pages, n,
                             raw, packed, data_offset, dict_offset, None))
    footer = _footer(n, chunks)
    put(footer)
    put(struct.pack("<i", len(footer)) + b"PAR1")
    return pos


def _footer(n: int, chunks: list[_Chunk]) -> bytes:
    """FileMetaData: the schema, one row group, the column orders."""
    t = _Compact().i32(1, 2)
    t.list(2, _T_STRUCT, len(chunks) + 1)
    t.element().binary(4, b"schema").i32(5, len(chunks)).end()
    for c in chunks:
        t.element().i32(1, c.ptype).i32(3, _OPTIONAL if c.nullable else _REQUIRED).binary(4, c.name.encode())
        if c.ptype == _BYTE_ARRAY:  # strings: UTF8, LogicalType STRING
            t.i32(6, _UTF8).begin(10).begin(1).end().end()  # LogicalType STRING
        t.end()
    t.i64(3, n)
    t.list(4, _T_STRUCT, 1)
    t.element()
    t.list(1, _T_STRUCT, len(chunks))
    for c in chunks:
        first = c.dict_offset if c.dict_offset is not None else c.data_offset
        t.element().i64(2, first)
        t.begin(3).i32(1, c.ptype).i32s(2, c.encodings).strings(3, [c.name.encode()]).i32(4, _SNAPPY)
        t.i64(5, c.values).i64(6, c.raw).i64(7, c.packed).i64(9, c.data_offset)
        if c.dict_offset is not None:
            t.i64(11, c.dict_offset)
        if c.stats is not None:  # the deprecated min/max too, as pyarrow writes them for signed integers
            lo, hi = c.stats
            t.begin(12).binary(1, hi).binary(2, lo).i64(3, 0).binary(5, hi).binary(6, lo).end()
        kinds: dict[tuple[int, int], int] = {}
        for k in c.pages:
            kinds[k] = kinds.get(k, 0) + 1
        t.list(13, _T_STRUCT, len(kinds))
        for (kind, enc), count in kinds.items():
            t.element().i32(1, kind).i32(2, enc).i32(3, count).end()
        t.end()  # ColumnMetaData
        t.end()  # ColumnChunk
    first = chunks[0].dict_offset if chunks[0].dict_offset is not None else chunks[0].data_offset
    t.i64(2, sum(c.raw for c in chunks)).i64(3, n).i64(5, first).i64(6, sum(c.packed for c in chunks))
    t._field(7, 4)  # ordinal: i16
    t._zigzag(0)
    t.end()  # RowGroup
    t.binary(6, f"kgtool version {__version__}".encode())
    t.list(7, _T_STRUCT, len(chunks))
    for _c in chunks:
        t.element().begin(1).end().end()  # ColumnOrder: TYPE_ORDER
    t.out.append(0)
    return bytes(t.out)
