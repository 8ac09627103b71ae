//! The Kubernetes API's answers read straight into the compact model as their bytes arrive:
//! a list response (`{"kind":"PodList","metadata":{..},"items":[..]}`) and the events of a
//! watch (`{"type":"MODIFIED","object":{..}}`, one per line). They go through the reader,
//! wire shapes and conversion that read snapshot files, so a live cycle and an offline plan
//! of the same objects see the same model, and nothing but the model is built: no API
//! objects, no JSON written only to be read again.

use super::convert::Sink;
use super::error::SnapshotError;
use super::parallel::{item, skip_ws, step, Step};
use super::proto::{self, ProtoListDecoder};
pub use super::wire::{DecodedList, ObjectType};
use super::wire::{RawMeta, RawObject, Str};
use crate::snapshot::shapes::Shapes;
use crate::snapshot::{
    Autoscaler, Deployment, Namespace, Node, Pdb, Pod, PodGroup, PriorityClass, ResourceQuota,
    SnapshotParts,
};
use serde::de::IgnoredAny;
use serde::Deserialize;

/// Bytes gathered before they are decoded (an item cut by the end waits for the next ones).
const WINDOW: usize = 1 << 20;

/// Where a list response's reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the top-level `{`.
    Open,
    /// After `{`: a key or `}`.
    FirstKey,
    /// After a `,`: a key.
    Key,
    /// After a value: `,` or `}`.
    AfterValue,
    /// Inside `items`: an item (or `]` when none was read yet), or else `,` or `]`.
    Items { want_item: bool, any: bool },
    /// After the closing `}`.
    Done,
}

/// What one step of a list response's reader leads to.
enum Flow {
    /// Read on from this position.
    At(usize),
    /// The bytes end inside what comes next: keep them from this position.
    Wait(usize),
    /// An error at this position.
    Fail(usize, String),
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawListMeta {
    resource_version: String,
    #[serde(rename = "continue")]
    continue_token: String,
}

/// Decodes one list response pushed in pieces, each item converted as soon as its last
/// byte is in. Holds the model and less than one window of the response's text.
pub struct ListDecoder {
    what: String,
    defaults: ObjectType,
    buf: Vec<u8>,
    /// Decode once `buf` holds this many bytes.
    next_at: usize,
    /// Bytes of the response before `buf[0]`.
    read: usize,
    state: State,
    index: usize,
    parts: SnapshotParts,
    shapes: Shapes,
    meta: RawListMeta,
    /// Whether the top-level object had `items` (an array, or null for none): a List's
    /// answer always has it.
    items_seen: bool,
    /// The top-level `kind`, when given.
    kind: Option<String>,
}

impl ListDecoder {
    /// `what` names the response in errors (`the API's pods list`); items without a type
    /// are `defaults`.
    pub fn new(what: impl Into<String>, defaults: ObjectType) -> Self {
        ListDecoder {
            what: what.into(),
            defaults,
            buf: Vec::new(),
            next_at: WINDOW,
            read: 0,
            state: State::Open,
            index: 0,
            parts: SnapshotParts::default(),
            shapes: Shapes::default(),
            meta: RawListMeta::default(),
            items_seen: false,
            kind: None,
        }
    }

    /// The next bytes of the response.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= self.next_at {
            self.decode(false)?;
        }
        Ok(())
    }

    /// The response is over: everything in it must have been read.
    pub fn finish(mut self) -> Result<DecodedList, SnapshotError> {
        self.decode(true)?;
        if self.state != State::Done {
            return Err(self.error(self.buf.len(), "the response ended before the list did"));
        }
        // `{}`, or an object that is not a List: not an empty cluster, but an answer that is
        // not what was asked for (a proxy's, or a server that is not an API server).
        if let Some(kind) = self.kind.as_deref().filter(|k| !k.ends_with("List")) {
            return Err(self.refused(format!("the answer is a {kind:?}, not a list")));
        }
        if !self.items_seen {
            return Err(self.refused("the answer is not a list: it has no `items`".into()));
        }
        Ok(DecodedList {
            parts: self.parts,
            resource_version: self.meta.resource_version,
            continue_token: self.meta.continue_token,
        })
    }

    fn error(&self, at: usize, message: impl std::fmt::Display) -> SnapshotError {
        SnapshotError::Response {
            what: self.what.clone(),
            message: format!("at byte {}: {message}", self.read + at),
        }
    }

    fn refused(&self, message: String) -> SnapshotError {
        SnapshotError::Response {
            what: self.what.clone(),
            message,
        }
    }

    fn decode(&mut self, at_end: bool) -> Result<(), SnapshotError> {
        let buf = std::mem::take(&mut self.buf);
        let result = self.decode_in(&buf, at_end);
        self.buf = buf;
        let used = result?;
        self.buf.drain(..used);
        self.read += used;
        // An item larger than the window: wait for twice what is there before trying again.
        self.next_at = WINDOW.max(2 * self.buf.len());
        Ok(())
    }

    /// Reads what `buf` holds; returns how many bytes were used.
    fn decode_in(&mut self, buf: &[u8], at_end: bool) -> Result<usize, SnapshotError> {
        let text = match std::str::from_utf8(buf) {
            Ok(text) => text,
            // A character cut by the end of the bytes so far waits for the next ones.
            Err(e) if e.error_len().is_none() && !at_end => {
                std::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or_default()
            }
            Err(e) => return Err(self.error(e.valid_up_to(), "not UTF-8 text")),
        };
        let b = text.as_bytes();
        let what = std::mem::take(&mut self.what);
        let mut parts = std::mem::take(&mut self.parts);
        let mut sink = Sink {
            file: &what,
            parts: &mut parts,
            shapes: std::mem::take(&mut self.shapes),
            error: None,
            defaults: Some(self.defaults),
        };
        let mut place = RawObject::default();
        let mut pos = 0;
        // Ok(position to keep from) or Err((position, message)).
        let outcome: Result<usize, (usize, String)> = loop {
            let p = skip_ws(b, pos);
            if p == b.len() {
                break Ok(p);
            }
            let flow = match self.state {
                State::Open if b[p] == b'{' => {
                    self.state = State::FirstKey;
                    Flow::At(p + 1)
                }
                State::Open => Flow::Fail(p, "expected a JSON object (a List)".into()),
                State::FirstKey if b[p] == b'}' => {
                    self.state = State::Done;
                    Flow::At(p + 1)
                }
                State::FirstKey | State::Key => self.member(text, p),
                State::AfterValue => match b[p] {
                    b',' => {
                        self.state = State::Key;
                        Flow::At(p + 1)
                    }
                    b'}' => {
                        self.state = State::Done;
                        Flow::At(p + 1)
                    }
                    _ => Flow::Fail(p, "expected ',' or '}'".into()),
                },
                State::Items {
                    want_item: true,
                    any,
                } => self.list_item(text, p, any, &mut place, &mut sink),
                State::Items {
                    want_item: false, ..
                } => match b[p] {
                    b',' => {
                        self.state = State::Items {
                            want_item: true,
                            any: true,
                        };
                        Flow::At(p + 1)
                    }
                    b']' => {
                        self.state = State::AfterValue;
                        Flow::At(p + 1)
                    }
                    _ => Flow::Fail(p, "expected ',' or ']' between items".into()),
                },
                State::Done => Flow::Fail(p, "text after the end of the list".into()),
            };
            match flow {
                Flow::At(next) => pos = next,
                Flow::Wait(keep) => break Ok(keep),
                Flow::Fail(at, message) => break Err((at, message)),
            }
        };
        let conversion = sink.error.take();
        self.shapes = std::mem::take(&mut sink.shapes);
        drop(sink);
        drop(place);
        self.parts = parts;
        self.what = what;
        match outcome {
            Ok(keep) if at_end && keep < b.len() => {
                Err(self.error(keep, "the response ended inside a value"))
            }
            Ok(keep) => Ok(keep),
            Err(_) if conversion.is_some() => Err(conversion.expect("checked")),
            Err((at, message)) => Err(self.error(at, message)),
        }
    }
    /// A member of the top-level object at `p` (its key, then its value).
    fn member(&mut self, text: &str, p: usize) -> Flow {
        let b = text.as_bytes();
        let (key, after) = match step::<Str<'_>>(text, p) {
            Step::Done(k, a) => (k, a),
            Step::Short => return Flow::Wait(p),
            Step::Invalid => return Flow::Fail(p, "expected a key".into()),
        };
        let colon = skip_ws(b, after);
        match b.get(colon) {
            None => return Flow::Wait(p),
            Some(b':') => {}
            Some(_) => return Flow::Fail(colon, "expected ':'".into()),
        }
        let v = skip_ws(b, colon + 1);
        if v == b.len() {
            return Flow::Wait(p);
        }
        let read = match &*key {
            "items" if b[v] == b'[' => {
                self.items_seen = true;
                self.state = State::Items {
                    want_item: true,
                    any: false,
                };
                return Flow::At(v + 1);
            }
            "items" => step::<Option<[IgnoredAny; 0]>>(text, v).map(|_| {
                self.items_seen = true;
                Ok(())
            }),
            "metadata" => step::<RawListMeta>(text, v).map(|m| {
                self.meta = m;
                Ok(())
            }),
            "kind" => step::<Str<'_>>(text, v).map(|k| {
                if &*k == "Status" {
                    Err(())
                } else {
                    self.kind = Some(String::from(&*k));
                    Ok(())
                }
            }),
            _ => step::<IgnoredAny>(text, v).map(|_| Ok(())),
        };
        match read {
            Step::Done(Err(()), _) => {
                Flow::Fail(v, "the API server answered a Status, not a list".into())
            }
            Step::Done(_, after) => {
                self.state = State::AfterValue;
                Flow::At(after)
            }
            Step::Short => Flow::Wait(p),
            Step::Invalid => Flow::Fail(
                v,
                format!("the value of {:?} is not valid JSON of its kind", &*key),
            ),
        }
    }

    /// An item of `items` at `p` (or `]` when none was read yet).
    fn list_item<'t>(
        &mut self,
        text: &'t str,
        p: usize,
        any: bool,
        place: &mut RawObject<'t>,
        sink: &mut Sink<'_>,
    ) -> Flow {
        if !any && text.as_bytes()[p] == b']' {
            self.state = State::AfterValue;
            return Flow::At(p + 1);
        }
        match item(text, p, place, sink, self.index, None) {
            Step::Done(Ok(()), after) => {
                self.index += 1;
                self.state = State::Items {
                    want_item: false,
                    any: true,
                };
                Flow::At(after)
            }
            Step::Done(Err(()), _) => Flow::Fail(p, String::new()),
            Step::Short => Flow::Wait(p),
            Step::Invalid => {
                let why = serde_json::from_str::<Box<RawObject<'_>>>(&text[p..])
                    .err()
                    .map_or_else(|| "not a JSON object".to_string(), |e| e.to_string());
                Flow::Fail(p, format!("item #{}: {why}", self.index))
            }
        }
    }
}

/// The reader of a list response in the encoding the server chose (its Content-Type).
pub enum ListReader {
    Json(ListDecoder),
    Proto(ProtoListDecoder),
}

impl ListReader {
    /// For a response of `content_type` (protobuf, for the kinds [`super::proto`] reads;
    /// else JSON).
    pub fn new(what: String, defaults: ObjectType, content_type: &str) -> Self {
        if content_type.starts_with(proto::MEDIA_TYPE) {
            if let Some(d) = ProtoListDecoder::new(what.clone(), defaults) {
                return ListReader::Proto(d);
            }
        }
        ListReader::Json(ListDecoder::new(what, defaults))
    }

    pub fn push(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        match self {
            ListReader::Json(d) => d.push(bytes),
            ListReader::Proto(d) => d.push(bytes),
        }
    }

    pub fn finish(self) -> Result<DecodedList, SnapshotError> {
        match self {
            ListReader::Json(d) => d.finish(),
            ListReader::Proto(d) => d.finish(),
        }
    }
}

/// What a watch event says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    /// Only a newer resourceVersion to resume from.
    Bookmark,
    /// The watch failed (`object` is a Status; 410 Gone: the version is too old, list again).
    Error,
}

impl EventType {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "ADDED" => EventType::Added,
            "MODIFIED" => EventType::Modified,
            "DELETED" => EventType::Deleted,
            "BOOKMARK" => EventType::Bookmark,
            "ERROR" => EventType::Error,
            _ => return None,
        })
    }
}

/// An object of a kind the planner reads, in the compact model.
#[derive(Debug, Clone)]
pub enum Object {
    Node(Node),
    Pod(Box<Pod>),
    Pdb(Pdb),
    Namespace(Namespace),
    PriorityClass(PriorityClass),
    PodGroup(PodGroup),
    Deployment(Deployment),
    Autoscaler(Autoscaler),
    ResourceQuota(ResourceQuota),
}

impl Object {
    /// The single object of `parts`, if it holds one.
    fn take_one(mut parts: SnapshotParts) -> Option<Object> {
        if let Some(n) = parts.nodes.pop() {
            return Some(Object::Node(n));
        }
        if let Some(p) = parts.pods.pop() {
            return Some(Object::Pod(Box::new(p)));
        }
        if let Some(p) = parts.pdbs.pop() {
            return Some(Object::Pdb(p));
        }
        if let Some(n) = parts.namespaces.pop() {
            return Some(Object::Namespace(n));
        }
        if let Some(c) = parts.priority_classes.pop() {
            return Some(Object::PriorityClass(c));
        }
        if let Some(g) = parts.pod_groups.pop() {
            return Some(Object::PodGroup(g));
        }
        let w = &mut parts.workloads;
        if let Some(d) = w.deployments.pop() {
            return Some(Object::Deployment(d));
        }
        if let Some(a) = w.autoscalers.pop() {
            return Some(Object::Autoscaler(a));
        }
        w.quotas.pop().map(Object::ResourceQuota)
    }
}

/// The failure a watch's ERROR event carries.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct WatchStatus {
    pub code: u16,
    pub reason: String,
    pub message: String,
}

/// One watch event, decoded.
#[derive(Debug)]
pub struct Event {
    pub kind: EventType,
    /// The object of an ADDED, MODIFIED or DELETED event (None for a kind the planner does
    /// not read).
    pub object: Option<Object>,
    /// The object's `metadata.resourceVersion` (a bookmark's too): where to resume.
    pub resource_version: String,
    /// An ERROR event's Status.
    pub status: Option<WatchStatus>,
    /// A bookmark that ends the initial events of a watch that streams its list
    /// (`sendInitialEvents`), annotated `k8s.io/initial-events-end: "true"`.
    pub initial_events_end: bool,
}

/// Decodes one watch event (one line of a watch response); `what` names the watch in errors,
/// objects without a type are `defaults`.
pub fn decode_event(what: &str, defaults: ObjectType, line: &str) -> Result<Event, SnapshotError> {
    let error = |at: usize, message: &str| SnapshotError::Response {
        what: what.to_string(),
        message: format!("watch event at byte {at}: {message}: {}", preview(line)),
    };
    let b = line.as_bytes();
    let mut pos = skip_ws(b, 0);
    if b.get(pos) != Some(&b'{') {
        return Err(error(pos, "expected a JSON object"));
    }
    pos += 1;
    let mut kind: Option<EventType> = None;
    let mut object_at: Option<usize> = None;
    let mut event = Event {
        kind: EventType::Bookmark,
        object: None,
        resource_version: String::new(),
        status: None,
        initial_events_end: false,
    };
    let mut first = true;
    loop {
        pos = skip_ws(b, pos);
        match b.get(pos) {
            Some(b'}') => {
                pos += 1;
                break;
            }
            Some(b',') if !first => pos = skip_ws(b, pos + 1),
            _ if first => {}
            _ => return Err(error(pos, "expected ',' or '}'")),
        }
        first = false;
        let Step::Done(key, after) = step::<Str<'_>>(line, pos) else {
            return Err(error(pos, "expected a key"));
        };
        pos = skip_ws(b, after);
        if b.get(pos) != Some(&b':') {
            return Err(error(pos, "expected ':'"));
        }
        pos = skip_ws(b, pos + 1);
        match &*key {
            "type" => {
                let Step::Done(t, after) = step::<Str<'_>>(line, pos) else {
                    return Err(error(pos, "the event's type is not a string"));
                };
                kind = Some(EventType::parse(&t).ok_or_else(|| error(pos, "unknown event type"))?);
                pos = after;
            }
            "object" => {
                // The API server writes the type first; if not, the object is read after.
                object_at = Some(pos);
                let end = match kind {
                    Some(k) => event_object(what, defaults, line, pos, k, &mut event)?,
                    None => None,
                };
                pos = match end {
                    Some(end) => end,
                    None => match step::<IgnoredAny>(line, pos) {
                        Step::Done(_, after) => after,
                        _ => return Err(error(pos, "the event's object is not valid JSON")),
                    },
                };
                if kind.is_some() {
                    object_at = None;
                }
            }
            _ => match step::<IgnoredAny>(line, pos) {
                Step::Done(_, after) => pos = after,
                _ => return Err(error(pos, "not valid JSON")),
            },
        }
    }
    if skip_ws(b, pos) != b.len() {
        return Err(error(pos, "text after the event"));
    }
    let kind = kind.ok_or_else(|| error(0, "the event has no type"))?;
    event.kind = kind;
    if let Some(at) = object_at {
        event_object(what, defaults, line, at, kind, &mut event)?;
    }
    Ok(event)
}

/// A bookmark's object: its metadata; anything else in it is skipped unread.
#[derive(Deserialize)]
struct BookmarkObject<'a> {
    #[serde(borrow, default)]
    metadata: RawMeta<'a>,
}

/// Reads the event's object at `pos` into `event`; returns the position after it.
fn event_object(
    what: &str,
    defaults: ObjectType,
    line: &str,
    pos: usize,
    kind: EventType,
    event: &mut Event,
) -> Result<Option<usize>, SnapshotError> {
    let error = |message: String| SnapshotError::Response {
        what: what.to_string(),
        message: format!("{kind:?} watch event: {message}: {}", preview(line)),
    };
    match kind {
        // A bookmark's object has only a version and maybe an annotation; only its metadata
        // is read (the rest is a shell of the kind's fields, such as a pod's
        // `"spec":{"containers":null}`, which means nothing here).
        EventType::Bookmark => match step::<BookmarkObject<'_>>(line, pos) {
            Step::Done(b, after) => {
                event.resource_version = b.metadata.resource_version().to_string();
                event.initial_events_end = b.metadata.annotations.initial_events_end();
                Ok(Some(after))
            }
            _ => Err(error("the bookmark's object is not valid".into())),
        },
        EventType::Error => match step::<WatchStatus>(line, pos) {
            Step::Done(s, after) => {
                event.status = Some(s);
                Ok(Some(after))
            }
            _ => Err(error("the error's Status is not valid".into())),
        },
        EventType::Added | EventType::Modified | EventType::Deleted => {
            let mut parts = SnapshotParts::default();
            let mut sink = Sink {
                file: what,
                parts: &mut parts,
                shapes: Shapes::default(),
                error: None,
                defaults: Some(defaults),
            };
            let mut place = RawObject::default();
            let read = item(
                line,
                pos,
                &mut place,
                &mut sink,
                0,
                Some(&mut event.resource_version),
            );
            let conversion = sink.error.take();
            drop(sink);
            match read {
                Step::Done(Ok(()), after) => {
                    event.object = Object::take_one(parts);
                    Ok(Some(after))
                }
                Step::Done(Err(()), _) => {
                    Err(conversion
                        .unwrap_or_else(|| error("the object could not be converted".into())))
                }
                Step::Short | Step::Invalid => {
                    let why = serde_json::from_str::<Box<RawObject<'_>>>(&line[pos..])
                        .err()
                        .map_or_else(|| "not a JSON object".to_string(), |e| e.to_string());
                    Err(error(why))
                }
            }
        }
    }
}

/// The start of a line, for an error message.
fn preview(line: &str) -> &str {
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: ObjectType = ObjectType {
        kind: "Pod",
        api_version: "v1",
    };
    const NODE: ObjectType = ObjectType {
        kind: "Node",
        api_version: "v1",
    };

    fn pod_json(ns: &str, name: &str, rv: u32) -> String {
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"{ns}","uid":"u-{name}","resourceVersion":"{rv}","managedFields":[{{"manager":"m","fieldsV1":{{"f:spec":{{}}}}}}]}},"spec":{{"nodeName":"n1","containers":[{{"name":"c","image":"img","resources":{{"requests":{{"cpu":"100m","memory":"64Mi"}}}}}}]}},"status":{{"phase":"Running"}}}}"#
        )
    }

    fn pod_list(n: usize) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| pod_json("ns", &format!("p{i:05}"), 10 + i as u32))
            .collect();
        format!(
            r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"777"}},"items":[{}]}}"#,
            items.join(",")
        )
    }

    /// Pushes `text` in pieces of `piece` bytes.
    fn decode_in_pieces(text: &str, piece: usize) -> Result<DecodedList, SnapshotError> {
        let mut d = ListDecoder::new("the API's pods list", POD);
        for chunk in text.as_bytes().chunks(piece) {
            d.push(chunk)?;
        }
        d.finish()
    }

    #[test]
    fn a_list_read_in_any_pieces_gives_the_same_pods_as_the_file_reader() {
        let text = pod_list(3000);
        // The file reader needs each item's kind; the API leaves it out of typed lists.
        let as_file = text
            .replace(
                r#"{"metadata""#,
                r#"{"apiVersion":"v1","kind":"Pod","metadata""#,
            )
            .replacen(
                r#""items":["#,
                r#""items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}},"#,
                1,
            );
        let file = crate::snapshot::decode::load_bytes("f.json", as_file.as_bytes()).unwrap();
        let want: Vec<String> = file.pods.iter().map(|p| format!("{p:?}")).collect();
        for piece in [1, 7, 4096, 1 << 20, text.len()] {
            let got = decode_in_pieces(&text, piece).unwrap();
            assert_eq!(got.resource_version, "777");
            assert!(got.continue_token.is_empty());
            let pods: Vec<String> = got.parts.pods.iter().map(|p| format!("{p:?}")).collect();
            assert_eq!(pods, want, "piece {piece}");
        }
    }

    #[test]
    fn empty_lists_and_null_items_are_empty() {
        for text in [
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}"#,
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":null}"#,
            r#" { "metadata" : {"resourceVersion":"5"}, "items" : [ ] } "#,
        ] {
            let got = decode_in_pieces(text, 3).unwrap();
            assert!(got.parts.pods.is_empty());
            assert_eq!(got.resource_version, "5");
        }
    }

    #[test]
    fn a_cut_or_broken_response_is_an_error_naming_the_list() {
        let text = pod_list(20);
        for cut in [1, text.len() / 2, text.len() - 2, text.len() - 1] {
            let err = decode_in_pieces(&text[..cut], 100).unwrap_err().to_string();
            assert!(err.contains("the API's pods list"), "{err}");
            assert!(err.contains("ended"), "cut at {cut}: {err}");
        }
        let broken = text.replacen(r#""cpu":"100m""#, r#""cpu":"lots""#, 1);
        let err = decode_in_pieces(&broken, 100).unwrap_err().to_string();
        assert!(err.contains("Pod ns/p00000"), "{err}");
        assert!(err.contains("requests.cpu"), "{err}");
        let bad = text.replacen(r#"},{"metadata""#, r#"},,{"metadata""#, 1);
        let err = decode_in_pieces(&bad, 100).unwrap_err().to_string();
        assert!(err.contains("item #1"), "{err}");
        let trailing = format!("{text} x");
        assert!(decode_in_pieces(&trailing, 100).is_err());
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","code":410}"#;
        let err = decode_in_pieces(status, 100).unwrap_err().to_string();
        assert!(err.contains("Status"), "{err}");
    }

    #[test]
    fn an_answer_that_is_not_a_list_is_refused_not_read_as_empty() {
        for (text, says) in [
            ("{}", "no `items`"),
            (" { } ", "no `items`"),
            (r#"{"metadata":{"resourceVersion":"5"}}"#, "no `items`"),
            (
                r#"{"kind":"PodList","apiVersion":"v1","metadata":{}}"#,
                "no `items`",
            ),
            (
                r#"{"kind":"Pod","apiVersion":"v1","items":[]}"#,
                "\"Pod\", not a list",
            ),
            (r#"{"kind":"Status","apiVersion":"v1"}"#, "Status"),
        ] {
            let err = decode_in_pieces(text, 2).unwrap_err().to_string();
            assert!(err.contains("the API's pods list"), "{text}: {err}");
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn watch_events_decode_into_the_model() {
        let line = format!(
            r#"{{"type":"MODIFIED","object":{}}}"#,
            pod_json("ns", "a", 42)
        );
        let e = decode_event("the pods watch", POD, &line).unwrap();
        assert_eq!(e.kind, EventType::Modified);
        assert_eq!(e.resource_version, "42");
        match e.object {
            Some(Object::Pod(p)) => {
                assert_eq!((&*p.namespace, &*p.name), ("ns", "a"));
                assert_eq!(p.requests.get("cpu"), 100);
            }
            other => panic!("{other:?}"),
        }
        // The object before the type is read too.
        let line = format!(
            r#"{{"object":{},"type":"DELETED"}}"#,
            pod_json("ns", "b", 43)
        );
        let e = decode_event("the pods watch", POD, &line).unwrap();
        assert_eq!(e.kind, EventType::Deleted);
        assert!(matches!(e.object, Some(Object::Pod(p)) if &*p.name == "b"));
        let node = r#"{"type":"ADDED","object":{"metadata":{"name":"n1","resourceVersion":"9"},"status":{"allocatable":{"cpu":"4"},"conditions":[{"type":"Ready","status":"False"}]}}}"#;
        let e = decode_event("the nodes watch", NODE, node).unwrap();
        assert!(
            matches!(e.object, Some(Object::Node(n)) if !n.ready && n.allocatable.get("cpu") == 4000)
        );
        // As kube-apiserver 1.36 sends them: the kind's fields as an empty shell.
        let shell = r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"4285"},"spec":{"containers":null},"status":{}}}"#;
        let e = decode_event("the pods watch", POD, shell).unwrap();
        assert_eq!(e.kind, EventType::Bookmark);
        assert_eq!(e.resource_version, "4285");
        assert!(!e.initial_events_end);
        let bookmark = r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"1234","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        let e = decode_event("the pods watch", POD, bookmark).unwrap();
        assert_eq!(
            (e.kind, e.resource_version.as_str()),
            (EventType::Bookmark, "1234")
        );
        assert!(e.initial_events_end);
        let plain = bookmark.replace(r#","annotations":{"k8s.io/initial-events-end":"true"}"#, "");
        let e = decode_event("the pods watch", POD, &plain).unwrap();
        assert_eq!(e.resource_version, "1234");
        assert!(!e.initial_events_end);
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        let e = decode_event("the pods watch", POD, gone).unwrap();
        assert_eq!(e.kind, EventType::Error);
        assert_eq!(e.status.unwrap().code, 410);
    }

    #[test]
    fn broken_watch_events_are_errors() {
        for line in [
            "",
            "{",
            r#"{"type":"SOMETHING","object":{}}"#,
            r#"{"object":{"metadata":{"name":"a"}}}"#,
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"containers":[{"resources":{"requests":{"cpu":"x"}}}]}}}"#,
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}} extra"#,
        ] {
            assert!(decode_event("w", POD, line).is_err(), "{line}");
        }
    }
}
