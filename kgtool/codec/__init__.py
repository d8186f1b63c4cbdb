"""Kafka's record formats, bytes <-> dataclasses: v2 batches, legacy message sets, codecs,
segment scanning. No CLI, no Rich: this package also runs inside Spark executors.

The record loop has a C twin (``kgtool.codec._speedups``, built when a compiler is present);
``KGTOOL_PURE_PYTHON=1`` forces the pure-Python path, which gives the same results.
"""

from kgtool.codec.batch import (
    CrcMismatch,
    decode_batch_v2,
    encode_batch_v2,
    encode_end_txn_marker,
    encode_record_v2,
    speedups_enabled,
)
from kgtool.codec.legacy import decode_legacy_entry, encode_legacy_message, encode_message_set
from kgtool.codec.model import ControlRecord, Record, RecordBatch, ScanProblem
from kgtool.codec.segment import open_segment, scan_file, scan_segment
from kgtool.codec.summary import ScanSummary, summarize_segment

__all__ = [
    "ControlRecord",
    "CrcMismatch",
    "Record",
    "RecordBatch",
    "ScanProblem",
    "ScanSummary",
    "decode_batch_v2",
    "decode_legacy_entry",
    "encode_batch_v2",
    "encode_end_txn_marker",
    "encode_legacy_message",
    "encode_message_set",
    "encode_record_v2",
    "open_segment",
    "scan_file",
    "scan_segment",
    "speedups_enabled",
    "summarize_segment",
]
