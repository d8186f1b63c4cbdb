"""``kgtool.cli.render``: one style for numbers, times and absent values across commands."""

from __future__ import annotations

import io

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
