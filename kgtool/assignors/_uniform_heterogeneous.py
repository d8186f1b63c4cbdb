"""``UniformHeterogeneousAssignmentBuilder`` of Kafka's group coordinator (Kafka 4.x).

Source: ``org.apache.kafka.coordinator.group.assignor.UniformHeterogeneousAssignmentBuilder``
(``build``, ``maybeRevokePartitions``, ``computeUnassignedPartitions``,
``assignRemainingPartitions``, ``balance``, ``balanceTopics``, ``balanceTopic``, the inner
``MemberAssignmentBalancer``). Members are numbered in ``GroupSpec.memberIds()`` order; every
tie-break is by that index or by topic id (``Uuid.compareTo``), so no hash order enters except
the member numbering itself.
"""

from __future__ import annotations

import numpy as np

from kgtool.assignors._server import ServerGroup, topic_uuid

#: UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT
MAX_ITERATION_COUNT = 16


class _Balancer:
    """``MemberAssignmentBalancer``: least- and most-loaded ranges over members sorted by load."""

    __slots__ = (
        "sizes", "sorted_members", "least_end", "least_count", "next_least",
        "most_start", "most_end", "most_count", "next_most",
    )

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted_members: list[int] = []

    def initialize(self, members: list[int]) -> int:
        sizes = self.sizes
        # memberComparator: assigned partitions ascending, then member index ascending.
        sm = sorted(members, key=lambda i: (sizes[i], i))
        self.sorted_members = sm
        self.least_end = 0
        self.least_count = sizes[sm[0]] - 1
        self.next_least = 0
        self.most_start = len(sm)
        self.most_end = len(sm)
        self.most_count = sizes[sm[-1]] + 1
        self.next_most = len(sm) - 1
        return sizes[sm[-1]] - sizes[sm[0]]

    def next_least_loaded(self) -> int:
        sm = self.sorted_members
        if self.next_least >= self.least_end:
            self.least_count += 1
            sizes = self.sizes
            n = len(sm)
            while self.least_end < n and sizes[sm[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        m = sm[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self) -> int:
        sm = self.sorted_members
        sizes = self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[sm[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[sm[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = sm[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self) -> None:
        sm = self.sorted_members
        i = self.next_most + 1
        m = sm[i]
        sm[i] = sm[self.most_end - 1]
        sm[self.most_end - 1] = m
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


def heterogeneous(sg: ServerGroup) -> None:
    """``UniformHeterogeneousAssignmentBuilder.build``, updating ``sg.owner`` in place.

    Layout: the builder's ``targetAssignmentPartitionOwners`` (one owner array per topic) and
    ``memberTargetAssignmentSizes`` are the whole state (``ServerGroup`` has applied
    ``maybeRevokePartitions``); the per-member maps Java also keeps follow from the owners.
    """
    member_ids = sg.member_ids
    partitions = sg.partitions
    subscribers: dict[str, list[int]] = {}
    for i, mid in enumerate(member_ids):
        for t in sg.subscriptions[mid]:
            lst = subscribers.get(t)
            if lst is None:
                subscribers[t] = [i]
            else:
                lst.append(i)
    if not subscribers:
        sg.owner[:] = -1
        return

    sizes = sg.sizes.tolist()
    owners = {t: sg.topic_owners(t).tolist() for t in subscribers}

    def topic_key(t: str):
        # topicComparator: partitions per subscriber descending, subscriber count ascending,
        # topic id ascending (Uuid.compareTo: signed msb, then signed lsb).
        k = len(subscribers[t])
        _, msb, lsb = topic_uuid(t)
        return (-(partitions[t] / k), k, msb, lsb)

    # computeUnassignedPartitions + assignRemainingPartitions.
    unassigned: dict[str, list[int] | range] = {}
    for t in subscribers:
        own = owners[t]
        n = len(own)
        free_count = own.count(-1)
        if free_count == n:
            unassigned[t] = range(n)
        elif free_count:
            unassigned[t] = [p for p in range(n) if own[p] == -1]
    for t in sorted(unassigned, key=topic_key):
        _assign_remaining(unassigned[t], owners[t], subscribers[t], sizes)

    # balance: only topics with two or more subscribers can move.
    movable = [t for t in subscribers if len(subscribers[t]) >= 2]
    if movable:
        _balance_topics(sorted(movable, key=topic_key), subscribers, owners, _Balancer(sizes), sizes)
    for t, own in owners.items():
        sg.topic_owners(t)[:] = own


def _assign_remaining(free, own: list[int], subs: list[int], sizes: list[int]) -> None:
    """One topic of ``assignRemainingPartitions``: each free partition, in order, goes to
    ``MemberAssignmentBalancer.nextLeastLoadedMember()``.

    The balancer hands out its least-loaded range ``[0, leastLoadedRangeEnd)`` member by member,
    then raises the level and widens the range; members outside the range are untouched, so
    whole passes over the range are assigned at once (slices instead of one call per partition).
    """
    # MemberAssignmentBalancer.initialize: memberComparator (size, then index) order.
    sm = sorted(subs, key=lambda i: (sizes[i], i))
    count = len(sm)
    least_end = 0
    least_count = sizes[sm[0]] - 1
    nxt = 0
    pos = 0
    q = len(free)
    contiguous = isinstance(free, range)
    while pos < q:
        if nxt >= least_end:
            least_count += 1
            while least_end < count and sizes[sm[least_end]] == least_count:
                least_end += 1
            nxt = 0
        take = min(least_end - nxt, q - pos)
        chunk = sm[nxt : nxt + take]
        if contiguous:
            start = free[pos]
            own[start : start + take] = chunk
        else:
            for p, m in zip(free[pos : pos + take], chunk):
                own[p] = m
        for m in chunk:
            sizes[m] += 1
        nxt += take
        pos += take


def _balance_topics(sorted_topics, subscribers, owners, balancer: _Balancer, sizes) -> None:
    """``balanceTopics``: sweep the topics until a full lap reassigns nothing (at most 16 laps)."""
    last = -1
    for _ in range(MAX_ITERATION_COUNT):
        for index, t in enumerate(sorted_topics):
            if index == last:
                return
            moved = _balance_topic(subscribers[t], owners[t], balancer, sizes)
            if moved > 0 or last == -1:
                last = index


def _balance_topic(subs, own: list[int], balancer: _Balancer, sizes: list[int]) -> int:
    """``balanceTopic``: move partitions from the most to the least loaded subscribers."""
    moved = 0
    if balancer.initialize(subs) <= 1:
        return moved
    if not own:
        # A topic of 0 partitions: Java's balanceTopic builds empty partition ranges, so every
        # nextMostLoadedMember() is excluded until it returns -1 and the loop ends, having
        # moved nothing (the balancer's state is reset by the next initialize()).
        return moved
    # Partitions grouped by owner (owner index, then partition): a stable sort by owner.
    arr = np.asarray(own, dtype=np.int64)
    order = np.argsort(arr, kind="stable")
    by_owner = arr[order]
    cuts = np.flatnonzero(by_owner[1:] != by_owner[:-1]) + 1
    bounds = [0, *cuts.tolist(), len(own)]
    owners_run = by_owner[bounds[:-1]].tolist()
    plist = order.tolist()
    start = dict(zip(owners_run, bounds[:-1]))
    end = dict(zip(owners_run, bounds[1:]))
    while not balancer.is_balanced():
        most = -1
        while True:
            most = balancer.next_most_loaded()
            if most == -1:
                break
            if most not in end or end[most] - start[most] <= 0:
                balancer.exclude_most_loaded()
                continue
            break
        if most == -1:
            break
        p = plist[end[most] - 1]
        end[most] -= 1
        least = balancer.next_least_loaded()
        if balancer.is_balanced():
            break
        # assignPartition: move p from its owner to `least`.
        old = own[p]
        if old != -1:
            sizes[old] -= 1
        own[p] = least
        sizes[least] += 1
        moved += 1
    return moved
