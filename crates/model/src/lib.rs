//! The descheduler's cluster model: what the planner reads, and nothing that talks to the
//! network.
//!
//! - [`snapshot`]: a compact, immutable model of nodes, pods, PodDisruptionBudgets,
//!   namespaces, priority classes and pod groups, with the indexes the plugins need;
//! - [`labels`]: label sets, selectors and the qualified-name rules;
//! - [`quantity`]: Kubernetes resource quantities;
//! - [`input`] and [`yaml`]: input files read with bounds, and YAML parsed with the options
//!   every reader of a policy or snapshot uses.

pub mod input;
pub mod labels;
pub mod quantity;
pub mod snapshot;
pub mod yaml;
