//! The wire shapes into the model: one function a kind ([`add_object`] chooses), each
//! checking what it reads and naming the file, the object and the field when it refuses.
//! A pod shares what it has the same of with the pod before it or the first pod of its
//! shape.

use super::error::SnapshotError;
use super::wire::{
    ObjectType, Pairs, RawAffinity, RawContainer, RawContainerStatus, RawInt,
    RawNodeSelectorRequirement, RawNodeSelectorTerm, RawObject, RawOwner, RawPodAffinityTerm,
    RawSpec, RawStatus, RawTime, Str,
};
use crate::labels::{LabelSelectorSpec, Labels, Requirement, Selector};
use crate::quantity::{Quantity, QuantityError};
use crate::snapshot::shapes::Shapes;
use crate::snapshot::{
    shared, Affinity, Autoscaler, ConditionStatus, ContainerState, ContainerStatus, Deployment,
    DisruptionMode, DoNotDisrupt, GangKind, HostPort, InclusionPolicy, Namespace, Node,
    NodeSelectorTerm, OwnerRef, Pdb, Phase, Pod, PodAffinityTerm, PodCondition, PodGroup,
    PodStatusDetail, PreferredSchedulingTerm, PriorityClass, Qos, ResourceQuota, Resources,
    SnapshotParts, Taint, TaintEffect, Toleration, TopologySpreadConstraint,
    WeightedPodAffinityTerm, WhenUnsatisfiable, PROTECTED_UNTIL_UNREADABLE,
};
use serde::de;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Where decoded objects go; a conversion error is kept here while serde unwinds.
pub(super) struct Sink<'p> {
    pub(super) file: &'p str,
    pub(super) parts: &'p mut SnapshotParts,
    /// The shapes of `parts.pods`.
    pub(super) shapes: Shapes,
    pub(super) error: Option<SnapshotError>,
    /// The type of items that come without theirs (the API's typed lists, such as a
    /// PodList, leave `kind` and `apiVersion` out of their items).
    pub(super) defaults: Option<ObjectType>,
}

impl Sink<'_> {
    pub(super) fn add<E: de::Error>(
        &mut self,
        index: usize,
        obj: &mut RawObject<'_>,
    ) -> Result<(), E> {
        if let Some(t) = self.defaults {
            if obj.kind.is_empty() {
                obj.kind = Str(Cow::Borrowed(t.kind));
            }
            if obj.api_version.is_empty() {
                obj.api_version = Str(Cow::Borrowed(t.api_version));
            }
        }
        // Items with a default type are the API's answers; the others come from a file.
        let api = self.defaults.is_some();
        add_object(self.file, index, obj, self.parts, &mut self.shapes, api).map_err(|e| {
            self.error = Some(e);
            E::custom("invalid object")
        })
    }
}

/// Appends the objects of `more` to `to`'s (one response's or chunk's after another's);
/// moves each list when `to`'s is empty (no copy).
pub fn join(to: &mut SnapshotParts, more: SnapshotParts) {
    fn list<T>(to: &mut Vec<T>, mut more: Vec<T>) {
        if to.is_empty() {
            *to = more;
        } else {
            to.append(&mut more);
        }
    }
    let SnapshotParts {
        nodes,
        pods,
        pdbs,
        namespaces,
        priority_classes,
        pod_groups,
        workloads,
    } = more;
    list(&mut to.nodes, nodes);
    list(&mut to.pods, pods);
    list(&mut to.pdbs, pdbs);
    list(&mut to.namespaces, namespaces);
    list(&mut to.priority_classes, priority_classes);
    list(&mut to.pod_groups, pod_groups);
    list(&mut to.workloads.deployments, workloads.deployments);
    list(&mut to.workloads.autoscalers, workloads.autoscalers);
    list(&mut to.workloads.quotas, workloads.quotas);
}

pub(super) fn is_list_kind(kind: &str) -> bool {
    matches!(
        kind,
        "List"
            | "NodeList"
            | "PodList"
            | "PodDisruptionBudgetList"
            | "NamespaceList"
            | "PriorityClassList"
            | "PodGroupList"
            | "DeploymentList"
            | "HorizontalPodAutoscalerList"
            | "ResourceQuotaList"
    )
}

/// The error for an object with `items` whose kind is not a List's.
fn envelope_error(file: &str, index: usize, kind: &str) -> SnapshotError {
    let message = if kind.is_empty() {
        "an object with `items` but no `kind`: kubectl prints `kind: List` after the items, so \
         this file was most likely cut short; take the snapshot again"
            .to_string()
    } else {
        format!(
            "{kind:?} is not a list kind, but the object has `items`; a list's kind is List \
             (or NodeList, PodList, PodDisruptionBudgetList, NamespaceList, PriorityClassList, \
             PodGroupList, DeploymentList, HorizontalPodAutoscalerList, ResourceQuotaList)"
        )
    };
    SnapshotError::field(file, format!("object #{index}"), "kind", message)
}

/// How errors name an object (`Pod default/web-1`); formatted only when there is an error.
#[derive(Clone, Copy)]
pub(super) struct Obj<'x> {
    pub(super) kind: &'x str,
    pub(super) namespace: &'x str,
    pub(super) name: &'x str,
}

impl<'x> Obj<'x> {
    fn of(obj: &'x RawObject<'_>) -> Self {
        Obj {
            kind: &obj.kind,
            namespace: &obj.metadata.namespace,
            name: &obj.metadata.name,
        }
    }
}

impl fmt::Display for Obj<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}

/// Converts one object into `parts`. `api`: it is the API server's answer (else a file's,
/// which may have been cut short, so what a cut can produce is refused).
pub(super) fn add_object(
    file: &str,
    index: usize,
    obj: &mut RawObject<'_>,
    parts: &mut SnapshotParts,
    shapes: &mut Shapes,
    api: bool,
) -> Result<(), SnapshotError> {
    if let Some(items) = obj.items.take() {
        // A List: its envelope (`kind: List`, which kubectl prints after the items) must be
        // there, or the file was cut short.
        if !is_list_kind(&obj.kind) {
            return Err(envelope_error(file, index, &obj.kind));
        }
        for (i, mut item) in items.into_iter().enumerate() {
            add_object(file, i, &mut item, parts, shapes, api)?;
        }
        return Ok(());
    }
    if is_list_kind(&obj.kind) {
        // A List without items (`items: null`): nothing in it.
        return Ok(());
    }
    let obj = &*obj;
    let kind = &*obj.kind;
    if kind.is_empty() {
        return Err(SnapshotError::field(
            file,
            format!("object #{index}"),
            "kind",
            "missing; every object needs its kind (Node, Pod, PodDisruptionBudget, Namespace, PriorityClass, PodGroup, Deployment, HorizontalPodAutoscaler, ResourceQuota); an object cut short lacks it too",
        ));
    }
    if obj.metadata.name.is_empty() {
        return Err(SnapshotError::field(
            file,
            format!("{kind} #{index}"),
            "metadata.name",
            "missing; every object needs its name (an object cut short lacks it)",
        ));
    }
    if obj.api_version.is_empty() {
        return Err(SnapshotError::field(
            file,
            Obj::of(obj),
            "apiVersion",
            "missing; every object needs its apiVersion (an object cut short lacks it)",
        ));
    }
    let label = Obj::of(obj);
    match kind {
        "Node" => parts.nodes.push(convert_node(file, label, obj)?),
        "Pod" => {
            // The pod before (most often another of the same workload: lists are sorted by
            // name) lends the parts this one has the same of.
            let mut pod = convert_pod(file, label, obj, parts.pods.last())?;
            pod.shape = shapes.shape(&parts.pods[..], &pod, parts.pods.len());
            // A pod of a shape seen before (another pod of its workload, most often) shares
            // that pod's images, and its owners, labels, node selector, tolerations,
            // affinity and spread constraints when they are equal (owners' UIDs and
            // controller flags too): one copy per workload instead of one per pod. Its own
            // copies are freed right away, and their memory serves the next pod.
            if let Some(rep) = parts.pods.get(shapes.rep(pod.shape)) {
                pod.images = rep.images.clone();
                share_template(&mut pod, rep);
            }
            parts.pods.push(pod);
        }
        "PodDisruptionBudget" => parts.pdbs.push(convert_pdb(file, label, obj, api)?),
        "Namespace" => parts.namespaces.push(Namespace {
            name: obj.metadata.name.boxed(),
            labels: obj.metadata.labels.to_labels(),
        }),
        "PriorityClass" => {
            let value = obj.value.ok_or_else(|| {
                SnapshotError::field(
                    file,
                    label,
                    "value",
                    "missing; a PriorityClass needs its value",
                )
            })?;
            parts.priority_classes.push(PriorityClass {
                name: obj.metadata.name.boxed(),
                value,
            })
        }
        "PodGroup" => match GangKind::from_api_version(&obj.api_version) {
            Some(kind) => parts.pod_groups.push(convert_pod_group(file, label, kind, obj)?),
            None if obj.api_version.is_empty() => {
                return Err(SnapshotError::field(
                    file,
                    label,
                    "apiVersion",
                    "missing; a PodGroup needs its apiVersion (scheduling.x-k8s.io/v1alpha1, scheduling.volcano.sh/v1beta1 or scheduling.k8s.io/v1beta1) to tell which gang scheduler it belongs to",
                ))
            }
            // A PodGroup of another API group: not a gang this planner knows.
            None => {
                tracing::debug!(api_version = %&*obj.api_version, name = %&*obj.metadata.name, "ignoring a PodGroup of an API group the planner does not read")
            }
        },
        "Deployment" if api_group(&obj.api_version) == "apps" => parts
            .workloads
            .deployments
            .push(convert_deployment(file, label, obj)?),
        "HorizontalPodAutoscaler" if api_group(&obj.api_version) == "autoscaling" => parts
            .workloads
            .autoscalers
            .push(convert_autoscaler(file, label, obj)?),
        "ResourceQuota" if api_group(&obj.api_version).is_empty() => parts
            .workloads
            .quotas
            .push(convert_quota(file, label, obj)?),
        // Other kinds (Services, ReplicaSets, ...) carry nothing the planner needs.
        _ => {
            tracing::debug!(kind, name = %&*obj.metadata.name, "ignoring object of a kind the planner does not read")
        }
    }
    Ok(())
}

/// Takes `like`'s storage for the owners, labels, node selector, tolerations, affinity and
/// spread constraints `pod` has the same of (a workload's pods have one template).
pub(crate) fn share_template(pod: &mut Pod, like: &Pod) {
    share(&mut pod.owners, &like.owners);
    pod.labels.share(&like.labels);
    pod.node_selector.share(&like.node_selector);
    share(&mut pod.tolerations, &like.tolerations);
    share(&mut pod.topology_spread, &like.topology_spread);
    if let (Some(a), Some(r)) = (&mut pod.affinity, &like.affinity) {
        share(a, r);
    }
}

/// Takes `rep`'s storage when it holds what `own` does.
pub(crate) fn share<T: PartialEq + ?Sized>(own: &mut Arc<T>, rep: &Arc<T>) {
    if **own == **rep {
        *own = rep.clone();
    }
}

/// A PodGroup of either gang scheduler, or of Kubernetes itself. `spec.minMember` is an
/// int32 with no default in either CRD (scheduler-plugins validates a minimum of 1, Volcano
/// none); Go drops a zero value (`omitempty`), so absent and 0 mean the same, and both are
/// read as 1: the last running member of a gang is never evicted. A Kubernetes PodGroup
/// (`scheduling.k8s.io`) has its gang size in `spec.schedulingPolicy.gang.minCount` (the API
/// requires at least 1; a `basic` policy has none, read as 1) and its
/// `spec.disruptionMode`, `single: {}` or `all: {}` (1.36: `Pod` or `PodGroup`).
fn convert_pod_group(
    file: &str,
    label: Obj<'_>,
    kind: GangKind,
    obj: &RawObject<'_>,
) -> Result<PodGroup, SnapshotError> {
    let (min, field, what) = match kind {
        GangKind::SchedulerPlugins | GangKind::Volcano => (
            &obj.spec.min_member,
            "spec.minMember",
            "minMember is the number of members a gang needs",
        ),
        GangKind::Kubernetes => (
            obj.spec
                .scheduling_policy
                .as_ref()
                .and_then(|p| p.gang.as_ref())
                .map_or(&None, |g| &g.min_count),
            "spec.schedulingPolicy.gang.minCount",
            "minCount is the number of members a gang needs",
        ),
    };
    let min_member = count::<i32>(file, label, field, min, what)?.unwrap_or(1);
    let disruption = match (kind, &obj.spec.disruption_mode) {
        (GangKind::Kubernetes, Some(m)) if m.named.is_some() => {
            match m.named.as_deref().unwrap_or_default() {
                "Pod" => Some(DisruptionMode::Single),
                "PodGroup" => Some(DisruptionMode::All),
                // An empty string is an unset field (1.36 defaults it to Pod).
                "" => None,
                other => {
                    return Err(SnapshotError::field(
                        file,
                        label,
                        "spec.disruptionMode",
                        format!(
                            "{other:?} is not a disruption mode; Kubernetes 1.36 (scheduling.k8s.io/v1alpha2) names Pod (members one by one) or PodGroup (the group whole), 1.37 writes {{single: {{}}}} or {{all: {{}}}}"
                        ),
                    ))
                }
            }
        }
        (GangKind::Kubernetes, Some(m)) => match (m.single, m.all) {
            (true, false) => Some(DisruptionMode::Single),
            (false, true) => Some(DisruptionMode::All),
            (true, true) => {
                return Err(SnapshotError::field(
                    file,
                    label,
                    "spec.disruptionMode",
                    "sets both single and all; a PodGroup has one disruption mode",
                ))
            }
            // No mode this reader knows: the policy's gangPolicy decides.
            (false, false) => None,
        },
        _ => None,
    };
    Ok(PodGroup {
        kind,
        namespace: obj.metadata.namespace.boxed(),
        name: obj.metadata.name.boxed(),
        min_member: min_member.max(1),
        disruption,
    })
}

/// The API group of an `apiVersion` (`apps/v1`: `apps`; the core group's `v1`: empty).
fn api_group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// A field holding a number of things (zero or more) as an int32 or int64 `T`; None when
/// absent. `what` says what the number is, for the error.
fn count<T: TryFrom<i64>>(
    file: &str,
    label: Obj<'_>,
    field: &str,
    raw: &Option<RawInt>,
    what: &str,
) -> Result<Option<T>, SnapshotError> {
    match raw {
        None => Ok(None),
        Some(RawInt::Int(v)) if *v < 0 => Err(SnapshotError::field(
            file,
            label,
            field,
            format!("{v} is negative; {what}"),
        )),
        Some(RawInt::Int(v)) => T::try_from(*v).map(Some).map_err(|_| {
            let bits = std::mem::size_of::<T>() * 8;
            SnapshotError::field(file, label, field, format!("{v} does not fit an int{bits}"))
        }),
        Some(RawInt::Other(found)) => Err(SnapshotError::field(
            file,
            label,
            field,
            format!("expected an integer, found {found}; {what}"),
        )),
    }
}

/// A Deployment (`apps/v1`): what a surge reads of it. Absent counts are 0 (the API leaves
/// zeros out), absent `spec.replicas` 1 (the API server's default).
fn convert_deployment(
    file: &str,
    label: Obj<'_>,
    obj: &RawObject<'_>,
) -> Result<Deployment, SnapshotError> {
    let RawObject {
        metadata,
        spec,
        status,
        ..
    } = obj;
    let replicas = |field: &str, raw: &Option<RawInt>, what: &str| {
        count::<i32>(file, label, field, raw, what).map(Option::unwrap_or_default)
    };
    let generation = |field: &str, raw: &Option<RawInt>| {
        count::<i64>(
            file,
            label,
            field,
            raw,
            "a generation counts the changes to the Deployment's spec",
        )
        .map(Option::unwrap_or_default)
    };
    Ok(Deployment {
        namespace: metadata.namespace.boxed(),
        name: metadata.name.boxed(),
        uid: metadata.uid.boxed(),
        replicas: count::<i32>(
            file,
            label,
            "spec.replicas",
            &spec.replicas,
            "the number of pods the Deployment wants, such as 3",
        )?
        .unwrap_or(1),
        paused: spec.paused.unwrap_or(false),
        generation: generation("metadata.generation", &metadata.generation)?,
        observed_generation: generation("status.observedGeneration", &status.observed_generation)?,
        status_replicas: replicas(
            "status.replicas",
            &status.replicas,
            "the number of the Deployment's pods",
        )?,
        updated_replicas: replicas(
            "status.updatedReplicas",
            &status.updated_replicas,
            "the number of pods of the current template",
        )?,
        available_replicas: replicas(
            "status.availableReplicas",
            &status.available_replicas,
            "the number of available pods",
        )?,
        surge_in_flight: metadata
            .annotations
            .surge_in_flight
            .as_ref()
            .map(Str::boxed),
    })
}

/// A HorizontalPodAutoscaler (`autoscaling/v2`, or `v1`): its target. The API requires
/// `spec.scaleTargetRef` with a kind and a name; without them (an object cut short) the
/// autoscaler could not be matched to what it scales, and is refused.
fn convert_autoscaler(
    file: &str,
    label: Obj<'_>,
    obj: &RawObject<'_>,
) -> Result<Autoscaler, SnapshotError> {
    let missing = |field: &str| {
        SnapshotError::field(
            file,
            label,
            field,
            "missing; a HorizontalPodAutoscaler names what it scales (spec.scaleTargetRef:              {apiVersion: apps/v1, kind: Deployment, name: ...}); an object cut short lacks it",
        )
    };
    let target = obj
        .spec
        .scale_target_ref
        .as_deref()
        .ok_or_else(|| missing("spec.scaleTargetRef"))?;
    if target.kind.is_empty() {
        return Err(missing("spec.scaleTargetRef.kind"));
    }
    if target.name.is_empty() {
        return Err(missing("spec.scaleTargetRef.name"));
    }
    Ok(Autoscaler {
        namespace: obj.metadata.namespace.boxed(),
        name: obj.metadata.name.boxed(),
        target_kind: target.kind.boxed(),
        target_name: target.name.boxed(),
    })
}

/// A ResourceQuota: its `status.hard` and `status.used` by resource name, in the planner's
/// units (millicores for the CPU names), sorted by name. A quota the quota controller has
/// not yet computed has neither.
fn convert_quota(
    file: &str,
    label: Obj<'_>,
    obj: &RawObject<'_>,
) -> Result<ResourceQuota, SnapshotError> {
    let amounts = |field: &str, map: &Pairs<'_>| {
        let mut out = Vec::with_capacity(map.0.len());
        for (name, text) in map.iter() {
            let milli = quota_in_milli(name);
            out.push((name.into(), amount(file, label, field, name, text, milli)?));
        }
        out.sort();
        out.dedup_by(|a: &mut (Box<str>, i64), b| a.0 == b.0);
        Ok::<_, SnapshotError>(out)
    };
    Ok(ResourceQuota {
        namespace: obj.metadata.namespace.boxed(),
        name: obj.metadata.name.boxed(),
        hard: amounts("status.hard", &obj.status.hard)?,
        used: amounts("status.used", &obj.status.used)?,
    })
}

/// Whether a quota's resource `name` is CPU, counted in millicores.
pub(crate) fn quota_in_milli(name: &str) -> bool {
    matches!(name, "cpu" | "requests.cpu" | "limits.cpu")
}

/// One amount of a resource list (`field.name: text`): millicores when `milli`, else whole
/// units (bytes for memory), rounded up as the API server counts them.
fn amount(
    file: &str,
    object: Obj<'_>,
    field: &str,
    name: &str,
    text: &str,
    milli: bool,
) -> Result<i64, SnapshotError> {
    let error =
        |message: String| SnapshotError::field(file, object, format!("{field}.{name}"), message);
    let q = parse_quantity(text).map_err(|e| error(e.to_string()))?;
    if q.is_negative() {
        return Err(error(format!(
            "{text:?} is negative; an amount of a resource is zero or more"
        )));
    }
    let v = if milli {
        q.checked_milli_value()
    } else {
        q.checked_value()
    };
    v.ok_or_else(|| {
        error(format!(
            "{text:?} is larger than the planner can count (at most {} {})",
            i64::MAX,
            if milli { "millicores" } else { "units" }
        ))
    })
}

fn quantities(
    file: &str,
    object: Obj<'_>,
    field: &dyn Fn() -> String,
    map: &Pairs<'_>,
    out: &mut Resources,
) -> Result<(), SnapshotError> {
    let field = field();
    for (name, text) in map.iter() {
        out.set(
            name,
            amount(file, object, &field, name, text, name == "cpu")?,
        );
    }
    Ok(())
}

/// `Quantity::parse`, with the forms resource lists nearly always use (`250m`, `4`, `512Mi`,
/// `16Gi`) read without the general parser.
pub(super) fn parse_quantity(text: &str) -> Result<Quantity, QuantityError> {
    let b = text.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if (1..=15).contains(&digits) {
        let milli_per_unit: i128 = match &text[digits..] {
            "" => 1_000,
            "m" => 1,
            "k" => 1_000_000,
            "M" => 1_000_000_000,
            "G" => 1_000_000_000_000,
            "Ki" => 1_000 << 10,
            "Mi" => 1_000 << 20,
            "Gi" => 1_000 << 30,
            "Ti" => 1_000 << 40,
            _ => return Quantity::parse(text),
        };
        let n = b[..digits]
            .iter()
            .fold(0i128, |acc, &c| acc * 10 + i128::from(c - b'0'));
        return Ok(Quantity::from_milli(n * milli_per_unit));
    }
    Quantity::parse(text)
}

/// A time of the input in seconds since the epoch.
pub(super) fn time(
    file: &str,
    object: Obj<'_>,
    field: &str,
    t: &RawTime<'_>,
) -> Result<i64, SnapshotError> {
    match t {
        RawTime::Seconds(s) => Ok(*s),
        RawTime::Text(text) => timestamp(file, object, field, text),
    }
}

pub(super) fn timestamp(
    file: &str,
    object: Obj<'_>,
    field: &str,
    text: &str,
) -> Result<i64, SnapshotError> {
    if let Some(t) = utc_seconds(text) {
        return Ok(t);
    }
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

/// The form the API server always writes, `2026-01-02T03:04:05Z`, without a general parser;
/// None for anything else (which the RFC 3339 parser then reads).
pub(super) fn utc_seconds(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        b[from..to].iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > month_days[(m - 1) as usize] {
        return None;
    }
    if hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3_600 + mm * 60 + ss)
}

fn convert_node(file: &str, label: Obj<'_>, obj: &RawObject<'_>) -> Result<Node, SnapshotError> {
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
    quantities(file, label, &|| field.to_string(), src, &mut allocatable)?;
    let mut taints = Vec::with_capacity(spec.taints.len());
    for (i, t) in spec.taints.iter().enumerate() {
        let effect = TaintEffect::parse(&t.effect).ok_or_else(|| {
            SnapshotError::field(
                file,
                label,
                format!("spec.taints[{i}].effect"),
                format!(
                    "{:?} is not one of NoSchedule, PreferNoSchedule, NoExecute",
                    &*t.effect
                ),
            )
        })?;
        taints.push(Taint {
            key: t.key.boxed(),
            value: t.value.boxed(),
            effect,
        });
    }
    let ready = status
        .conditions
        .iter()
        .any(|c| &*c.type_ == "Ready" && &*c.status == "True");
    // Every name of every image, with its size (what ImageLocality scores), sorted by name.
    let mut images: Vec<(Box<str>, i64)> = status
        .images
        .iter()
        .flat_map(|i| {
            i.names
                .iter()
                .map(move |n| (n.boxed(), i.size_bytes.unwrap_or(0)))
        })
        .collect();
    images.sort();
    images.dedup_by(|a, b| a.0 == b.0);
    Ok(Node {
        name: metadata.name.boxed(),
        labels: metadata.labels.to_labels(),
        unschedulable: spec.unschedulable,
        taints,
        allocatable,
        ready,
        images: images.into(),
    })
}

/// A budget. One without a selector protects no pod (policy/v1); the API server may hold
/// one, but in a file it is what a budget cut short looks like, and reading it so would let
/// the plan evict the pods it was cut from: refused.
fn convert_pdb(
    file: &str,
    label: Obj<'_>,
    obj: &RawObject<'_>,
    api: bool,
) -> Result<Pdb, SnapshotError> {
    let selector =
        match &obj.spec.selector {
            None if !api => return Err(SnapshotError::field(
                file,
                label,
                "spec.selector",
                "missing; a PodDisruptionBudget without a selector protects no pod, and is what \
                 a budget cut short looks like. Take the snapshot again; if this budget really \
                 has no selector, remove it from the file (it protects nothing)",
            )),
            None => Selector::nothing(),
            Some(s) => Selector::compile(s)
                .map_err(|e| SnapshotError::field(file, label, "spec.selector", e.to_string()))?,
        };
    Ok(Pdb {
        namespace: obj.metadata.namespace.boxed(),
        name: obj.metadata.name.boxed(),
        selector,
        // A budget the disruption controller has not yet computed allows nothing.
        disruptions_allowed: obj.status.disruptions_allowed.unwrap_or(0),
    })
}

fn selector_opt(
    file: &str,
    label: Obj<'_>,
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
    label: Obj<'_>,
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
    label: Obj<'_>,
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
    label: Obj<'_>,
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

fn convert_affinity(
    file: &str,
    label: Obj<'_>,
    a: &RawAffinity,
) -> Result<Affinity, SnapshotError> {
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

fn pod_requests(
    file: &str,
    label: Obj<'_>,
    spec: &RawSpec<'_>,
) -> Result<Resources, SnapshotError> {
    let container_requests =
        |c: &RawContainer<'_>, field: &dyn Fn() -> String| -> Result<Resources, SnapshotError> {
            let mut r = Resources::default();
            // Requests default to limits where only limits are given (API defaulting).
            quantities(
                file,
                label,
                &|| format!("{}.resources.limits", field()),
                &c.resources.limits,
                &mut r,
            )?;
            let mut req = Resources::default();
            quantities(
                file,
                label,
                &|| format!("{}.resources.requests", field()),
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
    // Sums of the pod's containers, checked: an error names the pod and the resource.
    // The field is named only when there is an error to report: one `format!` per container
    // is measurable on 150,000 pods.
    let add = |to: &mut Resources, r: &Resources, field: &dyn Fn() -> String| {
        to.checked_add(r).map_err(|name| {
            SnapshotError::field(
                file,
                label,
                format!("{}.{name}", field()),
                format!(
                    "the pod's requests of {name} add up past {}, the most the planner can count",
                    i64::MAX
                ),
            )
        })
    };
    let mut total = Resources::default();
    for (i, c) in spec.containers.iter().enumerate() {
        let field = || format!("spec.containers[{i}]");
        let requests = container_requests(c, &field)?;
        let at = || format!("{}.resources.requests", field());
        add(&mut total, &requests, &at)?;
    }
    let mut restartable = Resources::default();
    let mut init_max = Resources::default();
    for (i, c) in spec.init_containers.iter().enumerate() {
        let field = || format!("spec.initContainers[{i}]");
        let mut r = container_requests(c, &field)?;
        let at = || format!("{}.resources.requests", field());
        if c.restart_policy.as_deref() == Some("Always") {
            add(&mut total, &r, &at)?;
            add(&mut restartable, &r, &at)?;
            r = restartable.clone();
        } else {
            add(&mut r, &restartable, &at)?;
        }
        init_max.max_with(&r);
    }
    total.max_with(&init_max);
    if let Some(pod_level) = &spec.resources {
        let mut p = Resources::default();
        quantities(
            file,
            label,
            &|| "spec.resources.requests".to_string(),
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
    quantities(
        file,
        label,
        &|| "spec.overhead".to_string(),
        &spec.overhead,
        &mut overhead,
    )?;
    add(&mut total, &overhead, &|| "spec.overhead".to_string())?;
    total.pods = 0;
    Ok(total)
}

/// `GetPodQOS` from Kubernetes, over containers and init containers.
fn pod_qos(spec: &RawSpec<'_>) -> Qos {
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
                (Some(r), Some(l)) if parse_quantity(r).ok() != parse_quantity(l).ok() => {
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
    parse_quantity(v)
        .map(|q| q.milli_value() == 0)
        .unwrap_or(false)
}

/// Values nearly every pod of a cluster repeats (see [`shared`]).
const CONDITION_TYPES: &[&str] = &[
    "PodScheduled",
    "Initialized",
    "ContainersReady",
    "Ready",
    "PodReadyToStartContainers",
    "DisruptionTarget",
];
const OWNER_KINDS: &[&str] = &[
    "ReplicaSet",
    "DaemonSet",
    "StatefulSet",
    "Job",
    "ReplicationController",
    "Node",
];
const TOLERATION_KEYS: &[&str] = &[
    "",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
    "node-role.kubernetes.io/control-plane",
    "nvidia.com/gpu",
];

/// Whether `raw` holds what `labels` do: compared in order when its keys are sorted, as
/// Kubernetes prints maps (other orders are packed anew).
fn same_labels(raw: &Pairs<'_>, labels: &Labels) -> bool {
    raw.0.len() == labels.len()
        && raw.0.windows(2).all(|w| *w[0].0 < *w[1].0)
        && raw.iter().zip(labels.iter()).all(|(a, b)| a == b)
}

/// Whether the containers' images are `images` (sorted): compared in order when the
/// containers list them sorted.
fn same_images(containers: &[RawContainer<'_>], images: &[Box<str>]) -> bool {
    containers.len() == images.len()
        && containers.windows(2).all(|w| *w[0].image <= *w[1].image)
        && containers.iter().zip(images).all(|(c, i)| *c.image == **i)
}

fn same_owners(raw: &[RawOwner<'_>], owners: &[OwnerRef]) -> bool {
    raw.len() == owners.len()
        && raw.iter().zip(owners).all(|(r, o)| {
            *r.uid == *o.uid
                && *r.name == *o.name
                && *r.kind == *o.kind
                && r.controller.unwrap_or(false) == o.controller
        })
}

/// A pod of the snapshot from its wire form; parts equal to those of `like` (the pod read
/// before) share its storage.
fn convert_pod(
    file: &str,
    label: Obj<'_>,
    obj: &RawObject<'_>,
    like: Option<&Pod>,
) -> Result<Pod, SnapshotError> {
    let requests = pod_requests(file, label, &obj.spec)?;
    let qos = pod_qos(&obj.spec);
    let RawObject {
        metadata,
        spec,
        status,
        ..
    } = obj;
    let created = match &metadata.creation_timestamp {
        Some(t) => time(file, label, "metadata.creationTimestamp", t)?,
        None => 0,
    };
    let started = match &status.start_time {
        Some(t) => Some(time(file, label, "status.startTime", t)?),
        None => None,
    };
    let tolerations = convert_tolerations(file, label, spec)?.into();
    let topology_spread = convert_spread_constraints(file, label, spec)?.into();
    let affinity = match &spec.affinity {
        Some(a) => Some(Arc::new(convert_affinity(file, label, a)?)),
        None => None,
    };
    let template = Template::of(obj, like);
    let annotations = &metadata.annotations;
    Ok(Pod {
        namespace: metadata.namespace.boxed(),
        name: metadata.name.boxed(),
        uid: metadata.uid.boxed(),
        node_name: non_empty(spec.node_name.as_ref()),
        labels: template.labels,
        has_evict_annotation: annotations.evict,
        has_prefer_no_eviction_annotation: annotations.prefer_no_eviction,
        do_not_disrupt: if annotations.karpenter_do_not_disrupt {
            Some(DoNotDisrupt::Karpenter)
        } else if annotations.not_safe_to_evict {
            Some(DoNotDisrupt::ClusterAutoscaler)
        } else {
            None
        },
        protected_until: annotations.do_not_evict_until.as_deref().map(|t| {
            let t = t.trim();
            utc_seconds(t)
                .or_else(|| {
                    chrono::DateTime::parse_from_rfc3339(t)
                        .ok()
                        .map(|t| t.timestamp())
                })
                .unwrap_or(PROTECTED_UNTIL_UNREADABLE)
        }),
        has_request_evict_only_annotation: annotations.request_evict_only,
        has_eviction_in_progress_annotation: annotations.eviction_in_progress,
        is_mirror: annotations.mirror,
        is_static: annotations
            .config_source
            .as_deref()
            .is_some_and(|s| s != "api"),
        owners: template.owners,
        requests,
        qos,
        priority: spec.priority,
        priority_class_name: non_empty(spec.priority_class_name.as_ref()),
        phase: Phase::parse(&status.phase),
        terminating: metadata.deletion_timestamp.is_some(),
        termination_grace_seconds: spec.termination_grace_period_seconds,
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
            .map(|c| c.claim_name.boxed())
            .collect(),
        has_resource_claims: !spec.resource_claims.is_empty(),
        tolerations,
        node_selector: template.node_selector,
        affinity,
        topology_spread,
        host_ports: host_ports(spec),
        images: template.images,
        status: convert_pod_status(file, label, status)?.boxed(),
        volcano_group: non_empty(annotations.group_name.as_ref()),
        pod_group: non_empty(
            spec.scheduling_group
                .as_ref()
                .and_then(|g| g.pod_group_name.as_ref()),
        ),
        shape: crate::snapshot::NO_SHAPE,
    })
}

/// A string the model keeps only when it is there and not empty.
fn non_empty(s: Option<&Str<'_>>) -> Option<Box<str>> {
    s.filter(|n| !n.is_empty()).map(Str::boxed)
}

/// The parts of a pod its workload's template gives every pod, taken from `like` (the pod
/// read before) where they are the same.
struct Template {
    images: Arc<[Box<str>]>,
    owners: Arc<[OwnerRef]>,
    labels: Labels,
    node_selector: Labels,
}

impl Template {
    fn of(obj: &RawObject<'_>, like: Option<&Pod>) -> Template {
        let (metadata, spec) = (&obj.metadata, &obj.spec);
        let images = match like {
            Some(p) if same_images(&spec.containers, &p.images) => p.images.clone(),
            _ => {
                let mut images: Vec<Box<str>> =
                    spec.containers.iter().map(|c| c.image.boxed()).collect();
                images.sort();
                images.into()
            }
        };
        let owners = match like {
            Some(p) if same_owners(&metadata.owner_references, &p.owners) => p.owners.clone(),
            _ => metadata
                .owner_references
                .iter()
                .map(|o| OwnerRef {
                    kind: shared(&o.kind, OWNER_KINDS),
                    name: o.name.boxed(),
                    uid: o.uid.boxed(),
                    controller: o.controller.unwrap_or(false),
                })
                .collect(),
        };
        let labels = match like {
            Some(p) if same_labels(&metadata.labels, &p.labels) => p.labels.clone(),
            _ => metadata.labels.to_labels(),
        };
        let node_selector = match like {
            Some(p) if same_labels(&spec.node_selector, &p.node_selector) => {
                p.node_selector.clone()
            }
            _ => spec.node_selector.to_labels(),
        };
        Template {
            images,
            owners,
            labels,
            node_selector,
        }
    }
}

/// The host ports of the pod's containers and init containers.
fn host_ports(spec: &RawSpec<'_>) -> Box<[HostPort]> {
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
    host_ports.into_boxed_slice()
}

fn convert_tolerations(
    file: &str,
    label: Obj<'_>,
    spec: &RawSpec<'_>,
) -> Result<Vec<Toleration>, SnapshotError> {
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
            key: shared(&t.key, TOLERATION_KEYS),
            exists,
            value: t.value.boxed(),
            effect,
        });
    }
    Ok(tolerations)
}

fn convert_spread_constraints(
    file: &str,
    label: Obj<'_>,
    spec: &RawSpec<'_>,
) -> Result<Vec<TopologySpreadConstraint>, SnapshotError> {
    let mut topology_spread = Vec::with_capacity(spec.topology_spread_constraints.len());
    for (i, c) in spec.topology_spread_constraints.iter().enumerate() {
        let field = || format!("spec.topologySpreadConstraints[{i}]");
        let when_unsatisfiable = match &*c.when_unsatisfiable {
            "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
            "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
            other => {
                return Err(SnapshotError::field(
                    file,
                    label,
                    format!("{}.whenUnsatisfiable", field()),
                    format!("{other:?} is not one of DoNotSchedule, ScheduleAnyway"),
                ))
            }
        };
        let policy = |v: &Option<Str<'_>>, default: InclusionPolicy, name: &str| match v.as_deref()
        {
            None | Some("") => Ok(default),
            Some("Honor") => Ok(InclusionPolicy::Honor),
            Some("Ignore") => Ok(InclusionPolicy::Ignore),
            Some(o) => Err(SnapshotError::field(
                file,
                label,
                format!("{}.{name}", field()),
                format!("{o:?} is not one of Honor, Ignore"),
            )),
        };
        topology_spread.push(TopologySpreadConstraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.boxed(),
            when_unsatisfiable,
            label_selector: c
                .label_selector
                .as_ref()
                .map(|s| {
                    Selector::compile(s).map_err(|e| {
                        SnapshotError::field(
                            file,
                            label,
                            format!("{}.labelSelector", field()),
                            e.to_string(),
                        )
                    })
                })
                .transpose()?,
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
            match_label_keys: c.match_label_keys.iter().map(Str::boxed).collect(),
        });
    }
    Ok(topology_spread)
}

fn convert_container_statuses(raw: &[RawContainerStatus<'_>]) -> Vec<ContainerStatus> {
    raw.iter()
        .map(|c| ContainerStatus {
            restart_count: c.restart_count,
            state: if let Some(t) = &c.state.terminated {
                ContainerState::Terminated {
                    reason: non_empty(t.reason.as_ref()),
                    exit_code: t.exit_code,
                }
            } else if let Some(w) = &c.state.waiting {
                ContainerState::Waiting {
                    reason: non_empty(w.reason.as_ref()),
                }
            } else if c.state.running.is_some() {
                ContainerState::Running
            } else {
                ContainerState::Unknown
            },
        })
        .collect()
}

fn convert_pod_status(
    file: &str,
    label: Obj<'_>,
    status: &RawStatus<'_>,
) -> Result<PodStatusDetail, SnapshotError> {
    let mut conditions = Vec::with_capacity(status.conditions.len());
    for (i, c) in status.conditions.iter().enumerate() {
        let cond_status = ConditionStatus::parse(&c.status).ok_or_else(|| {
            SnapshotError::field(
                file,
                label,
                format!("status.conditions[{i}].status"),
                format!("{:?} is not one of True, False, Unknown", &*c.status),
            )
        })?;
        let last_transition = match &c.last_transition_time {
            Some(t) => Some(time(
                file,
                label,
                &format!("status.conditions[{i}].lastTransitionTime"),
                t,
            )?),
            None => None,
        };
        conditions.push(PodCondition {
            kind: shared(&c.type_, CONDITION_TYPES),
            status: cond_status,
            reason: non_empty(c.reason.as_ref()),
            last_transition,
        });
    }
    Ok(PodStatusDetail {
        reason: non_empty(status.reason.as_ref()),
        containers: convert_container_statuses(&status.container_statuses),
        init_containers: convert_container_statuses(&status.init_container_statuses),
        ephemeral_containers: convert_container_statuses(&status.ephemeral_container_statuses),
        conditions,
    })
}
