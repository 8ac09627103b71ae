//! The plugin test harness: one plugin run alone over a snapshot, as the planner would run it
//! first in a cycle.

use super::{Context, EvictorPlugin, Limits, PlannedEviction, PlanningState, Plugin};
use crate::snapshot::{ClusterSnapshot, NodeId};

/// [`run_alone`], returning the names of the pods it planned to evict, in plan order
/// (what plugin table tests compare).
pub(crate) fn run_alone_names(
    plugin: &dyn Plugin,
    snap: &ClusterSnapshot,
    evictor: &dyn EvictorPlugin,
    limits: Limits,
    now: i64,
) -> Vec<String> {
    run_alone(plugin, snap, evictor, limits, now)
        .iter()
        .map(|e| snap.pod(e.pod).name.to_string())
        .collect()
}

/// Runs one plugin alone over the snapshot's Ready nodes, as the planner would run it first in
/// a cycle, and returns what it planned.
pub(crate) fn run_alone(
    plugin: &dyn Plugin,
    snap: &ClusterSnapshot,
    evictor: &dyn EvictorPlugin,
    limits: Limits,
    now: i64,
) -> Vec<PlannedEviction> {
    let nodes = snap.ready_nodes(&Default::default());
    let mut state = PlanningState::new(snap, limits);
    run_on(plugin, &mut state, evictor, &nodes, now);
    state.into_output().evictions
}

/// Runs one plugin as profile `default` over `nodes`, on a planning state the caller keeps (to
/// plan on top of earlier evictions, or to read its notes afterwards).
pub(crate) fn run_on(
    plugin: &dyn Plugin,
    state: &mut PlanningState<'_>,
    evictor: &dyn EvictorPlugin,
    nodes: &[NodeId],
    now: i64,
) {
    let mut cx = Context::new(state, evictor, "default", plugin.name(), now, nodes, None);
    plugin.run(&mut cx, nodes);
}
