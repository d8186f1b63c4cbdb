"""`--summary` payloads: the C walk (OffsetCommit layouts decoded in C, every other record handed
back to the Python decoder) and the pure-Python path give the same counters and the same
messages, word for word, on mutated ``__consumer_offsets`` payloads."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.codec import batch as _batch
from kgtool.codec import encode_batch_v2
from kgtool.codec.summary import summarize_segment
from kgtool.coordinator.records import decode_offsets_record, encode_offsets_record
from tests.twins import compiled



@pytest.fixture(autouse=True)
def _both_implementations_run():
    """Every test here compares the C summary with the pure-Python one."""
    assert _batch._speedups is compiled("kgtool.codec._speedups")

FAST = ("legacy_offset_commit", "offset_commit")
KEY = {"group": "orders-service", "topic": "orders", "partition": 3}


def _values() -> list[tuple[bytes, bytes | None]]:
    out = []
    for version in range(5):
        value = {"offset": 42, "metadata": "gen=3", "commit_timestamp": 1_700_000_000_000}
        if version == 1:
            value["expire_timestamp"] = 1_700_000_100_000
        if version >= 3:
            value["leader_epoch"] = 7
        out.append(encode_offsets_record("offset_commit", KEY, value, value_version=version))
    out.append(encode_offsets_record("offset_commit", KEY, None))
    out.append(encode_offsets_record("legacy_offset_commit", KEY,
                                     {"offset": 1, "metadata": "", "commit_timestamp": 5}, value_version=1))
    out.append(encode_offsets_record("group_metadata", {"group": "orders-service"},
                                     {"protocol_type": "consumer", "generation": 3, "protocol": "range",
                                      "leader": "m-1", "current_state_timestamp": 1, "members": []}))
    return out


BASE = _values()


@st.composite
def mutated(draw, raw: bytes | None) -> bytes | None:
    """raw with a few edits: a byte overwritten or bit flipped, a cut, bytes inserted or added."""
    if raw is None:
        return draw(st.one_of(st.none(), st.binary(max_size=6)))
    b = bytearray(raw)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["set", "flip", "cut", "insert", "append"]))
        if op == "cut":
            del b[draw(st.integers(0, len(b))):]
        elif op == "append":
            b += draw(st.binary(min_size=1, max_size=4))
        elif not b:
            continue
        elif op == "set":
            b[draw(st.integers(0, len(b) - 1))] = draw(st.integers(0, 255))
        elif op == "flip":
            b[draw(st.integers(0, len(b) - 1))] ^= 1 << draw(st.integers(0, 7))
        else:
            b.insert(draw(st.integers(0, len(b))), draw(st.integers(0, 255)))
    return bytes(b)


@st.composite
def records(draw) -> list[tuple[bytes | None, bytes | None]]:
    out = []
    for _ in range(draw(st.integers(1, 5))):
        k, v = draw(st.sampled_from(BASE))
        out.append((draw(mutated(k)), draw(mutated(v))))
    return out


def both(data: bytes):
    out = []
    for use_speedups in (True, False):
        s = summarize_segment(data, source="seg.log", payload=decode_offsets_record, fast_offsets=FAST,
                              use_speedups=use_speedups)
        out.append((s.to_json(), s.payload_messages, [p.message for p in s.problems]))
    return out


def test_a_payload_error_names_its_batch_on_both_paths():
    # /work/shared/fuzz/decode_summary_c_vs_py_msg.log: a 1-byte key in a plain v2 batch
    first = encode_batch_v2([(b"\x01", b"v")], base_offset=0)
    data = first + encode_batch_v2([BASE[0], (BASE[0][0][:3], b"v")], base_offset=1)
    c, py = both(data)
    assert c == py
    assert c[1] == ["batch@0 offset 0: byte 0 (key): expected the 2-byte key version, 1 bytes present",
                    f"batch@{len(first)} offset 2: byte 2 (key.group): expected 2 bytes for the length of "
                    "group, 1 remaining"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(records(), min_size=1, max_size=3), base=st.integers(0, 1 << 40))
def test_c_and_python_agree_on_mutated_payloads(batches, base):
    data = b"".join(encode_batch_v2(recs, base_offset=base + 10 * i) for i, recs in enumerate(batches))
    c, py = both(data)
    assert c == py


FUZZ = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "fuzz").glob("c1_*.bin")) + [
    Path(__file__).resolve().parents[2] / "fixtures" / "fuzz" / "decode_summary_c_vs_py_msg.log"]


@pytest.mark.parametrize("path", FUZZ, ids=lambda p: p.name)
def test_fuzz_reproducers_give_the_same_messages(path):
    c, py = both(path.read_bytes())
    assert c == py and c[1]
