"""Benchmark: `kgtool coordinator-of` on one million group ids, whole process.

Generates a file of 1,000,000 ids (ASCII service names, Unicode, emoji), then times, in the same
run and on the same file:

- kgtool (`python -m kgtool coordinator-of -f ids --format json` and `--histogram`),
- a Java peer: the broker's own formula (`Utils.abs(id.hashCode()) % 50`) in a small Java
  program compiled with javac, reading the same file and printing the same JSON,
- a naive pure-Python peer (per-character loop), for scale.

Prints wall-clock seconds (best of --repeat) and kgtool's ratio against each peer.

    python benchmarks/bench_coordinator_of.py [--ids 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

JAVA_PEER = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;

public class CoordinatorOf {
    // org.apache.kafka.common.utils.Utils.abs
    static int abs(int n) { return (n == Integer.MIN_VALUE) ? 0 : Math.abs(n); }

    static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }

    public static void main(String[] args) throws IOException {
        int n = Integer.parseInt(args[1]);
        StringBuilder sb = new StringBuilder(1 << 24);
        sb.append("[\n");
        boolean first = true;
        try (BufferedReader r = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isEmpty()) continue;
                if (!first) sb.append(",\n");
                first = false;
                sb.append("  {\"group_id\": ");
                quote(sb, line);
                sb.append(", \"partition\": ").append(abs(line.hashCode()) % n).append('}');
            }
        }
        sb.append("\n]\n");
        Writer w = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        w.write(sb.toString());
        w.flush();
    }
}
"""

NAIVE_PEER = r"""
import json, sys
def h(s):
    x = 0
    b = s.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(b), 2):
        x = (31 * x + (b[i] | b[i + 1] << 8)) & 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x
n = int(sys.argv[2])
out = []
with open(sys.argv[1], encoding="utf-8", newline="") as f:
    for line in f:
        line = line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line
        if line:
            v = h(line)
            out.append({"group_id": line, "partition": (0 if v == -2**31 else abs(v)) % n})
sys.stdout.write(json.dumps(out, indent=2))
"""


def make_ids(path: Path, count: int) -> None:
    rng = random.Random(42)
    words = ["orders", "payments", "billing", "search", "ledger", "fraud", "catalog", "注文", "платежи", "🚀"]
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for i in range(count):
            a, b = rng.choice(words), rng.choice(words)
            f.write(f"{a}-{b}-consumer-{i}\n")


def best_of(cmd: list[str], repeat: int, env: dict | None = None) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-naive", action="store_true", help="skip the slow pure-Python peer")
    args = ap.parse_args()

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        ids = tmpdir / "ids.txt"
        make_ids(ids, args.ids)
        print(f"{args.ids:,} ids, {ids.stat().st_size / 1e6:.1f} MB")
        kg = [sys.executable, "-m", "kgtool", "coordinator-of", "-f", str(ids), "--format", "json"]
        results = {
            "kgtool --format json": best_of(kg, args.repeat, env),
            "kgtool --histogram --format json": best_of([*kg, "--histogram"], args.repeat, env),
        }
        if shutil.which("javac") and shutil.which("java"):
            (tmpdir / "CoordinatorOf.java").write_text(JAVA_PEER)
            subprocess.run(["javac", "-d", str(tmpdir), str(tmpdir / "CoordinatorOf.java")], check=True)
            results["java peer (Utils.abs(hashCode) % 50)"] = best_of(
                ["java", "-cp", str(tmpdir), "CoordinatorOf", str(ids), "50"], args.repeat
            )
        else:
            print("javac/java not found: Java peer skipped")
        if not args.no_naive:
            (tmpdir / "naive.py").write_text(NAIVE_PEER)
            results["naive pure-Python peer"] = best_of(
                [sys.executable, str(tmpdir / "naive.py"), str(ids), "50"], 1
            )
    base = results["kgtool --format json"]
    for name, secs in results.items():
        ratio = "" if name.startswith("kgtool") else f"   kgtool is {secs / base:.2f}x faster"
        print(f"{name:42s} {secs:7.3f} s{ratio}")
    print(f"goal: 1,000,000 ids in under 2 s -> {'met' if base < 2 else 'NOT met'} ({base:.3f} s)")


if __name__ == "__main__":
    main()
