"""The end-of-log rules of one partition's replay (:mod:`kgtool.offsets.rules`: aborted-txn,
pending-txn, expiring), judged on the store's state once the log read ends: the last aborted
transactional commit of each key, the transactions still open (``pendingTransactionalOffsets``),
and the offsets that retention would expire (``OffsetMetadataManager.cleanupExpiredOffsets``).
"""

from __future__ import annotations

from typing import Any

from kgtool.offsets.generations import GroupState
from kgtool.offsets.rules import (
    CommitRef,
    Previous,
    aborted_message,
    expiration,
    expiring_message,
    finding,
    pending_message,
)
from kgtool.offsets.store import G, K, NULL, P, Store


def open_transactions(store: Store) -> dict[int, dict[int, int]]:
    """The transactional commits still pending at the end (``pendingTransactionalOffsets``):
    gid -> key -> slot of the key's latest pending commit (of any producer)."""
    pp, st = store.p, store.k
    out: dict[int, dict[int, int]] = {}
    for slot in store.open_slots().tolist():
        if not store.live(slot):
            continue  # a tombstone of its key came after it
        k = int(pp[slot, P["key"]])
        by_key = out.setdefault(int(st[k, K["gid"]]), {})
        q = by_key.get(k)
        if q is None or pp[slot, P["record"]] > pp[q, P["record"]]:
            by_key[k] = slot
    return out


def end_of_log(rp: Any, g: GroupState, end: int | None, open_txns: dict[int, dict[int, int]]) -> dict[int, str]:
    """The end-of-log findings of a group (aborted-txn, pending-txn, expiring), appended to
    ``rp.findings``; returns its expired keys (key -> why). ``open_txns``:
    :func:`open_transactions` at the end."""
    st = rp.store.k
    name, part = g.name, rp.log_partition

    def later_than_store(k: int, record: int) -> bool:
        if st[k, K["st_has"]] and st[k, K["st_record"]] > record:
            return False
        removed = st[k, K["last_removal"]]
        return removed == NULL or removed < record

    def stored(k: int) -> Previous | None:
        if not st[k, K["st_has"]]:
            return None
        return Previous(int(st[k, K["st_offset"]]), int(st[k, K["st_record"]]), int(st[k, K["st_position"]]),
                        None if st[k, K["st_generation"]] == NULL else int(st[k, K["st_generation"]]))

    pp = rp.store.p
    mine = sorted((rp.key_tp[k], k) for k in g.keys.values() if st[k, K["aborted_slot"]] >= 0)
    for tp, k in mine:
        slot = int(st[k, K["aborted_slot"]])
        ref = rp.slot_ref(slot)
        if later_than_store(k, ref.record_offset) and not st[k, K["txn_record"]] > ref.record_offset:
            cur = stored(k)
            rp.findings.append(finding(
                "aborted-txn", name, part, ref,
                aborted_message(tp, ref.offset, int(pp[slot, P["producer_id"]]),
                                None if cur is None else cur.offset), cur))
    latest = open_txns.get(g.gid, {})
    for tp, k in sorted((rp.key_tp[k], k) for k in latest):
        slot = latest[k]
        ref = rp.slot_ref(slot)
        if later_than_store(k, ref.record_offset):
            rp.findings.append(finding("pending-txn", name, part, ref,
                                       pending_message(tp, ref.offset, int(pp[slot, P["producer_id"]])),
                                       stored(k)))
    expired = expired_keys(rp, g, end, open_txns)
    for tp, k in sorted(g.keys.items()):
        why = expired.get(k)
        if why is not None:
            gen_id = int(st[k, K["st_generation"]])
            ref = CommitRef(tp[0], tp[1], int(st[k, K["st_offset"]]), int(st[k, K["st_record"]]),
                            int(st[k, K["st_position"]]), rp.sources[int(st[k, K["st_source"]])],
                            int(st[k, K["st_timestamp"]]), None if gen_id == NULL else gen_id)
            rp.findings.append(finding("expiring", name, part, ref, expiring_message(tp, ref.offset, why)))
    return expired


def expired_keys(rp: Any, g: GroupState, end: int | None, open_txns: dict[int, dict[int, int]]) -> dict[int, str]:
    """The group's stored offsets that are expired at ``end`` (key -> why): the expiring
    rule, which the offsets table's ``expired`` column repeats."""
    st = rp.store.k
    if end is None or not rp.store.g[g.gid, G["exists"]]:
        return {}
    gen = g.gen
    if gen is not None and not gen.empty:
        return {}  # ClassicGroup.offsetExpirationCondition: only Empty (or simple) groups
    open_keys = open_txns.get(g.gid, {})
    empty_since = None
    if gen is not None and gen.protocol == "classic":
        empty_since = gen.current_state_timestamp
    out: dict[int, str] = {}
    for k in g.keys.values():
        if k in open_keys or not st[k, K["st_has"]]:
            continue  # cleanupExpiredOffsets keeps offsets with an open transaction
        ets = int(st[k, K["st_expire_ts"]])
        cts = int(st[k, K["st_commit_ts"]])
        expired, why = expiration(end, None if cts == NULL else cts, int(st[k, K["st_timestamp"]]),
                                  None if ets == NULL else ets, empty_since, rp.options.retention_ms)
        if expired:
            out[k] = why
    return out
