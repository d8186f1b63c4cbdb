"""The files of a partition directory besides the segments, as Kafka 4.x's storage module
writes them (``storage/src/main/java/org/apache/kafka/storage/internals/log/``), and what
kgtool does with them: decode each kind, verify them against the log, and seek with them.

A partition directory (``LogFileUtils``, ``LocalLog``) holds, per segment with base offset B
(the file names carry B on 20 digits): ``B.log`` (the batches), ``B.index``
(:mod:`kgtool.storage.indexes`, ``OffsetIndex``), ``B.timeindex`` (``TimeIndex``) and
``B.txnindex`` (``TransactionIndex``); producer state snapshots ``N.snapshot``
(:mod:`kgtool.storage.snapshot`, ``ProducerStateManager``); ``leader-epoch-checkpoint`` and
``partition.metadata`` (:mod:`kgtool.storage.checkpoints`). The broker's log directory, one level
up, holds the offset checkpoint files (``replication-offset-checkpoint``: the high watermarks,
``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``).

Modules: :mod:`~kgtool.storage.files` (names and kinds), the three decoders above,
:mod:`~kgtool.storage.logview` (the batch headers of a segment, through :mod:`kgtool.codec`),
:mod:`~kgtool.storage.verify` (``--verify``), :mod:`~kgtool.storage.seek` (``--from-offset``,
``--from-time``) and :mod:`~kgtool.storage.overview` (``DIR --summary``). The tests' and
benchmarks' partition directories are written as ``LogSegment.append`` does by
``tests/storage/writer.py`` (not shipped). No CLI and no Rich here: functions return dataclasses.
"""
