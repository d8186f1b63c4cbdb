"""One local SparkSession for the whole test run (tests/spark and tests/cli share it).

Pinned conf: 2 local cores, UTC, 4 shuffle partitions, UI off, workers on this interpreter.
Without Java 17+ the fixture FAILS (it does not skip) with the reason: the Spark tests are
part of the suite and must not disappear silently.
"""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    from kgtool.errors import EnvironmentProblem
    from kgtool.spark.session import get_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    try:
        session = get_session(
            "local[2]",
            {
                "spark.sql.session.timeZone": "UTC",
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "2",
                "spark.ui.enabled": "false",
            },
        )
    except EnvironmentProblem as exc:
        pytest.fail(f"the Spark tests need Java 17+ (install a JDK 17 and set JAVA_HOME): {exc}", pytrace=False)
    yield session
