/* kgtool spark-audit --report: draws the page from the JSON embedded in it.
 *
 * Nothing is fetched: the overview's data is in <script id="kg-overview">, each section's in
 * <script id="kg-s-N"> (type application/json, parsed only when the section is opened), and
 * the charts are SVG written here (benchmarks/bench_report.py measured this against Plotly,
 * Bokeh, Vega-Lite and uPlot). Hover text is SVG <title>, which every browser shows and
 * needs no script. Times are UTC, written with their offset (+00:00).
 */
(function () {
  "use strict";
  var doc = document;
  var RULE_COLOURS = {
    "rewind": "--c-blue", "zombie": "--c-vermillion", "orphan": "--c-purple", "epoch-regression": "--c-sky",
    "expiring": "--c-orange", "aborted-txn": "--c-black", "pending-txn": "--c-green", "rebalance-storm": "--c-vermillion",
    "slow-revocation": "--c-orange", "lag-stall": "--c-purple", "consumer-stopped": "--c-vermillion",
    "lag-growing": "--c-orange"
  };
  // Each rule's mark also has a letter, so that a grey print tells them apart.
  var RULE_LETTERS = {
    "rewind": "R", "zombie": "Z", "orphan": "O", "epoch-regression": "E", "expiring": "X", "aborted-txn": "A",
    "pending-txn": "P", "rebalance-storm": "S", "slow-revocation": "V", "lag-stall": "L", "consumer-stopped": "T",
    "lag-growing": "G"
  };
  var STATUS_VARS = {"OK": "--ok", "WARN": "--warn", "ERR": "--err", "STOP": "--stop", "STALL": "--stall",
                     "REWIND": "--rewind", "NOTFOUND": "--muted"};
  var STATUS_RANK = {"NOTFOUND": 0, "OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6};
  var SERIES = ["--c-blue", "--c-orange", "--c-green", "--c-vermillion", "--c-purple", "--c-sky", "--c-black",
                "--c-yellow"];
  var DASHES = ["", "6 3", "2 2", "8 3 2 3"];

  function el(id) { return doc.getElementById(id); }
  function css(v) { return "var(" + v + ")"; }
  function esc(s) {
    return String(s == null ? "" : s).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"}[c];
    });
  }
  function iso(ms) {
    if (ms == null) { return "-"; }
    return new Date(ms).toISOString().replace("Z", "+00:00");
  }
  // Thousands separators (7,482) as the console prints them; toLocaleString, which goes through
  // Intl, took a third of the load time of a 5,000-group page.
  function num(n) { return n == null ? "-" : String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function dur(ms) {
    if (ms == null) { return "-"; }
    if (ms < 1000) { return ms + " ms"; }
    var s = ms / 1000;
    if (s < 120) { return (Math.round(s * 10) / 10) + " s"; }
    if (s < 7200) { return (Math.round(s / 6) / 10) + " min"; }
    return (Math.round(s / 360) / 10) + " h";
  }
  function short(n) {
    var a = Math.abs(n);
    if (a >= 1e9) { return (n / 1e9).toFixed(1) + "G"; }
    if (a >= 1e6) { return (n / 1e6).toFixed(1) + "M"; }
    if (a >= 1e4) { return (n / 1e3).toFixed(0) + "k"; }
    return String(Math.round(n));
  }

  var model = JSON.parse(el("kg-overview").textContent);
  var meta = model.meta;
  var columns = model.columns;  // overview rows are arrays in this order
  var C = {};
  columns.forEach(function (c, i) { C[c] = i; });
  var rows = model.groups;

  // ---- scheme ---------------------------------------------------------------------------------
  var scheme = el("scheme");
  scheme.addEventListener("click", function () {
    var root = doc.documentElement;
    var dark = root.getAttribute("data-scheme") === "dark" ||
      (!root.getAttribute("data-scheme") && window.matchMedia("(prefers-color-scheme: dark)").matches);
    root.setAttribute("data-scheme", dark ? "light" : "dark");
  });

  // ---- overview -------------------------------------------------------------------------------
  var ruleSelect = el("f-rule"), statusSelect = el("f-status"), textFilter = el("f-text");
  var present = {}, statuses = {};
  rows.forEach(function (r) {
    Object.keys(r[C.findings]).forEach(function (k) { present[k] = 1; });
    if (r[C.worst]) { statuses[r[C.worst]] = 1; }
  });
  meta.rules.forEach(function (k) {
    if (present[k]) { ruleSelect.insertAdjacentHTML("beforeend", "<option>" + esc(k) + "</option>"); }
  });
  Object.keys(statuses).sort(function (a, b) { return STATUS_RANK[b] - STATUS_RANK[a]; }).forEach(function (s) {
    statusSelect.insertAdjacentHTML("beforeend", "<option>" + esc(s) + "</option>");
  });
  if (!meta.lag) { statusSelect.parentNode.style.display = "none"; }

  var sortKey = null, sortDir = 1;
  function total(r) { var n = 0, f = r[C.findings]; for (var k in f) { n += f[k]; } return n; }
  var KEYS = {
    group: function (r) { return r[C.group]; }, type: function (r) { return r[C.type] || ""; },
    state: function (r) { return r[C.state] || ""; }, members: function (r) { return r[C.members]; },
    rebalances: function (r) { return r[C.rebalances]; }, storms: function (r) { return r[C.storms]; },
    findings: total, worst: function (r) { return STATUS_RANK[r[C.worst]] || -1; },
    peak_lag: function (r) { return r[C.peak_lag] == null ? -1 : r[C.peak_lag]; }
  };
  function findingsCell(f) {
    var out = "";
    meta.rules.forEach(function (k) {
      if (f[k]) {
        out += "<span class=\"rule\" style=\"color:" + css(RULE_COLOURS[k]) + "\" title=\"" + esc(meta.meanings[k]) +
          "\">" + RULE_LETTERS[k] + " " + esc(k) + " " + num(f[k]) + "</span>";
      }
    });
    return out;
  }
  function link(r) {
    var s = r[C.section];
    return s >= 0 ? "<a href=\"#s-" + s + "\">" + esc(r[C.group]) + "</a>" :
      "<a href=\"#o-" + r[C.index] + "\">" + esc(r[C.group]) + "</a>";
  }
  function drawOverview() {
    var rule = ruleSelect.value, status = statusSelect.value, text = textFilter.value.toLowerCase();
    var shown = rows.filter(function (r) {
      return (!rule || r[C.findings][rule]) && (!status || r[C.worst] === status) &&
        (!text || r[C.group].toLowerCase().indexOf(text) >= 0);
    });
    if (sortKey) {
      var key = KEYS[sortKey];
      shown.sort(function (a, b) {
        var x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * sortDir || (a[C.group] < b[C.group] ? -1 : 1);
      });
    }
    var html = [];
    for (var i = 0; i < shown.length; i++) {
      var r = shown[i];
      html.push("<tr><td>" + link(r) + "</td><td>" + esc(r[C.type] || "-") + "</td><td>" + esc(r[C.state] || "-") +
        "</td><td class=\"num\">" + num(r[C.members]) + "</td><td class=\"num\">" + num(r[C.rebalances]) +
        "</td><td class=\"num\">" + num(r[C.storms]) + "</td><td>" + findingsCell(r[C.findings]) + "</td>" +
        (meta.lag ? "<td><span class=\"status " + esc(r[C.worst] || "") + "\">" + esc(r[C.worst] || "-") +
          "</span></td><td class=\"num\">" + num(r[C.peak_lag]) + "</td>" : "") +
        "<td class=\"spark\" title=\"commits over the log's time span\">" + esc(r[C.spark]) + "</td></tr>");
    }
    el("overview-body").innerHTML = html.join("");
    el("overview-count").textContent = num(shown.length) + " of " + num(rows.length) + " group(s) shown";
  }
  [ruleSelect, statusSelect].forEach(function (s) { s.addEventListener("change", drawOverview); });
  textFilter.addEventListener("input", drawOverview);
  Array.prototype.forEach.call(doc.querySelectorAll("#overview th[data-key]"), function (th) {
    th.addEventListener("click", function () {
      var k = th.getAttribute("data-key");
      sortDir = sortKey === k ? -sortDir : (k === "group" || k === "type" || k === "state" ? 1 : -1);
      sortKey = k;
      Array.prototype.forEach.call(doc.querySelectorAll("#overview th"), function (h) { h.className = h.className.replace(/ ?(asc|desc)/g, ""); });
      th.className += sortDir > 0 ? " asc" : " desc";
      drawOverview();
    });
  });

  // ---- sections (shells now, bodies when opened) -------------------------------------------------
  var sectionRows = [], others = [];
  rows.forEach(function (r) { if (r[C.section] >= 0) { sectionRows[r[C.section]] = r; } else { others.push(r); } });
  var shells = [];
  sectionRows.forEach(function (r, i) {
    var f = total(r);
    shells.push("<details class=\"group\" id=\"s-" + i + "\" data-group=\"" + esc(r[C.group]) + "\"><summary>" +
      "<span class=\"name\">" + esc(r[C.group]) + "</span> <span class=\"muted\">" + esc(r[C.type] || "-") + ", " +
      esc(r[C.state] || "no longer held") + "; " + num(f) + " finding(s), " + num(r[C.rebalances]) + " rebalance(s)" +
      (r[C.storms] ? ", " + num(r[C.storms]) + " storm(s)" : "") + "</span> " + findingsCell(r[C.findings]) +
      "</summary><div class=\"body\"></div></details>");
  });
  el("sections").innerHTML = shells.join("");
  el("others").innerHTML = others.map(function (r) {
    return "<li id=\"o-" + r[C.index] + "\"><span class=\"mono\">" + esc(r[C.group]) + "</span> <span class=\"muted\">" +
      esc(r[C.type] || "-") + ", " + esc(r[C.state] || "-") + ", " + num(r[C.members]) + " member(s)" +
      (meta.lag && r[C.worst] ? ", lag " + esc(r[C.worst]) + " (peak " + num(r[C.peak_lag]) + ")" : "") +
      "</span> <span class=\"spark\">" + esc(r[C.spark]) + "</span></li>";
  }).join("");
  el("others-count").textContent = num(others.length);

  el("sections").addEventListener("toggle", function (e) {
    var d = e.target;
    if (d.open && !d.getAttribute("data-drawn")) {
      d.setAttribute("data-drawn", "1");
      var i = Number(d.id.slice(2));
      var s = JSON.parse(el("kg-s-" + i).textContent);
      d.querySelector(".body").innerHTML = sectionBody(s, i);
    }
  }, true);

  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var t = id && el(id);
    if (t && t.tagName === "DETAILS") { t.open = true; }
    if (t) { t.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openTarget);

  // ---- a section's body ------------------------------------------------------------------------
  function sectionBody(s, i) {
    var out = [];
    var d = s.describe;
    out.push("<p class=\"meta\">__consumer_offsets-" + esc(s.log_partition) + "; " +
      (d ? esc(d.type) + " group, " + esc(d.state) + " at " + iso(meta.end) + ", " + num(d.member_count) + " member(s)" +
        (d.assignor ? ", assignor " + esc(d.assignor) : "") : "no longer held by the coordinator at " + iso(meta.end)) +
      "; from " + iso(s.span[0]) + " to " + iso(s.span[1]) + "</p>");
    if (s.findings.length) {
      out.push("<h3>Findings</h3><ul class=\"findings\">" + s.findings.map(function (f) {
        return "<li><span class=\"rule\" style=\"color:" + css(RULE_COLOURS[f.rule]) + "\">" + RULE_LETTERS[f.rule] + " " +
          esc(f.rule) + "</span> <span class=\"mono\">" + iso(f.timestamp) + "</span>" +
          (f.topic != null ? " <span class=\"mono\">" + esc(f.topic) + "-" + esc(f.partition) + "</span>" : "") +
          (f.offset != null ? " offset " + esc(f.offset) : "") + (f.generation_id != null ? " gen " + esc(f.generation_id) : "") +
          "<br><span class=\"muted\">" + esc(f.message) + "</span></li>";
      }).join("") + "</ul>" + omitted(s.omitted.findings, "finding"));
    }
    out.push(figure(timeline(s, i), "Timeline (UTC, +00:00): generations" + (isConsumer(s) ? " (group epochs)" : "") +
      " as bands, rebalances as marks, storms shaded, findings as lettered diamonds; hover for details." +
      omitted(s.omitted.generations, "older generation")));
    var rec = reconciliation(s);
    if (rec) { out.push(figure(rec, "Reconciliation per epoch (consumer protocol, KIP-848): when each member reached the epoch, what it held pending revocation, and the longest consumption gap.")); }
    if (Object.keys(s.offsets).length) {
      out.push(figure(lines(s, s.offsets, "offset", function (p) { return p[3]; }, function (p) { return [p[1], p[2]]; }),
        "Committed offset per partition (effective commits; each bucket's minimum and maximum kept)." +
        omitted(s.omitted.series, "partition")));
    }
    if (Object.keys(s.lag).length) {
      out.push(figure(lines(s, s.lag, "lag (records)", function (p) { return p[1]; }, null, true),
        "Lag in records per partition; the strips below give Burrow's status through time."));
      out.push(figure(lines(s, s.lag, "lag (ms)", function (p) { return p[2]; }, null, false), "Lag in time (ms) per partition."));
    }
    out.push(rebalanceTable(s));
    out.push(describeTables(s));
    return out.join("");
  }
  function omitted(n, what) { return n ? " <span class=\"note\">(" + num(n) + " " + what + "(s) not shown)</span>" : ""; }
  function figure(svg, caption) { return "<figure>" + svg + "<figcaption>" + caption + "</figcaption></figure>"; }
  function isConsumer(s) { return s.generations.some(function (g) { return g[4] === "consumer"; }); }

  // ---- scales and axes -------------------------------------------------------------------------
  var W = 1000, LEFT = 110, RIGHT = 16;
  function xScale(span) {
    var t0 = span[0], t1 = span[1];
    if (t1 <= t0) { t0 -= 30000; t1 += 30000; }
    var w = W - LEFT - RIGHT;
    var f = function (t) { return LEFT + (t - t0) / (t1 - t0) * w; };
    f.t0 = t0; f.t1 = t1;
    return f;
  }
  var STEPS = [1e3, 5e3, 15e3, 3e4, 6e4, 3e5, 9e5, 18e5, 36e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5, 2592e6];
  function timeAxis(x, y) {
    var span = x.t1 - x.t0, step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) { if (span / STEPS[i] <= 7) { step = STEPS[i]; break; } }
    var out = "<g class=\"axis\"><line x1=\"" + LEFT + "\" x2=\"" + (W - RIGHT) + "\" y1=\"" + y + "\" y2=\"" + y + "\"/>";
    var lastDay = null;
    for (var t = Math.ceil(x.t0 / step) * step; t <= x.t1; t += step) {
      var s = new Date(t).toISOString(), day = s.slice(0, 10);
      var label = (step < 6e4 ? s.slice(11, 19) : s.slice(11, 16));
      if (step >= 864e5) { label = day; } else if (day !== lastDay) { label = day + " " + label; }
      lastDay = day;
      out += "<line x1=\"" + x(t) + "\" x2=\"" + x(t) + "\" y1=\"" + y + "\" y2=\"" + (y + 4) + "\"/>" +
        "<text x=\"" + x(t) + "\" y=\"" + (y + 15) + "\" text-anchor=\"middle\">" + label + "</text>";
    }
    return out + "<text x=\"" + (W - RIGHT) + "\" y=\"" + (y + 28) + "\" text-anchor=\"end\" class=\"lane\">UTC (+00:00)</text></g>";
  }
  function svg(h, cls, label, body) {
    return "<svg class=\"chart " + cls + "\" viewBox=\"0 0 " + W + " " + h + "\" role=\"img\" aria-label=\"" + esc(label) +
      "\" xmlns=\"http://www.w3.org/2000/svg\">" + body + "</svg>";
  }
  function title(text) { return "<title>" + esc(text) + "</title>"; }

  // ---- the timeline ------------------------------------------------------------------------------
  function timeline(s, i) {
    var x = xScale(s.span), out = [];
    var GEN = 14, REB = 52, FIND = 84, AXIS = 104, H = AXIS + 34;
    var hatch = "kg-hatch-" + i;
    out.push("<defs><pattern id=\"" + hatch + "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" " +
      "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"" + css("--c-vermillion") +
      "\" stroke-width=\"1.5\" opacity=\"0.5\"/></pattern></defs>");
    s.storms.forEach(function (st) {
      var x0 = x(st[0]), x1 = Math.max(x(st[1]), x0 + 3);
      out.push("<rect class=\"storm\" x=\"" + x0 + "\" y=\"4\" width=\"" + (x1 - x0) + "\" height=\"" + (AXIS - 6) +
        "\" fill=\"url(#" + hatch + ")\">" + title("rebalance storm from " + iso(st[0]) + " to " + iso(st[1])) + "</rect>");
    });
    var consumer = isConsumer(s);
    out.push("<text class=\"lane\" x=\"4\" y=\"" + (GEN + 16) + "\">" + (consumer ? "group epochs" : "generations") + "</text>" +
      "<text class=\"lane\" x=\"4\" y=\"" + (REB + 4) + "\">rebalances</text><text class=\"lane\" x=\"4\" y=\"" + (FIND + 4) +
      "\">findings</text>");
    s.generations.forEach(function (g, k) {
      var next = k + 1 < s.generations.length ? s.generations[k + 1][0] : x.t1;
      var x0 = x(g[0]), x1 = Math.max(x(next), x0 + 2);
      var label = (g[4] === "consumer" ? "epoch " : "gen ") + (g[1] == null ? "-" : g[1]) + " \u00b7 " + num(g[2]) + (g[2] === 1 ? " member" : " members") +
        (g[3] ? " \u00b7 " + g[3] : "");
      out.push("<g><rect class=\"" + (k % 2 ? "band2" : "band1") + "\" x=\"" + x0 + "\" y=\"" + GEN + "\" width=\"" + (x1 - x0) +
        "\" height=\"24\"/>" + (x1 - x0 > label.length * 6 ? "<text x=\"" + (x0 + 3) + "\" y=\"" + (GEN + 16) + "\">" + esc(label) +
        "</text>" : "") + title((g[4] === "consumer" ? "group epoch " : "generation ") + g[1] + " from " + iso(g[0]) + ": " +
        num(g[2]) + " member(s), assignor " + (g[3] || "-") + ", protocol " + g[4] + (g[6] ? " (" + g[6] + ")" : "") +
        ", state " + (g[5] || "-")) + "</g>");
    });
    s.rebalances.forEach(function (r) {
      var xx = x(r.timestamp);
      var colour = r.left.length ? "--c-vermillion" : r.rejoined.length ? "--c-orange" : r.joined.length ? "--c-blue" : "--muted";
      var shape = r.left.length ? "M" + (xx - 5) + "," + (REB - 5) + "L" + (xx + 5) + "," + (REB - 5) + "L" + xx + "," + (REB + 5) + "Z"
        : "M" + (xx - 5) + "," + (REB + 5) + "L" + (xx + 5) + "," + (REB + 5) + "L" + xx + "," + (REB - 5) + "Z";
      var who = [];
      if (r.joined.length) { who.push("joined: " + r.joined.join(", ")); }
      if (r.left.length) { who.push("left or fenced: " + r.left.join(", ")); }
      if (r.rejoined.length) { who.push("rejoined: " + r.rejoined.join(", ")); }
      if (r.static_replaced.length) { who.push("static replaced: " + r.static_replaced.join(", ")); }
      out.push("<g><line x1=\"" + xx + "\" x2=\"" + xx + "\" y1=\"" + GEN + "\" y2=\"" + (FIND + 8) + "\" stroke=\"" + css(colour) +
        "\" stroke-width=\"1\" opacity=\"0.6\"/><path d=\"" + shape + "\" fill=\"" + css(colour) + "\"/>" +
        title(iso(r.timestamp) + " " + (r.from_generation == null ? "-" : r.from_generation) + " \u2192 " + r.to_generation +
          ": " + r.cause + " (members " + r.members_before + " \u2192 " + r.members_after + ")" + (who.length ? "\n" + who.join("\n") : "") +
          "\n" + r.message) + "</g>");
    });
    s.findings.forEach(function (f) {
      var xx = x(f.timestamp), c = css(RULE_COLOURS[f.rule]);
      out.push("<g><path d=\"M" + xx + "," + (FIND - 8) + "L" + (xx + 8) + "," + FIND + "L" + xx + "," + (FIND + 8) + "L" + (xx - 8) +
        "," + FIND + "Z\" fill=\"" + css("--bg") + "\" stroke=\"" + c + "\" stroke-width=\"2\"/><text x=\"" + xx + "\" y=\"" +
        (FIND + 4) + "\" text-anchor=\"middle\" style=\"font-size:9px;font-weight:700\">" + RULE_LETTERS[f.rule] + "</text>" +
        title(iso(f.timestamp) + " " + f.rule + ": " + f.message) + "</g>");
    });
    out.push(timeAxis(x, AXIS));
    return svg(H, "timeline", "timeline of " + s.group, out.join(""));
  }

  // ---- reconciliation (KIP-848) ------------------------------------------------------------------
  function reconciliation(s) {
    var bars = [];
    s.rebalances.forEach(function (r) {
      if (r.protocol !== "consumer") { return; }
      (r.members_reached || []).forEach(function (m) {
        var k = m.lastIndexOf(":");
        bars.push({epoch: r.to_generation, who: m.slice(0, k), start: r.timestamp, end: r.timestamp + Number(m.slice(k + 1)),
                   kind: "reached"});
      });
      (r.revocation_waits || []).forEach(function (w) {
        var parts = w.split(":"), ms = Number(parts.pop()), who = parts.pop();
        bars.push({epoch: r.to_generation, who: who, start: r.timestamp, end: r.timestamp + ms, kind: "pending",
                   tp: parts.join(":")});
      });
      if (r.consumption_gap_ms) {
        bars.push({epoch: r.to_generation, who: "gap " + (r.consumption_gap_partition || ""), start: r.timestamp,
                   end: r.timestamp + r.consumption_gap_ms, kind: "gap"});
      }
    });
    if (!bars.length) { return ""; }
    bars = bars.slice(0, 80);
    var lo = Math.min.apply(null, bars.map(function (b) { return b.start; }));
    var hi = Math.max.apply(null, bars.map(function (b) { return b.end; }));
    var x = xScale([Math.min(lo, s.span[0]), Math.max(hi, s.span[1])]);
    var out = [], y = 6;
    var fill = {reached: "--c-blue", pending: "--c-orange", gap: "--c-vermillion"};
    bars.forEach(function (b) {
      var x0 = x(b.start), x1 = Math.max(x(b.end), x0 + 2);
      var what = b.kind === "reached" ? b.who + " reached epoch " + b.epoch + " after " + dur(b.end - b.start)
        : b.kind === "pending" ? b.who + " held " + b.tp + " pending revocation for " + dur(b.end - b.start)
        : "epoch " + b.epoch + ": " + b.who.slice(4) + " had no owner for " + dur(b.end - b.start) + " (consumption gap)";
      out.push("<g><text class=\"lane\" x=\"4\" y=\"" + (y + 10) + "\">" + esc(("e" + b.epoch + " " + b.who).slice(0, 18)) +
        "</text><rect x=\"" + x0 + "\" y=\"" + y + "\" width=\"" + (x1 - x0) + "\" height=\"12\" fill=\"" + css(fill[b.kind]) + "\"" +
        (b.kind === "pending" ? " opacity=\"0.75\" stroke=\"" + css("--fg") + "\" stroke-dasharray=\"3 2\"" : "") + "/>" +
        title(iso(b.start) + ": " + what) + "</g>");
      y += 16;
    });
    out.push(timeAxis(x, y + 4));
    var legend = "<div class=\"legend\"><span><i style=\"background:" + css("--c-blue") + "\"></i>reached the epoch</span>" +
      "<span><i style=\"background:" + css("--c-orange") + "\"></i>pending revocation (dashed)</span><span><i style=\"background:" +
      css("--c-vermillion") + "\"></i>consumption gap</span></div>";
    return svg(y + 38, "reconciliation", "reconciliation of " + s.group, out.join("")) + legend;
  }

  // ---- line charts (offsets, lag) ----------------------------------------------------------------
  function lines(s, series, label, value, range, strips) {
    var keys = Object.keys(series);
    var x = xScale(s.span), TOP = 8, PH = 160, out = [];
    var hi = 0, lo = Infinity;
    keys.forEach(function (k) {
      series[k].forEach(function (p) {
        var r = range ? range(p) : [value(p), value(p)];
        if (r[1] != null && r[1] > hi) { hi = r[1]; }
        if (r[0] != null && r[0] < lo) { lo = r[0]; }
      });
    });
    if (!isFinite(lo) || range === null) { lo = 0; }
    if (hi <= lo) { hi = lo + 1; }
    var y = function (v) { return TOP + PH - (v - lo) / (hi - lo) * PH; };
    for (var t = 0; t <= 4; t++) {
      var v = lo + (hi - lo) * t / 4;
      out.push("<line class=\"grid\" x1=\"" + LEFT + "\" x2=\"" + (W - RIGHT) + "\" y1=\"" + y(v) + "\" y2=\"" + y(v) + "\"/>" +
        "<text x=\"" + (LEFT - 4) + "\" y=\"" + (y(v) + 4) + "\" text-anchor=\"end\">" + short(v) + "</text>");
    }
    out.push("<text class=\"lane\" x=\"4\" y=\"" + (TOP + 10) + "\">" + esc(label) + "</text>");
    var legend = [];
    keys.forEach(function (k, n) {
      var colour = css(SERIES[n % SERIES.length]), dash = DASHES[Math.floor(n / SERIES.length) % DASHES.length];
      var pts = [], ranges = [], previous = null;
      series[k].forEach(function (p) {
        var v = value(p);
        if (v == null) { return; }
        // a committed offset holds until the next commit: drawn as steps (range charts); lag is sampled
        if (range && previous !== null) { pts.push(x(p[0]).toFixed(1) + "," + y(previous).toFixed(1)); }
        previous = v;
        pts.push(x(p[0]).toFixed(1) + "," + y(v).toFixed(1));
        if (range) {
          var r = range(p);
          if (r[0] !== r[1]) { ranges.push("M" + x(p[0]).toFixed(1) + "," + y(r[0]).toFixed(1) + "V" + y(r[1]).toFixed(1)); }
        }
      });
      var last = series[k][series[k].length - 1];
      out.push("<g><polyline fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.6\"" + (dash ? " stroke-dasharray=\"" + dash + "\"" : "") +
        " points=\"" + pts.join(" ") + "\"/>" + (ranges.length ? "<path d=\"" + ranges.join("") + "\" stroke=\"" + colour + "\" stroke-width=\"3\" opacity=\"0.5\"/>" : "") +
        title(k + ": " + label + " " + num(value(last)) + " at " + iso(last[0])) + "</g>");
      legend.push("<span><i style=\"background:" + colour + "\"></i>" + esc(k) + "</span>");
    });
    var bottom = TOP + PH + 6;
    if (strips) {
      keys.forEach(function (k, n) {
        var pts = series[k];
        for (var j = 0; j < pts.length; j++) {
          var st = pts[j][3] || "NOTFOUND";
          var x0 = j ? x(pts[j - 1][0]) : x(s.span[0]), x1 = Math.max(x(pts[j][0]), x0 + 1);
          out.push("<rect x=\"" + x0.toFixed(1) + "\" y=\"" + bottom + "\" width=\"" + (x1 - x0).toFixed(1) + "\" height=\"7\" fill=\"" +
            css(STATUS_VARS[st] || "--muted") + "\">" + title(k + " " + st + " until " + iso(pts[j][0])) + "</rect>");
        }
        out.push("<text class=\"lane\" x=\"4\" y=\"" + (bottom + 7) + "\">" + esc(k.slice(0, 18)) + "</text>");
        bottom += 9;
      });
      legend.push("<span class=\"muted\">status:</span>");
      ["OK", "WARN", "STOP", "STALL", "REWIND"].forEach(function (st) {
        legend.push("<span><i style=\"background:" + css(STATUS_VARS[st]) + ";height:7px\"></i>" + st + "</span>");
      });
      bottom += 4;
    }
    out.push(timeAxis(x, bottom));
    return svg(bottom + 34, "series", label + " of " + s.group, out.join("")) + "<div class=\"legend\">" + legend.join("") + "</div>";
  }

  // ---- tables ------------------------------------------------------------------------------------
  function table(head, body, numeric) {
    return "<div class=\"describe\"><table><thead><tr>" + head.map(function (h, k) {
      return "<th" + (numeric && numeric[k] ? " class=\"num\"" : "") + ">" + esc(h) + "</th>";
    }).join("") + "</tr></thead><tbody>" + body.map(function (r) {
      return "<tr>" + r.map(function (c, k) {
        return "<td class=\"mono" + (numeric && numeric[k] ? " num" : "") + "\">" + (c == null || c === "" ? "-" : esc(c)) + "</td>";
      }).join("") + "</tr>";
    }).join("") + "</tbody></table></div>";
  }
  function assignment(list) {
    if (!list || !list.length) { return "-"; }
    var by = {};
    list.forEach(function (tp) { var k = tp.lastIndexOf("-"); (by[tp.slice(0, k)] = by[tp.slice(0, k)] || []).push(Number(tp.slice(k + 1))); });
    return Object.keys(by).sort().map(function (t) { return t + ":" + by[t].sort(function (a, b) { return a - b; }).join(","); }).join(";");
  }
  function rebalanceTable(s) {
    if (!s.rebalances.length) { return ""; }
    return "<h3>Generation changes</h3>" + table(["TIME (+00:00)", "FROM", "TO", "CAUSE", "MEMBERS", "JOINED", "LEFT", "REJOINED", "MESSAGE"],
      s.rebalances.map(function (r) {
        return [iso(r.timestamp), r.from_generation, r.to_generation, r.rebalance ? r.cause : r.cause + " (same generation)",
          r.members_before + " \u2192 " + r.members_after, r.joined.join(" "), r.left.join(" "), r.rejoined.join(" "), r.message];
      })) + omitted(s.omitted.rebalances, "older change");
  }
  function describeTables(s) {
    var out = ["<h3>kafka-consumer-groups.sh --describe at " + iso(meta.end) + "</h3>"];
    var d = s.describe;
    if (d) {
      var modern = d.type !== "classic";
      out.push(table(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"],
        [[s.group, "__consumer_offsets-" + s.log_partition, d.assignor, d.state, modern ? d.group_epoch : null,
          modern && s.members.length ? s.members[0].target_epoch : null, d.member_count]]));
      if (s.members.length) {
        out.push(table(["CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
          "TARGET-EPOCH", "TARGET-ASSIGNMENT", "PENDING-REVOCATION"],
          s.members.map(function (m) {
            return [m.member_id, m.instance_id, m.client_host, m.client_id, (m.assigned || []).length, m.member_epoch,
              assignment(m.assigned), m.target_epoch, assignment(m.target), assignment(m.pending_revocation)];
          }), [0, 0, 0, 0, 1, 1, 0, 1, 0, 0]) + omitted(s.omitted.members, "member"));
      } else {
        out.push("<p class=\"note\">Consumer group '" + esc(s.group) + "' has no active members.</p>");
      }
    } else {
      out.push("<p class=\"note\">The coordinator no longer holds this group (deleted, or known only by its commits).</p>");
    }
    if (s.committed.length) {
      out.push(table(["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-MS", "STATUS", "CONSUMER-ID", "HOST",
        "CLIENT-ID", "COMMITTED AT (+00:00)", "EXPIRED"],
        s.committed.map(function (o) {
          return [o.topic, o.partition, o.offset, o.log_end_offset, o.lag, o.lag_ms, o.lag_status, o.consumer_id, o.host,
            o.client_id, iso(o.commit_timestamp), o.expired ? "yes" : ""];
        }), [0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]) + omitted(s.omitted.committed, "committed offset"));
    }
    return out.join("");
  }

  drawOverview();
  openTarget();
  window.kgReport = {groups: rows.length, sections: sectionRows.length, ready: true};
})();
