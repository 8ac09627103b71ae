use super::*;
use crate::framework::testing::run_alone;
use crate::framework::{Limits, PlanningState};
use crate::labels::Selector;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, node_term, pdb, pod, snapshot, PodBuilder, T0};
use crate::snapshot::{ClusterSnapshot, Node, Phase, SnapshotParts, TaintEffect};
use serde_json::{json, Value};

const KEY: &str = "kubernetes.io/desiredNode";

fn args(types: &[&str]) -> Value {
    json!({ "nodeAffinityType": types })
}

fn required() -> Value {
    args(&[REQUIRED])
}

fn preferred() -> Value {
    args(&[PREFERRED])
}

/// Upstream's test nodes: 2 CPUs, 10 pods.
fn labelled(name: &str) -> Node {
    node(name).cpu(2000).pods(10).label(KEY, "yes").build()
}

fn unlabelled(name: &str) -> Node {
    node(name).cpu(2000).pods(10).build()
}

fn p(name: &str, node: &str) -> PodBuilder {
    pod("d", name).node(node).cpu(100)
}

/// Upstream's `addPodsToNode`: one pod with the affinity, two without.
fn upstream_pods(node: &str, t: &str, terminating: bool) -> Vec<crate::snapshot::Pod> {
    let with = p("podWithNodeAffinity", node);
    let with = if t == REQUIRED {
        with.required_node_affinity(vec![node_term(KEY, &["yes"])])
    } else {
        with.preferred_node_affinity(10, node_term(KEY, &["yes"]))
    };
    [with, p("pod1", node), p("pod2", node)]
        .into_iter()
        .map(|b| if terminating { b.terminating() } else { b }.build())
        .collect()
}

struct Run {
    names: Vec<String>,
    reasons: Vec<String>,
}

/// Runs the plugin over `only` nodes (all Ready nodes when None), after `before` pods were
/// planned by an earlier plugin.
fn run_full(
    snap: &ClusterSnapshot,
    args: Value,
    evictor: Value,
    limits: Limits,
    only: Option<&[&str]>,
    before: &[&str],
) -> Run {
    let plugin = RemovePodsViolatingNodeAffinity::from_json(&args).unwrap();
    let evictor = DefaultEvictor::from_json(&evictor).unwrap();
    let evictions = if only.is_none() && before.is_empty() {
        run_alone(&plugin, snap, &evictor, limits, T0 + 3600)
    } else {
        let nodes: Vec<NodeId> = match only {
            Some(names) => names.iter().map(|n| snap.node_id(n).unwrap()).collect(),
            None => snap.ready_nodes(&Selector::everything()),
        };
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
    run_full(snap, args, Value::Null, Limits::default(), None, &[]).names
}

#[test]
fn upstream_cases() {
    let per_node = |n| Limits {
        per_node: Some(n),
        ..Default::default()
    };
    let per_ns = |n| Limits {
        per_namespace: Some(n),
        ..Default::default()
    };
    let none = Limits::default();
    // (description, type, pods on nodeWithLabels, terminating, limits, evictions)
    let cases: &[(&str, &str, bool, bool, Limits, usize)] = &[
        (
            "correctly scheduled [required]",
            REQUIRED,
            true,
            false,
            none,
            0,
        ),
        (
            "correctly scheduled [preferred]",
            PREFERRED,
            true,
            false,
            none,
            0,
        ),
        (
            "wrong node, other available [required]",
            REQUIRED,
            false,
            false,
            none,
            1,
        ),
        (
            "wrong node, better fit available [preferred]",
            PREFERRED,
            false,
            false,
            none,
            1,
        ),
        (
            "maxPodsToEvictPerNode 1 [required]",
            REQUIRED,
            false,
            false,
            per_node(1),
            1,
        ),
        (
            "maxPodsToEvictPerNode 1 [preferred]",
            PREFERRED,
            false,
            false,
            per_node(1),
            1,
        ),
        (
            "maxPodsToEvictPerNode 0 [required]",
            REQUIRED,
            false,
            false,
            per_node(0),
            0,
        ),
        (
            "maxPodsToEvictPerNode 0 [preferred]",
            PREFERRED,
            false,
            false,
            per_node(0),
            0,
        ),
        (
            "terminating [required]",
            REQUIRED,
            false,
            true,
            per_node(1),
            0,
        ),
        (
            "terminating [preferred]",
            PREFERRED,
            false,
            true,
            per_node(1),
            0,
        ),
        (
            "maxNoOfPodsToEvictPerNamespace 1 [required]",
            REQUIRED,
            false,
            false,
            per_ns(1),
            1,
        ),
        (
            "maxNoOfPodsToEvictPerNamespace 1 [preferred]",
            PREFERRED,
            false,
            false,
            per_ns(1),
            1,
        ),
        (
            "maxNoOfPodsToEvictPerNamespace 0 [required]",
            REQUIRED,
            false,
            false,
            per_ns(0),
            0,
        ),
        (
            "maxNoOfPodsToEvictPerNamespace 0 [preferred]",
            PREFERRED,
            false,
            false,
            per_ns(0),
            0,
        ),
        (
            "maxNoOfPodsToEvictTotal 0 [required]",
            REQUIRED,
            false,
            false,
            Limits {
                per_namespace: Some(1),
                total: Some(0),
                ..Default::default()
            },
            0,
        ),
    ];
    for &(desc, t, on_labelled, terminating, limits, want) in cases {
        let (nodes, on) = if on_labelled {
            (vec![labelled("nodeWithLabels")], "nodeWithLabels")
        } else {
            (
                vec![unlabelled("nodeWithoutLabels"), labelled("nodeWithLabels")],
                "nodeWithoutLabels",
            )
        };
        let snap = snapshot(nodes, upstream_pods(on, t, terminating));
        let got = run_full(&snap, args(&[t]), Value::Null, limits, None, &[]).names;
        assert_eq!(got.len(), want, "{desc}: {got:?}");
        if want == 1 {
            assert_eq!(got, ["podWithNodeAffinity"], "{desc}");
        }
    }
}

#[test]
fn upstream_no_node_where_the_pod_fits() {
    for t in [REQUIRED, PREFERRED] {
        // the only labelled node is cordoned: no eviction, with or without nodeFit
        let snap = snapshot(
            vec![
                unlabelled("nodeWithoutLabels"),
                node("unschedulableNodeWithLabels")
                    .label(KEY, "yes")
                    .unschedulable()
                    .build(),
            ],
            upstream_pods("nodeWithoutLabels", t, false),
        );
        for evictor in [json!({"nodeFit": true}), Value::Null] {
            let r = run_full(&snap, args(&[t]), evictor, Limits::default(), None, &[]);
            assert!(r.names.is_empty(), "{t}");
        }
        // the pod's node is not a planning node: it is not looked at
        let snap = snapshot(
            vec![
                unlabelled("nodeWithoutLabels"),
                labelled("nodeWithLabels"),
                node("unschedulableNodeWithLabels")
                    .label(KEY, "yes")
                    .unschedulable()
                    .build(),
            ],
            upstream_pods("nodeWithoutLabels", t, false),
        );
        let only: &[&str] = &["nodeWithLabels", "unschedulableNodeWithLabels"];
        let r = run_full(
            &snap,
            args(&[t]),
            json!({"nodeFit": true}),
            Limits {
                per_node: Some(1),
                ..Default::default()
            },
            Some(only),
            &[],
        );
        assert!(r.names.is_empty(), "{t}");
    }
}

#[test]
fn reasons() {
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        vec![
            p("a", "n1")
                .required_node_affinity(vec![node_term(KEY, &["yes"])])
                .build(),
            p("b", "n1")
                .preferred_node_affinity(10, node_term(KEY, &["yes"]))
                .build(),
        ],
    );
    let r = run_full(
        &snap,
        args(&[REQUIRED, PREFERRED]),
        Value::Null,
        Limits::default(),
        None,
        &[],
    );
    assert_eq!(r.names, ["a", "b"]);
    assert_eq!(
        r.reasons,
        [
            "node n1 no longer matches the pod's required node affinity (it fits n2)",
            "node n1 scores 0 for the pod's preferred node affinity; n2, where it fits, scores 10",
        ]
    );
}

#[test]
fn required_covers_node_selector_only_with_affinity() {
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        vec![
            // nodeSelector alone: upstream's PodHasNodeAffinity says no
            p("selector-only", "n1").node_selector(KEY, "yes").build(),
            // affinity matches n1 (any node), the nodeSelector does not
            p("both", "n1")
                .node_selector(KEY, "yes")
                .required_node_affinity(vec![exists_term("kubernetes.io/hostname")])
                .build(),
        ],
    );
    assert_eq!(run(&snap, required()), ["both"]);
}

/// A term requiring a node label to exist.
fn exists_term(key: &str) -> crate::snapshot::NodeSelectorTerm {
    crate::snapshot::NodeSelectorTerm {
        match_expressions: vec![crate::labels::Requirement::Exists(key.into())],
        match_fields: Vec::new(),
    }
}

#[test]
fn required_terms_are_ored() {
    let snap = snapshot(
        vec![
            node("n1").label("zone", "b").build(),
            node("n2").label("zone", "c").build(),
        ],
        vec![
            p("ok", "n1")
                .required_node_affinity(vec![node_term("zone", &["a"]), node_term("zone", &["b"])])
                .build(),
            p("moves", "n1")
                .required_node_affinity(vec![node_term("zone", &["a"]), node_term("zone", &["c"])])
                .build(),
        ],
    );
    assert_eq!(run(&snap, required()), ["moves"]);
}

#[test]
fn pod_that_fits_nowhere_else_stays() {
    let want = |b: PodBuilder| b.required_node_affinity(vec![node_term(KEY, &["yes"])]);
    // the only matching node is full
    let snap = snapshot(
        vec![
            unlabelled("n1"),
            node("n2").cpu(150).label(KEY, "yes").build(),
        ],
        vec![want(p("a", "n1")).build(), p("big", "n2").cpu(100).build()],
    );
    assert!(run(&snap, required()).is_empty());
    // the only matching node has a taint the pod does not tolerate
    let tainted = node("n2")
        .label(KEY, "yes")
        .taint("gpu", "", TaintEffect::NoSchedule)
        .build();
    let snap = snapshot(
        vec![unlabelled("n1"), tainted.clone()],
        vec![want(p("a", "n1")).build()],
    );
    assert!(run(&snap, required()).is_empty());
    let snap = snapshot(
        vec![unlabelled("n1"), tainted],
        vec![want(p("a", "n1")).toleration("gpu", "", None).build()],
    );
    assert_eq!(run(&snap, required()), ["a"]);
    // no other node matches at all
    let snap = snapshot(
        vec![unlabelled("n1"), unlabelled("n2")],
        vec![want(p("a", "n1")).build()],
    );
    assert!(run(&snap, required()).is_empty());
}

#[test]
fn node_fit_sees_earlier_plans() {
    // n2 is full until an earlier plugin plans to move "big" off it
    let snap = snapshot(
        vec![
            unlabelled("n1"),
            node("n2").cpu(150).label(KEY, "yes").build(),
        ],
        vec![
            p("a", "n1")
                .required_node_affinity(vec![node_term(KEY, &["yes"])])
                .build(),
            p("big", "n2").cpu(100).build(),
        ],
    );
    assert!(run(&snap, required()).is_empty());
    let r = run_full(
        &snap,
        required(),
        Value::Null,
        Limits::default(),
        None,
        &["big"],
    );
    assert_eq!(r.names, ["a"]);
}

#[test]
fn preferred_needs_a_better_node_it_fits() {
    let pref = |b: PodBuilder| {
        b.preferred_node_affinity(10, node_term("zone", &["a"]))
            .preferred_node_affinity(5, node_term("disk", &["ssd"]))
    };
    let nodes = || {
        vec![
            node("n1").label("zone", "a").build(),   // 10
            node("n2").label("disk", "ssd").build(), // 5
            node("n3")
                .label("zone", "a")
                .label("disk", "ssd")
                .cpu(50)
                .build(), // 15, small
            node("n4").label("zone", "a").label("disk", "ssd").build(), // 15
        ]
    };
    // on n2 (5): n4 (15) is the best it fits; n3 is too small
    let snap = snapshot(nodes(), vec![pref(p("a", "n2")).build()]);
    let r = run_full(
        &snap,
        preferred(),
        Value::Null,
        Limits::default(),
        None,
        &[],
    );
    assert_eq!(r.names, ["a"]);
    assert!(
        r.reasons[0].ends_with("n4, where it fits, scores 15"),
        "{:?}",
        r.reasons
    );
    // on n4 it has the best score there is
    let snap = snapshot(nodes(), vec![pref(p("a", "n4")).build()]);
    assert!(run(&snap, preferred()).is_empty());
    // an equal score elsewhere is no reason to move
    let snap = snapshot(
        vec![
            node("n1").label("zone", "a").build(),
            node("n2").label("zone", "a").build(),
        ],
        vec![pref(p("a", "n1")).build()],
    );
    assert!(run(&snap, preferred()).is_empty());
    // the only better node is cordoned: the pod stays even without nodeFit (upstream
    // would evict it and rely on nodeFit)
    let snap = snapshot(
        vec![
            node("n1").build(),
            node("n2").label("zone", "a").unschedulable().build(),
        ],
        vec![pref(p("a", "n1")).build()],
    );
    assert!(run(&snap, preferred()).is_empty());
    // required affinity limits where it fits
    let snap = snapshot(
        vec![
            node("n1").label("pool", "x").build(),
            node("n2").label("zone", "a").build(),
        ],
        vec![pref(p("a", "n1"))
            .required_node_affinity(vec![node_term("pool", &["x"])])
            .build()],
    );
    assert!(run(&snap, args(&[PREFERRED, REQUIRED])).is_empty());
}

#[test]
fn types_run_in_order_and_once() {
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        vec![p("a", "n1")
            .required_node_affinity(vec![node_term(KEY, &["yes"])])
            .preferred_node_affinity(10, node_term(KEY, &["yes"]))
            .build()],
    );
    let r = run_full(
        &snap,
        args(&[PREFERRED, REQUIRED, PREFERRED]),
        Value::Null,
        Limits::default(),
        None,
        &[],
    );
    assert_eq!(r.names, ["a"]);
    assert!(r.reasons[0].contains("preferred"), "{:?}", r.reasons);
    // only the listed type acts
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        vec![p("a", "n1")
            .preferred_node_affinity(10, node_term(KEY, &["yes"]))
            .build()],
    );
    assert!(run(&snap, required()).is_empty());
}

#[test]
fn protected_and_finished_pods_stay() {
    let want = |b: PodBuilder| b.required_node_affinity(vec![node_term(KEY, &["yes"])]);
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        vec![
            want(p("ds", "n1").owner("DaemonSet", "ds")).build(),
            want(p("local", "n1")).local_storage().build(),
            want(p("mirror", "n1")).mirror().build(),
            want(p("bare", "n1")).bare().build(),
            want(p("critical", "n1"))
                .priority(crate::snapshot::SYSTEM_CRITICAL_PRIORITY)
                .build(),
            want(p("done", "n1")).phase(Phase::Succeeded).build(),
            want(p("leaving", "n1")).terminating().build(),
            want(p("web", "n1")).build(),
        ],
    );
    assert_eq!(run(&snap, required()), ["web"]);
}

#[test]
fn namespaces_and_label_selector() {
    let want = |ns: &str, name: &str, tier: &str| {
        pod(ns, name)
            .node("n1")
            .label("tier", tier)
            .required_node_affinity(vec![node_term(KEY, &["yes"])])
            .build()
    };
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        vec![
            want("a", "x", "web"),
            want("b", "y", "web"),
            want("b", "z", "db"),
        ],
    );
    let keys = |extra: Value| -> Vec<String> {
        let mut a = required();
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let plugin = RemovePodsViolatingNodeAffinity::from_json(&a).unwrap();
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
    assert_eq!(keys(json!({})), ["a/x", "b/y", "b/z"]);
    assert_eq!(
        keys(json!({"namespaces": {"include": ["b"]}})),
        ["b/y", "b/z"]
    );
    assert_eq!(keys(json!({"namespaces": {"exclude": ["b"]}})), ["a/x"]);
    assert_eq!(
        keys(json!({"labelSelector": {"matchLabels": {"tier": "web"}}})),
        ["a/x", "b/y"]
    );
    assert_eq!(
        keys(
            json!({"namespaces": {"include": ["b"]}, "labelSelector": {"matchLabels": {"tier": "web"}}})
        ),
        ["b/y"]
    );
}

#[test]
fn limits_priority_order_and_budgets() {
    let want = |name: &str, node: &str| {
        p(name, node).required_node_affinity(vec![node_term(KEY, &["yes"])])
    };
    let nodes = vec![unlabelled("n1"), unlabelled("n2"), labelled("n3")];
    let pods = vec![
        want("a", "n1").priority(10).build(),
        want("b", "n1").priority(5).build(),
        want("c", "n1").build(),
        want("d", "n2").build(),
        want("e", "n2").build(),
    ];
    let snap = snapshot(nodes.clone(), pods.clone());
    // lowest priority first; the node limit moves on to the next node
    let r = run_full(
        &snap,
        required(),
        Value::Null,
        Limits {
            per_node: Some(2),
            ..Default::default()
        },
        None,
        &[],
    );
    assert_eq!(r.names, ["c", "b", "d", "e"]);
    // the total limit stops the plugin, also for the next type
    let r = run_full(
        &snap,
        args(&[REQUIRED, PREFERRED]),
        Value::Null,
        Limits {
            total: Some(1),
            ..Default::default()
        },
        None,
        &[],
    );
    assert_eq!(r.names, ["c"]);
    // a disruption budget skips the pod, the next one is tried
    let mut budgeted = pods;
    budgeted[2] = want("c", "n1").label("pdb", "y").build();
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods: budgeted,
        pdbs: vec![pdb("d", "block", "pdb", "y", 0)],
        ..Default::default()
    });
    assert_eq!(run(&snap, required()), ["b", "a", "d", "e"]);
}

#[test]
fn pre_eviction_filter_applies() {
    // minReplicas through the evictor's Filter, nodeFit through PreEvictionFilter
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        upstream_pods("n1", REQUIRED, false),
    );
    let r = run_full(
        &snap,
        required(),
        json!({"minReplicas": 4}),
        Limits::default(),
        None,
        &[],
    );
    assert!(r.names.is_empty());
    let r = run_full(
        &snap,
        required(),
        json!({"nodeFit": true}),
        Limits::default(),
        None,
        &[],
    );
    assert_eq!(r.names, ["podWithNodeAffinity"]);
}

#[test]
fn already_planned_pods_are_skipped() {
    let snap = snapshot(
        vec![unlabelled("n1"), labelled("n2")],
        upstream_pods("n1", REQUIRED, false),
    );
    let r = run_full(
        &snap,
        required(),
        Value::Null,
        Limits::default(),
        None,
        &["podWithNodeAffinity"],
    );
    assert!(r.names.is_empty());
}

#[test]
fn deterministic_under_shuffled_input() {
    let mut pods = Vec::new();
    for n in 0..3 {
        for i in 0..5 {
            let b = p(&format!("p{n}{i}"), &format!("n{n}"));
            let b = if i % 2 == 0 {
                b.required_node_affinity(vec![node_term(KEY, &["yes"])])
            } else {
                b.preferred_node_affinity(i, node_term(KEY, &["yes"]))
            };
            pods.push(b.build());
        }
    }
    let nodes = vec![
        unlabelled("n0"),
        unlabelled("n1"),
        labelled("n2"),
        labelled("n3"),
    ];
    let a = args(&[REQUIRED, PREFERRED]);
    let first = run(&snapshot(nodes.clone(), pods.clone()), a.clone());
    assert_eq!(first.len(), 10);
    let mut rev = nodes;
    rev.reverse();
    pods.reverse();
    assert_eq!(run(&snapshot(rev, pods), a), first);
}

#[test]
fn invalid_args_name_the_field() {
    let path = |v: Value| {
        RemovePodsViolatingNodeAffinity::from_json(&v)
            .unwrap_err()
            .path
    };
    // upstream: "nodeAffinityType needs to be set"
    assert_eq!(path(Value::Null), "nodeAffinityType");
    assert_eq!(path(json!({"nodeAffinityType": []})), "nodeAffinityType");
    assert_eq!(path(json!({"nodeAffinityType": null})), "nodeAffinityType");
    // upstream's "Invalid Affinity type" test case: refused here, with its index
    assert_eq!(
        path(args(&[
            REQUIRED,
            "requiredDuringSchedulingRequiredDuringExecution"
        ])),
        "nodeAffinityType[1]"
    );
    assert_eq!(
        path(
            json!({"nodeAffinityType": [REQUIRED], "namespaces": {"include": ["a"], "exclude": ["b"]}})
        ),
        "namespaces"
    );
    assert_eq!(
        path(
            json!({"nodeAffinityType": [REQUIRED], "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}})
        ),
        "labelSelector"
    );
    assert!(RemovePodsViolatingNodeAffinity::from_json(
        &json!({"nodeAffinityType": [REQUIRED], "bogus": 1})
    )
    .is_err());
    let err = RemovePodsViolatingNodeAffinity::from_json(&Value::Null).unwrap_err();
    assert!(err.message.contains("needs to be set"), "{}", err.message);
    let ok = RemovePodsViolatingNodeAffinity::from_json(&json!({
        "apiVersion": "descheduler/v1alpha2",
        "kind": "RemovePodsViolatingNodeAffinityArgs",
        "nodeAffinityType": [PREFERRED, REQUIRED],
    }))
    .unwrap();
    assert_eq!(ok.types, [AffinityType::Preferred, AffinityType::Required]);
    assert!(SPEC.build(&required()).is_ok());
    assert!(SPEC.build(&Value::Null).is_err());
}
