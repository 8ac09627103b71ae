//! Writing a snapshot back out: the model as a `kind: List` of Kubernetes objects, which
//! [`super::decode`] reads into the same model (what the decision log keeps, so that a
//! cycle can be planned again offline with `--snapshot`).
//!
//! Only what the model holds is written, in the fields the decoder reads. Figures the model
//! computes are written so that they compute to the same values: a pod's requests as
//! pod-level requests (cpu, memory) and overhead (other resources), its QoS class through
//! its containers' requests and limits, its local storage as an `emptyDir` volume.
//! Measured usage is not part of the cluster's objects and is not written.

use super::decode;
use super::workloads::SURGE_IN_FLIGHT_ANNOTATION;
use super::{
    Autoscaler, ClusterSnapshot, ContainerState, ContainerStatus, Deployment, DisruptionMode,
    GangKind, InclusionPolicy, Node, NodeSelectorTerm, Pdb, Pod, PodAffinityTerm, PodGroup, Qos,
    ResourceQuota, Resources, TaintEffect, WhenUnsatisfiable, CONFIG_SOURCE_ANNOTATION,
    EVICTION_IN_PROGRESS_ANNOTATION, EVICT_ANNOTATION, MIRROR_ANNOTATION,
    PREFER_NO_EVICTION_ANNOTATION, REQUEST_EVICT_ONLY_ANNOTATION, VOLCANO_GROUP_ANNOTATION,
};
use crate::labels::{Labels, Requirement, Selector};
use descheduler_model::snapshot::{
    DoNotDisrupt, DO_NOT_EVICT_UNTIL_ANNOTATION, KARPENTER_DO_NOT_DISRUPT_ANNOTATION,
    PROTECTED_UNTIL_UNREADABLE, SAFE_TO_EVICT_ANNOTATION,
};
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// The label key of the selector written for a budget that selects nothing (a budget the
/// API server holds without a selector): it both exists and does not, which no pod has.
const NOTHING_KEY: &str = "descheduler.alpha.kubernetes.io/selects-nothing";

/// Writes `snap` as one JSON `kind: List`, an object a line.
pub fn write_list(snap: &ClusterSnapshot, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[")?;
    let mut first = true;
    let mut item = |mut value: Value, out: &mut dyn Write| -> io::Result<()> {
        drop_nulls(&mut value);
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        serde_json::to_writer(&mut *out, &value).map_err(io::Error::from)
    };
    for ns in &snap.namespaces {
        item(
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": &*ns.name, "labels": labels(&ns.labels)}}),
            out,
        )?;
    }
    for pc in &snap.priority_classes {
        item(
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": &*pc.name}, "value": pc.value}),
            out,
        )?;
    }
    for node in &snap.nodes {
        item(node_object(node), out)?;
    }
    for pdb in &snap.pdbs {
        item(pdb_object(pdb), out)?;
    }
    for group in &snap.pod_groups {
        item(pod_group_object(group), out)?;
    }
    for pod in snap.pods.iter() {
        item(pod_object(pod), out)?;
    }
    let w = &snap.workloads;
    for d in &w.deployments {
        item(deployment_object(d), out)?;
    }
    for a in &w.autoscalers {
        item(autoscaler_object(a), out)?;
    }
    for q in &w.quotas {
        item(quota_object(q), out)?;
    }
    out.write_all(b"\n]}\n")
}

/// Leaves out the fields that are null (an absent optional field of the model).
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

fn labels(l: &Labels) -> Value {
    Value::Object(
        l.iter()
            .map(|(k, v)| (k.to_string(), Value::from(v)))
            .collect(),
    )
}

/// RFC 3339 in UTC, as the API server writes times.
fn time(unix: i64) -> Value {
    chrono::DateTime::from_timestamp(unix, 0)
        .map(|t| Value::from(t.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
        .unwrap_or(Value::Null)
}

/// An amount as a quantity: millicores for cpu, whole units for the rest.
fn quantity(name: &str, value: i64) -> Value {
    if name == super::RESOURCE_CPU {
        Value::from(format!("{value}m"))
    } else {
        Value::from(value.to_string())
    }
}

fn resource_list<'a>(items: impl Iterator<Item = (&'a str, i64)>) -> Map<String, Value> {
    items
        .map(|(name, v)| (name.to_string(), quantity(name, v)))
        .collect()
}

fn effect(e: TaintEffect) -> &'static str {
    match e {
        TaintEffect::NoSchedule => "NoSchedule",
        TaintEffect::PreferNoSchedule => "PreferNoSchedule",
        TaintEffect::NoExecute => "NoExecute",
    }
}

fn node_object(node: &Node) -> Value {
    let taints: Vec<Value> = node
        .taints
        .iter()
        .map(|t| json!({"key": &*t.key, "value": &*t.value, "effect": effect(t.effect)}))
        .collect();
    // One entry per name: the model keeps each name of an image with its size.
    let images: Vec<Value> = node
        .images
        .iter()
        .map(|(name, size)| json!({"names": [&**name], "sizeBytes": size}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": &*node.name, "labels": labels(&node.labels)},
        "spec": {"unschedulable": node.unschedulable, "taints": taints},
        "status": {
            "allocatable": resource_list(node.allocatable.iter()),
            "conditions": [{"type": "Ready", "status": if node.ready { "True" } else { "False" }}],
            "images": images,
        },
    })
}

fn requirement(r: &Requirement) -> Value {
    let (key, operator, values): (&str, &str, Vec<String>) = match r {
        Requirement::In(k, vs) => (k, "In", vs.iter().map(|v| v.to_string()).collect()),
        Requirement::NotIn(k, vs) => (k, "NotIn", vs.iter().map(|v| v.to_string()).collect()),
        Requirement::Exists(k) => (k, "Exists", Vec::new()),
        Requirement::DoesNotExist(k) => (k, "DoesNotExist", Vec::new()),
        Requirement::Gt(k, n) => (k, "Gt", vec![n.to_string()]),
        Requirement::Lt(k, n) => (k, "Lt", vec![n.to_string()]),
    };
    let mut out = json!({"key": key, "operator": operator});
    if !values.is_empty() {
        out["values"] = json!(values);
    }
    out
}

/// A label selector as `matchExpressions` (which compile to the same requirements, in the
/// same order, as the `matchLabels` they may have come from).
fn selector(s: &Selector) -> Value {
    if s.matches_nothing() {
        return json!({"matchExpressions": [
            {"key": NOTHING_KEY, "operator": "Exists"},
            {"key": NOTHING_KEY, "operator": "DoesNotExist"},
        ]});
    }
    let exprs: Vec<Value> = s.requirements().iter().map(requirement).collect();
    json!({ "matchExpressions": exprs })
}

fn pdb_object(pdb: &Pdb) -> Value {
    json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": &*pdb.name, "namespace": &*pdb.namespace},
        "spec": {"selector": selector(&pdb.selector)},
        "status": {"disruptionsAllowed": pdb.disruptions_allowed},
    })
}

fn pod_group_object(group: &PodGroup) -> Value {
    let api_version = match group.kind {
        GangKind::SchedulerPlugins => "scheduling.x-k8s.io/v1alpha1",
        GangKind::Volcano => "scheduling.volcano.sh/v1beta1",
        GangKind::Kubernetes => "scheduling.k8s.io/v1beta1",
    };
    let spec = match group.kind {
        GangKind::SchedulerPlugins | GangKind::Volcano => json!({"minMember": group.min_member}),
        GangKind::Kubernetes => {
            let mut spec = json!({"schedulingPolicy": {"gang": {"minCount": group.min_member}}});
            match group.disruption {
                Some(DisruptionMode::Single) => spec["disruptionMode"] = json!({"single": {}}),
                Some(DisruptionMode::All) => spec["disruptionMode"] = json!({"all": {}}),
                None => {}
            }
            spec
        }
    };
    json!({
        "apiVersion": api_version, "kind": "PodGroup",
        "metadata": {"name": &*group.name, "namespace": &*group.namespace},
        "spec": spec,
    })
}

fn deployment_object(d: &Deployment) -> Value {
    let mut annotations = Map::new();
    if let Some(mark) = &d.surge_in_flight {
        annotations.insert(SURGE_IN_FLIGHT_ANNOTATION.into(), Value::from(&**mark));
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": &*d.name, "namespace": &*d.namespace, "uid": &*d.uid,
                     "generation": d.generation, "annotations": annotations},
        "spec": {"replicas": d.replicas, "paused": d.paused},
        "status": {
            "observedGeneration": d.observed_generation,
            "replicas": d.status_replicas,
            "updatedReplicas": d.updated_replicas,
            "availableReplicas": d.available_replicas,
        },
    })
}

fn autoscaler_object(a: &Autoscaler) -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": &*a.name, "namespace": &*a.namespace},
        "spec": {"scaleTargetRef": {"kind": &*a.target_kind, "name": &*a.target_name}},
    })
}

fn quota_object(q: &ResourceQuota) -> Value {
    let amounts = |list: &[(Box<str>, i64)]| -> Map<String, Value> {
        list.iter()
            .map(|(name, v)| {
                let text = if decode::quota_in_milli(name) {
                    format!("{v}m")
                } else {
                    v.to_string()
                };
                (name.to_string(), Value::from(text))
            })
            .collect()
    };
    json!({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": &*q.name, "namespace": &*q.namespace},
        "status": {"hard": amounts(&q.hard), "used": amounts(&q.used)},
    })
}

fn node_term(t: &NodeSelectorTerm) -> Value {
    json!({
        "matchExpressions": t.match_expressions.iter().map(requirement).collect::<Vec<_>>(),
        "matchFields": t.match_fields.iter().map(requirement).collect::<Vec<_>>(),
    })
}

fn pod_affinity_term(t: &PodAffinityTerm) -> Value {
    let mut out = json!({
        "topologyKey": &*t.topology_key,
        "namespaces": t.namespaces.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
    });
    if let Some(s) = &t.label_selector {
        out["labelSelector"] = selector(s);
    }
    if let Some(s) = &t.namespace_selector {
        out["namespaceSelector"] = selector(s);
    }
    out
}

fn affinity(a: &super::Affinity) -> Value {
    let mut node = Map::new();
    if let Some(terms) = &a.node_required {
        node.insert(
            "requiredDuringSchedulingIgnoredDuringExecution".into(),
            json!({"nodeSelectorTerms": terms.iter().map(node_term).collect::<Vec<_>>()}),
        );
    }
    node.insert(
        "preferredDuringSchedulingIgnoredDuringExecution".into(),
        a.node_preferred
            .iter()
            .map(|p| json!({"weight": p.weight, "preference": node_term(&p.preference)}))
            .collect(),
    );
    let pod = |required: &[PodAffinityTerm], preferred: &[super::WeightedPodAffinityTerm]| {
        json!({
            "requiredDuringSchedulingIgnoredDuringExecution":
                required.iter().map(pod_affinity_term).collect::<Vec<_>>(),
            "preferredDuringSchedulingIgnoredDuringExecution": preferred.iter()
                .map(|w| json!({"weight": w.weight, "podAffinityTerm": pod_affinity_term(&w.term)}))
                .collect::<Vec<_>>(),
        })
    };
    json!({
        "nodeAffinity": node,
        "podAffinity": pod(&a.pod_affinity_required, &a.pod_affinity_preferred),
        "podAntiAffinity": pod(&a.pod_anti_affinity_required, &a.pod_anti_affinity_preferred),
    })
}

fn container_statuses(statuses: &[ContainerStatus]) -> Vec<Value> {
    statuses
        .iter()
        .map(|c| {
            let state = match &c.state {
                ContainerState::Unknown => json!({}),
                ContainerState::Running => json!({"running": {}}),
                ContainerState::Waiting { reason } => {
                    json!({"waiting": {"reason": reason.as_deref()}})
                }
                ContainerState::Terminated { reason, exit_code } => {
                    json!({"terminated": {"reason": reason.as_deref(), "exitCode": exit_code}})
                }
            };
            json!({"restartCount": c.restart_count, "state": state})
        })
        .collect()
}

/// The containers of a pod: one per image, and the resources that give its QoS class. A
/// pod without containers carries those (and its host ports) on an init container, which
/// adds no image.
fn containers(pod: &Pod) -> (Vec<Value>, Vec<Value>) {
    let qos_resources = match pod.qos {
        Qos::BestEffort => None,
        // A request without a limit; the pod-level requests set the totals.
        Qos::Burstable => Some(json!({"requests": {"cpu": "1m"}})),
        // Limits on every container; requests default to them.
        Qos::Guaranteed => Some(json!({"limits": {"cpu": "1m", "memory": "1"}})),
    };
    let ports: Vec<Value> = pod
        .host_ports
        .iter()
        .map(|p| {
            let protocol = match p.protocol {
                1 => "UDP",
                2 => "SCTP",
                _ => "TCP",
            };
            json!({"containerPort": p.port, "hostPort": p.port, "protocol": protocol})
        })
        .collect();
    let container = |name: String, image: &str, first: bool| {
        let mut c = json!({"name": name, "image": image});
        let guaranteed = pod.qos == Qos::Guaranteed;
        if let Some(r) = &qos_resources {
            if first || guaranteed {
                c["resources"] = r.clone();
            }
        }
        if first && !ports.is_empty() {
            c["ports"] = json!(ports);
        }
        c
    };
    let main: Vec<Value> = pod
        .images
        .iter()
        .enumerate()
        .map(|(i, image)| container(format!("c{i}"), image, i == 0))
        .collect();
    let init = if main.is_empty() && (qos_resources.is_some() || !ports.is_empty()) {
        vec![container("init".into(), "", true)]
    } else {
        Vec::new()
    };
    (main, init)
}

fn pod_object(pod: &Pod) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata(pod),
           "spec": pod_spec(pod), "status": pod_status(pod)})
}

fn pod_metadata(pod: &Pod) -> Value {
    let mut annotations = Map::new();
    if pod.has_evict_annotation {
        annotations.insert(EVICT_ANNOTATION.into(), "".into());
    }
    if pod.has_prefer_no_eviction_annotation {
        annotations.insert(PREFER_NO_EVICTION_ANNOTATION.into(), "".into());
    }
    match pod.do_not_disrupt {
        Some(DoNotDisrupt::Karpenter) => {
            annotations.insert(KARPENTER_DO_NOT_DISRUPT_ANNOTATION.into(), "true".into());
        }
        Some(DoNotDisrupt::ClusterAutoscaler) => {
            annotations.insert(SAFE_TO_EVICT_ANNOTATION.into(), "false".into());
        }
        None => {}
    }
    if let Some(t) = pod.protected_until {
        let text = if t == PROTECTED_UNTIL_UNREADABLE {
            Value::from("unreadable")
        } else {
            time(t)
        };
        annotations.insert(DO_NOT_EVICT_UNTIL_ANNOTATION.into(), text);
    }
    if pod.has_request_evict_only_annotation {
        annotations.insert(REQUEST_EVICT_ONLY_ANNOTATION.into(), "".into());
    }
    if pod.has_eviction_in_progress_annotation {
        annotations.insert(EVICTION_IN_PROGRESS_ANNOTATION.into(), "".into());
    }
    if pod.is_mirror {
        annotations.insert(MIRROR_ANNOTATION.into(), "".into());
    }
    if pod.is_static {
        annotations.insert(CONFIG_SOURCE_ANNOTATION.into(), "file".into());
    }
    if let Some(g) = &pod.volcano_group {
        annotations.insert(VOLCANO_GROUP_ANNOTATION.into(), Value::from(&**g));
    }
    let owners: Vec<Value> = pod
        .owners
        .iter()
        .map(|o| {
            json!({"apiVersion": "v1", "kind": &*o.kind, "name": &*o.name, "uid": &*o.uid,
                   "controller": o.controller})
        })
        .collect();
    let mut metadata = json!({
        "name": &*pod.name, "namespace": &*pod.namespace, "uid": &*pod.uid,
        "labels": labels(&pod.labels), "annotations": annotations, "ownerReferences": owners,
    });
    if pod.created != 0 {
        metadata["creationTimestamp"] = time(pod.created);
    }
    if pod.terminating {
        metadata["deletionTimestamp"] = time(pod.created);
    }
    metadata
}

fn pod_spec(pod: &Pod) -> Value {
    let (main, init) = containers(pod);
    let mut volumes = Vec::new();
    if pod.has_local_storage {
        volumes.push(json!({"name": "local", "emptyDir": {}}));
    }
    for (i, claim) in pod.pvc_claims.iter().enumerate() {
        volumes.push(
            json!({"name": format!("claim{i}"), "persistentVolumeClaim": {"claimName": &**claim}}),
        );
    }
    let r: &Resources = &pod.requests;
    let mut spec = json!({
        "containers": main,
        "initContainers": init,
        "resources": {"requests": {"cpu": quantity("cpu", r.cpu), "memory": quantity("memory", r.memory)}},
        "overhead": resource_list(r.iter().filter(|(name, _)| {
            ![super::RESOURCE_CPU, super::RESOURCE_MEMORY, super::RESOURCE_PODS].contains(name)
        })),
        "priority": pod.priority,
        "tolerations": tolerations(pod),
        "nodeSelector": labels(&pod.node_selector),
        "topologySpreadConstraints": spread_constraints(pod),
        "volumes": volumes,
    });
    if let Some(n) = &pod.node_name {
        spec["nodeName"] = Value::from(&**n);
    }
    if let Some(pc) = &pod.priority_class_name {
        spec["priorityClassName"] = Value::from(&**pc);
    }
    if let Some(g) = pod.termination_grace_seconds {
        spec["terminationGracePeriodSeconds"] = Value::from(g);
    }
    if let Some(a) = &pod.affinity {
        spec["affinity"] = affinity(a);
    }
    if pod.has_resource_claims {
        spec["resourceClaims"] = json!([{"name": "claim"}]);
    }
    if let Some(g) = &pod.pod_group {
        spec["schedulingGroup"] = json!({"podGroupName": &**g});
    }
    spec
}

fn tolerations(pod: &Pod) -> Vec<Value> {
    pod.tolerations
        .iter()
        .map(|t| {
            let mut v = json!({"key": &*t.key, "operator": if t.exists { "Exists" } else { "Equal" },
                               "value": &*t.value});
            if let Some(e) = t.effect {
                v["effect"] = effect(e).into();
            }
            v
        })
        .collect()
}

fn spread_constraints(pod: &Pod) -> Vec<Value> {
    pod.topology_spread
        .iter()
        .map(|c| {
            let mut v = json!({
                "maxSkew": c.max_skew,
                "topologyKey": &*c.topology_key,
                "whenUnsatisfiable": match c.when_unsatisfiable {
                    WhenUnsatisfiable::DoNotSchedule => "DoNotSchedule",
                    WhenUnsatisfiable::ScheduleAnyway => "ScheduleAnyway",
                },
                "minDomains": c.min_domains,
                "nodeAffinityPolicy": inclusion(c.node_affinity_policy),
                "nodeTaintsPolicy": inclusion(c.node_taints_policy),
                "matchLabelKeys": c.match_label_keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
            });
            if let Some(s) = &c.label_selector {
                v["labelSelector"] = selector(s);
            }
            v
        })
        .collect()
}

fn pod_status(pod: &Pod) -> Value {
    let detail = pod.status();
    let conditions: Vec<Value> = detail
        .conditions
        .iter()
        .map(|c| {
            let mut v = json!({"type": &*c.kind, "status": c.status.as_str(),
                               "reason": c.reason.as_deref()});
            if let Some(t) = c.last_transition {
                v["lastTransitionTime"] = time(t);
            }
            v
        })
        .collect();
    let mut status = json!({
        "phase": pod.phase.as_str(),
        "reason": detail.reason.as_deref(),
        "conditions": conditions,
        "containerStatuses": container_statuses(&detail.containers),
        "initContainerStatuses": container_statuses(&detail.init_containers),
        "ephemeralContainerStatuses": container_statuses(&detail.ephemeral_containers),
    });
    if let Some(t) = pod.started {
        status["startTime"] = time(t);
    }
    status
}

fn inclusion(p: InclusionPolicy) -> &'static str {
    match p {
        InclusionPolicy::Honor => "Honor",
        InclusionPolicy::Ignore => "Ignore",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::synthetic::{self, Config};

    /// Every object's model, as its Debug text, without the shape (numbered as read).
    fn model(snap: &ClusterSnapshot) -> Vec<String> {
        let mut out: Vec<String> = snap.nodes.iter().map(|n| format!("{n:?}")).collect();
        out.extend(snap.pods.iter().map(|p| {
            let mut p = p.clone();
            p.shape = 0;
            format!("{p:?}")
        }));
        out.extend(snap.pdbs.iter().map(|p| format!("{p:?}")));
        out.extend(snap.namespaces.iter().map(|p| format!("{p:?}")));
        out.extend(snap.priority_classes.iter().map(|p| format!("{p:?}")));
        out.extend(snap.pod_groups.iter().map(|p| format!("{p:?}")));
        out.push(format!("{:?}", snap.workloads));
        out
    }

    fn round_trip(snap: &ClusterSnapshot) -> ClusterSnapshot {
        let mut bytes = Vec::new();
        write_list(snap, &mut bytes).unwrap();
        crate::snapshot::decode::load_bytes("kept.json", &bytes).unwrap()
    }

    #[test]
    fn a_written_snapshot_reads_back_as_the_same_model() {
        for seed in [1, 7] {
            let snap = synthetic::snapshot(&Config::new(40, 900, seed));
            let back = round_trip(&snap);
            let (a, b) = (model(&snap), model(&back));
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!(x, y);
            }
        }
    }

    #[test]
    fn every_field_of_the_model_survives_the_round_trip() {
        let text = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {zone: a}}
  spec:
    unschedulable: true
    taints: [{key: gpu, value: "yes", effect: NoSchedule}]
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "110", nvidia.com/gpu: "2"}
    conditions: [{type: Ready, status: "False"}]
    images: [{names: [img/b@sha256:1, img/b:2], sizeBytes: 300}, {names: [img/a:1], sizeBytes: 5}]
- apiVersion: v1
  kind: Pod
  metadata:
    name: p1
    namespace: ns
    uid: u1
    creationTimestamp: "2026-01-02T03:04:05Z"
    deletionTimestamp: "2026-01-02T03:05:05Z"
    labels: {app: web, scheduling.x-k8s.io/pod-group: g}
    annotations:
      descheduler.alpha.kubernetes.io/evict: ""
      descheduler.alpha.kubernetes.io/prefer-no-eviction: ""
      kubernetes.io/config.source: file
      scheduling.k8s.io/group-name: vg
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: r1, controller: true}]
  spec:
    nodeName: n1
    priority: 100
    priorityClassName: high
    containers:
    - {image: b, resources: {requests: {cpu: 250m, memory: 64Mi, nvidia.com/gpu: "1"}, limits: {cpu: 250m, memory: 64Mi}}}
    - {image: a, resources: {requests: {cpu: 500m}, limits: {cpu: "1", memory: 1Gi}}, ports: [{containerPort: 80, hostPort: 8080, protocol: UDP}]}
    overhead: {cpu: 10m}
    tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}, {key: x, value: y}]
    nodeSelector: {zone: a}
    volumes: [{name: v, emptyDir: {}}, {name: c, persistentVolumeClaim: {claimName: data}}]
    resourceClaims: [{name: r}]
    topologySpreadConstraints:
    - maxSkew: 2
      topologyKey: zone
      whenUnsatisfiable: ScheduleAnyway
      minDomains: 2
      nodeTaintsPolicy: Honor
      matchLabelKeys: [pod-template-hash]
      labelSelector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: NotIn, values: [db]}]}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: cores, operator: Gt, values: ["3"]}]
            matchFields: [{key: metadata.name, operator: In, values: [n1, n2]}]
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 5
          preference: {matchExpressions: [{key: zone, operator: DoesNotExist}]}
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: zone
          labelSelector: {matchLabels: {app: web}}
          namespaces: [ns, other]
          namespaceSelector: {matchExpressions: [{key: team, operator: Exists}]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 3
          podAffinityTerm: {topologyKey: host}
  status:
    phase: Running
    reason: Evicted
    startTime: "2026-01-02T03:04:06Z"
    conditions: [{type: Ready, status: "False", reason: Crash, lastTransitionTime: "2026-01-02T03:04:07Z"}]
    containerStatuses:
    - {restartCount: 3, state: {waiting: {reason: CrashLoopBackOff}}}
    - {restartCount: 0, state: {running: {}}}
    initContainerStatuses: [{restartCount: 1, state: {terminated: {reason: Error, exitCode: 2}}}]
    ephemeralContainerStatuses: [{restartCount: 0, state: {}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: bare, namespace: ns, uid: u2, annotations: {kubernetes.io/config.mirror: x}}
  spec:
    containers: []
    initContainers: [{image: i, resources: {requests: {memory: 1Mi}}, ports: [{hostPort: 9000}]}]
  status: {phase: Pending}
- apiVersion: v1
  kind: Pod
  metadata: {name: guaranteed, namespace: ns, uid: u3}
  spec:
    initContainers: [{resources: {limits: {cpu: "2", memory: 2Gi}}}]
  status: {phase: Failed}
- apiVersion: policy/v1
  kind: PodDisruptionBudget
  metadata: {name: b, namespace: ns}
  spec: {selector: {matchLabels: {app: web}}}
  status: {disruptionsAllowed: 1}
- apiVersion: v1
  kind: Namespace
  metadata: {name: ns, labels: {team: a}}
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: high}
  value: 100
- apiVersion: scheduling.x-k8s.io/v1alpha1
  kind: PodGroup
  metadata: {name: g, namespace: ns}
  spec: {minMember: 3}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata: {name: vg, namespace: ns}
"#;
        let snap = crate::snapshot::decode::load_bytes("fields.yaml", text.as_bytes()).unwrap();
        let back = round_trip(&snap);
        assert_eq!(model(&snap), model(&back));
        assert_eq!(back.nodes[0].image_size("img/b:2"), Some(300));
        assert_eq!(back.nodes[0].images.len(), 3);
        let p = &snap.pods.iter().find(|p| &*p.name == "p1").unwrap();
        // What the round trip is checked on: the figures the decoder computes.
        assert_eq!((p.requests.cpu, p.qos), (760, Qos::Burstable));
        assert!(p.has_local_storage && p.is_static && p.terminating);
        let mirror = snap.pods.iter().find(|p| &*p.name == "bare").unwrap();
        assert!(mirror.is_mirror && mirror.images.is_empty());
        assert_eq!(mirror.host_ports.len(), 1);
        let guaranteed = snap.pods.iter().find(|p| &*p.name == "guaranteed").unwrap();
        assert_eq!(guaranteed.qos, Qos::Guaranteed);
        assert_eq!(guaranteed.requests.cpu, 2000);
    }

    #[test]
    fn deployments_autoscalers_and_quotas_survive_the_round_trip() {
        let text = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    namespace: app
    uid: d1
    generation: 7
    annotations: {descheduler.alpha.kubernetes.io/surge-in-flight: '{"replicas":2,"victim":"u","pod":"web-x","deadline":5}'}
  spec: {replicas: 2, paused: true}
  status: {observedGeneration: 6, replicas: 3, updatedReplicas: 1, availableReplicas: 2}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: api, namespace: app}
- apiVersion: autoscaling/v1
  kind: HorizontalPodAutoscaler
  metadata: {name: web, namespace: app}
  spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5}
- apiVersion: v1
  kind: ResourceQuota
  metadata: {name: q, namespace: app}
  status:
    hard: {cpu: "2", limits.cpu: 1500m, requests.cpu: 0.5, memory: 1Gi, pods: "4", count/pods: "4", requests.nvidia.com/gpu: "1"}
    used: {cpu: 250m, memory: 512Mi, pods: "1"}
"#;
        let snap = crate::snapshot::decode::load_bytes("w.yaml", text.as_bytes()).unwrap();
        let w = &snap.workloads;
        assert_eq!(
            (w.deployments.len(), w.autoscalers.len(), w.quotas.len()),
            (2, 1, 1)
        );
        assert_eq!(w.quotas[0].hard[0], ("count/pods".into(), 4));
        assert!(w.quotas[0].hard.contains(&("requests.cpu".into(), 500)));
        let back = round_trip(&snap);
        assert_eq!(back.workloads, snap.workloads);
        assert_eq!(model(&back), model(&snap));
    }

    #[test]
    fn a_budget_that_selects_nothing_still_protects_nothing() {
        let mut parts = crate::snapshot::SnapshotParts::default();
        parts
            .nodes
            .push(crate::snapshot::builders::node("n1").build());
        parts.pdbs.push(Pdb {
            namespace: "ns".into(),
            name: "b".into(),
            selector: Selector::nothing(),
            disruptions_allowed: 0,
        });
        let snap = ClusterSnapshot::build_with(parts, Vec::new());
        let back = round_trip(&snap);
        let labels = Labels::new(vec![(NOTHING_KEY.into(), "".into())]);
        assert!(!back.pdbs[0].selector.matches(&labels));
        assert!(!back.pdbs[0].selector.matches(&Labels::default()));
    }
}
