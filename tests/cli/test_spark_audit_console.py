"""``kgtool spark-audit`` as a person meets it: the console at 80 columns, the progress on a
terminal, Spark's start-up failures in one line, and ``spark-submit kgtool/spark/job.py``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli import render
from kgtool.cli.main import app
from kgtool.spark import failures
from kgtool.spark.progress import SparkProgress, StageWatcher, snapshot

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


# --- the shared formatters ------------------------------------------------------------------


def test_count_and_iso_ms():
    assert [render.count(n) for n in (0, 7, 7482, 209717781, None)] == ["0", "7", "7,482", "209,717,781", "-"]
    assert render.iso_ms(1717171201000) == "2024-05-31T16:00:01.000Z"
    assert render.iso_ms(1717171201007) == "2024-05-31T16:00:01.007Z"
    assert render.iso_ms(0) == "1970-01-01T00:00:00.000Z"
    assert render.iso_ms(-1) == "-" and render.iso_ms(None) == "-"  # Kafka's "no timestamp"
    assert render.iso_ms(1 << 62) == str(1 << 62)  # past year 9999: shown as is, not raised


def test_path_tail_keeps_whole_names():
    path = "/var/lib/kafka/data/__consumer_offsets-7/00000000000000000000.log"
    assert render.path_tail(path, 100) == path
    assert render.path_tail(path, 58) == "…/kafka/data/__consumer_offsets-7/00000000000000000000.log"
    assert render.path_tail(path, 57) == "…/data/__consumer_offsets-7/00000000000000000000.log"
    assert render.path_tail(path, 50) == "…/__consumer_offsets-7/00000000000000000000.log"
    assert render.path_tail(path, 10) == "…/00000000000000000000.log"  # the file name whole, even wider
    for width in range(1, 80):
        shown = render.path_tail(path, width)
        assert path.endswith(shown.removeprefix("…"))
        assert shown == path or shown.startswith("…/")


def test_bar_unit_scales_to_the_largest_count():
    assert [render.bar_unit(p, 10) for p in (1, 7, 10, 11, 20, 21, 50, 51, 100, 101, 4_328_194)] == \
        [1, 1, 1, 2, 2, 5, 5, 10, 10, 20, 500_000]
    for peak in range(1, 3000, 7):
        unit = render.bar_unit(peak, 10)
        assert peak <= unit * 10 and (unit == 1 or peak > unit * 10 // 2.5 - 1)


# --- the console at 80 columns (the summary faked: no Spark) ---------------------------------


SOURCE = "/var/lib/kafka/data/a-rather-long-mount-point/__consumer_offsets-7/00000000000000000000.log"


def _finding(rule, count, **kw):
    return {"rule": rule, "group": "orders-app", "log_partition": 7, "topic": "orders", "partition": 0,
            "offset": 1200, "record_offset": 13, "position": 1997, "source": SOURCE, "timestamp": 1717171213000,
            "generation_id": 2, "previous_offset": 1500, "previous_record_offset": 9, "previous_position": 1500,
            "previous_generation_id": 1, "message": f"{rule}: " + "a long explanation " * 6, **kw}


def _fake_audit(monkeypatch, by_rule, records=4_328_194):
    from kgtool.spark import job, session

    def fake_run(_spark, files, options, **kw):
        findings = [_finding(r, n) for r, n in by_rule.items()]
        coverage = [{"log_partition": 7, "records": records, "first_offset": 0, "last_offset": records - 1,
                     "offsets_absent": 1234, "first_timestamp": 1717171201000, "last_timestamp": 1717172000000,
                     "groups": 8, "problems": 0}]
        return job.AuditSummary(out=None, files=1, bytes=209_717_781, splits=1, coverage=coverage,
                                counts={"generations": 32, "members": 53, "commits": 12_345, "findings": 0,
                                        "offsets": 15},
                                groups=8, findings_by_rule=dict(by_rule), worst_groups=[], findings=findings,
                                problems=[], problem_count=0, options={"until": None})

    monkeypatch.setattr(session, "get_session", lambda *a, **k: None)
    monkeypatch.setattr(job, "run_audit", fake_run)


def _invoke_80(tmp_path):
    log = tmp_path / "__consumer_offsets-7"
    log.mkdir(exist_ok=True)
    (log / "00000000000000000000.log").write_bytes(b"")
    return runner.invoke(app, ["spark-audit", str(log)], env={"COLUMNS": "80"})


def test_console_at_80_columns(monkeypatch, tmp_path):
    _fake_audit(monkeypatch, {"zombie": 1, "rewind": 1, "orphan": 1})
    result = _invoke_80(tmp_path)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 80, "\n".join(ln for ln in lines if len(ln) > 80)
    entries = lines[next(i for i, ln in enumerate(lines) if ln == "findings") + 1:]
    assert entries and all(ln == ln.rstrip() for ln in entries), "trailing blanks"
    out = " ".join(result.stdout.split())  # words as Rich wraps them
    # Counts with separators; offsets and byte positions plain (as Kafka's tools print them).
    assert "209,717,781 bytes" in out and "12,345 commit record(s)" in out and "4,328,194" in out
    assert "0..4328193" in out and "1,234 absent" in out
    cov_header = next(ln for ln in lines if "part." in ln)
    assert "records" in cov_header and "problems" not in cov_header  # no problems: no column for them
    # Times in ISO-8601 UTC, never folded mid-stamp.
    assert "2024-05-31T16:00:01.000Z" in out and "2024-05-31T16:13:20.000Z" in out
    # Each finding: its time first, then the message, then where, the path cut at a '/' from the left.
    (head,) = [ln for ln in lines if ln.startswith("2024-05-31T16:00:13.000Z zombie orders-app")]
    where = [ln for ln in lines if "offset 13, byte 1997" in ln]
    assert where and all(ln == "    at …/__consumer_offsets-7/00000000000000000000.log: offset 13, byte 1997"
                         for ln in where), where
    # The bar column has a header, and with every count at 1 each bar is one block, not full.
    header = next(ln for ln in lines if "rule" in ln and "findings" in ln and "meaning" in ln)
    assert "█ = 1" in header
    bars = [re.search(r"│ (█+)\s*│", ln).group(1) for ln in lines if re.match(r"│ (zombie|rewind|orphan) ", ln)]
    assert bars == ["█", "█", "█"]
    assert "kgtool: 3 findings reported" in result.stderr


def test_bars_scaled_to_the_largest_count(monkeypatch, tmp_path):
    _fake_audit(monkeypatch, {"rewind": 3, "zombie": 40, "orphan": 1})
    result = _invoke_80(tmp_path)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    header = next(ln for ln in lines if "rule" in ln and "meaning" in ln)
    assert "█ = 5" in header  # 40 in 10 blocks of 5
    bars = {m.group(1): m.group(2) for ln in lines if (m := re.match(r"│ (\w[\w-]*)\s+│\s+\d+ │ (\S*)", ln))}
    eighths = " ▏▎▍▌▋▊▉"
    assert bars["zombie"] == "█" * 8  # 40 = 8 x 5
    assert len(bars["rewind"]) == len(bars["orphan"]) == 1  # 3 and 1: less than one block of 5
    assert 0 < eighths.index(bars["orphan"]) < eighths.index(bars["rewind"])
    assert "kgtool: 44 findings reported" in result.stderr


# --- Spark's progress, from the status tracker ------------------------------------------------


class _Tracker:
    """A StatusTracker answering from a script of (active job ids, {stage: (tasks, done, active,
    failed)}); step() moves to the next state (the last one stays)."""

    def __init__(self, script):
        self.script = script
        self.i = 0

    def step(self):
        self.i = min(self.i + 1, len(self.script) - 1)

    def getActiveJobsIds(self):
        return list(self.script[self.i][0])

    def getJobInfo(self, job_id):
        from pyspark.status import SparkJobInfo

        return SparkJobInfo(job_id, list(self.script[self.i][1]), "RUNNING")

    def getStageInfo(self, stage_id):
        from pyspark.status import SparkStageInfo

        t, d, a, f = self.script[self.i][1][stage_id]
        return SparkStageInfo(stage_id, 0, "collect at job.py:134", t, a, d, f)


def test_snapshot_counts_tasks_and_finished_jobs():
    seen: set[int] = set()
    tracker = _Tracker([((0,), {0: (4, 1, 2, 0)}), ((), {}), ((1,), {1: (2, 0, 1, 1)})])
    p = snapshot(tracker, seen)
    assert (p.jobs_done, p.active_jobs, p.tasks, p.completed, p.active, p.failed) == (0, (0,), 4, 1, 2, 0)
    tracker.step()
    p = snapshot(tracker, seen)
    assert (p.jobs_done, p.active_jobs, p.stages) == (1, (), ())
    tracker.step()
    p = snapshot(tracker, seen)
    assert (p.jobs_done, p.active_jobs, p.tasks, p.completed, p.failed) == (1, (1,), 2, 0, 1)


def test_stage_watcher_reports_changes_and_stops():
    import threading

    tracker = _Tracker([((), {}), ((0,), {0: (2, 0, 1, 0)}), ((0,), {0: (2, 1, 1, 0)}), ((0,), {0: (2, 2, 0, 0)})])

    class Spark:
        class sparkContext:  # noqa: N801 - the attribute PySpark has
            @staticmethod
            def statusTracker():
                return tracker

    seen: list[SparkProgress] = []
    got_all = threading.Event()

    def on_update(p):
        seen.append(p)
        tracker.step()
        if p.completed == 2:
            got_all.set()

    with StageWatcher(Spark, on_update, interval=0.01):
        assert got_all.wait(10)
    assert [(p.completed, p.tasks) for p in seen] == [(0, 0), (0, 2), (1, 2), (2, 2)]  # each change once


def _script_available():
    return shutil.which("script") is not None


@pytest.mark.spark
@pytest.mark.skipif(not _script_available(), reason="needs script(1) for a terminal")
def test_progress_on_a_terminal_and_cleared(tmp_path, monkeypatch):
    """On a terminal (script(1) gives stderr one), Spark's job shows as a progress line with its
    tasks done/total, then is cleared; stdout, redirected, gets only the tables."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    out, typescript = tmp_path / "out.txt", tmp_path / "typescript"
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    cmd = f"{sys.executable} -m kgtool spark-audit --master 'local[2]' > {out}"
    proc = subprocess.run(["script", "-qec", cmd, str(typescript)], env=env, capture_output=True, timeout=600)
    assert proc.returncode == 1, typescript.read_text(errors="replace")[-2000:]
    screen = typescript.read_text(errors="replace")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    assert "spark-audit: starting Spark (local[2]" in plain
    assert re.search(r"spark-audit: Spark job 1, stage \d+ .*\d/2 tasks", plain), plain[-3000:]
    assert "INFO" not in plain and "WARN" not in plain  # the JVM's lines stay off the terminal
    # Cleared: after the last progress frame, the line is erased and only kgtool's last line follows.
    tail = screen[screen.rindex("spark-audit: "):].split("Script done")[0]  # script(1)'s trailer
    assert "\x1b[2K" in tail and tail.rstrip().endswith("kgtool: 9 findings reported")
    assert "findings by rule" in out.read_text() and "spark-audit: Spark job" not in out.read_text()


# --- Spark failing to start: one line with the cause and the fix ------------------------------


YARN_OUTPUT = """WARNING: Using incubator modules: jdk.incubator.vector
26/11/24 00:04:26 WARN Utils: Your hostname, vm, resolves to a loopback address: 127.0.0.1; using 192.0.2.2 instead (on interface eth0)
Exception in thread "main" org.apache.spark.SparkException: When running with master 'yarn' either HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment.
\tat org.apache.spark.deploy.SparkSubmitArguments.error(SparkSubmitArguments.scala:670)
\tat org.apache.spark.deploy.SparkSubmit.main(SparkSubmit.scala)
"""
GATEWAY_EXITED = RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")


@pytest.mark.parametrize("exc, output, expected", [
    (GATEWAY_EXITED, YARN_OUTPUT,
     "When running with master 'yarn' either HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment: "
     "set HADOOP_CONF_DIR (or YARN_CONF_DIR) to the directory holding the cluster's core-site.xml and yarn-site.xml"),
    (GATEWAY_EXITED, 'Exception in thread "main" org.apache.spark.SparkException: Master must either be yarn or '
                     "start with spark, k8s, or local\n",
     "Master must either be yarn or start with spark, k8s, or local: --master takes local[N], spark://HOST:PORT, "
     "yarn or k8s://https://HOST:PORT"),
    (GATEWAY_EXITED, "Invalid maximum heap size: -Xmx1x\nError: Could not create the Java Virtual Machine.\n",
     "Invalid maximum heap size: -Xmx1x: spark.driver.memory takes a JVM size such as 2g or 2048m "
     "(--conf spark.driver.memory=2g)"),
    (RuntimeError("An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
                  ": java.lang.IllegalStateException: Cannot call methods on a stopped SparkContext.\n\tat x.y(Z.java:1)"),
     "26/11/24 00:14:11 ERROR StandaloneSchedulerBackend: Application has been killed. Reason: All masters are "
     "unresponsive! Giving up.\n",
     "Application has been killed. Reason: All masters are unresponsive! Giving up: no Spark master answered at "
     "the --master URL: check the host and port (spark://HOST:7077) and that the master is running"),
    (RuntimeError("An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
                  ": io.fabric8.kubernetes.client.KubernetesClientException: An error has occurred.\n"
                  "\tat io.fabric8.X.y(X.java:1)\nCaused by: java.io.IOException: Connection refused: /127.0.0.1:1\n"
                  "\t... 20 more\nCaused by: java.net.ConnectException: Connection refused\n"), "",
     "io.fabric8.kubernetes.client.KubernetesClientException: An error has occurred. (caused by "
     "java.io.IOException: Connection refused: /127.0.0.1:1)"),
])
def test_startup_problem_names_the_cause_and_the_fix(exc, output, expected):
    assert failures.startup_problem(exc, output) == expected


def _yarn_without_conf(run_process, monkeypatch, *args):
    for var in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "PYSPARK_GATEWAY_PORT"):
        monkeypatch.delenv(var, raising=False)
    return run_process(["spark-audit", "hdfs://nn/backups/kafka/", "--master", "yarn", *args], timeout=300)


@pytest.mark.spark
@pytest.mark.parametrize("args", [[], ["--verbose"]])
def test_yarn_without_hadoop_conf_dir_says_so(run_process, monkeypatch, args):
    """The real spark-submit check; with --verbose too, where Spark's output goes to the terminal
    (copied, and kept to explain the failure)."""
    proc = _yarn_without_conf(run_process, monkeypatch, *args)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    last = err.splitlines()[-1]
    assert last == ("kgtool: spark-audit: cannot start Spark (yarn): When running with master 'yarn' either "
                    "HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment: set HADOOP_CONF_DIR (or "
                    "YARN_CONF_DIR) to the directory holding the cluster's core-site.xml and yarn-site.xml")
    if not args:
        assert err.count("\n") == 1, err  # quiet: that line only
    else:
        assert "Exception in thread \"main\"" in err  # Spark's own output, asked for


# --- spark-submit kgtool/spark/job.py: the CLI's options and output, quiet ---------------------


def _spark_submit():
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


#: What spark-submit's JVM prints before the Python driver (and kgtool) starts.
BEFORE_PYTHON = re.compile(r"^(WARNING: Using incubator modules|Using Spark's default log4j profile|"
                           r"\S+ \S+ WARN Utils: )")


def _submit(tmp_path, *args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "COLUMNS": "100"}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    cmd = [str(_spark_submit()), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
           str(REPO / "kgtool" / "spark" / "job.py"), *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, timeout=timeout, cwd=tmp_path)
    return proc, proc.stdout.decode(), proc.stderr.decode()


@pytest.mark.spark
def test_spark_submit_is_quiet_and_prints_the_cli_tables(tmp_path):
    plan = tmp_path / "plan.csv"
    proc, out, err = _submit(tmp_path, "--group", "^orders-app$", "--reset-plan", str(plan))
    assert proc.returncode == 1, err[-3000:]
    after_start = [ln for ln in err.splitlines() if not BEFORE_PYTHON.match(ln)]
    assert after_start[-1] == "kgtool: 1 finding reported", err[-3000:]
    assert " INFO " not in err and len(after_start) <= 2, err[-3000:]  # + the reset plan's note
    assert "coverage (what the log still holds)" in out and "findings by rule" in out
    assert "zombie orders-app orders-0 offset 1200 (previous 1500) gen 2" in out
    assert "kgtool:" not in out  # errors on spark-submit's stderr, not in the data
    # The plan of the pure-Python audit of the same sample (the oracle the Spark job is held to).
    from kgtool.offsets.audit import AuditOptions, audit_entries
    from kgtool.offsets.reset_plan import plan_text
    from kgtool.offsets.samples import sample_scripts

    want = audit_entries([e for s in sample_scripts() for e in s.entries()],
                         options=AuditOptions(group_pattern="^orders-app$")).tables["offsets"]
    assert want and plan.read_text() == plan_text([(r["group"], r["topic"], r["partition"], r["offset"]) for r in want])


@pytest.mark.spark
def test_spark_submit_json_and_usage_errors(tmp_path):
    proc, out, err = _submit(tmp_path, "--format", "json")
    assert proc.returncode == 1, err[-3000:]
    assert json.loads(out)["findings_by_rule"]["zombie"] == 1  # stdout: the document only
    proc, out, err = _submit(tmp_path, "--storm", "1/10m")
    assert proc.returncode == 2, err[-3000:]
    assert err.splitlines()[-1].startswith("kgtool: --storm: expected N/WINDOW")
