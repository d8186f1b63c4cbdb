"""``server-uniform``: the KIP-848 group coordinator's ``UniformAssignor`` (``uniform`` on the broker).

Sources (Kafka 4.x, group-coordinator, ``org.apache.kafka.coordinator.group.assignor``):
``UniformAssignor.assign`` picks ``UniformHomogeneousAssignmentBuilder`` when every member
subscribes to the same topics (``SubscriptionType.HOMOGENEOUS``) and
``UniformHeterogeneousAssignmentBuilder`` otherwise. Both keep as much of the current target
assignment (kgtool's ``owned``) as balance allows; racks play no role.

Homogeneous (``UniformHomogeneousAssignmentBuilder.build``): with ``P`` partitions and ``M``
members, the first ``P % M`` members in ``GroupSpec.memberIds()`` order have a quota of
``P // M + 1``, the others ``P // M``. Each member keeps its current partitions up to its quota
(``maybeRevokePartitions``, topics and partitions in their ``HashMap`` / ``HashSet`` order); the
partitions nobody holds (topics in ``HashSet<Uuid>`` order, partitions ascending) followed by the
revoked ones then fill the members below quota, in member order (``assignRemainingPartitions``).

Worked example (``tests/assignors/test_server_uniform.py`` repeats it): A and B on t (3
partitions), A owns t-0, t-1, t-2 from a previous round: quotas are 2 (A, first in memberIds
order) and 1 (B); A keeps t-0 and t-1, and the revoked t-2 goes to B::

    A: [t-0, t-1]
    B: [t-2]
"""

from __future__ import annotations

from itertools import repeat

from kgtool.assignors._server import (
    HOMOGENEOUS,
    ServerGroup,
    server_group,
    uuid_hash_order,
    uuid_set_copy_order,
)
from kgtool.assignors.model import Assignment, GroupSpec, TopicPartition
from kgtool.errors import InputError


class UniformAssignor:
    """The group coordinator's ``UniformAssignor`` (exposed as ``server-uniform``)."""

    name = "server-uniform"

    def assign(self, group: GroupSpec) -> Assignment:
        """Return each member's target assignment, partitions sorted by topic and number.

        Raises :class:`kgtool.errors.InputError` when a member subscribes to a topic without
        metadata (``PartitionAssignorException: Members are subscribed to topic ... which doesn't
        exist in the topic metadata``).
        """
        for m in group.members:
            for t in m.topics:
                if t not in group.topics:
                    raise InputError(
                        f"member {m.member_id} is subscribed to topic {t} which doesn't exist in the topic metadata"
                    )
        if not group.members:
            return {}
        sg = server_group(group)
        if sg.subscription_type == HOMOGENEOUS:
            target = _homogeneous(sg)
        else:
            from kgtool.assignors._uniform_heterogeneous import heterogeneous

            target = heterogeneous(sg)
        result: dict[str, list[TopicPartition]] = {}
        for m in group.members:
            parts = target.get(m.member_id, {})
            result[m.member_id] = [tp for t in sorted(parts) for tp in zip(repeat(t), sorted(parts[t]))]
        return result


def _homogeneous(sg: ServerGroup) -> dict[str, dict[str, list[int]]]:
    """``UniformHomogeneousAssignmentBuilder.build``: member -> topic -> partitions."""
    member_ids = sg.member_ids
    # subscribedTopicIds = new HashSet<>(first member's subscribedTopicIds()).
    subscribed = uuid_set_copy_order(sg.subscriptions[member_ids[0]])
    if not subscribed:
        # build(): an empty subscription returns an empty GroupAssignment.
        return {}
    subscribed_set = set(subscribed)
    partitions = sg.partitions
    # GroupSpecImpl.isPartitionAssigned: held by some member in the current target assignment.
    held: dict[str, set[int]] = {}
    for mid in member_ids:
        for t, ps in sg.assignment[mid].items():
            held.setdefault(t, set()).update(ps)
    unassigned: list[tuple[str, int]] = []
    total = 0
    for t in subscribed:
        n = partitions[t]
        h = held.get(t)
        if h:
            unassigned.extend((t, p) for p in range(n) if p not in h)
        else:
            unassigned.extend(zip(repeat(t), range(n)))
        total += n

    num_members = len(member_ids)
    min_quota, extra = divmod(total, num_members)

    # maybeRevokePartitions.
    target: dict[str, dict[str, list[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for mid in member_ids:
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        old = sg.assignment[mid]
        new: dict[str, list[int]] = {}
        # oldAssignment.entrySet(): HashMap<Uuid, Set<Integer>> order.
        for t in uuid_hash_order(list(old)):
            ps = old[t]
            if t not in subscribed_set:
                continue  # "Remove the entire topic."
            if len(ps) <= quota:
                quota -= len(ps)
                new[t] = list(ps)
            else:
                kept = ps[:quota] if quota > 0 else []
                unassigned.extend((t, p) for p in ps[len(kept):])
                quota -= len(kept)
                if kept:
                    new[t] = list(kept)
        if quota > 0:
            unfilled.append((mid, quota))
        target[mid] = new

    # assignRemainingPartitions.
    idx = 0
    n_unassigned = len(unassigned)
    for mid, remaining in unfilled:
        if idx >= n_unassigned:
            break
        take = unassigned[idx : idx + remaining]
        idx += len(take)
        mine = target[mid]
        for t, p in take:
            mine.setdefault(t, []).append(p)
    if idx < n_unassigned:
        raise InputError("server-uniform: partitions were left unassigned (PartitionAssignorException)")
    return target
