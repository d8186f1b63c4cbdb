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

from itertools import repeat

from kgtool.assignors._client import member_info_sorted
from kgtool.assignors.model import Assignment, GroupSpec, MemberSpec, TopicPartition
from kgtool.errors import InputError


class ServerRangeAssignor:
    """The group coordinator's ``RangeAssignor`` (exposed as ``server-range``)."""

    name = "server-range"

    def assign(self, group: GroupSpec) -> Assignment:
        """Return each member's target assignment, partitions sorted by topic and number.

        Raises :class:`kgtool.errors.InputError` when a member subscribes to a topic without
        metadata (``PartitionAssignorException: Member is subscribed to a non-existent topic``).
        """
        for m in group.members:
            for t in m.topics:
                if t not in group.topics:
                    raise InputError(f"member {m.member_id} is subscribed to a non-existent topic {t}")
        topics_meta = group.topics
        by_id: dict[str, MemberSpec] = {}
        for m in group.members:
            by_id.setdefault(m.member_id, m)
        if not by_id:
            return {}
        # RangeAssignor.sortMemberIds: static members first by instance id, then member ids.
        ordered = [m.member_id for m in member_info_sorted(list(by_id.values()))]
        subs = {mid: list(dict.fromkeys(by_id[mid].topics)) for mid in ordered}
        # TopicMetadata per topic: numMembers = its subscribers (all members when HOMOGENEOUS).
        num_members: dict[str, int] = {}
        for mid in ordered:
            for t in subs[mid]:
                num_members[t] = num_members.get(t, 0) + 1
        next_range = dict.fromkeys(num_members, 0)
        extra: dict[str, int] = {}
        quota: dict[str, int] = {}
        for t, k in num_members.items():
            quota[t], extra[t] = divmod(topics_meta[t].partitions, k)
        out: dict[str, dict[str, range]] = {}
        for mid in ordered:
            mine: dict[str, range] = {}
            for t in subs[mid]:
                # RangeAssignor.addPartitionsToAssignment.
                start = next_range[t]
                q = quota[t]
                if extra[t] > 0:
                    q += 1
                    extra[t] -= 1
                end = min(start + q, topics_meta[t].partitions)
                next_range[t] = end
                if start < end:
                    mine[t] = range(start, end)
            out[mid] = mine

        result: dict[str, list[TopicPartition]] = {}
        for m in group.members:
            parts = out.get(m.member_id, {})
            result[m.member_id] = [tp for t in sorted(parts) for tp in zip(repeat(t), parts[t])]
        return result
