//! The planner: (pipeline, snapshot, now) → EvictionPlan. Pure and deterministic.
//!
//! Profiles run as upstream runs them: every deschedule plugin of every profile, then every
//! balance plugin of every profile. All plugins share one [`PlanningState`], so each sees the
//! evictions planned before it (the pods gone, their requests moved off their nodes), and the
//! limits and disruption budgets hold across the whole cycle.
//!
//! A profile whose `sort` extension point enables a plugin (such as DominantResourceFairness)
//! orders its candidates as that plugin's [`CandidateOrder`] says, kept current as the plan
//! proceeds (one per distinct [`SortPlugin::share_key`], shared by the profiles that give it,
//! fed by every eviction of every profile); the plan then reports what each order summarizes
//! (each tenant's share before and after).

#[cfg(doc)]
use crate::framework::SortPlugin;
use crate::framework::{
    CandidateOrder, Context, History, MeasuredNode, PendingUnit, Pipeline, PlanNote,
    PlannedEviction, PlanningState, TenantShare,
};
use crate::snapshot::{ClusterSnapshot, NodeId, PodId, Resources};
use std::collections::BTreeMap;

/// The result of planning one cycle.
#[derive(Debug, Clone)]
pub struct EvictionPlan {
    /// In the order they were planned (and will be attempted).
    pub evictions: Vec<PlannedEviction>,
    /// The planning nodes (Ready, matching the policy's nodeSelector).
    pub nodes: Vec<NodeId>,
    /// What each node of the snapshot requests after the plan, by node id.
    pub requested_after: Vec<Resources>,
    /// Plugins that skipped the cycle, nodes left out, and why.
    pub notes: Vec<PlanNote>,
    /// Measured usage by node id, where a plugin planned with it (empty when none did).
    pub measured: Vec<Option<MeasuredNode>>,
    /// Nodes each plugin found overutilized (for the next cycle's [`History`]).
    pub over: BTreeMap<String, Vec<String>>,
    /// Each tenant's dominant share before and after the plan, when a profile orders by
    /// DominantResourceFairness (empty otherwise); sorted by tenant label, then tenant.
    pub tenants: Vec<TenantShare>,
    /// Pending units a plugin (MakeRoomForPendingPods) made room for, or found no room for.
    pub pending: Vec<PendingUnit>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("profile {profile:?}: {message}")]
    Profile { profile: String, message: String },
}

/// What the executor learned earlier in this cycle, for re-planning after a refusal.
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
    /// What earlier cycles observed (continuous mode).
    pub history: History,
}

/// Told when each plugin starts and ends (the runner times strategies with it; the planner
/// itself has no clock).
pub trait PlanObserver {
    fn plugin_started(&mut self, _profile: &str, _plugin: &'static str) {}
    fn plugin_finished(&mut self, _profile: &str, _plugin: &'static str, _planned: usize) {}
}

impl PlanObserver for () {}

/// Plans one cycle.
pub fn plan(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
) -> Result<EvictionPlan, PlanError> {
    plan_with(pipeline, snap, now, &CycleMemory::default(), &mut ())
}

/// Plans one cycle, given what happened earlier in it.
pub fn plan_with(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
    memory: &CycleMemory,
    observer: &mut dyn PlanObserver,
) -> Result<EvictionPlan, PlanError> {
    // Everything that can make the cycle impossible is checked before any plugin runs.
    for p in &pipeline.profiles {
        p.evictor
            .check(snap)
            .map_err(|message| PlanError::Profile {
                profile: p.name.clone(),
                message,
            })?;
    }
    let nodes = snap.ready_nodes(&pipeline.node_selector);
    let mut state = PlanningState::new(snap, pipeline.limits).with_history(&memory.history);
    state.placement_mut().set_termination(pipeline.termination);
    if let Some(profile) = &pipeline.scheduler_profile {
        state.placement_mut().set_profile(profile.clone());
    }
    state
        .placement_mut()
        .set_predict(pipeline.needs_placement());
    for &p in &memory.evicted {
        match memory.landed.iter().find(|(q, _)| *q == p) {
            Some(&(_, node)) => state.record_landed(p, node),
            None => state.record_evicted_earlier(p),
        }
    }
    for &p in &memory.gone {
        state.placement_mut().terminated(p);
    }
    for &p in &memory.refused {
        state.pin(p);
    }
    // The order of each distinct sort plugin in use, and each profile's.
    let mut orders: Vec<(String, Box<dyn CandidateOrder + '_>)> = Vec::new();
    let order_of: Vec<Option<usize>> = pipeline
        .profiles
        .iter()
        .map(|p| {
            let sort = p.sort.as_ref()?;
            let key = sort.share_key();
            Some(match orders.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    orders.push((key, sort.start(snap)));
                    orders.len() - 1
                }
            })
        })
        .collect();
    if !nodes.is_empty() {
        let deschedule = pipeline
            .profiles
            .iter()
            .enumerate()
            .flat_map(|(i, p)| p.deschedule.iter().map(move |pl| (i, p, pl)));
        let balance = pipeline
            .profiles
            .iter()
            .enumerate()
            .flat_map(|(i, p)| p.balance.iter().map(move |pl| (i, p, pl)));
        for (pi, profile, plugin) in deschedule.chain(balance) {
            let _span =
                tracing::debug_span!("plugin", profile = %profile.name, plugin = plugin.name())
                    .entered();
            let before = state.ledger().evictions().len();
            observer.plugin_started(&profile.name, plugin.name());
            let mut cx = Context::new(
                &mut state,
                &*profile.evictor,
                &profile.name,
                plugin.name(),
                now,
                &nodes,
                order_of[pi].map(|i| &*orders[i].1),
            );
            plugin.run(&mut cx, &nodes);
            state.placement_mut().clear_targets();
            let planned = state.ledger().evictions().len() - before;
            observer.plugin_finished(&profile.name, plugin.name(), planned);
            tracing::debug!(planned, "plugin finished");
        }
    }
    let mut tenants: Vec<TenantShare> = orders
        .iter()
        .flat_map(|(_, o)| o.summary(state.ledger()))
        .collect();
    tenants.sort_by(|a, b| (&a.tenant_label, &a.tenant).cmp(&(&b.tenant_label, &b.tenant)));
    let out = state.into_output();
    Ok(EvictionPlan {
        evictions: out.evictions,
        nodes,
        requested_after: out.requested,
        notes: out.notes,
        measured: out.measured,
        over: out.over,
        tenants,
        pending: out.pending,
    })
}
