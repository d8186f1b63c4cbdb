"""decode-batch's two printers write the same bytes: the C walk (``_speedups.dump_segment``, and
``dump_records`` as the general path's record sink) and the pure-Python writer, for every
format (jsonl, json, text), ``--bytes`` mode and payload decoder, on generated segments full of
odd corners (escapes, non-ASCII, invalid UTF-8, sequences that wrap, LogAppendTime, control
markers, damage, every codec, OffsetCommit values v0-v4, payloads that do not decode)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.codec import encode_batch_v2, encode_end_txn_marker, speedups_enabled
from kgtool.codec import printer
from kgtool.codec.primitives import write_unsigned_varint

pytestmark = pytest.mark.skipif(not speedups_enabled(), reason="the C extension is not built")

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _s(text: str | bytes) -> bytes:
    b = text.encode() if isinstance(text, str) else text
    return struct.pack(">h", len(b)) + b


def commit_key(group, topic, partition: int, record_type: int = 1) -> bytes:
    return struct.pack(">h", record_type) + _s(group) + _s(topic) + struct.pack(">i", partition)


def commit_value(version: int, offset: int, metadata, commit_ts: int, epoch: int = 5, expire: int = 9) -> bytes:
    m = metadata.encode() if isinstance(metadata, str) else metadata
    if version == 4:
        return struct.pack(">hqi", 4, offset, epoch) + write_unsigned_varint(len(m) + 1) + m + struct.pack(">q", commit_ts) + b"\0"
    if version == 3:
        return struct.pack(">hqi", 3, offset, epoch) + _s(m) + struct.pack(">q", commit_ts)
    if version == 1:
        return struct.pack(">hq", 1, offset) + _s(m) + struct.pack(">qq", commit_ts, expire)
    return struct.pack(">hq", version, offset) + _s(m) + struct.pack(">q", commit_ts)


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["", "g", 'quote"back\\slash', "tab\tnl\nctl\x01\x1f", "caf\u00e9 \u2028 \U0001f600", "\x7f"])
BYTES = st.none() | st.binary(max_size=40) | TEXT.map(str.encode) | st.just(b"\xff\xfe invalid \xc3")


@st.composite
def offsets_record(draw):
    """(key, value) of __consumer_offsets: mostly plain OffsetCommits, some not."""
    kind = draw(st.sampled_from(["commit", "commit", "commit", "tombstone", "odd", "garbage"]))
    rt = draw(st.sampled_from([1, 1, 0]))
    key = commit_key(draw(TEXT), draw(TEXT), draw(st.integers(-5, 2**31 - 1)), rt)
    if kind == "tombstone":
        return key, None
    if kind == "garbage":
        return draw(st.binary(max_size=12)), draw(st.none() | st.binary(max_size=12))
    metadata = draw(TEXT | st.text(min_size=130, max_size=140))
    value = commit_value(draw(st.sampled_from([0, 1, 2, 3, 4])), draw(st.integers(-1, 2**63 - 1)), metadata,
                         draw(st.integers(-1, 2**62)), draw(st.integers(-1, 2**31 - 1)))
    if kind == "odd":  # a tagged field, trailing bytes, or a record type of another kind
        value = draw(st.sampled_from([value + b"\0", value[:-1], b"\x00\x04" + value[2:-1] + b"\x01\x00\x00"]))
    return key, value


@st.composite
def segment(draw, offsets: bool):
    out = bytearray()
    offset = draw(st.sampled_from([0, 1000, 2**40, 2**63 - 300]))
    for _ in range(draw(st.integers(1, 6))):
        roll = draw(st.integers(0, 9))
        ts = draw(st.sampled_from([1_717_000_000_000, 0, -1]))
        if roll == 0:
            out += encode_end_txn_marker(commit=draw(st.booleans()), producer_id=7, producer_epoch=1,
                                         coordinator_epoch=draw(st.integers(0, 99)), base_offset=offset,
                                         timestamp=ts)
            offset += 1
            continue
        n = draw(st.integers(0, 5))
        if offsets:
            recs = [(*draw(offsets_record()), [], ts + k) for k in range(n)]
        else:
            recs = [(draw(BYTES), draw(BYTES), draw(st.lists(st.tuples(TEXT, BYTES), max_size=2)), ts + k)
                    for k in range(n)]
        lat = draw(st.booleans())
        seq = draw(st.sampled_from([-1, 0, 2**31 - 3]))
        batch = encode_batch_v2(
            recs, base_offset=offset, compression=draw(st.sampled_from(["none", "none", "gzip", "snappy", "lz4", "zstd"])),
            timestamp_type="LOG_APPEND_TIME" if lat else "CREATE_TIME",
            log_append_time=1_800_000_000_000 if lat else None,
            producer_id=-1 if seq < 0 else 42, producer_epoch=-1 if seq < 0 else 3, base_sequence=seq,
            is_transactional=draw(st.booleans()) and seq >= 0, partition_leader_epoch=draw(st.integers(-1, 9)),
        )
        if draw(st.integers(0, 9)) == 0:  # damage: a flipped byte (CRC) in the records
            b = bytearray(batch)
            b[-1] ^= 0x40
            batch = bytes(b)
        out += batch
        offset += max(n, 1)
    return bytes(out)


def _both(tmp: Path, data: bytes, *args: str, monkeypatch) -> tuple:
    path = tmp / "00000000000000000000.log"
    path.write_bytes(data)
    fast = runner.invoke(app, ["decode-batch", str(path), *args])
    with monkeypatch.context() as m:
        m.setattr(printer._batch, "speedups", lambda: None)  # the Python writer, the same codec
        slow = runner.invoke(app, ["decode-batch", str(path), *args])
    return fast, slow


FORMATS = [("--format", "jsonl"), ("--format", "json"), ("--format", "text")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=segment(offsets=True), fmt=st.sampled_from(FORMATS), crc=st.booleans())
def test_offsets_segments_print_the_same_in_c_and_python(tmp_path_factory, monkeypatch, data, fmt, crc):
    args = [*fmt, "--decode", "offsets"] + ([] if crc else ["--no-verify-crc"])
    fast, slow = _both(tmp_path_factory.mktemp("t"), data, *args, monkeypatch=monkeypatch)
    assert fast.exit_code == slow.exit_code
    assert fast.stdout_bytes == slow.stdout_bytes
    assert fast.stderr == slow.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=segment(offsets=False), fmt=st.sampled_from(FORMATS), by=st.sampled_from(["base64", "hex", "utf8"]))
def test_data_segments_print_the_same_in_c_and_python(tmp_path_factory, monkeypatch, data, fmt, by):
    fast, slow = _both(tmp_path_factory.mktemp("t"), data, *fmt, "--bytes", by, monkeypatch=monkeypatch)
    assert fast.exit_code == slow.exit_code
    assert fast.stdout_bytes == slow.stdout_bytes


def test_a_big_batch_goes_through_the_record_sink_the_same(tmp_path, monkeypatch):
    # More records than the C walk takes in one batch: the general path, its records printed by
    # dump_records chunk by chunk, one GroupMetadata-like odd record in Python in the middle.
    recs = [(commit_key("g", "t", k % 7), commit_value(3, k, "", 5), [], 10) for k in range(70_000)]
    recs[33_333] = (b"\x00\x02\x00\x01g", b"\x00\x09junk", [], 10)
    data = encode_batch_v2(recs, compression="gzip")
    for fmt in ("jsonl", "text"):
        fast, slow = _both(tmp_path, data, "--format", fmt, "--decode", "offsets", monkeypatch=monkeypatch)
        assert fast.stdout_bytes == slow.stdout_bytes
        assert fast.stdout_bytes.count(b"\n") == 70_001 + (fmt == "text") * 2


@pytest.mark.parametrize("rel", ["fixtures/offsets/scenario1_generations/00000000000000000000.log",
                                 "fixtures/offsets/scenario3_transactions_tombstones/00000000000000000000.log"])
def test_the_pure_python_build_prints_the_same(tmp_path, rel):
    """KGTOOL_PURE_PYTHON=1 (no extension at all: codec and printer) against the C build."""
    seg = ROOT / rel
    if not seg.exists():
        pytest.skip(f"{rel} not shipped")
    outs = []
    for pure in ("0", "1"):
        env = dict(os.environ, KGTOOL_PURE_PYTHON=pure, PYTHONPATH=str(ROOT))
        for fmt in ("jsonl", "text"):
            p = subprocess.run([sys.executable, "-m", "kgtool", "decode-batch", str(seg), "--decode", "offsets",
                                "--format", fmt], capture_output=True, env=env)
            outs.append((p.returncode, p.stdout))
    assert outs[:2] == outs[2:]


@pytest.mark.parametrize("magic,ts_type", [(0, "CREATE_TIME"), (1, "CREATE_TIME"), (1, "LOG_APPEND_TIME")])
def test_legacy_message_sets_print_the_same(tmp_path, monkeypatch, magic, ts_type):
    # A compressed wrapper of more inner messages than a chunk (the codec's field tuples, in C),
    # and plain messages (Record objects, in Python), offsets payloads among them.
    from kgtool.codec import encode_message_set

    inner = [(commit_key("g", "t\u00e9", k % 3), commit_value(1, k, "m\n", 7) if k % 5 else None) for k in range(9000)]
    inner[4321] = (b"\x00\x07odd", b"\x00")
    data = encode_message_set(inner, magic=magic, compression="gzip", timestamp_type=ts_type,
                              log_append_time=1_800_000_000_000 if ts_type == "LOG_APPEND_TIME" else None,
                              timestamp=None if magic == 0 else 1_700_000_000_000)
    data += encode_message_set(inner[:3], magic=magic, base_offset=9000,
                               timestamp=None if magic == 0 else 1_700_000_000_000)
    for fmt in ("jsonl", "text", "json"):
        for decode in ("offsets", "none"):
            fast, slow = _both(tmp_path, data, "--format", fmt, "--decode", decode, monkeypatch=monkeypatch)
            assert fast.exit_code == slow.exit_code
            assert fast.stdout_bytes == slow.stdout_bytes, (fmt, decode)


TRICKY_UTF8 = [b"\xc3", b"\xc3(", b"\xe0\x80\x80", b"\xe0\xa0", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xf0\x8f\xbf\xbf",
               b"\xf0\x90\x80", b"\xf4\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf5\x80", b"\xc0\xaf", b"\xff\xfe\xfd",
               b"a\xe2\x82", b"\xe2\x82\xac\xe2\x82", b"\xf0\x9f\x98", b"\x80\x80", b"\xf1\x80\x80\xc3\xa9",
               b"\x00\x1f\"\\ \x7f"]


@pytest.mark.parametrize("fmt", ["jsonl", "text"])
def test_invalid_utf8_is_replaced_as_python_replaces_it(tmp_path, monkeypatch, fmt):
    # bytes.decode("utf-8", "replace"): one U+FFFD per maximal subpart of an ill-formed sequence
    recs = [(v, v + b"|" + v, [("h", v)]) for v in TRICKY_UTF8]
    data = encode_batch_v2(recs)
    fast, slow = _both(tmp_path, data, "--format", fmt, "--bytes", "utf8", monkeypatch=monkeypatch)
    assert fast.stdout_bytes == slow.stdout_bytes
    assert "\ufffd".encode() in fast.stdout_bytes
