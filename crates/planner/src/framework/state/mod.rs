//! The planning state of one cycle, split by concern:
//!
//! - [`Ledger`], the safety ledger: what is planned, and what is spent of the limits per
//!   node, per namespace and per cycle, of the disruption budgets and of the gangs;
//! - [`Placement`], the placement simulation: the cluster as the plan so far leaves it, and
//!   where the running plugin wants evicted pods to go;
//! - [`Journal`]: the notes, the candidates not chosen and why, and what plugins reported
//!   of their own (the [`Findings`]);
//! - [`History`], the memory of earlier cycles, read-only during a plan.
//!
//! [`PlanningState`] holds the four and plans through them: an eviction is admitted by the
//! ledger (and, for a whole gang, placed by the simulation) before anything is recorded, and
//! then recorded in every part at once.

mod budgets;
mod journal;
mod ledger;
mod placement;

pub use journal::{Journal, NoteKind, PlanNote, SkipCounts, SkipReason};
pub use ledger::Ledger;
pub use placement::{Placement, PlacementTarget, PlacementTargets};

use super::History;
use crate::framework::findings::Findings;
use crate::snapshot::{ClusterSnapshot, GangId, NodeId, PodId, Resources};

/// Everything a cycle's planning produced.
#[derive(Debug, Clone, Default)]
pub struct PlanningOutput {
    /// The evictions planned, in plan order.
    pub evictions: Vec<PlannedEviction>,
    /// What each node requests after the plan, by node id.
    pub requested: Vec<Resources>,
    /// What the planning noted: about plugins and nodes, and the candidates not chosen and why.
    pub notes: Vec<PlanNote>,
    /// What plugins reported of their own (the nodes found overutilized, for
    /// [`History::advance`], the pending units placed, ...).
    pub findings: Findings,
    /// How many candidates each plugin did not choose, by kind of reason.
    pub skips: SkipCounts,
}

/// The policy's eviction limits for one cycle (None: unlimited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// `maxNoOfPodsToEvictPerNode`: the most evictions per node.
    pub per_node: Option<u32>,
    /// `maxNoOfPodsToEvictPerNamespace`: the most evictions per namespace.
    pub per_namespace: Option<u32>,
    /// `maxNoOfPodsToEvictTotal`: the most evictions in the cycle.
    pub total: Option<u32>,
}

/// Why an eviction could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvictError {
    /// The pod is already planned for eviction.
    #[error("pod is already planned for eviction")]
    AlreadyPlanned,
    /// The pod is not bound to a node in the snapshot.
    #[error("pod is not bound to a node in the snapshot")]
    NotOnNode,
    /// The node's limit of evictions (given) is reached.
    #[error("maximum number of evicted pods per node reached ({0})")]
    NodeLimit(u32),
    /// The namespace's limit of evictions (given) is reached.
    #[error("maximum number of evicted pods per namespace reached ({0})")]
    NamespaceLimit(u32),
    /// The cycle's limit of evictions (given) is reached.
    #[error("maximum number of evicted pods per cycle reached ({0})")]
    TotalLimit(u32),
    /// The named PodDisruptionBudget has no disruptions left.
    #[error("blocked by PodDisruptionBudget {0}: no disruptions left")]
    DisruptionBudget(String),
    /// One of the policy's `evictionBudgets` allows no more evictions now (the budget and
    /// what is spent of it, said).
    #[error("{0}")]
    EvictionBudget(String),
    /// More than one PodDisruptionBudget (named) covers the pod, which the Eviction API refuses.
    #[error("pod is covered by more than one PodDisruptionBudget ({0}); the Eviction API refuses such pods")]
    MultipleBudgets(String),
    /// The API refused to evict the pod earlier in this cycle.
    #[error("the API refused to evict this pod earlier in this cycle")]
    Refused,
    /// An eviction in the background of the pod is in progress (upstream's
    /// `EvictionsInBackground`): it is not requested again.
    #[error("an eviction in the background of this pod is in progress (EvictionsInBackground); it counts against the limits and is not requested again")]
    InBackground,
    /// The eviction cooldown holds the pod's workload back (continuous mode).
    #[error("{0}")]
    Cooldown(String),
    /// Evicting the pod would leave its gang below minMember running members.
    #[error("{0}")]
    GangMinMember(String),
    /// The pod names a PodGroup the snapshot does not hold: its minMember is unknown.
    #[error("{0}")]
    GangUnknown(String),
    /// `gangPolicy: WholeGang`: the whole gang cannot go (a member may not be evicted, the
    /// limits or budgets do not allow every member, or the simulator cannot place them all).
    #[error("{0}")]
    WholeGang(String),
    /// The pod's eviction is forbidden (its disruption budget) and its Deployment cannot be
    /// surged instead (both said).
    #[error("{0}")]
    NoSurge(String),
}

impl EvictError {
    /// The kind of reason a candidate refused with this error is counted under. A kind of
    /// refusal not mapped here is counted as [`SkipReason::Other`].
    pub fn skip_reason(&self) -> SkipReason {
        #[allow(unreachable_patterns)]
        match self {
            EvictError::NodeLimit(_)
            | EvictError::NamespaceLimit(_)
            | EvictError::TotalLimit(_) => SkipReason::Limits,
            EvictError::DisruptionBudget(_)
            | EvictError::MultipleBudgets(_)
            | EvictError::NoSurge(_) => SkipReason::Pdb,
            EvictError::EvictionBudget(_) => SkipReason::Budget,
            EvictError::Cooldown(_) => SkipReason::Cooldown,
            EvictError::GangMinMember(_)
            | EvictError::GangUnknown(_)
            | EvictError::WholeGang(_) => SkipReason::Gang,
            EvictError::Refused => SkipReason::Refused,
            EvictError::AlreadyPlanned | EvictError::NotOnNode => SkipReason::Other,
            _ => SkipReason::Other,
        }
    }

    /// Whether the eviction was refused for want of budget: a disruption budget with no
    /// disruptions left, or a limit per node, namespace or cycle reached. Another plugin
    /// having spent it first could be why.
    pub(crate) fn is_scarcity(&self) -> bool {
        matches!(
            self,
            EvictError::NodeLimit(_)
                | EvictError::NamespaceLimit(_)
                | EvictError::TotalLimit(_)
                | EvictError::DisruptionBudget(_)
                | EvictError::NoSurge(_)
                | EvictError::EvictionBudget(_)
        )
    }
}

/// One eviction in the plan: which pod, from which node, by whom and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEviction {
    /// The pod to evict.
    pub pod: PodId,
    /// The node the pod is on.
    pub node: NodeId,
    /// The profile whose plugin planned the eviction.
    pub profile: String,
    /// The plugin that planned the eviction.
    pub plugin: &'static str,
    /// Why the plugin evicts the pod.
    pub reason: String,
    /// Where the simulator predicts kube-scheduler puts the pod's replacement, given every
    /// eviction and placement planned before it (None: no node fits).
    pub destination: Option<NodeId>,
    /// The other nodes kube-scheduler is as likely to pick for the replacement (the same
    /// best score), sorted by name; empty when there are none or nothing is predicted.
    pub alternatives: Vec<NodeId>,
    /// The gang evicted whole with this pod (`gangPolicy: WholeGang`): its members are
    /// planned together, one after the other, and the executor attempts all or none.
    pub gang: Option<GangId>,
    /// The policy's `evictionBudgets` the eviction counts against (set as it is recorded).
    pub budgets: Vec<String>,
    /// How the pod is moved: evicted, or by a surge of its Deployment.
    pub mechanism: Mechanism,
}

/// How a planned move is carried out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Mechanism {
    /// Through the Eviction API: the pod goes first, its replacement comes later.
    #[default]
    Evict,
    /// By a surge (make before break) of the pod's Deployment (`ns/name`): one more replica,
    /// Ready, then one fewer, the pod marked to go first ([`crate::framework::surge`]).
    Surge {
        /// The Deployment, `ns/name`.
        deployment: String,
    },
}

impl Mechanism {
    /// `evict` or `surge`, as reports name it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Mechanism::Evict => "evict",
            Mechanism::Surge { .. } => "surge",
        }
    }
}

/// What earlier cycles left, for a plan that is given none.
static NO_HISTORY: History = History::EMPTY;

/// The planning state of one cycle: its four parts (see the module's documentation). A
/// clone is a checkpoint a plugin may go back to ([`crate::framework::Context::checkpoint`]).
#[derive(Clone)]
pub struct PlanningState<'s> {
    snap: &'s ClusterSnapshot,
    ledger: Ledger<'s>,
    placement: Placement<'s>,
    journal: Journal,
    history: &'s History,
}

impl<'s> PlanningState<'s> {
    /// Nothing planned yet, within `limits`, with no memory of earlier cycles.
    pub fn new(snap: &'s ClusterSnapshot, limits: Limits) -> Self {
        PlanningState {
            snap,
            ledger: Ledger::new(snap, limits),
            placement: Placement::new(snap),
            journal: Journal::new(),
            history: &NO_HISTORY,
        }
    }

    /// Plans with what earlier cycles left (continuous mode), read-only.
    pub fn with_history(self, history: &'s History) -> Self {
        PlanningState { history, ..self }
    }

    /// Plans within the policy's `evictionBudgets` that apply at `now`, with what the
    /// history says earlier cycles spent of them (set the history first).
    pub fn with_budgets(mut self, rules: &'s [crate::policy::EvictionBudget], now: i64) -> Self {
        self.ledger
            .set_budgets(budgets::Budgets::new(self.snap, rules, now, self.history));
        self
    }

    /// The cluster snapshot being planned on.
    pub fn snap(&self) -> &'s ClusterSnapshot {
        self.snap
    }

    /// The safety ledger: what is planned and what is spent.
    pub fn ledger(&self) -> &Ledger<'s> {
        &self.ledger
    }

    /// The safety ledger, to look past the disruption budgets in a trial plan
    /// ([`Ledger::look_past_disruption_budgets`]).
    pub(crate) fn ledger_mut(&mut self) -> &mut Ledger<'s> {
        &mut self.ledger
    }

    /// The placement simulation.
    pub fn placement(&self) -> &Placement<'s> {
        &self.placement
    }

    /// The placement simulation, to say whether it predicts destinations and where the
    /// running plugin wants them.
    pub fn placement_mut(&mut self) -> &mut Placement<'s> {
        &mut self.placement
    }

    /// The journal: notes, candidates not chosen, findings.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub(crate) fn journal_mut(&mut self) -> &mut Journal {
        &mut self.journal
    }

    /// What earlier cycles observed (continuous mode).
    pub fn history(&self) -> &'s History {
        self.history
    }

    /// Marks a pod whose eviction the API refused: no plugin may plan it again this cycle.
    pub fn pin(&mut self, pod: PodId) {
        self.ledger.pin(pod);
    }

    /// Records a pod whose eviction in the background is in progress: it counts against the
    /// limits and is never planned ([`Ledger::record_in_background`]).
    pub(crate) fn record_in_background(&mut self, pod: PodId) {
        self.ledger.record_in_background(pod);
    }

    /// Records a pod evicted earlier in this cycle (when re-planning after a refusal): it is
    /// gone, its requests are off its node, its replacement placed (when predicting), and it
    /// counts against the limits and its budget, but it is not part of the new plan.
    pub(crate) fn record_evicted_earlier(&mut self, pod: PodId, by: Option<(&str, &str)>) {
        if self.ledger.record_evicted_earlier(pod, by).is_some() {
            self.journal.chosen(pod);
            self.placement.evict(pod);
        }
    }

    /// [`PlanningState::record_evicted_earlier`] for a pod whose replacement was seen bound to
    /// `node`: the replacement is placed there, whatever the simulator would predict.
    pub(crate) fn record_landed(&mut self, pod: PodId, node: NodeId, by: Option<(&str, &str)>) {
        if self.ledger.record_evicted_earlier(pod, by).is_some() {
            self.journal.chosen(pod);
            self.placement.evict_to(pod, node);
        }
    }

    /// Plans the eviction of one pod, once the ledger admits it ([`Ledger::admit`]): spends
    /// the limits and the budget, moves the pod's requests off its node and (when predicting)
    /// places its replacement.
    pub(crate) fn plan_eviction(
        &mut self,
        pod: PodId,
        profile: &str,
        plugin: &'static str,
        reason: String,
    ) -> Result<(), EvictError> {
        self.plan_move(pod, profile, plugin, reason, Mechanism::Evict)
    }

    /// Plans a surge of `pod`'s Deployment (`deployment`, [`crate::framework::surge`]):
    /// admitted by the limits and the eviction budgets but not by its disruption budget, which
    /// it does not spend; its new pod predicted where kube-scheduler puts it while the pod
    /// still runs.
    pub(crate) fn plan_surge(
        &mut self,
        pod: PodId,
        profile: &str,
        plugin: &'static str,
        reason: String,
        deployment: String,
    ) -> Result<(), EvictError> {
        self.plan_move(
            pod,
            profile,
            plugin,
            reason,
            Mechanism::Surge { deployment },
        )
    }

    /// One pod's move by `mechanism`: admitted as that mechanism is, its destination
    /// predicted as it goes, then recorded in every part.
    fn plan_move(
        &mut self,
        pod: PodId,
        profile: &str,
        plugin: &'static str,
        reason: String,
        mechanism: Mechanism,
    ) -> Result<(), EvictError> {
        let node = match mechanism {
            Mechanism::Evict => self.ledger.admit(pod)?,
            Mechanism::Surge { .. } => self.ledger.admit_surge(pod)?,
        };
        self.ledger.admit_by_budgets(&[pod], profile, plugin)?;
        let prediction = match mechanism {
            Mechanism::Evict => self.placement.evict(pod),
            Mechanism::Surge { .. } => self.placement.surge(pod),
        };
        self.journal.chosen(pod);
        let (destination, alternatives) =
            prediction.map_or((None, Vec::new()), |p| (Some(p.node), p.alternatives));
        self.ledger.record(PlannedEviction {
            pod,
            node,
            profile: profile.to_string(),
            plugin,
            reason,
            destination,
            alternatives,
            gang: None,
            budgets: Vec::new(),
            mechanism,
        });
        Ok(())
    }

    /// Plans a whole gang at once, all or nothing (`gangPolicy: WholeGang`): `members` as
    /// [`Ledger::gang_members`] gives them, each already through the evictor's filter. Only
    /// when the ledger admits them together ([`Ledger::admit_whole_gang`]) and the simulator
    /// places every member's replacement ([`Placement::place_whole_gang`]), the first one (the
    /// pod a plugin chose) on a node other than its own. Nothing is planned otherwise.
    pub(crate) fn plan_whole_gang(
        &mut self,
        members: &[PodId],
        profile: &str,
        plugin: &'static str,
        reason: String,
    ) -> Result<(), EvictError> {
        let snap = self.snap;
        let Some(&first) = members.first() else {
            return Ok(());
        };
        let nodes = self.ledger.admit_whole_gang(members)?;
        self.ledger.admit_by_budgets(members, profile, plugin)?;
        let gang_name = self.ledger.gang_description(first);
        let rule = snap.whole_rule(first);
        let gang = snap.gangs_of_pod(first).first().copied();
        let placed = self.placement.place_whole_gang(members, &gang_name)?;
        if placed.destinations[0] == nodes[0] {
            return Err(EvictError::WholeGang(format!(
                "with its whole gang {gang_name} evicted ({rule}), the simulated destination of the pod is its own node {}",
                snap.node(nodes[0]).name
            )));
        }
        let first_key = snap.pod(first).key();
        for (i, (&m, &n)) in members.iter().zip(&nodes).enumerate() {
            let reason = if i == 0 {
                format!("{reason}; its whole gang {gang_name} goes with it ({rule})")
            } else {
                format!(
                    "member of gang {gang_name}, evicted whole with {first_key} ({rule}): {reason}"
                )
            };
            self.journal.chosen(m);
            self.ledger.record(PlannedEviction {
                pod: m,
                node: n,
                profile: profile.to_string(),
                plugin,
                reason,
                destination: Some(placed.destinations[i]),
                alternatives: placed.alternatives[i].clone(),
                gang,
                budgets: Vec::new(),
                mechanism: Mechanism::Evict,
            });
        }
        self.placement.keep(placed);
        Ok(())
    }

    /// Places a pending pod (one that has never run) where the simulator predicts
    /// kube-scheduler puts it, as the plan so far leaves the cluster; later placements see it
    /// there.
    pub(crate) fn place_pending(
        &mut self,
        pod: PodId,
    ) -> Result<crate::sim::Prediction, crate::sim::NoFit> {
        self.placement.place_pending(pod)
    }

    /// Everything planned, for the report.
    pub fn into_output(self) -> PlanningOutput {
        let (evictions, requested) = self.ledger.into_parts();
        self.journal.into_output(evictions, requested)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::{node, pdb, pod};
    use crate::snapshot::{ClusterSnapshot, SnapshotParts};

    fn snap() -> ClusterSnapshot {
        ClusterSnapshot::build(SnapshotParts {
            nodes: vec![node("n1").build(), node("n2").build()],
            pods: vec![
                pod("a", "p1").node("n1").cpu(100).label("app", "x").build(),
                pod("a", "p2").node("n1").cpu(100).label("app", "x").build(),
                pod("b", "p3").node("n2").cpu(100).label("app", "y").build(),
                pod("b", "p4")
                    .node("n2")
                    .cpu(100)
                    .label("app", "y")
                    .label("z", "1")
                    .build(),
            ],
            pdbs: vec![
                pdb("a", "x", "app", "x", 1),
                pdb("b", "y", "app", "y", 5),
                pdb("b", "z", "z", "1", 5),
            ],
            ..Default::default()
        })
    }

    #[test]
    fn budgets_are_spent() {
        let s = snap();
        let mut st = PlanningState::new(&s, Limits::default());
        assert!(st
            .plan_eviction(PodId::new(0), "p", "T", "r".into())
            .is_ok());
        assert_eq!(st.ledger().requested(NodeId::new(0)).cpu, 100);
        assert_eq!(st.ledger().requested(NodeId::new(0)).pods, 1);
        assert!(matches!(
            st.plan_eviction(PodId::new(1), "p", "T", "r".into()),
            Err(EvictError::DisruptionBudget(_))
        ));
        assert_eq!(
            st.plan_eviction(PodId::new(0), "p", "T", "r".into()),
            Err(EvictError::AlreadyPlanned)
        );
        assert!(matches!(
            st.plan_eviction(PodId::new(3), "p", "T", "r".into()),
            Err(EvictError::MultipleBudgets(_))
        ));
        assert!(st
            .plan_eviction(PodId::new(2), "p", "T", "r".into())
            .is_ok());
    }

    #[test]
    fn a_checkpoint_is_independent_and_restoring_it_forgets_what_was_planned_since() {
        let s = snap();
        let mut st = PlanningState::new(&s, Limits::default());
        let n1 = NodeId::new(0);
        let load = st.placement().sim().load(n1).cpu;
        let saved = st.clone();
        assert!(st
            .plan_eviction(PodId::new(0), "p", "T", "r".into())
            .is_ok());
        st.journal_mut().note(PlanNote {
            profile: "p".into(),
            plugin: "T",
            node: None,
            message: "planned one".into(),
            kind: NoteKind::Info,
        });
        // The copy saw none of it.
        assert!(!saved.ledger().is_planned(PodId::new(0)));
        assert_eq!(saved.ledger().requested(n1).cpu, 200);
        assert_eq!(saved.placement().sim().load(n1).cpu, load);
        // Restored: nothing planned, spent, placed or noted since.
        st = saved;
        assert!(st.ledger().evictions().is_empty());
        assert_eq!(st.ledger().requested(n1).cpu, 200);
        assert_eq!(st.placement().sim().load(n1).cpu, load);
        // The PDB allowing one disruption is whole again: p1 goes, then p0 may not.
        assert!(st
            .plan_eviction(PodId::new(1), "p", "T", "r".into())
            .is_ok());
        assert!(matches!(
            st.plan_eviction(PodId::new(0), "p", "T", "r".into()),
            Err(EvictError::DisruptionBudget(_))
        ));
        let out = st.into_output();
        assert!(out.notes.iter().all(|n| n.message != "planned one"));
        assert_eq!(out.evictions.len(), 1);
    }

    #[test]
    fn a_replacement_that_landed_is_placed_where_it_landed() {
        let s = snap();
        let mut st = PlanningState::new(&s, Limits::default());
        let to = s.pod_node(PodId::new(0)).unwrap();
        st.record_landed(PodId::new(0), to, None);
        assert!(st.ledger().is_planned(PodId::new(0)));
        assert!(st.ledger().evictions().is_empty());
        // the simulation holds the replacement on the node it landed on (here its source),
        // whatever the scores would say
        assert_eq!(st.placement().sim().placed(to), &[PodId::new(0)]);
        assert_eq!(
            st.placement().sim().load(to).cpu,
            s.node_requested(to).cpu,
            "gone and back: the node requests what it did"
        );
    }

    #[test]
    fn evictions_in_the_background_count_against_every_limit_and_are_never_planned() {
        let s = snap();
        // p1 (n1, namespace a) is being evicted in the background.
        let limited = |limits: Limits| {
            let mut st = PlanningState::new(&s, limits);
            st.record_in_background(PodId::new(0));
            st
        };
        let st = limited(Limits::default());
        assert_eq!(
            st.ledger().admit(PodId::new(0)),
            Err(EvictError::InBackground),
            "not requested again"
        );
        assert!(st.ledger().evictions().is_empty());
        // It runs on until whoever evicts it is done: its requests stay on its node, and its
        // budget is the API's to count.
        assert_eq!(st.ledger().requested(NodeId::new(0)).cpu, 200);
        assert!(st.ledger().admit(PodId::new(1)).is_ok());
        let one = Some(1);
        let node = limited(Limits {
            per_node: one,
            ..Default::default()
        });
        assert_eq!(
            node.ledger().admit(PodId::new(1)),
            Err(EvictError::NodeLimit(1))
        );
        assert!(node.ledger().admit(PodId::new(2)).is_ok(), "another node");
        let namespace = limited(Limits {
            per_namespace: one,
            ..Default::default()
        });
        assert_eq!(
            namespace.ledger().admit(PodId::new(1)),
            Err(EvictError::NamespaceLimit(1))
        );
        assert!(namespace.ledger().admit(PodId::new(2)).is_ok());
        let total = limited(Limits {
            total: one,
            ..Default::default()
        });
        assert_eq!(
            total.ledger().admit(PodId::new(2)),
            Err(EvictError::TotalLimit(1))
        );
        assert_eq!(
            total.ledger().admit_together(&[PodId::new(2)]),
            Err((PodId::new(2), EvictError::TotalLimit(1)))
        );
    }

    #[test]
    fn the_limit_per_cycle_counts_the_evictions_before_a_replan() {
        let s = snap();
        let mut st = PlanningState::new(
            &s,
            Limits {
                total: Some(2),
                ..Default::default()
            },
        );
        // Evicted in the cycle's first plan; the rest is planned again after a refusal.
        st.record_evicted_earlier(PodId::new(0), None);
        st.plan_eviction(PodId::new(2), "p", "RemoveDuplicates", "r".into())
            .unwrap();
        assert_eq!(
            st.ledger().admit(PodId::new(3)),
            Err(EvictError::TotalLimit(2)),
            "two evictions in the cycle: the earlier one and the new plan's"
        );
    }

    #[test]
    fn refused_and_earlier_evictions_when_replanning() {
        let s = snap();
        let mut st = PlanningState::new(
            &s,
            Limits {
                per_node: Some(2),
                ..Default::default()
            },
        );
        st.record_evicted_earlier(PodId::new(0), None);
        st.pin(PodId::new(2));
        assert!(st.ledger().is_planned(PodId::new(0)));
        assert!(
            st.ledger().evictions().is_empty(),
            "earlier evictions are not part of the new plan"
        );
        assert_eq!(st.ledger().requested(NodeId::new(0)).cpu, 100);
        // the budget of app=x (1 allowed) is spent by the earlier eviction
        assert!(matches!(
            st.ledger().admit(PodId::new(1)),
            Err(EvictError::DisruptionBudget(_))
        ));
        assert_eq!(st.ledger().admit(PodId::new(2)), Err(EvictError::Refused));
    }

    fn gang_snap() -> ClusterSnapshot {
        use crate::snapshot::builders::{pod_group, volcano_group};
        use crate::snapshot::Phase;
        let member = |name: &str| pod("ml", name).node("n1").pod_group("train");
        ClusterSnapshot::build(SnapshotParts {
            nodes: vec![node("n1").build()],
            pods: vec![
                member("t0").build(),
                member("t1").build(),
                member("t2").build(),
                member("t3").build(),
                member("t4-done").phase(Phase::Succeeded).build(),
                member("t5-going").terminating().build(),
                pod("ml", "v0").node("n1").volcano_group("sim").build(),
                pod("ml", "v1").node("n1").volcano_group("sim").build(),
                pod("ml", "x0").node("n1").volcano_group("lost").build(),
            ],
            pod_groups: vec![pod_group("ml", "train", 2), volcano_group("ml", "sim", 1)],
            ..Default::default()
        })
    }

    #[test]
    fn gangs_keep_min_member_running() {
        let s = gang_snap();
        let id = |n: &str| s.pod_id("ml", n).unwrap();
        let mut st = PlanningState::new(&s, Limits::default());
        // train: 4 running (t0..t3), minMember 2: two may go, in any plugin
        st.plan_eviction(id("t0"), "p", "A", "r".into()).unwrap();
        st.plan_eviction(id("t1"), "p", "B", "r".into()).unwrap();
        let err = st.ledger().admit(id("t2")).unwrap_err();
        assert!(matches!(err, EvictError::GangMinMember(_)), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("PodGroup ml/train (scheduling.x-k8s.io)"),
            "{msg}"
        );
        assert!(msg.contains("minMember 2"), "{msg}");
        assert!(msg.contains("2 running now"), "{msg}");
        // members that do not run take nothing away
        assert!(st.ledger().admit(id("t4-done")).is_ok());
        // Volcano: 2 running, minMember 1
        st.plan_eviction(id("v0"), "p", "A", "r".into()).unwrap();
        assert!(matches!(
            st.ledger().admit(id("v1")),
            Err(EvictError::GangMinMember(_))
        ));
        // a PodGroup missing from the snapshot: every member stays
        let err = st.ledger().admit(id("x0")).unwrap_err();
        assert!(matches!(err, EvictError::GangUnknown(_)), "{err}");
        assert!(err.to_string().contains("not in the snapshot"), "{err}");
    }

    #[test]
    fn earlier_evictions_count_against_gangs() {
        let s = gang_snap();
        let id = |n: &str| s.pod_id("ml", n).unwrap();
        let mut st = PlanningState::new(&s, Limits::default());
        st.record_evicted_earlier(id("t0"), None);
        st.record_evicted_earlier(id("t1"), None);
        assert_eq!(st.ledger().gang_running(s.gangs_of_pod(id("t2"))[0]), 2);
        assert!(matches!(
            st.ledger().admit(id("t3")),
            Err(EvictError::GangMinMember(_))
        ));
    }

    #[test]
    fn limits_hold() {
        let s = snap();
        let limits = Limits {
            per_node: Some(1),
            per_namespace: None,
            total: Some(2),
        };
        let mut st = PlanningState::new(&s, limits);
        st.plan_eviction(PodId::new(0), "p", "T", "r".into())
            .unwrap();
        assert_eq!(
            st.ledger().admit(PodId::new(1)),
            Err(EvictError::NodeLimit(1))
        );
        st.plan_eviction(PodId::new(2), "p", "T", "r".into())
            .unwrap();
        assert_eq!(
            st.ledger().admit(PodId::new(3)),
            Err(EvictError::TotalLimit(2))
        );
        let mut st = PlanningState::new(
            &s,
            Limits {
                per_namespace: Some(1),
                ..Default::default()
            },
        );
        st.plan_eviction(PodId::new(2), "p", "T", "r".into())
            .unwrap();
        assert_eq!(
            st.ledger().admit(PodId::new(3)),
            Err(EvictError::NamespaceLimit(1))
        );
    }
}
