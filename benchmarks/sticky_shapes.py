"""Time kgtool's sticky / cooperative-sticky ``assign()`` on Kafka's large-group test shapes.

Not a test: ``PYTHONPATH=. python benchmarks/sticky_shapes.py [--quick]``. Shapes follow
``AbstractStickyAssignorTest.testLargeAssignmentAndGroupWith{Uniform,NonEqual}Subscription``:
500 topics x 2,000 partitions, 2,000 consumers (round 1, then round 2 with every consumer but
the first owning its round-1 partitions), plus 1,000 consumers with differing subscriptions.
The end-to-end ``kgtool assign`` benchmark (file in, JSON out) lives with the CLI.
"""

from __future__ import annotations

import random
import resource
import sys
import time

from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec
from kgtool.assignors.sticky import CooperativeStickyAssignor, StickyAssignor


def shape(n_topics: int, n_partitions: int, n_consumers: int, kind: str) -> GroupSpec:
    names = [f"topic-{i:03d}" for i in range(n_topics)]
    topics = {t: TopicSpec(t, n_partitions) for t in names}
    rnd = random.Random(42)
    members = []
    everything = tuple(names)
    for i in range(n_consumers):
        if kind == "uniform":
            subs = everything
        elif kind == "one-differs":  # Kafka's testLargeAssignmentAndGroupWithNonEqualSubscription
            subs = everything[:1] if i == n_consumers - 1 else everything
        else:  # "random": each consumer on a random half of the topics
            subs = tuple(sorted(rnd.sample(names, max(1, n_topics // 2))))
        members.append(MemberSpec(f"consumer-{i:04d}", subs))
    return GroupSpec(topics=topics, members=members)


def second_round(g: GroupSpec, result) -> GroupSpec:
    return GroupSpec(g.topics, [
        MemberSpec(m.member_id, m.topics, tuple(result[m.member_id]) if i else (), 1 if i else None)
        for i, m in enumerate(g.members)
    ])


def run(label: str, assignor, g: GroupSpec):
    t0 = time.perf_counter()
    result = assignor.assign(g)
    dt = time.perf_counter() - t0
    n = sum(len(v) for v in result.values())
    print(f"{label:55s} {dt:7.2f} s  ({n} partitions assigned)", flush=True)
    return result


def main() -> None:
    quick = "--quick" in sys.argv
    t, p, c = (100, 500, 400) if quick else (500, 2000, 2000)
    kinds = [a for a in sys.argv[1:] if not a.startswith("--")] or ["uniform", "one-differs", "random"]
    for kind in kinds:
        n_consumers = c if kind != "random" else c // 2
        g = shape(t, p, n_consumers, kind)
        for assignor in (StickyAssignor(), CooperativeStickyAssignor()):
            first = run(f"{assignor.name} {kind} {t}x{p} {n_consumers} consumers, round 1", assignor, g)
            run(f"{assignor.name} {kind} {t}x{p} {n_consumers} consumers, round 2", assignor, second_round(g, first))
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
