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

import numpy as np

from kgtool.assignors._perf import gc_paused
from kgtool.assignors._server import (
    HOMOGENEOUS,
    ServerGroup,
    check_topics_exist,
    int_set_order,
    result_from_owner,
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
            _homogeneous(sg)
        else:
            heterogeneous(sg)
        return result_from_owner(group, sg)


def _homogeneous(sg: ServerGroup) -> None:
    """``UniformHomogeneousAssignmentBuilder.build``, updating ``sg.owner`` in place."""
    member_ids = sg.member_ids
    # subscribedTopicIds = new HashSet<>(first member's subscribedTopicIds()).
    subscribed = uuid_set_copy_order(sg.subscriptions[member_ids[0]])
    if not subscribed:
        # build(): an empty subscription returns an empty GroupAssignment.
        sg.owner[:] = -1
        return
    subscribed_set = set(subscribed)
    own = sg.owner
    offsets = sg.offsets
    index = sg.topic_index
    # Unassigned partitions, first pass: topics in HashSet<Uuid> order, partitions ascending,
    # those GroupSpecImpl.isPartitionAssigned does not know.
    pieces = []
    total = 0
    for t in subscribed:
        base = int(offsets[index[t]])
        n = sg.partitions[t]
        pieces.append(np.flatnonzero(own[base : base + n] == -1) + base)
        total += n

    num_members = len(member_ids)
    min_quota, extra = divmod(total, num_members)
    # maybeRevokePartitions: the first `extra` members (memberIds order) get one more.
    quotas = np.full(num_members, min_quota, dtype=np.int64)
    quotas[:extra] += 1
    sizes = sg.sizes
    remaining = quotas - sizes
    revoked: list[int] = []
    for i in np.flatnonzero(remaining < 0).tolist():
        # Walk the member's assignment like maybeRevokePartitions: topics in the HashMap<Uuid,
        # Set<Integer>> order, partitions in HashSet<Integer> order; keep up to the quota.
        quota = int(quotas[i])
        old = sg.assignment(i)
        for t in uuid_hash_order(list(old)) if len(old) > 1 else old:
            if t not in subscribed_set:
                continue  # "Remove the entire topic."
            ps = old[t]
            if len(ps) <= quota:
                quota -= len(ps)
                continue
            base = int(offsets[index[t]])
            for p in int_set_order(ps)[quota:]:
                if own[base + p] == i:
                    own[base + p] = -1
                revoked.append(base + p)
            quota = 0
        remaining[i] = 0
    pieces.append(np.array(revoked, dtype=np.int64))
    unassigned = np.concatenate(pieces)

    # assignRemainingPartitions: unfilled members, in order, take the next `remaining` slots.
    unfilled = np.flatnonzero(remaining > 0)
    takers = np.repeat(unfilled, remaining[unfilled])
    if len(unassigned) > len(takers):
        raise InputError("server-uniform: partitions were left unassigned (PartitionAssignorException)")
    own[unassigned] = takers[: len(unassigned)]
