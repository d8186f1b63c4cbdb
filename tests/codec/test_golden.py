"""Golden batches written by Kafka's own MemoryRecordsBuilder decode to exactly Kafka's view.

Compressed batches were written with Debian builds of the codec libraries, so for them the
compressed bytes (crc, sizes, positions) are not compared: header fields and decompressed
records are. Uncompressed ones are byte-exact both ways: encode(decode(bytes)) == bytes.
"""

from __future__ import annotations

import pytest

from kgtool.codec import RecordBatch, scan_file, scan_segment
from tests.codec.golden import BATCHES, expected_view, golden_cases, kafka_view, reencode

CASES = [c for c in golden_cases() if "output" in c]
ERROR_CASES = [c for c in golden_cases() if "error" in c]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_batches_decode_to_kafka_view(case):
    out = case["output"]
    items = list(scan_file(str(BATCHES / out["file"])))
    assert all(isinstance(x, RecordBatch) for x in items), items
    assert len(items) == len(out["batches"])
    compressed_file = any(b["compressionType"] != "none" for b in out["batches"])
    for got, want in zip(items, out["batches"]):
        g = kafka_view(got)
        w = expected_view(want, compressed_file)
        assert {k: g[k] for k in w if k != "records"} == {k: v for k, v in w.items() if k != "records"}
        assert [{k: r[k] for k in wr} for r, wr in zip(g["records"], w["records"])] == w["records"]
        assert len(g["records"]) == len(w["records"])
    assert sum(b.size_in_bytes for b in items) == out["sizeInBytes"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_batches_reencode(case):
    data = (BATCHES / case["output"]["file"]).read_bytes()
    batches = list(scan_segment(data))
    for b in batches:
        raw = data[b.position:b.end_position]
        again = reencode(b)
        # Uncompressed batches are byte-exact; a v2 LOG_APPEND_TIME batch's records carry the
        # append time, not the create-time deltas on disk, so only its fields are compared.
        v2_lat = b.magic == 2 and b.timestamp_type == "LOG_APPEND_TIME"
        if b.compression == "none" and not v2_lat:
            assert again == raw, f"batch@{b.position}"
        # Whatever the codec, the re-encoded batch decodes to the same records and header.
        (b2,) = list(scan_segment(again, base_position=b.position))
        def fields(r):  # the stored size differs when timestamps were re-based (v2 LOG_APPEND_TIME)
            return (r.offset, r.timestamp, r.sequence, r.key, r.value, r.headers, r.attributes, r.control,
                    None if v2_lat else r.size_in_bytes)

        assert [fields(r) for r in b2.records] == [fields(r) for r in b.records]
        assert (b2.base_offset, b2.last_offset, b2.attributes, b2.producer_id, b2.max_timestamp) == (
            b.base_offset, b.last_offset, b.attributes, b.producer_id, b.max_timestamp)


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c["name"] for c in ERROR_CASES])
def test_zstd_below_magic_2_is_refused_like_kafka(case):
    from kgtool.codec import encode_message_set

    magic = int(case["name"][1])
    assert "ZStandard compression is not supported" in case["error"]
    with pytest.raises(ValueError, match="zstd"):
        encode_message_set([(b"k", b"v")], magic=magic, compression="zstd")
