"""Burrow's verdict on a consumer's lag, computed offline, as LinkedIn's Burrow computes it live.

Ported from linkedin/Burrow (Apache-2.0): the commit window of ``core/internal/storage/inmemory.go``
(``addConsumerOffset``, ``mergeFrequentCommitIntoPrevious``) and the rules of
``core/internal/evaluator/caching.go`` (``calculatePartitionStatus`` and its five checks).

- Each (group, topic, partition) keeps its last ``intervals`` commits (10), each with its lag at
  commit time: the broker's log end offset then minus the committed offset, 0 when the commit is
  ahead. A commit less than ``min_distance`` (1 s) after the previous one replaces it, keeping the
  previous one's timestamp. Live, Burrow's broker offset is its last poll; offline it is exact:
  the log end at the commit's instant (``kgtool.lag.timeline``).
- At an instant ``now``: the current lag is the log end at ``now`` minus the last commit's offset
  (0 when ahead). With a current lag, the partition is STOP when the time since the last commit is
  longer than the window's span (``now`` in whole seconds, as Burrow's ``time.Now().Unix()``)
  unless the consumer was caught up at one of the broker offsets of the last ``intervals`` polls
  (``offset_refresh`` apart, 10 s: ``checkIfRecentLagZero``); otherwise, when no lag of the window is
  zero, REWIND (an offset went back), STALL (the offset never moved), WARN (the lag never went
  down), in that order; OK in every other case.
- A group's status is its worst partition's, with STOP, STALL and REWIND reported as ERR
  (``evaluateConsumerStatus``).

Burrow drops commits older than ``expire-group`` (7 days) before ``now`` and forgets groups idle
that long; offline nothing is dropped: the whole history of the log is the point.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: storage.intervals, storage.min-distance (seconds), cluster offset-refresh (seconds): Burrow's defaults.
INTERVALS = 10
MIN_DISTANCE_MS = 1_000
OFFSET_REFRESH_MS = 10_000


class Status(enum.IntEnum):
    """``protocol.StatusConstant``, in Burrow's order (a larger value is worse)."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True)
class Commit:
    """``protocol.ConsumerOffset``: an offset, its commit time (ms), its lag then (None: unknown)."""

    offset: int
    timestamp: int
    lag: int | None


def lag_always_not_zero(offsets: Sequence[Commit]) -> bool:
    """Rule 1 (``isLagAlwaysNotZero``): no commit of the window had a zero lag."""
    return not any(c.lag is not None and c.lag == 0 for c in offsets)


def offsets_rewind(offsets: Sequence[Commit]) -> bool:
    """Rule 2 (``checkIfOffsetsRewind``): an offset lower than the one before it."""
    return any(offsets[i].offset < offsets[i - 1].offset for i in range(1, len(offsets)))


def offsets_stopped(offsets: Sequence[Commit], now_s: int) -> bool:
    """Rule 3 (``checkIfOffsetsStopped``): longer since the last commit than the window spans."""
    first, last = offsets[0].timestamp, offsets[-1].timestamp
    return now_s * 1000 - last > last - first


def offsets_stalled(offsets: Sequence[Commit]) -> bool:
    """Rule 4 (``checkIfOffsetsStalled``): every offset of the window the same."""
    return all(offsets[i].offset == offsets[i - 1].offset for i in range(1, len(offsets)))


def lag_not_decreasing(offsets: Sequence[Commit]) -> bool:
    """Rule 5 (``checkIfLagNotDecreasing``): no known lag lower than the known one before it."""
    last = None
    for c in offsets:
        if c.lag is not None:
            if last is not None and c.lag < last:
                return False
            last = c.lag
    return True


def recent_lag_zero(offsets: Sequence[Commit], broker_offsets: Iterable[int]) -> bool:
    """``checkIfRecentLagZero``: one of the recent broker offsets at most the last committed one."""
    last = offsets[-1].offset
    return any(b <= last for b in broker_offsets)


def partition_status(offsets: Sequence[Commit], broker_offsets: Sequence[int], current_lag: int,
                     now_s: int) -> Status:
    """``calculatePartitionStatus`` (``offsets``: the window, oldest first, at least one)."""
    if current_lag > 0:
        if offsets_stopped(offsets, now_s) and not recent_lag_zero(offsets, broker_offsets):
            return Status.STOP
        if lag_always_not_zero(offsets):
            if offsets_rewind(offsets):
                return Status.REWIND
            if offsets_stalled(offsets):
                return Status.STALL
            if lag_not_decreasing(offsets):
                return Status.WARN
    return Status.OK


def group_status(statuses: Iterable[Status]) -> Status:
    """``evaluateConsumerStatus``: the worst partition's, STOP/STALL/REWIND counted as ERR."""
    worst = Status.OK
    for s in statuses:
        if s > worst:
            worst = Status.ERR if s > Status.ERR else s
    return worst


def window_flags(offsets: Sequence[Commit]) -> tuple[bool, bool, bool, bool]:
    """Rules 1, 2, 4 and 5 in one pass: (lag always non-zero, rewind, stalled, lag not
    decreasing), the same as :func:`lag_always_not_zero`, :func:`offsets_rewind`,
    :func:`offsets_stalled` and :func:`lag_not_decreasing`."""
    always = True
    rewind = False
    stalled = True
    not_decreasing = True
    prev_offset = None
    last_lag = None
    for c in offsets:
        lag = c.lag
        if lag is not None:
            if lag == 0:
                always = False
            if last_lag is not None and lag < last_lag:
                not_decreasing = False
            last_lag = lag
        if prev_offset is not None:
            if c.offset < prev_offset:
                rewind = True
            if c.offset != prev_offset:
                stalled = False
        prev_offset = c.offset
    return always, rewind, stalled, not_decreasing


class CommitWindow:
    """One (group, topic, partition)'s window: ``addConsumerOffset`` for commits in log order."""

    __slots__ = ("intervals", "min_distance_ms", "commits", "_flags")

    def __init__(self, intervals: int = INTERVALS, min_distance_ms: int = MIN_DISTANCE_MS) -> None:
        self.intervals = intervals
        self.min_distance_ms = min_distance_ms
        self.commits: list[Commit] = []
        self._flags: tuple[bool, bool, bool, bool] | None = None  # window_flags, while it does not change

    def add(self, offset: int, timestamp: int, broker_offset: int) -> None:
        """A commit at ``timestamp`` while the log ended at ``broker_offset``."""
        lag = broker_offset - offset if broker_offset > offset else 0
        self._flags = None
        if self.commits and timestamp - self.commits[-1].timestamp < self.min_distance_ms:
            # mergeFrequentCommitIntoPrevious: it takes the previous one's place and timestamp
            self.commits[-1] = Commit(offset, self.commits[-1].timestamp, lag)
            return
        self.commits.append(Commit(offset, timestamp, lag))
        if len(self.commits) > self.intervals:
            del self.commits[0]

    def status(self, log_end: int, now_ms: int, broker_offsets: Sequence[int]) -> tuple[Status, int]:
        """(status, current lag) at ``now_ms`` (``evaluatePartitionStatus``): OK without commits.
        ``broker_offsets``: the log ends at the recent polls (:func:`poll_instants`)."""
        commits = self.commits
        if not commits:
            return Status.OK, 0
        last = commits[-1].offset
        current = log_end - last if log_end > last else 0
        if current <= 0:
            return Status.OK, current
        # partition_status, with the window's rules computed once while it does not change
        if offsets_stopped(commits, now_ms // 1000) and not recent_lag_zero(commits, broker_offsets):
            return Status.STOP, current
        if self._flags is None:
            self._flags = window_flags(commits)
        always, rewind, stalled, not_decreasing = self._flags
        if always:
            if rewind:
                return Status.REWIND, current
            if stalled:
                return Status.STALL, current
            if not_decreasing:
                return Status.WARN, current
        return Status.OK, current


def poll_instants(now_ms: int, intervals: int = INTERVALS, refresh_ms: int = OFFSET_REFRESH_MS) -> list[int]:
    """The instants of Burrow's last ``intervals`` broker-offset polls up to ``now_ms``, oldest
    first: what its broker ring holds at ``now``."""
    return [now_ms - k * refresh_ms for k in range(intervals - 1, -1, -1)]
