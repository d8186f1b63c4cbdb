"""`kgtool decode-batch`: every option, the JSON Lines schema, and each exit code."""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.codec import encode_batch_v2, encode_end_txn_marker, lines, scan_segment
from kgtool.codec.lines import with_batches
from tests.twins import compiled

ROOT = Path(__file__).resolve().parents[2]
BATCHES = ROOT / "fixtures" / "batches"
OFFSETS = ROOT / "fixtures" / "offsets" / "scenario3_transactions_tombstones" / "00000000000000000000.log"
runner = CliRunner()

# The lean lines (kgtool.codec.lines), spelled out here so that a schema change is a deliberate act.
# A record line: RECORD_KEYS, then "control" (a control record only), then "payload" or
# "payload_error" (a payload decoder only).
RECORD_KEYS = ["type", "position", "offset", "timestamp", "key", "value", "headers"]
RECORD_OPTIONAL_KEYS = ["control", "payload", "payload_error"]
CONTROL_KEYS = ["type", "type_name", "version", "coordinator_epoch"]
# A batch line: "type", "source", ("topic", "partition" in a partition directory), BATCH_KEYS.
BATCH_KEYS = ["position", "base_offset", "last_offset", "batch_length", "size_in_bytes", "partition_leader_epoch",
              "magic", "crc", "crc_valid", "attributes", "compression", "timestamp_type", "is_transactional",
              "is_control", "delete_horizon_ms", "last_offset_delta", "base_timestamp", "max_timestamp",
              "producer_id", "producer_epoch", "base_sequence", "last_sequence", "record_count"]


BATCH_LINE_KEYS = ["type", "source"] + BATCH_KEYS
BATCH_LINE_KEYS_IN_A_PARTITION_DIRECTORY = ["type", "source", "topic", "partition"] + BATCH_KEYS


def run(*args):
    return runner.invoke(app, ["decode-batch", *map(str, args)])


def jsonl(result):
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def records(rows):
    """The record lines of an output read back (batch lines left out)."""
    return [o for o in rows if o["type"] == "record"]


def batch_lines(rows):
    return [o for o in rows if o["type"] == "batch"]


def test_the_schema_here_is_kgtool_codec_lines():
    assert list(lines.RECORD_NAMES) == RECORD_KEYS + RECORD_OPTIONAL_KEYS
    assert list(lines.BATCH_NAMES) == BATCH_LINE_KEYS_IN_A_PARTITION_DIRECTORY
    assert list(lines.BATCH_HEADER_NAMES) == BATCH_KEYS
    assert list(lines.CONTROL_NAMES) == CONTROL_KEYS


def test_table_output():
    r = run(BATCHES / "txn_commit_abort.log")
    assert r.exit_code == 0, r.output
    assert "batch@0" in r.stdout and "transactional" in r.stdout and "COMMIT" in r.stdout


def test_jsonl_schema_is_exact():
    r = run(BATCHES / "headers.log", "--format", "jsonl")
    assert r.exit_code == 0, r.output
    rows = jsonl(r)
    assert rows and {o["type"] for o in rows} == {"batch", "record"}
    # Exact keys, in order, from kgtool.codec.lines and spelled out above.
    assert all(list(o) == BATCH_LINE_KEYS for o in batch_lines(rows))
    assert all(list(o) == RECORD_KEYS for o in records(rows))
    assert [list(o) for o in batch_lines(rows)] == [["type", "source", *lines.BATCH_HEADER_NAMES]] * len(
        batch_lines(rows))
    assert [list(o) for o in records(rows)] == [list(lines.RECORD_NAMES[:len(RECORD_KEYS)])] * len(records(rows))
    assert all(list(h) == ["key", "value"] for o in records(rows) for h in o["headers"])
    # A batch line goes out once, before its records; each record carries its batch's position.
    assert rows[0]["type"] == "batch"
    scanned = list(scan_segment((BATCHES / "headers.log").read_bytes()))
    assert [o["position"] for o in batch_lines(rows)] == [b.position for b in scanned]
    pairs = list(with_batches(rows))
    assert len(pairs) == len(records(rows)) == sum(len(b.records) for b in scanned)
    assert all(bl is not None and rec["position"] == bl["position"] for bl, rec in pairs)
    for bl in batch_lines(rows):
        assert bl["record_count"] == sum(1 for x, _ in pairs if x is bl)
    first_batch, first = pairs[0]
    b = scanned[0]
    rec = b.records[0]
    assert first["offset"] == rec.offset and first["timestamp"] == rec.timestamp and first["position"] == 0
    assert first["key"] == (None if rec.key is None else base64.b64encode(rec.key).decode())
    assert first["headers"] == [{"key": k, "value": None if v is None else base64.b64encode(v).decode()}
                                for k, v in rec.headers]
    assert first_batch["crc"] == b.crc and first_batch["crc_valid"] is True
    assert first_batch["compression"] == "none" and first_batch["magic"] == 2
    assert first_batch["source"] == str(BATCHES / "headers.log")


@pytest.mark.parametrize("fmt,expect", [("base64", "a2V5LTA="), ("hex", b"key-0".hex()), ("utf8", "key-0")])
def test_bytes_formats(fmt, expect):
    r = run(BATCHES / "m0_none.log", "--format", "jsonl", "--bytes", fmt)
    assert r.exit_code == 0, r.output
    assert records(jsonl(r))[0]["key"] == expect


def test_legacy_batches_carry_kafka_defaults():
    ((b, o), *_), = [list(with_batches(jsonl(run(BATCHES / "m1_gzip.log", "--format", "jsonl"))))]
    assert o["offset"] == 0 and o["position"] == b["position"] == 0
    assert b["producer_id"] == -1 and b["partition_leader_epoch"] == -1
    assert b["magic"] == 1 and b["compression"] == "gzip"
    assert b["last_offset_delta"] is None and b["record_count"] == 4


def test_control_records_in_jsonl():
    pairs = list(with_batches(jsonl(run(BATCHES / "control_only.log", "--format", "jsonl"))))
    rows = [r for _, r in pairs]
    assert [r["control"]["type_name"] for r in rows] == ["ABORT", "COMMIT"]
    assert rows[1]["control"]["coordinator_epoch"] == 2147483647
    assert all(list(r) == RECORD_KEYS + ["control"] and list(r["control"]) == CONTROL_KEYS for r in rows)
    assert all(b["is_control"] for b, _ in pairs)


def test_batches_only_and_json_array():
    r = run(BATCHES / "txn_commit_abort.log", "--batches-only", "--format", "jsonl")
    rows = jsonl(r)
    assert r.exit_code == 0 and len(rows) == 5
    assert all(list(o) == BATCH_LINE_KEYS and o["type"] == "batch" for o in rows)
    full = jsonl(run(BATCHES / "txn_commit_abort.log", "--format", "jsonl"))
    assert rows == batch_lines(full)  # the same batch objects as with the records
    r = run(BATCHES / "txn_commit_abort.log", "--format", "json")
    arr = json.loads(r.stdout)
    assert isinstance(arr, list) and len(arr) == 5 + 6 and len(records(arr)) == 6
    assert arr == full  # the JSON Lines objects, interleaved in the same order, in one array
    r = run(BATCHES / "txn_commit_abort.log", "--batches-only")
    assert r.exit_code == 0 and r.stdout.count("batch@") == 5 and "┃ offset" not in r.stdout


def test_summary_json_accounts_for_every_byte():
    r = run(OFFSETS, "--summary", "--format", "json", "--decode", "offsets")
    assert r.exit_code == 0, r.output
    (s,) = json.loads(r.stdout)["inputs"]
    assert s["bytes"] == {"total": 1596, "decoded": 1596, "skipped": 0, "truncated": 0}
    assert (s["batches"], s["records"], s["control_records"]) == (13, 16, 3)
    assert s["control_markers"] == {"ABORT": 1, "COMMIT": 2}
    assert s["payload"]["kinds"] == {"group_metadata": 3, "offset_commit": 10}
    assert s["payload"]["tombstones"] == 4 and s["producers"] == 3
    r = run(OFFSETS, "--summary")
    assert r.exit_code == 0 and "1,596 decoded" in r.stdout
    r = run(OFFSETS, OFFSETS, "--summary", "--format", "jsonl")
    assert len(jsonl(r)) == 2


def test_summary_pure_python_matches(monkeypatch):
    from kgtool.codec import batch as B

    assert B._speedups is compiled("kgtool.codec._speedups")
    a = run(OFFSETS, "--summary", "--format", "json", "--decode", "offsets").stdout

    monkeypatch.setattr(B, "_speedups", None)
    b = run(OFFSETS, "--summary", "--format", "json", "--decode", "offsets").stdout
    assert json.loads(a) == json.loads(b)


def test_decode_offsets_payload_and_auto_detection(tmp_path):
    d = tmp_path / "__consumer_offsets-5"
    d.mkdir()
    shutil.copy(OFFSETS, d / "00000000000000000000.log")
    out = jsonl(run(d, "--format", "jsonl"))  # a partition directory: auto --decode offsets
    pairs = list(with_batches(out))
    rows = [r for _, r in pairs]
    kinds = [r["payload"]["kind"] for r in rows if "control" not in r]
    assert kinds.count("offset_commit") == 10 and kinds.count("group_metadata") == 3
    commit_batch, commit = next((b, r) for b, r in pairs if r.get("payload", {}).get("kind") == "offset_commit")
    assert commit["payload"]["key"] == {"group": "txn-group", "topic": "input", "partition": 0}
    assert commit["payload"]["value"]["offset"] == 100
    assert list(commit) == RECORD_KEYS + ["payload"]
    # The directory names the partition: on batch lines, topic and partition follow source (kcat -J).
    assert all(list(b) == BATCH_LINE_KEYS_IN_A_PARTITION_DIRECTORY for b in batch_lines(out))
    assert (commit_batch["topic"], commit_batch["partition"]) == ("__consumer_offsets", 5)
    assert all((b["topic"], b["partition"]) == ("__consumer_offsets", 5) for b in batch_lines(out))
    controls = [r for r in rows if "control" in r]
    assert len(controls) == 3 and all("payload" not in r for r in controls)
    rows = jsonl(run(d, "--format", "jsonl", "--decode", "none"))
    assert records(rows) and all("payload" not in r for r in rows)
    r = run(d, "--decode", "offsets")
    assert r.exit_code == 0 and "offset_commit" in r.stdout


def _txn_record() -> tuple[bytes, bytes]:
    def s(x):
        return struct.pack(">h", len(x)) + x

    key = struct.pack(">h", 0) + s(b"my-txn")
    value = (struct.pack(">hqhib", 0, 4242, 3, 60000, 4) + struct.pack(">i", 1) + s(b"orders")
             + struct.pack(">ii", 1, 7) + struct.pack(">qq", 1700000000000, 1699999999000))
    return key, value


def test_decode_txn(tmp_path):
    d = tmp_path / "__transaction_state-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(encode_batch_v2([(*_txn_record(), [], 5)]))
    (row,) = records(jsonl(run(d, "--format", "jsonl")))
    assert row["payload"]["kind"] == "transaction_log"
    assert row["payload"]["key"] == {"transactional_id": "my-txn"}
    assert row["payload"]["value"]["producer_id"] == 4242


SHARE_STATE = ROOT / "fixtures" / "kafka44" / "share_state" / "__share_group_state-7"


def test_decode_share_group_state_automatically_and_by_name(tmp_path):
    """__share_group_state (KIP-932's share coordinator): ShareSnapshot and ShareUpdate records,
    decoded inside __share_group_state-N as Kafka 4.4 writes them, and by --decode share-state."""
    auto = records(jsonl(run(SHARE_STATE, "--format", "jsonl")))
    assert len(auto) == sum(1 for line in (SHARE_STATE / "00000000000000000000.decode.jsonl").open()
                            if '"control":false' in line) + sum(
        1 for f in ("00000000000000000180", "00000000000000000380")
        for line in (SHARE_STATE / f"{f}.decode.jsonl").open() if '"control":false' in line)
    kinds = {r["payload"]["kind"] for r in auto if "payload" in r}
    assert kinds == {"share_snapshot", "share_update"}
    assert not [r for r in auto if "payload_error" in r or r.get("payload", {}).get("warnings")]
    first = auto[0]["payload"]
    assert first["key"] == {"group_id": "group with spaces", "topic_id": "QP4YJPLmdj0K9KMemaPj8g", "partition": 47}
    # the same bytes outside the directory: no payload unless asked for
    copy = tmp_path / "00000000000000000000.log"
    shutil.copy(SHARE_STATE / "00000000000000000000.log", copy)
    assert "payload" not in records(jsonl(run(copy, "--format", "jsonl")))[0]
    named = records(jsonl(run(copy, "--format", "jsonl", "--decode", "share-state")))
    assert named[0]["payload"] == first


@pytest.mark.parametrize("mode,expect", [("utf8", "key-0"), ("hex", b"key-0".hex()), ("base64", "a2V5LTA=")])
def test_decode_text_modes(mode, expect):
    rows = records(jsonl(run(BATCHES / "m0_none.log", "--format", "jsonl", "--decode", mode)))
    assert rows[0]["payload"]["key"] == expect and rows[0]["payload"]["kind"] == mode


def test_utf8_decode_warns_on_invalid_bytes(tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(encode_batch_v2([(b"\xff\xfe", b"ok", [], 1)]))
    rows = records(jsonl(run(p, "--format", "jsonl", "--decode", "utf8")))
    assert rows[0]["payload"]["warnings"] and rows[0]["payload"]["key"] == "\ufffd\ufffd"


def test_payload_error_exits_1(tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(encode_batch_v2([(b"\x00\x01\x00", b"\x00\x03", [], 1)]))
    r = run(p, "--format", "jsonl", "--decode", "offsets")
    assert r.exit_code == 1, r.output
    (row,) = records(jsonl(r))
    assert list(row) == RECORD_KEYS + ["payload_error"] and "payload" in r.stderr
    r = run(p, "--summary", "--decode", "offsets", "--format", "json")
    assert r.exit_code == 1 and json.loads(r.stdout)["inputs"][0]["payload"]["errors"] == 1


def test_hex_input():
    data = (BATCHES / "m2_none.log").read_bytes()
    r = run("--hex", " ".join(data[i:i + 4].hex() for i in range(0, len(data), 4)), "--format", "jsonl")
    assert r.exit_code == 0, r.output
    assert jsonl(r)[0]["source"] == "<hex>"


def test_stdin_input():
    data = (BATCHES / "m2_gzip.log").read_bytes()
    r = runner.invoke(app, ["decode-batch", "-", "--format", "jsonl"], input=data)
    assert r.exit_code == 0, r.output
    rows = jsonl(r)
    assert len(records(rows)) == 5 and rows[0]["source"] == "<stdin>"
    assert batch_lines(rows) and all(b["source"] == "<stdin>" for b in batch_lines(rows))


def test_start_position_and_max_bytes():
    p = BATCHES / "txn_commit_abort.log"
    rows = jsonl(run(p, "--batches-only", "--format", "jsonl", "--start-position", 149))
    assert [r["position"] for r in rows] == [149, 223, 301]
    rows = jsonl(run(p, "--batches-only", "--format", "jsonl", "--start-position", 79, "--max-bytes", 145))
    assert [r["position"] for r in rows] == [79, 149, 223]
    r = run(p, "--start-position", 10**6)
    assert r.exit_code == 2 and "past the end" in r.stderr


def test_truncated_tail_is_reported_not_an_error_unless_strict(tmp_path):
    data = (BATCHES / "txn_commit_abort.log").read_bytes()
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data[:-10])
    r = run(p, "--format", "jsonl")
    assert r.exit_code == 0, r.output
    assert "byte 301" in r.stderr and "truncated" in r.stderr
    r = run(p, "--strict")
    assert r.exit_code == 1 and "problems reported: 1 truncated" in r.stderr
    r = run(p, "--summary", "--format", "json")
    assert json.loads(r.stdout)["inputs"][0]["bytes"]["truncated"] == 68


def test_crc_mismatch_exits_1_and_names_file_and_byte(tmp_path):
    data = bytearray((BATCHES / "txn_commit_abort.log").read_bytes())
    data[147] ^= 0x01  # the value "3" of the second batch's only record
    p = tmp_path / "seg.log"
    p.write_bytes(bytes(data))
    r = run(p, "--format", "jsonl")
    assert r.exit_code == 1
    assert f"{p}: byte 96 (batch@79.crc): stored crc 0x" in r.stderr
    rows = jsonl(r)
    assert [o["position"] for o in records(rows)] == [0, 0, 149, 223, 301]
    assert [o["position"] for o in batch_lines(rows)] == [0, 149, 223, 301]  # no line for the bad batch
    r = run(p, "--no-verify-crc", "--format", "jsonl")
    pairs = list(with_batches(jsonl(r)))
    assert r.exit_code == 0 and pairs[2][1]["position"] == pairs[2][0]["position"] == 79
    assert pairs[2][0]["crc_valid"] is None
    r = run(p, "--summary", "--format", "json")
    s = json.loads(r.stdout)["inputs"][0]
    assert r.exit_code == 1 and s["crc_failures"] == 1 and s["bytes"]["skipped"] == 70


def test_partition_directory_reads_every_segment_in_order(tmp_path):
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(encode_batch_v2([(b"a", b"1")], base_offset=0))
    (d / "00000000000000000001.log").write_bytes(encode_batch_v2([(b"b", b"2")], base_offset=1))
    (d / "00000000000000000000.index").write_bytes(b"\x00" * 8)
    rows = jsonl(run(d, "--format", "jsonl"))
    assert [r["offset"] for r in records(rows)] == [0, 1]
    assert [(b["source"], b["base_offset"]) for b in batch_lines(rows)] == [
        (str(d / "00000000000000000000.log"), 0), (str(d / "00000000000000000001.log"), 1)]
    r = run(d, "--summary", "--format", "json")
    assert len(json.loads(r.stdout)["inputs"]) == 2 and json.loads(r.stdout)["total"]["records"] == 2


@pytest.mark.parametrize("args,msg", [
    ([], "no input"),
    (["/nonexistent/x.log"], "no such file"),
    (["--hex", "zz"], "--hex"),
    (["--summary", "--batches-only", "x"], "exclusive"),
    (["-", "-"], "more than once"),
    (["--decode", "bogus", "x"], "bogus"),
    (["--start-position", "-1", "x"], "--start-position"),
])
def test_usage_and_input_errors_exit_2(args, msg):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert msg in r.stderr


def test_index_files_decode_as_indexes(tmp_path):
    p = tmp_path / "00000000000000000000.index"
    p.write_bytes(b"\x00" * 16)
    r = run(p)
    assert r.exit_code == 0 and "2 preallocated empty entries, none written" in r.stderr


def test_empty_directory_exits_2(tmp_path):
    r = run(tmp_path)
    assert r.exit_code == 2 and "no *.log" in r.stderr


def test_empty_file_is_fine(tmp_path):
    p = tmp_path / "e.log"
    p.write_bytes(b"")
    r = run(p, "--summary", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["inputs"][0]["bytes"]["total"] == 0


def test_end_txn_marker_table_row(tmp_path):
    p = tmp_path / "m.log"
    p.write_bytes(encode_end_txn_marker(commit=False, producer_id=3, producer_epoch=1, coordinator_epoch=9))
    r = run(p)
    assert r.exit_code == 0 and "ABORT" in r.stdout and "coordinator epoch 9" in r.stdout


def test_help_and_module_entry_point():
    r = runner.invoke(app, ["decode-batch", "--help"])
    assert r.exit_code == 0 and "--batches-only" in r.stdout
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "kgtool", "decode-batch", str(OFFSETS), "--summary",
                        "--format", "json", "--decode", "offsets"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["inputs"][0]["payload"]["kinds"]["offset_commit"] == 10


def test_man_sections_and_help_text():
    from kgtool.cli import decode_batch

    assert decode_batch.HELP.strip() and set(decode_batch.MAN_SECTIONS) >= {"EXAMPLES", "DIAGNOSTICS", "OUTPUT"}
    # The generator adds DESCRIPTION (from HELP) and the shared EXIT STATUS itself.
    assert not {"DESCRIPTION", "EXIT STATUS"} & set(decode_batch.MAN_SECTIONS)
    for key in RECORD_KEYS + RECORD_OPTIONAL_KEYS + BATCH_LINE_KEYS_IN_A_PARTITION_DIRECTORY:
        assert key in decode_batch.MAN_SECTIONS["OUTPUT"]


@pytest.mark.parametrize("scenario", ["scenario1_generations", "scenario3_transactions_tombstones"])
def test_golden_offsets_payload_kinds_match_kafka(scenario, tmp_path):
    src = ROOT / "fixtures" / "offsets" / scenario
    d = tmp_path / "__consumer_offsets-12"
    d.mkdir()
    shutil.copy(src / "00000000000000000000.log", d / "00000000000000000000.log")
    rows = records(jsonl(run(d, "--format", "jsonl")))
    want = [json.loads(line) for line in (src / "decode.jsonl").read_text().splitlines() if line.strip()]
    want = [w for w in want if w["type"] == "record"]
    assert [r["offset"] for r in rows] == [w["offset"] for w in want]
    for r, w in zip(rows, want):
        if "offsetsTopic" in w:
            assert (r["payload"]["kind"], r["payload"]["tombstone"]) == (w["offsetsTopic"]["kind"],
                                                                         w["offsetsTopic"]["tombstone"])
        else:
            assert r["control"]["type_name"] == w["control"]["type"] and "payload" not in r


def test_progress_bar_on_a_terminal(monkeypatch):
    from kgtool.cli import decode_batch

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    p = decode_batch._ByteProgress.maybe()
    assert p is not None
    p.begin("big.log", 200 * 1024 * 1024, 0)
    p.update(100 * 1024 * 1024)
    assert p.p.tasks[0].completed == 100 * 1024 * 1024
    p.begin("small.log", 1000, 0)  # small inputs get no bar
    assert p.task is None
    p.stop()


def test_pure_python_env_var_gives_the_same_output():
    compiled("kgtool.codec._speedups")  # the run without the variable uses C
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "kgtool", "decode-batch", str(BATCHES / "txn_gzip.log"), str(OFFSETS),
            "--format", "jsonl", "--decode", "offsets"]
    fast = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    pure = subprocess.run(args, capture_output=True, text=True, env=dict(env, KGTOOL_PURE_PYTHON="1"), timeout=120)
    assert fast.returncode == pure.returncode and fast.stdout == pure.stdout and fast.stdout
    probe = "from kgtool.codec import speedups_enabled; print(speedups_enabled())"
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       env=dict(env, KGTOOL_PURE_PYTHON="1"), timeout=60)
    assert p.stdout.strip() == "False"


def test_pure_python_env_var_gives_the_same_summary_messages(tmp_path):
    """--summary with payloads: records the C walk hands back to the Python payload decoder
    name their batch (batch@N) as on the pure-Python path: same stderr, stdout and exit code."""
    from kgtool.coordinator.records import encode_offsets_record

    compiled("kgtool.codec._speedups")  # the run without the variable uses C
    k, v = encode_offsets_record("offset_commit", {"group": "g", "topic": "t", "partition": 0},
                                 {"offset": 5, "metadata": "", "commit_timestamp": 1})
    data = (encode_batch_v2([(b"\x01", b"v"), (k, v)], base_offset=0)
            + encode_batch_v2([(k, v), (k[:5], v)], base_offset=2))
    p = tmp_path / "seg.log"
    p.write_bytes(data)
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    args = [sys.executable, "-m", "kgtool", "decode-batch", str(p), "--decode", "offsets", "--summary"]
    fast = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    pure = subprocess.run(args, capture_output=True, text=True, env=dict(env, KGTOOL_PURE_PYTHON="1"), timeout=120)
    assert fast.returncode == pure.returncode == 1
    assert fast.stderr == pure.stderr and fast.stdout == pure.stdout
    assert "batch@0 offset 0: byte 0 (key)" in fast.stderr
    assert f"batch@{len(data) - len(encode_batch_v2([(k, v), (k[:5], v)], base_offset=2))} offset 3" in fast.stderr


def test_random_bytes_exit_1_not_a_truncated_tail(tmp_path):
    """The first 'batch' of random bytes claims 923 MB: damage, not the tail of an active
    segment; --max-message-size raises the bound a tail may claim."""
    import random

    p = tmp_path / "garbage.log"
    # A good batch first: garbage alone is no log segment at all (exit 2, see below).
    p.write_bytes((BATCHES / "m2_none.log").read_bytes()
                  + struct.pack(">qi", 0x38B4E652E44DA7F2, 923639334) + random.Random(3).randbytes(4988))
    for args in ([], ["--summary"], ["--summary", "--strict"]):
        r = run(p, *args)
        assert r.exit_code == 1 and "problems reported: 1 corrupt" in r.stderr, r.output
        assert "is not a partial batch: its length 923639334 exceeds the largest message size 5242880" in r.stderr
    data = (BATCHES / "txn_commit_abort.log").read_bytes()
    cut = bytearray(data[:-10])
    struct.pack_into(">i", cut, 301 + 8, 6 << 20)  # the last batch claims 6 MiB
    p.write_bytes(bytes(cut))
    r = run(p, "--summary")
    assert r.exit_code == 1 and "1 corrupt" in r.stderr
    r = run(p, "--summary", "--max-message-size", 8 << 20)
    assert r.exit_code == 0 and "truncated tail" in r.stderr, r.output


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_out_of_memory_is_one_line_naming_the_batch(tmp_path, monkeypatch, codec):
    # a failed allocation (a huge batch under a memory limit) is exit 2 with the file and the
    # batch, not an internal error: on the general path and when the C printer's decompression
    # fails (gzip is inflated inside the C walk, beyond this patch's reach)
    from kgtool.codec import compression

    seg = tmp_path / "00000000000000000000.log"
    first = encode_batch_v2([(b"k", b"v")])
    seg.write_bytes(first + encode_batch_v2([(b"k", b"v")], base_offset=1, compression=codec))

    def no_memory(*a, **k):
        raise MemoryError

    monkeypatch.setattr(compression, "decompress", no_memory)
    for extra in ([], ["--summary"]):
        r = run(seg, "--format", "jsonl", *extra)
        assert r.exit_code == 2, r.output
        p = len(first)
        msg = f"{seg}: byte {p} (batch@{p}): not enough memory to decompress its {codec} records"
        assert msg in " ".join(r.output.split()) and "internal error" not in r.output


def test_a_batch_of_many_records_is_printed_chunk_by_chunk(tmp_path):
    # a record bomb streams through every output format, each record counted once
    from kgtool.codec.batch import RECORDS_CHUNK
    from tests.codec.bombs import empty_records_v2, raw_batch_v2

    n = RECORDS_CHUNK + 10
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(raw_batch_v2(empty_records_v2(n), 0, n, base_offset=7))
    out = jsonl(run(seg, "--format", "jsonl"))
    assert len(out) == 1 + n and out[0]["type"] == "batch" and out[0]["record_count"] == n
    assert len(records(out)) == n and {d["offset"] for d in records(out)} == {7}
    r = run(seg)
    assert r.exit_code == 0 and r.output.count("| offset 7 ") == n
    s = json.loads(run(seg, "--summary", "--format", "json").stdout)["inputs"][0]
    assert s["records"] == n and s["null_values"] == n
