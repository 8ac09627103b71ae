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
