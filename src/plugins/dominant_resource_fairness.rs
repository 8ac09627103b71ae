//! DominantResourceFairness (sort, beyond upstream): orders the pods a plugin chooses among so
//! that disruption falls on the tenant holding the largest share of the cluster.
//!
//! Upstream declares a `sort` extension point and never runs it; here a profile's `sort`
//! plugins decide the eviction order every plugin of the profile uses
//! ([`crate::framework::Context::sort_by_eviction_order`] and
//! [`crate::framework::Context::next_by_order`]). Without a sort plugin the order is upstream's:
//! lowest priority first, then QoS (BestEffort, Burstable, Guaranteed), pods preferring no
//! eviction last. With this one:
//!
//! ```yaml
//! plugins:
//!   sort:
//!     enabled: [DominantResourceFairness]
//! pluginConfig:            # optional: without it, tenants are namespaces
//! - name: DominantResourceFairness
//!   args:
//!     tenantLabel: example.com/team
//! ```
//!
//! - A tenant is a namespace, or with `tenantLabel` the value of that pod label. Pods without
//!   the label form one tenant, the empty value `""` (they do not fall back to their
//!   namespace, so a namespace name and a label value can never be confused).
//! - A tenant's dominant share is its largest share of any cluster resource: the requests of
//!   its active pods on Ready nodes over the allocatable of the Ready nodes, for cpu, memory
//!   and every extended resource (GPUs, ...) the nodes offer; `pods` and `ephemeral-storage`
//!   do not count.
//! - Candidates go highest current dominant share first; ties by the upstream order, then
//!   namespace/name. The shares are those of the plan so far: every planned eviction (by any
//!   plugin of any profile) takes the pod's requests off its tenant. What is recomputed when
//!   is described in [`crate::framework::fairness`].
//!
//! Args: `tenantLabel` (optional, a label key such as `team` or `example.com/team`).
//! No pluginConfig entry is needed when the defaults suit.

use crate::policy::{decode_args, ArgsError};
use serde::{Deserialize, Serialize};

pub const NAME: &str = crate::policy::DOMINANT_RESOURCE_FAIRNESS;

/// `DominantResourceFairnessArgs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DominantResourceFairnessArgs {
    /// The pod label whose value names a pod's tenant; None: the pod's namespace.
    #[serde(default)]
    pub tenant_label: Option<String>,
}

impl DominantResourceFairnessArgs {
    /// Decodes and validates the args; errors carry the path of the field.
    pub fn new(args: &serde_json::Value) -> Result<Self, ArgsError> {
        let args: DominantResourceFairnessArgs = decode_args(args)?;
        if let Some(label) = &args.tenant_label {
            if !is_label_key(label) {
                return Err(ArgsError::new(
                    "tenantLabel",
                    format!(
                        "{label:?} is not a valid label key; give a key such as team or example.com/team, or leave tenantLabel out to make namespaces the tenants"
                    ),
                ));
            }
        }
        Ok(args)
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of up to 63
/// characters (alphanumerics, `-`, `_`, `.`, beginning and ending alphanumeric).
fn is_label_key(s: &str) -> bool {
    let name_ok = |n: &str| {
        let b = n.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    };
    match s.split_once('/') {
        None => name_ok(s),
        Some((prefix, name)) => {
            !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|l| {
                    let l = l.as_bytes();
                    !l.is_empty()
                        && l.len() <= 63
                        && l[0].is_ascii_alphanumeric()
                        && l[l.len() - 1].is_ascii_alphanumeric()
                        && l.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                })
                && name_ok(name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn args_default_to_namespaces() {
        let a = DominantResourceFairnessArgs::new(&serde_json::Value::Null).unwrap();
        assert_eq!(a.tenant_label, None);
        let a = DominantResourceFairnessArgs::new(&json!({})).unwrap();
        assert_eq!(a.tenant_label, None);
    }

    #[test]
    fn tenant_label_is_validated() {
        let a =
            DominantResourceFairnessArgs::new(&json!({"tenantLabel": "example.com/team"})).unwrap();
        assert_eq!(a.tenant_label.as_deref(), Some("example.com/team"));
        for bad in ["", "-team", "a/b/c", "/team", "team!"] {
            let e = DominantResourceFairnessArgs::new(&json!({ "tenantLabel": bad })).unwrap_err();
            assert_eq!(e.path, "tenantLabel", "{bad:?}");
        }
        let e = DominantResourceFairnessArgs::new(&json!({"tenantLabel": 5})).unwrap_err();
        assert_eq!(e.path, "tenantLabel");
        let e = DominantResourceFairnessArgs::new(&json!({"tenantLabels": "x"})).unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
