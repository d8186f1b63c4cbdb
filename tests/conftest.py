"""Test session header: the versions the suite ran against.

``pip install -e '.[test]'`` installs the newest releases pyproject.toml allows, so a run on
a fresh machine may meet a release no earlier run met (issue 24: PyYAML 6.0.4). The header
names the installed version of each direct dependency (pyproject.toml's ``dependencies`` and
``test`` extra, read here so a new one is listed without a change) and of click, which kgtool's
command line reaches through typer, at the top of every run, in CI and locally.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
#: Not direct dependencies, but kgtool's command line is built on them.
INDIRECT = ("click",)


def direct_dependencies() -> list[str]:
    """Distribution names of pyproject.toml's dependencies and test extra, in its order."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    names: list[str] = []
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        if name and name.group() not in names:
            names.append(name.group())
    return names


def installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def pytest_report_header(config) -> list[str]:
    versions = ", ".join(f"{name} {installed(name)}" for name in [*direct_dependencies(), *INDIRECT])
    return [f"kgtool's dependencies: {versions}"]


# ---- the spark marker, kept true -------------------------------------------------------------
# ``pytest -m "not spark"`` is the quick loop (docs/development.md): it must start no Spark. A test
# that starts a SparkSession in this process (the ``spark`` fixture, ``spark-audit`` through
# CliRunner) without the marker fails here, naming itself; one that starts Spark in a subprocess
# fails the quick loop's check in .ci/run, which runs it with Java out of reach.

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _spark_needs_its_marker(request, monkeypatch):
    if request.node.get_closest_marker("spark") is not None:
        yield
        return
    import sys

    import kgtool.spark.session as session

    def refuse(*args, **kwargs):
        pytest.fail(f"{request.node.nodeid} starts Spark: mark it @pytest.mark.spark", pytrace=False)

    monkeypatch.setattr(session, "_launch", refuse)  # a JVM started by kgtool
    if "pyspark.sql" in sys.modules:  # a session of an earlier test, taken again
        monkeypatch.setattr(sys.modules["pyspark.sql"].SparkSession.Builder, "getOrCreate", refuse)
    yield


def pytest_collection_modifyitems(config, items):
    """A test asking for the Spark fixtures without the marker stops the run at collection
    (session fixtures are set up before the guard above could refuse them)."""
    unmarked = [item.nodeid for item in items
                if {"spark", "spark_cluster"} & set(getattr(item, "fixturenames", ()))
                and item.get_closest_marker("spark") is None]
    if unmarked:
        raise pytest.UsageError("these tests use Spark without @pytest.mark.spark: " + ", ".join(unmarked))
