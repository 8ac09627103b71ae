use super::*;
use crate::framework::testing::run_alone;
use crate::framework::{Limits, PlanningState};
use crate::labels::Selector;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{
    affinity_term, namespace, node, pdb, pod, snapshot, PodBuilder, T0,
};
use crate::snapshot::{Node, Pod, Qos, SnapshotParts, SYSTEM_CRITICAL_PRIORITY};
use serde_json::{json, Value};

const REGION: &str = "region";

/// A node in upstream's "main-region".
fn region_node(name: &str) -> Node {
    node(name).label(REGION, "main-region").build()
}

/// A Burstable pod on `node` in namespace `d` (upstream's 100m test pods).
fn p(name: &str, node: &str) -> PodBuilder {
    pod("d", name).node(node).cpu(100)
}

/// Anti-affinity over `region` against pods labelled `k=v`.
fn anti(b: PodBuilder, k: &str, v: &str) -> PodBuilder {
    b.anti_affinity(affinity_term(REGION, k, v))
}

struct Run {
    names: Vec<String>,
    reasons: Vec<String>,
}

fn run_with(
    snap: &ClusterSnapshot,
    args: Value,
    evictor: Value,
    limits: Limits,
    before: &[&str],
) -> Run {
    let plugin = RemovePodsViolatingInterPodAntiAffinity::from_json(&args).unwrap();
    let evictor = DefaultEvictor::from_json(&evictor).unwrap();
    let evictions = if before.is_empty() {
        run_alone(&plugin, snap, &evictor, limits, T0 + 3600)
    } else {
        let nodes = snap.ready_nodes(&Selector::everything());
        let mut state = PlanningState::new(snap, limits);
        for name in before {
            let id = PodId::from_index(snap.pods.iter().position(|p| &*p.name == *name).unwrap());
            state.plan_eviction(id, "p", "Earlier", "r".into()).unwrap();
        }
        crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0 + 3600);
        state
            .into_output()
            .evictions
            .into_iter()
            .filter(|e| e.plugin == NAME)
            .collect()
    };
    Run {
        names: evictions
            .iter()
            .map(|e| snap.pod(e.pod).name.to_string())
            .collect(),
        reasons: evictions.into_iter().map(|e| e.reason).collect(),
    }
}

fn run(snap: &ClusterSnapshot, args: Value) -> Vec<String> {
    run_with(snap, args, Value::Null, Limits::default(), &[]).names
}

fn limited(snap: &ClusterSnapshot, limits: Limits) -> Vec<String> {
    run_with(snap, Value::Null, Value::Null, limits, &[]).names
}

/// Upstream's p1..p4 on n1: p1, p3, p4 have anti-affinity against foo=bar, p2 is foo=bar.
fn upstream_p1_to_p4() -> Vec<Pod> {
    vec![
        anti(p("p1", "n1"), "foo", "bar").build(),
        p("p2", "n1").label("foo", "bar").build(),
        anti(p("p3", "n1"), "foo", "bar").build(),
        anti(p("p4", "n1"), "foo", "bar").build(),
    ]
}

/// Upstream's critical, bare pod labelled foo=bar.
fn non_evictable() -> Pod {
    p("non-evict", "n1")
        .bare()
        .priority(SYSTEM_CRITICAL_PRIORITY)
        .label("foo", "bar")
        .build()
}

#[test]
fn upstream_limits_cases() {
    let snap = snapshot(vec![region_node("n1")], upstream_p1_to_p4());
    // "Maximum pods to evict - 0": only pods with the term are evicted
    assert_eq!(run(&snap, Value::Null), ["p1", "p3", "p4"]);
    let per_node = |n| Limits {
        per_node: Some(n),
        ..Default::default()
    };
    // "Maximum pods to evict - 3"
    assert_eq!(limited(&snap, per_node(3)).len(), 3);
    // "maxPodsToEvictPerNamespace=3"
    let per_ns = Limits {
        per_namespace: Some(3),
        ..Default::default()
    };
    assert_eq!(limited(&snap, per_ns).len(), 3);
    // "maxNoOfPodsToEvictTotal"
    let total = Limits {
        per_namespace: Some(3),
        total: Some(1),
        ..Default::default()
    };
    assert_eq!(limited(&snap, total), ["p1"]);
    assert_eq!(limited(&snap, per_node(1)), ["p1"]);
}

#[test]
fn upstream_evict_only_one_after_sorting() {
    // p7 (priority 0) goes first; once it is gone p5 and p6 violate nothing.
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            anti(
                p("p5", "n1").label("foo", "bar").priority(100),
                "foo1",
                "bar1",
            )
            .build(),
            anti(
                p("p6", "n1").label("foo", "bar").priority(50),
                "foo1",
                "bar1",
            )
            .build(),
            anti(
                p("p7", "n1").label("foo1", "bar1").priority(0),
                "foo",
                "bar",
            )
            .build(),
        ],
    );
    assert_eq!(run(&snap, Value::Null), ["p7"]);
}

#[test]
fn upstream_conflict_with_critical_pod() {
    let snap = snapshot(
        vec![region_node("n1")],
        vec![anti(p("p1", "n1"), "foo", "bar").build(), non_evictable()],
    );
    let one = Limits {
        per_node: Some(1),
        ..Default::default()
    };
    assert_eq!(limited(&snap, one), ["p1"]);
}

#[test]
fn upstream_node_fit_cases() {
    let fit = |snap: &ClusterSnapshot| {
        run_with(
            snap,
            Value::Null,
            json!({"nodeFit": true}),
            Limits {
                per_node: Some(3),
                ..Default::default()
            },
            &[],
        )
        .names
    };
    // the only other node is too small
    let snap = snapshot(
        vec![
            region_node("n1"),
            node("n4").cpu(2).memory(2).pods(1).build(),
        ],
        upstream_p1_to_p4(),
    );
    assert!(fit(&snap).is_empty());
    // the only other node is cordoned
    let snap = snapshot(
        vec![region_node("n1"), node("n3").unschedulable().build()],
        upstream_p1_to_p4(),
    );
    assert!(fit(&snap).is_empty());
    // with room elsewhere they go
    let snap = snapshot(
        vec![region_node("n1"), node("n2").build()],
        upstream_p1_to_p4(),
    );
    assert_eq!(fit(&snap), ["p1", "p3", "p4"]);
}

#[test]
fn upstream_terminating_pods_are_not_evicted() {
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            anti(p("p9", "n1"), "foo", "bar").terminating().build(),
            anti(p("p10", "n1"), "foo", "bar").terminating().build(),
            p("x", "n1").label("foo", "bar").build(),
        ],
    );
    assert!(run(&snap, Value::Null).is_empty());
}

#[test]
fn upstream_violation_across_nodes_of_one_domain() {
    // p1 on n1 and p11 on n5, both in main-region
    let snap = snapshot(
        vec![
            region_node("n1"),
            node("n5").cpu(200).label(REGION, "main-region").build(),
        ],
        vec![
            anti(p("p1", "n1"), "foo", "bar").build(),
            p("p11", "n5").label("foo", "bar").build(),
        ],
    );
    let r = run_with(&snap, Value::Null, Value::Null, Limits::default(), &[]);
    assert_eq!(r.names, ["p1"]);
    assert_eq!(
        r.reasons,
        ["pod violates required anti-affinity with d/p11 on topology region=main-region"]
    );
}

#[test]
fn other_domains_do_not_violate() {
    let snap = snapshot(
        vec![
            node("n1").label(REGION, "east").build(),
            node("n2").label(REGION, "west").build(),
            node("n3").build(),
        ],
        vec![
            anti(p("a", "n1"), "foo", "bar").build(),
            p("b", "n2").label("foo", "bar").build(),
            p("c", "n3").label("foo", "bar").build(),
        ],
    );
    assert!(run(&snap, Value::Null).is_empty());
}

#[test]
fn node_without_the_topology_label_is_its_own_domain() {
    let snap = snapshot(
        vec![node("n1").build(), node("n2").build()],
        vec![
            anti(p("a", "n1"), "foo", "bar").build(),
            p("b", "n1").label("foo", "bar").build(),
            anti(p("c", "n2"), "foo", "bar").build(),
        ],
    );
    let r = run_with(&snap, Value::Null, Value::Null, Limits::default(), &[]);
    assert_eq!(r.names, ["a"]);
    assert_eq!(
        r.reasons,
        ["pod violates required anti-affinity with d/b on topology node n1 (which has no region label)"]
    );
}

#[test]
fn hostname_reason() {
    let snap = snapshot(
        vec![node("n1").build()],
        vec![
            pod("shop", "db-1").node("n1").label("app", "db").build(),
            pod("shop", "db-2")
                .node("n1")
                .label("app", "db")
                .anti_affinity(affinity_term("kubernetes.io/hostname", "app", "db"))
                .build(),
        ],
    );
    let r = run_with(&snap, Value::Null, Value::Null, Limits::default(), &[]);
    assert_eq!(
        r.reasons,
        ["pod violates required anti-affinity with shop/db-1 on topology kubernetes.io/hostname=n1"]
    );
}

#[test]
fn evicted_pod_no_longer_counts() {
    // two replicas that repel each other: one goes, the other then violates nothing
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            anti(p("a", "n1").label("app", "x"), "app", "x").build(),
            anti(p("b", "n1").label("app", "x"), "app", "x").build(),
            anti(p("c", "n1").label("app", "x"), "app", "x").build(),
        ],
    );
    assert_eq!(run(&snap, Value::Null), ["a", "b"]);
    // a pod an earlier plugin planned to evict does not count either
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            anti(p("a", "n1"), "foo", "bar").build(),
            p("b", "n1").label("foo", "bar").build(),
        ],
    );
    let r = run_with(&snap, Value::Null, Value::Null, Limits::default(), &["b"]);
    assert!(r.names.is_empty());
}

#[test]
fn lowest_priority_goes_first() {
    let pair = |pa: Option<i32>, pb: Option<i32>, qa: Qos, qb: Qos| {
        let mk = |name: &str, pr: Option<i32>, q: Qos| {
            let b = anti(p(name, "n1").label("app", "x"), "app", "x").qos(q);
            match pr {
                Some(v) => b.priority(v),
                None => b,
            }
            .build()
        };
        let snap = snapshot(
            vec![region_node("n1")],
            vec![mk("a", pa, qa), mk("b", pb, qb)],
        );
        run(&snap, Value::Null)
    };
    use Qos::*;
    assert_eq!(pair(Some(10), Some(5), Burstable, Burstable), ["b"]);
    assert_eq!(pair(Some(5), None, Burstable, Burstable), ["b"]);
    assert_eq!(pair(Some(5), Some(5), Guaranteed, BestEffort), ["b"]);
    assert_eq!(pair(Some(5), Some(5), Burstable, Burstable), ["a"]);
    // prefer-no-eviction goes last among equals
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            anti(p("a", "n1").label("app", "x"), "app", "x")
                .prefer_no_eviction()
                .build(),
            anti(p("b", "n1").label("app", "x"), "app", "x").build(),
        ],
    );
    assert_eq!(run(&snap, Value::Null), ["b"]);
}

#[test]
fn protected_pods_stay_but_still_count() {
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            // protected: DaemonSet, local storage, mirror, bare
            anti(p("ds", "n1").owner("DaemonSet", "ds"), "foo", "bar").build(),
            anti(p("local", "n1"), "foo", "bar").local_storage().build(),
            anti(p("mirror", "n1"), "foo", "bar").mirror().build(),
            anti(p("bare", "n1"), "foo", "bar").bare().build(),
            // the pod they all repel is itself protected, yet counts
            non_evictable(),
            anti(p("web", "n1"), "foo", "bar").build(),
        ],
    );
    assert_eq!(run(&snap, Value::Null), ["web"]);
}

#[test]
fn finished_and_terminating_pods_do_not_violate() {
    use crate::snapshot::Phase;
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            anti(p("a", "n1"), "foo", "bar").build(),
            p("done", "n1")
                .label("foo", "bar")
                .phase(Phase::Succeeded)
                .build(),
            p("failed", "n1")
                .label("foo", "bar")
                .phase(Phase::Failed)
                .build(),
            p("leaving", "n1").label("foo", "bar").terminating().build(),
            anti(p("z-done", "n1").label("foo", "bar"), "foo", "bar")
                .phase(Phase::Succeeded)
                .build(),
        ],
    );
    assert!(run(&snap, Value::Null).is_empty());
}

#[test]
fn limits_and_budgets() {
    let nodes = vec![region_node("n1"), node("n2").label(REGION, "other").build()];
    let mut pods = Vec::new();
    for n in ["n1", "n2"] {
        for i in 0..3 {
            pods.push(anti(p(&format!("{n}-{i}"), n).label("app", "x"), "app", "x").build());
        }
    }
    let snap = snapshot(nodes.clone(), pods.clone());
    // NodeLimit: the next node goes on
    let r = limited(
        &snap,
        Limits {
            per_node: Some(1),
            ..Default::default()
        },
    );
    assert_eq!(r, ["n1-0", "n2-0"]);
    // TotalLimit: the plugin stops
    let r = limited(
        &snap,
        Limits {
            total: Some(1),
            ..Default::default()
        },
    );
    assert_eq!(r, ["n1-0"]);
    // a disruption budget skips the pod, the next one is tried;
    let mut budgeted = pods;
    budgeted[0] = anti(
        p("n1-0", "n1").label("app", "x").label("pdb", "y"),
        "app",
        "x",
    )
    .build();
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods: budgeted,
        pdbs: vec![pdb("d", "block", "pdb", "y", 0)],
        ..Default::default()
    });
    // n1-0 stays and still counts, so n1-2 violates it too
    assert_eq!(run(&snap, Value::Null), ["n1-1", "n1-2", "n2-0", "n2-1"]);
}

#[test]
fn namespaces_include_and_exclude() {
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            pod("a", "x")
                .node("n1")
                .label("app", "x")
                .anti_affinity(affinity_term(REGION, "app", "x"))
                .build(),
            pod("a", "y").node("n1").label("app", "x").build(),
            pod("b", "x")
                .node("n1")
                .label("app", "x")
                .anti_affinity(affinity_term(REGION, "app", "x"))
                .build(),
            pod("b", "y").node("n1").label("app", "x").build(),
        ],
    );
    let keys = |args: Value| -> Vec<String> {
        let plugin = RemovePodsViolatingInterPodAntiAffinity::from_json(&args).unwrap();
        run_alone(
            &plugin,
            &snap,
            &DefaultEvictor::default(),
            Limits::default(),
            T0,
        )
        .iter()
        .map(|e| snap.pod(e.pod).key())
        .collect()
    };
    assert_eq!(keys(Value::Null), ["a/x", "b/x"]);
    assert_eq!(keys(json!({"namespaces": {"include": ["b"]}})), ["b/x"]);
    assert_eq!(keys(json!({"namespaces": {"exclude": ["b"]}})), ["a/x"]);
}

#[test]
fn label_selector_limits_evictions_not_violators() {
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            anti(p("web", "n1").label("tier", "web"), "app", "db").build(),
            anti(p("api", "n1").label("tier", "api"), "app", "db").build(),
            // the violator does not match the labelSelector, and still counts
            p("db", "n1").label("app", "db").build(),
        ],
    );
    let args = json!({"labelSelector": {"matchLabels": {"tier": "web"}}});
    assert_eq!(run(&snap, args), ["web"]);
    let args = json!({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]}});
    assert_eq!(run(&snap, args), ["api", "web"]);
}

#[test]
fn term_namespaces_and_namespace_selector() {
    let team_a = namespace("db", &[("team", "a")]);
    let team_b = namespace("cache", &[("team", "b")]);
    let build = |term: PodAffinityTerm| {
        ClusterSnapshot::build(SnapshotParts {
            nodes: vec![region_node("n1")],
            pods: vec![
                pod("shop", "web").node("n1").anti_affinity(term).build(),
                pod("db", "db-1").node("n1").label("app", "x").build(),
                pod("cache", "c-1").node("n1").label("app", "x").build(),
            ],
            namespaces: vec![team_a.clone(), team_b.clone()],
            ..Default::default()
        })
    };
    let base = affinity_term(REGION, "app", "x");
    // own namespace only: nothing labelled app=x in shop
    assert!(run_with(
        &build(base.clone()),
        Value::Null,
        Value::Null,
        Limits::default(),
        &[]
    )
    .names
    .is_empty());
    // listed namespaces
    let mut listed = base.clone();
    listed.namespaces = vec!["cache".into()];
    let r = run_with(
        &build(listed),
        Value::Null,
        Value::Null,
        Limits::default(),
        &[],
    );
    assert_eq!(r.names, ["web"]);
    assert!(r.reasons[0].contains("cache/c-1"));
    // namespaceSelector by namespace labels
    let mut selected = base.clone();
    selected.namespace_selector = Some(Selector::from_requirements(vec![
        crate::labels::Requirement::In("team".into(), vec!["a".into()]),
    ]));
    let r = run_with(
        &build(selected),
        Value::Null,
        Value::Null,
        Limits::default(),
        &[],
    );
    assert!(r.reasons[0].contains("db/db-1"), "{:?}", r.reasons);
    let mut nobody = base.clone();
    nobody.namespace_selector = Some(Selector::from_requirements(vec![
        crate::labels::Requirement::In("team".into(), vec!["z".into()]),
    ]));
    assert!(run_with(
        &build(nobody),
        Value::Null,
        Value::Null,
        Limits::default(),
        &[]
    )
    .names
    .is_empty());
    // `{}` selects every namespace: the first violator in namespace/name order is named
    let mut all = base.clone();
    all.namespace_selector = Some(Selector::everything());
    let r = run_with(
        &build(all),
        Value::Null,
        Value::Null,
        Limits::default(),
        &[],
    );
    assert!(r.reasons[0].contains("cache/c-1"), "{:?}", r.reasons);
    // a nil labelSelector selects no pod
    let mut nil = base;
    nil.label_selector = None;
    nil.namespace_selector = Some(Selector::everything());
    assert!(run_with(
        &build(nil),
        Value::Null,
        Value::Null,
        Limits::default(),
        &[]
    )
    .names
    .is_empty());
}

#[test]
fn same_name_in_another_namespace_violates() {
    let mut term = affinity_term(REGION, "app", "x");
    term.namespaces = vec!["a".into(), "b".into()];
    let snap = snapshot(
        vec![region_node("n1")],
        vec![
            pod("a", "web")
                .node("n1")
                .label("app", "x")
                .anti_affinity(term)
                .build(),
            pod("b", "web").node("n1").label("app", "x").build(),
        ],
    );
    assert_eq!(run(&snap, Value::Null), ["web"]);
}

#[test]
fn only_planning_nodes_count() {
    let snap = snapshot(
        vec![
            region_node("n1"),
            node("n2").label(REGION, "main-region").not_ready().build(),
        ],
        vec![
            anti(p("a", "n1"), "foo", "bar").build(),
            p("b", "n2").label("foo", "bar").build(),
        ],
    );
    assert!(run(&snap, Value::Null).is_empty());
}

#[test]
fn pre_eviction_filter_applies() {
    // nodeFit: the pod must fit another node; a cordoned one does not count
    let snap = snapshot(
        vec![region_node("n1"), node("n2").unschedulable().build()],
        vec![
            anti(p("a", "n1"), "foo", "bar").build(),
            p("b", "n1").label("foo", "bar").build(),
        ],
    );
    let r = run_with(
        &snap,
        Value::Null,
        json!({"nodeFit": true}),
        Limits::default(),
        &[],
    );
    assert!(r.names.is_empty());
}

#[test]
fn deterministic_under_shuffled_input() {
    let mut pods = Vec::new();
    for n in 0..4 {
        for i in 0..6 {
            let name = format!("p{n}{i}");
            let b = p(&name, &format!("n{n}")).label("app", if i % 2 == 0 { "x" } else { "y" });
            pods.push(anti(b, "app", "x").build());
        }
    }
    let nodes: Vec<Node> = (0..4)
        .map(|n| {
            node(&format!("n{n}"))
                .label(REGION, if n < 2 { "a" } else { "b" })
                .build()
        })
        .collect();
    let first = run(&snapshot(nodes.clone(), pods.clone()), Value::Null);
    assert!(!first.is_empty());
    let mut rev_nodes = nodes;
    rev_nodes.reverse();
    pods.reverse();
    assert_eq!(run(&snapshot(rev_nodes, pods), Value::Null), first);
}

#[test]
fn invalid_args_name_the_field() {
    let err = RemovePodsViolatingInterPodAntiAffinity::from_json(
        &json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}),
    )
    .unwrap_err();
    assert_eq!(err.path, "namespaces");
    let err = RemovePodsViolatingInterPodAntiAffinity::from_json(&json!({
        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Equals"}]}
    }))
    .unwrap_err();
    assert_eq!(err.path, "labelSelector");
    assert!(RemovePodsViolatingInterPodAntiAffinity::from_json(&json!({"bogus": 1})).is_err());
    let ok = RemovePodsViolatingInterPodAntiAffinity::from_json(&json!({
        "apiVersion": "descheduler/v1alpha2",
        "kind": "RemovePodsViolatingInterPodAntiAffinityArgs",
        "namespaces": {"exclude": ["kube-system"]},
    }))
    .unwrap();
    assert_eq!(ok.args.namespaces.unwrap().exclude, ["kube-system"]);
    assert!(SPEC.build(&Value::Null).is_ok());
}
