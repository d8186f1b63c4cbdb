"""The data every assignor takes and returns.

A described group is topics (with partition counts and, optionally, the racks of each
partition's replicas) and members (subscription, previously owned partitions, generation,
rack, static instance id). Assignors return, per member, the partitions in the exact order
Kafka's Java assignor produces them.

The shapes mirror what Kafka's assignors see:

- client side, ``ConsumerPartitionAssignor.GroupSubscription``: member id -> ``Subscription``
  (topics, userData, ownedPartitions, generationId, rackId, groupInstanceId);
- server side (KIP-848), ``GroupSpec`` / ``SubscribedTopicDescriber``: member subscriptions,
  the current target assignment (here: ``owned``), partition racks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

TopicPartition = tuple[str, int]

#: ``AbstractStickyAssignor.DEFAULT_GENERATION`` / ``ConsumerProtocolSubscription`` default.
DEFAULT_GENERATION = -1


@dataclass(frozen=True)
class TopicSpec:
    """A topic as the assignor's metadata (``Cluster`` / ``SubscribedTopicDescriber``) shows it."""

    name: str
    partitions: int
    #: Racks of each partition's replicas, ``racks[p]`` for partition ``p`` (KIP-881), or None.
    racks: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True)
class MemberSpec:
    """One member's subscription as the leader (or the group coordinator) receives it."""

    member_id: str
    topics: tuple[str, ...]
    #: Partitions owned in the previous generation, in the order the member reported them.
    owned: tuple[TopicPartition, ...] = ()
    #: Generation the ``owned`` partitions belong to (None: not sent; -1 is Kafka's default).
    generation: int | None = None
    rack: str | None = None
    instance_id: str | None = None


@dataclass
class GroupSpec:
    """A described group: topics by name (insertion order kept) and members in input order."""

    topics: dict[str, TopicSpec]
    members: list[MemberSpec]
    assignor: str | None = None

    def member(self, member_id: str) -> MemberSpec:
        for m in self.members:
            if m.member_id == member_id:
                return m
        raise KeyError(member_id)


#: member id -> partitions, in the order the assignor produced them.
Assignment = dict[str, list[TopicPartition]]


class Assignor(Protocol):
    """An assignor: Kafka's protocol name and a pure function of the group."""

    #: Kafka's name: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``,
    #: ``server-uniform`` (``uniform``), ``server-range`` (``range`` of the group coordinator).
    name: str

    def assign(self, group: GroupSpec) -> Assignment:
        """Return every member's partitions; every member appears, idle ones with ``[]``."""
        ...


@dataclass
class AssignorInfo:
    """What the CLI and docs say about an assignor."""

    name: str
    kafka_class: str
    side: str  # "client" or "server"
    rebalance_protocol: str  # "eager" or "cooperative" (server: "consumer" KIP-848)
    summary: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)
