"""``kgtool.assignors.registry``: Kafka's names, aliases, lazy import, errors."""

from __future__ import annotations

import sys

import pytest

from kgtool.assignors import registry
from kgtool.errors import UsageError

KAFKA_NAMES = ["range", "roundrobin", "sticky", "cooperative-sticky", "server-uniform", "server-range"]


def test_names_are_kafkas_protocol_names():
    assert registry.names() == KAFKA_NAMES


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("range", "range"),
        ("RANGE", "range"),
        ("org.apache.kafka.clients.consumer.RangeAssignor", "range"),
        ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "cooperative-sticky"),
        ("uniform", "server-uniform"),
        ("org.apache.kafka.coordinator.group.assignor.UniformAssignor", "server-uniform"),
        ("org.apache.kafka.coordinator.group.assignor.RangeAssignor", "server-range"),
        (" roundrobin ", "roundrobin"),
    ],
)
def test_aliases(alias, name):
    assert registry.canonical_name(alias) == name


def test_rebalance_protocols():
    # ConsumerPartitionAssignor.supportedProtocols(): only CooperativeStickyAssignor is cooperative.
    protocols = {n: registry.info(n).rebalance_protocol for n in KAFKA_NAMES}
    assert protocols == {
        "range": "eager", "roundrobin": "eager", "sticky": "eager", "cooperative-sticky": "cooperative",
        "server-uniform": "consumer", "server-range": "consumer",
    }
    assert {registry.info(n).side for n in KAFKA_NAMES[:4]} == {"client"}
    assert {registry.info(n).side for n in KAFKA_NAMES[4:]} == {"server"}


def test_unknown_name_lists_valid_names():
    with pytest.raises(UsageError) as exc:
        registry.canonical_name("fair-share")
    assert str(exc.value) == (
        "unknown assignor 'fair-share': valid names are range, roundrobin, sticky, cooperative-sticky, "
        "server-uniform, server-range"
    )


def test_get_returns_instance_named_like_kafka():
    a = registry.get("org.apache.kafka.clients.consumer.RangeAssignor")
    assert a.name == "range"
    assert registry.get("roundrobin").name == "roundrobin"


def test_import_is_lazy():
    # Importing the registry must not import any implementation (kgtool --help stays fast).
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys, kgtool.assignors.registry as r; "
        "print(any(m in sys.modules for m in ('kgtool.assignors.range', 'kgtool.assignors.sticky')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env={"PYTHONPATH": str(root)}, check=True)
    assert out.stdout.strip() == "False"


def test_missing_implementation_is_a_usage_error(monkeypatch):
    monkeypatch.setitem(registry._IMPLEMENTATIONS, "sticky", ("kgtool.assignors.does_not_exist", "X"))
    with pytest.raises(UsageError, match="assignor 'sticky' is not available"):
        registry.get("sticky")


def test_parse_names():
    assert registry.parse_names("range, cooperative-sticky,range,,uniform") == [
        "range", "cooperative-sticky", "server-uniform"]
    with pytest.raises(UsageError, match="no assignor named"):
        registry.parse_names(" , ")
    with pytest.raises(UsageError, match="unknown assignor 'bogus'"):
        registry.parse_names("range,bogus")
