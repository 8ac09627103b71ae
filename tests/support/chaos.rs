//! A chaos proxy between the descheduler and a test cluster's API server, on loopback.
//!
//! The descheduler is pointed at the proxy by a kubeconfig of its own ([`ChaosProxy::write_kubeconfig`]):
//! plain HTTP to `127.0.0.1:<port>`, with a token the proxy does not read. The proxy forwards each
//! request over HTTPS to the API server as the cluster's admin (its client certificate, the
//! cluster's CA), streaming the answer back, and injects faults on the way: at random, seeded,
//! into the requests of the kinds it was told to. Plain HTTP on the descheduler's side keeps the
//! proxy at the HTTP layer, where every fault of the list it knows lives; TLS to a real API server
//! is what every other live test exercises.
//!
//! The decision for a request is a function of the seed, the request's path and how many
//! requests of that path (watch or not) came before: a failure replays with its seed, up to the
//! order in which the process's tasks make their requests.
//!
//! It records what it injected (by fault kind) and each eviction it saw (pod, when, what it did),
//! for the tests to check against what the descheduler said.

use super::states::Rng;
use bytes::Bytes;
use http_body_util::BodyExt;
use std::collections::BTreeMap;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A fault the proxy injects into a list, a watch or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// A watch forwarded for a while (some of its events), then its connection cut.
    DropWatch,
    /// A body forwarded in part, then paused for a random while (up to a little more than the
    /// client's request timeout), then the rest.
    StallBody,
    /// 429 Too Many Requests with Retry-After: 1 (the API server's priority and fairness).
    TooManyRequests,
    /// 500 Internal Server Error.
    InternalError,
    /// 503 Service Unavailable.
    Unavailable,
    /// A watch answered with a 410 Gone event (its version expired): a relist is due.
    Gone,
    /// A list's body cut at a random byte (in the middle of an item), the connection broken.
    CutList,
    /// A chunk of random bytes among a list's body, or as a watch's next event.
    Garbage,
    /// A list answered only after the client's request timeout has passed.
    SlowList,
}

impl Fault {
    pub const ALL: [Fault; 9] = [
        Fault::DropWatch,
        Fault::StallBody,
        Fault::TooManyRequests,
        Fault::InternalError,
        Fault::Unavailable,
        Fault::Gone,
        Fault::CutList,
        Fault::Garbage,
        Fault::SlowList,
    ];

    fn on_watch(self) -> bool {
        !matches!(self, Fault::CutList | Fault::SlowList)
    }

    fn on_list(self) -> bool {
        !matches!(self, Fault::DropWatch | Fault::Gone)
    }
}

/// What the proxy does to evictions (`POST .../pods/<name>/eviction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvictionFault {
    /// Forwarded as they are.
    #[default]
    None,
    /// The first `times` evictions of each pod answered 429 with `Retry-After: seconds`
    /// (header and Status details, as the API server sends them); later ones forwarded.
    TooMany { times: u32, seconds: u32 },
    /// Forwarded; once the API server has answered, the client's connection is cut before
    /// the answer reaches it.
    CutAfterForwarding,
}

/// One eviction request the proxy saw.
#[derive(Debug, Clone)]
pub struct EvictionSeen {
    /// `namespace/name`.
    pub pod: String,
    pub at: Instant,
    /// Whether it was forwarded to the API server (else the proxy answered it).
    pub forwarded: bool,
    /// The API server's status code (forwarded), or the proxy's.
    pub status: u16,
    /// A dry run (`dryRun=All`): checks only.
    pub dry_run: bool,
}

#[derive(Default)]
struct State {
    faults: Vec<Fault>,
    /// Percent of eligible requests that get a fault.
    percent: i64,
    eviction: EvictionFault,
    /// Requests seen per (path, watch).
    counts: BTreeMap<(String, bool), u64>,
    injected: BTreeMap<Fault, u64>,
    /// (fault, request) of each injection, in order.
    log: Vec<(Fault, String)>,
    evictions: Vec<EvictionSeen>,
    /// Lists (not watches) answered in full, by whether they asked for a page (`limit`).
    lists: BTreeMap<bool, u64>,
    /// Whole lists (no `limit`) of this collection are answered only after the client's
    /// request timeout.
    slow_whole_lists: Option<String>,
    /// Pages are at most this many items, whatever `limit` asked (the API server may
    /// answer fewer items than asked for).
    page_cap: Option<u32>,
    /// Whole lists held past the client's timeout so far.
    held: u64,
}

/// The proxy: started on a port of loopback, stopped when dropped.
pub struct ChaosProxy {
    cut_all: tokio::sync::watch::Sender<u64>,
    port: u16,
    seed: u64,
    state: Arc<Mutex<State>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for ChaosProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// How the proxy reaches the API server, and the timeout the tests give the client.
#[derive(Clone)]
struct Upstream {
    client: reqwest::Client,
    server: String,
    /// The client's `--request-timeout`: a slow list or a long stall is longer than this.
    request_timeout: Duration,
    seed: u64,
    state: Arc<Mutex<State>>,
    /// Bumped to cut every watch open now.
    cuts: tokio::sync::watch::Receiver<u64>,
}

impl ChaosProxy {
    /// Starts the proxy in front of `cluster`, injecting nothing yet. `request_timeout` is the
    /// descheduler's `--request-timeout`, which a slow list and a long stall outlast.
    pub async fn start(cluster: &super::Cluster, seed: u64, request_timeout: Duration) -> Self {
        let pki = cluster.dir().join("pki");
        let read = |f: &str| std::fs::read(pki.join(f)).expect("the cluster's certificates");
        let identity = [read("admin.crt"), read("admin.key")].concat();
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .add_root_certificate(reqwest::Certificate::from_pem(&read("ca.crt")).unwrap())
            .identity(reqwest::Identity::from_pem(&identity).unwrap())
            .build()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let (cut_all, cuts) = tokio::sync::watch::channel(0);
        let upstream = Upstream {
            cuts,
            client,
            server: cluster.server().trim_end_matches('/').to_string(),
            request_timeout,
            seed,
            state: state.clone(),
        };
        let server = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let upstream = upstream.clone();
                        async move { upstream.answer(req).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        ChaosProxy {
            port,
            seed,
            state,
            server,
            cut_all,
        }
    }

    /// Injects `faults` from now on, into `percent` of the requests each can apply to.
    pub fn inject(&self, faults: &[Fault], percent: i64) {
        let mut s = self.state.lock().unwrap();
        s.faults = faults.to_vec();
        s.percent = percent;
    }

    /// From now on, every whole list (no `limit`) of the collection at `path` (such as
    /// `/api/v1/pods`) is answered only after the client's request timeout, as a list too
    /// large for a deadline; its pages (`limit`) are answered as they come, with at most
    /// `page_cap` items each.
    pub fn slow_whole_lists(&self, path: &str, page_cap: Option<u32>) {
        let mut s = self.state.lock().unwrap();
        s.slow_whole_lists = Some(path.to_string());
        s.page_cap = page_cap;
    }

    /// Cuts every watch open now, as a load balancer dropping its connections does: the
    /// watches that come again meet the faults injected.
    pub fn cut_watches(&self) {
        self.cut_all.send_modify(|n| *n += 1);
    }

    /// What evictions get from now on.
    pub fn evictions_get(&self, fault: EvictionFault) {
        self.state.lock().unwrap().eviction = fault;
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// How many times each fault was injected so far.
    pub fn injected(&self) -> BTreeMap<Fault, u64> {
        self.state.lock().unwrap().injected.clone()
    }

    /// Each injection so far: the fault and the request (method and path).
    pub fn injections(&self) -> Vec<(Fault, String)> {
        self.state.lock().unwrap().log.clone()
    }

    /// The eviction requests seen so far.
    pub fn evictions(&self) -> Vec<EvictionSeen> {
        self.state.lock().unwrap().evictions.clone()
    }

    /// Lists (not watches) answered in full so far: (without `limit`, with `limit`).
    pub fn lists_answered(&self) -> (u64, u64) {
        let s = self.state.lock().unwrap();
        (
            s.lists.get(&false).copied().unwrap_or(0),
            s.lists.get(&true).copied().unwrap_or(0),
        )
    }

    /// Whole lists held past the client's timeout so far ([`ChaosProxy::slow_whole_lists`]).
    pub fn whole_lists_held(&self) -> u64 {
        self.state.lock().unwrap().held
    }

    /// Writes a kubeconfig that reaches the cluster through the proxy.
    pub fn write_kubeconfig(&self, path: &Path) {
        std::fs::write(
            path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: chaos\n  cluster:\n    server: http://127.0.0.1:{}\ncontexts:\n- name: chaos\n  context: {{cluster: chaos, user: chaos}}\ncurrent-context: chaos\nusers:\n- name: chaos\n  user:\n    token: read-by-nobody\n",
                self.port
            ),
        )
        .unwrap();
    }
}

/// A response body fed from a channel (an `Err` breaks the client's connection).
struct Channel(tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl hyper::body::Body for Channel {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|r| r.map(hyper::body::Frame::data)))
    }
}

type Answer = http::Response<Channel>;

fn cut() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "cut by the chaos proxy",
    )
}

/// A Status answer of the proxy's own.
fn status(code: u16, reason: &str, retry_after: Option<u32>) -> Answer {
    let mut status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{reason} (injected by the chaos proxy)"), "reason": reason, "code": code,
    });
    let mut response = http::Response::builder()
        .status(code)
        .header("content-type", "application/json");
    if let Some(s) = retry_after {
        status["details"] = serde_json::json!({ "retryAfterSeconds": s });
        response = response.header("retry-after", s.to_string());
    }
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.try_send(Ok(Bytes::from(status.to_string()))).unwrap();
    response.body(Channel(rx)).unwrap()
}

/// The namespace/name of the pod of an eviction's path, if it is one.
fn eviction_of(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/api/v1/namespaces/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [ns, "pods", name, "eviction"] => Some(format!("{ns}/{name}")),
        _ => None,
    }
}

/// Whether `path` is one of the collections the descheduler lists and watches (faults go
/// there only: not to the reads of one object, discovery or the Lease).
fn is_collection(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    let named_namespace = path.starts_with("/api/v1/namespaces/");
    matches!(
        last,
        "pods" | "nodes" | "poddisruptionbudgets" | "namespaces" | "priorityclasses" | "podgroups"
    ) && !named_namespace
}

impl Upstream {
    /// A fault for this request, if one is due: the seed, the path and the request's number
    /// decide.
    fn pick(&self, path: &str, watch: bool) -> (Option<Fault>, Rng) {
        let mut s = self.state.lock().unwrap();
        let n = {
            let c = s.counts.entry((path.to_string(), watch)).or_default();
            *c += 1;
            *c
        };
        let eligible: Vec<Fault> = s
            .faults
            .iter()
            .copied()
            .filter(|f| if watch { f.on_watch() } else { f.on_list() })
            .collect();
        let mut h = self.seed ^ n.wrapping_mul(0x100_0000_01b3) ^ u64::from(watch);
        for b in path.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        let mut rng = Rng::new(h);
        if eligible.is_empty() || !rng.chance(s.percent) {
            return (None, rng);
        }
        let f = rng.pick(&eligible);
        *s.injected.entry(f).or_default() += 1;
        s.log.push((
            f,
            format!("{}{path}", if watch { "WATCH " } else { "GET " }),
        ));
        (Some(f), rng)
    }

    async fn answer(
        &self,
        req: http::Request<hyper::body::Incoming>,
    ) -> Result<Answer, std::io::Error> {
        let path = req.uri().path().to_string();
        let query = req.uri().query().unwrap_or_default().to_string();
        let has = |key: &str| query.split('&').any(|kv| kv.split('=').next() == Some(key));
        let watch = query
            .split('&')
            .any(|kv| kv == "watch=1" || kv == "watch=true");
        let pod = (req.method() == http::Method::POST)
            .then(|| eviction_of(&path))
            .flatten();
        if let Some(pod) = pod {
            return self.eviction(req, pod, query.contains("dryRun=All")).await;
        }
        Ok(self.forward(req, path, has("limit"), watch).await)
    }

    async fn forward(
        &self,
        req: http::Request<hyper::body::Incoming>,
        path: String,
        paged: bool,
        watch: bool,
    ) -> Answer {
        let (fault, mut rng) = if req.method() == http::Method::GET && is_collection(&path) {
            self.pick(&path, watch)
        } else {
            (None, Rng::new(self.seed))
        };
        match fault {
            Some(Fault::TooManyRequests) => return status(429, "TooManyRequests", Some(1)),
            Some(Fault::InternalError) => return status(500, "InternalError", None),
            Some(Fault::Unavailable) => return status(503, "ServiceUnavailable", None),
            Some(Fault::Gone) => {
                let event = serde_json::json!({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "too old resource version (injected by the chaos proxy)",
                    "reason": "Expired", "code": 410}});
                let (tx, rx) = tokio::sync::mpsc::channel(1);
                tx.try_send(Ok(Bytes::from(format!("{event}\n")))).unwrap();
                return http::Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Channel(rx))
                    .unwrap();
            }
            Some(Fault::SlowList) => {
                tokio::time::sleep(self.request_timeout + Duration::from_secs(1)).await;
            }
            _ => {}
        }
        let (slow, cap) = {
            let s = self.state.lock().unwrap();
            (
                s.slow_whole_lists.as_deref() == Some(path.as_str()),
                s.page_cap,
            )
        };
        let list = !watch && req.method() == http::Method::GET && is_collection(&path);
        if list && slow && !paged {
            self.state.lock().unwrap().held += 1;
            tokio::time::sleep(self.request_timeout + Duration::from_secs(1)).await;
        }
        let (parts, body) = req.into_parts();
        let mut target = parts.uri.to_string();
        if let (true, Some(cap)) = (list && paged && slow, cap) {
            let query: Vec<String> = parts
                .uri
                .query()
                .unwrap_or_default()
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some(("limit", n)) if n.parse::<u32>().is_ok_and(|n| n > cap) => {
                        format!("limit={cap}")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            target = format!("{path}?{}", query.join("&"));
        }
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let mut upstream = self
            .client
            .request(parts.method.clone(), format!("{}{target}", self.server))
            .body(body);
        for (name, value) in &parts.headers {
            if name != http::header::HOST && name != http::header::AUTHORIZATION {
                upstream = upstream.header(name, value);
            }
        }
        let Ok(mut response) = upstream.send().await else {
            return status(502, "BadGateway", None);
        };
        let mut answer = http::Response::builder().status(response.status().as_u16());
        for (name, value) in response.headers() {
            if name != http::header::CONTENT_LENGTH && name != http::header::TRANSFER_ENCODING {
                answer = answer.header(name, value);
            }
        }
        let success = response.status().is_success();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let timeout = self.request_timeout;
        let state = self.state.clone();
        let mut cuts = self.cuts.clone();
        cuts.mark_unchanged();
        tokio::spawn(async move {
            let fault = fault.filter(|_| success);
            if !watch && matches!(fault, Some(Fault::CutList | Fault::Garbage)) {
                // The whole list, then part of it (or all of it with garbage in its middle).
                let mut all = Vec::new();
                while let Ok(Some(chunk)) = response.chunk().await {
                    all.extend_from_slice(&chunk);
                }
                let at = 1 + rng.range(0, all.len().saturating_sub(2) as i64) as usize;
                let at = at.min(all.len());
                if fault == Some(Fault::CutList) {
                    let _ = tx.send(Ok(Bytes::copy_from_slice(&all[..at]))).await;
                    let _ = tx.send(Err(cut())).await;
                } else {
                    let junk: Vec<u8> = (0..rng.range(1, 64))
                        .map(|_| rng.next_u64() as u8)
                        .collect();
                    // A chunk of garbage among the body's (not bytes overwritten: under
                    // HTTP and TLS nothing changes a byte in place unnoticed).
                    let body = [&all[..at], &junk[..], &all[at..]].concat();
                    let _ = tx.send(Ok(Bytes::from(body))).await;
                }
                return;
            }
            // Chunks forwarded as they come; a fault after a random number of them.
            let after = rng.range(0, 3);
            let mut n = 0;
            loop {
                if n == after {
                    match fault {
                        Some(Fault::StallBody) => {
                            let ms = rng.range(100, timeout.as_millis() as i64 + 1000);
                            tokio::time::sleep(Duration::from_millis(ms as u64)).await;
                        }
                        Some(Fault::DropWatch) => {
                            tokio::time::sleep(Duration::from_millis(rng.range(0, 1500) as u64))
                                .await;
                            let _ = tx.send(Err(cut())).await;
                            return;
                        }
                        Some(Fault::Garbage) => {
                            let junk: Vec<u8> = (0..rng.range(1, 64))
                                .map(|_| rng.next_u64() as u8)
                                .collect();
                            let _ = tx.send(Ok(Bytes::from([&junk[..], b"\n"].concat()))).await;
                        }
                        _ => {}
                    }
                }
                n += 1;
                let next = tokio::select! {
                    next = response.chunk() => next,
                    _ = cuts.changed(), if watch => {
                        let _ = tx.send(Err(cut())).await;
                        return;
                    }
                };
                match next {
                    Ok(Some(chunk)) => {
                        if tx.send(Ok(chunk)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => {
                        if !watch && success {
                            *state.lock().unwrap().lists.entry(paged).or_default() += 1;
                        }
                        return;
                    }
                    Err(_) => {
                        let _ = tx.send(Err(cut())).await;
                        return;
                    }
                }
            }
        });
        answer.body(Channel(rx)).unwrap()
    }

    async fn eviction(
        &self,
        req: http::Request<hyper::body::Incoming>,
        pod: String,
        dry_run: bool,
    ) -> Result<Answer, std::io::Error> {
        let at = Instant::now();
        let fault = {
            let s = self.state.lock().unwrap();
            let before = s
                .evictions
                .iter()
                .filter(|e| e.pod == pod && !e.dry_run)
                .count() as u32;
            match s.eviction {
                EvictionFault::TooMany { times, seconds } if !dry_run && before < times => {
                    Some(seconds)
                }
                _ => None,
            }
        };
        let record = |forwarded: bool, status: u16| {
            self.state.lock().unwrap().evictions.push(EvictionSeen {
                pod: pod.clone(),
                at,
                forwarded,
                status,
                dry_run,
            });
        };
        if let Some(seconds) = fault {
            record(false, 429);
            return Ok(status(429, "TooManyRequests", Some(seconds)));
        }
        let cut_after =
            !dry_run && self.state.lock().unwrap().eviction == EvictionFault::CutAfterForwarding;
        let (parts, body) = req.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let mut upstream = self
            .client
            .post(format!("{}{}", self.server, parts.uri))
            .body(body);
        for (name, value) in &parts.headers {
            if name != http::header::HOST && name != http::header::AUTHORIZATION {
                upstream = upstream.header(name, value);
            }
        }
        let Ok(response) = upstream.send().await else {
            record(false, 502);
            return Ok(status(502, "BadGateway", None));
        };
        let code = response.status().as_u16();
        let text = response.bytes().await.unwrap_or_default();
        record(true, code);
        if cut_after {
            // No answer at all: the connection breaks as a load balancer's would.
            return Err(cut());
        }
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tx.try_send(Ok(text)).unwrap();
        Ok(http::Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Channel(rx))
            .unwrap())
    }
}
