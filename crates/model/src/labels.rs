//! Labels and label selectors, compiled once and matched many times.
//!
//! Two input forms: the structured `metav1.LabelSelector` (matchLabels, matchExpressions)
//! and the string form used by `--node-selector`-like fields (`env=prod,zone in (a,b),!gpu`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A sorted list of key/value pairs; lookups are binary searches. Packed: every key and
/// value back to back in one string, with their end offsets, so a pod's labels take three
/// allocations instead of two per label (a large cluster has millions of labels), and
/// equal sets can share them ([`Labels::share`]). One pointer (a pod has two sets, and
/// 150,000 pods are kept in one list); none when empty.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels(Option<Arc<Packed>>);

#[derive(PartialEq, Eq, Hash)]
struct Packed {
    /// key0 value0 key1 value1 ...
    text: Box<str>,
    /// The end offset in `text` of each key and value, in the order above.
    ends: Box<[u32]>,
}

impl Labels {
    /// Sorted by key (then value); of equal keys the smallest value stays.
    pub fn new(mut pairs: Vec<(Box<str>, Box<str>)>) -> Self {
        pairs.sort();
        pairs.dedup_by(|a, b| a.0 == b.0);
        Self::pack(pairs.iter().map(|(k, v)| (&**k, &**v)))
    }

    /// From pairs in input order where a later key replaces an earlier one (as decoding a
    /// map does).
    pub fn from_input_order<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        if pairs.len() > 1 {
            pairs.reverse();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            pairs.dedup_by(|a, b| a.0 == b.0);
        }
        Self::pack(pairs.iter().copied())
    }

    /// Pairs already sorted by key, without duplicates.
    fn pack<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)> + Clone) -> Self {
        let (mut bytes, mut count) = (0, 0);
        for (k, v) in pairs.clone() {
            bytes += k.len() + v.len();
            count += 2;
        }
        if count == 0 {
            return Labels::default();
        }
        let mut text = String::with_capacity(bytes);
        let mut ends = Vec::with_capacity(count);
        for (k, v) in pairs {
            text.push_str(k);
            ends.push(text.len() as u32);
            text.push_str(v);
            ends.push(text.len() as u32);
        }
        let labels = Labels(Some(Arc::new(Packed {
            text: text.into(),
            ends: ends.into(),
        })));
        debug_assert!(
            labels
                .iter()
                .zip(labels.iter().skip(1))
                .all(|(a, b)| a.0 < b.0),
            "pairs sorted by key, without duplicates"
        );
        labels
    }

    /// The packed pairs; asked only for a pair below [`Labels::len`].
    fn packed(&self) -> &Packed {
        self.0.as_deref().expect("a pair of non-empty labels")
    }

    fn key(&self, pair: usize) -> &str {
        let p = self.packed();
        let start = if pair == 0 {
            0
        } else {
            p.ends[2 * pair - 1] as usize
        };
        &p.text[start..p.ends[2 * pair] as usize]
    }

    fn value(&self, pair: usize) -> &str {
        let p = self.packed();
        &p.text[p.ends[2 * pair] as usize..p.ends[2 * pair + 1] as usize]
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.value(mid)),
            }
        }
        None
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.len()).map(|i| (self.key(i), self.value(i)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Takes `other`'s storage when both hold the same labels (the pods of one workload
    /// usually do), so that one copy serves both.
    pub fn share(&mut self, other: &Labels) {
        if *self == *other {
            *self = other.clone();
        }
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.ends.len() / 2)
    }
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The wire form of `metav1.LabelSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorSpec {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Requirement {
    In(Box<str>, Vec<Box<str>>),
    NotIn(Box<str>, Vec<Box<str>>),
    Exists(Box<str>),
    DoesNotExist(Box<str>),
    /// Used by node affinity: numeric comparison of the label value.
    Gt(Box<str>, i64),
    Lt(Box<str>, i64),
}

impl Requirement {
    pub fn matches(&self, labels: &Labels) -> bool {
        match self {
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.iter().any(|x| **x == *v)),
            Requirement::NotIn(k, vs) => {
                labels.get(k).is_none_or(|v| !vs.iter().any(|x| **x == *v))
            }
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
            Requirement::Gt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

/// A compiled selector: all requirements must hold. An empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    reqs: Vec<Requirement>,
    /// A selector that matches nothing (a nil `LabelSelector` in some APIs).
    nothing: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("matchExpressions[{index}]: operator {operator:?} is not one of In, NotIn, Exists, DoesNotExist")]
    BadOperator { index: usize, operator: String },
    #[error("matchExpressions[{index}]: operator {operator} needs at least one value")]
    MissingValues { index: usize, operator: String },
    #[error("matchExpressions[{index}]: operator {operator} takes no values")]
    UnexpectedValues { index: usize, operator: String },
    #[error("selector {text:?}: {why}")]
    BadString { text: String, why: String },
}

impl Selector {
    pub fn everything() -> Self {
        Selector::default()
    }

    pub fn nothing() -> Self {
        Selector {
            reqs: Vec::new(),
            nothing: true,
        }
    }

    /// The requirements, all of which must hold.
    pub fn requirements(&self) -> &[Requirement] {
        &self.reqs
    }

    /// Whether this is the selector that matches nothing.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    pub fn from_requirements(reqs: Vec<Requirement>) -> Self {
        Selector {
            reqs,
            nothing: false,
        }
    }

    pub fn compile(spec: &LabelSelectorSpec) -> Result<Self, SelectorError> {
        let mut reqs = Vec::with_capacity(spec.match_labels.len() + spec.match_expressions.len());
        for (k, v) in &spec.match_labels {
            reqs.push(Requirement::In(k.as_str().into(), vec![v.as_str().into()]));
        }
        for (index, e) in spec.match_expressions.iter().enumerate() {
            let values: Vec<Box<str>> = e.values.iter().map(|v| v.as_str().into()).collect();
            let key: Box<str> = e.key.as_str().into();
            let r = match e.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(SelectorError::MissingValues {
                        index,
                        operator: e.operator.clone(),
                    })
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err(SelectorError::UnexpectedValues {
                        index,
                        operator: e.operator.clone(),
                    })
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                _ => {
                    return Err(SelectorError::BadOperator {
                        index,
                        operator: e.operator.clone(),
                    })
                }
            };
            reqs.push(r);
        }
        Ok(Selector {
            reqs,
            nothing: false,
        })
    }

    /// Parses the string form: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
    /// joined by commas.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let bad = |why: &str| SelectorError::BadString {
            text: text.to_string(),
            why: why.to_string(),
        };
        let mut reqs = Vec::new();
        // split on commas that are not inside parentheses
        let mut parts = Vec::new();
        let mut depth = 0usize;
        let mut start = 0usize;
        for (i, c) in text.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.checked_sub(1).ok_or_else(|| bad("unbalanced ')'"))?,
                ',' if depth == 0 => {
                    parts.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if depth != 0 {
            return Err(bad("unbalanced '('"));
        }
        parts.push(&text[start..]);
        for part in parts {
            let p = part.trim();
            if p.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(bad("empty requirement"));
            }
            let set_op = |p: &str, op: &str| -> Option<(String, Vec<Box<str>>)> {
                let idx = p.find(&format!(" {op} "))?;
                let key = p[..idx].trim().to_string();
                let rest = p[idx + op.len() + 2..].trim();
                let inner = rest.strip_prefix('(')?.strip_suffix(')')?;
                let vals = inner
                    .split(',')
                    .map(|v| v.trim())
                    .filter(|v| !v.is_empty())
                    .map(Into::into)
                    .collect();
                Some((key, vals))
            };
            if let Some((k, vs)) = set_op(p, "notin") {
                reqs.push(Requirement::NotIn(k.into(), vs));
            } else if let Some((k, vs)) = set_op(p, "in") {
                reqs.push(Requirement::In(k.into(), vs));
            } else if let Some((k, v)) = p.split_once("!=") {
                reqs.push(Requirement::NotIn(k.trim().into(), vec![v.trim().into()]));
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                let (k, v) = (k.trim(), v.trim());
                if k.is_empty() {
                    return Err(bad("a requirement has an empty key"));
                }
                reqs.push(Requirement::In(k.into(), vec![v.into()]));
            } else if let Some(k) = p.strip_prefix('!') {
                reqs.push(Requirement::DoesNotExist(k.trim().into()));
            } else if p.chars().all(|c| c.is_alphanumeric() || "-_./".contains(c)) {
                reqs.push(Requirement::Exists(p.into()));
            } else {
                return Err(bad(&format!("cannot parse requirement {p:?}")));
            }
        }
        Ok(Selector {
            reqs,
            nothing: false,
        })
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        !self.nothing && self.reqs.iter().all(|r| r.matches(labels))
    }

    pub fn is_empty(&self) -> bool {
        !self.nothing && self.reqs.is_empty()
    }

    /// A `key=value` label every object the selector matches carries (from a matchLabels
    /// entry, or an `In` with one value), if there is one: an index by label finds the
    /// candidates.
    pub fn required_label(&self) -> Option<(&str, &str)> {
        if self.nothing {
            return None;
        }
        self.reqs.iter().find_map(|r| match r {
            Requirement::In(k, vs) if vs.len() == 1 => Some((&**k, &*vs[0])),
            _ => None,
        })
    }
}

/// The name part of a qualified name, and a non-empty label value (apimachinery's
/// `IsQualifiedName` name part, `IsValidLabelValue`): up to 63 letters, digits, `-`, `_` or
/// `.`, beginning and ending with a letter or digit.
pub fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A qualified name, the shape of a label key or a taint key (apimachinery's
/// `IsQualifiedName`): an optional DNS-subdomain prefix (at most 253 characters, dot-separated
/// labels of letters, digits and `-`) and `/`, then a [name part](is_name_part).
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        None => is_name_part(s),
        Some((prefix, name)) => {
            !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|label| {
                    let l = label.as_bytes();
                    !l.is_empty()
                        && l.len() <= 63
                        && l[0].is_ascii_alphanumeric()
                        && l[l.len() - 1].is_ascii_alphanumeric()
                        && l.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                })
                && is_name_part(name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_apimachinery() {
        for ok in [
            "app",
            "a",
            "team.name_1",
            "example.com/team",
            "k8s.io/a-b",
            &"x".repeat(63),
        ] {
            assert!(is_qualified_name(ok), "{ok:?}");
        }
        for bad in [
            "",
            "-app",
            "app-",
            "/team",
            "example.com/",
            "exa_mple.com/team",
            "a..b/c",
            "a/b/c",
            "team name",
            &"x".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad:?}");
        }
        let long_prefix = format!("{}/a", vec!["x".repeat(63); 4].join("."));
        assert_eq!(long_prefix.len(), 257);
        assert!(!is_qualified_name(&long_prefix));
        assert!(is_name_part("v1.2_x"));
        assert!(!is_name_part("example.com/x"));
        assert!(!is_name_part(""));
    }

    #[test]
    fn equal_labels_share_their_storage_and_others_keep_theirs() {
        let set = |pairs: &[(&str, &str)]| Labels::from_input_order(pairs.iter().copied());
        let first = set(&[("app", "web"), ("pod-template-hash", "h1")]);
        let mut same = set(&[("pod-template-hash", "h1"), ("app", "web")]);
        let mut other = set(&[("app", "web"), ("pod-template-hash", "h2")]);
        let shared =
            |a: &Labels, b: &Labels| Arc::ptr_eq(a.0.as_ref().unwrap(), b.0.as_ref().unwrap());
        assert!(!shared(&first, &same));
        same.share(&first);
        assert!(shared(&first, &same));
        assert_eq!(same.get("app"), Some("web"));
        other.share(&first);
        assert!(!shared(&first, &other));
        assert_eq!(other.get("pod-template-hash"), Some("h2"));
    }

    #[test]
    fn packed_labels_sort_find_and_list_their_pairs() {
        let l = Labels::new(vec![
            ("zone".into(), "b".into()),
            ("app".into(), "web".into()),
            ("zone".into(), "a".into()),
            ("".into(), "empty-key".into()),
            ("tier".into(), "".into()),
        ]);
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            vec![
                ("", "empty-key"),
                ("app", "web"),
                ("tier", ""),
                ("zone", "a")
            ]
        );
        assert_eq!(l.len(), 4);
        assert_eq!(l.get("app"), Some("web"));
        assert_eq!(l.get("tier"), Some(""));
        assert_eq!(l.get(""), Some("empty-key"));
        assert_eq!(l.get("zone"), Some("a"));
        assert_eq!(l.get("ap"), None);
        assert_eq!(l.get("zzz"), None);
        assert!(l.contains_key("tier") && !l.contains_key("web"));
        assert_eq!(
            format!("{l:?}"),
            r#"{"": "empty-key", "app": "web", "tier": "", "zone": "a"}"#
        );

        // Input order: a later key replaces an earlier one.
        let l = Labels::from_input_order([("b", "1"), ("a", "2"), ("b", "3")]);
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![("a", "2"), ("b", "3")]);
        assert_eq!(
            l,
            Labels::new(vec![("a".into(), "2".into()), ("b".into(), "3".into())])
        );

        let empty = Labels::from_input_order([]);
        assert!(empty.is_empty() && empty.get("a").is_none() && empty == Labels::default());
        assert_eq!(empty.iter().count(), 0);
    }

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::new(
            pairs
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
        )
    }

    #[test]
    fn structured_selector_matches() {
        let spec = LabelSelectorSpec {
            match_labels: [("app".to_string(), "web".to_string())].into(),
            match_expressions: vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: vec!["db".into()],
            }],
        };
        let s = Selector::compile(&spec).unwrap();
        assert!(s.matches(&labels(&[("app", "web")])));
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "fe")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "api")])));
    }

    #[test]
    fn bad_operator_is_an_error() {
        let spec = LabelSelectorSpec {
            match_labels: BTreeMap::new(),
            match_expressions: vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "Equals".into(),
                values: vec![],
            }],
        };
        assert!(matches!(
            Selector::compile(&spec),
            Err(SelectorError::BadOperator { .. })
        ));
    }

    #[test]
    fn string_selector_forms() {
        let s = Selector::parse("env=prod, zone in (a, b),!gpu,team,tier!=db").unwrap();
        assert!(s.matches(&labels(&[("env", "prod"), ("zone", "a"), ("team", "x")])));
        assert!(!s.matches(&labels(&[("env", "prod"), ("zone", "c"), ("team", "x")])));
        assert!(!s.matches(&labels(&[
            ("env", "prod"),
            ("zone", "a"),
            ("team", "x"),
            ("gpu", "1")
        ])));
        assert!(!s.matches(&labels(&[("env", "prod"), ("zone", "a")])));
        assert!(Selector::parse("").unwrap().is_empty());
        assert!(Selector::parse("a in (b").is_err());
        assert!(Selector::parse("a b c").is_err());
    }
}
