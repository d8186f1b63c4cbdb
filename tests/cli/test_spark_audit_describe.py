"""``kgtool spark-audit --group``: the matched groups as ``kafka-consumer-groups.sh --describe
--state --verbose`` and ``--describe --members --verbose`` print them, checked cell by cell
against the state Kafka's own coordinator loaded from the same Kafka-made logs
(``fixtures/kip848/<scenario>/loaded.jsonl``), at the end of the log and at ``--until`` instants."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from typer.testing import CliRunner

from kgtool.cli import describe
from kgtool.cli.main import app
from kgtool.java import string_hash_order
from tests.kip848.golden import SCENARIOS, segment
from tests.kip848.test_state_tables import loaded_until
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

runner = CliRunner()
LOG_PARTITION = 12


# --- Kafka's formatting (ConsumerGroupCommand, Kafka 4), without Spark ------------------------------


def test_assignment_string_is_kafkas():
    # DescribeConsumerGroupTest.testDescribeGroupMembers: topic1 has partitions 0 and 1, topic2 0
    assert describe.assignment_string(["test.topic.CONSUMER1-0", "test.topic.CONSUMER1-1", "test.topic.CONSUMER2-0"]) \
        == "test.topic.CONSUMER1:0,1;test.topic.CONSUMER2:0"
    assert describe.assignment_string(["payments-3", "orders-10", "orders-2"]) == "orders:2,10;payments:3"
    assert describe.assignment_string(["a-b-1"]) == "a-b:1"  # the partition follows the last hyphen
    assert describe.assignment_string([]) == describe.assignment_string(None) == "-"


def _member(**kw):
    m = {"group": "g", "type": "consumer", "member_id": "m1", "instance_id": None, "client_id": "c", "client_host": "/h",
         "member_epoch": 3, "assigned": ["t-0"], "target": ["t-0", "t-1"], "target_epoch": 4,
         "uses_classic_protocol": False}
    return {**m, **kw}


def test_member_columns_follow_the_members():
    plain = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
             "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    assert describe.member_columns([_member()]) == plain
    cols = describe.member_columns([_member(instance_id="i-1"), _member(uses_classic_protocol=True)])
    assert cols == plain[:2] + ["GROUP-INSTANCE-ID"] + plain[2:] + ["UPGRADED"]
    assert describe.member_row(_member(uses_classic_protocol=True), cols) == \
        ["g", "m1", "", "/h", "c", "1", "3", "t:0", "4", "t:0,1", "false"]
    classic = _member(type="classic", member_epoch=None, target=None, target_epoch=None, uses_classic_protocol=True)
    assert describe.member_columns([classic]) == plain  # a classic group's members: no UPGRADED
    assert describe.member_row(classic, plain) == ["g", "m1", "/h", "c", "1", "-", "t:0", "-", "-"]


def test_state_row_and_notes():
    g = {"group": "g", "log_partition": 7, "type": "classic", "state": "Empty", "group_epoch": None,
         "assignment_epoch": None, "assignor": None, "member_count": 0, "incomplete": None}
    assert describe.state_row(g) == ["g", "__consumer_offsets-7", "-", "Empty", "-", "-", "0"]
    assert describe.notes(g, 0) == ["Consumer group 'g' has no active members."]
    assert describe.state_row({**g, "log_partition": -1})[1] == "-"  # a segment outside __consumer_offsets-N
    assert describe.notes({**g, "state": "Reconciling", "member_count": 600}, 500) == [
        "Warning: Consumer group 'g' is rebalancing.", "the first 500 of its 600 members are shown"]


# --- end to end: the console and the JSON against Kafka's loaded state ------------------------------


def _kafka_assignment(pairs) -> str:
    """getAssignmentString, written again from [topic, partition] pairs."""
    topics: dict[str, list[int]] = {}
    for topic, partition in pairs or ():
        topics.setdefault(topic, []).append(partition)
    return ";".join(sorted(t + ":" + ",".join(str(p) for p in sorted(ps)) for t, ps in topics.items())) or "-"


def _dash(v) -> str:
    return "-" if v is None else str(v)


def expected(scenario, until):
    """Kafka's groups at ``until`` as the two views print them: {group: (state row, member rows)}."""
    groups, _ = loaded_until(scenario, until)
    out = {}
    for gid, g in sorted(groups.items()):
        members = sorted(g["members"], key=lambda m: m["member_id"])
        modern = g["type"] != "classic"
        if modern:
            # ConsumerGroup.preferredServerAssignor: the most asked; a tie goes to the first in the
            # HashMap's order (kgtool.java, checked against Java in tests/test_java.py)
            asked = Counter(m["server_assignor"] for m in members if m["server_assignor"])
            top = max(asked.values(), default=0)
            strategy = next((a for a in string_hash_order(asked) if asked[a] == top), "-")
        else:
            strategy = g["protocol_name"] or "-"
        state = [gid, f"__consumer_offsets-{LOG_PARTITION}", strategy, g["state"],
                 _dash(g.get("group_epoch")), _dash(g.get("assignment_epoch")), str(len(members))]
        kinds = {not m["uses_classic_protocol"] for m in members} if modern else set()
        rows = []
        for m in members:
            row = [gid, m["member_id"]] + ([m["instance_id"] or ""] if any(x["instance_id"] for x in members) else [])
            row += [m["client_host"], m["client_id"], str(len(m["assigned"])),
                    _dash(m.get("member_epoch")), _kafka_assignment(m["assigned"]),
                    _dash(g.get("assignment_epoch")), _kafka_assignment(m.get("target"))]
            if kinds == {True, False}:
                row.append(str(not m["uses_classic_protocol"]).lower())
            rows.append(row)
        out[gid] = (state, rows)
    return out


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """The Rich tables of a wide console: (header, rows), cells stripped."""
    tables, head, rows = [], None, []
    for line in text.splitlines():
        if line.startswith("┃"):
            head = [c.strip() for c in line.strip("┃").split("┃")]
        elif line.startswith("│") and head is not None:
            rows.append([c.strip() for c in line.strip("│").split("│")])
        elif line.startswith("└") and head is not None:
            tables.append((head, rows))
            head, rows = None, []
    return tables


def _audit(tmp_path, scenario_prefix, *args):
    scenario = next(s for s in SCENARIOS if s.name.startswith(scenario_prefix))
    log = tmp_path / "log" / f"__consumer_offsets-{LOG_PARTITION}"
    log.mkdir(parents=True, exist_ok=True)
    shutil.copy(segment(scenario), log)
    common = ["spark-audit", str(tmp_path / "log"), "--master", "local[2]", "--group", "^g-", *args]
    console = runner.invoke(app, common, env={"COLUMNS": "300"})
    assert console.exit_code in (0, 1), console.output  # 1: n01 is a rebalance storm
    doc = runner.invoke(app, [*common, "--format", "json"])
    assert doc.exit_code in (0, 1), doc.output
    return scenario, console.stdout, json.loads(doc.stdout)


def _check(scenario, until, stdout, doc):
    want = expected(scenario, until)
    assert want, "the instant must hold a group"
    view = stdout[stdout.index("groups at "):]
    tables = _tables(view)
    state_head, state_rows = tables[0]
    assert state_head == list(describe.STATE_COLUMNS)
    assert state_rows == [s for s, _ in want.values()]
    member_tables = iter(tables[1:])
    for gid, (_state, rows) in want.items():
        if rows:
            head, got = next(member_tables)
            assert got == rows, gid
            assert head[:2] == ["GROUP", "CONSUMER-ID"] and head[-1] in ("TARGET-ASSIGNMENT", "UPGRADED")
        else:
            assert f"Consumer group '{gid}' has no active members." in view
    assert next(member_tables, None) is None
    # --format json: the groups and group_members rows themselves, raw
    assert sorted(doc["describe"]) == sorted(want)
    for gid, (state, rows) in want.items():
        d = doc["describe"][gid]
        assert describe.state_row(d["group"]) == state
        cols = describe.member_columns(d["members"])
        assert [describe.member_row(m, cols) for m in d["members"]] == rows
    assert doc["options"]["until"] == until
    return view


@pytest.mark.spark
def test_n01_at_the_end_and_mid_reconciliation(spark, tmp_path):  # noqa: F811
    scenario, stdout, doc = _audit(tmp_path, "n01")
    view = _check(scenario, None, stdout, doc)
    assert "groups at the end of the log" in view
    # Empty: group epoch 6 while the target assignment stayed at epoch 4; no member, no assignor asked
    assert doc["describe"]["g-uniform"]["group"]["state"] == "Empty"

    until = 1730000010500  # three members: one revoking (UNREVOKED_PARTITIONS), one waiting (UNRELEASED_PARTITIONS)
    _, stdout, doc = _audit(tmp_path, "n01", "--until", str(until))
    view = _check(scenario, until, stdout, doc)
    assert "groups at 2024-10-27T03:33:30.500Z" in view
    assert "Warning: Consumer group 'g-uniform' is rebalancing." in view
    states = {m["member_id"][:4]: (m["member_state"], m["member_epoch"]) for m in doc["describe"]["g-uniform"]["members"]}
    assert states == {"Av2K": ("UNREVOKED_PARTITIONS", 2), "cZpz": ("STABLE", 3), "dLi1": ("UNRELEASED_PARTITIONS", 3)}


@pytest.mark.spark
def test_n11_migration_shows_upgraded(spark, tmp_path):  # noqa: F811
    until = 1730000016300  # a consumer group with one consumer-protocol member and one classic-protocol member
    scenario, stdout, doc = _audit(tmp_path, "n11", "--until", str(until))
    view = _check(scenario, until, stdout, doc)
    head, rows = _tables(view)[1]
    assert head[-1] == "UPGRADED" and sorted(r[-1] for r in rows) == ["false", "true"]


@pytest.mark.spark
def test_n10_classic_group_with_a_static_member(spark, tmp_path):  # noqa: F811
    until = 1730000010000  # generation 1: three members, one with a group.instance.id
    scenario, stdout, doc = _audit(tmp_path, "n10", "--until", str(until))
    view = _check(scenario, until, stdout, doc)
    head, rows = _tables(view)[1]
    assert "GROUP-INSTANCE-ID" in head and all(r[head.index("CURRENT-EPOCH")] == "-" for r in rows)
    assert _tables(view)[0][1][0][4:6] == ["-", "-"]  # a classic group: no group nor target assignment epoch


def _described(**group):
    g = {"group": "g-[x]", "log_partition": 3, "type": "consumer", "state": "Reconciling", "group_epoch": 5,
         "assignment_epoch": 5, "assignor": "range", "member_count": 1, "incomplete": None, **group}
    m = _member(group=g["group"], member_id="Av2KIYg2QVGIE4ffcdthBQ", client_id="consumer-g-uniform-a",
                client_host="/10.0.0.11", assigned=["orders-0", "orders-1", "payments-2"],
                target=["orders-0", "payments-2", "payments-3"])
    return {g["group"]: {"group": g, "members": [m]}}


def _console(monkeypatch, width):
    import sys

    from rich.console import Console

    from kgtool.cli import render

    monkeypatch.setattr(render, "out", lambda: Console(file=sys.stdout, width=width, highlight=False, soft_wrap=False))


def test_incomplete_group_is_said(monkeypatch, capsys):
    _console(monkeypatch, 300)
    describe.print_views(_described(incomplete="member m1's tombstone before its assignment's"), 1730000010500)
    out = capsys.readouterr().out
    assert "COORDINATOR (ID): the log partition; 1 incomplete: see below" in out
    assert "incomplete: g-[x]: member m1's tombstone before its assignment's" in out  # markup in ids escaped
    assert "Warning: Consumer group 'g-[x]' is rebalancing." in out
    (state, members) = _tables(out)
    assert state[1] == [["g-[x]", "__consumer_offsets-3", "range", "Reconciling", "5", "5", "1"]]
    assert members[1] == [["g-[x]", "Av2KIYg2QVGIE4ffcdthBQ", "/10.0.0.11", "consumer-g-uniform-a", "3", "3",
                           "orders:0,1;payments:2", "4", "orders:0;payments:2,3"]]


def test_a_group_inside_a_cleaned_range_is_said_not_exact(monkeypatch, capsys):
    _console(monkeypatch, 300)
    describe.print_views(_described(exact=False), 1730000010500)
    out = " ".join(capsys.readouterr().out.split())
    assert "1 not exact: the instant is inside a compacted log's cleaned range" in out
    describe.print_views(_described(exact=True), 1730000010500)
    assert "not exact" not in capsys.readouterr().out


def test_at_80_columns_the_members_table_splits_in_two(monkeypatch, capsys):
    _console(monkeypatch, 80)
    describe.print_views(_described(), None)
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 80
    (_state, first, second) = _tables(out)
    # --describe --members' columns, then what --verbose adds, keyed by the member id (whole)
    assert first == (["CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
                     [["Av2KIYg2QVGIE4ffcdthBQ", "/10.0.0.11", "consumer-g-uniform-a", "3"]])
    assert second[0] == ["ID", "EPOCH", "ASSIGNMENT", "EPOCH", "ASSIGNMENT"]  # headers break at hyphens: last lines
    assert "┃ CONSUMER-              ┃ CURRENT- ┃ CURRENT-" in out
    assert second[1][:2] == [["Av2KIYg2QVGIE4ffcdthBQ", "3", "orders:0,1;", "4", "orders:0;"],
                             ["", "", "payments:2", "", "payments:2,3"]]  # assignments break after a topic


def test_the_summary_carries_the_matched_groups_and_says_how_many(tmp_path, monkeypatch, capsys):
    """The task's summary (as a Spark task makes it, here in one process) keeps --group's rows of
    the two tables; past DESCRIBE_GROUPS groups a partition says how many it left out."""
    import os

    from kgtool.offsets.options import AuditOptions
    from kgtool.spark import job, task

    scenario = next(s for s in SCENARIOS if s.name.startswith("n13"))
    files = task.PartitionFiles(LOG_PARTITION, [str(segment(scenario))], [os.path.getsize(segment(scenario))])
    options = AuditOptions(group_pattern="^g-")
    summary = job.combine([task.audit_partition(files, options)], [files], None, options)
    want = expected(scenario, None)
    assert len(want) == 2 and sorted(summary.describe) == sorted(want) and summary.describe_total == 2
    for gid, (state, rows) in want.items():
        d = summary.describe[gid]
        assert describe.state_row(d["group"]) == state
        assert [describe.member_row(m, describe.member_columns(d["members"])) for m in d["members"]] == rows
    assert job.summary_json(summary)["describe"] == summary.describe

    monkeypatch.setattr(task, "DESCRIBE_GROUPS", 1)
    summary = job.combine([task.audit_partition(files, options)], [files], None, options)
    assert list(summary.describe) == [min(want)] and summary.describe_total == 2
    _console(monkeypatch, 300)
    describe.print_views(summary.describe, None, total=summary.describe_total)
    assert "(kafka-consumer-groups.sh --describe --state --verbose): 1 of the 2 matching" in capsys.readouterr().out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_kafka_made_log_at_the_end_and_at_instants(scenario):
    """The two views of every group of the 18 logs, at the end and at four instants inside, equal
    Kafka's loaded state printed as ConsumerGroupCommand prints it (the task's summary made in one
    process, as a Spark task makes it)."""
    import os

    from kgtool.offsets.options import AuditOptions
    from kgtool.spark import job, task
    from tests.kip848.test_state_tables import instants

    files = task.PartitionFiles(LOG_PARTITION, [str(segment(scenario))], [os.path.getsize(segment(scenario))])
    for until in instants(scenario):
        options = AuditOptions(group_pattern=".", until=until)
        summary = job.combine([task.audit_partition(files, options)], [files], None, options)
        want = expected(scenario, until)
        assert sorted(summary.describe) == sorted(want), until
        for gid, (state, rows) in want.items():
            d = summary.describe[gid]
            assert describe.state_row(d["group"]) == state, (gid, until)
            cols = describe.member_columns(d["members"])
            assert [describe.member_row(m, cols) for m in d["members"]] == rows, (gid, until)
