"""The lag scenario where Python has none of the Linux-only calls (as on macOS and Windows):
``spark-audit`` with data partition directories gives the same tables, findings and exit code.

Each run is a ``python -m kgtool spark-audit`` process; in one of them, before kgtool is
imported, ``os`` loses ``O_DIRECT``, ``preadv``, ``pwritev``, ``posix_fadvise`` and the other
functions only Linux has, ``mmap`` its ``MADV_*`` advice, and ``ctypes.util.find_library`` finds
no C library (no glibc to tune). kgtool reads through plain reads and memory maps everywhere;
this holds it there."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.lag import scenario as S

pytestmark = pytest.mark.spark

#: What Python's os and mmap hold on Linux only (Python's documentation marks them
#: "Availability: Linux"; macOS lacks them, Windows lacks them and more).
LINUX_ONLY_OS = ("O_DIRECT", "O_NOATIME", "O_PATH", "O_TMPFILE", "preadv", "pwritev", "posix_fadvise",
                 "posix_fallocate", "sched_getaffinity", "sched_setaffinity", "memfd_create", "splice",
                 "copy_file_range", "eventfd", "pidfd_open", "getxattr", "setxattr")

BOOT = """
import ctypes.util, mmap, os, runpy, sys
for name in {os_names!r}:
    if hasattr(os, name):
        delattr(os, name)
for name in [n for n in dir(mmap) if n.startswith("MADV_")]:
    delattr(mmap, name)
ctypes.util.find_library = lambda name: None
sys.argv = ["kgtool", *sys.argv[1:]]
runpy.run_module("kgtool", run_name="__main__", alter_sys=True)
"""


def _audit(broker: dict, out: str, portable: bool) -> tuple[int, dict]:
    code = BOOT.format(os_names=LINUX_ONLY_OS) if portable else "import runpy, sys; sys.argv = ['kgtool', *sys.argv[1:]]; runpy.run_module('kgtool', run_name='__main__', alter_sys=True)"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    r = subprocess.run([sys.executable, "-c", code, "spark-audit", *broker["brokers"], "--format", "json",
                        "--out", out], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    return r.returncode, json.loads(r.stdout)


def _table(out: str, name: str) -> list[dict]:
    import pyarrow.parquet as pq

    rows = pq.read_table(os.path.join(out, name)).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_lag_without_linux_only_calls_gives_the_same_tables(tmp_path):
    broker = S.write(str(tmp_path / "broker"), copies=2)
    want_rc, want = _audit(broker, str(tmp_path / "linux"), portable=False)
    got_rc, got = _audit(broker, str(tmp_path / "portable"), portable=True)
    assert got_rc == want_rc == 1  # the scenario's stalled and stopped groups are findings
    for doc in (want, got):
        doc.pop("elapsed_s", None)
        doc.pop("timings", None)
    assert got["findings_by_rule"] == want["findings_by_rule"] and got["lag"] == want["lag"]
    for name in ("lag", "offsets", "lag_episodes", "findings"):
        rows = _table(str(tmp_path / "linux"), name)
        assert rows, name
        assert _table(str(tmp_path / "portable"), name) == rows, name
