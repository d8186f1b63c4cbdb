"""The decoded view of a log: :class:`RecordBatch`, :class:`Record`, :class:`ControlRecord`,
:class:`ScanProblem`. Field names are Kafka's (``RecordBatch``, ``Record``) in snake_case.

Legacy (magic 0/1) message sets are shown as Kafka's ``FileRecords.batches()`` shows them:
one batch per top-level message (a compressed wrapper is one batch holding its inner
messages); the fields the format lacks take the values Kafka reports for them
(``producer_id`` -1, ``producer_epoch`` -1, ``base_sequence`` -1, ``partition_leader_epoch`` -1,
``record_count`` None as ``countOrNull()``, ``last_offset_delta`` / ``base_timestamp`` None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

#: ControlRecordType ids (``ControlRecordType``); anything else is shown by id as UNKNOWN.
CONTROL_TYPE_NAMES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
CONTROL_TYPE_IDS = {v: k for k, v in CONTROL_TYPE_NAMES.items()}


@dataclass(slots=True)
class ControlRecord:
    """The key (and for COMMIT/ABORT, the value) of a control record.

    ``version`` is the control key version; ``coordinator_epoch`` is set for end-transaction
    markers (``EndTransactionMarker``) and None for other types.
    """

    type: int
    type_name: str
    version: int
    coordinator_epoch: int | None = None
    value_version: int | None = None


@dataclass(slots=True)
class Record:
    """One record with its absolute offset and effective timestamp (LogAppendTime applied)."""

    offset: int
    timestamp: int
    sequence: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0
    #: Bytes of the record as stored (``Record.sizeInBytes``): v2, the length varint plus the
    #: body; magic 0/1, Offset + MessageSize + the message. None when built by hand.
    size_in_bytes: int | None = None
    control: ControlRecord | None = None


@dataclass(slots=True)
class RecordBatch:
    """One batch (magic 2) or one top-level message (magic 0/1) at file ``position``."""

    position: int
    base_offset: int
    last_offset: int
    batch_length: int
    size_in_bytes: int
    partition_leader_epoch: int
    magic: int
    crc: int
    crc_valid: bool | None
    attributes: int
    compression: str
    timestamp_type: str
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    last_offset_delta: int | None
    base_timestamp: int | None
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int | None
    #: A list, or a lazy sequence for a batch of very many records (``batch.RecordStream``).
    records: Sequence[Record] = field(default_factory=list)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence`` (wraps past Integer.MAX_VALUE); -1 for none."""
        if self.base_sequence == NO_SEQUENCE or self.last_offset_delta is None:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def end_position(self) -> int:
        return self.position + self.size_in_bytes


@dataclass(slots=True)
class ScanProblem:
    """Bytes the scanner could not decode and skipped (or the unread tail).

    kind: ``truncated`` (the data ends inside a batch: the tail of an active segment),
    ``crc_mismatch``, ``corrupt`` (a header that cannot be trusted, e.g. a size below the
    minimum: the rest of the range is skipped), ``malformed`` (a batch whose length is
    trustworthy but whose content does not decode: skipped, scanning continues),
    ``unsupported`` (e.g. an unknown magic with a plausible length: skipped).
    """

    kind: str
    position: int
    length: int
    reason: str
    message: str
    source: str | None = None
    context: str | None = None
    base_offset: int | None = None
    #: The byte ``message`` names when it is not ``position``: the field at fault (a skipped
    #: batch's CRC, attributes, record...), while ``position``/``length`` cover the whole batch.
    at: int | None = None

    @property
    def end_position(self) -> int:
        return self.position + self.length

    @property
    def byte(self) -> int:
        """The byte where it went wrong, as decode-batch names it (``message``, ``context``)."""
        return self.position if self.at is None else self.at


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from Integer.MAX_VALUE to 0."""
    if sequence > 2147483647 - increment:
        return increment - (2147483647 - sequence) - 1
    return sequence + increment
