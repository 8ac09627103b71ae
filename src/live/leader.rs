//! Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it
//! (upstream's `--leader-elect*` flags): acquire when the lease is free or its holder has not
//! renewed it for a lease duration (measured on our own clock, from when we last saw it
//! change), renew every retry period, and give up leadership at once when renewing fails for
//! longer than the renew deadline. Updates use the lease's resourceVersion, so two candidates
//! can never both win. On shutdown the lease is released so that another instance takes over
//! without waiting.

use super::cancel::{Cancel, Leadership};
use super::LiveError;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct LeaderConfig {
    pub name: String,
    pub namespace: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderConfig,
    /// Whether this instance holds the lease, sent to every [`Leadership`] of it.
    leading: tokio::sync::watch::Sender<bool>,
    /// The holder and renew time we last saw, and when we saw them change.
    observed: Option<(Option<String>, Option<Timestamp>, Instant)>,
}

impl LeaderElector {
    pub fn new(client: kube::Client, config: LeaderConfig) -> Self {
        LeaderElector {
            api: Api::namespaced(client, &config.namespace),
            config,
            leading: tokio::sync::watch::channel(false).0,
            observed: None,
        }
    }

    /// Leading while this instance holds the lease; not leading for good once the election
    /// has ended.
    pub fn leading(&self) -> Leadership {
        Leadership::of(&self.leading)
    }

    /// Campaigns and renews until `shutdown` is cancelled (then releases the lease and
    /// returns Ok) or leadership is lost (then returns an error: the process should stop).
    pub async fn run(mut self, shutdown: Cancel) -> Result<(), LiveError> {
        let mut last_renew = Instant::now();
        loop {
            if shutdown.is_cancelled() {
                if self.leading.send_replace(false) {
                    self.release().await;
                }
                return Ok(());
            }
            let leading = *self.leading.borrow();
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    last_renew = Instant::now();
                    if !leading {
                        tracing::info!(lease = %self.config.name, identity = %self.config.identity, "became leader");
                        self.leading.send_replace(true);
                    }
                }
                Ok(false) if leading => {
                    self.leading.send_replace(false);
                    return Err(LiveError::Leader(format!(
                        "lease {}/{} was taken by another instance; stopping",
                        self.config.namespace, self.config.name
                    )));
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "leader election: updating the lease failed");
                    if leading && last_renew.elapsed() > self.config.renew_deadline {
                        self.leading.send_replace(false);
                        return Err(LiveError::Leader(format!(
                            "could not renew lease {}/{} within the renew deadline ({:?}); stopping",
                            self.config.namespace, self.config.name, self.config.renew_deadline
                        )));
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = shutdown.cancelled() => {}
            }
        }
    }

    fn spec(&self, acquire: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            // The flag is checked to fit an int32.
            lease_duration_seconds: Some(
                i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX),
            ),
            acquire_time: acquire,
            renew_time: Some(MicroTime(Timestamp::now())),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let name = &self.config.name;
        let Some(mut lease) = self.api.get_opt(name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(Some(MicroTime(Timestamp::now())), 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let renew = spec.renew_time.as_ref().map(|t| t.0);
        let changed = match &self.observed {
            Some((h, r, _)) => *h != holder || *r != renew,
            None => true,
        };
        if changed {
            self.observed = Some((holder.clone(), renew, Instant::now()));
        }
        let mine = holder.as_deref() == Some(self.config.identity.as_str());
        if let Some(other) = holder.as_deref().filter(|_| !mine) {
            let duration =
                Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
            let seen = self
                .observed
                .as_ref()
                .map(|o| o.2)
                .unwrap_or_else(Instant::now);
            if seen.elapsed() < duration {
                tracing::debug!(holder = other, "lease is held by another instance");
                return Ok(false);
            }
        }
        let transitions = next_transitions(spec.lease_transitions, mine);
        let acquire = if mine {
            spec.acquire_time.clone()
        } else {
            Some(MicroTime(Timestamp::now()))
        };
        lease.spec = Some(self.spec(acquire, transitions));
        match self.api.replace(name, &PostParams::default(), &lease).await {
            Ok(l) => {
                let s = l.spec.unwrap_or_default();
                self.observed =
                    Some((s.holder_identity, s.renew_time.map(|t| t.0), Instant::now()));
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lease up so another instance can take it at once.
    async fn release(&self) {
        if let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await {
            let spec = lease.spec.get_or_insert_with(Default::default);
            if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                return;
            }
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            match self
                .api
                .replace(&self.config.name, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => tracing::info!(lease = %self.config.name, "released the lease"),
                Err(e) => tracing::warn!(error = %e, "releasing the lease failed"),
            }
        }
    }
}

/// The lease's count of leader changes once this instance holds it. The API refuses a
/// negative count: it stops at the largest int32 instead of wrapping.
fn next_transitions(current: Option<i32>, mine: bool) -> i32 {
    current.unwrap_or(0).max(0).saturating_add(i32::from(!mine))
}

#[cfg(test)]
mod tests {
    use super::next_transitions;

    #[test]
    fn transitions_count_up_and_never_wrap() {
        assert_eq!(next_transitions(None, false), 1);
        assert_eq!(next_transitions(Some(4), true), 4);
        assert_eq!(next_transitions(Some(4), false), 5);
        assert_eq!(next_transitions(Some(i32::MAX), false), i32::MAX);
        assert_eq!(next_transitions(Some(-3), false), 1);
    }
}
