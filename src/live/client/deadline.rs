//! A deadline on every API request, the outermost layer of the client's stack.
//!
//! - Every request must have its response's status and headers within the request timeout
//!   (`--request-timeout`): the TCP connection, the TLS handshake, the credentials and the
//!   server's first answer all fall in it.
//! - A response's body (a list can take a while to arrive) may pause for no longer than the
//!   request timeout between two pieces.
//! - A watch is idle by design: its body may last its `timeoutSeconds` (after which the API
//!   server ends it) and the request timeout more; a watch without `timeoutSeconds` has no
//!   deadline on its body.
//!
//! Credential failures that pass through (an exec plugin run again to refresh a token) are
//! said without the plugin's arguments, environment or output.

use super::kubeconfig::auth_problem;
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::BoxError;

/// Why a request failed in this layer. The messages name the server and the request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{server} did not answer {request} within {} (no connection, TLS handshake or response in that time); check that the address is the API server's and that it is up, or give a longer --request-timeout", seconds(*.timeout))]
    NoAnswer {
        server: Arc<str>,
        request: String,
        timeout: Duration,
    },
    #[error("{server} stopped sending its answer to {request} for {}; the answer is incomplete and is not used", seconds(*.timeout))]
    Stalled {
        server: Arc<str>,
        request: String,
        timeout: Duration,
    },
    #[error("{server}: {problem}")]
    Credentials { server: Arc<str>, problem: String },
    #[error("{server} accepted the connection for {request} but did not begin a TLS handshake within {} s; check that the address is the API server's HTTPS port (a server that does not speak TLS answers nothing) and that it is up", super::TLS_HANDSHAKE_TIMEOUT.as_secs())]
    NoHandshake { server: Arc<str>, request: String },
    #[error("{server} could not be reached for {request}: {reason}; check the kubeconfig's server address and that the API server is up")]
    Unreachable {
        server: Arc<str>,
        request: String,
        reason: String,
    },
}

impl RequestError {
    /// Whether `e` is a request that ran out of time (in this layer).
    pub fn is_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
        matches!(
            e.downcast_ref::<RequestError>(),
            Some(
                RequestError::NoAnswer { .. }
                    | RequestError::Stalled { .. }
                    | RequestError::NoHandshake { .. }
            )
        )
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// The layer: `server` names the API server in errors; `timeout` None means no deadline
/// (`--request-timeout 0`, as kubectl's); `exec` is the user's exec credential plugin.
#[derive(Clone)]
pub struct DeadlineLayer {
    pub server: Arc<str>,
    pub timeout: Option<Duration>,
    pub exec: Option<Arc<str>>,
}

impl<S> tower::Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline {
            inner,
            config: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Deadline<S> {
    inner: S,
    config: DeadlineLayer,
}

impl DeadlineLayer {
    /// A credential failure said without what it carries; the HTTP client's own failures
    /// (connecting, TLS) with the server's name and their causes; kube's errors as they are.
    fn clean(&self, e: BoxError, request: &str) -> BoxError {
        let auth = match e.downcast_ref::<kube::Error>() {
            Some(kube::Error::Auth(a)) => Some(a),
            Some(_) => return e,
            None => e.downcast_ref::<kube::client::AuthError>(),
        };
        let Some(a) = auth else {
            if e.is::<RequestError>() || e.is::<hyper::Error>() {
                return e;
            }
            if handshake_timed_out(e.as_ref()) {
                return Box::new(RequestError::NoHandshake {
                    server: self.server.clone(),
                    request: request.to_string(),
                });
            }
            let mut reason = e.to_string();
            let mut cause = e.source();
            while let Some(c) = cause {
                reason.push_str(": ");
                reason.push_str(&c.to_string());
                cause = c.source();
            }
            return Box::new(RequestError::Unreachable {
                server: self.server.clone(),
                request: request.to_string(),
                reason,
            });
        };
        let (exec, problem) = auth_problem(a);
        let problem = match (&self.exec, exec) {
            (Some(command), true) => {
                format!("the user's exec credential plugin {command:?} {problem}; run it by hand to see why")
            }
            _ => problem,
        };
        Box::new(RequestError::Credentials {
            server: self.server.clone(),
            problem,
        })
    }
}

/// Whether `e`, or an error it was caused by, is a TLS handshake the server did not answer.
fn handshake_timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<super::HandshakeTimeout>() {
            return true;
        }
        // An io::Error's `source` skips the error it carries: step into that one.
        cause = match c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => c.source(),
        };
    }
    false
}

/// How long a response's body may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    /// No more than this between two pieces.
    Idle(Duration),
    /// No more than this in all (a watch).
    Total(Duration),
    None,
}

/// The body's limit for a request to `uri`, by its kind.
fn limit_of(uri: &http::Uri, timeout: Option<Duration>) -> Limit {
    let Some(timeout) = timeout else {
        return Limit::None;
    };
    let query = uri.query().unwrap_or_default();
    let value = |key: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    };
    if matches!(value("watch"), Some("1" | "true")) {
        return match value("timeoutSeconds").and_then(|s| s.parse::<u64>().ok()) {
            Some(s) => Limit::Total(Duration::from_secs(s) + timeout),
            None => Limit::None,
        };
    }
    Limit::Idle(timeout)
}

impl<S, Q, B> tower::Service<http::Request<Q>> for Deadline<S>
where
    S: tower::Service<http::Request<Q>, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<Timed<B>>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self.inner.poll_ready(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.config.clean(e.into(), "a request"))),
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn call(&mut self, request: http::Request<Q>) -> Self::Future {
        // The path only: a query may be long, and says nothing the reader needs.
        let what = format!("{} {}", request.method(), request.uri().path());
        let limit = limit_of(request.uri(), self.config.timeout);
        let config = self.config.clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let answered = match config.timeout {
                Some(timeout) => match tokio::time::timeout(timeout, answer).await {
                    Ok(r) => r,
                    Err(_) => {
                        return Err(Box::new(RequestError::NoAnswer {
                            server: config.server.clone(),
                            request: what,
                            timeout,
                        }) as BoxError)
                    }
                },
                None => answer.await,
            };
            let response = answered.map_err(|e| config.clean(e.into(), &what))?;
            Ok(response.map(|body| Timed::new(body, limit, config.server, what)))
        })
    }
}

/// A response body under its [`Limit`].
pub struct Timed<B> {
    inner: Pin<Box<B>>,
    limit: Limit,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Whether the last poll found nothing (the idle timer runs from the first such poll:
    /// a reader that takes its time between pieces is not the server's pause).
    waiting: bool,
    failed: bool,
    server: Arc<str>,
    request: String,
}

impl<B> Timed<B> {
    fn new(body: B, limit: Limit, server: Arc<str>, request: String) -> Self {
        let timer = match limit {
            Limit::Total(d) => Some(Box::pin(tokio::time::sleep(d))),
            Limit::Idle(d) => Some(Box::pin(tokio::time::sleep(d))),
            Limit::None => None,
        };
        Timed {
            inner: Box::pin(body),
            limit,
            timer,
            waiting: false,
            failed: false,
            server,
            request,
        }
    }
}

impl<B> Body for Timed<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        if let Poll::Ready(frame) = this.inner.as_mut().poll_frame(cx) {
            this.waiting = false;
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let Some(timer) = this.timer.as_mut() else {
            return Poll::Pending;
        };
        if let (Limit::Idle(d), false) = (this.limit, this.waiting) {
            timer.as_mut().reset(tokio::time::Instant::now() + d);
        }
        this.waiting = true;
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.failed = true;
        let timeout = match this.limit {
            Limit::Idle(d) | Limit::Total(d) => d,
            Limit::None => Duration::ZERO,
        };
        Poll::Ready(Some(Err(Box::new(RequestError::Stalled {
            server: this.server.clone(),
            request: std::mem::take(&mut this.request),
            timeout,
        }))))
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_request_has_its_limit() {
        let t = Some(Duration::from_secs(60));
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        assert_eq!(
            limit_of(&uri("/api/v1/pods"), t),
            Limit::Idle(Duration::from_secs(60))
        );
        assert_eq!(
            limit_of(
                &uri("/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=300"),
                t
            ),
            Limit::Total(Duration::from_secs(360))
        );
        assert_eq!(limit_of(&uri("/api/v1/pods?watch=true"), t), Limit::None);
        assert_eq!(limit_of(&uri("/api/v1/pods"), None), Limit::None);
    }
}
