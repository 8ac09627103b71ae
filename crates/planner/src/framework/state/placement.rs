//! The placement simulation of one cycle: the cluster as the plan so far leaves it, evicted
//! pods gone and (when predicting) their replacements placed where kube-scheduler would put
//! them, cumulatively; and where the running plugin wants evicted pods to go.

use super::EvictError;
use crate::framework::findings::{Finding, Reporter};
use crate::sim::{queue_order, Prediction, ScoreProfile, Simulation, Termination};
use crate::snapshot::{ClusterSnapshot, NodeId, PodId};
use std::collections::BTreeMap;

/// A node a plugin moves load between ([`Placement::set_targets`]), with what it may request
/// after a placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementTarget {
    /// The node.
    pub node: NodeId,
    /// What the node may request after a placement, by resource name (`cpu` in millicores,
    /// `memory` in bytes, `pods` a count; resources left out are not limited).
    pub limit: BTreeMap<String, i64>,
    /// Whether the plugin wants evicted pods here (LowNodeUtilization: an underutilized
    /// node); `placementCheck: true` and whole gangs go only to these.
    pub wanted: bool,
}

impl PlacementTarget {
    /// The first resource of the limit that `load` goes over, with the limit.
    pub fn over(&self, load: &crate::snapshot::Resources) -> Option<(&str, i64)> {
        self.limit
            .iter()
            .find(|(r, max)| load.get(r) > **max)
            .map(|(r, max)| (r.as_str(), *max))
    }
}

/// A target a plugin held destinations to, reported by the planner when the plugin ends,
/// kept with the plugin's name, in plugin order: the plan says where a replacement that
/// landed elsewhere than predicted put its node over one
/// ([`crate::plan::EvictionPlan::landing_misses`]).
impl Finding for PlacementTarget {
    const KEY: &'static str = "targets";
    type Kept = Vec<(&'static str, PlacementTarget)>;
    fn keep(self, by: Reporter<'_>, kept: &mut Self::Kept) {
        kept.push((by.plugin, self));
    }
}

/// Where a plugin moves load: the nodes it classified, each with its limit.
pub type PlacementTargets = Vec<PlacementTarget>;

/// The placement simulation of one cycle: the cluster as the plan so far leaves it, and where
/// the running plugin wants evicted pods to go.
#[derive(Clone)]
pub struct Placement<'s> {
    snap: &'s ClusterSnapshot,
    /// Whether each planned eviction's replacement is placed by the simulator (its
    /// destination predicted, and later pods seeing it placed).
    predict: bool,
    /// The placement simulator: evicted pods gone, their replacements placed (cumulative).
    sim: Simulation<'s>,
    /// The nodes kube-scheduler may choose: every Ready node of the snapshot.
    nodes: Vec<NodeId>,
    /// The nodes the running plugin moves load between, by node id (for LowNodeUtilization:
    /// every node it classified, with its target; its underutilized nodes wanted); None: the
    /// plugin set none.
    targets: Option<Vec<Option<PlacementTarget>>>,
    /// Whether the running plugin's evictions help only where their replacements land on
    /// another node ([`crate::framework::Plugin::relocates`]).
    relocating: bool,
}

/// A whole gang placed on a trial copy of the simulation, not yet kept.
pub(crate) struct GangPlacement<'s> {
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
            relocating: false,
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
    pub(crate) fn set_termination(&mut self, termination: Termination) {
        self.sim.set_termination(termination);
    }

    /// The cluster snapshot being planned on.
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
    pub(crate) fn set_predict(&mut self, predict: bool) {
        self.predict = predict;
    }

    /// Sets the nodes the running plugin moves load between, each with what it may request
    /// after a placement and whether the plugin wants pods there (LowNodeUtilization: every
    /// node it classified with its target thresholds as absolute amounts, the underutilized
    /// ones wanted). The evictor refuses destinations over their limit, and with
    /// `placementCheck: true` destinations not wanted. Cleared after each plugin.
    pub(crate) fn set_targets(&mut self, targets: PlacementTargets) {
        let mut by_node = vec![None; self.snap.nodes.len()];
        for t in targets {
            let i = t.node.index();
            by_node[i] = Some(t);
        }
        self.targets = Some(by_node);
    }

    /// Clears the running plugin's targets ([`Placement::set_targets`]), returning them.
    pub(crate) fn clear_targets(&mut self) -> Vec<PlacementTarget> {
        self.targets
            .take()
            .map(|t| t.into_iter().flatten().collect())
            .unwrap_or_default()
    }

    /// Says whether the running plugin's evictions help only where their replacements land
    /// on another node ([`crate::framework::Plugin::relocates`]); reset after each plugin.
    pub(crate) fn set_relocating(&mut self, relocating: bool) {
        self.relocating = relocating;
    }

    /// Whether the running plugin's evictions help only where their replacements land on
    /// another node: the evictor refuses one predicted back on its own node.
    pub(crate) fn relocating(&self) -> bool {
        self.relocating
    }

    /// Whether the running plugin set targets ([`Placement::set_targets`]).
    pub(crate) fn has_targets(&self) -> bool {
        self.targets.is_some()
    }

    /// Takes the limits off the running plugin's target for `node` (None: it set none),
    /// for [`Placement::restore_limits`] to put back.
    pub(crate) fn lift_limits(&mut self, node: NodeId) -> Option<BTreeMap<String, i64>> {
        let t = self.targets.as_mut()?.get_mut(node.index())?.as_mut()?;
        Some(std::mem::take(&mut t.limit))
    }

    /// Puts back the limits [`Placement::lift_limits`] took off.
    pub(crate) fn restore_limits(&mut self, node: NodeId, limits: BTreeMap<String, i64>) {
        if let Some(t) = self
            .targets
            .as_mut()
            .and_then(|t| t.get_mut(node.index()))
            .and_then(|t| t.as_mut())
        {
            t.limit = limits;
        }
    }

    /// The running plugin's target for a node, if it set one for it.
    pub fn target(&self, node: NodeId) -> Option<&PlacementTarget> {
        self.targets.as_ref()?.get(node.index())?.as_ref()
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

    /// Takes a surged pod off the simulated cluster and, when predicting, places its
    /// Deployment's new pod where kube-scheduler puts it while the pod still runs
    /// ([`Simulation::surge`]). None: not predicting, or no node fits.
    pub(super) fn surge(&mut self, pod: PodId) -> Option<Prediction> {
        if !self.predict {
            self.sim.remove(pod);
            return None;
        }
        self.sim.surge(pod, &self.nodes).ok()
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
        let mut destinations = vec![NodeId::default(); members.len()];
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
        if self.has_targets() {
            for (&m, &d) in members.iter().zip(&destinations) {
                let name = &snap.node(d).name;
                let Some(target) = self.target(d).filter(|t| t.wanted) else {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} goes whole or not at all ({rule}), and the simulated destination of member {} is {name}, not an underutilized node",
                        snap.pod(m).key()
                    )));
                };
                let load = trial.load(d);
                if let Some((r, max)) = target.over(load) {
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
