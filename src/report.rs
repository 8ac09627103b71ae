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

//!
//! Every format is written by [`write()`], from a cycle's plan or from a report already built
//! ([`Input`]); each format is a module of its own (`json`, `yaml`, `table`, `html`). What
//! plugins report of their own (`tenants`, `pending`) is a section each ([`Sections`]),
//! which every format goes through in order without naming one.

mod findings;
mod html;
mod json;
mod rows;
mod table;
mod yaml;

use crate::outcome::Attempt;
use crate::plan::EvictionPlan;
use crate::snapshot::ClusterSnapshot;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

pub use findings::Sections;

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
    /// What plugins reported of their own, a section per kind under its key: tenants'
    /// dominant shares (`tenants`, when a profile orders by DominantResourceFairness), the
    /// pending pods and gangs MakeRoomForPendingPods made room for or could not (`pending`).
    #[serde(flatten)]
    pub findings: Sections,
    /// How many objects of each kind the plan was made from (a short read shows here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<ReadRow>,
    /// The utilization thresholds plugins classified the nodes with, drawn on the HTML
    /// page's node bars; not in the JSON and YAML (their shape is a stable contract).
    #[serde(skip)]
    pub thresholds: Vec<ThresholdRow>,
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
    /// How the pod is moved: `evict` (the Eviction API) or `surge` (its Deployment scaled up
    /// by one first, then down, the pod going first; DefaultEvictor's `moveMode`).
    #[serde(default = "evict")]
    pub mechanism: String,
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
    /// The policy's `evictionBudgets` with a period that the eviction counts against (a later
    /// cycle, or a later run reading the decision log, counts it there); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<String>,
    /// What happened, in live runs (`evicted`, `blocked_by_disruption_budget`, ...); absent in
    /// dry-run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// With `--await-placement`: the node the replacement was bound to; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed: Option<String>,
}

/// A row written before moves had mechanisms was an eviction.
fn evict() -> String {
    "evict".into()
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

/// What a report is written from.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    /// A cycle's plan (as planned in a dry run, as carried out after a real run) and, after
    /// a real run, each of its evictions' attempt, in plan order (none in a dry run).
    Plan {
        snap: &'a ClusterSnapshot,
        plan: &'a EvictionPlan,
        attempts: &'a [Attempt],
    },
    /// A report already built.
    Report(&'a Report),
}

impl<'a> Input<'a> {
    /// The report of a plan no eviction of which was attempted (a dry run).
    pub fn plan(snap: &'a ClusterSnapshot, plan: &'a EvictionPlan) -> Input<'a> {
        Input::Plan {
            snap,
            plan,
            attempts: &[],
        }
    }

    /// The report, built when it was not.
    fn report(self) -> Cow<'a, Report> {
        match self {
            Input::Plan {
                snap,
                plan,
                attempts,
            } => Cow::Owned(Report::of(snap, plan, attempts)),
            Input::Report(report) => Cow::Borrowed(report),
        }
    }
}

/// Writes the report of `input` as `format` to `out`.
pub fn write(
    input: Input<'_>,
    format: Format,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Json => json::write(input, out),
        Format::Yaml => yaml::write(&input.report(), out),
        Format::Table => table::write(&input.report(), out),
        Format::Html => html::write(&input.report(), out),
    }
}

impl Report {
    /// The report as `format` writes it ([`write()`]).
    pub fn render(&self, format: Format) -> String {
        // Sized up front: a large plan's report is megabytes, grown by doubling it would be
        // copied over and over.
        let mut buf = Vec::with_capacity(match format {
            Format::Json => json::size_hint(self),
            _ => 0,
        });
        write(Input::Report(self), format, &mut buf).expect("report serializes");
        String::from_utf8(buf).expect("reports are UTF-8")
    }
}

#[cfg(test)]
mod tests;
