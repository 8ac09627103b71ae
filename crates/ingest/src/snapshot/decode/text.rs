//! JSON and YAML documents read through serde: a List streams its `items` (each object
//! converted as soon as it is read), a top-level array or one object; errors name the path
//! of the field. A large JSON List is first handed to [`parallel`].

use super::convert::{add_object, Sink};
use super::error::SnapshotError;
use super::parallel;
use super::wire::{RawObject, Str};
use crate::snapshot::shapes::Shapes;
use crate::snapshot::{Pod, SnapshotParts};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// A multi-document YAML stream (or one document), each object converted into `parts`.
pub(super) fn decode_yaml(
    file: &str,
    text: &str,
    parts: &mut SnapshotParts,
) -> Result<(), SnapshotError> {
    let docs: Vec<Option<RawObject>> =
        serde_saphyr::from_multiple_with_options(text, crate::yaml::options_for(text)).map_err(
            |e| SnapshotError::Syntax {
                file: file.to_string(),
                message: format!("not valid YAML: {}", yaml_error(text, &e)),
            },
        )?;
    let mut shapes = Shapes::default();
    for (index, mut obj) in docs.into_iter().flatten().enumerate() {
        add_object(file, index, &mut obj, parts, &mut shapes, false)?;
    }
    Ok(())
}

/// Decodes a JSON object (a List or one object) or array, converting each item as it is read.
pub(super) fn decode_json(
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

pub(super) fn stream_json<'de, R: serde_json::de::Read<'de>>(
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
