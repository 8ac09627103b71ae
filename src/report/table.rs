//! The table report, for people: cells escaped for the terminal and cut past
//! [`CELL_MAX`] characters.

use super::{NodeRow, Report};
use std::fmt::Write as _;

pub(super) fn write(report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    out.write_all(escape_for_terminal(&table(report)).as_bytes())
}

fn table(report: &Report) -> String {
    let mut out = String::new();
    if let Some(read) = &report.read {
        let _ = writeln!(out, "Read: {read}");
    }
    evictions(report, &mut out);
    nodes(report, &mut out);
    measured(report, &mut out);
    report.findings.table(&mut out);
    notes(report, &mut out);

    out
}

/// The planned evictions, with their destinations.
fn evictions(report: &Report, out: &mut String) {
    let _ = writeln!(out, "Planned evictions: {}", report.evictions.len());
    if !report.evictions.is_empty() {
        // The destination, and the nodes kube-scheduler is as likely to pick:
        // `node-b2 (or node-c1, node-c2)`.
        let destinations: Vec<String> = report
            .evictions
            .iter()
            .map(|e| {
                let d = e.destination.as_deref().unwrap_or("-");
                if e.alternatives.is_empty() {
                    d.to_string()
                } else {
                    format!("{d} (or {})", e.alternatives.join(", "))
                }
            })
            .collect();
        // The mechanism is a column only when a move is a surge (DefaultEvictor's moveMode).
        let surges = report.evictions.iter().any(|e| e.mechanism != "evict");
        let rows: Vec<Vec<&str>> = report
            .evictions
            .iter()
            .zip(&destinations)
            .map(|(e, d)| {
                let mut row = vec![e.pod.as_str(), e.node.as_str()];
                if surges {
                    row.push(e.mechanism.as_str());
                }
                row.extend([
                    d.as_str(),
                    e.profile.as_str(),
                    e.plugin.as_str(),
                    e.reason.as_str(),
                ]);
                row
            })
            .collect();
        let mut headers = vec!["POD", "NODE"];
        if surges {
            headers.push("MOVE");
        }
        headers.extend(["DESTINATION", "PROFILE", "PLUGIN", "REASON"]);
        write_table(out, &headers, &rows);
    }
}

/// Each node's requests before and after the plan.
fn nodes(report: &Report, out: &mut String) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Node utilization (requests as % of allocatable, before -> after):"
    );
    let mut extra: Vec<&str> = Vec::new();
    for n in &report.nodes {
        for k in n.before.keys() {
            if !["cpu", "memory", "pods"].contains(&k.as_str()) && !extra.contains(&k.as_str()) {
                extra.push(k);
            }
        }
    }
    extra.sort();
    let mut headers: Vec<String> =
        vec!["NODE".into(), "CPU".into(), "MEMORY".into(), "PODS".into()];
    headers.extend(extra.iter().map(|e| e.to_uppercase()));
    // `82.5% -> 52.5%`; where a tie decides, the range too: `15.0% -> 15.0% (15.0-30.0%)`.
    let cell = |n: &NodeRow, k: &str| -> String {
        let range = n
            .after_range
            .get(k)
            .map(|[lo, hi]| format!(" ({lo:.1}-{hi:.1}%)"))
            .unwrap_or_default();
        match (n.before.get(k), n.after.get(k)) {
            (Some(b), Some(a)) if (b - a).abs() < 0.005 && range.is_empty() => {
                format!("{b:.1}%")
            }
            (Some(b), Some(a)) => format!("{b:.1}% -> {a:.1}%{range}"),
            _ => "-".into(),
        }
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for n in &report.nodes {
        let mut row = vec![n.name.clone()];
        for k in ["cpu", "memory", "pods"].iter().chain(extra.iter()) {
            row.push(cell(n, k));
        }
        rows.push(row);
    }
    write_table(out, &headers, &rows);
    if report.nodes.iter().any(|n| !n.after_range.is_empty()) {
        let _ = writeln!(
            out,
            "(low-high): replacements kube-scheduler may put here or on a tied node (it picks among them at random)"
        );
    }
    let unplaced = report
        .evictions
        .iter()
        .filter(|e| e.destination.is_none() && e.result.as_deref().is_none_or(|r| r == "evicted"))
        .count();
    if unplaced > 0 {
        let _ = writeln!(
            out,
            "{unplaced} of the evictions have no predicted destination (no node fits, or destinations are not predicted: --predict-destinations); their replacements are not in the after figures"
        );
    }
}

/// The measured usage plugins planned with, when they did.
fn measured(report: &Report, out: &mut String) {
    let measured: Vec<[String; 5]> = report
        .nodes
        .iter()
        .filter_map(|n| {
            let m = n.measured.as_ref()?;
            let cell = |k: &str| match (m.before.get(k), m.after.get(k)) {
                (Some(b), Some(a)) if (b - a).abs() < 0.005 => format!("{b:.1}%"),
                (Some(b), Some(a)) => format!("{b:.1}% -> {a:.1}%"),
                _ => "-".into(),
            };
            Some([
                n.name.clone(),
                m.source.clone(),
                cell("cpu"),
                cell("memory"),
                cell(crate::snapshot::usage::METRIC_RESOURCE),
            ])
        })
        .collect();
    if !measured.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Measured usage (% of allocatable, before -> after the plan):"
        );
        let rows: Vec<[&str; 5]> = measured
            .iter()
            .map(|r| [r[0].as_str(), &r[1], &r[2], &r[3], &r[4]])
            .collect();
        write_table(
            out,
            &["NODE", "SOURCE", "CPU", "MEMORY", "METRICRESOURCE"],
            &rows,
        );
    }
}

/// The notes, and the candidates not chosen and why.
fn notes(report: &Report, out: &mut String) {
    if !report.notes.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Notes:");
        for n in &report.notes {
            let node = n
                .node
                .as_deref()
                .map(|x| format!(" node {x}:"))
                .unwrap_or_default();
            // The planner's own notes (a cycle skipped whole) are of no profile nor plugin.
            let by = if n.plugin.is_empty() {
                String::new()
            } else {
                format!(" {}/{}:", n.profile, n.plugin)
            };
            let _ = writeln!(out, "-{by}{node} {}", n.message);
        }
    }
    if !report.not_chosen.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Candidates not chosen:");
        let rows: Vec<[&str; 5]> = report
            .not_chosen
            .iter()
            .map(|n| {
                [
                    n.pod.as_str(),
                    n.node.as_deref().unwrap_or("-"),
                    n.profile.as_str(),
                    n.plugin.as_str(),
                    n.reason.as_str(),
                ]
            })
            .collect();
        write_table(out, &["POD", "NODE", "PROFILE", "PLUGIN", "WHY NOT"], &rows);
    }
}

/// Whether `c` is written as `\u{..}` on a terminal: every control character but the
/// newline, and every character that reorders text (bidirectional overrides and isolates).
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// How `c` is written on a terminal: itself, or `\u{..}` when [`hidden`].
fn push_escaped(out: &mut String, c: char) {
    if hidden(c) {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    } else {
        out.push(c);
    }
}

/// The number of characters `c` takes once escaped.
fn escaped_width(c: char) -> usize {
    if hidden(c) {
        // `\u{` + hex digits + `}`
        4 + (32 - (c as u32 | 1).leading_zeros()).div_ceil(4) as usize
    } else {
        1
    }
}

/// `text` with every [`hidden`] character written as `\u{..}`: names come from the
/// cluster, and must not drive the terminal (ANSI escapes) or disguise what is printed.
pub(super) fn escape_for_terminal(text: &str) -> String {
    if !text.contains(hidden) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

/// The most characters a table cell shows; longer text is cut, ending in [`ELLIPSIS`]
/// (`-o json`, `-o yaml` and `-o html` carry it whole). A nodeFit "why not" over thousands
/// of tainted nodes is hundreds of kilobytes on one line otherwise.
pub(super) const CELL_MAX: usize = 300;
pub(super) const ELLIPSIS: char = '\u{2026}';

/// A cell as a table shows it: escaped for the terminal and cut to [`CELL_MAX`]
/// characters; its width in characters, and whether it was cut.
pub(super) fn table_cell(text: &str) -> (std::borrow::Cow<'_, str>, usize, bool) {
    let width: usize = text.chars().map(escaped_width).sum();
    if width <= CELL_MAX {
        let cell = if text.contains(hidden) {
            escape_for_terminal(text).into()
        } else {
            text.into()
        };
        return (cell, width, false);
    }
    // Whole characters, whole escapes: room for the ellipsis is kept.
    let mut out = String::with_capacity(CELL_MAX + 8);
    let mut shown = 0;
    for c in text.chars() {
        let w = escaped_width(c);
        if shown + w > CELL_MAX - 1 {
            break;
        }
        push_escaped(&mut out, c);
        shown += w;
    }
    out.push(ELLIPSIS);
    (out.into(), shown + 1, true)
}

/// Writes `rows` under `headers`, each column as wide as its widest cell (in characters,
/// after escaping; at most [`CELL_MAX`]), two spaces apart. When a cell was cut, a line
/// under the table says so.
pub(super) fn write_table<H, R, C>(out: &mut String, headers: &[H], rows: &[R])
where
    H: AsRef<str>,
    R: AsRef<[C]>,
    C: AsRef<str>,
{
    let headers: Vec<_> = headers.iter().map(|h| table_cell(h.as_ref())).collect();
    let rows: Vec<Vec<_>> = rows
        .iter()
        .map(|r| r.as_ref().iter().map(|c| table_cell(c.as_ref())).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.1).collect();
    let mut cut = false;
    for r in &rows {
        for (i, (_, w, c)) in r.iter().enumerate() {
            widths[i] = widths[i].max(*w);
            cut |= c;
        }
    }
    let mut line = String::new();
    for cells in std::iter::once(&headers).chain(&rows) {
        line.clear();
        for (i, (text, w, _)) in cells.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(text);
            // Padded by hand: a width argument (`{:<w$}`) must fit in 16 bits.
            line.extend(std::iter::repeat_n(' ', widths[i].saturating_sub(*w)));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if cut {
        let _ = writeln!(
            out,
            "(cells longer than {CELL_MAX} characters are cut, ending in {ELLIPSIS}; \
             -o json, -o yaml and -o html have the full text)"
        );
    }
}
