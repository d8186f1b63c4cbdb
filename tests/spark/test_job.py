"""The Spark job against the pure-Python audit on the same segments (they must agree), with
real local Spark. Few builds, many assertions per build: the module runs in well under a minute."""

from __future__ import annotations

import re

import pytest

from kgtool.offsets.audit import AuditOptions, audit_entries
from kgtool.offsets.coverage import SegmentFile
from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.tables import TABLE_NAMES, TABLES
from kgtool.spark import job
from kgtool.spark.files import resolve_inputs
from kgtool.data import sample_path
from tests.offsets.golden import FIXTURES

pytestmark = pytest.mark.spark


def _inputs() -> list[SegmentFile]:
    golden = [
        SegmentFile(str(FIXTURES / "scenario1_generations" / "00000000000000000000.log"), 6531, 12),
        SegmentFile(str(FIXTURES / "scenario3_transactions_tombstones" / "00000000000000000000.log"), 1596, 5),
    ]
    return golden + resolve_inputs([str(sample_path("sample_offsets"))])


def _pure(files, options):
    entries = [e for f in files for e in entries_from_file(f.path, log_partition=f.log_partition)]
    return audit_entries(entries, files=files, options=options)


def _key(name):
    keys = job.SORT_KEYS[name]
    cols = [c for c, _ in TABLES[name]]
    return lambda r: tuple((r[k] is None, r[k]) for k in keys) + tuple(str(r[c]) for c in cols)


def _assert_same(spark, frames, pure):
    for name in TABLE_NAMES:
        got = sorted((r.asDict(recursive=True) for r in frames.table(spark, name).collect()), key=_key(name))
        want = sorted(pure.tables[name], key=_key(name))
        assert [list(r) for r in got[:1]] == [[c for c, _ in TABLES[name]]] * len(got[:1])
        assert got == want, name


def _truncated(tmp_path) -> SegmentFile:
    """scenario3 cut in the middle of its last batch, as partition 40: a decode problem."""
    data = (FIXTURES / "scenario3_transactions_tombstones" / "00000000000000000000.log").read_bytes()
    d = tmp_path / "__consumer_offsets-40"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(data[:-40])
    return SegmentFile(str(d / "00000000000000000000.log"), len(data) - 40, 40)


def test_spark_equals_pure_with_small_splits(spark, tmp_path):
    files = _inputs() + [_truncated(tmp_path)]
    options = AuditOptions()
    # 700-byte splits: every segment is cut into several ranges at batch boundaries.
    frames = job.build(spark, files, options, split_bytes=700)
    try:
        assert len(frames.splits) > len(files) * 2
        for f in files:
            ranges = [(s["start"], s["end"]) for s in frames.splits if s["path"] == f.path]
            assert ranges[0][0] == 0 and ranges[-1][1] == f.size
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        pure = _pure(files, options)
        _assert_same(spark, frames, pure)
        cov40 = [c for c in pure.tables["coverage"] if c["log_partition"] == 40]
        assert [(c["problems"], c["records"], c["group_tombstones"]) for c in cov40] == [(1, 13, 0)]
        assert [p.position for p in pure.problems] == [1453]
        assert sorted((f["rule"], f["group"]) for f in pure.tables["findings"]) == [
            ("aborted-txn", "payments-eos"), ("epoch-regression", "metrics-agg"), ("expiring", "legacy-batch"),
            ("orphan", "inventory-sync"), ("pending-txn", "ledger-eos"), ("rewind", "billing-rewind"),
            ("zombie", "orders-app"),
        ]
    finally:
        frames.unpersist()


def test_spark_equals_pure_with_filters(spark):
    files = _inputs()
    start = 1_717_171_200_000
    options = AuditOptions(group_pattern="^(orders|payments|txn)", since=start + 10_000, until=start + 9 * 86_400_000,
                           retention_ms=3_600_000)
    frames = job.build(spark, files, options)
    try:
        pure = _pure(files, options)
        _assert_same(spark, frames, pure)
        groups = {r["group"] for r in pure.tables["commits"]}
        assert {"orders-service", "txn-group", "orders-app"} <= groups
        assert all(re.search("^(orders|payments|txn)", g) for g in groups)
        assert all(r["timestamp"] >= start + 10_000 for r in pure.tables["commits"])
    finally:
        frames.unpersist()
