"""``kgtool assign`` through the CLI: formats, what-if, compare, validate, replay, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
SCENARIO1 = ROOT / "fixtures" / "offsets" / "scenario1_generations" / "decode.jsonl"
runner = CliRunner()

GROUP = """\
group: orders-service
assignor: range
topics:
  orders: 6
  payments: {partitions: 3, racks: [[r1, r2], [r2, r3], [r3, r1]]}
members:
  - id: consumer-1
    topics: [orders, payments]
    owned: {orders: [0, 1]}
    generation: 4
    rack: r1
  - id: consumer-2
    topics: [orders]
"""


@pytest.fixture
def group_file(tmp_path):
    p = tmp_path / "group.yaml"
    p.write_text(GROUP)
    return str(p)


def invoke(*args, input=None):
    return runner.invoke(app, ["assign", *args], input=input)


def test_table(group_file):
    result = invoke(group_file)
    assert result.exit_code == 0, result.output
    assert "range (eager) for group orders-service" in result.stdout
    assert "orders: 0-2; payments: 0-2" in result.stdout
    assert "orders: 3-5" in result.stdout


def test_json_assignment_in_assignor_order(group_file):
    result = invoke(group_file, "--format", "json", "--assignor", "roundrobin")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["assignor"] == "roundrobin" and doc["rebalance_protocol"] == "eager"
    assert doc["group"] == "orders-service" and doc["input"] == "yaml"
    # RoundRobinAssignor: partitions sorted by topic, dealt over the sorted subscribers.
    assert doc["assignment"] == {
        "consumer-1": {"orders": [0, 2, 4], "payments": [0, 1, 2]},
        "consumer-2": {"orders": [1, 3, 5]},
    }
    assert doc["stats"]["partitions_per_member"] == {"min": 3, "max": 6, "mean": 4.5, "stddev": 1.5}
    # consumer-1 keeps orders-0; orders-1 moves to consumer-2; eager: both owned are revoked.
    assert doc["stats"]["kept"] == 1 and doc["stats"]["moved"] == 1 and doc["stats"]["revoked"] == 2


def test_jsonl_one_line_per_member(group_file):
    result = invoke(group_file, "--format", "jsonl")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines == [
        {"member_id": "consumer-1", "assignment": {"orders": [0, 1, 2], "payments": [0, 1, 2]}},
        {"member_id": "consumer-2", "assignment": {"orders": [3, 4, 5]}},
    ]


def test_what_if(group_file):
    result = invoke(group_file, "--format", "json", "--remove", "consumer-2", "--add", "c3=orders,payments",
                    "--partitions", "orders=8")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["what_if"] == ["remove consumer-2", "add c3 subscribed to orders,payments", "orders has 8 partitions"]
    assert doc["assignment"] == {
        # RangeAssignor sorts members by id: "c3" < "consumer-1".
        "consumer-1": {"orders": [4, 5, 6, 7], "payments": [2]},
        "c3": {"orders": [0, 1, 2, 3], "payments": [0, 1]},
    }


def test_compare_json(group_file):
    result = invoke(group_file, "--compare", "range,roundrobin", "--format", "json", "--add", "c3=orders")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["assignor"] for r in doc["compare"]] == ["range", "roundrobin"]
    assert all(r["revoked"] == 2 for r in doc["compare"])  # eager: all owned partitions


def test_compare_table(group_file):
    result = invoke(group_file, "--compare", "range,roundrobin")
    assert result.exit_code == 0, result.output
    assert "next rebalance by strategy" in result.stdout


def test_describe_text_from_stdin():
    text = (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT\n"
        "g               c1              /10.0.0.1       c1              2               t(0,1)\n"
        "g               c2              /10.0.0.2       c2              1               t(2)\n"
    )
    result = invoke("-", "--assignor", "range", "--format", "json", input=text)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["input"] == "describe-members" and doc["group"] == "g"
    assert doc["assignment"] == {"c1": {"t": [0, 1]}, "c2": {"t": [2]}}
    assert doc["stats"]["kept"] == 3 and doc["stats"]["moved"] == 0
    assert "note: partition counts inferred from the assignment (t: 3)" in result.output


def test_validate_ok_and_findings(group_file, tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"consumer-1": {"orders": [0, 1, 2], "payments": [0, 1, 2]}, "consumer-2": {"orders": [3, 4, 5]}}))
    result = invoke(group_file, "--validate", str(good))
    assert result.exit_code == 0, result.output
    assert "valid" in result.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("consumer-1: {orders: [0, 1, 2], payments: [0, 1]}\nconsumer-2: {orders: [3, 4, 5, 5], payments: [2]}\n")
    result = invoke(group_file, "--validate", str(bad), "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["valid"] is False
    assert doc["problems"] == ["consumer-2: orders-5 listed twice", "consumer-2: payments-2: member is not subscribed to payments"]
    assert "bad.yaml: the assignment is not valid (2 problem(s))" in result.output


def test_own_json_output_validates(group_file, tmp_path):
    out = invoke(group_file, "--format", "json")
    p = tmp_path / "out.json"
    p.write_text(out.stdout)
    assert invoke(group_file, "--validate", str(p)).exit_code == 0


def test_replay_reports_differences_exit_1():
    # Generation 1 (one member takes everything) is what range computes too; later generations
    # were cooperative-sticky rounds, which range does not reproduce.
    result = invoke(str(SCENARIO1), "--assignor", "range", "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["group"] == "orders-service" and doc["all_match"] is False
    assert [r["generation"] for r in doc["rounds"]] == [1, 2, 3, 4, 5]
    assert doc["rounds"][0]["matches"] is True
    assert doc["rounds"][1]["matches"] is False
    assert doc["rounds"][1]["differences"]["consumerB-2222"]["recorded"] == {}
    assert "recorded generation(s) differ from what the assignor computes" in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topics: {a: 1}\nmembers: [{id: m, topics: [a]}, {id: m, topics: [a]}]", "duplicate member 'm'"),
        ("topics: {a: 1}\nmembers: [{id: m, topics: [b]}]", "member 'm' subscribes to unknown topic 'b'"),
        ("topics: {a: 1}\nmembers: [{id: m, topics: [a], owned: {a: [1]}}]",
         "member 'm': owned partition a-1 out of range (a has 1 partitions)"),
        ("topics: {a: 2}\nmembers: [{id: m, topics: [a], owned: {a: [1, 1]}}]", "member 'm' owns partition a-1 twice"),
        ("assignor: fair\ntopics: {a: 2}\nmembers: [{id: m, topics: [a]}]",
         "unknown assignor 'fair': valid names are range, roundrobin, sticky, cooperative-sticky, server-uniform, server-range"),
        ("topics: {a: 2}\nmembers: [{id: m, topics: [a]}]", "no assignor: give --assignor"),
        ("topics: {a: 2\nmembers: []\n", "line 2 column 8: malformed YAML"),
    ],
)
def test_bad_input_exit_2_one_line(tmp_path, text, message):
    p = tmp_path / "g.yaml"
    p.write_text(text)
    result = invoke(str(p))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgtool: ") and message in lines[0], lines


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--remove", "nobody"], "--remove nobody: no such member"),
        (["--add", "x"], "--add expects MEMBER=topic"),
        (["--partitions", "orders=2"], "Kafka cannot remove partitions"),
        (["--compare", "range,nope"], "unknown assignor 'nope'"),
        (["--format", "xml"], "kgtool assign: --format: 'xml' is not one of table, json, jsonl"),
    ],
)
def test_bad_options_exit_2(group_file, args, message):
    result = invoke(group_file, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_missing_file_exit_2():
    result = invoke("/nonexistent/group.yaml")
    assert result.exit_code == 2
    assert result.output == "kgtool: /nonexistent/group.yaml: no such file\n"


def test_help_lists_assignors():
    result = runner.invoke(app, ["assign", "--help"])
    assert result.exit_code == 0, result.output
    assert "cooperative-sticky" in result.stdout and "--compare" in result.stdout


def test_man_sections_are_plain_text():
    from kgtool.cli import assign

    assert set(assign.MAN_SECTIONS) >= {"EXAMPLES", "GROUP FILE"}
    assert all(isinstance(v, str) and v for v in assign.MAN_SECTIONS.values())
    # What the exit codes mean for assign: merged into the page's one EXIT STATUS section.
    assert set(assign.MAN_EXIT_STATUS) == {1, 2}


def test_subprocess_from_stdin(group_file):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "kgtool", "assign", "-", "--format", "json"],
                          input=Path(group_file).read_text(), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["assignment"]["consumer-2"] == {"orders": [3, 4, 5]}


# -- the JSON text builder (fast paths must equal json.dumps)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kgtool.cli.assign import assignment_json, compact  # noqa: E402

_topics = st.one_of(st.sampled_from(["a", "b.c", "d_e-f", "t0"]), st.text(min_size=1, max_size=4))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.lists(st.tuples(_topics, st.integers(0, 99)), max_size=12), max_size=5))
def test_assignment_json_equals_json_dumps(assignment):
    expected = {}
    for member, parts in assignment.items():
        by = {}
        for t, p in parts:
            by.setdefault(t, []).append(p)
        expected[member] = by
    assert json.loads(assignment_json(assignment)) == expected
    # Key order too: topics in first-seen order, partitions in the assignor's order.
    assert json.dumps(json.loads(assignment_json(assignment))) == json.dumps(expected)


@pytest.mark.parametrize(
    ("parts", "text"),
    [
        ([("a", 0), ("b", 0)], '{"a": [0], "b": [0]}'),  # one partition per topic
        ([("a", 2), ("a", 0), ("b", 1)], '{"a": [2, 0], "b": [1]}'),  # runs
        ([("a", 0), ("b", 1), ("a", 1)], '{"a": [0, 1], "b": [1]}'),  # a topic in two runs
        ([('q"t', 0)], '{"q\\"t": [0]}'),  # not a Kafka topic name: escaped
    ],
)
def test_assignment_json_paths(parts, text):
    assert assignment_json({"m": parts}) == '{\n    "m": ' + text + "\n  }"


def test_compact():
    assert compact([("b", 3), ("a", 5), ("a", 0), ("a", 1), ("a", 2), ("b", 4)]) == "a: 0-2,5; b: 3-4"


def test_replay_scenario1_matches_kafka():
    # Five generations written by Kafka's group coordinator, each computed by Kafka's
    # CooperativeStickyAssignor: replaying the recorded subscriptions reproduces every one.
    result = invoke(str(SCENARIO1), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["all_match"] is True
    assert [(r["generation"], r["assignor"], r["matches"]) for r in doc["rounds"]] == [
        (g, "cooperative-sticky", True) for g in range(1, 6)]
    table = invoke(str(SCENARIO1))
    assert table.exit_code == 0 and table.stdout.count("matches") == 5


def test_what_if_on_recorded_group_starts_from_the_last_generation():
    result = invoke(str(SCENARIO1), "--remove", "consumerC-3333", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["assignor"] == "cooperative-sticky" and doc["input"] == "group-metadata"
    # Generation 5: B owns orders 0, 2 and payments 0 (kept), C orders 1 and payments 1, 2
    # (moved: C left, nothing to revoke first), orders 3-5 were withheld (newly assigned).
    assert (doc["stats"]["kept"], doc["stats"]["moved"], doc["stats"]["newly_assigned"]) == (3, 3, 3)
    assert doc["stats"]["revoked"] == 0 and doc["stats"]["withheld"] == 0 and "settled" not in doc
    assert doc["assignment"] == {"consumerB-2222": {"orders": [0, 2, 1], "payments": [0, 2]},
                                 "consumerD-4444": {"orders": [3, 4, 5], "payments": [1]}}


def test_stdin_twice_is_a_usage_error():
    result = invoke("-", "--validate", "-", input="topics: {}\nmembers: []\n")
    assert result.exit_code == 2
    assert "'-' (stdin) given for both GROUP_FILE and --validate" in result.output


def test_decode_batch_jsonl_pipes_into_assign():
    # The segment Kafka's group coordinator wrote, decoded by kgtool's decode-batch, then
    # replayed: every generation equals what CooperativeStickyAssignor computes.
    segment = SCENARIO1.parent / "00000000000000000000.log"
    decoded = runner.invoke(app, ["decode-batch", str(segment), "--decode", "offsets", "--format", "jsonl"])
    assert decoded.exit_code == 0, decoded.output
    result = invoke("-", "--format", "json", input=decoded.stdout)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["all_match"] is True and [r["generation"] for r in doc["rounds"]] == [1, 2, 3, 4, 5]
    assert [r["offset"] for r in doc["rounds"]] == [0, 10, 16, 24, 34]


def test_cooperative_table_shows_the_follow_up_rebalance(tmp_path):
    p = tmp_path / "coop.yaml"
    p.write_text("topics: {t0: 4}\nmembers:\n  - {id: C0, topics: [t0], owned: {t0: [0, 1, 2, 3]}, generation: 2}\n"
                 "  - {id: C1, topics: [t0]}\n")
    result = invoke(str(p), "-a", "cooperative-sticky")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "after 2 rebalances" in out and "2 withheld until revoked" in out
    assert "after 2 rebalances: moved 2, kept 2" in out
    doc = json.loads(invoke(str(p), "-a", "cooperative-sticky", "--format", "json").stdout)
    assert doc["assignment"] == {"C0": {"t0": [0, 1]}, "C1": {}}
    assert doc["stats"]["withheld"] == 2 and doc["stats"]["revoked_by_member"] == {"C0": 2}
    assert doc["settled"]["rebalances"] == 2
    assert doc["settled"]["assignment"] == {"C0": {"t0": [0, 1]}, "C1": {"t0": [2, 3]}}


# -- fuzz campaign defects 8-12: every bad input is one line on stderr and exit 2


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgtool: "), lines
    return lines[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topics: {t: 1}\nmembers:\n  - id: m\n    topics: [t]\n    owned: [[{a: 1}, 0]]\n",
         "members[0].owned[0][0]: expected a topic name (a string), got a mapping"),  # a wrong type, named by its path
        ("topics:\n  t: 1000000000\nmembers:\n  - id: a\n    topics: [t]\n",
         "1,000,000,000 partitions in all (topic 't' has 1,000,000,000): more than --max-partitions 1,000,000"),  # 9
        ("topics: " + "[" * 50_000 + "]" * 50_000 + "\nmembers: []\n", "nested deeper than 100 levels"),  # 11
        ("topics: {t: 3}\nmembers: [{id: m\x01, topics: [t]}]\nassignor: range\n",
         "line 2 column 17: malformed YAML: unacceptable character #x0001: control characters are not allowed"),  # 12
    ],
)
@pytest.mark.parametrize("from_stdin", [False, True])
def test_fuzz_reproducers_one_line_exit_2(tmp_path, text, message, from_stdin):
    if from_stdin:
        result = invoke("-", "--assignor", "sticky", input=text)
    else:
        p = tmp_path / "g.yaml"
        p.write_text(text)
        result = invoke(str(p), "--assignor", "sticky")
    assert message in one_error_line(result)


def test_server_uniform_zero_partition_topic(tmp_path):
    # Defect 10.
    p = tmp_path / "g.yaml"
    p.write_text("topics: {t1: 0, t5: 2}\nmembers:\n  - {id: C1, topics: [t1, t5]}\n  - {id: C4, topics: [t1]}\n")
    result = invoke(str(p), "--assignor", "server-uniform", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["assignment"] == {"C1": {"t5": [0, 1]}, "C4": {}}


def test_max_partitions_option(tmp_path):
    p = tmp_path / "g.yaml"
    p.write_text("topics: {t: 3}\nmembers: [{id: m, topics: [t]}]\n")
    assert "more than --max-partitions 2" in one_error_line(invoke(str(p), "-a", "range", "--max-partitions", "2"))
    # The what-if counts too: --partitions may grow a topic past the limit.
    line = one_error_line(invoke(str(p), "-a", "range", "--partitions", "t=5000000"))
    assert line == (
        "kgtool: --partitions: 5,000,000 partitions in all (topic 't' has 5,000,000): more than "
        "--max-partitions 1,000,000 (raise it if this machine has the memory)"
    )
    result = invoke(str(p), "-a", "range", "--partitions", "t=1500000", "--max-partitions", "2000000", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    bad = invoke(str(p), "--max-partitions", "0")
    assert bad.exit_code == 2 and bad.stderr == "kgtool assign: --max-partitions: 0 is less than the minimum, 1\n"


def test_notes_are_not_printed_before_an_error():
    # Defect 12: the describe text's "note:" lines came before the error line.
    text = (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT\n"
        "g               c1              /10.0.0.1       c1              2               t(0,1)\n"
    )
    line = one_error_line(invoke("-", "--assignor", "range", "--remove", "nobody", input=text))
    assert "--remove nobody: no such member" in line
    ok = invoke("-", "--assignor", "range", input=text)
    assert ok.exit_code == 0 and "note: partition counts inferred" in ok.stderr


def test_validate_file_has_the_same_guards(group_file, tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{chr(ord(c) - 1)}'] * 10)}]\n" for c in "bcdefg"
    ))
    line = one_error_line(invoke(group_file, "--validate", str(p)))
    assert "more than 5,000,000 values (YAML aliases counted as all they name)" in line and len(line) < 300


def test_huge_member_id_is_shortened_in_the_table(tmp_path):
    p = tmp_path / "g.json"
    member = "m" * 50_000
    p.write_text(json.dumps({"assignor": "range", "topics": {"t": 1}, "members": [{"id": member, "topics": ["t"]}]}))
    table = invoke(str(p))
    assert table.exit_code == 0, table.output
    assert "(50,000 characters)" in table.stdout and len(table.stdout) < 5000
    assert json.loads(invoke(str(p), "--format", "json").stdout)["assignment"] == {member: {"t": [0]}}


COOP_GROUP = """\
assignor: cooperative-sticky
group: orders-service
topics: {orders: 6}
members:
  - {id: A, topics: [orders], owned: {orders: [0, 1, 2]}, generation: 3}
  - {id: B, topics: [orders], owned: {orders: [3, 4, 5]}, generation: 3}
  - {id: C, topics: [orders]}
"""


def test_validate_accepts_own_cooperative_sticky_output_with_withheld_partitions(tmp_path):
    g = tmp_path / "group.yaml"
    g.write_text(COOP_GROUP)
    out = invoke(str(g), "--format", "json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["stats"]["withheld"] == 2
    a = tmp_path / "a.json"
    a.write_text(out.stdout)
    result = invoke(str(g), "--validate", str(a))
    assert result.exit_code == 0, result.output
    assert "valid: 4 partitions" in result.stdout and "2 more pending revocation" in result.stdout
    assert "pending revocation (cooperative protocol, KIP-429)" in result.stdout
    doc = json.loads(invoke(str(g), "--validate", str(a), "--format", "json").stdout)
    assert doc["valid"] is True and doc["rebalance_protocol"] == "cooperative"
    assert doc["pending_revocation"] == {"A": {"orders": [2]}, "B": {"orders": [5]}}


def test_validate_cooperative_reports_a_move_before_revocation(tmp_path):
    g = tmp_path / "group.yaml"
    g.write_text(COOP_GROUP)
    a = tmp_path / "a.yaml"
    a.write_text("A: {orders: [0, 1]}\nB: {orders: [3, 4, 2]}\nC: {orders: [5]}\n")
    result = invoke(str(g), "--validate", str(a), "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["problems"][0].startswith("orders-2: assigned to B while A still owns it")
    # Checked as range's (eager) assignment, the same moves are valid.
    assert invoke(str(g), "--validate", str(a), "--assignor", "range").exit_code == 0


def test_describe_text_without_group_column():
    text = (
        "\nTOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n"
        "t               0          5               9               4               c1              /10.0.0.1       c1\n"
        "t               1          5               9               4               c2              /10.0.0.2       c2\n"
    )
    result = invoke("-", "--assignor", "range", "--group", "old-group", "--format", "json", input=text)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["input"] == "describe-offsets" and doc["group"] == "old-group"
    assert doc["assignment"] == {"c1": {"t": [0]}, "c2": {"t": [1]}}
    assert "no GROUP column" in result.stderr
