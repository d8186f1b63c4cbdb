"""Schema tables of the coordinator records, as data, and the record-type registries.

``OFFSETS_RECORD_TYPES`` maps the record type of a ``__consumer_offsets`` key (its int16 prefix:
Kafka 4.x ``CoordinatorRecordType`` ids, the ``apiKey`` of each ``coordinator-key`` spec) to its
key and value schemas; ``TRANSACTION_RECORD_TYPES`` does the same for ``__transaction_state``
(``TransactionLog``: key version 0). Every table cites its Kafka source file.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgtool.coordinator.schema import MessageSchema, camel_to_snake
from kgtool.coordinator.schemas import (
    classic,
    consumer_group,
    share_coordinator,
    share_group,
    streams_group,
    transaction,
)


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
    return dict(sorted(out.items()))


def _typed(key: MessageSchema, value: MessageSchema) -> RecordType:
    """A record type from its key and value specs: id = apiKey, kind = snake_case name."""
    assert key.api_key == value.api_key and key.name.endswith("Key"), key.name
    return RecordType(key.api_key, camel_to_snake(key.name[: -len("Key")]), key, value, 0)  # type: ignore[arg-type]


def _pairs(module) -> list[RecordType]:
    """Every ``X_KEY`` / ``X_VALUE`` pair of a table module."""
    out = []
    for name in dir(module):
        if name.endswith("_KEY") and isinstance(getattr(module, name), MessageSchema):
            out.append(_typed(getattr(module, name), getattr(module, name[: -len("KEY")] + "VALUE")))
    return sorted(out, key=lambda t: t.id)


_offsets_types: list[RecordType] = [
    # LegacyOffsetCommit (type 0): Kafka's OffsetsMessageFormatter reads its key as an
    # OffsetCommitKey and its value as OffsetCommitValue v0-4 ("We can read both record types
    # with the offset commit one"); LegacyOffsetCommitValue v0 has the layout of v0.
    RecordType(0, "legacy_offset_commit", classic.LEGACY_OFFSET_COMMIT_KEY, classic.OFFSET_COMMIT_VALUE, 0),
    RecordType(1, "offset_commit", classic.OFFSET_COMMIT_KEY, classic.OFFSET_COMMIT_VALUE, 3),
    RecordType(2, "group_metadata", classic.GROUP_METADATA_KEY, classic.GROUP_METADATA_VALUE, 3),
    *_pairs(consumer_group),
    *_pairs(share_group),
    *_pairs(streams_group),
]

OFFSETS_RECORD_TYPES: dict[int, RecordType] = _registry(*_offsets_types)
OFFSETS_RECORD_TYPES_BY_KIND: dict[str, RecordType] = {t.kind: t for t in OFFSETS_RECORD_TYPES.values()}

TRANSACTION_RECORD_TYPES: dict[int, RecordType] = _registry(
    RecordType(0, "transaction_log", transaction.TRANSACTION_LOG_KEY, transaction.TRANSACTION_LOG_VALUE, 0),
)

#: ``__share_group_state`` (share coordinator): ShareSnapshot (0) and ShareUpdate (1).
SHARE_STATE_RECORD_TYPES: dict[int, RecordType] = _registry(*_pairs(share_coordinator))
SHARE_STATE_RECORD_TYPES_BY_KIND: dict[str, RecordType] = {
    t.kind: t for t in SHARE_STATE_RECORD_TYPES.values()
}

#: Every schema kgtool knows, for tests and documentation.
ALL_SCHEMAS: list[MessageSchema] = sorted(
    {id(s): s for t in (
        list(OFFSETS_RECORD_TYPES.values())
        + list(TRANSACTION_RECORD_TYPES.values())
        + list(SHARE_STATE_RECORD_TYPES.values())
    ) for s in (t.key, t.value)}.values(),
    key=lambda s: s.name,
)
