"""The sticky assignors on integer arrays: Kafka's ``AbstractStickyAssignor``, for every group.

Partitions are integers ``g = offset[topic] + partition`` with topics in ``String.compareTo``
order, so ascending ``g`` is the order of ``getUnassignedPartitions`` (topic, then partition).
Members are positions in the ``subscriptions`` ``HashMap`` order; racks are bitmasks
(:class:`Racks`, any number of racks). Conflicting claims (one partition claimed by several
members) are resolved by ``allSubscriptionsEqual`` on tuples (:mod:`._sticky_common`), then the
arrays take over. Where Kafka's assignor throws, this raises
:class:`~kgtool.assignors._sticky_common.StickyAssignorFailure` with Java's message. The tests
hold every path against the golden cases and against a line-by-line port of the Java class
(``tests/assignors/sticky_reference.py``).

- ``ConstrainedAssignmentBuilder`` (identical subscriptions): the owned-partition pass is a
  loop over members (not partitions); ``assignRackAwareRoundRobin`` is a loop over partitions
  with its cursor and lists as in Java; ``assignRoundRobin`` is computed in closed form.
  Members below ``minQuota`` (``unfilledMembersWithUnderMinQuotaPartitions``, sorted by id) are
  served in passes: pass ``r`` gives one partition to every member whose deficit is at least
  ``r``, in id order, and a member leaves the list (to the end of
  ``unfilledMembersWithExactlyMinQuotaPartitions``) when its deficit is met. The partitions
  left over go one each to the members polled from the head of that second list.
- ``GeneralAssignmentBuilder``: ``maybeAssign`` without racks is water-filling per topic (the
  ``TreeSet`` always hands the next partition to the least (size, id) subscriber, see
  :func:`_water_fill`); with racks, one argmin per partition over the subscribers on a replica's
  rack. ``performReassignments`` walks the partitions in Java's order, but ``isBalanced`` is
  answered from per-topic aggregates kept up to date on each move (largest owner, smallest
  subscriber by size) instead of rescanning every partition: see :meth:`_General._refresh`.
"""

from __future__ import annotations

import gc
import itertools

import numpy as np

from kgtool.assignors import _sticky_common as common
from kgtool.assignors._sticky_common import StickyAssignorFailure
from kgtool.java import hash_map_capacity, java_string_hashcode, spread, string_order_key

TP = tuple[str, int]


class Layout:
    """Topics in Java order with partition offsets; members by position."""

    def __init__(self, partitions_per_topic: dict[str, int], members: list[str]) -> None:
        key = string_order_key(list(partitions_per_topic) + members)
        self.topics = sorted(partitions_per_topic, key=key)
        self.topic_index = {t: i for i, t in enumerate(self.topics)}
        counts = np.array([partitions_per_topic[t] for t in self.topics], dtype=np.int64)
        self.counts = counts
        self.offsets = np.zeros(len(self.topics) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self.total = int(self.offsets[-1])
        self.offset_of = {t: int(self.offsets[i]) for i, t in enumerate(self.topics)}
        # topic index and partition of every global id
        self.topic_of = np.repeat(np.arange(len(self.topics), dtype=np.int64), counts)
        self.partition_of = np.arange(self.total, dtype=np.int64) - self.offsets[:-1][self.topic_of]
        self.members = members
        self.member_index = {m: i for i, m in enumerate(members)}
        order = sorted(range(len(members)), key=lambda i: key(members[i]))
        self.member_rank = np.empty(len(members), dtype=np.int64)
        self.member_rank[order] = np.arange(len(members))
        self.members_sorted = order  # member positions in String.compareTo order
        self._names = np.array(self.topics, dtype=object)

    def to_ids(self, tps) -> list[int]:
        off = self.offset_of
        return [off[t] + p for t, p in tps if t in off]

    def to_tuples(self, ids: np.ndarray) -> list[TP]:
        if len(ids) == 0:
            return []
        return list(zip(self._names[self.topic_of[ids]].tolist(), self.partition_of[ids].tolist()))


class Racks:
    """``RackInfo`` as bitmasks: one bit per member rack, a mask per partition, a bit per member.

    Only the racks of members get a bit: whether one of a partition's replicas is on a given
    member's rack is all that ``racksMismatch``, ``nextRackConsumer`` and
    ``sortPartitionsByRackConsumers`` ask (``useRackAwareAssignment`` also looks at the other
    racks, and is decided on every rack). Masks are int64 for up to 63 member racks, Python
    ints (object arrays) beyond: the same operators work on both.

    ``member_bit[i]`` is 0 for a member without a rack (it never mismatches); ``aware`` is
    ``useRackAwareAssignment``; when it is False every member's bit is 0.
    """

    def __init__(self, inp: common.StickyInput, lay: Layout) -> None:
        member_racks = [inp.rack_of.get(m) or None for m in lay.members]  # rackId().filter(!isEmpty)
        self.aware = False
        self.member_bit = np.zeros(len(lay.members), dtype=np.int64)
        self.mask = np.zeros(lay.total, dtype=np.int64)
        names: dict[str, int] = {}
        for r in member_racks:
            if r:
                names.setdefault(r, len(names))
        if not names:
            return
        n_member_racks = len(names)
        per_partition = []
        for t in lay.topics:
            racks = inp.replica_racks.get(t)
            n = inp.partitions_per_topic[t]
            for p in range(n):
                m = 0
                if racks:
                    for r in racks[p]:
                        if r is not None:
                            m |= 1 << names.setdefault(r, len(names))
                per_partition.append(m)
        full = np.array(per_partition, dtype=_mask_dtype(len(names)))
        union = int(np.bitwise_or.reduce(full)) if len(full) else 0
        member_bits = (1 << n_member_racks) - 1
        # AbstractPartitionAssignor.useRackAwareAssignment: some member rack holds a replica,
        # and not every partition has its replicas on the same racks.
        if not (union & member_bits) or bool(np.all(full == union)):
            return
        self.aware = True
        dtype = _mask_dtype(n_member_racks)
        self.mask = full if len(names) == n_member_racks else (full & member_bits).astype(dtype)
        self.member_bit = np.array([(1 << names[r]) if r else 0 for r in member_racks], dtype=dtype)
        self.n_member_racks = n_member_racks

    def mismatch(self, member: int, ids: np.ndarray) -> np.ndarray:
        """``racksMismatch`` of one member against partitions."""
        bit = self.member_bit[member]
        if bit == 0:
            return np.zeros(len(ids), dtype=bool)
        return (self.mask[ids] & bit) == 0

    def consumers_on_racks(self, ids: np.ndarray) -> np.ndarray:
        """``RackInfo.numConsumersByPartition``: members on the racks of each partition's replicas."""
        per_rack = np.bincount([b.bit_length() - 1 for b in self.member_bit.tolist() if b],
                               minlength=self.n_member_racks)
        mask = self.mask[ids]
        if mask.dtype == object:  # one step per replica rather than per rack
            counts = []
            for m in mask.tolist():
                c = 0
                while m:
                    low = m & -m
                    c += int(per_rack[low.bit_length() - 1])
                    m ^= low
                counts.append(c)
            return np.array(counts, dtype=np.int64)
        counts = np.zeros(len(ids), dtype=np.int64)
        for r in np.flatnonzero(per_rack).tolist():
            counts += ((mask >> r) & 1) * per_rack[r]
        return counts


def _mask_dtype(n_bits: int):
    """int64 holds 63 rack bits (the sign bit stays clear); Python ints hold any number."""
    return np.int64 if n_bits <= 63 else object


def _claims(inp: common.StickyInput, lay: Layout):
    """Owned partitions per member (positions), or None when some partition is claimed twice."""
    owned_ids = []
    n = 0
    for m in lay.members:
        ids = lay.to_ids(inp.raw_owned_of[m])
        owned_ids.append(ids)
        n += len(ids)
    if n:
        flat = np.fromiter(itertools.chain.from_iterable(owned_ids), dtype=np.int64, count=n)
        if np.bincount(flat, minlength=lay.total).max() > 1:
            return None
    return owned_ids


def constrained(inp: common.StickyInput, lay: Layout, owned_ids: list[list[int]], multi_owned: set[int],
                racks: Racks | None = None):
    """``ConstrainedAssignmentBuilder.build``; returns (per member (kept, new), transferring).

    Raises :class:`StickyAssignorFailure` with Java's message where ``assignRoundRobin``
    throws (partitions left with every member at its quota).
    """
    n = len(lay.members)
    total = lay.total
    aware = racks is not None and racks.aware
    min_q, max_q = total // n, -(-total // n)
    expected_over = total % n
    current_over = 0
    kept: list[np.ndarray] = [None] * n  # type: ignore[list-item]
    under: list[int] = []
    exactly: list[int] = []
    revoked_by = np.full(total, -1, dtype=np.int64)  # maybeRevokedPartitions
    assigned = np.zeros(total, dtype=bool)
    topic_rank = lay.topic_of  # topics are numbered in Java order already
    multi_arr = np.fromiter(multi_owned, dtype=np.int64) if multi_owned else None
    for i in range(n):  # consumerToOwnedPartitions: the same HashMap order as subscriptions
        ids = owned_ids[i]
        if ids:
            arr = np.asarray(ids, dtype=np.int64)
            if aware:  # owned partitions without a replica on the member's rack are dropped
                bad = racks.mismatch(i, arr)
                if bad.any():
                    revoked_by[arr[bad]] = i
                    arr = arr[~bad]
            # Comparator.comparing(TopicPartition::partition).thenComparing(TopicPartition::topic)
            arr = arr[np.lexsort((topic_rank[arr], lay.partition_of[arr]))]
            if multi_arr is not None:
                arr = arr[~np.isin(arr, multi_arr)]
        else:
            arr = np.empty(0, dtype=np.int64)
        size = len(arr)
        if size < min_q:
            keep = arr
            under.append(i)
        elif size >= max_q and current_over < expected_over:
            current_over += 1
            if current_over == expected_over:
                exactly.clear()
            keep = arr[:max_q]
            revoked_by[arr[max_q:]] = i
        else:
            keep = arr[:min_q]
            revoked_by[arr[min_q:]] = i
            if current_over < expected_over:
                exactly.append(i)
        kept[i] = keep
        assigned[keep] = True
    unassigned = np.flatnonzero(~assigned)
    rank = lay.member_rank
    under.sort(key=lambda i: rank[i])
    exactly.sort(key=lambda i: rank[i])
    counts = np.array([len(kept[i]) for i in range(n)], dtype=np.int64)

    rack_new: list[list[int]] = [[] for _ in range(n)]
    rack_members: list[int] = []
    rack_ids: list[int] = []
    if aware:
        # RackInfo.sortPartitionsByRackConsumers: stable sort by the number of members on the
        # racks holding a replica of the partition.
        unassigned = unassigned[np.argsort(racks.consumers_on_racks(unassigned), kind="stable")]
        # assignRackAwareRoundRobin
        bits = racks.member_bit.tolist()
        cnt = counts.tolist()
        next_index = 0
        left = []
        for g, m in zip(unassigned.tolist(), racks.mask[unassigned].tolist()):
            consumer = -1
            index = -1
            if m:
                size_u = len(under)
                for k in range(size_u):
                    j = (next_index + k) % size_u
                    if bits[under[j]] & m:
                        index = j
                        break
            if index >= 0:
                consumer = under[index]
                c = cnt[consumer] + 1
                if c >= min_q:
                    under.remove(consumer)
                    if c < max_q and current_over < expected_over:
                        exactly.append(consumer)
                else:
                    index += 1
                next_index = index % len(under) if under else 0
            elif exactly and m:
                for j, member in enumerate(exactly):
                    if bits[member] & m:
                        consumer = member
                        if cnt[member] + 1 == max_q:
                            del exactly[j]
                            current_over += 1
                            if current_over == expected_over:
                                exactly.clear()
                        break
            if consumer >= 0:
                cnt[consumer] += 1
                rack_new[consumer].append(g)
                rack_members.append(consumer)
                rack_ids.append(g)
            else:
                left.append(g)
        unassigned = np.asarray(left, dtype=np.int64)
        counts = np.asarray(cnt, dtype=np.int64)

    # assignRoundRobin, phase A: passes over `under` (sorted), member i served while r <= deficit.
    under_arr = np.array(under, dtype=np.int64)
    deficit = min_q - counts[under_arr] if len(under_arr) else np.empty(0, dtype=np.int64)
    demand = int(deficit.sum())
    supply = len(unassigned)
    # The partitions left always cover the deficits: outside `under` every member holds
    # minQuota, or maxQuota for at most expectedNumMembersWithOverMinQuotaPartitions of them,
    # whatever the racks did; so Java's verifyUnfilledMembers never throws once
    # allSubscriptionsEqual has made the claims disjoint.
    assert supply >= demand, "assignRoundRobin ran out of partitions below minQuota"
    recipients = np.empty(supply, dtype=np.int64)
    if demand:
        member_rep = np.repeat(np.arange(len(under_arr)), deficit)
        starts = np.repeat(np.cumsum(deficit) - deficit, deficit)
        round_no = np.arange(demand) - starts
        order = np.lexsort((member_rep, round_no))
        recipients[:demand] = under_arr[member_rep[order]]
        # members reach minQuota in pass order: by deficit, then id order
        done = under_arr[np.lexsort((np.arange(len(under_arr)), deficit))]
        exactly.extend(done.tolist())
    # phase B: one partition each to members polled from the head of `exactly`
    leftover = supply - demand
    if leftover > len(exactly):
        raise StickyAssignorFailure(
            "Kafka's sticky assignor throws IllegalStateException: No more unfilled consumers to be assigned.")
    if leftover:
        recipients[demand:] = exactly[:leftover]

    # per-member new partitions, in assignment order (rack-aware step first)
    order = np.argsort(recipients, kind="stable")
    new_sorted = unassigned[order]
    bounds = np.searchsorted(recipients[order], np.arange(n + 1))
    all_new = np.concatenate([np.asarray(rack_ids, dtype=np.int64), unassigned])
    all_to = np.concatenate([np.asarray(rack_members, dtype=np.int64), recipients])
    prev = revoked_by[all_new]
    moving = (prev >= 0) & (prev != all_to)
    if multi_arr is not None:
        moving |= np.isin(all_new, multi_arr)
    transferring = {}
    if moving.any():
        for g, c in zip(all_new[moving].tolist(), all_to[moving].tolist()):
            transferring[g] = c
    assignment = []
    for i in range(n):
        new = new_sorted[bounds[i]:bounds[i + 1]]
        if rack_new[i]:
            new = np.concatenate([np.asarray(rack_new[i], dtype=np.int64), new])
        assignment.append((kept[i], new))
    return assignment, transferring


def _subscriptions_equal(inp: common.StickyInput) -> bool:
    """The subscription test of ``allSubscriptionsEqual`` (a leading empty one is skipped)."""
    first: frozenset[str] | None = None
    first_list = None
    for m in inp.members:
        topics = inp.topics_of[m]
        if not first:
            first = frozenset(topics)
            first_list = topics if len(first) == len(topics) else None
            continue
        if first_list is not None and (topics is first_list or topics == first_list):
            continue
        if not (len(topics) == len(first) and first.issuperset(topics)):
            return False
    return True


def assign(inp: common.StickyInput, *, cooperative: bool, adjust: bool = True):
    """``AbstractStickyAssignor.assignPartitions`` for both assignors, on every group.

    ``cooperative`` selects how owned partitions are read (ConsumerProtocol order, and the
    transfers computed for ``adjustAssignment``); ``adjust`` withholds the transfers.
    Returns (assignment as ``{member: [(topic, partition), ...]}``, transferring as tuples ->
    new owner, whether the general builder ran).

    Raises :class:`StickyAssignorFailure` where Kafka's assignor throws.
    """
    members = inp.members
    if not members:  # a group always has its leader: nothing to model
        return {}, {}, False
    equal = _subscriptions_equal(inp)
    lay = Layout(inp.partitions_per_topic, members)
    if equal:
        owned_ids = _claims(inp, lay)
        multi: set[int] = set()
        if owned_ids is None:
            # Some partition is claimed twice: resolve claims exactly as Java does, on tuples.
            consumer_to_owned: dict[str, list[TP]] = {}
            multi_t: set[TP] = set()
            common.all_subscriptions_equal(inp, consumer_to_owned, multi_t)
            owned_ids = [lay.to_ids(consumer_to_owned[m]) for m in members]
            multi = set(lay.to_ids(multi_t))
        result, transferring = constrained(inp, lay, owned_ids, multi, Racks(inp, lay))
    else:
        result, transferring = general(inp, lay, cooperative=cooperative)
    general_ran = not equal
    out = {}
    # A million result tuples would trigger the cyclic GC over and over; none can form a cycle.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        _fill(out, result, transferring, lay, cooperative and adjust)
    finally:
        if gc_was_enabled:
            gc.enable()
    moving = {(lay.topics[lay.topic_of[g]], int(lay.partition_of[g])): members[c] for g, c in transferring.items()}
    return out, moving, general_ran


def _fill(out: dict, result, transferring: dict[int, int], lay: Layout, cooperative: bool) -> None:
    for i, m in enumerate(lay.members):
        kept, new = result[i]
        if cooperative and transferring:
            kept = [g for g in kept.tolist() if transferring.get(g) != i]
            new = [g for g in new.tolist() if transferring.get(g) != i]
            out[m] = lay.to_tuples(np.asarray(kept + new, dtype=np.int64))
        else:
            out[m] = lay.to_tuples(kept) + lay.to_tuples(new)


# --- GeneralAssignmentBuilder -------------------------------------------------------------

def _water_fill(sizes: np.ndarray, ranks: np.ndarray, n: int) -> np.ndarray:
    """Indices into ``sizes`` of the members ``maybeAssignPartition`` picks for ``n`` partitions.

    Each pick takes the least (size, id) subscriber from the ``TreeSet`` and grows it by one,
    so the picks are the ``n`` smallest pairs ``(size + k, rank)``, k = 0, 1, ..., in order.
    """
    lo = int(sizes.min())
    hi = lo + n  # count(hi) >= n
    while lo < hi:  # smallest level v with #pairs of value <= v at least n
        mid = (lo + hi) // 2
        if int(np.maximum(mid - sizes + 1, 0).sum()) >= n:
            hi = mid
        else:
            lo = mid + 1
    level = lo
    take = np.maximum(level - sizes, 0)  # pairs of value < level
    rest = n - int(take.sum())
    at_level = np.flatnonzero(sizes <= level)
    if rest:
        chosen = at_level[np.argsort(ranks[at_level], kind="stable")[:rest]]
        take[chosen] += 1
    member = np.repeat(np.arange(len(sizes)), take)
    starts = np.repeat(np.cumsum(take) - take, take)
    value = sizes[member] + (np.arange(len(member)) - starts)
    return member[np.lexsort((ranks[member], value))]


def _user_data_order(ids: np.ndarray, lay: Layout, topic_hash: list[int], topic_spread: np.ndarray) -> np.ndarray:
    """``StickyAssignor`` user data order: topics in ``HashMap`` order, partitions as listed."""
    if len(ids) == 0:
        return ids
    t = lay.topic_of[ids]
    uniq, first = np.unique(t, return_index=True)
    # the topics' hashCodes in put order (first appearance)
    cap = hash_map_capacity([topic_hash[u] for u in uniq[np.argsort(first)].tolist()])
    # bucket, then first appearance (insertion order inside a bucket)
    key_bucket = np.zeros(len(lay.topics), dtype=np.int64)
    key_first = np.zeros(len(lay.topics), dtype=np.int64)
    key_bucket[uniq] = topic_spread[uniq] & (cap - 1)
    key_first[uniq] = first
    return ids[np.lexsort((np.arange(len(ids)), key_first[t], key_bucket[t]))]


class _General:
    """``GeneralAssignmentBuilder`` on arrays."""

    def __init__(self, inp: common.StickyInput, lay: Layout, owned_ids: list[np.ndarray], max_generation: int,
                 cooperative: bool, racks: Racks) -> None:
        self.inp = inp
        self.racks = racks
        self.lay = lay
        n = len(lay.members)
        T = len(lay.topics)
        self.n, self.T = n, T
        sub = np.zeros((n, T), dtype=bool)
        subs_topics = []
        cache: dict[int, list[int]] = {}
        listed_twice = False
        for i, m in enumerate(lay.members):
            topics = inp.topics_of[m]
            idx = cache.get(id(topics))
            if idx is None:
                # consumer2AllPotentialTopics: the subscription's list, duplicates included
                idx = cache[id(topics)] = [lay.topic_index[t] for t in topics if t in lay.topic_index]
                listed_twice |= len(set(idx)) != len(idx)
            subs_topics.append(idx)
            sub[i, idx] = True
        self.sub = sub
        # topic2AllPotentialConsumers lists a member once per time its subscription lists the
        # topic: a topic listed twice by its only subscriber counts two potential consumers.
        if listed_twice:
            self.n_potential = np.bincount(np.fromiter(itertools.chain.from_iterable(subs_topics), dtype=np.int64),
                                           minlength=T)
        else:
            self.n_potential = sub.sum(axis=0)
        # sortedAllTopics: TopicComparator (number of potential consumers, then name)
        topic_order = np.lexsort((np.arange(T), self.n_potential))
        self.topic_order = topic_order
        self.owned_ids = owned_ids
        self.max_generation = max_generation
        # getMaxAssignmentSize: every partition when the list is as long as the topic count
        # (duplicates included), else the sum over the list (a topic listed twice counts twice).
        self.max_assign = np.array([lay.total if len(idx) == T else int(lay.counts[idx].sum()) for idx in subs_topics],
                                   dtype=np.int64)

    def build(self):
        lay, n, T = self.lay, self.n, self.T
        inp = self.inp
        members = lay.members
        topic_of = lay.topic_of
        # prepopulateCurrentAssignments: prevAssignment from members of older generations
        prev_owner = np.full(lay.total, -1, dtype=np.int64)
        prev_gen = np.full(lay.total, np.iinfo(np.int64).min, dtype=np.int64)
        for i, m in enumerate(members):
            gen = inp.generation_of[m]
            if gen is not None and gen < self.max_generation:
                g = gen
            elif gen is None and self.max_generation > common.DEFAULT_GENERATION:
                g = common.DEFAULT_GENERATION
            else:
                continue
            ids = np.asarray(lay.to_ids(inp.raw_owned_of[m]), dtype=np.int64)
            if len(ids) == 0:
                continue
            # first claim wins on equal generations (put only when strictly greater)
            _, first = np.unique(ids, return_index=True)
            ids = ids[np.sort(first)]
            better = (prev_owner[ids] < 0) | (g > prev_gen[ids])
            prev_owner[ids[better]] = i
            prev_gen[ids[better]] = g
        self.prev_owner = prev_owner.tolist()

        # assignOwnedPartitions: keep owned partitions of still-subscribed topics
        lists: list[list[int]] = []
        revocation_required = False
        owner = np.full(lay.total, -1, dtype=np.int64)
        for i in range(n):
            ids = self.owned_ids[i]
            if len(ids):
                ok = self.sub[i, topic_of[ids]]
                if self.racks.aware:
                    ok &= ~self.racks.mismatch(i, ids)
                if not ok.all():
                    revocation_required = True
                    ids = ids[ok]
                owner[ids] = i
            lists.append(ids.tolist())
        sizes = np.array([len(x) for x in lists], dtype=np.int64)
        initializing = int(sizes.max()) == 0
        ranks = lay.member_rank

        # unassigned partitions in sortedAllPartitions order, then maybeAssign per topic
        assigned = owner >= 0
        new_member = []
        new_ids = []
        unassigned_parts = []
        for t in self.topic_order.tolist():
            lo, hi = int(lay.offsets[t]), int(lay.offsets[t + 1])
            unassigned_parts.append(np.flatnonzero(~assigned[lo:hi]) + lo)
        if self.racks.aware:
            # maybeAssign(partitionsToAssign, rackInfo, true): each partition to the least
            # (size, id) subscriber whose rack holds a replica (or that has no rack).
            racks = self.racks
            bits = racks.member_bit
            key = sizes * n + ranks
            rack_member = []
            rack_ids = []
            for k, t in enumerate(self.topic_order.tolist()):
                ids = unassigned_parts[k]
                if len(ids) == 0:
                    continue
                cand = np.flatnonzero(self.sub[:, t])
                if len(cand) == 0:
                    continue
                cbits = bits[cand]
                left = []
                for g, m in zip(ids.tolist(), racks.mask[ids].tolist()):
                    ok = cand[(cbits == 0) | ((cbits & m) != 0)]
                    if len(ok) == 0:
                        left.append(g)
                        continue
                    c = int(ok[np.argmin(key[ok])])
                    key[c] += n
                    sizes[c] += 1
                    owner[g] = c
                    rack_member.append(c)
                    rack_ids.append(g)
                unassigned_rest = np.asarray(left, dtype=np.int64)
                unassigned_parts[k] = (ids, unassigned_rest)
            if rack_ids:
                new_member.append(np.asarray(rack_member, dtype=np.int64))
                new_ids.append(np.asarray(rack_ids, dtype=np.int64))
        for k, t in enumerate(self.topic_order.tolist()):
            entry = unassigned_parts[k]
            if isinstance(entry, tuple):
                unassigned_parts[k], ids = entry
            else:
                ids = entry
            if len(ids) == 0:
                continue
            cand = np.flatnonzero(self.sub[:, t])
            if len(cand) == 0:
                continue
            picks = cand[_water_fill(sizes[cand], ranks[cand], len(ids))]
            sizes += np.bincount(picks, minlength=n)
            owner[ids] = picks
            new_member.append(picks)
            new_ids.append(ids)
        if new_ids:
            nm = np.concatenate(new_member)
            ni = np.concatenate(new_ids)
            order = np.argsort(nm, kind="stable")
            bounds = np.searchsorted(nm[order], np.arange(n + 1))
            ni_sorted = ni[order].tolist()
            for i in range(n):
                lists[i].extend(ni_sorted[bounds[i]:bounds[i + 1]])
        unassigned = np.concatenate(unassigned_parts) if unassigned_parts else np.empty(0, dtype=np.int64)
        all_sorted = np.concatenate([np.arange(lay.offsets[t], lay.offsets[t + 1]) for t in self.topic_order.tolist()]) \
            if T else np.empty(0, dtype=np.int64)

        # fixed partitions and fixed members
        movable_topic = self.n_potential >= 2  # canTopicParticipateInReassignment
        all_sorted = all_sorted[movable_topic[topic_of[all_sorted]]]
        unassigned = unassigned[movable_topic[topic_of[unassigned]]]
        fixed = np.zeros(n, dtype=bool)
        for i in range(n):
            if sizes[i] < self.max_assign[i]:
                continue
            if not lists[i] or not movable_topic[topic_of[np.asarray(lists[i])]].any():
                fixed[i] = True
        self.fixed = fixed

        pre_lists = [list(x) for x in lists]
        self.lists, self.owner_np, self.sizes_np = lists, owner, sizes
        self.owner = owner.tolist()
        self.size = sizes.tolist()
        self.topic_of_list = topic_of.tolist()
        has = owner >= 0
        self.own_count = np.bincount(owner[has] * T + topic_of[has], minlength=n * T).reshape(n, T)
        self.nonfixed_sub = self.sub & ~fixed[:, None]
        self.subs_of_topic = [np.flatnonzero(self.nonfixed_sub[:, t]) for t in range(T)]
        self.movements = common.PartitionMovements()
        self.movable_topics = np.flatnonzero(movable_topic)
        self._init_counts()
        self._refresh()

        if not revocation_required:
            self._perform(unassigned.tolist())
        performed = self._perform(all_sorted.tolist())
        if not initializing and performed and \
                _score(self.sizes_np[~fixed]) >= _score(np.array([len(x) for x in pre_lists])[~fixed]):
            self.lists = pre_lists
        return self.lists

    def _refresh(self) -> None:
        """Compute the aggregates ``isBalanced`` and ``performReassignments`` read, from scratch.

        ``isBalanced`` (after its quick min/max test) asks whether some member taking part,
        not holding exactly its ``maxAssignmentSize``, could take a partition of a topic it
        subscribes to from an owner holding 2+ more partitions; that is, whether for some topic
        the largest owner of one of its partitions holds at least 2 more than the smallest such
        subscriber. (A member holding all it could get owns every partition of its topics,
        except after Java's quirk of handing a partition back to a previous owner that no longer
        subscribes: hence the explicit size test.)
        """
        sizes = self.sizes_np
        big = self.big
        self.min_sub = np.where(self.sub, sizes[:, None], big).min(axis=0)
        deep = (~self.fixed) & (sizes != self.max_assign)
        self.min_deep = np.where(self.sub & deep[:, None], sizes[:, None], big).min(axis=0)
        self.max_owner = np.where(self.own_count > 0, sizes[:, None], -1).max(axis=0)
        nf = ~self.fixed
        if nf.any():
            self.lo, self.hi = int(sizes[nf].min()), int(sizes[nf].max())
        else:
            self.lo = self.hi = 0
        self._decide()

    def _decide(self) -> None:
        if self.lo >= self.hi - 1:
            self.balanced = True
        else:
            mv = self.movable_topics
            self.balanced = not bool(np.any(self.max_owner[mv] >= self.min_deep[mv] + 2))

    def _init_counts(self) -> None:
        """Per topic, how many subscribers / owners have each size (for incremental updates)."""
        sizes = self.sizes_np
        self.big = np.iinfo(np.int64).max // 4
        self.width = int(sizes.max()) + 2 if len(sizes) else 2
        self.incremental = 3 * self.T * self.width <= 60_000_000
        self.sub_topics = [np.flatnonzero(self.sub[i]) for i in range(self.n)]
        if not self.incremental:
            return
        mi, ti = np.nonzero(self.sub)
        w = self.width
        self.cnt_sub = np.bincount(ti * w + sizes[mi], minlength=self.T * w).reshape(self.T, w).astype(np.int32)
        deep = (~self.fixed) & (sizes != self.max_assign)
        keep = deep[mi]
        self.cnt_deep = np.bincount(ti[keep] * w + sizes[mi[keep]], minlength=self.T * w).reshape(
            self.T, w).astype(np.int32)
        mo, to = np.nonzero(self.own_count > 0)
        self.cnt_own = np.bincount(to * w + sizes[mo], minlength=self.T * w).reshape(self.T, w).astype(np.int32)
        nf = ~self.fixed
        self.hist = np.bincount(sizes[nf], minlength=self.width)

    def _lowest(self, counts: np.ndarray, rows: np.ndarray, floor: np.ndarray) -> None:
        """``floor[rows]`` = least size with a nonzero count in those rows (or ``big``)."""
        if len(rows) == 0:
            return
        nz = counts[rows] > 0
        has = nz.any(axis=1)
        floor[rows] = np.where(has, nz.argmax(axis=1), self.big)

    def _resize(self, x: int, s: int, s2: int) -> None:
        """Member ``x`` goes from ``s`` to ``s2`` partitions (ownership counts already moved)."""
        t_sub = self.sub_topics[x]
        if len(t_sub):
            cnt = self.cnt_sub
            cnt[t_sub, s] -= 1
            cnt[t_sub, s2] += 1
            if s2 < s:
                self.min_sub[t_sub] = np.minimum(self.min_sub[t_sub], s2)
            else:
                self._lowest(cnt, t_sub[(self.min_sub[t_sub] == s) & (cnt[t_sub, s] == 0)], self.min_sub)
            if not self.fixed[x]:
                was, now = s != self.max_assign[x], s2 != self.max_assign[x]
                cnt = self.cnt_deep
                if was:
                    cnt[t_sub, s] -= 1
                if now:
                    cnt[t_sub, s2] += 1
                    self.min_deep[t_sub] = np.minimum(self.min_deep[t_sub], s2)
                if was:
                    self._lowest(cnt, t_sub[(self.min_deep[t_sub] == s) & (cnt[t_sub, s] == 0)], self.min_deep)
        t_own = np.flatnonzero(self.own_count[x] > 0)
        if len(t_own):
            cnt = self.cnt_own
            cnt[t_own, s] -= 1
            cnt[t_own, s2] += 1
            if s2 > s:
                self.max_owner[t_own] = np.maximum(self.max_owner[t_own], s2)
            else:
                drop = t_own[(self.max_owner[t_own] == s) & (cnt[t_own, s] == 0)]
                self.max_owner[drop] = s2  # x itself still owns a partition of each
        hist = self.hist
        hist[s] -= 1
        hist[s2] += 1

    def _moved(self, old: int, new: int, tg: int) -> None:
        """Update the aggregates after one partition of topic ``tg`` moved from ``old`` to ``new``."""
        if not self.incremental:
            self._refresh()
            return
        so, sn = self.size[old] + 1, self.size[new] - 1  # sizes before the move
        cnt_own, max_owner, oc = self.cnt_own, self.max_owner, self.own_count
        # ownership of tg changed first (own_count already updated), at the sizes before the move
        if oc[old, tg] == 0:
            cnt_own[tg, so] -= 1
            if max_owner[tg] == so and cnt_own[tg, so] == 0:
                nz = np.flatnonzero(cnt_own[tg, :so])
                max_owner[tg] = nz[-1] if len(nz) else -1
        if oc[new, tg] == 1:
            cnt_own[tg, sn] += 1
            if max_owner[tg] < sn:
                max_owner[tg] = sn
        self._resize(old, so, so - 1)
        self._resize(new, sn, sn + 1)
        hist = self.hist
        lo = min(self.lo, so - 1)
        while hist[lo] == 0:
            lo += 1
        hi = max(self.hi, sn + 1)
        while hist[hi] == 0:
            hi -= 1
        self.lo, self.hi = lo, hi
        self._decide()

    def _perform(self, reassignable: list[int]) -> bool:
        """``performReassignments``."""
        performed = False
        owner, size, prev_owner = self.owner, self.size, self.prev_owner
        topic_of = self.topic_of_list
        while True:
            modified = False
            for p in reassignable:
                if self.balanced:
                    break
                c = owner[p]
                po = prev_owner[p]
                if po >= 0 and size[c] > self._size_of(po) + 1:
                    self._reassign(p, po)
                    performed = modified = True
                    continue
                if size[c] > self.min_sub[topic_of[p]] + 1:
                    t = topic_of[p]
                    cand = self.subs_of_topic[t]
                    key = self.sizes_np[cand] * self.n + self.lay.member_rank[cand]
                    self._reassign(p, int(cand[int(np.argmin(key))]))
                    performed = modified = True
            if not modified:
                return performed

    def _size_of(self, member: int) -> int:
        if self.fixed[member]:
            raise StickyAssignorFailure(
                f"Kafka's sticky assignor throws NullPointerException: consumer {self.lay.members[member]} "
                "(a previous owner) takes no part in the reassignment")
        return self.size[member]

    def _reassign(self, p: int, new: int) -> None:
        lay = self.lay
        c = self.owner[p]
        names = lay.members
        t = self.topic_of_list[p]
        tp = (lay.topics[t], p - int(lay.offsets[t]))
        moved = self.movements.get_the_actual_partition_to_be_moved(tp, names[c], names[new])
        g = int(lay.offsets[lay.topic_index[moved[0]]]) + moved[1]
        old = self.owner[g]
        self.movements.move_partition(moved, names[old], names[new])
        self.lists[old].remove(g)
        self.lists[new].append(g)
        self.owner[g] = new
        self.owner_np[g] = new
        self.size[old] -= 1
        self.size[new] += 1
        self.sizes_np[old] -= 1
        self.sizes_np[new] += 1
        tg = self.topic_of_list[g]
        self.own_count[old, tg] -= 1
        self.own_count[new, tg] += 1
        self._moved(old, new, tg)


def _score(sizes: np.ndarray) -> int:
    s = np.sort(sizes)
    n = len(s)
    return int((s * (2 * np.arange(n) - n + 1)).sum())


def general(inp: common.StickyInput, lay: Layout, *, cooperative: bool):
    """``GeneralAssignmentBuilder.build``; returns (per member (kept, new), transferring)."""
    members = lay.members
    owned_raw = []
    total_claims = 0
    foreign = False  # owned partitions of topics outside the assignment
    for m in members:
        raw = inp.raw_owned_of[m]
        ids = np.asarray(lay.to_ids(raw), dtype=np.int64)
        foreign |= len(ids) != len(raw)
        owned_raw.append(ids)
        total_claims += len(ids)
    conflicts = bool(total_claims) and np.bincount(np.concatenate(owned_raw), minlength=lay.total).max() > 1
    if conflicts or (foreign and not cooperative):
        # allSubscriptionsEqual on tuples: claims resolved by generation exactly as in Java,
        # from the owned partitions in the order the protocol delivers them.
        consumer_to_owned: dict[str, list[TP]] = {}
        common.all_subscriptions_equal(inp, consumer_to_owned, set())
        owned = [np.asarray(lay.to_ids(consumer_to_owned[m]), dtype=np.int64) for m in members]
    elif cooperative:
        owned = [np.sort(ids) for ids in owned_raw]  # ConsumerProtocol: sorted by topic, partition
    else:
        topic_hash = [java_string_hashcode(t) for t in lay.topics]
        topic_spread = np.array([spread(h) for h in topic_hash], dtype=np.int64)
        owned = [_user_data_order(ids, lay, topic_hash, topic_spread) for ids in owned_raw]
    max_generation = max([common.DEFAULT_GENERATION] + [g for g in inp.generation_of.values() if g is not None])
    racks = Racks(inp, lay)
    builder = _General(inp, lay, owned, max_generation, cooperative, racks)
    lists = builder.build()
    transferring: dict[int, int] = {}
    if cooperative and conflicts:
        final_tuples = {m: lay.to_tuples(np.asarray(lists[i], dtype=np.int64)) for i, m in enumerate(members)}
        moving_t = common.partitions_transferring_ownership(inp, final_tuples)
        index = {m: i for i, m in enumerate(members)}
        transferring = {lay.offset_of[t] + p: index[c] for (t, p), c in moving_t.items()}
    elif cooperative and total_claims:
        # computePartitionsTransferringOwnership: with every partition claimed at most once, a
        # partition is both added and revoked exactly when its claimant is not its new owner.
        claimant = np.full(lay.total, -1, dtype=np.int64)
        for i, ids in enumerate(owned_raw):
            claimant[ids] = i
        final = np.full(lay.total, -1, dtype=np.int64)
        for i, parts in enumerate(lists):
            final[parts] = i
        moving = np.flatnonzero((claimant >= 0) & (final >= 0) & (claimant != final))
        transferring = dict(zip(moving.tolist(), final[moving].tolist()))
    return [(np.asarray(parts, dtype=np.int64), np.empty(0, dtype=np.int64)) for parts in lists], transferring
