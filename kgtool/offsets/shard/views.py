"""What ``kafka-consumer-groups.sh --describe`` would show of a replayed group: plain dicts in the
names of Kafka's Admin API (``ConsumerGroupDescription``, ``MemberDescription``), the source of the
``groups`` and ``group_members`` tables."""

from __future__ import annotations

from typing import Any

from kgtool.offsets.shard.model import ClassicGroup, Group, ModernGroup, TopicNames


def tp_names(pairs: list[tuple[str, int]] | None) -> list[str] | None:
    """Sorted ``topic-partition`` strings, as the audit's ``members`` table lists partitions."""
    if pairs is None:
        return None
    return [f"{t}-{p}" for t, p in pairs]


def group_view(g: Group, names: TopicNames) -> dict[str, Any]:
    """A group and its members (members sorted by id), partitions as sorted (topic, partition) pairs."""
    if isinstance(g, ClassicGroup):
        return {
            "type": g.type.value, "state": g.state, "generation": g.generation, "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name, "leader": g.leader,
            "members": [
                {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                 "client_host": m.client_host, "session_timeout_ms": m.session_timeout_ms,
                 "rebalance_timeout_ms": m.rebalance_timeout_ms, "assigned": m.assigned}
                for _, m in sorted(g.members.items())
            ],
        }
    assert isinstance(g, ModernGroup)
    return {
        "type": g.type.value, "state": g.state, "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
        "members": [
            {"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
             "client_host": m.client_host, "member_epoch": m.member_epoch,
             "previous_member_epoch": m.previous_member_epoch, "state": m.state.name,
             "assigned": names.pairs(m.assigned), "pending_revocation": names.pairs(m.pending_revocation),
             "target": names.pairs(g.target(m.member_id)),
             "subscribed_topic_names": sorted(m.subscribed_topic_names),
             "subscribed_topic_regex": m.subscribed_topic_regex,
             "rebalance_timeout_ms": m.rebalance_timeout_ms, "server_assignor": m.server_assignor,
             "uses_classic_protocol": m.uses_classic_protocol, "session_timeout_ms": m.session_timeout_ms,
             "rack_id": m.rack_id}
            for _, m in sorted(g.members.items())
        ],
    }
