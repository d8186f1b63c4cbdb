"""The default partitioners of Kafka's producer clients, for a keyed record.

Sources:

- Java (``org.apache.kafka.clients.producer``, Kafka 4.x): ``KafkaProducer.partition()`` ->
  ``BuiltInPartitioner.partitionForKey(serializedKey, numPartitions)`` =
  ``Utils.toPositive(Utils.murmur2(serializedKey)) % numPartitions`` over *all* partitions
  (:mod:`kgtool.java`). An empty key is hashed; a null key (or ``partitioner.ignore.keys=true``)
  goes to the sticky, adaptive partition (KIP-480, KIP-794): not deterministic.
- librdkafka (``src/rdkafka_msg.c``, ``rd_kafka_msg_partitioner_*``; kcat, confluent-kafka-python,
  -go, -dotnet): the default ``partitioner`` is ``consistent_random``. ``consistent`` is
  ``rd_crc32(key) % partition_cnt`` (CRC-32/ISO-HDLC, the zlib polynomial, unsigned);
  ``murmur2`` is ``(rd_murmur2(key) & 0x7fffffff) % partition_cnt`` (Java's hash);
  ``fnv1a`` is ``rd_fnv1a(key) % partition_cnt`` where ``rd_fnv1a`` (``src/rdfnv1a.c``) takes the
  absolute value of the 32-bit hash as an ``int32_t`` to match Sarama, then returns it unsigned
  (so ``INT32_MIN`` becomes 2^31). ``rd_kafka_msg_partitioner()`` sends a record without key
  (``!rkm_key``) to the sticky partition whatever the partitioner, and so too an *empty* key
  under ``consistent_random``; the ``*_random`` variants otherwise hash like their base.
- Sarama (``partitioner.go``): the default ``NewHashPartitioner`` is FNV-1a 32,
  ``partition = int32(hash) % numPartitions`` (Go's ``%`` truncates), negated when negative;
  ``NewReferenceHashPartitioner`` uses ``int32(hash) & 0x7fffffff`` instead, like Java. A nil key
  goes to a random partition; an empty key is hashed.

So three hash families cover them all: murmur2 (Java, librdkafka ``murmur2*``), CRC32
(librdkafka ``consistent*``), FNV-1a (Sarama, librdkafka ``fnv1a*``).
"""

from __future__ import annotations

import enum
import zlib
from dataclasses import dataclass

from kgtool.errors import UsageError
from kgtool.java import murmur2, to_positive


class HashFamily(enum.IntEnum):
    """The hash a partitioner applies to the serialized key (codes shared with the C twin)."""

    MURMUR2 = 0
    CRC32 = 1
    FNV1A = 2


class Reduction(enum.IntEnum):
    """How a partitioner turns the unsigned 32-bit hash into a non-negative number before ``% N``."""

    #: ``Utils.toPositive(h) = h & 0x7fffffff`` (Java, librdkafka murmur2, Sarama reference).
    MASK = 0
    #: the hash as ``uint32_t`` (librdkafka consistent: ``rd_crc32(key) % partition_cnt``).
    UNSIGNED = 1
    #: ``|int32(h)|``, with ``INT32_MIN`` -> 2^31 (Sarama's ``-partition``; librdkafka ``rd_fnv1a``).
    ABS = 2


@dataclass(frozen=True)
class Partitioner:
    """One client's partitioner, by the name a user would configure."""

    name: str
    client: str
    family: HashFamily
    reduction: Reduction
    #: An empty (zero-length) key is placed like a null key: librdkafka's consistent_random.
    empty_is_random: bool
    #: Why a null key has no deterministic partition with this client.
    null_note: str
    source: str


_JAVA_NULL = (
    "null key: the Java producer sends it to the sticky partition (BuiltInPartitioner, KIP-794), "
    "which changes with every batch: not deterministic"
)
_RDK_NULL = (
    "null key: librdkafka sends it to the sticky partition (sticky.partitioning.linger.ms), "
    "which changes over time: not deterministic"
)
_SARAMA_NULL = "null key: Sarama's hash partitioner sends it to a random partition: not deterministic"
EMPTY_NOTE = (
    "empty key: librdkafka's consistent_random (its default) treats it as no key and sends it "
    "to the sticky partition: not deterministic"
)


def _rdk(name: str, family: HashFamily, reduction: Reduction, source: str, empty_random: bool = False) -> Partitioner:
    return Partitioner(name, "librdkafka", family, reduction, empty_random, _RDK_NULL, source)


PARTITIONERS: dict[str, Partitioner] = {
    p.name: p
    for p in (
        Partitioner(
            "java", "java", HashFamily.MURMUR2, Reduction.MASK, False, _JAVA_NULL,
            "BuiltInPartitioner.partitionForKey: Utils.toPositive(Utils.murmur2(key)) % numPartitions",
        ),
        _rdk("consistent", HashFamily.CRC32, Reduction.UNSIGNED, "rd_crc32(key) % partition_cnt"),
        _rdk("consistent_random", HashFamily.CRC32, Reduction.UNSIGNED,
             "rd_crc32(key) % partition_cnt; an empty key takes the sticky partition", empty_random=True),
        _rdk("murmur2", HashFamily.MURMUR2, Reduction.MASK, "(rd_murmur2(key) & 0x7fffffff) % partition_cnt"),
        _rdk("murmur2_random", HashFamily.MURMUR2, Reduction.MASK,
             "(rd_murmur2(key) & 0x7fffffff) % partition_cnt"),
        _rdk("fnv1a", HashFamily.FNV1A, Reduction.ABS, "rd_fnv1a(key) % partition_cnt (|int32| as in Sarama)"),
        _rdk("fnv1a_random", HashFamily.FNV1A, Reduction.ABS,
             "rd_fnv1a(key) % partition_cnt (|int32| as in Sarama)"),
        Partitioner(
            "sarama", "sarama", HashFamily.FNV1A, Reduction.ABS, False, _SARAMA_NULL,
            "NewHashPartitioner: int32(fnv1a32(key)) % numPartitions, negated if negative",
        ),
        Partitioner(
            "sarama-reference", "sarama", HashFamily.FNV1A, Reduction.MASK, False, _SARAMA_NULL,
            "NewReferenceHashPartitioner: (int32(fnv1a32(key)) & 0x7fffffff) % numPartitions",
        ),
    )
}

#: Names a user may give: every partitioner, plus each client's name for its default.
ALIASES: dict[str, str] = {"librdkafka": "consistent_random"}

#: The clients' defaults, compared by ``--compare`` and ``--check``; shown under the client's name.
CLIENT_DEFAULTS: dict[str, str] = {"java": "java", "librdkafka": "consistent_random", "sarama": "sarama"}

#: Every accepted ``--partitioner`` value, in the order help and completion show them.
PARTITIONER_NAMES: tuple[str, ...] = (
    "java", "librdkafka", "sarama",
    "consistent", "consistent_random", "murmur2", "murmur2_random", "fnv1a", "fnv1a_random",
    "sarama-reference",
)


@dataclass(frozen=True)
class Choice:
    """A partitioner as the user named it (``librdkafka`` stays ``librdkafka`` in the output)."""

    label: str
    partitioner: Partitioner


def resolve(name: str) -> Choice:
    """The partitioner called ``name`` (librdkafka's names, ``java``, ``librdkafka``, ``sarama``).

    Raises:
        UsageError: an unknown name.
    """
    key = ALIASES.get(name, name)
    if key not in PARTITIONERS:
        raise UsageError(
            f"unknown partitioner {name!r}; expected one of: {', '.join(PARTITIONER_NAMES)}"
        )
    return Choice(name, PARTITIONERS[key])


def client_defaults() -> list[Choice]:
    """java, librdkafka (consistent_random), sarama: what each client does unless configured."""
    return [Choice(label, PARTITIONERS[name]) for label, name in CLIENT_DEFAULTS.items()]


# -- the hashes (pure Python; the compiled twin is kgtool.partitioner._speedups) --------------

def crc32(data: bytes) -> int:
    """librdkafka's ``rd_crc32``: CRC-32 (reflected 0x04C11DB7, init and xorout 0xFFFFFFFF), the
    same function as zlib's ``crc32`` (``src/rdcrc32.h``; librdkafka calls zlib when built with it)."""
    return zlib.crc32(data) & 0xFFFFFFFF


def fnv1a_32(data: bytes) -> int:
    """FNV-1a 32 (Go's ``hash/fnv.New32a``, librdkafka ``rd_fnv1a`` before its ``abs``), unsigned."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def hash_key(family: HashFamily, key: bytes) -> int:
    """The unsigned 32-bit hash of ``key`` by ``family``."""
    if family is HashFamily.MURMUR2:
        return murmur2(key) & 0xFFFFFFFF
    if family is HashFamily.CRC32:
        return crc32(key)
    return fnv1a_32(key)


def reduce_hash(reduction: Reduction, h: int) -> int:
    """The non-negative number a partitioner takes modulo N, from the unsigned hash ``h``."""
    if reduction is Reduction.MASK:
        return to_positive(h)
    if reduction is Reduction.UNSIGNED:
        return h
    return (1 << 32) - h if h & 0x80000000 else h  # |int32(h)|, INT32_MIN -> 2**31


def partition_for_key(partitioner: Partitioner, key: bytes | None, num_partitions: int) -> int | None:
    """The partition ``partitioner`` gives a record with serialized ``key`` (None: a null key), or
    None when the client does not decide it from the key (see :func:`placement_note`)."""
    if placement_note(partitioner, key) is not None:
        return None
    assert key is not None
    return reduce_hash(partitioner.reduction, hash_key(partitioner.family, key)) % num_partitions


def placement_note(partitioner: Partitioner, key: bytes | None) -> str | None:
    """Why the partition of ``key`` is not deterministic with ``partitioner``; None if it is."""
    if key is None:
        return partitioner.null_note
    if not key and partitioner.empty_is_random:
        return EMPTY_NOTE
    return None
