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


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone cluster on 127.0.0.1: a master and 2 workers (1 core, 1 GiB each),
    started from the pyspark package and torn down at the end of the session (see
    tests/spark/cluster.py). A failure to start fails the test with the daemons' log tails."""
    from tests.spark.cluster import ClusterError, start_cluster

    try:
        cluster = start_cluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g")
    except ClusterError as exc:
        pytest.fail(f"cannot start the Spark standalone cluster: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
