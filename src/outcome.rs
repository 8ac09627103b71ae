//! What became of each planned eviction. A dry run reports the plan ([`crate::report`]) and
//! changes nothing; the live executor (`crate::live::executor`) attempts the same plan through
//! the Eviction API, so what dry-run prints is what a real run would attempt.

/// What happened to one planned eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Dry-run: planned, not attempted.
    Planned,
    Evicted,
    /// HTTP 429: a PodDisruptionBudget allows no disruption now. Not retried this cycle.
    BlockedByDisruptionBudget,
    /// HTTP 500: the pod is covered by several PodDisruptionBudgets.
    MultipleBudgets,
    /// HTTP 404, or gone when re-checked.
    PodGone,
    /// HTTP 409, or a different UID when re-checked: the pod was replaced.
    UidChanged,
    /// Re-checked just before the call and no longer evictable (terminating, moved, finished).
    NoLongerEvictable,
    Failed,
    /// Not attempted: shutting down or leadership lost.
    NotAttempted,
    /// Not attempted: another member of the gang evicted whole with this pod was refused.
    GangNotAttempted,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Planned => "planned",
            Outcome::Evicted => "evicted",
            Outcome::BlockedByDisruptionBudget => "blocked_by_disruption_budget",
            Outcome::MultipleBudgets => "multiple_disruption_budgets",
            Outcome::PodGone => "pod_gone",
            Outcome::UidChanged => "uid_changed",
            Outcome::NoLongerEvictable => "no_longer_evictable",
            Outcome::Failed => "error",
            Outcome::NotAttempted => "not_attempted",
            Outcome::GangNotAttempted => "not_attempted_gang_member_refused",
        }
    }

    /// The `result` label of `descheduler_pods_evicted_total`.
    pub fn metric_result(self) -> &'static str {
        match self {
            Outcome::Evicted => "success",
            Outcome::BlockedByDisruptionBudget | Outcome::MultipleBudgets => {
                "blocked_by_disruption_budget"
            }
            Outcome::PodGone | Outcome::UidChanged | Outcome::NoLongerEvictable => "pod_gone",
            _ => "error",
        }
    }
}
