"""The Arrow output of one partition's replay: the commits table, one table per chunk of
commits in log order (dictionary-encoded string columns), and the offsets table at the end (every
stored offset, ``OffsetMetadataManager.offsets``), both gathered from the replay's columns with
NumPy (no Python loop per row). Schemas: :mod:`kgtool.offsets.tables`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgtool.offsets.entries import NO_PRODUCER_ID
from kgtool.offsets.store import K, NOTES, NULL, PROTOCOLS, STATES
from kgtool.offsets.tables import COMMITS, OFFSET_LAG_COLUMNS, OFFSETS

COMMIT_NAMES = [n for n, _t in COMMITS]
_DICTIONARY_COLUMNS = ("group", "source", "topic", "metadata", "txn_result", "protocol", "group_state", "note",
                       "topic_id")


def commits_schema() -> Any:
    """The commits table as the replay emits it: the string columns, and the owners lists'
    member ids, dictionary-encoded (same values; Parquet stores them as its own dictionary pages
    and readers see strings)."""
    import pyarrow as pa

    from kgtool.offsets.tables import arrow_type

    coded = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([pa.field(n, coded if n in _DICTIONARY_COLUMNS else pa.list_(coded) if n == "owners"
                               else arrow_type(t)) for n, t in COMMITS])


class ArrowOutput:
    """The Arrow tables of a :class:`kgtool.offsets.partition.PartitionReplay` (``rp``: its groups,
    keys, owner lists and store), with the dictionaries they share cached while they do not grow."""

    def __init__(self, rp: Any) -> None:
        self.rp = rp
        self._owners_cache: Any = None
        self._dict_cache: Any = None

    def _owner_codes(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """The interned owner lists as flat member codes: (member ids, start and length of each
        list in the flat array, the flat array); rebuilt when lists are added."""
        import pyarrow as pa

        rp = self.rp

        lists = rp.owner_lists.lists
        cached = self._owners_cache
        if cached is None or cached[0] != len(lists):
            ids: dict[str, int] = {}
            flat = np.array([ids.setdefault(m, len(ids)) for o in lists for m in o], np.int32)
            lengths = np.array([len(o) for o in lists], np.int64)
            starts = np.zeros(len(lists), np.int64)
            np.cumsum(lengths[:-1], out=starts[1:])
            cached = self._owners_cache = (len(lists), pa.array(list(ids), pa.string()), starts, lengths, flat)
        return cached[1], cached[2], cached[3], cached[4]

    def owners_column(self, codes: np.ndarray) -> Any:
        """The ``owners`` column of commits whose owner-list codes are ``codes`` (-1: null): a
        list array over dictionary-encoded member ids, gathered with NumPy (Parquet writes it as
        list<string>)."""
        import pyarrow as pa

        members, starts, lengths, flat = self._owner_codes()
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

    def dictionaries(self) -> tuple[Any, Any, np.ndarray, np.ndarray]:
        """Group names (by group), topics, and per key its topic code and partition (rebuilt
        when they grow)."""
        import pyarrow as pa

        rp = self.rp

        size = (len(rp.by_gid), len(rp.key_tp))
        cached = self._dict_cache
        if cached is None or cached[0] != size:
            topics: dict[str, int] = {}
            codes = np.array([topics.setdefault(tp[0], len(topics)) for tp in rp.key_tp], np.int32)
            cached = self._dict_cache = (
                size,
                pa.array([g.name for g in rp.by_gid], pa.string()),
                pa.array(list(topics), pa.string()),
                codes,
                np.array([tp[1] for tp in rp.key_tp], np.int32),
            )
        return cached[1], cached[2], cached[3], cached[4]

    def commits_table(self, held: Any) -> Any:
        """One chunk's commits table (a :class:`kgtool.offsets.partition._Held`: its columns and
        replay outputs), in :func:`commits_schema`."""
        import pyarrow as pa

        rp = self.rp

        c, out = held.cols, held.out
        n = len(c)
        keys = c.key
        kk = rp.store.k
        key_gid = kk[: rp.store.n_keys, K["gid"]]
        tomb = c.version < 0
        txn = c.producer_id != NO_PRODUCER_ID
        names, topics, topic_of_key, parts_of_key = self.dictionaries()
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
            "log_partition": pa.array(np.full(n, rp.log_partition, np.int32)),
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
            "txn_result": coded(tuple(rp.store.txn_results), out.txn_result),
            "txn_marker_offset": nullable(out.txn_marker, out.txn_marker == NULL, pa.int64()),
            "effective": pa.array(out.effective),
            "effective_at_offset": nullable(out.effective_at, out.effective_at == NULL, pa.int64()),
            "generation_id": nullable(gen, gen == NULL, pa.int32()),
            "protocol": coded(PROTOCOLS, out.protocol),
            "group_state": strings(pa.array(STATES, pa.string()), out.state),
            "owners": self.owners_column(out.owners),
            "note": coded(NOTES, out.note),
            "topic_id": strings(pa.array(held.topic_id_values, pa.string()), np.maximum(held.topic_ids, 0),
                                held.topic_ids < 0)
            if held.topic_id_values and held.topic_ids is not None else
            pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), pa.array([], pa.string())),
        }
        return pa.Table.from_arrays([arrays[name] for name in COMMIT_NAMES], schema=commits_schema())

    def _topic_ids(self, topics: Any) -> Any:
        """Each topic's id, as the log still tells it: a ``partition.metadata`` file or a v4
        commit's TopicId, else the 4.0 ConsumerGroupPartitionMetadata record a group holds now;
        null when unknown. Not a superseded group record's: a compacted log no longer has those,
        and its offsets table is the uncleaned log's."""
        import pyarrow as pa

        names = self.rp.shard.topic_names
        by_name: dict[str, str] = {}
        for tid, name in names.strong.items():
            by_name.setdefault(name, tid)
        for _gid, g in sorted(self.rp.shard.groups.groups.items()):
            for name, (tid, _n) in sorted((getattr(g, "subscription_metadata", None) or {}).items()):
                by_name.setdefault(name, tid)
        return pa.array([by_name.get(t) for t in topics.to_pylist()], pa.string())

    def offsets_table(self, expired: set[int]) -> Any:
        """The offsets table as an Arrow table, sorted by group, topic and partition: every
        stored offset (``OffsetMetadataManager.offsets``: plain commits, and transactional ones
        whose COMMIT marker was read) of the groups kept, gathered from the store's columns at
        once (end-of-log work, vectorized: a partition may hold many keys)."""
        import pyarrow as pa

        from kgtool.offsets.tables import arrow_schema

        rp = self.rp
        store = rp.store
        kk = store.k[: store.n_keys]
        ks = np.flatnonzero(kk[:, K["st_has"]] != 0)
        schema = arrow_schema(OFFSETS)
        if not len(ks):
            return schema.empty_table()
        assert not (kk[ks, K["st_metadata_chunk"]] != -1).any(), "metadata read before its chunk was settled"
        names, topics, topic_of_key, part_of_key = self.dictionaries()
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
            "log_partition": pa.array(np.full(len(ks), rp.log_partition, np.int32)),
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
            "topic_id": self._topic_ids(topics).take(pa.array(tcode)),
            "exact": pa.array(np.full(len(ks), rp.exact)),
        }
        for name in OFFSET_LAG_COLUMNS:  # the lag phase's (kgtool.lag.phase)
            arrays[name] = pa.nulls(len(ks), schema.field(name).type)
        return pa.Table.from_arrays([arrays[n] for n, _t in OFFSETS], schema=schema)


def concat(a: Any, b: Any) -> Any:
    """Two tables of one schema, one after the other."""
    import pyarrow as pa

    return pa.concat_tables([a, b])
