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

/// A kubeconfig file, or a list of them as KUBECONFIG gives it (`a:b`), merged as kubectl
/// merges them (the first file's settings win).
fn read_kubeconfig(path: &Path) -> Result<kube::config::Kubeconfig, LiveError> {
    use kube::config::Kubeconfig;
    let read = |p: &Path| {
        Kubeconfig::read_from(p).map_err(|e| LiveError::Config(format!("{}: {e}", p.display())))
    };
    let paths: Vec<std::path::PathBuf> = std::env::split_paths(path.as_os_str())
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    if paths.len() <= 1 || path.is_file() {
        return read(path);
    }
    paths.iter().try_fold(Kubeconfig::default(), |merged, p| {
        merged
            .merge(read(p)?)
            .map_err(|e| LiveError::Config(format!("{}: {e}", path.display())))
    })
}

impl ApiClient {
    /// From a kubeconfig file, or else the usual inference (KUBECONFIG, ~/.kube/config,
    /// in-cluster service account).
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
        let options = kube::config::KubeConfigOptions {
            context: context.map(str::to_string),
            ..Default::default()
        };
        let config = match (kubeconfig, context) {
            (Some(path), _) => {
                let kc = read_kubeconfig(path)?;
                kube::Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(|e| LiveError::Config(format!("{}: {e}", path.display())))?
            }
            (None, Some(context)) => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|e| LiveError::Config(format!("context {context:?}: {e}")))?,
            (None, None) => kube::Config::infer()
                .await
                .map_err(|e| LiveError::Config(e.to_string()))?,
        };
        let mut config = config;
        // kube's default retry policy retries HTTP 429 for minutes; for an eviction, 429 means a
        // disruption budget said no, which is recorded and never retried in the cycle.
        config.default_retry = false;
        let client = match buffered_client(&config)? {
            Some(client) => client,
            None => kube::Client::try_from(config).map_err(|e| LiveError::Config(e.to_string()))?,
        };
        Ok(ApiClient::from_client(client, qps, burst))
    }

    pub fn from_client(client: kube::Client, qps: f64, burst: u32) -> ApiClient {
        ApiClient {
            client,
            limiter: quota(qps, burst).map(|q| Arc::new(RateLimiter::direct(q))),
            protobuf: true,
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
fn buffered_client(config: &kube::Config) -> Result<Option<kube::Client>, LiveError> {
    use kube::client::ConfigExt;
    if config.proxy_url.is_some() {
        return Ok(None);
    }
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let https = config
        .rustls_https_connector_with_connector(buffered::Connector(http))
        .map_err(|e| LiveError::Config(e.to_string()))?;
    let client = hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new())
        .build::<_, kube::client::Body>(https);
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .auth_layer()
                .map_err(|e| LiveError::Config(e.to_string()))?,
        )
        .layer(
            config
                .extra_headers_layer()
                .map_err(|e| LiveError::Config(e.to_string()))?,
        )
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
            let connecting = self.0.call(uri);
            Box::pin(async move {
                Ok(Buffered {
                    inner: connecting.await?,
                    buf: Vec::new(),
                    start: 0,
                    end: 0,
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
                    Poll::Ready(Ok(())) => {}
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
        let list = std::env::join_paths([&a, &b]).unwrap();
        let merged = read_kubeconfig(Path::new(&list)).unwrap();
        let names: Vec<&str> = merged.contexts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["one", "two"]);
        assert_eq!(
            merged.current_context.as_deref(),
            Some("one"),
            "the first file wins"
        );
        assert_eq!(read_kubeconfig(&b).unwrap().contexts.len(), 1);
        let missing = read_kubeconfig(&dir.path().join("none"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("none"), "{missing}");
    }
}
