"""Replay of ``__consumer_offsets`` records into group history.

The model follows the group coordinator's own replay (``GroupCoordinatorShard.replay``,
``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker``, ``GroupMetadataManager.replay``)
record by record, in log order within one ``__consumer_offsets`` partition, and records what
it saw: generations, members, commits with attribution, findings, and coverage.

- :mod:`kgtool.offsets.entries`: :class:`LogEntry`, one decoded record (or control record,
  or decode problem) of the log.
- :mod:`kgtool.offsets.columns`: segment bytes -> chunks of typed columns for plain offset
  commits (compiled, with a pure-Python twin) plus entries for the rare records.
- :mod:`kgtool.offsets.shard`: the groups as the coordinator holds them (``GroupMetadataManager``).
- :mod:`kgtool.offsets.generations`: generations, members and commit attribution, read from the shard.
- :mod:`kgtool.offsets.store`: the offset store and pending transactional offsets
  (``OffsetMetadataManager``), with the commit loop (compiled in ``_replay.c``).
- :mod:`kgtool.offsets.rules`: the stale-commit rules and their findings.
- :mod:`kgtool.offsets.rebalances`: one row per generation change (who joined, left, rejoined,
  why) and the rebalance-storm rule.
- :mod:`kgtool.offsets.partition`: one partition's replay (the orchestration), with its
  coverage row (:mod:`kgtool.offsets.partition_coverage`), Arrow output
  (:mod:`kgtool.offsets.arrow_output`) and end-of-log rules (:mod:`kgtool.offsets.end_of_log`).
- :mod:`kgtool.offsets.tables`: the output tables as data (column names and types).
- :mod:`kgtool.offsets.audit`: the whole audit of decoded entries in one process.
"""
