"""Kafka's assignor names -> kgtool's assignor classes, imported lazily.

Names are Kafka's protocol names (``ConsumerPartitionAssignor.name()``: ``range``,
``roundrobin``, ``sticky``, ``cooperative-sticky``) and, for the server-side assignors of the
KIP-848 consumer group protocol (``ConsumerGroupPartitionAssignor.name()``: ``uniform`` and
``range`` of ``org.apache.kafka.coordinator.group.assignor``), ``server-uniform`` and
``server-range``. The Java class names accepted by ``partition.assignment.strategy`` /
``group.consumer.assignors`` are accepted as aliases.

Nothing is imported until an assignor is asked for, so ``kgtool --help`` stays fast.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from kgtool.assignors.model import Assignor, AssignorInfo
from kgtool.errors import UsageError

# rebalance_protocol follows ConsumerPartitionAssignor.supportedProtocols(): EAGER by default,
# [COOPERATIVE, EAGER] for CooperativeStickyAssignor. The KIP-848 server assignors belong to the
# "consumer" group protocol, in which members give up partitions incrementally (no eager revoke).
ASSIGNORS: dict[str, AssignorInfo] = {
    info.name: info
    for info in (
        AssignorInfo(
            name="range",
            kafka_class="org.apache.kafka.clients.consumer.RangeAssignor",
            side="client",
            rebalance_protocol="eager",
            summary="per topic, consecutive ranges to members sorted by id (rack-aware, KIP-881)",
            aliases=("org.apache.kafka.clients.consumer.RangeAssignor", "RangeAssignor"),
        ),
        AssignorInfo(
            name="roundrobin",
            kafka_class="org.apache.kafka.clients.consumer.RoundRobinAssignor",
            side="client",
            rebalance_protocol="eager",
            summary="all partitions dealt one by one over the sorted members",
            aliases=("org.apache.kafka.clients.consumer.RoundRobinAssignor", "RoundRobinAssignor", "round-robin"),
        ),
        AssignorInfo(
            name="sticky",
            kafka_class="org.apache.kafka.clients.consumer.StickyAssignor",
            side="client",
            rebalance_protocol="eager",
            summary="balanced, keeping previous owners (previous assignment in its user data)",
            aliases=("org.apache.kafka.clients.consumer.StickyAssignor", "StickyAssignor"),
        ),
        AssignorInfo(
            name="cooperative-sticky",
            kafka_class="org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            side="client",
            rebalance_protocol="cooperative",
            summary="sticky, and a partition changing owner is withheld one round to be revoked first",
            aliases=(
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                "CooperativeStickyAssignor",
                "cooperative_sticky",
            ),
        ),
        AssignorInfo(
            name="server-uniform",
            kafka_class="org.apache.kafka.coordinator.group.assignor.UniformAssignor",
            side="server",
            rebalance_protocol="consumer",
            summary="KIP-848 'uniform': balanced and sticky, computed by the group coordinator",
            aliases=("uniform", "org.apache.kafka.coordinator.group.assignor.UniformAssignor", "server_uniform"),
        ),
        AssignorInfo(
            name="server-range",
            kafka_class="org.apache.kafka.coordinator.group.assignor.RangeAssignor",
            side="server",
            rebalance_protocol="consumer",
            summary="KIP-848 'range': per topic ranges, sticky, computed by the group coordinator",
            aliases=("org.apache.kafka.coordinator.group.assignor.RangeAssignor", "server_range"),
        ),
    )
}

# Where each implementation lives; imported on first use.
_IMPLEMENTATIONS: dict[str, tuple[str, str]] = {
    "range": ("kgtool.assignors.range", "RangeAssignor"),
    "roundrobin": ("kgtool.assignors.roundrobin", "RoundRobinAssignor"),
    "sticky": ("kgtool.assignors.sticky", "StickyAssignor"),
    "cooperative-sticky": ("kgtool.assignors.sticky", "CooperativeStickyAssignor"),
    "server-uniform": ("kgtool.assignors.server_uniform", "UniformAssignor"),
    "server-range": ("kgtool.assignors.server_range", "ServerRangeAssignor"),
}

_ALIASES: dict[str, str] = {
    alias.lower(): info.name for info in ASSIGNORS.values() for alias in (info.name, *info.aliases)
}


def names() -> list[str]:
    """Kafka's names of every assignor kgtool knows, client-side first."""
    return list(ASSIGNORS)


def canonical_name(name: str) -> str:
    """The protocol name for ``name`` (a protocol name, an alias or a Java class name).

    Raises:
        UsageError: ``name`` is no assignor kgtool knows; the message lists the valid names.
    """
    key = name.strip().lower()
    found = _ALIASES.get(key)
    if found is None:
        raise UsageError(f"unknown assignor {name!r}: valid names are {', '.join(names())}")
    return found


def info(name: str) -> AssignorInfo:
    """The :class:`AssignorInfo` of ``name`` (see :func:`canonical_name`)."""
    return ASSIGNORS[canonical_name(name)]


def get(name: str) -> Assignor:
    """A new instance of the assignor called ``name``.

    Raises:
        UsageError: unknown name, or the implementation is missing from this installation.
    """
    canonical = canonical_name(name)
    module_name, class_name = _IMPLEMENTATIONS[canonical]
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, class_name)
    except (ImportError, AttributeError) as exc:
        raise UsageError(
            f"assignor {canonical!r} is not available in this installation ({module_name}.{class_name}: {exc})"
        ) from None
    return cls()


def parse_names(text: str | Iterable[str]) -> list[str]:
    """Comma-separated (or listed) assignor names -> canonical names, duplicates removed, order kept.

    Raises:
        UsageError: empty list or an unknown name.
    """
    items = text.split(",") if isinstance(text, str) else [s for part in text for s in part.split(",")]
    result: list[str] = []
    for item in items:
        if not item.strip():
            continue
        name = canonical_name(item)
        if name not in result:
            result.append(name)
    if not result:
        raise UsageError(f"no assignor named: valid names are {', '.join(names())}")
    return result
