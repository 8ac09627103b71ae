//! Upstream's EvictionsInBackground (`--feature-gates=EvictionsInBackground=true`) on a real
//! control plane, with the "virt" side played by an admission webhook that answers the
//! eviction of a VM's pod as KubeVirt's does (HTTP 429 "Eviction triggered evacuation"), and
//! the test setting and removing `descheduler.alpha.kubernetes.io/eviction-in-progress` as
//! KubeVirt's controller does while it live-migrates.

mod support;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use std::time::{Duration, Instant};
use support::process::Descheduler;
use support::webhook::EvictionWebhook;
use support::*;

const GROUP_LABEL: &str = "descheduler-test";
const REQUEST_EVICT_ONLY: &str = "descheduler.alpha.kubernetes.io/request-evict-only";
const IN_PROGRESS: &str = "descheduler.alpha.kubernetes.io/eviction-in-progress";
/// The timeout of an assumed eviction in the background given to the binary.
const TIMEOUT: Duration = Duration::from_secs(5);

async fn annotate(pods: &Api<Pod>, pod: &str, value: Option<&str>) {
    let patch = serde_json::json!({"metadata": {"annotations": {IN_PROGRESS: value}}});
    pods.patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Waits until `f` holds (at most 60 s), and says how long it took.
async fn until(what: &str, hook: &EvictionWebhook, f: impl Fn(&EvictionWebhook) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f(hook) {
        assert!(Instant::now() < deadline, "{what}: {:?}", hook.asked());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_eviction_in_the_background_is_requested_once_counted_and_timed_out() {
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    let node = unique("n");
    create_node(&client, NodeConfig::new(&node).label(GROUP_LABEL, &group)).await;
    // A second Ready node in the group: a cycle with fewer plans nothing, as upstream's.
    create_node(
        &client,
        NodeConfig::new(&unique("n")).label(GROUP_LABEL, &group),
    )
    .await;
    let ns = create_namespace(&client, "vms").await;
    // Two VMs' pods on one node, asking for their evictions to be requested only.
    let vm = PodConfig::new()
        .cpu("100m")
        .annotation(REQUEST_EVICT_ONLY, "")
        .node_selector("kubernetes.io/hostname", &node);
    let mut running = run_replicaset(&client, &ns, "vm", 2, &vm).await;
    running.sort_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0));
    let hook =
        EvictionWebhook::start(&client, &ns, running[0].metadata.name.as_deref().unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    // Every pod older than a second is to go, one per node and cycle.
    let policy = write_policy(
        dir.path(),
        &format!(
            r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
maxNoOfPodsToEvictPerNode: 1
profiles:
- name: vms
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 1
      namespaces: {{include: ["{ns}"]}}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
"#
        ),
    );
    let kubeconfig = cluster.kubeconfig().to_str().unwrap();
    let base = [
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        kubeconfig,
        "--descheduling-interval=1s",
        "--v=2",
    ];
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);

    // The gate off (upstream's default): the answer is a refusal like any 429, and the
    // eviction is asked for again every cycle (without the eviction cooldown, which would
    // back the refused workload off: upstream has no such memory).
    let off = Descheduler::spawn(&[&base[..], &["--eviction-cooldown=0"]].concat());
    until("repeated requests with the gate off", &hook, |h| {
        h.asked().len() >= 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = off.stderr();
    assert!(
        log.contains("blocked_by_disruption_budget")
            && !log.contains("eviction in the background requested"),
        "{log}"
    );
    assert_eq!(off.terminate().await, Some(0));
    hook.clear();

    let timeout = format!("--eviction-in-background-timeout={}s", TIMEOUT.as_secs());
    let gate = "--feature-gates=EvictionsInBackground=true";
    let p = Descheduler::spawn(&[&base[..], &[gate, timeout.as_str()]].concat());

    // Requested: the webhook refused it with KubeVirt's answer, so the pod still runs.
    until("the first request", &hook, |h| !h.asked().is_empty()).await;
    let first = hook.asked()[0].clone();
    let x = first.pod.clone();
    let y = running
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .find(|n| *n != x)
        .unwrap();
    // In progress for the next cycles: not requested again, and it takes the node's one
    // eviction per cycle, so the other pod waits.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(hook.times(&x), 1, "{:?}\n{}", hook.asked(), p.stderr());
    assert_eq!(hook.times(&y), 0, "{:?}\n{}", hook.asked(), p.stderr());
    assert!(pods.get_opt(&x).await.unwrap().is_some());
    let log = p.stderr();
    assert!(
        log.contains("eviction in the background requested") && log.contains(&x),
        "{log}"
    );
    // Its pod never shows the eviction in progress: once the timeout is over it may be
    // requested again (the oldest pod first, so the same one).
    until("the request after the timeout", &hook, |h| h.times(&x) == 2).await;
    let second = hook
        .asked()
        .iter()
        .filter(|a| a.pod == x)
        .nth(1)
        .unwrap()
        .clone();
    let waited = second.at - first.at;
    assert!(
        waited >= TIMEOUT && waited < TIMEOUT + Duration::from_secs(5),
        "requested again after {waited:?}\n{}",
        p.stderr()
    );
    assert!(p
        .stderr()
        .contains("assumed eviction in the background timed out"));
    assert_eq!(hook.times(&y), 0);

    // KubeVirt marks the migration in progress: tracked by the annotation, with no timeout.
    annotate(&pods, &x, Some("kubevirt")).await;
    tokio::time::sleep(TIMEOUT + Duration::from_secs(3)).await;
    assert_eq!(hook.times(&x), 2, "{:?}\n{}", hook.asked(), p.stderr());
    assert_eq!(hook.times(&y), 0, "{:?}\n{}", hook.asked(), p.stderr());

    // The migration is cancelled (the annotation removed): it may be requested again.
    annotate(&pods, &x, None).await;
    until("the request after the cancellation", &hook, |h| {
        h.times(&x) == 3
    })
    .await;
    assert_eq!(hook.times(&y), 0);

    // The pod goes (the migration done): the node's eviction is free for the other pod.
    pods.delete(&x, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    until("the other pod's request", &hook, |h| h.times(&y) == 1).await;
    assert_eq!(hook.times(&x), 3);
    assert_eq!(p.terminate().await, Some(0));
}
