"""The Java behaviours kgtool's assignors reproduce, checked against values printed by Java 17.

The expected values below were printed by small Java programs (``java.util.HashMap``,
``java.util.UUID.nameUUIDFromBytes``, ``Collections.sort`` of Strings) run on this project's
JDK 17; each test names what it compares.
"""

from __future__ import annotations

import pytest

from kgtool.assignors._java import (
    java_sorted,
    name_uuid_bits,
    string_hash_order,
    uuid_hashcode,
)

BASE = ["Aa", "BB"]  # "Aa".hashCode() == "BB".hashCode(): 4-part strings all collide


def colliding(n: int) -> list[str]:
    return ["".join(BASE[(i >> j) & 1] for j in range(4)) for i in range(n)]


# new HashMap<>(); put in this order; String.join(",", keySet())
HASHMAP_ORDERS = {
    8: "zz,q,x,AaAaAaAa,BBAaAaAa,AaBBAaAa,BBBBAaAa,AaAaBBAa,BBAaBBAa,AaBBBBAa,BBBBBBAa,topic-1",
    # the 9th colliding key makes treeifyBin double the 16-bucket table
    9: "zz,AaAaAaAa,BBAaAaAa,AaBBAaAa,BBBBAaAa,AaAaBBAa,BBAaBBAa,AaBBBBAa,BBBBBBAa,AaAaAaBB,topic-1,q,x",
    10: "zz,AaAaAaAa,BBAaAaAa,AaBBAaAa,BBBBAaAa,AaAaBBAa,BBAaBBAa,AaBBBBAa,BBBBBBAa,AaAaAaBB,BBAaAaBB,topic-1,q,x",
}


@pytest.mark.parametrize("n", sorted(HASHMAP_ORDERS))
def test_hashmap_iteration_order_matches_java(n):
    keys = colliding(n) + ["x", "zz", "topic-1", "q"]
    assert ",".join(string_hash_order(keys)) == HASHMAP_ORDERS[n]


def test_hashmap_order_of_golden_topic_names():
    # "t0".hashCode() = 3644 -> bucket 12 of 16: t4..t7 come first.
    assert string_hash_order([f"t{i}" for i in range(8)]) == ["t4", "t5", "t6", "t7", "t0", "t1", "t2", "t3"]


@pytest.mark.parametrize(
    "name, msb, lsb, hashcode",
    [
        ("t0", -9179104046585401002, -7296894806360852416, 1069265987),
        ("orders", 1352488281194379536, -6938803542781673849, 1951395210),
        ("topic-1", -1588350759971637491, -6464978032324726784, -66239280),
        ("\u00e9v\u00e9nements", 7235216439935843724, -7000758270939081569, -477265562),
    ],
)
def test_name_uuid_and_kafka_uuid_hashcode(name, msb, lsb, hashcode):
    assert name_uuid_bits(name) == (msb, lsb)
    assert uuid_hashcode(msb, lsb) == hashcode


def test_string_compare_to_uses_utf16_code_units():
    # Collections.sort: U+1F600 (surrogates D83D DE00) sorts before U+FFFF.
    assert java_sorted(["a\uffff", "a\U0001F600", "b", "a"]) == ["a", "a\U0001F600", "a\uffff", "b"]
