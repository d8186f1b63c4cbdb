"""Java and Kafka-client semantics that decide kgtool's results, in Python with Java's arithmetic.

Every rule whose Java behaviour a kgtool result depends on lives here, once:

Hashes and arithmetic (Apache Kafka 4.x ``org.apache.kafka.common.utils.Utils``; JDK 17):

- ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, wrapping at
  32 bits (a character above U+FFFF counts as its two surrogates);
- ``Utils.abs(n)``: ``n == Integer.MIN_VALUE ? 0 : Math.abs(n)`` (the coordinators' partition
  of a group or transactional id);
- ``Utils.murmur2(byte[] data)``: MurmurHash2, 32-bit, seed ``0x9747b28c``, over the serialized
  key, read as little-endian 4-byte blocks; the tail of 1-3 bytes is mixed in by a
  ``switch (length % 4)`` that falls through. Returns a signed int;
- ``Utils.toPositive(int number)``: ``number & 0x7fffffff``, *not* ``Math.abs`` (a hash of
  ``Integer.MIN_VALUE`` maps to 0, where ``Math.abs`` would stay negative).
  ``BuiltInPartitioner.partitionForKey`` is ``toPositive(murmur2(key)) % numPartitions``;
- ``Uuid.hashCode()`` (``h = msb ^ lsb; (int)(h >> 32) ^ (int) h``) and
  ``UUID.nameUUIDFromBytes``; ``TopicPartition.hashCode() = 31 * (31 + partition) + topic.hashCode()``.

String order: ``String.compareTo`` compares UTF-16 code units, which differs from Python's
code-point order only when a supplementary character (surrogates 0xD800-0xDFFF) meets a
character in U+E000-U+FFFF.

``java.util.HashMap`` / ``HashSet`` iteration order (JDK 17 ``java/util/HashMap.java``:
``hash``, ``tableSizeFor``, ``putVal``, ``resize``, ``treeifyBin``; ``HashSet(Collection)``):

- ``hash(key) = h ^ (h >>> 16)`` of ``key.hashCode()``; the bin is ``hash & (n - 1)`` for a table
  of ``n`` bins (a power of two); iteration walks bin by bin, each bin in its list order, which
  is insertion order (``resize`` splits a bin into its lo/hi halves keeping relative order);
- the table starts at ``DEFAULT_INITIAL_CAPACITY`` (16) or ``tableSizeFor(initialCapacity)``
  and doubles when ``++size > threshold`` (``threshold = n * 0.75``, ``DEFAULT_LOAD_FACTOR``);
- ``putVal`` calls ``treeifyBin`` when a put makes a bin hold ``TREEIFY_THRESHOLD + 1`` (9) or
  more nodes; ``treeifyBin`` *resizes* a table shorter than ``MIN_TREEIFY_CAPACITY`` (64)
  instead of building a tree, and this extra doubling (several, while the bin stays full) is
  modelled. In a table of 64 bins or more such a bin becomes a red-black tree whose list order
  (root moved to the front, later nodes linked after their tree parent) is *not* modelled: it
  needs 9 keys whose spread hashes agree in their low 6+ bits, which topic names and member
  ids do not produce in practice.

``tests/test_java.py`` checks the orders against ``fixtures/java/HashMapOrder.java`` run on
OpenJDK 17.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

__all__ = [
    "INT32_MIN",
    "MURMUR2_SEED",
    "DEFAULT_INITIAL_CAPACITY",
    "TREEIFY_THRESHOLD",
    "MIN_TREEIFY_CAPACITY",
    "to_int32",
    "murmur2",
    "to_positive",
    "java_string_hashcode",
    "kafka_abs",
    "utf16_key",
    "needs_utf16_order",
    "string_order_key",
    "java_sorted",
    "spread",
    "table_size_for",
    "load_factor_capacity",
    "hash_set_initial_capacity",
    "hash_map_capacity",
    "hash_map_order",
    "hash_order",
    "string_hash_order",
    "topic_partition_hash",
    "TopicPartitionHashSet",
    "name_uuid_bits",
    "uuid_hashcode",
]

K = TypeVar("K", bound=Hashable)

INT32_MIN = -(2**31)
_M32 = 0xFFFFFFFF

# -- int arithmetic, hashes -----------------------------------------------------------------

#: ``Utils.murmur2``: ``final int seed = 0x9747b28c``; ``m = 0x5bd1e995``, ``r = 24``.
MURMUR2_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def to_int32(value: int) -> int:
    """The Java ``int`` with the low 32 bits of ``value`` (two's complement)."""
    value &= _M32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """``Utils.murmur2(data)``: the 32-bit MurmurHash2 Kafka uses to partition keys, as a signed int.

    ``int`` arithmetic wraps at 32 bits and ``>>>`` is an unsigned shift, hence the masks.
    The compiled twin (``kgtool.partitioner._speedups``) is checked against this one.
    """
    length = len(data)
    h = (MURMUR2_SEED ^ length) & _M32
    end4 = length & ~3
    # 4-byte blocks, little-endian: data[i+0] | data[i+1] << 8 | data[i+2] << 16 | data[i+3] << 24.
    for i in range(0, end4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _M32
        k ^= k >> _R
        k = (k * _M) & _M32
        h = (h * _M) & _M32
        h ^= k
    # switch (length % 4) { case 3: ... case 2: ... case 1: ...; h *= m; } (falls through)
    rem = length & 3
    if rem == 3:
        h ^= data[end4 + 2] << 16
    if rem >= 2:
        h ^= data[end4 + 1] << 8
    if rem >= 1:
        h ^= data[end4]
        h = (h * _M) & _M32
    h ^= h >> 13
    h = (h * _M) & _M32
    h ^= h >> 15
    return to_int32(h)


def to_positive(number: int) -> int:
    """``Utils.toPositive(number)``: ``number & 0x7fffffff`` (``Integer.MIN_VALUE`` -> 0)."""
    return number & 0x7FFFFFFF


def java_string_hashcode(s: str) -> int:
    """``java.lang.String.hashCode()`` of ``s`` as a signed 32-bit int.

    Iterates UTF-16 code units, so a non-BMP character counts as its two surrogates. (Many
    strings at once: :func:`kgtool.coordinator.partitioning.hashcodes_for_many`.)
    """
    h = 0
    for (unit,) in struct.iter_unpack("<H", s.encode("utf-16-le", "surrogatepass")):
        h = (31 * h + unit) & _M32
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """``org.apache.kafka.common.utils.Utils.abs``: ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if n == INT32_MIN else abs(n)


# -- String.compareTo -------------------------------------------------------------------------


def utf16_key(s: str) -> bytes:
    """Sort key of one string equal to ``String.compareTo``: big-endian UTF-16 bytes compare
    exactly as the code units do."""
    return s.encode("utf-16-be", "surrogatepass")


def needs_utf16_order(strings: Iterable[str]) -> bool:
    """True when Python's code-point order may differ from Java's code-unit order for these
    (some string holds a character above U+FFFF)."""
    return any(not s.isascii() and max(s) > "\uffff" for s in strings)


def _identity(s: str) -> str:
    return s


def string_order_key(strings: Iterable[str]) -> Callable[[str], object]:
    """A sort key giving ``String.compareTo`` order over ``strings``: :func:`utf16_key` when
    code-point order could differ, else the string itself (cheaper)."""
    return utf16_key if needs_utf16_order(strings) else _identity


def java_sorted(strings: Iterable[str]) -> list[str]:
    """Strings in ``String.compareTo`` order (``Collections.sort`` of Strings)."""
    items = list(strings)
    return sorted(items, key=utf16_key) if needs_utf16_order(items) else sorted(items)


# -- HashMap / HashSet iteration order ------------------------------------------------------------

#: ``HashMap.DEFAULT_INITIAL_CAPACITY``: the table length of ``new HashMap<>()``.
DEFAULT_INITIAL_CAPACITY = 16
#: ``HashMap.TREEIFY_THRESHOLD``: a put that finds this many nodes in a bin calls ``treeifyBin``.
TREEIFY_THRESHOLD = 8
#: ``HashMap.MIN_TREEIFY_CAPACITY``: below this table length ``treeifyBin`` resizes instead.
MIN_TREEIFY_CAPACITY = 64


def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` of a hashCode (as an unsigned 32-bit value)."""
    h &= _M32
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the next power of two >= cap (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


def load_factor_capacity(size: int, initial: int = DEFAULT_INITIAL_CAPACITY) -> int:
    """Table length after ``size`` puts by the load factor alone (``putVal``: ``if (++size >
    threshold) resize()``, threshold ``0.75 * n``), from a table of ``initial`` bins."""
    cap = max(1, initial)
    while size > cap * 3 // 4:
        cap <<= 1
    return cap


def hash_set_initial_capacity(n: int) -> int:
    """``new HashSet<>(Collection c)``: ``new HashMap<>(Math.max((int) (c.size()/.75f) + 1, 16))``.

    That is JDK 17's constructor (Kafka 4.x's minimum for brokers). JDK 19+ sizes it with
    ``HashMap.newHashMap(Math.max(c.size(), 12))`` instead, which differs only for exactly 12,
    24, 48, ... elements.
    """
    return table_size_for(max(int(n / 0.75) + 1, 16))


def _capacity_of_spreads(spreads: Sequence[int], initial: int) -> int:
    """Table length after putting keys of these spread hashes (distinct keys) in this order."""
    cap = max(1, initial)
    n = len(spreads)
    if n <= TREEIFY_THRESHOLD or cap >= MIN_TREEIFY_CAPACITY:
        return load_factor_capacity(n, cap)
    counts: dict[int, int] = {}
    for size, h in enumerate(spreads, start=1):
        b = h & (cap - 1)
        c = counts[b] = counts.get(b, 0) + 1
        resized = False
        if c > TREEIFY_THRESHOLD:  # treeifyBin on a table < MIN_TREEIFY_CAPACITY: resize()
            cap <<= 1
            resized = True
        if size > cap * 3 // 4:  # then ++size > threshold (the new threshold)
            cap <<= 1
            resized = True
        if cap >= MIN_TREEIFY_CAPACITY:  # from here on only the load factor resizes
            return load_factor_capacity(n, cap)
        if resized:
            counts = {}
            for hh in spreads[:size]:
                bb = hh & (cap - 1)
                counts[bb] = counts.get(bb, 0) + 1
    return cap


def hash_map_capacity(hashes: Sequence[int], initial: int = DEFAULT_INITIAL_CAPACITY) -> int:
    """Table length of a ``HashMap`` of ``initial`` bins after ``put``-ting distinct keys of
    these hashCodes in this order (load factor and ``treeifyBin`` resizes)."""
    return _capacity_of_spreads([spread(h) for h in hashes], initial)


def hash_map_order(hashes: Sequence[int], initial: int = DEFAULT_INITIAL_CAPACITY) -> list[int]:
    """Indices of distinct keys (hashCodes given in ``put`` order) in ``HashMap`` iteration order."""
    spreads = [spread(h) for h in hashes]
    mask = _capacity_of_spreads(spreads, initial) - 1
    # sorted() is stable: keys of one bin keep insertion order, as the bin's list does.
    return sorted(range(len(spreads)), key=lambda i: spreads[i] & mask)


def hash_order(keys: Iterable[K], hash_of: Callable[[K], int], initial: int = DEFAULT_INITIAL_CAPACITY) -> list[K]:
    """Iteration order of a ``HashMap`` / ``HashSet`` filled with ``keys`` in this order.

    ``hash_of`` is the keys' ``hashCode``; a key put twice keeps its first place. ``initial``
    is the table length before the first put (16 for the no-argument constructors).
    """
    uniq = list(dict.fromkeys(keys))
    return [uniq[i] for i in hash_map_order([hash_of(k) for k in uniq], initial)]


def string_hash_order(keys: Iterable[str], initial: int = DEFAULT_INITIAL_CAPACITY) -> list[str]:
    """:func:`hash_order` for String keys (``String.hashCode``)."""
    return hash_order(keys, java_string_hashcode, initial)


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """``TopicPartition.hashCode()`` (32-bit, unsigned form) from ``topic.hashCode()``."""
    return (31 * (31 + partition) + topic_hash) & _M32


class TopicPartitionHashSet:
    """A ``HashSet<TopicPartition>`` of one topic's partitions, for its iteration order (only
    ``first()``, what ``iterator().next()`` returns, is needed), as it grows and shrinks (the
    table never shrinks).

    ``PartitionMovements.getTheActualPartitionToBeMoved`` moves back
    ``partitionMovementsForThisTopic.get(reversePair).iterator().next()``: the first element
    in bin order, then insertion order within a bin.
    """

    __slots__ = ("items", "cap", "seq", "topic_hash")

    def __init__(self, topic_hash: int) -> None:
        # All elements of one set share a topic (the sets are kept per topic).
        self.items: dict[int, int] = {}  # partition -> insertion sequence
        self.cap = DEFAULT_INITIAL_CAPACITY
        self.seq = 0
        self.topic_hash = topic_hash

    def add(self, partition: int) -> None:
        if partition in self.items:
            return
        self.items[partition] = self.seq
        self.seq += 1
        if self.cap < MIN_TREEIFY_CAPACITY:
            # putVal: a 9th node in one bin calls treeifyBin, which resizes a table of fewer
            # than 64 bins instead of building a tree (at most 24 elements here).
            mask = self.cap - 1
            th = self.topic_hash
            b = spread(31 * (31 + partition) + th) & mask
            if sum(1 for p in self.items if spread(31 * (31 + p) + th) & mask == b) > TREEIFY_THRESHOLD:
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


# -- Uuid -----------------------------------------------------------------------------------


def name_uuid_bits(name: str) -> tuple[int, int]:
    """``java.util.UUID.nameUUIDFromBytes(name.getBytes(UTF_8))`` as signed (msb, lsb) longs.

    MD5 of the bytes, version nibble set to 3, variant bits to IETF; the golden harness turned
    it into a Kafka ``Uuid(msb, lsb)`` as topic id (golden README, ``server_*``).
    """
    md5 = bytearray(hashlib.md5(name.encode("utf-8", "surrogatepass")).digest())
    md5[6] = (md5[6] & 0x0F) | 0x30
    md5[8] = (md5[8] & 0x3F) | 0x80
    msb = int.from_bytes(md5[:8], "big", signed=True)
    lsb = int.from_bytes(md5[8:], "big", signed=True)
    return msb, lsb


def uuid_hashcode(msb: int, lsb: int) -> int:
    """``org.apache.kafka.common.Uuid.hashCode``: ``h = msb ^ lsb; (int)(h >> 32) ^ (int) h``."""
    h = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return to_int32((h >> 32) ^ (h & _M32))
