"""A whole-range summary of a segment: every byte, batch and record accounted for.

:func:`summarize_segment` decodes everything (CRC, decompression, records, and payloads
through a caller-supplied decoder) but keeps only counters, so a multi-GiB segment needs no
more memory than one batch. With the C extension, plain v2 batches are walked entirely in C
(``_speedups.summarize_segment``), including the ``__consumer_offsets`` OffsetCommit key and
value layouts (parsed and validated in C; anything else goes to the Python decoder), and the
general path (:func:`~kgtool.codec.segment.scan_segment`) takes every other entry: compressed,
control, legacy, or anything wrong with it, which is where exact errors come from. Without the
extension the general path does everything; both paths give the same summary (tested).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgtool.codec import batch as _batch
from kgtool.codec import compression as _comp
from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.codec.segment import DEFAULT_MAX_MESSAGE_SIZE, PageReleaser, align_chain, scan_segment
from kgtool.errors import DecodeError

#: Problems that are the end of the data rather than damage inside it.
TAIL_KINDS = ("truncated", "padding")
#: Problems kept in full in a summary (the rest are counted).
MAX_KEPT_PROBLEMS = 1000


@dataclass
class ScanSummary:
    """Counters of one scanned range (see :func:`summarize_segment`)."""

    source: str | None
    start_position: int = 0
    end_position: int = 0
    bytes_decoded: int = 0
    bytes_skipped: int = 0
    bytes_truncated: int = 0
    batches: int = 0
    records: int = 0
    control_records: int = 0
    crc_failures: int = 0
    compression: Counter = field(default_factory=Counter)
    magic: Counter = field(default_factory=Counter)
    first_offset: int | None = None
    last_offset: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    producers: set = field(default_factory=set)
    transactional_batches: int = 0
    control_markers: Counter = field(default_factory=Counter)
    key_bytes: int = 0
    value_bytes: int = 0
    null_keys: int = 0
    null_values: int = 0
    payload_kinds: Counter = field(default_factory=Counter)
    payload_tombstones: int = 0
    payload_warnings: int = 0
    payload_errors: int = 0
    payload_messages: list = field(default_factory=list)
    problem_counts: Counter = field(default_factory=Counter)
    problems: list = field(default_factory=list)

    @property
    def bytes_total(self) -> int:
        return self.end_position - self.start_position

    @property
    def findings(self) -> bool:
        """Anything reported: a problem of any kind (tail included) or a payload error."""
        return bool(self.problem_counts) or self.payload_errors > 0

    def damage(self) -> bool:
        """Problems other than a truncated/padded tail, or payload errors."""
        return any(k not in TAIL_KINDS for k in self.problem_counts) or self.payload_errors > 0

    def add_problem(self, p: ScanProblem) -> None:
        self.problem_counts[p.kind] += 1
        if p.kind in TAIL_KINDS:
            self.bytes_truncated += p.length
        else:
            self.bytes_skipped += p.length
        if p.kind == "crc_mismatch":
            self.crc_failures += 1
        if len(self.problems) < MAX_KEPT_PROBLEMS:
            self.problems.append(p)

    def _ts(self, lo: int, hi: int) -> None:
        if lo < 0:
            return
        if self.min_timestamp is None or lo < self.min_timestamp:
            self.min_timestamp = lo
        if self.max_timestamp is None or hi > self.max_timestamp:
            self.max_timestamp = hi

    def _offsets(self, first: int, last: int) -> None:
        if self.first_offset is None:
            self.first_offset = first
        self.last_offset = last

    def add_c_stats(self, st: dict, fast_kinds: tuple[str, str]) -> None:
        """Counters returned by ``_speedups.summarize_segment`` / ``summarize_records_v2``."""
        batches = st["batches"]
        self.batches += batches
        self.records += st["records"]
        self.bytes_decoded += st["bytes"]
        self.key_bytes += st["key_bytes"]
        self.value_bytes += st["value_bytes"]
        self.null_keys += st["null_keys"]
        self.null_values += st["null_values"]
        if batches:
            for codec, n in enumerate(st["compression"]):
                if n:
                    self.compression[_comp.COMPRESSION_NAMES[codec]] += n
            self.magic[2] += batches
        if st["min_ts"] >= 0:
            self._ts(st["min_ts"], st["max_ts"])
        if st["records"]:
            self._offsets(st["first_offset"], st["last_offset"])
        self.transactional_batches += st["transactional_batches"]
        if st["control_records"]:
            self.control_records += st["control_records"]
            if st["abort_markers"]:
                self.control_markers["ABORT"] += st["abort_markers"]
            if st["commit_markers"]:
                self.control_markers["COMMIT"] += st["commit_markers"]
        ot0, ot1 = st["offset_tombstones_0"], st["offset_tombstones_1"]
        for kind, n in ((fast_kinds[0], st["offset_commits_0"] + ot0), (fast_kinds[1], st["offset_commits_1"] + ot1)):
            if n:
                self.payload_kinds[kind] += n
        self.payload_tombstones += ot0 + ot1

    def add_batch_header(self, b: RecordBatch) -> None:
        self.batches += 1
        self.bytes_decoded += b.size_in_bytes
        self.compression[b.compression] += 1
        self.magic[b.magic] += 1
        if b.producer_id >= 0:
            self.producers.add(b.producer_id)
        if b.is_transactional:
            self.transactional_batches += 1

    def add_batch_records(self, b: RecordBatch, payload) -> None:
        recs = b.records
        if isinstance(recs, _batch.RecordStream) and not b.is_control:
            # A big batch: counted chunk by chunk, in C when it can, without Record objects.
            slow: list = []
            for k in range(recs.chunks):
                if recs.summarize_chunk is not None:
                    st = recs.summarize_chunk(k, payload is not None, slow)
                else:
                    st = _record_stats(recs.chunk_tuples(k), payload is not None, slow, b.position)
                self.add_c_stats(st, ("", ""))
                for t in slow:  # (offset, key, value[, position]): the batch is b
                    self.add_payload(t[0], t[1], t[2], payload, b.position)
                slow.clear()
            return
        self.add_records(b.records, payload, b.position)

    def add_records(self, records, payload, position: int) -> None:
        """Records (objects) of the batch at ``position``."""
        for r in records:
            self.records += 1
            if r.timestamp >= 0:
                self._ts(r.timestamp, r.timestamp)
            self._offsets(r.offset, r.offset)
            if r.key is None:
                self.null_keys += 1
            else:
                self.key_bytes += len(r.key)
            if r.value is None:
                self.null_values += 1
            else:
                self.value_bytes += len(r.value)
            if r.control is not None:
                self.control_records += 1
                self.control_markers[r.control.type_name] += 1
            elif payload is not None:
                self.add_payload(r.offset, r.key, r.value, payload, position)

    def add_payload(self, offset: int, key, value, payload, position: int | None = None) -> None:
        try:
            rec = payload(key, value)
        except DecodeError as exc:
            self.payload_errors += 1
            if len(self.payload_messages) < MAX_KEPT_PROBLEMS:
                where = f"batch@{position} " if position is not None else ""
                self.payload_messages.append(f"{where}offset {offset}: {exc}")
            return
        self.payload_kinds[rec.kind] += 1
        if rec.tombstone:
            self.payload_tombstones += 1
        if rec.warnings:
            self.payload_warnings += len(rec.warnings)
            if len(self.payload_messages) < MAX_KEPT_PROBLEMS:
                self.payload_messages.extend(f"offset {offset}: {w}" for w in rec.warnings)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "start_position": self.start_position,
            "end_position": self.end_position,
            "bytes": {
                "total": self.bytes_total,
                "decoded": self.bytes_decoded,
                "skipped": self.bytes_skipped,
                "truncated": self.bytes_truncated,
            },
            "batches": self.batches,
            "records": self.records,
            "control_records": self.control_records,
            "crc_failures": self.crc_failures,
            "compression": dict(sorted(self.compression.items())),
            "magic": {str(k): v for k, v in sorted(self.magic.items())},
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "min_timestamp": self.min_timestamp,
            "max_timestamp": self.max_timestamp,
            "producers": len(self.producers),
            "transactional_batches": self.transactional_batches,
            "control_markers": dict(sorted(self.control_markers.items())),
            "key_bytes": self.key_bytes,
            "value_bytes": self.value_bytes,
            "null_keys": self.null_keys,
            "null_values": self.null_values,
            "payload": {
                "kinds": dict(sorted(self.payload_kinds.items())),
                "tombstones": self.payload_tombstones,
                "warnings": self.payload_warnings,
                "errors": self.payload_errors,
            },
            "problems": dict(sorted(self.problem_counts.items())),
        }

    def merge(self, other: ScanSummary) -> None:
        """Add another range's counters (inputs of one command run)."""
        for name in ("bytes_decoded", "bytes_skipped", "bytes_truncated", "batches", "records",
                     "control_records", "crc_failures", "transactional_batches", "key_bytes",
                     "value_bytes", "null_keys", "null_values", "payload_tombstones",
                     "payload_warnings", "payload_errors"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.end_position += other.bytes_total
        for name in ("compression", "magic", "control_markers", "payload_kinds", "problem_counts"):
            getattr(self, name).update(getattr(other, name))
        self.producers |= other.producers
        if other.min_timestamp is not None:
            self._ts(other.min_timestamp, other.max_timestamp)
        if other.first_offset is not None:
            if self.first_offset is None:
                self.first_offset = other.first_offset
            self.last_offset = other.last_offset
        self.problems.extend(other.problems[: max(0, MAX_KEPT_PROBLEMS - len(self.problems))])
        self.payload_messages.extend(other.payload_messages[: max(0, MAX_KEPT_PROBLEMS - len(self.payload_messages))])


def _record_stats(tuples: list, with_payloads: bool, slow: list, position: int) -> dict:
    """The counters of record field tuples (Record order), as ``_speedups.summarize_records_v2``
    returns them; with payloads every record goes to ``slow`` as (offset, key, value, the batch's
    position)."""
    st = dict.fromkeys(("batches", "records", "bytes", "key_bytes", "value_bytes", "null_keys",
                        "null_values", "offset_commits_0", "offset_commits_1", "offset_tombstones_0",
                        "offset_tombstones_1", "transactional_batches", "control_records",
                        "abort_markers", "commit_markers"), 0)
    st["compression"] = (0, 0, 0, 0, 0)
    lo = hi = -1
    for off, ts, _seq, key, value, _h, _a, _n in tuples:
        if ts >= 0:
            if lo < 0 or ts < lo:
                lo = ts
            if ts > hi:
                hi = ts
        if key is None:
            st["null_keys"] += 1
        else:
            st["key_bytes"] += len(key)
        if value is None:
            st["null_values"] += 1
        else:
            st["value_bytes"] += len(value)
        if with_payloads:
            slow.append((off, key, value, position))
    st["records"] = len(tuples)
    st["slow"] = len(tuples) if with_payloads else 0
    st["min_ts"], st["max_ts"] = lo, hi
    st["first_offset"] = tuples[0][0] if tuples else -1
    st["last_offset"] = tuples[-1][0] if tuples else -1
    return st


def summarize_records_py(buf, start: int, end: int, count: int, base_offset: int, base_ts: int,
                         lat: int | None, mode: int, slow: list, position: int) -> dict | None:
    """Pure-Python twin of ``_speedups.summarize_records_v2``: the counters of ``count`` records
    of ``buf[start:end]`` (one chunk at a time when called by the batch decoder), no
    :class:`Record` built; with a payload decoder (``mode`` 1 or 2) every record goes to
    ``slow``. None: malformed records."""
    tuples, err = _batch.decode_v2_records_py(buf, start, end, count, base_offset, base_ts, -1, lat)
    if err is not None:
        return None
    return _record_stats(tuples, mode != 0, slow, position)


PayloadDecoder = Callable[[Any, Any], Any]


def summarize_segment(
    data,
    *,
    source: str | None = None,
    start: int = 0,
    end: int | None = None,
    verify_crc: bool = True,
    base_position: int = 0,
    chain_from: int | None = None,
    payload: PayloadDecoder | None = None,
    fast_offsets: tuple[str, str] | None = None,
    max_decompressed_size: int = _comp.DEFAULT_MAX_DECOMPRESSED,
    progress: Callable[[int], None] | None = None,
    use_speedups: bool = True,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> ScanSummary:
    """Decode the range like :func:`scan_segment` and count everything.

    Args:
        payload: ``f(key, value) -> obj`` with ``kind``, ``tombstone``, ``warnings`` (a
            coordinator record decoder), raising DecodeError on bad bytes; None: no payloads.
        fast_offsets: the kinds of ``__consumer_offsets`` record types 0 and 1 (legacy and
            current OffsetCommit): lets the C extension decode those records itself; only
            give it when ``payload`` is the ``__consumer_offsets`` decoder.
        progress: called with the absolute position reached, now and then.
        use_speedups: False forces the general path (tests compare both).
        max_message_size: as :func:`~kgtool.codec.segment.scan_segment`.

    Returns:
        The :class:`ScanSummary`; ``bytes_decoded + bytes_skipped + bytes_truncated`` equals
        the bytes from the first entry in range to the end of the last one.
    """
    n = len(data)
    lo = max(start - base_position, 0)
    hi = n if end is None else min(max(end - base_position, 0), n)
    i = align_chain(data, lo, base_position, chain_from)
    summary = ScanSummary(source=source, start_position=base_position + i, end_position=base_position + i)
    sp = _batch.speedups() if use_speedups else None
    if payload is None:
        mode = 0
    elif fast_offsets is not None:
        mode = 1
    else:
        mode = 2
    kinds = fast_offsets or ("", "")
    slow: list = []
    pending: list = []

    def drain_slow() -> None:
        # (offset, key, value, batch position): the C walk hands back the records whose
        # payload Python decodes, with their batch, so messages read as on the Python path.
        for off, k, v, position in slow:
            summary.add_payload(off, k, v, payload, position)
        slow.clear()

    summarize_records = sp.summarize_records_v2 if sp is not None else summarize_records_py

    def sink(buf, rstart, rend, count, base_offset, base_ts, lat, b) -> bool:
        # Records straight into counters (no Record objects); a big batch comes chunk by chunk,
        # its payloads decoded after each chunk, so nothing grows with the batch.
        st = summarize_records(buf, rstart, rend, count, base_offset, base_ts, lat, mode, slow, b.position)
        if st is None:
            return False
        pending.append(st)
        drain_slow()
        return True

    # What the C walk decompressed for the entry it stopped at (index -> bytes or the failure):
    # the general path takes it from here instead of decompressing it again.
    stopped_at: dict = {}

    def decompress_c(codec: int, payload, index: int):
        stopped_at.clear()
        try:
            out = _comp.decompress(codec, payload, magic=2, max_size=max_decompressed_size)
        except _comp.CompressionFailure as exc:
            stopped_at[index] = exc
            return None
        except MemoryError:
            raise _batch.out_of_memory(source, base_position + index,
                                       f"decompress its {_comp.COMPRESSION_NAMES[codec]} records") from None
        stopped_at[index] = out
        return out

    def decompress_general(codec: int, payload, index: int) -> bytes:
        out = stopped_at.pop(index, None)
        if out is None:
            return _comp.decompress(codec, payload, magic=2, max_size=max_decompressed_size)
        if isinstance(out, Exception):
            raise out
        return out

    def take(item) -> int:
        if isinstance(item, ScanProblem):
            summary.add_problem(item)
            return item.end_position - base_position
        summary.add_batch_header(item)
        if pending:
            for st in pending:
                summary.add_c_stats(st, kinds)
            pending.clear()
            drain_slow()
        else:
            summary.add_batch_records(item, payload)
        return item.end_position - base_position

    common = dict(source=source, verify_crc=verify_crc, base_position=base_position,
                  max_decompressed_size=max_decompressed_size, max_message_size=max_message_size,
                  record_sink=sink, decompress=decompress_general)
    step = 8 << 20
    next_progress = i + step
    releaser = PageReleaser(data, i)
    if sp is None:
        for item in scan_segment(data, start=base_position + i, end=base_position + hi,
                                 chain_from=base_position + i, **common):
            i = take(item)
            if progress is not None and i >= next_progress:
                progress(base_position + i)
                next_progress = i + step
    else:
        while i < hi:
            # Plain v2 batches, in C, as far as it goes (it stops before anything else).
            j, st = sp.summarize_segment(data, i, min(hi, i + step), base_position, verify_crc, mode, slow,
                                         summary.producers, decompress_c)
            summary.add_c_stats(st, kinds)
            drain_slow()
            if j not in stopped_at:
                stopped_at.clear()  # decompressed and summarized: not needed again
            if j == i:
                # The entry at i needs the general path: exactly that one entry.
                for item in scan_segment(data, start=base_position + i, end=base_position + i + 1,
                                         chain_from=base_position + i, **common):
                    j = take(item)
                stopped_at.clear()
            if j == i:  # pragma: no cover - scan_segment always yields for i < hi
                break
            i = j
            releaser.advance(i)
            if progress is not None and i >= next_progress:
                progress(base_position + i)
                next_progress = i + step
    summary.end_position = base_position + max(i, lo)
    if progress is not None:
        progress(summary.end_position)
    return summary
