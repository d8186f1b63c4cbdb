"""Speed of ``kgtool.offsets.columns.decode_commit_chunks`` (C path) against the work of
``kgtool decode-batch --summary --decode offsets`` on the same segment, in one process.

The segment is one partition of ``bench_spark_audit.generate_partition`` (default 64 MiB:
offset commits v3, 1 batch in 8 gzip and 1 in 16 lz4, a rebalance (GroupMetadata with 6
consumer members) every 20 rounds, transactional commits with markers). Times are CPU seconds
of this process (``time.process_time``: the machine may be shared), best and median of
``--repeat`` runs; the summary is ``summarize_segment`` with the arguments the CLI passes.
Also measured: ``transaction_markers`` (C), and on the first 8 MiB the pure-Python path and the
reference ``entries_from_bytes``.

    PYTHONPATH=. python benchmarks/bench_columns.py [--size-mb 64] [--dir /tmp/kgtool-columns]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=64)
    ap.add_argument("--dir", default="/tmp/kgtool-columns")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from bench_spark_audit import generate_partition

    from kgtool.codec.batch import speedups_enabled
    from kgtool.codec.segment import open_segment
    from kgtool.codec.summary import summarize_segment
    from kgtool.coordinator.records import decode_offsets_record
    from kgtool.offsets.columns import KeyTable, decode_commit_chunks, transaction_markers
    from kgtool.offsets.decode import entries_from_bytes

    if not speedups_enabled():
        sys.exit("the C extension is not in use: build it (python setup.py build_ext --inplace)")
    part = os.path.join(args.dir, f"__consumer_offsets-0-{args.size_mb}mb")
    path = os.path.join(part, f"{0:020d}.log")
    if not os.path.exists(path):
        generate_partition(part, 0, args.size_mb << 20, 1 << 40)
    data, size = open_segment(path)
    clock = time.process_time
    rows = []

    def run(name: str, f, reps: int) -> tuple[float, float]:
        times = []
        for _ in range(reps):
            t = clock()
            n = f()
            times.append(clock() - t)
        times.sort()
        rows.append((name, n, times[0], times[len(times) // 2]))
        return times[0], times[len(times) // 2]

    def summary() -> int:
        s = summarize_segment(data, source=path, chain_from=0, payload=decode_offsets_record,
                              fast_offsets=("legacy_offset_commit", "offset_commit"))
        return s.records

    def chunks(buf, pure: bool | None = None) -> int:
        return sum(c.n + len(c.rare) for c in decode_commit_chunks(buf, source=path, log_partition=0,
                                                                    keys=KeyTable(), pure=pure))

    s = run("summary (decode-batch --summary --decode offsets)", summary, args.repeat)
    c = run("decode_commit_chunks, C", lambda: chunks(data), args.repeat)
    run("transaction_markers, C", lambda: len(transaction_markers(data, source=path, log_partition=0)),
        args.repeat)
    head = data[: 8 << 20]
    run("decode_commit_chunks, C (first 8 MiB)", lambda: chunks(head), args.repeat)
    run("decode_commit_chunks, pure (first 8 MiB)", lambda: chunks(head, pure=True), 1)
    run("entries_from_bytes (first 8 MiB)",
        lambda: sum(1 for _ in entries_from_bytes(head, source=path, log_partition=0)), 1)
    print(f"{path}: {size} bytes")
    for name, n, best, median in rows:
        print(f"{name:52s} {n:>9} records  best {best:7.3f} s  median {median:7.3f} s  "
              f"{n / best / 1e6:6.2f} M records/s")
    print(f"decode_commit_chunks / summary speed: best {s[0] / c[0]:.2f}x, median {s[1] / c[1]:.2f}x")


if __name__ == "__main__":
    main()
