//! Where a cycle's [`ClusterSnapshot`] comes from. One-shot and continuous live modes and the
//! offline snapshot file all hand the planner the same model through this seam.

use crate::snapshot::{decode, ClusterSnapshot};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Snapshot(#[from] decode::SnapshotError),
}

/// Produces the snapshot for one planning cycle.
pub trait ClusterSource {
    fn snapshot(&mut self) -> Result<ClusterSnapshot, SourceError>;
}

/// A snapshot file, read anew for each cycle.
#[derive(Debug, Clone)]
pub struct FileSource {
    pub path: PathBuf,
}

impl ClusterSource for FileSource {
    fn snapshot(&mut self) -> Result<ClusterSnapshot, SourceError> {
        Ok(decode::load_file(&self.path)?)
    }
}
