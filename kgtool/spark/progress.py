"""Spark's progress while a job runs, read from PySpark's public status tracker.

``SparkContext.statusTracker()`` (``pyspark.status.StatusTracker``) answers from the driver's
status store, the one behind Spark's web UI, also when the UI is off: the active jobs
(``getActiveJobsIds``), each job's stages (``getJobInfo``) and each stage's task counts
(``getStageInfo``: ``numTasks``, ``numCompletedTasks``, ``numActiveTasks``,
``numFailedTasks``). :class:`StageWatcher` polls it from a thread and hands each change to a
callback as a :class:`SparkProgress`; it prints nothing itself (the CLI renders).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Seconds between two polls: a few per second is live enough and costs a few py4j calls.
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class StageProgress:
    job_id: int
    stage_id: int
    name: str
    tasks: int
    completed: int
    active: int
    failed: int


@dataclass(frozen=True)
class SparkProgress:
    """One look at the status tracker: the jobs that ran to an end since the watch began, the
    active ones and all their stages (pending, running and complete: the sums are the jobs'
    tasks)."""

    jobs_done: int
    active_jobs: tuple[int, ...]
    stages: tuple[StageProgress, ...]

    @property
    def tasks(self) -> int:
        return sum(s.tasks for s in self.stages)

    @property
    def completed(self) -> int:
        return sum(s.completed for s in self.stages)

    @property
    def active(self) -> int:
        return sum(s.active for s in self.stages)

    @property
    def failed(self) -> int:
        return sum(s.failed for s in self.stages)


def snapshot(tracker: Any, seen: set[int]) -> SparkProgress:
    """What ``tracker`` (a ``StatusTracker``) says now. ``seen`` collects the ids of the jobs
    seen active so far (the caller's, across calls): those no longer active are done."""
    active = tuple(sorted(tracker.getActiveJobsIds()))
    stages = []
    for job_id in active:
        job = tracker.getJobInfo(job_id)
        if job is None:
            continue
        for stage_id in sorted(job.stageIds):
            st = tracker.getStageInfo(stage_id)
            if st is None:  # skipped, or already dropped from the status store
                continue
            stages.append(StageProgress(job_id, stage_id, st.name, st.numTasks, st.numCompletedTasks,
                                        st.numActiveTasks, st.numFailedTasks))
    seen.update(active)
    return SparkProgress(jobs_done=len(seen.difference(active)), active_jobs=active, stages=tuple(stages))


class StageWatcher:
    """``with StageWatcher(spark, on_update):`` polls Spark's status tracker from a daemon thread
    while the block runs and calls ``on_update(progress)`` each time the picture changes (from
    that thread). A tracker that fails (the JVM going away with the job) ends the watch quietly:
    the job's own exception says what happened."""

    def __init__(self, spark: Any, on_update: Callable[[SparkProgress], None],
                 interval: float = POLL_SECONDS) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._on_update = on_update
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kgtool-spark-progress", daemon=True)
        # Jobs already active when the watch begins (another thread's) are not this block's.
        self._ignored = set(self._tracker.getActiveJobsIds())

    def _poll(self, seen: set[int], last: SparkProgress | None) -> SparkProgress:
        now = snapshot(self._tracker, seen)
        if self._ignored:
            seen.difference_update(self._ignored)
            now = SparkProgress(
                jobs_done=len(seen.difference(now.active_jobs)),
                active_jobs=tuple(j for j in now.active_jobs if j not in self._ignored),
                stages=tuple(s for s in now.stages if s.job_id not in self._ignored),
            )
        if now != last:
            self._on_update(now)
        return now

    def _run(self) -> None:
        seen: set[int] = set()
        last = None
        while not self._stop.wait(self._interval):
            try:
                last = self._poll(seen, last)
            except Exception:  # noqa: BLE001 - py4j errors when the JVM goes: the job reports them
                return

    def __enter__(self) -> StageWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
