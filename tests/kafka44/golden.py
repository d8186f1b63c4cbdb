"""Kafka 4.4's own coordinator logs (fixtures/kafka44/coordinator): segments written by its
``GroupCoordinatorShard``, and the state a fresh shard holds after loading each batch."""

from __future__ import annotations

import json
from pathlib import Path

from kgtool.coordinator.consumer_protocol import decode_assignment
from tests.kip848.test_decode import kafka_json

COORDINATOR = Path(__file__).resolve().parents[2] / "fixtures" / "kafka44" / "coordinator"
SCENARIOS = sorted(p.parent for p in COORDINATOR.glob("*/00000000000000000000.log"))
IDS = [p.name for p in SCENARIOS]


def segment(scenario: Path) -> str:
    return str(scenario / "00000000000000000000.log")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").split("\n") if line.strip()]


def truth(scenario: Path) -> dict:
    return json.loads((scenario / "truth.json").read_text("utf-8"))


def topic_names(scenario: Path) -> dict[str, str]:
    """Topic id -> name, as the scenario's metadata image had them (a broker's partition.metadata)."""
    return {t["topic_id"]: t["name"] for t in truth(scenario)["topics"]}


def _no_names(parts: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in p.items() if k != "topic"} for p in parts), key=lambda p: p["topic_id"])


def kafka_group(g: dict) -> dict:
    """Kafka's loaded group in the form kgtool's ``loaded_view`` gives, without what the load does
    not persist or kgtool cannot know (topic names of the metadata image, share-state load times, a
    streams group's configured topology, a classic member's protocol bytes)."""
    g = dict(g)
    g.pop("protocol_type", None) if g["type"] != "classic" else None
    g.pop("configured_topology_ready", None)
    if g["type"] == "classic":
        members = []
        for m in g["members"]:
            raw = __import__("base64").b64decode(m["assignment"]) if m["assignment"] else b""
            assigned = None
            if g["protocol_type"] == "consumer":
                assigned = [] if not raw else sorted(
                    (t["topic"], p) for t in decode_assignment(raw)["assigned_partitions"] for p in t["partitions"])
            members.append({"member_id": m["member_id"], "group_instance_id": m["group_instance_id"],
                            "client_id": m["client_id"], "client_host": m["client_host"],
                            "rebalance_timeout_ms": m["rebalance_timeout_ms"],
                            "session_timeout_ms": m["session_timeout_ms"], "assigned": assigned})
        g["members"] = sorted(members, key=lambda m: m["member_id"])
        return g
    if g["type"] == "streams":
        g["members"] = sorted(g["members"], key=lambda m: m["member_id"])
        return g
    g["target_assignment"] = {mid: _no_names(a) for mid, a in sorted(g["target_assignment"].items())}
    members = []
    for m in g["members"]:
        m = dict(m)
        for k in ("assigned_partitions", "partitions_pending_revocation"):
            if k in m:
                m[k] = _no_names(m[k])
        m.pop("classic_member_metadata", None)
        members.append(m)
    g["members"] = sorted(members, key=lambda m: m["member_id"])
    info = g.get("share_group_state_partition_metadata")
    if info is not None:
        g["share_group_state_partition_metadata"] = {
            "initializing_topics": _no_names([{k: v for k, v in t.items() if k != "timestamp"} for t in info["initializing_topics"]]),
            "initialized_topics": _no_names([{k: v for k, v in t.items() if k != "timestamp"} for t in info["initialized_topics"]]),
            "deleting_topics": sorted(t["topic_id"] if isinstance(t, dict) else t for t in info["deleting_topics"])}
    return g


def kgtool_group(view: dict) -> dict:
    """kgtool's ``loaded_view`` in the same form: names dropped from partitions, the topology in
    Kafka's JSON spelling."""
    v = dict(view)
    if v["type"] == "streams":
        v["topology"] = None if v["topology"] is None else kafka_json(v["topology"])
        return v
    if v["type"] == "classic":
        return v
    v["target_assignment"] = {mid: _no_names(a) for mid, a in v["target_assignment"].items()}
    members = []
    for m in v["members"]:
        m = dict(m)
        for k in ("assigned_partitions", "partitions_pending_revocation"):
            if k in m:
                m[k] = _no_names(m[k])
        members.append(m)
    v["members"] = members
    info = v.get("share_group_state_partition_metadata")
    if info is not None:
        v["share_group_state_partition_metadata"] = {
            "initializing_topics": _no_names(info["initializing_topics"]),
            "initialized_topics": _no_names(info["initialized_topics"]),
            "deleting_topics": info["deleting_topics"]}
    return v
