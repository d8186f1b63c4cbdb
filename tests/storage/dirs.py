"""Partition directories for the storage tests, written with kgtool's encoder and the
``LogSegment.append``-style writer (:class:`tests.storage.writer.PartitionWriter`)."""

from __future__ import annotations

import os
import shutil

from kgtool.codec import encode_batch_v2, encode_end_txn_marker, scan_file
from tests.storage.writer import PartitionWriter

TS = 1_700_000_000_000
TOPIC_ID = bytes(range(1, 17))


def busy_partition(d: str, *, segment_bytes: int = 16_000, per_append_entries: bool = False,
                   multi_batch: bool = False, preallocate: int = 0) -> PartitionWriter:
    """A partition with plain, idempotent and transactional producers, commits and aborts,
    three leader epochs, several segments; timestamps mostly rising with a few stragglers.

    ``multi_batch``: batches are appended three at a time (a follower's appends)."""
    w = PartitionWriter(d, segment_bytes=segment_bytes, per_append_entries=per_append_entries, topic_id=TOPIC_ID)
    pending: list[bytes] = []
    offset = 0
    seq = {5: 0, 7: 0, 8: 0}

    def add(batch: bytes, n: int) -> None:
        nonlocal offset
        pending.append(batch)
        offset += n
        if not multi_batch or len(pending) == 3:
            w.append(pending[:])
            pending.clear()

    for i in range(240):
        epoch = 1 if i < 80 else 2 if i < 170 else 4
        ts = TS + i * 1000 - (7000 if i % 23 == 0 else 0)  # a straggler now and then
        kind = i % 12
        if kind in (3, 4):  # transactional producer 7: two batches then COMMIT (kind 4 -> marker)
            add(encode_batch_v2([(b"t%d" % i, b"x" * 150, [], ts)], base_offset=offset, producer_id=7, producer_epoch=1,
                                base_sequence=seq[7], is_transactional=True, partition_leader_epoch=epoch), 1)
            seq[7] += 1
            if kind == 4:
                add(encode_end_txn_marker(commit=i % 24 != 4, producer_id=7, producer_epoch=1, coordinator_epoch=3,
                                          base_offset=offset, timestamp=ts + 1, partition_leader_epoch=epoch), 1)
        elif kind == 7:  # idempotent producer 5, 3 records
            add(encode_batch_v2([(b"i", b"y" * 120, [], ts + j) for j in range(3)], base_offset=offset, producer_id=5,
                                producer_epoch=0, base_sequence=seq[5], partition_leader_epoch=epoch), 3)
            seq[5] += 3
        elif kind == 9:  # transactional producer 8, aborted, interleaved with others
            add(encode_batch_v2([(b"a", b"z" * 90, [], ts)], base_offset=offset, producer_id=8, producer_epoch=0,
                                base_sequence=seq[8], is_transactional=True, partition_leader_epoch=epoch), 1)
            seq[8] += 1
            add(encode_batch_v2([(b"p", b"w" * 200, [], ts)], base_offset=offset, partition_leader_epoch=epoch), 1)
            add(encode_end_txn_marker(commit=False, producer_id=8, producer_epoch=0, coordinator_epoch=3,
                                      base_offset=offset, timestamp=ts + 2, partition_leader_epoch=epoch), 1)
        else:
            add(encode_batch_v2([(b"k%d" % i, b"v" * 300, [], ts)], base_offset=offset, partition_leader_epoch=epoch), 1)
    if pending:
        w.append(pending[:])
    w.close(preallocate=preallocate)
    return w


def random_partition(d: str, rnd, batches: int, *, marker_every: int, max_records: int, max_value: int,
                     compression: str = "none", append_time: bool = False, **writer_kwargs) -> tuple[int, int]:
    """A partition of random v2 batches (timestamps out of order, a gap in the offsets now and
    then as compaction leaves, a COMMIT marker every ``marker_every``, LogAppendTime or not):
    (the next offset, the last append time)."""
    from kgtool.codec.batch import LOG_APPEND_TIME

    w = PartitionWriter(d, **writer_kwargs)
    offset, t = 0, TS
    for i in range(batches):
        t += rnd.randrange(0, 900)
        if i % marker_every == 5:
            w.append(encode_end_txn_marker(commit=True, producer_id=3, producer_epoch=0, coordinator_epoch=1,
                                           base_offset=offset, timestamp=t))
            offset += 1
            continue
        n = rnd.randrange(1, max_records + 1)
        recs = [(b"k", b"v" * rnd.randrange(0, max_value), [], t + rnd.randrange(-3000, 3000)) for _ in range(n)]
        kw = {"timestamp_type": LOG_APPEND_TIME, "log_append_time": t} if append_time else {}
        w.append(encode_batch_v2(recs, base_offset=offset, compression=compression, **kw))
        offset += n + (rnd.randrange(0, 3) if i % 5 == 0 else 0)
    w.close()
    return offset, t


def broker_dir(tmp_path, name: str = "orders-3", **kwargs) -> str:
    """``tmp_path/logs/<name>``: a partition directory in a broker log directory."""
    d = os.path.join(str(tmp_path), "logs", name)
    busy_partition(d, **kwargs)
    return d


def copy_dir(src: str, dst: str) -> str:
    shutil.copytree(src, dst)
    return dst


def files(d: str, suffix: str) -> list[str]:
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(suffix))


def damaged_copy(partition: str, dest: str, which: int | None = None):
    """``partition`` copied to ``dest``, a byte of the records of one data batch of its first
    segment flipped (the ``which``-th, else the middle one): its CRC no longer checks out.
    Returns (the segment's path, the batch as it was read)."""
    from kgtool.storage.files import list_segments

    shutil.copytree(partition, dest)
    seg = list_segments(dest)[0].log
    batches = [b for b in scan_file(seg) if not b.is_control]
    victim = batches[len(batches) // 2 if which is None else which]
    with open(seg, "r+b") as fh:
        fh.seek(victim.position + victim.size_in_bytes - 2)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    return seg, victim
