//! Everything that talks to a cluster: the API client, the cluster sources (list once, or
//! watch caches), the eviction executor, leader election and the admin HTTP server.
//! `crate::app` ties them to the pure planner.

pub mod admin;
pub mod cancel;
pub mod changes;
pub mod client;
pub mod executor;
pub mod failure;
pub mod leader;
pub mod policy_map;
pub mod reflector;
pub mod source;
pub mod surge;

/// Errors of the live room; each says what to check.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("cannot build a Kubernetes client: {0}; check --kubeconfig (or the in-cluster service account)")]
    Config(String),
    #[error(transparent)]
    Kubeconfig(#[from] client::KubeconfigError),
    #[error(transparent)]
    Read(#[from] failure::ReadFailure),
    #[error("the cluster state could not be decoded: {0}")]
    Decode(#[from] crate::snapshot::decode::SnapshotError),
    #[error("the cluster cannot be read: {0}")]
    Unreadable(String),
    /// A resource the descheduler may not read: its ClusterRole lacks a rule.
    #[error("the cluster cannot be read: {0}")]
    Forbidden(std::sync::Arc<failure::ReadFailure>),
    #[error("{resource} could not be watched for {seconds} s (last error: {why}); nothing is planned from a stale picture until it is read again")]
    Stale {
        resource: &'static str,
        seconds: u64,
        why: String,
    },
    #[error("the watch caches of {server} did not sync within {} s (--cache-sync-timeout): {unread}; nothing is planned from a partly read cluster", .timeout.as_secs_f64())]
    NotSynced {
        server: String,
        timeout: std::time::Duration,
        unread: String,
    },
    #[error("leader election: {0}")]
    Leader(String),
    #[error("admin server: {0}")]
    Admin(String),
    #[error("the cycle stopped: {0}")]
    Stopped(String),
}

impl LiveError {
    /// Whether the input is at fault (a kubeconfig whose content cannot be used), not the
    /// cluster, the machine or a file that is not there (yet).
    pub fn is_invalid_input(&self) -> bool {
        use client::KubeconfigError as K;
        matches!(
            self,
            LiveError::Kubeconfig(K::Syntax { .. } | K::Invalid { .. } | K::Config { .. })
        )
    }
}
