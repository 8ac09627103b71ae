//! The items of a large JSON List read by hand into the wire shapes ([`RawObject`] and below),
//! as serde's derived decoders read them, into one object reused item after item (its lists
//! keep their memory), without serde's visitors, moves and allocations.
//!
//! It reads the JSON kubectl prints and nothing unusual. On any doubt it gives up on the
//! object (None), and the caller decodes that object with serde, which gives the same result
//! or the precise error: an escape in a string it keeps (skipped ones may hold escapes), a
//! `null` where the wire shape has no Option, a number that is not an integer of the field's
//! type, a key seen twice, the rare parts (pod-level resources, a PodGroup's minMember,
//! schedulingPolicy and disruptionMode, a nested list), text that ends inside the object, anything invalid. A test holds it to
//! serde's result on every object it reads, mutated ones included.

use super::wire::{
    AnnotationKey, Annotations, Pairs, RawAffinity, RawCondition, RawContainer, RawContainerState,
    RawContainerStatus, RawImage, RawMeta, RawNodeAffinity, RawNodeSelector,
    RawNodeSelectorRequirement, RawNodeSelectorTerm, RawObject, RawOwner, RawPodAffinity,
    RawPodAffinityTerm, RawPort, RawPreferredSchedulingTerm, RawPvcSource, RawReason, RawResources,
    RawSchedulingGroup, RawSpec, RawStatus, RawTaint, RawTerminated, RawTime, RawToleration,
    RawTopologySpreadConstraint, RawVolume, RawWeightedPodAffinityTerm, Str,
};
use crate::labels::{LabelSelectorRequirement, LabelSelectorSpec};
use serde::de::IgnoredAny;
use std::borrow::Cow;

/// None: not read here (the caller asks serde).
type R<T = ()> = Option<T>;

/// Nesting deeper than this is left to serde (whose own limit is 128).
const MAX_DEPTH: u32 = 64;

/// A position in the text of a JSON value.
pub(super) struct Reader<'de> {
    text: &'de str,
    pos: usize,
    depth: u32,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `w` is below `n` (n at most 128).
#[inline]
fn any_below(w: u64, n: u8) -> bool {
    w.wrapping_sub(ONES * n as u64) & !w & HIGH != 0
}

/// Whether any byte of `w` is `c`.
#[inline]
fn any_is(w: u64, c: u8) -> bool {
    any_below(w ^ (ONES * c as u64), 1)
}

/// Marks `bit` seen; None when it was (serde refuses a key given twice).
#[inline]
fn once(seen: &mut u32, bit: u32) -> R {
    if *seen & bit != 0 {
        return None;
    }
    *seen |= bit;
    Some(())
}

fn borrowed(s: &str) -> Str<'_> {
    Str(Cow::Borrowed(s))
}

impl<'de> Reader<'de> {
    /// At byte `pos` of `text`.
    pub(super) fn new(text: &'de str, pos: usize) -> Self {
        Reader {
            text,
            pos,
            depth: 0,
        }
    }

    /// The byte after the last value read.
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    fn peek(&mut self) -> R<u8> {
        let b = self.text.as_bytes();
        while let Some(&c) = b.get(self.pos) {
            if matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                self.pos += 1;
            } else {
                return Some(c);
            }
        }
        None
    }

    #[inline]
    fn eat(&mut self, c: u8) -> R {
        if self.peek()? != c {
            return None;
        }
        self.pos += 1;
        Some(())
    }

    fn literal(&mut self, word: &str) -> R {
        let end = self.pos + word.len();
        if self.text.as_bytes().get(self.pos..end)? != word.as_bytes() {
            return None;
        }
        self.pos = end;
        Some(())
    }

    /// The first quote, backslash or control character at or after byte `i` (or the end).
    #[inline]
    fn special_from(&self, mut i: usize) -> usize {
        let b = self.text.as_bytes();
        // Eight bytes at a time, then one by one.
        while let Some(chunk) = b.get(i..i + 8) {
            let mut w = [0; 8];
            w.copy_from_slice(chunk);
            let w = u64::from_le_bytes(w);
            if any_is(w, b'"') || any_is(w, b'\\') || any_below(w, 0x20) {
                break;
            }
            i += 8;
        }
        while b
            .get(i)
            .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
        {
            i += 1;
        }
        i
    }

    /// A string without escapes, as it stands in the text.
    #[inline]
    fn str(&mut self) -> R<&'de str> {
        self.eat(b'"')?;
        let start = self.pos;
        let end = self.special_from(start);
        if *self.text.as_bytes().get(end)? != b'"' {
            return None;
        }
        self.pos = end + 1;
        self.text.get(start..end)
    }

    /// A string of any kind, skipped; its escapes checked as serde checks those of a string
    /// it skips.
    fn skip_str(&mut self) -> R {
        self.eat(b'"')?;
        let b = self.text.as_bytes();
        let mut i = self.pos;
        loop {
            i = self.special_from(i);
            match *b.get(i)? {
                b'"' => break,
                b'\\' => match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' if b.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) => i += 6,
                    _ => return None,
                },
                _ => return None,
            }
        }
        self.pos = i + 1;
        Some(())
    }

    fn string(&mut self) -> R<Str<'de>> {
        self.str().map(borrowed)
    }

    /// `null`: true; another value: false, and nothing is read.
    #[inline]
    fn null(&mut self) -> R<bool> {
        if self.peek()? != b'n' {
            return Some(false);
        }
        self.literal("null")?;
        Some(true)
    }

    fn opt_string(&mut self) -> R<Option<Str<'de>>> {
        if self.null()? {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// An integer as JSON writes one (no fraction, no exponent, no leading zero).
    fn int(&mut self) -> R<i64> {
        self.peek()?;
        let b = self.text.as_bytes();
        let mut i = self.pos;
        let negative = b.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        let mut v: i64 = 0;
        match *b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
                    v = v.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
                    i += 1;
                }
            }
            _ => return None,
        }
        // A fraction or an exponent makes a float, which serde refuses for an integer field;
        // so does `-0` (serde reads it as the float -0.0).
        if matches!(b.get(i)?, b'.' | b'e' | b'E' | b'0'..=b'9') || (negative && v == 0) {
            return None;
        }
        self.pos = i;
        Some(if negative { -v } else { v })
    }

    fn i32(&mut self) -> R<i32> {
        i32::try_from(self.int()?).ok()
    }

    fn opt_i32(&mut self) -> R<Option<i32>> {
        if self.null()? {
            return Some(None);
        }
        self.i32().map(Some)
    }

    fn opt_int(&mut self) -> R<Option<i64>> {
        if self.null()? {
            return Some(None);
        }
        self.int().map(Some)
    }

    fn bool(&mut self) -> R<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|_| true),
            b'f' => self.literal("false").map(|_| false),
            _ => None,
        }
    }

    fn opt_bool(&mut self) -> R<Option<bool>> {
        if self.null()? {
            return Some(None);
        }
        self.bool().map(Some)
    }

    /// A number of any kind, checked as JSON writes one.
    fn number(&mut self) -> R {
        let b = self.text.as_bytes();
        let mut i = self.pos;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > from
        };
        match *b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                digits(&mut i);
            }
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return None;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digits(&mut i) {
                return None;
            }
        }
        // The text must go on after a number (it may end inside one).
        if b.get(i)?.is_ascii_digit() {
            return None;
        }
        self.pos = i;
        Some(())
    }

    /// Any value, checked and skipped.
    fn skip(&mut self) -> R {
        match self.peek()? {
            b'"' => self.skip_str(),
            // The keys of a skipped object are skipped as strings: they may hold escapes
            // (managedFields keys such as `k:{\"uid\":\"...\"}`, in every object the API
            // serves).
            b'{' => self.sequence(b'{', b'}', |r| {
                r.skip_str()?;
                r.eat(b':')?;
                r.skip()
            }),
            b'[' => self.array(|r| r.skip()),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn opt_skip(&mut self) -> R<Option<IgnoredAny>> {
        if self.null()? {
            return Some(None);
        }
        self.skip().map(|_| Some(IgnoredAny))
    }

    /// Between `open` and `close`, items separated by commas, each read by `item`.
    #[inline]
    fn sequence(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> R) -> R {
        self.eat(open)?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        if self.peek()? == close {
            self.pos += 1;
        } else {
            loop {
                item(self)?;
                match self.peek()? {
                    b',' => self.pos += 1,
                    c if c == close => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// A JSON object, `field` reading each value after its key.
    #[inline]
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'de str) -> R) -> R {
        self.sequence(b'{', b'}', |r| {
            let key = r.str()?;
            r.eat(b':')?;
            field(r, key)
        })
    }

    /// An object of which the members named in `keys` are read by `field` (given the key's
    /// index), each at most once (serde refuses a key given twice), and the others skipped,
    /// or when `strict` refused. Returns the keys seen, bit `i` for `keys[i]`. Written
    /// through `fields!`, which keeps each key beside its reader.
    #[inline]
    fn fields(
        &mut self,
        keys: &[&str],
        strict: bool,
        mut field: impl FnMut(&mut Self, usize) -> R,
    ) -> R<u32> {
        let mut seen = 0;
        self.object(|r, key| match keys.iter().position(|k| *k == key) {
            Some(i) => {
                once(&mut seen, 1 << i)?;
                field(r, i)
            }
            None if strict => None,
            None => r.skip(),
        })?;
        Some(seen)
    }

    /// A JSON array, `item` reading each element.
    #[inline]
    fn array(&mut self, item: impl FnMut(&mut Self) -> R) -> R {
        self.sequence(b'[', b']', item)
    }

    /// A list into `list`, each element read over an old one where there is one (its own
    /// lists keep their memory); `item` must leave nothing of what it reads over.
    fn list<T: Default>(
        &mut self,
        list: &mut Vec<T>,
        mut item: impl FnMut(&mut Self, &mut T) -> R,
    ) -> R {
        let mut n = 0;
        self.array(|r| {
            if n == list.len() {
                list.push(T::default());
            }
            item(r, &mut list[n])?;
            n += 1;
            Some(())
        })?;
        list.truncate(n);
        Some(())
    }

    fn pairs(&mut self, pairs: &mut Pairs<'de>) -> R {
        pairs.0.clear();
        self.object(|r, key| {
            let value = r.string()?;
            // A key given twice: serde's error.
            if pairs.0.iter().any(|(k, _)| &**k == key) {
                return None;
            }
            pairs.0.push((borrowed(key), value));
            Some(())
        })
    }
}

/// `a == b`, at compile time.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The index of `key` in `keys`, at compile time.
const fn index(keys: &[&str], key: &str) -> usize {
    let mut i = 0;
    while i < keys.len() {
        if same(keys[i], key) {
            return i;
        }
        i += 1;
    }
    panic!("a key missing from its table")
}

/// Whether `keys` fit the bits of [`Reader::fields`], none given twice.
const fn distinct(keys: &[&str]) -> bool {
    if keys.len() > u32::BITS as usize {
        return false;
    }
    let mut i = 0;
    while i < keys.len() {
        if index(keys, keys[i]) != i {
            return false;
        }
        i += 1;
    }
    true
}

/// One object read by a table of its members, each key beside the expression (an [`R`])
/// that reads its value with `r`, and, after `; else`, what to do when the object lacks the
/// key. The keys of the table are those of the wire struct `$ty` as serde decodes it, all of
/// them (a test holds each table to serde's field names): a member left to serde stays in
/// the table, its reader giving up. Other keys are skipped, or with `strict` (serde's
/// `deny_unknown_fields`) refused. Expands to [`Reader::fields`] with the keys, and the
/// readers chosen by the index of their key: the same code as keys and readers written
/// apart, and a key given twice in a table does not compile.
macro_rules! fields {
    (@ $r:ident, $ty:ty, $strict:expr,
        { $($key:expr => $read:expr $(; else $missing:expr)?),+ $(,)? }) => {{
        const KEYS: &[&str] = &[$($key),+];
        const _: () = assert!(distinct(KEYS), "at most 32 keys, each once");
        #[cfg(test)]
        {
            static NOTED: std::sync::Once = std::sync::Once::new();
            NOTED.call_once(|| tables::note(stringify!($ty), KEYS, tables::serde_fields::<$ty>));
        }
        $r.fields(KEYS, $strict, |$r, i| {
            $(
                if i == const { index(KEYS, $key) } {
                    return $read;
                }
            )+
            None
        })
        .map(|seen| {
            $($(
                if seen & 1 << const { index(KEYS, $key) } == 0 {
                    $missing;
                }
            )?)+
            let _ = seen;
        })
    }};
    ($r:ident, $ty:ty, strict { $($table:tt)* }) => {
        fields!(@ $r, $ty, true, { $($table)* })
    };
    ($r:ident, $ty:ty, { $($table:tt)* }) => {
        fields!(@ $r, $ty, false, { $($table)* })
    };
}

/// One object of a list into `o`, all of it (what the text lacks is set to its default).
pub(super) fn object<'de>(r: &mut Reader<'de>, o: &mut RawObject<'de>) -> R {
    o.kind = Str::default();
    o.api_version = Str::default();
    o.value = None;
    o.items = None;
    fields!(r, RawObject, {
        "kind" => r.string().map(|v| o.kind = v),
        "apiVersion" => r.string().map(|v| o.api_version = v),
        "metadata" => meta(r, &mut o.metadata); else clear_meta(&mut o.metadata),
        "spec" => spec(r, &mut o.spec); else clear_spec(&mut o.spec),
        "status" => status(r, &mut o.status); else clear_status(&mut o.status),
        "value" => r.opt_i32().map(|v| o.value = v),
        // A nested list: serde's.
        "items" => None,
    })
}

fn clear_meta(m: &mut RawMeta<'_>) {
    m.name = Str::default();
    m.namespace = Str::default();
    m.uid = Str::default();
    m.resource_version = Str::default();
    m.labels.0.clear();
    m.annotations = Annotations::default();
    m.owner_references.clear();
    m.creation_timestamp = None;
    m.deletion_timestamp = None;
}

fn meta<'de>(r: &mut Reader<'de>, m: &mut RawMeta<'de>) -> R {
    clear_meta(m);
    fields!(r, RawMeta, {
        "name" => r.string().map(|v| m.name = v),
        "namespace" => r.string().map(|v| m.namespace = v),
        "uid" => r.string().map(|v| m.uid = v),
        "labels" => r.pairs(&mut m.labels),
        "annotations" => annotations(r, &mut m.annotations),
        "ownerReferences" => r.list(&mut m.owner_references, owner),
        "creationTimestamp" => r.opt_string().map(|v| m.creation_timestamp = v.map(RawTime::Text)),
        "deletionTimestamp" => r.opt_string().map(|v| m.deletion_timestamp = v.map(RawTime::Text)),
        "resourceVersion" => r.string().map(|v| m.resource_version = v),
    })
}

fn annotations<'de>(r: &mut Reader<'de>, a: &mut Annotations<'de>) -> R {
    *a = Annotations::default();
    if r.null()? {
        return Some(());
    }
    r.object(|r, key| {
        match AnnotationKey::of(key) {
            AnnotationKey::Evict => {
                r.skip()?;
                a.evict = true;
            }
            AnnotationKey::PreferNoEviction => {
                r.skip()?;
                a.prefer_no_eviction = true;
            }
            AnnotationKey::Mirror => {
                r.skip()?;
                a.mirror = true;
            }
            AnnotationKey::ConfigSource => a.config_source = r.opt_string()?,
            AnnotationKey::GroupName => a.group_name = r.opt_string()?,
            AnnotationKey::InitialEventsEnd => {
                a.initial_events_end = r.opt_string()?.is_some_and(|v| &*v == "true");
            }
            AnnotationKey::Other => r.skip()?,
        }
        Some(())
    })
}

fn owner<'de>(r: &mut Reader<'de>, o: &mut RawOwner<'de>) -> R {
    *o = RawOwner::default();
    fields!(r, RawOwner, {
        "kind" => r.string().map(|v| o.kind = v),
        "name" => r.string().map(|v| o.name = v),
        "uid" => r.string().map(|v| o.uid = v),
        "controller" => r.opt_bool().map(|v| o.controller = v),
    })
}

/// Everything but the lists of containers, which are read over the last object's (their own
/// lists keep their memory) and cleared only when the text has none.
fn clear_spec_but_containers(s: &mut RawSpec<'_>) {
    s.node_name = None;
    s.overhead.0.clear();
    s.resources = None;
    s.priority = None;
    s.priority_class_name = None;
    s.termination_grace_period_seconds = None;
    s.tolerations.clear();
    s.node_selector.0.clear();
    s.affinity = None;
    s.topology_spread_constraints.clear();
    s.volumes.clear();
    s.resource_claims.clear();
    s.unschedulable = false;
    s.taints.clear();
    s.selector = None;
    s.scheduling_group = None;
    s.min_member = None;
    s.scheduling_policy = None;
    s.disruption_mode = None;
}

fn clear_spec(s: &mut RawSpec<'_>) {
    clear_spec_but_containers(s);
    s.containers.clear();
    s.init_containers.clear();
}

/// `null` for one of the rare parts; anything else is serde's to read.
fn absent(r: &mut Reader<'_>) -> R {
    r.null()?.then_some(())
}

fn spec<'de>(r: &mut Reader<'de>, s: &mut RawSpec<'de>) -> R {
    clear_spec_but_containers(s);
    fields!(r, RawSpec, {
        "nodeName" => r.opt_string().map(|v| s.node_name = v),
        "containers" => r.list(&mut s.containers, container); else s.containers.clear(),
        "initContainers" => r.list(&mut s.init_containers, container);
            else s.init_containers.clear(),
        "overhead" => r.pairs(&mut s.overhead),
        // Pod-level resources: serde's (unless null).
        "resources" => absent(r),
        "priority" => r.opt_i32().map(|v| s.priority = v),
        "priorityClassName" => r.opt_string().map(|v| s.priority_class_name = v),
        "terminationGracePeriodSeconds" => {
            r.opt_int().map(|v| s.termination_grace_period_seconds = v)
        },
        "tolerations" => r.list(&mut s.tolerations, toleration),
        "nodeSelector" => r.pairs(&mut s.node_selector),
        "affinity" => opt(r, affinity).map(|v| s.affinity = v.map(Box::new)),
        "topologySpreadConstraints" => {
            r.list(&mut s.topology_spread_constraints, spread_constraint)
        },
        "volumes" => r.list(&mut s.volumes, volume),
        "resourceClaims" => r.array(|r| r.skip().map(|_| s.resource_claims.push(IgnoredAny))),
        "unschedulable" => r.bool().map(|v| s.unschedulable = v),
        "taints" => r.list(&mut s.taints, taint),
        "selector" => opt(r, label_selector).map(|v| s.selector = v.map(Box::new)),
        "schedulingGroup" => opt(r, scheduling_group).map(|v| s.scheduling_group = v),
        // A PodGroup's minMember, schedulingPolicy and disruptionMode: serde's (unless null).
        "minMember" => absent(r),
        "schedulingPolicy" => absent(r),
        "disruptionMode" => absent(r),
    })
}

fn scheduling_group<'de>(r: &mut Reader<'de>) -> R<RawSchedulingGroup<'de>> {
    let mut g = RawSchedulingGroup::default();
    fields!(r, RawSchedulingGroup, {
        "podGroupName" => r.opt_string().map(|v| g.pod_group_name = v),
    })?;
    Some(g)
}

/// `null` as None, another value as `read` reads it.
fn opt<'de, T>(r: &mut Reader<'de>, read: impl FnOnce(&mut Reader<'de>) -> R<T>) -> R<Option<T>> {
    if r.null()? {
        return Some(None);
    }
    read(r).map(Some)
}

/// A list of strings (owned, as serde makes them for these shapes).
fn strings(r: &mut Reader<'_>, out: &mut Vec<String>) -> R {
    r.array(|r| r.str().map(|v| out.push(v.to_string())))
}

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

fn affinity(r: &mut Reader<'_>) -> R<RawAffinity> {
    let mut a = RawAffinity::default();
    fields!(r, RawAffinity, {
        "nodeAffinity" => opt(r, node_affinity).map(|v| a.node_affinity = v),
        "podAffinity" => opt(r, pod_affinity).map(|v| a.pod_affinity = v),
        "podAntiAffinity" => opt(r, pod_affinity).map(|v| a.pod_anti_affinity = v),
    })?;
    Some(a)
}

fn node_affinity(r: &mut Reader<'_>) -> R<RawNodeAffinity> {
    let mut n = RawNodeAffinity::default();
    fields!(r, RawNodeAffinity, {
        REQUIRED => opt(r, node_selector).map(|v| n.required = v),
        PREFERRED => r.array(|r| preferred_node_term(r).map(|t| n.preferred.push(t))),
    })?;
    Some(n)
}

fn node_selector(r: &mut Reader<'_>) -> R<RawNodeSelector> {
    let mut s = RawNodeSelector::default();
    fields!(r, RawNodeSelector, {
        "nodeSelectorTerms" => r.array(|r| node_term(r).map(|t| s.node_selector_terms.push(t))),
    })?;
    Some(s)
}

fn preferred_node_term(r: &mut Reader<'_>) -> R<RawPreferredSchedulingTerm> {
    let mut t = RawPreferredSchedulingTerm::default();
    fields!(r, RawPreferredSchedulingTerm, {
        "weight" => r.i32().map(|v| t.weight = v),
        "preference" => node_term(r).map(|v| t.preference = v),
    })?;
    Some(t)
}

fn node_term(r: &mut Reader<'_>) -> R<RawNodeSelectorTerm> {
    let mut t = RawNodeSelectorTerm::default();
    fields!(r, RawNodeSelectorTerm, {
        "matchExpressions" => node_requirements(r, &mut t.match_expressions),
        "matchFields" => node_requirements(r, &mut t.match_fields),
    })?;
    Some(t)
}

fn node_requirements(r: &mut Reader<'_>, list: &mut Vec<RawNodeSelectorRequirement>) -> R {
    r.array(|r| {
        let mut q = RawNodeSelectorRequirement::default();
        fields!(r, RawNodeSelectorRequirement, {
            "key" => r.str().map(|v| q.key = v.to_string()),
            "operator" => r.str().map(|v| q.operator = v.to_string()),
            "values" => strings(r, &mut q.values),
        })?;
        list.push(q);
        Some(())
    })
}

fn pod_affinity(r: &mut Reader<'_>) -> R<RawPodAffinity> {
    let mut p = RawPodAffinity::default();
    fields!(r, RawPodAffinity, {
        REQUIRED => r.array(|r| pod_affinity_term(r).map(|t| p.required.push(t))),
        PREFERRED => r.array(|r| weighted_pod_term(r).map(|t| p.preferred.push(t))),
    })?;
    Some(p)
}

fn weighted_pod_term(r: &mut Reader<'_>) -> R<RawWeightedPodAffinityTerm> {
    let mut t = RawWeightedPodAffinityTerm::default();
    fields!(r, RawWeightedPodAffinityTerm, {
        "weight" => r.i32().map(|v| t.weight = v),
        "podAffinityTerm" => pod_affinity_term(r).map(|v| t.pod_affinity_term = v),
    })?;
    Some(t)
}

fn pod_affinity_term(r: &mut Reader<'_>) -> R<RawPodAffinityTerm> {
    let mut t = RawPodAffinityTerm::default();
    fields!(r, RawPodAffinityTerm, {
        "labelSelector" => opt(r, label_selector).map(|v| t.label_selector = v),
        "namespaces" => strings(r, &mut t.namespaces),
        "namespaceSelector" => opt(r, label_selector).map(|v| t.namespace_selector = v),
        "topologyKey" => r.str().map(|v| t.topology_key = v.to_string()),
    })?;
    Some(t)
}

fn container<'de>(r: &mut Reader<'de>, c: &mut RawContainer<'de>) -> R {
    c.image = Str::default();
    c.resources.requests.0.clear();
    c.resources.limits.0.clear();
    c.ports.clear();
    c.restart_policy = None;
    fields!(r, RawContainer, {
        "image" => r.string().map(|v| c.image = v),
        "resources" => resources(r, &mut c.resources),
        "ports" => r.list(&mut c.ports, port),
        "restartPolicy" => r.opt_string().map(|v| c.restart_policy = v),
    })
}

fn resources<'de>(r: &mut Reader<'de>, q: &mut RawResources<'de>) -> R {
    fields!(r, RawResources, {
        "requests" => r.pairs(&mut q.requests),
        "limits" => r.pairs(&mut q.limits),
    })
}

fn port<'de>(r: &mut Reader<'de>, p: &mut RawPort<'de>) -> R {
    *p = RawPort::default();
    fields!(r, RawPort, {
        "hostPort" => r.opt_i32().map(|v| p.host_port = v),
        "protocol" => r.opt_string().map(|v| p.protocol = v),
    })
}

fn toleration<'de>(r: &mut Reader<'de>, t: &mut RawToleration<'de>) -> R {
    *t = RawToleration::default();
    fields!(r, RawToleration, {
        "key" => r.string().map(|v| t.key = v),
        "operator" => r.opt_string().map(|v| t.operator = v),
        "value" => r.string().map(|v| t.value = v),
        "effect" => r.opt_string().map(|v| t.effect = v),
    })
}

fn taint<'de>(r: &mut Reader<'de>, t: &mut RawTaint<'de>) -> R {
    *t = RawTaint::default();
    fields!(r, RawTaint, {
        "key" => r.string().map(|v| t.key = v),
        "value" => r.string().map(|v| t.value = v),
        "effect" => r.string().map(|v| t.effect = v),
    })
}

fn volume<'de>(r: &mut Reader<'de>, v: &mut RawVolume<'de>) -> R {
    *v = RawVolume::default();
    fields!(r, RawVolume, {
        "emptyDir" => r.opt_skip().map(|x| v.empty_dir = x),
        "hostPath" => r.opt_skip().map(|x| v.host_path = x),
        "persistentVolumeClaim" => opt(r, pvc_source).map(|x| v.persistent_volume_claim = x),
    })
}

fn pvc_source<'de>(r: &mut Reader<'de>) -> R<RawPvcSource<'de>> {
    let mut claim = RawPvcSource::default();
    fields!(r, RawPvcSource, {
        "claimName" => r.string().map(|v| claim.claim_name = v),
    })?;
    Some(claim)
}

fn spread_constraint<'de>(r: &mut Reader<'de>, c: &mut RawTopologySpreadConstraint<'de>) -> R {
    c.max_skew = 0;
    c.topology_key = Str::default();
    c.when_unsatisfiable = Str::default();
    c.label_selector = None;
    c.min_domains = None;
    c.node_affinity_policy = None;
    c.node_taints_policy = None;
    c.match_label_keys.clear();
    fields!(r, RawTopologySpreadConstraint, {
        "maxSkew" => r.i32().map(|v| c.max_skew = v),
        "topologyKey" => r.string().map(|v| c.topology_key = v),
        "whenUnsatisfiable" => r.string().map(|v| c.when_unsatisfiable = v),
        "labelSelector" => opt(r, label_selector).map(|v| c.label_selector = v),
        "minDomains" => r.opt_i32().map(|v| c.min_domains = v),
        "nodeAffinityPolicy" => r.opt_string().map(|v| c.node_affinity_policy = v),
        "nodeTaintsPolicy" => r.opt_string().map(|v| c.node_taints_policy = v),
        "matchLabelKeys" => r.array(|r| r.string().map(|key| c.match_label_keys.push(key))),
    })
}

/// `metav1.LabelSelector`, which refuses unknown fields.
fn label_selector(r: &mut Reader<'_>) -> R<LabelSelectorSpec> {
    let mut out = LabelSelectorSpec::default();
    fields!(r, LabelSelectorSpec, strict {
        "matchLabels" => r.object(|r, key| {
            let value = r.str()?;
            out.match_labels.insert(key.to_string(), value.to_string());
            Some(())
        }),
        "matchExpressions" => {
            r.array(|r| label_requirement(r).map(|q| out.match_expressions.push(q)))
        },
    })?;
    Some(out)
}

/// `metav1.LabelSelectorRequirement`, which refuses unknown fields and needs its key and
/// operator.
fn label_requirement(r: &mut Reader<'_>) -> R<LabelSelectorRequirement> {
    let (mut key, mut operator, mut values) = (None, None, Vec::new());
    fields!(r, LabelSelectorRequirement, strict {
        "key" => r.str().map(|v| key = Some(v.to_string())),
        "operator" => r.str().map(|v| operator = Some(v.to_string())),
        "values" => strings(r, &mut values),
    })?;
    Some(LabelSelectorRequirement {
        key: key?,
        operator: operator?,
        values,
    })
}

fn clear_status(s: &mut RawStatus<'_>) {
    s.phase = Str::default();
    s.start_time = None;
    s.conditions.clear();
    s.reason = None;
    s.container_statuses.clear();
    s.init_container_statuses.clear();
    s.ephemeral_container_statuses.clear();
    s.capacity.0.clear();
    s.allocatable.0.clear();
    s.images.clear();
    s.disruptions_allowed = None;
}

fn status<'de>(r: &mut Reader<'de>, s: &mut RawStatus<'de>) -> R {
    clear_status(s);
    fields!(r, RawStatus, {
        "phase" => r.string().map(|v| s.phase = v),
        "startTime" => r.opt_string().map(|v| s.start_time = v.map(RawTime::Text)),
        "conditions" => r.list(&mut s.conditions, condition),
        "reason" => r.opt_string().map(|v| s.reason = v),
        "containerStatuses" => r.list(&mut s.container_statuses, container_status),
        "initContainerStatuses" => r.list(&mut s.init_container_statuses, container_status),
        "ephemeralContainerStatuses" => {
            r.list(&mut s.ephemeral_container_statuses, container_status)
        },
        "capacity" => r.pairs(&mut s.capacity),
        "allocatable" => r.pairs(&mut s.allocatable),
        "images" => r.list(&mut s.images, image),
        "disruptionsAllowed" => r.opt_i32().map(|v| s.disruptions_allowed = v),
    })
}

fn image<'de>(r: &mut Reader<'de>, i: &mut RawImage<'de>) -> R {
    i.names.clear();
    i.size_bytes = None;
    fields!(r, RawImage, {
        "names" => r.array(|r| r.string().map(|n| i.names.push(n))),
        "sizeBytes" => {
            if r.null()? {
                Some(())
            } else {
                r.int().map(|v| i.size_bytes = Some(v))
            }
        },
    })
}

fn condition<'de>(r: &mut Reader<'de>, c: &mut RawCondition<'de>) -> R {
    *c = RawCondition::default();
    fields!(r, RawCondition, {
        "type" => r.string().map(|v| c.type_ = v),
        "status" => r.string().map(|v| c.status = v),
        "reason" => r.opt_string().map(|v| c.reason = v),
        "lastTransitionTime" => r.opt_string().map(|v| c.last_transition_time = v.map(RawTime::Text)),
    })
}

fn container_status<'de>(r: &mut Reader<'de>, c: &mut RawContainerStatus<'de>) -> R {
    *c = RawContainerStatus::default();
    fields!(r, RawContainerStatus, {
        "restartCount" => r.i32().map(|v| c.restart_count = v),
        "state" => container_state(r, &mut c.state),
    })
}

fn container_state<'de>(r: &mut Reader<'de>, s: &mut RawContainerState<'de>) -> R {
    fields!(r, RawContainerState, {
        "running" => r.opt_skip().map(|v| s.running = v),
        "waiting" => opt(r, waiting).map(|v| s.waiting = v),
        "terminated" => opt(r, terminated).map(|v| s.terminated = v),
    })
}

fn waiting<'de>(r: &mut Reader<'de>) -> R<RawReason<'de>> {
    let mut w = RawReason::default();
    fields!(r, RawReason, {
        "reason" => r.opt_string().map(|v| w.reason = v),
    })?;
    Some(w)
}

fn terminated<'de>(r: &mut Reader<'de>) -> R<RawTerminated<'de>> {
    let mut t = RawTerminated::default();
    fields!(r, RawTerminated, {
        "reason" => r.opt_string().map(|v| t.reason = v),
        "exitCode" => r.i32().map(|v| t.exit_code = v),
    })?;
    Some(t)
}

/// What the tables of this reader read, for the test that holds them to serde's fields.
#[cfg(test)]
pub(super) mod tables {
    use serde::de::{self, Deserialize, Visitor};
    use std::cell::Cell;
    use std::sync::Mutex;

    /// The names serde gives the fields of a wire struct.
    pub(super) type Fields = fn() -> &'static [&'static str];

    /// Each table read so far: its wire struct, its keys, and the struct's serde fields.
    pub(super) static READ: Mutex<Vec<(&'static str, &'static [&'static str], Fields)>> =
        Mutex::new(Vec::new());

    pub(super) fn note(name: &'static str, keys: &'static [&'static str], fields: Fields) {
        READ.lock().unwrap().push((name, keys, fields));
    }

    /// The names of the fields serde's derived decoder of `T` reads (as renamed): what it
    /// passes to `deserialize_struct`, which here records them and fails.
    pub(super) fn serde_fields<T: Deserialize<'static>>() -> &'static [&'static str] {
        let fields = Cell::new(None);
        assert!(T::deserialize(Probe(&fields)).is_err());
        fields.get().expect("a struct")
    }

    /// The serde fields of every wire struct, by name.
    pub(in super::super) fn serde_fields_by_name() -> Vec<(&'static str, &'static [&'static str])> {
        use super::super::wire::*;
        use crate::labels::{LabelSelectorRequirement, LabelSelectorSpec};
        macro_rules! each {
            ($($ty:ident),+ $(,)?) => { vec![$((stringify!($ty), serde_fields::<$ty>())),+] };
        }
        each![
            RawObject,
            RawMeta,
            RawOwner,
            RawSpec,
            RawStatus,
            RawImage,
            RawContainer,
            RawResources,
            RawPort,
            RawToleration,
            RawTaint,
            RawVolume,
            RawPvcSource,
            RawTopologySpreadConstraint,
            LabelSelectorSpec,
            LabelSelectorRequirement,
            RawAffinity,
            RawNodeAffinity,
            RawNodeSelector,
            RawNodeSelectorTerm,
            RawNodeSelectorRequirement,
            RawPreferredSchedulingTerm,
            RawPodAffinity,
            RawPodAffinityTerm,
            RawWeightedPodAffinityTerm,
            RawCondition,
            RawContainerStatus,
            RawContainerState,
            RawReason,
            RawTerminated,
            RawSchedulingGroup,
        ]
    }

    struct Probe<'a>(&'a Cell<Option<&'static [&'static str]>>);

    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.set(Some(fields));
            Err(de::Error::custom("only its fields"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
}

#[cfg(test)]
mod tests;
