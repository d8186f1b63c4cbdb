"""Committed offsets, as ``OffsetMetadataManager`` replays them (Kafka 4.x group-coordinator).

Plain commits go straight to the store; transactional ones (a batch with a producer id) wait in
``pendingTransactionalOffsets`` under their producer until its COMMIT or ABORT marker
(``replayEndTransactionMarker``). At COMMIT a pending offset is stored only if its record is newer
than the stored one's ("we always keep the most recent committed offset when we have a mix of
transactional and regular offset commits"). A tombstone removes the stored offset and the
pending ones of that partition in every open transaction of the group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

NO_PRODUCER_ID = -1  # RecordBatch.NO_PRODUCER_ID

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """``OffsetAndMetadata.fromRecord(recordOffset, value)``."""

    offset: int
    leader_epoch: int  # -1: none (Kafka's OptionalInt.empty())
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
    record_offset: int

    @classmethod
    def from_record(cls, record_offset: int, v: dict[str, Any]) -> OffsetAndMetadata:
        le = v.get("leader_epoch", -1)
        ets = v.get("expire_timestamp", -1)
        return cls(int(v["offset"]), -1 if le is None else int(le), v.get("metadata") or "",
                   int(v.get("commit_timestamp", -1)), None if ets in (None, -1) else int(ets), record_offset)


class OffsetMetadataManager:
    """The offsets of every group of one ``__consumer_offsets`` partition."""

    def __init__(self, ensure_group: Callable[[str], None]) -> None:
        #: ``groupMetadataManager.group(id)`` or else ``getOrMaybeCreateClassicGroup(id, true)``
        self._ensure_group = ensure_group
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self.pending: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}
        self.open_transactions_by_group: dict[str, set[int]] = {}

    def replay(self, record_offset: int, producer_id: int, group: str, tp: TopicPartition,
               value: dict[str, Any] | None) -> None:
        """``OffsetMetadataManager.replay(recordOffset, producerId, OffsetCommitKey, OffsetCommitValue)``."""
        if value is not None:
            self._ensure_group(group)
            oam = OffsetAndMetadata.from_record(record_offset, value)
            if producer_id == NO_PRODUCER_ID:
                self.offsets.setdefault(group, {})[tp] = oam
            else:
                self.pending.setdefault(producer_id, {}).setdefault(group, {})[tp] = oam
                self.open_transactions_by_group.setdefault(group, set()).add(producer_id)
            return
        stored = self.offsets.get(group)
        if stored is not None:
            stored.pop(tp, None)
            if not stored:
                del self.offsets[group]
        for pid in self.open_transactions_by_group.get(group, ()):
            pending = self.pending.get(pid, {}).get(group)
            if pending is not None:
                pending.pop(tp, None)

    def replay_end_transaction_marker(self, producer_id: int, commit: bool) -> None:
        """``OffsetMetadataManager.replayEndTransactionMarker(producerId, result)``."""
        pending = self.pending.pop(producer_id, None)
        if pending is None:
            return  # "no pending offsets are present. Ignoring it."
        for group in pending:
            open_txns = self.open_transactions_by_group.get(group)
            if open_txns is not None:
                open_txns.discard(producer_id)
                if not open_txns:
                    del self.open_transactions_by_group[group]
        if not commit:
            return
        for group, by_tp in pending.items():
            for tp, oam in by_tp.items():
                stored = self.offsets.setdefault(group, {})
                existing = stored.get(tp)
                if existing is None or oam.record_offset > existing.record_offset:
                    stored[tp] = oam
            if not self.offsets.get(group):
                self.offsets.pop(group, None)

    def fetch_all_offsets(self, group: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """``fetchAllOffsets(group, lastCommittedOffset)`` with requireStable=false: the stored
        offsets only (pending transactional ones are not served)."""
        return dict(self.offsets.get(group, {}))

    def has_pending(self, group: str) -> bool:
        return bool(self.open_transactions_by_group.get(group))
