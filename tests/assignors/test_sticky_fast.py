"""The package's sticky assignors decide every group themselves, on integer arrays.

The line-by-line port of ``AbstractStickyAssignor`` (``tests/assignors/sticky_reference.py``)
is only a test oracle: the package never imports it. The groups it once decided alone are
held against it here: more than 62 racks, a topic listed twice in one subscription, no
partitions at all, and a group on which Kafka's assignor throws.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tests.assignors.sticky_reference as ref
from kgtool.assignors import _sticky_fast
from kgtool.assignors._sticky_common import member_iteration_order
from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec
from kgtool.assignors.sticky import CooperativeStickyAssignor, StickyAssignor, assign_partitions, sticky_input
from kgtool.cli.main import app
from tests.assignors.sticky_helpers import (
    assert_fast_path_ran,
    assert_same_as_reference,
    group,
    later_rounds,
    outcome,
    reference,
)

ROOT = Path(__file__).resolve().parents[2]


def _by_topic(parts) -> dict[str, list[int]]:
    """``[(topic, partition), ...]`` -> ``{topic: [partition, ...]}``, the shape of ``kgtool assign`` JSON."""
    out: dict[str, list[int]] = {}
    for t, p in parts:
        out.setdefault(t, []).append(p)
    return out


# --- the oracle stays in tests/ ---

def test_no_package_module_imports_the_reference_or_the_tests():
    for path in sorted((ROOT / "kgtool").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                assert "sticky_reference" not in name and not name.startswith("tests"), f"{path}: imports {name}"
    assert not (ROOT / "kgtool" / "assignors" / "_sticky_reference.py").exists()


def test_assigning_loads_no_test_module():
    """Every assignor and the CLI's assign command run without loading anything from tests/."""
    code = """
import sys
from kgtool.assignors import registry
from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec
import kgtool.cli.main
racks = tuple((f"r{p}",) for p in range(80))
g = GroupSpec({"t": TopicSpec("t", 80, racks), "u": TopicSpec("u", 3)},
              [MemberSpec(f"c{i}", ("t", "u", "t"), rack=f"r{i}") for i in range(70)])
for name in registry.names():
    registry.get(name).assign(g)
print(sorted(m for m in sys.modules if m == "tests" or m.startswith("tests.") or "sticky_reference" in m))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- more than 62 racks ---

def _rack_group(n_member_racks: int, n_partition_racks: int, *, uniform: bool = True) -> GroupSpec:
    """One topic per partition rack count, members each on its own rack (r0, r1, ...)."""
    racks = {
        "t0": [[f"r{p % n_partition_racks}", f"r{(p * 7 + 3) % n_partition_racks}"] for p in range(150)],
        "t1": [[f"r{(p * 5) % n_partition_racks}"] for p in range(40)],
    }
    members = {f"C{i:03d}": {"topics": ["t0", "t1"] if uniform or i % 3 else ["t0"], "rack": f"r{i}"}
               for i in range(n_member_racks)}
    return group({"t0": 150, "t1": 40}, members, racks)


def _racks(g: GroupSpec, *, cooperative: bool = False) -> _sticky_fast.Racks:
    inp = sticky_input(g, cooperative=cooperative)
    return _sticky_fast.Racks(inp, _sticky_fast.Layout(inp.partitions_per_topic, inp.members))


def test_more_than_63_member_racks_use_python_int_masks():
    for uniform in (True, False):
        g = _rack_group(90, 100, uniform=uniform)
        racks = _racks(g)
        assert racks.aware and racks.mask.dtype == object and racks.member_bit.dtype == object
        assert_same_as_reference(g)
        # the next round: every member owns what it got, one member left
        first = StickyAssignor().assign(g)
        again = GroupSpec(g.topics, [MemberSpec(m.member_id, m.topics, tuple(first[m.member_id]), 5, m.rack)
                                     for m in g.members[1:]])
        assert_same_as_reference(again)


@pytest.mark.parametrize(("member_racks", "dtype"), [(62, np.int64), (63, np.int64), (64, object)])
def test_member_racks_at_the_int64_edge(member_racks, dtype):
    for uniform in (True, False):
        g = _rack_group(member_racks, 70, uniform=uniform)
        racks = _racks(g)
        assert racks.aware and racks.mask.dtype == dtype
        assert_same_as_reference(g)


def test_kgtool_assign_with_more_than_62_racks(tmp_path):
    """The command line on a described group with 70 member racks and 100 replica racks."""
    g = _rack_group(70, 100, uniform=False)
    first = StickyAssignor().assign(g)
    g = GroupSpec(g.topics, [MemberSpec(m.member_id, m.topics, tuple(first[m.member_id][::2]), 3, m.rack)
                             for m in g.members])
    doc = {
        "topics": {t: {"partitions": s.partitions, "racks": [list(r) for r in s.racks]} for t, s in g.topics.items()},
        "members": [{"id": m.member_id, "topics": list(m.topics), "owned": [list(tp) for tp in m.owned],
                     "generation": m.generation, "rack": m.rack} for m in g.members],
    }
    path = tmp_path / "group.json"
    path.write_text(json.dumps(doc))
    for assignor, cooperative in (("sticky", False), ("cooperative-sticky", True)):
        result = CliRunner().invoke(app, ["assign", str(path), "--assignor", assignor, "--format", "json"])
        assert result.exit_code == 0, result.output
        expected = {m: _by_topic(parts) for m, parts in reference(g, cooperative=cooperative).items()}
        assert json.loads(result.stdout)["assignment"] == expected


def test_more_than_62_partition_racks_with_few_member_racks_stay_int64():
    """Only the members' racks take a bit: 100 replica racks, 20 member racks."""
    g = _rack_group(20, 100, uniform=False)
    racks = _racks(g)
    assert racks.aware and racks.mask.dtype == np.int64
    assert_same_as_reference(g)


def test_rack_awareness_is_decided_on_every_rack():
    """``useRackAwareAssignment`` is false when every partition has the same replica racks,
    also when most of them hold no member: 70 replica racks, members on two of them."""
    same = [[f"r{i}" for i in range(70)]] * 6
    g = group({"t": 6}, {"a": {"topics": ["t"], "rack": "r0"}, "b": {"topics": ["t"], "rack": "r1"}}, {"t": same})
    assert not _racks(g).aware
    assert_same_as_reference(g)
    g = group({"t": 6}, {"a": {"topics": ["t"], "rack": "r0"}, "b": {"topics": ["t"], "rack": "r1"}},
              {"t": same[:5] + [["r69"]]})
    assert _racks(g).aware
    assert_same_as_reference(g)


@st.composite
def many_rack_groups(draw) -> GroupSpec:
    """Groups over 63-130 racks: up to 100 members, on distinct racks half of the time, with
    random claims (stale and conflicting ones included) and generations."""
    pool = [f"rack-{i}" for i in range(draw(st.integers(63, 130)))]
    topics = {}
    for i in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 40))
        racks = tuple(tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)))
                      for _ in range(n))
        topics[f"t{i}"] = TopicSpec(f"t{i}", n, racks)
    names = list(topics)
    all_tps = [(t, p) for t, spec in topics.items() for p in range(spec.partitions)]
    distinct = draw(st.booleans())
    uniform = draw(st.booleans())
    members = []
    for i in range(draw(st.integers(1, 100))):
        rack = pool[i % len(pool)] if distinct else draw(st.sampled_from([*pool[:70], None]))
        subs = tuple(names) if uniform else tuple(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
        owned = tuple(draw(st.lists(st.sampled_from(all_tps), max_size=4, unique=True)))
        generation = draw(st.sampled_from([None, 3, 4, 4])) if owned else None
        members.append(MemberSpec(f"C{i}", subs, owned, generation, rack))
    return GroupSpec(topics, members)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(many_rack_groups())
def test_many_racks_equal_reference(g):
    assert_same_as_reference(g)


# --- a topic listed twice in one subscription ---

def test_topic_listed_twice_counts_twice_as_a_potential_consumer():
    """Java keeps the subscription's list: ``topic2AllPotentialConsumers`` gets C0 twice for t1,
    so t1 ties with t0 (two entries each) and t0 comes first in ``sortedAllTopics``. Listed
    once, t1 (one entry) would come first and C0 would get t0-1 instead of t0-0."""
    twice = group({"t0": 2, "t1": 1}, {"C0": {"topics": ["t1", "t0", "t1"]}, "C1": {"topics": ["t0"]}})
    once = group({"t0": 2, "t1": 1}, {"C0": {"topics": ["t1", "t0"]}, "C1": {"topics": ["t0"]}})
    assert StickyAssignor().assign(twice) == {"C0": [("t0", 0), ("t1", 0)], "C1": [("t0", 1)]}
    assert StickyAssignor().assign(once) == {"C0": [("t1", 0), ("t0", 1)], "C1": [("t0", 0)]}
    assert_same_as_reference(twice)
    assert_same_as_reference(once)


def test_topic_listed_twice_by_its_only_subscriber_can_move():
    """``canTopicParticipateInReassignment`` asks for two entries in the topic's list: C0 alone
    listing t0 twice makes it movable, so ``performReassignments`` hands t0-0 back to its
    previous owner C1 (older generation, not subscribed: Kafka's quirk). Listed once, t0 stays
    fixed with C0, and C1 takes t1-0 instead."""
    def with_c0_on(topics):
        return group({"t0": 1, "t1": 1}, {"C0": {"topics": topics, "owned": [("t1", 0)], "generation": 2},
                                          "C1": {"topics": ["t1"], "owned": [("t0", 0)], "generation": 1}})

    twice, once = with_c0_on(["t0", "t0", "t1"]), with_c0_on(["t0", "t1"])
    assert StickyAssignor().assign(twice) == {"C0": [("t1", 0)], "C1": [("t0", 0)]}
    assert StickyAssignor().assign(once) == {"C0": [("t0", 0)], "C1": [("t1", 0)]}
    assert_same_as_reference(twice)
    assert_same_as_reference(once)


def test_kgtool_assign_replays_a_recorded_subscription_listing_a_topic_twice():
    """Group-metadata records carry the subscription's topic list as the member sent it."""
    g = group({"t0": 1, "t1": 1}, {"C0": {"topics": ["t0", "t0", "t1"], "owned": [("t1", 0)], "generation": 2},
                                   "C1": {"topics": ["t1"], "owned": [("t0", 0)], "generation": 1}})
    for protocol, cooperative in (("sticky", False), ("cooperative-sticky", True)):
        expected = reference(g, cooperative=cooperative)
        members = [{
            "memberId": m.member_id,
            "subscriptionDecoded": {"topics": list(m.topics), "generationId": m.generation,
                                    "ownedPartitions": [{"topic": t, "partitions": ps}
                                                        for t, ps in _by_topic(m.owned).items()]},
            "assignmentDecoded": {"assignedPartitions": [{"topic": t, "partitions": ps}
                                                         for t, ps in _by_topic(expected[m.member_id]).items()]},
        } for m in g.members]
        record = {"key": {"group": "g"}, "value": {"protocol": protocol, "generation": 3, "members": members}}
        result = CliRunner().invoke(app, ["assign", "-", "--format", "json"], input=json.dumps(record) + "\n")
        assert result.exit_code == 0, result.output  # 1 when the replay differs from the record
        computed = json.loads(result.stdout)["rounds"][0]["computed"]
        assert computed == {m: _by_topic(parts) for m, parts in expected.items()}


def test_topic_listed_twice_breaks_equal_subscriptions_except_in_the_first_one():
    """``allSubscriptionsEqual`` compares each list's size with the first member's topic *set*."""
    members = {m: {"topics": ["t0", "t1"]} for m in ("a", "b", "c")}
    first = member_iteration_order(list(members))[0]
    later = member_iteration_order(list(members))[1]
    for who, equal in ((first, True), (later, False)):
        g = group({"t0": 3, "t1": 2}, {m: {"topics": ["t0", "t1", "t0"]} if m == who else spec
                                        for m, spec in members.items()})
        for cooperative in (False, True):
            inp = sticky_input(g, cooperative=cooperative)
            assert _sticky_fast.assign(inp, cooperative=cooperative)[2] is not equal  # general builder ran
            assert assign_partitions(g, cooperative=cooperative)[1] == (ref.assign_partitions(inp)[1])
        assert_same_as_reference(g)


@st.composite
def groups_listing_a_topic_twice(draw) -> GroupSpec:
    """Later rounds where some subscriptions list a topic more than once; sometimes only the
    first member in ``HashMap`` order does, which keeps the subscriptions "equal"."""
    uniform = draw(st.sampled_from([True, False, None]))
    g = draw(later_rounds(uniform=uniform, with_racks=draw(st.booleans())))
    ids = [m.member_id for m in g.members]
    if draw(st.booleans()):
        listing_twice = {member_iteration_order(ids)[0]}
    else:
        listing_twice = {ids[0]} | set(draw(st.lists(st.sampled_from(ids))))
    members = []
    for m in g.members:
        topics = list(m.topics)
        if m.member_id in listing_twice:
            for _ in range(draw(st.integers(1, 3))):
                topics.insert(draw(st.integers(0, len(topics))), draw(st.sampled_from(m.topics)))
        members.append(replace(m, topics=tuple(topics)))
    return GroupSpec(g.topics, members)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups_listing_a_topic_twice())
def test_topic_listed_twice_equals_reference(g):
    assert_same_as_reference(g)
    for cooperative in (False, True):  # partitionsTransferringOwnership too (None after the general builder)
        inp = sticky_input(g, cooperative=cooperative)
        expected = outcome(lambda: ref.assign_partitions(inp))
        if expected[0] != "Kafka throws":
            got = assign_partitions(g, cooperative=cooperative)
            assert got == ({m.member_id: expected[0][m.member_id] for m in g.members}, expected[1])


# --- no partitions at all ---

def test_no_partitions():
    """Topics unknown to the metadata or with 0 partitions: every member gets nothing, owned
    partitions of such topics are dropped, and Java's builders still decide the shape of
    ``partitionsTransferringOwnership`` (empty after the constrained one, null after the general)."""
    equal = group({"t": 0}, {"a": {"topics": ["t", "gone"], "owned": [("gone", 0)], "generation": 2},
                             "b": {"topics": ["t", "gone"]}})
    differ = group({"t": 0}, {"a": {"topics": ["t"], "owned": [("t", 0)], "generation": 2},
                              "b": {"topics": ["gone"]}})
    for g, transferring in ((equal, {}), (differ, None)):
        assert StickyAssignor().assign(g) == {"a": [], "b": []}
        assert CooperativeStickyAssignor().plan(g).withheld == {}
        for cooperative in (False, True):
            assert assign_partitions(g, cooperative=cooperative) == ({"a": [], "b": []}, transferring)
            assert ref.assign_partitions(sticky_input(g, cooperative=cooperative)) == ({"a": [], "b": []}, transferring)
        assert_same_as_reference(g)


@st.composite
def groups_with_few_partitions(draw) -> GroupSpec:
    """Topics of 0-2 partitions (often none at all), subscriptions naming unknown topics, and
    claims on partitions of both (within each known topic's partition count)."""
    topics = {f"t{i}": TopicSpec(f"t{i}", draw(st.integers(0, 2))) for i in range(draw(st.integers(1, 3)))}
    names = [*topics, "unknown"]
    claimable = [(t, p) for t, spec in topics.items() for p in range(spec.partitions)] + [("unknown", 0), ("unknown", 1)]
    members = []
    for i in range(draw(st.integers(1, 6))):
        subs = tuple(draw(st.lists(st.sampled_from(names), min_size=1, unique=True)))
        owned = tuple(draw(st.lists(st.sampled_from(claimable), max_size=3, unique=True)))
        members.append(MemberSpec(f"C{i}", subs, owned, draw(st.sampled_from([None, 1, 2]))))
    return GroupSpec(topics, members)


@settings(max_examples=80, deadline=None)
@given(groups_with_few_partitions())
def test_few_or_no_partitions_equal_reference(g):
    assert_same_as_reference(g)


# --- a group on which Kafka's assignor throws ---

def test_kafka_throws_and_the_fast_path_says_so():
    """``GeneralAssignmentBuilder.performReassignments`` moves a partition back to its previous
    owner of an older generation, C2, which was set aside as unable to take part in the
    reassignment (it owns all of t2 and subscribes to nothing else): Java's
    ``currentAssignment.get(C2)`` is null and it throws a NullPointerException."""
    g = group({"t0": 3, "t1": 1, "t2": 2}, {
        "C0": {"topics": ["t0", "t1"], "owned": [("t0", 1), ("t0", 2), ("t1", 0)], "generation": 1},
        "C1": {"topics": ["t0", "t1"], "owned": [("t2", 0)], "generation": 2},
        "C2": {"topics": ["t2"], "owned": [("t2", 1), ("t0", 0)], "generation": 1},
    })
    message = ("Kafka's sticky assignor throws NullPointerException: consumer C2 (a previous owner) takes no "
               "part in the reassignment")
    for cooperative in (False, True):
        expected = outcome(lambda: reference(g, cooperative=cooperative))
        assert expected == ("Kafka throws", message)
        assert_fast_path_ran(g, cooperative=cooperative, expected=expected)
    assert_same_as_reference(g)
