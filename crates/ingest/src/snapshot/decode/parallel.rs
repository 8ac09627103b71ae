//! The large case, a JSON List of many objects, decoded on two threads: the `items` array is
//! cut in two at an item boundary and each half is decoded on its own, then the halves are
//! joined in order. Each thread reads its half piece by piece into a small buffer it reuses,
//! so a large file is never held whole (the kernel would have to hand out and zero a fresh
//! page for every 4 kB of it). Any doubt (no `items` array at the top level, no boundary
//! found, a cut that turns out not to be between two items, any error) falls back to the
//! sequential decoder, which also gives the precise error.

use super::convert::{is_list_kind, join, Sink};
use super::error::SnapshotError;
use super::fast;
use super::wire::RawObject;
use crate::snapshot::shapes::Shapes;
use crate::snapshot::{Pod, SnapshotParts};
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
    let (mut first, mut second) = halves(front?, back?, split)?;
    // The rest of the top-level object: more keys, then `}` and nothing else.
    envelope_end(source, second.end, &mut kind)?;
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

/// The two halves of the list, in order: the first thread's run, then what the second took
/// from its end; the second half likewise. None unless they are the chunks of each half.
fn halves(front: Runs, back: Runs, split: usize) -> Option<(Decoded, Decoded)> {
    let ((mut first, first_taken), (mut second, second_taken)) = (front, back);
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
    Some((first, second))
}

/// Whether what follows the `items` array (from source offset `end`) is the rest of a list's
/// envelope: more keys, then `}` and nothing else, and a list's kind (as the sequential
/// decoder checks it, which then gives the error). `kind` is the kind read before `items`.
fn envelope_end<S: Source + ?Sized>(
    source: &S,
    end: usize,
    kind: &mut Option<String>,
) -> Option<()> {
    let size = source.size();
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
        pos = envelope_key(&rest, skip_ws(b, pos + 1), &key, kind)?;
    }
    if b.get(pos) != Some(&b'}') || skip_ws(b, pos + 1) != b.len() || end + b.len() != size {
        return None;
    }
    kind.as_deref().is_some_and(is_list_kind).then_some(())
}
