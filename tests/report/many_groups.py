"""A broker's ``__consumer_offsets`` with many groups (5,000 by default), written with kgtool's own
encoders (:class:`kgtool.offsets.scenario.Script`, :func:`kgtool.offsets.writer.write_segment`), for
the report's browser tests and ``benchmarks/bench_report.py``.

Group ``i`` (``svc-i``) lives in log partition ``i % PARTITIONS`` (the audit reads partitions as
given; where Kafka's ``partitionFor`` would place the id does not matter to it), consumes 4
partitions of topic ``t<i % 50>`` with 2 members and commits 3 times over an hour. On top:

- every ``REWIND_EVERY``-th group rebalances once (a member replaced), then commits an offset
  below its previous one while Stable: a ``rewind`` finding and a rebalance;
- every ``STORM_EVERY``-th group (among those) rebalances 5 more times a minute apart: a
  ``rebalance-storm`` finding (the default rule, 5 within 10 minutes).

So ``groups // REWIND_EVERY`` groups have a section, and findings of both kinds.
"""

from __future__ import annotations

import os

from kgtool.offsets.scenario import Script
from kgtool.offsets.writer import write_segment

PARTITIONS = 4
REWIND_EVERY = 10
STORM_EVERY = 50
MINUTE = 60_000


def group_id(i: int) -> str:
    return f"svc-{i:05d}"


def expected(groups: int) -> dict[str, int]:
    """What the audit finds: groups, groups with a section, rewinds, storms."""
    rewinds = len(range(0, groups, REWIND_EVERY))
    storms = len(range(0, groups, STORM_EVERY))
    return {"groups": groups, "sections": rewinds, "rewind": rewinds, "rebalance-storm": storms}


def write(root: str, groups: int = 5000) -> str:
    """Write ``root/__consumer_offsets-N/00000000000000000000.log`` for N < PARTITIONS; returns root."""
    events: list[list[tuple[int, int, str]]] = [[] for _ in range(PARTITIONS)]
    for i in range(groups):
        # (time ms, group, what): spread over an hour, in log order once sorted
        t = (i * 37) % (30 * MINUTE)
        plan = events[i % PARTITIONS]
        plan.append((t, i, "join"))
        for k in range(3):
            plan.append((t + (k + 1) * 5 * MINUTE, i, f"commit{k}"))
        if i % REWIND_EVERY == 0:
            plan.append((t + 17 * MINUTE, i, "replace"))
            plan.append((t + 18 * MINUTE, i, "rewind"))
        if i % STORM_EVERY == 0:
            for k in range(5):
                plan.append((t + 19 * MINUTE + k * MINUTE, i, f"storm{k}"))
    for p, plan in enumerate(events):
        s = Script(log_partition=p)
        generation = {}
        for at, i, what in sorted(plan):
            g = group_id(i)
            topic = f"t{i % 50}"
            if what == "join" or what == "replace" or what.startswith("storm"):
                generation[i] = generation.get(i, 0) + 1
                n = generation[i]
                second = "b-1" if n == 1 else f"b-{n}"  # member b restarts: a new member id each time
                s.generation(g, n, {"a-1": [(topic, 0), (topic, 1)], second: [(topic, 2), (topic, 3)]}, at=at,
                             clients={"a-1": ("a", "/10.0.0.1"), second: ("b", "/10.0.0.2")})
            elif what.startswith("commit"):
                k = int(what[-1])
                s.commit(g, {(topic, q): 100 * (k + 1) + q for q in range(4)}, at=at)
            elif what == "rewind":
                s.commit(g, {(topic, 0): 50}, at=at)
        write_segment(s, os.path.join(root, f"__consumer_offsets-{p}"))
    return root
