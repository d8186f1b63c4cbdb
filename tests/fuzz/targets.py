"""What the campaign fuzzes, and the contract each input must keep.

Each target has seeds (valid inputs made by the project's encoders and the fixtures), a
mutator, and a check that raises AssertionError on a broken contract:

- ``segment``: the record-batch scanner and ``decode-batch --summary``: only batches and named
  problems; batches and problems cover the input exactly; the C and Python paths agree on every
  count and message, payload decoding (``--decode offsets``) included.
- ``audit-decoder``: ``spark-audit``'s columnar decoder: C == Python == the entry decoder.
- ``offsets-payload``: ``__consumer_offsets`` keys and values (one record per batch), through both
  paths of the summary decoder.
- ``group-description``: ``kgtool assign FILE``; ``topic-description``: ``kgtool coordinator-of
  --topic-description FILE``; ``id-list``: ``kgtool coordinator-of --file FILE``; ``key-list``: ``kgtool partition-of --file
  FILE`` in every key format: exit 0, 1 or 2,
  never an internal error; a failure is one line on stderr.

Memory and time are bounded by the runner (``python -m tests.fuzz``): an address-space limit for
the whole campaign and an alarm per input.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.fuzz.mutate import mutate_bytes, mutate_text
from tests.twins import have_compiled

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
CAP = 1 << 20  # decompressed bytes per batch in the in-process checks


@dataclass
class Target:
    name: str
    seeds: Callable[[], list[bytes]]
    mutate: Callable[[random.Random, bytes, list[bytes]], bytes]
    check: Callable[[bytes], None]
    suffix: str = ".bin"


# ---- segments ---------------------------------------------------------------------------------
@cache
def offsets_logs() -> list[bytes]:
    """The shipped sample's ``__consumer_offsets`` partitions, as the project's writer makes them."""
    from kgtool.offsets.samples import sample_scripts
    from kgtool.offsets.writer import iter_batches

    return [b"".join(iter_batches(s)) for s in sample_scripts()]


@cache
def segment_seeds() -> list[bytes]:
    from kgtool.codec.batch import encode_batch_v2
    from kgtool.codec.legacy import encode_message_set
    from tests.codec.test_segment import mixed_segment

    seeds = [p.read_bytes() for p in sorted((FIXTURES / "batches").glob("*.log"))]
    seeds += [mixed_segment(8, seed=s) for s in range(3)]
    seeds += offsets_logs()
    # amplification shapes, small: many empty records, many inner messages, many gzip members
    seeds.append(encode_batch_v2([(None, None, [], 0)] * 3000, compression="gzip"))
    seeds.append(encode_message_set([(None, b"", [], 0)] * 2000, magic=1, compression="gzip"))
    import gzip

    many = encode_batch_v2([(b"k", b"v", [], 0)] * 3, compression="gzip")
    seeds.append(many + gzip.compress(b"") * 50)
    return [s for s in seeds if s]


def _offsets_decoder():
    from kgtool.coordinator.payloads import DecodeMode, payload_decoder

    return payload_decoder(DecodeMode.offsets)


def check_segment(data: bytes) -> None:
    from kgtool.codec import RecordBatch, ScanProblem, scan_segment
    from kgtool.codec.summary import summarize_segment

    items = list(scan_segment(data, source="fuzz", max_decompressed_size=CAP))
    pos = 0
    for it in items:
        assert isinstance(it, (RecordBatch, ScanProblem)), type(it)
        assert it.position == pos, (it, pos)
        pos += it.size_in_bytes if isinstance(it, RecordBatch) else it.length
    assert pos == len(data) or not items, (pos, len(data))
    for it in items:  # records stream on demand; decoding them raises only kgtool errors
        if isinstance(it, RecordBatch):
            _drain_records(it)
    payload, fast = _offsets_decoder()
    got = []
    # the C summary against the Python one (an extension that did not build fails here)
    for c in (True, False) if have_compiled("kgtool.codec._speedups") else (False,):
        s = summarize_segment(data, source="fuzz", max_decompressed_size=CAP, payload=payload, fast_offsets=fast,
                              use_speedups=c)
        j = s.to_json()
        b = j["bytes"]
        assert b["decoded"] + b["skipped"] + b["truncated"] == b["total"] == len(data), b
        got.append(j)
    assert got[0] == got[-1], _first_difference(got[0], got[-1])


def _drain_records(batch) -> None:
    from kgtool.errors import KgtoolError

    try:
        for _ in batch.records:
            pass
    except KgtoolError:
        pass


def _first_difference(a, b, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"C and Python differ at {path or '<top>'}: {str(a)[:300]!r} != {str(b)[:300]!r}"


def check_audit_decoder(data: bytes) -> None:
    from tests.offsets.test_columns import check

    check(data, max_rows=7)


# ---- __consumer_offsets payloads ----------------------------------------------------------------
@cache
def payload_seeds() -> list[bytes]:
    """key and value of each record of the sample log, as ``len(key) key value`` (4-byte length)."""
    from kgtool.codec import RecordBatch, scan_segment

    out = []
    for data in offsets_logs():
        for b in scan_segment(data):
            if isinstance(b, RecordBatch) and not b.is_control:
                for r in b.records:
                    k, v = r.key or b"", r.value or b""
                    out.append(len(k).to_bytes(4, "big") + k + v)
    return out or [b"\x00\x00\x00\x00"]


def check_payload(data: bytes) -> None:
    from kgtool.codec.batch import encode_batch_v2

    n = int.from_bytes(data[:4].ljust(4, b"\x00"), "big") % (len(data) + 1)
    key, value = data[4:4 + n], data[4 + n:]
    check_segment(encode_batch_v2([(key, value or None, [], 0), (key, value, [], 1)]))


# ---- descriptions and id lists, through the CLI --------------------------------------------------
@cache
def group_seeds() -> list[bytes]:
    seeds = []
    for p in sorted((FIXTURES / "assign").glob("*.json")):
        cases = json.loads(p.read_text())
        for case in cases[:3] if isinstance(cases, list) else []:
            inp = case.get("input") if isinstance(case, dict) else None
            if inp is not None:
                seeds.append(json.dumps(inp).encode())
    seeds.append(b"assignor: cooperative-sticky\ntopics: {t: 3, u: 2}\nmembers:\n"
                 b"  - {id: a, topics: [t, u], owned: [[t, 0]], generation: 2}\n  - {id: b, topics: [t]}\n")
    seeds.append(b"assignor: range\ntopics:\n  t: {partitions: 2, racks: [[r1, r2], [r2]]}\n"
                 b"members:\n  - {id: m1, topics: [t], rack: r1}\n  - {id: m2, instanceId: i2, topics: [t]}\n")
    return seeds


@cache
def topic_seeds() -> list[bytes]:
    lines = ["Topic: __consumer_offsets\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 6\tReplicationFactor: 3\tConfigs: "]
    lines += [f"\tTopic: __consumer_offsets\tPartition: {p}\tLeader: {p % 3}\tReplicas: 0,1,2\tIsr: 0,1,2" for p in range(6)]
    return [
        ("\n".join(lines) + "\n").encode(),
        json.dumps({str(p): p % 3 for p in range(8)}).encode(),
        b"0: 1\n1: 2\n2: 3\n",
    ]


@cache
def id_seeds() -> list[bytes]:
    return [b"g1\ng2\norders-service\n", "gr\u00fc\u00dfe\n\U0001f600\n".encode(), b"a\r\nb\r\n\n\n"]


def _cli(args: list[str], data: bytes, suffix: str) -> None:
    from typer.testing import CliRunner

    from kgtool.cli.main import app

    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "input" + suffix)
        with open(f, "wb") as fh:
            fh.write(data)
        r = CliRunner().invoke(app, [a.replace("{F}", f) for a in args])
    err = r.stderr if hasattr(r, "stderr") else ""
    assert r.exit_code in (0, 1, 2), f"exit {r.exit_code}: {err[:500]!r} {r.exception!r}"
    assert "internal error" not in err, err[:500]
    if r.exit_code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, f"{len(lines)} lines on stderr: {err[:500]!r}"
        assert len(lines[0]) <= 1000, f"a {len(lines[0])}-character error line"


def check_keys(data: bytes) -> None:
    _cli(["partition-of", "--file", "{F}", "--partitions", "12", "--compare", "--format", "json"], data, ".txt")
    for fmt in ("hex", "base64", "long", "uuid"):
        _cli(["partition-of", "--file", "{F}", "--partitions", "7", "--key-format", fmt, "--format", "jsonl"], data, ".txt")


@cache
def key_seeds() -> list[bytes]:
    return [b"order-1\norder-2\ncustomer 42\n", b"00ff10\n\nDEADbeef\n", b"a2V5\n\nAAAA\n", b"42\n-9223372036854775808\n",
            b"123e4567-e89b-12d3-a456-426614174000\n"]


def check_group(data: bytes) -> None:
    _cli(["assign", "{F}", "--format", "json"], data, ".yaml")


def check_topic(data: bytes) -> None:
    _cli(["coordinator-of", "--topic-description", "{F}", "g1", "g2", "--format", "json"], data, ".txt")


def check_ids(data: bytes) -> None:
    _cli(["coordinator-of", "--file", "{F}", "--format", "json"], data, ".txt")


TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        Target("segment", segment_seeds, mutate_bytes, check_segment, ".log"),
        Target("audit-decoder", segment_seeds, mutate_bytes, check_audit_decoder, ".log"),
        Target("offsets-payload", payload_seeds, mutate_bytes, check_payload),
        Target("group-description", group_seeds, mutate_text, check_group, ".yaml"),
        Target("topic-description", topic_seeds, mutate_text, check_topic, ".txt"),
        Target("id-list", id_seeds, mutate_bytes, check_ids, ".txt"),
        Target("key-list", key_seeds, mutate_bytes, check_keys, ".txt"),
    ]
}
