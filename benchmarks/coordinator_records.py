"""Benchmark: decoding __consumer_offsets offset-commit keys + values (records/s).

Measures, in one run and on the same records:
  * kgtool ``decode_offset_commit`` (the flat-tuple bulk path used by ``decode-batch --summary``),
  * kgtool ``decode_offsets_record`` (a full ``CoordinatorRecord`` with key/value dicts),
  * kgtool's generic compiled schema decoder (what every other record type goes through),
  * the peer: kafka-python's ``kafka.protocol.old.types.Schema`` decoding the same key and value
    layouts (a generic pure-Python protocol decoder).

Records are fresh ``bytes`` objects sliced from one buffer, as the batch codec produces them.
Two key distributions: "realistic" (20 groups x 100 partitions, repeated, as in a real
__consumer_offsets segment) and "all distinct" (every key new: the key cache never hits).

Run: PYTHONPATH=. python benchmarks/coordinator_records.py [--records N]
"""

from __future__ import annotations

import argparse
import gc
import io
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kgtool.coordinator import records  # noqa: E402
from kgtool.coordinator.records import (  # noqa: E402
    decode_offset_commit,
    decode_offsets_record,
    encode_offsets_record,
)
from kgtool.coordinator.schemas import OFFSETS_RECORD_TYPES  # noqa: E402


def make_records(n: int, distinct: bool, seed: int = 7) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    blob = bytearray()
    spans = []
    for i in range(n):
        if distinct:
            group, topic, partition = f"group-{i}", f"topic-{i % 977}", i % 64
        else:
            group, topic, partition = f"service-{rng.randrange(20)}", "orders", rng.randrange(100)
        value = {"offset": rng.randrange(1 << 40), "leader_epoch": rng.randrange(50),
                 "metadata": "" if rng.random() < 0.7 else f"gen={rng.randrange(99)} member=consumer-{rng.randrange(9)}",
                 "commit_timestamp": 1717171719000 + i}
        if rng.random() < 0.01:
            value = {"offset": value["offset"], "metadata": "", "commit_timestamp": value["commit_timestamp"],
                     "expire_timestamp": value["commit_timestamp"] + 86400000}
        kb, vb = encode_offsets_record("offset_commit", {"group": group, "topic": topic, "partition": partition}, value)
        k0 = len(blob)
        blob += kb
        v0 = len(blob)
        blob += vb
        spans.append((k0, v0, len(blob)))
    data = bytes(blob)
    return [(data[a:b], data[b:c]) for a, b, c in spans]


def kafka_python_decoder():
    from kafka.protocol.old.types import Int16, Int32, Int64, Schema, String

    key = Schema(("version", Int16), ("group", String("utf-8")), ("topic", String("utf-8")), ("partition", Int32))
    values = {
        3: Schema(("version", Int16), ("offset", Int64), ("leader_epoch", Int32), ("metadata", String("utf-8")),
                  ("commit_timestamp", Int64)),
        1: Schema(("version", Int16), ("offset", Int64), ("metadata", String("utf-8")),
                  ("commit_timestamp", Int64), ("expire_timestamp", Int64)),
    }

    def decode(kb: bytes, vb: bytes):
        k = key.decode(io.BytesIO(kb))
        v = values[vb[1]].decode(io.BytesIO(vb))
        return k, v

    return decode


def rate(fn, pairs) -> float:
    # The input list is a benchmark artifact (the codec streams batches): keep the collector
    # from re-scanning its million tuples during the timed loop.
    gc.collect()
    gc.freeze()
    # CPU time of this process, not wall time: on a shared machine other jobs steal the CPU
    # and wall-clock rates swing by 3x; CPU seconds are what the decoder itself costs.
    t0 = time.process_time()
    for kb, vb in pairs:
        fn(kb, vb)
    return len(pairs) / max(time.process_time() - t0, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5, help="best of N interleaved rounds (default 5)")
    args = ap.parse_args()
    generic = lambda k, v: records._decode_generic(k, v, OFFSETS_RECORD_TYPES, "__consumer_offsets")  # noqa: E731
    decoders = (
        ("kgtool decode_offset_commit", decode_offset_commit),
        ("kgtool decode_offsets_record", decode_offsets_record),
        ("kgtool generic schema decoder", generic),
        ("kafka-python Schema (peer)", kafka_python_decoder()),
    )
    print(f"best of {args.repeats} interleaved rounds over {args.records:,} records each (records per CPU second)")
    print(f"{'input':14} {'decoder':34} {'records/s':>12}")
    for label, distinct in (("realistic", False), ("all distinct", True)):
        pairs = make_records(args.records, distinct)
        best = {name: 0.0 for name, _ in decoders}
        # Rounds interleave the decoders so that a busy machine slows all of them alike.
        for _ in range(args.repeats):
            for name, fn in decoders:
                records._KEY_CACHE.clear()
                best[name] = max(best[name], rate(fn, pairs))
        for name, _ in decoders:
            print(f"{label:14} {name:34} {best[name]:12,.0f}")
        base = best["kafka-python Schema (peer)"]
        print(f"{label:14} ratio vs kafka-python: tuple path {best['kgtool decode_offset_commit'] / base:.1f}x, "
              f"record path {best['kgtool decode_offsets_record'] / base:.1f}x, "
              f"generic {best['kgtool generic schema decoder'] / base:.1f}x")
        gc.unfreeze()
        del pairs


if __name__ == "__main__":
    main()
