//! The Prometheus adapter against a real Prometheus (Debian's package, started on loopback by
//! tests/support/prometheus.rs and fed with series the test chooses), against small loopback
//! servers that misbehave (never answer, answer HTML, garbage, or want a token), and
//! `resolve_token` against the real kube-apiserver of the shared control plane.

mod support;

use descheduler::policy::{AuthToken, PrometheusProvider, SecretReference};
use descheduler::snapshot::usage::{NamedSamples, QueryTarget, Sample};
use descheduler::usage::prometheus::{resolve_token, PrometheusClient, AUTH_TOKEN_SECRET_KEY};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::prometheus::Prometheus;
use support::{create_namespace, shared};

const NODES: &str = "\
# TYPE test_node_cpu gauge
test_node_cpu{instance=\"node-a\",kube_node=\"kn-a\"} 0.25
test_node_cpu{instance=\"node-b\",kube_node=\"kn-b\"} 0.75
";

fn provider(url: &str) -> PrometheusProvider {
    PrometheusProvider {
        url: url.to_string(),
        auth_token: None,
        node_label: None,
        ca_file: None,
        insecure_skip_verify: false,
        timeout: Some("3s".to_string()),
    }
}

fn client(url: &str) -> PrometheusClient {
    PrometheusClient::new(&provider(url), None).expect("a client")
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn sorted_nodes(got: &NamedSamples<Sample>) -> Vec<(String, f64)> {
    let mut v: Vec<_> = got
        .nodes
        .iter()
        .map(|(n, s)| (n.clone(), s.value))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn assert_one_line(e: &str) {
    eprintln!("error as reported: {e}");
    assert!(!e.contains('\n'), "the error must be one line: {e}");
}

#[tokio::test]
async fn node_query_maps_by_instance_and_by_a_custom_node_label() {
    let prom = Prometheus::start(NODES, "test_node_cpu");
    prom.wait_for_series("test_node_cpu", 2..=2);

    let got = client(prom.url())
        .query("test_node_cpu", QueryTarget::Node)
        .await
        .unwrap();
    assert!(got.pods.is_empty());
    assert_eq!(
        sorted_nodes(&got),
        vec![("node-a".to_string(), 0.25), ("node-b".to_string(), 0.75)]
    );
    for (_, s) in &got.nodes {
        assert!(
            (s.timestamp - now()).abs() <= 5,
            "sample time {}",
            s.timestamp
        );
    }

    let mut cfg = provider(prom.url());
    cfg.node_label = Some("kube_node".to_string());
    let custom = PrometheusClient::new(&cfg, None).unwrap();
    assert_eq!(custom.node_label(), "kube_node");
    let got = custom
        .query("max by (kube_node) (test_node_cpu)", QueryTarget::Node)
        .await
        .unwrap();
    assert_eq!(
        sorted_nodes(&got),
        vec![("kn-a".to_string(), 0.25), ("kn-b".to_string(), 0.75)]
    );

    // The exporter's series change; the next answer follows.
    prom.set_exposition(&NODES.replace("0.75", "0.5"));
    prom.wait_until("test_node_cpu{instance=\"node-b\"}", "the new value", |v| {
        v.len() == 1 && v[0].1 == "0.5"
    });
    let got = client(prom.url())
        .query("test_node_cpu", QueryTarget::Node)
        .await
        .unwrap();
    assert_eq!(
        sorted_nodes(&got),
        vec![("node-a".to_string(), 0.25), ("node-b".to_string(), 0.5)]
    );

    // Series aggregated away from the node label.
    let e = client(prom.url())
        .query("sum(test_node_cpu)", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("has no label \"instance\""), "{e}");
    assert!(e.contains("sum by (instance)"), "{e}");
    assert!(e.contains(prom.url()), "{e}");
    assert_one_line(&e);
}

#[tokio::test]
async fn pod_query_maps_by_namespace_and_pod() {
    let exposition = "\
# TYPE test_pod_cpu gauge
test_pod_cpu{namespace=\"ns1\",pod=\"p1\",container=\"a\"} 0.1
test_pod_cpu{namespace=\"ns1\",pod=\"p1\",container=\"b\"} 0.2
test_pod_cpu{namespace=\"ns2\",pod=\"p1\",container=\"a\"} 1
";
    let prom = Prometheus::start(exposition, "test_pod_cpu");
    prom.wait_for_series("test_pod_cpu", 3..=3);
    let c = client(prom.url());

    let got = c
        .query("sum by (namespace, pod) (test_pod_cpu)", QueryTarget::Pod)
        .await
        .unwrap();
    assert!(got.nodes.is_empty());
    let mut pods: Vec<_> = got
        .pods
        .iter()
        .map(|((ns, p), s)| (format!("{ns}/{p}"), (s.value * 1000.0).round() as i64))
        .collect();
    pods.sort();
    assert_eq!(
        pods,
        vec![("ns1/p1".to_string(), 300), ("ns2/p1".to_string(), 1000)]
    );

    // Not aggregated: two series (containers) for one pod.
    let e = c.query("test_pod_cpu", QueryTarget::Pod).await.unwrap_err();
    assert!(e.contains("two series for pod ns1/p1"), "{e}");
    assert!(e.contains("sum by (namespace, pod)"), "{e}");
    assert_one_line(&e);

    // Aggregated away from the pod labels.
    let e = c
        .query("sum by (namespace) (test_pod_cpu)", QueryTarget::Pod)
        .await
        .unwrap_err();
    assert!(e.contains("has no label \"pod\""), "{e}");
}

#[tokio::test]
async fn a_range_query_a_scalar_and_bad_promql_are_refused() {
    let prom = Prometheus::start(NODES, "test_node_cpu");
    let c = client(prom.url());

    let e = c
        .query("test_node_cpu[1m]", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("matrix") && e.contains("instant vector"), "{e}");
    assert!(
        e.contains(prom.url()) && e.contains("test_node_cpu[1m]"),
        "{e}"
    );
    assert_one_line(&e);

    let e = c
        .query("scalar(sum(test_node_cpu))", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("scalar") && e.contains("instant vector"), "{e}");

    // Prometheus answers HTTP 400 with errorType bad_data.
    let e = c
        .query("sum by (instance (test_node_cpu", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("HTTP 400"), "{e}");
    assert!(e.contains("bad_data"), "{e}");
    assert!(e.contains("check the query"), "{e}");
    assert_one_line(&e);
}

#[tokio::test]
async fn a_nan_series_refuses_the_answer() {
    let exposition = "\
# TYPE test_ratio gauge
test_ratio{instance=\"node-a\"} 0.5
test_ratio{instance=\"node-b\"} NaN
";
    let prom = Prometheus::start(exposition, "test_ratio");
    prom.wait_for_series("test_ratio", 2..=2);
    let e = client(prom.url())
        .query("test_ratio", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("NaN"), "{e}");
    assert!(e.contains("instance=\"node-b\""), "{e}");
    assert_one_line(&e);

    // A division by zero gives +Inf.
    let e = client(prom.url())
        .query("test_ratio / 0", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("not finite") || e.contains("NaN"), "{e}");
}

#[tokio::test]
async fn prometheus_down_is_an_error_naming_the_url() {
    let mut prom = Prometheus::start(NODES, "test_node_cpu");
    let c = client(prom.url());
    c.query("test_node_cpu", QueryTarget::Node).await.unwrap();
    prom.stop();
    assert!(!prom.is_running());

    let started = Instant::now();
    let e = c
        .query("test_node_cpu", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < c.timeout(),
        "took {:?}",
        started.elapsed()
    );
    assert!(e.contains(prom.url()), "{e}");
    assert!(e.contains("cannot connect"), "{e}");
    assert!(e.to_lowercase().contains("refused"), "{e}");
    assert!(e.contains("running and reachable"), "{e}");
    assert_one_line(&e);
}

/// A loopback server that accepts connections and never answers.
async fn silent_server() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (addr, task)
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let (addr, task) = silent_server().await;
    let url = format!("http://{addr}");
    let mut cfg = provider(&url);
    cfg.timeout = Some("2s".to_string());
    let c = PrometheusClient::new(&cfg, None).unwrap();

    let started = Instant::now();
    let e = c.query("up", QueryTarget::Node).await.unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(4),
        "took {took:?}"
    );
    assert!(e.contains(&url), "{e}");
    assert!(e.contains("did not answer within 2s"), "{e}");
    assert!(e.contains("(timeout)"), "{e}");
    assert_one_line(&e);
    task.abort();
}

/// What a test server saw and answers.
#[derive(Clone)]
struct Canned {
    status: u16,
    content_type: &'static str,
    body: String,
    /// When set, requests without `Authorization: Bearer <token>` get a 401.
    token: Option<String>,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl Canned {
    fn new(status: u16, content_type: &'static str, body: &str) -> Canned {
        Canned {
            status,
            content_type,
            body: body.to_string(),
            token: None,
            seen: Arc::default(),
        }
    }
}

/// Serves `canned` for every path on loopback; returns its base URL.
async fn serve(canned: Canned) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handler = move |headers: http::HeaderMap| {
        let canned = canned.clone();
        async move {
            let auth = headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            canned.seen.lock().unwrap().push(auth.clone());
            if let Some(token) = &canned.token {
                if auth.as_deref() != Some(format!("Bearer {token}").as_str()) {
                    return (
                        http::StatusCode::UNAUTHORIZED,
                        [(http::header::CONTENT_TYPE, "text/plain")],
                        "Unauthorized\n".to_string(),
                    );
                }
            }
            (
                http::StatusCode::from_u16(canned.status).unwrap(),
                [(http::header::CONTENT_TYPE, canned.content_type)],
                canned.body.clone(),
            )
        }
    };
    let app = axum::Router::new().fallback(handler);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

const LOGIN_PAGE: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Please sign in</body></html>\n";

#[tokio::test]
async fn html_and_garbage_answers_are_clear_errors() {
    // A login page answered with 200.
    let (url, task) = serve(Canned::new(200, "text/html", LOGIN_PAGE)).await;
    let e = client(&url)
        .query("up", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains(&url), "{e}");
    assert!(e.contains("not JSON"), "{e}");
    assert!(e.contains("<!DOCTYPE html>"), "{e}");
    assert_one_line(&e);
    task.abort();

    // JSON, but not the API's.
    let (url, task) = serve(Canned::new(200, "application/json", "{\"items\": [1, 2]}")).await;
    let e = client(&url)
        .query("up", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("not a Prometheus API response"), "{e}");
    task.abort();

    // Truncated JSON.
    let (url, task) = serve(Canned::new(
        200,
        "application/json",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vec",
    ))
    .await;
    let e = client(&url)
        .query("up", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("not JSON"), "{e}");
    task.abort();

    // A proxy's error page.
    let (url, task) = serve(Canned::new(
        502,
        "text/html",
        "<html>502 Bad Gateway</html>",
    ))
    .await;
    let e = client(&url)
        .query("up", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains(&url) && e.contains("HTTP 502"), "{e}");
    assert!(e.contains("<html>502 Bad Gateway"), "{e}");
    assert_one_line(&e);
    task.abort();

    // A wrong path prefix.
    let (url, task) = serve(Canned::new(404, "text/plain", "404 page not found\n")).await;
    let e = client(&url)
        .query("up", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains("HTTP 404") && e.contains("base URL"), "{e}");
    task.abort();
}

const VECTOR: &str = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"instance":"node-a"},"value":[1767225600.25,"0.5"]}]}}"#;

#[tokio::test]
async fn the_bearer_token_is_sent_and_a_refusal_names_the_token() {
    let mut canned = Canned::new(200, "application/json", VECTOR);
    canned.token = Some("s3cret".to_string());
    let seen = Arc::clone(&canned.seen);
    let (url, task) = serve(canned).await;

    let c = PrometheusClient::new(&provider(&url), Some("s3cret\n".to_string())).unwrap();
    let got = c.query("up", QueryTarget::Node).await.unwrap();
    assert_eq!(
        got.nodes,
        vec![(
            "node-a".to_string(),
            Sample {
                value: 0.5,
                timestamp: 1767225600
            }
        )]
    );

    let e = client(&url)
        .query("up", QueryTarget::Node)
        .await
        .unwrap_err();
    assert!(e.contains(&url) && e.contains("HTTP 401"), "{e}");
    assert!(
        e.contains("auth token") && e.contains("prometheusAuthToken"),
        "{e}"
    );
    assert_one_line(&e);

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, vec![Some("Bearer s3cret".to_string()), None]);
    task.abort();
}

fn secret_provider(url: &str, namespace: &str, name: &str) -> PrometheusProvider {
    let mut cfg = provider(url);
    cfg.auth_token = Some(AuthToken {
        secret_reference: Some(SecretReference {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }),
    });
    cfg
}

async fn create_secret(client: &kube::Client, ns: &str, name: &str, data: &[(&str, &str)]) {
    let data: BTreeMap<String, ByteString> = data
        .iter()
        .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
        .collect();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap_or_else(|e| panic!("creating secret {ns}/{name}: {e}"));
}

#[tokio::test]
async fn resolve_token_reads_the_secret_from_the_apiserver() {
    let cluster = shared();
    let kube = cluster.client();
    let ns = create_namespace(&kube, "promtoken").await;
    create_secret(
        &kube,
        &ns,
        "prom-token",
        &[(AUTH_TOKEN_SECRET_KEY, "tok-123\n"), ("other", "x")],
    )
    .await;
    create_secret(&kube, &ns, "wrong-key", &[("token", "tok-456")]).await;

    // The token of the Secret, used against a server that wants it.
    let mut canned = Canned::new(200, "application/json", VECTOR);
    canned.token = Some("tok-123".to_string());
    let (url, task) = serve(canned).await;
    let cfg = secret_provider(&url, &ns, "prom-token");
    let token = resolve_token(&cfg, Some(&kube)).await.unwrap();
    assert_eq!(token.as_deref(), Some("tok-123"));
    let got = PrometheusClient::new(&cfg, token)
        .unwrap()
        .query("up", QueryTarget::Node)
        .await
        .unwrap();
    assert_eq!(got.nodes.len(), 1);
    task.abort();

    // A Secret without the key.
    let e = resolve_token(&secret_provider(&url, &ns, "wrong-key"), Some(&kube))
        .await
        .unwrap_err();
    assert!(e.contains(&format!("Secret {ns}/wrong-key")), "{e}");
    assert!(e.contains(AUTH_TOKEN_SECRET_KEY), "{e}");
    assert_one_line(&e);

    // No such Secret.
    let e = resolve_token(&secret_provider(&url, &ns, "missing"), Some(&kube))
        .await
        .unwrap_err();
    assert!(e.contains(&format!("Secret {ns}/missing")), "{e}");
    assert!(e.contains("does not exist"), "{e}");
    assert_one_line(&e);

    // A service account that may not read Secrets.
    let denied = cluster.service_account_client(&ns, "no-secrets").await;
    let e = resolve_token(&secret_provider(&url, &ns, "prom-token"), Some(&denied))
        .await
        .unwrap_err();
    assert!(e.contains("HTTP 403") && e.contains("get secrets"), "{e}");
    assert_one_line(&e);

    // Without a secretReference and outside a pod: no token (this test process is not in a pod).
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() {
        assert_eq!(resolve_token(&provider(&url), Some(&kube)).await, Ok(None));
    }
}
