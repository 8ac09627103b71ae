//! DefaultEvictor: the Filter and PreEvictionFilter extension points every profile has.
//!
//! Check order, as upstream (`defaultevictor.go`), with one deliberate difference: mirror,
//! static and terminating pods are never evictable, even with the evict annotation (the
//! safety rules come first).
//! 1. mirror / static / terminating pods: never.
//! 2. gangs (`gangPolicy: SurplusOnly`, the default): a member of a gang (scheduler-plugins
//!    or Volcano PodGroup) only while its gang keeps minMember running members without it;
//!    never a member of a gang whose PodGroup is not in the snapshot. Not an upstream check;
//!    like 1, the evict annotation does not lift it. The planning state checks it again as
//!    each eviction is planned, counting the evictions planned so far. With
//!    `gangPolicy: WholeGang` a member goes only together with its whole gang, all or nothing
//!    (see [`crate::framework::Context::evict`]); a gang whose PodGroup is not in the
//!    snapshot still never goes.
//! 3. protections users write on pods, which the evict annotation does not lift either:
//!    `descheduler.alpha.kubernetes.io/do-not-evict-until` (an RFC 3339 time) protects the pod
//!    until then (an unreadable time protects it until fixed); with `honorDoNotDisrupt: true`
//!    (an extension, off by default as upstream has no such check), `karpenter.sh/do-not-disrupt:
//!    "true"` and `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` protect it.
//! 4. `descheduler.alpha.kubernetes.io/evict` annotation: evictable, skipping the rest.
//! 5. `noEvictionPolicy: Mandatory` and the prefer-no-eviction annotation: not evictable.
//! 6. podProtections (defaults PodsWithLocalStorage, DaemonSetPods, SystemCriticalPods,
//!    FailedBarePods; extras PodsWithPVC, PodsWithoutPDB, PodsWithResourceClaims,
//!    PodsWithPDBBlockingSingleReplicaOwner), or the deprecated booleans.
//! 7. priorityThreshold (only while SystemCriticalPods protection is on, as upstream).
//! 8. labelSelector, namespaceLabelSelector, minReplicas, minPodAge.
//!
//! PreEvictionFilter: with `nodeFit: true` the pod must fit some other Ready node of the
//! cluster (those matching the `nodeSelector` arg, when given: as upstream, not the policy's
//! nodeSelector), given what that node holds after the evictions planned so far.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{EvictorPlugin, MoveMode, Placement, PluginSpec};
use crate::labels::{LabelSelectorSpec, Selector};
use crate::plugins::shared::{each_one_of, selector_arg, PriorityThreshold};
use crate::policy::parse_duration;
use crate::snapshot::{
    ClusterSnapshot, DisruptionMode, NodeId, Phase, PodId, DO_NOT_EVICT_UNTIL_ANNOTATION,
    PROTECTED_UNTIL_UNREADABLE,
};
use serde::{Deserialize, Serialize};

/// The plugin's name in a policy.
pub const NAME: &str = "DefaultEvictor";

/// DefaultEvictor's args (upstream's `DefaultEvictorArgs`); every one has a default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DefaultEvictorArgs {
    /// `nodeSelector`: with `nodeFit`, the nodes a pod must fit on (None: every Ready node).
    pub node_selector: Option<String>,
    /// `labelSelector`: only pods whose labels match may be evicted (None: any pod).
    pub label_selector: Option<LabelSelectorSpec>,
    /// `namespaceLabelSelector`: only pods in namespaces whose labels match may be evicted (None:
    /// any namespace).
    pub namespace_label_selector: Option<LabelSelectorSpec>,
    /// `priorityThreshold`: pods at or above this priority (a value or a PriorityClass name) are
    /// not evicted, while the SystemCriticalPods protection is on.
    pub priority_threshold: Option<PriorityThreshold>,
    /// `nodeFit`: a pod is evicted only if it fits on another Ready node (default false).
    pub node_fit: bool,
    /// Where the placement simulator predicts an eviction's replacement lands. Unset (the
    /// default): under a plugin that moves load to targets (LowNodeUtilization on requests),
    /// an eviction is refused when its replacement may land back on the pod's own node or push
    /// the node it lands on over its target ([`destination_check`]); under a plugin that
    /// relocates pods (the topology spread plugin), when it may land back
    /// on the pod's own node. `true` asks more: a
    /// destination for every pod, another node (for LowNodeUtilization: one of its
    /// underutilized nodes that stays under the target thresholds). `false`: no check, as
    /// upstream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_check: Option<bool>,
    /// `minReplicas`: a pod whose owner has fewer pods than this is not evicted (0 or 1: no check).
    pub min_replicas: u32,
    /// `minPodAge`: a pod started less than this long ago (a duration such as `1h`) is not evicted.
    pub min_pod_age: Option<String>,
    /// `noEvictionPolicy`: `Preferred` (the default) or `Mandatory`, which makes the
    /// prefer-no-eviction annotation protect the pod.
    pub no_eviction_policy: Option<String>,
    /// `podProtections`: which kinds of pods are protected from eviction.
    pub pod_protections: PodProtectionsArgs,
    /// `evictLocalStoragePods` (deprecated): turns off the PodsWithLocalStorage protection.
    pub evict_local_storage_pods: bool,
    /// `evictDaemonSetPods` (deprecated): turns off the DaemonSetPods protection.
    pub evict_daemon_set_pods: bool,
    /// `evictSystemCriticalPods` (deprecated): turns off the SystemCriticalPods protection.
    pub evict_system_critical_pods: bool,
    /// `ignorePvcPods` (deprecated): turns on the PodsWithPVC protection.
    pub ignore_pvc_pods: bool,
    /// `ignorePodsWithoutPDB` (deprecated): turns on the PodsWithoutPDB protection.
    #[serde(rename = "ignorePodsWithoutPDB")]
    pub ignore_pods_without_pdb: bool,
    /// `evictFailedBarePods` (deprecated): turns off the FailedBarePods protection.
    pub evict_failed_bare_pods: bool,
    /// How gangs may be evicted: `SurplusOnly` (the default) or `WholeGang`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang_policy: Option<String>,
    /// `honorDoNotDisrupt` (an extension; default false, as upstream): the annotations other
    /// disruptors honour protect the pod, `karpenter.sh/do-not-disrupt: "true"` and
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub honor_do_not_disrupt: bool,
    /// `moveMode` (an extension): how a pod of a Deployment is moved. `Evict` (the default,
    /// as upstream), `SurgeWhenBlocked` (the replacement is made first where an eviction is
    /// forbidden by the pod's PodDisruptionBudget or would take the Deployment's only
    /// replica) or `Surge` (the replacement first for every Deployment that can be surged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_mode: Option<String>,
}

/// `podProtections`: the default protections to turn off and the extra ones to turn on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodProtectionsArgs {
    /// `extraEnabled`: extra protections to turn on (PodsWithPVC, PodsWithoutPDB,
    /// PodsWithResourceClaims, PodsWithPDBBlockingSingleReplicaOwner).
    pub extra_enabled: Vec<String>,
    /// `defaultDisabled`: default protections to turn off (PodsWithLocalStorage, DaemonSetPods,
    /// SystemCriticalPods, FailedBarePods).
    pub default_disabled: Vec<String>,
    /// `config`: settings of individual protections.
    pub config: Option<PodProtectionsConfig>,
}

/// `podProtections.config`: settings of individual protections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PodProtectionsConfig {
    /// `PodsWithPVC`: its settings; allowed only with PodsWithPVC in `extraEnabled`.
    #[serde(rename = "PodsWithPVC")]
    pub pods_with_pvc: Option<PodsWithPvcConfig>,
}

/// The PodsWithPVC protection's settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodsWithPvcConfig {
    /// `protectedStorageClasses`: the storage classes whose claims protect a pod. Storage classes
    /// are not in the snapshot, so every claim protects its pod whatever this lists.
    pub protected_storage_classes: Vec<ProtectedStorageClass>,
}

/// A storage class named in `protectedStorageClasses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectedStorageClass {
    /// `name`: the storage class's name.
    pub name: String,
}

/// Pod protections, each on or off after defaults, extras and deprecated booleans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protections {
    /// PodsWithLocalStorage: pods with an emptyDir or hostPath volume are protected.
    pub local_storage: bool,
    /// DaemonSetPods: pods of a DaemonSet are protected.
    pub daemonset: bool,
    /// SystemCriticalPods: system-critical pods, and those at or above `priorityThreshold`, are
    /// protected.
    pub system_critical: bool,
    /// FailedBarePods: failed pods without owners are protected (other pods without owners
    /// always are).
    pub failed_bare: bool,
    /// PodsWithPVC: pods with a PersistentVolumeClaim are protected.
    pub pvc: bool,
    /// PodsWithoutPDB: pods no PodDisruptionBudget covers are protected.
    pub without_pdb: bool,
    /// PodsWithResourceClaims: pods with ResourceClaims are protected.
    pub resource_claims: bool,
    /// PodsWithPDBBlockingSingleReplicaOwner: the only pod of its owner is protected when a
    /// PodDisruptionBudget covers it.
    pub pdb_blocking_single_replica_owner: bool,
}

const DEFAULT_PROTECTIONS: &[&str] = &[
    "PodsWithLocalStorage",
    "DaemonSetPods",
    "SystemCriticalPods",
    "FailedBarePods",
];
const EXTRA_PROTECTIONS: &[&str] = &[
    "PodsWithPVC",
    "PodsWithoutPDB",
    "PodsWithResourceClaims",
    "PodsWithPDBBlockingSingleReplicaOwner",
];

/// `gangPolicy`: how members of a gang may be evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GangPolicy {
    /// Only members beyond minMember: a gang keeps at least minMember running members.
    SurplusOnly,
    /// A member goes only with its whole gang, all or nothing: every member bound to a node
    /// is planned together, only when the limits and disruption budgets allow every one of
    /// them and the simulator places every one elsewhere ([`crate::framework::Context::evict`]).
    WholeGang,
}

/// `noEvictionPolicy`: what the prefer-no-eviction annotation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoEvictionPolicy {
    /// The annotation is a preference only: the pod may still be evicted (the default).
    Preferred,
    /// The annotation protects the pod: it is never evicted.
    Mandatory,
}

/// Why a pod with a `do-not-evict-until` annotation in the future is not evicted.
fn protected_until(until: i64) -> String {
    if until == PROTECTED_UNTIL_UNREADABLE {
        return format!(
            "pod has the annotation {DO_NOT_EVICT_UNTIL_ANNOTATION} with a value that is not an RFC 3339 time (such as 2026-12-31T18:00:00Z); it is protected until the annotation is fixed"
        );
    }
    let at = chrono::DateTime::from_timestamp(until, 0).map_or_else(
        || until.to_string(),
        |t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    );
    format!("pod is protected until {at} ({DO_NOT_EVICT_UNTIL_ANNOTATION})")
}

/// The registry entry: the evictor of every profile.
pub(crate) const SPEC: PluginSpec = PluginSpec::evictor::<DefaultEvictor>(NAME);

/// A validated DefaultEvictor.
#[derive(Debug, Clone)]
pub struct DefaultEvictor {
    /// The args as given.
    pub args: DefaultEvictorArgs,
    /// The pod protections in force.
    pub protections: Protections,
    label_selector: Option<Selector>,
    namespace_selector: Option<Selector>,
    /// The nodes nodeFit looks at besides the pod's own: every Ready node of the cluster
    /// matching the `nodeSelector` arg (all of them without it), as upstream's
    /// PreEvictionFilter; not the policy's nodeSelector, which picks the nodes plugins work on
    /// but not where the scheduler may put a replacement.
    fit_nodes: Selector,
    min_pod_age: Option<i64>,
    /// The `noEvictionPolicy` arg, parsed.
    pub no_eviction_policy: NoEvictionPolicy,
    /// The `gangPolicy` arg, parsed.
    pub gang_policy: GangPolicy,
    /// The `moveMode` arg, parsed.
    pub move_mode: MoveMode,
}

impl Default for DefaultEvictor {
    fn default() -> Self {
        DefaultEvictor::from_json(&serde_json::Value::Null).expect("default args are valid")
    }
}

/// The args' checks are made while building: each check turns a field into what the
/// evictor keeps (an enum, a selector, a duration).
impl PluginArgs for DefaultEvictorArgs {}

impl FromArgs for DefaultEvictor {
    type Args = DefaultEvictorArgs;

    fn from_args(args: DefaultEvictorArgs) -> Result<Self, ArgsError> {
        if let Some(pt) = &args.priority_threshold {
            pt.validate("priorityThreshold")?;
        }
        let no_eviction_policy = match args.no_eviction_policy.as_deref() {
            None | Some("") | Some("Preferred") => NoEvictionPolicy::Preferred,
            Some("Mandatory") => NoEvictionPolicy::Mandatory,
            Some(other) => {
                return Err(ArgsError::new(
                    "noEvictionPolicy",
                    format!("{other:?} is not allowed; noEvictionPolicy accepts only \"Preferred\" or \"Mandatory\""),
                ))
            }
        };
        let gang_policy = match args.gang_policy.as_deref() {
            None | Some("") | Some("SurplusOnly") => GangPolicy::SurplusOnly,
            Some("WholeGang") => GangPolicy::WholeGang,
            Some(other) => {
                return Err(ArgsError::new(
                    "gangPolicy",
                    format!("{other:?} is not allowed; gangPolicy accepts only \"SurplusOnly\" or \"WholeGang\""),
                ))
            }
        };
        let move_mode = match args.move_mode.as_deref() {
            None | Some("") => MoveMode::Evict,
            Some(text) => MoveMode::parse(text).ok_or_else(|| {
                ArgsError::new(
                    "moveMode",
                    format!(
                        "{text:?} is not allowed; moveMode accepts only {}",
                        MoveMode::NAMES
                            .iter()
                            .map(|n| format!("{n:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
        };
        let deprecated = args.evict_local_storage_pods
            || args.evict_daemon_set_pods
            || args.evict_system_critical_pods
            || args.ignore_pvc_pods
            || args.evict_failed_bare_pods
            || args.ignore_pods_without_pdb;
        let pp = &args.pod_protections;
        if deprecated && (!pp.extra_enabled.is_empty() || !pp.default_disabled.is_empty()) {
            return Err(ArgsError::new(
                "podProtections",
                "cannot use the deprecated fields (evictLocalStoragePods, evictDaemonSetPods, evictSystemCriticalPods, ignorePvcPods, ignorePodsWithoutPDB, evictFailedBarePods) alongside podProtections.extraEnabled or podProtections.defaultDisabled; use podProtections only",
            ));
        }
        each_one_of(
            "podProtections.extraEnabled",
            &pp.extra_enabled,
            EXTRA_PROTECTIONS,
            |p| {
                format!(
                    "{p:?} is not an extra pod protection; allowed: {}",
                    EXTRA_PROTECTIONS.join(", ")
                )
            },
        )?;
        each_one_of(
            "podProtections.defaultDisabled",
            &pp.default_disabled,
            DEFAULT_PROTECTIONS,
            |p| {
                format!(
                    "{p:?} is not a default pod protection; allowed: {}",
                    DEFAULT_PROTECTIONS.join(", ")
                )
            },
        )?;
        if pp
            .config
            .as_ref()
            .and_then(|c| c.pods_with_pvc.as_ref())
            .is_some()
            && !pp.extra_enabled.iter().any(|p| p == "PodsWithPVC")
        {
            return Err(ArgsError::new(
                "podProtections.config.PodsWithPVC",
                "is set but PodsWithPVC is not in podProtections.extraEnabled; enable the protection or remove its config",
            ));
        }
        let disabled = |name: &str| pp.default_disabled.iter().any(|p| p == name);
        let extra = |name: &str| pp.extra_enabled.iter().any(|p| p == name);
        let protections = Protections {
            local_storage: !disabled("PodsWithLocalStorage") && !args.evict_local_storage_pods,
            daemonset: !disabled("DaemonSetPods") && !args.evict_daemon_set_pods,
            system_critical: !disabled("SystemCriticalPods") && !args.evict_system_critical_pods,
            failed_bare: !disabled("FailedBarePods") && !args.evict_failed_bare_pods,
            pvc: extra("PodsWithPVC") || args.ignore_pvc_pods,
            without_pdb: extra("PodsWithoutPDB") || args.ignore_pods_without_pdb,
            resource_claims: extra("PodsWithResourceClaims"),
            pdb_blocking_single_replica_owner: extra("PodsWithPDBBlockingSingleReplicaOwner"),
        };
        let label_selector = selector_arg(args.label_selector.as_ref(), "labelSelector")?;
        let namespace_selector = selector_arg(
            args.namespace_label_selector.as_ref(),
            "namespaceLabelSelector",
        )?;
        let min_pod_age = args
            .min_pod_age
            .as_deref()
            .map(|d| parse_duration(d).map_err(|e| ArgsError::new("minPodAge", e)))
            .transpose()?;
        let fit_nodes = match &args.node_selector {
            Some(ns) => {
                Selector::parse(ns).map_err(|e| ArgsError::new("nodeSelector", e.to_string()))?
            }
            None => Selector::everything(),
        };
        Ok(DefaultEvictor {
            args,
            protections,
            label_selector,
            namespace_selector,
            fit_nodes,
            min_pod_age,
            no_eviction_policy,
            gang_policy,
            move_mode,
        })
    }
}

impl DefaultEvictor {
    /// The priority below which pods may be evicted, resolved against the snapshot's
    /// PriorityClasses when given by name. Errors when the named class does not exist.
    pub(crate) fn priority_threshold(&self, snap: &ClusterSnapshot) -> Result<Option<i32>, String> {
        let Some(pt) = self.args.priority_threshold.as_ref().filter(|p| p.is_set()) else {
            return Ok(None);
        };
        if let Some(v) = pt.value {
            return Ok(Some(v));
        }
        let name = pt.name.as_deref().unwrap_or_default();
        snap.priority_class(name)
            .map(|pc| Some(pc.value))
            .ok_or_else(|| {
                format!("DefaultEvictor priorityThreshold names PriorityClass {name:?}, which does not exist; create it or give priorityThreshold.value")
            })
    }

    /// The Filter extension point. `Err` says why the pod may not be evicted.
    pub fn filter(&self, snap: &ClusterSnapshot, id: PodId, now: i64) -> Result<(), String> {
        let pod = snap.pod(id);
        if pod.is_mirror {
            return Err("pod is a mirror pod".into());
        }
        if pod.is_static {
            return Err("pod is a static pod".into());
        }
        if pod.terminating {
            return Err("pod is terminating".into());
        }
        self.gang_filter(snap, id)?;
        if let Some(until) = pod.protected_until.filter(|&t| t > now) {
            return Err(protected_until(until));
        }
        if self.args.honor_do_not_disrupt {
            if let Some(d) = pod.do_not_disrupt {
                return Err(format!(
                    "pod has the annotation {} and honorDoNotDisrupt is on",
                    d.annotation()
                ));
            }
        }
        if pod.has_evict_annotation {
            return Ok(());
        }
        if self.no_eviction_policy == NoEvictionPolicy::Mandatory
            && pod.has_prefer_no_eviction_annotation
        {
            return Err(
                "pod has the prefer-no-eviction annotation and noEvictionPolicy is Mandatory"
                    .into(),
            );
        }
        let p = &self.protections;
        if pod.owners.is_empty() {
            if p.failed_bare {
                return Err("pod does not have any ownerRefs".into());
            }
            if pod.phase != Phase::Failed {
                return Err("pod does not have any ownerRefs and is not in failed phase".into());
            }
        }
        if p.daemonset && snap.is_daemonset_pod(id) {
            return Err("pod is a DaemonSet pod".into());
        }
        if p.system_critical {
            if pod.is_critical() {
                return Err("pod has system critical priority".into());
            }
            if let Some(threshold) = self.priority_threshold(snap)? {
                if pod.priority.is_some_and(|pr| pr >= threshold) {
                    return Err(format!(
                        "pod priority is at or above the priority threshold {threshold}"
                    ));
                }
            }
        }
        if p.local_storage && pod.has_local_storage {
            return Err("pod has local storage (emptyDir or hostPath)".into());
        }
        if p.pvc && !pod.pvc_claims.is_empty() {
            // Storage classes are not in the snapshot, so every PVC counts as protected.
            return Err(
                "pod has a PersistentVolumeClaim and the PodsWithPVC protection is on".into(),
            );
        }
        if p.without_pdb && snap.pdbs_of_pod(id).is_empty() {
            return Err(
                "no PodDisruptionBudget covers the pod and the PodsWithoutPDB protection is on"
                    .into(),
            );
        }
        if p.resource_claims && pod.has_resource_claims {
            return Err(
                "pod has ResourceClaims and the PodsWithResourceClaims protection is on".into(),
            );
        }
        if p.pdb_blocking_single_replica_owner && !snap.pdbs_of_pod(id).is_empty() {
            if let Some(o) = pod.controller() {
                if snap.pods_of_owner(&o.uid).len() <= 1 {
                    return Err(
                        "pod is the only replica of its owner and a PodDisruptionBudget covers it"
                            .into(),
                    );
                }
            }
        }
        if let Some(sel) = &self.label_selector {
            if !sel.matches(&pod.labels) {
                return Err("pod labels do not match the labelSelector".into());
            }
        }
        if let Some(sel) = &self.namespace_selector {
            let ok = snap
                .namespace(&pod.namespace)
                .is_some_and(|ns| sel.matches(&ns.labels));
            if !ok {
                return Err(
                    "pod's namespace labels do not match the namespaceLabelSelector".into(),
                );
            }
        }
        if self.args.min_replicas > 1 && pod.owners.len() == 1 {
            let replicas = snap.pods_of_owner(&pod.owners[0].uid).len();
            if (replicas as u32) < self.args.min_replicas {
                return Err(format!(
                    "owner has {replicas} replicas which is less than minReplicas of {}",
                    self.args.min_replicas
                ));
            }
        }
        if let Some(min_age) = self.min_pod_age {
            match pod.started {
                Some(t) if now - t >= min_age => {}
                _ => return Err(format!("pod is younger than minPodAge ({min_age}s)")),
            }
        }
        Ok(())
    }

    /// The gang part of the filter, on the snapshot alone: any member of a gang whose
    /// PodGroup is not in the snapshot is not evictable; unless the pod goes with its whole
    /// gang (`gangPolicy: WholeGang` or `disruptionMode: all`, see
    /// [`crate::snapshot::Gang::goes_whole`]), neither is a running member of a gang with no
    /// running member to spare. Evictions
    /// planned in the cycle are counted when each eviction is planned
    /// ([`crate::framework::Ledger::admit_by_gangs`]). With `WholeGang` the whole gang goes together, so no
    /// member has to be spared.
    fn gang_filter(&self, snap: &ClusterSnapshot, id: PodId) -> Result<(), String> {
        let whole = snap.goes_whole(id, self.gang_policy == GangPolicy::WholeGang);
        for &g in snap.gangs_of_pod(id) {
            let gang = snap.gang(g);
            let Some(min) = gang.min_member else {
                return Err(format!(
                    "pod belongs to gang {}, which is not in the snapshot: its minMember is unknown, so every member is protected (list the PodGroups, or grant the descheduler get/list/watch on podgroups)",
                    gang.describe()
                ));
            };
            if !whole && snap.counts_as_running(id) && i64::from(gang.running) - 1 < i64::from(min)
            {
                let rule = match gang.disruption {
                    Some(DisruptionMode::Single) => "disruptionMode single",
                    _ => "gangPolicy SurplusOnly",
                };
                return Err(format!(
                    "pod belongs to gang {} with {} running members and minMember {min}: no member to spare ({rule})",
                    gang.describe(),
                    gang.running
                ));
            }
        }
        Ok(())
    }

    /// The PreEvictionFilter extension point. With nodeFit, the pod must pass every
    /// kube-scheduler filter (resources, taints, node affinity, host ports, inter-pod
    /// affinity in both directions and topology spread) on another Ready node of the cluster
    /// that matches the `nodeSelector` arg (any, without it), given the evictions and
    /// simulated placements planned so far. With placementCheck, the simulator's predicted
    /// destination must be better than where the pod is ([`placement_check`]).
    pub fn pre_eviction_filter(&self, placement: &Placement<'_>, id: PodId) -> Result<(), String> {
        if self.args.node_fit {
            let current = placement.snap().pod_node(id);
            let others: Vec<NodeId> = placement
                .snap()
                .ready_nodes(&self.fit_nodes)
                .into_iter()
                .filter(|&n| Some(n) != current)
                .collect();
            if let Err(e) = placement.sim().any_feasible(id, &others) {
                return Err(format!("pod does not fit on any other node (nodeFit): {e}"));
            }
        }
        match self.args.placement_check {
            Some(false) => Ok(()),
            Some(true) => destination_check(placement, id, Strictness::PlacementCheck).map(|_| ()),
            None if placement.has_targets() || placement.relocating() => {
                destination_check(placement, id, Strictness::Default).map(|_| ())
            }
            None => Ok(()),
        }
    }

    /// Whether the evictor checks destinations under plugins that set placement targets
    /// (`placementCheck` unset or true).
    pub(crate) fn checks_destinations(&self) -> bool {
        self.args.placement_check != Some(false)
    }
}

/// How much [`destination_check`] asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strictness {
    /// `placementCheck` unset, under a plugin that set placement targets: no node
    /// kube-scheduler may pick for the replacement is the pod's own or goes over its target.
    Default,
    /// `placementCheck: true`: besides, the pod has a destination, and (where the plugin set
    /// targets) every node it may land on is one the plugin wants (an underutilized node).
    PlacementCheck,
}

/// Where kube-scheduler would put the pod's replacement, as the plan so far leaves the
/// cluster: the predicted node and every node tied with it (kube-scheduler picks among them at
/// random). An eviction is refused when one of them is the pod's own node (it would restart the
/// pod for nothing) or would go over the running plugin's target with the pod
/// ([`Placement::set_targets`]; the eviction would make a new hot spot). Unlike upstream,
/// whose nodeFit asks only whether another node fits: a deliberate difference, on by default,
/// `placementCheck: false` turns it off. Plugins that relocate pods without targets
/// (the topology spread plugin: [`crate::framework::Plugin::relocates`]) are
/// held to the own-node rule; plugins that restart pods on purpose (PodLifeTime and the like)
/// set no targets and are not held to it. Returns the destination (None: no node
/// fits, refused only with `placementCheck: true`).
pub(crate) fn destination_check(
    placement: &Placement<'_>,
    id: PodId,
    strictness: Strictness,
) -> Result<Option<NodeId>, String> {
    let strict = strictness == Strictness::PlacementCheck;
    let rule = if strict {
        "placementCheck"
    } else {
        "placementCheck unset; false turns it off"
    };
    let snap = placement.snap();
    let sim = placement.sim();
    // Where no node fits while the evicted pods terminate, the replacement waits in
    // kube-scheduler's queue and goes where it fits once they are gone: its own node too.
    let predicted = match sim
        .predict(id, placement.nodes())
        .or_else(|_| sim.predict_settled(id, placement.nodes()))
    {
        Ok(p) => p,
        Err(e) if strict => {
            return Err(format!(
                "no simulated destination for the pod ({rule}): {e}"
            ));
        }
        // Where no node fits, nodeFit (when on) refuses; without it, as upstream.
        Err(_) => return Ok(None),
    };
    let tied = |n: NodeId| {
        if predicted.alternatives.is_empty() {
            String::new()
        } else {
            let others: Vec<&str> = std::iter::once(predicted.node)
                .chain(predicted.alternatives.iter().copied())
                .filter(|&o| o != n)
                .map(|o| &*snap.node(o).name)
                .collect();
            format!(
                " (tied with {}: kube-scheduler picks among them at random)",
                others.join(", ")
            )
        }
    };
    let own = snap.pod_node(id);
    for n in std::iter::once(predicted.node).chain(predicted.alternatives.iter().copied()) {
        let name = &snap.node(n).name;
        let may = if predicted.alternatives.is_empty() {
            "is predicted to"
        } else {
            "may"
        };
        if Some(n) == own {
            return Err(format!(
                "its replacement {may} land back on its own node {name}{}: the eviction would change nothing ({rule})",
                tied(n)
            ));
        }
        if !placement.has_targets() {
            continue;
        }
        let target = placement.target(n);
        if strict && !target.is_some_and(|t| t.wanted) {
            return Err(format!(
                "its replacement {may} land on {name}{}, not an underutilized node ({rule})",
                tied(n)
            ));
        }
        if let Some(t) = target {
            let mut after = sim.load(n).clone();
            after.add_pod(&snap.pod(id).requests);
            if let Some((r, max)) = t.over(&after) {
                return Err(format!(
                    "its replacement {may} land on {name}{}, which would go over its target {r} with it ({} > {max}) ({rule})",
                    tied(n),
                    after.get(r)
                ));
            }
        }
    }
    Ok(Some(predicted.node))
}

impl EvictorPlugin for DefaultEvictor {
    fn filter(&self, snap: &ClusterSnapshot, pod: PodId, now: i64) -> Result<(), String> {
        DefaultEvictor::filter(self, snap, pod, now)
    }

    fn pre_eviction_filter(&self, placement: &Placement<'_>, pod: PodId) -> Result<(), String> {
        DefaultEvictor::pre_eviction_filter(self, placement, pod)
    }

    fn evicts_whole_gangs(&self) -> bool {
        self.gang_policy == GangPolicy::WholeGang
    }

    fn needs_placement(&self) -> bool {
        self.args.node_fit || self.args.placement_check == Some(true)
    }

    fn checks_destinations(&self) -> bool {
        DefaultEvictor::checks_destinations(self)
    }

    fn check(&self, snap: &ClusterSnapshot) -> Result<(), String> {
        self.priority_threshold(snap).map(|_| ())
    }

    fn move_mode(&self) -> MoveMode {
        self.move_mode
    }
}

#[cfg(test)]
mod tests;
