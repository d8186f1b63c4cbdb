"""Kafka's client-side ``sticky`` (eager) and ``cooperative-sticky`` assignors, exactly.

Sources (Apache Kafka 4.0, ``clients/src/main/java/org/apache/kafka/clients/consumer/``):
``internals/AbstractStickyAssignor.java``, ``StickyAssignor.java``,
``CooperativeStickyAssignor.java``, ``internals/AbstractPartitionAssignor.java``.

Both assignors share ``AbstractStickyAssignor.assignPartitions``:

1. ``allSubscriptionsEqual`` collects every member's previously owned partitions that still
   belong to a subscribed topic. When two members claim one partition, the member with the
   higher generation keeps it; with equal generations neither does (the partition is then
   "claimed by multiple previous owners"). The other claimant's generation is read from its
   ``Subscription.generationId``, which Kafka's consumers send for both assignors
   (``ConsumerCoordinator.metadata``), so kgtool uses ``MemberSpec.generation`` for both.
2. With identical subscriptions, ``ConstrainedAssignmentBuilder``: each member keeps its owned
   partitions (sorted by partition, then topic) up to ``minQuota``/``maxQuota``, the rest are
   dealt round-robin to members sorted by id, partitions sorted by topic then partition;
   rack-aware (KIP-881) first when members and partition replicas carry racks.
3. Otherwise ``GeneralAssignmentBuilder``: owned partitions are kept, the rest assigned one by
   one to the least-loaded subscriber (``TreeSet`` ordered by (size, member id)), then
   partitions are moved until the assignment is balanced, preferring to move a partition
   back to its previous owner of an older generation.

Where the eager and the cooperative assignors differ:

- ``sticky`` reads the previous assignment and generation from its own subscription user
  data (``StickyAssignorUserData``: ``previous_assignment`` + ``generation``); in kgtool's
  model that is ``MemberSpec.owned`` + ``MemberSpec.generation``.
- ``cooperative-sticky`` reads ``ownedPartitions`` + ``generationId`` (ConsumerProtocol v3),
  the same two fields, then ``adjustAssignment`` withholds every partition that changes owner
  in this round: the old owner revokes it first, and a follow-up rebalance hands it over.

Member order: Kafka's leader (``ConsumerCoordinator.onLeaderElected``) puts the subscriptions
in a ``HashMap`` keyed by member id, and ``consumerToOwnedPartitions`` is another ``HashMap``;
the constrained builder's quota decisions follow that iteration order. kgtool reproduces it
(:mod:`kgtool.java`). Evidence: all 300 sticky/cooperative golden cases pass
with that order, while input order, sorted order or reversed input order pass only 291 (see
``tests/assignors/test_sticky.py::test_member_order_is_java_hash_map_order``).

Order of the owned partitions as the leader reads them (it decides the order of the kept
partitions in the output): ``cooperative-sticky`` gets them from ``ConsumerProtocol``, which
sorts them by topic, then partition; ``sticky`` gets them from its user data, grouped by topic
in ``HashMap`` order (:func:`user_data_partitions`).

Speed: :mod:`kgtool.assignors._sticky_fast` computes the result on integer arrays
(1,000,000 partitions and 2,000 members in well under a second for identical subscriptions),
for every group; the tests hold it against the golden cases and against a line-by-line port
of ``AbstractStickyAssignor`` (``tests/assignors/sticky_reference.py``).

Worked example (``StickyAssignor`` javadoc, repeated by the tests): C0, C1, C2 subscribed to
t0..t3 with 2 partitions each get C0: t0p0 t1p1 t3p0, C1: t0p1 t2p0 t3p1, C2: t1p0 t2p1.
After C1 leaves, C0 and C2 keep theirs: C0: t0p0 t3p0 t1p1 t0p1, C2: t1p0 t2p1 t2p0 t3p1.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgtool.assignors import _sticky_common as common
from kgtool.assignors import _sticky_fast
from kgtool.assignors._sticky_common import StickyAssignorFailure
from kgtool.assignors.model import Assignment, GroupSpec
from kgtool.java import string_hash_order, string_order_key

__all__ = ["CooperativePlan", "CooperativeStickyAssignor", "StickyAssignor", "StickyAssignorFailure"]


def sticky_input(group: GroupSpec, *, cooperative: bool) -> common.StickyInput:
    """What Kafka's ``assignPartitions`` receives for this group, in Java's iteration order.

    ``AbstractPartitionAssignor.assign(Cluster, GroupSubscription)``: only topics someone
    subscribes to, known to the metadata and with at least one partition, are assigned.
    """
    ids = [m.member_id for m in group.members]
    by_id = {m.member_id: m for m in group.members}
    members = common.member_iteration_order(ids)
    raw_owned = {i: by_id[i].owned for i in ids}
    partitions_per_topic: dict[str, int] = {}
    replica_racks = {}
    distinct = {id(m.topics): m.topics for m in group.members}  # members often share one tuple
    for topics in distinct.values():
        for t in topics:
            if t in partitions_per_topic:
                continue
            spec = group.topics.get(t)
            if spec is not None and spec.partitions > 0 and t not in partitions_per_topic:
                partitions_per_topic[t] = spec.partitions
                replica_racks[t] = spec.racks
    return common.StickyInput(
        members=members,
        topics_of={i: tuple(by_id[i].topics) for i in ids},
        owned_of=common.LazyOwned(raw_owned, protocol_owned_partitions if cooperative else user_data_partitions),
        raw_owned_of=raw_owned,
        generation_of={i: by_id[i].generation for i in ids},
        # ConsumerCoordinator.metadata() sends generation().generationId in every Subscription
        # (ConsumerProtocol v2+), eager members included; for StickyAssignor it equals the
        # generation in its user data.
        subscription_generation_of={
            i: (by_id[i].generation if by_id[i].generation is not None else common.DEFAULT_GENERATION)
            for i in ids
        },
        rack_of={i: by_id[i].rack for i in ids},
        partitions_per_topic=partitions_per_topic,
        replica_racks=replica_racks,
    )


def user_data_partitions(owned) -> list:
    """The previous assignment as ``StickyAssignor`` reads it back from its user data.

    ``StickyAssignor.serializeTopicPartitionAssignment`` groups the partitions with
    ``CollectionUtils.groupPartitionsByTopic``, a ``HashMap<String, List<Integer>>``: topics
    come back in that map's iteration order, each topic's partitions in their original order.
    """
    by_topic: dict[str, list] = {}
    for tp in owned:
        by_topic.setdefault(tp[0], []).append(tp)
    return [tp for t in string_hash_order(by_topic) for tp in by_topic[t]]


def protocol_owned_partitions(owned) -> list:
    """``ownedPartitions`` as the leader decodes them from ConsumerProtocolSubscription v1+.

    ``ConsumerProtocol.serializeSubscription`` sorts the owned partitions by topic
    (``String.compareTo``), then partition, and writes one entry per topic.
    """
    skey = string_order_key({tp[0] for tp in owned})
    return sorted(owned, key=lambda tp: (skey(tp[0]), tp[1]))


def _result(group: GroupSpec, assignment: dict[str, list]) -> Assignment:
    return {m.member_id: list(assignment.get(m.member_id, ())) for m in group.members}


def assign_partitions(group: GroupSpec, *, cooperative: bool) -> tuple[Assignment, dict[tuple[str, int], str] | None]:
    """``AbstractStickyAssignor.assignPartitions``: the assignment before any cooperative adjustment.

    Returns every member's partitions and ``partitionsTransferringOwnership`` (None when the
    general builder ran, as in Java). ``cooperative`` selects how the previous assignment is
    read: ``ownedPartitions`` + ``generationId`` (True) or ``StickyAssignor`` user data (False).
    """
    if not group.members:
        return {}, {}
    inp = sticky_input(group, cooperative=cooperative)
    assignment, transferring, general_ran = _sticky_fast.assign(inp, cooperative=cooperative, adjust=False)
    # Java leaves partitionsTransferringOwnership null after the general builder.
    return _result(group, assignment), (None if general_ran else transferring)


@dataclass
class CooperativePlan:
    """A cooperative-sticky round: what each member gets now, and what it gets after revocation.

    ``withheld`` maps each partition changing owner (``partitionsTransferringOwnership``) to
    the member that will receive it in the follow-up rebalance, once its owner revoked it.
    """

    assignment: Assignment
    withheld: dict[tuple[str, int], str]


class StickyAssignor:
    """``org.apache.kafka.clients.consumer.StickyAssignor`` (eager protocol), name ``sticky``."""

    name = "sticky"

    def assign(self, group: GroupSpec) -> Assignment:
        """Every member's partitions, in the order Kafka's ``StickyAssignor`` lists them.

        Raises :class:`StickyAssignorFailure` where Kafka's assignor itself throws.
        """
        if not group.members:
            return {}
        assignment, _, _ = _sticky_fast.assign(sticky_input(group, cooperative=False), cooperative=False)
        return _result(group, assignment)  # eager: no adjustment


class CooperativeStickyAssignor:
    """``org.apache.kafka.clients.consumer.CooperativeStickyAssignor``, name ``cooperative-sticky``.

    Partitions that change owner in this round are withheld from the new owner
    (``adjustAssignment``), so they appear in no member's list.
    """

    name = "cooperative-sticky"

    def assign(self, group: GroupSpec) -> Assignment:
        """Every member's partitions after ``adjustAssignment``, in Kafka's order.

        Raises :class:`StickyAssignorFailure` where Kafka's assignor itself throws.
        """
        return self.plan(group).assignment

    def plan(self, group: GroupSpec) -> CooperativePlan:
        """The assignment sent this round plus the partitions withheld for revocation."""
        if not group.members:
            return CooperativePlan({}, {})
        assignment, transferring, _ = _sticky_fast.assign(sticky_input(group, cooperative=True), cooperative=True)
        return CooperativePlan(_result(group, assignment), transferring)
