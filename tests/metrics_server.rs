//! The metrics-server adapter against a real kube-apiserver: `metrics.k8s.io/v1beta1` is
//! served by the test server of `support::metrics_api`, registered as the APIService
//! `v1beta1.metrics.k8s.io`, and read through the apiserver's aggregation layer, exactly as
//! the descheduler reads metrics-server: values and units, one call per list, failing and
//! garbage answers, a missing APIService, and RBAC.
//!
//! The APIService is cluster-scoped, so this binary runs its own control plane (etcd and
//! kube-apiserver only), shared by its tests, which take turns (they change what the one
//! metrics server answers and whether the APIService exists).

mod support;

use descheduler::usage::metrics_server::{
    fetch, fetch_with_timeout, Smoother, NODES_PATH, PODS_PATH,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;
use support::metrics_api::{
    node_metrics_list, pod_metrics_list, MetricsApi, Reply, APISERVICE_NAME,
};
use support::{unique, Cluster, Components};

const AT: &str = "2026-03-01T12:00:00Z";
const AT_UNIX: i64 = 1_772_366_400;

struct Env {
    cluster: Cluster,
    api: MetricsApi,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let cluster = Cluster::start(Components::apiserver_only());
        eprintln!(
            "metrics_server: control plane ready in {:.1?}",
            cluster.startup_time()
        );
        Env {
            cluster,
            api: MetricsApi::start(),
        }
    })
}

/// One test at a time on the shared control plane and metrics server.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Takes the turn, makes sure the APIService is registered and serving, and resets the
/// server's answers and request log. Returns the turn, the environment and an admin client.
async fn setup() -> (tokio::sync::MutexGuard<'static, ()>, &'static Env, Client) {
    let turn = TURN.lock().await;
    let env = env();
    let admin = env.cluster.client();
    env.api.set_nodes(Reply::Json(node_metrics_list(AT, &[])));
    env.api.set_pods(Reply::Json(pod_metrics_list(AT, &[])));
    env.api.register(&admin).await;
    env.api.clear_requests();
    (turn, env, admin)
}

fn node<'a>(
    answer: &'a descheduler::snapshot::usage::NamedSamples<
        descheduler::snapshot::usage::ResourceSample,
    >,
    name: &str,
) -> &'a descheduler::snapshot::usage::ResourceSample {
    answer
        .nodes
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("node {name} missing from {answer:?}"))
}

fn assert_one_line(e: &str) {
    assert!(!e.contains('\n'), "an error on more than one line: {e}");
}

#[tokio::test]
async fn node_and_pod_metrics_are_read_through_the_aggregation_layer_in_one_call_each() {
    let (_turn, env, admin) = setup().await;
    env.api.set_nodes(Reply::Json(node_metrics_list(
        AT,
        &[
            ("n-nano", "1500000000n", "2Gi"),
            ("n-micro", "250000u", "1048576Ki"),
            ("n-milli", "750m", "512Mi"),
            ("n-cores", "2", "1000"),
            ("n-small", "1n", "1Ki"),
        ],
    )));
    env.api.set_pods(Reply::Json(pod_metrics_list(
        AT,
        &[
            (
                "ns-a",
                "web",
                &[("app", "100m", "10Mi"), ("sidecar", "50000000n", "1024Ki")],
            ),
            ("ns-b", "db", &[("db", "1", "1Gi")]),
        ],
    )));

    let got = fetch(&admin, true)
        .await
        .expect("metrics through the apiserver");
    let cpu_mem = |name: &str| {
        let s = node(&got, name);
        (s.cpu, s.memory)
    };
    assert_eq!(cpu_mem("n-nano"), (1500, 2 << 30));
    assert_eq!(cpu_mem("n-micro"), (250, 1 << 30));
    assert_eq!(cpu_mem("n-milli"), (750, 512 << 20));
    assert_eq!(cpu_mem("n-cores"), (2000, 1000));
    // 1n rounds up to 1m, as Quantity.MilliValue() does.
    assert_eq!(cpu_mem("n-small"), (1, 1024));
    assert!(got.nodes.iter().all(|(_, s)| s.timestamp == AT_UNIX));
    assert_eq!(got.pods.len(), 2, "{got:?}");
    let web = &got
        .pods
        .iter()
        .find(|(k, _)| k == &("ns-a".to_string(), "web".to_string()))
        .expect("ns-a/web")
        .1;
    assert_eq!((web.cpu, web.memory), (150, 11 << 20));
    let db = &got
        .pods
        .iter()
        .find(|(k, _)| k == &("ns-b".to_string(), "db".to_string()))
        .expect("ns-b/db")
        .1;
    assert_eq!((db.cpu, db.memory, db.timestamp), (1000, 1 << 30, AT_UNIX));

    // One list call for all nodes and one for the pods of all namespaces, proxied by the
    // aggregator with the caller's identity.
    let nodes = env.api.requests_for(NODES_PATH);
    let pods = env.api.requests_for(PODS_PATH);
    assert_eq!(nodes.len(), 1, "{:?}", env.api.requests());
    assert_eq!(pods.len(), 1, "{:?}", env.api.requests());
    assert!(nodes.iter().chain(&pods).all(|r| r.method == "GET"));
    assert_eq!(nodes[0].user.as_deref(), Some("descheduler-test-admin"));
    assert!(
        env.api
            .requests()
            .iter()
            .all(|r| !r.path.starts_with(&format!("{NODES_PATH}/"))),
        "a call per node: {:?}",
        env.api.requests()
    );

    // Without pods: the node list only.
    env.api.clear_requests();
    let got = fetch(&admin, false).await.expect("node metrics");
    assert_eq!(got.nodes.len(), 5);
    assert!(got.pods.is_empty());
    assert_eq!(env.api.requests_for(NODES_PATH).len(), 1);
    assert!(env.api.requests_for(PODS_PATH).is_empty());
}

#[tokio::test]
async fn successive_answers_are_smoothed_as_upstream() {
    let (_turn, env, admin) = setup().await;
    let mut smoother = Smoother::new();
    let mut cpu_after = async |cpu: &str| {
        env.api
            .set_nodes(Reply::Json(node_metrics_list(AT, &[("n2", cpu, "1Gi")])));
        let fresh = fetch(&admin, false).await.expect("node metrics");
        smoother.apply(fresh).nodes[0].1.cpu
    };
    // Upstream's metricscollector_test: 1400, then 500 -> 1310, then 900 -> 1269.
    assert_eq!(cpu_after("1400m").await, 1400);
    assert_eq!(cpu_after("500m").await, 1310);
    assert_eq!(cpu_after("900m").await, 1269);
}

#[tokio::test]
async fn failing_and_garbage_answers_are_clear_errors() {
    let (_turn, env, admin) = setup().await;

    env.api.set_nodes(Reply::Status(
        500,
        "unable to fetch node metrics: scraping failed\nsecond line".to_string(),
    ));
    let e = fetch(&admin, false).await.unwrap_err();
    assert_one_line(&e);
    assert!(e.starts_with(&format!("GET {NODES_PATH}: 500")), "{e}");
    assert!(e.contains("scraping failed") && e.contains("logs"), "{e}");

    env.api.set_nodes(Reply::Json(
        "<html><body>502 Bad Gateway</body></html>".to_string(),
    ));
    let e = fetch(&admin, false).await.unwrap_err();
    assert_one_line(&e);
    assert!(
        e.contains(NODES_PATH) && e.contains("not a metrics.k8s.io list"),
        "{e}"
    );

    env.api.set_nodes(Reply::Json(node_metrics_list(
        AT,
        &[("a", "1", "1Gi"), ("b", "lots", "1Gi")],
    )));
    let e = fetch(&admin, false).await.unwrap_err();
    assert!(
        e.contains(NODES_PATH) && e.contains("items[1].usage.cpu"),
        "{e}"
    );

    // Good nodes, broken pods: the error names the pods path.
    env.api
        .set_nodes(Reply::Json(node_metrics_list(AT, &[("a", "1", "1Gi")])));
    env.api.set_pods(Reply::Json(
        r#"{"kind":"PodMetricsList","items":[{"#.to_string(),
    ));
    let e = fetch(&admin, true).await.unwrap_err();
    assert_one_line(&e);
    assert!(e.contains(PODS_PATH), "{e}");
    // The wrong list at a path.
    env.api
        .set_pods(Reply::Json(node_metrics_list(AT, &[("a", "1", "1Gi")])));
    let e = fetch(&admin, true).await.unwrap_err();
    assert!(
        e.contains(PODS_PATH) && e.contains("NodeMetricsList"),
        "{e}"
    );
    env.api.set_pods(Reply::Json(pod_metrics_list(AT, &[])));
    assert!(fetch(&admin, true).await.is_ok());

    // No answer: the caller's bound, not the apiserver's minute.
    env.api.set_nodes(Reply::Hang(Duration::from_secs(30)));
    let started = std::time::Instant::now();
    let e = fetch_with_timeout(&admin, false, Duration::from_secs(2))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_one_line(&e);
    assert!(
        e.contains(NODES_PATH) && e.contains("no answer within 2s") && e.contains("APIService"),
        "{e}"
    );
}

#[tokio::test]
async fn without_the_apiservice_or_its_server_the_error_names_metrics_server() {
    let (_turn, env, admin) = setup().await;

    // The APIService points at a port nobody listens on: the aggregator answers 503.
    let dead_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let api_services: Api<APIService> = Api::all(admin.clone());
    let patch = serde_json::json!({ "spec": { "service": { "port": dead_port } } });
    api_services
        .patch(
            APISERVICE_NAME,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .expect("pointing the APIService at a dead port");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let last = loop {
        let e = fetch(&admin, false).await.err().unwrap_or_default();
        if e.contains(": 503") {
            break e;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never 503 with a dead backend; last: {e:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_one_line(&last);
    assert!(
        last.contains("metrics-server") && last.contains("APIService v1beta1.metrics.k8s.io"),
        "{last}"
    );

    // The APIService deleted: metrics.k8s.io is not served at all (404).
    env.api.unregister(&admin).await;
    let e = fetch(&admin, true).await.unwrap_err();
    assert_one_line(&e);
    assert!(e.contains(&format!("GET {NODES_PATH}: 404")), "{e}");
    assert!(
        e.contains("is metrics-server installed") && e.contains("APIService"),
        "{e}"
    );
    // The next test's setup registers it again.
}

/// A ClusterRole and a binding of it to ServiceAccount `namespace/account`.
async fn bind(admin: &Client, rules: Vec<PolicyRule>, namespace: &str, account: &str) {
    let name = unique("metrics-reader");
    let role = ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        rules: Some(rules),
        ..Default::default()
    };
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("creating a ClusterRole");
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_string()),
            kind: "ClusterRole".to_string(),
            name,
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_string(),
            name: account.to_string(),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("creating a ClusterRoleBinding");
}

/// Fetches until it succeeds (a new binding reaches the authorizer's cache in a moment).
async fn fetch_when_allowed(
    client: &Client,
    pods: bool,
) -> descheduler::snapshot::usage::NamedSamples<descheduler::snapshot::usage::ResourceSample> {
    let mut last = String::new();
    for _ in 0..50 {
        match fetch(client, pods).await {
            Ok(answer) => return answer,
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("still failing after 10 s: {last}");
}

fn metrics_rule(resources: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec!["metrics.k8s.io".to_string()]),
        resources: Some(resources.iter().map(|r| r.to_string()).collect()),
        verbs: vec!["get".to_string(), "list".to_string()],
        ..Default::default()
    }
}

#[tokio::test]
async fn rbac_without_metrics_permission_is_a_403_that_names_the_rule() {
    let (_turn, env, admin) = setup().await;
    env.api
        .set_nodes(Reply::Json(node_metrics_list(AT, &[("a", "1", "1Gi")])));
    let account = unique("no-metrics");
    let client = env
        .cluster
        .service_account_client("default", &account)
        .await;
    let e = fetch(&client, true).await.unwrap_err();
    assert_one_line(&e);
    assert!(e.contains("403"), "{e}");
    assert!(
        e.contains("RBAC")
            && e.contains("get, list")
            && e.contains("nodes and pods")
            && e.contains("apiGroup metrics.k8s.io"),
        "{e}"
    );
    // Refused by the apiserver: the request never reached the metrics server.
    assert!(env.api.requests_for(NODES_PATH).is_empty());

    // Nodes allowed, pods not: the pods call is refused, and says so.
    bind(&admin, vec![metrics_rule(&["nodes"])], "default", &account).await;
    let got = fetch_when_allowed(&client, false).await;
    assert_eq!(got.nodes.len(), 1);
    let e = fetch(&client, true).await.unwrap_err();
    assert!(e.contains(&format!("GET {PODS_PATH}: 403")), "{e}");
}

#[tokio::test]
async fn rbac_with_get_list_on_metrics_nodes_and_pods_is_enough() {
    let (_turn, env, admin) = setup().await;
    env.api
        .set_nodes(Reply::Json(node_metrics_list(AT, &[("a", "1", "1Gi")])));
    env.api.set_pods(Reply::Json(pod_metrics_list(
        AT,
        &[("ns", "p", &[("c", "10m", "1Mi")])],
    )));
    let account = unique("metrics");
    bind(
        &admin,
        vec![metrics_rule(&["nodes", "pods"])],
        "default",
        &account,
    )
    .await;
    let client = env
        .cluster
        .service_account_client("default", &account)
        .await;
    let got = fetch_when_allowed(&client, true).await;
    assert_eq!((got.nodes.len(), got.pods.len()), (1, 1));
    let seen = env.api.requests_for(NODES_PATH);
    let user = format!("system:serviceaccount:default:{account}");
    assert!(
        seen.iter()
            .any(|r| r.user.as_deref() == Some(user.as_str())),
        "{seen:?}"
    );
}

fn manifest<T: serde::de::DeserializeOwned>(file: &str) -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("manifests/base")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The descheduler's own ClusterRole must let it read metrics-server, as upstream's does
/// (`metrics.k8s.io` `nodes` and `pods`: `get`, `list`).
#[tokio::test]
async fn the_manifests_clusterrole_can_read_metrics() {
    let (_turn, env, admin) = setup().await;
    env.api
        .set_nodes(Reply::Json(node_metrics_list(AT, &[("a", "1", "1Gi")])));
    env.api.set_pods(Reply::Json(pod_metrics_list(
        AT,
        &[("ns", "p", &[("c", "10m", "1Mi")])],
    )));
    let role: ClusterRole = manifest("clusterrole.yaml");
    let binding: ClusterRoleBinding = manifest("clusterrolebinding.yaml");
    let subject = binding
        .subjects
        .as_ref()
        .and_then(|s| s.first())
        .cloned()
        .expect("a subject in clusterrolebinding.yaml");
    let namespace = subject.namespace.clone().unwrap_or_default();
    let ssa = PatchParams::apply("metrics-server-test").force();
    Api::<ClusterRole>::all(admin.clone())
        .patch(
            role.metadata.name.as_deref().unwrap(),
            &ssa,
            &Patch::Apply(&role),
        )
        .await
        .expect("applying manifests/base/clusterrole.yaml");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch(
            binding.metadata.name.as_deref().unwrap(),
            &ssa,
            &Patch::Apply(&binding),
        )
        .await
        .expect("applying manifests/base/clusterrolebinding.yaml");
    let client = env
        .cluster
        .service_account_client(&namespace, &subject.name)
        .await;
    let mut last = String::new();
    for _ in 0..50 {
        match fetch(&client, true).await {
            Ok(got) => {
                assert_eq!((got.nodes.len(), got.pods.len()), (1, 1));
                return;
            }
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "the descheduler's ClusterRole (manifests/base/clusterrole.yaml) cannot read \
         metrics-server: {last}"
    );
}

/// Creates a pod owned by a ReplicaSet (evictable by the DefaultEvictor), bound to `node`,
/// requesting 250m, and marks it Running as a kubelet would.
async fn owned_running_pod(admin: &Client, ns: &str, name: &str, node: &str) {
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name,
            "labels": {"app": "api"},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api",
                "uid": "6b3f0c8e-0000-4000-8000-000000000001", "controller": true
            }]
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "api", "image": "registry.example/api:1",
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}]
        }
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    support::mark_pod_running(admin, ns, name).await;
}

/// The binary in live dry-run mode reads NodeMetrics and PodMetrics through the aggregated
/// API and plans LowNodeUtilization by them: the node that is hot by usage (not by requests)
/// gives away as many pods as its measured usage says.
#[tokio::test]
async fn the_binary_balances_by_metrics_server_usage_through_the_aggregated_api() {
    let (_turn, env, admin) = setup().await;
    let ns = support::create_namespace(&admin, "usage").await;
    let prefix = unique("mu");
    let names: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|s| format!("{prefix}-{s}"))
        .collect();
    for n in &names {
        support::create_node(&admin, support::NodeConfig::new(n).cpu("4").memory("8Gi")).await;
    }
    let mut pod_metrics = Vec::new();
    for (i, n) in names.iter().enumerate() {
        for j in 0..3 {
            let pod = format!("api-{i}{j}");
            owned_running_pod(&admin, &ns, &pod, n).await;
            pod_metrics.push((pod, if i == 0 { "900m" } else { "50m" }));
        }
    }
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    env.api.set_nodes(Reply::Json(node_metrics_list(
        &now,
        &[
            (names[0].as_str(), "3600m", "2Gi"),
            (names[1].as_str(), "200m", "1Gi"),
            (names[2].as_str(), "200m", "1Gi"),
        ],
    )));
    let containers: Vec<[(&str, &str, &str); 1]> = pod_metrics
        .iter()
        .map(|(_, cpu)| [("api", *cpu, "200Mi")])
        .collect();
    let pods: Vec<support::metrics_api::PodMetrics<'_>> = pod_metrics
        .iter()
        .zip(&containers)
        .map(|((p, _), c)| (ns.as_str(), p.as_str(), &c[..]))
        .collect();
    env.api.set_pods(Reply::Json(pod_metrics_list(&now, &pods)));

    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: kubernetes.io/hostname in ({})
metricsProviders:
- source: KubernetesMetrics
profiles:
- name: usage
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {{cpu: 20}}
      targetThresholds: {{cpu: 50}}
      metricsUtilization: {{source: KubernetesMetrics}}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
",
            names.join(",")
        ),
    )
    .unwrap();
    let out = std::process::Command::new(support::bin())
        .env("DESCHEDULER_SECURE_PORT", support::process::NO_SECURE_PORT)
        .args(["--kubeconfig", env.cluster.kubeconfig().to_str().unwrap()])
        .args(["--policy-config-file", policy.to_str().unwrap()])
        .args(["--dry-run", "-o", "json"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let planned: Vec<&str> = v["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    // By requests every node is at 18.75%; measured, the first is at 90%: 3600m - 900m - 900m
    // = 1800m (45%) after two pods.
    assert_eq!(
        planned,
        vec![format!("{ns}/api-00"), format!("{ns}/api-01")],
        "{v}"
    );
    let first = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == names[0].as_str())
        .unwrap();
    assert_eq!(first["measured"]["source"], "metrics-server", "{first}");
    assert_eq!(first["measured"]["before"]["cpu"], 90.0);
    assert_eq!(first["measured"]["after"]["cpu"], 45.0);
    // One list call for the nodes and one for the pods.
    assert_eq!(
        env.api
            .requests_for(descheduler::usage::metrics_server::NODES_PATH)
            .len(),
        1
    );
    assert_eq!(
        env.api
            .requests_for(descheduler::usage::metrics_server::PODS_PATH)
            .len(),
        1
    );
}
