"""Consumer lag through time, from the brokers' files: what ``kafka-consumer-groups.sh --describe``
and Burrow would have said about a (group, topic, partition) at any instant.

Inputs: the offsets that took effect for the partition (a commit record's time, or its
transaction marker's), the partition's owners over time (the group's assignment), and the data
partition's log (:class:`kgtool.lag.list_offsets.PartitionLog`). A row at instant T holds the
state of T: the offset committed at or before T, the log end ``end(T)`` (the first offset whose
record is stamped at or after T), ``lag = end(T) - offset``, ``lag_ms = T -`` the timestamp of the
next record the group would read (0 when caught up), Burrow's verdict (:mod:`kgtool.lag.burrow`)
and the owner at T. Rows come at each commit and every ``step`` from the partition's first commit
to the end of the audited span (the inputs' last record, or ``--until``), while the group holds a
committed offset: a consumer that stops committing goes on having rows, so its STOP episode starts
when Burrow's rule first holds, not at the end. The state at that end is computed the same way,
for the offsets table, and closes the episodes.

Episodes are the stretches of consecutive rows with the same status other than OK; the rules
turn them into findings, one per group and episode (the overlapping episodes of its partitions
with that status): ``lag-stall`` (STALL), ``consumer-stopped`` (STOP), ``lag-growing`` (WARN
lasting longer than ``warn_ms``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from kgtool import native
from kgtool.lag.burrow import INTERVALS, MIN_DISTANCE_MS, OFFSET_REFRESH_MS, CommitWindow, Status, poll_instants

DEFAULT_STEP_MS = 60_000
DEFAULT_WARN_MS = 300_000

#: The rule of an episode's status.
RULE_OF_STATUS = {Status.STALL: "lag-stall", Status.STOP: "consumer-stopped", Status.WARN: "lag-growing"}


class Owner(NamedTuple):
    """Who held the partition, as ``kafka-consumer-groups.sh --describe`` shows it (a tuple: a
    group's episodes gather thousands of them)."""

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
    #: Burrow's window held two commits at least at one of its rows (:func:`window_evidence`):
    #: without that, STALL, WARN and STOP hold vacuously and no rule fires
    evidence: bool = True


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


def instants(effective: Sequence[Effective], step_ms: int, until: int | None, end: int | None = None) -> list[int]:
    """Each commit's instant and every ``step_ms`` after the first, before the last commit or the
    audit's ``end`` (whichever is later), up to ``until``."""
    if not effective:
        return []
    first, last = effective[0].timestamp, effective[-1].timestamp
    out = {e.timestamp for e in effective}
    if step_ms > 0:
        out.update(range(first + step_ms, last if end is None else max(last, end), step_ms))
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
             intervals: int = INTERVALS, refresh_ms: int = OFFSET_REFRESH_MS,
             min_distance_ms: int = MIN_DISTANCE_MS) -> tuple[list[LagRow], LagRow | None]:
    """The rows of one (group, topic, partition), in time order (``effective`` in log order), up
    to ``until``; and the state at ``end`` (the audit's end or ``--until``: the offsets table's
    lag, and the last point of the episodes), None without a committed offset then."""
    rows: list[LagRow] = []
    window = CommitWindow(intervals, min_distance_ms)
    k = 0
    committed: int | None = None
    owner_times = [ts for ts, _ in owners]

    def advance(t: int) -> None:
        nonlocal k, committed, window
        while k < len(effective) and effective[k].timestamp <= t:
            e = effective[k]
            committed = e.offset
            if e.offset is None:
                window = CommitWindow(intervals, min_distance_ms)  # deleted: Burrow starts over with the next commit
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

    for t in instants(effective, step_ms, until, end):
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
    evidence: bool = True  # one of its partitions' episodes has evidence


def group_episodes(group: str, by_partition: dict[tuple[str, int], list[Episode]]) -> list[GroupEpisode]:
    """A group's partition episodes merged by status where they overlap in time."""
    flat = sorted(((e, tp) for tp, eps in by_partition.items() for e in eps),
                  key=lambda et: (et[0].status, et[0].start, et[1]))
    out: list[GroupEpisode] = []
    held: list[dict[Owner, None]] = []  # each merged episode's owners, in order (a dict: no repeats)
    for e, tp in flat:
        g = out[-1] if out else None
        if g is not None and g.status == e.status and (g.end is None or e.start <= g.end):
            if tp not in g.partitions:
                g.partitions.append(tp)
            g.end = None if g.end is None or e.end is None else max(g.end, e.end)
            g.peak_lag = max(g.peak_lag, e.peak_lag)
            g.peak_lag_ms = max(g.peak_lag_ms, e.peak_lag_ms)
            held[-1].update(dict.fromkeys(e.owners))
            g.evidence = g.evidence or e.evidence
            continue
        out.append(GroupEpisode(group, e.status, e.start, e.end, [tp], e.peak_lag, e.peak_lag_ms, [], e.evidence))
        held.append(dict.fromkeys(e.owners))
    for g, owners in zip(out, held):
        g.owners = list(owners)
    return sorted(out, key=lambda g: (g.start, g.status))


def rule_of(ep: GroupEpisode, last_instant: int, warn_ms: int = DEFAULT_WARN_MS) -> str | None:
    """The rule an episode fires, or None (a WARN no longer than ``warn_ms``, a REWIND, an
    episode without evidence: a window of one commit, where Burrow's STALL, WARN and STOP hold
    vacuously)."""
    rule = RULE_OF_STATUS.get(Status[ep.status])
    if rule is None or not ep.evidence:
        return None
    if Status[ep.status] is Status.WARN:
        end = ep.end if ep.end is not None else last_instant
        if end - ep.start <= warn_ms:
            return None
    return rule


def window_evidence(bounds: np.ndarray, when: np.ndarray, offset: np.ndarray, seq: np.ndarray, start: np.ndarray,
                    last: np.ndarray, min_distance_ms: int = MIN_DISTANCE_MS) -> np.ndarray:
    """For each episode (its sequence, first and last instants), whether Burrow's window held two
    commits at least at one of its rows: the evidence a lag rule asks for. With one commit,
    Burrow's rules hold vacuously: every offset of the window is "the same" (STALL), its lag
    "never went down" (WARN), and any time since it is "longer than the window spans" (STOP).
    Two commits (``lag-stall``: the same offset twice; ``lag-growing``: a lag that did not go
    down; ``consumer-stopped``: a span the silence outlasts) make them a finding.

    The window (``burrow.CommitWindow``) starts over at a deleted offset; its first entry keeps
    its instant t0 while commits less than ``min_distance_ms`` after it merge into it
    (``mergeFrequentCommitIntoPrevious``), so it holds two entries from the first commit at or
    after t0 + ``min_distance_ms`` on, until the next deletion."""
    n = len(when)
    out = np.zeros(len(seq), np.bool_)
    if not n or not len(seq):
        return out
    idx = np.arange(n)
    deleted = offset == DELETED
    # each commit's run: from its sequence's first commit, or the commit after a deletion
    starts = np.zeros(n, np.bool_)
    starts[bounds[:-1][bounds[:-1] < n]] = True
    starts[1:] |= deleted[:-1]
    run_start = np.maximum.accumulate(np.where(starts, idx, 0))
    two = ~deleted & (when >= when[run_start] + min_distance_ms)
    held = np.zeros(n + 1, np.int64)
    np.cumsum(two, out=held[1:])
    seq = np.asarray(seq, np.int64)
    c0 = bounds[seq]
    # the commits in force at the episode's first and last rows (and those between): one search
    # over (sequence, instant) keys, the sequences' commits being contiguous and ascending
    lo = int(when.min())
    span = int(when.max()) - lo + 3
    nseq = len(bounds) - 1
    if nseq * span < (1 << 62):
        seq_of = np.repeat(np.arange(nseq, dtype=np.int64), np.diff(bounds))
        keys = seq_of * span + (when - lo + 1)
        def find(t: np.ndarray) -> np.ndarray:
            return np.searchsorted(keys, seq * span + np.clip(t - lo + 1, 0, span - 1), "right") - 1
        k0, k1 = np.maximum(find(np.asarray(start, np.int64)), c0), find(np.asarray(last, np.int64))
    else:  # instants too far apart for one key: a search per episode
        k0, k1 = np.empty(len(seq), np.int64), np.empty(len(seq), np.int64)
        for e, (s, a, z) in enumerate(zip(seq.tolist(), np.asarray(start).tolist(), np.asarray(last).tolist())):
            b0, b1 = int(bounds[s]), int(bounds[s + 1])
            k0[e] = b0 + max(int(np.searchsorted(when[b0:b1], a, "right")) - 1, 0)
            k1[e] = b0 + int(np.searchsorted(when[b0:b1], z, "right")) - 1
    ok = k1 >= k0
    out[ok] = held[k1[ok] + 1] - held[k0[ok]] > 0
    return out


# ---- a data partition's sequences at once, as arrays (the lag phase's path) ------------------------

#: ``Effective.offset`` None (a deleted committed offset) in the arrays.
DELETED = np.iinfo(np.int64).min
kernel: Any = native.load("kgtool.lag._kernel")
#: ``_lag.h``'s mark on a status that is STOP unless a recent poll saw the consumer caught up.
_POLLS = 16


@dataclass
class LagArrays:
    """Rows of the sequences (a group's commits on one partition) of a data partition.

    ``seq`` (int32), ``t``, ``committed``, ``end``, ``lag``, ``lag_ms`` (int64), ``status``
    (uint8, :class:`Status`), ``owner`` (int32, an index into the owners given, -1: none), one
    element a row."""

    seq: np.ndarray
    t: np.ndarray
    committed: np.ndarray
    end: np.ndarray
    lag: np.ndarray
    lag_ms: np.ndarray
    status: np.ndarray
    owner: np.ndarray

    def __len__(self) -> int:
        return len(self.t)

    def take(self, idx: np.ndarray | slice) -> LagArrays:
        """The rows at ``idx`` (indices, a mask or a slice: a slice gives views)."""
        return LagArrays(*(getattr(self, f)[idx] for f in _ROW_FIELDS))

    @classmethod
    def empty(cls, n: int) -> LagArrays:
        return cls(np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
                   np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.uint8), np.empty(n, np.int32))


_ROW_FIELDS = ("seq", "t", "committed", "end", "lag", "lag_ms", "status", "owner")


@dataclass
class PartitionLag:
    """What :func:`partition_lag` gives: its rows in one room of arrays. The lag table's rows are
    ``room[:n]`` (sequence order, then time): :attr:`rows`, views. The states at the end that
    are not also a table row (the offsets table's lag, the episodes' last point) are the last
    ``m`` of the room, the first sequence's last: :attr:`at_end`. ``last[s]``: the row of the
    room holding sequence ``s``'s state at the end, -1 without a committed offset then."""

    room: LagArrays
    n: int
    m: int
    last: np.ndarray

    @property
    def rows(self) -> LagArrays:
        return self.room.take(slice(0, self.n))

    @property
    def at_end(self) -> LagArrays:
        """The states at the end only, in sequence order (a copy)."""
        cap = len(self.room)
        return self.room.take(np.arange(cap - 1, cap - 1 - self.m, -1))

    def row(self, k: int) -> dict[str, int]:
        """Row ``k`` of the room, as ints."""
        return {f: int(getattr(self.room, f)[k]) for f in _ROW_FIELDS}


@dataclass
class Runs:
    """The episodes and peaks of a :class:`PartitionLag` (:func:`partition_runs`). A sequence's
    points are its table rows, then its state at the end when that is not a row; an episode is
    a stretch of a sequence's points with one status other than OK. Episode ``e``: ``seq``,
    ``status`` (uint8), ``start`` and ``last`` (its first and last point's instants), ``end``
    (the next point's instant, DELETED: none, still open at the end), ``peak_lag``,
    ``peak_lag_ms``, its owners ``owners[owner_bounds[e]:owner_bounds[e+1]]`` (ids, in the order
    they held it; one may come back after another: :meth:`held` lists each once). Per sequence:
    its points' largest lag, lag_ms and status (``seq_worst`` 0: no point)."""

    seq: np.ndarray
    status: np.ndarray
    start: np.ndarray
    end: np.ndarray
    last: np.ndarray
    peak_lag: np.ndarray
    peak_lag_ms: np.ndarray
    owner_bounds: np.ndarray
    owners: np.ndarray
    seq_peak_lag: np.ndarray
    seq_peak_lag_ms: np.ndarray
    seq_worst: np.ndarray

    def held(self, e: int) -> list[int]:
        """Episode ``e``'s owners, each once, in the order they held the partition."""
        return list(dict.fromkeys(self.owners[self.owner_bounds[e]:self.owner_bounds[e + 1]].tolist()))


class PartitionSource(Protocol):
    """What :func:`partition_lag` asks of a data partition, as
    :class:`kgtool.lag.list_offsets.PartitionLog` answers it: many instants or offsets at
    once (ascending), or one at a time (the pure-Python path)."""

    def ends_at(self, times: np.ndarray) -> np.ndarray: ...

    def stamps_at(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def end_at(self, t: int) -> int: ...

    def timestamp_at(self, offset: int) -> int | None: ...


def _step_counts(bounds: np.ndarray, when: np.ndarray, step_ms: int, end: int | None) -> np.ndarray:
    """How many steps each sequence has: ``first + k step`` (k >= 1) before its last commit or
    ``end``, whichever is later (:func:`instants`)."""
    first_i, last_i = bounds[:-1], bounds[1:] - 1
    live = last_i >= first_i
    count = np.zeros(len(first_i), np.int64)
    if step_ms > 0 and live.any():
        stop = when[last_i[live]] if end is None else np.maximum(when[last_i[live]], end)
        count[live] = np.maximum((stop - when[first_i[live]] - 1) // step_ms, 0)
    return count


def step_instants(bounds: np.ndarray, when: np.ndarray, step_ms: int, end: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Every ``first + k step`` (k >= 1) of each sequence before its last commit or ``end``,
    whichever is later: (instants, their sequence), as :func:`instants` makes them."""
    first_i = bounds[:-1]
    count = _step_counts(bounds, when, step_ms, end)
    total = int(count.sum())
    seqs = np.repeat(np.arange(len(count), dtype=np.int64), count)
    if not total:
        return np.zeros(0, np.int64), seqs
    starts = np.repeat(np.cumsum(count) - count, count)
    k = np.arange(total, dtype=np.int64) - starts + 1
    return when[np.repeat(first_i, count)] + k * step_ms, seqs


def distinct(values: np.ndarray, inverse: bool = False) -> Any:
    """The distinct values, ascending (with ``inverse``, also each value's place among them, as
    ``np.unique(values, return_inverse=True)``): a mark a value over their range when it is
    small beside their number (no sort: a partition's commit instants and offsets are dense, as
    an offsets partition's (group, data partition) pairs are), else np.unique."""
    if not len(values):
        empty = np.zeros(0, np.int64)
        return (empty, empty) if inverse else empty
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= 4 * len(values) + (1 << 16):
        return np.unique(values, return_inverse=inverse)
    seen = np.zeros(hi - lo + 1, np.bool_)
    seen[values - lo] = True
    out = np.flatnonzero(seen) + lo
    if not inverse:
        return out
    return out, (np.cumsum(seen, dtype=np.int64) - 1)[values - lo]


def partition_lag(bounds: np.ndarray, when: np.ndarray, offset: np.ndarray, owner_bounds: np.ndarray,
                  owner_times: np.ndarray, owner_ids: np.ndarray, log: Any, *, step_ms: int = DEFAULT_STEP_MS,
                  until: int | None = None, end: int | None = None, intervals: int = INTERVALS,
                  min_distance_ms: int = MIN_DISTANCE_MS, refresh_ms: int = OFFSET_REFRESH_MS,
                  pure: bool = False, asked: tuple[np.ndarray, np.ndarray] | None = None,
                  answers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> PartitionLag:
    """:func:`lag_rows` of every sequence of one data partition at once. Sequence ``s`` is
    commits ``bounds[s]:bounds[s+1]`` (``when`` ascending within it, ``offset`` DELETED where the
    committed offset was deleted); its owners ``owner_bounds[s]:owner_bounds[s+1]`` (times
    ascending, ids -1 for none). ``log``: :class:`PartitionSource`.

    The instants are asked of the log once each, ascending (one walk per segment), and so are the
    committed offsets' timestamps; the rows come from ``_lag.h`` (``pure``, or without the
    compiled extension: :func:`lag_rows` a sequence at a time, the same rows in the same room).
    ``asked``: :func:`questions` of these arguments, when the caller has them (and may have
    asked the log to prefetch their answers); ``answers``: :func:`answer` of them, when the
    caller has that too."""
    bounds = np.ascontiguousarray(bounds, np.int64)
    when = np.ascontiguousarray(when, np.int64)
    offset = np.ascontiguousarray(offset, np.int64)
    if pure or kernel is None:
        return _partition_lag_py(bounds, when, offset, owner_bounds, owner_times, owner_ids, log, step_ms, until, end,
                                 intervals, min_distance_ms, refresh_ms)
    instants_, offs = asked if asked is not None else questions(bounds, when, offset, step_ms, end)
    ends, stamps_u, known_u = answers if answers is not None else answer(log, (instants_, offs))
    nseq = len(bounds) - 1
    cap = _room(bounds, when, step_ms, end)
    room = LagArrays.empty(cap)
    last = np.empty(nseq, np.int64)
    n, m = kernel.lag_rows(bounds, when, offset, instants_, ends, offs, np.ascontiguousarray(stamps_u, np.int64),
                            known_u.astype(np.uint8), np.ascontiguousarray(owner_bounds, np.int64),
                            np.ascontiguousarray(owner_times, np.int64), np.ascontiguousarray(owner_ids, np.int32),
                            step_ms, until or 0, until is not None, end or 0, end is not None, intervals,
                            min_distance_ms, room.seq, room.t, room.committed, room.end, room.lag, room.lag_ms,
                            room.status, room.owner, last)
    out = PartitionLag(room, n, m, last)
    _settle_polls(out, log, intervals, refresh_ms)
    return out


def questions(bounds: np.ndarray, when: np.ndarray, offset: np.ndarray, step_ms: int, end: int | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`partition_lag` asks of the log: every instant (the commits', the steps', the
    end), and every committed offset, each once, ascending."""
    steps, _ = step_instants(bounds, when, step_ms, end)
    instants_ = distinct(np.concatenate([when, steps] + ([np.array([end], np.int64)] if end is not None else [])))
    return instants_, distinct(offset[offset != DELETED])


def answer(log: Any, asked: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The log's answers to :func:`questions`: end(T) at each instant, and the timestamp at each
    committed offset with whether it is known."""
    instants_, offs = asked
    return log.ends_and_stamps(instants_, offs)  # segment by segment (PartitionLog)


def _room(bounds: np.ndarray, when: np.ndarray, step_ms: int, end: int | None = None) -> int:
    """The rows :func:`partition_lag` can make: a commit or a step each, and a state at the end
    a sequence."""
    nseq = len(bounds) - 1
    steps = int(_step_counts(bounds, when, step_ms, end).sum()) if nseq else 0
    return len(when) + steps + nseq


def _settle_polls(out: PartitionLag, log: Any, intervals: int, refresh_ms: int) -> None:
    """checkIfRecentLagZero: each row marked _POLLS is STOP unless one of Burrow's last polls
    before it saw the log end at or below the committed offset (one more ``ends_at``)."""
    room = out.room
    cap = len(room)
    polled = np.flatnonzero(room.status[:out.n] >= _POLLS)
    if out.m:
        polled = np.r_[polled, cap - out.m + np.flatnonzero(room.status[cap - out.m:] >= _POLLS)]
    if not len(polled):
        return
    grid = room.t[polled][:, None] - refresh_ms * np.arange(intervals - 1, -1, -1, dtype=np.int64)[None, :]
    polls = np.unique(grid)
    seen = log.ends_at(polls)[np.searchsorted(polls, grid)]
    caught_up = (seen <= room.committed[polled][:, None]).any(axis=1)
    room.status[polled] = np.where(caught_up, room.status[polled] - _POLLS, int(Status.STOP))


def partition_runs(lag: PartitionLag, nseq: int, pure: bool = False) -> Runs:
    """The episodes and peaks of ``lag`` (:class:`Runs`): ``_lag.h``'s lag_runs, or
    :func:`_runs_py` (``pure``, or without the compiled extension)."""
    if pure or kernel is None:
        return _runs_py(lag, nseq)
    room = lag.room
    e_cap = lag.n + lag.m
    r = Runs(np.empty(e_cap, np.int32), np.empty(e_cap, np.uint8), *(np.empty(e_cap, np.int64) for _ in range(5)),
             np.empty(e_cap + 1, np.int64), np.empty(max(e_cap, 1), np.int32), np.empty(nseq, np.int64),
             np.empty(nseq, np.int64), np.empty(nseq, np.uint8))
    e, p = kernel.lag_runs(nseq, room.seq, room.t, room.lag, room.lag_ms, room.status, room.owner, lag.n, lag.m,
                            r.seq, r.status, r.start, r.end, r.last, r.peak_lag, r.peak_lag_ms, r.owner_bounds,
                            r.owners, r.seq_peak_lag, r.seq_peak_lag_ms, r.seq_worst)
    return Runs(r.seq[:e], r.status[:e], r.start[:e], r.end[:e], r.last[:e], r.peak_lag[:e], r.peak_lag_ms[:e],
                r.owner_bounds[:e + 1], r.owners[:p], r.seq_peak_lag, r.seq_peak_lag_ms, r.seq_worst)


def _runs_py(lag: PartitionLag, nseq: int) -> Runs:
    """The pure twin of ``_lag.h``'s lag_runs (:func:`partition_runs`): :func:`episodes` of each
    sequence's points (its rows, then its state at the end), and their peaks."""
    rows, tail = lag.rows, lag.at_end
    pts = LagArrays(*(np.concatenate([getattr(rows, f), getattr(tail, f)]) for f in _ROW_FIELDS))
    pts = pts.take(np.argsort(pts.seq, kind="stable"))
    eps: dict[str, list[int]] = {k: [] for k in ("seq", "status", "start", "end", "last", "peak_lag", "peak_lag_ms")}
    owner_bounds, owners = [0], []
    peak = np.zeros(nseq, np.int64)
    peak_ms = np.zeros(nseq, np.int64)
    worst = np.zeros(nseq, np.uint8)
    starts = np.searchsorted(pts.seq, np.arange(nseq + 1))
    for s in range(nseq):
        a, z = int(starts[s]), int(starts[s + 1])
        if a == z:
            continue
        # (from 0, as lag_runs: a committed offset past the log end is no peak)
        peak[s], peak_ms[s], worst[s] = max(0, pts.lag[a:z].max()), max(0, pts.lag_ms[a:z].max()), pts.status[a:z].max()
        points = [LagRow(t, c, e, n, ms, Status(st).name, None if o < 0 else o) for t, c, e, n, ms, st, o in zip(
            *(getattr(pts, f)[a:z].tolist() for f in ("t", "committed", "end", "lag", "lag_ms", "status", "owner")))]
        for ep in episodes(points):
            for f, v in (("seq", s), ("status", int(Status[ep.status])), ("start", ep.start), ("last", ep.last),
                         ("end", DELETED if ep.end is None else ep.end), ("peak_lag", ep.peak_lag),
                         ("peak_lag_ms", ep.peak_lag_ms)):
                eps[f].append(v)
            owners.extend(ep.owners)
            owner_bounds.append(len(owners))
    return Runs(np.array(eps["seq"], np.int32), np.array(eps["status"], np.uint8),
                *(np.array(eps[f], np.int64) for f in ("start", "end", "last", "peak_lag", "peak_lag_ms")),
                np.array(owner_bounds, np.int64), np.array(owners, np.int32), peak, peak_ms, worst)


def _partition_lag_py(bounds, when, offset, owner_bounds, owner_times, owner_ids, log, step_ms, until, end, intervals,
                      min_distance_ms, refresh_ms) -> PartitionLag:
    """The pure-Python path of :func:`partition_lag`: :func:`lag_rows` per sequence, into the
    same room as the kernel's."""
    view = LogView(log.end_at, log.timestamp_at)
    room = LagArrays.empty(_room(bounds, when, step_ms, end))
    cap = len(room)
    last = np.full(len(bounds) - 1, -1, np.int64)
    n = m = 0

    def put(i: int, s: int, r: LagRow) -> None:
        for f, v in (("seq", s), ("t", r.timestamp), ("committed", r.committed_offset), ("end", r.log_end_offset),
                     ("lag", r.lag), ("lag_ms", r.lag_ms), ("status", int(Status[r.lag_status])),
                     ("owner", -1 if r.owner is None else r.owner)):
            getattr(room, f)[i] = v

    for s in range(len(bounds) - 1):
        # the kernel's checks (_lag.h lag_rows), in its order: the same ValueError
        if not 0 <= bounds[s] <= bounds[s + 1] <= len(when):
            raise ValueError("lag_rows: sequence bounds out of range")
        if not 0 <= owner_bounds[s] <= owner_bounds[s + 1] <= len(owner_times):
            raise ValueError("lag_rows: owner bounds out of range")
        eff = [Effective(int(when[j]), None if offset[j] == DELETED else int(offset[j]))
               for j in range(bounds[s], bounds[s + 1])]
        owners = [(int(owner_times[j]), None if owner_ids[j] < 0 else int(owner_ids[j]))
                  for j in range(owner_bounds[s], owner_bounds[s + 1])]
        rows, at_end = lag_rows(eff, owners, view, step_ms=step_ms, until=until, end=end, intervals=intervals,
                                refresh_ms=refresh_ms, min_distance_ms=min_distance_ms)
        for r in rows:
            put(n, s, r)
            n += 1
        if at_end is not None:
            if rows and at_end is rows[-1]:
                last[s] = n - 1
            else:
                m += 1
                put(cap - m, s, at_end)
                last[s] = cap - m
    return PartitionLag(room, n, m, last)
