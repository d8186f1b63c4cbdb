"""The KIP-848 golden scenarios (fixtures/kip848): Kafka's own segments, decoding and loaded state."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

KIP848 = Path(__file__).resolve().parents[2] / "fixtures" / "kip848"
SCENARIOS = sorted(p.parent for p in KIP848.glob("*/00000000000000000000.log"))
IDS = [p.name for p in SCENARIOS]


def segment(scenario: Path) -> str:
    return str(scenario / "00000000000000000000.log")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def truth(scenario: Path) -> dict:
    plain = scenario / "truth.json"
    if plain.exists():
        return json.loads(plain.read_text())
    with gzip.open(scenario / "truth.json.gz", "rt") as f:
        return json.load(f)
