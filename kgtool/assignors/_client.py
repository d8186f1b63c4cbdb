"""What Kafka's client-side assignors share: ``AbstractPartitionAssignor`` and ``MemberInfo``.

Sources: ``org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor`` (``assign``,
``partitionInfosWithoutRacks``, ``useRackAwareAssignment``, ``MemberInfo.compareTo``).
"""

from __future__ import annotations

from collections.abc import Sequence

from kgtool.assignors.model import GroupSpec, MemberSpec
from kgtool.java import needs_utf16_order, string_hash_order, utf16_key


def partitions_per_topic_order(group: GroupSpec) -> list[str]:
    """Topics in the iteration order of ``AbstractPartitionAssignor.assign``'s ``partitionsPerTopic``.

    ``allSubscribedTopics`` is a ``HashSet`` filled member by member, in the iteration order of
    the group's subscriptions (``ConsumerCoordinator.onLeaderElected`` collects them in a
    ``HashMap<String, Subscription>``, so: member ids in HashMap order), topic by topic;
    ``partitionsPerTopic`` is a ``HashMap`` filled while iterating that set, keeping only topics
    with metadata and more than 0 partitions. Both orders are HashMap bucket orders over
    ``String.hashCode``; the member order only matters for topics sharing a bucket.
    """
    first_seen: dict[str, None] = {}
    seen_tuples: set[tuple[str, ...]] = set()
    by_id = {}
    for m in group.members:
        by_id.setdefault(m.member_id, m)
    for mid in string_hash_order(list(by_id)):
        m = by_id[mid]
        if m.topics in seen_tuples:  # identical subscriptions add nothing new
            continue
        seen_tuples.add(m.topics)
        for t in m.topics:
            first_seen[t] = None
    set_order = string_hash_order(list(first_seen))
    topics = group.topics
    kept = [t for t in set_order if t in topics and topics[t].partitions > 0]
    return string_hash_order(kept)


def member_info_sorted(members: Sequence[MemberSpec]) -> list[MemberSpec]:
    """``Utils.sorted`` / ``Collections.sort`` of ``AbstractPartitionAssignor.MemberInfo``.

    ``MemberInfo.compareTo``: members with a ``group.instance.id`` first, by instance id; then the
    dynamic members by member id; both with ``String.compareTo``. The sort is stable (TimSort), so
    members sharing an instance id (which a broker would not allow) keep the order they came in:
    the ``HashMap<String, Subscription>`` order of their member ids.
    """
    if any(m.instance_id is not None for m in members):
        rank = {mid: i for i, mid in enumerate(string_hash_order([m.member_id for m in members]))}
        members = sorted(members, key=lambda m: rank[m.member_id])
    utf16 = needs_utf16_order(
        [m.member_id for m in members] + [m.instance_id for m in members if m.instance_id is not None]
    )
    if utf16:
        def key(m: MemberSpec):
            if m.instance_id is not None:
                return (0, utf16_key(m.instance_id))
            return (1, utf16_key(m.member_id))
    else:
        def key(m: MemberSpec):
            if m.instance_id is not None:
                return (0, m.instance_id)
            return (1, m.member_id)
    return sorted(members, key=key)
