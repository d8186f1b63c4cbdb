"""The ``groups`` and ``group_members`` tables, as the audit makes them (the columnar replay with
its shard), equal Kafka's loaded state at the end of each Kafka-made log and at ``--until``
instants inside it; one run through Spark writes the same tables."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.options import AuditOptions
from tests.kip848.golden import IDS, SCENARIOS, got_rows, jsonl, loaded_states, segment, want_rows
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture


def loaded_until(scenario, until: int | None) -> tuple[dict, dict]:
    """Kafka's groups and offsets after the last batch stamped before ``until`` (all: None)."""
    groups: dict[str, dict] = {}
    offsets: dict[str, dict] = {}
    for line, loaded, held in loaded_states(scenario):
        if until is not None and line["timestamp"] >= until:
            break
        groups = dict(loaded)
        offsets = {gid: dict(by_tp) for gid, by_tp in held.items()}
    return groups, offsets


def instants(scenario) -> list[int | None]:
    """The end, and the timestamps of a few batches inside the log."""
    stamps = sorted({line["timestamp"] for line in jsonl(scenario / "loaded.jsonl")})
    return [None] + [stamps[i * len(stamps) // 5] for i in range(1, 5)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_groups_and_members_at_the_end_and_at_instants(scenario):
    entries = list(entries_from_file(segment(scenario), log_partition=0))
    for until in instants(scenario):
        result = audit_entries(entries, options=AuditOptions(until=until))
        groups, offsets = loaded_until(scenario, until)
        assert got_rows(result.tables) == tuple(sorted(x) for x in want_rows(groups)), until
        got_offsets: dict[str, dict] = {}
        for r in result.tables["offsets"]:
            got_offsets.setdefault(r["group"], {})[(r["topic"], r["partition"])] = (
                r["offset"], r["leader_epoch"], r["metadata"], r["commit_timestamp"])
        assert got_offsets == {g: o for g, o in offsets.items() if o}, until


def test_a_simple_group_is_a_classic_group_without_protocol():
    scenario = next(s for s in SCENARIOS if s.name.startswith("n07"))
    result = audit_entries(entries_from_file(segment(scenario), log_partition=0))
    simple = [r for r in result.tables["groups"] if r["protocol_type"] is None and r["type"] == "classic"]
    assert simple and all(r["state"] == "Empty" and r["member_count"] == 0 for r in simple)


@pytest.mark.spark
def test_spark_audit_writes_the_state_tables(spark, tmp_path):  # noqa: F811
    import pyarrow.parquet as pq

    scenario = next(s for s in SCENARIOS if s.name.startswith("n11"))
    log = tmp_path / "log" / "__consumer_offsets-0"
    log.mkdir(parents=True)
    shutil.copy(segment(scenario), log)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["spark-audit", str(tmp_path / "log"), "--master", "local[2]", "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    tables = {name: pq.read_table(out / name).to_pylist() for name in ("groups", "group_members")}
    want = audit_entries(entries_from_file(segment(scenario), log_partition=0)).tables
    assert got_rows(tables) == got_rows(want)
    groups, _ = loaded_until(scenario, None)
    assert got_rows(tables) == tuple(sorted(x) for x in want_rows(groups))
