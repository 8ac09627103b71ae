//! The wire shapes: what is read of each object of the input, one union struct for every
//! kind, so decoding is a single pass. serde, the fast JSON reader and the protobuf reader
//! fill them; `convert` turns them into the model. Strings and maps borrow from the input
//! where they can ([`Str`], [`Pairs`]).

use crate::labels::{LabelSelectorSpec, Labels};
use crate::snapshot::workloads::SURGE_IN_FLIGHT_ANNOTATION;
use crate::snapshot::{
    SnapshotParts, CONFIG_SOURCE_ANNOTATION, DO_NOT_EVICT_UNTIL_ANNOTATION,
    EVICTION_IN_PROGRESS_ANNOTATION, EVICT_ANNOTATION, INITIAL_EVENTS_END_ANNOTATION,
    KARPENTER_DO_NOT_DISRUPT_ANNOTATION, MIRROR_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION,
    REQUEST_EVICT_ONLY_ANNOTATION, SAFE_TO_EVICT_ANNOTATION, VOLCANO_GROUP_ANNOTATION,
};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// The type of the objects of one API resource, given to items that come without theirs
/// (the API's typed lists, such as a PodList, leave `kind` and `apiVersion` out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectType {
    pub kind: &'static str,
    pub api_version: &'static str,
}

/// A list response, decoded.
#[derive(Debug, Default)]
pub struct DecodedList {
    pub parts: SnapshotParts,
    /// `metadata.resourceVersion`: where a watch of the same resource starts.
    pub resource_version: String,
    /// `metadata.continue`: the next page's token (empty on the last page).
    pub continue_token: String,
}

/// A string of the input: borrowed when the input holds it verbatim (JSON without escapes),
/// owned otherwise.
#[derive(Default, Clone, PartialEq, Eq)]
pub(super) struct Str<'a>(pub(super) Cow<'a, str>);

impl Str<'_> {
    pub(super) fn boxed(&self) -> Box<str> {
        Box::from(&*self.0)
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// A time as the input gives it: RFC 3339 text (JSON, YAML) or, from protobuf's
/// `metav1.Time`, seconds since the epoch (not written as text only to be parsed again).
#[derive(Clone, PartialEq, Eq)]
#[cfg_attr(test, derive(Debug))]
pub(super) enum RawTime<'a> {
    Text(Str<'a>),
    Seconds(i64),
}

impl<'de: 'a, 'a> Deserialize<'de> for RawTime<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Str::deserialize(d).map(RawTime::Text)
    }
}

/// A field's value, or its default where the input has `null` (as the API's Go decoder reads
/// it: a null list, map, string, number or object is an empty one).
pub(super) fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// A string-to-string map (labels, resource lists) as pairs in input order, without a tree.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct Pairs<'a>(pub(super) Vec<(Str<'a>, Str<'a>)>);

impl Pairs<'_> {
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        // Later keys win, as when decoding into a map.
        self.0
            .iter()
            .rev()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| &**v)
    }
    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| &**k == key)
    }
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub(super) fn to_labels(&self) -> Labels {
        Labels::from_input_order(self.iter())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Pairs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Pairs<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<'a>, A::Error> {
                let mut out: Vec<(Str<'a>, Str<'a>)> =
                    Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = map.next_entry::<Str<'a>, Str<'a>>()? {
                    if out.iter().any(|(k, _)| *k == entry.0) {
                        return Err(de::Error::custom(format_args!(
                            "the key {:?} is given twice",
                            &*entry.0
                        )));
                    }
                    out.push(entry);
                }
                Ok(Pairs(out))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

impl RawMeta<'_> {
    /// `metadata.resourceVersion` (empty when missing): the model has no use for it; lists
    /// and watches of the API do.
    pub(super) fn resource_version(&self) -> &str {
        &self.resource_version
    }
}

/// `spec.schedulingPolicy` of a Kubernetes PodGroup (`basic` or `gang`).
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawSchedulingPolicy {
    pub(super) gang: Option<RawGangPolicy>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawGangPolicy {
    pub(super) min_count: Option<RawInt>,
}

/// `spec.disruptionMode` of a Kubernetes PodGroup: in 1.37 (`v1beta1`, `v1alpha3`) a union,
/// `single: {}` or `all: {}`; in 1.36 (`v1alpha2`) a string, `Pod` or `PodGroup`.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct RawDisruptionMode {
    pub(super) single: bool,
    pub(super) all: bool,
    /// The 1.36 string, as written.
    pub(super) named: Option<String>,
}

/// The union's members, as the API writes them.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawDisruptionUnion {
    pub(super) single: Option<IgnoredAny>,
    pub(super) all: Option<IgnoredAny>,
}

impl<'de> Deserialize<'de> for RawDisruptionMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawDisruptionMode;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a disruption mode: {single: {}} or {all: {}} (Kubernetes 1.37), or the string Pod or PodGroup (1.36)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDisruptionMode, E> {
                Ok(RawDisruptionMode {
                    named: Some(v.to_owned()),
                    ..RawDisruptionMode::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawDisruptionMode, A::Error> {
                let u =
                    RawDisruptionUnion::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawDisruptionMode {
                    single: u.single.is_some(),
                    all: u.all.is_some(),
                    named: None,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// An integer field read without failing on another type, so that the error can name the
/// object and the field (a YAML type error would otherwise carry no path).
#[cfg_attr(test, derive(Debug))]
pub(super) enum RawInt {
    Int(i64),
    /// What was found instead, for the error.
    Other(String),
}

impl<'de> Deserialize<'de> for RawInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawInt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawInt, E> {
                Ok(RawInt::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawInt, E> {
                Ok(i64::try_from(v)
                    .map(RawInt::Int)
                    .unwrap_or_else(|_| RawInt::Other(format!("{v}, too large"))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawInt, E> {
                Ok(RawInt::Other(format!("the number {v}")))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawInt, E> {
                Ok(RawInt::Other(format!("the boolean {v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawInt, E> {
                Ok(RawInt::Other(format!("the string {v:?}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawInt, E> {
                Ok(RawInt::Other("null".into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawInt, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawInt::Other("a list".into()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawInt, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RawInt::Other("a map".into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The wire shapes read field by field, each field declared once, on one line: its name and
/// type in the wire shape, its JSON key, its protobuf field number (`[]`: none; `[10]`;
/// `[POD 1, NODE 3]` where the pod's and the node's message number it apart) and how it is
/// read (`=> codec`: the function of that name of `fast::codec` and of `proto::codec`).
/// `wire_shapes!(then)` hands every declaration to the macro `then`: here `declare` makes
/// the structs (serde reads each field by its JSON key); `fast` makes the JSON reader's
/// table of each struct from it, and `proto` the protobuf reader's. A field the planner
/// reads is added by one line here (and its conversion into the model); a reader lacking
/// its codec, or a key given twice in one struct, does not compile.
macro_rules! wire_shapes {
    // The declarations' grammar, read here once: each macro handed them reads them in one
    // form, every part in brackets or a single token.
    (@ $then:ident $(
        $(#[$attr:meta])*
        $name:ident < $($lt:lifetime)? > {
            $(
                $(#[$fattr:meta])*
                $field:ident : $ty:ty = $key:literal $proto:tt => $codec:ident
            ),* $(,)?
        }
    )*) => {
        $then! {$(
            [$(#[$attr])*] $name [$($lt)?] {
                $([$(#[$fattr])*] $field [$ty] $key $proto $codec)*
            }
        )*}
    };
    ($then:ident) => {
        wire_shapes! { @ $then
            RawObject<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                kind: Str<'a> = "kind" [] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                api_version: Str<'a> = "apiVersion" [] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                metadata: RawMeta<'a> = "metadata" [1] => nested,
                #[serde(borrow, deserialize_with = "nullable")]
                spec: RawSpec<'a> = "spec" [2] => nested,
                #[serde(borrow, deserialize_with = "nullable")]
                status: RawStatus<'a> = "status" [3] => nested,
                /// A List's objects; None when the object has no `items` (or `items: null`).
                #[serde(borrow)]
                items: Option<Vec<RawObject<'a>>> = "items" [] => serde,
                /// PriorityClass.value
                value: Option<i32> = "value" [] => opt_int32,
            }

            RawMeta<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                name: Str<'a> = "name" [1] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                namespace: Str<'a> = "namespace" [3] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                uid: Str<'a> = "uid" [5] => text,
                /// Where a watch resumes, and the version a list was read at.
                #[serde(borrow, deserialize_with = "nullable")]
                resource_version: Str<'a> = "resourceVersion" [6] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                labels: Pairs<'a> = "labels" [11] => labels,
                #[serde(borrow, deserialize_with = "nullable")]
                annotations: Annotations<'a> = "annotations" [12] => annotations,
                #[serde(borrow, deserialize_with = "nullable")]
                owner_references: Vec<RawOwner<'a>> = "ownerReferences" [13] => list,
                #[serde(borrow)]
                creation_timestamp: Option<RawTime<'a>> = "creationTimestamp" [8] => time,
                #[serde(borrow)]
                deletion_timestamp: Option<RawTime<'a>> = "deletionTimestamp" [9] => time,
                /// A Deployment's: the spec's version, which its controller observes.
                generation: Option<RawInt> = "generation" [] => integer,
            }

            RawOwner<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                kind: Str<'a> = "kind" [1] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                name: Str<'a> = "name" [3] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                uid: Str<'a> = "uid" [4] => text,
                controller: Option<bool> = "controller" [6] => opt_bool,
            }

            RawSpec<'a> {
                // Pod
                #[serde(borrow)]
                node_name: Option<Str<'a>> = "nodeName" [POD 10] => omitted,
                #[serde(borrow, deserialize_with = "nullable")]
                containers: Vec<RawContainer<'a>> = "containers" [POD 2] => list,
                #[serde(borrow, deserialize_with = "nullable")]
                init_containers: Vec<RawContainer<'a>> = "initContainers" [POD 20] => list,
                #[serde(borrow, deserialize_with = "nullable")]
                overhead: Pairs<'a> = "overhead" [POD 32] => amounts,
                // Rare parts boxed: a pod's spec is built on the stack and moved into its object.
                #[serde(borrow)]
                resources: Option<Box<RawResources<'a>>> = "resources" [POD 40] => rare,
                priority: Option<i32> = "priority" [POD 25] => opt_int32,
                #[serde(borrow)]
                priority_class_name: Option<Str<'a>> = "priorityClassName" [POD 24] => omitted,
                termination_grace_period_seconds: Option<i64> = "terminationGracePeriodSeconds" [POD 4] => opt_int64,
                #[serde(borrow, deserialize_with = "nullable")]
                tolerations: Vec<RawToleration<'a>> = "tolerations" [POD 22] => list,
                #[serde(borrow, deserialize_with = "nullable")]
                node_selector: Pairs<'a> = "nodeSelector" [POD 7] => labels,
                affinity: Option<Box<RawAffinity>> = "affinity" [POD 18] => boxed,
                #[serde(borrow, deserialize_with = "nullable")]
                topology_spread_constraints: Vec<RawTopologySpreadConstraint<'a>> = "topologySpreadConstraints" [POD 33] => list,
                #[serde(borrow, deserialize_with = "nullable")]
                volumes: Vec<RawVolume<'a>> = "volumes" [POD 1] => volumes,
                #[serde(deserialize_with = "nullable")]
                resource_claims: Vec<IgnoredAny> = "resourceClaims" [POD 39] => claims,
                // Node
                unschedulable: bool = "unschedulable" [NODE 4] => boolean,
                #[serde(borrow, deserialize_with = "nullable")]
                taints: Vec<RawTaint<'a>> = "taints" [NODE 5] => list,
                // PodDisruptionBudget
                selector: Option<Box<LabelSelectorSpec>> = "selector" [] => boxed_selector,
                // Pod (Kubernetes 1.37): the PodGroup it belongs to.
                #[serde(borrow)]
                scheduling_group: Option<RawSchedulingGroup<'a>> = "schedulingGroup" [POD 43] => message,
                // PodGroup
                min_member: Option<RawInt> = "minMember" [] => rare,
                // PodGroup of scheduling.k8s.io: rare, boxed.
                scheduling_policy: Option<Box<RawSchedulingPolicy>> = "schedulingPolicy" [] => rare,
                disruption_mode: Option<Box<RawDisruptionMode>> = "disruptionMode" [] => rare,
                // Deployment
                replicas: Option<RawInt> = "replicas" [] => integer,
                paused: Option<bool> = "paused" [] => opt_bool,
                // HorizontalPodAutoscaler (autoscaling/v2 and v1)
                #[serde(borrow)]
                scale_target_ref: Option<Box<RawScaleTargetRef<'a>>> = "scaleTargetRef" [] => boxed,
            }

            /// `spec.scaleTargetRef` of a HorizontalPodAutoscaler: what it scales.
            RawScaleTargetRef<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                kind: Str<'a> = "kind" [1] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                name: Str<'a> = "name" [2] => text,
            }

            /// `spec.schedulingGroup` of a pod: the Kubernetes PodGroup it belongs to.
            RawSchedulingGroup<'a> {
                #[serde(borrow)]
                pod_group_name: Option<Str<'a>> = "podGroupName" [1] => pointer,
            }

            RawStatus<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                phase: Str<'a> = "phase" [POD 1, NODE 3] => text,
                #[serde(borrow)]
                start_time: Option<RawTime<'a>> = "startTime" [POD 7] => time,
                #[serde(borrow, deserialize_with = "nullable")]
                conditions: Vec<RawCondition<'a>> = "conditions" [POD 2, NODE 4] => list,
                // Pod
                #[serde(borrow)]
                reason: Option<Str<'a>> = "reason" [POD 4] => omitted,
                #[serde(borrow, deserialize_with = "nullable")]
                container_statuses: Vec<RawContainerStatus<'a>> = "containerStatuses" [POD 8] => list,
                #[serde(borrow, deserialize_with = "nullable")]
                init_container_statuses: Vec<RawContainerStatus<'a>> = "initContainerStatuses" [POD 10] => list,
                #[serde(borrow, deserialize_with = "nullable")]
                ephemeral_container_statuses: Vec<RawContainerStatus<'a>> = "ephemeralContainerStatuses" [POD 13] => list,
                // Node
                #[serde(borrow, deserialize_with = "nullable")]
                capacity: Pairs<'a> = "capacity" [NODE 1] => amounts,
                #[serde(borrow, deserialize_with = "nullable")]
                allocatable: Pairs<'a> = "allocatable" [NODE 2] => amounts,
                #[serde(borrow, deserialize_with = "nullable")]
                images: Vec<RawImage<'a>> = "images" [NODE 8] => list,
                disruptions_allowed: Option<i32> = "disruptionsAllowed" [] => opt_int32,
                // Deployment
                observed_generation: Option<RawInt> = "observedGeneration" [] => integer,
                replicas: Option<RawInt> = "replicas" [] => integer,
                updated_replicas: Option<RawInt> = "updatedReplicas" [] => integer,
                available_replicas: Option<RawInt> = "availableReplicas" [] => integer,
                // ResourceQuota
                #[serde(borrow, deserialize_with = "nullable")]
                hard: Pairs<'a> = "hard" [] => amounts,
                #[serde(borrow, deserialize_with = "nullable")]
                used: Pairs<'a> = "used" [] => amounts,
            }

            /// A node's image (`status.images[]`): its names and size.
            RawImage<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                names: Vec<Str<'a>> = "names" [1] => texts,
                size_bytes: Option<i64> = "sizeBytes" [2] => opt_int64,
            }

            RawCondition<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                type_: Str<'a> = "type" [1] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                status: Str<'a> = "status" [2] => text,
                #[serde(borrow)]
                reason: Option<Str<'a>> = "reason" [5] => omitted,
                #[serde(borrow)]
                last_transition_time: Option<RawTime<'a>> = "lastTransitionTime" [4] => time,
            }

            RawContainerStatus<'a> {
                #[serde(deserialize_with = "nullable")]
                restart_count: i32 = "restartCount" [5] => int32,
                #[serde(borrow, deserialize_with = "nullable")]
                state: RawContainerState<'a> = "state" [2] => nested,
            }

            RawContainerState<'a> {
                running: Option<IgnoredAny> = "running" [2] => present,
                #[serde(borrow)]
                waiting: Option<RawReason<'a>> = "waiting" [1] => message,
                #[serde(borrow)]
                terminated: Option<RawTerminated<'a>> = "terminated" [3] => message,
            }

            RawReason<'a> {
                #[serde(borrow)]
                reason: Option<Str<'a>> = "reason" [1] => omitted,
            }

            RawTerminated<'a> {
                #[serde(borrow)]
                reason: Option<Str<'a>> = "reason" [3] => omitted,
                #[serde(deserialize_with = "nullable")]
                exit_code: i32 = "exitCode" [1] => int32,
            }

            RawContainer<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                image: Str<'a> = "image" [2] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                resources: RawResources<'a> = "resources" [8] => nested,
                #[serde(borrow, deserialize_with = "nullable")]
                ports: Vec<RawPort<'a>> = "ports" [6] => list,
                #[serde(borrow)]
                restart_policy: Option<Str<'a>> = "restartPolicy" [24] => pointer,
            }

            RawResources<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                requests: Pairs<'a> = "requests" [2] => amounts,
                #[serde(borrow, deserialize_with = "nullable")]
                limits: Pairs<'a> = "limits" [1] => amounts,
            }

            RawPort<'a> {
                host_port: Option<i32> = "hostPort" [2] => host_port,
                #[serde(borrow)]
                protocol: Option<Str<'a>> = "protocol" [4] => omitted,
            }

            RawToleration<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                key: Str<'a> = "key" [1] => text,
                #[serde(borrow)]
                operator: Option<Str<'a>> = "operator" [2] => omitted,
                #[serde(borrow, deserialize_with = "nullable")]
                value: Str<'a> = "value" [3] => text,
                #[serde(borrow)]
                effect: Option<Str<'a>> = "effect" [4] => omitted,
            }

            RawTaint<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                key: Str<'a> = "key" [1] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                value: Str<'a> = "value" [2] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                effect: Str<'a> = "effect" [3] => text,
            }

            RawVolume<'a> {
                empty_dir: Option<IgnoredAny> = "emptyDir" [2] => present,
                host_path: Option<IgnoredAny> = "hostPath" [1] => present,
                #[serde(borrow)]
                persistent_volume_claim: Option<RawPvcSource<'a>> = "persistentVolumeClaim" [10] => message,
            }

            RawPvcSource<'a> {
                #[serde(borrow, deserialize_with = "nullable")]
                claim_name: Str<'a> = "claimName" [1] => text,
            }

            RawTopologySpreadConstraint<'a> {
                #[serde(deserialize_with = "nullable")]
                max_skew: i32 = "maxSkew" [1] => int32,
                #[serde(borrow, deserialize_with = "nullable")]
                topology_key: Str<'a> = "topologyKey" [2] => text,
                #[serde(borrow, deserialize_with = "nullable")]
                when_unsatisfiable: Str<'a> = "whenUnsatisfiable" [3] => text,
                label_selector: Option<LabelSelectorSpec> = "labelSelector" [4] => selector,
                min_domains: Option<i32> = "minDomains" [5] => opt_int32,
                #[serde(borrow)]
                node_affinity_policy: Option<Str<'a>> = "nodeAffinityPolicy" [6] => pointer,
                #[serde(borrow)]
                node_taints_policy: Option<Str<'a>> = "nodeTaintsPolicy" [7] => pointer,
                #[serde(borrow, deserialize_with = "nullable")]
                match_label_keys: Vec<Str<'a>> = "matchLabelKeys" [8] => texts,
            }

            RawAffinity<> {
                node_affinity: Option<RawNodeAffinity> = "nodeAffinity" [1] => message,
                pod_affinity: Option<RawPodAffinity> = "podAffinity" [2] => message,
                pod_anti_affinity: Option<RawPodAffinity> = "podAntiAffinity" [3] => message,
            }

            RawNodeAffinity<> {
                required: Option<RawNodeSelector> = "requiredDuringSchedulingIgnoredDuringExecution" [1] => message,
                #[serde(deserialize_with = "nullable")]
                preferred: Vec<RawPreferredSchedulingTerm> = "preferredDuringSchedulingIgnoredDuringExecution" [2] => list,
            }

            RawNodeSelector<> {
                #[serde(deserialize_with = "nullable")]
                node_selector_terms: Vec<RawNodeSelectorTerm> = "nodeSelectorTerms" [1] => list,
            }

            RawNodeSelectorTerm<> {
                #[serde(deserialize_with = "nullable")]
                match_expressions: Vec<RawNodeSelectorRequirement> = "matchExpressions" [1] => list,
                #[serde(deserialize_with = "nullable")]
                match_fields: Vec<RawNodeSelectorRequirement> = "matchFields" [2] => list,
            }

            RawNodeSelectorRequirement<> {
                #[serde(deserialize_with = "nullable")]
                key: String = "key" [1] => string,
                #[serde(deserialize_with = "nullable")]
                operator: String = "operator" [2] => string,
                #[serde(deserialize_with = "nullable")]
                values: Vec<String> = "values" [3] => strings,
            }

            RawPreferredSchedulingTerm<> {
                #[serde(deserialize_with = "nullable")]
                weight: i32 = "weight" [1] => int32,
                #[serde(deserialize_with = "nullable")]
                preference: RawNodeSelectorTerm = "preference" [2] => nested,
            }

            RawPodAffinity<> {
                #[serde(deserialize_with = "nullable")]
                required: Vec<RawPodAffinityTerm> = "requiredDuringSchedulingIgnoredDuringExecution" [1] => list,
                #[serde(deserialize_with = "nullable")]
                preferred: Vec<RawWeightedPodAffinityTerm> = "preferredDuringSchedulingIgnoredDuringExecution" [2] => list,
            }

            RawPodAffinityTerm<> {
                label_selector: Option<LabelSelectorSpec> = "labelSelector" [1] => selector,
                #[serde(deserialize_with = "nullable")]
                namespaces: Vec<String> = "namespaces" [2] => strings,
                namespace_selector: Option<LabelSelectorSpec> = "namespaceSelector" [4] => selector,
                #[serde(deserialize_with = "nullable")]
                topology_key: String = "topologyKey" [3] => string,
            }

            RawWeightedPodAffinityTerm<> {
                #[serde(deserialize_with = "nullable")]
                weight: i32 = "weight" [1] => int32,
                #[serde(deserialize_with = "nullable")]
                pod_affinity_term: RawPodAffinityTerm = "podAffinityTerm" [2] => nested,
            }
        }
    };
}
pub(super) use wire_shapes;

/// The structs of [`wire_shapes`], with serde's decoder of each.
macro_rules! declare {
    ($([$(#[$attr:meta])*] $name:ident [$($lt:lifetime)?] {
        $([$(#[$fattr:meta])*] $field:ident [$ty:ty] $key:literal $proto:tt $codec:ident)*
    })*) => {$(
        $(#[$attr])*
        #[derive(Deserialize, Default)]
        #[cfg_attr(test, derive(Debug))]
        #[serde(default)]
        pub(super) struct $name<$($lt)?> {
            $(
                $(#[$fattr])*
                #[serde(rename = $key)]
                pub(super) $field: $ty,
            )*
        }
    )*};
}

wire_shapes!(declare);

/// Only the annotations the planner reads; the rest (often large, such as
/// last-applied-configuration) are skipped without being copied.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct Annotations<'a> {
    pub(super) evict: bool,
    pub(super) prefer_no_eviction: bool,
    /// `descheduler.alpha.kubernetes.io/request-evict-only`.
    pub(super) request_evict_only: bool,
    /// `descheduler.alpha.kubernetes.io/eviction-in-progress`.
    pub(super) eviction_in_progress: bool,
    pub(super) mirror: bool,
    pub(super) config_source: Option<Str<'a>>,
    /// `scheduling.k8s.io/group-name`: the Volcano PodGroup.
    pub(super) group_name: Option<Str<'a>>,
    /// `k8s.io/initial-events-end` is "true": the bookmark after the initial events of a
    /// watch that streams its list.
    pub(super) initial_events_end: bool,
    /// `karpenter.sh/do-not-disrupt` is "true".
    pub(super) karpenter_do_not_disrupt: bool,
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict` is "false".
    pub(super) not_safe_to_evict: bool,
    /// `descheduler.alpha.kubernetes.io/do-not-evict-until`, as written.
    pub(super) do_not_evict_until: Option<Str<'a>>,
    /// A Deployment's `descheduler.alpha.kubernetes.io/surge-in-flight`, as written.
    pub(super) surge_in_flight: Option<Str<'a>>,
}

impl Annotations<'_> {
    /// Whether this is the bookmark that ends a watch's initial events (see the field): the
    /// model has no use for it; watches of the API do.
    pub(super) fn initial_events_end(&self) -> bool {
        self.initial_events_end
    }
}

/// The annotations read, by key: serde's decoder and the hand-written reader both match on
/// it without a catch-all, so a new one is read by both or neither compiles.
#[derive(Clone, Copy)]
pub(super) enum AnnotationKey {
    Evict,
    PreferNoEviction,
    RequestEvictOnly,
    EvictionInProgress,
    Mirror,
    ConfigSource,
    GroupName,
    InitialEventsEnd,
    KarpenterDoNotDisrupt,
    SafeToEvict,
    DoNotEvictUntil,
    SurgeInFlight,
    Other,
}

impl AnnotationKey {
    #[inline]
    pub(super) fn of(key: &str) -> AnnotationKey {
        match key {
            EVICT_ANNOTATION => AnnotationKey::Evict,
            PREFER_NO_EVICTION_ANNOTATION => AnnotationKey::PreferNoEviction,
            REQUEST_EVICT_ONLY_ANNOTATION => AnnotationKey::RequestEvictOnly,
            EVICTION_IN_PROGRESS_ANNOTATION => AnnotationKey::EvictionInProgress,
            MIRROR_ANNOTATION => AnnotationKey::Mirror,
            CONFIG_SOURCE_ANNOTATION => AnnotationKey::ConfigSource,
            VOLCANO_GROUP_ANNOTATION => AnnotationKey::GroupName,
            INITIAL_EVENTS_END_ANNOTATION => AnnotationKey::InitialEventsEnd,
            KARPENTER_DO_NOT_DISRUPT_ANNOTATION => AnnotationKey::KarpenterDoNotDisrupt,
            SAFE_TO_EVICT_ANNOTATION => AnnotationKey::SafeToEvict,
            DO_NOT_EVICT_UNTIL_ANNOTATION => AnnotationKey::DoNotEvictUntil,
            SURGE_IN_FLIGHT_ANNOTATION => AnnotationKey::SurgeInFlight,
            _ => AnnotationKey::Other,
        }
    }
}

pub(super) struct AnnotationKeySeed;

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
                Ok(AnnotationKey::of(v))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Annotations<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Annotations<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Annotations<'a>, E> {
                Ok(Annotations::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Annotations<'a>, E> {
                Ok(Annotations::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Annotations<'a>, A::Error> {
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
                        AnnotationKey::RequestEvictOnly => {
                            map.next_value::<IgnoredAny>()?;
                            out.request_evict_only = true;
                        }
                        AnnotationKey::EvictionInProgress => {
                            map.next_value::<IgnoredAny>()?;
                            out.eviction_in_progress = true;
                        }
                        AnnotationKey::Mirror => {
                            map.next_value::<IgnoredAny>()?;
                            out.mirror = true;
                        }
                        AnnotationKey::ConfigSource => {
                            out.config_source = map.next_value::<Option<Str<'a>>>()?;
                        }
                        AnnotationKey::GroupName => {
                            out.group_name = map.next_value::<Option<Str<'a>>>()?;
                        }
                        AnnotationKey::InitialEventsEnd => {
                            let value = map.next_value::<Option<Str<'a>>>()?;
                            out.initial_events_end = value.is_some_and(|v| &*v == "true");
                        }
                        AnnotationKey::KarpenterDoNotDisrupt => {
                            let value = map.next_value::<Option<Str<'a>>>()?;
                            out.karpenter_do_not_disrupt = value.is_some_and(|v| &*v == "true");
                        }
                        AnnotationKey::SafeToEvict => {
                            let value = map.next_value::<Option<Str<'a>>>()?;
                            out.not_safe_to_evict = value.is_some_and(|v| &*v == "false");
                        }
                        AnnotationKey::DoNotEvictUntil => {
                            out.do_not_evict_until = map.next_value::<Option<Str<'a>>>()?;
                        }
                        AnnotationKey::SurgeInFlight => {
                            out.surge_in_flight = map.next_value::<Option<Str<'a>>>()?;
                        }
                        AnnotationKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}
