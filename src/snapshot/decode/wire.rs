//! The wire shapes: what is read of each object of the input, one union struct for every
//! kind, so decoding is a single pass. serde, the fast JSON reader and the protobuf reader
//! fill them; `convert` turns them into the model. Strings and maps borrow from the input
//! where they can ([`Str`], [`Pairs`]).

use crate::labels::{LabelSelectorSpec, Labels};
use crate::snapshot::{
    SnapshotParts, CONFIG_SOURCE_ANNOTATION, EVICT_ANNOTATION, INITIAL_EVENTS_END_ANNOTATION,
    MIRROR_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION, VOLCANO_GROUP_ANNOTATION,
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

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawObject<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) kind: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) api_version: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) metadata: RawMeta<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) spec: RawSpec<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) status: RawStatus<'a>,
    /// A List's objects; None when the object has no `items` (or `items: null`).
    #[serde(borrow)]
    pub(super) items: Option<Vec<RawObject<'a>>>,
    /// PriorityClass.value
    pub(super) value: Option<i32>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawMeta<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) name: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) namespace: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) uid: Str<'a>,
    /// Where a watch resumes, and the version a list was read at.
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) resource_version: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) labels: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) annotations: Annotations<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) owner_references: Vec<RawOwner<'a>>,
    #[serde(borrow)]
    pub(super) creation_timestamp: Option<RawTime<'a>>,
    #[serde(borrow)]
    pub(super) deletion_timestamp: Option<RawTime<'a>>,
}

impl RawMeta<'_> {
    /// `metadata.resourceVersion` (empty when missing): the model has no use for it; lists
    /// and watches of the API do.
    pub(super) fn resource_version(&self) -> &str {
        &self.resource_version
    }
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawOwner<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) kind: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) name: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) uid: Str<'a>,
    pub(super) controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawSpec<'a> {
    // Pod
    #[serde(borrow)]
    pub(super) node_name: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) containers: Vec<RawContainer<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) init_containers: Vec<RawContainer<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) overhead: Pairs<'a>,
    // Rare parts boxed: a pod's spec is built on the stack and moved into its object.
    #[serde(borrow)]
    pub(super) resources: Option<Box<RawResources<'a>>>,
    pub(super) priority: Option<i32>,
    #[serde(borrow)]
    pub(super) priority_class_name: Option<Str<'a>>,
    pub(super) termination_grace_period_seconds: Option<i64>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) tolerations: Vec<RawToleration<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) node_selector: Pairs<'a>,
    pub(super) affinity: Option<Box<RawAffinity>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) topology_spread_constraints: Vec<RawTopologySpreadConstraint<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) volumes: Vec<RawVolume<'a>>,
    #[serde(deserialize_with = "nullable")]
    pub(super) resource_claims: Vec<IgnoredAny>,
    // Node
    pub(super) unschedulable: bool,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) taints: Vec<RawTaint<'a>>,
    // PodDisruptionBudget
    pub(super) selector: Option<Box<LabelSelectorSpec>>,
    // Pod (Kubernetes 1.37): the PodGroup it belongs to.
    #[serde(borrow)]
    pub(super) scheduling_group: Option<RawSchedulingGroup<'a>>,
    // PodGroup
    pub(super) min_member: Option<RawInt>,
    // PodGroup of scheduling.k8s.io: rare, boxed.
    pub(super) scheduling_policy: Option<Box<RawSchedulingPolicy>>,
    pub(super) disruption_mode: Option<Box<RawDisruptionMode>>,
}

/// `spec.schedulingGroup` of a pod: the Kubernetes PodGroup it belongs to.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawSchedulingGroup<'a> {
    #[serde(borrow)]
    pub(super) pod_group_name: Option<Str<'a>>,
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

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawStatus<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) phase: Str<'a>,
    #[serde(borrow)]
    pub(super) start_time: Option<RawTime<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) conditions: Vec<RawCondition<'a>>,
    // Pod
    #[serde(borrow)]
    pub(super) reason: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) container_statuses: Vec<RawContainerStatus<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) init_container_statuses: Vec<RawContainerStatus<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) ephemeral_container_statuses: Vec<RawContainerStatus<'a>>,
    // Node
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) capacity: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) allocatable: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) images: Vec<RawImage<'a>>,
    pub(super) disruptions_allowed: Option<i32>,
}

/// A node's image (`status.images[]`): its names and size.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawImage<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) names: Vec<Str<'a>>,
    pub(super) size_bytes: Option<i64>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawCondition<'a> {
    #[serde(rename = "type", borrow, deserialize_with = "nullable")]
    pub(super) type_: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) status: Str<'a>,
    #[serde(borrow)]
    pub(super) reason: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) last_transition_time: Option<RawTime<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawContainerStatus<'a> {
    #[serde(deserialize_with = "nullable")]
    pub(super) restart_count: i32,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) state: RawContainerState<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawContainerState<'a> {
    pub(super) running: Option<IgnoredAny>,
    #[serde(borrow)]
    pub(super) waiting: Option<RawReason<'a>>,
    #[serde(borrow)]
    pub(super) terminated: Option<RawTerminated<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawReason<'a> {
    #[serde(borrow)]
    pub(super) reason: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawTerminated<'a> {
    #[serde(borrow)]
    pub(super) reason: Option<Str<'a>>,
    #[serde(deserialize_with = "nullable")]
    pub(super) exit_code: i32,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawContainer<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) image: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) resources: RawResources<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) ports: Vec<RawPort<'a>>,
    #[serde(borrow)]
    pub(super) restart_policy: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawResources<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) requests: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) limits: Pairs<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawPort<'a> {
    pub(super) host_port: Option<i32>,
    #[serde(borrow)]
    pub(super) protocol: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawToleration<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) key: Str<'a>,
    #[serde(borrow)]
    pub(super) operator: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) value: Str<'a>,
    #[serde(borrow)]
    pub(super) effect: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawTaint<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) key: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) value: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) effect: Str<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawVolume<'a> {
    pub(super) empty_dir: Option<IgnoredAny>,
    pub(super) host_path: Option<IgnoredAny>,
    #[serde(borrow)]
    pub(super) persistent_volume_claim: Option<RawPvcSource<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawPvcSource<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) claim_name: Str<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawTopologySpreadConstraint<'a> {
    #[serde(deserialize_with = "nullable")]
    pub(super) max_skew: i32,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) topology_key: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) when_unsatisfiable: Str<'a>,
    pub(super) label_selector: Option<LabelSelectorSpec>,
    pub(super) min_domains: Option<i32>,
    #[serde(borrow)]
    pub(super) node_affinity_policy: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) node_taints_policy: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    pub(super) match_label_keys: Vec<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawAffinity {
    pub(super) node_affinity: Option<RawNodeAffinity>,
    pub(super) pod_affinity: Option<RawPodAffinity>,
    pub(super) pod_anti_affinity: Option<RawPodAffinity>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawNodeAffinity {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    pub(super) required: Option<RawNodeSelector>,
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    pub(super) preferred: Vec<RawPreferredSchedulingTerm>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawNodeSelector {
    #[serde(deserialize_with = "nullable")]
    pub(super) node_selector_terms: Vec<RawNodeSelectorTerm>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawNodeSelectorTerm {
    #[serde(deserialize_with = "nullable")]
    pub(super) match_expressions: Vec<RawNodeSelectorRequirement>,
    #[serde(deserialize_with = "nullable")]
    pub(super) match_fields: Vec<RawNodeSelectorRequirement>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawNodeSelectorRequirement {
    #[serde(deserialize_with = "nullable")]
    pub(super) key: String,
    #[serde(deserialize_with = "nullable")]
    pub(super) operator: String,
    #[serde(deserialize_with = "nullable")]
    pub(super) values: Vec<String>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawPreferredSchedulingTerm {
    #[serde(deserialize_with = "nullable")]
    pub(super) weight: i32,
    #[serde(deserialize_with = "nullable")]
    pub(super) preference: RawNodeSelectorTerm,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
pub(super) struct RawPodAffinity {
    #[serde(
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    pub(super) required: Vec<RawPodAffinityTerm>,
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    pub(super) preferred: Vec<RawWeightedPodAffinityTerm>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawPodAffinityTerm {
    pub(super) label_selector: Option<LabelSelectorSpec>,
    #[serde(deserialize_with = "nullable")]
    pub(super) namespaces: Vec<String>,
    pub(super) namespace_selector: Option<LabelSelectorSpec>,
    #[serde(deserialize_with = "nullable")]
    pub(super) topology_key: String,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
pub(super) struct RawWeightedPodAffinityTerm {
    #[serde(deserialize_with = "nullable")]
    pub(super) weight: i32,
    #[serde(deserialize_with = "nullable")]
    pub(super) pod_affinity_term: RawPodAffinityTerm,
}

/// Only the annotations the planner reads; the rest (often large, such as
/// last-applied-configuration) are skipped without being copied.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct Annotations<'a> {
    pub(super) evict: bool,
    pub(super) prefer_no_eviction: bool,
    pub(super) mirror: bool,
    pub(super) config_source: Option<Str<'a>>,
    /// `scheduling.k8s.io/group-name`: the Volcano PodGroup.
    pub(super) group_name: Option<Str<'a>>,
    /// `k8s.io/initial-events-end` is "true": the bookmark after the initial events of a
    /// watch that streams its list.
    pub(super) initial_events_end: bool,
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
    Mirror,
    ConfigSource,
    GroupName,
    InitialEventsEnd,
    Other,
}

impl AnnotationKey {
    #[inline]
    pub(super) fn of(key: &str) -> AnnotationKey {
        match key {
            EVICT_ANNOTATION => AnnotationKey::Evict,
            PREFER_NO_EVICTION_ANNOTATION => AnnotationKey::PreferNoEviction,
            MIRROR_ANNOTATION => AnnotationKey::Mirror,
            CONFIG_SOURCE_ANNOTATION => AnnotationKey::ConfigSource,
            VOLCANO_GROUP_ANNOTATION => AnnotationKey::GroupName,
            INITIAL_EVENTS_END_ANNOTATION => AnnotationKey::InitialEventsEnd,
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
