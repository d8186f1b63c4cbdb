"""The report's HTML: one file that opens offline.

The page's style and script are package data (``kgtool/report/assets/``), inlined; the data is
JSON in ``<script type="application/json">`` elements: one for the overview (every group, an
array per row in :data:`COLUMNS` order) and one per section, which the script parses only when
its section is opened, so that a page of 5,000 groups opens without parsing the detail of each.
A Content-Security-Policy of ``default-src 'none'`` tells the browser to fetch nothing at all.
"""

from __future__ import annotations

import html
import json
import time
from importlib import resources
from typing import Any

from kgtool.offsets.tables import RULES
from kgtool.report.data import ReportData

#: The overview's row layout (the script reads it from the page).
COLUMNS = ("group", "type", "state", "members", "rebalances", "storms", "findings", "worst", "peak_lag", "spark",
           "section", "index")

_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


def asset(name: str) -> str:
    """A file of ``kgtool/report/assets`` (package data), as text."""
    return resources.files("kgtool.report").joinpath("assets", name).read_text(encoding="utf-8")


def _json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<`` (so no ``</script>`` nor ``<!--``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def render_html(data: ReportData, *, title: str, facts: list[str], meanings: dict[str, str],
                generated_ms: int | None = None) -> str:
    """The page.

    Args:
        data: the model (:func:`kgtool.report.data.gather`).
        title: the page's heading.
        facts: short lines under the heading (inputs, instant audited, counts).
        meanings: one sentence per rule (the overview's hover text).
        generated_ms: when the page was made (epoch ms; default now).
    """
    generated = time.time_ns() // 1_000_000 if generated_ms is None else generated_ms
    rows = []
    for i, o in enumerate(data.overview):
        rows.append([o["group"], o["type"], o["state"], o["members"], o["rebalances"], o["storms"], o["findings"],
                     o["worst"], o["peak_lag"], o["spark"], o.get("section", -1), i])
    meta = {"end": data.meta.get("end"), "lag": data.lag, "rules": list(RULES), "meanings": meanings,
            "generated": generated, "span": list(data.span)}
    overview = {"columns": list(COLUMNS), "meta": meta, "groups": rows}
    esc = html.escape
    lag_head = ('<th data-key="worst">worst lag</th><th data-key="peak_lag" class="num">peak lag</th>'
                if data.lag else "")
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{asset('report.css')}</style></head><body>",
        f'<header><div class="bar"><h1>{esc(title)}</h1><button id="scheme" type="button" '
        f'title="light or dark scheme">light / dark</button></div>',
        "".join(f'<div class="meta">{esc(line)}</div>' for line in facts),
        f'<div class="meta">generated {esc(_iso(generated))}; every time on this page is UTC (+00:00)</div></header>',
        '<section id="overview"><h2>Overview</h2><div class="filters">'
        '<label>rule <select id="f-rule"><option value="">any</option></select></label>'
        '<label>lag status <select id="f-status"><option value="">any</option></select></label>'
        '<label>group <input id="f-text" type="search" placeholder="part of the id"></label>'
        '<span id="overview-count" class="muted"></span></div>'
        '<div class="overview-wrap"><table><thead><tr>'
        '<th data-key="group">group</th><th data-key="type">type</th><th data-key="state">state</th>'
        '<th data-key="members" class="num">members</th><th data-key="rebalances" class="num">rebalances</th>'
        '<th data-key="storms" class="num">storms</th><th data-key="findings">findings by rule</th>'
        f'{lag_head}<th title="commits over the log\'s time span">activity</th></tr></thead>'
        '<tbody id="overview-body"></tbody></table></div></section>',
        '<section id="groups"><h2>Groups with findings or rebalances</h2>'
        '<p class="note">Most findings first; open a group to draw its charts.</p><div id="sections"></div>'
        '<h3>Other groups (<span id="others-count"></span>)</h3><ul class="others" id="others"></ul></section>',
        f'<script type="application/json" id="kg-overview">{_json(overview)}</script>',
    ]
    for i, s in enumerate(data.sections):
        parts.append(f'<script type="application/json" id="kg-s-{i}">{_json(s)}</script>')
    parts.append(f"<script>{asset('report.js')}</script></body></html>\n")
    return "".join(parts)


def _iso(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")
