"""kgtool.offsets.share_state: the replay of ``__share_group_state`` (Kafka 4.4's
``ShareCoordinatorShard.replay``) and its port of ``PersisterStateBatchCombiner``.

The combiner cases are Kafka's own (``PersisterStateBatchCombinerTest`` at the 4.4 branch head),
plus outputs of the Java class itself on inputs it throws on or that overflow a long (run once
through the compiled Java class; recorded here). The golden segments are Kafka-made
(``fixtures/kafka44/share_state``), each with Kafka's decoding of every record beside it.
"""

from __future__ import annotations

import base64
import glob
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.coordinator.records import CoordinatorRecord, decode_share_state_record, encode_share_state_record
from kgtool.errors import InputError
from kgtool.offsets.share_state import (
    SHARE_PARTITIONS,
    KafkaReplayFailure,
    SharePartitionState,
    ShareStateReplay,
    StateBatch,
    combine_state_batches,
    replay_files,
    rows,
)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "kafka44" / "share_state" / "__share_group_state-7"
SEGMENTS = sorted(str(p) for p in GOLDEN.glob("*.log"))
LMIN, LMAX = -(1 << 63), (1 << 63) - 1

G, T = "g1", "AAAAAAAAAAAAAAAAAAAAAQ"
KEY = {"group_id": G, "topic_id": T, "partition": 3}


def rec(kind: str, value: dict | None, key: dict = KEY):
    """A record as the decoder gives it, from the bytes Kafka would write."""
    return decode_share_state_record(*encode_share_state_record(kind, key, value))


def snap(*, snapshot_epoch=0, state_epoch=0, leader_epoch=0, start_offset=0, dcc=None,
         create_timestamp=1000, write_timestamp=1000, batches=()):
    v = {"snapshot_epoch": snapshot_epoch, "state_epoch": state_epoch, "leader_epoch": leader_epoch,
         "start_offset": start_offset, "create_timestamp": create_timestamp,
         "write_timestamp": write_timestamp, "state_batches": [_b(b) for b in batches]}
    if dcc is not None:
        v["delivery_complete_count"] = dcc
    return rec("share_snapshot", v)


def upd(*, snapshot_epoch=0, leader_epoch=0, start_offset=-1, dcc=None, batches=()):
    v = {"snapshot_epoch": snapshot_epoch, "leader_epoch": leader_epoch, "start_offset": start_offset,
         "state_batches": [_b(b) for b in batches]}
    if dcc is not None:
        v["delivery_complete_count"] = dcc
    return rec("share_update", v)


def _b(b):
    return {"first_offset": b[0], "last_offset": b[1], "delivery_state": b[2], "delivery_count": b[3]}


def state(rp: ShareStateReplay, key: dict = KEY) -> SharePartitionState | None:
    return rp.get(key["group_id"], key["topic_id"], key["partition"])


# ---------------------------------------------------------------------------------------------
# Replay semantics


def test_snapshot_replaces_everything_batches_kept_as_written():
    rp = ShareStateReplay()
    rp.replay(0, 10, snap(snapshot_epoch=1, state_epoch=2, leader_epoch=3, start_offset=100, dcc=7,
                          batches=[(100, 110, 0, 1)]))
    rp.replay(1, 20, snap(snapshot_epoch=2, state_epoch=4, leader_epoch=5, start_offset=200,
                          create_timestamp=1500, write_timestamp=1600,
                          batches=[(250, 260, 2, 1), (200, 255, 0, 3)]))  # overlapping: not combined
    s = state(rp)
    assert (s.snapshot_epoch, s.state_epoch, s.leader_epoch, s.start_offset) == (2, 4, 5, 200)
    assert s.delivery_complete_count == -1  # absent tagged field: its default -1
    assert s.state_batches == (StateBatch(250, 260, 2, 1), StateBatch(200, 255, 0, 3))
    assert (s.create_timestamp, s.write_timestamp) == (1500, 1600)
    assert (s.record_offset, s.timestamp) == (1, 20)
    assert rp.problems == [] and rp.failures == []


def test_update_merges_minus_one_keeps_start_offset_and_leader_epoch():
    rp = ShareStateReplay()
    rp.replay(0, 10, snap(snapshot_epoch=4, state_epoch=2, leader_epoch=7, start_offset=100, dcc=5,
                          create_timestamp=111, write_timestamp=222, batches=[(100, 110, 0, 1)]))
    rp.replay(1, 20, upd(snapshot_epoch=99, leader_epoch=-1, start_offset=-1, dcc=9,
                         batches=[(105, 120, 2, 1)]))
    s = state(rp)
    assert s.start_offset == 100 and s.leader_epoch == 7
    # merge: snapshot epoch, state epoch and timestamps stay the state's; the count is the update's
    assert (s.snapshot_epoch, s.state_epoch, s.create_timestamp, s.write_timestamp) == (4, 2, 111, 222)
    assert s.delivery_complete_count == 9
    # (1, 2) outranks (1, 0) on the overlap
    assert s.state_batches == (StateBatch(100, 104, 0, 1), StateBatch(105, 120, 2, 1))
    assert (s.record_offset, s.timestamp, s.updates_since_snapshot) == (1, 20, 1)


def test_update_start_offset_and_leader_epoch_replace_and_prune():
    rp = ShareStateReplay()
    rp.replay(0, 10, snap(leader_epoch=7, start_offset=100, dcc=5,
                          batches=[(100, 110, 0, 1), (111, 130, 2, 1)]))
    rp.replay(1, 20, upd(leader_epoch=8, start_offset=115, batches=[(131, 140, 0, 2)]))
    s = state(rp)
    assert s.start_offset == 115 and s.leader_epoch == 8
    assert s.delivery_complete_count == -1  # the update's (absent: -1), not the state's
    assert s.state_batches == (StateBatch(115, 130, 2, 1), StateBatch(131, 140, 0, 2))


def test_update_without_state_becomes_the_state():
    rp = ShareStateReplay()
    rp.replay(5, 50, upd(snapshot_epoch=3, leader_epoch=2, start_offset=-1, dcc=4,
                         batches=[(10, 20, 0, 1), (15, 16, 0, 1)]))
    s = state(rp)
    # ShareGroupOffset.fromRecord(ShareUpdateValue): nothing combined, no state epoch, no timestamps
    assert (s.snapshot_epoch, s.state_epoch, s.leader_epoch, s.start_offset) == (3, 0, 2, -1)
    assert s.state_batches == (StateBatch(10, 20, 0, 1), StateBatch(15, 16, 0, 1))
    assert (s.create_timestamp, s.write_timestamp, s.delivery_complete_count) == (0, 0, 4)
    assert s.max_state_epoch is None and s.max_leader_epoch == 2
    assert s.updates_since_snapshot == 1


def test_epoch_maps_keep_the_max_the_state_keeps_the_last():
    rp = ShareStateReplay()
    rp.replay(0, 0, snap(state_epoch=5, leader_epoch=9))
    rp.replay(1, 0, snap(state_epoch=3, leader_epoch=4))
    s = state(rp)
    assert (s.state_epoch, s.leader_epoch) == (3, 4)  # what ReadShareGroupState(Summary) reports
    assert (s.max_state_epoch, s.max_leader_epoch) == (5, 9)  # stateEpochMap / leaderEpochMap
    rp.replay(2, 0, upd(leader_epoch=-1))
    assert state(rp).leader_epoch == 4 and state(rp).max_leader_epoch == 9
    rp.replay(3, 0, upd(leader_epoch=12))
    assert state(rp).leader_epoch == 12 and state(rp).max_leader_epoch == 12
    assert state(rp).max_state_epoch == 5  # a ShareUpdate does not touch stateEpochMap


def test_snapshot_tombstone_removes_state_and_maps():
    rp = ShareStateReplay()
    other = dict(KEY, partition=4)
    rp.replay(0, 0, snap(state_epoch=5, leader_epoch=9))
    rp.replay(1, 0, rec("share_snapshot", snap().value, key=other))
    rp.replay(2, 0, rec("share_snapshot", None))
    assert state(rp) is None and state(rp, other) is not None and len(rp) == 1
    rp.replay(3, 0, upd(leader_epoch=1, start_offset=7))
    s = state(rp)  # a fresh state: the maps were removed too
    assert (s.max_leader_epoch, s.max_state_epoch, s.start_offset, s.updates_since_snapshot) == (1, None, 7, 1)
    rp.replay(4, 0, rec("share_snapshot", None, key=dict(KEY, partition=99)))  # unknown key: no-op
    assert rp.problems == [] and rp.failures == [] and len(rp) == 2


def test_update_tombstone_is_a_kafka_failure_and_changes_nothing():
    rp = ShareStateReplay()
    rp.replay(0, 0, snap(start_offset=3))
    before = state(rp)
    rp.replay(1, 0, rec("share_update", None))
    assert state(rp) == before
    assert [o for o, _ in rp.failures] == [1] and "NullPointerException" in rp.failures[0][1]
    assert rp.problems == []


def test_updates_since_snapshot_is_snapshot_update_count():
    rp = ShareStateReplay(updates_per_snapshot=2)
    rp.replay(0, 0, snap())
    assert state(rp).updates_since_snapshot == 0
    rp.replay(1, 0, upd())
    rp.replay(2, 0, snap())  # 1 < 2: kept
    assert state(rp).updates_since_snapshot == 1
    rp.replay(3, 0, upd())
    assert state(rp).updates_since_snapshot == 2
    rp.replay(4, 0, snap())  # 2 >= 2: reset
    assert state(rp).updates_since_snapshot == 0


def test_combiner_failure_in_merge_leaves_state_unchanged():
    rp = ShareStateReplay()
    rp.replay(0, 0, snap(leader_epoch=1, start_offset=-1, batches=[(0, LMAX, 0, 1)]))
    before = state(rp)
    rp.replay(1, 0, upd(leader_epoch=5, batches=[(5, 10, 2, 1)]))
    assert state(rp) == before  # the leader epoch map included: nothing of the record applied
    assert [o for o, _ in rp.failures] == [1] and "PersisterStateBatchCombiner" in rp.failures[0][1]


def test_bad_input_is_counted_never_raised():
    rp = ShareStateReplay()
    kb, vb = encode_share_state_record("share_snapshot", KEY, snap().value)
    rp.replay_bytes(0, 0, kb, vb[:-3])  # truncated value
    rp.replay_bytes(1, 0, None, vb)  # no key
    rp.replay_bytes(2, 0, b"\x00", None)  # half a record type
    rp.replay_bytes(3, 0, kb, b"\x00\x07" + vb[2:])  # unknown value version: Kafka's serde rejects it
    rp.replay_bytes(4, 0, b"\x00\x09" + kb[2:], vb)  # unknown record type: skipped as Kafka does
    rp.replay(5, 0, None)
    rp.replay(6, 0, CoordinatorRecord("share_snapshot", 0, 0, {"group_id": G}, 0, {"x": 1}, False))
    bad = rec("share_update", upd().value)
    bad.value["state_batches"] = [{"first_offset": "1"}]
    rp.replay(7, 0, bad)
    assert [o for o, _ in rp.problems] == [0, 1, 2, 3, 5, 6, 7]
    assert [o for o, _ in rp.ignored] == [4]
    assert len(rp) == 0 and rp.failures == []


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60), st.one_of(st.none(), st.binary(max_size=120)))
def test_any_bytes_never_raise(key, value):
    rp = ShareStateReplay()
    rp.replay_bytes(0, 0, key, value)
    assert rp.replayed + len(rp.problems) + len(rp.failures) + len(rp.ignored) == 1


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_records_never_raise(data):
    kind = data.draw(st.sampled_from(["share_snapshot", "share_update"]))
    value = snap(batches=[(1, 5, 0, 1), (3, 9, 2, 2)]).value if kind == "share_snapshot" else upd(
        batches=[(1, 5, 0, 1)]).value
    kb, vb = encode_share_state_record(kind, KEY, value)
    vb = bytearray(vb)
    for _ in range(data.draw(st.integers(1, 4))):
        vb[data.draw(st.integers(0, len(vb) - 1))] = data.draw(st.integers(0, 255))
    rp = ShareStateReplay()
    rp.replay(0, 0, snap(batches=[(0, 3, 0, 1)]))
    rp.replay_bytes(1, 0, kb, bytes(vb))
    assert rp.replayed + len(rp.problems) + len(rp.failures) + len(rp.ignored) == 2


def test_partitions_sorted_and_rows():
    rp = ShareStateReplay()
    keys = [dict(KEY, group_id="b"), dict(KEY, group_id="a", partition=2), dict(KEY, group_id="a", partition=1),
            dict(KEY, group_id="a", topic_id="Z" * 22)]
    for i, k in enumerate(keys):
        rp.replay(i, 100 + i, rec("share_snapshot", snap(start_offset=i, batches=[(i, i + 4, 2, 1)]).value, key=k))
    assert [s.key for s in rp.partitions()] == sorted(s.key for s in rp.partitions())
    out = rows(rp, 7)
    assert [list(r) for r in out] == [[name for name, _ in SHARE_PARTITIONS]] * 4
    assert {t for _, t in SHARE_PARTITIONS} <= {"string", "int32", "int64", "list<string>"}
    first = out[0]
    assert first["log_partition"] == 7 and first["group_id"] == "a" and first["partition"] == 1
    assert first["state_batches"] == ["2-6:2:1"] and first["record_offset"] == 2 and first["timestamp"] == 102
    py = {"string": str, "int32": int, "int64": int, "list<string>": list}
    for r in out:
        for name, typ in SHARE_PARTITIONS:
            assert r[name] is None or isinstance(r[name], py[typ]), name


def test_state_batch_order_is_persister_state_batch_compare_to():
    # compareTo: firstOffset, lastOffset, deliveryCount, then deliveryState
    a, b = StateBatch(1, 5, 4, 1), StateBatch(1, 5, 0, 2)
    assert a < b and sorted([b, a]) == [a, b]
    assert StateBatch(1, 5, 0, 1) == (1, 5, 0, 1) and StateBatch(1, 5, 0, 1) != StateBatch(1, 5, 2, 1)
    assert StateBatch(0, 9, 9, 9) < StateBatch(1, 2, 0, 0)


# ---------------------------------------------------------------------------------------------
# PersisterStateBatchCombiner

#: PersisterStateBatchCombinerTest (Kafka 4.4): (name, batchesSoFar, newBatches, expected, startOffset)
KAFKA_CASES = [
    ('Current batches with start offset midway are pruned.',
     [(100, 130, 0, 1)], [], [(120, 130, 0, 1)], 120),
    ('New batches with start offset midway are pruned.',
     [], [(100, 130, 0, 1)], [(120, 130, 0, 1)], 120),
    ('Both current and new batches empty.',
     [], [], [], 120),
    ('Null current and new batches are treated as empty.',
     None, None, [], -1),
    ('Duplicate equal batches ending before a later batch do not fill the gap.',
     [(100, 110, 0, 1)], [(100, 110, 0, 1), (120, 130, 2, 1)], [(100, 110, 0, 1), (120, 130, 2, 1)], -1),
    ('Duplicate state-2 batches ending before a later state-0 batch do not fill the gap.',
     [(0, 5, 2, 1)], [(0, 5, 2, 1), (11, 15, 0, 1)], [(0, 5, 2, 1), (11, 15, 0, 1)], -1),
    ('Duplicate state-0 batches ending before a later state-0 batch do not fill the gap.',
     [(0, 5, 0, 1)], [(0, 5, 0, 1), (11, 15, 0, 1)], [(0, 5, 0, 1), (11, 15, 0, 1)], -1),
    ('Same state. batchSoFar and newBatch have same first and last offset.',
     [(100, 110, 0, 1)], [(100, 110, 0, 1)], [(100, 110, 0, 1)], -1),
    ('Same state. batchSoFar and newBatch have same first offset, newBatch last offset strictly smaller.',
     [(100, 110, 0, 1)], [(100, 105, 0, 1)], [(100, 110, 0, 1)], -1),
    ('Same state. batchSoFar and newBatch have same first offset, newBatch last offset strictly larger.',
     [(100, 110, 0, 1)], [(100, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    ('Same state. newBatch first offset strictly larger and last offset strictly smaller than batchSoFar.',
     [(100, 110, 0, 1)], [(105, 108, 0, 1)], [(100, 110, 0, 1)], -1),
    ('Same state. newBatch first offset strictly larger and last offset equal to batchSoFar.',
     [(100, 110, 0, 1)], [(105, 110, 0, 1)], [(100, 110, 0, 1)], -1),
    ('Same state. newBatch first offset strictly larger and last offset strictly larger than batchSoFar.',
     [(100, 110, 0, 1)], [(105, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    ('Same state. newBatch first offset is batchSoFar first offset + 1 (contiguous).',
     [(100, 110, 0, 1)], [(111, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    ('Handle overlapping batches in newBatches, same state',
     [(100, 110, 0, 1), (121, 130, 0, 1)], [(111, 119, 2, 2), (116, 123, 2, 2)], [(100, 110, 0, 1), (111, 123, 2, 2), (124, 130, 0, 1)], -1),
    ('Handle overlapping batches in newBatches, different priority.',
     [(100, 110, 0, 1)], [(101, 105, 1, 2), (101, 115, 2, 2), (101, 120, 3, 2)], [(100, 100, 0, 1), (101, 120, 3, 2)], -1),
    ('Handle overlapping batches in newBatches, with pruning.',
     [(100, 110, 0, 1), (121, 130, 0, 1)], [(111, 119, 2, 2), (116, 123, 2, 2)], [(120, 123, 2, 2), (124, 130, 0, 1)], 120),
    ('Multiple higher state batch updates.',
     [(111, 120, 0, 1)], [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2)], [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2), (120, 120, 0, 1)], -1),
    ('newBatch higher state. newBatch first offset and last offset match batchSoFar.',
     [(100, 110, 0, 1)], [(100, 110, 0, 2)], [(100, 110, 0, 2)], -1),
    ('newBatch lower state. newBatch first offset and last offset match batchSoFar.',
     [(100, 110, 0, 3)], [(100, 110, 0, 1)], [(100, 110, 0, 3)], -1),
    ('newBatch higher state. newBatch first offset same and last offset smaller than batchSoFar.',
     [(100, 110, 0, 1)], [(100, 105, 0, 2)], [(100, 105, 0, 2), (106, 110, 0, 1)], -1),
    ('newBatch lower state. newBatch first offset same and last offset smaller than batchSoFar.',
     [(100, 110, 0, 3)], [(100, 105, 0, 1)], [(100, 110, 0, 3)], -1),
    ('newBatch higher state. newBatch first offset same and last offset strictly larger than batchSoFar.',
     [(100, 110, 0, 1)], [(100, 115, 0, 2)], [(100, 115, 0, 2)], -1),
    ('newBatch lower state. newBatch first offset same and last offset strictly larger than batchSoFar.',
     [(100, 110, 0, 3)], [(100, 115, 0, 1)], [(100, 110, 0, 3), (111, 115, 0, 1)], -1),
    ('newBatch higher state. newBatch first offset strictly larger and last offset strictly smaller than batchSoFar.',
     [(100, 115, 0, 1)], [(105, 110, 1, 1)], [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)], -1),
    ('newBatch lower state. newBatch first offset strictly larger and last offset strictly smaller than batchSoFar.',
     [(100, 115, 1, 1)], [(105, 110, 0, 1)], [(100, 115, 1, 1)], -1),
    ('newBatch higher state. newBatch first offset strictly larger and last offset same as batchSoFar.',
     [(100, 110, 0, 1)], [(105, 110, 0, 2)], [(100, 104, 0, 1), (105, 110, 0, 2)], -1),
    ('newBatch lower state. newBatch first offset strictly larger and last offset same as batchSoFar.',
     [(100, 110, 0, 2)], [(105, 110, 0, 1)], [(100, 110, 0, 2)], -1),
    ('newBatch higher state. newBatch first and last offsets strictly larger than batchSoFar.',
     [(100, 110, 0, 1)], [(105, 115, 0, 2)], [(100, 104, 0, 1), (105, 115, 0, 2)], -1),
    ('newBatch lower state. newBatch first and last offsets strictly larger than batchSoFar.',
     [(100, 110, 0, 2)], [(105, 115, 0, 1)], [(100, 110, 0, 2), (111, 115, 0, 1)], -1),
]


@pytest.mark.parametrize("name,so_far,new,expected,start", KAFKA_CASES, ids=[c[0] for c in KAFKA_CASES])
def test_combiner_kafka_cases(name, so_far, new, expected, start):
    assert combine_state_batches(so_far, new, start) == [StateBatch(*b) for b in expected]


#: The Java class's own answers (None: it throws NullPointerException), recorded from a run of
#: the compiled PersisterStateBatchCombiner on these inputs.
JAVA_ANSWERS = [
    (-1, [(0, LMAX, 0, 1)], [(5, 10, 2, 1)], None),  # END at lastOffset + 1 wraps to Long.MIN_VALUE
    (-1, [(0, LMAX, 0, 1), (LMAX, LMAX, 2, 1)], [], None),
    (LMAX, [(0, LMAX, 0, 1), (10, LMAX, 0, 2)], [], None),
    (-1, [(10, 5, 0, 1), (0, 20, 0, 1)], [], [(0, 5, 0, 1), (10, 20, 0, 1)]),  # same priority: no throw
    (-1, [(10, 5, 0, 1)], [(0, 3, 2, 1)], None),
    (-1, [(10, 9, 0, 1)], [(0, 3, 2, 1)], None),  # an empty batch (last = first - 1)
    (-1, [(10, 9, 0, 1)], [], [(10, 9, 0, 1)]),  # one batch: returned as is
    (-1, [(5, 3, 0, 1), (5, 3, 0, 1)], [], None),
    (-1, [(LMIN, -1, 0, 5), (0, 4, 0, 5)], [], [(LMIN, 4, 0, 5)]),
    (-5, [(LMIN, -6, 0, 5), (-7, 4, 0, 5)], [], [(-5, 4, 0, 5)]),  # -5 is a start offset: prunes
    (-1, [(0, 2, 0, 1), (3, 5, 0, 1)], [], [(0, 5, 0, 1)]),  # adjacency coalesces
    (-1, [(0, 2, 0, 1), (4, 5, 0, 1)], [], [(0, 2, 0, 1), (4, 5, 0, 1)]),  # a gap does not
]


@pytest.mark.parametrize("start,so_far,new,expected", JAVA_ANSWERS)
def test_combiner_matches_java_on_edge_inputs(start, so_far, new, expected):
    if expected is None:
        with pytest.raises(KafkaReplayFailure):
            combine_state_batches(so_far, new, start)
    else:
        assert combine_state_batches(so_far, new, start) == [StateBatch(*b) for b in expected]


def test_combiner_hand_made():
    # overlap: the higher (count, state) wins on the overlap, each side keeps the rest
    assert combine_state_batches([(0, 10, 0, 1)], [(5, 15, 0, 2)], -1) == [(0, 4, 0, 1), (5, 15, 0, 2)]
    # same priority overlapping and adjacent: one batch
    assert combine_state_batches([(0, 10, 2, 1)], [(5, 15, 2, 1), (16, 20, 2, 1)], -1) == [(0, 20, 2, 1)]
    # adjacent but different: kept apart; sorted whatever the input order
    assert combine_state_batches([(11, 20, 0, 1)], [(0, 10, 2, 1)], -1) == [(0, 10, 2, 1), (11, 20, 0, 1)]
    # pruning: below the start dropped, across it clipped, at it kept
    assert combine_state_batches([(0, 4, 0, 1), (3, 9, 2, 1)], [(5, 7, 0, 3)], 5) == [
        (5, 7, 0, 3), (8, 9, 2, 1)]
    assert combine_state_batches([(0, 4, 0, 1)], [(1, 4, 2, 1)], 5) == []
    # a single batch after pruning is returned as is, even when malformed
    assert combine_state_batches([(0, 4, 0, 1), (20, 10, 0, 1)], [], 5) == [(20, 10, 0, 1)]
    # inputs are not modified
    so_far = [(0, 10, 0, 1)]
    combine_state_batches(so_far, [(2, 3, 2, 1)], 1)
    assert so_far == [(0, 10, 0, 1)]


_batch = st.tuples(st.integers(0, 60), st.integers(0, 12), st.sampled_from([0, 1, 2, 4]),
                   st.integers(0, 3)).map(lambda t: StateBatch(t[0], t[0] + t[1], t[2], t[3]))


@settings(max_examples=500, deadline=None)
@given(st.lists(_batch, max_size=6), st.lists(_batch, max_size=6),
       st.one_of(st.just(-1), st.integers(0, 70)))
def test_combiner_properties(so_far, new, start):
    out = combine_state_batches(so_far, new, start)
    floor = start if start != -1 else 0
    for b in out:
        assert b.first_offset <= b.last_offset
        assert b.first_offset >= floor  # none below the start offset
    for a, b in zip(out, out[1:]):
        assert a.last_offset < b.first_offset  # sorted, non-overlapping
        if a.last_offset + 1 == b.first_offset:
            assert (a.delivery_state, a.delivery_count) != (b.delivery_state, b.delivery_count)  # coalesced
    covered = {o for b in so_far + new for o in range(b.first_offset, b.last_offset + 1) if o >= floor}
    got = {o: (b.delivery_count, b.delivery_state) for b in out for o in range(b.first_offset, b.last_offset + 1)}
    assert set(got) == covered  # every covered offset at or above the start still covered, nothing more
    for o in covered:  # the highest (deliveryCount, deliveryState) covering the offset wins
        assert got[o] == max((b.delivery_count, b.delivery_state) for b in so_far + new
                             if b.first_offset <= o <= b.last_offset)


# ---------------------------------------------------------------------------------------------
# The golden segments


def _golden_records() -> list[dict]:
    out = []
    for path in sorted(glob.glob(str(GOLDEN / "*.decode.jsonl"))):
        with open(path, encoding="utf-8") as fh:
            out.extend(json.loads(line) for line in fh if line.strip())
    return out


def _kkey(d: dict) -> tuple[str, str, int]:
    return (d["key"]["groupId"], d["key"]["topicId"], d["key"]["partition"])


def test_golden_segments_replay():
    assert len(SEGMENTS) == 3
    recs = _golden_records()
    rp = replay_files(SEGMENTS)
    assert rp.problems == [] and rp.ignored == []
    assert rp.next_offset == recs[-1]["offset"] + 1 and rp.stopped_at is None

    # Independently, from Kafka's decoding: a snapshot or an update makes a key live, a snapshot
    # tombstone removes it; a ShareUpdate tombstone is where Kafka's replay throws (NPE).
    live: dict[tuple, dict] = {}
    update_tombstones = []
    for d in recs:
        k = _kkey(d)
        if d["tombstone"]:
            if d["record_type_name"] == "SHARE_SNAPSHOT":
                live.pop(k, None)
            else:
                update_tombstones.append(d["offset"])
        else:
            live[k] = d
    assert len({_kkey(d) for d in recs}) == 534
    assert len(rp) == len(live) == len(rp.partitions())
    assert {s.key for s in rp.partitions()} == set(live)

    tomb = [o for o, r in rp.failures if r.startswith("ShareUpdate tombstone")]
    assert tomb == update_tombstones and len(tomb) == 33
    others = [(o, r) for o, r in rp.failures if not r.startswith("ShareUpdate tombstone")]
    assert all("PersisterStateBatchCombiner" in r for _, r in others)
    assert rp.replayed == len(recs) - len(rp.failures)

    # Keys whose last record is a snapshot: exactly that snapshot (ShareGroupOffset.fromRecord).
    failed = {o for o, _ in rp.failures}
    checked = 0
    for k, d in live.items():
        s = rp.get(*k)
        if d["record_type_name"] == "SHARE_SNAPSHOT":
            v = d["value"]
            assert (s.snapshot_epoch, s.state_epoch, s.leader_epoch, s.start_offset) == (
                v["snapshotEpoch"], v["stateEpoch"], v["leaderEpoch"], v["startOffset"])
            assert s.delivery_complete_count == v.get("deliveryCompleteCount", -1)
            assert (s.create_timestamp, s.write_timestamp) == (v["createTimestamp"], v["writeTimestamp"])
            assert s.state_batches == tuple(StateBatch(b["firstOffset"], b["lastOffset"], b["deliveryState"],
                                                       b["deliveryCount"]) for b in v["stateBatches"])
            assert (s.record_offset, s.timestamp) == (d["offset"], d["timestamp"])
            checked += 1
        elif d["offset"] not in failed:
            assert s.record_offset == d["offset"]
    assert checked > 100


def _replay_jsonl(recs: list[dict]) -> ShareStateReplay:
    rp = ShareStateReplay()
    for d in recs:
        value = None if d["value_base64"] is None else base64.b64decode(d["value_base64"])
        rp.replay_bytes(d["offset"], d["timestamp"], base64.b64decode(d["key_base64"]), value)
    return rp


def test_until_stops_at_batch_boundaries():
    recs = _golden_records()
    batches = []  # (base offset, max timestamp) in log order
    for d in recs:
        if not batches or batches[-1][0] != d["batch_base_offset"]:
            batches.append((d["batch_base_offset"], d["batch_max_timestamp"]))
    multi = [i for i, (base, _) in enumerate(batches)
             if sum(1 for d in recs if d["batch_base_offset"] == base) > 1 and i > 0]
    assert multi
    segment_starts = [i for i, (base, _) in enumerate(batches) if base in (180, 380)]  # 2nd and 3rd files
    assert len(segment_starts) == 2
    picks = sorted({multi[0], multi[len(multi) // 2], len(batches) - 1, 1, *segment_starts})
    for i in picks:
        base, ts = batches[i]
        # until = the batch's own timestamp: it is not read, nor anything after it
        rp = replay_files(SEGMENTS, until=ts)
        first_late = next(b for b, t in batches if t >= ts)
        assert rp.stopped_at == first_late and rp.next_offset == first_late
        expected = _replay_jsonl([d for d in recs if d["offset"] < first_late])
        assert rp.partitions() == expected.partitions()
        assert rp.failures == expected.failures
        # one millisecond later: that batch is read whole (never part of a batch)
        rp2 = replay_files(SEGMENTS, until=ts + 1)
        nxt = next((b for b, t in batches if t >= ts + 1), None)
        assert rp2.stopped_at == nxt
        assert rp2.next_offset == (nxt if nxt is not None else recs[-1]["offset"] + 1)
        assert rp2.next_offset > base
    assert len(replay_files(SEGMENTS, until=batches[0][1])) == 0
    assert replay_files(SEGMENTS, until=batches[0][1]).next_offset is None
    full = replay_files(SEGMENTS, until=batches[-1][1] + 1)
    assert full.stopped_at is None and full.partitions() == replay_files(SEGMENTS).partitions()


def test_golden_rows():
    out = rows(replay_files(SEGMENTS), 7)
    assert out and all(list(r) == [n for n, _ in SHARE_PARTITIONS] for r in out)
    assert all(r["log_partition"] == 7 for r in out)
    keys = [(r["group_id"], r["topic_id"], r["partition"]) for r in out]
    assert keys == sorted(keys)


def test_damaged_segment_is_reported_not_raised(tmp_path):
    data = Path(SEGMENTS[0]).read_bytes()
    cut = tmp_path / "00000000000000000000.log"
    cut.write_bytes(data[: len(data) // 2] + b"\xff" * 40)
    rp = replay_files([str(cut)])
    assert rp.problems and len(rp) > 0
    with pytest.raises(InputError):
        replay_files([str(tmp_path / "missing.log")])
