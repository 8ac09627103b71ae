//! Operating the descheduler against a real control plane (tests/support): the decision log
//! of continuous mode (a record per cycle, retention, and a kept snapshot that plans the
//! same again offline), and the binary run as the kubectl plugin `kubectl-descheduler`
//! (the policy from the manifests' ConfigMap, the kubeconfig's current context), directly
//! and through kubectl's own plugin lookup.

mod support;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;
use support::process::{run_bin, Descheduler, Run};
use support::*;

const GROUP_LABEL: &str = "descheduler-test";
const WAIT: Duration = Duration::from_secs(90);

/// Three Ready nodes of 4 CPUs in a fresh group, and six pods of 500m pinned to the first
/// (75% of its cpu, over the policy's 50%); returns (group, nodes, namespace).
async fn hot_cluster(client: &kube::Client) -> (String, Vec<String>, String) {
    let group = unique("g");
    let mut nodes = Vec::new();
    for _ in 0..3 {
        let name = unique("n");
        create_node(client, NodeConfig::new(&name).label(GROUP_LABEL, &group)).await;
        nodes.push(name);
    }
    let ns = create_namespace(client, "op").await;
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector("kubernetes.io/hostname", &nodes[0]);
    run_replicaset(client, &ns, "hot", 6, &pod).await;
    (group, nodes, ns)
}

/// LowNodeUtilization over the group: under 20% cpu is cold, over 50% hot. The hot pods are
/// pinned to their node, so their replacements come back: the evictor's default check would
/// refuse every eviction as pointless; these tests are about what a cycle records, so it is
/// off (`placementCheck: false`, as upstream).
fn policy(group: &str) -> String {
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
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

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}\nstderr: {}",
            run.stdout, run.stderr
        )
    })
}

/// (pod, node, plugin, reason, destination) of each eviction of a JSON report.
fn evictions(report: &serde_json::Value) -> Vec<[String; 5]> {
    report["evictions"]
        .as_array()
        .unwrap_or_else(|| panic!("no evictions in {report}"))
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("-").to_string();
            [
                s("pod"),
                s("node"),
                s("plugin"),
                s("reason"),
                s("destination"),
            ]
        })
        .collect()
}

async fn pod_uids(client: &kube::Client, ns: &str) -> BTreeSet<String> {
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.uid)
        .collect()
}

/// The files in `dir` (none while it is not made yet).
fn decision_files(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeSet::new();
    };
    entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn the_decision_log_keeps_each_cycle_within_its_bounds_and_replays_to_the_same_plan() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes, ns) = hot_cluster(&client).await;
    let before = pod_uids(&client, &ns).await;
    let dir = tempfile::tempdir().unwrap();
    let policy_file = write_policy(dir.path(), &policy(&group));
    let log = dir.path().join("decisions");
    let p = Descheduler::spawn(&[
        "--policy-config-file",
        policy_file.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "--descheduling-interval=1s",
        "--dry-run",
        "--decision-log",
        log.to_str().unwrap(),
        "--decision-log-snapshot",
        "--decision-log-max-files=3",
        "-o",
        "json",
    ]);
    // Enough cycles for the oldest records to have gone: the first record seen must leave.
    let mut first_seen: Option<String> = None;
    let mut gone = false;
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        let records: Vec<String> = decision_files(&log)
            .into_iter()
            .filter(|n| n.ends_with(".json"))
            .collect();
        if first_seen.is_none() {
            first_seen = records.first().cloned();
        }
        if let Some(first) = &first_seen {
            if !records.contains(first) && records.len() == 3 {
                gone = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        gone,
        "no rotation: {:?}\n{}",
        decision_files(&log),
        p.stderr()
    );
    p.terminate().await;
    // Three records, each with its snapshot and nothing else (no temporary file left).
    let files = decision_files(&log);
    let records: Vec<&String> = files
        .iter()
        .filter(|n| n.ends_with(".json") && !n.ends_with(".snapshot.json"))
        .collect();
    let snapshots: Vec<&String> = files
        .iter()
        .filter(|n| n.ends_with(".snapshot.json.gz"))
        .collect();
    assert_eq!(records.len(), 3, "{files:?}");
    assert_eq!(snapshots.len(), 3, "{files:?}");
    assert_eq!(files.len(), 6, "{files:?}");
    for r in &records {
        assert!(r.starts_with("decision-"), "{r}");
    }

    let kept = descheduler::app::decision_log::read_all(&log).unwrap();
    assert_eq!(kept.len(), 3);
    for (path, d) in &kept {
        assert_eq!(d.mode, "dry-run", "{}", path.display());
        assert!(d.read.nodes >= 3 && d.read.pods >= 6, "{:?}", d.read);
        // The record is the cycle's report: the hot node's pods, planned off it.
        let planned = &d.report.evictions;
        assert!(!planned.is_empty(), "{}", path.display());
        for e in planned {
            assert!(e.pod.starts_with(&format!("{ns}/")), "{e:?}");
            assert_eq!(
                (e.node.as_str(), e.plugin.as_str()),
                (nodes[0].as_str(), "LowNodeUtilization")
            );
            assert!(e.result.is_none(), "a dry run has no results: {e:?}");
        }
        let hot = d.report.nodes.iter().find(|n| n.name == nodes[0]).unwrap();
        assert_eq!(hot.before["cpu"], 75.0);
        assert!(hot.after["cpu"] <= 50.0, "{hot:?}");
    }
    // Records are named by time: their order is the cycles' order.
    let nows: Vec<i64> = kept.iter().map(|(_, d)| d.now).collect();
    let mut sorted = nows.clone();
    sorted.sort();
    assert_eq!(nows, sorted);

    // The newest cycle, planned again offline from its snapshot at its time.
    let (_, last) = kept.last().unwrap();
    let snapshot = log.join(last.snapshot.as_ref().expect("a snapshot was kept"));
    let replay = run_bin(&[
        "--policy-config-file",
        policy_file.to_str().unwrap(),
        "--snapshot",
        snapshot.to_str().unwrap(),
        "--now",
        &last.now_rfc3339,
        "-o",
        "json",
    ])
    .await;
    assert_eq!(replay.code, Some(0), "{}", replay.stderr);
    let replayed = json(&replay);
    let recorded = serde_json::to_value(&last.report).unwrap();
    assert_eq!(evictions(&replayed), evictions(&recorded));
    assert_eq!(replayed["nodes"], recorded["nodes"]);
    assert_eq!(replayed["read"], recorded["read"]);
    // A dry run evicted nothing.
    assert_eq!(pod_uids(&client, &ns).await, before);
}

#[tokio::test]
async fn the_decision_log_refuses_a_directory_it_cannot_write_and_a_snapshot_without_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let policy_file = write_policy(dir.path(), &policy("x"));
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "x").unwrap();
    let bad = run_bin(&[
        "--policy-config-file",
        policy_file.to_str().unwrap(),
        "--snapshot",
        "examples/cluster-hotspot.yaml",
        "--decision-log",
        blocker.join("log").to_str().unwrap(),
    ])
    .await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--decision-log") && bad.stderr.contains("writable directory"),
        "{}",
        bad.stderr
    );
    let alone = run_bin(&[
        "--policy-config-file",
        policy_file.to_str().unwrap(),
        "--snapshot",
        "examples/cluster-hotspot.yaml",
        "--decision-log-snapshot",
    ])
    .await;
    assert_eq!(alone.code, Some(2), "{}", alone.stderr);
    assert!(
        alone.stderr.contains("give --decision-log DIR"),
        "{}",
        alone.stderr
    );
    let size = run_bin(&[
        "--policy-config-file",
        policy_file.to_str().unwrap(),
        "--snapshot",
        "examples/cluster-hotspot.yaml",
        "--decision-log",
        dir.path().join("log").to_str().unwrap(),
        "--decision-log-max-bytes=lots",
    ])
    .await;
    assert_eq!(size.code, Some(2), "{}", size.stderr);
    assert!(
        size.stderr.contains("--decision-log-max-bytes \"lots\"") && size.stderr.contains("512Mi"),
        "{}",
        size.stderr
    );
}

/// A folder holding the binary under the plugin's name (a link, as an install would make).
fn plugin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin(), dir.path().join("kubectl-descheduler")).unwrap();
    dir
}

/// Runs `program` with `args`, KUBECONFIG set to `kubeconfig`, `path_first` first on PATH,
/// and none of the descheduler's variables.
async fn run_with_kubeconfig(
    program: &Path,
    args: &[&str],
    kubeconfig: &Path,
    path_first: &Path,
) -> Run {
    let mut command = tokio::process::Command::new(program);
    command.args(args).env("KUBECONFIG", kubeconfig).env(
        "PATH",
        format!(
            "{}:{}",
            path_first.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    for (name, _) in std::env::vars() {
        if name.starts_with("DESCHEDULER_") || name == "RUST_LOG" {
            command.env_remove(name);
        }
    }
    let out = command.output().await.unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test]
async fn kubectl_descheduler_plan_reads_the_policy_configmap_and_evicts_nothing() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes, ns) = hot_cluster(&client).await;
    let before = pod_uids(&client, &ns).await;
    // The policy where the manifests put it (manifests/base: kube-system/descheduler-policy).
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let map = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("descheduler-policy".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "policy.yaml".to_string(),
            policy(&group),
        )])),
        ..Default::default()
    };
    maps.create(&PostParams::default(), &map).await.unwrap();
    let plugins = plugin_dir();
    let plugin = plugins.path().join("kubectl-descheduler");
    let kubeconfig = cluster.kubeconfig();

    // Run under the plugin's name: the current context, the ConfigMap's policy.
    let run =
        run_with_kubeconfig(&plugin, &["plan", "-o", "json"], kubeconfig, plugins.path()).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let planned = evictions(&json(&run));
    assert!(!planned.is_empty(), "{}", run.stdout);
    for [pod, node, plugin_name, _, destination] in &planned {
        assert!(pod.starts_with(&format!("{ns}/")), "{pod}");
        assert_eq!(
            (node, plugin_name.as_str()),
            (&nodes[0], "LowNodeUtilization")
        );
        // Predicted destinations are on: pods pinned to their node come back to it.
        assert_eq!(destination, &nodes[0], "{pod}");
    }

    // The same plan as a page.
    let page =
        run_with_kubeconfig(&plugin, &["plan", "-o", "html"], kubeconfig, plugins.path()).await;
    assert_eq!(page.code, Some(0), "{}", page.stderr);
    assert!(
        page.stdout.starts_with("<!DOCTYPE html>"),
        "{}",
        page.stdout
    );
    let rows = page_evictions(&page.stdout);
    for [pod, ..] in &planned {
        assert!(rows.iter().any(|(p, _)| p == pod), "{pod} in {rows:?}");
    }

    // Through kubectl, which finds the plugin on PATH: the same plan, as a table.
    let table = run_with_kubeconfig(
        &kubectl(),
        &["descheduler", "plan"],
        kubeconfig,
        plugins.path(),
    )
    .await;
    assert_eq!(table.code, Some(0), "{}", table.stderr);
    assert!(
        table
            .stdout
            .contains(&format!("Planned evictions: {}", planned.len())),
        "{}",
        table.stdout
    );
    for [pod, ..] in &planned {
        assert!(
            table.stdout.contains(pod.as_str()),
            "{pod} in {}",
            table.stdout
        );
    }

    // A ConfigMap that is not there: exit 1, naming it and the way out.
    let missing = run_with_kubeconfig(
        &plugin,
        &["plan", "--policy-configmap", "kube-system/nope"],
        kubeconfig,
        plugins.path(),
    )
    .await;
    assert_eq!(missing.code, Some(1), "{}", missing.stderr);
    assert!(
        missing
            .stderr
            .contains("ConfigMap kube-system/nope not found")
            && missing.stderr.contains("--policy-config-file"),
        "{}",
        missing.stderr
    );
    // A bad policy in a ConfigMap is named by the ConfigMap and the field.
    let bad = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(unique("bad-policy")),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "policy.yaml".to_string(),
            policy(&group).replace(
                "targetThresholds: {cpu: 50}",
                "targetThresholds: {cpu: 500}",
            ),
        )])),
        ..Default::default()
    };
    let bad = maps.create(&PostParams::default(), &bad).await.unwrap();
    let name = format!("kube-system/{}", bad.metadata.name.unwrap());
    let refused = run_with_kubeconfig(
        &plugin,
        &["plan", "--policy-configmap", &name],
        kubeconfig,
        plugins.path(),
    )
    .await;
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("ConfigMap {name} key policy.yaml"))
            && refused.stderr.contains("targetThresholds"),
        "{}",
        refused.stderr
    );
    // The kubeconfig's current context is the cluster asked; --context picks another. Here
    // the current one points where no API server listens.
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let elsewhere = text
        .replacen(
            "clusters:\n",
            "clusters:\n- name: elsewhere\n  cluster:\n    server: https://127.0.0.1:1\n",
            1,
        )
        .replacen(
            "users:\n",
            "users:\n- name: nobody\n  user:\n    token: none\n",
            1,
        )
        .replacen(
            "contexts:\n",
            "contexts:\n- name: elsewhere\n  context:\n    cluster: elsewhere\n    user: nobody\n",
            1,
        )
        .replace("current-context: test", "current-context: elsewhere");
    assert!(
        elsewhere.contains("current-context: elsewhere"),
        "{elsewhere}"
    );
    let dir = tempfile::tempdir().unwrap();
    let two_contexts = dir.path().join("kubeconfig");
    std::fs::write(&two_contexts, elsewhere).unwrap();
    let current = run_with_kubeconfig(&plugin, &["plan"], &two_contexts, plugins.path()).await;
    assert_eq!(current.code, Some(1), "{}", current.stderr);
    assert!(
        current
            .stderr
            .contains("ConfigMap kube-system/descheduler-policy"),
        "{}",
        current.stderr
    );
    let chosen = run_with_kubeconfig(
        &plugin,
        &["plan", "--context", "test", "-o", "json"],
        &two_contexts,
        plugins.path(),
    )
    .await;
    assert_eq!(chosen.code, Some(0), "{}", chosen.stderr);
    assert_eq!(evictions(&json(&chosen)), planned);

    // A plan is a dry run.
    assert_eq!(pod_uids(&client, &ns).await, before);
}

#[tokio::test]
async fn a_live_cycle_reports_its_results_as_html_and_in_the_decision_log() {
    let cluster = shared();
    let client = cluster.client();
    let (group, nodes, ns) = hot_cluster(&client).await;
    let dir = tempfile::tempdir().unwrap();
    let policy_file = write_policy(dir.path(), &policy(&group));
    let log = dir.path().join("decisions");
    // One cycle that evicts.
    let run = run_bin(&[
        "--policy-config-file",
        policy_file.to_str().unwrap(),
        "--kubeconfig",
        cluster.kubeconfig().to_str().unwrap(),
        "--decision-log",
        log.to_str().unwrap(),
        "-o",
        "html",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let kept = descheduler::app::decision_log::read_all(&log).unwrap();
    assert_eq!(kept.len(), 1);
    let (_, d) = &kept[0];
    assert_eq!(d.mode, "evict");
    assert!(d.snapshot.is_none(), "no snapshot unless asked");
    let evicted: Vec<&str> = d
        .report
        .evictions
        .iter()
        .filter(|e| e.result.as_deref() == Some("evicted"))
        .map(|e| e.pod.as_str())
        .collect();
    assert!(!evicted.is_empty(), "{:?}", d.report.evictions);
    for e in &d.report.evictions {
        assert_eq!(e.node, nodes[0]);
        assert!(e.pod.starts_with(&format!("{ns}/")));
    }
    // The page carries the same results, and the policy's thresholds for its bars.
    let page = &run.stdout;
    assert!(page.starts_with("<!DOCTYPE html>"));
    let rows = page_evictions(page);
    for pod in &evicted {
        assert!(
            rows.iter().any(|(p, r)| p == pod && r == "evicted"),
            "{pod} evicted in {rows:?}"
        );
    }
    assert!(
        page.contains(
            "\"plugin\":\"LowNodeUtilization\",\"low\":{\"cpu\":20.0},\"high\":{\"cpu\":50.0}"
        ),
        "thresholds in the page"
    );
}

/// The evictions an HTML report page carries, as `(ns/name, result)`: its data's rows are
/// indexes into tables of texts (see `src/report/html.rs`).
fn page_evictions(page: &str) -> Vec<(String, String)> {
    let open = "id=\"report-data\">";
    let start = page.find(open).expect("the page's data") + open.len();
    let end = page[start..].find("</script>").unwrap() + start;
    let data: serde_json::Value = serde_json::from_str(&page[start..end]).unwrap();
    let text = |table: &str, row: &serde_json::Value, i: usize| {
        data["texts"][table][row[i].as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_string()
    };
    data["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                format!("{}/{}", text("namespaces", e, 0), text("names", e, 1)),
                text("results", e, 8),
            )
        })
        .collect()
}
