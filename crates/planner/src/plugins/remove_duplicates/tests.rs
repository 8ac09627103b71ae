use super::*;
use crate::framework::{Limits, PlanningState};
use crate::labels::{Requirement, Selector};
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pdb, pod, PodBuilder, T0};
use crate::snapshot::{Affinity, OwnerRef, SnapshotParts};
use serde_json::{json, Value};

/// Runs the plugin over every Ready node and returns the evicted pods' keys, in order.
fn run_with(snap: &ClusterSnapshot, args: Value, evictor: Value, limits: Limits) -> Vec<String> {
    let plugin = RemoveDuplicates::from_json(&args).unwrap();
    let evictor = DefaultEvictor::from_json(&evictor).unwrap();
    let nodes = snap.ready_nodes(&Selector::default());
    let mut state = PlanningState::new(snap, limits);
    crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0 + 3600);
    state
        .ledger()
        .evictions()
        .iter()
        .map(|e| snap.pod(e.pod).key())
        .collect()
}

fn run(snap: &ClusterSnapshot) -> Vec<String> {
    run_with(snap, Value::Null, Value::Null, Limits::default())
}

fn snap(nodes: Vec<Node>, pods: Vec<PodBuilder>) -> ClusterSnapshot {
    ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods: pods.into_iter().map(PodBuilder::build).collect(),
        ..Default::default()
    })
}

fn nodes(names: &[&str]) -> Vec<Node> {
    names.iter().map(|n| node(n).build()).collect()
}

/// `count` replicas of ReplicaSet `rs` in namespace `ns` on `node`, named `<prefix><i>`.
fn replicas(ns: &str, rs: &str, prefix: &str, node_name: &str, count: usize) -> Vec<PodBuilder> {
    (0..count)
        .map(|i| {
            pod(ns, &format!("{prefix}{i}"))
                .owner("ReplicaSet", rs)
                .node(node_name)
        })
        .collect()
}

/// Pods on nodes n1, n2, n3 as upstream's "(5,3,1)" layout.
fn spread(counts: &[(&str, usize)]) -> Vec<PodBuilder> {
    let mut pods = Vec::new();
    for (node_name, count) in counts {
        pods.extend(replicas(
            "d",
            "rs",
            &format!("{node_name}-p"),
            node_name,
            *count,
        ));
    }
    pods
}

#[test]
fn three_replicas_on_one_of_three_nodes_two_are_evicted() {
    let s = snap(
        nodes(&["n1", "n2", "n3"]),
        replicas("d", "web", "p", "n1", 3),
    );
    // All equal in priority and QoS: eviction order is name order, the last stays.
    assert_eq!(run(&s), vec!["d/p0", "d/p1"]);
    let mut state = PlanningState::new(&s, Limits::default());
    let evictor = DefaultEvictor::default();
    let nodes = s.ready_nodes(&Selector::default());
    let plugin = RemoveDuplicates::from_json(&Value::Null).unwrap();
    crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0);
    let e = &state.ledger().evictions()[0];
    assert_eq!(e.plugin, NAME);
    assert_eq!(
        e.reason,
        "duplicate of ReplicaSet d/web: 3 on node n1, at most 1 per node (ceil of 3 pods over 3 nodes)"
    );
}

#[test]
fn upstream_uniform_cases() {
    // (name, planning nodes, pods per node, evictions wanted)
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, usize)>, usize);
    let cases: Vec<Case<'_>> = vec![
        (
            "(5,3,1) -> (3,3,3)",
            vec!["n1", "n2", "n3"],
            vec![("n1", 5), ("n2", 3), ("n3", 1)],
            2,
        ),
        // n3 is not a planning node: its pod is not counted either.
        (
            "(5,3) over two nodes -> (4,4)",
            vec!["n1", "n2"],
            vec![("n1", 5), ("n2", 3)],
            1,
        ),
        (
            "(2,0,0) -> (1,1,0)",
            vec!["n1", "n2", "n3"],
            vec![("n1", 2)],
            1,
        ),
        ("a single pod", vec!["n1", "n2", "n3"], vec![("n1", 1)], 0),
        (
            "already even",
            vec!["n1", "n2", "n3"],
            vec![("n1", 2), ("n2", 2), ("n3", 2)],
            0,
        ),
        (
            "(3,1) over two nodes",
            vec!["n1", "n2"],
            vec![("n1", 3), ("n2", 1)],
            1,
        ),
    ];
    for (name, node_names, counts, want) in cases {
        let s = snap(nodes(&node_names), spread(&counts));
        assert_eq!(run(&s).len(), want, "{name}");
    }
}

#[test]
fn each_owner_is_balanced_on_its_own() {
    // RS a: (5,3,1), RS b: (1,3,5): two evictions each.
    let mut pods = spread(&[("n1", 5), ("n2", 3), ("n3", 1)]);
    for (node_name, count) in [("n1", 1), ("n2", 3), ("n3", 5)] {
        pods.extend(replicas(
            "d",
            "other",
            &format!("{node_name}-q"),
            node_name,
            count,
        ));
    }
    let s = snap(nodes(&["n1", "n2", "n3"]), pods);
    let got = run(&s);
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got.iter().filter(|k| k.contains("n1-p")).count(), 2);
    assert_eq!(got.iter().filter(|k| k.contains("n3-q")).count(), 2);
    // Same names in two namespaces are two owners.
    let mut pods = replicas("dev", "rs", "p", "n1", 3);
    pods.extend(replicas("test", "rs", "p", "n1", 3));
    let s = snap(nodes(&["n1", "n2"]), pods);
    assert_eq!(run(&s), vec!["dev/p0", "test/p0"]);
}

#[test]
fn pods_with_two_owners_are_evicted_once() {
    // Upstream's "two replica sets" case: every pod names rs-1 and rs-2. Upstream's
    // dry-run counts 4 (each pod once per owner); the pods are the same two.
    let two_owners = |b: PodBuilder| {
        let mut p = b.owner("ReplicaSet", "rs-1").build();
        let second = OwnerRef {
            kind: "ReplicaSet".into(),
            name: "rs-2".into(),
            uid: "uid-rs-2".into(),
            controller: false,
        };
        p.owners = p.owners.iter().cloned().chain([second]).collect();
        p
    };
    let mut all = Vec::new();
    for (node_name, count) in [("n1", 5), ("n2", 3), ("n3", 1)] {
        for i in 0..count {
            all.push(two_owners(
                pod("d", &format!("{node_name}-p{i}")).node(node_name),
            ));
        }
    }
    let s = ClusterSnapshot::build(SnapshotParts {
        nodes: nodes(&["n1", "n2", "n3"]),
        pods: all,
        ..Default::default()
    });
    assert_eq!(run(&s), vec!["d/n1-p0", "d/n1-p1"]);
}

#[test]
fn exclude_owner_kinds() {
    let mut pods = replicas("d", "rs", "p", "n1", 3);
    pods.extend((0..3).map(|i| pod("d", &format!("j{i}")).owner("Job", "batch").node("n1")));
    let s = snap(nodes(&["n1", "n2"]), pods);
    assert_eq!(run(&s).len(), 2);
    let got = run_with(
        &s,
        json!({"excludeOwnerKinds": ["Job"]}),
        Value::Null,
        Limits::default(),
    );
    assert_eq!(got, vec!["d/p0"]);
    let got = run_with(
        &s,
        json!({"excludeOwnerKinds": ["ReplicaSet", "Job"]}),
        Value::Null,
        Limits::default(),
    );
    assert!(got.is_empty());
}

#[test]
fn namespaces_include_and_exclude() {
    let mut pods = replicas("a", "rs", "p", "n1", 2);
    pods.extend(replicas("b", "rs", "p", "n1", 2));
    let s = snap(nodes(&["n1", "n2"]), pods);
    assert_eq!(run(&s), vec!["a/p0", "b/p0"]);
    let include = json!({"namespaces": {"include": ["a"]}});
    assert_eq!(
        run_with(&s, include, Value::Null, Limits::default()),
        vec!["a/p0"]
    );
    let exclude = json!({"namespaces": {"exclude": ["a"]}});
    assert_eq!(
        run_with(&s, exclude, Value::Null, Limits::default()),
        vec!["b/p0"]
    );
}

#[test]
fn different_images_are_not_duplicates() {
    let two = |name: &str, images: &[&str]| pod("d", name).node("n1").images(images);
    let cases: Vec<(&str, Vec<PodBuilder>, usize)> = vec![
        (
            "different images",
            vec![two("p1", &["foo"]), two("p2", &["bar"])],
            0,
        ),
        (
            "one shared image of two",
            vec![two("p1", &["foo"]), two("p2", &["foo", "bar"])],
            0,
        ),
        (
            "a multi-container pod does not match itself",
            vec![two("p1", &["a", "b"])],
            0,
        ),
        (
            "same images in another order",
            vec![two("p1", &["a", "b"]), two("p2", &["b", "a"])],
            1,
        ),
        (
            // Upstream: only p1 and p4 are real duplicates; the owner key includes images.
            "same owner, only some images equal",
            vec![
                two("p1", &["foo"]),
                two("p2", &["bar"]),
                two("p3", &["baz"]),
                two("p4", &["foo"]),
            ],
            1,
        ),
    ];
    for (name, pods, want) in cases {
        let s = snap(nodes(&["n1", "n2", "n3"]), pods);
        let got = run(&s);
        assert_eq!(got.len(), want, "{name}: {got:?}");
    }
}

#[test]
fn taints_and_selectors_decide_the_target_nodes() {
    // 4 on n1, 2 on n2: with n3 usable the average is 2 (evict 2), without it 3 (evict 1).
    let layout = |extra: fn(PodBuilder) -> PodBuilder, n3: Node| {
        let mut pods: Vec<PodBuilder> = spread(&[("n1", 4), ("n2", 2)]);
        pods = pods.into_iter().map(extra).collect();
        snap(
            vec![
                node("n1").label("pool", "a").build(),
                node("n2").label("pool", "a").build(),
                n3,
            ],
            pods,
        )
    };
    let plain = |b: PodBuilder| b;
    assert_eq!(
        run(&layout(plain, node("n3").label("pool", "a").build())).len(),
        2
    );
    let tainted = node("n3")
        .label("pool", "a")
        .taint("gpu", "true", TaintEffect::NoSchedule)
        .build();
    assert_eq!(run(&layout(plain, tainted.clone())).len(), 1);
    let tolerating = |b: PodBuilder| b.toleration("gpu", "", None);
    assert_eq!(run(&layout(tolerating, tainted)).len(), 2);
    let soft = node("n3")
        .label("pool", "a")
        .taint("x", "", TaintEffect::PreferNoSchedule)
        .build();
    assert_eq!(
        run(&layout(plain, soft)).len(),
        2,
        "PreferNoSchedule does not exclude a node"
    );
    let selecting = |b: PodBuilder| b.node_selector("pool", "a");
    assert_eq!(
        run(&layout(selecting, node("n3").label("pool", "b").build())).len(),
        1
    );
    assert_eq!(
        run(&layout(selecting, node("n3").label("pool", "a").build())).len(),
        2
    );
    let affinity = |b: PodBuilder| {
        b.affinity(Affinity {
            node_required: Some(vec![NodeSelectorTerm {
                match_expressions: vec![Requirement::DoesNotExist("control-plane".into())],
                match_fields: vec![],
            }]),
            ..Default::default()
        })
    };
    let control_plane = node("n3").label("control-plane", "").build();
    assert_eq!(run(&layout(affinity, control_plane)).len(), 1);
    assert_eq!(run(&layout(affinity, node("n3").build())).len(), 2);
    let cordoned = node("n3").unschedulable().build();
    assert_eq!(run(&layout(plain, cordoned.clone())).len(), 1);
    let tolerates_cordon =
        |b: PodBuilder| b.toleration(UNSCHEDULABLE_TAINT_KEY, "", Some(TaintEffect::NoSchedule));
    assert_eq!(run(&layout(tolerates_cordon, cordoned)).len(), 2);
}

#[test]
fn pods_that_fit_one_node_only_add_no_target() {
    // Six duplicates on n1: three pinned to n1 by hostname (one node: adds nothing, as
    // upstream), three selecting pool=a (n2 and n3). Two target nodes: average 3.
    let mut pods: Vec<PodBuilder> = (0..3)
        .map(|i| {
            pod("d", &format!("pinned{i}"))
                .node("n1")
                .node_selector("kubernetes.io/hostname", "n1")
        })
        .collect();
    pods.extend((0..3).map(|i| {
        pod("d", &format!("pool{i}"))
            .node("n1")
            .node_selector("pool", "a")
    }));
    let s = snap(
        vec![
            node("n1").label("pool", "b").build(),
            node("n2").label("pool", "a").build(),
            node("n3").label("pool", "a").build(),
        ],
        pods,
    );
    assert_eq!(run(&s).len(), 3);
}

#[test]
fn upstream_taint_and_selector_cases() {
    // Workers w1..w3 and three control-plane nodes; pods split between two kinds of
    // tolerations / selectors that exclude the control plane: (5,3,1) -> 2 evictions.
    let workers = |labelled: bool| -> Vec<Node> {
        let mut v: Vec<Node> = ["w1", "w2", "w3"]
            .iter()
            .map(|n| {
                if labelled {
                    node(n).label("worker", "k2").build()
                } else {
                    node(n).build()
                }
            })
            .collect();
        v.extend(["m1", "m2", "m3"].iter().map(|n| {
            node(n)
                .label("control-plane", "")
                .taint("control-plane", "", TaintEffect::NoSchedule)
                .build()
        }));
        v
    };
    let layout = |f: &dyn Fn(PodBuilder, usize) -> PodBuilder| -> Vec<PodBuilder> {
        let mut i = 0;
        let mut pods = Vec::new();
        for (node_name, count) in [("w1", 5), ("w2", 3), ("w3", 1)] {
            for _ in 0..count {
                pods.push(f(pod("d", &format!("p{i}")).node(node_name), i));
                i += 1;
            }
        }
        pods
    };
    let k = |i: usize| if i % 2 == 0 { "k1" } else { "k2" };
    let tolerations =
        |b: PodBuilder, i: usize| b.toleration(k(i), "v", Some(TaintEffect::NoSchedule));
    assert_eq!(run(&snap(workers(false), layout(&tolerations))).len(), 2);
    // As upstream, the workers are labelled worker=k2 only: the pods selecting k1 fit
    // nowhere and add no target node; those selecting k2 give the three workers.
    let selector = |b: PodBuilder, i: usize| b.node_selector("worker", k(i));
    assert_eq!(run(&snap(workers(true), layout(&selector))).len(), 2);
    // Nothing carries the selected label: no target node at all.
    assert_eq!(run(&snap(workers(false), layout(&selector))).len(), 0);
}

#[test]
fn a_single_target_node_means_no_eviction() {
    let pods = replicas("d", "rs", "p", "n1", 3)
        .into_iter()
        .map(|b| b.node_selector("kubernetes.io/hostname", "n1"))
        .collect();
    let s = snap(nodes(&["n1", "n2", "n3"]), pods);
    assert!(run(&s).is_empty());
    let s = snap(nodes(&["n1"]), replicas("d", "rs", "p", "n1", 3));
    assert!(run(&s).is_empty());
}

#[test]
fn protected_pods_are_neither_evicted_nor_counted() {
    let protected = vec![
        pod("d", "ds1").owner("DaemonSet", "ds").node("n1"),
        pod("d", "ds2").owner("DaemonSet", "ds").node("n1"),
        pod("d", "ls1")
            .owner("ReplicaSet", "ls")
            .local_storage()
            .node("n1"),
        pod("d", "ls2")
            .owner("ReplicaSet", "ls")
            .local_storage()
            .node("n1"),
        pod("d", "m1").owner("ReplicaSet", "m").mirror().node("n1"),
        pod("d", "m2").owner("ReplicaSet", "m").mirror().node("n1"),
        pod("d", "c1")
            .owner("ReplicaSet", "c")
            .priority(2_000_000_000)
            .node("n1"),
        pod("d", "c2")
            .owner("ReplicaSet", "c")
            .priority(2_000_000_000)
            .node("n1"),
        pod("d", "t1")
            .owner("ReplicaSet", "t")
            .terminating()
            .node("n1"),
        pod("d", "t2")
            .owner("ReplicaSet", "t")
            .terminating()
            .node("n1"),
        pod("d", "b1").bare().node("n1"),
        pod("d", "b2").bare().node("n1"),
    ];
    let s = snap(nodes(&["n1", "n2"]), protected);
    assert!(run(&s).is_empty());
    // Protected replicas of an owner do not count towards its average either: 3 plain
    // replicas and 3 with local storage on n1 of 3 nodes: average 1, 2 evictions.
    let mut pods = replicas("d", "rs", "p", "n1", 3);
    pods.extend((0..3).map(|i| {
        pod("d", &format!("ls{i}"))
            .owner("ReplicaSet", "rs")
            .local_storage()
            .node("n1")
    }));
    pods.extend((0..2).map(|i| {
        pod("d", &format!("done{i}"))
            .owner("ReplicaSet", "rs")
            .phase(crate::snapshot::Phase::Succeeded)
            .node("n1")
    }));
    let s = snap(nodes(&["n1", "n2", "n3"]), pods);
    assert_eq!(run(&s), vec!["d/p0", "d/p1"]);
}

#[test]
fn limits_end_the_node_or_the_plugin() {
    // 4 on n1 and 4 on n2 over 4 nodes: average 2, two evictions on each.
    let pods = spread(&[("n1", 4), ("n2", 4)]);
    let s = snap(nodes(&["n1", "n2", "n3", "n4"]), pods);
    assert_eq!(run(&s), vec!["d/n1-p0", "d/n1-p1", "d/n2-p0", "d/n2-p1"]);
    let per_node = Limits {
        per_node: Some(1),
        ..Default::default()
    };
    assert_eq!(
        run_with(&s, Value::Null, Value::Null, per_node),
        vec!["d/n1-p0", "d/n2-p0"]
    );
    let total = Limits {
        total: Some(3),
        ..Default::default()
    };
    assert_eq!(
        run_with(&s, Value::Null, Value::Null, total),
        vec!["d/n1-p0", "d/n1-p1", "d/n2-p0"]
    );
    let per_namespace = Limits {
        per_namespace: Some(1),
        ..Default::default()
    };
    assert_eq!(
        run_with(&s, Value::Null, Value::Null, per_namespace),
        vec!["d/n1-p0"]
    );
}

#[test]
fn disruption_budgets_block() {
    let pods: Vec<Pod> = replicas("d", "rs", "p", "n1", 3)
        .into_iter()
        .map(|b| b.label("app", "web").build())
        .collect();
    let with_budget = |allowed: i32| {
        ClusterSnapshot::build(SnapshotParts {
            nodes: nodes(&["n1", "n2", "n3"]),
            pods: pods.clone(),
            pdbs: vec![pdb("d", "web", "app", "web", allowed)],
            ..Default::default()
        })
    };
    assert!(run(&with_budget(0)).is_empty());
    assert_eq!(run(&with_budget(1)), vec!["d/p0"]);
    assert_eq!(run(&with_budget(5)).len(), 2);
}

#[test]
fn node_fit_drops_pods_that_fit_nowhere_else() {
    // Upstream: n2 has 200m; with 150m requested there, 100m replicas cannot move.
    let cluster = |other: PodBuilder| {
        let mut pods: Vec<PodBuilder> = replicas("d", "rs", "p", "n1", 3)
            .into_iter()
            .map(|b| b.cpu(100))
            .collect();
        pods.push(other.bare().node("n2"));
        snap(
            vec![node("n1").cpu(2000).build(), node("n2").cpu(200).build()],
            pods,
        )
    };
    let fit = json!({"nodeFit": true});
    let s = cluster(pod("o", "eater").cpu(150));
    assert!(run_with(&s, Value::Null, fit.clone(), Limits::default()).is_empty());
    assert_eq!(run(&s).len(), 1, "without nodeFit the pod is evicted");
    let s = cluster(pod("o", "saver").cpu(50));
    assert_eq!(run_with(&s, Value::Null, fit, Limits::default()).len(), 1);
}

#[test]
fn lower_priority_duplicates_go_first() {
    let pods = vec![
        pod("d", "a").node("n1").priority(100).cpu(10),
        pod("d", "b").node("n1").priority(10).cpu(10),
        pod("d", "c")
            .node("n1")
            .priority(100)
            .cpu(10)
            .prefer_no_eviction(),
        pod("d", "e").node("n1").priority(100),
    ];
    let s = snap(nodes(&["n1", "n2", "n3", "n4"]), pods);
    // Average 1: three go, lowest priority first, then BestEffort before Burstable; the
    // pod that prefers no eviction stays.
    assert_eq!(run(&s), vec!["d/b", "d/e", "d/a"]);
}

#[test]
fn invalid_args_name_the_field() {
    for (args, path) in [
        (
            json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}),
            "namespaces",
        ),
        (json!({"excludeOwnerKinds": "Job"}), "excludeOwnerKinds"),
        (json!({"excludeOwnerKind": ["Job"]}), "excludeOwnerKind"),
        (json!({"namespaces": {"only": ["a"]}}), "namespaces.only"),
    ] {
        let e = RemoveDuplicates::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e}");
    }
}

#[test]
fn args_default_when_absent() {
    for args in [
        Value::Null,
        json!({}),
        json!({"excludeOwnerKinds": null, "namespaces": null}),
    ] {
        let p = RemoveDuplicates::from_json(&args).unwrap();
        assert_eq!(p.args(), &RemoveDuplicatesArgs::default(), "{args}");
    }
    let p = RemoveDuplicates::from_json(
        &json!({"excludeOwnerKinds": ["Job"], "namespaces": {"include": ["default"]}}),
    )
    .unwrap();
    assert_eq!(p.args().exclude_owner_kinds, vec!["Job"]);
    assert!(p.args().namespaces.as_ref().unwrap().allows("default"));
}

#[test]
fn shuffled_input_gives_the_same_plan() {
    let mut pods: Vec<Pod> = Vec::new();
    for (owner, layout) in [("a", [5, 1, 0]), ("b", [0, 4, 2]), ("c", [3, 3, 0])] {
        for (ni, count) in layout.iter().enumerate() {
            for i in 0..*count {
                pods.push(
                    pod(
                        if owner == "c" { "other" } else { "d" },
                        &format!("{owner}-{ni}-{i}"),
                    )
                    .owner("ReplicaSet", owner)
                    .priority(i % 2)
                    .node(&format!("n{}", ni + 1))
                    .build(),
                );
            }
        }
    }
    let plan = |pods: Vec<Pod>, node_list: Vec<Node>| {
        let s = ClusterSnapshot::build(SnapshotParts {
            nodes: node_list,
            pods,
            ..Default::default()
        });
        run(&s)
    };
    let first = plan(pods.clone(), nodes(&["n1", "n2", "n3"]));
    assert!(!first.is_empty());
    for seed in 1..20usize {
        let mut shuffled = pods.clone();
        // A deterministic Fisher-Yates with a tiny LCG.
        let mut x = seed as u64;
        for i in (1..shuffled.len()).rev() {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            shuffled.swap(i, ((x >> 33) % (i as u64 + 1)) as usize);
        }
        let mut node_list = nodes(&["n1", "n2", "n3"]);
        node_list.rotate_left(seed % 3);
        assert_eq!(plan(shuffled, node_list), first, "seed {seed}");
    }
}

#[test]
fn pods_planned_earlier_are_not_seen() {
    let s = snap(
        nodes(&["n1", "n2", "n3"]),
        replicas("d", "rs", "p", "n1", 3),
    );
    let evictor = DefaultEvictor::default();
    let nodes = s.ready_nodes(&Selector::default());
    let mut state = PlanningState::new(&s, Limits::default());
    state
        .plan_eviction(PodId::new(0), "default", "Earlier", "r".into())
        .unwrap();
    let plugin = RemoveDuplicates::from_json(&Value::Null).unwrap();
    crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0);
    // p1 and p2 remain: average 1 over 3 nodes, one more eviction.
    let planned: Vec<String> = state
        .ledger()
        .evictions()
        .iter()
        .map(|e| s.pod(e.pod).key())
        .collect();
    assert_eq!(planned, vec!["d/p0", "d/p1"]);
    // And a plugin through the registry builds the same thing.
    let built = crate::plugins::REGISTRY
        .get(NAME)
        .unwrap()
        .build(&Value::Null);
    assert!(
        matches!(&built, Ok(crate::framework::Built::Strategy(p)) if p.name() == NAME),
        "{built:?}"
    );
}
