//! Executors act on a plan. This module holds the seam every executor implements; the
//! dry-run executor reports the plan and changes nothing. A live executor (Eviction API,
//! PDB-aware, rate-limited) implements the same trait, so what dry-run prints is what a real
//! run would attempt.

use crate::plan::EvictionPlan;
use crate::report::Report;
use crate::snapshot::ClusterSnapshot;

/// What happened to each planned eviction in one cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Dry-run: planned, not attempted.
    Planned,
    Evicted,
    BlockedByDisruptionBudget,
    PodGone,
    Failed,
}

/// The result of executing one plan.
#[derive(Debug, Clone)]
pub struct CycleReport {
    pub report: Report,
    pub outcomes: Vec<Outcome>,
}

/// Turns a plan into actions.
pub trait Executor {
    fn execute(&mut self, snap: &ClusterSnapshot, plan: &EvictionPlan) -> CycleReport;
}

/// Reports the plan; evicts nothing.
#[derive(Debug, Default)]
pub struct DryRun;

impl Executor for DryRun {
    fn execute(&mut self, snap: &ClusterSnapshot, plan: &EvictionPlan) -> CycleReport {
        CycleReport {
            report: Report::new(snap, plan),
            outcomes: vec![Outcome::Planned; plan.evictions.len()],
        }
    }
}
