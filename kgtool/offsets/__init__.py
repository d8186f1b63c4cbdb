"""Replay of ``__consumer_offsets`` records into group history, in pure Python.

The model follows the group coordinator's own replay (``GroupCoordinatorShard.replay``,
``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker``, ``GroupMetadataManager.replay``)
record by record, in log order within one ``__consumer_offsets`` partition, and records what
it saw: generations, members, commits with attribution, findings, and coverage.

- :mod:`kgtool.offsets.entries`: :class:`LogEntry`, one decoded record (or control record,
  or decode problem) of the log, and the transaction-marker annotation.
- :mod:`kgtool.offsets.tables`: the output tables as data (column names and types).
- :mod:`kgtool.offsets.replay`: per-group replay and the stale-commit rules.
- :mod:`kgtool.offsets.coverage`: what the log still holds, per partition.
- :mod:`kgtool.offsets.audit`: the whole audit in one process (the reference the Spark job
  must agree with).
"""
