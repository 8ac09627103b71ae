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
//!
//! The two plugins are the children [`low`] and [`high`].

pub mod high;
pub mod low;

use crate::framework::ArgsError;
use crate::framework::{Attempt, Context, MeasuredUsage};
use crate::plugins::shared::{each_one_of, Namespaces};
use crate::sim;
use crate::snapshot::usage::{check_value, QueryTarget, UsageNeed, UsageSource};
use crate::snapshot::{
    ClusterSnapshot, Node, NodeId, Pod, PodId, Taint, RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Upstream's `EvictionModeOnlyThresholdingResources`: evict only pods that request one of
/// the resources the thresholds name.
pub(crate) const ONLY_THRESHOLDING_RESOURCES: &str = "OnlyThresholdingResources";

/// Every eviction mode upstream knows.
pub(crate) const EVICTION_MODES: &[&str] = &[ONLY_THRESHOLDING_RESOURCES];

/// `metricsUtilization`: real usage from metrics-server or Prometheus instead of requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetricsUtilization {
    /// Deprecated upstream form of `source: KubernetesMetrics`.
    pub metrics_server: bool,
    /// `KubernetesMetrics` or `Prometheus`.
    pub source: Option<String>,
    /// `prometheus`: the queries, for the Prometheus source.
    pub prometheus: Option<PrometheusUsage>,
    /// Beyond upstream: a node must be overutilized for this many consecutive cycles
    /// (continuous mode) before pods leave it. Default 1.
    pub hysteresis_cycles: Option<u32>,
}

/// `metricsUtilization.prometheus`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PrometheusUsage {
    /// Upstream: one query giving each node's utilization as a 0–1 ratio, compared with the
    /// `MetricResource` threshold.
    pub query: Option<String>,
    /// Beyond upstream: per-resource node queries (`cpu`, `memory`), each a 0–1 ratio of
    /// the node's allocatable, so that thresholds can name cpu and memory.
    #[serde(deserialize_with = "crate::policy::null_as_default")]
    pub queries: BTreeMap<String, String>,
    /// Beyond upstream: per-resource pod queries (`cpu` in cores, `memory` in bytes, by
    /// `namespace` and `pod`), so that several pods can leave a hot node in one cycle.
    #[serde(deserialize_with = "crate::policy::null_as_default")]
    pub pod_queries: BTreeMap<String, String>,
}

pub use crate::snapshot::usage::{capacity, METRIC_RESOURCE, METRIC_RESOURCE_SCALE};

/// Where a LowNodeUtilization instance reads node utilization from.
#[derive(Debug, Clone, PartialEq)]
pub enum UsageMode {
    /// Pods' requests (upstream's default).
    Requests,
    /// metrics.k8s.io node and pod metrics for cpu and memory.
    MetricsServer,
    /// Prometheus queries.
    Prometheus(PrometheusUsage),
}

impl MetricsUtilization {
    /// Whether it asks for real usage at all (an empty `metricsUtilization: {}` does not).
    pub(crate) fn wants_real_usage(&self) -> bool {
        self.metrics_server || self.source.is_some() || self.prometheus.is_some()
    }

    /// Validates the block against the thresholds and resolves the usage mode.
    pub fn mode(&self, thresholds: &BTreeMap<String, f64>) -> Result<UsageMode, ArgsError> {
        let f = |p: &str| format!("metricsUtilization.{p}");
        let named = match self.source.as_deref() {
            None | Some("") => None,
            Some(name) => Some(
                UsageSource::from_policy_name(name).map_err(|m| ArgsError::new(f("source"), m))?,
            ),
        };
        let source = match (named, self.metrics_server) {
            (None, false) => {
                if self.prometheus.is_some() {
                    return Err(ArgsError::new(
                        f("source"),
                        "prometheus is set but source is not; add source: Prometheus",
                    ));
                }
                None
            }
            (None, true) | (Some(UsageSource::MetricsServer), _) => {
                Some(UsageSource::MetricsServer)
            }
            (Some(UsageSource::Prometheus), true) => {
                return Err(ArgsError::new(
                    f("metricsServer"),
                    "metricsServer and source: Prometheus cannot both be set; keep one",
                ))
            }
            (Some(UsageSource::Prometheus), false) => Some(UsageSource::Prometheus),
        };
        if let Some(n) = self.hysteresis_cycles {
            if n == 0 {
                return Err(ArgsError::new(
                    f("hysteresisCycles"),
                    "must be at least 1 (1: act in the first cycle a node is over its target)",
                ));
            }
            if source.is_none() {
                return Err(ArgsError::new(
                    f("hysteresisCycles"),
                    "applies to real usage only; set source: KubernetesMetrics or Prometheus",
                ));
            }
        }
        let metric_resource = thresholds.contains_key(METRIC_RESOURCE);
        match source {
            None => {
                if metric_resource {
                    return Err(ArgsError::new(
                        format!("thresholds.{METRIC_RESOURCE}"),
                        "MetricResource is the Prometheus query's ratio; set metricsUtilization: {source: Prometheus, prometheus: {query: ...}}",
                    ));
                }
                Ok(UsageMode::Requests)
            }
            Some(UsageSource::MetricsServer) => {
                if self.prometheus.is_some() {
                    return Err(ArgsError::new(
                        f("prometheus"),
                        "only source: Prometheus takes prometheus settings",
                    ));
                }
                if metric_resource {
                    return Err(ArgsError::new(
                        format!("thresholds.{METRIC_RESOURCE}"),
                        "MetricResource needs source: Prometheus; with KubernetesMetrics use cpu and memory",
                    ));
                }
                Ok(UsageMode::MetricsServer)
            }
            Some(UsageSource::Prometheus) => self.prometheus_mode(thresholds),
        }
    }

    /// The Prometheus settings checked against the thresholds: one MetricResource query,
    /// or cpu and memory node queries (with their pod queries).
    fn prometheus_mode(&self, thresholds: &BTreeMap<String, f64>) -> Result<UsageMode, ArgsError> {
        let f = |p: &str| format!("metricsUtilization.{p}");
        let metric_resource = thresholds.contains_key(METRIC_RESOURCE);
        let p = self.prometheus.clone().unwrap_or_default();
        let query = p.query.as_deref().filter(|q| !q.trim().is_empty());
        match (query, p.queries.is_empty()) {
            (None, true) => {
                return Err(ArgsError::new(
                    f("prometheus.query"),
                    "source: Prometheus needs prometheus.query (a 0-1 ratio per node, with the MetricResource threshold) or prometheus.queries (cpu and memory ratios)",
                ))
            }
            (Some(_), false) => {
                return Err(ArgsError::new(
                    f("prometheus.queries"),
                    "give either prometheus.query (MetricResource) or prometheus.queries (cpu, memory), not both",
                ))
            }
            (Some(_), true) => {
                if !metric_resource || thresholds.len() != 1 {
                    return Err(ArgsError::new(
                        "thresholds",
                        "with prometheus.query, thresholds and targetThresholds must name only MetricResource",
                    ));
                }
                if !p.pod_queries.is_empty() {
                    return Err(ArgsError::new(
                        f("prometheus.podQueries"),
                        "pod queries go with prometheus.queries (cpu, memory); a MetricResource ratio cannot be split by pod",
                    ));
                }
            }
            (None, false) => {
                if metric_resource {
                    return Err(ArgsError::new(
                        format!("thresholds.{METRIC_RESOURCE}"),
                        "MetricResource goes with prometheus.query; with prometheus.queries use cpu and memory",
                    ));
                }
                for (r, q) in &p.queries {
                    if r != RESOURCE_CPU && r != RESOURCE_MEMORY {
                        return Err(ArgsError::new(
                            f(&format!("prometheus.queries.{r}")),
                            "only cpu and memory can be measured; allowed keys: cpu, memory",
                        ));
                    }
                    if q.trim().is_empty() {
                        return Err(ArgsError::new(
                            f(&format!("prometheus.queries.{r}")),
                            "empty query",
                        ));
                    }
                    if !thresholds.contains_key(r) {
                        return Err(ArgsError::new(
                            f(&format!("prometheus.queries.{r}")),
                            format!("{r} is measured but has no threshold; add {r} to thresholds and targetThresholds"),
                        ));
                    }
                }
            }
        }
        for (r, q) in &p.pod_queries {
            if !p.queries.contains_key(r) {
                return Err(ArgsError::new(
                    f(&format!("prometheus.podQueries.{r}")),
                    format!("a pod query for {r} needs the node query prometheus.queries.{r}"),
                ));
            }
            if q.trim().is_empty() {
                return Err(ArgsError::new(
                    f(&format!("prometheus.podQueries.{r}")),
                    "empty query",
                ));
            }
        }
        Ok(UsageMode::Prometheus(p))
    }
}

impl UsageMode {
    /// What must be fetched before the plugin runs.
    pub fn needs(&self) -> Vec<UsageNeed> {
        match self {
            UsageMode::Requests => Vec::new(),
            UsageMode::MetricsServer => vec![UsageNeed::MetricsServer { pods: true }],
            UsageMode::Prometheus(p) => {
                let mut out = Vec::new();
                if let Some(q) = &p.query {
                    out.push(UsageNeed::Query {
                        query: q.clone(),
                        target: QueryTarget::Node,
                    });
                }
                for q in p.queries.values() {
                    out.push(UsageNeed::Query {
                        query: q.clone(),
                        target: QueryTarget::Node,
                    });
                }
                for q in p.pod_queries.values() {
                    out.push(UsageNeed::Query {
                        query: q.clone(),
                        target: QueryTarget::Pod,
                    });
                }
                out
            }
        }
    }

    /// The metrics source read; None for requests.
    pub fn source(&self) -> Option<UsageSource> {
        match self {
            UsageMode::Requests => None,
            UsageMode::MetricsServer => Some(UsageSource::MetricsServer),
            UsageMode::Prometheus(_) => Some(UsageSource::Prometheus),
        }
    }
}

/// Measured usage for one cycle, resolved for a plugin's resources.
pub struct Measured {
    /// Where the measurements came from.
    pub source: UsageSource,
    /// By node id: the measured amount per measured resource, or why the node is left out.
    pub nodes: Vec<Result<BTreeMap<String, i64>, String>>,
    /// The resources measured (the others are counted from requests).
    pub resources: Vec<String>,
    /// Per pod: its measured amount of a resource, when known.
    pod_amounts: BTreeMap<String, Vec<Option<i64>>>,
}

impl Measured {
    /// A pod's measured amount of a measured resource; None when unknown.
    pub(crate) fn pod_amount(&self, pod: PodId, resource: &str) -> Option<i64> {
        self.pod_amounts
            .get(resource)
            .and_then(|v| v.get(pod.index()).copied().flatten())
    }

    pub(crate) fn is_measured(&self, resource: &str) -> bool {
        self.resources.iter().any(|r| r == resource)
    }
}

/// Resolves this cycle's measured usage from the snapshot, or says why the plugin cannot
/// use it (the source is down, answered garbage, or was not given).
pub fn measure(
    mode: &UsageMode,
    snap: &ClusterSnapshot,
    nodes: &[NodeId],
    now: i64,
) -> Result<Option<Measured>, String> {
    match mode {
        UsageMode::Requests => Ok(None),
        UsageMode::MetricsServer => measure_metrics_server(snap, nodes, now).map(Some),
        UsageMode::Prometheus(p) => measure_prometheus(p, snap, nodes, now).map(Some),
    }
}

/// The nodes' and pods' cpu and memory from metrics-server's samples of this cycle.
fn measure_metrics_server(
    snap: &ClusterSnapshot,
    nodes: &[NodeId],
    now: i64,
) -> Result<Measured, String> {
    let usage = snap.usage();
    let source = UsageSource::MetricsServer;
    let answer = usage.metrics_server.as_ref().ok_or(
        "no metrics-server data for this cycle (offline: give --node-metrics and --pod-metrics)",
    )?;
    let samples = answer
        .as_ref()
        .map_err(|e| format!("metrics-server failed: {e}"))?;
    let max_age = usage.max_age(source);
    let mut out = vec![Err(String::new()); snap.nodes.len()];
    for &n in nodes {
        out[n.index()] = match samples.node(n) {
            None => Err("no metrics-server sample for the node".to_string()),
            Some(s) if usage.is_stale(source, s.timestamp, now) => Err(format!(
                "its metrics-server sample is {}s old (maxSampleAge {max_age}s)",
                now - s.timestamp
            )),
            Some(s) => Ok(BTreeMap::from([
                (RESOURCE_CPU.to_string(), s.cpu),
                (RESOURCE_MEMORY.to_string(), s.memory),
            ])),
        };
    }
    let fresh = |id: PodId| {
        samples
            .pod(id)
            .filter(|s| !usage.is_stale(source, s.timestamp, now))
    };
    let ids = snap.pod_ids();
    let pod_amounts = BTreeMap::from([
        (
            RESOURCE_CPU.to_string(),
            ids.clone().map(|p| fresh(p).map(|s| s.cpu)).collect(),
        ),
        (
            RESOURCE_MEMORY.to_string(),
            ids.map(|p| fresh(p).map(|s| s.memory)).collect(),
        ),
    ]);
    Ok(Measured {
        source,
        nodes: out,
        resources: vec![RESOURCE_CPU.into(), RESOURCE_MEMORY.into()],
        pod_amounts,
    })
}

/// The nodes' (and pods') usage from this cycle's answers to the Prometheus queries.
fn measure_prometheus(
    p: &PrometheusUsage,
    snap: &ClusterSnapshot,
    nodes: &[NodeId],
    now: i64,
) -> Result<Measured, String> {
    let usage = snap.usage();
    let source = UsageSource::Prometheus;
    let max_age = usage.max_age(source);
    let answer = |q: &str| {
        let a = usage
            .queries
            .get(q)
            .ok_or_else(|| format!("no Prometheus answer for query {q:?} this cycle"))?;
        a.as_ref()
            .map_err(|e| format!("Prometheus query {q:?} failed: {e}"))
    };
    // (resource, query, scale: the amount at ratio 1)
    let node_queries: Vec<(String, &str)> = match &p.query {
        Some(q) => vec![(METRIC_RESOURCE.to_string(), q.as_str())],
        None => p
            .queries
            .iter()
            .map(|(r, q)| (r.clone(), q.as_str()))
            .collect(),
    };
    let mut out: Vec<Result<BTreeMap<String, i64>, String>> =
        vec![Ok(BTreeMap::new()); snap.nodes.len()];
    for (r, q) in &node_queries {
        let samples = answer(q)?;
        for &n in nodes {
            let slot = &mut out[n.index()];
            let Ok(map) = slot else { continue };
            let Some(s) = samples.node(n) else {
                *slot = Err(format!("no sample for the node in the answer to {q:?}"));
                continue;
            };
            if usage.is_stale(source, s.timestamp, now) {
                *slot = Err(format!(
                    "its sample of {q:?} is {}s old (maxSampleAge {max_age}s)",
                    now - s.timestamp
                ));
                continue;
            }
            check_value(s.value, true).map_err(|why| {
                format!(
                    "Prometheus query {q:?} answered {why} for node {}; nothing is evicted on a bad measurement",
                    snap.node(n).name
                )
            })?;
            let capacity = if r == METRIC_RESOURCE {
                METRIC_RESOURCE_SCALE
            } else {
                snap.node(n).allocatable.get(r)
            };
            map.insert(r.clone(), (s.value * capacity as f64).round() as i64);
        }
    }
    let mut pod_amounts = BTreeMap::new();
    for (r, q) in &p.pod_queries {
        let samples = answer(q)?;
        let scale = if r == RESOURCE_CPU { 1000.0 } else { 1.0 };
        let mut v = Vec::with_capacity(snap.pods.len());
        for id in snap.pod_ids() {
            v.push(match samples.pod(id) {
                Some(s) if !usage.is_stale(source, s.timestamp, now) => {
                    check_value(s.value, false).map_err(|why| {
                        format!(
                            "Prometheus pod query {q:?} answered {why} for pod {}",
                            snap.pod(id).key()
                        )
                    })?;
                    Some((s.value * scale).round() as i64)
                }
                _ => None,
            });
        }
        pod_amounts.insert(r.clone(), v);
    }
    Ok(Measured {
        source,
        nodes: out,
        resources: node_queries.into_iter().map(|(r, _)| r).collect(),
        pod_amounts,
    })
}

/// Refuses `metricsUtilization` that asks for real usage, for plugins that balance by
/// requests only.
pub(crate) fn refuse_real_usage(
    m: &Option<MetricsUtilization>,
    what: &str,
) -> Result<(), ArgsError> {
    if m.as_ref().is_some_and(MetricsUtilization::wants_real_usage) {
        return Err(ArgsError::new("metricsUtilization", what));
    }
    Ok(())
}

/// Upstream's `validateThresholds`: at least one resource, every percentage in [0, 100].
pub(crate) fn validate_thresholds(field: &str, t: &BTreeMap<String, f64>) -> Result<(), ArgsError> {
    if t.is_empty() {
        return Err(ArgsError::new(
            field,
            "no resource threshold is configured; give at least one resource, such as cpu: 20",
        ));
    }
    for (name, v) in t {
        if name.trim().is_empty() {
            return Err(ArgsError::new(
                format!("{field}.{name:?}"),
                "a threshold needs a resource name, such as cpu, memory, pods or nvidia.com/gpu",
            ));
        }
        if !(0.0..=100.0).contains(v) || v.is_nan() {
            return Err(ArgsError::new(
                format!("{field}.{name}"),
                format!("{v} is not in the [0, 100] range; thresholds are percentages"),
            ));
        }
    }
    Ok(())
}

/// Upstream's `ValidateLowNodeUtilizationArgs` for a pair of thresholds: each valid, both
/// over the same resources, and (unless `deviation`: the thresholds are then distances
/// from the mean) the low one not above the target; `evictableNamespaces` only excludes.
pub(crate) fn validate_threshold_pair(
    low: &BTreeMap<String, f64>,
    target: &BTreeMap<String, f64>,
    deviation: bool,
    evictable_namespaces: Option<&Namespaces>,
) -> Result<(), ArgsError> {
    validate_thresholds("thresholds", low)?;
    validate_thresholds("targetThresholds", target)?;
    if low.len() != target.len() || low.keys().any(|k| !target.contains_key(k)) {
        return Err(ArgsError::new(
            "targetThresholds",
            "thresholds and targetThresholds configured different resources; give both the same resource names",
        ));
    }
    if !deviation {
        for (name, v) in low {
            if *v > target[name] {
                return Err(ArgsError::new(
                    format!("thresholds.{name}"),
                    format!(
                        "thresholds' {name} percentage ({v}) is greater than targetThresholds' ({}); the low threshold must not exceed the target",
                        target[name]
                    ),
                ));
            }
        }
    }
    validate_evictable_namespaces(evictable_namespaces)
}

/// `evictableNamespaces` may only exclude (upstream's utilization plugins).
pub(crate) fn validate_evictable_namespaces(ns: Option<&Namespaces>) -> Result<(), ArgsError> {
    if ns.is_some_and(|ns| !ns.include.is_empty()) {
        return Err(ArgsError::new(
            "evictableNamespaces.include",
            "only exclude can be set for evictableNamespaces; inclusion is not supported",
        ));
    }
    Ok(())
}

/// Upstream's `validateEvictionModes`: every mode must be a known one.
pub(crate) fn validate_eviction_modes(field: &str, modes: &[String]) -> Result<(), ArgsError> {
    each_one_of(field, modes, EVICTION_MODES, |m| {
        format!(
            "invalid eviction mode {m:?}; allowed: {}",
            EVICTION_MODES.join(", ")
        )
    })
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
pub(crate) fn at_or_below(usage: i64, capacity: i64, percent: f64) -> bool {
    if capacity <= 0 {
        return true;
    }
    usage as f64 * 100.0 <= percent * capacity as f64
}

/// A percentage for a reason: whole numbers as such, others with one decimal.
pub(crate) fn fmt_pct(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{}%", Whole(v))
    } else {
        format!("{:.1}%", v)
    }
}

/// A percentage as `{:.0}` prints it (the nearest whole number, ties to even), without
/// the exact decimal expansion `{:.0}` computes: reasons print one per planned eviction.
pub struct Whole(pub f64);

impl std::fmt::Display for Whole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.0.round_ties_even();
        if r.is_finite() && r.abs() < 1e15 && !(r == 0.0 && r.is_sign_negative()) {
            write!(f, "{}", r as i64)
        } else {
            write!(f, "{r}")
        }
    }
}

/// The destinations' room to their targets, per resource (in the order of the plugin's
/// resources), with the first destination that takes a pod found in logarithmic time: a
/// tree of the largest room per resource over ranges of destinations prunes every range
/// where some resource's room is short of the pod's amount. Same answer as trying each
/// destination in order.
struct Rooms {
    /// Destinations.
    n: usize,
    /// Resources per destination.
    k: usize,
    /// Leaves (a power of two, at least the number of destinations).
    leaves: usize,
    /// Destinations' rooms, destination-major.
    room: Vec<i64>,
    /// `max[node * k + i]`: the largest room of resource i under tree node `node` (1 is the
    /// root; leaves start at `leaves`; padding leaves hold i64::MIN).
    max: Vec<i64>,
}

impl Rooms {
    fn new(rooms: Vec<Vec<i64>>, k: usize) -> Rooms {
        let n = rooms.len();
        let leaves = n.next_power_of_two().max(1);
        let mut max = vec![i64::MIN; 2 * leaves * k];
        let mut room = Vec::with_capacity(n * k);
        for (d, r) in rooms.iter().enumerate() {
            debug_assert_eq!(r.len(), k);
            room.extend_from_slice(r);
            max[(leaves + d) * k..(leaves + d + 1) * k].copy_from_slice(r);
        }
        for node in (1..leaves).rev() {
            for i in 0..k {
                max[node * k + i] = max[2 * node * k + i].max(max[(2 * node + 1) * k + i]);
            }
        }
        Rooms {
            n,
            k,
            leaves,
            room,
            max,
        }
    }

    fn len(&self) -> usize {
        self.n
    }

    /// The first destination with room for `amounts` in every resource for which `also`
    /// holds.
    fn first_fit(&self, amounts: &[i64], also: impl Fn(usize) -> bool) -> Option<usize> {
        if self.k == 0 {
            return (0..self.len()).find(|&d| also(d));
        }
        let fits = |node: usize| {
            self.max[node * self.k..(node + 1) * self.k]
                .iter()
                .zip(amounts)
                .all(|(v, a)| v >= a)
        };
        // Depth-first, left to right, into the ranges where every resource may fit.
        let mut stack = Vec::with_capacity(2 * (self.leaves.trailing_zeros() as usize + 1));
        stack.push(1usize);
        while let Some(node) = stack.pop() {
            if !fits(node) {
                continue;
            }
            if node >= self.leaves {
                let d = node - self.leaves;
                if d < self.len() && also(d) {
                    return Some(d);
                }
                continue;
            }
            stack.push(2 * node + 1);
            stack.push(2 * node);
        }
        None
    }

    /// Takes `amount` of resource `i` off destination `d`'s room.
    fn take(&mut self, d: usize, i: usize, amount: i64) {
        let k = self.k;
        self.room[d * k + i] -= amount;
        let mut node = self.leaves + d;
        self.max[node * k + i] = self.room[d * k + i];
        while node > 1 {
            node /= 2;
            self.max[node * k + i] =
                self.max[2 * node * k + i].max(self.max[(2 * node + 1) * k + i]);
        }
    }
}

/// [`Rooms`] kept apart per set of destination taints (clusters have a handful: none, GPU
/// nodes, a batch pool, ...): a pod looks only among the destinations whose taints it
/// tolerates, where the tree finds the first with room, instead of the tree offering every
/// destination with room for the pod to refuse one by one. Same answer as the first
/// destination, in order, with room and with taints the pod tolerates.
struct TaintedRooms<'s> {
    /// Each distinct set of taints, its destinations' rooms, and those destinations (their
    /// indexes among all destinations, ascending).
    classes: Vec<(&'s [Taint], Rooms, Vec<usize>)>,
    /// Each destination's class, and its index within the class.
    at: Vec<(usize, usize)>,
}

impl<'s> TaintedRooms<'s> {
    fn new(rooms: Vec<Vec<i64>>, k: usize, taints: &[&'s [Taint]]) -> Self {
        // Each class's taints, its destinations' rooms and the destinations.
        type Class<'s> = (&'s [Taint], Vec<Vec<i64>>, Vec<usize>);
        let mut classes: Vec<Class<'s>> = Vec::new();
        let mut at = Vec::with_capacity(rooms.len());
        for (d, (room, &t)) in rooms.into_iter().zip(taints).enumerate() {
            let c = match classes.iter().position(|(ct, _, _)| *ct == t) {
                Some(c) => c,
                None => {
                    classes.push((t, Vec::new(), Vec::new()));
                    classes.len() - 1
                }
            };
            at.push((c, classes[c].2.len()));
            classes[c].1.push(room);
            classes[c].2.push(d);
        }
        TaintedRooms {
            classes: classes
                .into_iter()
                .map(|(t, rooms, ids)| (t, Rooms::new(rooms, k), ids))
                .collect(),
            at,
        }
    }

    /// The first destination with room for `amounts` whose taints the pod tolerates.
    fn first_fit(&self, amounts: &[i64], pod: &Pod) -> Option<usize> {
        self.classes
            .iter()
            .filter(|(taints, _, _)| sim::tolerates_all_taints(pod, taints))
            .filter_map(|(_, rooms, ids)| rooms.first_fit(amounts, |_| true).map(|l| ids[l]))
            .min()
    }

    /// Takes `amount` of resource `i` off destination `d`'s room.
    fn take(&mut self, d: usize, i: usize, amount: i64) {
        let (c, l) = self.at[d];
        self.classes[c].1.take(l, i, amount);
    }
}

/// Upstream's `withResourceRequestForAny`: the pod requests one of the resources.
/// (The snapshot keeps effective requests, so an explicit request of zero counts as none.)
pub(crate) fn requests_any(pod: &Pod, resources: &[String]) -> bool {
    resources
        .iter()
        .any(|r| r != RESOURCE_PODS && pod.requests.get(r) > 0)
}

/// The sum of a node's usage over the classified resources (milli for cpu), upstream's key
/// for ordering nodes by use.
pub(crate) fn usage_sum(usage: &[i64]) -> i128 {
    usage.iter().map(|v| *v as i128).sum()
}

/// A node pods are evicted from. Amounts are per classified resource, in the order of
/// [`EvictOptions::resources`].
pub(crate) trait SourceNode {
    fn id(&self) -> NodeId;
    /// The node's use of every classified resource, as absolute amounts (milli for cpu).
    fn usage_mut(&mut self) -> &mut [i64];
    /// Whether to keep evicting from this node, given the room left on the destinations.
    fn keep_going(&self, available: &[i64]) -> bool;
    /// Why pods leave this node, for the plan.
    fn reason(&self, node: &Node, resources: &[String]) -> String;
    /// How far the node is above its target, per classified resource (0 where it is not),
    /// when pods leave it until it is under: then, among candidates upstream's order leaves
    /// free, the ones that bring it under with the fewest evictions go first
    /// ([`fewest_first`]). None: upstream's order only.
    fn excess(&self) -> Option<Vec<i64>> {
        None
    }
}

/// The next candidate to try when the source wants to get under its target (`excess`, per
/// resource) and upstream's order leaves a choice: among the candidates tied with the first
/// (equal priority, QoS and annotation; upstream's sort is not stable, so any of them is
/// upstream's possible pick), one that alone brings the node under its target, the smallest
/// such (the least moved); else the one that covers most of what is left above the target,
/// each resource's share capped at its excess. Fewest evictions, least overshoot. Ties go in
/// upstream's order. `amounts` gives what a pod takes with it, per resource.
pub(crate) fn fewest_first(
    snap: &ClusterSnapshot,
    candidates: &[PodId],
    excess: &[i64],
    mut amounts: impl FnMut(PodId) -> Vec<i64>,
) -> usize {
    let Some(&first) = candidates.first() else {
        return 0;
    };
    if excess.iter().all(|e| *e <= 0) {
        return 0;
    }
    let tied = candidates
        .iter()
        .take_while(|&&p| crate::framework::upstream_tie(snap, first, p))
        .count();
    if tied < 2 {
        return 0;
    }
    // (covers all, size as a share of the excess): the best is the smallest that covers
    // all, else the largest.
    let mut best: Option<(usize, bool, f64)> = None;
    for (i, &p) in candidates[..tied].iter().enumerate() {
        let a = amounts(p);
        let mut covers = true;
        let mut share = 0.0;
        let mut size = 0.0;
        for (&e, &x) in excess.iter().zip(&a) {
            if e <= 0 {
                continue;
            }
            covers &= x >= e;
            share += x.min(e) as f64 / e as f64;
            size += x as f64 / e as f64;
        }
        let better = match best {
            None => true,
            Some((_, best_covers, best_v)) => match (covers, best_covers) {
                (true, false) => true,
                (false, true) => false,
                (true, true) => size < best_v,
                (false, false) => share > best_v,
            },
        };
        if better {
            best = Some((i, covers, if covers { size } else { share }));
        }
    }
    best.map_or(0, |(i, _, _)| i)
}

/// How the loop picks and counts pods.
pub(crate) struct EvictOptions<'a> {
    /// Every classified resource; usage and room are kept for these.
    pub resources: &'a [String],
    pub evictable_namespaces: Option<&'a Namespaces>,
    /// This plugin's eviction limit per node (`evictionLimits.node`).
    pub node_limit: Option<u32>,
    /// With `OnlyThresholdingResources`: only pods requesting one of these resources.
    pub require_request_for: Option<&'a [String]>,
    /// Real usage: measured resources count each pod's measured usage, not its requests.
    pub measured: Option<&'a Measured>,
}

/// Evicts pods from `sources`, in the order given, while they want to go on and the
/// destinations have room (`available`, per resource of `opts.resources`, updated as pods
/// leave). A node's pods
/// go in the profile's eviction order, the next one picked after each eviction
/// ([`Context::next_by_order`]).
pub(crate) fn evict_pods_from_source_nodes<S: SourceNode>(
    cx: &mut Context<'_, '_>,
    sources: Vec<S>,
    destinations: &[NodeId],
    available: &mut [i64],
    opts: &EvictOptions<'_>,
) {
    evict_pods_within_rooms(cx, sources, destinations, available, None, opts)
}

/// What a pod takes with it, per resource of `opts.resources` (0 where its measured usage is
/// unknown), and the first resource whose measured usage is unknown.
fn pod_amounts<'o>(
    snap: &ClusterSnapshot,
    opts: &EvictOptions<'o>,
    pod_id: PodId,
) -> (Vec<i64>, Option<&'o String>) {
    let pod = snap.pod(pod_id);
    let mut unknown = None;
    let amounts: Vec<i64> = opts
        .resources
        .iter()
        .map(|r| match opts.measured {
            Some(m) if m.is_measured(r) => match m.pod_amount(pod_id, r) {
                Some(a) => a,
                None => {
                    unknown.get_or_insert(r);
                    0
                }
            },
            _ if r == RESOURCE_PODS => 1,
            _ => pod.requests.get(r),
        })
        .collect();
    (amounts, unknown)
}

/// The pods of a source node that may leave at all: active, requesting what the plugin
/// asks for, accepted by the evictor's Filter.
fn movable_pods(cx: &Context<'_, '_>, node: NodeId, opts: &EvictOptions<'_>) -> Vec<PodId> {
    let snap = cx.snap();
    cx.pods_on_node(node)
        .filter(|&p| {
            let pod = snap.pod(p);
            pod.is_active()
                && opts
                    .require_request_for
                    .is_none_or(|r| requests_any(pod, r))
                && cx.filter(p).is_ok()
        })
        .collect()
}

/// The source's next candidate: where the source knows its excess and the profile has no
/// sort plugin, the ones that bring it under with the fewest evictions first
/// ([`fewest_first`]); else the profile's order.
fn next_candidate<S: SourceNode>(
    cx: &mut Context<'_, '_>,
    source: &S,
    candidates: &mut Vec<PodId>,
    opts: &EvictOptions<'_>,
) -> Option<PodId> {
    let snap = cx.snap();
    let pick = match source.excess() {
        Some(excess) if !cx.has_sort_plugin() => {
            Some(fewest_first(snap, candidates, &excess, |p| {
                pod_amounts(snap, opts, p).0
            }))
        }
        _ => None,
    };
    match pick {
        Some(i) if i < candidates.len() => Some(candidates.remove(i)),
        Some(_) => None,
        None => cx.next_by_order(candidates),
    }
}

/// Whether a candidate may go now: it tolerates the taints of some destination, its
/// namespace is not excluded, and the evictor's PreEvictionFilter admits it.
fn may_leave(
    cx: &Context<'_, '_>,
    pod_id: PodId,
    taint_sets: &[&[Taint]],
    opts: &EvictOptions<'_>,
) -> bool {
    let pod = cx.snap().pod(pod_id);
    taint_sets.iter().any(|t| sim::tolerates_all_taints(pod, t))
        && !opts
            .evictable_namespaces
            .is_some_and(|ns| ns.exclude.iter().any(|n| **n == *pod.namespace))
        && cx.pre_eviction_filter(pod_id).is_ok()
}

/// Takes `amounts` (per resource) off the summed room left and, at destination `at`, off
/// that destination's own room.
fn take_room(
    rooms: Option<&mut TaintedRooms>,
    at: Option<usize>,
    available: &mut [i64],
    amounts: &[i64],
) {
    let mut own = rooms.zip(at);
    for (i, (left, amount)) in available.iter_mut().zip(amounts).enumerate() {
        if let Some((rooms, d)) = own.as_mut() {
            rooms.take(*d, i, *amount);
        }
        *left -= amount;
    }
}

/// [`evict_pods_from_source_nodes`], and with `rooms` (each destination's room to its target,
/// per resource of `opts.resources`, in the order of `destinations`) a pod leaves only when it fits whole into
/// one destination's room (first fit, among the destinations whose taints it tolerates),
/// which is then reduced: the pods moved can all be placed without any destination crossing
/// its target (no plan makes a destination overutilized). Without `rooms`, upstream's loop:
/// pods leave while the summed room is positive, whatever their size.
pub(crate) fn evict_pods_within_rooms<S: SourceNode>(
    cx: &mut Context<'_, '_>,
    sources: Vec<S>,
    destinations: &[NodeId],
    available: &mut [i64],
    rooms: Option<Vec<Vec<i64>>>,
    opts: &EvictOptions<'_>,
) {
    let snap = cx.snap();
    // Each destination's room by resource, in the order of `opts.resources` (compared for
    // every candidate against every destination: plain numbers, not map lookups).
    let destination_taints: Vec<&[Taint]> = destinations
        .iter()
        .map(|&d| snap.node(d).taints.as_slice())
        .collect();
    // The distinct sets of taints among the destinations (a pod that tolerates none has
    // nowhere to go).
    let mut taint_sets: Vec<&[Taint]> = Vec::new();
    for &t in &destination_taints {
        if !taint_sets.contains(&t) {
            taint_sets.push(t);
        }
    }
    let mut rooms: Option<TaintedRooms> =
        rooms.map(|rooms| TaintedRooms::new(rooms, opts.resources.len(), &destination_taints));
    let amounts_of = |pod_id: PodId| pod_amounts(snap, opts, pod_id);
    'nodes: for mut source in sources {
        let node = snap.node(source.id());
        let mut candidates = movable_pods(cx, source.id(), opts);
        if candidates.is_empty() {
            tracing::debug!(node = %node.name, "no removable pods on node");
            continue;
        }
        cx.sort_by_eviction_order(&mut candidates);
        if !source.keep_going(available) {
            continue;
        }
        let mut evicted_here = 0u32;
        // One at a time: with DominantResourceFairness, each eviction can change whose turn
        // is next.
        while let Some(pod_id) = next_candidate(cx, &source, &mut candidates, opts) {
            if opts.node_limit.is_some_and(|l| evicted_here >= l) {
                break;
            }
            let pod = snap.pod(pod_id);
            if !may_leave(cx, pod_id, &taint_sets, opts) {
                continue;
            }
            // What the pod takes with it, per resource (0 where its measured usage is unknown).
            let (amounts, unknown) = amounts_of(pod_id);
            let room_taken = match &rooms {
                None => None,
                Some(rooms) => {
                    let fits = rooms.first_fit(&amounts, pod);
                    match fits {
                        Some(d) => Some(d),
                        None => {
                            tracing::debug!(pod = %pod.key(), "no destination has room for the pod below its target");
                            continue;
                        }
                    }
                }
            };
            let reason = source.reason(node, opts.resources);
            match cx.try_evict(pod_id, reason) {
                Attempt::Planned { with: members } => {
                    evicted_here += 1;
                    // The rest of a gang evicted whole (gangPolicy WholeGang) takes room on
                    // the destinations the simulator placed it on (within their targets: see
                    // the placement targets the caller sets).
                    for (member, destination) in members {
                        let at =
                            destination.and_then(|d| destinations.iter().position(|&x| x == d));
                        take_room(rooms.as_mut(), at, available, &amounts_of(member).0);
                    }
                    if let (Some(rooms), Some(d)) = (rooms.as_mut(), room_taken) {
                        for (i, &amount) in amounts.iter().enumerate() {
                            rooms.take(d, i, amount);
                        }
                    }
                    let usage = source.usage_mut();
                    for ((used, left), &amount) in
                        usage.iter_mut().zip(available.iter_mut()).zip(&amounts)
                    {
                        *used -= amount;
                        *left -= amount;
                    }
                    if let Some(m) = opts.measured {
                        let cpu = m.pod_amount(pod_id, RESOURCE_CPU).unwrap_or(0);
                        let memory = m.pod_amount(pod_id, RESOURCE_MEMORY).unwrap_or(0);
                        cx.report(MeasuredUsage::Taken {
                            node: source.id(),
                            cpu,
                            memory,
                        });
                    }
                    if let Some(r) = unknown {
                        // Without the pod's own usage the node's new usage is unknown: one
                        // pod per node and cycle, as upstream does with Prometheus.
                        cx.note(
                            Some(source.id()),
                            format!(
                                "no measured {r} usage for pod {}; no further pod leaves this node this cycle",
                                pod.key()
                            ),
                        );
                        break;
                    }
                    if !source.keep_going(available) {
                        break;
                    }
                }
                Attempt::SkipNode => continue 'nodes,
                Attempt::Stop => return,
                Attempt::SkipPod => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
