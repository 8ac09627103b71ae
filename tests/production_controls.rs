//! The production controls of issue 31 against a real control plane (tests/support): a budget
//! window that blocks evictions now and allows them once it closes, a percentage budget that
//! holds across continuous cycles, and a pod Karpenter's annotation keeps.
//!
//! Each test works on its own nodes (labelled `descheduler-test=<group>`, which the policy's
//! nodeSelector picks) and its own namespace.

mod support;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

const GROUP_LABEL: &str = "descheduler-test";

/// Three 4-cpu nodes in a fresh group; returns (group, node names).
async fn group_of_nodes(client: &kube::Client) -> (String, Vec<String>) {
    let group = unique("g");
    let mut names = Vec::new();
    for _ in 0..3 {
        let name = unique("n");
        create_node(client, NodeConfig::new(&name).label(GROUP_LABEL, &group)).await;
        names.push(name);
    }
    (group, names)
}

/// LowNodeUtilization over the group (under 20% cpu cold, over 50% hot) within the YAML of
/// `budgets`; `evictor` adds DefaultEvictor args. The hot pods of these tests are pinned to
/// their node, so the evictor's check of destinations is off (`placementCheck: false`, as
/// upstream): what is tested is the budget.
fn policy(group: &str, budgets: &str, evictor: &str) -> String {
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
evictionBudgets:
{budgets}
profiles:
- name: rebalance
  pluginConfig:
  - name: DefaultEvictor
    args: {{placementCheck: false{evictor}}}
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

/// Six 500m pods of one ReplicaSet pinned to `node` (75% of 4 cpu, over the 50% target however
/// often its pods are replaced).
async fn pinned(client: &kube::Client, ns: &str, name: &str, node: &str) -> Vec<Pod> {
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector("kubernetes.io/hostname", node);
    run_replicaset(client, ns, name, 6, &pod).await
}

/// The descheduler in continuous mode; each JSON report kept with when it was read.
struct Continuous {
    child: tokio::process::Child,
    reports: Arc<Mutex<Vec<(Instant, serde_json::Value)>>>,
}

impl Continuous {
    /// The binary with the policy at `policy`, the shared cluster, JSON reports and `args`.
    fn spawn(policy: &std::path::Path, args: &[&str]) -> Continuous {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(bin())
            .env("DESCHEDULER_SECURE_PORT", process::NO_SECURE_PORT)
            .arg("--policy-config-file")
            .arg(policy)
            .arg("--kubeconfig")
            .arg(shared().kubeconfig())
            .args(["-o", "json"])
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("KUBECONFIG")
            .env_remove("DESCHEDULER_EVICTION_COOLDOWN")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let reports = Arc::new(Mutex::new(Vec::new()));
        let sink = reports.clone();
        let stdout = child.stdout.take().unwrap();
        tokio::spawn(async move {
            // One pretty-printed JSON document per cycle: from "{" to "}" at the line start.
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            let mut doc = String::new();
            while let Ok(Some(line)) = lines.next_line().await {
                doc.push_str(&line);
                doc.push('\n');
                if line == "}" {
                    let v: serde_json::Value = serde_json::from_str(&doc)
                        .unwrap_or_else(|e| panic!("not a JSON report ({e}): {doc}"));
                    sink.lock().unwrap().push((Instant::now(), v));
                    doc.clear();
                }
            }
        });
        Continuous { child, reports }
    }

    fn reports(&self) -> Vec<(Instant, serde_json::Value)> {
        self.reports.lock().unwrap().clone()
    }

    async fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id().unwrap().to_string();
        let status = tokio::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("exits after SIGTERM")
            .unwrap()
            .code()
    }
}

/// One cycle of the binary with the policy at `policy` on the shared cluster and `args`: its
/// JSON report (the run must succeed).
async fn one_shot(policy: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let kubeconfig = shared().kubeconfig().to_str().unwrap().to_string();
    let mut all = vec![
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        &kubeconfig,
        "-o",
        "json",
    ];
    all.extend_from_slice(args);
    let run = process::run_bin(&all).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}): {}\n{}", run.stdout, run.stderr))
}

fn evictions(report: &serde_json::Value) -> &[serde_json::Value] {
    report["evictions"].as_array().map_or(&[], Vec::as_slice)
}

fn evicted(report: &serde_json::Value) -> usize {
    evictions(report)
        .iter()
        .filter(|e| e["result"] == "evicted")
        .count()
}

fn held_back_by(report: &serde_json::Value, budget: &str) -> usize {
    report["notChosen"].as_array().map_or(0, |c| {
        c.iter()
            .filter(|c| {
                c["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains(&format!("evictionBudget \"{budget}\"")))
            })
            .count()
    })
}

/// A budget of no evictions whose window opened at the start of this minute and closes 25
/// seconds from now: the cycles before it closes plan nothing and name the budget; the
/// cycles after it plan the hot node's evictions.
#[tokio::test]
async fn a_budget_window_blocks_evictions_until_it_closes() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client).await;
    let ns = create_namespace(&client, "window").await;
    pinned(&client, &ns, "hot", &nodes[0]).await;
    let now = chrono::Utc::now();
    let into_minute = now.timestamp() % 60;
    let open_for = into_minute + 25;
    let closes = Instant::now() + Duration::from_secs(25);
    let schedule = now.format("%M %H * * *").to_string();
    let text = policy(
        &group,
        &format!(
            "- name: freeze\n  evictions: 0\n  schedule: \"{schedule}\"\n  duration: {open_for}s"
        ),
        "",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write_policy(dir.path(), &text);
    let run = Continuous::spawn(&path, &["--descheduling-interval", "2s", "--dry-run"]);
    assert!(
        wait_until(Duration::from_secs(90), || async {
            run.reports()
                .iter()
                .any(|(at, r)| *at > closes + Duration::from_secs(3) && !evictions(r).is_empty())
        })
        .await,
        "no eviction planned after the window closed: {:?}",
        run.reports()
    );
    let reports = run.reports();
    // A report can be read a moment after its cycle planned: leave a margin around the close.
    let during: Vec<_> = reports
        .iter()
        .filter(|(at, _)| *at + Duration::from_secs(3) < closes)
        .collect();
    assert!(!during.is_empty(), "no cycle ran within the window");
    for (_, r) in &during {
        assert!(evictions(r).is_empty(), "planned within the window: {r}");
        assert!(held_back_by(r, "freeze") >= 2, "{r}");
    }
    let after: Vec<_> = reports
        .iter()
        .filter(|(at, _)| *at > closes + Duration::from_secs(3))
        .collect();
    assert!(after
        .iter()
        .all(|(_, r)| evictions(r).len() == 2 && held_back_by(r, "freeze") == 0));
    assert_eq!(run.terminate().await, Some(0));
}

/// 30% of the six pods of a namespace per hour: two evictions (1.8 rounded up), however many
/// cycles run. The workload is pinned to its hot node and the cooldown is off, so without the
/// budget every cycle would evict again (upstream's ping-pong).
#[tokio::test]
async fn a_percentage_budget_holds_across_continuous_cycles() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client).await;
    let ns = create_namespace(&client, "pct").await;
    pinned(&client, &ns, "hot", &nodes[0]).await;
    let text = policy(
        &group,
        &format!("- name: hourly\n  evictions: \"30%\"\n  period: 1h\n  namespaces: [\"{ns}\"]"),
        "",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write_policy(dir.path(), &text);
    let run = Continuous::spawn(
        &path,
        &["--descheduling-interval", "2s", "--eviction-cooldown", "0"],
    );
    assert!(
        wait_until(Duration::from_secs(120), || async {
            let reports = run.reports();
            let first = reports.iter().position(|(_, r)| evicted(r) > 0);
            first.is_some_and(|i| reports.len() >= i + 5)
        })
        .await,
        "fewer than five cycles after the first eviction: {:?}",
        run.reports()
    );
    let reports = run.reports();
    let total: usize = reports.iter().map(|(_, r)| evicted(r)).sum();
    assert_eq!(total, 2, "{reports:?}");
    let last = &reports.last().unwrap().1;
    assert!(held_back_by(last, "hourly") >= 1, "{last}");
    let reason = last["notChosen"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("2 of 2 spent within its period"),
        "{reason}"
    );
    assert_eq!(run.terminate().await, Some(0));
    // The pods evicted were the namespace's, through the API: the replacements are there.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    assert!(pods.list(&ListParams::default()).await.unwrap().items.len() >= 6);
}

/// With `honorDoNotDisrupt: true`, pods annotated `karpenter.sh/do-not-disrupt: "true"` are
/// kept and the report names the annotation; the others on the hot node go. Without it,
/// as upstream, the annotation means nothing.
#[tokio::test]
async fn a_karpenter_annotated_pod_is_kept() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client).await;
    let ns = create_namespace(&client, "karpenter").await;
    let on_hot = |annotated: bool| {
        let p = PodConfig::new()
            .cpu("500m")
            .memory("64Mi")
            .node_selector("kubernetes.io/hostname", &nodes[0]);
        if annotated {
            p.annotation("karpenter.sh/do-not-disrupt", "true")
        } else {
            p
        }
    };
    // The kept ones sort first in upstream's order (a, before b): only the annotation keeps
    // them.
    let kept = run_replicaset(&client, &ns, "a-kept", 4, &on_hot(true)).await;
    let free = run_replicaset(&client, &ns, "b-free", 3, &on_hot(false)).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = |evictor: &str, dry_run: bool| {
        let path = write_policy(dir.path(), &policy(&group, "", evictor));
        async move { one_shot(&path, if dry_run { &["--dry-run"] } else { &[] }).await }
    };
    let names = |pods: &[Pod]| -> Vec<String> {
        pods.iter()
            .map(|p| format!("{ns}/{}", p.metadata.name.as_deref().unwrap()))
            .collect()
    };
    let (kept, free) = (names(&kept), names(&free));
    // Upstream's behaviour by default: annotated pods are planned like any other.
    let plain = plan("", true).await;
    let planned: Vec<&str> = evictions(&plain)
        .iter()
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    assert!(
        planned.iter().any(|p| kept.iter().any(|k| k == p)),
        "{plain}"
    );
    // Honoured: a real run evicts only pods without the annotation.
    let honoured = plan(", honorDoNotDisrupt: true", false).await;
    let evicted_pods: Vec<&str> = evictions(&honoured)
        .iter()
        .filter(|e| e["result"] == "evicted")
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    assert!(!evicted_pods.is_empty(), "{honoured}");
    assert!(
        evicted_pods.iter().all(|p| free.iter().any(|f| f == p)),
        "{honoured}"
    );
    let reasons: Vec<&str> = honoured["notChosen"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| kept.iter().any(|k| c["pod"] == k.as_str()))
        .map(|c| c["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), kept.len(), "{honoured}");
    assert!(reasons.iter().all(|r| r.contains(
        "pod has the annotation karpenter.sh/do-not-disrupt: \"true\" and honorDoNotDisrupt is on"
    )));
    // The annotated pods are all still there.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let alive: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| format!("{ns}/{}", p.metadata.name.as_deref().unwrap()))
        .collect();
    assert!(kept.iter().all(|k| alive.contains(k)), "{alive:?}");
}

/// A CronJob's runs are one-shot: with a decision log, each run reads what earlier runs
/// evicted within a budget's period. Two evictions an hour: the first run evicts two, the next
/// run none, naming what was spent.
#[tokio::test]
async fn one_shot_runs_count_earlier_runs_from_the_decision_log() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes) = group_of_nodes(&client).await;
    let ns = create_namespace(&client, "cron").await;
    pinned(&client, &ns, "hot", &nodes[0]).await;
    let text = policy(
        &group,
        &format!("- name: two-an-hour\n  evictions: 2\n  period: 1h\n  namespaces: [\"{ns}\"]"),
        "",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write_policy(dir.path(), &text);
    let log = dir.path().join("decisions");
    let with_log = ["--decision-log", log.to_str().unwrap()];
    let run = || one_shot(&path, &with_log);
    let first = run().await;
    assert_eq!(evicted(&first), 2, "{first}");
    assert!(evictions(&first)
        .iter()
        .all(|e| e["budgets"] == serde_json::json!(["two-an-hour"])));
    // The replacements come back to the pinned node, which stays hot.
    wait_running_pods(&client, &ns, &app_selector("hot"), 6).await;
    let second = run().await;
    assert_eq!(evicted(&second), 0, "{second}");
    let reason = second["notChosen"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("evictionBudget \"two-an-hour\"")
            && reason.contains("2 of 2 spent within its period"),
        "{second}"
    );
    // Without the log, a one-shot run counts its own cycle only.
    let third = one_shot(&path, &["--dry-run"]).await;
    assert_eq!(evictions(&third).len(), 2, "{third}");
}

/// A workload whose evictions the API refuses (an admission webhook answering HTTP 429, as a
/// disruption budget does) backs off: after the refused cycle its pods are held back, the
/// report says why, and the gauge counts it. Without the cooldown (upstream's behaviour,
/// `tests/evictions_in_background.rs`) the eviction is asked for again every cycle.
#[tokio::test]
async fn a_workload_whose_eviction_is_refused_backs_off() {
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
    let ns = create_namespace(&client, "refused").await;
    let pod = PodConfig::new()
        .cpu("100m")
        .node_selector("kubernetes.io/hostname", &node);
    let running = run_replicaset(&client, &ns, "web", 2, &pod).await;
    let hook = support::webhook::EvictionWebhook::start(
        &client,
        &ns,
        running[0].metadata.name.as_deref().unwrap(),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = write_policy(
        dir.path(),
        &format!(
            r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
profiles:
- name: ages
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
    let addr = format!("127.0.0.1:{}", free_port());
    let run = Continuous::spawn(
        &path,
        &[
            "--descheduling-interval",
            "1s",
            "--eviction-cooldown",
            "1h",
            "--metrics-bind-address",
            &addr,
        ],
    );
    let refused_cycle = |r: &serde_json::Value| {
        evictions(r)
            .iter()
            .any(|e| e["result"] == "blocked_by_disruption_budget")
    };
    assert!(
        wait_until(Duration::from_secs(90), || async {
            let reports = run.reports();
            let first = reports.iter().position(|(_, r)| refused_cycle(r));
            first.is_some_and(|i| reports.len() >= i + 5)
        })
        .await,
        "fewer than five cycles after the refusal: {:?}",
        run.reports()
    );
    let reports = run.reports();
    let first = reports.iter().position(|(_, r)| refused_cycle(r)).unwrap();
    // Asked for in the refused cycle only (each of the two pods at most once).
    let asked = hook.asked().len();
    assert!((1..=2).contains(&asked), "{:?}", hook.asked());
    for (_, r) in &reports[first + 1..] {
        assert!(
            evictions(r).is_empty(),
            "asked again after the refusal: {r}"
        );
        let why: Vec<&str> = r["notChosen"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["reason"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(why.len(), 2, "{r}");
        assert!(
            why.iter().all(|w| w.contains(&format!(
                "workload {ns}/ReplicaSet/web is frozen: the API refused to evict {ns}/"
            ))),
            "{why:?}"
        );
    }
    let (_, metrics) = http_get(&addr, "/metrics").await.expect("metrics");
    assert!(
        metrics.contains("descheduler_workloads_backed_off 1\n"),
        "{metrics}"
    );
    assert_eq!(hook.asked().len(), asked, "{:?}", hook.asked());
    assert_eq!(run.terminate().await, Some(0));
}
