"""Java/Kafka client semantics: the few ``org.apache.kafka.common.utils.Utils`` rules that decide
where a record lands, in Python with Java's 32-bit arithmetic.

Sources (Apache Kafka 4.x, ``clients/src/main/java/org/apache/kafka/common/utils/Utils.java``):

- ``Utils.murmur2(byte[] data)``: MurmurHash2, 32-bit, seed ``0x9747b28c``, over the serialized
  key, read as little-endian 4-byte blocks; the tail of 1-3 bytes is mixed in by a
  ``switch (length % 4)`` that falls through. Returns a signed int.
- ``Utils.toPositive(int number)``: ``number & 0x7fffffff``, *not* ``Math.abs`` (a hash of
  ``Integer.MIN_VALUE`` maps to 0, where ``Math.abs`` would stay negative).

``BuiltInPartitioner.partitionForKey(serializedKey, numPartitions)`` is
``toPositive(murmur2(serializedKey)) % numPartitions``: see :mod:`kgtool.partitioners`.

The compiled twin of :func:`murmur2` (``kgtool._partitioners``) is checked against this one.
``String.hashCode`` and ``Utils.abs`` (the coordinators' rules) still live in
:mod:`kgtool.coordinator.partitioning`.
"""

from __future__ import annotations

__all__ = ["INT32_MIN", "MURMUR2_SEED", "murmur2", "to_positive", "to_int32"]

INT32_MIN = -(2**31)
_M32 = 0xFFFFFFFF

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
