//! The items of a large JSON List read by hand into the wire shapes ([`RawObject`] and below),
//! as serde's derived decoders read them, into one object reused item after item (its lists
//! keep their memory), without serde's visitors, moves and allocations.
//!
//! It reads the JSON kubectl prints and nothing unusual. On any doubt it gives up on the
//! object (None), and the caller decodes that object with serde, which gives the same result
//! or the precise error: an escape in a string it keeps (skipped ones may hold escapes), a
//! `null` where the wire shape has no Option, a number that is not an integer of the field's
//! type, a key seen twice, the rare parts (pod-level resources, a PodGroup's minMember, a
//! nested list), text that ends inside the object, anything invalid. A test holds it to
//! serde's result on every object it reads, mutated ones included.

use super::{
    Annotations, Pairs, RawAffinity, RawCondition, RawContainer, RawContainerStatus, RawMeta,
    RawNodeAffinity, RawNodeSelector, RawNodeSelectorRequirement, RawNodeSelectorTerm, RawObject,
    RawOwner, RawPodAffinity, RawPodAffinityTerm, RawPort, RawPreferredSchedulingTerm,
    RawPvcSource, RawReason, RawSpec, RawStatus, RawTaint, RawTerminated, RawToleration,
    RawTopologySpreadConstraint, RawVolume, RawWeightedPodAffinityTerm, Str,
    CONFIG_SOURCE_ANNOTATION, EVICT_ANNOTATION, MIRROR_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION,
    VOLCANO_GROUP_ANNOTATION,
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
        // A fraction or an exponent makes a float, which serde refuses for an integer field.
        if matches!(b.get(i)?, b'.' | b'e' | b'E' | b'0'..=b'9') {
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
            b'{' => self.object(|r, _| r.skip()),
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
    /// index), each at most once (serde refuses a key given twice), and the others skipped.
    /// Returns the keys seen, bit `i` for `keys[i]`.
    #[inline]
    fn fields(&mut self, keys: &[&str], mut field: impl FnMut(&mut Self, usize) -> R) -> R<u32> {
        let mut seen = 0;
        self.object(|r, key| match keys.iter().position(|k| *k == key) {
            Some(i) => {
                once(&mut seen, 1 << i)?;
                field(r, i)
            }
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
            pairs.0.push((borrowed(key), value));
            Some(())
        })
    }
}

/// One object of a list into `o`, all of it (what the text lacks is set to its default).
pub(super) fn object<'de>(r: &mut Reader<'de>, o: &mut RawObject<'de>) -> R {
    o.kind = Str::default();
    o.api_version = Str::default();
    o.value = None;
    o.items.clear();
    const KEYS: &[&str] = &[
        "kind",
        "apiVersion",
        "metadata",
        "spec",
        "status",
        "value",
        "items",
    ];
    let seen = r.fields(KEYS, |r, i| match i {
        0 => r.string().map(|v| o.kind = v),
        1 => r.string().map(|v| o.api_version = v),
        2 => meta(r, &mut o.metadata),
        3 => spec(r, &mut o.spec),
        4 => status(r, &mut o.status),
        5 => r.opt_i32().map(|v| o.value = v),
        _ => None,
    })?;
    if seen & 1 << 2 == 0 {
        clear_meta(&mut o.metadata);
    }
    if seen & 1 << 3 == 0 {
        clear_spec(&mut o.spec);
    }
    if seen & 1 << 4 == 0 {
        clear_status(&mut o.status);
    }
    Some(())
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
    const KEYS: &[&str] = &[
        "name",
        "namespace",
        "uid",
        "labels",
        "annotations",
        "ownerReferences",
        "creationTimestamp",
        "deletionTimestamp",
        "resourceVersion",
    ];
    r.fields(KEYS, |r, i| match i {
        0 => r.string().map(|v| m.name = v),
        1 => r.string().map(|v| m.namespace = v),
        2 => r.string().map(|v| m.uid = v),
        3 => r.pairs(&mut m.labels),
        4 => annotations(r, &mut m.annotations),
        5 => r.list(&mut m.owner_references, owner),
        6 => r.opt_string().map(|v| m.creation_timestamp = v),
        7 => r.opt_string().map(|v| m.deletion_timestamp = v),
        _ => r.string().map(|v| m.resource_version = v),
    })
    .map(drop)
}

fn annotations<'de>(r: &mut Reader<'de>, a: &mut Annotations<'de>) -> R {
    *a = Annotations::default();
    if r.null()? {
        return Some(());
    }
    r.object(|r, key| {
        match key {
            EVICT_ANNOTATION => {
                r.skip()?;
                a.evict = true;
            }
            PREFER_NO_EVICTION_ANNOTATION => {
                r.skip()?;
                a.prefer_no_eviction = true;
            }
            MIRROR_ANNOTATION => {
                r.skip()?;
                a.mirror = true;
            }
            CONFIG_SOURCE_ANNOTATION => a.config_source = r.opt_string()?,
            VOLCANO_GROUP_ANNOTATION => a.group_name = r.opt_string()?,
            _ => r.skip()?,
        }
        Some(())
    })
}

fn owner<'de>(r: &mut Reader<'de>, o: &mut RawOwner<'de>) -> R {
    *o = RawOwner::default();
    r.fields(&["kind", "name", "uid", "controller"], |r, i| match i {
        0 => r.string().map(|v| o.kind = v),
        1 => r.string().map(|v| o.name = v),
        2 => r.string().map(|v| o.uid = v),
        _ => r.opt_bool().map(|v| o.controller = v),
    })
    .map(drop)
}

/// Everything but the lists of containers, which are read over the last object's (their own
/// lists keep their memory) and cleared only when the text has none.
fn clear_spec_but_containers(s: &mut RawSpec<'_>) {
    s.node_name = None;
    s.overhead.0.clear();
    s.resources = None;
    s.priority = None;
    s.priority_class_name = None;
    s.tolerations.clear();
    s.node_selector.0.clear();
    s.affinity = None;
    s.topology_spread_constraints.clear();
    s.volumes.clear();
    s.resource_claims.clear();
    s.unschedulable = false;
    s.taints.clear();
    s.selector = None;
    s.min_member = None;
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
    const KEYS: &[&str] = &[
        "nodeName",
        "containers",
        "initContainers",
        "overhead",
        "resources",
        "priority",
        "priorityClassName",
        "tolerations",
        "nodeSelector",
        "affinity",
        "topologySpreadConstraints",
        "volumes",
        "resourceClaims",
        "unschedulable",
        "taints",
        "selector",
        "minMember",
    ];
    let seen = r.fields(KEYS, |r, i| match i {
        0 => r.opt_string().map(|v| s.node_name = v),
        1 => r.list(&mut s.containers, container),
        2 => r.list(&mut s.init_containers, container),
        3 => r.pairs(&mut s.overhead),
        4 | 16 => absent(r),
        9 => opt(r, affinity).map(|v| s.affinity = v.map(Box::new)),
        5 => r.opt_i32().map(|v| s.priority = v),
        6 => r.opt_string().map(|v| s.priority_class_name = v),
        7 => r.list(&mut s.tolerations, toleration),
        8 => r.pairs(&mut s.node_selector),
        10 => r.list(&mut s.topology_spread_constraints, spread_constraint),
        11 => r.list(&mut s.volumes, volume),
        12 => r.array(|r| r.skip().map(|_| s.resource_claims.push(IgnoredAny))),
        13 => r.bool().map(|v| s.unschedulable = v),
        14 => r.list(&mut s.taints, taint),
        _ => opt(r, label_selector).map(|v| s.selector = v.map(Box::new)),
    })?;
    if seen & 1 << 1 == 0 {
        s.containers.clear();
    }
    if seen & 1 << 2 == 0 {
        s.init_containers.clear();
    }
    Some(())
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
    const KEYS: &[&str] = &["nodeAffinity", "podAffinity", "podAntiAffinity"];
    r.fields(KEYS, |r, i| match i {
        0 => opt(r, node_affinity).map(|v| a.node_affinity = v),
        1 => opt(r, pod_affinity).map(|v| a.pod_affinity = v),
        _ => opt(r, pod_affinity).map(|v| a.pod_anti_affinity = v),
    })?;
    Some(a)
}

fn node_affinity(r: &mut Reader<'_>) -> R<RawNodeAffinity> {
    let mut n = RawNodeAffinity::default();
    r.fields(&[REQUIRED, PREFERRED], |r, i| match i {
        0 => opt(r, |r| {
            let mut s = RawNodeSelector::default();
            r.fields(&["nodeSelectorTerms"], |r, _| {
                r.array(|r| node_term(r).map(|t| s.node_selector_terms.push(t)))
            })?;
            Some(s)
        })
        .map(|v| n.required = v),
        _ => r.array(|r| {
            let (weight, preference) = weighted(r, "preference", node_term)?;
            n.preferred
                .push(RawPreferredSchedulingTerm { weight, preference });
            Some(())
        }),
    })?;
    Some(n)
}

/// A preferred term: its `weight`, and the term under `key` (either at its default when
/// missing).
fn weighted<'de, T: Default>(
    r: &mut Reader<'de>,
    key: &str,
    mut term: impl FnMut(&mut Reader<'de>) -> R<T>,
) -> R<(i32, T)> {
    let (mut weight, mut read) = (0, T::default());
    r.fields(&["weight", key], |r, i| match i {
        0 => r.i32().map(|v| weight = v),
        _ => term(r).map(|t| read = t),
    })?;
    Some((weight, read))
}

fn node_term(r: &mut Reader<'_>) -> R<RawNodeSelectorTerm> {
    let mut t = RawNodeSelectorTerm::default();
    r.fields(&["matchExpressions", "matchFields"], |r, i| {
        let list = match i {
            0 => &mut t.match_expressions,
            _ => &mut t.match_fields,
        };
        r.array(|r| {
            let mut q = RawNodeSelectorRequirement::default();
            r.fields(&["key", "operator", "values"], |r, i| match i {
                0 => r.str().map(|v| q.key = v.to_string()),
                1 => r.str().map(|v| q.operator = v.to_string()),
                _ => strings(r, &mut q.values),
            })?;
            list.push(q);
            Some(())
        })
    })?;
    Some(t)
}

fn pod_affinity(r: &mut Reader<'_>) -> R<RawPodAffinity> {
    let mut p = RawPodAffinity::default();
    r.fields(&[REQUIRED, PREFERRED], |r, i| match i {
        0 => r.array(|r| pod_affinity_term(r).map(|t| p.required.push(t))),
        _ => r.array(|r| {
            let (weight, pod_affinity_term) = weighted(r, "podAffinityTerm", pod_affinity_term)?;
            p.preferred.push(RawWeightedPodAffinityTerm {
                weight,
                pod_affinity_term,
            });
            Some(())
        }),
    })?;
    Some(p)
}

fn pod_affinity_term(r: &mut Reader<'_>) -> R<RawPodAffinityTerm> {
    let mut t = RawPodAffinityTerm::default();
    const KEYS: &[&str] = &[
        "labelSelector",
        "namespaces",
        "namespaceSelector",
        "topologyKey",
    ];
    r.fields(KEYS, |r, i| match i {
        0 => opt(r, label_selector).map(|v| t.label_selector = v),
        1 => strings(r, &mut t.namespaces),
        2 => opt(r, label_selector).map(|v| t.namespace_selector = v),
        _ => r.str().map(|v| t.topology_key = v.to_string()),
    })?;
    Some(t)
}

fn container<'de>(r: &mut Reader<'de>, c: &mut RawContainer<'de>) -> R {
    c.image = Str::default();
    c.resources.requests.0.clear();
    c.resources.limits.0.clear();
    c.ports.clear();
    c.restart_policy = None;
    const KEYS: &[&str] = &["image", "resources", "ports", "restartPolicy"];
    r.fields(KEYS, |r, i| match i {
        0 => r.string().map(|v| c.image = v),
        1 => {
            let q = &mut c.resources;
            r.fields(&["requests", "limits"], |r, i| match i {
                0 => r.pairs(&mut q.requests),
                _ => r.pairs(&mut q.limits),
            })
            .map(drop)
        }
        2 => r.list(&mut c.ports, port),
        _ => r.opt_string().map(|v| c.restart_policy = v),
    })
    .map(drop)
}

fn port<'de>(r: &mut Reader<'de>, p: &mut RawPort<'de>) -> R {
    *p = RawPort::default();
    r.fields(&["hostPort", "protocol"], |r, i| match i {
        0 => r.opt_i32().map(|v| p.host_port = v),
        _ => r.opt_string().map(|v| p.protocol = v),
    })
    .map(drop)
}

fn toleration<'de>(r: &mut Reader<'de>, t: &mut RawToleration<'de>) -> R {
    *t = RawToleration::default();
    r.fields(&["key", "operator", "value", "effect"], |r, i| match i {
        0 => r.string().map(|v| t.key = v),
        1 => r.opt_string().map(|v| t.operator = v),
        2 => r.string().map(|v| t.value = v),
        _ => r.opt_string().map(|v| t.effect = v),
    })
    .map(drop)
}

fn taint<'de>(r: &mut Reader<'de>, t: &mut RawTaint<'de>) -> R {
    *t = RawTaint::default();
    r.fields(&["key", "value", "effect"], |r, i| match i {
        0 => r.string().map(|v| t.key = v),
        1 => r.string().map(|v| t.value = v),
        _ => r.string().map(|v| t.effect = v),
    })
    .map(drop)
}

fn volume<'de>(r: &mut Reader<'de>, v: &mut RawVolume<'de>) -> R {
    *v = RawVolume::default();
    const KEYS: &[&str] = &["emptyDir", "hostPath", "persistentVolumeClaim"];
    r.fields(KEYS, |r, i| match i {
        0 => r.opt_skip().map(|x| v.empty_dir = x),
        1 => r.opt_skip().map(|x| v.host_path = x),
        _ => opt(r, |r| {
            let mut claim = RawPvcSource::default();
            r.fields(&["claimName"], |r, _| {
                r.string().map(|x| claim.claim_name = x)
            })?;
            Some(claim)
        })
        .map(|x| v.persistent_volume_claim = x),
    })
    .map(drop)
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
    const KEYS: &[&str] = &[
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    ];
    r.fields(KEYS, |r, i| match i {
        0 => r.i32().map(|v| c.max_skew = v),
        1 => r.string().map(|v| c.topology_key = v),
        2 => r.string().map(|v| c.when_unsatisfiable = v),
        3 => opt(r, label_selector).map(|v| c.label_selector = v),
        4 => r.opt_i32().map(|v| c.min_domains = v),
        5 => r.opt_string().map(|v| c.node_affinity_policy = v),
        6 => r.opt_string().map(|v| c.node_taints_policy = v),
        _ => r.array(|r| r.string().map(|key| c.match_label_keys.push(key))),
    })
    .map(drop)
}

/// `metav1.LabelSelector`, which refuses unknown fields.
fn label_selector(r: &mut Reader<'_>) -> R<LabelSelectorSpec> {
    let mut out = LabelSelectorSpec::default();
    let mut seen = 0;
    r.object(|r, key| match key {
        "matchLabels" => {
            once(&mut seen, 1)?;
            r.object(|r, key| {
                let value = r.str()?;
                out.match_labels.insert(key.to_string(), value.to_string());
                Some(())
            })
        }
        "matchExpressions" => {
            once(&mut seen, 2)?;
            r.array(|r| {
                let (mut key, mut operator, mut values) = (None, None, Vec::new());
                let mut seen = 0;
                r.object(|r, field| match field {
                    "key" => {
                        once(&mut seen, 1)?;
                        key = Some(r.str()?.to_string());
                        Some(())
                    }
                    "operator" => {
                        once(&mut seen, 2)?;
                        operator = Some(r.str()?.to_string());
                        Some(())
                    }
                    "values" => {
                        once(&mut seen, 4)?;
                        r.array(|r| r.str().map(|v| values.push(v.to_string())))
                    }
                    _ => None,
                })?;
                out.match_expressions.push(LabelSelectorRequirement {
                    key: key?,
                    operator: operator?,
                    values,
                });
                Some(())
            })
        }
        _ => None,
    })?;
    Some(out)
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
    s.disruptions_allowed = None;
}

fn status<'de>(r: &mut Reader<'de>, s: &mut RawStatus<'de>) -> R {
    clear_status(s);
    const KEYS: &[&str] = &[
        "phase",
        "startTime",
        "conditions",
        "reason",
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
        "capacity",
        "allocatable",
        "disruptionsAllowed",
    ];
    r.fields(KEYS, |r, i| match i {
        0 => r.string().map(|v| s.phase = v),
        1 => r.opt_string().map(|v| s.start_time = v),
        2 => r.list(&mut s.conditions, condition),
        3 => r.opt_string().map(|v| s.reason = v),
        4 => r.list(&mut s.container_statuses, container_status),
        5 => r.list(&mut s.init_container_statuses, container_status),
        6 => r.list(&mut s.ephemeral_container_statuses, container_status),
        7 => r.pairs(&mut s.capacity),
        8 => r.pairs(&mut s.allocatable),
        _ => r.opt_i32().map(|v| s.disruptions_allowed = v),
    })
    .map(drop)
}

fn condition<'de>(r: &mut Reader<'de>, c: &mut RawCondition<'de>) -> R {
    *c = RawCondition::default();
    const KEYS: &[&str] = &["type", "status", "reason", "lastTransitionTime"];
    r.fields(KEYS, |r, i| match i {
        0 => r.string().map(|v| c.type_ = v),
        1 => r.string().map(|v| c.status = v),
        2 => r.opt_string().map(|v| c.reason = v),
        _ => r.opt_string().map(|v| c.last_transition_time = v),
    })
    .map(drop)
}

fn container_status<'de>(r: &mut Reader<'de>, c: &mut RawContainerStatus<'de>) -> R {
    *c = RawContainerStatus::default();
    r.fields(&["restartCount", "state"], |r, i| match i {
        0 => r.i32().map(|v| c.restart_count = v),
        _ => {
            let s = &mut c.state;
            r.fields(&["running", "waiting", "terminated"], |r, i| match i {
                0 => r.opt_skip().map(|v| s.running = v),
                1 => opt(r, |r| {
                    let mut waiting = RawReason::default();
                    r.fields(&["reason"], |r, _| {
                        r.opt_string().map(|v| waiting.reason = v)
                    })?;
                    Some(waiting)
                })
                .map(|v| s.waiting = v),
                _ => opt(r, |r| {
                    let mut terminated = RawTerminated::default();
                    r.fields(&["reason", "exitCode"], |r, i| match i {
                        0 => r.opt_string().map(|v| terminated.reason = v),
                        _ => r.i32().map(|v| terminated.exit_code = v),
                    })?;
                    Some(terminated)
                })
                .map(|v| s.terminated = v),
            })
            .map(drop)
        }
    })
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::synthetic::{generate_json, Config, Rng};

    /// Objects with every field the wire shapes read, and the odd forms JSON allows.
    const OBJECTS: &[&str] = &[
        r#"{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","labels":{"zone":"a","kubernetes.io/hostname":"n1"},"annotations":null,"uid":"u-n1"},"spec":{"unschedulable":true,"podCIDR":"10.0.0.0/24","taints":[{"key":"gpu","value":"yes","effect":"NoSchedule","timeAdded":null},{"key":"k","effect":"NoExecute"}]},"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"},"allocatable":{"cpu":"7800m","memory":"30Gi","pods":"110","nvidia.com/gpu":"4"},"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastTransitionTime":"2026-01-01T00:00:00Z","lastHeartbeatTime":"2026-01-02T00:00:00Z"},{"type":"MemoryPressure","status":"False","reason":null}],"nodeInfo":{"kubeletVersion":"v1.33.2"},"images":[{"names":["a","b"],"sizeBytes":123}]}}"#,
        r#"{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"web","namespace":"shop","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"policy/v1\",\"x\":\"\\u00e9\\n\\t\\/\"}\n"}},"spec":{"minAvailable":"50%","selector":{"matchLabels":{"app":"web","tier":"front"},"matchExpressions":[{"key":"track","operator":"In","values":["stable","canary"]},{"key":"gone","operator":"DoesNotExist"}]}},"status":{"disruptionsAllowed":2,"currentHealthy":5,"observedGeneration":-3}}"#,
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"a"},"creationTimestamp":null},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}"#,
        r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000000,"globalDefault":false,"description":"ünïcödé €"}"#,
        r#"{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"g","namespace":"ml"},"spec":{"minMember":null,"scheduleTimeoutSeconds":10}}"#,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"ml","uid":"u1","generateName":"p-","labels":{"app":"w","app":"w2"},"annotations":{"descheduler.alpha.kubernetes.io/evict":"","descheduler.alpha.kubernetes.io/prefer-no-eviction":{"x":[1,2.5e-3,true,false,null]},"kubernetes.io/config.mirror":"m","kubernetes.io/config.source":"file","scheduling.k8s.io/group-name":"g","kubernetes.io/config.source":null},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"w-1","uid":"rs","controller":true,"blockOwnerDeletion":true},{"kind":"Job","name":"j","uid":"j1","controller":null}],"creationTimestamp":"2026-01-01T00:00:00Z","deletionTimestamp":"2026-01-03T00:00:00Z"},"spec":{"nodeName":"n1","overhead":{"cpu":"10m"},"initContainers":[{"name":"init","image":"busybox","resources":{"requests":{"cpu":"2"}}},{"name":"side","image":"envoy","restartPolicy":"Always","resources":{"limits":{"memory":"1Gi"},"claims":[{"name":"c"}]}}],"containers":[{"name":"a","image":"img:1","ports":[{"containerPort":80,"hostPort":8080,"protocol":"UDP"},{"containerPort":81,"hostPort":null,"protocol":null}],"resources":{"requests":{"cpu":"500m","memory":"1Gi","nvidia.com/gpu":"1"},"limits":{"cpu":"1","memory":"1Gi"}},"env":[{"name":"X","value":"a \"quoted\" value"}]},{"image":"img:2","resources":{}}],"priority":-5,"priorityClassName":"high","tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"},{"operator":"Equal","value":"v","effect":null,"tolerationSeconds":300}],"nodeSelector":{"disk":"ssd"},"affinity":null,"resources":null,"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"w"}},"minDomains":2,"nodeAffinityPolicy":"Ignore","nodeTaintsPolicy":"Honor","matchLabelKeys":["pod-template-hash"]},{"maxSkew":3,"topologyKey":"host","whenUnsatisfiable":"ScheduleAnyway","labelSelector":null,"minDomains":null}],"volumes":[{"name":"a","emptyDir":{}},{"name":"b","hostPath":{"path":"/x"}},{"name":"c","persistentVolumeClaim":{"claimName":"data","readOnly":true}},{"name":"d","emptyDir":null,"persistentVolumeClaim":null},{"name":"e","configMap":{"name":"c","defaultMode":420}}],"resourceClaims":[{"name":"gpu"},7],"schedulerName":"default-scheduler"},"status":{"phase":"Running","reason":"Evicted","startTime":"2026-01-01T00:00:05Z","conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady","lastTransitionTime":null}],"containerStatuses":[{"name":"a","restartCount":12,"state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off"}},"lastState":{"terminated":{"exitCode":1}}},{"restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:00:06Z"},"terminated":null,"waiting":null}}],"initContainerStatuses":[{"restartCount":1,"state":{"terminated":{"reason":"Completed","exitCode":0}}}],"ephemeralContainerStatuses":[{"restartCount":2,"state":{}}],"hostIPs":[{"ip":"10.0.0.1"}]}}"#,
        r#"{"kind":"Pod","metadata":{"name":"bare"}}"#,
        "{ \"kind\" : \"Pod\" ,\n\t\"metadata\" :\r\n { \"name\" : \"spaced\" , \"labels\" : { } , \"ownerReferences\" : [ ] } , \"spec\" : { \"containers\" : [ { \"image\" : \"i\" , \"ports\" : [ ] } ] , \"priority\" : 0 } , \"status\" : { } }",
        r#"{"kind":"Pod","metadata":{"name":"big","namespace":"n"},"spec":{"priority":2147483647,"containers":[]},"status":{"containerStatuses":[{"restartCount":-2147483648,"state":{"terminated":{"exitCode":-1,"reason":"Error"}}}]}}"#,
        r#"{"kind":"Pod","metadata":{"name":"aff","namespace":"n"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]},{}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"matchExpressions":[{"key":"disk","operator":"Exists"}]}}]},"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"db"}},"namespaces":["a","b"],"topologyKey":"zone"}]},"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":null,"namespaceSelector":{"matchExpressions":[{"key":"team","operator":"NotIn","values":["x"]}]},"topologyKey":"kubernetes.io/hostname","matchLabelKeys":["h"]}}]}}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"aff2"},"spec":{"affinity":{"nodeAffinity":null,"podAffinity":{},"podAntiAffinity":null}}}"#,
        // The last RARE: read by serde (the reader here gives up on them).
        r#"{"kind":"Pod","metadata":{"name":"esc\u0061ped","namespace":"n"}}"#,
        r#"{"kind":"Pod","metadata":{"name":"res"},"spec":{"resources":{"requests":{"cpu":"1"}}}}"#,
        r#"{"kind":"PodGroup","apiVersion":"scheduling.volcano.sh/v1beta1","metadata":{"name":"g"},"spec":{"minMember":3}}"#,
        r#"{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"inner"}}]}"#,
    ];

    const RARE: usize = 4;

    /// What serde reads from the start of `text`, and where it stops.
    fn serde_read(text: &str) -> Option<(String, usize)> {
        let mut it = serde_json::Deserializer::from_str(text).into_iter::<RawObject<'_>>();
        let obj = it.next()?.ok()?;
        Some((format!("{obj:?}"), it.byte_offset()))
    }

    /// Reads every text into one object, as a window's items are read, and checks each read
    /// against serde's: the same object, and the same end. Returns how many were read here.
    fn agree(texts: &[String]) -> usize {
        let mut place = RawObject::default();
        let mut read = 0;
        for text in texts {
            let mut r = Reader::new(text, 0);
            if object(&mut r, &mut place).is_none() {
                continue;
            }
            read += 1;
            let Some((expected, end)) = serde_read(text) else {
                panic!("read by hand, refused by serde: {text}");
            };
            assert_eq!(format!("{place:?}"), expected, "{text}");
            assert_eq!(r.pos(), end, "{text}");
        }
        read
    }

    fn synthetic_items() -> Vec<String> {
        let json = generate_json(&Config::new(20, 600, 3));
        let list: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let items = list["items"].as_array().unwrap();
        let mut texts: Vec<String> = items.iter().map(|v| v.to_string()).collect();
        texts.extend(
            items
                .iter()
                .step_by(7)
                .map(|v| serde_json::to_string_pretty(v).unwrap()),
        );
        texts
    }

    #[test]
    fn objects_read_by_hand_are_what_serde_reads() {
        let mut texts: Vec<String> = OBJECTS.iter().map(|s| s.to_string()).collect();
        // Each after every other, so that what one leaves in the reused object must not
        // show in the next.
        let n = texts.len();
        for i in 0..n {
            for j in 0..n {
                texts.push(texts[i].clone());
                texts.push(texts[j].clone());
            }
        }
        let read = agree(&texts);
        assert_eq!(
            read,
            texts.len() - RARE * (1 + 2 * n),
            "all but the rare forms"
        );
        let synthetic = synthetic_items();
        assert_eq!(agree(&synthetic), synthetic.len(), "every generated object");
    }

    /// Every key of the objects in `text`, at any depth.
    fn keys(text: &str) -> std::collections::BTreeSet<String> {
        fn walk(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
            match v {
                serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| {
                    out.insert(k.clone());
                    walk(v, out);
                }),
                serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut out = Default::default();
        walk(&serde_json::from_str(text).unwrap(), &mut out);
        out
    }

    /// `text` with the first member named `key` given twice.
    fn repeated(text: &str, key: &str) -> Option<String> {
        let at = text.find(&format!("\"{key}\":"))?;
        let value_at = at + key.len() + 3;
        let mut it =
            serde_json::Deserializer::from_str(&text[value_at..]).into_iter::<IgnoredAny>();
        it.next()?.ok()?;
        let member = &text[at..value_at + it.byte_offset()];
        Some(format!("{}{member},{}", &text[..at], &text[at..]))
    }

    #[test]
    fn mutated_objects_are_read_as_serde_reads_them_or_left_to_serde() {
        const BYTES: &[u8] = b"\"\\,:{}[]n0-.e+ \n\tx1\x01";
        let mut seeds: Vec<String> = OBJECTS.iter().map(|s| s.to_string()).collect();
        seeds.extend(synthetic_items().into_iter().step_by(13));
        let mut rng = Rng::new(11);
        let mut texts = Vec::new();
        for seed in &seeds {
            for _ in 0..40 {
                let mut b = seed.clone().into_bytes();
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(b.len());
                    match rng.below(4) {
                        0 => {
                            b.remove(at);
                        }
                        1 => b.insert(at, *rng.pick(BYTES)),
                        2 => b[at] = *rng.pick(BYTES),
                        _ => b.truncate(at),
                    }
                    if b.is_empty() {
                        break;
                    }
                }
                if let Ok(text) = String::from_utf8(b) {
                    texts.push(text);
                }
            }
            // Each member given twice, a string turned null, a number turned float.
            for key in keys(seed) {
                texts.extend(repeated(seed, &key));
            }
            texts.push(seed.replacen("\"image\":\"", "\"image\":null,\"x\":\"", 1));
            texts.push(seed.replacen("\"priority\":", "\"priority\":1.5,\"y\":", 1));
        }
        let read = agree(&texts);
        // Most mutations make invalid JSON or a value serde refuses; many land in skipped
        // or tolerant parts, and those are read here.
        assert!(read > texts.len() / 10, "{read} of {}", texts.len());
        assert!(read < texts.len(), "{read} of {}", texts.len());
    }
}
