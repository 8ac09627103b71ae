//! The Kubernetes client, with the client-side QPS and burst limits of upstream's
//! `--client-connection-qps` and `--client-connection-burst`.

use super::LiveError;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone)]
pub struct ApiClient {
    pub client: kube::Client,
    limiter: Option<Arc<DefaultDirectRateLimiter>>,
}

/// A quota of `qps` per second with `burst`; None when `qps` is 0 or less (unlimited).
pub fn quota(qps: f64, burst: u32) -> Option<Quota> {
    if qps <= 0.0 || !qps.is_finite() {
        return None;
    }
    let period = Duration::from_secs_f64(1.0 / qps);
    Quota::with_period(period)
        .map(|q| q.allow_burst(NonZeroU32::new(burst.max(1)).expect("at least 1")))
}

impl ApiClient {
    /// From a kubeconfig file, or else the usual inference (KUBECONFIG, ~/.kube/config,
    /// in-cluster service account).
    pub async fn new(
        kubeconfig: Option<&Path>,
        qps: f64,
        burst: u32,
    ) -> Result<ApiClient, LiveError> {
        let config = match kubeconfig {
            Some(path) => {
                let kc = kube::config::Kubeconfig::read_from(path)
                    .map_err(|e| LiveError::Config(format!("{}: {e}", path.display())))?;
                kube::Config::from_custom_kubeconfig(
                    kc,
                    &kube::config::KubeConfigOptions::default(),
                )
                .await
                .map_err(|e| LiveError::Config(format!("{}: {e}", path.display())))?
            }
            None => kube::Config::infer()
                .await
                .map_err(|e| LiveError::Config(e.to_string()))?,
        };
        let mut config = config;
        // kube's default retry policy retries HTTP 429 for minutes; for an eviction, 429 means a
        // disruption budget said no, which is recorded and never retried in the cycle.
        config.default_retry = false;
        let client =
            kube::Client::try_from(config).map_err(|e| LiveError::Config(e.to_string()))?;
        Ok(ApiClient::from_client(client, qps, burst))
    }

    pub fn from_client(client: kube::Client, qps: f64, burst: u32) -> ApiClient {
        ApiClient {
            client,
            limiter: quota(qps, burst).map(|q| Arc::new(RateLimiter::direct(q))),
        }
    }

    /// Waits for the client-side rate limit before a request.
    pub async fn throttle(&self) {
        if let Some(l) = &self.limiter {
            l.until_ready().await;
        }
    }
}
