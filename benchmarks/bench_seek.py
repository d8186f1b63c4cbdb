"""Benchmark: seeking with a partition directory's indexes, and --verify against --summary.

Generates (once, cached under /var/tmp/kgseek, not in the repository) two partition directories
written as a broker writes them (tests.storage.writer.PartitionWriter: LogSegment.append's
index rules, segment.bytes 1 GiB, the active segment's indexes preallocated to 10 MiB): ``big-0``
(--size-mb, 1024 by default) and ``small-0`` (10 MiB). Batches are 16 KiB-ish (40 records of
400 bytes, uncompressed: a Java producer's default batch.size), timestamps rising by 1 ms a record.

Measures, each as a whole process (interpreter start-up included), best of --repeat:

- seek big / small:  decode-batch DIR --from-time T --count 1 --format jsonl, T the timestamp
  of a record at 99% of the log; goal: big <= 1.5 x small (the cost does not grow with the log);
- peer:              the same seek in a copy of big-0 without .index/.timeindex (symlinks to its
                     segments): the scan kgtool falls back to, what a seek costs without indexes;
- verify / summary:  decode-batch big-0 --verify against decode-batch big-0 --summary --format
                     json; goal: verify <= summary.

    python benchmarks/bench_seek.py [--size-mb 1024] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgtool.codec import encode_batch_v2  # noqa: E402
from kgtool.codec.primitives import crc32c  # noqa: E402
from tests.storage.writer import PartitionWriter  # noqa: E402

DATA = Path("/var/tmp/kgseek")
TS = 1_714_572_000_000
RECORDS = 40


def generate(d: Path, size: int) -> int:
    """Write the partition directory ``d`` of about ``size`` bytes; returns its record count."""
    if (d / "done").exists():
        return int((d / "done").read_text())
    template = bytearray(encode_batch_v2([(b"key-%04d" % i, bytes(400), [], i) for i in range(RECORDS)],
                                         base_offset=0, partition_leader_epoch=5, timestamp=0))
    w = PartitionWriter(str(d), segment_bytes=1 << 30)
    offset = 0
    while offset * (len(template) / RECORDS) < size:
        ts = TS + offset
        # Base offset is outside the CRC; base and max timestamps inside it (DefaultRecordBatch).
        struct.pack_into(">q", template, 0, offset)
        struct.pack_into(">qq", template, 27, ts, ts + RECORDS - 1)
        struct.pack_into(">I", template, 17, crc32c(memoryview(template)[21:]))
        w.append(bytes(template))
        offset += RECORDS
    w.close(preallocate=10 * 1024 * 1024)
    (d / "done").write_text(str(offset))
    return offset


def without_indexes(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(src):
        if name.endswith((".log", ".snapshot")) and not (dst / name).exists():
            os.symlink(src / name, dst / name)


def timed(args: list[str], repeat: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "kgtool", "decode-batch", *args], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        best = min(best, time.perf_counter() - t0)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.decode()[-500:]}")
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    big, small, bare = DATA / f"big{a.size_mb}-0", DATA / "small-0", DATA / f"bare{a.size_mb}-0"
    n_big = generate(big, a.size_mb << 20)
    n_small = generate(small, 10 << 20)
    without_indexes(big, bare)
    size = sum(f.stat().st_size for f in big.glob("*.log"))
    t_big, t_small = TS + n_big * 99 // 100, TS + n_small * 99 // 100
    seek_big = timed([str(big), "--from-time", str(t_big), "--count", "1", "--format", "jsonl"], a.repeat)
    seek_small = timed([str(small), "--from-time", str(t_small), "--count", "1", "--format", "jsonl"], a.repeat)
    seek_bare = timed([str(bare), "--from-time", str(t_big), "--count", "1", "--format", "jsonl"], 1)
    verify = timed([str(big), "--verify"], a.repeat)
    summary = timed([str(big), "--summary", "--format", "json"], a.repeat)
    print(f"data: {size / 2**20:.0f} MiB, {n_big:,} records in {big}; {n_small:,} records in {small}")
    print(f"seek --from-time T --count 1: {size / 2**20:.0f} MiB {seek_big:.3f} s, 10 MiB {seek_small:.3f} s: "
          f"ratio {seek_big / seek_small:.2f} (goal <= 1.5); peer, the same seek without indexes (a scan): "
          f"{seek_bare:.3f} s")
    print(f"--verify {verify:.2f} s vs --summary {summary:.2f} s on {size / 2**20:.0f} MiB: "
          f"ratio {verify / summary:.2f} (goal <= 1.0)")


if __name__ == "__main__":
    main()
