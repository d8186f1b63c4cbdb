"""Record batch v2 (magic 2): decoder and encoder (``DefaultRecordBatch``, ``DefaultRecord``).

Wire schema (KIP-98; ``DefaultRecordBatch`` javadoc)::

    RecordBatch =>
      BaseOffset => Int64                 offset 0
      Length => Int32                     offset 8   (bytes after this field)
      PartitionLeaderEpoch => Int32       offset 12
      Magic => Int8                       offset 16  (2)
      CRC => Uint32                       offset 17  (CRC-32C of Attributes..end)
      Attributes => Int16                 offset 21
      LastOffsetDelta => Int32            offset 23
      BaseTimestamp => Int64              offset 27  (the delete horizon when bit 6 is set)
      MaxTimestamp => Int64               offset 35
      ProducerId => Int64                 offset 43
      ProducerEpoch => Int16              offset 51
      BaseSequence => Int32               offset 53
      RecordsCount => Int32               offset 57
      Records => [Record]                 offset 61  (compressed as one block when bits 0-2 != 0)

    Attributes:  -------------------------------------------------------------------------
                 | Unused (7-15) | Delete Horizon Flag (6) | Control (5) | Transactional (4) |
                 | Timestamp Type (3) | Compression Type (0-2) |
                 -------------------------------------------------------------------------

    Record =>
      Length => Varint                (bytes after this field)
      Attributes => Int8              (unused)
      TimestampDelta => Varlong
      OffsetDelta => Varint
      KeyLen => Varint                (-1: null)
      Key => Bytes
      ValueLen => Varint              (-1: null)
      Value => Bytes
      Headers => [Header]             (count as Varint)
        HeaderKeyLen => Varint, HeaderKey => String (UTF-8),
        HeaderValueLen => Varint (-1: null), HeaderValue => Bytes

Control batches hold control records: key = version Int16 + type Int16 (``ControlRecordType``),
and for COMMIT/ABORT the value = version Int16 + CoordinatorEpoch Int32 (``EndTxnMarker``).
"""

from __future__ import annotations

import mmap
import struct
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from kgtool import native
from kgtool.codec import compression as _comp
from kgtool.codec.model import (
    CONTROL_TYPE_IDS,
    CONTROL_TYPE_NAMES,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    ControlRecord,
    Record,
    RecordBatch,
    increment_sequence,
)
from kgtool.codec.primitives import VarintError, crc32c, read_varint_py, read_varlong_py, write_varint, write_varlong
from kgtool.errors import DecodeError, EnvironmentProblem

# Byte offsets inside a v2 batch, chained as in DefaultRecordBatch.
BASE_OFFSET_OFFSET = 0
BASE_OFFSET_LENGTH = 8
LENGTH_OFFSET = BASE_OFFSET_OFFSET + BASE_OFFSET_LENGTH
LENGTH_LENGTH = 4
PARTITION_LEADER_EPOCH_OFFSET = LENGTH_OFFSET + LENGTH_LENGTH
PARTITION_LEADER_EPOCH_LENGTH = 4
MAGIC_OFFSET = PARTITION_LEADER_EPOCH_OFFSET + PARTITION_LEADER_EPOCH_LENGTH
MAGIC_LENGTH = 1
CRC_OFFSET = MAGIC_OFFSET + MAGIC_LENGTH
CRC_LENGTH = 4
ATTRIBUTES_OFFSET = CRC_OFFSET + CRC_LENGTH
ATTRIBUTE_LENGTH = 2
LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + ATTRIBUTE_LENGTH
LAST_OFFSET_DELTA_LENGTH = 4
BASE_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + LAST_OFFSET_DELTA_LENGTH
BASE_TIMESTAMP_LENGTH = 8
MAX_TIMESTAMP_OFFSET = BASE_TIMESTAMP_OFFSET + BASE_TIMESTAMP_LENGTH
MAX_TIMESTAMP_LENGTH = 8
PRODUCER_ID_OFFSET = MAX_TIMESTAMP_OFFSET + MAX_TIMESTAMP_LENGTH
PRODUCER_ID_LENGTH = 8
PRODUCER_EPOCH_OFFSET = PRODUCER_ID_OFFSET + PRODUCER_ID_LENGTH
PRODUCER_EPOCH_LENGTH = 2
BASE_SEQUENCE_OFFSET = PRODUCER_EPOCH_OFFSET + PRODUCER_EPOCH_LENGTH
BASE_SEQUENCE_LENGTH = 4
RECORDS_COUNT_OFFSET = BASE_SEQUENCE_OFFSET + BASE_SEQUENCE_LENGTH
RECORDS_COUNT_LENGTH = 4
RECORDS_OFFSET = RECORDS_COUNT_OFFSET + RECORDS_COUNT_LENGTH
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
LOG_OVERHEAD = LENGTH_OFFSET + LENGTH_LENGTH  # Records.LOG_OVERHEAD: offset + size

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

CREATE_TIME = "CREATE_TIME"
LOG_APPEND_TIME = "LOG_APPEND_TIME"
NO_TIMESTAMP_TYPE = "NO_TIMESTAMP_TYPE"

#: Header fields after the CRC, unpacked in one call.
_HEADER = struct.Struct(">qiibIhiqqqhii")
_AFTER_CRC = struct.Struct(">hiqqqhii")

# --- the record loop: C extension if built, else pure Python -----------------------------------

_speedups: Any = native.load("kgtool.codec._speedups")


def speedups() -> Any:
    """The C extension the codec uses (``kgtool.codec._speedups``, chosen by
    :func:`kgtool.native.load`), or None: the pure-Python twins. Every codec module asks here."""
    return _speedups


def speedups_enabled() -> bool:
    """Whether the C extension (``kgtool.codec._speedups``) is in use."""
    return _speedups is not None


class _Bad(Exception):
    """Internal: (index, field, reason) of the first malformed field of a record."""


def _walk_records_py(data, i: int, end: int, count: int, base_offset: int, base_timestamp: int,
                     base_sequence: int, log_append_time: int | None, out: list, first: int = 0,
                     max_bytes: int = 1 << 62):
    """Decode ``count`` records from index ``i`` (records ``first``.. of the batch), appending
    tuples to ``out``: returns ``(index after the last, None)`` or ``(index, error)``; stops
    early, before a record, once ``max_bytes`` were read (``len(out)`` tells how many).

    ``data`` is bytes, an mmap or a memoryview (never copied: slices of a memoryview are turned
    into bytes one key or value at a time). Varints are read by the codec's one reader, in its
    Python form (:func:`~kgtool.codec.primitives.read_varint_py`): this loop is the C loop's
    pure-Python twin, and the tests compare the two.
    """
    view = type(data) is memoryview
    append = out.append
    varint = read_varint_py
    idx = first
    stop = i + max_bytes
    try:
        for idx in range(first, first + count):
            if i >= stop:
                break
            rec_start = i
            size, i = varint(data, i, end, "length")
            if size < 0:
                raise _Bad(i, "length", f"negative record length {size}")
            if size > end - i:
                raise _Bad(i, "length", f"record length {size} exceeds {end - i} bytes remaining")
            lim = i + size
            body_start = i
            if i >= lim:
                raise _Bad(i, "attributes", "int8 needs 1 bytes, 0 remaining")
            attributes = data[i]
            if attributes > 127:
                attributes -= 256
            i += 1
            ts_delta, i = read_varlong_py(data, i, lim, "timestamp_delta")
            off_delta, i = varint(data, i, lim, "offset_delta")
            n, i = varint(data, i, lim, "key_length")
            if n >= 0:
                if n > lim - i:
                    raise _Bad(i, "key", f"length {n} exceeds {lim - i} bytes remaining")
                key = data[i:i + n].tobytes() if view else data[i:i + n]
                i += n
            else:
                key = None
            n, i = varint(data, i, lim, "value_length")
            if n >= 0:
                if n > lim - i:
                    raise _Bad(i, "value", f"length {n} exceeds {lim - i} bytes remaining")
                value = data[i:i + n].tobytes() if view else data[i:i + n]
                i += n
            else:
                value = None
            nh, i = varint(data, i, lim, "header_count")
            if nh < 0:
                raise _Bad(i, "header_count", f"invalid number of record headers {nh}")
            if nh > lim - i:
                raise _Bad(i, "header_count", f"{nh} headers cannot fit in the {lim - i} bytes remaining")
            headers = []
            for h in range(nh):
                hk, i = varint(data, i, lim, f"headers[{h}].key_length")
                if hk < 0:
                    raise _Bad(i, f"headers[{h}].key_length", f"invalid negative header key size {hk}")
                if hk > lim - i:
                    raise _Bad(i, f"headers[{h}].key", f"length {hk} exceeds {lim - i} bytes remaining")
                hkey = str(data[i:i + hk], "utf-8", "replace")
                i += hk
                hv, i = varint(data, i, lim, f"headers[{h}].value_length")
                if hv >= 0:
                    if hv > lim - i:
                        raise _Bad(i, f"headers[{h}].value", f"length {hv} exceeds {lim - i} bytes remaining")
                    hval = data[i:i + hv].tobytes() if view else data[i:i + hv]
                    i += hv
                else:
                    hval = None
                headers.append((hkey, hval))
            if i != lim:
                raise _Bad(i, "length", f"record length {size} but its fields end after {i - body_start} bytes")
            if log_append_time is not None:
                ts = log_append_time
            else:
                ts = base_timestamp + ts_delta
                if not -(1 << 63) <= ts < (1 << 63):  # Java long arithmetic wraps
                    ts = ((ts + (1 << 63)) % (1 << 64)) - (1 << 63)
            off = base_offset + off_delta
            if not -(1 << 63) <= off < (1 << 63):
                off = ((off + (1 << 63)) % (1 << 64)) - (1 << 63)
            seq = increment_sequence(base_sequence, off_delta) if base_sequence >= 0 else NO_SEQUENCE
            append((off, ts, seq, key, value, headers, attributes, lim - rec_start))
    except _Bad as exc:
        at, fld, reason = exc.args
        return at, (at, idx, fld, reason)
    except VarintError as exc:
        at, reason, fld = exc.args
        return at, (at, idx, fld, reason)
    return i, None


def _as_view(data):
    """bytes and mmap are indexed as they are; anything else through a memoryview (no copy)."""
    if type(data) is bytes or isinstance(data, mmap.mmap):
        return data
    mv = memoryview(data)
    return mv if mv.format == "B" else mv.cast("B")


def _trailing(i: int, end: int, count: int):
    # DefaultRecordBatch.RecordIterator: "Incorrect declared batch size, records still
    # remaining in file"
    return (i, count, "records", f"{end - i} bytes remain after the {count} records the header declares")


def decode_v2_records_py(data, start: int, end: int, count: int, base_offset: int,
                       base_timestamp: int, base_sequence: int, log_append_time: int | None):
    """Pure-Python twin of ``_speedups.decode_records_v2`` (same results, same errors).

    Returns ``(records, error)``: a list of tuples (offset, timestamp, sequence, key, value,
    headers, attributes, size_in_bytes) and None, or the records read so far and
    ``(index in data, record index, field, reason)``.
    """
    out: list = []
    i, err = _walk_records_py(_as_view(data), start, end, count, base_offset, base_timestamp,
                              base_sequence, log_append_time, out)
    if err is None and i != end:
        err = _trailing(i, end, count)
    return out, err


def _index_records_py(data, start: int, end: int, count: int, step: int, step_bytes: int, first: int = 0,
                      limit: int = 1 << 62):
    """Pure-Python twin of ``_speedups.index_records_v2``: ``(error or None, marks, firsts)``."""
    data = _as_view(data)
    marks: list[int] = []
    firsts: list[int] = []
    i = start
    done = 0
    while done < count:
        marks.append(i)
        firsts.append(first + done)
        if done and i - start >= limit:
            return None, marks, firsts  # resume from this last mark
        # Up to `step` records, fewer when they pass `step_bytes` (one at least).
        out: list = []
        i, err = _walk_records_py(data, i, end, min(step, count - done), 0, 0, NO_SEQUENCE, None, out,
                                  first + done, step_bytes)
        if err is not None:
            return err, marks, firsts
        done += len(out)
    if i != end:
        return _trailing(i, end, first + count), marks, firsts
    marks.append(end)
    firsts.append(first + count)
    return None, marks, firsts


def decode_v2_records(*args):
    """A v2 batch's records: ``_speedups.decode_records_v2``, or its pure-Python twin."""
    if _speedups is not None:
        return _speedups.decode_records_v2(*args)
    return decode_v2_records_py(*args)


def _index_records(*args):
    if _speedups is not None:
        return _speedups.index_records_v2(*args)
    return _index_records_py(*args)


#: Records decoded at a time from a batch that holds more (or more than RECORDS_CHUNK_BYTES
#: of them): a batch's records are checked first (nothing built), then decoded lazily by
#: chunks (:class:`RecordStream`), so that no batch holds a list of millions of records (a
#: 390 KB gzip batch can hold 38 million) or gigabytes of values.
RECORDS_CHUNK = 4096
RECORDS_CHUNK_BYTES = 16 << 20
#: A batch larger than this in a memory-mapped file is read by windows of this size, the
#: pages behind released (:class:`~kgtool.codec.segment.PageReleaser`): a 2 GiB batch is
#: checked and decoded with tens of MB resident, not 2 GiB.
HUGE_BATCH = 64 << 20


def _page_releaser(data, start: int):
    """A PageReleaser for ``data`` when it is a memory-mapped file, else None."""
    if not isinstance(data, mmap.mmap):
        return None
    from kgtool.codec.segment import PageReleaser  # segment imports this module

    return PageReleaser(data, start)


def _crc32c_by_windows(data, start: int, end: int, releaser) -> int:
    mv = memoryview(data)
    crc = 0
    for i in range(start, end, HUGE_BATCH):
        j = min(end, i + HUGE_BATCH)
        crc = crc32c(mv[i:j], crc)
        releaser.advance(j)
    return crc


def _index_by_windows(buf, start: int, end: int, count: int, releaser):
    """_index_records over a huge records section, HUGE_BATCH bytes at a time, releasing the
    pages behind (``releaser`` None: in one go)."""
    if releaser is None:
        return _index_records(buf, start, end, count, RECORDS_CHUNK, RECORDS_CHUNK_BYTES)
    marks: list[int] = []
    firsts: list[int] = []
    pos, first = start, 0
    while True:
        err, m, f = _index_records(buf, pos, end, count - first, RECORDS_CHUNK, RECORDS_CHUNK_BYTES, first,
                                   HUGE_BATCH)
        marks += m
        firsts += f
        if err is not None or firsts[-1] == count:
            return err, marks, firsts
        pos, first = marks.pop(), firsts.pop()
        releaser.advance(pos)
#: The smallest v2 record (``DefaultRecord``): length, attributes, timestamp delta, offset
#: delta, key length, value length, header count, one byte each.
MIN_RECORD_SIZE = 7


def out_of_memory(source: str | None, position: int, what: str) -> EnvironmentProblem:
    """The error for a failed allocation while decoding the batch at ``position``."""
    where = f"{source}: " if source else ""
    return EnvironmentProblem(
        f"{where}byte {position} (batch@{position}): not enough memory to {what} "
        "(MemoryError): give kgtool more memory"
    )


class RecordStream(Sequence):
    """The records of a batch too large to hold as a list: checked when the batch was decoded,
    decoded here chunk by chunk (at most :data:`RECORDS_CHUNK` records, or one record past
    :data:`RECORDS_CHUNK_BYTES`) on each iteration; ``len`` and indexing work, nothing is kept.
    ``firsts`` are the chunks' first record indices, closed by the count; ``chunk(k)`` gives
    the field tuples of chunk ``k`` in :class:`Record` order; :meth:`chunk_tuples` hands them
    out without building records."""

    __slots__ = ("_firsts", "_chunk", "_source", "_position", "_control", "summarize_chunk")

    def __init__(self, firsts: list[int], chunk, source: str | None, position: int, control: bool = False,
                 summarize_chunk=None) -> None:
        self._firsts = firsts
        self._chunk = chunk
        self._source = source
        self._position = position
        self._control = control
        #: Optional ``f(k, with_payloads, slow) -> stats`` counting chunk ``k`` in C (a summary's
        #: counters, as ``_speedups.summarize_records_v2`` returns them; payloads to ``slow``).
        self.summarize_chunk = summarize_chunk

    @property
    def chunks(self) -> int:
        return len(self._firsts) - 1

    def __len__(self) -> int:
        return self._firsts[-1]

    def _tuples(self, k: int) -> list[tuple]:
        try:
            return self._chunk(k)
        except MemoryError:
            raise out_of_memory(self._source, self._position, "decode its records") from None

    def _records(self, k: int) -> list[Record]:
        tuples = self._tuples(k)
        if self._control:
            return [Record(*t, parse_control_record(t[3], t[4])) for t in tuples]
        return [Record(*t) for t in tuples]

    def chunk_records(self, k: int) -> list[Record]:
        """Chunk ``k`` as records."""
        return self._records(k)

    def chunk_tuples(self, k: int) -> list[tuple]:
        """Chunk ``k`` as field tuples (offset, timestamp, sequence, key, value, headers,
        attributes, size_in_bytes): what a summary counts, no Record built."""
        return self._tuples(k)

    def __iter__(self):
        for k in range(self.chunks):
            yield from self._records(k)

    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, slice):
            return [self[j] for j in range(*index.indices(n))]
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("record index out of range")
        k = bisect_right(self._firsts, index) - 1
        return self._records(k)[index - self._firsts[k]]

    def __repr__(self) -> str:
        return f"<RecordStream of {len(self)} records of batch@{self._position}>"


def _v2_chunk(buf, marks: list[int], firsts: list[int], args: tuple, release, k: int) -> list[tuple]:
    """Field tuples of chunk ``k`` of checked v2 records (``marks``, ``firsts`` from the
    index pass); ``release(start, end)``, if given, drops the pages read."""
    tuples, err = decode_v2_records(buf, marks[k], marks[k + 1], firsts[k + 1] - firsts[k], *args)
    if err is not None:  # pragma: no cover - the records were checked before
        raise DecodeError(f"record {err[1] + firsts[k]}: {err[3]}")
    if release is not None:
        release(marks[k], marks[k + 1])
    return tuples


def parse_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode a control record's key (and the end-transaction marker value).

    ``ControlRecordType.parse``: key = version int16 (>= 0) + type int16; COMMIT/ABORT values
    are ``EndTxnMarker`` (version int16, CoordinatorEpoch int32, tagged fields from v1).

    Raises:
        DecodeError: without position (the caller places it).
    """
    if key is None or len(key) < 4:
        raise DecodeError(
            f"control record key must have at least 4 bytes, found {0 if key is None else len(key)}"
        )
    version, type_id = struct.unpack_from(">hh", key, 0)
    if version < 0:
        raise DecodeError(f"invalid control record key version {version}")
    ctl = ControlRecord(type=type_id, type_name=CONTROL_TYPE_NAMES.get(type_id, "UNKNOWN"), version=version)
    if type_id in (0, 1):
        if value is None or len(value) < 6:
            raise DecodeError(
                f"end transaction marker value must have at least 6 bytes, found "
                f"{'null' if value is None else len(value)}"
            )
        vversion, epoch = struct.unpack_from(">hi", value, 0)
        if vversion < 0:
            raise DecodeError(f"invalid end transaction marker version {vversion}")
        ctl.value_version = vversion
        ctl.coordinator_epoch = epoch
    return ctl


def decode_batch_v2(
    data,
    pos: int = 0,
    *,
    source: str | None = None,
    base_position: int = 0,
    verify_crc: bool = True,
    decode_records: bool = True,
    max_decompressed_size: int = _comp.DEFAULT_MAX_DECOMPRESSED,
    record_sink=None,
    decompress=None,
) -> RecordBatch:
    """Decode the v2 batch at index ``pos`` of ``data`` (whose length field fits in ``data``).

    Args:
        data: the buffer (bytes, memoryview, mmap).
        pos: index of the batch's first byte.
        source: file name for errors. base_position: absolute position of ``data[0]``.
        verify_crc: check the CRC-32C; on mismatch raise :class:`CrcMismatch`.
        decode_records: decompress and decode the records (else ``records`` is empty).
        max_decompressed_size: cap of the decompressed records section.
        record_sink: optional ``f(buf, start, end, count, base_offset, base_timestamp,
            log_append_time, batch) -> bool`` offered the (decompressed) records section of a
            non-control batch instead of building :class:`Record` objects (summaries); when
            it returns False the records are decoded normally (and errors raised). A batch of
            more than :data:`RECORDS_CHUNK` records is checked first and then offered chunk
            by chunk (``[start, end)`` holding ``count`` of them), which the sink must take.
        decompress: optional ``f(codec, payload, index) -> bytes`` used instead of
            :func:`kgtool.codec.compression.decompress` (raising ``CompressionFailure``);
            ``index`` is ``pos`` (a summary reuses what its C walk already decompressed).

    Returns:
        The batch with absolute ``position``; ``records`` is a list, or for more than
        :data:`RECORDS_CHUNK` records (or :data:`RECORDS_CHUNK_BYTES` bytes of them) a
        :class:`RecordStream` (decoded as it is iterated).

    Raises:
        CrcMismatch: stored CRC != computed.
        DecodeError: any malformed field, with absolute position and context; a record count
            that the (decompressed) records section cannot hold is one.
        EnvironmentProblem: an allocation failed (``MemoryError``), with the batch named.
    """
    position = base_position + pos
    ctx = f"batch@{position}"
    n = len(data) - pos
    if n < RECORD_BATCH_OVERHEAD:
        raise DecodeError(
            f"batch header needs {RECORD_BATCH_OVERHEAD} bytes, {n} remaining",
            source=source, position=position, context=ctx,
        )
    (base_offset, batch_length, ple, magic, crc, attributes, last_offset_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_sequence, count) = _HEADER.unpack_from(data, pos)
    size = batch_length + LOG_OVERHEAD
    if magic != 2:
        raise DecodeError(f"magic {magic} is not 2", source=source, position=position + MAGIC_OFFSET,
                          context=ctx + ".magic")
    if size < RECORD_BATCH_OVERHEAD:
        # DefaultRecordBatch.ensureValid: "Record batch is corrupt (the size ... is smaller than
        # the minimum allowed overhead 61)"
        raise DecodeError(
            f"batch length {batch_length} is smaller than the minimum {RECORD_BATCH_OVERHEAD - LOG_OVERHEAD}",
            source=source, position=position + LENGTH_OFFSET, context=ctx + ".batch_length",
        )
    if size > n:
        raise DecodeError(
            f"batch length {batch_length} exceeds the {n - LOG_OVERHEAD} bytes remaining",
            source=source, position=position + LENGTH_OFFSET, context=ctx + ".batch_length",
        )
    end = pos + size
    crc_valid = None
    huge = size > HUGE_BATCH
    if verify_crc:
        releaser = _page_releaser(data, pos) if huge else None
        if releaser is None:
            computed = crc32c(memoryview(data)[pos + ATTRIBUTES_OFFSET:end])
        else:
            computed = _crc32c_by_windows(data, pos + ATTRIBUTES_OFFSET, end, releaser)
        crc_valid = computed == crc
        if not crc_valid:
            raise CrcMismatch(
                f"stored crc 0x{crc:08x} != computed 0x{computed:08x}",
                source=source, position=position + CRC_OFFSET, context=ctx + ".crc",
                batch_size=size, base_offset=base_offset,
            )
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec not in _comp.COMPRESSION_NAMES:
        raise DecodeError(f"unknown compression type id {codec}", source=source,
                          position=position + ATTRIBUTES_OFFSET, context=ctx + ".attributes")
    ts_type = LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME
    is_control = bool(attributes & CONTROL_FLAG_MASK)
    has_horizon = bool(attributes & DELETE_HORIZON_FLAG_MASK)
    batch = RecordBatch(
        position=position,
        base_offset=base_offset,
        last_offset=base_offset + last_offset_delta,
        batch_length=batch_length,
        size_in_bytes=size,
        partition_leader_epoch=ple,
        magic=magic,
        crc=crc,
        crc_valid=crc_valid,
        attributes=attributes,
        compression=_comp.COMPRESSION_NAMES[codec],
        timestamp_type=ts_type,
        is_transactional=bool(attributes & TRANSACTIONAL_FLAG_MASK),
        is_control=is_control,
        delete_horizon_ms=base_ts if has_horizon else None,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=count,
    )
    if not decode_records:
        return batch
    if count < 0:
        raise DecodeError(f"invalid record count {count}", source=source,
                          position=position + RECORDS_COUNT_OFFSET, context=ctx + ".record_count")
    recs_start = pos + RECORDS_OFFSET
    log_append_time = max_ts if ts_type == LOG_APPEND_TIME else None
    if codec == _comp.NONE:
        buf = data
        rbase = base_position
        rstart, rend = recs_start, end
        where = None
        room = f"the {end - recs_start} bytes of records"
    else:
        try:
            payload = memoryview(data)[recs_start:end]
            if decompress is None:
                buf = _comp.decompress(codec, payload, magic=2, max_size=max_decompressed_size)
            else:
                buf = decompress(codec, payload, pos)
        except _comp.CompressionFailure as exc:
            raise DecodeError(str(exc), source=source, position=position + RECORDS_OFFSET,
                              context=ctx + ".records") from None
        except MemoryError:
            raise out_of_memory(source, position, f"decompress its {batch.compression} records") from None
        finally:
            payload = None  # noqa: F841 - release the view on data
        if huge and (releaser := _page_releaser(data, pos)) is not None:
            releaser.advance(end)  # the compressed bytes are read
        rstart, rend = 0, len(buf)
        rbase = None
        where = position + RECORDS_OFFSET
        room = f"the {rend} decompressed bytes"
    # Every record takes at least MIN_RECORD_SIZE bytes: guard the count before looping.
    if count > (rend - rstart) // MIN_RECORD_SIZE:
        raise DecodeError(
            f"record count {count} cannot fit in {room} (a record takes at least {MIN_RECORD_SIZE} bytes)",
            source=source, position=position + RECORDS_COUNT_OFFSET, context=ctx + ".record_count",
        )

    def located(err) -> DecodeError:
        at, idx, fld, reason = err
        if rbase is None:
            reason = f"{reason} (at byte {at} of the decompressed records)"
            abs_pos = where
        else:
            abs_pos = rbase + at
        where_ctx = f"{ctx}.records" if fld == "records" else f"{ctx}.records[{idx}].{fld}"
        return DecodeError(reason, source=source, position=abs_pos, context=where_ctx)

    def control(idx: int, t) -> ControlRecord:
        try:
            return parse_control_record(t[3], t[4])
        except DecodeError as exc:
            raise DecodeError(exc.reason, source=source, position=position + RECORDS_OFFSET,
                              context=f"{ctx}.records[{idx}].key") from None

    try:
        marks = None
        release = None  # drops the pages of a huge plain batch behind each chunk read
        if count > RECORDS_CHUNK or rend - rstart > RECORDS_CHUNK_BYTES:
            # Too many to hold: check them all now (nothing built), decode them later by chunks.
            plain_huge = huge and buf is data
            err, marks, firsts = _index_by_windows(buf, rstart, rend, count,
                                                   _page_releaser(data, rstart) if plain_huge else None)
            if err is not None:
                raise located(err)
            if plain_huge and (releaser := _page_releaser(data, rstart)) is not None:
                release = releaser.release
        if record_sink is not None and not is_control:
            if marks is None:
                if record_sink(buf, rstart, rend, count, base_offset, base_ts, log_append_time, batch):
                    return batch
            else:
                # Checked records: the sink takes them chunk by chunk.
                for k in range(len(marks) - 1):
                    record_sink(buf, marks[k], marks[k + 1], firsts[k + 1] - firsts[k], base_offset, base_ts,
                                log_append_time, batch)
                    if release is not None:
                        release(marks[k], marks[k + 1])
                return batch
        args = (base_offset, base_ts, base_sequence, log_append_time)
        if marks is None:
            tuples, err = decode_v2_records(buf, rstart, rend, count, *args)
            if err is not None:
                raise located(err)
            if is_control:
                batch.records = [Record(*t, control(idx, t)) for idx, t in enumerate(tuples)]
            else:
                batch.records = [Record(*t) for t in tuples]
        else:
            if is_control:  # every control key is checked now, as for a list
                for k in range(len(marks) - 1):
                    for j, t in enumerate(_v2_chunk(buf, marks, firsts, args, None, k)):
                        control(firsts[k] + j, t)
            # A view keeps a mapped file open (scan_file cannot close it under the stream).
            held = buf if type(buf) is bytes else memoryview(buf)
            batch.records = RecordStream(firsts, partial(_v2_chunk, held, marks, firsts, args, release), source,
                                         position, is_control)
    except MemoryError:
        raise out_of_memory(source, position, "decode its records") from None
    return batch


class CrcMismatch(DecodeError):
    """A batch (or legacy message) whose stored CRC differs from the computed one."""

    def __init__(self, reason: str, *, batch_size: int | None = None, base_offset: int | None = None,
                 **where) -> None:
        self.batch_size = batch_size
        self.base_offset = base_offset
        super().__init__(reason, **where)


# --- encoder ----------------------------------------------------------------------------------

def _as_record_fields(item: Any, index: int, base_offset: int):
    """(offset_delta or None, timestamp or None, key, value, headers, attributes)."""
    if isinstance(item, Record):
        return item.offset - base_offset, item.timestamp, item.key, item.value, item.headers, item.attributes
    if isinstance(item, dict):
        off = item.get("offset")
        return (None if off is None else off - base_offset, item.get("timestamp"), item.get("key"),
                item.get("value"), item.get("headers") or [], item.get("attributes", 0))
    t = tuple(item)
    if not 2 <= len(t) <= 4:
        raise ValueError(f"record {index}: expected (key, value[, headers[, timestamp]])")
    key, value = t[0], t[1]
    headers = t[2] if len(t) > 2 and t[2] is not None else []
    ts = t[3] if len(t) > 3 else None
    return None, ts, key, value, headers, 0


def _b(v) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def encode_record_v2(offset_delta: int, timestamp_delta: int, key, value,
                     headers: Sequence[tuple[str, Any]] = (), attributes: int = 0) -> bytes:
    """One v2 record (``DefaultRecord.writeTo``), length prefix included."""
    key = _b(key)
    value = _b(value)
    body = bytearray()
    body += struct.pack(">b", attributes)
    body += write_varlong(timestamp_delta)
    body += write_varint(offset_delta)
    if key is None:
        body += write_varint(-1)
    else:
        body += write_varint(len(key)) + key
    if value is None:
        body += write_varint(-1)
    else:
        body += write_varint(len(value)) + value
    body += write_varint(len(headers))
    for hk, hv in headers:
        hkb = hk.encode("utf-8") if isinstance(hk, str) else bytes(hk)
        body += write_varint(len(hkb)) + hkb
        hvb = _b(hv)
        if hvb is None:
            body += write_varint(-1)
        else:
            body += write_varint(len(hvb)) + hvb
    return write_varint(len(body)) + bytes(body)


def encode_batch_v2(
    records: Iterable[Any] = (),
    *,
    base_offset: int = 0,
    compression: str | int = "none",
    timestamp_type: str = CREATE_TIME,
    log_append_time: int | None = None,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    timestamp: int | None = None,
    attributes_extra: int = 0,
) -> bytes:
    """Encode one v2 batch as ``MemoryRecordsBuilder`` writes it.

    Args:
        records: items ``(key, value[, headers[, timestamp]])`` (keys/values bytes, str or None;
            headers ``[(str, bytes|None)]``), or :class:`Record` / dicts with ``offset`` to
            place a record at a given offset (compacted gaps). Offsets are otherwise
            consecutive from ``base_offset``.
        compression: "none" | "gzip" | "snappy" | "lz4" | "zstd" (or the id).
        timestamp_type: CREATE_TIME or LOG_APPEND_TIME (then ``log_append_time`` is the
            batch's MaxTimestamp, as the broker sets it).
        timestamp: timestamp of records given without one (default
            ``RecordBatch.NO_TIMESTAMP``, -1).
        delete_horizon_ms: sets attribute bit 6 and BaseTimestamp (the log cleaner's form).
        base_timestamp, max_timestamp, last_offset_delta: override the computed header values.
        attributes_extra: OR-ed into the attributes (tests of unused bits).

    Returns:
        The batch bytes, CRC-32C computed.
    """
    codec = _comp.compression_id(compression)
    default_ts = -1 if timestamp is None else timestamp
    items = []
    for i, item in enumerate(records):
        off_delta, ts, key, value, headers, attrs = _as_record_fields(item, i, base_offset)
        items.append((i if off_delta is None else off_delta, default_ts if ts is None else ts,
                      key, value, headers, attrs))
    if base_timestamp is None:
        if delete_horizon_ms is not None:
            base_timestamp = delete_horizon_ms
        else:
            base_timestamp = items[0][1] if items else -1
    body = b"".join(
        encode_record_v2(od, ts - base_timestamp, k, v, h, a) for od, ts, k, v, h, a in items
    )
    if last_offset_delta is None:
        last_offset_delta = items[-1][0] if items else -1
    if max_timestamp is None:
        if timestamp_type == LOG_APPEND_TIME:
            if log_append_time is None:
                raise ValueError("LOG_APPEND_TIME needs log_append_time")
            max_timestamp = log_append_time
        else:
            max_timestamp = max((it[1] for it in items), default=-1)
    attributes = codec | attributes_extra
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    elif timestamp_type != CREATE_TIME:
        raise ValueError(f"v2 batches have CREATE_TIME or LOG_APPEND_TIME, not {timestamp_type}")
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK
    payload = _comp.compress(codec, body, magic=2) if codec else body
    after_crc = _AFTER_CRC.pack(attributes, last_offset_delta, base_timestamp, max_timestamp,
                                producer_id, producer_epoch, base_sequence, len(items)) + payload
    crc = crc32c(after_crc)
    # Length counts everything after itself: PartitionLeaderEpoch, Magic, CRC, then the rest.
    batch_length = PARTITION_LEADER_EPOCH_LENGTH + MAGIC_LENGTH + CRC_LENGTH + len(after_crc)
    head = struct.pack(">qiibI", base_offset, batch_length, partition_leader_epoch, 2, crc)
    return head + after_crc


def encode_control_record_key(type_id: int | str, version: int = 0) -> bytes:
    if isinstance(type_id, str):
        type_id = CONTROL_TYPE_IDS[type_id.upper()]
    return struct.pack(">hh", version, type_id)


def encode_end_txn_marker(
    *,
    commit: bool = True,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int = -1,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A control batch with one COMMIT or ABORT marker (``MemoryRecords.withEndTransactionMarker``):
    transactional + control attributes, key (version 0, type), value EndTxnMarker v0."""
    key = encode_control_record_key(1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch_v2(
        [(key, value, [], timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
