"""``server-range`` (group coordinator ``RangeAssignor``): goldens, Java examples, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from kgtool.assignors.model import GroupSpec, MemberSpec
from kgtool.assignors.server_range import ServerRangeAssignor
from kgtool.errors import InputError
from tests.assignors._build import group
from tests.assignors._strategies import groups
from tests.assignors.golden import expected_from_golden, group_from_golden, load_cases
from tests.assignors.invariants import assert_valid_and_balanced

ASSIGNOR = ServerRangeAssignor()
GOLDEN = load_cases("server_range")


def run(g, *, balanced: bool = False):
    result = ASSIGNOR.assign(g)
    assert_valid_and_balanced(g, result, balanced=balanced)
    return result


@pytest.mark.parametrize("case", GOLDEN, ids=lambda c: c["name"])
def test_golden(case):
    g = group_from_golden(case["input"])
    assert run(g) == {m: sorted(v) for m, v in expected_from_golden(case["output"]).items()}


def test_docstring_example():
    g = group({"T1": 3, "T2": 3}, {"M1": ["T1", "T2"], "M0": ["T1", "T2"]})
    assert run(g) == {"M0": [("T1", 0), ("T1", 1), ("T2", 0), ("T2", 1)], "M1": [("T1", 2), ("T2", 2)]}


def test_static_members_keep_ranges_across_member_id_changes():
    # RangeAssignor javadoc: with instance ids I0, I1 the assignment survives new member ids.
    topics = {"T1": 3, "T2": 3}
    before = run(group(topics, {"M0": ["T1", "T2"], "M1": ["T1", "T2"]}, instance_id={"M0": "I0", "M1": "I1"}))
    after = run(group(topics, {"M3": ["T1", "T2"], "M2": ["T1", "T2"]}, instance_id={"M3": "I0", "M2": "I1"}))
    assert before["M0"] == after["M3"] and before["M1"] == after["M2"]


# -- ported from group-coordinator/src/test/java/.../assignor/RangeAssignorTest.java


def testOneMemberNoTopic():
    assert ASSIGNOR.assign(group({"topic1": 3}, {"A": []})) == {"A": []}


def testOneMemberSubscribedToNonExistentTopic():
    with pytest.raises(InputError, match="non-existent topic"):
        ASSIGNOR.assign(group({"topic1": 3}, {"A": ["topic2"]}))


def testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions():
    g = group({"topic1": 3, "topic3": 2}, {"A": ["topic1", "topic3"], "B": ["topic1", "topic3"]})
    assert run(g) == {"A": [("topic1", 0), ("topic1", 1), ("topic3", 0)], "B": [("topic1", 2), ("topic3", 1)]}


def testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions():
    g = group({"topic1": 3, "topic2": 3, "topic3": 2},
              {"A": ["topic1", "topic2"], "B": ["topic3"], "C": ["topic2", "topic3"]})
    assert run(g) == {"A": [("topic1", 0), ("topic1", 1), ("topic1", 2), ("topic2", 0), ("topic2", 1)],
                      "B": [("topic3", 0)], "C": [("topic2", 2), ("topic3", 1)]}


def testFirstAssignmentNumMembersGreaterThanNumPartitions():
    g = group({"topic1": 3, "topic3": 2}, {"A": ["topic1", "topic3"], "B": ["topic1", "topic3"], "C": ["topic1"]})
    assert run(g) == {"A": [("topic1", 0), ("topic3", 0)], "B": [("topic1", 1), ("topic3", 1)], "C": [("topic1", 2)]}


# -- invariants


@settings(max_examples=150, deadline=None)
@given(groups(with_instance_ids=True))
def test_valid_and_sticky(g):
    first = run(g)
    fed = GroupSpec(topics=g.topics, members=[
        MemberSpec(m.member_id, m.topics, owned=tuple(first[m.member_id]), generation=1, instance_id=m.instance_id)
        for m in g.members])
    assert run(fed) == first


@settings(max_examples=100, deadline=None)
@given(groups(uniform=True, max_topics=1))
def test_single_topic_balanced(g):
    run(g, balanced=True)
