//! The JSON report: what `serde_json::to_writer_pretty` writes for a [`Report`], and a
//! newline. A plan's rows are made, serialized and dropped on all cores, a batch at a time,
//! without the report being built first (a large plan's rows are tens of megabytes of fresh
//! memory otherwise).

use super::findings::{Section, Visit};
use super::rows::{eviction_row, node_row};
use super::{Input, Report};
use rayon::iter::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use serde::Serialize;
use std::io::Write;

/// Writes the report of `input`. The JSON streams through a small buffer: a large plan's
/// report is megabytes, and a buffer that size costs a page fault for every 4 kB of it.
pub(super) fn write(input: Input<'_>, out: &mut dyn Write) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    match input {
        Input::Plan {
            snap,
            plan,
            attempts,
        } => write_json(
            Rows(plan.evictions.len(), |i| {
                eviction_row(snap, &plan.evictions[i], attempts.get(i))
            }),
            Rows(plan.nodes.len(), |i| node_row(snap, plan, plan.nodes[i])),
            &Report::without_rows(snap, plan),
            &mut w,
        )?,
        Input::Report(report) => write_json(
            Rows(report.evictions.len(), |i| &report.evictions[i]),
            Rows(report.nodes.len(), |i| &report.nodes[i]),
            report,
            &mut w,
        )?,
    }
    w.flush()
}

/// `.0` rows, row `i` made by `.1`.
struct Rows<F>(usize, F);

/// The report as `serde_json::to_writer_pretty` writes it, and a newline: the evictions and
/// nodes from `evictions` and `nodes`, the other lists from `rest`.
fn write_json<E, N, FE, FN>(
    evictions: Rows<FE>,
    nodes: Rows<FN>,
    rest: &Report,
    w: &mut impl std::io::Write,
) -> std::io::Result<()>
where
    E: Serialize,
    N: Serialize,
    FE: Fn(usize) -> E + Sync,
    FN: Fn(usize) -> N + Sync,
{
    w.write_all(b"{\n  \"evictions\": ")?;
    write_rows(evictions, w)?;
    w.write_all(b",\n  \"nodes\": ")?;
    write_rows(nodes, w)?;
    // The lists left out when empty, in field order, by their serialized names.
    list("notes", &rest.notes, w)?;
    list("notChosen", &rest.not_chosen, w)?;
    rest.findings.visit(&mut Lists(w))?;
    if let Some(read) = &rest.read {
        w.write_all(b",\n  \"read\": ")?;
        write_object_field(read, w)?;
    }
    w.write_all(b"\n}\n")
}

/// An object that is a field of the top-level object, as serde_json's pretty printer
/// writes it there.
fn write_object_field<T: Serialize>(value: &T, w: &mut impl std::io::Write) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    w.write_all(text.replace('\n', "\n  ").as_bytes())
}

/// Writes each section of plugin findings as a [`list`].
struct Lists<'w, W>(&'w mut W);

impl<W: std::io::Write> Visit for Lists<'_, W> {
    type Error = std::io::Error;
    fn section<S: Section>(&mut self, key: &'static str, rows: &[S]) -> std::io::Result<()> {
        list(key, rows, self.0)
    }
}

/// A field of the top-level object that is left out when empty, after the others.
fn list<T: Serialize + Sync>(
    name: &str,
    rows: &[T],
    w: &mut impl std::io::Write,
) -> std::io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    write!(w, ",\n  \"{name}\": ")?;
    write_rows(Rows(rows.len(), |i| &rows[i]), w)
}

/// Writes rows as serde_json's pretty printer writes a list that is a field of the
/// top-level object. Rows are made and serialized on all cores, a batch at a time, into
/// buffers that go back to a pool once written (memory for a batch's text, reused). Each
/// row is serialized at the top level and then indented: its text has a newline only
/// between tokens (strings escape theirs), so each newline gains the four spaces of the two
/// levels it sits under.
fn write_rows<T, F>(rows: Rows<F>, w: &mut impl std::io::Write) -> std::io::Result<()>
where
    T: Serialize,
    F: Fn(usize) -> T + Sync,
{
    const BATCH: usize = 2048;
    const PIECE: usize = 128;
    let Rows(len, make) = rows;
    if len == 0 {
        return w.write_all(b"[]");
    }
    let buffers: std::sync::Mutex<Vec<Vec<u8>>> = Default::default();
    let pool = || buffers.lock().unwrap_or_else(|e| e.into_inner());
    w.write_all(b"[")?;
    for batch in (0..len).step_by(BATCH) {
        let pieces: Vec<std::io::Result<Vec<u8>>> = (batch..len.min(batch + BATCH))
            .into_par_iter()
            .step_by(PIECE)
            .map_init(Vec::new, |row, start| {
                let mut out = pool().pop().unwrap_or_default();
                out.clear();
                for i in start..len.min(start + PIECE) {
                    out.extend_from_slice(if i == 0 { b"\n    " } else { b",\n    " });
                    row.clear();
                    serde_json::to_writer_pretty(&mut *row, &make(i))?;
                    for line in row.split_inclusive(|&c| c == b'\n') {
                        out.extend_from_slice(line);
                        if line.ends_with(b"\n") {
                            out.extend_from_slice(b"    ");
                        }
                    }
                }
                Ok(out)
            })
            .collect();
        for piece in pieces {
            let piece = piece?;
            w.write_all(&piece)?;
            pool().push(piece);
        }
    }
    w.write_all(b"\n  ]")
}

/// About the size of the pretty JSON report (a little more, usually).
pub(super) fn size_hint(report: &Report) -> usize {
    let evictions: usize = report
        .evictions
        .iter()
        .map(|e| {
            // Keys, quotes and indentation: about 150 bytes a row.
            160 + e.pod.len()
                + e.node.len()
                + e.profile.len()
                + e.plugin.len()
                + e.reason.len()
                + e.destination.as_ref().map_or(0, |d| d.len() + 30)
                + e.alternatives.iter().map(|a| a.len() + 12).sum::<usize>()
                + e.gang.as_ref().map_or(0, |g| g.len() + 20)
        })
        .sum();
    let nodes: usize = report
        .nodes
        .iter()
        .map(|n| 100 + n.name.len() + 60 * (n.before.len() + n.after.len()))
        .sum();
    1024 + evictions
        + nodes
        + 300 * (report.notes.len() + report.not_chosen.len())
        + 400 * report.findings.rows()
}
