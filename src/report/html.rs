//! The report as one self-contained HTML page (`-o html`): styles, script and data inline,
//! nothing fetched. Summaries first (counts, the most loaded nodes, the evictions), details
//! on demand (more rows, candidates not chosen); every table sorts by a click on its header
//! and filters by node, namespace and plugin (also given in the address:
//! `report.html#node=worker-3&namespace=team-a&plugin=LowNodeUtilization`). Printing gives the overview without the
//! controls.
//!
//! The report is embedded as JSON in a `<script type="application/json">` element (every
//! `<` written as `\u003c`, so no name from the cluster can close it) and drawn by the
//! page's script with text nodes only, never as markup.

use super::{Report, ThresholdRow};
use serde::Serialize;

/// What the page's script draws.
#[derive(Serialize)]
struct PageData<'a> {
    report: &'a Report,
    thresholds: &'a [ThresholdRow],
}

/// Writes the page of `report`, with the utilization `thresholds` drawn on the node bars.
pub fn write(
    report: &Report,
    thresholds: &[ThresholdRow],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let data = serde_json::to_string(&PageData { report, thresholds })?;
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
    out.write_all(HEAD.replace("{{TITLE}}", &escape(&title)).as_bytes())?;
    out.write_all(b"<script type=\"application/json\" id=\"report-data\">")?;
    out.write_all(data.as_bytes())?;
    out.write_all(b"</script>\n<script>")?;
    out.write_all(SCRIPT.as_bytes())?;
    out.write_all(b"</script>\n</body>\n</html>\n")
}

/// Text for HTML (the title).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

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
.bar { position: relative; height: 16px; width: 220px; background: #eef1f5; border-radius: 3px; margin: 2px 0; }
.bar .before { position: absolute; left: 0; top: 0; height: 8px; background: var(--before); }
.bar .after { position: absolute; left: 0; top: 8px; height: 8px; background: var(--after); }
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
  <div class="legend"><span><i style="background:var(--before)"></i>before</span><span><i style="background:var(--after)"></i>after</span><span><i style="background:var(--low)"></i>underutilized below</span><span><i style="background:var(--high)"></i>overutilized above</span><span id="threshold-note" class="muted"></span></div>
  <table><thead><tr><th data-key="name">Node</th><th data-key="out">Evicted from</th><th data-key="in">Predicted to</th><th data-key="cpu">Requests (% of allocatable)</th><th data-key="measured">Measured</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
<section id="evictions"><h2>Evictions</h2>
  <table><thead><tr><th data-key="pod">Pod</th><th data-key="namespace">Namespace</th><th data-key="node">From</th><th data-key="destination">Predicted destination</th><th data-key="plugin">Plugin</th><th data-key="profile">Profile</th><th data-key="reason">Reason</th><th data-key="result">Result</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
<section id="tenants" hidden><h2>Tenants (dominant share, DRF)</h2>
  <table><thead><tr><th data-key="tenant">Tenant</th><th data-key="dominantResource">Dominant resource</th><th data-key="before">Share</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
<section id="pending" hidden><h2>Pending pods and gangs</h2>
  <table><thead><tr><th data-key="unit">Pending</th><th data-key="namespace">Namespace</th><th data-key="destination">Destination</th><th data-key="madeRoomBy">Made room by</th><th data-key="reason">Why not</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
<section id="notes" hidden><h2>Notes</h2>
  <table><thead><tr><th data-key="profile">Profile</th><th data-key="plugin">Plugin</th><th data-key="node">Node</th><th data-key="message">Note</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
<section id="not-chosen" hidden><details><summary><h2 style="display:inline">Candidates not chosen</h2> <span class="muted" id="not-chosen-count"></span></summary>
  <table><thead><tr><th data-key="pod">Pod</th><th data-key="namespace">Namespace</th><th data-key="node">Node</th><th data-key="plugin">Plugin</th><th data-key="profile">Profile</th><th data-key="reason">Why not</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</details></section>
</main>
"#;

const SCRIPT: &str = r#"
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var report = data.report, thresholds = data.thresholds || [];
  var PAGE = 100;
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "style") e.style.cssText = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function pct(v) { return v === undefined || v === null ? "-" : v.toFixed(1) + "%"; }
  function ns(pod) { var i = pod.indexOf("/"); return i < 0 ? "" : pod.slice(0, i); }
  function name(pod) { var i = pod.indexOf("/"); return i < 0 ? pod : pod.slice(i + 1); }

  // Thresholds per resource: the lowest "underutilized" and highest "overutilized" line.
  var low = {}, high = {}, deviation = false;
  thresholds.forEach(function (t) {
    if (t.deviation) { deviation = true; return; }
    Object.keys(t.low || {}).forEach(function (r) { low[r] = t.low[r]; });
    Object.keys(t.high || {}).forEach(function (r) { high[r] = t.high[r]; });
  });
  if (deviation) document.getElementById("threshold-note").textContent =
    "deviation thresholds are relative to the mean of the nodes, not drawn";

  var out = {}, into = {};
  report.evictions.forEach(function (e) {
    out[e.node] = (out[e.node] || 0) + 1;
    if (e.destination) into[e.destination] = (into[e.destination] || 0) + 1;
  });
  var read = report.read;
  if (read) document.getElementById("read").textContent =
    "Read: " + read.nodes + " nodes, " + read.pods + " pods, " + read.disruptionBudgets +
    " disruption budgets, " + read.podGroups + " pod groups, " + read.namespaces + " namespaces";
  var plugins = {};
  report.evictions.concat(report.notChosen || []).forEach(function (e) { plugins[e.plugin] = 1; });
  var sel = document.getElementById("f-plugin");
  Object.keys(plugins).sort().forEach(function (p) { sel.appendChild(el("option", { value: p, text: p })); });
  // Filters may come in the address: #node=...&namespace=...&plugin=... (a view to link to).
  (location.hash || "").replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("=");
    if (i <= 0) return;
    var k = decodeURIComponent(kv.slice(0, i)), v = decodeURIComponent(kv.slice(i + 1));
    if (k === "node") document.getElementById("f-node").value = v;
    if (k === "namespace") document.getElementById("f-ns").value = v;
    if (k === "plugin") sel.value = v;
  });
  var cards = document.getElementById("cards");
  [["evictions", report.evictions.length, "planned evictions"],
   ["nodes", report.nodes.length, "nodes"],
   ["sources", Object.keys(out).length, "nodes evicted from"],
   ["not-chosen", (report.notChosen || []).length, "candidates not chosen"],
   ["notes", (report.notes || []).length, "notes"]].forEach(function (c) {
    cards.appendChild(el("div", { "class": "card", id: "card-" + c[0] }, [el("b", { text: String(c[1]) }), el("span", { text: c[2] })]));
  });

  function filters() {
    return {
      node: document.getElementById("f-node").value.trim().toLowerCase(),
      ns: document.getElementById("f-ns").value.trim().toLowerCase(),
      plugin: sel.value
    };
  }
  function matches(f, row) {
    if (f.node && !(row.nodes || []).some(function (n) { return n && n.toLowerCase().indexOf(f.node) >= 0; })) return false;
    if (f.ns && row.namespace !== undefined && row.namespace.toLowerCase().indexOf(f.ns) < 0) return false;
    if (f.plugin && row.plugin !== undefined && row.plugin !== f.plugin) return false;
    return true;
  }

  // A table: rows of {cells, keys, filter}, sorted by a header's key, shown a page at a time.
  function Table(id, rows, sortKey, desc) {
    var section = document.getElementById(id);
    var tbody = section.querySelector("tbody"), more = section.querySelector(".more");
    var shown = PAGE, key = sortKey, descending = !!desc;
    var headers = section.querySelectorAll("th");
    function draw() {
      var f = filters();
      var visible = rows.filter(function (r) { return matches(f, r.filter); });
      visible.sort(function (a, b) {
        var x = a.keys[key], y = b.keys[key];
        var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
        return descending ? -c : c;
      });
      tbody.textContent = "";
      visible.slice(0, shown).forEach(function (r) { tbody.appendChild(r.make()); });
      more.textContent = "";
      if (visible.length > shown) {
        more.appendChild(el("span", { "class": "muted", text: "Showing " + shown + " of " + visible.length + " " }));
        var b = el("button", { type: "button", text: "Show " + Math.min(PAGE * 5, visible.length - shown) + " more" });
        b.onclick = function () { shown += PAGE * 5; draw(); };
        more.appendChild(b);
        var all = el("button", { type: "button", text: "Show all" });
        all.onclick = function () { shown = visible.length; draw(); };
        more.appendChild(all);
      } else if (visible.length === 0) {
        more.appendChild(el("span", { "class": "muted", text: rows.length ? "No row matches the filters." : "None." }));
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
    tables.push(this);
    draw();
  }
  var tables = [];

  function bar(before, after, resource) {
    var b = el("div", { "class": "bar", title: resource + ": " + pct(before) + " before, " + pct(after) + " after" });
    b.appendChild(el("div", { "class": "before", style: "width:" + Math.min(100, before || 0) + "%" }));
    b.appendChild(el("div", { "class": "after", style: "width:" + Math.min(100, after || 0) + "%" }));
    if (low[resource] !== undefined) b.appendChild(el("div", { "class": "th low", title: "underutilized below " + low[resource] + "%", style: "left:" + Math.min(100, low[resource]) + "%" }));
    if (high[resource] !== undefined) b.appendChild(el("div", { "class": "th high", title: "overutilized above " + high[resource] + "%", style: "left:" + Math.min(100, high[resource]) + "%" }));
    return b;
  }
  function resources(before, after, keys) {
    var cell = el("td");
    keys.forEach(function (r) {
      if (before[r] === undefined && after[r] === undefined) return;
      var changed = Math.abs((before[r] || 0) - (after[r] || 0)) >= 0.05;
      cell.appendChild(el("div", { "class": "res", "data-resource": r }, [
        el("span", { "class": "name", text: r }), bar(before[r], after[r], r),
        el("span", { "class": "val", text: changed ? pct(before[r]) + " \u2192 " + pct(after[r]) : pct(before[r]) })
      ]));
    });
    return cell;
  }
  function resourceKeys(n) {
    var keys = ["cpu", "memory", "pods"];
    Object.keys(n.before).concat(Object.keys(n.after)).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
    return keys;
  }
  new Table("nodes", report.nodes.map(function (n) {
    return {
      filter: { nodes: [n.name] },
      keys: { name: n.name, out: out[n.name] || 0, "in": into[n.name] || 0, cpu: n.before.cpu || 0,
              measured: n.measured ? (n.measured.before.cpu || 0) : -1 },
      make: function () {
        var m = n.measured;
        return el("tr", { "data-node": n.name }, [
          el("td", { text: n.name }), el("td", { text: String(out[n.name] || 0) }),
          el("td", { text: String(into[n.name] || 0) }), resources(n.before, n.after, resourceKeys(n)),
          m ? resources(m.before, m.after, Object.keys(m.before)) : el("td", { "class": "muted", text: "-" })
        ]);
      }
    };
  }), "cpu", true);
  new Table("evictions", report.evictions.map(function (e, i) {
    return {
      filter: { nodes: [e.node, e.destination], namespace: ns(e.pod), plugin: e.plugin },
      keys: { pod: name(e.pod), namespace: ns(e.pod), node: e.node, destination: e.destination || "",
              plugin: e.plugin, profile: e.profile, reason: e.reason, result: e.result || "", order: i },
      make: function () {
        var result = e.result || "dry run";
        return el("tr", { "data-pod": e.pod }, [
          el("td", { text: name(e.pod) }), el("td", { text: ns(e.pod) }), el("td", { text: e.node }),
          el("td", { text: e.destination || "(no node fits)" }), el("td", { text: e.plugin }),
          el("td", { text: e.profile }), el("td", { "class": "reason", text: e.reason + (e.gang ? " (gang " + e.gang + ")" : "") }),
          el("td", { "class": e.result ? (e.result === "evicted" ? "result-evicted" : "result-other") : "muted", text: result })
        ]);
      }
    };
  }), "order", false);
  var tenants = report.tenants || [];
  if (tenants.length) {
    document.getElementById("tenants").hidden = false;
    new Table("tenants", tenants.map(function (t) {
      var label = t.tenantLabel ? (t.tenant ? t.tenantLabel + "=" + t.tenant : "(no " + t.tenantLabel + " label)") : t.tenant;
      return {
        filter: { namespace: t.tenantLabel ? undefined : t.tenant },
        keys: { tenant: label, dominantResource: t.dominantResource || "", before: t.before },
        make: function () {
          return el("tr", { "data-tenant": label }, [el("td", { text: label }), el("td", { text: t.dominantResource || "-" }),
            resources({ share: t.before }, { share: t.after }, ["share"])]);
        }
      };
    }), "before", true);
  }
  var pending = report.pending || [];
  if (pending.length) {
    document.getElementById("pending").hidden = false;
    new Table("pending", pending.map(function (u, i) {
      var unit = u.pod || ("group " + u.group);
      var key = u.pod || u.group;
      var nodes = u.destination ? [u.destination] : Object.keys(u.destinations || {}).map(function (p) { return u.destinations[p]; });
      var where = u.destination || Object.keys(u.destinations || {}).map(function (p) { return name(p) + "=" + u.destinations[p]; }).join(", ");
      return {
        filter: { nodes: nodes.length ? nodes : undefined, namespace: ns(key) },
        keys: { unit: unit, namespace: ns(key), destination: where, madeRoomBy: u.madeRoomBy.join(", "), reason: u.reason || "", order: i },
        make: function () {
          return el("tr", { "data-pending": key }, [el("td", { text: u.pod ? name(u.pod) : "group " + name(u.group) }),
            el("td", { text: ns(key) }), el("td", { text: where || "(no node fits)" }),
            el("td", { text: u.madeRoomBy.length ? u.madeRoomBy.join(", ") : "-" }),
            el("td", { "class": "reason", text: u.reason || "-" })]);
        }
      };
    }), "order", false);
  }
  var notes = report.notes || [];
  if (notes.length) {
    document.getElementById("notes").hidden = false;
    new Table("notes", notes.map(function (n) {
      return {
        filter: { nodes: n.node ? [n.node] : undefined, plugin: n.plugin },
        keys: { profile: n.profile, plugin: n.plugin, node: n.node || "", message: n.message },
        make: function () {
          return el("tr", {}, [el("td", { text: n.profile }), el("td", { text: n.plugin }),
            el("td", { text: n.node || "-" }), el("td", { text: (n.skipped ? "skipped the cycle: " : "") + n.message })]);
        }
      };
    }), "plugin", false);
  }
  var notChosen = report.notChosen || [];
  if (notChosen.length) {
    document.getElementById("not-chosen").hidden = false;
    document.getElementById("not-chosen-count").textContent = "(" + notChosen.length + ")";
    new Table("not-chosen", notChosen.map(function (n) {
      return {
        filter: { nodes: n.node ? [n.node] : undefined, namespace: ns(n.pod), plugin: n.plugin },
        keys: { pod: name(n.pod), namespace: ns(n.pod), node: n.node || "", plugin: n.plugin, profile: n.profile, reason: n.reason },
        make: function () {
          return el("tr", { "data-pod": n.pod }, [el("td", { text: name(n.pod) }), el("td", { text: ns(n.pod) }),
            el("td", { text: n.node || "-" }), el("td", { text: n.plugin }), el("td", { text: n.profile }),
            el("td", { "class": "reason", text: n.reason })]);
        }
      };
    }), "pod", false);
  }
  // Rows with no node (tenants, notes of a whole plugin) pass the node filter only when it is empty.
  ["f-node", "f-ns"].forEach(function (id) { document.getElementById(id).oninput = function () { tables.forEach(function (t) { t.draw(); }); }; });
  sel.onchange = function () { tables.forEach(function (t) { t.draw(); }); };
  document.getElementById("print").onclick = function () { window.print(); };
  document.body.setAttribute("data-ready", "true");
})();
"#;
