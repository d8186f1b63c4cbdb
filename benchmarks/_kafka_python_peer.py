"""The peer of bench_assign.py: kafka-python 3.0.12's assignors, as a whole process, on the
same group file kgtool reads (JSON, the described-group shape), writing the same JSON assignment.

    python benchmarks/_kafka_python_peer.py GROUP.json {range|roundrobin|sticky|cooperative-sticky} OUT.json

kafka-python has RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor and
CooperativeStickyAssignor (kafka.coordinator.assignors); no server-side (KIP-848) assignor.
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace


def main() -> None:
    path, name, out = sys.argv[1:4]
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    counts = {t: (s if isinstance(s, int) else s["partitions"]) for t, s in doc["topics"].items()}
    partition_sets = {t: set(range(n)) for t, n in counts.items()}

    class Cluster:
        def topics(self):
            return set(partition_sets)

        def partitions_for_topic(self, topic):
            return partition_sets.get(topic)

    if name == "range":
        from kafka.coordinator.assignors.range import RangePartitionAssignor as A
        assignor = A
    elif name == "roundrobin":
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as A
        assignor = A
    elif name == "sticky":
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as A
        assignor = A()
    elif name == "cooperative-sticky":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as A
        assignor = A()
    else:
        raise SystemExit(f"kafka-python has no {name!r} assignor")
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    members = []
    for m in doc["members"]:
        meta = ConsumerProtocolSubscription(version=0, topics=list(m["topics"]), user_data=b"")
        members.append(SimpleNamespace(member_id=m["id"], group_instance_id=m.get("instance_id"), metadata=meta))
    result = assignor.assign(Cluster(), members)
    rendered = {}
    for member_id, a in result.items():
        by_topic: dict[str, list[int]] = {}
        for tp in a.partitions():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        rendered[member_id] = by_topic
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"assignment": rendered}, fh)


if __name__ == "__main__":
    main()
