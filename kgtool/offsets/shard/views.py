"""What ``kafka-consumer-groups.sh --describe`` would show of a replayed group: plain dicts in the
names of Kafka's Admin API (``ConsumerGroupDescription``, ``MemberDescription``), the source of the
``groups`` and ``group_members`` tables."""

from __future__ import annotations

from typing import Any

from kgtool.offsets.shard.model import ClassicGroup, Group, GroupType, ModernGroup, TopicNames


def tp_names(pairs: list[tuple[str, int]] | None) -> list[str] | None:
    """Sorted ``topic-partition`` strings, as the audit's ``members`` table lists partitions."""
    if pairs is None:
        return None
    return [f"{t}-{p}" for t, p in pairs]


def preferred_server_assignor(g: ModernGroup) -> str | None:
    """``ConsumerGroup.preferredServerAssignor``: the server assignor most members ask for (ties:
    the first in ``HashMap`` order); None when none asks, where ``describe`` shows the broker's
    default (the first of ``group.consumer.assignors``, ``uniform`` unless configured)."""
    from collections import Counter

    from kgtool.java import string_hash_order

    counts = Counter(m.server_assignor for m in g.members.values() if m.server_assignor is not None)
    if not counts:
        return None
    best = max(counts.values())
    return next(a for a in string_hash_order(counts) if counts[a] == best)


def _touch(t: Any) -> tuple[int | None, int | None]:
    return (None, None) if t.offset < 0 else (t.offset, t.timestamp)


_NO_MODERN_GROUP = {"assignment_timestamp": None, "topology_epoch": None, "validated_topology_epoch": None,
                    "share_initializing": None, "share_initialized": None, "share_deleting": None}
_NO_TASKS = {"active_tasks": None, "standby_tasks": None, "warmup_tasks": None,
             "active_tasks_pending_revocation": None, "target_active_tasks": None, "target_standby_tasks": None,
             "target_warmup_tasks": None, "topology_epoch": None, "process_id": None, "user_endpoint": None,
             "client_tags": None}


def task_items(tasks: dict[str, Any]) -> list[str]:
    """Tasks as the ``*_tasks`` columns hold them: ``subtopology:partition,partition`` per
    subtopology, sorted (``kafka-streams-groups.sh`` joins them with ``;``)."""
    return [f"{sub}:{','.join(str(p) for p in sorted(parts))}" for sub, parts in sorted(tasks.items()) if parts]


def _streams_columns(m: Any, target: Any) -> dict[str, Any]:
    return {
        "active_tasks": task_items(m.assigned_tasks.active), "standby_tasks": task_items(m.assigned_tasks.standby),
        "warmup_tasks": task_items(m.assigned_tasks.warmup),
        "active_tasks_pending_revocation": task_items(m.tasks_pending_revocation.active),
        "target_active_tasks": None if target is None else task_items(target.active),
        "target_standby_tasks": None if target is None else task_items(target.standby),
        "target_warmup_tasks": None if target is None else task_items(target.warmup),
        "topology_epoch": m.topology_epoch, "process_id": m.process_id, "user_endpoint": m.user_endpoint,
        "client_tags": [f"{k}={v}" for k, v in sorted(m.client_tags.items())],
    }


def _share_columns(info: Any, names: TopicNames) -> dict[str, Any]:
    if info is None:
        return {"share_initializing": [], "share_initialized": [], "share_deleting": []}

    def parts(d: dict) -> list[str]:
        return sorted(f"{name or names.name(t)}-{p}" for t, (name, ps) in d.items() for p in ps)
    return {"share_initializing": parts(info.initializing), "share_initialized": parts(info.initialized),
            "share_deleting": sorted(names.name(t) for t in info.deleting)}


def state_rows(groups: dict[str, Group], names: TopicNames, log_partition: int,
               keep: Any = None, share_state: dict[str, Any] | None = None,
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows of the ``groups`` and ``group_members`` tables (:mod:`kgtool.offsets.tables`) for the
    groups ``keep(name)`` accepts, sorted by group and member id (``share_state``: the share groups'
    state partition metadata, by group)."""
    group_rows: list[dict[str, Any]] = []
    member_rows: list[dict[str, Any]] = []
    for gid in sorted(groups):
        if keep is not None and not keep(gid):
            continue
        g = groups[gid]
        record_offset, timestamp = _touch(g.touched)
        row = {"group": gid, "log_partition": log_partition, "type": g.type.value, "state": g.state,
               "group_epoch": None, "assignment_epoch": None, "generation": None, "protocol_type": None,
               "protocol_name": None, "leader": None, "member_count": len(g.members), "assignor": None,
               "record_offset": record_offset, "timestamp": timestamp, "incomplete": g.incomplete,
               **_NO_MODERN_GROUP}
        base = {"group": gid, "log_partition": log_partition, "type": g.type.value}
        if isinstance(g, ClassicGroup):
            row.update(generation=g.generation, protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                       leader=g.leader, assignor=g.protocol_name)
            for mid, m in sorted(g.members.items()):
                member_rows.append({
                    **base, "member_id": mid, "instance_id": m.instance_id, "client_id": m.client_id,
                    "client_host": m.client_host, "rack_id": m.protocol.rack_id,  # ConsumerProtocol v3+ (KIP-881)
                    "member_epoch": None, "previous_member_epoch": None, "member_state": None,
                    "assigned": m.assigned_names,
                    "pending_revocation": None, "target": None, "target_epoch": None,
                    "subscribed_topic_names": m.subscription, "subscribed_topic_regex": None,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms, "session_timeout_ms": m.session_timeout_ms,
                    "server_assignor": None, "uses_classic_protocol": True,
                    "record_offset": record_offset, "timestamp": timestamp, "state_since": None, **_NO_TASKS})
        else:
            row.update(group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch,
                       assignor=preferred_server_assignor(g), assignment_timestamp=g.assignment_timestamp)
            if g.type is GroupType.STREAMS:
                row.update(topology_epoch=None if g.topology is None else int(g.topology.get("epoch", 0)),
                           validated_topology_epoch=g.validated_topology_epoch, assignor=None)
            elif g.type is GroupType.SHARE:
                row.update(_share_columns(share_state.get(gid) if share_state else None, names), assignor=None)
            for mid, m in sorted(g.members.items()):
                m_offset, m_ts = _touch(m.touched)
                member_rows.append({
                    **base, "member_id": mid, "instance_id": m.instance_id, "client_id": m.client_id,
                    "client_host": m.client_host, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "previous_member_epoch": m.previous_member_epoch, "member_state": m.state.name,
                    "assigned": tp_names(names.pairs(m.assigned)),
                    "pending_revocation": tp_names(names.pairs(m.pending_revocation)),
                    "target": tp_names(names.pairs(g.target(mid))), "target_epoch": g.assignment_epoch,
                    "subscribed_topic_names": sorted(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex or None,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms, "session_timeout_ms": m.session_timeout_ms,
                    "server_assignor": m.server_assignor, "uses_classic_protocol": m.uses_classic_protocol,
                    "record_offset": m_offset, "timestamp": m_ts, "state_since": _touch(m.state_since)[1],
                    **(_streams_columns(m, g.target_tasks.get(mid)) if g.type is GroupType.STREAMS else _NO_TASKS)})
        group_rows.append(row)
    return group_rows, member_rows


# ---- the loaded state, as Kafka's coordinator holds it ----------------------------------------------


def _partitions(assignment: dict[str, frozenset[int]], names: TopicNames) -> list[dict[str, Any]]:
    return [{"topic_id": t, "topic": names.names.get(t), "partitions": sorted(ps)}
            for t, ps in sorted(assignment.items())]


def _partition_epochs(epochs: dict[str, dict[int, int]], names: TopicNames) -> list[dict[str, Any]]:
    return [{"topic_id": t, "topic": names.names.get(t), "partition_epochs": {str(p): e for p, e in sorted(ps.items())}}
            for t, ps in sorted(epochs.items())]


def _tasks(t: Any) -> dict[str, Any]:
    """A ``TasksTuple`` (or ``TasksTupleWithEpochs``): active {subtopology: partitions, or
    {partition: epoch}}, standby and warm-up {subtopology: partitions}."""
    def one(m: dict) -> dict:
        return {sub: ({str(p): e for p, e in sorted(ps.items())} if isinstance(ps, dict) else sorted(ps))
                for sub, ps in sorted(m.items())}
    return {"active": one(t.active), "standby": one(t.standby), "warmup": one(t.warmup)}


def loaded_view(group_id: str, g: Group, manager: Any) -> dict[str, Any]:
    """One group as Kafka 4.4's loaded ``GroupMetadataManager`` holds it: the shape of the Kafka-made
    scenarios' ``loaded.jsonl`` (partitions by topic id, with the name when kgtool knows it), the
    source of ``--format json``'s describe views."""
    names: TopicNames = manager.topic_names
    if isinstance(g, ClassicGroup):
        return {
            "group_id": group_id, "type": "classic", "protocol_type": g.protocol_type, "state": g.state,
            "generation_id": g.generation, "protocol_name": g.protocol_name, "leader": g.leader,
            "current_state_timestamp": g.current_state_timestamp,
            "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                         "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                         "session_timeout_ms": m.session_timeout_ms, "assigned": m.assigned}
                        for _, m in sorted(g.members.items())],
        }
    out: dict[str, Any] = {
        "group_id": group_id, "type": g.type.value, "state": g.state, "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch, "assignment_timestamp": g.assignment_timestamp,
        "metadata_hash": g.metadata_hash,
    }
    members = [m for _, m in sorted(g.members.items())]
    if g.type is GroupType.STREAMS:
        out.update(
            validated_topology_epoch=g.validated_topology_epoch,
            stored_description_topology_epoch=g.stored_description_topology_epoch,
            failed_description_topology_epoch=g.failed_description_topology_epoch,
            last_assignment_configs=dict(sorted(g.last_assignment_configs.items())),
            topology=g.topology,
            target_assignment={mid: _tasks(t) for mid, t in sorted(g.target_tasks.items())},
            members=[{
                "member_id": m.member_id, "member_epoch": m.member_epoch,
                "previous_member_epoch": m.previous_member_epoch, "state": m.state.name,
                "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
                "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "topology_epoch": m.topology_epoch, "process_id": m.process_id, "user_endpoint": m.user_endpoint,
                "client_tags": dict(sorted(m.client_tags.items())), "assigned_tasks": _tasks(m.assigned_tasks),
                "tasks_pending_revocation": _tasks(m.tasks_pending_revocation)} for m in members])
        return out
    out["target_assignment"] = {mid: _partitions(a, names) for mid, a in sorted(g.target_assignment.items())}
    if g.type is GroupType.SHARE:
        out["members"] = [{
            "member_id": m.member_id, "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": m.state.name, "instance_id": None, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": sorted(m.subscribed_topic_names),
            "assigned_partitions": _partitions(m.assigned, names)} for m in members]
        info = manager.share_state_metadata.get(group_id)
        if info is not None:
            def topics(d: dict) -> list[dict[str, Any]]:
                return [{"topic_id": t, "topic": name, "partitions": sorted(ps)} for t, (name, ps) in sorted(d.items())]
            out["share_group_state_partition_metadata"] = {
                "initializing_topics": topics(info.initializing), "initialized_topics": topics(info.initialized),
                "deleting_topics": sorted(info.deleting)}
        return out
    out["preferred_server_assignor"] = preferred_server_assignor(g)
    out["resolved_regular_expressions"] = {
        regex: {"topics": sorted(topics), "version": version, "timestamp": ts}
        for regex, (topics, version, ts) in sorted(g.resolved_regular_expressions.items())}
    out["members"] = [{
        "member_id": m.member_id, "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
        "state": m.state.name, "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
        "client_host": m.client_host, "subscribed_topic_names": sorted(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex, "server_assignor": m.server_assignor,
        "rebalance_timeout_ms": m.rebalance_timeout_ms, "uses_classic_protocol": m.uses_classic_protocol,
        "assigned_partitions": _partition_epochs(m.assigned_epochs, names),
        "partitions_pending_revocation": _partition_epochs(m.pending_epochs, names)} for m in members]
    return out
