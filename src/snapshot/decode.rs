//! Reading a snapshot file: what `kubectl get nodes,pods,poddisruptionbudgets,namespaces,
//! priorityclasses -A -o yaml` (or `-o json`) prints, or a multi-document YAML stream.
//!
//! Only the fields the descheduler needs are decoded (serde skips the rest without building
//! it), straight into the compact model. Errors name the file, the object and the field.

use super::{
    Affinity, ClusterSnapshot, HostPort, InclusionPolicy, Namespace, Node, NodeSelectorTerm,
    OwnerRef, Pdb, Phase, Pod, PodAffinityTerm, PreferredSchedulingTerm, PriorityClass, Qos,
    Resources, SnapshotParts, Taint, TaintEffect, Toleration, TopologySpreadConstraint,
    WeightedPodAffinityTerm, WhenUnsatisfiable, CONFIG_SOURCE_ANNOTATION, EVICT_ANNOTATION,
    MIRROR_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION,
};
use crate::labels::{LabelSelectorSpec, Labels, Requirement, Selector};
use crate::quantity::Quantity;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {file}: cannot read the file: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("snapshot {file}: not a valid Kubernetes object list: {message}. Give the output of `kubectl get nodes,pods,poddisruptionbudgets,namespaces,priorityclasses -A -o yaml` (or -o json), or a multi-document YAML stream")]
    Syntax { file: String, message: String },
    #[error("snapshot {file}: {object}: field {field}: {message}")]
    Field {
        file: String,
        object: String,
        field: String,
        message: String,
    },
    #[error("snapshot {file}: holds no Node objects, so there is nothing to plan. Include nodes: `kubectl get nodes,pods,poddisruptionbudgets,namespaces,priorityclasses -A -o yaml`")]
    NoNodes { file: String },
}

impl SnapshotError {
    fn field(
        file: &str,
        object: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        SnapshotError::Field {
            file: file.to_string(),
            object: object.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Reads a snapshot file and builds the indexed snapshot.
pub fn load_file(path: &Path) -> Result<ClusterSnapshot, SnapshotError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| SnapshotError::Read {
        file: file.clone(),
        source,
    })?;
    load_bytes(&file, &bytes)
}

/// Decodes snapshot bytes (JSON or YAML); `file` is used in error messages.
pub fn load_bytes(file: &str, bytes: &[u8]) -> Result<ClusterSnapshot, SnapshotError> {
    let objects = parse_objects(file, bytes)?;
    let mut parts = SnapshotParts::default();
    for (index, obj) in objects.into_iter().enumerate() {
        add_object(file, index, obj, &mut parts)?;
    }
    if parts.nodes.is_empty() {
        return Err(SnapshotError::NoNodes {
            file: file.to_string(),
        });
    }
    Ok(ClusterSnapshot::build(parts))
}

fn parse_objects(file: &str, bytes: &[u8]) -> Result<Vec<RawObject>, SnapshotError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    let syntax = |message: String| SnapshotError::Syntax {
        file: file.to_string(),
        message,
    };
    match first {
        None => Err(syntax("the file is empty".into())),
        Some(b'{') => serde_json::from_slice::<RawObject>(bytes)
            .map(|o| vec![o])
            .map_err(|_| syntax(json_error_with_path::<RawObject>(bytes))),
        Some(b'[') => serde_json::from_slice::<Vec<RawObject>>(bytes)
            .map_err(|_| syntax(json_error_with_path::<Vec<RawObject>>(bytes))),
        Some(_) => {
            let text = std::str::from_utf8(bytes)
                .map_err(|e| syntax(format!("the file is not UTF-8 text: {e}")))?;
            let docs: Vec<Option<RawObject>> =
                serde_saphyr::from_multiple(text).map_err(|e| syntax(e.to_string()))?;
            Ok(docs.into_iter().flatten().collect())
        }
    }
}

/// Decoding again with path tracking, only once we know it fails, keeps the fast path fast.
fn json_error_with_path<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> String {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(_) => "unexpected trailing content".to_string(),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path.is_empty() || path == "." {
                inner.to_string()
            } else {
                format!("at {path}: {inner}")
            }
        }
    }
}

fn add_object(
    file: &str,
    index: usize,
    obj: RawObject,
    parts: &mut SnapshotParts,
) -> Result<(), SnapshotError> {
    let kind = obj.kind.as_str();
    let label = if obj.metadata.namespace.is_empty() {
        format!("{kind} {}", obj.metadata.name)
    } else {
        format!("{kind} {}/{}", obj.metadata.namespace, obj.metadata.name)
    };
    match kind {
        "List" | "NodeList" | "PodList" | "PodDisruptionBudgetList" | "NamespaceList"
        | "PriorityClassList" => {
            for (i, item) in obj.items.into_iter().enumerate() {
                add_object(file, i, item, parts)?;
            }
            return Ok(());
        }
        "" => {
            return Err(SnapshotError::field(
                file,
                &format!("object #{index}"),
                "kind",
                "missing; every object needs its kind (Node, Pod, PodDisruptionBudget, Namespace, PriorityClass)",
            ))
        }
        _ => {}
    }
    if obj.metadata.name.is_empty() {
        return Err(SnapshotError::field(
            file,
            &format!("{kind} #{index}"),
            "metadata.name",
            "missing",
        ));
    }
    match kind {
        "Node" => parts.nodes.push(convert_node(file, &label, obj)?),
        "Pod" => parts.pods.push(convert_pod(file, &label, obj)?),
        "PodDisruptionBudget" => parts.pdbs.push(convert_pdb(file, &label, obj)?),
        "Namespace" => parts.namespaces.push(Namespace {
            name: obj.metadata.name.into(),
            labels: Labels::from_map(obj.metadata.labels),
        }),
        "PriorityClass" => {
            let value = obj.value.ok_or_else(|| {
                SnapshotError::field(
                    file,
                    &label,
                    "value",
                    "missing; a PriorityClass needs its value",
                )
            })?;
            parts.priority_classes.push(PriorityClass {
                name: obj.metadata.name.into(),
                value,
            })
        }
        // Other kinds (Deployments, Services, ...) carry nothing the planner needs.
        _ => {
            tracing::debug!(kind, name = %obj.metadata.name, "ignoring object of a kind the planner does not read")
        }
    }
    Ok(())
}

fn quantities(
    file: &str,
    object: &str,
    field: &str,
    map: &BTreeMap<String, String>,
    out: &mut Resources,
) -> Result<(), SnapshotError> {
    for (name, text) in map {
        let q = Quantity::parse(text).map_err(|e| {
            SnapshotError::field(file, object, format!("{field}.{name}"), e.to_string())
        })?;
        let v = if name == "cpu" {
            q.milli_value()
        } else {
            q.value()
        };
        out.set(name, v);
    }
    Ok(())
}

fn timestamp(file: &str, object: &str, field: &str, text: &str) -> Result<i64, SnapshotError> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp())
        .map_err(|e| {
            SnapshotError::field(
                file,
                object,
                field,
                format!("invalid RFC 3339 time {text:?}: {e}"),
            )
        })
}

fn convert_node(file: &str, label: &str, obj: RawObject) -> Result<Node, SnapshotError> {
    let RawObject {
        metadata,
        spec,
        status,
        ..
    } = obj;
    let mut allocatable = Resources::default();
    let (src, field) = if status.allocatable.is_empty() {
        (&status.capacity, "status.capacity")
    } else {
        (&status.allocatable, "status.allocatable")
    };
    quantities(file, label, field, src, &mut allocatable)?;
    let mut taints = Vec::with_capacity(spec.taints.len());
    for (i, t) in spec.taints.into_iter().enumerate() {
        let effect = TaintEffect::parse(&t.effect).ok_or_else(|| {
            SnapshotError::field(
                file,
                label,
                format!("spec.taints[{i}].effect"),
                format!(
                    "{:?} is not one of NoSchedule, PreferNoSchedule, NoExecute",
                    t.effect
                ),
            )
        })?;
        taints.push(Taint {
            key: t.key.into(),
            value: t.value.into(),
            effect,
        });
    }
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    Ok(Node {
        name: metadata.name.into(),
        labels: Labels::from_map(metadata.labels),
        unschedulable: spec.unschedulable,
        taints,
        allocatable,
        ready,
        usage: None,
    })
}

fn convert_pdb(file: &str, label: &str, obj: RawObject) -> Result<Pdb, SnapshotError> {
    let selector = match &obj.spec.selector {
        None => Selector::nothing(),
        Some(s) => Selector::compile(s)
            .map_err(|e| SnapshotError::field(file, label, "spec.selector", e.to_string()))?,
    };
    Ok(Pdb {
        namespace: obj.metadata.namespace.into(),
        name: obj.metadata.name.into(),
        selector,
        // A budget the disruption controller has not yet computed allows nothing.
        disruptions_allowed: obj.status.disruptions_allowed.unwrap_or(0),
    })
}

fn selector_opt(
    file: &str,
    label: &str,
    field: &str,
    spec: &Option<LabelSelectorSpec>,
) -> Result<Option<Selector>, SnapshotError> {
    spec.as_ref()
        .map(|s| {
            Selector::compile(s)
                .map_err(|e| SnapshotError::field(file, label, field, e.to_string()))
        })
        .transpose()
}

fn node_requirements(
    file: &str,
    label: &str,
    field: &str,
    reqs: &[RawNodeSelectorRequirement],
) -> Result<Vec<Requirement>, SnapshotError> {
    let mut out = Vec::with_capacity(reqs.len());
    for (i, r) in reqs.iter().enumerate() {
        let key: Box<str> = r.key.as_str().into();
        let values: Vec<Box<str>> = r.values.iter().map(|v| v.as_str().into()).collect();
        let num = || -> Result<i64, SnapshotError> {
            match values.as_slice() {
                [v] => v.parse().map_err(|_| {
                    SnapshotError::field(
                        file,
                        label,
                        format!("{field}[{i}].values"),
                        "Gt and Lt need one integer value",
                    )
                }),
                _ => Err(SnapshotError::field(
                    file,
                    label,
                    format!("{field}[{i}].values"),
                    "Gt and Lt need exactly one value",
                )),
            }
        };
        out.push(match r.operator.as_str() {
            "In" => Requirement::In(key, values),
            "NotIn" => Requirement::NotIn(key, values),
            "Exists" => Requirement::Exists(key),
            "DoesNotExist" => Requirement::DoesNotExist(key),
            "Gt" => Requirement::Gt(key, num()?),
            "Lt" => Requirement::Lt(key, num()?),
            other => {
                return Err(SnapshotError::field(
                    file,
                    label,
                    format!("{field}[{i}].operator"),
                    format!("{other:?} is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt"),
                ))
            }
        });
    }
    Ok(out)
}

fn node_term(
    file: &str,
    label: &str,
    field: &str,
    t: &RawNodeSelectorTerm,
) -> Result<NodeSelectorTerm, SnapshotError> {
    Ok(NodeSelectorTerm {
        match_expressions: node_requirements(
            file,
            label,
            &format!("{field}.matchExpressions"),
            &t.match_expressions,
        )?,
        match_fields: node_requirements(
            file,
            label,
            &format!("{field}.matchFields"),
            &t.match_fields,
        )?,
    })
}

fn pod_affinity_term(
    file: &str,
    label: &str,
    field: &str,
    t: &RawPodAffinityTerm,
) -> Result<PodAffinityTerm, SnapshotError> {
    Ok(PodAffinityTerm {
        label_selector: selector_opt(
            file,
            label,
            &format!("{field}.labelSelector"),
            &t.label_selector,
        )?,
        namespaces: t.namespaces.iter().map(|n| n.as_str().into()).collect(),
        namespace_selector: selector_opt(
            file,
            label,
            &format!("{field}.namespaceSelector"),
            &t.namespace_selector,
        )?,
        topology_key: t.topology_key.as_str().into(),
    })
}

fn convert_affinity(file: &str, label: &str, a: &RawAffinity) -> Result<Affinity, SnapshotError> {
    let mut out = Affinity::default();
    if let Some(na) = &a.node_affinity {
        if let Some(req) = &na.required {
            let mut terms = Vec::new();
            for (i, t) in req.node_selector_terms.iter().enumerate() {
                terms.push(node_term(
                    file,
                    label,
                    &format!("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"),
                    t,
                )?);
            }
            out.node_required = Some(terms);
        }
        for (i, p) in na.preferred.iter().enumerate() {
            out.node_preferred.push(PreferredSchedulingTerm {
                weight: p.weight,
                preference: node_term(
                    file,
                    label,
                    &format!("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"),
                    &p.preference,
                )?,
            });
        }
    }
    for (src, req_out, pref_out, name) in [
        (
            &a.pod_affinity,
            &mut out.pod_affinity_required,
            &mut out.pod_affinity_preferred,
            "podAffinity",
        ),
        (
            &a.pod_anti_affinity,
            &mut out.pod_anti_affinity_required,
            &mut out.pod_anti_affinity_preferred,
            "podAntiAffinity",
        ),
    ] {
        if let Some(pa) = src {
            for (i, t) in pa.required.iter().enumerate() {
                req_out.push(pod_affinity_term(
                    file,
                    label,
                    &format!(
                        "spec.affinity.{name}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                    ),
                    t,
                )?);
            }
            for (i, w) in pa.preferred.iter().enumerate() {
                pref_out.push(WeightedPodAffinityTerm {
                    weight: w.weight,
                    term: pod_affinity_term(
                        file,
                        label,
                        &format!("spec.affinity.{name}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm"),
                        &w.pod_affinity_term,
                    )?,
                });
            }
        }
    }
    Ok(out)
}

/// Effective pod requests as the scheduler computes them (`resourcehelper.PodRequests`):
/// the sum of containers, raised to the largest init container (sidecars, init containers
/// with restartPolicy Always, add up and stay), plus overhead; pod-level resources win.
fn pod_requests(file: &str, label: &str, spec: &RawSpec) -> Result<Resources, SnapshotError> {
    let container_requests =
        |c: &RawContainer, field: String| -> Result<Resources, SnapshotError> {
            let mut r = Resources::default();
            // Requests default to limits where only limits are given (API defaulting).
            quantities(
                file,
                label,
                &format!("{field}.resources.limits"),
                &c.resources.limits,
                &mut r,
            )?;
            let mut req = Resources::default();
            quantities(
                file,
                label,
                &format!("{field}.resources.requests"),
                &c.resources.requests,
                &mut req,
            )?;
            for (name, v) in req.iter() {
                if name == "pods" {
                    continue;
                }
                if c.resources.requests.contains_key(name) {
                    r.set(name, v);
                }
            }
            Ok(r)
        };
    let mut total = Resources::default();
    for (i, c) in spec.containers.iter().enumerate() {
        total.add(&container_requests(c, format!("spec.containers[{i}]"))?);
    }
    let mut restartable = Resources::default();
    let mut init_max = Resources::default();
    for (i, c) in spec.init_containers.iter().enumerate() {
        let mut r = container_requests(c, format!("spec.initContainers[{i}]"))?;
        if c.restart_policy.as_deref() == Some("Always") {
            total.add(&r);
            restartable.add(&r);
            r = restartable.clone();
        } else {
            r.add(&restartable);
        }
        init_max.max_with(&r);
    }
    total.max_with(&init_max);
    if let Some(pod_level) = &spec.resources {
        let mut p = Resources::default();
        quantities(
            file,
            label,
            "spec.resources.requests",
            &pod_level.requests,
            &mut p,
        )?;
        for name in ["cpu", "memory"] {
            if pod_level.requests.contains_key(name) {
                total.set(name, p.get(name));
            }
        }
    }
    let mut overhead = Resources::default();
    quantities(file, label, "spec.overhead", &spec.overhead, &mut overhead)?;
    total.add(&overhead);
    total.pods = 0;
    Ok(total)
}

/// `GetPodQOS` from Kubernetes, over containers and init containers.
fn pod_qos(spec: &RawSpec) -> Qos {
    let mut any = false;
    let mut guaranteed = true;
    for c in spec.containers.iter().chain(spec.init_containers.iter()) {
        let req = &c.resources.requests;
        let lim = &c.resources.limits;
        for name in ["cpu", "memory"] {
            let r = req.get(name).filter(|v| !is_zero_quantity(v));
            let l = lim.get(name).filter(|v| !is_zero_quantity(v));
            if r.is_some() || l.is_some() {
                any = true;
            }
            match (r, l) {
                (_, None) => guaranteed = false,
                (Some(r), Some(l)) if Quantity::parse(r).ok() != Quantity::parse(l).ok() => {
                    guaranteed = false
                }
                _ => {}
            }
        }
    }
    if !any {
        Qos::BestEffort
    } else if guaranteed {
        Qos::Guaranteed
    } else {
        Qos::Burstable
    }
}

fn is_zero_quantity(v: &str) -> bool {
    Quantity::parse(v)
        .map(|q| q.milli_value() == 0)
        .unwrap_or(false)
}

fn convert_pod(file: &str, label: &str, obj: RawObject) -> Result<Pod, SnapshotError> {
    let requests = pod_requests(file, label, &obj.spec)?;
    let qos = pod_qos(&obj.spec);
    let RawObject {
        metadata,
        spec,
        status,
        ..
    } = obj;
    let created = match &metadata.creation_timestamp {
        Some(t) => timestamp(file, label, "metadata.creationTimestamp", t)?,
        None => 0,
    };
    let started = match &status.start_time {
        Some(t) => Some(timestamp(file, label, "status.startTime", t)?),
        None => None,
    };
    let mut tolerations = Vec::with_capacity(spec.tolerations.len());
    for (i, t) in spec.tolerations.iter().enumerate() {
        let effect = match t.effect.as_deref() {
            None | Some("") => None,
            Some(e) => Some(TaintEffect::parse(e).ok_or_else(|| {
                SnapshotError::field(
                    file,
                    label,
                    format!("spec.tolerations[{i}].effect"),
                    format!("{e:?} is not one of NoSchedule, PreferNoSchedule, NoExecute"),
                )
            })?),
        };
        let exists = match t.operator.as_deref() {
            None | Some("") | Some("Equal") => false,
            Some("Exists") => true,
            Some(o) => {
                return Err(SnapshotError::field(
                    file,
                    label,
                    format!("spec.tolerations[{i}].operator"),
                    format!("{o:?} is not one of Equal, Exists"),
                ))
            }
        };
        tolerations.push(Toleration {
            key: t.key.as_str().into(),
            exists,
            value: t.value.as_str().into(),
            effect,
        });
    }
    let mut topology_spread = Vec::with_capacity(spec.topology_spread_constraints.len());
    for (i, c) in spec.topology_spread_constraints.iter().enumerate() {
        let field = format!("spec.topologySpreadConstraints[{i}]");
        let when_unsatisfiable = match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
            "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
            other => {
                return Err(SnapshotError::field(
                    file,
                    label,
                    format!("{field}.whenUnsatisfiable"),
                    format!("{other:?} is not one of DoNotSchedule, ScheduleAnyway"),
                ))
            }
        };
        let policy = |v: &Option<String>, default: InclusionPolicy, name: &str| match v.as_deref() {
            None | Some("") => Ok(default),
            Some("Honor") => Ok(InclusionPolicy::Honor),
            Some("Ignore") => Ok(InclusionPolicy::Ignore),
            Some(o) => Err(SnapshotError::field(
                file,
                label,
                format!("{field}.{name}"),
                format!("{o:?} is not one of Honor, Ignore"),
            )),
        };
        topology_spread.push(TopologySpreadConstraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.as_str().into(),
            when_unsatisfiable,
            label_selector: selector_opt(
                file,
                label,
                &format!("{field}.labelSelector"),
                &c.label_selector,
            )?,
            min_domains: c.min_domains,
            node_affinity_policy: policy(
                &c.node_affinity_policy,
                InclusionPolicy::Honor,
                "nodeAffinityPolicy",
            )?,
            node_taints_policy: policy(
                &c.node_taints_policy,
                InclusionPolicy::Ignore,
                "nodeTaintsPolicy",
            )?,
            match_label_keys: c
                .match_label_keys
                .iter()
                .map(|k| k.as_str().into())
                .collect(),
        });
    }
    let affinity = match &spec.affinity {
        Some(a) => Some(Box::new(convert_affinity(file, label, a)?)),
        None => None,
    };
    let mut host_ports = Vec::new();
    for c in spec.containers.iter().chain(spec.init_containers.iter()) {
        for p in &c.ports {
            if let Some(hp) = p.host_port.filter(|p| *p > 0) {
                let protocol = match p.protocol.as_deref() {
                    Some("UDP") => 1,
                    Some("SCTP") => 2,
                    _ => 0,
                };
                host_ports.push(HostPort {
                    port: hp as u16,
                    protocol,
                });
            }
        }
    }
    let mut images: Vec<Box<str>> = spec
        .containers
        .iter()
        .map(|c| c.image.as_str().into())
        .collect();
    images.sort();
    let owners = metadata
        .owner_references
        .into_iter()
        .map(|o| OwnerRef {
            kind: o.kind.into(),
            name: o.name.into(),
            uid: o.uid.into(),
            controller: o.controller.unwrap_or(false),
        })
        .collect();
    let annotations = metadata.annotations;
    Ok(Pod {
        namespace: metadata.namespace.into(),
        name: metadata.name.into(),
        uid: metadata.uid.into(),
        node_name: spec.node_name.filter(|n| !n.is_empty()).map(Into::into),
        labels: Labels::from_map(metadata.labels),
        has_evict_annotation: annotations.evict,
        has_prefer_no_eviction_annotation: annotations.prefer_no_eviction,
        is_mirror: annotations.mirror,
        is_static: annotations
            .config_source
            .as_deref()
            .is_some_and(|s| s != "api"),
        owners,
        requests,
        qos,
        priority: spec.priority,
        priority_class_name: spec
            .priority_class_name
            .filter(|n| !n.is_empty())
            .map(Into::into),
        phase: Phase::parse(&status.phase),
        terminating: metadata.deletion_timestamp.is_some(),
        created,
        started,
        has_local_storage: spec
            .volumes
            .iter()
            .any(|v| v.empty_dir.is_some() || v.host_path.is_some()),
        pvc_claims: spec
            .volumes
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.as_str().into())
            .collect(),
        has_resource_claims: !spec.resource_claims.is_empty(),
        tolerations,
        node_selector: Labels::from_map(spec.node_selector),
        affinity,
        topology_spread,
        host_ports,
        images,
    })
}

// ---- the wire shapes: one union struct for every kind, so decoding is a single pass ----

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawObject {
    kind: String,
    metadata: RawMeta,
    spec: RawSpec,
    status: RawStatus,
    items: Vec<RawObject>,
    /// PriorityClass.value
    value: Option<i32>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawMeta {
    name: String,
    namespace: String,
    uid: String,
    labels: BTreeMap<String, String>,
    annotations: Annotations,
    owner_references: Vec<RawOwner>,
    creation_timestamp: Option<String>,
    deletion_timestamp: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawOwner {
    kind: String,
    name: String,
    uid: String,
    controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawSpec {
    // Pod
    node_name: Option<String>,
    containers: Vec<RawContainer>,
    init_containers: Vec<RawContainer>,
    overhead: BTreeMap<String, String>,
    resources: Option<RawResources>,
    priority: Option<i32>,
    priority_class_name: Option<String>,
    tolerations: Vec<RawToleration>,
    node_selector: BTreeMap<String, String>,
    affinity: Option<RawAffinity>,
    topology_spread_constraints: Vec<RawTopologySpreadConstraint>,
    volumes: Vec<RawVolume>,
    resource_claims: Vec<IgnoredAny>,
    // Node
    unschedulable: bool,
    taints: Vec<RawTaint>,
    // PodDisruptionBudget
    selector: Option<LabelSelectorSpec>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawStatus {
    phase: String,
    start_time: Option<String>,
    conditions: Vec<RawCondition>,
    capacity: BTreeMap<String, String>,
    allocatable: BTreeMap<String, String>,
    disruptions_allowed: Option<i32>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawCondition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawContainer {
    image: String,
    resources: RawResources,
    ports: Vec<RawPort>,
    restart_policy: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawResources {
    requests: BTreeMap<String, String>,
    limits: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPort {
    host_port: Option<i32>,
    protocol: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawToleration {
    key: String,
    operator: Option<String>,
    value: String,
    effect: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawTaint {
    key: String,
    value: String,
    effect: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawVolume {
    empty_dir: Option<IgnoredAny>,
    host_path: Option<IgnoredAny>,
    persistent_volume_claim: Option<RawPvcSource>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPvcSource {
    claim_name: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawTopologySpreadConstraint {
    max_skew: i32,
    topology_key: String,
    when_unsatisfiable: String,
    label_selector: Option<LabelSelectorSpec>,
    min_domains: Option<i32>,
    node_affinity_policy: Option<String>,
    node_taints_policy: Option<String>,
    match_label_keys: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawAffinity {
    node_affinity: Option<RawNodeAffinity>,
    pod_affinity: Option<RawPodAffinity>,
    pod_anti_affinity: Option<RawPodAffinity>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNodeAffinity {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    required: Option<RawNodeSelector>,
    #[serde(rename = "preferredDuringSchedulingIgnoredDuringExecution")]
    preferred: Vec<RawPreferredSchedulingTerm>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawNodeSelector {
    node_selector_terms: Vec<RawNodeSelectorTerm>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawNodeSelectorTerm {
    match_expressions: Vec<RawNodeSelectorRequirement>,
    match_fields: Vec<RawNodeSelectorRequirement>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawNodeSelectorRequirement {
    key: String,
    operator: String,
    values: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPreferredSchedulingTerm {
    weight: i32,
    preference: RawNodeSelectorTerm,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPodAffinity {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    required: Vec<RawPodAffinityTerm>,
    #[serde(rename = "preferredDuringSchedulingIgnoredDuringExecution")]
    preferred: Vec<RawWeightedPodAffinityTerm>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPodAffinityTerm {
    label_selector: Option<LabelSelectorSpec>,
    namespaces: Vec<String>,
    namespace_selector: Option<LabelSelectorSpec>,
    topology_key: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawWeightedPodAffinityTerm {
    weight: i32,
    pod_affinity_term: RawPodAffinityTerm,
}

/// Only the annotations the planner reads; the rest (often large, such as
/// last-applied-configuration) are skipped without being copied.
#[derive(Default)]
struct Annotations {
    evict: bool,
    prefer_no_eviction: bool,
    mirror: bool,
    config_source: Option<String>,
}

#[derive(Clone, Copy)]
enum AnnotationKey {
    Evict,
    PreferNoEviction,
    Mirror,
    ConfigSource,
    Other,
}

struct AnnotationKeySeed;

impl<'de> DeserializeSeed<'de> for AnnotationKeySeed {
    type Value = AnnotationKey;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<AnnotationKey, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = AnnotationKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an annotation key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AnnotationKey, E> {
                Ok(match v {
                    EVICT_ANNOTATION => AnnotationKey::Evict,
                    PREFER_NO_EVICTION_ANNOTATION => AnnotationKey::PreferNoEviction,
                    MIRROR_ANNOTATION => AnnotationKey::Mirror,
                    CONFIG_SOURCE_ANNOTATION => AnnotationKey::ConfigSource,
                    _ => AnnotationKey::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Annotations {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Annotations;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Annotations, E> {
                Ok(Annotations::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Annotations, E> {
                Ok(Annotations::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Annotations, A::Error> {
                let mut out = Annotations::default();
                while let Some(key) = map.next_key_seed(AnnotationKeySeed)? {
                    match key {
                        AnnotationKey::Evict => {
                            map.next_value::<IgnoredAny>()?;
                            out.evict = true;
                        }
                        AnnotationKey::PreferNoEviction => {
                            map.next_value::<IgnoredAny>()?;
                            out.prefer_no_eviction = true;
                        }
                        AnnotationKey::Mirror => {
                            map.next_value::<IgnoredAny>()?;
                            out.mirror = true;
                        }
                        AnnotationKey::ConfigSource => {
                            out.config_source = map.next_value::<Option<String>>()?;
                        }
                        AnnotationKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
    labels: {zone: a}
  spec:
    taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "110", nvidia.com/gpu: "2"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-1
    namespace: default
    uid: u1
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: "{...}"
      descheduler.alpha.kubernetes.io/evict: ""
    ownerReferences: [{kind: ReplicaSet, name: web, uid: rs1, controller: true}]
    creationTimestamp: "2026-01-01T00:00:00Z"
  spec:
    nodeName: n1
    overhead: {cpu: 10m}
    initContainers:
    - name: init
      image: busybox
      resources: {requests: {cpu: "2"}}
    - name: sidecar
      image: envoy
      restartPolicy: Always
      resources: {requests: {cpu: 100m, memory: 64Mi}}
    containers:
    - name: app
      image: nginx
      resources:
        requests: {cpu: 500m, memory: 128Mi}
        limits: {cpu: "1", memory: 128Mi}
      ports: [{containerPort: 80, hostPort: 8080}]
    volumes: [{name: cache, emptyDir: {}}]
  status:
    phase: Running
    startTime: "2026-01-01T00:00:05Z"
"#;

    #[test]
    fn decodes_a_kubectl_list() {
        let snap = load_bytes("test.yaml", LIST_YAML.as_bytes()).unwrap();
        assert_eq!(snap.nodes.len(), 1);
        let n = &snap.nodes[0];
        assert!(n.ready);
        assert_eq!(n.allocatable.cpu, 4000);
        assert_eq!(n.allocatable.memory, 8 << 30);
        assert_eq!(n.allocatable.pods, 110);
        assert_eq!(n.allocatable.get("nvidia.com/gpu"), 2);
        assert_eq!(n.taints[0].effect, TaintEffect::NoSchedule);
        let p = &snap.pods[0];
        // containers 500m + sidecar 100m = 600m; init peak max(2000+0, 100) = 2000; + 10m overhead
        assert_eq!(p.requests.cpu, 2010);
        assert_eq!(p.requests.memory, (128 + 64) << 20);
        assert_eq!(p.qos, Qos::Burstable);
        assert!(p.has_evict_annotation);
        assert!(!p.is_mirror);
        assert!(p.has_local_storage);
        assert_eq!(
            p.host_ports,
            vec![HostPort {
                port: 8080,
                protocol: 0
            }]
        );
        assert_eq!(p.created, 1767225600);
        assert_eq!(p.started, Some(1767225605));
        assert_eq!(snap.pod_node(0), Some(0));
        assert_eq!(snap.node_requested(0).pods, 1);
        assert_eq!(snap.pods_of_owner("rs1"), &[0]);
    }

    #[test]
    fn json_and_multi_document_yaml_agree() {
        let yaml_snap = load_bytes("a.yaml", LIST_YAML.as_bytes()).unwrap();
        let value: serde_json::Value = serde_saphyr::from_str(LIST_YAML).unwrap();
        let json = serde_json::to_vec(&value).unwrap();
        let json_snap = load_bytes("a.json", &json).unwrap();
        assert_eq!(json_snap.pods[0].requests, yaml_snap.pods[0].requests);
        let items = value["items"].as_array().unwrap();
        let multi: String = items
            .iter()
            .map(|i| format!("---\n{}", serde_saphyr::to_string(i).unwrap()))
            .collect();
        let multi_snap = load_bytes("m.yaml", multi.as_bytes()).unwrap();
        assert_eq!(multi_snap.pods[0].requests, yaml_snap.pods[0].requests);
        assert_eq!(
            multi_snap.nodes[0].allocatable,
            yaml_snap.nodes[0].allocatable
        );
    }

    #[test]
    fn bad_quantity_names_object_and_field() {
        let bad = LIST_YAML.replace("cpu: 500m", "cpu: lots");
        let err = load_bytes("c.yaml", bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("c.yaml"), "{err}");
        assert!(err.contains("Pod default/web-1"), "{err}");
        assert!(
            err.contains("spec.containers[0].resources.requests.cpu"),
            "{err}"
        );
        assert!(err.contains("\"lots\""), "{err}");
    }

    #[test]
    fn json_type_error_names_path() {
        let json = br#"{"kind":"List","items":[{"kind":"Node","metadata":{"name":"n"},"spec":{"unschedulable":"yes"}}]}"#;
        let err = load_bytes("x.json", json).unwrap_err().to_string();
        assert!(err.contains("items[0].spec.unschedulable"), "{err}");
    }

    #[test]
    fn no_nodes_is_an_error() {
        let json = br#"{"kind":"List","items":[]}"#;
        assert!(matches!(
            load_bytes("e.json", json),
            Err(SnapshotError::NoNodes { .. })
        ));
        assert!(matches!(
            load_bytes("e.json", b"  "),
            Err(SnapshotError::Syntax { .. })
        ));
        assert!(matches!(
            load_bytes("e.yaml", b"kind: [unclosed"),
            Err(SnapshotError::Syntax { .. })
        ));
    }

    #[test]
    fn missing_kind_is_an_error() {
        let json = br#"{"kind":"List","items":[{"metadata":{"name":"x"}}]}"#;
        let err = load_bytes("k.json", json).unwrap_err().to_string();
        assert!(err.contains("kind"), "{err}");
    }
}
