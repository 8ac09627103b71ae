//! Measured usage: what metrics sources said about nodes and pods, attached to a snapshot.
//!
//! The adapters (`crate::usage`) fetch and parse; this module only holds their answers, mapped
//! from names to the snapshot's node and pod ids, and the pure helpers the plugins use:
//! staleness and range checks. A source that failed keeps its error, so that a plugin relying
//! on it skips the cycle and says why, while the other plugins run.
//!
//! Two kinds of answers:
//! - metrics-server (`metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics): CPU in millicores
//!   and memory working set in bytes, with the sample's timestamp.
//! - Prometheus instant queries: one number per node (mapped by a label) or per pod (mapped by
//!   the `namespace` and `pod` labels), with the sample's timestamp, kept per query text.

use super::{ClusterSnapshot, Node, NodeId, PodId};
use std::collections::BTreeMap;
use std::fmt;

/// Where measured figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UsageSource {
    /// metrics.k8s.io (metrics-server), upstream's `KubernetesMetrics`.
    MetricsServer,
    /// A Prometheus server, upstream's `Prometheus`.
    Prometheus,
}

impl UsageSource {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageSource::MetricsServer => "metrics-server",
            UsageSource::Prometheus => "prometheus",
        }
    }
}

impl UsageSource {
    /// The source's name in a policy (`metricsProviders[].source`,
    /// `metricsUtilization.source`), upstream's.
    pub fn policy_name(self) -> &'static str {
        match self {
            UsageSource::MetricsServer => "KubernetesMetrics",
            UsageSource::Prometheus => "Prometheus",
        }
    }

    /// The source a policy names, or what to write instead.
    pub fn from_policy_name(name: &str) -> Result<UsageSource, String> {
        match name {
            "KubernetesMetrics" => Ok(UsageSource::MetricsServer),
            "Prometheus" => Ok(UsageSource::Prometheus),
            other => Err(format!(
                "{other:?} is not one of KubernetesMetrics, Prometheus"
            )),
        }
    }
}

/// Written and read as the policy names it.
impl serde::Serialize for UsageSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.policy_name())
    }
}

impl<'de> serde::Deserialize<'de> for UsageSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        UsageSource::from_policy_name(&name).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for UsageSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a query's series are mapped to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueryTarget {
    /// One series per node, named by the provider's node label (upstream: `instance`).
    Node,
    /// One series per pod, named by the `namespace` and `pod` labels.
    Pod,
}

/// What a plugin needs measured before it plans (declared by the plugin, fetched by the
/// adapters, attached to the snapshot).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UsageNeed {
    /// NodeMetrics from metrics.k8s.io, and PodMetrics too when `pods`.
    MetricsServer { pods: bool },
    /// A Prometheus instant query.
    Query { query: String, target: QueryTarget },
}

/// CPU and memory measured for one node or pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceSample {
    /// Millicores.
    pub cpu: i64,
    /// Bytes (working set).
    pub memory: i64,
    /// When it was measured, unix seconds.
    pub timestamp: i64,
}

/// One number of an instant query's vector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub value: f64,
    /// Unix seconds.
    pub timestamp: i64,
}

/// An adapter's answer, by name, before it is mapped to the snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedSamples<T> {
    /// By node name.
    pub nodes: Vec<(String, T)>,
    /// By (namespace, pod name).
    pub pods: Vec<((String, String), T)>,
}

impl<T> Default for NamedSamples<T> {
    fn default() -> Self {
        NamedSamples {
            nodes: Vec::new(),
            pods: Vec::new(),
        }
    }
}

/// Samples mapped to snapshot ids, plus the names that matched nothing.
#[derive(Debug, Clone)]
pub struct Samples<T> {
    pub by_node: Vec<Option<T>>,
    pub by_pod: Vec<Option<T>>,
    /// Node or pod names in the answer that the snapshot does not hold (not an error: they
    /// may be nodes outside the planning set, or pods that finished).
    pub unmatched: usize,
}

impl<T: Copy> Samples<T> {
    fn map(snap: &ClusterSnapshot, named: &NamedSamples<T>) -> Self {
        let mut by_node = vec![None; snap.nodes.len()];
        let mut by_pod = vec![None; snap.pods.len()];
        let mut unmatched = 0;
        for (name, s) in &named.nodes {
            match snap.node_id(name) {
                Some(id) => by_node[id.index()] = Some(*s),
                None => unmatched += 1,
            }
        }
        for ((ns, name), s) in &named.pods {
            match snap.pod_id(ns, name) {
                Some(id) => by_pod[id.index()] = Some(*s),
                None => unmatched += 1,
            }
        }
        Samples {
            by_node,
            by_pod,
            unmatched,
        }
    }

    pub fn node(&self, id: NodeId) -> Option<T> {
        self.by_node.get(id.index()).copied().flatten()
    }

    pub fn pod(&self, id: PodId) -> Option<T> {
        self.by_pod.get(id.index()).copied().flatten()
    }

    /// Whether the answer held any pod.
    #[cfg(test)]
    pub(crate) fn has_pods(&self) -> bool {
        self.by_pod.iter().any(Option::is_some)
    }
}

/// What one source answered: samples, or why there are none this cycle.
pub type Answer<T> = Result<Samples<T>, String>;

/// Every measured figure of a cycle.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// None: metrics-server was not asked this cycle.
    pub metrics_server: Option<Answer<ResourceSample>>,
    /// Prometheus answers by query text.
    pub queries: BTreeMap<String, Answer<Sample>>,
    /// Samples older than this (seconds) are stale: the node or pod is left out.
    pub max_sample_age: BTreeMap<UsageSource, i64>,
}

/// The default for `maxSampleAge`: metrics-server scrapes every 15–60 s, Prometheus
/// typically every 15–60 s too; five minutes without a sample means something is wrong.
pub const DEFAULT_MAX_SAMPLE_AGE_SECONDS: i64 = 300;

impl Usage {
    pub fn max_age(&self, source: UsageSource) -> i64 {
        self.max_sample_age
            .get(&source)
            .copied()
            .unwrap_or(DEFAULT_MAX_SAMPLE_AGE_SECONDS)
    }

    /// Whether a sample taken at `timestamp` is too old at `now` for this source.
    pub fn is_stale(&self, source: UsageSource, timestamp: i64, now: i64) -> bool {
        now.saturating_sub(timestamp) > self.max_age(source)
    }
}

impl ClusterSnapshot {
    /// Attaches metrics-server's answer (or its failure) for this cycle.
    pub fn attach_metrics_server(&mut self, answer: Result<NamedSamples<ResourceSample>, String>) {
        let mapped = answer.map(|named| Samples::map(self, &named));
        self.usage.metrics_server = Some(mapped);
    }

    /// Attaches a Prometheus query's answer (or its failure) for this cycle.
    pub fn attach_query(&mut self, query: &str, answer: Result<NamedSamples<Sample>, String>) {
        let mapped = answer.map(|named| Samples::map(self, &named));
        self.usage.queries.insert(query.to_string(), mapped);
    }

    /// Sets how old a source's samples may be.
    pub fn set_max_sample_age(&mut self, source: UsageSource, seconds: i64) {
        self.usage.max_sample_age.insert(source, seconds);
    }

    pub fn usage(&self) -> &Usage {
        &self.usage
    }
}

/// Why a value of a query answer cannot be used.
pub fn check_value(value: f64, ratio: bool) -> Result<(), String> {
    if value.is_nan() {
        return Err("NaN".into());
    }
    if value.is_infinite() {
        return Err(format!("{value} (not finite)"));
    }
    if value < 0.0 {
        return Err(format!("{value} (negative)"));
    }
    if ratio && value > 1.0 {
        return Err(format!(
            "{value} (a utilization ratio must be between 0 and 1; divide by the capacity)"
        ));
    }
    Ok(())
}

/// A metrics.k8s.io list that cannot be used, naming the source, the item and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {location}: {message}")]
pub struct MetricsListError {
    /// The file, or the API path the list came from.
    pub source_name: String,
    /// `items[3].usage.cpu`, or `document` for the whole answer.
    pub location: String,
    pub message: String,
}

#[derive(serde::Deserialize)]
struct RawMetricsList {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    items: Vec<RawMetricsItem>,
}

#[derive(serde::Deserialize)]
struct RawMetricsItem {
    #[serde(default)]
    metadata: RawMetricsMeta,
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    usage: Option<BTreeMap<String, String>>,
    #[serde(default)]
    containers: Option<Vec<RawContainerMetrics>>,
}

#[derive(serde::Deserialize, Default)]
struct RawMetricsMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
}

#[derive(serde::Deserialize)]
struct RawContainerMetrics {
    #[serde(default)]
    usage: BTreeMap<String, String>,
}

/// Parses a `NodeMetricsList` or `PodMetricsList` of metrics.k8s.io/v1beta1, as
/// `kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes` (or `.../pods`) prints it and as
/// metrics-server serves it. A pod's usage is the sum of its containers'.
pub fn parse_metrics_list(
    source_name: &str,
    bytes: &[u8],
) -> Result<NamedSamples<ResourceSample>, MetricsListError> {
    let fail = |location: String, message: String| MetricsListError {
        source_name: source_name.to_string(),
        location,
        message,
    };
    let list: RawMetricsList = serde_json::from_slice(bytes).map_err(|e| {
        let start = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned();
        fail(
            "document".into(),
            format!(
                "not a metrics.k8s.io list ({e}); it starts with {start:?}; give the JSON that `kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes` (or /pods) prints"
            ),
        )
    })?;
    let pods = match list.kind.as_str() {
        "NodeMetricsList" => false,
        "PodMetricsList" => true,
        other => {
            return Err(fail(
                "kind".into(),
                format!("{other:?} is not one of NodeMetricsList, PodMetricsList"),
            ))
        }
    };
    let mut out = NamedSamples::default();
    for (i, item) in list.items.iter().enumerate() {
        let at = |field: &str| format!("items[{i}]{field}");
        if item.metadata.name.is_empty() {
            return Err(fail(at(".metadata.name"), "missing".into()));
        }
        let timestamp = chrono::DateTime::parse_from_rfc3339(&item.timestamp)
            .map(|t| t.timestamp())
            .map_err(|e| {
                fail(
                    at(".timestamp"),
                    format!("invalid RFC 3339 time {:?}: {e}", item.timestamp),
                )
            })?;
        let read = |usage: &BTreeMap<String, String>, field: String| {
            let get = |r: &str| -> Result<crate::quantity::Quantity, MetricsListError> {
                let text = usage
                    .get(r)
                    .ok_or_else(|| fail(format!("{field}.{r}"), "missing".into()))?;
                let q = crate::quantity::Quantity::parse(text)
                    .map_err(|e| fail(format!("{field}.{r}"), e.to_string()))?;
                if q.milli_value() < 0 {
                    return Err(fail(
                        format!("{field}.{r}"),
                        format!("{text:?} is negative"),
                    ));
                }
                Ok(q)
            };
            Ok::<_, MetricsListError>((get("cpu")?.milli_value(), get("memory")?.value()))
        };
        if pods {
            let containers = item
                .containers
                .as_ref()
                .ok_or_else(|| fail(at(".containers"), "missing".into()))?;
            let (mut cpu, mut memory) = (0i64, 0i64);
            for (j, c) in containers.iter().enumerate() {
                let (c_cpu, c_mem) = read(&c.usage, at(&format!(".containers[{j}].usage")))?;
                cpu = cpu.saturating_add(c_cpu);
                memory = memory.saturating_add(c_mem);
            }
            out.pods.push((
                (item.metadata.namespace.clone(), item.metadata.name.clone()),
                ResourceSample {
                    cpu,
                    memory,
                    timestamp,
                },
            ));
        } else {
            let usage = item
                .usage
                .as_ref()
                .ok_or_else(|| fail(at(".usage"), "missing".into()))?;
            let (cpu, memory) = read(usage, at(".usage"))?;
            out.nodes.push((
                item.metadata.name.clone(),
                ResourceSample {
                    cpu,
                    memory,
                    timestamp,
                },
            ));
        }
    }
    Ok(out)
}

/// Upstream's threshold key for the Prometheus query's ratio.
pub const METRIC_RESOURCE: &str = "MetricResource";
/// The `MetricResource` "capacity": ratios are kept in millionths.
pub const METRIC_RESOURCE_SCALE: i64 = 1_000_000;

/// A node's capacity for a threshold's resource: allocatable, or the scale of the
/// Prometheus `MetricResource` ratio.
pub fn capacity(node: &Node, resource: &str) -> i64 {
    if resource == METRIC_RESOURCE {
        METRIC_RESOURCE_SCALE
    } else {
        node.allocatable.get(resource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = r#"{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},
      "items":[{"metadata":{"name":"a"},"timestamp":"2026-12-01T00:00:00Z","window":"20s",
                "usage":{"cpu":"1500000000n","memory":"2Gi"}},
               {"metadata":{"name":"b"},"timestamp":"2026-12-01T00:00:10Z","window":"20s",
                "usage":{"cpu":"250m","memory":"1048576Ki"}},
               {"metadata":{"name":"c"},"timestamp":"2026-12-01T00:00:10Z","window":"20s",
                "usage":{"cpu":"2","memory":"1000"}},
               {"metadata":{"name":"d"},"timestamp":"2026-12-01T00:00:10Z","window":"20s",
                "usage":{"cpu":"1500u","memory":"1M"}}]}"#;

    #[test]
    fn node_metrics_in_every_cpu_unit() {
        let got = parse_metrics_list("nodes.json", NODES.as_bytes()).unwrap();
        let cpu: Vec<i64> = got.nodes.iter().map(|(_, s)| s.cpu).collect();
        assert_eq!(cpu, vec![1500, 250, 2000, 2]);
        let mem: Vec<i64> = got.nodes.iter().map(|(_, s)| s.memory).collect();
        assert_eq!(mem, vec![2 << 30, 1 << 30, 1000, 1_000_000]);
        assert_eq!(got.nodes[1].1.timestamp - got.nodes[0].1.timestamp, 10);
    }

    #[test]
    fn pod_metrics_sum_containers() {
        let json = r#"{"kind":"PodMetricsList","items":[{"metadata":{"name":"p","namespace":"ns"},
          "timestamp":"2026-12-01T00:00:00Z","window":"15s",
          "containers":[{"name":"a","usage":{"cpu":"100m","memory":"10Mi"}},
                        {"name":"b","usage":{"cpu":"50000000n","memory":"1Mi"}}]}]}"#;
        let got = parse_metrics_list("pods.json", json.as_bytes()).unwrap();
        assert_eq!(got.pods[0].0, ("ns".to_string(), "p".to_string()));
        assert_eq!(got.pods[0].1.cpu, 150);
        assert_eq!(got.pods[0].1.memory, 11 << 20);
    }

    #[test]
    fn broken_lists_name_the_item_and_field() {
        let e = parse_metrics_list("n.json", b"<html>502 Bad Gateway</html>").unwrap_err();
        assert_eq!(e.location, "document");
        assert!(e.to_string().contains("n.json"), "{e}");
        assert!(e.message.contains("<html>"), "{e}");
        let e = parse_metrics_list("n.json", NODES.replace("250m", "lots").as_bytes()).unwrap_err();
        assert_eq!(e.location, "items[1].usage.cpu");
        let e = parse_metrics_list("n.json", NODES.replace("\"2Gi\"", "\"-2Gi\"").as_bytes())
            .unwrap_err();
        assert_eq!(e.location, "items[0].usage.memory");
        let e = parse_metrics_list("n.json", br#"{"kind":"PodList","items":[]}"#).unwrap_err();
        assert_eq!(e.location, "kind");
        let e = parse_metrics_list(
            "n.json",
            NODES.replace("2026-12-01T00:00:10Z", "soon").as_bytes(),
        )
        .unwrap_err();
        assert_eq!(e.location, "items[1].timestamp");
    }
    use crate::snapshot::builders::{node, pod, snapshot};

    #[test]
    fn answers_map_to_ids_and_count_unknown_names() {
        let mut snap = snapshot(
            vec![node("a").build(), node("b").build()],
            vec![pod("ns", "p").node("a").build()],
        );
        let s = |cpu| ResourceSample {
            cpu,
            memory: 1,
            timestamp: 10,
        };
        snap.attach_metrics_server(Ok(NamedSamples {
            nodes: vec![("b".into(), s(5)), ("gone".into(), s(6))],
            pods: vec![
                (("ns".into(), "p".into()), s(7)),
                (("ns".into(), "x".into()), s(8)),
            ],
        }));
        let ms = snap
            .usage()
            .metrics_server
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap();
        assert_eq!(ms.node(NodeId::new(0)), None);
        assert_eq!(ms.node(NodeId::new(1)).unwrap().cpu, 5);
        assert_eq!(ms.pod(PodId::new(0)).unwrap().cpu, 7);
        assert_eq!(ms.unmatched, 2);
        assert!(ms.has_pods());
        snap.attach_query("q", Err("connection refused".into()));
        assert_eq!(
            snap.usage().queries["q"].as_ref().unwrap_err(),
            "connection refused"
        );
    }

    #[test]
    fn staleness_uses_the_source_limit() {
        let mut u = Usage::default();
        assert!(!u.is_stale(UsageSource::Prometheus, 1000, 1300));
        assert!(u.is_stale(UsageSource::Prometheus, 1000, 1301));
        u.max_sample_age.insert(UsageSource::Prometheus, 60);
        assert!(u.is_stale(UsageSource::Prometheus, 1000, 1061));
        assert!(!u.is_stale(UsageSource::MetricsServer, 1000, 1061));
        // A sample from the far past is stale, not made fresh by a wrapping subtraction.
        assert!(u.is_stale(UsageSource::Prometheus, i64::MIN, 1300));
    }

    #[test]
    fn garbage_values_are_refused() {
        assert!(check_value(0.5, true).is_ok());
        assert!(check_value(1.0, true).is_ok());
        assert!(check_value(2.0, false).is_ok());
        assert!(check_value(f64::NAN, false).unwrap_err().contains("NaN"));
        assert!(check_value(-0.1, false).unwrap_err().contains("negative"));
        assert!(check_value(1.5, true)
            .unwrap_err()
            .contains("between 0 and 1"));
        assert!(check_value(f64::INFINITY, false).is_err());
    }
}
