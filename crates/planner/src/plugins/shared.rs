//! Arg shapes several upstream plugins share: `namespaces` (include/exclude) and
//! `priorityThreshold` (value or name).

use crate::framework::ArgsError;
use crate::labels::{LabelSelectorSpec, Selector};
use serde::{Deserialize, Serialize};

/// `namespaces: {include: [...]}` or `{exclude: [...]}`, never both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Namespaces {
    #[serde(default, deserialize_with = "crate::policy::null_as_default")]
    pub include: Vec<String>,
    #[serde(default, deserialize_with = "crate::policy::null_as_default")]
    pub exclude: Vec<String>,
}

impl Namespaces {
    pub fn validate(&self, field: &str) -> Result<(), ArgsError> {
        if !self.include.is_empty() && !self.exclude.is_empty() {
            return Err(ArgsError::new(
                field,
                "only one of include and exclude can be set; list the namespaces to include, or the ones to exclude",
            ));
        }
        Ok(())
    }

    /// Whether a pod in `ns` is in scope.
    pub fn allows(&self, ns: &str) -> bool {
        if !self.include.is_empty() {
            return self.include.iter().any(|n| n == ns);
        }
        !self.exclude.iter().any(|n| n == ns)
    }
}

/// Whether an optional namespaces arg allows `ns`.
pub fn namespace_allowed(ns_args: &Option<Namespaces>, ns: &str) -> bool {
    ns_args.as_ref().is_none_or(|n| n.allows(ns))
}

/// `priorityThreshold: {value: 1000}` or `{name: some-priority-class}`, never both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriorityThreshold {
    #[serde(default)]
    pub value: Option<i32>,
    #[serde(default)]
    pub name: Option<String>,
}

impl PriorityThreshold {
    pub fn validate(&self, field: &str) -> Result<(), ArgsError> {
        if self.value.is_some() && self.name.as_deref().is_some_and(|n| !n.is_empty()) {
            return Err(ArgsError::new(
                field,
                "priority threshold misconfigured, only one of priorityThreshold fields can be set; give value or name",
            ));
        }
        Ok(())
    }

    pub fn is_set(&self) -> bool {
        self.value.is_some() || self.name.as_deref().is_some_and(|n| !n.is_empty())
    }
}

/// Compiles an optional label selector arg (`labelSelector`, say); an error names the field
/// `path`.
pub fn selector_arg(
    spec: Option<&LabelSelectorSpec>,
    path: &str,
) -> Result<Option<Selector>, ArgsError> {
    spec.map(|s| Selector::compile(s).map_err(|e| ArgsError::new(path, e.to_string())))
        .transpose()
}

#[cfg(test)]
mod tests;
