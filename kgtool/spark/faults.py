"""Fault injection for the cluster tests: pause one task so that a test can kill its executor.

The job calls :func:`maybe_pause` at the start of each data task. Without the environment
variable ``KGTOOL_FAULT_PAUSE_DIR`` (always, outside tests) it costs one ``os.environ`` lookup.
With it (``--conf spark.executorEnv.KGTOOL_FAULT_PAUSE_DIR=DIR``), the first attempt of the
first task to claim ``DIR`` (``DIR/claimed``, created with ``O_CREAT | O_EXCL``, so exactly one
task in the whole application, on whichever executor) writes ``DIR/started`` (its pid and the
label, one per line) and waits until ``DIR/go`` exists (at most :data:`MAX_WAIT_S`); every
other call, and any retry of that task, returns at once. The test finds the executor JVM among
the pid's ancestors, kills it, creates ``DIR/go``, and Spark retries the task elsewhere.
"""

from __future__ import annotations

import os
import time

ENV = "KGTOOL_FAULT_PAUSE_DIR"
MAX_WAIT_S = 120.0
POLL_S = 0.05


def maybe_pause(label: str) -> None:
    pause_dir = os.environ.get(ENV)
    if not pause_dir:
        return
    _pause(pause_dir, label)


def _pause(pause_dir: str, label: str) -> None:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None or ctx.attemptNumber() != 0:
        return
    try:
        fd = os.open(os.path.join(pause_dir, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return
    os.close(fd)
    pid = os.getpid()
    tmp = os.path.join(pause_dir, f".started.{pid}")
    with open(tmp, "w") as fh:
        fh.write(f"{pid}\n{label}\n")
    os.replace(tmp, os.path.join(pause_dir, "started"))  # the test never reads a partial file
    go = os.path.join(pause_dir, "go")
    deadline = time.monotonic() + MAX_WAIT_S
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(POLL_S)
