"""One entry of a ``__consumer_offsets`` log, as the replay consumes it.

A :class:`LogEntry` is a decoded record with the fields of its batch that the coordinator's
replay depends on (``CoordinatorLoaderImpl`` passes ``producerId``/``producerEpoch`` of the
batch to ``replay`` and turns control batches into ``replayEndTransactionMarker``), a control
record (transaction marker), or a decode problem (a stretch of bytes that is not a valid batch).

Rare records (everything but plain offset commits, which travel as columns: see
:mod:`kgtool.offsets.columns`) reach the replay as entries. :func:`entry_to_row` gives an
entry's flat row form (offset commits flat, other key and value as JSON text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Kinds this model interprets (the names kgtool.coordinator.records gives record types).
OFFSET_COMMIT = "offset_commit"
LEGACY_OFFSET_COMMIT = "legacy_offset_commit"  # record type 0: replayed as an offset commit
OFFSET_COMMIT_KINDS = frozenset({OFFSET_COMMIT, LEGACY_OFFSET_COMMIT})
GROUP_METADATA = "group_metadata"
CONTROL = "control"  # a transaction marker (control record of a control batch)
# The control types that end a transaction (ControlRecordType COMMIT/ABORT): the only ones
# CoordinatorLoaderImpl replays (replayEndTransactionMarker); others are skipped.
END_TXN_TYPES = frozenset({"COMMIT", "ABORT"})
PROBLEM = "problem"  # bytes that did not decode; ``problem`` says why
# A record type Kafka does not define (CoordinatorLoaderImpl skips it: UnknownRecordTypeException).
UNKNOWN = "unknown"

NO_PRODUCER_ID = -1  # RecordBatch.NO_PRODUCER_ID


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record of one ``__consumer_offsets`` partition, with its batch's replay fields."""

    log_partition: int
    offset: int
    position: int  # byte position of the record's batch in ``source`` (a PROBLEM: where it went wrong)
    source: str
    timestamp: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    is_transactional: bool = False
    is_control: bool = False
    control_type: str | None = None  # "COMMIT" / "ABORT" for transaction markers
    coordinator_epoch: int | None = None
    kind: str | None = None  # coordinator record kind; CONTROL; PROBLEM
    group: str | None = None
    key: dict[str, Any] | None = None
    value: dict[str, Any] | None = None  # None: a tombstone
    value_version: int | None = None
    problem: str | None = None
    # A PROBLEM that is one record whose key decoded: the record's kind (the group's in ``group``).
    record_kind: str | None = None
    unknown_tagged_fields: int = 0  # tagged fields the schema does not know (kept raw, as Kafka keeps them)
    # Filled by the oracle's annotate_transactions() (tests) for records of transactional
    # batches: the first transaction marker of the same producer that follows.
    marker_offset: int | None = None
    marker_type: str | None = None
    marker_position: int | None = None
    marker_timestamp: int | None = None

    @property
    def tombstone(self) -> bool:
        return self.value is None
