"""Test helper: LogEntry lists -> columnar chunks (the decoder's CommitChunk shape), so the
partition replay's columnar path can be checked against the oracle on any scripted log,
independently of the compiled decoder. Offset commits with a plain key and value become rows;
everything else stays a rare entry at its place."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from kgtool.offsets.entries import OFFSET_COMMIT_KINDS
from kgtool.offsets.store import NULL


class ToyKeys:
    def __init__(self) -> None:
        self.groups: list[str] = []
        self.topics: list[str] = []
        self._g: dict[str, int] = {}
        self._t: dict[str, int] = {}
        self._k: dict[tuple, int] = {}
        self.rows: list[tuple[int, int, int]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def code(self, group: str, topic: str, partition: int) -> int:
        k = self._k.get((group, topic, partition))
        if k is None:
            g = self._g.setdefault(group, len(self.groups))
            if g == len(self.groups):
                self.groups.append(group)
            t = self._t.setdefault(topic, len(self.topics))
            if t == len(self.topics):
                self.topics.append(topic)
            k = self._k[(group, topic, partition)] = len(self.rows)
            self.rows.append((g, t, partition))
        return k

    def key_group(self):
        return np.array([r[0] for r in self.rows], np.int32)

    def key_topic(self):
        return np.array([r[1] for r in self.rows], np.int32)

    def key_partition(self):
        return np.array([r[2] for r in self.rows], np.int32)


def _plain(e) -> bool:
    if e.kind not in OFFSET_COMMIT_KINDS or not isinstance(e.key, dict) or set(e.key) != {"group", "topic", "partition"}:
        return False
    v = e.value
    return v is None or (isinstance(v, dict) and v.get("offset") is not None and v.get("commit_timestamp") is not None)


def _code(values: list, v) -> int:
    if v not in values:
        values.append(v)
    return values.index(v)


def to_chunks(entries, keys: ToyKeys, max_rows: int = 7):
    """Chunks of at most ``max_rows`` commit rows (cut anywhere between records of distinct batches)."""
    chunks, cur = [], None

    def new():
        return SimpleNamespace(source=None, rows=[], rare=[], meta=[], tids=[])

    cur = new()
    last_pos = None
    for e in entries:
        if len(cur.rows) >= max_rows and e.position != last_pos:
            chunks.append(cur)
            cur = new()
        last_pos = e.position
        cur.source = cur.source or e.source
        if _plain(e):
            v = e.value
            meta = None if v is None else v.get("metadata", "")
            if meta is not None and meta not in cur.meta:
                cur.meta.append(meta)
            cur.rows.append((
                e.offset, e.position, e.timestamp, e.producer_id, e.producer_epoch, e.is_transactional,
                keys.code(e.key["group"], e.key["topic"], e.key["partition"]),
                -1 if v is None else e.value_version, 0 if v is None else v["offset"],
                -1 if v is None or v.get("leader_epoch") is None else v["leader_epoch"],
                -1 if meta is None else cur.meta.index(meta),
                0 if v is None else v["commit_timestamp"],
                NULL if v is None or v.get("expire_timestamp") is None else v["expire_timestamp"],
                -1 if v is None or v.get("topic_id") is None else _code(cur.tids, v["topic_id"]),
            ))
        else:
            cur.rare.append((len(cur.rows), e))
    chunks.append(cur)
    out = []
    names = ("record_offset", "position", "timestamp", "producer_id", "producer_epoch", "transactional", "key",
             "version", "offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp", "topic_id")
    for c in chunks:
        cols = list(zip(*c.rows)) if c.rows else [()] * len(names)
        ns = SimpleNamespace(source=c.source or "<none>", n=len(c.rows), rare=c.rare, metadata_values=c.meta,
                             topic_id_values=c.tids, batches=0)
        for name, values in zip(names, cols):
            setattr(ns, name, np.array(values, np.bool_ if name == "transactional" else np.int64))
        out.append(ns)
    return out
