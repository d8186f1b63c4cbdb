"""``spark-audit --report``: the page of the shipped sample, of a 5,000-group log and of the lag
scenario, opened in headless Chromium (tests/browser.py) and judged as a reader would: no script
error, nothing fetched, a row per group, a section per group with findings, charts once opened."""

from __future__ import annotations

import os

import pytest

from tests.report import many_groups
from tests.report.conftest import ARTIFACTS

pytestmark = pytest.mark.spark

SECTIONS = "Array.from(document.querySelectorAll('details.group')).map(d => d.dataset.group)"
OPEN_ALL = """new Promise(done => {
  const sections = document.querySelectorAll('details.group');
  sections.forEach(d => { d.open = true; });
  // the toggle events (which draw) are queued: count once they have run
  setTimeout(() => done(Array.from(sections).map(d => d.querySelectorAll('svg.chart').length)), 0);
})"""


def look(browser, page) -> dict:
    """Open the page; what a reader sees before opening anything, checked for script errors and
    network requests (none allowed)."""
    seconds = browser.open(page)
    seen = {
        "seconds": seconds,
        "ready": browser.evaluate("window.kgReport && window.kgReport.ready"),
        "rows": browser.evaluate("document.querySelectorAll('#overview-body tr').length"),
        "sections": browser.evaluate(SECTIONS),
        "drawn": browser.evaluate("document.querySelectorAll('svg.chart').length"),
        "headers": browser.evaluate("Array.from(document.querySelectorAll('#overview th')).map(h => h.textContent)"),
    }
    assert browser.errors() == []
    assert seen["ready"] is True
    return seen


def open_all(browser, page) -> list[int]:
    charts = browser.evaluate(OPEN_ALL)
    assert browser.errors() == []
    assert browser.requests(page) == [], "the page fetched something"
    return charts


def finding_groups(summary) -> set[str]:
    return {w["group"] for w in summary["worst_groups"]} | {f["group"] for f in summary["findings"]}


def test_sample_page(browser, sample_report):
    page, code, summary, stderr = sample_report
    assert code == 1  # findings: the audit succeeded, so the report is written
    assert "report of 17 group(s)" in stderr
    seen = look(browser, page)
    assert seen["rows"] == summary["groups"] == 17
    assert seen["drawn"] == 0  # charts are drawn when a section is opened
    assert finding_groups(summary) <= set(seen["sections"])
    assert len(seen["sections"]) == len(set(seen["sections"]))
    assert "worst lag" not in seen["headers"]  # no data partitions: no lag column
    charts = open_all(browser, page)
    assert len(charts) == len(seen["sections"]) and min(charts) >= 1
    # the consumer-protocol group with the slow revocation has its reconciliation drawn
    at = seen["sections"].index("search-indexer")
    kinds = browser.evaluate(f"Array.from(document.querySelectorAll('#s-{at} svg.chart')).map(s => s.classList[1])")
    assert "timeline" in kinds and "reconciliation" in kinds
    # each finding's sentence is the hover text of its mark
    titles = browser.evaluate("Array.from(document.querySelectorAll('svg.timeline title')).map(t => t.textContent)")
    for f in summary["findings"]:
        assert any(f["message"] in t for t in titles), f["rule"]
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-sample.png"
    browser.evaluate("document.getElementById('s-0').scrollIntoView()")
    browser.screenshot(shot)
    assert shot.stat().st_size > 10_000
    print(f"screenshot of the sample's report: {shot}")


def test_overview_sorts_and_filters(browser, sample_report):
    page, _code, summary, _stderr = sample_report
    look(browser, page)
    first = "document.querySelector('#overview-body tr td').textContent"
    browser.evaluate("document.querySelector('#overview th[data-key=group]').click()")
    assert browser.evaluate(first) == min(w for w in browser.evaluate(
        "Array.from(document.querySelectorAll('#overview-body tr td:first-child')).map(t => t.textContent)"))
    browser.evaluate("const s = document.getElementById('f-rule'); s.value = 'zombie'; s.dispatchEvent(new Event('change'))")
    assert browser.evaluate("document.querySelectorAll('#overview-body tr').length") == summary["findings_by_rule"]["zombie"]
    assert browser.evaluate(first) == "orders-app"
    # a group's link opens its section, which draws its charts
    browser.evaluate("document.querySelector('#overview-body a').click()")
    browser.evaluate("new Promise(r => setTimeout(r, 0))")
    assert browser.evaluate("document.querySelector('details.group[data-group=\"orders-app\"]').open") is True
    assert browser.evaluate("document.querySelectorAll('details.group[data-group=\"orders-app\"] svg.chart').length") >= 1
    assert browser.errors() == []


def test_dark_scheme(browser, sample_report):
    page = sample_report[0]
    look(browser, page)
    light = browser.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    browser.evaluate("document.getElementById('scheme').click()")
    dark = browser.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert light != dark
    assert browser.errors() == []


def test_five_thousand_groups(browser, many_groups_report):
    page, code, summary, stderr = many_groups_report
    want = many_groups.expected(5000)
    assert code == 1
    assert summary["groups"] == want["groups"]
    assert summary["findings_by_rule"] == {"rewind": want["rewind"], "rebalance-storm": want["rebalance-storm"]}
    size = os.path.getsize(page)
    assert size < 20_000_000
    seen = look(browser, page)
    print(f"5,000-group page: {size:,} bytes, loaded in {seen['seconds']:.2f} s")  # timed by benchmarks/bench_report.py
    assert seen["rows"] == want["groups"]
    assert len(seen["sections"]) == want["sections"]
    assert set(seen["sections"]) == {many_groups.group_id(i) for i in range(0, 5000, many_groups.REWIND_EVERY)}
    # the groups with the most findings come first: the storms' groups (a rewind and a storm each)
    storms = {many_groups.group_id(i) for i in range(0, 5000, many_groups.STORM_EVERY)}
    assert set(seen["sections"][:len(storms)]) == storms
    charts = open_all(browser, page)
    assert len(charts) == want["sections"] and min(charts) >= 2  # the timeline and the committed offsets


def section_data(page, i: int) -> dict:
    """The JSON of section ``i`` as the page carries it."""
    import json

    text = page.read_text(encoding="utf-8")
    tag = f'<script type="application/json" id="kg-s-{i}">'
    start = text.index(tag) + len(tag)
    return json.loads(text[start:text.index("</script>", start)])


def test_five_thousand_groups_keeps_the_rewind(many_groups_report):
    """The downsampled committed offsets keep each bucket's minimum: the rewind to 50 is drawn."""
    section = section_data(many_groups_report[0], 0)
    assert section["group"] == many_groups.group_id(0)
    series = section["offsets"]["t0-0"]
    assert min(p[1] for p in series) == 50  # [time, min, max, last]
    assert max(p[2] for p in series) == 300


def test_lag_page(browser, lag_report):
    page, code, findings, tables = lag_report
    assert code == 1
    assert {f["rule"] for f in findings} >= {"lag-stall", "consumer-stopped"}
    assert (tables / "lag").is_dir()  # --out kept the tables the report was drawn from
    seen = look(browser, page)
    assert "worst lag" in seen["headers"] and "peak lag" in seen["headers"]
    assert seen["rows"] == 4
    statuses = browser.evaluate("Array.from(document.querySelectorAll('#overview-body .status')).map(s => s.textContent)")
    assert "STALL" in statuses
    # the worst lag agrees with the findings (issue 42): the stopped group's is STOP, beside its
    # consumer-stopped finding (the lag table goes on after its last commit)
    from kgtool.report.data import gather

    worst = {o["group"]: o["worst"] for o in gather(str(tables), "jsonl").overview}
    assert worst == {"stalled": "STALL", "stopper": "STOP", "slow": "STALL", "healthy": "OK"}
    assert "STOP" in statuses
    charts = open_all(browser, page)
    assert min(charts) >= 4  # timeline, committed offsets, lag in records, lag in ms
    from kgtool.report.data import BUCKETS

    # 120 commits and a row a minute over 20 minutes per partition: reduced to at most BUCKETS points
    stalled = next(section_data(page, i) for i in range(3) if section_data(page, i)["group"] == "stalled")
    assert all(0 < len(points) <= BUCKETS for points in stalled["lag"].values())
    assert max(p[1] for p in stalled["lag"]["orders-0"]) == 900  # the peak lag (records) kept
    assert {p[3] for p in stalled["lag"]["orders-0"]} >= {"OK", "STALL"}
    strips = browser.evaluate("document.querySelectorAll('svg.series rect title').length")
    assert strips > 0  # Burrow's status through time
    heads = browser.evaluate("Array.from(document.querySelectorAll('.describe th')).map(h => h.textContent)")
    for column in ("GROUP", "COORDINATOR (ID)", "CONSUMER-ID", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-MS",
                   "STATUS"):
        assert column in heads
