"""Replay of one ``__consumer_offsets`` partition, in log order, as the coordinator loads it.

All records of a group live in its coordinator's partition (``GroupCoordinatorService
.partitionFor``), and a transaction's marker follows its records in that same partition, so
a partition replays on its own: :class:`PartitionReplay` takes the partition's decoded chunks
(plain offset commits as typed columns, rare records as :class:`~kgtool.offsets.entries.LogEntry`,
see :mod:`kgtool.offsets.columns`) in log order and keeps

- the group state (:mod:`kgtool.offsets.shard`, ``GroupMetadataManager``: each group record
  parsed once) and the generations, owners and commit attribution read from it
  (:mod:`kgtool.offsets.generations`),
- the offset store with its pending transactions (:mod:`kgtool.offsets.store`,
  ``OffsetMetadataManager`` with ``replayEndTransactionMarker``),
- the rules (:mod:`kgtool.offsets.rules`; those judged at the end of the log in
  :mod:`kgtool.offsets.end_of_log`),
- and the partition's coverage (:mod:`kgtool.offsets.partition_coverage`),

and hands out the tables: the commits and offsets tables as Arrow
(:mod:`kgtool.offsets.arrow_output`), the others as rows. This module is the orchestration:
chunks in, each record to its replay in log order, tables out; all of it in memory that grows
with groups, keys and producers, not with records. The commits table leaves as Arrow tables,
one per chunk, in log order (``sink``); a chunk is held back only while one of its
transactional commits waits for its marker (at most the length of a transaction: Kafka aborts
transactions after ``transaction.max.timeout.ms``). Knowing each
producer's last marker in advance (``last_markers``, a pre-pass over control batches) lets a
commit whose transaction never ends be written out at once. Generations, members and findings
are small tables, returned at the end.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any

import numpy as np

from kgtool.offsets.arrow_output import ArrowOutput, concat
from kgtool.offsets.end_of_log import end_of_log, open_transactions
from kgtool.offsets.entries import (
    CONTROL,
    END_TXN_TYPES,
    GROUP_METADATA,
    NO_PRODUCER_ID,
    OFFSET_COMMIT_KINDS,
    PROBLEM,
    LogEntry,
)
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.partition_coverage import PartitionCoverage
from kgtool.coordinator.schema import ZERO_UUID
from kgtool.offsets.shard import RECORD_GROUP_TYPE, ClassicGroup, GroupCoordinatorShard, GroupType, ModernGroup
from kgtool.offsets.shard.views import state_rows
from kgtool.offsets.generations import GroupState, OwnerLists, TopicPartition
from kgtool.offsets.compaction import CompactionWatch
from kgtool.offsets.tables import COMPARING_RULES, HISTORY_RULES
from kgtool.offsets.rebalances import RebalanceLog
from kgtool.offsets.rules import (
    END_OF_LOG_RULES,
    CommitRef,
    Previous,
    epoch_message,
    finding,
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
    NULL,
    P,
    CommitColumns,
    CommitOutputs,
    Store,
)
from kgtool.offsets.tables import MEMBER

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
    #: v4's TopicId of each commit (4.1+): int32 code into ``topic_id_values``, -1 none
    topic_ids: np.ndarray | None = None
    topic_id_values: list[str] = field(default_factory=list)
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
                 rows_sink: Callable[[str, list[dict[str, Any]]], None] | None = None,
                 history_sink: Callable[[PartitionReplay, _Held], None] | None = None,
                 history_rows: Callable[[str, list[Any]], None] | None = None) -> None:
        self.log_partition = log_partition
        #: every chunk of commits (the replay and its columns: ``history_sink(self, held)``), and
        #: the generations and members rows, before --since hides rows (lag needs the whole history)
        self.history_sink = history_sink
        self.history_rows = history_rows
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
        self.held: deque[_Held] = deque()
        self._current: _Held | None = None
        self._serials = 0
        #: --until: the partition's first record stamped at or after the instant was reached;
        #: the log read stops there (the caller may stop decoding).
        self.ended = False
        self.cover = PartitionCoverage(log_partition, keep_problems)  # the coverage row
        # how far the partition is cleaned (kgtool.offsets.compaction): every record read counts
        self.compaction = CompactionWatch(self.options.cleaner_checkpoint(log_partition))
        self.exact = True  # the state tables at the end (or --until) are the state Kafka had then
        self.cover.compaction = self.compaction
        self.arrow = ArrowOutput(self)  # the commits and offsets tables
        self.commit_rows = 0
        self.gids_with_rows: set[int] = set()
        # the groups as Kafka's coordinator holds them (the groups and group_members tables);
        # commits stay in the columnar store, the shard replays every other record
        self.shard = GroupCoordinatorShard(dict(self.options.topic_names))
        self.group_rows: list[dict[str, Any]] = []
        self.group_member_rows: list[dict[str, Any]] = []
        # consumer groups changed by the batch of group records being read (settled at its end)
        self._unsettled: set[GroupState] = set()
        self._batch: tuple[str, int] | None = None
        self._batch_ts = -1

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
        ``--until``'s cut (:attr:`ended`) a chunk is read only for the partition's cleaned range
        and its topic names (see :attr:`wants_rest`)."""
        self.compaction.add(chunk)  # also after the cut: the cleaned range may reach past it
        if self.ended:
            # read on for the cleaned range (wants_rest): the topic names the rest of the log
            # gives name the state at the cut too (compaction removed the commits before it
            # that named them; an id's name does not change)
            self._learn_topic_ids(chunk.rare)
            if chunk.topic_id_values:
                self._learn_chunk_topic_ids(chunk, keys)
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
        self.cover.add(chunk, keep, rare, keys)
        names_before = self.shard.topic_names.version
        self._learn_topic_ids(rare)
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
                     source=chunk.source, topic_ids=col(chunk.topic_id, np.int32),
                     topic_id_values=chunk.topic_id_values)
        if chunk.topic_id_values:
            self._learn_chunk_topic_ids(chunk, keys)
        if self.shard.topic_names.version != names_before:
            self._renamed()
        self._current = held
        self.held.append(held)
        lo = 0
        for i, e in rare:
            if i > lo:
                self._commit_rows(held, lo, i)
                lo = i
            self._rare(e)
        self._commit_rows(held, lo, m, chunk_end=True)
        held.waits = self.store.waiting(held.out, cols.producer_id, cols.record_offset, self.last_markers)
        self.store.settle_metadata(cols.serial, held.metadata)
        self._current = None
        self._flush()
        self._emit_rows()

    def read(self, chunk: Any, keys: Any) -> bool:
        """:meth:`feed` one chunk of a read in log order; True when the read may stop here
        (``--until``'s cut reached, and nothing more is wanted: :attr:`wants_rest`)."""
        self.feed(chunk, keys)
        return self.ended and not self.wants_rest

    @property
    def wants_rest(self) -> bool:
        """After ``--until``'s cut: whether the rest of the partition is still worth reading, for
        its cleaned range and topic names only: when it is compacted (a checkpoint entry, or
        cleaning seen before the cut), the range may reach past the instant, and the commits that
        named topics before it may be gone."""
        return self.compaction.checkpoint is not None or self.compaction.sign_end >= 0

    def feed_entries(self, entries: Iterable[LogEntry], source: str | None = None) -> None:
        """Replay entries (:class:`LogEntry`, log order) without columnar decoding: every record
        takes the rare path (offset commits one row at a time). For tests and small inputs."""
        items = list(entries)
        self.feed(_EntryChunk(source or (items[0].source if items else "<entries>"), [(0, e) for e in items]),
                  _NO_KEYS)

    # ---- rare records -------------------------------------------------------------------------
    def _rare(self, e: LogEntry) -> None:
        kind = e.kind
        if kind == PROBLEM:
            if e.group is not None and self.options.group_matches(e.group):
                self.shard.replay_undecodable(e.offset, e.record_kind, e.group, e.problem or "")
            return
        self._settle(e)
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
        group_type = RECORD_GROUP_TYPE.get(kind)  # type: ignore[arg-type]
        if kind == GROUP_METADATA or group_type is GroupType.CONSUMER:
            g = self.group(e.group)
            if g is None:
                return
            g.records += 1
            key, value = _parsed(e.key), _parsed(e.value)
            if key is not e.key or value is not e.value:
                e = replace(e, key=key, value=value)
            if kind == GROUP_METADATA:
                # the shard parses the record into its ClassicGroup; the generation reads that
                why = self.shard.replay(e.offset, kind, key, value, e.timestamp)
                if why is not None:  # a value kgtool cannot replay: no generation (the group is incomplete)
                    self._refused(e, why)
                    return
                g.classic_metadata(e, _classic(self.shard.groups.groups.get(e.group)))
                return
            # a consumer group: its batch is settled (reconciliation, owners) once the batch is read
            groups, names = self.shard.groups, self.shard.topic_names
            g.before_consumer_record(e, _modern(groups.group(e.group)), names, self.findings)
            self._refused(e, self.shard.replay(e.offset, kind, key, value, e.timestamp))
            g.consumer_record(e, _modern(groups.group(e.group)), names)
            self._unsettled.add(g)
            return
        if group_type is not None and self.options.group_matches(e.group):
            # share (KIP-932) and streams (KIP-1071) groups: their state only
            self._refused(e, self.shard.replay(e.offset, kind, _parsed(e.key), _parsed(e.value), e.timestamp))

    def _refused(self, e: LogEntry, why: str | None) -> None:
        """A record that decodes but that Kafka's loader refuses (its replay throws, and the
        partition does not load: e.g. a member's tombstone before its assignment's): the shard
        marked its group incomplete; here it is one warning, counted with the problems."""
        if why is not None:
            self.cover.problem(replace(
                e, kind=PROBLEM, record_kind=e.kind, key=None, value=None,
                problem=f"record of group {e.group!r} at offset {e.offset} ({e.kind}): {why}; the group is "
                        "marked incomplete"))

    def _renamed(self) -> None:
        """Topic ids named by the chunk's commits: the consumer groups' owners, which their
        records hold by id, are named again before the chunk's commits are judged (on a compacted
        log the commits that named a topic before a group's records may be gone)."""
        groups, names = self.shard.groups, self.shard.topic_names
        for g in self.by_gid:
            g.rename_owners(_modern(groups.group(g.name)), names)

    def _commit_rows(self, held: _Held, lo: int, hi: int, chunk_end: bool = False) -> None:
        """Replay the commit rows ``lo:hi`` of the chunk. Those of the batch whose group records
        were just read (a real broker's 10 ms linger merges operations: a heartbeat's records and
        a commit in one batch) are replayed before that batch is settled, with the groups' owners
        as its records left them (the commits came after); the batch settles at its end, at its
        largest timestamp, as Kafka's loaded state shows it after the whole batch."""
        cols = held.cols
        if self._unsettled and self._batch is not None and self._batch[0] == held.source and hi > lo:
            same = cols.position[lo:hi] == self._batch[1]  # the batch's rows come first (log order)
            k = lo + (int(np.argmin(same)) if not same.all() else hi - lo)
            if k > lo:
                groups, names = self.shard.groups, self.shard.topic_names
                for g in sorted(self._unsettled, key=lambda g: g.gid):
                    g.settle_consumer(_modern(groups.group(g.name)), self._batch_ts, names, observe=False)
                self._batch_ts = max(self._batch_ts, int(cols.timestamp[lo:k].max()))
                self._events(self.store.replay_commits(cols, held.out, lo, k), held)
                lo = k
        if lo < hi or chunk_end:
            self._settle()  # the batch ended (a chunk ends at a batch boundary)
        if lo < hi:
            self._events(self.store.replay_commits(cols, held.out, lo, hi), held)

    def _settle(self, e: LogEntry | None = None) -> None:
        """Settle the consumer groups the last batch of group records changed, once a record of
        another batch comes (``e``), or the batch ends among commit rows or at the chunk's end:
        Kafka's loader serves a group's state between batches, never inside one."""
        batch = None if e is None else (e.source, e.position)
        if self._unsettled and batch != self._batch:
            groups, names = self.shard.groups, self.shard.topic_names
            for g in sorted(self._unsettled, key=lambda g: g.gid):
                g.settle_consumer(_modern(groups.group(g.name)), self._batch_ts, names)
            self._unsettled.clear()
        if e is not None:
            self._batch_ts = max(self._batch_ts, e.timestamp) if batch == self._batch else e.timestamp
        self._batch = batch

    def _learn_topic_ids(self, rare: list[tuple[int, LogEntry]]) -> None:
        """Name topic ids from the chunk's OffsetCommitValue v4 records (4.1+ writes a commit's
        ``TopicId`` beside its topic name) before the chunk is replayed: the KIP-848 records hold
        partitions by id only, and 4.1+ writes no ConsumerGroupPartitionMetadata to name them, so a
        group's owners are named by the commits that follow. A topic's id is a fact of the cluster,
        not of an instant (a deleted and re-created topic gets a new id: both are named)."""
        learn = self.shard.topic_names.learn
        for _, e in rare:
            if e.kind in OFFSET_COMMIT_KINDS and e.value_version == 4:
                v = _parsed(e.value)
                if v is not None and v.get("topic_id") not in (None, ZERO_UUID):
                    key = _parsed(e.key)
                    if key and key.get("topic"):
                        learn(str(v["topic_id"]), str(key["topic"]))

    def _learn_chunk_topic_ids(self, chunk: Any, keys: Any) -> None:
        """:meth:`_learn_topic_ids` for the chunk's plain commits: each distinct (topic, TopicId)
        pair once (NumPy over the rows)."""
        codes = chunk.topic_id[: chunk.n]
        has = codes >= 0
        if not has.any():
            return
        tcodes = keys.key_topic()[chunk.key[: chunk.n][has]]
        pairs = np.unique(np.stack([tcodes.astype(np.int64), codes[has].astype(np.int64)]), axis=1)
        learn, topics, values = self.shard.topic_names.learn, keys.topics, chunk.topic_id_values
        for t, c in pairs.T.tolist():
            learn(values[c], topics[t])

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
        tid = None if tomb else v.get("topic_id")
        if tid is not None:
            held.topic_ids, held.topic_id_values = np.zeros(1, np.int32), [str(tid)]
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

    def slot_ref(self, slot: int) -> CommitRef:
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
            self._finding_event(g, self.slot_ref(slot), k, kind, ev[3:],
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
            table = self.arrow.commits_table(held)
            for extra in held.extra:
                table = concat(table, self.arrow.commits_table(extra))
            if held.extra:
                import pyarrow.compute as pc

                table = table.unify_dictionaries().combine_chunks()
                table = table.take(pc.sort_indices(table, [("record_offset", "ascending")]))
            if self.history_sink is not None and table.num_rows:
                self.history_sink(self, held)
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

    # ---- the end of the log ------------------------------------------------------------------------
    def _emit_rows(self, final: bool = False) -> None:
        """Hand the final rows of the small tables to ``rows_sink`` (every ROW_BATCH rows, and
        at the end): members and findings are final when made, a generation row when its
        group's next generation (or the end of the log) closes it."""
        if self.rows_sink is None:
            return
        if not final and len(self.generations) + len(self.members) + len(self.rebalances) < ROW_BATCH:
            return
        since = self.options.since
        open_rows = set() if final else {id(g.gen.row) for g in self.by_gid if g.gen is not None and g.gen.row is not None}
        ready = {
            "generations": [r for r in self.generations if id(r) not in open_rows],
            "members": list(self.members),
            # findings wait for the end: a compacted log's cleaned range is known only then
            "findings": list(self.findings) if final else [],
            "rebalances": list(self.rebalances),  # a row joins the list when final
        }
        self.generations[:] = [r for r in self.generations if id(r) in open_rows]  # in place: groups append here
        self.members.clear()
        if final:
            self.findings.clear()
        self.rebalances.clear()
        for name, rows in ready.items():
            if self.history_rows is not None and name in ("generations", "members") and rows:
                self.history_rows(name, rows)
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
        open_txns = open_transactions(self.store)
        end = self.end_instant()
        expired: set[int] = set()
        for g in self.by_gid:
            g.finish(end)
            expired.update(end_of_log(self, g, end, open_txns))
        self._judge_compaction()
        # --until inside the cleaned range: the state rows are what the log holds, marked inexact
        self.exact = not self.compaction.inexact_at(self.options.until, self.cover.whole)
        offsets = self.arrow.offsets_table(expired)
        self.group_rows, self.group_member_rows = self.state_tables()
        for r in (*self.group_rows, *self.group_member_rows):
            r["exact"] = self.exact
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

    def _judge_compaction(self) -> None:
        """A compacted partition (:mod:`kgtool.offsets.compaction`): the history rules do not
        judge evidence below its cleaned range, where only the latest record of each key
        survives (a member's superseded records make its commits look unowned, an older commit
        is gone...): a finding whose record lies below ``compacted_below_offset``, or whose rule
        compares with an earlier commit there (rewind, zombie, epoch-regression), is dropped; a
        storm is judged on its rebalances above. (The earlier record ``aborted-txn`` and
        ``slow-revocation`` name is context: the prior offset, the member's state since.)"""
        below, _time, _source = self.compaction.result(self.cover.whole)
        if below is None:
            return
        dropped = self.rebalance_log.drop_cleaned(below)
        kept = []
        for f in self.findings:
            if id(f) in dropped:
                continue
            if f["rule"] in HISTORY_RULES and f["rule"] != "rebalance-storm" and (
                    (f["record_offset"] is not None and f["record_offset"] < below)
                    or (f["rule"] in COMPARING_RULES and f.get("previous_record_offset") is not None
                        and f["previous_record_offset"] < below)):
                continue
            kept.append(f)
        self.findings[:] = kept  # in place: the rebalance log appends to the same list

    def state_tables(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The groups and group_members tables now: the shard's groups, and a simple classic group
        (``OffsetMetadataManager.replay``: created by a commit) for every other group that holds
        committed offsets."""
        groups: dict[str, Any] = dict(self.shard.groups.groups)
        has = self.store.k[:, K["st_has"]]
        for g in self.by_gid:
            if g.name not in groups and any(has[k] for k in g.keys.values()):
                groups[g.name] = ClassicGroup(g.name)
        return state_rows(groups, self.shard.topic_names, self.log_partition, self.options.group_matches,
                          self.shard.groups.share_state_metadata)

    def end_instant(self) -> int | None:
        """The instant the end-of-log state is judged at (retention): ``--until`` when given
        (the log read as it stood then), else the partition's last record timestamp."""
        return self.options.until if self.options.until is not None else self.cover.last_timestamp

    # ---- results ---------------------------------------------------------------------------------
    def coverage(self, segments: int = 0, size: int = 0) -> dict[str, Any]:
        """The partition's coverage row (:class:`PartitionCoverage`)."""
        return self.cover.row(segments, size)

    @property
    def problems(self) -> list[LogEntry]:
        """The first decode problems (``keep_problems`` of them)."""
        return self.cover.problems

    @property
    def problem_count(self) -> int:
        return self.cover.problem_count

    def offsets(self, group: str) -> dict[TopicPartition, int]:
        """The group's committed offsets now (what the coordinator would load)."""
        g = self.groups.get(group)
        if g is None:
            return {}
        st = self.store.k
        return {tp: int(st[k, K["st_offset"]]) for tp, k in sorted(g.keys.items()) if st[k, K["st_has"]]}




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
        self.topic_id_values: list[str] = []
        self.batches = 0
        for name in ("record_offset", "position", "timestamp", "producer_id", "version", "offset", "leader_epoch",
                     "commit_timestamp", "expire_timestamp", "key", "metadata", "producer_epoch", "topic_id"):
            setattr(self, name, np.empty(0, np.int64))
        self.transactional = np.empty(0, np.bool_)


def _modern(group: Any) -> ModernGroup | None:
    """The shard's group if it is a consumer group (KIP-848), else None."""
    return group if isinstance(group, ModernGroup) and group.type is GroupType.CONSUMER else None


def _classic(group: Any) -> ClassicGroup | None:
    """The shard's group if it is a classic group, else None."""
    return group if isinstance(group, ClassicGroup) else None


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

