//! What LowNodeUtilization and HighNodeUtilization share, as upstream's `nodeutilization`
//! package does: threshold validation, percentages, eviction modes, the refusal of real-usage
//! metrics, and the loop that evicts pods from source nodes while the destination nodes still
//! have room.
//!
//! The loop (upstream's `evictPodsFromSourceNodes` and `evictPods`):
//! - Source nodes are visited in the order given. On each, the active pods the evictor's
//!   Filter accepts (and, with `OnlyThresholdingResources`, that request one of the thresholds'
//!   resources) are taken in the framework's eviction order.
//! - Before the first pod and after every eviction, the source decides whether to go on
//!   ([`SourceNode::keep_going`]), given the room left on the destinations.
//! - A pod moves only if it tolerates every taint of some destination, is not in an
//!   `evictableNamespaces.exclude` namespace, and passes the evictor's PreEvictionFilter.
//! - A node eviction limit ends the node; the cycle's total limit ends the plugin; any other
//!   refusal (namespace limit, disruption budget) skips the pod.
//! - Each eviction takes the pod's requests off the source's usage and off the room left
//!   (one pod for `pods`).

use crate::framework::{Context, EvictError};
use crate::plugins::shared::Namespaces;
use crate::policy::ArgsError;
use crate::sim;
use crate::snapshot::{Node, NodeId, Pod, Taint, RESOURCE_PODS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Upstream's `EvictionModeOnlyThresholdingResources`: evict only pods that request one of
/// the resources the thresholds name.
pub const ONLY_THRESHOLDING_RESOURCES: &str = "OnlyThresholdingResources";

/// Every eviction mode upstream knows.
pub const EVICTION_MODES: &[&str] = &[ONLY_THRESHOLDING_RESOURCES];

/// `metricsUtilization`: real usage from metrics-server or Prometheus instead of requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricsUtilization {
    #[serde(default)]
    pub metrics_server: bool,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub prometheus: Option<serde_json::Value>,
}

impl MetricsUtilization {
    /// Whether it asks for real usage at all (an empty `metricsUtilization: {}` does not).
    pub fn wants_real_usage(&self) -> bool {
        self.metrics_server || self.source.is_some() || self.prometheus.is_some()
    }
}

/// Refuses `metricsUtilization` that asks for real usage, which this build cannot read.
pub fn refuse_real_usage(m: &Option<MetricsUtilization>, what: &str) -> Result<(), ArgsError> {
    if m.as_ref().is_some_and(MetricsUtilization::wants_real_usage) {
        return Err(ArgsError::new("metricsUtilization", what));
    }
    Ok(())
}

/// Upstream's `validateThresholds`: at least one resource, every percentage in [0, 100].
pub fn validate_thresholds(field: &str, t: &BTreeMap<String, f64>) -> Result<(), ArgsError> {
    if t.is_empty() {
        return Err(ArgsError::new(
            field,
            "no resource threshold is configured; give at least one resource, such as cpu: 20",
        ));
    }
    for (name, v) in t {
        if !(0.0..=100.0).contains(v) || v.is_nan() {
            return Err(ArgsError::new(
                format!("{field}.{name}"),
                format!("{v} is not in the [0, 100] range; thresholds are percentages"),
            ));
        }
    }
    Ok(())
}

/// Upstream's `validateEvictionModes`: every mode must be a known one.
pub fn validate_eviction_modes(field: &str, modes: &[String]) -> Result<(), ArgsError> {
    for (i, m) in modes.iter().enumerate() {
        if !EVICTION_MODES.contains(&m.as_str()) {
            return Err(ArgsError::new(
                format!("{field}[{i}]"),
                format!(
                    "invalid eviction mode {m:?}; allowed: {}",
                    EVICTION_MODES.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `percent` of `capacity`, truncated (upstream's `resourceThreshold`).
pub fn amount(capacity: i64, percent: f64) -> i64 {
    (percent * 0.01 * capacity as f64) as i64
}

/// `usage` as a percentage of `capacity`; 0 when the node has none of the resource.
pub fn pct(usage: i64, capacity: i64) -> f64 {
    if capacity <= 0 {
        0.0
    } else {
        100.0 * usage as f64 / capacity as f64
    }
}

/// Whether `usage` is at most `percent` of `capacity`, compared without the rounding noise
/// of dividing first (30% of 3000 is exactly 900). A node with none of the resource is at 0%.
pub fn at_or_below(usage: i64, capacity: i64, percent: f64) -> bool {
    if capacity <= 0 {
        return true;
    }
    usage as f64 * 100.0 <= percent * capacity as f64
}

/// A percentage for a reason: whole numbers as such, others with one decimal.
pub fn fmt_pct(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{:.0}%", v)
    } else {
        format!("{:.1}%", v)
    }
}

/// Upstream's `withResourceRequestForAny`: the pod requests one of the resources.
/// (The snapshot keeps effective requests, so an explicit request of zero counts as none.)
pub fn requests_any(pod: &Pod, resources: &[String]) -> bool {
    resources
        .iter()
        .any(|r| r != RESOURCE_PODS && pod.requests.get(r) > 0)
}

/// The sum of a node's usage over the classified resources (milli for cpu), upstream's key
/// for ordering nodes by use.
pub fn usage_sum(usage: &BTreeMap<String, i64>) -> i128 {
    usage.values().map(|v| *v as i128).sum()
}

/// A node pods are evicted from.
pub trait SourceNode {
    fn id(&self) -> NodeId;
    /// The node's use of every classified resource, as absolute amounts (milli for cpu).
    fn usage_mut(&mut self) -> &mut BTreeMap<String, i64>;
    /// Whether to keep evicting from this node, given the room left on the destinations.
    fn keep_going(&self, available: &BTreeMap<String, i64>) -> bool;
    /// Why pods leave this node, for the plan.
    fn reason(&self, node: &Node) -> String;
}

/// How the loop picks and counts pods.
pub struct EvictOptions<'a> {
    /// Every classified resource; usage and room are kept for these.
    pub resources: &'a [String],
    pub evictable_namespaces: Option<&'a Namespaces>,
    /// This plugin's eviction limit per node (`evictionLimits.node`).
    pub node_limit: Option<u32>,
    /// With `OnlyThresholdingResources`: only pods requesting one of these resources.
    pub require_request_for: Option<&'a [String]>,
}

/// Evicts pods from `sources`, in the order given, while they want to go on and the
/// destinations have room (`available`, per resource, updated as pods leave).
pub fn evict_pods_from_source_nodes<S: SourceNode>(
    cx: &mut Context<'_, '_>,
    sources: Vec<S>,
    destinations: &[NodeId],
    available: &mut BTreeMap<String, i64>,
    opts: &EvictOptions<'_>,
) {
    let snap = cx.snap();
    let destination_taints: Vec<&[Taint]> = destinations
        .iter()
        .map(|&d| snap.node(d).taints.as_slice())
        .collect();
    'nodes: for mut source in sources {
        let node = snap.node(source.id());
        let mut candidates: Vec<_> = cx
            .pods_on_node(source.id())
            .filter(|&p| {
                let pod = snap.pod(p);
                pod.is_active()
                    && opts
                        .require_request_for
                        .is_none_or(|r| requests_any(pod, r))
                    && cx.filter(p).is_ok()
            })
            .collect();
        if candidates.is_empty() {
            tracing::debug!(node = %node.name, "no removable pods on node");
            continue;
        }
        cx.sort_by_eviction_order(&mut candidates);
        if !source.keep_going(available) {
            continue;
        }
        let mut evicted_here = 0u32;
        for pod_id in candidates {
            if opts.node_limit.is_some_and(|l| evicted_here >= l) {
                break;
            }
            let pod = snap.pod(pod_id);
            if !destination_taints
                .iter()
                .any(|t| sim::tolerates_all_taints(pod, t))
            {
                continue;
            }
            if opts
                .evictable_namespaces
                .is_some_and(|ns| ns.exclude.iter().any(|n| **n == *pod.namespace))
            {
                continue;
            }
            if cx.pre_eviction_filter(pod_id).is_err() {
                continue;
            }
            let reason = source.reason(node);
            match cx.evict(pod_id, reason) {
                Ok(()) => {
                    evicted_here += 1;
                    let usage = source.usage_mut();
                    for r in opts.resources {
                        let amount = if r == RESOURCE_PODS {
                            1
                        } else {
                            pod.requests.get(r)
                        };
                        *usage.get_mut(r).expect("every resource") -= amount;
                        *available.get_mut(r).expect("every resource") -= amount;
                    }
                    if !source.keep_going(available) {
                        break;
                    }
                }
                Err(EvictError::NodeLimit(_)) => continue 'nodes,
                Err(EvictError::TotalLimit(_)) => return,
                Err(e) => tracing::debug!(pod = %pod.key(), error = %e, "eviction not planned"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::pod;

    #[test]
    fn percentages_compare_exactly() {
        // 900 / 3000 * 100 is 30.000000000000004 in floating point; 900 is still 30%.
        assert!(at_or_below(900, 3000, 30.0));
        assert!(!at_or_below(901, 3000, 30.0));
        assert!(
            at_or_below(5, 0, 0.0),
            "a node without the resource is at 0%"
        );
        assert_eq!(fmt_pct(pct(1, 3)), "33.3%");
        assert_eq!(fmt_pct(pct(1, 4)), "25%");
        assert_eq!(amount(4000, 22.0), 880);
    }

    #[test]
    fn validation_names_the_field() {
        let e = validate_thresholds("thresholds", &[("memory".into(), 101.0)].into()).unwrap_err();
        assert_eq!(e.path, "thresholds.memory");
        assert_eq!(
            validate_thresholds("thresholds", &BTreeMap::new())
                .unwrap_err()
                .path,
            "thresholds"
        );
        let modes = vec![ONLY_THRESHOLDING_RESOURCES.to_string(), "Sometimes".into()];
        assert_eq!(
            validate_eviction_modes("evictionModes", &modes)
                .unwrap_err()
                .path,
            "evictionModes[1]"
        );
    }

    #[test]
    fn requests_for_any_resource() {
        let p = pod("a", "p").cpu(100).build();
        assert!(requests_any(&p, &["cpu".into()]));
        assert!(!requests_any(&p, &["memory".into(), "pods".into()]));
        let g = pod("a", "g").resource("nvidia.com/gpu", 1).build();
        assert!(requests_any(&g, &["nvidia.com/gpu".into()]));
    }
}
