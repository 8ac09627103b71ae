//! A Kubernetes descheduler: finds running pods in the wrong place and evicts them, safely.
//!
//! Data flow: decide purely, then act.
//! - [`policy`] loads and validates a `descheduler/v1alpha2` DeschedulerPolicy;
//! - [`snapshot`] holds the cluster (from a file, or a live cluster source);
//! - [`framework`] and [`plugins`] plan evictions, with [`sim`] answering scheduler questions;
//! - [`plan`] runs the profiles and yields an [`plan::EvictionPlan`];
//! - [`executor`] acts on it (dry-run: [`report`]).
//!
//! Nothing above [`executor`] and [`cli`] touches the network or the clock.

pub mod cli;
pub mod executor;
pub mod framework;
pub mod input;
pub mod labels;
pub mod live;
pub mod metrics;
pub mod plan;
pub mod plugins;
pub mod policy;
pub mod quantity;
pub mod report;
pub mod schedule;
pub mod sim;
pub mod snapshot;
pub mod source;
pub mod usage;
pub mod yaml;
