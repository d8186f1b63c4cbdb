"""Benchmark of ``spark-audit --report``: the chart library chosen on numbers, and the page of a
5,000-group log in headless Chromium (tests/browser.py), against the issue's targets (opens in
under 3 s, under 20 MB).

1. Candidates. The same synthetic page for each: an overview of ``--groups`` rows (a table) and
   ``--sections`` time-series charts of ``--points`` points (a line of committed offsets and 10
   marks, as a group's section draws), the first ``--eager`` drawn at load and the rest on
   demand. Measured: the bytes the library adds inlined, the page's load time (navigation start
   to the first charts drawn, asynchronous renderers awaited), and the time to draw every
   remaining chart (what opening every section costs). Candidates:

   - ``plotly``: plotly.js inlined (``plotly.offline.get_plotlyjs()``, what
     ``include_plotlyjs=True`` writes), ``Plotly.newPlot``;
   - ``bokeh``: BokehJS inline resources (``bokeh.resources.Resources(mode="inline")`` with the
     ``bokeh-api`` bundle for drawing from the page's script), ``Bokeh.Plotting``;
   - ``vega-lite``: the Vega, Vega-Lite and vega-embed bundle that Altair inlines
     (``vl_convert.javascript_bundle()``, Altair's ``inline=True``), ``vegaEmbed``;
   - ``uplot``: uPlot (MIT), vendored as it would be, from the npm registry (``npm pack
     uplot@1.6.32`` into ``benchmarks/.data``);
   - ``svg``: no library: an SVG string per chart, as kgtool/report/assets/report.js writes.

   Missing Python packages are reported and left out: ``pip install plotly bokeh altair
   vl-convert-python`` (not kgtool dependencies: they are measured, not used).

2. kgtool's page: the log of tests/report/many_groups.py (``--groups`` groups, one in 10 with a
   rewind and a rebalance, one in 50 with a storm), audited by ``kgtool spark-audit LOG --report``
   as a whole process; the page's size, its load time (best and median of ``--repeat``), and the
   time to open every section (each drawing its charts).

    PYTHONPATH=. python benchmarks/bench_report.py
    PYTHONPATH=. python benchmarks/bench_report.py --groups 5000 --repeat 5 --json report-bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.browser import Browser  # noqa: E402

DATA = HERE / ".data"
UPLOT = "uplot@1.6.32"
TARGET_SECONDS = 3.0
TARGET_BYTES = 20_000_000


# ---- 1. the candidates ----------------------------------------------------------------------------
def _uplot() -> tuple[str, str]:
    """uPlot's minified script and its CSS, from the npm registry's tarball (kept in .data)."""
    DATA.mkdir(exist_ok=True)
    tgz = next(DATA.glob("uplot-*.tgz"), None)
    if tgz is None:
        subprocess.run(["npm", "pack", UPLOT, "--pack-destination", str(DATA)], check=True, capture_output=True)
        tgz = next(DATA.glob("uplot-*.tgz"))
    with tarfile.open(tgz) as tf:
        js = tf.extractfile("package/dist/uPlot.iife.min.js").read().decode()
        style = tf.extractfile("package/dist/uPlot.min.css").read().decode()
    return js, style


# Each candidate: (library code inlined, extra CSS, a JS function draw(div, chart) -> maybe a promise).
def candidates() -> dict[str, tuple[str, str, str] | str]:
    out: dict[str, tuple[str, str, str] | str] = {}
    try:
        from plotly.offline import get_plotlyjs

        out["plotly"] = (get_plotlyjs(), "", """function draw(div, c) {
          return Plotly.newPlot(div, [{x: c.t, y: c.v, type: 'scatter', mode: 'lines'},
            {x: c.mt, y: c.mv, type: 'scatter', mode: 'markers'}],
            {width: 900, height: 220, margin: {l: 50, r: 10, t: 10, b: 30}, showlegend: false,
             xaxis: {type: 'date'}}, {displayModeBar: false});
        }""")
    except ImportError:
        out["plotly"] = "pip install plotly"
    try:
        from bokeh.resources import Resources

        js = "\n".join(Resources(mode="inline", components=["bokeh", "bokeh-api"]).js_raw)
        out["bokeh"] = (js, "", """function draw(div, c) {
          const p = Bokeh.Plotting.figure({width: 900, height: 220, x_axis_type: 'datetime', tools: 'hover,pan'});
          p.line({x: c.t, y: c.v});
          p.scatter({x: c.mt, y: c.mv, size: 8});
          return Bokeh.Plotting.show(p, div);
        }""")
    except ImportError:
        out["bokeh"] = "pip install bokeh"
    try:
        import vl_convert

        out["vega-lite"] = (vl_convert.javascript_bundle(), "", """function draw(div, c) {
          const values = c.t.map((t, i) => ({t: t, v: c.v[i]}));
          return vegaEmbed(div, {$schema: 'https://vega.github.io/schema/vega-lite/v5.json', width: 900, height: 200,
            data: {values: values}, mark: 'line', encoding: {x: {field: 't', type: 'temporal'},
            y: {field: 'v', type: 'quantitative'}}}, {actions: false, renderer: 'svg'});
        }""")
    except ImportError:
        out["vega-lite"] = "pip install altair vl-convert-python"
    try:
        js, style = _uplot()
        out["uplot"] = (js, style, """function draw(div, c) {
          new uPlot({width: 900, height: 220, series: [{}, {stroke: '#0072B2'}, {stroke: '#D55E00', paths: () => null,
            points: {show: true, size: 8}}]}, [c.t.map(t => t / 1000), c.v, c.v.map((v, i) => i % 30 ? null : v)], div);
        }""")
    except (OSError, subprocess.CalledProcessError, StopIteration) as exc:
        out["uplot"] = f"npm pack {UPLOT} failed: {exc}"
    out["svg"] = ("", "", """function draw(div, c) {
      const t0 = c.t[0], t1 = c.t[c.t.length - 1], hi = Math.max.apply(null, c.v), lo = Math.min.apply(null, c.v);
      const x = t => 60 + (t - t0) / (t1 - t0) * 830, y = v => 200 - (v - lo) / (hi - lo || 1) * 180;
      let s = '<svg class="chart" viewBox="0 0 900 220"><polyline fill="none" stroke="#0072B2" points="' +
        c.t.map((t, i) => x(t).toFixed(1) + ',' + y(c.v[i]).toFixed(1)).join(' ') + '"/>';
      c.mt.forEach((t, i) => { s += '<circle cx="' + x(t) + '" cy="' + y(c.mv[i]) + '" r="4"><title>mark ' + i + '</title></circle>'; });
      div.innerHTML = s + '</svg>';
    }""")
    return out


def synthetic_page(library: str, style: str, draw: str, groups: int, sections: int, points: int, eager: int) -> str:
    t0 = 1_717_171_200_000
    charts = []
    for k in range(sections):
        t = [t0 + i * 12_000 for i in range(points)]
        v = [i * 10 + (k % 7) * 3 - (500 if i == points // 2 else 0) for i in range(points)]
        charts.append({"t": t, "v": v, "mt": t[::30], "mv": v[::30]})
    rows = [[f"svc-{i:05d}", "classic", "Stable", 2, i % 7, 0] for i in range(groups)]
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; script-src 'unsafe-inline' "
            "'unsafe-eval'; style-src 'unsafe-inline'; img-src data:\">"
            f"<style>{style}</style></head><body><table><tbody id='rows'></tbody></table><div id='charts'></div>"
            f"<script>{library}</script>"
            f"<script type='application/json' id='data'>{json.dumps({'rows': rows, 'charts': charts})}</script>"
            "<script>{" + draw + """
            const d = JSON.parse(document.getElementById('data').textContent);
            document.getElementById('rows').innerHTML = d.rows.map(r => '<tr><td>' + r.join('</td><td>') + '</td></tr>').join('');
            const box = document.getElementById('charts');
            const divs = d.charts.map(() => { const e = document.createElement('div'); box.appendChild(e); return e; });
            window.drawn = 0;
            window.drawRange = async function (a, b) {
              for (let i = a; i < b; i++) { await draw(divs[i], d.charts[i]); window.drawn++; }
            };
            window.firstDrawn = window.drawRange(0, """ + str(eager) + """).then(() => performance.now());
            }</script></body></html>""")


def measure_candidates(args: argparse.Namespace, tmp: Path) -> list[dict]:
    results = []
    for name, c in candidates().items():
        if isinstance(c, str):
            print(f"{name}: not measured ({c})", file=sys.stderr)
            results.append({"candidate": name, "skipped": c})
            continue
        library, style, draw = c
        page = tmp / f"candidate-{name}.html"
        page.write_text(synthetic_page(library, style, draw, args.groups, args.sections, args.points, args.eager),
                        encoding="utf-8")
        loads, rest = [], []
        for _ in range(args.repeat):
            with Browser() as browser:  # a fresh one: the previous page's garbage does not count
                loads.append(_first_drawn(browser, page))
                rest.append(browser.evaluate(f"(async () => {{ const t = performance.now(); "
                                             f"await window.drawRange({args.eager}, {args.sections}); "
                                             f"return performance.now() - t; }})()") / 1000)
                _clean(browser, page, name)
        results.append({"candidate": name, "library_bytes": len(library.encode()) + len(style.encode()),
                        "page_bytes": page.stat().st_size, "load_s": min(loads), "load_median_s": statistics.median(loads),
                        "draw_rest_s": min(rest), "per_chart_ms": 1000 * min(rest) / max(1, args.sections - args.eager)})
    return results


def _first_drawn(browser: Browser, page: Path) -> float:
    """Seconds from navigation start to the first charts drawn (asynchronous renderers awaited)."""
    browser.open(page)
    return browser.evaluate("window.firstDrawn") / 1000


def _clean(browser: Browser, page: Path, name: str) -> None:
    """No script error, nothing fetched: else the figures are not comparable."""
    if browser.errors():
        raise SystemExit(f"{name}: script errors: {browser.errors()[:3]}")
    if browser.requests(page):
        raise SystemExit(f"{name}: network requests: {browser.requests(page)[:3]}")


# ---- 2. kgtool's page -------------------------------------------------------------------------------
def measure_kgtool(args: argparse.Namespace, tmp: Path) -> dict:
    from tests.report import many_groups

    log = tmp / "log"
    many_groups.write(str(log), args.groups)
    page = tmp / "audit.html"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kgtool", "spark-audit", str(log), "--master", "local[2]",
                           "--report", str(page)], capture_output=True, text=True)
    audit_s = time.monotonic() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"spark-audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    loads, opens = [], []
    for _ in range(args.repeat):
        with Browser() as browser:
            loads.append(browser.open(page))
            opens.append(browser.evaluate("""new Promise(done => {
              const t = performance.now(), ds = document.querySelectorAll('details.group');
              ds.forEach(d => { d.open = true; });
              setTimeout(() => done([performance.now() - t, ds.length, document.querySelectorAll('svg.chart').length]), 0);
            })"""))
            _clean(browser, page, "kgtool's page")
    return {"groups": args.groups, "page_bytes": page.stat().st_size, "audit_process_s": audit_s,
            "load_s": min(loads), "load_median_s": statistics.median(loads), "sections": opens[0][1],
            "charts": opens[0][2], "open_all_s": min(o[0] for o in opens) / 1000}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=5000)
    p.add_argument("--sections", type=int, default=500, help="charts of the synthetic pages")
    p.add_argument("--points", type=int, default=300, help="points per chart")
    p.add_argument("--eager", type=int, default=20, help="charts drawn at load")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kgtool-bench-report-") as d:
        tmp = Path(d)
        cands = measure_candidates(args, tmp)
        kg = measure_kgtool(args, tmp)
    print(f"chart libraries: {args.groups:,} overview rows, {args.sections} charts of {args.points} points, "
          f"{args.eager} drawn at load; best of {args.repeat} (median)")
    print(f"{'candidate':<10} {'library':>12} {'page':>12} {'load':>14} {'other charts':>13} {'per chart':>10}")
    for r in cands:
        if "skipped" in r:
            print(f"{r['candidate']:<10} not measured: {r['skipped']}")
            continue
        print(f"{r['candidate']:<10} {r['library_bytes']:>12,} {r['page_bytes']:>12,} "
              f"{r['load_s']:>6.2f} s ({r['load_median_s']:.2f}) {r['draw_rest_s']:>11.2f} s {r['per_chart_ms']:>7.1f} ms")
    ok = kg["load_s"] < TARGET_SECONDS and kg["page_bytes"] < TARGET_BYTES
    print(f"kgtool's page of {kg['groups']:,} groups: {kg['page_bytes']:,} bytes (target < {TARGET_BYTES:,}), "
          f"loads in {kg['load_s']:.2f} s (median {kg['load_median_s']:.2f}; target < {TARGET_SECONDS} s); opening its "
          f"{kg['sections']:,} sections draws {kg['charts']:,} charts in {kg['open_all_s']:.2f} s; the audit process "
          f"took {kg['audit_process_s']:.1f} s" + ("" if ok else "  ** TARGET MISSED **"))
    if args.json:
        args.json.write_text(json.dumps({"candidates": cands, "kgtool": kg}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
