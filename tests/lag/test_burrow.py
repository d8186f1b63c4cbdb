"""Burrow's evaluator, ported: the table of linkedin/Burrow's caching_test.go (``tests``), each
case with its expected rule results and status, and the commit window of inmemory.go."""

from __future__ import annotations

import pytest

from kgtool.lag import burrow
from kgtool.lag.burrow import Commit, CommitWindow, Status


def _w(*rows):
    return [Commit(o, t, lag) for o, t, lag in rows]


RAMP0 = _w((1000, 100000, 0), (2000, 200000, 50), (3000, 300000, 100), (4000, 400000, 150), (5000, 500000, 200))
RAMP50 = _w((1000, 100000, 50), (2000, 200000, 100), (3000, 300000, 150), (4000, 400000, 200), (5000, 500000, 250))
FLAT0 = _w((1000, 100000, 0), (1000, 200000, 50), (1000, 300000, 100), (1000, 400000, 150), (1000, 500000, 200))
FLAT100 = _w((1000, 100000, 100), (1000, 200000, 150), (1000, 300000, 200), (1000, 400000, 250), (1000, 500000, 300))
SAME100 = _w(*[(1000, t, 100) for t in (100000, 200000, 300000, 400000, 500000)])
BACK = _w((1000, 100000, 100), (2000, 200000, 150), (3000, 300000, 200), (2000, 400000, 1250), (4000, 500000, 300))
ZEROS = _w(*[(792748079 + k, t, 0) for k, t in enumerate(
    (1512224618356, 1512224619362, 1512224620366, 1512224621367, 1512224622370, 1512224623373, 1512224624378,
     1512224625379, 1512224626383, 1512224627383, 1512224628383, 1512224629388, 1512224630391, 1512224631394,
     1512224632397))])
HOLES = _w((1000, 100000, 0), (1500, 150000, None), (2000, 200000, 50), (2500, 250000, None), (3000, 300000, 100),
           (3500, 350000, None), (4000, 400000, 150), (4500, 450000, None), (5000, 500000, 200), (5500, 550000, None))

# (window, broker offsets, current lag, now (s), always-not-zero, rewind, stopped, stalled, not-decreasing,
#  recent-zero, status): caching_test.go's cases 0-11, in order
CASES = [
    (RAMP0, [5200], 200, 600, False, False, False, False, True, False, Status.OK),
    (RAMP0, [5200], 200, 900, False, False, False, False, True, False, Status.OK),
    (RAMP0, [5200], 200, 1000, False, False, True, False, True, False, Status.STOP),
    (RAMP50, [5250], 250, 1000, True, False, True, False, True, False, Status.STOP),
    (FLAT0, [1200], 200, 600, False, False, False, True, True, False, Status.OK),
    (FLAT100, [1300], 300, 600, True, False, False, True, True, False, Status.STALL),
    (SAME100, [1100], 100, 600, True, False, False, True, True, False, Status.STALL),
    (BACK, [4300], 300, 600, True, True, False, False, False, False, Status.REWIND),
    (RAMP50, [5250], 0, 1000, True, False, True, False, True, False, Status.OK),
    (ZEROS, [792749024, 792749000, 792748800, 792748600, 792748500], 931, 1512224650,
     False, False, True, False, True, False, Status.STOP),
    (ZEROS, [792748094, 792748093, 792748093, 792748093], 1, 1512224650, False, False, True, False, True, True,
     Status.OK),
    (HOLES, [5700], 200, 600, False, False, False, False, True, False, Status.OK),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_burrows_rule_table(case):
    w, brokers, lag, now, always, rewind, stopped, stalled, not_decreasing, recent_zero, status = CASES[case]
    assert burrow.lag_always_not_zero(w) is always
    assert burrow.offsets_rewind(w) is rewind
    assert burrow.offsets_stopped(w, now) is stopped
    assert burrow.offsets_stalled(w) is stalled
    assert burrow.lag_not_decreasing(w) is not_decreasing
    assert burrow.recent_lag_zero(w, brokers) is recent_zero
    assert burrow.partition_status(w, brokers, lag, now) is status


def test_group_status_is_the_worst_partition_with_errors_as_err():
    assert burrow.group_status([]) is Status.OK
    assert burrow.group_status([Status.OK, Status.WARN]) is Status.WARN
    for bad in (Status.STOP, Status.STALL, Status.REWIND):
        assert burrow.group_status([Status.WARN, bad, Status.OK]) is Status.ERR


def test_the_window_keeps_ten_commits_and_merges_those_under_a_second_apart():
    w = CommitWindow()
    for k in range(12):
        w.add(offset=100 * k, timestamp=10_000 * k, broker_offset=100 * k + 7)
    assert len(w.commits) == 10 and w.commits[0] == Commit(200, 20_000, 7)
    w.add(offset=1200, timestamp=110_999, broker_offset=1190)  # 999 ms after the last: it takes its place
    assert len(w.commits) == 10 and w.commits[-1] == Commit(1200, 110_000, 0)  # ahead of the log: lag 0
    w.add(offset=1300, timestamp=111_000, broker_offset=1400)  # a second after the kept timestamp
    assert w.commits[-1] == Commit(1300, 111_000, 100) and w.commits[0].offset == 300


def test_a_window_evaluated_at_an_instant():
    w = CommitWindow()
    for k in range(5):
        w.add(offset=1000, timestamp=100_000 * (k + 1), broker_offset=1100 + 50 * k)
    now = 600_000
    ends = [1400] * burrow.INTERVALS
    assert w.status(1400, now, ends) == (Status.STALL, 400)
    assert w.status(1000, now, ends) == (Status.OK, 0)  # caught up: never in error
    assert CommitWindow().status(5, now, ends) == (Status.OK, 0)
    assert burrow.poll_instants(now, 3) == [580_000, 590_000, 600_000]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(commits=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 3000), st.integers(0, 60)), min_size=1,
                        max_size=25),
       end=st.integers(0, 80), now=st.integers(0, 200_000), brokers=st.lists(st.integers(0, 80), max_size=10))
def test_the_window_status_is_calculate_partition_status(commits, end, now, brokers):
    # CommitWindow.status (its rules computed once per window) against partition_status itself
    w = CommitWindow()
    t = 0
    for offset, gap, ahead in commits:
        t += gap
        w.add(offset, t, offset + ahead - 10)
        assert burrow.window_flags(w.commits) == (
            burrow.lag_always_not_zero(w.commits), burrow.offsets_rewind(w.commits),
            burrow.offsets_stalled(w.commits), burrow.lag_not_decreasing(w.commits))
        current = max(end - w.commits[-1].offset, 0)
        want = burrow.partition_status(w.commits, brokers, current, (t + now) // 1000)
        assert w.status(end, t + now, brokers) == (want, current)
