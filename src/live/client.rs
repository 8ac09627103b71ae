//! The Kubernetes client, with the client-side QPS and burst limits of upstream's
//! `--client-connection-qps` and `--client-connection-burst`.

use super::LiveError;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone)]
pub struct ApiClient {
    pub client: kube::Client,
    limiter: Option<Arc<DefaultDirectRateLimiter>>,
    /// Whether lists of pods and nodes ask for the API's protobuf encoding (else JSON):
    /// `--kube-api-content-type`.
    pub protobuf: bool,
    /// The API server, as errors name it (`https://host:port`).
    pub server: String,
    /// Whether the API server has answered a request of the cluster's reader (any status):
    /// a request it then leaves unanswered is slow, not sent to a server that is not there.
    pub answered: Arc<std::sync::atomic::AtomicBool>,
}

/// `scheme://host:port` of a cluster's URL.
fn server_name(url: &http::Uri) -> String {
    match (url.scheme_str(), url.authority()) {
        (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
        _ => url.to_string(),
    }
}

/// A quota of `qps` per second with `burst`; None when `qps` is 0 or less (unlimited), or so
/// large that one request's period rounds to nothing. The flags are checked before (a rate is
/// finite, and at least one a day); a period too long for a Duration is the longest one.
pub fn quota(qps: f64, burst: u32) -> Option<Quota> {
    if qps <= 0.0 || qps.is_nan() {
        return None;
    }
    let period = Duration::try_from_secs_f64(1.0 / qps).unwrap_or(Duration::MAX);
    Quota::with_period(period)
        .map(|q| q.allow_burst(NonZeroU32::new(burst.max(1)).expect("at least 1")))
}

pub mod deadline;
pub mod kubeconfig;

pub use deadline::RequestError;
pub use kubeconfig::KubeconfigError;

/// The deadline of one API request (`--request-timeout`): its answer must begin within it,
/// and a list's answer may pause no longer than that; a watch's may last its
/// `timeoutSeconds` and this more.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long an API server has, once the TCP connection is made, to begin its side of the TLS
/// handshake (client-go's `TLSHandshakeTimeout`). A server that accepts connections but does
/// not speak TLS (an `http://` port named `https://`, a load balancer with no backend)
/// otherwise holds each try until it gives up itself.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS handshake the server did not answer within [`TLS_HANDSHAKE_TIMEOUT`].
#[derive(Debug, thiserror::Error)]
#[error("no TLS handshake within {} s of the connection", TLS_HANDSHAKE_TIMEOUT.as_secs())]
pub struct HandshakeTimeout;

/// The kubeconfig files to read by kubectl's loading rules, from the process's environment.
pub fn kubeconfig_source(explicit: Option<&Path>) -> Result<kubeconfig::Source, LiveError> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from);
    Ok(kubeconfig::find(
        explicit,
        std::env::var_os("KUBECONFIG").as_deref(),
        home.as_deref(),
    )?)
}

/// A kube error as the descheduler says it: the message of a layer of its own without the
/// library's prefix.
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Service(inner) => inner.to_string(),
        other => other.to_string(),
    }
}

/// Whether `e` is a request that ran out of its deadline.
pub fn is_timeout(e: &kube::Error) -> bool {
    match e {
        kube::Error::Service(inner) => RequestError::is_timeout(inner.as_ref()),
        _ => false,
    }
}

impl ApiClient {
    /// From a kubeconfig file, or else kubectl's loading rules (KUBECONFIG, ~/.kube/config,
    /// in-cluster service account), with the default request deadline.
    pub async fn new(
        kubeconfig: Option<&Path>,
        qps: f64,
        burst: u32,
    ) -> Result<ApiClient, LiveError> {
        ApiClient::for_context(kubeconfig, None, qps, burst).await
    }

    /// [`ApiClient::new`] with the kubeconfig's `context` instead of its current one.
    pub async fn for_context(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
        qps: f64,
        burst: u32,
    ) -> Result<ApiClient, LiveError> {
        ApiClient::connect(
            kubeconfig,
            context,
            qps,
            burst,
            Some(DEFAULT_REQUEST_TIMEOUT),
        )
        .await
    }

    /// [`ApiClient::for_context`] with `request_timeout` on each request (None: none).
    pub async fn connect(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
        qps: f64,
        burst: u32,
        request_timeout: Option<Duration>,
    ) -> Result<ApiClient, LiveError> {
        use kubeconfig::Source;
        let options = kube::config::KubeConfigOptions {
            context: context.map(str::to_string),
            ..Default::default()
        };
        let source = kubeconfig_source(kubeconfig)?;
        let files = source.describe();
        let mut config = match &source {
            Source::Files(paths) => {
                let kc = kubeconfig::read(paths)?;
                kube::Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(|e| KubeconfigError::Config {
                        files: files.clone(),
                        problem: kubeconfig::config_problem(&e),
                    })?
            }
            Source::InCluster => {
                if let Some(context) = context {
                    return Err(KubeconfigError::Nothing(format!(
                        "--context {context:?} needs a kubeconfig"
                    ))
                    .into());
                }
                kube::Config::incluster().map_err(|e| KubeconfigError::Nothing(e.to_string()))?
            }
        };
        // kube's default retry policy retries HTTP 429 for minutes; for an eviction, 429 means a
        // disruption budget said no, which is recorded and never retried in the cycle.
        config.default_retry = false;
        if let Some(t) = request_timeout {
            config.connect_timeout = Some(config.connect_timeout.map_or(t, |c| c.min(t)));
        }
        let server = server_name(&config.cluster_url);
        let exec = config
            .auth_info
            .exec
            .as_ref()
            .and_then(|e| e.command.as_deref())
            .map(Arc::from);
        let layer = deadline::DeadlineLayer {
            server: Arc::from(server.as_str()),
            timeout: request_timeout,
            exec: exec.clone(),
        };
        let built = |e: kube::Error| -> LiveError {
            match e {
                kube::Error::Auth(a) => {
                    let (is_exec, problem) = kubeconfig::auth_problem(&a);
                    match (exec.as_deref(), is_exec) {
                        (Some(command), true) => KubeconfigError::Exec {
                            files: files.clone(),
                            command: command.to_string(),
                            problem,
                        },
                        _ => KubeconfigError::Config {
                            files: files.clone(),
                            problem,
                        },
                    }
                    .into()
                }
                kube::Error::InferKubeconfig(k) => KubeconfigError::Config {
                    files: files.clone(),
                    problem: kubeconfig::config_problem(&k),
                }
                .into(),
                other => LiveError::Config(format!("{files}: {}", describe(&other))),
            }
        };
        let client = match buffered_client(&config, layer.clone()).map_err(&built)? {
            Some(client) => client,
            None => kube::client::ClientBuilder::try_from(config)
                .map_err(&built)?
                .with_layer(&layer)
                .build(),
        };
        let mut api = ApiClient::from_client(client, qps, burst);
        api.server = server;
        Ok(api)
    }

    pub fn from_client(client: kube::Client, qps: f64, burst: u32) -> ApiClient {
        ApiClient {
            client,
            limiter: quota(qps, burst).map(|q| Arc::new(RateLimiter::direct(q))),
            protobuf: true,
            server: "the API server".into(),
            answered: Default::default(),
        }
    }

    /// Waits for the client-side rate limit before a request.
    pub async fn throttle(&self) {
        if let Some(l) = &self.limiter {
            l.until_ready().await;
        }
    }
}

/// The HTTP client of kube's default stack, but for one thing: reads from the connection go
/// through a large buffer. The TLS layer asks for 4 KB at a time, which makes a 150,000-pod
/// list hundreds of thousands of `recvfrom` calls; with the buffer, each call takes what the
/// socket holds. Proxies (`proxy-url` in the kubeconfig) keep kube's own stack.
fn buffered_client(
    config: &kube::Config,
    deadline: deadline::DeadlineLayer,
) -> Result<Option<kube::Client>, kube::Error> {
    use kube::client::ConfigExt;
    if config.proxy_url.is_some() {
        return Ok(None);
    }
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let https = config.rustls_https_connector_with_connector(buffered::Connector(http))?;
    let client = hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new())
        .build::<_, kube::client::Body>(https);
    let service = tower::ServiceBuilder::new()
        .layer(deadline)
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(client);
    Ok(Some(kube::Client::new(
        service,
        config.default_namespace.clone(),
    )))
}

/// A connection whose reads fill a buffer of its own.
mod buffered {
    use hyper::rt::{Read, ReadBuf, ReadBufCursor, Write};
    use hyper_util::client::legacy::connect::{Connected, Connection};
    use std::future::Future;
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Bytes read from the socket at most per call.
    const SIZE: usize = 256 << 10;

    /// Wraps a connector's connections.
    #[derive(Clone)]
    pub(super) struct Connector<C>(pub(super) C);

    impl<C> tower::Service<http::Uri> for Connector<C>
    where
        C: tower::Service<http::Uri>,
        C::Future: Send + 'static,
    {
        type Response = Buffered<C::Response>;
        type Error = C::Error;
        type Future =
            Pin<Box<dyn std::future::Future<Output = Result<Self::Response, C::Error>> + Send>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
            self.0.poll_ready(cx)
        }

        fn call(&mut self, uri: http::Uri) -> Self::Future {
            let tls = uri.scheme_str() == Some("https");
            let connecting = self.0.call(uri);
            Box::pin(async move {
                let inner = connecting.await?;
                Ok(Buffered {
                    inner,
                    buf: Vec::new(),
                    start: 0,
                    end: 0,
                    handshake: tls
                        .then(|| Box::pin(tokio::time::sleep(super::TLS_HANDSHAKE_TIMEOUT))),
                })
            })
        }
    }

    /// A connection with a read buffer (allocated on the first read).
    pub(super) struct Buffered<T> {
        inner: T,
        buf: Vec<u8>,
        start: usize,
        end: usize,
        /// On a TLS connection, until the server's first bytes (its ServerHello) arrive: when
        /// they have not come in time, reads fail with [`super::HandshakeTimeout`].
        handshake: Option<Pin<Box<tokio::time::Sleep>>>,
    }

    impl<T: Read + Unpin> Read for Buffered<T> {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            mut out: ReadBufCursor<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            if this.start == this.end {
                if this.buf.is_empty() {
                    this.buf = vec![0; SIZE];
                }
                let mut fill = ReadBuf::new(&mut this.buf);
                match Pin::new(&mut this.inner).poll_read(cx, fill.unfilled()) {
                    Poll::Ready(Ok(())) => this.handshake = None,
                    Poll::Pending => {
                        if let Some(timer) = &mut this.handshake {
                            if timer.as_mut().poll(cx).is_ready() {
                                return Poll::Ready(Err(io::Error::new(
                                    io::ErrorKind::TimedOut,
                                    super::HandshakeTimeout,
                                )));
                            }
                        }
                        return Poll::Pending;
                    }
                    other => return other,
                }
                this.start = 0;
                this.end = fill.filled().len();
                if this.end == 0 {
                    return Poll::Ready(Ok(()));
                }
            }
            let n = out.remaining().min(this.end - this.start);
            out.put_slice(&this.buf[this.start..this.start + n]);
            this.start += n;
            Poll::Ready(Ok(()))
        }
    }

    impl<T: Write + Unpin> Write for Buffered<T> {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().inner).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
        }

        fn is_write_vectored(&self) -> bool {
            self.inner.is_write_vectored()
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
        }
    }

    impl<T: Connection> Connection for Buffered<T> {
        fn connected(&self) -> Connected {
            self.inner.connected()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(context: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: {context}\nclusters:\n- name: {context}\n  cluster:\n    server: https://127.0.0.1:6443\ncontexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: {context}\nusers:\n- name: {context}\n  user:\n    token: t\n"
        )
    }

    #[test]
    fn a_list_of_kubeconfigs_is_merged_as_kubectl_merges_it() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, kubeconfig("one")).unwrap();
        std::fs::write(&b, kubeconfig("two")).unwrap();
        let merged = kubeconfig::read(&[a.clone(), b.clone()]).unwrap();
        let names: Vec<&str> = merged.contexts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["one", "two"]);
        assert_eq!(
            merged.current_context.as_deref(),
            Some("one"),
            "the first file wins"
        );
        assert_eq!(kubeconfig::read(&[b]).unwrap().contexts.len(), 1);
        let missing = kubeconfig::read(&[dir.path().join("none")])
            .unwrap_err()
            .to_string();
        assert!(missing.contains("none"), "{missing}");
    }

    #[test]
    fn the_server_is_named_by_scheme_host_and_port() {
        let url: http::Uri = "https://10.0.0.1:6443/".parse().unwrap();
        assert_eq!(server_name(&url), "https://10.0.0.1:6443");
    }
}
