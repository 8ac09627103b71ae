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
//!   overutilized during the cooldown ([`History::received_within`]);
//! - back-off per workload: each failed move in a row (a replacement that landed back or on
//!   an overutilized node, replacements still Pending when the cooldown ends, an eviction the
//!   API refused) is a strike; the n-th freezes the workload for the cooldown times 2^(n-1),
//!   capped ([`History::backoff_cap_seconds`]), with up to 10% of jitter after the first (so
//!   workloads that failed together do not all come back at once; the jitter is a hash of the
//!   workload and the strike, so plans stay deterministic). A move that works clears them.
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
    /// The longest freeze of a workload whose moves keep failing, in seconds (at most the
    /// cooldown is used when it is shorter).
    pub backoff_cap_seconds: i64,
    /// Workload (`namespace/Kind/name` of the pod's controller) → its latest move, while its
    /// replacements are not all placed.
    pub moves: BTreeMap<String, Move>,
    /// Workload → why it is frozen, and until when: a replacement landed where it came from
    /// or on an overutilized node, its replacements stayed Pending, or the API refused its
    /// eviction.
    pub frozen: BTreeMap<String, Frozen>,
    /// Node name → unix seconds it last received a pod of a workload evicted earlier.
    pub received: BTreeMap<String, i64>,
    /// The nodes some plugin found overutilized in the latest cycle.
    pub over_nodes: BTreeSet<String>,
    /// Eviction budget (by name) → unix seconds of each eviction counted against it, within
    /// the longest period of the policy's `evictionBudgets`.
    pub budget_spent: BTreeMap<String, Vec<i64>>,
    /// Workload → what its moves within the cooldown left behind, worked or not: the nodes
    /// it lost pods from and its replacements. A planner aiming at an outcome neither moves
    /// such a replacement again nor lands one of the workload back on such a node within the
    /// cooldown ([`History::replacement_hold`], [`History::left_recently`]).
    pub recent: BTreeMap<String, Recent>,
}

/// What a workload's moves within the cooldown left behind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recent {
    /// The node each evicted pod ran on, with the unix seconds of its eviction.
    pub sources: Vec<(String, i64)>,
    /// The uid of each replacement seen placed, with the unix seconds of the eviction that
    /// made it.
    pub replacements: Vec<(String, i64)>,
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

/// A workload frozen after a failed move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frozen {
    /// Unix seconds the evidence was seen.
    pub since: i64,
    /// Unix seconds the freeze ends: the cooldown after `since` for a first failure, longer
    /// for each failure in a row ([`History::backoff_seconds`]).
    pub until: i64,
    /// Failed moves in a row, this one included.
    pub strikes: u32,
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
        backoff_cap_seconds: 0,
        moves: BTreeMap::new(),
        frozen: BTreeMap::new(),
        received: BTreeMap::new(),
        over_nodes: BTreeSet::new(),
        budget_spent: BTreeMap::new(),
        recent: BTreeMap::new(),
    };

    /// An empty history with this eviction cooldown (seconds; 0: off), and no back-off
    /// beyond it (see [`History::with_backoff_cap`]).
    pub fn with_cooldown(cooldown_seconds: i64) -> History {
        History {
            cooldown_seconds: cooldown_seconds.max(0),
            backoff_cap_seconds: cooldown_seconds.max(0),
            ..History::default()
        }
    }

    /// The history with this longest freeze of a workload whose moves keep failing (seconds;
    /// never shorter than the cooldown).
    pub fn with_backoff_cap(self, cap_seconds: i64) -> History {
        History {
            backoff_cap_seconds: cap_seconds.max(self.cooldown_seconds),
            ..self
        }
    }

    /// How long the `strikes`-th failed move in a row freezes the workload `key`: the
    /// cooldown times 2^(strikes-1), capped, plus up to 10% of it after the first (a hash of
    /// the workload and the strike; at most the cap).
    pub fn backoff_seconds(&self, key: &str, strikes: u32) -> i64 {
        let base = self.cooldown_seconds.max(0);
        let cap = self.backoff_cap_seconds.max(base);
        let doubled = base.saturating_mul(1_i64 << strikes.saturating_sub(1).min(32));
        let d = doubled.min(cap);
        if strikes <= 1 || d == 0 {
            return d;
        }
        // FNV-1a of the workload and the strike: the same plan for the same history.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.bytes().chain(strikes.to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let jitter = (d / 10) * (h % 1000) as i64 / 1000;
        (d + jitter).min(cap)
    }

    /// The history with one more failed move of the workload `key`, seen at `since`, `why`:
    /// frozen for [`History::backoff_seconds`] of its strikes in a row.
    fn strike(&mut self, key: String, since: i64, why: String) {
        let strikes = self.frozen.get(&key).map_or(0, |f| f.strikes) + 1;
        let until = since + self.backoff_seconds(&key, strikes);
        self.frozen.insert(
            key,
            Frozen {
                since,
                until,
                strikes,
                why,
            },
        );
    }

    /// Workloads frozen at `now` (backing off after failed moves).
    pub fn frozen_at(&self, now: i64) -> usize {
        self.frozen.values().filter(|f| now < f.until).count()
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
        if let Some(f) = self.frozen.get(&key).filter(|f| now < f.until) {
            let left = fmt_duration(f.until - now);
            return Some(if f.strikes <= 1 {
                format!(
                    "workload {key} is frozen: {}; {left} left of the {} eviction cooldown",
                    f.why,
                    fmt_duration(self.cooldown_seconds)
                )
            } else {
                format!(
                    "workload {key} backs off after {} failed moves in a row (the latest: {}); {left} left of {} (the {} eviction cooldown doubled per failure, at most {})",
                    f.strikes,
                    f.why,
                    fmt_duration(f.until - f.since),
                    fmt_duration(self.cooldown_seconds),
                    fmt_duration(self.backoff_cap_seconds.max(self.cooldown_seconds))
                )
            });
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

    /// Why this pod is not moved again now, with the time left: it is the replacement of a pod
    /// evicted within the cooldown (moving it would restart the same replica twice). None
    /// when the cooldown is off or the pod is no such replacement.
    pub fn replacement_hold(&self, pod: &Pod, now: i64) -> Option<String> {
        if self.recent.is_empty() || !pod.is_active() {
            return None;
        }
        let key = owner_key(pod)?;
        let &(_, at) = self
            .recent
            .get(&key)?
            .replacements
            .iter()
            .find(|(uid, at)| **uid == *pod.uid && self.cooling(*at, now))?;
        Some(format!(
            "{} replaced a pod of workload {key} evicted {} ago; a replacement is not moved again within the {} eviction cooldown ({} left)",
            pod.key(),
            fmt_duration(now - at),
            fmt_duration(self.cooldown_seconds),
            fmt_duration(at + self.cooldown_seconds - now)
        ))
    }

    /// The nodes the pod's workload lost pods from within the cooldown, by an eviction here
    /// (a replacement landing there would look restarted onto its own node).
    pub fn left_recently(&self, pod: &Pod, now: i64) -> Vec<&str> {
        let Some(r) = owner_key(pod).and_then(|k| self.recent.get(&k)) else {
            return Vec::new();
        };
        let mut nodes: Vec<&str> = r
            .sources
            .iter()
            .filter(|(_, at)| self.cooling(*at, now))
            .map(|(n, _)| n.as_str())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
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
        // Workload → its placed replacements (pod name, node, when), and its pending ones.
        let mut landed: BTreeMap<String, Vec<(&str, &str, i64)>> = BTreeMap::new();
        let mut placed: Vec<(String, (String, i64))> = Vec::new();
        let mut pending: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for pod in &snap.pods {
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
            let Some(node) = pod.node_name.as_deref() else {
                pending.entry(key).or_default().push(&pod.name);
                continue;
            };
            let when = pod.created.min(now).max(m.at);
            placed.push((key.clone(), (pod.uid.to_string(), m.at)));
            let slot = next.received.entry(node.to_string()).or_insert(when);
            *slot = (*slot).max(when);
            landed.entry(key).or_default().push((&pod.name, node, when));
        }
        for (key, r) in placed {
            let recent = &mut next.recent.entry(key).or_default().replacements;
            if !recent.iter().any(|x| x.0 == r.0) {
                recent.push(r);
            }
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
                next.strike(key, when, why);
            } else if replacements.len() >= m.sources.len() {
                // Every replacement placed, none where it should not be: the move worked,
                // and the workload's failures in a row are over.
                next.moves.remove(&key);
                next.frozen.remove(&key);
            }
        }
        // Moves whose cooldown is over: a replacement still Pending is a failed move.
        let cooldown = self.cooldown_seconds;
        let ended: Vec<String> = next
            .moves
            .iter()
            .filter(|(_, m)| now - m.at >= cooldown)
            .map(|(k, _)| k.clone())
            .collect();
        for key in ended {
            let m = next.moves.remove(&key).expect("listed above");
            if let Some(names) = pending.get(&key) {
                let why = format!(
                    "its replacement {} stayed Pending for {} after the eviction",
                    names.join(", "),
                    fmt_duration(now - m.at)
                );
                next.strike(key, now, why);
            }
        }
        next
    }

    /// The history after the API refused to evict these pods (of `snap`) at `now`: each one's
    /// workload backs off (a strike, see [`History::strike`]). Refusals of pods that had ended
    /// or have no workload are not remembered.
    pub fn record_refusals(&self, snap: &ClusterSnapshot, refused: &[PodId], now: i64) -> History {
        let mut next = self.clone();
        if next.cooldown_seconds <= 0 {
            return next;
        }
        let mut keys: BTreeMap<String, String> = BTreeMap::new();
        for &p in refused {
            let pod = snap.pod(p);
            if !pod.is_active() {
                continue;
            }
            if let Some(key) = owner_key(pod) {
                keys.entry(key)
                    .or_insert_with(|| format!("the API refused to evict {}", pod.key()));
            }
        }
        for (key, why) in keys {
            next.strike(key, now, why);
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
            next.recent
                .entry(key.clone())
                .or_default()
                .sources
                .extend(sources.iter().map(|n| (n.clone(), now)));
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

    /// The history after evictions at `now`, each given by the names of the eviction budgets
    /// it counted against ([`crate::framework::PlannedEviction::budgets`]): remembered for the
    /// budgets of `budgets` with a period; what no period covers any longer is forgotten.
    pub fn record_budget_spends<'a>(
        &self,
        budgets: &[crate::policy::EvictionBudget],
        evicted: impl IntoIterator<Item = &'a [String]>,
        now: i64,
    ) -> History {
        let mut next = self.clone();
        for names in evicted {
            for name in names {
                next.budget_spent.entry(name.clone()).or_default().push(now);
            }
        }
        next.budget_spent.retain(|name, at| {
            let Some(period) = budgets
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
        // A move past its cooldown is looked at once more by `observe` (its replacements
        // may still be Pending), then dropped there.
        next.moves
            .retain(|_, m| cooldown > 0 && now - m.at < 2 * cooldown.max(1));
        // A workload's strikes are remembered for one back-off cap after its freeze ends: a
        // failure within it doubles the next freeze.
        let cap = self.backoff_cap_seconds.max(cooldown);
        next.frozen
            .retain(|_, f| cooldown > 0 && now < f.until + cap);
        next.received.retain(|_, at| keep(*at));
        for r in next.recent.values_mut() {
            r.sources.retain(|(_, at)| keep(*at));
            r.replacements.retain(|(_, at)| keep(*at));
        }
        next.recent
            .retain(|_, r| !r.sources.is_empty() || !r.replacements.is_empty());
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
    fn a_move_that_worked_leaves_its_replacements_and_sources_held_for_the_cooldown() {
        let before = snap(vec![
            web("web-a", Some("n1"), T0 - 100),
            web("web-b", Some("n2"), T0 - 100),
        ]);
        let h = History::with_cooldown(600).record_evictions(&before, &[PodId::new(0)], T0);
        let after = snap(vec![
            web("web-b", Some("n2"), T0 - 100),
            web("web-c", Some("n3"), T0 + 5),
        ]);
        let h = h.observe(&after, T0 + 20);
        // The move worked: the workload is free again...
        assert!(h.moves.is_empty() && h.frozen.is_empty());
        let old = after.pod(PodId::new(0));
        let replacement = after.pod(PodId::new(1));
        assert_eq!(h.cooldown_refusal(old, T0 + 20), None);
        assert_eq!(h.cooldown_refusal(replacement, T0 + 20), None);
        // ...but its replacement is not moved again, and the node it left is remembered.
        assert_eq!(
            h.replacement_hold(replacement, T0 + 120).as_deref(),
            Some("shop/web-c replaced a pod of workload shop/ReplicaSet/web evicted 2m ago; a replacement is not moved again within the 10m eviction cooldown (8m left)")
        );
        assert_eq!(h.replacement_hold(old, T0 + 120), None, "not a replacement");
        assert_eq!(h.left_recently(old, T0 + 120), vec!["n1"]);
        assert_eq!(h.left_recently(replacement, T0 + 120), vec!["n1"]);
        let stranger = pod("shop", "api-a").owner("ReplicaSet", "api").build();
        assert!(h.left_recently(&stranger, T0 + 120).is_empty());
        // Observed again, nothing is recorded twice.
        assert_eq!(h.observe(&after, T0 + 40).recent, h.recent);
        // Once the cooldown is over, both are forgotten.
        assert_eq!(h.replacement_hold(replacement, T0 + 600), None);
        assert!(h.left_recently(old, T0 + 600).is_empty());
        assert!(h.observe(&after, T0 + 600).recent.is_empty());
        // With the cooldown off, nothing is remembered.
        let off = History::with_cooldown(0)
            .record_evictions(&before, &[PodId::new(0)], T0)
            .observe(&after, T0 + 20);
        assert!(off.recent.is_empty());
        assert_eq!(off.replacement_hold(replacement, T0 + 20), None);
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
            Some("workload shop/ReplicaSet/web is frozen: its replacement web-b landed back on n1, where it was evicted from; 9m left of the 10m eviction cooldown")
        );
        // The freeze lasts the cooldown from when the replacement landed, then expires.
        assert!(h
            .cooldown_refusal(back.pod(PodId::new(0)), T0 + 604)
            .is_some());
        assert_eq!(h.cooldown_refusal(back.pod(PodId::new(0)), T0 + 605), None);
        // Its strike is remembered for one back-off cap after the freeze, then forgotten.
        assert_eq!(
            h.observe(&back, T0 + 605).frozen["shop/ReplicaSet/web"].strikes,
            1
        );
        assert!(h.observe(&back, T0 + 1205).frozen.is_empty());
    }

    /// Moves `web-a` off n1 at `at` with the history `h`; its replacement `web-<n>` lands
    /// back on n1 five seconds later, seen at `at + 30`.
    fn lands_back(h: History, at: i64, n: u32) -> History {
        let before = snap(vec![web("web-a", Some("n1"), T0 - 100)]);
        let back = snap(vec![web(&format!("web-{n}"), Some("n1"), at + 5)]);
        h.record_evictions(&before, &[PodId::new(0)], at)
            .observe(&back, at + 30)
    }

    #[test]
    fn failures_in_a_row_double_the_freeze_up_to_the_cap_with_a_little_jitter() {
        let h = History::with_cooldown(600).with_backoff_cap(3600);
        let key = "shop/ReplicaSet/web";
        // The first failure freezes for the cooldown, exactly (today's behaviour).
        assert_eq!(h.backoff_seconds(key, 1), 600);
        for (strikes, floor) in [(2, 1200), (3, 2400)] {
            let d = h.backoff_seconds(key, strikes);
            assert!((floor..=floor + floor / 10).contains(&d), "{strikes}: {d}");
        }
        assert_eq!(h.backoff_seconds(key, 4), 3600, "capped");
        assert_eq!(h.backoff_seconds(key, 40), 3600, "no overflow");
        // The jitter differs between workloads, and is the same for the same one.
        let others: std::collections::BTreeSet<i64> = (0..20)
            .map(|i| h.backoff_seconds(&format!("shop/ReplicaSet/w{i}"), 2))
            .collect();
        assert!(others.len() > 5, "{others:?}");
        assert_eq!(h.backoff_seconds(key, 2), h.backoff_seconds(key, 2));

        // Lived: landing back twice in a row; the second freeze is about twice as long.
        let h1 = lands_back(h.clone(), T0, 1);
        let f1 = h1.frozen[key].clone();
        assert_eq!((f1.strikes, f1.until), (1, T0 + 5 + 600));
        let again = f1.until + 10;
        let h2 = lands_back(h1, again, 2);
        let f2 = h2.frozen[key].clone();
        assert_eq!(f2.strikes, 2);
        assert_eq!(f2.until - f2.since, h.backoff_seconds(key, 2));
        let web2 = snap(vec![web("web-2", Some("n1"), again + 5)]);
        let why = h2
            .cooldown_refusal(web2.pod(PodId::new(0)), again + 60)
            .unwrap();
        assert!(
            why.contains("backs off after 2 failed moves in a row (the latest: its replacement web-2 landed back on n1")
                && why.contains("(the 10m eviction cooldown doubled per failure, at most 1h)"),
            "{why}"
        );
        assert_eq!(h2.frozen_at(again + 60), 1);
        assert_eq!(h2.frozen_at(f2.until), 0);
        // A move that works ends the failures in a row.
        let later = f2.until + 10;
        let moved = snap(vec![web("web-2", Some("n1"), again + 5)]);
        let h3 = h2
            .record_evictions(&moved, &[PodId::new(0)], later)
            .observe(&snap(vec![web("web-3", Some("n2"), later + 5)]), later + 30);
        assert!(!h3.frozen.contains_key(key), "{h3:?}");
    }

    #[test]
    fn a_replacement_still_pending_when_the_cooldown_ends_is_a_failed_move() {
        let h = History::with_cooldown(600).with_backoff_cap(3600);
        let before = snap(vec![web("web-a", Some("n1"), T0 - 100)]);
        let h = h.record_evictions(&before, &[PodId::new(0)], T0);
        let stuck = snap(vec![web("web-b", None, T0 + 2)]);
        // Still within the cooldown: waiting, not failed.
        let waiting = h.observe(&stuck, T0 + 599);
        assert!(waiting.frozen.is_empty() && waiting.moves.len() == 1);
        // The cooldown is over and the replacement has not been placed: a strike.
        let failed = h.observe(&stuck, T0 + 600);
        assert!(failed.moves.is_empty());
        let f = &failed.frozen["shop/ReplicaSet/web"];
        assert_eq!((f.strikes, f.since, f.until), (1, T0 + 600, T0 + 1200));
        assert!(
            f.why
                .contains("its replacement web-b stayed Pending for 10m after the eviction"),
            "{}",
            f.why
        );
        // No replacement at all (the workload scaled down): nothing failed.
        let gone = h.observe(&snap(vec![]), T0 + 600);
        assert!(gone.moves.is_empty() && gone.frozen.is_empty());
    }

    #[test]
    fn a_refused_eviction_backs_its_workload_off() {
        let h = History::with_cooldown(600).with_backoff_cap(3600);
        let s = snap(vec![
            web("web-a", Some("n1"), T0 - 100),
            pod("shop", "solo").bare().node("n1").build(),
        ]);
        let (web_a, solo) = (
            s.pod_id("shop", "web-a").unwrap(),
            s.pod_id("shop", "solo").unwrap(),
        );
        let h = h.record_refusals(&s, &[web_a, solo], T0);
        assert_eq!(h.frozen.len(), 1, "a bare pod has no workload to back off");
        let why = h.cooldown_refusal(s.pod(web_a), T0 + 60).unwrap();
        assert!(
            why.contains("is frozen: the API refused to evict shop/web-a; 9m left"),
            "{why}"
        );
        // Refused again after the freeze: twice as long.
        let h = h.record_refusals(&s, &[web_a], T0 + 700);
        assert_eq!(h.frozen["shop/ReplicaSet/web"].strikes, 2);
        assert!(h.frozen["shop/ReplicaSet/web"].until >= T0 + 700 + 1200);
        // No cooldown, no memory.
        let off = History::default().record_refusals(&s, &[web_a], T0);
        assert!(off.frozen.is_empty());
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
