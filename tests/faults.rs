//! Faults of the control plane, on a real one of its own per test: the API server killed in
//! the middle of a cycle's evictions and started again, etcd hung for 20 s and the API server
//! restarted under a continuous run, and the leader SIGKILLed between two evictions while
//! another replica waits. Nothing is evicted twice, a cycle that cannot go on stops instead of
//! re-planning once per remaining pod, and the process recovers (or exits non-zero, for the
//! Job's controller to retry).

mod support;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;
use support::process::{leader_elected, run_bin, Descheduler, Run};
use support::*;

const DUPLICATES: &str = "apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: spread
  pluginConfig:
  - name: RemoveDuplicates
  plugins:
    balance:
      enabled: [RemoveDuplicates]
";

/// The UIDs of the pods of `ns` that are running and not being deleted.
async fn running(client: &kube::Client, ns: &str) -> BTreeSet<String> {
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(pod_is_running)
        .filter_map(|p| p.metadata.uid)
        .collect()
}

fn report(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}): {}\n{}", run.stdout, run.stderr))
}

/// (pod, result) of each eviction a report lists.
fn results(report: &Value) -> Vec<(String, String)> {
    report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["pod"].as_str().unwrap().to_string(),
                e["result"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Nine replicas stacked on one node, then two more nodes: RemoveDuplicates plans six
/// evictions. Returns the namespace.
async fn stacked(client: &kube::Client) -> String {
    create_node(client, NodeConfig::new(&unique("n"))).await;
    let ns = create_namespace(client, "fault").await;
    run_replicaset(client, &ns, "web", 9, &PodConfig::new().cpu("100m")).await;
    for _ in 0..2 {
        create_node(client, NodeConfig::new(&unique("n"))).await;
    }
    ns
}

/// A control plane of the test's own, the pods of [`stacked`] running, and the
/// RemoveDuplicates policy written.
struct Stage {
    cluster: Cluster,
    client: kube::Client,
    ns: String,
    /// The UIDs of the running pods before any eviction.
    before: BTreeSet<String>,
    _dir: tempfile::TempDir,
    policy: std::path::PathBuf,
}

async fn stage() -> Stage {
    let cluster = Cluster::start(Components::all());
    let client = cluster.client();
    let ns = stacked(&client).await;
    let before = running(&client, &ns).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), DUPLICATES);
    Stage {
        cluster,
        client,
        ns,
        before,
        _dir: dir,
        policy,
    }
}

#[tokio::test]
async fn api_server_killed_mid_evictions_stops_the_cycle_and_nothing_is_evicted_twice() {
    let Stage {
        cluster,
        client,
        ns,
        before,
        _dir,
        policy,
    } = stage().await;
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    // One eviction every two seconds, so the API server dies between two of them.
    let args = [
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        &kubeconfig,
        "--eviction-qps=0.5",
        "--eviction-burst=1",
        "-o",
        "json",
    ];
    let run = tokio::spawn({
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        async move { run_bin(&args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    });
    assert!(
        wait_until(TIMEOUT, || async {
            !before.is_subset(&running(&client, &ns).await)
        })
        .await,
        "the first eviction"
    );
    cluster.kill("kube-apiserver");
    let first = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the run ends soon after the API server is gone")
        .unwrap();
    assert_eq!(
        first.code,
        Some(1),
        "a one-shot cycle that cannot go on exits non-zero: {}",
        first.stderr
    );
    assert!(first.stderr.contains("in a row failed"), "{}", first.stderr);
    let outcomes = results(&report(&first));
    let failed = outcomes.iter().filter(|(_, r)| r == "error").count();
    assert_eq!(
        failed, 3,
        "stopped after three failed calls, not one per remaining pod: {outcomes:?}"
    );
    let evicted_first: BTreeSet<String> = outcomes
        .iter()
        .filter(|(_, r)| r == "evicted")
        .map(|(p, _)| p.clone())
        .collect();
    assert!(!evicted_first.is_empty(), "{outcomes:?}");

    // The API server back: the next run evicts the rest, none of what the first evicted.
    cluster.restart("kube-apiserver").await;
    let client = cluster.client();
    wait_running_pods(&client, &ns, &app_selector("web"), 9).await;
    let second = run_bin(&args).await;
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    let outcomes = results(&report(&second));
    let evicted_second: BTreeSet<String> = outcomes
        .iter()
        .filter(|(_, r)| r == "evicted")
        .map(|(p, _)| p.clone())
        .collect();
    assert!(!evicted_second.is_empty(), "{outcomes:?}");
    assert!(
        evicted_first.is_disjoint(&evicted_second),
        "no pod evicted twice: {evicted_first:?} {evicted_second:?}"
    );
    assert!(
        outcomes.iter().all(|(_, r)| r == "evicted"),
        "{outcomes:?}\n{}",
        second.stderr
    );
}

/// What happens to the control plane under a continuous run.
enum Fault {
    /// etcd stopped (SIGSTOP) for 20 s: the API server's requests to it hang.
    EtcdHung,
    /// kube-apiserver killed (SIGKILL), down for 5 s, then started again: every watch and
    /// connection breaks.
    ApiServerRestarted,
}

#[tokio::test]
async fn etcd_hung_for_20_seconds_under_a_continuous_run_is_survived() {
    continuous_run_survives(Fault::EtcdHung).await;
}

#[tokio::test]
async fn api_server_restarted_under_a_continuous_run_is_survived() {
    continuous_run_survives(Fault::ApiServerRestarted).await;
}

/// A continuous dry run plans the six duplicates, the fault comes, and afterwards a change
/// to the cluster reaches a later cycle's plan: the process recovered without a restart.
async fn continuous_run_survives(fault: Fault) {
    let Stage {
        cluster,
        client,
        ns,
        _dir,
        policy,
        ..
    } = stage().await;
    let mut p = Descheduler::spawn(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "--dry-run",
        "--descheduling-interval=1s",
        "-o",
        "json",
    ]);
    let reports = |p: &Descheduler| -> Vec<Value> {
        serde_json::Deserializer::from_str(&p.output())
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect()
    };
    let planned = |r: &Value| r["evictions"].as_array().map_or(0, Vec::len);
    assert!(
        wait_until(TIMEOUT, || async {
            reports(&p).last().is_some_and(|r| planned(r) == 6)
        })
        .await,
        "six duplicates planned: {}",
        p.stderr()
    );
    match fault {
        Fault::EtcdHung => {
            cluster.pause("etcd");
            tokio::time::sleep(Duration::from_secs(20)).await;
            cluster.resume("etcd");
        }
        Fault::ApiServerRestarted => {
            cluster.kill("kube-apiserver");
            tokio::time::sleep(Duration::from_secs(5)).await;
            cluster.restart("kube-apiserver").await;
        }
    }
    // Back: a change made now reaches a later cycle's plan (the ReplicaSet deleted, its
    // pods go, nothing is left to spread).
    let seen = reports(&p).len();
    Api::<k8s_openapi::api::apps::v1::ReplicaSet>::namespaced(client.clone(), &ns)
        .delete("web", &Default::default())
        .await
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || async {
            reports(&p)
                .get(seen..)
                .is_some_and(|fresh| fresh.iter().any(|r| planned(r) == 0))
        })
        .await,
        "cycles go on after the control plane came back, and see what changed: {}",
        p.stderr()
    );
    assert!(p.exited().is_none(), "{}", p.stderr());
    assert_eq!(p.terminate().await, Some(0), "SIGTERM ends it cleanly");
}

/// Pods evicted in `ns` as the descheduler's Descheduled events tell: one UID per event.
async fn descheduled(client: &kube::Client, ns: &str) -> Vec<String> {
    Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Descheduled"))
        .filter_map(|e| e.regarding.and_then(|r| r.uid))
        .collect()
}

#[tokio::test]
async fn leader_killed_mid_evictions_hands_over_without_evicting_a_pod_twice() {
    let Stage {
        cluster,
        client,
        ns,
        before,
        _dir,
        policy,
    } = stage().await;
    let lease = unique("lease");
    let args = |id: &str| {
        leader_elected(
            &policy,
            cluster.kubeconfig(),
            "2s",
            (&ns, &lease),
            id,
            &["--eviction-qps=0.5", "--eviction-burst=1"],
        )
    };
    let spawn = |id: &str| {
        let a = args(id);
        Descheduler::spawn(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let first = spawn("first");
    assert!(
        comes_to_hold(&client, &ns, &lease, "first", TIMEOUT).await,
        "the first instance leads: {}",
        first.stderr()
    );
    let second = spawn("second");
    // SIGKILL between two of the leader's evictions: it neither finishes its cycle nor
    // gives up its Lease.
    assert!(
        wait_until(TIMEOUT, || async {
            !before.is_subset(&running(&client, &ns).await)
        })
        .await,
        "the leader's first eviction: {}",
        first.stderr()
    );
    first.kill().await;
    let by_first = descheduled(&client, &ns).await.len();
    assert!(by_first >= 1);
    assert!(
        comes_to_hold(&client, &ns, &lease, "second", TIMEOUT).await,
        "the second instance takes over once the Lease expires: {}",
        second.stderr()
    );
    // The new leader finishes the work: every node holds three replicas at most.
    assert!(
        wait_until(Duration::from_secs(90), || async {
            second.output().contains("\"result\": \"evicted\"")
        })
        .await,
        "the new leader evicts: {}",
        second.stderr()
    );
    assert_eq!(second.terminate().await, Some(0));
    let all = descheduled(&client, &ns).await;
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len(), "no pod evicted twice: {all:?}");
    assert!(
        all.len() > by_first && all.len() <= 6,
        "the six duplicates and no more, across the handover: {} by the first, {} in all",
        by_first,
        all.len()
    );
}
