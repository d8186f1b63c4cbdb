"""Resynchronisation after an untrustworthy header, and when a partial entry at the end is a
truncated tail (damage is resynchronised over; a tail only when it may be a batch still being
written).

- The C scan (``_speedups.resync_v2``), the pure-Python twin (``segment._resync_py``) and a
  naive reference (every index, ``implausible_header``, a full CRC-32C) find the same index on
  random data, planted batches, re-signed implausible batches and header storms.
- The work is linear: the bytes run through CRC-32C are bounded by a small multiple of the
  data, on inputs where every candidate's span is megabytes long (they used to cost bytes x
  claimed length).
- A partial entry at the end is a tail only when its header is plausible (length within
  ``max_message_size``, magic 0-2, sane fields); random bytes are damage.
"""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.codec import ScanProblem, encode_batch_v2, scan_segment
from kgtool.codec import batch as _batch
from kgtool.codec import segment
from kgtool.codec.primitives import crc32c, crc32c_shift, crc32c_shift_many
from kgtool.codec.segment import DEFAULT_MAX_MESSAGE_SIZE, implausible_header
from kgtool.codec.summary import summarize_segment
from tests.twins import have_compiled

SP = _batch._speedups
#: False only under KGTOOL_PURE_PYTHON; an extension that did not build fails the collection.
HAVE_C = have_compiled("kgtool.codec._speedups")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.data_too_large])


def reference(data: bytes, i: int, limit: int, max_message_size: int) -> int:
    """Every index in (i, limit), the scalar header checks, a full CRC-32C per candidate."""
    n = len(data)
    for q in range(i + 1, min(limit, n - 60)):
        if data[q + 16] != 2:
            continue
        (length,) = struct.unpack_from(">i", data, q + 8)
        if length < 49 or length + 12 > n - q or implausible_header(data, q, 61, max_message_size):
            continue
        if crc32c(data[q + 21:q + length + 12]) == struct.unpack_from(">I", data, q + 17)[0]:
            return q
    return -1


def resyncs(data: bytes, i: int, limit: int, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> list[int]:
    got = [segment._resync_py(data, i, limit, max_message_size)[0]]
    if HAVE_C:
        got.append(SP.resync_v2(data, i, limit, max_message_size)[0])
    return got


def storm_header(length: int, crc: int = 0x01010101, attributes: int = 0, base_offset: int = 7,
                 epoch: int = 0, count: int = 1) -> bytes:
    """61 bytes that pass every cheap check (a v2 header claiming ``length``) with a wrong CRC."""
    h = bytearray(61)
    struct.pack_into(">qiibIh", h, 0, base_offset, length, epoch, 2, crc, attributes)
    struct.pack_into(">i", h, 57, count)
    return bytes(h)


def resign(batch: bytes, **fields) -> bytes:
    """A copy of a v2 batch with header fields patched and its CRC-32C recomputed."""
    b = bytearray(batch)
    offsets = {"base_offset": (0, ">q"), "epoch": (12, ">i"), "attributes": (21, ">h"), "count": (57, ">i")}
    for name, value in fields.items():
        at, fmt = offsets[name]
        struct.pack_into(fmt, b, at, value)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def batch(nrec: int, size: int, base_offset: int = 0) -> bytes:
    return encode_batch_v2([(b"k%d" % j, b"v" * size) for j in range(nrec)], base_offset=base_offset)


# ---------------------------------------------------------------------------------------------
# CRC-32C arithmetic


@given(a=st.binary(max_size=300), b=st.binary(max_size=5000))
@settings(max_examples=200, deadline=None)
def test_crc32c_shift_combines_adjacent_spans(a, b):
    assert crc32c(a + b) == crc32c_shift(crc32c(a), len(b)) ^ crc32c(b)
    if HAVE_C:
        assert SP.crc32c_shift(crc32c(a), len(b)) == crc32c_shift(crc32c(a), len(b))


def test_crc32c_shift_c_python_and_numpy_agree_on_long_lengths():
    import numpy as np

    rnd = random.Random(5)
    crcs = [rnd.getrandbits(32) for _ in range(300)]
    ns = [rnd.choice([0, 1, 65535, 65536, 65537, (1 << 31) - 1, rnd.randrange(1 << 31)]) for _ in crcs]
    py = [crc32c_shift(c, n) for c, n in zip(crcs, ns)]
    assert crc32c_shift_many(np.array(crcs, np.uint64), np.array(ns, np.uint64)).tolist() == py
    if HAVE_C:
        assert [SP.crc32c_shift(c, n) for c, n in zip(crcs, ns)] == py


# ---------------------------------------------------------------------------------------------
# Same index: C, Python, reference


def piece(draw) -> bytes:
    kind = draw(st.sampled_from(["random", "batch", "big", "storm", "implausible", "zeros", "x02"]))
    if kind == "random":
        return draw(st.binary(min_size=1, max_size=300))
    if kind == "batch":
        return batch(draw(st.integers(1, 3)), draw(st.integers(0, 300)), draw(st.integers(0, 1 << 40)))
    if kind == "big":  # a span longer than the direct-CRC thresholds
        return batch(2, draw(st.integers(2500, 6000)))
    if kind == "storm":  # headers whose spans reach far ahead, enough to take the vectorised path
        length = draw(st.integers(49, 9000))
        return storm_header(length, crc=draw(st.integers(0, 2**32 - 1))) * draw(st.integers(1, 150))
    if kind == "implausible":  # valid CRC, but fields Kafka never writes: not a landing place
        field = draw(st.sampled_from([{"attributes": 0x0100}, {"attributes": 0x0007}, {"base_offset": -1},
                                      {"epoch": -2}, {"count": -1}]))
        return resign(batch(1, draw(st.integers(0, 300))), **field)
    if kind == "zeros":
        return bytes(draw(st.integers(1, 200)))
    return b"\x02" * draw(st.integers(1, 200))


@st.composite
def segments(draw) -> bytes:
    return b"".join(piece(draw) for _ in range(draw(st.integers(1, 6))))


@SETTINGS
@given(data=segments(), i=st.integers(0, 100), window=st.one_of(st.integers(0, 400), st.just(1 << 30)),
       max_message_size=st.sampled_from([DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_MAX_MESSAGE_SIZE, 4000, 100]))
def test_c_python_and_reference_find_the_same_batch(data, i, window, max_message_size):
    i = min(i, len(data))
    limit = min(len(data), i + window)
    want = reference(data, i, limit, max_message_size)
    assert resyncs(data, i, limit, max_message_size) == [want] * (2 if HAVE_C else 1)


@pytest.mark.parametrize("seed", range(12))
def test_storms_around_valid_batches(seed):
    """Enough candidates per block for the vectorised check, valid batches among them."""
    rnd = random.Random(seed)
    parts = []
    for k in range(rnd.randint(2, 5)):
        parts.append(storm_header(rnd.choice([60, 3000, 9000, 1 << 20]), crc=rnd.getrandbits(32))
                     * rnd.randint(1, 200))
        parts.append(rnd.choice([batch(1, rnd.randint(0, 9000), k), rnd.randbytes(rnd.randint(1, 99))]))
    data = b"".join(parts)
    for i in (0, rnd.randrange(len(data)), rnd.randrange(len(data))):
        assert resyncs(data, i, len(data)) == [reference(data, i, len(data), DEFAULT_MAX_MESSAGE_SIZE)] * (
            2 if HAVE_C else 1)


@pytest.mark.parametrize("field", [{"attributes": 0x0100}, {"attributes": 0x0006}, {"base_offset": -5},
                                   {"epoch": -3}, {"count": -2}])
def test_a_valid_crc_with_fields_kafka_never_writes_is_not_a_landing_place(field):
    good = batch(2, 50, base_offset=9)
    data = b"\x00" * 30 + resign(batch(1, 40), **field) + b"\x01" * 7 + good
    assert resyncs(data, 0, len(data)) == [len(data) - len(good)] * (2 if HAVE_C else 1)


def test_a_batch_longer_than_the_largest_message_is_not_a_landing_place():
    big = batch(1, 3000)
    data = b"\xff" * 20 + big
    assert resyncs(data, 0, len(data), max_message_size=len(big) - 12) == [20] * (2 if HAVE_C else 1)
    assert resyncs(data, 0, len(data), max_message_size=len(big) - 13) == [-1] * (2 if HAVE_C else 1)


# ---------------------------------------------------------------------------------------------
# Linear work


def _work(data: bytes) -> list[int]:
    got = [segment._resync_py(data, 0, len(data), DEFAULT_MAX_MESSAGE_SIZE)]
    if HAVE_C:
        got.append(SP.resync_v2(data, 0, len(data), DEFAULT_MAX_MESSAGE_SIZE))
    assert {q for q, _ in got} == {-1}
    return [w for _, w in got]


@pytest.mark.parametrize("stride", [16, 61, 200])
def test_crc_work_is_linear_on_a_header_storm(stride):
    """Every ``stride`` bytes a header that passes the cheap checks and claims ~1 MiB: the old
    scan hashed each claimed span (about 1 MiB x 6000 candidates = 6 GiB here); the bytes hashed
    now stay within a small multiple of the data."""
    n = 6 << 20
    unit = bytearray(stride)
    if stride == 16:  # the fields overlap: magic, length and epoch bytes chosen to agree
        unit[:] = bytes([0x02, 1, 1, 1, 1, 0, 0, 1, 0x00, 0x10, 0x00, 0x00, 0x00, 1, 1, 1])
        data = b"\x00" * 16 + bytes(unit) * ((n - 16) // 16)
    else:
        unit[:61] = storm_header(1 << 20)
        data = bytes(unit) * (n // stride)
    candidates = len(segment._v2_candidates(memoryview(data), 1, len(data) - 60, len(data), DEFAULT_MAX_MESSAGE_SIZE))
    assert candidates >= (len(data) - (1 << 20) - 12) // stride - 2  # every unit whose span fits
    for work in _work(data):
        assert work <= 80 * len(data), work


def test_garbage_files_need_no_crc_work_to_speak_of():
    rnd = random.Random(7)
    n = 4 << 20
    for data in (rnd.randbytes(n), b"\x02" * n, bytes(n), b"\x01" * n):
        for work in _work(data):
            assert work <= len(data), work


# ---------------------------------------------------------------------------------------------
# The tail rule


def kinds(items):
    return [x.kind if isinstance(x, ScanProblem) else "batch" for x in items]


def check_both(data: bytes, **kw) -> list:
    """scan_segment on the C and pure-Python resync, and both summary paths, agree."""
    items = list(scan_segment(data, source="s.log", **kw))
    if HAVE_C:
        saved = _batch._speedups
        _batch._speedups = None
        try:
            assert list(scan_segment(data, source="s.log", **kw)) == items
        finally:
            _batch._speedups = saved
        mm = {k: v for k, v in kw.items() if k == "max_message_size"}
        a = summarize_segment(data, **mm).to_json()
        assert a == summarize_segment(data, use_speedups=False, **mm).to_json()
    return items


def test_random_bytes_are_damage_not_a_truncated_tail():
    """/work/shared/fuzz/decode_garbage_5000B_exit0.log: the first 'batch' claims 923 MB."""
    rnd = random.Random(1)
    for seed in range(200):
        data = random.Random(seed).randbytes(rnd.randint(12, 6000))
        items = check_both(data)
        last = items[-1]
        # (a tail that happens to look like one Kafka writes stays one: about 1 in 10^5 files)
        assert last.kind != "truncated" or (
            implausible_header(data, last.position, last.length, DEFAULT_MAX_MESSAGE_SIZE) is None)
    data = struct.pack(">qi", 0x38B4E652E44DA7F2, 923639334) + random.Random(2).randbytes(4988)
    (p,) = check_both(data)
    assert p.kind == "corrupt" and p.length == len(data)
    assert "length 923639334 exceeds the largest message size 5242880" in p.reason


@pytest.mark.parametrize("fill", [b"\x01", b"\x02", b"\x03", b"\xff", b"\x7f"])
def test_a_file_of_one_repeated_byte_is_damage(fill):
    items = check_both(fill * 5000)
    assert {k for k in kinds(items)} <= {"corrupt", "crc_mismatch", "unsupported"}, items


def test_a_cut_batch_is_a_truncated_tail_at_every_length_of_its_header():
    good = batch(1, 10)
    big = batch(3, 4000, base_offset=1 << 56)  # (zero high bytes of an offset look like padding)
    for cut in range(1, len(big)):
        items = check_both(good + big[:cut])
        assert kinds(items) == ["batch", "truncated"] and items[-1].length == cut, (cut, items[-1])


@pytest.mark.parametrize("field,value,why", [
    ("length", 6 << 20, "length 6291456 exceeds the largest message size 5242880"),
    ("magic", 7, "magic 7 is not 0, 1 or 2"),
    ("base_offset", -1, "offset -1 is negative"),
    ("epoch", -9, "partition leader epoch -9 is below -1"),
    ("attributes", 0x0200, "attributes 0x0200 set unused bits (7-15)"),
    ("attributes", 0x0005, "compression codec 5 is unknown"),
    ("count", -4, "record count -4 is negative"),
])
def test_a_partial_entry_kafka_would_not_write_is_corrupt(field, value, why):
    good = batch(1, 10)
    tail = bytearray(batch(3, 300, base_offset=1))
    at, fmt = {"length": (8, ">i"), "magic": (16, ">b"), "base_offset": (0, ">q"), "epoch": (12, ">i"),
               "attributes": (21, ">h"), "count": (57, ">i")}[field]
    struct.pack_into(fmt, tail, at, value)
    items = check_both(good + bytes(tail[:200]))
    assert kinds(items) == ["batch", "corrupt"]
    assert why in items[1].reason and "is not a partial batch" in items[1].reason
    assert items[1].length == 200


def test_the_largest_message_size_is_an_argument():
    good = batch(1, 10)
    tail = bytearray(batch(1, 10, base_offset=1))
    struct.pack_into(">i", tail, 8, 9 << 20)
    data = good + bytes(tail)
    assert kinds(check_both(data)) == ["batch", "corrupt"]
    assert kinds(check_both(data, max_message_size=10 << 20)) == ["batch", "truncated"]


def test_legacy_tails():
    from kgtool.codec import encode_message_set

    good = batch(1, 10)
    v1 = encode_message_set([(b"a", b"b" * 100, [], 5)], magic=1, base_offset=3)
    assert kinds(check_both(good + v1[:60])) == ["batch", "truncated"]
    bad = bytearray(v1)
    bad[17] = 0x14  # attributes: codec 4 (zstd needs magic 2) and bit 4
    assert kinds(check_both(good + bytes(bad[:60]))) == ["batch", "corrupt"]
