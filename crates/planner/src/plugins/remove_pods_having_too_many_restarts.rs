//! RemovePodsHavingTooManyRestarts (deschedule): evicts pods whose containers have restarted
//! too often, typically because something about their node (a volume that fails to mount,
//! a setting the application trips over) keeps them crashing there, as upstream's
//! `pkg/framework/plugins/removepodshavingtoomanyrestarts`.
//!
//! Followed: the newest upstream `toomanyrestarts.go` (the one ending the plugin on the total
//! limit), `types.go`, `defaults.go` and `validation.go` stored.
//! - A pod's restarts are the sum of `restartCount` over its containers, plus its init
//!   containers with `includingInitContainers: true` (ephemeral containers never count). The
//!   pod qualifies when that sum is at least `podRestartThreshold` (upstream skips a pod only
//!   when `restarts < threshold`, so a pod exactly at the threshold goes).
//! - `states`, when not empty, keeps only pods in one of the states: the pod's phase
//!   (`Running`) or the waiting reason of one of its containers (`CrashLoopBackOff`); the init
//!   containers' waiting reasons count only with `includingInitContainers: true`.
//! - Only pods in `namespaces` (include or exclude) and matching `labelSelector`, that pass
//!   the evictor's Filter and PreEvictionFilter, are considered. Upstream lists the node's
//!   pods whatever their phase (`ListAllPodsOnANode`), so finished (Succeeded or Failed) pods
//!   with enough restarts go too, as long as the evictor allows them.
//! - Validation, in upstream's order: `namespaces` sets only one of include and exclude,
//!   `labelSelector` compiles, `podRestartThreshold` is at least 1 (it has no default, so it
//!   must be given), every entry of `states` is `Running` or `CrashLoopBackOff`.
//! - Limits: a node eviction limit ends that node, the cycle's total limit ends the plugin,
//!   any other refusal (namespace limit, disruption budget) skips the pod.
//!
//! Where this differs from upstream, knowingly:
//! - Pods of a node go in the framework's eviction order (lowest priority first, then QoS,
//!   then namespace/name) instead of informer order, so limits cut deterministically and
//!   spare the more important pods.
//! - The PreEvictionFilter (nodeFit) is checked just before each eviction, against the plan
//!   so far, rather than when the node's pods are listed.
//! - Validation stops at the first invalid field and names it (`states[1]`); upstream
//!   gathers every error into one message without paths.
//! - Restarts are summed in 64 bits; upstream's int32 sum could wrap for absurd counts.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Attempt, Context, Plugin};
use crate::labels::{LabelSelectorSpec, Selector};
use crate::plugins::shared::{each_one_of, Namespaces, PodScope};
use crate::policy::null_as_default;
use crate::snapshot::{NodeId, Phase, Pod, PodId};
use serde::{Deserialize, Serialize};

/// The plugin's name in a policy.
pub const NAME: &str = "RemovePodsHavingTooManyRestarts";

/// The registry entry: a `deschedule` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::deschedule::<RemovePodsHavingTooManyRestarts>(NAME);

/// The `states` upstream accepts: a pod phase and a container waiting reason.
const RUNNING: &str = "Running";
const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";

/// `RemovePodsHavingTooManyRestartsArgs`. `podRestartThreshold` must be given (at least 1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RemovePodsHavingTooManyRestartsArgs {
    /// `namespaces`: the namespaces whose pods may be evicted (include or exclude; None: all).
    pub namespaces: Option<Namespaces>,
    /// `labelSelector`: only pods whose labels match may be evicted (None: any pod).
    pub label_selector: Option<LabelSelectorSpec>,
    /// Restarts (summed over the pod's containers) from which a pod is evicted.
    #[serde(deserialize_with = "null_as_default")]
    pub pod_restart_threshold: i32,
    /// Count the init containers' restarts (and waiting reasons, for `states`) too.
    #[serde(deserialize_with = "null_as_default")]
    pub including_init_containers: bool,
    /// Only pods in one of these states (`Running`, `CrashLoopBackOff`); empty: any state.
    #[serde(deserialize_with = "null_as_default")]
    pub states: Vec<String>,
}

impl PluginArgs for RemovePodsHavingTooManyRestartsArgs {
    /// Upstream's `ValidateRemovePodsHavingTooManyRestartsArgs`, with the field's path in the
    /// error (the first one found, in upstream's order).
    fn validate(&self) -> Result<(), ArgsError> {
        if let Some(ns) = &self.namespaces {
            ns.validate("namespaces")?;
        }
        if let Some(s) = &self.label_selector {
            Selector::compile(s).map_err(|e| {
                ArgsError::new(
                    "labelSelector",
                    format!("failed to get label selectors from strategy's params: {e}"),
                )
            })?;
        }
        if self.pod_restart_threshold < 1 {
            return Err(ArgsError::new(
                "podRestartThreshold",
                format!(
                    "invalid PodsHavingTooManyRestarts threshold {}: it must be at least 1; set podRestartThreshold to the number of container restarts from which a pod is evicted",
                    self.pod_restart_threshold
                ),
            ));
        }
        each_one_of(
            "states",
            &self.states,
            &[RUNNING, CRASH_LOOP_BACK_OFF],
            |state| {
                format!(
                "states must be one of [{CRASH_LOOP_BACK_OFF} {RUNNING}], not {state:?}; use {RUNNING} (the pod phase) or {CRASH_LOOP_BACK_OFF} (a container's waiting reason), or leave states out to take pods in any state"
            )
            },
        )
    }
}

/// A pod phase as the API spells it.
fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Pending => "Pending",
        Phase::Running => "Running",
        Phase::Succeeded => "Succeeded",
        Phase::Failed => "Failed",
        Phase::Unknown => "Unknown",
    }
}

/// A validated RemovePodsHavingTooManyRestarts plugin.
#[derive(Debug, Clone)]
pub struct RemovePodsHavingTooManyRestarts {
    args: RemovePodsHavingTooManyRestartsArgs,
    scope: PodScope,
}

impl FromArgs for RemovePodsHavingTooManyRestarts {
    type Args = RemovePodsHavingTooManyRestartsArgs;

    fn from_args(args: RemovePodsHavingTooManyRestartsArgs) -> Result<Self, ArgsError> {
        let scope = PodScope::new(args.namespaces.as_ref(), args.label_selector.as_ref())
            .expect("validated");
        Ok(RemovePodsHavingTooManyRestarts { args, scope })
    }
}

impl RemovePodsHavingTooManyRestarts {
    /// The plugin's args.
    pub fn args(&self) -> &RemovePodsHavingTooManyRestartsArgs {
        &self.args
    }

    /// Upstream's `calcContainerRestartsFromStatuses` over the containers, plus the init
    /// containers when asked.
    fn restarts(&self, pod: &Pod) -> i64 {
        let sum = |statuses: &[crate::snapshot::ContainerStatus]| -> i64 {
            statuses.iter().map(|c| i64::from(c.restart_count)).sum()
        };
        let mut restarts = sum(&pod.status().containers);
        if self.args.including_init_containers {
            restarts += sum(&pod.status().init_containers);
        }
        restarts
    }

    /// The first of `states` the pod is in: its phase, or a container's waiting reason
    /// (init containers' too with `includingInitContainers`).
    fn matched_state<'p>(&self, pod: &'p Pod) -> Option<&'p str> {
        let states = &self.args.states;
        let phase = phase_name(pod.phase);
        if states.iter().any(|s| s == phase) {
            return Some(phase);
        }
        let init: &[_] = if self.args.including_init_containers {
            &pod.status().init_containers
        } else {
            &[]
        };
        pod.status()
            .containers
            .iter()
            .chain(init)
            .filter_map(|c| c.waiting_reason())
            .find(|r| states.iter().any(|s| s == r))
    }

    /// Whether the pod is in scope: in `namespaces`, matching `labelSelector`, with enough
    /// restarts and, when `states` is given, in one of them.
    fn in_scope(&self, pod: &Pod) -> bool {
        self.scope.allows(pod)
            && self.restarts(pod) >= i64::from(self.args.pod_restart_threshold)
            && (self.args.states.is_empty() || self.matched_state(pod).is_some())
    }

    /// The eviction reason: the restarts, the threshold, and the state that matched.
    fn reason(&self, pod: &Pod) -> String {
        let mut reason = format!(
            "pod has {} container restarts{}, at or above the threshold of {}",
            self.restarts(pod),
            if self.args.including_init_containers {
                " (init containers included)"
            } else {
                ""
            },
            self.args.pod_restart_threshold
        );
        if let Some(state) = self.matched_state(pod) {
            reason.push_str(&format!(", and is in state {state}"));
        }
        reason
    }
}

impl Plugin for RemovePodsHavingTooManyRestarts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        'nodes: for &node_id in nodes {
            let mut restarting: Vec<PodId> = cx
                .pods_on_node(node_id)
                .filter(|&p| self.in_scope(snap.pod(p)))
                .collect();
            cx.sort_by_eviction_order(&mut restarting);
            for pod_id in restarting {
                let pod = snap.pod(pod_id);
                if let Err(why) = cx.filter(pod_id) {
                    tracing::trace!(pod = %pod.key(), %why, "not evictable");
                    continue;
                }
                match cx.try_evict_checked(pod_id, self.reason(pod)) {
                    Attempt::SkipNode => continue 'nodes,
                    Attempt::Stop => return,
                    Attempt::Planned { .. } | Attempt::SkipPod => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
