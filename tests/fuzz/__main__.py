"""The fuzz campaign: ``python -m tests.fuzz [--target T] [--n N] [--seed S] [--out DIR]``.

Input ``i`` of a target is made from ``random.Random(f"{seed}:{target}:{i}")`` (one of the
target's seeds, mutated), so ``--seed S --target T --only I`` replays it. Before each input is
run it is written to ``DIR/current-<target><suffix>``: if the process dies (a crash, the memory
limit, a kill) that file is the reproducer. A broken contract writes
``DIR/<target>-<seed>-<i><suffix>`` and a ``.txt`` with the reason next to it.

Limits: ``--memory`` MiB of address space for the whole campaign (default 2048: any input
must run in bounded memory; no limit under AddressSanitizer) and ``--timeout`` seconds per input (default 20: every
input is small, so a slower one is a quadratic path or a hang).

Exit status 0 when every input kept its contract, 1 otherwise; a JSON line per target on stdout.
``KGTOOL_FUZZ_N`` sets the default ``--n`` (200); ``KGTOOL_FUZZ_SEED`` the default ``--seed`` (1).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import sys
import time
import traceback


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise Hang()


def run_target(name: str, n: int, seed: int, out: str, timeout: float, only: int | None) -> dict:
    from tests.fuzz.targets import TARGETS

    t = TARGETS[name]
    seeds = t.seeds()
    failures = []
    start = time.perf_counter()
    slowest = (0.0, -1)
    current = os.path.join(out, f"current-{name}{t.suffix}")
    indices = [only] if only is not None else range(n)
    for i in indices:
        rng = random.Random(f"{seed}:{name}:{i}")
        data = t.mutate(rng, rng.choice(seeds), seeds)
        with open(current, "wb") as fh:
            fh.write(data)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        t0 = time.perf_counter()
        reason = None
        try:
            t.check(data)
        except Hang:
            reason = f"hang: over {timeout:g} s on {len(data)} bytes"
        except AssertionError as exc:
            reason = f"contract: {exc}"
        except MemoryError:
            reason = "memory: MemoryError under the address-space limit"
        except Exception as exc:  # noqa: BLE001 - any other exception is a finding
            reason = f"exception: {type(exc).__name__}: {exc}\n{traceback.format_exc()}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t0
        slowest = max(slowest, (dt, i))
        if reason is not None:
            path = os.path.join(out, f"{name}-{seed}-{i}{t.suffix}")
            with open(path, "wb") as fh:
                fh.write(data)
            with open(path + ".txt", "w") as fh:
                fh.write(reason + "\n")
            failures.append({"index": i, "file": path, "reason": reason.splitlines()[0][:500]})
    os.remove(current)
    return {"target": name, "inputs": len(indices), "seed": seed, "failures": failures,
            "seconds": round(time.perf_counter() - start, 2), "slowest": {"index": slowest[1], "seconds": round(slowest[0], 3)}}


def _asan_loaded() -> bool:
    """Whether AddressSanitizer's runtime is in this process (the sanitizer build, .ci/sanitize)."""
    try:
        with open("/proc/self/maps") as fh:
            return any("libasan" in line or "libclang_rt.asan" in line for line in fh)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    from tests.fuzz.targets import TARGETS

    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", action="append", choices=sorted(TARGETS), help="repeatable; default: all")
    ap.add_argument("--n", type=int, default=int(os.environ.get("KGTOOL_FUZZ_N", "200")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("KGTOOL_FUZZ_SEED", "1")))
    ap.add_argument("--only", type=int, help="run input number ONLY (replay a reproducer)")
    ap.add_argument("--out", default="fuzz-failures")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--memory", type=int, default=2048,
                    help="MiB of address space (0: no limit; none under AddressSanitizer, whose shadow memory "
                         "alone reserves terabytes of it)")
    a = ap.parse_args(argv)
    if _asan_loaded():
        a.memory = 0
    os.makedirs(a.out, exist_ok=True)
    if a.memory:
        resource.setrlimit(resource.RLIMIT_AS, (a.memory << 20, resource.getrlimit(resource.RLIMIT_AS)[1]))
    signal.signal(signal.SIGALRM, _alarm)
    bad = 0
    for name in a.target or sorted(TARGETS):
        report = run_target(name, a.n, a.seed, a.out, a.timeout, a.only)
        bad += len(report["failures"])
        print(json.dumps(report), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
