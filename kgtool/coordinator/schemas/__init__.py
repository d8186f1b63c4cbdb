"""The record-type registries of the coordinator topics, built from Kafka's release specs.

``OFFSETS_RECORD_TYPES`` maps the record type of a ``__consumer_offsets`` key (its int16 prefix:
Kafka's ``CoordinatorRecordType`` ids, the ``apiKey`` of each ``coordinator-key`` spec) to its
key and value schemas; ``TRANSACTION_RECORD_TYPES`` does the same for ``__transaction_state``
(``TransactionLog``: key version 0) and ``SHARE_STATE_RECORD_TYPES`` for ``__share_group_state``
(``ShareCoordinatorRecordSerde``: ShareSnapshot 0, ShareUpdate 1). Every schema comes from the
Kafka 4.0-4.4 release specs (:mod:`kgtool.coordinator.release_specs`): a record type no release
shipped is not here, and decodes as unknown with a note. The consumer protocol's schemas (the
client's own specs, not a coordinator's) are in :mod:`kgtool.coordinator.schemas.consumer_protocol`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgtool.coordinator.release_specs import RELEASES, declared_schema, declared_schemas
from kgtool.coordinator.schema import MessageSchema, camel_to_snake

__all__ = [
    "RecordType",
    "OFFSETS_RECORD_TYPES",
    "OFFSETS_RECORD_TYPES_BY_KIND",
    "TRANSACTION_RECORD_TYPES",
    "SHARE_STATE_RECORD_TYPES",
    "SHARE_STATE_RECORD_TYPES_BY_KIND",
    "ALL_SCHEMAS",
]


@dataclass(frozen=True)
class RecordType:
    """One coordinator record type: id, kind (snake_case of Kafka's name), key/value specs."""

    id: int
    kind: str
    key: MessageSchema
    value: MessageSchema
    #: The value version Kafka writes by default (``GroupCoordinatorRecordHelpers``; for offset
    #: commits the 4.0 one, v3: kgtool's encoder writes what every supported release reads).
    default_value_version: int

    @property
    def since(self) -> str:
        """The release line the record type arrived in (or the oldest kgtool reads)."""
        return self.value.version_since[0][1] if self.value.version_since else RELEASES[0]

    @property
    def until(self) -> str | None:
        """The last release line that writes it, when a later one removed it (None: all)."""
        return self.key.until


def _registry(*types: RecordType) -> dict[int, RecordType]:
    out: dict[int, RecordType] = {}
    for t in types:
        if t.id in out:
            raise AssertionError(f"duplicate record type {t.id}")
        out[t.id] = t
    return dict(sorted(out.items()))


def _pairs(coordinator: str, *, skip: tuple[str, ...] = ()) -> list[RecordType]:
    """Every Key/Value spec pair a coordinator's specs declare: id = apiKey, kind = snake_case name."""
    out = []
    for name, key in declared_schemas().items():
        if not name.endswith("Key") or not key.source.startswith(coordinator + "/") or name in skip:
            continue
        value = declared_schema(name[: -len("Key")] + "Value")
        assert key.api_key == value.api_key, name
        out.append(RecordType(key.api_key, camel_to_snake(name[: -len("Key")]), key, value, 0))  # type: ignore[arg-type]
    return sorted(out, key=lambda t: t.id)


_OFFSET_COMMIT_VALUE = declared_schema("OffsetCommitValue")

OFFSETS_RECORD_TYPES: dict[int, RecordType] = _registry(
    # LegacyOffsetCommit (type 0): Kafka's OffsetsMessageFormatter reads its key as an
    # OffsetCommitKey and its value as OffsetCommitValue v0-4 ("We can read both record types
    # with the offset commit one"); LegacyOffsetCommitValue v0 has the layout of v0.
    RecordType(0, "legacy_offset_commit", declared_schema("LegacyOffsetCommitKey"), _OFFSET_COMMIT_VALUE, 0),
    # GroupCoordinatorRecordHelpers.newOffsetCommitRecord: v1 with an expire timestamp, else v3
    # (4.0) or v4 (4.1+, with the TopicId tag); the encoder's default is 4.0's.
    RecordType(1, "offset_commit", declared_schema("OffsetCommitKey"), _OFFSET_COMMIT_VALUE, 3),
    RecordType(2, "group_metadata", declared_schema("GroupMetadataKey"), declared_schema("GroupMetadataValue"), 3),
    *_pairs("group-coordinator", skip=("LegacyOffsetCommitKey", "OffsetCommitKey", "GroupMetadataKey")),
)
OFFSETS_RECORD_TYPES_BY_KIND: dict[str, RecordType] = {t.kind: t for t in OFFSETS_RECORD_TYPES.values()}

TRANSACTION_RECORD_TYPES: dict[int, RecordType] = _registry(*_pairs("transaction-coordinator"))

#: ``__share_group_state`` (share coordinator): ShareSnapshot (0) and ShareUpdate (1).
SHARE_STATE_RECORD_TYPES: dict[int, RecordType] = _registry(*_pairs("share-coordinator"))
SHARE_STATE_RECORD_TYPES_BY_KIND: dict[str, RecordType] = {
    t.kind: t for t in SHARE_STATE_RECORD_TYPES.values()
}

#: Every coordinator schema kgtool knows (the release specs'), for tests and documentation.
ALL_SCHEMAS: list[MessageSchema] = sorted(declared_schemas().values(), key=lambda s: s.name)


def _key_fields(t: RecordType) -> str:
    return ", ".join(f.name for f in t.key.fields)


def _versions_since(s: MessageSchema) -> str:
    """``0-4`` with the release of each later version: ``0-4`` / ``0 (4.1+)``."""
    text = str(s.valid_versions)
    first = s.version_since[0][1] if s.version_since else RELEASES[0]
    return text if first == RELEASES[0] else f"{text} ({first}+)"


def _tagged_since(s: MessageSchema) -> str:
    """The fields a release after the spec's first added (``topic_id`` 4.1), nested ones by path."""
    first = s.version_since[0][1] if s.version_since else RELEASES[0]
    out: list[str] = []

    def walk(fields: tuple, path: str, parent: str) -> None:
        for f in fields:
            if f.since is not None and f.since != parent:
                out.append(f"`{path}{f.name}` {f.since}")
            walk(f.fields, f"{path}{f.name}.", f.since or parent)
    walk(s.fields, "", first)
    return ", ".join(out)


def record_types_markdown() -> str:
    """The table of record types of ``docs/reference/record-types.md`` (``python -m kgtool.docs``): every record type of the
    three coordinator topics, its key, its value versions and the release each part arrived in."""
    lines = ["| topic | type | kind | key | value versions | added later | Kafka specs |",
             "|---|---|---|---|---|---|---|"]
    for topic, reg in (("`__consumer_offsets`", OFFSETS_RECORD_TYPES), ("`__transaction_state`", TRANSACTION_RECORD_TYPES),
                       ("`__share_group_state`", SHARE_STATE_RECORD_TYPES)):
        for t in reg.values():
            note = f"Kafka {t.until} only; 4.1+ skips it" if t.until else ""
            if t.value.superseded:
                note = "; ".join(x for x in (note, f"{t.value.superseded[0].until}'s early-access layout also read")
                                 if x)
            later = "; ".join(x for x in (_tagged_since(t.value), note) if x)
            lines.append(f"| {topic} | {t.id} | `{t.kind}` | {_key_fields(t)} | {_versions_since(t.value)} | "
                         f"{later} | `{t.key.name}` / `{t.value.name}` |")
    return "\n".join(lines) + "\n"
