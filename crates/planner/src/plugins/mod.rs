//! One module per upstream plugin, each with its args, defaults, validation, logic and tests.
//! Find a plugin by its upstream name: `PodLifeTime` lives in `pod_lifetime`; the two
//! utilization plugins live in `node_utilization` (as upstream's `nodeutilization/`), with the
//! code they share: `LowNodeUtilization` in `node_utilization::low`, `HighNodeUtilization` in
//! `node_utilization::high`.

pub mod default_evictor;
pub mod dominant_resource_fairness;
pub mod make_room_for_pending_pods;
pub mod node_utilization;
pub mod outcome_balance;
pub mod pod_lifetime;
pub mod remove_duplicates;
pub mod remove_failed_pods;
pub mod remove_pods_having_too_many_restarts;
pub mod remove_pods_violating_inter_pod_anti_affinity;
pub mod remove_pods_violating_node_affinity;
pub mod remove_pods_violating_node_taints;
pub mod remove_pods_violating_topology_spread_constraint;
pub mod shared;

#[cfg(test)]
mod surge_tests;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod whole_gang_tests;

use crate::framework::Registry;

/// Every plugin a policy may name, in the order error messages list them: the one table that
/// policy validation, the pipeline builder and the plugin table of docs/compatibility.md
/// follow. Adding a plugin is its module and one line here.
pub const REGISTRY: Registry = Registry::new(&[
    default_evictor::SPEC,
    node_utilization::low::SPEC,
    node_utilization::high::SPEC,
    remove_duplicates::SPEC,
    remove_pods_violating_topology_spread_constraint::SPEC,
    remove_pods_violating_inter_pod_anti_affinity::SPEC,
    remove_pods_violating_node_affinity::SPEC,
    remove_pods_violating_node_taints::SPEC,
    remove_pods_having_too_many_restarts::SPEC,
    pod_lifetime::SPEC,
    remove_failed_pods::SPEC,
    dominant_resource_fairness::SPEC,
    make_room_for_pending_pods::SPEC,
    outcome_balance::SPEC,
]);
