"""Every file kind decodes (table, json, jsonl), the preallocated-tail rule, and bad input:
one line with file and byte position, exit 1, never a traceback."""

from __future__ import annotations

import json
import os
import struct

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.storage.checkpoints import encode_checkpoint, encode_partition_metadata
from kgtool.errors import InputError
from kgtool.storage.files import (
    list_segments,
    live_partition_of_dir,
    live_partition_of_path,
    log_files,
    segment_inputs,
    topic_partition,
    topic_partition_of_dir,
)
from kgtool.storage.indexes import encode_offset_index, encode_time_index
from kgtool.storage.snapshot import ProducerEntry, encode_snapshot
from tests.storage.dirs import TOPIC_ID, broker_dir, files

runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["decode-batch", *map(str, args)])


def jsonl(r):
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def test_every_kind_decodes_in_each_format(tmp_path):
    d = broker_dir(tmp_path)
    for path in files(d, ".index")[:1] + files(d, ".timeindex")[:1] + files(d, ".txnindex")[:1] + \
            files(d, ".snapshot")[-1:] + [os.path.join(d, "leader-epoch-checkpoint"), os.path.join(d, "partition.metadata")]:
        table = run(path)
        assert table.exit_code == 0, table.output
        rows = jsonl(run(path, "--format", "jsonl"))
        assert rows and all(r["source"] == path for r in rows)
        last = [v for k, v in rows[-1].items() if k not in ("source", "kind")][-1]
        assert str(last) in table.stdout  # the last row's last field is in the table
        assert json.loads(run(path, "--format", "json").stdout) == rows


def test_index_rows_are_the_entries_written(tmp_path):
    p = tmp_path / "00000000000000000100.index"
    p.write_bytes(encode_offset_index([(120, 4200), (150, 8400)], 100))
    rows = jsonl(run(p, "--format", "jsonl"))
    assert [(r["entry"], r["offset"], r["position"]) for r in rows] == [(0, 120, 4200), (1, 150, 8400)]
    t = tmp_path / "00000000000000000100.timeindex"
    t.write_bytes(encode_time_index([(1000, 120), (2000, 150)], 100))
    rows = jsonl(run(t, "--format", "jsonl"))
    assert [(r["timestamp"], r["offset"]) for r in rows] == [(1000, 120), (2000, 150)]


def test_preallocated_tail_is_counted_not_damage(tmp_path):
    p = tmp_path / "00000000000000000100.index"
    p.write_bytes(encode_offset_index([(120, 4200), (150, 8400)], 100, preallocate=10 * 1024 * 1024))
    r = run(p, "--format", "jsonl")
    assert r.exit_code == 0, r.output
    assert len(jsonl(r)) == 2
    assert f"{10 * 1024 * 1024 // 8 - 2} preallocated empty entries after entry 1" in r.stderr
    t = tmp_path / "00000000000000000100.timeindex"
    t.write_bytes(encode_time_index([(1000, 100)], 100, preallocate=120))  # first entry at the base offset
    r = run(t, "--format", "jsonl")
    assert r.exit_code == 0 and len(jsonl(r)) == 1 and "9 preallocated empty entries" in r.stderr
    z = tmp_path / "00000000000000000000.index"
    z.write_bytes(b"\0" * 80)
    r = run(z, "--format", "jsonl")
    assert r.exit_code == 0 and jsonl(r) == [] and "10 preallocated empty entries, none written" in r.stderr


@pytest.mark.parametrize("name,data,where", [
    ("00000000000000000000.index", encode_offset_index([(10, 4100), (20, 8200)], 0) + b"\0\0\0", "byte 16"),
    ("00000000000000000000.index", encode_offset_index([(10, 4100), (20, 8200)], 0)
     + encode_offset_index([(0, 0)], 0) + b"\x07" + b"\0" * 15, "byte 24"),
    ("00000000000000000000.index", encode_offset_index([(10, 4100), (5, 8200)], 0), "byte 8"),
    ("00000000000000000000.timeindex", encode_time_index([(2000, 10), (1000, 20)], 0), "byte 12"),
    ("00000000000000000000.txnindex", struct.pack(">hqqqq", 0, 5, 1, 9, 10) + b"\1\2", "byte 34"),
    ("00000000000000000000.txnindex", struct.pack(">hqqqq", 3, 5, 1, 9, 10), "byte 0"),
    ("00000000000000000042.snapshot", encode_snapshot([], version=2), "byte 0"),
    ("00000000000000000042.snapshot", encode_snapshot([ProducerEntry(1, 0, 4, 9, 0, 5, -1, -1)], crc=7), "byte 2"),
    ("00000000000000000042.snapshot", struct.pack(">hIi", 1, 0, 1000), "byte 6"),
    ("00000000000000000042.snapshot", b"\0\1\0", "byte 0"),
    ("leader-epoch-checkpoint", b"1\n1\n0 0\n", "byte 0"),
    ("leader-epoch-checkpoint", b"0\n2\n0 0\n3 x\n", "byte 8"),
    ("leader-epoch-checkpoint", b"0\n3\n0 0\n", "byte 8"),
    ("replication-offset-checkpoint", b"0\n1\norders 0\n", "byte 4"),
    ("partition.metadata", b"version: 0\ntopic_id: nope\n", "byte 11"),
])
def test_bad_input_is_one_line_with_file_and_position_and_exit_1(tmp_path, name, data, where):
    p = tmp_path / name
    p.write_bytes(data)
    r = run(p, "--format", "jsonl")
    assert r.exit_code == 1, r.output
    assert f"{p}: {where}" in r.stderr
    assert "Traceback" not in r.output


def test_garbage_index_far_larger_than_its_log(tmp_path):
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    p = tmp_path / "00000000000000000000.index"
    p.write_bytes(os.urandom(1 << 20))
    r = run(p, "--format", "jsonl")
    assert r.exit_code == 1
    assert "past the end of the log (0 bytes)" in r.stderr or "does not follow" in r.stderr
    assert "Traceback" not in r.output


def test_checkpoints_and_partition_metadata(tmp_path):
    p = tmp_path / "replication-offset-checkpoint"
    p.write_bytes(encode_checkpoint([("orders", 0, 80), ("other", 11, 5)]))
    assert [(r["topic"], r["partition"], r["offset"]) for r in jsonl(run(p, "--format", "jsonl"))] == \
        [("orders", 0, 80), ("other", 11, 5)]
    m = tmp_path / "partition.metadata"
    m.write_bytes(encode_partition_metadata(TOPIC_ID))
    (row,) = jsonl(run(m, "--format", "jsonl"))
    assert row["version"] == 0 and row["topic_id"] == "AQIDBAUGBwgJCgsMDQ4PEA"


def test_files_option_decodes_the_other_files_of_a_directory(tmp_path):
    d = broker_dir(tmp_path)
    rows = jsonl(run(d, "--files", "--format", "jsonl"))
    kinds = {r.get("kind") for r in rows}
    assert {"offset_index", "time_index", "txn_index", "producer_snapshot", "leader_epoch_checkpoint",
            "partition_metadata"} <= kinds
    assert any(r.get("type") == "batch" for r in rows)  # the segments still decode
    assert any(r.get("type") == "record" and "offset" in r for r in rows)
    assert all(("kind" in r) != ("type" in r) for r in rows)  # a file row or a batch/record line
    assert not ({r.get("kind") for r in jsonl(run(d, "--format", "jsonl"))} - {None})


def test_directory_summary_overview(tmp_path):
    d = broker_dir(tmp_path, preallocate=4096)
    (tmp_path / "logs" / "replication-offset-checkpoint").write_bytes(
        encode_checkpoint([("orders", 3, 250), ("orders", 2, 1)]))
    r = run(d, "--summary", "--format", "json")
    assert r.exit_code == 0, r.output
    (ov,) = json.loads(r.stdout)["partition_directories"]
    assert ov["topic"] == "orders" and ov["partition"] == 3 and ov["high_watermark"] == 250
    assert [s["active"] for s in ov["segments"]] == [False] * (len(ov["segments"]) - 1) + [True]
    assert ov["segments"][-1]["untrimmed"] and not ov["segments"][0]["untrimmed"]
    assert ov["aborted_transaction_count"] == 30 and {p["producer_id"] for p in ov["producers"]} == {5, 7, 8}
    assert [e["epoch"] for e in ov["leader_epochs"]] == [1, 2, 4]
    table = run(d, "--summary")
    assert "high watermark" in table.stdout and "250" in table.stdout and "untrimmed" in table.stdout


@pytest.mark.parametrize("seed", range(40))
def test_random_bytes_decode_without_exceptions_and_within_the_file(tmp_path, seed):
    import random

    from kgtool.codec.model import RecordBatch as _Batch
    from kgtool.storage.decode import decode_file
    from kgtool.storage.logview import batch_headers

    rnd = random.Random(seed)
    data = bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 1, 7, 33, 61, 200, 4096])))
    if seed % 3 == 0:
        data = data[:16] + b"\0" * 40 + data[16:]
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000000.txnindex",
                 "00000000000000000000.snapshot", "leader-epoch-checkpoint", "replication-offset-checkpoint",
                 "partition.metadata"):
        p = tmp_path / name
        p.write_bytes(data)
        f = decode_file(str(p))
        list(f.rows())
        assert all(0 <= prob.position <= len(data) for prob in f.problems.items)
    end = 0
    for item in batch_headers(data, verify_crc=True):
        assert item.position == end if isinstance(item, _Batch) else item.position >= end
        end = item.end_position
    assert end <= len(data)


# --- topic and partition from a directory name (LocalLog.parseTopicPartitionName) -------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("orders-3", ("orders", 3)),
    ("__consumer_offsets-49", ("__consumer_offsets", 49)),
    ("my-topic-0", ("my-topic", 0)),
    ("orders-3.9f8e7d6c5b4a39281706f5e4d3c2b1a0-delete", ("orders", 3)),
    ("orders-3.9f8e7d6c5b4a39281706f5e4d3c2b1a0-future", ("orders", 3)),
    ("batches", None), ("orders-", None), ("-3", None), ("orders-x", None), ("orders-99999999999", None),
    ("bad topic-1", None),
])
def test_topic_partition_of_dir(name, expected):
    assert topic_partition_of_dir(name) == expected


def test_topic_partition_takes_the_last_component_of_a_path():
    assert topic_partition("/var/lib/kafka/orders-3/") == ("orders", 3)
    assert topic_partition("/var/lib/kafka/orders-3.9f8e-delete") == ("orders", 3)
    assert topic_partition("/var/lib/kafka") is None


@pytest.mark.parametrize("name, topic, expected", [
    ("__consumer_offsets-12", "__consumer_offsets", 12),
    ("__consumer_offsets-007", "__consumer_offsets", 7),
    ("__transaction_state-0", "__transaction_state", 0),
    # A copy being deleted, moved or left stray is not the live log of the partition.
    ("__consumer_offsets-12.9f8e7d6c5b4a39281706f5e4d3c2b1a0-delete", "__consumer_offsets", None),
    ("__consumer_offsets-12.9f8e7d6c5b4a39281706f5e4d3c2b1a0-future", "__consumer_offsets", None),
    ("__consumer_offsets-12.9f8e7d6c5b4a39281706f5e4d3c2b1a0-stray", "__consumer_offsets", None),
    ("__transaction_state-1", "__consumer_offsets", None),
    ("x__consumer_offsets-1", "__consumer_offsets", None),
    ("__consumer_offsets-", "__consumer_offsets", None),
    ("__consumer_offsets-1x", "__consumer_offsets", None),
    ("__consumer_offsets-99999999999", "__consumer_offsets", None),  # not an int32: the broker rejects it
])
def test_live_partition_of_dir(name, topic, expected):
    assert live_partition_of_dir(name, topic) == expected


@pytest.mark.parametrize("path, expected", [
    ("/data/__consumer_offsets-7/00000000000000000000.log", 7),
    ("hdfs://nn/backup/__consumer_offsets-7/00000000000000000000.log", 7),
    ("C:\\kafka\\__consumer_offsets-7\\00000000000000000000.log", 7),
    ("/data/__consumer_offsets-7.abc-delete/00000000000000000000.log", None),
    ("00000000000000000000.log", None),
])
def test_live_partition_of_path(path, expected):
    assert live_partition_of_path(path, "__consumer_offsets") == expected


def test_log_files_offset_named_or_every_log_in_name_order(tmp_path):
    names = ["00000000000000000120.log", "00000000000000000000.log", "b-hand.log", "a-hand.log",
             "00000000000000000000.index", "00000000000000000050.log.deleted", "00000000000000000060.log.swap"]
    for n in names:
        (tmp_path / n).write_bytes(b"")
    d = str(tmp_path)
    every = ["00000000000000000000.log", "00000000000000000120.log", "a-hand.log", "b-hand.log"]
    assert log_files(d, offset_named=False) == [os.path.join(d, n) for n in every]
    assert log_files(d) == [os.path.join(d, n) for n in every[:2]]
    assert [s.log for s in list_segments(d)] == log_files(d)
    assert segment_inputs(d) == log_files(d, offset_named=False)
    assert segment_inputs(os.path.join(d, "a-hand.log")) == [os.path.join(d, "a-hand.log")]


def test_segment_inputs_of_a_directory_without_logs_and_an_unlistable_one(tmp_path):
    (tmp_path / "00000000000000000000.index").write_bytes(b"")
    with pytest.raises(InputError, match="no \\*.log segment files in this directory"):
        segment_inputs(str(tmp_path))
    with pytest.raises(InputError):
        log_files(str(tmp_path / "missing"))
