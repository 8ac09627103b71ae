//! The admin HTTP server: `/metrics` (Prometheus text format), `/healthz` (the process is
//! alive) and `/readyz` (the first snapshot of the cluster has been read).

use super::LiveError;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Clone)]
struct AdminState {
    registry: Arc<Registry>,
    ready: Arc<AtomicBool>,
}

async fn metrics(State(s): State<AdminState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        crate::metrics::encode(&s.registry),
    )
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(s): State<AdminState>) -> (StatusCode, &'static str) {
    if s.ready.load(Ordering::SeqCst) {
        (StatusCode::OK, "ok")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the cluster has not been read yet",
        )
    }
}

/// Binds the server and serves it in the background; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    ready: Arc<AtomicBool>,
) -> Result<SocketAddr, LiveError> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AdminState { registry, ready });
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        LiveError::Admin(format!(
            "cannot listen on {addr}: {e}; set --metrics-bind-address"
        ))
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| LiveError::Admin(e.to_string()))?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "admin server stopped");
        }
    });
    Ok(bound)
}
