"""Benchmark: `kgtool partition-of --histogram` on ten million keys, whole process, against
kafka-python's murmur2 (its DefaultPartitioner's hash) on the same keys in the same run.

Two key files of --keys lines each (default 10,000,000), generated once under benchmarks/.data/:

- ``order-<n>`` (``order-0`` ... ``order-9999999``), read as string keys;
- random 16-byte keys written as 32 hex digits, read with ``--key-format hex`` (the 16 bytes are
  hashed, as a producer with a ByteArraySerializer would).

For each file it times ``python -m kgtool partition-of -p 12 --histogram --format json -f FILE``
(best of --repeat, wall clock, peak RSS) and a kafka-python peer process that reads the same
file, serializes each key the same way, and computes ``(murmur2(key) & 0x7fffffff) % 12`` into
the same histogram with ``kafka.partitioner.default.murmur2``. It prints keys/s for both and
the ratio. Targets: at least 3M keys/s, at least 20x kafka-python.

    python benchmarks/bench_partition_of.py [--keys 10000000] [--repeat 3] [--peer-keys N]

``--peer-keys`` runs kafka-python on the first N keys only (its rate is per key; the default is
all of them, which takes a minute or two per file).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / ".data"

PEER = r"""
import sys
from kafka.partitioner.default import murmur2
path, fmt, limit, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
counts = [0] * n
done = 0
with open(path, "rb") as fh:
    for line in fh:
        if done == limit:
            break
        key = line.rstrip(b"\n")
        if fmt == "hex":
            key = bytes.fromhex(key.decode("ascii"))
        counts[(murmur2(key) & 0x7FFFFFFF) % n] += 1
        done += 1
print(done, sum(counts))
"""


def generate(keys: int) -> dict[str, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    orders = DATA / f"orders-{keys}.txt"
    hexes = DATA / f"hex16-{keys}.txt"
    if not orders.exists():
        with open(orders, "w", encoding="ascii") as fh:
            step = 1_000_000
            for lo in range(0, keys, step):
                fh.write("".join(f"order-{i}\n" for i in range(lo, min(keys, lo + step))))
    if not hexes.exists():
        rng = random.Random(14)
        with open(hexes, "w", encoding="ascii") as fh:
            step = 1_000_000
            for lo in range(0, keys, step):
                raw = rng.randbytes(16 * min(step, keys - lo)).hex()
                fh.write("".join(raw[i : i + 32] + "\n" for i in range(0, len(raw), 32)))
    return {"string": orders, "hex": hexes}


_TIME = shutil.which("time") if os.path.exists("/usr/bin/time") else None


def peak_rss_of(cmd: list[str], env: dict[str, str]) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS (bytes) and stdout of one process.

    The RSS comes from GNU time when installed: a child's ru_maxrss as os.wait4 reports it keeps
    the high-water mark of the process it was forked from (this benchmark), not its own."""
    start = time.perf_counter()
    if _TIME is not None:
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, env=env)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}")
        rss = int(proc.stderr.decode().strip().splitlines()[-1]) * 1024
        return wall, rss, proc.stdout
    proc2 = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc2.stdout.read() if proc2.stdout else b""
    _, status, usage = os.wait4(proc2.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_maxrss * 1024, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer-keys", type=int, default=None, help="kafka-python on the first N keys only")
    ap.add_argument("--partitions", type=int, default=12)
    args = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    files = generate(args.keys)
    probe = subprocess.run(
        [sys.executable, "-c", "import kafka; from kgtool.partitioner.keys import speedups_enabled as s; "
         "print(kafka.__version__, 'on' if s() else 'OFF (pure Python)')"],
        capture_output=True, text=True, env=env,
    )
    if probe.returncode != 0:
        raise SystemExit("kafka-python is not installed: pip install -e '.[bench]'")
    kp_version, compiled = probe.stdout.split(maxsplit=1)
    print(f"kgtool partition-of benchmark: {args.keys:,} keys per file, {args.partitions} partitions, "
          f"compiled scanner {compiled.strip()}, kafka-python {kp_version}")
    for fmt, path in files.items():
        shape = "order-<n>" if fmt == "string" else "random 16-byte hex"
        size = path.stat().st_size
        cmd = [sys.executable, "-m", "kgtool", "partition-of", "-p", str(args.partitions), "--histogram",
               "--format", "json", "--key-format", fmt, "-f", str(path)]
        runs = [peak_rss_of(cmd, env) for _ in range(args.repeat)]
        doc = json.loads(runs[0][2])
        assert doc["total"] == args.keys, doc["total"]
        best = min(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        rate = args.keys / best
        limit = args.peer_keys or args.keys
        pwall, prss, pout = peak_rss_of(
            [sys.executable, "-c", PEER, str(path), fmt, str(limit), str(args.partitions)], env
        )
        done = int(pout.split()[0])
        prate = done / pwall
        print(f"\n{shape} ({size / 1e6:.1f} MB, --key-format {fmt}):")
        print(f"  kgtool partition-of --histogram: {rate / 1e6:.2f}M keys/s  (best of {args.repeat}: "
              f"{best:.2f} s wall; runs {', '.join(f'{r[0]:.2f}' for r in runs)} s; peak RSS {rss / 2**20:.0f} MB)")
        print(f"  kafka-python murmur2 peer:       {prate / 1e6:.3f}M keys/s  ({done:,} keys in {pwall:.1f} s; "
              f"peak RSS {prss / 2**20:.0f} MB)")
        print(f"  ratio: {rate / prate:.1f}x kafka-python   (targets: >= 3M keys/s, >= 20x)")


if __name__ == "__main__":
    main()
