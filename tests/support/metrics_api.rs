//! A stand-in for metrics-server: an HTTPS server on loopback serving `metrics.k8s.io/v1beta1`
//! (discovery, `NodeMetricsList`, `PodMetricsList`), registered with a real kube-apiserver as
//! the APIService `v1beta1.metrics.k8s.io`, so that clients read it through the aggregation
//! layer exactly as they read metrics-server.
//!
//! Routing: the APIService points at a Service of type ExternalName (`externalName:
//! localhost`) in `kube-system`; with `--enable-aggregator-routing=false` (the default) the
//! aggregator resolves such a Service to `https://<externalName>:<APIService port>`
//! (`k8s.io/apiserver/pkg/util/proxy.ResolveCluster`), and its availability check skips the
//! endpoint checks that a ClusterIP Service would need (no kube-proxy, no endpoints here).
//!
//! The server runs on a thread and tokio runtime of its own, so one server can outlive the
//! runtime of the test that started it (several tests may share it). The answers are set by
//! the test ([`MetricsApi::set_nodes`], [`MetricsApi::set_pods`]) and can be garbage, an error
//! status, or no answer at all ([`Reply`]). Every request is recorded ([`MetricsApi::requests`]).
//!
//! The APIService is cluster-scoped: register it only in a cluster of its own
//! (`Cluster::start(Components::apiserver_only())`), never in `support::shared()`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::Response;
use axum::Router;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// The APIService metrics-server registers.
pub const APISERVICE_NAME: &str = "v1beta1.metrics.k8s.io";
/// Where the Service (type ExternalName) of the APIService lives.
pub const SERVICE_NAMESPACE: &str = "kube-system";
pub const SERVICE_NAME: &str = "test-metrics-server";
pub const NODES_PATH: &str = "/apis/metrics.k8s.io/v1beta1/nodes";
pub const PODS_PATH: &str = "/apis/metrics.k8s.io/v1beta1/pods";

/// How long [`MetricsApi::register`] waits for the APIService to be Available and serving.
pub const REGISTER_TIMEOUT: Duration = Duration::from_secs(90);

/// What the server answers for a list path.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 with this body, as `application/json`.
    Json(String),
    /// This status with this body (`text/plain`).
    Status(u16, String),
    /// No answer for `Duration`, then 200 with an empty NodeMetricsList.
    Hang(Duration),
}

/// One request the server saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// `X-Remote-User`: who the aggregator says is asking.
    pub user: Option<String>,
}

struct ServerState {
    nodes: Reply,
    pods: Reply,
    requests: Vec<SeenRequest>,
}

/// The running server. Dropping it stops it.
pub struct MetricsApi {
    addr: SocketAddr,
    state: Arc<Mutex<ServerState>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for MetricsApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsApi")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for MetricsApi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A `NodeMetricsList` of (name, cpu, memory), as metrics-server prints it, all sampled at
/// `timestamp` (RFC 3339).
pub fn node_metrics_list(timestamp: &str, nodes: &[(&str, &str, &str)]) -> String {
    let items: Vec<serde_json::Value> = nodes
        .iter()
        .map(|(name, cpu, memory)| {
            serde_json::json!({
                "metadata": {
                    "name": name,
                    "labels": { "kubernetes.io/hostname": name },
                    "creationTimestamp": timestamp,
                },
                "timestamp": timestamp,
                "window": "20.05s",
                "usage": { "cpu": cpu, "memory": memory },
            })
        })
        .collect();
    serde_json::json!({
        "kind": "NodeMetricsList",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {},
        "items": items,
    })
    .to_string()
}

/// A pod of [`pod_metrics_list`]: namespace, name, and (container, cpu, memory) of each
/// container.
pub type PodMetrics<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str, &'a str)]);

/// A `PodMetricsList`, as metrics-server prints it, all sampled at `timestamp`.
pub fn pod_metrics_list(timestamp: &str, pods: &[PodMetrics<'_>]) -> String {
    let items: Vec<serde_json::Value> = pods
        .iter()
        .map(|(namespace, name, containers)| {
            let containers: Vec<serde_json::Value> = containers
                .iter()
                .map(|(c, cpu, memory)| {
                    serde_json::json!({ "name": c, "usage": { "cpu": cpu, "memory": memory } })
                })
                .collect();
            serde_json::json!({
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "creationTimestamp": timestamp,
                },
                "timestamp": timestamp,
                "window": "15.01s",
                "containers": containers,
            })
        })
        .collect();
    serde_json::json!({
        "kind": "PodMetricsList",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {},
        "items": items,
    })
    .to_string()
}

fn discovery(path: &str) -> Option<serde_json::Value> {
    let group_version = serde_json::json!({
        "groupVersion": "metrics.k8s.io/v1beta1",
        "version": "v1beta1",
    });
    let group = serde_json::json!({
        "name": "metrics.k8s.io",
        "versions": [group_version],
        "preferredVersion": group_version,
    });
    let resource = |name: &str, kind: &str, namespaced: bool| {
        serde_json::json!({
            "name": name,
            "singularName": "",
            "namespaced": namespaced,
            "kind": kind,
            "verbs": ["get", "list"],
        })
    };
    match path.trim_end_matches('/') {
        "/apis" => Some(serde_json::json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [group],
        })),
        "/apis/metrics.k8s.io" => {
            let mut group = group;
            group["kind"] = "APIGroup".into();
            group["apiVersion"] = "v1".into();
            Some(group)
        }
        "/apis/metrics.k8s.io/v1beta1" => Some(serde_json::json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "metrics.k8s.io/v1beta1",
            "resources": [
                resource("nodes", "NodeMetrics", false),
                resource("pods", "PodMetrics", true),
            ],
        })),
        _ => None,
    }
}

fn respond(status: StatusCode, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body))
        .expect("a response")
}

async fn handle(State(state): State<Arc<Mutex<ServerState>>>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let seen = SeenRequest {
        method: request.method().to_string(),
        path: path.clone(),
        query: request.uri().query().map(str::to_string),
        user: request
            .headers()
            .get("x-remote-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let reply = {
        let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
        state.requests.push(seen);
        match path.trim_end_matches('/') {
            NODES_PATH => Some(state.nodes.clone()),
            PODS_PATH => Some(state.pods.clone()),
            _ => None,
        }
    };
    let json = "application/json";
    match reply {
        Some(Reply::Json(body)) => respond(StatusCode::OK, json, body),
        Some(Reply::Status(code, body)) => respond(
            StatusCode::from_u16(code).expect("a valid status code"),
            "text/plain; charset=utf-8",
            body,
        ),
        Some(Reply::Hang(how_long)) => {
            tokio::time::sleep(how_long).await;
            respond(StatusCode::OK, json, node_metrics_list("", &[]))
        }
        None => match discovery(&path) {
            Some(doc) => respond(StatusCode::OK, json, doc.to_string()),
            None => respond(
                StatusCode::NOT_FOUND,
                json,
                serde_json::json!({
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": format!("the test metrics server has nothing at {path}"),
                    "reason": "NotFound",
                    "code": 404,
                })
                .to_string(),
            ),
        },
    }
}

/// TLS connections handed to axum; handshakes run in tasks of their own, so a slow or failed
/// one holds up nobody.
struct TlsListener {
    connections: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.connections.recv().await {
            Some(connection) => connection,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

fn tls_config() -> Result<rustls::ServerConfig, String> {
    let key = rcgen::KeyPair::generate().map_err(|e| format!("a key: {e}"))?;
    let params = rcgen::CertificateParams::new(vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        format!("{SERVICE_NAME}.{SERVICE_NAMESPACE}.svc"),
    ])
    .map_err(|e| format!("certificate parameters: {e}"))?;
    let cert = params
        .self_signed(&key)
        .map_err(|e| format!("a self-signed certificate: {e}"))?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .map_err(|e| format!("the TLS certificate: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<Mutex<ServerState>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let addr = listener.local_addr().expect("a bound address");
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let accept = async move {
        loop {
            let Ok((tcp, peer)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                let handshake = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp));
                if let Ok(Ok(tls)) = handshake.await {
                    let _ = tx.send((tls, peer)).await;
                }
            });
        }
    };
    let app = Router::new().fallback(handle).with_state(state);
    let server = axum::serve(
        TlsListener {
            connections: rx,
            addr,
        },
        app,
    );
    tokio::select! {
        _ = accept => {}
        _ = server => {}
        _ = stop => {}
    }
}

impl MetricsApi {
    /// Starts the server on 127.0.0.1, on a free port, answering empty lists.
    pub fn start() -> MetricsApi {
        let config = tls_config().unwrap_or_else(|e| panic!("the test metrics server: {e}"));
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
        std_listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = std_listener.local_addr().expect("a bound address");
        let state = Arc::new(Mutex::new(ServerState {
            nodes: Reply::Json(node_metrics_list("", &[])),
            pods: Reply::Json(pod_metrics_list("", &[])),
            requests: Vec::new(),
        }));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let server_state = state.clone();
        std::thread::Builder::new()
            .name("test-metrics-server".to_string())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .expect("a tokio runtime");
                runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(std_listener).expect("a tokio listener");
                    serve(listener, acceptor, server_state, stop_rx).await;
                });
                // Requests still hanging are dropped with the runtime.
                runtime.shutdown_background();
            })
            .expect("starting the test metrics server's thread");
        MetricsApi {
            addr,
            state,
            stop: Some(stop_tx),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `https://localhost:<port>`.
    pub fn url(&self) -> String {
        format!("https://localhost:{}", self.port())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What `GET /apis/metrics.k8s.io/v1beta1/nodes` answers from now on.
    pub fn set_nodes(&self, reply: Reply) {
        self.state().nodes = reply;
    }

    /// What `GET /apis/metrics.k8s.io/v1beta1/pods` answers from now on.
    pub fn set_pods(&self, reply: Reply) {
        self.state().pods = reply;
    }

    /// Every request seen since the start or the last [`MetricsApi::clear_requests`].
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.state().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.state().requests.clear();
    }

    /// The requests seen for `path` (discovery and availability checks are on other paths).
    pub fn requests_for(&self, path: &str) -> Vec<SeenRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.trim_end_matches('/') == path)
            .collect()
    }

    /// The Service (type ExternalName, `localhost`) the APIService points at.
    pub fn service(&self) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some(SERVICE_NAME.to_string()),
                namespace: Some(SERVICE_NAMESPACE.to_string()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("ExternalName".to_string()),
                external_name: Some("localhost".to_string()),
                ports: Some(vec![ServicePort {
                    name: Some("https".to_string()),
                    port: i32::from(self.port()),
                    protocol: Some("TCP".to_string()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// The APIService `v1beta1.metrics.k8s.io` as metrics-server's manifests make it (but
    /// with the test Service and port).
    pub fn api_service(&self) -> APIService {
        APIService {
            metadata: ObjectMeta {
                name: Some(APISERVICE_NAME.to_string()),
                ..Default::default()
            },
            spec: Some(APIServiceSpec {
                group: Some("metrics.k8s.io".to_string()),
                version: Some("v1beta1".to_string()),
                insecure_skip_tls_verify: Some(true),
                group_priority_minimum: 100,
                version_priority: 100,
                service: Some(ServiceReference {
                    namespace: Some(SERVICE_NAMESPACE.to_string()),
                    name: Some(SERVICE_NAME.to_string()),
                    port: Some(i32::from(self.port())),
                }),
                ca_bundle: None,
            }),
            status: None,
        }
    }

    /// Creates (or replaces) the Service and the APIService with an admin client, then waits
    /// until the APIService is Available and the node metrics answer through the apiserver.
    /// Panics, with the APIService's conditions, if that takes longer than
    /// [`REGISTER_TIMEOUT`].
    pub async fn register(&self, admin: &Client) {
        let services: Api<Service> = Api::namespaced(admin.clone(), SERVICE_NAMESPACE);
        let want = self.service();
        match services.get_opt(SERVICE_NAME).await {
            Ok(Some(have)) if have.spec == want.spec => {}
            Ok(Some(_)) => {
                let _ = services
                    .delete(SERVICE_NAME, &DeleteParams::default())
                    .await;
                create(&services, &want).await;
            }
            _ => create(&services, &want).await,
        }
        let api_services: Api<APIService> = Api::all(admin.clone());
        let want = self.api_service();
        match api_services.get_opt(APISERVICE_NAME).await {
            Ok(Some(have)) if have.spec == want.spec => {}
            Ok(Some(_)) => {
                let _ = api_services
                    .delete(APISERVICE_NAME, &DeleteParams::default())
                    .await;
                create(&api_services, &want).await;
            }
            _ => create(&api_services, &want).await,
        }
        self.wait_available(admin).await;
    }

    /// Waits until the APIService is Available and `GET .../nodes` answers 2xx through the
    /// apiserver (the discovery of the aggregator may lag its availability).
    pub async fn wait_available(&self, admin: &Client) {
        let api_services: Api<APIService> = Api::all(admin.clone());
        let deadline = tokio::time::Instant::now() + REGISTER_TIMEOUT;
        let mut last;
        loop {
            let available = match api_services.get_opt(APISERVICE_NAME).await {
                Ok(Some(s)) => {
                    let conditions = s.status.and_then(|st| st.conditions).unwrap_or_default();
                    last = format!("{conditions:?}");
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Available" && c.status == "True")
                }
                Ok(None) => {
                    last = "the APIService is gone".to_string();
                    false
                }
                Err(e) => {
                    last = e.to_string();
                    false
                }
            };
            if available {
                let request = http::Request::get(NODES_PATH)
                    .body(Vec::new())
                    .expect("a request");
                match tokio::time::timeout(Duration::from_secs(5), admin.request_text(request))
                    .await
                {
                    Ok(Ok(_)) => return,
                    Ok(Err(e)) => last = format!("Available, but GET {NODES_PATH}: {e}"),
                    Err(_) => last = format!("Available, but GET {NODES_PATH} hangs"),
                }
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "APIService {APISERVICE_NAME} -> {} not serving after {REGISTER_TIMEOUT:?}: {last}",
                    self.url()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Deletes the APIService (the Service stays) and waits until the apiserver no longer
    /// serves metrics.k8s.io (404).
    pub async fn unregister(&self, admin: &Client) {
        let api_services: Api<APIService> = Api::all(admin.clone());
        match api_services
            .delete(APISERVICE_NAME, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => panic!("deleting APIService {APISERVICE_NAME}: {e}"),
        }
        let deadline = tokio::time::Instant::now() + REGISTER_TIMEOUT;
        loop {
            let request = http::Request::get(NODES_PATH)
                .body(Vec::new())
                .expect("a request");
            match admin.request_text(request).await {
                Err(kube::Error::Api(s)) if s.code == 404 => return,
                other if tokio::time::Instant::now() >= deadline => panic!(
                    "metrics.k8s.io still served {REGISTER_TIMEOUT:?} after deleting its \
                     APIService: {other:?}"
                ),
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}

async fn create<K>(api: &Api<K>, object: &K)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("creating {object:?}: {e}"),
    }
}
