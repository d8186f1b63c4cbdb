"""A line-by-line port of Kafka's ``AbstractStickyAssignor`` on ``(topic, partition)`` tuples.

The test oracle: every step names its Java method, and the data structures are Java's (lists
where Java has ``ArrayList``/``LinkedList``, a sorted list where Java has the ``TreeSet`` of
consumers, emulated ``HashMap``/``HashSet`` order where Java iterates one). The package runs
:mod:`kgtool.assignors._sticky_fast` on integer arrays; the tests check both against the golden
cases and against each other. It takes the input and the steps that both share
(``allSubscriptionsEqual``, ``PartitionMovements``, ``computePartitionsTransferringOwnership``)
from :mod:`kgtool.assignors._sticky_common`, and re-exports them for the tests.

Source: ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/
AbstractStickyAssignor.java`` (Apache Kafka 4.0: ``assignPartitions``,
``allSubscriptionsEqual``, ``RackInfo``, ``ConstrainedAssignmentBuilder``,
``GeneralAssignmentBuilder``, ``PartitionMovements``) and ``CooperativeStickyAssignor.java``
(``assign``, ``adjustAssignment``, ``computePartitionsTransferringOwnership``).
"""

from __future__ import annotations

import bisect

from kgtool.assignors._sticky_common import (  # noqa: F401 (re-exported for the tests)
    DEFAULT_GENERATION,
    TP,
    PartitionMovements,
    StickyAssignorFailure,
    StickyInput,
    all_subscriptions_equal,
    list_remove,
    member_iteration_order,
    partitions_transferring_ownership,
)
from kgtool.java import string_order_key


class RackInfo:
    """``AbstractStickyAssignor.RackInfo`` (KIP-881)."""

    def __init__(self, inp: StickyInput) -> None:
        consumers_by_rack: dict[str, list[str]] = {}
        for m in inp.members:
            r = inp.rack_of.get(m)
            if r:  # rackId().filter(r -> !r.isEmpty())
                consumers_by_rack.setdefault(r, []).append(m)
        partition_racks: dict[TP, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if consumers_by_rack:
            for t, n in inp.partitions_per_topic.items():
                racks = inp.replica_racks.get(t)
                for p in range(n):
                    rs = frozenset(r for r in racks[p] if r is not None) if racks else frozenset()
                    partition_racks[(t, p)] = rs
                    all_partition_racks |= rs
        self.consumer_racks: dict[str, str] = {}
        self.partition_racks: dict[TP, frozenset[str]] = {}
        if use_rack_aware_assignment(set(consumers_by_rack), all_partition_racks, partition_racks):
            self.consumer_racks = {c: r for r, cs in consumers_by_rack.items() for c in cs}
            self.partition_racks = partition_racks
        # numConsumersByPartition is computed from the local partitionRacks even when the
        # assignment is not rack-aware (then it is uniform or empty, so sorting by it is a no-op).
        self.num_consumers_by_partition = {
            tp: sum(len(consumers_by_rack.get(r, ())) for r in rs) for tp, rs in partition_racks.items()
        }

    def racks_mismatch(self, consumer: str, tp: TP) -> bool:
        consumer_rack = self.consumer_racks.get(consumer)
        if consumer_rack is None:
            return False
        replica_racks = self.partition_racks.get(tp)
        return replica_racks is None or consumer_rack not in replica_racks

    def sort_partitions_by_rack_consumers(self, partitions: list[TP]) -> list[TP]:
        if not self.num_consumers_by_partition:
            return partitions
        n = self.num_consumers_by_partition
        return sorted(partitions, key=lambda tp: n.get(tp, 0))  # List.sort is stable

    def next_rack_consumer(self, tp: TP, consumers: list[str], first_index: int) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        size = len(consumers)
        for i in range(size):
            index = (first_index + i) % size
            r = self.consumer_racks.get(consumers[index])
            if r is not None and r in racks:
                return index
        return -1


def use_rack_aware_assignment(consumer_racks: set[str], partition_racks: set[str],
                              racks_per_partition: dict[TP, frozenset[str]]) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment`` (preferRackAwareLogic false)."""
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    return not all(rs == partition_racks for rs in racks_per_partition.values())


def assign_partitions(inp: StickyInput) -> tuple[dict[str, list[TP]], dict[TP, str] | None]:
    """``AbstractStickyAssignor.assignPartitions``.

    Returns the assignment and ``partitionsTransferringOwnership`` (None on the general path).
    """
    consumer_to_owned: dict[str, list[TP]] = {}
    multi_owned: set[TP] = set()
    rack_info = RackInfo(inp)
    equal, max_generation = all_subscriptions_equal(inp, consumer_to_owned, multi_owned)
    # consumerToOwnedPartitions is a HashMap filled in subscriptions order.
    order = member_iteration_order(list(consumer_to_owned))
    current = {c: consumer_to_owned[c] for c in order}
    if equal:
        return ConstrainedAssignmentBuilder(inp, rack_info, current, multi_owned).build()
    return GeneralAssignmentBuilder(inp, rack_info, current, max_generation).build(), None


class ConstrainedAssignmentBuilder:
    """``AbstractStickyAssignor.ConstrainedAssignmentBuilder`` (all subscriptions equal)."""

    def __init__(self, inp: StickyInput, rack_info: RackInfo, current: dict[str, list[TP]],
                 multi_owned: set[TP]) -> None:
        self.inp = inp
        self.rack_info = rack_info
        self.current = current
        self.multi_owned = multi_owned
        # maybeRevokedPartitions: partition -> the member that owned it but does not keep it.
        self.maybe_revoked: dict[TP, str] = {}
        self.under: list[str] = []  # unfilledMembersWithUnderMinQuotaPartitions
        self.exactly: list[str] = []  # unfilledMembersWithExactlyMinQuotaPartitions
        total = sum(inp.partitions_per_topic.values())
        n = len(current)
        self.min_quota = total // n
        self.max_quota = -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.assignment: dict[str, list[TP]] = {c: [] for c in current}
        self.assigned: list[TP] = []
        self.transferring: dict[TP, str] = {}
        keys = list(current) + list(inp.partitions_per_topic)
        self.skey = string_order_key(keys)

    def build(self) -> tuple[dict[str, list[TP]], dict[TP, str]]:
        self.assign_owned_partitions()
        unassigned = self.get_unassigned_partitions()
        self.under.sort(key=self.skey)
        self.exactly.sort(key=self.skey)
        unassigned = self.rack_info.sort_partitions_by_rack_consumers(unassigned)
        unassigned = self.assign_rack_aware_round_robin(unassigned)
        self.assign_round_robin(unassigned)
        self.verify_unfilled_members()
        return self.assignment, self.transferring

    def assign_owned_partitions(self) -> None:
        skey = self.skey
        min_q, max_q = self.min_quota, self.max_quota
        for consumer, owned_all in self.current.items():
            owned = []
            for tp in owned_all:
                if self.rack_info.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer
                else:
                    owned.append(tp)
            # Comparator.comparing(TopicPartition::partition).thenComparing(TopicPartition::topic)
            owned.sort(key=lambda tp: (tp[1], skey(tp[0])))
            for tp in self.multi_owned:
                if tp in owned:
                    owned.remove(tp)
            target = self.assignment[consumer]
            if len(owned) < min_q:
                target.extend(owned)
                self.assigned.extend(owned)
                self.under.append(consumer)
            elif len(owned) >= max_q and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exactly.clear()
                target.extend(owned[:max_q])
                self.assigned.extend(owned[:max_q])
                for tp in owned[max_q:]:
                    self.maybe_revoked[tp] = consumer
            else:
                target.extend(owned[:min_q])
                self.assigned.extend(owned[:min_q])
                for tp in owned[min_q:]:
                    self.maybe_revoked[tp] = consumer
                if self.current_over < self.expected_over:
                    self.exactly.append(consumer)

    def get_unassigned_partitions(self) -> list[TP]:
        assigned = set(self.assigned)
        ppt = self.inp.partitions_per_topic
        return [(t, p) for t in sorted(ppt, key=self.skey) for p in range(ppt[t]) if (t, p) not in assigned]

    def assign_rack_aware_round_robin(self, unassigned: list[TP]) -> list[TP]:
        if not self.rack_info.consumer_racks:
            return unassigned
        rack_info = self.rack_info
        under, exactly = self.under, self.exactly
        next_index = 0
        remaining = []
        for tp in unassigned:
            consumer = None
            index = rack_info.next_rack_consumer(tp, under, next_index)
            if index >= 0:
                consumer = under[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    under.remove(consumer)
                    if count < self.max_quota and self.current_over < self.expected_over:
                        exactly.append(consumer)
                else:
                    index += 1
                next_index = index % len(under) if under else 0
            elif exactly:
                first = rack_info.next_rack_consumer(tp, exactly, 0)
                if first >= 0:
                    consumer = exactly[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del exactly[first]
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            exactly.clear()
            if consumer is not None:
                self.assign_new_partition(tp, consumer)
            else:
                remaining.append(tp)
        return remaining

    def assign_round_robin(self, unassigned: list[TP]) -> None:
        under, exactly = self.under, self.exactly
        it = 0  # the LinkedList iterator's cursor over `under`
        for tp in unassigned:
            if it < len(under):
                consumer = under[it]
                it += 1
            elif not under and not exactly:
                raise StickyAssignorFailure(
                    "Kafka's sticky assignor throws IllegalStateException: No more unfilled consumers to be assigned.")
            elif not under:
                consumer = exactly.pop(0)
            else:
                it = 0
                consumer = under[it]
                it += 1
            count = self.assign_new_partition(tp, consumer)
            if count == self.min_quota:
                del under[it - 1]
                it -= 1
                exactly.append(consumer)
            elif count == self.max_quota:
                self.current_over += 1

    def assign_new_partition(self, tp: TP, consumer: str) -> int:
        target = self.assignment[consumer]
        target.append(tp)
        previous = self.maybe_revoked.get(tp)
        if (previous is not None and previous != consumer) or tp in self.multi_owned:
            self.transferring[tp] = consumer
        return len(target)

    def verify_unfilled_members(self) -> None:
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise StickyAssignorFailure(
                "Kafka's sticky assignor throws IllegalStateException: We haven't reached the expected number of "
                "members with more than the minQuota partitions, but no more partitions to be assigned")
        for member in self.under:
            if len(self.assignment[member]) != self.min_quota:
                raise StickyAssignorFailure(
                    f"Kafka's sticky assignor throws IllegalStateException: Consumer: [{member}] doesn't reach "
                    "minQuota partitions, and no more partitions to be assigned")


class _SortedConsumers:
    """The ``TreeSet<String>`` ordered by ``SubscriptionComparator``: (assignment size, id)."""

    def __init__(self, sizes: dict[str, list], skey) -> None:
        self.assignment = sizes
        self.skey = skey
        self.keys: list[tuple] = []

    def _key(self, c: str) -> tuple:
        return (len(self.assignment[c]), self.skey(c), c)

    def add(self, c: str) -> None:
        k = self._key(c)
        i = bisect.bisect_left(self.keys, k)
        if i < len(self.keys) and self.keys[i] == k:
            return
        self.keys.insert(i, k)

    def remove(self, c: str) -> None:
        k = self._key(c)
        i = bisect.bisect_left(self.keys, k)
        if i < len(self.keys) and self.keys[i] == k:
            del self.keys[i]

    def first(self) -> str:
        return self.keys[0][2]

    def last(self) -> str:
        return self.keys[-1][2]

    def __iter__(self):
        return iter([k[2] for k in self.keys])


class GeneralAssignmentBuilder:
    """``AbstractStickyAssignor.GeneralAssignmentBuilder`` (subscriptions differ)."""

    def __init__(self, inp: StickyInput, rack_info: RackInfo, current: dict[str, list[TP]],
                 max_generation: int) -> None:
        self.inp = inp
        self.rack_info = rack_info
        self.current = current
        self.max_generation = max_generation
        ppt = inp.partitions_per_topic
        self.total = sum(ppt.values())
        self.topic2consumers: dict[str, list[str]] = {t: [] for t in ppt}
        self.consumer2topics: dict[str, list[str]] = {}
        for consumer in inp.members:
            topics = [t for t in inp.topics_of[consumer] if t in ppt]
            self.consumer2topics[consumer] = topics
            for t in topics:
                self.topic2consumers[t].append(consumer)
            current.setdefault(consumer, [])
        self.current_partition_consumer: dict[TP, str] = {}
        for c, parts in current.items():
            for tp in parts:
                self.current_partition_consumer[tp] = c
        self.skey = string_order_key(list(inp.members) + list(ppt))
        skey = self.skey
        sorted_topics = sorted(ppt, key=lambda t: (len(self.topic2consumers[t]), skey(t)))
        self.sorted_all_partitions = [(t, p) for t in sorted_topics for p in range(ppt[t])]
        self.sorted_consumers = _SortedConsumers(current, skey)
        self.revocation_required = False
        self.movements = PartitionMovements()

    def build(self) -> dict[str, list[TP]]:
        prev = self.prepopulate_current_assignments()
        assigned = self.assign_owned_partitions()
        assigned_set = set(assigned)
        unassigned = [tp for tp in self.sorted_all_partitions if tp not in assigned_set]
        for c in self.current:
            self.sorted_consumers.add(c)
        self.balance(prev, unassigned)
        return self.current

    def prepopulate_current_assignments(self) -> dict[TP, tuple[str, int]]:
        prev: dict[TP, tuple[str, int]] = {}
        for consumer in self.inp.members:
            generation = self.inp.generation_of[consumer]
            if generation is not None and generation < self.max_generation:
                self._update_prev(prev, consumer, generation)
            elif generation is None and self.max_generation > DEFAULT_GENERATION:
                self._update_prev(prev, consumer, DEFAULT_GENERATION)
        return prev

    def _update_prev(self, prev, consumer: str, generation: int) -> None:
        for tp in self.inp.owned_of[consumer]:
            existing = prev.get(tp)
            if existing is None or generation > existing[1]:
                prev[tp] = (consumer, generation)

    def assign_owned_partitions(self) -> list[TP]:
        assigned: list[TP] = []
        for consumer, parts in self.current.items():
            subscribed = set(self.inp.topics_of[consumer])
            kept = []
            for tp in parts:
                if tp[0] not in self.topic2consumers:
                    self.current_partition_consumer.pop(tp, None)
                elif tp[0] not in subscribed or self.rack_info.racks_mismatch(consumer, tp):
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            parts[:] = kept
        return assigned

    def max_assignment_size(self, topics: list[str]) -> int:
        if len(topics) == len(self.inp.partitions_per_topic):
            return self.total
        return sum(self.inp.partitions_per_topic[t] for t in topics)

    def is_balanced(self) -> bool:
        current = self.current
        lo = len(current[self.sorted_consumers.first()])
        hi = len(current[self.sorted_consumers.last()])
        if lo >= hi - 1:
            return True
        owner = {tp: c for c, parts in current.items() for tp in parts}
        ppt = self.inp.partitions_per_topic
        for consumer in self.sorted_consumers:
            parts = current[consumer]
            count = len(parts)
            topics = self.consumer2topics[consumer]
            if count == self.max_assignment_size(topics):
                continue
            mine = set(parts)
            for t in topics:
                for p in range(ppt[t]):
                    if (t, p) not in mine and count + 1 < len(current[owner[(t, p)]]):
                        return False
        return True

    def maybe_assign_partition(self, tp: TP, rack_info: RackInfo | None) -> bool:
        for consumer in self.sorted_consumers:
            if tp[0] in self.consumer2topics[consumer] and (
                    rack_info is None or not rack_info.racks_mismatch(consumer, tp)):
                self.sorted_consumers.remove(consumer)
                self.current[consumer].append(tp)
                self.current_partition_consumer[tp] = consumer
                self.sorted_consumers.add(consumer)
                return True
        return False

    def maybe_assign(self, unassigned: list[TP], rack_info: RackInfo | None, remove_assigned: bool) -> list[TP]:
        remaining = []
        for tp in unassigned:
            if not self.topic2consumers[tp[0]]:
                remaining.append(tp)
                continue
            if not (self.maybe_assign_partition(tp, rack_info) and remove_assigned):
                remaining.append(tp)
        return remaining

    def can_topic_participate(self, topic: str) -> bool:
        return len(self.topic2consumers[topic]) >= 2

    def can_consumer_participate(self, consumer: str) -> bool:
        parts = self.current[consumer]
        if len(parts) < self.max_assignment_size(self.consumer2topics[consumer]):
            return True
        return any(self.can_topic_participate(tp[0]) for tp in parts)

    def balance(self, prev, unassigned: list[TP]) -> None:
        current = self.current
        initializing = not current[self.sorted_consumers.last()]
        to_assign = unassigned
        if self.rack_info.consumer_racks:
            to_assign = self.maybe_assign(list(unassigned), self.rack_info, True)
        self.maybe_assign(to_assign, None, False)

        fixed_topics = {t for t in self.topic2consumers if not self.can_topic_participate(t)}
        self.sorted_all_partitions = [tp for tp in self.sorted_all_partitions if tp[0] not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]

        fixed: dict[str, list[TP]] = {}
        for consumer in self.consumer2topics:
            if not self.can_consumer_participate(consumer):
                self.sorted_consumers.remove(consumer)
                fixed[consumer] = current.pop(consumer)

        pre_balance = {c: list(parts) for c, parts in current.items()}
        pre_balance_owner = dict(self.current_partition_consumer)

        if not self.revocation_required:
            self.perform_reassignments(unassigned, prev)
        performed = self.perform_reassignments(self.sorted_all_partitions, prev)

        if not initializing and performed and balance_score(current) >= balance_score(pre_balance):
            current.clear()
            current.update({c: list(parts) for c, parts in pre_balance.items()})
            self.current_partition_consumer = pre_balance_owner
        for consumer, parts in fixed.items():
            current[consumer] = parts

    def _size_of(self, consumer: str) -> int:
        parts = self.current.get(consumer)
        if parts is None:
            raise StickyAssignorFailure(
                f"Kafka's sticky assignor throws NullPointerException: consumer {consumer} (a previous owner) "
                "takes no part in the reassignment")
        return len(parts)

    def perform_reassignments(self, reassignable: list[TP], prev) -> bool:
        performed = False
        current = self.current
        rack_info = self.rack_info
        while True:
            modified = False
            for tp in reassignable:
                if self.is_balanced():
                    break
                consumer = self.current_partition_consumer[tp]
                previous = prev.get(tp)
                if previous is not None and len(current[consumer]) > self._size_of(previous[0]) + 1:
                    self.reassign_partition_to(tp, previous[0])
                    performed = modified = True
                    continue
                consumer_rack = rack_info.consumer_racks.get(consumer)
                partition_racks = rack_info.partition_racks.get(tp)
                found_rack_consumer = False
                if consumer_rack is not None and partition_racks and consumer_rack in partition_racks:
                    for other in self.topic2consumers[tp[0]]:
                        other_rack = rack_info.consumer_racks.get(other)
                        if other_rack is None or other_rack not in partition_racks:
                            continue
                        if len(current[consumer]) > len(current[other]) + 1:
                            self.reassign_partition(tp)
                            performed = modified = found_rack_consumer = True
                            break
                if not found_rack_consumer:
                    for other in self.topic2consumers[tp[0]]:
                        if len(current[consumer]) > len(current[other]) + 1:
                            self.reassign_partition(tp)
                            performed = modified = True
                            break
            if not modified:
                return performed

    def reassign_partition(self, tp: TP) -> None:
        for consumer in self.sorted_consumers:
            if tp[0] in self.consumer2topics[consumer]:
                self.reassign_partition_to(tp, consumer)
                return
        raise AssertionError("no consumer for " + repr(tp))

    def reassign_partition_to(self, tp: TP, new: str) -> None:
        consumer = self.current_partition_consumer[tp]
        moved = self.movements.get_the_actual_partition_to_be_moved(tp, consumer, new)
        self.process_partition_movement(moved, new)

    def process_partition_movement(self, tp: TP, new: str) -> None:
        old = self.current_partition_consumer[tp]
        self.sorted_consumers.remove(old)
        self.sorted_consumers.remove(new)
        self.movements.move_partition(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.current_partition_consumer[tp] = new
        self.sorted_consumers.add(new)
        self.sorted_consumers.add(old)


def balance_score(assignment: dict[str, list]) -> int:
    """``getBalanceScore``: the sum of |size difference| over all pairs of consumers."""
    sizes = sorted(len(p) for p in assignment.values())
    n = len(sizes)
    return sum(s * (2 * i - n + 1) for i, s in enumerate(sizes))


def adjust_assignment(assignment: dict[str, list[TP]], transferring: dict[TP, str]) -> None:
    """``CooperativeStickyAssignor.adjustAssignment``: withhold partitions changing owner."""
    for tp, consumer in transferring.items():
        list_remove(assignment[consumer], tp)
