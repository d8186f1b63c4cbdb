"""What kgtool's two KIP-848 server-side assignors share: the ``GroupSpec`` the coordinator builds.

Sources: ``org.apache.kafka.coordinator.group.assignor`` / ``modern`` (Kafka 4.x, group-coordinator
module): ``GroupSpecImpl`` (``memberIds``, ``isPartitionAssigned``, ``memberAssignment``),
``MemberSubscriptionAndAssignmentImpl``, ``SubscribedTopicDescriberImpl``, and
``ModernGroup.subscriptionType`` (HOMOGENEOUS when every subscribed topic has every member).

Topic ids are ``Uuid``\\s; the golden harness used the name-based (MD5) UUID of each topic name, and
so does kgtool wherever iteration order depends on ids (``HashSet<Uuid>``, ``HashMap<Uuid, ...>``).

Member order (``GroupSpecImpl.memberIds()`` is the key set of the member map the caller built):
kgtool iterates members in ``java.util.HashMap<String, ...>`` order (String.hashCode buckets,
ties in input order), as the coordinator's own maps of members are hash maps. Evidence from the
golden cases: the homogeneous uniform builder gives the extra partition to the first members in
this order, and of the 39 homogeneous ``server_uniform`` cases the HashMap order reproduces 39,
input order 4 and sorted order 4; with it all 150 ``server_uniform`` cases pass. (``server-range``
sorts its members itself, ``RangeAssignor.sortMemberIds``, so it does not depend on this.)
"""

from __future__ import annotations

from itertools import chain, groupby, repeat
from operator import itemgetter

import numpy as np

from kgtool.assignors.model import GroupSpec, MemberSpec, TopicPartition
from kgtool.errors import InputError
from kgtool.java import (
    hash_order,
    hash_set_initial_capacity,
    load_factor_capacity,
    name_uuid_bits,
    string_hash_order,
    uuid_hashcode,
)

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


class ServerGroup:
    """The pieces of ``GroupSpecImpl`` and ``SubscribedTopicDescriber`` the assignors read.

    - ``member_ids``: ``GroupSpecImpl.memberIds()`` order (HashMap<String, ...> order); members
      are referred to by their index in this list;
    - ``subscriptions``: member -> subscribed topic names that exist (``subscribedTopicIds``);
      identical subscriptions share one list;
    - ``partitions``: topic -> partition count (``SubscribedTopicDescriber.numPartitions``);
    - ``subscription_type``: HOMOGENEOUS or HETEROGENEOUS;
    - the current target assignment (kgtool's ``owned``) laid out over all partitions: topic
      ``t``'s partition ``p`` is slot ``offsets[t] + p`` of ``owner`` (int64, -1 when nobody
      holds it), counting only partitions of topics the holder still subscribes to (what both
      builders keep: the rest is revoked first); ``sizes[i]`` is how many of them member ``i``
      holds. Owned partitions are assumed distinct (kgtool's group readers reject a member owning
      a partition twice); partitions of unknown topics or beyond the partition count are ignored.
    - :meth:`assignment`: one member's full current assignment, topic -> partitions in the
      member's order, for the few places that walk it entry by entry.
    """

    def __init__(self, group: GroupSpec) -> None:
        by_id: dict[str, MemberSpec] = {}
        for m in group.members:
            by_id.setdefault(m.member_id, m)
        self._by_id = by_id
        self.member_ids: list[str] = string_hash_order(list(by_id))
        topics = group.topics
        self.partitions: dict[str, int] = {t: spec.partitions for t, spec in topics.items()}
        self.topic_names: list[str] = list(topics)
        self.topic_index: dict[str, int] = {t: i for i, t in enumerate(self.topic_names)}
        counts = np.array([topics[t].partitions for t in self.topic_names], dtype=np.int64)
        self.offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self.total = int(self.offsets[-1])

        shared: dict[tuple[str, ...], list[str]] = {}
        self.subscriptions: dict[str, list[str]] = {}
        for mid in self.member_ids:
            key = by_id[mid].topics
            subs = shared.get(key)
            if subs is None:
                subs = shared[key] = [t for t in dict.fromkeys(key) if t in topics]
            self.subscriptions[mid] = subs
        # ModernGroup.subscriptionType / computeSubscriptionType: HOMOGENEOUS when every
        # subscribed topic name is subscribed by every member.
        distinct = list({id(v): v for v in shared.values()}.values())
        first = set(distinct[0]) if distinct else set()
        homogeneous = all(set(v) == first for v in distinct)
        self.subscription_type = HOMOGENEOUS if homogeneous else HETEROGENEOUS
        self._layout_owned(counts, shared)

    def _layout_owned(self, counts: np.ndarray, shared: dict[tuple[str, ...], list[str]]) -> None:
        num_members = len(self.member_ids)
        num_topics = len(self.topic_names)
        rows_topic: list[int] = []
        rows_part: list[int] = []
        ends = [0] * num_members
        get = self.topic_index.get
        for i, mid in enumerate(self.member_ids):
            owned = self._by_id[mid].owned
            if owned:
                ts, ps = zip(*owned)
                rows_topic.extend(map(get, ts, repeat(-1)))
                rows_part.extend(ps)
            ends[i] = len(rows_topic)
        self.owner = np.full(self.total, -1, dtype=np.int64)
        self.sizes = np.zeros(num_members, dtype=np.int64)
        if not rows_topic:
            return
        rt = np.array(rows_topic, dtype=np.int64)
        rp = np.array(rows_part, dtype=np.int64)
        rm = np.repeat(np.arange(num_members, dtype=np.int64), np.diff(np.array([0, *ends], dtype=np.int64)))
        # Subscription matrix: member x topic.
        sub_rows = {}
        for key, lst in shared.items():
            row = np.zeros(num_topics, dtype=bool)
            row[[self.topic_index[t] for t in lst]] = True
            sub_rows[id(lst)] = row
        subscribed = np.stack([sub_rows[id(self.subscriptions[mid])] for mid in self.member_ids])
        known = rt >= 0
        safe_t = np.where(known, rt, 0)
        keep = known & (rp >= 0) & (rp < counts[safe_t]) & subscribed[rm, safe_t]
        rm, rt, rp = rm[keep], rt[keep], rp[keep]
        # maybeRevokePartitions (both builders): members in memberIds order set the owners.
        self.owner[self.offsets[rt] + rp] = rm
        self.sizes = np.bincount(rm, minlength=num_members).astype(np.int64)

    def assignment(self, member_index: int) -> dict[str, list[int]]:
        """``GroupSpec.memberAssignment(memberId)``: topic -> partitions, member's order."""
        per_topic: dict[str, list[int]] = {}
        counts = self.partitions
        second = itemgetter(1)
        for t, grp in groupby(self._by_id[self.member_ids[member_index]].owned, key=itemgetter(0)):
            n = counts.get(t)
            if n is None:
                continue
            ps = [p for p in map(second, grp) if 0 <= p < n]
            if t in per_topic:
                per_topic[t].extend(ps)
            elif ps:
                per_topic[t] = ps
        return per_topic

    def topic_owners(self, topic: str) -> np.ndarray:
        """A view of ``owner`` for one topic's partitions."""
        i = self.topic_index[topic]
        return self.owner[self.offsets[i] : self.offsets[i + 1]]


def int_set_order(values: list[int]) -> list[int]:
    """Iteration order of a ``HashSet<Integer>`` filled with ``values`` (``Integer.hashCode`` = value).

    Below 65536 ``HashMap.hash(p)`` is ``p`` itself, so the bucket is ``p & (capacity - 1)``.
    """
    if values and max(values) < 65536 and min(values) >= 0:
        mask = load_factor_capacity(len(values)) - 1
        if max(values) <= mask:
            return sorted(values)
        return sorted(values, key=mask.__and__)
    return hash_order(values, int)


def server_group(group: GroupSpec) -> ServerGroup:
    """Build the assignor's view of ``group`` as the group coordinator would."""
    return ServerGroup(group)


def result_from_owner(group: GroupSpec, sg: ServerGroup) -> dict[str, list[TopicPartition]]:
    """Each member's partitions, sorted by topic then partition, from ``sg.owner``.

    Layout: the ``(topic, partition)`` tuples are made once, topic by topic in name order, in a
    NumPy object array; a stable sort of the slots by owner makes each member's partitions one
    contiguous, already ordered run, cut out with one slice per member.
    """
    out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in group.members}
    if sg.total == 0:
        return out
    names = sg.topic_names
    by_name = sorted(range(len(names)), key=names.__getitem__)
    offsets = sg.offsets
    perm = np.concatenate([np.arange(offsets[i], offsets[i + 1], dtype=np.int64) for i in by_name])
    owner_seq = sg.owner[perm]
    order = np.argsort(owner_seq, kind="stable")
    owners_sorted = owner_seq[order]
    first_owned = int(np.searchsorted(owners_sorted, 0))
    if first_owned == len(order):
        return out
    tuples = chain.from_iterable(
        zip(repeat(names[i]), range(int(offsets[i + 1] - offsets[i]))) for i in by_name
    )
    tps = np.fromiter(tuples, dtype=object, count=sg.total)
    order = order[first_owned:]
    owners_sorted = owners_sorted[first_owned:]
    picked = tps[order].tolist()
    cuts = np.flatnonzero(owners_sorted[1:] != owners_sorted[:-1]) + 1
    starts = [0, *cuts.tolist()]
    ends = [*cuts.tolist(), len(order)]
    member_ids = sg.member_ids
    for a, b in zip(starts, ends):
        out[member_ids[int(owners_sorted[a])]] = picked[a:b]
    return out


def check_topics_exist(group: GroupSpec, message: str) -> None:
    """Raise :class:`InputError` naming the first member subscribed to a topic without metadata.

    ``message`` is formatted with ``member`` and ``topic``. Identical subscriptions are checked once.
    """
    topics = group.topics
    seen: set[tuple[str, ...]] = set()
    for m in group.members:
        if m.topics in seen:
            continue
        seen.add(m.topics)
        for t in m.topics:
            if t not in topics:
                raise InputError(message.format(member=m.member_id, topic=t))
