//! The Kubernetes API's protobuf encoding (`application/vnd.kubernetes.protobuf`) of pods and
//! nodes, read into the same wire shapes ([`RawObject`] and below) as the JSON readers, and
//! converted by the same code. The API server writes a pod in protobuf in about half the
//! bytes of its JSON, and a field the planner does not read (managedFields, env, probes,
//! images of a node) is passed over by its length, without looking inside: reading the
//! pods of a large cluster costs a fraction of reading their JSON.
//!
//! Field numbers are those of `k8s.io/api/core/v1/generated.proto` and
//! `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`. Each message is read by a table
//! of its field numbers beside the JSON key of the same field and the wire shape's member
//! it fills; a test holds those tables to the JSON tables (every member the JSON reader
//! fills for a pod or a node has its protobuf field here), and a test against a real API
//! server holds both encodings of the same objects to the same model.
//!
//! What the API server writes differs from its JSON in a few ways this reader undoes: a
//! string or number the JSON leaves out when empty (`omitempty`) is written empty here (read
//! as absent), a time that is not set is an empty message (absent), and quantities are
//! messages holding their string.
//!
//! A list response is `k8s\0` followed by a `runtime.Unknown` whose `raw` is the list
//! message; [`ProtoListDecoder`] reads it as its bytes arrive, one item at a time, and holds
//! less than one item's bytes beyond the model.

use super::convert::add_object;
use super::error::SnapshotError;
use super::wire::{
    AnnotationKey, Annotations, DecodedList, ObjectType, RawAffinity, RawCondition, RawContainer,
    RawContainerState, RawContainerStatus, RawImage, RawMeta, RawNodeAffinity, RawNodeSelector,
    RawNodeSelectorRequirement, RawNodeSelectorTerm, RawObject, RawOwner, RawPodAffinity,
    RawPodAffinityTerm, RawPort, RawPreferredSchedulingTerm, RawPvcSource, RawReason, RawResources,
    RawSchedulingGroup, RawSpec, RawStatus, RawTaint, RawTerminated, RawTime, RawToleration,
    RawTopologySpreadConstraint, RawVolume, RawWeightedPodAffinityTerm, Str,
};
use crate::labels::{LabelSelectorRequirement, LabelSelectorSpec};
use crate::snapshot::shapes::Shapes;
use crate::snapshot::SnapshotParts;
use serde::de::IgnoredAny;
use std::borrow::Cow;

/// The media type of this encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What to accept for a resource this reader reads: protobuf, or JSON where the server has
/// no protobuf for it.
pub const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// The four bytes every protobuf-encoded API answer starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why bytes could not be read as the message expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bad(pub &'static str);

type P<T = ()> = Result<T, Bad>;
/// A field found by `field_at`: its number, its value's range (None for a number), the
/// position after it.
type FieldAt = (u32, Option<(usize, usize)>, usize);

/// One field's value as the wire carries it.
#[derive(Clone, Copy)]
enum V<'de> {
    Int(u64),
    Bytes(&'de [u8]),
    Fixed,
}

/// Bytes that end inside a number.
const SHORT_NUMBER: Bad = Bad("the message ends inside a number");
/// A length that goes past the bytes there are.
const SHORT_LENGTH: Bad = Bad("a length past the end of its message");

/// The number at `pos`, and `pos` moved past it.
#[inline]
fn varint(b: &[u8], pos: &mut usize) -> P<u64> {
    // Most numbers of a pod (tags, short lengths, small values) are one byte.
    match b.get(*pos) {
        Some(&byte) if byte < 0x80 => {
            *pos += 1;
            Ok(u64::from(byte))
        }
        _ => varint_long(b, pos),
    }
}

fn varint_long(b: &[u8], pos: &mut usize) -> P<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*pos).ok_or(SHORT_NUMBER)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return Err(Bad("a number longer than 64 bits"));
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(Bad("a number longer than 64 bits"));
        }
    }
}

/// The length-delimited value at `pos` (after its tag): its bytes and the position after.
fn delimited(b: &[u8], pos: &mut usize) -> P<(usize, usize)> {
    let n = varint(b, pos)?;
    let start = *pos;
    let end = usize::try_from(n)
        .ok()
        .and_then(|n| start.checked_add(n))
        .filter(|&end| end <= b.len())
        .ok_or(SHORT_LENGTH)?;
    *pos = end;
    Ok((start, end))
}

/// Each field of the message `b`, in order, given to `f` with its number.
fn each<'de>(b: &'de [u8], mut f: impl FnMut(u32, V<'de>) -> P) -> P {
    let mut pos = 0;
    while pos < b.len() {
        let tag = varint(b, &mut pos)?;
        let field = u32::try_from(tag >> 3)
            .ok()
            .filter(|&n| n > 0)
            .ok_or(Bad("an invalid field number"))?;
        let v = match tag & 7 {
            0 => V::Int(varint(b, &mut pos)?),
            1 | 5 => {
                pos += if tag & 7 == 1 { 8 } else { 4 };
                if pos > b.len() {
                    return Err(SHORT_NUMBER);
                }
                V::Fixed
            }
            2 => {
                let (start, end) = delimited(b, &mut pos)?;
                V::Bytes(&b[start..end])
            }
            _ => return Err(Bad("a field of an unknown wire type")),
        };
        f(field, v)?;
    }
    Ok(())
}

impl<'de> V<'de> {
    fn bytes(self) -> P<&'de [u8]> {
        match self {
            V::Bytes(b) => Ok(b),
            _ => Err(Bad("a number where a message or string belongs")),
        }
    }

    fn string(self) -> P<Str<'de>> {
        std::str::from_utf8(self.bytes()?)
            .map(|s| Str(Cow::Borrowed(s)))
            .map_err(|_| Bad("a string that is not UTF-8"))
    }

    /// A string the JSON leaves out when empty.
    fn omitted(self) -> P<Option<Str<'de>>> {
        let s = self.string()?;
        Ok((!s.is_empty()).then_some(s))
    }

    /// A string that may be unset (a pointer in the API's types): present is set.
    fn some(self) -> P<Option<Str<'de>>> {
        self.string().map(Some)
    }

    fn owned(self) -> P<String> {
        self.string().map(|s| s.0.into_owned())
    }

    fn int(self) -> P<u64> {
        match self {
            V::Int(v) => Ok(v),
            _ => Err(Bad("a message or string where a number belongs")),
        }
    }

    /// An int32 (negative ones are written as 64-bit two's complement).
    fn i32(self) -> P<i32> {
        i32::try_from(self.int()? as i64).map_err(|_| Bad("an int32 out of range"))
    }

    fn bool(self) -> P<bool> {
        match self.int()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Bad("a boolean other than 0 or 1")),
        }
    }

    /// A `metav1.Time`: an empty message is a time not set; else its seconds (within the
    /// years 0 to 9999, as `metav1.Time` allows).
    fn time(self) -> P<Option<RawTime<'de>>> {
        let b = self.bytes()?;
        if b.is_empty() {
            return Ok(None);
        }
        let mut seconds = 0i64;
        each(b, |n, v| {
            if n == 1 {
                seconds = v.int()? as i64;
            }
            Ok(())
        })?;
        TIMES
            .contains(&seconds)
            .then_some(Some(RawTime::Seconds(seconds)))
            .ok_or(Bad("a time out of range"))
    }

    /// A `resource.Quantity`: a message holding its string.
    fn quantity(self) -> P<Str<'de>> {
        let mut s = Str::default();
        each(self.bytes()?, |n, v| {
            if n == 1 {
                s = v.string()?;
            }
            Ok(())
        })?;
        Ok(s)
    }

    /// A map's entry (key 1, value 2), the key and the value each read by `read`.
    fn entry<T: Default>(self, read: fn(V<'de>) -> P<T>) -> P<(T, T)> {
        let (mut k, mut v) = (T::default(), T::default());
        each(self.bytes()?, |n, x| {
            match n {
                1 => k = read(x)?,
                2 => v = read(x)?,
                _ => {}
            }
            Ok(())
        })?;
        Ok((k, v))
    }

    fn string_entry(self) -> P<(Str<'de>, Str<'de>)> {
        self.entry(V::string)
    }

    fn quantity_entry(self) -> P<(Str<'de>, Str<'de>)> {
        let (k, v) = self.entry(V::bytes)?;
        Ok((V::Bytes(k).string()?, V::Bytes(v).quantity()?))
    }
}

/// The times `metav1.Time` can hold: 0000-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
const TIMES: std::ops::Range<i64> = -62_167_219_200..253_402_300_800;

/// A message read by a table: each row a field number, the JSON key of the same field (of
/// the wire struct `$ty`, which the JSON reader's table has too), and what reading it does
/// with the value `$v`. Fields not in the table are passed over.
macro_rules! table {
    ($bytes:expr, $ty:ty, |$v:ident| { $($num:literal $key:literal => $read:expr),+ $(,)? }) => {{
        #[cfg(test)]
        {
            static NOTED: std::sync::Once = std::sync::Once::new();
            NOTED.call_once(|| tables::note(stringify!($ty), &[$($key),+]));
        }
        each($bytes, |n, $v| {
            match n {
                $($num => {
                    $read;
                })+
                _ => {}
            }
            Ok(())
        })
    }};
}

/// Which message an item of a list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    Pod,
    Node,
}

impl Message {
    /// The message of items of `object`'s type, if this reader reads it.
    pub fn of(object: ObjectType) -> Option<Message> {
        match (object.kind, object.api_version) {
            ("Pod", "v1") => Some(Message::Pod),
            ("Node", "v1") => Some(Message::Node),
            _ => None,
        }
    }
}

/// One pod or node into `o` (which must be fresh).
fn object<'de>(b: &'de [u8], m: Message, o: &mut RawObject<'de>) -> P {
    table!(b, RawObject, |v| {
        1 "metadata" => meta(v.bytes()?, &mut o.metadata)?,
        2 "spec" => match m {
            Message::Pod => pod_spec(v.bytes()?, &mut o.spec)?,
            Message::Node => node_spec(v.bytes()?, &mut o.spec)?,
        },
        3 "status" => match m {
            Message::Pod => pod_status(v.bytes()?, &mut o.status)?,
            Message::Node => node_status(v.bytes()?, &mut o.status)?,
        },
    })
}

fn meta<'de>(b: &'de [u8], m: &mut RawMeta<'de>) -> P {
    table!(b, RawMeta, |v| {
        1 "name" => m.name = v.string()?,
        3 "namespace" => m.namespace = v.string()?,
        5 "uid" => m.uid = v.string()?,
        6 "resourceVersion" => m.resource_version = v.string()?,
        8 "creationTimestamp" => m.creation_timestamp = v.time()?,
        9 "deletionTimestamp" => m.deletion_timestamp = v.time()?,
        11 "labels" => m.labels.0.push(v.string_entry()?),
        12 "annotations" => annotation(v, &mut m.annotations)?,
        13 "ownerReferences" => m.owner_references.push(owner(v.bytes()?)?),
    })
}

/// An annotation: only the values of the few keys the planner reads are looked at (other
/// values, such as a last-applied configuration of kilobytes, are passed over as unknown
/// fields are).
fn annotation<'de>(v: V<'de>, a: &mut Annotations<'de>) -> P {
    let (key, value) = v.entry(V::bytes)?;
    let value = || V::Bytes(value).string();
    match AnnotationKey::of(&V::Bytes(key).string()?) {
        AnnotationKey::Evict => a.evict = true,
        AnnotationKey::PreferNoEviction => a.prefer_no_eviction = true,
        AnnotationKey::Mirror => a.mirror = true,
        AnnotationKey::ConfigSource => a.config_source = Some(value()?),
        AnnotationKey::GroupName => a.group_name = Some(value()?),
        AnnotationKey::InitialEventsEnd => a.initial_events_end = &*value()? == "true",
        AnnotationKey::Other => {}
    }
    Ok(())
}

fn owner(b: &[u8]) -> P<RawOwner<'_>> {
    let mut o = RawOwner::default();
    table!(b, RawOwner, |v| {
        1 "kind" => o.kind = v.string()?,
        3 "name" => o.name = v.string()?,
        4 "uid" => o.uid = v.string()?,
        6 "controller" => o.controller = Some(v.bool()?),
    })?;
    Ok(o)
}

fn pod_spec<'de>(b: &'de [u8], s: &mut RawSpec<'de>) -> P {
    table!(b, RawSpec, |v| {
        1 "volumes" => s.volumes.push(volume(v.bytes()?)?),
        2 "containers" => s.containers.push(container(v.bytes()?)?),
        4 "terminationGracePeriodSeconds" => {
            s.termination_grace_period_seconds = Some(v.int()? as i64)
        },
        7 "nodeSelector" => s.node_selector.0.push(v.string_entry()?),
        10 "nodeName" => s.node_name = v.omitted()?,
        18 "affinity" => s.affinity = Some(Box::new(affinity(v.bytes()?)?)),
        20 "initContainers" => s.init_containers.push(container(v.bytes()?)?),
        22 "tolerations" => s.tolerations.push(toleration(v.bytes()?)?),
        24 "priorityClassName" => s.priority_class_name = v.omitted()?,
        25 "priority" => s.priority = Some(v.i32()?),
        32 "overhead" => s.overhead.0.push(v.quantity_entry()?),
        33 "topologySpreadConstraints" => {
            s.topology_spread_constraints.push(spread_constraint(v.bytes()?)?)
        },
        39 "resourceClaims" => {
            v.bytes()?;
            s.resource_claims.push(IgnoredAny)
        },
        40 "resources" => {
            let mut r = RawResources::default();
            resources(v.bytes()?, &mut r)?;
            s.resources = Some(Box::new(r))
        },
        43 "schedulingGroup" => s.scheduling_group = Some(scheduling_group(v.bytes()?)?),
    })
}

/// `PodSchedulingGroup` (Kubernetes 1.37): the PodGroup a pod belongs to.
fn scheduling_group(b: &[u8]) -> P<RawSchedulingGroup<'_>> {
    let mut g = RawSchedulingGroup::default();
    table!(b, RawSchedulingGroup, |v| {
        1 "podGroupName" => g.pod_group_name = v.some()?,
    })?;
    Ok(g)
}

fn node_spec<'de>(b: &'de [u8], s: &mut RawSpec<'de>) -> P {
    table!(b, RawSpec, |v| {
        4 "unschedulable" => s.unschedulable = v.bool()?,
        5 "taints" => s.taints.push(taint(v.bytes()?)?),
    })
}

fn volume(b: &[u8]) -> P<RawVolume<'_>> {
    let mut out = RawVolume::default();
    each(b, |n, v| {
        if n == 2 {
            volume_source(v.bytes()?, &mut out)?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// A volume's source, which the JSON writes inline in the volume.
fn volume_source<'de>(b: &'de [u8], out: &mut RawVolume<'de>) -> P {
    table!(b, RawVolume, |v| {
        1 "hostPath" => {
            v.bytes()?;
            out.host_path = Some(IgnoredAny)
        },
        2 "emptyDir" => {
            v.bytes()?;
            out.empty_dir = Some(IgnoredAny)
        },
        10 "persistentVolumeClaim" => {
            let mut claim = RawPvcSource::default();
            table!(v.bytes()?, RawPvcSource, |c| {
                1 "claimName" => claim.claim_name = c.string()?,
            })?;
            out.persistent_volume_claim = Some(claim)
        },
    })
}

fn container(b: &[u8]) -> P<RawContainer<'_>> {
    let mut c = RawContainer::default();
    table!(b, RawContainer, |v| {
        2 "image" => c.image = v.string()?,
        6 "ports" => c.ports.push(port(v.bytes()?)?),
        8 "resources" => resources(v.bytes()?, &mut c.resources)?,
        24 "restartPolicy" => c.restart_policy = v.some()?,
    })?;
    Ok(c)
}

fn resources<'de>(b: &'de [u8], r: &mut RawResources<'de>) -> P {
    table!(b, RawResources, |v| {
        1 "limits" => r.limits.0.push(v.quantity_entry()?),
        2 "requests" => r.requests.0.push(v.quantity_entry()?),
    })
}

fn port(b: &[u8]) -> P<RawPort<'_>> {
    let mut p = RawPort::default();
    table!(b, RawPort, |v| {
        // Written even when 0, which the JSON leaves out.
        2 "hostPort" => p.host_port = Some(v.i32()?).filter(|&h| h != 0),
        4 "protocol" => p.protocol = v.omitted()?,
    })?;
    Ok(p)
}

fn toleration(b: &[u8]) -> P<RawToleration<'_>> {
    let mut t = RawToleration::default();
    table!(b, RawToleration, |v| {
        1 "key" => t.key = v.string()?,
        2 "operator" => t.operator = v.omitted()?,
        3 "value" => t.value = v.string()?,
        4 "effect" => t.effect = v.omitted()?,
    })?;
    Ok(t)
}

fn taint(b: &[u8]) -> P<RawTaint<'_>> {
    let mut t = RawTaint::default();
    table!(b, RawTaint, |v| {
        1 "key" => t.key = v.string()?,
        2 "value" => t.value = v.string()?,
        3 "effect" => t.effect = v.string()?,
    })?;
    Ok(t)
}

fn spread_constraint(b: &[u8]) -> P<RawTopologySpreadConstraint<'_>> {
    let mut c = RawTopologySpreadConstraint::default();
    table!(b, RawTopologySpreadConstraint, |v| {
        1 "maxSkew" => c.max_skew = v.i32()?,
        2 "topologyKey" => c.topology_key = v.string()?,
        3 "whenUnsatisfiable" => c.when_unsatisfiable = v.string()?,
        4 "labelSelector" => c.label_selector = Some(label_selector(v.bytes()?)?),
        5 "minDomains" => c.min_domains = Some(v.i32()?),
        6 "nodeAffinityPolicy" => c.node_affinity_policy = v.some()?,
        7 "nodeTaintsPolicy" => c.node_taints_policy = v.some()?,
        8 "matchLabelKeys" => c.match_label_keys.push(v.string()?),
    })?;
    Ok(c)
}

fn label_selector(b: &[u8]) -> P<LabelSelectorSpec> {
    let mut out = LabelSelectorSpec::default();
    table!(b, LabelSelectorSpec, |v| {
        1 "matchLabels" => {
            let (k, x) = v.string_entry()?;
            out.match_labels.insert(k.0.into_owned(), x.0.into_owned())
        },
        2 "matchExpressions" => {
            let (mut key, mut operator, mut values) = (String::new(), String::new(), Vec::new());
            table!(v.bytes()?, LabelSelectorRequirement, |r| {
                1 "key" => key = r.owned()?,
                2 "operator" => operator = r.owned()?,
                3 "values" => values.push(r.owned()?),
            })?;
            out.match_expressions.push(LabelSelectorRequirement { key, operator, values })
        },
    })?;
    Ok(out)
}

fn affinity(b: &[u8]) -> P<RawAffinity> {
    let mut a = RawAffinity::default();
    table!(b, RawAffinity, |v| {
        1 "nodeAffinity" => a.node_affinity = Some(node_affinity(v.bytes()?)?),
        2 "podAffinity" => a.pod_affinity = Some(pod_affinity(v.bytes()?)?),
        3 "podAntiAffinity" => a.pod_anti_affinity = Some(pod_affinity(v.bytes()?)?),
    })?;
    Ok(a)
}

fn node_affinity(b: &[u8]) -> P<RawNodeAffinity> {
    let mut n = RawNodeAffinity::default();
    table!(b, RawNodeAffinity, |v| {
        1 "requiredDuringSchedulingIgnoredDuringExecution" => {
            let mut s = RawNodeSelector::default();
            table!(v.bytes()?, RawNodeSelector, |t| {
                1 "nodeSelectorTerms" => s.node_selector_terms.push(node_term(t.bytes()?)?),
            })?;
            n.required = Some(s)
        },
        2 "preferredDuringSchedulingIgnoredDuringExecution" => {
            let mut p = RawPreferredSchedulingTerm::default();
            table!(v.bytes()?, RawPreferredSchedulingTerm, |t| {
                1 "weight" => p.weight = t.i32()?,
                2 "preference" => p.preference = node_term(t.bytes()?)?,
            })?;
            n.preferred.push(p)
        },
    })?;
    Ok(n)
}

fn node_term(b: &[u8]) -> P<RawNodeSelectorTerm> {
    let mut t = RawNodeSelectorTerm::default();
    table!(b, RawNodeSelectorTerm, |v| {
        1 "matchExpressions" => t.match_expressions.push(node_requirement(v.bytes()?)?),
        2 "matchFields" => t.match_fields.push(node_requirement(v.bytes()?)?),
    })?;
    Ok(t)
}

fn node_requirement(b: &[u8]) -> P<RawNodeSelectorRequirement> {
    let mut q = RawNodeSelectorRequirement::default();
    table!(b, RawNodeSelectorRequirement, |v| {
        1 "key" => q.key = v.owned()?,
        2 "operator" => q.operator = v.owned()?,
        3 "values" => q.values.push(v.owned()?),
    })?;
    Ok(q)
}

fn pod_affinity(b: &[u8]) -> P<RawPodAffinity> {
    let mut p = RawPodAffinity::default();
    table!(b, RawPodAffinity, |v| {
        1 "requiredDuringSchedulingIgnoredDuringExecution" => p.required.push(pod_affinity_term(v.bytes()?)?),
        2 "preferredDuringSchedulingIgnoredDuringExecution" => {
            let mut w = RawWeightedPodAffinityTerm::default();
            table!(v.bytes()?, RawWeightedPodAffinityTerm, |t| {
                1 "weight" => w.weight = t.i32()?,
                2 "podAffinityTerm" => w.pod_affinity_term = pod_affinity_term(t.bytes()?)?,
            })?;
            p.preferred.push(w)
        },
    })?;
    Ok(p)
}

fn pod_affinity_term(b: &[u8]) -> P<RawPodAffinityTerm> {
    let mut t = RawPodAffinityTerm::default();
    table!(b, RawPodAffinityTerm, |v| {
        1 "labelSelector" => t.label_selector = Some(label_selector(v.bytes()?)?),
        2 "namespaces" => t.namespaces.push(v.owned()?),
        3 "topologyKey" => t.topology_key = v.owned()?,
        4 "namespaceSelector" => t.namespace_selector = Some(label_selector(v.bytes()?)?),
    })?;
    Ok(t)
}

fn pod_status<'de>(b: &'de [u8], s: &mut RawStatus<'de>) -> P {
    table!(b, RawStatus, |v| {
        1 "phase" => s.phase = v.string()?,
        2 "conditions" => s.conditions.push(condition(v.bytes()?)?),
        4 "reason" => s.reason = v.omitted()?,
        7 "startTime" => s.start_time = v.time()?,
        8 "containerStatuses" => s.container_statuses.push(container_status(v.bytes()?)?),
        10 "initContainerStatuses" => {
            s.init_container_statuses.push(container_status(v.bytes()?)?)
        },
        13 "ephemeralContainerStatuses" => {
            s.ephemeral_container_statuses.push(container_status(v.bytes()?)?)
        },
    })
}

fn node_status<'de>(b: &'de [u8], s: &mut RawStatus<'de>) -> P {
    table!(b, RawStatus, |v| {
        1 "capacity" => s.capacity.0.push(v.quantity_entry()?),
        2 "allocatable" => s.allocatable.0.push(v.quantity_entry()?),
        3 "phase" => s.phase = v.string()?,
        4 "conditions" => s.conditions.push(condition(v.bytes()?)?),
        8 "images" => s.images.push(image(v.bytes()?)?),
    })
}

/// A node's ContainerImage: its names and size.
fn image(b: &[u8]) -> P<RawImage<'_>> {
    let mut i = RawImage::default();
    table!(b, RawImage, |v| {
        1 "names" => i.names.push(v.string()?),
        2 "sizeBytes" => i.size_bytes = Some(v.int()? as i64),
    })?;
    Ok(i)
}

/// A PodCondition or a NodeCondition (the same numbers for what is read).
fn condition(b: &[u8]) -> P<RawCondition<'_>> {
    let mut c = RawCondition::default();
    table!(b, RawCondition, |v| {
        1 "type" => c.type_ = v.string()?,
        2 "status" => c.status = v.string()?,
        4 "lastTransitionTime" => c.last_transition_time = v.time()?,
        5 "reason" => c.reason = v.omitted()?,
    })?;
    Ok(c)
}

fn container_status(b: &[u8]) -> P<RawContainerStatus<'_>> {
    let mut c = RawContainerStatus::default();
    table!(b, RawContainerStatus, |v| {
        2 "state" => c.state = container_state(v.bytes()?)?,
        5 "restartCount" => c.restart_count = v.i32()?,
    })?;
    Ok(c)
}

fn container_state(b: &[u8]) -> P<RawContainerState<'_>> {
    let mut s = RawContainerState::default();
    table!(b, RawContainerState, |v| {
        1 "waiting" => {
            let mut w = RawReason::default();
            table!(v.bytes()?, RawReason, |r| {
                1 "reason" => w.reason = r.omitted()?,
            })?;
            s.waiting = Some(w)
        },
        2 "running" => {
            v.bytes()?;
            s.running = Some(IgnoredAny)
        },
        3 "terminated" => {
            let mut t = RawTerminated::default();
            table!(v.bytes()?, RawTerminated, |r| {
                1 "exitCode" => t.exit_code = r.i32()?,
                3 "reason" => t.reason = r.omitted()?,
            })?;
            s.terminated = Some(t)
        },
    })?;
    Ok(s)
}

/// An API `Status` (what the server answers instead of an object when it fails).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    pub status: String,
    pub message: String,
    pub reason: String,
    pub code: i32,
}

/// The `runtime.Unknown` envelope after the magic: its kind and raw message.
fn envelope(body: &[u8]) -> P<(Str<'_>, &[u8])> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or(Bad("not the API's protobuf encoding (no k8s\\0 prefix)"))?;
    let (mut kind, mut raw) = (Str::default(), &[][..]);
    each(rest, |n, v| {
        match n {
            1 => each(v.bytes()?, |n, t| {
                if n == 2 {
                    kind = t.string()?;
                }
                Ok(())
            })?,
            2 => raw = v.bytes()?,
            _ => {}
        }
        Ok(())
    })?;
    Ok((kind, raw))
}

/// Reads a protobuf-encoded `Status` (an error answer); None when `body` is not one.
pub fn decode_status(body: &[u8]) -> Option<Status> {
    let (kind, raw) = envelope(body).ok()?;
    if &*kind != "Status" {
        return None;
    }
    let mut s = Status::default();
    each(raw, |n, v| {
        match n {
            2 => s.status = v.owned()?,
            3 => s.message = v.owned()?,
            4 => s.reason = v.owned()?,
            6 => s.code = v.i32()?,
            _ => {}
        }
        Ok(())
    })
    .ok()?;
    Some(s)
}

/// Where a list response's reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the four magic bytes.
    Magic,
    /// Among the fields of the `runtime.Unknown` envelope.
    Envelope,
    /// Inside the list message (its `raw`), with this many of its bytes still to read.
    List(usize),
}

/// Decodes one protobuf list response (a PodList or a NodeList) pushed in pieces, each item
/// converted as soon as its last byte is in.
pub struct ProtoListDecoder {
    what: String,
    defaults: ObjectType,
    message: Message,
    /// The start of an item cut off by the end of the bytes pushed so far.
    buf: Vec<u8>,
    /// Bytes of the response before `buf[0]`.
    read: usize,
    state: State,
    list_seen: bool,
    index: usize,
    parts: SnapshotParts,
    shapes: Shapes,
    resource_version: String,
    continue_token: String,
}

impl ProtoListDecoder {
    /// `what` names the response in errors; its items are of type `defaults`, which must be
    /// one [`Message::of`] reads.
    pub fn new(what: impl Into<String>, defaults: ObjectType) -> Option<Self> {
        let message = Message::of(defaults)?;
        Some(ProtoListDecoder {
            what: what.into(),
            defaults,
            message,
            buf: Vec::new(),
            read: 0,
            state: State::Magic,
            list_seen: false,
            index: 0,
            parts: SnapshotParts::default(),
            shapes: Shapes::default(),
            resource_version: String::new(),
            continue_token: String::new(),
        })
    }

    /// The next bytes of the response. They are read where they lie: only the start of an
    /// item that `bytes` cuts off is copied, and completed from the next bytes with as many as
    /// it lacks.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), SnapshotError> {
        while !self.buf.is_empty() && !bytes.is_empty() {
            let take = self.wanted().min(bytes.len());
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            self.decode()?;
        }
        if !bytes.is_empty() {
            let used = self.decode_in(bytes)?;
            self.read += used;
            self.buf.extend_from_slice(&bytes[used..]);
        }
        Ok(())
    }

    /// How many more bytes the field that `buf` starts needs to be whole (a few when its tag
    /// or length is not in yet).
    fn wanted(&self) -> usize {
        /// Enough for any tag and length.
        const HEAD: usize = 16;
        let b = &self.buf;
        let mut p = 0;
        let end = (|| {
            if !matches!(self.state, State::List(_)) || varint(b, &mut p).ok()? & 7 != 2 {
                return None;
            }
            let n = usize::try_from(varint(b, &mut p).ok()?).ok()?;
            n.checked_add(p)
        })();
        match end {
            Some(end) if end > b.len() => end - b.len(),
            _ => HEAD,
        }
    }

    /// The response is over: all of it must have been read.
    pub fn finish(mut self) -> Result<DecodedList, SnapshotError> {
        self.decode()?;
        if !self.buf.is_empty() || self.state != State::Envelope || !self.list_seen {
            return Err(self.error(self.buf.len(), "the response ended before the list did"));
        }
        Ok(DecodedList {
            parts: self.parts,
            resource_version: self.resource_version,
            continue_token: self.continue_token,
        })
    }

    fn error(&self, at: usize, message: impl std::fmt::Display) -> SnapshotError {
        SnapshotError::Response {
            what: self.what.clone(),
            message: format!("protobuf at byte {}: {message}", self.read + at),
        }
    }

    fn decode(&mut self) -> Result<(), SnapshotError> {
        let buf = std::mem::take(&mut self.buf);
        let result = self.decode_in(&buf);
        self.buf = buf;
        let used = result?;
        self.buf.drain(..used);
        self.read += used;
        Ok(())
    }

    /// The next field of the message at `b[pos..]` whose value is wholly in `b`: its number
    /// and its value's range (or, for a number, None) and the position after it; Ok(None)
    /// when `b` ends first.
    fn field_at(b: &[u8], pos: usize) -> P<Option<FieldAt>> {
        let short = |e: &Bad| *e == SHORT_NUMBER || *e == SHORT_LENGTH;
        let mut p = pos;
        let read = (|| {
            let tag = varint(b, &mut p)?;
            let field = u32::try_from(tag >> 3)
                .ok()
                .filter(|&n| n > 0)
                .ok_or(Bad("an invalid field number"))?;
            match tag & 7 {
                0 => varint(b, &mut p).map(|_| (field, None)),
                2 => delimited(b, &mut p).map(|range| (field, Some(range))),
                _ => Err(Bad("a field of a wire type the envelope does not use")),
            }
        })();
        match read {
            Ok((field, value)) => Ok(Some((field, value, p))),
            Err(e) if short(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Reads what `buf` holds; returns how many bytes were used.
    fn decode_in(&mut self, b: &[u8]) -> Result<usize, SnapshotError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Magic => {
                    if b.len() < MAGIC.len() {
                        return Ok(0);
                    }
                    if &b[..MAGIC.len()] != MAGIC {
                        return Err(self.error(0, "not the API's protobuf encoding"));
                    }
                    pos = MAGIC.len();
                    self.state = State::Envelope;
                }
                State::Envelope => {
                    // The list (field 2, a message): entered after its length, its fields read
                    // one by one as they come, not waited for whole.
                    let mut p = pos;
                    if !self.list_seen && varint(b, &mut p) == Ok(2 << 3 | 2) {
                        match varint(b, &mut p) {
                            Ok(n) => {
                                let n = usize::try_from(n)
                                    .map_err(|_| self.error(pos, "a list too long"))?;
                                self.list_seen = true;
                                self.state = State::List(n);
                                pos = p;
                                continue;
                            }
                            Err(e) if e == SHORT_NUMBER => return Ok(pos),
                            Err(e) => return Err(self.error(pos, e.0)),
                        }
                    }
                    let Some((field, value, after)) =
                        Self::field_at(b, pos).map_err(|e| self.error(pos, e.0))?
                    else {
                        return Ok(pos);
                    };
                    match (field, value) {
                        (1, Some((start, end))) => {
                            let mut kind = Str::default();
                            each(&b[start..end], |n, v| {
                                if n == 2 {
                                    kind = v.string()?;
                                }
                                Ok(())
                            })
                            .map_err(|e| self.error(start, e.0))?;
                            if &*kind == "Status" {
                                return Err(self
                                    .error(start, "the API server answered a Status, not a list"));
                            }
                            pos = after;
                        }
                        (2, None) => return Err(self.error(pos, "the list is not a message")),
                        (2, Some(_)) => {
                            return Err(self.error(pos, "a second list in one response"));
                        }
                        _ => pos = after,
                    }
                }
                State::List(0) => self.state = State::Envelope,
                State::List(left) => {
                    let Some((field, value, after)) =
                        Self::field_at(&b[..b.len().min(pos + left)], pos)
                            .map_err(|e| self.error(pos, e.0))?
                    else {
                        if b.len() >= pos + left {
                            return Err(self.error(pos, "a field runs past the end of the list"));
                        }
                        return Ok(pos);
                    };
                    match (field, value) {
                        (1, Some((start, end))) => {
                            let (mut rv, mut cont) = (String::new(), String::new());
                            each(&b[start..end], |n, v| {
                                match n {
                                    2 => rv = v.owned()?,
                                    3 => cont = v.owned()?,
                                    _ => {}
                                }
                                Ok(())
                            })
                            .map_err(|e| self.error(start, e.0))?;
                            self.resource_version = rv;
                            self.continue_token = cont;
                        }
                        (2, Some((start, end))) => self.item(&b[start..end], start)?,
                        (2, None) => return Err(self.error(pos, "an item that is not a message")),
                        _ => {}
                    }
                    self.state = State::List(left - (after - pos));
                    pos = after;
                }
            }
        }
    }

    fn item(&mut self, bytes: &[u8], at: usize) -> Result<(), SnapshotError> {
        let mut o = RawObject {
            kind: Str(Cow::Borrowed(self.defaults.kind)),
            api_version: Str(Cow::Borrowed(self.defaults.api_version)),
            ..RawObject::default()
        };
        object(bytes, self.message, &mut o)
            .map_err(|e| self.error(at, format!("item #{}: {}", self.index, e.0)))?;
        add_object(
            &self.what,
            self.index,
            &mut o,
            &mut self.parts,
            &mut self.shapes,
            true,
        )?;
        self.index += 1;
        Ok(())
    }
}

/// What the tables of this reader read, for the test that holds them to the JSON reader's.
#[cfg(test)]
pub(super) mod tables {
    use std::sync::Mutex;

    /// Each table read so far: its wire struct and the JSON keys of its fields.
    pub(in super::super) static READ: Mutex<Vec<(&'static str, &'static [&'static str])>> =
        Mutex::new(Vec::new());

    pub(super) fn note(name: &'static str, keys: &'static [&'static str]) {
        READ.lock().unwrap().push((name, keys));
    }
}

#[cfg(test)]
mod tests;
