"""Pending transactional offsets in the store (``OffsetMetadataManager.replayEndTransactionMarker``):
the compiled path and its pure-Python twin give the same tables, a transaction larger than the
event buffer is replayed whole, and the slot table grows with open transactions, not records."""

from __future__ import annotations

import pytest

from kgtool.offsets.audit import audit_entries
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.scenario import Script
from kgtool.offsets.store import P
from tests.twins import have_compiled

LOOPS = [pytest.param(True, id="python")] + ([pytest.param(False, id="c")] if have_compiled("kgtool.offsets._replay") else [])


def _big_transaction() -> Script:
    """300 partitions committed at leader epoch 5, then one transaction committing all of them at
    epoch 2 and offsets below (an epoch-regression and a rewind finding each: 600 events from one
    marker, more than end_transaction's first buffer), a second transaction of the same producer
    that commits one key twice (the later wins) and is aborted."""
    s = Script()
    s.generation("g", 1, {"a-1": [("t", p) for p in range(300)]})
    s.commit("g", {("t", p): 100 + p for p in range(300)}, leader_epoch=5)
    s.commit("g", {("t", p): 50 + p for p in range(300)}, leader_epoch=2, producer=(9, 0))
    s.marker((9, 0), "COMMIT")
    s.commit("g", {("t", 0): 7}, producer=(9, 0))
    s.commit("g", {("t", 0): 8}, producer=(9, 0))
    s.marker((9, 0), "ABORT")
    return s


@pytest.mark.parametrize("pure", LOOPS)
def test_a_transaction_larger_than_the_event_buffer(pure):
    r = audit_entries(_big_transaction().entries(), pure=pure)
    rules = sorted(f["rule"] for f in r.tables["findings"])
    assert rules.count("epoch-regression") == 300 and rules.count("rewind") == 300
    aborted = [f for f in r.tables["findings"] if f["rule"] == "aborted-txn"]
    assert [(f["partition"], f["offset"]) for f in aborted] == [(0, 8)]  # the later commit of the key
    offsets = {o["partition"]: o["offset"] for o in r.tables["offsets"]}
    assert offsets[0] == 50 and offsets[299] == 349


def test_twins_agree_on_a_transaction_larger_than_the_event_buffer():
    if not have_compiled("kgtool.offsets._replay"):
        pytest.skip("no compiled path to compare")
    entries = _big_transaction().entries()
    py, c = audit_entries(entries, pure=True), audit_entries(entries, pure=False)
    for name in ("commits", "findings", "offsets"):
        assert py.tables[name] == c.tables[name], name


@pytest.mark.parametrize("pure", LOOPS)
def test_slots_are_reused_after_their_rows_are_written(pure):
    """A thousand transactions of one producer, each ended by its marker: the slot table holds
    the commits of the chunks not yet written out (plus each key's last aborted one), not a
    thousand transactions'."""
    s = Script()
    for i in range(1000):
        s.commit("g", {("t", 0): i, ("t", 1): i}, producer=(3, 0))
        s.marker((3, 0), "ABORT" if i % 7 == 0 else "COMMIT")
    rp = PartitionReplay(0, pure=pure)
    for e in s.entries():  # a chunk per record: each is written out once its marker is read
        rp.feed_entries([e])
    rp.finish()
    store = rp.store
    assert int(store.meta[0]) <= 16
    live = store.p[: int(store.meta[0])]
    assert ((live[:, P["key"]] >= 0) & (live[:, P["aborted"]] == 0)).sum() == 0  # only the aborted ones stay
    assert rp.offsets("g") == {("t", 0): 999, ("t", 1): 999}


@pytest.mark.parametrize("pure", LOOPS)
def test_a_transaction_that_never_ends_holds_one_slot_per_key(pure):
    """A producer whose marker never comes (none in the log: ``last_markers`` says so, its rows
    are written out at once) commits two keys 3,000 times: the store keeps what Kafka's
    pendingTransactionalOffsets keeps, the last commit of each key, not every commit."""
    s = Script()
    for i in range(3000):
        s.commit("g", {("t", i % 2): i}, producer=(5, 0))
    rp = PartitionReplay(0, pure=pure, last_markers={})
    for e in s.entries():
        rp.feed_entries([e])
    rp.finish()
    assert int(rp.store.meta[0] - rp.store.meta[1]) <= 1100
    pending = sorted((f["partition"], f["offset"]) for f in rp.findings if f["rule"] == "pending-txn")
    assert pending == [(0, 2998), (1, 2999)]
