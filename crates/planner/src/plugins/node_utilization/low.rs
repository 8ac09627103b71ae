//! LowNodeUtilization: evicts pods from overutilized nodes so the scheduler can place them on
//! underutilized ones. Utilization is the pods' requests as a share of allocatable.
//!
//! As upstream (`nodeutilization/lownodeutilization.go`):
//! - `thresholds` / `targetThresholds` are percentages per resource (cpu, memory, pods or any
//!   extended resource such as nvidia.com/gpu). cpu, memory and pods that are not given count
//!   as 100% (with `useDeviationThresholds`, as 0%, which leaves them out).
//! - A node is **underutilized** when it is schedulable and every resource is at or below
//!   `thresholds`; **overutilized** when any resource is above `targetThresholds`.
//!   With `useDeviationThresholds` both are deviations from the mean utilization.
//! - Nothing happens when no node is underutilized, when at most `numberOfNodes` are, when all
//!   are, or when none is overutilized.
//! - Overutilized nodes are visited from the most used; their evictable pods go lowest priority
//!   first (then QoS), while the node stays above its target and the underutilized nodes still
//!   have room (their target minus their use, summed) for every resource.
//! - A pod moves only if it tolerates every taint of some underutilized node, passes the
//!   evictor's filters, and is not in an `evictableNamespaces.exclude` namespace.
//! - `evictionLimits.node` caps this plugin's evictions per node.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Context, PlacementTarget, Plugin};
use crate::framework::{MeasuredNode, MeasuredUsage, Overutilized, Thresholds};
use crate::plugins::node_utilization::{
    self as nu, amount, capacity, pct, EvictOptions, SourceNode, UsageMode, Whole,
};
use crate::plugins::shared::Namespaces;
use crate::snapshot::{NodeId, Resources, RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The plugin's name in a policy.
pub const NAME: &str = "LowNodeUtilization";

/// The registry entry: a `balance` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::balance::<LowNodeUtilization>(NAME);

/// `evictionLimits`: limits on this plugin's evictions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EvictionLimits {
    /// `node`: the most evictions this plugin plans per node (None: no limit).
    pub node: Option<u32>,
}

pub use crate::plugins::node_utilization::MetricsUtilization;

/// `LowNodeUtilizationArgs`. `thresholds` and `targetThresholds` must be given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LowNodeUtilizationArgs {
    /// `useDeviationThresholds`: both thresholds are deviations from the nodes' mean utilization
    /// (default false).
    pub use_deviation_thresholds: bool,
    /// `thresholds`: percent per resource at or below which (every resource) a node is
    /// underutilized.
    pub thresholds: BTreeMap<String, f64>,
    /// `targetThresholds`: percent per resource above which (any resource) a node is overutilized.
    pub target_thresholds: BTreeMap<String, f64>,
    /// `numberOfNodes`: nothing happens unless more than this many nodes are underutilized
    /// (default 0).
    pub number_of_nodes: usize,
    /// `evictableNamespaces`: namespaces whose pods are not evicted (`exclude` only).
    pub evictable_namespaces: Option<Namespaces>,
    /// `evictionLimits`: limits on this plugin's evictions.
    pub eviction_limits: Option<EvictionLimits>,
    /// `metricsUtilization`: real usage instead of requests (None: requests).
    pub metrics_utilization: Option<MetricsUtilization>,
}

/// A validated LowNodeUtilization plugin.
#[derive(Debug, Clone)]
pub struct LowNodeUtilization {
    /// The plugin's args.
    pub args: LowNodeUtilizationArgs,
    /// Every resource classified: the thresholds' plus cpu, memory and pods, sorted.
    resources: Vec<String>,
    /// Thresholds with upstream's defaults for cpu, memory and pods filled in.
    low: BTreeMap<String, f64>,
    high: BTreeMap<String, f64>,
    /// Requests, metrics-server or Prometheus.
    mode: UsageMode,
}

impl PluginArgs for LowNodeUtilizationArgs {
    fn validate(&self) -> Result<(), ArgsError> {
        nu::validate_threshold_pair(
            &self.thresholds,
            &self.target_thresholds,
            self.use_deviation_thresholds,
            self.evictable_namespaces.as_ref(),
        )
    }
}

impl FromArgs for LowNodeUtilization {
    type Args = LowNodeUtilizationArgs;

    fn from_args(args: LowNodeUtilizationArgs) -> Result<Self, ArgsError> {
        let default = if args.use_deviation_thresholds {
            0.0
        } else {
            100.0
        };
        let mut low = args.thresholds.clone();
        let mut high = args.target_thresholds.clone();
        for r in [RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS] {
            if !low.contains_key(r) {
                low.insert(r.to_string(), default);
                high.insert(r.to_string(), default);
            }
        }
        let resources = low.keys().cloned().collect();
        let mode = args
            .metrics_utilization
            .clone()
            .unwrap_or_default()
            .mode(&args.thresholds)?;
        Ok(LowNodeUtilization {
            args,
            resources,
            low,
            high,
            mode,
        })
    }
}

impl LowNodeUtilization {
    fn hysteresis_cycles(&self) -> u32 {
        self.args
            .metrics_utilization
            .as_ref()
            .and_then(|m| m.hysteresis_cycles)
            .unwrap_or(1)
    }

    fn node_limit(&self) -> Option<u32> {
        self.args.eviction_limits.as_ref().and_then(|l| l.node)
    }
}

/// A node's usage and thresholds, as absolute amounts (milli for cpu), per resource of
/// [`LowNodeUtilization::resources`], in that order.
struct NodeInfo {
    id: NodeId,
    /// Where the usage figures come from (None: requests).
    source: Option<crate::snapshot::usage::UsageSource>,
    usage: Vec<i64>,
    low: Vec<i64>,
    high: Vec<i64>,
}

impl NodeInfo {
    fn above_target(&self) -> bool {
        self.usage.iter().zip(&self.high).any(|(u, h)| u > h)
    }
    fn below_low(&self) -> bool {
        self.usage.iter().zip(&self.low).all(|(u, l)| u <= l)
    }
}

/// An overutilized node gives pods away while it stays above its target and the
/// underutilized nodes have room for every resource.
impl SourceNode for NodeInfo {
    fn id(&self) -> NodeId {
        self.id
    }
    fn usage_mut(&mut self) -> &mut [i64] {
        &mut self.usage
    }
    fn keep_going(&self, available: &[i64]) -> bool {
        self.above_target() && available.iter().all(|v| *v > 0)
    }
    fn reason(&self, node: &crate::snapshot::Node, resources: &[String]) -> String {
        over_target_reason(self, node, resources)
    }
    fn excess(&self) -> Option<Vec<i64>> {
        Some(
            self.usage
                .iter()
                .zip(&self.high)
                .map(|(u, h)| (u - h).max(0))
                .collect(),
        )
    }
}

impl Plugin for LowNodeUtilization {
    fn name(&self) -> &'static str {
        NAME
    }

    fn usage_needs(&self) -> Vec<crate::snapshot::usage::UsageNeed> {
        self.mode.needs()
    }

    /// On requests, every classified node's target thresholds are its placement target.
    fn sets_placement_targets(&self) -> bool {
        self.mode == nu::UsageMode::Requests
    }

    fn run(&self, cx: &mut Context<'_, '_>, all_nodes: &[NodeId]) {
        cx.report(Thresholds {
            low: self.args.thresholds.clone(),
            high: self.args.target_thresholds.clone(),
            deviation: self.args.use_deviation_thresholds,
        });
        let snap = cx.snap();
        let measured = match nu::measure(&self.mode, snap, all_nodes, cx.now()) {
            Ok(m) => m,
            Err(why) => {
                cx.note_skipped(format!("skipped this cycle: {why}"));
                return;
            }
        };
        // Nodes without a usable sample are left out of classification altogether.
        let mut nodes: Vec<NodeId> = Vec::with_capacity(all_nodes.len());
        for &n in all_nodes {
            match measured.as_ref().map(|m| &m.nodes[n.index()]) {
                Some(Err(why)) => cx.note(Some(n), format!("node left out: {why}")),
                _ => nodes.push(n),
            }
        }
        let nodes = &nodes[..];
        self.record_measured(cx, measured.as_ref(), nodes);
        let (low_nodes, high_nodes, targets) = self.classify(cx, measured.as_ref(), nodes);
        let mut high_nodes = self.sources(cx, measured.is_some(), high_nodes);
        if self.nothing_to_do(&low_nodes, &high_nodes, nodes) {
            return;
        }

        // Room left on the destinations: their target minus their use, summed.
        let mut available = vec![0; self.resources.len()];
        for d in &low_nodes {
            for (i, left) in available.iter_mut().enumerate() {
                *left += d.high[i] - d.usage[i];
            }
        }
        let destinations: Vec<NodeId> = low_nodes.iter().map(|d| d.id).collect();

        // Most used first (upstream sums the raw amounts); ties by name.
        high_nodes.sort_by(|a, b| {
            nu::usage_sum(&b.usage)
                .cmp(&nu::usage_sum(&a.usage))
                .then_with(|| a.id.cmp(&b.id))
        });

        // Each destination's own room too: a pod moves only if it fits whole below one
        // destination's target, so no plan makes a destination overutilized.
        let rooms: Vec<Vec<i64>> = low_nodes
            .iter()
            .map(|d| d.high.iter().zip(&d.usage).map(|(h, u)| h - u).collect())
            .collect();

        // On requests, the nodes' targets are where the simulator's placements must stay: the
        // evictor refuses a pod whose replacement kube-scheduler may put back on its own node
        // or on a node it would push over its target; placementCheck admits a pod only if it
        // would go to an underutilized node that stays within its target, and a gang evicted
        // whole only goes where every member does. (Measured usage is not in the simulator's
        // units.)
        if measured.is_none() {
            cx.set_placement_targets(targets);
        }
        nu::evict_pods_within_rooms(
            cx,
            high_nodes,
            &destinations,
            &mut available,
            Some(rooms),
            &EvictOptions {
                resources: &self.resources,
                evictable_namespaces: self.args.evictable_namespaces.as_ref(),
                node_limit: self.node_limit(),
                require_request_for: None,
                measured: measured.as_ref(),
            },
        );
    }
}

impl LowNodeUtilization {
    /// The index of a classified resource.
    fn index(&self, r: &str) -> Option<usize> {
        self.resources.iter().position(|x| x == r)
    }

    /// A node's usage per classified resource, in their order: its requests, or what was
    /// measured less the pods earlier plugins planned to evict.
    fn usage_of(
        &self,
        cx: &Context<'_, '_>,
        measured: Option<&nu::Measured>,
        n: NodeId,
    ) -> Vec<i64> {
        let snap = cx.snap();
        let req = cx.requested(n);
        let mut u: Vec<i64> = self.resources.iter().map(|r| req.get(r)).collect();
        if let Some(m) = measured {
            let Ok(sample) = &m.nodes[n.index()] else {
                return u;
            };
            for (r, v) in sample {
                // Pods earlier plugins planned to evict take their usage with them
                // (their requests when their usage is unknown).
                let gone: i64 = snap
                    .pods_on_node(n)
                    .iter()
                    .filter(|&&p| cx.is_planned(p) && snap.pod(p).is_active())
                    .map(|&p| {
                        m.pod_amount(p, r)
                            .unwrap_or_else(|| snap.pod(p).requests.get(r))
                    })
                    .sum();
                if let Some(i) = self.index(r) {
                    u[i] = (v - gone).max(0);
                }
            }
        }
        u
    }

    /// What was measured of each node, in the report.
    fn record_measured(
        &self,
        cx: &mut Context<'_, '_>,
        measured: Option<&nu::Measured>,
        nodes: &[NodeId],
    ) {
        if let Some(m) = measured {
            for &n in nodes {
                let u = self.usage_of(cx, measured, n);
                let mut before = Resources::default();
                before.cpu = self.index(RESOURCE_CPU).map_or(0, |i| u[i]);
                before.memory = self.index(RESOURCE_MEMORY).map_or(0, |i| u[i]);
                if let Some(i) = self.index(nu::METRIC_RESOURCE) {
                    before.set(nu::METRIC_RESOURCE, u[i]);
                }
                cx.report(MeasuredUsage::Node(
                    n,
                    MeasuredNode {
                        source: m.source,
                        after: before.clone(),
                        before,
                    },
                ));
            }
        }
    }

    /// The nodes below their thresholds (destinations) and above their targets (sources),
    /// and every classified node's target for the placement checks.
    fn classify(
        &self,
        cx: &Context<'_, '_>,
        measured: Option<&nu::Measured>,
        nodes: &[NodeId],
    ) -> (Vec<NodeInfo>, Vec<NodeInfo>, Vec<PlacementTarget>) {
        let snap = cx.snap();
        // The thresholds per classified resource, in their order.
        let low_pct: Vec<f64> = self.resources.iter().map(|r| self.low[r]).collect();
        let high_pct: Vec<f64> = self.resources.iter().map(|r| self.high[r]).collect();
        // Mean utilization per resource, for deviation thresholds.
        let mut mean = vec![0.0; self.resources.len()];
        if self.args.use_deviation_thresholds && !nodes.is_empty() {
            for &n in nodes {
                let u = self.usage_of(cx, measured, n);
                for (i, r) in self.resources.iter().enumerate() {
                    mean[i] += pct(u[i], capacity(snap.node(n), r));
                }
            }
            for v in &mut mean {
                *v /= nodes.len() as f64;
            }
        }
        // Only the nodes below their thresholds or above their targets are kept.
        let mut low_nodes = Vec::new();
        let mut high_nodes = Vec::new();
        // Every classified node with its target, for the placement checks (below).
        let mut targets: Vec<PlacementTarget> = Vec::with_capacity(nodes.len());
        for &n in nodes {
            let node = snap.node(n);
            let k = self.resources.len();
            let (mut low, mut high) = (Vec::with_capacity(k), Vec::with_capacity(k));
            for (i, r) in self.resources.iter().enumerate() {
                let c = capacity(node, r);
                let (l, h) = if self.args.use_deviation_thresholds {
                    if low_pct[i] == 0.0 {
                        (c, c)
                    } else {
                        (
                            amount(c, (mean[i] - low_pct[i]).clamp(0.0, 100.0)),
                            amount(c, (mean[i] + high_pct[i]).clamp(0.0, 100.0)),
                        )
                    }
                } else {
                    (amount(c, low_pct[i]), amount(c, high_pct[i]))
                };
                low.push(l);
                high.push(h);
            }
            let info = NodeInfo {
                id: n,
                source: measured.map(|m| m.source),
                usage: self.usage_of(cx, measured, n),
                low,
                high,
            };
            let wanted = !node.unschedulable && info.below_low();
            if measured.is_none() {
                targets.push(PlacementTarget {
                    node: n,
                    limit: self
                        .resources
                        .iter()
                        .cloned()
                        .zip(info.high.clone())
                        .collect(),
                    wanted,
                });
            }
            if wanted {
                low_nodes.push(info);
            } else if info.above_target() {
                high_nodes.push(info);
            }
        }
        (low_nodes, high_nodes, targets)
    }

    /// The overutilized nodes that are sources this cycle: with measured usage, those over
    /// for `hysteresisCycles` cycles in a row; none that received rescheduled pods within
    /// the eviction cooldown.
    fn sources(
        &self,
        cx: &mut Context<'_, '_>,
        measured: bool,
        mut high_nodes: Vec<NodeInfo>,
    ) -> Vec<NodeInfo> {
        let snap = cx.snap();
        if measured {
            let key = cx.history_key();
            let over: Vec<String> = high_nodes
                .iter()
                .map(|i| snap.node(i.id).name.to_string())
                .collect();
            let need = self.hysteresis_cycles();
            if need > 1 {
                let mut kept = Vec::with_capacity(high_nodes.len());
                for info in high_nodes {
                    let name = &snap.node(info.id).name;
                    let cycles = cx.history().streak(&key, name) + 1;
                    if cycles >= need {
                        kept.push(info);
                    } else {
                        cx.note(
                            Some(info.id),
                            format!("overutilized for {cycles} of the {need} consecutive cycles hysteresisCycles asks for; pods stay this cycle"),
                        );
                    }
                }
                high_nodes = kept;
            }
            cx.report(Overutilized(over));
        }
        // No ping-pong: a node that received rescheduled pods within the eviction cooldown
        // is not a source (its load may be the pods just moved there).
        if !high_nodes.is_empty() && cx.history().cooldown_seconds > 0 {
            let mut kept = Vec::with_capacity(high_nodes.len());
            for info in high_nodes {
                let name = &snap.node(info.id).name;
                match cx.history().receiving_note(name, cx.now()) {
                    Some(why) => cx.note(Some(info.id), why),
                    None => kept.push(info),
                }
            }
            high_nodes = kept;
        }
        high_nodes
    }

    /// Upstream's early returns, said in the log.
    fn nothing_to_do(
        &self,
        low_nodes: &[NodeInfo],
        high_nodes: &[NodeInfo],
        nodes: &[NodeId],
    ) -> bool {
        tracing::debug!(
            underutilized = low_nodes.len(),
            overutilized = high_nodes.len(),
            "LowNodeUtilization classified nodes"
        );
        if low_nodes.is_empty() {
            tracing::info!(
                "no node is underutilized, nothing to do; you might tune the thresholds"
            );
            return true;
        }
        if low_nodes.len() <= self.args.number_of_nodes {
            tracing::info!(
                underutilized = low_nodes.len(),
                number_of_nodes = self.args.number_of_nodes,
                "number of underutilized nodes is at most numberOfNodes, nothing to do"
            );
            return true;
        }
        if low_nodes.len() == nodes.len() {
            tracing::info!("all nodes are underutilized, nothing to do");
            return true;
        }
        if high_nodes.is_empty() {
            tracing::info!("all nodes are under target utilization, nothing to do");
            return true;
        }
        false
    }
}

fn over_target_reason(
    info: &NodeInfo,
    node: &crate::snapshot::Node,
    resources: &[String],
) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(120);
    let _ = write!(out, "node {} is overutilized (", node.name);
    let mut first = true;
    for ((r, u), &high) in resources.iter().zip(&info.usage).zip(&info.high) {
        if *u <= high {
            continue;
        }
        let cap = capacity(node, r);
        if !first {
            out.push_str(", ");
        }
        first = false;
        let _ = write!(
            out,
            "{r} {}% > target {}%",
            Whole(pct(*u, cap)),
            Whole(pct(high, cap))
        );
    }
    match info.source {
        Some(src) => {
            let _ = write!(out, "; measured by {src})");
        }
        None => out.push(')'),
    }
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod landing_tests;
