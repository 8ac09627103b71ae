//! Real-usage plans offline: the binary with a snapshot and the metrics.k8s.io lists as
//! `kubectl get --raw` prints them.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_descheduler"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

const POLICY: &str = "examples/usage/policy.yaml";
const SNAP: &str = "examples/usage/cluster.json";
const NODES: &str = "examples/usage/node-metrics.json";
const PODS: &str = "examples/usage/pod-metrics.json";
const NOW: &str = "2026-12-01T00:00:00Z";

fn plan(extra: &[&str]) -> (Output, serde_json::Value) {
    let mut args = vec![
        "--policy-config-file",
        POLICY,
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "-o",
        "json",
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o, v)
}

#[test]
fn measured_usage_moves_pods_that_requests_would_not() {
    let (o, v) = plan(&["--node-metrics", NODES, "--pod-metrics", PODS]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pods: Vec<&str> = v["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    // node-a measures 3.4 of 4 cores (85%) with 0.81 cores per pod: two pods bring it under 50%.
    assert_eq!(pods, vec!["shop/api-a0", "shop/api-a1"]);
    let reason = v["evictions"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("measured by metrics-server"), "{reason}");
    let a = &v["nodes"][0];
    assert_eq!(a["name"], "node-a");
    assert_eq!(a["measured"]["source"], "metrics-server");
    assert_eq!(a["measured"]["before"]["cpu"], 85.0);
    assert_eq!(a["measured"]["after"]["cpu"], 44.5);
    // By requests every node is at 25%: the same policy without metricsUtilization plans nothing.
    let requests_policy = std::fs::read_to_string(root().join(POLICY))
        .unwrap()
        .replace(
            "      metricsUtilization:\n        source: KubernetesMetrics\n",
            "",
        );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("requests.yaml");
    std::fs::write(&p, requests_policy).unwrap();
    let o = run(&[
        "--policy-config-file",
        p.to_str().unwrap(),
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["evictions"].as_array().unwrap().is_empty());
}

#[test]
fn without_pod_metrics_one_pod_leaves_the_hot_node() {
    let (o, v) = plan(&["--node-metrics", NODES]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(v["evictions"].as_array().unwrap().len(), 1);
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n["message"]
            .as_str()
            .unwrap()
            .contains("no measured cpu usage")),
        "{notes:?}"
    );
}

#[test]
fn stale_samples_leave_the_node_out_and_say_so() {
    // An hour later every sample is stale (maxSampleAge 5m): nothing is evicted on old data.
    let o = run(&[
        "--policy-config-file",
        POLICY,
        "--snapshot",
        SNAP,
        "--now",
        "2026-12-01T01:00:00Z",
        "--node-metrics",
        NODES,
        "--pod-metrics",
        PODS,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Planned evictions: 0"), "{out}");
    assert!(out.contains("node node-a: node left out"), "{out}");
    assert!(out.contains("maxSampleAge 300s"), "{out}");
}

#[test]
fn missing_or_broken_metrics_files_are_clear_errors() {
    let (o, _) = plan(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--node-metrics"), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("nodes.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(root().join(NODES))
            .unwrap()
            .replace("3400m", "lots"),
    )
    .unwrap();
    let (o, _) = plan(&["--node-metrics", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("nodes.json") && e.contains("items[0].usage.cpu"),
        "{e}"
    );
    std::fs::write(&bad, "<html>503</html>").unwrap();
    let (o, _) = plan(&["--node-metrics", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a metrics.k8s.io list"),
        "{}",
        stderr(&o)
    );
    // Pod metrics given as node metrics.
    let (o, _) = plan(&["--node-metrics", PODS]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NodeMetricsList"), "{}", stderr(&o));
}
