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

use crate::framework::{Context, Plugin};
use crate::plugins::node_utilization::{
    self as nu, amount, evict_pods_from_source_nodes, pct, validate_thresholds, EvictOptions,
    SourceNode,
};
use crate::plugins::shared::Namespaces;
use crate::policy::{decode_args, ArgsError};
use crate::snapshot::{NodeId, Resources, RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const NAME: &str = "LowNodeUtilization";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvictionLimits {
    #[serde(default)]
    pub node: Option<u32>,
}

pub use crate::plugins::node_utilization::MetricsUtilization;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LowNodeUtilizationArgs {
    #[serde(default)]
    pub use_deviation_thresholds: bool,
    #[serde(default)]
    pub thresholds: BTreeMap<String, f64>,
    #[serde(default)]
    pub target_thresholds: BTreeMap<String, f64>,
    #[serde(default)]
    pub number_of_nodes: usize,
    #[serde(default)]
    pub evictable_namespaces: Option<Namespaces>,
    #[serde(default)]
    pub eviction_limits: Option<EvictionLimits>,
    #[serde(default)]
    pub metrics_utilization: Option<MetricsUtilization>,
}

#[derive(Debug, Clone)]
pub struct LowNodeUtilization {
    pub args: LowNodeUtilizationArgs,
    /// Every resource classified: the thresholds' plus cpu, memory and pods, sorted.
    resources: Vec<String>,
    /// Thresholds with upstream's defaults for cpu, memory and pods filled in.
    low: BTreeMap<String, f64>,
    high: BTreeMap<String, f64>,
}

impl LowNodeUtilization {
    pub fn new(args: &serde_json::Value) -> Result<Self, ArgsError> {
        let args: LowNodeUtilizationArgs = decode_args(args)?;
        nu::refuse_real_usage(
            &args.metrics_utilization,
            "balancing by real usage (metrics-server or Prometheus) is not available in this build; remove metricsUtilization to balance by requests",
        )?;
        validate_thresholds("thresholds", &args.thresholds)?;
        validate_thresholds("targetThresholds", &args.target_thresholds)?;
        if args.thresholds.len() != args.target_thresholds.len()
            || args
                .thresholds
                .keys()
                .any(|k| !args.target_thresholds.contains_key(k))
        {
            return Err(ArgsError::new(
                "targetThresholds",
                "thresholds and targetThresholds configured different resources; give both the same resource names",
            ));
        }
        if !args.use_deviation_thresholds {
            for (name, v) in &args.thresholds {
                if *v > args.target_thresholds[name] {
                    return Err(ArgsError::new(
                        format!("thresholds.{name}"),
                        format!(
                            "thresholds' {name} percentage ({v}) is greater than targetThresholds' ({}); the low threshold must not exceed the target",
                            args.target_thresholds[name]
                        ),
                    ));
                }
            }
        }
        if let Some(ns) = &args.evictable_namespaces {
            if !ns.include.is_empty() {
                return Err(ArgsError::new(
                    "evictableNamespaces.include",
                    "only exclude can be set for evictableNamespaces; inclusion is not supported",
                ));
            }
        }
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
        Ok(LowNodeUtilization {
            args,
            resources,
            low,
            high,
        })
    }

    fn node_limit(&self) -> Option<u32> {
        self.args.eviction_limits.as_ref().and_then(|l| l.node)
    }
}

/// A node's usage and thresholds, as absolute amounts (milli for cpu), per resource.
struct NodeInfo {
    id: NodeId,
    usage: BTreeMap<String, i64>,
    low: BTreeMap<String, i64>,
    high: BTreeMap<String, i64>,
}

impl NodeInfo {
    fn above_target(&self) -> bool {
        self.usage.iter().any(|(r, u)| *u > self.high[r])
    }
    fn below_low(&self) -> bool {
        self.usage.iter().all(|(r, u)| *u <= self.low[r])
    }
}

/// An overutilized node gives pods away while it stays above its target and the
/// underutilized nodes have room for every resource.
impl SourceNode for NodeInfo {
    fn id(&self) -> NodeId {
        self.id
    }
    fn usage_mut(&mut self) -> &mut BTreeMap<String, i64> {
        &mut self.usage
    }
    fn keep_going(&self, available: &BTreeMap<String, i64>) -> bool {
        self.above_target() && available.values().all(|v| *v > 0)
    }
    fn reason(&self, node: &crate::snapshot::Node) -> String {
        over_target_reason(self, node)
    }
}

impl Plugin for LowNodeUtilization {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        let usage_of = |req: &Resources| -> BTreeMap<String, i64> {
            self.resources
                .iter()
                .map(|r| (r.clone(), req.get(r)))
                .collect()
        };
        // Mean utilization per resource, for deviation thresholds.
        let mut mean: BTreeMap<&str, f64> = BTreeMap::new();
        if self.args.use_deviation_thresholds && !nodes.is_empty() {
            for &n in nodes {
                let cap = &snap.node(n).allocatable;
                let req = cx.requested(n);
                for r in &self.resources {
                    *mean.entry(r).or_insert(0.0) += pct(req.get(r), cap.get(r));
                }
            }
            for v in mean.values_mut() {
                *v /= nodes.len() as f64;
            }
        }
        let infos: Vec<NodeInfo> = nodes
            .iter()
            .map(|&n| {
                let cap = &snap.node(n).allocatable;
                let mut low = BTreeMap::new();
                let mut high = BTreeMap::new();
                for r in &self.resources {
                    let c = cap.get(r);
                    let (l, h) = if self.args.use_deviation_thresholds {
                        if self.low[r] == 0.0 {
                            (c, c)
                        } else {
                            let m = mean[r.as_str()];
                            (
                                amount(c, (m - self.low[r]).clamp(0.0, 100.0)),
                                amount(c, (m + self.high[r]).clamp(0.0, 100.0)),
                            )
                        }
                    } else {
                        (amount(c, self.low[r]), amount(c, self.high[r]))
                    };
                    low.insert(r.clone(), l);
                    high.insert(r.clone(), h);
                }
                NodeInfo {
                    id: n,
                    usage: usage_of(cx.requested(n)),
                    low,
                    high,
                }
            })
            .collect();

        let mut low_nodes = Vec::new();
        let mut high_nodes = Vec::new();
        for info in infos {
            let node = snap.node(info.id);
            if !node.unschedulable && info.below_low() {
                low_nodes.push(info);
            } else if info.above_target() {
                high_nodes.push(info);
            }
        }
        tracing::debug!(
            underutilized = low_nodes.len(),
            overutilized = high_nodes.len(),
            "LowNodeUtilization classified nodes"
        );
        if low_nodes.is_empty() {
            tracing::info!(
                "no node is underutilized, nothing to do; you might tune the thresholds"
            );
            return;
        }
        if low_nodes.len() <= self.args.number_of_nodes {
            tracing::info!(
                underutilized = low_nodes.len(),
                number_of_nodes = self.args.number_of_nodes,
                "number of underutilized nodes is at most numberOfNodes, nothing to do"
            );
            return;
        }
        if low_nodes.len() == nodes.len() {
            tracing::info!("all nodes are underutilized, nothing to do");
            return;
        }
        if high_nodes.is_empty() {
            tracing::info!("all nodes are under target utilization, nothing to do");
            return;
        }

        // Room left on the destinations: their target minus their use, summed.
        let mut available: BTreeMap<String, i64> =
            self.resources.iter().map(|r| (r.clone(), 0)).collect();
        for d in &low_nodes {
            for r in &self.resources {
                *available.get_mut(r).expect("every resource") += d.high[r] - d.usage[r];
            }
        }
        let destinations: Vec<NodeId> = low_nodes.iter().map(|d| d.id).collect();

        // Most used first (upstream sums the raw amounts); ties by name.
        high_nodes.sort_by(|a, b| {
            nu::usage_sum(&b.usage)
                .cmp(&nu::usage_sum(&a.usage))
                .then_with(|| a.id.cmp(&b.id))
        });

        evict_pods_from_source_nodes(
            cx,
            high_nodes,
            &destinations,
            &mut available,
            &EvictOptions {
                resources: &self.resources,
                evictable_namespaces: self.args.evictable_namespaces.as_ref(),
                node_limit: self.node_limit(),
                require_request_for: None,
            },
        );
    }
}

fn over_target_reason(info: &NodeInfo, node: &crate::snapshot::Node) -> String {
    let over: Vec<String> = info
        .usage
        .iter()
        .filter(|(r, u)| **u > info.high[*r])
        .map(|(r, u)| {
            let cap = node.allocatable.get(r);
            format!(
                "{r} {:.0}% > target {:.0}%",
                pct(*u, cap),
                pct(info.high[r], cap)
            )
        })
        .collect();
    format!("node {} is overutilized ({})", node.name, over.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Limits, Pipeline};
    use crate::plan;
    use crate::plugins::default_evictor::DefaultEvictor;
    use crate::snapshot::builders::{node, pdb, pod, snapshot, GIB};
    use crate::snapshot::{ClusterSnapshot, Pod, PodId, Qos, SnapshotParts, TaintEffect};
    use serde_json::json;

    /// Runs the plugin alone over every Ready node and returns the evicted pods' names.
    fn run_with(args: serde_json::Value, snap: &ClusterSnapshot, limits: Limits) -> Vec<String> {
        let plugin = LowNodeUtilization::new(&args).expect("valid args");
        crate::framework::run_alone(&plugin, snap, &DefaultEvictor::default(), limits, 0)
            .iter()
            .map(|e| snap.pod(e.pod).name.to_string())
            .collect()
    }

    fn run(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
        run_with(args, snap, Limits::default())
    }

    /// Upstream's documented example shape: one hot node (4 CPU, 8 pods of 400m = 80%),
    /// two cold ones (one 400m pod each = 10%).
    fn hot_cold() -> Vec<Pod> {
        let mut pods: Vec<Pod> = (0..8)
            .map(|i| {
                pod("web", &format!("hot-{i}"))
                    .node("n1")
                    .cpu(400)
                    .memory(GIB / 4)
                    .build()
            })
            .collect();
        pods.push(pod("web", "cold-a").node("n2").cpu(400).build());
        pods.push(pod("web", "cold-b").node("n3").cpu(400).build());
        pods
    }

    fn nodes3() -> Vec<crate::snapshot::Node> {
        vec![node("n1").build(), node("n2").build(), node("n3").build()]
    }

    fn cpu_args(low: f64, high: f64) -> serde_json::Value {
        json!({"thresholds": {"cpu": low}, "targetThresholds": {"cpu": high}})
    }

    #[test]
    fn moves_pods_off_the_hot_node_until_under_target() {
        let snap = snapshot(nodes3(), hot_cold());
        let out = run(cpu_args(20.0, 50.0), &snap);
        // 3200m of 4000m = 80% > 50%: evict until <= 2000m: 3 pods (3200 -> 2000).
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out.iter().all(|n| n.starts_with("hot-")));
    }

    #[test]
    fn stops_when_destinations_are_full() {
        let snap = snapshot(nodes3(), hot_cold());
        // cold nodes have room up to 25% of 4000m = 1000m each, 600m free each, 1200m in total:
        // after 3 evictions (1200m) the room is 0 and planning stops.
        let out = run(cpu_args(20.0, 25.0), &snap);
        assert_eq!(out.len(), 3, "{out:?}");
        let out = run(cpu_args(20.0, 22.0), &snap);
        // room: (880 - 400) * 2 = 960m -> 3 pods leave (the third makes it negative), then stop.
        assert_eq!(out.len(), 3, "{out:?}");
    }

    #[test]
    fn nothing_to_do_cases() {
        let snap = snapshot(nodes3(), hot_cold());
        // no node under 5%
        assert!(run(cpu_args(5.0, 50.0), &snap).is_empty());
        // numberOfNodes: 2 underutilized nodes are not more than 2
        assert!(run(
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "numberOfNodes": 2}),
            &snap
        )
        .is_empty());
        assert_eq!(run(json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "numberOfNodes": 1}), &snap).len(), 3);
        // nobody over 90%
        assert!(run(cpu_args(20.0, 90.0), &snap).is_empty());
        // all nodes underutilized
        assert!(run(cpu_args(90.0, 95.0), &snap).is_empty());
    }

    #[test]
    fn unschedulable_nodes_are_not_destinations() {
        let snap = snapshot(
            vec![
                node("n1").build(),
                node("n2").unschedulable().build(),
                node("n3").unschedulable().build(),
            ],
            hot_cold(),
        );
        assert!(run(cpu_args(20.0, 50.0), &snap).is_empty());
    }

    #[test]
    fn lowest_priority_and_qos_go_first() {
        let mut pods = vec![
            pod("a", "high").node("n1").cpu(1000).priority(100).build(),
            pod("a", "guaranteed")
                .node("n1")
                .cpu(1000)
                .qos(Qos::Guaranteed)
                .build(),
            pod("a", "burstable").node("n1").cpu(1000).build(),
            pod("a", "low").node("n1").cpu(1000).priority(-5).build(),
        ];
        pods.push(pod("a", "x").node("n2").cpu(100).build());
        let snap = snapshot(vec![node("n1").build(), node("n2").build()], pods);
        // 4000m / 4000m = 100% -> down to 60%: two pods leave.
        let out = run(cpu_args(10.0, 60.0), &snap);
        assert_eq!(out, vec!["burstable", "guaranteed"]);
        // no priority counts as the lowest
        let snap = snapshot(
            vec![node("n1").build(), node("n2").build()],
            vec![
                pod("a", "p0").node("n1").cpu(2000).priority(0).build(),
                pod("a", "pn").node("n1").cpu(2000).build(),
            ],
        );
        assert_eq!(run(cpu_args(10.0, 60.0), &snap), vec!["pn"]);
    }

    #[test]
    fn protected_pods_stay() {
        let pods = vec![
            pod("a", "ds")
                .node("n1")
                .cpu(1500)
                .owner("DaemonSet", "d")
                .build(),
            pod("a", "bare").node("n1").cpu(1500).bare().build(),
            pod("a", "mirror").node("n1").cpu(1000).mirror().build(),
        ];
        let snap = snapshot(vec![node("n1").build(), node("n2").build()], pods);
        assert!(run(cpu_args(10.0, 50.0), &snap).is_empty());
    }

    #[test]
    fn pods_must_tolerate_a_destination() {
        let pods = vec![
            pod("a", "p1").node("n1").cpu(2000).build(),
            pod("a", "p2")
                .node("n1")
                .cpu(2000)
                .toleration("dedicated", "", None)
                .build(),
        ];
        let snap = snapshot(
            vec![
                node("n1").build(),
                node("n2")
                    .taint("dedicated", "x", TaintEffect::PreferNoSchedule)
                    .build(),
            ],
            pods,
        );
        assert_eq!(run(cpu_args(10.0, 60.0), &snap), vec!["p2"]);
    }

    #[test]
    fn extended_resources_such_as_gpus() {
        let pods = vec![
            pod("ml", "train-1")
                .node("g1")
                .resource("nvidia.com/gpu", 4)
                .build(),
            pod("ml", "train-2")
                .node("g1")
                .resource("nvidia.com/gpu", 4)
                .build(),
            pod("ml", "infer")
                .node("g2")
                .resource("nvidia.com/gpu", 1)
                .build(),
        ];
        let snap = snapshot(
            vec![
                node("g1").resource("nvidia.com/gpu", 8).build(),
                node("g2").resource("nvidia.com/gpu", 8).build(),
            ],
            pods,
        );
        let args = json!({"thresholds": {"nvidia.com/gpu": 20}, "targetThresholds": {"nvidia.com/gpu": 60}});
        assert_eq!(run(args, &snap), vec!["train-1"]);
    }

    #[test]
    fn deviation_thresholds() {
        // cpu use: 90%, 50%, 10% (mean 50%). +-20 => low < 30%, high > 70%.
        let pods = vec![
            pod("a", "h1").node("n1").cpu(1800).build(),
            pod("a", "h2").node("n1").cpu(1800).build(),
            pod("a", "m").node("n2").cpu(2000).build(),
            pod("a", "c").node("n3").cpu(400).build(),
        ];
        let snap = snapshot(nodes3(), pods);
        let args = json!({"useDeviationThresholds": true, "thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 20}});
        assert_eq!(run(args, &snap), vec!["h1"]);
    }

    #[test]
    fn limits_namespaces_and_budgets() {
        let snap = snapshot(nodes3(), hot_cold());
        let out = run(
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "evictionLimits": {"node": 1}}),
            &snap,
        );
        assert_eq!(out.len(), 1);
        let out = run_with(
            cpu_args(20.0, 50.0),
            &snap,
            Limits {
                total: Some(2),
                ..Default::default()
            },
        );
        assert_eq!(out.len(), 2);
        let out = run(
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "evictableNamespaces": {"exclude": ["web"]}}),
            &snap,
        );
        assert!(out.is_empty());
        let mut pods = hot_cold();
        for p in pods.iter_mut().take(8) {
            p.labels = crate::labels::Labels::new(vec![("app".into(), "web".into())]);
        }
        let snap = ClusterSnapshot::build(SnapshotParts {
            nodes: nodes3(),
            pods,
            pdbs: vec![pdb("web", "web", "app", "web", 1)],
            ..Default::default()
        });
        assert_eq!(run(cpu_args(20.0, 50.0), &snap).len(), 1);
    }

    #[test]
    fn args_validation_names_fields() {
        for (args, path) in [
            (
                json!({"thresholds": {}, "targetThresholds": {"cpu": 50}}),
                "thresholds",
            ),
            (json!({"targetThresholds": {"cpu": 50}}), "thresholds"),
            (
                json!({"thresholds": {"cpu": 120}, "targetThresholds": {"cpu": 150}}),
                "thresholds.cpu",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": -1}}),
                "targetThresholds.cpu",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "targetThresholds": {"memory": 50}}),
                "targetThresholds",
            ),
            (
                json!({"thresholds": {"cpu": 60}, "targetThresholds": {"cpu": 50}}),
                "thresholds.cpu",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "evictableNamespaces": {"include": ["a"]}}),
                "evictableNamespaces.include",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "numberOfNodes": -1}),
                "numberOfNodes",
            ),
            (
                json!({"thresholds": {"cpu": "high"}, "targetThresholds": {"cpu": 50}}),
                "thresholds.cpu",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "KubernetesMetrics"}}),
                "metricsUtilization",
            ),
            (
                json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "nodes": 1}),
                "nodes",
            ),
        ] {
            let e = LowNodeUtilization::new(&args).unwrap_err();
            assert_eq!(e.path, path, "{args}: {e}");
        }
        // deviation thresholds may have a low value above the target
        assert!(LowNodeUtilization::new(&json!({"useDeviationThresholds": true, "thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 10}})).is_ok());
    }

    #[test]
    fn later_plugins_see_earlier_evictions() {
        // Two LowNodeUtilization instances in two profiles: the second sees n1 already relieved.
        let policy = crate::policy::Policy::from_yaml(
            "p.yaml",
            r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: one
  pluginConfig:
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}
  plugins: {balance: {enabled: [LowNodeUtilization]}}
- name: two
  pluginConfig:
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}
  plugins: {balance: {enabled: [LowNodeUtilization]}}
"#,
        )
        .unwrap();
        let pipeline = Pipeline::build(&policy, "p.yaml").unwrap();
        let snap = snapshot(nodes3(), hot_cold());
        let plan = plan::plan(&pipeline, &snap, 0).unwrap();
        assert_eq!(plan.evictions.len(), 3);
        assert!(plan.evictions.iter().all(|e| e.profile == "one"));
        let ids: Vec<PodId> = plan.evictions.iter().map(|e| e.pod).collect();
        let mut dedup = ids.clone();
        dedup.dedup();
        assert_eq!(ids, dedup);
        assert_eq!(plan.requested_after[0].cpu, 2000);
    }
}
