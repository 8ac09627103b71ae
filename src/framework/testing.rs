//! The plugin test harness: one plugin run alone over a snapshot, as the planner would run it
//! first in a cycle.

use super::{Context, EvictorPlugin, Limits, PlannedEviction, PlanningState, Plugin};
use crate::snapshot::ClusterSnapshot;

/// [`run_alone`], returning the names of the pods it planned to evict, in plan order
/// (what plugin table tests compare).
pub fn run_alone_names(
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
pub fn run_alone(
    plugin: &dyn Plugin,
    snap: &ClusterSnapshot,
    evictor: &dyn EvictorPlugin,
    limits: Limits,
    now: i64,
) -> Vec<PlannedEviction> {
    let nodes = snap.ready_nodes(&Default::default());
    let mut state = PlanningState::new(snap, limits);
    let mut cx = Context {
        state: &mut state,
        evictor,
        profile: "default",
        plugin: plugin.name(),
        now,
        nodes: &nodes,
        order: None,
    };
    plugin.run(&mut cx, &nodes);
    state.into_parts().0
}
