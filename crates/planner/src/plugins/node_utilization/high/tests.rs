use super::*;
use crate::framework::Limits;
use crate::plan;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pdb, pod, snapshot, NodeBuilder, PodBuilder};
use crate::snapshot::{ClusterSnapshot, SnapshotParts, TaintEffect};
use serde_json::json;

const EXT: &str = "example.com/foo";

/// Runs the plugin alone over every Ready node and returns the evicted pods' names.
fn run_full(
    args: serde_json::Value,
    snap: &ClusterSnapshot,
    evictor: &DefaultEvictor,
    limits: Limits,
) -> Vec<String> {
    let plugin = HighNodeUtilization::from_json(&args).expect("valid args");
    crate::framework::testing::run_alone_names(&plugin, snap, evictor, limits, 0)
}

/// With `nodeFit: true`, as upstream's table test.
fn run_fit(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
    let ev = DefaultEvictor::from_json(&json!({"nodeFit": true})).unwrap();
    run_full(args, snap, &ev, Limits::default())
}

fn run(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
    run_full(args, snap, &DefaultEvictor::default(), Limits::default())
}

/// Upstream's `test.BuildTestNode(name, milliCPU, memory, pods)`.
fn tnode(name: &str, cpu: i64, memory: i64, pods: i64) -> NodeBuilder {
    node(name).cpu(cpu).memory(memory).pods(pods)
}

/// Upstream's `test.BuildTestPod(name, milliCPU, 0, node)` with a ReplicaSet owner.
fn tpod(name: &str, cpu: i64, node: &str) -> PodBuilder {
    pod("default", name).node(node).cpu(cpu)
}

fn cpu_pods(v: f64) -> serde_json::Value {
    json!({"thresholds": {"cpu": v, "pods": v}})
}

#[test]
fn no_node_below_threshold_usage() {
    let mut pods = Vec::new();
    for (i, n) in ["n1", "n2", "n3"].iter().enumerate() {
        for j in 0..3 {
            pods.push(tpod(&format!("p{}", i * 3 + j + 1), 400, n).build());
        }
    }
    let nodes = ["n1", "n2", "n3"]
        .map(|n| tnode(n, 4000, 3000, 10).build())
        .to_vec();
    assert!(run_fit(cpu_pods(20.0), &snapshot(nodes, pods)).is_empty());
}

#[test]
fn no_evictable_pods() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 9).build(),
        tnode("n2", 4000, 3000, 10).build(),
        tnode("n3", 4000, 3000, 10).build(),
    ];
    let pods = vec![
        tpod("p1", 400, "n1").local_storage().mirror().build(),
        pod("kube-system", "p2")
            .node("n1")
            .cpu(400)
            .priority(2_000_000_000)
            .build(),
        tpod("p3", 400, "n2").owner("DaemonSet", "ds").build(),
        tpod("p4", 400, "n2").owner("DaemonSet", "ds").build(),
        tpod("p5", 400, "n3").build(),
        tpod("p6", 400, "n3").build(),
        tpod("p7", 400, "n3").build(),
        tpod("p8", 400, "n3").build(),
    ];
    assert!(run_fit(cpu_pods(40.0), &snapshot(nodes, pods)).is_empty());
}

#[test]
fn no_node_to_schedule_evicted_pods() {
    // n1 and n2 are underutilized; n3 is not but is cordoned, so no destination is left.
    let nodes = vec![
        tnode("n1", 4000, 3000, 10).build(),
        tnode("n2", 4000, 3000, 10).build(),
        tnode("n3", 4000, 3000, 10).unschedulable().build(),
    ];
    let pods = vec![
        tpod("p1", 400, "n1").build(),
        tpod("p2", 400, "n2").build(),
        tpod("p3", 400, "n3").build(),
        tpod("p4", 400, "n3").build(),
        tpod("p5", 400, "n3").build(),
    ];
    assert!(run_fit(cpu_pods(20.0), &snapshot(nodes, pods)).is_empty());
}

#[test]
fn without_priorities_least_used_source_first_and_cordoned_sources() {
    // n3 is cordoned and underutilized: it is emptied too, and first (least used).
    let nodes = vec![
        tnode("n1", 4000, 3000, 10).build(),
        tnode("n2", 4000, 3000, 10).build(),
        tnode("n3", 4000, 3000, 10).unschedulable().build(),
    ];
    let pods = vec![
        tpod("p1", 400, "n1").build(),
        pod("kube-system", "p2")
            .node("n1")
            .cpu(400)
            .priority(2_000_000_000)
            .build(),
        tpod("p3", 400, "n2").build(),
        tpod("p4", 400, "n2").build(),
        tpod("p5", 400, "n2").build(),
        tpod("p6", 400, "n2").build(),
        tpod("p7", 400, "n3").build(),
    ];
    assert_eq!(
        run_fit(cpu_pods(30.0), &snapshot(nodes, pods)),
        vec!["p7", "p1"]
    );
}

#[test]
fn stops_when_resource_capacity_is_depleted() {
    // n2 has 400m free: one pod of 400m uses it up.
    let nodes = vec![
        tnode("n1", 2000, 3000, 10).build(),
        tnode("n2", 2000, 3000, 10).build(),
        tnode("n3", 2000, 3000, 10).unschedulable().build(),
    ];
    let pods = vec![
        tpod("p1", 400, "n1").build(),
        tpod("p2", 400, "n2").build(),
        tpod("p3", 400, "n2").build(),
        tpod("p4", 400, "n2").build(),
        tpod("p5", 400, "n2").build(),
        tpod("p6", 400, "n3").build(),
    ];
    assert_eq!(run_fit(cpu_pods(30.0), &snapshot(nodes, pods)), vec!["p1"]);
}

#[test]
fn with_priorities_lowest_goes_first() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 10).build(),
        tnode("n2", 2000, 3000, 10).build(),
        tnode("n3", 2000, 3000, 10).unschedulable().build(),
    ];
    let pods = vec![
        tpod("p1", 400, "n1").priority(0).build(),
        tpod("p2", 400, "n1").priority(10000).build(),
        tpod("p5", 400, "n2").build(),
        tpod("p6", 400, "n2").build(),
        tpod("p7", 400, "n2").build(),
        tpod("p8", 400, "n2").build(),
        tpod("p9", 400, "n3").owner("DaemonSet", "ds").build(),
    ];
    assert_eq!(
        run_fit(json!({"thresholds": {"cpu": 30}}), &snapshot(nodes, pods)),
        vec!["p1"]
    );
}

#[test]
fn best_effort_pods_go_first() {
    // n2 has room for one more pod only.
    let nodes = vec![
        tnode("n1", 3000, 3000, 10).build(),
        tnode("n2", 3000, 3000, 5).build(),
        tnode("n3", 3000, 3000, 10).unschedulable().build(),
    ];
    let pods = vec![
        pod("default", "p1").node("n1").build(),
        tpod("p2", 400, "n1").build(),
        tpod("p3", 400, "n2").build(),
        tpod("p4", 400, "n2").build(),
        tpod("p5", 400, "n2").build(),
        tpod("p6", 400, "n2").build(),
    ];
    assert_eq!(
        run_fit(json!({"thresholds": {"cpu": 30}}), &snapshot(nodes, pods)),
        vec!["p1"]
    );
}

fn ext_node(name: &str, n: i64) -> NodeBuilder {
    tnode(name, 4000, 3000, 10).resource(EXT, n)
}

#[test]
fn extended_resources() {
    let nodes = vec![
        ext_node("n1", 8).build(),
        ext_node("n2", 8).build(),
        tnode("n3", 4000, 3000, 10).unschedulable().build(),
    ];
    let pods = vec![
        tpod("p1", 100, "n1").resource(EXT, 1).build(),
        tpod("p2", 100, "n1").resource(EXT, 1).build(),
        tpod("p3", 500, "n2").resource(EXT, 1).build(),
        tpod("p4", 500, "n2").resource(EXT, 1).build(),
        tpod("p5", 500, "n2").resource(EXT, 1).build(),
        tpod("p6", 500, "n2").resource(EXT, 1).build(),
    ];
    let args = json!({"thresholds": {"cpu": 20, EXT: 40}});
    assert_eq!(run_fit(args, &snapshot(nodes, pods)), vec!["p1", "p2"]);
}

#[test]
fn extended_resource_missing_on_destinations_means_no_room() {
    let nodes = vec![
        ext_node("n1", 8).build(),
        tnode("n2", 4000, 3000, 10).build(),
        tnode("n3", 4000, 3000, 10).unschedulable().build(),
    ];
    let pods = vec![
        tpod("p1", 100, "n1").resource(EXT, 1).build(),
        tpod("p2", 100, "n1").resource(EXT, 1).build(),
        tpod("p3", 500, "n2").build(),
        tpod("p4", 500, "n2").build(),
        tpod("p5", 500, "n2").build(),
        tpod("p6", 500, "n2").build(),
    ];
    let args = json!({"thresholds": {"cpu": 40, EXT: 40}});
    assert!(run_fit(args, &snapshot(nodes, pods)).is_empty());
}

fn selector_case(n1_west: bool) -> ClusterSnapshot {
    let mut n1 = tnode("n1", 4000, 3000, 9);
    if n1_west {
        n1 = n1.label("datacenter", "west");
    }
    let nodes = vec![n1.build(), tnode("n2", 4000, 3000, 10).build()];
    let pods = vec![
        tpod("p1", 400, "n1").build(),
        tpod("p2", 400, "n1").build(),
        tpod("p3", 400, "n1").build(),
        tpod("p4", 400, "n1").owner("DaemonSet", "ds").build(),
        tpod("p5", 400, "n2")
            .node_selector("datacenter", "west")
            .build(),
    ];
    snapshot(nodes, pods)
}

#[test]
fn node_fit_decides_with_node_selectors() {
    assert_eq!(run_fit(cpu_pods(30.0), &selector_case(true)), vec!["p5"]);
    assert!(run_fit(cpu_pods(30.0), &selector_case(false)).is_empty());
    // without nodeFit the selector is not checked
    assert_eq!(run(cpu_pods(30.0), &selector_case(false)), vec!["p5"]);
}

#[test]
fn other_node_without_enough_memory() {
    let nodes = vec![
        tnode("n1", 4000, 200, 9).build(),
        tnode("n2", 4000, 3000, 10).build(),
    ];
    let pods = vec![
        tpod("p1", 400, "n1").memory(50).build(),
        tpod("p2", 400, "n1").memory(50).build(),
        tpod("p3", 400, "n1").memory(50).build(),
        tpod("p4", 400, "n1")
            .memory(50)
            .owner("DaemonSet", "ds")
            .build(),
        tpod("p5", 400, "n2").memory(100).build(),
    ];
    assert!(run_fit(cpu_pods(30.0), &snapshot(nodes, pods)).is_empty());
}

fn thresholding_case() -> ClusterSnapshot {
    let nodes = vec![
        ext_node("n1", 10).build(),
        ext_node("n2", 10).build(),
        ext_node("n3", 10).build(),
    ];
    let pods = vec![
        tpod("p1", 100, "n1").resource(EXT, 3).build(),
        tpod("p2", 100, "n1").resource(EXT, 3).build(),
        tpod("p3", 500, "n2").build(),
        tpod("p4", 500, "n2").build(),
        tpod("p5", 500, "n2").build(),
        tpod("p6", 500, "n2").build(),
    ];
    snapshot(nodes, pods)
}

#[test]
fn only_thresholding_resources_mode() {
    let snap = thresholding_case();
    // Upstream's case: n1 is at 60% of the extended resource, n2 and n3 at 0%.
    // n2's pods request no extended resource, so in this mode none moves.
    let args = json!({"thresholds": {EXT: 40}, "evictionModes": ["OnlyThresholdingResources"]});
    assert!(run_fit(args, &snap).is_empty());
    // Without the mode they all move to n1.
    assert_eq!(
        run_fit(json!({"thresholds": {EXT: 40}}), &snap),
        vec!["p3", "p4", "p5", "p6"]
    );
    // A pod requesting the resource moves; the one that does not stays.
    let nodes = vec![ext_node("n1", 10).build(), ext_node("n2", 10).build()];
    let pods = vec![
        tpod("big", 100, "n1").resource(EXT, 6).build(),
        tpod("gpu", 100, "n2").resource(EXT, 1).build(),
        tpod("plain", 100, "n2").build(),
    ];
    let args = json!({"thresholds": {EXT: 40}, "evictionModes": ["OnlyThresholdingResources"]});
    assert_eq!(run_fit(args, &snapshot(nodes, pods)), vec!["gpu"]);
}

#[test]
fn destinations_taints_must_be_tolerated() {
    let n = |name: &str| tnode(name, 1000, 3000, 10);
    let tainted = || {
        n("n3")
            .taint("key", "value", TaintEffect::NoSchedule)
            .build()
    };
    let one_per_node = Limits {
        per_node: Some(1),
        ..Default::default()
    };
    let ev = DefaultEvictor::default();
    let args = json!({"thresholds": {"cpu": 40}});
    // No taints: n1 (60%) receives the pod of n2 (20%); n3 is empty.
    let snap = snapshot(
        vec![n("n1").build(), n("n2").build(), n("n3").build()],
        vec![
            tpod("pod_1_n1", 200, "n1").build(),
            tpod("pod_2_n1", 200, "n1").build(),
            tpod("pod_3_n1", 200, "n1").build(),
            tpod("pod_4_n2", 200, "n2").build(),
        ],
    );
    assert_eq!(
        run_full(args.clone(), &snap, &ev, one_per_node),
        vec!["pod_4_n2"]
    );
    // The only destination is tainted and no pod tolerates it.
    let snap = snapshot(
        vec![n("n1").build(), tainted()],
        vec![
            tpod("pod_1_n1", 200, "n1").build(),
            tpod("pod_9_n3", 500, "n3").build(),
        ],
    );
    assert!(run_full(args.clone(), &snap, &ev, one_per_node).is_empty());
    // A pod that tolerates it moves.
    let snap = snapshot(
        vec![n("n1").build(), tainted()],
        vec![
            tpod("pod_1_n1", 100, "n1").build(),
            tpod("tolerate_pod", 200, "n1")
                .toleration("key", "value", None)
                .build(),
            tpod("pod_9_n3", 500, "n3").build(),
        ],
    );
    assert_eq!(
        run_full(args.clone(), &snap, &ev, one_per_node),
        vec!["tolerate_pod"]
    );
    // PreferNoSchedule taints of destinations count too (upstream's PodToleratesTaints).
    let snap = snapshot(
        vec![
            n("n1").build(),
            n("n3")
                .taint("soft", "", TaintEffect::PreferNoSchedule)
                .build(),
        ],
        vec![
            tpod("plain", 100, "n1").build(),
            tpod("tolerant", 100, "n1")
                .toleration("soft", "", Some(TaintEffect::PreferNoSchedule))
                .build(),
            tpod("busy", 500, "n3").build(),
        ],
    );
    assert_eq!(run(args, &snap), vec!["tolerant"]);
}

/// n1 busy (50%); n2 (10%) and n3 (20%) underutilized.
fn two_sources() -> ClusterSnapshot {
    snapshot(
        vec![node("n1").build(), node("n2").build(), node("n3").build()],
        vec![
            tpod("busy-1", 1000, "n1").build(),
            tpod("busy-2", 1000, "n1").build(),
            pod("web", "a").node("n2").cpu(400).build(),
            pod("web", "b").node("n3").cpu(400).build(),
            pod("batch", "c").node("n3").cpu(400).build(),
        ],
    )
}

#[test]
fn number_of_nodes_and_all_underutilized() {
    let snap = two_sources();
    let t = |extra: serde_json::Value| {
        let mut a = json!({"thresholds": {"cpu": 25}});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    assert!(run(t(json!({"numberOfNodes": 2})), &snap).is_empty());
    assert_eq!(
        run(t(json!({"numberOfNodes": 1})), &snap),
        vec!["a", "c", "b"]
    );
    // every node at or below 60%: nothing to do
    assert!(run(json!({"thresholds": {"cpu": 60}}), &snap).is_empty());
    // no node at or below 5%
    assert!(run(json!({"thresholds": {"cpu": 5}}), &snap).is_empty());
}

#[test]
fn thresholds_are_inclusive_and_unnamed_resources_do_not_count() {
    // n2 at exactly 10% cpu but 90% memory: underutilized, memory is not named.
    let snap = snapshot(
        vec![node("n1").build(), node("n2").build()],
        vec![
            tpod("busy", 2000, "n1").build(),
            tpod("x", 400, "n2")
                .memory(16 * crate::snapshot::builders::GIB * 9 / 10)
                .build(),
        ],
    );
    assert_eq!(run(json!({"thresholds": {"cpu": 10}}), &snap), vec!["x"]);
    assert!(run(json!({"thresholds": {"cpu": 9.9}}), &snap).is_empty());
    assert!(run(json!({"thresholds": {"cpu": 10, "memory": 50}}), &snap).is_empty());
}

#[test]
fn evictable_namespaces_limits_and_budgets() {
    let snap = two_sources();
    let args = json!({"thresholds": {"cpu": 25}});
    let out = run(
        json!({"thresholds": {"cpu": 25}, "evictableNamespaces": {"exclude": ["web"]}}),
        &snap,
    );
    assert_eq!(out, vec!["c"]);
    let out = run_full(
        args.clone(),
        &snap,
        &DefaultEvictor::default(),
        Limits {
            total: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(out, vec!["a", "c"]);
    let out = run_full(
        args.clone(),
        &snap,
        &DefaultEvictor::default(),
        Limits {
            per_node: Some(1),
            ..Default::default()
        },
    );
    assert_eq!(out, vec!["a", "c"]);
    let out = run_full(
        args.clone(),
        &snap,
        &DefaultEvictor::default(),
        Limits {
            per_namespace: Some(1),
            ..Default::default()
        },
    );
    assert_eq!(out, vec!["a", "c"]);
    // a budget that allows no disruption keeps web/a and web/b
    let mut parts = SnapshotParts {
        nodes: snap.nodes.clone(),
        pods: snap.pods.to_vec(),
        pdbs: vec![pdb("web", "web", "app", "web", 0)],
        ..Default::default()
    };
    for p in parts.pods.iter_mut().filter(|p| &*p.namespace == "web") {
        p.labels = crate::labels::Labels::new(vec![("app".into(), "web".into())]);
    }
    let guarded = ClusterSnapshot::build(parts);
    assert_eq!(run(args, &guarded), vec!["c"]);
}

#[test]
fn protected_pods_stay() {
    let snap = snapshot(
        vec![node("n1").build(), node("n2").build()],
        vec![
            tpod("busy", 2000, "n1").build(),
            tpod("ds", 100, "n2").owner("DaemonSet", "d").build(),
            tpod("bare", 100, "n2").bare().build(),
            tpod("mirror", 100, "n2").mirror().build(),
            tpod("local", 100, "n2").local_storage().build(),
            tpod("critical", 100, "n2").priority(2_000_000_000).build(),
            tpod("ok", 100, "n2").build(),
        ],
    );
    assert_eq!(run(json!({"thresholds": {"cpu": 20}}), &snap), vec!["ok"]);
}

#[test]
fn reasons_say_why() {
    let snap = snapshot(
        vec![node("n1").build(), node("n2").build()],
        vec![
            tpod("busy", 2000, "n1").build(),
            tpod("x", 480, "n2").build(),
        ],
    );
    let plugin =
        HighNodeUtilization::from_json(&json!({"thresholds": {"cpu": 20, "pods": 50}})).unwrap();
    let plan = crate::framework::testing::run_alone(
        &plugin,
        &snap,
        &DefaultEvictor::default(),
        Limits::default(),
        0,
    );
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].plugin, NAME);
    assert_eq!(
        plan[0].reason,
        "node n2 is underutilized (cpu 12% <= 20%, pods 0.9% <= 50%); packing its pods onto other nodes"
    );
}

#[test]
fn args_validation_names_fields() {
    for (args, path) in [
        (json!({}), "thresholds"),
        (json!({"thresholds": {}}), "thresholds"),
        (json!({"thresholds": null}), "thresholds"),
        (json!({"thresholds": {"cpu": 120}}), "thresholds.cpu"),
        (json!({"thresholds": {"memory": -1}}), "thresholds.memory"),
        (json!({"thresholds": {"cpu": "high"}}), "thresholds.cpu"),
        (
            json!({"thresholds": {"cpu": 20}, "evictableNamespaces": {"include": ["a"]}}),
            "evictableNamespaces.include",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "evictionModes": ["OnlyThresholdingResources", "Greedy"]}),
            "evictionModes[1]",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "numberOfNodes": -1}),
            "numberOfNodes",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "metricsUtilization": {"metricsServer": true}}),
            "metricsUtilization",
        ),
        (
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}),
            "targetThresholds",
        ),
    ] {
        let e = HighNodeUtilization::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e:?}");
    }
    let ok = HighNodeUtilization::from_json(&json!({
        "apiVersion": "descheduler/v1alpha2",
        "kind": "HighNodeUtilizationArgs",
        "thresholds": {"cpu": 20, "memory": 20, EXT: 50},
        "numberOfNodes": 1,
        "evictionModes": ["OnlyThresholdingResources"],
        "evictableNamespaces": {"exclude": ["kube-system"]},
        "metricsUtilization": {},
    }))
    .unwrap();
    assert_eq!(ok.resources, vec!["cpu", EXT, "memory", "pods"]);
    assert!(ok.only_thresholding_resources);
}

#[test]
fn runs_from_a_policy() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
profiles:
- name: pack
  pluginConfig:
  - name: HighNodeUtilization
    args: {thresholds: {cpu: 25}}
  plugins: {balance: {enabled: [HighNodeUtilization]}}
"#,
    );
    let snap = two_sources();
    let plan = plan::plan(&pipeline, &snap, 0).unwrap();
    let names: Vec<&str> = plan
        .evictions
        .iter()
        .map(|e| &*snap.pod(e.pod).name)
        .collect();
    assert_eq!(names, vec!["a", "c", "b"]);
    assert!(plan.evictions.iter().all(|e| e.plugin == NAME));
}
