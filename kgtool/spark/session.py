"""Java check, SparkSession construction and what Spark may print, for ``spark-audit``.

PySpark 4 needs Java 17 or newer; without it the JVM fails to start with a long and
unhelpful gateway error, so the version is checked first (``JAVA_HOME/bin/java`` if set, else
``java`` on the PATH, as Spark's launcher chooses) and reported as an
:class:`~kgtool.errors.EnvironmentProblem`.

Spark's output. A driver JVM started here gets kgtool's log4j2 configuration
(``kgtool/data/spark-log4j2.properties``) before it starts:
``-Dlog4j2.configurationFile=... -Dkgtool.spark.logLevel=LEVEL`` appended to
``spark.driver.extraJavaOptions`` (PySpark passes builder settings to ``spark-submit`` as
``--conf``, and the launcher puts them on the JVM's command line in client mode), merged with
the value from ``--conf`` or ``spark-defaults.conf``; on cluster masters the same for
``spark.executor.extraJavaOptions`` at WARN or more (executor logs go to the cluster's log
store, never to the terminal). Not everything goes through log4j: the JVM itself prints
(``WARNING: Using incubator modules: jdk.incubator.vector``, ``OutOfMemoryError`` dumps), and
the Python workers' stdout/stderr (warnings, ``worker.py``'s "Current mem limits" lines) is
copied to the JVM's stderr. So, with level ``OFF`` (the default), the driver JVM's stdout and
stderr go to a temporary file (log4j at ERROR into it) that :mod:`kgtool.spark.failures` reads
to explain a failure and that is removed at exit; with any other level they go to kgtool's
stderr (stdout too: kgtool's stdout carries only its own output). A session that already
exists (spark-submit: ``PYSPARK_GATEWAY_PORT`` set, or one created earlier in the process)
is used as it is. Under spark-submit, before the SparkContext starts, the running driver JVM's
Log4j 2 is reconfigured with kgtool's file at the level asked for (:func:`quiet_submitted_jvm`),
unless the submitting user named a configuration file of their own.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any

from kgtool.errors import EnvironmentProblem, UsageError

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


LOG_LEVELS = ("OFF", "ERROR", "WARN", "INFO", "DEBUG")
#: The package data file handed to the JVMs, and the system property holding the level.
LOG4J2_CONFIG = "spark-log4j2.properties"
LEVEL_PROPERTY = "kgtool.spark.logLevel"
APP_NAME = "kgtool spark-audit"
_LOG4J_CONFIG_OPTION = re.compile(r"-Dlog4j2?\.configurationFile=")


def normalize_log_level(level: str) -> str:
    up = level.strip().upper()
    if up == "WARNING":
        up = "WARN"
    if up not in LOG_LEVELS:
        raise UsageError(f"--spark-log-level: expected one of {', '.join(LOG_LEVELS)}, got {level!r}")
    return up


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[N,F]``, ``local[*]``: one JVM (not ``local-cluster``)."""
    return master == "local" or master.startswith("local[")


def log4j2_config_path() -> str:
    from kgtool.data import sample_path

    return str(sample_path(LOG4J2_CONFIG))


def spark_defaults() -> dict[str, str]:
    """The settings of ``spark-defaults.conf`` that ``spark-submit`` will read
    (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``), so that a Java options value there is
    merged with kgtool's instead of replaced by it (``--conf`` wins over the file)."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        home = os.environ.get("SPARK_HOME")
        if not home:
            try:
                from pyspark.find_spark_home import _find_spark_home

                home = _find_spark_home()
            except Exception:  # noqa: BLE001 - no Spark home: no defaults file
                return {}
        conf_dir = os.path.join(home, "conf")
    settings: dict[str, str] = {}
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line or line.startswith(("#", "!")):
                    continue
                m = re.match(r"([^\s=:]+)\s*[\s=:]\s*(.*)$", line)
                if m:
                    settings[m.group(1)] = m.group(2).strip()
    except OSError:
        return {}
    return settings


def _java_option(text: str) -> str:
    """One option for a Java options string as Spark splits it (quotes when needed)."""
    if re.search(r"[\s'\"\\]", text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def merge_java_options(existing: str | None, level: str, config: str) -> str:
    """``existing`` (the user's extraJavaOptions) followed by kgtool's logging options; left
    alone when it already names a log4j configuration file (the user's logging wins)."""
    existing = (existing or "").strip()
    if _LOG4J_CONFIG_OPTION.search(existing):
        return existing
    ours = " ".join(_java_option(o) for o in (f"-Dlog4j2.configurationFile={config}", f"-D{LEVEL_PROPERTY}={level}"))
    return f"{existing} {ours}".strip()


def logging_settings(master: str, settings: dict[str, str], log_level: str) -> dict[str, str]:
    """``settings`` with kgtool's log4j2 configuration added to the driver's Java options (and
    the executors' on cluster masters), merged with any value already given."""
    level = normalize_log_level(log_level)
    config = log4j2_config_path()
    defaults = spark_defaults()
    out = dict(settings)
    driver_key, executor_key = "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"
    # OFF: nothing reaches the terminal, but Spark's errors are kept in the captured output.
    out[driver_key] = merge_java_options(
        settings.get(driver_key, defaults.get(driver_key)), "ERROR" if level == "OFF" else level, config
    )
    if not is_local_master(master):
        executor_level = level if level in ("INFO", "DEBUG") else "WARN"
        out[executor_key] = merge_java_options(settings.get(executor_key, defaults.get(executor_key)),
                                               executor_level, config)
    return out


@dataclass
class Launch:
    """What kgtool knows about the driver JVM it started: for explaining its failures."""

    master: str
    settings: dict[str, str] = field(default_factory=dict)
    #: The file receiving the JVM's stdout and stderr (level OFF), else None.
    output_path: str | None = None
    keep_output: bool = False
    proc: Any = None
    #: The thread copying the JVM's output (levels other than OFF), else None.
    echo: Any = None

    def settle(self, wait: float = 2.0) -> None:
        """Let the copy of the output of a JVM that has exited reach the capture file."""
        if self.echo is not None and self.exit_status() is not None:
            self.echo.join(timeout=wait)

    def output_tail(self, limit: int = 256 * 1024) -> str:
        if not self.output_path:
            return ""
        try:
            with open(self.output_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - limit))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def exit_status(self, wait: float = 0.0) -> int | None:
        """The JVM's exit status (negative: killed by that signal), None while it runs."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=wait) if wait > 0 else self.proc.poll()
        except subprocess.TimeoutExpired:
            return None

    def keep(self) -> str | None:
        """Keep the captured output after exit (for an unexplained failure); its path."""
        self.keep_output = True
        return self.output_path

    def _cleanup(self) -> None:
        if self.output_path and not self.keep_output:
            try:
                os.unlink(self.output_path)
            except OSError:
                pass


#: The driver JVM started by :func:`get_session` in this process, if any.
launched: Launch | None = None


def _write_stderr(data: bytes) -> None:
    try:
        os.write(2, data)  # not sys.stderr: no Python lock to hold when the interpreter exits
    except OSError:
        pass


#: Where :class:`_Echo` sends the JVM's output (bytes): stderr, unless a progress display
#: routes it above itself while it is on screen (:func:`echo_to`).
_echo_sink: Any = _write_stderr


def echo_to(sink: Any = None) -> None:
    """Send the output of the driver JVM shown on stderr (levels other than OFF) to
    ``sink(bytes)``, whole lines at a time; None: back to stderr."""
    global _echo_sink
    _echo_sink = sink or _write_stderr


class _Echo(threading.Thread):
    """Copies the driver JVM's output from a pipe to :data:`_echo_sink` (whole lines) and to
    the capture file, until the JVM exits."""

    def __init__(self, fd: int, path: str) -> None:
        super().__init__(name="kgtool-spark-output", daemon=True)
        self._fd = fd
        self._path = path

    def run(self) -> None:
        pending = b""
        with open(self._path, "ab") as keep:
            while True:
                try:
                    chunk = os.read(self._fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                keep.write(chunk)
                keep.flush()
                pending += chunk
                cut = pending.rfind(b"\n") + 1
                if cut:
                    _echo_sink(pending[:cut])
                    pending = pending[cut:]
        if pending:
            _echo_sink(pending)
        os.close(self._fd)


def _log_python_side_to(path: str) -> None:
    """py4j reports a JVM that stopped answering with ``logging.exception`` on the root logger,
    which, with logging unconfigured, prints a traceback on stderr: send the root logger's
    records to the captured output instead (only when nobody configured logging)."""
    import logging

    root = logging.getLogger()
    if not root.handlers:
        handler = logging.FileHandler(path, mode="a", encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s (Python): %(message)s"))
        root.addHandler(handler)


def _launch(master: str, settings: dict[str, str], log_level: str) -> Any:
    """Start the driver JVM with its output where ``log_level`` says, and its SparkContext."""
    global launched
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    spark_conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(APP_NAME)
    spark_conf.setAll(settings.items())
    launch = launched = Launch(master=master, settings={"spark.master": master, **settings})
    if normalize_log_level(log_level) == "OFF":
        fd, path = tempfile.mkstemp(prefix="kgtool-spark-", suffix=".log")
        os.close(fd)
        launch.output_path = path
        atexit.register(launch._cleanup)
        _log_python_side_to(path)
        with open(path, "ab") as out:  # O_APPEND: the JVM and Python's logging both append
            popen_kwargs: dict[str, Any] = {"stdout": out, "stderr": out}
            gateway = launch_gateway(spark_conf, popen_kwargs=popen_kwargs)
    else:
        # Spark's lines on kgtool's stderr (the JVM's stdout too, so that stdout stays ours),
        # through a pipe copied by a thread that also keeps them in the file a failure is
        # explained from: a JVM that exits at start is then explained at every level.
        fd, path = tempfile.mkstemp(prefix="kgtool-spark-", suffix=".log")
        os.close(fd)
        launch.output_path = path
        atexit.register(launch._cleanup)
        read_end, write_end = os.pipe()
        launch.echo = _Echo(read_end, path)
        launch.echo.start()  # reading before the JVM starts: it never blocks on a full pipe
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": write_end, "stderr": write_end})
        finally:
            os.close(write_end)  # the JVM holds its own copy: the pipe ends when it exits
    launch.proc = getattr(gateway, "proc", None)
    SparkContext(conf=spark_conf, gateway=gateway)


def quiet_submitted_jvm(level: str) -> bool:
    """Under ``spark-submit`` the driver JVM is already running, logging at Spark's default INFO
    (thousands of lines): reconfigure its Log4j 2 with kgtool's configuration at ``level``
    (``OFF``: nothing; the job's failures are reported as one line anyway) before the
    SparkContext starts, through the JVM that PySpark's gateway reaches. Left alone when the
    submitting user named a configuration file (``-Dlog4j2.configurationFile``, as for
    :func:`merge_java_options`). Returns whether kgtool's configuration was applied.

    Only what the JVM prints before Python runs stays (spark-submit's own start: the JVM's
    incubator-module warning, Spark's default-profile notice and its hostname warning)."""
    from pyspark import SparkContext

    SparkContext._ensure_initialized()  # the gateway to spark-submit's JVM; no context yet
    jvm = SparkContext._jvm
    system = jvm.java.lang.System
    if system.getProperty("log4j2.configurationFile") or system.getProperty("log4j.configurationFile"):
        return False
    config = log4j2_config_path()
    system.setProperty(LEVEL_PROPERTY, normalize_log_level(level))
    # spark-submit reset Spark's logging for the application: the SparkContext's first log line
    # would load Spark's default profile over ours. Let Spark initialize it now, silently
    # (Logging.initializeLogIfNecessary, as PythonGatewayServer does), then replace it.
    spark_logging = getattr(getattr(jvm.org.apache.spark, "SparkContext$"), "MODULE$")  # a Logging
    spark_logging.initializeLogIfNecessary(False, True)
    jvm.org.apache.logging.log4j.core.config.Configurator.reconfigure(jvm.java.io.File(config).toURI())
    return True


def get_session(master: str = "local[*]", conf: dict[str, str] | None = None, log_level: str = "OFF") -> Any:
    """The active SparkSession (under spark-submit), or a new one for ``master``.

    Defaults, each overridable with ``conf``: UTC session time zone; for local masters UI off
    and 8 shuffle partitions; the current Python for the workers. ``log_level`` (OFF, ERROR,
    WARN, INFO, DEBUG) is what of Spark's output reaches stderr (see the module doc); it applies
    only to a JVM started here.
    """
    conf = dict(conf or {})
    level = normalize_log_level(log_level)
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if not under_submit:
        check_java()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import warnings

    # PySpark 4.x warns on pandas 3 at import; kgtool does not use pandas conversions.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(APP_NAME)
    if not under_submit:
        builder = builder.master(master)
    defaults: dict[str, str] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
    }
    if under_submit and SparkContext._active_spark_context is None:
        try:
            quiet_submitted_jvm(level)
        except Exception:  # noqa: BLE001 - another Spark's internals: fall back on its public setting
            # spark.log.level (Spark 3.5+) applies once the SparkContext has logged its first lines.
            defaults["spark.log.level"] = "ERROR" if level == "OFF" else level
    if master.startswith("local") and not under_submit:  # spark-submit's master is its own
        # Spark's 200 shuffle partitions are 200 Python tasks for a few cores, and a laptop
        # run needs no web UI; a cluster keeps its defaults (or --conf).
        defaults["spark.sql.shuffle.partitions"] = "8"
        defaults["spark.ui.enabled"] = "false"
    settings = {**defaults, **conf}
    start_jvm = not under_submit and SparkContext._active_spark_context is None
    if start_jvm:
        settings = logging_settings(master, settings, level)
    for k, v in settings.items():
        builder = builder.config(k, v)
    try:
        if start_jvm:
            _launch(master, settings, level)
        return builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - the JVM failed to start: say so in one line
        from kgtool.spark.failures import startup_problem

        if start_jvm and launched is not None:
            launched.settle()
        reason = startup_problem(exc, launched.output_tail() if (start_jvm and launched) else "")
        raise EnvironmentProblem(f"spark-audit: cannot start Spark ({master}): {reason}") from None
