//! Builders for nodes, pods and PDBs, for tests, property tests and the synthetic clusters of
//! the benchmarks. Fixed timestamps keep every plan reproducible.

use super::*;
use crate::labels::{LabelSelectorSpec, Selector};
use std::sync::Arc;

/// 2026-01-01T00:00:00Z, the creation time builders give by default.
pub const T0: i64 = 1_767_225_600;

pub const GIB: i64 = 1 << 30;

pub struct NodeBuilder(Node);

/// A Ready, schedulable node with 4 CPUs, 16 GiB and 110 pods.
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder(Node {
        name: name.into(),
        labels: Labels::new(vec![("kubernetes.io/hostname".into(), name.into())]),
        unschedulable: false,
        taints: Vec::new(),
        allocatable: Resources::new(4000, 16 * GIB, 110),
        ready: true,
        images: Arc::new([]),
    })
}

impl NodeBuilder {
    pub fn cpu(mut self, milli: i64) -> Self {
        self.0.allocatable.cpu = milli;
        self
    }
    pub fn memory(mut self, bytes: i64) -> Self {
        self.0.allocatable.memory = bytes;
        self
    }
    pub fn pods(mut self, n: i64) -> Self {
        self.0.allocatable.pods = n;
        self
    }
    pub fn resource(mut self, name: &str, v: i64) -> Self {
        self.0.allocatable.set(name, v);
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> Self {
        let mut pairs: Vec<(Box<str>, Box<str>)> = self
            .0
            .labels
            .iter()
            .filter(|(key, _)| *key != k)
            .map(|(a, b)| (a.into(), b.into()))
            .collect();
        pairs.push((k.into(), v.into()));
        self.0.labels = Labels::new(pairs);
        self
    }
    pub fn taint(mut self, key: &str, value: &str, effect: TaintEffect) -> Self {
        self.0.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect,
        });
        self
    }
    pub fn unschedulable(mut self) -> Self {
        self.0.unschedulable = true;
        self
    }
    pub fn not_ready(mut self) -> Self {
        self.0.ready = false;
        self
    }
    /// Adds an image the node has, by one name, with its size in bytes.
    pub fn image(mut self, name: &str, size: i64) -> Self {
        let mut images: Vec<(Box<str>, i64)> = self.0.images.to_vec();
        images.push((name.into(), size));
        images.sort();
        self.0.images = images.into();
        self
    }
    pub fn build(self) -> Node {
        self.0
    }
}

pub struct PodBuilder(Pod);

/// Appends to one of a pod's lists (they are boxed slices: built once, then only read).
pub fn push<T: Clone, L: std::ops::Deref<Target = [T]> + From<Vec<T>>>(list: &mut L, item: T) {
    let mut v = list.to_vec();
    v.push(item);
    *list = v.into();
}

/// A running Burstable pod owned by ReplicaSet `app` in its namespace, with no requests.
pub fn pod(namespace: &str, name: &str) -> PodBuilder {
    PodBuilder(Pod {
        namespace: namespace.into(),
        name: name.into(),
        uid: format!("uid-{namespace}-{name}").into(),
        node_name: None,
        labels: Labels::default(),
        has_evict_annotation: false,
        has_prefer_no_eviction_annotation: false,
        do_not_disrupt: None,
        protected_until: None,
        has_request_evict_only_annotation: false,
        has_eviction_in_progress_annotation: false,
        is_mirror: false,
        is_static: false,
        owners: Arc::new([owner_ref("ReplicaSet", namespace, "app")]),
        requests: Resources::default(),
        qos: Qos::BestEffort,
        priority: None,
        termination_grace_seconds: None,
        priority_class_name: None,
        phase: Phase::Running,
        terminating: false,
        created: T0,
        started: Some(T0),
        has_local_storage: false,
        pvc_claims: Box::default(),
        has_resource_claims: false,
        tolerations: Arc::default(),
        node_selector: Labels::default(),
        affinity: None,
        topology_spread: Arc::default(),
        host_ports: Box::default(),
        images: Arc::new(["registry.example/app:1".into()]),
        status: None,
        volcano_group: None,
        pod_group: None,
        shape: super::NO_SHAPE,
    })
}

/// An owner reference with a UID made from its kind, namespace and name.
pub(crate) fn owner_ref(kind: &str, namespace: &str, name: &str) -> OwnerRef {
    OwnerRef {
        kind: kind.to_owned().into(),
        name: name.into(),
        uid: format!("uid-{kind}-{namespace}-{name}").into(),
        controller: true,
    }
}

impl PodBuilder {
    pub fn node(mut self, name: &str) -> Self {
        self.0.node_name = Some(name.into());
        self
    }
    /// CPU request in millicores (makes the pod Burstable).
    pub fn cpu(mut self, milli: i64) -> Self {
        self.0.requests.cpu = milli;
        self.0.qos = self.0.qos.max(Qos::Burstable);
        self
    }
    pub fn memory(mut self, bytes: i64) -> Self {
        self.0.requests.memory = bytes;
        self.0.qos = self.0.qos.max(Qos::Burstable);
        self
    }
    pub fn resource(mut self, name: &str, v: i64) -> Self {
        self.0.requests.set(name, v);
        self
    }
    pub fn qos(mut self, q: Qos) -> Self {
        self.0.qos = q;
        self
    }
    pub fn owner(mut self, kind: &str, name: &str) -> Self {
        let ns = self.0.namespace.clone();
        self.0.owners = Arc::new([owner_ref(kind, &ns, name)]);
        self
    }
    /// No ownerReferences.
    pub fn bare(mut self) -> Self {
        self.0.owners = Arc::new([]);
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> Self {
        let mut pairs: Vec<(Box<str>, Box<str>)> = self
            .0
            .labels
            .iter()
            .filter(|(key, _)| *key != k)
            .map(|(a, b)| (a.into(), b.into()))
            .collect();
        pairs.push((k.into(), v.into()));
        self.0.labels = Labels::new(pairs);
        self
    }
    /// `spec.terminationGracePeriodSeconds`.
    pub fn grace(mut self, seconds: i64) -> Self {
        self.0.termination_grace_seconds = Some(seconds);
        self
    }
    pub fn priority(mut self, p: i32) -> Self {
        self.0.priority = Some(p);
        self
    }
    pub fn priority_class(mut self, name: &str) -> Self {
        self.0.priority_class_name = Some(name.into());
        self
    }
    pub fn evict_annotation(mut self) -> Self {
        self.0.has_evict_annotation = true;
        self
    }
    /// Another disruptor's do-not-disrupt annotation.
    pub fn do_not_disrupt(mut self, which: super::DoNotDisrupt) -> Self {
        self.0.do_not_disrupt = Some(which);
        self
    }

    /// `do-not-evict-until`: protected until these unix seconds.
    pub fn protected_until(mut self, t: i64) -> Self {
        self.0.protected_until = Some(t);
        self
    }

    pub fn prefer_no_eviction(mut self) -> Self {
        self.0.has_prefer_no_eviction_annotation = true;
        self
    }
    /// `descheduler.alpha.kubernetes.io/request-evict-only`.
    pub fn request_evict_only(mut self) -> Self {
        self.0.has_request_evict_only_annotation = true;
        self
    }
    /// `descheduler.alpha.kubernetes.io/eviction-in-progress`.
    pub fn eviction_in_progress(mut self) -> Self {
        self.0.has_eviction_in_progress_annotation = true;
        self
    }
    pub fn mirror(mut self) -> Self {
        self.0.is_mirror = true;
        self
    }
    pub fn static_pod(mut self) -> Self {
        self.0.is_static = true;
        self
    }
    pub fn terminating(mut self) -> Self {
        self.0.terminating = true;
        self
    }
    pub fn phase(mut self, p: Phase) -> Self {
        self.0.phase = p;
        self
    }
    pub fn local_storage(mut self) -> Self {
        self.0.has_local_storage = true;
        self
    }
    pub fn pvc(mut self, claim: &str) -> Self {
        push(&mut self.0.pvc_claims, claim.into());
        self
    }
    /// `status.reason`.
    pub fn status_reason(mut self, reason: &str) -> Self {
        self.0.status_mut().reason = Some(reason.into());
        self
    }
    /// Appends an application container status.
    pub fn container_status(mut self, restarts: i32, state: ContainerState) -> Self {
        self.0.status_mut().containers.push(ContainerStatus {
            restart_count: restarts,
            state,
        });
        self
    }
    /// Appends an init container status.
    pub fn init_container_status(mut self, restarts: i32, state: ContainerState) -> Self {
        self.0.status_mut().init_containers.push(ContainerStatus {
            restart_count: restarts,
            state,
        });
        self
    }
    /// Appends an ephemeral container status.
    pub fn ephemeral_container_status(mut self, state: ContainerState) -> Self {
        self.0
            .status_mut()
            .ephemeral_containers
            .push(ContainerStatus {
                restart_count: 0,
                state,
            });
        self
    }
    /// Appends a condition.
    pub fn condition(
        mut self,
        kind: &str,
        status: ConditionStatus,
        reason: Option<&str>,
        last_transition: Option<i64>,
    ) -> Self {
        self.0.status_mut().conditions.push(PodCondition {
            kind: kind.to_owned().into(),
            status,
            reason: reason.map(Into::into),
            last_transition,
        });
        self
    }
    pub fn created(mut self, t: i64) -> Self {
        self.0.created = t;
        self
    }
    pub fn started(mut self, t: Option<i64>) -> Self {
        self.0.started = t;
        self
    }
    pub fn image(mut self, image: &str) -> Self {
        self.0.images = Arc::new([image.into()]);
        self
    }
    pub fn images(mut self, images: &[&str]) -> Self {
        let mut images: Vec<Box<str>> = images.iter().map(|i| (*i).into()).collect();
        images.sort();
        self.0.images = images.into();
        self
    }
    pub fn toleration(mut self, key: &str, value: &str, effect: Option<TaintEffect>) -> Self {
        push(
            &mut self.0.tolerations,
            Toleration {
                key: key.to_owned().into(),
                exists: value.is_empty(),
                value: value.into(),
                effect,
            },
        );
        self
    }
    pub fn node_selector(mut self, k: &str, v: &str) -> Self {
        let mut pairs: Vec<(Box<str>, Box<str>)> = self
            .0
            .node_selector
            .iter()
            .map(|(a, b)| (a.into(), b.into()))
            .collect();
        pairs.push((k.into(), v.into()));
        self.0.node_selector = Labels::new(pairs);
        self
    }
    pub fn affinity(mut self, a: Affinity) -> Self {
        self.0.affinity = Some(Arc::new(a));
        self
    }
    /// A topology spread constraint selecting pods with `label_key=label_value`.
    pub fn spread(
        mut self,
        max_skew: i32,
        topology_key: &str,
        when: WhenUnsatisfiable,
        label_key: &str,
        label_value: &str,
    ) -> Self {
        let spec = LabelSelectorSpec {
            match_labels: [(label_key.to_string(), label_value.to_string())].into(),
            match_expressions: Vec::new(),
        };
        push(
            &mut self.0.topology_spread,
            TopologySpreadConstraint {
                max_skew,
                topology_key: topology_key.into(),
                when_unsatisfiable: when,
                label_selector: Some(Selector::compile(&spec).expect("valid selector")),
                min_domains: None,
                node_affinity_policy: InclusionPolicy::Honor,
                node_taints_policy: InclusionPolicy::Ignore,
                match_label_keys: Vec::new(),
            },
        );
        self
    }
    pub fn spread_constraint(mut self, c: TopologySpreadConstraint) -> Self {
        push(&mut self.0.topology_spread, c);
        self
    }
    pub fn host_port(mut self, port: u16) -> Self {
        push(&mut self.0.host_ports, HostPort { port, protocol: 0 });
        self
    }
    fn affinity_mut(&mut self) -> &mut Affinity {
        Arc::make_mut(self.0.affinity.get_or_insert_with(Default::default))
    }
    /// Adds a required pod anti-affinity term (see [`affinity_term`]).
    pub fn anti_affinity(mut self, term: PodAffinityTerm) -> Self {
        self.affinity_mut().pod_anti_affinity_required.push(term);
        self
    }
    /// Sets the required node affinity (at least one term must match; see [`node_term`]).
    pub fn required_node_affinity(mut self, terms: Vec<NodeSelectorTerm>) -> Self {
        self.affinity_mut().node_required = Some(terms);
        self
    }
    /// Adds a preferred node affinity term with its weight (see [`node_term`]).
    pub fn preferred_node_affinity(mut self, weight: i32, preference: NodeSelectorTerm) -> Self {
        self.affinity_mut()
            .node_preferred
            .push(PreferredSchedulingTerm { weight, preference });
        self
    }
    /// A member of the scheduler-plugins PodGroup `group` (the `scheduling.x-k8s.io/pod-group`
    /// label).
    /// A pod of Deployment `name`: controlled by its ReplicaSet `<name>-5f6d`, labelled
    /// `pod-template-hash: 5f6d` and `app: <name>`.
    pub fn of_deployment(self, name: &str) -> Self {
        self.owner("ReplicaSet", &format!("{name}-5f6d"))
            .label(super::workloads::POD_TEMPLATE_HASH_LABEL, "5f6d")
            .label("app", name)
    }

    pub fn pod_group(self, group: &str) -> Self {
        self.label(POD_GROUP_LABEL, group)
    }
    /// A member of the Volcano PodGroup `group` (the `scheduling.k8s.io/group-name`
    /// annotation).
    pub fn volcano_group(mut self, group: &str) -> Self {
        self.0.volcano_group = Some(group.into());
        self
    }
    /// A member of the Kubernetes PodGroup `group` (`spec.schedulingGroup.podGroupName`).
    pub fn scheduling_group(mut self, group: &str) -> Self {
        self.0.pod_group = Some(group.into());
        self
    }
    pub fn build(self) -> Pod {
        self.0
    }
}

/// A scheduler-plugins PodGroup (`scheduling.x-k8s.io/v1alpha1`).
pub fn pod_group(namespace: &str, name: &str, min_member: i32) -> PodGroup {
    PodGroup {
        kind: GangKind::SchedulerPlugins,
        namespace: namespace.into(),
        name: name.into(),
        min_member,
        disruption: None,
    }
}

/// A Volcano PodGroup (`scheduling.volcano.sh/v1beta1`).
pub fn volcano_group(namespace: &str, name: &str, min_member: i32) -> PodGroup {
    PodGroup {
        kind: GangKind::Volcano,
        ..pod_group(namespace, name, min_member)
    }
}

/// A Kubernetes PodGroup (`scheduling.k8s.io/v1beta1`) with gang `minCount` and
/// `disruptionMode` (None: the field absent).
pub fn k8s_pod_group(
    namespace: &str,
    name: &str,
    min_count: i32,
    disruption: Option<DisruptionMode>,
) -> PodGroup {
    PodGroup {
        kind: GangKind::Kubernetes,
        disruption,
        ..pod_group(namespace, name, min_count)
    }
}

/// A Deployment of `replicas` whose rollout is over (every replica updated and available).
pub fn deployment(namespace: &str, name: &str, replicas: i32) -> super::Deployment {
    super::Deployment {
        namespace: namespace.into(),
        name: name.into(),
        uid: format!("uid-Deployment-{namespace}-{name}").into(),
        replicas,
        paused: false,
        generation: 1,
        observed_generation: 1,
        status_replicas: replicas,
        updated_replicas: replicas,
        available_replicas: replicas,
        surge_in_flight: None,
    }
}

/// A PDB over pods with `label_key=label_value` that allows `allowed` disruptions.
pub fn pdb(namespace: &str, name: &str, label_key: &str, label_value: &str, allowed: i32) -> Pdb {
    let spec = LabelSelectorSpec {
        match_labels: [(label_key.to_string(), label_value.to_string())].into(),
        match_expressions: Vec::new(),
    };
    Pdb {
        namespace: namespace.into(),
        name: name.into(),
        selector: Selector::compile(&spec).expect("valid selector"),
        disruptions_allowed: allowed,
    }
}

/// A pod (anti-)affinity term over `topology_key` selecting pods labelled
/// `label_key=label_value` in the owner's namespace (no namespaces, no namespaceSelector).
pub fn affinity_term(topology_key: &str, label_key: &str, label_value: &str) -> PodAffinityTerm {
    let spec = LabelSelectorSpec {
        match_labels: [(label_key.to_string(), label_value.to_string())].into(),
        match_expressions: Vec::new(),
    };
    PodAffinityTerm {
        label_selector: Some(Selector::compile(&spec).expect("valid selector")),
        namespaces: Vec::new(),
        namespace_selector: None,
        topology_key: topology_key.into(),
    }
}

/// A nodeSelectorTerm requiring the node label `key` to be one of `values`.
pub fn node_term(key: &str, values: &[&str]) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: vec![crate::labels::Requirement::In(
            key.into(),
            values.iter().map(|v| (*v).into()).collect(),
        )],
        match_fields: Vec::new(),
    }
}

pub fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    Namespace {
        name: name.into(),
        labels: Labels::new(
            labels
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
        ),
    }
}

/// Builds a snapshot from nodes and pods (and optionally PDBs).
pub fn snapshot(nodes: Vec<Node>, pods: Vec<Pod>) -> ClusterSnapshot {
    ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods,
        ..Default::default()
    })
}
