//! The planner: (pipeline, snapshot, now) → EvictionPlan. Pure and deterministic.
//!
//! Profiles run as upstream runs them: every deschedule plugin of every profile, then every
//! balance plugin of every profile. All plugins share one [`PlanningState`], so each sees the
//! evictions planned before it (the pods gone, their requests moved off their nodes), and the
//! limits and disruption budgets hold across the whole cycle.

use crate::framework::{Context, Pipeline, PlannedEviction, PlanningState};
use crate::snapshot::{ClusterSnapshot, NodeId, Resources};

/// The result of planning one cycle.
#[derive(Debug, Clone)]
pub struct EvictionPlan {
    /// In the order they were planned (and will be attempted).
    pub evictions: Vec<PlannedEviction>,
    /// The planning nodes (Ready, matching the policy's nodeSelector).
    pub nodes: Vec<NodeId>,
    /// What each node of the snapshot requests after the plan, by node id.
    pub requested_after: Vec<Resources>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("profile {profile:?}: {message}")]
    Profile { profile: String, message: String },
}

/// Plans one cycle.
pub fn plan(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
) -> Result<EvictionPlan, PlanError> {
    // Everything that can make the cycle impossible is checked before any plugin runs.
    for p in &pipeline.profiles {
        p.evictor
            .priority_threshold(snap)
            .map_err(|message| PlanError::Profile {
                profile: p.name.clone(),
                message,
            })?;
    }
    let nodes = snap.ready_nodes(&pipeline.node_selector);
    let mut state = PlanningState::new(snap, pipeline.limits);
    if !nodes.is_empty() {
        let deschedule = pipeline
            .profiles
            .iter()
            .flat_map(|p| p.deschedule.iter().map(move |pl| (p, pl)));
        let balance = pipeline
            .profiles
            .iter()
            .flat_map(|p| p.balance.iter().map(move |pl| (p, pl)));
        for (profile, plugin) in deschedule.chain(balance) {
            let _span =
                tracing::debug_span!("plugin", profile = %profile.name, plugin = plugin.name())
                    .entered();
            let before = state.evictions().len();
            let mut cx = Context {
                state: &mut state,
                evictor: &profile.evictor,
                profile: &profile.name,
                plugin: plugin.name(),
                now,
                nodes: &nodes,
            };
            plugin.run(&mut cx, &nodes);
            tracing::debug!(
                planned = state.evictions().len() - before,
                "plugin finished"
            );
        }
    }
    let (evictions, requested_after) = state.into_parts();
    Ok(EvictionPlan {
        evictions,
        nodes,
        requested_after,
    })
}
