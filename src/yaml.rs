//! YAML decoding with limits sized from the text.
//!
//! serde-saphyr's default budget (250,000 nodes, 1,000,000 events, 1,024 documents, 64 MiB of
//! scalars) guards a configuration file; a snapshot of a few thousand pods goes past it, and so
//! can a large policy. What a text can hold grows with its length (each node, event and
//! document takes at least a byte of it), so those limits are sized from the length: what
//! they still refuse is what the text cannot be. Aliases and anchors keep the library's
//! limits, which bound what a small text can expand to (an alias bomb).

use serde_saphyr::{Budget, Options};

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

/// The library's message for `e`, less its advice on its own options: a key given twice in
/// one mapping is an error of the file, not of the reader's settings.
pub fn plain_error(e: &serde_saphyr::Error) -> String {
    e.to_string().replace(
        ", set DuplicateKeyPolicy in Options if acceptable",
        " (a key given twice in one mapping)",
    )
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
}
