"""Java collection behaviour the sticky assignors' output depends on.

Kafka's ``AbstractStickyAssignor`` iterates ``HashMap``s of member ids and ``HashSet``s of
``TopicPartition``s in places where the iteration order decides the result, and compares
strings with ``String.compareTo`` (UTF-16 code units). This module reproduces those three
things exactly:

- :func:`hash_map_order`: the iteration order of a ``java.util.HashMap`` / ``HashSet`` built by
  ``put`` in a given order with the default constructor (capacity 16, load factor 0.75):
  buckets ``(h ^ (h >>> 16)) & (capacity - 1)`` in ascending order, insertion order inside a
  bucket (``HashMap.resize`` splits a bucket preserving relative order), including the early
  resize ``treeifyBin`` does while the table is under 64 buckets. A bucket of 9+ colliding keys
  in a table of 64+ is turned into a tree whose order this emulation does not follow (member
  ids would need to collide 9 times in one bucket: not seen in practice).
- :class:`TopicPartitionHashSet`: the first element a ``HashSet<TopicPartition>`` iterator
  returns, as the set grows and shrinks (the table never shrinks).
- :func:`java_string_key`: a sort key ordering ``str`` as ``String.compareTo`` does.

Hash codes: ``String.hashCode`` (:func:`kgtool.coordinator.partitioning.java_string_hashcode`)
and ``TopicPartition.hashCode() = 31 * (31 + partition) + topic.hashCode()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kgtool.coordinator.partitioning import java_string_hashcode

_MASK32 = 0xFFFFFFFF


def spread(h: int) -> int:
    """``java.util.HashMap.hash``: ``h ^ (h >>> 16)`` on the unsigned 32-bit value."""
    h &= _MASK32
    return h ^ (h >> 16)


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """``TopicPartition.hashCode()`` (32-bit, unsigned form) from ``topic.hashCode()``."""
    return (31 * (31 + partition) + topic_hash) & _MASK32


def hash_map_capacity(hashes: Sequence[int]) -> int:
    """Table size of a default ``HashMap`` after ``put``-ting keys of these hashes in order."""
    cap = 16
    buckets: dict[int, int] = {}
    size = 0
    for h in hashes:
        b = spread(h) & (cap - 1)
        n = buckets.get(b, 0) + 1
        buckets[b] = n
        size += 1
        resized = False
        # HashMap.putVal: a 9th node in a bin calls treeifyBin, which resizes tables < 64.
        if n >= 9 and cap < 64:
            cap *= 2
            resized = True
        if size > cap * 3 // 4:
            cap *= 2
            resized = True
        if resized:
            buckets = {}
            for hh in hashes[:size]:
                bb = spread(hh) & (cap - 1)
                buckets[bb] = buckets.get(bb, 0) + 1
    return cap


def hash_map_order(hashes: Sequence[int]) -> list[int]:
    """Indices of distinct keys (hash codes given in ``put`` order) in ``HashMap`` iteration order."""
    cap = hash_map_capacity(hashes)
    mask = cap - 1
    return sorted(range(len(hashes)), key=lambda i: (spread(hashes[i]) & mask, i))


def string_hash_map_order(keys: Sequence[str]) -> list[str]:
    """Distinct strings, ``put`` in this order into a ``HashMap``, in its iteration order."""
    hashes = [java_string_hashcode(k) for k in keys]
    return [keys[i] for i in hash_map_order(hashes)]


def needs_utf16_order(strings: Iterable[str]) -> bool:
    """True when Python's code-point order may differ from Java's UTF-16 order for these."""
    return any(max(s, default="\0") > "\uffff" for s in strings)


def _utf16_key(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def java_string_key(strings: Iterable[str]) -> Callable[[str], object]:
    """A sort key giving ``String.compareTo`` order for these strings.

    Code-point order equals UTF-16 code-unit order unless a supplementary character (encoded
    as surrogates 0xD800-0xDFFF) meets a character in U+E000-U+FFFF; big-endian UTF-16 bytes
    compare exactly as the code units do.
    """
    if needs_utf16_order(strings):
        return _utf16_key
    return _identity


def _identity(s: str) -> str:
    return s


class TopicPartitionHashSet:
    """A ``HashSet<TopicPartition>``, for its iteration order (only ``first()`` is needed).

    ``PartitionMovements.getTheActualPartitionToBeMoved`` moves back
    ``partitionMovementsForThisTopic.get(reversePair).iterator().next()``: the first element
    in bucket order, then insertion order within a bucket.
    """

    __slots__ = ("items", "cap", "seq", "topic_hash")

    def __init__(self, topic_hash: int) -> None:
        # All elements of one set share a topic (the sets are kept per topic).
        self.items: dict[int, int] = {}  # partition -> insertion sequence
        self.cap = 16
        self.seq = 0
        self.topic_hash = topic_hash

    def add(self, partition: int) -> None:
        if partition in self.items:
            return
        self.items[partition] = self.seq
        self.seq += 1
        if self.cap < 64:
            # HashMap.putVal: a 9th node in one bin calls treeifyBin, which resizes a table
            # of fewer than 64 buckets instead of building a tree (at most 24 elements here).
            mask = self.cap - 1
            th = self.topic_hash
            b = spread(31 * (31 + partition) + th) & mask
            if sum(1 for p in self.items if spread(31 * (31 + p) + th) & mask == b) >= 9:
                self.cap *= 2
        if len(self.items) > self.cap * 3 // 4:
            self.cap *= 2

    def remove(self, partition: int) -> None:
        del self.items[partition]

    def __len__(self) -> int:
        return len(self.items)

    def first(self) -> int:
        mask = self.cap - 1
        th = self.topic_hash
        items = self.items
        return min(items, key=lambda p: (spread(31 * (31 + p) + th) & mask, items[p]))
