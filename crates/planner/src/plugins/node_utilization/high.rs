//! HighNodeUtilization (balance): empties underutilized nodes so the scheduler packs their pods
//! onto the others (with a bin-packing scheduler profile such as `MostAllocated`), and the
//! emptied nodes can be scaled down. Utilization is the pods' requests as a share of
//! allocatable, as upstream (`nodeutilization/highnodeutilization.go`).
//!
//! Followed: the newest upstream sources stored for `highnodeutilization.go`,
//! `nodeutilization.go`, `validation.go` and `types.go` (the versions with `evictionModes`,
//! the percentage classifier and `capNodeCapacitiesToThreshold`).
//! - `thresholds` are percentages per resource (cpu, memory, pods or any extended resource
//!   such as nvidia.com/gpu), each in [0, 100], at least one. A node is **underutilized**
//!   when every resource named in `thresholds` is at or below its threshold; resources not
//!   named do not count (upstream no longer defaults them to 100%).
//! - Underutilized nodes are the **sources**, cordoned ones included (they are emptied too).
//!   Every other schedulable node is a **destination**.
//! - Nothing happens when no node is underutilized, when at most `numberOfNodes` are, when
//!   all are, or when there is no destination.
//! - Room on the destinations: for cpu, memory, pods and every resource in `thresholds`, the
//!   sum over the destinations of allocatable minus requested (upstream caps capacity at a
//!   100% threshold, so this is the free capacity).
//! - Sources are visited from the least used (the sum of their requests over those
//!   resources, as upstream; ties by node name). Their evictable pods go lowest priority
//!   first (then QoS), and eviction stops as soon as any resource's room is used up.
//! - A pod moves only if it tolerates every taint of some destination, passes the evictor's
//!   Filter and PreEvictionFilter, and is not in an `evictableNamespaces.exclude` namespace.
//! - `evictionModes: [OnlyThresholdingResources]`: only pods that request one of the
//!   resources named in `thresholds` are evicted.
//! - `metricsUtilization`: upstream's HighNodeUtilization balances by requests only; a
//!   `metricsUtilization` asking for real usage is refused with a clear error.
//!
//! Where this differs from upstream, knowingly:
//! - Percentages are compared exactly (`usage * 100 <= threshold * allocatable`); upstream
//!   divides first, so a node at exactly a threshold can fall on either side of it.
//! - Upstream only lets a pod move to a tainted destination if it has at least as many
//!   tolerations as the node has taints (a count check that refuses a pod whose single
//!   wildcard toleration tolerates everything); here the tolerations alone decide, as in
//!   LowNodeUtilization.
//! - `OnlyThresholdingResources` looks at effective requests, so a container that requests
//!   `0` of a resource counts as not requesting it (upstream counts the key).
//! - Upstream sorts sources with an unstable sort; ties here go by node name.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Context, Plugin, Thresholds};
use crate::plugins::node_utilization::{
    self as nu, at_or_below, evict_pods_from_source_nodes, fmt_pct, pct, EvictOptions,
    MetricsUtilization, SourceNode, ONLY_THRESHOLDING_RESOURCES,
};
use crate::plugins::shared::Namespaces;
use crate::policy::null_as_default;
use crate::snapshot::{Node, NodeId, RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The plugin's name in a policy.
pub const NAME: &str = "HighNodeUtilization";

/// The registry entry: a `balance` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::balance::<HighNodeUtilization>(NAME);

/// `HighNodeUtilizationArgs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HighNodeUtilizationArgs {
    /// Percentages per resource; a node with every one at or below is underutilized.
    #[serde(deserialize_with = "null_as_default")]
    pub thresholds: BTreeMap<String, f64>,
    /// Act only when more than this many nodes are underutilized.
    pub number_of_nodes: usize,
    /// `OnlyThresholdingResources`, or nothing.
    #[serde(deserialize_with = "null_as_default")]
    pub eviction_modes: Vec<String>,
    /// Only `exclude` is supported: pods there count for utilization but never move.
    pub evictable_namespaces: Option<Namespaces>,
    /// Not part of upstream's HighNodeUtilization any more; accepted only when it asks for
    /// nothing, so older policies with an empty one still load.
    pub metrics_utilization: Option<MetricsUtilization>,
}

impl PluginArgs for HighNodeUtilizationArgs {
    /// Upstream's `ValidateHighNodeUtilizationArgs`, with the field's path in every error.
    fn validate(&self) -> Result<(), ArgsError> {
        nu::refuse_real_usage(
            &self.metrics_utilization,
            "HighNodeUtilization balances by requests only (upstream has no metricsUtilization for it); remove metricsUtilization",
        )?;
        nu::validate_evictable_namespaces(self.evictable_namespaces.as_ref())?;
        nu::validate_thresholds("thresholds", &self.thresholds)?;
        nu::validate_eviction_modes("evictionModes", &self.eviction_modes)
    }
}

/// A validated HighNodeUtilization plugin.
#[derive(Debug, Clone)]
pub struct HighNodeUtilization {
    /// The plugin's args.
    pub args: HighNodeUtilizationArgs,
    /// The resources usage and room are kept for: the thresholds' plus cpu, memory and
    /// pods, sorted.
    resources: Vec<String>,
    /// The resources named in `thresholds`, sorted.
    threshold_resources: Vec<String>,
    only_thresholding_resources: bool,
}

impl FromArgs for HighNodeUtilization {
    type Args = HighNodeUtilizationArgs;

    fn from_args(args: HighNodeUtilizationArgs) -> Result<Self, ArgsError> {
        let threshold_resources: Vec<String> = args.thresholds.keys().cloned().collect();
        let resources: BTreeSet<String> = threshold_resources
            .iter()
            .cloned()
            .chain([RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS].map(String::from))
            .collect();
        let only_thresholding_resources = args
            .eviction_modes
            .iter()
            .any(|m| m == ONLY_THRESHOLDING_RESOURCES);
        Ok(HighNodeUtilization {
            args,
            resources: resources.into_iter().collect(),
            threshold_resources,
            only_thresholding_resources,
        })
    }
}

impl HighNodeUtilization {
    /// The index of a resource in `resources`.
    fn index(&self, r: &str) -> usize {
        self.resources
            .iter()
            .position(|x| x == r)
            .expect("every threshold's resource is kept")
    }

    /// Why a node counts as underutilized: each threshold's use against its limit.
    fn underutilized_reason(&self, node: &Node, usage: &[i64]) -> String {
        let parts: Vec<String> = self
            .args
            .thresholds
            .iter()
            .map(|(r, t)| {
                format!(
                    "{r} {} <= {}",
                    fmt_pct(pct(usage[self.index(r)], node.allocatable.get(r))),
                    fmt_pct(*t)
                )
            })
            .collect();
        format!(
            "node {} is underutilized ({}); packing its pods onto other nodes",
            node.name,
            parts.join(", ")
        )
    }
}

/// An underutilized node: its pods leave while the destinations have room for every
/// resource.
struct Source {
    id: NodeId,
    /// Per resource of [`HighNodeUtilization::resources`], in that order.
    usage: Vec<i64>,
    reason: String,
}

impl SourceNode for Source {
    fn id(&self) -> NodeId {
        self.id
    }
    fn usage_mut(&mut self) -> &mut [i64] {
        &mut self.usage
    }
    fn keep_going(&self, available: &[i64]) -> bool {
        available.iter().all(|v| *v > 0)
    }
    fn reason(&self, _node: &Node, _resources: &[String]) -> String {
        self.reason.clone()
    }
}

impl Plugin for HighNodeUtilization {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        cx.report(Thresholds {
            low: self.args.thresholds.clone(),
            high: BTreeMap::new(),
            deviation: false,
        });
        let snap = cx.snap();
        let mut sources: Vec<Source> = Vec::new();
        let mut destinations: Vec<NodeId> = Vec::new();
        // Room on the destinations: allocatable minus requested, summed (per resource, in
        // the order of `resources`).
        let mut available = vec![0; self.resources.len()];
        for &n in nodes {
            let node = snap.node(n);
            let requested = cx.requested(n);
            let usage: Vec<i64> = self.resources.iter().map(|r| requested.get(r)).collect();
            let underutilized = self
                .args
                .thresholds
                .iter()
                .all(|(r, t)| at_or_below(usage[self.index(r)], node.allocatable.get(r), *t));
            if underutilized {
                let reason = self.underutilized_reason(node, &usage);
                sources.push(Source {
                    id: n,
                    usage,
                    reason,
                });
            } else if node.unschedulable {
                tracing::debug!(node = %node.name, "node is unschedulable, not a destination");
            } else {
                for ((r, room), used) in self.resources.iter().zip(&mut available).zip(&usage) {
                    *room += node.allocatable.get(r) - used;
                }
                destinations.push(n);
            }
        }
        tracing::debug!(
            underutilized = sources.len(),
            destinations = destinations.len(),
            "HighNodeUtilization classified nodes"
        );
        if sources.is_empty() {
            tracing::info!(
                "no node is underutilized, nothing to do; you might tune the thresholds"
            );
            return;
        }
        if sources.len() <= self.args.number_of_nodes {
            tracing::info!(
                underutilized = sources.len(),
                number_of_nodes = self.args.number_of_nodes,
                "number of underutilized nodes is at most numberOfNodes, nothing to do"
            );
            return;
        }
        if sources.len() == nodes.len() {
            tracing::info!("all nodes are underutilized, nothing to do");
            return;
        }
        if destinations.is_empty() {
            tracing::info!("no node is available to schedule the pods, nothing to do");
            return;
        }

        // Least used first (upstream sums the raw amounts); ties by name.
        sources.sort_by(|a, b| {
            nu::usage_sum(&a.usage)
                .cmp(&nu::usage_sum(&b.usage))
                .then_with(|| a.id.cmp(&b.id))
        });

        evict_pods_from_source_nodes(
            cx,
            sources,
            &destinations,
            &mut available,
            &EvictOptions {
                resources: &self.resources,
                evictable_namespaces: self.args.evictable_namespaces.as_ref(),
                node_limit: None,
                require_request_for: self
                    .only_thresholding_resources
                    .then_some(self.threshold_resources.as_slice()),
                measured: None,
            },
        );
    }
}

#[cfg(test)]
mod tests;
