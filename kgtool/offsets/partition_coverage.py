"""The coverage row of one partition's replay: what the log read held (records, batches, offsets
and times, records by kind, groups, decode problems), counted over every record read, of every
group (``--group`` filters the replay, not the coverage), up to ``--until``'s cut.

What the row means, and why a reader needs it, is in :mod:`kgtool.offsets.coverage`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgtool.offsets.coverage import COUNTERS, classify
from kgtool.offsets.entries import LogEntry
from kgtool.offsets.tables import COVERAGE


class PartitionCoverage:
    """The counters of :data:`kgtool.offsets.tables.COVERAGE` for one log partition."""

    def __init__(self, log_partition: int, keep_problems: int) -> None:
        self.log_partition = log_partition
        self.keep_problems = keep_problems  # decode problems kept as entries (all are counted)
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.records = 0
        self.batches = 0
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.first_timestamp: int | None = None
        self.last_timestamp: int | None = None
        self.group_names: set[str] = set()
        self.problem_count = 0
        self.problems: list[LogEntry] = []
        self._seen = np.zeros(0, np.bool_)  # decoder keys seen in kept records (coverage groups)
        self._seen_tables: Any = None
        self.compaction: Any = None  # the replay's CompactionWatch (kgtool.offsets.compaction)
        self.whole = True  # the partition was read to its end (not stopped at --until's cut)

    def problem(self, e: LogEntry) -> None:
        """A problem: counted, and kept while fewer than ``keep_problems`` are."""
        self.problem_count += 1
        if len(self.problems) < self.keep_problems:
            self.problems.append(e)

    def add(self, chunk: Any, keep: np.ndarray | None, rare: list[tuple[int, LogEntry]], keys: Any) -> None:
        """Count a chunk's records: its commit rows (``keep``: those before ``--until``'s cut; all
        when None) and its rare entries (already cut), of every group."""
        n = chunk.n
        if n:
            if self._seen_tables is not keys:
                self._seen_flush()
                self._seen_tables = keys
            if len(self._seen) < len(keys):
                self._seen = np.concatenate([self._seen, np.zeros(len(keys) - len(self._seen), np.bool_)])
            self._seen[chunk.key[:n] if keep is None else chunk.key[:n][keep]] = True
        pos = chunk.position[:n]
        offs = chunk.record_offset[:n]
        ts = chunk.timestamp[:n]
        version = chunk.version[:n]
        if keep is not None:
            pos, offs, ts, version = pos[keep], offs[keep], ts[keep], version[keep]
        m = len(offs)
        tomb = int(np.count_nonzero(version < 0)) if m else 0
        self.counters["offset_commits"] += m - tomb
        self.counters["offset_tombstones"] += tomb
        self.records += m
        if m:
            self._range(int(offs.min()), int(offs.max()), int(ts.min()), int(ts.max()))
        # batches: distinct (source, position) of records; a chunk ends at a batch boundary and
        # its positions are in log order (non-decreasing)
        batches = 1 + int(np.count_nonzero(pos[1:] != pos[:-1])) if m else 0
        rare_positions = []
        for _i, e in rare:
            c = classify(e)
            if c == "problems":
                self.problem(e)
                continue
            self.counters[c] += 1
            self.counters["unknown_tagged_fields"] += e.unknown_tagged_fields
            self.records += 1
            self._range(e.offset, e.offset, e.timestamp, e.timestamp)
            rare_positions.append(e.position)
            if e.group is not None:
                self.group_names.add(e.group)
        if rare_positions:
            extra = np.unique(np.array(rare_positions, np.int64))
            if m:
                i = np.searchsorted(pos, extra)
                inside = (i < m) & (pos[np.minimum(i, m - 1)] == extra)
                extra = extra[~inside]
            batches += len(extra)
        self.batches += batches

    def _seen_flush(self) -> None:
        keys = self._seen_tables
        if keys is not None and self._seen.any():
            kg = keys.key_group()
            for code in np.unique(kg[np.flatnonzero(self._seen)]):
                self.group_names.add(keys.groups[int(code)])
        self._seen = np.zeros(0, np.bool_)

    def _range(self, first: int, last: int, t0: int, t1: int) -> None:
        if self.first_offset is None or first < self.first_offset:
            self.first_offset = first
        if self.last_offset is None or last > self.last_offset:
            self.last_offset = last
        if self.first_timestamp is None or t0 < self.first_timestamp:
            self.first_timestamp = t0
        if self.last_timestamp is None or t1 > self.last_timestamp:
            self.last_timestamp = t1

    def row(self, segments: int = 0, size: int = 0) -> dict[str, Any]:
        """The coverage table's row (:data:`kgtool.offsets.tables.COVERAGE`); ``segments`` and
        ``size``: the files read and their bytes."""
        self._seen_flush()
        self._seen_tables = None
        n = self.records
        below, below_time, source = self.compaction.result(self.whole) if self.compaction is not None else \
            (None, None, None)
        start = self.first_offset
        base = None if self.compaction is None else self.compaction.first_base
        if n and base is not None and base < start:  # type: ignore[operator]
            start = base  # the first segment's first records were cleaned away
        row = {
            "log_partition": self.log_partition,
            "segments": segments,
            "bytes": size,
            "batches": self.batches,
            "records": n,
            "first_offset": self.first_offset if n else None,
            "last_offset": self.last_offset if n else None,
            "offsets_absent": None if not n else self.last_offset - start + 1 - n,  # type: ignore[operator]
            "compacted_below_offset": below,
            "compacted_below_time": below_time,
            "compaction_source": source,
            "first_timestamp": self.first_timestamp if n else None,
            "last_timestamp": self.last_timestamp if n else None,
            **self.counters,
            "groups": len(self.group_names),
            "problems": self.problem_count,
            # the driver's, once the lag tasks have read them (kgtool.spark.job.check_lag_inputs)
            "lag_inputs": None,
            "lag_inputs_read": None,
        }
        return {name: row[name] for name, _t in COVERAGE}
