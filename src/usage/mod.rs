//! Metrics adapters: fetch measured usage from metrics-server (metrics.k8s.io) and Prometheus
//! and attach it to a snapshot before planning. This room talks to the network; the answers
//! are plain data ([`crate::snapshot::usage`]) by the time a plugin reads them.

pub mod metrics_server;
pub mod prometheus;
