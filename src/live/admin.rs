//! The admin server: `/metrics` (Prometheus text format; left out with `--disable-metrics`),
//! `/healthz` (the process is alive) and `/readyz` (the first snapshot of the cluster has been
//! read). As upstream serves them: over HTTPS on `--bind-address`:`--secure-port` (10258),
//! with the certificate of `--tls-cert-file`/`--tls-private-key-file` or, when none is given,
//! a self-signed one made at start. Plain HTTP only on `--metrics-bind-address`, when asked.

use super::LiveError;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::server::TlsStream;

/// How the admin server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// HTTPS with this certificate.
    Https(Certificate),
    /// Plain HTTP (`--metrics-bind-address`).
    Http,
}

/// The server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Certificate {
    /// PEM files: the certificate chain (leaf first) and its private key.
    Files { cert: PathBuf, key: PathBuf },
    /// Made at start, for `localhost`, the host's name and the bound address.
    SelfSigned,
}

/// One admin server to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminServer {
    pub addr: SocketAddr,
    pub transport: Transport,
    /// Serve `/metrics` (false: `--disable-metrics`).
    pub metrics: bool,
}

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

/// The TLS configuration of `cert`, checked before anything is served.
pub fn tls_config(cert: &Certificate, host: &str) -> Result<Arc<rustls::ServerConfig>, LiveError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let (chain, key) = match cert {
        Certificate::Files { cert, key } => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| pem_error("--tls-cert-file", cert, e))?;
            if chain.is_empty() {
                return Err(LiveError::Admin(format!(
                    "--tls-cert-file {}: no CERTIFICATE block in it; give a PEM certificate chain, leaf first",
                    cert.display()
                )));
            }
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| pem_error("--tls-private-key-file", key, e))?;
            (chain, key)
        }
        Certificate::SelfSigned => {
            let mut names = vec!["localhost".to_string()];
            names.extend((!host.is_empty()).then(|| host.to_string()));
            let made = rcgen::generate_simple_self_signed(names)
                .map_err(|e| LiveError::Admin(format!("making a self-signed certificate: {e}")))?;
            let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
            (vec![made.cert.der().clone()], key.into())
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LiveError::Admin(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            LiveError::Admin(format!(
                "--tls-cert-file and --tls-private-key-file do not make a usable pair: {e}"
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn pem_error(flag: &str, path: &Path, e: impl std::fmt::Display) -> LiveError {
    LiveError::Admin(format!(
        "{flag} {}: {e}; give a readable PEM file",
        path.display()
    ))
}

/// Binds the server and serves it in the background; returns the bound address.
pub async fn serve(
    server: &AdminServer,
    registry: Arc<Registry>,
    ready: Arc<AtomicBool>,
) -> Result<SocketAddr, LiveError> {
    let tls = match &server.transport {
        Transport::Https(cert) => Some(tls_config(cert, &host_name())?),
        Transport::Http => None,
    };
    let mut app = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz));
    if server.metrics {
        app = app.route("/metrics", get(metrics));
    }
    let app = app.with_state(AdminState { registry, ready });
    let addr = server.addr;
    let flag = match server.transport {
        Transport::Https(_) => "--bind-address and --secure-port (0: no HTTPS server)",
        Transport::Http => "--metrics-bind-address",
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| LiveError::Admin(format!("cannot listen on {addr}: {e}; set {flag}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| LiveError::Admin(e.to_string()))?;
    match tls {
        Some(config) => {
            let listener = TlsListener::start(listener, bound, config);
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!(error = %e, "admin server stopped");
                }
            });
        }
        None => {
            tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!(error = %e, "admin server stopped");
                }
            });
        }
    }
    Ok(bound)
}

/// How long a client has to finish its TLS handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Connections whose TLS handshake is done. Handshakes run side by side, each in its own
/// task, so a slow or silent client never holds up a probe.
struct TlsListener {
    done: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl TlsListener {
    fn start(listener: TcpListener, addr: SocketAddr, config: Arc<rustls::ServerConfig>) -> Self {
        let (tx, done) = tokio::sync::mpsc::channel(64);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, then go on.
                        tracing::warn!(error = %e, "admin server: accepting a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (acceptor, sender) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = sender.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "admin server: TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(%peer, "admin server: TLS handshake timed out"),
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        TlsListener { done, addr }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.done.recv().await {
            Some(c) => c,
            // The acceptor task only ends once this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_empty_certificate_files_are_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let missing = dir.path().join("missing.pem");
        let e = tls_config(
            &Certificate::Files {
                cert: missing.clone(),
                key: empty.clone(),
            },
            "h",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--tls-cert-file") && e.contains("missing.pem"),
            "{e}"
        );
        let e = tls_config(
            &Certificate::Files {
                cert: empty.clone(),
                key: empty,
            },
            "h",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no CERTIFICATE block"), "{e}");
    }

    #[test]
    fn a_self_signed_certificate_is_made_when_none_is_given() {
        assert!(tls_config(&Certificate::SelfSigned, "node-1").is_ok());
    }
}
