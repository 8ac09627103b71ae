//! Helpers the plugins' tests share.

use crate::framework::Pipeline;
use crate::policy::Policy;

/// The pipeline of a `descheduler/v1alpha2` policy given by the rest of its YAML (its
/// `profiles`, say), built through the plugin registry.
pub fn pipeline(rest: &str) -> Pipeline {
    let yaml = format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n{rest}");
    let policy = Policy::from_yaml("p.yaml", &yaml, &super::REGISTRY).unwrap();
    Pipeline::build(&policy, "p.yaml", &super::REGISTRY).unwrap()
}
