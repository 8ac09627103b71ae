//! The descheduler's ingestion: bytes from a snapshot file, a list response or a watch event
//! (JSON or protobuf) go straight into the cluster model through one declaration of wire
//! fields per kind; the writer prints a model back as a snapshot file.
//!
//! The model's paths are kept: [`snapshot`] is the model's `snapshot` with the readers
//! ([`snapshot::decode`]), the writer ([`snapshot::encode`]) and the watch-fed store
//! ([`snapshot::store`]) beside it.

pub use descheduler_model::{input, labels, quantity, yaml};

/// The cluster model ([`descheduler_model::snapshot`]) and the ways into and out of it.
pub mod snapshot {
    pub use descheduler_model::snapshot::*;

    pub mod decode;
    pub mod encode;
    pub mod store;
    /// Synthetic clusters for benchmarks and tests (feature `test-support`).
    #[cfg(any(test, feature = "test-support"))]
    pub mod synthetic;
}
