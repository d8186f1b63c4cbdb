"""What the campaign fuzzes, and the contract each input must keep.

Each target has seeds (valid inputs made by the project's encoders and the fixtures), a
mutator, and a check that raises AssertionError on a broken contract:

- ``segment``: the record-batch scanner and ``decode-batch --summary``: only batches and named
  problems; batches and problems cover the input exactly; the C and Python paths agree on every
  count and message, payload decoding (``--decode offsets``) included.
- ``audit-decoder``: ``spark-audit``'s columnar decoder: C == Python == the entry decoder.
- ``offsets-payload``: ``__consumer_offsets`` keys and values (one record per batch), through both
  paths of the summary decoder.
- ``seek``: the data-segment walk (``_seek.h`` seek_sweep, through
  ``kgtool.lag.list_offsets.PartitionLog``): a one-segment partition (its ``.log``,
  ``.index`` and ``.timeindex`` framed in one input, and again with every v2 batch's CRC made
  right, so that mutated records reach the walk's record loop): ``ends_at`` / ``stamps_at`` (the
  walk, declining to Python) equal ``end_at`` / ``timestamp_at`` one question at a time, the same
  notes, the same exception; and the walk called with hostile starts and index entries answers
  or declines, never reads outside the segment.
- ``lag-kernel``: the lag kernel (``_lag.h``): the input's bytes drawn as numbers into (a)
  sequences of commits and owners over a log for ``partition_lag`` and ``partition_runs``, C
  against the pure twin; (b) commit chunks for ``LagCollector`` (lag_pick, lag_pick_steps,
  lag_unsteps, lag_scatter, lag_steps16), compiled against NumPy; (c) members rows
  (lag_members, lag_classic through ``owner_changes``), compiled against NumPy; (d) hostile
  arrays straight into every kernel function: a result (equal to the twin's where there is one)
  or a ValueError, nothing else.
- ``group-description``: ``kgtool assign FILE``; ``topic-description``: ``kgtool coordinator-of
  --topic-description FILE``; ``id-list``: ``kgtool coordinator-of --file FILE``; ``key-list``: ``kgtool partition-of --file
  FILE`` in every key format: exit 0, 1 or 2,
  never an internal error; a failure is one line on stderr.

Memory and time are bounded by the runner (``python -m tests.fuzz``): an address-space limit for
the whole campaign and an alarm per input.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.fuzz.mutate import mutate_bytes, mutate_text
from tests.twins import have_compiled

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
CAP = 1 << 20  # decompressed bytes per batch in the in-process checks


@dataclass
class Target:
    name: str
    seeds: Callable[[], list[bytes]]
    mutate: Callable[[random.Random, bytes, list[bytes]], bytes]
    check: Callable[[bytes], None]
    suffix: str = ".bin"


# ---- segments ---------------------------------------------------------------------------------
@cache
def offsets_logs() -> list[bytes]:
    """The shipped sample's ``__consumer_offsets`` partitions, as the project's writer makes them."""
    from kgtool.offsets.samples import sample_scripts
    from kgtool.offsets.writer import iter_batches

    return [b"".join(iter_batches(s)) for s in sample_scripts()]


@cache
def segment_seeds() -> list[bytes]:
    from kgtool.codec.batch import encode_batch_v2
    from kgtool.codec.legacy import encode_message_set
    from tests.codec.test_segment import mixed_segment

    seeds = [p.read_bytes() for p in sorted((FIXTURES / "batches").glob("*.log"))]
    seeds += [mixed_segment(8, seed=s) for s in range(3)]
    seeds += offsets_logs()
    # amplification shapes, small: many empty records, many inner messages, many gzip members
    seeds.append(encode_batch_v2([(None, None, [], 0)] * 3000, compression="gzip"))
    seeds.append(encode_message_set([(None, b"", [], 0)] * 2000, magic=1, compression="gzip"))
    import gzip

    many = encode_batch_v2([(b"k", b"v", [], 0)] * 3, compression="gzip")
    seeds.append(many + gzip.compress(b"") * 50)
    return [s for s in seeds if s]


def _offsets_decoder():
    from kgtool.coordinator.payloads import DecodeMode, payload_decoder

    return payload_decoder(DecodeMode.offsets)


def check_segment(data: bytes) -> None:
    from kgtool.codec import RecordBatch, ScanProblem, scan_segment
    from kgtool.codec.summary import summarize_segment

    items = list(scan_segment(data, source="fuzz", max_decompressed_size=CAP))
    pos = 0
    for it in items:
        assert isinstance(it, (RecordBatch, ScanProblem)), type(it)
        assert it.position == pos, (it, pos)
        pos += it.size_in_bytes if isinstance(it, RecordBatch) else it.length
    assert pos == len(data) or not items, (pos, len(data))
    for it in items:  # records stream on demand; decoding them raises only kgtool errors
        if isinstance(it, RecordBatch):
            _drain_records(it)
    payload, fast = _offsets_decoder()
    got = []
    # the C summary against the Python one (an extension that did not build fails here)
    for c in (True, False) if have_compiled("kgtool.codec._speedups") else (False,):
        s = summarize_segment(data, source="fuzz", max_decompressed_size=CAP, payload=payload, fast_offsets=fast,
                              use_speedups=c)
        j = s.to_json()
        b = j["bytes"]
        assert b["decoded"] + b["skipped"] + b["truncated"] == b["total"] == len(data), b
        got.append(j)
    assert got[0] == got[-1], _first_difference(got[0], got[-1])


def _drain_records(batch) -> None:
    from kgtool.errors import KgtoolError

    try:
        for _ in batch.records:
            pass
    except KgtoolError:
        pass


def _first_difference(a, b, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"C and Python differ at {path or '<top>'}: {str(a)[:300]!r} != {str(b)[:300]!r}"


def check_audit_decoder(data: bytes) -> None:
    from tests.offsets.test_columns import check

    check(data, max_rows=7)


# ---- __consumer_offsets payloads ----------------------------------------------------------------
@cache
def payload_seeds() -> list[bytes]:
    """key and value of each record of the sample log, as ``len(key) key value`` (4-byte length)."""
    from kgtool.codec import RecordBatch, scan_segment

    out = []
    for data in offsets_logs():
        for b in scan_segment(data):
            if isinstance(b, RecordBatch) and not b.is_control:
                for r in b.records:
                    k, v = r.key or b"", r.value or b""
                    out.append(len(k).to_bytes(4, "big") + k + v)
    return out or [b"\x00\x00\x00\x00"]


def check_payload(data: bytes) -> None:
    from kgtool.codec.batch import encode_batch_v2

    n = int.from_bytes(data[:4].ljust(4, b"\x00"), "big") % (len(data) + 1)
    key, value = data[4:4 + n], data[4 + n:]
    check_segment(encode_batch_v2([(key, value or None, [], 0), (key, value, [], 1)]))


# ---- descriptions and id lists, through the CLI --------------------------------------------------
@cache
def group_seeds() -> list[bytes]:
    seeds = []
    for p in sorted((FIXTURES / "assign").glob("*.json")):
        cases = json.loads(p.read_text())
        for case in cases[:3] if isinstance(cases, list) else []:
            inp = case.get("input") if isinstance(case, dict) else None
            if inp is not None:
                seeds.append(json.dumps(inp).encode())
    seeds.append(b"assignor: cooperative-sticky\ntopics: {t: 3, u: 2}\nmembers:\n"
                 b"  - {id: a, topics: [t, u], owned: [[t, 0]], generation: 2}\n  - {id: b, topics: [t]}\n")
    seeds.append(b"assignor: range\ntopics:\n  t: {partitions: 2, racks: [[r1, r2], [r2]]}\n"
                 b"members:\n  - {id: m1, topics: [t], rack: r1}\n  - {id: m2, instanceId: i2, topics: [t]}\n")
    return seeds


@cache
def topic_seeds() -> list[bytes]:
    lines = ["Topic: __consumer_offsets\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 6\tReplicationFactor: 3\tConfigs: "]
    lines += [f"\tTopic: __consumer_offsets\tPartition: {p}\tLeader: {p % 3}\tReplicas: 0,1,2\tIsr: 0,1,2" for p in range(6)]
    return [
        ("\n".join(lines) + "\n").encode(),
        json.dumps({str(p): p % 3 for p in range(8)}).encode(),
        b"0: 1\n1: 2\n2: 3\n",
    ]


@cache
def id_seeds() -> list[bytes]:
    return [b"g1\ng2\norders-service\n", "gr\u00fc\u00dfe\n\U0001f600\n".encode(), b"a\r\nb\r\n\n\n"]


def _cli(args: list[str], data: bytes, suffix: str) -> None:
    from typer.testing import CliRunner

    from kgtool.cli.main import app

    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "input" + suffix)
        with open(f, "wb") as fh:
            fh.write(data)
        r = CliRunner().invoke(app, [a.replace("{F}", f) for a in args])
    err = r.stderr if hasattr(r, "stderr") else ""
    assert r.exit_code in (0, 1, 2), f"exit {r.exit_code}: {err[:500]!r} {r.exception!r}"
    assert "internal error" not in err, err[:500]
    if r.exit_code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, f"{len(lines)} lines on stderr: {err[:500]!r}"
        assert len(lines[0]) <= 1000, f"a {len(lines[0])}-character error line"


def check_keys(data: bytes) -> None:
    _cli(["partition-of", "--file", "{F}", "--partitions", "12", "--compare", "--format", "json"], data, ".txt")
    for fmt in ("hex", "base64", "long", "uuid"):
        _cli(["partition-of", "--file", "{F}", "--partitions", "7", "--key-format", fmt, "--format", "jsonl"], data, ".txt")


@cache
def key_seeds() -> list[bytes]:
    return [b"order-1\norder-2\ncustomer 42\n", b"00ff10\n\nDEADbeef\n", b"a2V5\n\nAAAA\n", b"42\n-9223372036854775808\n",
            b"123e4567-e89b-12d3-a456-426614174000\n"]


def check_group(data: bytes) -> None:
    _cli(["assign", "{F}", "--format", "json"], data, ".yaml")


def check_topic(data: bytes) -> None:
    _cli(["coordinator-of", "--topic-description", "{F}", "g1", "g2", "--format", "json"], data, ".txt")


def check_ids(data: bytes) -> None:
    _cli(["coordinator-of", "--file", "{F}", "--format", "json"], data, ".txt")




# ---- the data-segment walk (_seek.h) ------------------------------------------------------------
_FRAME = ">I"  # a seek input: len(.index) .index len(.timeindex) .timeindex .log


def _seek_input(d: str) -> bytes:
    """A one-segment partition directory as a seek input."""
    def read(suffix: str) -> bytes:
        path = os.path.join(d, f"{0:020d}{suffix}")
        return open(path, "rb").read() if os.path.exists(path) else b""

    index, timeindex = read(".index"), read(".timeindex")
    return (len(index).to_bytes(4, "big") + index + len(timeindex).to_bytes(4, "big") + timeindex
            + read(".log"))


def _seek_split(data: bytes) -> tuple[bytes, bytes, bytes]:
    parts = []
    for _ in range(2):
        n = int.from_bytes(data[:4].ljust(4, b"\0"), "big") % (max(len(data) - 4, 0) + 1)
        parts.append(data[4:4 + n])
        data = data[4 + n:]
    return parts[0], parts[1], data


@cache
def seek_seeds() -> list[bytes]:
    """One-segment partitions written as a broker writes them (tests.storage.writer): the
    storage tests' busy partition, small index intervals, LogAppendTime, compressed batches,
    markers and gaps."""
    import random as _random

    from tests.storage.dirs import busy_partition, random_partition

    seeds = []
    with tempfile.TemporaryDirectory() as root:
        d = os.path.join(root, "busy-0")
        busy_partition(d, segment_bytes=1 << 30).close()
        seeds.append(_seek_input(d))
        for k, (compression, append_time, interval) in enumerate([("none", False, 300), ("none", True, 600),
                                                                   ("gzip", False, 400), ("none", False, 1)]):
            rnd = _random.Random(k)
            d = os.path.join(root, f"t-{k}")
            random_partition(d, rnd, 40, marker_every=9, max_records=4, max_value=40, compression=compression,
                             append_time=append_time, index_interval_bytes=interval)
            seeds.append(_seek_input(d))
    return seeds


def _resealed(log: bytes) -> bytes:
    """``log`` with the CRC of every v2 batch that its lengths frame made right: a mutated
    record then reaches the walk's record loop instead of its CRC check."""
    from kgtool.codec.primitives import crc32c

    out = bytearray(log)
    pos = 0
    while pos + 61 <= len(out):
        length = int.from_bytes(out[pos + 8:pos + 12], "big", signed=True)
        end = pos + 12 + length
        if length < 49 or end > len(out) or out[pos + 16] != 2:
            break
        out[pos + 17:pos + 21] = crc32c(bytes(out[pos + 21:end])).to_bytes(4, "big")
        pos = end
    return bytes(out)


def _outcome(fn, *args):
    """fn's result, or the exception it raised (by type and message): C and Python raise alike."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared, not hidden
        return ("raised", type(exc).__name__, str(exc))


def check_seek(data: bytes) -> None:
    index, timeindex, log = _seek_split(data)
    sealed = _resealed(log)
    for body in (log, sealed) if sealed != log else (log,):
        with tempfile.TemporaryDirectory() as root:
            d = os.path.join(root, "orders-0")
            os.makedirs(d)
            for suffix, content in ((".log", body), (".index", index), (".timeindex", timeindex)):
                if content or suffix == ".log":
                    with open(os.path.join(d, f"{0:020d}{suffix}"), "wb") as fh:
                        fh.write(content)
            _check_sweep(d, body)


def _check_sweep(d: str, body: bytes) -> None:
    import numpy as np

    from kgtool.codec.model import RecordBatch
    from kgtool.lag import list_offsets
    from kgtool.lag.list_offsets import PartitionLog
    from kgtool.storage.logview import batch_headers

    times, offsets = {-1, 0}, {-2, -1, 0}
    for b in batch_headers(body, source="fuzz", verify_crc=False):
        if isinstance(b, RecordBatch):
            first = b.max_timestamp if b.base_timestamp is None else b.base_timestamp
            times |= {first - 1, first, b.max_timestamp, b.max_timestamp + 1}
            offsets |= {b.base_offset - 1, b.base_offset, b.base_offset + 1, b.last_offset, b.last_offset + 1}
        if len(times) > 400:
            break
    times = {t for t in times if -(1 << 63) <= t < 1 << 63}
    offsets = {o for o in offsets if -(1 << 63) <= o < 1 << 63}
    times_a = np.array(sorted(times)[:400], np.int64)
    offs_a = np.array(sorted(offsets)[:400], np.int64)
    one, many = PartitionLog(d), PartitionLog(d)
    want_ends = _outcome(lambda: [one.end_at(int(t)) for t in times_a])
    got_ends = _outcome(lambda: many.ends_at(times_a).tolist())
    assert got_ends == want_ends, f"ends_at != end_at: {str(got_ends)[:300]} != {str(want_ends)[:300]}"
    want_stamps = _outcome(lambda: [one.timestamp_at(int(o)) for o in offs_a])

    def stamps():
        s, k = many.stamps_at(offs_a)
        return [int(x) if y else None for x, y in zip(s, k)]

    got_stamps = _outcome(stamps)
    assert got_stamps == want_stamps, f"stamps_at != timestamp_at: {str(got_stamps)[:300]} != {str(want_stamps)[:300]}"
    assert sorted(set(many.notes)) == sorted(set(one.notes)), (many.notes[:3], one.notes[:3])
    speedups = list_offsets._speedups
    if speedups is None:
        return
    # the walk itself, from anywhere: positions inside and outside the segment, index entries
    # that hold and that do not; each answer an int64 or the decline
    rng = random.Random(len(body) * 1_000_003 + sum(body[:64]))
    edges = [-1, 0, 1, 60, 61, len(body) - 61, len(body) - 1, len(body), len(body) + 12, (1 << 62), (1 << 63) - 1,
             -(1 << 63)]
    n = 64
    keys = np.sort(np.array([rng.choice(sorted(times | offsets)) for _ in range(n)], np.int64))
    starts = np.array([rng.choice(edges) if rng.random() < 0.3 else rng.randrange(0, len(body) + 1) for _ in range(n)],
                      np.int64)
    soffs = np.array([rng.choice([-1, -1, 0, rng.choice(sorted(offsets)), (1 << 63) - 1]) for _ in range(n)], np.int64)
    coffs = np.array([rng.choice([-1, rng.choice(sorted(offsets)), -(1 << 63)]) for _ in range(n)], np.int64)
    cts = np.array([rng.choice(sorted(times)) for _ in range(n)], np.int64)
    before = np.unique(np.array([rng.randrange(-5, len(body) + 5) for _ in range(rng.randrange(0, 6))], np.int64))
    for mode in (0, 1):
        got = speedups.seek_sweep(body, mode, keys, starts, soffs, coffs, cts)
        assert len(got) == 8 * n
        got2, checked = speedups.seek_sweep(body, mode, keys, starts, soffs, coffs, cts, before)
        assert got2 == got, "the positions checked before changed an answer"
        assert all(0 <= p < len(body) for p in np.frombuffer(checked, np.int64).tolist()), "a batch checked outside"


# ---- the lag kernel (_lag.h) --------------------------------------------------------------------
T0 = 1_700_000_000_000
_EDGES64 = [0, 1, -1, 2, (1 << 31) - 1, 1 << 31, (1 << 32) + 1, (1 << 62), (1 << 63) - 1, -(1 << 63), -(1 << 63) + 1]


class _Draw:
    """Numbers drawn from an input's bytes, in order (zeros once they run out): every input is
    some case, and a mutated byte changes a number, a length or a choice."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def int(self, lo: int, hi: int) -> int:
        span = hi - lo + 1
        width = max(1, ((span - 1).bit_length() + 7) // 8)
        v = int.from_bytes(self.data[self.at:self.at + width].ljust(width, b"\0"), "big")
        self.at += width
        return lo + v % span

    def choice(self, options):
        return options[self.int(0, len(options) - 1)]

    def wild(self, lo: int = -3, hi: int = 40) -> int:
        """Mostly small, now and then an int64 edge: what a hostile caller passes."""
        k = self.int(0, 15)
        return self.choice(_EDGES64) if k == 0 else self.int(-(1 << 63), (1 << 63) - 1) if k == 1 else self.int(lo, hi)

    def array(self, n: int, dtype, lo: int = -3, hi: int = 40, wild: bool = True):
        import numpy as np

        info = np.iinfo(dtype)
        vals = [self.wild(lo, hi) if wild else self.int(lo, hi) for _ in range(n)]
        return np.array([min(max(v, info.min), info.max) for v in vals], dtype)


@cache
def lag_seeds() -> list[bytes]:
    """Random bytes (any bytes are a case) with the mode byte set to each part in turn, and the
    function byte of the hostile part to each function."""
    rng = random.Random(41)
    seeds = [bytes([mode]) + rng.randbytes(size) for mode in range(3) for size in (64, 400, 2000, 6000, 6000)]
    return seeds + [bytes([3, which]) + rng.randbytes(size) for which in range(7) for size in (100, 600, 3000)]


def check_lag(data: bytes) -> None:
    from kgtool.lag import timeline as lag

    d = _Draw(data)
    mode = d.int(0, 255) % 4
    if mode and lag.kernel is not None and not have_compiled("kgtool.lag._kernel"):
        return
    (_lag_sequences, _lag_chunks, _lag_members, _lag_hostile)[mode](d)


def _lag_sequences(d: _Draw) -> None:
    """partition_lag and partition_runs: the kernel's rows, states at end and runs are the pure
    twin's (tests/lag/test_lag_kernel.py's contract, on drawn sequences)."""
    import numpy as np

    from kgtool.lag import timeline as lag
    from tests.lag.test_lag_kernel import FakeLog, _same

    n = d.int(0, 150)
    stamps, t = [], T0
    for _ in range(n):
        g = d.int(-2000, 4000)
        t += max(g, 0)
        stamps.append(t + min(g, 0))
    when, offset, bounds, ob, otimes, oids = [], [], [0], [0], [], []
    for _ in range(d.int(1, 6)):
        ts = sorted(d.int(T0 - 5000, T0 + 400_000) for _ in range(d.int(0, 16)))
        pos = 0
        for x in ts:
            move = d.choice([0, 0, 1, 5, 30, -7, None])
            if move is None:
                offset.append(lag.DELETED)
            else:
                pos = max(0, pos + move)
                offset.append(min(pos, n + 3))
            when.append(x)
        bounds.append(len(when))
        for x in sorted({d.int(T0 - 5000, T0 + 400_000) for _ in range(d.int(0, 4))}):
            otimes.append(x)
            oids.append(d.int(-1, 3))
        ob.append(len(otimes))
    step = d.choice([0, 997, 10_000, 60_000])
    until = d.choice([None, d.int(T0, T0 + 400_000)])
    end = until if until is not None else d.choice([None, d.int(T0 - 10_000, T0 + 500_000)])
    kw = dict(step_ms=step, until=until, end=end, intervals=d.int(1, 64), min_distance_ms=d.choice([0, 1, 1000, 5000]))
    arrays = [np.array(x, np.int64) for x in (bounds, when, offset, ob, otimes)] + [np.array(oids, np.int32)]
    log = FakeLog(stamps)
    if lag.kernel is None:
        lag.partition_lag(*arrays, log, pure=True, **kw)
        return
    _same(lag.partition_lag(*arrays, log, **kw), lag.partition_lag(*arrays, log, pure=True, **kw))


def _with_replay(compiled: bool, fn):
    """fn() with lag_input's extension on or off (the NumPy twin)."""
    from kgtool.lag import collector as lag_input

    saved = lag_input.kernel
    lag_input.kernel = saved if compiled else None
    try:
        return fn()
    finally:
        lag_input.kernel = saved


def _lag_chunks(d: _Draw) -> None:
    """LagCollector over drawn commit chunks (keys on given and other partitions, deletions,
    commits that did not take effect, transactions at markers, a chunk replayed inside another,
    offset jumps past 16 and 32 bits): the compiled pick, steps and sorts give NumPy's inputs."""
    import numpy as np

    from kgtool.lag import collector as LI
    from kgtool.offsets.store import NULL

    nkeys = d.int(1, 40)
    keys = [(f"g{d.int(0, 6)}", d.choice(["orders", "other"]), d.int(0, 3)) for _ in range(nkeys)]
    markers = {10_000 + m: 50_000 + d.int(0, 5000) for m in range(0, d.int(0, 400), 7)}
    chunks, rec = [], 0
    for _ in range(d.int(1, 6)):
        n = d.int(0, 120)
        recs = rec + np.arange(n, dtype=np.int64)
        rec += n
        jump = d.choice([0, 0, 40_000, 3 << 31])
        p_txn, p_del, p_null, p_back = d.choice([0, 0.1]), d.choice([0, 0, 0.02]), d.choice([0, 0.05]), d.choice([0, 0.05])
        at = [10_000 + d.int(0, 400) if d.int(0, 99) < 100 * p_txn else int(r) for r in recs]
        at = np.array([NULL if d.int(0, 99) < 100 * p_null else a for a in at], np.int64)
        ts = np.array([1000 * int(r) // 7 - (d.int(0, 90_000) if d.int(0, 99) < 100 * p_back else 0) for r in recs],
                      np.int64)
        offsets = np.array([d.int(0, 9000) + (jump if d.int(0, 9) == 0 else 0) for _ in range(n)], np.int64)
        parts = [LI.ReplayedCommits(np.array([d.int(0, nkeys - 1) for _ in range(n)], np.int64), ts, recs, offsets,
                                np.array([d.int(0, 99) < 100 * p_del for _ in range(n)], np.bool_),
                                np.array([d.int(0, 9) > 0 for _ in range(n)], np.bool_), at)]
        if n > 1 and d.int(0, 2) == 0:  # one replayed inside it: interleaved record offsets
            fields_ = ("key", "timestamp", "record_offset", "offset", "deleted", "effective", "effective_at")
            parts = [LI.ReplayedCommits(*(getattr(parts[0], f)[::2] for f in fields_)),
                     LI.ReplayedCommits(*(getattr(parts[0], f)[1::2] for f in fields_))]
        chunks.append(parts)

    def inputs():
        li = LI.LagCollector({("orders", p): p for p in range(4)}, 3, dict(markers))
        for parts in chunks:
            li.commits(parts, nkeys, lambda k: keys[k])
        out = {}
        for k, v in li.payloads():
            out[k] = (v.groups, v.group_bounds.tolist(), v.when.tolist(), v.offset.tolist())
            # the exchange's 16-bit steps (lag_steps16) against NumPy's
            c, p = LI._deltas(v.group_bounds, v.when, v.offset), LI._deltas(v.group_bounds, v.when, v.offset, pure=True)
            assert (c is None) == (p is None) and (c is None or [x.tolist() for x in c] == [x.tolist() for x in p])
        return out

    got = _with_replay(True, inputs)
    assert got == _with_replay(False, inputs), "LagCollector: compiled != NumPy"


def _lag_members(d: _Draw) -> None:
    """Members rows of classic groups (lag_members, then lag_classic in owner_changes): the
    compiled columns and owner changes are NumPy's."""
    from kgtool.lag.collector import LagCollector
    from kgtool.offsets.tables import MEMBER

    members = [("m-a", "/10.0.0.1", "c-a"), ("m-b", "/10.0.0.2", "c-b"), ("m-c", "/10.0.0.3", "c-c")]
    shared = [["t-1", "t-2"], [], None, ["t-0", "u-0", "t-4"], ["t-9", "t-3"], ["t-1"]]
    width = max(MEMBER.values()) + 1
    rows, rec, ts = [], 0, 1000
    gens = []
    for _ in range(d.int(0, 12)):  # records: a generation, then its members at the same offset and time
        group = d.choice(["g1", "g2", "g3"])
        rec += d.int(1, 3)
        ts += d.choice([0, 0, 1, 500, -300])
        gens.append({"group": group, "record_offset": rec, "timestamp": ts, "protocol": "classic"})
        for _ in range(d.int(0, 3)):
            member, host, client = d.choice(members)
            lst = d.int(0, len(shared) - 1)
            row = [None] * width
            assigned = shared[lst] if d.int(0, 1) or shared[lst] is None else list(shared[lst])
            for field, v in (("group", group), ("record_offset", rec), ("timestamp", ts), ("member_id", member),
                             ("client_id", client), ("client_host", host), ("assigned_partitions", assigned)):
                row[MEMBER[field]] = v
            rows.append(tuple(row))
    split = d.int(0, len(rows))

    def run():
        li = LagCollector({("t", k): k for k in range(5)}, 0)
        li.generations(gens)
        li.member_tuples(rows[:split])
        li.member_tuples(rows[split:])
        table, arrays = li.owner_changes()
        return ({k: [c.tolist() for c in v] for k, v in li._members.items()}, dict(li._owner_ids),
                dict(li._member_ids), table, [a.tolist() for a in arrays])

    got = _outcome(lambda: _with_replay(True, run))
    assert got == _outcome(lambda: _with_replay(False, run)), "members and owner changes: compiled != NumPy"


def _lag_hostile(d: _Draw) -> None:
    """Every kernel function on hostile arrays (lengths that fit the checks, contents anything):
    a ValueError or a result, never a read or write outside the arrays (the sanitizer build
    sees those); lag_scatter, lag_unsteps and lag_steps16 results equal their twins'."""
    import numpy as np

    from kgtool.lag import timeline as lag
    from kgtool.lag.collector import _deltas, _scatter_py

    R = lag.kernel
    if R is None:
        return
    i64, i32, u8 = np.int64, np.int32, np.uint8
    which = d.int(0, 6)
    if which == 0:  # lag_scatter: against the NumPy counting sort, when it takes the input
        n, nk, m = d.int(0, 30), d.int(1, 8), d.int(0, 40)
        key, place = d.array(n, i32, -1, nk), d.array(nk, i64, -2, m + 1)
        rows, out = d.array(2 * n, i64).reshape(n, 2), np.full((m, 2), -7, i64)
        p0, o0 = place.copy(), out.copy()
        try:
            R.lag_scatter(key, place, rows, out)
        except ValueError:
            return
        _scatter_py(key, p0, rows, o0)
        assert out.tolist() == o0.tolist() and place.tolist() == p0.tolist(), "lag_scatter != _scatter_py"
    elif which == 1:  # lag_unsteps: against the rows undone by hand and the NumPy counting sort
        present, nk, m, width = d.int(0, 8), d.int(1, 6), d.int(0, 40), d.choice([2, 4, 3])
        count = d.array(present, i64, -1, 6)
        start = d.array(present, i64, -1, 20)
        nsteps = d.int(0, 24)
        dtu, dti = (np.uint16, np.int16) if width == 2 else (np.uint32, np.int32)
        dt, doff = d.array(nsteps, dtu, 0, 70_000, wild=False), d.array(nsteps, dti, -40_000, 40_000, wild=False)
        keys, first = d.array(present, i32, -1, nk), d.array(2 * present, i64, -100, 100, wild=False).reshape(-1, 2)
        place, out = d.array(nk, i64, -1, m + 1), np.full((m, 2), -7, i64)
        lo, hi = d.int(-1, present), d.int(0, present + 1)
        p0, o0 = place.copy(), out.copy()
        try:
            R.lag_unsteps(keys, count, start, first, dt, doff, width, lo, hi, place, out)
        except ValueError:
            assert place.tolist() == p0.tolist() and out.tolist() == o0.tolist(), "lag_unsteps wrote on bad input"
            return
        rows, rkey = [], []
        for s in range(lo, hi):
            w, o = (int(x) for x in first[s])
            for j in range(int(count[s])):
                if j:
                    w, o = w + int(dt[start[s] + j]), o + int(doff[start[s] + j])
                rows.append((w, o))
                rkey.append(int(keys[s]))
        if rows:
            _scatter_py(np.array(rkey, i32), p0, np.array(rows, i64), o0)
        assert out.tolist() == o0.tolist() and place.tolist() == p0.tolist(), "lag_unsteps != _scatter_py"
    elif which == 2:  # lag_steps16: against NumPy's steps
        n, ng = d.int(0, 30), d.int(0, 6)
        bounds = np.sort(d.array(ng + 1, i64, 0, n, wild=d.int(0, 3) == 0))
        if d.int(0, 3):
            bounds[0], bounds[-1] = 0, n
        when, offset = d.array(n, i64, T0, T0 + 200_000), d.array(n, i64, -100, 70_000)
        try:
            R.lag_steps16(bounds, when, offset, np.empty(n, np.uint16), np.empty(n, np.int16))
        except ValueError:
            return
        c, p = _deltas(bounds, when, offset), _deltas(bounds, when, offset, pure=True)
        assert (c is None) == (p is None) and (c is None or [x.tolist() for x in c] == [x.tolist() for x in p])
    elif which == 3:  # lag_rows: every array its length, bounds and contents anything
        S, N, M, U, O, cap = (d.int(0, 5), d.int(0, 20), d.int(0, 12), d.int(0, 10), d.int(0, 8), d.int(0, 60))
        if N and not M:
            M = 1
        args = [d.array(S + 1, i64, -1, N + 1), d.array(N, i64, T0 - 10, T0 + 50), d.array(N, i64),
                np.sort(d.array(M, i64, T0 - 10, T0 + 60)), d.array(M, i64), np.sort(d.array(U, i64)), d.array(U, i64),
                d.array(U, u8, 0, 1, wild=False), d.array(S + 1, i64, -1, O + 1),
                np.sort(d.array(O, i64, T0 - 10, T0 + 50)), d.array(O, i32, -1, 3),
                d.choice([0, 1, 7, 1000, (1 << 62)]), d.wild(T0, T0 + 60), d.int(0, 1), d.wild(T0, T0 + 60), d.int(0, 1),
                d.int(1, 64), d.choice([0, 5, -5, (1 << 62)])]
        room = lag.LagArrays.empty(cap)
        try:
            R.lag_rows(*args, room.seq, room.t, room.committed, room.end, room.lag, room.lag_ms, room.status,
                       room.owner, np.empty(S, i64))
        except ValueError:
            pass
    elif which == 4:  # lag_runs over a room of drawn rows
        S, cap = d.int(0, 5), d.int(0, 30)
        n = d.int(0, cap)
        m = d.int(0, cap - n)
        E = n + m + d.int(0, 2)
        room = [d.array(cap, i32, -1, S), d.array(cap, i64), d.array(cap, i64), d.array(cap, i64),
                d.array(cap, u8, 0, 22, wild=False), d.array(cap, i32, -2, 4)]
        outs = [np.empty(E, i32), np.empty(E, u8)] + [np.empty(E, i64) for _ in range(5)] + \
               [np.empty(E + 1, i64), np.empty(n + m, i32), np.empty(S, i64), np.empty(S, i64), np.empty(S, u8)]
        try:
            R.lag_runs(S, *room, n, m, *outs)
        except ValueError:
            pass
    elif which == 5:  # lag_pick and lag_pick_steps: keys and partitions anything
        nk, n, nm, n_dp = d.int(0, 10), d.int(0, 30), d.int(0, 5), d.int(0, 4)
        kidx = d.array(nk, i32, -1, n_dp)
        cols = [d.array(n, i64, -1, nk), d.array(n, i64, 0, 90_000), np.arange(n, dtype=i64), d.array(n, i64, 0, 100)]
        flags = [d.array(n, u8, 0, 1, wild=False), d.array(n, u8, 0, 1, wild=False)]
        eat = np.where(d.array(n, u8, 0, 3, wild=False) == 0, lag.DELETED, d.array(n, i64, 0, 40))
        mk = np.sort(d.array(nm, i64, 0, 40))
        mt = d.array(nm, i64, 0, 90_000)
        try:
            R.lag_pick(kidx, *cols, *flags, eat, mk, mt, np.zeros(nk, i64), np.empty(n, i32), np.empty((n, 2), i64),
                       np.empty(n_dp + 1, i64))
        except ValueError:
            pass
        order = d.array(nk, i32, -1, nk) if d.int(0, 3) == 0 else np.lexsort((np.arange(nk), kidx)).astype(i32)
        try:
            R.lag_pick_steps(kidx, order, *cols, *flags, eat, mk, mt, np.zeros(nk, i64), np.empty(4 * nk, i64),
                             np.empty(n, np.uint32), np.empty(n, i32), np.empty(nk, i32), np.empty(nk, i64),
                             np.empty(nk, i64), np.empty((nk, 2), i64), np.empty(n_dp + 1, i64))
        except ValueError:
            pass
    else:  # lag_classic: records, members rows and partitions anything
        ns, nm, nflat, nrows = d.int(0, 8), d.int(0, 8), d.int(0, 12), d.int(0, 10)
        s_g = np.sort(d.array(ns, i64, 0, 3))
        s_rec = d.array(ns, i64, 0, 20)
        by_rec = d.array(ns, i64, -1, ns) if d.int(0, 3) == 0 else np.argsort(s_rec, kind="stable").astype(i64)
        args = [s_g, s_rec, d.array(ns, i64, 0, 9), by_rec, d.array(nm, i64, 0, 20), d.array(nm, i64, -2, 5),
                d.array(nm, i64, -1, 4), d.array(nm, i64, -1, nflat), d.array(nflat, i64, -1, 5),
                d.array(nrows, i64, -1, nm), d.choice([0, 1, 5, 6])]
        try:
            R.lag_classic(*args)
        except ValueError:
            pass


TARGETS: dict[str, Target] = {
    t.name: t
    for t in [
        Target("segment", segment_seeds, mutate_bytes, check_segment, ".log"),
        Target("audit-decoder", segment_seeds, mutate_bytes, check_audit_decoder, ".log"),
        Target("offsets-payload", payload_seeds, mutate_bytes, check_payload),
        Target("seek", seek_seeds, mutate_bytes, check_seek),
        Target("lag-kernel", lag_seeds, mutate_bytes, check_lag),
        Target("group-description", group_seeds, mutate_text, check_group, ".yaml"),
        Target("topic-description", topic_seeds, mutate_text, check_topic, ".txt"),
        Target("id-list", id_seeds, mutate_bytes, check_ids, ".txt"),
        Target("key-list", key_seeds, mutate_bytes, check_keys, ".txt"),
    ]
}
