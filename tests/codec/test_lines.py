"""The one schema of decode-batch's lines (kgtool.codec.lines): docs/reference/jsonl.md's tables are its
rendering, both writers follow its field order, and a plain record line stays lean."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.codec import encode_batch_v2, encode_end_txn_marker, lines, speedups_enabled
from kgtool.codec import printer

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _reference_tables() -> list[list[str]]:
    text = (ROOT / "docs" / "reference" / "jsonl.md").read_text()
    return [m.group(0).splitlines() for m in re.finditer(r"^\| field \| type \| meaning \|\n(?:\|.*\n)+", text, re.M)]


def test_the_reference_tables_are_the_schema():
    tables = _reference_tables()
    assert tables[0] == lines.readme_table(lines.BATCH_FIELDS)
    assert tables[1] == lines.readme_table(lines.RECORD_FIELDS)


def _segment(tmp_path: Path) -> Path:
    d = tmp_path / "orders-3"
    d.mkdir()
    data = encode_batch_v2([(b"k", b"v", [("h", b"1")]), (None, b"w")], base_offset=0, producer_id=5,
                           producer_epoch=1, base_sequence=0)
    data += encode_end_txn_marker(commit=True, producer_id=5, producer_epoch=1, coordinator_epoch=3, base_offset=2)
    seg = d / "00000000000000000000.log"
    seg.write_bytes(data)
    return seg


@pytest.mark.parametrize("c_walk", [True, False])
def test_both_writers_follow_the_schema_order(tmp_path, monkeypatch, c_walk):
    if c_walk and not speedups_enabled():
        pytest.skip("the C extension is not built")
    if not c_walk:
        monkeypatch.setattr(printer._batch, "speedups", lambda: None)
    r = runner.invoke(app, ["decode-batch", str(_segment(tmp_path)), "--format", "jsonl"])
    assert r.exit_code == 0, r.stderr
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [o["type"] for o in objs] == ["batch", "record", "record", "batch", "record"]
    for o in objs:
        names = lines.BATCH_NAMES if o["type"] == lines.BATCH else lines.RECORD_NAMES
        assert list(o) == [n for n in names if n in o]  # schema order, optional keys left out
    assert set(objs[0]) == set(lines.BATCH_NAMES)  # topic and partition from orders-3/
    assert set(objs[1]) == set(lines.RECORD_NAMES) - {"control", "payload", "payload_error"}
    assert list(objs[4]["control"]) == list(lines.CONTROL_NAMES)
    pairs = list(lines.with_batches(objs))
    assert [(b["base_offset"], rec["offset"]) for b, rec in pairs] == [(0, 0), (0, 1), (2, 2)]
    assert all(rec["position"] == b["position"] for b, rec in pairs)


def test_a_plain_data_record_line_is_within_120_bytes_beside_key_and_value(tmp_path):
    # Positions and offsets of a big partition: a 1 GiB segment, offsets past ten billion.
    rnd = random.Random(3)
    recs = [(f"user-{rnd.randrange(10**9)}".encode(), rnd.randbytes(100)) for _ in range(50)]
    seg = tmp_path / "00000000010000000000.log"
    seg.write_bytes(encode_batch_v2(recs, base_offset=10_000_000_000, timestamp=1_717_000_000_000))
    r = runner.invoke(app, ["decode-batch", str(seg), "--format", "jsonl"])
    for line in r.stdout.splitlines():
        o = json.loads(line)
        if o["type"] == lines.RECORD:
            assert len(line.encode()) - len(o["key"]) - len(o["value"]) <= 120 - 10  # room for a 10-digit position
