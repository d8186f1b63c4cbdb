"""Fuzzing the scanner against invariants, not outputs: random bytes, bit flips and truncations
of valid segments give only batches and kgtool problems (never another exception), cover the
input exactly, and re-scanning the valid prefix gives the same batches. Both record paths."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.codec import RecordBatch, ScanProblem, scan_segment
from kgtool.codec.summary import summarize_segment
from tests.codec.test_segment import assert_contiguous, mixed_segment
from tests.twins import compiled, have_compiled

BASE = mixed_segment(10, seed=3)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def check(data: bytes) -> list:
    items = list(scan_segment(data, source="fuzz", max_decompressed_size=1 << 20))
    assert all(isinstance(x, (RecordBatch, ScanProblem)) for x in items)
    if items:
        assert_contiguous(items, items[0].position, len(data))
        assert items[0].position == 0
    # The valid prefix re-scans to the same batches.
    prefix_end = 0
    for it in items:
        if not isinstance(it, RecordBatch):
            break
        prefix_end = it.end_position
    again = list(scan_segment(data[:prefix_end]))
    assert again == [it for it in items if isinstance(it, RecordBatch) and it.end_position <= prefix_end]
    s = summarize_segment(data, max_decompressed_size=1 << 20)
    if have_compiled("kgtool.codec._speedups"):  # else both calls were pure Python
        t = summarize_segment(data, max_decompressed_size=1 << 20, use_speedups=False)
        assert s.to_json() == t.to_json()
    j = s.to_json()["bytes"]
    assert j["decoded"] + j["skipped"] + j["truncated"] == j["total"] == len(data)
    return items


@SETTINGS
@given(data=st.binary(max_size=600))
def test_random_bytes(data, impl):
    check(data)


@SETTINGS
@given(flips=st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 7)), min_size=1, max_size=6))
def test_bit_flips(flips, impl):
    data = bytearray(BASE)
    for pos, bit in flips:
        data[pos] ^= 1 << bit
    check(bytes(data))


@SETTINGS
@given(a=st.integers(0, len(BASE)), b=st.integers(0, len(BASE)))
def test_truncations_and_slices(a, b, impl):
    lo, hi = min(a, b), max(a, b)
    check(BASE[:hi])
    check(BASE[lo:hi])


@SETTINGS
@given(word=st.integers(0, 2**32 - 1), pos=st.integers(0, len(BASE) - 4))
def test_overwritten_words(word, pos, impl):
    data = bytearray(BASE)
    data[pos:pos + 4] = word.to_bytes(4, "big")
    check(bytes(data))


def test_many_random_mutations_quickly(impl):
    rnd = random.Random(11)
    for _ in range(300):
        data = bytearray(BASE)
        for _ in range(rnd.randint(1, 20)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        check(bytes(data[: rnd.randint(0, len(data))]))


@SETTINGS
@given(flips=st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 255)), min_size=1, max_size=6),
       cut=st.integers(0, len(BASE)))
def test_c_and_python_record_loops_agree_on_damaged_records(flips, cut, monkeypatch):
    """Differential test: without CRC checks the damage reaches the record loop; the C and the
    pure-Python loops must give the same records and the same errors (position, field, reason)."""
    from kgtool.codec import batch as B

    assert B._speedups is compiled("kgtool.codec._speedups")
    data = bytearray(BASE)
    for pos, byte in flips:
        data[pos] = byte
    data = bytes(data[:cut])
    fast = list(scan_segment(data, verify_crc=False, max_decompressed_size=1 << 20))
    with monkeypatch.context() as m:
        m.setattr(B, "_speedups", None)
        pure = list(scan_segment(data, verify_crc=False, max_decompressed_size=1 << 20))
    assert fast == pure
