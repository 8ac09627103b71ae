//! The dry-run report: a plan rendered for people (table) and machines (JSON, YAML).
//!
//! The JSON shape is a stable contract:
//! `{"evictions":[{"pod":"<ns>/<name>","node":"..","profile":"..","plugin":"..","reason":"..",
//!   "destination":".."}],
//!   "nodes":[{"name":"..","before":{"cpu":12.5,..},"after":{..}}]}`
//! where before/after are requests as a percentage of allocatable, per resource (`after`: the
//! evicted pods gone, their replacements and the pending pods the plan places where they are
//! predicted to land; `"afterRange":{"cpu":[low,high],..}` where that depends on a tie
//! kube-scheduler breaks at random, absent otherwise), and
//! `destination` is the node the placement simulator predicts for the pod's replacement
//! (absent when no node fits), and `alternatives` the other nodes with the same best
//! kube-scheduler score, any of which kube-scheduler is as likely to pick (absent when none). A pod evicted with its whole gang (`gangPolicy: WholeGang`)
//! also carries `"gang":"PodGroup <ns>/<name> (<api group>)"`; the gang's members follow one
//! another in the list.
//! When a plugin planned with measured usage, a node also carries
//! `"measured":{"source":"metrics-server"|"prometheus","before":{..},"after":{..}}` (measured
//! usage as a percentage of allocatable; `MetricResource` as the query's percentage), and
//! `"notes"` lists plugins that skipped the cycle and nodes left out, with why, and
//! `"notChosen"` the candidates a plugin looked at but did not evict, with why
//! (`{"pod":"<ns>/<name>","node":"..","profile":"..","plugin":"..","reason":".."}`: nodeFit,
//! placementCheck, a limit, a disruption budget); absent when there are none.
//! When a profile orders its candidates by DominantResourceFairness, `"tenants"` lists each
//! tenant holding resources, sorted by tenant:
//! `{"tenant":"..","before":60.0,"after":26.0,"dominantResource":"cpu"}` (dominant share as a
//! percentage of the Ready nodes' allocatable; `dominantResource` is the resource of the share
//! before the plan, or after it when the tenant held nothing before; with `tenantLabel` each row
//! also names the label as `"tenantLabel"`). Without it the field is absent.
//! When MakeRoomForPendingPods runs, `"pending"` lists each pending unit it looked at, in plan
//! order: `{"pod":"<ns>/<name>","destination":"..","madeRoomBy":["<ns>/<name>",..]}` for a
//! pod, `{"group":"<ns>/<name>","pods":[..],"destinations":{"<ns>/<name>":".."},"madeRoomBy":[..]}`
//! for the pending members of a gang; a unit no set of moves can place has
//! `"destination":null` and a `"reason"` (the scheduler's). Absent when there are none.

mod html;

use crate::plan::EvictionPlan;
use crate::snapshot::{ClusterSnapshot, Node, Resources};
use rayon::iter::{
    IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator, ParallelIterator,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub evictions: Vec<EvictionRow>,
    pub nodes: Vec<NodeRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<NoteRow>,
    /// Candidates a plugin looked at but did not choose, and why (nodeFit, placementCheck,
    /// a limit, a disruption budget).
    #[serde(default, rename = "notChosen", skip_serializing_if = "Vec::is_empty")]
    pub not_chosen: Vec<NotChosenRow>,
    /// Tenants' dominant shares, when a profile orders by DominantResourceFairness.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantRow>,
    /// Pending pods and gangs MakeRoomForPendingPods made room for (or could not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingRow>,
    /// How many objects of each kind the plan was made from (a short read shows here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadRow>,
}

/// The objects a plan was made from, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadRow {
    pub nodes: usize,
    pub pods: usize,
    pub disruption_budgets: usize,
    pub pod_groups: usize,
    pub namespaces: usize,
    pub priority_classes: usize,
}

impl ReadRow {
    pub fn of(snap: &ClusterSnapshot) -> ReadRow {
        ReadRow {
            nodes: snap.nodes.len(),
            pods: snap.pods.len(),
            disruption_budgets: snap.pdbs.len(),
            pod_groups: snap.pod_groups.len(),
            namespaces: snap.namespaces.len(),
            priority_classes: snap.priority_classes.len(),
        }
    }
}

impl std::fmt::Display for ReadRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "nodes {}, pods {}, disruption budgets {}, pod groups {}, namespaces {}, priority classes {}",
            self.nodes,
            self.pods,
            self.disruption_budgets,
            self.pod_groups,
            self.namespaces,
            self.priority_classes
        )
    }
}

/// A tenant's dominant share of the cluster before and after the plan, in percent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantRow {
    /// A namespace, or a value of `tenantLabel` (`""`: pods without the label).
    pub tenant: String,
    /// The label whose values are the tenants; absent when tenants are namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_label: Option<String>,
    pub before: f64,
    pub after: f64,
    /// The resource of the dominant share (`cpu`, `memory`, `nvidia.com/gpu`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dominant_resource: Option<String>,
}

/// A pending pod, or the pending members of a gang, and the moves that make its room: where
/// the simulator places it (`destination` for a pod, `destinations` for a gang's pods), or,
/// when no set of moves can, `"destination": null` and the scheduler's `reason`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRow {
    /// The pending pod (`ns/name`), for a unit of one pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The gang (`ns/name` of its PodGroup), for a gang's pending members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The gang's pending pods placed together (`ns/name`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<String>,
    /// A pod's node; `null` when the unit (pod or gang) cannot be placed, absent for a gang
    /// that can.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_or_null"
    )]
    pub destination: Option<Option<String>>,
    /// Each gang pod's node.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub destinations: BTreeMap<String, String>,
    /// The planned moves (`ns/name`) that make the room, in plan order.
    pub made_room_by: Vec<String>,
    /// Why the unit cannot be placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A field that is present: its value, `null` included.
fn present_or_null<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

impl PendingRow {
    fn of(snap: &ClusterSnapshot, u: &crate::framework::PendingUnit) -> PendingRow {
        let key = |p: crate::snapshot::PodId| snap.pod(p).key();
        let node = |n: crate::snapshot::NodeId| snap.node(n).name.to_string();
        let placed = u.reason.is_none() && u.destinations.iter().all(Option::is_some);
        let made_room_by = u.made_room_by.iter().map(|&p| key(p)).collect();
        match u.gang {
            Some(g) => {
                let gang = snap.gang(g);
                PendingRow {
                    pod: None,
                    group: Some(format!("{}/{}", gang.namespace, gang.name)),
                    pods: u.pods.iter().map(|&p| key(p)).collect(),
                    destination: (!placed).then_some(None),
                    destinations: u
                        .pods
                        .iter()
                        .zip(&u.destinations)
                        .filter_map(|(&p, d)| d.map(|d| (key(p), node(d))))
                        .collect(),
                    made_room_by,
                    reason: u.reason.clone(),
                }
            }
            None => PendingRow {
                pod: u.pods.first().map(|&p| key(p)),
                group: None,
                pods: Vec::new(),
                destination: Some(u.destinations.first().copied().flatten().map(node)),
                destinations: BTreeMap::new(),
                made_room_by,
                reason: u.reason.clone(),
            },
        }
    }

    /// The unit's name: the pod, or `group ns/name`.
    fn unit(&self) -> String {
        match (&self.pod, &self.group) {
            (Some(p), _) => p.clone(),
            (None, Some(g)) => format!("group {g}"),
            (None, None) => "-".into(),
        }
    }

    /// Where the unit goes: the pod's node, or each gang pod's `name=node`; `-` when nowhere.
    fn where_to(&self) -> String {
        if let Some(Some(d)) = &self.destination {
            return d.clone();
        }
        if self.destinations.is_empty() {
            return "-".into();
        }
        self.destinations
            .iter()
            .map(|(p, n)| format!("{}={n}", p.rsplit('/').next().unwrap_or(p)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A plugin that skipped the cycle, or a node a plugin left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteRow {
    pub profile: String,
    pub plugin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub message: String,
    /// The plugin skipped the whole cycle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// A candidate pod a plugin did not choose, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotChosenRow {
    pub pod: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub profile: String,
    pub plugin: String,
    pub reason: String,
}

/// Measured usage a plugin planned with on a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredRow {
    /// `metrics-server` or `prometheus`.
    pub source: String,
    pub before: BTreeMap<String, f64>,
    pub after: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictionRow {
    pub pod: String,
    pub node: String,
    pub profile: String,
    pub plugin: String,
    pub reason: String,
    /// The node where the placement simulator predicts kube-scheduler puts the pod's
    /// replacement, after every eviction and placement planned before it; absent when no node
    /// fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// The other nodes with the same best kube-scheduler score as `destination` (it picks
    /// among them at random), sorted by name; absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
    /// The gang evicted whole with the pod (`gangPolicy: WholeGang`), as
    /// `PodGroup <ns>/<name> (<api group>)`; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<String>,
    /// What happened, in live runs (`evicted`, `blocked_by_disruption_budget`, ...); absent in
    /// dry-run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// With `--await-placement`: the node the replacement was bound to; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    pub name: String,
    pub before: BTreeMap<String, f64>,
    /// Once the plan is carried out: the evicted pods gone, their replacements (and the
    /// pending pods the plan makes room for) where they are predicted to land.
    pub after: BTreeMap<String, f64>,
    /// When replacements may land here or elsewhere (kube-scheduler breaks a tie at random),
    /// the lowest and highest `after` by resource; absent when `after` is certain.
    #[serde(
        default,
        rename = "afterRange",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub after_range: BTreeMap<String, [f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredRow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Yaml,
    /// One self-contained HTML page (styles, script and data inline).
    Html,
}

/// The utilization thresholds of one profile's LowNodeUtilization or HighNodeUtilization, as
/// the HTML page draws them on the node bars: `low` is "underutilized below", `high`
/// "overutilized above" (percent of allocatable, by resource).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdRow {
    pub profile: String,
    pub plugin: String,
    pub low: BTreeMap<String, f64>,
    pub high: BTreeMap<String, f64>,
    /// `useDeviationThresholds`: the figures are relative to the nodes' mean.
    pub deviation: bool,
}

impl ThresholdRow {
    /// The thresholds of every enabled LowNodeUtilization and HighNodeUtilization in
    /// `policy` (a validated policy: the figures are numbers).
    pub fn of_policy(policy: &crate::policy::Policy) -> Vec<ThresholdRow> {
        let figures = |v: &serde_json::Value| -> BTreeMap<String, f64> {
            v.as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut out = Vec::new();
        for profile in &policy.profiles {
            for (plugin, high_key) in [
                ("LowNodeUtilization", Some("targetThresholds")),
                ("HighNodeUtilization", None),
            ] {
                if !profile.plugins.balance.enabled.iter().any(|p| p == plugin) {
                    continue;
                }
                let args = profile
                    .plugin_config
                    .iter()
                    .find(|c| c.name == plugin)
                    .map(|c| &c.args);
                let Some(args) = args else { continue };
                out.push(ThresholdRow {
                    profile: profile.name.clone(),
                    plugin: plugin.to_string(),
                    low: figures(&args["thresholds"]),
                    high: high_key.map(|k| figures(&args[k])).unwrap_or_default(),
                    deviation: args["useDeviationThresholds"].as_bool().unwrap_or(false),
                });
            }
        }
        out
    }
}

/// Writes `report` as the HTML page, with `thresholds` drawn on the node bars.
pub fn write_html(
    report: &Report,
    thresholds: &[ThresholdRow],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    html::write(report, thresholds, out)
}

fn round2(v: f64) -> f64 {
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

/// An eviction's row in the report.
fn eviction_row(snap: &ClusterSnapshot, e: &crate::framework::PlannedEviction) -> EvictionRow {
    EvictionRow {
        pod: snap.pod(e.pod).key(),
        node: snap.node(e.node).name.to_string(),
        profile: e.profile.clone(),
        plugin: e.plugin.to_string(),
        reason: e.reason.clone(),
        destination: e.destination.map(|d| snap.node(d).name.to_string()),
        alternatives: e
            .alternatives
            .iter()
            .map(|&d| snap.node(d).name.to_string())
            .collect(),
        gang: e.gang.map(|g| snap.gang(g).describe()),
        result: None,
        landed: None,
    }
}

/// A node's row in the report.
fn node_row(snap: &ClusterSnapshot, plan: &EvictionPlan, n: crate::snapshot::NodeId) -> NodeRow {
    let node = snap.node(n);
    let measured = plan
        .measured
        .get(n as usize)
        .and_then(Option::as_ref)
        .map(|m| MeasuredRow {
            source: m.source.as_str().to_string(),
            before: measured_percentages(node, &m.before),
            after: measured_percentages(node, &m.after),
        });
    let after = &plan.requested_after;
    let i = n as usize;
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

/// Writes the report of `plan` as `Report::new(snap, plan).write_to(format, out)` does. The
/// JSON is written without building the report first: each row is made, serialized and
/// dropped on one of the cores (a large plan's rows are tens of megabytes of fresh memory
/// otherwise).
pub fn write_plan(
    snap: &ClusterSnapshot,
    plan: &EvictionPlan,
    format: Format,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Json => {
            use std::io::Write as _;
            let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
            write_json(
                Rows(plan.evictions.len(), |i| {
                    eviction_row(snap, &plan.evictions[i])
                }),
                Rows(plan.nodes.len(), |i| node_row(snap, plan, plan.nodes[i])),
                &Report::without_rows(snap, plan),
                &mut w,
            )?;
            w.flush()
        }
        Format::Yaml | Format::Table | Format::Html => {
            Report::new(snap, plan).write_to(format, out)
        }
    }
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
    list("tenants", &rest.tenants, w)?;
    list("pending", &rest.pending, w)?;
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

impl Report {
    pub fn new(snap: &ClusterSnapshot, plan: &EvictionPlan) -> Report {
        // Rows are built on all cores, in plan order (an indexed collect).
        let (evictions, nodes): (Vec<EvictionRow>, Vec<NodeRow>) = rayon::join(
            || {
                plan.evictions
                    .par_iter()
                    .map(|e| eviction_row(snap, e))
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

    /// The report with no eviction and no node rows: its notes, candidates not chosen and
    /// tenants.
    fn without_rows(snap: &ClusterSnapshot, plan: &EvictionPlan) -> Report {
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
        let tenants = plan
            .tenants
            .iter()
            .map(|t| TenantRow {
                tenant: t.tenant.clone(),
                tenant_label: t.tenant_label.clone(),
                before: round2(100.0 * t.before),
                after: round2(100.0 * t.after),
                dominant_resource: t
                    .before_resource
                    .clone()
                    .or_else(|| t.after_resource.clone()),
            })
            .collect();
        let pending = plan
            .pending
            .iter()
            .map(|u| PendingRow::of(snap, u))
            .collect();
        Report {
            evictions: Vec::new(),
            nodes: Vec::new(),
            notes,
            not_chosen,
            tenants,
            pending,
            read: Some(ReadRow::of(snap)),
        }
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => {
                // Sized up front: a large plan's report is megabytes, grown by doubling it
                // would be copied over and over.
                let mut buf = Vec::with_capacity(self.json_size_hint());
                self.write_json(&mut buf).expect("report serializes");
                String::from_utf8(buf).expect("serde_json writes UTF-8")
            }
            Format::Yaml => serde_saphyr::to_string(self).expect("report serializes"),
            Format::Table => escape_for_terminal(&self.table()),
            Format::Html => {
                let mut buf = Vec::new();
                html::write(self, &[], &mut buf).expect("report serializes");
                String::from_utf8(buf).expect("the page is UTF-8")
            }
        }
    }

    /// Writes the report to `out`. The JSON streams through a small buffer: a large plan's
    /// report is megabytes, and a buffer that size costs a page fault for every 4 kB of it.
    pub fn write_to(&self, format: Format, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        match format {
            Format::Json => {
                let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
                self.write_json(&mut w)?;
                w.flush()
            }
            Format::Html => html::write(self, &[], out),
            Format::Yaml | Format::Table => out.write_all(self.render(format).as_bytes()),
        }
    }

    /// The report as `serde_json::to_writer_pretty` writes it, and a newline.
    fn write_json(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        write_json(
            Rows(self.evictions.len(), |i| &self.evictions[i]),
            Rows(self.nodes.len(), |i| &self.nodes[i]),
            self,
            w,
        )
    }

    /// About the size of the pretty JSON report (a little more, usually).
    fn json_size_hint(&self) -> usize {
        let evictions: usize = self
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
        let nodes: usize = self
            .nodes
            .iter()
            .map(|n| 100 + n.name.len() + 60 * (n.before.len() + n.after.len()))
            .sum();
        1024 + evictions
            + nodes
            + 300 * (self.notes.len() + self.not_chosen.len())
            + 400 * self.pending.len()
    }

    fn table(&self) -> String {
        let mut out = String::new();
        if let Some(read) = &self.read {
            let _ = writeln!(out, "Read: {read}");
        }
        let _ = writeln!(out, "Planned evictions: {}", self.evictions.len());
        if !self.evictions.is_empty() {
            // The destination, and the nodes kube-scheduler is as likely to pick:
            // `node-b2 (or node-c1, node-c2)`.
            let destinations: Vec<String> = self
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
            let rows: Vec<[&str; 6]> = self
                .evictions
                .iter()
                .zip(&destinations)
                .map(|(e, d)| {
                    [
                        e.pod.as_str(),
                        e.node.as_str(),
                        d.as_str(),
                        e.profile.as_str(),
                        e.plugin.as_str(),
                        e.reason.as_str(),
                    ]
                })
                .collect();
            write_table(
                &mut out,
                &["POD", "NODE", "DESTINATION", "PROFILE", "PLUGIN", "REASON"],
                &rows,
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Node utilization (requests as % of allocatable, before -> after):"
        );
        let mut extra: Vec<&str> = Vec::new();
        for n in &self.nodes {
            for k in n.before.keys() {
                if !["cpu", "memory", "pods"].contains(&k.as_str()) && !extra.contains(&k.as_str())
                {
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
        for n in &self.nodes {
            let mut row = vec![n.name.clone()];
            for k in ["cpu", "memory", "pods"].iter().chain(extra.iter()) {
                row.push(cell(n, k));
            }
            rows.push(row);
        }
        write_table(&mut out, &headers, &rows);
        if self.nodes.iter().any(|n| !n.after_range.is_empty()) {
            let _ = writeln!(
                out,
                "(low-high): replacements kube-scheduler may put here or on a tied node (it picks among them at random)"
            );
        }
        let unplaced = self
            .evictions
            .iter()
            .filter(|e| {
                e.destination.is_none() && e.result.as_deref().is_none_or(|r| r == "evicted")
            })
            .count();
        if unplaced > 0 {
            let _ = writeln!(
                out,
                "{unplaced} of the evictions have no predicted destination (no node fits, or destinations are not predicted: --predict-destinations); their replacements are not in the after figures"
            );
        }
        let measured: Vec<[String; 5]> = self
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
                &mut out,
                &["NODE", "SOURCE", "CPU", "MEMORY", "METRICRESOURCE"],
                &rows,
            );
        }
        if !self.tenants.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "Tenants (dominant share of the Ready nodes' allocatable, before -> after):"
            );
            let rows: Vec<[String; 3]> = self
                .tenants
                .iter()
                .map(|t| {
                    let name = match (&t.tenant_label, t.tenant.as_str()) {
                        (Some(l), "") => format!("(no {l} label)"),
                        (Some(l), v) => format!("{l}={v}"),
                        (None, v) => v.to_string(),
                    };
                    let share = if (t.before - t.after).abs() < 0.005 {
                        format!("{:.1}%", t.before)
                    } else {
                        format!("{:.1}% -> {:.1}%", t.before, t.after)
                    };
                    [
                        name,
                        t.dominant_resource.clone().unwrap_or("-".into()),
                        share,
                    ]
                })
                .collect();
            let rows: Vec<[&str; 3]> = rows
                .iter()
                .map(|r| [r[0].as_str(), r[1].as_str(), r[2].as_str()])
                .collect();
            write_table(&mut out, &["TENANT", "DOMINANT", "SHARE"], &rows);
        }
        if !self.pending.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "Pending pods and gangs:");
            let rows: Vec<[String; 4]> = self
                .pending
                .iter()
                .map(|p| {
                    [
                        p.unit(),
                        p.where_to(),
                        if p.made_room_by.is_empty() {
                            "-".into()
                        } else {
                            p.made_room_by.join(",")
                        },
                        p.reason.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            let rows: Vec<[&str; 4]> = rows
                .iter()
                .map(|r| [r[0].as_str(), r[1].as_str(), r[2].as_str(), r[3].as_str()])
                .collect();
            write_table(
                &mut out,
                &["PENDING", "DESTINATION", "MADE ROOM BY", "WHY NOT"],
                &rows,
            );
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "Notes:");
            for n in &self.notes {
                let node = n
                    .node
                    .as_deref()
                    .map(|x| format!(" node {x}:"))
                    .unwrap_or_default();
                let _ = writeln!(out, "- {}/{}:{node} {}", n.profile, n.plugin, n.message);
            }
        }
        if !self.not_chosen.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "Candidates not chosen:");
            let rows: Vec<[&str; 5]> = self
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
            write_table(
                &mut out,
                &["POD", "NODE", "PROFILE", "PLUGIN", "WHY NOT"],
                &rows,
            );
        }
        out
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
fn escape_for_terminal(text: &str) -> String {
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
const CELL_MAX: usize = 300;
const ELLIPSIS: char = '\u{2026}';

/// A cell as a table shows it: escaped for the terminal and cut to [`CELL_MAX`]
/// characters; its width in characters, and whether it was cut.
fn table_cell(text: &str) -> (std::borrow::Cow<'_, str>, usize, bool) {
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
fn write_table<H, R, C>(out: &mut String, headers: &[H], rows: &[R])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Pipeline;
    use crate::snapshot::synthetic::{self, Config};

    #[test]
    fn a_large_plan_reports_every_eviction_in_plan_order() {
        // Large enough for the rows to be split over the threads in many pieces.
        let snap = synthetic::snapshot(&Config::new(900, 30_000, 7));
        let policy =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/scale-policy.yaml");
        let pipeline = Pipeline::load(&policy, &crate::plugins::REGISTRY).unwrap();
        let plan = crate::plan::plan(&pipeline, &snap, 1_796_083_200).unwrap();
        assert!(
            plan.evictions.len() >= 4096,
            "{} evictions",
            plan.evictions.len()
        );
        let report = Report::new(&snap, &plan);
        assert_eq!(report.evictions.len(), plan.evictions.len());
        for (row, e) in report.evictions.iter().zip(&plan.evictions) {
            assert_eq!(row.pod, snap.pod(e.pod).key());
            assert_eq!(row.node, &*snap.node(e.node).name);
            assert_eq!(
                (row.plugin.as_str(), row.reason.as_str()),
                (e.plugin, e.reason.as_str())
            );
        }
        assert_eq!(report.nodes.len(), plan.nodes.len());
        // The JSON reads back as the same report, whatever its buffer was sized to, and is
        // what serde_json's pretty printer writes (rows in several batches and pieces);
        // written straight from the plan, every format is the report's.
        let json = report.render(Format::Json);
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), report);
        assert_eq!(json, serde_json::to_string_pretty(&report).unwrap() + "\n");
        assert!(!report.not_chosen.is_empty());
        // The only notes: budgets the hard-constraint repairs were given first.
        assert!(
            report
                .notes
                .iter()
                .all(|n| n.message.contains("of its evictions waited")),
            "{:?}",
            report.notes
        );
        for format in [Format::Json, Format::Yaml, Format::Table] {
            let mut out = Vec::new();
            write_plan(&snap, &plan, format, &mut out).unwrap();
            assert!(
                String::from_utf8(out).unwrap() == report.render(format),
                "{format:?}"
            );
        }
    }

    #[test]
    fn json_written_on_all_cores_is_serde_json_pretty_text() {
        let eviction = |i: usize| EvictionRow {
            pod: format!("ns/p{i}"),
            node: "n1".into(),
            profile: "p".into(),
            plugin: "LowNodeUtilization".into(),
            // Escaped characters, a newline among them: indentation must not touch them.
            reason: format!("line \"{i}\"\nnext\ttab \u{e9}"),
            destination: (i % 3 == 0).then(|| "n2".into()),
            alternatives: if i % 6 == 0 {
                vec!["n3".into(), "n4".into()]
            } else {
                Vec::new()
            },
            gang: (i % 5 == 0).then(|| "PodGroup ns/g (scheduling.x-k8s.io)".into()),
            result: (i % 7 == 0).then(|| "evicted".into()),
            landed: (i % 11 == 0).then(|| "n3".into()),
        };
        let percent = |cpu: f64| BTreeMap::from([("cpu".to_string(), cpu)]);
        let full = Report {
            evictions: (0..300).map(eviction).collect(),
            nodes: vec![
                NodeRow {
                    name: "n1".into(),
                    before: percent(80.5),
                    after: BTreeMap::new(),
                    after_range: BTreeMap::new(),
                    measured: Some(MeasuredRow {
                        source: "prometheus".into(),
                        before: percent(90.0),
                        after: percent(10.25),
                    }),
                },
                NodeRow {
                    name: "n2".into(),
                    before: BTreeMap::new(),
                    after: percent(1.0),
                    after_range: BTreeMap::from([("cpu".to_string(), [0.5, 1.5])]),
                    measured: None,
                },
            ],
            notes: vec![NoteRow {
                profile: "p".into(),
                plugin: "LowNodeUtilization".into(),
                node: None,
                message: "no metrics".into(),
                skipped: true,
            }],
            not_chosen: vec![NotChosenRow {
                pod: "ns/q".into(),
                node: Some("n1".into()),
                profile: "p".into(),
                plugin: "RemoveDuplicates".into(),
                reason: "budget".into(),
            }],
            tenants: vec![TenantRow {
                tenant: "a".into(),
                tenant_label: Some("team".into()),
                before: 60.0,
                after: 26.5,
                dominant_resource: Some("cpu".into()),
            }],
            pending: vec![
                PendingRow {
                    pod: Some("ml/solo".into()),
                    group: None,
                    pods: Vec::new(),
                    destination: Some(Some("n2".into())),
                    destinations: BTreeMap::new(),
                    made_room_by: vec!["ns/q".into()],
                    reason: None,
                },
                PendingRow {
                    pod: None,
                    group: Some("ml/train".into()),
                    pods: vec!["ml/t0".into()],
                    destination: Some(None),
                    destinations: BTreeMap::new(),
                    made_room_by: Vec::new(),
                    reason: Some("0/2 nodes are available".into()),
                },
            ],
            read: Some(ReadRow {
                nodes: 2,
                pods: 300,
                ..ReadRow::default()
            }),
        };
        let empty = Report {
            evictions: Vec::new(),
            nodes: Vec::new(),
            notes: Vec::new(),
            not_chosen: Vec::new(),
            tenants: Vec::new(),
            pending: Vec::new(),
            read: None,
        };
        let only_tenants = Report {
            tenants: full.tenants.clone(),
            ..empty.clone()
        };
        let only_pending = Report {
            pending: full.pending.clone(),
            ..empty.clone()
        };
        for report in [&full, &empty, &only_tenants, &only_pending] {
            let expected = serde_json::to_string_pretty(report).unwrap() + "\n";
            assert_eq!(report.render(Format::Json), expected);
            let mut streamed = Vec::new();
            report.write_to(Format::Json, &mut streamed).unwrap();
            assert_eq!(String::from_utf8(streamed).unwrap(), expected);
        }
    }

    #[test]
    fn pending_units_in_json_yaml_and_table() {
        let report = Report {
            evictions: Vec::new(),
            nodes: Vec::new(),
            notes: Vec::new(),
            not_chosen: Vec::new(),
            tenants: Vec::new(),
            pending: vec![
                PendingRow {
                    pod: Some("ml/solo".into()),
                    group: None,
                    pods: Vec::new(),
                    destination: Some(Some("n2".into())),
                    destinations: BTreeMap::new(),
                    made_room_by: vec!["web/a".into()],
                    reason: None,
                },
                PendingRow {
                    pod: None,
                    group: Some("ml/train".into()),
                    pods: vec!["ml/t0".into(), "ml/t1".into()],
                    destination: None,
                    destinations: BTreeMap::from([
                        ("ml/t0".into(), "n1".into()),
                        ("ml/t1".into(), "n3".into()),
                    ]),
                    made_room_by: vec!["web/b".into(), "web/c".into()],
                    reason: None,
                },
                PendingRow {
                    pod: Some("ml/huge".into()),
                    group: None,
                    pods: Vec::new(),
                    destination: Some(None),
                    destinations: BTreeMap::new(),
                    made_room_by: Vec::new(),
                    reason: Some("0/3 nodes are available: 3 Insufficient cpu".into()),
                },
            ],
            read: None,
        };
        let json: serde_json::Value = serde_json::from_str(&report.render(Format::Json)).unwrap();
        assert_eq!(
            json["pending"],
            serde_json::json!([
                {"pod": "ml/solo", "destination": "n2", "madeRoomBy": ["web/a"]},
                {"group": "ml/train", "pods": ["ml/t0", "ml/t1"],
                 "destinations": {"ml/t0": "n1", "ml/t1": "n3"}, "madeRoomBy": ["web/b", "web/c"]},
                {"pod": "ml/huge", "destination": null, "madeRoomBy": [],
                 "reason": "0/3 nodes are available: 3 Insufficient cpu"}
            ])
        );
        // read back as written, `null` destination included
        let back: Report = serde_json::from_str(&report.render(Format::Json)).unwrap();
        assert_eq!(back, report);
        let yaml = report.render(Format::Yaml);
        assert!(yaml.contains("madeRoomBy:"), "{yaml}");
        assert!(yaml.contains("destination: null"), "{yaml}");
        let table = report.render(Format::Table);
        assert!(table.contains("Pending pods and gangs:"), "{table}");
        assert!(table.contains("group ml/train"), "{table}");
        assert!(table.contains("t0=n1,t1=n3"), "{table}");
        assert!(table.contains("web/b,web/c"), "{table}");
        assert!(table.contains("3 Insufficient cpu"), "{table}");
        // the page carries the list and the section that shows it
        let page = report.render(Format::Html);
        assert!(page.contains(r#"<section id="pending" hidden>"#));
        assert!(page.contains("ml/train") && page.contains("madeRoomBy"));
    }

    #[test]
    fn the_table_escapes_what_would_drive_the_terminal() {
        let report = Report {
            evictions: vec![EvictionRow {
                pod: "ns/\u{1b}[2Jgone".into(),
                node: "n\u{202e}1".into(),
                profile: "p".into(),
                plugin: "PodLifeTime".into(),
                reason: "tab\there\r\u{7f}\u{9b}".into(),
                destination: None,
                alternatives: Vec::new(),
                gang: None,
                result: None,
                landed: None,
            }],
            nodes: Vec::new(),
            notes: vec![NoteRow {
                profile: "p".into(),
                plugin: "x".into(),
                node: Some("\u{2066}n".into()),
                message: "m\u{1b}".into(),
                skipped: false,
            }],
            not_chosen: Vec::new(),
            tenants: Vec::new(),
            pending: Vec::new(),
            read: None,
        };
        let table = report.render(Format::Table);
        for c in [
            '\u{1b}', '\u{202e}', '\t', '\r', '\u{7f}', '\u{9b}', '\u{2066}',
        ] {
            assert!(!table.contains(c), "{c:?} in {table}");
        }
        assert!(table.contains("ns/\\u{1b}[2Jgone"), "{table}");
        assert!(table.contains("n\\u{202e}1"), "{table}");
        // Other text, accents included, is left as it is.
        assert_eq!(escape_for_terminal("é ünï\nx"), "é ünï\nx");
    }

    /// A report of `evictions` and `not_chosen` rows alone.
    fn rows_only(evictions: Vec<EvictionRow>, not_chosen: Vec<NotChosenRow>) -> Report {
        Report {
            evictions,
            nodes: Vec::new(),
            notes: Vec::new(),
            not_chosen,
            tenants: Vec::new(),
            pending: Vec::new(),
            read: None,
        }
    }

    fn eviction(pod: &str, node: &str, reason: &str) -> EvictionRow {
        EvictionRow {
            pod: pod.into(),
            node: node.into(),
            profile: "p".into(),
            plugin: "PodLifeTime".into(),
            reason: reason.into(),
            destination: None,
            alternatives: Vec::new(),
            gang: None,
            result: None,
            landed: None,
        }
    }

    #[test]
    fn a_cell_wider_than_a_format_width_is_cut_not_a_panic() {
        // nodeFit's why-not over 2,000 nodes with a taint each: 146,000 characters, more
        // than a `{:<w$}` width may be (16 bits).
        let why = format!(
            "pod does not fit on any other node (nodeFit): 0/2000 nodes are available: {}",
            (0..2000)
                .map(|i| format!(
                    "1 node(s) had untolerated taint {{dedicated-{i:04}: team-{i:04}}}"
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(why.len() > 65_535, "{}", why.len());
        let report = rows_only(
            vec![eviction("ns/a", "n1", &why)],
            vec![NotChosenRow {
                pod: "ns/b".into(),
                node: Some("n1".into()),
                profile: "p".into(),
                plugin: "PodLifeTime".into(),
                reason: why.clone(),
            }],
        );
        let table = report.render(Format::Table);
        for line in table.lines() {
            assert!(line.chars().count() < 2 * CELL_MAX, "{line}");
        }
        let cut = format!("{}{ELLIPSIS}", &why[..CELL_MAX - 1]);
        assert_eq!(table.matches(&cut).count(), 2, "{table}");
        assert_eq!(
            table
                .matches("are cut, ending in \u{2026}; -o json")
                .count(),
            2,
            "a note under each table: {table}"
        );
        // The other formats carry the whole text.
        let json: Report = serde_json::from_str(&report.render(Format::Json)).unwrap();
        assert_eq!(json.evictions[0].reason, why);
        assert_eq!(json.not_chosen[0].reason, why);
        assert!(report
            .render(Format::Yaml)
            .contains(&why[why.len() - 200..]));
        // Through the writer live mode uses, too.
        let mut out = Vec::new();
        report.write_to(Format::Table, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), table);
        // A cell at the limit is shown whole, one past it is cut.
        let at = "x".repeat(CELL_MAX);
        assert_eq!(table_cell(&at), (at.as_str().into(), CELL_MAX, false));
        let past = "x".repeat(CELL_MAX + 1);
        let (cell, width, cut) = table_cell(&past);
        assert_eq!(
            (cell.chars().count(), width, cut),
            (CELL_MAX, CELL_MAX, true)
        );
    }

    #[test]
    fn cut_cells_keep_whole_characters_and_whole_escapes() {
        // Two-byte characters up to the cut, then a bidi override whose escape (`\u{202e}`,
        // 8 characters) does not fit in what is left: it goes whole, as the é's stay whole.
        let text = format!(
            "{}\u{202e}{}",
            "\u{e9}".repeat(CELL_MAX - 3),
            "x".repeat(50)
        );
        let (cell, width, cut) = table_cell(&text);
        assert!(cut);
        assert_eq!(cell, format!("{}{ELLIPSIS}", "\u{e9}".repeat(CELL_MAX - 3)));
        assert_eq!(width, CELL_MAX - 2);
        // Escapes before the cut are written whole and count their width.
        let text = format!("\u{1b}[2J{}", "y".repeat(2 * CELL_MAX));
        let (cell, width, _) = table_cell(&text);
        assert!(cell.starts_with("\\u{1b}[2Jyyy"), "{cell}");
        assert_eq!((cell.chars().count(), width), (CELL_MAX, CELL_MAX));
        assert!(!cell.contains('\u{1b}'));
        let (cell, width, cut) = table_cell("\u{0}\u{202e}\u{10ffff}a");
        assert_eq!(cell, "\\u{0}\\u{202e}\u{10ffff}a");
        assert_eq!((width, cut), (cell.chars().count(), false));
        // Columns line up by characters, not bytes: the next column starts at the same
        // character on each line.
        let report = rows_only(
            vec![
                eviction("ns/\u{e9}\u{e9}\u{e9}", "n1", "r"),
                eviction("ns/abc", "n2", "r"),
                eviction("ns/\u{202e}", "n3", "r"),
            ],
            Vec::new(),
        );
        let table = report.render(Format::Table);
        let at = |needle: &str| {
            let line = table.lines().find(|l| l.contains(needle)).unwrap();
            line[..line.find(needle).unwrap()].chars().count()
        };
        assert_eq!(at(" n1 "), at(" n2 "), "{table}");
        assert_eq!(at(" n1 "), at(" n3 "), "{table}");
        assert_eq!(at(" n1 ") + 1, at("NODE"), "{table}");
    }

    #[test]
    fn alternatives_in_json_yaml_and_table() {
        let row = |alternatives: Vec<String>| EvictionRow {
            pod: "shop/web-1".into(),
            node: "n1".into(),
            profile: "p".into(),
            plugin: "LowNodeUtilization".into(),
            reason: "r".into(),
            destination: Some("n2".into()),
            alternatives,
            gang: None,
            result: None,
            landed: None,
        };
        let report = |rows: Vec<EvictionRow>| Report {
            evictions: rows,
            nodes: Vec::new(),
            notes: Vec::new(),
            not_chosen: Vec::new(),
            tenants: Vec::new(),
            pending: Vec::new(),
            read: None,
        };
        let tied = report(vec![row(vec!["n3".into(), "n4".into()])]);
        let json: serde_json::Value = serde_json::from_str(&tied.render(Format::Json)).unwrap();
        assert_eq!(
            json["evictions"][0]["alternatives"],
            serde_json::json!(["n3", "n4"])
        );
        let yaml = tied.render(Format::Yaml);
        assert!(yaml.contains("alternatives:"), "{yaml}");
        assert!(yaml.contains("- n3") && yaml.contains("- n4"), "{yaml}");
        let table = tied.render(Format::Table);
        assert!(table.contains("n2 (or n3, n4)"), "{table}");
        // none: the field is absent and the cell is the destination alone
        let alone = report(vec![row(Vec::new())]);
        assert!(!alone.render(Format::Json).contains("alternatives"));
        assert!(!alone.render(Format::Yaml).contains("alternatives"));
        assert!(!alone.render(Format::Table).contains("(or"));
    }
}
