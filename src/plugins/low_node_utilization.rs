//! LowNodeUtilization (placeholder until implemented).
use crate::framework::{Context, Plugin};
use crate::policy::ArgsError;
use crate::snapshot::NodeId;

pub const NAME: &str = "LowNodeUtilization";

#[derive(Debug)]
pub struct LowNodeUtilization;

impl LowNodeUtilization {
    pub fn new(_args: &serde_json::Value) -> Result<Self, ArgsError> {
        Ok(LowNodeUtilization)
    }
}

impl Plugin for LowNodeUtilization {
    fn name(&self) -> &'static str {
        NAME
    }
    fn run(&self, _cx: &mut Context<'_, '_>, _nodes: &[NodeId]) {}
}
