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


def loaded_states(scenario: Path):
    """Kafka's loaded state after each batch, accumulated from loaded.jsonl's changes: yields
    (line, groups {id: group}, offsets {id: {(topic, partition): (offset, leader_epoch, metadata,
    commit_timestamp)}}); the two dicts are updated in place from one line to the next."""
    groups: dict[str, dict] = {}
    offsets: dict[str, dict] = {}
    for line in jsonl(scenario / "loaded.jsonl"):
        for gid, g in line["groups"].items():
            if g == {"exists": False}:
                groups.pop(gid, None)
            else:
                groups[gid] = g
        for gid, change in line["offsets"].items():
            held = offsets.setdefault(gid, {})
            for tp in change["removed"]:
                topic, _, p = tp.rpartition(":")
                held.pop((topic, int(p)), None)
            for o in change["changed"]:
                held[(o["topic"], o["partition"])] = (o["offset"], o["leader_epoch"], o["metadata"],
                                                      o["commit_timestamp"])
        yield line, groups, offsets
