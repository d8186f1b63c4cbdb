"""What the sticky assignors share: their input, Kafka's failure, and the steps on tuples.

:mod:`kgtool.assignors.sticky` builds a :class:`StickyInput`; :mod:`._sticky_fast` computes the
assignment from it and uses the tuple-level steps below where Java's bookkeeping is easier to
follow on ``(topic, partition)`` tuples than on arrays (claims resolved by generation, the
``PartitionMovements`` of the general builder, the cooperative transfers after conflicts).

Source: ``clients/src/main/java/org/apache/kafka/clients/consumer/internals/
AbstractStickyAssignor.java`` (Apache Kafka 4.0: ``DEFAULT_GENERATION``,
``allSubscriptionsEqual``, ``PartitionMovements``) and ``CooperativeStickyAssignor.java``
(``computePartitionsTransferringOwnership``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgtool.errors import InputError
from kgtool.java import TopicPartitionHashSet, java_string_hashcode, string_hash_order

TP = tuple[str, int]

#: ``AbstractStickyAssignor.DEFAULT_GENERATION``.
DEFAULT_GENERATION = -1


class StickyAssignorFailure(InputError):
    """Kafka's own assignor throws on this group (its exception is named in the message)."""


@dataclass
class StickyInput:
    """What ``AbstractStickyAssignor.assignPartitions`` receives, already in Java's orders.

    ``members`` is the iteration order of the ``subscriptions`` map (a ``HashMap`` keyed by
    member id: see :func:`kgtool.assignors.sticky.sticky_input`).
    """

    members: list[str]
    topics_of: dict[str, tuple[str, ...]]  # Subscription.topics()
    owned_of: Mapping[str, list[TP]]  # MemberData.partitions
    generation_of: dict[str, int | None]  # MemberData.generation (None: Optional.empty())
    subscription_generation_of: dict[str, int]  # Subscription.generationId().orElse(-1)
    rack_of: dict[str, str | None]  # Subscription.rackId()
    partitions_per_topic: dict[str, int]  # subscribed topics with metadata and > 0 partitions
    replica_racks: dict[str, tuple[tuple[str, ...], ...] | None] = field(default_factory=dict)
    #: MemberData.partitions before the protocol's reordering (for order-free uses).
    raw_owned_of: Mapping[str, Sequence[TP]] | None = None

    def __post_init__(self) -> None:
        if self.raw_owned_of is None:
            self.raw_owned_of = self.owned_of


class LazyOwned(Mapping):
    """member -> owned partitions, reordered by ``transform`` on first access only."""

    def __init__(self, raw: Mapping[str, Sequence[TP]], transform) -> None:
        self.raw = raw
        self.transform = transform
        self.cache: dict[str, list[TP]] = {}

    def __getitem__(self, member: str) -> list[TP]:
        v = self.cache.get(member)
        if v is None:
            v = self.cache[member] = self.transform(self.raw[member])
        return v

    def __iter__(self):
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


def member_iteration_order(member_ids: list[str]) -> list[str]:
    """Iteration order of a ``HashMap`` keyed by member id, filled in this order.

    Both maps the assignor iterates (the leader's ``subscriptions`` and
    ``consumerToOwnedPartitions``) are ``HashMap``s of member ids. The golden cases confirm it:
    all 300 cases pass with this order; input, sorted or reversed input order pass only 291
    (``tests/assignors/test_sticky.py::test_member_order_is_java_hash_map_order``).
    """
    return string_hash_order(member_ids)


def all_subscriptions_equal(inp: StickyInput, consumer_to_owned: dict[str, list[TP]],
                            multi_owned: set[TP]) -> tuple[bool, int]:
    """``AbstractStickyAssignor.allSubscriptionsEqual``; returns (equal, maxGeneration).

    Fills ``consumer_to_owned`` (in ``subscriptions`` order) and ``multi_owned``.
    """
    equal = True
    subscribed: set[str] = set()
    max_generation = DEFAULT_GENERATION
    previous_owner: dict[TP, str] = {}
    all_topics = inp.partitions_per_topic
    for consumer in inp.members:
        topics = inp.topics_of[consumer]
        # Java checks subscribedTopics.isEmpty(), so a leading empty subscription is skipped.
        if not subscribed:
            subscribed.update(topics)
        elif equal and not (len(topics) == len(subscribed) and subscribed.issuperset(topics)):
            equal = False
        generation = inp.generation_of[consumer]
        member_generation = DEFAULT_GENERATION if generation is None else generation
        max_generation = max(max_generation, member_generation)
        owned: list[TP] = []
        consumer_to_owned[consumer] = owned
        for tp in inp.owned_of[consumer]:
            if tp[0] not in all_topics:
                continue
            other = previous_owner.get(tp)
            if other is None:
                owned.append(tp)
                previous_owner[tp] = consumer
                continue
            # The other claimant's generation is read from its Subscription, not its MemberData.
            other_generation = inp.subscription_generation_of[other]
            if member_generation == other_generation:
                multi_owned.add(tp)
                list_remove(consumer_to_owned[other], tp)
                previous_owner[tp] = consumer
            elif member_generation > other_generation:
                owned.append(tp)
                list_remove(consumer_to_owned[other], tp)
                previous_owner[tp] = consumer
    return equal, max_generation


def list_remove(lst: list, item) -> None:
    """``List.remove(Object)``: the first occurrence, if any."""
    try:
        lst.remove(item)
    except ValueError:
        pass


class PartitionMovements:
    """``AbstractStickyAssignor.PartitionMovements``."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], TopicPartitionHashSet]] = {}
        self.movements: dict[TP, tuple[str, str]] = {}
        self.topic_hash: dict[str, int] = {}

    def _remove_record(self, tp: TP) -> tuple[str, str]:
        pair = self.movements.pop(tp)
        per_topic = self.by_topic[tp[0]]
        per_topic[pair].remove(tp[1])
        if not per_topic[pair]:
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TP, pair: tuple[str, str]) -> None:
        self.movements[tp] = pair
        per_topic = self.by_topic.setdefault(tp[0], {})
        s = per_topic.get(pair)
        if s is None:
            th = self.topic_hash.get(tp[0])
            if th is None:
                th = self.topic_hash[tp[0]] = java_string_hashcode(tp[0])
            s = per_topic[pair] = TopicPartitionHashSet(th)
        s.add(tp[1])

    def move_partition(self, tp: TP, old: str, new: str) -> None:
        if tp in self.movements:
            existing = self._remove_record(tp)
            if existing[0] != new:
                self._add_record(tp, (existing[0], new))
        else:
            self._add_record(tp, (old, new))

    def get_the_actual_partition_to_be_moved(self, tp: TP, old: str, new: str) -> TP:
        per_topic = self.by_topic.get(tp[0])
        if per_topic is None:
            return tp
        if tp in self.movements:
            old = self.movements[tp][0]
        s = per_topic.get((new, old))
        if s is None:
            return tp
        return (tp[0], s.first())


def partitions_transferring_ownership(inp: StickyInput, assignment: dict[str, list[TP]]) -> dict[TP, str]:
    """``CooperativeStickyAssignor.computePartitionsTransferringOwnership`` (general path).

    ``ownedPartitions`` here are the raw ones from the subscription, unfiltered.
    """
    added: dict[TP, str] = {}
    revoked: set[TP] = set()
    for consumer, assigned in assignment.items():
        owned = inp.owned_of[consumer]
        owned_set = set(owned)
        for tp in assigned:
            if tp not in owned_set:
                added[tp] = consumer
        assigned_set = set(assigned)
        revoked.update(tp for tp in owned if tp not in assigned_set)
    return {tp: c for tp, c in added.items() if tp in revoked}
