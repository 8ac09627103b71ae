//! The `sort` extension point: the order in which a profile's plugins take their eviction
//! candidates. Without a sort plugin the order is upstream's ([`sort_by_eviction_order`]); a
//! sort plugin ([`SortPlugin`]) starts one [`CandidateOrder`] per plan, which every ordering
//! call of the profiles that share it consults.

use super::findings::{Finding, Reporter};
use super::Ledger;
use crate::snapshot::{ClusterSnapshot, PodId};

/// A profile's `sort` plugin.
pub trait SortPlugin: Send + Sync + std::fmt::Debug {
    /// Profiles whose sort plugins give the same key share one [`CandidateOrder`] in a plan.
    fn share_key(&self) -> String;
    /// The order of one plan over `snap` (computed once, then kept current by the plan's
    /// evictions).
    fn start<'s>(&self, snap: &'s ClusterSnapshot) -> Box<dyn CandidateOrder + 's>;
}

/// One plan's ordering of candidates, kept current as evictions are planned.
pub trait CandidateOrder: Send + Sync + std::fmt::Debug {
    /// Sorts candidates, most evictable first, as the evictions planned so far (the ledger)
    /// leave the cluster.
    fn sort(&self, ledger: &Ledger<'_>, pods: &mut [PodId]);
    /// Removes and returns the most evictable candidate now.
    fn take_next(&self, ledger: &Ledger<'_>, pods: &mut Vec<PodId>) -> Option<PodId>;
    /// What the plan reports of the order: each tenant's share before and after.
    fn summary(&self, ledger: &Ledger<'_>) -> Vec<TenantShare>;
}

/// One tenant's dominant share before and after the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantShare {
    /// The tenant: a namespace, or a value of the `tenant_label` label (empty: pods without it).
    pub tenant: String,
    /// The label that defines tenants; None: tenants are namespaces.
    pub tenant_label: Option<String>,
    /// Dominant share before the plan, as a fraction.
    pub before: f64,
    /// The resource of `before` (None: the tenant requests nothing).
    pub before_resource: Option<String>,
    /// Dominant share after the plan, as a fraction.
    pub after: f64,
    /// The resource of `after` (None: the tenant requests nothing).
    pub after_resource: Option<String>,
}

/// Each tenant's share, reported by the planner from each profile's order
/// ([`CandidateOrder::summary`]), sorted by tenant label, then tenant.
impl Finding for TenantShare {
    const KEY: &'static str = "tenants";
    type Kept = Vec<TenantShare>;
    fn keep(self, _: Reporter<'_>, kept: &mut Self::Kept) {
        kept.push(self);
    }
}

/// Upstream's order of two pods: see [`sort_by_eviction_order`].
pub fn upstream_cmp(snap: &ClusterSnapshot, a: PodId, b: PodId) -> std::cmp::Ordering {
    upstream_key(snap.pod(a))
        .cmp(&upstream_key(snap.pod(b)))
        .then_with(|| a.cmp(&b))
}

/// What upstream orders candidates by: priority, QoS, the prefer-no-eviction annotation.
/// Pods with equal keys are a free choice (upstream's sort is not stable).
fn upstream_key(p: &crate::snapshot::Pod) -> (i64, crate::snapshot::Qos, bool) {
    (
        p.priority.map(i64::from).unwrap_or(i64::MIN),
        p.qos,
        p.has_prefer_no_eviction_annotation,
    )
}

/// Whether upstream's order leaves the choice between these two pods free (equal priority,
/// QoS and annotation).
pub fn upstream_tie(snap: &ClusterSnapshot, a: PodId, b: PodId) -> bool {
    upstream_key(snap.pod(a)) == upstream_key(snap.pod(b))
}

/// Upstream's order, without a sort plugin: lowest priority first (no priority is lowest),
/// then QoS (BestEffort, Burstable, Guaranteed), pods preferring no eviction last; ties broken
/// by namespace/name so the order never depends on input order.
pub fn sort_by_eviction_order(snap: &ClusterSnapshot, pods: &mut [PodId]) {
    pods.sort_by(|&a, &b| upstream_cmp(snap, a, b));
}
