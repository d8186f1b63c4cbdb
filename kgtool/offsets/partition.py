"""Replay of one ``__consumer_offsets`` partition, in log order, as the coordinator loads it.

All records of a group live in its coordinator's partition (``GroupCoordinatorService
.partitionFor``), and a transaction's marker follows its records in that same partition, so
a partition replays on its own: :class:`PartitionReplay` takes the partition's decoded chunks
(plain offset commits as typed columns, rare records as :class:`~kgtool.offsets.entries.LogEntry`,
see :mod:`kgtool.offsets.columns`) in log order and keeps

- the group state (:mod:`kgtool.offsets.groups`, ``GroupMetadataManager``),
- the offset store (:mod:`kgtool.offsets.store`, ``OffsetMetadataManager`` with
  ``replayEndTransactionMarker``),
- the rules (:mod:`kgtool.offsets.rules`),
- and the partition's coverage,

in memory that grows with groups, keys and producers, not with records. The commits table
leaves as Arrow tables, one per chunk, in log order (``sink``); a chunk is held back only
while one of its transactional commits waits for its marker (at most the length of a
transaction: Kafka aborts transactions after ``transaction.max.timeout.ms``). Knowing each
producer's last marker in advance (``last_markers``, a pre-pass over control batches) lets a
commit whose transaction never ends be written out at once. Generations, members and findings
are small tables, returned at the end.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from kgtool.offsets.coverage import classify
from kgtool.offsets.entries import (
    CONSUMER_GROUP_PREFIX,
    CONTROL,
    END_TXN_TYPES,
    GROUP_METADATA,
    NO_PRODUCER_ID,
    OFFSET_COMMIT_KINDS,
    PROBLEM,
    LogEntry,
)
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.shard import ClassicGroup, GroupCoordinatorShard
from kgtool.offsets.shard.views import state_rows
from kgtool.offsets.groups import GroupState, OwnerLists, TopicPartition
from kgtool.offsets.rebalances import RebalanceLog
from kgtool.offsets.rules import (
    END_OF_LOG_RULES,
    CommitRef,
    Previous,
    aborted_message,
    epoch_message,
    expiration,
    expiring_message,
    finding,
    pending_message,
    rewind_message,
    zombie_message,
)
from kgtool.offsets.store import (
    EV_EPOCH,
    EV_ORPHAN,
    EV_REWIND,
    EV_TXN_ORPHAN,
    EV_ZOMBIE,
    G,
    K,
    NOTES,
    P,
    NULL,
    PROTOCOLS,
    STATES,
    CommitColumns,
    CommitOutputs,
    Store,
)
from kgtool.offsets.tables import COMMITS, COVERAGE, MEMBER, OFFSETS

SORT_KEYS: dict[str, list[str]] = {
    "generations": ["log_partition", "group", "record_offset"],
    "members": ["log_partition", "group", "record_offset", "member_id"],
    "commits": ["log_partition", "record_offset"],
    "findings": ["log_partition", "group", "record_offset", "rule", "topic", "partition"],
    "coverage": ["log_partition"],
    "offsets": ["log_partition", "group", "topic", "partition"],
    "rebalances": ["log_partition", "group", "record_offset"],
    "groups": ["log_partition", "group"],
    "group_members": ["log_partition", "group", "member_id"],
}
SHOWN_PROBLEMS = 20
_NO_SLOTS = np.empty(0, np.int64)
ROW_BATCH = 20_000  # rows of the small tables handed out at a time (rows_sink)
COMMIT_NAMES = [n for n, _t in COMMITS]
MODERN_GROUP_PREFIXES = ("share_group_", "streams_group_")  # the shard's other group types
_COUNTERS = ("offset_commits", "offset_tombstones", "group_metadata", "group_tombstones",
             "consumer_group_records", "other_records", "control_records")


def sort_key(name: str) -> Callable[[dict[str, Any]], tuple]:
    return _nulls_last(SORT_KEYS[name])


def _nulls_last(keys: list[Any]) -> Callable[[Any], tuple]:
    return lambda r: tuple((r[k] is None, r[k]) for k in keys)


def _column(name: str, column: str) -> Any:
    """How a row of table ``name`` is indexed for ``column``: by name (dict rows), or by
    position (the members table's tuples, :data:`kgtool.offsets.tables.MEMBER`)."""
    return MEMBER[column] if name == "members" else column


def sort_rows(rows: list[Any], name: str) -> None:
    """Sort rows by the table's keys (nulls last), in place."""
    keys = [_column(name, k) for k in SORT_KEYS[name]]
    try:
        # one stable sort per key, the least significant first: the order of the whole key, and
        # faster than comparing key tuples (207,600 member rows: 51 against 86 ms); a key that is
        # constant or already in order is one pass. The keys are never null in practice.
        for k in reversed(keys):
            rows.sort(key=itemgetter(k))
    except TypeError:
        rows.sort(key=_nulls_last(keys))


@dataclass
class _Held:
    """One chunk's commits, waiting for the markers of its transactional commits."""

    cols: CommitColumns
    out: CommitOutputs
    metadata: list[str]  # the chunk's metadata dictionary
    metadata_codes: np.ndarray  # int32 per commit, -1 for null (tombstones)
    expire_valid: np.ndarray  # bool per commit: an expire timestamp is present (value v1)
    commit_valid: np.ndarray  # bool per commit: a commit timestamp is present
    producer_epoch: np.ndarray
    source: str
    waits: np.ndarray = field(default_factory=lambda: _NO_SLOTS)  # slots of its commits whose marker is to come
    extra: list[_Held] = field(default_factory=list)  # rare offset commits replayed inside this chunk

    def ended(self, store: Store) -> bool:
        """Whether the markers of its transactional commits (and those of ``extra``) were read."""
        return store.ended(self.waits) and all(store.ended(x.waits) for x in self.extra)


class PartitionReplay:
    """The replay of one log partition (see the module docstring)."""

    def __init__(self, log_partition: int, options: AuditOptions | None = None, *,
                 sink: Callable[[Any], None] | None = None, last_markers: dict[int, int] | None = None,
                 pure: bool | None = None, keep_problems: int = SHOWN_PROBLEMS,
                 rows_sink: Callable[[str, list[dict[str, Any]]], None] | None = None) -> None:
        self.log_partition = log_partition
        # With rows_sink, final rows of the small tables leave in batches as the log goes on
        # (memory stays bounded however often the groups rebalance); without, they stay in
        # the lists below, sorted at the end.
        self.rows_sink = rows_sink
        self.row_groups: set[str] = set()
        self.options = options or AuditOptions()
        self.keep_problems = keep_problems
        self.sink = sink
        self.last_markers = last_markers
        self.store = Store(pure)
        self.owner_lists = OwnerLists()
        self.groups: dict[str, GroupState] = {}
        self.by_gid: list[GroupState] = []
        self.generations: list[dict[str, Any]] = []
        self.members: list[tuple] = []  # tuples (tables.MEMBER)
        self.findings: list[dict[str, Any]] = []
        self.offset_rows: list[dict[str, Any]] = []  # the offsets table (made by finish)
        # generation changes (rows of the rebalances table) and the rebalance-storm rule
        self.rebalance_log = RebalanceLog(log_partition, self.options.storm_count, self.options.storm_window_ms,
                                          self.findings, since=self.options.since)
        self.rebalances = self.rebalance_log.rows
        self.sources: list[str] = []
        self._source_codes: dict[str, int] = {}
        self.key_tp: list[TopicPartition] = []  # store key -> topic partition
        self._kmap = np.empty(0, np.int64)  # decoder key code -> store key (-1: group filtered out)
        self._kmap_tables: Any = None
        self._orphans: dict[int, str] = {}  # slot -> orphan finding of a pending transactional commit
        self._open: dict[int, dict[int, int]] = {}  # at the end: gid -> key -> slot of its pending commit
        self.held: deque[_Held] = deque()
        self._current: _Held | None = None
        self._serials = 0
        #: --until: the partition's first record stamped at or after the instant was reached;
        #: the log read stops there (the caller may stop decoding).
        self.ended = False
        # coverage
        self.counters = dict.fromkeys(_COUNTERS, 0)
        self.records = 0
        self.batches = 0
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.first_timestamp: int | None = None
        self.last_timestamp: int | None = None
        self.group_names: set[str] = set()
        self.problem_count = 0
        self.problems: list[LogEntry] = []
        self.commit_rows = 0
        self.gids_with_rows: set[int] = set()
        # the groups as Kafka's coordinator holds them (the groups and group_members tables);
        # commits stay in the columnar store, the shard replays every other record
        self.shard = GroupCoordinatorShard()
        self.group_rows: list[dict[str, Any]] = []
        self.group_member_rows: list[dict[str, Any]] = []
        self._seen = np.zeros(0, np.bool_)  # decoder keys seen in kept records (coverage groups)
        self._seen_tables: Any = None

    # ---- groups and keys -----------------------------------------------------------------
    def group(self, name: str) -> GroupState | None:
        """The group's state (created on first sight), or None when ``--group`` excludes it."""
        g = self.groups.get(name)
        if g is None:
            if not self.options.group_matches(name):
                return None
            g = GroupState(name, self.log_partition, self.store, self.owner_lists, self.generations, self.members,
                           self.rebalance_log)
            self.groups[name] = g
            self.by_gid.append(g)
        return g

    def _key(self, g: GroupState, tp: TopicPartition) -> int:
        k = g.keys.get(tp)
        if k is None:
            k = g.key(tp)
            self.key_tp.append(tp)
        return k

    def _source(self, source: str) -> int:
        c = self._source_codes.get(source)
        if c is None:
            c = self._source_codes[source] = len(self.sources)
            self.sources.append(source)
        return c

    def _map_keys(self, keys: Any) -> np.ndarray:
        """Decoder key codes -> store keys, extended for the decoder's new keys."""
        n = len(keys)
        if self._kmap_tables is not keys:
            self._kmap_tables, self._kmap = keys, np.empty(0, np.int64)
        have = len(self._kmap)
        if n > have:
            groups, topics = keys.groups, keys.topics
            kg, kt, kp = keys.key_group(), keys.key_topic(), keys.key_partition()
            new = np.empty(n - have, np.int64)
            for i in range(have, n):
                g = self.group(groups[kg[i]])
                new[i - have] = -1 if g is None else self._key(g, (topics[kt[i]], int(kp[i])))
            self._kmap = np.concatenate([self._kmap, new])
        return self._kmap

    # ---- input -----------------------------------------------------------------------------
    def feed(self, chunk: Any, keys: Any) -> None:
        """Replay one decoded chunk (:class:`kgtool.offsets.columns.CommitChunk`). After
        ``--until``'s cut (:attr:`ended`) chunks are ignored."""
        if self.ended:
            return
        n = chunk.n
        rare = chunk.rare
        until = self.options.until
        kmap = self._map_keys(keys)
        skey = kmap[chunk.key[:n]] if n else np.empty(0, np.int64)
        keep = None
        if until is not None:
            cut = until_cut(chunk.timestamp[:n], rare, until)
            if cut is not None:
                self.ended = True
                keep = np.arange(n) < cut[0]
                rare = rare[: cut[1]]
        # coverage over every record read (all groups)
        self._cover(chunk, keep, rare, keys)
        # --group: drop the commits of excluded groups
        mask = skey >= 0
        if keep is not None:
            mask &= keep
        if not mask.all():
            before = np.concatenate([[0], np.cumsum(mask)])
            rare = [(int(before[i]), e) for i, e in rare]
            sel = np.flatnonzero(mask)
        else:
            sel = None

        def col(a: np.ndarray, dtype: Any = np.int64) -> np.ndarray:
            a = a[:n] if sel is None else a[sel]
            return a if a.dtype == dtype else a.astype(dtype)

        cols = CommitColumns(
            key=skey if sel is None else skey[sel],
            record_offset=col(chunk.record_offset), position=col(chunk.position), timestamp=col(chunk.timestamp),
            producer_id=col(chunk.producer_id), version=col(chunk.version), offset=col(chunk.offset),
            leader_epoch=col(chunk.leader_epoch), commit_timestamp=col(chunk.commit_timestamp),
            expire_timestamp=col(chunk.expire_timestamp), source=self._source(chunk.source),
            metadata=col(chunk.metadata, np.int32), serial=self._next_serial(),
        )
        m = len(cols)
        held = _Held(cols=cols, out=CommitOutputs.empty(m), metadata=chunk.metadata_values,
                     metadata_codes=cols.metadata, expire_valid=cols.version == 1,
                     commit_valid=cols.version >= 0, producer_epoch=col(chunk.producer_epoch, np.int32),
                     source=chunk.source)
        self._current = held
        self.held.append(held)
        lo = 0
        for i, e in rare:
            if i > lo:
                self._events(self.store.replay_commits(cols, held.out, lo, i), held)
                lo = i
            self._rare(e)
        if m > lo:
            self._events(self.store.replay_commits(cols, held.out, lo, m), held)
        held.waits = self.store.waiting(held.out, cols.producer_id, cols.record_offset, self.last_markers)
        self.store.settle_metadata(cols.serial, held.metadata)
        self._current = None
        self._flush()
        self._emit_rows()

    def feed_entries(self, entries: Iterable[LogEntry], source: str | None = None) -> None:
        """Replay entries (:class:`LogEntry`, log order) without columnar decoding: every record
        takes the rare path (offset commits one row at a time). For tests and small inputs."""
        items = list(entries)
        self.feed(_EntryChunk(source or (items[0].source if items else "<entries>"), [(0, e) for e in items]),
                  _NO_KEYS)

    # ---- coverage --------------------------------------------------------------------------
    def _cover(self, chunk: Any, keep: np.ndarray | None, rare: list[tuple[int, LogEntry]], keys: Any) -> None:
        n = chunk.n
        if n:
            if self._seen_tables is not keys:
                self._seen_flush()
                self._seen_tables = keys
            if len(self._seen) < len(keys):
                self._seen = np.concatenate([self._seen, np.zeros(len(keys) - len(self._seen), np.bool_)])
            self._seen[chunk.key[:n] if keep is None else chunk.key[:n][keep]] = True
        pos = chunk.position[:n]
        offs = chunk.record_offset[:n]
        ts = chunk.timestamp[:n]
        version = chunk.version[:n]
        if keep is not None:
            pos, offs, ts, version = pos[keep], offs[keep], ts[keep], version[keep]
        m = len(offs)
        tomb = int(np.count_nonzero(version < 0)) if m else 0
        self.counters["offset_commits"] += m - tomb
        self.counters["offset_tombstones"] += tomb
        self.records += m
        if m:
            self._range(int(offs.min()), int(offs.max()), int(ts.min()), int(ts.max()))
        # batches: distinct (source, position) of records; a chunk ends at a batch boundary and
        # its positions are in log order (non-decreasing)
        batches = 1 + int(np.count_nonzero(pos[1:] != pos[:-1])) if m else 0
        rare_positions = []
        for _i, e in rare:
            c = classify(e)
            if c == "problems":
                self.problem_count += 1
                if len(self.problems) < self.keep_problems:
                    self.problems.append(e)
                continue
            self.counters[c] += 1
            self.records += 1
            self._range(e.offset, e.offset, e.timestamp, e.timestamp)
            rare_positions.append(e.position)
            if e.group is not None:
                self.group_names.add(e.group)
        if rare_positions:
            extra = np.unique(np.array(rare_positions, np.int64))
            if m:
                i = np.searchsorted(pos, extra)
                inside = (i < m) & (pos[np.minimum(i, m - 1)] == extra)
                extra = extra[~inside]
            batches += len(extra)
        self.batches += batches

    def _seen_flush(self) -> None:
        keys = self._seen_tables
        if keys is not None and self._seen.any():
            kg = keys.key_group()
            for code in np.unique(kg[np.flatnonzero(self._seen)]):
                self.group_names.add(keys.groups[int(code)])
        self._seen = np.zeros(0, np.bool_)

    def _range(self, first: int, last: int, t0: int, t1: int) -> None:
        if self.first_offset is None or first < self.first_offset:
            self.first_offset = first
        if self.last_offset is None or last > self.last_offset:
            self.last_offset = last
        if self.first_timestamp is None or t0 < self.first_timestamp:
            self.first_timestamp = t0
        if self.last_timestamp is None or t1 > self.last_timestamp:
            self.last_timestamp = t1

    # ---- rare records -------------------------------------------------------------------------
    def _rare(self, e: LogEntry) -> None:
        kind = e.kind
        if kind == PROBLEM:
            return
        if kind == CONTROL:
            if e.is_control and e.producer_id != NO_PRODUCER_ID:
                self._marker(e)
            return
        if e.group is None:
            return
        if kind in OFFSET_COMMIT_KINDS:
            g = self.group(e.group)
            if g is not None:
                g.records += 1
                self._rare_commit(g, e)
            return
        if kind == GROUP_METADATA or (kind is not None and kind.startswith(CONSUMER_GROUP_PREFIX)):
            g = self.group(e.group)
            if g is None:
                return
            g.records += 1
            key, value = _parsed(e.key), _parsed(e.value)
            if key is not e.key or value is not e.value:
                from dataclasses import replace

                e = replace(e, key=key, value=value)
            self.shard.replay(e.offset, kind, key, value, e.timestamp)
            if kind == GROUP_METADATA:
                g.classic_metadata(e)
            else:
                g.kip848(e)
            return
        if kind is not None and kind.startswith(MODERN_GROUP_PREFIXES) and self.options.group_matches(e.group):
            # share (KIP-932) and streams (KIP-1071) groups: their state only
            self.shard.replay(e.offset, kind, _parsed(e.key), _parsed(e.value), e.timestamp)

    def _rare_commit(self, g: GroupState, e: LogEntry) -> None:
        """An offset commit that did not take the columnar path (unusual encoding, tests):
        replayed as a one-row chunk inside the current one."""
        key = e.key if isinstance(e.key, dict) else (json.loads(e.key) if e.key else {})
        v = _parsed(e.value)
        tp = (str(key.get("topic", "")), int(key.get("partition", -1)))
        k = self._key(g, tp)
        tomb = v is None
        le = None if tomb else v.get("leader_epoch")
        meta = None if tomb else v.get("metadata", "")
        ets = None if tomb else v.get("expire_timestamp")
        cts = None if tomb else v.get("commit_timestamp")
        version = -1 if tomb else (e.value_version if e.value_version is not None else 0)
        one = lambda x: np.array([x], np.int64)  # noqa: E731
        cols = CommitColumns(
            key=one(k), record_offset=one(e.offset), position=one(e.position), timestamp=one(e.timestamp),
            producer_id=one(e.producer_id), version=one(version), offset=one(0 if tomb else int(v.get("offset", -1))),
            leader_epoch=one(-1 if le is None else int(le)),
            commit_timestamp=one(NULL if cts is None else int(cts)),
            expire_timestamp=one(NULL if ets is None else int(ets)), source=self._source(e.source),
            metadata=np.array([0 if meta is not None else -1], np.int32), serial=self._next_serial(),
        )
        held = _Held(cols=cols, out=CommitOutputs.empty(1), metadata=[meta] if meta is not None else [],
                     metadata_codes=cols.metadata,
                     expire_valid=np.array([ets is not None]), commit_valid=np.array([cts is not None]),
                     producer_epoch=np.array([e.producer_epoch], np.int32), source=e.source)
        host = self._current
        if host is None:
            self.held.append(held)
        else:
            host.extra.append(held)
        self._events(self.store.replay_commits(cols, held.out, 0, 1), held)
        held.waits = self.store.waiting(held.out, cols.producer_id, cols.record_offset, self.last_markers)
        self.store.settle_metadata(cols.serial, held.metadata, cols.key)

    def _next_serial(self) -> int:
        """A serial number for a chunk of commit columns (its metadata codes are its own)."""
        self._serials += 1
        return self._serials

    # ---- events from the commit loop ------------------------------------------------------------
    def _ref(self, held: _Held, j: int) -> CommitRef:
        c = held.cols
        k = int(c.key[j])
        tp = self.key_tp[k]
        gen = int(held.out.generation[j])
        return CommitRef(tp[0], tp[1], int(c.offset[j]), int(c.record_offset[j]), int(c.position[j]),
                         self.sources[c.source], int(c.timestamp[j]), None if gen == NULL else gen)

    def _slot_ref(self, slot: int) -> CommitRef:
        """A pending transactional commit (a slot of the store), as findings name it."""
        pr = self.store.p[slot]
        tp = self.key_tp[int(pr[P["key"]])]
        gen = int(pr[P["generation"]])
        return CommitRef(tp[0], tp[1], int(pr[P["offset"]]), int(pr[P["record"]]), int(pr[P["position"]]),
                         self.sources[int(pr[P["source"]])], int(pr[P["timestamp"]]), None if gen == NULL else gen)

    def _events(self, events: np.ndarray, held: _Held) -> None:
        if not len(events):
            return
        for ev in events.tolist():
            kind, j, k = ev[0], ev[1], ev[2]
            g = self.by_gid[int(self.store.k[k, K["gid"]])]
            if kind == EV_TXN_ORPHAN:
                # the message names the generation in effect now; reported if the marker stores it
                self._orphans[ev[3]] = g.orphan_message(self.key_tp[k], int(held.cols.offset[j]))
            else:
                self._finding_event(g, self._ref(held, j), k, kind, ev[3:])

    def _finding_event(self, g: GroupState, ref: CommitRef, k: int, kind: int, v: list[int],
                       orphan: str | None = None) -> None:
        tp = self.key_tp[k]
        if kind == EV_ORPHAN:
            self.findings.append(finding("orphan", g.name, self.log_partition, ref,
                                         orphan if orphan is not None else g.orphan_message(tp, ref.offset)))
        elif kind == EV_EPOCH:
            self.findings.append(finding("epoch-regression", g.name, self.log_partition, ref,
                                         epoch_message(tp, v[0], v[1]), Previous.of(v[2:7])))
        elif kind == EV_REWIND:
            prev = Previous.of(v[0:5])
            self.findings.append(finding("rewind", g.name, self.log_partition, ref,
                                         rewind_message(tp, ref.offset, prev), prev))  # type: ignore[arg-type]
        elif kind == EV_ZOMBIE:
            top = Previous.of(v[0:5])
            self.findings.append(finding("zombie", g.name, self.log_partition, ref,
                                         zombie_message(tp, ref.offset, top), top))  # type: ignore[arg-type]

    # ---- transactions ------------------------------------------------------------------------
    def _marker(self, e: LogEntry) -> None:
        """A transaction marker: ``OffsetMetadataManager.replayEndTransactionMarker`` in the store
        (:meth:`Store.end_transaction`), whose outcome the rows of the transaction's commits
        take when they are written out. ``CoordinatorLoaderImpl`` replays only COMMIT and ABORT
        control records: any other control type leaves the transaction open."""
        if e.control_type not in END_TXN_TYPES:
            return
        events = self.store.end_transaction(e.producer_id, e.control_type, e.offset)
        if events is None or not len(events):
            return
        for ev in events.tolist():
            kind, slot, k = ev[0], ev[1], ev[2]
            g = self.by_gid[int(self.store.k[k, K["gid"]])]
            self._finding_event(g, self._slot_ref(slot), k, kind, ev[3:],
                                self._orphans.pop(slot, None) if kind == EV_ORPHAN else None)

    # ---- output --------------------------------------------------------------------------------
    def _flush(self, final: bool = False) -> None:
        store = self.store
        while self.held and (final or self.held[0].ended(store)):
            held = self.held.popleft()
            for h in (held, *held.extra):
                store.resolve(h.out)
            if self._orphans:  # freed slots: their orphan findings can no longer be reported
                for slot in [s for s in self._orphans if store.p[s, P["key"]] < 0]:
                    del self._orphans[slot]
            table = self._commits_table(held)
            for extra in held.extra:
                table = _concat(table, self._commits_table(extra))
            if held.extra:
                import pyarrow.compute as pc

                table = table.unify_dictionaries().combine_chunks()
                table = table.take(pc.sort_indices(table, [("record_offset", "ascending")]))
            if self.options.since is not None and table.num_rows:
                import pyarrow.compute as pc

                table = table.filter(pc.greater_equal(table.column("timestamp"), self.options.since))
            self._note_groups(held)
            for extra in held.extra:
                self._note_groups(extra)
            self.commit_rows += table.num_rows
            if self.sink is not None and table.num_rows:
                self.sink(table)

    def _note_groups(self, held: _Held) -> None:
        """Remember the groups that have commit rows in the output (after ``--since``)."""
        keys = held.cols.key
        if self.options.since is not None:
            keys = keys[held.cols.timestamp >= self.options.since]
        if len(keys):
            gids = self.store.k[keys, K["gid"]]
            seen = np.bincount(gids, minlength=self.store.n_groups)
            self.gids_with_rows.update(np.flatnonzero(seen).tolist())

    def largest_group(self) -> tuple[str, int] | None:
        """The group with the most records replayed so far, and that count."""
        best = None
        for g in self.by_gid:
            n = g.records + int(self.store.g[g.gid, G["records"]])
            if best is None or n > best[1]:
                best = (g.name, n)
        return best

    def output_groups(self) -> int:
        """Groups with at least one row in an output table."""
        names = {self.by_gid[g].name for g in self.gids_with_rows} | self.row_groups
        for name, rows in self._row_tables():
            names.update(map(itemgetter(_column(name, "group")), rows))
        return len(names)

    def _row_tables(self) -> tuple[tuple[str, list[Any]], ...]:
        return (("generations", self.generations), ("members", self.members), ("findings", self.findings),
                ("rebalances", self.rebalances))

    def _owner_lists(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """The interned owner lists as flat member codes: (member ids, start and length of each
        list in the flat array, the flat array); rebuilt when lists are added."""
        import pyarrow as pa

        lists = self.owner_lists.lists
        cached = getattr(self, "_owners_cache", None)
        if cached is None or cached[0] != len(lists):
            ids: dict[str, int] = {}
            flat = np.array([ids.setdefault(m, len(ids)) for o in lists for m in o], np.int32)
            lengths = np.array([len(o) for o in lists], np.int64)
            starts = np.zeros(len(lists), np.int64)
            np.cumsum(lengths[:-1], out=starts[1:])
            cached = self._owners_cache = (len(lists), pa.array(list(ids), pa.string()), starts, lengths, flat)
        return cached[1], cached[2], cached[3], cached[4]

    def _owners_column(self, codes: np.ndarray) -> Any:
        """The ``owners`` column of commits whose owner-list codes are ``codes`` (-1: null): a
        list array over dictionary-encoded member ids, gathered with NumPy (Parquet writes it as
        list<string>)."""
        import pyarrow as pa

        members, starts, lengths, flat = self._owner_lists()
        if len(lengths) and lengths.min() == 1 and lengths.max() == 1 and (not len(codes) or codes.min() >= 0):
            # every owner list so far has one member (the usual case) and every commit has one:
            # list i is flat[i], each row a one-element list
            values = pa.DictionaryArray.from_arrays(pa.array(flat[codes]), members)
            return pa.ListArray.from_arrays(pa.array(np.arange(len(codes) + 1, dtype=np.int32)), values)
        null = codes < 0
        safe = np.where(null, 0, codes)
        n_each = np.where(null, 0, lengths[safe] if len(lengths) else 0)
        offsets = np.zeros(len(codes) + 1, np.int64)
        np.cumsum(n_each, out=offsets[1:])
        total = int(offsets[-1])
        # element j of row i is flat[starts[code_i] + j]: one repeat plus a running index
        gather = np.repeat(starts[safe] - offsets[:-1] if len(starts) else offsets[:-1], n_each) + np.arange(total)
        values = pa.DictionaryArray.from_arrays(pa.array(flat[gather] if total else np.empty(0, np.int32)), members)
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values,
                                        mask=pa.array(null) if null.any() else None)

    def _dictionaries(self) -> tuple[Any, Any, np.ndarray, np.ndarray]:
        """Group names (by group), topics, and per key its topic code and partition (rebuilt
        when they grow)."""
        import pyarrow as pa

        size = (len(self.by_gid), len(self.key_tp))
        cached = getattr(self, "_dict_cache", None)
        if cached is None or cached[0] != size:
            topics: dict[str, int] = {}
            codes = np.array([topics.setdefault(tp[0], len(topics)) for tp in self.key_tp], np.int32)
            cached = self._dict_cache = (
                size,
                pa.array([g.name for g in self.by_gid], pa.string()),
                pa.array(list(topics), pa.string()),
                codes,
                np.array([tp[1] for tp in self.key_tp], np.int32),
            )
        return cached[1], cached[2], cached[3], cached[4]

    def _commits_table(self, held: _Held) -> Any:
        import pyarrow as pa

        c, out = held.cols, held.out
        n = len(c)
        keys = c.key
        kk = self.store.k
        key_gid = kk[: self.store.n_keys, K["gid"]]
        tomb = c.version < 0
        txn = c.producer_id != NO_PRODUCER_ID
        names, topics, topic_of_key, parts_of_key = self._dictionaries()
        meta = pa.array(held.metadata, pa.string())
        mcodes = held.metadata_codes

        def nullable(values: np.ndarray, null: np.ndarray, typ: Any) -> Any:
            if null.all():  # a column of nulls (no transaction, no expiry...): no values to copy
                return pa.nulls(n, typ)
            dtype = np.int32 if typ == pa.int32() else np.int64
            return pa.array(values.astype(dtype, copy=False), type=typ, mask=null if null.any() else None)

        def strings(dictionary: Any, codes: np.ndarray, null: np.ndarray | None = None) -> Any:
            """Dictionary-encoded: Parquet takes the dictionary as is (readers see strings)."""
            idx = pa.array(codes.astype(np.int32, copy=False), mask=null if null is not None and null.any() else None)
            return pa.DictionaryArray.from_arrays(idx, dictionary)

        def coded(dictionary: tuple, codes: np.ndarray) -> Any:
            """Small dictionaries whose code 0 is null (PROTOCOLS, NOTES, txn results)."""
            values = pa.array(dictionary[1:], pa.string())
            if not codes.any():  # all null (no note, no transaction in the chunk)
                return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), values)
            return strings(values, np.maximum(codes.astype(np.int32) - 1, 0), codes == 0)

        gen = out.generation
        arrays = {
            "group": strings(names, key_gid[keys]),
            "log_partition": pa.array(np.full(n, self.log_partition, np.int32)),
            "record_offset": pa.array(c.record_offset),
            "position": pa.array(c.position),
            "source": strings(pa.array([held.source]), np.zeros(n, np.int32)),
            "timestamp": pa.array(c.timestamp),
            "topic": strings(topics, topic_of_key[keys]),
            "partition": pa.array(parts_of_key[keys]),
            "tombstone": pa.array(tomb),
            "offset": nullable(c.offset, tomb, pa.int64()),
            "leader_epoch": nullable(c.leader_epoch, tomb, pa.int32()),
            "metadata": strings(meta, np.maximum(mcodes, 0), mcodes < 0) if len(held.metadata) else
            strings(pa.array([""], pa.string()), np.zeros(n, np.int32), np.ones(n, np.bool_)),
            "commit_timestamp": nullable(c.commit_timestamp, ~held.commit_valid, pa.int64()),
            "expire_timestamp": nullable(c.expire_timestamp, ~held.expire_valid, pa.int64()),
            "value_version": nullable(c.version, tomb, pa.int32()),
            "transactional": pa.array(txn),
            "producer_id": nullable(c.producer_id, ~txn, pa.int64()),
            "producer_epoch": nullable(held.producer_epoch, ~txn, pa.int32()),
            "txn_result": coded(tuple(self.store.txn_results), out.txn_result),
            "txn_marker_offset": nullable(out.txn_marker, out.txn_marker == NULL, pa.int64()),
            "effective": pa.array(out.effective),
            "effective_at_offset": nullable(out.effective_at, out.effective_at == NULL, pa.int64()),
            "generation_id": nullable(gen, gen == NULL, pa.int32()),
            "protocol": coded(PROTOCOLS, out.protocol),
            "group_state": strings(pa.array(STATES, pa.string()), out.state),
            "owners": self._owners_column(out.owners),
            "note": coded(NOTES, out.note),
        }
        return pa.Table.from_arrays([arrays[name] for name in COMMIT_NAMES], schema=commits_schema())

    # ---- the end of the log ------------------------------------------------------------------------
    def _emit_rows(self, final: bool = False) -> None:
        """Hand the final rows of the small tables to ``rows_sink`` (every ROW_BATCH rows, and
        at the end): members and findings are final when made, a generation row when its
        group's next generation (or the end of the log) closes it."""
        if self.rows_sink is None:
            return
        if not final and len(self.generations) + len(self.members) + len(self.findings) \
                + len(self.rebalances) < ROW_BATCH:
            return
        since = self.options.since
        open_rows = set() if final else {id(g.gen.row) for g in self.by_gid if g.gen is not None and g.gen.row is not None}
        ready = {
            "generations": [r for r in self.generations if id(r) not in open_rows],
            "members": list(self.members),
            "findings": list(self.findings),
            "rebalances": list(self.rebalances),  # a row joins the list when final
        }
        self.generations[:] = [r for r in self.generations if id(r) in open_rows]  # in place: groups append here
        self.members.clear()
        self.findings.clear()
        self.rebalances.clear()
        for name, rows in ready.items():
            if since is not None:
                rows = _since(rows, name, since)
            sort_rows(rows, name)
            self.row_groups.update(map(itemgetter(_column(name, "group")), rows))
            if rows:
                self.rows_sink(name, rows)

    def finish(self) -> None:
        """End of the partition: flush the commits, evaluate the end-of-log rules, make the
        offsets table (to ``rows_sink`` as an Arrow table, else :attr:`offset_rows`)."""
        self._flush(final=True)
        self._open = self._open_transactions()
        end = self.end_instant()
        expired: set[int] = set()
        for g in self.by_gid:
            g.finish()
            expired.update(self._end_of_log(g, end))
        offsets = self._offsets_table(expired)
        self.group_rows, self.group_member_rows = self.state_tables()
        if self.rows_sink is not None:
            self._emit_rows(final=True)
            if offsets.num_rows:
                self.row_groups.update(offsets.column("group").unique().to_pylist())
                self.rows_sink("offsets", offsets)
            for name, rows in (("groups", self.group_rows), ("group_members", self.group_member_rows)):
                if rows:
                    self.row_groups.update(r["group"] for r in rows)
                    self.rows_sink(name, rows)
            return
        self.offset_rows = offsets.to_pylist()
        since = self.options.since
        if since is not None:
            for name, rows in self._row_tables():
                rows[:] = _since(rows, name, since)
        sort_rows(self.generations, "generations")
        sort_rows(self.rebalances, "rebalances")
        sort_rows(self.members, "members")
        sort_rows(self.findings, "findings")

    def state_tables(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The groups and group_members tables now: the shard's groups, and a simple classic group
        (``OffsetMetadataManager.replay``: created by a commit) for every other group that holds
        committed offsets."""
        groups: dict[str, Any] = dict(self.shard.groups.groups)
        has = self.store.k[:, K["st_has"]]
        for g in self.by_gid:
            if g.name not in groups and any(has[k] for k in g.keys.values()):
                groups[g.name] = ClassicGroup(g.name)
        return state_rows(groups, self.shard.topic_names, self.log_partition, self.options.group_matches)

    def _open_transactions(self) -> dict[int, dict[int, int]]:
        """The transactional commits still pending at the end (``pendingTransactionalOffsets``):
        gid -> key -> slot of the key's latest pending commit (of any producer)."""
        store = self.store
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

    def end_instant(self) -> int | None:
        """The instant the end-of-log state is judged at (retention): ``--until`` when given
        (the log read as it stood then), else the partition's last record timestamp."""
        return self.options.until if self.options.until is not None else self.last_timestamp

    def _end_of_log(self, g: GroupState, end: int | None) -> dict[int, str]:
        """The end-of-log findings of a group; returns its expired keys (key -> why)."""
        st = self.store.k
        name, part = g.name, self.log_partition

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

        pp = self.store.p
        mine = sorted((self.key_tp[k], k) for k in g.keys.values() if st[k, K["aborted_slot"]] >= 0)
        for tp, k in mine:
            slot = int(st[k, K["aborted_slot"]])
            ref = self._slot_ref(slot)
            if later_than_store(k, ref.record_offset) and not st[k, K["txn_record"]] > ref.record_offset:
                cur = stored(k)
                self.findings.append(finding(
                    "aborted-txn", name, part, ref,
                    aborted_message(tp, ref.offset, int(pp[slot, P["producer_id"]]),
                                    None if cur is None else cur.offset), cur))
        latest = self._open.get(g.gid, {})
        for tp, k in sorted((self.key_tp[k], k) for k in latest):
            slot = latest[k]
            ref = self._slot_ref(slot)
            if later_than_store(k, ref.record_offset):
                self.findings.append(finding("pending-txn", name, part, ref,
                                             pending_message(tp, ref.offset, int(pp[slot, P["producer_id"]])),
                                             stored(k)))
        expired = self._expired(g, end)
        for tp, k in sorted(g.keys.items()):
            why = expired.get(k)
            if why is not None:
                gen_id = int(st[k, K["st_generation"]])
                ref = CommitRef(tp[0], tp[1], int(st[k, K["st_offset"]]), int(st[k, K["st_record"]]),
                                int(st[k, K["st_position"]]), self.sources[int(st[k, K["st_source"]])],
                                int(st[k, K["st_timestamp"]]), None if gen_id == NULL else gen_id)
                self.findings.append(finding("expiring", name, part, ref,
                                             expiring_message(tp, ref.offset, why)))
        return expired

    def _expired(self, g: GroupState, end: int | None) -> dict[int, str]:
        """The group's stored offsets that are expired at ``end`` (key -> why): the expiring
        rule, which the offsets table's ``expired`` column repeats."""
        st = self.store.k
        if end is None or not self.store.g[g.gid, G["exists"]]:
            return {}
        gen = g.gen
        if gen is not None and not gen.empty:
            return {}  # ClassicGroup.offsetExpirationCondition: only Empty (or simple) groups
        open_keys = self._open.get(g.gid, {})
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
                                      None if ets == NULL else ets, empty_since, self.options.retention_ms)
            if expired:
                out[k] = why
        return out

    def _offsets_table(self, expired: set[int]) -> Any:
        """The offsets table as an Arrow table, sorted by group, topic and partition: every
        stored offset (``OffsetMetadataManager.offsets``: plain commits, and transactional ones
        whose COMMIT marker was read) of the groups kept, gathered from the store's columns at
        once (end-of-log work, vectorized: a partition may hold many keys)."""
        import pyarrow as pa

        from kgtool.offsets.tables import arrow_schema

        store = self.store
        kk = store.k[: store.n_keys]
        ks = np.flatnonzero(kk[:, K["st_has"]] != 0)
        schema = arrow_schema(OFFSETS)
        if not len(ks):
            return schema.empty_table()
        assert not (kk[ks, K["st_metadata_chunk"]] != -1).any(), "metadata read before its chunk was settled"
        names, topics, topic_of_key, part_of_key = self._dictionaries()
        gid = kk[ks, K["gid"]]
        tcode, part = topic_of_key[ks], part_of_key[ks]
        # group, topic, partition order (names and topics ranked as strings)
        g_rank = np.argsort(np.argsort(np.array(names.to_pylist(), dtype=object)))
        t_rank = np.argsort(np.argsort(np.array(topics.to_pylist(), dtype=object)))
        order = np.lexsort((part, t_rank[tcode], g_rank[gid]))
        ks, gid, tcode, part = ks[order], gid[order], tcode[order], part[order]

        def column(field: str) -> np.ndarray:
            return kk[ks, K[field]]

        cts, ets, meta = column("st_commit_ts"), column("st_expire_ts"), column("st_metadata")
        metadata = pa.array(store.metadata, pa.string()).take(pa.array(np.maximum(meta, 0), mask=meta < 0)) \
            if len(store.metadata) else pa.nulls(len(ks), pa.string())
        arrays = {
            "group": names.take(pa.array(gid)),
            "log_partition": pa.array(np.full(len(ks), self.log_partition, np.int32)),
            "topic": topics.take(pa.array(tcode)),
            "partition": pa.array(part.astype(np.int32)),
            "offset": pa.array(column("st_offset")),
            "leader_epoch": pa.array(column("st_leader_epoch").astype(np.int32)),
            "metadata": metadata,
            "commit_timestamp": pa.array(cts, mask=cts == NULL),
            # OffsetAndMetadata.fromRecord: expire timestamp -1 (OffsetCommitRequest.DEFAULT_TIMESTAMP) is none
            "expire_timestamp": pa.array(ets, mask=(ets == NULL) | (ets < 0)),
            "record_offset": pa.array(column("st_record")),
            "expired": pa.array(np.isin(ks, np.fromiter(expired, np.int64, len(expired)))),
        }
        return pa.Table.from_arrays([arrays[n] for n, _t in OFFSETS], schema=schema)

    # ---- results ---------------------------------------------------------------------------------
    def offsets(self, group: str) -> dict[TopicPartition, int]:
        """The group's committed offsets now (what the coordinator would load)."""
        g = self.groups.get(group)
        if g is None:
            return {}
        st = self.store.k
        return {tp: int(st[k, K["st_offset"]]) for tp, k in sorted(g.keys.items()) if st[k, K["st_has"]]}

    def coverage(self, segments: int = 0, size: int = 0) -> dict[str, Any]:
        self._seen_flush()
        self._seen_tables = None
        n = self.records
        row = {
            "log_partition": self.log_partition,
            "segments": segments,
            "bytes": size,
            "batches": self.batches,
            "records": n,
            "first_offset": self.first_offset if n else None,
            "last_offset": self.last_offset if n else None,
            "offsets_absent": None if not n else self.last_offset - self.first_offset + 1 - n,  # type: ignore[operator]
            "first_timestamp": self.first_timestamp if n else None,
            "last_timestamp": self.last_timestamp if n else None,
            **self.counters,
            "groups": len(self.group_names),
            "problems": self.problem_count,
        }
        return {name: row[name] for name, _t in COVERAGE}


_DICTIONARY_COLUMNS = ("group", "source", "topic", "metadata", "txn_result", "protocol", "group_state", "note")


def commits_schema() -> Any:
    """The commits table as the replay emits it: the string columns, and the owners lists'
    member ids, dictionary-encoded (same values; Parquet stores them as its own dictionary pages
    and readers see strings)."""
    import pyarrow as pa

    from kgtool.offsets.tables import arrow_type

    coded = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([pa.field(n, coded if n in _DICTIONARY_COLUMNS else pa.list_(coded) if n == "owners"
                               else arrow_type(t)) for n, t in COMMITS])


class _NoKeys:
    """A key table with no keys (entries fed without columns)."""

    groups: list[str] = []
    topics: list[str] = []

    def __len__(self) -> int:
        return 0

    def key_group(self) -> np.ndarray:
        return np.empty(0, np.int32)

    key_topic = key_partition = key_type = key_group


_NO_KEYS = _NoKeys()


class _EntryChunk:
    """A chunk whose records all take the rare path."""

    def __init__(self, source: str, rare: list[tuple[int, LogEntry]]) -> None:
        self.source = source
        self.n = 0
        self.rare = rare
        self.metadata_values: list[str] = []
        self.batches = 0
        for name in ("record_offset", "position", "timestamp", "producer_id", "version", "offset", "leader_epoch",
                     "commit_timestamp", "expire_timestamp", "key", "metadata", "producer_epoch"):
            setattr(self, name, np.empty(0, np.int64))
        self.transactional = np.empty(0, np.bool_)


def _parsed(part: Any) -> Any:
    """A rare entry's key or value: a dict, or its JSON text in the flat row form (entry_to_row)."""
    return json.loads(part) if isinstance(part, str) else part


def until_cut(timestamp: np.ndarray, rare: list[tuple[int, LogEntry]], until: int) -> tuple[int, int] | None:
    """``--until``: where the log read stops in a chunk, at its first record (commit row or rare
    entry, in log order) stamped at or after ``until``: (commit rows kept, rare entries kept),
    or None when every record of the chunk is before it. A record stamped T was appended
    during millisecond T, so the state at instant T holds exactly the records stamped before
    T: the coordinator's appends are in log order, and a later record stamped before T (a
    clock that went back) is still after the cut. Decode problems (no offset, no timestamp)
    are kept up to the cut."""
    late = np.flatnonzero(timestamp >= until)
    row = int(late[0]) if len(late) else len(timestamp)
    kept = 0
    for i, e in rare:
        if i > row:
            break  # rare entry (i, e) comes before commit row i
        if e.offset >= 0 and e.timestamp >= until:
            return i, kept
        kept += 1
    if row == len(timestamp):
        return None
    return row, kept


def _since(rows: list[Any], name: str, since: int) -> list[Any]:
    """The rows of table ``name`` that ``--since`` keeps: those written at or after ``since``
    (and every finding of an end-of-log rule)."""
    ts = _column(name, "timestamp")
    end_of_log = name == "findings"
    return [r for r in rows if (end_of_log and r["rule"] in END_OF_LOG_RULES) or r[ts] is None or r[ts] >= since]


def _concat(a: Any, b: Any) -> Any:
    import pyarrow as pa

    return pa.concat_tables([a, b])
