"""``range``: Kafka's client-side ``RangeAssignor``, rack-aware as in KIP-881.

Source: ``org.apache.kafka.clients.consumer.RangeAssignor`` (Kafka 4.x) and
``internals.AbstractPartitionAssignor``.

Per topic, the subscribed members are sorted (``MemberInfo.compareTo``: static members by
``group.instance.id`` first, then the others by member id) and the partitions, in numeric order,
are cut into consecutive ranges: ``n / members`` each, and the first ``n % members`` members get
one more. A member's list is the concatenation of its ranges, topic after topic in the iteration
order of the assignor's ``partitionsPerTopic`` ``HashMap``.

Worked example (the class javadoc; ``tests/assignors/test_range.py`` repeats it): C0 and C1 on
t0 and t1, 3 partitions each::

    C0: [t0-0, t0-1, t1-0, t1-1]
    C1: [t0-2, t1-2]

When members and partitions carry racks and some partition is not on every rack
(``AbstractPartitionAssignor.useRackAwareAssignment``), partitions whose replicas are on the
member's rack are handed out first (``assignWithRackMatching``) under the same per-topic quotas;
co-partitioned topics (same subscribers, same partition count) move together; the rest is
assigned as usual and each member's list is then sorted by topic and partition.
"""

from __future__ import annotations

from itertools import repeat

from kgtool.assignors._client import member_info_sorted, partitions_per_topic_order
from kgtool.assignors._java import java_string_key, needs_utf16_key
from kgtool.assignors.model import Assignment, GroupSpec, MemberSpec, TopicPartition


class RangeAssignor:
    """Kafka's ``RangeAssignor`` (protocol name ``range``)."""

    name = "range"

    def assign(self, group: GroupSpec) -> Assignment:
        """Return every member's partitions in the order ``RangeAssignor.assignPartitions`` builds them."""
        members = group.members
        # RangeAssignor.assignPartitions: assignment.put(memberId, new ArrayList<>()) for all.
        out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        if not members:
            return out
        topic_order = partitions_per_topic_order(group)
        if not topic_order:
            return out

        subscribers = _consumers_per_topic(members, topic_order)
        # RangeAssignor.consumerRacks: only non-empty rack ids count.
        racks = {m.member_id: m.rack for m in members if m.rack}
        if not racks:
            # No consumer rack: TopicAssignmentState.needsRackAwareAssignment is false for every
            # topic (useRackAwareAssignment: consumerRacks.isEmpty()), only plain ranges remain.
            _assign_plain_ranges(topic_order, group, subscribers, out)
            return out

        states = [
            _TopicState(t, group.topics[t].partitions, subscribers[t], racks, group.topics[t].racks)
            for t in topic_order
        ]
        use_rack_aware = any(s.needs_rack_aware for s in states)
        if not use_rack_aware:
            _assign_plain_ranges(topic_order, group, subscribers, out)
            return out

        # RangeAssignor.assignPartitions, rack-aware branch.
        _assign_with_rack_matching(states, out)
        for s in states:
            _assign_ranges(s, None, out)
        # assignment.values().forEach(list -> list.sort(PARTITION_COMPARATOR)):
        # Utils.TopicPartitionComparator, topic (String.compareTo) then partition.
        utf16 = needs_utf16_key(topic_order)
        for parts in out.values():
            if utf16:
                parts.sort(key=lambda tp: (java_string_key(tp[0]), tp[1]))
            else:
                parts.sort()
        return out


def _consumers_per_topic(members: list[MemberSpec], topics: list[str]) -> dict[str, list[MemberSpec]]:
    """``RangeAssignor.consumersPerTopic`` then ``Collections.sort(members)`` per topic, deduplicated.

    ``MemberInfo.compareTo`` is a total order on distinct members, so sorting everyone once and
    collecting each topic's subscribers in that order gives every topic's sorted list; identical
    subscriptions share one list object.
    """
    ordered = _dedup(member_info_sorted(members))
    first = members[0].topics
    if all(m.topics == first for m in members):
        first_set = set(first)
        return {t: ordered for t in topics if t in first_set}
    wanted = set(topics)
    by_topic: dict[str, list[MemberSpec]] = {t: [] for t in topics}
    for m in ordered:
        for t in set(m.topics):
            if t in wanted:
                by_topic[t].append(m)
    return by_topic


def _dedup(sorted_members: list[MemberSpec]) -> list[MemberSpec]:
    # TopicAssignmentState: Collectors.toMap(..., (a, b) -> a, LinkedHashMap::new) keeps the
    # first of equal member ids.
    seen: set[str] = set()
    out = []
    for m in sorted_members:
        if m.member_id not in seen:
            seen.add(m.member_id)
            out.append(m)
    return out


def _assign_plain_ranges(topic_order: list[str], group: GroupSpec, subscribers, out) -> None:
    """``assignRanges(t, (c, tp) -> true, assignment)`` for every topic, without racks.

    With nothing assigned yet this is ``RangeAssignor``'s arithmetic: member ``i`` of ``k`` gets
    ``n // k`` partitions starting at ``(n // k) * i + min(i, n % k)``, one more if ``i < n % k``;
    topics are appended in ``topic_order``.

    Layout: when every topic has the same subscribers and the same partition count ``n`` (the
    usual large group), the partitions are laid out topic-major in one list ``flat`` and member
    ``i``'s list is ``flat[s + r + j*n]`` for topic ``j`` and ``r`` in its range: ``len(range)``
    strided slices per member, so the work is one C-level copy per partition.
    """
    topics = group.topics
    first = subscribers[topic_order[0]]
    n0 = topics[topic_order[0]].partitions
    if all(subscribers[t] is first for t in topic_order) and all(topics[t].partitions == n0 for t in topic_order):
        k = len(first)
        if k == 0:
            return
        flat: list[TopicPartition] = []
        for t in topic_order:
            flat.extend(zip(repeat(t, n0), range(n0)))
        n_topics = len(topic_order)
        per, extra = divmod(n0, k)
        start = 0
        for i, m in enumerate(first):
            length = per + 1 if i < extra else per
            if length == 0:
                break
            if length == 1:
                out[m.member_id].extend(flat[start::n0])
            else:
                mine: list = [None] * (n_topics * length)
                for r in range(length):
                    mine[r::length] = flat[start + r :: n0]
                out[m.member_id].extend(mine)
            start += length
        return

    for t in topic_order:
        n = topics[t].partitions
        consumers = subscribers[t]
        k = len(consumers)
        if k == 0:
            continue
        per, extra = divmod(n, k)
        tps = list(zip(repeat(t, n), range(n)))
        if per == 0:
            for i in range(extra):
                out[consumers[i].member_id].append(tps[i])
            continue
        start = 0
        for i, m in enumerate(consumers):
            length = per + 1 if i < extra else per
            out[m.member_id].extend(tps[start : start + length])
            start += length


class _TopicState:
    """``RangeAssignor.TopicAssignmentState``."""

    __slots__ = (
        "topic", "num_partitions", "consumers", "consumer_rack", "needs_rack_aware",
        "partition_racks", "unassigned", "num_assigned", "per_consumer", "remaining_extra",
    )

    def __init__(self, topic, num_partitions, consumers, racks, partition_replica_racks):
        self.topic = topic
        self.num_partitions = num_partitions
        self.consumers = consumers
        #: consumers: LinkedHashMap memberId -> Optional(rack), in MemberInfo order.
        self.consumer_rack = {m.member_id: racks.get(m.member_id) for m in consumers}
        k = len(consumers)
        self.per_consumer = num_partitions // k if k else 0
        self.remaining_extra = num_partitions % k if k else 0
        self.unassigned = None
        self.num_assigned = None
        all_consumer_racks = {r for r in self.consumer_rack.values() if r is not None}
        if all_consumer_racks:
            # partitionRacks: every partition's set of replica racks (null racks dropped).
            rr = partition_replica_racks or ()
            self.partition_racks = [
                frozenset(r for r in rr[p] if r is not None) if p < len(rr) else frozenset()
                for p in range(num_partitions)
            ]
        else:
            self.partition_racks = []
        all_partition_racks = frozenset().union(*self.partition_racks) if self.partition_racks else frozenset()
        # AbstractPartitionAssignor.useRackAwareAssignment (preferRackAwareLogic is test-only).
        if not all_consumer_racks or all_consumer_racks.isdisjoint(all_partition_racks):
            self.needs_rack_aware = False
        else:
            self.needs_rack_aware = not all(r == all_partition_racks for r in self.partition_racks)

    def start(self) -> None:
        if self.unassigned is None:
            # unassignedPartitions: LinkedHashSet in partition order.
            self.unassigned = dict.fromkeys(range(self.num_partitions))
            self.num_assigned = dict.fromkeys(self.consumer_rack, 0)

    def racks_match(self, consumer: str, p: int) -> bool:
        """``TopicAssignmentState.racksMatch``: a member without rack matches everything."""
        rack = self.consumer_rack.get(consumer)
        if rack is None:
            return True
        return p < len(self.partition_racks) and rack in self.partition_racks[p]

    def max_assignable(self, consumer: str) -> int:
        """``TopicAssignmentState.maxAssignable``."""
        m = self.per_consumer + (1 if self.remaining_extra > 0 else 0) - self.num_assigned[consumer]
        return max(0, m)

    def on_assigned(self, consumer: str, partitions: list[int]) -> None:
        """``TopicAssignmentState.onAssigned``."""
        n = self.num_assigned[consumer] + len(partitions)
        self.num_assigned[consumer] = n
        if n > self.per_consumer:
            self.remaining_extra -= 1
        for p in partitions:
            self.unassigned.pop(p, None)


def _assign(consumer: str, partitions: list[int], state: _TopicState, out) -> None:
    """``RangeAssignor.assign``."""
    out[consumer].extend((state.topic, p) for p in partitions)
    state.on_assigned(consumer, partitions)


def _assign_ranges(state: _TopicState, rack_matching: bool | None, out) -> None:
    """``RangeAssignor.assignRanges``; ``rack_matching`` selects ``state::racksMatch`` as ``mayAssign``."""
    state.start()
    for consumer in state.consumer_rack:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        if limit <= 0:
            continue
        picked: list[int] = []
        for p in state.unassigned:
            if rack_matching and not state.racks_match(consumer, p):
                continue
            picked.append(p)
            if len(picked) >= limit:
                break
        if not picked:
            continue
        _assign(consumer, picked, state, out)


def _assign_with_rack_matching(states: list[_TopicState], out) -> None:
    """``RangeAssignor.assignWithRackMatching``.

    Groups topics by their consumers (``LinkedHashMap`` of member -> rack) and then by
    ``partitionRacks.size()``; groups of two or more are co-partitioned. Each topic keeps its own
    quota state, so the (HashMap) order in which groups are visited does not change the result.
    """
    groups: dict[tuple, dict[int, list[_TopicState]]] = {}
    for s in states:
        key = tuple(s.consumer_rack.items())
        groups.setdefault(key, {}).setdefault(len(s.partition_racks), []).append(s)
    for by_size in groups.values():
        for num_partitions, co in by_size.items():
            for s in co:
                s.start()
            if len(co) > 1:
                _assign_co_partitioned(list(co[0].consumer_rack), num_partitions, co, out)
            else:
                s = co[0]
                if s.needs_rack_aware:
                    _assign_ranges(s, True, out)


def _assign_co_partitioned(consumers: list[str], num_partitions: int, states: list[_TopicState], out) -> None:
    """``RangeAssignor.assignCoPartitionedWithRackMatching``: partition ``p`` of every topic goes
    to the first remaining member whose rack matches them all and who has room in each."""
    remaining = dict.fromkeys(consumers)
    for p in range(num_partitions):
        chosen = None
        for c in remaining:
            if all(t.racks_match(c, p) and t.max_assignable(c) > 0 for t in states):
                chosen = c
                break
        if chosen is None:
            continue
        for t in states:
            _assign(chosen, [p], t, out)
        if not any(t.max_assignable(chosen) > 0 for t in states):
            del remaining[chosen]
            if not remaining:
                break
