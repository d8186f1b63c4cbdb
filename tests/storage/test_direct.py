"""Segments read whole around the page cache (kgtool.storage.direct): the same answers as through
the mappings, each segment read once for both kinds of question and at most LEASES at a time,
buffers given back and reused, and the mapping whenever O_DIRECT is refused, the file is shorter
than said, the segment is cached already or asked about in small parts."""

from __future__ import annotations

import errno
import mmap
import os
import struct

import numpy as np
import pytest

from kgtool.codec import scan_file
from kgtool.storage import direct
from kgtool.storage import list_offsets as lo
from kgtool.storage.files import list_segments
from kgtool.storage.list_offsets import LEASES, PartitionLog
from tests.storage.dirs import TS, busy_partition

COMPILED = lo._speedups is not None  # without the walks, nothing is planned nor read whole


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("p") / "orders-3")
    busy_partition(d).close()
    return d


def _o_direct(path: str) -> bool:
    """Whether this file system opens ``path`` with O_DIRECT (tmpfs does not)."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
        return True
    except OSError:
        return False


def _questions(d: str) -> tuple[np.ndarray, np.ndarray]:
    """Every instant and offset of the partition and around it: each segment asked about whole."""
    recs = [(r.offset, r.timestamp) for seg in list_segments(d) for b in scan_file(seg.log) for r in b.records]
    times = np.array(sorted({ts for _, ts in recs if ts is not None} | {TS - 1}), np.int64)
    return times, np.arange(-1, max(o for o, _ in recs) + 3, dtype=np.int64)


def _answers(log: PartitionLog, times: np.ndarray, offs: np.ndarray) -> tuple[list, list]:
    ends, stamps, known = log.ends_and_stamps(times, offs)
    return ends.tolist(), [int(s) if k else None for s, k in zip(stamps, known)]


@pytest.fixture
def reads(monkeypatch):
    """Every segment taken as cold; each whole read recorded, with the leases held at its time."""
    monkeypatch.setattr(direct, "cached_share", lambda data: 0.0)
    seen: list[tuple[str, int]] = []
    real = direct.read_whole

    def read_whole(path: str, size: int):
        lease = real(path, size)
        seen.append((path, lease is not None))
        return lease

    monkeypatch.setattr(direct, "read_whole", read_whole)
    return seen


def test_cold_segments_read_whole_answer_as_their_mappings(partition, reads, monkeypatch):
    times, offs = _questions(partition)
    with monkeypatch.context() as m:
        m.setattr(direct, "worth_reading_whole", lambda data, wanted: False)
        ref = PartitionLog(partition)
        want = _answers(ref, times, offs)
    assert not reads
    log = PartitionLog(partition)
    held: list[int] = []
    sweep = log._sweep

    def counted(k, *a):
        out = sweep(k, *a)
        held.append(len(log._leases))
        return out

    log._sweep = counted
    log.prefetch(times, offs)
    assert _answers(log, times, offs) == want
    nseg = len(log.segments)
    assert nseg > LEASES  # the bound is met, not just never reached
    if not COMPILED:
        assert not reads and not log._leases
        return
    assert all(log._whole.values()) and len(log._whole) == nseg
    # each segment read once, for both kinds of question (the walks go segment by segment)
    assert sorted(p for p, _ok in reads) == sorted(s.log for s in log.segments)
    if _o_direct(log.segments[0].log):
        assert all(ok for _p, ok in reads) and 0 < max(held) <= LEASES
        leased = dict(log._leases)
        log.close()
        assert not log._leases
        assert all(log._open[k].data is mapping for k, (_lease, mapping) in leased.items())
    else:  # refused: the mappings, the kernel asked for them whole
        assert not any(ok for _p, ok in reads) and not log._leases and not any(log._whole.values())
    assert _answers(log, times, offs) == want  # after close, through the mappings


def test_o_direct_refused_reads_through_the_mapping(partition, reads, monkeypatch):
    times, offs = _questions(partition)
    want = _answers(PartitionLog(partition), times, offs)
    reads.clear()
    real_open = os.open

    def no_direct(path, flags, *a):
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "O_DIRECT", path)
        return real_open(path, flags, *a)

    monkeypatch.setattr(direct.os, "open", no_direct)
    log = PartitionLog(partition)
    log.prefetch(times, offs)
    assert _answers(log, times, offs) == want
    assert not log._leases and not any(log._whole.values())
    assert all(not ok for _p, ok in reads) and (len(reads) == len(log.segments) if COMPILED else not reads)


def test_buffers_go_back_to_the_pool_and_are_reused(partition):
    seg = list_segments(partition)[0].log
    if not _o_direct(seg):
        assert direct.read_whole(seg, os.path.getsize(seg)) is None  # the caller maps it
        return
    size = os.path.getsize(seg)
    with open(seg, "rb") as fh:
        data = fh.read()
    first = direct.read_whole(seg, size)
    assert first is not None and bytes(first.view) == data and len(first.view) == size
    buf = first._buffer
    first.release()
    first.release()  # twice: nothing more
    assert first.view is None and buf in direct._idle
    again = direct.read_whole(seg, size)
    assert again is not None and again._buffer is buf and bytes(again.view) == data
    held = struct.iter_unpack("B", again.view)  # holds the bytes (as a walk on another thread would)
    again.release()
    assert buf not in direct._idle
    del held
    # a file shorter than said (cut while read): no lease; the buffer taken goes back
    assert direct.read_whole(seg, size + 3 * mmap.PAGESIZE) is None
    assert any(len(b) >= size + 3 * mmap.PAGESIZE for b in direct._idle) and len(direct._idle) <= direct.KEEP


def test_cached_or_sparsely_asked_segments_keep_their_mappings(partition, monkeypatch):
    log = PartitionLog(partition)
    data = log._seg(0).data
    assert isinstance(data, mmap.mmap)
    share = direct.cached_share(data)
    assert share is not None and share > direct.CACHED_SHARE  # just written: in the page cache
    assert not direct.worth_reading_whole(data, len(data))
    assert direct.cached_share(b"bytes") is None
    monkeypatch.setattr(direct, "cached_share", lambda d: 0.0)
    assert direct.worth_reading_whole(data, len(data))
    assert not direct.worth_reading_whole(data, int(len(data) * direct.WHOLE_SHARE) - 1)
    monkeypatch.setattr(direct, "MAX_BYTES", len(data) - 1)
    assert not direct.worth_reading_whole(data, len(data))
