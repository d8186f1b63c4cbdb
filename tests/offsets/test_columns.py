"""kgtool.offsets.columns against the reference (kgtool.offsets.decode.entries_from_bytes).

The contract is equivalence: for any bytes and range, the chunks turned back into entries
(``chunk_entries``) equal ``entries_from_bytes``, on the C path and the pure-Python path, and
the two paths give the same chunks column by column (and the same key tables). The inputs:
Kafka's golden segments, the shipped sample, generated logs (every OffsetCommitValue version,
tombstones, unusual commit encodings, transactions, group metadata, KIP-848 records, legacy
message sets, every codec, LogAppendTime), byte ranges and chunk sizes, and damage (bit flips,
truncation, zero fill, and damage inside records with the CRC re-signed so that it reaches the
record parsers).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.codec.batch import LOG_APPEND_TIME, encode_batch_v2, encode_end_txn_marker
from kgtool.codec.legacy import encode_message_set
from kgtool.codec.primitives import crc32c
from kgtool.codec.segment import align_chain, scan_segment
from kgtool.coordinator.records import encode_offsets_record
from kgtool.offsets import columns
from kgtool.offsets.columns import (
    ROW_COLUMNS,
    KeyTable,
    chunk_entries,
    decode_commit_chunks,
    transaction_markers,
)
from kgtool.offsets.decode import entries_from_bytes
from kgtool.offsets.entries import CONTROL, PROBLEM
from kgtool.offsets.scenario import Script
from kgtool.offsets.writer import encode_event, iter_batches
from tests.offsets.golden import FIXTURES, SCENARIOS
from tests.twins import have_compiled

HAVE_C = have_compiled("kgtool.codec._speedups")  # fails when the extension did not build
PATHS = [True, False] if HAVE_C else [True]  # pure=True, then the C path
SRC = "seg.log"
PART = 5
SAMPLES = sorted((Path(columns.__file__).resolve().parents[1] / "data" / "sample_offsets").glob("*/*.log"))
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.data_too_large])


# ---------------------------------------------------------------------------------------------
# The check


def decode(data, pure: bool, keys: KeyTable | None = None, **kw):
    keys = KeyTable() if keys is None else keys
    chunks = list(decode_commit_chunks(data, source=SRC, log_partition=PART, keys=keys, pure=pure, **kw))
    return chunks, keys


def assert_same_chunks(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.source, x.n, x.batches, x.end) == (y.source, y.n, y.batches, y.end)
        for name, dtype in ROW_COLUMNS:
            u, v = getattr(x, name), getattr(y, name)
            assert u.dtype == v.dtype == np.dtype(dtype), name
            assert len(u) == len(v) == x.n, name
            assert np.array_equal(u, v), name
        assert x.metadata_values == y.metadata_values
        assert x.rare == y.rare


def assert_same_keys(a: KeyTable, b: KeyTable) -> None:
    assert len(a) == len(b)
    assert a.groups == b.groups and a.topics == b.topics
    for f in ("key_group", "key_topic", "key_partition", "key_type"):
        assert np.array_equal(getattr(a, f)(), getattr(b, f)()), f


def check_chunks(chunks, entries, max_rows: int, data, kw) -> None:
    """Chunk invariants: sizes, ends, batch counts, dictionaries."""
    assert chunks, "at least one chunk"
    base = kw.get("base_position", 0)
    items = list(scan_segment(data, source=SRC, **kw))
    ends = {it.end_position for it in items}
    lo = max(kw.get("start", 0) - base, 0)
    start = base + align_chain(data, lo, base, kw.get("chain_from"))
    prev = start
    for k, c in enumerate(chunks):
        last = k == len(chunks) - 1
        assert c.end >= prev
        assert c.end in ends or (c.end == start and not items)
        if not last:
            assert c.n >= max_rows
            assert c.n - int(np.count_nonzero(c.position == c.position[-1])) < max_rows
            assert c.end == max(it.end_position for it in items if it.position <= c.position[-1])
        else:
            assert c.end == (items[-1].end_position if items else start)
        prev = c.end
        assert all(0 <= i <= c.n for i, _ in c.rare)
        assert [i for i, _ in c.rare] == sorted(i for i, _ in c.rare)
        es = chunk_entries(c, KEYS_OF[id(c)], PART)
        # every batch holding an entry, and the empty ones the log cleaner keeps
        assert c.batches == len({e.position for e in es if e.kind != PROBLEM}) + c.signs.empty_batches
        assert len(es) == c.n + len(c.rare)
        m = c.metadata
        assert ((m >= 0) & (m < len(c.metadata_values)) | (m == -1) & (c.version == -1)).all()
        assert (m[c.version >= 0] >= 0).all()
        if c.n:  # every metadata value is used, in order of first use
            used = m[m >= 0]
            assert sorted(set(used.tolist())) == list(range(len(c.metadata_values)))
            firsts = [int(np.argmax(used == v)) for v in range(len(c.metadata_values))]
            assert firsts == sorted(firsts)
    # the cleaner's signs in the batch headers, as the general decoder's batches show them
    want = columns.BatchSigns()
    for it in items:
        if hasattr(it, "records"):
            want.note(it)
    got = columns.BatchSigns()
    for c in chunks:
        got.add(c.signs.empty_batches, c.signs.horizon_batches, c.signs.end)
    assert got == want
    commits = ("offset_commit", "legacy_offset_commit")
    unusual = sum(1 for c in chunks for _, e in c.rare if e.kind in commits)  # not plain: entries
    assert sum(c.n for c in chunks) == sum(1 for e in entries if e.kind in commits) - unusual


KEYS_OF: dict[int, KeyTable] = {}


def check(data, max_rows: int = 1 << 18, **kw) -> list:
    """Both paths against entries_from_bytes (and each other); returns the reference entries."""
    ref = list(entries_from_bytes(data, source=SRC, log_partition=PART, **kw))
    results = []
    for pure in PATHS:
        chunks, keys = decode(data, pure, max_rows=max_rows, **kw)
        for c in chunks:
            KEYS_OF[id(c)] = keys
        got = [e for c in chunks for e in chunk_entries(c, keys, PART)]
        assert got == ref, f"pure={pure}"
        check_chunks(chunks, ref, max_rows, data, kw)
        KEYS_OF.clear()
        results.append((chunks, keys))
        markers = transaction_markers(data, source=SRC, log_partition=PART, pure=pure, **kw)
        assert markers == [e for e in ref if e.kind == CONTROL], f"pure={pure}"
    if len(results) == 2:
        assert_same_chunks(results[0][0], results[1][0])
        assert_same_keys(results[0][1], results[1][1])
    return ref


# ---------------------------------------------------------------------------------------------
# Encoders of plain and not-so-plain OffsetCommit records


def oc_key(rtype: int, group: bytes, topic: bytes, partition: int) -> bytes:
    # OffsetCommitKey: record type int16, group string, topic string, partition int32
    return (struct.pack(">hh", rtype, len(group)) + group + struct.pack(">h", len(topic)) + topic
            + struct.pack(">i", partition))


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def oc_value(version: int, offset: int, epoch: int, md: bytes, commit: int, expire: int, tags: bytes = b"\x00") -> bytes:
    # OffsetCommitValue v0-v4
    if version in (0, 2):
        return struct.pack(">hqh", version, offset, len(md)) + md + struct.pack(">q", commit)
    if version == 1:
        return struct.pack(">hqh", 1, offset, len(md)) + md + struct.pack(">qq", commit, expire)
    if version == 3:
        return struct.pack(">hqih", 3, offset, epoch, len(md)) + md + struct.pack(">q", commit)
    return struct.pack(">hqi", 4, offset, epoch) + uvarint(len(md) + 1) + md + struct.pack(">q", commit) + tags


GROUP_NAMES = [b"g1", b"g2", "gr\u00fcppe".encode(), b"", b"\xff\xfe", b"g\xed\xa0\x80"]  # the last two: bad UTF-8
TOPIC_NAMES = [b"t", "t\u00f3pico".encode(), b"", b"\xc0\x80"]
METADATA = [b"", b"m", "caf\u00e9".encode(), b"x" * 126, b"y" * 127, b"\xe0\x80\x80", b"gen=1 member=a"]

i64 = st.integers(-(1 << 63), (1 << 63) - 1)
i32 = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def commit_records(draw):
    """(key, value) of an OffsetCommit record, usually plain, sometimes slightly off."""
    group = draw(st.sampled_from(GROUP_NAMES[:4]) if draw(st.integers(0, 9)) else st.sampled_from(GROUP_NAMES))
    topic = draw(st.sampled_from(TOPIC_NAMES[:3]) if draw(st.integers(0, 9)) else st.sampled_from(TOPIC_NAMES))
    key = oc_key(draw(st.sampled_from([1, 1, 1, 0])), group, topic, draw(st.sampled_from([0, 1, 2, -1, 1 << 30])))
    if draw(st.integers(0, 6)) == 0:
        return key, None  # tombstone
    version = draw(st.integers(0, 4))
    md = draw(st.sampled_from(METADATA[:4]) if draw(st.integers(0, 4)) else st.sampled_from(METADATA))
    value = oc_value(version, draw(i64), draw(i32), md, draw(i64), draw(i64),
                     tags=draw(st.sampled_from([b"\x00", b"\x00", b"\x01\x00\x01z"])))
    twist = draw(st.integers(0, 14))
    if twist == 1:
        value += b"\x00" * draw(st.integers(1, 7))  # trailing bytes (6 after an empty v3: 30 bytes, not a plain value)
    elif twist == 2:
        value = value[: draw(st.integers(0, len(value)))]
    elif twist == 3:
        key += b"\x00"
    elif twist == 4:
        key = key[: draw(st.integers(0, len(key)))]
    elif twist == 5:
        value = struct.pack(">h", draw(st.sampled_from([5, -1, 0x0103, 2]))) + value[2:]
    elif twist == 6:
        key = struct.pack(">h", draw(st.sampled_from([2, 3, -1, 0x0101]))) + key[2:]
    elif twist == 7:  # a negative string length
        value = value[:10] + b"\xff\xff" + value[12:] if version in (0, 1, 2) else value[:14] + b"\xff\xff" + value[16:]
    return key, value


def empty_v3_with_trailing(offset: int = 7) -> bytes:
    # an empty-metadata v3 value (24 bytes) and six more: a whole value for no shortcut (trailing bytes)
    return oc_value(3, offset, 2, b"", 99, -1) + b"\x01\x02\x03\x04\x05\x06"


@st.composite
def segments(draw, max_batches: int = 8):
    """A log: commit batches (v2 or legacy, any codec, transactional or not, LogAppendTime),
    markers, group metadata, KIP-848 records, raw oddities."""
    out = bytearray()
    offset = draw(st.sampled_from([0, 0, 1000, (1 << 62)]))
    ts = 1_700_000_000_000
    for _ in range(draw(st.integers(0, max_batches))):
        kind = draw(st.sampled_from(["v2", "v2", "v2", "txn", "marker", "legacy", "generation", "kip848", "odd"]))
        ts += draw(st.integers(0, 5000))
        if kind in ("v2", "txn"):
            recs = draw(st.lists(commit_records(), min_size=0, max_size=6))
            if kind == "txn" or draw(st.integers(0, 5)) == 0:
                pid, pe = draw(st.sampled_from([(7, 0), (8, 3)]))
            else:
                pid, pe = -1, -1
            lat = draw(st.integers(0, 4)) == 0
            b = encode_batch_v2(
                [(k, v, [], ts + j) for j, (k, v) in enumerate(recs)], base_offset=offset,
                compression=draw(st.sampled_from(["none", "none", "gzip", "snappy", "lz4", "zstd"])),
                producer_id=pid, producer_epoch=pe, base_sequence=0 if pid >= 0 else -1,
                is_transactional=kind == "txn",
                timestamp_type=LOG_APPEND_TIME if lat else "CREATE_TIME",
                log_append_time=ts + 77 if lat else None,
            )
            out += b
            offset += len(recs)
        elif kind == "marker":
            pid = draw(st.sampled_from([7, 8]))
            out += encode_end_txn_marker(commit=draw(st.booleans()), producer_id=pid, producer_epoch=0,
                                         coordinator_epoch=draw(st.integers(0, 5)), base_offset=offset, timestamp=ts)
            offset += 1
        elif kind == "legacy":
            recs = draw(st.lists(commit_records(), min_size=1, max_size=4))
            magic = draw(st.sampled_from([0, 1]))
            out += encode_message_set([(k, v, [], ts) for k, v in recs], magic=magic, base_offset=offset,
                                      compression=draw(st.sampled_from(["none", "gzip", "snappy", "lz4"])))
            offset += len(recs)
        elif kind == "generation":
            s = Script(log_partition=PART)
            members = draw(st.integers(0, 2))
            s.generation("g1", draw(st.integers(1, 9)),
                         {f"m{i}-x": [("t", i)] for i in range(members)}, at=0,
                         compression=draw(st.sampled_from(["none", "gzip"])))
            out += encode_event(s.events[0], offset)
            offset += 1
        elif kind == "kip848":
            k, v = encode_offsets_record("consumer_group_metadata", {"group_id": "g9"}, {"epoch": 3})
            out += encode_batch_v2([(k, v, [], ts)], base_offset=offset)
            offset += 1
        else:
            recs = [draw(st.sampled_from([
                (None, b"v"),  # a null key
                (b"", b""),
                (oc_key(1, b"g1", b"t", 0), empty_v3_with_trailing()),
                (struct.pack(">h", 99) + b"whatever", b"\x00\x00abc"),  # an unknown record type
                (oc_key(1, b"g1", b"t", 0), b""),
                (oc_key(1, b"g1", b"t", 0), oc_value(4, 1, 1, b"z" * 200, 5, -1)),  # a two-byte compact length
            ])) for _ in range(draw(st.integers(1, 3)))]
            out += encode_batch_v2([(k, v, [], ts) for k, v in recs], base_offset=offset)
            offset += len(recs)
    return bytes(out)


def resign(data: bytes) -> bytes:
    """Recompute the CRC-32C of every v2 batch along the chain (damage then reaches records)."""
    b = bytearray(data)
    i = 0
    while i + 61 <= len(b):
        (length,) = struct.unpack_from(">i", b, i + 8)
        size = length + 12
        if size < 26 or size > len(b) - i:
            break
        if b[i + 16] == 2 and size >= 61:
            struct.pack_into(">I", b, i + 17, crc32c(bytes(b[i + 21:i + size])))
        i += size
    return bytes(b)


def boundaries(data: bytes) -> list[int]:
    return [it.position for it in scan_segment(data)] + [len(data)]


# ---------------------------------------------------------------------------------------------
# Fixed inputs


def _files() -> list[Path]:
    return [FIXTURES / s / "00000000000000000000.log" for s in SCENARIOS] + SAMPLES


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}")
@pytest.mark.parametrize("max_rows", [1, 3, 1 << 18])
def test_golden_and_sample_segments(path, max_rows):
    data = path.read_bytes()
    ref = check(data, max_rows=max_rows)
    assert any(e.kind in ("offset_commit", "legacy_offset_commit") for e in ref)


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}")
def test_golden_and_sample_byte_ranges(path):
    data = path.read_bytes()
    rnd = random.Random(path.name)
    bounds = boundaries(data)
    for _ in range(12):
        a, b = sorted(rnd.randrange(len(data) + 1) for _ in range(2))
        check(data, start=a, end=b, max_rows=rnd.choice([1, 2, 5, 1000]))
        k = rnd.choice(bounds)
        check(data, start=k, end=b if b > k else None, chain_from=k, max_rows=2)
        # data that is a slice of the file beginning at a batch boundary
        check(data[k:], base_position=k, start=max(a, k), max_rows=3)
        check(data[k:], base_position=k, start=max(a, k), chain_from=k + 0, max_rows=3)
        # an arbitrary slice: the chain is taken to start where the data does
        check(data[a:], base_position=a, start=b, max_rows=4)
    for k in bounds:
        check(data, start=k, end=k + 1, chain_from=k)


def test_sample_with_markers_and_the_quirks():
    data = SAMPLES[0].read_bytes()
    ref = check(data, max_rows=2)
    assert any(e.kind == CONTROL for e in ref)


def test_empty_and_out_of_range():
    data = SAMPLES[0].read_bytes()
    for kw in (dict(), dict(start=len(data)), dict(start=len(data) + 50), dict(end=0), dict(start=10, end=10)):
        for pure in PATHS:
            chunks, _ = decode(data[: 0 if not kw else len(data)], pure, **kw)
            assert len(chunks) == 1 and chunks[0].n == 0 and not chunks[0].rare and chunks[0].batches == 0
    check(b"")
    check(b"\x00" * 100)
    check(data + b"\x00" * 300, max_rows=4)
    with pytest.raises(ValueError):
        list(decode_commit_chunks(data, source=SRC, log_partition=PART, keys=KeyTable(), max_rows=0))


def test_every_value_version_tombstones_and_legacy_types():
    recs = []
    for rtype in (0, 1):
        for version in range(5):
            for md in (b"", b"meta", "\u00e9t\u00e9".encode()):
                recs.append((oc_key(rtype, b"g", b"t", version), oc_value(version, 10 + version, 4, md, 123, 456)))
        recs.append((oc_key(rtype, b"g", b"t", 9), None))
    data = encode_batch_v2([(k, v, [], 1000) for k, v in recs], base_offset=0)
    data += encode_message_set([(k, v, [], 2000) for k, v in recs], magic=1, base_offset=len(recs))
    data += encode_message_set([(k, v, [], -1) for k, v in recs[:5]], magic=0, base_offset=2 * len(recs),
                               compression="gzip")
    ref = check(data)
    assert all(e.kind in ("offset_commit", "legacy_offset_commit") for e in ref)
    for pure in PATHS:
        chunks, keys = decode(data, pure)
        (c,) = chunks
        assert c.n == len(ref) and not c.rare
        assert sorted(set(c.version.tolist())) == [-1, 0, 1, 2, 3, 4]
        assert set(keys.key_type().tolist()) == {0, 1}
        assert keys.groups == ["g"] and keys.topics == ["t"]
        assert c.metadata_values == ["", "meta", "\u00e9t\u00e9"]
        tomb = c.version == -1
        assert (c.offset[tomb] == 0).all() and (c.leader_epoch[tomb] == -1).all() and (c.metadata[tomb] == -1).all()
        assert (c.leader_epoch[(c.version >= 0) & (c.version < 3)] == -1).all()
        assert (c.expire_timestamp[c.version == 1] == 456).all()
        assert (c.expire_timestamp[c.version != 1] == -1).all()
        assert c.producer_id.tolist() == [-1] * c.n and not c.transactional.any()


def test_unusual_commits_stay_entries():
    odd = [
        (oc_key(1, b"g", b"t", 0), oc_value(4, 1, 1, b"", 5, -1, tags=b"\x01\x01\x01z")),  # a tagged field (tag 1: none Kafka defines)
        (oc_key(1, b"g", b"t", 0), oc_value(3, 1, 1, b"ab", 5, -1) + b"\x00"),  # a trailing byte
        (oc_key(1, b"g", b"t", 0), empty_v3_with_trailing()),  # six trailing bytes after an empty-metadata v3
        (oc_key(1, b"g", b"t", 0), oc_value(4, 1, 1, b"q" * 127, 5, -1)),  # two-byte compact length
        # a one-byte "length" 0x80 (a continuation byte) with 127 bytes after it: not plain
        (oc_key(1, b"g", b"t", 0), struct.pack(">hqi", 4, 1, 1) + b"\x80" + b"q" * 127 + struct.pack(">q", 5) + b"\x00"),
        (oc_key(1, b"g\xff", b"t", 0), oc_value(3, 1, 1, b"", 5, -1)),  # bad UTF-8: a problem entry
        (oc_key(1, b"g", b"t", 0), oc_value(3, 1, 1, b"\xff", 5, -1)),
        (oc_key(1, b"g", b"t", 0) + b"\x00", None),
        (oc_key(1, b"g", b"t", 0), b""),
        (None, None),
    ]
    plain = [(oc_key(1, b"g", b"t", 0), oc_value(3, 1, 1, b"", 5, -1)),  # the 24-byte shortcut
             (oc_key(1, b"g", b"t", 0), oc_value(4, 1, 1, b"q" * 126, 5, -1))]
    data = encode_batch_v2([(k, v, [], 1) for k, v in odd + plain])
    ref = check(data)
    for pure in PATHS:
        (c,), _ = decode(data, pure)
        assert c.n == len(plain) and len(c.rare) == len(odd)
        assert [i for i, _ in c.rare] == [0] * len(odd)
    assert [e.kind for e in ref].count(PROBLEM) == 3  # 0x80 length, an empty value, a null key (the rest decode)


def test_log_append_time_and_producer_fields():
    k, v = oc_key(1, b"g", b"t", 0), oc_value(3, 5, 1, b"", 9, -1)
    data = encode_batch_v2([(k, v, [], 10), (k, None, [], 11)], timestamp_type=LOG_APPEND_TIME,
                           log_append_time=4242, producer_id=77, producer_epoch=-3, base_sequence=5,
                           is_transactional=True, compression="zstd")
    check(data)
    for pure in PATHS:
        (c,), _ = decode(data, pure)
        assert c.timestamp.tolist() == [4242, 4242]
        assert c.producer_id.tolist() == [77, 77] and c.producer_epoch.tolist() == [-3, -3]
        assert c.transactional.tolist() == [True, True]


# ---------------------------------------------------------------------------------------------
# Generated logs


def _script_log(ops, compressions) -> bytes:
    from tests.offsets.test_properties import build

    s = build(ops)
    for ev, comp in zip(s.events, compressions):
        if ev.control is None:
            ev.compression = comp
    return b"".join(iter_batches(s))


from tests.offsets.test_properties import op as script_op  # noqa: E402


@SETTINGS
@given(ops=st.lists(script_op, max_size=25),
       compressions=st.lists(st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]), max_size=25),
       max_rows=st.sampled_from([1, 2, 3, 8, 1 << 18]))
def test_scenario_logs(ops, compressions, max_rows):
    data = _script_log(ops, compressions)
    check(data, max_rows=max_rows)


@SETTINGS
@given(data=segments(), max_rows=st.sampled_from([1, 2, 5, 1 << 18]))
def test_generated_segments(data, max_rows):
    check(data, max_rows=max_rows)


@SETTINGS
@given(data=segments(), cut=st.data(), max_rows=st.sampled_from([1, 3, 1 << 18]))
def test_generated_byte_ranges(data, cut, max_rows):
    n = len(data)
    a = cut.draw(st.integers(0, n))
    b = cut.draw(st.integers(0, n))
    start, end = min(a, b), max(a, b)
    bounds = boundaries(data)
    k = cut.draw(st.sampled_from(bounds))
    check(data, start=start, end=end, max_rows=max_rows)
    check(data, start=k, end=end if end > k else None, chain_from=k, max_rows=max_rows)
    check(data[k:], base_position=k + 1000, start=start + 1000, chain_from=k + 1000, max_rows=max_rows)
    check(data[a:], base_position=a, start=b, end=None, max_rows=max_rows)


# ---------------------------------------------------------------------------------------------
# Damage


@SETTINGS
@given(data=segments(max_batches=6), muts=st.lists(
    st.tuples(st.sampled_from(["flip", "byte", "zero", "word", "cut"]), st.integers(0, 1 << 16),
              st.integers(0, 255)), min_size=1, max_size=5),
       resigned=st.booleans(), max_rows=st.sampled_from([1, 4, 1 << 18]))
def test_damaged_segments(data, muts, resigned, max_rows):
    if not data:
        return
    b = bytearray(data)
    for kind, pos, x in muts:
        if not b:
            break
        pos %= len(b)
        if kind == "flip":
            b[pos] ^= 1 << (x % 8)
        elif kind == "byte":
            b[pos] = x
        elif kind == "zero":
            b[pos:pos + x] = bytes(len(b[pos:pos + x]))
        elif kind == "word":
            b[pos:pos + 4] = struct.pack(">I", (x * 0x01010101) & 0xFFFFFFFF)[: len(b) - pos]
        else:
            del b[pos:]
    damaged = resign(bytes(b)) if resigned else bytes(b)
    check(damaged, max_rows=max_rows)


def test_many_resigned_mutations_quickly():
    rnd = random.Random(5)
    base = b"".join(bytes(x) for x in [
        encode_batch_v2([(oc_key(1, b"g%d" % j, b"t", p), oc_value(j % 5, p, 1, b"m" * (p % 3), 5, 6), [], 1)
                         for p in range(4)], base_offset=4 * j,
                        compression=["none", "gzip", "lz4"][j % 3]) for j in range(6)
    ]) + encode_end_txn_marker(producer_id=3, producer_epoch=0, base_offset=24)
    for _ in range(150):
        b = bytearray(base)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        check(resign(bytes(b[: rnd.choice([len(b), rnd.randrange(len(b) + 1)])])), max_rows=rnd.choice([1, 3, 100]))


def test_declined_batch_rolls_back_interned_keys_and_metadata():
    """A batch whose plain commits come before a malformed record (CRC valid) is declined by
    the C scan after it interned their keys: the codes must be as if it never had."""
    k1, k2, k3 = (oc_key(1, b"ga", b"t", p) for p in (1, 2, 3))
    good = encode_batch_v2([(k1, oc_value(3, 1, 1, b"meta-1", 5, -1), [], 1),
                            (k2, oc_value(3, 1, 1, b"meta-2", 5, -1), [], 1),
                            (k3, oc_value(3, 1, 1, b"meta-3", 5, -1), [], 1)])
    bad = bytearray(good)
    bad[-1] = 0x7E  # the last record's header count (63): cannot fit
    bad = resign(bytes(bad))
    later = encode_batch_v2([(k3, oc_value(3, 1, 1, b"meta-3", 5, -1), [], 1),
                             (k1, oc_value(3, 1, 1, b"meta-1", 5, -1), [], 1)], base_offset=3)
    data = bad + later
    ref = check(data)
    assert ref[0].kind == PROBLEM
    for pure in PATHS:
        (c,), keys = decode(data, pure)
        assert [keys.key(k)[3] for k in c.key.tolist()] == [3, 1]
        assert c.key.tolist() == [0, 1] and c.metadata_values == ["meta-3", "meta-1"]
    # a control batch that does not decode (a key parse_control_record rejects), CRC valid
    marker = bytearray(encode_end_txn_marker(producer_id=3, producer_epoch=0, base_offset=5))
    marker[-12] = 0xFF  # the key version (int16 < 0); the record ends key, value length, value, headers
    check(resign(bytes(marker)) + later)


# ---------------------------------------------------------------------------------------------
# Key tables, paths, markers


def test_key_table_persists_across_calls_and_paths():
    files = [p.read_bytes() for p in _files()]
    ref_keys = KeyTable()
    ref_chunks = [decode(d, True, keys=ref_keys, max_rows=3)[0] for d in files]
    for order in ([True, False, True, False], [False, False, True, True], [False, True, False, True]):
        order = [p if HAVE_C else True for p in order]
        keys = KeyTable()
        for d, pure, want in zip(files, order, ref_chunks):
            got, _ = decode(d, pure, keys=keys, max_rows=3)
            assert_same_chunks(got, want)
        assert_same_keys(keys, ref_keys)
    assert len(ref_keys) == len(set(zip(ref_keys.key_group().tolist(), ref_keys.key_topic().tolist(),
                                        ref_keys.key_partition().tolist(), ref_keys.key_type().tolist())))
    assert ref_keys.key_group().dtype == np.int32 and ref_keys.key_type().dtype == np.int8


@pytest.mark.skipif(not HAVE_C, reason="the C extension is not built")
def test_interleaved_generators_share_one_key_table():
    files = [p.read_bytes() for p in _files()]
    ref_keys = KeyTable()
    want = [decode(d, True, keys=ref_keys, max_rows=2)[0] for d in files[:2]]
    keys = KeyTable()
    gens = [decode_commit_chunks(d, source=SRC, log_partition=PART, keys=keys, pure=pure, max_rows=2)
            for d, pure in zip(files[:2], (False, True))]
    got: list[list] = [[], []]
    live = [0, 1]
    while live:  # alternate: one chunk of the C generator, one of the pure one
        for k in list(live):
            try:
                got[k].append(next(gens[k]))
            except StopIteration:
                live.remove(k)
    for g in got:
        for c in g:
            KEYS_OF[id(c)] = keys
    ents = [[e for c in g for e in chunk_entries(c, keys, PART)] for g in got]
    KEYS_OF.clear()
    assert ents == [[e for c in w for e in chunk_entries(c, ref_keys, PART)] for w in want]
    assert len(keys) == len(ref_keys) and set(keys.groups) == set(ref_keys.groups)


def test_pure_is_chosen_like_the_codec(monkeypatch):
    from kgtool.codec import batch as B

    data = SAMPLES[0].read_bytes()
    monkeypatch.setattr(B, "_speedups", None)
    assert columns._pick(None) is None
    with pytest.raises(RuntimeError):
        list(decode_commit_chunks(data, source=SRC, log_partition=PART, keys=KeyTable(), pure=False))
    chunks = list(decode_commit_chunks(data, source=SRC, log_partition=PART, keys=KeyTable()))
    assert sum(c.n for c in chunks) > 0


@pytest.mark.skipif(not HAVE_C, reason="the C extension is not built")
def test_columns_are_writable_and_outlive_the_decoder():
    data = SAMPLES[1].read_bytes()
    keys = KeyTable()
    chunks = list(decode_commit_chunks(data, source=SRC, log_partition=PART, keys=keys, max_rows=2))
    want = [e for c in chunks for e in chunk_entries(c, keys, PART)]
    more = list(decode_commit_chunks(data, source=SRC, log_partition=PART, keys=KeyTable(), max_rows=2))
    del more  # its buffers go back to the pool; the first chunks keep theirs
    assert [e for c in chunks for e in chunk_entries(c, keys, PART)] == want
    c = chunks[0]
    c.offset[0] += 1
    assert c.offset.flags.writeable


def test_transaction_markers_large_and_mixed():
    s = Script(log_partition=PART)
    for i in range(40):
        s.commit("g", {("t", i % 3): i}, producer=(100 + i % 4, 0), compression=["none", "gzip"][i % 2])
        if i % 3 == 0:
            s.marker((100 + i % 4, 0), "COMMIT" if i % 2 else "ABORT")
        s.generation("g", i + 1, {"m-1": [("t", 0)]})
    data = b"".join(iter_batches(s))
    legacy = encode_message_set([(oc_key(1, b"g", b"t", 0), oc_value(1, 1, 1, b"", 2, 3), [], 1)], magic=1,
                                base_offset=10_000)
    data = data + legacy + encode_end_txn_marker(producer_id=5, producer_epoch=1, base_offset=10_001,
                                                 coordinator_epoch=9)
    ref = check(data, max_rows=7)
    assert sum(e.kind == CONTROL for e in ref) == 15


def test_the_collector_setting_is_the_callers_between_chunks():
    import gc

    data = SAMPLES[0].read_bytes()
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            it = decode_commit_chunks(data, source=SRC, log_partition=PART, keys=KeyTable(), max_rows=1)
            next(it)
            assert gc.isenabled() is enabled
            next(it)
            assert gc.isenabled() is enabled
            it.close()
            assert gc.isenabled() is enabled
            assert sum(c.n for c in decode_commit_chunks(data, source=SRC, log_partition=PART, keys=KeyTable())) > 0
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


def test_buffer_kinds(tmp_path):
    from kgtool.codec.segment import open_segment

    data = SAMPLES[0].read_bytes() + encode_batch_v2(
        [(oc_key(1, b"g", b"t", 0), oc_value(3, 1, 1, b"", 5, -1), [], 1)], base_offset=500, compression="gzip")
    check(bytearray(data), max_rows=2)
    check(memoryview(data), max_rows=2, start=100)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    m, _ = open_segment(str(path))
    try:
        check(m, max_rows=3)
    finally:
        m.close()
