//! How live mode reads the cluster, against a real kube-apiserver of its own per test (no
//! controller manager, scheduler or kubelet: the tests write objects and statuses as those
//! would): a one-shot cycle plans exactly what the offline planner plans from `kubectl get -o
//! json` of the same objects; continuous mode follows watch events (pods created and deleted,
//! a node going NotReady, a disruption budget changing) into the next cycles' plans; and a
//! watch whose version expired (410 Gone) is listed again, so changes made while it was cut
//! off are seen, and no cycle plans from a picture whose watch has been down for longer than
//! `--cache-sync-timeout`. A profile that moves pods by surge reads the Deployments,
//! HorizontalPodAutoscalers and ResourceQuotas too, listed and watched alike; one that does
//! not reads none of them.

mod support;

use descheduler::snapshot::{Autoscaler, Deployment, ResourceQuota, Workloads};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::process::{run_bin, Descheduler};
use support::*;

const NOW: &str = "2026-12-01T00:00:00Z";

/// RemoveDuplicates and LowNodeUtilization, as a user would combine them.
const POLICY: &str = r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: default
    pluginConfig:
      - name: DefaultEvictor
      - name: RemoveDuplicates
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20, memory: 20, pods: 20}
          targetThresholds: {cpu: 50, memory: 50, pods: 50}
    plugins:
      balance:
        enabled: [RemoveDuplicates, LowNodeUtilization]
"#;

/// RemoveDuplicates alone: its plan is easy to predict from the pods per node.
const DUPLICATES: &str = r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: default
    pluginConfig:
      - name: DefaultEvictor
      - name: RemoveDuplicates
    plugins:
      balance:
        enabled: [RemoveDuplicates]
"#;

async fn nodes(client: &kube::Client, names: &[&str]) {
    for n in names {
        create_node(
            client,
            NodeConfig::new(n)
                .cpu("4")
                .memory("8Gi")
                .label("topology.kubernetes.io/zone", n),
        )
        .await;
    }
}

/// A control plane of its own, a namespace named from `prefix`, and Ready `nodes`.
async fn started(
    components: Components,
    prefix: &str,
    names: &[&str],
) -> (Cluster, kube::Client, String) {
    let cluster = Cluster::start(components);
    let client = cluster.client();
    let ns = create_namespace(&client, prefix).await;
    nodes(&client, names).await;
    (cluster, client, ns)
}

/// A ReplicaSet (nothing runs it) and its Running pods, `name-0`, `name-1`, ... on `on`.
async fn replicaset(client: &kube::Client, ns: &str, name: &str, cpu: &str, on: &[&str]) {
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": on.len(),
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": PAUSE_IMAGE}]}
            }
        }
    }))
    .unwrap();
    let rs = Api::<ReplicaSet>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &rs)
        .await
        .unwrap();
    let uid = rs.metadata.uid.unwrap();
    for (i, node) in on.iter().enumerate() {
        pod(client, ns, &format!("{name}-{i}"), name, &uid, cpu, node).await;
    }
}

async fn pod(
    client: &kube::Client,
    ns: &str,
    name: &str,
    rs: &str,
    rs_uid: &str,
    cpu: &str,
    node: &str,
) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"app": rs},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs_uid,
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "c", "image": PAUSE_IMAGE,
                "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}
            }]
        }
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("creating pod {ns}/{name}: {e}"));
    mark_pod_running(client, ns, name).await;
}

async fn rs_uid(client: &kube::Client, ns: &str, name: &str) -> String {
    Api::<ReplicaSet>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap()
}

/// A PodDisruptionBudget over `app`, with the status the disruption controller would write.
async fn budget(client: &kube::Client, ns: &str, app: &str, allowed: i32) {
    let api = Api::<PodDisruptionBudget>::namespaced(client.clone(), ns);
    if api.get_opt(app).await.unwrap().is_none() {
        let pdb: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": app},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}
        }))
        .unwrap();
        api.create(&PostParams::default(), &pdb).await.unwrap();
    }
    let status = json!({"status": {
        "disruptionsAllowed": allowed, "currentHealthy": 3, "desiredHealthy": 1,
        "expectedPods": 3, "observedGeneration": 1
    }});
    api.patch_status(app, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

async fn set_ready(client: &kube::Client, node: &str, ready: bool) {
    let api = Api::<Node>::all(client.clone());
    let mut n = api.get_status(node).await.unwrap();
    let status = if ready { "True" } else { "False" };
    for c in n.status.as_mut().unwrap().conditions.as_mut().unwrap() {
        if c.type_ == "Ready" {
            c.status = status.to_string();
        }
    }
    api.replace_status(node, &PostParams::default(), &n)
        .await
        .unwrap();
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

async fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let r = run_bin(args).await;
    (r.code, r.stdout, r.stderr)
}

/// The evicted pods of a report, as `ns/name`, sorted.
fn evicted(report: &Value) -> Vec<String> {
    let mut v: Vec<String> = report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pod"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn a_live_cycle_plans_what_the_offline_planner_plans_from_the_same_objects() {
    let (cluster, client, ns) = started(
        Components::apiserver_only(),
        "shop",
        &["n-a", "n-b", "n-c", "n-d"],
    )
    .await;
    // n-a is hot and holds most copies of web; n-c and n-d are empty.
    replicaset(&client, &ns, "web", "500m", &["n-a", "n-a", "n-a", "n-b"]).await;
    replicaset(&client, &ns, "batch", "600m", &["n-a", "n-a", "n-a"]).await;
    replicaset(&client, &ns, "api", "200m", &["n-b", "n-b"]).await;
    budget(&client, &ns, "batch", 1).await;

    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "policy.yaml", POLICY);
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    // Pods and nodes listed in protobuf (the default), then as JSON: the same plan.
    let mut plans = Vec::new();
    for content_type in ["application/vnd.kubernetes.protobuf", "application/json"] {
        let (code, plan, stderr) = run(&[
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--kubeconfig",
            &kubeconfig,
            "--kube-api-content-type",
            content_type,
            "--dry-run",
            "-o",
            "json",
            "--now",
            NOW,
        ])
        .await;
        assert_eq!(code, Some(0), "{content_type}: {stderr}");
        plans.push(plan);
    }
    let (live, live_json) = (plans.remove(0), plans.remove(0));

    // The same objects, as a user dumps them.
    let kubectl = bin_dir().join("kubectl");
    let dump = std::process::Command::new(&kubectl)
        .args([
            "--kubeconfig",
            &kubeconfig,
            "get",
            "nodes,pods,poddisruptionbudgets,namespaces,priorityclasses",
            "-A",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let snapshot = dir.path().join("cluster.json");
    std::fs::write(&snapshot, &dump.stdout).unwrap();
    let (code, offline, stderr) = run(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--snapshot",
        snapshot.to_str().unwrap(),
        "-o",
        "json",
        "--now",
        NOW,
    ])
    .await;
    assert_eq!(code, Some(0), "{stderr}");

    let live: Value = serde_json::from_str(&live).unwrap();
    let offline: Value = serde_json::from_str(&offline).unwrap();
    assert!(
        evicted(&live).len() >= 3,
        "the cluster should need moves: {live:#}"
    );
    // The budget of batch allows one eviction: no plan takes more.
    assert!(
        evicted(&live)
            .iter()
            .filter(|p| p.contains("/batch-"))
            .count()
            <= 1,
        "{live:#}"
    );
    assert_eq!(live, offline, "live and offline plans differ");
    let live_json: Value = serde_json::from_str(&live_json).unwrap();
    assert_eq!(live, live_json, "plans from protobuf and JSON lists differ");
}

/// A descheduler in continuous mode and its reports (one JSON document per cycle).
struct Continuous(Descheduler);

impl Continuous {
    /// A dry run every second, JSON reports, logs at info level.
    fn dry_run(policy: &Path, kubeconfig: &str, more: &[&str]) -> Continuous {
        let mut args = vec![
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig,
            "--dry-run",
            "--descheduling-interval",
            "1s",
            "-o",
            "json",
            "-v",
            "2",
        ];
        args.extend_from_slice(more);
        Continuous(Descheduler::spawn(&args))
    }

    fn reports(&self) -> Vec<Value> {
        let text = self.0.output();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect()
    }

    fn stderr(&self) -> String {
        self.0.stderr()
    }

    /// Waits for a cycle that starts after now and plans to evict exactly `want`.
    async fn plans(&mut self, what: &str, want: &[String]) {
        let seen = self.reports().len();
        let mut last = None;
        let ok = wait_until(Duration::from_secs(30), || {
            let reports = self.reports();
            // The cycle running now may have read the cluster before the change: skip it.
            let fresh = reports.get(seen + 1..).unwrap_or_default();
            last = fresh.last().cloned();
            let found = fresh.iter().any(|r| evicted(r) == want);
            async move { found }
        })
        .await;
        if let Some(status) = self.0.exited() {
            panic!(
                "{what}: the descheduler exited ({status}): {}",
                self.stderr()
            );
        }
        assert!(
            ok,
            "{what}: no cycle planned {want:?}; the last planned {:?}\n{}",
            last.as_ref().map(evicted),
            self.stderr()
        );
    }
}

fn pods(ns: &str, names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|n| format!("{ns}/{n}")).collect();
    v.sort();
    v
}

#[tokio::test]
async fn continuous_mode_follows_watch_events_into_the_next_cycles() {
    let (cluster, client, ns) =
        started(Components::apiserver_only(), "shop", &["n1", "n2", "n3"]).await;
    // Three copies on n1, three nodes: at most one per node, two go (the first in the
    // eviction order: same priority and QoS, so by name).
    replicaset(&client, &ns, "web", "100m", &["n1", "n1", "n1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "policy.yaml", DUPLICATES);
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let mut d = Continuous::dry_run(&policy, &kubeconfig, &[]);
    let two = |a: &str, b: &str| pods(&ns, &[a, b]);
    d.plans("the first cycle", &two("web-0", "web-1")).await;

    // A pod created: four copies over three nodes, at most two per node, one goes.
    let uid = rs_uid(&client, &ns, "web").await;
    pod(&client, &ns, "web-3", "web", &uid, "100m", "n2").await;
    d.plans("a pod created", &pods(&ns, &["web-0"])).await;

    // A pod deleted: three copies again, one per node.
    Api::<Pod>::namespaced(client.clone(), &ns)
        .delete("web-3", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    d.plans("a pod deleted", &two("web-0", "web-1")).await;

    // A disruption budget that allows nothing, then one eviction.
    budget(&client, &ns, "web", 0).await;
    d.plans("a budget allowing nothing", &[]).await;
    budget(&client, &ns, "web", 1).await;
    d.plans("a budget allowing one", &pods(&ns, &["web-0"]))
        .await;

    // A node going NotReady: two Ready nodes, at most two per node; one goes.
    Api::<PodDisruptionBudget>::namespaced(client.clone(), &ns)
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    d.plans("the budget deleted", &two("web-0", "web-1")).await;
    set_ready(&client, "n3", false).await;
    d.plans("a node NotReady", &pods(&ns, &["web-0"])).await;
    set_ready(&client, "n3", true).await;
    d.plans("the node Ready again", &two("web-0", "web-1"))
        .await;
    assert!(
        !d.stderr().contains("listing again"),
        "no watch should have expired: {}",
        d.stderr()
    );
}

/// A loopback TCP proxy that can cut every connection through it and refuse new ones.
struct Proxy {
    port: u16,
    open: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(to: u16) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (o, c) = (open.clone(), conns.clone());
        tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                if !o.load(Ordering::SeqCst) {
                    drop(down);
                    continue;
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut up) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                });
                c.lock().unwrap().push(task);
            }
        });
        Proxy { port, open, conns }
    }

    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for t in self.conns.lock().unwrap().drain(..) {
            t.abort();
        }
    }

    fn heal(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_watch_cut_off_until_its_version_expired_is_listed_again() {
    // No watch cache, and etcd compacted every second: a watch resumed from a version older
    // than a few seconds is refused with 410 Gone, as any watch is once its version has been
    // compacted away.
    let components = Components {
        apiserver_args: &["--watch-cache=false", "--etcd-compaction-interval=1s"],
        ..Components::apiserver_only()
    };
    let (cluster, client, ns) = started(components, "shop", &["n1", "n2", "n3"]).await;
    replicaset(&client, &ns, "web", "100m", &["n1", "n1", "n1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write(dir.path(), "policy.yaml", DUPLICATES);
    let port: u16 = cluster
        .server()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let proxy = Proxy::start(port).await;
    let kubeconfig = write(
        dir.path(),
        "through-proxy.kubeconfig",
        &std::fs::read_to_string(cluster.kubeconfig())
            .unwrap()
            .replace(
                cluster.server(),
                &format!("https://127.0.0.1:{}", proxy.port),
            ),
    );
    let mut d = Continuous::dry_run(
        &policy,
        kubeconfig.to_str().unwrap(),
        &["--cache-sync-timeout", "2s"],
    );
    d.plans("the first cycle", &pods(&ns, &["web-0", "web-1"]))
        .await;

    // Cut off, a pod goes; other writes move etcd on, and compaction passes the watch's
    // version.
    proxy.cut();
    Api::<Pod>::namespaced(client.clone(), &ns)
        .delete("web-2", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let configmaps = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    for i in 0..6 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("tick-{i}")}})).unwrap();
        configmaps
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    proxy.heal();
    // Two copies on n1 now, one goes.
    d.plans("after the watch expired", &pods(&ns, &["web-0"]))
        .await;
    assert!(
        d.stderr().contains("listing again"),
        "the watch should have expired and been listed again: {}",
        d.stderr()
    );
    // While cut off for longer than --cache-sync-timeout, no cycle planned from the stale
    // picture.
    assert!(
        d.stderr()
            .contains("nothing is planned from a stale picture"),
        "cycles while the watches were down should have refused to plan: {}",
        d.stderr()
    );
}

#[tokio::test]
async fn now_sets_the_planning_time_of_a_one_shot_cycle_and_is_refused_in_continuous_mode() {
    // Two Ready nodes: a cycle with fewer plans nothing, as upstream's.
    let (cluster, client, ns) = started(Components::apiserver_only(), "jobs", &["n1", "n2"]).await;
    replicaset(&client, &ns, "worker", "100m", &["n1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "policy.yaml",
        r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: default
    pluginConfig:
      - name: DefaultEvictor
      - name: PodLifeTime
        args: {maxPodLifeTimeSeconds: 3600}
    plugins:
      deschedule:
        enabled: [PodLifeTime]
"#,
    );
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let once = |now: Option<String>| {
        let (policy, kubeconfig) = (policy.clone(), kubeconfig.clone());
        async move {
            let mut args = vec![
                "--policy-config-file".to_string(),
                policy.to_str().unwrap().to_string(),
                "--kubeconfig".to_string(),
                kubeconfig,
                "--dry-run".to_string(),
                "-o".to_string(),
                "json".to_string(),
            ];
            if let Some(now) = now {
                args.extend(["--now".to_string(), now]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = run(&args).await;
            assert_eq!(code, Some(0), "{err}");
            evicted(&serde_json::from_str(&out).unwrap())
        }
    };
    // The pod is seconds old: at the clock's time it stays; two hours later it is over age.
    assert!(once(None).await.is_empty());
    let later = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    assert_eq!(once(Some(later.clone())).await, pods(&ns, &["worker-0"]));

    let (code, _, err) = run(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        &kubeconfig,
        "--dry-run",
        "--descheduling-interval",
        "1m",
        "--now",
        &later,
    ])
    .await;
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--now") && err.contains("continuous mode"),
        "{err}"
    );
}

/// GETs `path` accepting `accept`; the response's Content-Type and body.
async fn raw(client: &kube::Client, path: &str, accept: &str) -> (String, Vec<u8>) {
    use http_body_util::BodyExt;
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert!(
        response.status().is_success(),
        "GET {path}: {}",
        response.status()
    );
    let content_type = response.headers()[http::header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_string();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (content_type, body.to_vec())
}

/// `path`'s list decoded from the API's JSON and from its protobuf: (json, protobuf).
async fn both_encodings(client: &kube::Client, path: &str, kind: &'static str) -> (String, String) {
    use descheduler::snapshot::decode::proto;
    use descheduler::snapshot::decode::stream::{ListReader, ObjectType};
    let object = ObjectType {
        kind,
        api_version: "v1",
    };
    let mut decoded = Vec::new();
    for accept in ["application/json", proto::ACCEPT] {
        let (content_type, body) = raw(client, path, accept).await;
        if accept == proto::ACCEPT {
            assert!(
                content_type.starts_with(proto::MEDIA_TYPE),
                "{content_type}"
            );
        }
        let mut reader = ListReader::new(format!("{path} as {accept}"), object, &content_type);
        // In pieces, as the live path reads it.
        for piece in body.chunks(1000) {
            reader.push(piece).unwrap();
        }
        let list = reader.finish().unwrap();
        assert!(!list.resource_version.is_empty());
        decoded.push(format!("{:#?}", list.parts));
    }
    let protobuf = decoded.pop().unwrap();
    (decoded.pop().unwrap(), protobuf)
}

/// The API's protobuf answers (what live mode asks for, for pods and nodes) give the model
/// its JSON answers give, for objects with every field the readers read.
#[tokio::test]
async fn protobuf_and_json_answers_read_into_the_same_model() {
    let (_cluster, client, ns) = started(Components::apiserver_only(), "wire", &["n-a"]).await;
    create_node(
        &client,
        NodeConfig::new("n-tainted")
            .cpu("8")
            .memory("16Gi")
            .label("disk", "ssd")
            .taint("dedicated", "gpu", "NoSchedule")
            .unschedulable(),
    )
    .await;
    let classes = Api::<k8s_openapi::api::scheduling::v1::PriorityClass>::all(client.clone());
    classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "high"}, "value": 1000})).unwrap(),
        )
        .await
        .unwrap();
    let term = json!({
        "labelSelector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]
        },
        "namespaces": [ns],
        "namespaceSelector": {},
        "topologyKey": "kubernetes.io/hostname"
    });
    let rich: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "rich",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"descheduler.alpha.kubernetes.io/evict": "true", "note": "x"},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-uid",
                "controller": true
            }]
        },
        "spec": {
            "nodeName": "n-a",
            "priorityClassName": "high",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "volumes": [
                {"name": "scratch", "emptyDir": {}},
                {"name": "host", "hostPath": {"path": "/var/log"}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
            ],
            "initContainers": [
                {"name": "setup", "image": PAUSE_IMAGE,
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                {"name": "sidecar", "image": PAUSE_IMAGE, "restartPolicy": "Always",
                 "resources": {"requests": {"cpu": "50m"}}}
            ],
            "containers": [{
                "name": "app", "image": PAUSE_IMAGE,
                "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 53, "protocol": "UDP"}],
                "env": [{"name": "A", "value": "b"}],
                "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
            }],
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
                {"operator": "Exists"}
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd", "nvme"]}],
                        "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n-x"]}]
                    }]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 5,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
                    }]
                },
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term],
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term}]
                }
            },
            "topologySpreadConstraints": [{
                "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": 2, "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore",
                "matchLabelKeys": ["pod-template-hash"]
            }],
            "schedulingGroup": {"podGroupName": "train"}
        }
    }))
    .unwrap();
    let bare: Pod = serde_json::from_value(json!({
        "metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "c", "image": PAUSE_IMAGE}]}
    }))
    .unwrap();
    let pods = Api::<Pod>::namespaced(client.clone(), &ns);
    for p in [&rich, &bare] {
        pods.create(&PostParams::default(), p).await.unwrap();
    }
    // What a kubelet would write: a waiting, a running and a terminated container.
    let status = json!({"status": {
        "phase": "Running",
        "startTime": "2026-11-30T10:00:05Z",
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
             "lastTransitionTime": "2026-11-30T10:01:00Z"},
            {"type": "PodScheduled", "status": "True"}
        ],
        "initContainerStatuses": [
            {"name": "setup", "image": PAUSE_IMAGE, "imageID": "", "ready": false, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "sidecar", "image": PAUSE_IMAGE, "imageID": "", "ready": true, "restartCount": 1,
             "state": {"running": {"startedAt": "2026-11-30T10:00:06Z"}}}
        ],
        "containerStatuses": [
            {"name": "app", "image": PAUSE_IMAGE, "imageID": "", "ready": false, "restartCount": 7,
             "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}}
        ]
    }});
    pods.patch_status("rich", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();

    let (json, protobuf) = both_encodings(&client, "/api/v1/pods", "Pod").await;
    assert!(
        json.contains("CrashLoopBackOff")
            && json.contains("pod-template-hash")
            && json.contains("pod_group: Some(")
            && json.contains("\"train\""),
        "{json}"
    );
    assert_eq!(
        json, protobuf,
        "pods: the JSON and protobuf answers read differently"
    );
    let (json, protobuf) = both_encodings(&client, "/api/v1/nodes", "Node").await;
    assert!(
        json.contains("dedicated") && json.contains("n-tainted"),
        "{json}"
    );
    assert_eq!(
        json, protobuf,
        "nodes: the JSON and protobuf answers read differently"
    );
}

/// The workloads of `ns` in `w` (the API server holds others of its own).
fn workloads_of(w: &Workloads, ns: &str) -> Workloads {
    Workloads {
        deployments: w
            .deployments
            .iter()
            .filter(|d| &*d.namespace == ns)
            .cloned()
            .collect(),
        autoscalers: w
            .autoscalers
            .iter()
            .filter(|a| &*a.namespace == ns)
            .cloned()
            .collect(),
        quotas: w
            .quotas
            .iter()
            .filter(|q| &*q.namespace == ns)
            .cloned()
            .collect(),
    }
}

/// A profile that moves pods by surge reads the cluster's Deployments, HorizontalPodAutoscalers
/// and ResourceQuotas, from a list (one-shot mode) and from their watches (continuous mode),
/// which follow their changes; a profile that does not reads none of them, and needs no RBAC
/// for them. The ServiceAccount of the manifests reads them only with the surge component, and
/// without it the refusal names the rule to add.
#[tokio::test]
async fn surges_read_deployments_autoscalers_and_quotas_from_lists_and_watches() {
    use descheduler::live::client::ApiClient;
    use descheduler::live::source::{list_snapshot, WatchSource};
    use k8s_openapi::api::apps::v1::Deployment as ApiDeployment;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use k8s_openapi::api::core::v1::ResourceQuota as ApiQuota;

    let (cluster, client, ns) = started(Components::apiserver_only(), "surge", &["n-a"]).await;
    let mark = r#"{"replicas":2,"victim":"u-1","pod":"web-1","deadline":1800000000}"#;
    let deployments = Api::<ApiDeployment>::namespaced(client.clone(), &ns);
    let web = deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {
                    "name": "web",
                    "annotations": {"descheduler.alpha.kubernetes.io/surge-in-flight": mark}
                },
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": PAUSE_IMAGE}]}
                    }
                }
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    // What the Deployment controller would write (none runs here).
    deployments
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2,
                "readyReplicas": 1, "availableReplicas": 1
            }})),
        )
        .await
        .unwrap();
    let autoscalers = Api::<HorizontalPodAutoscaler>::namespaced(client.clone(), &ns);
    autoscalers
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "web-hpa"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1,
                    "maxReplicas": 4
                }
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let quotas = Api::<ApiQuota>::namespaced(client.clone(), &ns);
    let hard = json!({"pods": "10", "requests.cpu": "2", "requests.memory": "4Gi"});
    quotas
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "compute"}, "spec": {"hard": hard}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    // What the quota controller would write (none runs here).
    let quota_status = |pods: &str| json!({"status": {"hard": hard, "used": {"pods": pods, "requests.cpu": "500m", "requests.memory": "1Gi"}}});
    quotas
        .patch_status(
            "compute",
            &PatchParams::default(),
            &Patch::Merge(quota_status("3")),
        )
        .await
        .unwrap();

    let pairs = |v: &[(&str, i64)]| v.iter().map(|(n, x)| ((*n).into(), *x)).collect();
    let quota = |pods: i64| ResourceQuota {
        namespace: ns.as_str().into(),
        name: "compute".into(),
        hard: pairs(&[
            ("pods", 10),
            ("requests.cpu", 2000),
            ("requests.memory", 4 << 30),
        ]),
        used: pairs(&[
            ("pods", pods),
            ("requests.cpu", 500),
            ("requests.memory", 1 << 30),
        ]),
    };
    let mut deployment = Deployment {
        namespace: ns.as_str().into(),
        name: "web".into(),
        uid: web.metadata.uid.clone().unwrap().into(),
        replicas: 2,
        paused: false,
        generation: 1,
        observed_generation: 1,
        status_replicas: 2,
        updated_replicas: 2,
        available_replicas: 1,
        surge_in_flight: Some(mark.into()),
    };
    let want = Workloads {
        deployments: vec![deployment.clone()],
        autoscalers: vec![Autoscaler {
            namespace: ns.as_str().into(),
            name: "web-hpa".into(),
            target_kind: "Deployment".into(),
            target_name: "web".into(),
        }],
        quotas: vec![quota(3)],
    };

    // One-shot mode.
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let listed = list_snapshot(&api, "", true).await.unwrap();
    assert_eq!(workloads_of(&listed.workloads, &ns), want);
    assert_eq!(listed.workloads.deployment(&ns, "web"), Some(&deployment));
    let plain = list_snapshot(&api, "", false).await.unwrap();
    assert_eq!(plain.workloads, Workloads::default());

    // Continuous mode: the watches' first lists, then their events.
    let sync = Duration::from_secs(30);
    let mut watch = WatchSource::start(&api, "", true);
    let watched = watch.snapshot(sync).await.unwrap();
    assert_eq!(workloads_of(&watched.workloads, &ns), want);
    let mut plain_watch = WatchSource::start(&api, "", false);
    let plain = plain_watch.snapshot(sync).await.unwrap();
    assert_eq!(plain.workloads, Workloads::default());
    drop(plain_watch);

    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    autoscalers
        .delete("web-hpa", &DeleteParams::default())
        .await
        .unwrap();
    quotas
        .patch_status(
            "compute",
            &PatchParams::default(),
            &Patch::Merge(quota_status("4")),
        )
        .await
        .unwrap();
    // The spec changed: a new generation, not yet observed (no controller runs).
    deployment.replicas = 3;
    deployment.generation = 2;
    let changed = Workloads {
        deployments: vec![deployment],
        autoscalers: vec![],
        quotas: vec![quota(4)],
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = workloads_of(&watch.snapshot(sync).await.unwrap().workloads, &ns);
        if now == changed {
            break;
        }
        assert!(
            tokio::time::timeout_at(deadline, watch.next_change())
                .await
                .is_ok(),
            "the watches did not bring the changes: {now:?}"
        );
    }
    let snap = watch.snapshot(sync).await.unwrap();
    let web = snap.workloads.deployment(&ns, "web").unwrap();
    assert!(web.rolling_out().unwrap().contains("generation 2"));
    assert_eq!(snap.workloads.autoscalers_of(web).count(), 0);
    // The same as a list now.
    let listed = list_snapshot(&api, "", true).await.unwrap();
    assert_eq!(workloads_of(&listed.workloads, &ns), changed);
    drop(watch);

    // The manifests' ServiceAccount: the base ClusterRole reads no workloads, and needs not
    // unless a profile surges; the surge component grants them.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let kc = cluster.kubeconfig();
    let base = root.join("manifests/base");
    let (ok, out) = kubectl_run(
        kc,
        &["apply", "--server-side", "-k", base.to_str().unwrap()],
        None,
    )
    .await;
    assert!(ok, "{out}");
    let sa = ApiClient::from_client(
        cluster
            .service_account_client("kube-system", "descheduler")
            .await,
        0.0,
        1,
    );
    // RBAC takes effect once the API server's caches have the new objects.
    wait_for(
        "the base rules to apply",
        Duration::from_secs(20),
        || async { list_snapshot(&sa, "", false).await.ok() },
    )
    .await;
    // Through the binary: the policy decides what is read.
    let dir = tempfile::tempdir().unwrap();
    let sa_kubeconfig = dir.path().join("sa-kubeconfig");
    cluster
        .service_account_kubeconfig("kube-system", "descheduler", &sa_kubeconfig)
        .await;
    let plain_policy = write(dir.path(), "plain.yaml", DUPLICATES);
    let surge_policy = write(
        dir.path(),
        "surge.yaml",
        &DUPLICATES.replace(
            "      - name: DefaultEvictor\n",
            "      - name: DefaultEvictor\n        args: {moveMode: Surge}\n",
        ),
    );
    let dry_run = |policy: &Path| {
        let (policy, kubeconfig) = (policy.to_path_buf(), sa_kubeconfig.clone());
        async move {
            run(&[
                "--policy-config-file",
                policy.to_str().unwrap(),
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--dry-run",
            ])
            .await
        }
    };
    let (code, _, stderr) = dry_run(&plain_policy).await;
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = dry_run(&surge_policy).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("forbidden") && stderr.contains("manifests/components/surge"),
        "{stderr}"
    );
    let refused = list_snapshot(&sa, "", true).await.unwrap_err().to_string();
    assert!(
        refused.contains("forbidden")
            && refused.contains("resources: [")
            && refused.contains("manifests/components/surge"),
        "{refused}"
    );
    let refused = WatchSource::start(&sa, "", true)
        .snapshot(sync)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("forbidden") && refused.contains("manifests/components/surge"),
        "{refused}"
    );
    let component = root.join("manifests/components/surge/clusterrole.yaml");
    let (ok, out) = kubectl_run(
        kc,
        &["apply", "--server-side", "-f", component.to_str().unwrap()],
        None,
    )
    .await;
    assert!(ok, "{out}");
    let granted = wait_for(
        "the surge rules to apply",
        Duration::from_secs(20),
        || async { list_snapshot(&sa, "", true).await.ok() },
    )
    .await;
    assert_eq!(workloads_of(&granted.workloads, &ns), changed);
    let (code, _, stderr) = dry_run(&surge_policy).await;
    assert_eq!(code, Some(0), "{stderr}");
}
