"""``server-range``: the KIP-848 group coordinator's ``RangeAssignor`` (``range`` on the broker).

Source: ``org.apache.kafka.coordinator.group.assignor.RangeAssignor`` (Kafka 4.x, group-coordinator:
``assign``, ``assignHomogeneousGroup``, ``assignHeterogeneousGroup``, ``sortMemberIds``,
``addPartitionsToAssignment``).

Members are sorted (``sortMemberIds``: static members first by instance id, then member id, as the
client ``MemberInfo``); per topic with ``k`` subscribers and ``n`` partitions, the members in that
order take consecutive ranges of ``n // k`` partitions, the first ``n % k`` one more. The current
target assignment (``owned``) and racks play no role: stability comes from the sort, as the
javadoc explains for static members. Topics are independent of each other, so no hash order
enters the result.

Worked example (the class javadoc; ``tests/assignors/test_server_range.py`` repeats it): M0 and M1
on T1 and T2 with 3 partitions each::

    M0: [T1-0, T1-1, T2-0, T2-1]
    M1: [T1-2, T2-2]
"""

from __future__ import annotations

from kgtool.assignors._client import member_info_sorted
from kgtool.assignors._perf import gc_paused
from kgtool.assignors._ranges import assign_ranges
from kgtool.assignors._server import check_topics_exist
from kgtool.assignors.model import Assignment, GroupSpec, MemberSpec, TopicPartition


class ServerRangeAssignor:
    """The group coordinator's ``RangeAssignor`` (exposed as ``server-range``)."""

    name = "server-range"

    @gc_paused
    def assign(self, group: GroupSpec) -> Assignment:
        """Return each member's target assignment, partitions sorted by topic and number.

        Raises :class:`kgtool.errors.InputError` when a member subscribes to a topic without
        metadata (``PartitionAssignorException: Member is subscribed to a non-existent topic``).
        """
        check_topics_exist(group, "member {member} is subscribed to a non-existent topic {topic}")
        topics_meta = group.topics
        by_id: dict[str, MemberSpec] = {}
        for m in group.members:
            by_id.setdefault(m.member_id, m)
        if not by_id:
            return {}
        # RangeAssignor.sortMemberIds: static members first by instance id, then member ids.
        ordered = member_info_sorted(list(by_id.values()))
        # TopicMetadata.numMembers / nextRange: each topic's subscribers take consecutive ranges
        # in that order (assignHomogeneousGroup / assignHeterogeneousGroup with
        # addPartitionsToAssignment), which is the client range arithmetic.
        first = ordered[0].topics
        subscribers: dict[str, list[str]]
        if all(m.topics == first for m in ordered):
            everyone = [m.member_id for m in ordered]
            subscribers = {t: everyone for t in dict.fromkeys(first)}
        else:
            subscribers = {}
            for m in ordered:
                for t in dict.fromkeys(m.topics):
                    subscribers.setdefault(t, []).append(m.member_id)
        out: dict[str, list[TopicPartition]] = {mid: [] for mid in by_id}
        # The result is reported sorted by topic and partition: ranges are ascending, so
        # visiting the topics in name order gives that order directly.
        topic_order = sorted(subscribers)
        assign_ranges(topic_order, {t: topics_meta[t].partitions for t in topic_order}, subscribers, out)
        result: dict[str, list[TopicPartition]] = {m.member_id: out[m.member_id] for m in group.members}
        return result
