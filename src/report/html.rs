//! The report as one self-contained HTML page (`-o html`): styles, script and data inline,
//! nothing fetched. Summaries first (counts, the most loaded nodes, the evictions), details
//! on demand (more rows, candidates not chosen); every table sorts by a click on its header
//! and filters by node, namespace and plugin (also given in the address:
//! `report.html#node=worker-3&namespace=team-a&plugin=LowNodeUtilization`). Printing gives the overview without the
//! controls.
//!
//! The report is embedded as JSON in a `<script type="application/json">` element (every
//! `<` written as `\u003c`, so no name from the cluster can close it) and drawn by the
//! page's script with text nodes only, never as markup; characters that are invisible or
//! reorder text are shown as `\u{..}`, as in the table output. The long lists are rows of
//! indexes into per-column tables of texts (see [`PageData`]). A table past 1,000 rows
//! shown keeps only the rows in and near the view in the page; filters are applied as
//! typing pauses, over texts lowercased once; a part of the address that does not decode
//! is left out. `tests/html_report.rs` times a 150,000-eviction page in Chromium.

use super::findings::EveryKey;
use super::{MeasuredRow, NoteRow, ReadRow, Report, Sections, ThresholdRow};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// What the page's script draws. The long lists (evictions, nodes, candidates not chosen)
/// are rows of numbers, each an index into the table of texts of its column (`texts`): a
/// name or reason shared by many rows is written once, and no row repeats the field names.
/// The other lists are as in the JSON report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PageData<'a> {
    texts: Texts<'a>,
    /// `[namespace, name, node, destination, plugin, profile, reason, gang, result]`;
    /// `0` (the empty text) where a row has none.
    evictions: Vec<[u32; 9]>,
    /// The evictions (by their index in `evictions`) that are moves by surge; most plans
    /// have none, so the rows carry no column for it.
    surges: Vec<u32>,
    /// `[name, before, after, measured, afterRange]` (`afterRange` null when certain).
    nodes: Vec<NodeData<'a>>,
    /// `[namespace, name, node, plugin, profile, reason]`.
    not_chosen: Vec<[u32; 6]>,
    notes: &'a [NoteRow],
    /// The sections of plugin findings, each under its key as in the JSON report (empty
    /// ones too).
    #[serde(flatten)]
    findings: EveryKey<'a>,
    read: Option<&'a ReadRow>,
    thresholds: &'a [ThresholdRow],
}

type NodeData<'a> = (
    u32,
    &'a BTreeMap<String, f64>,
    &'a BTreeMap<String, f64>,
    Option<&'a MeasuredRow>,
    Option<&'a BTreeMap<String, [f64; 2]>>,
);

/// The texts of each column of the long lists, once each, `""` first, sorted (by their
/// lowercase, then as they are): a text's index is its sort key, so the page sorts by
/// numbers. Nodes are one table for the nodes, evictions' sources and destinations, and
/// candidates' nodes; pods are split in namespace and name.
#[derive(Serialize)]
struct Texts<'a> {
    namespaces: Vec<&'a str>,
    names: Vec<&'a str>,
    nodes: Vec<&'a str>,
    plugins: Vec<&'a str>,
    profiles: Vec<&'a str>,
    reasons: Vec<&'a str>,
    gangs: Vec<&'a str>,
    results: Vec<&'a str>,
}

/// One column's texts, sorted, and where each one is.
struct Column<'a> {
    texts: Vec<&'a str>,
    index: FxHashMap<&'a str, u32>,
}

impl<'a> Column<'a> {
    fn of(texts: impl Iterator<Item = &'a str>) -> Column<'a> {
        let mut texts: Vec<&str> = std::iter::once("").chain(texts).collect();
        texts.sort_unstable();
        texts.dedup();
        texts.sort_by_cached_key(|t| (t.to_lowercase(), *t));
        let index = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (*t, i as u32))
            .collect();
        Column { texts, index }
    }

    fn at(&self, text: &str) -> u32 {
        self.index[text]
    }

    fn opt(&self, text: &Option<String>) -> u32 {
        text.as_deref().map_or(0, |t| self.at(t))
    }
}

/// `ns/name` as its two parts (`""` and the whole when there is no `/`).
fn split_pod(pod: &str) -> (&str, &str) {
    pod.split_once('/').unwrap_or(("", pod))
}

impl<'a> PageData<'a> {
    fn of(report: &'a Report) -> PageData<'a> {
        let (ev, nc) = (&report.evictions, &report.not_chosen);
        let pods = || {
            ev.iter()
                .map(|e| split_pod(&e.pod))
                .chain(nc.iter().map(|n| split_pod(&n.pod)))
        };
        let namespaces = Column::of(pods().map(|p| p.0));
        let names = Column::of(pods().map(|p| p.1));
        let nodes = Column::of(
            ev.iter()
                .flat_map(|e| std::iter::once(&e.node).chain(&e.destination))
                .chain(report.nodes.iter().map(|n| &n.name))
                .chain(nc.iter().filter_map(|n| n.node.as_ref()))
                .map(String::as_str),
        );
        let plugins = Column::of(
            ev.iter()
                .map(|e| &*e.plugin)
                .chain(nc.iter().map(|n| &*n.plugin)),
        );
        let profiles = Column::of(
            ev.iter()
                .map(|e| &*e.profile)
                .chain(nc.iter().map(|n| &*n.profile)),
        );
        let reasons = Column::of(
            ev.iter()
                .map(|e| &*e.reason)
                .chain(nc.iter().map(|n| &*n.reason)),
        );
        let gangs = Column::of(ev.iter().filter_map(|e| e.gang.as_deref()));
        let results = Column::of(ev.iter().filter_map(|e| e.result.as_deref()));
        let evictions = ev
            .iter()
            .map(|e| {
                let (ns, name) = split_pod(&e.pod);
                [
                    namespaces.at(ns),
                    names.at(name),
                    nodes.at(&e.node),
                    nodes.opt(&e.destination),
                    plugins.at(&e.plugin),
                    profiles.at(&e.profile),
                    reasons.at(&e.reason),
                    gangs.opt(&e.gang),
                    results.opt(&e.result),
                ]
            })
            .collect();
        let node_rows = report
            .nodes
            .iter()
            .map(|n| {
                (
                    nodes.at(&n.name),
                    &n.before,
                    &n.after,
                    n.measured.as_ref(),
                    (!n.after_range.is_empty()).then_some(&n.after_range),
                )
            })
            .collect();
        let not_chosen = nc
            .iter()
            .map(|n| {
                let (ns, name) = split_pod(&n.pod);
                [
                    namespaces.at(ns),
                    names.at(name),
                    nodes.opt(&n.node),
                    plugins.at(&n.plugin),
                    profiles.at(&n.profile),
                    reasons.at(&n.reason),
                ]
            })
            .collect();
        PageData {
            texts: Texts {
                namespaces: namespaces.texts,
                names: names.texts,
                nodes: nodes.texts,
                plugins: plugins.texts,
                profiles: profiles.texts,
                reasons: reasons.texts,
                gangs: gangs.texts,
                results: results.texts,
            },
            evictions,
            surges: ev
                .iter()
                .enumerate()
                .filter(|(_, e)| e.mechanism == "surge")
                .map(|(i, _)| i as u32)
                .collect(),
            nodes: node_rows,
            not_chosen,
            notes: &report.notes,
            findings: report.findings.every_key(),
            read: report.read.as_ref(),
            thresholds: &report.thresholds,
        }
    }
}

/// Writes the page of `report`, with its utilization thresholds drawn on the node bars.
pub(super) fn write(report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let data = serde_json::to_string(&PageData::of(report))?;
    let data = data.replace('<', "\\u003c");
    let n = report.evictions.len();
    let evictions = format!("{n} eviction{}", if n == 1 { "" } else { "s" });
    let title = match &report.read {
        Some(r) => format!(
            "Descheduler plan: {evictions}, {} nodes, {} pods",
            r.nodes, r.pods
        ),
        None => format!("Descheduler plan: {evictions}"),
    };
    // Each section of plugin findings has its part of the page and of the script, in order.
    let (sections, drawing) = Sections::page();
    out.write_all(HEAD.replace("{{TITLE}}", &escape(&title)).as_bytes())?;
    out.write_all(sections.as_bytes())?;
    out.write_all(HEAD_END.as_bytes())?;
    out.write_all(b"<script type=\"application/json\" id=\"report-data\">")?;
    out.write_all(data.as_bytes())?;
    out.write_all(b"</script>\n<script>")?;
    out.write_all(SCRIPT.as_bytes())?;
    out.write_all(drawing.as_bytes())?;
    out.write_all(SCRIPT_END.as_bytes())?;
    out.write_all(b"</script>\n</body>\n</html>\n")
}

/// Text for HTML (the title).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page up to its sections of plugin findings ({{TITLE}} replaced).
const HEAD: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>
:root { --before: #8aa4c8; --after: #2f6fb5; --low: #2a9d4b; --high: #d0452f; --line: #d8dde3; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2329; background: #f6f7f9; }
header { background: #1d2d44; color: #fff; padding: 14px 24px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .read { opacity: .85; font-size: 13px; }
main { padding: 16px 24px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 16px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; min-width: 140px; }
.card b { display: block; font-size: 22px; }
.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin-bottom: 16px; position: sticky; top: 0; z-index: 2; }
.filters input, .filters select { padding: 4px 6px; border: 1px solid #b8c0ca; border-radius: 4px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin-bottom: 16px; }
section h2 { font-size: 16px; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { cursor: pointer; user-select: none; background: #eef1f5; white-space: nowrap; }
th.sorted-asc::after { content: " \25B2"; } th.sorted-desc::after { content: " \25BC"; }
td.reason { max-width: 520px; }
table.fixed { table-layout: fixed; }
tbody.windowed td { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
tr.spacer td { padding: 0; border: 0; }
.bar { position: relative; height: 16px; width: 220px; background: #eef1f5; border-radius: 3px; margin: 2px 0; }
.bar .before { position: absolute; left: 0; top: 0; height: 8px; background: var(--before); }
.bar .after { position: absolute; left: 0; top: 8px; height: 8px; background: var(--after); }
.bar .range { position: absolute; top: 8px; height: 8px; background: repeating-linear-gradient(45deg, var(--after) 0 2px, transparent 2px 5px); opacity: .7; }
.bar .th { position: absolute; top: -2px; height: 20px; width: 2px; }
.bar .th.low { background: var(--low); } .bar .th.high { background: var(--high); }
.res { display: flex; align-items: center; gap: 8px; white-space: nowrap; }
.res .name { width: 120px; overflow: hidden; text-overflow: ellipsis; color: #56606b; font-size: 12px; }
.res .val { font-variant-numeric: tabular-nums; font-size: 12px; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 14px; height: 8px; margin-right: 4px; vertical-align: middle; }
.more { margin-top: 8px; }
button { padding: 4px 10px; border: 1px solid #9aa6b2; background: #fff; border-radius: 4px; cursor: pointer; }
.muted { color: #6b7580; }
.result-evicted { color: #1c7c3a; } .result-other { color: #b23a2a; }
@media print {
  .filters, .more, button { display: none !important; }
  body { background: #fff; }
  section, .card { border-color: #999; break-inside: avoid-page; }
  header { background: #fff; color: #000; border-bottom: 2px solid #000; }
  details { display: block; } details > *:not(summary) { display: block; }
  tr.spacer { display: none; }
}
</style>
</head>
<body>
<header><h1>{{TITLE}}</h1><div class="read" id="read"></div></header>
<main>
<div class="cards" id="cards"></div>
<div class="filters" id="filters">
  <label>Node <input id="f-node" type="search" placeholder="name contains"></label>
  <label>Namespace <input id="f-ns" type="search" placeholder="namespace contains"></label>
  <label>Plugin <select id="f-plugin"><option value="">all</option></select></label>
  <button id="print" type="button">Print overview</button>
</div>
<section id="nodes"><h2>Nodes</h2>
  <div class="legend"><span><i style="background:var(--before)"></i>before</span><span><i style="background:var(--after)"></i>after</span><span><i style="background:repeating-linear-gradient(45deg, var(--after) 0 2px, transparent 2px 5px)"></i>after, where a tie kube-scheduler breaks at random decides</span><span><i style="background:var(--low)"></i>underutilized below</span><span><i style="background:var(--high)"></i>overutilized above</span><span id="threshold-note" class="muted"></span></div>
  <table><thead><tr><th data-key="name">Node</th><th data-key="out">Evicted from</th><th data-key="in">Predicted to</th><th data-key="cpu">Requests (% of allocatable)</th><th data-key="measured">Measured</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
<section id="evictions"><h2>Evictions</h2>
  <table><thead><tr><th data-key="pod">Pod</th><th data-key="namespace">Namespace</th><th data-key="node">From</th><th data-key="destination">Predicted destination</th><th data-key="plugin">Plugin</th><th data-key="profile">Profile</th><th data-key="reason">Reason</th><th data-key="result">Result</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
"#;

/// The page after its sections of plugin findings.
const HEAD_END: &str = r#"<section id="notes" hidden><h2>Notes</h2>
  <table><thead><tr><th data-key="profile">Profile</th><th data-key="plugin">Plugin</th><th data-key="node">Node</th><th data-key="message">Note</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
<section id="not-chosen" hidden><details><summary><h2 style="display:inline">Candidates not chosen</h2> <span class="muted" id="not-chosen-count"></span></summary>
  <table><thead><tr><th data-key="pod">Pod</th><th data-key="namespace">Namespace</th><th data-key="node">Node</th><th data-key="plugin">Plugin</th><th data-key="profile">Profile</th><th data-key="reason">Why not</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</details></section>
</main>
"#;

/// The page's script up to the sections of plugin findings.
const SCRIPT: &str = r##"
(function () {
  "use strict";
  performance.mark("report-script");
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var T = data.texts, thresholds = data.thresholds || [];
  var E = data.evictions, N = data.nodes, C = data.notChosen;
  var SURGES = {};
  (data.surges || []).forEach(function (i) { SURGES[i] = true; });
  var PAGE = 100, WINDOW_AT = 1000, OVERSCAN = 40;
  var collator = new Intl.Collator();
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "style") e.style.cssText = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  // Characters that are invisible or reorder text (controls, bidirectional overrides and
  // isolates, zero-width and other format characters) are shown as \u{..}, as the table
  // output does: a name from the cluster must not disguise itself.
  var HIDDEN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/g;
  function visible(s) {
    return String(s).replace(HIDDEN, function (c) { return "\\u{" + c.charCodeAt(0).toString(16) + "}"; });
  }
  // A column's texts (the long lists' rows hold their indexes): each shown with its hidden
  // characters made visible, and lowercase for the filters, worked out once.
  function Column(texts) {
    var shown = new Array(texts.length), lowered = new Array(texts.length);
    var filter = null, known = null;
    return {
      raw: function (i) { return texts[i]; },
      txt: function (i) { var v = shown[i]; if (v === undefined) v = shown[i] = visible(texts[i]); return v; },
      // Whether text i contains the (lowercase) filter t: once per text and filter.
      has: function (t, i) {
        if (t !== filter) { filter = t; known = new Int8Array(texts.length); }
        var k = known[i];
        if (!k) {
          if (lowered[i] === undefined) lowered[i] = texts[i].toLowerCase();
          k = known[i] = (i && lowered[i].indexOf(t) >= 0) ? 1 : 2;
        }
        return k === 1;
      }
    };
  }
  var NS = Column(T.namespaces), NAME = Column(T.names), NODE = Column(T.nodes), PLUGIN = Column(T.plugins),
      PROFILE = Column(T.profiles), REASON = Column(T.reasons), GANG = Column(T.gangs), RESULT = Column(T.results);
  function pct(v) { return v === undefined || v === null ? "-" : v.toFixed(1) + "%"; }
  function ns(pod) { var i = pod.indexOf("/"); return i < 0 ? "" : pod.slice(0, i); }
  function name(pod) { var i = pod.indexOf("/"); return i < 0 ? pod : pod.slice(i + 1); }
  function own(o, k) { return o && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined; }

  // Thresholds per resource: the lowest "underutilized" and highest "overutilized" line.
  var low = new Map(), high = new Map(), deviation = false;
  thresholds.forEach(function (t) {
    if (t.deviation) { deviation = true; return; }
    Object.keys(t.low || {}).forEach(function (r) { low.set(r, t.low[r]); });
    Object.keys(t.high || {}).forEach(function (r) { high.set(r, t.high[r]); });
  });
  if (deviation) document.getElementById("threshold-note").textContent =
    "deviation thresholds are relative to the mean of the nodes, not drawn";

  // Evictions from and predicted to each node, by the node's text index.
  var out = new Int32Array(T.nodes.length), into = new Int32Array(T.nodes.length), sources = 0;
  E.forEach(function (e) {
    if (out[e[2]]++ === 0) sources++;
    if (e[3]) into[e[3]]++;
  });
  var read = data.read;
  if (read) document.getElementById("read").textContent =
    "Read: " + read.nodes + " nodes, " + read.pods + " pods, " + read.disruptionBudgets +
    " disruption budgets, " + read.podGroups + " pod groups, " + read.namespaces + " namespaces";
  var sel = document.getElementById("f-plugin");
  T.plugins.slice(1).sort().forEach(function (p) { sel.appendChild(el("option", { value: p, text: visible(p) })); });
  // Filters may come in the address: #node=...&namespace=...&plugin=... (a view to link to).
  // A part that does not decode (`50%`) is left out; the others still apply.
  (location.hash || "").replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("="), k, v;
    if (i <= 0) return;
    try { k = decodeURIComponent(kv.slice(0, i)); v = decodeURIComponent(kv.slice(i + 1)); } catch (err) { return; }
    if (k === "node") document.getElementById("f-node").value = v;
    if (k === "namespace" || k === "ns") document.getElementById("f-ns").value = v;
    if (k === "plugin") sel.value = v;
  });
  var cards = document.getElementById("cards");
  [["evictions", E.length, "planned evictions"],
   ["nodes", N.length, "nodes"],
   ["sources", sources, "nodes evicted from"],
   ["not-chosen", C.length, "candidates not chosen"],
   ["notes", (data.notes || []).length, "notes"]].forEach(function (c) {
    cards.appendChild(el("div", { "class": "card", id: "card-" + c[0] }, [el("b", { text: String(c[1]) }), el("span", { text: c[2] })]));
  });

  function filters() {
    return {
      node: document.getElementById("f-node").value.trim().toLowerCase(),
      ns: document.getElementById("f-ns").value.trim().toLowerCase(),
      plugin: sel.value
    };
  }
  // Rows with no node (tenants, notes of a whole plugin) pass the node filter only when it
  // is empty; rows with no namespace or plugin pass those filters.
  function passes(f, nodes, namespace, plugin) {
    if (f.node && !nodes.some(function (n) { return NODE.has(f.node, n); })) return false;
    if (f.ns && namespace !== undefined && !NS.has(f.ns, namespace)) return false;
    if (f.plugin && plugin !== undefined && PLUGIN.raw(plugin) !== f.plugin) return false;
    return true;
  }
  // The same for rows of the small lists, by their texts.
  function matches(f, row) {
    if (f.node && !(row.nodes || []).some(function (n) { return n && n.toLowerCase().indexOf(f.node) >= 0; })) return false;
    if (f.ns && row.namespace !== undefined && row.namespace.toLowerCase().indexOf(f.ns) < 0) return false;
    if (f.plugin && row.plugin !== undefined && row.plugin !== f.plugin) return false;
    return true;
  }

  // A table of n rows: opts.key(i, k) is row i's sort key for a header's key (texts of the
  // long lists sort by their index), opts.pass(i, f) whether the filters keep it,
  // opts.make(i) its <tr>. It shows a page of rows at a time; past WINDOW_AT rows shown it
  // keeps only the rows in and near the view in the page (one line each, the columns as
  // they were), and spacers for the others, so that "Show all" on 150,000 rows is as quick
  // as a page of them.
  var tables = [];
  function Table(id, n, opts) {
    var section = document.getElementById(id), table = section.querySelector("table");
    var tbody = section.querySelector("tbody"), more = section.querySelector(".more");
    var headers = Array.prototype.slice.call(section.querySelectorAll("th"));
    var shown = PAGE, key = opts.sort, descending = !!opts.desc;
    var order = null, orderOf = null, rows = [], count = 0;
    var windowed = false, measured = false, rowHeight = 0, first = -1, last = -1;
    function sorted() {
      var id = key + (descending ? "-" : "+");
      if (orderOf === id) return order;
      var keys = new Array(n), idx = new Array(n), i;
      for (i = 0; i < n; i++) { keys[i] = opts.key(i, key); idx[i] = i; }
      idx.sort(function (a, b) {
        var x = keys[a], y = keys[b];
        var c = (typeof x === "number" && typeof y === "number") ? x - y : collator.compare(String(x), String(y));
        return descending ? -c : c;
      });
      order = idx; orderOf = id;
      return order;
    }
    function spacer(height) {
      return el("tr", { "class": "spacer" }, [el("td", { colspan: String(headers.length), style: "height:" + height + "px" })]);
    }
    function freeze() {
      var widths = headers.map(function (h) { return h.getBoundingClientRect().width; });
      if (widths.some(function (w) { return w > 0; })) {
        headers.forEach(function (h, i) { h.style.width = widths[i] + "px"; });
        table.classList.add("fixed");
      }
      tbody.classList.add("windowed");
      var probe = opts.make(rows[opts.tallest ? opts.tallest(rows.slice(0, count)) : 0]);
      tbody.textContent = "";
      tbody.appendChild(probe);
      var height = probe.getBoundingClientRect().height;
      // In a folded section nothing has a size yet: measured again once it opens.
      measured = height > 0;
      rowHeight = Math.max(height, 20);
    }
    function unfreeze() {
      headers.forEach(function (h) { h.style.width = ""; });
      table.classList.remove("fixed");
      tbody.classList.remove("windowed");
    }
    function range() {
      var above = Math.max(0, -tbody.getBoundingClientRect().top);
      var start = Math.max(0, Math.floor(above / rowHeight) - OVERSCAN);
      var end = Math.min(count, Math.ceil((above + window.innerHeight) / rowHeight) + OVERSCAN);
      return [start, Math.max(start, end)];
    }
    function fill(force) {
      if (!windowed) return;
      var r = range();
      if (!force && r[0] === first && r[1] === last) return;
      first = r[0]; last = r[1];
      var frag = document.createDocumentFragment();
      frag.appendChild(spacer(first * rowHeight));
      for (var j = first; j < last; j++) {
        var tr = opts.make(rows[j]);
        tr.style.height = rowHeight + "px";
        frag.appendChild(tr);
      }
      frag.appendChild(spacer((count - last) * rowHeight));
      tbody.textContent = "";
      tbody.appendChild(frag);
    }
    function draw() {
      var f = filters(), o = sorted();
      rows = [];
      for (var j = 0; j < o.length; j++) if (opts.pass(o[j], f)) rows.push(o[j]);
      count = Math.min(shown, rows.length);
      if (count > WINDOW_AT) {
        if (!windowed || !measured) { freeze(); windowed = true; }
        fill(true);
      } else {
        if (windowed) { unfreeze(); windowed = false; }
        var frag = document.createDocumentFragment();
        for (var k = 0; k < count; k++) frag.appendChild(opts.make(rows[k]));
        tbody.textContent = "";
        tbody.appendChild(frag);
      }
      more.textContent = "";
      if (rows.length > shown) {
        more.appendChild(el("span", { "class": "muted", text: "Showing " + shown + " of " + rows.length + " " }));
        var b = el("button", { type: "button", text: "Show " + Math.min(PAGE * 5, rows.length - shown) + " more" });
        b.onclick = function () { shown += PAGE * 5; draw(); };
        more.appendChild(b);
        var all = el("button", { type: "button", text: "Show all" });
        all.onclick = function () { shown = Infinity; draw(); };
        more.appendChild(all);
      } else if (rows.length === 0) {
        more.appendChild(el("span", { "class": "muted", text: n ? "No row matches the filters." : "None." }));
      } else if (windowed) {
        more.appendChild(el("span", { "class": "muted", text: "Showing all " + rows.length + " rows " }));
        var fewer = el("button", { type: "button", text: "Show " + PAGE });
        fewer.onclick = function () { shown = PAGE; draw(); };
        more.appendChild(fewer);
      }
      headers.forEach(function (h) {
        h.classList.toggle("sorted-asc", h.dataset.key === key && !descending);
        h.classList.toggle("sorted-desc", h.dataset.key === key && descending);
      });
    }
    headers.forEach(function (h) {
      h.onclick = function () {
        if (key === h.dataset.key) descending = !descending; else { key = h.dataset.key; descending = false; }
        draw();
      };
    });
    this.draw = draw;
    this.fill = fill;
    tables.push(this);
    draw();
  }
  // A table of the small lists: rows of {filter, keys, make}.
  function SmallTable(id, rows, sort, desc) {
    return new Table(id, rows.length, {
      sort: sort, desc: desc,
      key: function (i, k) { return rows[i].keys[k]; },
      pass: function (i, f) { return matches(f, rows[i].filter); },
      make: function (i) { return rows[i].make(); }
    });
  }

  function bar(before, after, resource, range) {
    var title = visible(resource) + ": " + pct(before) + " before, " + pct(after) + " after";
    if (range) title += " (" + pct(range[0]) + " to " + pct(range[1]) + " as kube-scheduler breaks ties)";
    var b = el("div", { "class": "bar", title: title });
    b.appendChild(el("div", { "class": "before", style: "width:" + Math.min(100, before || 0) + "%" }));
    b.appendChild(el("div", { "class": "after", style: "width:" + Math.min(100, after || 0) + "%" }));
    if (range) {
      var lo = Math.min(100, range[0]), hi = Math.min(100, range[1]);
      b.appendChild(el("div", { "class": "range", style: "left:" + lo + "%;width:" + Math.max(0, hi - lo) + "%" }));
    }
    if (low.has(resource)) b.appendChild(el("div", { "class": "th low", title: "underutilized below " + low.get(resource) + "%", style: "left:" + Math.min(100, low.get(resource)) + "%" }));
    if (high.has(resource)) b.appendChild(el("div", { "class": "th high", title: "overutilized above " + high.get(resource) + "%", style: "left:" + Math.min(100, high.get(resource)) + "%" }));
    return b;
  }
  function resources(before, after, keys, ranges) {
    var cell = el("td");
    keys.forEach(function (r) {
      var b = own(before, r), a = own(after, r), range = ranges ? own(ranges, r) : undefined;
      if (b === undefined && a === undefined) return;
      var changed = Math.abs((b || 0) - (a || 0)) >= 0.05;
      var text = changed || range ? pct(b) + " \u2192 " + pct(a) : pct(b);
      if (range) text += " (" + pct(range[0]) + "\u2013" + pct(range[1]) + ")";
      cell.appendChild(el("div", { "class": "res", "data-resource": r }, [
        el("span", { "class": "name", text: visible(r) }), bar(b, a, r, range),
        el("span", { "class": "val", text: text })
      ]));
    });
    return cell;
  }
  function resourceKeys(before, after) {
    var keys = ["cpu", "memory", "pods"];
    Object.keys(before).concat(Object.keys(after)).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
    return keys.filter(function (k) { return own(before, k) !== undefined || own(after, k) !== undefined; });
  }
  function lines(i) {
    var m = N[i][3];
    return Math.max(resourceKeys(N[i][1], N[i][2]).length, m ? Object.keys(m.before).length : 0);
  }
  new Table("nodes", N.length, {
    sort: "cpu", desc: true,
    key: function (i, k) {
      var n = N[i];
      if (k === "name") return n[0];
      if (k === "out") return out[n[0]];
      if (k === "in") return into[n[0]];
      if (k === "cpu") return own(n[1], "cpu") || 0;
      return n[3] ? (own(n[3].before, "cpu") || 0) : -1;
    },
    pass: function (i, f) { return passes(f, [N[i][0]]); },
    tallest: function (rows) {
      var best = rows[0], most = -1;
      rows.forEach(function (i) { var l = lines(i); if (l > most) { most = l; best = i; } });
      return best;
    },
    make: function (i) {
      var n = N[i], m = n[3];
      return el("tr", { "data-node": NODE.raw(n[0]) }, [
        el("td", { text: NODE.txt(n[0]) }), el("td", { text: String(out[n[0]]) }),
        el("td", { text: String(into[n[0]]) }), resources(n[1], n[2], resourceKeys(n[1], n[2]), n[4]),
        m ? resources(m.before, m.after, Object.keys(m.before)) : el("td", { "class": "muted", text: "-" })
      ]);
    }
  });
  var EVICTION_KEYS = { namespace: 0, pod: 1, node: 2, destination: 3, plugin: 4, profile: 5, reason: 6, result: 8 };
  new Table("evictions", E.length, {
    sort: "order", desc: false,
    key: function (i, k) { var c = own(EVICTION_KEYS, k); return c === undefined ? i : E[i][c]; },
    pass: function (i, f) { var e = E[i]; return passes(f, [e[2], e[3]], e[0], e[4]); },
    make: function (i) {
      var e = E[i];
      return el("tr", { "data-pod": NS.raw(e[0]) + "/" + NAME.raw(e[1]) }, [
        el("td", { text: NAME.txt(e[1]) }), el("td", { text: NS.txt(e[0]) }), el("td", { text: NODE.txt(e[2]) }),
        el("td", { text: (e[3] ? NODE.txt(e[3]) : "(no node fits)") + (SURGES[i] ? " (surge: new pod first)" : "") }), el("td", { text: PLUGIN.txt(e[4]) }),
        el("td", { text: PROFILE.txt(e[5]) }), el("td", { "class": "reason", text: REASON.txt(e[6]) + (e[7] ? " (gang " + GANG.txt(e[7]) + ")" : "") }),
        el("td", { "class": e[8] ? (RESULT.raw(e[8]) === "evicted" || RESULT.raw(e[8]) === "surged" ? "result-evicted" : "result-other") : "muted", text: e[8] ? RESULT.txt(e[8]) : "dry run" })
      ]);
    }
  });
"##;

/// The page's script after the sections of plugin findings.
const SCRIPT_END: &str = r##"  var notes = data.notes || [];
  if (notes.length) {
    document.getElementById("notes").hidden = false;
    SmallTable("notes", notes.map(function (n) {
      return {
        filter: { nodes: n.node ? [n.node] : undefined, plugin: n.plugin },
        keys: { profile: n.profile, plugin: n.plugin, node: n.node || "", message: n.message },
        make: function () {
          return el("tr", {}, [el("td", { text: visible(n.profile) }), el("td", { text: visible(n.plugin) }),
            el("td", { text: visible(n.node || "-") }), el("td", { text: visible((n.skipped ? "skipped the cycle: " : "") + n.message) })]);
        }
      };
    }), "plugin", false);
  }
  if (C.length) {
    document.getElementById("not-chosen").hidden = false;
    document.getElementById("not-chosen-count").textContent = "(" + C.length + ")";
    var NOT_CHOSEN_KEYS = { namespace: 0, pod: 1, node: 2, plugin: 3, profile: 4, reason: 5 };
    var notChosen = new Table("not-chosen", C.length, {
      sort: "pod", desc: false,
      key: function (i, k) { return C[i][own(NOT_CHOSEN_KEYS, k)]; },
      pass: function (i, f) { var n = C[i]; return passes(f, n[2] ? [n[2]] : [], n[0], n[3]); },
      make: function (i) {
        var n = C[i];
        return el("tr", { "data-pod": NS.raw(n[0]) + "/" + NAME.raw(n[1]) }, [el("td", { text: NAME.txt(n[1]) }), el("td", { text: NS.txt(n[0]) }),
          el("td", { text: n[2] ? NODE.txt(n[2]) : "-" }), el("td", { text: PLUGIN.txt(n[3]) }), el("td", { text: PROFILE.txt(n[4]) }),
          el("td", { "class": "reason", text: REASON.txt(n[5]) })]);
      }
    });
    document.querySelector("#not-chosen details").addEventListener("toggle", function () { notChosen.draw(); });
  }
  // Typing redraws once the typing pauses; the page says it is drawn (data-ready) again
  // when the tables show what the filters say.
  var pendingDraw = 0;
  function redraw() {
    document.body.setAttribute("data-ready", "false");
    clearTimeout(pendingDraw);
    pendingDraw = setTimeout(function () {
      tables.forEach(function (t) { t.draw(); });
      document.body.setAttribute("data-ready", "true");
    }, 60);
  }
  ["f-node", "f-ns"].forEach(function (id) { document.getElementById(id).oninput = redraw; });
  sel.onchange = redraw;
  function follow() { tables.forEach(function (t) { t.fill(false); }); }
  window.addEventListener("scroll", follow, { passive: true });
  window.addEventListener("resize", follow);
  document.getElementById("print").onclick = function () { window.print(); };
  document.body.setAttribute("data-ready", "true");
  performance.measure("report-drawn", "report-script");
})();
"##;
