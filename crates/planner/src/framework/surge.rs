//! Make before break: which moves a profile makes by surge (DefaultEvictor's `moveMode`).
//!
//! A surge moves a pod of a Deployment without an outage: the Deployment gets one more
//! replica, the new pod becomes Ready, and the Deployment goes back down by one with the pod
//! marked to go first (the lowest `controller.kubernetes.io/pod-deletion-cost`). No
//! disruption budget is spent (the Deployment never has fewer ready replicas than before),
//! but the move counts against the limits per node, per namespace and per cycle, the
//! policy's `evictionBudgets` and the rate limits, as an eviction does.
//!
//! What surges ([`choose`]):
//! - `moveMode: Evict` (the default): nothing.
//! - a pod of no Deployment (StatefulSets, bare pods, Jobs), or a member of a gang (its
//!   group's rule applies): nothing; it is evicted as before.
//! - `SurgeWhenBlocked`: a pod whose eviction is forbidden (its PodDisruptionBudget has no
//!   disruptions left, or several budgets cover it) or would take its Deployment's only
//!   replica.
//! - `Surge`: every pod of a Deployment.
//!
//! A Deployment that cannot be surged: a surge of it already in flight, paused, in the
//! middle of a rollout, targeted by a HorizontalPodAutoscaler (it would fight the scale), or
//! in a namespace whose ResourceQuota has no room for one more pod. Its pod is then evicted
//! where an eviction is allowed, and otherwise not moved, with both reasons said.

use super::{EvictError, Ledger, MoveMode};
use crate::snapshot::{ClusterSnapshot, Deployment, PodId, SURGE_IN_FLIGHT_ANNOTATION};

/// How a candidate is moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// By eviction (which the ledger may still refuse).
    Evict,
    /// By a surge of its Deployment (`ns/name`); `why` says why a surge, for the reason.
    Surge { deployment: String, why: String },
    /// Not at all: the eviction is forbidden and a surge is not possible either.
    Refuse(EvictError),
}

/// How `pod` is moved under `mode`, given what the plan so far spent ([`Ledger`]).
pub(crate) fn choose(
    snap: &ClusterSnapshot,
    ledger: &Ledger<'_>,
    pod: PodId,
    mode: MoveMode,
) -> Choice {
    if mode == MoveMode::Evict || !snap.gangs_of_pod(pod).is_empty() {
        return Choice::Evict;
    }
    let p = snap.pod(pod);
    let Some(d) = snap.workloads.deployment_of(p) else {
        return Choice::Evict;
    };
    let forbidden = match ledger.admit_by_limits(pod) {
        Err(e @ (EvictError::DisruptionBudget(_) | EvictError::MultipleBudgets(_))) => Some(e),
        _ => None,
    };
    let single = d.replicas <= 1;
    let why = match (&forbidden, single) {
        (Some(e), _) => format!("an eviction is refused ({e})"),
        (None, true) => format!(
            "Deployment {} has a single replica: an eviction leaves it with none until the replacement is ready",
            d.key()
        ),
        (None, false) if mode == MoveMode::SurgeWhenBlocked => return Choice::Evict,
        (None, false) => "moveMode is Surge".to_string(),
    };
    match refusal(snap, d, pod) {
        None => Choice::Surge {
            deployment: d.key(),
            why,
        },
        Some(not) => match forbidden {
            Some(e) => Choice::Refuse(EvictError::NoSurge(format!(
                "{e}; and no surge instead: {not}"
            ))),
            None => Choice::Evict,
        },
    }
}

/// Why Deployment `d` cannot be surged to move `pod`, if it cannot.
fn refusal(snap: &ClusterSnapshot, d: &Deployment, pod: PodId) -> Option<String> {
    let key = d.key();
    if d.surge_in_flight.is_some() {
        return Some(format!(
            "a surge of Deployment {key} is in flight ({SURGE_IN_FLIGHT_ANNOTATION}); it is completed or rolled back first"
        ));
    }
    if d.paused {
        return Some(format!("Deployment {key} is paused"));
    }
    if let Some(why) = d.rolling_out() {
        return Some(format!(
            "Deployment {key} is in the middle of a rollout: {why}"
        ));
    }
    if let Some(hpa) = snap.workloads.autoscalers_of(d).next() {
        return Some(format!(
            "Deployment {key} is the target of HorizontalPodAutoscaler {}/{}, which would fight the scale",
            hpa.namespace, hpa.name
        ));
    }
    let p = snap.pod(pod);
    snap.workloads
        .quotas_in(&p.namespace)
        .find_map(|q| q.refuses(p))
}

// Tested with DefaultEvictor's `moveMode` in `plugins/surge_tests.rs` (the framework names no
// plugin).
