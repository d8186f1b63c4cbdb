"""Test oracle: the row-at-a-time replay of kgtool 0.1 (session 1), frozen.

kgtool now replays a whole partition at once over typed columns (kgtool.offsets.partition,
store, groups, rules; the commit loop compiled). This file is the earlier, straightforward
implementation of the same rules, one group at a time, kept verbatim (but for this docstring);
its columnar successor (kgtool 0.1's replay.py) was proven equal to it on every table before it
was removed. Classic groups only: its KIP-848 part, a copy of the replay's own, is gone (a copy
cannot catch a bug it shares); consumer groups are held against Kafka-made logs (tests/kip848). tests/offsets/oracle_audit.py runs it as the oracle that
tests/offsets/test_partition_differential.py holds the new replay against. Not imported by kgtool.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kgtool.offsets.entries import (
    GROUP_METADATA,
    NO_PRODUCER_ID,
    OFFSET_COMMIT_KINDS,
    LogEntry,
)

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
class Commit:
    """An offset as the store holds it (``OffsetAndMetadata`` plus where it came from)."""

    tp: TopicPartition
    offset: int
    leader_epoch: int
    record_offset: int
    position: int
    source: str
    generation_id: int | None
    gen_token: int | None  # record offset of the generation it was written in
    commit_timestamp: int
    expire_timestamp: int | None
    row: dict[str, Any]


@dataclass
class GroupResult:
    """The replay of one group: rows of the generations, members, commits, findings tables."""

    generations: list[dict[str, Any]] = field(default_factory=list)
    members: list[dict[str, Any]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    #: The committed offsets at the end of the log (what the coordinator would load).
    offsets: dict[TopicPartition, int] = field(default_factory=dict)

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
    def __init__(self, group: str, log_partition: int, retention_ms: int) -> None:
        self.group = group
        self.log_partition = log_partition
        self.retention_ms = retention_ms
        self.result = GroupResult()
        self.gen: Generation | None = None
        self.prev_gen: Generation | None = None
        self.exists = False  # the group exists in the coordinator (created by metadata or commit)
        self.offsets: dict[TopicPartition, Commit] = {}
        # producer id -> tp -> (commit row, entry) of pending transactional offsets
        self.pending: dict[int, dict[TopicPartition, tuple[dict[str, Any], LogEntry]]] = {}
        self.max_epoch: dict[TopicPartition, int] = {}
        self.last_owners: dict[TopicPartition, tuple[str, ...]] = {}
        self.moved_at: dict[TopicPartition, int] = {}  # gen token of the last move
        self.max_since_move: dict[TopicPartition, Commit] = {}
        self.last_removal: dict[TopicPartition, int] = {}  # record offset of last offset tombstone
        self.aborted: dict[TopicPartition, dict[str, Any]] = {}
        self.txn_rows: list[tuple[dict[str, Any], LogEntry]] = []
        self.txn_orphans: dict[int, str] = {}  # id(commit row) -> orphan sentence

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
                    # GroupMetadataManager.replay: rebalanceTimeout -1 (a v0 record's default) -> the session timeout
                    "rebalance_timeout_ms": _int_or_none(_get(m, "session_timeout")
                                                         if _get(m, "rebalance_timeout") in (None, -1)
                                                         else _get(m, "rebalance_timeout")),
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

    # ---- commits -----------------------------------------------------------------------
    def _state(self) -> str:
        if self.gen is None:
            return "Empty"  # a simple group (commits only), or after deletion
        return "Empty" if self.gen.empty else "Stable"

    def _owners(self, tp: TopicPartition) -> list[str] | None:
        if self.gen is None or self.gen.owners is None:
            return None
        return sorted(self.gen.owners.get(tp, []))

    def _commit(self, e: LogEntry) -> None:
        key = e.key or {}
        tp = (str(key.get("topic", "")), int(key.get("partition", -1)))
        v = e.value
        transactional = e.producer_id != NO_PRODUCER_ID
        gen = self.gen
        if v is None:
            offset = leader_epoch = metadata = commit_ts = expire_ts = None
        else:
            offset = int(v.get("offset", -1))
            le = v.get("leader_epoch")
            leader_epoch = -1 if le is None else int(le)
            metadata = v.get("metadata", "")
            commit_ts = v.get("commit_timestamp")
            expire_ts = v.get("expire_timestamp")
        row: dict[str, Any] = {
            "group": self.group,
            "log_partition": self.log_partition,
            "record_offset": e.offset,
            "position": e.position,
            "source": e.source,
            "timestamp": e.timestamp,
            "topic": tp[0],
            "partition": tp[1],
            "tombstone": v is None,
            "offset": offset,
            "leader_epoch": leader_epoch,
            "metadata": metadata,
            "commit_timestamp": commit_ts,
            "expire_timestamp": expire_ts,
            "value_version": e.value_version,
            "transactional": transactional,
            "producer_id": e.producer_id if transactional else None,
            "producer_epoch": e.producer_epoch if transactional else None,
            "txn_result": None,
            "txn_marker_offset": None,
            "effective": False,
            "effective_at_offset": None,
            "generation_id": None if gen is None else gen.generation_id,
            "protocol": None if gen is None else gen.protocol,
            "group_state": self._state(),
            "owners": self._owners(tp),
            "note": None,
            "topic_id": None if v is None else v.get("topic_id"),  # OffsetCommitValue v4's TopicId
        }
        self.result.commits.append(row)
        if gen is not None and gen.row is not None:
            gen.row["commit_count"] += 1
        if v is None:
            # OffsetMetadataManager.replay, tombstone: remove the offset and the pending
            # transactional offsets of this partition.
            self.offsets.pop(tp, None)
            for pend in self.pending.values():
                pend.pop(tp, None)
            self.max_epoch.pop(tp, None)
            self.max_since_move.pop(tp, None)
            self.last_removal[tp] = e.offset
            return
        self.exists = True
        if transactional:
            row["txn_result"] = "PENDING" if e.marker_offset is None else e.marker_type
            row["txn_marker_offset"] = e.marker_offset
            self.pending.setdefault(e.producer_id, {})[tp] = (row, e)
            self.txn_rows.append((row, e))
            # Orphan is judged against the generation in effect when the record was written;
            # reported only if the commit takes effect (at its COMMIT marker).
            message = self._orphan_message(row, tp)
            if message is not None:
                self.txn_orphans[id(row)] = message
            return
        self._check_orphan(row, tp, e)
        self._apply(row, tp, e, at_offset=e.offset)

    def _orphan_message(self, row: dict[str, Any], tp: TopicPartition) -> str | None:
        """The orphan finding's sentence for a commit written now, or None (sets ``note`` for
        a cooperative revocation in transit)."""
        gen = self.gen
        if gen is None or gen.empty or gen.owners is None:
            return None
        if gen.owners.get(tp):
            return None
        prev = self.prev_gen
        if prev is not None and prev.owners and gen.record_offset != prev.record_offset:
            # Cooperative revocation in transit: the previous owner is still a member.
            if set(prev.owners.get(tp, [])) & set(gen.members):
                row["note"] = "owner revoking (cooperative)"
                return None
        return (
            f"commit of {tp_name(tp)} at offset {row['offset']} while generation "
            f"{gen.generation_id} has {len(gen.members)} member(s) and none owns the partition"
        )

    def _check_orphan(self, row: dict[str, Any], tp: TopicPartition, e: LogEntry) -> None:
        message = self._orphan_message(row, tp)
        if message is not None:
            self._finding("orphan", row, e, message)

    def _apply(self, row: dict[str, Any], tp: TopicPartition, e: LogEntry, *, at_offset: int) -> None:
        """Make ``row`` the partition's offset and check the rules that compare with the past."""
        prev = self.offsets.get(tp)
        commit = Commit(
            tp=tp,
            offset=row["offset"],
            leader_epoch=row["leader_epoch"],
            record_offset=row["record_offset"],
            position=row["position"],
            source=row["source"],
            generation_id=row["generation_id"],
            gen_token=None if self.gen is None else self.gen.record_offset,
            commit_timestamp=row["commit_timestamp"] if row["commit_timestamp"] is not None else e.timestamp,
            expire_timestamp=row["expire_timestamp"],
            row=row,
        )
        row["effective"] = True
        row["effective_at_offset"] = at_offset
        # epoch-regression
        best = self.max_epoch.get(tp)
        if commit.leader_epoch >= 0:
            if best is not None and commit.leader_epoch < best:
                self._finding(
                    "epoch-regression",
                    row,
                    e,
                    f"commit of {tp_name(tp)} carries leader epoch {commit.leader_epoch}, below "
                    f"epoch {best} of an earlier commit: written from stale metadata",
                    previous=prev,
                )
            self.max_epoch[tp] = max(best if best is not None else -1, commit.leader_epoch)
        # rewind / zombie
        if prev is not None and commit.offset < prev.offset:
            if row["group_state"] == "Empty":
                row["note"] = "reset while Empty"
            else:
                moved = self.moved_at.get(tp)
                top = self.max_since_move.get(tp)
                if moved is not None and top is not None and top.offset > commit.offset:
                    self._finding(
                        "zombie",
                        row,
                        e,
                        f"commit of {tp_name(tp)} at offset {commit.offset} goes below offset "
                        f"{top.offset} that the partition's new owner committed in generation "
                        f"{top.generation_id} after the rebalance that moved it: a previous owner "
                        f"still committing (records from {commit.offset} will be reprocessed)",
                        previous=top,
                    )
                else:
                    self._finding(
                        "rewind",
                        row,
                        e,
                        f"commit of {tp_name(tp)} moves the offset back from {prev.offset} to "
                        f"{commit.offset} while the group is not Empty (not a reset): "
                        f"{prev.offset - commit.offset} records will be consumed again",
                        previous=prev,
                    )
        self.offsets[tp] = commit
        if tp in self.moved_at and commit.gen_token is not None and commit.gen_token >= self.moved_at[tp]:
            top = self.max_since_move.get(tp)
            if top is None or commit.offset > top.offset:
                self.max_since_move[tp] = commit

    def _marker(self, producer_id: int, marker_type: str, marker_offset: int) -> None:
        pend = self.pending.pop(producer_id, None)
        if not pend:
            return
        for tp, (row, e) in sorted(pend.items(), key=lambda kv: kv[1][0]["record_offset"]):
            if marker_type == "COMMIT":
                existing = self.offsets.get(tp)
                # OffsetMetadataManager.replayEndTransactionMarker: only a higher record offset wins.
                if existing is None or row["record_offset"] > existing.record_offset:
                    message = self.txn_orphans.pop(id(row), None)
                    if message is not None:
                        self._finding("orphan", row, e, message)
                    self._apply(row, tp, e, at_offset=marker_offset)
                else:
                    row["note"] = "committed, superseded by a later commit record"
            else:
                self.aborted[tp] = row

    def _finding(
        self,
        rule: str,
        row: dict[str, Any],
        e: LogEntry,
        message: str,
        *,
        previous: Commit | None = None,
    ) -> None:
        self.result.findings.append(
            {
                "rule": rule,
                "group": self.group,
                "log_partition": self.log_partition,
                "topic": row["topic"],
                "partition": row["partition"],
                "offset": row["offset"],
                "record_offset": row["record_offset"],
                "position": row["position"],
                "source": row["source"],
                "timestamp": row["timestamp"],
                "generation_id": row["generation_id"],
                "previous_offset": None if previous is None else previous.offset,
                "previous_record_offset": None if previous is None else previous.record_offset,
                "previous_position": None if previous is None else previous.position,
                "previous_generation_id": None if previous is None else previous.generation_id,
                "message": message,
            }
        )

    # ---- end of log --------------------------------------------------------------------
    def _later_than_store(self, tp: TopicPartition, record_offset: int) -> bool:
        cur = self.offsets.get(tp)
        if cur is not None and cur.record_offset > record_offset:
            return False
        removed = self.last_removal.get(tp)
        return removed is None or removed < record_offset

    def finish(self, log_end_timestamp: int | None) -> GroupResult:
        # aborted-txn / pending-txn: would otherwise be the latest offset.
        for tp, row in sorted(self.aborted.items()):
            if self._later_than_store(tp, row["record_offset"]) and self._still_latest_txn(tp, row):
                cur = self.offsets.get(tp)
                self._finding(
                    "aborted-txn",
                    row,
                    _NO_ENTRY,
                    f"transactional commit of {tp_name(tp)} at offset {row['offset']} (producer "
                    f"{row['producer_id']}) was ABORTED and nothing later replaced it: the group "
                    + (f"stays at offset {cur.offset}" if cur else "has no committed offset for it"),
                    previous=cur,
                )
        latest_pending: dict[TopicPartition, dict[str, Any]] = {}
        for pend in self.pending.values():
            for tp, (row, _e) in pend.items():
                if tp not in latest_pending or row["record_offset"] > latest_pending[tp]["record_offset"]:
                    latest_pending[tp] = row
        for tp, row in sorted(latest_pending.items()):
            if self._later_than_store(tp, row["record_offset"]):
                cur = self.offsets.get(tp)
                self._finding(
                    "pending-txn",
                    row,
                    _NO_ENTRY,
                    f"transactional commit of {tp_name(tp)} at offset {row['offset']} (producer "
                    f"{row['producer_id']}) has no COMMIT or ABORT marker by the end of the log: "
                    "the offset is not visible until the transaction completes",
                    previous=cur,
                )
        if log_end_timestamp is not None and self.exists:
            self._expiring(log_end_timestamp)
        self.result.offsets = {tp: c.offset for tp, c in sorted(self.offsets.items())}
        return self.result

    def _still_latest_txn(self, tp: TopicPartition, row: dict[str, Any]) -> bool:
        # A later transactional commit of the same partition (whatever its outcome) takes
        # over as "the would-be latest": it is reported (pending) or effective instead.
        return not any(
            (o["topic"], o["partition"]) == tp and o["record_offset"] > row["record_offset"]
            for o, _e in self.txn_rows
        )

    def _expiring(self, end: int) -> None:
        gen = self.gen
        if gen is not None and not gen.empty:
            return  # ClassicGroup.offsetExpirationCondition: only Empty (or simple) groups here
        open_tps = {tp for pend in self.pending.values() for tp in pend}
        for tp, c in sorted(self.offsets.items()):
            if tp in open_tps:
                continue  # cleanupExpiredOffsets keeps offsets with an open transaction
            if c.expire_timestamp is not None and c.expire_timestamp >= 0:
                expired = end >= c.expire_timestamp
                why = f"its expire timestamp {c.expire_timestamp} has passed"
            else:
                base = c.commit_timestamp
                basis = "commit"
                if gen is not None and gen.protocol == "classic" and gen.current_state_timestamp is not None and gen.current_state_timestamp >= 0:
                    base = gen.current_state_timestamp
                    basis = "group became Empty"
                expired = end - base >= self.retention_ms
                why = f"{(end - base) / 3_600_000:.1f} h since {basis}, retention {self.retention_ms / 3_600_000:.1f} h"
            if expired:
                self._finding(
                    "expiring",
                    c.row,
                    _NO_ENTRY,
                    f"group is Empty and its offset {c.offset} for {tp_name(tp)} is expired at the "
                    f"end of the log ({why}): the coordinator deletes it at its next expiration check",
                )


_NO_ENTRY = LogEntry(log_partition=-1, offset=-1, position=-1, source="", timestamp=-1)


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
    if not items:
        return GroupResult()
    first = items[0]
    rp = _GroupReplay(str(first.group), first.log_partition, retention_ms)
    # Markers are replayed at their own offset: interleave them with the group's records.
    markers: dict[int, tuple[int, str]] = {}
    for e in items:
        if e.marker_offset is not None and e.marker_type is not None:
            markers[e.marker_offset] = (e.producer_id, e.marker_type)
    marker_offsets = sorted(markers)
    mi = 0
    for e in items:
        while mi < len(marker_offsets) and marker_offsets[mi] < e.offset:
            pid, typ = markers[marker_offsets[mi]]
            rp._marker(pid, typ, marker_offsets[mi])
            mi += 1
        if e.kind in OFFSET_COMMIT_KINDS:
            rp._commit(e)
        elif e.kind == GROUP_METADATA:
            rp._classic_metadata(e)
    while mi < len(marker_offsets):
        pid, typ = markers[marker_offsets[mi]]
        rp._marker(pid, typ, marker_offsets[mi])
        mi += 1
    return rp.finish(log_end_timestamp)
