//! Metrics adapters: fetch measured usage from metrics-server (metrics.k8s.io) and Prometheus
//! and attach it to a snapshot before planning. This room talks to the network; the answers
//! are plain data ([`crate::snapshot::usage`]) by the time a plugin reads them.
//!
//! [`UsageFetcher`] does what the plugins of a pipeline declared they need
//! ([`crate::framework::Pipeline::usage_needs`]): one metrics-server list call for the nodes
//! (and one for the pods), one instant query per distinct Prometheus query. A failure is
//! attached as an error for that source: the plugins relying on it skip the cycle and say why,
//! the others run. Offline, [`attach_files`] reads the `kubectl get --raw` output of the
//! metrics.k8s.io lists instead.

pub mod metrics_server;
pub mod prometheus;

use crate::framework::Pipeline;
use crate::metrics::Metrics;
use crate::snapshot::usage::{parse_metrics_list, NamedSamples, UsageNeed, UsageSource};
use crate::snapshot::ClusterSnapshot;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Why usage cannot be set up at all (the run cannot go on).
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(transparent)]
    Prometheus(#[from] prometheus::PrometheusError),
    #[error("Prometheus auth token: {0}")]
    Token(String),
    #[error("{0}")]
    File(String),
    #[error("{0}")]
    Missing(String),
}

/// Sets each configured source's `maxSampleAge` on the snapshot.
pub fn apply_sample_ages(pipeline: &Pipeline, snap: &mut ClusterSnapshot) {
    for source in [UsageSource::MetricsServer, UsageSource::Prometheus] {
        if let Some(p) = pipeline.provider(source) {
            snap.set_max_sample_age(source, p.max_sample_age_seconds());
        }
    }
}

/// Offline: attaches metrics-server lists read from files (`kubectl get --raw
/// /apis/metrics.k8s.io/v1beta1/nodes` and `.../pods`). A pipeline that needs metrics-server
/// without `node_file` is an error saying which flag to give; a broken file names the file,
/// the item and the field.
pub fn attach_files(
    pipeline: &Pipeline,
    snap: &mut ClusterSnapshot,
    node_file: Option<&Path>,
    pod_file: Option<&Path>,
) -> Result<(), UsageError> {
    apply_sample_ages(pipeline, snap);
    let needs_ms = pipeline
        .usage_needs()
        .iter()
        .any(|n| matches!(n, UsageNeed::MetricsServer { .. }));
    if !needs_ms {
        if node_file.is_some() || pod_file.is_some() {
            tracing::warn!("--node-metrics/--pod-metrics given, but no plugin of the policy reads metrics-server usage (metricsUtilization.source: KubernetesMetrics); ignored");
        }
        return Ok(());
    }
    let Some(node_file) = node_file else {
        return Err(UsageError::Missing(
            "the policy balances by metrics-server usage (metricsUtilization.source: KubernetesMetrics); offline, give --node-metrics FILE (kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes) and --pod-metrics FILE (.../pods)".into(),
        ));
    };
    let read = |path: &Path| -> Result<NamedSamples<_>, UsageError> {
        let bytes = crate::input::read_text_file(path, crate::input::METRICS_LIMIT)
            .map_err(|e| UsageError::File(format!("{}: cannot read it: {e}", path.display())))?;
        parse_metrics_list(&path.display().to_string(), &bytes)
            .map_err(|e| UsageError::File(e.to_string()))
    };
    let mut samples = read(node_file)?;
    if !samples.pods.is_empty() {
        return Err(UsageError::File(format!(
            "{}: holds pod metrics; --node-metrics takes the NodeMetricsList",
            node_file.display()
        )));
    }
    if let Some(pod_file) = pod_file {
        let pods = read(pod_file)?;
        if !pods.nodes.is_empty() {
            return Err(UsageError::File(format!(
                "{}: holds node metrics; --pod-metrics takes the PodMetricsList",
                pod_file.display()
            )));
        }
        samples.pods = pods.pods;
    }
    snap.attach_metrics_server(Ok(samples));
    Ok(())
}

/// Fetches what a pipeline needs each cycle, in live (and snapshot) runs.
pub struct UsageFetcher {
    needs: Vec<UsageNeed>,
    kube: Option<kube::Client>,
    prometheus: Option<prometheus::PrometheusClient>,
    /// Upstream smooths metrics-server node usage across samples in continuous runs; a
    /// background sampler feeds it every [`SAMPLE_EVERY`], as upstream's collector does.
    smoother: Option<Arc<Mutex<metrics_server::Smoother>>>,
    sampler: Option<tokio::task::JoinHandle<()>>,
    metrics: Option<Metrics>,
}

/// How often continuous runs sample node metrics between cycles (upstream: 5 s).
pub const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl Drop for UsageFetcher {
    fn drop(&mut self) {
        if let Some(h) = self.sampler.take() {
            h.abort();
        }
    }
}

impl UsageFetcher {
    /// Sets up the clients the pipeline's needs call for (resolving the Prometheus token
    /// from its Secret or the service account). `smooth`: continuous mode. Without a
    /// cluster client only the Prometheus queries are fetched.
    pub async fn new(
        pipeline: &Pipeline,
        kube: Option<kube::Client>,
        smooth: bool,
        metrics: Option<Metrics>,
    ) -> Result<UsageFetcher, UsageError> {
        let needs = pipeline.usage_needs();
        let wants_prometheus = needs.iter().any(|n| matches!(n, UsageNeed::Query { .. }));
        let prometheus = match (wants_prometheus, pipeline.provider(UsageSource::Prometheus)) {
            (true, Some(p)) => {
                let cfg = p
                    .prometheus
                    .as_ref()
                    .expect("validated: the Prometheus source has settings");
                let token = prometheus::resolve_token(cfg, kube.as_ref())
                    .await
                    .map_err(UsageError::Token)?;
                Some(prometheus::PrometheusClient::new(cfg, token)?)
            }
            _ => None,
        };
        let mut needs = needs;
        if kube.is_none() {
            // Offline: metrics-server figures come from files ([`attach_files`]).
            needs.retain(|n| matches!(n, UsageNeed::Query { .. }));
        }
        let wants_ms = needs
            .iter()
            .any(|n| matches!(n, UsageNeed::MetricsServer { .. }));
        let smoother =
            (smooth && wants_ms).then(|| Arc::new(Mutex::new(metrics_server::Smoother::new())));
        let sampler = match (&smoother, &kube) {
            (Some(sm), Some(k)) => {
                let (sm, k) = (sm.clone(), k.clone());
                Some(tokio::spawn(async move {
                    let mut tick = tokio::time::interval(SAMPLE_EVERY);
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        tick.tick().await;
                        match metrics_server::fetch(&k, false).await {
                            Ok(a) => {
                                sm.lock().expect("smoother lock").apply(a);
                            }
                            // A missing sample keeps the previous value (upstream: "duplicate
                            // the previous value"); the cycle's own fetch reports failures.
                            Err(e) => tracing::debug!(error = %e, "node metrics sample failed"),
                        }
                    }
                }))
            }
            _ => None,
        };
        Ok(UsageFetcher {
            needs,
            kube,
            prometheus,
            smoother,
            sampler,
            metrics,
        })
    }

    /// Whether the pipeline needs anything measured.
    pub fn is_needed(&self) -> bool {
        !self.needs.is_empty()
    }

    /// Fetches every need and attaches the answers (or the failures) to the snapshot.
    pub async fn attach(&mut self, pipeline: &Pipeline, snap: &mut ClusterSnapshot) {
        apply_sample_ages(pipeline, snap);
        for need in self.needs.clone() {
            match need {
                UsageNeed::MetricsServer { pods } => {
                    let kube = self.kube.as_ref().expect("checked in new");
                    let mut answer = metrics_server::fetch(kube, pods).await;
                    if let (Ok(a), Some(s)) = (&mut answer, &self.smoother) {
                        *a = s.lock().expect("smoother lock").apply(std::mem::take(a));
                    }
                    if let Err(e) = &answer {
                        tracing::warn!(source = "metrics-server", error = %e, "metrics source failed; the plugins reading it skip this cycle");
                        self.count_error(UsageSource::MetricsServer);
                    }
                    snap.attach_metrics_server(answer);
                }
                UsageNeed::Query { query, target } => {
                    let client = self
                        .prometheus
                        .as_ref()
                        .expect("validated: a Prometheus provider is configured");
                    let answer = client.query(&query, target).await;
                    if let Err(e) = &answer {
                        tracing::warn!(source = "prometheus", query = %query, error = %e, "metrics source failed; the plugins reading it skip this cycle");
                        self.count_error(UsageSource::Prometheus);
                    }
                    snap.attach_query(&query, answer);
                }
            }
        }
    }

    fn count_error(&self, source: UsageSource) {
        if let Some(m) = &self.metrics {
            m.usage_source_error(source.as_str());
        }
    }
}
