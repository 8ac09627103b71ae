//! The metrics-server adapter: NodeMetrics and PodMetrics of `metrics.k8s.io/v1beta1`, read
//! through the API server's aggregation layer as upstream's `KubernetesMetrics` source does,
//! and smoothed over time as upstream's metrics collector does.
//!
//! [`fetch`] makes one list call for all nodes and, when asked, one for the pods of every
//! namespace (never one call per node), and parses the answers with
//! [`parse_metrics_list`]. Its errors are one line, naming the API path and what to check.
//!
//! [`Smoother`] is pure: it keeps the exponentially weighted average of each node's CPU and
//! memory across answers (upstream `pkg/descheduler/metricscollector`: beta = 0.9,
//! `floor(beta * previous + (1 - beta) * new)` on milli-values).

use crate::snapshot::usage::{parse_metrics_list, NamedSamples, ResourceSample};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// NodeMetricsList of every node.
pub const NODES_PATH: &str = "/apis/metrics.k8s.io/v1beta1/nodes";
/// PodMetricsList of every pod, in all namespaces.
pub const PODS_PATH: &str = "/apis/metrics.k8s.io/v1beta1/pods";
/// How long [`fetch`] waits for each answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

const APISERVICE: &str = "v1beta1.metrics.k8s.io";

/// Reads node metrics, and pod metrics when `pods`, from metrics.k8s.io: one GET of
/// [`NODES_PATH`] and one of [`PODS_PATH`], each bounded by [`DEFAULT_TIMEOUT`].
pub async fn fetch(
    client: &kube::Client,
    pods: bool,
) -> Result<NamedSamples<ResourceSample>, String> {
    fetch_with_timeout(client, pods, DEFAULT_TIMEOUT).await
}

/// [`fetch`] with another bound on each answer.
pub async fn fetch_with_timeout(
    client: &kube::Client,
    pods: bool,
    timeout: Duration,
) -> Result<NamedSamples<ResourceSample>, String> {
    let (mut nodes, pod_answer) = if pods {
        let (n, p) = futures::future::try_join(
            get_list(client, NODES_PATH, timeout),
            get_list(client, PODS_PATH, timeout),
        )
        .await?;
        (n, Some(p))
    } else {
        (get_list(client, NODES_PATH, timeout).await?, None)
    };
    if !nodes.pods.is_empty() {
        return Err(format!(
            "GET {NODES_PATH}: a PodMetricsList answered where a NodeMetricsList was expected; \
             check what serves APIService {APISERVICE}"
        ));
    }
    if let Some(p) = pod_answer {
        if !p.nodes.is_empty() {
            return Err(format!(
                "GET {PODS_PATH}: a NodeMetricsList answered where a PodMetricsList was expected; \
                 check what serves APIService {APISERVICE}"
            ));
        }
        nodes.pods = p.pods;
    }
    Ok(nodes)
}

async fn get_list(
    client: &kube::Client,
    path: &str,
    timeout: Duration,
) -> Result<NamedSamples<ResourceSample>, String> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(Vec::new()))
        .map_err(|e| format!("GET {path}: building the request: {e}"))?;
    let answer = async {
        let response = client.send(request).await?;
        let status = response.status();
        let body = response.into_body().collect_bytes().await?;
        Ok::<_, kube::Error>((status, body))
    };
    let (status, body) = match tokio::time::timeout(timeout, answer).await {
        Err(_) => {
            return Err(format!(
                "GET {path}: no answer within {timeout:?}; is metrics-server running and \
                 its APIService {APISERVICE} Available (`kubectl get apiservice {APISERVICE}`)?"
            ))
        }
        Ok(Err(e)) => {
            return Err(format!(
                "GET {path}: {}; check the connection to the API server",
                one_line(&e.to_string(), 300)
            ))
        }
        Ok(Ok(answer)) => answer,
    };
    if !status.is_success() {
        return Err(status_error(path, status, &body));
    }
    parse_metrics_list(&format!("GET {path}"), &body).map_err(|e| {
        format!(
            "{}; check what serves APIService {APISERVICE}",
            one_line(&e.to_string(), 500)
        )
    })
}

/// The message of a failed answer: the server's own words, then what to check.
fn status_error(path: &str, status: http::StatusCode, body: &[u8]) -> String {
    let said = match serde_json::from_slice::<kube::core::Status>(body) {
        Ok(s) if !s.message.is_empty() => one_line(&s.message, 200),
        _ => one_line(&String::from_utf8_lossy(body), 200),
    };
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(" ({said})")
    };
    let code = status.as_u16();
    let head = format!(
        "GET {path}: {code} {}{said}",
        status.canonical_reason().unwrap_or("")
    );
    let check = format!("kubectl get apiservice {APISERVICE}");
    match code {
        404 | 503 => format!(
            "{head}: metrics.k8s.io is not served: is metrics-server installed and its \
             APIService {APISERVICE} Available (`{check}`)?"
        ),
        403 => format!(
            "{head}: RBAC: the descheduler's ClusterRole needs verbs get, list on resources \
             nodes and pods in apiGroup metrics.k8s.io"
        ),
        401 => format!("{head}: the API server did not accept the descheduler's credentials"),
        _ => format!("{head}: metrics-server failed to answer; check its logs and `{check}`"),
    }
}

/// `text` on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        joined
    } else {
        let mut cut: String = joined.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

/// Upstream's weight of the previous value.
pub const BETA: f64 = 0.9;
/// `1 - BETA`, as Go folds the constant expression (exactly 0.1, not `1.0 - 0.9` in f64).
const ONE_MINUS_BETA: f64 = 0.1;
/// A node not in any answer for this long (seconds, measured from the newest sample of an
/// answer) is forgotten: its sample is long stale, and a node that comes back starts afresh.
pub const FORGET_AFTER_SECONDS: i64 = 3600;

/// `floor(beta * previous + (1 - beta) * value)`, upstream's `weightedAverage`.
pub fn weighted_average(previous: i64, value: i64) -> i64 {
    (BETA * previous as f64 + ONE_MINUS_BETA * value as f64).floor() as i64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Smoothed {
    cpu_milli: i64,
    memory_milli: i64,
    timestamp: i64,
}

impl Smoothed {
    fn sample(self) -> ResourceSample {
        ResourceSample {
            cpu: self.cpu_milli,
            // Bytes, rounded up as `Quantity.Value()` does.
            memory: self.memory_milli.div_euclid(1000) + i64::from(self.memory_milli % 1000 != 0),
            timestamp: self.timestamp,
        }
    }
}

/// Smooths node CPU and memory across metrics-server answers, as upstream's metrics collector
/// does: the first sample of a node is taken as is, each later one moves the value by a tenth
/// of the difference (`floor(0.9 * previous + 0.1 * new)` on milli-values), the newest
/// timestamp is kept, and a node missing from an answer keeps its previous value and timestamp
/// (so staleness still catches it). Pod samples pass through unchanged.
///
/// Upstream collects every 5 seconds; how often [`Smoother::apply`] is called decides how fast
/// the value follows a change.
#[derive(Debug, Clone, Default)]
pub struct Smoother {
    nodes: BTreeMap<String, Smoothed>,
}

impl Smoother {
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds a fresh answer in and returns the smoothed one: the nodes of the answer in its
    /// order, then the nodes it lacks (by name), carried with their previous samples.
    pub fn apply(&mut self, fresh: NamedSamples<ResourceSample>) -> NamedSamples<ResourceSample> {
        let mut seen = BTreeSet::new();
        let mut nodes = Vec::with_capacity(fresh.nodes.len().max(self.nodes.len()));
        for (name, s) in fresh.nodes {
            if !seen.insert(name.clone()) {
                continue;
            }
            let memory_milli = s.memory.saturating_mul(1000);
            let smoothed = match self.nodes.get_mut(&name) {
                None => {
                    let first = Smoothed {
                        cpu_milli: s.cpu,
                        memory_milli,
                        timestamp: s.timestamp,
                    };
                    self.nodes.insert(name.clone(), first);
                    first
                }
                Some(prev) => {
                    prev.cpu_milli = weighted_average(prev.cpu_milli, s.cpu);
                    prev.memory_milli = weighted_average(prev.memory_milli, memory_milli);
                    prev.timestamp = prev.timestamp.max(s.timestamp);
                    *prev
                }
            };
            nodes.push((name, smoothed.sample()));
        }
        let newest = nodes.iter().map(|(_, s)| s.timestamp).max();
        if let Some(newest) = newest {
            self.nodes.retain(|name, prev| {
                seen.contains(name) || newest - prev.timestamp <= FORGET_AFTER_SECONDS
            });
        }
        for (name, prev) in &self.nodes {
            if !seen.contains(name) {
                nodes.push((name.clone(), prev.sample()));
            }
        }
        NamedSamples {
            nodes,
            pods: fresh.pods,
        }
    }

    /// How many nodes it remembers.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(cpu: i64, memory: i64, timestamp: i64) -> ResourceSample {
        ResourceSample {
            cpu,
            memory,
            timestamp,
        }
    }

    fn answer(nodes: &[(&str, ResourceSample)]) -> NamedSamples<ResourceSample> {
        NamedSamples {
            nodes: nodes.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            pods: Vec::new(),
        }
    }

    fn node(out: &NamedSamples<ResourceSample>, name: &str) -> ResourceSample {
        out.nodes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
            .unwrap_or_else(|| panic!("{name} missing from {out:?}"))
    }

    #[test]
    fn the_first_sample_is_taken_as_is() {
        let mut sm = Smoother::new();
        let out = sm.apply(answer(&[
            ("a", s(400, 3 << 30, 100)),
            ("b", s(1400, 7, 100)),
        ]));
        assert_eq!(out.nodes.len(), 2);
        assert_eq!(node(&out, "a"), s(400, 3 << 30, 100));
        assert_eq!(node(&out, "b"), s(1400, 7, 100));
        assert_eq!(sm.len(), 2);
    }

    #[test]
    fn upstream_test_values_with_floor_rounding() {
        // metricscollector_test.go: 1400, then 500 -> 1310, then 900 -> 1269.
        let mut sm = Smoother::new();
        assert_eq!(
            sm.apply(answer(&[("n2", s(1400, 0, 1))])).nodes[0].1.cpu,
            1400
        );
        assert_eq!(
            sm.apply(answer(&[("n2", s(500, 0, 2))])).nodes[0].1.cpu,
            1310
        );
        assert_eq!(
            sm.apply(answer(&[("n2", s(900, 0, 3))])).nodes[0].1.cpu,
            1269
        );
        // Floor, not round: 0.9 * 1 + 0.1 * 0 = 0.9 -> 0; 0.9 * 0 + 0.1 * 19 = 1.9 -> 1.
        assert_eq!(weighted_average(1, 0), 0);
        assert_eq!(weighted_average(0, 19), 1);
        // 1 - beta is exactly 0.1, as in Go: 0.9 * 1400 + 0.1 * 500 is 1310, not 1309.
        assert_eq!(weighted_average(1400, 500), 1310);
    }

    #[test]
    fn memory_is_smoothed_on_milli_values_and_read_back_rounded_up() {
        let mut sm = Smoother::new();
        sm.apply(answer(&[("a", s(0, 1000, 1))]));
        // 0.9 * 1_000_000 + 0.1 * 1_005_000 = 1_000_500 milli-bytes -> 1001 bytes (rounded up).
        let out = sm.apply(answer(&[("a", s(0, 1005, 2))]));
        assert_eq!(node(&out, "a").memory, 1001);
        // The state keeps the milli-values: 0.9 * 1_000_500 + 0.1 * 1_005_000 = 1_000_950.
        let out = sm.apply(answer(&[("a", s(0, 1005, 3))]));
        assert_eq!(node(&out, "a").memory, 1001);
        let out = sm.apply(answer(&[("a", s(0, 2 << 30, 4))]));
        assert!(node(&out, "a").memory > 1001);
    }

    #[test]
    fn repeated_samples_converge_to_the_new_value() {
        let mut sm = Smoother::new();
        sm.apply(answer(&[("a", s(4000, 8 << 30, 0))]));
        let mut last = node(&sm.apply(answer(&[("a", s(1000, 1 << 30, 1))])), "a");
        for t in 2..200 {
            let next = node(&sm.apply(answer(&[("a", s(1000, 1 << 30, t))])), "a");
            assert!(next.cpu <= last.cpu && next.memory <= last.memory);
            last = next;
        }
        // Floor keeps it at most a few milli-units above the target, never below.
        assert!((1000..=1009).contains(&last.cpu), "{last:?}");
        assert!(
            (1 << 30..=(1 << 30) + 10).contains(&last.memory),
            "{last:?}"
        );
        assert_eq!(last.timestamp, 199);
        // Converging from below: floor keeps it under the target.
        let mut sm = Smoother::new();
        sm.apply(answer(&[("a", s(0, 0, 0))]));
        let mut cpu = 0;
        for t in 1..200 {
            cpu = node(&sm.apply(answer(&[("a", s(1000, 0, t))])), "a").cpu;
        }
        assert!((990..=1000).contains(&cpu), "{cpu}");
    }

    #[test]
    fn a_missing_node_is_carried_with_its_old_value_and_timestamp() {
        let mut sm = Smoother::new();
        sm.apply(answer(&[("a", s(1000, 100, 10)), ("b", s(2000, 200, 10))]));
        let out = sm.apply(answer(&[("b", s(1000, 100, 25))]));
        assert_eq!(out.nodes.len(), 2);
        assert_eq!(out.nodes[0].0, "b");
        assert_eq!(node(&out, "a"), s(1000, 100, 10));
        assert_eq!(node(&out, "b"), s(1900, 190, 25));
        // It comes back: smoothed from where it was.
        let out = sm.apply(answer(&[("a", s(0, 0, 40)), ("b", s(1000, 100, 40))]));
        assert_eq!(node(&out, "a"), s(900, 90, 40));
        // An empty answer carries everything.
        let out = sm.apply(NamedSamples::default());
        assert_eq!(out.nodes.len(), 2);
        assert_eq!(node(&out, "a").timestamp, 40);
    }

    #[test]
    fn an_older_sample_does_not_move_the_timestamp_back() {
        let mut sm = Smoother::new();
        sm.apply(answer(&[("a", s(100, 1, 50))]));
        let out = sm.apply(answer(&[("a", s(100, 1, 40))]));
        assert_eq!(node(&out, "a").timestamp, 50);
    }

    #[test]
    fn a_node_gone_for_an_hour_is_forgotten() {
        let mut sm = Smoother::new();
        sm.apply(answer(&[("old", s(1, 1, 0)), ("b", s(1, 1, 0))]));
        let out = sm.apply(answer(&[("b", s(1, 1, FORGET_AFTER_SECONDS))]));
        assert_eq!(out.nodes.len(), 2, "exactly an hour: still carried");
        let out = sm.apply(answer(&[("b", s(1, 1, FORGET_AFTER_SECONDS + 1))]));
        assert_eq!(out.nodes.len(), 1);
        assert_eq!(sm.len(), 1);
        // Back again: a first sample.
        let out = sm.apply(answer(&[("old", s(500, 5, FORGET_AFTER_SECONDS + 2))]));
        assert_eq!(node(&out, "old"), s(500, 5, FORGET_AFTER_SECONDS + 2));
    }

    #[test]
    fn pods_pass_through_unsmoothed() {
        let mut sm = Smoother::new();
        let pods = |cpu| NamedSamples {
            nodes: vec![("a".to_string(), s(cpu, 1, 1))],
            pods: vec![(("ns".to_string(), "p".to_string()), s(cpu, 1, 1))],
        };
        sm.apply(pods(1000));
        let out = sm.apply(pods(0));
        assert_eq!(out.pods, pods(0).pods);
        assert_eq!(node(&out, "a").cpu, 900);
    }

    #[test]
    fn failed_answers_say_what_to_check() {
        let status = |code: u16, body: &str| {
            status_error(
                NODES_PATH,
                http::StatusCode::from_u16(code).unwrap(),
                body.as_bytes(),
            )
        };
        let e = status(404, "404 page not found\n");
        assert!(
            e.starts_with("GET /apis/metrics.k8s.io/v1beta1/nodes: 404"),
            "{e}"
        );
        assert!(
            e.contains("metrics-server installed") && e.contains("Available"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let e = status(
            503,
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"service unavailable","code":503}"#,
        );
        assert!(
            e.contains("(service unavailable)") && e.contains("APIService"),
            "{e}"
        );
        let e = status(
            403,
            r#"{"kind":"Status","message":"nodes.metrics.k8s.io is forbidden: User \"x\" cannot list","code":403}"#,
        );
        assert!(
            e.contains("RBAC") && e.contains("get, list") && e.contains("apiGroup metrics.k8s.io"),
            "{e}"
        );
        let e = status(500, &"boom ".repeat(200));
        assert!(
            e.contains("500 Internal Server Error (boom boom") && e.contains("logs"),
            "{e}"
        );
        assert!(e.len() < 400, "{e}");
    }
}
