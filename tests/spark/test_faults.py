"""kgtool.spark.faults.maybe_pause without Spark: a stand-in TaskContext (the cluster test
exercises it in real executors)."""

from __future__ import annotations

import os
import threading
import time

import pyspark
import pytest

from kgtool.spark import faults


class _Ctx:
    def __init__(self, attempt: int) -> None:
        self._attempt = attempt

    def attemptNumber(self) -> int:  # noqa: N802 - pyspark's name
        return self._attempt


@pytest.fixture
def task(monkeypatch):
    """``task(attempt)`` makes TaskContext.get() return a task of that attempt (None: no task)."""

    def set_attempt(attempt):
        ctx = None if attempt is None else _Ctx(attempt)
        monkeypatch.setattr(pyspark.TaskContext, "get", classmethod(lambda cls: ctx))

    return set_attempt


def test_unset_returns_at_once_and_touches_nothing(monkeypatch, task, tmp_path):
    monkeypatch.delenv(faults.ENV, raising=False)
    task(0)
    faults.maybe_pause("x")
    monkeypatch.setenv(faults.ENV, "")
    faults.maybe_pause("x")
    assert os.listdir(tmp_path) == []


def test_no_task_or_retry_does_not_claim(monkeypatch, task, tmp_path):
    monkeypatch.setenv(faults.ENV, str(tmp_path))
    task(None)
    faults.maybe_pause("driver side")
    task(1)
    faults.maybe_pause("a retry")
    assert os.listdir(tmp_path) == []


def test_first_claim_pauses_until_go_others_pass(monkeypatch, task, tmp_path):
    monkeypatch.setenv(faults.ENV, str(tmp_path))
    task(0)
    done = threading.Event()
    t = threading.Thread(target=lambda: (faults.maybe_pause("partition 7"), done.set()), daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "started").read_text() == f"{os.getpid()}\npartition 7\n"
    assert not done.wait(0.3)  # held
    t0 = time.monotonic()
    faults.maybe_pause("second task")  # the pause is claimed: returns at once
    assert time.monotonic() - t0 < 0.1
    (tmp_path / "go").touch()
    assert done.wait(5)
    assert sorted(os.listdir(tmp_path)) == ["claimed", "go", "started"]
