"""``roundrobin`` (client ``RoundRobinAssignor``): goldens, Kafka's RoundRobinAssignorTest, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from kgtool.assignors.roundrobin import RoundRobinAssignor
from tests.assignors._build import group
from tests.assignors._strategies import groups
from tests.assignors.golden import expected_from_golden, group_from_golden, load_cases
from tests.assignors.invariants import assert_valid_and_balanced

ASSIGNOR = RoundRobinAssignor()
GOLDEN = load_cases("roundrobin")
EXAMPLES = [c for c in load_cases("exact_examples") if c["input"]["assignor"] == "roundrobin"]


def run(g):
    result = ASSIGNOR.assign(g)
    # RoundRobinAssignor javadoc: identical subscriptions give counts within one.
    assert_valid_and_balanced(g, result)
    return result


def tp(t, p):
    return (t, p)


@pytest.mark.parametrize("case", GOLDEN + EXAMPLES, ids=lambda c: c["name"])
def test_golden(case):
    g = group_from_golden(case["input"])
    assert run(g) == expected_from_golden(case["output"])


def test_docstring_example():
    g = group({"t0": 1, "t1": 2, "t2": 3}, {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    assert run(g) == {"C0": [tp("t0", 0)], "C1": [tp("t1", 0)],
                      "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)]}


# -- ported from clients/src/test/java/org/apache/kafka/clients/consumer/RoundRobinAssignorTest.java


def testOneConsumerNoTopic():
    assert run(group({}, {"consumer": []})) == {"consumer": []}


def testOneConsumerNonexistentTopic():
    assert run(group({}, {"consumer": ["topic"]})) == {"consumer": []}


def testOneConsumerOneTopic():
    assert run(group({"topic": 3}, {"consumer": ["topic"]})) == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def testOnlyAssignsPartitionsFromSubscribedTopics():
    g = group({"topic": 3, "other": 3}, {"consumer": ["topic"]})
    assert run(g) == {"consumer": [tp("topic", 0), tp("topic", 1), tp("topic", 2)]}


def testOneConsumerMultipleTopics():
    g = group({"topic1": 1, "topic2": 2}, {"consumer": ["topic1", "topic2"]})
    assert run(g) == {"consumer": [tp("topic1", 0), tp("topic2", 0), tp("topic2", 1)]}


def testTwoConsumersOneTopicOnePartition():
    g = group({"topic": 1}, {"consumer1": ["topic"], "consumer2": ["topic"]})
    assert run(g) == {"consumer1": [tp("topic", 0)], "consumer2": []}


def testTwoConsumersOneTopicTwoPartitions():
    g = group({"topic": 2}, {"consumer1": ["topic"], "consumer2": ["topic"]})
    assert run(g) == {"consumer1": [tp("topic", 0)], "consumer2": [tp("topic", 1)]}


def testMultipleConsumersMixedTopics():
    g = group({"topic1": 3, "topic2": 2},
              {"consumer1": ["topic1"], "consumer2": ["topic1", "topic2"], "consumer3": ["topic1"]})
    assert run(g) == {"consumer1": [tp("topic1", 0)],
                      "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)],
                      "consumer3": [tp("topic1", 2)]}


def testTwoDynamicConsumersTwoTopicsSixPartitions():
    g = group({"topic1": 3, "topic2": 3}, {"consumer1": ["topic1", "topic2"], "consumer2": ["topic1", "topic2"]})
    assert run(g) == {"consumer1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
                      "consumer2": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)]}


def testTwoStaticConsumersTwoTopicsSixPartitions():
    g = group({"topic1": 3, "topic2": 3}, {"consumer-b": ["topic1", "topic2"], "consumer-a": ["topic1", "topic2"]},
              instance_id={"consumer-b": "instance1", "consumer-a": "instance2"})
    assert run(g) == {"consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
                      "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)]}


def testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions():
    g = group({"topic1": 3, "topic2": 3}, {"consumer-b": ["topic1", "topic2"], "consumer-a": ["topic1", "topic2"]},
              instance_id={"consumer-b": "instance1"})
    assert run(g) == {"consumer-b": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 1)],
                      "consumer-a": [tp("topic1", 1), tp("topic2", 0), tp("topic2", 2)]}


def testStaticMemberAssignmentPersistent():
    subs = ["topic1", "topic2"]
    inst = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    members = {"consumer1": subs, "consumer2": subs, "consumer3": subs, "consumer4": subs}
    expected = {"consumer1": [tp("topic1", 0), tp("topic2", 1)], "consumer2": [tp("topic1", 1), tp("topic2", 2)],
                "consumer3": [tp("topic1", 2)], "consumer4": [tp("topic2", 0)]}
    assert run(group({"topic1": 3, "topic2": 3}, members, instance_id=inst)) == expected
    del members["consumer4"]
    members["consumer5"] = subs
    expected["consumer5"] = expected.pop("consumer4")
    assert run(group({"topic1": 3, "topic2": 3}, members, instance_id=inst)) == expected


def testStaticMemberAssignmentPersistentAfterMemberIdChanges():
    subs = ["topic1", "topic2"]
    topics = {"topic1": 3, "topic2": 3}
    a = run(group(topics, {"consumer1": subs, "consumer2": subs, "consumer3": subs},
                  instance_id={"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}))
    b = run(group(topics, {"consumer4": subs, "consumer5": subs, "consumer1": subs},
                  instance_id={"consumer4": "instance1", "consumer5": "instance2", "consumer1": "instance3"}))
    assert a["consumer1"] == b["consumer4"] == [tp("topic1", 0), tp("topic2", 0)]
    assert a["consumer2"] == b["consumer5"] == [tp("topic1", 1), tp("topic2", 1)]
    assert a["consumer3"] == b["consumer1"] == [tp("topic1", 2), tp("topic2", 2)]


def _reference(g):
    """A literal transliteration of ``RoundRobinAssignor.assign`` (CircularIterator with peek)."""
    from kgtool.assignors._client import member_info_sorted
    from kgtool.java import java_sorted

    out = {m.member_id: [] for m in g.members}
    ordered = member_info_sorted(g.members)
    topics = java_sorted({t for m in g.members for t in m.topics})
    i = 0
    for t in topics:
        if t not in g.topics:
            continue
        for p in range(g.topics[t].partitions):
            while t not in ordered[i % len(ordered)].topics:
                i += 1
            out[ordered[i % len(ordered)].member_id].append((t, p))
            i += 1
    return out


@settings(max_examples=200, deadline=None)
@given(groups(with_instance_ids=True))
def test_matches_reference_iterator(g):
    assert run(g) == _reference(g)


@settings(max_examples=100, deadline=None)
@given(groups(uniform=True))
def test_uniform_subscriptions_balanced(g):
    run(g)
