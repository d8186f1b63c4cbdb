"""The rebalances table and the rebalance-storm rule (kgtool/offsets/rebalances.py).

Every scenario is a script (kgtool.offsets.scenario) written as a real segment by kgtool's own
writer and audited by the Spark task's function itself (no Spark): each storm cause with its
diagnosis, and each look-alike that must stay quiet. The storm windows are checked against a
brute-force reference, and the rows against the generations and members tables (themselves
checked against the oracle) on random logs.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.offsets.audit import audit_entries
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.rebalances import (
    DEPARTED_CAP,
    DEPARTED_IDS,
    FOLD_EVERY,
    STORM_RULE,
    Change,
    GroupRebalances,
    StormWatch,
    rebalance_protocol,
)
from kgtool.offsets.scenario import Script
from kgtool.offsets.tables import REBALANCES, TABLE_NAMES
from kgtool.offsets.writer import write_segment
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.offsets.test_partition_differential import build, op
from tests.twins import have_compiled

MINUTE = 60_000
T = [("t", p) for p in range(6)]
HOSTS = {f"m{i}": f"/10.0.1.{i}" for i in range(10)}

# the C path fails the tests when the extension did not build (tests.twins)
PATHS = [pytest.param(True, id="pure")] + (
    [pytest.param(False, id="c")] if have_compiled("kgtool.codec._speedups") else [])


def audit(tmp_path, s: Script, pure: bool | None = None, **opts) -> tuple[dict, object]:
    """The script as a segment, audited by the task function: (tables, partition summary)."""
    d = os.path.join(str(tmp_path), f"seg-{len(os.listdir(tmp_path))}", f"__consumer_offsets-{s.log_partition}")
    path = write_segment(s, d)
    got: dict = {name: [] for name in TABLE_NAMES}

    def sink(name, table):
        got[name].extend(table.to_pylist() if hasattr(table, "to_pylist") else table)

    summary = audit_partition(PartitionFiles(s.log_partition, [path], [os.path.getsize(path)]),
                              AuditOptions(**opts), sink=sink, pure=pure)
    return got, summary


def storms(tables: dict) -> list[dict]:
    return [f for f in tables["findings"] if f["rule"] == STORM_RULE]


def rows(tables: dict, group: str = "g") -> list[dict]:
    return sorted((r for r in tables["rebalances"] if r["group"] == group), key=lambda r: r["record_offset"])


def causes(tables: dict, group: str = "g") -> list[str]:
    return [r["cause"] for r in rows(tables, group)]


def split(parts: list, n: int) -> list[list]:
    return [parts[i::n] for i in range(n)]


def group_of(s: Script, gen: int, members: list[str], *, at: int, protocol: str = "range",
             session_timeout: int = 45000, instance_ids: dict[str, str] | None = None, group: str = "g") -> None:
    """A generation of ``members`` ("client:n": client id and host from the client name, member
    id with its incarnation n), the partitions spread over them."""
    assignment = dict(zip(members, split(T, len(members)))) if members else {}
    clients = {m: (m.split(":")[0], HOSTS.get(m.split(":")[0], "/10.0.0.1")) for m in members}
    s.generation(group, gen, assignment, at=at, protocol=protocol, clients=clients, session_timeout=session_timeout,
                 instance_ids=instance_ids)


# ---- storm causes ---------------------------------------------------------------------------------
def rejoin_loop(protocol: str = "range") -> Script:
    """m0 exceeds max.poll.interval.ms again and again: it leaves (one rebalance) and comes back
    with a new member id (another), every minute."""
    s = Script()
    group_of(s, 1, ["m0:0", "m1:0"], at=0, protocol=protocol)
    gen = 1
    for n in range(1, 4):
        gen += 1
        group_of(s, gen, ["m1:0"], at=(2 * n - 1) * MINUTE, protocol=protocol)
        gen += 1
        group_of(s, gen, [f"m0:{n}", "m1:0"], at=2 * n * MINUTE, protocol=protocol)
    return s


@pytest.mark.parametrize("pure", PATHS)
def test_storm_same_dynamic_client_rejoining(tmp_path, pure):
    t, summary = audit(tmp_path, rejoin_loop(), pure=pure)
    assert causes(t) == ["first-generation"] + ["member-left", "member-rejoined"] * 3
    (f,) = storms(t)
    assert (f["group"], f["topic"], f["partition"], f["offset"]) == ("g", None, None, None)
    assert (f["previous_generation_id"], f["generation_id"]) == (1, 7)
    first_change = rows(t)[1]
    assert (f["record_offset"], f["timestamp"]) == (first_change["record_offset"], first_change["timestamp"])
    assert "6 rebalances in 300 s (threshold: 5 within 600 s)" in f["message"]
    assert "churned most: m0@10.0.1.0 (6)" in f["message"]
    assert "keeps rejoining with a new member id: m0@10.0.1.0 (3 times)" in f["message"]
    assert "max.poll.interval.ms (recorded: 300000 ms)" in f["message"] and "group.instance.id" in f["message"]
    (st_,) = summary.storms
    assert [d["code"] for d in st_["diagnosis"]] == ["rejoin-loop", "eager-assignor"]
    assert st_["churn"][0] == {"client_id": "m0", "client_host": "/10.0.1.0", "count": 6}
    assert (st_["count"], st_["start"], st_["end"]) == (6, first_change["timestamp"], rows(t)[-1]["timestamp"])
    rejoins = [r for r in rows(t) if r["cause"] == "member-rejoined"]
    assert [r["rejoined"] for r in rejoins] == [["m0:1"], ["m0:2"], ["m0:3"]]
    assert all(r["joined"] == [] and r["left"] == [] for r in rejoins)
    assert "came back with a new member id (same client id and host)" in rejoins[0]["message"]


def rolling_restart(n: int, *, protocol: str = "range", static: bool = False, step: int = MINUTE) -> Script:
    """n members restarted one after the other, step apart. Dynamic members come back with a new
    member id and a rebalance; static ones (group.instance.id) are replaced in the same
    generation (KIP-345)."""
    s = Script()
    members = [f"m{i}:0" for i in range(n)]
    inst = (lambda ms: {m: m.split(":")[0] for m in ms}) if static else (lambda ms: None)
    group_of(s, 1, members, at=0, protocol=protocol, instance_ids=inst(members))
    gen = 1
    for i in range(n):
        members = [f"m{j}:1" if j <= i else f"m{j}:0" for j in range(n)]
        gen += 0 if static else 1
        group_of(s, gen, members, at=(i + 1) * step, protocol=protocol, instance_ids=inst(members))
    return s


def test_storm_rolling_restart_of_dynamic_members(tmp_path):
    t, summary = audit(tmp_path, rolling_restart(6))
    assert causes(t) == ["first-generation"] + ["member-rejoined"] * 6
    (f,) = storms(t)
    (st_,) = summary.storms
    assert [d["code"] for d in st_["diagnosis"]] == ["rolling-restart", "eager-assignor"]
    assert "a rolling restart of dynamic members: 6 clients came back once each" in f["message"]
    assert "static membership (group.instance.id, KIP-345)" in f["message"]


def test_storm_eager_assignor_measures_the_revoked_partitions(tmp_path):
    eager, eager_summary = audit(tmp_path, rolling_restart(6))
    coop, coop_summary = audit(tmp_path, rolling_restart(6, protocol="cooperative-sticky"))
    # range: every rebalance revokes the 6 owned partitions; cooperative-sticky: only those that move
    assert [r["partitions_revoked"] for r in rows(eager)[1:]] == [6] * 6
    assert [(r["rebalance_protocol"], r["partitions_moved"]) for r in rows(eager)[1:]] == [("eager", 1)] * 6
    assert [r["partitions_revoked"] for r in rows(coop)[1:]] == [1] * 6
    assert {r["rebalance_protocol"] for r in rows(coop)} == {"cooperative"}
    (e,), (c,) = eager_summary.storms, coop_summary.storms
    assert "eager-assignor" in [d["code"] for d in e["diagnosis"]]
    assert "eager-assignor" not in [d["code"] for d in c["diagnosis"]]
    text = next(d["text"] for d in e["diagnosis"] if d["code"] == "eager-assignor")
    assert "eager assignor range: each of its 6 rebalance(s) revoked every owned partition, " \
           "36 partition revocations in all, of which 6 went to another member" in text
    assert "cooperative-sticky (KIP-429)" in text


def test_storm_short_recorded_session_timeouts(tmp_path):
    def expulsions(session: int) -> Script:
        s = Script()
        for i in range(6):  # m2 misses its heartbeats: expelled, back, expelled...
            members = ["m0:0", "m1:0"] + ([f"m2:{i}"] if i % 2 == 0 else [])
            group_of(s, i + 1, members, at=i * MINUTE, session_timeout=session, protocol="cooperative-sticky")
        return s

    short, summary = audit(tmp_path, expulsions(6000))
    (st_,) = summary.storms
    codes = [d["code"] for d in st_["diagnosis"]]
    assert "short-session-timeout" in codes
    text = next(d["text"] for d in st_["diagnosis"] if d["code"] == "short-session-timeout")
    assert "session.timeout.ms as low as 6000 ms, below Kafka's default of 45000 ms (KIP-735)" in text
    assert {r["session_timeout_ms"] for r in rows(short)} == {6000}
    _t, default = audit(tmp_path, expulsions(45000))
    (st_,) = default.storms
    assert "short-session-timeout" not in [d["code"] for d in st_["diagnosis"]]


# ---- look-alikes that must not fire ---------------------------------------------------------------
def test_lookalike_rolling_restart_of_static_members(tmp_path):
    t, summary = audit(tmp_path, rolling_restart(6, static=True, step=20_000))
    assert storms(t) == [] and summary.storm_count == 0
    changes = rows(t)[1:]
    assert [(r["rebalance"], r["cause"], r["from_generation"], r["to_generation"]) for r in changes] == \
        [(False, "static-member-replaced", 1, 1)] * 6
    assert [r["static_replaced"] for r in changes] == [[f"m{i}"] for i in range(6)]
    assert all(r["partitions_moved"] == 0 and r["partitions_revoked"] == 0 for r in changes)
    assert "m0 (m0:0 -> m0:1) rejoined with a new member id and kept its assignment" in changes[0]["message"]
    assert (summary.rebalance_count, summary.no_rebalance_count) == (1, 6)


def test_lookalike_slow_scale_out(tmp_path):
    s = Script()
    for i in range(1, 8):  # one member more every ten minutes
        group_of(s, i, [f"m{j}:0" for j in range(i)], at=i * 10 * MINUTE)
    t, summary = audit(tmp_path, s)
    assert causes(t) == ["first-generation"] + ["member-joined"] * 6
    assert [r["seconds_since_previous"] for r in rows(t)] == [None] + [600.0] * 6
    assert storms(t) == [] and summary.storms == []


def test_lookalike_one_deploy_below_the_threshold(tmp_path):
    t, _ = audit(tmp_path, rolling_restart(4))  # 4 rebalances in 4 minutes: below 5 within 10m
    assert causes(t) == ["first-generation"] + ["member-rejoined"] * 4
    assert storms(t) == []
    # the threshold is --storm's: 3 within 10 minutes fires on the same deploy
    t, summary = audit(tmp_path, rolling_restart(4), storm_count=3, storm_window_ms=10 * MINUTE)
    (f,) = storms(t)
    assert "4 rebalances in 180 s (threshold: 3 within 600 s)" in f["message"]


def test_group_creation_is_not_a_rebalance_of_the_storm(tmp_path):
    """A group starting: members join one after the other (4 generations after the first): the
    first generation stopped no consumer, so 4 rebalances, below the threshold."""
    s = Script()
    for i in range(1, 6):
        group_of(s, i, [f"m{j}:0" for j in range(i)], at=i * 1000)
    t, _ = audit(tmp_path, s)
    assert len(rows(t)) == 5 and storms(t) == []


# ---- windows: episodes ---------------------------------------------------------------------------
def test_two_bursts_two_storms_and_overlapping_windows_one(tmp_path):
    s = Script()
    gen = 0
    for burst in (0, 60 * MINUTE):
        for i in range(7):  # 7 rebalances, a minute apart: windows overlap: one storm
            gen += 1
            group_of(s, gen, [f"m0:{gen}", "m1:0"], at=burst + i * MINUTE)
    t, summary = audit(tmp_path, s)
    assert [f["previous_generation_id"] for f in storms(t)] == [1, 7]
    assert [(x["count"], x["end"] - x["start"]) for x in summary.storms] == [(6, 5 * MINUTE), (7, 6 * MINUTE)]


def test_window_is_strictly_shorter_than_w():
    watch = StormWatch("g", 0, 3, 10 * MINUTE)
    add = lambda i, ts: watch.add(Change(i, ts))  # noqa: E731
    for i, ts in enumerate([0, 5 * MINUTE, 10 * MINUTE]):  # 3 within exactly W: not a storm
        assert add(i, ts) is None
    assert watch.episode is None
    add(3, 10 * MINUTE + 1)  # 5m, 10m, 10m+1ms: within W
    storm = watch.finish()
    assert storm is not None and storm.count == 3


def test_a_long_storm_is_counted_in_bounded_memory():
    """A group rebalancing every 10 s for 3 hours: one storm of 1080 rebalances, its changes
    counted in bulk (never more than FOLD_EVERY held)."""
    watch = StormWatch("g", 0, 5, 10 * MINUTE)
    held = 0
    for i in range(1080):
        assert watch.add(Change(i, i * 10_000, cause="assignment-only")) is None
        held = max(held, len(watch.episode.added) if watch.episode else 0)
    storm = watch.finish()
    assert held < FOLD_EVERY and storm.count == 1080 and storm.causes == {"assignment-only": 1080}
    assert storm.to_dict(5, 10 * MINUTE)["end"] == 1079 * 10_000


def brute_force_storms(times: list[int], n: int, w: int) -> list[tuple[int, int, int]]:
    """(first index, last index, count) of each storm: every window of n consecutive rebalances
    spanning less than w, overlapping windows (sharing a rebalance) merged."""
    wins = [(i, i + n - 1) for i in range(len(times) - n + 1) if times[i + n - 1] - times[i] < w]
    merged: list[list[int]] = []
    for a, b in wins:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return [(a, b, b - a + 1) for a, b in merged]


@settings(max_examples=300, deadline=None)
@given(gaps=st.lists(st.integers(0, 5 * MINUTE), max_size=40), n=st.integers(2, 6),
       w=st.integers(1, 20 * MINUTE))
def test_storm_episodes_equal_brute_force(gaps, n, w):
    times, t = [], 0
    for g in gaps:
        t += g
        times.append(t)
    watch = StormWatch("g", 0, n, w)
    got = []
    for i, ts in enumerate(times):
        done = watch.add(Change(i, ts))
        if done is not None:
            got.append(done)
    if watch.episode is not None:
        got.append(watch.finish())
    assert [(s.first.index, s.last.index, s.count) for s in got] == brute_force_storms(times, n, w)


# ---- causes of single changes -----------------------------------------------------------------------
def test_causes_of_membership_changes(tmp_path):
    s = Script()
    group_of(s, 1, ["m0:0"], at=0)
    group_of(s, 2, ["m0:0", "m1:0"], at=MINUTE)  # joined
    group_of(s, 3, ["m1:0"], at=20 * MINUTE)  # left
    group_of(s, 4, [], at=40 * MINUTE)  # emptied
    group_of(s, 5, ["m1:1"], at=60 * MINUTE)  # m1 back with a new member id (left at generation 4)
    group_of(s, 6, ["m1:1", "m2:0"], at=80 * MINUTE, instance_ids={"m2:0": "web-2"})  # a static member joins
    group_of(s, 7, ["m1:1"], at=100 * MINUTE)  # it leaves (gone past its session timeout)
    group_of(s, 8, ["m1:1", "m2:1"], at=120 * MINUTE, instance_ids={"m2:1": "web-2"})  # and comes back
    t, _ = audit(tmp_path, s)
    got = [(r["cause"], r["members_before"], r["members_after"], r["joined"], r["left"], r["rejoined"],
            r["static_replaced"]) for r in rows(t)]
    assert got == [
        ("first-generation", 0, 1, ["m0:0"], [], [], []),
        ("member-joined", 1, 2, ["m1:0"], [], [], []),
        ("member-left", 2, 1, [], ["m0:0"], [], []),
        ("group-emptied", 1, 0, [], ["m1:0"], [], []),
        ("member-rejoined", 0, 1, [], [], ["m1:1"], []),
        ("member-joined", 1, 2, ["m2:0"], [], [], []),
        ("member-left", 2, 1, [], ["m2:0"], [], []),
        ("static-member-replaced", 1, 2, [], [], [], ["web-2"]),
    ]
    r = rows(t)
    assert r[2]["message"].startswith("m0@10.0.1.0 left: a shutdown (LeaveGroup), or expelled")
    assert "session.timeout.ms 45000 ms" in r[2]["message"]
    assert r[3]["message"].startswith("the last member(s) left (m1@10.0.1.1): the group is Empty")
    assert (r[3]["partitions_revoked"], r[3]["rebalance_protocol"], r[3]["protocol_name"]) == (6, "eager", "range")
    assert [x["seconds_since_previous"] for x in r] == [None, 60.0] + [1140.0] + [1200.0] * 5
    assert all(x["rebalance"] for x in r) and [x["to_generation"] for x in r] == list(range(1, 9))


def test_causes_without_membership_change(tmp_path):
    s = Script()
    s.generation("g", 1, {"a-1": T[:3], "b-1": T[3:]}, leader="a-1")
    s.generation("g", 2, {"a-1": T[3:], "b-1": T[:3]}, leader="a-1")  # same members, same leader
    s.generation("g", 3, {"a-1": T[3:], "b-1": T[:3]}, leader="b-1")  # new leader
    s.generation("g", 5, {"a-1": T[3:], "b-1": T[:3]}, leader="b-1")  # generation 4 not in the log
    t, _ = audit(tmp_path, s)
    r = rows(t)
    assert [x["cause"] for x in r] == ["first-generation", "assignment-only", "leader-change", "assignment-only"]
    assert [x["partitions_moved"] for x in r] == [0, 6, 0, 0]
    assert "new leader b-1" in r[2]["message"]
    assert "(generations 4..4 are not in the log: compacted away)" in r[3]["message"]


def test_cooperative_two_phase_rebalance(tmp_path):
    """KIP-429: a member joins; the first rebalance revokes what will move (unassigned for a
    while), the follow-up assigns it."""
    s = Script()
    s.generation("g", 1, {"a-1": T}, protocol="cooperative-sticky")
    s.generation("g", 2, {"a-1": T[:3], "b-1": []}, protocol="cooperative-sticky", topics=["t"],
                 owned={"a-1": T})
    s.generation("g", 3, {"a-1": T[:3], "b-1": T[3:]}, protocol="cooperative-sticky", topics=["t"],
                 owned={"a-1": T[:3]})
    t, _ = audit(tmp_path, s)
    assert [(x["cause"], x["partitions_revoked"], x["partitions_moved"]) for x in rows(t)] == [
        ("first-generation", 0, 0), ("member-joined", 3, 0), ("cooperative-follow-up", 0, 3)]


def test_group_tombstone_then_a_new_group(tmp_path):
    s = Script()
    s.generation("g", 1, {"a-1": T})
    s.generation("g", 2, {})
    s.delete_group("g", [])
    s.generation("g", 1, {"b-1": T})
    t, _ = audit(tmp_path, s)
    r = rows(t)
    assert [(x["from_generation"], x["to_generation"], x["cause"]) for x in r] == [
        (None, 1, "first-generation"), (1, 2, "group-emptied"), (None, 1, "first-generation")]
    assert r[2]["message"] == "group created again after its deletion, 1 member(s)"
    assert [x["seconds_since_previous"] for x in r] == [None, 1.0, None]


def test_first_record_of_a_compacted_log(tmp_path):
    s = Script()
    s.generation("g", 57, {"a-1": T})
    t, _ = audit(tmp_path, s)
    (r,) = rows(t)
    assert r["cause"] == "first-generation" and "generation 57" in r["message"] and "compacted" in r["message"]


def test_simple_consumer_group_has_no_rebalances(tmp_path):
    s = Script()
    s.commit("simple", {T[0]: 10})
    s.commit("simple", {T[0]: 20})
    t, summary = audit(tmp_path, s)
    assert t["rebalances"] == [] and len(t["commits"]) == 2
    assert summary.rebalance_count == 0 and summary.rebalance_groups == []


def test_non_consumer_protocol_has_unknown_moves(tmp_path):
    s = Script()
    s.generation("connect-cluster", 1, {"w-1": []}, protocol="sessioned", protocol_type="connect")
    s.generation("connect-cluster", 2, {"w-1": [], "w-2": []}, protocol="sessioned", protocol_type="connect")
    t, _ = audit(tmp_path, s)
    assert [(x["rebalance_protocol"], x["partitions_moved"], x["partitions_revoked"])
            for x in rows(t, "connect-cluster")] == [(None, None, None)] * 2


def test_rebalance_protocol_from_the_assignor():
    assert [rebalance_protocol("classic", "consumer", n) for n in
            ("range", "roundrobin", "sticky", "cooperative-sticky", "stream", "custom", None)] == \
        ["eager", "eager", "eager", "cooperative", "cooperative", None, None]
    assert rebalance_protocol("classic", "connect", "range") is None
    assert rebalance_protocol("consumer", "consumer", None) == "cooperative"


# ---- KIP-848 -----------------------------------------------------------------------------------------
TID = "AAAAAAAAAAAAAAAAAAAAAQ"


def kip848_member(s: Script, mid: str, *, host: str = "/10.0.2.1", at: int) -> None:
    s.raw("consumer_group_member_metadata", {"group_id": "k", "member_id": mid},
          {"client_id": f"c-{mid}", "client_host": host, "instance_id": None, "rack_id": None,
           "subscribed_topic_names": ["t"], "rebalance_timeout_ms": 300000,
           "classic_member_metadata": None}, at=at)


def kip848_assign(s: Script, mid: str, epoch: int, parts: list[int], pending: list[int] = (), *, at: int) -> None:
    s.raw("consumer_group_current_member_assignment", {"group_id": "k", "member_id": mid},
          {"member_epoch": epoch, "previous_member_epoch": epoch - 1, "state": 0,
           "assigned_partitions": [{"topic_id": TID, "partitions": parts}],
           "partitions_pending_revocation": [{"topic_id": TID, "partitions": list(pending)}] if pending else []},
          at=at)


def test_kip848_epoch_bumps(tmp_path):
    s = Script()
    s.raw("consumer_group_partition_metadata", {"group_id": "k"},
          {"topics": [{"topic_id": TID, "topic_name": "t", "num_partitions": 4}]}, at=0)
    kip848_member(s, "m1", at=1000)
    s.raw("consumer_group_metadata", {"group_id": "k"}, {"epoch": 1}, at=2000)
    kip848_assign(s, "m1", 1, [0, 1, 2, 3], at=3000)
    kip848_member(s, "m2", at=MINUTE)  # a member joins: epoch 2, m1 gives up 2 and 3, m2 gets them
    s.raw("consumer_group_metadata", {"group_id": "k"}, {"epoch": 2}, at=MINUTE + 1000)
    kip848_assign(s, "m1", 2, [0, 1], pending=[2, 3], at=MINUTE + 2000)
    kip848_assign(s, "m1", 2, [0, 1], at=MINUTE + 3000)
    kip848_assign(s, "m2", 2, [2, 3], at=MINUTE + 4000)
    s.raw("consumer_group_metadata", {"group_id": "k"}, {"epoch": 3}, at=2 * MINUTE)  # e.g. a new regex match
    t, _ = audit(tmp_path, s)
    r = rows(t, "k")
    assert [(x["protocol"], x["from_generation"], x["to_generation"], x["cause"], x["rebalance_protocol"])
            for x in r] == [("consumer", None, 1, "first-generation", "cooperative"),
                            ("consumer", 1, 2, "member-joined", "cooperative"),
                            ("consumer", 2, 3, "kip848-epoch-bump", "cooperative")]
    # epoch 2's row is completed by epoch 3: the moves made while epoch 2 was in effect
    assert [(x["partitions_moved"], x["partitions_revoked"]) for x in r] == [(0, 0), (2, 2), (0, 0)]
    assert r[1]["joined"] == ["m2"] and r[1]["rebalance_timeout_ms"] == 300000
    assert r[1]["session_timeout_ms"] is None  # the group's, not recorded per member


# ---- filters and bounds --------------------------------------------------------------------------------
def test_since_until_and_group_filters(tmp_path):
    s = rejoin_loop()
    start = s.start_ms
    t, summary = audit(tmp_path, s, since=start + 3 * MINUTE)
    assert [r["timestamp"] >= start + 3 * MINUTE for r in t["rebalances"]] == [True] * 4
    assert storms(t) == [] and summary.storms == []  # the storm started before --since
    t, _ = audit(tmp_path, s, until=start + 4 * MINUTE)
    assert len(t["rebalances"]) == 4 and storms(t) == []
    t, _ = audit(tmp_path, s, group_pattern="^h$")
    assert t["rebalances"] == []


def test_departed_members_are_remembered_within_a_bound():
    s = Script()
    for i in range(1, DEPARTED_CAP + 50):  # a new client each generation, the previous one gone
        s.generation("g", i, {f"c{i}-1": T}, at=i * 10 * MINUTE, clients={f"c{i}-1": (f"c{i}", f"/10.9.{i // 250}.{i % 250}")})
    r = audit_entries(s.entries())
    track = r.replays[0].groups["g"].rebalances
    assert len(track.departed) <= DEPARTED_CAP
    assert {x["cause"] for x in r.tables["rebalances"][1:]} == {"member-left"}  # and another joined
    assert r.tables["rebalances"][-1]["joined"] == [f"c{DEPARTED_CAP + 49}-1"]
    departed: dict = {}
    for i in range(3 * DEPARTED_CAP):  # many departures of one client, then of many
        GroupRebalances._remember(departed, ("a", "/h"), f"a-{i}")
        GroupRebalances._remember(departed, (f"c{i}", "/h"), f"c-{i}")
    assert len(departed) <= DEPARTED_CAP and all(len(ids) <= DEPARTED_IDS for ids in departed.values())


def test_summary_timeline_with_group(tmp_path):
    s = rejoin_loop()
    s.generation("other", 1, {"o-1": T})
    _t, summary = audit(tmp_path, s, group_pattern="^g$")
    assert list(summary.timeline) == ["g"]
    lines = summary.timeline["g"]
    assert [(x["from_generation"], x["to_generation"], x["cause"]) for x in lines][:3] == [
        (None, 1, "first-generation"), (1, 2, "member-left"), (2, 3, "member-rejoined")]
    assert "group" not in lines[0] and "message" in lines[0]
    _t, summary = audit(tmp_path, s)
    assert summary.timeline == {}
    assert [(g["group"], g["rebalances"], g["storms"]) for g in summary.rebalance_groups] == [("g", 7, 1), ("other", 1, 0)]
    assert summary.rebalance_groups[0]["causes"] == {"member-left": 3, "member-rejoined": 3, "first-generation": 1}


def test_entries_and_segment_paths_agree(tmp_path):
    """The same scripts through audit_entries (no codec) and through the segment bytes."""
    for s in (rejoin_loop(), rolling_restart(6, static=True), rolling_restart(5, protocol="cooperative-sticky")):
        t, _ = audit(tmp_path, s)
        e = audit_entries(s.entries())
        strip = lambda rs: [{k: v for k, v in r.items() if k not in ("source", "position")} for r in rs]  # noqa: E731
        assert strip(t["rebalances"]) == strip(e.tables["rebalances"])
        assert [f["message"] for f in storms(t)] == [f["message"] for f in storms(e.tables)]


# ---- random logs: the rows against the generations and members tables ------------------------------
def check_rows(r, n: int, w: int) -> int:
    """Every rebalances row against the generations and members tables (checked against the
    oracle elsewhere), and the storms against the brute force; returns the number of storms."""
    assert all(list(x) == [c for c, _t in REBALANCES] for x in r.tables["rebalances"])
    gens: dict[str, list[dict]] = {}
    for g in sorted(r.tables["generations"], key=lambda g: g["record_offset"]):
        gens.setdefault(g["group"], []).append(g)
    members: dict[tuple, set] = {}
    instance: dict[tuple, str] = {}
    assigned: dict[tuple, dict] = {}
    for m in r.tables["members"]:
        key = (m["group"], m["record_offset"])
        members.setdefault(key, set()).add(m["member_id"])
        if m["group_instance_id"] is not None:
            instance[(m["group"], m["member_id"])] = m["group_instance_id"]
        for tp in m["assigned_partitions"] or []:
            assigned.setdefault(key, {}).setdefault(tp, set()).add(m["member_id"])
    by_group: dict[str, list[dict]] = {}
    for x in r.tables["rebalances"]:
        by_group.setdefault(x["group"], []).append(x)
    for group, gs in gens.items():
        expected = []
        prev = None
        for g in gs:
            if g["state"] == "Dead":
                prev = None
                continue
            expected.append((prev, g))
            prev = g
        got = sorted(by_group.get(group, []), key=lambda x: x["record_offset"])
        assert len(got) == len(expected)
        for x, (p, g) in zip(got, expected):
            assert x["record_offset"] == g["record_offset"] and x["to_generation"] == g["generation_id"]
            assert x["from_generation"] == (None if p is None else p["generation_id"])
            assert x["rebalance"] == (p is None or p["generation_id"] != g["generation_id"])
            before = members.get((group, p["record_offset"]), set()) if p else set()
            after = members.get((group, g["record_offset"]), set())
            assert (x["members_before"], x["members_after"]) == (len(before), len(after))
            replaced = {m for m in after - before if instance.get((group, m)) in set(x["static_replaced"])}
            assert set(x["joined"]) | set(x["rejoined"]) | replaced == after - before
            assert not set(x["joined"]) & set(x["rejoined"]) and not replaced & set(x["joined"])
            assert set(x["left"]) <= before - after
            own_before = assigned.get((group, p["record_offset"]), {}) if p else {}
            own_after = assigned.get((group, g["record_offset"]), {})
            # a static member's new member id keeps its partitions (KIP-345): not a revocation
            renamed = {old: new for old in before - after for new in replaced
                       if instance.get((group, old)) == instance.get((group, new))}
            own_before = {tp: {renamed.get(m, m) for m in ms} for tp, ms in own_before.items()}
            if not x["rebalance"]:
                assert x["partitions_revoked"] == 0
            elif x["rebalance_protocol"] == "eager":
                assert x["partitions_revoked"] == len(own_before)
            elif x["rebalance_protocol"] == "cooperative":
                assert x["partitions_revoked"] == sum(1 for tp, ms in own_before.items() if own_after.get(tp) != ms)
    # storms: the brute force over each group's counted rebalances
    want = []
    for group, xs in by_group.items():
        xs = sorted(xs, key=lambda x: x["record_offset"])
        counted = [x for x in xs if x["rebalance"] and x["from_generation"] is not None]
        for a, b, count in brute_force_storms([x["timestamp"] for x in counted], n, w):
            want.append((group, counted[a]["record_offset"], count))
    got_storms = [(f["group"], f["record_offset"], int(f["message"].split()[0])) for f in storms(r.tables)]
    assert sorted(got_storms) == sorted(want)
    return len(want)


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(op, max_size=50), n=st.integers(2, 5), w=st.sampled_from([10_000, 600_000, 3_600_000]))
def test_rows_agree_with_generations_and_members(ops, n, w):
    r = audit_entries(build(ops).entries(), options=AuditOptions(storm_count=n, storm_window_ms=w))
    check_rows(r, n, w)


# A pool of clients (client id, host, static or not) whose instances come and go: restarts,
# expulsions, scale-outs, static members replaced in the same generation.
CLIENTS = [("app", "/10.3.0.1", False), ("app", "/10.3.0.2", False), ("job", "/10.3.0.1", False),
           ("web", "/10.3.0.3", True), ("web2", "/10.3.0.4", True)]
churn_op = st.tuples(st.sampled_from(["g", "h"]), st.sets(st.integers(0, len(CLIENTS) - 1), max_size=4),
                     st.sets(st.integers(0, len(CLIENTS) - 1), max_size=2), st.integers(0, 400),
                     st.sampled_from(["range", "cooperative-sticky"]), st.booleans())


def churn_script(ops) -> Script:
    """Per op: the group's members are the chosen clients; the second set restarts (a new member
    id); a static-only restart of a Stable group keeps its generation (KIP-345)."""
    s = Script()
    state = {g: {"gen": 0, "inc": {}, "members": set()} for g in ("g", "h")}
    for group, present, restart, gap, protocol, same in ops:
        g = state[group]
        for c in restart:
            g["inc"][c] = g["inc"].get(c, 0) + 1
        static_only = present == g["members"] and restart and all(CLIENTS[c][2] for c in restart)
        if not (same and static_only and g["gen"]):
            g["gen"] += 1
        g["members"] = set(present)
        ids = {c: f"{CLIENTS[c][0]}-{c}-{g['inc'].get(c, 0)}" for c in sorted(present)}
        parts = split(T, len(ids)) if ids else []
        s.clock += gap * 1000
        s.generation(group, g["gen"], {ids[c]: parts[i] for i, c in enumerate(sorted(ids))}, protocol=protocol,
                     clients={ids[c]: (CLIENTS[c][0], CLIENTS[c][1]) for c in ids},
                     instance_ids={ids[c]: CLIENTS[c][0] for c in ids if CLIENTS[c][2]}, at=s.clock)
    return s


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(churn_op, max_size=40), n=st.integers(2, 6), w=st.sampled_from([60_000, 600_000, 1_800_000]))
def test_rows_agree_on_churning_groups(ops, n, w):
    r = audit_entries(churn_script(ops).entries(), options=AuditOptions(storm_count=n, storm_window_ms=w))
    check_rows(r, n, w)
    for f in storms(r.tables):
        assert "rebalances in" in f["message"] and f["topic"] is None


@pytest.mark.parametrize("pure", PATHS)
def test_owners_of_partitions_listed_twice_or_given_to_two_members(tmp_path, pure):
    """Owners per partition are every member listing it, sorted (a partition listed twice by one
    member counts once): the commits' owners column and the moves."""
    s = Script()
    s.generation("g", 1, {"m2": [T[0], T[1]], "m1": [T[1], T[2]], "m3": [T[3], T[3]]})
    s.commit("g", {T[0]: 1, T[1]: 1, T[2]: 1, T[3]: 1})
    s.generation("g", 2, {"m2": [T[0], T[1]], "m1": [T[2]], "m3": [T[3]]})
    s.commit("g", {T[1]: 2, T[3]: 2})
    tables, _ = audit(tmp_path, s, pure)
    owners = [(c["generation_id"], c["partition"], c["owners"]) for c in tables["commits"]]
    assert owners == [(1, 0, ["m2"]), (1, 1, ["m1", "m2"]), (1, 2, ["m1"]), (1, 3, ["m3"]),
                      (2, 1, ["m2"]), (2, 3, ["m3"])]
    moved = [r["partitions_moved"] for r in rows(tables)]
    assert moved == [0, 1]  # t-1: {m1, m2} -> {m2}
