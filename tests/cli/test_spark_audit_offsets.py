"""``kgtool spark-audit``: the offsets table, ``--until`` and ``--reset-plan`` from the command
line. Bad input fails in one line, exit 2, before Spark starts; one end-to-end run with Spark."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.cli.spark_audit import parse_time_ms
from kgtool.errors import UsageError
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.samples import sample_scripts
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

runner = CliRunner()
DAY = 86_400_000


@pytest.fixture
def no_spark(monkeypatch):
    """Starting Spark fails the test: the error must come before."""
    import kgtool.spark.session as session

    def refuse(*_a, **_k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session, "get_session", refuse)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--until", "yesterday"], "--until: expected ISO-8601 time or epoch milliseconds, got 'yesterday'"),
        (["--until", "2024-13-01T00:00:00"], "--until: expected ISO-8601"),
        (["--until", "14:03"], "--until: expected ISO-8601"),
        (["--until", "99999999999999999999"], "--until: '99999999999999999999' is out of range"),
        (["--until", "1" * 5000], "is out of range"),
        (["--since", "2024-06-01T14:03Z", "--until", "2024-06-01T14:03Z"],
         "--since 2024-06-01T14:03Z is not before --until 2024-06-01T14:03Z: no record lies between them"),
        (["--since", "1717250580001", "--until", "2024-06-01T14:03Z"], "is not before --until"),
        (["--reset-plan", "plan.csv"], "--reset-plan needs --group REGEX"),
        (["--group", "g", "--reset-plan", "-", "--format", "json"], "--reset-plan -: stdout carries the plan"),
        (["--group", "g", "--reset-plan", "/nonexistent-dir/plan.csv"], "directory /nonexistent-dir does not exist"),
        (["--group", "g", "--reset-plan", "/"], "--reset-plan: / is a directory"),
    ],
)
def test_bad_input_is_one_line_exit_2_before_spark(no_spark, args, message):
    result = runner.invoke(app, ["spark-audit", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_until_times():
    assert parse_time_ms("2024-06-01T14:03:00.001Z", "--until") == 1_717_250_580_001  # no float rounding
    assert parse_time_ms("2024-06-01T14:03", "--until") == 1_717_250_580_000  # naive: UTC
    assert parse_time_ms("2024-06-01T16:03:00+02:00", "--until") == 1_717_250_580_000
    assert parse_time_ms("2024-06-01", "--until") == 1_717_200_000_000
    assert parse_time_ms(" 1717250580001 ", "--until") == 1_717_250_580_001
    assert parse_time_ms("-1", "--until") == -1
    with pytest.raises(UsageError):
        parse_time_ms(str(1 << 63), "--until")


@pytest.mark.spark
def test_offsets_table_and_reset_plan_at_an_instant(spark, tmp_path):  # noqa: F811
    """The sample at day 6: its offsets table (Parquet) equals the in-process replay's, and the
    plan holds the selected groups' rows as group,topic,partition,offset lines."""
    import pyarrow.parquet as pq

    from kgtool.offsets.samples import write_sample

    write_sample(str(tmp_path / "log"))
    start = sample_scripts()[1].start_ms
    until = start + 6 * DAY
    out, plan = tmp_path / "audit", tmp_path / "plan.csv"
    group = "^(events-stream|nightly-job|legacy-batch|payments-eos|ledger-eos|billing-reset)$"
    result = runner.invoke(app, ["spark-audit", str(tmp_path / "log"), "--master", "local[2]", "--out", str(out),
                                 "--group", group, "--until", str(until), "--retention", "2d",
                                 "--reset-plan", str(plan)])
    assert result.exit_code == 1, result.output  # findings (expiring...), and the plan is written
    table = pq.read_table(out / "offsets").to_pylist()
    entries = [e for s in sample_scripts() for e in s.entries()]
    want = audit_entries(entries, options=AuditOptions(group_pattern=group, until=until, retention_ms=2 * DAY))
    key = lambda r: (r["log_partition"], r["group"], r["topic"], r["partition"])  # noqa: E731
    assert sorted(table, key=key) == sorted(want.tables["offsets"], key=key)
    assert [(r["group"], r["offset"], r["expired"]) for r in sorted(table, key=key)] == [
        ("billing-reset", 100, True),  # Empty since its commit, days ago
        ("events-stream", 100, False),  # Stable: the coordinator keeps it
        ("legacy-batch", 12, True),
        ("nightly-job", 30, False),  # Empty for a day, retention 2 days
        ("payments-eos", 800, False),  # the aborted 900 never counted; Stable
    ]  # ledger-eos: its only commit (day 8) is after the instant
    assert plan.read_text() == ("billing-reset,billing,0,100\nevents-stream,events,0,100\nlegacy-batch,events,0,12\n"
                                "nightly-job,events,0,30\npayments-eos,payments,0,800\n")
    assert "reset plan: 5 committed offset(s) of 5 group(s)" in result.stderr
    assert "2 of its offsets were past the retention" in result.stderr
    assert "committed offset(s) at" in result.stdout


def test_reset_plan_to_stdout_and_no_offsets_is_an_error(tmp_path, monkeypatch):
    """The CLI's handling of the plan after the audit, without Spark: ``-`` puts only the plan on
    stdout; no committed offset for the selected groups exits 2 with nothing written."""
    from kgtool.spark import job

    def fake_run(_session, files, options, **kw):
        assert kw["keep_offsets"]
        return job.AuditSummary(out=None, files=1, bytes=0, splits=1, coverage=[], counts={}, groups=1,
                                findings_by_rule={}, worst_groups=[], findings=[], problems=[], problem_count=0,
                                options={"until": options.until}, offsets=rows)

    import kgtool.spark.session as session

    monkeypatch.setattr(session, "get_session", lambda *a, **k: None)
    monkeypatch.setattr(job, "run_audit", fake_run)
    log = tmp_path / "__consumer_offsets-0"
    log.mkdir()
    (log / "00000000000000000000.log").write_bytes(b"")
    rows = [["g", "t", 1, 7, False], ["g", "t", 0, 5, True]]
    result = runner.invoke(app, ["spark-audit", str(log), "--group", "g", "--reset-plan", "-"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "g,t,0,5\ng,t,1,7\n"
    rows = []
    plan = tmp_path / "plan.csv"
    result = runner.invoke(app, ["spark-audit", str(log), "--group", "g", "--reset-plan", str(plan),
                                 "--until", "2024-06-01T14:03:00Z", "--format", "json"])
    assert result.exit_code == 2, result.output
    assert "--reset-plan: no committed offsets for the groups matching 'g' at 2024-06-01T14:03:00.000Z" in result.stderr
    assert not plan.exists()
    json.loads(result.stdout)  # the summary still went out


@pytest.mark.spark
def test_a_compacted_log_directory_is_said_and_never_answers_from_history(spark, tmp_path):  # noqa: F811
    """A broker log directory whose __consumer_offsets-0 was cleaned (tests/offsets/cleaner.py)
    with its cleaner-offset-checkpoint: the coverage and the console say where and from what;
    --until inside the cleaned range warns and marks the state rows exact = false; a reset
    plan there is refused (exit 2); above it, the plan is written."""
    import pyarrow.parquet as pq

    from kgtool.codec import scan_file
    from kgtool.codec.model import RecordBatch
    from tests.offsets.test_compaction import LOGS, PLANS, cleaned

    log = next(p for p in LOGS if p.parent.name.startswith("r00"))
    paths, checkpoint, removed = cleaned(log, PLANS["half"], tmp_path, checkpoint=True)
    assert removed
    logs = str(tmp_path / "logs")
    result = runner.invoke(app, ["spark-audit", logs, "--master", "local[2]", "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    (cov,) = json.loads(result.stdout)["coverage"]
    assert (cov["compacted_below_offset"], cov["compaction_source"]) == (checkpoint, "checkpoint")
    table = runner.invoke(app, ["spark-audit", logs, "--master", "local[2]"])
    text = " ".join(table.stdout.split())
    assert f"__consumer_offsets-0 is compacted below offset {checkpoint:,}" in text
    assert "the broker's cleaner-offset-checkpoint says" in text and "only the latest record of each key" in text
    records = sorted((r.offset, r.timestamp) for p in paths for b in scan_file(p) if isinstance(b, RecordBatch)
                     for r in b.records)
    inside = next(t for o, t in records if o >= checkpoint // 2)
    after = max(t for _o, t in records) + 1
    out, plan = tmp_path / "audit", tmp_path / "plan.csv"
    at = runner.invoke(app, ["spark-audit", logs, "--master", "local[2]", "--until", str(inside), "--out", str(out),
                             "--group", ".", "--reset-plan", str(plan)])
    assert at.exit_code == 2, at.output
    err = " ".join(at.stderr.split())
    assert "__consumer_offsets-0: --until" in err and "is inside its cleaned range" in err
    assert "--reset-plan at --until" in err and "refused: __consumer_offsets-0 is compacted past that instant" in err
    assert not plan.exists()
    assert {r["exact"] for r in pq.read_table(out / "offsets").to_pylist()} <= {False}
    assert {r["exact"] for r in pq.read_table(out / "groups").to_pylist()} == {False}
    ok = runner.invoke(app, ["spark-audit", logs, "--master", "local[2]", "--until", str(after), "--group", ".",
                             "--reset-plan", str(plan)])
    assert ok.exit_code in (0, 1), ok.output
    assert plan.read_text() and "is inside its cleaned range" not in ok.stderr


@pytest.mark.spark
def test_lag_rows_inside_a_cleaned_range_are_not_exact(spark, tmp_path):  # noqa: F811
    """tests/lag/scenario's broker with its __consumer_offsets-0 cleaned to half (and its
    cleaner-offset-checkpoint): the lag rows before the partition's earliest exact instant are
    exact = false, the others true."""
    import os
    import shutil

    import pyarrow.parquet as pq

    from tests.lag import scenario as lag_scenario
    from tests.offsets.cleaner import clean, read_log, write_checkpoint, write_partition

    broker = lag_scenario.write(str(tmp_path / "b"))["root"]
    offsets_dir = os.path.join(broker, "__consumer_offsets-0")
    (segment,) = [os.path.join(offsets_dir, f) for f in os.listdir(offsets_dir) if f.endswith(".log")]
    log = read_log(segment, 40)
    clean(log, len(log.segments) // 2, lag_scenario.T0 + 1_300_000)
    shutil.rmtree(offsets_dir)
    write_partition(log, offsets_dir)
    write_checkpoint(broker, {("__consumer_offsets", 0): log.checkpoint})
    out = tmp_path / "audit"
    result = runner.invoke(app, ["spark-audit", broker, "--master", "local[2]", "--out", str(out), "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    (cov,) = json.loads(result.stdout)["coverage"]
    assert (cov["compacted_below_offset"], cov["compaction_source"]) == (log.checkpoint, "checkpoint")
    rows = pq.read_table(out / "lag").to_pylist()
    assert {r["exact"] for r in rows} == {False, True}
    # the earliest exact instant: at the first record at the checkpoint and after every record below it
    stamps = [(r.offset, r.timestamp) for seg in log.segments for b, _ in seg.batches for r in b.records]
    earliest = max(max(t for o, t in stamps if o < log.checkpoint) + 1,
                   min(t for o, t in stamps if o >= log.checkpoint))
    assert all(r["exact"] == (r["timestamp"] >= earliest) for r in rows)


@pytest.mark.spark
def test_a_checkpoint_outside_the_log_is_one_warning(spark, tmp_path):  # noqa: F811
    from tests.offsets.cleaner import write_checkpoint
    from tests.offsets.test_compaction import LOGS, PLANS, cleaned

    log = next(p for p in LOGS if p.parent.name.startswith("n01"))
    cleaned(log, PLANS["half"], tmp_path, checkpoint=False)
    write_checkpoint(str(tmp_path / "logs"), {("__consumer_offsets", 0): 10**9})
    result = runner.invoke(app, ["spark-audit", str(tmp_path / "logs"), "--master", "local[1]", "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    err = " ".join(result.stderr.split())
    assert "cleaner-offset-checkpoint: line 3: offset 1000000000 of __consumer_offsets is past the end of the log" in err
    (cov,) = json.loads(result.stdout)["coverage"]
    assert cov["compaction_source"] == "log"
