"""Write a :class:`~kgtool.offsets.scenario.Script` as a real ``__consumer_offsets`` segment,
with kgtool's encoders (``kgtool.codec.batch``, ``kgtool.coordinator.records``).

Batches are framed as the coordinator runtime writes them: one batch per event, producer id
-1 and base sequence 0 for non-transactional batches... (``CoordinatorRuntime`` /
``MemoryRecordsBuilder``), transactional batches with the producer's id and epoch, markers as
``MemoryRecords.withEndTransactionMarker`` control batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from kgtool.offsets.scenario import Event, Script


def _member_bytes(value: dict[str, Any]) -> dict[str, Any]:
    from kgtool.coordinator.consumer_protocol import encode_assignment, encode_subscription

    v = dict(value)
    members = []
    for m in v.get("members") or []:
        m = dict(m)
        sub = m.pop("subscription_decoded", None)
        asg = m.pop("assignment_decoded", None)
        if "subscription" not in m:
            m["subscription"] = encode_subscription(sub or {"topics": []})
        if "assignment" not in m:
            m["assignment"] = encode_assignment(asg or {"assigned_partitions": []})
        members.append(m)
    v["members"] = members
    return v


def encode_event(ev: Event, base_offset: int, partition_leader_epoch: int = 0) -> bytes:
    """One event as one batch at ``base_offset``."""
    from kgtool.codec.batch import encode_batch_v2, encode_end_txn_marker
    from kgtool.coordinator.records import encode_offsets_record

    if ev.control is not None:
        return encode_end_txn_marker(
            commit=ev.control == "COMMIT",
            producer_id=ev.producer_id,
            producer_epoch=ev.producer_epoch,
            coordinator_epoch=ev.coordinator_epoch,
            base_offset=base_offset,
            timestamp=ev.timestamp,
            partition_leader_epoch=partition_leader_epoch,
        )
    records = []
    for r in ev.records:
        value = r.value
        if value is not None and r.kind == "group_metadata":
            value = _member_bytes(value)
        k, v = encode_offsets_record(r.kind, r.key, value, value_version=None if value is None else r.value_version)
        records.append((k, v, [], ev.timestamp))
    return encode_batch_v2(
        records,
        base_offset=base_offset,
        compression=ev.compression,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=ev.producer_id,
        producer_epoch=ev.producer_epoch,
        base_sequence=0,
        is_transactional=ev.transactional,
    )


def iter_batches(script: Script, base_offset: int = 0) -> Iterator[bytes]:
    offset = base_offset
    for ev in script.events:
        yield encode_event(ev, offset)
        offset += 1 if ev.control is not None else len(ev.records)


def write_segment(script: Script, directory: str, base_offset: int = 0) -> str:
    """Write ``directory/<base offset, 20 digits>.log``; returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{base_offset:020d}.log")
    with open(path, "wb") as fh:
        for b in iter_batches(script, base_offset):
            fh.write(b)
    return path
