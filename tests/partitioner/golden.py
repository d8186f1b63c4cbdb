"""The partitioner golden cases: each client's own code run on 996 keys (fixtures/partitioner)."""

from __future__ import annotations

import base64
import json
from functools import lru_cache
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "partitioner" / "partitioner.json"

#: Every partitioner name kgtool accepts -> how to read its expected partition from a case.
EXPECTED = {
    "java": lambda c: c["java"],
    "librdkafka": lambda c: c["librdkafka"]["consistent_random"],
    "sarama": lambda c: c["sarama"],
    "sarama-reference": lambda c: c["sarama_reference_hash"],
    **{
        name: (lambda name: lambda c: c["librdkafka"][name])(name)
        for name in ("consistent", "consistent_random", "murmur2", "murmur2_random", "fnv1a", "fnv1a_random")
    },
}


@lru_cache(maxsize=1)
def cases() -> list[dict]:
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    out = []
    for c in doc["cases"]:
        c = dict(c)
        c["key"] = base64.b64decode(c["key_b64"])
        out.append(c)
    return out
