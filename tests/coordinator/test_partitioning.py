"""Coordinator partitioning: Java String.hashCode, Utils.abs, and the golden cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.coordinator.partitioning import (
    hashcodes_for_many,
    java_string_hashcode,
    kafka_abs,
    parse_kafka_uuid,
    partition_for,
    partitions_for_many,
    share_state_key,
)
from kgtool.errors import UsageError

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "coordinator" / "coordinator.json"


def reference_hashcode(s: str) -> int:
    """An independent formulation: the closed form sum(c[i] * 31**(n-1-i)) over UTF-16 units,
    computed with unbounded ints and reduced to a signed int32 only at the end."""
    data = s.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
    n = len(units)
    total = sum(u * pow(31, n - 1 - i, 2**32) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_golden_hashcodes_and_partitions_scalar(golden):
    for case in golden["cases"]:
        gid = case["groupId"]
        assert java_string_hashcode(gid) == case["hashCode"], gid
        for n, p in case["partitions"].items():
            assert partition_for(gid, int(n)) == p, (gid, n)


def test_golden_vectorised(golden):
    ids = [c["groupId"] for c in golden["cases"]]
    hashes = hashcodes_for_many(ids)
    assert hashes.tolist() == [c["hashCode"] for c in golden["cases"]]
    for n in golden["partitionCounts"]:
        got = partitions_for_many(ids, n).tolist()
        assert got == [c["partitions"][str(n)] for c in golden["cases"]], n


def test_golden_covers_the_hard_cases(golden):
    ids = {c["groupId"] for c in golden["cases"]}
    assert "" in ids
    assert any(len(i) >= 5000 for i in ids)
    assert any(any(ord(ch) > 0xFFFF for ch in i) for i in ids)


def test_polygenelubricants_is_integer_min_value_and_partition_zero():
    assert java_string_hashcode("polygenelubricants") == -(2**31)
    assert kafka_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants", 50) == 0
    # The naive abs would give 2147483648 % 50 == 48.
    assert abs(-(2**31)) % 50 == 48


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("😀", 0xD83D * 31 + 0xDE00),  # two UTF-16 units
        ("\x00", 0),
        ("\uffff", 0xFFFF),
    ],
)
def test_known_hashcodes(text, expected):
    assert java_string_hashcode(text) == expected
    assert hashcodes_for_many([text]).tolist() == [expected]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=80), max_size=30))
def test_hash_matches_independent_formulation(texts):
    expected = [reference_hashcode(t) for t in texts]
    assert [java_string_hashcode(t) for t in texts] == expected
    assert hashcodes_for_many(texts).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=50), st.integers(min_value=1, max_value=2**31 - 1))
def test_partition_in_range_and_consistent(text, n):
    p = partition_for(text, n)
    assert 0 <= p < n
    h = reference_hashcode(text)
    assert p == (0 if h == -(2**31) else abs(h)) % n
    assert partitions_for_many([text], n).tolist() == [p]


def test_long_strings_wrap_like_java():
    s = "x" * 100_000
    assert hashcodes_for_many([s, "", s[:7]]).tolist() == [
        reference_hashcode(s),
        0,
        reference_hashcode(s[:7]),
    ]


def test_long_strings_are_hashed_block_by_block(monkeypatch):
    # A 100 MB id needed 31**k weights and a uint32 copy of the whole id (1.1 GB peak): now one
    # block at a time, whatever the length, with the same hash on every block boundary.
    from kgtool.coordinator import partitioning

    block = partitioning._BLOCK
    texts = ["\u00e9x\U0001F600" * (n // 4 + 1) for n in (block - 1, block, block + 1, 3 * block + 7)]
    texts = [t[:n] for t, n in zip(texts, (block - 1, block, block + 1, 3 * block + 7))]
    assert hashcodes_for_many(texts).tolist() == [reference_hashcode(t) for t in texts]
    grown = []
    real = partitioning._pow31
    monkeypatch.setattr(partitioning, "_POW31_CACHE", None)
    monkeypatch.setattr(partitioning, "_pow31", lambda n: grown.append(n) or real(n))
    hashcodes_for_many(["y" * (10 * block)])
    assert grown == [block]


@pytest.mark.parametrize("n", [0, -1, -50])
def test_bad_partition_counts(n):
    with pytest.raises(UsageError, match="positive"):
        partition_for("g", n)


def test_share_state_key_formats_like_share_partition_key():
    # SharePartitionKey.asCoordinatorKey: String.format("%s:%s:%d", groupId, topicId, partition)
    key = share_state_key("grp:with:colons", "AAAAAAAAAAAAAAAAAAAAAQ", 7)
    assert key == "grp:with:colons:AAAAAAAAAAAAAAAAAAAAAQ:7"


@pytest.mark.parametrize("bad", ["short", "AAAAAAAAAAAAAAAAAAAAA!", "A" * 23])
def test_bad_topic_ids(bad):
    with pytest.raises(UsageError):
        parse_kafka_uuid(bad)


def test_empty_batch():
    assert hashcodes_for_many([]).tolist() == []
    assert isinstance(partitions_for_many([], 5), np.ndarray)
