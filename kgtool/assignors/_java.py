"""Java semantics the assignors depend on: string order, hash codes, HashMap iteration order.

Kafka's assignors iterate ``java.util.HashMap`` / ``HashSet`` in places where the order decides
the result (which topic's partitions come first in a member's list, which member gets an extra
partition). Their order is reproduced here from the same hash functions:

- ``HashMap.hash(key)``: ``h ^ (h >>> 16)`` of ``key.hashCode()``; the bucket is
  ``hash & (capacity - 1)``; iteration goes bucket by bucket, each bucket in insertion order
  (``HashMap.resize`` splits a bucket into its lo/hi halves keeping the relative order).
- capacity: 16 for ``new HashMap<>()`` (``DEFAULT_INITIAL_CAPACITY``), ``tableSizeFor(n)`` for
  ``new HashMap<>(n)``; it doubles whenever ``size > 0.75 * capacity`` (``DEFAULT_LOAD_FACTOR``).
  ``new HashSet<>(collection)`` starts at ``max(size / .75f + 1, 16)``.
- A put that makes a bucket hold 9 keys calls ``treeifyBin``: below 64 buckets
  (``MIN_TREEIFY_CAPACITY``) the table doubles instead, which is modelled; from 64 buckets on the
  bucket becomes a red-black tree whose iteration order is not modelled (it needs 9 keys whose
  spread hashes agree in the low bits, which real topic names and member ids do not produce).

Hash codes: ``String.hashCode`` (UTF-16 code units), ``Integer.hashCode`` (the value),
``Uuid.hashCode`` (``Uuid``: ``h = msb ^ lsb; (int)(h >> 32) ^ (int)h``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from kgtool.coordinator.partitioning import java_string_hashcode

T = TypeVar("T")

_MASK32 = 0xFFFFFFFF


def _to_int32(x: int) -> int:
    x &= _MASK32
    return x - (1 << 32) if x & 0x80000000 else x


def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` (as an unsigned 32-bit value)."""
    h &= _MASK32
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the next power of two >= cap (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


def final_capacity(size: int, initial: int = 16) -> int:
    """Table length of a HashMap that started at ``initial`` buckets after ``size`` puts."""
    cap = max(1, initial)
    while size > int(cap * 0.75):  # HashMap.putVal: if (++size > threshold) resize()
        cap <<= 1
    return cap


def hash_set_initial_capacity(n: int) -> int:
    """``new HashSet<>(Collection c)``: ``new HashMap<>(Math.max((int) (c.size()/.75f) + 1, 16))``.

    That is JDK 17's constructor (Kafka 4.x's minimum for brokers). JDK 19+ sizes it with
    ``HashMap.newHashMap(Math.max(c.size(), 12))`` instead, which differs only for exactly 12,
    24, 48, ... elements.
    """
    return table_size_for(max(int(n / 0.75) + 1, 16))


def hash_order(keys: Sequence[T], hash_of: Callable[[T], int], initial: int = 16) -> list[T]:
    """Iteration order of a ``HashMap`` / ``HashSet`` filled with ``keys`` in this order.

    Duplicate keys keep their first insertion. ``initial`` is the table length before the
    first put (16 for the no-argument constructors).
    """
    seen: dict = {}
    for k in keys:
        if k not in seen:
            seen[k] = None
    uniq = list(seen)
    spreads = [spread(hash_of(k)) for k in uniq]
    cap = _simulated_capacity(spreads, initial)
    mask = cap - 1
    # sorted() is stable: equal buckets keep insertion order, as HashMap chains do.
    order = sorted(range(len(uniq)), key=lambda i: spreads[i] & mask)
    return [uniq[i] for i in order]


def _simulated_capacity(spreads: list[int], initial: int) -> int:
    """Final table length after inserting keys with these spread hashes, in order.

    ``HashMap.putVal``: a put that makes a bucket hold 9 entries calls ``treeifyBin``, which
    doubles the table instead while it is shorter than ``MIN_TREEIFY_CAPACITY`` (64); then
    ``++size > threshold`` doubles it as well.
    """
    cap = max(1, initial)
    n = len(spreads)
    if n <= 8 or cap >= 64:
        return final_capacity(n, cap)
    counts: dict[int, int] = {}
    for size, h in enumerate(spreads, start=1):
        b = h & (cap - 1)
        c = counts.get(b, 0) + 1
        counts[b] = c
        if c >= 9 and cap < 64:
            cap <<= 1
            counts = _bucket_counts(spreads[:size], cap)
        if size > int(cap * 0.75):
            cap <<= 1
            counts = _bucket_counts(spreads[:size], cap)
    return cap


def _bucket_counts(spreads: list[int], cap: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    for h in spreads:
        b = h & (cap - 1)
        counts[b] = counts.get(b, 0) + 1
    return counts


def string_hash_order(keys: Sequence[str], initial: int = 16) -> list[str]:
    """:func:`hash_order` for String keys (``String.hashCode``)."""
    return hash_order(keys, java_string_hashcode, initial)


def java_sorted(strings: Iterable[str]) -> list[str]:
    """Strings in ``String.compareTo`` order (UTF-16 code units, not code points)."""
    items = list(strings)
    if all(s.isascii() for s in items) or not any(_has_astral(s) for s in items):
        # Below U+10000 code-unit order equals code-point order.
        return sorted(items)
    return sorted(items, key=java_string_key)


def java_string_key(s: str) -> bytes:
    """Sort key equal to ``String.compareTo``: big-endian UTF-16 compares unit by unit."""
    return s.encode("utf-16-be", "surrogatepass")


def _has_astral(s: str) -> bool:
    return not s.isascii() and any(ord(c) > 0xFFFF for c in s)


def needs_utf16_key(strings: Iterable[str]) -> bool:
    """True when code-point order could differ from Java's code-unit order."""
    return any(_has_astral(s) for s in strings)


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
    return _to_int32((h >> 32) ^ (h & _MASK32))


def uuid_compare_key(msb: int, lsb: int) -> tuple[int, int]:
    """``Uuid.compareTo``: signed msb, then signed lsb (``Long.compare``)."""
    return (msb, lsb)
