"""Segment scanning: tails, padding, corruption with resynchronisation, byte accounting, range
splits, and the summary's C and Python paths agreeing."""

from __future__ import annotations

import random
import struct

import pytest

from kgtool.codec import RecordBatch, ScanProblem, encode_batch_v2, encode_end_txn_marker, encode_message_set
from kgtool.codec import scan_file, scan_segment
from kgtool.codec.summary import summarize_segment
from tests.codec.golden import BATCHES
from tests.twins import compiled


def mixed_segment(n: int = 12, seed: int = 1) -> bytes:
    rnd = random.Random(seed)
    out = bytearray()
    off = 0
    for i in range(n):
        codec = ["none", "gzip", "snappy", "lz4", "zstd"][i % 5]
        recs = [(b"k%d" % j, rnd.randbytes(rnd.randint(0, 40)), [("h", b"1")], 1000 + j) for j in range(1 + i % 4)]
        out += encode_batch_v2(recs, base_offset=off, compression=codec, producer_id=i % 3, producer_epoch=0,
                               base_sequence=0)
        off += len(recs)
        if i % 4 == 3:
            out += encode_end_txn_marker(commit=i % 8 == 3, producer_id=1, producer_epoch=0, base_offset=off)
            off += 1
        if i % 6 == 5:
            out += encode_message_set([(b"a", b"b", [], 5), (b"c", b"d", [], 6)], magic=1, base_offset=off,
                                      compression="gzip")
            off += 2
    return bytes(out)


def assert_contiguous(items, start: int, end: int) -> None:
    """Batches and problems cover [start, end) exactly, in order."""
    pos = start
    for it in items:
        assert it.position == pos, (it, pos)
        pos += it.size_in_bytes if isinstance(it, RecordBatch) else it.length
    assert pos == end


def kinds(items):
    return [x.kind if isinstance(x, ScanProblem) else "batch" for x in items]


def test_every_truncation_is_a_tail_problem():
    data = mixed_segment()
    full = list(scan_segment(data))
    ends = {b.end_position for b in full}
    for cut in range(0, len(data) + 1, 7):
        items = list(scan_segment(data[:cut], source="s"))
        assert_contiguous(items, 0, cut)
        if cut in ends or cut == 0:
            assert all(isinstance(x, RecordBatch) for x in items)
        else:
            # (a cut inside the zero high bytes of an offset looks like zero padding)
            assert isinstance(items[-1], ScanProblem) and items[-1].kind in ("truncated", "padding")
            assert all(isinstance(x, RecordBatch) for x in items[:-1])


def test_zero_padding_after_the_last_batch():
    data = mixed_segment(3) + b"\x00" * 5000
    items = list(scan_segment(data))
    assert kinds(items)[-1] == "padding" and items[-1].length == 5000
    assert_contiguous(items, 0, len(data))


def test_corrupt_length_resynchronises_on_the_next_valid_batch():
    a = encode_batch_v2([(b"a", b"1")], base_offset=0)
    b = encode_batch_v2([(b"b", b"2")], base_offset=1)
    garbage = struct.pack(">qi", 0, 3) + b"\x02" * 40
    data = a + garbage + b
    items = list(scan_segment(data, source="s.log"))
    assert kinds(items) == ["batch", "corrupt", "batch"]
    assert (items[1].position, items[1].length) == (len(a), len(garbage))
    assert items[1].reason.startswith("entry length 3 is smaller than the minimum 49 for magic 2")
    assert items[2].base_offset == 1


def test_length_past_the_end_with_a_valid_batch_after_is_corruption_not_a_tail():
    a = bytearray(encode_batch_v2([(b"a", b"1")], base_offset=0))
    b = encode_batch_v2([(b"b", b"2")], base_offset=1)
    struct.pack_into(">i", a, 8, 1 << 30)
    items = list(scan_segment(bytes(a) + b))
    assert kinds(items) == ["corrupt", "batch"]


def test_crc_mismatch_skips_one_batch_and_continues():
    data = bytearray(mixed_segment(5))
    first = next(scan_segment(bytes(data)))
    data[first.end_position - 3] ^= 0x10
    items = list(scan_segment(bytes(data)))
    assert kinds(items)[0] == "crc_mismatch" and items[0].length == first.size_in_bytes
    assert all(k == "batch" for k in kinds(items)[1:])


def test_unknown_magic_is_skipped_by_its_length():
    a = bytearray(encode_batch_v2([(b"a", b"1")]))
    a[16] = 7
    items = list(scan_segment(bytes(a) + encode_batch_v2([(b"b", b"2")], base_offset=1)))
    assert kinds(items) == ["unsupported", "batch"]


@pytest.mark.parametrize("seed", range(5))
def test_splits_yield_each_batch_exactly_once(seed):
    data = mixed_segment(14, seed)
    full = [b.position for b in scan_segment(data)]
    rnd = random.Random(seed)
    cuts = sorted({0, len(data), *(rnd.randrange(len(data)) for _ in range(6))})
    got = []
    for lo, hi in zip(cuts, cuts[1:]):
        got += [b.position for b in scan_segment(data, start=lo, end=hi)]
    assert got == full


def test_base_position_and_slices():
    data = mixed_segment(6)
    full = list(scan_segment(data))
    third = full[2].position
    part = list(scan_segment(memoryview(data)[third:], base_position=third))
    assert [b.position for b in part] == [b.position for b in full[2:]]
    assert [b.records for b in part] == [b.records for b in full[2:]]


def test_scan_file_uses_mmap_and_closes(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(mixed_segment(4))
    assert len(list(scan_file(str(p)))) == len(list(scan_segment(p.read_bytes())))
    (tmp_path / "empty.log").write_bytes(b"")
    assert list(scan_file(str(tmp_path / "empty.log"))) == []


def summaries_agree(data: bytes, **kw):
    from kgtool.coordinator.records import decode_offsets_record

    compiled("kgtool.codec._speedups")

    for payload in (None, decode_offsets_record):
        fast = ("legacy_offset_commit", "offset_commit") if payload else None
        a = summarize_segment(data, payload=payload, fast_offsets=fast, **kw)
        b = summarize_segment(data, payload=payload, fast_offsets=fast, use_speedups=False, **kw)
        ja, jb = a.to_json(), b.to_json()
        assert ja == jb
        assert ja["bytes"]["decoded"] + ja["bytes"]["skipped"] + ja["bytes"]["truncated"] == ja["bytes"]["total"]
    return a


def test_summary_paths_agree_on_golden_files():
    for p in sorted(BATCHES.glob("*.log")):
        summaries_agree(p.read_bytes())
    for p in sorted((BATCHES.parent / "offsets").glob("*/*.log")):
        s = summaries_agree(p.read_bytes())
        assert s.payload_errors == 0 and s.problem_counts == {}


def test_summary_counts_a_damaged_segment():
    data = bytearray(mixed_segment(10))
    items = list(scan_segment(bytes(data)))
    data[items[3].position + 30] ^= 0xFF
    data = bytes(data) + data[:40]
    s = summaries_agree(data)
    assert s.crc_failures == 1 and s.problem_counts == {"crc_mismatch": 1, "truncated": 1}
    assert s.bytes_truncated == 40 and s.bytes_skipped == items[3].size_in_bytes
    assert s.control_markers and s.compression["lz4"] >= 1 and s.magic[1] >= 1


def test_summary_of_a_range():
    data = mixed_segment(10)
    items = list(scan_segment(data))
    s = summaries_agree(data, start=items[2].position + 1, end=items[6].position + 1)
    assert s.start_position == items[3].position and s.end_position == items[6].end_position
    assert s.batches == 4


def test_offset_commit_fast_path_defers_odd_values_to_the_python_decoder():
    """Values the C fast path does not fully recognise (unknown tagged fields, trailing bytes,
    invalid UTF-8, other versions) go to kgtool.coordinator, whose warnings are counted."""
    def s(x):
        return struct.pack(">h", len(x)) + x

    key = struct.pack(">h", 1) + s(b"g") + s(b"t") + struct.pack(">i", 0)
    values = [
        struct.pack(">hqi", 4, 5, -1) + bytes([1]) + struct.pack(">q", 7) + bytes([1, 9, 2]) + b"ab",
        struct.pack(">hq", 1, 5) + s(b"") + struct.pack(">qq", 7, 8) + b"x",
        struct.pack(">hqi", 3, 5, 1) + s(b"\xff") + struct.pack(">q", 7),
        struct.pack(">hqi", 4, 5, -1) + bytes([1]) + struct.pack(">q", 7) + bytes([0]),
        struct.pack(">hq", 0, 5) + s(b"meta") + struct.pack(">q", 7),
        None,
    ]
    from kgtool.coordinator.records import decode_offsets_record
    from kgtool.errors import DecodeError

    warnings = errors = 0
    for v in values:
        try:
            warnings += len(decode_offsets_record(key, v).warnings)
        except DecodeError:
            errors += 1
    assert warnings + errors >= 2  # the first two at least are not clean
    s_ = summaries_agree(encode_batch_v2([(key, v, [], 1) for v in values]))
    assert (s_.payload_warnings, s_.payload_errors) == (warnings, errors)
    assert sum(s_.payload_kinds.values()) == len(values) - errors and s_.payload_tombstones == 1
