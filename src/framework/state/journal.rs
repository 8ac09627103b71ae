//! The journal of one cycle: what the plan tells the user besides its evictions. Notes about
//! plugins and nodes, the measured usage plugins planned with, the candidates not chosen and
//! why, and the nodes each plugin found overutilized (for the next cycle's memory). Nothing
//! here decides anything.

use super::{PlannedEviction, PlanningOutput};
use crate::snapshot::usage::UsageSource;
use crate::snapshot::{GangId, NodeId, PodId, Resources};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

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

/// A pending unit (a pod, or the pending members of a gang) a plugin made room for, or
/// found no room for: where the simulator places each pod, and which planned evictions make
/// the room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingUnit {
    pub profile: String,
    pub plugin: &'static str,
    /// The gang, when the unit is the pending members of one.
    pub gang: Option<GangId>,
    /// The pending pods of the unit, in the order they are placed.
    pub pods: Vec<PodId>,
    /// Where the simulator places each pod of `pods` (None for all when the unit cannot be
    /// placed).
    pub destinations: Vec<Option<NodeId>>,
    /// The planned evictions (moves) that make the room, in plan order.
    pub made_room_by: Vec<PodId>,
    /// Why the unit cannot be placed (the scheduler's reason), when it cannot.
    pub reason: Option<String>,
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

/// Candidates refused so far, by pod: (order of the latest refusal, the note).
type NotChosen = FxHashMap<PodId, (u64, PlanNote)>;

/// The utilization thresholds a plugin classified the nodes with, in percent of allocatable
/// by resource: underutilized below `low`, overutilized above `high` (empty when the plugin
/// has no such bound); with `deviation`, both are relative to the nodes' mean.
#[derive(Debug, Clone, PartialEq)]
pub struct UtilizationThresholds {
    pub profile: String,
    pub plugin: &'static str,
    pub low: BTreeMap<String, f64>,
    pub high: BTreeMap<String, f64>,
    pub deviation: bool,
}

#[derive(Debug, Default)]
pub struct Journal {
    /// Nodes of the snapshot (the length of `measured` once a plugin measures).
    node_count: usize,
    notes: Vec<PlanNote>,
    measured: Vec<Option<MeasuredNode>>,
    over: BTreeMap<String, Vec<String>>,
    /// Pending units a plugin made room for (or found no room for), in plan order.
    pending: Vec<PendingUnit>,
    /// The utilization thresholds plugins classified nodes with, in plugin order.
    thresholds: Vec<UtilizationThresholds>,
    /// Candidates a plugin did not choose, and why; at most one per pod (the latest), and
    /// none for a pod planned in the end. Behind a lock: recorded from the evictor's
    /// checks, which read the state (from several threads, while a plugin only chooses).
    not_chosen: Mutex<NotChosen>,
    not_chosen_seq: AtomicU64,
    /// Evictions refused for want of budget (a disruption budget or a limit), by profile
    /// and plugin, and whether that plugin repairs hard constraints.
    scarce: BTreeMap<(String, &'static str), (bool, u32)>,
}

impl Journal {
    /// An empty journal for a snapshot of `node_count` nodes.
    pub fn new(node_count: usize) -> Self {
        Journal {
            node_count,
            ..Journal::default()
        }
    }

    /// Records that a plugin's eviction was refused for want of budget (see
    /// [`super::EvictError::is_scarcity`]); `hard`: the plugin repairs hard constraints.
    pub fn scarce(&mut self, profile: &str, plugin: &'static str, hard: bool) {
        let e = self
            .scarce
            .entry((profile.to_string(), plugin))
            .or_insert((hard, 0));
        e.1 += 1;
    }

    /// The evictions refused for want of budget: (profile, plugin) → (repairs hard
    /// constraints, how many).
    pub fn scarce_refusals(&self) -> &BTreeMap<(String, &'static str), (bool, u32)> {
        &self.scarce
    }

    /// Records a note for the report and the logs.
    pub fn note(&mut self, note: PlanNote) {
        self.notes.push(note);
    }

    pub fn notes(&self) -> &[PlanNote] {
        &self.notes
    }

    /// Records the utilization thresholds a plugin classifies nodes with.
    pub fn thresholds(&mut self, thresholds: UtilizationThresholds) {
        self.thresholds.push(thresholds);
    }

    /// Records a pending unit and where it goes (or why it cannot).
    pub fn pending(&mut self, unit: PendingUnit) {
        self.pending.push(unit);
    }

    /// The pending units recorded so far.
    pub fn pending_units(&self) -> &[PendingUnit] {
        &self.pending
    }

    /// The candidates not chosen so far (behind their lock).
    fn not_chosen_mut(&self) -> MutexGuard<'_, NotChosen> {
        self.not_chosen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that a plugin did not choose a candidate pod (on `node`), and why (its latest
    /// reason wins; dropped if the pod is planned later in the cycle).
    pub fn not_chosen(
        &self,
        profile: &str,
        plugin: &'static str,
        pod: PodId,
        node: Option<NodeId>,
        why: String,
    ) {
        let seq = self.not_chosen_seq.fetch_add(1, Ordering::Relaxed);
        self.not_chosen_mut().insert(
            pod,
            (
                seq,
                PlanNote {
                    profile: profile.to_string(),
                    plugin,
                    node,
                    message: why,
                    kind: NoteKind::NotChosen(pod),
                },
            ),
        );
    }

    /// Forgets why a pod was not chosen: it is planned now.
    pub fn chosen(&mut self, pod: PodId) {
        self.not_chosen
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pod);
    }

    /// The candidates not chosen so far, and why, in the order of their latest refusal.
    pub fn not_chosen_notes(&self) -> Vec<PlanNote> {
        let mut v: Vec<(u64, PlanNote)> = self.not_chosen_mut().values().cloned().collect();
        v.sort_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// Records that a plugin (`profile/plugin`) classified nodes this cycle, and which were
    /// overutilized.
    pub fn observe_over(&mut self, key: String, nodes: Vec<String>) {
        self.over.insert(key, nodes);
    }

    /// The measured usage a plugin planned with on a node (the first plugin to measure a
    /// node sets it).
    pub fn measured(&self, node: NodeId) -> Option<&MeasuredNode> {
        self.measured.get(node.index()).and_then(Option::as_ref)
    }

    pub fn set_measured(&mut self, node: NodeId, m: MeasuredNode) {
        if self.measured.is_empty() {
            self.measured = vec![None; self.node_count];
        }
        let slot = &mut self.measured[node.index()];
        if slot.is_none() {
            *slot = Some(m);
        }
    }

    /// Takes a pod's measured usage off a node's "after" figures.
    pub fn measured_sub(&mut self, node: NodeId, cpu: i64, memory: i64) {
        if let Some(Some(m)) = self.measured.get_mut(node.index()) {
            m.after.cpu -= cpu;
            m.after.memory -= memory;
        }
    }

    /// What the cycle planned, with this journal: the notes (those recorded, then the
    /// candidates not chosen, in the order of their latest refusal), the measured usage and
    /// the nodes found overutilized.
    pub(super) fn into_output(
        self,
        evictions: Vec<PlannedEviction>,
        requested: Vec<Resources>,
    ) -> PlanningOutput {
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
            evictions,
            requested,
            notes,
            measured: self.measured,
            over: self.over,
            pending: self.pending,
            thresholds: self.thresholds,
        }
    }
}
