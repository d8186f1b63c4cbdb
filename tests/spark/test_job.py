"""The Spark job (one task per log partition, tables written by the tasks) against the oracle
audit on the same segments, with real local Spark: every table, row for row."""

from __future__ import annotations

import os
import re

import pyarrow.parquet as pq
import pytest

from kgtool.data import sample_path
from kgtool.offsets.audit import AuditOptions
from kgtool.offsets.coverage import SegmentFile
from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.tables import LOG_RULES, TABLE_NAMES
from kgtool.spark import job
from kgtool.spark.files import resolve_inputs
from tests.offsets.golden import FIXTURES
from tests.offsets.oracle_audit import ORACLE_TABLES, canonical, oracle_audit

pytestmark = pytest.mark.spark


def _inputs() -> list[SegmentFile]:
    golden = [
        SegmentFile(str(FIXTURES / "scenario1_generations" / "00000000000000000000.log"), 6531, 12),
        SegmentFile(str(FIXTURES / "scenario3_transactions_tombstones" / "00000000000000000000.log"), 1596, 5),
    ]
    return golden + resolve_inputs([str(sample_path("sample_offsets"))])


def _oracle(files, options):
    entries = [e for f in files for e in entries_from_file(f.path, log_partition=f.log_partition)]
    want = oracle_audit(entries, files=files, options=options)
    # the oracle knows classic groups only: consumer-protocol groups (the sample's search-*) are
    # held against Kafka-made logs (tests/kip848), and left out of the comparison
    want["_consumer_groups"] = {e.group for e in entries if e.kind is not None and e.kind.startswith("consumer_group_")}
    return want


def read_tables(out: str) -> dict[str, list[dict]]:
    tables = {}
    for name in TABLE_NAMES:
        assert os.path.exists(os.path.join(out, name, "_SUCCESS")), name
        tables[name] = pq.read_table(os.path.join(out, name)).to_pylist()
    return tables


def _assert_same(got: dict, want: dict) -> None:
    modern = want["_consumer_groups"]
    for name in ORACLE_TABLES:
        if name == "coverage":
            assert canonical(name, got[name]) == canonical(name, want[name]), name
            continue
        assert canonical(name, [r for r in got[name] if r["group"] not in modern]) == \
            canonical(name, [r for r in want[name] if r["group"] not in modern]), name


def _truncated(tmp_path) -> SegmentFile:
    """scenario3 cut in the middle of its last batch, as partition 40: a decode problem."""
    data = (FIXTURES / "scenario3_transactions_tombstones" / "00000000000000000000.log").read_bytes()
    d = tmp_path / "__consumer_offsets-40"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(data[:-40])
    return SegmentFile(str(d / "00000000000000000000.log"), len(data) - 40, 40)


def test_spark_equals_oracle(spark, tmp_path):
    files = _inputs() + [_truncated(tmp_path)]
    options = AuditOptions()
    out = str(tmp_path / "out")
    summary = job.run_audit(spark, files, options, out=out)
    got = read_tables(out)
    want = _oracle(files, options)
    _assert_same(got, want)
    # commits are in log order within each partition, partitions in order
    keys = [(c["log_partition"], c["record_offset"]) for c in got["commits"]]
    assert keys == sorted(keys)
    cov40 = [c for c in got["coverage"] if c["log_partition"] == 40]
    assert [(c["problems"], c["records"], c["group_tombstones"]) for c in cov40] == [(1, 13, 0)]
    assert [p["position"] for p in summary.problems] == [1453] and summary.problem_count == 1
    assert sorted((f["rule"], f["group"]) for f in got["findings"]) == [
        ("aborted-txn", "payments-eos"), ("epoch-regression", "metrics-agg"), ("expiring", "legacy-batch"),
        ("orphan", "inventory-sync"), ("pending-txn", "ledger-eos"), ("rebalance-storm", "clicks-app"),
        ("rewind", "billing-rewind"), ("slow-revocation", "search-indexer"), ("zombie", "orders-app"),
    ]
    assert summary.counts == {t: len(got[t]) for t in ("generations", "members", "commits", "findings", "offsets")}
    assert summary.findings_by_rule == {f["rule"]: 1 for f in got["findings"]}
    # A re-run replaces the output with the same rows.
    job.run_audit(spark, files, options, out=out)
    again = read_tables(out)
    _assert_same(again, want)
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".out.")]


def test_spark_equals_oracle_with_filters(spark, tmp_path):
    files = _inputs()
    start = 1_717_171_200_000
    options = AuditOptions(group_pattern="^(orders|payments|txn)", since=start + 10_000, until=start + 9 * 86_400_000,
                           retention_ms=3_600_000)
    out = str(tmp_path / "out")
    sink: list = []
    summary = job.run_audit(spark, files, options, out=out, fmt="jsonl", findings_sink=lambda it: sink.extend(it))
    import json

    got = {name: [json.loads(line) for f in sorted(os.listdir(os.path.join(out, name))) if f.endswith(".json")
                  for line in open(os.path.join(out, name, f))] for name in TABLE_NAMES}
    want = _oracle(files, options)
    _assert_same(got, want)
    groups = {r["group"] for r in got["commits"]}
    assert {"orders-service", "txn-group", "orders-app"} <= groups
    assert all(re.search("^(orders|payments|txn)", g) for g in groups)
    assert all(r["timestamp"] >= start + 10_000 for r in got["commits"])
    assert canonical("findings", sink) == canonical("findings", want["findings"])
    assert summary.finding_count == len(sink)


def test_empty_partition_and_no_out(spark, tmp_path):
    files = resolve_inputs([str(sample_path("sample_offsets"))])
    summary = job.run_audit(spark, files, AuditOptions(), empty_partitions=(3,))
    cov = {c["log_partition"]: c for c in summary.coverage}
    assert cov[3]["records"] == 0 and cov[3]["segments"] == 0 and cov[3]["first_offset"] is None
    assert summary.finding_count == len(LOG_RULES)  # the sample: every rule of the log alone once


def test_whole_audit_is_one_spark_job(spark, tmp_path):
    # Coverage, replay and tables come from one pass; the summary from the tasks' small rows.
    sc = spark.sparkContext
    sc.setJobGroup("kgtool-job-count", "spark-audit job count")
    try:
        job.run_audit(spark, _inputs(), AuditOptions(), out=str(tmp_path / "out"))
    finally:
        sc.setJobGroup("", "")
    jobs = sc.statusTracker().getJobIdsForGroup("kgtool-job-count")
    assert len(jobs) == 1, jobs
