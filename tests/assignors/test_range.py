"""``range`` (client ``RangeAssignor``): goldens, Kafka's RangeAssignorTest, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from kgtool.assignors.range import RangeAssignor
from tests.assignors._build import group, rack_group, racks, null_racks, sorted_strings
from tests.assignors._strategies import groups
from tests.assignors.golden import expected_from_golden, group_from_golden, load_cases
from tests.assignors.invariants import assert_valid_and_balanced

ASSIGNOR = RangeAssignor()
GOLDEN = load_cases("range")
EXAMPLES = [c for c in load_cases("exact_examples") if c["input"]["assignor"] == "range"]


def run(g, *, balanced: bool = False):
    result = ASSIGNOR.assign(g)
    # range balances per topic, not per member: only validity is a group-wide property.
    assert_valid_and_balanced(g, result, balanced=balanced)
    return result


@pytest.mark.parametrize("case", GOLDEN + EXAMPLES, ids=lambda c: c["name"])
def test_golden(case):
    g = group_from_golden(case["input"])
    assert run(g) == expected_from_golden(case["output"])


def test_docstring_example():
    g = group({"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    assert run(g) == {"C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "C1": [("t0", 2), ("t1", 2)]}


# -- ported from clients/src/test/java/org/apache/kafka/clients/consumer/RangeAssignorTest.java


def testOneConsumerNoTopic():
    assert run(group({}, {"consumer": []})) == {"consumer": []}


def testOneConsumerNonexistentTopic():
    assert run(group({}, {"consumer": ["topic"]}), balanced=False) == {"consumer": []}


def testOneConsumerOneTopic():
    assert run(group({"topic1": 3}, {"consumer": ["topic1"]}))["consumer"] == [
        ("topic1", 0), ("topic1", 1), ("topic1", 2)]


def testOnlyAssignsPartitionsFromSubscribedTopics():
    g = group({"topic1": 3, "other": 3}, {"consumer": ["topic1"]})
    assert run(g)["consumer"] == [("topic1", 0), ("topic1", 1), ("topic1", 2)]


def testOneConsumerMultipleTopics():
    g = group({"topic1": 1, "topic2": 2}, {"consumer": ["topic1", "topic2"]})
    assert sorted(run(g)["consumer"]) == [("topic1", 0), ("topic2", 0), ("topic2", 1)]


def testTwoConsumersOneTopicOnePartition():
    g = group({"topic1": 1}, {"consumer1": ["topic1"], "consumer2": ["topic1"]})
    assert run(g) == {"consumer1": [("topic1", 0)], "consumer2": []}


def testTwoConsumersOneTopicTwoPartitions():
    g = group({"topic1": 2}, {"consumer1": ["topic1"], "consumer2": ["topic1"]})
    assert run(g) == {"consumer1": [("topic1", 0)], "consumer2": [("topic1", 1)]}


def testMultipleConsumersMixedTopicSubscriptions():
    g = group({"topic1": 3, "topic2": 2},
              {"consumer1": ["topic1"], "consumer2": ["topic1", "topic2"], "consumer3": ["topic1"]})
    got = run(g)
    assert got["consumer1"] == [("topic1", 0)]
    assert sorted(got["consumer2"]) == [("topic1", 1), ("topic2", 0), ("topic2", 1)]
    assert got["consumer3"] == [("topic1", 2)]


def testTwoConsumersTwoTopicsSixPartitions():
    g = group({"topic1": 3, "topic2": 3}, {"consumer1": ["topic1", "topic2"], "consumer2": ["topic1", "topic2"]})
    got = run(g)
    assert sorted(got["consumer1"]) == [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]
    assert sorted(got["consumer2"]) == [("topic1", 2), ("topic2", 2)]


def testTwoStaticConsumersTwoTopicsSixPartitions():
    # consumer-a sorts first by member id, but instance ids decide: instance1 < instance2.
    g = group({"topic1": 3, "topic2": 3},
              {"consumer-b": ["topic1", "topic2"], "consumer-a": ["topic1", "topic2"]},
              instance_id={"consumer-b": "instance1", "consumer-a": "instance2"})
    got = run(g)
    assert sorted(got["consumer-b"]) == [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]
    assert sorted(got["consumer-a"]) == [("topic1", 2), ("topic2", 2)]


def testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions():
    g = group({"topic1": 3, "topic2": 3},
              {"consumer-b": ["topic1", "topic2"], "consumer-a": ["topic1", "topic2"]},
              instance_id={"consumer-b": "instance1"})
    got = run(g)
    assert sorted(got["consumer-b"]) == [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]
    assert sorted(got["consumer-a"]) == [("topic1", 2), ("topic2", 2)]


def testStaticMemberRangeAssignmentPersistent():
    subs = ["topic1", "topic2"]
    members = {"consumer1": subs, "consumer2": subs, "consumer3": subs, "consumer4": subs}
    inst = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    first = run(group({"topic1": 5, "topic2": 4}, members, instance_id=inst))
    # Replace dynamic consumer4 with consumer5: the static members keep their partitions.
    members2 = dict(members)
    del members2["consumer4"]
    members2["consumer5"] = subs
    second = run(group({"topic1": 5, "topic2": 4}, members2, instance_id=inst))
    for c in inst:
        assert second[c] == first[c]
    assert second["consumer5"] == first["consumer4"]


def testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges():
    subs = ["topic1", "topic2"]
    topics = {"topic1": 5, "topic2": 5}
    a = run(group(topics, {"consumer1": subs, "consumer2": subs, "consumer3": subs},
                  instance_id={"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}))
    b = run(group(topics, {"consumer4": subs, "consumer5": subs, "consumer1": subs},
                  instance_id={"consumer4": "instance1", "consumer5": "instance2", "consumer1": "instance3"}))
    assert {"instance1": a["consumer1"], "instance2": a["consumer2"], "instance3": a["consumer3"]} == {
        "instance1": b["consumer4"], "instance2": b["consumer5"], "instance3": b["consumer1"]}


def testRackAwareAssignmentWithCoPartitioning():
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_topics = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    consumer_racks = ["a", "b", "b", "a"]
    non_rack_aware = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5",
                      "t3-0, t4-0", "t3-1, t4-1"]

    def check(rf, expected):
        got = run(rack_group(topics, rf, racks(2), consumer_racks, consumer_topics))
        assert sorted_strings(got) == expected

    check(3, non_rack_aware)
    check(2, non_rack_aware)
    check(1, ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0"])

    all_topics = ["t1", "t2", "t3", "t4"]
    consumer_topics = [all_topics] * 4
    non_rack_aware = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1",
                      "t1-4, t2-4", "t1-5, t2-5"]
    check(3, non_rack_aware)
    check(2, non_rack_aware)
    check(1, ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"])
    got = run(rack_group(topics, 1, racks(3), consumer_racks, consumer_topics))
    assert sorted_strings(got) == ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
                                   "t1-2, t2-2", "t1-5, t2-5"]


def test_rack_aware_needs_some_partition_off_some_rack():
    # useRackAwareAssignment: replicas on every rack (or no partition racks, or disjoint racks)
    # leave the plain range assignment, topic lists in HashMap order and unsorted.
    topics = {"t1": 6, "t2": 6}
    cts = [["t1", "t2"]] * 3
    plain = run(group(topics, {f"consumer{i}": ["t1", "t2"] for i in range(3)}))
    for g in (rack_group(topics, 3, racks(3), racks(3), cts), rack_group(topics, 3, null_racks(3), racks(3), cts),
              rack_group(topics, 3, racks(3), ["d", "e", "f"], cts)):
        assert run(g) == plain


@settings(max_examples=150, deadline=None)
@given(groups(with_racks=True, with_instance_ids=True))
def test_valid_for_any_group(g):
    run(g)


@settings(max_examples=100, deadline=None)
@given(groups(uniform=True, max_topics=1))
def test_single_topic_balanced(g):
    run(g, balanced=True)


def _reference(g):
    """A literal transliteration of the pre-KIP-881 ``RangeAssignor.assign`` loop (no racks)."""
    from kgtool.assignors._client import member_info_sorted, partitions_per_topic_order

    out = {m.member_id: [] for m in g.members}
    for t in partitions_per_topic_order(g):
        consumers = member_info_sorted([m for m in g.members if t in m.topics])
        n = g.topics[t].partitions
        per, extra = divmod(n, len(consumers))
        for i, m in enumerate(consumers):
            start = per * i + min(i, extra)
            length = per + (0 if i + 1 > extra else 1)
            out[m.member_id].extend((t, p) for p in range(start, start + length))
    return out


@settings(max_examples=150, deadline=None)
@given(groups(with_instance_ids=True))
def test_matches_reference_loop(g):
    assert run(g) == _reference(g)


@settings(max_examples=150, deadline=None)
@given(groups(uniform=True, equal_partitions=True, max_members=30, max_partitions=70, with_instance_ids=True))
def test_strided_layout_matches_reference_loop(g):
    assert run(g) == _reference(g)
