"""Java check and SparkSession construction for ``spark-audit``.

PySpark 4 needs Java 17 or newer; without it the JVM fails to start with a long and
unhelpful gateway error, so the version is checked first (``JAVA_HOME/bin/java`` if set, else
``java`` on the PATH, as Spark's launcher chooses) and reported as an
:class:`~kgtool.errors.EnvironmentProblem`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any

from kgtool.errors import EnvironmentProblem

MIN_JAVA = 17
_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.path.exists(candidate) else None
    return shutil.which("java")


def parse_java_version(text: str) -> int | None:
    """The feature version from ``java -version`` output (``1.8.0_402`` -> 8, ``17.0.15`` -> 17)."""
    m = _VERSION.search(text)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):
        return int(m.group(2))
    return major


def check_java() -> int:
    """Return the Java feature version; raise EnvironmentProblem when missing or < 17."""
    java = java_executable()
    where = "JAVA_HOME" if os.environ.get("JAVA_HOME") else "PATH"
    if java is None:
        raise EnvironmentProblem(
            f"spark-audit needs Java {MIN_JAVA} or newer and none was found ({where}); install a JDK "
            f"{MIN_JAVA}+ (e.g. apt install openjdk-17-jre-headless) and set JAVA_HOME or PATH"
        )
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"spark-audit: cannot run {java} -version: {exc}") from None
    version = parse_java_version(proc.stderr + proc.stdout)
    if version is None:
        raise EnvironmentProblem(f"spark-audit: cannot tell the Java version of {java}")
    if version < MIN_JAVA:
        raise EnvironmentProblem(
            f"spark-audit needs Java {MIN_JAVA} or newer (PySpark 4); {java} is Java {version}: "
            f"install a JDK {MIN_JAVA}+ and point JAVA_HOME at it"
        )
    return version


def get_session(master: str = "local[*]", conf: dict[str, str] | None = None) -> Any:
    """The active SparkSession (under spark-submit), or a new one for ``master``.

    Defaults, each overridable with ``conf``: UTC session time zone; for local masters UI off
    and 8 shuffle partitions; the current Python for the workers; JVM log level ERROR once started.
    """
    conf = dict(conf or {})
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if not under_submit:
        check_java()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import warnings

    # PySpark 4.x warns on pandas 3 at import; kgtool does not use pandas conversions.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("kgtool spark-audit")
    if not under_submit:
        builder = builder.master(master)
    defaults: dict[str, str] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
    }
    if master.startswith("local"):
        # Spark's 200 shuffle partitions are 200 Python tasks for a few cores, and a laptop
        # run needs no web UI; a cluster keeps its defaults (or --conf).
        defaults["spark.sql.shuffle.partitions"] = "8"
        defaults["spark.ui.enabled"] = "false"
    for k, v in {**defaults, **conf}.items():
        builder = builder.config(k, v)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - the JVM failed to start: say so in one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EnvironmentProblem(f"spark-audit: cannot start Spark ({master}): {first}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark
