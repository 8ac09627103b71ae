//! The cluster as the planner sees it: a compact, immutable model of nodes, pods,
//! PodDisruptionBudgets, namespaces, priority classes and pod groups (gangs), with the
//! indexes the plugins need.
//!
//! Only the fields a descheduler reads are kept; pod requests, QoS class and the
//! protection-relevant facts are computed once when the snapshot is built.
//! Nothing here talks to the network: snapshots come from a file ([`decode`]) or, in live
//! mode, from a cluster source that fills the same model.

/// Test builders for nodes, pods and snapshots (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod builders;
mod ids;
mod pods;
mod resources;
pub mod shapes;
pub mod usage;
pub mod workloads;

pub use ids::{Id, IdRange, IdVec, NodeId, PodId};
pub use pods::Pods;
pub use resources::{Resources, RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS};
pub use shapes::NO_SHAPE;
use std::sync::Arc;
pub use workloads::{
    Autoscaler, Deployment, ResourceQuota, SurgeMark, Workloads, POD_DELETION_COST_ANNOTATION,
    SURGE_IN_FLIGHT_ANNOTATION,
};

use crate::labels::{Labels, Requirement, Selector};
use rayon::iter::ParallelIterator;
use rayon::slice::ParallelSlice;
use rustc_hash::FxHashMap;

pub(crate) type PdbId = u32;

/// The annotation that makes a pod evictable regardless of most protections.
pub const EVICT_ANNOTATION: &str = "descheduler.alpha.kubernetes.io/evict";
/// The annotation that asks the descheduler to prefer other pods.
pub const PREFER_NO_EVICTION_ANNOTATION: &str =
    "descheduler.alpha.kubernetes.io/prefer-no-eviction";
/// Upstream's `EvictionsInBackground`: the pod's eviction is to be requested only, and is
/// carried out in the background by whoever answers the request (KubeVirt's live migration).
pub const REQUEST_EVICT_ONLY_ANNOTATION: &str =
    "descheduler.alpha.kubernetes.io/request-evict-only";
/// Upstream's `EvictionsInBackground`: an eviction in the background of this pod is going on
/// (set by whoever carries it out).
pub const EVICTION_IN_PROGRESS_ANNOTATION: &str =
    "descheduler.alpha.kubernetes.io/eviction-in-progress";
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Karpenter's annotation keeping a pod from voluntary disruption (value `"true"`).
pub const KARPENTER_DO_NOT_DISRUPT_ANNOTATION: &str = "karpenter.sh/do-not-disrupt";
/// The cluster autoscaler's annotation; `"false"` keeps the pod from being evicted.
pub const SAFE_TO_EVICT_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
/// A time-bounded protection: the pod is not evicted before this time (RFC 3339).
pub const DO_NOT_EVICT_UNTIL_ANNOTATION: &str =
    "descheduler.alpha.kubernetes.io/do-not-evict-until";
pub const CONFIG_SOURCE_ANNOTATION: &str = "kubernetes.io/config.source";
/// `scheduling.SystemCriticalPriority`: pods at or above it are system critical.
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// The grace period the API server gives a pod that sets no `terminationGracePeriodSeconds`.
pub(crate) const DEFAULT_TERMINATION_GRACE_SECONDS: i64 = 30;
/// The pod label naming a scheduler-plugins (coscheduling) PodGroup.
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// The pod annotation naming a Volcano PodGroup.
pub const VOLCANO_GROUP_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// The annotation of the bookmark that ends the initial events of a watch that streams its
/// list (`sendInitialEvents`); its value is "true".
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";
/// The API group of scheduler-plugins' PodGroup (`scheduling.x-k8s.io/v1alpha1`).
pub(crate) const SCHEDULER_PLUGINS_API_GROUP: &str = "scheduling.x-k8s.io";
/// The API group of Volcano's PodGroup (`scheduling.volcano.sh/v1beta1`).
pub(crate) const VOLCANO_API_GROUP: &str = "scheduling.volcano.sh";
/// The API group of Kubernetes' own PodGroup (`scheduling.k8s.io/v1beta1` and `v1alpha3`,
/// Kubernetes 1.37 with the `GenericWorkload` feature gate). The group also serves
/// PriorityClasses; only its PodGroups are gangs.
pub(crate) const KUBERNETES_API_GROUP: &str = "scheduling.k8s.io";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Taint {
    pub key: Box<str>,
    pub value: Box<str>,
    pub effect: TaintEffect,
}

/// A string that most objects carry one of a few values of (a condition type, an owner
/// kind, a well-known toleration key): those are not allocated again for every pod.
pub(crate) type Shared = std::borrow::Cow<'static, str>;

/// `text` as a [`Shared`]: borrowed from `known` when it is one of them.
pub fn shared(text: &str, known: &[&'static str]) -> Shared {
    match known.iter().find(|k| **k == text) {
        Some(k) => Shared::Borrowed(k),
        None => Shared::Owned(text.to_owned()),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    pub key: Shared,
    /// `Exists` when true, `Equal` otherwise.
    pub exists: bool,
    pub value: Box<str>,
    /// None tolerates every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// `ToleratesTaint` from k8s.io/api/core/v1.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if let Some(e) = self.effect {
            if e != taint.effect {
                return false;
            }
        }
        if !self.key.is_empty() && *self.key != *taint.key {
            return false;
        }
        if self.exists {
            return true;
        }
        self.value == taint.value
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub name: Box<str>,
    pub labels: Labels,
    pub unschedulable: bool,
    pub taints: Vec<Taint>,
    /// `status.allocatable`, or `status.capacity` when allocatable is empty.
    pub allocatable: Resources,
    pub ready: bool,
    /// `status.images`: every name of every image on the node with its size in bytes, sorted
    /// by name (what kube-scheduler's ImageLocality scores).
    pub images: Arc<[(Box<str>, i64)]>,
}

impl Node {
    /// The size of an image the node has, by one of its names.
    pub fn image_size(&self, name: &str) -> Option<i64> {
        self.images
            .binary_search_by(|(n, _)| (**n).cmp(name))
            .ok()
            .map(|i| self.images[i].1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl Phase {
    pub fn parse(s: &str) -> Self {
        match s {
            "Pending" => Phase::Pending,
            "Running" => Phase::Running,
            "Succeeded" => Phase::Succeeded,
            "Failed" => Phase::Failed,
            _ => Phase::Unknown,
        }
    }

    /// The phase as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Unknown => "Unknown",
        }
    }
}

/// QoS class, ordered from first-to-evict to last-to-evict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Qos {
    BestEffort,
    Burstable,
    Guaranteed,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerRef {
    pub kind: Shared,
    pub name: Box<str>,
    pub uid: Box<str>,
    pub controller: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InclusionPolicy {
    Honor,
    Ignore,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologySpreadConstraint {
    pub max_skew: i32,
    pub topology_key: Box<str>,
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// None: the constraint selects no pods (a nil labelSelector).
    pub label_selector: Option<Selector>,
    pub min_domains: Option<i32>,
    /// Default Honor.
    pub node_affinity_policy: InclusionPolicy,
    /// Default Ignore.
    pub node_taints_policy: InclusionPolicy,
    pub match_label_keys: Vec<Box<str>>,
}

/// One `nodeSelectorTerm`: all its requirements must hold. An empty term matches no node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    pub match_expressions: Vec<Requirement>,
    /// Requirements on `metadata.name`.
    pub match_fields: Vec<Requirement>,
}

impl NodeSelectorTerm {
    pub fn matches(&self, node: &Node) -> bool {
        if self.match_expressions.is_empty() && self.match_fields.is_empty() {
            return false;
        }
        if !self
            .match_expressions
            .iter()
            .all(|r| r.matches(&node.labels))
        {
            return false;
        }
        if !self.match_fields.is_empty() {
            let fields = Labels::new(vec![("metadata.name".into(), node.name.clone())]);
            if !self.match_fields.iter().all(|r| r.matches(&fields)) {
                return false;
            }
        }
        true
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreferredSchedulingTerm {
    pub weight: i32,
    pub preference: NodeSelectorTerm,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAffinityTerm {
    /// None selects no pods.
    pub label_selector: Option<Selector>,
    /// Explicit namespaces; with no namespaces and no namespaceSelector, the pod's own.
    pub namespaces: Vec<Box<str>>,
    /// Some(empty) selects every namespace.
    pub namespace_selector: Option<Selector>,
    pub topology_key: Box<str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedPodAffinityTerm {
    pub weight: i32,
    pub term: PodAffinityTerm,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Affinity {
    /// None: no required node affinity. Some(terms): at least one term must match.
    pub node_required: Option<Vec<NodeSelectorTerm>>,
    pub node_preferred: Vec<PreferredSchedulingTerm>,
    pub pod_affinity_required: Vec<PodAffinityTerm>,
    pub pod_affinity_preferred: Vec<WeightedPodAffinityTerm>,
    pub pod_anti_affinity_required: Vec<PodAffinityTerm>,
    pub pod_anti_affinity_preferred: Vec<WeightedPodAffinityTerm>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub port: u16,
    /// 0 TCP, 1 UDP, 2 SCTP
    pub protocol: u8,
}

/// `status.conditions[].status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "True" => Some(Self::True),
            "False" => Some(Self::False),
            "Unknown" => Some(Self::Unknown),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodCondition {
    pub kind: Shared,
    pub status: ConditionStatus,
    pub reason: Option<Box<str>>,
    /// `lastTransitionTime`, unix seconds.
    pub last_transition: Option<i64>,
}

/// The current state of one container (`state` in a container status).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ContainerState {
    /// No state reported.
    #[default]
    Unknown,
    Running,
    Waiting {
        reason: Option<Box<str>>,
    },
    Terminated {
        reason: Option<Box<str>>,
        exit_code: i32,
    },
}

/// One entry of `containerStatuses`, `initContainerStatuses` or `ephemeralContainerStatuses`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerStatus {
    pub restart_count: i32,
    pub state: ContainerState,
}

impl ContainerStatus {
    /// The waiting reason, if the container is waiting with one.
    pub fn waiting_reason(&self) -> Option<&str> {
        match &self.state {
            ContainerState::Waiting { reason } => reason.as_deref(),
            _ => None,
        }
    }

    /// The terminated reason, if the container has terminated with one.
    pub fn terminated_reason(&self) -> Option<&str> {
        match &self.state {
            ContainerState::Terminated { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }

    /// The exit code, if the container has terminated.
    pub fn exit_code(&self) -> Option<i32> {
        match &self.state {
            ContainerState::Terminated { exit_code, .. } => Some(*exit_code),
            _ => None,
        }
    }
}

/// The parts of `status` beyond the phase that lifecycle plugins read
/// (PodLifeTime, RemoveFailedPods, RemovePodsHavingTooManyRestarts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodStatusDetail {
    /// `status.reason` (for example `NodeLost`, `Evicted`, `NodeAffinity`).
    pub reason: Option<Box<str>>,
    pub containers: Vec<ContainerStatus>,
    pub init_containers: Vec<ContainerStatus>,
    pub ephemeral_containers: Vec<ContainerStatus>,
    pub conditions: Vec<PodCondition>,
}

/// Which disruptor's annotation asks to leave a pod alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoNotDisrupt {
    /// `karpenter.sh/do-not-disrupt: "true"`.
    Karpenter,
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`.
    ClusterAutoscaler,
}

impl DoNotDisrupt {
    /// The annotation as written on the pod.
    pub fn annotation(self) -> &'static str {
        match self {
            DoNotDisrupt::Karpenter => "karpenter.sh/do-not-disrupt: \"true\"",
            DoNotDisrupt::ClusterAutoscaler => {
                "cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\""
            }
        }
    }
}

/// [`Pod::protected_until`] of a `do-not-evict-until` annotation that is not an RFC 3339 time:
/// protected until the annotation is fixed (nothing is evicted on a guess).
pub const PROTECTED_UNTIL_UNREADABLE: i64 = i64::MAX;

#[derive(Debug, Clone)]
pub struct Pod {
    pub namespace: Box<str>,
    pub name: Box<str>,
    pub uid: Box<str>,
    pub node_name: Option<Box<str>>,
    pub labels: Labels,
    pub has_evict_annotation: bool,
    pub has_prefer_no_eviction_annotation: bool,
    /// The annotation of another disruptor that asks to leave the pod alone
    /// (`karpenter.sh/do-not-disrupt: "true"`, `cluster-autoscaler.kubernetes.io/safe-to-evict:
    /// "false"`); DefaultEvictor honours it with `honorDoNotDisrupt: true`.
    pub do_not_disrupt: Option<DoNotDisrupt>,
    /// `descheduler.alpha.kubernetes.io/do-not-evict-until`: the pod is protected until these
    /// unix seconds ([`PROTECTED_UNTIL_UNREADABLE`] when the value is not an RFC 3339 time).
    pub protected_until: Option<i64>,
    /// [`REQUEST_EVICT_ONLY_ANNOTATION`] is set (whatever its value, as upstream).
    pub has_request_evict_only_annotation: bool,
    /// [`EVICTION_IN_PROGRESS_ANNOTATION`] is set (whatever its value, as upstream).
    pub has_eviction_in_progress_annotation: bool,
    pub is_mirror: bool,
    /// `kubernetes.io/config.source` is set and is not `api`.
    pub is_static: bool,
    /// Shared by the pods of one shape whose owners are equal (one workload's pods).
    pub owners: Arc<[OwnerRef]>,
    /// Effective requests, with Kubernetes semantics (init containers, sidecars, overhead).
    pub requests: Resources,
    pub qos: Qos,
    pub priority: Option<i32>,
    pub priority_class_name: Option<Box<str>>,
    pub phase: Phase,
    pub terminating: bool,
    /// `spec.terminationGracePeriodSeconds`: how long the kubelet lets the pod stop once it is
    /// deleted (None: not given, which the API server defaults to
    /// [`DEFAULT_TERMINATION_GRACE_SECONDS`]).
    pub termination_grace_seconds: Option<i64>,
    /// Unix seconds.
    pub created: i64,
    /// `status.startTime`, unix seconds.
    pub started: Option<i64>,
    /// Has an emptyDir or hostPath volume.
    pub has_local_storage: bool,
    /// PersistentVolumeClaim names the pod mounts.
    pub pvc_claims: Box<[Box<str>]>,
    pub has_resource_claims: bool,
    /// Shared by the pods of one shape when equal, as are the node selector, affinity and
    /// spread constraints (one workload's pods have one pod template).
    pub tolerations: Arc<[Toleration]>,
    pub node_selector: Labels,
    pub affinity: Option<Arc<Affinity>>,
    pub topology_spread: Arc<[TopologySpreadConstraint]>,
    pub host_ports: Box<[HostPort]>,
    /// Container images, sorted (RemoveDuplicates compares these); shared by the pods of
    /// one shape.
    pub images: Arc<[Box<str>]>,
    /// Status reason, container statuses and conditions; None when it has none of them
    /// (most running pods), read through [`Pod::status`].
    pub status: Option<Box<PodStatusDetail>>,
    /// The Volcano PodGroup named by the `scheduling.k8s.io/group-name` annotation.
    /// (The scheduler-plugins PodGroup is the `scheduling.x-k8s.io/pod-group` label.)
    pub volcano_group: Option<Box<str>>,
    /// The Kubernetes PodGroup (`scheduling.k8s.io`) named by
    /// `spec.schedulingGroup.podGroupName`.
    pub pod_group: Option<Box<str>>,
    /// Pods with the same namespace, owners and images share a shape (below
    /// [`ClusterSnapshot::shape_count`]); [`NO_SHAPE`] until decoded or built.
    pub shape: u32,
}

/// The status detail of a pod that has none.
static NO_STATUS: PodStatusDetail = PodStatusDetail {
    reason: None,
    containers: Vec::new(),
    init_containers: Vec::new(),
    ephemeral_containers: Vec::new(),
    conditions: Vec::new(),
};

impl PodStatusDetail {
    /// Boxed when it holds anything (a pod without any costs no allocation).
    pub fn boxed(self) -> Option<Box<PodStatusDetail>> {
        (self != NO_STATUS).then(|| Box::new(self))
    }
}

impl Pod {
    /// Status reason, container statuses and conditions (empty when there are none).
    pub fn status(&self) -> &PodStatusDetail {
        self.status.as_deref().unwrap_or(&NO_STATUS)
    }

    /// The status detail to change (builders and tests).
    pub fn status_mut(&mut self) -> &mut PodStatusDetail {
        self.status.get_or_insert_with(Box::default)
    }

    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The controller owner reference, or the first owner when none is marked controller.
    pub fn controller(&self) -> Option<&OwnerRef> {
        self.owners
            .iter()
            .find(|o| o.controller)
            .or_else(|| self.owners.first())
    }

    pub fn is_daemonset_pod(&self) -> bool {
        self.owners.iter().any(|o| &*o.kind == "DaemonSet")
    }

    pub fn is_critical(&self) -> bool {
        self.priority.is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
    }

    /// How long the kubelet lets the pod stop once it is evicted: `grace_override` (the
    /// policy's `gracePeriodSeconds`, which the eviction passes on) when given, else the pod's
    /// `terminationGracePeriodSeconds` (the API server's default 30 when not set). A negative
    /// value (which the API server refuses) counts as 0.
    pub fn grace_seconds(&self, grace_override: Option<i64>) -> i64 {
        grace_override
            .or(self.termination_grace_seconds)
            .unwrap_or(DEFAULT_TERMINATION_GRACE_SECONDS)
            .max(0)
    }

    /// Succeeded and failed pods hold no resources on their node.
    pub fn is_active(&self) -> bool {
        !matches!(self.phase, Phase::Succeeded | Phase::Failed)
    }

    /// The PodGroups this pod names: its scheduler-plugins label, its Volcano annotation and
    /// its `spec.schedulingGroup.podGroupName` (empty values name nothing).
    pub(crate) fn gang_refs(&self) -> impl Iterator<Item = (GangKind, &str)> {
        let sp = self
            .labels
            .get(POD_GROUP_LABEL)
            .filter(|v| !v.is_empty())
            .map(|v| (GangKind::SchedulerPlugins, v));
        let vc = self
            .volcano_group
            .as_deref()
            .filter(|v| !v.is_empty())
            .map(|v| (GangKind::Volcano, v));
        let k8s = self
            .pod_group
            .as_deref()
            .filter(|v| !v.is_empty())
            .map(|v| (GangKind::Kubernetes, v));
        sp.into_iter().chain(vc).chain(k8s)
    }
}

/// Which gang scheduler a PodGroup (and the pods naming it) belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GangKind {
    /// kubernetes-sigs/scheduler-plugins coscheduling: `scheduling.x-k8s.io/v1alpha1`
    /// PodGroup, pods labelled `scheduling.x-k8s.io/pod-group`.
    SchedulerPlugins,
    /// Volcano: `scheduling.volcano.sh/v1beta1` PodGroup, pods annotated
    /// `scheduling.k8s.io/group-name`.
    Volcano,
    /// Kubernetes itself (1.37): `scheduling.k8s.io/v1beta1` (or `v1alpha3`) PodGroup, pods
    /// naming it in `spec.schedulingGroup.podGroupName`.
    Kubernetes,
}

impl GangKind {
    /// The API group of this kind's PodGroup.
    pub fn api_group(self) -> &'static str {
        match self {
            GangKind::SchedulerPlugins => SCHEDULER_PLUGINS_API_GROUP,
            GangKind::Volcano => VOLCANO_API_GROUP,
            GangKind::Kubernetes => KUBERNETES_API_GROUP,
        }
    }

    /// The kind from a PodGroup's `apiVersion` (any version of either API group).
    pub fn from_api_version(api_version: &str) -> Option<Self> {
        match api_version.split('/').next().unwrap_or_default() {
            SCHEDULER_PLUGINS_API_GROUP => Some(GangKind::SchedulerPlugins),
            VOLCANO_API_GROUP => Some(GangKind::Volcano),
            KUBERNETES_API_GROUP => Some(GangKind::Kubernetes),
            _ => None,
        }
    }
}

/// How a Kubernetes PodGroup (`scheduling.k8s.io`) says its members may be disrupted:
/// `spec.disruptionMode`, a union of `single: {}` and `all: {}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DisruptionMode {
    /// Members one by one: a member goes only while at least minCount others keep running
    /// (as `gangPolicy: SurplusOnly`).
    Single,
    /// All members together: the group goes only whole (as `gangPolicy: WholeGang`).
    All,
}

/// A PodGroup object of a gang scheduler, or of Kubernetes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodGroup {
    pub kind: GangKind,
    pub namespace: Box<str>,
    pub name: Box<str>,
    /// `spec.minMember`, or for Kubernetes' own `spec.schedulingPolicy.gang.minCount`; 1
    /// when absent or 0 (see the decoder).
    pub min_member: i32,
    /// `spec.disruptionMode` of a Kubernetes PodGroup; None when it has none (the other
    /// kinds never do): the policy's `gangPolicy` decides.
    pub disruption: Option<DisruptionMode>,
}

pub type GangId = u32;

/// A gang: the pods naming one PodGroup (of one kind, in one namespace), with the PodGroup's
/// minMember. A gang whose PodGroup is not in the snapshot has an unknown minMember, and the
/// planner protects every member of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gang {
    pub kind: GangKind,
    pub namespace: Box<str>,
    pub name: Box<str>,
    /// None: the PodGroup is not in the snapshot.
    pub min_member: Option<i32>,
    /// The PodGroup's own disruption mode (Kubernetes' PodGroups); None: the policy's
    /// `gangPolicy` decides.
    pub disruption: Option<DisruptionMode>,
    /// Member pods, in id order.
    pub members: Vec<PodId>,
    /// Members running now (see [`ClusterSnapshot::counts_as_running`]).
    pub running: u32,
}

impl Gang {
    /// `PodGroup ns/name (scheduling.x-k8s.io)`, for reasons and errors.
    pub fn describe(&self) -> String {
        format!(
            "PodGroup {}/{} ({})",
            self.namespace,
            self.name,
            self.kind.api_group()
        )
    }

    /// Whether the gang goes only whole: its own disruption mode says so (`all`), or it has
    /// none and the policy's `gangPolicy` is `WholeGang` (`policy_whole`). A gang whose mode
    /// is `single` goes member by member whatever the policy says.
    pub fn goes_whole(&self, policy_whole: bool) -> bool {
        match self.disruption {
            Some(DisruptionMode::All) => true,
            Some(DisruptionMode::Single) => false,
            None => policy_whole,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Pdb {
    pub namespace: Box<str>,
    pub name: Box<str>,
    /// A null selector matches nothing; an empty one matches every pod in the namespace.
    pub selector: Selector,
    pub disruptions_allowed: i32,
}

#[derive(Debug, Clone)]
pub struct Namespace {
    pub name: Box<str>,
    pub labels: Labels,
}

#[derive(Debug, Clone)]
pub struct PriorityClass {
    pub name: Box<str>,
    pub value: i32,
}

/// Everything the planner reads, with indexes. Immutable once built.
#[derive(Debug, Clone, Default)]
pub struct ClusterSnapshot {
    /// Sorted by name.
    pub nodes: Vec<Node>,
    /// Sorted by namespace, then name.
    pub pods: Pods,
    pub pdbs: Vec<Pdb>,
    pub namespaces: Vec<Namespace>,
    pub priority_classes: Vec<PriorityClass>,
    /// Sorted by kind, namespace, name.
    pub pod_groups: Vec<PodGroup>,
    /// Every PodGroup and every group a pod names, sorted by kind, namespace, name.
    pub gangs: Vec<Gang>,
    /// Deployments, autoscalers and ResourceQuotas (read only when a profile surges).
    pub workloads: Workloads,
    /// The gangs of each pod that names one (most pods name none).
    gangs_of_pod: FxHashMap<PodId, Vec<GangId>>,
    node_index: FxHashMap<Box<str>, NodeId>,
    pods_by_node: IdVec<NodeId, Vec<PodId>>,
    /// Sum of the requests of the active pods on each node, and their number.
    node_requested: IdVec<NodeId, Resources>,
    pods_by_owner: FxHashMap<Box<str>, Vec<PodId>>,
    shape_count: usize,
    /// Whether each pod names a DaemonSet owner (asked for every candidate of every plugin).
    daemonset_pods: IdVec<PodId, bool>,
    namespace_ranges: FxHashMap<Box<str>, IdRange<PodId>>,
    pdbs_of_pod: IdVec<PodId, Vec<PdbId>>,
    namespace_index: FxHashMap<Box<str>, u32>,
    pod_node: IdVec<PodId, Option<NodeId>>,
    /// Measured usage attached for this cycle (see [`usage`]).
    usage: usage::Usage,
}

/// The raw parts of a snapshot, before indexing.
#[derive(Debug, Clone, Default)]
pub struct SnapshotParts {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<Pdb>,
    pub namespaces: Vec<Namespace>,
    pub priority_classes: Vec<PriorityClass>,
    pub pod_groups: Vec<PodGroup>,
    /// Deployments, autoscalers and ResourceQuotas (read only when a profile surges).
    pub workloads: Workloads,
}

/// An object at which a total of one resource goes past what the planner counts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: with its {resource}, the total of {total} goes past {max}, the most the planner can count; an amount this large is a mistake in the object", max = i64::MAX)]
pub struct TotalTooLarge {
    /// `Pod <ns>/<name>` or `Node <name>`.
    pub object: String,
    pub resource: Box<str>,
    /// What was being added up.
    pub total: &'static str,
}

impl SnapshotParts {
    /// Checks that no sum the planner makes can overflow. Amounts are never negative (the
    /// decoder refuses them), so every sum the planner makes (of a node's pods, of a
    /// tenant's, of some nodes' allocatable) is at most the total over all pods, or over all
    /// nodes: both are added up here, checked. `more` are pods beside `self.pods`.
    pub fn check_totals(&self, more: &[Pod]) -> Result<(), TotalTooLarge> {
        check_totals(&self.nodes, self.pods.iter().chain(more))
    }
}

/// See [`SnapshotParts::check_totals`].
fn check_totals<'p>(
    all_nodes: &[Node],
    all_pods: impl Iterator<Item = &'p Pod>,
) -> Result<(), TotalTooLarge> {
    {
        let mut nodes = Resources::default();
        for n in all_nodes {
            nodes
                .checked_add(&n.allocatable)
                .map_err(|resource| TotalTooLarge {
                    object: format!("Node {}", n.name),
                    resource,
                    total: "all nodes' allocatable",
                })?;
        }
        let mut pods = Resources::default();
        for p in all_pods {
            pods.checked_add(&p.requests)
                .map_err(|resource| TotalTooLarge {
                    object: format!("Pod {}", p.key()),
                    resource,
                    total: "all pods' requests",
                })?;
        }
        Ok(())
    }
}

impl ClusterSnapshot {
    /// See [`SnapshotParts::check_totals`].
    pub fn check_totals(&self) -> Result<(), TotalTooLarge> {
        check_totals(&self.nodes, self.pods.iter())
    }

    /// Sorts the parts into their canonical order and builds every index.
    pub fn build(parts: SnapshotParts) -> ClusterSnapshot {
        ClusterSnapshot::build_with(parts, Vec::new())
    }

    /// [`build`](Self::build) with more pods after `parts.pods` (the decoder's second
    /// thread's), kept where they are when both lists are in order.
    pub fn build_with(parts: SnapshotParts, more_pods: Vec<Pod>) -> ClusterSnapshot {
        let SnapshotParts {
            mut nodes,
            pods,
            mut pdbs,
            mut namespaces,
            mut priority_classes,
            mut pod_groups,
            mut workloads,
        } = parts;
        workloads.sort();
        // Lists from the API server come sorted already, each name once: sorting and
        // dropping repeats is then a single check, on all cores.
        if !nodes.par_windows(2).all(|w| w[0].name < w[1].name) {
            nodes.sort_by(|a, b| a.name.cmp(&b.name));
            nodes.dedup_by(|a, b| a.name == b.name);
        }
        fn key(p: &Pod) -> (&str, &str) {
            (&p.namespace, &p.name)
        }
        let sorted = |list: &[Pod]| list.par_windows(2).all(|w| key(&w[0]) < key(&w[1]));
        let in_order = sorted(&pods)
            && sorted(&more_pods)
            && match (pods.last(), more_pods.first()) {
                (Some(a), Some(b)) => key(a) < key(b),
                _ => true,
            };
        let mut pods = Pods::of(pods, more_pods);
        if !in_order {
            let mut all = pods.into_vec();
            all.sort_by(|a, b| key(a).cmp(&key(b)));
            all.dedup_by(|a, b| a.namespace == b.namespace && a.name == b.name);
            pods = Pods::from(all);
        }
        pdbs.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        namespaces.sort_by(|a, b| a.name.cmp(&b.name));
        priority_classes.sort_by(|a, b| a.name.cmp(&b.name));
        pod_groups
            .sort_by(|a, b| (a.kind, &a.namespace, &a.name).cmp(&(b.kind, &b.namespace, &b.name)));
        pod_groups
            .dedup_by(|a, b| a.kind == b.kind && a.namespace == b.namespace && a.name == b.name);

        // Namespaces, budgets, shapes and gangs are indexed on a second thread meanwhile
        // (at 150,000 pods each index takes milliseconds to tens of them; the namespaces,
        // budgets, shapes and gangs take about as long as the nodes and owners).
        let (
            (nodes_index, (pods_by_owner, daemonset_pods)),
            ((namespace_ranges, pdbs_of_pod), shapes, (gangs, gangs_of_pod)),
        ) = std::thread::scope(|scope| {
            let side = scope.spawn(|| {
                (
                    index_namespaces(&pods, &pdbs),
                    index_shapes(&pods),
                    index_gangs(&pods, &pod_groups),
                )
            });
            let main = (index_nodes(&nodes, &pods), index_owners(&pods));
            let side = side.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            (main, side)
        });
        let shape_count = match shapes {
            Ok(count) => count,
            Err((of, count)) => {
                for (pod, shape) in pods.iter_mut().zip(of) {
                    pod.shape = shape;
                }
                count
            }
        };
        let NodesIndex {
            node_index,
            pods_by_node,
            node_requested,
            pod_node,
        } = nodes_index;
        let namespace_index = namespaces
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i as u32))
            .collect();
        ClusterSnapshot {
            nodes,
            pods,
            pdbs,
            namespaces,
            priority_classes,
            pod_groups,
            gangs,
            workloads,
            gangs_of_pod,
            node_index,
            pods_by_node,
            node_requested,
            pods_by_owner,
            shape_count,
            daemonset_pods,
            namespace_ranges,
            pdbs_of_pod,
            namespace_index,
            pod_node,
            usage: usage::Usage::default(),
        }
    }

    /// The objects, without the indexes (to change them and build again).
    pub fn into_parts(self) -> SnapshotParts {
        SnapshotParts {
            nodes: self.nodes,
            pods: self.pods.into_vec(),
            pdbs: self.pdbs,
            namespaces: self.namespaces,
            priority_classes: self.priority_classes,
            pod_groups: self.pod_groups,
            workloads: self.workloads,
        }
    }

    /// Drops the measured usage attached for a cycle.
    pub fn clear_usage(&mut self) {
        self.usage = usage::Usage::default();
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn pod(&self, id: PodId) -> &Pod {
        &self.pods[id.index()]
    }

    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.node_index.get(name).copied()
    }

    /// The node a pod is bound to, if that node is in the snapshot.
    pub fn pod_node(&self, id: PodId) -> Option<NodeId> {
        self.pod_node[id]
    }

    /// Every pod bound to the node, in namespace/name order.
    pub fn pods_on_node(&self, id: NodeId) -> &[PodId] {
        &self.pods_by_node[id]
    }

    /// Requests of the node's active pods (`pods` counts them).
    pub fn node_requested(&self, id: NodeId) -> &Resources {
        &self.node_requested[id]
    }

    /// Whether the pod names a DaemonSet owner ([`Pod::is_daemonset_pod`], indexed).
    pub fn is_daemonset_pod(&self, id: PodId) -> bool {
        self.daemonset_pods[id]
    }

    /// Pods that name this owner UID in their ownerReferences.
    pub fn pods_of_owner(&self, uid: &str) -> &[PodId] {
        self.pods_by_owner
            .get(uid)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Pods of a namespace, as a contiguous range of ids.
    pub fn pods_in_namespace(&self, ns: &str) -> IdRange<PodId> {
        self.namespace_ranges
            .get(ns)
            .cloned()
            .unwrap_or(IdRange::first(0))
    }

    /// A pod by namespace and name.
    pub fn pod_id(&self, namespace: &str, name: &str) -> Option<PodId> {
        // The namespace's pods are sorted by name.
        let IdRange { start, end } = self.pods_in_namespace(namespace);
        let (mut lo, mut hi) = (start.index(), end.index());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match (*self.pods[mid].name).cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(PodId::from_index(mid)),
            }
        }
        None
    }

    /// The number of distinct pod shapes (see [`Pod::shape`]).
    pub fn shape_count(&self) -> usize {
        self.shape_count
    }

    pub fn pdbs_of_pod(&self, id: PodId) -> &[PdbId] {
        &self.pdbs_of_pod[id]
    }

    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        self.namespace_index
            .get(name)
            .map(|&i| &self.namespaces[i as usize])
    }

    pub fn priority_class(&self, name: &str) -> Option<&PriorityClass> {
        self.priority_classes
            .binary_search_by(|p| (*p.name).cmp(name))
            .ok()
            .map(|i| &self.priority_classes[i])
    }

    /// The gangs a pod belongs to (usually none, at most one of each kind).
    pub fn gangs_of_pod(&self, id: PodId) -> &[GangId] {
        self.gangs_of_pod.get(&id).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn gang(&self, id: GangId) -> &Gang {
        &self.gangs[id as usize]
    }

    /// Whether a pod goes only with its whole gang: one of its gangs goes only whole
    /// ([`Gang::goes_whole`], with `policy_whole` the policy's `gangPolicy: WholeGang`).
    pub fn goes_whole(&self, id: PodId, policy_whole: bool) -> bool {
        self.gangs_of_pod(id)
            .iter()
            .any(|&g| self.gang(g).goes_whole(policy_whole))
    }

    /// What makes a pod's gang go whole, for reasons: a PodGroup's `disruptionMode all`, or
    /// else the policy's `gangPolicy WholeGang`.
    pub fn whole_rule(&self, id: PodId) -> &'static str {
        let all = self
            .gangs_of_pod(id)
            .iter()
            .any(|&g| self.gang(g).disruption == Some(DisruptionMode::All));
        if all {
            "disruptionMode all"
        } else {
            "gangPolicy WholeGang"
        }
    }

    /// A gang by kind, namespace and name.
    pub fn gang_id(&self, kind: GangKind, namespace: &str, name: &str) -> Option<GangId> {
        self.gangs
            .binary_search_by(|g| (g.kind, &*g.namespace, &*g.name).cmp(&(kind, namespace, name)))
            .ok()
            .map(|i| i as GangId)
    }

    /// Whether a pod counts as a running gang member: in phase Running, not terminating, and
    /// bound to a node. (Pending members are not yet running, and Succeeded or Failed ones no
    /// longer; counting fewer members as running only ever protects more.) Evicting any other
    /// member leaves the running count as it is.
    pub fn counts_as_running(&self, id: PodId) -> bool {
        counts_as_running(self.pod(id))
    }

    /// Ready nodes matching the selector, in name order: the planning input.
    pub fn ready_nodes(&self, selector: &Selector) -> Vec<NodeId> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.ready && selector.matches(&n.labels))
            .map(|(i, _)| NodeId::from_index(i))
            .collect()
    }

    /// Every node's id, in order.
    pub fn node_ids(&self) -> IdRange<NodeId> {
        IdRange::first(self.nodes.len())
    }

    /// Every pod's id, in order.
    pub fn pod_ids(&self) -> IdRange<PodId> {
        IdRange::first(self.pods.len())
    }
}

fn counts_as_running(p: &Pod) -> bool {
    p.phase == Phase::Running && !p.terminating && p.node_name.is_some()
}

/// The indexes by node and by namespace (see [`ClusterSnapshot::build`]).
struct NodesIndex {
    node_index: FxHashMap<Box<str>, NodeId>,
    pods_by_node: IdVec<NodeId, Vec<PodId>>,
    node_requested: IdVec<NodeId, Resources>,
    pod_node: IdVec<PodId, Option<NodeId>>,
}

/// Nodes by name, pods by node, what each node's active pods request and each pod's node.
fn index_nodes(nodes: &[Node], pods: &Pods) -> NodesIndex {
    let node_index: FxHashMap<Box<str>, NodeId> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), NodeId::from_index(i)))
        .collect();
    let mut pods_by_node = IdVec::filled(Vec::new(), nodes.len());
    let mut node_requested = IdVec::filled(Resources::default(), nodes.len());
    let mut pod_node = IdVec::from(Vec::with_capacity(pods.len()));
    for (i, pod) in pods.iter().enumerate() {
        let id = PodId::from_index(i);
        let node = pod
            .node_name
            .as_ref()
            .and_then(|n| node_index.get(n).copied());
        pod_node.push(node);
        if let Some(n) = node {
            pods_by_node[n].push(id);
            if pod.is_active() {
                node_requested[n].add_pod(&pod.requests);
            }
        }
    }
    NodesIndex {
        node_index,
        pods_by_node,
        node_requested,
        pod_node,
    }
}

type NamespacesIndex = (
    FxHashMap<Box<str>, IdRange<PodId>>,
    IdVec<PodId, Vec<PdbId>>,
);

/// Each namespace's run of pods (`pods` is sorted by namespace) and the budgets covering
/// each pod (in budget order). A namespace with several budgets has its pods indexed by the
/// values of the label keys those budgets require, so each budget looks only at the pods
/// carrying its label, not at the whole namespace.
fn index_namespaces(pods: &Pods, pdbs: &[Pdb]) -> NamespacesIndex {
    let mut namespace_ranges: FxHashMap<Box<str>, IdRange<PodId>> = FxHashMap::default();
    let mut namespace_start = PodId::new(0);
    for (i, pod) in pods.iter().enumerate() {
        let last_of_namespace = pods
            .get(i + 1)
            .is_none_or(|next| next.namespace != pod.namespace);
        if last_of_namespace {
            let end = PodId::from_index(i + 1);
            namespace_ranges.insert(
                pod.namespace.clone(),
                IdRange {
                    start: namespace_start,
                    end,
                },
            );
            namespace_start = end;
        }
    }
    let mut pdbs_of_pod = IdVec::filled(Vec::new(), pods.len());
    // `pdbs` is sorted by namespace: each namespace's budgets are one run.
    let mut first = 0;
    while first < pdbs.len() {
        let namespace = &pdbs[first].namespace;
        let end = first
            + pdbs[first..]
                .iter()
                .position(|b| &b.namespace != namespace)
                .unwrap_or(pdbs.len() - first);
        let run = first..end;
        first = end;
        let Some(namespace_pods) = namespace_ranges.get(namespace).cloned() else {
            continue;
        };
        let mut by_label: FxHashMap<(&str, &str), Vec<PodId>> = FxHashMap::default();
        if run.len() > 1 {
            let mut keys: Vec<&str> = pdbs[run.clone()]
                .iter()
                .filter_map(|b| b.selector.required_label())
                .map(|(k, _)| k)
                .collect();
            keys.sort_unstable();
            keys.dedup();
            for id in namespace_pods.clone() {
                let labels = &pods[id.index()].labels;
                for &k in &keys {
                    if let Some(v) = labels.get(k) {
                        by_label.entry((k, v)).or_default().push(id);
                    }
                }
            }
        }
        for pi in run.clone() {
            let pdb = &pdbs[pi];
            let mut cover = |id: PodId| {
                if pdb.selector.matches(&pods[id.index()].labels) {
                    pdbs_of_pod[id].push(pi as PdbId);
                }
            };
            match pdb.selector.required_label().filter(|_| run.len() > 1) {
                Some(label) => by_label
                    .get(&label)
                    .into_iter()
                    .flatten()
                    .for_each(|&id| cover(id)),
                None => namespace_pods.clone().for_each(cover),
            }
        }
    }
    (namespace_ranges, pdbs_of_pod)
}

/// Pods by the UID of each owner they name, and whether each pod is a DaemonSet's.
/// How many shapes the pods have (decoded pods come with theirs); or, when some pod has
/// none yet, every pod's shape found afresh and how many.
fn index_shapes(pods: &Pods) -> Result<usize, (Vec<u32>, usize)> {
    let mut count = 0;
    for pod in pods {
        if pod.shape == NO_SHAPE {
            return Err(shapes::find_all(pods));
        }
        count = count.max(pod.shape as usize + 1);
    }
    Ok(count)
}

fn index_owners(pods: &Pods) -> (FxHashMap<Box<str>, Vec<PodId>>, IdVec<PodId, bool>) {
    let daemonset_pods = pods.iter().map(Pod::is_daemonset_pod).collect();
    // Each owner's pods, by owner UID: the list's place by UID, and the lists.
    let mut slot_of: FxHashMap<&str, usize> = FxHashMap::default();
    let mut lists: Vec<(&str, Vec<PodId>)> = Vec::new();
    // A workload's pods are listed one after another and share one copy of their owners
    // (decoded pods do), so a pod whose owners are the previous pod's goes to the same
    // lists without a lookup.
    let mut prev: Option<&[OwnerRef]> = None;
    let mut prev_slots: Vec<usize> = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        let owners: &[OwnerRef] = &pod.owners;
        if !prev.is_some_and(|p| std::ptr::eq(p, owners)) {
            prev_slots.clear();
            for o in owners {
                let slot = *slot_of.entry(&o.uid).or_insert_with(|| {
                    lists.push((&o.uid, Vec::new()));
                    lists.len() - 1
                });
                prev_slots.push(slot);
            }
            prev = Some(owners);
        }
        for &slot in &prev_slots {
            lists[slot].1.push(PodId::from_index(i));
        }
    }
    let pods_by_owner = lists
        .into_iter()
        .map(|(uid, ids)| (Box::from(uid), ids))
        .collect();
    (pods_by_owner, daemonset_pods)
}

type GangIndex = (Vec<Gang>, FxHashMap<PodId, Vec<GangId>>);
type GangKey<'a> = (GangKind, &'a str, &'a str);

/// Gangs from the PodGroups and the groups pods name; `pod_groups` is sorted.
fn index_gangs(pods: &Pods, pod_groups: &[PodGroup]) -> GangIndex {
    type Known = (Option<i32>, Option<DisruptionMode>, Vec<PodId>);
    let mut by_key: std::collections::BTreeMap<GangKey<'_>, Known> = pod_groups
        .iter()
        .map(|g| {
            (
                (g.kind, &*g.namespace, &*g.name),
                (Some(g.min_member), g.disruption, Vec::new()),
            )
        })
        .collect();
    for (i, pod) in pods.iter().enumerate() {
        for (kind, name) in pod.gang_refs() {
            by_key
                .entry((kind, &pod.namespace, name))
                .or_insert((None, None, Vec::new()))
                .2
                .push(PodId::from_index(i));
        }
    }
    let mut gangs_of_pod: FxHashMap<PodId, Vec<GangId>> = FxHashMap::default();
    let gangs = by_key
        .into_iter()
        .enumerate()
        .map(
            |(gi, ((kind, namespace, name), (min_member, disruption, members)))| {
                for &m in &members {
                    gangs_of_pod.entry(m).or_default().push(gi as GangId);
                }
                let running = members
                    .iter()
                    .filter(|&&m| counts_as_running(&pods[m.index()]))
                    .count() as u32;
                Gang {
                    kind,
                    namespace: namespace.into(),
                    name: name.into(),
                    min_member,
                    disruption,
                    members,
                    running,
                }
            },
        )
        .collect();
    (gangs, gangs_of_pod)
}

#[cfg(test)]
mod tests {
    use super::builders::{pdb, pod};
    use super::*;
    use crate::labels::{LabelSelectorRequirement, LabelSelectorSpec};

    fn budget(namespace: &str, name: &str, selector: Selector) -> Pdb {
        Pdb {
            selector,
            ..pdb(namespace, name, "unused", "unused", 1)
        }
    }

    fn expression(key: &str, operator: &str, values: &[&str]) -> Selector {
        Selector::compile(&LabelSelectorSpec {
            match_labels: Default::default(),
            match_expressions: vec![LabelSelectorRequirement {
                key: key.into(),
                operator: operator.into(),
                values: values.iter().map(|v| v.to_string()).collect(),
            }],
        })
        .unwrap()
    }

    #[test]
    fn pods_of_an_owner_are_found_whether_they_share_their_owners_or_not() {
        use super::builders::owner_ref;
        let web: Arc<[OwnerRef]> = Arc::new([owner_ref("ReplicaSet", "a", "web")]);
        let both: Arc<[OwnerRef]> = Arc::new([
            owner_ref("ReplicaSet", "a", "web"),
            owner_ref("Job", "a", "batch"),
        ]);
        // Pods in name order: runs sharing one copy, a copy of their own with the same
        // owners, two owners, none, and a shared copy again after others.
        let owners: Vec<Arc<[OwnerRef]>> = vec![
            web.clone(),
            web.clone(),
            Arc::new([owner_ref("ReplicaSet", "a", "web")]),
            both.clone(),
            both.clone(),
            Arc::new([]),
            Arc::new([owner_ref("Job", "a", "batch")]),
            web.clone(),
        ];
        let pods = owners
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let mut p = pod("a", &format!("p{i}")).build();
                p.owners = o.clone();
                p
            })
            .collect();
        let snap = ClusterSnapshot::build(SnapshotParts {
            pods,
            ..Default::default()
        });
        let uids: std::collections::BTreeSet<&str> = snap
            .pods
            .iter()
            .flat_map(|p| p.owners.iter().map(|o| &*o.uid))
            .collect();
        assert_eq!(uids.len(), 2);
        for uid in uids {
            let expected: Vec<PodId> = snap
                .pod_ids()
                .filter(|&i| snap.pod(i).owners.iter().any(|o| &*o.uid == uid))
                .collect();
            assert_eq!(snap.pods_of_owner(uid), expected, "{uid}");
        }
        assert_eq!(snap.pods_of_owner("unknown"), [] as [PodId; 0]);
        let web_uid = &web[0].uid;
        assert_eq!(
            snap.pods_of_owner(web_uid),
            [0, 1, 2, 3, 4, 7].map(PodId::new)
        );
    }

    #[test]
    fn objects_listed_twice_or_out_of_order_are_sorted_and_kept_once() {
        use super::builders::node;
        // Nodes and pods by name (pods as `<namespace>/<name>`), in the order listed.
        let build = |nodes: &[&str], pods: &[&str]| {
            ClusterSnapshot::build(SnapshotParts {
                nodes: nodes.iter().map(|n| node(n).build()).collect(),
                pods: pods
                    .iter()
                    .map(|k| {
                        let (ns, name) = k.split_once('/').unwrap();
                        pod(ns, name).build()
                    })
                    .collect(),
                ..Default::default()
            })
        };
        let names = |snap: &ClusterSnapshot| -> (Vec<String>, Vec<String>) {
            (
                snap.nodes.iter().map(|n| n.name.to_string()).collect(),
                snap.pods.iter().map(Pod::key).collect(),
            )
        };
        // Sorted, with a repeat next to itself (a snapshot concatenated from two lists).
        let snap = build(&["n1", "n1", "n2"], &["a/x", "a/x", "b/x"]);
        assert_eq!(
            names(&snap),
            (
                vec!["n1".into(), "n2".into()],
                vec!["a/x".into(), "b/x".into()]
            )
        );
        // Out of order, with a repeat elsewhere.
        let snap = build(&["n2", "n1", "n2"], &["b/x", "a/y", "a/x", "b/x"]);
        assert_eq!(
            names(&snap),
            (
                vec!["n1".into(), "n2".into()],
                vec!["a/x".into(), "a/y".into(), "b/x".into()]
            )
        );
        assert_eq!(
            snap.pods_in_namespace("b"),
            IdRange {
                start: PodId::new(2),
                end: PodId::new(3)
            }
        );
    }

    #[test]
    fn budgets_cover_the_pods_their_selectors_match_in_budget_order() {
        let mut pods = Vec::new();
        for (ns, n) in [("a", 40), ("b", 25), ("c", 3)] {
            for i in 0..n {
                let mut p = pod(ns, &format!("p{i:02}"));
                if i % 5 != 4 {
                    p = p.label("app", &format!("w{}", i % 4));
                }
                if i % 3 == 0 {
                    p = p.label("tier", "db");
                }
                pods.push(p.build());
            }
        }
        let pdbs = vec![
            // Several budgets in one namespace: indexed by the labels they require.
            pdb("a", "a1", "app", "w1", 1),
            budget("a", "a2", expression("app", "In", &["w2", "w3"])),
            budget("a", "a3", expression("app", "NotIn", &["w0"])),
            pdb("a", "a4", "app", "w1", 1),
            budget("a", "a5", Selector::everything()),
            budget("a", "a6", Selector::nothing()),
            pdb("a", "a7", "tier", "db", 1),
            pdb("a", "a8", "app", "none", 1),
            // One budget in its namespace; a namespace with no pods.
            pdb("b", "b1", "tier", "db", 1),
            pdb("z", "z1", "app", "w1", 1),
        ];
        // In two parts, split inside namespace `a`, as the decoder's two threads leave them.
        let parts = Pods::of(pods[..30].to_vec(), pods[30..].to_vec());
        let (ranges, covered) = index_namespaces(&parts, &pdbs);
        assert_eq!(
            ranges["b"],
            IdRange {
                start: PodId::new(40),
                end: PodId::new(65)
            }
        );
        let mut checked = 0;
        for (id, p) in pods.iter().enumerate() {
            let want: Vec<PdbId> = (0..pdbs.len())
                .filter(|&b| {
                    pdbs[b].namespace == p.namespace && pdbs[b].selector.matches(&p.labels)
                })
                .map(|b| b as PdbId)
                .collect();
            assert_eq!(
                covered[PodId::from_index(id)],
                want,
                "{}/{}",
                p.namespace,
                p.name
            );
            checked += want.len();
        }
        // The case is not vacuous: pods under one, two and more budgets.
        assert!(checked > 80, "{checked}");
        assert!(covered.iter().any(|c| c.len() >= 4));
    }
}
