//! The placement simulation of one cycle: the cluster as the plan so far leaves it, evicted
//! pods gone and (when predicting) their replacements placed where kube-scheduler would put
//! them, cumulatively; and where the running plugin wants evicted pods to go.

use super::EvictError;
use crate::sim::{queue_order, Prediction, ScoreProfile, Simulation, Termination};
use crate::snapshot::{ClusterSnapshot, NodeId, PodId};
use std::collections::BTreeMap;

/// Where a plugin wants destinations: each node with what it may request after a placement,
/// by resource name.
pub type PlacementTargets = Vec<(NodeId, BTreeMap<String, i64>)>;

pub struct Placement<'s> {
    snap: &'s ClusterSnapshot,
    /// Whether each planned eviction's replacement is placed by the simulator (its
    /// destination predicted, and later pods seeing it placed).
    predict: bool,
    /// The placement simulator: evicted pods gone, their replacements placed (cumulative).
    sim: Simulation<'s>,
    /// The nodes kube-scheduler may choose: every Ready node of the snapshot.
    nodes: Vec<NodeId>,
    /// Where a destination must be for `placementCheck` to admit an eviction, set by the
    /// running plugin (for LowNodeUtilization: its underutilized nodes and the requests each
    /// may reach, by resource name); None: any node other than the pod's own.
    targets: Option<PlacementTargets>,
}

/// A whole gang placed on a trial copy of the simulation, not yet kept.
pub struct GangPlacement<'s> {
    trial: Simulation<'s>,
    /// Each member's simulated destination, in member order.
    pub destinations: Vec<NodeId>,
    /// Each member's alternatives (other nodes with the same best score), in member order.
    pub alternatives: Vec<Vec<NodeId>>,
}

impl<'s> Placement<'s> {
    /// The snapshot as it is, predicting destinations.
    pub fn new(snap: &'s ClusterSnapshot) -> Self {
        Placement {
            snap,
            predict: true,
            sim: Simulation::new(snap),
            nodes: snap.ready_nodes(&Default::default()),
            targets: None,
        }
    }

    /// Scores destinations with a scheduler profile (`--scheduler-config`) instead of
    /// kube-scheduler's default one. Call before anything is planned.
    pub fn set_profile(&mut self, profile: std::sync::Arc<ScoreProfile>) {
        let termination = self.sim.termination();
        self.sim = Simulation::with_profile(self.snap, profile);
        self.sim.set_termination(termination);
    }

    /// How evicted pods terminate while their replacements are scheduled ([`Termination`]).
    /// Call before anything is planned.
    pub fn set_termination(&mut self, termination: Termination) {
        self.sim.set_termination(termination);
    }

    pub fn snap(&self) -> &'s ClusterSnapshot {
        self.snap
    }

    /// The placement simulator, as the plan so far leaves the cluster.
    pub fn sim(&self) -> &Simulation<'s> {
        &self.sim
    }

    /// The nodes kube-scheduler may choose (every Ready node).
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// Turns destination prediction (and cumulative placements) on or off for this cycle.
    pub fn set_predict(&mut self, predict: bool) {
        self.predict = predict;
    }

    /// Sets where `placementCheck` wants destinations: each node with what it may request
    /// after a placement, by resource name (`cpu` in millicores, `memory` in bytes, `pods` a
    /// count; resources left out are not limited). LowNodeUtilization: its underutilized
    /// nodes and their target thresholds as absolute amounts. Cleared after each plugin.
    pub fn set_targets(&mut self, targets: PlacementTargets) {
        self.targets = Some(targets);
    }

    pub fn clear_targets(&mut self) {
        self.targets = None;
    }

    /// Where the running plugin wants destinations ([`Placement::set_targets`]).
    pub fn targets(&self) -> Option<&[(NodeId, BTreeMap<String, i64>)]> {
        self.targets.as_deref()
    }

    /// Takes an evicted pod off the simulated cluster and, when predicting, places its
    /// replacement. Returns the predicted destination and its alternatives (None: not
    /// predicting, or no node fits).
    ///
    /// A replacement that finds no node while the evicted pods still terminate waits in
    /// kube-scheduler's queue until the deletions free room: it is placed where it goes once
    /// they are gone ([`Simulation::settle`]), and later replacements see them gone too.
    pub(super) fn evict(&mut self, pod: PodId) -> Option<Prediction> {
        if !self.predict {
            self.sim.remove(pod);
            return None;
        }
        self.sim.replace(pod, &self.nodes).ok()
    }

    /// Places a pending pod (one bound to no node) where kube-scheduler would put it once
    /// the pods evicted so far are gone (it waits in kube-scheduler's queue until a deletion
    /// frees room).
    pub(super) fn place_pending(&mut self, pod: PodId) -> Result<Prediction, crate::sim::NoFit> {
        self.sim.schedule_settled(pod, &self.nodes)
    }

    /// Whether planned evictions' replacements are placed by the simulator.
    pub fn predicts(&self) -> bool {
        self.predict
    }

    /// An evicted pod is gone from the API: it no longer terminates on its node in
    /// kube-scheduler's view.
    pub fn terminated(&mut self, pod: PodId) {
        self.sim.terminated(pod);
    }

    /// Takes an evicted pod off the simulated cluster and puts its replacement where it really
    /// landed.
    pub(super) fn evict_to(&mut self, pod: PodId, node: NodeId) {
        self.sim.remove(pod);
        self.sim.place(pod, node);
    }

    /// Places a whole gang on a trial copy (`gangPolicy: WholeGang`): every member evicted,
    /// then each replacement placed, one after the other in kube-scheduler's queue order
    /// ([`queue_order`]); and where the running plugin set
    /// targets, every member's destination among them and within its target. `gang_name`
    /// names the gang in the reasons. Nothing changes until [`Placement::keep`].
    pub(super) fn place_whole_gang(
        &self,
        members: &[PodId],
        gang_name: &str,
    ) -> Result<GangPlacement<'s>, EvictError> {
        let snap = self.snap;
        let rule = members
            .first()
            .map_or("gangPolicy WholeGang", |&m| snap.whole_rule(m));
        let mut trial = self.sim.clone();
        for &m in members {
            trial.remove(m);
        }
        let mut queue = members.to_vec();
        queue_order(snap, &mut queue);
        let mut destinations = vec![0; members.len()];
        let mut alternatives = vec![Vec::new(); members.len()];
        for &m in &queue {
            match trial.schedule_predicted(m, &self.nodes) {
                Ok(d) => {
                    let i = members.iter().position(|&x| x == m).expect("queued from members");
                    destinations[i] = d.node;
                    alternatives[i] = d.alternatives;
                }
                Err(e) => {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} goes whole or not at all ({rule}), and the simulator finds no node for member {}: {e}",
                        snap.pod(m).key()
                    )))
                }
            }
        }
        // Where the running plugin wants its pods to go (LowNodeUtilization: underutilized
        // nodes, each within its target), every member must go.
        if let Some(targets) = &self.targets {
            for (&m, &d) in members.iter().zip(&destinations) {
                let name = &snap.node(d).name;
                let Some((_, limit)) = targets.iter().find(|(n, _)| *n == d) else {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} goes whole or not at all ({rule}), and the simulated destination of member {} is {name}, not an underutilized node",
                        snap.pod(m).key()
                    )));
                };
                let load = trial.load(d);
                if let Some((r, max)) = limit.iter().find(|(r, max)| load.get(r) > **max) {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} goes whole or not at all ({rule}), and with its members placed {name} would go over its target {r} ({} > {max})",
                        load.get(r)
                    )));
                }
            }
        }
        Ok(GangPlacement {
            trial,
            destinations,
            alternatives,
        })
    }

    /// Keeps a gang's trial placement.
    pub(super) fn keep(&mut self, placed: GangPlacement<'s>) {
        self.sim = placed.trial;
    }
}
