"""Replay of ``__share_group_state`` (KIP-932 share coordinator): each share partition's state.

The model is Kafka 4.4's ``ShareCoordinatorShard.replay``, record by record in log order within
one ``__share_group_state`` partition:

- a ShareSnapshot record replaces the share partition's state (``handleShareSnapshot``,
  ``ShareGroupOffset.fromRecord``); its tombstone removes the state and the epoch maps;
- a ShareUpdate record is merged into the state (``handleShareUpdate``, ``merge``: a start
  offset or leader epoch of -1 keeps the old one, the state batches go through
  ``PersisterStateBatchCombiner``), or becomes the state when there is none;
- the leader and state epoch maps (``leaderEpochMap`` / ``stateEpochMap``, the epochs a write
  must not be below: FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH) keep the largest epoch seen
  (``maybeUpdateLeaderEpochMap`` / ``maybeUpdateStateEpochMap``), while the state itself keeps
  what the last record said: ``leader_epoch`` / ``state_epoch`` are what ReadShareGroupState
  and ReadShareGroupStateSummary report, ``max_leader_epoch`` / ``max_state_epoch`` the maps.

What Kafka's replay cannot do is reported, never raised: a record that does not decode (or
that Kafka's deserializer rejects, such as an unknown value version) goes to
:attr:`ShareStateReplay.problems`; a record that decodes but on which Kafka 4.4's replay throws
(a ShareUpdate tombstone: ``handleShareUpdate`` dereferences the null value; a merge in which
a state batch's END event, at ``lastOffset + 1``, sorts before its BEGIN (``lastOffset <
firstOffset``, or ``lastOffset`` = Long.MAX_VALUE wrapping) so that the combiner decrements a
priority that is not active) goes to :attr:`ShareStateReplay.failures`. Kafka's loader fails the partition load on
either; here the record is skipped, the state left as it was before it. Records of an unknown
record type are skipped as ``CoordinatorLoaderImpl`` does (:attr:`ShareStateReplay.ignored`).

Offsets are Java longs: ``lastOffset + 1`` wraps at 2**63 as in the Java code.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from kgtool.codec import scan_file
from kgtool.codec.model import ScanProblem
from kgtool.coordinator.records import decode_share_state_record
from kgtool.errors import InputError, KgtoolError

__all__ = [
    "SHARE_PARTITIONS",
    "StateBatch",
    "SharePartitionState",
    "ShareStateReplay",
    "KafkaReplayFailure",
    "combine_state_batches",
    "replay_files",
    "rows",
    "batch_label",
]

SNAPSHOT = "share_snapshot"
UPDATE = "share_update"
#: ``CoordinatorRecordType`` ids of the share coordinator (ShareSnapshot 0, ShareUpdate 1).
SHARE_RECORD_TYPES = (0, 1)

#: ``ShareCoordinatorConfig.SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT_DEFAULT``.
DEFAULT_UPDATES_PER_SNAPSHOT = 500
#: ``ShareGroupOffset`` constants.
NO_TIMESTAMP = 0
UNINITIALIZED_EPOCH = 0
UNINITIALIZED_DELIVERY_COMPLETE_COUNT = -1
UNINITIALIZED_START_OFFSET = -1

_INT8 = (-(1 << 7), (1 << 7) - 1)
_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)

#: The share partitions table: one row per share partition live at the end of the replay.
SHARE_PARTITIONS = [
    ("log_partition", "int32"),  # the __share_group_state partition
    ("group_id", "string"),
    ("topic_id", "string"),  # Kafka's Uuid.toString (base64url)
    ("partition", "int32"),
    ("snapshot_epoch", "int32"),
    ("state_epoch", "int32"),  # ShareGroupOffset.stateEpoch (0 when only updates were seen)
    ("leader_epoch", "int32"),  # ShareGroupOffset.leaderEpoch (what ReadShareGroupStateSummary reports)
    ("max_state_epoch", "int32"),  # stateEpochMap (largest seen; null when no snapshot since the last tombstone)
    ("max_leader_epoch", "int32"),  # leaderEpochMap (largest seen)
    ("start_offset", "int64"),
    ("delivery_complete_count", "int32"),  # -1: unknown
    ("state_batches", "list<string>"),  # "first-last:state:count", in the state's order
    ("create_timestamp", "int64"),
    ("write_timestamp", "int64"),
    ("updates_since_snapshot", "int32"),  # snapshotUpdateCount (see SharePartitionState)
    ("record_offset", "int64"),  # the last record that changed the state
    ("timestamp", "int64"),  # its timestamp
]


class KafkaReplayFailure(Exception):
    """A record on which Kafka 4.4's replay throws (its loader then fails the partition load)."""


class _BadRecord(Exception):
    """A record kgtool cannot read as a share state record (reason in the message)."""


def _wrap64(x: int) -> int:
    """Java long arithmetic: wrap to [-2**63, 2**63)."""
    return ((x + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


class StateBatch(NamedTuple):
    """``PersisterStateBatch``: equality on all four fields; ordering as its ``compareTo``
    (firstOffset, lastOffset, deliveryCount, deliveryState), not the tuple's field order."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    def _java_key(self) -> tuple[int, int, int, int]:
        return (self.first_offset, self.last_offset, self.delivery_count, self.delivery_state)

    # PersisterStateBatch.compareTo
    def __lt__(self, other):  # type: ignore[override]
        if not isinstance(other, StateBatch):
            return NotImplemented
        return self._java_key() < other._java_key()

    def __le__(self, other):  # type: ignore[override]
        if not isinstance(other, StateBatch):
            return NotImplemented
        return self._java_key() <= other._java_key()

    def __gt__(self, other):  # type: ignore[override]
        if not isinstance(other, StateBatch):
            return NotImplemented
        return self._java_key() > other._java_key()

    def __ge__(self, other):  # type: ignore[override]
        if not isinstance(other, StateBatch):
            return NotImplemented
        return self._java_key() >= other._java_key()

    def label(self) -> str:
        """``"first-last:state:count"``."""
        return batch_label(self)


def batch_label(b: Sequence[int]) -> str:
    """A state batch as ``"first-last:state:count"`` (the ``state_batches`` column)."""
    return f"{b[0]}-{b[1]}:{b[2]}:{b[3]}"


@dataclass(frozen=True, slots=True)
class SharePartitionState:
    """One share partition's state: ``ShareGroupOffset`` plus the shard's per-key maps.

    ``leader_epoch`` / ``state_epoch`` are the ``ShareGroupOffset``'s (reported by
    ReadShareGroupState / ReadShareGroupStateSummary); ``max_leader_epoch`` /
    ``max_state_epoch`` are ``leaderEpochMap`` / ``stateEpochMap`` (the largest epoch seen, used
    to fence writes; ``max_state_epoch`` is None when only ShareUpdate records were seen since
    the last tombstone, as Kafka's map then has no entry). ``updates_since_snapshot`` is
    ``snapshotUpdateCount`` (``getOrDefault(key, 0)``): +1 per ShareUpdate, and reset to 0 by a
    ShareSnapshot only once it has reached ``share.coordinator.snapshot.update.records.per.snapshot``
    (so an InitializeShareGroupState snapshot in between does not reset it). ``record_offset``
    and ``timestamp`` are those of the last record that changed this state.
    """

    group_id: str
    topic_id: str
    partition: int
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]
    create_timestamp: int
    write_timestamp: int
    record_offset: int
    timestamp: int
    updates_since_snapshot: int
    max_leader_epoch: int
    max_state_epoch: int | None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.group_id, self.topic_id, self.partition)


# ---------------------------------------------------------------------------------------------
# PersisterStateBatchCombiner


def combine_state_batches(
    batches_so_far: Iterable[Sequence[int]] | None,
    new_batches: Iterable[Sequence[int]] | None,
    start_offset: int,
) -> list[StateBatch]:
    """``PersisterStateBatchCombiner.combineStateBatches``: the union of both lists, clipped
    at ``start_offset`` (-1: no clipping), as the shortest non-overlapping cover where, on
    every offset, the batch with the highest (deliveryCount, deliveryState) wins, and
    adjacent ranges with the same (state, count) are coalesced. An input of one batch (after
    pruning) is returned as is, without any check, as Kafka does.

    Raises :class:`KafkaReplayFailure` where the Java code throws: a batch whose
    ``lastOffset + 1`` is not after its ``firstOffset`` ends before it begins, and the sweep
    then decrements a priority that is not active (``TreeMap.get`` -> null -> unboxing NPE).
    """
    pruned = _prune(batches_so_far, new_batches, start_offset)
    if len(pruned) <= 1:  # combineStateBatches: empty or one batch is returned as is
        return pruned
    return _sweep_merge(pruned)


def _as_batch(b: Sequence[int]) -> StateBatch:
    return b if isinstance(b, StateBatch) else StateBatch(*b)


def _prune(so_far, new, start_offset: int) -> list[StateBatch]:
    # PersisterStateBatchCombiner.prune / addPruned
    out: list[StateBatch] = []
    for src in (so_far or (), new or ()):
        for b in src:
            b = _as_batch(b)
            if start_offset != -1 and b.last_offset < start_offset:
                continue  # batch fully expired
            if start_offset == -1 or b.first_offset >= start_offset:
                out.append(b)
            else:  # start offset intersects batch -> clip
                out.append(StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count))
    return out


def _sweep_merge(batches: list[StateBatch]) -> list[StateBatch]:
    # PersisterStateBatchCombiner.sweepMerge: BEGIN at firstOffset, END at lastOffset + 1 (long
    # arithmetic); a priority is (deliveryCount, deliveryState), the highest active one wins.
    events: list[tuple[int, bool, tuple[int, int]]] = []
    for b in batches:
        priority = (b.delivery_count, b.delivery_state)
        events.append((b.first_offset, True, priority))
        events.append((_wrap64(b.last_offset + 1), False, priority))
    # END (False) sorts before BEGIN (True) at the same offset; stable, as Arrays.sort (TimSort).
    events.sort(key=lambda e: (e[0], e[1]))

    active: dict[tuple[int, int], int] = {}  # the TreeMap<BatchPriority, Integer> counts
    heap: list[tuple[int, int]] = []  # negated priorities, lazily cleaned: active.firstKey()
    out: list[StateBatch] = []
    open_from = -1
    open_winner: tuple[int, int] | None = None
    i, n = 0, len(events)
    while i < n:
        offset = events[i][0]
        # Emit the sub-range that ended at offset - 1 (if one was open).
        if open_winner is not None and offset > open_from:
            _append_coalesced(out, open_from, offset - 1, open_winner)
        # Apply every event at this offset (END before BEGIN by sort order).
        while i < n and events[i][0] == offset:
            _, is_begin, priority = events[i]
            i += 1
            if is_begin:
                count = active.get(priority, 0)
                active[priority] = count + 1
                if count == 0:
                    heapq.heappush(heap, (-priority[0], -priority[1]))
            else:
                # PersisterStateBatchCombiner.decrement: int count = active.get(priority)
                count = active.get(priority)
                if count is None:
                    raise KafkaReplayFailure(
                        "PersisterStateBatchCombiner.decrement: an END event (lastOffset + 1, long "
                        f"arithmetic) at {offset} for deliveryCount={priority[0]}, deliveryState={priority[1]} "
                        "comes before any BEGIN of that priority: NullPointerException"
                    )
                if count == 1:
                    del active[priority]
                else:
                    active[priority] = count - 1
        while heap and (-heap[0][0], -heap[0][1]) not in active:
            heapq.heappop(heap)
        open_winner = (-heap[0][0], -heap[0][1]) if heap else None
        open_from = offset
    return out


def _append_coalesced(out: list[StateBatch], start: int, end: int, winner: tuple[int, int]) -> None:
    # PersisterStateBatchCombiner.appendCoalesced
    count, state = winner
    if out:
        tail = out[-1]
        if _wrap64(tail.last_offset + 1) == start and tail.delivery_state == state and tail.delivery_count == count:
            out[-1] = StateBatch(tail.first_offset, end, state, count)
            return
    out.append(StateBatch(start, end, state, count))


# ---------------------------------------------------------------------------------------------
# Reading a decoded record


def _int(d: dict, name: str, bounds: tuple[int, int], default: int | None = None) -> int:
    v = d.get(name, default) if isinstance(d, dict) else None
    if v is None:
        raise _BadRecord(f"missing field {name}")
    if type(v) is not int or not bounds[0] <= v <= bounds[1]:
        raise _BadRecord(f"field {name} is not an integer in [{bounds[0]}, {bounds[1]}]: {v!r}")
    return v


def _str(d: dict, name: str) -> str:
    v = d.get(name) if isinstance(d, dict) else None
    if not isinstance(v, str):
        raise _BadRecord(f"field {name} is not a string: {v!r}")
    return v


def _key(key: Any) -> tuple[str, str, int]:
    # SharePartitionKey.getInstance(groupId, topicId, partition)
    if not isinstance(key, dict):
        raise _BadRecord(f"the key is not a ShareSnapshotKey / ShareUpdateKey: {key!r}")
    return (_str(key, "group_id"), _str(key, "topic_id"), _int(key, "partition", _INT32))


def _batches(value: dict) -> tuple[StateBatch, ...]:
    raw = value.get("state_batches")
    if not isinstance(raw, (list, tuple)):
        raise _BadRecord(f"field state_batches is not a list: {raw!r}")
    out = []
    for b in raw:
        if not isinstance(b, dict):
            raise _BadRecord(f"a state batch is not a StateBatch: {b!r}")
        out.append(StateBatch(
            _int(b, "first_offset", _INT64),
            _int(b, "last_offset", _INT64),
            _int(b, "delivery_state", _INT8),
            _int(b, "delivery_count", _INT16),
        ))
    return tuple(out)


def _max_epoch(old: int | None, new: int) -> int:
    # maybeUpdateLeaderEpochMap / maybeUpdateStateEpochMap: putIfAbsent, then raise if larger
    return new if old is None or old < new else old


# ---------------------------------------------------------------------------------------------
# The replay


class ShareStateReplay:
    """The share coordinator's soft state of one ``__share_group_state`` partition.

    ``problems``: (offset, reason) of records that do not decode (or that Kafka's deserializer
    rejects) and of unreadable bytes; ``failures``: (offset, reason) of records on which Kafka
    4.4's replay throws; ``ignored``: (offset, reason) of records of an unknown record type
    (skipped by Kafka's loader too). Every such record is skipped, the state unchanged.
    ``next_offset`` is the offset after the last batch read by :func:`replay_files` (Kafka's
    loaded offset), ``stopped_at`` the base offset of the batch where ``until`` stopped it.
    """

    def __init__(self, *, updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT) -> None:
        self.updates_per_snapshot = updates_per_snapshot
        self._states: dict[tuple[str, str, int], SharePartitionState] = {}
        self.problems: list[tuple[int, str]] = []
        self.failures: list[tuple[int, str]] = []
        self.ignored: list[tuple[int, str]] = []
        self.replayed = 0  # records applied
        self.next_offset: int | None = None
        self.stopped_at: int | None = None

    # -- queries --------------------------------------------------------------------------

    def partitions(self) -> list[SharePartitionState]:
        """The live share partitions, sorted by (group_id, topic_id, partition)."""
        return [self._states[k] for k in sorted(self._states)]

    def get(self, group_id: str, topic_id: str, partition: int) -> SharePartitionState | None:
        return self._states.get((group_id, topic_id, partition))

    def __len__(self) -> int:
        return len(self._states)

    # -- replay ---------------------------------------------------------------------------

    def replay_bytes(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None) -> None:
        """Decode one record's key and value and :meth:`replay` it (a record that does not
        decode goes to :attr:`problems`)."""
        try:
            record = decode_share_state_record(key, value)
        except Exception as exc:  # DecodeError, or anything the decoder trips on: never raise
            self.problems.append((offset, f"does not decode: {exc}"))
            return
        self.replay(offset, timestamp, record)

    def replay(self, offset: int, timestamp: int, record: Any) -> None:
        """``ShareCoordinatorShard.replay`` of one decoded record (a
        :class:`~kgtool.coordinator.records.CoordinatorRecord`)."""
        try:
            self._replay(offset, timestamp, record)
        except _BadRecord as exc:
            self.problems.append((offset, str(exc)))
        except KafkaReplayFailure as exc:
            self.failures.append((offset, str(exc)))
        except Exception as exc:  # bad input must never raise
            self.problems.append((offset, f"unexpected {type(exc).__name__}: {exc}"))

    def _replay(self, offset: int, timestamp: int, record: Any) -> None:
        kind = getattr(record, "kind", None)
        if kind == SNAPSHOT:
            self._snapshot(offset, timestamp, _key(record.key), record.value)
        elif kind == UPDATE:
            self._update(offset, timestamp, _key(record.key), record.value)
        elif kind == "unknown":
            rtype = getattr(record, "record_type", None)
            if rtype in SHARE_RECORD_TYPES:
                # CoordinatorRecordSerde.deserialize: UnknownRecordVersionException, fatal to the load
                self.problems.append((offset, f"unknown value version {getattr(record, 'value_version', None)} "
                                              f"of record type {rtype}"))
            else:
                # CoordinatorLoaderImpl: UnknownRecordTypeException is logged and the record skipped
                self.ignored.append((offset, f"unknown record type {rtype}"))
        else:
            raise _BadRecord(f"not a __share_group_state record (kind {kind!r})")

    def _snapshot(self, offset: int, timestamp: int, key: tuple[str, str, int], value: Any) -> None:
        # ShareCoordinatorShard.handleShareSnapshot
        if value is None:
            # tombstone: shareStateMap, leaderEpochMap, stateEpochMap, snapshotUpdateCount
            self._states.pop(key, None)
            self.replayed += 1
            return
        if not isinstance(value, dict):
            raise _BadRecord(f"the value is not a ShareSnapshotValue: {value!r}")
        leader_epoch = _int(value, "leader_epoch", _INT32)
        state_epoch = _int(value, "state_epoch", _INT32)
        # ShareGroupOffset.fromRecord(ShareSnapshotValue): batches kept as written
        fields = dict(
            snapshot_epoch=_int(value, "snapshot_epoch", _INT32),
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=_int(value, "start_offset", _INT64),
            delivery_complete_count=_int(value, "delivery_complete_count", _INT32,
                                         UNINITIALIZED_DELIVERY_COMPLETE_COUNT),
            state_batches=_batches(value),
            create_timestamp=_int(value, "create_timestamp", _INT64),
            write_timestamp=_int(value, "write_timestamp", _INT64),
        )
        prev = self._states.get(key)
        count = 0 if prev is None else prev.updates_since_snapshot
        if count >= self.updates_per_snapshot:  # "If number of share updates is exceeded, then reset it."
            count = 0
        self._states[key] = SharePartitionState(
            group_id=key[0], topic_id=key[1], partition=key[2], **fields,
            record_offset=offset, timestamp=timestamp,
            updates_since_snapshot=count,
            max_leader_epoch=_max_epoch(None if prev is None else prev.max_leader_epoch, leader_epoch),
            max_state_epoch=_max_epoch(None if prev is None else prev.max_state_epoch, state_epoch),
        )
        self.replayed += 1

    def _update(self, offset: int, timestamp: int, key: tuple[str, str, int], value: Any) -> None:
        # ShareCoordinatorShard.handleShareUpdate
        if value is None:
            raise KafkaReplayFailure(
                "ShareUpdate tombstone: handleShareUpdate reads value.leaderEpoch() of the null value "
                "(NullPointerException); Kafka writes tombstones as ShareSnapshot records only"
            )
        if not isinstance(value, dict):
            raise _BadRecord(f"the value is not a ShareUpdateValue: {value!r}")
        snapshot_epoch = _int(value, "snapshot_epoch", _INT32)
        leader_epoch = _int(value, "leader_epoch", _INT32)
        start_offset = _int(value, "start_offset", _INT64)
        delivery_complete_count = _int(value, "delivery_complete_count", _INT32,
                                       UNINITIALIZED_DELIVERY_COMPLETE_COUNT)
        batches = _batches(value)
        prev = self._states.get(key)
        if prev is None:
            # ShareGroupOffset.fromRecord(ShareUpdateValue): no state epoch, no timestamps,
            # batches kept as written; stateEpochMap gets no entry.
            new = SharePartitionState(
                group_id=key[0], topic_id=key[1], partition=key[2],
                snapshot_epoch=snapshot_epoch, state_epoch=UNINITIALIZED_EPOCH, leader_epoch=leader_epoch,
                start_offset=start_offset, delivery_complete_count=delivery_complete_count,
                state_batches=batches, create_timestamp=NO_TIMESTAMP, write_timestamp=NO_TIMESTAMP,
                record_offset=offset, timestamp=timestamp, updates_since_snapshot=1,
                max_leader_epoch=leader_epoch, max_state_epoch=None,
            )
        else:
            # ShareCoordinatorShard.merge: snapshot epoch, state epoch and timestamps of the state
            new_start = prev.start_offset if start_offset == -1 else start_offset
            new_leader = prev.leader_epoch if leader_epoch == -1 else leader_epoch
            combined = combine_state_batches(prev.state_batches, batches, new_start)  # may raise
            new = replace(
                prev,
                start_offset=new_start,
                delivery_complete_count=delivery_complete_count,
                leader_epoch=new_leader,
                state_batches=tuple(combined),
                record_offset=offset,
                timestamp=timestamp,
                updates_since_snapshot=prev.updates_since_snapshot + 1,
                max_leader_epoch=_max_epoch(prev.max_leader_epoch, leader_epoch),
            )
        self._states[key] = new
        self.replayed += 1


# ---------------------------------------------------------------------------------------------
# Segment files and rows


def replay_files(
    paths: Iterable[str],
    until: int | None = None,
    *,
    updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT,
) -> ShareStateReplay:
    """Replay the segment files of one ``__share_group_state`` partition, in the order given
    (log order: oldest segment first).

    ``until`` (epoch ms): stop before the first batch whose timestamp (``max_timestamp``) is at
    or after it, control batches included: the state Kafka had loaded between two batches.
    Control batches are otherwise skipped (``replayEndTransactionMarker`` changes nothing in the
    share coordinator); transactional records are replayed at once, as the shard ignores
    producer ids. Unreadable bytes become :attr:`ShareStateReplay.problems` (offset -1 when
    unknown). A missing or unreadable file raises :class:`kgtool.errors.InputError`.
    """
    rp = ShareStateReplay(updates_per_snapshot=updates_per_snapshot)
    for path in paths:
        if _replay_file(rp, path, until):
            break
    return rp


def _replay_file(rp: ShareStateReplay, path: str, until: int | None) -> bool:
    """Replay one file into ``rp``; True when ``until`` stopped it."""
    batches = scan_file(path)  # InputError when missing or unreadable, at the first item
    try:
        for item in batches:
            if isinstance(item, ScanProblem):
                off = item.base_offset if item.base_offset is not None else -1
                rp.problems.append((off, f"{item.kind} at byte {item.position} of {path}: {item.message}"))
                continue
            if until is not None and item.max_timestamp >= until:
                rp.stopped_at = item.base_offset
                return True
            if not item.is_control:
                for r in item.records:
                    rp.replay_bytes(r.offset, r.timestamp, r.key, r.value)
            rp.next_offset = item.next_offset
    except InputError:
        raise
    except KgtoolError as exc:  # the scanner gave up on the rest of the file
        rp.problems.append((-1, f"{path}: {exc}"))
    finally:
        batches.close()
    return False


def rows(replay: ShareStateReplay, log_partition: int) -> list[dict[str, Any]]:
    """One dict per live share partition, with the :data:`SHARE_PARTITIONS` columns in order."""
    out = []
    for s in replay.partitions():
        out.append({
            "log_partition": log_partition,
            "group_id": s.group_id,
            "topic_id": s.topic_id,
            "partition": s.partition,
            "snapshot_epoch": s.snapshot_epoch,
            "state_epoch": s.state_epoch,
            "leader_epoch": s.leader_epoch,
            "max_state_epoch": s.max_state_epoch,
            "max_leader_epoch": s.max_leader_epoch,
            "start_offset": s.start_offset,
            "delivery_complete_count": s.delivery_complete_count,
            "state_batches": [batch_label(b) for b in s.state_batches],
            "create_timestamp": s.create_timestamp,
            "write_timestamp": s.write_timestamp,
            "updates_since_snapshot": s.updates_since_snapshot,
            "record_offset": s.record_offset,
            "timestamp": s.timestamp,
        })
    return out
