//! RemovePodsViolatingNodeTaints (deschedule): evicts pods from nodes whose `NoSchedule`
//! taints they do not tolerate, typically because the taint was added after the pod was
//! placed, as upstream's `pkg/framework/plugins/removepodsviolatingnodetaints`.
//!
//! Followed: the newest upstream `node_taint.go`, `types.go` and `validation.go` stored
//! (with `includedTaints`, the error handling of the limits and `ListPodsOnANode`).
//! - Taints looked at: effect `NoSchedule`, and `PreferNoSchedule` with
//!   `includePreferNoSchedule: true`. `NoExecute` taints are left to Kubernetes, whose taint
//!   manager evicts such pods itself.
//! - `excludedTaints` drops taints from that set, `includedTaints` keeps only the listed
//!   ones; both lists hold `key` (any value) or `key=value` entries, and at most one of the
//!   two may be given. A `key=value` entry never matches a taint with an empty value (as
//!   upstream). An explicit empty `includedTaints: []` includes no taint at all, so nothing
//!   is evicted (upstream's nil-versus-empty behaviour); leaving it out includes every taint.
//! - A pod is evicted when some looked-at taint of its node is tolerated by none of its
//!   tolerations. Only active pods (not Succeeded or Failed) are considered, in `namespaces`
//!   (include or exclude) and matching `labelSelector`, that pass the evictor's Filter and
//!   PreEvictionFilter.
//! - Limits: a node eviction limit ends that node, the cycle's total limit ends the plugin,
//!   any other refusal (namespace limit, disruption budget) skips the pod.
//!
//! Where this differs from upstream, knowingly:
//! - Pods of a node go in the framework's eviction order (lowest priority first, then QoS,
//!   then namespace/name) instead of informer order, so limits cut deterministically and
//!   spare the more important pods.
//! - The PreEvictionFilter (nodeFit) is checked just before each eviction, against the plan
//!   so far, rather than when the node's pods are listed.
//! - Entries of `excludedTaints` and `includedTaints` that can never match a taint (empty,
//!   an empty key, `key=` with no value, or characters a taint key or value cannot have,
//!   such as `key:NoSchedule`) are refused with the entry's path; upstream silently ignores
//!   them.
//! - `cordon` (newer upstream: cordon a node before evicting from it) is refused: this
//!   descheduler never writes to nodes.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Attempt, Context, Plugin};
use crate::labels::{self, LabelSelectorSpec};
use crate::plugins::shared::{Namespaces, PodScope};
use crate::policy::null_as_default;
use crate::sim;
use crate::snapshot::{NodeId, PodId, Taint, TaintEffect};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The plugin's name in a policy.
pub const NAME: &str = "RemovePodsViolatingNodeTaints";

/// The registry entry: a `deschedule` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::deschedule::<RemovePodsViolatingNodeTaints>(NAME);

/// `RemovePodsViolatingNodeTaintsArgs`. No args at all: every pod not tolerating a
/// `NoSchedule` taint of its node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RemovePodsViolatingNodeTaintsArgs {
    /// `namespaces`: the namespaces whose pods may be evicted (include or exclude; None: all).
    pub namespaces: Option<Namespaces>,
    /// `labelSelector`: only pods whose labels match may be evicted (None: any pod).
    pub label_selector: Option<LabelSelectorSpec>,
    /// Also look at `PreferNoSchedule` taints.
    #[serde(deserialize_with = "null_as_default")]
    pub include_prefer_no_schedule: bool,
    /// Taints (`key` or `key=value`) to ignore.
    #[serde(deserialize_with = "null_as_default")]
    pub excluded_taints: Vec<String>,
    /// Only these taints (`key` or `key=value`); None: every taint.
    pub included_taints: Option<Vec<String>>,
    /// Newer upstream's node cordoning; refused when true.
    #[serde(deserialize_with = "null_as_default")]
    pub cordon: bool,
}

impl PluginArgs for RemovePodsViolatingNodeTaintsArgs {
    /// Upstream's `ValidateRemovePodsViolatingNodeTaintsArgs`, plus the form of each taint
    /// entry, with the field's path in every error.
    fn validate(&self) -> Result<(), ArgsError> {
        PodScope::new(self.namespaces.as_ref(), self.label_selector.as_ref())?;
        let included = self.included_taints.as_deref().unwrap_or_default();
        if !self.excluded_taints.is_empty() && !included.is_empty() {
            return Err(ArgsError::new(
                "includedTaints",
                "either includedTaints or excludedTaints can be set, but not both; list the taints to look at, or the ones to ignore",
            ));
        }
        for (field, list) in [
            ("excludedTaints", &self.excluded_taints[..]),
            ("includedTaints", included),
        ] {
            for (i, entry) in list.iter().enumerate() {
                validate_taint_entry(entry)
                    .map_err(|why| ArgsError::new(format!("{field}[{i}]"), why))?;
            }
        }
        if self.cordon {
            return Err(ArgsError::new(
                "cordon",
                "cordoning nodes is not supported: this descheduler never writes to nodes; cordon them with kubectl cordon, or remove cordon",
            ));
        }
        Ok(())
    }
}

/// An entry of `excludedTaints` or `includedTaints`: `key` or `key=value`, in the forms a
/// taint key (a qualified name) and value (a label value) can take.
fn validate_taint_entry(entry: &str) -> Result<(), String> {
    let (key, value) = match entry.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (entry, None),
    };
    if key.is_empty() {
        return Err(format!("{entry:?} has no taint key; give key or key=value"));
    }
    if !labels::is_qualified_name(key) {
        return Err(format!(
            "{key:?} is not a valid taint key (a qualified name such as example.com/dedicated); give key or key=value, without the effect"
        ));
    }
    match value {
        Some("") => Err(format!(
            "{entry:?} has an empty value and would match no taint; give {key:?} alone to match the key whatever its value"
        )),
        Some(v) if !labels::is_name_part(v) => Err(format!(
            "{v:?} is not a valid taint value (up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
        )),
        _ => Ok(()),
    }
}

/// Whether a taint is named by a list of `key` / `key=value` entries (upstream's set lookup
/// of `key`, or of `key=value` when the taint has a value).
fn listed(list: &[String], taint: &Taint) -> bool {
    list.iter().any(|e| match e.split_once('=') {
        None => *e == *taint.key,
        Some((k, v)) => !taint.value.is_empty() && k == &*taint.key && v == &*taint.value,
    })
}

/// A taint as kubectl prints it: `key=value:Effect`, or `key:Effect` without a value.
struct ShowTaint<'a>(&'a Taint);

impl fmt::Display for ShowTaint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        if t.value.is_empty() {
            write!(f, "{}:{:?}", t.key, t.effect)
        } else {
            write!(f, "{}={}:{:?}", t.key, t.value, t.effect)
        }
    }
}

/// A validated RemovePodsViolatingNodeTaints plugin.
#[derive(Debug, Clone)]
pub struct RemovePodsViolatingNodeTaints {
    args: RemovePodsViolatingNodeTaintsArgs,
    scope: PodScope,
}

impl FromArgs for RemovePodsViolatingNodeTaints {
    type Args = RemovePodsViolatingNodeTaintsArgs;

    fn from_args(args: RemovePodsViolatingNodeTaintsArgs) -> Result<Self, ArgsError> {
        let scope = PodScope::new(args.namespaces.as_ref(), args.label_selector.as_ref())
            .expect("validated");
        Ok(RemovePodsViolatingNodeTaints { args, scope })
    }
}

impl RemovePodsViolatingNodeTaints {
    /// The plugin's args.
    pub fn args(&self) -> &RemovePodsViolatingNodeTaintsArgs {
        &self.args
    }

    /// Upstream's taint filter: the effects looked at, minus excluded, within included.
    fn looks_at(&self, taint: &Taint) -> bool {
        let effect = match taint.effect {
            TaintEffect::NoSchedule => true,
            TaintEffect::PreferNoSchedule => self.args.include_prefer_no_schedule,
            TaintEffect::NoExecute => false,
        };
        effect
            && !listed(&self.args.excluded_taints, taint)
            && self
                .args
                .included_taints
                .as_deref()
                .is_none_or(|inc| listed(inc, taint))
    }

    /// Whether the pod is in scope: active, in `namespaces`, matching `labelSelector`.
    fn in_scope(&self, cx: &Context<'_, '_>, id: PodId) -> bool {
        let pod = cx.snap().pod(id);
        pod.is_active() && self.scope.allows(pod)
    }
}

/// The first of `taints` the pod does not tolerate.
fn untolerated<'t>(cx: &Context<'_, '_>, id: PodId, taints: &[&'t Taint]) -> Option<&'t Taint> {
    let tolerations = &cx.snap().pod(id).tolerations;
    taints
        .iter()
        .copied()
        .find(|t| !sim::tolerated(tolerations, t))
}

impl Plugin for RemovePodsViolatingNodeTaints {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A taint the pod does not tolerate keeps new pods off the node: a hard constraint.
    fn repairs_hard_constraints(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        'nodes: for &node_id in nodes {
            let node = snap.node(node_id);
            let taints: Vec<&Taint> = node.taints.iter().filter(|t| self.looks_at(t)).collect();
            if taints.is_empty() {
                continue;
            }
            let mut violating: Vec<PodId> = cx
                .pods_on_node(node_id)
                .filter(|&p| self.in_scope(cx, p) && untolerated(cx, p, &taints).is_some())
                .collect();
            cx.sort_by_eviction_order(&mut violating);
            for pod_id in violating {
                let pod = snap.pod(pod_id);
                if let Err(why) = cx.filter(pod_id) {
                    tracing::trace!(pod = %pod.key(), %why, "not evictable");
                    continue;
                }
                let taint = untolerated(cx, pod_id, &taints).expect("violating pod");
                let reason = format!(
                    "pod does not tolerate taint {} of node {}",
                    ShowTaint(taint),
                    node.name
                );
                match cx.try_evict_checked(pod_id, reason) {
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
