"""`kgtool coordinator-of`: every option, batch input, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgtool.coordinator.partitioning import partition_for

DESCRIBE = """\
Topic: __consumer_offsets\tTopicId: 3Mw6sCYwQYKq2h6vQ0Vf7g\tPartitionCount: 4\tReplicationFactor: 3\tConfigs: cleanup.policy=compact
\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3
\tTopic: __consumer_offsets\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1
\tTopic: __consumer_offsets\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr:
\tTopic: __consumer_offsets\tPartition: 3\tLeader: 1\tReplicas: 1,3,2\tIsr: 1,3,2
"""


def as_json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_table_output(run):
    result = run(["coordinator-of", "polygenelubricants", "a"])
    assert result.exit_code == 0, result.output
    assert "polygenelubricants" in result.stdout and "47" in result.stdout


def test_json_in_input_order_including_empty_id(run):
    doc = as_json(run(["coordinator-of", "--format", "json", "b", "", "polygenelubricants", "😀"]))
    assert doc == [
        {"group_id": "b", "partition": partition_for("b")},
        {"group_id": "", "partition": 0},
        {"group_id": "polygenelubricants", "partition": 0},
        {"group_id": "😀", "partition": partition_for("😀")},
    ]


def test_jsonl(run):
    result = run(["coordinator-of", "--format", "jsonl", "x", "y"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["group_id"] for d in lines] == ["x", "y"]


def _utf8_rows(result, fmt: str) -> list:
    """The rows of a json/jsonl output, checked to be UTF-8 as is (no \\u escape)."""
    assert result.exit_code == 0, result.output
    raw = result.stdout_bytes
    assert "café".encode() in raw and "😀".encode() in raw
    assert b"\\u" not in raw, raw
    if fmt == "json":
        return json.loads(raw)
    return [json.loads(line) for line in raw.splitlines()]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_non_ascii_ids_printed_as_utf8(run, tmp_path: Path, fmt):
    # Like every other command (render.JsonOut): "café", not "caf\u00e9".
    ids = ["café", "😀"]
    rows = _utf8_rows(run(["coordinator-of", "--format", fmt, *ids]), fmt)
    assert rows == [{"group_id": i, "partition": partition_for(i)} for i in ids]
    f = tmp_path / "ids.txt"
    f.write_text("café\n😀\n", encoding="utf-8")
    d = tmp_path / "describe.txt"
    d.write_text(DESCRIBE)
    rows = _utf8_rows(run(["coordinator-of", "--format", fmt, "-t", d, "-f", f]), fmt)
    leaders = {0: 1, 1: 2, 2: None, 3: 1}
    assert rows == [{"group_id": i, "partition": partition_for(i, 4), "coordinator": leaders[partition_for(i, 4)]}
                    for i in ids]
    topic_id = "Jb1xuX3kT1ObYvb0vg8q4g"
    rows = _utf8_rows(run(["coordinator-of", "--share-partition", f"{topic_id}:3", "--format", fmt, *ids]), fmt)
    assert [r["group_id"] for r in rows] == ids


@pytest.mark.parametrize("n", [1, 7, 200, 2**31 - 1])
def test_partitions_option(run, n):
    doc = as_json(run(["coordinator-of", "-p", str(n), "--format", "json", "orders"]))
    assert doc[0]["partition"] == partition_for("orders", n)


@pytest.mark.parametrize("value", ["0", "-1", "-50"])
def test_partitions_not_positive(run, value):
    result = run(["coordinator-of", "--partitions", value, "g"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "positive" in result.stderr


@pytest.mark.parametrize("value", ["abc", "1.5", "", "99999999999999999999999"])
def test_partitions_not_a_number(run, value):
    result = run(["coordinator-of", "--partitions", value, "g"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.output


def test_file_and_stdin(run, tmp_path: Path):
    f = tmp_path / "ids.txt"
    f.write_bytes(b" spaced \r\nx\x00y\n\n")
    doc = as_json(run(["coordinator-of", "--format", "json", "-f", str(f)]))
    assert [d["group_id"] for d in doc] == [" spaced ", "x\x00y"]
    doc = as_json(run(["coordinator-of", "--format", "json", "-"], input=b"s1\ns2\n"))
    assert [d["group_id"] for d in doc] == ["s1", "s2"]
    doc = as_json(run(["coordinator-of", "--format", "json", "--file", "-", "arg"], input=b"s1\n"))
    assert [d["group_id"] for d in doc] == ["arg", "s1"]


def test_stdin_twice_is_a_usage_error(run):
    result = run(["coordinator-of", "-", "--file", "-"], input=b"a\n")
    assert result.exit_code == 2 and "more than once" in result.stderr


def test_unreadable_file(run, tmp_path: Path):
    result = run(["coordinator-of", "--file", str(tmp_path / "missing.txt")])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"kgtool: {tmp_path / 'missing.txt'}: no such file"
    result = run(["coordinator-of", "--file", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_invalid_utf8_file(run, tmp_path: Path):
    f = tmp_path / "ids.txt"
    f.write_bytes(b"good\n\xc3\x28\n")
    result = run(["coordinator-of", "-f", str(f)])
    assert result.exit_code == 2
    assert "line 2: invalid UTF-8" in result.stderr


def test_no_ids(run):
    result = run(["coordinator-of"])
    assert result.exit_code == 2 and "no ids given" in result.stderr


def test_topic_description_adds_coordinator(run, tmp_path: Path):
    f = tmp_path / "describe.txt"
    f.write_text(DESCRIBE)
    ids = ["a", "b", "c", "d", "e", "f"]
    doc = as_json(run(["coordinator-of", "-t", str(f), "--format", "json", *ids]))
    leaders = {0: 1, 1: 2, 2: None, 3: 1}
    for d in doc:
        p = partition_for(d["group_id"], 4)  # PartitionCount taken from the description
        assert d["partition"] == p
        assert d["coordinator"] == leaders[p]
    table = run(["coordinator-of", "-t", str(f), *ids])
    assert table.exit_code == 0 and "coordinator" in table.stdout


def test_topic_description_yaml_map(run, tmp_path: Path):
    f = tmp_path / "leaders.yaml"
    f.write_text("0: 10\n1: 11\n2: 12\n")
    doc = as_json(run(["coordinator-of", "-t", str(f), "-p", "3", "--format", "json", "g"]))
    assert doc[0]["coordinator"] == 10 + partition_for("g", 3)


def test_topic_description_contradicting_partitions(run, tmp_path: Path):
    f = tmp_path / "describe.txt"
    f.write_text(DESCRIBE)
    result = run(["coordinator-of", "-t", str(f), "-p", "50", "g"])
    assert result.exit_code == 2 and "contradicts" in result.stderr


def test_topic_description_of_the_wrong_topic(run, tmp_path: Path):
    f = tmp_path / "describe.txt"
    f.write_text(DESCRIBE)
    result = run(["coordinator-of", "--transactional-id", "-t", str(f), "tx"])
    assert result.exit_code == 2 and "__transaction_state" in result.stderr


def test_malformed_topic_description(run, tmp_path: Path):
    f = tmp_path / "bad.yaml"
    f.write_text("partitions: [1, 2\n")
    result = run(["coordinator-of", "-t", str(f), "g"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_transactional_id(run):
    doc = as_json(run(["coordinator-of", "--transactional-id", "--format", "json", "-p", "7", "tx-1"]))
    assert doc == [{"transactional_id": "tx-1", "partition": partition_for("tx-1", 7)}]


def test_share_partition(run):
    topic_id = "Jb1xuX3kT1ObYvb0vg8q4g"
    doc = as_json(run(["coordinator-of", "--share-partition", f"{topic_id}:3", "--format", "json", "sg"]))
    assert doc == [
        {
            "group_id": "sg",
            "partition": partition_for(f"sg:{topic_id}:3", 50),
            "topic_id": topic_id,
            "share_partition": 3,
        }
    ]


@pytest.mark.parametrize("value", ["nocolon", "Jb1xuX3kT1ObYvb0vg8q4g:x", "bad:3", ":3"])
def test_share_partition_bad(run, value):
    result = run(["coordinator-of", "--share-partition", value, "sg"])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_transactional_and_share_are_exclusive(run):
    result = run(["coordinator-of", "--transactional-id", "--share-partition", "Jb1xuX3kT1ObYvb0vg8q4g:1", "x"])
    assert result.exit_code == 2 and "exclusive" in result.stderr


def test_histogram_json_counts_every_partition(run):
    doc = as_json(run(["coordinator-of", "--histogram", "--format", "json", "-p", "5", "a", "b", "c", "a"]))
    assert doc["num_partitions"] == 5 and doc["total"] == 4
    assert [p["partition"] for p in doc["partitions"]] == [0, 1, 2, 3, 4]
    expected = [0] * 5
    for g in "abca":
        expected[partition_for(g, 5)] += 1
    assert [p["count"] for p in doc["partitions"]] == expected


def test_histogram_with_brokers(run, tmp_path: Path):
    f = tmp_path / "describe.txt"
    f.write_text(DESCRIBE)
    ids = [f"group-{i}" for i in range(40)]
    doc = as_json(run(["coordinator-of", "--histogram", "-t", str(f), "--format", "json", *ids]))
    by_broker = {b["broker"]: b for b in doc["brokers"]}
    assert sum(b["count"] for b in doc["brokers"]) == 40
    assert by_broker[1]["partitions"] == 2 and by_broker[None]["partitions"] == 1
    table = run(["coordinator-of", "--histogram", "-t", str(f), *ids])
    assert table.exit_code == 0 and "ids per coordinator broker" in table.stdout


def test_histogram_jsonl_and_table(run):
    result = run(["coordinator-of", "--histogram", "--format", "jsonl", "-p", "3", "a"])
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 3
    result = run(["coordinator-of", "--histogram", "--sample"])
    assert result.exit_code == 0 and "█" in result.stdout


def test_sample(run):
    doc = as_json(run(["coordinator-of", "--sample", "--format", "json"]))
    assert len(doc) == 2000
    assert {"group_id": "polygenelubricants", "partition": 0} in doc


def test_large_table_falls_back_to_plain_columns(run, tmp_path: Path):
    f = tmp_path / "ids.txt"
    f.write_text("".join(f"g{i}\n" for i in range(6000)))
    result = run(["coordinator-of", "-f", str(f)])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "partition\tgroup_id" and len(lines) == 6001
    assert lines[1] == f"{partition_for('g0')}\tg0"


def test_invalid_utf8_argument_via_process(run_process):
    result = run_process(["coordinator-of", b"\xff".decode("utf-8", "surrogateescape")])
    assert result.returncode == 2
    assert b"not valid UTF-8" in result.stderr


def test_broken_pipe_is_quiet(run_process, tmp_path: Path):
    import subprocess
    import sys

    f = tmp_path / "ids.txt"
    f.write_text("".join(f"g{i}\n" for i in range(200_000)))
    proc = subprocess.run(
        f"{sys.executable} -m kgtool coordinator-of -f {f} --format jsonl | head -1",
        shell=True, capture_output=True, env={**__import__('os').environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.stdout.count(b"\n") == 1
    assert b"Traceback" not in proc.stderr


# -- fuzz campaign defects 13-16


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgtool: "), lines
    return lines[0]


def describe_text(count: int | None, partitions: list[int]) -> str:
    head = "Topic: __consumer_offsets\tTopicId: Jb1xuX3kT1ObYvb0vg8q4g\t"
    head += (f"PartitionCount: {count}\t" if count is not None else "") + "ReplicationFactor: 3\tConfigs:\n"
    return head + "".join(f"\tTopic: __consumer_offsets\tPartition: {p}\tLeader: {p % 3}\tReplicas: 1\tIsr: 1\n" for p in partitions)


def test_a_partition_count_of_int_max_needs_no_table(run, tmp_path: Path):
    # Defect 13: PartitionCount 2147483647 ended in MemoryError (a leader list of 2**31 entries).
    f = tmp_path / "d.txt"
    f.write_text(describe_text(2**31 - 1, [0, 1, 2]))
    doc = as_json(run(["coordinator-of", "-t", str(f), "--format", "json", "g1", "polygenelubricants"]))
    assert doc[0]["partition"] == partition_for("g1", 2**31 - 1) and doc[0]["coordinator"] is None
    assert doc[1] == {"group_id": "polygenelubricants", "partition": 0, "coordinator": 0}


@pytest.mark.parametrize(
    "args",
    [["--partitions", "2147483647", "--histogram", "g1"], ["--histogram", "-t", "{desc}", "g1"]],
)
def test_histogram_is_bounded_by_max_partitions(run, tmp_path: Path, args):
    # Defect 13: --partitions 2147483647 --histogram ended in MemoryError.
    f = tmp_path / "d.yaml"
    f.write_text("{1000000000: 1}")  # the highest partition + 1 is the count
    args = [a.replace("{desc}", str(f)) for a in args]
    line = one_error_line(run(["coordinator-of", *args]))
    assert "--histogram lists every partition" in line and "more than --max-partitions 1,000,000" in line
    ok = run(["coordinator-of", "--partitions", "6000", "--histogram", "--max-partitions", "6000", "g1"])
    assert ok.exit_code == 0 and "plain columns" in ok.stderr and ok.stdout.count("\n") == 6002


def test_partition_out_of_range_is_blamed_on_the_file(run, tmp_path: Path):
    # Defect 13: "--partitions must fit in a 32-bit int", an option the user did not give.
    f = tmp_path / "d.txt"
    f.write_text(describe_text(None, [0, 10**20]))
    line = one_error_line(run(["coordinator-of", "-t", str(f), "g1"]))
    assert line == f"kgtool: {f}: line 3: partition '100000000000000000000' out of range (0 to 2,147,483,646)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),  # YAML and JSON
        ('{"partitions": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 100 levels"),
        ("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{c}: &{c} [{','.join([f'*{chr(ord(c) - 1)}'] * 9)}]\n" for c in "bcdefgh"
        ) + "partitions: {0: *h}\n", "more than 5,000,000 values"),  # YAML aliases
    ],
)
@pytest.mark.parametrize("from_stdin", [False, True])
def test_hostile_descriptions_one_short_line(run, tmp_path: Path, text, message, from_stdin):
    if from_stdin:
        result = run(["coordinator-of", "-t", "-", "g1"], input=text)
    else:
        f = tmp_path / "d.yaml"
        f.write_text(text)
        result = run(["coordinator-of", "-t", str(f), "g1"])
    line = one_error_line(result)
    assert message in line and len(line) < 300


def test_stdin_for_both_ids_and_description_is_refused(run):
    line = one_error_line(run(["coordinator-of", "-t", "-", "-"], input="g1\n"))
    assert "'-' (stdin) given for both the ids and --topic-description" in line


def test_long_id_is_shortened_in_the_table_only(run, tmp_path: Path):
    # Defect 16: Rich laid out a 100 MB cell for over 10 s; people see the head and the length.
    f = tmp_path / "ids.txt"
    long_id = "é" * 300_000
    f.write_text(long_id + "\n[bold]x\n")
    table = run(["coordinator-of", "-f", str(f)])
    assert table.exit_code == 0, table.output
    assert "(300,000 characters)" in table.stdout and len(table.stdout) < 3000
    assert "ids longer than 200 characters are shortened here; --format json prints them whole" in table.stderr
    doc = as_json(run(["coordinator-of", "-f", str(f), "--format", "json"]))
    assert doc[0]["group_id"] == long_id and doc[0]["partition"] == partition_for(long_id)


def test_plain_columns_print_ids_as_written(run, tmp_path: Path):
    # Above 5,000 ids the plain columns are not Rich markup: no backslash before '['.
    f = tmp_path / "ids.txt"
    f.write_text("".join(f"[g{i}]\n" for i in range(5001)))
    result = run(["coordinator-of", "-f", str(f)])
    assert result.exit_code == 0
    assert "\t[g0]\n" in result.stdout and "\\[" not in result.stdout


def test_histogram_json_is_the_same_document(run, tmp_path: Path):
    f = tmp_path / "d.txt"
    f.write_text(describe_text(3, [0, 1, 2]))
    doc = as_json(run(["coordinator-of", "--histogram", "-t", str(f), "--format", "json", "a", "b", "c"]))
    assert doc["num_partitions"] == 3 and doc["total"] == 3
    assert [p["partition"] for p in doc["partitions"]] == [0, 1, 2]
    assert [p["coordinator"] for p in doc["partitions"]] == [0, 1, 2]
    assert sum(b["count"] for b in doc["brokers"]) == 3


def test_id_input_is_bounded(run, tmp_path: Path, monkeypatch):
    monkeypatch.setattr("kgtool.coordinator.idlist.MAX_ID_BYTES", 100)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("g\n" * 30)
    b.write_text("h\n" * 30)
    assert run(["coordinator-of", "-f", str(a)]).exit_code == 0
    line = one_error_line(run(["coordinator-of", "-f", str(a), "-f", str(b)]))
    assert line == f"kgtool: {b}: the ids read come to more than 0 MiB, the most coordinator-of reads at once: split the list"
    assert "more than" in one_error_line(run(["coordinator-of", "-"], input="x\n" * 200))
