"""``UniformHeterogeneousAssignmentBuilder`` of Kafka's group coordinator (Kafka 4.x).

Source: ``org.apache.kafka.coordinator.group.assignor.UniformHeterogeneousAssignmentBuilder``
(``build``, ``maybeRevokePartitions``, ``computeUnassignedPartitions``,
``assignRemainingPartitions``, ``balance``, ``balanceTopics``, ``balanceTopic``, the inner
``MemberAssignmentBalancer``). Members are numbered in ``GroupSpec.memberIds()`` order; every
tie-break is by that index or by topic id (``Uuid.compareTo``), so no hash order enters except
the member numbering itself.
"""

from __future__ import annotations

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


def heterogeneous(sg: ServerGroup) -> dict[str, dict[str, list[int]]]:
    """``UniformHeterogeneousAssignmentBuilder.build``: member -> topic -> partitions."""
    member_ids = sg.member_ids
    num_members = len(member_ids)
    partitions = sg.partitions
    subscribers: dict[str, list[int]] = {}
    for i, mid in enumerate(member_ids):
        for t in sg.subscriptions[mid]:
            subscribers.setdefault(t, []).append(i)
    if not subscribers:
        return {}

    sizes = [0] * num_members
    owners = {t: [-1] * partitions[t] for t in subscribers}
    # Per member: topic -> set of partitions (the target assignment being built).
    target: list[dict[str, set[int]]] = []

    # maybeRevokePartitions: drop topics the member no longer subscribes to.
    for i, mid in enumerate(member_ids):
        subs = set(sg.subscriptions[mid])
        mine: dict[str, set[int]] = {}
        for t, ps in sg.assignment[mid].items():
            if t in subs:
                sizes[i] += len(ps)
                own = owners[t]
                for p in ps:
                    own[p] = i
                mine[t] = set(ps)
        target.append(mine)

    def topic_key(t: str):
        # topicComparator: partitions per subscriber descending, subscriber count ascending,
        # topic id ascending (Uuid.compareTo: signed msb, then signed lsb).
        k = len(subscribers[t])
        _, msb, lsb = topic_uuid(t)
        return (-(partitions[t] / k), k, msb, lsb)

    def assign_partition(t: str, p: int, member: int) -> None:
        """``assignPartition``."""
        own = owners[t]
        old = own[p]
        if old != -1:
            s = target[old].get(t)
            if s is not None:
                s.discard(p)
                if not s:
                    del target[old][t]
            sizes[old] -= 1
        target[member].setdefault(t, set()).add(p)
        own[p] = member
        sizes[member] += 1

    # computeUnassignedPartitions + assignRemainingPartitions.
    unassigned = {}
    for t in subscribers:
        own = owners[t]
        free = [p for p in range(partitions[t]) if own[p] == -1]
        if free:
            unassigned[t] = free
    balancer = _Balancer(sizes)
    for t in sorted(unassigned, key=topic_key):
        balancer.initialize(subscribers[t])
        for p in unassigned[t]:
            assign_partition(t, p, balancer.next_least_loaded())

    # balance: only topics with two or more subscribers can move.
    movable = [t for t in subscribers if len(subscribers[t]) >= 2]
    if movable:
        _balance_topics(sorted(movable, key=topic_key), subscribers, partitions, owners, balancer, assign_partition)

    return {mid: {t: sorted(ps) for t, ps in target[i].items()} for i, mid in enumerate(member_ids)}


def _balance_topics(sorted_topics, subscribers, partitions, owners, balancer, assign_partition) -> None:
    """``balanceTopics``: sweep the topics until a full lap reassigns nothing (at most 16 laps)."""
    last = -1
    for _ in range(MAX_ITERATION_COUNT):
        for index, t in enumerate(sorted_topics):
            if index == last:
                return
            moved = _balance_topic(t, subscribers[t], partitions[t], owners[t], balancer, assign_partition)
            if moved > 0 or last == -1:
                last = index


def _balance_topic(t, subs, num_partitions, own, balancer: _Balancer, assign_partition) -> int:
    """``balanceTopic``: move partitions from the most to the least loaded subscribers."""
    moved = 0
    if balancer.initialize(subs) <= 1:
        return moved
    # Partitions grouped by owner (owner index, then partition).
    plist = sorted(range(num_partitions), key=lambda p: (own[p], p))
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    for i, p in enumerate(plist):
        o = own[p]
        if o not in start:
            start[o] = i
        end[o] = i + 1
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
        assign_partition(t, p, least)
        moved += 1
    return moved
