"""ConsumerProtocol subscription/assignment and assignor user data, against kafka-python's codec.

kafka-python (3.x) implements the same specs from its own copy of Kafka's JSON files with its
own code: an independent oracle, in both directions.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.coordinator.consumer_protocol import (
    decode_assignment,
    decode_cooperative_sticky_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_sticky_user_data,
    encode_sticky_user_data,
    encode_subscription,
    group_partitions_by_topic,
)
from kgtool.errors import DecodeError
from kgtool.java import string_hash_order

from tests.coordinator.strategies import TEXT

kmeta = pytest.importorskip("kafka.protocol.consumer.metadata")
kud = pytest.importorskip("kafka.coordinator.assignors.sticky.user_data")
KSub = kmeta.ConsumerProtocolSubscription
KAsg = kmeta.ConsumerProtocolAssignment
KSticky = kud.StickyAssignorUserData

INT32 = st.integers(-(2**31), 2**31 - 1)
TOPIC_PARTITIONS = st.lists(
    st.fixed_dictionaries({"topic": TEXT, "partitions": st.lists(INT32, max_size=4)}), max_size=3
)


@st.composite
def subscriptions(draw):
    version = draw(st.integers(0, 3))
    sub = {"topics": draw(st.lists(TEXT, max_size=4)), "user_data": draw(st.none() | st.binary(max_size=8))}
    if version >= 1:
        sub["owned_partitions"] = draw(TOPIC_PARTITIONS)
    if version >= 2:
        sub["generation_id"] = draw(INT32)
    if version >= 3:
        sub["rack_id"] = draw(st.none() | TEXT)
    sub["_version"] = version
    return sub


@st.composite
def assignments(draw):
    return {
        "assigned_partitions": draw(TOPIC_PARTITIONS),
        "user_data": draw(st.none() | st.binary(max_size=8)),
        "_version": draw(st.integers(0, 3)),
    }


def k_subscription(sub: dict):
    kw = {"topics": sub["topics"], "user_data": sub["user_data"]}
    if "owned_partitions" in sub:
        kw["owned_partitions"] = [KSub.TopicPartition(topic=tp["topic"], partitions=tp["partitions"])
                                  for tp in sub["owned_partitions"]]
    for name in ("generation_id", "rack_id"):
        if name in sub:
            kw[name] = sub[name]
    return KSub(**kw)


@settings(max_examples=200, deadline=None)
@given(subscriptions())
def test_subscription_matches_kafka_python(sub):
    data = encode_subscription(sub)
    assert data == k_subscription(sub).encode(version=sub["_version"])
    assert decode_subscription(data) == sub
    theirs = KSub.decode(data)
    assert list(theirs.topics) == sub["topics"] and theirs.user_data == sub["user_data"]
    if sub["_version"] >= 1:
        assert [(tp.topic, list(tp.partitions)) for tp in theirs.owned_partitions] == [
            (tp["topic"], tp["partitions"]) for tp in sub["owned_partitions"]
        ]


@settings(max_examples=200, deadline=None)
@given(assignments())
def test_assignment_matches_kafka_python(asg):
    data = encode_assignment(asg)
    theirs = KAsg(
        assigned_partitions=[KAsg.TopicPartition(topic=tp["topic"], partitions=tp["partitions"])
                             for tp in asg["assigned_partitions"]],
        user_data=asg["user_data"],
    )
    assert data == theirs.encode(version=asg["_version"])
    assert decode_assignment(data) == asg


def test_newer_versions_read_as_the_highest_and_trailing_bytes_are_counted():
    body = encode_subscription({"topics": ["t"], "user_data": None, "owned_partitions": [],
                                "generation_id": 3, "rack_id": "r"}, version=3)[2:]
    data = struct.pack(">h", 7) + body + b"\x00\x00\x00\x09newer"
    got = decode_subscription(data)
    assert got["_version"] == 7 and got["_trailing_bytes"] == 9 and got["rack_id"] == "r"
    with pytest.raises(DecodeError) as info:
        decode_subscription(struct.pack(">h", -1) + body)
    assert info.value.reason == "unsupported subscription version -1" and info.value.position == 0
    with pytest.raises(DecodeError) as info:
        decode_assignment(b"\x00")
    assert info.value.context == "assignment"


def test_owned_partitions_pairs_are_grouped_in_first_appearance_order():
    pairs = [("b", 1), ("a", 0), ("b", 0)]
    assert group_partitions_by_topic(pairs) == [{"topic": "b", "partitions": [1, 0]}, {"topic": "a", "partitions": [0]}]
    data = encode_subscription({"topics": ["a", "b"], "owned_partitions": pairs, "generation_id": 2})
    assert decode_subscription(data)["owned_partitions"] == group_partitions_by_topic(pairs)


# -- StickyAssignor user data --------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(TOPIC_PARTITIONS, INT32)
def test_sticky_user_data_v1_matches_kafka_python(previous, generation):
    data = encode_sticky_user_data(previous, generation)
    theirs = KSticky(previous_assignment=[KSticky.TopicPartition(topic=tp["topic"], partitions=tp["partitions"])
                                          for tp in previous], generation=generation)
    assert data == theirs.encode(header=False)
    assert decode_sticky_user_data(data) == {"previous_assignment": previous, "generation": generation, "_version": 1}


def test_sticky_user_data_falls_back_like_kafka():
    v0 = encode_sticky_user_data([{"topic": "t", "partitions": [0, 1]}], None)
    assert decode_sticky_user_data(v0) == {
        "previous_assignment": [{"topic": "t", "partitions": [0, 1]}], "generation": None, "_version": 0}
    # V1 is tried first: V0 bytes followed by 4 more bytes read as V1 (as in Kafka)
    assert decode_sticky_user_data(v0 + struct.pack(">i", 9))["generation"] == 9
    bad = decode_sticky_user_data(b"\x00\x00\x00\x05")
    assert bad["previous_assignment"] == [] and bad["generation"] == -1 and "_error" in bad
    assert decode_sticky_user_data(None) == {"previous_assignment": [], "generation": None, "_version": None}
    assert decode_sticky_user_data(b"") == {"previous_assignment": [], "generation": None, "_version": None}


def test_sticky_user_data_groups_pairs_in_java_hashmap_order():
    # "Aa" and "BB" share String.hashCode 2112: one bucket, insertion order kept
    data = encode_sticky_user_data([("c", 0), ("BB", 1), ("a", 2), ("Aa", 3), ("c", 4)], 1)
    got = decode_sticky_user_data(data)["previous_assignment"]
    assert [tp["topic"] for tp in got] == string_hash_order(["c", "BB", "a", "Aa"])
    assert got[[tp["topic"] for tp in got].index("c")]["partitions"] == [0, 4]


def test_cooperative_sticky_user_data():
    assert encode_cooperative_sticky_user_data(7) == struct.pack(">i", 7)
    assert decode_cooperative_sticky_user_data(struct.pack(">i", 7)) == 7
    assert decode_cooperative_sticky_user_data(None) is None
    assert decode_cooperative_sticky_user_data(b"\x00") == -1
