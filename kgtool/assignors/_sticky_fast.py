"""The sticky assignors on integer arrays: same output as :mod:`._sticky_reference`, faster.

Partitions are integers ``g = offset[topic] + partition`` with topics in ``String.compareTo``
order, so ascending ``g`` is the order of ``getUnassignedPartitions`` (topic, then partition).
Members are positions in the ``subscriptions`` ``HashMap`` order.

Covered here (anything else returns None and the reference port runs):

- ``ConstrainedAssignmentBuilder`` (identical subscriptions) when the assignment is not
  rack-aware: the owned-partition pass is a loop over members (not partitions), and the
  round-robin of ``assignRoundRobin`` is computed in closed form. Members below ``minQuota``
  (``unfilledMembersWithUnderMinQuotaPartitions``, sorted by id) are served in passes: pass
  ``r`` gives one partition to every member whose deficit is at least ``r``, in id order, and a
  member leaves the list (to the end of ``unfilledMembersWithExactlyMinQuotaPartitions``) when
  its deficit is met. The partitions left over go one each to the members polled from the head
  of that second list.
- ``GeneralAssignmentBuilder`` when not rack-aware: see :func:`general`.
"""

from __future__ import annotations

import numpy as np

from kgtool.assignors import _sticky_reference as ref
from kgtool.assignors._sticky_java import java_string_key

TP = tuple[str, int]


class Layout:
    """Topics in Java order with partition offsets; members by position."""

    def __init__(self, partitions_per_topic: dict[str, int], members: list[str]) -> None:
        key = java_string_key(list(partitions_per_topic) + members)
        self.topics = sorted(partitions_per_topic, key=key)
        self.topic_index = {t: i for i, t in enumerate(self.topics)}
        counts = np.array([partitions_per_topic[t] for t in self.topics], dtype=np.int64)
        self.counts = counts
        self.offsets = np.zeros(len(self.topics) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self.total = int(self.offsets[-1])
        self.offset_of = {t: int(self.offsets[i]) for i, t in enumerate(self.topics)}
        # topic index and partition of every global id
        self.topic_of = np.repeat(np.arange(len(self.topics), dtype=np.int64), counts)
        self.partition_of = np.arange(self.total, dtype=np.int64) - self.offsets[:-1][self.topic_of]
        self.members = members
        self.member_index = {m: i for i, m in enumerate(members)}
        order = sorted(range(len(members)), key=lambda i: key(members[i]))
        self.member_rank = np.empty(len(members), dtype=np.int64)
        self.member_rank[order] = np.arange(len(members))
        self.members_sorted = order  # member positions in String.compareTo order
        self._names = np.array(self.topics, dtype=object)

    def to_ids(self, tps) -> list[int]:
        off = self.offset_of
        return [off[t] + p for t, p in tps if t in off]

    def to_tuples(self, ids: np.ndarray) -> list[TP]:
        if len(ids) == 0:
            return []
        return list(zip(self._names[self.topic_of[ids]].tolist(), self.partition_of[ids].tolist()))


def _claims(inp: ref.StickyInput, lay: Layout):
    """Owned partitions per member (positions), or None when some partition is claimed twice."""
    owned_ids = []
    n = 0
    for m in lay.members:
        ids = lay.to_ids(inp.raw_owned_of[m])
        owned_ids.append(ids)
        n += len(ids)
    if n:
        flat = np.fromiter((g for ids in owned_ids for g in ids), dtype=np.int64, count=n)
        if np.bincount(flat, minlength=lay.total).max() > 1:
            return None
    return owned_ids


def constrained(inp: ref.StickyInput, lay: Layout, owned_ids: list[list[int]], multi_owned: set[int]):
    """``ConstrainedAssignmentBuilder.build`` without racks; returns (assignment, transferring)."""
    n = len(lay.members)
    total = lay.total
    min_q, max_q = total // n, -(-total // n)
    expected_over = total % n
    current_over = 0
    kept: list[np.ndarray] = [None] * n  # type: ignore[list-item]
    under: list[int] = []
    exactly: list[int] = []
    revoked_by = np.full(total, -1, dtype=np.int64)  # maybeRevokedPartitions
    assigned = np.zeros(total, dtype=bool)
    topic_rank = lay.topic_of  # topics are numbered in Java order already
    for i in range(n):  # consumerToOwnedPartitions: the same HashMap order as subscriptions
        ids = owned_ids[i]
        if ids:
            arr = np.asarray(ids, dtype=np.int64)
            # Comparator.comparing(TopicPartition::partition).thenComparing(TopicPartition::topic)
            arr = arr[np.lexsort((topic_rank[arr], lay.partition_of[arr]))]
            if multi_owned:
                arr = arr[~np.isin(arr, np.fromiter(multi_owned, dtype=np.int64))]
        else:
            arr = np.empty(0, dtype=np.int64)
        size = len(arr)
        if size < min_q:
            keep = arr
            under.append(i)
        elif size >= max_q and current_over < expected_over:
            current_over += 1
            if current_over == expected_over:
                exactly.clear()
            keep = arr[:max_q]
            revoked_by[arr[max_q:]] = i
        else:
            keep = arr[:min_q]
            revoked_by[arr[min_q:]] = i
            if current_over < expected_over:
                exactly.append(i)
        kept[i] = keep
        assigned[keep] = True
    unassigned = np.flatnonzero(~assigned)
    rank = lay.member_rank
    under.sort(key=lambda i: rank[i])
    exactly.sort(key=lambda i: rank[i])

    # assignRoundRobin, phase A: passes over `under` (sorted), member i served while r <= deficit.
    counts = np.array([len(kept[i]) for i in range(n)], dtype=np.int64)
    under_arr = np.array(under, dtype=np.int64)
    deficit = min_q - counts[under_arr] if len(under_arr) else np.empty(0, dtype=np.int64)
    demand = int(deficit.sum())
    if len(unassigned) < demand:  # cannot happen for consistent quotas; mirror Java's checks
        raise ref.StickyAssignorFailure(
            "Kafka's sticky assignor throws IllegalStateException: a member doesn't reach minQuota partitions")
    recipients = np.empty(len(unassigned), dtype=np.int64)
    if demand:
        member_rep = np.repeat(np.arange(len(under_arr)), deficit)
        starts = np.repeat(np.cumsum(deficit) - deficit, deficit)
        round_no = np.arange(demand) - starts
        order = np.lexsort((member_rep, round_no))
        recipients[:demand] = under_arr[member_rep[order]]
        # members reach minQuota in pass order: by deficit, then id order
        done = under_arr[np.lexsort((np.arange(len(under_arr)), deficit))]
        exactly.extend(done.tolist())
    # phase B: one partition each to members polled from the head of `exactly`
    leftover = len(unassigned) - demand
    if leftover > len(exactly):
        raise ref.StickyAssignorFailure(
            "Kafka's sticky assignor throws IllegalStateException: No more unfilled consumers to be assigned.")
    if leftover:
        recipients[demand:] = exactly[:leftover]
        current_over += int(np.count_nonzero(counts[exactly[:leftover]] + 1 == max_q))

    # per-member new partitions, in assignment order
    order = np.argsort(recipients, kind="stable")
    new_sorted = unassigned[order]
    bounds = np.searchsorted(recipients[order], np.arange(n + 1))
    prev = revoked_by[unassigned]
    moving = (prev >= 0) & (prev != recipients)
    if multi_owned:
        moving |= np.isin(unassigned, np.fromiter(multi_owned, dtype=np.int64))
    transferring = {}
    if moving.any():
        for g, c in zip(unassigned[moving].tolist(), recipients[moving].tolist()):
            transferring[g] = c
    assignment = []
    for i in range(n):
        new = new_sorted[bounds[i]:bounds[i + 1]]
        assignment.append((kept[i], new))
    return assignment, transferring


def _subscriptions_equal(inp: ref.StickyInput) -> bool:
    """The subscription test of ``allSubscriptionsEqual`` (a leading empty one is skipped)."""
    first: frozenset[str] | None = None
    first_list = None
    for m in inp.members:
        topics = inp.topics_of[m]
        if not first:
            first = frozenset(topics)
            first_list = topics if len(first) == len(topics) else None
            continue
        if first_list is not None and (topics is first_list or topics == first_list):
            continue
        if not (len(topics) == len(first) and first.issuperset(topics)):
            return False
    return True


def assign(inp: ref.StickyInput, *, cooperative: bool):
    """Both assignors' result as ``{member: [(topic, partition), ...]}``, or None (use the reference).

    Returns (assignment after any cooperative adjustment, transferring as tuples).
    """
    if any(inp.rack_of.get(m) for m in inp.members):
        return None
    members = inp.members
    if not _subscriptions_equal(inp):
        return None
    lay = Layout(inp.partitions_per_topic, members)
    owned_ids = _claims(inp, lay)
    multi: set[int] = set()
    if owned_ids is None:
        # Some partition is claimed twice: resolve claims exactly as Java does, on tuples.
        consumer_to_owned: dict[str, list[TP]] = {}
        multi_t: set[TP] = set()
        ref.all_subscriptions_equal(inp, consumer_to_owned, multi_t)
        owned_ids = [lay.to_ids(consumer_to_owned[m]) for m in members]
        multi = set(lay.to_ids(multi_t))
    if lay.total == 0 or not members:
        return None
    result, transferring = constrained(inp, lay, owned_ids, multi)
    out = {}
    for i, m in enumerate(members):
        kept, new = result[i]
        if cooperative and transferring:
            new = np.array([g for g in new.tolist() if transferring.get(g) != i], dtype=np.int64)
        out[m] = lay.to_tuples(kept) + lay.to_tuples(new)
    moving = {(lay.topics[lay.topic_of[g]], int(lay.partition_of[g])): members[c] for g, c in transferring.items()}
    return out, moving
