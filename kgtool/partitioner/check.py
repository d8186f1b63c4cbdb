"""``partition-of --check DIR``: which partitioner wrote a partition of a data topic?

The keys of the records in ``TOPIC-P/`` were each placed on partition P by their producer. For
each candidate partitioner (the three clients' defaults, and Sarama's reference hash) this
counts the keyed records it would also have put on P with N partitions. A partitioner that
explains every keyed record is the answer. If none does, but every record is explained at N *or*
at some earlier count M (a topic only grows), the topic was grown from M to N while that
producer kept writing (``--from-partitions M`` lists the keys that moved). Otherwise it is a
custom partitioner (``partitioner.class``), explicit partitions, or keys serialized otherwise.

Evidence is grouped by producer id (``RecordBatch.producer_id``; -1 for producers without
idempotence and for message format v0/v1): two producers of one topic can use different
clients. Null keys are counted but are no evidence (every client places them at random or
sticky); neither is an empty key for librdkafka's consistent_random.

Finding M: a record with reduced hash ``a`` (see :class:`~kgtool.partitioner.rules.Reduction`)
sits on P under M partitions iff ``a % M == P``, i.e. M divides ``a - P`` and ``M > P``. The
first record not explained at N gives the candidates (the divisors of ``a - P`` between P and
N, a few hundred at most for a 32-bit number); every later one filters them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from kgtool.codec.model import RecordBatch, ScanProblem
from kgtool.errors import InputError, UsageError
from kgtool.partitioner import keys as _keys
from kgtool.partitioner.rules import PARTITIONERS, HashFamily, Partitioner, Reduction, hash_key
from kgtool.storage.files import topic_partition_of_dir

#: The partitioners --check tries, by label (the clients' defaults and Sarama's reference hash).
CANDIDATES: dict[str, Partitioner] = {
    "java": PARTITIONERS["java"],
    "librdkafka": PARTITIONERS["consistent_random"],
    "sarama": PARTITIONERS["sarama"],
    "sarama-reference": PARTITIONERS["sarama-reference"],
}
#: Who else computes the same partitions, for the verdict's message.
SAME_AS = {
    "java": "the Java producer, or librdkafka with partitioner=murmur2_random",
    "librdkafka": "librdkafka's default partitioner consistent_random (kcat, confluent-kafka-*)",
    "sarama": "Sarama's default hash partitioner, or librdkafka with partitioner=fnv1a_random",
    "sarama-reference": "Sarama's NewReferenceHashPartitioner",
}

#: Topics whose keys no producer partitioner places (the coordinators and KRaft do).
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata")

#: Records (and key bytes) hashed per batch of work: bounded memory whatever the partition's size.
_WORK = 1 << 16
_WORK_BYTES = 64 << 20
#: Producer ids followed one by one; the records of any further ones are pooled (producer_id
#: None in the output), so that a partition written by millions of short-lived producers is
#: checked in bounded memory.
MAX_PRODUCERS = 10_000


def parse_partition_dir(path: str) -> tuple[str, int]:
    """The (topic, partition) named by a partition directory, as the broker reads it.

    Raises:
        InputError: not a directory, or a name that is not ``TOPIC-PARTITION``; an internal topic.
    """
    if not os.path.isdir(path):
        if os.path.exists(path):
            raise InputError(f"{path}: not a directory; --check takes a partition directory such as orders-3/")
        raise InputError(f"{path}: no such directory")
    name = os.path.basename(os.path.normpath(os.path.abspath(path)))
    named = topic_partition_of_dir(name)
    if named is None:
        raise InputError(
            f"{path}: {name!r} is not a partition directory (TOPIC-PARTITION, e.g. orders-3, as in a "
            "broker's log.dirs)"
        )
    topic = named[0]
    if topic in INTERNAL_TOPICS:
        raise InputError(
            f"{path}: {topic} is an internal topic; its records are placed by the "
            f"{'KRaft controller' if topic == '__cluster_metadata' else 'coordinators'}, not by a "
            "producer's partitioner (see kgtool coordinator-of)"
        )
    return named


def reduced(partitioner: Partitioner, hashes: np.ndarray) -> np.ndarray:
    """The non-negative numbers ``partitioner`` takes modulo N, as int64."""
    h = np.asarray(hashes, dtype=np.uint32)
    if partitioner.reduction is Reduction.MASK:
        return (h & np.uint32(0x7FFFFFFF)).astype(np.int64)
    if partitioner.reduction is Reduction.UNSIGNED:
        return h.astype(np.int64)
    return np.abs(h.view(np.int32).astype(np.int64))


def hash_many(family: HashFamily, keys: list[bytes]) -> np.ndarray:
    """Unsigned 32-bit hashes of many keys (the compiled loop when built)."""
    out = np.zeros(len(keys), dtype=np.uint32)
    sp = _keys.speedups()
    if sp is not None:
        sp.hash_keys(int(family), keys, out)
    else:
        for i, k in enumerate(keys):
            out[i] = hash_key(family, k)
    return out


class GrowthTracker:
    """The earlier partition counts M (P < M < N) under which every record seen so far, not
    explained at N, sits on partition P."""

    __slots__ = ("partition", "num_partitions", "candidates", "seen")

    def __init__(self, partition: int, num_partitions: int) -> None:
        self.partition = partition
        self.num_partitions = num_partitions
        self.candidates: np.ndarray | None = None  # None: no constraint yet
        self.seen = 0

    @property
    def dead(self) -> bool:
        return self.candidates is not None and len(self.candidates) == 0

    def add(self, values: np.ndarray) -> None:
        """Records (their reduced hashes) that partition N does not explain."""
        if self.dead or len(values) == 0:
            return
        self.seen += len(values)
        p = self.partition
        if self.candidates is None:
            if np.any(values < p):  # a % M <= a < P for every M
                self.candidates = np.zeros(0, dtype=np.int64)
                return
            above = values[values > p]
            if len(above) == 0:  # all equal to P: any M > P; still unconstrained
                return
            self.candidates = self._divisors_between(int(above[0]) - p, p, self.num_partitions)
        keep = [m for m in self.candidates.tolist() if np.all(values % m == p)]
        self.candidates = np.asarray(keep, dtype=np.int64)

    @staticmethod
    def _divisors_between(x: int, lo: int, hi: int) -> np.ndarray:
        """Divisors d of ``x`` (> 0) with ``lo < d < hi``."""
        r = np.arange(1, math.isqrt(x) + 1, dtype=np.int64)
        small = r[x % r == 0]
        divs = np.unique(np.concatenate([small, x // small]))
        return divs[(divs > lo) & (divs < hi)]

    def result(self) -> list[int]:
        """The surviving counts, largest first; ``[]`` if none (or if nothing needed explaining).

        The largest is the best guess: every divisor of the true M above P survives too (``a % M
        == P`` implies ``a % d == P`` for ``d | M``, ``d > P``), while its multiples do not."""
        if self.seen == 0 or self.candidates is None:
            # Every unexplained record hashed to exactly P: any M > P fits; the smallest is shown.
            return [self.partition + 1] if self.seen and self.partition + 1 < self.num_partitions else []
        return sorted(self.candidates.tolist(), reverse=True)


@dataclass
class Evidence:
    """What the records of one producer (or of the whole partition) say about their partitioner."""

    producer_id: int | None
    partition: int
    num_partitions: int
    records: int = 0
    keyed: int = 0
    null_keys: int = 0
    empty_keys: int = 0
    matching: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CANDIDATES, 0))
    undetermined: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CANDIDATES, 0))
    growth: dict[str, GrowthTracker] = field(default_factory=dict)
    first_offset: int | None = None
    last_offset: int | None = None

    def __post_init__(self) -> None:
        if not self.growth:
            self.growth = {label: GrowthTracker(self.partition, self.num_partitions) for label in CANDIDATES}

    def share(self, label: str) -> float | None:
        denominator = self.keyed - self.undetermined[label]
        return self.matching[label] / denominator if denominator else None

    def explains_all(self, label: str) -> bool:
        return self.matching[label] + self.undetermined[label] == self.keyed


@dataclass
class Verdict:
    """``kind``: ``partitioner`` (one or more explain every keyed record), ``partition_count_change``,
    ``mixed`` (producers disagree), ``custom``, or ``no_keyed_records``."""

    kind: str
    partitioners: list[str]
    message: str
    from_partitions: list[int] | None = None


def verdict_of(ev: Evidence, *, growth: bool = True) -> Verdict:
    """The verdict on one body of evidence (a producer, or the partition as a whole); without
    ``growth``, a partition-count change is not considered."""
    n, p = ev.num_partitions, ev.partition
    if ev.keyed == 0:
        return Verdict("no_keyed_records", [], "no keyed records: nothing tells the partitioners apart "
                       "(a null key goes to a sticky or random partition with every client)")
    explaining = [label for label in CANDIDATES if ev.explains_all(label)]
    if explaining:
        who = "; ".join(f"{label} ({SAME_AS[label]})" for label in explaining)
        if len(explaining) == 1:
            msg = f"{explaining[0]}: all {ev.keyed} keyed records are where {SAME_AS[explaining[0]]} puts them"
        else:
            msg = (f"{len(explaining)} partitioners explain all {ev.keyed} keyed records (too few keys "
                   f"to tell them apart): {who}")
        return Verdict("partitioner", explaining, msg)
    for label in CANDIDATES if growth else ():
        counts = ev.growth[label].result()
        if counts:
            m = counts[0]
            others = f" (or {', '.join(map(str, counts[1:5]))}{' ...' if len(counts) > 5 else ''})" if len(counts) > 1 else ""
            weak = (" With 1 partition every record went to partition 0, so this would explain any keys: "
                    "weak evidence." if m == 1 else "")
            return Verdict(
                "partition_count_change", [label],
                f"{label}, and the topic grew from {m}{others} to {n} partitions: "
                f"{ev.keyed - ev.matching[label] - ev.undetermined[label]} keyed records sit where {label} "
                f"put them with {m} partitions, the others where it puts them with {n}; the keys written "
                f"before the change moved (try --from-partitions {m}).{weak}",
                from_partitions=counts,
            )
    best = max(CANDIDATES, key=lambda label: ev.share(label) or 0.0)
    share = ev.share(best) or 0.0
    return Verdict(
        "custom", [],
        f"no built-in partitioner explains the keys of partition {p} (best: {best}, {100 * share:.1f}% of "
        f"keyed records; by chance about {100 / n:.1f}%): a custom partitioner (partitioner.class), "
        "explicit partitions, or keys serialized differently than they read",
    )


@dataclass
class CheckResult:
    """Everything ``--check`` reports."""

    directory: str
    topic: str
    partition: int
    num_partitions: int
    overall: Evidence
    producers: list[Evidence]
    verdict: Verdict
    segments: int = 0


#: The key of the pooled producers in ``by_pid`` (producer ids are >= -1).
_POOLED = -(2**63)


class _Pending:
    """Record keys collected across batches, hashed together every :data:`_WORK` records."""

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.pids: list[int] = []
        self.size = 0


def check_partition(
    directory: str,
    num_partitions: int,
    batches: Iterable[RecordBatch | ScanProblem],
    *,
    topic: str,
    partition: int,
    on_problem=None,
    segments: int = 0,
) -> CheckResult:
    """Weigh the keys of ``batches`` (from the segments of ``directory``) against every candidate.

    Args:
        batches: what the segment scanner yields; problems go to ``on_problem`` and their batches
            are skipped (the keys of intact batches still count).

    Raises:
        UsageError: the directory's partition does not exist with ``num_partitions``.
    """
    if partition >= num_partitions:
        raise UsageError(
            f"{directory}: partition {partition} does not exist with {num_partitions} partitions "
            "(--partitions is the topic's partition count)"
        )
    overall = Evidence(None, partition, num_partitions)
    by_pid: dict[int, Evidence] = {}
    pending = _Pending()
    families = sorted({c.family for c in CANDIDATES.values()})

    def flush() -> None:
        if not pending.keys:
            return
        hashes = {f: hash_many(f, pending.keys) for f in families}
        pids = np.asarray(pending.pids, dtype=np.int64)
        empty = np.fromiter((len(k) == 0 for k in pending.keys), dtype=bool, count=len(pending.keys))
        uniq, inverse = np.unique(pids, return_inverse=True)
        groups = [by_pid[int(u)] for u in uniq]
        for label, part in CANDIDATES.items():
            values = reduced(part, hashes[part.family])
            ok = values % num_partitions == partition
            undetermined = empty if part.empty_is_random else np.zeros(len(ok), dtype=bool)
            ok &= ~undetermined
            overall.matching[label] += int(np.count_nonzero(ok))
            overall.undetermined[label] += int(np.count_nonzero(undetermined))
            per_match = np.bincount(inverse, weights=ok, minlength=len(uniq))
            per_und = np.bincount(inverse, weights=undetermined, minlength=len(uniq))
            unexplained = ~ok & ~undetermined
            overall.growth[label].add(values[unexplained])
            for g, ev in enumerate(groups):
                ev.matching[label] += int(per_match[g])
                ev.undetermined[label] += int(per_und[g])
            if np.any(unexplained):
                for g in np.unique(inverse[unexplained]).tolist():
                    tracker = groups[g].growth[label]
                    if not tracker.dead:
                        tracker.add(values[unexplained & (inverse == g)])
        pending.keys.clear()
        pending.pids.clear()
        pending.size = 0

    for item in batches:
        if isinstance(item, ScanProblem):
            if on_problem is not None:
                on_problem(item)
            continue
        if item.is_control:
            continue
        pid = item.producer_id
        ev = by_pid.get(pid)
        if ev is None:
            if len(by_pid) >= MAX_PRODUCERS:
                pid = _POOLED
                ev = by_pid.get(pid)
            if ev is None:
                ev = by_pid[pid] = Evidence(None if pid == _POOLED else pid, partition, num_partitions)
        for r in item.records:
            for e in (overall, ev):
                e.records += 1
                if e.first_offset is None:
                    e.first_offset = r.offset
                e.last_offset = r.offset
            if r.key is None:
                overall.null_keys += 1
                ev.null_keys += 1
                continue
            key = bytes(r.key)
            overall.keyed += 1
            ev.keyed += 1
            if not key:
                overall.empty_keys += 1
                ev.empty_keys += 1
            pending.keys.append(key)
            pending.pids.append(pid)
            pending.size += len(key)
            if len(pending.keys) >= _WORK or pending.size >= _WORK_BYTES:
                flush()
    flush()
    producers = sorted(by_pid.values(), key=lambda e: (e.producer_id is None, -e.records, e.producer_id or 0))
    return CheckResult(
        directory=directory,
        topic=topic,
        partition=partition,
        num_partitions=num_partitions,
        overall=overall,
        producers=producers,
        verdict=overall_verdict(overall, producers),
        segments=segments,
    )


def overall_verdict(overall: Evidence, producers: list[Evidence]) -> Verdict:
    """The partition's verdict. One partitioner explaining every record wins; then producers
    that are each explained by a partitioner but not the same one (two clients writing one
    topic); then a partition-count change; then producers each explained, some after a change."""
    v = verdict_of(overall)
    if v.kind in ("partitioner", "no_keyed_records"):
        return v
    keyed = [e for e in producers if e.keyed]
    if len(keyed) > 1:
        plain = [(e, verdict_of(e, growth=False)) for e in keyed]
        if all(pv.kind == "partitioner" for _, pv in plain):
            return _mixed(plain)
        if v.kind == "custom":
            grown = [(e, verdict_of(e)) for e in keyed]
            if all(pv.kind in ("partitioner", "partition_count_change") for _, pv in grown):
                return _mixed(grown)
    return v


def _mixed(per: list[tuple[Evidence, Verdict]]) -> Verdict:
    shown = "; ".join(
        f"producer {e.producer_id}: {', '.join(pv.partitioners)}"
        + (f" (grown from {pv.from_partitions[0]} partitions)" if pv.from_partitions else "")
        for e, pv in per[:10]
    )
    labels = sorted({label for _, pv in per for label in pv.partitioners})
    return Verdict("mixed", labels, f"the producers disagree: {shown}" + (" ..." if len(per) > 10 else ""))
