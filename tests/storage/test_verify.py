"""--verify: each rule finds its mismatch (one field patched), and what a healthy log holds
(follower appends, deleted or truncated history, compaction, untrimmed indexes) raises none."""

from __future__ import annotations

import json
import os
import struct

from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.codec.model import RecordBatch
from kgtool.codec.segment import scan_file
from kgtool.storage.checkpoints import encode_checkpoint
from kgtool.storage.decode import decode_file
from kgtool.storage.indexes import encode_aborted_txn
from kgtool.storage.producers import marker_of
from kgtool.storage.snapshot import ProducerEntry, encode_snapshot
from kgtool.storage.verify import verify
from tests.storage.writer import PartitionWriter
from tests.storage.dirs import broker_dir, copy_dir, files

runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["decode-batch", *map(str, args)])


def rows_of(d):
    r = run(d, "--verify", "--format", "json")
    return r, json.loads(r.stdout)


def patch(path: str, at: int, fmt: str, value) -> None:
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(struct.pack(fmt, value))


def test_a_healthy_directory_verifies_clean(tmp_path):
    d = broker_dir(tmp_path)
    r, rows = rows_of(d)
    assert r.exit_code == 0, r.output
    assert rows == []
    assert "0 mismatches" in r.stderr and "30 abort markers" in r.stderr and "6 producer snapshot" in r.stderr


def test_a_segment_verifies_alone(tmp_path):
    d = broker_dir(tmp_path)
    seg = files(d, ".log")[1]
    r = run(seg, "--verify")
    assert r.exit_code == 0, r.output
    r = run(files(d, ".index")[1], "--verify")  # an index stands for its segment
    assert r.exit_code == 0, r.output


def test_offset_index_entry_not_at_a_batch_start(tmp_path):
    d = broker_dir(tmp_path)
    idx = files(d, ".index")[0]
    rel, pos = struct.unpack_from(">ii", open(idx, "rb").read(), 8)
    patch(idx, 12, ">i", pos + 1)
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert rows == [{"kind": "offset_index", "file": idx, "entry": 1, "expected": f"offset {rel} at the start of a batch",
                     "found": f"position {pos + 1} is not the start of a batch"}]


def test_offset_index_entry_with_the_batch_base_offset_is_kafka_7487(tmp_path):
    d = broker_dir(tmp_path)
    for idx, log in zip(files(d, ".index"), files(d, ".log")):
        at = {b.position: b for b in scan_file(log) if isinstance(b, RecordBatch)}
        hit = [(row["entry"], at[row["position"]]) for row in decode_file(idx).rows()
               if at[row["position"]].last_offset > at[row["position"]].base_offset]
        if hit:
            break
    k, multi = hit[0]
    base = int(os.path.basename(idx)[:20])
    patch(idx, 8 * k, ">i", multi.base_offset - base)  # the batch's first offset, not its last
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert rows == [{"kind": "offset_index", "file": idx, "entry": k,
                     "expected": f"offset {multi.last_offset} (the last offset of batch@{multi.position}, KAFKA-7487)",
                     "found": f"offset {multi.base_offset}"}]


def test_time_index_timestamp_that_is_not_the_largest_so_far(tmp_path):
    d = broker_dir(tmp_path)
    ti = files(d, ".timeindex")[0]
    ts, rel = struct.unpack_from(">qi", open(ti, "rb").read(), 12)
    patch(ti, 12, ">q", ts - 1)
    r, rows = rows_of(d)
    assert r.exit_code == 1
    (row,) = rows
    assert row["kind"] == "time_index" and row["entry"] == 1 and row["found"] == f"timestamp {ts - 1}"
    assert row["expected"].startswith(f"timestamp {ts} (the largest batch timestamp")


def test_txn_index_missing_entry_and_wrong_first_offset(tmp_path):
    d = broker_dir(tmp_path)
    txn = files(d, ".txnindex")[0]
    entries = [row for row in decode_file(txn).rows()]
    first = entries[0]
    rest = b"".join(encode_aborted_txn(e["producer_id"], e["first_offset"], e["last_offset"], e["last_stable_offset"])
                    for e in entries[1:])
    wrong = entries[1]
    bad = encode_aborted_txn(wrong["producer_id"], wrong["first_offset"] + 1, wrong["last_offset"],
                             wrong["last_stable_offset"])
    with open(txn, "wb") as fh:
        fh.write(bad + rest[34:])
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert {"kind": "txn_index", "file": txn, "entry": None,
            "expected": f"AbortedTxn(producer {first['producer_id']}, first offset {first['first_offset']}, "
                        f"last offset {first['last_offset']})", "found": "no entry"} in rows
    assert {"kind": "txn_index", "file": txn, "entry": 0,
            "expected": f"first offset {wrong['first_offset']} (the first batch of producer {wrong['producer_id']}'s "
                        "transaction)", "found": f"first offset {wrong['first_offset'] + 1}"} in rows
    assert len(rows) == 2


def test_txn_index_entry_without_its_marker(tmp_path):
    d = broker_dir(tmp_path)
    txn = files(d, ".txnindex")[0]
    log = files(d, ".log")[0]
    last = [b for b in scan_file(log) if isinstance(b, RecordBatch)][-1]
    with open(txn, "ab") as fh:  # an entry whose "marker" is a data batch
        fh.write(encode_aborted_txn(8, last.base_offset, last.last_offset, last.last_offset + 1))
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert rows == [{"kind": "txn_index", "file": txn, "entry": len(list(decode_file(txn).rows())) - 1,
                     "expected": f"an ABORT marker of producer 8 at offset {last.last_offset} in {os.path.basename(log)}",
                     "found": "no such marker"}]


def test_snapshot_with_a_wrong_last_sequence_and_a_bad_crc(tmp_path):
    d = broker_dir(tmp_path)
    snap = files(d, ".snapshot")[-1]
    entries = [ProducerEntry(**{k: v for k, v in row.items() if k != "entry"}) for row in decode_file(snap).rows()]
    k = next(i for i, e in enumerate(entries) if e.producer_id == 5)
    e = entries[k]
    entries[k] = ProducerEntry(e.producer_id, e.producer_epoch, e.last_sequence - 1, e.last_offset, e.offset_delta,
                               e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
    with open(snap, "wb") as fh:
        fh.write(encode_snapshot(entries))
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert rows == [{"kind": "producer_snapshot", "file": snap, "entry": k,
                     "expected": f"producer 5: last sequence {e.last_sequence} (the batch at offsets "
                                 f"{e.last_offset - e.offset_delta}..{e.last_offset})",
                     "found": f"last sequence {e.last_sequence - 1}"}]
    patch(snap, 2, ">I", 0)
    r, rows = rows_of(d)
    assert r.exit_code == 1 and rows[0]["kind"] == "producer_snapshot" and "byte 2: stored crc 0x00000000" in rows[0]["found"]


def test_leader_epoch_start_offset_that_is_not_the_first_batch_of_its_epoch(tmp_path):
    d = broker_dir(tmp_path)
    cp = os.path.join(d, "leader-epoch-checkpoint")
    epochs = [tuple(map(int, line.split())) for line in open(cp).read().splitlines()[2:]]
    assert [e for e, _ in epochs] == [1, 2, 4]
    e2 = epochs[1]
    epochs[1] = (2, e2[1] + 5)
    with open(cp, "wb") as fh:
        fh.write(encode_checkpoint(epochs))
    r, rows = rows_of(d)
    assert r.exit_code == 1
    (row,) = rows
    assert row["kind"] == "leader_epoch_checkpoint" and row["entry"] == 0
    assert row["expected"] == "epoch 1 (from offset 0) in the partition leader epoch of batches"
    assert f"(offset {e2[1]}) carries epoch 2 (and" in row["found"]


def test_damage_in_the_log_is_a_row(tmp_path):
    d = broker_dir(tmp_path)
    log = files(d, ".log")[0]
    second = [b for b in scan_file(log) if isinstance(b, RecordBatch)][1]
    patch(log, second.position + 8, ">i", 3)  # a batch length below the minimum
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert rows[0]["kind"] == "segment" and rows[0]["file"] == log
    assert f"byte {second.position}" in rows[0]["found"] and "smaller than the minimum" in rows[0]["found"]


# --- no false alarms ------------------------------------------------------------------------------

def test_follower_appends_indexed_per_append_are_not_mismatches(tmp_path):
    d = broker_dir(tmp_path, multi_batch=True, per_append_entries=True)
    idx = decode_file(files(d, ".index")[0])
    log = files(d, ".log")[0]
    ends = {b.position: b.last_offset for b in scan_file(log) if isinstance(b, RecordBatch)}
    rows = list(idx.rows())
    assert any(ends[row["position"]] != row["offset"] for row in rows)  # really multi-batch entries
    r, mismatches = rows_of(d)
    assert r.exit_code == 0 and mismatches == []
    assert "multi-batch append" in r.stderr


def test_follower_appends_indexed_per_batch_verify_clean(tmp_path):
    d = broker_dir(tmp_path, multi_batch=True)
    r, rows = rows_of(d)
    assert r.exit_code == 0 and rows == []


def test_deleted_and_truncated_history_is_not_a_mismatch(tmp_path):
    d = broker_dir(tmp_path)
    first = files(d, ".log")[0]
    stem = first[:-4]
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        if os.path.exists(stem + suffix):
            os.remove(stem + suffix)  # retention deleted the first segment
    cp = os.path.join(d, "leader-epoch-checkpoint")
    epochs = [tuple(map(int, line.split())) for line in open(cp).read().splitlines()[2:]]
    end = max(b.last_offset for log in files(d, ".log") for b in scan_file(log) if isinstance(b, RecordBatch)) + 1
    with open(cp, "wb") as fh:  # epoch 1 only in the deleted segment; epoch 9 past a truncation
        fh.write(encode_checkpoint(epochs + [(9, end + 40)]))
    r, rows = rows_of(d)
    assert r.exit_code == 0, r.output
    assert rows == []
    assert "leader epochs starting past the log end offset" in r.stderr
    assert "whose batch the files no longer hold" in r.stderr


def test_compacted_segments_are_not_mismatches(tmp_path):
    """The cleaner's work on a transactional log: aborted data removed, COMMIT markers removed
    after the delete horizon, superseded records removed, the last batch of each producer kept;
    ABORT markers kept with their original index entries; snapshots and the epoch checkpoint
    from before the cleaning."""
    src = broker_dir(tmp_path, name="src-0")
    batches = []
    for log in files(src, ".log"):
        data = open(log, "rb").read()
        batches += [(b, data[b.position:b.end_position]) for b in scan_file(log, decode_records=True)
                    if isinstance(b, RecordBatch)]
    last_of = {b.producer_id: b.base_offset for b, _ in batches if b.producer_id >= 0 and not b.is_control}
    aborted, open_txn = set(), {}
    for b, _ in batches:  # which data batches belong to aborted transactions
        if b.is_transactional and not b.is_control:
            open_txn.setdefault(b.producer_id, []).append(b.base_offset)
        m = marker_of(b) if b.is_control else None
        if m is not None:
            if m[0] == 0:
                aborted.update(open_txn.get(b.producer_id, []))
            open_txn.pop(b.producer_id, None)
    kept = []
    for b, raw in batches:
        m = marker_of(b) if b.is_control else None
        if m is not None and m[0] == 1:
            continue  # COMMIT marker past its delete horizon
        if b.base_offset in aborted and last_of.get(b.producer_id) != b.base_offset:
            continue  # aborted data
        if b.producer_id < 0 and b.base_offset % 3 == 0:
            continue  # a superseded key
        kept.append((b, raw))
    assert len(kept) < len(batches) - 40
    d = os.path.join(str(tmp_path), "logs", "orders-3")
    w = PartitionWriter(d, segment_bytes=24_000)
    for _, raw in kept:
        w.append(raw)
    w.close(snapshot=False)
    for snap in files(d, ".snapshot"):
        os.remove(snap)
    for snap in files(src, ".snapshot") + [os.path.join(src, "leader-epoch-checkpoint")]:
        copy = os.path.join(d, os.path.basename(snap))
        open(copy, "wb").write(open(snap, "rb").read())
    original = {}
    for txn in files(src, ".txnindex"):
        for row in decode_file(txn).rows():
            original[row["last_offset"]] = row
    kept_markers = {b.base_offset for b, _ in kept if b.is_control}
    for log in files(d, ".log"):
        offs = {b.base_offset for b in scan_file(log) if isinstance(b, RecordBatch)}
        entries = [original[o] for o in sorted(offs & kept_markers) if o in original]
        path = log[:-4] + ".txnindex"
        if entries:
            with open(path, "wb") as fh:
                fh.write(b"".join(encode_aborted_txn(e["producer_id"], e["first_offset"], e["last_offset"],
                                                     e["last_stable_offset"]) for e in entries))
        elif os.path.exists(path):
            os.remove(path)
    r, rows = rows_of(d)
    assert r.exit_code == 0, r.output
    assert rows == []
    assert "offset gaps between batches" in r.stderr


def test_untrimmed_indexes_are_notes_not_mismatches(tmp_path):
    d = broker_dir(tmp_path, preallocate=10 * 1024 * 1024)
    r, rows = rows_of(d)
    assert r.exit_code == 0 and rows == []
    assert "untrimmed indexes" in r.stderr
    active = files(d, ".index")[-1]
    assert os.path.getsize(active) == 10 * 1024 * 1024


def test_directory_copy_is_independent(tmp_path):
    d = broker_dir(tmp_path)
    c = copy_dir(d, os.path.join(str(tmp_path), "copy-0"))
    assert verify(c).count == 0


def test_an_entry_pointing_at_the_next_entrys_batch_is_the_one_named(tmp_path):
    """Entry k made to point at entry k+1's batch: entry k+1 now does not follow it (same
    position), but the wrong one is k, as DumpLogSegments finds by comparing each entry with the
    batch at its position. Only k is named; the index is still compared with the log."""
    d = broker_dir(tmp_path)
    idx = files(d, ".index")[0]
    entries = list(decode_file(idx).rows())
    k = len(entries) // 2
    nxt = entries[k + 1]
    patch(idx, 8 * k + 4, ">i", nxt["position"])
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert rows == [{"kind": "offset_index", "file": idx, "entry": k,
                     "expected": f"offset {nxt['offset']} (the last offset of batch@{nxt['position']}, KAFKA-7487)",
                     "found": f"offset {entries[k]['offset']}"}]
    assert "not compared with the log" not in r.stderr


def test_entries_right_but_out_of_order_are_still_named(tmp_path):
    """Two entries swapped: each points at a batch whose last offset it holds, but the index no
    longer increases: the order problem stays (OffsetIndex.append: offsets strictly increase)."""
    d = broker_dir(tmp_path)
    idx = files(d, ".index")[0]
    raw = bytearray(open(idx, "rb").read())
    assert len(raw) >= 16
    raw[0:8], raw[8:16] = raw[8:16], raw[0:8]
    open(idx, "wb").write(bytes(raw))
    r, rows = rows_of(d)
    assert r.exit_code == 1
    assert [(row["kind"], row["entry"]) for row in rows] == [("offset_index", None), ("offset_index", None)]
    assert "entry 1: position" in rows[0]["found"] + rows[1]["found"]
    assert all("does not follow the previous entry's" in row["found"] for row in rows)
