"""A real Spark standalone cluster on 127.0.0.1 for the tests: one master and N workers started
from the ``pyspark`` package (``$SPARK_HOME/bin/spark-class``), each JVM in its own process group,
with free ports, small workers (1 core, 1 GiB), and work dirs and logs under one directory.

Executors are separate JVMs (``CoarseGrainedExecutorBackend``, started by the workers) with their
own Python workers; the workers' environment gives them this interpreter (``PYSPARK_PYTHON``)
and this tree first on ``PYTHONPATH``, so they import the kgtool under test.

:func:`start_cluster` waits until every worker is registered (the master's ``/json/``) and
raises :class:`ClusterError` with the tails of the logs when a process exits or the wait times
out; :meth:`Cluster.stop` kills every process group and any leftover process working under the
cluster's directory (executors, their Python daemons).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class ClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"({path}: {exc})"
    return "\n".join(text[-lines:])


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path


@dataclass
class Cluster:
    root: Path
    master_url: str = ""
    webui_url: str = ""
    work_dirs: list[Path] = field(default_factory=list)
    procs: list[Proc] = field(default_factory=list)

    # ---- environment for drivers (CLI processes, spark-submit) --------------------------
    def driver_env(self, pythonpath: bool = True) -> dict[str, str]:
        env = dict(os.environ)
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                   PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_CONF_DIR=str(self.root / "conf"))
        env.pop("PYSPARK_GATEWAY_PORT", None)
        env.pop("PYSPARK_GATEWAY_SECRET", None)
        if pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        else:
            env.pop("PYTHONPATH", None)
        return env

    # ---- state --------------------------------------------------------------------------
    def state(self) -> dict:
        with urllib.request.urlopen(self.webui_url + "/json/", timeout=5) as r:
            return json.load(r)

    def app_dirs(self) -> dict[str, list[Path]]:
        """Application id -> its executor directories (``WORK/app-*/<executor id>``) on every worker."""
        apps: dict[str, list[Path]] = {}
        for w in self.work_dirs:
            for app in sorted(w.glob("app-*")):
                apps.setdefault(app.name, []).extend(sorted(p for p in app.iterdir() if p.is_dir()))
        return apps

    def executor_logs(self, app_id: str | None = None, lines: int = 20) -> str:
        parts = []
        for app, dirs in self.app_dirs().items():
            if app_id is None or app == app_id:
                for d in dirs:
                    parts.append(f"--- {d.relative_to(self.root)}/stderr\n{tail(d / 'stderr', lines)}")
        return "\n".join(parts)

    def logs(self, lines: int = 30) -> str:
        return "\n".join(f"--- {p.name} ({p.log}), exit {p.popen.poll()}\n{tail(p.log, lines)}" for p in self.procs)

    # ---- lifecycle ------------------------------------------------------------------------
    def _spawn(self, name: str, args: list[str], env: dict[str, str], wrap: list[str] | None = None) -> Proc:
        log = self.root / "logs" / f"{name}.log"
        with open(log, "wb") as fh:
            popen = subprocess.Popen(
                [*(wrap or []), str(spark_home() / "bin" / "spark-class"), *args],
                stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=self.root,
                start_new_session=True,  # a process group per daemon (its executors inherit it)
            )
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def _check_alive(self) -> None:
        for p in self.procs:
            if p.popen.poll() is not None:
                raise ClusterError(f"{p.name} exited with status {p.popen.returncode}\n{self.logs()}")

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            live = [p for p in self.procs if p.popen.poll() is None]
            for p in live:
                try:
                    os.killpg(p.popen.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            for p in live:
                try:
                    p.popen.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        # Executors and their Python daemons work under the cluster's directory; the daemons
        # are in process groups of their own. Kill whatever is left there, by pid.
        for pid in processes_under(self.root):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def processes_under(root: Path) -> list[int]:
    """Pids of this user's processes whose working directory is ``root`` or below it."""
    root_s = str(root.resolve())
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == root_s or cwd.startswith(root_s + "/"):
            out.append(int(entry))
    return out


#: A worker as on a host of its own: in a mount namespace of its own (``unshare --mount``, whose
#: mounts propagate nowhere) with a private tmpfs on /tmp, where its executors' local dirs
#: (java.io.tmpdir: shuffle files, Python's tempfile) then are. Needs root (CAP_SYS_ADMIN).
#: What a host would have installed stays visible: the directories under /tmp holding the
#: interpreter, the checkout and pyspark (a clone or a venv under /tmp, as a CI job may have
#: them) are bound back from the old /tmp, kept aside first ($KGTOOL_OLD_TMP); the driver's own
#: files under /tmp are not.
_PRIVATE_TMP_SCRIPT = (
    'set -e; o="$KGTOOL_OLD_TMP"; mount --bind /tmp "$o"; '
    'mount -t tmpfs -o size=2g kgtool-worker-tmp /tmp; '
    'for p in $KGTOOL_KEEP_TMP; do mkdir -p "$p"; mount --bind "$o/${p#/tmp/}" "$p"; done; '
    'exec "$0" "$@"')
PRIVATE_TMP = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _PRIVATE_TMP_SCRIPT]


def private_tmp_env(root: Path) -> dict[str, str]:
    """The environment :data:`PRIVATE_TMP` reads: where the old /tmp is kept aside (under
    ``root``, outside /tmp), and the top directories under /tmp a worker must still see."""
    keep = set()
    for p in (sys.prefix, sys.executable, str(REPO), str(spark_home()), os.getcwd(),
              *os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        real = os.path.realpath(p) if p else ""
        parts = Path(real).parts
        if len(parts) > 2 and parts[1] == "tmp":
            keep.add(os.path.join("/tmp", parts[2]))
    old = Path(root) / "old-tmp"
    old.mkdir(parents=True, exist_ok=True)
    return {"KGTOOL_OLD_TMP": str(old), "KGTOOL_KEEP_TMP": " ".join(sorted(keep))}


def private_tmp_problem() -> str | None:
    """Why workers cannot have a private /tmp here (None: they can)."""
    if os.geteuid() != 0:
        return "a worker's private /tmp needs root (unshare --mount and mount -t tmpfs)"
    try:
        with tempfile.TemporaryDirectory(dir="/var/tmp") as probe:
            done = subprocess.run([*PRIVATE_TMP, "true"], capture_output=True, timeout=30,
                                  env={**os.environ, **private_tmp_env(Path(probe))})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare --mount cannot run here: {exc}"
    if done.returncode != 0:
        return f"unshare --mount with a tmpfs on /tmp failed here: {done.stderr.decode(errors='replace').strip()}"
    return None


def start_cluster(root: Path, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 120.0,
                  private_tmp: bool = False) -> Cluster:
    """Start a master and ``workers`` workers; return once all are registered. On failure the
    processes are stopped and :class:`ClusterError` carries the log tails. ``private_tmp``: each
    worker with a /tmp of its own (:data:`PRIVATE_TMP`; ``root`` must then be outside /tmp)."""
    home = spark_home()
    spark_class = home / "bin" / "spark-class"
    if not (spark_class.is_file() and os.access(spark_class, os.X_OK)):
        raise ClusterError(f"{spark_class} is missing or not executable (pyspark package at {home})")
    root.mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(exist_ok=True)
    # SPARK_CONF_DIR of the daemons and of the drivers (driver_env): no stray configuration, and
    # JVM options that suit short runs on a small machine: C1 only (C2 spends more CPU compiling
    # than these JVMs live to recoup: the local reference run takes 25 CPU-s instead of 44) and
    # the serial GC.
    (root / "conf").mkdir(exist_ok=True)
    (root / "conf" / "spark-defaults.conf").write_text(
        f"spark.driver.extraJavaOptions {JVM_OPTS}\nspark.executor.extraJavaOptions {JVM_OPTS}\n"
    )
    cluster = Cluster(root=root)
    master_port, master_ui = free_port(), free_port()
    cluster.master_url = f"spark://127.0.0.1:{master_port}"
    cluster.webui_url = f"http://127.0.0.1:{master_ui}"
    env = dict(os.environ)
    for k in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_MASTER_HOST", "SPARK_WORKER_DIR"):
        env.pop(k, None)
    env.update(
        SPARK_HOME=str(home),
        SPARK_CONF_DIR=str(root / "conf"),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="256m",
        SPARK_DAEMON_JAVA_OPTS=JVM_OPTS,
        # No REST submission server (fixed port 6066); worker dirs kept for the tests to inspect.
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
        # Executors inherit the worker's environment: this interpreter, this tree first.
        PYSPARK_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
    )
    try:
        cluster._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", str(master_port), "--webui-port", str(master_ui)], env)
        for i in range(workers):
            work = root / f"worker-{i}"
            work.mkdir(exist_ok=True)
            cluster.work_dirs.append(work)
            # as separate hosts, a host name each (127.0.0.2, ...: loopback too): Spark reads
            # the shuffle files of an executor on the same host from its disk, not through it
            host = f"127.0.0.{2 + i}" if private_tmp else "127.0.0.1"
            cluster._spawn(f"worker-{i}", [
                "org.apache.spark.deploy.worker.Worker", cluster.master_url, "--host", host,
                "--webui-port", str(free_port()), "--cores", str(cores), "--memory", memory,
                "--work-dir", str(work),
            ], {**env, "SPARK_LOCAL_IP": host, **(private_tmp_env(work) if private_tmp else {})},
                wrap=PRIVATE_TMP if private_tmp else [])
        deadline = time.monotonic() + timeout
        last = None
        while True:
            cluster._check_alive()
            try:
                state = cluster.state()
                last = state
                if state.get("status") == "ALIVE" and state.get("aliveworkers") == workers:
                    return cluster
            except (OSError, ValueError):
                pass  # the master's web UI is not up yet
            if time.monotonic() > deadline:
                raise ClusterError(f"{workers} worker(s) not registered after {timeout:.0f} s "
                                   f"(master state: {last})\n{cluster.logs()}")
            time.sleep(0.5)
    except BaseException:
        cluster.stop()
        raise


def ancestors(pid: int) -> list[tuple[int, str]]:
    """``pid`` and its ancestors, as (pid, command line), from /proc."""
    chain = []
    while pid > 1:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        chain.append((pid, cmd))
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return chain


def executor_jvm_of(pid: int) -> tuple[int, str]:
    """The executor JVM (pid, command line) among the ancestors of a Python worker's pid."""
    chain = ancestors(pid)
    for p, cmd in chain:
        if EXECUTOR_CLASS in cmd:
            return p, cmd
    raise ClusterError(f"no CoarseGrainedExecutorBackend among the ancestors of {pid}: "
                       + "; ".join(f"{p}: {c[:120]}" for p, c in chain))


def jvm_arg(cmd: str, name: str) -> str | None:
    parts = cmd.split()
    return parts[parts.index(name) + 1] if name in parts[:-1] else None
