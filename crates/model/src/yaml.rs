//! YAML decoding with limits sized from the text.
//!
//! serde-saphyr's default budget (250,000 nodes, 1,000,000 events, 1,024 documents, 64 MiB of
//! scalars) guards a configuration file; a snapshot of a few thousand pods goes past it, and so
//! can a large policy. What a text can hold grows with its length (each node, event and
//! document takes at least a byte of it), so those limits are sized from the length: what
//! they still refuse is what the text cannot be. Aliases and anchors keep the library's
//! limits, which bound what a small text can expand to (an alias bomb).

use serde_saphyr::{Budget, Options};
use std::borrow::Cow;

/// serde-saphyr's options for decoding `text`.
pub fn options_for(text: &str) -> Options {
    let len = text.len();
    let defaults = Budget::default();
    let mut budget = Budget::default();
    // A node (a scalar, a sequence or a mapping) takes at least one byte; it produces at
    // most two events (start and end); a document takes at least three (`---`).
    budget.max_nodes = defaults.max_nodes.max(len.saturating_add(16));
    budget.max_events = defaults
        .max_events
        .max(len.saturating_mul(2).saturating_add(16));
    budget.max_documents = defaults.max_documents.max(len / 3 + 2);
    budget.max_total_scalar_bytes = defaults.max_total_scalar_bytes.max(len);
    let mut options = Options::default();
    options.budget = Some(budget);
    options
}

/// The message for `e` in words of the file, not of the library: what is wrong, at which
/// line, and what to do. The library's own wording speaks of its API (which function to call,
/// which Rust type to use, which option to set) and of its budget's internals; those are
/// translated here, once, for every YAML input (policy, scheduler config, snapshot).
pub fn plain_error(e: &serde_saphyr::Error) -> String {
    e.render_with_formatter(&Plain)
}

/// serde-saphyr's messages in plain words; the rest (its location and excerpt of the text)
/// as the library renders them.
struct Plain;

impl serde_saphyr::MessageFormatter for Plain {
    fn format_message<'a>(&self, err: &'a serde_saphyr::Error) -> Cow<'a, str> {
        use serde_saphyr::budget::BudgetBreach;
        use serde_saphyr::Error;
        match err {
            Error::WithSnippet { error, .. } | Error::AliasError { error, .. } => {
                self.format_message(error)
            }
            Error::MultipleDocuments { .. } => Cow::Borrowed(
                "the file holds more than one YAML document (a line `---` starts another); \
                 keep one document in this file",
            ),
            Error::NullIntoString { .. } | Error::InvalidCharNull { .. } => {
                Cow::Borrowed("no value given (null) where text is needed; give a value or remove the field")
            }
            Error::DuplicateMappingKey { key, .. } => match key {
                Some(k) => Cow::Owned(format!(
                    "a key given twice in one mapping ({k:?}); keep one of them"
                )),
                None => Cow::Borrowed("a key is given twice in one mapping; keep one of them"),
            },
            Error::Budget { breach, .. } => Cow::Owned(match breach {
                BudgetBreach::Depth { .. } => format!(
                    "the lists and mappings are nested more than {} levels deep; is it the right file?",
                    serde_saphyr::Budget::default().max_depth
                ),
                BudgetBreach::Documents { .. } => {
                    "the file holds too many YAML documents; is it the right file?".to_string()
                }
                _ => "the file holds more YAML (values, aliases or anchors) than such a file may; \
                      is it the right file?"
                    .to_string(),
            }),
            Error::SerdeInvalidType {
                unexpected,
                expected,
                ..
            }
            | Error::SerdeInvalidValue {
                unexpected,
                expected,
                ..
            } => Cow::Owned(format!(
                "found {} where {} is needed",
                plain_found(unexpected),
                plain_expected(expected)
            )),
            Error::SerdeMissingField { field, .. } => {
                Cow::Owned(format!("the field {field:?} is missing; add it"))
            }
            Error::SerdeUnknownField {
                field, expected, ..
            } => Cow::Owned(format!(
                "{field:?} is not a field here; the fields are {}",
                expected.join(", ")
            )),
            Error::SerdeUnknownVariant {
                variant, expected, ..
            } => Cow::Owned(format!(
                "{variant:?} is not allowed here; use one of {}",
                expected.join(", ")
            )),
            Error::Unexpected { expected, .. } => Cow::Owned(format!(
                "expected {}",
                match &**expected {
                    "string scalar" | "scalar" => "a single value here, not a list or a mapping",
                    "sequence start" => "a list here",
                    "mapping start" => "a mapping here",
                    other => other,
                }
            )),
            Error::Eof { .. } => Cow::Borrowed("the file ends where a value is needed"),
            _ => serde_saphyr::UserMessageFormatter.format_message(err),
        }
    }
}

/// What serde says a value is, in words of YAML.
fn plain_found(unexpected: &str) -> String {
    match unexpected {
        "map" => "a mapping".into(),
        "sequence" => "a list".into(),
        "unit value" | "unit" => "no value (null)".into(),
        "Option value" => "a value".into(),
        other => other.into(),
    }
}

/// What serde says a value should be, in words of YAML rather than of Rust's types.
fn plain_expected(expected: &str) -> String {
    let e = expected.trim();
    let word = e.split_whitespace().next().unwrap_or("");
    match word {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128"
        | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "struct" | "map" => "a mapping".into(),
        "enum" => "one of the allowed values".into(),
        "tuple" | "sequence" => "a list".into(),
        "bool" => "true or false".into(),
        "char" => "a single character".into(),
        "option" => "a value".into(),
        _ if e == "a map" => "a mapping".into(),
        _ if e == "a sequence" => "a list".into(),
        _ if e == "a boolean" => "true or false".into(),
        _ if e.starts_with("a ") || e.starts_with("an ") => e.into(),
        _ => format!("{e:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_grow_with_the_text_and_aliases_keep_theirs() {
        let small = options_for("a: 1").budget.unwrap();
        let defaults = Budget::default();
        assert_eq!(small.max_nodes, defaults.max_nodes);
        assert_eq!(small.max_documents, defaults.max_documents);
        let text = "- x\n".repeat(1_000_000);
        let large = options_for(&text).budget.unwrap();
        assert!(large.max_nodes > text.len() / 4);
        assert!(large.max_documents > text.len() / 4);
        assert_eq!(large.max_aliases, defaults.max_aliases);
        assert_eq!(large.max_anchors, defaults.max_anchors);
        let v: Vec<String> =
            serde_saphyr::from_str_with_options(&text, options_for(&text)).unwrap();
        assert_eq!(v.len(), 1_000_000);
    }

    #[test]
    fn an_alias_bomb_is_still_refused() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let r: Result<serde_json::Value, _> =
            serde_saphyr::from_str_with_options(&bomb, options_for(&bomb));
        assert!(r.is_err());
    }

    /// What the library would say about its own API or budget never reaches the user.
    #[test]
    fn library_terms_are_translated() {
        let text = "a: 1\n---\nb: 2\n";
        let e = serde_saphyr::from_str_with_options::<serde_json::Value>(text, options_for(text))
            .unwrap_err();
        let m = plain_error(&e);
        assert!(m.contains("more than one YAML document"), "{m}");
        assert!(!m.contains("from_str_multiple"), "{m}");

        let text = "a: 1\na: 2\n";
        let e = serde_saphyr::from_str_with_options::<serde_json::Value>(text, options_for(text))
            .unwrap_err();
        let m = plain_error(&e);
        assert!(
            m.contains("a key given twice in one mapping (\"a\")"),
            "{m}"
        );
        assert!(!m.contains("DuplicateKeyPolicy"), "{m}");

        let text = format!("{}1{}", "[".repeat(70), "]".repeat(70));
        let e = serde_saphyr::from_str_with_options::<serde_json::Value>(&text, options_for(&text))
            .unwrap_err();
        let m = plain_error(&e);
        assert!(m.contains("nested more than 64 levels deep"), "{m}");
        assert!(!m.contains("budget") && !m.contains("Depth {"), "{m}");

        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct S {
            name: String,
            count: u32,
        }
        let e = serde_saphyr::from_str::<S>("name: ~\ncount: 1\n").unwrap_err();
        let m = plain_error(&e);
        assert!(
            m.contains("no value given (null) where text is needed"),
            "{m}"
        );
        assert!(!m.contains("Option<"), "{m}");
        let e = serde_saphyr::from_str::<S>("name: x\ncount: [1]\n").unwrap_err();
        let m = plain_error(&e);
        assert!(m.contains("a single value here, not a list"), "{m}");
        assert!(!m.contains("u32"), "{m}");
    }
}
