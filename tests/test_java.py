"""kgtool.java: the Java behaviours kgtool reproduces, checked against values printed by Java 17.

The expected values were printed by small Java programs run on OpenJDK 17: the HashMap orders
by ``fixtures/java/HashMapOrder.java`` (``fixtures/java/hashmap_orders.txt``, see
``fixtures/README.md``), the rest by one-off programs (``java.util.HashMap``,
``java.util.UUID.nameUUIDFromBytes``, ``Collections.sort`` of Strings); each test names what it
compares.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgtool.java import (
    MIN_TREEIFY_CAPACITY,
    TREEIFY_THRESHOLD,
    hash_map_capacity,
    hash_map_order,
    hash_set_initial_capacity,
    java_sorted,
    java_string_hashcode,
    name_uuid_bits,
    spread,
    string_hash_order,
    string_order_key,
    table_size_for,
    uuid_hashcode,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "java"

BASE = ["Aa", "BB"]  # "Aa".hashCode() == "BB".hashCode(): 4-part strings all collide


def colliding(n: int) -> list[str]:
    return ["".join(BASE[(i >> j) & 1] for j in range(4)) for i in range(n)]


def _java_cases() -> list[tuple[str, str, list[str], list[str]]]:
    cases = []
    for line in (FIXTURES / "hashmap_cases.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, ctor, keys = line.split("\t")
            cases.append((name, ctor, keys.split(",")))
    orders = dict(
        line.split("\t", 1) for line in (FIXTURES / "hashmap_orders.txt").read_text(encoding="utf-8").splitlines()
    )
    assert len(orders) == len(cases)
    return [(name, ctor, keys, orders[name].split(",")) for name, ctor, keys in cases]


JAVA_CASES = _java_cases()


def _table_length(ctor: str, keys: list[str]) -> int:
    """The table length before the first put for the case's constructor."""
    if ctor == "default":  # new HashMap<>()
        return 16
    if ctor.startswith("cap:"):  # new HashMap<>(n): tableSizeFor(n)
        return table_size_for(int(ctor[4:]))
    assert ctor == "set"  # new HashSet<>(Collection)
    return hash_set_initial_capacity(len(set(keys)))


@pytest.mark.parametrize("name, ctor, keys, expected", JAVA_CASES, ids=[c[0] for c in JAVA_CASES])
def test_hash_order_matches_java_hashmap(name, ctor, keys, expected):
    assert string_hash_order(keys, _table_length(ctor, keys)) == expected


def test_nine_colliding_keys_resize_a_short_table_instead_of_treeifying():
    # The case the copies of this rule disagreed on: nine keys share String.hashCode (one bin of
    # 16), then "x" (bin 8 of 16, bin 24 of 32). Java: the 9th put into one bin calls treeifyBin,
    # which doubles a table shorter than MIN_TREEIFY_CAPACITY, so "x" comes last, not first.
    keys = colliding(9) + ["x"]
    assert len({java_string_hashcode(k) for k in keys[:9]}) == 1
    b = spread(java_string_hashcode("AaAaAaAa"))
    assert (spread(ord("x")) & 15) < (b & 15) and (spread(ord("x")) & 31) > (b & 31)
    assert TREEIFY_THRESHOLD == 8 and MIN_TREEIFY_CAPACITY == 64
    assert hash_map_capacity([java_string_hashcode(k) for k in keys]) == 32
    assert hash_map_capacity([java_string_hashcode(k) for k in keys[:8] + ["x"]]) == 16
    assert string_hash_order(keys) == keys
    assert dict((c[0], c[3]) for c in JAVA_CASES)["nine_colliding_then_x"] == keys
    # Ten colliding keys: a second treeifyBin resize (32 -> 64).
    assert hash_map_capacity([java_string_hashcode(k) for k in colliding(10)]) == 64


def test_hash_map_order_matches_java():
    # Expected values printed by Java 17: `new HashMap<>()`, `put` in this order, `keySet()`
    # (for the 2,000 ids: `String.hashCode()` of the keys joined with "," after each).
    assert string_hash_order(["C0", "C1", "C2", "C10", "C11"]) == ["C11", "C10", "C0", "C1", "C2"]
    assert string_hash_order(["t0", "t1", "t2", "t3", "t4", "t5", "t6"]) == ["t4", "t5", "t6", "t0", "t1", "t2", "t3"]
    # 13 keys: the table doubles to 32 buckets.
    assert string_hash_order([f"k{i}" for i in range(13)]) == [
        "k0", "k1", "k2", "k3", "k4", "k5", "k11", "k6", "k10", "k7", "k8", "k12", "k9"]
    big = string_hash_order([f"consumer-{i}" for i in range(2000)])
    assert java_string_hashcode("".join(k + "," for k in big)) == 127445094
    hashes = [java_string_hashcode(k) for k in ("a", "b")]
    assert hash_map_order(hashes) == [0, 1]


def test_hashmap_order_small_cases():
    assert string_hash_order(["c", "b", "a"]) == ["a", "b", "c"]  # hashes 99, 98, 97: buckets 3, 2, 1
    assert string_hash_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert string_hash_order(["Aa", "BB"]) == ["Aa", "BB"]
    # "q" (113) lands in bucket 1 of 16 with "a" (97): insertion order inside the bucket
    assert string_hash_order(["q", "a", "b"]) == ["q", "a", "b"]
    # 13 keys exceed 0.75 * 16: the table has 32 buckets, "a" (97 -> 1) and "q" (113 -> 17) split
    order = string_hash_order(["q", "a"] + [f"k{i}" for i in range(11)])
    assert order.index("a") < order.index("q")


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
    key = string_order_key(["\uffff", "\U0001f600"])
    # UTF-16: U+1F600 is D83D DE00 < FFFF, the reverse of code point order.
    assert sorted(["\uffff", "\U0001f600"], key=key) == ["\U0001f600", "\uffff"]
