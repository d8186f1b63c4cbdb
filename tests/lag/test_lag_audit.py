"""Lag in spark-audit, end to end: the offsets log's replay hands each data partition its
commits and owners (kgtool.lag.collector), the lag phase answers ListOffsets at every
instant (kgtool.lag.phase); every row of the lag table is held against the scenario's own
arithmetic (a record a second), and the rules against the groups' known behaviour."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.offsets.options import AuditOptions
from kgtool.lag import phase as lag_task
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.lag import scenario as S

runner = CliRunner()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    return S.write(str(tmp_path_factory.mktemp("lag")), copies=2)


def _options(broker, **kw) -> AuditOptions:
    parts = tuple(((("orders", p), tuple(os.path.join(b, f"orders-{p}") for b in broker["brokers"]))) for p in (0, 1))
    return AuditOptions(lag_partitions=parts, **kw)


def _in_process(broker, **kw):
    options = _options(broker, **kw)
    d = os.path.join(broker["root"], "__consumer_offsets-0")
    segs = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".log"))
    s = audit_partition(PartitionFiles(0, segs, [os.path.getsize(p) for p in segs]), options)
    end = options.until if options.until is not None else s.last_timestamp
    tables: dict[str, list] = {}

    def write(name, _part, rows):  # the lag table comes as an Arrow table, the others as dicts
        tables.setdefault(name, []).extend(rows.to_pylist() if hasattr(rows, "to_pylist") else rows)

    results = [lag_task.lag_partition(i, [p for k, p in s.lag if k == i], options, end, write) for i in (0, 1)]
    return s, results, tables, end


def _committed(group: str, p: int, t: int) -> int | None:
    """The scenario's committed offset at t (commits every 10 s, see lag_scenario)."""
    k = (t - S.T0) // 10_000
    if k < 1:
        return None
    if group == "stopper":
        k = min(k, 40)
    now = S.end_at(S.T0 + 10_000 * k)
    if group == "stalled" and p == 0:
        return min(now, 300)
    if group == "slow" and p == 1:
        return max(now - 30, 0)
    return now


def test_every_lag_row_is_the_state_of_its_instant(broker):
    s, results, tables, end = _in_process(broker)
    rows = tables["lag"]
    assert len(rows) == sum(r["rows"] for r in results) > 0
    for r in rows:
        t = r["timestamp"]
        want = _committed(r["group"], r["partition"], t)
        assert r["committed_offset"] == want, r
        assert r["log_end_offset"] == S.end_at(t)
        assert r["lag"] == S.end_at(t) - want
        assert r["lag_ms"] == (t - (S.T0 + 1000 * want) if r["lag"] > 0 else 0)
        assert r["consumer_id"] == {"healthy": "h-1", "stalled": "s-1", "stopper": "x-1", "slow": "w-1"}[r["group"]]
    # a row at every commit and every minute from the first commit to the end of the span (the
    # minutes fall on commits: 10 s + 60 s k), after a stopped consumer's last commit too (400 s)
    healthy0 = sorted(r["timestamp"] for r in rows if r["group"] == "healthy" and r["partition"] == 0)
    assert healthy0 == [S.T0 + 10_000 * k for k in range(1, S.SECONDS // 10 + 1)]
    stopper = sorted(r["timestamp"] - S.T0 for r in rows if r["group"] == "stopper" and r["partition"] == 0)
    assert [t for t in stopper if t > 400_000] == list(range(430_000, end - S.T0, 60_000))


def test_the_rules_fire_for_the_groups_that_misbehave(broker):
    s, results, tables, end = _in_process(broker)
    findings, section = lag_task.combine(results, _options(broker), end, 0, {s.log_partition: s.lag_owners})
    got = sorted((f["rule"], f["group"], f["topic"], f["partition"]) for f in findings)
    # the episodes name their owners by id in the offsets partition's table; the messages by name
    assert all(len(o) == 2 for r in results for o in r["episodes"]["owners"])
    members = {"stalled": "s-1", "stopper": "x-1", "slow": "w-1"}
    for f in findings:
        m = members[f["group"]]
        assert f"owned by {m} (client client-{f['group']}, host /10.1.0.1)" in f["message"], f["message"]
    assert ("lag-stall", "stalled", "orders", 0) in got
    assert ("consumer-stopped", "stopper", None, None) in got  # both partitions, one finding
    assert ("lag-growing", "slow", "orders", 1) in got
    assert not [f for f in findings if f["group"] == "healthy"]
    stop = next(f for f in findings if f["rule"] == "consumer-stopped")
    assert "orders-0, orders-1" in stop["message"] and "x-1 (client client-stopper, host /10.1.0.1)" in stop["message"]
    assert [g["group"] for g in section["groups"]] == ["stalled", "slow", "stopper", "healthy"]
    assert section["groups"][0] == {"group": "stalled", "worst": "STALL", "peak_lag": 900, "peak_lag_ms": 900_000,
                                    "status": "ERR"}
    assert section["groups"][-1] == {"group": "healthy", "worst": "OK", "peak_lag": 0, "peak_lag_ms": 0, "status": "OK"}


def test_the_offsets_table_gets_the_lag_at_the_end_and_at_until(broker):
    _s, _r, tables, end = _in_process(broker)
    by = {(o["group"], o["partition"]): o for o in tables["offsets"]}
    assert len(by) == 8 and end == S.T0 + 1_200_000
    o = by[("stalled", 0)]
    assert (o["offset"], o["log_end_offset"], o["lag"], o["lag_status"], o["consumer_id"]) == (300, 1200, 900, "STALL", "s-1")
    assert by[("stopper", 1)]["lag_status"] == "STOP" and by[("healthy", 0)]["lag"] == 0
    for until in (S.T0 + 250_000, S.T0 + 455_000, S.T0 + 905_000):
        _s, _r, tables, _e = _in_process(broker, until=until)
        for o in tables["offsets"]:
            want = _committed(o["group"], o["partition"], until - 1)  # --until: records stamped before it
            assert (o["offset"], o["log_end_offset"], o["lag"]) == (want, S.end_at(until), S.end_at(until) - want)


def test_the_longest_copy_is_read_and_the_follower_is_behind(broker):
    _s, results, _t, _e = _in_process(broker)
    for r in results:
        assert r["copy"] == os.path.join(broker["brokers"][0], f"orders-{r['partition']}")
        assert r["behind"] == [[os.path.join(broker["brokers"][1], f"orders-{r['partition']}"), 20]]
        assert r["problems"] == []


@pytest.mark.spark
def test_spark_audit_with_data_partitions(broker, tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(app, ["spark-audit", *broker["brokers"], "--format", "json", "--out", str(out),
                            "--group", "stall|stop"])
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert d["findings_by_rule"] == {"lag-stall": 1, "consumer-stopped": 1}  # --group keeps two groups
    assert [p["copy"] for p in d["lag"]["partitions"]] == [os.path.join(broker["brokers"][0], f"orders-{p}")
                                                            for p in (0, 1)]
    assert {(o["group"], o["partition"], o["lag_status"]) for o in d["lag"]["describe"]} == {
        ("stalled", 0, "STALL"), ("stalled", 1, "OK"), ("stopper", 0, "STOP"), ("stopper", 1, "STOP")}
    import pyarrow.parquet as pq

    lag = pq.read_table(out / "lag")
    # every commit of the two groups (stopper: 40 a partition), and the stopper's minutes after
    # its last commit (400 s) to the end of the span (1200 s): 430 s, 490 s .. 1150 s, 13 a partition
    assert lag.num_rows == 2 * 120 + 2 * 40 + 2 * 13
    files = sorted((out / "lag").glob("part-*.parquet"))
    assert files and all(pq.ParquetFile(f).metadata.created_by.startswith("parquet-cpp-arrow") for f in files)
    assert str(lag.schema.field("group").type) == "string"  # plain strings in the file, not a dictionary type
    assert pq.read_table(out / "offsets").num_rows == 4
    assert set(pq.read_table(out / "findings").column("rule").to_pylist()) >= {"lag-stall", "consumer-stopped"}
    table = runner.invoke(app, ["spark-audit", broker["root"], "--group", "stopper"], env={"COLUMNS": "200"})
    assert "LAG-MS" in table.stdout and "client-stopper" in table.stdout and "STOP" in table.stdout


def test_copies_of_an_offsets_partition_are_read_once(broker, tmp_path):
    """Two brokers' log dirs both hold __consumer_offsets-0: the longer copy is read, once."""
    import shutil

    from kgtool.spark.files import TopicIds, resolve_inputs

    follower = os.path.join(broker["brokers"][1], "__consumer_offsets-0")
    if not os.path.exists(follower):
        shutil.copytree(os.path.join(broker["root"], "__consumer_offsets-0"), follower)
        seg = os.path.join(follower, "00000000000000000000.log")
        with open(seg, "r+b") as fh:
            fh.truncate(os.path.getsize(seg) // 2)
    topics = TopicIds()
    files = resolve_inputs(broker["brokers"], topics=topics)
    assert [f.path for f in files] == [os.path.join(broker["root"], "__consumer_offsets-0", "00000000000000000000.log")]
    (note,) = topics.copies
    assert "__consumer_offsets-0: 2 copies, read from" in note and follower in note
    assert sorted(topics.partitions) == [("orders", 0), ("orders", 1)]
    assert all(len(d) == 2 for d in topics.partitions.values())


def test_since_hides_rows_but_the_verdicts_use_the_whole_history(broker):
    """--since hides the lag rows before it; Burrow's window still holds the commits before it."""
    since = S.T0 + 600_000
    _s, _r, tables, _e = _in_process(broker, since=since)
    _s, _r, full, _e = _in_process(broker)
    want = [r for r in full["lag"] if r["timestamp"] >= since]
    assert tables["lag"] == want and len(want) < len(full["lag"])
