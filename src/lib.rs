//! A Kubernetes descheduler: finds running pods in the wrong place and evicts them, safely.
//!
//! Data flow: decide purely, then act.
//! - [`policy`] loads and validates a `descheduler/v1alpha2` DeschedulerPolicy;
//! - [`snapshot`] holds the cluster (from a file, or a live cluster source);
//! - [`framework`] and [`plugins`] plan evictions, with [`sim`] answering scheduler questions;
//! - [`plan`] runs the profiles and yields an [`plan::EvictionPlan`];
//! - a dry run reports it ([`report`]); [`live`] attempts it through the Eviction API, each
//!   planned eviction ending in an [`outcome::Outcome`];
//! - [`app`] orchestrates both modes (load the policy, read the cluster, plan, report, act);
//!   [`cli`] turns the flags into one of them.
//!
//! The model, ingestion and the planner are crates of their own (`crates/`), re-exported here
//! under the paths they always had; the planner's dependency tree holds no async runtime,
//! client or HTTP crate. Only [`live`], the usage adapters ([`usage`]), [`app`] and [`cli`]
//! touch the network or the clock, and only [`live`] and [`usage`] talk to the API server.

pub use descheduler_ingest::snapshot;
pub use descheduler_model::{input, labels, quantity, yaml};
pub use descheduler_planner::{framework, outcome, plan, plugins, policy, sim};

pub mod app;
pub mod cli;
pub mod kubectl;
pub mod live;
pub mod metrics;
pub mod report;
pub mod schedule;
pub mod usage;
