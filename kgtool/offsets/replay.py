"""Per-group replay of ``__consumer_offsets`` records, and the stale-commit rules.

All records of a group live in one ``__consumer_offsets`` partition (the coordinator's
partition, ``GroupCoordinatorService.partitionFor``), so a group's history is the replay of
its records in offset order. Transaction markers carry no group: they reach the group through
the annotation of its transactional records (:func:`kgtool.offsets.entries.annotate_transactions`),
and are replayed here at their own offset.

Replay semantics follow Kafka 4.x:

- ``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)``: a value replaces the
  classic group (a new generation); a tombstone removes the group.
- ``OffsetMetadataManager.replay(recordOffset, producerId, OffsetCommitKey, OffsetCommitValue)``:
  a non-transactional value is stored directly; a transactional one goes to the producer's
  pending offsets; a tombstone removes the committed offset *and* the pending transactional
  offsets of that partition.
- ``OffsetMetadataManager.replayEndTransactionMarker``: COMMIT moves the producer's pending
  offsets into the store only where ``pending.recordOffset > existing.recordOffset`` (or no
  entry exists); ABORT drops them.
- KIP-848 records (``ConsumerGroupMetadata``/``...MemberMetadata``/``...CurrentMemberAssignment``
  ...): each group epoch is that protocol's generation; ownership is the members' current
  assignment (assigned plus pending revocation).

Rules (exact semantics; the README and man page repeat them):

- ``rewind``: a commit becomes effective with an offset lower than the partition's previous
  effective offset while the group has members (not Empty) and the ``zombie`` rule does not
  apply. A lower commit while the group is Empty (no generation, or a generation without
  members: what ``kafka-consumer-groups.sh --reset-offsets`` requires) is a deliberate reset:
  no finding, ``note`` = "reset while Empty" in the commits table.
- ``zombie``: a commit becomes effective lower than the previous effective offset, after the
  partition moved (its owner set in some generation differs from the last non-empty owner set
  before it) and the new owners already committed, since the move, an offset above it.
- ``orphan``: a commit record written while the group has members and known assignments
  (classic ``consumer`` protocol, or KIP-848) for a partition no member owns, unless a member
  that owned it in the previous generation is still a member (a cooperative revocation in
  transit: the member commits in ``onPartitionsRevoked`` before its next join). A
  transactional commit is judged against the generation of its write and reported once its
  COMMIT marker makes it effective.
- ``epoch-regression``: a commit becomes effective with a leader epoch (>= 0) lower than the
  highest leader epoch of the partition's earlier effective commits since its last offset
  tombstone. Leader epoch -1 (unknown, e.g. admin tools and OffsetCommitValue v1) is not compared.
- ``expiring``: at the end of the log, the group is Empty (or a simple group without
  metadata), and one of its offsets is expired by Kafka's condition
  (``ClassicGroup.offsetExpirationCondition``, ``OffsetExpirationConditionImpl``): with an
  expire timestamp (v1 values), ``end >= expire_timestamp``; otherwise
  ``end - base >= retention`` where base is the group's ``current_state_timestamp`` when
  known, else the commit timestamp. Offsets with an open transaction are kept (as
  ``cleanupExpiredOffsets`` does). ``end`` is the last record timestamp of the partition.
- ``aborted-txn``: a transactional commit whose transaction was ABORTed, and which would
  otherwise be the latest offset of its partition at the log's end: no effective commit or
  offset tombstone at a higher record offset followed it.
- ``pending-txn``: the same for a transactional commit with no marker by the log's end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kgtool.offsets.entries import (
    CONSUMER_GROUP_PREFIX,
    ENTRY_NAMES,
    GROUP_METADATA,
    NO_PRODUCER_ID,
    OFFSET_COMMIT_KINDS,
    LogEntry,
    entry_from_row,
)
from kgtool.offsets.tables import COMMITS

COMMIT_NAMES = [name for name, _t in COMMITS]
_LOG_ENTRY_FIELDS = frozenset(f.name for f in fields(LogEntry))

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes default (10080)

TopicPartition = tuple[str, int]


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@dataclass
class Generation:
    """A generation in effect: classic (GroupMetadata) or KIP-848 (group epoch)."""

    protocol: str  # "classic" / "consumer"
    generation_id: int
    record_offset: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    current_state_timestamp: int | None = None
    members: list[str] = field(default_factory=list)
    # None when assignments are unknown (a non-consumer protocol, undecodable assignments).
    owners: dict[TopicPartition, list[str]] | None = None
    row: dict[str, Any] | None = None  # its generations-table row, updated as the log goes on

    @property
    def empty(self) -> bool:
        return not self.members


@dataclass
class GroupResult:
    """The replay of one group: rows of the generations, members, findings tables, and the
    commits table column by column (the bulk of the output: one row per commit record)."""

    generations: list[dict[str, Any]] = field(default_factory=list)
    members: list[dict[str, Any]] = field(default_factory=list)
    commit_columns: dict[str, list[Any]] = field(default_factory=lambda: {n: [] for n in COMMIT_NAMES})
    findings: list[dict[str, Any]] = field(default_factory=list)
    #: The committed offsets at the end of the log (what the coordinator would load).
    offsets: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def commits(self) -> list[dict[str, Any]]:
        """The commits table as rows (dicts with the columns of ``COMMITS``, in order)."""
        cols = [self.commit_columns[n] for n in COMMIT_NAMES]
        return [dict(zip(COMMIT_NAMES, vals)) for vals in zip(*cols)]

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "generations": self.generations,
            "members": self.members,
            "commits": self.commits,
            "findings": self.findings,
        }


def _get(d: dict[str, Any] | None, *names: str, default: Any = None) -> Any:
    """The first present field among ``names`` (snake_case as kgtool decodes it)."""
    if not d:
        return default
    for n in names:
        if n in d and d[n] is not None:
            return d[n]
    return default


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _topic_partitions(items: Any, topic_names: dict[str, str] | None = None) -> list[TopicPartition] | None:
    """``[{topic|topic_id, partitions: [..]}]`` -> sorted topic partitions; None if absent."""
    if items is None:
        return None
    out: list[TopicPartition] = []
    for it in items:
        if isinstance(it, (list, tuple)) and len(it) == 2:
            out.append((str(it[0]), int(it[1])))
            continue
        topic = _get(it, "topic", "topic_name")
        if topic is None:
            tid = _get(it, "topic_id")
            if tid is None:
                continue
            topic = (topic_names or {}).get(str(tid), str(tid))
        for p in _get(it, "partitions", default=[]) or []:
            out.append((str(topic), int(p)))
    return sorted(set(out))


class _GroupReplay:
    """The replay state of one group over the columns of its records (offset order).

    ``cols`` are entry columns (:data:`kgtool.offsets.entries.ENTRY_NAMES`); offset commits
    are read from the flat columns (``topic`` ... ``expire_timestamp``) and leave as columns of
    the commits table: commit ``j`` is input row ``c_src[j]``. Everything else (generations,
    members, markers, findings) is rare and kept as rows.
    """

    def __init__(self, group: str, log_partition: int, retention_ms: int, cols: dict[str, list[Any]]) -> None:
        self.group = group
        self.log_partition = log_partition
        self.retention_ms = retention_ms
        self.cols = cols
        self.result = GroupResult()
        self.gen: Generation | None = None
        self.prev_gen: Generation | None = None
        self.exists = False  # the group exists in the coordinator (created by metadata or commit)
        # Commits, by index j in the commits table.
        self.c_src: list[int] = []  # input row
        self.c_off: list[int | None] = []  # committed offset (None: tombstone)
        self.c_le: list[int | None] = []  # leader epoch (-1 unknown; None: tombstone)
        self.c_txn: list[bool] = []
        self.c_gen_id: list[int | None] = []
        self.c_protocol: list[str | None] = []
        self.c_state: list[str] = []
        self.c_owners: list[list[str] | None] = []
        self.c_token: list[int | None] = []  # record offset of the generation it was written in
        self.c_effective: list[bool] = []
        self.c_eff_at: list[int | None] = []
        self.c_note: list[str | None] = []
        self.c_txn_result: list[str | None] = []
        self.c_txn_marker: list[int | None] = []
        # tp -> commit index of the partition's effective offset (OffsetMetadataManager's store)
        self.offsets: dict[TopicPartition, int] = {}
        # producer id -> tp -> commit index of pending transactional offsets
        self.pending: dict[int, dict[TopicPartition, int]] = {}
        self.max_epoch: dict[TopicPartition, int] = {}
        self.last_owners: dict[TopicPartition, tuple[str, ...]] = {}
        self.moved_at: dict[TopicPartition, int] = {}  # gen token of the last move
        self.max_since_move: dict[TopicPartition, int] = {}  # commit index
        self.last_removal: dict[TopicPartition, int] = {}  # record offset of last offset tombstone
        self.aborted: dict[TopicPartition, int] = {}  # commit index
        self.txn_rows: list[int] = []  # commit indexes of transactional commits
        self.txn_orphans: dict[int, str] = {}  # commit index -> orphan sentence
        # KIP-848 state
        self.kip848_members: dict[str, dict[str, Any]] = {}
        self.kip848_assigned: dict[str, list[TopicPartition]] = {}
        self.kip848_epochs: dict[str, int] = {}
        self.topic_names: dict[str, str] = {}
        self._snapshot()

    def _snapshot(self) -> None:
        """What a commit written now is attributed to (after any change of the generation)."""
        gen = self.gen
        self.s_gen_id = None if gen is None else gen.generation_id
        self.s_protocol = None if gen is None else gen.protocol
        self.s_state = "Empty" if gen is None or gen.empty else "Stable"
        self.s_token = None if gen is None else gen.record_offset
        if gen is None or gen.owners is None:
            self.s_owners: dict[TopicPartition, list[str]] | None = None
        else:
            self.s_owners = {tp: sorted(o) for tp, o in gen.owners.items()}
        # The orphan rule looks at commits only while the group has members and known owners.
        self.s_orphan_check = gen is not None and not gen.empty and gen.owners is not None

    # ---- generations -------------------------------------------------------------------
    def _start_generation(self, gen: Generation, e: LogEntry, state: str) -> None:
        if self.gen is not None and self.gen.row is not None:
            self.gen.row["end_record_offset"] = e.offset
        self.prev_gen = self.gen
        self.gen = gen
        if gen.owners is not None:
            self._track_moves(gen)
        gen.row = {
            "group": self.group,
            "log_partition": self.log_partition,
            "protocol": gen.protocol,
            "generation_id": gen.generation_id,
            "protocol_type": gen.protocol_type,
            "protocol_name": gen.protocol_name,
            "leader": gen.leader,
            "state": state,
            "member_count": len(gen.members),
            "current_state_timestamp": gen.current_state_timestamp,
            "record_offset": e.offset,
            "position": e.position,
            "source": e.source,
            "timestamp": e.timestamp,
            "end_record_offset": None,
            "commit_count": 0,
        }
        self.result.generations.append(gen.row)
        self._snapshot()

    def _track_moves(self, gen: Generation) -> None:
        assert gen.owners is not None
        for tp, owners in gen.owners.items():
            now = tuple(sorted(owners))
            before = self.last_owners.get(tp)
            if before is not None and before != now:
                self.moved_at[tp] = gen.record_offset
                self.max_since_move.pop(tp, None)
            self.last_owners[tp] = now

    def _classic_metadata(self, e: LogEntry) -> None:
        if e.value is None:
            # GroupMetadataManager.replay: a tombstone removes the group.
            if self.gen is not None and self.gen.row is not None:
                self.gen.row["end_record_offset"] = e.offset
            self.prev_gen = self.gen
            self.gen = None
            self.exists = False
            self._snapshot()
            self.result.generations.append(
                {
                    "group": self.group,
                    "log_partition": self.log_partition,
                    "protocol": "classic",
                    "generation_id": None,
                    "protocol_type": None,
                    "protocol_name": None,
                    "leader": None,
                    "state": "Dead",
                    "member_count": 0,
                    "current_state_timestamp": None,
                    "record_offset": e.offset,
                    "position": e.position,
                    "source": e.source,
                    "timestamp": e.timestamp,
                    "end_record_offset": None,
                    "commit_count": 0,
                }
            )
            return
        v = e.value
        members = list(_get(v, "members", default=[]) or [])
        protocol_type = _get(v, "protocol_type")
        gen_id = int(_get(v, "generation", "generation_id", default=0))
        owners: dict[TopicPartition, list[str]] | None = {}
        member_rows = []
        known = protocol_type == "consumer"
        for m in members:
            mid = str(_get(m, "member_id", default=""))
            sub = _get(m, "subscription_decoded")
            asg = _get(m, "assignment_decoded")
            assigned = _topic_partitions(_get(asg, "assigned_partitions")) if isinstance(asg, dict) else None
            if assigned is None:
                known = False
                assigned = []
            for tp in assigned:
                owners.setdefault(tp, []).append(mid)  # type: ignore[union-attr]
            owned = _topic_partitions(_get(sub, "owned_partitions")) if isinstance(sub, dict) else None
            member_rows.append(
                {
                    "group": self.group,
                    "log_partition": self.log_partition,
                    "protocol": "classic",
                    "generation_id": gen_id,
                    "member_id": mid,
                    "group_instance_id": _get(m, "group_instance_id"),
                    "client_id": _get(m, "client_id"),
                    "client_host": _get(m, "client_host"),
                    "rack_id": _get(sub, "rack_id") if isinstance(sub, dict) else None,
                    "session_timeout_ms": _int_or_none(_get(m, "session_timeout")),
                    "rebalance_timeout_ms": _int_or_none(_get(m, "rebalance_timeout")),
                    "is_leader": mid == _get(v, "leader"),
                    "member_epoch": None,
                    "subscribed_topics": sorted(_get(sub, "topics", default=[]) or []) if isinstance(sub, dict) else None,
                    "owned_partitions": None if owned is None else [tp_name(t) for t in owned],
                    "assigned_partitions": [tp_name(t) for t in assigned] if (isinstance(asg, dict)) else None,
                    "record_offset": e.offset,
                    "timestamp": e.timestamp,
                }
            )
        if not known:
            owners = None
        gen = Generation(
            protocol="classic",
            generation_id=gen_id,
            record_offset=e.offset,
            protocol_type=protocol_type,
            protocol_name=_get(v, "protocol"),
            leader=_get(v, "leader"),
            current_state_timestamp=_int_or_none(_get(v, "current_state_timestamp")),
            members=[r["member_id"] for r in member_rows],
            owners=owners if members else {},
        )
        self.exists = True
        self._start_generation(gen, e, "Empty" if not members else "Stable")
        self.result.members.extend(member_rows)

    # ---- KIP-848 -----------------------------------------------------------------------
    def _kip848(self, e: LogEntry) -> None:
        kind = e.kind or ""
        key, v = e.key or {}, e.value
        mid = _get(key, "member_id")
        if kind == "consumer_group_partition_metadata" and v is not None:
            for t in _get(v, "topics", default=[]) or []:
                tid, name = _get(t, "topic_id"), _get(t, "topic_name")
                if tid is not None and name is not None:
                    self.topic_names[str(tid)] = str(name)
            return
        if kind == "consumer_group_member_metadata":
            if mid is None:
                return
            if v is None:
                self.kip848_members.pop(str(mid), None)
            else:
                self.kip848_members[str(mid)] = v
            return
        if kind == "consumer_group_current_member_assignment":
            if mid is None:
                return
            mid = str(mid)
            if v is None:
                self.kip848_assigned.pop(mid, None)
                self.kip848_epochs.pop(mid, None)
            else:
                tps = set(_topic_partitions(_get(v, "assigned_partitions", default=[]), self.topic_names) or [])
                tps |= set(
                    _topic_partitions(_get(v, "partitions_pending_revocation", default=[]), self.topic_names) or []
                )
                self.kip848_assigned[mid] = sorted(tps)
                self.kip848_epochs[mid] = int(_get(v, "member_epoch", default=-1))
                self._kip848_member_row(mid, e)
            self._kip848_refresh_owners()
            return
        if kind == "consumer_group_metadata":
            if v is None:
                self._classic_metadata(e)  # a group tombstone: same effect
                self.kip848_members.clear()
                self.kip848_assigned.clear()
                self.kip848_epochs.clear()
                return
            epoch = int(_get(v, "epoch", "group_epoch", default=0))
            gen = Generation(
                protocol="consumer",
                generation_id=epoch,
                record_offset=e.offset,
                protocol_type="consumer",
                protocol_name=None,
                members=sorted(self.kip848_members),
                owners={},
            )
            self.exists = True
            self._start_generation(gen, e, "Empty" if not gen.members else "Stable")
            self._kip848_refresh_owners()
            return
        # Target assignment records and others: part of the history, no ownership change.

    def _kip848_refresh_owners(self) -> None:
        if self.gen is None or self.gen.protocol != "consumer":
            return
        owners: dict[TopicPartition, list[str]] = {}
        for mid, tps in self.kip848_assigned.items():
            for tp in tps:
                owners.setdefault(tp, []).append(mid)
        self.gen.owners = owners
        self.gen.members = sorted(set(self.kip848_members) | set(self.kip848_assigned))
        if self.gen.row is not None:
            self.gen.row["member_count"] = len(self.gen.members)
            self.gen.row["state"] = "Empty" if not self.gen.members else "Stable"
        self._track_moves(self.gen)
        self._snapshot()

    def _kip848_member_row(self, mid: str, e: LogEntry) -> None:
        md = self.kip848_members.get(mid, {})
        self.result.members.append(
            {
                "group": self.group,
                "log_partition": self.log_partition,
                "protocol": "consumer",
                "generation_id": None if self.gen is None else self.gen.generation_id,
                "member_id": mid,
                "group_instance_id": _get(md, "instance_id"),
                "client_id": _get(md, "client_id"),
                "client_host": _get(md, "client_host"),
                "rack_id": _get(md, "rack_id"),
                "session_timeout_ms": None,
                "rebalance_timeout_ms": _int_or_none(_get(md, "rebalance_timeout_ms")),
                "is_leader": False,
                "member_epoch": self.kip848_epochs.get(mid),
                "subscribed_topics": sorted(_get(md, "subscribed_topic_names", default=[]) or []),
                "owned_partitions": None,
                "assigned_partitions": [tp_name(t) for t in self.kip848_assigned.get(mid, [])],
                "record_offset": e.offset,
                "timestamp": e.timestamp,
            }
        )

    # ---- commits -----------------------------------------------------------------------
    def _commit(self, i: int, tp: TopicPartition) -> None:
        """Replay the offset commit record of input row ``i`` (the hot path: one call per commit)."""
        cols = self.cols
        j = len(self.c_src)
        self.c_src.append(i)
        offset = cols["commit_offset"][i]
        self.c_off.append(offset)
        pid = cols["producer_id"][i]
        transactional = pid != NO_PRODUCER_ID
        self.c_txn.append(transactional)
        self.c_gen_id.append(self.s_gen_id)
        self.c_protocol.append(self.s_protocol)
        self.c_state.append(self.s_state)
        owners = self.s_owners
        self.c_owners.append(None if owners is None else owners.get(tp, []))
        self.c_token.append(self.s_token)
        self.c_effective.append(False)
        self.c_eff_at.append(None)
        self.c_note.append(None)
        gen = self.gen
        if gen is not None and gen.row is not None:
            gen.row["commit_count"] += 1
        record_offset = cols["offset"][i]
        if offset is None:
            # OffsetMetadataManager.replay, tombstone: remove the offset and the pending
            # transactional offsets of this partition.
            self.c_le.append(None)
            self.c_txn_result.append(None)
            self.c_txn_marker.append(None)
            self.offsets.pop(tp, None)
            for pend in self.pending.values():
                pend.pop(tp, None)
            self.max_epoch.pop(tp, None)
            self.max_since_move.pop(tp, None)
            self.last_removal[tp] = record_offset
            return
        le = cols["leader_epoch"][i]
        self.c_le.append(-1 if le is None else le)
        self.exists = True
        if transactional:
            marker_offset = cols["marker_offset"][i]
            self.c_txn_result.append("PENDING" if marker_offset is None else cols["marker_type"][i])
            self.c_txn_marker.append(marker_offset)
            self.pending.setdefault(pid, {})[tp] = j
            self.txn_rows.append(j)
            # Orphan is judged against the generation in effect when the record was written;
            # reported only if the commit takes effect (at its COMMIT marker).
            message = self._orphan_message(j, tp) if self.s_orphan_check else None
            if message is not None:
                self.txn_orphans[j] = message
            return
        self.c_txn_result.append(None)
        self.c_txn_marker.append(None)
        if self.s_orphan_check and not owners.get(tp):  # type: ignore[union-attr]
            message = self._orphan_message(j, tp)
            if message is not None:
                self._finding("orphan", j, message)
        self._apply(j, tp, record_offset)

    def _orphan_message(self, j: int, tp: TopicPartition) -> str | None:
        """The orphan finding's sentence for commit ``j`` written now, or None (sets ``note``
        for a cooperative revocation in transit)."""
        gen = self.gen
        if gen is None or gen.empty or gen.owners is None:
            return None
        if gen.owners.get(tp):
            return None
        prev = self.prev_gen
        # Cooperative revocation in transit: the previous owner is still a member.
        if (
            prev is not None
            and prev.owners
            and gen.record_offset != prev.record_offset
            and set(prev.owners.get(tp, [])) & set(gen.members)
        ):
            self.c_note[j] = "owner revoking (cooperative)"
            return None
        return (
            f"commit of {tp_name(tp)} at offset {self.c_off[j]} while generation "
            f"{gen.generation_id} has {len(gen.members)} member(s) and none owns the partition"
        )

    def _apply(self, j: int, tp: TopicPartition, at_offset: int) -> None:
        """Make commit ``j`` the partition's offset and check the rules that compare with the past."""
        c_off = self.c_off
        prev = self.offsets.get(tp)
        self.c_effective[j] = True
        self.c_eff_at[j] = at_offset
        offset = c_off[j]
        # epoch-regression
        leader_epoch = self.c_le[j]
        if leader_epoch >= 0:  # type: ignore[operator]
            best = self.max_epoch.get(tp)
            if best is not None and leader_epoch < best:  # type: ignore[operator]
                self._finding(
                    "epoch-regression",
                    j,
                    f"commit of {tp_name(tp)} carries leader epoch {leader_epoch}, below "
                    f"epoch {best} of an earlier commit: written from stale metadata",
                    previous=prev,
                )
            if best is None or leader_epoch > best:  # type: ignore[operator]
                self.max_epoch[tp] = leader_epoch  # type: ignore[assignment]
        # rewind / zombie
        if prev is not None and offset < c_off[prev]:  # type: ignore[operator]
            self._lower_commit(j, tp, prev)
        self.offsets[tp] = j
        moved = self.moved_at.get(tp)
        if moved is not None:
            token = self.c_token[j]
            if token is not None and token >= moved:
                top = self.max_since_move.get(tp)
                if top is None or offset > c_off[top]:  # type: ignore[operator]
                    self.max_since_move[tp] = j

    def _lower_commit(self, j: int, tp: TopicPartition, prev: int) -> None:
        """Commit ``j`` takes effect below the previous effective commit ``prev``."""
        offset, prev_offset = self.c_off[j], self.c_off[prev]
        if self.c_state[j] == "Empty":
            self.c_note[j] = "reset while Empty"
            return
        top = self.max_since_move.get(tp)
        if tp in self.moved_at and top is not None and self.c_off[top] > offset:  # type: ignore[operator]
            self._finding(
                "zombie",
                j,
                f"commit of {tp_name(tp)} at offset {offset} goes below offset "
                f"{self.c_off[top]} that the partition's new owner committed in generation "
                f"{self.c_gen_id[top]} after the rebalance that moved it: a previous owner "
                f"still committing (records from {offset} will be reprocessed)",
                previous=top,
            )
        else:
            self._finding(
                "rewind",
                j,
                f"commit of {tp_name(tp)} moves the offset back from {prev_offset} to "
                f"{offset} while the group is not Empty (not a reset): "
                f"{prev_offset - offset} records will be consumed again",  # type: ignore[operator]
                previous=prev,
            )

    def _marker(self, producer_id: int, marker_type: str, marker_offset: int) -> None:
        pend = self.pending.pop(producer_id, None)
        if not pend:
            return
        rec = self.cols["offset"]
        src = self.c_src
        for tp, j in sorted(pend.items(), key=lambda kv: rec[src[kv[1]]]):
            if marker_type == "COMMIT":
                existing = self.offsets.get(tp)
                # OffsetMetadataManager.replayEndTransactionMarker: only a higher record offset wins.
                if existing is None or rec[src[j]] > rec[src[existing]]:
                    message = self.txn_orphans.pop(j, None)
                    if message is not None:
                        self._finding("orphan", j, message)
                    self._apply(j, tp, marker_offset)
                else:
                    self.c_note[j] = "committed, superseded by a later commit record"
            else:
                self.aborted[tp] = j

    def _finding(self, rule: str, j: int, message: str, *, previous: int | None = None) -> None:
        cols = self.cols
        i = self.c_src[j]
        p = None if previous is None else self.c_src[previous]
        self.result.findings.append(
            {
                "rule": rule,
                "group": self.group,
                "log_partition": self.log_partition,
                "topic": cols["topic"][i],
                "partition": cols["partition"][i],
                "offset": self.c_off[j],
                "record_offset": cols["offset"][i],
                "position": cols["position"][i],
                "source": cols["source"][i],
                "timestamp": cols["timestamp"][i],
                "generation_id": self.c_gen_id[j],
                "previous_offset": None if previous is None else self.c_off[previous],
                "previous_record_offset": None if p is None else cols["offset"][p],
                "previous_position": None if p is None else cols["position"][p],
                "previous_generation_id": None if previous is None else self.c_gen_id[previous],
                "message": message,
            }
        )

    # ---- end of log --------------------------------------------------------------------
    def _record_offset(self, j: int) -> int:
        return self.cols["offset"][self.c_src[j]]

    def _later_than_store(self, tp: TopicPartition, record_offset: int) -> bool:
        cur = self.offsets.get(tp)
        if cur is not None and self._record_offset(cur) > record_offset:
            return False
        removed = self.last_removal.get(tp)
        return removed is None or removed < record_offset

    def finish(self, log_end_timestamp: int | None) -> GroupResult:
        cols = self.cols
        # aborted-txn / pending-txn: would otherwise be the latest offset.
        for tp, j in sorted(self.aborted.items()):
            if self._later_than_store(tp, self._record_offset(j)) and self._still_latest_txn(tp, j):
                cur = self.offsets.get(tp)
                self._finding(
                    "aborted-txn",
                    j,
                    f"transactional commit of {tp_name(tp)} at offset {self.c_off[j]} (producer "
                    f"{cols['producer_id'][self.c_src[j]]}) was ABORTED and nothing later replaced it: the group "
                    + (f"stays at offset {self.c_off[cur]}" if cur is not None else "has no committed offset for it"),
                    previous=cur,
                )
        latest_pending: dict[TopicPartition, int] = {}
        for pend in self.pending.values():
            for tp, j in pend.items():
                if tp not in latest_pending or self._record_offset(j) > self._record_offset(latest_pending[tp]):
                    latest_pending[tp] = j
        for tp, j in sorted(latest_pending.items()):
            if self._later_than_store(tp, self._record_offset(j)):
                self._finding(
                    "pending-txn",
                    j,
                    f"transactional commit of {tp_name(tp)} at offset {self.c_off[j]} (producer "
                    f"{cols['producer_id'][self.c_src[j]]}) has no COMMIT or ABORT marker by the end of the log: "
                    "the offset is not visible until the transaction completes",
                    previous=self.offsets.get(tp),
                )
        if log_end_timestamp is not None and self.exists:
            self._expiring(log_end_timestamp)
        self.result.offsets = {tp: self.c_off[j] for tp, j in sorted(self.offsets.items())}  # type: ignore[misc]
        self.result.commit_columns = self._commit_columns()
        return self.result

    def _commit_columns(self) -> dict[str, list[Any]]:
        cols, src, m = self.cols, self.c_src, len(self.c_src)

        def take(name: str) -> list[Any]:
            col = cols[name]
            return [col[i] for i in src]

        txn = self.c_txn
        return {
            "group": [self.group] * m,
            "log_partition": [self.log_partition] * m,
            "record_offset": take("offset"),
            "position": take("position"),
            "source": take("source"),
            "timestamp": take("timestamp"),
            "topic": take("topic"),
            "partition": take("partition"),
            "tombstone": [o is None for o in self.c_off],
            "offset": self.c_off,
            "leader_epoch": self.c_le,
            "metadata": take("metadata"),
            "commit_timestamp": take("commit_timestamp"),
            "expire_timestamp": take("expire_timestamp"),
            "value_version": take("value_version"),
            "transactional": txn,
            "producer_id": [v if t else None for v, t in zip(take("producer_id"), txn)],
            "producer_epoch": [v if t else None for v, t in zip(take("producer_epoch"), txn)],
            "txn_result": self.c_txn_result,
            "txn_marker_offset": self.c_txn_marker,
            "effective": self.c_effective,
            "effective_at_offset": self.c_eff_at,
            "generation_id": self.c_gen_id,
            "protocol": self.c_protocol,
            "group_state": self.c_state,
            "owners": self.c_owners,
            "note": self.c_note,
        }

    def _still_latest_txn(self, tp: TopicPartition, j: int) -> bool:
        # A later transactional commit of the same partition (whatever its outcome) takes
        # over as "the would-be latest": it is reported (pending) or effective instead.
        cols, src = self.cols, self.c_src
        topic, part, rec = cols["topic"], cols["partition"], self._record_offset(j)
        return not any(
            (topic[src[o]], part[src[o]]) == tp and cols["offset"][src[o]] > rec for o in self.txn_rows
        )

    def _expiring(self, end: int) -> None:
        gen = self.gen
        if gen is not None and not gen.empty:
            return  # ClassicGroup.offsetExpirationCondition: only Empty (or simple) groups here
        cols = self.cols
        open_tps = {tp for pend in self.pending.values() for tp in pend}
        for tp, j in sorted(self.offsets.items()):
            if tp in open_tps:
                continue  # cleanupExpiredOffsets keeps offsets with an open transaction
            i = self.c_src[j]
            expire_ts = cols["expire_timestamp"][i]
            if expire_ts is not None and expire_ts >= 0:
                expired = end >= expire_ts
                why = f"its expire timestamp {expire_ts} has passed"
            else:
                commit_ts = cols["commit_timestamp"][i]
                base = commit_ts if commit_ts is not None else cols["timestamp"][i]
                basis = "commit"
                if gen is not None and gen.protocol == "classic" and gen.current_state_timestamp is not None and gen.current_state_timestamp >= 0:
                    base = gen.current_state_timestamp
                    basis = "group became Empty"
                expired = end - base >= self.retention_ms
                why = f"{(end - base) / 3_600_000:.1f} h since {basis}, retention {self.retention_ms / 3_600_000:.1f} h"
            if expired:
                self._finding(
                    "expiring",
                    j,
                    f"group is Empty and its offset {self.c_off[j]} for {tp_name(tp)} is expired at the "
                    f"end of the log ({why}): the coordinator deletes it at its next expiration check",
                )


def _normalize_commits(cols: dict[str, list[Any]], n: int) -> None:
    """Fill the flat commit columns of offset commits that arrive with key and value objects
    (or JSON text) instead, in place: afterwards every offset commit row has ``topic``,
    ``partition`` and ``commit_offset`` (None exactly for a tombstone)."""
    kind, topic = cols["kind"], cols["topic"]
    for i in range(n):
        if topic[i] is not None or kind[i] not in OFFSET_COMMIT_KINDS:
            continue
        key, v = cols["key"][i], cols["value"][i]
        key = json.loads(key) if isinstance(key, str) else (key or {})
        v = json.loads(v) if isinstance(v, str) else v
        topic[i] = str(key.get("topic", ""))
        cols["partition"][i] = int(key.get("partition", -1))
        if v is None:
            for name in ("commit_offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp"):
                cols[name][i] = None
            continue
        cols["commit_offset"][i] = int(v.get("offset", -1))
        le = v.get("leader_epoch")
        cols["leader_epoch"][i] = -1 if le is None else int(le)
        cols["metadata"][i] = v.get("metadata", "")
        cols["commit_timestamp"][i] = v.get("commit_timestamp")
        cols["expire_timestamp"][i] = v.get("expire_timestamp")


def replay_columns(
    cols: dict[str, list[Any]],
    *,
    log_end_timestamp: int | None,
    retention_ms: int = DEFAULT_RETENTION_MS,
) -> GroupResult:
    """Replay the records of ONE group given as entry columns, in offset order.

    Args:
        cols: one list per column of :data:`kgtool.offsets.entries.ENTRY_NAMES` (the row form
            of :func:`kgtool.offsets.entries.entry_to_row`; ``key``/``value`` may also hold the
            decoded objects), sorted by record offset; transactional records annotated with
            their marker. The lists are modified (offset commits are normalized to flat form).
        log_end_timestamp, retention_ms: as :func:`replay_group`.
    """
    n = len(cols["offset"])
    if not n:
        return GroupResult()
    _normalize_commits(cols, n)
    rp = _GroupReplay(str(cols["group"][0]), cols["log_partition"][0], retention_ms, cols)
    # Markers are replayed at their own offset: interleave them with the group's records.
    markers: dict[int, tuple[int, str]] = {}
    m_off, m_type, pids = cols["marker_offset"], cols["marker_type"], cols["producer_id"]
    for i in range(n):
        if m_off[i] is not None and m_type[i] is not None:
            markers[m_off[i]] = (pids[i], m_type[i])
    marker_offsets = sorted(markers)
    next_marker = marker_offsets[0] if marker_offsets else None
    mi = 0
    commit = rp._commit
    names = ENTRY_NAMES
    for i, (off, kind, topic, part) in enumerate(zip(cols["offset"], cols["kind"], cols["topic"], cols["partition"])):
        if next_marker is not None and next_marker < off:
            while mi < len(marker_offsets) and marker_offsets[mi] < off:
                pid, typ = markers[marker_offsets[mi]]
                rp._marker(pid, typ, marker_offsets[mi])
                mi += 1
            next_marker = marker_offsets[mi] if mi < len(marker_offsets) else None
        if kind in OFFSET_COMMIT_KINDS:
            commit(i, (topic, part))
        elif kind == GROUP_METADATA or (kind is not None and kind.startswith(CONSUMER_GROUP_PREFIX)):
            row = {name: cols[name][i] for name in names}
            key, value = row["key"], row["value"]
            row["key"] = row["value"] = None
            e = entry_from_row(row)
            e = replace(e, key=json.loads(key) if isinstance(key, str) else key,
                        value=json.loads(value) if isinstance(value, str) else value)
            if kind == GROUP_METADATA:
                rp._classic_metadata(e)
            else:
                rp._kip848(e)
    while mi < len(marker_offsets):
        pid, typ = markers[marker_offsets[mi]]
        rp._marker(pid, typ, marker_offsets[mi])
        mi += 1
    return rp.finish(log_end_timestamp)


def entry_columns(entries: Iterable[LogEntry]) -> dict[str, list[Any]]:
    """Entry columns of ``entries`` for :func:`replay_columns` (key and value kept as objects)."""
    items = list(entries)
    cols: dict[str, list[Any]] = {}
    for name in ENTRY_NAMES:
        if name in _LOG_ENTRY_FIELDS:
            cols[name] = [getattr(e, name) for e in items]
        else:
            cols[name] = [None] * len(items)
    return cols


def replay_group(
    entries: Iterable[LogEntry],
    *,
    log_end_timestamp: int | None,
    retention_ms: int = DEFAULT_RETENTION_MS,
) -> GroupResult:
    """Replay the records of ONE group (one log partition) and apply the rules.

    Args:
        entries: the group's records, any order (sorted here by offset); transactional ones
            annotated with their marker (:func:`kgtool.offsets.entries.annotate_transactions`).
        log_end_timestamp: the last record timestamp of the log partition (the "now" of the
            ``expiring`` rule); None disables that rule.
        retention_ms: ``offsets.retention.minutes`` in milliseconds.

    Returns:
        The group's table rows; rows of each table in log order.
    """
    items = sorted(entries, key=lambda x: x.offset)
    return replay_columns(entry_columns(items), log_end_timestamp=log_end_timestamp, retention_ms=retention_ms)
