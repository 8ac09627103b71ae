//! Continuous mode with `--cycle-on-change` against a real control plane (tests/support): a
//! node that joins next to an overloaded one gets its first planned eviction within 2 s
//! while the interval is 10 minutes; a pending pod starts a cycle once past
//! MakeRoomForPendingPods' threshold; an idle cluster runs no cycles, and a cycle due on an
//! unchanged cluster is skipped and counted; a cycle with fewer than 2 Ready nodes is skipped
//! as upstream skips it; and the metrics say which rule planned or skipped what.
//!
//! The tests of this file run one at a time: a descheduler in this mode wakes on what
//! another test does to the cluster.

mod support;

use std::time::{Duration, Instant};
use support::process::Descheduler;
use support::*;

const GROUP_LABEL: &str = "descheduler-test";
const WAIT: Duration = Duration::from_secs(90);
const TOO_FEW: &str =
    "The cluster size is 0 or 1 meaning eviction causes service disruption or degradation. So aborting..";

/// One test at a time (see the module's doc).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A Ready node with 4 CPUs in `group`.
async fn group_node(client: &kube::Client, group: &str) -> String {
    let name = unique("n");
    create_node(client, NodeConfig::new(&name).label(GROUP_LABEL, group)).await;
    name
}

/// LowNodeUtilization over the group's nodes (under 20% cpu cold, over 50% hot), at most one
/// eviction per node. The hot pods are pinned to their node, so the evictor's check that a
/// move is worth it is off (as in tests/live.rs).
fn policy(group: &str) -> String {
    policy_with(group, "maxNoOfPodsToEvictPerNode: 1")
}

/// [`policy`] with the top-level fields `top` instead of its limit.
fn policy_with(group: &str, top: &str) -> String {
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
      targetThresholds: {{cpu: 50}}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
"#
    )
}

/// GET over plain HTTP; the body when the answer is 200.
async fn http_body(addr: &str, path: &str) -> Option<String> {
    match http_get(addr, path).await? {
        (200, body) => Some(body),
        _ => None,
    }
}

/// The value of the metric line `series` (name and labels as exposed), if exposed.
async fn metric(addr: &str, series: &str) -> Option<f64> {
    let body = http_body(addr, "/metrics").await?;
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The cycles' JSON reports printed so far.
fn reports(p: &Descheduler) -> Vec<serde_json::Value> {
    let out = p.output();
    serde_json::Deserializer::from_str(&out)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok)
        .collect()
}

fn evictions(report: &serde_json::Value) -> usize {
    report["evictions"].as_array().map_or(0, Vec::len)
}

/// The descheduler in dry-run, continuous mode at most `interval` apart, cycles on change,
/// JSON reports, metrics on `addr`.
fn spawn(cluster: &Cluster, policy: &std::path::Path, addr: &str, interval: &str) -> Descheduler {
    Descheduler::spawn(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "--dry-run",
        "--descheduling-interval",
        interval,
        "--cycle-on-change",
        "--metrics-bind-address",
        addr,
        "-o",
        "json",
        "-v",
        "1",
    ])
}

/// Cycles run so far, as the loop duration metric counts them.
async fn cycles_run(addr: &str) -> Option<f64> {
    metric(addr, "descheduler_loop_duration_seconds_count").await
}

#[tokio::test]
async fn a_node_joining_next_to_a_hot_one_gets_a_planned_eviction_within_two_seconds() {
    let _serial = SERIAL.lock().await;
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    let hot = group_node(&client, &group).await;
    let ns = create_namespace(&client, "onchange").await;
    // 6 x 500m on a 4-cpu node: 75%, over the 50% target.
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector("kubernetes.io/hostname", &hot);
    run_replicaset(&client, &ns, "hot", 6, &pod).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &policy(&group));
    let addr = format!("127.0.0.1:{}", free_port());
    let p = spawn(cluster, &policy, &addr, "10m");

    // One node in the group: the first cycle is skipped as upstream skips it, and says so.
    let first = wait_for("the first cycle's report", WAIT, || {
        let r = reports(&p);
        async move { r.into_iter().next() }
    })
    .await;
    assert_eq!(evictions(&first), 0, "{first}");
    let notes = first["notes"].as_array().cloned().unwrap_or_default();
    assert!(
        notes.iter().any(|n| n["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(TOO_FEW))),
        "{first}"
    );
    assert!(
        wait_until(WAIT, || async {
            metric(
                &addr,
                "descheduler_cycles_skipped_total{reason=\"too_few_nodes\"}",
            )
            .await
                == Some(1.0)
        })
        .await,
        "{:?}",
        http_body(&addr, "/metrics").await
    );
    assert!(p.stderr().contains(TOO_FEW), "{}", p.stderr());

    // A new node joins the group: its first planned eviction comes within 2 s of the start
    // of its creation (so within 2 s of its becoming Ready), the interval being 10 minutes.
    let started = Instant::now();
    let joined = group_node(&client, &group).await;
    let ready_after = started.elapsed();
    let planned = wait_for("a planned eviction", Duration::from_secs(10), || {
        let r = reports(&p);
        async move { r.into_iter().find(|r| evictions(r) > 0) }
    })
    .await;
    let latency = started.elapsed();
    eprintln!("node Ready after {ready_after:?}; first planned eviction after {latency:?}");
    assert!(
        latency <= Duration::from_secs(2),
        "the first planned eviction came {latency:?} after the node was created (Ready after {ready_after:?})\n{}",
        p.stderr()
    );
    let e = &planned["evictions"][0];
    assert_eq!(e["node"], hot.as_str(), "{planned}");
    assert_eq!(e["plugin"], "LowNodeUtilization", "{planned}");
    assert!(
        planned["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["name"] == joined.as_str()),
        "{planned}"
    );

    // The metrics name the rule that planned, and why the next candidate was not chosen
    // (the limit of one eviction per node).
    let planned_series =
        "descheduler_evictions_planned_total{strategy=\"LowNodeUtilization\",profile=\"rebalance\"}";
    let skipped_series = "descheduler_eviction_candidates_skipped_total{strategy=\"LowNodeUtilization\",profile=\"rebalance\",reason=\"limits\"}";
    let metrics = http_body(&addr, "/metrics").await.unwrap_or_default();
    assert!(
        metric(&addr, planned_series)
            .await
            .is_some_and(|v| v >= 1.0),
        "{metrics}"
    );
    assert!(
        metric(&addr, skipped_series)
            .await
            .is_some_and(|v| v >= 1.0),
        "{metrics}"
    );
    // Upstream's series and labels are kept beside them.
    assert!(
        metrics.contains("descheduler_strategy_duration_seconds_count{strategy=\"LowNodeUtilization\",profile=\"rebalance\"}"),
        "{metrics}"
    );
    assert_eq!(p.terminate().await, Some(0));
}

#[tokio::test]
async fn an_idle_cluster_runs_no_cycles_and_unchanged_ones_are_skipped() {
    let _serial = SERIAL.lock().await;
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    // Two cool nodes: nothing to do.
    group_node(&client, &group).await;
    group_node(&client, &group).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &policy(&group));

    // The interval 10 minutes: after the first cycle, none for as long as nothing happens.
    let addr = format!("127.0.0.1:{}", free_port());
    let p = spawn(cluster, &policy, &addr, "10m");
    assert!(
        wait_until(WAIT, || async { cycles_run(&addr).await == Some(1.0) }).await,
        "the first cycle: {}",
        p.stderr()
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(cycles_run(&addr).await, Some(1.0), "{}", p.stderr());
    assert_eq!(reports(&p).len(), 1, "{}", p.output());
    assert_eq!(p.terminate().await, Some(0));

    // The interval 1 s: the cycles it makes due on a cluster nothing changed are skipped and
    // counted, not run.
    let addr = format!("127.0.0.1:{}", free_port());
    let p = spawn(cluster, &policy, &addr, "1s");
    assert!(
        wait_until(WAIT, || async { cycles_run(&addr).await == Some(1.0) }).await,
        "the first cycle: {}",
        p.stderr()
    );
    let skipped = "descheduler_cycles_skipped_total{reason=\"unchanged\"}";
    assert!(
        wait_until(Duration::from_secs(10), || async {
            metric(&addr, skipped).await.is_some_and(|v| v >= 3.0)
        })
        .await,
        "{:?}",
        http_body(&addr, "/metrics").await
    );
    // A node's status posted meanwhile (the kubelet's, once a minute) may run one cycle;
    // the skipped ones outnumber the cycles run.
    let run = cycles_run(&addr).await.unwrap();
    let skipped_n = metric(&addr, skipped).await.unwrap();
    assert!(
        run <= 2.0 && skipped_n >= 3.0,
        "run {run}, skipped {skipped_n}"
    );
    assert!(
        p.stderr()
            .contains("no change to the cluster since the last cycle; cycle skipped"),
        "{}",
        p.stderr()
    );
    assert_eq!(p.terminate().await, Some(0));
}

#[tokio::test]
async fn a_real_cycle_counts_what_each_rule_planned_evicted_and_skipped() {
    let _serial = SERIAL.lock().await;
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    let hot = group_node(&client, &group).await;
    group_node(&client, &group).await;
    let ns = create_namespace(&client, "rules").await;
    // 6 x 500m on the hot node (75%, over the 50% target: two must go), under a budget that
    // allows one disruption.
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector("kubernetes.io/hostname", &hot);
    run_replicaset(&client, &ns, "web", 6, &pod).await;
    create_pdb(
        &client,
        &ns,
        "web",
        &[("app", "web")],
        Budget::MaxUnavailable(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1)),
    )
    .await;
    wait_pdb(&client, &ns, "web", 6, 1).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &policy_with(&group, ""));
    let addr = format!("127.0.0.1:{}", free_port());
    // A real run (no --dry-run), continuous, one cycle in the test's time.
    let p = Descheduler::spawn(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "--descheduling-interval",
        "10m",
        "--metrics-bind-address",
        &addr,
        "-o",
        "json",
    ]);
    assert!(
        wait_until(WAIT, || async { cycles_run(&addr).await == Some(1.0) }).await,
        "the first cycle: {}",
        p.stderr()
    );
    let metrics = http_body(&addr, "/metrics").await.unwrap_or_default();
    let labels = "strategy=\"LowNodeUtilization\",profile=\"rebalance\"";
    let value = |series: String| {
        metrics.lines().find_map(|l| {
            l.strip_prefix(series.as_str())?
                .strip_prefix(' ')?
                .parse::<f64>()
                .ok()
        })
    };
    // The one eviction the budget allowed was planned and done; the next candidate was
    // held back by the PodDisruptionBudget, counted under the rule that wanted it.
    assert_eq!(
        value(format!("descheduler_evictions_planned_total{{{labels}}}")),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        value(format!("descheduler_pods_evicted_total{{result=\"success\",{labels},namespace=\"{ns}\",node=\"{hot}\"}}")),
        Some(1.0),
        "{metrics}"
    );
    assert!(
        value(format!(
            "descheduler_eviction_candidates_skipped_total{{{labels},reason=\"pdb\"}}"
        ))
        .is_some_and(|v| v >= 1.0),
        "{metrics}"
    );
    // Nothing was refused by the API, and no cycle was skipped.
    assert!(
        !metrics.contains("descheduler_evictions_refused_total{"),
        "{metrics}"
    );
    assert!(
        metrics.contains("descheduler_cycles_skipped_total{reason=\"too_few_nodes\"} 0"),
        "{metrics}"
    );
    assert_eq!(p.terminate().await, Some(0));
}

/// With MakeRoomForPendingPods enabled, a pending pod is work once it has waited
/// unschedulable for the plugin's `minPendingSeconds`: no cycle when it appears, one when it
/// crosses the threshold, though no event says so then.
#[tokio::test]
async fn a_pending_pod_starts_a_cycle_once_past_make_rooms_threshold() {
    let _serial = SERIAL.lock().await;
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    group_node(&client, &group).await;
    group_node(&client, &group).await;
    let ns = create_namespace(&client, "pending").await;
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(
        dir.path(),
        &format!(
            r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
profiles:
- name: room
  pluginConfig:
  - name: MakeRoomForPendingPods
    args: {{minPendingSeconds: 3}}
  plugins:
    balance:
      enabled: [MakeRoomForPendingPods]
"#
        ),
    );
    let addr = format!("127.0.0.1:{}", free_port());
    let p = spawn(cluster, &policy, &addr, "10m");
    assert!(
        wait_until(WAIT, || async { cycles_run(&addr).await == Some(1.0) }).await,
        "the first cycle: {}",
        p.stderr()
    );
    // More cpu than any node has: kube-scheduler marks it unschedulable, for good.
    let started = Instant::now();
    create_pod(&client, &ns, "big", None, &PodConfig::new().cpu("8")).await;
    assert!(
        wait_until(Duration::from_secs(20), || async {
            cycles_run(&addr).await == Some(2.0)
        })
        .await,
        "no cycle after the pod waited past the threshold: {}",
        p.stderr()
    );
    let after = started.elapsed();
    assert!(
        after >= Duration::from_millis(1800) && after <= Duration::from_secs(7),
        "the cycle came {after:?} after the pod was created (threshold 3 s)\n{}",
        p.stderr()
    );
    // One cycle for it, not one per status update.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(cycles_run(&addr).await, Some(2.0), "{}", p.stderr());
    assert_eq!(p.terminate().await, Some(0));
}
