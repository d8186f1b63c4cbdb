"""Producer state rebuilt from batches, as the broker keeps it (``ProducerStateManager``,
``ProducerAppendInfo``, ``ProducerStateEntry``), shared by the writer (snapshots and the
transaction index it writes) and by ``--verify`` (what the snapshots and the transaction index
should hold).

Per producer id: the epoch, the last data batch (last sequence, last offset, offset delta,
max timestamp: ``BatchMetadata``), the last timestamp, the coordinator epoch of the last marker,
and the first offset of the open transaction. A data batch with another epoch drops the batch
metadata (``ProducerStateEntry.maybeUpdateProducerEpoch``); a transactional data batch with no
open transaction opens one; a COMMIT/ABORT marker closes it, and when it was open yields a
:class:`CompletedTxn` (``ProducerAppendInfo.appendEndTxnMarker``: "Only emit the CompletedTxn
for non-empty transactions"). An empty control batch (its marker cleaned away) changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgtool.codec.model import RecordBatch
from kgtool.storage.snapshot import ProducerEntry

ABORT = 0  # ControlRecordType.ABORT
COMMIT = 1


@dataclass(slots=True)
class CompletedTxn:
    """``CompletedTxn``: a transaction ended by the marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = -1
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    #: The last data batch: (last_sequence, last_offset, offset_delta, timestamp), or None.
    last_batch: tuple[int, int, int, int] | None = None

    def _epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.last_batch = None
            self.producer_epoch = epoch

    def snapshot_entry(self) -> ProducerEntry:
        """The entry ``ProducerStateManager.writeSnapshot`` writes for it."""
        seq, last, delta, _ts = self.last_batch if self.last_batch is not None else (-1, -1, 0, -1)
        return ProducerEntry(self.producer_id, self.producer_epoch, seq, last, delta, self.last_timestamp,
                             self.coordinator_epoch,
                             -1 if self.current_txn_first_offset is None else self.current_txn_first_offset)


def marker_of(batch: RecordBatch) -> tuple[int, int, int] | None:
    """(control type, coordinator epoch, timestamp) of a COMMIT/ABORT control batch whose
    records are decoded, or None (an empty control batch, another control type)."""
    if not batch.is_control or not batch.records:
        return None
    r = batch.records[0]
    c = r.control
    if c is None or c.type not in (ABORT, COMMIT):
        return None
    return c.type, -1 if c.coordinator_epoch is None else c.coordinator_epoch, r.timestamp


class ProducerStates:
    """The producers of a log, updated batch by batch (``LogSegment.updateProducerState``)."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        #: Open transactions: first offset -> producer id (``ProducerStateManager.ongoingTxns``).
        self.ongoing: dict[int, int] = {}

    def apply(self, batch: RecordBatch) -> CompletedTxn | None:
        """Update with one batch (control batches need their records decoded); returns the
        transaction a marker completed, if any."""
        pid = batch.producer_id
        if pid < 0:
            return None
        e = self.producers.get(pid)
        if e is None:
            e = self.producers[pid] = ProducerStateEntry(pid)
        if batch.is_control:
            m = marker_of(batch)
            if m is None:
                return None
            control_type, coordinator_epoch, timestamp = m
            done = None
            if e.current_txn_first_offset is not None:
                done = CompletedTxn(pid, e.current_txn_first_offset, batch.base_offset, control_type == ABORT)
                self.ongoing.pop(e.current_txn_first_offset, None)
            e._epoch(batch.producer_epoch)
            e.coordinator_epoch = coordinator_epoch
            e.current_txn_first_offset = None
            e.last_timestamp = timestamp
            return done
        e._epoch(batch.producer_epoch)
        e.last_batch = (batch.last_sequence, batch.last_offset, batch.last_offset - batch.base_offset,
                        batch.max_timestamp)
        e.last_timestamp = batch.max_timestamp
        if e.current_txn_first_offset is None and batch.is_transactional:
            e.current_txn_first_offset = batch.base_offset
            self.ongoing[batch.base_offset] = pid
        return None

    def last_stable_offset(self, txn: CompletedTxn) -> int:
        """``ProducerStateManager.lastStableOffset``: the first offset of the earliest open
        transaction of another producer, else the marker's offset + 1."""
        others = [first for first, pid in self.ongoing.items() if pid != txn.producer_id]
        return min(others) if others else txn.last_offset + 1

    def snapshot_entries(self) -> list[ProducerEntry]:
        return [self.producers[p].snapshot_entry() for p in sorted(self.producers)]
