"""In-process timing of kgtool's range, roundrobin, server-uniform and server-range ``assign()``.

Not a test: prints the best of ``--repeat`` calls (wall seconds) on the large-group shapes of bench_assign.py. The whole-process benchmark against
Kafka's Java assignors is ``benchmarks/`` of the ``assign`` command; this one isolates the
assignor from input parsing and output rendering.

    PYTHONPATH=. python benchmarks/assignors_inprocess.py [--topics 500] [--partitions 2000]
        [--members 2000] [--nonuniform-members 1000] [--only range,roundrobin]
"""

from __future__ import annotations

import argparse
import random
import time

from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec
from kgtool.assignors.range import RangeAssignor
from kgtool.assignors.roundrobin import RoundRobinAssignor
from kgtool.assignors.server_range import ServerRangeAssignor
from kgtool.assignors.server_uniform import UniformAssignor


def uniform_group(n_topics: int, n_partitions: int, n_members: int) -> GroupSpec:
    """Kafka's large-group shape: every member subscribes to every topic."""
    topics = {f"topic-{i}": TopicSpec(f"topic-{i}", n_partitions) for i in range(n_topics)}
    subs = tuple(topics)
    members = [MemberSpec(f"consumer-{i}", subs) for i in range(n_members)]
    return GroupSpec(topics=topics, members=members)


def nonuniform_group(n_topics: int, n_partitions: int, n_members: int, seed: int = 42) -> GroupSpec:
    """Members subscribe to differing random halves of the same topics."""
    rnd = random.Random(seed)
    topics = {f"topic-{i}": TopicSpec(f"topic-{i}", n_partitions) for i in range(n_topics)}
    names = list(topics)
    members = [
        MemberSpec(f"consumer-{i}", tuple(sorted(rnd.sample(names, n_topics // 2), key=names.index)))
        for i in range(n_members)
    ]
    return GroupSpec(topics=topics, members=members)


def overlapping_group(n_topics: int, n_partitions: int, n_members: int) -> GroupSpec:
    """Members on three topics each, chosen so that subscriptions overlap in chains: the hard
    case of the heterogeneous uniform builder's balancing loop."""
    topics = {f"topic-{i}": TopicSpec(f"topic-{i}", n_partitions) for i in range(n_topics)}
    names = list(topics)
    members = [
        MemberSpec(f"consumer-{i}", tuple(dict.fromkeys(
            (names[i % n_topics], names[(i * 7 + 1) % n_topics], names[(i * 13 + 5) % n_topics]))))
        for i in range(n_members)
    ]
    return GroupSpec(topics=topics, members=members)


def with_owned(group: GroupSpec, assignment) -> GroupSpec:
    return GroupSpec(topics=group.topics, members=[
        MemberSpec(m.member_id, m.topics, owned=tuple(assignment[m.member_id]), generation=1) for m in group.members
    ])


REPEAT = 3


def timed(label: str, fn, *args):
    """Best of REPEAT runs, wall seconds (the minimum is the least disturbed by a busy machine)."""
    best = float("inf")
    result = None
    for _ in range(REPEAT):
        result = None  # free the previous result outside the timed region
        t0 = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - t0)
    total = sum(len(v) for v in result.values())
    print(f"{label:<58} {best:6.3f} s  ({total:,} partitions)")
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=500)
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--members", type=int, default=2000)
    ap.add_argument("--nonuniform-members", type=int, default=1000)
    ap.add_argument("--only", default="range,roundrobin,server-uniform,server-range")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    global REPEAT
    REPEAT = a.repeat
    only = set(a.only.split(","))
    uni = uniform_group(a.topics, a.partitions, a.members)
    non = nonuniform_group(a.topics, a.partitions, a.nonuniform_members)
    shape = f"{a.topics}x{a.partitions}"
    assignors = {
        "range": RangeAssignor(), "roundrobin": RoundRobinAssignor(),
        "server-uniform": UniformAssignor(), "server-range": ServerRangeAssignor(),
    }
    for name, assignor in assignors.items():
        if name not in only:
            continue
        first = timed(f"{name} uniform {shape}, {a.members} members", assignor.assign, uni)
        first_non = timed(f"{name} non-uniform {shape}, {a.nonuniform_members} members", assignor.assign, non)
        if name.startswith("server"):
            timed(f"{name} uniform, second round (owned = first)", assignor.assign, with_owned(uni, first))
            timed(f"{name} non-uniform, second round (owned = first)", assignor.assign, with_owned(non, first_non))
        if name == "server-uniform":
            overlap = overlapping_group(a.topics, a.partitions, a.nonuniform_members)
            timed(f"{name} overlapping 3-topic subscriptions, {a.nonuniform_members} members",
                  assignor.assign, overlap)


if __name__ == "__main__":
    main()
