//! Memory across the cycles of a continuous run: what the runner carries from one cycle's
//! plan to the next (the planner itself stays a pure function of its inputs).
//!
//! Two memories live here:
//! - the hysteresis streaks: how many consecutive cycles each node was overutilized;
//! - recent evictions (no ping-pong). A workload that had pods evicted waits until its
//!   replacements are placed; then, if one landed back on a node it was moved from or on a
//!   node that was overutilized when it moved (evidence of ping-pong), it is frozen for the
//!   eviction cooldown; otherwise it is released at once, and may move again in the next
//!   cycle (a job half done goes on). [`History::cooldown_refusal`] says why a pod is held
//!   back and for how long. A node that just received moved pods is not treated as
//!   overutilized during the cooldown ([`History::received_within`]).
//!
//! The runner updates it in three pure steps per cycle: [`History::observe`] (the new
//! snapshot shows where the replacements of evicted workloads landed), planning with it,
//! then [`History::record_evictions`] and [`History::advance`].

use crate::snapshot::{ClusterSnapshot, Pod, PodId};
use std::collections::{BTreeMap, BTreeSet};

/// What earlier cycles of a continuous run leave for the next: for each plugin (by
/// `profile/plugin`), how many consecutive cycles each node was overutilized; and the
/// recent evictions, by workload and by receiving node, with the cooldown that applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// For each plugin (by `profile/plugin`), how many consecutive cycles each node (by name) was
    /// overutilized.
    pub over_streak: BTreeMap<String, BTreeMap<String, u32>>,
    /// The eviction cooldown, in seconds; 0 turns the memory of evictions off.
    pub cooldown_seconds: i64,
    /// Workload (`namespace/Kind/name` of the pod's controller) → its latest move, while its
    /// replacements are not all placed.
    pub moves: BTreeMap<String, Move>,
    /// Workload → why it is frozen, and since when: a replacement landed where it came from
    /// or on an overutilized node.
    pub frozen: BTreeMap<String, Frozen>,
    /// Node name → unix seconds it last received a pod of a workload evicted earlier.
    pub received: BTreeMap<String, i64>,
    /// The nodes some plugin found overutilized in the latest cycle.
    pub over_nodes: BTreeSet<String>,
    /// Eviction budget (by name) → unix seconds of each eviction counted against it, within
    /// the longest period of the policy's `evictionBudgets`.
    pub budget_spent: BTreeMap<String, Vec<i64>>,
}

/// One cycle's evictions of a workload, until its replacements are placed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Move {
    /// Unix seconds of the eviction.
    pub at: i64,
    /// The nodes its pods were evicted from, one entry per pod.
    pub sources: Vec<String>,
    /// The nodes found overutilized in the cycle that moved it.
    pub over: BTreeSet<String>,
    /// The uids of the workload's pods when it moved: any other pod of it is a replacement.
    pub known: BTreeSet<String>,
}

/// A workload frozen on evidence of ping-pong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frozen {
    /// Unix seconds the evidence was seen; the freeze lasts the cooldown from then.
    pub since: i64,
    /// What was seen, e.g. "its replacement web-7 landed back on n1, where it was evicted from".
    pub why: String,
}

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
    pub(crate) const EMPTY: History = History {
        over_streak: BTreeMap::new(),
        cooldown_seconds: 0,
        moves: BTreeMap::new(),
        frozen: BTreeMap::new(),
        received: BTreeMap::new(),
        over_nodes: BTreeSet::new(),
        budget_spent: BTreeMap::new(),
    };

    /// An empty history with this eviction cooldown (seconds; 0: off).
    pub fn with_cooldown(cooldown_seconds: i64) -> History {
        History {
            cooldown_seconds: cooldown_seconds.max(0),
            ..History::default()
        }
    }

    /// Consecutive earlier cycles the node was overutilized for this plugin.
    pub(crate) fn streak(&self, key: &str, node: &str) -> u32 {
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

    /// Why this pod may not be evicted now, with the time left: its workload is frozen on
    /// evidence of ping-pong, or waits for the replacements of its last move to be placed.
    /// None when the cooldown is off, the pod is bare or has ended (removing a failed pod
    /// moves nothing), or its workload is free to move.
    pub fn cooldown_refusal(&self, pod: &Pod, now: i64) -> Option<String> {
        // A pod that has ended (Failed, Succeeded) is cleaned up, not moved.
        if self.cooldown_seconds <= 0
            || (self.moves.is_empty() && self.frozen.is_empty())
            || !pod.is_active()
        {
            return None;
        }
        let key = owner_key(pod)?;
        if let Some(f) = self.frozen.get(&key).filter(|f| self.cooling(f.since, now)) {
            return Some(format!(
                "workload {key} is frozen for ping-pong: {}; {} left of the {} eviction cooldown",
                f.why,
                fmt_duration(f.since + self.cooldown_seconds - now),
                fmt_duration(self.cooldown_seconds)
            ));
        }
        let m = self.moves.get(&key).filter(|m| self.cooling(m.at, now))?;
        let n = m.sources.len();
        Some(format!(
            "workload {key} had {} evicted {} ago and waits until {} placed; at most {} more",
            if n == 1 {
                "a pod".to_string()
            } else {
                format!("{n} pods")
            },
            fmt_duration(now - m.at),
            if n == 1 {
                "its replacement is"
            } else {
                "their replacements are"
            },
            fmt_duration(m.at + self.cooldown_seconds - now)
        ))
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
    pub(crate) fn receiving_note(&self, node: &str, now: i64) -> Option<String> {
        self.received_within(node, now).map(|at| {
            format!(
                "received rescheduled pods {} ago (eviction cooldown {}); not treated as overutilized this cycle",
                fmt_duration(now - at),
                fmt_duration(self.cooldown_seconds)
            )
        })
    }

    /// The history after looking at a new snapshot. Pods of recently moved workloads that
    /// were not there when it moved are its replacements; the nodes they run on received them (at the
    /// later of the eviction and their creation). A replacement on a node its workload was
    /// evicted from, or on one overutilized when it moved, freezes the workload for the
    /// cooldown; once every replacement is placed elsewhere, the workload is released.
    /// Entries older than the cooldown are dropped.
    pub fn observe(&self, snap: &ClusterSnapshot, now: i64) -> History {
        let mut next = self.expired(now);
        if next.moves.is_empty() {
            return next;
        }
        // Workload → its placed replacements (pod name, node, when).
        let mut landed: BTreeMap<String, Vec<(&str, &str, i64)>> = BTreeMap::new();
        for pod in &snap.pods {
            let Some(node) = pod.node_name.as_deref() else {
                continue;
            };
            if !pod.is_active() || pod.terminating {
                continue;
            }
            let Some(key) = owner_key(pod) else {
                continue;
            };
            let Some(m) = next.moves.get(&key) else {
                continue;
            };
            if m.known.contains(&*pod.uid) {
                continue;
            }
            let when = pod.created.min(now).max(m.at);
            let slot = next.received.entry(node.to_string()).or_insert(when);
            *slot = (*slot).max(when);
            landed.entry(key).or_default().push((&pod.name, node, when));
        }
        for (key, replacements) in landed {
            let m = &next.moves[&key];
            let back = replacements.iter().find_map(|&(name, node, when)| {
                if m.sources.iter().any(|s| s == node) {
                    Some((when, format!("its replacement {name} landed back on {node}, where it was evicted from")))
                } else if m.over.contains(node) {
                    Some((when, format!("its replacement {name} landed on {node}, overutilized when it was moved")))
                } else {
                    None
                }
            });
            if let Some((when, why)) = back {
                next.moves.remove(&key);
                next.frozen.insert(key, Frozen { since: when, why });
            } else if replacements.len() >= m.sources.len() {
                // Every replacement placed, none where it should not be: the move worked.
                next.moves.remove(&key);
            }
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
        let mut moved: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for &p in evicted.iter().filter(|&&p| snap.pod(p).is_active()) {
            let pod = snap.pod(p);
            if let Some(key) = owner_key(pod) {
                let node = pod.node_name.as_deref().unwrap_or_default().to_string();
                moved.entry(key).or_default().push(node);
            }
        }
        if moved.is_empty() {
            return next;
        }
        // The pods each moved workload has now; its replacements will be the others.
        let mut known: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for pod in &snap.pods {
            if let Some((key, _)) = owner_key(pod).and_then(|k| moved.get_key_value(&k)) {
                known.entry(key).or_default().insert(pod.uid.to_string());
            }
        }
        for (key, sources) in &moved {
            let known = known.remove(key.as_str()).unwrap_or_default();
            next.moves.insert(
                key.clone(),
                Move {
                    at: now,
                    sources: sources.clone(),
                    over: self.over_nodes.clone(),
                    known,
                },
            );
        }
        next
    }

    /// Evictions counted against the eviction budget `name` within `period` seconds before
    /// `now`.
    pub fn budget_spent(&self, name: &str, period: i64, now: i64) -> u32 {
        self.budget_spent.get(name).map_or(0, |at| {
            at.iter().filter(|&&t| t > now - period && t <= now).count() as u32
        })
    }

    /// The history after `evicted` (pods of `snap`, each with the profile and plugin that
    /// planned it) were evicted at `now`: each counts against every eviction budget of
    /// `budgets` with a period that covers it (a budget counts evictions whether its window is
    /// open or not); what no period covers any longer is forgotten.
    pub fn record_budget_spends<'a>(
        &self,
        budgets: &[crate::policy::EvictionBudget],
        snap: &ClusterSnapshot,
        evicted: impl IntoIterator<Item = (PodId, &'a str, &'a str)>,
        now: i64,
    ) -> History {
        let mut next = self.clone();
        let counted: Vec<_> = budgets.iter().filter(|b| b.period.is_some()).collect();
        if counted.is_empty() {
            next.budget_spent.clear();
            return next;
        }
        for (pod, profile, plugin) in evicted {
            for b in &counted {
                if b.covers(profile, plugin, snap.pod(pod)) {
                    next.budget_spent
                        .entry(b.name.clone())
                        .or_default()
                        .push(now);
                }
            }
        }
        next.budget_spent.retain(|name, at| {
            let Some(period) = counted
                .iter()
                .find(|b| &b.name == name)
                .and_then(|b| b.period)
            else {
                return false;
            };
            at.retain(|&t| t > now - period);
            !at.is_empty()
        });
        next
    }

    /// The eviction memory without the entries the cooldown no longer covers.
    fn expired(&self, now: i64) -> History {
        let mut next = self.clone();
        let cooldown = self.cooldown_seconds;
        let keep = |at: i64| cooldown > 0 && now - at < cooldown;
        next.moves.retain(|_, m| keep(m.at));
        next.frozen.retain(|_, f| keep(f.since));
        next.received.retain(|_, at| keep(*at));
        next
    }

    /// The history after a cycle that observed `over` (plugin key → nodes overutilized this
    /// cycle). A plugin that classified nodes this cycle replaces its streaks (nodes not over
    /// now start again from zero); a plugin that did not (it skipped the cycle) loses them,
    /// so a gap in the measurements never counts as "still over". The nodes over this cycle
    /// are kept for the evictions it makes; the eviction memory and the cooldown carry over.
    pub fn advance(&self, over: &BTreeMap<String, Vec<String>>) -> History {
        let mut next = History {
            over_streak: BTreeMap::new(),
            over_nodes: over.values().flatten().cloned().collect(),
            ..self.clone()
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

    fn web(name: &str, node: Option<&str>, created: i64) -> Pod {
        let b = pod("shop", name)
            .owner("ReplicaSet", "web")
            .created(created);
        match node {
            Some(n) => b.node(n).build(),
            None => b.build(),
        }
    }

    #[test]
    fn a_moved_workload_waits_for_its_replacements_then_expires() {
        let before = snap(vec![
            web("web-a", Some("n1"), T0 - 100),
            pod("shop", "solo").bare().node("n1").build(),
        ]);
        let h = History::with_cooldown(600).record_evictions(
            &before,
            &[PodId::new(0), PodId::new(1)],
            T0,
        );
        assert_eq!(
            h.moves.keys().collect::<Vec<_>>(),
            vec!["shop/ReplicaSet/web"],
            "a bare pod has no workload to remember"
        );
        assert_eq!(h.moves["shop/ReplicaSet/web"].sources, vec!["n1"]);
        let other = web("web-b", Some("n2"), T0 - 100);
        assert_eq!(
            h.cooldown_refusal(&other, T0 + 120).as_deref(),
            Some("workload shop/ReplicaSet/web had a pod evicted 2m ago and waits until its replacement is placed; at most 8m more")
        );
        assert_eq!(h.cooldown_refusal(&other, T0 + 600), None);
        let stranger = pod("shop", "api-a").owner("ReplicaSet", "api").build();
        assert_eq!(h.cooldown_refusal(&stranger, T0 + 1), None);
        // No replacement placed yet (none, or one still pending): still waiting.
        let pending = snap(vec![web("web-c", None, T0 + 2)]);
        assert_eq!(h.observe(&pending, T0 + 20).moves.len(), 1);
        // Observing after the cooldown forgets the workload.
        assert!(h.observe(&before, T0 + 600).moves.is_empty());
        assert_eq!(h.observe(&before, T0 + 599).moves.len(), 1);
    }

    #[test]
    fn a_workload_whose_replacements_landed_elsewhere_may_move_again() {
        let before = snap(vec![
            web("web-a", Some("n1"), T0 - 100),
            web("web-b", Some("n1"), T0 - 100),
        ]);
        let over = BTreeMap::from([("p/LowNodeUtilization".to_string(), vec!["n1".to_string()])]);
        let h = History::with_cooldown(600).advance(&over).record_evictions(
            &before,
            &[PodId::new(0), PodId::new(1)],
            T0,
        );
        assert_eq!(h.moves["shop/ReplicaSet/web"].sources, vec!["n1", "n1"]);
        assert!(h.moves["shop/ReplicaSet/web"].over.contains("n1"));
        // One of two replacements placed, on a cold node: the move is not done yet.
        let half = snap(vec![
            web("web-c", Some("n2"), T0 + 1),
            web("web-d", None, T0 + 1),
        ]);
        let h1 = h.observe(&half, T0 + 20);
        assert!(h1
            .cooldown_refusal(half.pod(PodId::new(0)), T0 + 20)
            .is_some());
        // Both placed away from n1 and from every overutilized node: released at once.
        let done = snap(vec![
            web("web-c", Some("n2"), T0 + 1),
            web("web-d", Some("n3"), T0 + 3),
        ]);
        let h2 = h1.observe(&done, T0 + 40);
        assert!(h2.moves.is_empty() && h2.frozen.is_empty(), "{h2:?}");
        assert_eq!(h2.cooldown_refusal(done.pod(PodId::new(0)), T0 + 40), None);
        // Their nodes received moved pods all the same.
        assert_eq!(h2.received_within("n2", T0 + 40), Some(T0 + 1));
        assert_eq!(h2.received_within("n3", T0 + 40), Some(T0 + 3));
    }

    #[test]
    fn a_replacement_back_on_its_source_freezes_the_workload_for_the_cooldown() {
        let before = snap(vec![web("web-a", Some("n1"), T0 - 100)]);
        let h = History::with_cooldown(600).record_evictions(&before, &[PodId::new(0)], T0);
        let back = snap(vec![web("web-b", Some("n1"), T0 + 5)]);
        let h = h.observe(&back, T0 + 30);
        assert!(h.moves.is_empty());
        assert_eq!(h.frozen["shop/ReplicaSet/web"].since, T0 + 5);
        assert_eq!(
            h.cooldown_refusal(back.pod(PodId::new(0)), T0 + 65).as_deref(),
            Some("workload shop/ReplicaSet/web is frozen for ping-pong: its replacement web-b landed back on n1, where it was evicted from; 9m left of the 10m eviction cooldown")
        );
        // The freeze lasts the cooldown from when the replacement landed, then expires.
        assert!(h
            .cooldown_refusal(back.pod(PodId::new(0)), T0 + 604)
            .is_some());
        assert_eq!(h.cooldown_refusal(back.pod(PodId::new(0)), T0 + 605), None);
        assert!(h.observe(&back, T0 + 605).frozen.is_empty());
    }

    #[test]
    fn a_replacement_on_an_overutilized_node_freezes_the_workload() {
        let before = snap(vec![web("web-a", Some("n1"), T0 - 100)]);
        let over = BTreeMap::from([(
            "p/LowNodeUtilization".to_string(),
            vec!["n1".to_string(), "n3".to_string()],
        )]);
        let h = History::with_cooldown(600).advance(&over).record_evictions(
            &before,
            &[PodId::new(0)],
            T0,
        );
        let landed = snap(vec![web("web-b", Some("n3"), T0 + 5)]);
        let h = h.observe(&landed, T0 + 30);
        let why = h
            .cooldown_refusal(landed.pod(PodId::new(0)), T0 + 30)
            .unwrap();
        assert!(
            why.contains("its replacement web-b landed on n3, overutilized when it was moved"),
            "{why}"
        );
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
        let h =
            History::with_cooldown(600).record_evictions(&s, &[PodId::new(0), PodId::new(1)], T0);
        assert_eq!(
            h.moves.keys().collect::<Vec<_>>(),
            vec!["shop/ReplicaSet/web"]
        );
        assert_eq!(
            h.cooldown_refusal(s.pod(PodId::new(2)), T0 + 1),
            None,
            "a failed pod may be removed"
        );
        assert!(h.cooldown_refusal(s.pod(PodId::new(1)), T0 + 1).is_some());
    }

    #[test]
    fn cooldown_zero_remembers_nothing() {
        let s = snap(vec![pod("shop", "web-a")
            .owner("ReplicaSet", "web")
            .node("n1")
            .build()]);
        let h = History::default().record_evictions(&s, &[PodId::new(0)], T0);
        assert!(h.moves.is_empty());
        assert_eq!(h.cooldown_refusal(s.pod(PodId::new(0)), T0), None);
    }

    #[test]
    fn replacements_mark_their_nodes_as_receiving() {
        let older = pod("shop", "web-c")
            .owner("ReplicaSet", "web")
            .node("n3")
            .created(T0)
            .build();
        let before = snap(vec![
            pod("shop", "web-a")
                .owner("ReplicaSet", "web")
                .node("n1")
                .build(),
            older.clone(),
        ]);
        let h = History::with_cooldown(600).record_evictions(&before, &[PodId::new(0)], T0 + 100);
        let after = snap(vec![
            // The replacement, created after the eviction.
            pod("shop", "web-b")
                .owner("ReplicaSet", "web")
                .node("n2")
                .created(T0 + 105)
                .build(),
            // A pod the workload had when it moved: not a replacement.
            older,
            // Another workload's new pod: not ours.
            pod("shop", "api-a")
                .owner("ReplicaSet", "api")
                .node("n3")
                .created(T0 + 105)
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
        assert_eq!(next.moves, h.moves);
        assert_eq!(next.cooldown_seconds, 600);
        let late = next.observe(&after, T0 + 705);
        assert!(late.received.is_empty() && late.moves.is_empty());
    }
}
