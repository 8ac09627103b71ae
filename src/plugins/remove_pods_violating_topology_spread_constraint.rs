//! RemovePodsViolatingTopologySpreadConstraint (placeholder until implemented).
use crate::framework::{Context, Plugin};
use crate::policy::ArgsError;
use crate::snapshot::NodeId;

pub const NAME: &str = "RemovePodsViolatingTopologySpreadConstraint";

#[derive(Debug)]
pub struct RemovePodsViolatingTopologySpreadConstraint;

impl RemovePodsViolatingTopologySpreadConstraint {
    pub fn new(_args: &serde_json::Value) -> Result<Self, ArgsError> {
        Ok(RemovePodsViolatingTopologySpreadConstraint)
    }
}

impl Plugin for RemovePodsViolatingTopologySpreadConstraint {
    fn name(&self) -> &'static str {
        NAME
    }
    fn run(&self, _cx: &mut Context<'_, '_>, _nodes: &[NodeId]) {}
}
