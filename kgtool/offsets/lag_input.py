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

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgtool.offsets.lag import DELETED
from kgtool.offsets.tables import MEMBER


def _tp(text: str) -> tuple[str, int] | None:
    topic, _, part = text.rpartition("-")
    return (topic, int(part)) if topic and part.isdigit() else None


@dataclass
class _GroupOwners:
    protocol: str = "classic"
    #: (record_offset, timestamp, kind, payload): "gen" (classic generation: new owners follow) or
    #: "member" (member_id, client_id, host, assigned (topic, partition) list)
    events: list[tuple] = field(default_factory=list)


class LagInputs:
    """Collects one partition's lag inputs while its replay runs (``partitions``: the data
    partitions given, (topic, partition) -> the lag phase's index).

    Commits are kept as columns (a chunk of arrays per chunk of the commits table, nothing per
    commit in Python) and handed on as one :class:`LagInput` per data partition."""

    def __init__(self, partitions: dict[tuple[str, int], int], log_partition: int,
                 marker_times: dict[int, int] | None = None) -> None:
        self.partitions = partitions
        #: every transaction marker's timestamp by record offset (the task's pre-pass fills it
        #: before the replay: a transaction's offsets take effect at its marker)
        self.marker_times = marker_times if marker_times is not None else {}
        self._markers: tuple[int, np.ndarray, np.ndarray] | None = None
        self.topics = sorted({t for t, _p in partitions})
        width = max((p for _t, p in partitions), default=-1) + 1
        #: (topic's place in self.topics, partition) -> the lag phase's index, -1: not given
        self._index = np.full((len(self.topics), max(width, 1)), -1, np.int32)
        for (t, p), k in partitions.items():
            self._index[self.topics.index(t), p] = k
        self._groups: dict[str, int] = {}
        self._tp_cache: dict[str, tuple[str, int] | None] = {}
        #: per data partition index, its commits in pieces (group code, instant, offset (DELETED)), in log order
        self._pieces: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.owners: dict[str, _GroupOwners] = {}
        self.offsets: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.log_partition = log_partition
        self.missing = 0  # offsets rows whose data partition was not given

    def _lookup(self, column: Any, value_code: Any) -> np.ndarray:
        """``value_code(value)`` of each row of a string column (int64; -1 for null), computed
        once per distinct value: the replay's columns come dictionary-encoded."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        lut = np.array([value_code(v) for v in column.dictionary.to_pylist()] + [-1], np.int64)
        idx = column.indices
        codes = np.asarray(pc.fill_null(idx, len(lut) - 1).to_numpy(zero_copy_only=False), np.int64) \
            if idx.null_count else np.asarray(idx.to_numpy(zero_copy_only=False), np.int64)
        return lut[codes]

    def _group_code(self, group: str | None) -> int:
        return -1 if group is None else self._groups.setdefault(group, len(self._groups))

    def commits_table(self, table: Any) -> None:
        """A chunk of the commits table: its effective rows on the data partitions given."""
        if not len(table) or not self.topics:
            return
        import pyarrow.compute as pc

        topic = self._lookup(table.column("topic"), lambda t: self.topics.index(t) if t in self.topics else -1)
        part = np.asarray(pc.fill_null(table.column("partition"), -1).to_numpy(zero_copy_only=False), np.int64)
        inside = (topic >= 0) & (part >= 0) & (part < self._index.shape[1])
        index = np.where(inside, self._index[np.maximum(topic, 0), np.where(inside, part, 0)], -1)
        effective = np.asarray(pc.fill_null(table.column("effective"), False).to_numpy(zero_copy_only=False), np.bool_)
        mine = (index >= 0) & effective
        if not mine.any():
            return

        def ints(name: str, null: int) -> np.ndarray:
            col = table.column(name)
            return np.asarray(pc.fill_null(col, null).to_numpy(zero_copy_only=False), np.int64) \
                if col.null_count else np.asarray(col.to_numpy(zero_copy_only=False), np.int64)

        rec = ints("record_offset", -1)[mine]
        at = ints("effective_at_offset", -1)[mine]
        when = self._instants(ints("timestamp", 0)[mine], np.where(at == rec, -1, at))
        index, group, offset = index[mine], self._lookup(table.column("group"), self._group_code)[mine], \
            ints("offset", DELETED)[mine]
        # split by data partition here, a chunk at a time (cache-sized): one sort of the whole
        # partition's commits at the end cost more than the replay
        order = np.argsort(index.astype(np.uint16) if index.max() < 1 << 16 else index, kind="stable")
        index = index[order]
        cut = np.flatnonzero(index[1:] != index[:-1]) + 1
        for a, b in zip(np.r_[0, cut].tolist(), np.r_[cut, len(index)].tolist()):
            rows = order[a:b]
            self._pieces.setdefault(int(index[a]), []).append((group[rows], when[rows], offset[rows]))

    def _instants(self, ts: np.ndarray, marker: np.ndarray) -> np.ndarray:
        """When each commit took effect: its record's timestamp, or its transaction's marker's."""
        if not (marker >= 0).any() or not self.marker_times:
            return ts
        if self._markers is None or self._markers[0] != len(self.marker_times):
            mk = np.fromiter(self.marker_times, np.int64, len(self.marker_times))
            mt = np.fromiter(self.marker_times.values(), np.int64, len(self.marker_times))
            order = np.argsort(mk)
            self._markers = (len(self.marker_times), mk[order], mt[order])
        _n, mk, mt = self._markers
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

    def member_tuples(self, rows: list[tuple]) -> None:
        """Members-table rows as the replay makes them (tuples, ``MEMBER``)."""
        g, rec, ts, mid, cid, host, parts = (MEMBER[n] for n in (
            "group", "record_offset", "timestamp", "member_id", "client_id", "client_host", "assigned_partitions"))
        given = self._given
        for r in rows:
            names = r[parts]
            assigned = [tp for tp in map(given, names) if tp is not None] if names else []
            o = self.owners.get(r[g])
            if o is None:
                o = self.owners[r[g]] = _GroupOwners()
            o.events.append((r[rec], r[ts], "member", (r[mid], r[cid], r[host], assigned)))

    def _given(self, text: str) -> tuple[str, int] | None:
        """A ``topic-partition`` string as (topic, partition) when that partition was given."""
        try:
            return self._tp_cache[text]
        except KeyError:
            tp = _tp(text)
            got = self._tp_cache[text] = tp if tp in self.partitions else None
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
        timelines = {g: _owner_timelines(o) for g, o in self.owners.items()}
        tp_of = {k: tp for tp, k in self.partitions.items()}
        for k in sorted(set(self._pieces) | set(rows_of)):
            group, when, offset = _by_group(self._pieces.pop(k, []))
            first = np.r_[True, group[1:] != group[:-1]] if len(group) else np.zeros(0, np.bool_)
            runs = group[first]  # the groups with commits, ascending
            codes = sorted(set(runs.tolist()) | {c for c, _r in rows_of.get(k, [])})
            local = {c: i for i, c in enumerate(codes)}
            times: list[int] = []
            held: list[Any] = []
            obounds = [0]
            for c in codes:
                line = timelines.get(names[c], {}).get(tp_of[k])
                if line is not None:
                    times.extend(line[0])
                    held.extend(line[1])
                obounds.append(len(times))
            table = dict.fromkeys(held)  # the owners, in order of appearance (None: nobody)
            table.pop(None, None)
            for n, owner in enumerate(table):
                table[owner] = n
            table[None] = -1
            ids = list(map(table.__getitem__, held))
            del table[None]
            yield k, LagInput(
                log_partition=self.log_partition,
                groups=[names[c] for c in codes],
                group=np.searchsorted(np.array(codes, np.int64), runs).astype(np.int32)[np.cumsum(first) - 1],
                when=when, offset=offset,
                owners=[list(o) for o in table], owner_bounds=np.array(obounds, np.int64),
                owner_times=np.array(times, np.int64), owner_ids=np.array(ids, np.int32),
                offset_rows={local[c]: row for c, row in rows_of.get(k, [])})


def _by_group(pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
    """A data partition's commits (pieces in log order) by group, then time, log order among
    equal instants: a stable sort by group keeps log order, in which the instants rise but for
    transactions whose marker came later; only then does a sort by time follow."""
    if not pieces:
        return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    group, when, offset = (np.concatenate(c) for c in zip(*pieces))
    # numpy sorts 16-bit keys stably by radix (O(n), ten times faster than a merge sort)
    order = np.argsort(group.astype(np.uint16) if group.max() < 1 << 16 else group, kind="stable")
    g, w = group[order], when[order]
    if len(g) > 1 and ((w[1:] < w[:-1]) & (g[1:] == g[:-1])).any():
        order = np.lexsort((when, group))
        g, w = group[order], when[order]
    return g, w, offset[order]


@dataclass
class LagInput:
    """One offsets partition's inputs to one data partition's lag task: its groups (local codes),
    each commit that took effect on the partition (``group``, ``when``, ``offset``: DELETED for a
    deleted offset; sorted by group, then time, log order among equals), each group's owners over
    time (group ``c``'s changes are ``owner_bounds[c]:owner_bounds[c+1]`` of ``owner_times`` and
    ``owner_ids``, an index into ``owners`` ([consumer_id, host, client_id]) or -1 when nobody held
    it) and its offsets table row. Sent as :meth:`pack`: a little JSON beside compressed arrays,
    in a file of the lag phase's exchange directory (:meth:`write`)."""

    log_partition: int
    groups: list[str]
    group: np.ndarray
    when: np.ndarray
    offset: np.ndarray
    owners: list[list[Any]]
    owner_bounds: np.ndarray
    owner_times: np.ndarray
    owner_ids: np.ndarray
    offset_rows: dict[int, dict[str, Any]]

    #: the arrays of :meth:`pack`, in order, with their types
    _ARRAYS = (("group", "<i4"), ("when", "<i8"), ("offset", "<i8"), ("owner_bounds", "<i8"), ("owner_times", "<i8"),
               ("owner_ids", "<i4"))

    def pack(self) -> tuple[str, bytes]:
        import json

        import pyarrow as pa

        arrays = [np.ascontiguousarray(getattr(self, name), dt) for name, dt in self._ARRAYS]
        head = {"log_partition": self.log_partition, "groups": self.groups, "owners": self.owners,
                "offset_rows": [[c, r] for c, r in sorted(self.offset_rows.items())],
                "lengths": [len(a) for a in arrays]}
        raw = b"".join(a.tobytes() for a in arrays)
        return json.dumps(head, separators=(",", ":")), \
            len(raw).to_bytes(8, "little") + pa.compress(raw, "lz4", asbytes=True)

    def write(self, root: str, index: int) -> None:
        """Into ``root/<index>/<log partition>.lag`` (JSON length, JSON, arrays), atomically: a
        retried task rewrites the same file."""
        import os

        text, data = self.pack()
        head = text.encode("utf-8")
        directory = os.path.join(root, str(index))
        os.makedirs(directory, exist_ok=True)
        final = os.path.join(directory, f"{self.log_partition}.lag")
        tmp = f"{final}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(len(head).to_bytes(8, "little") + head + data)
        os.replace(tmp, final)

    @classmethod
    def read_all(cls, root: str, index: int) -> list[LagInput]:
        """Every offsets partition's input to data partition ``index`` (:meth:`write`)."""
        import os

        directory = os.path.join(root, str(index))
        if not os.path.isdir(directory):
            return []
        out = []
        for name in sorted(n for n in os.listdir(directory) if n.endswith(".lag")):
            with open(os.path.join(directory, name), "rb") as fh:
                blob = fh.read()
            n = int.from_bytes(blob[:8], "little")
            out.append(cls.unpack(blob[8:8 + n].decode("utf-8"), blob[8 + n:]))
        return out

    @classmethod
    def unpack(cls, text: str, data: bytes) -> LagInput:
        import json

        import pyarrow as pa

        head = json.loads(text)
        sizes = [n * np.dtype(dt).itemsize for n, (_name, dt) in zip(head["lengths"], cls._ARRAYS)]
        size = int.from_bytes(data[:8], "little")
        if size != sum(sizes):
            raise ValueError(f"lag input of {sum(sizes)} bytes of arrays holds {size}")
        raw = pa.decompress(data[8:], size, "lz4", asbytes=True)
        arrays, at = {}, 0
        for n, (name, dt), nbytes in zip(head["lengths"], cls._ARRAYS, sizes):
            arrays[name] = np.frombuffer(raw, dt, n, at).astype(np.dtype(dt).newbyteorder("="))
            at += nbytes
        return cls(head["log_partition"], head["groups"], owners=head["owners"],
                   offset_rows={c: r for c, r in head["offset_rows"]}, **arrays)


def _owner_timelines(o: _GroupOwners) -> dict[tuple[str, int], tuple[list[int], list[Any]]]:
    """Per (topic, partition): ([timestamp at each change of owner], [(consumer_id, host,
    client_id), or None when nobody holds it, at each])."""
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
