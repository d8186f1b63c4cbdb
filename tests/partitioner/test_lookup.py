"""partition-of's domain: every golden case through the scanner (both twins), moves, comparisons."""

from __future__ import annotations

import base64
from collections import defaultdict

import numpy as np
import pytest

from kgtool.partitioner import keys
from kgtool.partitioner.keys import KeyFormat, KeySource
from kgtool.partitioner.lookup import Column, place, summarize
from kgtool.partitioner.rules import PARTITIONER_NAMES, resolve
from tests.partitioner.golden import EXPECTED, cases
from tests.twins import compiled


@pytest.fixture(params=["c", "pure"])
def twin(request, monkeypatch):
    if request.param == "c":
        assert keys._speedups is compiled("kgtool.partitioner._speedups")
    else:
        monkeypatch.setattr(keys, "_speedups", None)
    return request.param


def test_every_golden_case_for_every_partitioner_from_a_file_of_base64_lines(twin):
    by_n = defaultdict(list)
    for c in cases():
        by_n[c["partitions"]].append(c)
    bad = []
    for n, group in by_n.items():
        # One file per count; the empty key is an empty base64 line.
        data = b"".join(base64.b64encode(c["key"]) + b"\n" for c in group)
        columns = [Column(name, resolve(name).partitioner, n) for name in PARTITIONER_NAMES]
        got = [[] for _ in columns]
        for pl in place([KeySource("golden", data=data)], KeyFormat.base64, columns):
            for i, p in enumerate(pl.partitions):
                got[i] += p.tolist()
        for i, name in enumerate(PARTITIONER_NAMES):
            expected = [EXPECTED[name](c) for c in group]
            actual = [None if p < 0 else p for p in got[i]]
            bad += [(name, n, c["key_b64"]) for c, e, a in zip(group, expected, actual) if e != a]
    assert not bad, bad[:5]


def test_string_golden_keys_read_as_lines(twin):
    group = [c for c in cases() if c["key_string"] and "\n" not in c["key_string"] and "\r" not in c["key_string"]]
    data = "".join(c["key_string"] + "\n" for c in group).encode("utf-8")
    cols = {n: Column("java", resolve("java").partitioner, n) for n in {c["partitions"] for c in group}}
    for n, col in cols.items():
        (pl,) = list(place([KeySource("s", data=data)], KeyFormat.string, [col]))
        for c, p in zip(group, pl.partitions[0].tolist()):
            if c["partitions"] == n:
                assert p == c["java"], c


def test_doubling_moves_keys_only_to_p_plus_n():
    data = b"".join(f"order-{i}\n".encode() for i in range(20000))
    java = resolve("java").partitioner
    cols = [Column("java", java, 12), Column("java", java, 6)]
    for pl in place([KeySource("k", data=data)], KeyFormat.string, cols):
        new, old = pl.partitions
        assert np.all((new == old) | (new == old + 6))
    s = summarize(place([KeySource("k", data=data)], KeyFormat.string, cols), cols)
    assert s.compared == 20000 and 0.45 < s.moved_share < 0.55


def test_share_that_stays_is_min_over_lcm():
    # 6 -> 8 partitions: h % 6 == h % 8 for min(6, 8) / lcm(6, 8) = 1/4 of the keys.
    data = b"".join(f"order-{i}\n".encode() for i in range(20000))
    java = resolve("java").partitioner
    cols = [Column("java", java, 8), Column("java", java, 6)]
    s = summarize(place([KeySource("k", data=data)], KeyFormat.string, cols), cols)
    assert 0.72 < s.moved_share < 0.78


def test_compare_counts_disagreements_but_not_null_keys():
    cols = [Column(c.label, c.partitioner, 12) for c in map(resolve, ["java", "librdkafka", "sarama"])]
    src = keys.literal_keys([(1, "customer-42"), (2, "NULL"), (3, "")])
    s = summarize(place([src], KeyFormat.string, cols, null_marker="NULL"), cols)
    assert s.keys == 3 and s.null_keys == 1 and s.empty_keys == 1
    assert s.disagree == 2  # customer-42 differs; '' is random for librdkafka; the null key is not counted
    assert s.undetermined == [1, 2, 1]


def test_leader_check_keeps_the_smallest_partitions_without_a_leader():
    from kgtool.coordinator.topic_description import TopicDescription
    from kgtool.partitioner.lookup import LeaderCheck

    desc = TopicDescription(topic="t", partition_count=None, leaders={0: 1, 1: None, 2: 3}, source="d")
    check = LeaderCheck(desc)
    check.add(np.array([1, 2, 5, 2**31 - 2, -1]))
    check.add(np.arange(100, 200))
    assert check.no_leader.tolist() == [1]
    assert check.missing.tolist() == [5, *range(100, 110)]  # the 11 smallest, whatever N is
