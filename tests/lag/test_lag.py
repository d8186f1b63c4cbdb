"""Lag through time (kgtool.lag.timeline) on a partition whose records arrive one per second:
rows at commits and steps, Burrow's verdicts, episodes, and the rules they fire."""

from __future__ import annotations

from bisect import bisect_left

from kgtool.lag import timeline as L
from kgtool.lag.timeline import Effective, Owner

T0 = 1_700_000_000_000
STAMPS = [T0 + 1000 * k for k in range(3600)]  # offset k stamped T0 + k s


def view() -> L.LogView:
    return L.LogView(lambda t: bisect_left(STAMPS, t),
                     lambda off: STAMPS[off] if off < len(STAMPS) else None)


A = Owner("consumer-a-1", "/10.0.0.1", "consumer-a")


def test_a_healthy_consumer_is_ok_and_its_lag_is_exact():
    # caught up at every other commit, 2 records behind at the others
    eff = [Effective(T0 + 10_000 * k, 10 * k - (2 if k % 2 else 0)) for k in range(30)]
    rows, _end = L.lag_rows(eff, [(T0, A)], view(), step_ms=60_000)
    at = {r.timestamp: r for r in rows}
    r = at[T0 + 90_000]
    assert (r.committed_offset, r.log_end_offset, r.lag, r.lag_ms) == (88, 90, 2, 2000)
    assert T0 + 60_000 in at and r.owner == A
    assert {r.lag_status for r in rows} == {"OK"} and L.episodes(rows) == []


def test_a_constant_lag_is_burrows_warning():
    # Burrow's rule 5: the lag never went down over the window (constant counts)
    eff = [Effective(T0 + 10_000 * k, max(10 * k - 2, 0)) for k in range(30)]
    rows, _end = L.lag_rows(eff, [(T0, A)], view(), step_ms=60_000)
    (ep,) = L.episodes(rows)
    assert ep.status == "WARN" and ep.end is None and ep.peak_lag == 2


def test_a_stalled_consumer_and_the_rule():
    # commits every 10 s, the offset stuck at 100 from 200 s on, data keeps arriving
    eff = [Effective(T0 + 10_000 * k, min(10 * k, 100)) for k in range(40)]
    rows, _end = L.lag_rows(eff, [(T0, A)], view(), step_ms=60_000)
    eps = L.episodes(rows)
    assert [e.status for e in eps] == ["WARN", "STALL"] or [e.status for e in eps] == ["STALL"]
    stall = eps[-1]
    assert stall.end is None and stall.owners == [A] and stall.peak_lag == 390 - 100
    (g,) = [g for g in L.group_episodes("g", {("t", 0): eps}) if g.status == "STALL"]
    assert L.rule_of(g, rows[-1].timestamp) == "lag-stall" and g.partitions == [("t", 0)]


def test_a_stopped_consumer_at_until():
    eff = [Effective(T0 + 10_000 * k, 10 * k) for k in range(10)]  # caught up, then silence
    rows, last = L.lag_rows(eff, [(T0, A)], view(), step_ms=60_000, end=T0 + 400_000)
    # the rows go on every step after the last commit (T0 + 90 s), to the end of the span
    after = [(r.timestamp - T0, r.lag_status) for r in rows if r.timestamp > T0 + 90_000]
    # STOP when Burrow's rule first holds: longer since the last commit than the window spans
    # (90 s) and none of the last 10 polls (10 s apart) at or below the last commit (90): the
    # polls at t - 90 s .. t all past T0 + 90 s, from t > 180 s
    assert after == [(120_000, "OK"), (180_000, "OK"), (240_000, "STOP"), (300_000, "STOP"), (360_000, "STOP")]
    assert last.timestamp == T0 + 400_000 and last.lag == 400 - 90 and last.lag_status == "STOP"
    (g,) = L.group_episodes("g", {("t", 0): L.episodes(rows + [last])})
    assert g.start == T0 + 240_000 and L.rule_of(g, last.timestamp) == "consumer-stopped"


def test_warn_fires_only_past_the_warn_time():
    ep = L.GroupEpisode("g", "WARN", T0, T0 + 200_000, [("t", 0)], 5, 5, [])
    assert L.rule_of(ep, T0 + 900_000) is None
    ep.end = None
    assert L.rule_of(ep, T0 + 900_000) == "lag-growing"


def test_group_episodes_merge_overlapping_partitions():
    e1 = L.Episode("STALL", T0, T0 + 100, T0 + 90, 5, 50, [A])
    e2 = L.Episode("STALL", T0 + 50, T0 + 600, T0 + 500, 9, 90, [])
    e3 = L.Episode("STALL", T0 + 1000, T0 + 2000, T0 + 1900, 1, 1, [])
    (g1, g2) = L.group_episodes("g", {("t", 0): [e1, e3], ("t", 1): [e2]})
    assert g1.partitions == [("t", 0), ("t", 1)] and g1.end == T0 + 600 and g1.peak_lag == 9
    assert g2.partitions == [("t", 0)] and g2.start == T0 + 1000


def test_instants_are_commits_steps_and_until():
    eff = [Effective(T0, 1), Effective(T0 + 150_000, 2)]
    assert L.instants(eff, 60_000, None) == [T0, T0 + 60_000, T0 + 120_000, T0 + 150_000]
    assert L.instants(eff, 60_000, T0 + 100_000) == [T0, T0 + 60_000]


def test_distinct_values_and_their_places_are_numpys_whether_marked_or_sorted():
    """``_distinct`` marks values over their range when it is small (dense instants, offsets,
    (group, partition) pairs) and sorts otherwise: either way what ``np.unique`` gives."""
    import numpy as np

    rng = np.random.default_rng(5)
    for values in (rng.integers(-50, 500, 3_000), rng.integers(0, 1 << 40, 3_000), np.array([7] * 5),
                   np.zeros(0, np.int64)):
        values = values.astype(np.int64)
        want, where = np.unique(values, return_inverse=True)
        got, at = L.distinct(values, inverse=True)
        assert got.tolist() == want.tolist() and at.tolist() == where.tolist()
        assert L.distinct(values).tolist() == want.tolist()
