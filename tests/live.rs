//! Live mode against a real control plane (etcd, kube-apiserver with RBAC, controller manager,
//! scheduler and a fake kubelet, from tests/support): evictions through the Eviction API,
//! disruption budgets, limits and rate limits, re-checks before each call, dry-run, events,
//! metrics, continuous mode, SIGTERM, leader election, the manifests and their RBAC, and an
//! end-to-end rebalance.
//!
//! Each test works on its own nodes (labelled `descheduler-test=<group>`, which the policy's
//! nodeSelector picks) and its own namespace, so tests share one control plane side by side.

mod support;

use descheduler::framework::Pipeline;
use descheduler::live::client::{quota, ApiClient};
use descheduler::live::executor::ExecutorConfig;
use descheduler::live::source::list_snapshot;
use descheduler::outcome::Outcome;
use descheduler::policy::Policy;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};
use support::executor::{executor, executor_on};
use support::process::{leader_elected, run_bin, Descheduler, Run};
use support::*;

const GROUP_LABEL: &str = "descheduler-test";
const WAIT: Duration = Duration::from_secs(90);

/// `n` Ready nodes with 4 CPUs in a fresh group; returns (group, node names).
async fn group_of_nodes(client: &kube::Client, n: usize) -> (String, Vec<String>) {
    let group = unique("g");
    let mut names = Vec::new();
    for _ in 0..n {
        let name = unique("n");
        create_node(client, NodeConfig::new(&name).label(GROUP_LABEL, &group)).await;
        names.push(name);
    }
    (group, names)
}

/// A LowNodeUtilization policy over the group's nodes: under 20% cpu is cold, over
/// `target`% is hot. `top` adds top-level fields. The hot pods of these tests are pinned to
/// their node ([`hot_replicaset`]), so their replacements come back to it: the evictor's
/// default check would refuse every such eviction as pointless, and these tests are about
/// carrying evictions out, so it is off (`placementCheck: false`, as upstream).
fn lnu_policy(group: &str, target: u32, top: &str) -> String {
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
{top}
profiles:
- name: rebalance
  pluginConfig:
  - name: DefaultEvictor
    args: {{placementCheck: false}}
  - name: LowNodeUtilization
    args:
      thresholds: {{cpu: 20}}
      targetThresholds: {{cpu: {target}}}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
"#
    )
}

fn pipeline(text: &str) -> Pipeline {
    let policy =
        Policy::from_yaml("test-policy.yaml", text, &descheduler::plugins::REGISTRY).unwrap();
    Pipeline::build(&policy, "test-policy.yaml", &descheduler::plugins::REGISTRY).unwrap()
}

/// A ReplicaSet of `replicas` pods of 500m cpu pinned to `node` (so it stays hot however often
/// its pods are evicted and replaced).
async fn hot_replicaset(
    client: &kube::Client,
    ns: &str,
    name: &str,
    replicas: i32,
    node: &str,
) -> Vec<Pod> {
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector("kubernetes.io/hostname", node);
    run_replicaset(client, ns, name, replicas, &pod).await
}

fn uids(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect()
}

async fn all_pods(client: &kube::Client, ns: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

fn report(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}\nstderr: {}",
            run.stdout, run.stderr
        )
    })
}

#[tokio::test]
async fn dry_run_changes_nothing_and_a_real_run_evicts_through_the_api() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client, 3).await;
    let ns = create_namespace(&client, "evict").await;
    let before = hot_replicaset(&client, &ns, "hot", 6, &nodes[0]).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &lnu_policy(&group, 50, ""));
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let policy = policy.to_str().unwrap();

    // By default nothing goes: each pod is pinned to its node, so its replacement would come
    // back to it, and the report says so.
    let checked = write_policy(
        dir.path(),
        &lnu_policy(&group, 50, "").replace(
            "  - name: DefaultEvictor\n    args: {placementCheck: false}\n",
            "",
        ),
    );
    let run = run_bin(&[
        "--policy-config-file",
        checked.to_str().unwrap(),
        "--kubeconfig",
        &kubeconfig,
        "--dry-run",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let r = report(&run);
    assert!(r["evictions"].as_array().unwrap().is_empty(), "{r}");
    let refused = r["notChosen"].as_array().unwrap();
    assert_eq!(refused.len(), 6, "{r}");
    assert!(
        refused.iter().all(|n| n["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("land back on its own node {}", nodes[0]))),
        "{r}"
    );

    // Dry-run: the plan (6 x 500m = 75% of 4 CPUs; down to 50% takes two pods), no change.
    let dry = run_bin(&[
        "--policy-config-file",
        policy,
        "--kubeconfig",
        &kubeconfig,
        "--dry-run",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let planned = report(&dry);
    let planned = planned["evictions"].as_array().unwrap();
    assert_eq!(planned.len(), 2, "{planned:?}");
    assert!(planned
        .iter()
        .all(|e| e["node"] == nodes[0].as_str() && e.get("result").is_none()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let now = all_pods(&client, &ns).await;
    assert_eq!(
        uids(&now),
        uids(&before),
        "dry-run must not change anything"
    );
    assert!(now.iter().all(|p| p.metadata.deletion_timestamp.is_none()));

    // A real run evicts the same two pods, through the API.
    let real = run_bin(&[
        "--policy-config-file",
        policy,
        "--kubeconfig",
        &kubeconfig,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(real.code, Some(0), "{}", real.stderr);
    let done = report(&real);
    let done = done["evictions"].as_array().unwrap();
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done.iter().all(|e| e["result"] == "evicted"), "{done:?}");
    let evicted: BTreeSet<String> = done
        .iter()
        .map(|e| {
            e["pod"]
                .as_str()
                .unwrap()
                .split('/')
                .nth(1)
                .unwrap()
                .to_string()
        })
        .collect();
    let planned_names: BTreeSet<String> = planned
        .iter()
        .map(|e| {
            e["pod"]
                .as_str()
                .unwrap()
                .split('/')
                .nth(1)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        evicted, planned_names,
        "the real run attempts what dry-run printed"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    assert!(
        wait_until(WAIT, || async {
            let names: BTreeSet<String> = pods
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            evicted.iter().all(|e| !names.contains(e))
        })
        .await,
        "evicted pods are gone"
    );
    // The ReplicaSet controller replaces them.
    let after = wait_running_pods(&client, &ns, &app_selector("hot"), 6).await;
    assert_eq!(uids(&after).intersection(&uids(&before)).count(), 4);

    // One Descheduled event per evicted pod, from the descheduler.
    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let ok = wait_until(WAIT, || async {
        let list = events.list(&ListParams::default()).await.unwrap().items;
        let regarding: BTreeSet<String> = list
            .iter()
            .filter(|e| {
                e.reason.as_deref() == Some("Descheduled")
                    && e.reporting_controller.as_deref() == Some("descheduler")
            })
            .filter_map(|e| e.regarding.as_ref().and_then(|r| r.name.clone()))
            .collect();
        regarding == evicted
    })
    .await;
    assert!(ok, "a Descheduled event for each evicted pod");
}

#[tokio::test]
async fn disruption_budgets_block_evictions() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client, 3).await;
    let ns = create_namespace(&client, "pdb").await;
    let before = hot_replicaset(&client, &ns, "hot", 6, &nodes[0]).await;
    let text = lnu_policy(&group, 50, "");

    // The snapshot is read before the budget exists, so the plan names two pods ...
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, &format!("{GROUP_LABEL}={group}"), false)
        .await
        .unwrap();
    let plan =
        descheduler::plan::plan(&pipeline(&text), &snap, chrono::Utc::now().timestamp()).unwrap();
    assert_eq!(plan.evictions.len(), 2);

    // ... then a budget allowing nothing appears: every attempt gets HTTP 429, is recorded as
    // blocked, is never retried in the cycle, and the rest is re-planned.
    create_pdb(
        &client,
        &ns,
        "hot",
        &[("app", "hot")],
        Budget::MaxUnavailable(IntOrString::Int(0)),
    )
    .await;
    wait_pdb(&client, &ns, "hot", 6, 0).await;
    // The client is built as the binary builds it, from the kubeconfig: a 429 must come back
    // at once, not after kube's default retries.
    let api = ApiClient::new(Some(cluster.kubeconfig()), 0.0, 1)
        .await
        .unwrap();
    let exec = executor_on(api, ExecutorConfig::default());
    let t0 = Instant::now();
    let result = support::executor::real_cycle(&exec, &pipeline(&text), &snap).await;
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "429s took {:?}",
        t0.elapsed()
    );
    assert!(!result.outcomes.is_empty());
    assert!(
        result
            .outcomes
            .iter()
            .all(|o| *o == Outcome::BlockedByDisruptionBudget),
        "{:?}",
        result.outcomes
    );
    let attempted: Vec<&str> = result
        .report
        .evictions
        .iter()
        .map(|e| e.pod.as_str())
        .collect();
    let unique_attempts: BTreeSet<&str> = attempted.iter().copied().collect();
    assert_eq!(
        unique_attempts.len(),
        attempted.len(),
        "a blocked pod is never retried: {attempted:?}"
    );
    assert_eq!(
        uids(&all_pods(&client, &ns).await),
        uids(&before),
        "nothing was evicted"
    );

    // With the budget in the snapshot, the planner spends no disruption it does not have.
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &text);
    let run = run_bin(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        report(&run)["evictions"].as_array().unwrap().len(),
        0,
        "{}",
        run.stdout
    );
    assert_eq!(uids(&all_pods(&client, &ns).await), uids(&before));
}

#[tokio::test]
async fn limits_and_rate_limits_hold() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client, 3).await;
    let ns = create_namespace(&client, "limits").await;
    hot_replicaset(&client, &ns, "hot", 6, &nodes[0]).await;

    // maxNoOfPodsToEvictPerNode: 1 → one eviction although the node needs four.
    let text = lnu_policy(&group, 25, "maxNoOfPodsToEvictPerNode: 1");
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, &format!("{GROUP_LABEL}={group}"), false)
        .await
        .unwrap();
    let exec = executor(&client, ExecutorConfig::default());
    let r = support::executor::real_cycle(&exec, &pipeline(&text), &snap).await;
    assert_eq!(r.outcomes, vec![Outcome::Evicted]);
    wait_running_pods(&client, &ns, &app_selector("hot"), 6).await;

    // A global rate of 2 evictions/s (burst 1) and 1/s per node: four evictions from one
    // node take at least three seconds.
    let text = lnu_policy(&group, 25, "");
    let snap = list_snapshot(&api, &format!("{GROUP_LABEL}={group}"), false)
        .await
        .unwrap();
    let exec = executor(
        &client,
        ExecutorConfig {
            global_rate: quota(2.0, 1),
            node_rate: quota(1.0, 1),
            ..Default::default()
        },
    );
    let t0 = Instant::now();
    let r = support::executor::real_cycle(&exec, &pipeline(&text), &snap).await;
    let took = t0.elapsed();
    assert_eq!(
        r.outcomes,
        vec![Outcome::Evicted; 4],
        "{:?}",
        r.report.evictions
    );
    assert!(
        took >= Duration::from_millis(2900),
        "four evictions at 1/s from one node took {took:?}"
    );
}

#[tokio::test]
async fn pods_deleted_or_replaced_after_planning_are_not_evicted() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client, 3).await;
    let ns = create_namespace(&client, "recheck").await;
    // Bare pods marked evictable by annotation, pinned to the hot node.
    let config = PodConfig::new()
        .cpu("1")
        .memory("64Mi")
        .annotation("descheduler.alpha.kubernetes.io/evict", "true");
    for name in ["a", "b", "c"] {
        create_pod(&client, &ns, name, Some(&nodes[0]), &config).await;
        wait_pod_running(&client, &ns, name).await;
    }
    // 3 CPUs of 4 = 75%; down to 30% would take all three.
    let text = lnu_policy(&group, 30, "");
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, &format!("{GROUP_LABEL}={group}"), false)
        .await
        .unwrap();

    // After the snapshot: "a" is deleted, "b" is replaced by a new pod of the same name.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.delete("a", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    pods.delete("b", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert!(
        wait_until(WAIT, || async {
            pods.get_opt("a").await.unwrap().is_none() && pods.get_opt("b").await.unwrap().is_none()
        })
        .await
    );
    let replacement = create_pod(&client, &ns, "b", Some(&nodes[0]), &config).await;
    wait_pod_running(&client, &ns, "b").await;

    let exec = executor(&client, ExecutorConfig::default());
    let r = support::executor::real_cycle(&exec, &pipeline(&text), &snap).await;
    let by_pod: BTreeMap<String, String> = r
        .report
        .evictions
        .iter()
        .map(|e| (e.pod.clone(), e.result.clone().unwrap()))
        .collect();
    assert_eq!(
        by_pod.get(&format!("{ns}/a")).map(String::as_str),
        Some("pod_gone"),
        "{by_pod:?}"
    );
    assert_eq!(
        by_pod.get(&format!("{ns}/b")).map(String::as_str),
        Some("uid_changed"),
        "{by_pod:?}"
    );
    assert_eq!(
        by_pod.get(&format!("{ns}/c")).map(String::as_str),
        Some("evicted"),
        "{by_pod:?}"
    );
    // The replacement "b" is untouched.
    let b = pods.get("b").await.unwrap();
    assert_eq!(b.metadata.uid, replacement.metadata.uid);
    assert!(b.metadata.deletion_timestamp.is_none());
}

/// GET over plain HTTP; returns (status code, body).

#[tokio::test]
async fn continuous_mode_serves_metrics_and_stops_cleanly_on_sigterm() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client, 3).await;
    let ns = create_namespace(&client, "metrics").await;
    hot_replicaset(&client, &ns, "hot", 6, &nodes[0]).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &lnu_policy(&group, 50, ""));
    let addr = format!("127.0.0.1:{}", free_port());
    let p = Descheduler::spawn(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "--descheduling-interval",
        "2s",
        "--metrics-bind-address",
        &addr,
        "-o",
        "json",
    ]);
    assert!(
        wait_until(WAIT, || async {
            http_get(&addr, "/healthz")
                .await
                .is_some_and(|(c, _)| c == 200)
        })
        .await,
        "healthz"
    );
    assert!(
        wait_until(WAIT, || async {
            http_get(&addr, "/readyz")
                .await
                .is_some_and(|(c, _)| c == 200)
        })
        .await,
        "readyz"
    );
    let want = format!("descheduler_pods_evicted_total{{result=\"success\",strategy=\"LowNodeUtilization\",profile=\"rebalance\",namespace=\"{ns}\",node=\"{}\"}}", nodes[0]);
    let mut metrics = String::new();
    let deadline = Instant::now() + WAIT;
    let mut seen = false;
    while Instant::now() < deadline {
        if let Some((200, body)) = http_get(&addr, "/metrics").await {
            metrics = body;
            if metrics.contains(want.as_str()) {
                seen = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(seen, "{want} not in:\n{metrics}");
    assert!(
        metrics.contains("descheduler_loop_duration_seconds_count"),
        "{metrics}"
    );
    assert!(metrics.contains("descheduler_strategy_duration_seconds_count{strategy=\"LowNodeUtilization\",profile=\"rebalance\"}"), "{metrics}");
    assert!(
        metrics.contains("descheduler_build_info{version="),
        "{metrics}"
    );
    // The live heap: the allocator's count, more than the model of a cluster needs and no
    // more than the process holds resident.
    let heap: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("descheduler_heap_live_bytes "))
        .unwrap_or_else(|| panic!("no descheduler_heap_live_bytes in:\n{metrics}"))
        .trim()
        .parse()
        .unwrap();
    let (rss_kib, _) = support::soak::resources(p.pid().unwrap()).unwrap();
    assert!(
        (1 << 20..=rss_kib * 1024).contains(&heap),
        "live heap {heap} bytes, resident {rss_kib} KiB"
    );
    // Several cycles ran (the watch caches feed each one).
    assert!(
        wait_until(WAIT, || async {
            p.output().matches("\"evictions\"").count() >= 2
        })
        .await,
        "{}",
        p.output()
    );
    assert_eq!(
        p.terminate().await,
        Some(0),
        "SIGTERM ends the loop cleanly"
    );
}

/// GET over HTTPS: with `root` the server's certificate must chain to it (and name
/// `localhost`); without, any certificate is taken (upstream's self-signed one).
async fn https_get(port: u16, path: &str, root: Option<&[u8]>) -> Option<(u16, String)> {
    https_get_as(port, path, root, None).await
}

/// [`https_get`] with a bearer token.
async fn https_get_as(
    port: u16,
    path: &str,
    root: Option<&[u8]>,
    token: Option<&str>,
) -> Option<(u16, String)> {
    let mut b = reqwest::Client::builder().timeout(Duration::from_secs(5));
    b = match root {
        Some(pem) => b
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(pem).unwrap()),
        None => b.danger_accept_invalid_certs(true),
    };
    let mut request = b
        .build()
        .unwrap()
        .get(format!("https://localhost:{port}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.ok()?;
    let code = r.status().as_u16();
    Some((code, r.text().await.ok()?))
}

/// Upstream's chart probes `/healthz` over HTTPS on port 10258 with its self-signed
/// certificate: served so by default (`--secure-port`, `--bind-address`), with a given
/// certificate when `--tls-cert-file`/`--tls-private-key-file` name one, and without
/// `/metrics` under `--disable-metrics`; upstream's flags that mean nothing here are warned
/// about, not refused.
#[tokio::test]
async fn serves_https_as_upstream_does() {
    let cluster = shared();
    let client = cluster.client();
    let (group, _nodes) = group_of_nodes(&client, 2).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &lnu_policy(&group, 50, ""));
    let base = |port: u16| -> Vec<String> {
        [
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--kubeconfig",
            cluster.kubeconfig().to_str().unwrap(),
            "--descheduling-interval=2s",
            "--dry-run=true",
            "--bind-address=127.0.0.1",
            "--vmodule=cycle=4",
            "--otel-sample-rate",
            "0.5",
            "--v=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--secure-port={port}")])
        .collect()
    };
    // A self-signed certificate, made at start.
    let port = free_port();
    let args = base(port);
    let p = Descheduler::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        wait_until(WAIT, || async {
            https_get(port, "/readyz", None)
                .await
                .is_some_and(|(c, _)| c == 200)
        })
        .await,
        "readyz over HTTPS: {}",
        p.stderr()
    );
    let (code, body) = https_get(port, "/healthz", None).await.unwrap();
    assert_eq!((code, body.as_str()), (200, "ok"));
    let (code, metrics) = https_get(port, "/metrics", None).await.unwrap();
    assert_eq!(code, 200);
    assert!(metrics.contains("descheduler_build_info"), "{metrics}");
    // Plain HTTP is not spoken there.
    assert!(http_get(&format!("127.0.0.1:{port}"), "/healthz")
        .await
        .is_none_or(|(c, _)| c != 200));
    let err = p.stderr();
    assert!(
        err.contains("--vmodule") && err.contains("--otel-sample-rate"),
        "each ignored upstream flag is named: {err}"
    );
    assert_eq!(p.terminate().await, Some(0));

    // A given certificate, and no /metrics.
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = dir.path().join("tls.crt");
    let key = dir.path().join("tls.key");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let port = free_port();
    let mut args = base(port);
    args.extend([
        format!("--tls-cert-file={}", cert.display()),
        format!("--tls-private-key-file={}", key.display()),
        "--disable-metrics".to_string(),
    ]);
    let p = Descheduler::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let root = made.cert.pem();
    assert!(
        wait_until(WAIT, || async {
            https_get(port, "/healthz", Some(root.as_bytes()))
                .await
                .is_some_and(|(c, _)| c == 200)
        })
        .await,
        "healthz with the given certificate, verified against it: {}",
        p.stderr()
    );
    let (code, _) = https_get(port, "/metrics", Some(root.as_bytes()))
        .await
        .unwrap();
    assert_eq!(code, 404, "--disable-metrics");
    assert_eq!(p.terminate().await, Some(0));

    // Two processes on one port: the second says which flags to change, and stops.
    let port = free_port();
    let first = Descheduler::spawn(&base(port).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        wait_until(WAIT, || async {
            https_get(port, "/healthz", None).await.is_some()
        })
        .await
    );
    let second = run_bin(&base(port).iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_ne!(second.code, Some(0));
    assert!(
        second.stderr.contains("--secure-port") && second.stderr.contains("cannot listen"),
        "{}",
        second.stderr
    );
    assert_eq!(first.terminate().await, Some(0));
}

/// `--authorize-metrics`: /metrics only for a token the API server authenticates and
/// authorizes to get the non-resource URL /metrics; the probes stay open.
#[tokio::test]
async fn metrics_can_require_an_authorized_token() {
    let cluster = shared();
    let client = cluster.client();
    let (group, _nodes) = group_of_nodes(&client, 1).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &lnu_policy(&group, 50, ""));
    let port = free_port();
    let p = Descheduler::spawn(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "--descheduling-interval=5s",
        "--dry-run",
        "--bind-address=127.0.0.1",
        &format!("--secure-port={port}"),
        "--authorize-metrics",
    ]);
    assert!(
        wait_until(WAIT, || async {
            https_get(port, "/healthz", None)
                .await
                .is_some_and(|(c, _)| c == 200)
        })
        .await,
        "the probe needs no token: {}",
        p.stderr()
    );
    let get = |token: Option<String>| async move {
        https_get_as(port, "/metrics", None, token.as_deref())
            .await
            .map(|(c, _)| c)
    };
    assert_eq!(get(None).await, Some(401), "no token");
    assert_eq!(get(Some("not-a-token".into())).await, Some(401));
    let ns = create_namespace(&client, "scrape").await;
    let account = unique("scraper");
    let token = cluster.service_account_token(&ns, &account).await;
    assert_eq!(get(Some(token.clone())).await, Some(403), "no RBAC yet");
    // The scraper's RBAC, as docs/operations.md gives it.
    let rbac = format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
  {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
    "metadata": {{"name": "{account}"}},
    "rules": [{{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}}]}},
  {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
    "metadata": {{"name": "{account}"}},
    "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "{account}"}},
    "subjects": [{{"kind": "ServiceAccount", "name": "{account}", "namespace": "{ns}"}}]}}]}}"#
    );
    let (ok, out) = kubectl_run(
        cluster.kubeconfig(),
        &["apply", "--server-side", "-f", "-"],
        Some(&rbac),
    )
    .await;
    assert!(ok, "{out}");
    // A verdict is remembered for ten seconds.
    assert!(
        wait_until(WAIT, || async {
            get(Some(token.clone())).await == Some(200)
        })
        .await,
        "an authorized token gets /metrics: {}",
        p.stderr()
    );
    let (_, body) = https_get_as(port, "/metrics", None, Some(&token))
        .await
        .unwrap();
    assert!(body.contains("descheduler_build_info"), "{body}");
    assert_eq!(p.terminate().await, Some(0));
}

#[tokio::test]
async fn only_the_leader_evicts_and_another_takes_over() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client, 3).await;
    let ns = create_namespace(&client, "leader").await;
    hot_replicaset(&client, &ns, "hot", 6, &nodes[0]).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &lnu_policy(&group, 50, ""));
    let lease = unique("lease");
    let args =
        |id: &str| leader_elected(&policy, cluster.kubeconfig(), "1s", (&ns, &lease), id, &[]);
    let a_args = args("first");
    let a = Descheduler::spawn(&a_args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        comes_to_hold(&client, &ns, &lease, "first", WAIT).await,
        "the first instance leads"
    );
    let b_args = args("second");
    let b = Descheduler::spawn(&b_args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        wait_until(WAIT, || async {
            a.output().contains("\"result\": \"evicted\"")
        })
        .await,
        "the leader evicts: {}",
        a.output()
    );
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        b.output().is_empty(),
        "the follower must not plan or evict: {}",
        b.output()
    );
    assert!(lease_holder(&client, &ns, &lease)
        .await
        .unwrap()
        .starts_with("first_"));

    assert_eq!(a.terminate().await, Some(0));
    assert!(
        comes_to_hold(&client, &ns, &lease, "second", WAIT).await,
        "the second instance takes over"
    );
    assert!(
        wait_until(WAIT, || async {
            b.output().contains("\"result\": \"evicted\"")
        })
        .await,
        "the new leader evicts: {}",
        b.output()
    );
    assert_eq!(b.terminate().await, Some(0));
}

#[tokio::test]
async fn manifests_are_accepted_and_their_rbac_is_enough() {
    let cluster = shared();
    let client = cluster.client();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let kc = cluster.kubeconfig();
    for overlay in ["job", "cronjob", "deployment"] {
        let dir = root.join("manifests/overlays").join(overlay);
        let (ok, rendered) = kubectl_run(kc, &["kustomize", dir.to_str().unwrap()], None).await;
        assert!(ok, "kustomize {overlay}: {rendered}");
        let (ok, out) = kubectl_run(
            kc,
            &["apply", "--server-side", "--dry-run=server", "-f", "-"],
            Some(&rendered),
        )
        .await;
        assert!(ok, "server-side dry-run apply of {overlay}: {out}");
    }

    // Install the RBAC for real and run with nothing but the ServiceAccount's token.
    let (ok, out) = kubectl_run(
        kc,
        &[
            "apply",
            "--server-side",
            "-k",
            root.join("manifests/base").to_str().unwrap(),
        ],
        None,
    )
    .await;
    assert!(ok, "{out}");
    let dir = tempfile::tempdir().unwrap();
    let sa_kubeconfig = dir.path().join("sa-kubeconfig");
    cluster
        .service_account_kubeconfig("kube-system", "descheduler", &sa_kubeconfig)
        .await;
    let (group, nodes) = group_of_nodes(&client, 3).await;
    let ns = create_namespace(&client, "rbac").await;
    hot_replicaset(&client, &ns, "hot", 6, &nodes[0]).await;
    let policy = write_policy(
        dir.path(),
        &lnu_policy(&group, 50, "evictionFailureEventNotification: true"),
    );
    // One cycle with leader election on the manifests' Lease, as the Deployment runs it.
    let run = run_bin(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        sa_kubeconfig.to_str().unwrap(),
        "--leader-elect",
        "--leader-elect-resource-namespace",
        "kube-system",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let r = report(&run);
    let ev = r["evictions"].as_array().unwrap();
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert!(
        ev.iter().all(|e| e["result"] == "evicted"),
        "{ev:?}\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("forbidden"), "{}", run.stderr);

    // A ServiceAccount without the ClusterRole cannot even read the cluster: exit 1, nothing evicted.
    let none_kubeconfig = dir.path().join("none-kubeconfig");
    cluster
        .service_account_kubeconfig(&ns, "nobody", &none_kubeconfig)
        .await;
    let run = run_bin(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        none_kubeconfig.to_str().unwrap(),
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("403") || run.stderr.contains("forbidden"),
        "{}",
        run.stderr
    );
}

/// Requested CPU (millicores) of the running pods on each node.
fn cpu_by_node(pods: &[Pod], nodes: &[String]) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = nodes.iter().map(|n| (n.clone(), 0)).collect();
    for p in pods.iter().filter(|p| pod_is_running(p)) {
        let node = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        let cpu: i64 = p
            .spec
            .as_ref()
            .map(|s| {
                s.containers
                    .iter()
                    .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"))
                    .map(|q| {
                        descheduler::quantity::Quantity::parse(&q.0)
                            .unwrap()
                            .milli_value()
                    })
                    .sum()
            })
            .unwrap_or(0);
        if let Some(v) = out.get_mut(&node) {
            *v += cpu;
        }
    }
    out
}

fn spread(by_node: &BTreeMap<String, i64>) -> i64 {
    by_node.values().max().unwrap() - by_node.values().min().unwrap()
}

#[tokio::test]
async fn end_to_end_a_hotspot_is_rebalanced_by_the_scheduler() {
    let cluster = shared();
    let client = cluster.client();
    // One node first: the scheduler has nowhere else to put the workload.
    let group = unique("g");
    let first = unique("n");
    create_node(&client, NodeConfig::new(&first).label(GROUP_LABEL, &group)).await;
    let ns = create_namespace(&client, "e2e").await;
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector(GROUP_LABEL, &group);
    let before = run_replicaset(&client, &ns, "web", 6, &pod).await;
    // Then two empty nodes join.
    let mut nodes = vec![first.clone()];
    for _ in 0..2 {
        let n = unique("n");
        create_node(&client, NodeConfig::new(&n).label(GROUP_LABEL, &group)).await;
        nodes.push(n);
    }
    let spread_before = spread(&cpu_by_node(&before, &nodes));
    assert_eq!(spread_before, 3000, "{}", describe_pods(&before));

    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &lnu_policy(&group, 50, ""));
    let run = run_bin(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let r = report(&run);
    assert_eq!(
        r["evictions"].as_array().unwrap().len(),
        2,
        "{}",
        run.stdout
    );

    // The ReplicaSet controller recreates the pods and kube-scheduler puts them on the cold
    // nodes: the spread of node utilization shrinks.
    let old = uids(&before);
    let after = wait_for("replacements scheduled and running", WAIT, || {
        let (client, ns, old) = (&client, &ns, &old);
        async move {
            let pods = running_pods(client, ns, &app_selector("web")).await;
            let replaced = pods
                .iter()
                .filter(|p| !old.contains(p.metadata.uid.as_deref().unwrap_or("")))
                .count();
            (pods.len() == 6 && replaced == 2).then_some(pods)
        }
    })
    .await;
    let by_node = cpu_by_node(&after, &nodes);
    assert!(
        spread(&by_node) < spread_before,
        "{by_node:?}: {}",
        describe_pods(&after)
    );
    assert_eq!(by_node[&first], 2000, "{by_node:?}");
    assert!(
        nodes[1..].iter().map(|n| by_node[n]).sum::<i64>() == 1000,
        "{by_node:?}"
    );
}

/// The placement simulator against kube-scheduler: a hot node (6 x 500m of 4 CPUs), and
/// three cold nodes of which only one can take the pods (one has a taint they do not
/// tolerate, one is too small). The dry-run plan predicts a destination for each eviction
/// (with `placementCheck: true`, which admits only evictions with a better destination);
/// after the real run, kube-scheduler puts the replacements exactly there.
#[tokio::test]
async fn predicted_destinations_match_where_kube_scheduler_places_replacements() {
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    let hot = unique("n");
    create_node(&client, NodeConfig::new(&hot).label(GROUP_LABEL, &group)).await;
    let ns = create_namespace(&client, "place").await;
    // Only the hot node exists in the group yet: every replica lands there.
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector(GROUP_LABEL, &group);
    let before = run_replicaset(&client, &ns, "hot", 6, &pod).await;
    let on_node = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone());
    assert!(
        before
            .iter()
            .all(|p| on_node(p).as_deref() == Some(hot.as_str())),
        "{}",
        describe_pods(&before)
    );
    let tainted = unique("n");
    create_node(
        &client,
        NodeConfig::new(&tainted).label(GROUP_LABEL, &group).taint(
            "dedicated",
            "gpu",
            "NoSchedule",
        ),
    )
    .await;
    let small = unique("n");
    create_node(
        &client,
        NodeConfig::new(&small)
            .label(GROUP_LABEL, &group)
            .cpu("400m"),
    )
    .await;
    let free = unique("n");
    create_node(&client, NodeConfig::new(&free).label(GROUP_LABEL, &group)).await;

    let dir = tempfile::tempdir().unwrap();
    let text = lnu_policy(&group, 50, "").replace(
        "args: {placementCheck: false}",
        "args: {placementCheck: true}",
    );
    assert!(text.contains("placementCheck: true"), "{text}");
    let policy = write_policy(dir.path(), &text);
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let policy = policy.to_str().unwrap();
    let dry = run_bin(&[
        "--policy-config-file",
        policy,
        "--kubeconfig",
        &kubeconfig,
        "--dry-run",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    let planned = report(&dry);
    let planned = planned["evictions"].as_array().unwrap().clone();
    // 75% down to 50%: two pods, each predicted to go to the one node that fits.
    assert_eq!(planned.len(), 2, "{planned:?}");
    for e in &planned {
        assert_eq!(e["node"], hot.as_str(), "{planned:?}");
        assert_eq!(e["destination"], free.as_str(), "{planned:?}");
    }

    let real = run_bin(&[
        "--policy-config-file",
        policy,
        "--kubeconfig",
        &kubeconfig,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(real.code, Some(0), "{}", real.stderr);
    let done = report(&real);
    let done = done["evictions"].as_array().unwrap().clone();
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done.iter().all(|e| e["result"] == "evicted"), "{done:?}");
    let predicted: Vec<&str> = done
        .iter()
        .map(|e| e["destination"].as_str().unwrap())
        .collect();
    assert_eq!(predicted, [free.as_str(), free.as_str()], "{done:?}");

    // The ReplicaSet replaces the two pods; kube-scheduler places the replacements.
    let old = uids(&before);
    let after = wait_running_pods(&client, &ns, &app_selector("hot"), 6).await;
    let replacements: Vec<&Pod> = after
        .iter()
        .filter(|p| !old.contains(p.metadata.uid.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(replacements.len(), 2, "{}", describe_pods(&after));
    for p in &replacements {
        assert_eq!(
            on_node(p).as_deref(),
            Some(free.as_str()),
            "kube-scheduler placed a replacement elsewhere than predicted: {}",
            describe_pods(&after)
        );
    }
    cluster.assert_running();
}
