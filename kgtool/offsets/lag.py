"""Consumer lag through time, from the brokers' files: what ``kafka-consumer-groups.sh --describe``
and Burrow would have said about a (group, topic, partition) at any instant.

Inputs: the offsets that took effect for the partition (a commit record's time, or its
transaction marker's), the partition's owners over time (the group's assignment), and the data
partition's log (:class:`kgtool.storage.list_offsets.PartitionLog`). A row at instant T holds the
state of T: the offset committed at or before T, the log end ``end(T)`` (the first offset whose
record is stamped at or after T), ``lag = end(T) - offset``, ``lag_ms = T -`` the timestamp of the
next record the group would read (0 when caught up), Burrow's verdict (:mod:`kgtool.offsets.burrow`)
and the owner at T. Rows come at each commit and every ``step`` between the partition's first and
last commit; the state at the audit's end (or ``--until``) is computed the same way, for the
offsets table, and closes the episodes (a consumer that stopped for good is STOP there).

Episodes are the stretches of consecutive rows with the same status other than OK; the rules
turn them into findings, one per group and episode (the overlapping episodes of its partitions
with that status): ``lag-stall`` (STALL), ``consumer-stopped`` (STOP), ``lag-growing`` (WARN
lasting longer than ``warn_ms``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgtool.offsets.burrow import INTERVALS, OFFSET_REFRESH_MS, CommitWindow, Status, poll_instants

DEFAULT_STEP_MS = 60_000
DEFAULT_WARN_MS = 300_000

#: The rule of an episode's status.
RULE_OF_STATUS = {Status.STALL: "lag-stall", Status.STOP: "consumer-stopped", Status.WARN: "lag-growing"}


@dataclass(frozen=True)
class Owner:
    """Who held the partition, as ``kafka-consumer-groups.sh --describe`` shows it."""

    consumer_id: str
    host: str | None
    client_id: str | None


@dataclass(frozen=True)
class Effective:
    """An offset that took effect at ``timestamp`` (None: the committed offset was deleted)."""

    timestamp: int
    offset: int | None


@dataclass(slots=True)
class LagRow:
    timestamp: int
    committed_offset: int
    log_end_offset: int
    lag: int
    lag_ms: int
    lag_status: str
    owner: Owner | None

    def to_dict(self) -> dict[str, Any]:
        o = self.owner
        return {"timestamp": self.timestamp, "committed_offset": self.committed_offset,
                "log_end_offset": self.log_end_offset, "lag": self.lag, "lag_ms": self.lag_ms,
                "lag_status": self.lag_status, "consumer_id": o.consumer_id if o else None,
                "host": o.host if o else None, "client_id": o.client_id if o else None}


@dataclass
class Episode:
    """A stretch of rows of one partition with the same status (not OK)."""

    status: str
    start: int
    end: int | None  # the first row after it with another status; None: still open
    last: int  # the last row in it
    peak_lag: int
    peak_lag_ms: int
    owners: list[Owner] = field(default_factory=list)


class LogView:
    """``end(T)`` and the timestamp at an offset, cached (a partition answers many instants)."""

    def __init__(self, end_at: Callable[[int], int], timestamp_at: Callable[[int], int | None]) -> None:
        self._end_at = end_at
        self._timestamp_at = timestamp_at
        self._ends: dict[int, int] = {}
        self._stamps: dict[int, int | None] = {}

    def end(self, t: int) -> int:
        v = self._ends.get(t)
        if v is None:
            v = self._ends[t] = self._end_at(t)
        return v

    def stamp(self, offset: int) -> int | None:
        if offset not in self._stamps:
            self._stamps[offset] = self._timestamp_at(offset)
        return self._stamps[offset]


def instants(effective: Sequence[Effective], step_ms: int, until: int | None) -> list[int]:
    """Each commit's instant and every ``step_ms`` between the first and the last, up to ``until``."""
    if not effective:
        return []
    first, last = effective[0].timestamp, effective[-1].timestamp
    out = {e.timestamp for e in effective}
    if step_ms > 0:
        out.update(range(first + step_ms, last, step_ms))
    if until is not None:
        out = {t for t in out if t <= until}
    return sorted(out)


def owner_at(owners: Sequence[tuple[int, Owner | None]], t: int, times: Sequence[int] | None = None) -> Owner | None:
    """The owner at ``t``: the last change at or before it (``owners`` by time; ``times``: their
    timestamps, when the caller keeps them)."""
    k = bisect_right(times if times is not None else [ts for ts, _ in owners], t) - 1
    return owners[k][1] if k >= 0 else None


def lag_rows(effective: Sequence[Effective], owners: Sequence[tuple[int, Owner | None]], log: LogView, *,
             step_ms: int = DEFAULT_STEP_MS, until: int | None = None, end: int | None = None,
             intervals: int = INTERVALS, refresh_ms: int = OFFSET_REFRESH_MS) -> tuple[list[LagRow], LagRow | None]:
    """The rows of one (group, topic, partition), in time order (``effective`` in log order), up
    to ``until``; and the state at ``end`` (the audit's end or ``--until``: the offsets table's
    lag, and the last point of the episodes), None without a committed offset then."""
    rows: list[LagRow] = []
    window = CommitWindow(intervals)
    k = 0
    committed: int | None = None
    owner_times = [ts for ts, _ in owners]

    def advance(t: int) -> None:
        nonlocal k, committed, window
        while k < len(effective) and effective[k].timestamp <= t:
            e = effective[k]
            committed = e.offset
            if e.offset is None:
                window = CommitWindow(intervals)  # deleted: Burrow starts over with the next commit
            else:
                window.add(e.offset, e.timestamp, log.end(e.timestamp))
            k += 1

    def row(t: int) -> LagRow:
        end_t = log.end(t)
        status, _current = window.status(end_t, t, _Polls(log, t, intervals, refresh_ms))
        lag = end_t - committed
        lag_ms = 0
        if lag > 0:
            ts = log.stamp(committed)
            lag_ms = max(0, t - ts) if ts is not None else 0
        return LagRow(t, committed, end_t, lag, lag_ms, status.name, owner_at(owners, t, owner_times))

    for t in instants(effective, step_ms, until):
        advance(t)
        if committed is not None:
            rows.append(row(t))
    last: LagRow | None = None
    if end is not None:
        advance(end)
        if committed is not None:
            last = rows[-1] if rows and rows[-1].timestamp == end else row(end)
    return rows, last


class _Polls(Sequence):
    """The log ends at Burrow's recent polls before ``t``, computed only when asked for (the
    STOP check needs them; most rows do not)."""

    def __init__(self, log: LogView, t: int, intervals: int, refresh_ms: int) -> None:
        self._args = (log, t, intervals, refresh_ms)
        self._ends: list[int] | None = None

    def _get(self) -> list[int]:
        if self._ends is None:
            log, t, intervals, refresh_ms = self._args
            self._ends = [log.end(p) for p in poll_instants(t, intervals, refresh_ms)]
        return self._ends

    def __getitem__(self, i):
        return self._get()[i]

    def __len__(self) -> int:
        return len(self._get())

    def __iter__(self):
        return iter(self._get())


def episodes(rows: Iterable[LagRow]) -> list[Episode]:
    """The stretches of rows with the same status other than OK."""
    out: list[Episode] = []
    cur: Episode | None = None
    for r in rows:
        if cur is not None and r.lag_status != cur.status:
            cur.end = r.timestamp
            cur = None
        if r.lag_status == Status.OK.name:
            continue
        if cur is None:
            cur = Episode(r.lag_status, r.timestamp, None, r.timestamp, r.lag, r.lag_ms)
            out.append(cur)
        cur.last = r.timestamp
        cur.peak_lag = max(cur.peak_lag, r.lag)
        cur.peak_lag_ms = max(cur.peak_lag_ms, r.lag_ms)
        if r.owner is not None and r.owner not in cur.owners:
            cur.owners.append(r.owner)
    return out


@dataclass
class GroupEpisode:
    """Overlapping episodes of one status among a group's partitions: one finding."""

    group: str
    status: str
    start: int
    end: int | None
    partitions: list[tuple[str, int]]
    peak_lag: int
    peak_lag_ms: int
    owners: list[Owner]


def group_episodes(group: str, by_partition: dict[tuple[str, int], list[Episode]]) -> list[GroupEpisode]:
    """A group's partition episodes merged by status where they overlap in time."""
    flat = sorted(((e, tp) for tp, eps in by_partition.items() for e in eps),
                  key=lambda et: (et[0].status, et[0].start, et[1]))
    out: list[GroupEpisode] = []
    for e, tp in flat:
        g = out[-1] if out else None
        if g is not None and g.status == e.status and (g.end is None or e.start <= g.end):
            if tp not in g.partitions:
                g.partitions.append(tp)
            g.end = None if g.end is None or e.end is None else max(g.end, e.end)
            g.peak_lag = max(g.peak_lag, e.peak_lag)
            g.peak_lag_ms = max(g.peak_lag_ms, e.peak_lag_ms)
            g.owners.extend(o for o in e.owners if o not in g.owners)
            continue
        out.append(GroupEpisode(group, e.status, e.start, e.end, [tp], e.peak_lag, e.peak_lag_ms, list(e.owners)))
    return sorted(out, key=lambda g: (g.start, g.status))


def rule_of(ep: GroupEpisode, last_instant: int, warn_ms: int = DEFAULT_WARN_MS) -> str | None:
    """The rule an episode fires, or None (a WARN no longer than ``warn_ms``, a REWIND)."""
    rule = RULE_OF_STATUS.get(Status[ep.status])
    if rule is None:
        return None
    if Status[ep.status] is Status.WARN:
        end = ep.end if ep.end is not None else last_instant
        if end - ep.start <= warn_ms:
            return None
    return rule
