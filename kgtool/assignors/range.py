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


from kgtool.assignors._client import member_info_sorted, partitions_per_topic_order
from kgtool.assignors._perf import gc_paused
from kgtool.assignors._ranges import assign_ranges
from kgtool.assignors.model import Assignment, GroupSpec, MemberSpec, TopicPartition
from kgtool.java import needs_utf16_order, string_order_key, utf16_key


class RangeAssignor:
    """Kafka's ``RangeAssignor`` (protocol name ``range``)."""

    name = "range"

    @gc_paused
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

        cache: dict = {}
        states = [
            _TopicState(t, group.topics[t].partitions, subscribers[t], racks, group.topics[t].racks, cache)
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
        utf16 = needs_utf16_order(topic_order)
        for parts in out.values():
            if utf16:
                parts.sort(key=lambda tp: (utf16_key(tp[0]), tp[1]))
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
    """``assignRanges(t, (c, tp) -> true, assignment)`` for every topic, without racks."""
    ids = {}
    for t in topic_order:
        lst = subscribers[t]
        if id(lst) not in ids:
            # Keep lst alive in the tuple so its id stays unique; shared lists convert once.
            ids[id(lst)] = (lst, [m.member_id for m in lst])
    assign_ranges(
        topic_order,
        {t: group.topics[t].partitions for t in topic_order},
        {t: ids[id(subscribers[t])][1] for t in topic_order},
        out,
    )


class _TopicState:
    """``RangeAssignor.TopicAssignmentState``."""

    __slots__ = (
        "topic", "num_partitions", "consumers", "consumer_rack", "needs_rack_aware",
        "partition_racks", "unassigned", "num_assigned", "per_consumer", "remaining_extra",
    )

    def __init__(self, topic, num_partitions, consumers, racks, partition_replica_racks, cache=None):
        # cache: shared between the topics of one assignment; identical member lists and replica
        # layouts (the usual case) are converted once.
        cache = {} if cache is None else cache
        self.topic = topic
        self.num_partitions = num_partitions
        self.consumers = consumers
        #: consumers: LinkedHashMap memberId -> Optional(rack), in MemberInfo order.
        key = ("consumers", id(consumers))
        got = cache.get(key)
        if got is None:
            rack_map = {m.member_id: racks.get(m.member_id) for m in consumers}
            got = cache[key] = (consumers, rack_map, frozenset(r for r in rack_map.values() if r is not None))
        self.consumer_rack = got[1]
        all_consumer_racks = got[2]
        k = len(consumers)
        self.per_consumer = num_partitions // k if k else 0
        self.remaining_extra = num_partitions % k if k else 0
        self.unassigned = None
        self.num_assigned = None
        if all_consumer_racks:
            # partitionRacks: every partition's set of replica racks (null racks dropped).
            rr = partition_replica_racks or ()
            layout_key = ("layout", num_partitions, rr)
            layout = cache.get(layout_key)
            if layout is None:
                sets: dict = cache.setdefault("sets", {})
                layout = []
                for p in range(num_partitions):
                    replicas = rr[p] if p < len(rr) else ()
                    fs = sets.get(replicas)
                    if fs is None:
                        fs = sets[replicas] = frozenset(r for r in replicas if r is not None)
                    layout.append(fs)
                union = frozenset().union(*set(layout)) if layout else frozenset()
                layout = cache[layout_key] = (layout, union, all(r == union for r in set(layout)))
            self.partition_racks = layout[0]
            all_partition_racks = layout[1]
            on_all_racks = layout[2]
        else:
            self.partition_racks = []
            all_partition_racks = frozenset()
            on_all_racks = True
        # AbstractPartitionAssignor.useRackAwareAssignment (preferRackAwareLogic is test-only).
        if not all_consumer_racks or all_consumer_racks.isdisjoint(all_partition_racks):
            self.needs_rack_aware = False
        else:
            self.needs_rack_aware = not on_all_racks

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
    to the first remaining member whose rack matches them all and who has room in each.

    The co-partitioned topics enter this step untouched (each topic belongs to one group) with
    the same members and partition count, and every step assigns partition ``p`` of all of them
    to the same member, so their quota states stay identical: one state (``states[0]``) does the
    bookkeeping, the racks of partition ``p`` are intersected across the topics once, and the
    other topics copy the outcome at the end. The members' lists are sorted afterwards
    (``PARTITION_COMPARATOR``), so the order of these appends does not matter.
    """
    if num_partitions == 0:
        # partitionRacks is empty when none of the topic's consumers has a rack (and for a topic
        # without partitions): Java's loop over 0 partitions assigns nothing, and topics grouped
        # under size 0 may differ in real partition count, so no state may be shared.
        return
    rep = states[0]
    # racksMatch for all topics at once: a member without rack matches; otherwise its rack
    # must be on a replica of partition p in every topic.
    layouts = list({id(t.partition_racks): t.partition_racks for t in states}.values())
    if len(layouts) == 1:
        common = list(layouts[0])
    else:
        common = [frozenset.intersection(*(layout[p] for layout in layouts)) for p in range(num_partitions)]
    rack_of = rep.consumer_rack
    remaining = dict.fromkeys(consumers)
    chosen_partitions: dict[str, list[int]] = {}
    for p in range(num_partitions):
        racks_p = common[p] if p < len(common) else frozenset()
        chosen = None
        for c in remaining:
            rack = rack_of[c]
            if (rack is None or rack in racks_p) and rep.max_assignable(c) > 0:
                chosen = c
                break
        if chosen is None:
            continue
        rep.on_assigned(chosen, [p])
        chosen_partitions.setdefault(chosen, []).append(p)
        if rep.max_assignable(chosen) <= 0:
            del remaining[chosen]
            if not remaining:
                break
    for t in states[1:]:
        t.num_assigned = dict(rep.num_assigned)
        t.remaining_extra = rep.remaining_extra
        t.unassigned = dict(rep.unassigned)
    topics = sorted((t.topic for t in states), key=string_order_key([t.topic for t in states]))
    for c, ps in chosen_partitions.items():
        out[c].extend([(t, p) for t in topics for p in ps])
