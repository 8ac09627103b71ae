//! The Kubernetes API's protobuf encoding (`application/vnd.kubernetes.protobuf`) of pods and
//! nodes, read into the same wire shapes ([`RawObject`] and below) as the JSON readers, and
//! converted by the same code. The API server writes a pod in protobuf in about half the
//! bytes of its JSON, and a field the planner does not read (managedFields, env, probes,
//! images of a node) is passed over by its length, without looking inside: reading the
//! pods of a large cluster costs a fraction of reading their JSON.
//!
//! Field numbers are those of `k8s.io/api/core/v1/generated.proto` and
//! `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`, declared beside the JSON key of
//! each field of the wire shapes (`wire_shapes`); each message is read by a table made from
//! those declarations, a row for each numbered field, read by the codec of `codec` it
//! names. A test holds the tables to the JSON tables (every member the JSON reader fills
//! for a pod or a node has its protobuf field here), and a test against a real API server
//! holds both encodings of the same objects to the same model.
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
    wire_shapes, AnnotationKey, Annotations, DecodedList, ObjectType, Pairs, RawAffinity,
    RawCondition, RawContainer, RawContainerState, RawContainerStatus, RawImage, RawMeta,
    RawNodeAffinity, RawNodeSelector, RawNodeSelectorRequirement, RawNodeSelectorTerm, RawObject,
    RawOwner, RawPodAffinity, RawPodAffinityTerm, RawPort, RawPreferredSchedulingTerm,
    RawPvcSource, RawReason, RawResources, RawScaleTargetRef, RawSchedulingGroup, RawSpec,
    RawStatus, RawTaint, RawTerminated, RawTime, RawToleration, RawTopologySpreadConstraint,
    RawVolume, RawWeightedPodAffinityTerm, Str,
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

/// A message of a type outside the wire shapes (a label selector) read by a table: each row
/// a field number, the JSON key of the same field (of `$ty`, which the JSON reader's table
/// has too), and what reading it does with the value `$v`. Fields not in the table are
/// passed over.
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
    match m {
        Message::Pod => RawObject::read::<POD>(b, o),
        Message::Node => RawObject::read::<NODE>(b, o),
    }
}

/// The messages a wire struct is read from where their numbers differ (a pod's spec and
/// status, a node's): the `M` of [`ProtoRead::read`].
const POD: u8 = 0;
const NODE: u8 = 1;

/// A wire struct read from its protobuf message by a table made from its declaration
/// (`wire_shapes`), as the message `M` numbers its fields.
trait ProtoRead<'de> {
    /// Reads the message `b` into `o` (fresh): fields not in the table are passed over.
    fn read<const M: u8>(b: &'de [u8], o: &mut Self) -> P;
}

/// A field's row of a protobuf table: when the field's number (for the message `M`) is `n`,
/// `read` it. A field without a number has no row.
macro_rules! row {
    ($m:ident, $n:ident, [], $read:expr) => {};
    ($m:ident, $n:ident, [$num:literal], $read:expr) => {
        if $n == $num {
            return $read;
        }
    };
    ($m:ident, $n:ident, [$($msg:ident $num:literal),+], $read:expr) => {
        if $(($m == $msg && $n == $num))||+ {
            return $read;
        }
    };
}

/// Whether a field has a protobuf number (for the tests' record of the tables).
#[cfg(test)]
macro_rules! numbered {
    ([], $key:literal) => {
        None
    };
    ([$($t:tt)+], $key:literal) => {
        Some($key)
    };
}

/// The reader of each struct of [`wire_shapes`]: a row for each of its fields with a
/// protobuf number, read by the codec its declaration names.
macro_rules! proto {
    ($([$($attr:tt)*] $name:ident [$($lt:lifetime)?] {
        $([$($fattr:tt)*] $field:ident [$ty:ty] $key:literal $proto:tt $codec:ident)*
    })*) => {$(
        impl<'de $(, $lt)?> ProtoRead<'de> for $name<$($lt)?> $(where 'de: $lt, $lt: 'de)? {
            fn read<const M: u8>(b: &'de [u8], o: &mut Self) -> P {
                #[cfg(test)]
                {
                    static NOTED: std::sync::Once = std::sync::Once::new();
                    NOTED.call_once(|| {
                        let keys: Vec<&'static str> =
                            [$(numbered!($proto, $key)),*].into_iter().flatten().collect();
                        tables::note(stringify!($name), keys.leak())
                    });
                }
                each(b, |n, v| {
                    $( row!(M, n, $proto, codec::$codec::<M>(v, &mut o.$field)); )*
                    Ok(())
                })
            }
        }
    )*};
}

wire_shapes!(proto);

/// How each kind of declared field is read, by the name the declarations give it. A
/// repeated field (a list, a map) comes once for each of its elements.
mod codec {
    use super::*;

    pub(super) fn text<'de, const M: u8>(v: V<'de>, o: &mut Str<'de>) -> P {
        *o = v.string()?;
        Ok(())
    }

    /// A string that may be unset (a pointer in the API's types): present is set.
    pub(super) fn pointer<'de, const M: u8>(v: V<'de>, o: &mut Option<Str<'de>>) -> P {
        *o = v.some()?;
        Ok(())
    }

    /// A string the JSON leaves out when empty: empty is unset.
    pub(super) fn omitted<'de, const M: u8>(v: V<'de>, o: &mut Option<Str<'de>>) -> P {
        *o = v.omitted()?;
        Ok(())
    }

    pub(super) fn string<const M: u8>(v: V<'_>, o: &mut String) -> P {
        *o = v.owned()?;
        Ok(())
    }

    pub(super) fn texts<'de, const M: u8>(v: V<'de>, o: &mut Vec<Str<'de>>) -> P {
        o.push(v.string()?);
        Ok(())
    }

    pub(super) fn strings<const M: u8>(v: V<'_>, o: &mut Vec<String>) -> P {
        o.push(v.owned()?);
        Ok(())
    }

    pub(super) fn int32<const M: u8>(v: V<'_>, o: &mut i32) -> P {
        *o = v.i32()?;
        Ok(())
    }

    pub(super) fn opt_int32<const M: u8>(v: V<'_>, o: &mut Option<i32>) -> P {
        *o = Some(v.i32()?);
        Ok(())
    }

    /// A port: written even when 0, which the JSON leaves out.
    pub(super) fn host_port<const M: u8>(v: V<'_>, o: &mut Option<i32>) -> P {
        *o = Some(v.i32()?).filter(|&h| h != 0);
        Ok(())
    }

    pub(super) fn opt_int64<const M: u8>(v: V<'_>, o: &mut Option<i64>) -> P {
        *o = Some(v.int()? as i64);
        Ok(())
    }

    pub(super) fn boolean<const M: u8>(v: V<'_>, o: &mut bool) -> P {
        *o = v.bool()?;
        Ok(())
    }

    pub(super) fn opt_bool<const M: u8>(v: V<'_>, o: &mut Option<bool>) -> P {
        *o = Some(v.bool()?);
        Ok(())
    }

    /// A map of strings: an entry.
    pub(super) fn labels<'de, const M: u8>(v: V<'de>, o: &mut Pairs<'de>) -> P {
        o.0.push(v.string_entry()?);
        Ok(())
    }

    /// A resource list: an entry, its quantity a message holding its string.
    pub(super) fn amounts<'de, const M: u8>(v: V<'de>, o: &mut Pairs<'de>) -> P {
        o.0.push(v.quantity_entry()?);
        Ok(())
    }

    pub(super) fn time<'de, const M: u8>(v: V<'de>, o: &mut Option<RawTime<'de>>) -> P {
        *o = v.time()?;
        Ok(())
    }

    /// A message whose presence is what counts.
    pub(super) fn present<const M: u8>(v: V<'_>, o: &mut Option<IgnoredAny>) -> P {
        v.bytes()?;
        *o = Some(IgnoredAny);
        Ok(())
    }

    /// A list whose length is what counts: an element.
    pub(super) fn claims<const M: u8>(v: V<'_>, o: &mut Vec<IgnoredAny>) -> P {
        v.bytes()?;
        o.push(IgnoredAny);
        Ok(())
    }

    pub(super) fn annotations<'de, const M: u8>(v: V<'de>, o: &mut Annotations<'de>) -> P {
        annotation(v, o)
    }

    fn fresh<'de, const M: u8, T: ProtoRead<'de> + Default>(v: V<'de>) -> P<T> {
        let mut t = T::default();
        T::read::<M>(v.bytes()?, &mut t)?;
        Ok(t)
    }

    /// A wire struct, read in place.
    pub(super) fn nested<'de, const M: u8>(v: V<'de>, o: &mut impl ProtoRead<'de>) -> P {
        ProtoRead::read::<M>(v.bytes()?, o)
    }

    pub(super) fn message<'de, const M: u8>(
        v: V<'de>,
        o: &mut Option<impl ProtoRead<'de> + Default>,
    ) -> P {
        *o = Some(fresh::<M, _>(v)?);
        Ok(())
    }

    pub(super) fn boxed<'de, const M: u8>(
        v: V<'de>,
        o: &mut Option<Box<impl ProtoRead<'de> + Default>>,
    ) -> P {
        *o = Some(Box::new(fresh::<M, _>(v)?));
        Ok(())
    }

    /// A rare part (pod-level resources), which the JSON reader leaves to serde.
    pub(super) fn rare<'de, const M: u8>(
        v: V<'de>,
        o: &mut Option<Box<impl ProtoRead<'de> + Default>>,
    ) -> P {
        boxed::<M>(v, o)
    }

    /// A list of wire structs: an element.
    pub(super) fn list<'de, const M: u8>(
        v: V<'de>,
        o: &mut Vec<impl ProtoRead<'de> + Default>,
    ) -> P {
        o.push(fresh::<M, _>(v)?);
        Ok(())
    }

    /// A pod's volume: its source (field 2) holds what the JSON writes inline in the volume.
    pub(super) fn volumes<'de, const M: u8>(v: V<'de>, o: &mut Vec<RawVolume<'de>>) -> P {
        let mut volume = RawVolume::default();
        each(v.bytes()?, |n, source| {
            if n == 2 {
                RawVolume::read::<M>(source.bytes()?, &mut volume)?;
            }
            Ok(())
        })?;
        o.push(volume);
        Ok(())
    }

    pub(super) fn selector<const M: u8>(v: V<'_>, o: &mut Option<LabelSelectorSpec>) -> P {
        *o = Some(label_selector(v.bytes()?)?);
        Ok(())
    }
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
        AnnotationKey::RequestEvictOnly => a.request_evict_only = true,
        AnnotationKey::EvictionInProgress => a.eviction_in_progress = true,
        AnnotationKey::Mirror => a.mirror = true,
        AnnotationKey::ConfigSource => a.config_source = Some(value()?),
        AnnotationKey::GroupName => a.group_name = Some(value()?),
        AnnotationKey::InitialEventsEnd => a.initial_events_end = &*value()? == "true",
        AnnotationKey::KarpenterDoNotDisrupt => a.karpenter_do_not_disrupt = &*value()? == "true",
        AnnotationKey::SafeToEvict => a.not_safe_to_evict = &*value()? == "false",
        AnnotationKey::DoNotEvictUntil => a.do_not_evict_until = Some(value()?),
        AnnotationKey::SurgeInFlight => a.surge_in_flight = Some(value()?),
        AnnotationKey::Other => {}
    }
    Ok(())
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
