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
from tests.storage.dirs import TS, busy_partition, damaged_copy
from tests.twins import have_compiled

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


def _refuse_o_direct(monkeypatch) -> None:
    """The file system refuses O_DIRECT from now on (as tmpfs does: EINVAL)."""
    real_open = os.open

    def no_direct(path, flags, *a):
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "O_DIRECT", path)
        return real_open(path, flags, *a)

    monkeypatch.setattr(direct.os, "open", no_direct)


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
        assert log.read_whole_bytes == sum(os.path.getsize(s.log) for s in log.segments)
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
    _refuse_o_direct(monkeypatch)
    log = PartitionLog(partition)
    log.prefetch(times, offs)
    assert _answers(log, times, offs) == want
    assert not log._leases and not any(log._whole.values()) and log.read_whole_bytes == 0
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


def test_an_arena_carves_arrays_from_the_pool_and_gives_its_buffers_back(monkeypatch):
    """Arrays kept until a task ends come from the pool's buffers (aligned, apart, a larger one
    for a larger array) and go back to it: a segment read whole after reuses a buffer whose
    pages the arena wrote."""
    monkeypatch.setattr(direct, "ARENA_BLOCK", 4 * mmap.PAGESIZE)
    monkeypatch.setattr(direct, "_idle", [])
    arena = direct.Arena()
    a = arena.array(1000, np.uint16)
    b = arena.array(10, np.int64)
    big = arena.array(5 * mmap.PAGESIZE, np.uint8)  # more than a block: a buffer of its own
    a[:] = 7
    b[:] = -1
    big[:] = 1
    assert a.ctypes.data % 64 == 0 and b.ctypes.data % 64 == 0
    assert b.ctypes.data >= a.ctypes.data + a.nbytes  # apart
    assert (a == 7).all() and (b == -1).all() and len(arena._buffers) == 2
    buffers = list(arena._buffers)
    del a, b, big
    arena.release()
    assert arena._buffers == [] and sorted(map(len, direct._idle)) == sorted(map(len, buffers))
    # the next user of the pool (a segment read whole, the next task's arena) takes them
    taken = direct._buffer(3 * mmap.PAGESIZE)
    assert taken is buffers[0] and taken[:2] == bytes([7, 0])  # its pages as the arena left them
    direct._give_back(taken)


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


@pytest.mark.parametrize("sizes", [[0], [8], [1, mmap.PAGESIZE - 1], [mmap.PAGESIZE], [3, direct.CHUNK, 5],
                                   [direct.CHUNK - 7, 7, 0, 2 * direct.CHUNK + 1]])
def test_files_written_whole_hold_their_bytes_exactly(tmp_path, sizes, monkeypatch):
    rng = np.random.default_rng(len(sizes) + sum(sizes))
    parts = [rng.integers(0, 256, n, dtype=np.uint8) for n in sizes]
    parts[0] = bytes(parts[0])  # bytes and arrays alike
    want = b"".join(bytes(p) for p in parts)
    path = str(tmp_path / "x.lag")
    direct.write_whole(path, parts)
    assert os.path.getsize(path) == len(want)  # the padding of the last block cut off
    with open(path, "rb") as fh:
        assert fh.read() == want
    got = direct.read_whole(path, len(want))
    if _o_direct(path):
        assert got is not None and bytes(got.view) == want
        got.release()
    else:
        assert got is None
    assert len(direct._idle) <= direct.KEEP
    # where O_DIRECT is refused: through the page cache, the same bytes
    _refuse_o_direct(monkeypatch)
    direct.write_whole(path, parts)
    with open(path, "rb") as fh:
        assert fh.read() == want
    assert direct.read_whole(path, len(want)) is None


def test_lag_inputs_cross_the_exchange_as_they_are(tmp_path):
    from kgtool.offsets.lag_input import LagInput

    rng = np.random.default_rng(7)
    n = 100_003
    inp = LagInput(3, ["g1", "g2"], group_bounds=np.array([0, 40_000, n], np.int64),
                   when=np.sort(rng.integers(0, 1 << 40, n)), offset=rng.integers(-1, 1 << 33, n),
                   owners=[["m-1", "/10.0.0.1", "c"], ["m-2", None, "c"]], owner_bounds=np.array([0, 2, 3], np.int64),
                   owner_times=np.array([5, 9, 7], np.int64), owner_ids=np.array([0, -1, 1], np.int32),
                   offset_rows={1: {"group": "g2", "offset": 12}})
    inp.write(str(tmp_path), 17)
    other = LagInput(0, [], group_bounds=np.zeros(1, np.int64), when=np.zeros(0, np.int64),
                     offset=np.zeros(0, np.int64), owners=[], owner_bounds=np.zeros(1, np.int64),
                     owner_times=np.zeros(0, np.int64), owner_ids=np.zeros(0, np.int32), offset_rows={})
    other.write(str(tmp_path), 17)
    assert not [f for f in os.listdir(tmp_path / "17") if not f.endswith(".lag")]  # no temporary left
    got = LagInput.read_all(str(tmp_path), 17)
    assert [g.log_partition for g in got] == [0, 3]
    for want, back in zip((other, inp), got):
        assert (back.groups, back.owners, back.offset_rows) == (want.groups, want.owners, want.offset_rows)
        for name, _dt in LagInput._ARRAYS:
            a, b = getattr(want, name), getattr(back, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert LagInput.read_all(str(tmp_path), 18) == []


@pytest.mark.parametrize("shape", ["steps", "deleted", "long gap", "empty runs", "one commit", "wide",
                                   "at the escapes"])
def test_lag_inputs_go_as_steps(tmp_path, shape):
    """About 4 bytes a commit (a run's first instant and offset, then 16-bit steps: uint16 ms,
    int16 offsets), each step that does not fit (a deleted offset, 50 days without a commit,
    steps past 16 bits, steps equal to the escape values themselves) beside, given back exactly."""
    from kgtool.offsets.lag import DELETED
    from kgtool.offsets.lag_input import LagInput

    rng = np.random.default_rng(3)
    sizes = [0, 5, 0, 40_000, 1, 0] if shape == "empty runs" else [1] if shape == "one commit" else [30_000, 1, 12_000]
    when, offset = [], []
    for k in sizes:
        t0 = 1_700_000_000_000 + int(rng.integers(0, 10**9))
        if shape == "wide":  # a third of the steps past 16 bits
            when.append(t0 + np.cumsum(rng.integers(0, 100_000, k)))
            offset.append(int(rng.integers(0, 1 << 40)) + np.cumsum(rng.integers(-50_000, 50_000, k)))
        else:
            when.append(t0 + np.cumsum(rng.integers(0, 5000, k)))
            offset.append(int(rng.integers(0, 1 << 40)) + np.cumsum(rng.integers(-3, 50, k)))
    when, offset = np.concatenate(when).astype(np.int64), np.concatenate(offset).astype(np.int64)
    if shape == "deleted":
        offset[7] = DELETED
        offset[-1] = DELETED
    if shape == "long gap":
        when[20_000:30_000] += 50 * 86_400_000
    if shape == "at the escapes":
        when[100:] += 0xFFFF - (when[100] - when[99])
        offset[200:] += -0x8000 - (offset[200] - offset[199])
    bounds = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=bounds[1:])
    inp = LagInput(2, [f"g{i}" for i in range(len(sizes))], group_bounds=bounds, when=when, offset=offset,
                   owners=[["m", None, "c"]], owner_bounds=np.r_[0, np.full(len(sizes), 1)].astype(np.int64),
                   owner_times=np.array([5], np.int64), owner_ids=np.array([0], np.int32), offset_rows={})
    text, arrays = inp.pack()
    assert '"form":"steps16"' in text
    wide = sum(a.nbytes for a in arrays) - 4 * len(when) - 64 * len(sizes) - 64
    assert wide <= (len(when) * 16 * 2 // 3 if shape == "wide" else 16 * 4)  # the steps that did not fit
    inp.write(str(tmp_path), 0)
    (back,) = LagInput.read_all(str(tmp_path), 0)
    assert back.when.dtype == np.int64 and back.offset.dtype == np.int64 and back.owner_ids.dtype == np.int32
    assert np.array_equal(back.when, when) and np.array_equal(back.offset, offset)
    assert np.array_equal(back.group_bounds, bounds) and back.owner_ids.tolist() == [0]
    if have_compiled("kgtool.offsets._replay"):  # _lag.h's lag_steps16 and the NumPy twin, array for array
        from kgtool.offsets.lag_input import _deltas

        compiled_, pure = _deltas(bounds, when, offset), _deltas(bounds, when, offset, pure=True)
        assert [(a.dtype, a.tolist()) for a in compiled_] == [(a.dtype, a.tolist()) for a in pure]


def test_a_process_holds_at_most_its_budget_read_whole(partition, monkeypatch):
    seg = list_segments(partition)[0].log
    if not _o_direct(seg):
        return  # nothing is read whole there (test_buffers_go_back... checks the refusal)
    size = os.path.getsize(seg)
    held = -(-size // direct.ALIGN) * direct.ALIGN
    monkeypatch.setattr(direct, "_idle", [])  # (an idle buffer lent counts whole: none larger here)
    base = direct._leased
    monkeypatch.setattr(direct, "BUDGET", base + 2 * held)
    first, second = direct.read_whole(seg, size), direct.read_whole(seg, size)
    assert first is not None and second is not None
    assert direct.read_whole(seg, size) is None  # past the budget: the caller maps it
    first.release()
    third = direct.read_whole(seg, size)
    assert third is not None
    for lease in (second, third):
        lease.release()
    assert direct._leased == base
    lost = direct.read_whole(seg, size)  # never released: out of the budget when it goes
    assert direct._leased == base + held
    del lost
    assert direct._leased == base


def test_a_damaged_batch_is_named_alike_when_read_whole(partition, tmp_path, monkeypatch):
    """A batch whose CRC does not check out: the same answers and the same damage, file and
    byte, whether its segment is read whole or through its mapping."""
    d = str(tmp_path / "orders-3")
    seg, victim = damaged_copy(partition, d, 3)
    times, offs = _questions(partition)

    def run() -> tuple:
        log = PartitionLog(d)
        log.prefetch(times, offs)
        got = (_answers(log, times, offs), log.damage(), log.read_whole_bytes)
        log.close()
        return got

    mapped = run()
    monkeypatch.setattr(direct, "cached_share", lambda data: 0.0)
    whole = run()
    assert whole[:2] == mapped[:2] and [(f, p) for f, p, _w in whole[1]] == [(seg, victim.position)]
    assert mapped[2] == 0 and (whole[2] > 0) == (COMPILED and _o_direct(seg))


def test_a_platform_without_o_direct_reads_and_writes_through_the_page_cache(tmp_path, partition, monkeypatch):
    """macOS and Windows have no os.O_DIRECT (Windows no preadv, pwritev or madvise either): the
    lag exchange's files and the segments' reads go through the page cache, never an
    AttributeError, and the lag questions are answered as with it."""
    times, offs = _questions(partition)
    want = _answers(PartitionLog(partition), times, offs)
    monkeypatch.setattr(direct, "cached_share", lambda data: 0.0)  # every segment cold
    monkeypatch.setattr(direct, "O_DIRECT", None)
    monkeypatch.delattr(direct.os, "O_DIRECT", raising=False)
    monkeypatch.delattr(mmap, "MADV_WILLNEED", raising=False)
    path = str(tmp_path / "x.lag")
    direct.write_whole(path, [b"abc", np.arange(5, dtype=np.uint8)])
    with open(path, "rb") as fh:
        assert fh.read() == b"abc" + bytes(range(5))
    assert direct.read_whole(path, 8) is None
    log = PartitionLog(partition)
    log.prefetch(times, offs)
    assert _answers(log, times, offs) == want
    assert not log._leases and log.read_whole_bytes == 0
