"""``kgtool spark-audit`` end to end, with real local Spark (one JVM shared with tests/spark)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.cli.spark_audit import parse_duration_ms, parse_size, parse_storm, parse_time_ms
from kgtool.errors import UsageError
from kgtool.spark.session import parse_java_version
from tests.offsets.golden import FIXTURES
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

runner = CliRunner()

# The shipped sample: every rule once (kgtool/offsets/samples.py says why each fires).
SAMPLE_FINDINGS = [
    # rule, group, topic, partition, offset, previous_offset, log_partition, record_offset
    ("aborted-txn", "payments-eos", "payments", 0, 900, 800, 23, 6),
    ("epoch-regression", "metrics-agg", "metrics", 0, 90, 70, 7, 26),
    ("expiring", "legacy-batch", "events", 0, 12, None, 23, 2),
    ("orphan", "inventory-sync", "inventory", 9, 4, None, 7, 16),
    ("pending-txn", "ledger-eos", "ledger", 0, 77, None, 23, 20),
    ("rebalance-storm", "clicks-app", None, None, None, None, 7, 28),
    ("rewind", "billing-rewind", "billing", 0, 420, 500, 7, 2),
    ("slow-revocation", "search-indexer", None, None, None, None, 7, 56),
    ("zombie", "orders-app", "orders", 0, 1200, 1500, 7, 13),
]


def _tuples(rows):
    return sorted(
        (r["rule"], r["group"], r["topic"], r["partition"], r["offset"], r["previous_offset"], r["log_partition"],
         r["record_offset"])
        for r in rows
    )


@pytest.mark.spark
def test_sample_jsonl_findings_and_tables(spark, tmp_path):  # noqa: F811
    out = tmp_path / "audit"
    result = runner.invoke(app, ["spark-audit", "--master", "local[2]", "--out", str(out), "--format", "jsonl"])
    assert result.exit_code == 1, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.strip()]
    assert _tuples(lines) == SAMPLE_FINDINGS
    assert sorted(os.listdir(out)) == ["commits", "coverage", "findings", "generations", "group_members", "groups",
                                      "lag", "lag_episodes", "members", "offsets", "rebalances"]
    written = [json.loads(x) for p in sorted((out / "findings").glob("part-*.json")) for x in p.read_text().splitlines()]
    assert _tuples(written) == SAMPLE_FINDINGS
    assert all(f["message"] for f in written)
    coverage = [json.loads(x) for p in (out / "coverage").glob("part-*.json") for x in p.read_text().splitlines()]
    assert sorted((c["log_partition"], c["records"], c["control_records"]) for c in coverage) == [(7, 89, 0), (23, 22, 4)]
    assert "9 findings reported" in result.stderr


@pytest.mark.spark
def test_parquet_rerun_replaces_output_atomically(spark, tmp_path):  # noqa: F811
    import pyarrow.parquet as pq

    out = tmp_path / "audit"
    first = runner.invoke(app, ["spark-audit", "--out", str(out), "--master", "local[2]"])
    assert first.exit_code == 1, first.output
    table1 = pq.read_table(out / "commits").to_pylist()
    second = runner.invoke(app, ["spark-audit", "--out", str(out), "--master", "local[2]"])
    assert second.exit_code == 1, second.output
    assert pq.read_table(out / "commits").to_pylist() == table1
    assert _tuples(pq.read_table(out / "findings").to_pylist()) == SAMPLE_FINDINGS
    assert os.listdir(tmp_path) == ["audit"]  # no temporary or old directory left behind
    assert "zombie" in first.stdout and "worst groups" in first.stdout


@pytest.mark.spark
def test_golden_scenario_without_findings_exits_0_json(spark):  # noqa: F811
    path = FIXTURES / "scenario1_generations" / "00000000000000000000.log"
    result = runner.invoke(app, ["spark-audit", str(path), "--format", "json", "--master", "local[2]"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["counts"] == {"generations": 5, "members": 11, "commits": 37, "findings": 0, "offsets": 9}
    assert doc["groups"] == 1 and doc["findings_by_rule"] == {}
    assert doc["coverage"][0]["records"] == 42


def test_missing_path_exits_2(tmp_path):
    result = runner.invoke(app, ["spark-audit", str(tmp_path / "nope")])
    assert result.exit_code == 2, result.output
    assert "no such file or directory" in result.stderr


def test_directory_without_segments_exits_2(tmp_path):
    result = runner.invoke(app, ["spark-audit", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "no __consumer_offsets-N directories" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--retention", "seven days"], "--retention"),
        (["--group", "("], "--group: invalid regular expression"),
        (["--conf", "novalue"], "--conf expects KEY=VALUE"),
        (["--since", "yesterday"], "--since"),
        (["--split-size", "12"], "--split-size"),
        (["--storm", "5"], "--storm: expected N/WINDOW"),
        (["--storm", "5/soon"], "--storm: expected N/WINDOW"),
        (["--storm", "1/10m"], "--storm: expected N/WINDOW"),
        (["--storm", "5/0s"], "--storm: expected N/WINDOW"),
        (["--storm", "/10m"], "--storm: expected N/WINDOW"),
    ],
)
def test_bad_options_exit_2(args, message):
    result = runner.invoke(app, ["spark-audit", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr  # one line, before Spark starts


def test_missing_java_is_an_environment_problem(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    from kgtool.spark.session import check_java
    from kgtool.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match="needs Java 17 or newer"):
        check_java()


def test_old_java_is_refused(monkeypatch, tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    result = runner.invoke(app, ["spark-audit", str(FIXTURES / "scenario1_generations" / "00000000000000000000.log")])
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # pragma: no cover
        pytest.fail("a JVM gateway is set in the environment")
    assert result.exit_code == 2, result.output
    assert "is Java 11" in result.stderr


def test_java_version_parsing():
    assert parse_java_version('openjdk version "17.0.15" 2025-04-15') == 17
    assert parse_java_version('java version "1.8.0_402"') == 8
    assert parse_java_version('openjdk version "21" 2023-09-19') == 21
    assert parse_java_version("garbage") is None


def test_option_parsers():
    assert parse_duration_ms("7d", "--retention") == 7 * 86_400_000
    assert parse_duration_ms("10080m", "--retention") == 7 * 86_400_000
    assert parse_duration_ms("1500", "--retention") == 1500
    assert parse_time_ms("2024-06-01T00:00:00Z", "--since") == 1_717_200_000_000
    assert parse_time_ms("2024-06-01T02:00:00+02:00", "--since") == 1_717_200_000_000
    assert parse_time_ms("1717200000000", "--since") == 1_717_200_000_000
    assert parse_size("32MiB", "--split-size") == 32 << 20
    assert parse_size("4096", "--split-size") == 4096
    with pytest.raises(UsageError):
        parse_size("1", "--split-size")
    assert parse_storm("5/10m") == (5, 600_000)
    assert parse_storm("3/90s") == (3, 90_000)
    assert parse_storm(" 10 / 1h ") == (10, 3_600_000)
    assert parse_storm("2/1500") == (2, 1500)  # no unit: milliseconds, as --retention


def test_help_lists_rules():
    result = runner.invoke(app, ["spark-audit", "--help"])
    assert result.exit_code == 0, result.output
    assert "--retention" in result.output and "--master" in result.output
    assert Path(FIXTURES).exists()


@pytest.mark.spark
def test_truncated_segment_reports_problem_exit_1(spark, tmp_path):  # noqa: F811
    data = (FIXTURES / "scenario3_transactions_tombstones" / "00000000000000000000.log").read_bytes()
    d = tmp_path / "__consumer_offsets-5"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(data[:-40])
    result = runner.invoke(app, ["spark-audit", str(tmp_path), "--format", "json", "--master", "local[2]"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["problem_count"] == 1 and doc["findings_by_rule"] == {}
    assert doc["problems"][0]["position"] == 1453
    assert "byte 1453" in result.stderr and "1 decode problem reported" in result.stderr
    # The warning names the file and position once, then what went wrong.
    (line,) = [ln for ln in result.stderr.splitlines() if "byte 1453" in ln]
    assert line.count("byte 1453") == 1 and line.count("00000000000000000000.log") == 1, line
    assert doc["problems"][0]["problem"].startswith("truncated")


# Damage to the third batch of scenario 3 (batch@432, 116 bytes), and what decode-batch names:
# the byte of the field at fault and its path.
_SCENARIO3 = FIXTURES / "scenario3_transactions_tombstones" / "00000000000000000000.log"
_BATCH = 432


def _resigned(data: bytearray) -> bytearray:
    """The damaged batch's CRC-32C made right again (the damage then reaches the decoder)."""
    from kgtool.codec.primitives import crc32c

    size = int.from_bytes(data[_BATCH + 8:_BATCH + 12], "big") + 12
    data[_BATCH + 17:_BATCH + 21] = crc32c(bytes(data[_BATCH + 21:_BATCH + size])).to_bytes(4, "big")
    return data


def _damaged(kind: str) -> bytes:
    data = bytearray(_SCENARIO3.read_bytes())
    if kind == "crc":  # a byte of the last record: byte 449 (batch@432.crc)
        data[_BATCH + 115] ^= 0x01
    elif kind == "attributes":  # compression id 7: byte 453 (batch@432.attributes)
        data[_BATCH + 22] |= 0x07
        _resigned(data)
    elif kind == "record_count":  # more records than fit: byte 489 (batch@432.record_count)
        data[_BATCH + 57:_BATCH + 61] = (1000).to_bytes(4, "big")
        _resigned(data)
    elif kind == "record":  # the first record's length past the batch: (batch@432.records[0].length)
        data[_BATCH + 61] = 0x7E  # zigzag varint 63
        _resigned(data)
    elif kind == "length":  # below the minimum: byte 432 (batch@432.batch_length)
        data[_BATCH + 8:_BATCH + 12] = (5).to_bytes(4, "big")
    elif kind == "magic":  # byte 432 (batch@432.magic)
        data[_BATCH + 16] = 7
    else:  # truncated tail
        del data[-40:]
    return bytes(data)


_EXPECTED = {"crc": (449, "batch@432.crc"), "attributes": (453, "batch@432.attributes"),
             "record_count": (489, "batch@432.record_count"), "record": (494, "batch@432.records[0].length"),
             "length": (432, "batch@432.batch_length"),
             "magic": (432, "batch@432.magic"), "truncated": (1453, "batch@1453")}


def _decode_batch_names(path: Path) -> list[tuple[int, str]]:
    """(byte, path) of each problem line decode-batch prints."""
    import re

    result = runner.invoke(app, ["decode-batch", str(path), "--format", "jsonl"])
    assert result.exit_code in (0, 1), result.output
    return [(int(m[1]), m[2]) for m in re.finditer(r": byte (\d+) \(([^)]*)\): ", result.stderr)]


def _audit_names(problems: list[dict]) -> list[tuple[int, str]]:
    return [(p["position"], p["problem"].split("(", 1)[1].split(")", 1)[0]) for p in problems]


@pytest.mark.parametrize("pure", [True, False])
@pytest.mark.parametrize("kind", list(_EXPECTED))
def test_audit_names_a_damaged_batch_at_the_byte_decode_batch_names(tmp_path, kind, pure):
    # Below Spark: the task function the job runs per partition, on both decoding paths.
    from kgtool.offsets.options import AuditOptions
    from kgtool.spark.task import PartitionFiles, audit_partition
    from tests.twins import have_compiled

    if not pure and not have_compiled("kgtool.codec._speedups"):
        pytest.skip("KGTOOL_PURE_PYTHON: no C path")
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_damaged(kind))
    named = _decode_batch_names(path)
    assert named == [_EXPECTED[kind]]
    summary = audit_partition(PartitionFiles(5, [str(path)], [path.stat().st_size]), AuditOptions(), pure=pure)
    assert summary.problem_count == 1
    assert _audit_names(summary.problems) == named


@pytest.mark.spark
def test_crc_mismatch_named_at_the_same_byte_by_spark_audit_and_decode_batch(spark, tmp_path):  # noqa: F811
    d = tmp_path / "__consumer_offsets-5"
    d.mkdir()
    path = d / "00000000000000000000.log"
    path.write_bytes(_damaged("crc"))
    (named,) = _decode_batch_names(path)
    assert named == (449, "batch@432.crc")  # the CRC field, not the batch's first byte
    result = runner.invoke(app, ["spark-audit", str(tmp_path), "--format", "json", "--master", "local[2]"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["problem_count"] == 1 and _audit_names(doc["problems"]) == [named]
    (line,) = [ln for ln in result.stderr.splitlines() if "crc_mismatch" in ln]
    assert f"{path}: byte 449: crc_mismatch (batch@432.crc): stored crc 0x" in line, line


def test_cli_import_does_not_load_pyspark():
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    code = "import sys, kgtool.cli.main; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(repo)}, check=True)
    assert out.stdout.strip() == "False"


# --- Spark's output stays off stderr; failures are one line (real processes, real JVMs) ------


def _audit_process(run_process, monkeypatch, tmp_path, *args):
    """``python -m kgtool spark-audit --master local[1] ARGS`` with its own TMPDIR (to see that
    the file capturing Spark's output is removed)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    monkeypatch.setenv("TMPDIR", str(tmp))  # read by the child only (the parent's tempdir is cached)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    proc = run_process(["spark-audit", "--master", "local[1]", *args], timeout=600)
    return proc, proc.stdout.decode(), proc.stderr.decode(), sorted(p.name for p in tmp.glob("kgtool-spark-*"))


@pytest.mark.spark
def test_quiet_by_default_only_kgtool_lines_on_stderr(run_process, monkeypatch, tmp_path):
    proc, out, err, left = _audit_process(run_process, monkeypatch, tmp_path)
    assert proc.returncode == 1, err
    assert err == "kgtool: 9 findings reported\n"  # no Spark, JVM or Python worker line
    assert "zombie" in out
    assert left == []


@pytest.mark.spark
def test_quiet_success_has_empty_stderr(run_process, monkeypatch, tmp_path):
    path = FIXTURES / "scenario1_generations" / "00000000000000000000.log"
    proc, out, err, left = _audit_process(run_process, monkeypatch, tmp_path, str(path), "--format", "json")
    assert proc.returncode == 0, err
    assert err == ""
    assert json.loads(out)["counts"]["findings"] == 0
    assert left == []


@pytest.mark.spark
def test_verbose_and_spark_log_level_bring_spark_back(run_process, monkeypatch, tmp_path):
    proc, out, err, left = _audit_process(run_process, monkeypatch, tmp_path, "--verbose", "--spark-log-level", "info",
                                          "--format", "json")
    assert proc.returncode == 1, err
    json.loads(out)  # stdout stays kgtool's: the JVM's stdout goes to stderr
    lines = err.splitlines()
    assert any(" INFO SparkContext: Running Spark version" in ln for ln in lines), err[:2000]
    assert any(ln.startswith("spark-audit [") and "auditing" in ln and "partition(s)" in ln for ln in lines)  # progress
    assert not any("Setting default log level" in ln or "Using Spark's default log4j profile" in ln for ln in lines)
    assert "kgtool: 9 findings reported" in lines  # (Spark logs its shutdown after it, at INFO)
    assert left == []


@pytest.mark.spark
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="under AddressSanitizer (.ci/sanitize) no worker lives in 100 MB of address space: "
                           "ASan's shadow memory alone is larger")
def test_python_worker_out_of_memory_is_one_line_exit_4(run_process, monkeypatch, tmp_path):
    """spark.executor.pyspark.memory=100m (RLIMIT_AS of each Python worker) is too little to map
    pyarrow's libraries: a real worker memory failure, reported in one line with the setting."""
    proc, out, err, left = _audit_process(run_process, monkeypatch, tmp_path, "--conf", "spark.executor.pyspark.memory=100m")
    assert proc.returncode == 4, err
    assert err.count("\n") == 1, err
    assert err.startswith("kgtool: spark-audit: a Spark Python worker ran out of memory (")
    assert err.rstrip().endswith(
        "raise spark.executor.pyspark.memory (now 100m): --conf spark.executor.pyspark.memory=1g"
    )
    assert "Traceback" not in err and "\tat " not in err
    assert left == []


def test_bad_spark_log_level_exits_2(run):
    result = run(["spark-audit", "--spark-log-level", "loud"])
    assert result.exit_code == 2
    assert "--spark-log-level" in result.stderr


# --- the rebalances panel and the --group timeline (rendered from a task's summary, no Spark) ---------


@pytest.fixture
def wide(monkeypatch):
    """A wide console on stdout (table cells unwrapped)."""
    import sys

    from rich.console import Console

    from kgtool.cli import render

    monkeypatch.setattr(render, "out", lambda: Console(file=sys.stdout, width=400, highlight=False, soft_wrap=False))


def _storm_summary(tmp_path, group_pattern=None):
    from kgtool.offsets.audit import AuditOptions
    from kgtool.offsets.samples import partition_7
    from kgtool.offsets.writer import write_segment
    from kgtool.spark import job
    from kgtool.spark.task import PartitionFiles, audit_partition

    path = write_segment(partition_7(), str(tmp_path / "__consumer_offsets-7"))
    files = PartitionFiles(7, [path], [os.path.getsize(path)])
    options = AuditOptions(group_pattern=group_pattern)
    return job, job.combine([audit_partition(files, options)], [files], None, options)


def test_rebalances_panel_renders(tmp_path, capsys, wide):
    from kgtool.cli.spark_audit import _render_summary

    _job, summary = _storm_summary(tmp_path)
    _render_summary(summary)
    out = " ".join(capsys.readouterr().out.split())  # lines as Rich wraps them
    assert "rebalances: 24 generation change(s) with a rebalance, 6 without (same generation); 1 storm(s) " \
           "(rule: 5 within 10m)" in out
    assert "rebalance storms" in out and "clicks@10.0.0.5 (6)" in out
    assert "rejoin-loop" in out and "eager-assignor" in out  # the diagnosis codes, one per line
    assert "rebalances per group (most first)" in out and "member-rejoined 6" in out
    assert "generation timeline" not in out  # only with --group
    assert "rebalance-storm clicks-app gen 7" in out  # the finding, without a topic partition


def test_group_timeline_renders_in_table_and_json(tmp_path, capsys, wide):
    from kgtool.cli.spark_audit import _render_summary

    job, summary = _storm_summary(tmp_path, group_pattern="^clicks-")
    _render_summary(summary)
    out = " ".join(capsys.readouterr().out.split())
    assert "generation timeline of clicks-app" in out and "generation timeline of clicks-static" in out
    assert "1 (same)" in out and "static-member-replaced" in out and "1 -> 2" in out
    doc = json.loads(json.dumps(job.summary_json(summary)))
    assert [(x["from_generation"], x["to_generation"], x["cause"]) for x in doc["timeline"]["clicks-app"]] == \
        [(None, 1, "first-generation")] + [(i, i + 1, "member-rejoined") for i in range(1, 7)]
    assert doc["rebalances"]["storm_count"] == 1
    (storm,) = doc["rebalances"]["storms"]
    assert (storm["group"], storm["count"], storm["from_generation"], storm["to_generation"]) == ("clicks-app", 6, 1, 7)
    assert doc["options"]["storm_count"] == 5 and doc["options"]["storm_window_ms"] == 600_000


@pytest.mark.spark
def test_rebalances_table_panel_and_timeline_end_to_end(spark, tmp_path):  # noqa: F811
    """The sample through Spark: the rebalances table is written; the summary's panel and the
    --group timeline render, in table and in JSON."""
    import pyarrow.parquet as pq

    out = tmp_path / "audit"
    result = runner.invoke(app, ["spark-audit", "--master", "local[2]", "--out", str(out), "--group", "^clicks-app$"],
                           env={"COLUMNS": "240"})
    assert result.exit_code == 1, result.output
    rows = pq.read_table(out / "rebalances").to_pylist()
    assert [(r["group"], r["from_generation"], r["to_generation"], r["cause"]) for r in rows][:2] == [
        ("clicks-app", None, 1, "first-generation"), ("clicks-app", 1, 2, "member-rejoined")]
    assert len(rows) == 7 and all(r["rebalance"] for r in rows)
    assert "rebalances: 7 generation change(s) with a rebalance" in result.stdout
    assert "rebalance storms" in result.stdout and "generation timeline of clicks-app" in result.stdout
    assert "1 finding reported" in result.stderr
    result = runner.invoke(app, ["spark-audit", "--master", "local[2]", "--group", "^clicks-app$", "--format", "json",
                                 "--storm", "8/10m"])
    assert result.exit_code == 0, result.output  # 6 rebalances: below 8 within 10 minutes
    doc = json.loads(result.stdout)
    assert doc["rebalances"]["count"] == 7 and doc["rebalances"]["storm_count"] == 0
    assert len(doc["timeline"]["clicks-app"]) == 7
    assert doc["rebalances"]["worst_groups"][0]["group"] == "clicks-app"


def test_remote_partition_directories_are_named_not_skipped_silently(capsys):
    """A __share_group_state-N or data partition directory on s3a:// names topic ids, but the
    share-state replay and lag read local directories: one warning each says so."""
    from kgtool.cli.spark_audit import _remote_partitions_named
    from kgtool.spark.files import TopicIds

    topics = TopicIds(remote=[(("__share_group_state", 3), "s3a://b/logs/__share_group_state-3"),
                              (("orders", 0), "s3a://b/logs/orders-0"), (("orders", 1), "s3a://b/logs/orders-1")])
    _remote_partitions_named(topics)
    err = " ".join(capsys.readouterr().err.split())
    assert "1 remote __share_group_state-N directory (s3a://b/logs/__share_group_state-3) not replayed" in err
    assert "2 remote data partition directories (s3a://b/logs/orders-0, ...): used for topic names only" in err
