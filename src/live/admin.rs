//! The admin server: `/metrics` (Prometheus text format; left out with `--disable-metrics`),
//! `/healthz` (the process is alive) and `/readyz` (the first snapshot of the cluster has been
//! read). As upstream serves them: over HTTPS on `--bind-address`:`--secure-port` (10258),
//! with the certificate of `--tls-cert-file`/`--tls-private-key-file` or, when none is given,
//! a self-signed one made at start. Plain HTTP only on `--metrics-bind-address`, when asked.

use super::LiveError;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
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
    /// `/metrics` only to a caller whose bearer token the API server authenticates
    /// (TokenReview) and authorizes to `get` the non-resource URL `/metrics`
    /// (SubjectAccessReview): `--authorize-metrics`.
    pub authorize: bool,
}

#[derive(Clone)]
struct AdminState {
    registry: Arc<Registry>,
    ready: Arc<AtomicBool>,
    /// With `--authorize-metrics`: the API server that judges callers' tokens.
    reviews: Option<Arc<Reviews>>,
}

async fn metrics(State(s): State<AdminState>, headers: axum::http::HeaderMap) -> Response {
    if let Some(reviews) = &s.reviews {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            return (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: /metrics needs a bearer token (--authorize-metrics)",
            )
                .into_response();
        };
        match reviews.judge(token).await {
            Verdict::Allowed => {}
            Verdict::Unauthenticated => {
                return (StatusCode::UNAUTHORIZED, "Unauthorized: the token is not valid")
                    .into_response()
            }
            Verdict::Forbidden(user) => {
                return (
                    StatusCode::FORBIDDEN,
                    format!("Forbidden: {user} may not get /metrics; bind it a ClusterRole with the rule {{nonResourceURLs: [/metrics], verbs: [get]}}"),
                )
                    .into_response()
            }
            Verdict::Unknown(why) => {
                tracing::warn!(error = %why, "authorizing a /metrics request failed");
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the API server could not review the token; try again",
                )
                    .into_response();
            }
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        crate::metrics::encode(&s.registry),
    )
        .into_response()
}

/// What the API server said of a token.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Allowed,
    Unauthenticated,
    /// Authenticated as this user, not allowed.
    Forbidden(String),
    /// The reviews failed (not remembered).
    Unknown(String),
}

/// How long a verdict on a token is remembered.
const VERDICT_TTL: Duration = Duration::from_secs(10);
/// At most this many tokens remembered.
const VERDICTS: usize = 1024;

/// TokenReview and SubjectAccessReview through the API server, each verdict remembered
/// briefly, so a scraper every few seconds costs the API server two requests per
/// [`VERDICT_TTL`] at most.
struct Reviews {
    client: kube::Client,
    seen: std::sync::Mutex<std::collections::HashMap<String, (Verdict, std::time::Instant)>>,
}

impl Reviews {
    async fn judge(&self, token: &str) -> Verdict {
        let now = std::time::Instant::now();
        if let Some((v, at)) = self.seen.lock().unwrap().get(token) {
            if now.duration_since(*at) < VERDICT_TTL {
                return v.clone();
            }
        }
        let verdict = self.review(token).await;
        if !matches!(verdict, Verdict::Unknown(_)) {
            let mut seen = self.seen.lock().unwrap();
            if seen.len() >= VERDICTS {
                seen.retain(|_, (_, at)| now.duration_since(*at) < VERDICT_TTL);
                if seen.len() >= VERDICTS {
                    seen.clear();
                }
            }
            seen.insert(token.to_string(), (verdict.clone(), now));
        }
        verdict
    }

    async fn review(&self, token: &str) -> Verdict {
        use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
        use k8s_openapi::api::authorization::v1::{
            NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
        };
        use kube::api::{Api, PostParams};
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviewed = match Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
        {
            Ok(r) => r.status.unwrap_or_default(),
            Err(e) => {
                return Verdict::Unknown(format!(
                    "TokenReview: {e} (the descheduler's account needs create on tokenreviews and subjectaccessreviews: bind it the ClusterRole system:auth-delegator)"
                ))
            }
        };
        let Some(user) = reviewed
            .user
            .filter(|_| reviewed.authenticated == Some(true))
        else {
            return Verdict::Unauthenticated;
        };
        let name = user.username.clone().unwrap_or_default();
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some("/metrics".to_string()),
                    verb: Some("get".to_string()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        match Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await
        {
            Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => Verdict::Allowed,
            Ok(_) => Verdict::Forbidden(name),
            Err(e) => Verdict::Unknown(format!("SubjectAccessReview: {e}")),
        }
    }
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
            let read = |flag: &str, path: &Path| {
                crate::input::read_regular_file(path, crate::input::TLS_LIMIT)
                    .map_err(|e| pem_error(flag, path, e))
            };
            let chain = CertificateDer::pem_slice_iter(&read("--tls-cert-file", cert)?)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| pem_error("--tls-cert-file", cert, e))?;
            if chain.is_empty() {
                return Err(LiveError::Admin(format!(
                    "--tls-cert-file {}: no CERTIFICATE block in it; give a PEM certificate chain, leaf first",
                    cert.display()
                )));
            }
            let key = PrivateKeyDer::from_pem_slice(&read("--tls-private-key-file", key)?)
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
    client: &kube::Client,
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
    let reviews = server.authorize.then(|| {
        if server.transport == Transport::Http {
            tracing::warn!(address = %server.addr, "--authorize-metrics on plain HTTP: scrapers' tokens cross the network readable; use the HTTPS port");
        }
        Arc::new(Reviews {
            client: client.clone(),
            seen: Default::default(),
        })
    });
    let app = app.with_state(AdminState {
        registry,
        ready,
        reviews,
    });
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

    #[cfg(target_os = "linux")]
    #[test]
    fn certificate_files_that_are_devices_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, made.cert.pem()).unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
        assert!(tls_config(
            &Certificate::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            "h",
        )
        .is_ok());
        // Each would read for ever, or until memory runs out.
        for device in ["/dev/zero", "/dev/urandom"] {
            let device = PathBuf::from(device);
            for (flag, files) in [
                ("--tls-private-key-file", (cert.clone(), device.clone())),
                ("--tls-cert-file", (device.clone(), key.clone())),
            ] {
                let e = tls_config(
                    &Certificate::Files {
                        cert: files.0,
                        key: files.1,
                    },
                    "h",
                )
                .unwrap_err()
                .to_string();
                assert!(
                    e.contains(flag) && e.contains(&*device.to_string_lossy()),
                    "{e}"
                );
                assert!(e.contains("not a regular file"), "{e}");
            }
        }
    }

    #[test]
    fn a_self_signed_certificate_is_made_when_none_is_given() {
        assert!(tls_config(&Certificate::SelfSigned, "node-1").is_ok());
    }
}
