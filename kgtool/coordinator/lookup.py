"""Map ids to coordinator partitions (and brokers), and count the load per coordinator.

The domain side of ``kgtool coordinator-of``: pure data in, dataclasses out.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from kgtool.coordinator.idlist import IdList, id_list_from_strings
from kgtool.coordinator.partitioning import (
    CONSUMER_OFFSETS_TOPIC,
    DEFAULT_OFFSETS_PARTITIONS,
    DEFAULT_SHARE_STATE_PARTITIONS,
    DEFAULT_TRANSACTION_PARTITIONS,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    check_partition_count,
    hashcodes_from_units,
    partitions_from_hashcodes,
    share_state_key,
)
from kgtool.coordinator.topic_description import TopicDescription
from kgtool.errors import InputError, UsageError


class KeyKind(enum.Enum):
    """What the ids are, hence which internal topic and which broker setting apply."""

    GROUP = ("group_id", CONSUMER_OFFSETS_TOPIC, DEFAULT_OFFSETS_PARTITIONS, "offsets.topic.num.partitions")
    TRANSACTIONAL_ID = (
        "transactional_id",
        TRANSACTION_STATE_TOPIC,
        DEFAULT_TRANSACTION_PARTITIONS,
        "transaction.state.log.num.partitions",
    )
    SHARE_STATE = (
        "group_id",
        SHARE_GROUP_STATE_TOPIC,
        DEFAULT_SHARE_STATE_PARTITIONS,
        "share.coordinator.state.topic.num.partitions",
    )

    def __init__(self, field_name: str, topic: str, default_partitions: int, setting: str) -> None:
        self.field_name = field_name
        self.topic = topic
        self.default_partitions = default_partitions
        self.setting = setting


@dataclass
class SharePartition:
    """The share partition whose state is looked up (KIP-932 ``SharePartitionKey``)."""

    topic_id: str
    partition: int


@dataclass
class CoordinatorLookup:
    """The partition (and, with a topic description, the broker) serving each id."""

    kind: KeyKind
    topic: str
    num_partitions: int
    ids: list[str]
    partitions: np.ndarray
    coordinators: list[int | None] | None = None
    hashed_keys: list[str] | None = None  # share-state keys, when they differ from the ids
    warnings: list[str] = field(default_factory=list)


def resolve_partition_count(
    kind: KeyKind, partitions: int | None, description: TopicDescription | None
) -> int:
    """The partition count to use: the option, else the description's, else the default.

    Raises:
        UsageError: a non-positive count, or one that contradicts the description.
        InputError: a description of another topic.
    """
    if description is not None and description.topic not in (None, kind.topic):
        raise InputError(
            f"{description.source}: describes topic {description.topic!r}, but "
            f"{kind.field_name.replace('_', ' ')}s are served by {kind.topic!r}"
        )
    count = partition_count(partitions, description)
    return kind.default_partitions if count is None else count


def partition_count(partitions: int | None, description: TopicDescription | None, option: str = "--partitions") -> int | None:
    """The option's count, checked against the description; else the description's
    ``PartitionCount`` (or its highest partition + 1); None when neither gives one.

    Raises:
        UsageError: a count that is not a positive int32, or one that contradicts the description.
    """
    if partitions is not None:
        check_partition_count(partitions, option)
        if description is not None and description.partition_count not in (None, partitions):
            raise UsageError(
                f"{option} {partitions} contradicts {description.source}, which says "
                f"PartitionCount: {description.partition_count}"
            )
        return partitions
    if description is not None:
        if description.partition_count is not None:
            return check_partition_count(description.partition_count, "PartitionCount")
        if description.leaders:
            return check_partition_count(max(description.leaders) + 1, f"{description.source}: partition count")
    return None


def locate(
    ids: IdList,
    *,
    kind: KeyKind = KeyKind.GROUP,
    partitions: int | None = None,
    description: TopicDescription | None = None,
    share_partition: SharePartition | None = None,
) -> CoordinatorLookup:
    """Compute, for every id, the partition of ``kind.topic`` that serves it.

    Raises:
        UsageError, InputError: see :func:`resolve_partition_count`; a share lookup without
        its topic partition.
    """
    n = resolve_partition_count(kind, partitions, description)
    hashed_keys = None
    if kind is KeyKind.SHARE_STATE:
        if share_partition is None:
            raise UsageError("a share-state lookup needs the share partition (TOPIC_ID:PARTITION)")
        hashed_keys = [
            share_state_key(g, share_partition.topic_id, share_partition.partition) for g in ids.ids
        ]
        keyed = id_list_from_strings(hashed_keys)
    else:
        keyed = ids
    hashcodes = hashcodes_from_units(keyed.units, keyed.starts, keyed.lengths)
    parts = partitions_from_hashcodes(hashcodes, n)
    result = CoordinatorLookup(
        kind=kind,
        topic=kind.topic,
        num_partitions=n,
        ids=ids.ids,
        partitions=parts,
        hashed_keys=hashed_keys,
        warnings=list(ids.warnings),
    )
    if description is not None:
        # Only the partitions ids land on are looked up: a count of 2**31 - 1 needs no table.
        hit = parts.tolist()
        result.coordinators = list(map(description.leaders.get, hit))
        result.warnings.extend(
            leader_warnings(
                description, set(hit), "their groups have no coordinator right now (COORDINATOR_NOT_AVAILABLE)"
            )
        )
    return result


def leader_warnings(description: TopicDescription, used: set[int], leaderless_effect: str) -> list[str]:
    """Warnings about the partitions in ``used`` that the description lists without a leader,
    or does not list; ``leaderless_effect`` says what a missing leader means for the user."""
    warnings = []
    missing = sorted(p for p in used if p not in description.leaders)
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        warnings.append(f"{description.source}: no leader listed for partition(s) {shown}")
    leaderless = sorted(p for p in used if p in description.leaders and description.leaders[p] is None)
    if leaderless:
        warnings.append(f"partition(s) {', '.join(map(str, leaderless[:10]))} have no leader: {leaderless_effect}")
    return warnings


@dataclass
class Histogram:
    """How many ids land on each partition (all partitions listed) and on each broker."""

    topic: str
    num_partitions: int
    total: int
    per_partition: list[tuple[int, int, int | None]]  # (partition, ids, leader)
    per_broker: list[tuple[int | None, int, int]] | None  # (broker, ids, partitions led)
    mean: float
    stddev: float
    min: int
    max: int


def histogram(
    lookup: CoordinatorLookup, description: TopicDescription | None, *, max_partitions: int | None = None
) -> Histogram:
    """Count ids per partition and, with a description, per coordinator broker.

    Raises:
        UsageError: more partitions than ``max_partitions`` (the histogram has a row for each).
    """
    n = lookup.num_partitions
    check_histogram_size(n, max_partitions, lookup.topic)
    counts = np.bincount(lookup.partitions, minlength=n) if len(lookup.partitions) else np.zeros(n, dtype=np.int64)
    return histogram_of_counts(lookup.topic, counts, description)


def check_histogram_size(num_partitions: int, max_partitions: int | None, topic: str | None) -> None:
    """Refuse a histogram of more than ``max_partitions`` rows (one per partition).

    Raises:
        UsageError: naming --max-partitions.
    """
    if max_partitions is not None and num_partitions > max_partitions:
        of = f" of {topic}" if topic else ""
        raise UsageError(
            f"--histogram lists every partition: {num_partitions:,} partitions{of} are more than "
            f"--max-partitions {max_partitions:,} (raise it if this machine has the memory)"
        )


def histogram_of_counts(topic: str, counts: np.ndarray, description: TopicDescription | None) -> Histogram:
    """A :class:`Histogram` from ``counts[p]``, the ids (or keys) on each partition ``p``."""
    n = len(counts)
    counts = np.asarray(counts, dtype=np.int64)
    leaders = [description.leaders.get(p) for p in range(n)] if description is not None else [None] * n
    per_partition = [(p, c, leaders[p]) for p, c in enumerate(counts.tolist())]
    per_broker = None
    if description is not None:
        by_broker: dict[int | None, list[int]] = {}
        for p, c, leader in per_partition:
            acc = by_broker.setdefault(leader, [0, 0])
            acc[0] += c
            acc[1] += 1
        per_broker = sorted(
            ((b, v[0], v[1]) for b, v in by_broker.items()),
            key=lambda t: (t[0] is None, t[0] if t[0] is not None else 0),
        )
    return Histogram(
        topic=topic,
        num_partitions=n,
        total=int(counts.sum()),
        per_partition=per_partition,
        per_broker=per_broker,
        mean=float(counts.mean()),
        stddev=float(counts.std()),
        min=int(counts.min()),
        max=int(counts.max()),
    )
