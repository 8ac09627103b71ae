//! The planner against a real Prometheus: LowNodeUtilization evicts what the series say, and
//! a Prometheus that is down or answers junk makes that plugin skip the cycle (with a clear
//! note) while the other plugins still run. The binary plans the shipped real-usage example
//! snapshot offline, with the figures queried live.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::prometheus::Prometheus;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const SNAP: &str = "examples/usage/cluster.json";

/// node-a runs hot by these series (85% cpu); each of its pods uses 0.81 cores.
fn exposition(node_a: &str) -> String {
    let mut s = String::from("# TYPE node_cpu_ratio gauge\n");
    s.push_str(&format!("node_cpu_ratio{{instance=\"node-a\"}} {node_a}\n"));
    s.push_str(
        "node_cpu_ratio{instance=\"node-b\"} 0.08\nnode_cpu_ratio{instance=\"node-c\"} 0.07\n",
    );
    s.push_str("# TYPE pod_cpu_cores gauge\n");
    for n in ["a", "b", "c"] {
        for i in 0..4 {
            let v = if n == "a" { "0.81" } else { "0.06" };
            s.push_str(&format!(
                "pod_cpu_cores{{namespace=\"shop\",pod=\"api-{n}{i}\"}} {v}\n"
            ));
        }
    }
    s
}

fn policy(dir: &Path, url: &str, extra_profile: &str) -> PathBuf {
    let text = format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
metricsProviders:
- source: Prometheus
  prometheus:
    url: {url}
    timeout: 3s
profiles:
- name: real-usage
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {{cpu: 20}}
      targetThresholds: {{cpu: 50}}
      metricsUtilization:
        source: Prometheus
        prometheus:
          queries: {{cpu: node_cpu_ratio}}
          podQueries: {{cpu: pod_cpu_cores}}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
{extra_profile}"#
    );
    let p = dir.join("policy.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn plan(policy: &Path) -> (Output, serde_json::Value) {
    let o = Command::new(support::bin())
        .args(["--policy-config-file", policy.to_str().unwrap()])
        .args(["--snapshot", SNAP, "-o", "json"])
        .current_dir(root())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o, v)
}

fn evicted(v: &serde_json::Value) -> Vec<(String, String)> {
    v["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["pod"].as_str().unwrap().to_string(),
                e["plugin"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A deschedule profile that plans independently of Prometheus: every Running api pod older
/// than a day.
const LIFETIME_PROFILE: &str = r#"- name: lifetime
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 86400
      states: [Running]
      labelSelector: {matchLabels: {app: api}}
      namespaces: {include: [shop]}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
"#;

#[test]
fn the_planner_evicts_what_the_series_say() {
    let prom = Prometheus::start(&exposition("0.85"), "pod_cpu_cores");
    prom.wait_for_series("node_cpu_ratio", 3..=3);
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), prom.url(), "");
    let (o, v) = plan(&p);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // 85% of 4 cores = 3400m; 810m per pod: two pods bring node-a to 1780m (44.5%).
    assert_eq!(
        evicted(&v),
        vec![
            ("shop/api-a0".to_string(), "LowNodeUtilization".to_string()),
            ("shop/api-a1".to_string(), "LowNodeUtilization".to_string()),
        ],
        "{v}"
    );
    assert_eq!(v["nodes"][0]["measured"]["source"], "prometheus");
    assert_eq!(v["nodes"][0]["measured"]["before"]["cpu"], 85.0);

    // The series change: node-a cools down, nothing is evicted.
    prom.set_exposition(&exposition("0.40"));
    prom.wait_until(
        "node_cpu_ratio{instance=\"node-a\"}",
        "node-a at 0.40",
        |s| s.len() == 1 && s[0].1 == "0.4",
    );
    let (o, v) = plan(&p);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(evicted(&v).is_empty(), "{v}");
}

#[test]
fn junk_or_a_stopped_prometheus_skips_the_plugin_and_others_still_run() {
    // A ratio above 1 is junk for a utilization query: no eviction on a guess.
    let mut prom = Prometheus::start(&exposition("85"), "pod_cpu_cores");
    prom.wait_for_series("node_cpu_ratio", 3..=3);
    let dir = tempfile::tempdir().unwrap();
    let p = policy(dir.path(), prom.url(), LIFETIME_PROFILE);
    let (o, v) = plan(&p);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ev = evicted(&v);
    assert!(!ev.is_empty(), "PodLifeTime still plans: {v}");
    assert!(
        ev.iter().all(|(_, plugin)| plugin == "PodLifeTime"),
        "{ev:?}"
    );
    let notes = v["notes"].as_array().unwrap();
    let skip = notes
        .iter()
        .find(|n| n["plugin"] == "LowNodeUtilization" && n["skipped"] == true)
        .unwrap_or_else(|| panic!("no skip note: {notes:?}"));
    assert!(
        skip["message"]
            .as_str()
            .unwrap()
            .contains("between 0 and 1"),
        "{skip}"
    );

    // Prometheus stopped: the same, with the connection error named.
    prom.stop();
    let (o, v) = plan(&p);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ev = evicted(&v);
    assert!(
        !ev.is_empty() && ev.iter().all(|(_, plugin)| plugin == "PodLifeTime"),
        "{ev:?}"
    );
    let notes = v["notes"].as_array().unwrap();
    let skip = notes
        .iter()
        .find(|n| n["plugin"] == "LowNodeUtilization" && n["skipped"] == true)
        .unwrap_or_else(|| panic!("no skip note: {notes:?}"));
    let msg = skip["message"].as_str().unwrap();
    assert!(
        msg.contains(prom.url()) && msg.contains("cannot connect"),
        "{msg}"
    );
    assert!(
        stderr(&o).contains("metrics source failed"),
        "{}",
        stderr(&o)
    );
}
