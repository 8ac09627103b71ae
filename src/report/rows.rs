//! The report's rows, made from a plan (and, after a real run, what each attempt did).

use super::{
    EvictionRow, MeasuredRow, NodeRow, NotChosenRow, NoteRow, ReadRow, Report, Sections,
    ThresholdRow,
};
use crate::framework::{MeasuredUsage, PlannedEviction, Thresholds, UtilizationThresholds};
use crate::outcome::Attempt;
use crate::plan::EvictionPlan;
use crate::snapshot::{ClusterSnapshot, Node, NodeId, Resources};
use rayon::iter::{IndexedParallelIterator, IntoParallelRefIterator, ParallelIterator};
use std::collections::BTreeMap;

impl Report {
    /// The report of a plan no eviction of which was attempted (a dry run).
    pub fn new(snap: &ClusterSnapshot, plan: &EvictionPlan) -> Report {
        Report::of(snap, plan, &[])
    }

    /// The report of a plan and each of its evictions' attempt, in plan order (none in a dry
    /// run: the evictions then carry no result).
    pub fn of(snap: &ClusterSnapshot, plan: &EvictionPlan, attempts: &[Attempt]) -> Report {
        // Rows are built on all cores, in plan order (an indexed collect).
        let (evictions, nodes): (Vec<EvictionRow>, Vec<NodeRow>) = rayon::join(
            || {
                plan.evictions
                    .par_iter()
                    .enumerate()
                    .map(|(i, e)| eviction_row(snap, e, attempts.get(i)))
                    .collect()
            },
            || {
                plan.nodes
                    .par_iter()
                    .map(|&n| node_row(snap, plan, n))
                    .collect()
            },
        );
        Report {
            evictions,
            nodes,
            ..Report::without_rows(snap, plan)
        }
    }

    /// The report with no eviction and no node rows: its notes, candidates not chosen,
    /// the sections of plugin findings and the thresholds.
    pub(super) fn without_rows(snap: &ClusterSnapshot, plan: &EvictionPlan) -> Report {
        let notes = plan
            .notes
            .iter()
            .filter(|n| n.pod().is_none())
            .map(|n| NoteRow {
                profile: n.profile.clone(),
                plugin: n.plugin.to_string(),
                node: n.node.map(|id| snap.node(id).name.to_string()),
                message: n.message.clone(),
                skipped: n.skipped(),
            })
            .collect();
        let not_chosen = plan
            .notes
            .iter()
            .filter_map(|n| {
                n.pod().map(|p| NotChosenRow {
                    pod: snap.pod(p).key(),
                    node: n.node.map(|id| snap.node(id).name.to_string()),
                    profile: n.profile.clone(),
                    plugin: n.plugin.to_string(),
                    reason: n.message.clone(),
                })
            })
            .collect();
        Report {
            evictions: Vec::new(),
            nodes: Vec::new(),
            notes,
            not_chosen,
            findings: Sections::of(snap, &plan.findings),
            read: Some(ReadRow::of(snap)),
            thresholds: plan
                .findings
                .list::<Thresholds, _>()
                .iter()
                .map(ThresholdRow::of)
                .collect(),
        }
    }
}

impl ThresholdRow {
    fn of(t: &UtilizationThresholds) -> ThresholdRow {
        ThresholdRow {
            profile: t.profile.clone(),
            plugin: t.plugin.to_string(),
            low: t.low.clone(),
            high: t.high.clone(),
            deviation: t.deviation,
        }
    }
}

pub(super) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Measured figures as percentages: cpu and memory of allocatable, MetricResource as is.
fn measured_percentages(node: &Node, r: &Resources) -> BTreeMap<String, f64> {
    use crate::snapshot::usage::{capacity, METRIC_RESOURCE};
    let mut out = BTreeMap::new();
    for name in ["cpu", "memory"] {
        let cap = node.allocatable.get(name);
        if cap > 0 {
            out.insert(
                name.to_string(),
                round2(100.0 * r.get(name) as f64 / cap as f64),
            );
        }
    }
    if r.has(METRIC_RESOURCE) {
        let cap = capacity(node, METRIC_RESOURCE);
        out.insert(
            METRIC_RESOURCE.to_string(),
            round2(100.0 * r.get(METRIC_RESOURCE) as f64 / cap as f64),
        );
    }
    out
}

fn percentages(node: &Node, requested: &Resources) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (name, cap) in node.allocatable.iter() {
        if cap <= 0 {
            continue;
        }
        out.insert(
            name.to_string(),
            round2(100.0 * requested.get(name) as f64 / cap as f64),
        );
    }
    out
}

/// An eviction's row in the report, with what its attempt did (none in a dry run).
pub(super) fn eviction_row(
    snap: &ClusterSnapshot,
    e: &PlannedEviction,
    attempt: Option<&Attempt>,
) -> EvictionRow {
    EvictionRow {
        pod: snap.pod(e.pod).key(),
        node: snap.node(e.node).name.to_string(),
        profile: e.profile.clone(),
        plugin: e.plugin.to_string(),
        reason: e.reason.clone(),
        mechanism: e.mechanism.as_str().to_string(),
        destination: e.destination.map(|d| snap.node(d).name.to_string()),
        alternatives: e
            .alternatives
            .iter()
            .map(|&d| snap.node(d).name.to_string())
            .collect(),
        gang: e.gang.map(|g| snap.gang(g).describe()),
        budgets: e.budgets.clone(),
        result: attempt.map(|a| a.outcome.as_str().to_string()),
        landed: attempt.and_then(|a| a.landed.clone()),
    }
}

/// A node's row in the report.
pub(super) fn node_row(snap: &ClusterSnapshot, plan: &EvictionPlan, n: NodeId) -> NodeRow {
    let node = snap.node(n);
    let measured = MeasuredUsage::of(&plan.findings, n).map(|m| MeasuredRow {
        source: m.source.as_str().to_string(),
        before: measured_percentages(node, &m.before),
        after: measured_percentages(node, &m.after),
    });
    let after = &plan.requested_after;
    let i = n.index();
    let after_range = if after.uncertain(n) {
        let (low, high) = (
            percentages(node, &after.low[i]),
            percentages(node, &after.high[i]),
        );
        low.into_iter()
            .filter_map(|(k, lo)| Some((k.clone(), [lo, *high.get(&k)?])))
            .filter(|(_, [lo, hi])| lo != hi)
            .collect()
    } else {
        BTreeMap::new()
    };
    NodeRow {
        name: node.name.to_string(),
        before: percentages(node, snap.node_requested(n)),
        after: percentages(node, &after.predicted[i]),
        after_range,
        measured,
    }
}
