"""``kgtool.cli.render``: one style for numbers, times and absent values across commands."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from kgtool.cli import render


def test_count_separates_thousands():
    assert render.count(7482) == "7,482"
    assert render.count(209717781) == "209,717,781"
    assert render.count(0) == "0"
    assert render.count(-1234) == "-1,234"
    assert render.count(None) == render.MISSING == "-"
    assert render.count(2.5) == "2.50" and render.count(3.0) == "3"


def test_iso_ms_is_utc_with_milliseconds():
    assert render.iso_ms(0) == "1970-01-01T00:00:00.000Z"
    assert render.iso_ms(1717250580123) == "2024-06-01T14:03:00.123Z"
    assert render.iso_ms(-1) == "-"  # RecordBatch.NO_TIMESTAMP
    assert render.iso_ms(None) == "-"
    assert render.iso_ms(-2) == "1969-12-31T23:59:59.998Z"
    assert render.iso_ms(2**63 - 1) == str(2**63 - 1)  # past year 9999: the number stays visible


def test_table_cells_fold_instead_of_being_cut():
    member = "consumer-1-38efa901-4917-4660-ab66-3e5b989cbac3"
    out = io.StringIO()
    Console(file=out, width=40, color_system=None).print(render.table(["member", "assignment"], [[member, "t: 0-5"]]))
    text = out.getvalue()
    assert "…" not in text
    assert member in "".join(line.strip("│ ").split("│")[0].strip() for line in text.splitlines())


# --- the same style in every command's tables ---------------------------------------------------

DESCRIBE = """\
Topic: __consumer_offsets\tTopicId: 3Mw6sCYwQYKq2h6vQ0Vf7g\tPartitionCount: 4\tReplicationFactor: 3\tConfigs:
\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3
\tTopic: __consumer_offsets\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1
\tTopic: __consumer_offsets\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr:
\tTopic: __consumer_offsets\tPartition: 3\tLeader: 1\tReplicas: 1,3,2\tIsr: 1,3,2
"""


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The cells of the Rich table whose header row starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip("┃│ ").startswith(header))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("│"):
            break
        rows.append([c.strip() for c in ln.strip("│").split("│")])
    return rows


def test_histogram_rows_come_by_load_and_leaderless_shows_as_missing(run, tmp_path):
    from kgtool.coordinator.partitioning import partition_for

    f = tmp_path / "describe.txt"
    f.write_text(DESCRIBE)
    ids = [f"group-{i}" for i in range(1500)]
    r = run(["coordinator-of", "--histogram", "-t", str(f), *ids])
    assert r.exit_code == 0, r.output
    rows = _table_rows(r.stdout, "partition")
    counts = [int(c[2].replace(",", "")) for c in rows]
    assert counts == sorted(counts, reverse=True)
    expected = [0] * 4
    for g in ids:
        expected[partition_for(g, 4)] += 1
    assert {int(c[0]): int(c[2].replace(",", "")) for c in rows} == dict(enumerate(expected))
    assert {c[0]: c[1] for c in rows}["2"] == render.MISSING  # no leader: "-", as in the id table
    brokers = _table_rows(r.stdout, "broker")
    assert [int(b[2].replace(",", "")) for b in brokers] == sorted((int(b[2].replace(",", "")) for b in brokers),
                                                                   reverse=True)
    assert render.MISSING in [b[0] for b in brokers] and "none" not in r.stdout
    assert "1,500 ids over 4 partitions" in " ".join(r.stdout.split())
    ids_table = run(["coordinator-of", "-t", str(f), *ids[:50]])
    assert any(row[2] == render.MISSING for row in _table_rows(ids_table.stdout, "group_id"))


def test_counts_have_thousands_separators_in_every_command(run, tmp_path):
    # decode-batch: sizes in the summary (209717781 read as 209,717,781)
    from kgtool.codec import encode_batch_v2

    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(encode_batch_v2([(b"k", b"v" * 100)] * 20, base_offset=i * 20) for i in range(30)))
    size = seg.stat().st_size
    r = run(["decode-batch", str(seg), "--summary"])
    assert r.exit_code == 0 and f"{size:,} total" in r.stdout and "600 (0 control)" in r.stdout
    # assign: members and partitions
    g = tmp_path / "g.yaml"
    g.write_text("topics: {t: 1200}\nmembers: [{id: a, topics: [t]}, {id: b, topics: [t]}]\n")
    r = run(["assign", str(g), "-a", "range"])
    assert r.exit_code == 0 and "1,200 partitions assigned" in " ".join(r.stdout.split())
    # JSON keeps raw numbers
    doc = json.loads(run(["assign", str(g), "-a", "range", "--format", "json"]).stdout)
    assert doc["stats"]["assigned"] == 1200


# --- the one JSON writer ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", [render.OutputFormat.json, render.OutputFormat.jsonl])
def test_json_out_frames_objects_and_encoded_text_alike(capsys, fmt):
    rows = [{"id": "é", "n": 1}, {"id": "b", "n": [2, 3]}, {"id": "c", "n": None}]
    out = render.JsonOut(fmt)
    out.item(rows[0])
    out.texts([out.dumps(rows[1])])
    out.texts([])
    out.text(out.dumps(rows[2]))
    out.close()
    text = capsys.readouterr().out
    if fmt is render.OutputFormat.jsonl:
        assert text == "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)
    else:
        assert json.loads(text) == rows
        assert text.startswith("[\n  {") and text.endswith("}\n]\n") and text.count("\n") == 5
        assert "é" in text


@pytest.mark.parametrize("fmt, expected", [(render.OutputFormat.json, "[]\n"), (render.OutputFormat.jsonl, "")])
def test_json_out_without_items(capsys, fmt, expected):
    out = render.JsonOut(fmt)
    out.items([])
    out.close()
    assert capsys.readouterr().out == expected


def test_json_document_with_raw_parts_reads_as_print_json(capsys):
    doc = {"group": "g-é", "ok": False, "stats": {"min": 1, "per": [1, 2]}, "rows": [{"a": 1}, {"a": 2}], "none": []}
    render.print_json(doc)
    pretty = capsys.readouterr().out
    rows = render.RawJson(render.json_array_text([json.dumps(r) for r in doc["rows"]], "  "))
    mixed = render.json_document([(k, rows if k == "rows" else v) for k, v in doc.items()])
    assert json.loads(mixed) == doc
    assert render.json_document(doc.items()) == pretty
    assert '"rows": [\n    {"a": 1},\n    {"a": 2}\n  ],' in mixed
    assert render.json_array_text([], "  ") == "[]"
