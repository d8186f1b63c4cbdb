"""Test reference: the committed offsets of one ``__consumer_offsets`` partition after reading a
prefix of its log, written anew from Kafka's ``OffsetMetadataManager`` (group-coordinator,
4.x) and independent of kgtool's offset store (no state arrays, no chunks, no events):

- ``replay(recordOffset, producerId, OffsetCommitKey, OffsetCommitValue)``: a value without a
  producer id is stored at once (``offsets.put``); with one it goes to that producer's
  ``pendingTransactionalOffsets`` (a later record of the same key replaces it); a tombstone
  removes the stored offset and the key's pending offsets of every producer;
- ``replayEndTransactionMarker(producerId, result)``: the producer's pending offsets leave the
  pending store; on COMMIT each one is stored only if nothing is stored for its key or its
  record offset is greater than the stored one's; on ABORT they are dropped.

Only COMMIT and ABORT control records of a producer are markers (``CoordinatorLoaderImpl``).
Not imported by kgtool.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kgtool.offsets.tables import OFFSET_LAG_COLUMNS
from kgtool.offsets.entries import LogEntry

_COMMIT_KINDS = ("offset_commit", "legacy_offset_commit")
Key = tuple[str, str, int]


def _value(e: LogEntry) -> dict[str, Any]:
    v = e.value or {}
    epoch = v.get("leader_epoch")
    expire = v.get("expire_timestamp")
    return {
        "offset": v["offset"],
        "leader_epoch": -1 if epoch is None else epoch,  # OffsetCommitValue v0-v2 have none
        "metadata": v.get("metadata"),
        "commit_timestamp": v.get("commit_timestamp"),
        # OffsetAndMetadata.fromRecord: -1 (OffsetCommitRequest.DEFAULT_TIMESTAMP) means none
        "expire_timestamp": expire if expire is not None and expire >= 0 else None,
        "record_offset": e.offset,
    }


def committed_offsets(entries: Iterable[LogEntry]) -> dict[Key, dict[str, Any]]:
    """``OffsetMetadataManager.offsets`` after replaying ``entries`` (one partition, log order):
    (group, topic, partition) -> offset, leader_epoch, metadata, commit/expire timestamps and
    the record offset of the commit that set it."""
    offsets: dict[Key, dict[str, Any]] = {}
    pending: dict[int, dict[Key, dict[str, Any]]] = {}
    for e in entries:
        if e.problem is not None:
            continue
        if e.is_control:
            if e.producer_id != -1 and e.control_type in ("COMMIT", "ABORT"):
                resolved = pending.pop(e.producer_id, {})
                if e.control_type == "COMMIT":
                    for key, v in resolved.items():
                        cur = offsets.get(key)
                        if cur is None or v["record_offset"] > cur["record_offset"]:
                            offsets[key] = v
            continue
        if e.kind not in _COMMIT_KINDS:
            continue
        key = (e.group, e.key["topic"], e.key["partition"])
        if e.value is None:
            offsets.pop(key, None)
            for by_key in pending.values():
                by_key.pop(key, None)
        elif e.producer_id == -1:
            offsets[key] = _value(e)
        else:
            pending.setdefault(e.producer_id, {})[key] = _value(e)
    return offsets


def _topic_ids(entries: Iterable[LogEntry]) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in entries:
        v = e.value if isinstance(e.value, dict) else None
        if e.kind in ("offset_commit", "legacy_offset_commit") and v and v.get("topic_id") and e.key:
            out.setdefault(e.key["topic"], v["topic_id"])
    return out


def offsets_rows(entries: Iterable[LogEntry], log_partition: int, expired: set[Key],
                 keep_group: Any = lambda g: True) -> list[dict[str, Any]]:
    """The offsets table of a partition: rows of :func:`committed_offsets` for the groups
    ``keep_group`` accepts, ``expired`` naming the keys past the retention."""
    rows = []
    for key, v in sorted(committed_offsets(entries).items()):
        if keep_group(key[0]):
            rows.append({"group": key[0], "log_partition": log_partition, "topic": key[1], "partition": key[2],
                         **{c: v[c] for c in ("offset", "leader_epoch", "metadata", "commit_timestamp",
                                              "expire_timestamp", "record_offset")},
                         "expired": key in expired,
                         # lag: no data partition in these logs (kgtool.offsets.tables.OFFSET_LAG_COLUMNS)
                         **dict.fromkeys(OFFSET_LAG_COLUMNS),
                         # the topic's id: the first v4 TopicId a commit of the log gave the topic
                         "topic_id": _topic_ids(entries).get(key[1]),
                         "exact": True})  # the end of the log, or --until on an uncleaned log
    return rows
