"""Kafka's log cleaner, for tests: a ``__consumer_offsets`` partition cleaned as a broker cleans it.

Written from Kafka 4.4's ``storage`` module (``Cleaner.doClean``, ``buildOffsetMap``,
``cleanSegments``, ``cleanInto``, ``shouldRetainRecord``), ``MemoryRecords.filterTo`` and
``CleanedTransactionMetadata``, independently of kgtool's reader (it uses kgtool's codec only to
parse and write batches):

- a cleaning round maps the latest offset of each key over the dirty section (from the last
  checkpoint to the first uncleanable offset, the base of the segment given), skipping aborted
  transactional batches and control batches; the map's latest offset is the last batch's last
  offset, and the new checkpoint (``cleaner-offset-checkpoint``) is one past it;
- every segment below the new checkpoint is cleaned into one (the test logs are small:
  ``groupSegmentsBySize`` makes one group) named by the first one's base offset. A record is
  kept when it is past the map's latest offset or the latest of its key, and, if a tombstone,
  while its batch has no delete horizon or the horizon is still ahead (``currentTime <
  deleteHorizonMs``);
- a batch whose records all stay is written as it was; otherwise it is rebuilt with its base
  offset and last offset kept (``overrideLastOffset``). A rebuilt or kept batch holding a
  tombstone gets a delete horizon (``now + delete.retention.ms``) the first time; so does a
  control batch of a transaction none of whose data is left;
- aborted transactional data is removed; a marker stays while data of its transaction was seen
  in the round, and goes once its horizon has passed;
- a batch left without records is kept as an empty batch (header only) when it is the last
  data batch of an active producer (all producers are active here), else dropped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kgtool.codec import encode_batch_v2, scan_file, scan_segment
from kgtool.codec.model import RecordBatch

DELETE_RETENTION_MS = 86_400_000  # delete.retention.ms default (one day)


@dataclass
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker


@dataclass
class Segment:
    base_offset: int  # the file's name
    batches: list[tuple[RecordBatch, bytes]]  # each batch and its bytes


@dataclass
class Log:
    """One partition's log as segments, the active one last."""

    segments: list[Segment]
    aborted: list[AbortedTxn]
    checkpoint: int = 0  # the first dirty offset

    def base(self, i: int) -> int:
        return self.segments[i].base_offset

    def end_offset(self) -> int:
        return max(b.last_offset for s in self.segments for b, _ in s.batches) + 1


def _control_type(b: RecordBatch) -> int | None:
    if not b.records or b.records[0].key is None:
        return None
    return int.from_bytes(b.records[0].key[2:4], "big")


def read_log(path: str, batches_per_segment: int) -> Log:
    """A segment file cut into segments of ``batches_per_segment`` batches, and the log's
    aborted transactions (the transaction index: first data offset and ABORT marker offset)."""
    with open(path, "rb") as f:
        data = f.read()
    batches = [b for b in scan_file(path) if isinstance(b, RecordBatch)]
    items = [(b, data[b.position:b.position + b.size_in_bytes]) for b in batches]
    segments = [Segment(items[i][0].base_offset, items[i:i + batches_per_segment])
                for i in range(0, len(items), batches_per_segment)]
    aborted, first = [], {}
    for b in batches:
        if b.is_control:
            t = _control_type(b)
            start = first.pop(b.producer_id, None)
            if t == 0 and start is not None:
                aborted.append(AbortedTxn(b.producer_id, start, b.last_offset))
        elif b.is_transactional:
            first.setdefault(b.producer_id, b.base_offset)
    return Log(segments, aborted)


class _TxnState:
    """``CleanedTransactionMetadata``."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self.pending = sorted(aborted, key=lambda a: a.first_offset)
        self.ongoing_aborted: dict[int, dict] = {}
        self.ongoing_committed: set[int] = set()

    def _consume(self, offset: int) -> None:
        while self.pending and self.pending[0].first_offset <= offset:
            a = self.pending.pop(0)
            self.ongoing_aborted.setdefault(a.producer_id, {"txn": a, "seen": None})

    def on_control(self, b: RecordBatch) -> bool:
        self._consume(b.last_offset)
        t = _control_type(b)
        if t is None:
            return True
        if t == 0:  # ABORT
            m = self.ongoing_aborted.pop(b.producer_id, None)
            return not (m is not None and m["seen"] is not None)
        if t == 1:  # COMMIT
            if b.producer_id in self.ongoing_committed:
                self.ongoing_committed.discard(b.producer_id)
                return False
            return True
        return False

    def on_batch(self, b: RecordBatch) -> bool:
        self._consume(b.last_offset)
        if not b.is_transactional:
            return False
        m = self.ongoing_aborted.get(b.producer_id)
        if m is not None:
            m["seen"] = b.last_offset
            return True
        self.ongoing_committed.add(b.producer_id)
        return False


def clean(log: Log, first_uncleanable_segment: int, now_ms: int, delete_retention_ms: int = DELETE_RETENTION_MS) -> int:
    """One cleaning round up to the segment ``first_uncleanable_segment`` (its base offset is
    the first uncleanable offset; the active segment is never cleaned). Returns the new
    checkpoint."""
    assert 0 < first_uncleanable_segment < len(log.segments)
    upper = log.base(first_uncleanable_segment)
    # buildOffsetMap over [checkpoint, upper)
    offset_map: dict[bytes, int] = {}
    latest = -1
    txn = _TxnState([a for a in log.aborted if log.checkpoint <= a.last_offset and a.first_offset < upper])
    for seg in log.segments[:first_uncleanable_segment]:
        for b, _ in seg.batches:
            if b.last_offset < log.checkpoint:
                continue
            if b.is_control:
                txn.on_control(b)
            elif not txn.on_batch(b):
                for r in b.records:
                    if r.key is not None and r.offset >= log.checkpoint:
                        offset_map[bytes(r.key)] = r.offset
            latest = max(latest, b.last_offset)
    if latest < 0:
        return log.checkpoint
    end = latest + 1
    # producers' last data batches (every producer active: its state is kept)
    last_data: dict[int, int] = {}
    for seg in log.segments:
        for b, _ in seg.batches:
            if b.producer_id >= 0 and not b.is_control:
                last_data[b.producer_id] = b.last_offset
    cleaned_ids = [i for i, s in enumerate(log.segments) if s.base_offset < end and i < first_uncleanable_segment]
    txn = _TxnState(log.aborted)
    out: list[tuple[RecordBatch, bytes]] = []
    for i in cleaned_ids:
        for b, raw in log.segments[i].batches:
            kept = _filter(b, raw, offset_map, latest, txn, last_data, now_ms, delete_retention_ms)
            if kept is not None:
                out.append(kept)
    group = Segment(log.segments[cleaned_ids[0]].base_offset, out)
    rest = [s for i, s in enumerate(log.segments) if i not in cleaned_ids]
    log.segments = [group] + rest  # an empty cleaned segment stays (LogCleaner replaces, never deletes)
    log.checkpoint = end
    # the aborted transactions whose marker is gone leave the transaction index
    markers = {b.last_offset for s in log.segments for b, _ in s.batches if b.is_control}
    log.aborted = [a for a in log.aborted if a.last_offset in markers]
    return end


def _filter(b: RecordBatch, raw: bytes, offset_map: dict[bytes, int], latest: int, txn: _TxnState,
            last_data: dict[int, int], now: int, retention: int) -> tuple[RecordBatch, bytes] | None:
    """``checkBatchRetention`` + ``filterBatch`` + ``filterTo``'s writing of one batch."""
    can_discard = txn.on_control(b) if b.is_control else txn.on_batch(b)
    horizon = b.delete_horizon_ms
    if b.is_control:
        discard_records = can_discard and horizon is not None and horizon <= now
    else:
        discard_records = can_discard
    last_of_producer = b.producer_id >= 0 and not b.is_control and last_data.get(b.producer_id) == b.last_offset
    if b.producer_id >= 0 and last_of_producer:
        retention_kind = "RETAIN_EMPTY"
    elif discard_records:
        retention_kind = "DELETE"
    else:
        retention_kind = "DELETE_EMPTY"
    marker_for_empty_txn = can_discard and b.is_control
    if retention_kind == "DELETE":
        return None
    retained, tombstones, whole = [], False, True
    for r in b.records:
        if discard_records:
            keep = False
        elif b.is_control:
            keep = True
        elif r.offset > latest:
            keep = True
        elif r.key is None:
            keep = False
        else:
            found = offset_map.get(bytes(r.key), -1)
            retain_deletes = horizon is None or now < horizon
            keep = r.offset >= found and (r.value is not None or retain_deletes)
        if keep:
            retained.append(r)
            tombstones |= r.value is None
        else:
            whole = False
    if retained:
        set_horizon = (tombstones or marker_for_empty_txn) and horizon is None
        if whole and not set_horizon:
            return b, raw  # batch.writeTo: the original bytes
        new_horizon = now + retention if set_horizon else horizon
        return _rebuild(b, retained, new_horizon)
    if retention_kind == "RETAIN_EMPTY":
        return _rebuild(b, [], None)
    return None


def _rebuild(b: RecordBatch, retained: list, horizon: int | None) -> tuple[RecordBatch, bytes]:
    """``buildRetainedRecordsInto`` (base offset and last offset kept) or ``writeEmptyHeader``."""
    delta = b.last_offset - b.base_offset
    if retained:
        data = encode_batch_v2(
            [{"offset": r.offset, "key": r.key, "value": r.value, "timestamp": r.timestamp,
              "headers": list(r.headers or [])} for r in retained],
            base_offset=b.base_offset, compression=b.compression, producer_id=b.producer_id,
            producer_epoch=b.producer_epoch, base_sequence=b.base_sequence, is_transactional=b.is_transactional,
            is_control=b.is_control, partition_leader_epoch=b.partition_leader_epoch, delete_horizon_ms=horizon,
            last_offset_delta=delta)
    else:
        data = encode_batch_v2(
            [], base_offset=b.base_offset, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
            base_sequence=b.base_sequence, is_transactional=b.is_transactional, is_control=b.is_control,
            partition_leader_epoch=b.partition_leader_epoch, last_offset_delta=delta,
            base_timestamp=b.max_timestamp, max_timestamp=b.max_timestamp)
    (nb,) = [x for x in scan_segment(data) if isinstance(x, RecordBatch)]
    return nb, data


def write_partition(log: Log, directory: str) -> list[str]:
    """The segments as ``directory``'s ``<base offset>.log`` files."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for seg in log.segments:
        path = os.path.join(directory, f"{seg.base_offset:020d}.log")
        with open(path, "wb") as f:
            for _, raw in seg.batches:
                f.write(raw)
        paths.append(path)
    return paths


def write_checkpoint(log_dir: str, entries: dict[tuple[str, int], int]) -> str:
    """``cleaner-offset-checkpoint`` (``OffsetCheckpointFile``: version 0, count, ``topic
    partition offset`` lines)."""
    path = os.path.join(log_dir, "cleaner-offset-checkpoint")
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
