use super::*;
use crate::framework::{Limits, Pipeline};
use crate::plan;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pdb, pod, snapshot, GIB};
use crate::snapshot::{ClusterSnapshot, Pod, PodId, Qos, SnapshotParts, TaintEffect};
use serde_json::json;

/// Runs the plugin alone over every Ready node and returns the evicted pods' names.
fn run_with(args: serde_json::Value, snap: &ClusterSnapshot, limits: Limits) -> Vec<String> {
    let plugin = LowNodeUtilization::from_json(&args).expect("valid args");
    crate::framework::testing::run_alone(&plugin, snap, &DefaultEvictor::default(), limits, 0)
        .iter()
        .map(|e| snap.pod(e.pod).name.to_string())
        .collect()
}

fn run(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
    run_with(args, snap, Limits::default())
}

/// Upstream's documented example shape: one hot node (4 CPU, 8 pods of 400m = 80%),
/// two cold ones (one 400m pod each = 10%).
fn hot_cold() -> Vec<Pod> {
    let mut pods: Vec<Pod> = (0..8)
        .map(|i| {
            pod("web", &format!("hot-{i}"))
                .node("n1")
                .cpu(400)
                .memory(GIB / 4)
                .build()
        })
        .collect();
    pods.push(pod("web", "cold-a").node("n2").cpu(400).build());
    pods.push(pod("web", "cold-b").node("n3").cpu(400).build());
    pods
}

fn nodes3() -> Vec<crate::snapshot::Node> {
    vec![node("n1").build(), node("n2").build(), node("n3").build()]
}

fn cpu_args(low: f64, high: f64) -> serde_json::Value {
    json!({"thresholds": {"cpu": low}, "targetThresholds": {"cpu": high}})
}

/// A hot node (6 pods of 600m = 90%), a cold one (0%) and a bigger one in between (25%):
/// the cold one is the only destination, with room for 2000m (target 50%).
fn hot_mid_cold(extra: Vec<Pod>) -> ClusterSnapshot {
    let mut pods: Vec<Pod> = (0..6)
        .map(|i| pod("web", &format!("hot-{i}")).node("hot").cpu(600).build())
        .collect();
    pods.push(pod("web", "busy").node("mid").cpu(2000).build());
    pods.extend(extra);
    snapshot(
        vec![
            node("cold").cpu(4000).build(),
            node("hot").cpu(4000).build(),
            node("mid").cpu(8000).build(),
        ],
        pods,
    )
}

fn run_evictor(
    args: serde_json::Value,
    evictor: serde_json::Value,
    snap: &ClusterSnapshot,
) -> Vec<crate::framework::PlannedEviction> {
    let plugin = LowNodeUtilization::from_json(&args).expect("valid args");
    let evictor = DefaultEvictor::from_json(&evictor).unwrap();
    crate::framework::testing::run_alone(&plugin, snap, &evictor, Limits::default(), 0)
}

#[test]
fn placement_check_wants_an_underutilized_destination_within_its_target() {
    let snap = hot_mid_cold(Vec::new());
    let names = |e: &[crate::framework::PlannedEviction]| -> Vec<String> {
        e.iter().map(|e| snap.pod(e.pod).name.to_string()).collect()
    };
    // Without placementCheck: 3 pods (3600m -> 1800m), all fitting cold's room.
    let plain = run_evictor(cpu_args(20.0, 50.0), json!({}), &snap);
    assert_eq!(names(&plain).len(), 3, "{:?}", names(&plain));
    // With it: kube-scheduler (simulated) puts the first pods on cold, the emptiest; once
    // cold is fuller than mid, the next pod would go to mid, which is not underutilized,
    // so it stays.
    let checked = run_evictor(cpu_args(20.0, 50.0), json!({"placementCheck": true}), &snap);
    assert!(
        !checked.is_empty() && checked.len() < plain.len(),
        "{:?}",
        names(&checked)
    );
    let cold = snap.node_id("cold").unwrap();
    assert!(checked.iter().all(|e| e.destination == Some(cold)));
    // Why the next one stays is on record.
    let plugin = LowNodeUtilization::from_json(&cpu_args(20.0, 50.0)).unwrap();
    let evictor = DefaultEvictor::from_json(&json!({"placementCheck": true})).unwrap();
    let nodes = snap.ready_nodes(&Default::default());
    let mut state = crate::framework::PlanningState::new(&snap, Limits::default());
    crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, 0);
    let notes = state.journal().not_chosen_notes();
    assert!(
        notes.iter().any(|n| n
            .message
            .contains("land on mid, not an underutilized node (placementCheck)")),
        "{notes:?}"
    );
}

#[test]
fn a_whole_gang_takes_room_on_the_destinations() {
    // Hot: 12 pods of 600m on 8 cpus (90%), two of them a gang with minMember 2; it would
    // shed 6 pods to reach its target (4000m), but cold has room for 2000m only. With
    // WholeGang the first pick takes both members to cold; cold's room then holds one more
    // single pod, not three.
    let member = |name: &str| pod("web", name).node("hot").cpu(600).pod_group("train");
    let mut snap_parts = SnapshotParts {
        nodes: vec![
            node("cold").cpu(4000).build(),
            node("hot").cpu(8000).build(),
            node("mid").cpu(8000).build(),
        ],
        // (no priority is the lowest: the gang is first in line)
        pods: (0..10)
            .map(|i| {
                pod("web", &format!("hot-{i}"))
                    .node("hot")
                    .cpu(600)
                    .priority(0)
                    .build()
            })
            .collect(),
        pod_groups: vec![crate::snapshot::builders::pod_group("web", "train", 2)],
        ..Default::default()
    };
    snap_parts.pods.push(member("gang-a").build());
    snap_parts.pods.push(member("gang-b").build());
    // Mid (37.5%, between the thresholds) is busy enough that kube-scheduler's scores
    // prefer cold for both members (at 25% BalancedAllocation would tip the second to mid).
    snap_parts
        .pods
        .push(pod("web", "busy").node("mid").cpu(3000).build());
    let snap = ClusterSnapshot::build(snap_parts);
    let planned = run_evictor(
        cpu_args(20.0, 50.0),
        json!({"gangPolicy": "WholeGang"}),
        &snap,
    );
    let names: Vec<String> = planned
        .iter()
        .map(|e| snap.pod(e.pod).name.to_string())
        .collect();
    assert_eq!(&names[..2], ["gang-a", "gang-b"], "{names:?}");
    let cold = snap.node_id("cold").unwrap();
    assert!(planned[..2].iter().all(|e| e.destination == Some(cold)));
    // The gang (1200m) and one more pod (600m) = 1800m, within cold's 2000m of room.
    assert_eq!(names.len(), 3, "{names:?}");
    let moved: i64 = planned.iter().map(|e| snap.pod(e.pod).requests.cpu).sum();
    assert!(moved <= 2000, "cold would go over its target: {moved}m");
}

#[test]
fn moves_pods_off_the_hot_node_until_under_target() {
    let snap = snapshot(nodes3(), hot_cold());
    let out = run(cpu_args(20.0, 50.0), &snap);
    // 3200m of 4000m = 80% > 50%: evict until <= 2000m: 3 pods (3200 -> 2000).
    assert_eq!(out.len(), 3, "{out:?}");
    assert!(out.iter().all(|n| n.starts_with("hot-")));
}

#[test]
fn stops_when_destinations_are_full() {
    let snap = snapshot(nodes3(), hot_cold());
    // cold nodes have room up to 25% of 4000m = 1000m each, 600m free each, 1200m in total;
    // but 400m pods fit one per destination (a second leaves 200m): 2 leave, not the 3
    // the summed room would allow.
    let out = run(cpu_args(20.0, 25.0), &snap);
    assert_eq!(out.len(), 2, "{out:?}");
    let out = run(cpu_args(20.0, 22.0), &snap);
    // room: 880 - 400 = 480m on each cold node: one 400m pod fits below each target; a
    // third would push a destination over 22% (upstream moves it anyway, on the summed
    // room of 960m), so it stays.
    assert_eq!(out.len(), 2, "{out:?}");
}

#[test]
fn nothing_to_do_cases() {
    let snap = snapshot(nodes3(), hot_cold());
    // no node under 5%
    assert!(run(cpu_args(5.0, 50.0), &snap).is_empty());
    // numberOfNodes: 2 underutilized nodes are not more than 2
    assert!(run(
        json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "numberOfNodes": 2}),
        &snap
    )
    .is_empty());
    assert_eq!(
        run(
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "numberOfNodes": 1}),
            &snap
        )
        .len(),
        3
    );
    // nobody over 90%
    assert!(run(cpu_args(20.0, 90.0), &snap).is_empty());
    // all nodes underutilized
    assert!(run(cpu_args(90.0, 95.0), &snap).is_empty());
}

#[test]
fn unschedulable_nodes_are_not_destinations() {
    let snap = snapshot(
        vec![
            node("n1").build(),
            node("n2").unschedulable().build(),
            node("n3").unschedulable().build(),
        ],
        hot_cold(),
    );
    assert!(run(cpu_args(20.0, 50.0), &snap).is_empty());
}

#[test]
fn lowest_priority_and_qos_go_first() {
    let mut pods = vec![
        pod("a", "high").node("n1").cpu(1000).priority(100).build(),
        pod("a", "guaranteed")
            .node("n1")
            .cpu(1000)
            .qos(Qos::Guaranteed)
            .build(),
        pod("a", "burstable").node("n1").cpu(1000).build(),
        pod("a", "low").node("n1").cpu(1000).priority(-5).build(),
    ];
    pods.push(pod("a", "x").node("n2").cpu(100).build());
    let snap = snapshot(vec![node("n1").build(), node("n2").build()], pods);
    // 4000m / 4000m = 100% -> down to 60%: two pods leave.
    let out = run(cpu_args(10.0, 60.0), &snap);
    assert_eq!(out, vec!["burstable", "guaranteed"]);
    // no priority counts as the lowest
    let snap = snapshot(
        vec![node("n1").build(), node("n2").build()],
        vec![
            pod("a", "p0").node("n1").cpu(2000).priority(0).build(),
            pod("a", "pn").node("n1").cpu(2000).build(),
        ],
    );
    assert_eq!(run(cpu_args(10.0, 60.0), &snap), vec!["pn"]);
}

#[test]
fn protected_pods_stay() {
    let pods = vec![
        pod("a", "ds")
            .node("n1")
            .cpu(1500)
            .owner("DaemonSet", "d")
            .build(),
        pod("a", "bare").node("n1").cpu(1500).bare().build(),
        pod("a", "mirror").node("n1").cpu(1000).mirror().build(),
    ];
    let snap = snapshot(vec![node("n1").build(), node("n2").build()], pods);
    assert!(run(cpu_args(10.0, 50.0), &snap).is_empty());
}

#[test]
fn pods_must_tolerate_a_destination() {
    let pods = vec![
        pod("a", "p1").node("n1").cpu(2000).build(),
        pod("a", "p2")
            .node("n1")
            .cpu(2000)
            .toleration("dedicated", "", None)
            .build(),
    ];
    let snap = snapshot(
        vec![
            node("n1").build(),
            node("n2")
                .taint("dedicated", "x", TaintEffect::PreferNoSchedule)
                .build(),
        ],
        pods,
    );
    assert_eq!(run(cpu_args(10.0, 60.0), &snap), vec!["p2"]);
}

#[test]
fn extended_resources_such_as_gpus() {
    let pods = vec![
        pod("ml", "train-1")
            .node("g1")
            .resource("nvidia.com/gpu", 4)
            .build(),
        pod("ml", "train-2")
            .node("g1")
            .resource("nvidia.com/gpu", 4)
            .build(),
        pod("ml", "infer")
            .node("g2")
            .resource("nvidia.com/gpu", 1)
            .build(),
    ];
    let snap = snapshot(
        vec![
            node("g1").resource("nvidia.com/gpu", 8).build(),
            node("g2").resource("nvidia.com/gpu", 8).build(),
        ],
        pods,
    );
    // Target 70% of 8 GPUs = 5: g2 (1 GPU) has room for one 4-GPU trainer.
    let args =
        json!({"thresholds": {"nvidia.com/gpu": 20}, "targetThresholds": {"nvidia.com/gpu": 70}});
    assert_eq!(run(args, &snap), vec!["train-1"]);
    // Target 60% = 4: room for 3 GPUs only; moving a trainer would put g2 over its target.
    let args =
        json!({"thresholds": {"nvidia.com/gpu": 20}, "targetThresholds": {"nvidia.com/gpu": 60}});
    assert!(run(args, &snap).is_empty());
}

#[test]
fn deviation_thresholds() {
    // cpu use: 90%, 50%, 10% (mean 50%). +-20 => low < 30%, high > 70%.
    let pods = vec![
        pod("a", "h1").node("n1").cpu(1800).build(),
        pod("a", "h2").node("n1").cpu(1800).build(),
        pod("a", "m").node("n2").cpu(2000).build(),
        pod("a", "c").node("n3").cpu(400).build(),
    ];
    let snap = snapshot(nodes3(), pods);
    let args = json!({"useDeviationThresholds": true, "thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 20}});
    assert_eq!(run(args, &snap), vec!["h1"]);
}

#[test]
fn limits_namespaces_and_budgets() {
    let snap = snapshot(nodes3(), hot_cold());
    let out = run(
        json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "evictionLimits": {"node": 1}}),
        &snap,
    );
    assert_eq!(out.len(), 1);
    let out = run_with(
        cpu_args(20.0, 50.0),
        &snap,
        Limits {
            total: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(out.len(), 2);
    let out = run(
        json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "evictableNamespaces": {"exclude": ["web"]}}),
        &snap,
    );
    assert!(out.is_empty());
    let mut pods = hot_cold();
    for p in pods.iter_mut().take(8) {
        p.labels = crate::labels::Labels::new(vec![("app".into(), "web".into())]);
    }
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: nodes3(),
        pods,
        pdbs: vec![pdb("web", "web", "app", "web", 1)],
        ..Default::default()
    });
    assert_eq!(run(cpu_args(20.0, 50.0), &snap).len(), 1);
}

#[test]
fn args_validation_names_fields() {
    for (args, path) in [
        (
            json!({"thresholds": {}, "targetThresholds": {"cpu": 50}}),
            "thresholds",
        ),
        (json!({"targetThresholds": {"cpu": 50}}), "thresholds"),
        (
            json!({"thresholds": {"cpu": 120}, "targetThresholds": {"cpu": 150}}),
            "thresholds.cpu",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": -1}}),
            "targetThresholds.cpu",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"memory": 50}}),
            "targetThresholds",
        ),
        (
            json!({"thresholds": {"cpu": 60}, "targetThresholds": {"cpu": 50}}),
            "thresholds.cpu",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "evictableNamespaces": {"include": ["a"]}}),
            "evictableNamespaces.include",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "numberOfNodes": -1}),
            "numberOfNodes",
        ),
        (
            json!({"thresholds": {"cpu": "high"}, "targetThresholds": {"cpu": 50}}),
            "thresholds.cpu",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "Graphite"}}),
            "metricsUtilization.source",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "Prometheus"}}),
            "metricsUtilization.prometheus.query",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "q"}}}),
            "thresholds",
        ),
        (
            json!({"thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 50}}),
            "thresholds.MetricResource",
        ),
        (
            json!({"thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 50}, "metricsUtilization": {"source": "KubernetesMetrics"}}),
            "thresholds.MetricResource",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "Prometheus", "prometheus": {"queries": {"gpu": "q"}}}}),
            "metricsUtilization.prometheus.queries.gpu",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "Prometheus", "prometheus": {"queries": {"memory": "q"}}}}),
            "metricsUtilization.prometheus.queries.memory",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "Prometheus", "prometheus": {"queries": {"cpu": "q"}, "podQueries": {"memory": "p"}}}}),
            "metricsUtilization.prometheus.podQueries.memory",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "Prometheus", "metricsServer": true, "prometheus": {"query": "q"}}}),
            "metricsUtilization.metricsServer",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "KubernetesMetrics", "hysteresisCycles": 0}}),
            "metricsUtilization.hysteresisCycles",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"hysteresisCycles": 2}}),
            "metricsUtilization.hysteresisCycles",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "metricsUtilization": {"source": "KubernetesMetrics", "prometheus": {"query": "q"}}}),
            "metricsUtilization.prometheus",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "nodes": 1}),
            "nodes",
        ),
    ] {
        let e = LowNodeUtilization::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e}");
    }
    // deviation thresholds may have a low value above the target
    assert!(LowNodeUtilization::from_json(&json!({"useDeviationThresholds": true, "thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 10}})).is_ok());
}

#[test]
fn later_plugins_see_earlier_evictions() {
    // Two LowNodeUtilization instances in two profiles: the second sees n1 already relieved.
    let pipeline = crate::plugins::testing::pipeline(
        r#"
profiles:
- name: one
  pluginConfig:
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}
  plugins: {balance: {enabled: [LowNodeUtilization]}}
- name: two
  pluginConfig:
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}
  plugins: {balance: {enabled: [LowNodeUtilization]}}
"#,
    );
    let snap = snapshot(nodes3(), hot_cold());
    let plan = plan::plan(&pipeline, &snap, 0).unwrap();
    assert_eq!(plan.evictions.len(), 3);
    assert!(plan.evictions.iter().all(|e| e.profile == "one"));
    let ids: Vec<PodId> = plan.evictions.iter().map(|e| e.pod).collect();
    let mut dedup = ids.clone();
    dedup.dedup();
    assert_eq!(ids, dedup);
    assert_eq!(plan.requested_after.evicted[0].cpu, 2000);
}

// ---- real usage ----

use crate::framework::History;
use crate::plan::CycleMemory;
use crate::snapshot::usage::{NamedSamples, ResourceSample, Sample};

const NOW: i64 = 1_800_000_000;

fn sample(cpu: i64, memory: i64) -> ResourceSample {
    ResourceSample {
        cpu,
        memory,
        timestamp: NOW - 30,
    }
}

/// Requests say every node is equal (400m each); usage says n1 is hot.
fn measured_cluster() -> ClusterSnapshot {
    let mut pods = Vec::new();
    for n in ["n1", "n2", "n3"] {
        for i in 0..4 {
            pods.push(pod("web", &format!("{n}-{i}")).node(n).cpu(100).build());
        }
    }
    snapshot(nodes3(), pods)
}

fn metrics_server_answer(pods_known: bool) -> NamedSamples<ResourceSample> {
    let mut pods = Vec::new();
    if pods_known {
        for n in ["n1", "n2", "n3"] {
            for i in 0..4 {
                let cpu = if n == "n1" { 800 } else { 50 };
                pods.push((
                    ("web".to_string(), format!("{n}-{i}")),
                    sample(cpu, GIB / 8),
                ));
            }
        }
    }
    NamedSamples {
        nodes: vec![
            ("n1".into(), sample(3400, 2 * GIB)),
            ("n2".into(), sample(300, GIB)),
            ("n3".into(), sample(200, GIB)),
        ],
        pods,
    }
}

fn ms_args() -> serde_json::Value {
    json!({"thresholds": {"cpu": 20, "memory": 100}, "targetThresholds": {"cpu": 50, "memory": 100},
           "metricsUtilization": {"source": "KubernetesMetrics"}})
}

fn plan_measured(
    args: serde_json::Value,
    snap: &ClusterSnapshot,
    history: History,
) -> crate::plan::EvictionPlan {
    let policy = format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nmetricsProviders:\n- source: KubernetesMetrics\n- source: Prometheus\n  prometheus: {{url: 'http://prometheus:9090'}}\nprofiles:\n- name: p\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n  pluginConfig:\n  - name: LowNodeUtilization\n    args: {args}\n"
    );
    let policy =
        crate::policy::Policy::from_yaml("p.yaml", &policy, &crate::plugins::REGISTRY).unwrap();
    let pipeline = Pipeline::build(&policy, "p.yaml", &crate::plugins::REGISTRY).unwrap();
    let memory = CycleMemory {
        history,
        ..CycleMemory::default()
    };
    plan::plan_with(&pipeline, snap, NOW, &memory, &mut ()).unwrap()
}

fn names(snap: &ClusterSnapshot, p: &crate::plan::EvictionPlan) -> Vec<String> {
    p.evictions
        .iter()
        .map(|e| snap.pod(e.pod).name.to_string())
        .collect()
}

#[test]
fn metrics_server_usage_moves_several_pods_by_their_measured_usage() {
    // By requests nothing is hot (10% everywhere).
    let mut snap = measured_cluster();
    assert!(run(cpu_args(20.0, 50.0), &snap).is_empty());
    snap.attach_metrics_server(Ok(metrics_server_answer(true)));
    let p = plan_measured(ms_args(), &snap, History::default());
    // n1 measures 3400m of 4000m (85%) > 50%; each pod measures 800m: two pods bring it
    // to 1800m (45%).
    assert_eq!(names(&snap, &p), vec!["n1-0", "n1-1"], "{:?}", p.notes);
    let m =
        crate::framework::MeasuredUsage::of(&p.findings, crate::snapshot::NodeId::new(0)).unwrap();
    assert_eq!(m.source, crate::snapshot::usage::UsageSource::MetricsServer);
    assert_eq!((m.before.cpu, m.after.cpu), (3400, 1800));
    assert!(
        p.evictions[0].reason.contains("cpu 85% > target 50%"),
        "{}",
        p.evictions[0].reason
    );
}

#[test]
fn unknown_pod_usage_moves_one_pod_per_node() {
    let mut snap = measured_cluster();
    snap.attach_metrics_server(Ok(metrics_server_answer(false)));
    let p = plan_measured(ms_args(), &snap, History::default());
    assert_eq!(names(&snap, &p), vec!["n1-0"]);
    assert!(
        p.notes
            .iter()
            .any(|n| n.message.contains("no measured cpu usage for pod web/n1-0")),
        "{:?}",
        p.notes
    );
}

#[test]
fn a_failed_or_missing_source_skips_the_plugin_and_says_why() {
    let mut snap = measured_cluster();
    let p = plan_measured(ms_args(), &snap, History::default());
    assert!(p.evictions.is_empty());
    assert!(
        p.notes[0].skipped() && p.notes[0].message.contains("no metrics-server data"),
        "{:?}",
        p.notes
    );
    snap.attach_metrics_server(Err("503 Service Unavailable".into()));
    let p = plan_measured(ms_args(), &snap, History::default());
    assert!(p.evictions.is_empty());
    assert!(
        p.notes[0].skipped() && p.notes[0].message.contains("503"),
        "{:?}",
        p.notes
    );
}

#[test]
fn stale_or_missing_node_samples_leave_the_node_out() {
    let mut snap = measured_cluster();
    let mut answer = metrics_server_answer(true);
    answer.nodes[0].1.timestamp = NOW - 301; // n1: stale
    snap.attach_metrics_server(Ok(answer));
    let p = plan_measured(ms_args(), &snap, History::default());
    assert!(p.evictions.is_empty(), "a stale hot node is not acted on");
    assert!(
        p.notes
            .iter()
            .any(|n| n.node == Some(NodeId::new(0)) && n.message.contains("301s old")),
        "{:?}",
        p.notes
    );
    let mut answer = metrics_server_answer(true);
    answer.nodes.remove(0);
    snap.attach_metrics_server(Ok(answer));
    let p = plan_measured(ms_args(), &snap, History::default());
    assert!(p.evictions.is_empty());
    assert!(p
        .notes
        .iter()
        .any(|n| n.node == Some(NodeId::new(0)) && n.message.contains("no metrics-server sample")));
    // A longer maxSampleAge accepts the old sample.
    let mut answer = metrics_server_answer(true);
    answer.nodes[0].1.timestamp = NOW - 301;
    snap.attach_metrics_server(Ok(answer));
    snap.set_max_sample_age(crate::snapshot::usage::UsageSource::MetricsServer, 600);
    assert_eq!(
        plan_measured(ms_args(), &snap, History::default())
            .evictions
            .len(),
        2
    );
}

#[test]
fn hysteresis_waits_for_consecutive_cycles() {
    let mut snap = measured_cluster();
    snap.attach_metrics_server(Ok(metrics_server_answer(true)));
    let args = json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50},
                      "metricsUtilization": {"source": "KubernetesMetrics", "hysteresisCycles": 3}});
    let mut history = History::default();
    for cycle in 1..=3 {
        let p = plan_measured(args.clone(), &snap, history.clone());
        if cycle < 3 {
            assert!(p.evictions.is_empty(), "cycle {cycle}");
            assert!(
                p.notes
                    .iter()
                    .any(|n| n.message.contains(&format!("for {cycle} of the 3"))),
                "{:?}",
                p.notes
            );
        } else {
            assert_eq!(p.evictions.len(), 2, "cycle {cycle}");
        }
        history = history.advance(crate::framework::Overutilized::of(&p.findings));
    }
    // A cycle where the node is not over resets the count.
    let over = std::collections::BTreeMap::from([("p/LowNodeUtilization".to_string(), vec![])]);
    assert_eq!(
        history.advance(&over).streak("p/LowNodeUtilization", "n1"),
        0
    );
    // A skipped cycle (no observation) forgets the streak too.
    assert_eq!(
        history
            .advance(&Default::default())
            .streak("p/LowNodeUtilization", "n1"),
        0
    );
}

fn prom_answer(values: &[(&str, f64)], ts: i64) -> NamedSamples<Sample> {
    NamedSamples {
        nodes: values
            .iter()
            .map(|(n, v)| {
                (
                    n.to_string(),
                    Sample {
                        value: *v,
                        timestamp: ts,
                    },
                )
            })
            .collect(),
        pods: vec![],
    }
}

#[test]
fn prometheus_metric_resource_as_upstream() {
    let mut snap = measured_cluster();
    snap.attach_query(
        "node_util",
        Ok(prom_answer(&[("n1", 0.9), ("n2", 0.1), ("n3", 0.15)], NOW)),
    );
    let args = json!({"thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 70},
                      "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "node_util"}}});
    let p = plan_measured(args.clone(), &snap, History::default());
    // No pod usage: one pod per hot node, as upstream.
    assert_eq!(names(&snap, &p), vec!["n1-0"]);
    assert!(
        p.evictions[0]
            .reason
            .contains("MetricResource 90% > target 70%"),
        "{}",
        p.evictions[0].reason
    );
    // Garbage: a ratio above 1 skips the plugin.
    snap.attach_query(
        "node_util",
        Ok(prom_answer(&[("n1", 90.0), ("n2", 0.1), ("n3", 0.15)], NOW)),
    );
    let p = plan_measured(args.clone(), &snap, History::default());
    assert!(p.evictions.is_empty());
    assert!(
        p.notes[0].skipped() && p.notes[0].message.contains("between 0 and 1"),
        "{:?}",
        p.notes
    );
    snap.attach_query("node_util", Err("connection refused".into()));
    let p = plan_measured(args, &snap, History::default());
    assert!(p.evictions.is_empty() && p.notes[0].message.contains("connection refused"));
}

#[test]
fn prometheus_per_resource_and_pod_queries() {
    let mut snap = measured_cluster();
    snap.attach_query(
        "cpu_ratio",
        Ok(prom_answer(
            &[("n1", 0.85), ("n2", 0.05), ("n3", 0.05)],
            NOW,
        )),
    );
    let pods: Vec<((String, String), Sample)> = (0..4)
        .map(|i| {
            (
                ("web".to_string(), format!("n1-{i}")),
                Sample {
                    value: 0.8,
                    timestamp: NOW,
                },
            )
        })
        .collect();
    snap.attach_query(
        "pod_cpu",
        Ok(NamedSamples {
            nodes: vec![],
            pods,
        }),
    );
    let args = json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50},
                      "metricsUtilization": {"source": "Prometheus", "prometheus": {
                          "queries": {"cpu": "cpu_ratio"}, "podQueries": {"cpu": "pod_cpu"}}}});
    let p = plan_measured(args, &snap, History::default());
    // 3400m measured, 800m per pod: two pods.
    assert_eq!(names(&snap, &p), vec!["n1-0", "n1-1"], "{:?}", p.notes);
    assert_eq!(
        crate::framework::MeasuredUsage::of(&p.findings, crate::snapshot::NodeId::new(0))
            .unwrap()
            .after
            .cpu,
        1800
    );
}
