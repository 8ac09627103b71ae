//! The error of every reader of the wing.

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {file}: cannot read the file: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("snapshot {file}: {message}. A snapshot is what `kubectl get nodes,pods,poddisruptionbudgets,namespaces,priorityclasses -A -o json` (or -o yaml) prints, whole, or a multi-document YAML stream of such objects")]
    Syntax { file: String, message: String },
    #[error("snapshot {file}: {object}: field {field}: {message}")]
    Field {
        file: String,
        object: String,
        field: String,
        message: String,
    },
    #[error("{what}: the API server's answer could not be read ({message}); if it persists, report it with the API server's version")]
    Response { what: String, message: String },
    #[error("{what}: {source}")]
    Totals {
        what: String,
        #[source]
        source: crate::snapshot::TotalTooLarge,
    },
    #[error("snapshot {file}: holds no Node objects, so there is nothing to plan. Include nodes: `kubectl get nodes,pods,poddisruptionbudgets,namespaces,priorityclasses -A -o yaml`")]
    NoNodes { file: String },
}

impl SnapshotError {
    pub(super) fn field(
        file: &str,
        object: impl fmt::Display,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        SnapshotError::Field {
            file: file.to_string(),
            object: object.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
}
