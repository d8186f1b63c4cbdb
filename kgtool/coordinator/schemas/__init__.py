"""Schema tables of the coordinator records, as data, and the record-type registries.

``OFFSETS_RECORD_TYPES`` maps the record type of a ``__consumer_offsets`` key (its int16 prefix:
Kafka 4.x ``CoordinatorRecordType`` ids, the ``apiKey`` of each ``coordinator-key`` spec) to its
key and value schemas; ``TRANSACTION_RECORD_TYPES`` does the same for ``__transaction_state``
(``TransactionLog``: key version 0). Every table cites its Kafka source file.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgtool.coordinator.schema import MessageSchema
from kgtool.coordinator.schemas import classic, transaction


@dataclass(frozen=True)
class RecordType:
    """One coordinator record type: id, kind (snake_case of Kafka's name), key/value specs."""

    id: int
    kind: str
    key: MessageSchema
    value: MessageSchema
    #: The value version Kafka 4.x writes by default (``GroupCoordinatorRecordHelpers``).
    default_value_version: int


def _registry(*types: RecordType) -> dict[int, RecordType]:
    out: dict[int, RecordType] = {}
    for t in types:
        if t.id in out:
            raise AssertionError(f"duplicate record type {t.id}")
        out[t.id] = t
    return out


_offsets_types: list[RecordType] = [
    # LegacyOffsetCommit (type 0): Kafka's OffsetsMessageFormatter reads its key as an
    # OffsetCommitKey and its value as OffsetCommitValue v0-4 ("We can read both record types
    # with the offset commit one"); LegacyOffsetCommitValue v0 has the layout of v0.
    RecordType(0, "legacy_offset_commit", classic.LEGACY_OFFSET_COMMIT_KEY, classic.OFFSET_COMMIT_VALUE, 0),
    RecordType(1, "offset_commit", classic.OFFSET_COMMIT_KEY, classic.OFFSET_COMMIT_VALUE, 3),
    RecordType(2, "group_metadata", classic.GROUP_METADATA_KEY, classic.GROUP_METADATA_VALUE, 3),
]

OFFSETS_RECORD_TYPES: dict[int, RecordType] = _registry(*_offsets_types)
OFFSETS_RECORD_TYPES_BY_KIND: dict[str, RecordType] = {t.kind: t for t in OFFSETS_RECORD_TYPES.values()}

TRANSACTION_RECORD_TYPES: dict[int, RecordType] = _registry(
    RecordType(0, "transaction_log", transaction.TRANSACTION_LOG_KEY, transaction.TRANSACTION_LOG_VALUE, 0),
)
