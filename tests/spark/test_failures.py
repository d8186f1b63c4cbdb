"""Spark failures -> one kgtool line (kgtool/spark/failures.py), and the logging setup of the
driver JVM (kgtool/spark/session.py).

The texts under failure_texts/ are real: what PySpark 4.3 raised (``str`` of the exception, plus
the JVM stack trace PySpark keeps) for jobs made to fail on purpose by failure_texts/capture.py,
on local[1] and on local-cluster[1,1,1024] (separate executor JVMs). The live tests below make
the shared local session fail the same ways and check the translation end to end; the driver
OOM runs in a subprocess with a 300 MiB heap.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgtool.errors import DecodeError, ExitCode, InputError, KgtoolError, SparkFailure
from kgtool.spark import failures, session
from kgtool.spark.failures import SparkState, explain, explain_text, last_python_exception, summary

TEXTS = Path(__file__).with_name("failure_texts")
REPO = Path(__file__).resolve().parents[2]

LOCAL = SparkState(master="local[1]", conf={"spark.master": "local[1]"})
CLUSTER = SparkState(master="local-cluster[1,1,1024]", conf={"spark.master": "local-cluster[1,1,1024]"})


def _text(name: str) -> str:
    return (TEXTS / f"{name}.txt").read_text(encoding="utf-8").split("\n", 1)[1]


INPUT_MESSAGE = "seg/00000000000000000000.log: byte 4213: length 812 exceeds 301 bytes remaining"

# name, state, connection lost, expected class, exact message
CASES = [
    ("task_input_error_collect", LOCAL, False, InputError, INPUT_MESSAGE),
    ("task_input_error_tolocaliterator", LOCAL, False, InputError, INPUT_MESSAGE),
    ("task_input_error_write_parquet", LOCAL, False, InputError, INPUT_MESSAGE),
    ("task_input_error_applyinarrow", LOCAL, False, InputError, INPUT_MESSAGE),
    ("task_input_error_rdd", LOCAL, False, InputError, INPUT_MESSAGE),
    ("task_decode_error_collect", LOCAL, False, DecodeError, "a.log: byte 17 (batch@0.records[1].key): bad varint"),
    (
        "task_group_too_large", LOCAL, False, InputError,
        "group G has 123456789 records, too large for one task's memory: raise spark.executor.pyspark.memory",
    ),
    (
        "task_memoryerror", LOCAL, False, SparkFailure,
        "spark-audit: a Spark Python worker ran out of memory (MemoryError): this machine is out of memory: "
        "run fewer tasks at once (--master local[1])",
    ),
    (
        "task_memoryerror_alloc",
        SparkState(master="local[2]", conf={"spark.executor.pyspark.memory": "512m"}), False, SparkFailure,
        "spark-audit: a Spark Python worker ran out of memory (MemoryError): raise spark.executor.pyspark.memory "
        "(now 512m): --conf spark.executor.pyspark.memory=1g",
    ),
    (
        "worker_os_exit_local", LOCAL, False, SparkFailure,
        "spark-audit: a Spark Python worker died (killed, e.g. by the kernel's out-of-memory killer, or crashed): "
        "if this machine ran out of memory, run fewer tasks at once (--master local[1])",
    ),
    (
        "worker_sigkill_local", LOCAL, False, SparkFailure,
        "spark-audit: a Spark Python worker died (killed, e.g. by the kernel's out-of-memory killer, or crashed): "
        "if this machine ran out of memory, run fewer tasks at once (--master local[1])",
    ),
    (
        "worker_sigkill_local_write", LOCAL, False, SparkFailure,
        "spark-audit: a Spark Python worker died (killed, e.g. by the kernel's out-of-memory killer, or crashed): "
        "if this machine ran out of memory, run fewer tasks at once (--master local[1])",
    ),
    (
        "worker_sigkill_local_cluster", CLUSTER, False, SparkFailure,
        "spark-audit: a Spark Python worker died (killed, e.g. by the kernel's out-of-memory killer, or crashed; "
        "task failed 4 times): raise spark.executor.memoryOverhead (now 384m): --conf spark.executor.memoryOverhead=768m",
    ),
    (
        "executor_sigkill_local_cluster", CLUSTER, False, SparkFailure,
        "spark-audit: a Spark executor was killed for exceeding its memory limit (executor 1: Command exited with "
        "code 137, task failed 2 times): raise spark.executor.memoryOverhead (now 384m): "
        "--conf spark.executor.memoryOverhead=768m",
    ),
    (
        "executor_heap_oom_local_cluster",
        SparkState(master="local-cluster[1,1,1024]", conf={"spark.executor.memory": "1024m"}), False, SparkFailure,
        "spark-audit: a Spark executor ran out of memory (java.lang.OutOfMemoryError: Java heap space, executor 2, "
        "task failed 2 times): raise spark.executor.memory (now 1024m): --conf spark.executor.memory=2g",
    ),
    (
        "driver_oom_local",
        SparkState(master="local[1]", conf={"spark.driver.memory": "300m"}, jvm_exit=52,
                   output=(TEXTS / "driver_oom_local.jvm-output").read_text(encoding="utf-8")),
        True, SparkFailure,
        "spark-audit: Spark's driver JVM ran out of memory (java.lang.OutOfMemoryError: Java heap space) "
        "(in local mode it also runs the tasks): raise spark.driver.memory (now 300m): "
        "--conf spark.driver.memory=600m",
    ),
    (
        "gateway_killed_during_job", SparkState(master="local[2]", jvm_exit=-9), True, SparkFailure,
        "spark-audit: Spark's driver JVM was killed (SIGKILL), most likely by the kernel's out-of-memory killer: "
        "this machine cannot hold spark.driver.memory (now 1g) and the Python workers; lower it or run fewer "
        "tasks at once (--master local[1])",
    ),
    (
        "gateway_killed_between_calls", SparkState(), True, SparkFailure,
        "spark-audit: the connection to Spark's driver JVM was lost (did it run out of memory or get killed?): "
        "raise spark.driver.memory (now 1g): --conf spark.driver.memory=2g",
    ),
]


@pytest.mark.parametrize("name, state, lost, cls, message", CASES, ids=[c[0] for c in CASES])
def test_real_failure_texts(name, state, lost, cls, message):
    err = explain_text(_text(name), state, connection_lost=lost)
    assert type(err) is cls
    assert str(err) == message
    assert "\n" not in str(err)
    assert err.exit_code == (ExitCode.SPARK_RESOURCES if cls is SparkFailure else ExitCode.USAGE)


def test_a_bug_in_a_task_is_not_explained_but_summarized():
    text = _text("task_keyerror_bug")
    assert explain_text(text, LOCAL) is None
    assert last_python_exception(text) == ("KeyError", "'missing'")


def test_made_up_texts_for_what_was_not_provoked_here():
    """Texts in the shape Spark prints them (YARN, Kubernetes, result size, GC, retries)."""
    head = ("An error occurred while calling o91.collectToPython.\n: org.apache.spark.SparkException: Job aborted "
            "due to stage failure: Task 3 in stage 2.0 failed 4 times, most recent failure: Lost task 3.3 in stage "
            "2.0 (TID 17) (worker-7.example executor 5): ")
    yarn = SparkState(master="yarn", conf={"spark.executor.memory": "4g"})
    err = explain_text(head + "ExecutorLostFailure (executor 5 exited caused by one of the running tasks) Reason: "
                       "Container killed by YARN for exceeding physical memory limits. 4.5 GB of 4.4 GB physical "
                       "memory used. Consider boosting spark.executor.memoryOverhead.\nDriver stacktrace:", yarn)
    assert str(err).endswith("raise spark.executor.memoryOverhead (now 410m): --conf spark.executor.memoryOverhead=820m")
    k8s = explain_text(head + "ExecutorLostFailure (executor 5 exited caused by one of the running tasks) Reason: "
                       "The executor with id 5 exited with exit code 137(SIGKILL, possible container OOM).", yarn)
    assert "killed for exceeding its memory limit" in str(k8s)
    exited52 = explain_text(head + "ExecutorLostFailure (executor 5 exited caused by one of the running tasks) "
                            "Reason: Command exited with code 52", yarn)
    assert str(exited52).endswith("raise spark.executor.memory (now 4g): --conf spark.executor.memory=8g")
    heartbeat = explain_text(head + "ExecutorLostFailure (executor 5 exited caused by one of the running tasks) "
                             "Reason: Executor heartbeat timed out after 126422 ms", yarn)
    assert "stopped responding" in str(heartbeat) and "spark.executor.memory=8g" in str(heartbeat)
    gc = explain_text(head + "java.lang.OutOfMemoryError: GC overhead limit exceeded\n\tat java.util.Arrays", yarn)
    assert str(gc) == ("spark-audit: a Spark executor ran out of memory (java.lang.OutOfMemoryError: GC overhead "
                       "limit exceeded, executor 5, task failed 4 times): raise spark.executor.memory (now 4g): "
                       "--conf spark.executor.memory=8g")
    io = explain_text(head + "java.io.IOException: Connection reset by peer\n\tat sun.nio", yarn)
    assert str(io) == ("spark-audit: a Spark task failed 4 times, the limit spark.task.maxFailures (last: "
                       "java.io.IOException: Connection reset by peer): if the failures are transient, raise "
                       "spark.task.maxFailures (now 4): --conf spark.task.maxFailures=8")
    result = explain_text("An error occurred while calling o12.collectToPython.\n: org.apache.spark.SparkException: "
                          "Job aborted due to stage failure: Total size of serialized results of 40 tasks "
                          "(1031.2 MiB) is bigger than spark.driver.maxResultSize (1024.0 MiB)\n\tat x", yarn)
    assert str(result).endswith("raise spark.driver.maxResultSize (now 1g): --conf spark.driver.maxResultSize=2g")
    driver = explain_text("An error occurred while calling o45.collectToPython.\n: java.lang.OutOfMemoryError: "
                          "Java heap space\n\tat java.base/java.util.Arrays.copyOf", yarn)
    assert str(driver) == ("spark-audit: Spark's driver JVM ran out of memory (java.lang.OutOfMemoryError: Java "
                           "heap space): raise spark.driver.memory (now 1g): --conf spark.driver.memory=2g")


def test_chained_traceback_takes_the_outermost_exception():
    text = ("An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
            '  File "x.py", line 1, in f\n    int("x")\nValueError: invalid literal\n\n'
            "The above exception was the direct cause of the following exception:\n\n"
            'Traceback (most recent call last):\n  File "x.py", line 3, in g\n    raise InputError(m)\n'
            "kgtool.errors.InputError: a.log: byte 3: bad\n SQLSTATE: 38000\n\tat org.apache.spark.X")
    err = explain_text(text, LOCAL)
    assert type(err) is InputError and str(err) == "a.log: byte 3: bad"


def test_unknown_kgtool_error_class_is_still_a_kgtool_error():
    err = explain_text("Traceback (most recent call last):\n  File \"x\", line 1\nkgtool.future.NewError: boom", LOCAL)
    assert type(err) is KgtoolError and str(err) == "boom" and err.exit_code == ExitCode.USAGE


def test_non_spark_exceptions_are_left_alone():
    assert explain(ValueError("x")) is None
    own = InputError("mine")
    assert explain(own) is own


def test_startup_problem_names_the_jvm_complaint():
    out = ("WARNING: Using incubator modules: jdk.incubator.vector\nInvalid maximum heap size: -Xmx1x\n"
           "Error: Could not create the Java Virtual Machine.\nError: A fatal exception has occurred. Program will exit.\n")
    exc = RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")
    assert failures.startup_problem(exc, out) == (
        "Invalid maximum heap size: -Xmx1x: spark.driver.memory takes a JVM size such as 2g or 2048m "
        "(--conf spark.driver.memory=2g)")


# --- the driver JVM's logging -------------------------------------------------------------


def test_java_options_merge_with_the_users():
    config = session.log4j2_config_path()
    assert Path(config).is_file()
    merged = session.merge_java_options("-XX:+UseG1GC -Dfoo=1", "ERROR", config)
    assert merged == f"-XX:+UseG1GC -Dfoo=1 -Dlog4j2.configurationFile={config} -Dkgtool.spark.logLevel=ERROR"
    own = "-Dlog4j2.configurationFile=/etc/spark/log4j2.properties"
    assert session.merge_java_options(own, "ERROR", config) == own
    assert session.merge_java_options(None, "WARN", "/a b/c.properties") == (
        '"-Dlog4j2.configurationFile=/a b/c.properties" -Dkgtool.spark.logLevel=WARN'
    )


def test_logging_settings_driver_and_executors(monkeypatch, tmp_path):
    (tmp_path / "spark-defaults.conf").write_text(
        "# comment\nspark.driver.extraJavaOptions   -Dfrom.defaults=1\nspark.executor.extraJavaOptions=-Dexec=1\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    local = session.logging_settings("local[2]", {"spark.ui.enabled": "false"}, "OFF")
    assert local["spark.driver.extraJavaOptions"].startswith("-Dfrom.defaults=1 -Dlog4j2.configurationFile=")
    assert local["spark.driver.extraJavaOptions"].endswith("-Dkgtool.spark.logLevel=ERROR")
    assert "spark.executor.extraJavaOptions" not in local  # local: the executors are the driver JVM
    cluster = session.logging_settings("yarn", {"spark.driver.extraJavaOptions": "-Dmine=1"}, "info")
    assert cluster["spark.driver.extraJavaOptions"].startswith("-Dmine=1 -Dlog4j2.configurationFile=")
    assert cluster["spark.driver.extraJavaOptions"].endswith("-Dkgtool.spark.logLevel=INFO")
    assert cluster["spark.executor.extraJavaOptions"].startswith("-Dexec=1 -Dlog4j2.configurationFile=")
    assert cluster["spark.executor.extraJavaOptions"].endswith("-Dkgtool.spark.logLevel=INFO")
    quiet = session.logging_settings("k8s://h:443", {}, "OFF")
    assert quiet["spark.executor.extraJavaOptions"].endswith("-Dkgtool.spark.logLevel=WARN")


def test_log_level_values():
    assert [session.normalize_log_level(x) for x in ("off", "Warn", "warning", "DEBUG")] == ["OFF", "WARN", "WARN", "DEBUG"]
    with pytest.raises(KgtoolError, match="--spark-log-level"):
        session.normalize_log_level("loud")


def test_log4j2_config_reads_the_level_property():
    text = Path(session.log4j2_config_path()).read_text(encoding="utf-8")
    assert "rootLogger.level = ${sys:kgtool.spark.logLevel:-WARN}" in text
    assert "appender.console.target = SYSTEM_ERR" in text
    assert "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer" in text


# --- live: the shared local session made to fail ------------------------------------------


def _fail_in_task(spark, fn):
    df = spark.range(0, 2, 1, 1)

    def run(batches):
        for batch in batches:
            fn()
            yield batch

    with pytest.raises(Exception) as info:
        df.mapInArrow(run, df.schema).collect()
    return info.value


def _raise_input_error():
    from kgtool.errors import InputError as E

    raise E("/data/__consumer_offsets-3/00000000000000000000.log: byte 77: truncated batch")


def _raise_decode_error():
    from kgtool.errors import DecodeError as E

    raise E("bad varint", source="a.log", position=17, context="batch@0.records[1].key")


def _raise_memory_error():
    raise MemoryError


def _exit_worker():
    os._exit(3)


def _bug():
    return {}["missing"]


@pytest.mark.spark
def test_live_kgtool_errors_in_tasks(spark):
    err = explain(_fail_in_task(spark, _raise_input_error))
    assert type(err) is InputError
    assert str(err) == "/data/__consumer_offsets-3/00000000000000000000.log: byte 77: truncated batch"
    err = explain(_fail_in_task(spark, _raise_decode_error))
    assert type(err) is DecodeError and err.exit_code == ExitCode.USAGE
    assert str(err) == "a.log: byte 17 (batch@0.records[1].key): bad varint"


@pytest.mark.spark
def test_live_resource_failures_in_tasks(spark):
    err = explain(_fail_in_task(spark, _raise_memory_error))
    assert type(err) is SparkFailure and "Python worker ran out of memory (MemoryError)" in str(err)
    err = explain(_fail_in_task(spark, _exit_worker))
    assert type(err) is SparkFailure and "Python worker died" in str(err)
    assert spark.range(3).count() == 3  # the session survives both


@pytest.mark.spark
def test_live_bug_in_task_is_one_line_internal_error(spark):
    from kgtool.cli.spark_audit import _spark_error

    exc = _fail_in_task(spark, _bug)
    assert explain(exc) is None
    assert summary(exc) == "KeyError: 'missing' (in a Spark task)"
    launch = session.launched
    try:
        err = _spark_error(exc)
        assert isinstance(err, failures.SparkJobError)
        assert str(err).startswith("KeyError: 'missing' (in a Spark task)")
        if launch is not None and launch.output_path:
            assert f"(Spark's output: {launch.output_path})" in str(err)
    finally:
        if launch is not None:
            launch.keep_output = False


DRIVER_OOM = """
from kgtool.spark.session import get_session
from kgtool.spark.failures import explain
spark = get_session("local[1]", {"spark.driver.memory": "300m", "spark.testing.memory": "536870912"})
try:
    spark.range(0, 30_000_000, 1, 1).selectExpr("id", "repeat('x', 20) s").collect()
except Exception as exc:
    from kgtool.spark import session
    err = explain(exc)
    # the dying JVM may not have exited yet when the message is made (it does not depend on it)
    print(session.launched.exit_status(wait=60), type(err).__name__, err)
"""


@pytest.mark.spark
@pytest.mark.slow
def test_live_driver_oom_in_a_subprocess():
    """A 300 MiB driver heap (spark.testing.memory passes Spark's 450 MiB floor) collecting
    30M rows: the JVM dies with Spark's OOM exit status 52; one line, nothing on stderr."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYSPARK_GATEWAY_PORT", None)
    proc = subprocess.run([sys.executable, "-c", DRIVER_OOM], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "52 SparkFailure spark-audit: Spark's driver JVM ran out of memory (java.lang.OutOfMemoryError: Java heap "
        "space) (in local mode it also runs the tasks): raise spark.driver.memory (now 300m): "
        "--conf spark.driver.memory=600m"
    )
    assert proc.stderr == ""
