//! Reading a snapshot file: what `kubectl get nodes,pods,poddisruptionbudgets,namespaces,
//! priorityclasses -A -o yaml` (or `-o json`) prints, or a multi-document YAML stream.
//! Gang schedulers' PodGroups are read too: add `podgroups.scheduling.x-k8s.io` and/or
//! `podgroups.scheduling.volcano.sh` to the kubectl command where those CRDs are installed,
//! and `podgroups.scheduling.k8s.io` for Kubernetes' own (1.37, `v1beta1` or `v1alpha3`; 1.36,
//! `v1alpha2`).
//! A pod naming a PodGroup the file lacks is treated as a gang of unknown minMember (every
//! member protected). Deployments, HorizontalPodAutoscalers and ResourceQuotas (what a
//! surge reads: add `deployments,horizontalpodautoscalers,resourcequotas`) are read too.
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
//!
//! The wing's files, each importing only those listed before it:
//! - `error`: [`SnapshotError`];
//! - `wire`: the wire shapes (`RawObject` and below) serde, the fast reader and the protobuf
//!   reader fill, with the list types [`stream`] names (`ObjectType`, `DecodedList`);
//! - `convert`: wire shapes into the model (`add_object`, one function a kind);
//! - `fast`: the hand-written JSON reader of one object;
//! - `parallel`: a large JSON List on two threads;
//! - `text`: JSON and YAML documents through serde;
//! - `proto`: the API's protobuf answers;
//! - `stream`: list responses and watch events of the API, as their bytes arrive.
//!
//! This file holds the entry points: [`load_file`], [`load_bytes`] and [`join`].

use super::{ClusterSnapshot, Pod, SnapshotParts};
use std::path::Path;

mod convert;
mod error;
mod fast;
mod parallel;
pub mod proto;
pub mod stream;
mod text;
mod wire;

#[cfg(test)]
mod tests;

pub use convert::join;
pub(crate) use convert::{quota_in_milli, share, share_template};
pub use error::SnapshotError;

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
            text::decode_json(file, bytes, first == Some(b'['), &mut parts, &mut more)?
        }
        Some(_) => {
            let text =
                std::str::from_utf8(bytes).map_err(|e| syntax(format!("not UTF-8 text: {e}")))?;
            text::decode_yaml(file, text, &mut parts)?
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
