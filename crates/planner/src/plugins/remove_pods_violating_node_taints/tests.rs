use super::*;
use crate::framework::Limits;
use crate::plan;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pdb, pod, snapshot, NodeBuilder, PodBuilder};
use crate::snapshot::{ClusterSnapshot, Node, Phase, Pod, SnapshotParts};
use serde_json::json;
use TaintEffect::{NoExecute, NoSchedule, PreferNoSchedule};

fn run_full(
    args: serde_json::Value,
    snap: &ClusterSnapshot,
    evictor: &DefaultEvictor,
    limits: Limits,
) -> Vec<String> {
    let plugin = RemovePodsViolatingNodeTaints::from_json(&args).expect("valid args");
    crate::framework::testing::run_alone_names(&plugin, snap, evictor, limits, 0)
}

fn run(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
    run_full(args, snap, &DefaultEvictor::default(), Limits::default())
}

fn run_ev(evictor: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
    let ev = DefaultEvictor::from_json(&evictor).unwrap();
    run_full(json!({}), snap, &ev, Limits::default())
}

fn limited(limits: Limits, snap: &ClusterSnapshot) -> Vec<String> {
    run_full(json!({}), snap, &DefaultEvictor::default(), limits)
}

/// Upstream's test node: 2 CPUs, 3000 bytes, 10 pods.
fn tnode(name: &str) -> NodeBuilder {
    node(name).cpu(2000).memory(3000).pods(10)
}

/// `testTaint1=test1:NoSchedule`.
fn with_test_taint(n: NodeBuilder) -> NodeBuilder {
    n.taint("testTaint1", "test1", NoSchedule)
}

/// `testingTaint1=testing1:NoSchedule`.
fn with_testing_taint(n: NodeBuilder) -> NodeBuilder {
    n.taint("testingTaint1", "testing1", NoSchedule)
}

fn tpod(name: &str, node: &str) -> PodBuilder {
    pod("default", name).node(node).cpu(100)
}

/// Upstream's pods p1..p15.
fn p(name: &str) -> Pod {
    let tolerates_test = |b: PodBuilder| b.toleration("testTaint1", "test1", Some(NoSchedule));
    match name {
        "p1" | "p3" => tolerates_test(tpod(name, "n1")).build(),
        "p2" | "p5" | "p6" => tpod(name, "n1").build(),
        "p4" => tpod(name, "n1")
            .toleration("testTaintX1", "testX1", Some(NoSchedule))
            .build(),
        "p7" => pod("kube-system", "p7")
            .node("n2")
            .cpu(100)
            .priority(2_000_000_000)
            .build(),
        "p8" => tpod(name, "n2").owner("DaemonSet", "ds").build(),
        "p9" => tpod(name, "n2").local_storage().build(),
        "p10" => tpod(name, "n2").mirror().build(),
        "p11" => tpod(name, "n2").build(),
        "p12" => tpod(name, "n1").node_selector("datacenter", "west").build(),
        "p13" => tpod(name, "n5")
            .toleration("testTaint0", "test0", Some(PreferNoSchedule))
            .build(),
        "p14" => tolerates_test(tpod(name, "n7")).build(),
        "p15" => tolerates_test(tpod(name, "n7"))
            .toleration("testingTaint1", "testing1", Some(NoSchedule))
            .build(),
        _ => unreachable!(),
    }
}

fn pods(names: &[&str]) -> Vec<Pod> {
    names.iter().map(|n| p(n)).collect()
}

fn snap(nodes: Vec<Node>, names: &[&str]) -> ClusterSnapshot {
    snapshot(nodes, pods(names))
}

fn n1() -> Node {
    with_test_taint(tnode("n1")).build()
}

fn n2() -> Node {
    with_testing_taint(tnode("n2")).build()
}

#[test]
fn pods_not_tolerating_the_taint_are_evicted() {
    assert_eq!(
        run(json!({}), &snap(vec![n1()], &["p1", "p2", "p3"])),
        vec!["p2"]
    );
    // tolerations for another taint do not help
    assert_eq!(
        run(json!({}), &snap(vec![n1()], &["p1", "p3", "p4"])),
        vec!["p4"]
    );
    // no taint, nothing to do
    assert!(run(json!({}), &snap(vec![tnode("n1").build()], &["p2"])).is_empty());
}

#[test]
fn limits_per_node_namespace_and_total() {
    let s = snap(vec![n1()], &["p1", "p5", "p6"]);
    let l = |per_node, per_namespace, total| Limits {
        per_node,
        per_namespace,
        total,
    };
    assert_eq!(limited(l(Some(2), None, Some(1)), &s), vec!["p5"]);
    assert_eq!(limited(l(Some(1), None, None), &s), vec!["p5"]);
    assert_eq!(limited(l(None, Some(1), None), &s), vec!["p5"]);
    assert_eq!(limited(Limits::default(), &s), vec!["p5", "p6"]);
    // a node limit ends only that node
    let other = with_test_taint(tnode("n9")).build();
    let mut pods = pods(&["p5", "p6"]);
    pods.push(tpod("q", "n9").build());
    let s = snapshot(vec![n1(), other], pods);
    assert_eq!(limited(l(Some(1), None, None), &s), vec!["p5", "q"]);
    // the total limit ends the plugin
    assert_eq!(limited(l(None, None, Some(1)), &s), vec!["p5"]);
}

#[test]
fn protected_pods_stay() {
    let s = snap(vec![n2()], &["p7", "p8", "p9", "p10"]);
    assert!(run(json!({}), &s).is_empty());
    assert_eq!(
        run_ev(json!({"evictLocalStoragePods": true}), &s),
        vec!["p9"]
    );
    let s = snap(vec![n2()], &["p7", "p8", "p10", "p11"]);
    assert_eq!(run(json!({}), &s), vec!["p11"]);
    let s = snap(vec![n1(), n2()], &["p2", "p7", "p9", "p10"]);
    assert_eq!(
        run_ev(json!({"evictSystemCriticalPods": true}), &s),
        vec!["p2", "p7"]
    );
    // terminating, bare, and finished pods stay too
    let s = snapshot(
        vec![n1()],
        vec![
            tpod("term", "n1").terminating().build(),
            tpod("bare", "n1").bare().build(),
            tpod("done", "n1").phase(Phase::Succeeded).build(),
            tpod("failed", "n1").phase(Phase::Failed).build(),
        ],
    );
    assert!(run(json!({}), &s).is_empty());
}

#[test]
fn node_fit_keeps_pods_with_nowhere_to_go() {
    let fit = json!({"nodeFit": true});
    // the other node has a taint p2 does not tolerate either
    assert!(run_ev(fit.clone(), &snap(vec![n1(), n2()], &["p1", "p2", "p3"])).is_empty());
    // the other node does not match p12's node selector
    let east = tnode("n3").label("datacenter", "east").build();
    assert!(run_ev(fit.clone(), &snap(vec![n1(), east], &["p1", "p3", "p12"])).is_empty());
    // the other node is cordoned
    let cordoned = tnode("n4").unschedulable().build();
    assert!(run_ev(
        fit.clone(),
        &snap(vec![n1(), cordoned], &["p1", "p2", "p3"])
    )
    .is_empty());
    // the other node is too small
    let tiny = node("n6")
        .cpu(1)
        .memory(1)
        .pods(1)
        .taint("testTaint1", "test1", PreferNoSchedule)
        .build();
    let ev = json!({"nodeFit": true, "evictSystemCriticalPods": true});
    assert!(run_ev(ev, &snap(vec![n1(), tiny], &["p2", "p7", "p9", "p10"])).is_empty());
    // a free untainted node lets p2 go
    let free = tnode("n8").build();
    assert_eq!(
        run_ev(fit, &snap(vec![n1(), free], &["p1", "p2", "p3"])),
        vec!["p2"]
    );
}

#[test]
fn prefer_no_schedule_only_when_included() {
    let n5 = tnode("n5")
        .taint("testTaint1", "test1", PreferNoSchedule)
        .build();
    let s = snap(vec![n5], &["p13"]);
    assert!(run(json!({}), &s).is_empty());
    assert_eq!(
        run(json!({"includePreferNoSchedule": true}), &s),
        vec!["p13"]
    );
}

#[test]
fn no_execute_is_left_to_kubernetes() {
    let n = tnode("n1").taint("gone", "", NoExecute).build();
    let s = snapshot(vec![n], vec![tpod("x", "n1").build()]);
    assert!(run(json!({}), &s).is_empty());
    assert!(run(
        json!({"includePreferNoSchedule": true, "includedTaints": ["gone"]}),
        &s
    )
    .is_empty());
}

#[test]
fn excluded_taints_by_key_or_key_value() {
    let s = snap(vec![n1()], &["p2"]);
    assert!(run(
        json!({"excludedTaints": ["excludedTaint1", "testTaint1"]}),
        &s
    )
    .is_empty());
    assert!(run(json!({"excludedTaints": ["testTaint1=test1"]}), &s).is_empty());
    assert_eq!(
        run(json!({"excludedTaints": ["testTaint1=test2"]}), &s),
        vec!["p2"]
    );
    // key=value never matches a taint without a value; the key alone does
    let bare = tnode("n1").taint("maintenance", "", NoSchedule).build();
    let s = snapshot(vec![bare], vec![tpod("x", "n1").build()]);
    assert!(run(json!({"excludedTaints": ["maintenance"]}), &s).is_empty());
}

#[test]
fn included_taints_restrict_what_counts() {
    let both = with_testing_taint(with_test_taint(tnode("n7"))).build();
    let p1 = tpod("p1", "n7")
        .toleration("testTaint1", "test1", Some(NoSchedule))
        .build();
    let s = snapshot(vec![both.clone()], vec![p1]);
    // p1 tolerates the included taint; the other one is not looked at
    assert!(run(json!({"includedTaints": ["testTaint1=test1"]}), &s).is_empty());
    assert_eq!(run(json!({}), &s), vec!["p1"]);
    // a taint that is not included does not count
    let s = snap(vec![n1()], &["p1", "p2", "p4"]);
    assert!(run(json!({"includedTaints": ["testTaint2=test2"]}), &s).is_empty());
    let s = snap(vec![n1()], &["p1", "p2", "p3"]);
    assert_eq!(
        run(json!({"includedTaints": ["testTaint1=test1"]}), &s),
        vec!["p2"]
    );
    assert_eq!(
        run(json!({"includedTaints": ["testTaint1"]}), &s),
        vec!["p2"]
    );
    // without includedTaints every taint counts: p14 tolerates only one of the two
    let s = snap(vec![both.clone()], &["p14", "p15"]);
    assert_eq!(run(json!({}), &s), vec!["p14"]);
    assert_eq!(run(json!({"includedTaints": null}), &s), vec!["p14"]);
    // an explicit empty list includes nothing, as upstream
    assert!(run(json!({"includedTaints": []}), &s).is_empty());
    // an empty includedTaints may go with excludedTaints
    assert!(RemovePodsViolatingNodeTaints::from_json(
        &json!({"includedTaints": [], "excludedTaints": ["a"]})
    )
    .is_ok());
}

#[test]
fn namespaces_and_label_selector() {
    let s = snapshot(
        vec![n1()],
        vec![
            pod("a", "x").node("n1").label("tier", "web").build(),
            pod("b", "y").node("n1").label("tier", "db").build(),
            pod("c", "z").node("n1").build(),
        ],
    );
    assert_eq!(
        run(json!({"namespaces": {"include": ["a", "c"]}}), &s),
        vec!["x", "z"]
    );
    assert_eq!(
        run(json!({"namespaces": {"exclude": ["a"]}}), &s),
        vec!["y", "z"]
    );
    assert_eq!(
        run(
            json!({"labelSelector": {"matchLabels": {"tier": "db"}}}),
            &s
        ),
        vec!["y"]
    );
    assert_eq!(
        run(
            json!({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, "namespaces": {"exclude": ["b"]}}),
            &s
        ),
        vec!["x"]
    );
}

#[test]
fn eviction_order_budgets_and_toleration_forms() {
    let n = tnode("n1").taint("dedicated", "gpu", NoSchedule).build();
    let s = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![n],
        pods: vec![
            tpod("important", "n1").priority(1000).build(),
            tpod("cheap", "n1").priority(-10).build(),
            tpod("guarded", "n1").label("app", "guarded").build(),
            tpod("wildcard", "n1").toleration("", "", None).build(),
            tpod("by-key", "n1")
                .toleration("dedicated", "", None)
                .build(),
            tpod("wrong-value", "n1")
                .toleration("dedicated", "cpu", Some(NoSchedule))
                .build(),
            tpod("wrong-effect", "n1")
                .toleration("dedicated", "gpu", Some(PreferNoSchedule))
                .build(),
        ],
        pdbs: vec![pdb("default", "guard", "app", "guarded", 0)],
        ..Default::default()
    });
    // lowest priority first (no priority is the lowest); the budget keeps "guarded";
    // the pods whose tolerations cover the taint stay
    assert_eq!(
        run(json!({}), &s),
        vec!["wrong-effect", "wrong-value", "cheap", "important"]
    );
    assert_eq!(
        limited(
            Limits {
                per_node: Some(1),
                ..Default::default()
            },
            &s
        ),
        vec!["wrong-effect"]
    );
}

#[test]
fn unschedulable_and_other_nodes_are_processed_in_order() {
    // a cordoned node's taints count like any other
    let a = tnode("a")
        .unschedulable()
        .taint("x", "", NoSchedule)
        .build();
    let b = tnode("b").taint("y", "1", NoSchedule).build();
    let s = snapshot(
        vec![b, a],
        vec![tpod("on-b", "b").build(), tpod("on-a", "a").build()],
    );
    assert_eq!(run(json!({}), &s), vec!["on-a", "on-b"]);
}

#[test]
fn reasons_name_the_taint_and_node() {
    let n = tnode("n1").taint("dedicated", "gpu", NoSchedule).build();
    let s = snapshot(vec![n], vec![tpod("x", "n1").build()]);
    let plugin = RemovePodsViolatingNodeTaints::from_json(&json!({})).unwrap();
    let plan = crate::framework::testing::run_alone(
        &plugin,
        &s,
        &DefaultEvictor::default(),
        Limits::default(),
        0,
    );
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].plugin, NAME);
    assert_eq!(
        plan[0].reason,
        "pod does not tolerate taint dedicated=gpu:NoSchedule of node n1"
    );
    let n = tnode("n1")
        .taint("maintenance", "", PreferNoSchedule)
        .build();
    let s = snapshot(vec![n], vec![tpod("x", "n1").build()]);
    let plugin =
        RemovePodsViolatingNodeTaints::from_json(&json!({"includePreferNoSchedule": true}))
            .unwrap();
    let plan = crate::framework::testing::run_alone(
        &plugin,
        &s,
        &DefaultEvictor::default(),
        Limits::default(),
        0,
    );
    assert_eq!(
        plan[0].reason,
        "pod does not tolerate taint maintenance:PreferNoSchedule of node n1"
    );
}

#[test]
fn args_validation_names_fields() {
    for (args, path) in [
        (
            json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}),
            "namespaces",
        ),
        (
            json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
            "labelSelector",
        ),
        (
            json!({"excludedTaints": ["a"], "includedTaints": ["b"]}),
            "includedTaints",
        ),
        (json!({"excludedTaints": [""]}), "excludedTaints[0]"),
        (json!({"excludedTaints": ["ok", "=v"]}), "excludedTaints[1]"),
        (json!({"excludedTaints": ["key="]}), "excludedTaints[0]"),
        (
            json!({"excludedTaints": ["key:NoSchedule"]}),
            "excludedTaints[0]",
        ),
        (json!({"includedTaints": ["k=a b"]}), "includedTaints[0]"),
        (json!({"includedTaints": ["/k"]}), "includedTaints[0]"),
        (
            json!({"includePreferNoSchedule": "yes"}),
            "includePreferNoSchedule",
        ),
        (json!({"excludedTaints": "a"}), "excludedTaints"),
        (json!({"cordon": true}), "cordon"),
        (json!({"taints": ["a"]}), "taints"),
    ] {
        let e = RemovePodsViolatingNodeTaints::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e:?}");
    }
    for ok in [
        json!(null),
        json!({"kind": "RemovePodsViolatingNodeTaintsArgs", "apiVersion": "descheduler/v1alpha2"}),
        json!({"excludedTaints": ["node.kubernetes.io/unschedulable", "dedicated=gpu", "example.com/x=y.z-1"]}),
        json!({"excludedTaints": null, "includePreferNoSchedule": null, "cordon": false}),
        json!({"labelSelector": {"matchLabels": {"role.kubernetes.io/node": ""}}}),
    ] {
        assert!(
            RemovePodsViolatingNodeTaints::from_json(&ok).is_ok(),
            "{ok}"
        );
    }
}

#[test]
fn runs_from_a_policy() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
profiles:
- name: taints
  pluginConfig:
  - name: RemovePodsViolatingNodeTaints
    args:
      includePreferNoSchedule: true
      excludedTaints: [node.kubernetes.io/unschedulable]
  plugins: {deschedule: {enabled: [RemovePodsViolatingNodeTaints]}}
"#,
    );
    let s = snapshot(
        vec![
            tnode("n1")
                .taint("node.kubernetes.io/unschedulable", "", NoSchedule)
                .build(),
            tnode("n2").taint("soft", "", PreferNoSchedule).build(),
        ],
        vec![tpod("a", "n1").build(), tpod("b", "n2").build()],
    );
    let plan = plan::plan(&pipeline, &s, 0).unwrap();
    let names: Vec<&str> = plan.evictions.iter().map(|e| &*s.pod(e.pod).name).collect();
    assert_eq!(names, vec!["b"]);
}
