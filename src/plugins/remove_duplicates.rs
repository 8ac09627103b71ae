//! RemoveDuplicates (placeholder until implemented).
use crate::framework::{Context, Plugin};
use crate::policy::ArgsError;
use crate::snapshot::NodeId;

pub const NAME: &str = "RemoveDuplicates";

#[derive(Debug)]
pub struct RemoveDuplicates;

impl RemoveDuplicates {
    pub fn new(_args: &serde_json::Value) -> Result<Self, ArgsError> {
        Ok(RemoveDuplicates)
    }
}

impl Plugin for RemoveDuplicates {
    fn name(&self) -> &'static str {
        NAME
    }
    fn run(&self, _cx: &mut Context<'_, '_>, _nodes: &[NodeId]) {}
}
