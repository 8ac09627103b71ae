//! The live executor as the binary builds it, for tests that drive it from the library.

use descheduler::live::client::ApiClient;
use descheduler::live::executor::{ExecutorConfig, Gate, LiveExecutor};
use descheduler::metrics::Metrics;

/// An executor on `api` with a metrics registry of its own and an open gate.
pub fn executor_on(api: ApiClient, config: ExecutorConfig) -> LiveExecutor {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::register(&mut registry);
    LiveExecutor::new(api, config, metrics, Gate::default())
}

/// [`executor_on`] a client without client-side rate limits.
pub fn executor(client: &kube::Client, config: ExecutorConfig) -> LiveExecutor {
    executor_on(ApiClient::from_client(client.clone(), 0.0, 1), config)
}

/// What one real cycle did, as its report shows it.
pub struct RealCycle {
    /// What became of each eviction of the report, in its order.
    pub outcomes: Vec<descheduler::outcome::Outcome>,
    pub report: descheduler::report::Report,
}

/// One real cycle of `pipeline` over `snap`, now, through the app's cycle loop: planned,
/// attempted by `exec`, re-planned after each refusal.
pub async fn real_cycle(
    exec: &LiveExecutor,
    pipeline: &descheduler::framework::Pipeline,
    snap: &descheduler::snapshot::ClusterSnapshot,
) -> RealCycle {
    let record = descheduler::app::run_cycle(
        pipeline,
        snap,
        chrono::Utc::now().timestamp(),
        &Default::default(),
        &mut exec.cycle(),
        &mut (),
    )
    .await
    .unwrap();
    RealCycle {
        outcomes: record.outcomes(),
        report: record.report(snap),
    }
}
