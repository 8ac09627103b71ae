//! One module per upstream plugin, each with its args, defaults, validation, logic and tests.
//! Find a plugin by its upstream name: `LowNodeUtilization` lives in `low_node_utilization`.

pub mod default_evictor;
pub mod dominant_resource_fairness;
pub mod high_node_utilization;
pub mod low_node_utilization;
pub mod node_utilization;
pub mod pod_lifetime;
pub mod remove_duplicates;
pub mod remove_failed_pods;
pub mod remove_pods_having_too_many_restarts;
pub mod remove_pods_violating_inter_pod_anti_affinity;
pub mod remove_pods_violating_node_affinity;
pub mod remove_pods_violating_node_taints;
pub mod remove_pods_violating_topology_spread_constraint;
pub mod shared;

use crate::framework::Plugin;
use crate::policy::ArgsError;

/// Builds a strategy plugin from its name and args, validating the args.
pub fn build(name: &str, args: &serde_json::Value) -> Result<Box<dyn Plugin>, ArgsError> {
    match name {
        low_node_utilization::NAME => Ok(Box::new(low_node_utilization::LowNodeUtilization::new(args)?)),
        remove_duplicates::NAME => Ok(Box::new(remove_duplicates::RemoveDuplicates::new(args)?)),
        remove_pods_violating_topology_spread_constraint::NAME => Ok(Box::new(
            remove_pods_violating_topology_spread_constraint::RemovePodsViolatingTopologySpreadConstraint::new(args)?,
        )),
        high_node_utilization::NAME => Ok(Box::new(high_node_utilization::HighNodeUtilization::new(args)?)),
        remove_pods_violating_node_taints::NAME => Ok(Box::new(
            remove_pods_violating_node_taints::RemovePodsViolatingNodeTaints::new(args)?,
        )),
        remove_pods_violating_node_affinity::NAME => Ok(Box::new(
            remove_pods_violating_node_affinity::RemovePodsViolatingNodeAffinity::new(args)?,
        )),
        remove_pods_violating_inter_pod_anti_affinity::NAME => Ok(Box::new(
            remove_pods_violating_inter_pod_anti_affinity::RemovePodsViolatingInterPodAntiAffinity::new(args)?,
        )),
        pod_lifetime::NAME => Ok(Box::new(pod_lifetime::PodLifeTime::new(args)?)),
        remove_failed_pods::NAME => Ok(Box::new(remove_failed_pods::RemoveFailedPods::new(args)?)),
        remove_pods_having_too_many_restarts::NAME => Ok(Box::new(
            remove_pods_having_too_many_restarts::RemovePodsHavingTooManyRestarts::new(args)?,
        )),
        n => Err(ArgsError::new("", format!("unknown plugin {n:?}"))),
    }
}
