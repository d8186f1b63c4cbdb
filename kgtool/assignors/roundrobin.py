"""``roundrobin``: Kafka's client-side ``RoundRobinAssignor``.

Source: ``org.apache.kafka.clients.consumer.RoundRobinAssignor`` (Kafka 4.x).

All partitions of all subscribed topics, topics in ``String.compareTo`` order (``TreeSet``) and
partitions in numeric order (``allPartitionsSorted``), are dealt one by one to the members taken
from a ``CircularIterator`` over the members sorted by ``MemberInfo.compareTo`` (static members by
``group.instance.id`` first, then member id); a member not subscribed to the partition's topic is
skipped (``while (!subscriptions.get(assigner.peek().memberId).topics().contains(topic))
assigner.next()``).

Worked example (the class javadoc; ``tests/assignors/test_roundrobin.py`` repeats it): C0 on t0,
C1 on t0 and t1, C2 on t0, t1 and t2, with 1, 2 and 3 partitions::

    C0: [t0-0]
    C1: [t1-0]
    C2: [t1-1, t2-0, t2-1, t2-2]

Layout: the iterator only stops at subscribers, so inside one topic the partitions go to the
topic's subscribers in circular order from the iterator's position: subscriber ``j0 + k`` (mod
their count) gets partition ``k``, i.e. every subscriber takes a strided slice of the topic's
partition list. When every member subscribes to every topic, the whole sorted partition list is
dealt with one stride: member ``i`` takes ``all[i::N]``.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import repeat

from kgtool.assignors._client import member_info_sorted
from kgtool.assignors._perf import gc_paused
from kgtool.assignors.model import Assignment, GroupSpec, TopicPartition
from kgtool.java import java_sorted


class RoundRobinAssignor:
    """Kafka's ``RoundRobinAssignor`` (protocol name ``roundrobin``)."""

    name = "roundrobin"

    @gc_paused
    def assign(self, group: GroupSpec) -> Assignment:
        """Return every member's partitions in the order ``RoundRobinAssignor.assign`` adds them."""
        members = group.members
        out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        if not members:
            return out
        # RoundRobinAssignor.allPartitionsSorted: TreeSet of every subscribed topic, kept when
        # partitionsPerTopic has it (AbstractPartitionAssignor.assign: metadata and > 0 partitions).
        seen_tuples: set[tuple[str, ...]] = set()
        all_topics: dict[str, None] = {}
        for m in members:
            if m.topics not in seen_tuples:
                seen_tuples.add(m.topics)
                all_topics.update(dict.fromkeys(m.topics))
        topics_meta = group.topics
        topics = [
            t for t in java_sorted(all_topics) if t in topics_meta and topics_meta[t].partitions > 0
        ]
        if not topics:
            return out
        # Utils.sorted(memberInfoList): MemberInfo.compareTo.
        ordered = member_info_sorted(members)
        n_members = len(ordered)

        if len(seen_tuples) == 1 or len({frozenset(t) for t in seen_tuples}) == 1:
            # Every member subscribes to every topic: partition k of the sorted list goes to
            # member k mod N.
            flat: list[TopicPartition] = []
            for t in topics:
                flat.extend(zip(repeat(t, topics_meta[t].partitions), range(topics_meta[t].partitions)))
            for i, m in enumerate(ordered):
                out[m.member_id].extend(flat[i::n_members])
            return out

        # Positions (in the circular order) of each topic's subscribers.
        subscribers: dict[str, list[int]] = {t: [] for t in topics}
        wanted = subscribers.keys()
        for pos, m in enumerate(ordered):
            for t in set(m.topics):
                if t in wanted:
                    subscribers[t].append(pos)
        lists = [out[m.member_id] for m in ordered]
        cursor = 0  # index of the member assigner.peek() returns
        for t in topics:
            n = topics_meta[t].partitions
            subs = subscribers[t]
            s = len(subs)
            j0 = bisect_left(subs, cursor)
            if j0 == s:
                j0 = 0
            tps = list(zip(repeat(t, n), range(n)))
            if s == 1:
                lists[subs[0]].extend(tps)
            else:
                for k in range(min(s, n)):
                    lists[subs[(j0 + k) % s]].extend(tps[k::s])
            cursor = (subs[(j0 + n - 1) % s] + 1) % n_members
        return out
