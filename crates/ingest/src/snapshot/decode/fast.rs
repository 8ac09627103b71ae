//! The items of a large JSON List read by hand into the wire shapes ([`RawObject`] and below),
//! as serde's derived decoders read them, into one object reused item after item (its lists
//! keep their memory), without serde's visitors, moves and allocations.
//!
//! It reads the JSON kubectl prints and nothing unusual. On any doubt it gives up on the
//! object (None), and the caller decodes that object with serde, which gives the same result
//! or the precise error: an escape in a string it keeps (skipped ones may hold escapes), a
//! `null` where the wire shape has no Option, a number that is not an integer of the field's
//! type, a key seen twice, the rare parts (pod-level resources, a PodGroup's minMember,
//! schedulingPolicy and disruptionMode, a nested list), text that ends inside the object,
//! anything invalid. A test holds it to serde's result on every object it reads, mutated
//! ones included.
//!
//! The table of each wire struct is made from the struct's declaration (`wire_shapes`): a
//! row for each field, its key and the codec of `codec` its declaration names.

use super::wire::{
    wire_shapes, AnnotationKey, Annotations, Pairs, RawAffinity, RawCondition, RawContainer,
    RawContainerState, RawContainerStatus, RawImage, RawInt, RawMeta, RawNodeAffinity,
    RawNodeSelector, RawNodeSelectorRequirement, RawNodeSelectorTerm, RawObject, RawOwner,
    RawPodAffinity, RawPodAffinityTerm, RawPort, RawPreferredSchedulingTerm, RawPvcSource,
    RawReason, RawResources, RawScaleTargetRef, RawSchedulingGroup, RawSpec, RawStatus, RawTaint,
    RawTerminated, RawTime, RawToleration, RawTopologySpreadConstraint, RawVolume,
    RawWeightedPodAffinityTerm, Str,
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
    RawObject::read(r, o)
}

/// A wire struct read by its table of fields, made from its declaration (`wire_shapes`).
pub(super) trait FastRead<'de> {
    /// Reads an object into `o`, all of it: a field the text lacks is reset (see [`Reset`]),
    /// so `o` may be one read before.
    fn read(r: &mut Reader<'de>, o: &mut Self) -> R;
}

/// A field's value when the text lacks it: its default, but lists keep their memory.
pub(super) trait Reset {
    fn reset(&mut self);
}

impl<T> Reset for Vec<T> {
    fn reset(&mut self) {
        self.clear();
    }
}

impl Reset for Pairs<'_> {
    fn reset(&mut self) {
        self.0.clear();
    }
}

impl<T> Reset for Option<T> {
    fn reset(&mut self) {
        *self = None;
    }
}

/// Reset to the default.
macro_rules! reset_to_default {
    ($($ty:ty),+) => {$(
        impl Reset for $ty {
            fn reset(&mut self) {
                *self = Default::default();
            }
        }
    )+};
}

reset_to_default!(Str<'_>, String, Annotations<'_>, bool, i32);

/// The reader of each struct of [`wire_shapes`]: a [`fields!`] table of its keys, each read
/// by the codec its declaration names, and reset when the object lacks it.
macro_rules! fast {
    ($([$($attr:tt)*] $name:ident [$($lt:lifetime)?] {
        $([$($fattr:tt)*] $field:ident [$ty:ty] $key:literal $proto:tt $codec:ident)*
    })*) => {$(
        impl<'de $(, $lt)?> FastRead<'de> for $name<$($lt)?> $(where 'de: $lt, $lt: 'de)? {
            fn read(r: &mut Reader<'de>, o: &mut Self) -> R {
                fields!(r, $name, {
                    $( $key => codec::$codec(r, &mut o.$field); else o.$field.reset() ),*
                })
            }
        }

        impl $(<$lt>)? Reset for $name<$($lt)?> {
            fn reset(&mut self) {
                $( self.$field.reset(); )*
            }
        }
    )*};
}

wire_shapes!(fast);

/// How each kind of declared field is read, by the name the declarations give it: what
/// the text holds overwrites the field (a list is read over the old one's elements, which
/// keep their memory).
mod codec {
    use super::*;

    pub(super) fn text<'de>(r: &mut Reader<'de>, o: &mut Str<'de>) -> R {
        *o = r.string()?;
        Some(())
    }

    /// A string that may be unset (`null`).
    pub(super) fn pointer<'de>(r: &mut Reader<'de>, o: &mut Option<Str<'de>>) -> R {
        *o = r.opt_string()?;
        Some(())
    }

    /// A string the API leaves out when empty (read as a `pointer` is).
    pub(super) fn omitted<'de>(r: &mut Reader<'de>, o: &mut Option<Str<'de>>) -> R {
        pointer(r, o)
    }

    /// An owned string.
    pub(super) fn string(r: &mut Reader<'_>, o: &mut String) -> R {
        *o = r.str()?.to_string();
        Some(())
    }

    pub(super) fn texts<'de>(r: &mut Reader<'de>, o: &mut Vec<Str<'de>>) -> R {
        o.clear();
        r.array(|r| r.string().map(|s| o.push(s)))
    }

    /// A list of strings (owned, as serde makes them for these shapes).
    pub(super) fn strings(r: &mut Reader<'_>, o: &mut Vec<String>) -> R {
        o.clear();
        r.array(|r| r.str().map(|v| o.push(v.to_string())))
    }

    pub(super) fn int32(r: &mut Reader<'_>, o: &mut i32) -> R {
        *o = r.i32()?;
        Some(())
    }

    pub(super) fn opt_int32(r: &mut Reader<'_>, o: &mut Option<i32>) -> R {
        *o = r.opt_i32()?;
        Some(())
    }

    /// A port, which the protobuf encoding writes even when 0.
    pub(super) fn host_port(r: &mut Reader<'_>, o: &mut Option<i32>) -> R {
        opt_int32(r, o)
    }

    pub(super) fn opt_int64(r: &mut Reader<'_>, o: &mut Option<i64>) -> R {
        *o = r.opt_int()?;
        Some(())
    }

    /// An integer the conversion checks (a Deployment's replicas): read when the text holds
    /// one; anything else is serde's, which keeps what it found for the error.
    pub(super) fn integer(r: &mut Reader<'_>, o: &mut Option<RawInt>) -> R {
        *o = r.opt_int()?.map(RawInt::Int);
        Some(())
    }

    pub(super) fn boolean(r: &mut Reader<'_>, o: &mut bool) -> R {
        *o = r.bool()?;
        Some(())
    }

    pub(super) fn opt_bool(r: &mut Reader<'_>, o: &mut Option<bool>) -> R {
        *o = r.opt_bool()?;
        Some(())
    }

    /// A map of strings.
    pub(super) fn labels<'de>(r: &mut Reader<'de>, o: &mut Pairs<'de>) -> R {
        r.pairs(o)
    }

    /// A resource list (quantities, as strings).
    pub(super) fn amounts<'de>(r: &mut Reader<'de>, o: &mut Pairs<'de>) -> R {
        r.pairs(o)
    }

    pub(super) fn time<'de>(r: &mut Reader<'de>, o: &mut Option<RawTime<'de>>) -> R {
        *o = r.opt_string()?.map(RawTime::Text);
        Some(())
    }

    /// A value whose presence is what counts.
    pub(super) fn present(r: &mut Reader<'_>, o: &mut Option<IgnoredAny>) -> R {
        *o = r.opt_skip()?;
        Some(())
    }

    /// A list whose length is what counts.
    pub(super) fn claims(r: &mut Reader<'_>, o: &mut Vec<IgnoredAny>) -> R {
        o.clear();
        r.array(|r| r.skip().map(|_| o.push(IgnoredAny)))
    }

    pub(super) fn annotations<'de>(r: &mut Reader<'de>, o: &mut Annotations<'de>) -> R {
        super::annotations(r, o)
    }

    /// A wire struct, read in place.
    pub(super) fn nested<'de, T: FastRead<'de>>(r: &mut Reader<'de>, o: &mut T) -> R {
        T::read(r, o)
    }

    /// A wire struct that may be `null`.
    pub(super) fn message<'de, T: FastRead<'de> + Default>(
        r: &mut Reader<'de>,
        o: &mut Option<T>,
    ) -> R {
        *o = opt(r, |r| {
            let mut t = T::default();
            T::read(r, &mut t)?;
            Some(t)
        })?;
        Some(())
    }

    /// A wire struct that may be `null`, boxed (rare and large).
    pub(super) fn boxed<'de, T: FastRead<'de> + Default>(
        r: &mut Reader<'de>,
        o: &mut Option<Box<T>>,
    ) -> R {
        let mut t = None;
        message(r, &mut t)?;
        *o = t.map(Box::new);
        Some(())
    }

    /// A list of wire structs.
    pub(super) fn list<'de, T: FastRead<'de> + Default>(r: &mut Reader<'de>, o: &mut Vec<T>) -> R {
        r.list(o, T::read)
    }

    /// A pod's volumes.
    pub(super) fn volumes<'de>(r: &mut Reader<'de>, o: &mut Vec<RawVolume<'de>>) -> R {
        list(r, o)
    }

    pub(super) fn selector(r: &mut Reader<'_>, o: &mut Option<LabelSelectorSpec>) -> R {
        *o = opt(r, label_selector)?;
        Some(())
    }

    pub(super) fn boxed_selector(r: &mut Reader<'_>, o: &mut Option<Box<LabelSelectorSpec>>) -> R {
        *o = opt(r, label_selector)?.map(Box::new);
        Some(())
    }

    /// A rare part (pod-level resources, a PodGroup's minMember, schedulingPolicy and
    /// disruptionMode): serde's, unless `null`.
    pub(super) fn rare<T>(r: &mut Reader<'_>, o: &mut Option<T>) -> R {
        r.null()?.then_some(())?;
        *o = None;
        Some(())
    }

    /// What only serde reads (a nested list).
    pub(super) fn serde<T>(_: &mut Reader<'_>, _: &mut T) -> R {
        None
    }
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
            AnnotationKey::RequestEvictOnly => {
                r.skip()?;
                a.request_evict_only = true;
            }
            AnnotationKey::EvictionInProgress => {
                r.skip()?;
                a.eviction_in_progress = true;
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
            AnnotationKey::KarpenterDoNotDisrupt => {
                a.karpenter_do_not_disrupt = r.opt_string()?.is_some_and(|v| &*v == "true");
            }
            AnnotationKey::SafeToEvict => {
                a.not_safe_to_evict = r.opt_string()?.is_some_and(|v| &*v == "false");
            }
            AnnotationKey::DoNotEvictUntil => a.do_not_evict_until = r.opt_string()?,
            AnnotationKey::SurgeInFlight => a.surge_in_flight = r.opt_string()?,
            AnnotationKey::Other => r.skip()?,
        }
        Some(())
    })
}

/// `null` as None, another value as `read` reads it.
fn opt<'de, T>(r: &mut Reader<'de>, read: impl FnOnce(&mut Reader<'de>) -> R<T>) -> R<Option<T>> {
    if r.null()? {
        return Some(None);
    }
    read(r).map(Some)
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
        "values" => codec::strings(r, &mut values),
    })?;
    Some(LabelSelectorRequirement {
        key: key?,
        operator: operator?,
        values,
    })
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
