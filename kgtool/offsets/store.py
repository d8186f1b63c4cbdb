"""The offset store of one ``__consumer_offsets`` partition: ``OffsetMetadataManager``'s replay.

Kafka's coordinator keeps, per group, the committed offset of each topic partition and, per
producer, the pending transactional offsets (``OffsetMetadataManager.offsets`` and
``pendingTransactionalOffsets``). This module keeps the same state for every group of one log
partition at once, as arrays indexed by a *key*: one (group, topic, partition), i.e. one
``OffsetCommitKey``. The state grows with the number of keys, never with the number of records.

Replay (``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker``):

- a plain offset commit is stored at once (it is the partition's offset from its own record on);
- a transactional one (written with a producer id) goes to that producer's pending offsets;
- a tombstone removes the stored offset *and* the pending transactional offsets of its key;
- a COMMIT marker moves the producer's pending offsets into the store, but only where the
  pending record offset is greater than the stored one's (or nothing is stored); any other
  marker (ABORT) drops them.

The hot path, one call per plain commit, is :func:`replay_commits` (compiled in
``kgtool.offsets._replay`` when the extension is built, the pure-Python loop below otherwise:
same state, same outputs; ``KGTOOL_PURE_PYTHON=1`` forces Python). It also evaluates the rules
that compare a commit with the partition's past (:mod:`kgtool.offsets.rules`): what it finds
leaves as *events* (a small int64 matrix) that Python turns into findings. Transactional
commits and tombstones of keys with pending offsets are handed to Python as events too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kgtool import native

NULL = np.iinfo(np.int64).min  # "no value" in the int64 state and output arrays

# ---- per-key state: the columns of the int64 matrix ``Store.k`` (one row per key) -------------
K_FIELDS = (
    "gid",  # the key's group
    "owners",  # code of the sorted owner list of the key's partition in the group's generation; -1 unknown
    "orphan",  # what a commit written now means for the orphan rule: 0 nothing, 1 orphan, 2 owner revoking
    "moved",  # record offset of the generation that last moved the partition to other owners; NULL never
    "st_has",  # the store holds an offset for the key
    "st_offset",  # ... the committed offset
    "st_record",  # ... the record offset of the commit that stored it
    "st_position",  # ... its batch position
    "st_source",  # ... its source (code)
    "st_timestamp",  # ... its record timestamp
    "st_generation",  # ... the generation id it was written in (NULL none)
    "st_commit_ts",  # ... commit timestamp
    "st_expire_ts",  # ... expire timestamp (NULL unless OffsetCommitValue v1)
    "max_epoch",  # highest leader epoch (>= 0) of effective commits since the last tombstone; -1 none
    "top_has",  # the highest commit since the last move (zombie rule) ...
    "top_offset",
    "top_generation",
    "top_record",
    "top_position",
    "top_source",
    "last_removal",  # record offset of the key's last tombstone; NULL none
    "pending",  # 1: transactional offsets may be pending for the key (Python knows which)
    "txn_record",  # highest record offset of a transactional commit of the key; NULL none
    "st_leader_epoch",  # the stored commit's leader epoch (-1 none)
    "st_metadata_chunk",  # serial of the chunk whose metadata dictionary st_metadata indexes; -1: Store.metadata
    "st_metadata",  # the stored commit's metadata: a code (see st_metadata_chunk); -1 none
)
K = {name: i for i, name in enumerate(K_FIELDS)}
K_INIT = np.array(
    [0, -1, 0, NULL, 0, 0, 0, 0, 0, 0, NULL, 0, NULL, -1, 0, 0, NULL, 0, 0, 0, NULL, 0, NULL, -1, -1, -1],
    dtype=np.int64
)

# ---- per-group state: the columns of ``Store.g`` -----------------------------------------------
G_FIELDS = (
    "generation",  # generation id (classic) or group epoch (KIP-848) in effect; NULL none
    "protocol",  # 0 none, 1 classic, 2 consumer
    "state",  # 0 Empty, 1 Stable
    "token",  # record offset of the generation record in effect; -1 none
    "count",  # commit records written while the generation is in effect
    "exists",  # the group exists in the coordinator (created by metadata or an offset commit)
    "records",  # offset commit records of the group replayed so far
)
G = {name: i for i, name in enumerate(G_FIELDS)}
G_INIT = np.array([NULL, 0, 0, -1, 0, 0, 0], dtype=np.int64)
PROTOCOLS = (None, "classic", "consumer")
STATES = ("Empty", "Stable")

# ---- per-commit outputs (the commits table's replay columns) ---------------------------------
NOTES = (None, "reset while Empty", "owner revoking (cooperative)", "committed, superseded by a later commit record")
NOTE_RESET, NOTE_REVOKING, NOTE_SUPERSEDED = 1, 2, 3

# ---- events: rows of the int64 matrix returned by replay_commits -------------------------------
# kind, commit row, key, then values: EV_EPOCH the leader epoch, the highest earlier epoch and
# the stored commit; EV_REWIND the stored commit, EV_ZOMBIE the highest commit since the move
# (each commit as offset, record offset, position, source, generation; NULL when none).
EV_ORPHAN, EV_EPOCH, EV_REWIND, EV_ZOMBIE, EV_TXN, EV_TOMBSTONE = 1, 2, 3, 4, 5, 6
EV_WIDTH = 12


@dataclass
class CommitColumns:
    """The input of :func:`replay_commits`: plain offset commits in log order (NumPy arrays)."""

    key: np.ndarray  # int64 key index
    record_offset: np.ndarray  # int64
    position: np.ndarray  # int64
    timestamp: np.ndarray  # int64
    producer_id: np.ndarray  # int64
    version: np.ndarray  # int64: OffsetCommitValue version, -1 tombstone
    offset: np.ndarray  # int64
    leader_epoch: np.ndarray  # int64 (-1 none)
    commit_timestamp: np.ndarray  # int64
    expire_timestamp: np.ndarray  # int64 (NULL unless version 1)
    source: int  # source code (one file per chunk)
    metadata: np.ndarray  # int32 code into the chunk's metadata dictionary (-1 none)
    serial: int  # the chunk's serial number (Store.settle_metadata): >= 0

    def __len__(self) -> int:
        return len(self.key)


@dataclass
class CommitOutputs:
    """The replay columns of each commit (parallel to a :class:`CommitColumns`)."""

    generation: np.ndarray  # int64, NULL none
    protocol: np.ndarray  # int8 code into PROTOCOLS
    state: np.ndarray  # int8 code into STATES
    owners: np.ndarray  # int64 owner-list code, -1 null
    effective: np.ndarray  # bool
    effective_at: np.ndarray  # int64, NULL none
    note: np.ndarray  # int8 code into NOTES
    txn_result: np.ndarray  # int8 code into Store.txn_results (0: null)
    txn_marker: np.ndarray  # int64, NULL none
    token: np.ndarray  # int64: record offset of the generation the commit was written in (-1 none)

    @classmethod
    def empty(cls, n: int) -> CommitOutputs:
        return cls(
            generation=np.full(n, NULL, np.int64), protocol=np.zeros(n, np.int8), state=np.zeros(n, np.int8),
            owners=np.full(n, -1, np.int64), effective=np.zeros(n, np.bool_), effective_at=np.full(n, NULL, np.int64),
            note=np.zeros(n, np.int8), txn_result=np.zeros(n, np.int8), txn_marker=np.full(n, NULL, np.int64),
            token=np.full(n, -1, np.int64),
        )


def _use_c() -> bool:
    """Whether the compiled commit loop is in use (:func:`kgtool.native.load` decides)."""
    _replay = native.load("kgtool.offsets._replay")
    if _replay is None:
        return False
    # The C loop indexes the state matrices by these layouts: they must be this module's.
    if _replay.K_FIELDS.split() != list(K_FIELDS) or _replay.G_FIELDS.split() != list(G_FIELDS) \
            or _replay.EV_WIDTH != EV_WIDTH:
        raise ImportError("kgtool.offsets._replay was built from another version of store.py: rebuild it")
    return True


class Store:
    """Offsets and pending transactional offsets of every group of one log partition, plus the
    per-group generation snapshot that commits are attributed to (written by
    :mod:`kgtool.offsets.groups`)."""

    def __init__(self, pure: bool | None = None) -> None:
        self.k = np.empty((0, len(K_FIELDS)), np.int64)
        self.g = np.empty((0, len(G_FIELDS)), np.int64)
        self.n_keys = 0
        self.n_groups = 0
        self.use_c = _use_c() if pure is None else not pure
        if self.use_c:
            from kgtool.offsets import _replay

            self._replay = _replay
        self.txn_results: list[str | None] = [None, "PENDING"]  # code 0: null
        self._txn_codes: dict[str | None, int] = {None: 0, "PENDING": 1}
        # The stored commits' metadata strings (st_metadata with st_metadata_chunk -1): interned,
        # and rebuilt from the live codes when it outgrows the keys (memory grows with keys).
        self.metadata: list[str] = []
        self._metadata_codes: dict[str, int] = {}

    # ---- growth ------------------------------------------------------------------------
    def add_key(self, gid: int) -> int:
        self.k = _room(self.k, self.n_keys, 64)
        k = self.n_keys
        self.k[k] = K_INIT
        self.k[k, K["gid"]] = gid
        self.n_keys += 1
        return k

    def add_group(self) -> int:
        self.g = _room(self.g, self.n_groups, 16)
        gid = self.n_groups
        self.g[gid] = G_INIT
        self.n_groups += 1
        return gid

    def txn_code(self, marker_type: str | None) -> int:
        code = self._txn_codes.get(marker_type)
        if code is None:
            code = self._txn_codes[marker_type] = len(self.txn_results)
            self.txn_results.append(marker_type)
        return code

    # ---- the hot path ------------------------------------------------------------------
    def replay_commits(self, cols: CommitColumns, out: CommitOutputs, lo: int, hi: int) -> np.ndarray:
        """Replay commits ``lo..hi-1`` of ``cols`` into the state, filling ``out``; returns the
        events (one int64 row each, see EV_WIDTH) in order."""
        if hi <= lo:
            return np.empty((0, EV_WIDTH), np.int64)
        if self.use_c:
            events = np.empty((2 * (hi - lo) + 16, EV_WIDTH), np.int64)  # at most 2 per commit
            n = self._replay.replay_commits(
                lo, hi, cols.source, cols.serial, self.k, self.g,
                cols.key, cols.record_offset, cols.position, cols.timestamp, cols.producer_id, cols.version,
                cols.offset, cols.leader_epoch, cols.commit_timestamp, cols.expire_timestamp, cols.metadata,
                out.generation, out.protocol, out.state, out.owners, out.effective, out.effective_at, out.note,
                out.txn_result, out.txn_marker, out.token, events,
            )
            return events[:n]
        return _replay_commits_py(self, cols, out, lo, hi)

    def apply(self, k: int, at_offset: int, offset: int, leader_epoch: int, record: int, position: int,
              source: int, timestamp: int, generation: int, commit_ts: int, expire_ts: int, token: int,
              state: int, out: CommitOutputs, row: int, events: list, metadata: str | None = None) -> None:
        """Make a commit the key's offset (``OffsetMetadataManager``: stored) and check the rules
        that compare it with the past: the twin of ``apply`` in ``_replay.c``."""
        _apply_py(self.k[k], k, at_offset, offset, leader_epoch, record, position, source, timestamp,
                  generation, commit_ts, expire_ts, token, state, out, row, events,
                  -1, -1 if metadata is None else self.metadata_code(metadata))

    # ---- metadata of the stored commits ------------------------------------------------
    def metadata_code(self, text: str) -> int:
        """``text`` interned in :attr:`metadata` (a code for st_metadata with st_metadata_chunk -1)."""
        if text not in self._metadata_codes:
            self._make_room(1)
        return self._intern(text)

    def _intern(self, text: str) -> int:
        code = self._metadata_codes.get(text)
        if code is None:
            code = self._metadata_codes[text] = len(self.metadata)
            self.metadata.append(text)
        return code

    def _make_room(self, n: int) -> None:
        """Compact :attr:`metadata` first if ``n`` more strings would take it past twice the
        keys (before interning: a compaction drops codes that no key holds yet)."""
        if len(self.metadata) + n > max(1024, 2 * self.n_keys):
            self._compact_metadata()

    def _compact_metadata(self) -> None:
        """Keep only the strings that stored commits still use (amortized: at most one rebuild
        per doubling), so that distinct metadata on every commit costs memory per key only."""
        kk = self.k[: self.n_keys]
        live = np.flatnonzero((kk[:, K["st_has"]] != 0) & (kk[:, K["st_metadata_chunk"]] == -1)
                              & (kk[:, K["st_metadata"]] >= 0))
        codes = kk[live, K["st_metadata"]]
        used, inverse = np.unique(codes, return_inverse=True)
        self.metadata = [self.metadata[c] for c in used.tolist()]
        self._metadata_codes = {t: i for i, t in enumerate(self.metadata)}
        self.k[live, K["st_metadata"]] = inverse

    def settle_metadata(self, serial: int, dictionary: list[str], keys: np.ndarray | None = None) -> None:
        """Once per chunk, after its replay: the keys whose stored commit came from chunk
        ``serial`` take their metadata string from the chunk's ``dictionary`` into
        :attr:`metadata` (the chunk's codes mean nothing after it). ``keys``: only those keys
        can hold the chunk's commits (one-row chunks); None: all."""
        kk = self.k[: self.n_keys]
        if keys is None:
            sel = np.flatnonzero(kk[:, K["st_metadata_chunk"]] == serial)
        else:
            sel = keys[kk[keys, K["st_metadata_chunk"]] == serial]
        if not len(sel):
            return
        local, inverse = np.unique(kk[sel, K["st_metadata"]], return_inverse=True)
        self._make_room(len(local))
        codes = np.array([self._intern(dictionary[c]) if c >= 0 else -1 for c in local.tolist()], np.int64)
        self.k[sel, K["st_metadata"]] = codes[inverse]
        self.k[sel, K["st_metadata_chunk"]] = -1

    # ---- reading -----------------------------------------------------------------------
    def stored(self, k: int) -> tuple | None:
        """The stored commit of key ``k``: (offset, record, position, source, timestamp, generation,
        commit_ts, expire_ts), or None."""
        r = self.k[k]
        if not r[K["st_has"]]:
            return None
        return tuple(int(r[K[f]]) for f in ("st_offset", "st_record", "st_position", "st_source", "st_timestamp",
                                                 "st_generation", "st_commit_ts", "st_expire_ts"))


def _room(matrix: np.ndarray, used: int, least: int) -> np.ndarray:
    """``matrix`` with room for one more row (capacity doubled when full)."""
    if used < len(matrix):
        return matrix
    grown = np.empty((max(least, 2 * len(matrix)), matrix.shape[1]), np.int64)
    grown[:used] = matrix[:used]
    return grown


def _previous(row: Any, prefix: str) -> list[int]:
    """offset, record, position, source, generation of the stored (``st``) or top commit."""
    if not row[K[prefix + "_has"]]:
        return [NULL, NULL, NULL, NULL, NULL]
    return [int(row[K[prefix + "_offset"]]), int(row[K[prefix + "_record"]]), int(row[K[prefix + "_position"]]),
            int(row[K[prefix + "_source"]]), int(row[K[prefix + "_generation"]])]


def _event(kind: int, row: int, key: int, values: list[int]) -> list[int]:
    ev = [kind, row, key] + values
    return ev + [0] * (EV_WIDTH - len(ev))


def _apply_py(r: Any, k: int, at_offset: int, offset: int, leader_epoch: int, record: int, position: int,
              source: int, timestamp: int, generation: int, commit_ts: int, expire_ts: int, token: int,
              state: int, out: CommitOutputs, row: int, events: list, metadata_chunk: int,
              metadata: int) -> None:
    out.effective[row] = True
    out.effective_at[row] = at_offset
    # epoch-regression (rules.py): a leader epoch below an earlier effective commit's
    if leader_epoch >= 0:
        best = int(r[K["max_epoch"]])
        if best >= 0 and leader_epoch < best:
            events.append(_event(EV_EPOCH, row, k, [leader_epoch, best] + _previous(r, "st")))
        if best < 0 or leader_epoch > best:
            r[K["max_epoch"]] = leader_epoch
    # rewind / zombie: below the previous effective offset
    if r[K["st_has"]] and offset < r[K["st_offset"]]:
        if state == 0:
            out.note[row] = NOTE_RESET  # a reset while Empty (kafka-consumer-groups --reset-offsets)
        elif r[K["moved"]] != NULL and r[K["top_has"]] and r[K["top_offset"]] > offset:
            events.append(_event(EV_ZOMBIE, row, k, _previous(r, "top")))
        else:
            events.append(_event(EV_REWIND, row, k, _previous(r, "st")))
    r[K["st_has"]] = 1
    r[K["st_offset"]] = offset
    r[K["st_record"]] = record
    r[K["st_position"]] = position
    r[K["st_source"]] = source
    r[K["st_timestamp"]] = timestamp
    r[K["st_generation"]] = generation
    r[K["st_commit_ts"]] = commit_ts
    r[K["st_expire_ts"]] = expire_ts
    r[K["st_leader_epoch"]] = leader_epoch
    r[K["st_metadata_chunk"]] = metadata_chunk
    r[K["st_metadata"]] = metadata
    moved = r[K["moved"]]
    if moved != NULL and token >= 0 and token >= moved:
        if not r[K["top_has"]] or offset > r[K["top_offset"]]:
            r[K["top_has"]] = 1
            r[K["top_offset"]] = offset
            r[K["top_generation"]] = generation
            r[K["top_record"]] = record
            r[K["top_position"]] = position
            r[K["top_source"]] = source


def _replay_commits_py(store: Store, cols: CommitColumns, out: CommitOutputs, lo: int, hi: int) -> np.ndarray:
    """The pure-Python twin of ``_replay.replay_commits`` (OffsetMetadataManager.replay)."""
    kk, gg = store.k, store.g
    events: list[list[int]] = []
    src = cols.source
    for j in range(lo, hi):
        k = int(cols.key[j])
        r = kk[k]
        g = gg[r[K["gid"]]]
        generation = int(g[G["generation"]])
        state = int(g[G["state"]])
        token = int(g[G["token"]])
        out.generation[j] = generation
        out.protocol[j] = g[G["protocol"]]
        out.state[j] = state
        out.owners[j] = r[K["owners"]]
        out.token[j] = token
        g[G["records"]] += 1
        if g[G["protocol"]]:
            g[G["count"]] += 1
        record = int(cols.record_offset[j])
        if cols.version[j] < 0:
            # OffsetMetadataManager.replay, tombstone: the offset and the key's pending
            # transactional offsets are removed.
            r[K["st_has"]] = 0
            r[K["max_epoch"]] = -1
            r[K["top_has"]] = 0
            r[K["last_removal"]] = record
            if r[K["pending"]]:
                events.append(_event(EV_TOMBSTONE, j, k, []))
            continue
        g[G["exists"]] = 1
        if cols.producer_id[j] != -1:
            # Transactional: pending until its producer's marker (Python: Replay.txn_commit).
            r[K["pending"]] = 1
            record_txn = r[K["txn_record"]]
            if record_txn == NULL or record > record_txn:
                r[K["txn_record"]] = record
            events.append(_event(EV_TXN, j, k, []))
            continue
        orphan = r[K["orphan"]]
        if orphan == 1:
            events.append(_event(EV_ORPHAN, j, k, []))
        elif orphan == 2:
            out.note[j] = NOTE_REVOKING
        _apply_py(r, k, record, int(cols.offset[j]), int(cols.leader_epoch[j]), record, int(cols.position[j]), src,
                  int(cols.timestamp[j]), generation, int(cols.commit_timestamp[j]), int(cols.expire_timestamp[j]),
                  token, state, out, j, events, cols.serial, int(cols.metadata[j]))
    if not events:
        return np.empty((0, EV_WIDTH), np.int64)
    return np.array(events, dtype=np.int64)
