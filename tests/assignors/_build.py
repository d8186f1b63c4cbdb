"""Small builders for assignor tests (groups written the way Kafka's Java tests write them)."""

from __future__ import annotations

from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec

#: AbstractPartitionAssignorTest.ALL_RACKS
ALL_RACKS = ["a", "b", "c", "d", "e", "f", "g"]


def group(topics: dict[str, int], members: dict[str, list[str]], **per_member) -> GroupSpec:
    """``topics``: name -> partitions; ``members``: id -> topics; ``per_member``: field -> {id: value}."""
    specs = []
    for mid, subs in members.items():
        extra = {k: v[mid] for k, v in per_member.items() if mid in v}
        if "owned" in extra:
            extra["owned"] = tuple(extra["owned"])
        specs.append(MemberSpec(member_id=mid, topics=tuple(subs), **extra))
    return GroupSpec(topics={t: TopicSpec(t, n) for t, n in topics.items()}, members=specs)


def rack_group(num_partitions_per_topic: dict[str, int], replication_factor: int, broker_racks: list,
               consumer_racks: list, consumer_topics: list[list[str]]) -> GroupSpec:
    """``AbstractPartitionAssignorTest.verifyRackAssignment``'s group: consumers ``consumer<i>``;
    replica ``j`` of partition ``i`` on broker ``(i + j + nextNodeIndex) % brokers``."""
    topics = {}
    next_index = 0
    for topic, n in num_partitions_per_topic.items():
        racks = []
        for i in range(n):
            racks.append(tuple(broker_racks[(i + j + next_index) % len(broker_racks)] for j in range(replication_factor)))
        topics[topic] = TopicSpec(topic, n, tuple(racks))
        next_index += n
    members = [
        MemberSpec(member_id=f"consumer{i}", topics=tuple(consumer_topics[i]), rack=consumer_racks[i])
        for i in range(len(consumer_racks))
    ]
    return GroupSpec(topics=topics, members=members)


def racks(n: int) -> list[str]:
    """``AbstractPartitionAssignorTest.racks``."""
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n: int) -> list[None]:
    return [None] * n


def sorted_strings(assignment) -> list[str]:
    """``toSortedString`` of each consumer's partitions, consumers in ``consumer<i>`` order."""
    return [
        ", ".join(sorted(f"{t}-{p}" for t, p in assignment[f"consumer{i}"])) for i in range(len(assignment))
    ]
