"""Shared helpers for the codec tests: golden cases and Kafka's FileRecords view of a batch."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from kgtool.codec import RecordBatch, encode_batch_v2, encode_message_set

ROOT = Path(__file__).resolve().parents[2]
BATCHES = ROOT / "fixtures" / "batches"


def b64(x: bytes | None) -> str | None:
    return None if x is None else base64.b64encode(x).decode()


def golden_cases() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(BATCHES.glob("*.json"))]


def kafka_view(b: RecordBatch) -> dict:
    """A decoded batch in the golden files' (FileRecords) vocabulary."""
    view = {
        "position": b.position,
        "baseOffset": b.base_offset,
        "lastOffset": b.last_offset,
        "nextOffset": b.next_offset,
        "count": b.record_count,
        "magic": b.magic,
        "crc": b.crc,
        "isValid": b.crc_valid,
        "sizeInBytes": b.size_in_bytes,
        "compressionType": b.compression,
        "timestampType": b.timestamp_type,
        "maxTimestamp": b.max_timestamp,
        "producerId": b.producer_id,
        "producerEpoch": b.producer_epoch,
        "baseSequence": b.base_sequence,
        "lastSequence": b.last_sequence,
        "isTransactional": b.is_transactional,
        "isControlBatch": b.is_control,
        "partitionLeaderEpoch": b.partition_leader_epoch,
        "deleteHorizonMs": b.delete_horizon_ms,
        "attributes": b.attributes,
    }
    if b.magic >= 2:
        view.update(batchLength=b.batch_length, lastOffsetDelta=b.last_offset_delta,
                    baseTimestamp=b.base_timestamp, recordsCount=b.record_count)
    else:
        view["messageSize"] = b.batch_length
    recs = []
    for r in b.records:
        rv = {
            "offset": r.offset,
            "timestamp": r.timestamp,
            "sequence": r.sequence,
            "sizeInBytes": r.size_in_bytes,
            "keySize": -1 if r.key is None else len(r.key),
            "valueSize": -1 if r.value is None else len(r.value),
            "key": b64(r.key),
            "value": b64(r.value),
            "headers": [{"key": k, "value": b64(v)} for k, v in r.headers],
        }
        if r.control is not None:
            rv["control"] = {"type": r.control.type_name, "coordinatorEpoch": r.control.coordinator_epoch}
        recs.append(rv)
    view["records"] = recs
    return view


#: Fields that depend on the compressed bytes (the golden files' codecs are Debian builds).
COMPRESSED_BYTES_FIELDS = {"crc", "sizeInBytes", "batchLength", "messageSize", "position", "nextPosition"}
#: Record sizes are those of the decompressed records: compared for every codec.
RECORD_SIZE_FIELDS: set[str] = set()


def expected_view(e: dict, compressed_file: bool) -> dict:
    view = {k: v for k, v in e.items() if k != "records"}
    if compressed_file:
        for k in COMPRESSED_BYTES_FIELDS:
            view.pop(k, None)
    recs = []
    for r in e["records"]:
        rv = {k: v for k, v in r.items() if k not in RECORD_SIZE_FIELDS}
        recs.append(rv)
    view["records"] = recs
    return view


def reencode(b: RecordBatch) -> bytes:
    """Encode a decoded batch again with the same header fields (byte-exact if uncompressed)."""
    if b.magic == 2:
        return encode_batch_v2(
            b.records,
            base_offset=b.base_offset,
            compression=b.compression,
            partition_leader_epoch=b.partition_leader_epoch,
            producer_id=b.producer_id,
            producer_epoch=b.producer_epoch,
            base_sequence=b.base_sequence,
            is_transactional=b.is_transactional,
            is_control=b.is_control,
            delete_horizon_ms=b.delete_horizon_ms,
            timestamp_type=b.timestamp_type,
            log_append_time=b.max_timestamp,
            base_timestamp=b.base_timestamp,
            max_timestamp=b.max_timestamp,
            last_offset_delta=b.last_offset_delta,
        )
    return encode_message_set(
        b.records,
        magic=b.magic,
        base_offset=b.base_offset,
        compression=b.compression,
        timestamp_type=b.timestamp_type if b.magic == 1 else "CREATE_TIME",
        log_append_time=b.max_timestamp,
        wrapper_offset=b.last_offset if b.compression != "none" else None,
    )
