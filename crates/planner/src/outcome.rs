//! What became of each planned eviction. A dry run reports the plan ([`crate::report`]) and
//! changes nothing; the live executor (`crate::live::executor`) attempts the same plan through
//! the Eviction API, so what dry-run prints is what a real run would attempt. Each attempt
//! ([`Attempt`]) is absorbed into the cycle's memory (`crate::plan::CycleMemory::absorb`),
//! and a pass over a plan ([`Attempts`]) says what the cycle does next ([`Next`]).

/// What happened to one planned eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Dry-run: planned, not attempted.
    Planned,
    /// The Eviction API accepted the eviction.
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
    /// Any other error: of the API call, or of the re-check before it.
    Failed,
    /// Not attempted: shutting down or leadership lost.
    NotAttempted,
    /// Not attempted: another member of the gang evicted whole with this pod was refused.
    GangNotAttempted,
    /// Upstream's `EvictionsInBackground`: the pod is annotated
    /// `descheduler.alpha.kubernetes.io/request-evict-only`, and the API answered the request
    /// as an eviction carried out in the background (HTTP 429 "Eviction triggered
    /// evacuation", KubeVirt's live migration). Tracked as in progress until the pod goes.
    EvictionInBackground,
    /// Moved by a surge of its Deployment (DefaultEvictor's `moveMode`): the new pod became
    /// Ready, the Deployment went back to its replicas, and the ReplicaSet deleted this pod.
    Surged,
    /// A surge was started and undone: the new pod did not become Ready in time (no room,
    /// image, crash) or the Deployment changed meanwhile; the Deployment is back to its
    /// replicas and the pod untouched.
    SurgeRolledBack,
}

impl Outcome {
    /// The outcome's name in reports and logs (`blocked_by_disruption_budget`).
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
            Outcome::EvictionInBackground => "eviction_in_background",
            Outcome::Surged => "surged",
            Outcome::SurgeRolledBack => "surge_rolled_back",
        }
    }

    /// Whether the pod went: evicted, or deleted at the end of a surge of its Deployment.
    pub fn moved(self) -> bool {
        matches!(self, Outcome::Evicted | Outcome::Surged)
    }

    /// The `result` label of `descheduler_pods_evicted_total`.
    pub fn metric_result(self) -> &'static str {
        match self {
            Outcome::Evicted => "success",
            Outcome::BlockedByDisruptionBudget | Outcome::MultipleBudgets => {
                "blocked_by_disruption_budget"
            }
            Outcome::PodGone | Outcome::UidChanged | Outcome::NoLongerEvictable => "pod_gone",
            // Upstream's label for an eviction requested in the background.
            Outcome::EvictionInBackground => "background",
            Outcome::Surged => "surged",
            Outcome::SurgeRolledBack => "surge_rolled_back",
            _ => "error",
        }
    }
}

/// One planned eviction as a cycle attempted it: the eviction, what happened, and, with
/// `--await-placement`, the node its replacement was seen bound to.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The planned eviction.
    pub eviction: crate::framework::PlannedEviction,
    /// What happened to it.
    pub outcome: Outcome,
    /// The node the replacement was bound to (a name: it may be a node the snapshot does not
    /// hold).
    pub landed: Option<String>,
}

impl Attempt {
    /// An attempt with `outcome`, its replacement not seen bound yet.
    pub fn new(eviction: &crate::framework::PlannedEviction, outcome: Outcome) -> Attempt {
        Attempt {
            eviction: eviction.clone(),
            outcome,
            landed: None,
        }
    }

    /// Whether the API refused the eviction, so that the pod is not planned again this
    /// cycle: every outcome but evicted, in the background and not attempted.
    pub fn refused(&self) -> bool {
        !matches!(
            self.outcome,
            Outcome::Evicted
                | Outcome::Surged
                | Outcome::EvictionInBackground
                | Outcome::Planned
                | Outcome::NotAttempted
                | Outcome::GangNotAttempted
        )
    }
}

/// What one pass over a plan's evictions did, and what the cycle does next.
#[derive(Debug, Default)]
pub struct Attempts {
    /// In the order they were attempted.
    pub done: Vec<Attempt>,
    /// Pods evicted earlier in the cycle found gone from the API (their termination over).
    pub gone: Vec<crate::snapshot::PodId>,
    /// What the cycle does next.
    pub next: Next,
}

/// What a cycle does after a pass over its plan.
#[derive(Debug, Default, PartialEq, Eq)]
pub enum Next {
    /// The plan's end was reached (a dry run reaches it at once).
    #[default]
    Finish,
    /// Something happened the plan did not foresee (a refusal, a replacement seen bound):
    /// plan the rest of the cycle again.
    Replan,
    /// Stop the cycle here: the gate closed, or the API kept failing (`why`, for the report).
    Stop(Option<String>),
}

impl Attempts {
    /// The attempts `done`, then `next`, with no pod found gone.
    pub fn next(done: Vec<Attempt>, next: Next) -> Attempts {
        Attempts {
            done,
            gone: Vec::new(),
            next,
        }
    }
}
