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


# ---- the groups and group_members tables against loaded.jsonl's groups ----------------------------


def _names(pairs):
    return [f"{t}-{p}" for t, p in pairs] if pairs is not None else None


def want_rows(groups: dict) -> tuple[list[tuple], list[tuple]]:
    g_rows, m_rows = [], []
    for gid, g in sorted(groups.items()):
        if g["type"] == "classic":
            g_rows.append((gid, "classic", g["state"], None, None, g["generation"], g["protocol_type"],
                           g["protocol_name"], g["leader"], len(g["members"])))
            for m in g["members"]:
                m_rows.append((gid, m["member_id"], m["instance_id"], m["client_id"], m["client_host"], None, None,
                               None, _names(m["assigned"]), None, None, m["rebalance_timeout_ms"],
                               m["session_timeout_ms"], None, True))
        else:
            g_rows.append((gid, g["type"], g["state"], g["group_epoch"], g["assignment_epoch"], None, None, None,
                           None, len(g["members"])))
            for m in g["members"]:
                m_rows.append((gid, m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
                               m["member_epoch"], m["previous_member_epoch"], m["state"], _names(m["assigned"]),
                               _names(m["pending_revocation"]), _names(m["target"]), m["rebalance_timeout_ms"],
                               None if not m["uses_classic_protocol"] else "*", m["server_assignor"],
                               m["uses_classic_protocol"]))
    return g_rows, m_rows


def got_rows(tables: dict) -> tuple[list[tuple], list[tuple]]:
    g_rows = [(r["group"], r["type"], r["state"], r["group_epoch"], r["assignment_epoch"], r["generation"],
               r["protocol_type"], r["protocol_name"], r["leader"], r["member_count"]) for r in tables["groups"]]
    m_rows = []
    for r in tables["group_members"]:
        modern_classic = r["type"] != "classic" and r["uses_classic_protocol"]
        m_rows.append((r["group"], r["member_id"], r["instance_id"], r["client_id"], r["client_host"],
                       r["member_epoch"], r["previous_member_epoch"], r["member_state"], r["assigned"],
                       r["pending_revocation"], r["target"], r["rebalance_timeout_ms"],
                       "*" if modern_classic else r["session_timeout_ms"], r["server_assignor"],
                       r["uses_classic_protocol"]))
    return sorted(g_rows), sorted(m_rows)
