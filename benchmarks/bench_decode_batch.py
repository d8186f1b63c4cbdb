"""Benchmark: `kgtool decode-batch --summary` against kafka-python's record reader.

Generates (once, cached under benchmarks/.data/) a __consumer_offsets-like segment of at
least --size-mb MB: mostly OffsetCommit batches (1-24 partitions per commit, values v3, some
v1 with an expire timestamp, some tombstones), some GroupMetadata records (real values taken
from the golden scenario), about 10% compressed batches (gzip, snappy, lz4, zstd), and a few
transactional commits with COMMIT/ABORT markers.

Then measures, each as a whole process (interpreter start-up included), best of --repeat:

- kgtool:        python -m kgtool decode-batch --summary --decode offsets --format json FILE
                 (CRC verified, everything decompressed, every record decoded, every payload
                 decoded: OffsetCommit in the C extension, the rest by kgtool.coordinator);
- kgtool-pure:   the same with KGTOOL_PURE_PYTHON=1 (no C extension), for information;
- kafka-python:  MemoryRecords over the file, validate_crc() on every batch, every record's
                 key and value read (no payload decoding: less work than kgtool does).

Prints records/s of each and the ratio kgtool / kafka-python (goal: >= 10).

    python benchmarks/bench_decode_batch.py [--size-mb 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgtool.codec import encode_batch_v2, encode_end_txn_marker, scan_file  # noqa: E402

DATA = ROOT / "benchmarks" / ".data"

KAFKA_PYTHON_READER = r"""
import sys, time
from kafka.record import MemoryRecords
with open(sys.argv[1], "rb") as fh:
    data = fh.read()
n = 0
mr = MemoryRecords(data)
while True:
    b = mr.next_batch()
    if b is None:
        break
    if not b.validate_crc():
        raise SystemExit("crc")
    for r in b:
        r.key
        r.value
        n += 1
print(n)
"""


def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    # OffsetCommitKey: record type 1, group, topic, partition (GroupCoordinatorRecordHelpers)
    return struct.pack(">h", 1) + _s(group) + _s(topic) + struct.pack(">i", partition)


def offset_commit_value(offset: int, leader_epoch: int, metadata: str, commit_ts: int,
                        expire_ts: int | None = None) -> bytes:
    if expire_ts is not None:  # v1
        return struct.pack(">hq", 1, offset) + _s(metadata) + struct.pack(">qq", commit_ts, expire_ts)
    return struct.pack(">hqi", 3, offset, leader_epoch) + _s(metadata) + struct.pack(">q", commit_ts)


def group_metadata_records() -> list[tuple[bytes, bytes]]:
    seg = ROOT / "fixtures" / "offsets" / "scenario1_generations" / "00000000000000000000.log"
    out = []
    for b in scan_file(str(seg)):
        for r in b.records:
            if r.key is not None and r.key[:2] == b"\x00\x02" and r.value is not None:
                out.append((r.key, r.value))
    return out


def generate(path: Path, size_mb: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    gm = group_metadata_records()
    groups = [f"service-{i:03d}-consumers" for i in range(400)]
    topics = [f"events.domain-{i:02d}.v1" for i in range(40)]
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    target = size_mb * 1024 * 1024
    offset = 0
    ts = 1_717_000_000_000
    pid = 10_000
    tmp = path.with_suffix(".tmp")
    written = 0
    with open(tmp, "wb") as fh:
        while written < target:
            ts += rnd.randint(0, 50)
            roll = rnd.random()
            if roll < 0.01:
                key, value = gm[rnd.randrange(len(gm))]
                data = encode_batch_v2([(key, value, [], ts)], base_offset=offset, partition_leader_epoch=7)
                n = 1
            elif roll < 0.03:
                # A transactional offset commit, then its marker.
                g = rnd.choice(groups)
                recs = [(offset_commit_key(g, rnd.choice(topics), p),
                         offset_commit_value(rnd.randint(0, 1 << 40), 7, "", ts), [], ts)
                        for p in range(rnd.randint(1, 6))]
                data = encode_batch_v2(recs, base_offset=offset, producer_id=pid, producer_epoch=0,
                                       base_sequence=0, is_transactional=True, partition_leader_epoch=7)
                n = len(recs)
                data += encode_end_txn_marker(commit=rnd.random() < 0.8, producer_id=pid, producer_epoch=0,
                                              coordinator_epoch=3, base_offset=offset + n, timestamp=ts,
                                              partition_leader_epoch=7)
                n += 1
                pid += 1
            else:
                g = rnd.choice(groups)
                t = rnd.choice(topics)
                recs = []
                for p in range(rnd.randint(1, 24)):
                    k = offset_commit_key(g, t, p)
                    r = rnd.random()
                    if r < 0.02:
                        v = None  # OffsetDelete / expiration tombstone
                    elif r < 0.07:
                        v = offset_commit_value(rnd.randint(0, 1 << 40), -1, "", ts, ts + 86_400_000)
                    else:
                        v = offset_commit_value(rnd.randint(0, 1 << 40), rnd.randint(0, 30),
                                                "" if rnd.random() < 0.9 else "gen=3 member=m-1", ts)
                    recs.append((k, v, [], ts))
                comp = rnd.choice(codecs) if rnd.random() < 0.10 else "none"
                data = encode_batch_v2(recs, base_offset=offset, compression=comp, partition_leader_epoch=7)
                n = len(recs)
            fh.write(data)
            written += len(data)
            offset += n
    os.replace(tmp, path)


def run(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Wall-clock and CPU (user + system) seconds of one child process, and its stdout."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        raise SystemExit(f"{cmd[:4]}... failed ({p.returncode}): {p.stderr[-2000:]}")
    return dt, cpu, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=400,
                    help="segment size (>= 100; at 110 MB the CLI start-up, ~0.35 s of CPU for "
                    "typer/pydantic/rich/numpy imports, is most of kgtool's time)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-pure", action="store_true", help="do not time the pure-Python codec")
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    seg = DATA / f"__consumer_offsets-bench-{args.size_mb}mb.log"
    if not seg.exists():
        t0 = time.perf_counter()
        print(f"generating {seg} ...", flush=True)
        generate(seg, args.size_mb)
        print(f"  {seg.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s", flush=True)
    size = seg.stat().st_size
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    kg_cmd = [sys.executable, "-m", "kgtool", "decode-batch", "--summary", "--decode", "offsets",
              "--format", "json", str(seg)]

    def best(cmd, env=None):
        walls, cpus = [], []
        out = ""
        for _ in range(args.repeat):
            wall, cpu, out = run(cmd, env)
            walls.append(wall)
            cpus.append(cpu)
        return min(walls), min(cpus), out

    kg_wall, kg_cpu, kg_out = best(kg_cmd, env)
    summary = json.loads(kg_out)["inputs"][0]
    records = summary["records"]
    from kgtool.codec import speedups_enabled

    kp_wall, kp_cpu, kp_out = best([sys.executable, "-c", KAFKA_PYTHON_READER, str(seg)])
    kp_records = int(kp_out.strip())
    if kp_records != records:
        raise SystemExit(f"record counts differ: kgtool {records}, kafka-python {kp_records}")
    rows = [("kgtool decode-batch --summary (C extension)" if speedups_enabled() else
             "kgtool decode-batch --summary (no C extension built!)", kg_wall, kg_cpu)]
    if not args.skip_pure:
        pure_wall, pure_cpu, _ = best(kg_cmd, dict(env, KGTOOL_PURE_PYTHON="1"))
        rows.append(("kgtool decode-batch --summary, KGTOOL_PURE_PYTHON=1", pure_wall, pure_cpu))
    rows.append(("kafka-python MemoryRecords + validate_crc", kp_wall, kp_cpu))
    tiny = encode_batch_v2([(b"k", b"v")]).hex()
    st_wall, st_cpu, _ = best([sys.executable, "-m", "kgtool", "decode-batch", "--summary", "--hex", tiny], env)
    print(f"segment: {seg} ({size / 1e6:.1f} MB, {summary['batches']} batches, {records} records, "
          f"compression {summary['compression']}, payload kinds {summary['payload']['kinds']})")
    print(f"machine load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(wall-clock numbers suffer under load; CPU seconds much less)")
    print(f"{'reader (whole process, best of %d)' % args.repeat:58s} {'wall s':>7s} {'CPU s':>7s} "
          f"{'records/s (wall)':>17s} {'records/s (CPU)':>16s}")
    for name, wall, cpu in rows:
        print(f"{name:58s} {wall:7.2f} {cpu:7.2f} {records / wall:17,.0f} {records / cpu:16,.0f}")
    print(f"{'kgtool start-up alone (decode-batch --summary on one batch)':58s} {st_wall:7.2f} {st_cpu:7.2f}")
    print(f"ratio kgtool / kafka-python, records/s: {kp_wall / kg_wall:.1f}x wall-clock, "
          f"{kp_cpu / kg_cpu:.1f}x CPU time")


if __name__ == "__main__":
    main()
