"""``partition-of``: the partition of each key for one or several partitioners and counts.

The domain side of ``kgtool partition-of``: keys in (:mod:`kgtool.partitioner.keys`), arrays and
dataclasses out. A *column* is one (partitioner, partition count) pair; one partitioner gives one
column, ``--compare`` one per client, ``--from-partitions M`` the same partitioner at N and at M.

Why about half the keys move when a topic doubles: a key's partition is ``h % N`` for a hash
``h`` that does not depend on N. With ``2N`` partitions, ``h % 2N`` is either ``h % N`` (when
``(h // N)`` is even) or ``h % N + N`` (when it is odd): each key keeps its partition or moves
to the new partition ``p + N``, and for a uniform hash the two are equally likely. In general a
key stays when ``h % N == h % M``, i.e. ``h mod lcm(N, M)`` is below ``min(N, M)``: a share of
``min(N, M) / lcm(N, M)`` of the keys stays (6 -> 12: one half; 6 -> 8: one quarter).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from kgtool.coordinator.lookup import Histogram, histogram_of_counts
from kgtool.coordinator.topic_description import TopicDescription
from kgtool.partitioner.keys import KIND_EMPTY, KIND_NULL, KeyFormat, KeySource, scan_keys
from kgtool.partitioner.rules import Partitioner, Reduction

#: ``--compare``'s note for a null key: no client decides its partition from the key.
NULL_KEY_NOTE = (
    "null key: the Java producer and librdkafka send it to their sticky partition, Sarama to a "
    "random one: not deterministic"
)


@dataclass(frozen=True)
class Column:
    """One partitioner at one partition count."""

    label: str
    partitioner: Partitioner
    num_partitions: int


def partitions_from_hashes(
    hashes: np.ndarray, kinds: np.ndarray, partitioner: Partitioner, num_partitions: int
) -> np.ndarray:
    """Vectorised :func:`~kgtool.partitioner.rules.partition_for_key` over unsigned 32-bit hashes:
    int64 partitions, -1 where the partitioner does not decide from the key."""
    h = np.ascontiguousarray(hashes, dtype=np.uint32)
    if partitioner.reduction is Reduction.MASK:
        v = (h & np.uint32(0x7FFFFFFF)).astype(np.int64)
    elif partitioner.reduction is Reduction.UNSIGNED:
        v = h.astype(np.int64)
    else:
        v = np.abs(h.view(np.int32).astype(np.int64))  # INT32_MIN -> 2**31, as rd_fnv1a/Sarama
    parts = v % num_partitions
    undetermined = kinds == KIND_NULL
    if partitioner.empty_is_random:
        undetermined |= kinds == KIND_EMPTY
    parts[undetermined] = -1
    return parts


@dataclass
class Placement:
    """The partitions of one chunk of keys, one int64 array per column (-1: not deterministic)."""

    texts: list[str | None] | None
    kinds: np.ndarray
    partitions: list[np.ndarray]


def place(
    sources: list[KeySource],
    key_format: KeyFormat,
    columns: list[Column],
    *,
    null_marker: str | None = None,
    with_texts: bool = False,
) -> Iterator[Placement]:
    """Place every key of ``sources`` in every column, chunk by chunk, in input order.

    Raises:
        InputError: a key that is not valid for ``key_format`` (source and line named).
    """
    families = sorted({c.partitioner.family for c in columns})
    row = {f: i for i, f in enumerate(families)}
    for chunk in scan_keys(sources, key_format, families, null_marker=null_marker, with_texts=with_texts):
        parts = [
            partitions_from_hashes(chunk.hashes[row[c.partitioner.family]], chunk.kinds, c.partitioner,
                                   c.num_partitions)
            for c in columns
        ]
        yield Placement(chunk.texts, chunk.kinds.copy(), parts)


class LeaderCheck:
    """The partitions keys land on that a topic description lists without a leader, or does
    not list: the smallest few, enough for :func:`~kgtool.coordinator.lookup.leader_warnings`
    to name ten and say there are more, in bounded memory whatever N is."""

    KEEP = 11

    def __init__(self, description: TopicDescription) -> None:
        leaders = description.leaders
        self.listed = np.asarray(sorted(leaders), dtype=np.int64)
        self.leaderless = np.asarray(sorted(p for p, b in leaders.items() if b is None), dtype=np.int64)
        self.missing = np.zeros(0, dtype=np.int64)
        self.no_leader = np.zeros(0, dtype=np.int64)

    def add(self, partitions: np.ndarray) -> None:
        used = np.unique(partitions[partitions >= 0])
        self.missing = np.union1d(self.missing, used[~np.isin(used, self.listed)])[: self.KEEP]
        self.no_leader = np.union1d(self.no_leader, used[np.isin(used, self.leaderless)])[: self.KEEP]

    def used(self) -> set[int]:
        """The partitions to look at in the warnings."""
        return set(self.missing.tolist()) | set(self.no_leader.tolist())


class PartitionCounts:
    """Keys per partition, accumulated chunk by chunk (one counter per partition: the caller
    bounds N with --max-partitions)."""

    def __init__(self, num_partitions: int) -> None:
        self.num_partitions = num_partitions
        self.dense = np.zeros(num_partitions, dtype=np.int64)

    def add(self, partitions: np.ndarray) -> None:
        self.dense += np.bincount(partitions[partitions >= 0], minlength=self.num_partitions)


@dataclass
class PlacementSummary:
    """Totals over all keys: how many, how many placed per column, moves and disagreements."""

    columns: list[Column]
    keys: int = 0
    null_keys: int = 0
    empty_keys: int = 0
    undetermined: list[int] = field(default_factory=list)
    counts: list[PartitionCounts] | None = None
    #: ``--from-partitions``: keys placed in both columns, and those whose partition differs.
    compared: int = 0
    moved: int = 0
    #: ``--compare``: keys on which the clients do not all agree.
    disagree: int = 0
    #: The partitions (at N) without a leader in the topic description, when one was given.
    leaders: LeaderCheck | None = None

    @property
    def moved_share(self) -> float | None:
        return self.moved / self.compared if self.compared else None


def summarize(
    placements: Iterator[Placement],
    columns: list[Column],
    *,
    histogram: bool = False,
    description: TopicDescription | None = None,
    current: int | None = None,
) -> PlacementSummary:
    """Totals of :func:`place`'s chunks (the first pass of ``partition-of``). The first
    ``current`` columns (default: all) are at today's partition count: for them ``histogram``
    counts the keys per partition, and a ``description`` finds the partitions without a leader."""
    s = PlacementSummary(columns=columns, undetermined=[0] * len(columns))
    today = columns[: len(columns) if current is None else current]
    if histogram:
        s.counts = [PartitionCounts(c.num_partitions) for c in today]
    if description is not None:
        s.leaders = LeaderCheck(description)
    for pl in placements:
        s.keys += len(pl.kinds)
        s.null_keys += int(np.count_nonzero(pl.kinds == KIND_NULL))
        s.empty_keys += int(np.count_nonzero(pl.kinds == KIND_EMPTY))
        for i, parts in enumerate(pl.partitions):
            s.undetermined[i] += int(np.count_nonzero(parts < 0))
            if i >= len(today):
                continue
            if s.counts is not None:
                s.counts[i].add(parts)
            if s.leaders is not None:
                s.leaders.add(parts)
        if len(pl.partitions) >= 2:
            moved, compared = moves(pl.partitions[0], pl.partitions[1])
            s.moved += moved
            s.compared += compared
            s.disagree += int(np.count_nonzero(disagreements(pl.partitions, pl.kinds)))
    return s


def moves(to_parts: np.ndarray, from_parts: np.ndarray) -> tuple[int, int]:
    """(keys whose partition differs, keys placed in both)."""
    both = (to_parts >= 0) & (from_parts >= 0)
    return int(np.count_nonzero(both & (to_parts != from_parts))), int(np.count_nonzero(both))


def disagreements(partitions: list[np.ndarray], kinds: np.ndarray) -> np.ndarray:
    """Per key: True when the columns do not all give the same partition (a random placement
    differs from any); a null key, random for every client, is not a disagreement."""
    first = partitions[0]
    differ = np.zeros(len(first), dtype=bool)
    for p in partitions[1:]:
        differ |= p != first
    return differ & (kinds != KIND_NULL)


def histograms(summary: PlacementSummary, topic: str, description: TopicDescription | None) -> list[Histogram]:
    """One :class:`Histogram` per counted column of a summary made with ``histogram=True``."""
    assert summary.counts is not None
    out = []
    for counts in summary.counts:
        out.append(histogram_of_counts(topic, counts.dense, description))
    return out
