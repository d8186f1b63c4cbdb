"""A partition directory written the way a Kafka 4.x broker writes one: the fixtures of the
tests and benchmarks (kgtool never writes to a broker's directory).

:class:`PartitionWriter` follows ``UnifiedLog``/``LogSegment``:

- ``append`` is one ``LogSegment.append`` call: a leader's append is one batch, a follower's
  (``appendAsFollower``) many. A new segment is rolled first when the active one is not empty
  and would exceed ``segment_bytes`` (``LogSegment.shouldRoll``).
- Per batch (KAFKA-806): ``maxTimestampAndOffsetSoFar`` grows to (the batch's max timestamp, its
  last offset) when that timestamp is larger; then, when more than ``index_interval_bytes``
  were appended since the last entry, the offset index gets (the batch's last offset, its
  position) and the time index ``maybeAppend(maxTimestampSoFar, its offset)``. With
  ``per_append_entries`` the writer behaves as ``LogSegment.append`` did before KAFKA-806: one
  entry per append call, (the append's last offset, the position of its first batch).
- Producer state (:mod:`kgtool.storage.producers`): an ABORT marker that completes a
  transaction adds an ``AbortedTxn`` with the last stable offset to the segment's ``.txnindex``
  (``LogSegment.updateTxnIndex``); a snapshot is taken at each roll, named by the new
  segment's base offset, and at close (``UnifiedLog.roll``, ``UnifiedLog.close``).
- A batch whose partition leader epoch is larger than the latest one known is assigned in the
  leader epoch cache (``LeaderEpochFileCache.assign``, start offset = its base offset).
- Rolling a segment trims its indexes and adds the final time index entry
  (``LogSegment.onBecomeInactiveSegment``); at :meth:`close`, the active segment's indexes stay
  preallocated to ``preallocate`` bytes when asked (a copy of a running broker's directory).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kgtool.codec.batch import encode_batch_v2, encode_end_txn_marker
from kgtool.codec.model import RecordBatch
from kgtool.storage.checkpoints import encode_checkpoint, encode_partition_metadata
from kgtool.storage.logview import batch_headers
from kgtool.storage.indexes import encode_aborted_txn, encode_offset_index, encode_time_index
from kgtool.storage.producers import ProducerStates
from kgtool.storage.snapshot import encode_snapshot

DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes


def file_name(offset: int, suffix: str) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: 20 digits."""
    return f"{offset:020d}{suffix}"


@dataclass
class SeekSegment:
    base_offset: int
    fh: object
    size: int = 0
    bytes_since_last_entry: int = 0
    max_ts: int = -1
    offset_of_max_ts: int = -1
    index: list = field(default_factory=list)
    time_index: list = field(default_factory=list)
    txn_index: list = field(default_factory=list)

    def maybe_time_entry(self) -> None:
        # TimeIndex.maybeAppend: only a larger timestamp is appended.
        if self.max_ts >= 0 and (not self.time_index or self.max_ts > self.time_index[-1][0]):
            self.time_index.append((self.max_ts, self.offset_of_max_ts))


class PartitionWriter:
    """Writes ``directory`` (created) as a broker would; see the module docstring."""

    def __init__(self, directory: str, *, segment_bytes: int = 1 << 30,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 per_append_entries: bool = False, topic_id: bytes | None = None) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.interval = index_interval_bytes
        self.per_append_entries = per_append_entries
        self.producers = ProducerStates()
        self.epochs: list[tuple[int, int]] = []
        self.next_offset = 0
        self.seg: SeekSegment | None = None
        self.snapshots: list[int] = []
        if topic_id is not None:
            with open(os.path.join(directory, "partition.metadata"), "wb") as fh:
                fh.write(encode_partition_metadata(topic_id))

    # --- appends ----------------------------------------------------------------------------

    def append(self, data: bytes | list[bytes]) -> int:
        """One ``LogSegment.append`` of encoded batches (offsets as encoded); returns the
        position of the first batch."""
        data = b"".join(data) if isinstance(data, list) else data
        batches = list(batch_headers(data, verify_crc=False))
        if not batches or any(not isinstance(b, RecordBatch) for b in batches):
            raise ValueError("append: not a clean sequence of batches")
        if self.seg is None or (self.seg.size and self.seg.size + len(data) > self.segment_bytes):
            self.roll(batches[0].base_offset)
        seg = self.seg
        first_position = position = seg.size
        seg.fh.write(data)
        for b in batches:
            if b.max_timestamp > seg.max_ts:
                seg.max_ts, seg.offset_of_max_ts = b.max_timestamp, b.last_offset
            if not self.per_append_entries and seg.bytes_since_last_entry > self.interval:
                seg.index.append((b.last_offset, position))
                seg.maybe_time_entry()
                seg.bytes_since_last_entry = 0
            position += b.size_in_bytes
            if not self.per_append_entries:
                seg.bytes_since_last_entry += b.size_in_bytes
            self._state(b)
        if self.per_append_entries:
            if seg.bytes_since_last_entry > self.interval:
                seg.index.append((batches[-1].last_offset, first_position))
                seg.maybe_time_entry()
                seg.bytes_since_last_entry = 0
            seg.bytes_since_last_entry += len(data)
        seg.size = position
        self.next_offset = batches[-1].last_offset + 1
        return first_position

    def _state(self, b) -> None:
        if b.partition_leader_epoch >= 0 and (not self.epochs or b.partition_leader_epoch > self.epochs[-1][0]):
            self.epochs.append((b.partition_leader_epoch, b.base_offset))
        done = self.producers.apply(b)
        if done is not None and done.is_aborted:
            lso = self.producers.last_stable_offset(done)
            self.seg.txn_index.append(encode_aborted_txn(done.producer_id, done.first_offset, done.last_offset, lso))

    def records(self, records, **kwargs) -> int:
        """Append one batch of ``records`` at the next offset (kwargs: :func:`encode_batch_v2`)."""
        return self.append(encode_batch_v2(records, base_offset=self.next_offset, **kwargs))

    def marker(self, *, commit: bool, producer_id: int, producer_epoch: int, **kwargs) -> int:
        """Append a COMMIT or ABORT marker at the next offset."""
        return self.append(encode_end_txn_marker(commit=commit, producer_id=producer_id, producer_epoch=producer_epoch,
                                                 base_offset=self.next_offset, **kwargs))

    # --- segments ---------------------------------------------------------------------------

    def roll(self, base_offset: int | None = None) -> None:
        """Close the active segment (trimmed indexes, a snapshot) and start one at ``base_offset``."""
        base = self.next_offset if base_offset is None else base_offset
        if self.seg is not None:
            self._finish(self.seg, preallocate=0)
            self.snapshot(base)
        fh = open(os.path.join(self.directory, file_name(base, ".log")), "wb")  # noqa: SIM115
        self.seg = SeekSegment(base, fh)

    def _finish(self, seg: SeekSegment, preallocate: int) -> None:
        if not preallocate:
            seg.maybe_time_entry()  # LogSegment.onBecomeInactiveSegment
        seg.fh.close()
        d, base = self.directory, seg.base_offset
        with open(os.path.join(d, file_name(base, ".index")), "wb") as fh:
            fh.write(encode_offset_index(seg.index, base, preallocate - preallocate % 8))
        with open(os.path.join(d, file_name(base, ".timeindex")), "wb") as fh:
            fh.write(encode_time_index(seg.time_index, base, preallocate - preallocate % 12))
        if seg.txn_index:  # TransactionIndexFile: "the file is not created until we need it"
            with open(os.path.join(d, file_name(base, ".txnindex")), "wb") as fh:
                fh.write(b"".join(seg.txn_index))

    def snapshot(self, offset: int | None = None) -> str:
        """Write the producer state snapshot at ``offset`` (default: the log end offset)."""
        offset = self.next_offset if offset is None else offset
        path = os.path.join(self.directory, file_name(offset, ".snapshot"))
        with open(path, "wb") as fh:
            fh.write(encode_snapshot(self.producers.snapshot_entries()))
        self.snapshots.append(offset)
        return path

    def close(self, *, preallocate: int = 0, snapshot: bool = True) -> None:
        """Finish the active segment: trimmed indexes (a clean shutdown) or, with
        ``preallocate`` bytes (``segment.index.bytes``), untrimmed ones; then the snapshot at the
        log end offset and the leader epoch checkpoint."""
        if self.seg is None:
            self.roll(self.next_offset)
        self._finish(self.seg, preallocate)
        if snapshot and (not self.snapshots or self.snapshots[-1] != self.next_offset):
            self.snapshot()
        with open(os.path.join(self.directory, "leader-epoch-checkpoint"), "wb") as fh:
            fh.write(encode_checkpoint(self.epochs))
