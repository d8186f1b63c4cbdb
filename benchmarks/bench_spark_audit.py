"""Benchmark of ``kgtool spark-audit`` against single-process decoding of the same data.

Builds a synthetic ``__consumer_offsets`` log (default 1 GiB over 4 partitions: many groups,
rebalances every few rounds, 1 batch in 8 gzip- and 1 in 16 lz4-compressed, some
transactional commits with markers, a few rewinds), then measures on the same files:

- ``decode-batch`` (single process): kgtool's codec over every segment, records decoded
  (what ``kgtool decode-batch`` does), no coordinator decoding or replay;
- ``pure audit`` (single process, only for sizes up to --pure-max-mb): decode + coordinator
  records + replay in one Python process (kgtool.offsets.audit);
- ``spark-audit`` on ``local[1]`` and ``local[2]`` (subprocesses, tables written as Parquet),
  with the peak RSS of the driver's Python process and of its JVM (in local mode the JVM
  also hosts the executors, so its figure is an upper bound of a real driver's).

Prints records/s for each and the ratios. Usage:

    PYTHONPATH=. python benchmarks/bench_spark_audit.py --size-mb 1024 --dir /tmp/kgtool-bench
    PYTHONPATH=. python benchmarks/bench_spark_audit.py --size-mb 64      # a quick run

The generated log is reused when ``--dir`` already holds one of the same size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

START_MS = 1_717_171_200_000


def _key(group: str, topic: str, partition: int) -> bytes:
    # OffsetCommitKey v1 (record type 1): group, topic, partition; checked against
    # kgtool's encoder in _check_fast_encoding().
    gb, tb = group.encode(), topic.encode()
    return struct.pack(">hh", 1, len(gb)) + gb + struct.pack(">h", len(tb)) + tb + struct.pack(">i", partition)


def _value(offset: int, leader_epoch: int, ts: int) -> bytes:
    # OffsetCommitValue v3: offset, leader_epoch, metadata "", commit_timestamp.
    return struct.pack(">hqihq", 3, offset, leader_epoch, 0, ts)


def _check_fast_encoding() -> None:
    from kgtool.coordinator.records import encode_offsets_record

    k, v = encode_offsets_record(
        "offset_commit", {"group": "g", "topic": "t", "partition": 7},
        {"offset": 42, "leader_epoch": 3, "metadata": "", "commit_timestamp": 99},
    )
    assert (k, v) == (_key("g", "t", 7), _value(42, 3, 99)), "fast encoding differs from kgtool's encoder"


def generate_partition(path: str, log_partition: int, target_bytes: int, segment_bytes: int,
                       groups: int = 200, members: int = 6, partitions_per_member: int = 4) -> int:
    """Write one partition directory; returns the number of records."""
    from kgtool.codec.batch import encode_batch_v2, encode_end_txn_marker
    from kgtool.offsets.scenario import Script
    from kgtool.offsets.writer import encode_event

    os.makedirs(path, exist_ok=True)
    topic = f"topic-{log_partition}"
    tps = members * partitions_per_member
    keys = {g: [_key(f"bench-{log_partition}-{g}", topic, p) for p in range(tps)] for g in range(groups)}
    offset = 0
    written = 0
    records = 0
    seg_start = 0
    fh = open(os.path.join(path, f"{0:020d}.log"), "wb")
    rnd = 0
    try:
        while written < target_bytes:
            ts = START_MS + rnd * 1000
            for g in range(groups):
                if written >= target_bytes:
                    break
                if fh.tell() >= segment_bytes:
                    fh.close()
                    seg_start = offset
                    fh = open(os.path.join(path, f"{seg_start:020d}.log"), "wb")
                batches = []
                if rnd % 20 == 0:  # a rebalance: new generation, partitions rotate among members
                    gen = rnd // 20 + 1
                    shift = gen % members
                    assignment = {
                        f"member-{(m + shift) % members}": [(topic, p) for p in range(m * partitions_per_member,
                                                                                    (m + 1) * partitions_per_member)]
                        for m in range(members)
                    }
                    s = Script(log_partition=log_partition)
                    s.generation(f"bench-{log_partition}-{g}", gen, assignment, at=ts - START_MS)
                    batches.append((encode_event(s.events[0], offset), 1))
                if g % 50 == 7 and rnd % 3 == 1:  # a transactional commit of one member, then its marker
                    pid = 10_000 + log_partition * 1000 + g
                    recs = [(keys[g][p], _value(rnd * 100 + p, 1, ts), [], ts) for p in range(partitions_per_member)]
                    batches.append((encode_batch_v2(recs, base_offset=offset + sum(n for _, n in batches),
                                                    producer_id=pid, producer_epoch=0, base_sequence=0,
                                                    is_transactional=True), len(recs)))
                    batches.append((encode_end_txn_marker(commit=rnd % 2 == 1, producer_id=pid, producer_epoch=0,
                                                          base_offset=offset + sum(n for _, n in batches),
                                                          timestamp=ts), 1))
                else:
                    rewind = 150 if (g == 3 and rnd % 97 == 96) else 0  # below the previous round (+100)
                    recs = [(keys[g][p], _value(rnd * 100 + p - rewind, 1, ts), [], ts) for p in range(tps)]
                    comp = "gzip" if rnd % 8 == 3 else ("lz4" if rnd % 16 == 5 else "none")
                    batches.append((encode_batch_v2(recs, base_offset=offset + sum(n for _, n in batches),
                                                    compression=comp, producer_id=-1, base_sequence=0), len(recs)))
                for b, n in batches:
                    fh.write(b)
                    written += len(b)
                    offset += n
                    records += n
            rnd += 1
    finally:
        fh.close()
    return records


def generate(root: str, size_mb: int, partitions: int, segment_mb: int) -> dict:
    meta_path = os.path.join(root, "bench.json")
    if os.path.exists(meta_path):
        meta = json.load(open(meta_path))
        if meta.get("size_mb") == size_mb and meta.get("partitions") == partitions:
            return meta
        shutil.rmtree(root)
    _check_fast_encoding()
    os.makedirs(root, exist_ok=True)
    t = time.perf_counter()
    per = size_mb * (1 << 20) // partitions
    records = 0
    for p in range(partitions):
        records += generate_partition(os.path.join(root, f"__consumer_offsets-{p}"), p, per, segment_mb << 20)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs if f.endswith(".log"))
    meta = {"size_mb": size_mb, "partitions": partitions, "records": records, "bytes": size,
            "generate_s": round(time.perf_counter() - t, 1)}
    json.dump(meta, open(meta_path, "w"))
    return meta


def segments(root: str) -> list[tuple[str, int]]:
    out = []
    for d in sorted(os.listdir(root)):
        if d.startswith("__consumer_offsets-"):
            for f in sorted(os.listdir(os.path.join(root, d))):
                if f.endswith(".log"):
                    out.append((os.path.join(root, d, f), int(d.rsplit("-", 1)[1])))
    return out


def bench_decode_batch(root: str) -> tuple[float, int]:
    from kgtool.codec.segment import scan_file

    t = time.perf_counter()
    n = 0
    for path, _p in segments(root):
        for b in scan_file(path):
            if hasattr(b, "records"):
                n += len(b.records)
    return time.perf_counter() - t, n


def bench_pure(root: str) -> tuple[float, int, int]:
    from kgtool.offsets.audit import audit_entries
    from kgtool.offsets.decode import entries_from_file

    t = time.perf_counter()
    entries = [e for path, p in segments(root) for e in entries_from_file(path, log_partition=p)]
    r = audit_entries(entries)
    return time.perf_counter() - t, len(entries), len(r.tables["findings"])


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


def _cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def bench_spark(root: str, master: str, out: str) -> dict:
    env = dict(os.environ, PYTHONPATH=REPO)
    cmd = [sys.executable, "-m", "kgtool", "spark-audit", root, "--master", master, "--format", "json",
           "--out", out, "--conf", "spark.driver.memory=4g"]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    peak = {"python": 0, "jvm": 0}
    cpu_ticks: dict[int, int] = {}
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            peak["python"] = max(peak["python"], _rss_kb(proc.pid))
            jvm = sum(_rss_kb(c) for c in _children(proc.pid))
            peak["jvm"] = max(peak["jvm"], jvm)
            for pid in _tree(proc.pid):
                t = _cpu_ticks(pid)
                if t:
                    cpu_ticks[pid] = max(cpu_ticks.get(pid, 0), t)
            time.sleep(0.2)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t
    # CPU of the whole tree (CLI, JVM, Python workers), from the last /proc sample of each
    # process: rusage would miss the workers, which nobody waits for.
    cpu = (sum(cpu_ticks.values()) + 0.0) / os.sysconf("SC_CLK_TCK")
    stop.set()
    th.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"spark-audit failed ({proc.returncode}): {stderr[-2000:]}")
    doc = json.loads(stdout)
    return {"wall_s": wall, "cpu_s": cpu, "peak_python_mb": peak["python"] / 1024, "peak_jvm_mb": peak["jvm"] / 1024,
            "findings": sum(doc["findings_by_rule"].values()), "commits": doc["counts"]["commits"],
            "splits": doc["splits"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--segment-mb", type=int, default=1024, help="segment roll size (default: one per partition)")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "kgtool-bench-offsets"))
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--pure-max-mb", type=int, default=128)
    a = ap.parse_args()
    meta = generate(a.dir, a.size_mb, a.partitions, a.segment_mb)
    print(f"log: {meta['bytes'] / (1 << 20):.0f} MiB, {meta['records']:,} records, {a.partitions} partitions "
          f"(generated in {meta.get('generate_s', 0)} s)")
    dt, n = bench_decode_batch(a.dir)
    rates = {"decode-batch (1 process)": n / dt}
    print(f"decode-batch, single process:  {dt:8.1f} s  {n / dt:12,.0f} records/s")
    if a.size_mb <= a.pure_max_mb:
        pdt, pn, pf = bench_pure(a.dir)
        rates["pure audit (1 process)"] = pn / pdt
        print(f"pure-Python audit, 1 process:  {pdt:8.1f} s  {pn / pdt:12,.0f} records/s  ({pf} findings)")
    for master in a.masters.split(","):
        out = os.path.join(a.dir + "-out", master.replace("[", "").replace("]", ""))
        r = bench_spark(a.dir, master, out)
        rates[f"spark-audit {master}"] = meta["records"] / r["wall_s"]
        print(f"spark-audit {master:10s}:     {r['wall_s']:8.1f} s  {meta['records'] / r['wall_s']:12,.0f} records/s  "
              f"({r['splits']} splits, {r['findings']} findings; CPU {r['cpu_s']:.0f} s = {r['cpu_s'] / r['wall_s']:.2f} cores; "
              f"peak RSS driver python {r['peak_python_mb']:.0f} MiB, "
              f"JVM {r['peak_jvm_mb']:.0f} MiB)")
    base = rates["decode-batch (1 process)"]
    print("ratios against single-process decode-batch:")
    for k, v in rates.items():
        print(f"  {k:28s} {v / base:6.2f}x")
    s1, s2 = rates.get("spark-audit local[1]"), rates.get("spark-audit local[2]")
    if s1 and s2:
        print(f"scaling local[2] / local[1]: {s2 / s1:.2f}x")


if __name__ == "__main__":
    main()
