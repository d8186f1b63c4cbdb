"""Shared helpers for the coordinator golden cases (Kafka's own decoding in decode.jsonl)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "offsets"


def snake(name: str) -> str:
    """camelCase -> snake_case, as the golden files use Kafka's JSON names."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def snake_keys(obj):
    if isinstance(obj, dict):
        return {snake(k): snake_keys(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [snake_keys(v) for v in obj]
    return obj


def golden_records() -> list[tuple[str, bytes, bytes | None, dict]]:
    """Every record of every scenario that Kafka decoded as a __consumer_offsets record."""
    out = []
    for path in sorted(FIXTURES.glob("*/decode.jsonl")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            entry = json.loads(line)
            if entry.get("type") != "record" or "offsetsTopic" not in entry:
                continue
            key = base64.b64decode(entry["key"])
            value = None if entry["value"] is None else base64.b64decode(entry["value"])
            out.append((f"{path.parent.name}:{lineno}", key, value, entry["offsetsTopic"]))
    return out
