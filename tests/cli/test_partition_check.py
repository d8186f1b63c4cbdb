"""partition-of --check: a partition directory written by a known partitioner, generated in-test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgtool.codec.batch import encode_batch_v2, encode_end_txn_marker
from kgtool.errors import InputError
from kgtool.partitioner.check import GrowthTracker, parse_partition_dir
from kgtool.partitioner.rules import partition_for_key, resolve
from tests.twins import compiled


def keys_for(partitioner: str, n: int, p: int, count: int, prefix: str = "key") -> list[bytes]:
    """``count`` keys that ``partitioner`` puts on partition ``p`` of ``n``."""
    part = resolve(partitioner).partitioner
    out, i = [], 0
    while len(out) < count:
        k = f"{prefix}-{i}".encode()
        if partition_for_key(part, k, n) == p:
            out.append(k)
        i += 1
    return out


def write_partition(directory: Path, batches: list[tuple[int, list[bytes | None]]], *, control: bool = False) -> Path:
    """One segment of batches ``(producer_id, keys)``; optionally a COMMIT marker after them."""
    directory.mkdir(parents=True, exist_ok=True)
    data = bytearray()
    offset = 0
    for pid, keys in batches:
        data += encode_batch_v2([(k, b"v") for k in keys], base_offset=offset, producer_id=pid,
                                producer_epoch=0 if pid >= 0 else -1, base_sequence=0 if pid >= 0 else -1)
        offset += len(keys)
    if control:
        data += encode_end_txn_marker(base_offset=offset, producer_id=7, producer_epoch=0, commit=True)
    (directory / "00000000000000000000.log").write_bytes(bytes(data))
    (directory / "00000000000000000000.index").write_bytes(b"")
    return directory


def check(run, directory: Path, n: int, *extra) -> dict:
    result = run(["partition-of", "--check", directory, "-p", n, "--format", "json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("client, label", [("java", "java"), ("librdkafka", "librdkafka"), ("sarama", "sarama")])
def test_each_client_is_recognised(run, tmp_path: Path, client, label):
    d = write_partition(tmp_path / "orders-3", [(1000, keys_for(client, 12, 3, 60)), (1000, [None, None])])
    doc = check(run, d, 12)
    assert doc["topic"] == "orders" and doc["partition"] == 3
    assert (doc["records"], doc["keyed"], doc["null_keys"]) == (62, 60, 2)
    assert set(doc["partitioners"]) == {"java", "librdkafka", "sarama"}
    assert doc["partitioners"][label] == {"matching": 60, "share": 1.0}
    assert set(doc["other_partitioners"]) == {"sarama-reference"}
    assert doc["verdict"]["kind"] == "partitioner" and doc["verdict"]["partitioners"] == [label]
    assert [p["producer_id"] for p in doc["producers"]] == [1000]


def test_partition_count_change(run, tmp_path: Path):
    before = keys_for("java", 6, 3, 40, "old")
    after = keys_for("java", 12, 3, 40, "new")
    d = write_partition(tmp_path / "orders-3", [(5, before), (5, after)])
    doc = check(run, d, 12)
    assert doc["verdict"]["kind"] == "partition_count_change"
    assert doc["verdict"]["partitioners"] == ["java"] and doc["verdict"]["from_partitions"][0] == 6
    assert "--from-partitions 6" in doc["verdict"]["message"]


@pytest.mark.parametrize("pure", [False, True])
def test_two_producers_disagree(run, tmp_path: Path, monkeypatch, pure):
    from kgtool.partitioner import keys

    if pure:
        monkeypatch.setattr(keys, "_speedups", None)
    else:
        assert keys._speedups is compiled("kgtool.partitioner._speedups")
    d = write_partition(tmp_path / "t-3", [(1, keys_for("java", 8, 3, 50, "a")), (2, keys_for("sarama", 8, 3, 50, "b"))])
    doc = check(run, d, 8)
    assert doc["verdict"]["kind"] == "mixed"
    by_pid = {p["producer_id"]: p["verdict"]["partitioners"] for p in doc["producers"]}
    assert by_pid == {1: ["java"], 2: ["sarama"]}


def test_two_producers_on_partition_zero_are_not_a_growth_from_one(run, tmp_path: Path):
    # On partition 0 a topic grown from 1 partition explains any keys; two clean producers win.
    d = write_partition(tmp_path / "t-0", [(1, keys_for("java", 6, 0, 50, "a")), (2, keys_for("librdkafka", 6, 0, 50, "b"))])
    doc = check(run, d, 6)
    assert doc["verdict"]["kind"] == "mixed", doc["verdict"]


def test_custom_partitioner(run, tmp_path: Path):
    # Keys spread as if partitioned by something else: alternate the clients' partitions.
    keys = [f"k{i}".encode() for i in range(200)]
    d = write_partition(tmp_path / "t-1", [(-1, keys)])
    doc = check(run, d, 4)
    assert doc["verdict"]["kind"] == "custom"
    assert 0.1 < doc["partitioners"]["java"]["share"] < 0.4


def test_control_batches_and_no_keys(run, tmp_path: Path):
    d = write_partition(tmp_path / "t-2", [(7, [None, None])], control=True)
    doc = check(run, d, 4)
    assert doc["records"] == 2 and doc["verdict"]["kind"] == "no_keyed_records"


def test_damaged_batch_is_reported_and_intact_keys_still_count(run, tmp_path: Path):
    good = keys_for("java", 4, 1, 30)
    d = write_partition(tmp_path / "t-1", [(1, good[:10]), (1, good[10:20]), (1, good[20:])])
    seg = d / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    first_len = int.from_bytes(data[8:12], "big") + 12
    data[first_len + 70] ^= 0xFF  # inside the second batch's records: CRC mismatch
    seg.write_bytes(bytes(data))
    result = run(["partition-of", "--check", d, "-p", "4", "--format", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["keyed"] == 20 and doc["partitioners"]["java"]["matching"] == 20
    assert doc["problems"] == {"crc_mismatch": 1}
    assert "crc" in result.stderr and "skipped" in result.stderr


@pytest.mark.parametrize("name", ["orders", "orders-x", "-3", "orders-3.abc", "or ders-3", "orders-99999999999"])
def test_not_a_partition_directory(run, tmp_path: Path, name):
    d = tmp_path / name
    d.mkdir()
    result = run(["partition-of", "--check", d, "-p", "4"])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_partition_directory_names():
    # LocalLog.parseTopicPartitionName: the delete/future/stray suffixes name the same partition.
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, expected in [
            ("my-topic-12", ("my-topic", 12)),
            ("orders-3.4f1d2e3c4b5a69788796a5b4c3d2e1f0-delete", ("orders", 3)),
            ("orders-3.4f1d2e3c4b5a69788796a5b4c3d2e1f0-future", ("orders", 3)),
        ]:
            p = Path(tmp) / name
            p.mkdir()
            assert parse_partition_dir(str(p)) == expected
        p = Path(tmp) / "__consumer_offsets-3"
        p.mkdir()
        with pytest.raises(InputError, match="coordinator-of"):
            parse_partition_dir(str(p))
        with pytest.raises(InputError, match="no such directory"):
            parse_partition_dir(str(Path(tmp) / "nope-1"))


def test_check_usage(run, tmp_path: Path):
    d = write_partition(tmp_path / "orders-5", [(1, [b"a"])])
    assert run(["partition-of", "--check", d, "-p", "4"]).exit_code == 2  # partition 5 of 4
    assert run(["partition-of", "--check", d]).exit_code == 2  # no count
    assert run(["partition-of", "--check", d, "-p", "8", "k"]).exit_code == 2  # keys too
    table = run(["partition-of", "--check", d, "-p", "8"])
    assert table.exit_code == 0 and "verdict" in table.stdout


def test_growth_tracker_finds_the_old_count():
    t = GrowthTracker(partition=3, num_partitions=12)
    import numpy as np

    t.add(np.array([3 + 6 * 7, 3 + 6 * 11, 3 + 6 * 101], dtype=np.int64))
    assert t.result() == [6]
    t.add(np.array([4], dtype=np.int64))
    assert t.result() == []


def test_producers_beyond_the_cap_are_pooled(run, tmp_path: Path, monkeypatch):
    from kgtool.partitioner import check as check_mod

    monkeypatch.setattr(check_mod, "MAX_PRODUCERS", 3)
    ks = keys_for("java", 4, 2, 10)
    d = write_partition(tmp_path / "t-2", [(pid, ks[pid : pid + 2]) for pid in range(5)])
    doc = check(run, d, 4)
    assert [p["producer_id"] for p in doc["producers"]] == [0, 1, 2, None]
    assert doc["producers"][-1]["records"] == 4 and doc["verdict"]["partitioners"] == ["java"]
