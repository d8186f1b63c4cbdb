"""Benchmark: which library decompresses Kafka's lz4 and zstd batches for kgtool.

kgtool needs cramjam (snappy, and the fallback for everything it covers); the question is
whether ``lz4`` (python-lz4) and ``zstandard`` earn their place beside it. Each candidate runs
the calls kgtool's reader makes (``kgtool.codec.compression``), in a process of its own
(interpreter and import included), on the same payloads, best of --repeat:

- lz4: batches compressed as KafkaLZ4BlockOutputStream writes them (LZ4 frame, 64 KiB
  independent blocks, no content checksum); the reader parses the frame itself (so that the
  magic-0 broken header checksum, KAFKA-3160, is read as Kafka reads it) and decompresses
  each block: ``lz4.block.decompress(block, uncompressed_size=65536)`` against
  ``cramjam.lz4.decompress_block_into(block, buffer)`` (``decompress_block(block,
  output_len=65536)`` returns 65,536 bytes, zero-padded: a Kafka block does not store its size).
- zstd: frames as zstd-jni's ZstdOutputStream writes them (no content size in the header);
  ``zstandard`` decompressobj fed in pieces (kgtool's way: a decompression bomb stops at the
  cap, memory bounded) against ``cramjam.zstd.decompress`` (one call, no cap) and
  ``cramjam.zstd.decompress_into`` a buffer of the cap's size (bounded, but the buffer is
  allocated per batch).
- bomb: one zstd frame of 1 GiB of zeros (32 KiB compressed) decompressed under kgtool's
  256 MiB cap: peak RSS of each way.

Payloads: JSON-like records (keys, ids, timestamps), batches of 16 KiB, 256 KiB and 1 MiB
uncompressed. Prints MB/s of uncompressed output and the ratio of each candidate to the
library kgtool uses.

    python benchmarks/bench_codecs.py [--total-mb 256] [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETUP = r"""
import random, struct, sys, time, resource
BATCH, TOTAL = int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
def record(i):
    return (b'{"group":"orders-service-%d","topic":"orders","partition":%d,"offset":%d,'
            b'"leader_epoch":%d,"metadata":"","commit_timestamp":%d}' % (
                rng.randrange(50), rng.randrange(64), rng.randrange(10**9), rng.randrange(40),
                1717171719000 + i))
payload = b""
i = 0
while len(payload) < BATCH:
    payload += record(i)
    i += 1
payload = payload[:BATCH]
count = max(1, TOTAL // BATCH)
"""

# Kafka's lz4 frame (KafkaLZ4BlockOutputStream: 64 KiB independent blocks, no checksums) of the
# payload, split into its blocks: what both lz4 readers decompress.
LZ4_SETUP = SETUP + r"""
import lz4.frame
frame = lz4.frame.compress(payload, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                           content_checksum=False, store_size=False)
def blocks(data):
    pos, out = 7, []
    while True:
        (size,) = struct.unpack_from("<I", data, pos); pos += 4
        if size == 0: return out
        raw = size & 0x80000000; size &= 0x7FFFFFFF
        out.append((raw, data[pos:pos + size])); pos += size
bl = blocks(frame)
"""

CASES = {
    "lz4/python-lz4": LZ4_SETUP + r"""
import lz4.block
t = time.perf_counter()
for _ in range(count):
    parts = [b if raw else lz4.block.decompress(b, uncompressed_size=65536) for raw, b in bl]
    out = b"".join(parts)
dt = time.perf_counter() - t
assert out == payload
""",
    "lz4/cramjam": LZ4_SETUP + r"""
import cramjam
# decompress_block(b, output_len=65536) would return 65,536 bytes, zero-padded: a Kafka lz4
# block does not store its size, so the block goes into a buffer that reports what it wrote.
dec = cramjam.lz4.decompress_block_into
buf = bytearray(65536)
t = time.perf_counter()
for _ in range(count):
    parts = []
    for raw, b in bl:
        if raw:
            parts.append(b)
        else:
            n = dec(b, buf)
            parts.append(bytes(buf[:n]))
    out = b"".join(parts)
dt = time.perf_counter() - t
assert out == payload
""",
    "zstd/zstandard": SETUP + r"""
import zstandard
c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
frame = c.compress(payload) + c.flush()
d = zstandard.ZstdDecompressor()
t = time.perf_counter()
for _ in range(count):
    o = d.decompressobj()
    mv = memoryview(frame); pos = 0; piece = len(frame); parts = []
    while not o.eof:
        buf = mv[pos:pos + piece]; pos += len(buf); piece *= 2
        parts.append(o.decompress(buf))
    out = b"".join(parts)
dt = time.perf_counter() - t
assert out == payload
""",
    "zstd/cramjam": SETUP + r"""
import zstandard, cramjam
c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
frame = c.compress(payload) + c.flush()
t = time.perf_counter()
for _ in range(count):
    out = bytes(cramjam.zstd.decompress(frame))
dt = time.perf_counter() - t
assert out == payload
""",
    "zstd/cramjam-into": SETUP + r"""
import zstandard, cramjam
c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
frame = c.compress(payload) + c.flush()
CAP = 256 * 1024 * 1024
count = min(count, 32)  # each batch allocates (and zero-fills) a buffer of the cap: slow
TOTAL = count * BATCH
t = time.perf_counter()
for _ in range(count):
    buf = bytearray(CAP + 1)
    n = cramjam.zstd.decompress_into(frame, buf)
    out = bytes(memoryview(buf)[:n])
dt = time.perf_counter() - t
assert out == payload
""",
}

BOMB = r"""
import sys, resource, zstandard
way = sys.argv[1]
c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
frame = b"".join(c.compress(bytes(64 << 20)) for _ in range(16)) + c.flush()  # 1 GiB of zeros
CAP = 256 * 1024 * 1024
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = "inflated"
if way == "zstandard":
    sys.path.insert(0, sys.argv[2])
    from kgtool.codec.compression import _unzstd, CompressionFailure
    try:
        _unzstd(frame, CAP)
    except Exception as exc:
        result = type(exc).__name__
elif way == "cramjam":
    import cramjam
    try:
        out = cramjam.zstd.decompress(frame)
        result = f"inflated {len(out) >> 20} MiB"
    except Exception as exc:
        result = type(exc).__name__
else:
    import cramjam
    try:
        cramjam.zstd.decompress_into(frame, bytearray(CAP + 1))
    except Exception as exc:
        result = type(exc).__name__
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(frame), result, (peak - before) // 1024, peak // 1024)
"""


def run_case(code: str, batch: int, total: int) -> float:
    """MB/s of output of one case, in a process of its own."""
    p = subprocess.run([sys.executable, "-c", code + "\nprint(TOTAL, dt)\n", "x", str(batch), str(total)],
                       capture_output=True, text=True, check=True)
    done, dt = p.stdout.split()[-2:]
    return int(done) / float(dt) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--total-mb", type=int, default=256, help="uncompressed MB decompressed per case")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    total = args.total_mb << 20
    results: dict[str, dict[int, float]] = {}
    for batch in (16 << 10, 256 << 10, 1 << 20):
        for name, code in CASES.items():
            results.setdefault(name, {})[batch] = max(run_case(code, batch, total) for _ in range(args.repeat))
            print(f"  {name} {batch >> 10} KiB: {results[name][batch]:.0f} MB/s", file=sys.stderr, flush=True)
    print(f"decompression, MB/s of output ({args.total_mb} MB per case, best of {args.repeat}):")
    print(f"{'':22}" + "".join(f"{b >> 10:>10} KiB" for b in (16 << 10, 256 << 10, 1 << 20)))
    for name, row in results.items():
        base = results["lz4/python-lz4" if name.startswith("lz4") else "zstd/zstandard"]
        cells = "".join(f"{v:9.0f} ({v / base[b]:.2f}x)" for b, v in row.items())
        print(f"{name:22}{cells}")
    print("\nzstd bomb (1 GiB of zeros in one frame) under the 256 MiB cap: frame bytes, outcome, RSS growth MB, peak MB")
    for way in ("zstandard", "cramjam", "cramjam-into"):
        p = subprocess.run([sys.executable, "-c", BOMB, way, str(ROOT)], capture_output=True, text=True)
        print(f"  {way:14} {p.stdout.strip() or p.stderr.strip()[-200:]}")


if __name__ == "__main__":
    main()
