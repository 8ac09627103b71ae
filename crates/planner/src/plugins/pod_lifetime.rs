//! PodLifeTime (deschedule): evicts pods that have lived too long, or that sit in a given
//! state, condition or exit code, as upstream's `pkg/framework/plugins/podlifetime`.
//!
//! Followed: the newest upstream `pod_lifetime.go`, `types.go`, `validation.go` and README
//! stored (v0.36's args, with `conditions`, `exitCodes` and `ownerKinds`, and the `NewAs`
//! entry that RemoveFailedPods delegates through, here [`PodLifeTime::delegate`]).
//! - Criteria: `maxPodLifeTimeSeconds` (strictly older than), `states`, `conditions` and
//!   `exitCodes`; at least one must be set. Every criterion set must hold (AND); within
//!   `states`, `conditions` and `exitCodes` one matching entry is enough (OR).
//! - `states` matches the pod phase, `status.reason`, and the waiting or terminated reason of
//!   an application container, of an init container with `includingInitContainers`, of an
//!   ephemeral container with `includingEphemeralContainers`. Only the values upstream
//!   allows are accepted ([`ALLOWED_STATES`]).
//! - `conditions`: an entry ANDs the fields it sets (`type`, `status`, `reason`,
//!   `minTimeSinceLastTransitionSeconds`) against one `status.conditions` entry, and must set
//!   at least one. With a minimum time, a condition without `lastTransitionTime` (or with one
//!   in the future) does not match.
//! - `exitCodes`: the exit code of a terminated application container, or of an init
//!   container with `includingInitContainers` (never of ephemeral containers, as upstream).
//! - `ownerKinds`: `include` keeps only pods with an owner of a listed kind (never bare
//!   pods), `exclude` drops pods with one; at most one of the two.
//! - Every pod bound to the nodes is looked at, whatever its phase (upstream's
//!   `ListAllPodsOnANode`, so Succeeded and Failed pods too), in `namespaces` and matching
//!   `labelSelector`, that passes the evictor's Filter and PreEvictionFilter.
//! - Order: the selected pods of all nodes together, oldest first: by the most recent
//!   `lastTransitionTime` among the conditions matching a `conditions` entry that carries
//!   `minTimeSinceLastTransitionSeconds`, otherwise by creation time (the README's order).
//! - Limits: a node eviction limit skips that node's remaining pods, the cycle's total limit
//!   ends the plugin, any other refusal (namespace limit, disruption budget) skips the pod.
//!
//! Where this differs from upstream, knowingly:
//! - Ties in the order go by namespace/name; Go's unstable sort leaves them to chance. The
//!   stored `pod_lifetime.go` defines the transition-time order (`getRelevantTime`) but still
//!   sorts by creation time; the README's transition-time order is what is done here.
//! - The PreEvictionFilter (nodeFit) is checked just before each eviction, against the plan
//!   so far, rather than when the node's pods are listed.
//! - A `conditions[].status` other than `True`, `False` or `Unknown` is refused with its path;
//!   upstream accepts it and it never matches.
//! - Validation reports the first invalid field, with its path; upstream aggregates them.
//! - A pod without a known phase counts as `Unknown` in the snapshot, so `states: [Unknown]`
//!   matches it; upstream matches an empty phase against nothing.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Attempt, Context, Plugin};
use crate::labels::LabelSelectorSpec;
use crate::plugins::shared::{each_one_of, selector_arg, IncludeExclude, Namespaces, PodScope};
use crate::policy::null_as_default;
use crate::snapshot::{ConditionStatus, ContainerStatus, NodeId, Phase, Pod, PodCondition, PodId};
use serde::{Deserialize, Serialize};

/// The plugin's name in a policy.
pub const NAME: &str = "PodLifeTime";

/// The registry entry: a `deschedule` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::deschedule::<PodLifeTime>(NAME);

/// The `states` upstream's validation accepts, sorted as its error lists them: pod phases,
/// pod status reasons, container waiting reasons and container terminated reasons.
pub(crate) const ALLOWED_STATES: &[&str] = &[
    "Completed",
    "ContainerCannotRun",
    "ContainerCreating",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "DeadlineExceeded",
    "ErrImagePull",
    "Error",
    "Evicted",
    "Failed",
    "ImagePullBackOff",
    "InvalidImageName",
    "NodeAffinity",
    "NodeLost",
    "OOMKilled",
    "Pending",
    "PodInitializing",
    "Running",
    "Shutdown",
    "StartError",
    "Succeeded",
    "UnexpectedAdmissionError",
    "Unknown",
];

/// `PodLifeTimeArgs`. At least one of `maxPodLifeTimeSeconds`, `states`, `conditions` and
/// `exitCodes` must be set; the others only narrow the pods those select.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodLifeTimeArgs {
    /// `namespaces`: the namespaces whose pods may be evicted (include or exclude; None: all).
    pub namespaces: Option<Namespaces>,
    /// `labelSelector`: only pods whose labels match may be evicted (None: any pod).
    pub label_selector: Option<LabelSelectorSpec>,
    /// `ownerKinds`: the owner kinds whose pods may be evicted (include or exclude; None: all).
    pub owner_kinds: Option<OwnerKinds>,
    /// Pods created more than this many seconds ago.
    pub max_pod_life_time_seconds: Option<u64>,
    /// Pod phases, pod status reasons, container waiting or terminated reasons (any one).
    #[serde(deserialize_with = "null_as_default")]
    pub states: Vec<String>,
    /// Pod condition filters (any one).
    #[serde(deserialize_with = "null_as_default")]
    pub conditions: Vec<PodConditionFilter>,
    /// Exit codes of terminated containers (any one).
    #[serde(deserialize_with = "null_as_default")]
    pub exit_codes: Vec<i32>,
    /// Also look at init containers for `states` and `exitCodes`.
    #[serde(deserialize_with = "null_as_default")]
    pub including_init_containers: bool,
    /// Also look at ephemeral containers for `states`.
    #[serde(deserialize_with = "null_as_default")]
    pub including_ephemeral_containers: bool,
}

/// `ownerKinds: {include: [...]}` or `{exclude: [...]}`, never both.
pub(crate) type OwnerKinds = IncludeExclude;

/// Whether a pod with these owners is in scope of `ownerKinds`.
fn owners_allowed(kinds: &OwnerKinds, pod: &Pod) -> bool {
    kinds.allows_by(|listed| {
        pod.owners
            .iter()
            .any(|o| listed.iter().any(|k| *k == *o.kind))
    })
}

/// `PodConditionFilter`: matches one pod condition on the fields it sets (unset: empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodConditionFilter {
    /// `type`: the condition's type.
    #[serde(rename = "type", deserialize_with = "null_as_default")]
    pub kind: String,
    /// `status`: the condition's status (`True`, `False`, `Unknown`).
    #[serde(deserialize_with = "null_as_default")]
    pub status: String,
    /// `reason`: the condition's reason.
    #[serde(deserialize_with = "null_as_default")]
    pub reason: String,
    /// The condition must have last transitioned at least this many seconds ago.
    pub min_time_since_last_transition_seconds: Option<u64>,
}

impl PodConditionFilter {
    fn is_empty(&self) -> bool {
        self.kind.is_empty()
            && self.status.is_empty()
            && self.reason.is_empty()
            && self.min_time_since_last_transition_seconds.is_none()
    }

    /// Upstream's `matchesConditionFields`: type, status and reason, those that are set.
    fn matches_fields(&self, c: &PodCondition) -> bool {
        (self.kind.is_empty() || *c.kind == *self.kind)
            && (self.status.is_empty() || c.status.as_str() == self.status)
            && (self.reason.is_empty() || c.reason.as_deref() == Some(self.reason.as_str()))
    }

    /// The fields, and the time since the last transition when a minimum is set.
    fn matches(&self, c: &PodCondition, now: i64) -> bool {
        if !self.matches_fields(c) {
            return false;
        }
        match self.min_time_since_last_transition_seconds {
            None => true,
            Some(min) => c
                .last_transition
                .is_some_and(|t| u64::try_from(now - t).is_ok_and(|idle| idle >= min)),
        }
    }
}

impl PluginArgs for PodLifeTimeArgs {
    /// Upstream's `ValidatePodLifeTimeArgs`, with the field's path in every error.
    fn validate(&self) -> Result<(), ArgsError> {
        if let Some(ns) = &self.namespaces {
            ns.validate("namespaces")?;
        }
        if let Some(ok) = &self.owner_kinds {
            ok.validate_listing("ownerKinds", "owner kinds")?;
        }
        selector_arg(self.label_selector.as_ref(), "labelSelector")?;
        each_one_of("states", &self.states, ALLOWED_STATES, |s| {
            format!(
                "{s:?} is not a state PodLifeTime can match; allowed (pod phases, pod status reasons, container waiting and terminated reasons): {}",
                ALLOWED_STATES.join(", ")
            )
        })?;
        for (i, c) in self.conditions.iter().enumerate() {
            if c.is_empty() {
                return Err(ArgsError::new(
                    format!("conditions[{i}]"),
                    "at least one of type, status, reason or minTimeSinceLastTransitionSeconds must be set; give the fields the condition must match, or remove the entry",
                ));
            }
            if !c.status.is_empty() && ConditionStatus::parse(&c.status).is_none() {
                return Err(ArgsError::new(
                    format!("conditions[{i}].status"),
                    format!(
                        "{:?} is not a condition status and would match no condition; allowed: True, False, Unknown",
                        c.status
                    ),
                ));
            }
        }
        let has_criterion = self.max_pod_life_time_seconds.is_some()
            || !self.states.is_empty()
            || !self.conditions.is_empty()
            || !self.exit_codes.is_empty();
        if !has_criterion {
            return Err(ArgsError::new(
                "",
                "PodLifeTime needs at least one filtering criterion: set maxPodLifeTimeSeconds, states, conditions or exitCodes (namespaces, labelSelector and ownerKinds only narrow the pods those select)",
            ));
        }
        Ok(())
    }
}

/// How a plugin delegating to PodLifeTime words its eviction reasons, so they name its own
/// args.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wording {
    /// Starts every reason.
    pub prefix: &'static str,
    /// The arg holding the age threshold.
    pub age_field: &'static str,
    /// Whether a pod exactly as old as the threshold passes it (RemoveFailedPods' minimum
    /// age: upstream keeps a pod only while `age < min`), or must be older (PodLifeTime's
    /// maximum: upstream evicts once `age > max`).
    pub age_reached_at_threshold: bool,
}

const WORDING: Wording = Wording {
    prefix: "PodLifeTime criteria met",
    age_field: "maxPodLifeTimeSeconds",
    age_reached_at_threshold: false,
};

/// A validated PodLifeTime plugin, or the PodLifeTime behind a delegating plugin.
#[derive(Debug, Clone)]
pub struct PodLifeTime {
    args: PodLifeTimeArgs,
    scope: PodScope,
    /// Upstream's extra `NewAs` filter: RemoveFailedPods requires the Failed phase.
    required_phase: Option<Phase>,
    wording: Wording,
}

impl FromArgs for PodLifeTime {
    type Args = PodLifeTimeArgs;

    fn from_args(args: PodLifeTimeArgs) -> Result<Self, ArgsError> {
        Self::delegate(args, None, WORDING)
    }
}

impl PodLifeTime {
    /// Upstream's `NewAs`: PodLifeTime over args the caller has validated its own way
    /// (PodLifeTime's validation is not applied), with a required phase ANDed in.
    pub(crate) fn delegate(
        args: PodLifeTimeArgs,
        required_phase: Option<Phase>,
        wording: Wording,
    ) -> Result<Self, ArgsError> {
        let scope = PodScope::new(args.namespaces.as_ref(), args.label_selector.as_ref())?;
        Ok(PodLifeTime {
            args,
            scope,
            required_phase,
            wording,
        })
    }

    /// The plugin's args.
    pub fn args(&self) -> &PodLifeTimeArgs {
        &self.args
    }

    /// Where a `states` entry matches the pod, if one does.
    fn matched_state(&self, pod: &Pod) -> Option<String> {
        let listed = |s: &str| self.args.states.iter().any(|x| x == s);
        let phase = pod.phase.as_str();
        if listed(phase) {
            return Some(format!("phase {phase}"));
        }
        if let Some(r) = pod.status().reason.as_deref().filter(|r| listed(r)) {
            return Some(format!("status reason {r}"));
        }
        for (what, statuses) in self.container_groups(pod, true) {
            for cs in statuses {
                if let Some(r) = cs.waiting_reason().filter(|r| listed(r)) {
                    return Some(format!("{what} waiting with reason {r}"));
                }
                if let Some(r) = cs.terminated_reason().filter(|r| listed(r)) {
                    return Some(format!("{what} terminated with reason {r}"));
                }
            }
        }
        None
    }

    /// The container statuses looked at: application containers, then init containers with
    /// `includingInitContainers`, then ephemeral ones with `includingEphemeralContainers` when
    /// `ephemeral` allows them.
    fn container_groups<'p>(
        &self,
        pod: &'p Pod,
        ephemeral: bool,
    ) -> impl Iterator<Item = (&'static str, &'p [ContainerStatus])> {
        let s = pod.status();
        [
            ("container", &s.containers[..], true),
            (
                "init container",
                &s.init_containers[..],
                self.args.including_init_containers,
            ),
            (
                "ephemeral container",
                &s.ephemeral_containers[..],
                ephemeral && self.args.including_ephemeral_containers,
            ),
        ]
        .into_iter()
        .filter(|g| g.2)
        .map(|(what, statuses, _)| (what, statuses))
    }

    /// The first condition matching a `conditions` entry, described.
    fn matched_condition(&self, pod: &Pod, now: i64) -> Option<String> {
        self.args.conditions.iter().find_map(|f| {
            let c = pod.status().conditions.iter().find(|c| f.matches(c, now))?;
            let mut s = format!("condition {}={}", c.kind, c.status.as_str());
            if let Some(r) = &c.reason {
                s.push_str(&format!(" ({r})"));
            }
            if let (Some(min), Some(t)) =
                (f.min_time_since_last_transition_seconds, c.last_transition)
            {
                s.push_str(&format!(" unchanged for {}s >= {min}s", now - t));
            }
            Some(s)
        })
    }

    /// The first exit code listed in `exitCodes`, described.
    fn matched_exit_code(&self, pod: &Pod) -> Option<String> {
        self.container_groups(pod, false)
            .find_map(|(what, statuses)| {
                statuses
                    .iter()
                    .filter_map(ContainerStatus::exit_code)
                    .find(|c| self.args.exit_codes.contains(c))
                    .map(|c| format!("{what} exited with code {c}"))
            })
    }

    /// Upstream's filter chain, without the evictor's: None when the pod is not selected,
    /// else what matched, for the eviction reason.
    fn selects(&self, pod: &Pod, now: i64) -> Option<Vec<String>> {
        if self.required_phase.is_some_and(|p| p != pod.phase) {
            return None;
        }
        if !self.scope.allows(pod)
            || !self
                .args
                .owner_kinds
                .as_ref()
                .is_none_or(|o| owners_allowed(o, pod))
        {
            return None;
        }
        let mut matched = Vec::new();
        if let Some(max) = self.args.max_pod_life_time_seconds {
            let age = now - pod.created;
            let at = self.wording.age_reached_at_threshold;
            if !u64::try_from(age).is_ok_and(|a| a > max || (at && a == max)) {
                return None;
            }
            let op = if at { ">=" } else { ">" };
            matched.push(format!("age {age}s {op} {} {max}", self.wording.age_field));
        }
        if !self.args.states.is_empty() {
            matched.push(self.matched_state(pod)?);
        }
        if !self.args.conditions.is_empty() {
            matched.push(self.matched_condition(pod, now)?);
        }
        if !self.args.exit_codes.is_empty() {
            matched.push(self.matched_exit_code(pod)?);
        }
        Some(matched)
    }

    /// Upstream's `getRelevantTime`: the most recent `lastTransitionTime` among the pod's
    /// conditions matching (on type, status and reason) a `conditions` entry that carries a
    /// minimum time; otherwise the creation time.
    fn relevant_time(&self, pod: &Pod) -> i64 {
        self.args
            .conditions
            .iter()
            .filter(|f| f.min_time_since_last_transition_seconds.is_some())
            .flat_map(|f| {
                pod.status()
                    .conditions
                    .iter()
                    .filter(move |c| f.matches_fields(c))
            })
            .filter_map(|c| c.last_transition)
            .max()
            .unwrap_or(pod.created)
    }
}

impl Plugin for PodLifeTime {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        // (relevant time, pod, node, what matched): pod ids follow namespace/name order.
        let mut selected: Vec<(i64, PodId, NodeId, Vec<String>)> = Vec::new();
        for &node_id in nodes {
            for pod_id in cx.pods_on_node(node_id) {
                let pod = snap.pod(pod_id);
                let Some(matched) = self.selects(pod, cx.now()) else {
                    continue;
                };
                if let Err(why) = cx.filter(pod_id) {
                    tracing::trace!(plugin = cx.plugin(), pod = %pod.key(), %why, "not evictable");
                    continue;
                }
                selected.push((self.relevant_time(pod), pod_id, node_id, matched));
            }
        }
        selected.sort_by_key(|s| (s.0, s.1));
        let mut node_done = vec![false; snap.nodes.len()];
        for (_, pod_id, node_id, matched) in selected {
            if node_done[node_id.index()] {
                continue;
            }
            let reason = if matched.is_empty() {
                self.wording.prefix.to_string()
            } else {
                format!("{}: {}", self.wording.prefix, matched.join("; "))
            };
            match cx.try_evict_checked(pod_id, reason) {
                Attempt::SkipNode => node_done[node_id.index()] = true,
                Attempt::Stop => return,
                Attempt::Planned { .. } | Attempt::SkipPod => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
