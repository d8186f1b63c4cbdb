"""`kgtool decode-batch` as a person meets it: kafka-dump-log's lines, a file that is no
segment, topic and partition from the directory name, and the progress bar on a terminal."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli import dump_log
from kgtool.cli.main import app
from kgtool.codec import encode_batch_v2, encode_end_txn_marker, scan_segment
from kgtool.codec.lines import with_batches

ROOT = Path(__file__).resolve().parents[2]
BATCHES = ROOT / "fixtures" / "batches"
OFFSETS = ROOT / "fixtures" / "offsets" / "scenario3_transactions_tombstones" / "00000000000000000000.log"
runner = CliRunner()

GROUP_YAML = b"group: g1\nmembers:\n  - id: c1\n    topics: [orders]\ntopics:\n  orders: 3\n"


def run(*args):
    return runner.invoke(app, ["decode-batch", *map(str, args)])


# --- kafka-dump-log's layout -------------------------------------------------------------------

def test_table_is_a_batch_line_then_one_line_per_record(tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(
        encode_batch_v2([(b"k1", b"hello", [("h", b"x")], 1717250580123), (None, b"")], compression="gzip",
                        producer_id=7, producer_epoch=2, base_sequence=0, partition_leader_epoch=5)
        + encode_end_txn_marker(commit=True, producer_id=7, producer_epoch=2, coordinator_epoch=9, base_offset=2,
                                timestamp=1717250580200)
    )
    r = run(p, "--bytes", "utf8")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == f"Dumping {p}"
    assert re.fullmatch(
        r"batch@0  offsets 0\.\.1  2 records  magic 2  gzip  \d+ bytes  crc 0x[0-9a-f]{8} ok  "
        r"CREATE_TIME 2024-06-01T14:03:00\.123Z  producer 7 epoch 2 seq 0  leader epoch 5", lines[1]), lines[1]
    assert lines[2] == '| offset 0  2024-06-01T14:03:00.123Z  key: k1  value: hello  headers: {"h":"x"}'
    assert lines[3].startswith("| offset 1  ") and lines[3].endswith('key: null  value: ""')
    assert lines[4].startswith("batch@") and lines[4].endswith("transactional  control")
    assert lines[5] == "| offset 2  2024-06-01T14:03:00.200Z  control: COMMIT (type 1, version 0, coordinator epoch 9)"
    assert len(lines) == 6


def test_decoded_payloads_show_key_and_value_not_raw_bytes(tmp_path):
    d = tmp_path / "__consumer_offsets-12"
    d.mkdir()
    shutil.copy(OFFSETS, d / "00000000000000000000.log")
    r = run(d)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].endswith("(topic __consumer_offsets, partition 12)")
    commit = next(ln for ln in lines if " offset_commit " in ln)
    assert commit.startswith("| offset 1  2024-05-31T16:08:39.000Z  offset_commit  ")
    assert 'key: {"group":"txn-group","topic":"input","partition":0}' in commit
    assert 'value: {"offset":100,"leader_epoch":-1,"metadata":"","commit_timestamp":1717171719000}' in commit
    assert any(ln.endswith(" (tombstone)") and "value: null" in ln for ln in lines)
    # Nothing is cut: the longest group member id appears whole, on one line.
    metadata = next(ln for ln in lines if " group_metadata " in ln and "members" in ln)
    assert "…" not in r.stdout and json.loads(metadata.split("  value: ", 1)[1])["members"]


def test_batches_only_and_a_big_batch_stay_one_line_each(tmp_path):
    r = run(BATCHES / "txn_commit_abort.log", "--batches-only")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Dumping ") and all(ln.startswith("batch@") for ln in lines[1:])
    assert len(lines) == 1 + sum(1 for _ in scan_segment((BATCHES / "txn_commit_abort.log").read_bytes()))


@pytest.mark.parametrize("value, shown", [
    ("plain", "plain"), ("", '""'), (" padded ", '" padded "'), ("tab\there", '"tab\\there"'), (None, "null"),
    ({"a": [1, 2]}, '{"a":[1,2]}'),
])
def test_keys_and_values_hide_nothing(value, shown):
    assert dump_log._text(value) == shown


# --- topic and partition from the directory name (kcat -J); the rule: tests/storage/test_files.py

def test_jsonl_records_carry_topic_and_partition_when_the_directory_gives_them(tmp_path):
    # On the batch lines (a record line names its batch by position): topic and partition
    # follow source (kcat -J).
    d = tmp_path / "orders-3"
    d.mkdir()
    shutil.copy(BATCHES / "m2_none.log", d / "00000000000000000000.log")
    for args in ([d], [d / "00000000000000000000.log"]):
        rows = [json.loads(ln) for ln in run(*args, "--format", "jsonl").stdout.splitlines()]
        pairs = list(with_batches(rows))
        assert pairs and all(b is not None and (b["topic"], b["partition"]) == ("orders", 3) for b, _ in pairs)
        assert all("topic" not in r and "partition" not in r for _, r in pairs)
        assert rows[0]["type"] == "batch"
        assert list(rows[0])[:5] == ["type", "source", "topic", "partition", "position"]
    rows = [json.loads(ln) for ln in run(d, "--format", "jsonl", "--batches-only").stdout.splitlines()]
    assert rows and all(r["type"] == "batch" and (r["topic"], r["partition"]) == ("orders", 3) for r in rows)
    plain = [json.loads(ln) for ln in run(BATCHES / "m2_none.log", "--format", "jsonl").stdout.splitlines()]
    assert plain[0]["type"] == "batch" and list(plain[0])[:3] == ["type", "source", "position"]
    assert all("topic" not in o and "partition" not in o for o in plain)


# --- a file that is no log segment -------------------------------------------------------------

def test_yaml_is_no_log_segment_exit_2(tmp_path):
    p = tmp_path / "group.yaml"
    p.write_bytes(GROUP_YAML)
    for extra in ([], ["--summary"], ["--format", "json"]):
        r = run(p, *extra)
        assert r.exit_code == 2, r.output
        assert r.stdout == ""
        assert r.stderr == (f"kgtool: {p}: not a Kafka log segment: nothing in its 71 bytes parses as a record "
                            "batch (it starts with 'group: g1\\nmember')\n")


def test_binary_file_named_in_hex(tmp_path):
    p = tmp_path / "image.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(200)))
    r = run(p)
    assert r.exit_code == 2
    assert "not a Kafka log segment" in r.stderr and "(it starts with 89 50 4e 47 0d 0a 1a 0a 00 01" in r.stderr


def test_no_segment_beside_a_good_one_is_exit_1(tmp_path):
    p = tmp_path / "group.yaml"
    p.write_bytes(GROUP_YAML)
    r = run(BATCHES / "m2_none.log", p, "--format", "jsonl")
    assert r.exit_code == 1
    assert r.stdout.strip()  # the good segment's records
    warning, error = r.stderr.strip().splitlines()
    assert warning.startswith(f"warning: {p}: not a Kafka log segment")
    assert error == "kgtool: problems reported: 1 corrupt; 1 input is not a log segment"


def test_damaged_segments_are_still_segments(tmp_path):
    # A CRC mismatch on the only batch: its header is Kafka's, the batch is damaged (exit 1).
    data = bytearray((BATCHES / "m2_none.log").read_bytes())
    data[-1] ^= 0xFF
    p = tmp_path / "bad.log"
    p.write_bytes(bytes(data[: len(data)]))
    r = run(p)
    assert r.exit_code == 1 and "not a Kafka log segment" not in r.stderr
    # Zero padding (a preallocated segment) and an empty file are segments with nothing in them.
    for content in (bytes(4096), b""):
        p.write_bytes(content)
        r = run(p)
        assert r.exit_code == 0 and "not a Kafka log segment" not in r.stderr, r.output


# --- progress on stderr whenever stderr is a terminal ------------------------------------------

_RUN_WITH_SMALL_THRESHOLD = (
    "import sys, kgtool.cli.decode_batch as d; d._PROGRESS_MIN_BYTES = 1; "
    "from kgtool.cli.main import main; sys.argv[0] = 'kgtool'; main()"
)


@pytest.fixture(scope="module")
def segment(tmp_path_factory):
    p = tmp_path_factory.mktemp("progress") / "00000000000000000000.log"
    p.write_bytes(b"".join(encode_batch_v2([(b"k%d" % i, b"v" * 200) for i in range(50)], base_offset=i * 50)
                           for i in range(400)))
    return p


def in_a_terminal(tmp_path: Path, shell_command: str) -> str:
    """Run ``shell_command`` with its stdin, stdout and stderr on a pseudo-terminal (script(1));
    the terminal's bytes."""
    typescript = tmp_path / "typescript"
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100", TERM="xterm")
    p = subprocess.run(["script", "-qec", shell_command, str(typescript)], capture_output=True, env=env,
                       timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (p.stdout, p.stderr)
    return typescript.read_bytes().decode("utf-8", "replace")


needs_script = pytest.mark.skipif(shutil.which("script") is None, reason="script(1) (util-linux) is not installed")


@needs_script
def test_progress_shows_on_stderr_while_stdout_goes_to_a_file(tmp_path, segment):
    out = tmp_path / "out.jsonl"
    cmd = (f"{shlex.quote(sys.executable)} -c {shlex.quote(_RUN_WITH_SMALL_THRESHOLD)} decode-batch "
           f"{shlex.quote(str(segment))} --format jsonl > {shlex.quote(str(out))}")
    screen = in_a_terminal(tmp_path, cmd)
    assert "00000000000000000000.log" in screen and re.search(r"/\d+\.\d kB|/\d+\.\d MB", screen), screen
    text = out.read_text()
    assert "\x1b" not in text  # the file has the data only: 400 batch lines, 50 record lines after each
    assert [json.loads(ln)["type"] for ln in text.splitlines()] == (["batch"] + ["record"] * 50) * 400


@needs_script
def test_progress_is_cleared_before_the_summary(tmp_path, segment):
    cmd = (f"{shlex.quote(sys.executable)} -c {shlex.quote(_RUN_WITH_SMALL_THRESHOLD)} decode-batch "
           f"{shlex.quote(str(segment))} --summary")
    screen = in_a_terminal(tmp_path, cmd)
    start = screen.index("summary of")
    last_bar = max(m.end() for m in re.finditer(r"\d+\.\d/\d+\.\d [kM]B", screen))
    assert last_bar < start
    # Between the bar's last frame and the summary: the line is erased (ESC [2K), not left.
    assert "\x1b[2K" in screen[last_bar:start]
    assert not re.search(r"\d+\.\d/\d+\.\d [kM]B", screen[start:])


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch):
    from kgtool.cli import decode_batch

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert decode_batch._ByteProgress.maybe() is None
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    p = decode_batch._ByteProgress.maybe()
    assert p is not None and p.p.live._redirect_stdout is False  # stdout (a file) left alone
