"""``spark-audit`` on a real Spark standalone cluster (tests/spark/cluster.py: a master and two
workers on 127.0.0.1, executors in JVMs of their own with their own Python workers), against
``--master local[2]`` on the same inputs: every table must be the same, row for row.

The inputs: the shipped sample, the golden segments (fixtures/offsets, each copied into a
``__consumer_offsets-N`` directory) and a generated log of about 3 MB over 3 partitions
(benchmarks/bench_spark_audit.py's generator), cut into 256 KiB splits: about 20 decoding tasks.

The fault test kills the executor JVM running one decoding task while the task is held
(kgtool/spark/faults.py); Spark retries the task, and the tables must still be identical.
Written against the CLI, spark-submit and the table files only: the job's internals may change.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kgtool.data import sample_path
from kgtool.offsets.tables import LOG_RULES
from tests.offsets.golden import FIXTURES, SCENARIOS
from tests.spark.cluster import JVM_OPTS, REPO, Cluster, executor_jvm_of, jvm_arg, spark_home, tail

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TABLES = ["generations", "members", "commits", "findings", "coverage", "offsets", "rebalances", "groups", "group_members",
          "lag", "lag_episodes"]
SPLIT_SIZE = "256KiB"
GENERATED_PARTITIONS = (30, 31, 32)
# What a cluster run is given besides the master: no driver web UI (ports are shared on this
# machine), and 4 shuffle partitions (kgtool sets them only for local masters; Spark's 200
# would be 200 Python tasks per shuffle for 2 one-core executors).
CLUSTER_CONF = ["--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4"]
RUN_TIMEOUT = 300
SAMPLE_RULES = list(LOG_RULES)  # the shipped sample fires every rule of the log alone once (no data partitions)


# ---- inputs and the local reference --------------------------------------------------------
def _generator():
    spec = importlib.util.spec_from_file_location("_bench_spark_audit", REPO / "benchmarks" / "bench_spark_audit.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("cluster-inputs")
    logs = root / "logs"
    partitions = [7, 23]  # the sample's
    for scenario in SCENARIOS:
        part = json.loads((FIXTURES / scenario / "script.json").read_text())["partition"]
        d = logs / f"__consumer_offsets-{part}"
        d.mkdir(parents=True)
        shutil.copy(FIXTURES / scenario / "00000000000000000000.log", d)
        partitions.append(part)
    gen = _generator()
    for part in GENERATED_PARTITIONS:
        # 1 MiB per partition in segments of 400 KiB: 3 segments each
        gen.generate_partition(str(logs / f"__consumer_offsets-{part}"), part, 1 << 20, 400 << 10, groups=40)
        partitions.append(part)
    assert len(set(partitions)) == len(partitions), partitions
    return [str(sample_path("sample_offsets")), str(logs)]


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory):
    """``kgtool spark-audit INPUTS --master local[2] --out DIR`` (a process of its own, C1-only
    JVM as on the cluster): its tables and its JSON summary."""
    tmp = tmp_path_factory.mktemp("reference")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    cmd = [sys.executable, "-m", "kgtool", "spark-audit", *inputs, "--master", "local[2]", "--out", str(tmp / "audit"),
           "--split-size", SPLIT_SIZE, "--format", "json", "--conf", f"spark.driver.extraJavaOptions={JVM_OPTS}"]
    proc, stdout, stderr = _start(cmd, env, tmp)
    _finish(proc, RUN_TIMEOUT)
    assert proc.returncode == 1, tail(stderr, 40)  # the sample's findings
    tables = read_tables(tmp / "audit")
    # The inputs are what they should be: every partition, the generated volume, the sample's findings.
    cov = {r["log_partition"]: r for r in tables["coverage"]}
    assert sorted(cov) == [5, 7, 12, 23, *GENERATED_PARTITIONS]
    assert all(cov[p]["segments"] == 3 and cov[p]["records"] > 15_000 for p in GENERATED_PARTITIONS)
    assert len(tables["commits"]) > 40_000
    assert {r["rule"] for r in tables["findings"]} >= {"rewind", "zombie", "orphan", "expiring"}
    return tables, summary_of(stdout.read_text())


def summary_of(stdout: str) -> dict:
    summary = json.loads(stdout)
    summary.pop("out")
    return summary


# ---- tables ----------------------------------------------------------------------------------
def read_tables(out: Path) -> dict[str, list[dict]]:
    import pyarrow.parquet as pq

    assert sorted(p.name for p in out.iterdir()) == sorted(TABLES)
    tables = {}
    for name in TABLES:
        t = pq.read_table(str(out / name))
        cols = t.schema.names
        rows = t.to_pylist()
        # every column, in the table's order, canonical JSON: a total order for nested values
        rows.sort(key=lambda r: [json.dumps(r[c], sort_keys=True, default=str) for c in cols])
        tables[name] = rows
        tables[name + ".schema"] = [(f.name, str(f.type)) for f in t.schema]
    return tables


def _row_key(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def assert_same_tables(got: dict, want: dict) -> None:
    for name in TABLES:
        assert got[name + ".schema"] == want[name + ".schema"], name
        g, w = got[name], want[name]
        if g != w:
            gc, wc = Counter(map(_row_key, g)), Counter(map(_row_key, w))
            extra, missing = list((gc - wc).items())[:3], list((wc - gc).items())[:3]
            pytest.fail(f"table {name}: {len(g)} rows, expected {len(w)}; "
                        f"{sum((gc - wc).values())} unexpected (first: {extra}), "
                        f"{sum((wc - gc).values())} missing (first: {missing})")
    # no row doubled: each commit record (partition, record offset) is one row
    keys = Counter((r["log_partition"], r["record_offset"]) for r in got["commits"])
    assert max(keys.values()) == 1


# ---- running on the cluster ------------------------------------------------------------------
def _spark_audit_cmd(cluster: Cluster, inputs: list[str], out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kgtool", "spark-audit", *inputs, "--master", cluster.master_url,
            "--out", str(out), "--split-size", SPLIT_SIZE, "--format", "json", *CLUSTER_CONF, *extra]


def _start(cmd: list[str], env: dict[str, str], logdir: Path) -> tuple[subprocess.Popen, Path, Path]:
    stdout, stderr = logdir / "stdout", logdir / "stderr"
    with open(stdout, "wb") as o, open(stderr, "wb") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL, env=env, cwd=logdir,
                                start_new_session=True)  # the driver and its JVM: one group to kill
    return proc, stdout, stderr


def _finish(proc: subprocess.Popen, timeout: float) -> None:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _event_log_conf(events: Path) -> list[str]:
    """Spark's event log, one uncompressed JSON file per application (Spark 4 defaults to
    rolling zstd files)."""
    events.mkdir()
    return ["--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{events}",
            "--conf", "spark.eventLog.rolling.enabled=false", "--conf", "spark.eventLog.compress=false"]


def _events(events: Path, app_id: str) -> list[dict]:
    (log,) = [p for p in events.iterdir() if p.name in (app_id, app_id + ".inprogress")]
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]


def _explain(cluster: Cluster, stderr: Path, app_id: str | None = None) -> str:
    return (f"driver stderr:\n{tail(stderr, 40)}\n\ncluster:\n{cluster.logs(15)}\n\nexecutors:\n"
            f"{cluster.executor_logs(app_id, 15)}")


def test_cli_on_cluster_equals_local(spark_cluster, inputs, reference, tmp_path):
    """``--master spark://...``: two executor JVMs, ~20 decoding tasks; same tables as local[2]."""
    want, want_summary = reference
    before = set(spark_cluster.app_dirs())
    cmd = _spark_audit_cmd(spark_cluster, inputs, tmp_path / "audit", *_event_log_conf(tmp_path / "events"))
    proc, stdout, stderr = _start(cmd, spark_cluster.driver_env(), tmp_path)
    _finish(proc, RUN_TIMEOUT)
    assert proc.returncode == 1, _explain(spark_cluster, stderr)  # 1: findings (the sample's)
    assert_same_tables(read_tables(tmp_path / "audit"), want)
    assert summary_of(stdout.read_text()) == want_summary
    # It really ran on the cluster: one application, an executor on each worker, both ran tasks.
    (app_id,) = set(spark_cluster.app_dirs()) - before
    assert len({d.parent.parent for d in spark_cluster.app_dirs()[app_id]}) == 2
    ends = [r for r in _events(tmp_path / "events", app_id) if r["Event"] == "SparkListenerTaskEnd"]
    assert len({r["Task Info"]["Executor ID"] for r in ends}) == 2


def test_executor_killed_mid_job_same_tables(spark_cluster, inputs, reference, tmp_path):
    """One decoding task is held (its first attempt) while the test SIGKILLs its executor JVM;
    Spark re-runs the lost task (and whatever the lost executor held) elsewhere: same tables,
    no row lost or doubled, and the event log shows the executor lost and the task retried."""
    want, want_summary = reference
    pause = tmp_path / "pause"
    pause.mkdir()
    cmd = _spark_audit_cmd(spark_cluster, inputs, tmp_path / "audit",
                           "--conf", f"spark.executorEnv.KGTOOL_FAULT_PAUSE_DIR={pause}",
                           *_event_log_conf(tmp_path / "events"))
    proc, stdout, stderr = _start(cmd, spark_cluster.driver_env(), tmp_path)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not (pause / "started").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("no task paused (exit status "
                            f"{proc.poll()})\n{_explain(spark_cluster, stderr)}", pytrace=False)
            time.sleep(0.1)
        pid_line, label = (pause / "started").read_text().splitlines()[:2]
        assert label
        jvm, jvm_cmd = executor_jvm_of(int(pid_line))
        app_id, executor_id = jvm_arg(jvm_cmd, "--app-id"), jvm_arg(jvm_cmd, "--executor-id")
        assert app_id and executor_id, jvm_cmd
        os.kill(jvm, signal.SIGKILL)
    finally:
        (pause / "go").touch()  # releases the task if its process survived (never leave it held)
        _finish(proc, RUN_TIMEOUT)
    assert proc.returncode == 1, _explain(spark_cluster, stderr, app_id)

    assert_same_tables(read_tables(tmp_path / "audit"), want)
    assert summary_of(stdout.read_text()) == want_summary

    # The application really lost that executor, and the master gave it a new one.
    executor_dirs = spark_cluster.app_dirs()[app_id]
    assert len(executor_dirs) >= 3, executor_dirs
    assert executor_id in {d.name for d in executor_dirs}
    recs = _events(tmp_path / "events", app_id)
    removed = [r for r in recs if r["Event"] == "SparkListenerExecutorRemoved"]
    assert executor_id in {r["Executor ID"] for r in removed}, removed
    ends = [r for r in recs if r["Event"] == "SparkListenerTaskEnd"]
    lost = [r for r in ends if r["Task End Reason"]["Reason"] == "ExecutorLostFailure"
            and r["Task Info"]["Executor ID"] == executor_id]
    assert lost, "no task failed with ExecutorLostFailure"
    retried = {(r["Stage ID"], r["Task Info"]["Index"]) for r in ends
               if r["Task End Reason"]["Reason"] == "Success" and r["Task Info"]["Attempt"] >= 1
               and r["Task Info"]["Executor ID"] != executor_id}
    assert any((r["Stage ID"], r["Task Info"]["Index"]) in retried for r in lost), (lost, retried)


def test_spark_submit_with_py_files(spark_cluster, tmp_path):
    """The recipe of docs/guide/cluster.md: ``spark-submit --master spark://... --py-files kgtool.zip
    kgtool/spark/job.py SAMPLE``: the driver and the executors import kgtool from the zip (the
    pure-Python codec: zipimport loads no extension); exit 1 (findings), the summary as JSON."""
    zip_path = tmp_path / "kgtool.zip"  # as docs/guide/cluster.md builds it (any compiled extension in it is not loaded)
    subprocess.run([sys.executable, "-m", "zipfile", "-c", str(zip_path), str(REPO / "kgtool") + "/"], check=True)
    cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", spark_cluster.master_url,
           "--py-files", str(zip_path), *CLUSTER_CONF, str(REPO / "kgtool" / "spark" / "job.py"),
           "--format", "json", str(sample_path("sample_offsets"))]  # job.py takes spark-audit's options
    proc, stdout, stderr = _start(cmd, spark_cluster.driver_env(pythonpath=False), tmp_path)
    _finish(proc, RUN_TIMEOUT)
    assert proc.returncode == 1, _explain(spark_cluster, stderr)
    summary = json.loads(stdout.read_text())
    assert summary["findings_by_rule"] == {r: 1 for r in SAMPLE_RULES}
    assert sorted((f["rule"], f["group"], f["log_partition"], f["record_offset"]) for f in summary["findings"]) == [
        ("aborted-txn", "payments-eos", 23, 6), ("epoch-regression", "metrics-agg", 7, 26),
        ("expiring", "legacy-batch", 23, 2), ("orphan", "inventory-sync", 7, 16), ("pending-txn", "ledger-eos", 23, 20),
        ("rebalance-storm", "clicks-app", 7, 28), ("rewind", "billing-rewind", 7, 2),
        ("slow-revocation", "search-indexer", 7, 56), ("zombie", "orders-app", 7, 13),
    ]
    assert [(c["log_partition"], c["records"], c["control_records"]) for c in summary["coverage"]] == [
        (7, 89, 0), (23, 22, 4)]
