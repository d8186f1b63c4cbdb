"""Properties of the replay against an independent reference of Kafka's offset store.

The reference is written differently on purpose (one flat dict keyed by group, topic and
partition, markers handled in log order as ``OffsetMetadataManager`` does, no state arrays), so
that a bug shared by the model's design and its tests cannot hide.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.offsets.audit import audit_entries
from kgtool.offsets.entries import CONTROL, OFFSET_COMMIT
from kgtool.offsets.scenario import Script

GROUPS = ("g1", "g2")
TPS = (("t", 0), ("t", 1))
PIDS = (7, 8)

op = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 50),
              st.integers(-1, 3)),
    st.tuples(st.just("txn"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 50),
              st.sampled_from(PIDS)),
    st.tuples(st.just("marker"), st.sampled_from(PIDS), st.sampled_from(["COMMIT", "ABORT"])),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TPS)),
    st.tuples(st.just("generation"), st.sampled_from(GROUPS), st.integers(0, 2)),
)


def apply_offset_op(s: Script, o) -> bool:
    """Write one commit / txn / marker / delete op; False for other ops."""
    if o[0] == "commit":
        s.commit(o[1], {o[2]: o[3]}, leader_epoch=o[4])
    elif o[0] == "txn":
        s.commit(o[1], {o[2]: o[3]}, producer=(o[4], 0))
    elif o[0] == "marker":
        s.marker((o[1], 0), o[2])
    elif o[0] == "delete":
        s.delete_offsets(o[1], [o[2]])
    else:
        return False
    return True


def build(ops) -> Script:
    s = Script(log_partition=3)
    gens = {g: 0 for g in GROUPS}
    for o in ops:
        if not apply_offset_op(s, o):
            gens[o[1]] += 1
            members = {f"m{i}": [tp for j, tp in enumerate(TPS) if j % max(o[2], 1) == i] for i in range(o[2])}
            s.generation(o[1], gens[o[1]], members)
    return s


def reference_store(entries):
    offsets: dict = {}
    pending: dict = {}
    for e in sorted(entries, key=lambda x: x.offset):
        if e.kind == CONTROL:
            p = pending.pop(e.producer_id, {})
            if e.control_type == "COMMIT":
                for k, (o, ro) in p.items():
                    if k not in offsets or ro > offsets[k][1]:
                        offsets[k] = (o, ro)
        elif e.kind == OFFSET_COMMIT:
            k = (e.group, e.key["topic"], e.key["partition"])
            if e.value is None:
                offsets.pop(k, None)
                for p in pending.values():
                    p.pop(k, None)
            elif e.producer_id == -1:
                offsets[k] = (e.value["offset"], e.offset)
            else:
                pending.setdefault(e.producer_id, {})[k] = (e.value["offset"], e.offset)
    return {k: o for k, (o, _ro) in offsets.items()}


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=30))
def test_final_offsets_equal_reference(ops):
    entries = build(ops).entries()
    model = {}
    for rp in audit_entries(entries).replays.values():
        for g in GROUPS:
            model.update({(g, t, p): o for (t, p), o in rp.offsets(g).items()})
    assert model == reference_store(entries)


@settings(max_examples=100, deadline=None)
@given(st.lists(op, max_size=30))
def test_invariants(ops):
    entries = build(ops).entries()
    r = audit_entries(entries)
    commits = r.tables["commits"]
    # Exactly one commits row per offset-commit record, in log order per group.
    assert len(commits) == sum(1 for e in entries if e.kind == OFFSET_COMMIT)
    for c in commits:
        if c["transactional"] and not c["tombstone"]:
            assert c["txn_result"] in ("COMMIT", "ABORT", "PENDING")
            assert c["effective"] == (c["effective_at_offset"] is not None)
            if c["effective"]:
                assert c["txn_result"] == "COMMIT" and c["effective_at_offset"] == c["txn_marker_offset"]
        elif not c["tombstone"]:
            assert c["effective"] and c["effective_at_offset"] == c["record_offset"]
    for f in r.tables["findings"]:
        assert f["message"] and f["rule"] in {
            "rewind", "zombie", "orphan", "epoch-regression", "expiring", "aborted-txn", "pending-txn",
            "rebalance-storm"}
