"""A broker log directory for the lag tests: ``__consumer_offsets-0`` written from a script, and
data partitions ``orders-0`` and ``orders-1`` written as a broker writes them (indexes, time
index), one record a second on each from T0 for 20 minutes.

Groups (all on orders-0 and orders-1, owned by one member each, committing every 10 s):

- ``healthy``: always caught up at its commits;
- ``stalled``: its offsets stop moving at 300 s on orders-0 (orders-1 stays healthy) while it
  keeps committing: Burrow's STALL;
- ``stopper``: caught up, then commits nothing after 400 s: STOP at the end;
- ``slow``: a constant 30 records behind on orders-1 (never zero): WARN the whole time.
"""

from __future__ import annotations

import os

from kgtool.offsets.scenario import Script
from kgtool.offsets.writer import write_segment
from tests.storage.writer import PartitionWriter

START = 1_717_171_200_000  # Script.start_ms
T0 = START
SECONDS = 1200
TOPIC_ID = bytes(range(1, 17))


def end_at(t: int) -> int:
    """The log end of each data partition at instant t (record k stamped T0 + k s)."""
    if t <= T0:
        return 0
    return min(SECONDS, (t - T0 + 999) // 1000)


def write(root: str, *, copies: int = 1) -> dict[str, str]:
    """The directory (``root/broker-1``, and ``broker-2``... for follower copies a batch (20 records) behind)."""
    brokers = [os.path.join(root, f"broker-{k + 1}") for k in range(copies)]
    for b, broker in enumerate(brokers):
        for p in (0, 1):
            d = os.path.join(broker, f"orders-{p}")
            w = PartitionWriter(d, segment_bytes=32_000, topic_id=TOPIC_ID)
            n = SECONDS - 20 * b  # a follower: the leader's batches, the last one not yet fetched
            for k in range(0, n, 20):
                w.records([(f"k{j}".encode(), b"v" * 40, [], T0 + 1000 * j) for j in range(k, min(k + 20, n))])
            w.close()
    s = Script(log_partition=0, start_ms=START)
    members = {"healthy": "h-1", "stalled": "s-1", "stopper": "x-1", "slow": "w-1"}
    for gen, (g, m) in enumerate(members.items(), start=1):
        s.generation(g, 1, {m: [("orders", 0), ("orders", 1)]}, at=0, clients={m: (f"client-{g}", "/10.1.0.1")})
    for k in range(1, SECONDS // 10 + 1):
        at = 10_000 * k
        now = end_at(T0 + at)
        s.commit("healthy", {("orders", 0): now, ("orders", 1): now}, at=at)
        s.commit("stalled", {("orders", 0): min(now, 300), ("orders", 1): now}, at=at)
        if at <= 400_000:
            s.commit("stopper", {("orders", 0): now, ("orders", 1): now}, at=at)
        s.commit("slow", {("orders", 0): now, ("orders", 1): max(now - 30, 0)}, at=at)
    d = os.path.join(brokers[0], "__consumer_offsets-0")
    os.makedirs(d, exist_ok=True)
    write_segment(s, d)
    return {"root": brokers[0], "brokers": brokers}
