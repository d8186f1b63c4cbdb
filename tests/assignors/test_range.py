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


def _rack_reference(g):
    """An independent, literal transliteration of Kafka 4.x ``RangeAssignor.assignPartitions``
    (rack-aware included), written without any of kgtool's layouts or caches."""
    from kgtool.assignors._client import member_info_sorted, partitions_per_topic_order

    racks = {m.member_id: m.rack for m in g.members if m.rack}
    states = []
    for t in partitions_per_topic_order(g):
        n = g.topics[t].partitions
        consumers = [m.member_id for m in member_info_sorted([m for m in g.members if t in m.topics])]
        crack = {c: racks.get(c) for c in consumers}
        st = {"topic": t, "consumers": crack, "unassigned": list(range(n)), "assigned": dict.fromkeys(consumers, 0),
              "per": n // len(consumers), "extra": n % len(consumers)}
        consumer_racks = {r for r in crack.values() if r}
        rr = g.topics[t].racks or ()
        st["pr"] = [set(x for x in (rr[p] if p < len(rr) else ()) if x is not None) for p in range(n)] if consumer_racks else []
        all_pr = set().union(*st["pr"]) if st["pr"] else set()
        st["needs"] = bool(consumer_racks) and not consumer_racks.isdisjoint(all_pr) and not all(r == all_pr for r in st["pr"])
        states.append(st)
    out = {m.member_id: [] for m in g.members}

    def match(st, c, p):
        r = st["consumers"][c]
        return r is None or (p < len(st["pr"]) and r in st["pr"][p])

    def max_assignable(st, c):
        return max(0, st["per"] + (1 if st["extra"] > 0 else 0) - st["assigned"][c])

    def assign(c, ps, st):
        out[c].extend((st["topic"], p) for p in ps)
        st["assigned"][c] += len(ps)
        if st["assigned"][c] > st["per"]:
            st["extra"] -= 1
        st["unassigned"] = [p for p in st["unassigned"] if p not in ps]

    def assign_ranges(st, may):
        for c in st["consumers"]:
            if not st["unassigned"]:
                break
            ps = [p for p in st["unassigned"] if may(st, c, p)][: max_assignable(st, c)]
            if ps:
                assign(c, ps, st)

    use = any(st["needs"] for st in states)
    if use:
        groups = {}
        for st in states:
            groups.setdefault(tuple(st["consumers"].items()), {}).setdefault(len(st["pr"]), []).append(st)
        for by_n in groups.values():
            for n, co in by_n.items():
                if len(co) > 1:
                    remaining = list(co[0]["consumers"])
                    for p in range(n):
                        c = next((c for c in remaining
                                  if all(match(t, c, p) and max_assignable(t, c) > 0 for t in co)), None)
                        if c is None:
                            continue
                        for t in co:
                            assign(c, [p], t)
                        if not any(max_assignable(t, c) > 0 for t in co):
                            remaining.remove(c)
                            if not remaining:
                                break
                elif co[0]["needs"]:
                    assign_ranges(co[0], match)
    for st in states:
        assign_ranges(st, lambda st, c, p: True)
    if use:
        for v in out.values():
            v.sort()
    return out


@settings(max_examples=200, deadline=None)
@given(groups(with_racks=True, with_instance_ids=True, max_topics=4))
def test_rack_aware_matches_literal_reference(g):
    assert run(g) == _rack_reference(g)


@settings(max_examples=100, deadline=None)
@given(groups(uniform=True, equal_partitions=True, with_racks=True, max_topics=4))
def test_co_partitioned_rack_aware_matches_literal_reference(g):
    assert run(g) == _rack_reference(g)


def test_topics_sharing_a_bucket_follow_subscription_map_order():
    # "Aa".hashCode() == "BB".hashCode() == 2112: same HashMap bucket, so their order is the
    # order allSubscribedTopics first saw them, iterating the HashMap<String, Subscription> of
    # members: "m1" (3428), "m2" (3429), "m3" (3430) -> m1 adds BB first. Input order differs.
    g = group({"Aa": 2, "BB": 2}, {"m3": ["Aa", "BB"], "m2": ["Aa"], "m1": ["BB"]})
    assert run(g)["m3"] == [("BB", 1), ("Aa", 1)]


def test_member_order_is_string_compare_to():
    # MemberInfo.compareTo uses String.compareTo (UTF-16 units): U+1F600 sorts before U+FFFF.
    g = group({"t": 2}, {"a\uffff": ["t"], "a\U0001F600": ["t"]})
    assert run(g) == {"a\U0001F600": [("t", 0)], "a\uffff": [("t", 1)]}
