//! Reading a snapshot file: what `kubectl get nodes,pods,poddisruptionbudgets,namespaces,
//! priorityclasses -A -o yaml` (or `-o json`) prints, or a multi-document YAML stream.
//! Gang schedulers' PodGroups are read too: add `podgroups.scheduling.x-k8s.io` and/or
//! `podgroups.scheduling.volcano.sh` to the kubectl command where those CRDs are installed,
//! and `podgroups.scheduling.k8s.io` for Kubernetes' own (1.37, `v1beta1` or `v1alpha3`; 1.36,
//! `v1alpha2`).
//! A pod naming a PodGroup the file lacks is treated as a gang of unknown minMember (every
//! member protected).
//!
//! Only the fields the descheduler needs are decoded (serde skips the rest without building
//! it), straight into the compact model. Errors name the file, the object and the field.
//!
//! Decoding is built for large clusters (150,000 pods in one JSON list):
//! - a JSON list is decoded item by item, each item converted into the model as soon as it is
//!   read, so the wire form of only one object is alive at a time;
//! - strings and maps borrow from the input where they can (`Str`, `Pairs`), so reading an
//!   object allocates little beyond what the model keeps;
//! - the items of a large JSON list are read by a small hand-written reader (`fast`) into
//!   one wire object reused item after item, and by serde whenever that reader has any doubt;
//! - a pod shares the parts it has the same of as the pod before it or the first pod of its
//!   shape (labels, owners, images, node selector, template), instead of keeping a copy;
//! - error paths (field names, object labels) are only formatted when there is an error;
//! - `load_file` drops the file's bytes before indexing the snapshot.

use super::shapes::Shapes;
use super::{
    shared, Affinity, ClusterSnapshot, ConditionStatus, ContainerState, ContainerStatus,
    DisruptionMode, GangKind, HostPort, InclusionPolicy, Namespace, Node, NodeSelectorTerm,
    OwnerRef, Pdb, Phase, Pod, PodAffinityTerm, PodCondition, PodGroup, PodStatusDetail,
    PreferredSchedulingTerm, PriorityClass, Qos, Resources, SnapshotParts, Taint, TaintEffect,
    Toleration, TopologySpreadConstraint, WeightedPodAffinityTerm, WhenUnsatisfiable,
    CONFIG_SOURCE_ANNOTATION, EVICT_ANNOTATION, INITIAL_EVENTS_END_ANNOTATION, MIRROR_ANNOTATION,
    PREFER_NO_EVICTION_ANNOTATION, VOLCANO_GROUP_ANNOTATION,
};
use crate::labels::{LabelSelectorSpec, Labels, Requirement, Selector};
use crate::quantity::{Quantity, QuantityError};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;
use stream::ObjectType;

mod fast;
pub mod proto;
pub mod stream;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {file}: cannot read the file: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("snapshot {file}: {message}. A snapshot is what `kubectl get nodes,pods,poddisruptionbudgets,namespaces,priorityclasses -A -o json` (or -o yaml) prints, whole, or a multi-document YAML stream of such objects")]
    Syntax { file: String, message: String },
    #[error("snapshot {file}: {object}: field {field}: {message}")]
    Field {
        file: String,
        object: String,
        field: String,
        message: String,
    },
    #[error("{what}: the API server's answer could not be read ({message}); if it persists, report it with the API server's version")]
    Response { what: String, message: String },
    #[error("{what}: {source}")]
    Totals {
        what: String,
        #[source]
        source: super::TotalTooLarge,
    },
    #[error("snapshot {file}: holds no Node objects, so there is nothing to plan. Include nodes: `kubectl get nodes,pods,poddisruptionbudgets,namespaces,priorityclasses -A -o yaml`")]
    NoNodes { file: String },
}

impl SnapshotError {
    fn field(
        file: &str,
        object: impl fmt::Display,
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

/// Reads a snapshot file and builds the indexed snapshot. The path is opened once, so a
/// pipe (`/dev/stdin`, `<(kubectl get ...)`, a FIFO) reads as a file of the same bytes.
pub fn load_file(path: &Path) -> Result<ClusterSnapshot, SnapshotError> {
    let file = path.display().to_string();
    let read_error = |source| SnapshotError::Read {
        file: file.clone(),
        source,
    };
    let input = crate::input::Input::open(path).map_err(read_error)?;
    // A snapshot kept compressed (the decision log's), or any list gzip'ed, is read whole.
    #[cfg(unix)]
    let plain_file = (!input.is_gzip()).then(|| input.regular_file()).flatten();
    #[cfg(unix)]
    if let Some((f, len)) = plain_file {
        // A large JSON List is decoded as it is read, on two threads.
        let within = len <= crate::input::SNAPSHOT_LIMIT;
        if let (true, Ok(size)) = (within, usize::try_from(len)) {
            // The same open file, read at offsets: what the reading so far took is not lost.
            let source = parallel::FileSource {
                file: f.try_clone().map_err(read_error)?,
                size,
            };
            let (mut parts, mut more) = (SnapshotParts::default(), Vec::new());
            if let Some(result) = parallel::decode_list(&file, &source, &mut parts, &mut more) {
                result?;
                // Unless the file changed while it was read: then it is read again, whole.
                if source.file.metadata().map_err(read_error)?.len() == len {
                    return Ok(ClusterSnapshot::build_with(
                        checked(&file, parts, &more)?,
                        more,
                    ));
                }
            }
        }
    }
    let bytes = input
        .read_text(crate::input::SNAPSHOT_LIMIT)
        .map_err(read_error)?;
    let (parts, more) = decode_parts(&file, &bytes)?;
    // The model holds no reference to the bytes: free them before indexing.
    drop(bytes);
    Ok(ClusterSnapshot::build_with(parts, more))
}

/// Decodes snapshot bytes (JSON or YAML); `file` is used in error messages.
pub fn load_bytes(file: &str, bytes: &[u8]) -> Result<ClusterSnapshot, SnapshotError> {
    let (parts, more) = decode_parts(file, bytes)?;
    Ok(ClusterSnapshot::build_with(parts, more))
}

/// The objects, and pods that follow `parts.pods` (see [`parallel::decode_list`]).
fn decode_parts(file: &str, bytes: &[u8]) -> Result<(SnapshotParts, Vec<Pod>), SnapshotError> {
    // A byte-order mark (some editors write one) is not part of the text.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    let syntax = |message: String| SnapshotError::Syntax {
        file: file.to_string(),
        message,
    };
    let (mut parts, mut more) = (SnapshotParts::default(), Vec::new());
    match first {
        None => return Err(syntax("the file is empty".into())),
        Some(b'{') | Some(b'[') => {
            decode_json(file, bytes, first == Some(b'['), &mut parts, &mut more)?
        }
        Some(_) => {
            let text =
                std::str::from_utf8(bytes).map_err(|e| syntax(format!("not UTF-8 text: {e}")))?;
            let docs: Vec<Option<RawObject>> =
                serde_saphyr::from_multiple_with_options(text, crate::yaml::options_for(text))
                    .map_err(|e| syntax(format!("not valid YAML: {}", yaml_error(text, &e))))?;
            let mut shapes = Shapes::default();
            for (index, mut obj) in docs.into_iter().flatten().enumerate() {
                add_object(file, index, &mut obj, &mut parts, &mut shapes, false)?;
            }
        }
    }
    let parts = checked(file, parts, &more)?;
    Ok((parts, more))
}

/// The parts, unless they hold no node (then there is nothing to plan) or amounts whose
/// totals the planner cannot count; `more` are pods beside `parts.pods`.
fn checked(file: &str, parts: SnapshotParts, more: &[Pod]) -> Result<SnapshotParts, SnapshotError> {
    if parts.nodes.is_empty() {
        return Err(SnapshotError::NoNodes {
            file: file.to_string(),
        });
    }
    parts
        .check_totals(more)
        .map_err(|e| SnapshotError::Totals {
            what: format!("snapshot {file}"),
            source: e,
        })?;
    Ok(parts)
}

/// Decodes a JSON object (a List or one object) or array, converting each item as it is read.
fn decode_json(
    file: &str,
    bytes: &[u8],
    array: bool,
    parts: &mut SnapshotParts,
    more: &mut Vec<Pod>,
) -> Result<(), SnapshotError> {
    if !array {
        if let Some(result) = parallel::decode_list(file, bytes, parts, more) {
            return result;
        }
    }
    let mut sink = Sink {
        file,
        parts,
        shapes: Shapes::default(),
        error: None,
        defaults: None,
    };
    let result = match std::str::from_utf8(bytes) {
        Ok(text) => stream_json(&mut sink, serde_json::Deserializer::from_str(text), array),
        Err(_) => stream_json(
            &mut sink,
            serde_json::Deserializer::from_slice(bytes),
            array,
        ),
    };
    match result {
        Ok(()) => Ok(()),
        Err(e) => Err(sink.error.take().unwrap_or_else(|| {
            let with_path = if array {
                json_error_with_path::<Vec<RawObject>>(bytes)
            } else {
                json_error_with_path::<RawObject>(bytes)
            };
            SnapshotError::Syntax {
                file: file.to_string(),
                message: format!(
                    "not valid JSON: {}",
                    with_path.unwrap_or_else(|| e.to_string())
                ),
            }
        })),
    }
}

fn stream_json<'de, R: serde_json::de::Read<'de>>(
    sink: &mut Sink<'_>,
    mut de: serde_json::Deserializer<R>,
    array: bool,
) -> Result<(), serde_json::Error> {
    if array {
        Items(sink).deserialize(&mut de)?;
    } else {
        TopLevel(sink).deserialize(&mut de)?;
    }
    de.end()
}

/// The large case, a JSON List of many objects, decoded on two threads: the `items` array is
/// cut in two at an item boundary and each half is decoded on its own, then the halves are
/// joined in order. Each thread reads its half piece by piece into a small buffer it reuses,
/// so a large file is never held whole (the kernel would have to hand out and zero a fresh
/// page for every 4 kB of it). Any doubt (no `items` array at the top level, no boundary
/// found, a cut that turns out not to be between two items, any error) falls back to the
/// sequential decoder, which also gives the precise error.
mod parallel {
    use super::{fast, Pod, RawObject, Shapes, Sink, SnapshotError, SnapshotParts};
    use serde::de::IgnoredAny;
    use std::ops::Range;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    /// Below this size one thread is as fast.
    pub(super) const MIN_BYTES: usize = 4 << 20;

    /// Fewer bytes than any pod takes in a List (`kubectl get -o json` prints 3 to 10 kB
    /// per pod; a bare pod with one container, requests and a status takes about 600).
    const BYTES_PER_POD: usize = 400;

    /// The piece each thread reads at a time (grown when one object is larger).
    const PIECE: usize = 1 << 20;

    /// Where the bytes come from: a file, read where asked, or bytes in memory.
    pub(super) trait Source: Sync {
        fn size(&self) -> usize;
        /// Fills as much of `buf` as the source has from `offset` on; returns how much.
        fn read_at(&self, offset: usize, buf: &mut [u8]) -> std::io::Result<usize>;
    }

    impl Source for [u8] {
        fn size(&self) -> usize {
            self.len()
        }
        fn read_at(&self, offset: usize, buf: &mut [u8]) -> std::io::Result<usize> {
            let from = self.get(offset..).unwrap_or_default();
            let n = from.len().min(buf.len());
            buf[..n].copy_from_slice(&from[..n]);
            Ok(n)
        }
    }

    /// A file of a known size (taken when it was opened).
    #[cfg(unix)]
    pub(super) struct FileSource {
        pub(super) file: std::fs::File,
        pub(super) size: usize,
    }

    #[cfg(unix)]
    impl Source for FileSource {
        fn size(&self) -> usize {
            self.size
        }
        fn read_at(&self, offset: usize, buf: &mut [u8]) -> std::io::Result<usize> {
            use std::os::unix::fs::FileExt;
            let want = buf.len().min(self.size.saturating_sub(offset));
            let mut done = 0;
            while done < want {
                match self
                    .file
                    .read_at(&mut buf[done..want], (offset + done) as u64)
                {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(done)
        }
    }

    /// A window on the source, refilled as the decoder moves on.
    struct Window<'s, S: Source + ?Sized> {
        source: &'s S,
        buf: Vec<u8>,
        /// The source offset of `buf[0]`.
        base: usize,
        /// Bytes of `buf` read.
        filled: usize,
    }

    impl<'s, S: Source + ?Sized> Window<'s, S> {
        /// A window from `offset`, `size` bytes at a time; None on a read error or text
        /// that is not UTF-8.
        fn open(source: &'s S, offset: usize, size: usize) -> Option<Self> {
            let mut w = Window {
                source,
                buf: vec![0; size],
                base: offset,
                filled: 0,
            };
            w.read()?;
            Some(w)
        }

        fn read(&mut self) -> Option<usize> {
            let n = self
                .source
                .read_at(self.base + self.filled, &mut self.buf[self.filled..])
                .ok()?;
            self.filled += n;
            Some(n)
        }

        /// The text read, but for a character cut by the end of the last read (it waits for
        /// the next one); None when the bytes are not UTF-8.
        fn text(&self) -> Option<&str> {
            match std::str::from_utf8(&self.buf[..self.filled]) {
                Ok(text) => Some(text),
                Err(e) if e.error_len().is_none() => {
                    std::str::from_utf8(&self.buf[..e.valid_up_to()]).ok()
                }
                Err(_) => None,
            }
        }

        /// Drops what comes before `keep` and reads on; None at the end of the source or
        /// on an error.
        fn advance(&mut self, keep: usize) -> Option<()> {
            self.buf.copy_within(keep..self.filled, 0);
            self.base += keep;
            self.filled -= keep;
            if self.filled == self.buf.len() {
                // One object larger than the window: make room for it.
                self.buf.resize(2 * self.buf.len(), 0);
            }
            (self.read()? > 0).then_some(())
        }
    }

    pub(super) fn skip_ws(b: &[u8], mut pos: usize) -> usize {
        while pos < b.len() && b[pos].is_ascii_whitespace() {
            pos += 1;
        }
        pos
    }

    /// Parses one JSON value of type T at `pos`; returns it and the position after it.
    fn value_at<'de, T: serde::Deserialize<'de>>(text: &'de str, pos: usize) -> Option<(T, usize)> {
        match step(text, pos) {
            Step::Done(v, end) => Some((v, end)),
            _ => None,
        }
    }

    pub(super) enum Step<T> {
        Done(T, usize),
        /// The text ends inside the value.
        Short,
        Invalid,
    }

    impl<T> Step<T> {
        pub(super) fn map<U>(self, f: impl FnOnce(T) -> U) -> Step<U> {
            match self {
                Step::Done(v, at) => Step::Done(f(v), at),
                Step::Short => Step::Short,
                Step::Invalid => Step::Invalid,
            }
        }
    }

    pub(super) fn step<'de, T: serde::Deserialize<'de>>(text: &'de str, pos: usize) -> Step<T> {
        let mut it = serde_json::Deserializer::from_str(&text[pos..]).into_iter::<T>();
        match it.next() {
            Some(Ok(v)) => Step::Done(v, pos + it.byte_offset()),
            Some(Err(e)) if e.is_eof() => Step::Short,
            None => Step::Short,
            Some(Err(_)) => Step::Invalid,
        }
    }

    /// The position just after the `[` of the top-level object's `items` array, and the
    /// object's `kind` when it comes before.
    fn items_start(text: &str) -> Option<(usize, Option<String>)> {
        let b = text.as_bytes();
        let mut pos = skip_ws(b, 0);
        if b.get(pos) != Some(&b'{') {
            return None;
        }
        pos += 1;
        let mut kind = None;
        loop {
            pos = skip_ws(b, pos);
            let (key, after): (String, usize) = value_at(text, pos)?;
            pos = skip_ws(b, after);
            if b.get(pos) != Some(&b':') {
                return None;
            }
            pos = skip_ws(b, pos + 1);
            if key == "items" {
                return (b.get(pos) == Some(&b'[')).then_some((pos + 1, kind));
            }
            pos = envelope_key(text, pos, &key, &mut kind)?;
            match b.get(pos) {
                Some(b',') => pos += 1,
                _ => return None,
            }
        }
    }

    /// Skips the value at `pos` of the top-level object's `key` (keeping it in `kind` when
    /// it is the kind); returns the position after it. None for a second `kind` or `items`
    /// (serde refuses those, with the precise error).
    fn envelope_key(text: &str, pos: usize, key: &str, kind: &mut Option<String>) -> Option<usize> {
        let b = text.as_bytes();
        let after = match key {
            "items" => return None,
            "kind" if kind.is_some() => return None,
            "kind" => {
                let (k, after): (String, usize) = value_at(text, pos)?;
                *kind = Some(k);
                after
            }
            _ => value_at::<IgnoredAny>(text, pos)?.1,
        };
        Some(skip_ws(b, after))
    }

    /// A comma at or after `from` between `}` and `{` (ignoring whitespace): a candidate cut.
    fn candidate_cut(b: &[u8], from: usize) -> Option<usize> {
        let mut i = from;
        while i < b.len() {
            if b[i] == b',' {
                let mut p = i;
                while p > 0 && b[p - 1].is_ascii_whitespace() {
                    p -= 1;
                }
                let n = skip_ws(b, i + 1);
                if p > 0 && b[p - 1] == b'}' && b.get(n) == Some(&b'{') {
                    return Some(i);
                }
            }
            i += 1;
        }
        None
    }

    /// A cut at or after `from` that looks like a boundary between two items of the list:
    /// a candidate comma followed by a whole object with a kind and a name, itself followed
    /// by `,` or `]`. (Arrays of objects inside an item, such as conditions or containers,
    /// have neither; the first half's decoder confirms the cut in the end.)
    fn item_cut(text: &str, from: usize) -> Option<usize> {
        let b = text.as_bytes();
        let mut at = from;
        for _ in 0..256 {
            let cut = candidate_cut(b, at)?;
            let next = skip_ws(b, cut + 1);
            if let Some((obj, after)) = value_at::<RawObject<'_>>(text, next) {
                let end = skip_ws(b, after);
                if !obj.kind.is_empty()
                    && !obj.metadata.name.is_empty()
                    && matches!(b.get(end), Some(b',') | Some(b']'))
                {
                    return Some(cut);
                }
            }
            at = cut + 1;
        }
        None
    }

    /// Decodes items from source offset `from` (just after `[` or a separating comma).
    /// With `stop`, ends exactly at that separating comma (None if an item runs past it);
    /// without, at `]`. Returns the source offset after the last item's separator or the
    /// closing bracket.
    fn items<S: Source + ?Sized>(
        source: &S,
        from: usize,
        stop: Option<usize>,
        piece: usize,
        sink: &mut Sink<'_>,
    ) -> Option<usize> {
        let mut w = Window::open(source, from, piece)?;
        let mut pos = 0;
        let mut index = 0;
        let mut want_item = true;
        loop {
            // Whatever this window holds, then read on from `keep`.
            let keep = {
                let text = w.text()?;
                let b = text.as_bytes();
                // One object for the items of this window (its strings borrow from it).
                let mut place = RawObject::default();
                loop {
                    let p = skip_ws(b, pos);
                    if p == b.len() {
                        break p;
                    }
                    if want_item {
                        if index == 0 && stop.is_none() && b[p] == b']' {
                            return Some(w.base + p + 1);
                        }
                        match item(text, p, &mut place, sink, index, None) {
                            Step::Done(Ok(()), after) => {
                                index += 1;
                                pos = after;
                                want_item = false;
                            }
                            Step::Short => break p,
                            Step::Done(Err(()), _) | Step::Invalid => return None,
                        }
                    } else {
                        let at = w.base + p;
                        match (b[p], stop) {
                            (b',', Some(s)) if at == s => return Some(at),
                            (b',', Some(s)) if at > s => return None,
                            (b',', _) => {
                                pos = p + 1;
                                want_item = true;
                            }
                            (b']', None) => return Some(at + 1),
                            _ => return None,
                        }
                    }
                }
            };
            w.advance(keep)?;
            pos = 0;
        }
    }

    /// One item of a list at byte `p` of `text`, added to `sink` as item `index`: Done with
    /// the position after it (Err when the sink refused the object: the error is in the
    /// sink), Short when the text ends inside it, Invalid when it is not JSON of an object.
    /// The common object is read by hand into `place` (reused item after item), anything
    /// else by serde. With `version`, the object's `metadata.resourceVersion` is kept there.
    pub(super) fn item<'t>(
        text: &'t str,
        p: usize,
        place: &mut RawObject<'t>,
        sink: &mut Sink<'_>,
        index: usize,
        version: Option<&mut String>,
    ) -> Step<Result<(), ()>> {
        let keep = |obj: &RawObject<'_>, version: Option<&mut String>| {
            if let Some(v) = version {
                v.clear();
                v.push_str(obj.metadata.resource_version());
            }
        };
        let mut reader = fast::Reader::new(text, p);
        if fast::object(&mut reader, place).is_some() {
            keep(place, version);
            let added = sink.add::<serde_json::Error>(index, place).map_err(drop);
            return Step::Done(added, reader.pos());
        }
        // Boxed: the object is a kilobyte, and `step` would move it by value several times.
        match step::<Box<RawObject<'_>>>(text, p) {
            Step::Done(mut obj, after) => {
                keep(&obj, version);
                let added = sink.add::<serde_json::Error>(index, &mut obj).map_err(drop);
                Step::Done(added, after)
            }
            Step::Short => Step::Short,
            Step::Invalid => Step::Invalid,
        }
    }

    /// Text of the source from `offset` (moved on to the next character boundary), at most
    /// `size` bytes; and the source offset the text starts at.
    fn peek<S: Source + ?Sized>(source: &S, offset: usize, size: usize) -> Option<(String, usize)> {
        let mut buf = vec![0; size.min(source.size().saturating_sub(offset))];
        let n = source.read_at(offset, &mut buf).ok()?;
        buf.truncate(n);
        // UTF-8 continuation bytes cannot start a character.
        let skip = buf.iter().take_while(|&&c| c & 0xC0 == 0x80).count();
        let end = match std::str::from_utf8(&buf[skip..]) {
            Ok(_) => buf.len(),
            Err(e) => skip + e.valid_up_to(),
        };
        let text = std::str::from_utf8(&buf[skip..end]).ok()?.to_string();
        Some((text, offset + skip))
    }

    /// None: use the sequential decoder. Otherwise the list's objects are in `parts`, and
    /// pods in `more` follow those in `parts.pods` (the second thread's, left where they
    /// were decoded).
    pub(super) fn decode_list<S: Source + ?Sized>(
        file: &str,
        source: &S,
        parts: &mut SnapshotParts,
        more: &mut Vec<Pod>,
    ) -> Option<Result<(), SnapshotError>> {
        if source.size() < MIN_BYTES {
            return None;
        }
        decode_list_in_pieces(file, source, parts, more, PIECE, SPLIT)
    }

    /// How many chunks a list is cut into. Each thread has a run of its own: the first half
    /// of the chunks for one, the second for the other, decoded in order into one list.
    /// The halves of a file in bytes are rarely halves of the work (nodes decode at another
    /// pace than pods, and the thread that first touches fresh memory pays for the page
    /// faults), so a thread done with its run takes chunks from the end of the other's,
    /// one at a time, until they meet.
    pub(super) const CHUNKS: usize = 64;

    /// The first chunk of the second thread's run.
    pub(super) const SPLIT: usize = CHUNKS / 2;

    /// A separating comma between two items at or after `from`, looked for in a small peek
    /// first, then in a larger one (an item can be large).
    fn cut_at<S: Source + ?Sized>(source: &S, from: usize) -> Option<usize> {
        [64 << 10, 4 * PIECE].into_iter().find_map(|size| {
            let (around, at) = peek(source, from, size)?;
            Some(at + item_cut(&around, 0)?)
        })
    }

    /// Decoded chunks `chunks`, in order.
    struct Decoded {
        chunks: Range<usize>,
        parts: SnapshotParts,
        shapes: Shapes,
        /// The source offset after the last chunk (after the closing bracket when it is the
        /// list's last); unused while `chunks` is empty.
        end: usize,
    }

    impl Decoded {
        fn new(first: usize, pods: usize) -> Decoded {
            let mut parts = SnapshotParts::default();
            parts.pods.reserve(pods);
            Decoded {
                chunks: first..first,
                parts,
                shapes: Shapes::default(),
                end: 0,
            }
        }

        /// Takes in the chunks that follow this one's.
        fn append(&mut self, mut more: Decoded) {
            self.shapes
                .append(&self.parts.pods[..], more.shapes, &mut more.parts.pods);
            join(&mut self.parts, more.parts);
            self.chunks.end = more.chunks.end;
            self.end = more.end;
        }
    }

    /// What one thread decoded: its own run, and the chunks it took from the end of the
    /// other's, last first.
    type Runs = (Decoded, Vec<Decoded>);

    /// [`decode_list`] at any size, each thread reading `piece` bytes at a time, the second
    /// thread's run starting at chunk `split`.
    pub(super) fn decode_list_in_pieces<S: Source + ?Sized>(
        file: &str,
        source: &S,
        parts: &mut SnapshotParts,
        more: &mut Vec<Pod>,
        piece: usize,
        split: usize,
    ) -> Option<Result<(), SnapshotError>> {
        if !(1..CHUNKS).contains(&split) {
            return None;
        }
        let size = source.size();
        let (head, _) = peek(source, 0, PIECE)?;
        let (start, mut kind) = items_start(&head)?;
        // The separating comma that ends each chunk but the last.
        let mut cuts: Vec<usize> = Vec::with_capacity(CHUNKS - 1);
        for j in 1..CHUNKS {
            let nominal = start + (size - start) * j / CHUNKS;
            let floor = cuts.last().map_or(start, |&c| c + 1);
            cuts.push(cut_at(source, nominal.max(floor))?);
        }
        let chunk = |j: usize| {
            let from = if j == 0 { start } else { cuts[j - 1] + 1 };
            (from, cuts.get(j).copied())
        };
        // The chunks of each run not taken yet.
        let runs = Mutex::new([0..split, split..CHUNKS]);
        let failed = AtomicBool::new(false);
        // The next chunk for thread `t`: the next of its own run, or else the last of the
        // other's; and whether it is its own.
        let claim = |t: usize| -> Option<(usize, bool)> {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let mut runs = runs.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(j) = runs[t].next() {
                return Some((j, true));
            }
            runs[1 - t].next_back().map(|j| (j, false))
        };
        // Thread `t`'s work. Its own run goes into one list with room for every pod it
        // could hold (a pod takes at least BYTES_PER_POD bytes of JSON, and capacity never
        // used is never touched, so the estimate costs no memory, while growing a vector of
        // 75,000 pods copies it, and the copies cost page faults). None (and the other
        // thread stops) on any doubt.
        let work = |t: usize| -> Option<Runs> {
            let at = chunk(split).0;
            let own_bytes = if t == 0 { at - start } else { size - at };
            let mut own = Decoded::new(t * split, own_bytes / BYTES_PER_POD);
            let mut taken: Vec<Decoded> = Vec::new();
            // Bytes and pods decoded so far: the list of each chunk taken from the other
            // run is sized from them (a list sized for the fewest bytes per pod would leave
            // most of its memory unused, and that memory still costs page faults).
            let (mut bytes, mut pods) = (0usize, 0usize);
            while let Some((j, mine)) = claim(t) {
                let (from, stop) = chunk(j);
                let len = stop.unwrap_or(size).saturating_sub(from);
                let mut other = (!mine).then(|| {
                    let estimate = if pods > 0 {
                        len * pods / bytes + len * pods / bytes / 8 + 16
                    } else {
                        0
                    };
                    Decoded::new(j, estimate)
                });
                let d = other.as_mut().unwrap_or(&mut own);
                let before = d.parts.pods.len();
                let mut sink = Sink {
                    file,
                    parts: &mut d.parts,
                    shapes: std::mem::take(&mut d.shapes),
                    error: None,
                    defaults: None,
                };
                let end = items(source, from, stop, piece, &mut sink);
                d.shapes = std::mem::take(&mut sink.shapes);
                let Some(end) = end else {
                    failed.store(true, Ordering::Relaxed);
                    return None;
                };
                d.chunks = d.chunks.start..j + 1;
                d.end = end;
                bytes += len;
                pods += d.parts.pods.len() - before;
                taken.extend(other);
            }
            Some((own, taken))
        };
        let (front, back) = std::thread::scope(|scope| {
            let back = scope.spawn(|| work(1));
            let front = work(0);
            (front, back.join().ok().flatten())
        });
        let ((mut first, first_taken), (mut second, second_taken)) = (front?, back?);
        // The first half: the first thread's run, then what the second took from its end;
        // the second half likewise.
        for d in second_taken.into_iter().rev() {
            if d.chunks.start != first.chunks.end {
                return None;
            }
            first.append(d);
        }
        for d in first_taken.into_iter().rev() {
            if d.chunks.start != second.chunks.end {
                return None;
            }
            second.append(d);
        }
        if first.chunks != (0..split) || second.chunks != (split..CHUNKS) {
            return None;
        }
        let end = second.end;
        // The rest of the top-level object: more keys, then `}` and nothing else.
        let (rest, _) = peek(source, end, size - end)?;
        let b = rest.as_bytes();
        let mut pos = skip_ws(b, 0);
        while b.get(pos) == Some(&b',') {
            pos = skip_ws(b, pos + 1);
            let (key, after): (String, usize) = value_at(&rest, pos)?;
            pos = skip_ws(b, after);
            if b.get(pos) != Some(&b':') {
                return None;
            }
            pos = envelope_key(&rest, skip_ws(b, pos + 1), &key, &mut kind)?;
        }
        if b.get(pos) != Some(&b'}') || skip_ws(b, pos + 1) != b.len() || end + b.len() != size {
            return None;
        }
        // A list's envelope, as the sequential decoder checks it (which then gives the error).
        if !kind.as_deref().is_some_and(super::is_list_kind) {
            return None;
        }
        // The second half's pods stay in their list (moving tens of megabytes into fresh
        // memory costs more than reading the pods in two parts); their shapes are numbered
        // as the first half's.
        let mut second_pods = std::mem::take(&mut second.parts.pods);
        first
            .shapes
            .append(&first.parts.pods[..], second.shapes, &mut second_pods);
        join(&mut first.parts, second.parts);
        join(parts, first.parts);
        if parts.pods.is_empty() {
            parts.pods = second_pods;
        } else {
            *more = second_pods;
        }
        Some(Ok(()))
    }

    /// Appends the objects of `more` to `to`'s; moves each list when `to`'s is empty (no
    /// copy).
    fn join(to: &mut SnapshotParts, more: SnapshotParts) {
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
        } = more;
        list(&mut to.nodes, nodes);
        list(&mut to.pods, pods);
        list(&mut to.pdbs, pdbs);
        list(&mut to.namespaces, namespaces);
        list(&mut to.priority_classes, priority_classes);
        list(&mut to.pod_groups, pod_groups);
    }
}

/// A YAML error in words of the file, with the path of the field where there is one: the
/// text is read again as plain YAML values (only once it failed), and those decoded into the
/// wire shapes with path tracking.
fn yaml_error(text: &str, e: &serde_saphyr::Error) -> String {
    let message = crate::yaml::plain_error(e);
    let Ok(docs) = serde_saphyr::from_multiple_with_options::<serde_json::Value>(
        text,
        crate::yaml::options_for(text),
    ) else {
        return message;
    };
    for (index, doc) in docs.into_iter().enumerate() {
        if let Err(e) = serde_path_to_error::deserialize::<_, Option<RawObject<'static>>>(doc) {
            let path = e.path().to_string();
            let document = if index > 0 {
                format!("document {}, ", index + 1)
            } else {
                String::new()
            };
            // After the first line, before the library's excerpt of the text.
            let (first, rest) = message.split_once('\n').unwrap_or((&message, ""));
            let sep = if rest.is_empty() { "" } else { "\n" };
            return format!(
                "{first} ({document}at {path}: {}){sep}{rest}",
                e.into_inner()
            );
        }
    }
    message
}

/// Decoding again with path tracking, only once we know it fails, keeps the fast path fast.
fn json_error_with_path<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Option<String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let err = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(_) => return de.end().err().map(|e| e.to_string()),
        Err(e) => e,
    };
    let path = err.path().to_string();
    let inner = err.into_inner();
    Some(if path.is_empty() || path == "." {
        inner.to_string()
    } else {
        format!("at {path}: {inner}")
    })
}

/// Where decoded objects go; a conversion error is kept here while serde unwinds.
struct Sink<'p> {
    file: &'p str,
    parts: &'p mut SnapshotParts,
    /// The shapes of `parts.pods`.
    shapes: Shapes,
    error: Option<SnapshotError>,
    /// The type of items that come without theirs (the API's typed lists, such as a
    /// PodList, leave `kind` and `apiVersion` out of their items).
    defaults: Option<ObjectType>,
}

impl Sink<'_> {
    fn add<E: de::Error>(&mut self, index: usize, obj: &mut RawObject<'_>) -> Result<(), E> {
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

/// A list's `items` (or a top-level array): each object is converted as soon as it is read.
struct Items<'s, 'p>(&'s mut Sink<'p>);

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence of Kubernetes objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(mut obj) = seq.next_element::<Box<RawObject<'de>>>()? {
            self.0.add(index, &mut obj)?;
            index += 1;
        }
        Ok(())
    }
}

/// The top-level JSON object: a List, whose items stream through [`Items`], or one object.
struct TopLevel<'s, 'p>(&'s mut Sink<'p>);

impl<'de> DeserializeSeed<'de> for TopLevel<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object or List")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut obj = RawObject::default();
        let mut items = false;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match &*key {
                "kind" => obj.kind = map.next_value()?,
                "apiVersion" => obj.api_version = map.next_value()?,
                // kubectl prints `items` before `kind`: the kind is checked at the end.
                "items" if items => return Err(de::Error::duplicate_field("items")),
                "items" => {
                    items = true;
                    map.next_value_seed(Items(&mut *self.0))?
                }
                "metadata" => obj.metadata = map.next_value()?,
                "spec" => obj.spec = map.next_value()?,
                "status" => obj.status = map.next_value()?,
                "value" => obj.value = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if items {
            // The items were added as they were read; only the envelope is left to check.
            obj.items = Some(Vec::new());
        }
        self.0.add(0, &mut obj)
    }
}

fn is_list_kind(kind: &str) -> bool {
    matches!(
        kind,
        "List"
            | "NodeList"
            | "PodList"
            | "PodDisruptionBudgetList"
            | "NamespaceList"
            | "PriorityClassList"
            | "PodGroupList"
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
             PodGroupList)"
        )
    };
    SnapshotError::field(file, format!("object #{index}"), "kind", message)
}

/// How errors name an object (`Pod default/web-1`); formatted only when there is an error.
#[derive(Clone, Copy)]
struct Obj<'x> {
    kind: &'x str,
    namespace: &'x str,
    name: &'x str,
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
fn add_object(
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
            "missing; every object needs its kind (Node, Pod, PodDisruptionBudget, Namespace, PriorityClass); an object cut short lacks it too",
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
        // Other kinds (Deployments, Services, ...) carry nothing the planner needs.
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
    let min_member = match min {
        None => 1,
        Some(RawInt::Int(v)) if *v < 0 => {
            return Err(SnapshotError::field(
                file,
                label,
                field,
                format!("{v} is negative; {what}"),
            ))
        }
        Some(RawInt::Int(v)) => i32::try_from(*v).map_err(|_| {
            SnapshotError::field(file, label, field, format!("{v} does not fit an int32"))
        })?,
        Some(RawInt::Other(found)) => {
            return Err(SnapshotError::field(
                file,
                label,
                field,
                format!("expected an integer, found {found}"),
            ))
        }
    };
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

fn quantities(
    file: &str,
    object: Obj<'_>,
    field: &dyn Fn() -> String,
    map: &Pairs<'_>,
    out: &mut Resources,
) -> Result<(), SnapshotError> {
    for (name, text) in map.iter() {
        let error = |message: String| {
            SnapshotError::field(file, object, format!("{}.{name}", field()), message)
        };
        let q = parse_quantity(text).map_err(|e| error(e.to_string()))?;
        if q.is_negative() {
            return Err(error(format!(
                "{text:?} is negative; an amount of a resource is zero or more"
            )));
        }
        let v = if name == "cpu" {
            q.checked_milli_value()
        } else {
            q.checked_value()
        };
        let v = v.ok_or_else(|| {
            error(format!(
                "{text:?} is larger than the planner can count (at most {} {})",
                i64::MAX,
                if name == "cpu" { "millicores" } else { "units" }
            ))
        })?;
        out.set(name, v);
    }
    Ok(())
}

/// `Quantity::parse`, with the forms resource lists nearly always use (`250m`, `4`, `512Mi`,
/// `16Gi`) read without the general parser.
fn parse_quantity(text: &str) -> Result<Quantity, QuantityError> {
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
fn time(file: &str, object: Obj<'_>, field: &str, t: &RawTime<'_>) -> Result<i64, SnapshotError> {
    match t {
        RawTime::Seconds(s) => Ok(*s),
        RawTime::Text(text) => timestamp(file, object, field, text),
    }
}

fn timestamp(file: &str, object: Obj<'_>, field: &str, text: &str) -> Result<i64, SnapshotError> {
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
fn utc_seconds(text: &str) -> Option<i64> {
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
    let tolerations = tolerations.into();
    let topology_spread = topology_spread.into();
    let affinity = match &spec.affinity {
        Some(a) => Some(Arc::new(convert_affinity(file, label, a)?)),
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
        Some(p) if same_labels(&spec.node_selector, &p.node_selector) => p.node_selector.clone(),
        _ => spec.node_selector.to_labels(),
    };
    let annotations = &metadata.annotations;
    Ok(Pod {
        namespace: metadata.namespace.boxed(),
        name: metadata.name.boxed(),
        uid: metadata.uid.boxed(),
        node_name: spec
            .node_name
            .as_ref()
            .filter(|n| !n.is_empty())
            .map(Str::boxed),
        labels,
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
            .as_ref()
            .filter(|n| !n.is_empty())
            .map(Str::boxed),
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
        node_selector,
        affinity,
        topology_spread,
        host_ports: host_ports.into_boxed_slice(),
        images,
        status: convert_pod_status(file, label, status)?.boxed(),
        volcano_group: annotations
            .group_name
            .as_ref()
            .filter(|n| !n.is_empty())
            .map(Str::boxed),
        pod_group: spec
            .scheduling_group
            .as_ref()
            .and_then(|g| g.pod_group_name.as_ref())
            .filter(|n| !n.is_empty())
            .map(Str::boxed),
        shape: super::NO_SHAPE,
    })
}

fn convert_container_statuses(raw: &[RawContainerStatus<'_>]) -> Vec<ContainerStatus> {
    raw.iter()
        .map(|c| ContainerStatus {
            restart_count: c.restart_count,
            state: if let Some(t) = &c.state.terminated {
                ContainerState::Terminated {
                    reason: t.reason.as_ref().filter(|r| !r.is_empty()).map(Str::boxed),
                    exit_code: t.exit_code,
                }
            } else if let Some(w) = &c.state.waiting {
                ContainerState::Waiting {
                    reason: w.reason.as_ref().filter(|r| !r.is_empty()).map(Str::boxed),
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
            reason: c.reason.as_ref().filter(|r| !r.is_empty()).map(Str::boxed),
            last_transition,
        });
    }
    Ok(PodStatusDetail {
        reason: status
            .reason
            .as_ref()
            .filter(|r| !r.is_empty())
            .map(Str::boxed),
        containers: convert_container_statuses(&status.container_statuses),
        init_containers: convert_container_statuses(&status.init_container_statuses),
        ephemeral_containers: convert_container_statuses(&status.ephemeral_container_statuses),
        conditions,
    })
}

// ---- the wire shapes: one union struct for every kind, so decoding is a single pass ----

/// A string of the input: borrowed when the input holds it verbatim (JSON without escapes),
/// owned otherwise.
#[derive(Default, Clone, PartialEq, Eq)]
struct Str<'a>(Cow<'a, str>);

impl Str<'_> {
    fn boxed(&self) -> Box<str> {
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
enum RawTime<'a> {
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
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// A string-to-string map (labels, resource lists) as pairs in input order, without a tree.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
struct Pairs<'a>(Vec<(Str<'a>, Str<'a>)>);

impl Pairs<'_> {
    fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }
    fn get(&self, key: &str) -> Option<&str> {
        // Later keys win, as when decoding into a map.
        self.0
            .iter()
            .rev()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| &**v)
    }
    fn contains_key(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| &**k == key)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn to_labels(&self) -> Labels {
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
struct RawObject<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    kind: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    api_version: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    metadata: RawMeta<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    spec: RawSpec<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    status: RawStatus<'a>,
    /// A List's objects; None when the object has no `items` (or `items: null`).
    #[serde(borrow)]
    items: Option<Vec<RawObject<'a>>>,
    /// PriorityClass.value
    value: Option<i32>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawMeta<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    name: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    namespace: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    uid: Str<'a>,
    /// Where a watch resumes, and the version a list was read at.
    #[serde(borrow, deserialize_with = "nullable")]
    resource_version: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    labels: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    annotations: Annotations<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    owner_references: Vec<RawOwner<'a>>,
    #[serde(borrow)]
    creation_timestamp: Option<RawTime<'a>>,
    #[serde(borrow)]
    deletion_timestamp: Option<RawTime<'a>>,
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
struct RawOwner<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    kind: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    name: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    uid: Str<'a>,
    controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawSpec<'a> {
    // Pod
    #[serde(borrow)]
    node_name: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    containers: Vec<RawContainer<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    init_containers: Vec<RawContainer<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    overhead: Pairs<'a>,
    // Rare parts boxed: a pod's spec is built on the stack and moved into its object.
    #[serde(borrow)]
    resources: Option<Box<RawResources<'a>>>,
    priority: Option<i32>,
    #[serde(borrow)]
    priority_class_name: Option<Str<'a>>,
    termination_grace_period_seconds: Option<i64>,
    #[serde(borrow, deserialize_with = "nullable")]
    tolerations: Vec<RawToleration<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    node_selector: Pairs<'a>,
    affinity: Option<Box<RawAffinity>>,
    #[serde(borrow, deserialize_with = "nullable")]
    topology_spread_constraints: Vec<RawTopologySpreadConstraint<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    volumes: Vec<RawVolume<'a>>,
    #[serde(deserialize_with = "nullable")]
    resource_claims: Vec<IgnoredAny>,
    // Node
    unschedulable: bool,
    #[serde(borrow, deserialize_with = "nullable")]
    taints: Vec<RawTaint<'a>>,
    // PodDisruptionBudget
    selector: Option<Box<LabelSelectorSpec>>,
    // Pod (Kubernetes 1.37): the PodGroup it belongs to.
    #[serde(borrow)]
    scheduling_group: Option<RawSchedulingGroup<'a>>,
    // PodGroup
    min_member: Option<RawInt>,
    // PodGroup of scheduling.k8s.io: rare, boxed.
    scheduling_policy: Option<Box<RawSchedulingPolicy>>,
    disruption_mode: Option<Box<RawDisruptionMode>>,
}

/// `spec.schedulingGroup` of a pod: the Kubernetes PodGroup it belongs to.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawSchedulingGroup<'a> {
    #[serde(borrow)]
    pod_group_name: Option<Str<'a>>,
}

/// `spec.schedulingPolicy` of a Kubernetes PodGroup (`basic` or `gang`).
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawSchedulingPolicy {
    gang: Option<RawGangPolicy>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawGangPolicy {
    min_count: Option<RawInt>,
}

/// `spec.disruptionMode` of a Kubernetes PodGroup: in 1.37 (`v1beta1`, `v1alpha3`) a union,
/// `single: {}` or `all: {}`; in 1.36 (`v1alpha2`) a string, `Pod` or `PodGroup`.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
struct RawDisruptionMode {
    single: bool,
    all: bool,
    /// The 1.36 string, as written.
    named: Option<String>,
}

/// The union's members, as the API writes them.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawDisruptionUnion {
    single: Option<IgnoredAny>,
    all: Option<IgnoredAny>,
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
enum RawInt {
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
struct RawStatus<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    phase: Str<'a>,
    #[serde(borrow)]
    start_time: Option<RawTime<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    conditions: Vec<RawCondition<'a>>,
    // Pod
    #[serde(borrow)]
    reason: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    container_statuses: Vec<RawContainerStatus<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    init_container_statuses: Vec<RawContainerStatus<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    ephemeral_container_statuses: Vec<RawContainerStatus<'a>>,
    // Node
    #[serde(borrow, deserialize_with = "nullable")]
    capacity: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    allocatable: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    images: Vec<RawImage<'a>>,
    disruptions_allowed: Option<i32>,
}

/// A node's image (`status.images[]`): its names and size.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawImage<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    names: Vec<Str<'a>>,
    size_bytes: Option<i64>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawCondition<'a> {
    #[serde(rename = "type", borrow, deserialize_with = "nullable")]
    type_: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    status: Str<'a>,
    #[serde(borrow)]
    reason: Option<Str<'a>>,
    #[serde(borrow)]
    last_transition_time: Option<RawTime<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawContainerStatus<'a> {
    #[serde(deserialize_with = "nullable")]
    restart_count: i32,
    #[serde(borrow, deserialize_with = "nullable")]
    state: RawContainerState<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawContainerState<'a> {
    running: Option<IgnoredAny>,
    #[serde(borrow)]
    waiting: Option<RawReason<'a>>,
    #[serde(borrow)]
    terminated: Option<RawTerminated<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawReason<'a> {
    #[serde(borrow)]
    reason: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawTerminated<'a> {
    #[serde(borrow)]
    reason: Option<Str<'a>>,
    #[serde(deserialize_with = "nullable")]
    exit_code: i32,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawContainer<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    image: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    resources: RawResources<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    ports: Vec<RawPort<'a>>,
    #[serde(borrow)]
    restart_policy: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawResources<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    requests: Pairs<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    limits: Pairs<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawPort<'a> {
    host_port: Option<i32>,
    #[serde(borrow)]
    protocol: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawToleration<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    key: Str<'a>,
    #[serde(borrow)]
    operator: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    value: Str<'a>,
    #[serde(borrow)]
    effect: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawTaint<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    key: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    value: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    effect: Str<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawVolume<'a> {
    empty_dir: Option<IgnoredAny>,
    host_path: Option<IgnoredAny>,
    #[serde(borrow)]
    persistent_volume_claim: Option<RawPvcSource<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawPvcSource<'a> {
    #[serde(borrow, deserialize_with = "nullable")]
    claim_name: Str<'a>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawTopologySpreadConstraint<'a> {
    #[serde(deserialize_with = "nullable")]
    max_skew: i32,
    #[serde(borrow, deserialize_with = "nullable")]
    topology_key: Str<'a>,
    #[serde(borrow, deserialize_with = "nullable")]
    when_unsatisfiable: Str<'a>,
    label_selector: Option<LabelSelectorSpec>,
    min_domains: Option<i32>,
    #[serde(borrow)]
    node_affinity_policy: Option<Str<'a>>,
    #[serde(borrow)]
    node_taints_policy: Option<Str<'a>>,
    #[serde(borrow, deserialize_with = "nullable")]
    match_label_keys: Vec<Str<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawAffinity {
    node_affinity: Option<RawNodeAffinity>,
    pod_affinity: Option<RawPodAffinity>,
    pod_anti_affinity: Option<RawPodAffinity>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawNodeAffinity {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    required: Option<RawNodeSelector>,
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    preferred: Vec<RawPreferredSchedulingTerm>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawNodeSelector {
    #[serde(deserialize_with = "nullable")]
    node_selector_terms: Vec<RawNodeSelectorTerm>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawNodeSelectorTerm {
    #[serde(deserialize_with = "nullable")]
    match_expressions: Vec<RawNodeSelectorRequirement>,
    #[serde(deserialize_with = "nullable")]
    match_fields: Vec<RawNodeSelectorRequirement>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawNodeSelectorRequirement {
    #[serde(deserialize_with = "nullable")]
    key: String,
    #[serde(deserialize_with = "nullable")]
    operator: String,
    #[serde(deserialize_with = "nullable")]
    values: Vec<String>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawPreferredSchedulingTerm {
    #[serde(deserialize_with = "nullable")]
    weight: i32,
    #[serde(deserialize_with = "nullable")]
    preference: RawNodeSelectorTerm,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default)]
struct RawPodAffinity {
    #[serde(
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    required: Vec<RawPodAffinityTerm>,
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    preferred: Vec<RawWeightedPodAffinityTerm>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawPodAffinityTerm {
    label_selector: Option<LabelSelectorSpec>,
    #[serde(deserialize_with = "nullable")]
    namespaces: Vec<String>,
    namespace_selector: Option<LabelSelectorSpec>,
    #[serde(deserialize_with = "nullable")]
    topology_key: String,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
#[serde(default, rename_all = "camelCase")]
struct RawWeightedPodAffinityTerm {
    #[serde(deserialize_with = "nullable")]
    weight: i32,
    #[serde(deserialize_with = "nullable")]
    pod_affinity_term: RawPodAffinityTerm,
}

/// Only the annotations the planner reads; the rest (often large, such as
/// last-applied-configuration) are skipped without being copied.
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
struct Annotations<'a> {
    evict: bool,
    prefer_no_eviction: bool,
    mirror: bool,
    config_source: Option<Str<'a>>,
    /// `scheduling.k8s.io/group-name`: the Volcano PodGroup.
    group_name: Option<Str<'a>>,
    /// `k8s.io/initial-events-end` is "true": the bookmark after the initial events of a
    /// watch that streams its list.
    initial_events_end: bool,
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
enum AnnotationKey {
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
    fn of(key: &str) -> AnnotationKey {
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
    images:
    - {names: ["registry.example/app@sha256:ab", "registry.example/app:1"], sizeBytes: 52428800}
    - {names: [busybox], sizeBytes: null}
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
        // every name of every image, with its size (ImageLocality)
        assert_eq!(n.image_size("registry.example/app:1"), Some(50 << 20));
        assert_eq!(
            n.image_size("registry.example/app@sha256:ab"),
            Some(50 << 20)
        );
        assert_eq!(n.image_size("busybox"), Some(0));
        assert_eq!(n.image_size("nginx"), None);
        let p = &snap.pods[0];
        // containers 500m + sidecar 100m = 600m; init peak max(2000+0, 100) = 2000; + 10m overhead
        assert_eq!(p.requests.cpu, 2010);
        assert_eq!(p.requests.memory, (128 + 64) << 20);
        assert_eq!(p.qos, Qos::Burstable);
        assert!(p.has_evict_annotation);
        assert!(!p.is_mirror);
        assert!(p.has_local_storage);
        assert_eq!(
            &*p.host_ports,
            [HostPort {
                port: 8080,
                protocol: 0
            }]
        );
        assert_eq!(p.created, 1767225600);
        assert_eq!(p.started, Some(1767225605));
        // No status reason, container statuses or conditions: nothing allocated for them.
        assert!(p.status.is_none());
        assert_eq!(p.status(), &PodStatusDetail::default());
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

    const STATUS_JSON: &str = r#"{"kind":"List","items":[
        {"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},
         "status":{"allocatable":{"cpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}},
        {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d"},"spec":{"nodeName":"n"},
         "status":{"phase":"Failed","reason":"NodeAffinity",
           "conditions":[{"type":"Ready","status":"False","reason":"PodCompleted",
                          "lastTransitionTime":"2026-01-01T00:01:00Z"},
                         {"type":"PodScheduled","status":"True"},
                         {"type":"example.com/Gate","status":"True"}],
           "initContainerStatuses":[{"name":"i","restartCount":2,
              "state":{"terminated":{"reason":"Error","exitCode":3}}}],
           "containerStatuses":[{"name":"a","restartCount":7,
              "state":{"waiting":{"reason":"CrashLoopBackOff"}}},
              {"name":"b","restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}},
              {"name":"c","restartCount":1,"state":{}}],
           "ephemeralContainerStatuses":[{"name":"e","state":{"terminated":{"exitCode":0,"reason":""}}}]}}]}"#;

    #[test]
    fn a_pod_reads_what_it_has_the_same_of_as_the_pod_before_it_from_that_pod() {
        let pod = |name: &str, labels: &str, owner: &str, images: &str, selector: &str| {
            let containers: Vec<String> = images
                .split(',')
                .map(|i| format!(r#"{{"image":"{i}"}}"#))
                .collect();
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"a","labels":{{{labels}}},"ownerReferences":[{owner}]}},"spec":{{"nodeName":"n","nodeSelector":{{{selector}}},"containers":[{}]}}}}"#,
                containers.join(",")
            )
        };
        let rs = r#"{"kind":"ReplicaSet","name":"web","uid":"u1","controller":true}"#;
        let sorted = r#""app":"web","tier":"a""#;
        let ssd = r#""disk":"ssd""#;
        let json = format!(
            r#"{{"kind":"List","items":[{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n"}}}},{}]}}"#,
            [
                pod("p0", sorted, rs, "log:2,web:1", ssd),
                pod("p1", sorted, rs, "log:2,web:1", ssd),
                // Keys out of order.
                pod("p2", r#""tier":"a","app":"web""#, rs, "log:2,web:1", ssd),
                pod("p3", r#""app":"web","tier":"a""#, rs, "web:1,log:2", ssd),
                // Not a controller; another value; another selector; one image.
                pod(
                    "p4",
                    sorted,
                    &rs.replace("true", "false"),
                    "log:2,web:1",
                    ssd
                ),
                pod(
                    "p5",
                    r#""app":"web","tier":"b""#,
                    rs,
                    "web:1",
                    r#""disk":"ssd","x":"y""#
                ),
                pod("p6", sorted, rs, "web:1", ""),
            ]
            .join(",")
        );
        let snap = load_bytes("s.json", json.as_bytes()).unwrap();
        let p = |i: usize| &snap.pods[i];
        let labels = |i: usize| p(i).labels.iter().collect::<Vec<_>>();
        let images = |i: usize| p(i).images.iter().map(|i| &**i).collect::<Vec<_>>();
        for i in 0..4 {
            assert_eq!(labels(i), [("app", "web"), ("tier", "a")], "p{i}");
            assert_eq!(images(i), ["log:2", "web:1"], "p{i}");
            assert_eq!(
                p(i).node_selector.iter().collect::<Vec<_>>(),
                [("disk", "ssd")]
            );
            assert!(p(i).owners[0].controller, "p{i}");
        }
        assert!(Arc::ptr_eq(&p(0).owners, &p(1).owners));
        assert!(Arc::ptr_eq(&p(0).images, &p(3).images));
        assert!(!p(4).owners[0].controller);
        assert_eq!(labels(4), labels(0));
        assert_eq!(labels(5), [("app", "web"), ("tier", "b")]);
        assert_eq!(images(5), ["web:1"]);
        assert_eq!(p(5).node_selector.get("x"), Some("y"));
        assert_eq!(labels(6), labels(0));
        assert!(p(6).node_selector.is_empty());
        assert!(p(6).owners[0].controller);
    }

    #[test]
    fn pods_of_one_workload_share_their_owners_images_and_template() {
        const TEMPLATE: &str = r#""nodeSelector":{"disk":"ssd"},
            "tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],
            "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
              {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"zone"}]}},
            "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",
              "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}}]"#;
        let pod = |name: &str, owner_uid: &str, template: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"a","labels":{{"app":"web"}},"ownerReferences":[{{"kind":"ReplicaSet","name":"web","uid":"{owner_uid}","controller":true}}]}},"spec":{{"nodeName":"n","containers":[{{"image":"web:1"}},{{"image":"log:2"}}],{template}}}}}"#
            )
        };
        // Same shape (namespace, owner kind and name, images), another owner UID and
        // another template: a second toleration, skew, selector and anti-affinity key.
        let other = TEMPLATE
            .replace(
                r#""effect":"NoSchedule"}"#,
                r#""effect":"NoSchedule"},{"key":"b","operator":"Exists"}"#,
            )
            .replace(r#""maxSkew":1"#, r#""maxSkew":2"#)
            .replace(r#""disk":"ssd""#, r#""disk":"hdd""#)
            .replace(r#""topologyKey":"zone"}]}}"#, r#""topologyKey":"host"}]}}"#);
        let json = format!(
            r#"{{"kind":"List","items":[{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n"}}}},{},{},{}]}}"#,
            pod("p0", "u1", TEMPLATE),
            pod("p1", "u1", TEMPLATE),
            pod("p2", "u2", &other),
        );
        let snap = load_bytes("s.json", json.as_bytes()).unwrap();
        let p = |i: usize| &snap.pods[i];
        let affinity = |i: usize| p(i).affinity.clone().unwrap();
        assert_eq!(p(0).shape, p(2).shape);
        assert!(Arc::ptr_eq(&p(0).owners, &p(1).owners));
        assert!(!Arc::ptr_eq(&p(0).owners, &p(2).owners));
        assert_eq!(&*p(2).owners[0].uid, "u2");
        assert!(Arc::ptr_eq(&p(0).images, &p(2).images));
        assert_eq!(&*p(1).images, ["log:2".into(), "web:1".into()]);
        assert!(Arc::ptr_eq(&p(0).tolerations, &p(1).tolerations));
        assert!(Arc::ptr_eq(&p(0).topology_spread, &p(1).topology_spread));
        assert!(Arc::ptr_eq(&affinity(0), &affinity(1)));
        assert_eq!(p(1).node_selector.get("disk"), Some("ssd"));
        // The other template keeps its own, as decoded.
        assert_eq!(p(2).tolerations.len(), 2);
        assert_eq!(p(2).topology_spread[0].max_skew, 2);
        assert_eq!(p(2).node_selector.get("disk"), Some("hdd"));
        assert_eq!(
            &*affinity(2).pod_anti_affinity_required[0].topology_key,
            "host"
        );
        assert_eq!(p(1).tolerations, p(0).tolerations);
        assert_ne!(p(2).tolerations, p(0).tolerations);
    }

    #[test]
    fn decodes_pod_status_detail() {
        let snap = load_bytes("s.json", STATUS_JSON.as_bytes()).unwrap();
        assert!(snap.pods[0].status.is_some());
        let st = snap.pods[0].status();
        assert_eq!(st.reason.as_deref(), Some("NodeAffinity"));
        assert_eq!(st.containers.len(), 3);
        assert_eq!(st.containers[0].restart_count, 7);
        assert_eq!(st.containers[0].waiting_reason(), Some("CrashLoopBackOff"));
        assert_eq!(st.containers[1].state, ContainerState::Running);
        assert_eq!(st.containers[2].state, ContainerState::Unknown);
        assert_eq!(st.init_containers[0].restart_count, 2);
        assert_eq!(st.init_containers[0].terminated_reason(), Some("Error"));
        assert_eq!(st.init_containers[0].exit_code(), Some(3));
        assert_eq!(st.ephemeral_containers[0].terminated_reason(), None);
        assert_eq!(st.ephemeral_containers[0].exit_code(), Some(0));
        assert_eq!(st.conditions.len(), 3);
        assert_eq!(&*st.conditions[0].kind, "Ready");
        assert_eq!(&*st.conditions[1].kind, "PodScheduled");
        // Well-known types are shared, others kept as written.
        assert!(matches!(
            st.conditions[1].kind,
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(&*st.conditions[2].kind, "example.com/Gate");
        assert_eq!(st.conditions[0].status, ConditionStatus::False);
        assert_eq!(st.conditions[0].reason.as_deref(), Some("PodCompleted"));
        assert_eq!(st.conditions[0].last_transition, Some(1_767_225_660));
        assert_eq!(st.conditions[1].last_transition, None);
    }

    #[test]
    fn bad_pod_condition_names_the_field() {
        let bad = STATUS_JSON.replace(r#""status":"False""#, r#""status":"Maybe""#);
        let err = load_bytes("s.json", bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("Pod d/p"), "{err}");
        assert!(err.contains("status.conditions[0].status"), "{err}");
        assert!(err.contains("True, False, Unknown"), "{err}");
        let bad = STATUS_JSON.replace("2026-01-01T00:01:00Z", "yesterday");
        let err = load_bytes("s.json", bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("status.conditions[0].lastTransitionTime"),
            "{err}"
        );
    }

    /// Decodes on one thread, for comparing with the two-thread path.
    fn sequential(file: &str, bytes: &[u8]) -> SnapshotParts {
        let mut parts = SnapshotParts::default();
        let mut sink = Sink {
            file,
            parts: &mut parts,
            shapes: Shapes::default(),
            error: None,
            defaults: None,
        };
        let text = std::str::from_utf8(bytes).unwrap();
        stream_json(&mut sink, serde_json::Deserializer::from_str(text), false).unwrap();
        parts
    }

    fn fingerprint(p: &SnapshotParts) -> Vec<String> {
        let mut v: Vec<String> = p.nodes.iter().map(|n| format!("{n:?}")).collect();
        v.extend(p.pods.iter().map(|x| format!("{x:?}")));
        v.extend(p.pdbs.iter().map(|x| format!("{x:?}")));
        v.extend(p.namespaces.iter().map(|x| format!("{x:?}")));
        v.extend(p.priority_classes.iter().map(|x| format!("{x:?}")));
        v.extend(p.pod_groups.iter().map(|x| format!("{x:?}")));
        v
    }

    /// The integer fields the wire shapes read.
    pub(super) const INT_KEYS: &[&str] = &[
        "priority",
        "restartCount",
        "exitCode",
        "hostPort",
        "weight",
        "maxSkew",
        "minDomains",
        "disruptionsAllowed",
        "value",
    ];

    /// `text` with one to three bytes removed, inserted or replaced (and with `cut`, maybe
    /// cut short) at random; None when that is not UTF-8.
    pub(super) fn mutated(
        rng: &mut crate::snapshot::synthetic::Rng,
        text: &str,
        cut: bool,
    ) -> Option<String> {
        const BYTES: &[u8] = b"\"\\,:{}[]n0-.e+ \n\tx1\x01";
        let mut b = text.as_bytes().to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(b.len());
            match rng.below(if cut { 4 } else { 3 }) {
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
        String::from_utf8(b).ok()
    }

    /// A list read by both readers of a JSON list: the sequential one (serde), and the two
    /// threads' (the hand-written reader, serde where it has a doubt), as `load_file` runs
    /// them. The two threads' give up on any doubt (None); when they do not, both must read
    /// the same objects, or give the same error.
    fn both_readers_agree(text: &str) -> bool {
        let one = decode_parts("s.json", text.as_bytes());
        let (mut parts, mut more) = (SnapshotParts::default(), Vec::new());
        let two = parallel::decode_list_in_pieces(
            "s.json",
            text.as_bytes(),
            &mut parts,
            &mut more,
            4096,
            parallel::SPLIT,
        );
        let two = match two {
            None => return false,
            Some(result) => result.and_then(|()| checked("s.json", parts, &more)),
        };
        match (two, one) {
            (Ok(mut two), Ok((one, _))) => {
                two.pods.append(&mut more);
                assert_eq!(fingerprint(&two), fingerprint(&one), "{text}");
            }
            (Err(two), Err(one)) => assert_eq!(two.to_string(), one.to_string()),
            (two, one) => panic!(
                "two threads: {:?}; one: {:?}; {text}",
                two.map(|_| ()),
                one.map(|_| ())
            ),
        }
        true
    }

    /// Both readers of a JSON list on lists mutated as a file can be (issue 17: `-0` in an
    /// integer field, a second `items`, no `kind`, another kind with `items`), and at random
    /// (a seeded generator: `DESCHEDULER_DIFF_ITERATIONS` runs more than the default).
    #[test]
    fn both_readers_of_a_list_agree_on_mutated_lists() {
        use crate::snapshot::synthetic::{generate_json, Config, Rng};
        let base = String::from_utf8(generate_json(&Config::new(8, 200, 5))).unwrap();
        let envelope = base.rfind("\"kind\":\"List\"").unwrap();
        let mut texts = vec![
            base.clone(),
            base.replacen("\"items\":[", "\"items\":[],\"items\":[", 1),
            format!("{}\"items\":[],{}", &base[..envelope], &base[envelope..]),
            format!("{}{}", &base[..envelope - 1], &base[envelope + 13..]),
            format!(
                "{}\"kind\":\"Pod\"{}",
                &base[..envelope],
                &base[envelope + 13..]
            ),
        ];
        for key in INT_KEYS {
            let field = format!("\"{key}\":");
            // The last one: in the second thread's half.
            if let Some(at) = base.rfind(&field) {
                let at = at + field.len();
                texts.push(format!("{}-0,\"y\":{}", &base[..at], &base[at..]));
            }
        }
        assert!(texts.len() >= 10, "the generated list has integer fields");
        let iterations = iterations("DESCHEDULER_DIFF_ITERATIONS", 60);
        let mut rng = Rng::new(17);
        for _ in 0..iterations {
            texts.extend(mutated(&mut rng, &base, false));
        }
        let read_by_two = texts.iter().filter(|t| both_readers_agree(t)).count();
        // The unmutated list, and many of the mutated ones, take the two threads' path.
        assert!(both_readers_agree(&base));
        assert!(
            read_by_two > texts.len() / 4,
            "{read_by_two} of {}",
            texts.len()
        );
    }

    /// Iterations of a seeded harness: the number in env `var`, or `default`.
    fn iterations(var: &str, default: usize) -> usize {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn shipped(path: &str) -> String {
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
            .unwrap()
    }

    /// The shipped snapshots and policies, mutated by a seeded generator (bytes removed,
    /// inserted, replaced, the text cut short): the snapshots through both readers of a JSON
    /// list and through the YAML reader, and planned when they decode; the policies loaded and
    /// built. Nothing panics, and both JSON readers agree. A few hundred inputs here; set
    /// `DESCHEDULER_FUZZ_ITERATIONS` (per input file) for more.
    #[test]
    fn mutated_shipped_inputs_never_panic_and_both_readers_agree() {
        use crate::snapshot::synthetic::Rng;
        let iterations = iterations("DESCHEDULER_FUZZ_ITERATIONS", 30);
        let mut rng = Rng::new(2026);
        let policies: Vec<String> = [
            "policies/combined.yaml",
            "policies/lifecycle.yaml",
            "policies/lownodeutilization.yaml",
            "examples/batch/policy.yaml",
            "examples/usage/policy.yaml",
        ]
        .into_iter()
        .map(shipped)
        .collect();
        let pipeline = crate::framework::Pipeline::build(
            &crate::policy::Policy::from_yaml(
                "combined.yaml",
                &policies[0],
                &crate::plugins::REGISTRY,
            )
            .unwrap(),
            "combined.yaml",
            &crate::plugins::REGISTRY,
        )
        .unwrap();
        for text in &policies {
            for _ in 0..iterations {
                let Some(text) = mutated(&mut rng, text, true) else {
                    continue;
                };
                if let Ok(policy) =
                    crate::policy::Policy::from_yaml("p.yaml", &text, &crate::plugins::REGISTRY)
                {
                    let _ = crate::framework::Pipeline::build(
                        &policy,
                        "p.yaml",
                        &crate::plugins::REGISTRY,
                    );
                }
            }
        }
        let mut agreed = 0;
        for path in [
            "examples/cluster-hotspot.yaml",
            "examples/batch/cluster.yaml",
            "examples/usage/cluster.json",
        ] {
            let text = shipped(path);
            // As a JSON list with enough items for the two threads' reader (64 chunks).
            let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
            let items = value["items"].as_array().unwrap();
            let copies = 200 / items.len() + 1;
            let many: Vec<&serde_json::Value> =
                std::iter::repeat_n(items, copies).flatten().collect();
            let json = serde_json::to_string(&serde_json::json!({
                "apiVersion": "v1", "items": many, "kind": "List", "metadata": {}
            }))
            .unwrap();
            assert!(
                both_readers_agree(&json),
                "{path}: the two threads' reader applies"
            );
            for _ in 0..iterations {
                if let Some(json) = mutated(&mut rng, &json, true) {
                    agreed += usize::from(both_readers_agree(&json));
                }
                if let Some(text) = mutated(&mut rng, &text, true) {
                    if let Ok(snap) = load_bytes(path, text.as_bytes()) {
                        let _ = crate::plan::plan(&pipeline, &snap, 1_796_083_200);
                    }
                }
            }
        }
        assert!(agreed > 0, "no mutated list went through both readers");
    }

    #[test]
    fn two_threads_decode_exactly_what_one_does() {
        let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
        let bytes = crate::snapshot::synthetic::generate_json(&cfg);
        assert!(bytes.len() > parallel::MIN_BYTES, "{} bytes", bytes.len());
        let (mut fast, mut more) = (SnapshotParts::default(), Vec::new());
        parallel::decode_list("s.json", &bytes[..], &mut fast, &mut more)
            .expect("the two-thread path applies")
            .unwrap();
        // The second thread's pods are kept apart, and follow the first's.
        assert!(!fast.pods.is_empty() && !more.is_empty());
        fast.pods.append(&mut more);
        let slow = sequential("s.json", &bytes);
        assert_eq!(fast.pods.len(), 5000);
        assert_eq!(fingerprint(&fast), fingerprint(&slow));
    }

    #[test]
    fn a_file_decoded_as_it_is_read_is_the_file() {
        // Multi-byte characters in every pod, so that reads end inside characters, and
        // pieces far smaller than one object, so that every object outgrows its window.
        let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
        let text = String::from_utf8(crate::snapshot::synthetic::generate_json(&cfg)).unwrap();
        let text = text.replace(r#""pod-template-hash":""#, r#""pod-template-hash":"é€"#);
        assert!(text.matches('€').count() > 1000);
        let bytes = text.into_bytes();
        let slow = sequential("s.json", &bytes);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, &bytes).unwrap();
        let source = parallel::FileSource {
            file: std::fs::File::open(&path).unwrap(),
            size: bytes.len(),
        };
        // The second thread's run from the middle, and from either end, so that one thread
        // is done with its own run long before the other and takes chunks from its end.
        let (mid, last) = (parallel::SPLIT, parallel::CHUNKS - 1);
        for (piece, split) in [
            (7, mid),
            (4096, mid),
            (1 << 20, mid),
            (4096, 1),
            (4096, last),
        ] {
            let (mut fast, mut more) = (SnapshotParts::default(), Vec::new());
            parallel::decode_list_in_pieces("s.json", &source, &mut fast, &mut more, piece, split)
                .expect("the two-thread path applies")
                .unwrap();
            let case = format!("pieces of {piece}, second run from chunk {split}");
            // (The first chunk holds only nodes: with the second run from chunk 1, every pod
            // is the second thread's, and they are all in `fast.pods`.)
            assert!(!more.is_empty() || split == 1, "{case}");
            fast.pods.append(&mut more);
            assert_eq!(fingerprint(&fast), fingerprint(&slow), "{case}");
        }
        // And through the file loader, which also indexes.
        let snap = load_file(&path).unwrap();
        assert_eq!(snap.pods.len(), 5000);
        assert_eq!(
            snap.pods
                .iter()
                .map(|p| format!("{p:?}"))
                .collect::<Vec<_>>(),
            slow.pods
                .iter()
                .map(|p| format!("{p:?}"))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_large_file_that_is_not_a_list_or_not_text_is_read_whole() {
        let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
        let text = String::from_utf8(crate::snapshot::synthetic::generate_json(&cfg)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // A top-level array of the same objects: decoded by the sequential path.
        let items = &text[text.find('[').unwrap()..text.rfind(']').unwrap() + 1];
        let path = dir.path().join("array.json");
        std::fs::write(&path, items).unwrap();
        assert_eq!(load_file(&path).unwrap().pods.len(), 5000);
        // A byte that is not UTF-8 in the middle: whatever the sequential decoder makes of it.
        let mut bytes = text.into_bytes();
        let mid = bytes.len() / 2;
        let at = mid
            + bytes[mid..]
                .windows(8)
                .position(|w| w == b"\"name\":\"")
                .unwrap()
            + 8;
        bytes[at] = 0xFF;
        let path = dir.path().join("binary.json");
        std::fs::write(&path, &bytes).unwrap();
        let file = path.display().to_string();
        let outcome = |r: Result<ClusterSnapshot, SnapshotError>| {
            r.map(|s| format!("{:?}", s.pods))
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            outcome(load_file(&path)),
            outcome(load_bytes(&file, &bytes))
        );
        assert!(load_file(&dir.path().join("missing.json")).is_err());
    }

    #[test]
    fn two_threads_fall_back_on_doubt_and_errors_stay_precise() {
        let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
        let bytes = crate::snapshot::synthetic::generate_json(&cfg);
        let text = std::str::from_utf8(&bytes).unwrap();
        // A bad quantity in the second half: the precise error of the sequential decoder.
        let at = text.len() * 3 / 4;
        let pos = at + text[at..].find("\"cpu\":\"").unwrap() + 7;
        let end = pos + text[pos..].find('"').unwrap();
        let mut broken = text.to_string();
        broken.replace_range(pos..end, "lots");
        let err = load_bytes("b.json", broken.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("b.json") && err.contains("\"lots\""), "{err}");
        let (mut none, mut more) = (SnapshotParts::default(), Vec::new());
        assert!(parallel::decode_list("b.json", broken.as_bytes(), &mut none, &mut more).is_none());
        assert!(none.pods.is_empty() && more.is_empty());
        // Truncated: a syntax error, not a partial snapshot.
        let cut = &text[..text.len() - 10];
        assert!(matches!(
            load_bytes("t.json", cut.as_bytes()),
            Err(SnapshotError::Syntax { .. })
        ));
        // Trailing garbage after the list.
        let trailing = format!("{text} x");
        assert!(load_bytes("g.json", trailing.as_bytes()).is_err());
    }

    #[test]
    fn json_type_error_names_path() {
        let json = br#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"unschedulable":"yes"}}]}"#;
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

    #[test]
    fn fast_timestamps_agree_with_rfc3339() {
        for t in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-01-01T00:00:00Z",
            "2026-12-31T12:34:56Z",
            "2100-03-01T00:00:01Z",
            "1969-12-31T23:59:59Z",
        ] {
            let want = chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp();
            assert_eq!(utc_seconds(t), Some(want), "{t}");
        }
        // Everything else goes to the general parser.
        for t in [
            "2026-02-29T00:00:00Z",
            "2026-01-01T00:00:00.5Z",
            "2026-01-01T01:00:00+01:00",
            "2026-01-01t00:00:00z",
            "2026-13-01T00:00:00Z",
        ] {
            assert_eq!(utc_seconds(t), None, "{t}");
        }
        let obj = Obj {
            kind: "Pod",
            namespace: "ns",
            name: "p",
        };
        assert_eq!(
            timestamp("f", obj, "x", "2026-01-01T01:00:00+01:00").unwrap(),
            1_767_225_600
        );
        assert!(timestamp("f", obj, "x", "2026-02-29T00:00:00Z").is_err());
    }

    fn node_json(name: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        })
    }

    #[test]
    fn escaped_strings_decode_to_their_values() {
        // Strings with escapes cannot be borrowed from the input; they must still decode.
        let json = br#"{"kind":"List","items":[
            {"apiVersion":"v1","kind":"Node","metadata":{"name":"n\u0031","labels":{"zone":"a\"b"}},
             "status":{"allocatable":{"cpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}},
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web\/1","namespace":"default","labels":{"app":"\u00e9t\u00e9"}},
             "spec":{"nodeName":"n1","containers":[{"image":"nginx","resources":{"requests":{"cpu":"100m"}}}]},
             "status":{"phase":"Running"}}
        ]}"#;
        let snap = load_bytes("e.json", json).unwrap();
        assert_eq!(&*snap.nodes[0].name, "n1");
        assert_eq!(snap.nodes[0].labels.get("zone"), Some("a\"b"));
        let pod = &snap.pods[0];
        assert_eq!(&*pod.name, "web/1");
        assert_eq!(pod.labels.get("app"), Some("été"));
        assert_eq!(snap.pod_node(0), Some(0));
        assert_eq!(pod.requests.cpu, 100);
    }

    #[test]
    fn top_level_array_and_single_object() {
        let array =
            serde_json::to_vec(&serde_json::json!([node_json("a"), node_json("b")])).unwrap();
        let snap = load_bytes("a.json", &array).unwrap();
        assert_eq!(snap.nodes.len(), 2);
        let one = serde_json::to_vec(&node_json("solo")).unwrap();
        let snap = load_bytes("o.json", &one).unwrap();
        assert_eq!(&*snap.nodes[0].name, "solo");
        // Nested lists are read too.
        let nested = serde_json::to_vec(&serde_json::json!({
            "kind": "List",
            "items": [{"kind": "NodeList", "items": [node_json("x")]}, node_json("y")]
        }))
        .unwrap();
        assert_eq!(load_bytes("n.json", &nested).unwrap().nodes.len(), 2);
    }

    #[test]
    fn json_list_errors_name_the_object() {
        let mut pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "default"},
            "spec": {"containers": [{"image": "x", "resources": {"limits": {"memory": "lots"}}}]}
        });
        let list = |items: Vec<serde_json::Value>| {
            serde_json::to_vec(&serde_json::json!({"kind": "List", "items": items})).unwrap()
        };
        let err = load_bytes("l.json", &list(vec![node_json("n"), pod.clone()]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("l.json"), "{err}");
        assert!(err.contains("Pod default/web-1"), "{err}");
        assert!(
            err.contains("spec.containers[0].resources.limits.memory"),
            "{err}"
        );
        // A type error later in a list still gives its path.
        pod["spec"] = serde_json::json!({"priority": "high"});
        let err = load_bytes("l.json", &list(vec![node_json("n"), pod]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("items[1].spec.priority"), "{err}");
        // Trailing garbage and invalid UTF-8 are syntax errors.
        let mut bytes = list(vec![node_json("n")]);
        bytes.extend_from_slice(b" x");
        assert!(matches!(
            load_bytes("t.json", &bytes),
            Err(SnapshotError::Syntax { .. })
        ));
        let mut bytes = list(vec![node_json("n")]);
        let at = bytes.len() - 3;
        bytes.splice(at..at, *b"\xff");
        assert!(matches!(
            load_bytes("u.json", &bytes),
            Err(SnapshotError::Syntax { .. })
        ));
    }

    /// A key given twice in a map (labels, a node selector, resources) is refused in JSON
    /// as in YAML (a file kubectl prints never has one), naming where it is.
    #[test]
    fn duplicate_map_keys_are_refused_in_json_and_yaml() {
        let json = br#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","labels":{"a":"1","b":"2","a":"3"}},
            "status":{"allocatable":{"cpu":"1"}}}"#;
        let e = load_bytes("d.json", json).unwrap_err().to_string();
        assert!(
            e.contains("metadata.labels") && e.contains(r#"the key "a" is given twice"#),
            "{e}"
        );
        let yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {a: '1', b: '2', a: '3'}\nstatus: {allocatable: {cpu: '1'}}\n";
        let e = load_bytes("d.yaml", yaml.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 5") && e.contains("a key given twice"),
            "{e}"
        );
        assert!(
            !e.contains("Options"),
            "the reader's settings are not the user's: {e}"
        );
        // The hand-written reader of large lists gives the same error (where it reads the
        // list at all).
        let list = format!(
            r#"{{"kind":"List","apiVersion":"v1","items":[{}]}}"#,
            std::str::from_utf8(json).unwrap()
        );
        both_readers_agree(&list);
    }

    /// `null` for a list, a map, a string, a number or an object reads as the empty one, as
    /// the API's Go decoder reads it (and as policies read it), in JSON and YAML, by both
    /// readers of a JSON list.
    #[test]
    fn nulls_read_as_empty_in_json_and_yaml() {
        let node = |extra: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n1"{extra}}},"spec":{{"unschedulable":false{extra2}}},
                "status":{{"allocatable":{{"cpu":"4","pods":"110"}},"conditions":[{{"type":"Ready","status":"True"}}]{extra3}}}}}"#,
                extra2 = extra.replace("labels", "taints"),
                extra3 = extra.replace("labels", "capacity"),
            )
        };
        let pod = |nulls: bool| {
            let n = |field: &str| {
                if nulls {
                    format!(r#","{field}":null"#)
                } else {
                    String::new()
                }
            };
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","namespace":"default"{}{}{}}},
                "spec":{{"nodeName":"n1"{}{}{}{},"containers":[{{"name":"c","image":"x"{}{}}}]}},
                "status":{{"phase":"Running"{}{}{}}}}}"#,
                n("labels"),
                n("ownerReferences"),
                n("uid"),
                n("tolerations"),
                n("volumes"),
                n("nodeSelector"),
                n("topologySpreadConstraints"),
                n("ports"),
                n("resources"),
                n("conditions"),
                n("containerStatuses"),
                n("reason"),
            )
        };
        let list = |nulls: bool| {
            let extra = if nulls { r#","labels":null"# } else { "" };
            format!(
                r#"{{"kind":"List","apiVersion":"v1","items":[{},{}]}}"#,
                node(extra),
                pod(nulls)
            )
        };
        let (with, without) = (list(true), list(false));
        let (a, _) = decode_parts("n.json", with.as_bytes()).unwrap();
        let (b, _) = decode_parts("n.json", without.as_bytes()).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        both_readers_agree(&with);
        // YAML: `~` and `null`.
        let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1, labels: ~}\n  spec: {taints: null}\n  status:\n    allocatable: {cpu: '4', pods: '110'}\n    conditions: [{type: Ready, status: 'True'}]\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: default, labels: ~, ownerReferences: ~, uid: ~}\n  spec:\n    nodeName: n1\n    tolerations: ~\n    volumes: null\n    nodeSelector: ~\n    topologySpreadConstraints: ~\n    containers: [{name: c, image: x, ports: ~, resources: ~}]\n  status: {phase: Running, conditions: ~, containerStatuses: ~, reason: ~}\n";
        let (c, _) = decode_parts("n.yaml", yaml.as_bytes()).unwrap();
        assert_eq!(fingerprint(&c), fingerprint(&b));
    }

    /// A YAML value of the wrong type names its field, as JSON's do.
    #[test]
    fn yaml_type_errors_name_the_field() {
        let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n  status: {allocatable: {cpu: '4'}}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: default}\n  spec: {nodeName: n1, priority: high}\n";
        let e = load_bytes("t.yaml", yaml.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 11") && e.contains("at items[1].spec.priority"),
            "{e}"
        );
        let docs = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: {name: c}}\n";
        let e = load_bytes("t.yaml", docs.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("document 2, at spec.containers"), "{e}");
    }

    const GANGS_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    allocatable: {cpu: "4"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: scheduling.x-k8s.io/v1alpha1
  kind: PodGroup
  metadata: {name: train, namespace: ml}
  spec: {minMember: 3, scheduleTimeoutSeconds: 60}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata: {name: sim, namespace: ml}
  spec: {queue: default}
  status: {phase: Running, running: 2}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata: {name: zero, namespace: ml}
  spec: {minMember: 0}
- apiVersion: scheduling.example.com/v1
  kind: PodGroup
  metadata: {name: other, namespace: ml}
  spec: {minMember: true}
- apiVersion: v1
  kind: Pod
  metadata:
    name: train-0
    namespace: ml
    labels: {scheduling.x-k8s.io/pod-group: train}
  spec: {nodeName: n1}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: sim-0
    namespace: ml
    annotations: {scheduling.k8s.io/group-name: sim}
  spec: {nodeName: n1}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: lost-0
    namespace: ml
    annotations: {scheduling.k8s.io/group-name: lost}
  spec: {nodeName: n1}
  status: {phase: Running}
"#;

    #[test]
    fn decodes_pod_groups_of_both_kinds() {
        let snap = load_bytes("g.yaml", GANGS_YAML.as_bytes()).unwrap();
        // the PodGroup of an unknown API group is ignored, like other unknown kinds
        assert_eq!(snap.pod_groups.len(), 3);
        let train = snap
            .gang_id(GangKind::SchedulerPlugins, "ml", "train")
            .unwrap();
        let g = snap.gang(train);
        assert_eq!(g.min_member, Some(3));
        assert_eq!(g.running, 1);
        let tp = snap.pod_id("ml", "train-0").unwrap();
        assert_eq!(snap.gangs_of_pod(tp), &[train]);
        assert_eq!(g.members, vec![tp]);
        // minMember absent (or 0): 1
        let sim = snap.gang_id(GangKind::Volcano, "ml", "sim").unwrap();
        assert_eq!(snap.gang(sim).min_member, Some(1));
        let zero = snap.gang_id(GangKind::Volcano, "ml", "zero").unwrap();
        assert_eq!(snap.gang(zero).min_member, Some(1));
        let sp = snap.pod_id("ml", "sim-0").unwrap();
        assert_eq!(snap.pods[sp as usize].volcano_group.as_deref(), Some("sim"));
        assert_eq!(snap.gangs_of_pod(sp), &[sim]);
        // a group no PodGroup object describes: unknown minMember
        let lost = snap.gang_id(GangKind::Volcano, "ml", "lost").unwrap();
        assert_eq!(snap.gang(lost).min_member, None);
        assert_eq!(snap.gang(lost).members.len(), 1);
        // the same in JSON
        let value: serde_json::Value = serde_saphyr::from_str(GANGS_YAML).unwrap();
        let json = serde_json::to_vec(&value).unwrap();
        let j = load_bytes("g.json", &json).unwrap();
        assert_eq!(j.gangs, snap.gangs);
        assert_eq!(j.pod_groups, snap.pod_groups);
    }

    /// Kubernetes' own PodGroups (`scheduling.k8s.io`, 1.37), as the API server writes them:
    /// the gang size in `spec.schedulingPolicy.gang.minCount`, the disruption mode a union.
    const K8S_GANGS_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    allocatable: {cpu: "4"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: train, namespace: ml}
  spec:
    schedulingPolicy: {gang: {minCount: 4}}
    disruptionMode: {all: {}}
    workloadRef: {workloadName: job, templateName: workers}
  status: {conditions: [{type: PodGroupInitiallyScheduled, status: "True"}]}
- apiVersion: scheduling.k8s.io/v1alpha3
  kind: PodGroup
  metadata: {name: serve, namespace: ml}
  spec:
    schedulingPolicy: {gang: {minCount: 2}}
    disruptionMode: {single: {}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: loose, namespace: ml}
  spec:
    schedulingPolicy: {basic: {}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: nulls, namespace: ml}
  spec: {schedulingPolicy: null, disruptionMode: null}
- apiVersion: v1
  kind: Pod
  metadata: {name: train-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: train}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: serve-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: serve}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: gone-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: gone}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: both-0
    namespace: ml
    labels: {scheduling.x-k8s.io/pod-group: train}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: train}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: none-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: null}}
  status: {phase: Running}
"#;

    /// Kubernetes 1.36 writes `scheduling.k8s.io/v1alpha2` PodGroups: the disruption mode a
    /// string (`Pod`, `PodGroup`), the template reference `podGroupTemplateRef`.
    #[test]
    fn decodes_kubernetes_1_36_pod_groups() {
        let doc = |mode: &str| {
            format!(
                r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {{name: n1}}
  status: {{allocatable: {{cpu: "4"}}}}
- apiVersion: scheduling.k8s.io/v1alpha2
  kind: PodGroup
  metadata: {{name: train, namespace: ml}}
  spec:
    schedulingPolicy: {{gang: {{minCount: 3}}}}
    podGroupTemplateRef: {{workload: {{workloadName: job, podGroupTemplateName: workers}}}}
    {mode}
- apiVersion: v1
  kind: Pod
  metadata: {{name: train-0, namespace: ml}}
  spec: {{nodeName: n1, schedulingGroup: {{podGroupName: train}}}}
  status: {{phase: Running}}
"#
            )
        };
        let read = |mode: &str| load_bytes("k.yaml", doc(mode).as_bytes());
        for (mode, want) in [
            ("disruptionMode: PodGroup", Some(DisruptionMode::All)),
            ("disruptionMode: Pod", Some(DisruptionMode::Single)),
            ("disruptionMode: \"\"", None),
            ("", None),
        ] {
            let snap = read(mode).unwrap_or_else(|e| panic!("{mode}: {e}"));
            let g = snap.gang(snap.gang_id(GangKind::Kubernetes, "ml", "train").unwrap());
            assert_eq!((g.min_member, g.disruption), (Some(3), want), "{mode}");
            assert_eq!(g.members.len(), 1, "{mode}");
        }
        // The same from JSON, through the fast reader.
        let json = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}},{"apiVersion":"scheduling.k8s.io/v1alpha2","kind":"PodGroup","metadata":{"name":"train","namespace":"ml"},"spec":{"schedulingPolicy":{"gang":{"minCount":2}},"disruptionMode":"PodGroup"}}]}"#;
        let snap = load_bytes("k.json", json.as_bytes()).unwrap();
        let g = snap.gang(snap.gang_id(GangKind::Kubernetes, "ml", "train").unwrap());
        assert_eq!(
            (g.min_member, g.disruption),
            (Some(2), Some(DisruptionMode::All))
        );
        // A mode no version has: named, with the ones there are.
        let err = read("disruptionMode: Whole").unwrap_err().to_string();
        assert!(
            err.contains("spec.disruptionMode")
                && err.contains("\"Whole\" is not a disruption mode")
                && err.contains("Pod")
                && err.contains("PodGroup"),
            "{err}"
        );
        // Neither a string nor a map: a clear type error, not a panic.
        let err = read("disruptionMode: [Pod]").unwrap_err().to_string();
        assert!(err.contains("disruption mode"), "{err}");
    }

    #[test]
    fn decodes_kubernetes_pod_groups() {
        let snap = load_bytes("k.yaml", K8S_GANGS_YAML.as_bytes()).unwrap();
        assert_eq!(snap.pod_groups.len(), 4);
        let gang = |name: &str| snap.gang(snap.gang_id(GangKind::Kubernetes, "ml", name).unwrap());
        let train = gang("train");
        assert_eq!(train.min_member, Some(4));
        assert_eq!(train.disruption, Some(DisruptionMode::All));
        assert_eq!(train.describe(), "PodGroup ml/train (scheduling.k8s.io)");
        assert!(train.goes_whole(false), "all: whole, whatever the policy");
        // v1alpha3 reads as v1beta1
        let serve = gang("serve");
        assert_eq!(serve.min_member, Some(2));
        assert_eq!(serve.disruption, Some(DisruptionMode::Single));
        assert!(
            !serve.goes_whole(true),
            "single: one by one, whatever the policy"
        );
        // no gang policy: no minimum beyond 1; no disruption mode: the policy's
        for name in ["loose", "nulls"] {
            let g = gang(name);
            assert_eq!((g.min_member, g.disruption), (Some(1), None), "{name}");
            assert!(g.goes_whole(true) && !g.goes_whole(false), "{name}");
        }
        let t0 = snap.pod_id("ml", "train-0").unwrap();
        assert_eq!(snap.pod(t0).pod_group.as_deref(), Some("train"));
        assert_eq!(train.members.len(), 2);
        assert_eq!(train.running, 2);
        assert_eq!(snap.gangs_of_pod(t0).len(), 1);
        // a pod naming a group of each of two kinds is in both
        let both = snap.pod_id("ml", "both-0").unwrap();
        let kinds: Vec<GangKind> = snap
            .gangs_of_pod(both)
            .iter()
            .map(|&g| snap.gang(g).kind)
            .collect();
        assert_eq!(kinds, [GangKind::SchedulerPlugins, GangKind::Kubernetes]);
        assert!(snap.goes_whole(both, false));
        assert_eq!(snap.whole_rule(both), "disruptionMode all");
        // a group whose PodGroup was not read: unknown minCount, every member protected
        let gone = gang("gone");
        assert_eq!(gone.min_member, None);
        assert_eq!(gone.members.len(), 1);
        let none = snap.pod_id("ml", "none-0").unwrap();
        assert!(snap.gangs_of_pod(none).is_empty());
        // the same in JSON, by both JSON readers
        let value: serde_json::Value = serde_saphyr::from_str(K8S_GANGS_YAML).unwrap();
        let json = serde_json::to_vec(&value).unwrap();
        let j = load_bytes("k.json", &json).unwrap();
        assert_eq!(j.gangs, snap.gangs);
        assert_eq!(j.pod_groups, snap.pod_groups);
        both_readers_agree(std::str::from_utf8(&json).unwrap());
        // and as the snapshot writer writes them
        let mut out = Vec::new();
        crate::snapshot::encode::write_list(&snap, &mut out).unwrap();
        let again = load_bytes("again.json", &out).unwrap();
        assert_eq!(again.gangs, snap.gangs);
        assert_eq!(again.pod_groups, snap.pod_groups);
    }

    #[test]
    fn bad_kubernetes_pod_groups_name_the_field() {
        let cases = [
            ("minCount: 4}", "minCount: -1}", "-1 is negative"),
            ("minCount: 4}", "minCount: four}", "the string \"four\""),
            (
                "{all: {}}",
                "{all: {}, single: {}}",
                "sets both single and all",
            ),
        ];
        for (from, to, found) in cases {
            let yaml = K8S_GANGS_YAML.replacen(from, to, 1);
            let err = load_bytes("k.yaml", yaml.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(err.contains("PodGroup ml/train"), "{err}");
            assert!(err.contains(found), "{err}");
            let field = if found.contains("both") {
                "spec.disruptionMode"
            } else {
                "spec.schedulingPolicy.gang.minCount"
            };
            assert!(err.contains(field), "{err}");
            let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
            let json = serde_json::to_vec(&value).unwrap();
            let err = load_bytes("k.json", &json).unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
            both_readers_agree(std::str::from_utf8(&json).unwrap());
        }
    }

    #[test]
    fn bad_min_member_names_the_field() {
        for (bad, found) in [
            ("minMember: 3,", "the string \"three\""),
            ("minMember: 3,", "-2 is negative"),
            ("minMember: 3,", "the number 2.5"),
        ] {
            let value = if found.contains("string") {
                "minMember: three,"
            } else if found.contains("negative") {
                "minMember: -2,"
            } else {
                "minMember: 2.5,"
            };
            let yaml = GANGS_YAML.replace(bad, value);
            let err = load_bytes("g.yaml", yaml.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(err.contains("PodGroup ml/train"), "{err}");
            assert!(err.contains("spec.minMember"), "{err}");
            assert!(err.contains(found), "{err}");
            let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
            let json = serde_json::to_vec(&value).unwrap();
            let err = load_bytes("g.json", &json).unwrap_err().to_string();
            assert!(err.contains("spec.minMember"), "{err}");
        }
        let yaml = GANGS_YAML.replace(
            "- apiVersion: scheduling.x-k8s.io/v1alpha1\n  kind: PodGroup",
            "- kind: PodGroup",
        );
        let err = load_bytes("g.yaml", yaml.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("PodGroup ml/train"), "{err}");
        assert!(err.contains("apiVersion"), "{err}");
    }

    #[test]
    fn fast_quantities_agree_with_the_parser() {
        for q in [
            "0",
            "1",
            "4",
            "110",
            "250m",
            "1500m",
            "0m",
            "007",
            "512Mi",
            "16Gi",
            "1Ti",
            "64Ki",
            "2k",
            "3M",
            "5G",
            "123456789012345",
            "1.5",
            "100e3",
            "-1",
            "1Pi",
            "1Ei",
            "",
            "m",
            "12x",
            "1234567890123456",
        ] {
            assert_eq!(parse_quantity(q), Quantity::parse(q), "{q:?}");
        }
    }
}
