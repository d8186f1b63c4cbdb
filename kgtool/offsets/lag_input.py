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

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgtool.offsets.lag import Effective, Owner
from kgtool.offsets.tables import member_dicts


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
    partitions given, (topic, partition) -> the lag phase's index)."""

    def __init__(self, partitions: dict[tuple[str, int], int], log_partition: int) -> None:
        self.partitions = partitions
        self.topics = {t for t, _p in partitions}
        #: (group, topic, partition) -> [timestamp, offset (-1: deleted), record offset, marker offset (-1: none)]
        self.commits: dict[tuple[str, str, int], array] = {}
        self.owners: dict[str, _GroupOwners] = {}
        self.offsets: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.log_partition = log_partition
        self.missing = 0  # offsets rows whose data partition was not given

    def commits_table(self, table: Any) -> None:
        """A chunk of the commits table: its effective rows on the data partitions given."""
        if not len(table):
            return
        import pyarrow as pa
        import pyarrow.compute as pc

        keep = pc.and_(pc.is_in(table.column("topic"), value_set=pa.array(sorted(self.topics), pa.string())),
                       table.column("effective"))
        idx = np.flatnonzero(np.asarray(keep.to_numpy(zero_copy_only=False), np.bool_))
        if not len(idx):
            return
        sub = table.take(idx)
        groups = sub.column("group").to_pylist()
        topics = sub.column("topic").to_pylist()
        parts = sub.column("partition").to_pylist()
        ts = sub.column("timestamp").to_pylist()
        offsets = sub.column("offset").to_pylist()
        records = sub.column("record_offset").to_pylist()
        at = sub.column("effective_at_offset").to_pylist()
        for g, t, p, ts_, off, rec, eff in zip(groups, topics, parts, ts, offsets, records, at):
            if (t, p) not in self.partitions:
                continue
            buf = self.commits.setdefault((g, t, p), array("q"))
            buf.extend((ts_, -1 if off is None else off, rec, -1 if eff is None or eff == rec else eff))

    def history_rows(self, name: str, rows: list[Any]) -> None:
        """Rows of the generations table (dicts) or the members table (tuples, ``MEMBER``)."""
        if name == "generations":
            self.generations(rows)
        else:
            self.members(member_dicts(rows))

    def generations(self, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            o = self.owners.setdefault(r["group"], _GroupOwners())
            o.protocol = r.get("protocol") or o.protocol
            if o.protocol == "classic":
                o.events.append((r["record_offset"], r["timestamp"], "gen", None))

    def members(self, rows: list[dict[str, Any]]) -> None:
        for r in rows:
            assigned = [tp for tp in map(_tp, r.get("assigned_partitions") or ()) if tp in self.partitions]
            o = self.owners.setdefault(r["group"], _GroupOwners())
            o.events.append((r["record_offset"], r["timestamp"], "member",
                             (r["member_id"], r.get("client_id"), r.get("client_host"), assigned)))

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

    def payloads(self, marker_times: dict[int, int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(lag task index, payload) per (group, topic, partition) with a commit or an offset."""
        owners = {g: _owner_timelines(o) for g, o in self.owners.items()}
        for key in sorted(set(self.commits) | set(self.offsets)):
            g, t, p = key
            buf = self.commits.get(key, array("q"))
            eff = []
            for k in range(0, len(buf), 4):
                ts, off, _rec, marker = buf[k:k + 4]
                when = marker_times.get(marker, ts) if marker >= 0 else ts
                eff.append([when, None if off < 0 else off])
            eff.sort(key=lambda e: e[0])
            yield self.partitions[(t, p)], {
                "group": g, "topic": t, "partition": p, "log_partition": self.log_partition,
                "effective": eff, "owners": owners.get(g, {}).get((t, p), []), "offset_row": self.offsets.get(key),
            }


def _owner_timelines(o: _GroupOwners) -> dict[tuple[str, int], list[list[Any]]]:
    """Per (topic, partition): [[timestamp, consumer_id, host, client_id] or [timestamp, None, None, None]]
    at each change of owner."""
    out: dict[tuple[str, int], list[list[Any]]] = {}
    current: dict[tuple[str, int], tuple] = {}
    held: dict[str, list[tuple[str, int]]] = {}  # member -> its partitions
    for rec, ts, kind, payload in sorted(o.events, key=lambda e: (e[0], e[2] != "gen")):
        if kind == "gen":
            changed = {tp: None for tp in current}
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
            for tp in assigned:
                owner = (member, host, client)
                if current.get(tp) != owner:
                    current[tp] = owner
                    changed[tp] = owner
        for tp, owner in changed.items():
            line = out.setdefault(tp, [])
            entry = [ts, *(owner if owner is not None else (None, None, None))]
            if line and line[-1][0] == ts:
                line[-1] = entry
            elif not line or line[-1][1:] != entry[1:]:
                line.append(entry)
    return out


def effective_of(payload: dict[str, Any]) -> list[Effective]:
    return [Effective(int(ts), None if off is None else int(off)) for ts, off in payload["effective"]]


def owners_of(payload: dict[str, Any]) -> list[tuple[int, Owner | None]]:
    return [(int(ts), None if member is None else Owner(member, host, client))
            for ts, member, host, client in payload["owners"]]
