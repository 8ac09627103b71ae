//! Memory across the cycles of a continuous run: what the runner carries from one cycle's
//! plan to the next (the planner itself stays a pure function of its inputs).
//!
//! Two memories live here:
//! - the hysteresis streaks: how many consecutive cycles each node was overutilized;
//! - recent evictions (no ping-pong): when a workload last had a pod evicted, and when a
//!   node last received a rescheduled pod. During the eviction cooldown a workload whose
//!   pod was just moved is not moved again ([`History::cooldown_refusal`]), and a node that
//!   just received moved pods is not treated as overutilized ([`History::received_within`]).
//!
//! The runner updates it in three pure steps per cycle: [`History::observe`] (the new
//! snapshot shows where the replacements of evicted workloads landed), planning with it,
//! then [`History::record_evictions`] and [`History::advance`].

use crate::snapshot::{ClusterSnapshot, Pod, PodId};
use std::collections::BTreeMap;

/// What earlier cycles of a continuous run leave for the next: for each plugin (by
/// `profile/plugin`), how many consecutive cycles each node was overutilized; and the
/// recent evictions, by workload and by receiving node, with the cooldown that applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    pub over_streak: BTreeMap<String, BTreeMap<String, u32>>,
    /// The eviction cooldown, in seconds; 0 turns the memory of evictions off.
    pub cooldown_seconds: i64,
    /// Workload (`namespace/Kind/name` of the pod's controller) → unix seconds of its last
    /// eviction.
    pub evicted_owners: BTreeMap<String, i64>,
    /// Node name → unix seconds it last received a pod of a workload evicted earlier.
    pub received: BTreeMap<String, i64>,
}

/// How far the API server's clock (pods' creation times) may be behind ours (the eviction
/// times) and a pod created "before" an eviction still count as its replacement.
const CLOCK_SKEW_SECONDS: i64 = 5;

/// The workload a pod belongs to, as `namespace/Kind/name` of its controller owner (None for
/// a bare pod: nothing recreates it, so it cannot ping-pong).
fn owner_key(pod: &Pod) -> Option<String> {
    pod.controller()
        .map(|o| format!("{}/{}/{}", pod.namespace, o.kind, o.name))
}

/// `90` → `1m30s`, `600` → `10m`, `7200` → `2h`.
fn fmt_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

impl History {
    /// No memory: what a single cycle plans with.
    pub const EMPTY: History = History {
        over_streak: BTreeMap::new(),
        cooldown_seconds: 0,
        evicted_owners: BTreeMap::new(),
        received: BTreeMap::new(),
    };

    /// An empty history with this eviction cooldown (seconds; 0: off).
    pub fn with_cooldown(cooldown_seconds: i64) -> History {
        History {
            cooldown_seconds: cooldown_seconds.max(0),
            ..History::default()
        }
    }

    /// Consecutive earlier cycles the node was overutilized for this plugin.
    pub fn streak(&self, key: &str, node: &str) -> u32 {
        self.over_streak
            .get(key)
            .and_then(|m| m.get(node))
            .copied()
            .unwrap_or(0)
    }

    /// Whether `at` (unix seconds) is within the cooldown before `now`.
    fn cooling(&self, at: i64, now: i64) -> bool {
        self.cooldown_seconds > 0 && now - at < self.cooldown_seconds
    }

    /// Why this pod may not be evicted now: its workload had a pod evicted within the
    /// cooldown. None when the cooldown is off, the pod is bare or has ended (removing a
    /// failed pod moves nothing), or its workload is cool.
    pub fn cooldown_refusal(&self, pod: &Pod, now: i64) -> Option<String> {
        // A pod that has ended (Failed, Succeeded) is cleaned up, not moved.
        if self.cooldown_seconds <= 0 || self.evicted_owners.is_empty() || !pod.is_active() {
            return None;
        }
        let key = owner_key(pod)?;
        let at = *self.evicted_owners.get(&key)?;
        self.cooling(at, now).then(|| {
            format!(
                "workload {key} had a pod evicted {} ago; cooldown {}",
                fmt_duration(now - at),
                fmt_duration(self.cooldown_seconds)
            )
        })
    }

    /// When the node received a rescheduled pod, if that was within the cooldown.
    pub fn received_within(&self, node: &str, now: i64) -> Option<i64> {
        self.received
            .get(node)
            .copied()
            .filter(|&at| self.cooling(at, now))
    }

    /// Why the node is not treated as overutilized now: it received rescheduled pods within
    /// the cooldown.
    pub fn receiving_note(&self, node: &str, now: i64) -> Option<String> {
        self.received_within(node, now).map(|at| {
            format!(
                "received rescheduled pods {} ago (eviction cooldown {}); not treated as overutilized this cycle",
                fmt_duration(now - at),
                fmt_duration(self.cooldown_seconds)
            )
        })
    }

    /// The history after looking at a new snapshot: pods of recently evicted workloads
    /// created after the eviction are the replacements, and the nodes they run on received
    /// them (at the later of the eviction and their creation). Entries older than the
    /// cooldown are dropped.
    pub fn observe(&self, snap: &ClusterSnapshot, now: i64) -> History {
        let mut next = self.expired(now);
        if next.evicted_owners.is_empty() {
            return next;
        }
        for pod in &snap.pods {
            let Some(node) = pod.node_name.as_deref() else {
                continue;
            };
            if !pod.is_active() || pod.terminating {
                continue;
            }
            let Some(at) = owner_key(pod).and_then(|k| next.evicted_owners.get(&k).copied()) else {
                continue;
            };
            if pod.created < at - CLOCK_SKEW_SECONDS {
                continue;
            }
            let when = pod.created.min(now).max(at);
            let slot = next.received.entry(node.to_string()).or_insert(when);
            *slot = (*slot).max(when);
        }
        next
    }

    /// The history after these pods (of `snap`) were evicted at `now`. Pods that had ended
    /// (Failed, Succeeded) were cleaned up, not moved: they start no cooldown.
    pub fn record_evictions(&self, snap: &ClusterSnapshot, evicted: &[PodId], now: i64) -> History {
        let mut next = self.clone();
        if next.cooldown_seconds <= 0 {
            return next;
        }
        for &p in evicted.iter().filter(|&&p| snap.pod(p).is_active()) {
            if let Some(key) = owner_key(snap.pod(p)) {
                next.evicted_owners.insert(key, now);
            }
        }
        next
    }

    /// The eviction memory without the entries the cooldown no longer covers.
    fn expired(&self, now: i64) -> History {
        let mut next = self.clone();
        let cooldown = self.cooldown_seconds;
        let keep = |at: &i64| cooldown > 0 && now - *at < cooldown;
        next.evicted_owners.retain(|_, at| keep(at));
        next.received.retain(|_, at| keep(at));
        next
    }

    /// The history after a cycle that observed `over` (plugin key → nodes overutilized this
    /// cycle). A plugin that classified nodes this cycle replaces its streaks (nodes not over
    /// now start again from zero); a plugin that did not (it skipped the cycle) loses them,
    /// so a gap in the measurements never counts as "still over". The eviction memory and
    /// the cooldown carry over unchanged.
    pub fn advance(&self, over: &BTreeMap<String, Vec<String>>) -> History {
        let mut next = History {
            over_streak: BTreeMap::new(),
            cooldown_seconds: self.cooldown_seconds,
            evicted_owners: self.evicted_owners.clone(),
            received: self.received.clone(),
        };
        for (key, nodes) in over {
            let streaks = next.over_streak.entry(key.clone()).or_default();
            for n in nodes {
                streaks.insert(n.clone(), self.streak(key, n) + 1);
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::{node, pod, T0};
    use crate::snapshot::{ClusterSnapshot, Phase, SnapshotParts};

    fn snap(pods: Vec<Pod>) -> ClusterSnapshot {
        ClusterSnapshot::build(SnapshotParts {
            nodes: vec![node("n1").build(), node("n2").build(), node("n3").build()],
            pods,
            ..Default::default()
        })
    }

    #[test]
    fn durations_read_like_flags() {
        assert_eq!(fmt_duration(0), "0s");
        assert_eq!(fmt_duration(90), "1m30s");
        assert_eq!(fmt_duration(600), "10m");
        assert_eq!(fmt_duration(7260), "2h1m");
    }

    #[test]
    fn an_evicted_workload_cools_down_then_expires() {
        let before = snap(vec![
            pod("shop", "web-a")
                .owner("ReplicaSet", "web")
                .node("n1")
                .build(),
            pod("shop", "solo").bare().node("n1").build(),
        ]);
        let h = History::with_cooldown(600).record_evictions(&before, &[0, 1], T0);
        assert_eq!(
            h.evicted_owners.keys().collect::<Vec<_>>(),
            vec!["shop/ReplicaSet/web"],
            "a bare pod has no workload to remember"
        );
        let other = pod("shop", "web-b").owner("ReplicaSet", "web").build();
        assert_eq!(
            h.cooldown_refusal(&other, T0 + 120).as_deref(),
            Some("workload shop/ReplicaSet/web had a pod evicted 2m ago; cooldown 10m")
        );
        assert_eq!(h.cooldown_refusal(&other, T0 + 600), None);
        let stranger = pod("shop", "api-a").owner("ReplicaSet", "api").build();
        assert_eq!(h.cooldown_refusal(&stranger, T0 + 1), None);
        // Observing after the cooldown forgets the workload.
        assert!(h.observe(&before, T0 + 600).evicted_owners.is_empty());
        assert_eq!(h.observe(&before, T0 + 599).evicted_owners.len(), 1);
    }

    #[test]
    fn ended_pods_neither_start_nor_wait_for_a_cooldown() {
        let s = snap(vec![
            pod("shop", "job-a")
                .owner("Job", "batch")
                .node("n1")
                .phase(Phase::Failed)
                .build(),
            pod("shop", "web-a")
                .owner("ReplicaSet", "web")
                .node("n1")
                .build(),
            pod("shop", "web-b")
                .owner("ReplicaSet", "web")
                .node("n2")
                .phase(Phase::Failed)
                .build(),
        ]);
        let h = History::with_cooldown(600).record_evictions(&s, &[0, 1], T0);
        assert_eq!(
            h.evicted_owners.keys().collect::<Vec<_>>(),
            vec!["shop/ReplicaSet/web"]
        );
        assert_eq!(
            h.cooldown_refusal(s.pod(2), T0 + 1),
            None,
            "a failed pod may be removed"
        );
        assert!(h.cooldown_refusal(s.pod(1), T0 + 1).is_some());
    }

    #[test]
    fn cooldown_zero_remembers_nothing() {
        let s = snap(vec![pod("shop", "web-a")
            .owner("ReplicaSet", "web")
            .node("n1")
            .build()]);
        let h = History::default().record_evictions(&s, &[0], T0);
        assert!(h.evicted_owners.is_empty());
        assert_eq!(h.cooldown_refusal(s.pod(0), T0), None);
    }

    #[test]
    fn replacements_mark_their_nodes_as_receiving() {
        let before = snap(vec![pod("shop", "web-a")
            .owner("ReplicaSet", "web")
            .node("n1")
            .build()]);
        let h = History::with_cooldown(600).record_evictions(&before, &[0], T0 + 100);
        let after = snap(vec![
            // The replacement, created after the eviction.
            pod("shop", "web-b")
                .owner("ReplicaSet", "web")
                .node("n2")
                .created(T0 + 105)
                .build(),
            // An older pod of the same workload: not a replacement.
            pod("shop", "web-c")
                .owner("ReplicaSet", "web")
                .node("n3")
                .created(T0)
                .build(),
            // Another workload's new pod: not ours.
            pod("shop", "api-a")
                .owner("ReplicaSet", "api")
                .node("n3")
                .created(T0 + 105)
                .build(),
            // A pending replacement: no node yet.
            pod("shop", "web-d")
                .owner("ReplicaSet", "web")
                .created(T0 + 106)
                .build(),
        ]);
        let h = h.observe(&after, T0 + 160);
        assert_eq!(h.received, BTreeMap::from([("n2".to_string(), T0 + 105)]));
        assert_eq!(h.received_within("n2", T0 + 704), Some(T0 + 105));
        assert_eq!(h.received_within("n2", T0 + 705), None);
        assert_eq!(h.received_within("n3", T0 + 160), None);
        // The streaks advance; the eviction memory carries over; expiry drops both.
        let next = h.advance(&BTreeMap::new());
        assert_eq!(next.received, h.received);
        assert_eq!(next.evicted_owners, h.evicted_owners);
        assert_eq!(next.cooldown_seconds, 600);
        let late = next.observe(&after, T0 + 705);
        assert!(late.received.is_empty() && late.evicted_owners.is_empty());
    }
}
