"""The lag kernel (``kgtool/lag/_lag.h``) against its pure-Python twin (``lag_rows`` a
sequence at a time): the same rows, statuses, owners and end states, on random sequences (commits
close together and far apart, rewinds, stalls, deletions, owners changing) over a random log."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.lag import timeline as lag
from kgtool.lag.burrow import Status

pytestmark = pytest.mark.skipif(lag.kernel is None, reason="the compiled extension is not built (pure twin only)")


class FakeLog:
    """A data partition as (offset, timestamp) records, answered by definition."""

    def __init__(self, stamps: list[int]) -> None:
        self.stamps = stamps  # record k has offset k

    def end_at(self, t: int) -> int:
        return next((k for k, ts in enumerate(self.stamps) if ts >= t), len(self.stamps))

    def timestamp_at(self, offset: int) -> int | None:
        return self.stamps[offset] if 0 <= offset < len(self.stamps) else None

    def ends_at(self, times):
        return np.array([self.end_at(int(t)) for t in times], np.int64)

    def stamps_at(self, offsets):
        got = [self.timestamp_at(int(o)) for o in offsets]
        return (np.array([0 if g is None else g for g in got], np.int64),
                np.array([g is not None for g in got], np.bool_))

    def ends_and_stamps(self, times, offsets):
        return (self.ends_at(times), *self.stamps_at(offsets))


T0 = 1_700_000_000_000


@st.composite
def partitions(draw):
    n = draw(st.integers(0, 300))
    gaps = draw(st.lists(st.integers(-2000, 4000), min_size=n, max_size=n))
    stamps, t = [], T0
    for g in gaps:
        t += max(g, 0)
        stamps.append(t + min(g, 0))  # stragglers now and then: CreateTime out of order
    nseq = draw(st.integers(1, 6))
    when, offset, bounds = [], [], [0]
    ob, otimes, oids = [0], [], []
    for _ in range(nseq):
        k = draw(st.integers(0, 25))
        ts = sorted(draw(st.lists(st.integers(T0 - 5000, T0 + 400_000), min_size=k, max_size=k)))
        # commits bunched (merged by min-distance), stalled, rewound, deleted, ahead of the log
        pos = 0
        for x in ts:
            move = draw(st.sampled_from([0, 0, 1, 5, 30, -7, None]))
            if move is None:
                offset.append(lag.DELETED)
            else:
                pos = max(0, pos + move)
                offset.append(min(pos, n + 3))
            when.append(x)
        bounds.append(len(when))
        m = draw(st.integers(0, 4))
        for x in sorted(draw(st.lists(st.integers(T0 - 5000, T0 + 400_000), min_size=m, max_size=m, unique=True))):
            otimes.append(x)
            oids.append(draw(st.integers(-1, 3)))
        ob.append(len(otimes))
    step = draw(st.sampled_from([0, 997, 10_000, 60_000]))
    until = draw(st.one_of(st.none(), st.integers(T0, T0 + 400_000)))
    end = until if until is not None else draw(st.one_of(st.none(), st.integers(T0, T0 + 500_000)))
    return stamps, [np.array(x, np.int64) for x in (bounds, when, offset, ob, otimes)] + \
        [np.array(oids, np.int32)], step, until, end


def _same(a: lag.PartitionLag, b: lag.PartitionLag) -> None:
    """The same rows, states at the end and places of the states at the end; and the same runs
    (episodes and peaks) from the kernel's and the pure twin's."""
    assert (a.n, a.m, len(a.room)) == (b.n, b.m, len(b.room))
    for f in lag._ROW_FIELDS:
        assert getattr(a.rows, f).tolist() == getattr(b.rows, f).tolist(), f
        assert getattr(a.at_end, f).tolist() == getattr(b.at_end, f).tolist(), f
    assert a.last.tolist() == b.last.tolist()
    nseq = len(a.last)
    ra, rb = lag.partition_runs(a, nseq), lag.partition_runs(b, nseq, pure=True)
    for f in ("seq", "status", "start", "end", "last", "peak_lag", "peak_lag_ms", "seq_peak_lag", "seq_peak_lag_ms",
              "seq_worst"):
        assert getattr(ra, f).tolist() == getattr(rb, f).tolist(), f
    assert [ra.held(e) for e in range(len(ra.seq))] == [rb.held(e) for e in range(len(rb.seq))]


@settings(max_examples=300, deadline=None)
@given(partitions())
def test_the_kernel_gives_the_rows_of_lag_rows(case):
    stamps, (bounds, when, offset, ob, otimes, oids), step, until, end = case
    log = FakeLog(stamps)
    kw = dict(step_ms=step, until=until, end=end)
    _same(lag.partition_lag(bounds, when, offset, ob, otimes, oids, log, **kw),
          lag.partition_lag(bounds, when, offset, ob, otimes, oids, log, pure=True, **kw))


def test_stop_needs_the_polls_and_a_recent_catch_up_cancels_it():
    """Burrow's STOP (no commit for longer than the window spans, lag now) is withdrawn when one
    of the last 10 polls (10 s apart) saw the log end at or below the committed offset."""
    stamps = [T0 + 1000 * k for k in range(100)]  # one record a second
    log = FakeLog(stamps)
    # commits every second up to offset 10 at T0+10s, then silence; steps of 1 s
    when = np.array([T0 + 1000 * k for k in range(11)], np.int64)
    offset = np.array(list(range(11)), np.int64)
    bounds, ob = np.array([0, 11], np.int64), np.array([0, 0], np.int64)
    for end, status in ((T0 + 60_000, Status.OK), (T0 + 200_000, Status.STOP)):
        # at 60 s, the poll of 30 s before T0 saw the log end at 0: caught up then, not STOP
        got = lag.partition_lag(bounds, when, offset, ob, np.zeros(0, np.int64), np.zeros(0, np.int32), log,
                                step_ms=1000, end=end)
        want = lag.partition_lag(bounds, when, offset, ob, np.zeros(0, np.int64), np.zeros(0, np.int32), log,
                                 step_ms=1000, end=end, pure=True)
        _same(got, want)
        assert got.room.status[got.last[0]] == status
        assert got.room.lag[got.last[0]] == 90 if status is Status.STOP else 50


def test_step_instants_are_those_of_instants():
    when = np.array([T0, T0 + 5, T0 + 250_000, T0 + 100, T0 + 100], np.int64)
    bounds = np.array([0, 3, 3, 5], np.int64)
    steps, seqs = lag.step_instants(bounds, when, 60_000)
    want = []
    for s in range(3):
        eff = [lag.Effective(int(t), 0) for t in when[bounds[s]:bounds[s + 1]]]
        want += [(t, s) for t in lag.instants(eff, 60_000, None) if t not in {e.timestamp for e in eff}]
    assert sorted(zip(steps.tolist(), seqs.tolist())) == sorted(want)


# ---- the kernel's checks of its arguments (issue 41: two bugs an ASan run found) ----------------

class _Ends:
    """A log whose end is 5 at every instant, no timestamps known."""

    def ends_and_stamps(self, times, offsets):
        return np.full(len(times), 5, np.int64), np.zeros(len(offsets), np.int64), np.zeros(len(offsets), np.bool_)

    def end_at(self, t):
        return 5

    def timestamp_at(self, offset):
        return None


@pytest.mark.parametrize("ob", [[0, 1000], [0, 2], [-1, 1], [1, 0], [0, 1, 0]])
def test_owner_bounds_outside_the_owners_are_a_value_error_from_both_paths(ob):
    """Owner bounds past the owner changes given, negative or going back: lag_rows read
    owner_times and owner_ids past their ends (``_lag.h``, an ASan heap-buffer-overflow); now
    the kernel and the pure twin both refuse them with one ValueError."""
    nseq = len(ob) - 1
    bounds = np.array([0] + [2] * nseq, np.int64)
    when, offset = np.array([T0, T0 + 10], np.int64), np.array([1, 2], np.int64)
    otimes, oids = np.array([T0], np.int64), np.array([0], np.int32)
    for pure in (False, True):
        with pytest.raises(ValueError, match="lag_rows: owner bounds out of range"):
            lag.partition_lag(bounds, when, offset, np.array(ob, np.int64), otimes, oids, _Ends(), step_ms=0,
                              end=T0 + 20, pure=pure)


def test_owner_bounds_at_the_owners_end_are_taken():
    """The last owner change is read (the bounds check is not off by one)."""
    bounds, ob = np.array([0, 2], np.int64), np.array([0, 1], np.int64)
    when, offset = np.array([T0, T0 + 10], np.int64), np.array([1, 2], np.int64)
    otimes, oids = np.array([T0 + 5], np.int64), np.array([0], np.int32)
    got = [lag.partition_lag(bounds, when, offset, ob, otimes, oids, _Ends(), step_ms=0, end=T0 + 20, pure=p)
           for p in (False, True)]
    _same(*got)
    assert got[0].rows.owner.tolist() == [-1, 0]


def _steps_chunk(keys, count, first, dt, doff):
    start = np.r_[0, np.cumsum(count)[:-1]].astype(np.int64)
    return (np.array(keys, np.int32), np.array(count, np.int64), start, np.array(first, np.int64).reshape(-1, 2),
            np.array(dt, np.uint32), np.array(doff, np.int32))


def test_unsteps_of_a_key_present_twice_puts_its_second_rows_after_its_first():
    """lag_unsteps with a key present twice in a chunk: each occurrence was checked against the
    key's room from the same place, and the second wrote past ``out``'s end (``_lag.h``, an ASan
    heap-buffer-overflow). Now its rows follow the first's, as lag_scatter (and the NumPy twin,
    ``_scatter_py``) place the same rows."""
    from kgtool.lag.collector import _scatter_py

    keys, count, start, first, dt, doff = _steps_chunk([1, 0, 1], [2, 1, 3], [[10, 1], [30, 7], [20, 5]],
                                                       [0, 1, 0, 0, 2, 3], [0, 1, 0, 0, -1, 4])
    place = np.array([0, 1], np.int64)
    out = np.full((6, 2), -9, np.int64)
    lag.kernel.lag_unsteps(keys, count, start, first, dt, doff, 4, 0, 3, place, out)
    # the same rows undone by hand, then placed by the NumPy counting sort
    rows, rkey = [], []
    for s in range(3):
        w, o = first[s]
        for j in range(count[s]):
            if j:
                w, o = w + int(dt[start[s] + j]), o + int(doff[start[s] + j])
            rows.append((w, o))
            rkey.append(int(keys[s]))
    want, wplace = np.full((6, 2), -9, np.int64), np.array([0, 1], np.int64)
    _scatter_py(np.array(rkey, np.int32), wplace, np.array(rows, np.int64), want)
    assert out.tolist() == want.tolist()
    assert out.tolist() == [[30, 7], [10, 1], [11, 2], [20, 5], [22, 4], [25, 8]]
    assert place.tolist() == wplace.tolist() == [1, 6]


@pytest.mark.parametrize("width", [2, 4])
def test_unsteps_without_room_for_a_repeated_key_is_a_value_error_and_writes_nothing(width):
    """The room of a key present twice checked for both occurrences: too little for the second
    is a ValueError (it was a write past ``out``'s end), with ``place`` and ``out`` untouched."""
    keys = np.array([0, 0], np.int32)
    count, start = np.array([2, 2], np.int64), np.array([0, 2], np.int64)
    first = np.array([[10, 1], [20, 5]], np.int64)
    dt = np.array([0, 1, 0, 1], np.uint16 if width == 2 else np.uint32)
    doff = np.array([0, 1, 0, 1], np.int16 if width == 2 else np.int32)
    place = np.array([1], np.int64)
    out = np.full((3, 2), -9, np.int64)  # room for rows 1 and 2: one occurrence
    with pytest.raises(ValueError, match="more rows than its room"):
        lag.kernel.lag_unsteps(keys, count, start, first, dt, doff, width, 0, 2, place, out)
    assert place.tolist() == [1] and out.tolist() == [[-9, -9]] * 3
    out = np.full((5, 2), -9, np.int64)  # room for both
    lag.kernel.lag_unsteps(keys, count, start, first, dt, doff, width, 0, 2, place, out)
    assert out.tolist() == [[-9, -9], [10, 1], [11, 2], [20, 5], [21, 6]] and place.tolist() == [5]
