"""``kgtool spark-audit`` on logs Kafka 4.4 wrote: the ``groups`` and ``group_members`` tables (as a
user reads them from ``--out``) equal Kafka 4.4's loaded state at the end and at ``--until``
instants between batches, streams tasks and share members included; ``__share_group_state``
partitions given beside them are replayed to each share partition's state."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.offsets.share_state import replay_files
from tests.kafka44.golden import SCENARIOS, jsonl, segment
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

KAFKA44 = SCENARIOS[0].parent.parent  # fixtures/kafka44


def _instants(scenario) -> list[int]:
    """The times of a few batches inside the log (a batch at T is not yet loaded at --until T)."""
    stamps = sorted({line["time_ms"] for line in jsonl(scenario / "loaded.jsonl")})
    return [stamps[i * len(stamps) // 3] for i in (1, 2)]


def _loaded_at(scenario, until: int | None) -> dict:
    groups: dict = {}
    for line in jsonl(scenario / "loaded.jsonl"):
        if until is not None and line["time_ms"] >= until:
            break
        groups = {g["group_id"]: g for g in line["groups"]}
    return groups


def _tasks(t: dict) -> list[str]:
    return [f"{sub}:{','.join(str(p) for p in sorted(int(x) for x in parts))}"
            for sub, parts in sorted(t.items()) if parts]


@pytest.mark.spark
def test_streams_and_share_groups_in_the_tables_equal_kafkas_loaded_state(spark, tmp_path):  # noqa: F811
    names = {"s07_share_group": 21, "s08_streams_group": 30, "s01_consumer_join_leave_fence": 3}
    chosen = [s for s in SCENARIOS if s.name in names]
    logs = tmp_path / "logs"
    for s in chosen:
        d = logs / f"__consumer_offsets-{names[s.name]}"
        d.mkdir(parents=True)
        shutil.copy(segment(s), d)
    shutil.copytree(KAFKA44 / "share_state" / "__share_group_state-7", logs / "__share_group_state-7",
                    ignore=shutil.ignore_patterns("*.jsonl"))
    for until in [None, *_instants(chosen[1])]:
        out = tmp_path / f"out-{until}"
        args = ["spark-audit", str(logs), "--master", "local[2]", "--out", str(out), "--format", "json"]
        if until is not None:
            args += ["--until", str(until)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code in (0, 1), result.output
        groups = {r["group"]: r for r in pq.read_table(out / "groups").to_pylist()}
        members = pq.read_table(out / "group_members").to_pylist()
        for s in chosen:
            want = _loaded_at(s, until)
            for gid, g in want.items():
                row = groups[gid]
                assert (row["type"], row["state"], row["group_epoch"], row["assignment_epoch"],
                        row["member_count"]) == (g["type"], g["state"], g["group_epoch"], g["assignment_epoch"],
                                                 len(g["members"])), (s.name, until, gid)
                assert row["assignment_timestamp"] == g["assignment_timestamp"]
                got_members = {m["member_id"]: m for m in members if m["group"] == gid}
                assert sorted(got_members) == sorted(m["member_id"] for m in g["members"])
                for m in g["members"]:
                    got = got_members[m["member_id"]]
                    assert (got["member_epoch"], got["previous_member_epoch"], got["member_state"], got["client_id"]) \
                        == (m["member_epoch"], m["previous_member_epoch"], m["state"], m["client_id"])
                    if g["type"] == "streams":
                        assert got["process_id"] == m["process_id"] and got["user_endpoint"] == m["user_endpoint"]
                        assert got["topology_epoch"] == m["topology_epoch"]
                        for kind in ("active", "standby", "warmup"):
                            assert got[f"{kind}_tasks"] == _tasks(m["assigned_tasks"][kind]), (gid, m["member_id"])
                            target = g["target_assignment"].get(m["member_id"])
                            assert got[f"target_{kind}_tasks"] == (None if target is None else _tasks(target[kind]))
                if g["type"] == "streams":
                    assert row["validated_topology_epoch"] == g["validated_topology_epoch"]
            assert not [gid for gid, r in groups.items() if r["log_partition"] == names[s.name] and gid not in want]
        # the share coordinator's partition, replayed to the same instant
        share = json.loads(result.stdout)["share_partitions"]
        direct = replay_files(sorted(str(p) for p in (logs / "__share_group_state-7").glob("*.log")), until)
        assert [(r["group_id"], r["topic_id"], r["partition"], r["start_offset"], r["state_epoch"]) for r in share] \
            == [(p.group_id, p.topic_id, p.partition, p.start_offset, p.state_epoch) for p in direct.partitions()]
        assert all(r["log_partition"] == 7 for r in share)
        if share:  # the same rows as a table beside the audit's
            table = pq.read_table(out / "share_partitions").to_pylist()
            assert [(r["group_id"], r["topic_id"], r["partition"], r["start_offset"]) for r in table] == \
                [(r["group_id"], r["topic_id"], r["partition"], r["start_offset"]) for r in share]
        # its records were written a month after the groups': none yet at the instants inside them
        assert len(share) == (476 if until is None else 0)
