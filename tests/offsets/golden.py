"""Golden ``__consumer_offsets`` scenarios decoded by Kafka (``decode.jsonl``) as LogEntry streams.

Kafka's JSON uses camelCase; kgtool's decoders use Kafka's names in snake_case, so keys are
converted here. This feeds the pure model independently of kgtool's own codec.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kgtool.offsets.entries import CONTROL, LogEntry

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "offsets"
SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {_CAMEL.sub("_", k).lower().lstrip("_"): snake(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [snake(v) for v in obj]
    return obj


def golden_entries(scenario: str) -> list[LogEntry]:
    d = FIXTURES / scenario
    log_partition = json.loads((d / "script.json").read_text())["partition"]
    source = str(d / "00000000000000000000.log")
    batches: dict[int, dict[str, Any]] = {}
    out: list[LogEntry] = []
    for line in (d / "decode.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["type"] == "batch":
            batches[r["baseOffset"]] = r
            continue
        b = batches[r["batchBaseOffset"]]
        common = dict(
            log_partition=log_partition,
            offset=r["offset"],
            position=b["position"],
            source=source,
            timestamp=r["timestamp"],
            producer_id=b["producerId"],
            producer_epoch=b["producerEpoch"],
            is_transactional=b["isTransactional"],
            is_control=b["isControlBatch"],
        )
        if "control" in r:
            c = r["control"]
            out.append(
                LogEntry(
                    **common,
                    kind=CONTROL,
                    control_type=c.get("type") or c.get("typeName"),
                    coordinator_epoch=c.get("coordinatorEpoch"),
                )
            )
            continue
        o = r["offsetsTopic"]
        key = snake(o["key"])
        out.append(
            LogEntry(
                **common,
                kind=o["kind"],
                group=key.get("group"),
                key=key,
                value=None if o.get("tombstone") else snake(o["value"]),
                value_version=o.get("valueVersion"),
            )
        )
    return out
