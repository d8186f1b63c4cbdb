"""ListOffsets offline (kgtool.lag.list_offsets): end(T) against a plain scan of every record,
at every instant that matters, with and without indexes; the timestamp at an offset; copies."""

from __future__ import annotations

import os
import shutil

import pytest

from kgtool.codec import scan_file
from kgtool.storage.files import list_segments
from kgtool.lag.list_offsets import PartitionLog, choose_copy
from tests.storage.dirs import TS, busy_partition, damaged_copy


def _records(d):
    """(offset, timestamp) of every record, control markers too (FileRecords.searchForTimestamp
    reads control batches like any other)."""
    return [(r.offset, r.timestamp) for seg in list_segments(d) for b in scan_file(seg.log) for r in b.records]


def _scan_end(records, leo, t):
    """The definition: the first offset (in offset order) whose record timestamp is >= t."""
    for off, ts in records:
        if ts is not None and ts >= t:
            return off
    return leo


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("p") / "orders-3")
    busy_partition(d).close()
    return d


def test_end_at_every_instant_equals_a_scan(partition):
    log = PartitionLog(partition)
    recs = _records(partition)
    leo = max(o for o, _ in recs) + 1
    assert log.log_end_offset == leo
    stamps = sorted({ts for _, ts in recs if ts is not None})
    instants = {TS - 10_000, stamps[-1] + 1} | set(stamps) | {t - 1 for t in stamps} | {t + 1 for t in stamps}
    for t in sorted(instants):
        assert log.end_at(t) == _scan_end(recs, leo, t), t
    assert not log.notes  # the indexes were used, and they are sound


def test_without_indexes_the_segments_are_scanned_with_a_note(partition, tmp_path):
    d = str(tmp_path / "orders-3")
    shutil.copytree(partition, d)
    for name in os.listdir(d):
        if name.endswith((".index", ".timeindex")):
            os.remove(os.path.join(d, name))
    log, ref = PartitionLog(d), PartitionLog(partition)
    for t in range(TS - 5000, TS + 250_000, 3333):
        assert log.end_at(t) == ref.end_at(t)
    assert any("no time index" in n or "no offset index" in n for n in log.notes)


def test_timestamp_at_an_offset_is_the_next_record_read(partition):
    log = PartitionLog(partition)
    data = [(r.offset, r.timestamp) for seg in list_segments(partition) for b in scan_file(seg.log)
            if not b.is_control for r in b.records]
    for off in range(0, log.log_end_offset + 1):
        want = next((ts for o, ts in data if o >= off), None)  # markers are not read by consumers
        assert log.timestamp_at(off) == want, off


def test_the_longest_copy_is_read_and_the_others_are_behind(partition, tmp_path):
    leader = str(tmp_path / "b1" / "orders-3")
    follower = str(tmp_path / "b2" / "orders-3")
    shutil.copytree(partition, leader)
    shutil.copytree(partition, follower)
    segs = list_segments(follower)
    last = segs[-1].log
    data = open(last, "rb").read()
    b = [x for x in scan_file(last)][-3]  # the follower misses the last two batches
    with open(last, "wb") as fh:
        fh.write(data[:b.position + b.size_in_bytes])
    choice = choose_copy([follower, leader])
    assert choice.chosen.directory == leader
    ((d, behind),) = choice.behind
    assert d == follower and behind == PartitionLog(leader).log_end_offset - (b.last_offset + 1) > 0
    assert choice.problems == []


def test_copies_that_disagree_are_a_problem_naming_both(partition, tmp_path):
    a = str(tmp_path / "b1" / "orders-3")
    c = str(tmp_path / "b2" / "orders-3")
    shutil.copytree(partition, a)
    shutil.copytree(partition, c)
    last = list_segments(c)[-1].log
    b = [x for x in scan_file(last)][-1]
    data = bytearray(open(last, "rb").read())
    data[b.position + 17] ^= 0xFF  # another CRC: another batch at that offset
    with open(last, "wb") as fh:
        fh.write(data)
    choice = choose_copy([a, c])
    assert choice.chosen.directory == a and choice.behind == [(c, 0)]
    ((file, position, p),) = choice.problems
    assert a in p and c in p and f"offset {b.base_offset}" in p
    assert file == last and position == b.position


def test_a_damaged_data_segment_is_a_problem_not_a_silent_log_end(tmp_path):
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"garbage-not-kafka")
    log = PartitionLog(str(d))
    assert log.log_end_offset == 0
    ((file, position, text),) = log.problems
    assert file.endswith("00000000000000000000.log") and position == 0 and text.startswith("corrupt (batch@0")


def test_a_truncated_tail_is_an_active_segment_not_a_problem(partition, tmp_path):
    d = str(tmp_path / "orders-3")
    shutil.copytree(partition, d)
    last = list_segments(d)[-1].log
    with open(last, "r+b") as fh:
        fh.truncate(os.path.getsize(last) - 10)
    log = PartitionLog(d)
    assert log.problems == [] and log.log_end_offset < PartitionLog(partition).log_end_offset


# ---- many questions at once: PartitionLog.ends_at / stamps_at (the C walk, _seek.h) ----------------

def _sweep_equals_one_by_one(d: str, instants, offsets) -> None:
    import numpy as np

    one, many = PartitionLog(d), PartitionLog(d)
    times = np.array(sorted(set(instants)), np.int64)
    assert many.ends_at(times).tolist() == [one.end_at(int(t)) for t in times]
    offs = np.array(sorted(set(offsets)), np.int64)
    stamps, known = many.stamps_at(offs)
    want = [one.timestamp_at(int(o)) for o in offs]
    assert [int(s) if k else None for s, k in zip(stamps, known)] == want
    assert sorted(set(many.notes)) == sorted(set(one.notes))


def test_the_sweep_answers_as_one_question_at_a_time(partition):
    recs = _records(partition)
    stamps = sorted({ts for _, ts in recs if ts is not None})
    instants = {TS - 10_000, stamps[-1] + 1} | set(stamps) | {t - 1 for t in stamps} | {t + 1 for t in stamps}
    _sweep_equals_one_by_one(partition, instants, range(-1, max(o for o, _ in recs) + 3))


def test_the_sweep_with_a_wrong_index_entry_or_no_index_declines_to_python(partition, tmp_path):
    import struct

    broken = str(tmp_path / "broken" / "orders-3")
    shutil.copytree(partition, broken)
    ti = sorted(f for f in os.listdir(broken) if f.endswith(".timeindex"))[0]
    with open(os.path.join(broken, ti), "r+b") as fh:  # entry 1's timestamp no longer its batch's
        fh.seek(12)
        ts, rel = struct.unpack(">qi", fh.read(12))
        fh.seek(12)
        fh.write(struct.pack(">qi", ts - 1, rel))
    gone = str(tmp_path / "gone" / "orders-3")
    shutil.copytree(partition, gone)
    for name in os.listdir(gone):
        if name.endswith((".index", ".timeindex")):
            os.remove(os.path.join(gone, name))
    for d in (broken, gone):
        _sweep_equals_one_by_one(d, range(TS - 5000, TS + 250_000, 777), range(0, 400, 3))
    log = PartitionLog(broken)
    log.ends_at(__import__("numpy").arange(TS - 5000, TS + 250_000, 777))
    assert any("does not match the log" in n for n in log.notes)


@pytest.mark.parametrize("compression", ["none", "gzip", "lz4"])
@pytest.mark.parametrize("append_time", [False, True])
def test_the_sweep_on_random_partitions(tmp_path, compression, append_time):
    """Random batches (timestamps out of order, gaps, markers, LogAppendTime, compression): the
    walk answers or declines, never differs."""
    import random

    from tests.storage.dirs import random_partition

    rnd = random.Random(f"{compression}{append_time}")
    d = str(tmp_path / "t-0")
    offset, t = random_partition(d, rnd, 300, marker_every=17, max_records=5, max_value=200, compression=compression,
                                 append_time=append_time, segment_bytes=6_000)
    _sweep_equals_one_by_one(d, range(TS - 4000, t + 4000, 97), range(-2, offset + 3))


def test_the_walk_itself_answers_plain_batches(partition):
    """On sound indexes and plain v2 batches nothing is handed back to Python (the walk resumes
    within a batch for a larger key, across batches with its cursor)."""
    import numpy as np

    from kgtool.lag import list_offsets as lo

    if lo._speedups is None:
        pytest.skip("the compiled extension is not built")
    log = PartitionLog(partition)
    first = len(log.segments) and log.segments[0].base_offset
    keys = np.arange(first, log.segments[1].base_offset if len(log.segments) > 1 else log.log_end_offset,
                     dtype=np.int64)
    starts, soffs = log._starts(0, keys)
    none = np.full(len(keys), -1, np.int64)
    got = np.frombuffer(lo._speedups.seek_sweep(log._seg(0).data, 1, keys, starts, soffs, none, none), np.int64)
    assert (got != lo.ASK_PYTHON).all()
    assert got.tolist() == [log.timestamp_at(int(k)) for k in keys]


def test_a_batch_asked_about_that_does_not_decode_is_a_problem_naming_it(partition, tmp_path):
    """A CRC that does not check out in a batch a question lands in: the answer comes from the
    batches after it, as the one-at-a-time reader gives it, and the damage is named (file, byte)."""
    import numpy as np

    d = str(tmp_path / "orders-3")
    seg, victim = damaged_copy(partition, d)  # a byte of its records: the CRC no longer checks out
    one, many = PartitionLog(d), PartitionLog(d)
    offs = np.arange(victim.base_offset - 2, victim.last_offset + 3, dtype=np.int64)
    stamps, known = many.stamps_at(offs)
    assert [int(s) if k else None for s, k in zip(stamps, known)] == [one.timestamp_at(int(o)) for o in offs]
    for log in (one, many):
        assert [(f, p) for f, p, _w in log.damage()] == [(seg, victim.position)]
        assert "does not decode" in log.damage()[0][2]


def test_prefetched_questions_and_batches_checked_once_give_the_same_answers(partition, tmp_path):
    """``prefetch`` plans the walks the next ``ends_at`` and ``stamps_at`` of the same arrays
    take; the second walk does not check again a batch the first checked; a batch whose CRC does
    not check out is never taken as checked (both walks name it)."""
    import numpy as np

    d = str(tmp_path / "orders-3")
    seg, victim = damaged_copy(partition, d, 3)
    recs = _records(partition)
    times = np.array(sorted({ts for _, ts in recs if ts is not None} | {TS - 1}), np.int64)
    offs = np.arange(-1, max(o for o, _ in recs) + 3, dtype=np.int64)
    from kgtool.lag import list_offsets as lo

    compiled = lo._speedups is not None  # without it, prefetch plans nothing and Python answers
    one, planned = PartitionLog(d), PartitionLog(d)
    planned.prefetch(times, offs)
    assert set(planned._planned) == ({0, 1} if compiled else set())
    stamps, known = planned.stamps_at(offs)  # in the other order than asked: plans are by kind
    assert planned.ends_at(times).tolist() == [one.end_at(int(t)) for t in times]
    assert [int(s) if k else None for s, k in zip(stamps, known)] == [one.timestamp_at(int(o)) for o in offs]
    assert not planned._planned
    if compiled:
        assert victim.position not in set(np.concatenate(list(planned._checked.values())).tolist())
    assert [(f, p) for f, p, _w in planned.damage()] == [(seg, victim.position)]


def _sparse_partition(d):
    """A partition of 120 batches of about 16 KiB (a producer's batch.size), one a second, as the
    broker indexes them (an entry each, index.interval.bytes 4096)."""
    from tests.storage.writer import PartitionWriter

    value = b"v" * 100
    w = PartitionWriter(d)
    for s in range(120):
        w.records([(b"k%07d" % i, value, [], TS + 1000 * s + i) for i in range(125)])
    w.close()


def test_reads_follow_the_questions(tmp_path, monkeypatch):
    """A few questions of a partition of 16 KiB batches: what the reader asks the kernel for is
    the batches holding the answers and, per question, the header pages of its index entry and
    the next one; never a run of batches no answer is in (issue 42: reads grow with the
    questions, not with the data)."""
    import mmap

    import numpy as np

    from kgtool.codec.model import RecordBatch
    from kgtool.lag import list_offsets as lo
    from kgtool.storage.logview import batch_headers

    if lo._speedups is None or not hasattr(mmap, "MADV_WILLNEED"):
        pytest.skip("the reader asks for pages ahead with the compiled walk and madvise only")
    d = str(tmp_path / "clicks-0")
    _sparse_partition(d)
    (seg,) = list_segments(d)
    batches = [b for b in batch_headers(open(seg.log, "rb").read(), verify_crc=False) if isinstance(b, RecordBatch)]
    page = mmap.PAGESIZE
    asked: set[int] = set()

    def record(data, start, length):
        asked.update(range(start // page, (start + length + page - 1) // page))

    def record_ranges(data, lo_, hi):
        for a, z in zip(lo_.tolist(), hi.tolist()):
            record(data, a, min(z, len(data)) - a)

    monkeypatch.setattr(lo, "_will_need", record)
    monkeypatch.setattr(lo, "_will_need_ranges", record_ranges)
    times = np.array([TS + 10_500, TS + 61_050, TS + 99_999], np.int64)
    offs = np.array([30 * 125 + 7, 80 * 125, 110 * 125 + 124], np.int64)
    log, ref = PartitionLog(d), PartitionLog(d)
    log.prefetch(times, offs)
    ends, stamps, known = log.ends_and_stamps(times, offs)
    assert ends.tolist() == [ref.end_at(int(t)) for t in times]
    assert [int(s) for s in stamps] == [ref.timestamp_at(int(o)) for o in offs] and known.all()

    def pages(b):
        return set(range(b.position // page, (b.position + b.size_in_bytes - 1) // page + 1))

    def holding(o):
        return next(b for b in batches if b.base_offset <= o <= b.last_offset)

    answers = [holding(int(o)) for o in ends] + [holding(int(o)) for o in offs]
    need = set().union(*(pages(b) for b in answers))
    assert need <= asked  # every batch read whole was asked for
    # and little more: a header page (or two, across a page boundary) per question's entries
    assert len(asked - need) <= 2 * 2 * (len(times) + len(offs))
    assert len(asked) * page < 0.2 * os.path.getsize(seg.log)
