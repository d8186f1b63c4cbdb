"""``spark-audit --report FILE``: bad input (one line, exit 2, before Spark starts) and a failed
audit (no report; an existing one stays as it was). The page itself: tests/report/."""

from __future__ import annotations

import os
import tempfile

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

runner = CliRunner()


@pytest.fixture
def no_spark(monkeypatch):
    """Starting Spark fails the test: the checks must come first."""

    def refuse(*_a, **_k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr("kgtool.spark.session.get_session", refuse)


@pytest.mark.parametrize("where, message", [
    ("missing/audit.html", "directory"),
    ("", "is a directory"),
    ("-", "the report is an HTML file"),
])
def test_unwritable_report_path_exits_2_before_spark(no_spark, tmp_path, where, message):
    path = where if where == "-" else str(tmp_path / where)
    result = runner.invoke(app, ["spark-audit", "--report", path])
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "--report" in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_report_on_a_cluster_master_needs_out(no_spark, tmp_path):
    result = runner.invoke(app, ["spark-audit", "--master", "spark://h:7077", "--report", str(tmp_path / "a.html")])
    assert result.exit_code == 2, result.output
    assert "needs --out DIR" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.spark
def test_failed_audit_writes_no_report(spark, tmp_path, monkeypatch):  # noqa: F811
    page = tmp_path / "audit.html"
    page.write_text("the previous report")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def fail(*_a, **_k):
        raise RuntimeError("the job failed")

    monkeypatch.setattr("kgtool.spark.job.audit_partitions", fail)
    result = runner.invoke(app, ["spark-audit", "--master", "local[2]", "--report", str(page)])
    assert result.exit_code == 3, result.output
    assert page.read_text() == "the previous report"
    assert sorted(os.listdir(tmp_path)) == ["audit.html", "tmp"]  # no temporary report left
    assert os.listdir(scratch) == []  # nor the tables' temporary directory


@pytest.mark.spark
def test_failure_while_reading_the_tables_writes_no_report(spark, tmp_path, monkeypatch):  # noqa: F811
    page = tmp_path / "audit.html"
    page.write_text("the previous report")
    out = tmp_path / "tables"

    def fail(*_a, **_k):
        raise OSError("disk gone")

    monkeypatch.setattr("kgtool.report.data.gather", fail)
    result = runner.invoke(app, ["spark-audit", "--master", "local[2]", "--report", str(page), "--out", str(out)])
    assert result.exit_code == 3, result.output
    assert page.read_text() == "the previous report"
    assert (out / "commits").is_dir()  # the tables were published before the report was read from them
