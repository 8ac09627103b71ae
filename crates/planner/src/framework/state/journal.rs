//! The journal of one cycle: what the plan tells the user besides its evictions. Notes about
//! plugins and nodes, the candidates not chosen and why, and what plugins reported of their
//! own ([`Findings`]: the measured usage they planned with, the nodes they found
//! overutilized, ...). Nothing here decides anything.

use super::{PlannedEviction, PlanningOutput};
use crate::framework::findings::{Finding, Findings, Reporter};
use crate::snapshot::{NodeId, PodId, Resources};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Something a plugin wants the user to know about this cycle, said in `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanNote {
    /// The profile of the plugin that noted it.
    pub profile: String,
    /// The plugin that noted it.
    pub plugin: &'static str,
    /// The node the note is about, if any.
    pub node: Option<NodeId>,
    /// What the user should know.
    pub message: String,
    /// What the note is about.
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

/// Why a candidate was not chosen, as a small stable set of kinds (the label values of the
/// skipped-candidates metric). The note's message says the details; this says the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// An eviction limit of the policy: per node, per namespace or per cycle.
    Limits,
    /// A PodDisruptionBudget with no disruptions left, or more than one covering the pod.
    Pdb,
    /// A disruption budget of the policy (over a period, in a window).
    Budget,
    /// The eviction cooldown or back-off holds the pod's workload back.
    Cooldown,
    /// No place for the pod elsewhere (the evictor's nodeFit, the placement check).
    Placement,
    /// The pod's gang: below minMember, an unknown PodGroup, or a whole gang that cannot go.
    Gang,
    /// A protection of the pod (an annotation, a time-bounded protection).
    Protection,
    /// The Eviction API refused the pod earlier in the cycle.
    Refused,
    /// Anything else.
    Other,
}

impl SkipReason {
    /// Every kind, in label order.
    pub const ALL: [SkipReason; 9] = [
        SkipReason::Limits,
        SkipReason::Pdb,
        SkipReason::Budget,
        SkipReason::Cooldown,
        SkipReason::Placement,
        SkipReason::Gang,
        SkipReason::Protection,
        SkipReason::Refused,
        SkipReason::Other,
    ];

    /// The metric label value.
    pub fn label(self) -> &'static str {
        match self {
            SkipReason::Limits => "limits",
            SkipReason::Pdb => "pdb",
            SkipReason::Budget => "budget",
            SkipReason::Cooldown => "cooldown",
            SkipReason::Placement => "placement",
            SkipReason::Gang => "gang",
            SkipReason::Protection => "protection",
            SkipReason::Refused => "refused",
            SkipReason::Other => "other",
        }
    }
}

/// How many candidates each plugin did not choose, by (profile, plugin, reason).
pub type SkipCounts = BTreeMap<(String, &'static str, SkipReason), u32>;

/// Candidates refused so far, by pod: (order of the latest refusal, the note, its kind).
type NotChosen = FxHashMap<PodId, (u64, PlanNote, SkipReason)>;

/// The journal of one cycle: its notes, the candidates not chosen and why, and the findings.
#[derive(Debug, Default)]
pub struct Journal {
    notes: Vec<PlanNote>,
    /// What plugins reported of their own, by kind.
    findings: Findings,
    /// Candidates a plugin did not choose, and why; at most one per pod (the latest), and
    /// none for a pod planned in the end. Behind a lock: recorded from the evictor's
    /// checks, which read the state (from several threads, while a plugin only chooses).
    not_chosen: Mutex<NotChosen>,
    not_chosen_seq: AtomicU64,
    /// Evictions refused for want of budget (a disruption budget or a limit), by profile
    /// and plugin, and whether that plugin repairs hard constraints.
    scarce: BTreeMap<(String, &'static str), (bool, u32)>,
}

impl Clone for Journal {
    fn clone(&self) -> Self {
        Journal {
            notes: self.notes.clone(),
            findings: self.findings.clone(),
            not_chosen: Mutex::new(self.not_chosen.lock().expect("not-chosen lock").clone()),
            not_chosen_seq: AtomicU64::new(self.not_chosen_seq.load(Ordering::Relaxed)),
            scarce: self.scarce.clone(),
        }
    }
}

impl Journal {
    /// An empty journal.
    pub fn new() -> Self {
        Journal::default()
    }

    /// Records that a plugin's eviction was refused for want of budget (see
    /// [`super::EvictError::is_scarcity`]); `hard`: the plugin repairs hard constraints.
    pub(crate) fn scarce(&mut self, profile: &str, plugin: &'static str, hard: bool) {
        let e = self
            .scarce
            .entry((profile.to_string(), plugin))
            .or_insert((hard, 0));
        e.1 += 1;
    }

    /// The evictions refused for want of budget: (profile, plugin) → (repairs hard
    /// constraints, how many).
    pub(crate) fn scarce_refusals(&self) -> &BTreeMap<(String, &'static str), (bool, u32)> {
        &self.scarce
    }

    /// Records a note for the report and the logs.
    pub fn note(&mut self, note: PlanNote) {
        self.notes.push(note);
    }

    /// The notes recorded so far, in order.
    pub fn notes(&self) -> &[PlanNote] {
        &self.notes
    }

    /// Records a finding `by` reported (see [`Findings`]).
    pub fn report<F: Finding>(&mut self, by: Reporter<'_>, finding: F) {
        self.findings.report(by, finding);
    }

    /// What plugins reported so far.
    pub fn findings(&self) -> &Findings {
        &self.findings
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
        reason: SkipReason,
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
                reason,
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
        let mut v: Vec<(u64, PlanNote)> = self
            .not_chosen_mut()
            .values()
            .map(|(seq, n, _)| (*seq, n.clone()))
            .collect();
        v.sort_by_key(|(seq, _)| *seq);
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// What the cycle planned, with this journal: the notes (those recorded, then the
    /// candidates not chosen, in the order of their latest refusal) and the findings.
    pub(super) fn into_output(
        self,
        evictions: Vec<PlannedEviction>,
        requested: Vec<Resources>,
    ) -> PlanningOutput {
        let mut notes = self.notes;
        let mut refused: Vec<(u64, PlanNote, SkipReason)> = self
            .not_chosen
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_values()
            .collect();
        refused.sort_by_key(|(seq, _, _)| *seq);
        let mut skips = SkipCounts::new();
        for (_, n, reason) in &refused {
            *skips
                .entry((n.profile.clone(), n.plugin, *reason))
                .or_insert(0) += 1;
        }
        notes.extend(refused.into_iter().map(|(_, n, _)| n));
        PlanningOutput {
            evictions,
            requested,
            notes,
            findings: self.findings,
            skips,
        }
    }
}
