//! The "virt" side of an eviction in the background, as KubeVirt's admission webhook answers
//! it: a validating webhook on `pods/eviction` that refuses the eviction of every pod of one
//! namespace with HTTP 429 "Eviction triggered evacuation of VMI ..." (KubeVirt starts a live
//! migration instead), served over HTTPS on loopback with a certificate made here, and
//! registered with the API server. It records each eviction asked for (not the dry runs).

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_rustls::rustls;

/// One eviction the webhook refused: the pod's name, and when.
#[derive(Debug, Clone)]
pub struct Asked {
    pub pod: String,
    pub at: Instant,
}

/// A running webhook, registered for one namespace; unregistered when dropped.
pub struct EvictionWebhook {
    asked: Arc<Mutex<Vec<Asked>>>,
    name: String,
    client: Client,
    server: tokio::task::JoinHandle<()>,
}

impl EvictionWebhook {
    /// Starts the server, registers it for the evictions of `namespace`'s pods, and waits
    /// until the API server calls it (a dry-run eviction of `probe_pod` is answered by it).
    pub async fn start(client: &Client, namespace: &str, probe_pod: &str) -> EvictionWebhook {
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![made.cert.der().clone()], key.into())
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let recorded = asked.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, recorded) = (acceptor.clone(), recorded.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let recorded = recorded.clone();
                        async move { Ok::<_, std::convert::Infallible>(answer(req, &recorded).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let name = super::unique("evict-in-background");
        let config: ValidatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": "virt-launcher-eviction-interceptor.test.descheduler",
                "clientConfig": {
                    "url": format!("https://127.0.0.1:{port}/evict"),
                    "caBundle": base64(made.cert.pem().as_bytes()),
                },
                "rules": [{
                    "operations": ["CREATE"],
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["pods/eviction"],
                    "scope": "Namespaced",
                }],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
            }],
        }))
        .unwrap();
        let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        configs
            .create(&PostParams::default(), &config)
            .await
            .unwrap();
        let hook = EvictionWebhook {
            asked,
            name,
            client: client.clone(),
            server,
        };
        // The API server calls webhooks once its informer saw the configuration.
        let probe = serde_json::json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": probe_pod, "namespace": namespace},
            "deleteOptions": {"dryRun": ["All"]},
        });
        let url = format!("/api/v1/namespaces/{namespace}/pods/{probe_pod}/eviction?dryRun=All");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let request = http::Request::post(&url)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(&probe).unwrap())
                .unwrap();
            match client.request_text(request).await {
                Err(kube::Error::Api(s))
                    if s.code == 429 && s.message.contains("Eviction triggered evacuation") =>
                {
                    break
                }
                other => assert!(
                    Instant::now() < deadline,
                    "the API server never called the webhook: {other:?}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        hook
    }

    /// The evictions asked for so far (dry runs not counted), in order.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    /// Forgets the evictions asked for so far.
    pub fn clear(&self) {
        self.asked.lock().unwrap().clear();
    }

    /// How many times the eviction of `pod` was asked for.
    pub fn times(&self, pod: &str) -> usize {
        self.asked().iter().filter(|a| a.pod == pod).count()
    }
}

impl Drop for EvictionWebhook {
    fn drop(&mut self) {
        self.server.abort();
        let (client, name) = (self.client.clone(), self.name.clone());
        // Best effort: the configuration selects one namespace only.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let configs: Api<ValidatingWebhookConfiguration> = Api::all(client);
                let _ = configs.delete(&name, &DeleteParams::default()).await;
            });
        }
    }
}

/// The webhook's answer to an AdmissionReview: the eviction refused as KubeVirt refuses the
/// eviction of a VM's pod, with HTTP 429 and its message.
async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    asked: &Mutex<Vec<Asked>>,
) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    use http_body_util::BodyExt;
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    let review: serde_json::Value = body
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let request = &review["request"];
    let (namespace, name) = (
        request["namespace"].as_str().unwrap_or_default(),
        request["name"].as_str().unwrap_or_default(),
    );
    if request["dryRun"] != serde_json::json!(true) {
        asked.lock().unwrap().push(Asked {
            pod: name.to_string(),
            at: Instant::now(),
        });
    }
    let out = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": request["uid"],
            "allowed": false,
            "status": {
                "code": 429,
                "message": format!("Eviction triggered evacuation of VMI {namespace}/{name}"),
            },
        },
    });
    hyper::Response::builder()
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            serde_json::to_vec(&out).unwrap(),
        )))
        .unwrap()
}

/// Standard base64, for the caBundle.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
