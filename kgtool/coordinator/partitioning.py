"""Which partition of an internal topic, hence which coordinator, serves a key.

Sources (Apache Kafka 4.x):

- groups (classic, consumer, streams, share): ``GroupCoordinatorService.partitionFor``
  -> ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` (default 50);
- transactions: ``TransactionStateManager.partitionFor``
  -> ``Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`` (default 50);
- share-group state (KIP-932): ``ShareCoordinatorService.partitionFor(SharePartitionKey)``
  -> ``Utils.abs(key.asCoordinatorKey().hashCode()) % share.coordinator.state.topic.num.partitions``
  (default 50) with ``asCoordinatorKey() = String.format("%s:%s:%d", groupId, topicId, partition)``.

``String.hashCode()`` and ``Utils.abs`` are :mod:`kgtool.java`'s (``"polygenelubricants"``, whose
hashCode is ``Integer.MIN_VALUE``, lands on partition 0, not on ``2147483648 % N``).

The batch path (:func:`partitions_for_many`) hashes a whole list with NumPy: every string's
UTF-16 code units live in one ``uint16`` array, each unit is weighted by ``31**k mod 2**32``
for its distance ``k`` from the end of its string, and ``np.add.reduceat`` sums per string,
all in ``uint32`` so the wrap-around is Java's.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from typing import TYPE_CHECKING

from kgtool.errors import UsageError
from kgtool.java import INT32_MIN, java_string_hashcode, kafka_abs

if TYPE_CHECKING:  # NumPy is imported by the batch functions only: scalar users stay light.
    import numpy as np

#: Broker defaults: offsets.topic.num.partitions, transaction.state.log.num.partitions,
#: share.coordinator.state.topic.num.partitions.
DEFAULT_OFFSETS_PARTITIONS = 50
DEFAULT_TRANSACTION_PARTITIONS = 50
DEFAULT_SHARE_STATE_PARTITIONS = 50

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"


def check_partition_count(n: int, what: str = "--partitions") -> int:
    """Validate a partition count the way a broker config would (a positive int32)."""
    if not isinstance(n, int) or n < 1:
        raise UsageError(f"{what} must be a positive number of partitions, got {n}")
    if n > 2**31 - 1:
        raise UsageError(f"{what} must fit in a 32-bit int, got {n}")
    return n


def partition_for(key: str, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The partition serving ``key`` (group id or transactional id): ``Utils.abs(hashCode) % N``."""
    check_partition_count(num_partitions)
    return kafka_abs(java_string_hashcode(key)) % num_partitions


def parse_kafka_uuid(text: str) -> str:
    """Validate a Kafka ``Uuid`` string (URL-safe base64 of 16 bytes, no padding) and
    return its canonical form, as ``Uuid.fromString(...).toString()`` would."""
    if len(text) != 22:
        raise UsageError(
            f"topic id {text!r} is not a Kafka Uuid: expected 22 URL-safe base64 characters, "
            f"got {len(text)}"
        )
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError) as exc:
        raise UsageError(f"topic id {text!r} is not URL-safe base64: {exc}") from None
    if len(raw) != 16:
        raise UsageError(f"topic id {text!r} does not decode to 16 bytes")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def share_state_key(group_id: str, topic_id: str, partition: int) -> str:
    """``SharePartitionKey.asCoordinatorKey``: ``"%s:%s:%d"`` of group, topic id, partition."""
    if partition < 0 or partition > 2**31 - 1:
        raise UsageError(f"share partition must be a non-negative int32, got {partition}")
    return f"{group_id}:{parse_kafka_uuid(topic_id)}:{partition}"


# -- batch path -------------------------------------------------------------------------

_POW31_CACHE: np.ndarray | None = None


def _pow31(n: int) -> np.ndarray:
    """``31**k mod 2**32`` for ``k`` in ``range(n)`` as uint32 (cached, grown by doubling)."""
    import numpy as np

    global _POW31_CACHE
    if _POW31_CACHE is None:
        _POW31_CACHE = np.ones(1, dtype=np.uint32)
    have = len(_POW31_CACHE)
    if have < n:
        size = max(n, 2 * have)
        out = np.empty(size, dtype=np.uint32)
        out[:have] = _POW31_CACHE
        # Extend by blocks: pow[k + have*j] = pow[k] * 31**have (all mod 2**32).
        filled = have
        while filled < size:
            step = np.uint32(pow(31, filled, 1 << 32))
            chunk = min(filled, size - filled)
            out[filled : filled + chunk] = out[:chunk] * step
            filled += chunk
        _POW31_CACHE = out
    return _POW31_CACHE[:n]


#: Strings longer than this are hashed one by one (a weighted sum); shorter ones together.
_LONG = 256
#: Code units hashed per weighted sum of a long string.
_BLOCK = 1 << 16


def hashcodes_from_units(units: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Java hashCodes (int32) of strings laid out as UTF-16 code units.

    ``units`` holds code units (uint16, or uint8 for ASCII text); string ``i`` is ``units[starts[i] : starts[i] + lengths[i]]``.

    Short strings are hashed together by Horner's rule over columns: strings sorted by
    length (longest first) so that those still active at column ``j`` are a prefix, then
    ``h = h * 31 + unit`` in uint32 (Java's int overflow). Long strings are few and each is
    one dot product with the weights ``31**k mod 2**32``.
    """
    import numpy as np

    n = len(starts)
    result = np.zeros(n, dtype=np.uint32)
    if n == 0:
        return result.view(np.int32)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    units = np.asarray(units)
    if units.dtype not in (np.uint8, np.uint16):  # uint8: ASCII text, one unit per byte
        units = units.astype(np.uint16)

    long_idx = np.flatnonzero(lengths > _LONG)
    if len(long_idx):
        # Block by block (Horner over blocks: h = h * 31**len(block) + hash(block)), so that a
        # 100 MB id needs weights and a uint32 copy of one block, not of the whole id.
        weights = _pow31(min(int(lengths[long_idx].max()), _BLOCK))
        for i in long_idx.tolist():
            start, ln = int(starts[i]), int(lengths[i])
            h = 0
            for lo in range(0, ln, _BLOCK):
                seg = units[start + lo : start + min(ln, lo + _BLOCK)].astype(np.uint32)
                k = len(seg)
                h = (h * pow(31, k, 1 << 32) + int(np.dot(seg, weights[k - 1 :: -1]))) & 0xFFFFFFFF
            result[i] = h

    short = np.flatnonzero((lengths > 0) & (lengths <= _LONG))
    if len(short):
        order = short[np.argsort(-lengths[short], kind="stable")]
        s = starts[order]
        ln = lengths[order]
        # active[j] = how many strings are longer than j (a prefix of the sorted order).
        maxlen = int(ln[0])
        active = np.searchsorted(-ln, -np.arange(maxlen), side="left")
        h = np.zeros(len(order), dtype=np.uint32)
        thirty_one = np.uint32(31)
        for j in range(maxlen):
            k = int(active[j])
            hk = h[:k]
            hk *= thirty_one
            hk += units[s[:k] + j]
        result[order] = h
    return result.view(np.int32)


def partitions_from_hashcodes(hashcodes: np.ndarray, num_partitions: int) -> np.ndarray:
    """Vectorised ``Utils.abs(h) % N`` over int32 hashCodes."""
    import numpy as np

    check_partition_count(num_partitions)
    h = hashcodes.astype(np.int64)
    h = np.where(h == INT32_MIN, 0, np.abs(h))
    return (h % num_partitions).astype(np.int64)


def hashcodes_for_many(keys: Sequence[str]) -> np.ndarray:
    """Java hashCodes of many strings at once (int32 array, input order)."""
    from kgtool.coordinator.idlist import id_list_from_strings

    ids = id_list_from_strings(list(keys))
    return hashcodes_from_units(ids.units, ids.starts, ids.lengths)


def partitions_for_many(keys: Sequence[str], num_partitions: int) -> np.ndarray:
    """:func:`partition_for` over a sequence, vectorised; returns an int64 array."""
    return partitions_from_hashcodes(hashcodes_for_many(keys), num_partitions)
