"""Control records that are not transaction markers.

``CoordinatorLoaderImpl`` replays a control record only when ``ControlRecordType.parse`` gives
COMMIT or ABORT (``replayEndTransactionMarker``); any other control type (a LEADER_CHANGE, a
type a newer broker writes) is skipped and leaves the producer's transaction open.
"""

from __future__ import annotations

import os

import pytest

from kgtool.codec.batch import encode_batch_v2, encode_control_record_key, encode_end_txn_marker
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.scenario import Script
from kgtool.offsets.tables import TABLE_NAMES
from kgtool.offsets.writer import iter_batches
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.offsets.test_rebalances import PATHS

TP = ("t", 0)
PRODUCER = (7001, 3)


def _segment(tmp_path, then_commit: bool) -> str:
    """A generation, a committed offset, then a transactional commit of producer 7001 followed
    by a control record of type 5 (not COMMIT or ABORT) and, with ``then_commit``, its COMMIT."""
    s = Script()
    s.generation("g", 1, {"m1": [TP]})
    s.commit("g", {TP: 10})
    s.commit("g", {TP: 20}, producer=PRODUCER)
    batches = list(iter_batches(s, 0))
    offset = 3  # one record per event above
    ts = s.start_ms + 10_000
    batches.append(encode_batch_v2([(encode_control_record_key(5), b"\x00\x00", [], ts)], base_offset=offset,
                                   producer_id=PRODUCER[0], producer_epoch=PRODUCER[1], is_transactional=True,
                                   is_control=True))
    if then_commit:
        batches.append(encode_end_txn_marker(commit=True, producer_id=PRODUCER[0], producer_epoch=PRODUCER[1],
                                             base_offset=offset + 1, timestamp=ts + 1))
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    path = str(d / f"{0:020d}.log")
    with open(path, "wb") as fh:
        fh.write(b"".join(batches))
    return path


def _audit(path: str, pure: bool) -> dict:
    got: dict = {name: [] for name in TABLE_NAMES}

    def sink(name, table):
        got[name].extend(table.to_pylist() if hasattr(table, "to_pylist") else table)

    audit_partition(PartitionFiles(0, [path], [os.path.getsize(path)]), AuditOptions(), sink=sink, pure=pure)
    return got


@pytest.mark.parametrize("pure", PATHS)
def test_other_control_types_leave_the_transaction_open(tmp_path, pure):
    got = _audit(_segment(tmp_path, then_commit=False), pure)
    txn = [c for c in got["commits"] if c["transactional"]]
    assert [(c["offset"], c["txn_result"], c["txn_marker_offset"], c["effective"]) for c in txn] == \
        [(20, "PENDING", None, False)]
    assert [(r["partition"], r["offset"]) for r in got["offsets"]] == [(0, 10)]


@pytest.mark.parametrize("pure", PATHS)
def test_the_commit_marker_after_another_control_type_ends_the_transaction(tmp_path, pure):
    got = _audit(_segment(tmp_path, then_commit=True), pure)
    txn = [c for c in got["commits"] if c["transactional"]]
    assert [(c["offset"], c["txn_result"], c["txn_marker_offset"], c["effective"]) for c in txn] == \
        [(20, "COMMIT", 4, True)]
    assert [(r["partition"], r["offset"]) for r in got["offsets"]] == [(0, 20)]
