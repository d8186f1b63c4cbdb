"""Each client's partitioner against the golden cases, and the Java semantics in kgtool.java."""

from __future__ import annotations

import pytest

from kgtool.errors import UsageError
from kgtool.java import murmur2, to_positive
from kgtool.partitioner import rules
from kgtool.partitioner.rules import PARTITIONER_NAMES, partition_for_key, placement_note, resolve
from tests.partitioner.golden import EXPECTED, cases


def test_every_name_has_an_expectation():
    assert set(PARTITIONER_NAMES) == set(EXPECTED)


def test_murmur2_matches_kafka_on_every_case():
    for c in cases():
        assert murmur2(c["key"]) == c["murmur2"], c


@pytest.mark.parametrize("name", PARTITIONER_NAMES)
def test_every_case_for_every_partitioner(name):
    choice = resolve(name)
    bad = [
        (c["category"], c["key_b64"], c["partitions"])
        for c in cases()
        if partition_for_key(choice.partitioner, c["key"], c["partitions"]) != EXPECTED[name](c)
    ]
    assert not bad, bad[:5]


def test_to_positive_is_a_mask_not_abs():
    # Utils.toPositive: Integer.MIN_VALUE -> 0, -1 -> Integer.MAX_VALUE (Math.abs would give 1).
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1
    # Keys whose murmur2 is Integer.MIN_VALUE land on partition 0 with Java.
    mins = [c for c in cases() if c["murmur2"] == -(2**31)]
    assert mins and all(c["java"] == 0 for c in mins)


def test_kafka_utils_test_vectors():
    # UtilsTest.testMurmur2 (Kafka): the hash of these strings' UTF-8 bytes.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(bytes([ord("a"), ord("b"), ord("c")])) == 479470107


def test_sarama_negates_a_negative_remainder():
    # fnv1a32("") = 0x811c9dc5, int32 -2128831035: Sarama |-2128831035 % 6| = 3;
    # the reference partitioner (& 0x7fffffff) gives 18652613 % 6 = 5.
    assert partition_for_key(resolve("sarama").partitioner, b"", 6) == 3
    assert partition_for_key(resolve("sarama-reference").partitioner, b"", 6) == 5


def test_fnv1a_int_min_is_two_to_the_31():
    # librdkafka rd_fnv1a: -INT32_MIN stays 0x80000000, returned as uint32 2**31.
    assert rules.reduce_hash(rules.Reduction.ABS, 0x80000000) == 2**31
    assert rules.reduce_hash(rules.Reduction.MASK, 0x80000000) == 0


def test_nondeterministic_keys():
    rdk = resolve("librdkafka").partitioner
    assert partition_for_key(rdk, b"", 6) is None
    assert "empty key" in placement_note(rdk, b"")
    assert partition_for_key(resolve("consistent").partitioner, b"", 6) == 0
    for name in PARTITIONER_NAMES:
        p = resolve(name).partitioner
        assert partition_for_key(p, None, 6) is None
        assert placement_note(p, None).startswith("null key")
        assert partition_for_key(p, b"x", 6) is not None


def test_unknown_partitioner():
    with pytest.raises(UsageError, match="unknown partitioner 'round_robin'"):
        resolve("round_robin")


def test_librdkafka_alias_keeps_its_label():
    c = resolve("librdkafka")
    assert c.label == "librdkafka" and c.partitioner.name == "consistent_random"
