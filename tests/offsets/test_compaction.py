"""Compacted ``__consumer_offsets`` logs: Kafka-made logs cleaned as Kafka's cleaner cleans them
(tests/offsets/cleaner.py), audited with and without ``cleaner-offset-checkpoint``.

- the final groups, members and offsets equal the uncleaned log's;
- ``compacted_below_offset`` is the checkpoint's offset with the file, and without it at least
  past the last offset the cleaner removed and at most the checkpoint;
- no history finding judges evidence below it;
- ``--until`` inside the cleaned range marks the state rows ``exact = false``, above it they are
  exact and equal the uncleaned log's state at that instant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgtool.codec import scan_file
from kgtool.codec.model import RecordBatch
from kgtool.offsets.columns import KeyTable, decode_commit_chunks
from kgtool.offsets.compaction import CompactionWatch, read_cleaner_checkpoint
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.tables import COMPARING_RULES, HISTORY_RULES
from tests.offsets.cleaner import DELETE_RETENTION_MS, clean, read_log, write_checkpoint, write_partition

ROOT = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted([*ROOT.glob("kip848/*/00000000000000000000.log"), *ROOT.glob("kafka44/coordinator/*/00000000000000000000.log"),
               *ROOT.glob("offsets/*/00000000000000000000.log")])
DAY = 86_400_000

#: cleaning plans: (fraction of the segments below the first uncleanable one, days after the
#: log's last record the round runs) per round; a second round past a day drops tombstones
PLANS = {
    "half": [(0.5, 0)],
    "most": [(0.9, 0)],
    "two-rounds-past-horizon": [(0.3, 0), (0.8, 2)],
    "three-rounds": [(0.2, 0), (0.5, 0), (0.95, 3)],
}


def replay(paths: list[str], options: AuditOptions = AuditOptions()) -> PartitionReplay:
    """The audit's own path: commit columns in chunks, every segment in order, read to the end
    or, after --until's cut, as far as the replay asks."""
    keys = KeyTable()
    rp = PartitionReplay(0, options)
    chunks = (c for p in paths for c in decode_commit_chunks(Path(p).read_bytes(), source=p, log_partition=0, keys=keys))
    rp.cover.whole = not any(rp.read(c, keys) for c in chunks)
    rp.finish()
    return rp


def state(rp: PartitionReplay) -> tuple[list, list, list]:
    """The state tables without where their records sit (a cleaned log moves them)."""
    skip = {"position", "source", "state_since", "exact"}

    def canon(rows):
        return sorted(tuple(sorted((k, repr(v)) for k, v in r.items() if k not in skip)) for r in rows)

    return canon(rp.group_rows), canon(rp.group_member_rows), canon(rp.offset_rows)


def cleaned(log_path: Path, plan: list[tuple[float, int]], tmp: Path, checkpoint: bool) -> tuple[list[str], int, set[int]]:
    """The log cleaned by ``plan`` into ``tmp/logs/__consumer_offsets-0``: its segments, the
    cleaner's checkpoint, and the offsets it removed."""
    batches = [b for b in scan_file(str(log_path)) if isinstance(b, RecordBatch)]
    per_segment = max(1, len(batches) // 12)
    log = read_log(str(log_path), per_segment)
    last_ts = max(b.max_timestamp for b in batches)
    for frac, days in plan:
        n = len(log.segments)
        k = max(1, min(n - 1, round(n * frac)))
        clean(log, k, last_ts + days * DAY)
    directory = tmp / "logs" / "__consumer_offsets-0"
    paths = write_partition(log, str(directory))
    if checkpoint:
        write_checkpoint(str(tmp / "logs"), {("__consumer_offsets", 0): log.checkpoint})
    before = {r.offset for b in batches for r in b.records}
    after = {r.offset for p in paths for b in scan_file(p) if isinstance(b, RecordBatch) for r in b.records}
    return paths, log.checkpoint, before - after


def checkpoint_options(tmp: Path) -> AuditOptions:
    found, warnings = read_cleaner_checkpoint(str(tmp / "logs" / "cleaner-offset-checkpoint"),
                                              (tmp / "logs" / "cleaner-offset-checkpoint").read_bytes())
    assert not warnings
    return AuditOptions(cleaner_checkpoints=tuple((p, c.offset, c.path, c.line) for p, c in found.items()))


CASES = [pytest.param(log, plan, id=f"{log.parent.name}-{plan}") for log in LOGS for plan in PLANS]


@pytest.mark.parametrize(("log", "plan"), CASES)
def test_a_cleaned_log_keeps_the_final_state_and_says_how_far_it_is_cleaned(log, plan, tmp_path):
    paths, checkpoint, removed = cleaned(log, PLANS[plan], tmp_path, checkpoint=True)
    plain = replay([str(log)])
    by_log = replay(paths)
    by_checkpoint = replay(paths, checkpoint_options(tmp_path))
    assert state(by_log) == state(plain) == state(by_checkpoint)
    assert plain.coverage()["compacted_below_offset"] is None  # Kafka's own logs: never cleaned
    cov = by_checkpoint.coverage()
    assert (cov["compacted_below_offset"], cov["compaction_source"]) == (checkpoint, "checkpoint")
    cov = by_log.coverage()
    if removed:
        # at least past the last offset removed, at most the checkpoint
        assert cov["compaction_source"] == "log"
        assert max(removed) < cov["compacted_below_offset"] <= checkpoint
    # the coverage counts every offset from the first segment's base: held or absent
    assert cov["records"] + cov["offsets_absent"] == cov["last_offset"] + 1
    for rp in (by_log, by_checkpoint):
        below = rp.coverage()["compacted_below_offset"]
        time = rp.coverage()["compacted_below_time"]
        if below is None:
            continue
        first_at = min((r.timestamp for p in paths for b in scan_file(p) if isinstance(b, RecordBatch)
                        for r in b.records if r.offset >= below), default=None)
        assert time == first_at
        for f in rp.findings:
            if f["rule"] in HISTORY_RULES:
                assert f["record_offset"] >= below, f
                if f["rule"] in COMPARING_RULES:  # the earlier commit it compares with
                    assert f["previous_record_offset"] is None or f["previous_record_offset"] >= below, f


@pytest.mark.parametrize(("log", "plan"), [c for c in CASES if "half" in c.id or "three" in c.id])
def test_until_inside_the_cleaned_range_is_not_exact(log, plan, tmp_path):
    paths, checkpoint, removed = cleaned(log, PLANS[plan], tmp_path, checkpoint=False)
    if not removed:  # nothing gone (every record below the point was its key's latest)
        assert replay(paths).coverage()["compacted_below_offset"] is None
        t = min(b.max_timestamp for p in paths for b in scan_file(p) if isinstance(b, RecordBatch))
        assert replay(paths, AuditOptions(until=t + 1)).exact is True
        return
    write_checkpoint(str(tmp_path / "logs"), {("__consumer_offsets", 0): checkpoint})
    records = sorted((r.offset, r.timestamp) for p in paths for b in scan_file(p) if isinstance(b, RecordBatch)
                     for r in b.records)
    stamps = sorted({t for _o, t in records})
    # what is exact: the cut (the first record stamped at or after T) past every record below
    # the checkpoint; without it, kgtool's bound may be later (never earlier)
    below_ck = [t for o, t in records if o < checkpoint]
    first_ck = next((t for o, t in records if o >= checkpoint), None)
    truly = (max(below_ck) + 1 if below_ck else None, first_ck)
    names = replay([str(log)]).shard.topic_names.names  # every name the whole log gives
    for options in (AuditOptions(), checkpoint_options(tmp_path)):
        full = replay(paths, options)
        earliest = full.compaction.exact_from()
        if options.cleaner_checkpoints:
            assert earliest == (max(x for x in truly if x is not None) if truly[1] is not None else
                                max(t for _o, t in records) + 1)
        else:
            assert earliest >= (truly[0] or 0)
        inside = [t for t in stamps if t < earliest]
        above = [t for t in stamps if t >= earliest]
        assert inside
        for t in inside[len(inside) // 2:len(inside) // 2 + 1] + inside[-1:]:
            at = replay(paths, AuditOptions(until=t, cleaner_checkpoints=options.cleaner_checkpoints))
            assert at.exact is False
            assert all(r["exact"] is False for r in (*at.group_rows, *at.group_member_rows, *at.offset_rows))
        for t in above[:1] + above[len(above) // 2:len(above) // 2 + 1]:
            at = replay(paths, AuditOptions(until=t, cleaner_checkpoints=options.cleaner_checkpoints))
            assert at.exact is True
            assert all(r["exact"] is True for r in (*at.group_rows, *at.offset_rows))
            # topic names aside (the commits that named a topic before T may be gone; those after
            # it name it), the state at T is the uncleaned log's
            named = AuditOptions(until=t, cleaner_checkpoints=options.cleaner_checkpoints,
                                 topic_names=tuple(sorted(names.items())))
            assert state(replay(paths, named)) == state(replay([str(log)], AuditOptions(
                until=t, topic_names=named.topic_names))), t
            # and a topic the log names anywhere is named in the cleaned log's state at T
            for r in at.group_member_rows:
                for tp in (r.get("assigned") or []):
                    assert tp.rsplit("-", 1)[0] not in names, (t, r["member_id"], tp)


@pytest.mark.parametrize(("log", "plan"), [c for c in CASES if c.id.startswith(("r0", "n1", "s0"))])
def test_a_cleaned_log_reports_no_finding_the_uncleaned_log_does_not(log, plan, tmp_path):
    """With the checkpoint: every finding of the cleaned log is one of the uncleaned log's (a
    storm that starts below the cleaned range is reported from its offset above it, saying so),
    and none of the uncleaned log's findings above the cleaned range is lost."""
    paths, _checkpoint, _removed = cleaned(log, PLANS[plan], tmp_path, checkpoint=True)
    plain = replay([str(log)])
    rp = replay(paths, checkpoint_options(tmp_path))
    below = rp.coverage()["compacted_below_offset"] or 0

    def key(f):
        return (f["rule"], f["group"], f["record_offset"], f["topic"], f["partition"])

    want = {key(f) for f in plain.findings}
    for f in rp.findings:
        if f["rule"] == "rebalance-storm" and key(f) not in want:
            assert "above the cleaned range" in f["message"] or "may have begun earlier" in f["message"], f
            assert any(g["rule"] == f["rule"] and g["group"] == f["group"] for g in plain.findings)
        else:
            assert key(f) in want, f
    got = {key(f) for f in rp.findings}
    for f in plain.findings:
        if f["rule"] != "rebalance-storm" and f["record_offset"] is not None and f["record_offset"] >= below:
            assert key(f) in got, f


def test_uncleaned_logs_show_no_compaction():
    for log in LOGS:
        cov = replay([str(log)]).coverage()
        assert (cov["compacted_below_offset"], cov["compacted_below_time"], cov["compaction_source"]) == (None,) * 3
        assert cov["offsets_absent"] == 0, log


def test_a_tombstone_is_dropped_only_past_its_delete_horizon(tmp_path):
    """The cleaner's delete horizon: kept (and marked) in the first round, gone a day later."""
    log = next(p for p in LOGS if "n12" in str(p))  # offsets deleted and expired: tombstones
    batches = [b for b in scan_file(str(log)) if isinstance(b, RecordBatch)]
    last_ts = max(b.max_timestamp for b in batches)
    tomb = {r.offset for b in batches for r in b.records if r.value is None}
    assert tomb
    lg = read_log(str(log), max(1, len(batches) // 6))
    clean(lg, len(lg.segments) - 2, last_ts)
    kept = {r.offset for s in lg.segments[:1] for b, _ in s.batches for r in b.records if r.value is None}
    horizons = [b for s in lg.segments for b, _ in s.batches if b.delete_horizon_ms is not None]
    assert kept and horizons and all(b.delete_horizon_ms == last_ts + DELETE_RETENTION_MS for b in horizons)
    clean(lg, len(lg.segments) - 1, last_ts + 2 * DAY)  # a later round, with new dirty segments
    later = {r.offset for s in lg.segments[:1] for b, _ in s.batches for r in b.records if r.value is None}
    assert not later & kept
    paths = write_partition(lg, str(tmp_path / "__consumer_offsets-0"))
    assert state(replay(paths)) == state(replay([str(log)]))


@pytest.mark.parametrize(("text", "why"), [
    ("0\n1\n__consumer_offsets 0 x\n", "malformed line 3"),
    ("1\n1\n__consumer_offsets 0 5\n", "unrecognised version 1"),
    ("0\n2\n__consumer_offsets 0 5\n", "expected 2 entries, found 1"),
    ("", "empty"),
])
def test_a_checkpoint_that_does_not_parse_is_a_warning_naming_the_file(text, why, tmp_path):
    path = tmp_path / "cleaner-offset-checkpoint"
    path.write_text(text)
    found, warnings = read_cleaner_checkpoint(str(path), path.read_bytes())
    assert len(warnings) >= 1 and str(path) in warnings[0] and why in warnings[0], warnings
    assert "the log's own signs of cleaning are used" in warnings[0]
    if why != "malformed line 3":
        assert found == {}


def test_a_checkpoint_outside_the_log_is_a_warning_and_the_log_decides(tmp_path):
    log = next(p for p in LOGS if "n01" in str(p))
    paths, checkpoint, removed = cleaned(log, PLANS["half"], tmp_path, checkpoint=False)
    assert removed
    last = max(r.offset for p in paths for b in scan_file(p) if isinstance(b, RecordBatch) for r in b.records)
    sign = replay(paths).coverage()["compacted_below_offset"]
    assert sign > 1
    write_checkpoint(str(tmp_path / "logs"), {("__consumer_offsets", 0): last + 50})
    rp = replay(paths, checkpoint_options(tmp_path))
    cov = rp.coverage()
    assert cov["compaction_source"] == "log" and cov["compacted_below_offset"] <= checkpoint
    (w,) = rp.compaction.warnings
    assert "cleaner-offset-checkpoint: line 3" in w and "past the end of the log read" in w
    # a checkpoint below the log's signs (older than the segments?): kept, with a warning, and
    # --until exact only past both bounds
    write_checkpoint(str(tmp_path / "logs"), {("__consumer_offsets", 0): sign - 1})
    rp = replay(paths, checkpoint_options(tmp_path))
    assert (rp.coverage()["compacted_below_offset"], rp.coverage()["compaction_source"]) == (sign - 1, "checkpoint")
    (w,) = rp.compaction.warnings
    assert "the log shows cleaning up to offset" in w and "the checkpoint is used" in w
    assert rp.compaction.exact_from() >= replay(paths).compaction.exact_from()


def test_signs_of_cleaning_in_batch_headers():
    """Each sign alone: a cleaned batch (fewer records than offsets), an empty batch, a delete
    horizon, a segment whose first records are gone."""
    from kgtool.codec import encode_batch_v2

    def watch(data: bytes, source: str = "00000000000000000000.log") -> CompactionWatch:
        w = CompactionWatch()
        for chunk in decode_commit_chunks(data, source=source, log_partition=0, keys=KeyTable()):
            w.add(chunk)
        return w

    from kgtool.coordinator.records import encode_offsets_record

    k, v = encode_offsets_record("offset_commit", {"group": "g", "topic": "t", "partition": 0},
                                 {"offset": 7, "leader_epoch": -1, "metadata": "", "commit_timestamp": 5})
    rec = [{"offset": 0, "key": k, "value": v, "timestamp": 5}]
    whole = encode_batch_v2(rec, base_offset=0) + encode_batch_v2(
        [{**rec[0], "offset": 1, "timestamp": 6}], base_offset=1)
    assert watch(whole).result() == (None, None, None)
    holes = encode_batch_v2(rec, base_offset=0, last_offset_delta=4) + encode_batch_v2(
        [{**rec[0], "offset": 5, "timestamp": 9}], base_offset=5)
    assert watch(holes).result() == (5, 9, "log")
    empty = encode_batch_v2([], base_offset=0, last_offset_delta=2, base_timestamp=3, max_timestamp=3,
                            producer_id=7, producer_epoch=0) + encode_batch_v2(
        [{**rec[0], "offset": 3, "timestamp": 8}], base_offset=3)
    w = watch(empty)
    assert w.result() == (3, 8, "log") and w.empty_batches == 1
    horizon = encode_batch_v2([{**rec[0], "value": None}], base_offset=0, delete_horizon_ms=99) + encode_batch_v2(
        [{**rec[0], "offset": 1, "timestamp": 7}], base_offset=1)
    w = watch(horizon)
    assert w.result() == (1, 7, "log") and w.horizon_batches == 1
    late = encode_batch_v2([{**rec[0], "offset": 40, "timestamp": 4}], base_offset=40)
    assert watch(late, "00000000000000000010.log").result() == (40, 4, "log")


def test_a_stretch_that_does_not_decode_is_no_sign_of_cleaning(tmp_path):
    """A corrupted batch (CRC mismatch) is skipped and counted as a problem: the offsets it held
    are unknown, not cleaned, whether it starts the segment or sits inside it."""
    log = next(p for p in LOGS if "n01" in str(p))
    data = bytearray(log.read_bytes())
    batches = [b for b in scan_file(str(log)) if isinstance(b, RecordBatch)]
    for victim in (batches[0], batches[len(batches) // 2]):
        bad = bytearray(data)
        bad[victim.position + 40] ^= 0xFF  # inside the CRC-covered part
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(bytes(bad))
        rp = replay([str(path)])
        assert rp.problem_count == 1
        assert rp.coverage()["compacted_below_offset"] is None
