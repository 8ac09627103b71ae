//! The descheduler's planner: a pure function from a policy, a cluster model and `now` to an
//! eviction plan. No async runtime, client, clock or HTTP crate is in its dependency tree.
//!
//! - [`policy`] loads and validates a `descheduler/v1alpha2` DeschedulerPolicy;
//! - [`framework`] and [`plugins`] plan evictions, with [`sim`] answering scheduler questions;
//! - [`plan`] runs the profiles and yields an [`plan::EvictionPlan`];
//! - [`outcome`] names what became of each planned eviction, which the cycle's memory absorbs.

#![warn(missing_docs)]

pub use descheduler_model::{input, labels, quantity, snapshot, yaml};

pub mod framework;
pub mod outcome;
pub mod plan;
pub mod plugins;
pub mod policy;
pub mod sim;
