"""Loading the assignor golden cases (``fixtures/assign/*.json``) into kgtool's model.

Golden input shape (see ``shared/golden/README.md``): ``{"assignor", "topics": {"t0": 3,
"t1": {"partitions": 3, "racks": [["r0", "r1"], ...]}}, "members": [{"id", "topics",
"owned": [["t0", 0], ...], "generation", "rack", "instanceId"}]}``.
"""

from __future__ import annotations

import json
from pathlib import Path

from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "assign"


def load_cases(name: str) -> list[dict]:
    """The cases of ``fixtures/assign/<name>.json`` (e.g. ``range``, ``cooperative_sticky``)."""
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def group_from_golden(doc: dict) -> GroupSpec:
    topics = {}
    for name, spec in doc["topics"].items():
        if isinstance(spec, int):
            topics[name] = TopicSpec(name=name, partitions=spec)
        else:
            racks = spec.get("racks")
            topics[name] = TopicSpec(
                name=name,
                partitions=spec["partitions"],
                racks=tuple(tuple(r) for r in racks) if racks is not None else None,
            )
    members = [
        MemberSpec(
            member_id=m["id"],
            topics=tuple(m["topics"]),
            owned=tuple((t, p) for t, p in m.get("owned") or ()),
            generation=m.get("generation"),
            rack=m.get("rack"),
            instance_id=m.get("instanceId"),
        )
        for m in doc["members"]
    ]
    return GroupSpec(topics=topics, members=members, assignor=doc.get("assignor"))


def expected_from_golden(output: dict) -> dict[str, list[tuple[str, int]]]:
    return {member: [(t, p) for t, p in parts] for member, parts in output.items()}
