//! RemoveFailedPods (deschedule): evicts pods in the `Failed` phase, so their controllers can
//! replace them and the API stops holding them, as upstream's
//! `pkg/framework/plugins/removefailedpods`.
//!
//! Followed: the newest upstream `failedpods.go` stored, which delegates to PodLifeTime
//! (`podlifetime.NewAs` with a `phase == Failed` filter, args converted by `toLifeTimeArgs`),
//! with `types.go` (plus `exitCodes`), `defaults.go` and `validation.go`. Here too the
//! selection, order and eviction loop are PodLifeTime's ([`PodLifeTime::delegate`]), over
//! converted args ([`RemoveFailedPodsArgs::to_pod_life_time_args`]):
//! - Only `Failed` pods, created more than `minPodLifetimeSeconds` ago (strictly; default
//!   3600 when unset or null, as `defaults.go`; `0` for any age).
//! - `reasons` become PodLifeTime `states`: a pod matches when its phase, its `status.reason`,
//!   or the waiting or terminated reason of an application container (of an init container
//!   too with `includingInitContainers`) is listed. Unlike PodLifeTime's `states`, any value
//!   is accepted, as upstream validates only `namespaces` and `labelSelector`.
//! - `exitCodes`: the exit code of a terminated application container, or of an init
//!   container with `includingInitContainers`.
//! - `excludeOwnerKinds` become `ownerKinds.exclude`: pods with an owner of a listed kind stay.
//! - Every failed pod bound to the nodes is looked at (failed pods hold no resources, so
//!   evicting one frees nothing for later plugins; the planning state only moves the
//!   requests of active pods), in `namespaces` and matching `labelSelector`, that passes the
//!   evictor's Filter and PreEvictionFilter as upstream applies them: bare failed pods stay
//!   under the default `FailedBarePods` protection, and with `nodeFit` a failed pod needs
//!   room on another node like any other.
//! - Oldest first across all nodes, ties by namespace/name. Limits: a node limit skips that
//!   node's remaining pods, the total limit ends the plugin, other refusals skip the pod.
//!
//! Where this differs from upstream, knowingly:
//! - PodLifeTime's differences apply: the PreEvictionFilter is checked just before each
//!   eviction against the plan so far, ties in the order go by namespace/name, validation
//!   reports the first invalid field only.
//! - An empty `reasons` entry is refused with its path: upstream would match it against every
//!   pod or container without a reason, so nearly every failed pod.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Context, Plugin};
use crate::labels::LabelSelectorSpec;
use crate::plugins::pod_lifetime::{OwnerKinds, PodLifeTime, PodLifeTimeArgs, Wording};
use crate::plugins::shared::{Namespaces, PodScope};
use crate::policy::null_as_default;
use crate::snapshot::{NodeId, Phase};
use serde::{Deserialize, Serialize};

/// The plugin's name in a policy.
pub const NAME: &str = "RemoveFailedPods";

/// The registry entry: a `deschedule` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::deschedule::<RemoveFailedPods>(NAME);

/// `minPodLifetimeSeconds` when unset (upstream's `SetDefaults_RemoveFailedPodsArgs`).
pub(crate) const DEFAULT_MIN_POD_LIFETIME_SECONDS: u64 = 3600;

/// `RemoveFailedPodsArgs`. No args at all: every failed pod older than an hour.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RemoveFailedPodsArgs {
    /// `namespaces`: the namespaces whose pods may be evicted (include or exclude; None: all).
    pub namespaces: Option<Namespaces>,
    /// `labelSelector`: only pods whose labels match may be evicted (None: any pod).
    pub label_selector: Option<LabelSelectorSpec>,
    /// Owner kinds whose pods stay.
    #[serde(deserialize_with = "null_as_default")]
    pub exclude_owner_kinds: Vec<String>,
    /// Pods created more than this many seconds ago; None until defaulted.
    pub min_pod_lifetime_seconds: Option<u64>,
    /// Phase, pod status reasons, container waiting or terminated reasons (any one).
    #[serde(deserialize_with = "null_as_default")]
    pub reasons: Vec<String>,
    /// Exit codes of terminated containers (any one).
    #[serde(deserialize_with = "null_as_default")]
    pub exit_codes: Vec<i32>,
    /// Also look at init containers for `reasons` and `exitCodes`.
    #[serde(deserialize_with = "null_as_default")]
    pub including_init_containers: bool,
}

impl PluginArgs for RemoveFailedPodsArgs {
    /// Upstream's defaults: `minPodLifetimeSeconds` 3600 when unset.
    fn set_defaults(&mut self) {
        self.min_pod_lifetime_seconds
            .get_or_insert(DEFAULT_MIN_POD_LIFETIME_SECONDS);
    }

    /// Upstream's `ValidateRemoveFailedPodsArgs`, plus empty `reasons`, with the field's path
    /// in every error.
    fn validate(&self) -> Result<(), ArgsError> {
        PodScope::new(self.namespaces.as_ref(), self.label_selector.as_ref())?;
        if let Some(i) = self.reasons.iter().position(|r| r.is_empty()) {
            return Err(ArgsError::new(
                format!("reasons[{i}]"),
                "an empty reason would match every pod and container without a reason, so nearly every failed pod; give a reason such as NodeAffinity or OOMKilled, or remove the entry",
            ));
        }
        Ok(())
    }
}

impl RemoveFailedPodsArgs {
    /// Upstream's `toLifeTimeArgs`: the PodLifeTime args this plugin delegates with.
    pub(crate) fn to_pod_life_time_args(&self) -> PodLifeTimeArgs {
        PodLifeTimeArgs {
            namespaces: self.namespaces.clone(),
            label_selector: self.label_selector.clone(),
            owner_kinds: (!self.exclude_owner_kinds.is_empty()).then(|| OwnerKinds {
                include: Vec::new(),
                exclude: self.exclude_owner_kinds.clone(),
            }),
            max_pod_life_time_seconds: self.min_pod_lifetime_seconds,
            states: self.reasons.clone(),
            conditions: Vec::new(),
            exit_codes: self.exit_codes.clone(),
            including_init_containers: self.including_init_containers,
            including_ephemeral_containers: false,
        }
    }
}

const WORDING: Wording = Wording {
    prefix: "pod failed",
    age_field: "minPodLifetimeSeconds",
    age_reached_at_threshold: true,
};

/// A validated RemoveFailedPods plugin: PodLifeTime restricted to failed pods.
#[derive(Debug, Clone)]
pub struct RemoveFailedPods {
    args: RemoveFailedPodsArgs,
    delegate: PodLifeTime,
}

impl FromArgs for RemoveFailedPods {
    type Args = RemoveFailedPodsArgs;

    fn from_args(args: RemoveFailedPodsArgs) -> Result<Self, ArgsError> {
        let delegate =
            PodLifeTime::delegate(args.to_pod_life_time_args(), Some(Phase::Failed), WORDING)?;
        Ok(RemoveFailedPods { args, delegate })
    }
}

impl RemoveFailedPods {
    /// The args, defaulted.
    pub fn args(&self) -> &RemoveFailedPodsArgs {
        &self.args
    }
}

impl Plugin for RemoveFailedPods {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        self.delegate.run(cx, nodes);
    }
}

#[cfg(test)]
mod tests;
