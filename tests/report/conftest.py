"""The report's fixtures: one headless Chromium for the session, and the audits whose pages the
tests open (each run once: the sample, the 5,000-group log, the lag scenario).

Without Chromium the browser fixture FAILS (it does not skip): the page is checked in a real
browser or not at all, and a silent skip would hide that (``.ci/run`` installs Debian's
``chromium``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from tests.browser import Browser, BrowserMissing
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@pytest.fixture(scope="session")
def browser():
    try:
        b = Browser()
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield b
    finally:
        b.close()


def audit(*args: str, fmt: str = "json") -> tuple[int, str, str]:
    """``kgtool spark-audit ARGS --format FMT --master local[2]``: exit code, stdout, stderr."""
    result = CliRunner().invoke(app, ["spark-audit", *args, "--format", fmt, "--master", "local[2]"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="session")
def sample_report(spark, tmp_path_factory):  # noqa: F811
    page = tmp_path_factory.mktemp("report-sample") / "audit.html"
    code, stdout, stderr = audit("--report", str(page))
    return page, code, json.loads(stdout), stderr


@pytest.fixture(scope="session")
def many_groups_report(spark, tmp_path_factory):  # noqa: F811
    from tests.report import many_groups

    root = tmp_path_factory.mktemp("many-groups")
    many_groups.write(str(root / "log"))
    page = root / "audit.html"
    code, stdout, stderr = audit(str(root / "log"), "--report", str(page))
    return page, code, json.loads(stdout), stderr


@pytest.fixture(scope="session")
def lag_report(spark, tmp_path_factory):  # noqa: F811
    from tests.lag import scenario as lag_scenario

    root = tmp_path_factory.mktemp("report-lag")
    broker = lag_scenario.write(str(root))
    page = root / "audit.html"
    # JSON Lines tables under --out: the report reads that format too, and --out keeps them
    code, stdout, stderr = audit(broker["root"], "--report", str(page), "--out", str(root / "tables"), fmt="jsonl")
    return page, code, [json.loads(line) for line in stdout.splitlines() if line.strip()], root / "tables"
