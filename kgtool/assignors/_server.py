"""What kgtool's two KIP-848 server-side assignors share: the ``GroupSpec`` the coordinator builds.

Sources: ``org.apache.kafka.coordinator.group.assignor`` / ``modern`` (Kafka 4.x, group-coordinator
module): ``GroupSpecImpl`` (``memberIds``, ``isPartitionAssigned``, ``memberAssignment``),
``MemberSubscriptionAndAssignmentImpl``, ``SubscribedTopicDescriberImpl``, and
``ModernGroup.subscriptionType`` (HOMOGENEOUS when every subscribed topic has every member).

Topic ids are ``Uuid``\\s; the golden harness used the name-based (MD5) UUID of each topic name, and
so does kgtool wherever iteration order depends on ids (``HashSet<Uuid>``, ``HashMap<Uuid, ...>``).

Member order (``GroupSpecImpl.memberIds()`` is the key set of the member map the caller built):
kgtool iterates members in a ``java.util.HashMap<String, ...>`` order (String.hashCode buckets,
ties in input order). Evidence: among the orders tried (input order, sorted, HashMap order), only
the HashMap order reproduces all 150 ``server_range`` and 150 ``server_uniform`` golden cases --
the member that keeps an extra partition is the first one in that order.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgtool.assignors._java import (
    hash_order,
    hash_set_initial_capacity,
    name_uuid_bits,
    string_hash_order,
    uuid_hashcode,
)
from kgtool.assignors.model import GroupSpec, MemberSpec

HOMOGENEOUS = "HOMOGENEOUS"
HETEROGENEOUS = "HETEROGENEOUS"

_UUID_CACHE: dict[str, tuple[int, int, int]] = {}


def topic_uuid(name: str) -> tuple[int, int, int]:
    """(hashCode, msb, lsb) of the topic's id: ``Uuid`` of ``UUID.nameUUIDFromBytes(name)``."""
    got = _UUID_CACHE.get(name)
    if got is None:
        msb, lsb = name_uuid_bits(name)
        got = _UUID_CACHE[name] = (uuid_hashcode(msb, lsb), msb, lsb)
    return got


def topic_uuid_hash(name: str) -> int:
    return topic_uuid(name)[0]


def uuid_hash_order(names: list[str], initial: int = 16) -> list[str]:
    """Topic names in the iteration order of a ``HashMap<Uuid, ...>`` / ``HashSet<Uuid>`` of their ids."""
    return hash_order(names, topic_uuid_hash, initial)


def uuid_set_copy_order(names: list[str]) -> list[str]:
    """``new HashSet<>(Set<Uuid>)``: capacity from the size, ties in the source set's order."""
    return hash_order(names, topic_uuid_hash, hash_set_initial_capacity(len(names)))


@dataclass
class ServerGroup:
    """The pieces of ``GroupSpecImpl`` and ``SubscribedTopicDescriber`` the assignors read.

    - ``member_ids``: ``GroupSpecImpl.memberIds()`` order (HashMap<String, ...> order);
    - ``subscriptions``: member -> subscribed topic names that exist (``subscribedTopicIds``);
    - ``assignment``: member -> {topic: partitions in ``HashSet<Integer>`` iteration order}
      (the current target assignment, kgtool's ``owned``), only topics that exist;
    - ``partitions``: topic -> partition count (``SubscribedTopicDescriber.numPartitions``);
    - ``subscription_type``: HOMOGENEOUS or HETEROGENEOUS.
    """

    member_ids: list[str]
    subscriptions: dict[str, list[str]]
    assignment: dict[str, dict[str, list[int]]]
    partitions: dict[str, int]
    subscription_type: str


def int_set_order(values: list[int]) -> list[int]:
    """Iteration order of a ``HashSet<Integer>`` filled with ``values`` (``Integer.hashCode`` = value)."""
    return hash_order(values, int)


def server_group(group: GroupSpec) -> ServerGroup:
    """Build the assignor's view of ``group`` as the group coordinator would."""
    members = group.members
    by_id: dict[str, MemberSpec] = {}
    for m in members:
        by_id.setdefault(m.member_id, m)
    member_ids = string_hash_order(list(by_id))
    topics = group.topics
    subscriptions: dict[str, list[str]] = {}
    assignment: dict[str, dict[str, list[int]]] = {}
    for mid in member_ids:
        m = by_id[mid]
        subscriptions[mid] = [t for t in dict.fromkeys(m.topics) if t in topics]
        per_topic: dict[str, list[int]] = {}
        for t, p in m.owned:
            if t in topics and 0 <= p < topics[t].partitions:
                per_topic.setdefault(t, []).append(p)
        assignment[mid] = {t: int_set_order(ps) for t, ps in per_topic.items()}
    # ModernGroup.subscriptionType / computeSubscriptionType: HOMOGENEOUS when every subscribed
    # topic name is subscribed by every member.
    first = set(subscriptions[member_ids[0]]) if member_ids else set()
    homogeneous = all(set(s) == first for s in subscriptions.values())
    return ServerGroup(
        member_ids=member_ids,
        subscriptions=subscriptions,
        assignment=assignment,
        partitions={t: spec.partitions for t, spec in topics.items()},
        subscription_type=HOMOGENEOUS if homogeneous else HETEROGENEOUS,
    )

