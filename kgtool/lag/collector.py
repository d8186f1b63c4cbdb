"""What one ``__consumer_offsets`` partition's replay hands the lag phase, per (group, topic,
partition) whose data partition was given: the offsets that took effect and when (a commit
record's time, or its transaction's COMMIT marker's), who owned the partition over time, and its
row of the offsets table (which the lag phase completes with the lag columns and writes).

Owners come from the members table as the replay writes it: a classic group's generation record
lists every member and its assignment (each generation replaces the previous owners); a
consumer group's member rows are each member's current assignment as its records set it (a
partition belongs to the member whose latest row holds it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from itertools import chain
from typing import Any

import numpy as np

from kgtool import native
from kgtool.lag.timeline import DELETED, distinct
from kgtool.offsets.store import NULL
from kgtool.offsets.tables import MEMBER

#: the lag kernel (``kgtool.lag._kernel``), or None: the NumPy twins
kernel: Any = native.load("kgtool.lag._kernel")


def _tp(text: str) -> tuple[str, int] | None:
    topic, _, part = text.rpartition("-")
    return (topic, int(part)) if topic and part.isdigit() else None


@dataclass
class _GroupOwners:
    protocol: str = "classic"
    #: (record_offset, timestamp, kind, payload): "gen" (classic generation: new owners follow) or
    #: "member" (member_id, client_id, host, the lag indices of its assigned partitions).
    #: LagCollector keeps only the "gen" events here (members rows are kept flat) and makes the
    #: "member" ones for the groups that take the event path (:meth:`LagCollector.owner_changes`).
    events: list[tuple] = field(default_factory=list)


@dataclass
class ReplayedCommits:
    """A chunk of the replay's commits (its columns, NumPy arrays, in log order): the store key
    of each (one a group, topic and partition), when its record was written, its record's
    offset, the offset committed and whether it is a deletion (a tombstone), whether it took
    effect, and the record offset of the marker it took effect at (NULL: none; its own record
    offset: at once)."""

    key: np.ndarray
    timestamp: np.ndarray
    record_offset: np.ndarray
    offset: np.ndarray
    deleted: np.ndarray
    effective: np.ndarray
    effective_at: np.ndarray


@dataclass
class _Steps:
    """A chunk's rows kept as ``_lag.h``'s lag_pick_steps gives them: the store keys present (by
    data partition, then key; partition ``p``'s are ``bounds[p]:bounds[p+1]``), how many rows each
    and where they start, each key's first row (instant, offset) and the steps from each row to
    the next (ms and offsets: uint16 and int16 when every step of the chunk fits, else uint32 and
    int32)."""

    keys: np.ndarray
    count: np.ndarray
    start: np.ndarray
    first: np.ndarray
    dt: np.ndarray
    doff: np.ndarray
    bounds: np.ndarray


def _bytes(flags: np.ndarray) -> np.ndarray:
    """A bool array as uint8, without a copy when it is contiguous."""
    flags = np.ascontiguousarray(flags)
    return flags.view(np.uint8) if flags.dtype == np.bool_ else flags.astype(np.uint8)


class LagCollector:
    """Collects one partition's lag inputs while its replay runs (``partitions``: the data
    partitions given, (topic, partition) -> the lag phase's index).

    Commits are kept as columns, a chunk at a time, split by data partition (nothing per commit
    in Python), with a count per store key; :meth:`payloads` puts each data partition's in group
    order with a counting sort and hands them on as one :class:`LagInput` per data partition."""

    def __init__(self, partitions: dict[tuple[str, int], int], log_partition: int,
                 marker_times: dict[int, int] | None = None) -> None:
        self.partitions = partitions
        #: every transaction marker's timestamp by record offset (the task's pre-pass fills it
        #: before the replay: a transaction's offsets take effect at its marker)
        self.marker_times = marker_times if marker_times is not None else {}
        self._markers: tuple[int, np.ndarray, np.ndarray] | None = None
        self._groups: dict[str, int] = {}
        self._tp_cache: dict[str, int] = {}
        #: per store key: its data partition's lag index (-1: not given) and its group's code
        self._key_index = np.zeros(0, np.int32)
        self._key_group = np.zeros(0, np.int32)
        #: the commits kept, a chunk at a time (store key, instant, offset or DELETED), and how
        #: many of each store key
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray] | _Steps] = []
        #: the store keys by data partition, then key (lag_pick_steps), its scratch and outputs
        self._key_order: np.ndarray | None = None
        self._scratch = np.zeros(0, np.int64)
        self._present: tuple[np.ndarray, ...] = ()
        self._steps = (np.zeros(0, np.uint32), np.zeros(0, np.int32))
        self._counts = np.zeros(0, np.int64)
        self.owners: dict[str, _GroupOwners] = {}
        #: the members rows, flat (one element a row): group code, record offset, timestamp,
        #: owner ((member_id, client_host, client_id) in ``_owner_ids``), member id code, lag
        #: indices of its partitions (all rows' one after the other, "dp_flat", with how many each
        #: row has, "dp_size"); each group's generation rows stay events of
        #: ``owners`` and are also kept flat while it is classic (``_gens``: group code, record
        #: offset, timestamp)
        self._members: dict[str, list[np.ndarray]] = {k: [] for k in _MEMBER_KEYS}
        self._gens: dict[str, list[int]] = {"group": [], "rec": [], "ts": []}
        self._owner_ids: dict[tuple[Any, Any, Any], int] = {}
        self._member_ids: dict[Any, int] = {}
        self.offsets: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.log_partition = log_partition
        self.missing = 0  # offsets rows whose data partition was not given
        #: the owners (member_id, host, client_id) by the ids the inputs' ``owner_refs`` give,
        #: once :meth:`payloads` ran: the driver names an episode's owners from it
        self.owner_table: list[tuple[Any, Any, Any]] = []

    def _group_code(self, group: str | None) -> int:
        return -1 if group is None else self._groups.setdefault(group, len(self._groups))

    def _learn_keys(self, n: int, describe: Callable[[int], tuple[str, str, int]]) -> None:
        """The lookups of store keys up to ``n`` (``describe(k)``: its group, topic, partition)."""
        have = len(self._key_index)
        if n <= have:
            return
        index = np.full(n, -1, np.int32)
        group = np.full(n, -1, np.int32)
        index[:have], group[:have] = self._key_index, self._key_group
        for k in range(have, n):
            name, topic, part = describe(k)
            i = self.partitions.get((topic, part), -1)
            if i >= 0:
                index[k], group[k] = i, self._group_code(name)
        counts = np.zeros(n, np.int64)
        counts[:have] = self._counts
        self._key_index, self._key_group, self._counts = index, group, counts

    def replay_chunk(self, rp: Any, held: Any) -> None:
        """A replay chunk's commits (:class:`kgtool.offsets.partition.PartitionReplay`'s, and
        those replayed inside it, in log order)."""
        from kgtool.offsets.store import K

        key_tp, gid, by_gid = rp.key_tp, rp.store.k[:, K["gid"]], rp.by_gid
        chunks = [ReplayedCommits(h.cols.key, h.cols.timestamp, h.cols.record_offset, h.cols.offset, h.cols.version < 0,
                              h.out.effective, h.out.effective_at) for h in (held, *held.extra)]
        self.commits(chunks, len(key_tp), lambda k: (by_gid[int(gid[k])].name, key_tp[k][0], key_tp[k][1]))

    def commits(self, chunks: list[ReplayedCommits], n_keys: int, describe: Callable[[int], tuple[str, str, int]]) -> None:
        """Chunks of commits: their effective rows on the data partitions given, kept (store keys
        below ``n_keys``; ``describe(k)``: key ``k``'s group, topic and partition). Several
        chunks (one replayed inside another) are merged in log order first."""
        if not self.partitions:
            return
        self._learn_keys(n_keys, describe)
        if len(chunks) > 1:
            order = np.argsort(np.concatenate([c.record_offset for c in chunks]), kind="stable")
            chunks = [ReplayedCommits(*(np.concatenate([getattr(c, f.name) for c in chunks])[order]
                                    for f in fields(ReplayedCommits)))]
        if chunks:
            picked = self._pick(chunks[0])
            if picked is not None:
                self._chunks.append(picked)

    def _pick(self, c: ReplayedCommits) -> tuple[np.ndarray, np.ndarray, np.ndarray] | _Steps | None:
        """A chunk's rows kept, by data partition (log order within each): (store keys,
        (instant, offset or DELETED) pairs, each partition's first row and one past the last),
        counted: ``_lag.h``'s lag_pick, or the same with NumPy."""
        n, n_dp = len(c.key), len(self.partitions)
        bounds = np.empty(n_dp + 1, np.int64)
        if kernel is not None:
            mk, mt = self._marker_arrays()
            cols = [np.ascontiguousarray(x, np.int64) for x in (c.key, c.timestamp, c.record_offset, c.offset)]
            flags = [_bytes(c.deleted), _bytes(c.effective)]
            eat = np.ascontiguousarray(c.effective_at, np.int64)
            steps = self._pick_steps(n, cols, flags, eat, mk, mt)
            if steps is not None:
                return steps
            key, rows = np.empty(n, np.int32), np.empty((n, 2), np.int64)
            got = kernel.lag_pick(self._key_index, *cols, *flags, eat, mk, mt, self._counts, key, rows, bounds)
            if not got:
                return None
            return (key[:got].copy(), rows[:got].copy(), bounds) if got < n // 2 else (key[:got], rows[:got], bounds)
        key = np.asarray(c.key)
        mine = c.effective & (self._key_index[key] >= 0)
        if not mine.any():
            return None
        rec, at = c.record_offset[mine], c.effective_at[mine]
        marker = np.where((at != NULL) & (at != rec), at, -1)
        rows = np.empty((int(mine.sum()), 2), np.int64)
        rows[:, 0] = self._instants(c.timestamp[mine], marker)
        rows[:, 1] = np.where(c.deleted[mine], DELETED, c.offset[mine])
        key = key[mine].astype(np.int32)
        dp = self._key_index[key]
        order = np.argsort(dp, kind="stable")
        bounds[:] = np.searchsorted(dp[order], np.arange(n_dp + 1))
        self._counts += np.bincount(key, minlength=len(self._counts))
        return key[order], rows[order], bounds

    def _pick_steps(self, n: int, cols: list[np.ndarray], flags: list[np.ndarray], eat: np.ndarray, mk: np.ndarray,
                    mt: np.ndarray) -> _Steps | None:
        """:meth:`_pick` with ``_lag.h``'s lag_pick_steps: the chunk's rows kept as steps (4 or 8
        bytes a row, not 20), or None when a step does not fit (the chunk is then kept as
        lag_pick gives it). The steps are written into buffers reused chunk after chunk, then
        kept in 16 bits each when all of the chunk's fit."""
        nk, n_dp = len(self._key_index), len(self.partitions)
        if self._key_order is None or len(self._key_order) != nk:
            self._key_order = np.lexsort((np.arange(nk), self._key_index)).astype(np.int32)
            self._scratch = np.empty(4 * nk, np.int64)
            self._present = (np.empty(nk, np.int32), np.empty(nk, np.int64), np.empty(nk, np.int64),
                             np.empty((nk, 2), np.int64))
        if len(self._steps[0]) < n:  # the steps written here, then kept as narrow as they fit
            self._steps = (np.empty(n, np.uint32), np.empty(n, np.int32))
        dt, doff = self._steps
        bounds = np.empty(n_dp + 1, np.int64)
        keys, count, start, first = self._present
        got = kernel.lag_pick_steps(self._key_index, self._key_order, *cols, *flags, eat, mk, mt, self._counts,
                                     self._scratch, dt, doff, keys, count, start, first, bounds)
        if got is None:
            return None
        rows, present, max_dt, min_doff, max_doff = got
        narrow = max_dt <= 0xFFFF and -0x8000 <= min_doff and max_doff <= 0x7FFF  # 4 bytes a commit
        kept_dt = dt[:rows].astype(np.uint16 if narrow else np.uint32)
        kept_doff = doff[:rows].astype(np.int16 if narrow else np.int32)
        return _Steps(keys[:present].copy(), count[:present].copy(), start[:present].copy(), first[:present].copy(),
                      kept_dt, kept_doff, bounds)

    def _marker_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The markers' record offsets (ascending) and timestamps, as arrays."""
        if self._markers is None or self._markers[0] != len(self.marker_times):
            mk = np.fromiter(self.marker_times, np.int64, len(self.marker_times))
            mt = np.fromiter(self.marker_times.values(), np.int64, len(self.marker_times))
            order = np.argsort(mk)
            self._markers = (len(self.marker_times), mk[order], mt[order])
        return self._markers[1], self._markers[2]

    def _instants(self, ts: np.ndarray, marker: np.ndarray) -> np.ndarray:
        """When each commit took effect: its record's timestamp, or its transaction's marker's."""
        if not (marker >= 0).any() or not self.marker_times:
            return ts
        mk, mt = self._marker_arrays()
        at = np.minimum(np.searchsorted(mk, marker), len(mk) - 1)
        hit = (marker >= 0) & (mk[at] == marker)
        return np.where(hit, mt[at], ts)

    def history_rows(self, name: str, rows: list[Any]) -> None:
        """Rows of the generations table (dicts) or the members table (tuples, ``MEMBER``)."""
        if name == "generations":
            self.generations(rows)
        else:
            self.member_tuples(rows)

    def generations(self, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            o = self.owners.setdefault(r["group"], _GroupOwners())
            o.protocol = r.get("protocol") or o.protocol
            if o.protocol == "classic":
                o.events.append((r["record_offset"], r["timestamp"], "gen", None))
                self._gens["group"].append(self._group_code(r["group"]))
                self._gens["rec"].append(r["record_offset"])
                self._gens["ts"].append(r["timestamp"])

    def member_tuples(self, rows: list[tuple]) -> None:
        """Members-table rows as the replay makes them (tuples, ``MEMBER``), kept flat: group code,
        record offset, timestamp, owner id, member id, and the lag indices of the partitions
        assigned (``kernel.lag_members``, or :meth:`_member_columns`), a chunk of arrays a call."""
        if not rows:
            return
        if kernel is not None:
            got = kernel.lag_members(rows, _MEMBER_PLACES, self._new_group, self._owner_ids, self._member_ids,
                                      self._tp_cache, self._given)
            columns = [np.frombuffer(b, np.int64) for b in got]
        else:
            columns = self._member_columns(rows)
        for k, col in zip(_MEMBER_KEYS, columns):
            self._members[k].append(col)

    def _new_group(self, name: str) -> int:
        """A group's code, its owners made (a members row's group, the first time a call meets it)."""
        if name not in self.owners:
            self.owners[name] = _GroupOwners()
        return self._group_code(name)

    def _member_columns(self, rows: list[tuple]) -> list[np.ndarray]:
        """The pure-Python twin of ``kernel.lag_members``: a column at a time (the rows
        transposed at C speed), each assignment list converted once (the replay shares one list
        between the rows of equal assignments)."""
        cols = list(zip(*rows))
        groups, recs, stamps, mids, cids, hosts, lists = (cols[i] for i in _MEMBER_PLACES)
        codes = {name: self._new_group(name) for name in dict.fromkeys(groups) if name is not None}
        owner_ids, member_ids = self._owner_ids, self._member_ids
        keys = list(zip(mids, hosts, cids))
        for key in dict.fromkeys(keys):
            owner_ids.setdefault(key, len(owner_ids))
        for mid in dict.fromkeys(mids):
            member_ids.setdefault(mid, len(member_ids))
        given, cache = self._given, self._tp_cache
        converted: dict[int, list[int]] = {}  # id of an assignment list -> its lag indices
        dps = []
        for names in lists:
            got = converted.get(id(names))
            if got is None:
                if names:
                    try:  # every name seen before: one dict lookup each
                        got = [cache[t] for t in names]
                    except KeyError:
                        got = [given(t) for t in names]
                    if -1 in got:
                        got = [k for k in got if k >= 0]
                else:
                    got = []
                converted[id(names)] = got
            dps.append(got)

        def ints(values: Any) -> np.ndarray:
            return np.fromiter(values, np.int64)

        return [ints(-1 if g is None else codes[g] for g in groups), ints(recs), ints(stamps),
                ints(map(owner_ids.__getitem__, keys)), ints(map(member_ids.__getitem__, mids)),
                ints(map(len, dps)), ints(chain.from_iterable(dps))]

    def owner_changes(self) -> tuple[list[tuple[Any, Any, Any]], tuple[np.ndarray, ...]]:
        """Every change of owner of every (group, data partition) of the rows kept: the owner
        table ((consumer_id, host, client_id), by id) and arrays (lag index, group code,
        timestamp, owner id or -1 for nobody) sorted by lag index, then group, then time.

        A classic group's GroupMetadata record is a whole new assignment: when every member row
        of the group is at one of its generation records and no record lists a member twice,
        its partitions' owners come from the flat rows with NumPy (:func:`_classic_entries`).
        Any other group (a consumer group's member records move partitions one member at a time)
        goes through its events (:func:`_owner_timelines`). Both give the owner at any instant
        as the events do."""
        m = self._members
        for name in self.owners:
            self._group_code(name)
        names = {c: name for name, c in self._groups.items()}
        mg, mrec, mts, mown, mmem = (_joined(m[k]) for k in ("group", "rec", "ts", "owner", "member"))
        n = len(mg)
        classic = np.zeros(len(self._groups), np.bool_)
        classic[[self._groups[name] for name, o in self.owners.items() if o.protocol == "classic"]] = True
        # generation rows of the groups classic at the end: (group code, record offset, timestamp)
        gg, grec, gts = (np.array(self._gens[k], np.int64) for k in ("group", "rec", "ts"))
        if len(gg) and not classic[gg].all():
            gg, grec, gts = (x[classic[gg]] for x in (gg, grec, gts))
        # a member row belongs to the generation record at its record offset (a record is one
        # group's): there must be one, of its group; and a member may not be listed twice there
        held = np.zeros(n, np.bool_)
        if len(grec) and n:
            order = np.argsort(grec, kind="stable")
            at = np.minimum(np.searchsorted(grec[order], mrec), len(grec) - 1)
            held = (grec[order][at] == mrec) & (gg[order][at] == mg)
        bad = np.zeros(len(self._groups), np.bool_)
        bad[mg[~held]] = True
        if n > 1:
            o2 = np.lexsort((mmem, mrec))
            twice = (mrec[o2][1:] == mrec[o2][:-1]) & (mmem[o2][1:] == mmem[o2][:-1])
            bad[mg[o2][1:][twice]] = True
        fast = classic & ~bad
        rows = fast[mg] if n else np.zeros(0, np.bool_)
        all_sizes = _joined(m["dp_size"])
        flat = _joined(m["dp_flat"])
        starts = np.cumsum(all_sizes) - all_sizes  # each row's partitions in ``flat``
        keep = fast[gg] if len(gg) else np.zeros(0, np.bool_)
        if kernel is not None and rows.any():
            order = np.lexsort((grec[keep], gg[keep]))
            s_g, s_rec, s_ts = (np.ascontiguousarray(x[keep][order]) for x in (gg, grec, gts))
            got = kernel.lag_classic(s_g, s_rec, s_ts, np.argsort(s_rec, kind="stable"), mrec, mown, all_sizes,
                                      starts, flat, np.flatnonzero(rows), int(flat.max(initial=0)) + 1)
            dp, grp, ts, ids = (np.frombuffer(x, np.int64) for x in got)
        else:
            sizes = all_sizes[rows]
            dp, grp, ts, ids = _classic_entries(gg[keep], grec[keep], gts[keep], np.repeat(mrec[rows], sizes),
                                                np.repeat(mown[rows], sizes), flat[np.repeat(rows, all_sizes)])
        table = list(self._owner_ids)
        other: list[tuple[int, int, int, int]] = []  # (lag index, group code, time, owner) of the rest
        slow = [g for g in range(len(self._groups)) if not fast[g]]
        if slow:
            extra_ids = dict(self._owner_ids)
            of_group = {g: [] for g in slow}
            for i in np.flatnonzero(~rows).tolist():
                of_group[int(mg[i])].append(i)
            for g in slow:
                o = self.owners.get(names[g])
                if o is None:
                    continue
                member_rows = [(int(mrec[i]), int(mts[i]), "member",
                                (table[int(mown[i])][0], table[int(mown[i])][2], table[int(mown[i])][1],
                                 flat[starts[i]:starts[i] + all_sizes[i]].tolist()))
                               for i in of_group[g]]
                events = _GroupOwners(o.protocol, [e for e in o.events if e[2] == "gen"] + member_rows)
                for d, (times, owners) in _owner_timelines(events).items():
                    for t, owner in zip(times, owners):
                        other.append((d, g, t, -1 if owner is None else extra_ids.setdefault(owner, len(extra_ids))))
            table = list(extra_ids)
        if other:
            more = np.array(other, np.int64)
            dp, grp, ts, ids = (np.concatenate([x, more[:, i]]) for i, x in enumerate((dp, grp, ts, ids)))
        order = np.lexsort((np.arange(len(dp)), grp, dp))  # by partition and group, each one's changes in order
        return table, (dp[order], grp[order], ts[order], ids[order])

    def _given(self, text: str) -> int:
        """A ``topic-partition`` string's lag index when that partition was given, else -1."""
        try:
            return self._tp_cache[text]
        except KeyError:
            got = self._tp_cache[text] = self.partitions.get(_tp(text), -1)  # type: ignore[arg-type]
            return got

    def offsets_table(self, table: Any) -> Any:
        """The offsets table: the rows of the data partitions given are kept here (the lag phase
        writes them, with their lag); the rest is returned for the task to write."""
        if not len(table) or not self.partitions:
            return table
        topic = table.column("topic").to_pylist()
        part = table.column("partition").to_pylist()
        mine = np.fromiter(((t, p) in self.partitions for t, p in zip(topic, part)), np.bool_, len(topic))
        self.missing += int(len(topic) - mine.sum())
        if not mine.any():
            return table
        for row in table.filter(mine).to_pylist():
            self.offsets[(row["group"], row["topic"], row["partition"])] = row
        return table.filter(~mine)

    def payloads(self) -> Iterator[tuple[int, LagInput]]:
        """(lag task index, its input) per data partition with a commit or an offset."""
        for g, _t, _p in self.offsets:
            self._groups.setdefault(g, len(self._groups))
        names = {code: g for g, code in self._groups.items()}
        rows_of: dict[int, list[tuple[int, dict[str, Any]]]] = {}
        for (g, t, p), row in self.offsets.items():
            rows_of.setdefault(self.partitions[(t, p)], []).append((self._groups[g], row))
        owners, (o_dp, o_group, o_times, o_ids) = self.owner_changes()
        self.owner_table = owners
        o_bounds = np.searchsorted(o_dp, np.arange(len(self.partitions) + 1))
        keys = np.flatnonzero(self._counts)
        keys = keys[np.lexsort((self._key_group[keys], self._key_index[keys]))]  # by partition, then group
        key_dp, key_group, counts = self._key_index[keys], self._key_group[keys], self._counts[keys]
        dp_keys = np.searchsorted(key_dp, np.arange(len(self.partitions) + 1))  # each partition's keys
        sizes_dp = np.bincount(key_dp, weights=counts, minlength=len(self.partitions))  # rows a partition
        room = np.empty((int(sizes_dp.max(initial=0)), 2), np.int64)
        for k in sorted(set(key_dp.tolist()) | set(rows_of)):
            ka, kb = int(dp_keys[k]), int(dp_keys[k + 1])
            with_commits = key_group[ka:kb].tolist()  # ascending
            codes = sorted(set(with_commits) | {c for c, _r in rows_of.get(k, [])})
            local = {c: i for i, c in enumerate(codes)}
            sizes = np.zeros(len(codes), np.int64)
            # a group deleted and made again has new store keys: one sequence still, by time
            np.add.at(sizes, [local[c] for c in with_commits], counts[ka:kb])
            group_bounds = np.zeros(len(codes) + 1, np.int64)
            np.cumsum(sizes, out=group_bounds[1:])
            w, o = _in_time_order(*self._partition_rows(k, keys[ka:kb], counts[ka:kb], room), group_bounds)
            a, b = o_bounds[k], o_bounds[k + 1]  # this partition's owner changes, by group
            og, ids = o_group[a:b], o_ids[a:b]
            mine = np.isin(og, codes)
            og, times, ids = og[mine], o_times[a:b][mine], ids[mine]
            obounds = np.searchsorted(og, np.array(codes + [np.iinfo(np.int64).max], np.int64))
            obounds[-1] = len(og)
            held, ids = np.unique(ids, return_inverse=True)  # the input's owner table
            if len(held) and held[0] < 0:
                ids = ids - 1  # -1: nobody
                held = held[1:]
            yield k, LagInput(
                log_partition=self.log_partition, groups=[names[c] for c in codes], group_bounds=group_bounds,
                when=w, offset=o,
                owners=[list(owners[i]) for i in held.tolist()], owner_bounds=obounds.astype(np.int64),
                owner_times=times, owner_ids=ids.astype(np.int32),
                offset_rows={local[c]: row for c, row in rows_of.get(k, [])}, owner_refs=held.tolist())
        self._chunks = []

    def _partition_rows(self, k: int, keys: np.ndarray, counts: np.ndarray, room: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
        """Data partition ``k``'s commits (instants, offsets), key after key (``keys``, with
        ``counts`` rows each), each key's in log order: a counting sort of the partition's rows
        of every chunk, in ``room`` (reused: a fresh quarter of a gigabyte cost more to map than
        to fill)."""
        place = np.zeros(len(self._counts), np.int64)
        place[keys] = np.cumsum(counts) - counts
        out = room[:int(counts.sum())]
        for chunk in self._chunks:
            if isinstance(chunk, _Steps):
                a, b = int(chunk.bounds[k]), int(chunk.bounds[k + 1])
                if b > a:
                    kernel.lag_unsteps(chunk.keys, chunk.count, chunk.start, chunk.first, chunk.dt, chunk.doff,
                                        chunk.dt.itemsize, a, b, place, out)
                continue
            key, rows, bounds = chunk
            a, b = int(bounds[k]), int(bounds[k + 1])
            if b > a:
                _scatter(key[a:b], place, rows[a:b], out)
        return out[:, 0].copy(), out[:, 1].copy()

def _scatter(key: np.ndarray, place: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """Row ``i`` of ``rows`` to row ``place[key[i]]`` of ``out``, which then moves on (``_lag.h``'s
    lag_scatter, or :func:`_scatter_py`)."""
    if kernel is not None:
        kernel.lag_scatter(np.ascontiguousarray(key, np.int32), place, np.ascontiguousarray(rows, np.int64), out)
    else:
        _scatter_py(key, place, rows, out)


def _scatter_py(key: np.ndarray, place: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """:func:`_scatter` with NumPy (without the compiled extension)."""
    if not len(key):
        return
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.r_[0, np.flatnonzero(k[1:] != k[:-1]) + 1]
    runs = np.diff(np.r_[starts, len(k)])
    out[place[k] + np.arange(len(k)) - np.repeat(starts, runs)] = rows[order]
    place[k[starts]] += runs


def _in_time_order(when: np.ndarray, offset: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each group's commits (``bounds``; in log order) by time, log order among equal instants:
    log order is time order but for transactions whose marker came later; only their groups are
    sorted."""
    back = np.flatnonzero(when[1:] < when[:-1]) + 1
    back = back[np.isin(back, bounds, invert=True)]  # a group's first commit may be earlier than the last's
    if not len(back):
        return when, offset
    when, offset = when.copy(), offset.copy()
    for g in np.unique(np.searchsorted(bounds, back, "right") - 1).tolist():
        a, b = int(bounds[g]), int(bounds[g + 1])
        order = np.argsort(when[a:b], kind="stable")
        when[a:b], offset[a:b] = when[a:b][order], offset[a:b][order]
    return when, offset


@dataclass
class LagInput:
    """One offsets partition's inputs to one data partition's lag task: its groups (local codes),
    each group's commits that took effect on the partition (group ``c``'s are
    ``group_bounds[c]:group_bounds[c+1]`` of ``when`` and ``offset``: DELETED for a deleted
    offset; by time, log order among equals), each group's owners over time (group ``c``'s
    changes are ``owner_bounds[c]:owner_bounds[c+1]`` of ``owner_times`` and ``owner_ids``, an
    index into ``owners`` ([consumer_id, host, client_id]) or -1 when nobody held it; each
    owner's id in its offsets partition's :attr:`LagCollector.owner_table`, ``owner_refs``, when
    known) and its offsets table row. Sent as :meth:`pack`: a little JSON beside the arrays as
    they are, in one buffer (:meth:`encode`) that Spark moves to the data partition's lag task."""

    log_partition: int
    groups: list[str]
    group_bounds: np.ndarray
    when: np.ndarray
    offset: np.ndarray
    owners: list[list[Any]]
    owner_bounds: np.ndarray
    owner_times: np.ndarray
    owner_ids: np.ndarray
    offset_rows: dict[int, dict[str, Any]]
    owner_refs: list[int] = field(default_factory=list)

    #: the arrays of :meth:`pack`, in order, with their types
    _ARRAYS = (("group_bounds", "<i8"), ("when", "<i8"), ("offset", "<i8"), ("owner_bounds", "<i8"),
               ("owner_times", "<i8"), ("owner_ids", "<i4"))
    #: ...and when there are commits (``form`` "steps16" in the head): :func:`_deltas`
    _STEP_ARRAYS = (("group_bounds", "<i8"), ("when_first", "<i8"), ("when_steps", "<u2"), ("when_big", "<i8"),
                    ("offset_first", "<i8"), ("offset_steps", "<i2"), ("offset_big", "<i8"), ("owner_bounds", "<i8"),
                    ("owner_times", "<i8"), ("owner_ids", "<i4"))

    def pack(self) -> tuple[str, list[np.ndarray]]:
        """(the JSON head, the arrays to write after it). The commits go as each group run's first
        instant and offset and the 16-bit steps after, the steps that do not fit beside
        (:func:`_deltas`: about 4 bytes a commit, against 16 as they are): Spark's shuffle writes,
        sends and reads every byte of them. lz4 cost the offsets-log task more (0.28 s of a 16M-commit task) than
        it saved."""
        import json

        arrays = [np.ascontiguousarray(getattr(self, name), dt) for name, dt in self._ARRAYS]
        head = {"log_partition": self.log_partition, "groups": self.groups, "owners": self.owners,
                "offset_rows": [[c, r] for c, r in sorted(self.offset_rows.items())], "owner_refs": self.owner_refs,
                "lengths": [len(a) for a in arrays]}
        compact = _deltas(arrays[0], arrays[1], arrays[2])
        if compact is not None:
            arrays = [arrays[0], *compact, *arrays[3:]]
            head["lengths"] = [len(a) for a in arrays]
            head["form"] = "steps16"
        return json.dumps(head, separators=(",", ":")), arrays

    def encode(self) -> np.ndarray:
        """The input as one buffer (uint8): the JSON head's length (8 bytes, little-endian), the
        head, the arrays (:meth:`pack`); :meth:`decode` reads it back. What an offsets-log task
        hands Spark for the lag task of the data partition (:mod:`kgtool.spark.job`)."""
        text, arrays = self.pack()
        head = text.encode("utf-8")
        out = np.empty(8 + len(head) + sum(a.nbytes for a in arrays), np.uint8)
        out[:8] = np.frombuffer(len(head).to_bytes(8, "little"), np.uint8)
        out[8:8 + len(head)] = np.frombuffer(head, np.uint8)
        at = 8 + len(head)
        for a in arrays:
            out[at:at + a.nbytes] = np.frombuffer(np.ascontiguousarray(a).data, np.uint8)
            at += a.nbytes
        return out

    @classmethod
    def decode(cls, data: Any) -> LagInput:
        """The input :meth:`encode` gave (any buffer); ValueError when its lengths disagree."""
        blob = memoryview(data).cast("B")
        if len(blob) < 8:
            raise ValueError(f"lag input of {len(blob)} bytes: shorter than its 8-byte head length")
        n = int.from_bytes(blob[:8], "little")
        if n > len(blob) - 8:
            raise ValueError(f"lag input head of {n} bytes exceeds the {len(blob) - 8} bytes after its length")
        return cls.unpack(bytes(blob[8:8 + n]).decode("utf-8"), blob[8 + n:])

    @classmethod
    def unpack(cls, text: str, data: Any) -> LagInput:
        import json

        head = json.loads(text)
        kinds = cls._STEP_ARRAYS if head.get("form") == "steps16" else cls._ARRAYS
        sizes = [n * np.dtype(dt).itemsize for n, (_name, dt) in zip(head["lengths"], kinds)]
        if len(data) != sum(sizes) or len(sizes) != len(kinds):
            raise ValueError(f"lag input of {sum(sizes)} bytes of arrays holds {len(data)}")
        arrays, at = {}, 0
        for n, (name, dt), nbytes in zip(head["lengths"], kinds, sizes):
            a = np.frombuffer(data, dt, n, at)
            arrays[name] = a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))
            at += nbytes
        if kinds is cls._STEP_ARRAYS:
            bounds = arrays["group_bounds"]
            for name, escape in (("when", _ESCAPE[0]), ("offset", _ESCAPE[1])):
                steps = _unescape(arrays.pop(f"{name}_steps"), arrays.pop(f"{name}_big"), escape)
                arrays[name] = _undelta(bounds, arrays.pop(f"{name}_first"), steps)
        return cls(head["log_partition"], head["groups"], owners=head["owners"],
                   offset_rows={c: r for c, r in head["offset_rows"]}, owner_refs=head.get("owner_refs", []), **arrays)


#: The 16-bit step that says "the step is the next of the big ones" (instants, offsets).
_ESCAPE = (0xFFFF, -0x8000)


def _deltas(bounds: np.ndarray, when: np.ndarray, offset: np.ndarray, pure: bool = False
            ) -> list[np.ndarray] | None:
    """The commits of each group run (``bounds``) as its first instant and offset and the steps
    from each commit to the next, in 16 bits (instants by time: uint16 ms; offsets int16), each
    step that does not fit (a minute or more without a commit, a rewind, a deleted offset:
    DELETED's step, taken modulo 2^64 as it is given back) as :data:`_ESCAPE` there and its
    value in a list beside: [when_first, when_steps, when_big, offset_first, offset_steps,
    offset_big]. None without commits (the arrays then go as they are). ``_lag.h``'s lag_steps16
    unless ``pure`` (or without the compiled extension)."""
    n, groups = len(when), len(bounds) - 1
    if not n:
        return None
    if kernel is not None and not pure:  # one pass (_lag.h's lag_steps16)
        ws, os_ = np.empty(n, np.uint16), np.empty(n, np.int16)
        got = kernel.lag_steps16(np.ascontiguousarray(bounds, np.int64), np.ascontiguousarray(when, np.int64),
                                  np.ascontiguousarray(offset, np.int64), ws, os_)
        wf, wb, of, ob = (np.frombuffer(x, np.int64) for x in got)
        return [wf, ws, wb, of, os_, ob]
    live = np.flatnonzero(bounds[:-1] < bounds[1:])  # the groups with commits
    starts = bounds[live]  # their runs' first commits
    out = []
    for values, dt, escape in ((when, np.uint16, _ESCAPE[0]), (offset, np.int16, _ESCAPE[1])):
        first = np.zeros(groups, np.int64)
        first[live] = values[starts]
        steps = np.empty(n, np.int64)
        steps[0] = 0
        with np.errstate(over="ignore"):
            np.subtract(values[1:], values[:-1], out=steps[1:])  # modulo 2^64 (DELETED)
        steps[starts] = 0
        info = np.iinfo(dt)
        big = (steps < info.min) | (steps > info.max) | (steps == escape)
        small = np.where(big, escape, steps).astype(dt)
        out += [first, small, steps[big]]
    return out


def _unescape(small: np.ndarray, big: np.ndarray, escape: int) -> np.ndarray:
    """The steps :func:`_deltas` made ``small`` and ``big`` of, int64."""
    steps = small.astype(np.int64)
    at = np.flatnonzero(small == escape)
    if len(at) != len(big):
        raise ValueError(f"lag input of {len(at)} escaped steps holds {len(big)} values")
    steps[at] = big
    return steps


def _undelta(bounds: np.ndarray, first: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The values :func:`_deltas` made ``first`` and ``steps`` of."""
    sizes = np.diff(bounds)
    total = np.cumsum(steps, dtype=np.int64)
    live = sizes > 0
    starts = bounds[:-1][live]
    return total + np.repeat(first[live] - total[starts], sizes[live])


#: The members rows' columns :meth:`LagCollector.member_tuples` keeps, and where they are in a
#: row (``tables.MEMBER``: the group, record offset, timestamp, member_id, client_id, client_host,
#: assigned_partitions).
_MEMBER_KEYS = ("group", "rec", "ts", "owner", "member", "dp_size", "dp_flat")
_MEMBER_PLACES = tuple(MEMBER[n] for n in ("group", "record_offset", "timestamp", "member_id", "client_id",
                                           "client_host", "assigned_partitions"))


def _joined(chunks: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)


def _classic_entries(s_g: np.ndarray, s_rec: np.ndarray, s_ts: np.ndarray, a_rec: np.ndarray, a_owner: np.ndarray,
                     a_dp: np.ndarray) -> tuple[np.ndarray, ...]:
    """The changes of owner of classic groups' partitions (see :meth:`LagCollector.owner_changes`): records
    ``s_*`` (each a group's whole assignment), assignments ``a_*`` (a record's member holding a
    partition). Returns (lag index, group code, timestamp, owner or -1), by pair then time."""
    empty = np.zeros(0, np.int64)
    if not len(a_rec):
        return empty, empty, empty, empty
    order = np.lexsort((s_rec, s_g))  # a group's records in log order
    s_g, s_rec, s_ts = s_g[order], s_rec[order], s_ts[order]
    by_rec = np.argsort(s_rec)
    snap = by_rec[np.searchsorted(s_rec[by_rec], a_rec)]  # each assignment's record
    a_g = s_g[snap]
    group_end = np.searchsorted(s_g, s_g, "right")
    n_dp = int(a_dp.max()) + 1
    pairs, pair_of = distinct(a_g * n_dp + a_dp, inverse=True)
    start = np.full(len(pairs), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(start, pair_of, snap)  # a pair's first record: its line starts there
    end = group_end[start]
    cells = end - start
    cell_start = np.cumsum(cells) - cells
    cell_pair = np.repeat(np.arange(len(pairs)), cells)
    cell_snap = start[cell_pair] + np.arange(int(cells.sum())) - cell_start[cell_pair]
    owner = np.full(len(cell_pair), -1, np.int64)
    at = cell_start[pair_of] + snap - start[pair_of]
    # two members, one partition: the later (each cell's last assignment)
    last = np.full(len(owner), -1, np.int64)
    np.maximum.at(last, at, np.arange(len(at), dtype=np.int64))
    held = np.flatnonzero(last >= 0)
    owner[held] = a_owner[last[held]]
    t = s_ts[cell_snap]
    # one state per instant (the last record at it), then only the changes
    keep = np.r_[(cell_pair[1:] != cell_pair[:-1]) | (t[1:] != t[:-1]), True]
    cell_pair, t, owner = cell_pair[keep], t[keep], owner[keep]
    change = np.r_[True, (cell_pair[1:] != cell_pair[:-1]) | (owner[1:] != owner[:-1])]
    cell_pair, t, owner = cell_pair[change], t[change], owner[change]
    return pairs[cell_pair] % n_dp, pairs[cell_pair] // n_dp, t, owner


def _owner_timelines(o: _GroupOwners) -> dict[int, tuple[list[int], list[Any]]]:
    """Per data partition (lag index): ([timestamp at each change of owner], [(consumer_id,
    host, client_id), or None when nobody holds it, at each]), event by event."""
    lines: dict[tuple[str, int], list[list[Any]]] = {}
    current: dict[tuple[str, int], tuple] = {}
    held: dict[str, list[tuple[str, int]]] = {}  # member -> its partitions
    for _rec, ts, kind, payload in sorted(o.events, key=lambda e: (e[0], e[2] != "gen")):
        if kind == "gen":
            changed = dict.fromkeys(current)
            current.clear()
            held.clear()
        else:
            member, client, host, assigned = payload
            changed = {}
            for tp in held.get(member, []):
                if tp not in assigned and current.get(tp, (None,))[0] == member:
                    current.pop(tp)
                    changed[tp] = None
            held[member] = assigned
            owner = (member, host, client)
            for tp in assigned:
                if current.get(tp) != owner:
                    current[tp] = owner
                    changed[tp] = owner
        for tp, owner in changed.items():
            line = lines.get(tp)
            if line is None:
                lines[tp] = [[ts], [owner]]
            elif line[0][-1] == ts:
                line[1][-1] = owner
            elif line[1][-1] != owner:
                line[0].append(ts)
                line[1].append(owner)
    return {tp: (line[0], line[1]) for tp, line in lines.items()}
