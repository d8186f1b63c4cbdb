"""Key builders shared by the KIP-848 / share / streams tables: every key is ``group_id``
(plus ``member_id`` for per-member records), read at version 0 after the record type."""

from __future__ import annotations

from kgtool.coordinator.schema import F, MessageSchema

GROUP_COORDINATOR_DIR = "group-coordinator/src/main/resources/common/message/"


def group_key(name: str, api_key: int, *extra: str) -> MessageSchema:
    """A ``coordinator-key`` spec ``name`` (apiKey ``api_key``): GroupId, then ``extra`` strings."""
    return MessageSchema.of(
        name,
        api_key=api_key,
        versions="0",
        flexible="none",
        source=GROUP_COORDINATOR_DIR + name + ".json",
        fields=[F("group_id", "string", "0")] + [F(e, "string", "0") for e in extra],
    )


def value(name: str, api_key: int, fields: list, *, notes: str = "") -> MessageSchema:
    """A ``coordinator-value`` spec with the one version (0, flexible) these records have."""
    return MessageSchema.of(
        name,
        api_key=api_key,
        versions="0",
        flexible="0+",
        source=GROUP_COORDINATOR_DIR + name + ".json",
        fields=fields,
        notes=notes,
    )
