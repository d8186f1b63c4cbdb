"""Kafka's ``cooperative-sticky`` assignor: golden cases, ported Java tests, invariants."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from kgtool.assignors.sticky import CooperativeStickyAssignor, assign_partitions, protocol_owned_partitions
from tests.assignors.golden import expected_from_golden, group_from_golden, load_cases
from tests.assignors.invariants import assert_valid_and_balanced
from tests.assignors.sticky_helpers import group, groups, next_round
from tests.assignors.test_sticky import check_golden

COOPERATIVE_CASES = load_cases("cooperative_sticky")
EXAMPLES = [c for c in load_cases("exact_examples") if c["input"]["assignor"] == "cooperative-sticky"]


def _target(plan) -> dict[str, list]:
    """The assignment after the follow-up rebalance: withheld partitions handed to their new owner."""
    target = {m: list(p) for m, p in plan.assignment.items()}
    for tp, member in plan.withheld.items():
        target[member].append(tp)
    return target


def _check(g, plan, *, balanced: bool = True):
    """Invariants of a cooperative round, through the shared helper.

    The round's assignment plus the withheld partitions is a complete, valid assignment; a
    withheld partition is owned by someone else now and never given to its new owner yet.
    """
    assert_valid_and_balanced(g, _target(plan), balanced=balanced)
    owners = {tp: m.member_id for m in g.members for tp in m.owned}
    for tp, member in plan.withheld.items():
        assert tp not in plan.assignment[member]
        assert owners.get(tp) not in (None, member), f"{tp} withheld but not moving"
    return plan.assignment


@pytest.mark.parametrize("case", COOPERATIVE_CASES + EXAMPLES, ids=lambda c: c["name"])
def test_golden(case):
    g = group_from_golden(case["input"])
    plan = CooperativeStickyAssignor().plan(g)
    expected = expected_from_golden(case["output"])
    # Kafka's output is the round's assignment; its target (plus withheld) must be valid.
    assert plan.assignment == expected
    target_expected = {m: list(p) for m, p in expected.items()}
    for tp, member in plan.withheld.items():
        target_expected[member].append(tp)
    check_golden(g, _target(plan), target_expected, balanced=False)


def test_javadoc_round_then_c1_leaves():
    topics = {t: 2 for t in ("t0", "t1", "t2", "t3")}
    subs = {"topics": list(topics)}
    g = group(topics, {"C0": subs, "C1": subs, "C2": subs})
    first = _check(g, CooperativeStickyAssignor().plan(g))
    assert first == {
        "C0": [("t0", 0), ("t1", 1), ("t3", 0)],
        "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
        "C2": [("t1", 0), ("t2", 1)],
    }
    survivors = group(topics, {c: {"topics": list(topics), "owned": first[c], "generation": 1} for c in ("C0", "C2")})
    plan = CooperativeStickyAssignor().plan(survivors)
    # C1's partitions had no surviving owner: nothing to revoke, so nothing is withheld.
    assert plan.withheld == {}
    assert _check(survivors, plan) == {
        "C0": [("t0", 0), ("t3", 0), ("t1", 1), ("t0", 1)],
        "C2": [("t1", 0), ("t2", 1), ("t2", 0), ("t3", 1)],
    }


def test_owned_partitions_arrive_sorted():
    # ConsumerProtocol.serializeSubscription sorts ownedPartitions by topic, then partition.
    assert protocol_owned_partitions([("b", 2), ("a", 9), ("b", 0)]) == [("a", 9), ("b", 0), ("b", 2)]


# --- ported from CooperativeStickyAssignorTest / AbstractStickyAssignorTest ---

def testAddRemoveConsumerOneTopic():
    g = group({"topic": 3}, {"consumer1": {"topics": ["topic"]}})
    a = _check(g, CooperativeStickyAssignor().plan(g))
    assert a == {"consumer1": [("topic", 0), ("topic", 1), ("topic", 2)]}
    g = group({"topic": 3}, {
        "consumer1": {"topics": ["topic"], "owned": a["consumer1"], "generation": 1},
        "consumer2": {"topics": ["topic"], "generation": 1},
    })
    raw, transferring = assign_partitions(g, cooperative=True)
    assert transferring == {("topic", 2): "consumer2"}
    assert raw == {"consumer1": [("topic", 0), ("topic", 1)], "consumer2": [("topic", 2)]}
    plan = CooperativeStickyAssignor().plan(g)
    # adjustAssignment: consumer2 gets topic-2 only after consumer1 revoked it.
    assert _check(g, plan) == {"consumer1": [("topic", 0), ("topic", 1)], "consumer2": []}
    assert plan.withheld == {("topic", 2): "consumer2"}


def testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers():
    subs = ["topic1", "topic2"]
    g = group({"topic1": 2, "topic2": 2}, {
        "consumer1": {"topics": subs, "owned": [("topic1", 0), ("topic2", 0)], "generation": 1},
        "consumer2": {"topics": subs, "owned": [("topic1", 1), ("topic2", 1)], "generation": 1},
        "consumer3": {"topics": subs, "generation": 1},
    })
    raw, transferring = assign_partitions(g, cooperative=True)
    assert transferring == {("topic2", 0): "consumer3"}
    assert raw == {"consumer1": [("topic1", 0)], "consumer2": [("topic1", 1), ("topic2", 1)],
                   "consumer3": [("topic2", 0)]}
    assert _check(g, CooperativeStickyAssignor().plan(g))["consumer3"] == []


def testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithEqualPartitionsPerConsumer():  # noqa: E501
    g = group({"topic": 3}, {
        "consumer1": {"topics": ["topic"], "owned": [("topic", 0), ("topic", 1)], "generation": 1},
        "consumer2": {"topics": ["topic"], "owned": [("topic", 0), ("topic", 2)], "generation": 1},
        "consumer3": {"topics": ["topic"], "generation": 1},
    })
    raw, transferring = assign_partitions(g, cooperative=True)
    assert raw == {"consumer1": [("topic", 1)], "consumer2": [("topic", 2)], "consumer3": [("topic", 0)]}
    # topic-0 was claimed by two members of one generation: it counts as changing owner.
    assert transferring == {("topic", 0): "consumer3"}
    plan = CooperativeStickyAssignor().plan(g)
    assert plan.assignment == {"consumer1": [("topic", 1)], "consumer2": [("topic", 2)], "consumer3": []}


def test_stale_generation_claims_lose():
    g = group({"topic": 3}, {
        "consumer1": {"topics": ["topic"], "owned": [("topic", 0), ("topic", 1)], "generation": 2},
        "consumer2": {"topics": ["topic"], "owned": [("topic", 1), ("topic", 2)], "generation": 1},
        "consumer3": {"topics": ["topic"], "owned": [("topic", 2), ("topic", 0)], "generation": 0},
    })
    raw, transferring = assign_partitions(g, cooperative=True)
    # Claims resolve to consumer1 [0, 1], consumer2 [2], consumer3 []; with a quota of one
    # each, consumer1 keeps topic-0 (owned partitions sorted by partition) and revokes topic-1.
    assert raw == {"consumer1": [("topic", 0)], "consumer2": [("topic", 2)], "consumer3": [("topic", 1)]}
    assert transferring == {("topic", 1): "consumer3"}
    assert _check(g, CooperativeStickyAssignor().plan(g))["consumer3"] == []


def test_conflicting_claims_keep_the_higher_generation():
    # allSubscriptionsEqual with ConsumerProtocol v3 generations: the newer generation wins.
    g = group({"t": 2}, {
        "old": {"topics": ["t"], "owned": [("t", 0), ("t", 1)], "generation": 1},
        "new": {"topics": ["t"], "owned": [("t", 0)], "generation": 2},
    })
    raw, _ = assign_partitions(g, cooperative=True)
    assert raw == {"old": [("t", 1)], "new": [("t", 0)]}


# --- properties ---

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(with_racks=False))
def test_valid_balanced_and_stable(g):
    plan = CooperativeStickyAssignor().plan(g)
    first = _check(g, plan)
    assert plan.withheld == {}  # nobody owned anything
    again = next_round(g, first, 1)
    plan2 = CooperativeStickyAssignor().plan(again)
    assert {m: set(p) for m, p in _check(again, plan2).items()} == {m: set(p) for m, p in first.items()}
    assert plan2.withheld == {}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(), groups())
def test_moving_partition_never_given_to_new_owner_in_same_round(g, later):
    """Round 1 on ``g``, then the members of ``later`` join/stay/leave with ``g``'s ownership."""
    first = CooperativeStickyAssignor().assign(g)
    owned = {m.member_id: first[m.member_id] for m in g.members}
    topics = {t: spec.partitions for t, spec in g.topics.items()}
    members = {}
    for m in later.members:
        subs = [t for t in m.topics if t in topics] or list(topics)[:1]
        members[m.member_id] = {"topics": subs, "owned": owned.get(m.member_id, []), "generation": 1}
    g2 = group(topics, members)
    plan = CooperativeStickyAssignor().plan(g2)
    _check(g2, plan, balanced=False)
    previous_owner = {tp: m for m, parts in owned.items() if m in members for tp in parts}
    for member, parts in plan.assignment.items():
        for tp in parts:
            assert previous_owner.get(tp) in (None, member), f"{tp} moved to {member} in the same round"
