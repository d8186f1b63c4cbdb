"""Benchmark: `kgtool decode-batch` against kafka-python's record reader, as whole processes.

Two cases, each measured in the same run against its peer (--cases summary,print; both by
default). Every reader runs as a whole process (interpreter start-up included), best of --repeat.

**summary** (--size-mb, 400 by default). Generates (once, cached under benchmarks/.data/) a
__consumer_offsets-like segment of at least --size-mb MB: mostly OffsetCommit batches (1-24
partitions per commit, values v3, some v1 with an expire timestamp, some tombstones), some
GroupMetadata records (real values taken from the golden scenario), about 10% compressed batches
(gzip, snappy, lz4, zstd), and a few transactional commits with COMMIT/ABORT markers. Then:

- kgtool:        python -m kgtool decode-batch --summary --decode offsets --format json FILE
                 (CRC verified, everything decompressed, every record decoded, every payload
                 decoded: OffsetCommit in the C extension, the rest by kgtool.coordinator);
- kgtool-pure:   the same with KGTOOL_PURE_PYTHON=1 (no C extension), for information;
- kafka-python:  MemoryRecords over the file, validate_crc() on every batch, every record's
                 key and value read (no payload decoding: less work than kgtool does).

Prints records/s of each and the ratio kgtool / kafka-python (goal: >= 10).

**print** (--print-mb, 64 by default). Printing every record as JSON lines, stdout redirected to
a file (a temporary file under benchmarks/.data/, given to the child as its stdout and deleted
after each run), on two segments of --print-mb MiB, both generated once and cached:

- the __consumer_offsets-like segment above (same generator), with --decode offsets;
- a data partition: batches of 1-200 records, keys f"user-{n}" of 8-16 bytes (about 5% null),
  values of exactly 100 random bytes, about 10% of batches with one or two headers per record
  ("trace-id" 16 bytes, "origin"), about 15% compressed (gzip, snappy, lz4, zstd), increasing
  offsets and timestamps, producer id -1 for most, about 20% from idempotent producers
  (producer id, epoch, running base sequence).

For each segment:

- kgtool:        python -m kgtool decode-batch --format jsonl [--decode offsets] FILE > out
                 (a batch line per batch, a record line per record with key/value/headers
                 as base64, CRC verified, and with --decode offsets every payload decoded);
- kgtool-pure:   the same with KGTOOL_PURE_PYTHON=1, for information (unless --skip-pure);
- kafka-python loop: the loop a Python user writes to dump a segment as JSON lines:
                 MemoryRecords over the file bytes, validate_crc() per batch, per record a dict
                 {offset, timestamp, key, value, headers} (bytes as base64), print(json.dumps(d))
                 to a normal buffered stdout; no payload decoding (less work than kgtool does).

Both sides must see the same number of records: the loop prints its count to stderr; kgtool's
is counted in its output (lines whose object starts with "type": "record", or every line when
no line carries a "type", the schema of one object per record). Prints per reader records, wall
and CPU seconds, records/s (wall), output MB and bytes per record, the ratio kgtool / loop, and
whether the targets are met: >= 1,000,000 records/s (wall) for kgtool and >= 10x the loop.

    python benchmarks/bench_decode_batch.py [--cases summary,print] [--size-mb 400]
        [--print-mb 64] [--repeat 3] [--skip-pure]
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
import tempfile
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

# The loop an SRE writes to dump a segment as JSON lines with kafka-python (the peer of the print
# case): plain and unoptimised on purpose. stdout is the output file; the count goes to stderr.
KAFKA_PYTHON_JSONL = r"""
import base64, json, sys
from kafka.record import MemoryRecords


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


with open(sys.argv[1], "rb") as fh:
    data = fh.read()
n = 0
records = MemoryRecords(data)
while True:
    batch = records.next_batch()
    if batch is None:
        break
    if not batch.validate_crc():
        raise SystemExit(f"CRC mismatch in the batch at offset {batch.base_offset}")
    for r in batch:
        d = {
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": b64(r.key),
            "value": b64(r.value),
            "headers": [{"key": k, "value": b64(v)} for k, v in r.headers],
        }
        print(json.dumps(d))
        n += 1
print(n, file=sys.stderr)
"""

TARGET_RECORDS_PER_S = 1_000_000
TARGET_RATIO = 10.0


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


def generate_data(path: Path, size_mb: int, seed: int = 11) -> None:
    """A data partition's segment of at least ``size_mb`` MiB: 100-byte values (see the docstring)."""
    rnd = random.Random(seed)
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    producers = [(20_000 + i, rnd.randint(0, 5)) for i in range(16)]  # idempotent: (id, epoch)
    sequences = {pid: 0 for pid, _ in producers}
    target = size_mb * 1024 * 1024
    offset = 0
    ts = 1_717_000_000_000
    tmp = path.with_suffix(".tmp")
    written = 0
    with open(tmp, "wb") as fh:
        while written < target:
            n = rnd.randint(1, 200)
            with_headers = rnd.random() < 0.10
            two_headers = rnd.random() < 0.5
            recs = []
            for _ in range(n):
                ts += rnd.randint(0, 3)
                if rnd.random() < 0.05:
                    key = None
                else:
                    digits = rnd.randint(3, 11)  # "user-" + 3..11 digits: 8..16 bytes
                    key = f"user-{rnd.randrange(10 ** (digits - 1), 10 ** digits)}".encode()
                headers = []
                if with_headers:
                    headers.append(("trace-id", rnd.randbytes(16)))
                    if two_headers:
                        headers.append(("origin", b"checkout-service"))
                recs.append((key, rnd.randbytes(100), headers, ts))
            comp = rnd.choice(codecs) if rnd.random() < 0.15 else "none"
            if rnd.random() < 0.20:
                pid, epoch = rnd.choice(producers)
                seq = sequences[pid]
                sequences[pid] = (seq + n) % (1 << 31)
                data = encode_batch_v2(recs, base_offset=offset, compression=comp, producer_id=pid,
                                       producer_epoch=epoch, base_sequence=seq, partition_leader_epoch=5)
            else:
                data = encode_batch_v2(recs, base_offset=offset, compression=comp, partition_leader_epoch=5)
            fh.write(data)
            written += len(data)
            offset += n
    os.replace(tmp, path)


def cached(path: Path, make, size_mb: int) -> Path:
    if not path.exists():
        t0 = time.perf_counter()
        print(f"generating {path} ...", flush=True)
        make(path, size_mb)
        print(f"  {path.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


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


def run_to_file(cmd: list[str], out: Path, env: dict | None = None) -> tuple[float, float, str]:
    """Like run(), the child's stdout being the file ``out`` (created, truncated); returns its stderr."""
    with open(out, "wb") as fh:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, text=True, env=env)
        dt = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        raise SystemExit(f"{cmd[:4]}... failed ({p.returncode}): {p.stderr[-2000:]}")
    return dt, cpu, p.stderr


def count_jsonl_records(path: Path) -> tuple[int, int]:
    """(records, lines) of kgtool's JSON-lines output, cheaply (bytes.count over 16 MiB chunks).

    Robust to both schemas: when some line starts with '{"type":' (batch lines before their
    records, {"type":"record",...} for records), the records are the lines starting with
    '{"type":"record"'; otherwise (one object per record, no "type") every line is a record.
    """
    lines = typed = records = 0
    carry = b"\n"  # a line starts after every newline; the first one after this virtual one
    with open(path, "rb") as fh:
        while chunk := fh.read(16 << 20):
            buf = carry + chunk
            cut = buf.rfind(b"\n")
            whole = buf[:cut]  # each newline in it starts a complete line
            lines += whole.count(b"\n")
            typed += whole.count(b'\n{"type":')
            records += whole.count(b'\n{"type":"record"')
            carry = buf[cut:]
    if carry != b"\n":  # a last line without its newline
        lines += 1
        typed += carry.startswith(b'\n{"type":')
        records += carry.startswith(b'\n{"type":"record"')
    return (records if typed else lines), lines


def count_jsonl_records_exact(path: Path) -> int:
    """The slow check (every line parsed): objects with "type" == "record", or without "type"."""
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                t = json.loads(line).get("type")
                n += t is None or t == "record"
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="summary,print",
                    help="comma-separated cases to run: summary (decode-batch --summary), print "
                    "(decode-batch --format jsonl to a file); default both")
    ap.add_argument("--size-mb", type=int, default=400,
                    help="summary case: segment size (>= 100; at 110 MB the CLI start-up, ~0.35 s "
                    "of CPU for typer/pydantic/rich/numpy imports, is most of kgtool's time)")
    ap.add_argument("--print-mb", type=int, default=64,
                    help="print case: size in MiB of each of its two segments (default 64)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-pure", action="store_true", help="do not time the pure-Python codec")
    args = ap.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - {"summary", "print"})
    if unknown or not cases:
        ap.error(f"--cases: unknown {', '.join(unknown) or '(none given)'}; choose from summary, print")
    DATA.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if "summary" in cases:
        bench_summary(args, env)
    if "print" in cases:
        if "summary" in cases:
            print()
        bench_print(args, env)


def bench_summary(args, env: dict) -> None:
    seg = cached(DATA / f"__consumer_offsets-bench-{args.size_mb}mb.log", generate, args.size_mb)
    size = seg.stat().st_size
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


def bench_print(args, env: dict) -> None:
    from kgtool.codec import speedups_enabled

    segments = [
        ("__consumer_offsets", ["--decode", "offsets"],
         cached(DATA / f"__consumer_offsets-bench-{args.print_mb}mb.log", generate, args.print_mb)),
        ("data partition", [],
         cached(DATA / f"data-partition-bench-{args.print_mb}mb.log", generate_data, args.print_mb)),
    ]
    print(f"machine load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(wall-clock numbers suffer under load; CPU seconds much less)")
    fd, name = tempfile.mkstemp(prefix="bench-jsonl-", suffix=".out", dir=DATA)
    os.close(fd)
    out = Path(name)
    try:
        for label, decode, seg in segments:
            bench_print_segment(args, env, label, decode, seg, out, speedups_enabled())
    finally:
        out.unlink(missing_ok=True)


def bench_print_segment(args, env: dict, label: str, decode: list[str], seg: Path, out: Path,
                        speedups: bool) -> None:
    """One segment of the print case: kgtool (and pure) and the kafka-python loop, to ``out``."""

    def best(cmd, env, count):
        """Best wall and CPU of --repeat runs, the records counted, the output's bytes."""
        walls, cpus, seen = [], [], set()
        size = 0
        for _ in range(args.repeat):
            wall, cpu, err = run_to_file(cmd, out, env)
            size = out.stat().st_size
            seen.add(count(err))
            out.unlink()
            walls.append(wall)
            cpus.append(cpu)
        if len(seen) != 1:
            raise SystemExit(f"{label}: record counts differ between runs of {cmd[:5]}...: {sorted(seen)}")
        return min(walls), min(cpus), seen.pop(), size

    def kgtool_records(_stderr: str) -> int:
        records, lines = count_jsonl_records(out)
        if records != kp_records:  # the fast count disagrees: parse every line before failing
            exact = count_jsonl_records_exact(out)
            if exact == kp_records:
                print(f"  (note: {label}: counted {exact} records by parsing every line; the fast "
                      f"count by line prefix gave {records} of {lines} lines)", flush=True)
            return exact
        return records

    # The peer first: its count is the one kgtool's output is checked against.
    kp_cmd = [sys.executable, "-c", KAFKA_PYTHON_JSONL, str(seg)]
    kp_wall, kp_cpu, kp_records, kp_size = best(kp_cmd, None, lambda err: int(err.strip().splitlines()[-1]))
    kg_cmd = [sys.executable, "-m", "kgtool", "decode-batch", "--format", "jsonl", *decode, str(seg)]
    kg_wall, kg_cpu, kg_records, kg_size = best(kg_cmd, env, kgtool_records)
    if kg_records != kp_records:
        raise SystemExit(f"{label}: record counts differ: kgtool {kg_records}, kafka-python loop {kp_records}")
    flags = " ".join(decode)
    rows = [(f"kgtool decode-batch --format jsonl {flags}".rstrip()
             + (" (C extension)" if speedups else " (no C extension built!)"), kg_wall, kg_cpu, kg_size)]
    if not args.skip_pure:
        pure_wall, pure_cpu, pure_records, pure_size = best(kg_cmd, dict(env, KGTOOL_PURE_PYTHON="1"),
                                                            kgtool_records)
        if pure_records != kp_records:
            raise SystemExit(f"{label}: record counts differ: kgtool (pure) {pure_records}, "
                             f"kafka-python loop {kp_records}")
        rows.append(("  the same, KGTOOL_PURE_PYTHON=1", pure_wall, pure_cpu, pure_size))
    rows.append(("kafka-python loop: MemoryRecords, json.dumps per record", kp_wall, kp_cpu, kp_size))
    records = kp_records
    print(f"segment ({label}): {seg} ({seg.stat().st_size / 1e6:.1f} MB, {records} records), "
          "stdout to a file")
    print(f"{'printer (whole process, best of %d)' % args.repeat:66s} {'records':>9s} {'wall s':>7s} "
          f"{'CPU s':>7s} {'records/s (wall)':>17s} {'output MB':>10s} {'B/record':>9s}")
    for name, wall, cpu, size in rows:
        print(f"{name:66s} {records:9d} {wall:7.2f} {cpu:7.2f} {records / wall:17,.0f} "
              f"{size / 1e6:10.1f} {size / records:9.1f}")
    ratio = kp_wall / kg_wall
    rate = records / kg_wall
    print(f"ratio kgtool / kafka-python loop (jsonl, {label}): {ratio:.1f}x wall-clock")
    ok_rate, ok_ratio = rate >= TARGET_RECORDS_PER_S, ratio >= TARGET_RATIO
    print(f"targets (jsonl, {label}): {'met' if ok_rate and ok_ratio else 'NOT met'} "
          f"(kgtool >= {TARGET_RECORDS_PER_S:,} records/s wall: {'yes' if ok_rate else 'no'}, "
          f"{rate:,.0f}; >= {TARGET_RATIO:.0f}x the loop: {'yes' if ok_ratio else 'no'}, {ratio:.1f}x)")

if __name__ == "__main__":
    main()
