//! The planning state of one cycle: which pods are planned for eviction, what each node
//! requests after those evictions, the limits spent, the disruption budgets left and the
//! running members of each gang. It holds per-node, per-budget and per-gang counters, never
//! a copy of the cluster.
//!
//! Gangs (`gangPolicy: SurplusOnly`): a running member may be planned only while the gang
//! keeps at least minMember running members without it, checked here at the moment each
//! eviction is planned, so that no two plugins of a cycle can together break a gang.

use super::History;
use crate::sim::Simulation;
use crate::snapshot::usage::UsageSource;
use crate::snapshot::{ClusterSnapshot, GangId, NodeId, PodId, Resources};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Something a plugin wants the user to know about this cycle, said in `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanNote {
    pub profile: String,
    pub plugin: &'static str,
    pub node: Option<NodeId>,
    pub message: String,
    pub kind: NoteKind,
}

/// What a [`PlanNote`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// About the plugin's cycle or a node (a node left out: no or a stale sample).
    Info,
    /// The plugin skipped the whole cycle (for example its metrics source failed).
    Skipped,
    /// A candidate pod the plugin did not choose; the message says why (nodeFit,
    /// placementCheck, a limit, a disruption budget).
    NotChosen(PodId),
}

impl PlanNote {
    /// Whether the plugin skipped the whole cycle.
    pub fn skipped(&self) -> bool {
        self.kind == NoteKind::Skipped
    }

    /// The candidate not chosen, for a note about one.
    pub fn pod(&self) -> Option<PodId> {
        match self.kind {
            NoteKind::NotChosen(pod) => Some(pod),
            NoteKind::Info | NoteKind::Skipped => None,
        }
    }
}

/// The measured usage a plugin planned with on a node: before the plan and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasuredNode {
    pub source: UsageSource,
    /// Measured cpu (millicores) and memory (bytes).
    pub before: Resources,
    /// `before` minus the usage of the pods planned for eviction from the node.
    pub after: Resources,
}

/// Everything a cycle's planning produced.
#[derive(Debug, Clone, Default)]
pub struct PlanningOutput {
    pub evictions: Vec<PlannedEviction>,
    /// What each node requests after the plan, by node id.
    pub requested: Vec<Resources>,
    pub notes: Vec<PlanNote>,
    /// Measured usage by node id, where a plugin planned with it.
    pub measured: Vec<Option<MeasuredNode>>,
    /// Nodes each plugin found overutilized this cycle (by `profile/plugin`), for
    /// [`History::advance`].
    pub over: BTreeMap<String, Vec<String>>,
}

/// The policy's eviction limits for one cycle (None: unlimited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub per_node: Option<u32>,
    pub per_namespace: Option<u32>,
    pub total: Option<u32>,
}

/// Why an eviction could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvictError {
    #[error("pod is already planned for eviction")]
    AlreadyPlanned,
    #[error("pod is not bound to a node in the snapshot")]
    NotOnNode,
    #[error("maximum number of evicted pods per node reached ({0})")]
    NodeLimit(u32),
    #[error("maximum number of evicted pods per namespace reached ({0})")]
    NamespaceLimit(u32),
    #[error("maximum number of evicted pods per cycle reached ({0})")]
    TotalLimit(u32),
    #[error("blocked by PodDisruptionBudget {0}: no disruptions left")]
    DisruptionBudget(String),
    #[error("pod is covered by more than one PodDisruptionBudget ({0}); the Eviction API refuses such pods")]
    MultipleBudgets(String),
    #[error("the API refused to evict this pod earlier in this cycle")]
    Refused,
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEviction {
    pub pod: PodId,
    pub node: NodeId,
    pub profile: String,
    pub plugin: &'static str,
    pub reason: String,
    /// Where the simulator predicts kube-scheduler puts the pod's replacement, given every
    /// eviction and placement planned before it (None: no node fits).
    pub destination: Option<NodeId>,
    /// The gang evicted whole with this pod (`gangPolicy: WholeGang`): its members are
    /// planned together, one after the other, and the executor attempts all or none.
    pub gang: Option<GangId>,
}

pub struct PlanningState<'s> {
    /// Whether each planned eviction's replacement is placed by the simulator (its
    /// destination predicted, and later pods seeing it placed).
    predict: bool,
    pub snap: &'s ClusterSnapshot,
    planned: Vec<bool>,
    /// Pods whose eviction the API refused in this cycle: never planned again.
    pinned: Vec<bool>,
    requested: Vec<Resources>,
    pdb_left: Vec<i32>,
    /// Running members of each gang planned (or evicted earlier in the cycle).
    gang_planned: Vec<u32>,
    per_node: Vec<u32>,
    per_namespace: FxHashMap<&'s str, u32>,
    limits: Limits,
    evictions: Vec<PlannedEviction>,
    notes: Vec<PlanNote>,
    measured: Vec<Option<MeasuredNode>>,
    history: History,
    over: BTreeMap<String, Vec<String>>,
    /// The placement simulator: evicted pods gone, their replacements placed (cumulative).
    sim: Simulation<'s>,
    /// The nodes kube-scheduler may choose: every Ready node of the snapshot.
    sim_nodes: Vec<NodeId>,
    /// Where a destination must be for `placementCheck` to admit an eviction, set by the
    /// running plugin (for LowNodeUtilization: its underutilized nodes and the requests each
    /// may reach, by resource name); None: any node other than the pod's own.
    placement_targets: Option<Vec<(NodeId, BTreeMap<String, i64>)>>,
    /// Candidates a plugin did not choose, and why; at most one per pod (the latest), and
    /// none for a pod planned in the end. Behind a lock: recorded from the evictor's
    /// checks, which read the state (from several threads, while a plugin only chooses).
    /// Candidates refused so far, by pod: (order of the latest refusal, the note).
    not_chosen: std::sync::Mutex<FxHashMap<PodId, (u64, PlanNote)>>,
    not_chosen_seq: std::sync::atomic::AtomicU64,
}

impl<'s> PlanningState<'s> {
    pub fn new(snap: &'s ClusterSnapshot, limits: Limits) -> Self {
        PlanningState {
            predict: true,
            snap,
            planned: vec![false; snap.pods.len()],
            pinned: vec![false; snap.pods.len()],
            requested: (0..snap.nodes.len() as NodeId)
                .map(|n| snap.node_requested(n).clone())
                .collect(),
            pdb_left: snap.pdbs.iter().map(|p| p.disruptions_allowed).collect(),
            gang_planned: vec![0; snap.gangs.len()],
            per_node: vec![0; snap.nodes.len()],
            per_namespace: FxHashMap::default(),
            limits,
            // At most one eviction per pod: room for all up front, so a plan of tens of
            // thousands of evictions is never copied to a larger vector (capacity never used is
            // never touched, so it costs no memory).
            evictions: Vec::with_capacity(snap.pods.len()),
            notes: Vec::new(),
            measured: Vec::new(),
            history: History::default(),
            over: BTreeMap::new(),
            sim: Simulation::new(snap),
            sim_nodes: snap.ready_nodes(&Default::default()),
            placement_targets: None,
            not_chosen: Default::default(),
            not_chosen_seq: Default::default(),
        }
    }

    /// The placement simulator, as the plan so far leaves the cluster.
    pub fn sim(&self) -> &Simulation<'s> {
        &self.sim
    }

    /// The nodes kube-scheduler may choose (every Ready node).
    pub fn sim_nodes(&self) -> &[NodeId] {
        &self.sim_nodes
    }

    /// Sets where `placementCheck` wants destinations: each node with what it may request
    /// after a placement, by resource name (`cpu` in millicores, `memory` in bytes, `pods` a
    /// count; resources left out are not limited). LowNodeUtilization: its underutilized
    /// nodes and their target thresholds as absolute amounts. Cleared after each plugin.
    pub fn set_placement_targets(&mut self, targets: Vec<(NodeId, BTreeMap<String, i64>)>) {
        self.placement_targets = Some(targets);
    }

    pub fn clear_placement_targets(&mut self) {
        self.placement_targets = None;
    }

    pub fn placement_targets(&self) -> Option<&[(NodeId, BTreeMap<String, i64>)]> {
        self.placement_targets.as_deref()
    }

    /// Turns destination prediction (and cumulative placements) on or off for this cycle.
    pub fn set_predict(&mut self, predict: bool) {
        self.predict = predict;
    }

    /// Sets what earlier cycles left (continuous mode).
    pub fn set_history(&mut self, history: History) {
        self.history = history;
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// Records a note for the report and the logs.
    pub fn note(&mut self, note: PlanNote) {
        self.notes.push(note);
    }

    pub fn notes(&self) -> &[PlanNote] {
        &self.notes
    }

    /// The candidates not chosen so far (behind their lock).
    fn not_chosen_notes_mut(&self) -> std::sync::MutexGuard<'_, FxHashMap<PodId, (u64, PlanNote)>> {
        self.not_chosen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that a plugin did not choose a candidate pod, and why (its latest reason wins;
    /// dropped if the pod is planned later in the cycle).
    pub fn not_chosen(&self, profile: &str, plugin: &'static str, pod: PodId, why: String) {
        let seq = self
            .not_chosen_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.not_chosen_notes_mut().insert(
            pod,
            (
                seq,
                PlanNote {
                    profile: profile.to_string(),
                    plugin,
                    node: self.snap.pod_node(pod),
                    message: why,
                    kind: NoteKind::NotChosen(pod),
                },
            ),
        );
    }

    /// The candidates not chosen so far, and why.
    pub fn not_chosen_notes(&self) -> Vec<PlanNote> {
        let mut v: Vec<(u64, PlanNote)> = self.not_chosen_notes_mut().values().cloned().collect();
        v.sort_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// Records that a plugin classified nodes this cycle, and which were overutilized.
    pub fn observe_over(&mut self, key: String, nodes: Vec<String>) {
        self.over.insert(key, nodes);
    }

    /// The measured usage a plugin planned with on a node (the first plugin to measure a
    /// node sets it).
    pub fn measured(&self, node: NodeId) -> Option<&MeasuredNode> {
        self.measured.get(node as usize).and_then(Option::as_ref)
    }

    pub fn set_measured(&mut self, node: NodeId, m: MeasuredNode) {
        if self.measured.is_empty() {
            self.measured = vec![None; self.snap.nodes.len()];
        }
        let slot = &mut self.measured[node as usize];
        if slot.is_none() {
            *slot = Some(m);
        }
    }

    /// Takes a pod's measured usage off a node's "after" figures.
    pub fn measured_sub(&mut self, node: NodeId, cpu: i64, memory: i64) {
        if let Some(Some(m)) = self.measured.get_mut(node as usize) {
            m.after.cpu -= cpu;
            m.after.memory -= memory;
        }
    }

    /// Everything planned, for the report.
    pub fn into_output(self) -> PlanningOutput {
        let mut notes = self.notes;
        let mut refused: Vec<(u64, PlanNote)> = self
            .not_chosen
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_values()
            .collect();
        refused.sort_by_key(|(seq, _)| *seq);
        notes.extend(refused.into_iter().map(|(_, n)| n));
        PlanningOutput {
            evictions: self.evictions,
            requested: self.requested,
            notes,
            measured: self.measured,
            over: self.over,
        }
    }

    pub fn is_planned(&self, pod: PodId) -> bool {
        self.planned[pod as usize]
    }

    /// Whether the API refused this pod's eviction earlier in the cycle.
    pub fn is_pinned(&self, pod: PodId) -> bool {
        self.pinned[pod as usize]
    }

    /// Marks a pod whose eviction was refused: no plugin may plan it again this cycle.
    pub fn pin(&mut self, pod: PodId) {
        self.pinned[pod as usize] = true;
    }

    /// Records a pod evicted earlier in this cycle (when re-planning after a refusal): it is
    /// gone, its requests are off its node, and it counts against the limits and its budget,
    /// but it is not part of the new plan.
    pub fn record_evicted(&mut self, pod: PodId) {
        if self.planned[pod as usize] {
            return;
        }
        if let Some(node) = self.snap.pod_node(pod) {
            self.apply(pod, node);
            if self.predict {
                let _ = self.sim.schedule(pod, &self.sim_nodes);
            }
        }
    }

    pub fn requested(&self, node: NodeId) -> &Resources {
        &self.requested[node as usize]
    }

    pub fn evictions(&self) -> &[PlannedEviction] {
        &self.evictions
    }

    pub fn into_parts(self) -> (Vec<PlannedEviction>, Vec<Resources>) {
        (self.evictions, self.requested)
    }

    /// Disruptions a budget still allows in this plan.
    pub fn pdb_left(&self, pdb: u32) -> i32 {
        self.pdb_left[pdb as usize]
    }

    /// Running members a gang has left after the evictions planned so far.
    pub fn gang_running(&self, gang: GangId) -> u32 {
        self.snap
            .gang(gang)
            .running
            .saturating_sub(self.gang_planned[gang as usize])
    }

    /// Whether the gangs of a pod allow planning it (`gangPolicy: SurplusOnly`): a running
    /// member may go only while its gang keeps at least minMember running members without it;
    /// a member of a gang whose PodGroup is not in the snapshot never goes (its minMember is
    /// unknown). Evicting a member that does not run (pending, finished) takes nothing away.
    pub fn check_gangs(&self, pod: PodId) -> Result<(), EvictError> {
        let snap = self.snap;
        let gangs = snap.gangs_of_pod(pod);
        if gangs.is_empty() {
            return Ok(());
        }
        for &g in gangs {
            let gang = snap.gang(g);
            let Some(min) = gang.min_member else {
                return Err(EvictError::GangUnknown(format!(
                    "pod belongs to gang {}, which is not in the snapshot: its minMember is unknown, so no member of the gang is evicted",
                    gang.describe()
                )));
            };
            if !snap.counts_as_running(pod) {
                continue;
            }
            let running = self.gang_running(g);
            if i64::from(running) - 1 < i64::from(min) {
                return Err(EvictError::GangMinMember(format!(
                    "evicting the pod would leave gang {} with {} running members, below its minMember {min} ({running} running now)",
                    gang.describe(),
                    running.saturating_sub(1),
                )));
            }
        }
        Ok(())
    }

    /// Evictions planned so far on a node.
    pub fn evicted_from_node(&self, node: NodeId) -> u32 {
        self.per_node[node as usize]
    }

    /// Whether the total limit is spent.
    pub fn total_limit_reached(&self) -> bool {
        self.limits
            .total
            .is_some_and(|t| self.evictions.len() as u32 >= t)
    }

    /// Checks limits, budgets and gangs without planning anything.
    pub fn check(&self, pod: PodId) -> Result<NodeId, EvictError> {
        let node = self.check_limits(pod)?;
        self.check_gangs(pod)?;
        Ok(node)
    }

    /// [`PlanningState::check`] without the gang check.
    fn check_limits(&self, pod: PodId) -> Result<NodeId, EvictError> {
        if self.is_planned(pod) {
            return Err(EvictError::AlreadyPlanned);
        }
        if self.is_pinned(pod) {
            return Err(EvictError::Refused);
        }
        let node = self.snap.pod_node(pod).ok_or(EvictError::NotOnNode)?;
        let p = self.snap.pod(pod);
        if let Some(t) = self.limits.total {
            if self.evictions.len() as u32 >= t {
                return Err(EvictError::TotalLimit(t));
            }
        }
        if let Some(n) = self.limits.per_node {
            if self.per_node[node as usize] >= n {
                return Err(EvictError::NodeLimit(n));
            }
        }
        if let Some(n) = self.limits.per_namespace {
            if self.per_namespace.get(&*p.namespace).copied().unwrap_or(0) >= n {
                return Err(EvictError::NamespaceLimit(n));
            }
        }
        let pdbs = self.snap.pdbs_of_pod(pod);
        if pdbs.len() > 1 {
            let names: Vec<String> = pdbs
                .iter()
                .map(|&i| self.snap.pdbs[i as usize].name.to_string())
                .collect();
            return Err(EvictError::MultipleBudgets(names.join(", ")));
        }
        if let Some(&i) = pdbs.first() {
            if self.pdb_left[i as usize] <= 0 {
                return Err(EvictError::DisruptionBudget(format!(
                    "{}/{}",
                    p.namespace, self.snap.pdbs[i as usize].name
                )));
            }
        }
        Ok(node)
    }

    /// Plans the eviction: spends the limits and the budget, and moves the pod's requests
    /// off its node.
    pub fn plan_eviction(
        &mut self,
        pod: PodId,
        profile: &str,
        plugin: &'static str,
        reason: String,
    ) -> Result<(), EvictError> {
        let node = self.check(pod)?;
        self.apply(pod, node);
        let destination = if self.predict {
            self.sim.schedule(pod, &self.sim_nodes).ok()
        } else {
            None
        };
        self.evictions.push(PlannedEviction {
            pod,
            node,
            profile: profile.to_string(),
            plugin,
            reason,
            destination,
            gang: None,
        });
        Ok(())
    }

    /// The pods a whole-gang eviction of `pod` takes (`gangPolicy: WholeGang`): `pod` first,
    /// then every other member of its gangs that is bound to a node and neither finished nor
    /// terminating, in id order. Just `pod` when it is in no gang.
    pub fn gang_members(&self, pod: PodId) -> Vec<PodId> {
        let snap = self.snap;
        let mut others: Vec<PodId> = snap
            .gangs_of_pod(pod)
            .iter()
            .flat_map(|&g| snap.gang(g).members.iter().copied())
            .filter(|&m| {
                let p = snap.pod(m);
                m != pod && snap.pod_node(m).is_some() && p.is_active() && !p.terminating
            })
            .collect();
        others.sort_unstable();
        others.dedup();
        let mut members = vec![pod];
        members.extend(others);
        members
    }

    /// Why the other members of a whole gang cannot go, before any limit is looked at: a
    /// member planned already (by another profile) or refused by the API earlier in the
    /// cycle (the rest of a gang is never attempted after a refusal).
    pub fn check_gang_members(&self, members: &[PodId]) -> Result<(), EvictError> {
        let Some((&first, others)) = members.split_first() else {
            return Ok(());
        };
        if self.is_planned(first) {
            return Err(EvictError::AlreadyPlanned);
        }
        let gang = self.gang_description(first);
        for &m in members {
            if self.is_pinned(m) {
                let key = self.snap.pod(m).key();
                return Err(EvictError::WholeGang(format!(
                    "the API refused to evict {key}, a member of gang {gang}, earlier in this cycle: no other member is attempted (gangPolicy WholeGang)"
                )));
            }
        }
        for &m in others {
            if self.is_planned(m) {
                return Err(EvictError::WholeGang(format!(
                    "{}, a member of gang {gang}, is planned or evicted already, so the gang cannot go whole (gangPolicy WholeGang)",
                    self.snap.pod(m).key()
                )));
            }
        }
        Ok(())
    }

    /// The gangs of a pod, described for reasons (`PodGroup ns/name (group)`).
    pub fn gang_description(&self, pod: PodId) -> String {
        self.snap
            .gangs_of_pod(pod)
            .iter()
            .map(|&g| self.snap.gang(g).describe())
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// Plans a whole gang at once, all or nothing (`gangPolicy: WholeGang`): `members` as
    /// [`PlanningState::gang_members`] gives them, each already through the evictor's filter.
    /// Only when every member passes the checks of [`PlanningState::check`] together (the
    /// limits and each budget spent by all of them at once; no minMember check, since the
    /// whole gang goes) and the simulator places every member's replacement, one after the
    /// other, with the first one (the pod a plugin chose) on a node other than its own.
    /// Nothing is planned otherwise.
    pub fn plan_gang_eviction(
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
        self.check_gang_members(members)?;
        let gang_name = self.gang_description(first);
        let gang = snap.gangs_of_pod(first).first().copied();
        for &g in snap.gangs_of_pod(first) {
            if snap.gang(g).min_member.is_none() {
                return Err(EvictError::GangUnknown(format!(
                    "pod belongs to gang {}, which is not in the snapshot: its minMember is unknown, so no member of the gang is evicted",
                    snap.gang(g).describe()
                )));
            }
        }
        let whole = |m: PodId, e: EvictError| {
            EvictError::WholeGang(format!(
                "gang {gang_name} goes whole or not at all (gangPolicy WholeGang), and its member {} cannot go: {e}",
                snap.pod(m).key()
            ))
        };
        // Every member alone, then all of them together.
        let mut nodes = Vec::with_capacity(members.len());
        for &m in members {
            match self.check_limits(m) {
                Ok(n) => nodes.push(n),
                Err(e) if m == first => return Err(e),
                Err(e) => return Err(whole(m, e)),
            }
        }
        if let Some(t) = self.limits.total {
            if self.evictions.len() + members.len() > t as usize {
                return Err(EvictError::WholeGang(format!(
                    "gang {gang_name} has {} members to evict together (gangPolicy WholeGang), more than the {} the limit of {t} evictions per cycle leaves",
                    members.len(),
                    t as usize - self.evictions.len()
                )));
            }
        }
        let mut on_node: FxHashMap<NodeId, u32> = FxHashMap::default();
        let mut in_namespace: FxHashMap<&str, u32> = FxHashMap::default();
        let mut of_budget: FxHashMap<u32, i32> = FxHashMap::default();
        for (&m, &n) in members.iter().zip(&nodes) {
            *on_node.entry(n).or_default() += 1;
            *in_namespace.entry(&snap.pod(m).namespace).or_default() += 1;
            if let Some(&b) = snap.pdbs_of_pod(m).first() {
                *of_budget.entry(b).or_default() += 1;
            }
        }
        if let Some(limit) = self.limits.per_node {
            for (&n, &count) in &on_node {
                if self.per_node[n as usize] + count > limit {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} has {count} members to evict together on node {} (gangPolicy WholeGang), over the limit of {limit} evictions per node",
                        snap.node(n).name
                    )));
                }
            }
        }
        if let Some(limit) = self.limits.per_namespace {
            for (&ns, &count) in &in_namespace {
                let spent = self.per_namespace.get(ns).copied().unwrap_or(0);
                if spent + count > limit {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} has {count} members to evict together in namespace {ns} (gangPolicy WholeGang), over the limit of {limit} evictions per namespace"
                    )));
                }
            }
        }
        for (&b, &count) in &of_budget {
            if self.pdb_left[b as usize] < count {
                let pdb = &snap.pdbs[b as usize];
                return Err(EvictError::WholeGang(format!(
                    "gang {gang_name} has {count} members under PodDisruptionBudget {}/{}, which allows {} more disruptions (gangPolicy WholeGang)",
                    pdb.namespace,
                    pdb.name,
                    self.pdb_left[b as usize].max(0)
                )));
            }
        }
        // Placement: every member gone, then each replacement placed, cumulatively.
        let mut trial = self.sim.clone();
        for &m in members {
            trial.remove(m);
        }
        let mut destinations = Vec::with_capacity(members.len());
        for &m in members {
            match trial.schedule(m, &self.sim_nodes) {
                Ok(d) => destinations.push(d),
                Err(e) => {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} goes whole or not at all (gangPolicy WholeGang), and the simulator finds no node for member {}: {e}",
                        snap.pod(m).key()
                    )))
                }
            }
        }
        // Where the running plugin wants its pods to go (LowNodeUtilization: underutilized
        // nodes, each within its target), every member must go.
        if let Some(targets) = &self.placement_targets {
            for (&m, &d) in members.iter().zip(&destinations) {
                let name = &snap.node(d).name;
                let Some((_, limit)) = targets.iter().find(|(n, _)| *n == d) else {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} goes whole or not at all (gangPolicy WholeGang), and the simulated destination of member {} is {name}, not an underutilized node",
                        snap.pod(m).key()
                    )));
                };
                let load = trial.load(d);
                if let Some((r, max)) = limit.iter().find(|(r, max)| load.get(r) > **max) {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} goes whole or not at all (gangPolicy WholeGang), and with its members placed {name} would go over its target {r} ({} > {max})",
                        load.get(r)
                    )));
                }
            }
        }
        if destinations[0] == nodes[0] {
            return Err(EvictError::WholeGang(format!(
                "with its whole gang {gang_name} evicted (gangPolicy WholeGang), the simulated destination of the pod is its own node {}",
                snap.node(nodes[0]).name
            )));
        }
        let first_key = snap.pod(first).key();
        for (i, (&m, &n)) in members.iter().zip(&nodes).enumerate() {
            self.apply_counts(m, n);
            let reason = if i == 0 {
                format!("{reason}; its whole gang {gang_name} goes with it (gangPolicy WholeGang)")
            } else {
                format!("member of gang {gang_name}, evicted whole with {first_key} (gangPolicy WholeGang): {reason}")
            };
            self.evictions.push(PlannedEviction {
                pod: m,
                node: n,
                profile: profile.to_string(),
                plugin,
                reason,
                destination: Some(destinations[i]),
                gang,
            });
        }
        self.sim = trial;
        Ok(())
    }

    fn apply(&mut self, pod: PodId, node: NodeId) {
        self.sim.remove(pod);
        self.apply_counts(pod, node);
    }

    /// [`PlanningState::apply`] but for the simulator.
    fn apply_counts(&mut self, pod: PodId, node: NodeId) {
        let snap = self.snap;
        let p = snap.pod(pod);
        self.planned[pod as usize] = true;
        self.not_chosen
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pod);
        if p.is_active() {
            self.requested[node as usize].sub_pod(&p.requests);
        }
        self.per_node[node as usize] += 1;
        *self.per_namespace.entry(&p.namespace).or_insert(0) += 1;
        if let Some(&i) = snap.pdbs_of_pod(pod).first() {
            self.pdb_left[i as usize] -= 1;
        }
        if snap.counts_as_running(pod) {
            for &g in snap.gangs_of_pod(pod) {
                self.gang_planned[g as usize] += 1;
            }
        }
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
        assert!(st.plan_eviction(0, "p", "T", "r".into()).is_ok());
        assert_eq!(st.requested(0).cpu, 100);
        assert_eq!(st.requested(0).pods, 1);
        assert!(matches!(
            st.plan_eviction(1, "p", "T", "r".into()),
            Err(EvictError::DisruptionBudget(_))
        ));
        assert_eq!(
            st.plan_eviction(0, "p", "T", "r".into()),
            Err(EvictError::AlreadyPlanned)
        );
        assert!(matches!(
            st.plan_eviction(3, "p", "T", "r".into()),
            Err(EvictError::MultipleBudgets(_))
        ));
        assert!(st.plan_eviction(2, "p", "T", "r".into()).is_ok());
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
        st.record_evicted(0);
        st.pin(2);
        assert!(st.is_planned(0));
        assert!(
            st.evictions().is_empty(),
            "earlier evictions are not part of the new plan"
        );
        assert_eq!(st.requested(0).cpu, 100);
        // the budget of app=x (1 allowed) is spent by the earlier eviction
        assert!(matches!(st.check(1), Err(EvictError::DisruptionBudget(_))));
        assert_eq!(st.check(2), Err(EvictError::Refused));
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
        let err = st.check(id("t2")).unwrap_err();
        assert!(matches!(err, EvictError::GangMinMember(_)), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("PodGroup ml/train (scheduling.x-k8s.io)"),
            "{msg}"
        );
        assert!(msg.contains("minMember 2"), "{msg}");
        assert!(msg.contains("2 running now"), "{msg}");
        // members that do not run take nothing away
        assert!(st.check(id("t4-done")).is_ok());
        // Volcano: 2 running, minMember 1
        st.plan_eviction(id("v0"), "p", "A", "r".into()).unwrap();
        assert!(matches!(
            st.check(id("v1")),
            Err(EvictError::GangMinMember(_))
        ));
        // a PodGroup missing from the snapshot: every member stays
        let err = st.check(id("x0")).unwrap_err();
        assert!(matches!(err, EvictError::GangUnknown(_)), "{err}");
        assert!(err.to_string().contains("not in the snapshot"), "{err}");
    }

    #[test]
    fn earlier_evictions_count_against_gangs() {
        let s = gang_snap();
        let id = |n: &str| s.pod_id("ml", n).unwrap();
        let mut st = PlanningState::new(&s, Limits::default());
        st.record_evicted(id("t0"));
        st.record_evicted(id("t1"));
        assert_eq!(st.gang_running(s.gangs_of_pod(id("t2"))[0]), 2);
        assert!(matches!(
            st.check(id("t3")),
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
        st.plan_eviction(0, "p", "T", "r".into()).unwrap();
        assert_eq!(st.check(1), Err(EvictError::NodeLimit(1)));
        st.plan_eviction(2, "p", "T", "r".into()).unwrap();
        assert_eq!(st.check(3), Err(EvictError::TotalLimit(2)));
        let mut st = PlanningState::new(
            &s,
            Limits {
                per_namespace: Some(1),
                ..Default::default()
            },
        );
        st.plan_eviction(2, "p", "T", "r".into()).unwrap();
        assert_eq!(st.check(3), Err(EvictError::NamespaceLimit(1)));
    }
}
