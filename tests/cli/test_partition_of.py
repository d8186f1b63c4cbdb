"""`kgtool partition-of`: golden cases through the CLI, every output mode, and bad input."""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from pathlib import Path

import pytest

from kgtool.java import murmur2
from kgtool.partitioner import keys
from kgtool.partitioner.rules import PARTITIONER_NAMES, partition_for_key, resolve
from tests.partitioner.golden import EXPECTED, cases
from tests.twins import compiled

DESCRIBE = """\
Topic: orders\tTopicId: 3Mw6sCYwQYKq2h6vQ0Vf7g\tPartitionCount: 4\tReplicationFactor: 3\tConfigs:
\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3
\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1
\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr:
\tTopic: orders\tPartition: 3\tLeader: 1\tReplicas: 1,3,2\tIsr: 1,3,2
"""


def as_json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def java(key: str, n: int) -> int:
    return (murmur2(key.encode()) & 0x7FFFFFFF) % n


@pytest.fixture(params=["c", "pure"])
def twin(request, monkeypatch):
    if request.param == "c":
        assert keys._speedups is compiled("kgtool.partitioner._speedups")
    else:
        monkeypatch.setattr(keys, "_speedups", None)
    return request.param


def test_golden_cases_for_every_partitioner_through_the_cli(run, tmp_path: Path, twin):
    by_n = defaultdict(list)
    for c in cases():
        by_n[c["partitions"]].append(c)
    names = [a for name in PARTITIONER_NAMES for a in ("--partitioner", name)]
    bad = []
    for n, group in sorted(by_n.items()):
        f = tmp_path / f"keys-{n}.b64"
        f.write_bytes(b"".join(c["key_b64"].encode() + b"\n" for c in group))
        doc = as_json(run(["partition-of", "--key-format", "base64", "-p", n, "--compare", *names,
                           "--format", "json", "-f", f]))
        assert len(doc) == len(group)
        for c, row in zip(group, doc):
            assert row["key"] == c["key_b64"]
            for name in PARTITIONER_NAMES:
                if row["partitions"][name] != EXPECTED[name](c):
                    bad.append((name, n, c["key_b64"], row["partitions"][name], EXPECTED[name](c)))
    assert not bad, bad[:5]


def test_golden_case_as_a_single_argument(run):
    c = next(c for c in cases() if c["category"] == "murmur2_int_min")
    for name in ("java", "librdkafka", "sarama", "fnv1a_random"):
        doc = as_json(run(["partition-of", "--key-format", "base64", "-p", c["partitions"], "--partitioner", name,
                           "--format", "json", c["key_b64"]]))
        assert doc == [{"key": c["key_b64"], "partition": EXPECTED[name](c)}]


def test_json_in_input_order_with_notes(run):
    doc = as_json(run(["partition-of", "-p", "12", "--partitioner", "librdkafka", "--null-marker", "NULL",
                       "--format", "json", "b", "", "NULL", "a"]))
    rdk = resolve("librdkafka").partitioner
    assert [d["key"] for d in doc] == ["b", "", None, "a"]
    assert doc[0] == {"key": "b", "partition": partition_for_key(rdk, b"b", 12)}
    assert doc[1]["partition"] is None and doc[1]["note"].startswith("empty key: librdkafka's consistent_random")
    assert doc[2]["partition"] is None and doc[2]["note"].startswith("null key")
    # The Java producer hashes the empty key.
    doc = as_json(run(["partition-of", "-p", "12", "--format", "json", ""]))
    assert doc == [{"key": "", "partition": java("", 12)}]


def test_jsonl_and_stdin(run):
    result = run(["partition-of", "-p", "7", "--format", "jsonl", "-"], input="x\ny\n\n")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows == [{"key": "x", "partition": java("x", 7)}, {"key": "y", "partition": java("y", 7)}]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
@pytest.mark.parametrize("mode", [[], ["--from-partitions", "6"], ["--compare"], ["-f", "KEYS"]])
def test_non_ascii_keys_printed_as_utf8(run, tmp_path: Path, fmt, mode):
    # Like every other command (render.JsonOut): "café", not "caf\u00e9".
    ks = ["café", "😀"]
    f = tmp_path / "keys.txt"
    f.write_text("café\n😀\n", encoding="utf-8")
    args = [f if a == "KEYS" else a for a in mode] + ([] if "-f" in mode else ks)
    result = run(["partition-of", "-p", "12", "--format", fmt, *args])
    assert result.exit_code == 0, result.output
    raw = result.stdout_bytes
    assert "café".encode() in raw and "😀".encode() in raw
    assert b"\\u" not in raw, raw
    rows = json.loads(raw) if fmt == "json" else [json.loads(line) for line in raw.splitlines()]
    assert [r["key"] for r in rows] == ks
    assert [r["partitions"]["java"] if "--compare" in mode else r["partition"] for r in rows] == [java(k, 12) for k in ks]


def test_compare_flags_disagreements(run):
    doc = as_json(run(["partition-of", "-p", "12", "--compare", "--format", "json", "customer-42"]))
    (row,) = doc
    assert set(row["partitions"]) == {"java", "librdkafka", "sarama"}
    assert row["partitions"]["java"] == java("customer-42", 12)
    assert row["agree"] is (len(set(row["partitions"].values())) == 1)
    table = run(["partition-of", "-p", "12", "--compare", "customer-42"])
    assert table.exit_code == 0 and "differ" in table.stdout


def test_from_partitions(run):
    ks = [f"order-{i}" for i in range(200)]
    doc = as_json(run(["partition-of", "-p", "12", "--from-partitions", "6", "--format", "json", *ks]))
    for k, row in zip(ks, doc):
        assert row == {"key": k, "partition": java(k, 12), "from_partition": java(k, 6),
                       "moved": java(k, 12) != java(k, 6)}
    result = run(["partition-of", "-p", "12", "--from-partitions", "6", "--format", "json", *ks])
    moved = sum(r["moved"] for r in doc)
    assert f"{moved} of 200 keys move from 6 to 12 partitions" in result.stderr
    h = as_json(run(["partition-of", "-p", "12", "--from-partitions", "6", "--histogram", "--format", "json", *ks]))
    assert h["moved"] == moved and h["from_num_partitions"] == 6 and h["total"] == 200


def test_topic_description_gives_count_and_leaders(run, tmp_path: Path):
    f = tmp_path / "orders.txt"
    f.write_text(DESCRIBE)
    ks = [f"k{i}" for i in range(40)]
    result = run(["partition-of", "-t", f, "--format", "json", *ks])
    doc = as_json(result)
    leaders = {0: 1, 1: 2, 2: None, 3: 1}
    for k, row in zip(ks, doc):
        assert row == {"key": k, "partition": java(k, 4), "leader": leaders[java(k, 4)]}
    assert "partition(s) 2 have no leader" in result.stderr
    h = as_json(run(["partition-of", "-t", f, "--histogram", "--format", "json", *ks]))
    assert h["topic"] == "orders" and h["num_partitions"] == 4
    assert {b["broker"]: b["partitions"] for b in h["brokers"]} == {1: 2, 2: 1, None: 1}
    bad = run(["partition-of", "-t", f, "-p", "5", "x"])
    assert bad.exit_code == 2 and "contradicts" in bad.stderr


def test_histogram(run):
    ks = [f"k{i}" for i in range(100)]
    h = as_json(run(["partition-of", "-p", "5", "--histogram", "--format", "json", "--partitioner", "sarama", *ks]))
    assert h["partitioner"] == "sarama" and h["total"] == 100 and len(h["partitions"]) == 5
    sar = resolve("sarama").partitioner
    expected = [0] * 5
    for k in ks:
        expected[partition_for_key(sar, k.encode(), 5)] += 1
    assert [p["count"] for p in h["partitions"]] == expected
    rows = run(["partition-of", "-p", "5", "--histogram", "--format", "jsonl", *ks])
    assert len(rows.stdout.splitlines()) == 5
    both = as_json(run(["partition-of", "-p", "5", "--histogram", "--compare", "--format", "json", *ks]))
    assert set(both["histograms"]) == {"java", "librdkafka", "sarama"}
    assert [p["count"] for p in both["histograms"]["sarama"]["partitions"]] == expected
    huge = run(["partition-of", "-p", str(2**31 - 1), "--histogram", "a", "b"])
    assert huge.exit_code == 2 and "more than --max-partitions 1,000,000" in huge.stderr
    # Without --histogram any count is fine, and a description's leaders are looked up per key.
    doc = as_json(run(["partition-of", "-p", str(2**31 - 1), "--format", "json", "a"]))
    assert doc == [{"key": "a", "partition": java("a", 2**31 - 1)}]
    ok = as_json(run(["partition-of", "-p", "7000", "--histogram", "--max-partitions", "7000", "--format", "json", "a"]))
    assert len(ok["partitions"]) == 7000


@pytest.mark.parametrize(
    "fmt, text, key_bytes",
    [
        ("long", "42", (42).to_bytes(8, "big")),
        ("int", "-1", b"\xff\xff\xff\xff"),
        ("uuid", "123E4567-E89B-12D3-A456-426614174000", b"123e4567-e89b-12d3-a456-426614174000"),
        ("hex", "00ff", b"\x00\xff"),
    ],
)
def test_key_formats(run, fmt, text, key_bytes):
    # "--": a negative number would read as an option.
    doc = as_json(run(["partition-of", "-p", "1000", "--key-format", fmt, "--format", "json", "--", text]))
    assert doc == [{"key": text, "partition": (murmur2(key_bytes) & 0x7FFFFFFF) % 1000}]


@pytest.mark.parametrize("value", ["0", "-1", "-50", str(2**31), "abc", "1.5"])
@pytest.mark.parametrize("option", ["--partitions", "--from-partitions"])
def test_bad_partition_counts(run, option, value):
    args = ["partition-of", option, value, "k"] + (["-p", "6"] if option != "--partitions" else [])
    result = run(args)
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_partitions_required(run):
    result = run(["partition-of", "k"])
    assert result.exit_code == 2 and "--partitions N is required" in result.stderr


@pytest.mark.parametrize("fmt", ["json", "jsonl", "table"])
def test_bad_line_prints_nothing_and_names_the_line(run, tmp_path: Path, fmt):
    f = tmp_path / "keys.hex"
    f.write_text("00\nff\n\nabc\n01\n")
    result = run(["partition-of", "-p", "6", "--key-format", "hex", "--format", fmt, "-f", f])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"{f}: line 4: 'abc' is not hex" in result.stderr


def test_bad_argument(run):
    result = run(["partition-of", "-p", "6", "--key-format", "uuid", "not-a-uuid"])
    assert result.exit_code == 2 and "argument 1: 'not-a-uuid' is not a UUID" in result.stderr


def test_usage_errors(run, tmp_path: Path):
    assert run(["partition-of", "-p", "6"]).exit_code == 2
    r = run(["partition-of", "-p", "6", "-P", "java", "-P", "sarama", "k"])
    assert r.exit_code == 2 and "only with --compare" in r.stderr
    r = run(["partition-of", "-p", "6", "--compare", "--from-partitions", "3", "k"])
    assert r.exit_code == 2
    r = run(["partition-of", "-p", "6", "-P", "roundrobin", "k"])
    assert r.exit_code == 2
    r = run(["partition-of", "-p", "6", "-f", tmp_path / "missing.txt"])
    assert r.exit_code == 2 and "no such file" in r.stderr
    r = run(["partition-of", "-p", "6", "-", "-f", "-"], input="a\n")
    assert r.exit_code == 2 and "more than once" in r.stderr


def test_table_and_plain_columns(run, tmp_path: Path):
    r = run(["partition-of", "-p", "6", "customer-42"])
    assert r.exit_code == 0 and "customer-42" in r.stdout
    f = tmp_path / "many.txt"
    f.write_text("".join(f"k{i}\n" for i in range(6000)))
    r = run(["partition-of", "-p", "6", "-f", f])
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "partition\tkey" and len(lines) == 6001
    assert lines[1] == f"{java('k0', 6)}\tk0"


def test_partitioner_names_complete():
    from typer import _click

    from kgtool.cli.main import subcommands

    cmd = subcommands()["partition-of"]
    (param,) = [p for p in cmd.params if p.name == "partitioner"]
    ctx = _click.Context(cmd)
    assert {c.value for c in param.shell_complete(ctx, "")} == set(PARTITIONER_NAMES)
    assert {c.value for c in param.shell_complete(ctx, "murmur2")} == {"murmur2", "murmur2_random"}
