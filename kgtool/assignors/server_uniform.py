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

from kgtool.assignors._perf import gc_paused
from kgtool.assignors._server import (
    HOMOGENEOUS,
    ServerGroup,
    check_topics_exist,
    int_set_order,
    result_from_owners,
    server_group,
    uuid_hash_order,
    uuid_set_copy_order,
)
from kgtool.assignors._uniform_heterogeneous import heterogeneous
from kgtool.assignors.model import Assignment, GroupSpec
from kgtool.errors import InputError


class UniformAssignor:
    """The group coordinator's ``UniformAssignor`` (exposed as ``server-uniform``)."""

    name = "server-uniform"

    @gc_paused
    def assign(self, group: GroupSpec) -> Assignment:
        """Return each member's target assignment, partitions sorted by topic and number.

        Raises :class:`kgtool.errors.InputError` when a member subscribes to a topic without
        metadata (``PartitionAssignorException: Members are subscribed to topic ... which doesn't
        exist in the topic metadata``).
        """
        check_topics_exist(group, "member {member} is subscribed to topic {topic} which doesn't exist in the topic metadata")
        if not group.members:
            return {}
        sg = server_group(group)
        if sg.subscription_type == HOMOGENEOUS:
            owners = _homogeneous(sg)
        else:
            owners = heterogeneous(sg)
        return result_from_owners(group, sg.member_ids, owners)


def _homogeneous(sg: ServerGroup) -> dict[str, list[int]]:
    """``UniformHomogeneousAssignmentBuilder.build``: topic -> owner index of every partition."""
    member_ids = sg.member_ids
    # subscribedTopicIds = new HashSet<>(first member's subscribedTopicIds()).
    subscribed = uuid_set_copy_order(sg.subscriptions[member_ids[0]])
    if not subscribed:
        # build(): an empty subscription returns an empty GroupAssignment.
        return {}
    subscribed_set = set(subscribed)
    partitions = sg.partitions
    owners = {t: [-1] * partitions[t] for t in subscribed}
    # GroupSpecImpl.isPartitionAssigned: held by some member in the current target assignment.
    for i, mid in enumerate(member_ids):
        for t, ps in sg.assignment[mid].items():
            own = owners.get(t)
            if own is not None:
                for p in ps:
                    own[p] = i
    unassigned: list[tuple[str, int]] = []
    total = 0
    for t in subscribed:
        own = owners[t]
        n = partitions[t]
        if own.count(-1) == n:
            unassigned.extend(zip(repeat(t), range(n)))
        else:
            unassigned.extend((t, p) for p in range(n) if own[p] == -1)
        total += n

    num_members = len(member_ids)
    min_quota, extra = divmod(total, num_members)

    # maybeRevokePartitions.
    unfilled: list[tuple[int, int]] = []
    for i, mid in enumerate(member_ids):
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        old = sg.assignment[mid]
        # oldAssignment.entrySet(): HashMap<Uuid, Set<Integer>> order.
        for t in uuid_hash_order(list(old)) if len(old) > 1 else old:
            ps = old[t]
            if t not in subscribed_set:
                continue  # "Remove the entire topic."
            if len(ps) <= quota:
                quota -= len(ps)
            else:
                # Keep the first `quota` partitions in HashSet<Integer> order, revoke the rest.
                ordered = int_set_order(ps)
                own = owners[t]
                for p in ordered[quota:]:
                    if own[p] == i:
                        own[p] = -1
                    unassigned.append((t, p))
                quota = 0
        if quota > 0:
            unfilled.append((i, quota))

    # assignRemainingPartitions: unfilled members in order take the next `remaining` partitions.
    idx = 0
    n_unassigned = len(unassigned)
    for i, remaining in unfilled:
        if idx >= n_unassigned:
            break
        for t, p in unassigned[idx : idx + remaining]:
            owners[t][p] = i
        idx += remaining
    if idx < n_unassigned:
        raise InputError("server-uniform: partitions were left unassigned (PartitionAssignorException)")
    return owners
