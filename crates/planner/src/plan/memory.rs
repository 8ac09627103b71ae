//! What a cycle learns while it acts, for planning the rest of it: the pods evicted, refused
//! and gone, where replacements were seen bound, and the rule that stops a workload for the
//! cycle. And the plan as the cycle carried it out, which the report shows after a real run.

use super::{AfterState, EvictionPlan, Landing};
use crate::framework::{History, Ledger, Limits, NoteKind, PendingUnit, PlanNote, PlannedEviction};
use crate::outcome::{Attempt, Outcome};
use crate::snapshot::{ClusterSnapshot, NodeId, PodId};
use std::collections::BTreeMap;

/// What happened earlier in this cycle, for re-planning the rest of it.
#[derive(Debug, Clone, Default)]
pub struct CycleMemory {
    /// Pods evicted earlier in this cycle: gone, and counted against the limits.
    pub evicted: Vec<PodId>,
    /// Pods whose eviction the API refused: never planned again this cycle.
    pub refused: Vec<PodId>,
    /// Evicted pods whose replacement was seen bound (`--await-placement`), with its node:
    /// the plan places the replacement there instead of where the simulator would.
    pub landed: Vec<(PodId, NodeId)>,
    /// Pods evicted earlier in this cycle that are gone from the API (their termination
    /// over): later replacements no longer find them on their nodes.
    pub gone: Vec<PodId>,
    /// Pods whose eviction in the background is in progress (upstream's
    /// `EvictionsInBackground`): tracked from earlier cycles, or answered so in this one.
    /// They count against the limits and are never planned.
    pub in_background: Vec<PodId>,
    /// What earlier cycles observed (continuous mode).
    pub history: History,
    /// The profile and plugin that planned each pod of `evicted`, for the eviction budgets.
    pub evicted_by: Vec<(PodId, String, &'static str)>,
}

impl CycleMemory {
    /// A cycle's memory before anything was attempted.
    pub fn new(history: History) -> CycleMemory {
        CycleMemory {
            history,
            ..CycleMemory::default()
        }
    }

    /// Takes in one attempt of the plan whose overutilized nodes are `over`: an evicted pod
    /// is gone (its replacement where it was seen bound), a refused one is never planned
    /// again this cycle, and a replacement that landed where [`stops_workload`] says stops
    /// its whole workload for the cycle.
    pub fn absorb(
        &mut self,
        snap: &ClusterSnapshot,
        over: &BTreeMap<String, Vec<String>>,
        attempt: &Attempt,
    ) {
        let e = &attempt.eviction;
        if attempt.outcome == Outcome::EvictionInBackground {
            self.in_background.push(e.pod);
            return;
        }
        if attempt.refused() {
            self.refused.push(e.pod);
            return;
        }
        if !attempt.outcome.moved() {
            return;
        }
        self.evicted.push(e.pod);
        self.evicted_by.push((e.pod, e.profile.clone(), e.plugin));
        let Some((name, landed)) = attempt
            .landed
            .as_deref()
            .and_then(|name| Some((name, snap.node_id(name)?)))
        else {
            return;
        };
        self.landed.push((e.pod, landed));
        let Some(why) = stops_workload(e, landed, name, over) else {
            return;
        };
        let pod = snap.pod(e.pod);
        tracing::warn!(pod = %pod.key(), node = %name, "the replacement landed {why}: its workload is not moved again this cycle");
        if let Some(owner) = pod.owners.iter().find(|o| o.controller) {
            self.refused
                .extend(snap.pods_in_namespace(&pod.namespace).filter(|&q| {
                    snap.pod(q)
                        .owners
                        .iter()
                        .any(|o| o.controller && o.uid == owner.uid)
                }));
        }
    }
}

/// Whether a replacement's landing stops its workload for the cycle, and why: back on its
/// source node, or on a node a plugin of the plan counts as overutilized (`over`, node names
/// by `profile/plugin`), where moving more of it would feed a ping-pong.
pub fn stops_workload(
    e: &PlannedEviction,
    landed: NodeId,
    landed_name: &str,
    over: &BTreeMap<String, Vec<String>>,
) -> Option<&'static str> {
    if landed == e.node {
        Some("back on its source node")
    } else if over
        .values()
        .any(|nodes| nodes.iter().any(|n| n == landed_name))
    {
        Some("on a node the plan counts as overutilized")
    } else {
        None
    }
}

impl EvictionPlan {
    /// The plan as a cycle carried it out, from its last plan: the evictions `attempted`, in
    /// order; each node as the evicted pods left it, with their replacements where they were
    /// seen bound (`--await-placement`), else where they are predicted, and the pending pods
    /// whose room was all made; the last plan's notes, measured usage, tenants and pending
    /// units; and a note for each replacement that landed elsewhere than predicted and put
    /// its node over a target a plugin held destinations to.
    pub fn carried_out(self, snap: &ClusterSnapshot, attempted: &[Attempt]) -> EvictionPlan {
        let evicted: Vec<PodId> = attempted
            .iter()
            .filter(|a| a.outcome.moved())
            .map(|a| a.eviction.pod)
            .collect();
        let mut ledger = Ledger::new(snap, Limits::default());
        for &p in &evicted {
            ledger.record_evicted_earlier(p, None);
        }
        let (_, requests) = ledger.into_parts();
        let landed: Vec<Option<NodeId>> = attempted
            .iter()
            .map(|a| a.landed.as_deref().and_then(|n| snap.node_id(n)))
            .collect();
        let replacements = attempted
            .iter()
            .zip(&landed)
            .filter(|(a, _)| a.outcome.moved())
            .filter_map(|(a, landed)| {
                Some(Landing {
                    requests: &snap.pod(a.eviction.pod).requests,
                    node: landed.or(a.eviction.destination)?,
                    alternatives: if landed.is_some() {
                        &[]
                    } else {
                        &a.eviction.alternatives
                    },
                })
            });
        let placed = self
            .findings
            .list::<PendingUnit, _>()
            .iter()
            .filter(|u| u.made_room_by.iter().all(|p| evicted.contains(p)))
            .flat_map(|u| {
                u.pods.iter().zip(&u.destinations).filter_map(|(&p, d)| {
                    Some(Landing {
                        requests: &snap.pod(p).requests,
                        node: (*d)?,
                        alternatives: &[],
                    })
                })
            });
        let requested_after = AfterState::new(requests, replacements.chain(placed));
        let mut plan = EvictionPlan {
            evictions: attempted.iter().map(|a| a.eviction.clone()).collect(),
            requested_after,
            ..self
        };
        // A replacement that landed elsewhere than predicted and put its node over a
        // target: said in the report, not only in the log.
        let landed: Vec<(usize, NodeId)> = landed
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.map(|n| (i, n)))
            .collect();
        for (i, message) in plan.landing_misses(snap, &landed) {
            let e = &plan.evictions[i];
            let node = landed.iter().find(|(j, _)| *j == i).map(|&(_, n)| n);
            tracing::warn!(pod = %snap.pod(e.pod).key(), "{message}");
            let note = PlanNote {
                profile: e.profile.clone(),
                plugin: e.plugin,
                node,
                message,
                kind: NoteKind::Info,
            };
            plan.notes.push(note);
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_back_home_or_on_an_overutilized_node_stops_its_workload() {
        let e = PlannedEviction {
            pod: PodId::new(0),
            node: NodeId::new(0),
            profile: "p".into(),
            plugin: "LowNodeUtilization",
            reason: "r".into(),
            destination: None,
            alternatives: Vec::new(),
            gang: None,
            budgets: Vec::new(),
            mechanism: Default::default(),
        };
        let over = BTreeMap::from([("p/LowNodeUtilization".to_string(), vec!["hot".to_string()])]);
        assert_eq!(
            stops_workload(&e, NodeId::new(0), "n0", &over),
            Some("back on its source node")
        );
        assert_eq!(
            stops_workload(&e, NodeId::new(5), "hot", &over),
            Some("on a node the plan counts as overutilized")
        );
        assert_eq!(stops_workload(&e, NodeId::new(1), "cold", &over), None);
    }
}
