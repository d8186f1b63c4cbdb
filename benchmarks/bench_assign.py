"""Benchmark of ``kgtool assign`` as a whole process, against kafka-python and Kafka's Java figures.

Not a test. Generates two group files (JSON, the described-group shape):

- ``uniform.json``: Kafka's large-group test shape (AbstractStickyAssignorTest
  ``testLargeAssignmentAndGroupWithUniformSubscription``): 500 topics x 2,000 partitions =
  1,000,000 partitions, 2,000 consumers, every consumer subscribed to every topic;
- ``nonuniform.json``: 1,000 consumers, each subscribed to a different random half (seed 42)
  of the same 500 topics (the shape of benchmarks/assignors_inprocess.py).

Then, for each assignor, times ``python -m kgtool assign FILE --assignor NAME --format json >
out.json`` (wall time and the child's peak RSS from ``os.wait4``), and the peer, kafka-python
3.0.12's assignors (range, roundrobin, sticky, cooperative-sticky) reading the same file and
writing the same JSON (``benchmarks/_kafka_python_peer.py``), in the same run. The Java
reference figures are Kafka's Java assignors on the same file (whole process on this kind of
2-core machine, < 1 GB).
It also times kgtool's own share in-process: file -> GroupSpec, and assignment -> JSON text.

    PYTHONPATH=. python benchmarks/bench_assign.py [--workdir DIR] [--assignors range,sticky]
        [--cases uniform,nonuniform] [--timeout 600] [--peer-timeout 600] [--no-peer]
        [--topics 500 --partitions 2000 --members 2000 --nonuniform-members 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER = Path(__file__).resolve().parent / "_kafka_python_peer.py"
TIME_BIN = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None

ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky", "server-uniform", "server-range"]
PEER_ASSIGNORS = {"range", "roundrobin", "sticky", "cooperative-sticky"}
#: Kafka's Java assignors, whole process, same file, 2-core machine (seconds).
JAVA_SECONDS = {"cooperative-sticky": 3.0, "sticky": 2.8, "range": 4.0, "roundrobin": 4.5}


def write_uniform(path: Path, n_topics: int, n_partitions: int, n_members: int) -> None:
    topics = [f"topic-{i}" for i in range(n_topics)]
    doc = {
        "topics": {t: n_partitions for t in topics},
        "members": [{"id": f"consumer-{i}", "topics": topics} for i in range(n_members)],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")


def write_nonuniform(path: Path, n_topics: int, n_partitions: int, n_members: int, seed: int = 42) -> None:
    rnd = random.Random(seed)
    topics = [f"topic-{i}" for i in range(n_topics)]
    index = {t: i for i, t in enumerate(topics)}
    members = []
    for i in range(n_members):
        subs = sorted(rnd.sample(topics, n_topics // 2), key=index.__getitem__)
        members.append({"id": f"consumer-{i}", "topics": subs})
    doc = {"topics": {t: n_partitions for t in topics}, "members": members}
    path.write_text(json.dumps(doc), encoding="utf-8")


#: Address-space cap of each timed process (kgtool stays far below its goal of 1 GB).
MEMORY_CAP_BYTES = 8 * 2**30


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def run_process(argv: list[str], out_path: Path, timeout: float) -> tuple[float | None, float | None, int | None]:
    """(seconds, peak RSS in MB, exit status) of one child process; seconds None on timeout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # Peak RSS from /usr/bin/time: a child's ru_maxrss from wait4 would include this process's
    # own memory at fork time (Linux keeps the high-water mark across exec).
    rss_file = out_path.with_suffix(".rss")
    if TIME_BIN:
        argv = [TIME_BIN, "-f", "%M", "-o", str(rss_file), *argv]
    with open(out_path, "wb") as out:
        t0 = time.perf_counter()
        # Own session, so that a timeout kills /usr/bin/time *and* the process it runs; an
        # address-space cap keeps a runaway peer (kafka-python's sticky on 1M partitions grows
        # past 18 GB) from taking the machine down.
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.PIPE, env=env, start_new_session=True,
            preexec_fn=_limit_memory,
        )
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                dt = time.perf_counter() - t0
                proc.returncode = os.waitstatus_to_exitcode(status)
                if proc.returncode != 0:
                    tail = proc.stderr.read().decode(errors="replace").strip().splitlines()
                    who = "kafka-python" if str(PEER) in argv else "kgtool"
                    sys.stderr.write(f"  [{who} exit "
                                     f"{proc.returncode}: {tail[-1] if tail else ''}]\n")
                proc.stderr.close()
                rss_kb = usage.ru_maxrss
                if TIME_BIN:
                    try:
                        rss_kb = int(rss_file.read_text().split()[-1])
                    except (OSError, ValueError, IndexError):
                        pass
                return dt, rss_kb / 1024, proc.returncode
            if time.perf_counter() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.stderr.close()
                return None, None, None
            time.sleep(0.02)


def load_assignment(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)["assignment"]
    except (OSError, ValueError, KeyError):
        return None


def in_process_share(path: Path) -> tuple[float, float, float, int]:
    """kgtool's own share: (read+parse to GroupSpec, range assign, JSON text) seconds and partitions."""
    sys.path.insert(0, str(ROOT))
    from kgtool.assignors import analysis, group_input
    from kgtool.cli.assign import assignment_json
    from kgtool.inputs import read_text

    t0 = time.perf_counter()
    loaded = group_input.load_group(read_text(str(path)), str(path))
    t1 = time.perf_counter()
    assignment = analysis.run("range", loaded.group)
    t2 = time.perf_counter()
    text = assignment_json(assignment)
    t3 = time.perf_counter()
    del text
    return t1 - t0, t2 - t1, t3 - t2, sum(len(p) for p in assignment.values())


def describe_text_share(path: Path) -> tuple[float, int]:
    """Parse time of the kafka-consumer-groups.sh --members --verbose text of the same group
    (range's assignment printed the 4.x way): the other large input form."""
    from kgtool.assignors import analysis, group_input

    loaded = group_input.load_group(path.read_text(encoding="utf-8"), str(path))
    assignment = analysis.run("range", loaded.group)
    width = max(len(m) for m in assignment)
    lines = ["", f"{'GROUP':<15} {'CONSUMER-ID':<{width}} {'HOST':<15} {'CLIENT-ID':<15} {'#PARTITIONS':<15} "
             f"{'CURRENT-EPOCH':<15} CURRENT-ASSIGNMENT"]
    for m, parts in assignment.items():
        by: dict[str, list[int]] = {}
        for t, p in parts:
            by.setdefault(t, []).append(p)
        cell = ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by.items())) or "-"
        lines.append(f"{'bench':<15} {m:<{width}} {'/10.0.0.1':<15} {m[:15]:<15} {len(parts):<15} {'-':<15} {cell}")
    text = "\n".join(lines) + "\n"
    t0 = time.perf_counter()
    parsed = group_input.load_group(text, "describe.txt")
    dt = time.perf_counter() - t0
    return dt, sum(len(m.owned) for m in parsed.group.members)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--assignors", default=",".join(ASSIGNORS))
    ap.add_argument("--cases", default="uniform,nonuniform")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--peer-timeout", type=float, default=600.0)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--topics", type=int, default=500)
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--members", type=int, default=2000)
    ap.add_argument("--nonuniform-members", type=int, default=1000)
    args = ap.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kgtool-bench-assign-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cases = {}
    for case in args.cases.split(","):
        path = workdir / f"{case}-{args.topics}x{args.partitions}.json"
        if not path.exists():
            if case == "uniform":
                write_uniform(path, args.topics, args.partitions, args.members)
            else:
                write_nonuniform(path, args.topics, args.partitions, args.nonuniform_members)
        cases[case] = path
        print(f"# {case}: {path} ({path.stat().st_size / 1e6:.1f} MB)", flush=True)

    header = f"{'case':<11} {'assignor':<19} {'kgtool s':>9} {'MB':>6} {'kafka-python s':>15} {'MB':>6} {'kp/kg':>7} {'Java s':>7} {'kg/Java':>8}  same as kafka-python"
    print("\n## whole process: python -m kgtool assign FILE --assignor NAME --format json > out.json")
    print(header)
    for case, path in cases.items():
        for name in args.assignors.split(","):
            out_kg = workdir / f"out-{case}-{name}-kgtool.json"
            secs, mb, rc = run_process(
                [sys.executable, "-m", "kgtool", "assign", str(path), "--assignor", name, "--format", "json"],
                out_kg, args.timeout,
            )
            kg = "timeout" if secs is None else (f"{secs:.2f}" if rc == 0 else f"rc={rc}")
            kg_mb = "-" if mb is None else f"{mb:.0f}"
            peer_s = peer_mb = ratio = same = "-"
            if name in PEER_ASSIGNORS and not args.no_peer:
                out_kp = workdir / f"out-{case}-{name}-kafka-python.json"
                psecs, pmb, prc = run_process([sys.executable, str(PEER), str(path), name, str(out_kp)], out_kp.with_suffix(".log"), args.peer_timeout)
                if psecs is None:
                    peer_s, ratio = f">{args.peer_timeout:.0f}", (f">{args.peer_timeout / secs:.1f}" if secs else "-")
                elif prc != 0:
                    peer_s = f"rc={prc}"
                else:
                    peer_s, peer_mb = f"{psecs:.2f}", f"{pmb:.0f}"
                    if secs and rc == 0:
                        ratio = f"{psecs / secs:.2f}"
                        a, b = load_assignment(out_kg), load_assignment(out_kp)
                        if a is not None and b is not None:
                            norm = lambda d: {m: {t: sorted(p) for t, p in v.items()} for m, v in d.items()}  # noqa: E731
                            same = "yes" if norm(a) == norm(b) else "no (kafka-python is not Kafka)"
            java = JAVA_SECONDS.get(name)
            java_s = f"{java:.1f}" if java else "-"
            vs_java = f"{secs / java:.2f}" if java and secs and rc == 0 else "-"
            print(f"{case:<11} {name:<19} {kg:>9} {kg_mb:>6} {peer_s:>15} {peer_mb:>6} {ratio:>7} {java_s:>7} {vs_java:>8}  {same}",
                  flush=True)
    print("\n## kgtool's own share (in-process, uniform case when present)")
    first = cases.get("uniform") or next(iter(cases.values()))
    parse_s, assign_s, render_s, n = in_process_share(first)
    print(f"file -> GroupSpec      {parse_s:6.3f} s")
    print(f"range assign           {assign_s:6.3f} s")
    print(f"assignment -> JSON     {render_s:6.3f} s  ({n:,} partitions)")
    dt, n_desc = describe_text_share(first)
    print(f"describe text -> Group {dt:6.3f} s  ({n_desc:,} owned partitions)", flush=True)

    print("\nkp/kg > 1: kgtool faster than kafka-python; kg/Java < 1: kgtool faster than Kafka's Java (JAVA_SECONDS).")


if __name__ == "__main__":
    main()
