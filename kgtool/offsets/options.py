"""The audit's options, shared by the in-process audit and the Spark job."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kgtool.offsets.compaction import CleanerCheckpoint

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes default (10080)
DEFAULT_STORM_COUNT = 5  # rebalance-storm: at least this many rebalances ...
DEFAULT_STORM_WINDOW_MS = 10 * 60 * 1000  # ... within this window (--storm 5/10m)
DEFAULT_LAG_STEP_MS = 60_000  # --lag-step 1m
DEFAULT_LAG_WARN_MS = 300_000  # --lag-warn 5m


@dataclass(frozen=True)
class AuditOptions:
    """``--group``, ``--since``, ``--until``, ``--retention``, ``--storm``, and the topic names
    found beside the log."""

    group_pattern: str | None = None  # Python regex, re.search on the group id
    since: int | None = None  # epoch ms, inclusive: hide rows before it
    until: int | None = None  # epoch ms: read each partition up to its first record stamped at or after it
    retention_ms: int = DEFAULT_RETENTION_MS
    storm_count: int = DEFAULT_STORM_COUNT  # --storm N/W: the rebalance-storm rule's N ...
    storm_window_ms: int = DEFAULT_STORM_WINDOW_MS  # ... and W
    #: topic id -> name, (id, name) pairs, from the partition.metadata files of data partition
    #: directories given as input (kgtool.spark.files.TopicIds): names for the ids of KIP-848
    #: records where no ConsumerGroupPartitionMetadata record names them (which wins)
    topic_names: tuple[tuple[str, str], ...] = ()
    #: the data partitions given (or found in broker log dirs): ((topic, partition), (directory, ...))
    #: in (topic, partition) order, each with its copies; their committed offsets get lag
    lag_partitions: tuple[tuple[tuple[str, int], tuple[str, ...]], ...] = ()
    lag_step_ms: int = DEFAULT_LAG_STEP_MS  # --lag-step: lag rows between commits this far apart
    lag_warn_ms: int = DEFAULT_LAG_WARN_MS  # --lag-warn: lag-growing when WARN lasts longer
    #: the cleaner-offset-checkpoint entries of the __consumer_offsets partitions read:
    #: (partition, first dirty offset, file, line) (kgtool.offsets.compaction)
    cleaner_checkpoints: tuple[tuple[int, int, str, int], ...] = ()
    #: the lag phase's: (log partition, earliest exact instant) of the compacted partitions
    #: (kgtool.offsets.compaction): lag rows before it are exact = false
    exact_from: tuple[tuple[int, int], ...] = ()

    def cleaner_checkpoint(self, partition: int) -> CleanerCheckpoint | None:
        """The partition's cleaner-offset-checkpoint entry, if one was found."""
        from kgtool.offsets.compaction import CleanerCheckpoint

        for part, offset, path, line in self.cleaner_checkpoints:
            if part == partition:
                return CleanerCheckpoint(offset, path, line)
        return None

    def lag_index(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> its index in :attr:`lag_partitions` (the lag phase's task)."""
        return {tp: k for k, (tp, _dirs) in enumerate(self.lag_partitions)}

    def group_matches(self, group: str | None) -> bool:
        if group is None or self.group_pattern is None:
            return True
        return re.search(self.group_pattern, group) is not None
