"""Segment bytes -> typed NumPy columns of plain offset commits, rare records as entries.

A ``__consumer_offsets`` log is mostly OffsetCommit records: :func:`decode_commit_chunks`
turns those into columns (:class:`CommitChunk`) without a Python object per record, and keeps
everything else (group metadata, KIP-848 records, transaction markers, unknown record types,
records that do not decode, damaged stretches) as :class:`~kgtool.offsets.entries.LogEntry`
objects built exactly as :func:`kgtool.offsets.decode.entries_from_bytes` builds them, with
their place among the rows. Keys are interned in a :class:`KeyTable` that lives as long as
the caller wants (one log partition, across chunks and files).

The contract is equivalence: for any bytes and arguments,
``[e for c in decode_commit_chunks(...) for e in chunk_entries(c, keys, p)]`` equals
``list(entries_from_bytes(...))``, on the C path and on the pure-Python path, and both
paths give the same chunks column by column (tests/offsets/test_columns.py).

"Plain" is exactly what :func:`kgtool.coordinator.records.decode_offset_commit` accepts, in
a batch that is not a control batch (v2 ``DefaultRecordBatch`` or a legacy message set).

The C path (``kgtool.codec._speedups.CommitScanner``) walks v2 batches itself (CRC-32C,
decompression through :func:`kgtool.codec.compression.decompress` with the usual size cap,
``DefaultRecord`` parsing, OffsetCommitKey/Value layouts) and stops before anything it
declines (control batches, legacy magic, CRC mismatch, malformed records, codec failures,
chain problems): the general path (:func:`kgtool.codec.segment.scan_segment`) then takes
exactly that one entry, as :func:`kgtool.codec.summary.summarize_segment` does, so problems,
resynchronisation and errors are the general path's own.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from kgtool.codec import compression as _comp
from kgtool.codec.model import CONTROL_TYPE_NAMES  # (at import: _marker_entry runs once per marker)
from kgtool.coordinator.schema import uuid_to_str
from kgtool.offsets.entries import CONTROL, LEGACY_OFFSET_COMMIT, OFFSET_COMMIT, PROBLEM, LogEntry


__all__ = ["CommitChunk", "KeyTable", "chunk_entries", "decode_commit_chunks", "transaction_markers"]

#: (name, dtype) of the per-row columns of a :class:`CommitChunk`, in the order the C
#: extension returns them (``CommitScanner.take``).
ROW_COLUMNS: list[tuple[str, Any]] = [
    ("record_offset", np.int64),
    ("position", np.int64),
    ("timestamp", np.int64),
    ("producer_id", np.int64),
    ("producer_epoch", np.int16),
    ("transactional", np.bool_),
    ("key", np.int32),
    ("version", np.int8),
    ("offset", np.int64),
    ("leader_epoch", np.int32),
    ("metadata", np.int32),
    ("commit_timestamp", np.int64),
    ("expire_timestamp", np.int64),
    ("topic_id", np.int32),
]


def _speedups() -> Any:
    """The C extension when it is in use (as kgtool.codec decides: built, and
    KGTOOL_PURE_PYTHON not set) and has the column scanner; else None."""
    from kgtool.codec import batch as _batch

    sp = _batch.speedups()
    if sp is None or not hasattr(sp, "CommitScanner"):
        return None
    return sp


def _pick(pure: bool | None) -> Any:
    if pure:
        return None
    sp = _speedups()
    if sp is None and pure is False:
        raise RuntimeError("pure=False: the C extension kgtool.codec._speedups is not available")
    return sp


# ---------------------------------------------------------------------------------------------
# Keys


class KeyTable:
    """Interned OffsetCommitKeys of one log partition (persists across chunks and files);
    grows with distinct (group, topic, partition), never with records.

    Codes are given in order of first appearance (a key, then its group and topic), the same
    on the C and the pure-Python paths; one table may be used by both.
    """

    def __init__(self) -> None:
        self.groups: list[str] = []
        self.topics: list[str] = []
        self._group_code: dict[str, int] = {}
        self._topic_code: dict[str, int] = {}
        self._code: dict[bytes, int] = {}  # raw OffsetCommitKey bytes -> code
        self._raw: list[bytes] = []
        self._n = 0
        self._kg = np.empty(64, np.int32)
        self._kt = np.empty(64, np.int32)
        self._kp = np.empty(64, np.int32)
        self._ky = np.empty(64, np.int8)
        self._c: Any = None  # the C twin (kgtool.codec._speedups.KeyIndex), kept in step

    def __len__(self) -> int:
        return self._n

    def key_group(self) -> np.ndarray:
        """int32 code into :attr:`groups`, per key code."""
        return self._kg[: self._n]

    def key_topic(self) -> np.ndarray:
        """int32 code into :attr:`topics`, per key code."""
        return self._kt[: self._n]

    def key_partition(self) -> np.ndarray:
        """int32 partition, per key code."""
        return self._kp[: self._n]

    def key_type(self) -> np.ndarray:
        """int8 record type, per key code: 0 (legacy_offset_commit) or 1 (offset_commit)."""
        return self._ky[: self._n]

    def key(self, code: int) -> tuple[int, str, str, int]:
        """(record type, group, topic, partition) of a key code."""
        return (int(self._ky[code]), self.groups[self._kg[code]], self.topics[self._kt[code]], int(self._kp[code]))

    def _reserve(self, n: int) -> None:
        if n > len(self._kg):
            cap = max(n, 2 * len(self._kg))
            for name in ("_kg", "_kt", "_kp", "_ky"):
                old = getattr(self, name)
                new = np.empty(cap, old.dtype)
                new[: self._n] = old[: self._n]
                setattr(self, name, new)

    def _append(self, raw: bytes, g: int, t: int, p: int, rtype: int) -> int:
        code = self._n
        self._reserve(code + 1)
        self._kg[code] = g
        self._kt[code] = t
        self._kp[code] = p
        self._ky[code] = rtype
        self._code[raw] = code
        self._raw.append(raw)
        self._n = code + 1
        return code

    def _intern(self, raw: bytes, rtype: int, group: str, topic: str, partition: int) -> int:
        """The pure-Python path's interning of a new plain key (fields from decode_offset_commit)."""
        g = self._group_code.get(group)
        if g is None:
            g = self._group_code[group] = len(self.groups)
            self.groups.append(group)
        t = self._topic_code.get(topic)
        if t is None:
            t = self._topic_code[topic] = len(self.topics)
            self.topics.append(topic)
        return self._append(raw, g, t, partition, rtype)

    def _cindex(self, sp: Any) -> Any:
        """The C KeyIndex, caught up with keys interned on the pure-Python path."""
        if self._c is None:
            self._c = sp.KeyIndex()
        c = self._c
        k = c.counts[0]
        while k < self._n:
            code = c.add(self._raw[k])
            if code != k:  # pragma: no cover - both sides intern in the same order
                raise AssertionError(f"KeyIndex out of step: key {k} got code {code}")
            k += 1
        if c.counts != (self._n, len(self.groups), len(self.topics)):  # pragma: no cover
            raise AssertionError("KeyIndex out of step with the KeyTable")
        return c

    def _pull(self) -> None:
        """Take in the keys the C scanner interned."""
        c = self._c
        if c is None or c.counts == (self._n, len(self.groups), len(self.topics)):
            return
        raws, gcs, tcs, parts, types, groups, topics = c.export(self._n, len(self.groups), len(self.topics))
        for s in groups:
            self._group_code[s] = len(self.groups)
            self.groups.append(s)
        for s in topics:
            self._topic_code[s] = len(self.topics)
            self.topics.append(s)
        k0, k1 = self._n, self._n + len(raws)
        self._reserve(k1)
        self._kg[k0:k1] = gcs
        self._kt[k0:k1] = tcs
        self._kp[k0:k1] = parts
        self._ky[k0:k1] = types
        self._code.update(zip(raws, range(k0, k1)))
        self._raw.extend(raws)
        self._n = k1


# ---------------------------------------------------------------------------------------------
# Chunks


@dataclass(eq=False)
class CommitChunk:
    """Plain offset commits of a stretch of a log as columns, rare entries in between.

    Row ``i`` of every array is one OffsetCommit record (log order). ``key`` codes index the
    :class:`KeyTable`; ``metadata`` codes index :attr:`metadata_values` (this chunk's own).
    Tombstones (a null value) have ``version`` -1, ``offset`` 0, ``leader_epoch`` -1,
    ``metadata`` -1, ``commit_timestamp`` 0, ``expire_timestamp`` -1. ``leader_epoch`` is -1
    for versions 0-2 (no such field); ``expire_timestamp`` is -1 except for version 1.
    ``rare`` holds ``(index, entry)``: the entry comes after ``index`` commit rows and before
    row ``index``.
    """

    source: str
    n: int
    record_offset: np.ndarray
    position: np.ndarray
    timestamp: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    transactional: np.ndarray
    key: np.ndarray
    version: np.ndarray
    offset: np.ndarray
    leader_epoch: np.ndarray
    metadata: np.ndarray
    metadata_values: list[str]
    commit_timestamp: np.ndarray
    expire_timestamp: np.ndarray
    #: v4's TopicId (4.1+): code into :attr:`topic_id_values` (this chunk's own), -1 none
    topic_id: np.ndarray
    topic_id_values: list[str]
    rare: list[tuple[int, LogEntry]]
    batches: int
    end: int
    #: what the log cleaner left in the chunk's batches (kgtool.offsets.compaction reads it)
    signs: BatchSigns | None = None


@dataclass
class BatchSigns:
    """What Kafka's log cleaner leaves in the batch headers it rewrites (``MemoryRecords.filterTo``):
    a cleaned v2 batch keeps its base and last offset with fewer records (``overrideLastOffset``),
    an emptied one kept for its producer's state is a header alone (``writeEmptyHeader``), and a
    batch with a tombstone or a transaction marker gets a delete horizon (attribute bit 6).

    ``end``: one past the last offset of the last such batch (-1: none)."""

    empty_batches: int = 0
    horizon_batches: int = 0
    end: int = -1

    def note(self, b: Any) -> None:
        """One decoded batch (:class:`kgtool.codec.model.RecordBatch`); legacy message sets
        show cleaning only by their missing offsets."""
        if b.magic < 2 or b.last_offset_delta is None:
            return
        count = b.record_count or 0
        horizon = b.delete_horizon_ms is not None
        if count == 0:
            self.empty_batches += 1
        if horizon:
            self.horizon_batches += 1
        if count == 0 or count < b.last_offset_delta + 1 or horizon:
            self.end = max(self.end, b.last_offset + 1)

    def add(self, empty: int, horizon: int, end: int) -> None:
        self.empty_batches += empty
        self.horizon_batches += horizon
        self.end = max(self.end, end)


def _count_batches(position: np.ndarray, rare: list[tuple[int, LogEntry]]) -> int:
    """Distinct batch positions holding a commit row or a rare entry other than a problem
    (what the Spark job's coverage counts as batches). Positions only grow in a chunk."""
    n = int(np.count_nonzero(position[1:] != position[:-1])) + 1 if len(position) else 0
    others = sorted({e.position for _, e in rare if e.kind != PROBLEM})
    if others:
        p = np.array(others, np.int64)
        k = np.minimum(np.searchsorted(position, p), max(len(position) - 1, 0))
        n += len(p) if not len(position) else int(np.count_nonzero(position[k] != p))
    return n


def _chunk(source: str, cols: list[np.ndarray], metas: list[str], rare: list, end: int,
           topic_ids: list[str], signs: BatchSigns) -> CommitChunk:
    kw = {name: a for (name, _), a in zip(ROW_COLUMNS, cols)}
    return CommitChunk(source=source, n=len(cols[0]), metadata_values=metas, topic_id_values=topic_ids,
                       rare=rare, batches=_count_batches(kw["position"], rare) + signs.empty_batches, end=end,
                       signs=signs, **kw)


class _PyRows:
    """The pure-Python twin of ``CommitScanner``: per-column lists."""

    def __init__(self) -> None:
        self.cols: list[list] = [[] for _ in ROW_COLUMNS]
        self.metas: list[str] = []
        self.meta_code: dict[str, int] = {}
        self.tids: list[str] = []
        self.tid_code: dict[str, int] = {}
        self.signs = BatchSigns()

    @property
    def n(self) -> int:
        return len(self.cols[0])

    def take(self, source: str, rare: list, end: int) -> CommitChunk:
        cols = [np.array(c, dtype) for c, (_, dtype) in zip(self.cols, ROW_COLUMNS)]
        ch = _chunk(source, cols, self.metas, rare, end, self.tids, self.signs)
        self.__init__()
        return ch


class _Batch:
    """The batch fields ``record_entries`` reads, for records the C scan hands back."""

    __slots__ = ("position", "producer_id", "producer_epoch", "is_transactional", "is_control")

    def __init__(self, position: int, producer_id: int, producer_epoch: int, txn: int) -> None:
        self.position = position
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.is_transactional = bool(txn)
        self.is_control = False


class _Rec:
    __slots__ = ("offset", "timestamp", "key", "value", "control")

    def __init__(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.control = None


def _range(data: Any, start: int, end: int | None, base_position: int, chain_from: int | None) -> tuple[int, int]:
    """(first entry index, index bound) exactly as scan_segment computes them."""
    from kgtool.codec.segment import align_chain

    n = len(data)
    lo = max(start - base_position, 0)
    hi = n if end is None else min(max(end - base_position, 0), n)
    return align_chain(data, lo, base_position, chain_from), hi


def decode_commit_chunks(
    data: Any,
    *,
    source: str,
    log_partition: int,
    keys: KeyTable,
    start: int = 0,
    end: int | None = None,
    base_position: int = 0,
    chain_from: int | None = None,
    max_rows: int = 1 << 18,
    pure: bool | None = None,
) -> Iterator[CommitChunk]:
    """Batches starting in [start, end) of data (same arguments and semantics as
    :func:`kgtool.codec.segment.scan_segment` / :func:`kgtool.offsets.decode.entries_from_bytes`),
    in chunks of about ``max_rows`` commit rows: a chunk stops at the batch boundary where it
    reaches ``max_rows`` (memory is bounded by max_rows plus one batch).

    Every chunk's ``end`` is the absolute position where the next one starts. A last chunk is
    yielded when it holds rows or rare entries or covers bytes, and always when it is the only
    one (an empty range gives one empty chunk whose ``end`` is where the range's first entry
    would start).

    Args:
        keys: the log partition's :class:`KeyTable` (codes in the chunks index it).
        pure: None: the C path when the extension is in use (built, KGTOOL_PURE_PYTHON unset);
            True: pure Python; False: the C path (RuntimeError without the extension).
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be at least 1, not {max_rows}")
    sp = _pick(pure)
    i, hi = _range(data, start, end, base_position, chain_from)
    if sp is None:
        yield from _chunks_pure(data, source, log_partition, keys, i, hi, base_position, max_rows)
    else:
        yield from _chunks_c(sp, data, source, log_partition, keys, i, hi, base_position, max_rows)


def _chunks_pure(data: Any, source: str, log_partition: int, keys: KeyTable, i: int, hi: int,
                 base_position: int, max_rows: int) -> Iterator[CommitChunk]:
    from kgtool.codec.segment import scan_segment
    from kgtool.coordinator.records import decode_offset_commit
    from kgtool.offsets.decode import entries_of, record_entries

    rows = _PyRows()
    rare: list[tuple[int, LogEntry]] = []
    chunk_start = pos_end = base_position + i
    yielded = False
    kcode = keys._code
    (c_roff, c_pos, c_ts, c_pid, c_pe, c_txn, c_key, c_ver, c_off, c_lep, c_meta, c_cts, c_ets, c_tid) = rows.cols
    for item in scan_segment(data, source=source, start=base_position + i, end=base_position + hi,
                             base_position=base_position, chain_from=base_position + i):
        if hasattr(item, "records"):
            rows.signs.note(item)
        if not hasattr(item, "records") or item.is_control:
            n = len(c_roff)
            rare.extend((n, e) for e in entries_of(item, source, log_partition, data, base_position))
        else:
            pos, pid, pe, txn = item.position, item.producer_id, item.producer_epoch, bool(item.is_transactional)
            for r in item.records:
                key = r.key
                fast = decode_offset_commit(key, r.value) if (key is not None and r.control is None) else None
                if fast is None:
                    n = len(c_roff)
                    rare.extend((n, e) for e in record_entries(item, r, source, log_partition, data,
                                                                base_position))
                    continue
                rtype, group, topic, partition, version, offset, epoch, metadata, commit_ts, expire_ts, tid = fast
                raw = key if type(key) is bytes else bytes(key)
                code = kcode.get(raw)
                if code is None:
                    code = keys._intern(raw, rtype, group, topic, partition)
                c_roff.append(r.offset)
                c_pos.append(pos)
                c_ts.append(r.timestamp)
                c_pid.append(pid)
                c_pe.append(pe)
                c_txn.append(txn)
                c_key.append(code)
                if version is None:  # a tombstone
                    c_ver.append(-1)
                    c_off.append(0)
                    c_lep.append(-1)
                    c_meta.append(-1)
                    c_cts.append(0)
                    c_ets.append(-1)
                    c_tid.append(-1)
                    continue
                c_ver.append(version)
                c_off.append(offset)
                c_lep.append(-1 if epoch is None else epoch)
                m = rows.meta_code.get(metadata)
                if m is None:
                    m = rows.meta_code[metadata] = len(rows.metas)
                    rows.metas.append(metadata)
                c_meta.append(m)
                c_cts.append(commit_ts)
                c_ets.append(-1 if expire_ts is None else expire_ts)
                if tid is None:
                    c_tid.append(-1)
                else:
                    t = rows.tid_code.get(tid)
                    if t is None:
                        t = rows.tid_code[tid] = len(rows.tids)
                        rows.tids.append(tid)
                    c_tid.append(t)
        pos_end = item.end_position
        if len(c_roff) >= max_rows:
            yield rows.take(source, rare, pos_end)
            (c_roff, c_pos, c_ts, c_pid, c_pe, c_txn, c_key, c_ver, c_off, c_lep, c_meta, c_cts, c_ets, c_tid) = rows.cols
            rare = []
            chunk_start = pos_end
            yielded = True
    if rows.n or rare or pos_end > chunk_start or not yielded:
        yield rows.take(source, rare, pos_end)


def _marker_entry(t: tuple, source: str, log_partition: int) -> LogEntry:
    """A transaction marker the C scan decoded, as record_entries builds it for a control
    batch (kind CONTROL, ControlRecordType name, EndTransactionMarker coordinator epoch)."""
    pos, off, ts, pid, pe, txn, ctype, epoch = t[:8]
    return LogEntry(log_partition=log_partition, offset=off, position=pos, source=source, timestamp=ts,
                    producer_id=pid, producer_epoch=pe, is_transactional=bool(txn), is_control=True, kind=CONTROL,
                    control_type=CONTROL_TYPE_NAMES.get(ctype, "UNKNOWN"), coordinator_epoch=epoch)


def _rare_of_raw(raw: list[tuple], rare: list[tuple[int, LogEntry]], source: str, log_partition: int,
                 data: Any = None, base_position: int = 0) -> None:
    """Entries of the records the C scan handed back (``CommitScanner.scan``'s ``raw``)."""
    from kgtool.offsets.decode import record_entries

    for t in raw:
        if t[9]:
            rare.append((t[8], _marker_entry(t, source, log_partition)))
            continue
        pos, off, ts, pid, pe, txn, k, v, index, _ = t
        rare.extend((index, e) for e in record_entries(_Batch(pos, pid, pe, txn), _Rec(off, ts, k, v),
                                                        source, log_partition, data, base_position))


def _chunks_c(sp: Any, data: Any, source: str, log_partition: int, keys: KeyTable, i: int, hi: int,
              base_position: int, max_rows: int) -> Iterator[CommitChunk]:
    from kgtool.codec.segment import PageReleaser, scan_segment
    from kgtool.offsets.decode import entries_of, record_entries

    cols = sp.CommitScanner(keys._cindex(sp), max_rows)
    rare: list[tuple[int, LogEntry]] = []
    raw: list[tuple] = []
    releaser = PageReleaser(data, i)
    state = {"i": i, "chunk_start": base_position + i, "yielded": False, "done": False}

    signs = BatchSigns()

    def take(end: int) -> CommitChunk:
        nonlocal rare, signs
        keys._pull()
        t = cols.take()
        ncols = len(ROW_COLUMNS)
        arrays = [np.frombuffer(b, dtype) for b, (_, dtype) in zip(t[1 : ncols + 1], ROW_COLUMNS)]
        signs.add(*cols.batch_signs())
        chunk = _chunk(source, arrays, t[ncols + 1], rare, end, [uuid_to_str(b) for b in t[ncols + 2]], signs)
        signs = BatchSigns()
        rare = []
        state["chunk_start"] = end
        state["yielded"] = True
        return chunk

    def general(j: int) -> int:
        """The entry at j on the general path (scan_segment over exactly that entry)."""
        for item in scan_segment(data, source=source, start=base_position + j, end=base_position + j + 1,
                                 base_position=base_position, chain_from=base_position + j):
            if hasattr(item, "records"):
                signs.note(item)
            if not hasattr(item, "records") or item.is_control:
                n = cols.n
                rare.extend((n, e) for e in entries_of(item, source, log_partition, data, base_position))
            else:
                pos, pid, pe = item.position, item.producer_id, item.producer_epoch
                txn = bool(item.is_transactional)
                for r in item.records:
                    if r.key is not None and r.control is None and cols.add(
                            pos, r.offset, r.timestamp, pid, pe, txn, r.key, r.value):
                        continue
                    n = cols.n
                    rare.extend((n, e) for e in record_entries(item, r, source, log_partition, data,
                                                                base_position))
            j = item.end_position - base_position
        return j

    def fill() -> CommitChunk | None:
        """Decode up to the next chunk (None: nothing more)."""
        if state["done"]:
            return None
        keys._cindex(sp)  # keys another generator interned on the pure path meanwhile
        i = state["i"]
        while i < hi:
            j, declined = cols.scan(data, i, hi, base_position, max_rows, _comp.decompress_or_none, raw)
            if raw:
                _rare_of_raw(raw, rare, source, log_partition, data, base_position)
                raw.clear()
            if declined:
                j = general(j)
            if j <= i:  # pragma: no cover - the scan or the general path always moves on
                raise AssertionError(f"no progress at index {i}")
            i = state["i"] = j
            releaser.advance(i)
            if cols.n >= max_rows:
                return take(base_position + i)
        state["done"] = True
        keys._pull()
        if cols.n or rare or base_position + i > state["chunk_start"] or not state["yielded"]:
            return take(base_position + i)
        return None

    while True:
        chunk = fill()
        if chunk is None:
            return
        yield chunk


# ---------------------------------------------------------------------------------------------
# Back to entries


def chunk_entries(chunk: CommitChunk, keys: KeyTable, log_partition: int) -> list[LogEntry]:
    """The chunk back as LogEntry objects in log order: commit rows rebuilt exactly as
    :func:`kgtool.offsets.decode.entries_from_bytes` builds them (``record_entries`` on
    ``decode_offsets_record``), rare entries in their places. The oracle bridge of the tests."""
    groups, topics = keys.groups, keys.topics
    kg, kt, kp, ky = (a.tolist() for a in (keys.key_group(), keys.key_topic(), keys.key_partition(), keys.key_type()))
    metas = chunk.metadata_values
    cols = [getattr(chunk, name).tolist() for name, _ in ROW_COLUMNS]
    rare = chunk.rare
    out: list[LogEntry] = []
    ri = 0
    source = chunk.source
    tids = chunk.topic_id_values
    for i, (roff, pos, ts, pid, pe, txn, k, ver, off, lep, meta, cts, ets, tid) in enumerate(zip(*cols)):
        while ri < len(rare) and rare[ri][0] <= i:
            out.append(rare[ri][1])
            ri += 1
        group = groups[kg[k]]
        key = {"group": group, "topic": topics[kt[k]], "partition": kp[k]}
        if ver < 0:
            value = None
            vv = None
        else:
            vv = ver
            if ver >= 3:
                value = {"offset": off, "leader_epoch": lep, "metadata": metas[meta], "commit_timestamp": cts}
                if tid >= 0:
                    value["topic_id"] = tids[tid]
            elif ver == 1:
                value = {"offset": off, "metadata": metas[meta], "commit_timestamp": cts, "expire_timestamp": ets}
            else:
                value = {"offset": off, "metadata": metas[meta], "commit_timestamp": cts}
        out.append(LogEntry(
            log_partition=log_partition, offset=roff, position=pos, source=source, timestamp=ts,
            producer_id=pid, producer_epoch=pe, is_transactional=bool(txn), is_control=False,
            kind=OFFSET_COMMIT if ky[k] == 1 else LEGACY_OFFSET_COMMIT, group=group, key=key,
            value=value, value_version=vv,
        ))
    out.extend(e for _, e in rare[ri:])
    return out


# ---------------------------------------------------------------------------------------------
# Transaction markers

_OFFSET_LENGTH = struct.Struct(">qi")


def _skip_to_control_py(data: Any, i: int, hi: int) -> int:
    """Pure-Python twin of ``_speedups.skip_to_control`` (see there)."""
    n = len(data)
    hi = min(hi, n)
    unpack = _OFFSET_LENGTH.unpack_from
    while i < hi:
        if n - i < 17:  # Records.HEADER_SIZE_UP_TO_MAGIC
            break
        _, length = unpack(data, i)
        magic = data[i + 16]
        if length < 14:  # LegacyRecord.RECORD_OVERHEAD_V0
            break
        size = length + 12
        # DefaultRecordBatch.RECORD_BATCH_OVERHEAD; LOG_OVERHEAD + LegacyRecord.recordOverhead(magic)
        minimum = 61 if magic == 2 else 34 if magic == 1 else 26 if magic == 0 else 0
        if size < minimum or size > n - i:
            break
        if magic == 2 and data[i + 22] & 0x20:  # attributes (int16 at 21): the control flag
            break
        i += size
    return i


def transaction_markers(data: Any, *, source: str, log_partition: int, start: int = 0, end: int | None = None,
                        base_position: int = 0, chain_from: int | None = None,
                        pure: bool | None = None) -> list[LogEntry]:
    """Only the control entries (kind CONTROL) that entries_from_bytes would yield for the same
    range, in order, found fast: the chain is followed by reading entry headers only, and only
    control batches are decoded (in C on the C path); anything unusual (a header needing
    resync, a tail, a control batch that does not decode) goes to scan_segment over exactly
    that entry, so resync and problem handling are identical.

    An entry is stepped over unread when scan_segment would step over it by exactly its own
    size without yielding a marker: a trusted header (length >= 14 and at least its magic's
    minimum, within the data) of anything but a v2 control batch.
    """
    from kgtool.codec.segment import scan_segment
    from kgtool.offsets.decode import entries_of

    sp = _pick(pure)
    i, hi = _range(data, start, end, base_position, chain_from)
    out: list[LogEntry] = []
    found: list[tuple] = []
    while i < hi:
        if sp is None:
            j = _skip_to_control_py(data, i, hi)
            declined = j < hi
        else:
            j, declined = sp.scan_markers(data, i, hi, base_position, _comp.decompress_or_none, found)
            out.extend(_marker_entry(t, source, log_partition) for t in found)
            found.clear()
        if not declined:
            break
        for item in scan_segment(data, source=source, start=base_position + j, end=base_position + j + 1,
                                 base_position=base_position, chain_from=base_position + j):
            if hasattr(item, "records") and item.is_control:
                out.extend(e for e in entries_of(item, source, log_partition) if e.kind == CONTROL)
            j = item.end_position - base_position
        i = j
    return out
