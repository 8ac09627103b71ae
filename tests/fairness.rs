//! Fair victim choice: the `sort` extension point with DominantResourceFairness, on the
//! classic DRF example. A cluster of 100 CPUs and 100 GPUs; tenant A's pods each request
//! 2 CPU + 1 GPU, tenant B's 1 CPU + 2 GPU. A runs 20 pods (40 CPU, 20 GPU: dominant share
//! 40%, cpu), B 10 (10 CPU, 20 GPU: 20%, GPU). A hot node holds them all, and
//! LowNodeUtilization must choose among the pods of both. (With 30 and 15 pods, as in the unit
//! tests of `framework::fairness`, the 25 free CPUs could not take the 15 of A's pods that
//! bring A level with B: LowNodeUtilization only moves what fits elsewhere.)

use descheduler::framework::{Pipeline, TenantShare};
use descheduler::plan::{plan, EvictionPlan};
use descheduler::policy::Policy;
use descheduler::report::{Format, Report};
use descheduler::snapshot::builders::{node, pod, T0};
use descheduler::snapshot::{ClusterSnapshot, SnapshotParts};

const GPU: &str = "nvidia.com/gpu";
const NOW: i64 = T0 + 86_400;

/// Namespace `alpha` is tenant A (priority 1000), `beta` tenant B (priority 0): upstream's
/// order, lowest priority first, would take B's pods first.
fn classic() -> ClusterSnapshot {
    let nodes = vec![
        node("hot").cpu(50_000).resource(GPU, 40).build(),
        node("cold").cpu(50_000).resource(GPU, 60).build(),
    ];
    let mut pods = Vec::new();
    for i in 0..20 {
        pods.push(
            pod("alpha", &format!("a{i:02}"))
                .node("hot")
                .cpu(2000)
                .resource(GPU, 1)
                .priority(1000)
                .label("team", "red")
                .build(),
        );
    }
    for i in 0..10 {
        pods.push(
            pod("beta", &format!("b{i:02}"))
                .node("hot")
                .cpu(1000)
                .resource(GPU, 2)
                .priority(0)
                .label("team", "blue")
                .build(),
        );
    }
    ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods,
        ..Default::default()
    })
}

/// LowNodeUtilization on GPUs: the hot node (100% GPU) is over 50%, the cold one (0%) under
/// 10%; the cold node has room for 30 GPUs (and 50 CPUs); at most 14 evictions.
fn policy(sort: &str, extra_config: &str) -> String {
    format!(
        r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictTotal: 14
profiles:
- name: fair
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {{"nvidia.com/gpu": 10}}
      targetThresholds: {{"nvidia.com/gpu": 50}}
{extra_config}  plugins:
{sort}    balance:
      enabled: [LowNodeUtilization]
"#
    )
}

const DRF: &str = "    sort:\n      enabled: [DominantResourceFairness]\n";

fn run(text: &str) -> (ClusterSnapshot, EvictionPlan) {
    let policy = Policy::from_yaml("p.yaml", text, &descheduler::plugins::REGISTRY)
        .unwrap_or_else(|e| panic!("{e}"));
    let pipeline = Pipeline::build(&policy, "p.yaml", &descheduler::plugins::REGISTRY)
        .unwrap_or_else(|e| panic!("{e}"));
    let snap = classic();
    let plan = plan(&pipeline, &snap, NOW).unwrap();
    (snap, plan)
}

fn victims(snap: &ClusterSnapshot, plan: &EvictionPlan) -> Vec<String> {
    plan.evictions
        .iter()
        .map(|e| snap.pod(e.pod).namespace.to_string())
        .collect()
}

#[test]
fn drf_takes_from_the_dominant_tenant_until_level_then_alternates() {
    let (snap, plan) = run(&policy(DRF, ""));
    let got = victims(&snap, &plan);
    // A's share falls 2 points per eviction: 10 evictions bring it from 40% to B's 20%.
    let mut want = vec!["alpha"; 10];
    // Level: the upstream order breaks the tie (B, priority 0, first), then they alternate.
    want.extend(["beta", "alpha", "beta", "alpha"]);
    assert_eq!(got, want);
    // Within a tenant, pods go in the upstream order (namespace/name here).
    let alpha: Vec<&str> = plan
        .evictions
        .iter()
        .map(|e| &*snap.pod(e.pod).name)
        .filter(|n| n.starts_with('a'))
        .collect();
    assert_eq!(alpha[..3], ["a00", "a01", "a02"]);
    assert!(plan
        .evictions
        .iter()
        .all(|e| e.plugin == "LowNodeUtilization"));

    // The report: each tenant's dominant share before and after.
    let report = Report::new(&snap, &plan);
    let rows: Vec<(&str, f64, f64, Option<&str>)> = report
        .findings
        .tenants
        .iter()
        .map(|t| {
            (
                t.tenant.as_str(),
                t.before,
                t.after,
                t.dominant_resource.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            // 12 of 20 pods gone: 16 CPU left.
            ("alpha", 40.0, 16.0, Some("cpu")),
            // 2 of 10 gone: 16 GPUs left.
            ("beta", 20.0, 16.0, Some(GPU)),
        ]
    );
    let json: serde_json::Value = serde_json::from_str(&report.render(Format::Json)).unwrap();
    assert_eq!(
        json["tenants"][0],
        serde_json::json!({"tenant": "alpha", "before": 40.0, "after": 16.0, "dominantResource": "cpu"})
    );
    let table = report.render(Format::Table);
    assert!(table.contains("Tenants (dominant share"), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("beta")
            && l.contains("nvidia.com/gpu")
            && l.contains("20.0% -> 16.0%")),
        "{table}"
    );
}

#[test]
fn without_drf_the_upstream_order_holds() {
    for sort in ["", "    sort:\n      disabled: [\"*\"]\n"] {
        let (snap, plan) = run(&policy(sort, ""));
        let got = victims(&snap, &plan);
        // Lowest priority first: B's pods, until the hot node is down to its 50% of GPUs.
        assert_eq!(got, vec!["beta"; 10], "sort: {sort:?}");
        let names: Vec<&str> = plan
            .evictions
            .iter()
            .map(|e| &*snap.pod(e.pod).name)
            .collect();
        assert_eq!(names[..3], ["b00", "b01", "b02"]);
        assert!(plan.findings.list::<TenantShare, _>().is_empty());
        let report = Report::new(&snap, &plan);
        let json = report.render(Format::Json);
        assert!(!json.contains("\"tenants\""), "{json}");
        assert!(!report.render(Format::Table).contains("Tenants"));
    }
}

#[test]
fn tenants_by_label() {
    let config = "  - name: DominantResourceFairness\n    args:\n      tenantLabel: team\n";
    let (snap, plan) = run(&policy(DRF, config));
    let labels: Vec<&str> = plan
        .evictions
        .iter()
        .map(|e| snap.pod(e.pod).labels.get("team").unwrap())
        .collect();
    let mut want = vec!["red"; 10];
    want.extend(["blue", "red", "blue", "red"]);
    assert_eq!(labels, want);
    let report = Report::new(&snap, &plan);
    let tenants: Vec<(&str, Option<&str>)> = report
        .findings
        .tenants
        .iter()
        .map(|t| (t.tenant.as_str(), t.tenant_label.as_deref()))
        .collect();
    assert_eq!(tenants, [("blue", Some("team")), ("red", Some("team"))]);
    let table = report.render(Format::Table);
    assert!(table.contains("team=red"), "{table}");
}

#[test]
fn a_bad_tenant_label_names_the_field() {
    let config =
        "  - name: DominantResourceFairness\n    args:\n      tenantLabel: \"not a label\"\n";
    let policy = Policy::from_yaml(
        "p.yaml",
        &policy(DRF, config),
        &descheduler::plugins::REGISTRY,
    )
    .unwrap();
    let e = Pipeline::build(&policy, "p.yaml", &descheduler::plugins::REGISTRY).unwrap_err();
    assert_eq!(e.path, "profiles[0].pluginConfig[1].args.tenantLabel");
    assert!(e.message.contains("not a valid label key"), "{e}");
}

#[test]
fn drf_is_a_sort_plugin_only() {
    let e = Policy::from_yaml(
        "p.yaml",
        &policy("    sort:\n      enabled: [DominantResourcefairness]\n", ""),
        &descheduler::plugins::REGISTRY,
    )
    .unwrap_err();
    assert_eq!(e.path, "profiles[0].plugins.sort.enabled[0]");
    assert!(e.message.contains("unknown plugin"), "{e}");
    let e = Policy::from_yaml(
        "p.yaml",
        &policy(
            "    deschedule:\n      enabled: [DominantResourceFairness]\n",
            "",
        ),
        &descheduler::plugins::REGISTRY,
    )
    .unwrap_err();
    assert_eq!(e.path, "profiles[0].plugins.deschedule.enabled[0]");
    assert!(
        e.message.contains("does not implement the deschedule"),
        "{e}"
    );
}

/// A plugin that sorts its candidates once (here RemovePodsViolatingNodeTaints, one node)
/// orders them by the shares at the moment it sorts: all of A's pods before B's.
#[test]
fn plugins_that_sort_once_use_the_shares_of_that_moment() {
    let text = r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictTotal: 19
profiles:
- name: fair
  pluginConfig:
  - name: RemovePodsViolatingNodeTaints
  plugins:
    sort:
      enabled: [DominantResourceFairness]
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints]
"#;
    let policy = Policy::from_yaml("p.yaml", text, &descheduler::plugins::REGISTRY).unwrap();
    let pipeline = Pipeline::build(&policy, "p.yaml", &descheduler::plugins::REGISTRY).unwrap();
    let nodes = vec![
        node("hot")
            .cpu(50_000)
            .resource(GPU, 40)
            .taint(
                "dedicated",
                "x",
                descheduler::snapshot::TaintEffect::NoSchedule,
            )
            .build(),
        node("cold").cpu(50_000).resource(GPU, 60).build(),
    ];
    let base = classic();
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods: base.pods.to_vec(),
        ..Default::default()
    });
    let plan = plan(&pipeline, &snap, NOW).unwrap();
    assert_eq!(victims(&snap, &plan), vec!["alpha"; 19]);
}

/// Shares follow every eviction of the plan, whichever plugin planned it: a deschedule plugin
/// first takes 4 of A's pods off a tainted node (A: 48% -> 40%), and LowNodeUtilization then
/// starts from A at 40%, so A is level with B after 10 of its evictions, not 14.
#[test]
fn shares_follow_evictions_of_earlier_plugins() {
    let text = policy(DRF, "  - name: RemovePodsViolatingNodeTaints\n")
        .replace("maxNoOfPodsToEvictTotal: 14", "maxNoOfPodsToEvictTotal: 18")
        .replace(
            "    balance:\n",
            "    deschedule:\n      enabled: [RemovePodsViolatingNodeTaints]\n    balance:\n",
        );
    let policy = Policy::from_yaml("p.yaml", &text, &descheduler::plugins::REGISTRY)
        .unwrap_or_else(|e| panic!("{e}"));
    let pipeline = Pipeline::build(&policy, "p.yaml", &descheduler::plugins::REGISTRY)
        .unwrap_or_else(|e| panic!("{e}"));
    let base = classic();
    let mut nodes = base.nodes.clone();
    // No allocatable: the cluster stays at 100 CPUs and 100 GPUs.
    nodes.push(
        node("side")
            .cpu(0)
            .memory(0)
            .taint(
                "dedicated",
                "x",
                descheduler::snapshot::TaintEffect::NoSchedule,
            )
            .build(),
    );
    let mut pods = base.pods.to_vec();
    for i in 0..4 {
        pods.push(
            pod("alpha", &format!("s{i}"))
                .node("side")
                .cpu(2000)
                .resource(GPU, 1)
                .priority(1000)
                .build(),
        );
    }
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods,
        ..Default::default()
    });
    let plan = plan(&pipeline, &snap, NOW).unwrap();
    let got: Vec<(&str, &str)> = plan
        .evictions
        .iter()
        .map(|e| (e.plugin, &*snap.pod(e.pod).namespace))
        .collect();
    let mut want = vec![("RemovePodsViolatingNodeTaints", "alpha"); 4];
    want.extend(vec![("LowNodeUtilization", "alpha"); 10]);
    want.extend([
        ("LowNodeUtilization", "beta"),
        ("LowNodeUtilization", "alpha"),
        ("LowNodeUtilization", "beta"),
        ("LowNodeUtilization", "alpha"),
    ]);
    assert_eq!(got, want);
    let report = Report::new(&snap, &plan);
    assert_eq!(
        (
            report.findings.tenants[0].before,
            report.findings.tenants[0].after
        ),
        (48.0, 16.0)
    );
}
