"""Lag on a cluster whose hosts share no /tmp (issue 42, item 3): a Spark standalone cluster whose
two workers each run in a mount namespace of their own with a private tmpfs on /tmp
(tests/spark/cluster.py, ``PRIVATE_TMP``), as separate hosts have, and ``--out`` on S3 (moto's
server on loopback): nothing the driver puts in its /tmp, or under a local directory of its
own, reaches an executor. The offsets log (3 partitions, 10 groups each committing on 24 data
partitions) and the data topic are on a file system every process sees (/var/tmp), as the data
partitions' directories must be. The audit must give the local run's tables, the ``lag`` table
row for row, and say in its coverage that every lag input written was read.

Skipped, with the reason, where workers cannot get a private /tmp (not root, or no
``unshare --mount``); the test itself checks that a file in the driver's /tmp is invisible to
the workers, so a run where /tmp is shared after all fails instead of passing for nothing.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.spark.cluster import JVM_OPTS, REPO, ClusterError, private_tmp_problem, start_cluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BUCKET = "kgtool-private-tmp"
KEYS = {"fs.s3a.access.key": "kgtool-test", "fs.s3a.secret.key": "kgtool-secret",
        "fs.s3a.endpoint.region": "us-east-1"}
CLUSTER_CONF = ["--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=4"]
TABLES = ["generations", "members", "commits", "findings", "coverage", "offsets", "rebalances", "groups", "group_members",
          "lag", "lag_episodes"]
DATA_PARTITIONS = 24
RUN_TIMEOUT = 300
#: Shared by the driver and the workers (the workers' /tmp is their own): the inputs, the
#: cluster's work dirs and logs, the local reference's output.
SHARED = "/var/tmp"


@pytest.fixture(scope="module")
def shared_root():
    root = Path(tempfile.mkdtemp(prefix="kgtool-private-tmp-", dir=SHARED))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def private_cluster(shared_root):
    problem = private_tmp_problem()
    if problem is not None:
        pytest.skip(f"workers with a private /tmp (separate hosts) cannot be started: {problem}")
    try:
        cluster = start_cluster(shared_root / "cluster", workers=2, cores=1, memory="1g", private_tmp=True)
    except ClusterError as exc:
        pytest.fail(f"cannot start the Spark standalone cluster with private /tmp: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def s3_endpoint():
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEYS["fs.s3a.access.key"],
                 aws_secret_access_key=KEYS["fs.s3a.secret.key"], region_name="us-east-1").create_bucket(Bucket=BUCKET)
    yield endpoint
    server.stop()


@pytest.fixture(scope="module")
def inputs(shared_root) -> list[str]:
    """A lag-shaped offsets log (benchmarks/bench_spark_audit.py's LagEncoder: 3 partitions of
    10 groups, each group on all 24 partitions of page-views) and its data topic."""
    spec = importlib.util.spec_from_file_location("_bench_spark_audit", REPO / "benchmarks" / "bench_spark_audit.py")
    gen = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gen  # dataclasses look their module up
    spec.loader.exec_module(gen)
    rounds = gen._plan(0, 10, 400 << 10, 256 << 10, shape=f"lag:page-views:{DATA_PARTITIONS}:1")[-1][2]
    rate = gen.data_rate(2, DATA_PARTITIONS, rounds)
    quiet = lambda _m: None  # noqa: E731
    log = gen.generate(str(shared_root / "log"), 1.2, 3, 0.25, 10, 1, say=quiet,
                       shape=f"lag:page-views:{DATA_PARTITIONS}:{rate}")
    seconds = max(seg["rounds"][1] for seg in log["segments"])
    data = gen.generate_data_topic(str(shared_root / "data"), DATA_PARTITIONS, rate, seconds, 1 << 20, 1, say=quiet)
    assert log["records"] > 10_000
    return [str(shared_root / "log"), *data["dirs"]]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    env.update(extra or {})
    return env


def _run(cmd: list[str], env: dict[str, str], logdir: Path) -> tuple[int, str, str]:
    logdir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(cmd, env=env, cwd=logdir, capture_output=True, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout.decode(), done.stderr.decode(errors="replace")


def _tables(root: str, filesystem=None) -> dict[str, list[dict]]:
    import pyarrow.parquet as pq

    tables = {}
    for name in TABLES:
        t = pq.read_table(f"{root}/{name}", filesystem=filesystem)
        rows = t.to_pylist()
        rows.sort(key=lambda r: [json.dumps(r[c], sort_keys=True, default=str) for c in t.schema.names])
        tables[name] = rows
    return tables


def _diff(name: str, got: list[dict], want: list[dict]) -> str:
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    gc, wc = Counter(map(key, got)), Counter(map(key, want))
    return (f"table {name}: {len(got)} rows, expected {len(want)}; {sum((gc - wc).values())} unexpected "
            f"(first: {list(gc - wc)[:2]}), {sum((wc - gc).values())} missing (first: {list(wc - gc)[:2]})")


def test_lag_on_workers_with_private_tmp_equals_local(private_cluster, s3_endpoint, inputs, shared_root):
    from kgtool.spark.files import s3_filesystem

    # the workers really have a /tmp of their own: a file in the driver's is not in theirs
    marker = Path(tempfile.gettempdir()) / f"kgtool-driver-only-{uuid.uuid4().hex}"
    marker.write_text("the driver's /tmp")
    try:
        for p in private_cluster.procs:
            if p.name.startswith("worker-"):
                assert not os.path.exists(f"/proc/{p.popen.pid}/root{marker}"), f"{p.name} sees the driver's /tmp"
    finally:
        marker.unlink()

    # the local reference: local[2], tables in a local directory
    ref = shared_root / "reference"
    code, out, err = _run([sys.executable, "-m", "kgtool", "spark-audit", *inputs, "--master", "local[2]",
                           "--out", str(ref / "audit"), "--format", "json",
                           "--conf", f"spark.driver.extraJavaOptions={JVM_OPTS}"], _env(), ref)
    assert code in (0, 1), tail_of(err)
    want, want_summary = _tables(str(ref / "audit")), json.loads(out)
    assert len(want["lag"]) > 10_000 and {r["partition"] for r in want["lag"]} == set(range(DATA_PARTITIONS))

    # the cluster: --out s3a:// (the driver's output directory is not local either)
    s3 = {**KEYS, "fs.s3a.endpoint": s3_endpoint}
    run = shared_root / "cluster-run"
    conf = [a for k, v in s3.items() for a in ("--conf", f"spark.hadoop.{k}={v}")]
    code_c, out_c, err_c = _run([sys.executable, "-m", "kgtool", "spark-audit", *inputs,
                                 "--master", private_cluster.master_url, "--out", f"s3a://{BUCKET}/audit",
                                 "--format", "json", *CLUSTER_CONF, *conf],
                                private_cluster.driver_env(), run)
    assert code_c == code, (f"exit {code_c}, the local run's {code}\n{tail_of(err_c)}\n"
                            f"{private_cluster.executor_logs(lines=15)}")
    # it ran on both workers (an executor each: the module's only application)
    assert all(any(w.glob("app-*/*")) for w in private_cluster.work_dirs), private_cluster.app_dirs()
    got = _tables(f"{BUCKET}/audit", filesystem=s3_filesystem(s3))
    summary = json.loads(out_c)
    for name in ["lag", "lag_episodes", *(t for t in TABLES if not t.startswith("lag"))]:
        assert got[name] == want[name], _diff(name, got[name], want[name])
    # every lag input written was read, and the coverage says so
    assert all(r["lag_inputs"] == r["lag_inputs_read"] == DATA_PARTITIONS for r in got["coverage"]), got["coverage"]
    assert summary["problem_count"] == want_summary["problem_count"] == 0
    assert [p["rows"] for p in summary["lag"]["partitions"]] == [p["rows"] for p in want_summary["lag"]["partitions"]]


def tail_of(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])
