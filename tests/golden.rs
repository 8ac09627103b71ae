//! Golden plans: every shipped policy planned against the shipped example cluster, compared
//! with the reviewed JSON report in tests/golden/. Set UPDATE_GOLDEN=1 to rewrite them after an
//! intended change, and review the diff.

use descheduler::framework::Pipeline;
use descheduler::plan::plan;
use descheduler::report::{Format, Report};
use descheduler::snapshot::decode;
use std::path::{Path, PathBuf};

/// 2026-12-01T00:00:00Z
const NOW: i64 = 1_796_083_200;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn policies() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("policies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    v.sort();
    v
}

fn render(policy: &Path, snapshot: &Path) -> String {
    let pipeline =
        Pipeline::load(policy, &descheduler::plugins::REGISTRY).unwrap_or_else(|e| panic!("{e}"));
    let snap = decode::load_file(snapshot).unwrap();
    let plan = plan(&pipeline, &snap, NOW).unwrap();
    Report::new(&snap, &plan).render(Format::Json)
}

#[test]
fn shipped_policies_load_and_match_their_golden_plans() {
    let snapshot = root().join("examples/cluster-hotspot.yaml");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut checked = 0;
    for policy in policies() {
        let name = policy.file_stem().unwrap().to_string_lossy().to_string();
        let got = render(&policy, &snapshot);
        let golden = root().join("tests/golden").join(format!("{name}.json"));
        if update {
            std::fs::write(&golden, &got).unwrap();
        }
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|_| panic!("missing {}; run with UPDATE_GOLDEN=1", golden.display()));
        assert_eq!(
            got,
            want,
            "plan for {name} differs from {}",
            golden.display()
        );
        checked += 1;
    }
    assert!(
        checked >= 7,
        "expected the seven shipped policies, found {checked}"
    );
}

#[test]
fn every_shipped_policy_has_something_to_do_on_the_example_cluster() {
    let snapshot = root().join("examples/cluster-hotspot.yaml");
    for policy in policies() {
        let report: Report = serde_json::from_str(&render(&policy, &snapshot)).unwrap();
        assert!(
            !report.evictions.is_empty(),
            "{} plans nothing on the example cluster, so its golden plan shows nothing",
            policy.display()
        );
        let mut pods: Vec<&str> = report.evictions.iter().map(|e| e.pod.as_str()).collect();
        pods.sort();
        pods.dedup();
        assert_eq!(pods.len(), report.evictions.len(), "{}", policy.display());
    }
}

#[test]
fn the_example_cluster_has_a_hotspot_that_the_combined_policy_relieves() {
    let out = render(
        &root().join("policies/combined.yaml"),
        &root().join("examples/cluster-hotspot.yaml"),
    );
    let report: Report = serde_json::from_str(&out).unwrap();
    assert!(!report.evictions.is_empty());
    let a1 = report.nodes.iter().find(|n| n.name == "node-a1").unwrap();
    assert!(a1.after["cpu"] < a1.before["cpu"]);
    // the NotReady node is not planning input
    assert!(report.nodes.iter().all(|n| n.name != "node-c1"));
    // protected pods never appear: DaemonSet, critical, bare, local storage, PVC
    for e in &report.evictions {
        for protected in [
            "kube-proxy",
            "coredns",
            "cart-debug",
            "train-resnet",
            "redis-0",
        ] {
            assert!(!e.pod.contains(protected), "{} must not be evicted", e.pod);
        }
    }
}

#[test]
fn json_and_yaml_snapshots_give_the_same_plan() {
    let yaml = root().join("examples/cluster-hotspot.yaml");
    let text = std::fs::read_to_string(&yaml).unwrap();
    let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cluster.json");
    std::fs::write(&json, serde_json::to_vec(&value).unwrap()).unwrap();
    let policy = root().join("policies/combined.yaml");
    assert_eq!(render(&policy, &yaml), render(&policy, &json));
}

#[test]
fn the_deployed_policy_loads_and_plans() {
    let out = render(
        &root().join("manifests/base/policy.yaml"),
        &root().join("examples/cluster-hotspot.yaml"),
    );
    let report: Report = serde_json::from_str(&out).unwrap();
    assert!(!report.evictions.is_empty());
}

/// The example of `examples/no-pointless-evictions/`: of the four pods on `hot`, two move; the
/// third web pod's replacement may land back on `hot` (a three-way tie once the evicted pods
/// no longer count for spreading), and the batch pod's would push `cold-a` over its target, so
/// neither is planned and both say why. The after-state counts the replacements where they are
/// predicted to land, with the range the tie leaves.
#[test]
fn the_example_without_pointless_evictions_matches_its_golden_plan() {
    let dir = root().join("examples/no-pointless-evictions");
    let got = render(&dir.join("policy.yaml"), &dir.join("cluster.yaml"));
    let golden = dir.join("plan.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden)
        .unwrap_or_else(|_| panic!("missing {}; run with UPDATE_GOLDEN=1", golden.display()));
    assert_eq!(got, want, "plan differs from {}", golden.display());

    let report: Report = serde_json::from_str(&got).unwrap();
    let moved: Vec<&str> = report.evictions.iter().map(|e| e.pod.as_str()).collect();
    assert_eq!(
        moved,
        ["shop/web-7d9f8b6c5-4xk2p", "shop/web-7d9f8b6c5-9qm7t"]
    );
    for e in &report.evictions {
        let dest = e.destination.as_deref().expect("a destination");
        assert!(dest != e.node && !e.alternatives.contains(&e.node), "{e:?}");
    }
    let why = |pod: &str| {
        report
            .not_chosen
            .iter()
            .find(|n| n.pod == pod)
            .map(|n| n.reason.clone())
            .unwrap_or_else(|| panic!("{pod} not among the candidates not chosen"))
    };
    assert!(why("shop/web-7d9f8b6c5-tz8wd").contains("may land back on its own node hot"));
    assert!(why("shop/batch-5c4b7f9d8-x2lqn").contains("would go over its target cpu"));
    let node = |name: &str| report.nodes.iter().find(|n| n.name == name).unwrap();
    // hot keeps 2 x 600m + 1500m of 4 cpu; the two replacements are 15% each on the cold
    // nodes, which one takes the first being a tie.
    assert_eq!(node("hot").after["cpu"], 52.5);
    assert!(node("hot").after_range.is_empty());
    let cold: f64 = ["cold-a", "cold-b"]
        .iter()
        .map(|n| node(n).after["cpu"])
        .sum();
    assert_eq!(cold, 30.0);
    assert_eq!(node("cold-a").after_range["cpu"], [0.0, 15.0]);
}

/// The example of `examples/surge/`: of the two one-replica Deployments on `hot`, each behind
/// a budget allowing no disruption, `web` is moved by a surge (its new pod predicted on a
/// cold node, beside the pod it replaces) and `api` is not, an autoscaler targeting it; the
/// report says both reasons.
#[test]
fn the_surge_example_matches_its_golden_plan() {
    let dir = root().join("examples/surge");
    let got = render(&dir.join("policy.yaml"), &dir.join("cluster.yaml"));
    let golden = dir.join("plan.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden)
        .unwrap_or_else(|_| panic!("missing {}; run with UPDATE_GOLDEN=1", golden.display()));
    assert_eq!(got, want, "plan differs from {}", golden.display());
    let report: Report = serde_json::from_str(&got).unwrap();
    let moved: Vec<(&str, &str)> = report
        .evictions
        .iter()
        .map(|e| (e.pod.as_str(), e.mechanism.as_str()))
        .collect();
    assert_eq!(moved, [("app/web-6d4b9c7f8-x7k2p", "surge")]);
    let dest = report.evictions[0].destination.as_deref();
    assert!(matches!(dest, Some("cold-a") | Some("cold-b")), "{dest:?}");
    let api = report
        .not_chosen
        .iter()
        .find(|n| n.pod == "app/api-5c8f7d6b9-x7k2p")
        .expect("api among the candidates not chosen");
    assert!(
        api.reason.contains("no disruptions left")
            && api.reason.contains("HorizontalPodAutoscaler app/api"),
        "{}",
        api.reason
    );
}
