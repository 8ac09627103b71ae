//! Arg shapes several upstream plugins share: include/exclude lists (`namespaces`,
//! PodLifeTime's `ownerKinds`), `priorityThreshold` (value or name), `namespaces` with
//! `labelSelector` ([`PodScope`]), lists of allowed values ([`each_one_of`]).

use crate::framework::ArgsError;
use crate::labels::{LabelSelectorSpec, Selector};
use crate::snapshot::Pod;
use serde::{Deserialize, Serialize};

/// `{include: [...]}` or `{exclude: [...]}`, never both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IncludeExclude {
    /// `include`: only these are in scope.
    #[serde(deserialize_with = "crate::policy::null_as_default")]
    pub include: Vec<String>,
    /// `exclude`: these are out of scope.
    #[serde(deserialize_with = "crate::policy::null_as_default")]
    pub exclude: Vec<String>,
}

/// `namespaces: {include: [...]}` or `{exclude: [...]}`, never both.
pub type Namespaces = IncludeExclude;

impl IncludeExclude {
    /// Refuses both lists at once; `listed` says what they list, in the error.
    pub(crate) fn validate_listing(&self, field: &str, listed: &str) -> Result<(), ArgsError> {
        if !self.include.is_empty() && !self.exclude.is_empty() {
            return Err(ArgsError::new(
                field,
                format!("only one of include and exclude can be set; list the {listed} to include, or the ones to exclude"),
            ));
        }
        Ok(())
    }

    /// As `namespaces`: refuses both lists at once.
    pub(crate) fn validate(&self, field: &str) -> Result<(), ArgsError> {
        self.validate_listing(field, "namespaces")
    }

    /// Whether something is in scope, given whether a list names it: named in `include`
    /// when that is set, else named nowhere in `exclude`.
    pub(crate) fn allows_by(&self, named_in: impl Fn(&[String]) -> bool) -> bool {
        if !self.include.is_empty() {
            return named_in(&self.include);
        }
        !named_in(&self.exclude)
    }

    /// Whether a pod in `ns` is in scope.
    pub fn allows(&self, ns: &str) -> bool {
        self.allows_by(|list| list.iter().any(|n| n == ns))
    }
}

/// Whether an optional namespaces arg allows `ns`.
pub(crate) fn namespace_allowed(ns_args: &Option<Namespaces>, ns: &str) -> bool {
    ns_args.as_ref().is_none_or(|n| n.allows(ns))
}

/// `priorityThreshold: {value: 1000}` or `{name: some-priority-class}`, never both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PriorityThreshold {
    /// `value`: the priority itself.
    pub value: Option<i32>,
    /// `name`: a PriorityClass whose value is the priority.
    pub name: Option<String>,
}

impl PriorityThreshold {
    pub(crate) fn validate(&self, field: &str) -> Result<(), ArgsError> {
        if self.value.is_some() && self.name.as_deref().is_some_and(|n| !n.is_empty()) {
            return Err(ArgsError::new(
                field,
                "priority threshold misconfigured, only one of priorityThreshold fields can be set; give value or name",
            ));
        }
        Ok(())
    }

    pub(crate) fn is_set(&self) -> bool {
        self.value.is_some() || self.name.as_deref().is_some_and(|n| !n.is_empty())
    }
}

/// The pods a plugin's `namespaces` and `labelSelector` args select, the selector compiled.
#[derive(Debug, Clone, Default)]
pub(crate) struct PodScope {
    namespaces: Option<Namespaces>,
    selector: Option<Selector>,
}

impl PodScope {
    /// Checks `namespaces`, then compiles `labelSelector`; an error names the field.
    pub fn new(
        namespaces: Option<&Namespaces>,
        label_selector: Option<&LabelSelectorSpec>,
    ) -> Result<PodScope, ArgsError> {
        if let Some(ns) = namespaces {
            ns.validate("namespaces")?;
        }
        Ok(PodScope {
            namespaces: namespaces.cloned(),
            selector: selector_arg(label_selector, "labelSelector")?,
        })
    }

    /// Whether the pod is in `namespaces` and matches `labelSelector`.
    pub fn allows(&self, pod: &Pod) -> bool {
        namespace_allowed(&self.namespaces, &pod.namespace)
            && self
                .selector
                .as_ref()
                .is_none_or(|s| s.matches(&pod.labels))
    }
}

/// Checks that every entry of the list arg `field` is one of `allowed`; the first that is not
/// is an error at `field[i]`, worded by `why` from the entry.
pub(crate) fn each_one_of(
    field: &str,
    list: &[String],
    allowed: &[&str],
    why: impl Fn(&str) -> String,
) -> Result<(), ArgsError> {
    match list
        .iter()
        .enumerate()
        .find(|(_, v)| !allowed.contains(&v.as_str()))
    {
        Some((i, v)) => Err(ArgsError::new(format!("{field}[{i}]"), why(v))),
        None => Ok(()),
    }
}

/// Compiles an optional label selector arg (`labelSelector`, say); an error names the field
/// `path`.
pub(crate) fn selector_arg(
    spec: Option<&LabelSelectorSpec>,
    path: &str,
) -> Result<Option<Selector>, ArgsError> {
    spec.map(|s| Selector::compile(s).map_err(|e| ArgsError::new(path, e.to_string())))
        .transpose()
}

#[cfg(test)]
mod tests;
