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

use crate::framework::{Context, Plugin};
use crate::plugins::node_utilization::{
    self as nu, at_or_below, evict_pods_from_source_nodes, fmt_pct, pct, EvictOptions,
    MetricsUtilization, SourceNode, ONLY_THRESHOLDING_RESOURCES,
};
use crate::plugins::shared::Namespaces;
use crate::policy::{decode_args, null_as_default, ArgsError};
use crate::snapshot::{Node, NodeId, RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub const NAME: &str = "HighNodeUtilization";

/// The registry entry: a `balance` plugin.
pub const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::balance(NAME, |args| {
        Ok(Box::new(HighNodeUtilization::new(args)?))
    });

/// `HighNodeUtilizationArgs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HighNodeUtilizationArgs {
    /// Percentages per resource; a node with every one at or below is underutilized.
    #[serde(default, deserialize_with = "null_as_default")]
    pub thresholds: BTreeMap<String, f64>,
    /// Act only when more than this many nodes are underutilized.
    #[serde(default)]
    pub number_of_nodes: usize,
    /// `OnlyThresholdingResources`, or nothing.
    #[serde(default, deserialize_with = "null_as_default")]
    pub eviction_modes: Vec<String>,
    /// Only `exclude` is supported: pods there count for utilization but never move.
    #[serde(default)]
    pub evictable_namespaces: Option<Namespaces>,
    /// Not part of upstream's HighNodeUtilization any more; accepted only when it asks for
    /// nothing, so older policies with an empty one still load.
    #[serde(default)]
    pub metrics_utilization: Option<MetricsUtilization>,
}

impl HighNodeUtilizationArgs {
    /// Upstream's `ValidateHighNodeUtilizationArgs`, with the field's path in every error.
    pub fn validate(&self) -> Result<(), ArgsError> {
        nu::refuse_real_usage(
            &self.metrics_utilization,
            "HighNodeUtilization balances by requests only (upstream has no metricsUtilization for it); remove metricsUtilization",
        )?;
        if let Some(ns) = &self.evictable_namespaces {
            if !ns.include.is_empty() {
                return Err(ArgsError::new(
                    "evictableNamespaces.include",
                    "only exclude can be set for evictableNamespaces; inclusion is not supported",
                ));
            }
        }
        nu::validate_thresholds("thresholds", &self.thresholds)?;
        nu::validate_eviction_modes("evictionModes", &self.eviction_modes)
    }
}

/// A validated HighNodeUtilization plugin.
#[derive(Debug, Clone)]
pub struct HighNodeUtilization {
    pub args: HighNodeUtilizationArgs,
    /// The resources usage and room are kept for: the thresholds' plus cpu, memory and
    /// pods, sorted.
    resources: Vec<String>,
    /// The resources named in `thresholds`, sorted.
    threshold_resources: Vec<String>,
    only_thresholding_resources: bool,
}

impl HighNodeUtilization {
    pub fn new(args: &serde_json::Value) -> Result<Self, ArgsError> {
        let args: HighNodeUtilizationArgs = decode_args(args)?;
        args.validate()?;
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
mod tests {
    use super::*;
    use crate::framework::{Limits, Pipeline};
    use crate::plan;
    use crate::plugins::default_evictor::DefaultEvictor;
    use crate::snapshot::builders::{node, pdb, pod, snapshot, NodeBuilder, PodBuilder};
    use crate::snapshot::{ClusterSnapshot, SnapshotParts, TaintEffect};
    use serde_json::json;

    const EXT: &str = "example.com/foo";

    /// Runs the plugin alone over every Ready node and returns the evicted pods' names.
    fn run_full(
        args: serde_json::Value,
        snap: &ClusterSnapshot,
        evictor: &DefaultEvictor,
        limits: Limits,
    ) -> Vec<String> {
        let plugin = HighNodeUtilization::new(&args).expect("valid args");
        crate::framework::testing::run_alone_names(&plugin, snap, evictor, limits, 0)
    }

    /// With `nodeFit: true`, as upstream's table test.
    fn run_fit(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
        let ev = DefaultEvictor::from_args(&json!({"nodeFit": true})).unwrap();
        run_full(args, snap, &ev, Limits::default())
    }

    fn run(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
        run_full(args, snap, &DefaultEvictor::default(), Limits::default())
    }

    /// Upstream's `test.BuildTestNode(name, milliCPU, memory, pods)`.
    fn tnode(name: &str, cpu: i64, memory: i64, pods: i64) -> NodeBuilder {
        node(name).cpu(cpu).memory(memory).pods(pods)
    }

    /// Upstream's `test.BuildTestPod(name, milliCPU, 0, node)` with a ReplicaSet owner.
    fn tpod(name: &str, cpu: i64, node: &str) -> PodBuilder {
        pod("default", name).node(node).cpu(cpu)
    }

    fn cpu_pods(v: f64) -> serde_json::Value {
        json!({"thresholds": {"cpu": v, "pods": v}})
    }

    #[test]
    fn no_node_below_threshold_usage() {
        let mut pods = Vec::new();
        for (i, n) in ["n1", "n2", "n3"].iter().enumerate() {
            for j in 0..3 {
                pods.push(tpod(&format!("p{}", i * 3 + j + 1), 400, n).build());
            }
        }
        let nodes = ["n1", "n2", "n3"]
            .map(|n| tnode(n, 4000, 3000, 10).build())
            .to_vec();
        assert!(run_fit(cpu_pods(20.0), &snapshot(nodes, pods)).is_empty());
    }

    #[test]
    fn no_evictable_pods() {
        let nodes = vec![
            tnode("n1", 4000, 3000, 9).build(),
            tnode("n2", 4000, 3000, 10).build(),
            tnode("n3", 4000, 3000, 10).build(),
        ];
        let pods = vec![
            tpod("p1", 400, "n1").local_storage().mirror().build(),
            pod("kube-system", "p2")
                .node("n1")
                .cpu(400)
                .priority(2_000_000_000)
                .build(),
            tpod("p3", 400, "n2").owner("DaemonSet", "ds").build(),
            tpod("p4", 400, "n2").owner("DaemonSet", "ds").build(),
            tpod("p5", 400, "n3").build(),
            tpod("p6", 400, "n3").build(),
            tpod("p7", 400, "n3").build(),
            tpod("p8", 400, "n3").build(),
        ];
        assert!(run_fit(cpu_pods(40.0), &snapshot(nodes, pods)).is_empty());
    }

    #[test]
    fn no_node_to_schedule_evicted_pods() {
        // n1 and n2 are underutilized; n3 is not but is cordoned, so no destination is left.
        let nodes = vec![
            tnode("n1", 4000, 3000, 10).build(),
            tnode("n2", 4000, 3000, 10).build(),
            tnode("n3", 4000, 3000, 10).unschedulable().build(),
        ];
        let pods = vec![
            tpod("p1", 400, "n1").build(),
            tpod("p2", 400, "n2").build(),
            tpod("p3", 400, "n3").build(),
            tpod("p4", 400, "n3").build(),
            tpod("p5", 400, "n3").build(),
        ];
        assert!(run_fit(cpu_pods(20.0), &snapshot(nodes, pods)).is_empty());
    }

    #[test]
    fn without_priorities_least_used_source_first_and_cordoned_sources() {
        // n3 is cordoned and underutilized: it is emptied too, and first (least used).
        let nodes = vec![
            tnode("n1", 4000, 3000, 10).build(),
            tnode("n2", 4000, 3000, 10).build(),
            tnode("n3", 4000, 3000, 10).unschedulable().build(),
        ];
        let pods = vec![
            tpod("p1", 400, "n1").build(),
            pod("kube-system", "p2")
                .node("n1")
                .cpu(400)
                .priority(2_000_000_000)
                .build(),
            tpod("p3", 400, "n2").build(),
            tpod("p4", 400, "n2").build(),
            tpod("p5", 400, "n2").build(),
            tpod("p6", 400, "n2").build(),
            tpod("p7", 400, "n3").build(),
        ];
        assert_eq!(
            run_fit(cpu_pods(30.0), &snapshot(nodes, pods)),
            vec!["p7", "p1"]
        );
    }

    #[test]
    fn stops_when_resource_capacity_is_depleted() {
        // n2 has 400m free: one pod of 400m uses it up.
        let nodes = vec![
            tnode("n1", 2000, 3000, 10).build(),
            tnode("n2", 2000, 3000, 10).build(),
            tnode("n3", 2000, 3000, 10).unschedulable().build(),
        ];
        let pods = vec![
            tpod("p1", 400, "n1").build(),
            tpod("p2", 400, "n2").build(),
            tpod("p3", 400, "n2").build(),
            tpod("p4", 400, "n2").build(),
            tpod("p5", 400, "n2").build(),
            tpod("p6", 400, "n3").build(),
        ];
        assert_eq!(run_fit(cpu_pods(30.0), &snapshot(nodes, pods)), vec!["p1"]);
    }

    #[test]
    fn with_priorities_lowest_goes_first() {
        let nodes = vec![
            tnode("n1", 4000, 3000, 10).build(),
            tnode("n2", 2000, 3000, 10).build(),
            tnode("n3", 2000, 3000, 10).unschedulable().build(),
        ];
        let pods = vec![
            tpod("p1", 400, "n1").priority(0).build(),
            tpod("p2", 400, "n1").priority(10000).build(),
            tpod("p5", 400, "n2").build(),
            tpod("p6", 400, "n2").build(),
            tpod("p7", 400, "n2").build(),
            tpod("p8", 400, "n2").build(),
            tpod("p9", 400, "n3").owner("DaemonSet", "ds").build(),
        ];
        assert_eq!(
            run_fit(json!({"thresholds": {"cpu": 30}}), &snapshot(nodes, pods)),
            vec!["p1"]
        );
    }

    #[test]
    fn best_effort_pods_go_first() {
        // n2 has room for one more pod only.
        let nodes = vec![
            tnode("n1", 3000, 3000, 10).build(),
            tnode("n2", 3000, 3000, 5).build(),
            tnode("n3", 3000, 3000, 10).unschedulable().build(),
        ];
        let pods = vec![
            pod("default", "p1").node("n1").build(),
            tpod("p2", 400, "n1").build(),
            tpod("p3", 400, "n2").build(),
            tpod("p4", 400, "n2").build(),
            tpod("p5", 400, "n2").build(),
            tpod("p6", 400, "n2").build(),
        ];
        assert_eq!(
            run_fit(json!({"thresholds": {"cpu": 30}}), &snapshot(nodes, pods)),
            vec!["p1"]
        );
    }

    fn ext_node(name: &str, n: i64) -> NodeBuilder {
        tnode(name, 4000, 3000, 10).resource(EXT, n)
    }

    #[test]
    fn extended_resources() {
        let nodes = vec![
            ext_node("n1", 8).build(),
            ext_node("n2", 8).build(),
            tnode("n3", 4000, 3000, 10).unschedulable().build(),
        ];
        let pods = vec![
            tpod("p1", 100, "n1").resource(EXT, 1).build(),
            tpod("p2", 100, "n1").resource(EXT, 1).build(),
            tpod("p3", 500, "n2").resource(EXT, 1).build(),
            tpod("p4", 500, "n2").resource(EXT, 1).build(),
            tpod("p5", 500, "n2").resource(EXT, 1).build(),
            tpod("p6", 500, "n2").resource(EXT, 1).build(),
        ];
        let args = json!({"thresholds": {"cpu": 20, EXT: 40}});
        assert_eq!(run_fit(args, &snapshot(nodes, pods)), vec!["p1", "p2"]);
    }

    #[test]
    fn extended_resource_missing_on_destinations_means_no_room() {
        let nodes = vec![
            ext_node("n1", 8).build(),
            tnode("n2", 4000, 3000, 10).build(),
            tnode("n3", 4000, 3000, 10).unschedulable().build(),
        ];
        let pods = vec![
            tpod("p1", 100, "n1").resource(EXT, 1).build(),
            tpod("p2", 100, "n1").resource(EXT, 1).build(),
            tpod("p3", 500, "n2").build(),
            tpod("p4", 500, "n2").build(),
            tpod("p5", 500, "n2").build(),
            tpod("p6", 500, "n2").build(),
        ];
        let args = json!({"thresholds": {"cpu": 40, EXT: 40}});
        assert!(run_fit(args, &snapshot(nodes, pods)).is_empty());
    }

    fn selector_case(n1_west: bool) -> ClusterSnapshot {
        let mut n1 = tnode("n1", 4000, 3000, 9);
        if n1_west {
            n1 = n1.label("datacenter", "west");
        }
        let nodes = vec![n1.build(), tnode("n2", 4000, 3000, 10).build()];
        let pods = vec![
            tpod("p1", 400, "n1").build(),
            tpod("p2", 400, "n1").build(),
            tpod("p3", 400, "n1").build(),
            tpod("p4", 400, "n1").owner("DaemonSet", "ds").build(),
            tpod("p5", 400, "n2")
                .node_selector("datacenter", "west")
                .build(),
        ];
        snapshot(nodes, pods)
    }

    #[test]
    fn node_fit_decides_with_node_selectors() {
        assert_eq!(run_fit(cpu_pods(30.0), &selector_case(true)), vec!["p5"]);
        assert!(run_fit(cpu_pods(30.0), &selector_case(false)).is_empty());
        // without nodeFit the selector is not checked
        assert_eq!(run(cpu_pods(30.0), &selector_case(false)), vec!["p5"]);
    }

    #[test]
    fn other_node_without_enough_memory() {
        let nodes = vec![
            tnode("n1", 4000, 200, 9).build(),
            tnode("n2", 4000, 3000, 10).build(),
        ];
        let pods = vec![
            tpod("p1", 400, "n1").memory(50).build(),
            tpod("p2", 400, "n1").memory(50).build(),
            tpod("p3", 400, "n1").memory(50).build(),
            tpod("p4", 400, "n1")
                .memory(50)
                .owner("DaemonSet", "ds")
                .build(),
            tpod("p5", 400, "n2").memory(100).build(),
        ];
        assert!(run_fit(cpu_pods(30.0), &snapshot(nodes, pods)).is_empty());
    }

    fn thresholding_case() -> ClusterSnapshot {
        let nodes = vec![
            ext_node("n1", 10).build(),
            ext_node("n2", 10).build(),
            ext_node("n3", 10).build(),
        ];
        let pods = vec![
            tpod("p1", 100, "n1").resource(EXT, 3).build(),
            tpod("p2", 100, "n1").resource(EXT, 3).build(),
            tpod("p3", 500, "n2").build(),
            tpod("p4", 500, "n2").build(),
            tpod("p5", 500, "n2").build(),
            tpod("p6", 500, "n2").build(),
        ];
        snapshot(nodes, pods)
    }

    #[test]
    fn only_thresholding_resources_mode() {
        let snap = thresholding_case();
        // Upstream's case: n1 is at 60% of the extended resource, n2 and n3 at 0%.
        // n2's pods request no extended resource, so in this mode none moves.
        let args = json!({"thresholds": {EXT: 40}, "evictionModes": ["OnlyThresholdingResources"]});
        assert!(run_fit(args, &snap).is_empty());
        // Without the mode they all move to n1.
        assert_eq!(
            run_fit(json!({"thresholds": {EXT: 40}}), &snap),
            vec!["p3", "p4", "p5", "p6"]
        );
        // A pod requesting the resource moves; the one that does not stays.
        let nodes = vec![ext_node("n1", 10).build(), ext_node("n2", 10).build()];
        let pods = vec![
            tpod("big", 100, "n1").resource(EXT, 6).build(),
            tpod("gpu", 100, "n2").resource(EXT, 1).build(),
            tpod("plain", 100, "n2").build(),
        ];
        let args = json!({"thresholds": {EXT: 40}, "evictionModes": ["OnlyThresholdingResources"]});
        assert_eq!(run_fit(args, &snapshot(nodes, pods)), vec!["gpu"]);
    }

    #[test]
    fn destinations_taints_must_be_tolerated() {
        let n = |name: &str| tnode(name, 1000, 3000, 10);
        let tainted = || {
            n("n3")
                .taint("key", "value", TaintEffect::NoSchedule)
                .build()
        };
        let one_per_node = Limits {
            per_node: Some(1),
            ..Default::default()
        };
        let ev = DefaultEvictor::default();
        let args = json!({"thresholds": {"cpu": 40}});
        // No taints: n1 (60%) receives the pod of n2 (20%); n3 is empty.
        let snap = snapshot(
            vec![n("n1").build(), n("n2").build(), n("n3").build()],
            vec![
                tpod("pod_1_n1", 200, "n1").build(),
                tpod("pod_2_n1", 200, "n1").build(),
                tpod("pod_3_n1", 200, "n1").build(),
                tpod("pod_4_n2", 200, "n2").build(),
            ],
        );
        assert_eq!(
            run_full(args.clone(), &snap, &ev, one_per_node),
            vec!["pod_4_n2"]
        );
        // The only destination is tainted and no pod tolerates it.
        let snap = snapshot(
            vec![n("n1").build(), tainted()],
            vec![
                tpod("pod_1_n1", 200, "n1").build(),
                tpod("pod_9_n3", 500, "n3").build(),
            ],
        );
        assert!(run_full(args.clone(), &snap, &ev, one_per_node).is_empty());
        // A pod that tolerates it moves.
        let snap = snapshot(
            vec![n("n1").build(), tainted()],
            vec![
                tpod("pod_1_n1", 100, "n1").build(),
                tpod("tolerate_pod", 200, "n1")
                    .toleration("key", "value", None)
                    .build(),
                tpod("pod_9_n3", 500, "n3").build(),
            ],
        );
        assert_eq!(
            run_full(args.clone(), &snap, &ev, one_per_node),
            vec!["tolerate_pod"]
        );
        // PreferNoSchedule taints of destinations count too (upstream's PodToleratesTaints).
        let snap = snapshot(
            vec![
                n("n1").build(),
                n("n3")
                    .taint("soft", "", TaintEffect::PreferNoSchedule)
                    .build(),
            ],
            vec![
                tpod("plain", 100, "n1").build(),
                tpod("tolerant", 100, "n1")
                    .toleration("soft", "", Some(TaintEffect::PreferNoSchedule))
                    .build(),
                tpod("busy", 500, "n3").build(),
            ],
        );
        assert_eq!(run(args, &snap), vec!["tolerant"]);
    }

    /// n1 busy (50%); n2 (10%) and n3 (20%) underutilized.
    fn two_sources() -> ClusterSnapshot {
        snapshot(
            vec![node("n1").build(), node("n2").build(), node("n3").build()],
            vec![
                tpod("busy-1", 1000, "n1").build(),
                tpod("busy-2", 1000, "n1").build(),
                pod("web", "a").node("n2").cpu(400).build(),
                pod("web", "b").node("n3").cpu(400).build(),
                pod("batch", "c").node("n3").cpu(400).build(),
            ],
        )
    }

    #[test]
    fn number_of_nodes_and_all_underutilized() {
        let snap = two_sources();
        let t = |extra: serde_json::Value| {
            let mut a = json!({"thresholds": {"cpu": 25}});
            a.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            a
        };
        assert!(run(t(json!({"numberOfNodes": 2})), &snap).is_empty());
        assert_eq!(
            run(t(json!({"numberOfNodes": 1})), &snap),
            vec!["a", "c", "b"]
        );
        // every node at or below 60%: nothing to do
        assert!(run(json!({"thresholds": {"cpu": 60}}), &snap).is_empty());
        // no node at or below 5%
        assert!(run(json!({"thresholds": {"cpu": 5}}), &snap).is_empty());
    }

    #[test]
    fn thresholds_are_inclusive_and_unnamed_resources_do_not_count() {
        // n2 at exactly 10% cpu but 90% memory: underutilized, memory is not named.
        let snap = snapshot(
            vec![node("n1").build(), node("n2").build()],
            vec![
                tpod("busy", 2000, "n1").build(),
                tpod("x", 400, "n2")
                    .memory(16 * crate::snapshot::builders::GIB * 9 / 10)
                    .build(),
            ],
        );
        assert_eq!(run(json!({"thresholds": {"cpu": 10}}), &snap), vec!["x"]);
        assert!(run(json!({"thresholds": {"cpu": 9.9}}), &snap).is_empty());
        assert!(run(json!({"thresholds": {"cpu": 10, "memory": 50}}), &snap).is_empty());
    }

    #[test]
    fn evictable_namespaces_limits_and_budgets() {
        let snap = two_sources();
        let args = json!({"thresholds": {"cpu": 25}});
        let out = run(
            json!({"thresholds": {"cpu": 25}, "evictableNamespaces": {"exclude": ["web"]}}),
            &snap,
        );
        assert_eq!(out, vec!["c"]);
        let out = run_full(
            args.clone(),
            &snap,
            &DefaultEvictor::default(),
            Limits {
                total: Some(2),
                ..Default::default()
            },
        );
        assert_eq!(out, vec!["a", "c"]);
        let out = run_full(
            args.clone(),
            &snap,
            &DefaultEvictor::default(),
            Limits {
                per_node: Some(1),
                ..Default::default()
            },
        );
        assert_eq!(out, vec!["a", "c"]);
        let out = run_full(
            args.clone(),
            &snap,
            &DefaultEvictor::default(),
            Limits {
                per_namespace: Some(1),
                ..Default::default()
            },
        );
        assert_eq!(out, vec!["a", "c"]);
        // a budget that allows no disruption keeps web/a and web/b
        let mut parts = SnapshotParts {
            nodes: snap.nodes.clone(),
            pods: snap.pods.to_vec(),
            pdbs: vec![pdb("web", "web", "app", "web", 0)],
            ..Default::default()
        };
        for p in parts.pods.iter_mut().filter(|p| &*p.namespace == "web") {
            p.labels = crate::labels::Labels::new(vec![("app".into(), "web".into())]);
        }
        let guarded = ClusterSnapshot::build(parts);
        assert_eq!(run(args, &guarded), vec!["c"]);
    }

    #[test]
    fn protected_pods_stay() {
        let snap = snapshot(
            vec![node("n1").build(), node("n2").build()],
            vec![
                tpod("busy", 2000, "n1").build(),
                tpod("ds", 100, "n2").owner("DaemonSet", "d").build(),
                tpod("bare", 100, "n2").bare().build(),
                tpod("mirror", 100, "n2").mirror().build(),
                tpod("local", 100, "n2").local_storage().build(),
                tpod("critical", 100, "n2").priority(2_000_000_000).build(),
                tpod("ok", 100, "n2").build(),
            ],
        );
        assert_eq!(run(json!({"thresholds": {"cpu": 20}}), &snap), vec!["ok"]);
    }

    #[test]
    fn reasons_say_why() {
        let snap = snapshot(
            vec![node("n1").build(), node("n2").build()],
            vec![
                tpod("busy", 2000, "n1").build(),
                tpod("x", 480, "n2").build(),
            ],
        );
        let plugin =
            HighNodeUtilization::new(&json!({"thresholds": {"cpu": 20, "pods": 50}})).unwrap();
        let plan = crate::framework::testing::run_alone(
            &plugin,
            &snap,
            &DefaultEvictor::default(),
            Limits::default(),
            0,
        );
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].plugin, NAME);
        assert_eq!(
            plan[0].reason,
            "node n2 is underutilized (cpu 12% <= 20%, pods 0.9% <= 50%); packing its pods onto other nodes"
        );
    }

    #[test]
    fn args_validation_names_fields() {
        for (args, path) in [
            (json!({}), "thresholds"),
            (json!({"thresholds": {}}), "thresholds"),
            (json!({"thresholds": null}), "thresholds"),
            (json!({"thresholds": {"cpu": 120}}), "thresholds.cpu"),
            (json!({"thresholds": {"memory": -1}}), "thresholds.memory"),
            (json!({"thresholds": {"cpu": "high"}}), "thresholds.cpu"),
            (
                json!({"thresholds": {"cpu": 20}, "evictableNamespaces": {"include": ["a"]}}),
                "evictableNamespaces.include",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "evictionModes": ["OnlyThresholdingResources", "Greedy"]}),
                "evictionModes[1]",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "numberOfNodes": -1}),
                "numberOfNodes",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "metricsUtilization": {"metricsServer": true}}),
                "metricsUtilization",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}),
                "targetThresholds",
            ),
        ] {
            let e = HighNodeUtilization::new(&args).unwrap_err();
            assert_eq!(e.path, path, "{args}: {e:?}");
        }
        let ok = HighNodeUtilization::new(&json!({
            "apiVersion": "descheduler/v1alpha2",
            "kind": "HighNodeUtilizationArgs",
            "thresholds": {"cpu": 20, "memory": 20, EXT: 50},
            "numberOfNodes": 1,
            "evictionModes": ["OnlyThresholdingResources"],
            "evictableNamespaces": {"exclude": ["kube-system"]},
            "metricsUtilization": {},
        }))
        .unwrap();
        assert_eq!(ok.resources, vec!["cpu", EXT, "memory", "pods"]);
        assert!(ok.only_thresholding_resources);
    }

    #[test]
    fn runs_from_a_policy() {
        let policy = crate::policy::Policy::from_yaml(
            "p.yaml",
            r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: pack
  pluginConfig:
  - name: HighNodeUtilization
    args: {thresholds: {cpu: 25}}
  plugins: {balance: {enabled: [HighNodeUtilization]}}
"#,
        )
        .unwrap();
        let pipeline = Pipeline::build(&policy, "p.yaml", &crate::plugins::REGISTRY).unwrap();
        let snap = two_sources();
        let plan = plan::plan(&pipeline, &snap, 0).unwrap();
        let names: Vec<&str> = plan
            .evictions
            .iter()
            .map(|e| &*snap.pod(e.pod).name)
            .collect();
        assert_eq!(names, vec!["a", "c", "b"]);
        assert!(plan.evictions.iter().all(|e| e.plugin == NAME));
    }
}
