"""--from-offset / --from-time / --count give exactly what a full decode filtered by hand gives
(ListOffsets semantics for time: the smallest offset whose timestamp is at least T), with sound
indexes, without them and with broken ones (then a note on stderr)."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.errors import UsageError
from kgtool.storage.seek import parse_time
from tests.storage.dirs import TS, broker_dir, files

runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["decode-batch", *map(str, args)])


def records(r):
    objs = (json.loads(x) for x in r.stdout.splitlines() if x.strip())
    return [(o["offset"], o["timestamp"]) for o in objs if o["type"] == "record"]  # batch lines left out


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    d = broker_dir(tmp_path_factory.mktemp("seek"), preallocate=4096)
    everything = records(run(d, "--format", "jsonl"))
    assert len(everything) > 250
    return d, everything


def expected_from_offset(everything, n, count):
    return [x for x in everything if x[0] >= n][:count]


def expected_from_time(everything, t, count):
    start = next((o for o, ts in everything if ts >= t), None)  # ListOffsets: the first offset with ts >= t
    return [] if start is None else [x for x in everything if x[0] >= start][:count]


def test_from_offset_matches_a_full_decode(partition):
    d, everything = partition
    offsets = [o for o, _ in everything]
    for n in [0, 1, offsets[40], offsets[-1], offsets[-1] + 1, 10**9] + offsets[::17]:
        r = run(d, "--from-offset", n, "--count", 5, "--format", "jsonl")
        assert r.exit_code == 0, r.output
        assert records(r) == expected_from_offset(everything, n, 5), n
        assert "scanning" not in r.stderr


def test_from_time_matches_list_offsets_semantics(partition):
    d, everything = partition
    stamps = sorted({ts for _, ts in everything})
    targets = [TS - 10**6, stamps[0], stamps[-1], stamps[-1] + 1] + [s + 1 for s in stamps[::13]] + stamps[5::29]
    for t in targets:
        r = run(d, "--from-time", t, "--count", 3, "--format", "jsonl")
        assert r.exit_code == 0, r.output
        assert records(r) == expected_from_time(everything, t, 3), t


def test_from_time_iso_8601(partition):
    d, everything = partition
    t = everything[100][1]
    iso = parse_time_iso(t)
    a = records(run(d, "--from-time", iso, "--count", 2, "--format", "jsonl"))
    assert a == expected_from_time(everything, t, 2)


def parse_time_iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_parse_time():
    assert parse_time("1700000000123") == 1700000000123
    assert parse_time("2023-11-14T22:13:20.123Z") == 1700000000123
    assert parse_time("2023-11-14T22:13:20.123") == 1700000000123
    assert parse_time("2023-11-15T00:13:20.123+02:00") == 1700000000123
    with pytest.raises(UsageError):
        parse_time("yesterday")


def test_count_alone_and_all_records_after(partition):
    d, everything = partition
    assert records(run(d, "--count", 7, "--format", "jsonl")) == everything[:7]
    n = everything[200][0]
    assert records(run(d, "--from-offset", n, "--format", "jsonl")) == [x for x in everything if x[0] >= n]


def test_without_indexes_a_scan_gives_the_same_records(partition, tmp_path):
    src, everything = partition
    d = os.path.join(str(tmp_path), "orders-3")
    os.makedirs(d)
    for name in os.listdir(src):
        if not name.endswith((".index", ".timeindex")):
            open(os.path.join(d, name), "wb").write(open(os.path.join(src, name), "rb").read())
    n = everything[150][0]
    r = run(d, "--from-offset", n, "--count", 4, "--format", "jsonl")
    assert records(r) == expected_from_offset(everything, n, 4)
    assert "no offset index: scanning the segment from its start" in r.stderr
    t = everything[150][1] + 1
    r = run(d, "--from-time", t, "--count", 4, "--format", "jsonl")
    assert records(r) == expected_from_time(everything, t, 4)
    assert "scanning the segment for its largest timestamp" in r.stderr


def test_a_broken_index_falls_back_to_a_scan(partition, tmp_path):
    src, everything = partition
    d = os.path.join(str(tmp_path), "orders-3")
    os.makedirs(d)
    for name in os.listdir(src):
        open(os.path.join(d, name), "wb").write(open(os.path.join(src, name), "rb").read())
    idx = files(d, ".index")[1]
    ti = files(d, ".timeindex")[1]
    size = os.path.getsize(idx)
    open(idx, "wb").write(os.urandom(size))
    open(ti, "wb").write(os.urandom(os.path.getsize(ti)))
    base = int(os.path.basename(idx)[:20])
    n = next(o for o, _ in everything if o > base + 20)
    r = run(d, "--from-offset", n, "--count", 3, "--format", "jsonl")
    assert r.exit_code == 0, r.output
    assert records(r) == expected_from_offset(everything, n, 3)
    t = next(ts for o, ts in everything if o > base + 20) + 1
    r = run(d, "--from-time", t, "--count", 3, "--format", "jsonl")
    assert r.exit_code == 0, r.output
    assert records(r) == expected_from_time(everything, t, 3)
    assert "does not match the log" in r.stderr or "scanning" in r.stderr


def test_a_single_segment_file(partition):
    d, everything = partition
    seg = files(d, ".log")[1]
    base = int(os.path.basename(seg)[:20])
    n = next(o for o, _ in everything if o > base + 5)
    assert records(run(seg, "--from-offset", n, "--count", 2, "--format", "jsonl")) == \
        expected_from_offset(everything, n, 2)


@pytest.mark.parametrize("args,msg", [
    (["--from-offset", 1, "--from-time", 5], "exclusive"),
    (["--from-time", "soon"], "ISO-8601"),
    (["--count", 1, "--summary"], "not with --summary"),
])
def test_seek_usage_errors(partition, args, msg):
    d, _ = partition
    r = run(d, *args)
    assert r.exit_code == 2 and msg in r.stderr


def test_two_inputs_are_refused(partition):
    d, _ = partition
    r = run(d, d, "--from-offset", 3)
    assert r.exit_code == 2 and "one partition directory" in r.stderr
