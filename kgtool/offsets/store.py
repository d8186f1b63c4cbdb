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

The hot paths, :meth:`Store.replay_commits` (every offset commit, plain or transactional) and
:meth:`Store.end_transaction` (every COMMIT or ABORT marker), are compiled in
``kgtool.offsets._replay`` when the extension is built, the pure-Python loops below otherwise:
same state, same outputs; ``KGTOOL_PURE_PYTHON=1`` forces Python. They also evaluate the rules
that compare a commit with the partition's past (:mod:`kgtool.offsets.rules`): what they find
leaves as *events* (a small int64 matrix) that Python turns into findings.

Pending transactional offsets live in a *slot* table (``Store.p``, one row per transactional
commit whose marker has not been read, or whose row has not been written out yet): each
producer's open transaction is a chain of slots in log order (``Store.x``: first and last slot
per producer code), as ``pendingTransactionalOffsets`` holds them per producer id. A later
commit of the same key in the same transaction replaces an earlier one (the marker applies only
the last of each key); a tombstone drops those written before it (``last_removal``). The marker
fills each slot's outcome (result, marker offset, effective, note), which the commit's row takes
when it is written out (:meth:`Store.resolve`); the slot is then freed, but for the last
aborted commit of each key (the aborted-txn rule reads it at the end of the log).
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
    "txn_last",  # scratch of end_transaction: the key's last slot in the transaction being ended
    "txn_record",  # highest record offset of a transactional commit of the key; NULL none
    "st_leader_epoch",  # the stored commit's leader epoch (-1 none)
    "st_metadata_chunk",  # serial of the chunk whose metadata dictionary st_metadata indexes; -1: Store.metadata
    "st_metadata",  # the stored commit's metadata: a code (see st_metadata_chunk); -1 none
    "aborted_slot",  # the slot of the key's last aborted transactional commit (aborted-txn rule); -1 none
)
K = {name: i for i, name in enumerate(K_FIELDS)}
K_INIT = np.array(
    [0, -1, 0, NULL, 0, 0, 0, 0, 0, 0, NULL, 0, NULL, -1, 0, 0, NULL, 0, 0, 0, NULL, -1, NULL, -1, -1, -1, -1],
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

# ---- pending transactional commits: the columns of the slot table ``Store.p`` -------------------
P_FIELDS = (
    "key",  # the commit's key; -1: a free slot
    "producer",  # its producer's code (Store.producer_code)
    "producer_id",
    "record",  # the commit's record offset ...
    "offset",
    "leader_epoch",
    "position",
    "source",
    "timestamp",
    "generation",  # ... the generation it was written in (NULL none)
    "commit_ts",
    "expire_ts",
    "state",  # ... and the group state then
    "metadata_chunk",  # as st_metadata_chunk: serial of the chunk whose dictionary metadata indexes; -1 Store.metadata
    "metadata",
    "orphan",  # 1: an orphan commit (the finding is reported if the marker makes it effective)
    "next",  # the next slot of the producer's open transaction; -1 last
    "result",  # 0 open; else the marker's type (code into Store.txn_results)
    "marker",  # the marker's record offset; NULL open
    "effective_at",  # the marker's record offset when it stored the commit; NULL not stored
    "note",  # the commit's note (NOTES), final once the marker is read
    "aborted",  # 1: the key's last aborted commit (K aborted_slot)
    "done",  # 1: the commit's row was written out
)
P = {name: i for i, name in enumerate(P_FIELDS)}
X_FIELDS = ("head", "tail")  # per producer code: the first and last slot of its open transaction; -1 none
X = {name: i for i, name in enumerate(X_FIELDS)}
META_FIELDS = ("n_slots", "n_free")  # Store.meta: slots ever used (high-water mark), free slots in Store.free

# ---- per-commit outputs (the commits table's replay columns) ---------------------------------
NOTES = (None, "reset while Empty", "owner revoking (cooperative)", "committed, superseded by a later commit record")
NOTE_RESET, NOTE_REVOKING, NOTE_SUPERSEDED = 1, 2, 3

# ---- events: rows of the int64 matrices returned by replay_commits and end_transaction --------
# kind, commit row (end_transaction: the commit's slot), key, then values: EV_EPOCH the leader
# epoch, the highest earlier epoch and the stored commit; EV_REWIND the stored commit, EV_ZOMBIE
# the highest commit since the move (each commit as offset, record offset, position, source,
# generation; NULL when none); EV_TXN_ORPHAN (replay_commits, a transactional commit written
# while the key is an orphan: its message is made now, reported if its marker stores it) the slot.
EV_ORPHAN, EV_EPOCH, EV_REWIND, EV_ZOMBIE, EV_TXN_ORPHAN = 1, 2, 3, 4, 5
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
    producer: np.ndarray | None = None  # int64 producer code (Store.producer_code), -1 none; made by replay_commits

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
    slot: np.ndarray  # int64: a transactional commit's slot in Store.p until its row is written out; -1 none

    @classmethod
    def empty(cls, n: int) -> CommitOutputs:
        return cls(
            generation=np.full(n, NULL, np.int64), protocol=np.zeros(n, np.int8), state=np.zeros(n, np.int8),
            owners=np.full(n, -1, np.int64), effective=np.zeros(n, np.bool_), effective_at=np.full(n, NULL, np.int64),
            note=np.zeros(n, np.int8), txn_result=np.zeros(n, np.int8), txn_marker=np.full(n, NULL, np.int64),
            token=np.full(n, -1, np.int64), slot=np.full(n, -1, np.int64),
        )


def _use_c() -> bool:
    """Whether the compiled commit loop is in use (:func:`kgtool.native.load` decides)."""
    _replay = native.load("kgtool.offsets._replay")
    if _replay is None:
        return False
    # The C loop indexes the state matrices by these layouts: they must be this module's.
    if _replay.K_FIELDS.split() != list(K_FIELDS) or _replay.G_FIELDS.split() != list(G_FIELDS) \
            or _replay.P_FIELDS.split() != list(P_FIELDS) or _replay.EV_WIDTH != EV_WIDTH:
        raise ImportError("kgtool.offsets._replay was built from another version of store.py: rebuild it")
    return True


class Store:
    """Offsets and pending transactional offsets of every group of one log partition, plus the
    per-group generation snapshot that commits are attributed to (written by
    :mod:`kgtool.offsets.generations`)."""

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
        # pending transactional commits (see the module docstring)
        self.p = np.empty((0, len(P_FIELDS)), np.int64)
        self.x = np.empty((0, len(X_FIELDS)), np.int64)
        self.n_producers = 0
        self.producer_codes: dict[int, int] = {}  # producer id -> code
        self.free = np.empty(0, np.int64)  # free slots: the first meta[n_free]
        self.meta = np.zeros(len(META_FIELDS), np.int64)
        self._compacted = 0  # slots in use after the last _compact_open

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

    def producer_code(self, producer_id: int) -> int:
        """The code of a producer id (a row of :attr:`x`), made on first sight."""
        code = self.producer_codes.get(producer_id)
        if code is None:
            self.x = _room(self.x, self.n_producers, 16)
            code = self.producer_codes[producer_id] = self.n_producers
            self.x[code] = -1
            self.n_producers += 1
        return code

    def _producers(self, producer_id: np.ndarray) -> np.ndarray:
        """Producer codes of a chunk's commits (-1: not transactional), one dict look-up per
        distinct producer id."""
        out = np.full(len(producer_id), -1, np.int64)
        txn = producer_id != -1
        if txn.any():
            ids, inverse = np.unique(producer_id[txn], return_inverse=True)
            out[txn] = np.array([self.producer_code(int(i)) for i in ids.tolist()], np.int64)[inverse]
        return out

    def _slot_room(self, n: int) -> None:
        """Room in :attr:`p` for ``n`` more slots than the high-water mark."""
        need = int(self.meta[0]) + n
        if need > len(self.p):
            grown = np.empty((max(64, need, 2 * len(self.p)), len(P_FIELDS)), np.int64)
            grown[: len(self.p)] = self.p
            self.p = grown
            free = np.empty(len(grown), np.int64)  # room for every slot: end_transaction frees in C
            free[: int(self.meta[1])] = self.free[: int(self.meta[1])]
            self.free = free

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
        if cols.producer is None:
            cols.producer = self._producers(cols.producer_id)
        self._slot_room(hi - lo)
        if self.use_c:
            events = np.empty((2 * (hi - lo) + 16, EV_WIDTH), np.int64)  # at most 2 per commit
            n = self._replay.replay_commits(
                lo, hi, cols.source, cols.serial, self.k, self.g,
                cols.key, cols.record_offset, cols.position, cols.timestamp, cols.producer, cols.producer_id,
                cols.version, cols.offset, cols.leader_epoch, cols.commit_timestamp, cols.expire_timestamp,
                cols.metadata, out.generation, out.protocol, out.state, out.owners, out.effective, out.effective_at,
                out.note, out.txn_result, out.txn_marker, out.token, out.slot, events, self.p, self.x, self.free,
                self.meta,
            )
            return events[:n]
        return _replay_commits_py(self, cols, out, lo, hi)

    def end_transaction(self, producer_id: int, marker_type: str, marker_offset: int) -> np.ndarray | None:
        """A COMMIT or ABORT marker of ``producer_id`` (``replayEndTransactionMarker``): every
        slot of the producer's open transaction takes the marker's outcome; on COMMIT the last
        commit of each key, unless a tombstone came after it, is stored where its record offset
        is greater than the stored one's (or nothing is stored), else its note says superseded;
        on ABORT it becomes its key's last aborted commit. Returns the events (rows: slots), or
        None when the producer has no open transaction (nothing changes)."""
        code = self.producer_codes.get(producer_id)
        if code is None or self.x[code, X["head"]] < 0:
            return None
        result = self.txn_code(marker_type)
        commit = marker_type == "COMMIT"
        if self.use_c:
            events = np.empty((64, EV_WIDTH), np.int64)
            while True:
                n = self._replay.end_transaction(code, result, commit, marker_offset, self.k, self.g, self.p,
                                                 self.x, self.free, self.meta, events)
                if n >= 0:
                    return events[:n]
                events = np.empty((-n, EV_WIDTH), np.int64)  # the room it needs; nothing changed yet
        return _end_transaction_py(self, code, result, commit, marker_offset)

    def resolve(self, out: CommitOutputs) -> None:
        """A chunk's rows are written out: its transactional commits take their slot's outcome
        (where the marker was read) and the slots are freed (but for a key's last aborted one,
        freed when a later abort replaces it)."""
        rows = np.flatnonzero(out.slot >= 0)
        if not len(rows):
            return
        slots = out.slot[rows]
        pp = self.p
        ended = pp[slots, P["result"]] != 0
        if ended.any():
            r, s = rows[ended], slots[ended]
            out.txn_result[r] = pp[s, P["result"]]
            out.txn_marker[r] = pp[s, P["marker"]]
            at = pp[s, P["effective_at"]]
            out.effective[r] = at != NULL
            out.effective_at[r] = at
            out.note[r] = pp[s, P["note"]]
        pp[slots, P["done"]] = 1
        gone = slots[ended & (pp[slots, P["aborted"]] == 0)]
        if len(gone):
            self._free(gone)
        out.slot[rows] = -1
        in_use = int(self.meta[0] - self.meta[1])
        if in_use > max(1024, 2 * (self.n_keys + self.n_producers), 2 * self._compacted):
            self._compact_open()

    def _compact_open(self) -> None:
        """Free the slots of open transactions that can no longer matter: a commit whose row is
        written out and that a later commit of its key in the same transaction replaced, or a
        tombstone dropped. Only a transaction whose marker never comes (the log ends first: its
        rows were not held back) keeps such slots; without this they would grow with its
        records, where Kafka's pendingTransactionalOffsets holds one offset per key."""
        pp, kk = self.p, self.k
        drop = []
        for code in range(self.n_producers):
            chain = []
            s = int(self.x[code, X["head"]])
            while s >= 0:
                chain.append(s)
                s = int(pp[s, P["next"]])
            if not chain:
                continue
            last: dict[int, int] = {}
            for s in chain:
                last[int(pp[s, P["key"]])] = s
            keep = []
            for s in chain:
                k = int(pp[s, P["key"]])
                removed = kk[k, K["last_removal"]]
                dead = last[k] != s or (removed != NULL and pp[s, P["record"]] < removed)
                if dead and pp[s, P["done"]]:
                    drop.append(s)
                else:
                    keep.append(s)
            for a, b in zip(keep, keep[1:]):
                pp[a, P["next"]] = b
            if keep:
                pp[keep[-1], P["next"]] = -1
            self.x[code] = (keep[0], keep[-1]) if keep else (-1, -1)
        if drop:
            self._free(np.array(drop, np.int64))
        self._compacted = int(self.meta[0] - self.meta[1])

    def _free(self, slots: np.ndarray) -> None:
        self.p[slots, P["key"]] = -1
        n = int(self.meta[1])
        if n + len(slots) > len(self.free):
            grown = np.empty(max(64, 2 * (n + len(slots))), np.int64)
            grown[:n] = self.free[:n]
            self.free = grown
        self.free[n: n + len(slots)] = slots
        self.meta[1] = n + len(slots)

    def waiting(self, out: CommitOutputs, producer_id: np.ndarray, record: np.ndarray,
                last_markers: dict[int, int] | None) -> np.ndarray:
        """The slots of a chunk's transactional commits whose marker is still to come: all of them
        without ``last_markers``, else those written before their producer's last marker."""
        rows = np.flatnonzero(out.slot >= 0)
        if not len(rows) or last_markers is None:
            return out.slot[rows]
        ids, inverse = np.unique(producer_id[rows], return_inverse=True)
        last = np.array([last_markers.get(int(i), -1) for i in ids.tolist()], np.int64)[inverse]
        return out.slot[rows[last > record[rows]]]

    def ended(self, slots: np.ndarray) -> bool:
        """Whether every slot has its marker."""
        return not len(slots) or bool((self.p[slots, P["result"]] != 0).all())

    def open_slots(self) -> np.ndarray:
        """The slots of every transaction without its marker (in use, not ended)."""
        pp = self.p[: int(self.meta[0])]
        return np.flatnonzero((pp[:, P["key"]] >= 0) & (pp[:, P["result"]] == 0))

    def live(self, slot: int) -> bool:
        """Whether a pending slot's commit still counts (no tombstone of its key after it)."""
        removed = self.k[int(self.p[slot, P["key"]]), K["last_removal"]]
        return bool(removed == NULL or self.p[slot, P["record"]] > removed)

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
        if len(self.metadata) + n > max(1024, 2 * (self.n_keys + int(self.meta[0]))):
            self._compact_metadata()

    def _compact_metadata(self) -> None:
        """Keep only the strings that stored commits still use (amortized: at most one rebuild
        per doubling), so that distinct metadata on every commit costs memory per key only."""
        kk = self.k[: self.n_keys]
        live = np.flatnonzero((kk[:, K["st_has"]] != 0) & (kk[:, K["st_metadata_chunk"]] == -1)
                              & (kk[:, K["st_metadata"]] >= 0))
        pp = self.p[: int(self.meta[0])]
        held = np.flatnonzero((pp[:, P["key"]] >= 0) & (pp[:, P["metadata_chunk"]] == -1) & (pp[:, P["metadata"]] >= 0))
        codes = np.concatenate([kk[live, K["st_metadata"]], pp[held, P["metadata"]]])
        used, inverse = np.unique(codes, return_inverse=True)
        self.metadata = [self.metadata[c] for c in used.tolist()]
        self._metadata_codes = {t: i for i, t in enumerate(self.metadata)}
        self.k[live, K["st_metadata"]] = inverse[: len(live)]
        self.p[held, P["metadata"]] = inverse[len(live):]

    def settle_metadata(self, serial: int, dictionary: list[str], keys: np.ndarray | None = None) -> None:
        """Once per chunk, after its replay: the keys whose stored commit came from chunk
        ``serial`` take their metadata string from the chunk's ``dictionary`` into
        :attr:`metadata` (the chunk's codes mean nothing after it). ``keys``: only those keys
        can hold the chunk's commits (one-row chunks); None: all."""
        pp = self.p[: int(self.meta[0])]
        ps = np.flatnonzero((pp[:, P["metadata_chunk"]] == serial) & (pp[:, P["key"]] >= 0)) if len(pp) else pp[:0, 0]
        if len(ps):  # pending transactional commits of the chunk
            local, inverse = np.unique(pp[ps, P["metadata"]], return_inverse=True)
            self._make_room(len(local))
            codes = np.array([self._intern(dictionary[c]) if c >= 0 else -1 for c in local.tolist()], np.int64)
            self.p[ps, P["metadata"]] = codes[inverse]
            self.p[ps, P["metadata_chunk"]] = -1
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


def _apply_py(r: Any, k: int, offset: int, leader_epoch: int, record: int, position: int,
              source: int, timestamp: int, generation: int, commit_ts: int, expire_ts: int, token: int,
              state: int, row: int, events: list, metadata_chunk: int, metadata: int) -> bool:
    """Make a commit the key's offset (``OffsetMetadataManager``: stored) and check the rules
    that compare it with the past: the twin of ``apply`` in ``_replay.c``. Returns whether the
    commit is a reset while Empty (its note)."""
    reset = False
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
            reset = True  # a reset while Empty (kafka-consumer-groups --reset-offsets)
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
    return reset


def _replay_commits_py(store: Store, cols: CommitColumns, out: CommitOutputs, lo: int, hi: int) -> np.ndarray:
    """The pure-Python twin of ``_replay.replay_commits`` (OffsetMetadataManager.replay)."""
    kk, gg, pp = store.k, store.g, store.p
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
            r[K["last_removal"]] = record  # (pending slots written before it no longer count)
            continue
        g[G["exists"]] = 1
        orphan = r[K["orphan"]]
        if cols.producer_id[j] != -1:
            # Transactional: pending until its producer's marker, in a slot of its transaction.
            record_txn = r[K["txn_record"]]
            if record_txn == NULL or record > record_txn:
                r[K["txn_record"]] = record
            s = _alloc_py(store)
            pr = pp[s]
            code = int(cols.producer[j])
            pr[:] = (k, code, int(cols.producer_id[j]), record, int(cols.offset[j]), int(cols.leader_epoch[j]),
                     int(cols.position[j]), src, int(cols.timestamp[j]), generation, int(cols.commit_timestamp[j]),
                     int(cols.expire_timestamp[j]), state, cols.serial, int(cols.metadata[j]), 1 if orphan == 1 else 0,
                     -1, 0, NULL, NULL, NOTE_REVOKING if orphan == 2 else 0, 0, 0)
            x = store.x[code]
            if x[X["tail"]] >= 0:
                pp[x[X["tail"]], P["next"]] = s
            else:
                x[X["head"]] = s
            x[X["tail"]] = s
            out.txn_result[j] = 1  # PENDING until its marker
            out.slot[j] = s
            if orphan == 1:
                events.append(_event(EV_TXN_ORPHAN, j, k, [s]))
            elif orphan == 2:
                out.note[j] = NOTE_REVOKING
            continue
        if orphan == 1:
            events.append(_event(EV_ORPHAN, j, k, []))
        elif orphan == 2:
            out.note[j] = NOTE_REVOKING
        out.effective[j] = True
        out.effective_at[j] = record
        if _apply_py(r, k, int(cols.offset[j]), int(cols.leader_epoch[j]), record, int(cols.position[j]), src,
                     int(cols.timestamp[j]), generation, int(cols.commit_timestamp[j]), int(cols.expire_timestamp[j]),
                     token, state, j, events, cols.serial, int(cols.metadata[j])):
            out.note[j] = NOTE_RESET
    if not events:
        return np.empty((0, EV_WIDTH), np.int64)
    return np.array(events, dtype=np.int64)


def _alloc_py(store: Store) -> int:
    """A free slot (the free list first; the caller made room for the high-water mark)."""
    meta = store.meta
    if meta[1] > 0:
        meta[1] -= 1
        return int(store.free[meta[1]])
    s = int(meta[0])
    meta[0] += 1
    return s


def _end_transaction_py(store: Store, code: int, result: int, commit: bool, marker_offset: int) -> np.ndarray:
    """The pure-Python twin of ``_replay.end_transaction`` (replayEndTransactionMarker)."""
    kk, pp, x = store.k, store.p, store.x[code]
    chain = []
    s = int(x[X["head"]])
    while s >= 0:
        chain.append(s)
        pp[s, P["result"]] = result
        pp[s, P["marker"]] = marker_offset
        kk[pp[s, P["key"]], K["txn_last"]] = s  # the key's last commit in the transaction wins
        s = int(pp[s, P["next"]])
    x[X["head"]] = x[X["tail"]] = -1
    events: list[list[int]] = []
    for s in chain:
        pr = pp[s]
        k = int(pr[P["key"]])
        r = kk[k]
        if r[K["txn_last"]] != s:
            continue  # replaced by a later commit of the key in the same transaction
        removed = r[K["last_removal"]]
        if removed != NULL and pr[P["record"]] < removed:
            continue  # a tombstone of the key came after it
        if not commit:
            old = int(r[K["aborted_slot"]])
            if old >= 0:
                pp[old, P["aborted"]] = 0
                if pp[old, P["done"]]:
                    store._free(np.array([old], np.int64))
            r[K["aborted_slot"]] = s
            pr[P["aborted"]] = 1
            continue
        record = int(pr[P["record"]])
        # replayEndTransactionMarker: only a higher record offset than the stored one wins.
        if r[K["st_has"]] and record <= r[K["st_record"]]:
            pr[P["note"]] = NOTE_SUPERSEDED
            continue
        if pr[P["orphan"]]:
            events.append(_event(EV_ORPHAN, s, k, []))
        pr[P["effective_at"]] = marker_offset
        # The zombie rule counts a commit as the new owner's when it takes effect in a generation
        # at or after the move: for a transactional one, the generation in effect at its COMMIT
        # marker (the oracle's rule), not the one it was written in.
        now = int(store.g[r[K["gid"]], G["token"]])
        if _apply_py(r, k, int(pr[P["offset"]]), int(pr[P["leader_epoch"]]), record, int(pr[P["position"]]),
                     int(pr[P["source"]]), int(pr[P["timestamp"]]), int(pr[P["generation"]]), int(pr[P["commit_ts"]]),
                     int(pr[P["expire_ts"]]), now, int(pr[P["state"]]), s, events, int(pr[P["metadata_chunk"]]),
                     int(pr[P["metadata"]])):
            pr[P["note"]] = NOTE_RESET
    if not events:
        return np.empty((0, EV_WIDTH), np.int64)
    return np.array(events, dtype=np.int64)
