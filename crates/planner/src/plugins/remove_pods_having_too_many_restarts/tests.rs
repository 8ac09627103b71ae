use super::*;
use crate::framework::{Limits, Pipeline, PlannedEviction};
use crate::plan;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pdb, pod, snapshot, NodeBuilder, PodBuilder};
use crate::snapshot::{
    ClusterSnapshot, ContainerState, Node, SnapshotParts, TaintEffect, SYSTEM_CRITICAL_PRIORITY,
};
use serde_json::json;

fn plan_full(
    args: &serde_json::Value,
    snap: &ClusterSnapshot,
    evictor: &DefaultEvictor,
    limits: Limits,
) -> Vec<PlannedEviction> {
    let plugin = RemovePodsHavingTooManyRestarts::from_json(args).expect("valid args");
    crate::framework::testing::run_alone(&plugin, snap, evictor, limits, 0)
}

fn names(plan: &[PlannedEviction], snap: &ClusterSnapshot) -> Vec<String> {
    plan.iter()
        .map(|e| snap.pod(e.pod).name.to_string())
        .collect()
}

fn run_full(
    args: serde_json::Value,
    snap: &ClusterSnapshot,
    evictor: &DefaultEvictor,
    limits: Limits,
) -> Vec<String> {
    names(&plan_full(&args, snap, evictor, limits), snap)
}

fn run(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
    run_full(args, snap, &DefaultEvictor::default(), Limits::default())
}

fn run_ev(
    args: serde_json::Value,
    evictor: serde_json::Value,
    snap: &ClusterSnapshot,
) -> Vec<String> {
    let ev = DefaultEvictor::from_json(&evictor).unwrap();
    run_full(args, snap, &ev, Limits::default())
}

fn limited(args: serde_json::Value, limits: Limits, snap: &ClusterSnapshot) -> Vec<String> {
    run_full(args, snap, &DefaultEvictor::default(), limits)
}

fn per_node(n: u32) -> Limits {
    Limits {
        per_node: Some(n),
        ..Default::default()
    }
}

/// Upstream's test node: 2 CPUs, 3000 bytes, 10 pods.
fn tnode(name: &str) -> NodeBuilder {
    node(name).cpu(2000).memory(3000).pods(10)
}

/// A pod on `node` whose single container restarted `restarts` times.
fn rpod(ns: &str, name: &str, node: &str, restarts: i32) -> PodBuilder {
    pod(ns, name)
        .node(node)
        .cpu(100)
        .container_status(restarts, ContainerState::Running)
}

fn waiting(reason: &str) -> ContainerState {
    ContainerState::Waiting {
        reason: Some(reason.into()),
    }
}

/// Upstream's `initPods`: pod-0..pod-9 on node1, pod-i with one init container of 5*i
/// restarts and two containers of 10*i each (25*i in all, 20*i without the init
/// container); pod-6 a DaemonSet pod, pod-7 with local storage, pod-8 a mirror pod.
/// `CPU-consumer-1` (150m) sits on node4 and `CPU-consumer-2` on node5 when those nodes
/// are in the test. `apply` changes each restarting pod, as upstream's `applyFunc`.
fn upstream_pods(
    nodes: &[&str],
    apply: impl Fn(&mut crate::snapshot::Pod),
) -> Vec<crate::snapshot::Pod> {
    let mut pods: Vec<_> = (0..=9)
        .map(|i| {
            let b = pod("default", &format!("pod-{i}"))
                .node("node1")
                .cpu(100)
                .init_container_status(5 * i, ContainerState::Running)
                .container_status(10 * i, ContainerState::Running)
                .container_status(10 * i, ContainerState::Running);
            let b = match i {
                6 => b.owner("DaemonSet", "ds"),
                7 => b.local_storage(),
                8 => b.mirror(),
                _ => b,
            };
            let mut p = b.build();
            apply(&mut p);
            p
        })
        .collect();
    for (consumer, on) in [("CPU-consumer-1", "node4"), ("CPU-consumer-2", "node5")] {
        if nodes.contains(&on) {
            pods.push(
                pod("default", consumer)
                    .node(on)
                    .cpu(150)
                    .memory(100)
                    .build(),
            );
        }
    }
    pods
}

fn upstream_node(name: &str) -> Node {
    match name {
        "node2" => tnode(name)
            .taint("hardware", "gpu", TaintEffect::NoSchedule)
            .build(),
        "node3" => tnode(name).unschedulable().build(),
        "node4" => node(name).cpu(200).memory(3000).pods(10).build(),
        _ => tnode(name).build(),
    }
}

/// Upstream's `TestRemovePodsHavingTooManyRestarts` table, with the pods it expects to
/// go (upstream checks only their number; the names follow our eviction order).
#[test]
fn upstream_table() {
    let none: fn(&mut crate::snapshot::Pod) = |_| {};
    let first_container_crashing: fn(&mut crate::snapshot::Pod) =
        |p| p.status_mut().containers[0].state = waiting("CrashLoopBackOff");
    let pending: fn(&mut crate::snapshot::Pod) = |p| p.phase = Phase::Pending;
    let running: fn(&mut crate::snapshot::Pod) = |p| p.phase = Phase::Running;
    let init_crashing: fn(&mut crate::snapshot::Pod) = |p| {
        p.status_mut().init_containers = vec![crate::snapshot::ContainerStatus {
            restart_count: 0,
            state: waiting("CrashLoopBackOff"),
        }]
    };
    let six = vec!["pod-1", "pod-2", "pod-3", "pod-4", "pod-5", "pod-9"];
    let three = vec!["pod-1", "pod-2", "pod-3"];
    let ns3 = Limits {
        per_namespace: Some(3),
        ..Default::default()
    };
    #[allow(clippy::type_complexity)]
    let cases: Vec<(
        &str,
        serde_json::Value,
        &[&str],
        Limits,
        bool,
        fn(&mut crate::snapshot::Pod),
        Vec<&str>,
    )> = vec![
        (
            "all pods under the threshold",
            json!({"podRestartThreshold": 10000, "includingInitContainers": true}),
            &["node1"],
            Limits::default(),
            false,
            none,
            vec![],
        ),
        (
            "some pods above the threshold",
            json!({"podRestartThreshold": 1, "includingInitContainers": true}),
            &["node1"],
            Limits::default(),
            false,
            none,
            six.clone(),
        ),
        (
            "threshold 25 with init containers: pod-1 exactly at it goes",
            json!({"podRestartThreshold": 25, "includingInitContainers": true}),
            &["node1"],
            Limits::default(),
            false,
            none,
            six.clone(),
        ),
        (
            "threshold 25 without init containers: pod-1 has 20",
            json!({"podRestartThreshold": 25, "includingInitContainers": false}),
            &["node1"],
            Limits::default(),
            false,
            none,
            vec!["pod-2", "pod-3", "pod-4", "pod-5", "pod-9"],
        ),
        (
            "threshold 20 with init containers",
            json!({"podRestartThreshold": 20, "includingInitContainers": true}),
            &["node1"],
            Limits::default(),
            false,
            none,
            six.clone(),
        ),
        (
            "threshold 20 without init containers: pod-1 exactly at it goes",
            json!({"podRestartThreshold": 20, "includingInitContainers": false}),
            &["node1"],
            Limits::default(),
            false,
            none,
            six.clone(),
        ),
        (
            "threshold 5*25+1 with init containers: only pod-9 (6..8 protected)",
            json!({"podRestartThreshold": 126, "includingInitContainers": true}),
            &["node1"],
            Limits::default(),
            false,
            none,
            vec!["pod-9"],
        ),
        (
            "threshold 5*20+1 without init containers: only pod-9",
            json!({"podRestartThreshold": 101, "includingInitContainers": false}),
            &["node1"],
            Limits::default(),
            false,
            none,
            vec!["pod-9"],
        ),
        (
            "maxPodsToEvictPerNode=3",
            json!({"podRestartThreshold": 1, "includingInitContainers": true}),
            &["node1"],
            per_node(3),
            false,
            none,
            three.clone(),
        ),
        (
            "maxNoOfPodsToEvictPerNamespace=3",
            json!({"podRestartThreshold": 1, "includingInitContainers": true}),
            &["node1"],
            ns3,
            false,
            none,
            three.clone(),
        ),
        (
            "nodeFit: the only other node is tainted",
            json!({"podRestartThreshold": 1, "includingInitContainers": true}),
            &["node1", "node2"],
            per_node(3),
            true,
            none,
            vec![],
        ),
        (
            "nodeFit: the only other node is unschedulable",
            json!({"podRestartThreshold": 1, "includingInitContainers": true}),
            &["node1", "node3"],
            per_node(3),
            true,
            none,
            vec![],
        ),
        (
            "nodeFit: the only other node lacks CPU",
            json!({"podRestartThreshold": 1, "includingInitContainers": true}),
            &["node1", "node4"],
            per_node(3),
            true,
            none,
            vec![],
        ),
        (
            "nodeFit: the only other node has room",
            json!({"podRestartThreshold": 1, "includingInitContainers": true}),
            &["node1", "node5"],
            per_node(3),
            true,
            none,
            three.clone(),
        ),
        (
            "states=CrashLoopBackOff, pods crash looping",
            json!({"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]}),
            &["node1", "node5"],
            per_node(3),
            true,
            first_container_crashing,
            three.clone(),
        ),
        (
            "states=CrashLoopBackOff, no pod crash looping",
            json!({"podRestartThreshold": 1, "states": ["CrashLoopBackOff"]}),
            &["node1", "node5"],
            per_node(3),
            true,
            none,
            vec![],
        ),
        (
            "states=Running, pods running",
            json!({"podRestartThreshold": 1, "states": ["Running"]}),
            &["node1"],
            per_node(3),
            false,
            running,
            three.clone(),
        ),
        (
            "states=Running, pods pending",
            json!({"podRestartThreshold": 1, "states": ["Running"]}),
            &["node1"],
            per_node(3),
            false,
            pending,
            vec![],
        ),
        (
            "states=CrashLoopBackOff, init container crash looping, init containers included",
            json!({"podRestartThreshold": 1, "states": ["CrashLoopBackOff"], "includingInitContainers": true}),
            &["node1"],
            per_node(3),
            false,
            init_crashing,
            three.clone(),
        ),
        (
            "states=CrashLoopBackOff, init container crash looping, init containers not included",
            json!({"podRestartThreshold": 1, "states": ["CrashLoopBackOff"], "includingInitContainers": false}),
            &["node1"],
            per_node(3),
            false,
            init_crashing,
            vec![],
        ),
    ];
    for (what, args, node_names, limits, node_fit, apply, want) in cases {
        let nodes = node_names.iter().map(|n| upstream_node(n)).collect();
        let s = snapshot(nodes, upstream_pods(node_names, apply));
        let ev = DefaultEvictor::from_json(&json!({"nodeFit": node_fit})).unwrap();
        assert_eq!(run_full(args, &s, &ev, limits), want, "{what}");
    }
}

#[test]
fn threshold_below_at_and_above() {
    let s = snapshot(
        vec![tnode("n1").build()],
        vec![
            rpod("default", "below", "n1", 4).build(),
            rpod("default", "at", "n1", 5).build(),
            rpod("default", "above", "n1", 6).build(),
            // restarts are summed over the containers: 2 + 3
            pod("default", "summed")
                .node("n1")
                .container_status(2, ContainerState::Running)
                .container_status(3, waiting("CrashLoopBackOff"))
                .build(),
        ],
    );
    assert_eq!(
        run(json!({"podRestartThreshold": 5}), &s),
        vec!["summed", "above", "at"]
    );
    assert_eq!(run(json!({"podRestartThreshold": 6}), &s), vec!["above"]);
    assert!(run(json!({"podRestartThreshold": 7}), &s).is_empty());
}

#[test]
fn init_containers_count_only_when_included() {
    let s = snapshot(
        vec![tnode("n1").build()],
        vec![
            pod("default", "init-heavy")
                .node("n1")
                .init_container_status(4, ContainerState::Running)
                .container_status(1, ContainerState::Running)
                .build(),
            // ephemeral containers never count
            pod("default", "ephemeral")
                .node("n1")
                .container_status(1, ContainerState::Running)
                .ephemeral_container_status(ContainerState::Running)
                .build(),
        ],
    );
    assert!(run(json!({"podRestartThreshold": 5}), &s).is_empty());
    assert_eq!(
        run(
            json!({"podRestartThreshold": 5, "includingInitContainers": true}),
            &s
        ),
        vec!["init-heavy"]
    );
    assert_eq!(
        run(
            json!({"podRestartThreshold": 1, "includingInitContainers": null}),
            &s
        ),
        vec!["ephemeral", "init-heavy"]
    );
}

#[test]
fn states_match_phase_or_waiting_reason() {
    let s = snapshot(
        vec![tnode("n1").build()],
        vec![
            rpod("default", "running", "n1", 3).build(),
            rpod("default", "pending", "n1", 3)
                .phase(Phase::Pending)
                .build(),
            pod("default", "crashing")
                .node("n1")
                .phase(Phase::Pending)
                .container_status(1, ContainerState::Running)
                .container_status(2, waiting("CrashLoopBackOff"))
                .build(),
            pod("default", "image-pull")
                .node("n1")
                .phase(Phase::Pending)
                .container_status(3, waiting("ImagePullBackOff"))
                .build(),
            // a terminated container's reason is not a waiting reason
            pod("default", "terminated")
                .node("n1")
                .phase(Phase::Pending)
                .container_status(
                    3,
                    ContainerState::Terminated {
                        reason: Some("CrashLoopBackOff".into()),
                        exit_code: 1,
                    },
                )
                .build(),
            pod("default", "init-crashing")
                .node("n1")
                .phase(Phase::Pending)
                .init_container_status(0, waiting("CrashLoopBackOff"))
                .container_status(3, ContainerState::Unknown)
                .build(),
        ],
    );
    let all =
        |states: serde_json::Value| run(json!({"podRestartThreshold": 3, "states": states}), &s);
    assert_eq!(all(json!(["Running"])), vec!["running"]);
    assert_eq!(all(json!(["CrashLoopBackOff"])), vec!["crashing"]);
    assert_eq!(
        all(json!(["Running", "CrashLoopBackOff"])),
        vec!["crashing", "running"]
    );
    // BestEffort pods first, then Burstable, each by name
    let everything = vec![
        "crashing",
        "image-pull",
        "init-crashing",
        "terminated",
        "pending",
        "running",
    ];
    assert_eq!(all(json!([])), everything);
    assert_eq!(all(json!(null)), everything);
    assert_eq!(
        run(
            json!({"podRestartThreshold": 3, "states": ["CrashLoopBackOff"], "includingInitContainers": true}),
            &s
        ),
        vec!["crashing", "init-crashing"]
    );
}

#[test]
fn namespaces_and_label_selector() {
    let s = snapshot(
        vec![tnode("n1").build()],
        vec![
            rpod("a", "x", "n1", 5).label("tier", "web").build(),
            rpod("b", "y", "n1", 5).label("tier", "db").build(),
            rpod("c", "z", "n1", 5).build(),
        ],
    );
    let args = |extra: serde_json::Value| {
        let mut a = json!({"podRestartThreshold": 5});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    assert_eq!(
        run(args(json!({"namespaces": {"include": ["a", "c"]}})), &s),
        vec!["x", "z"]
    );
    assert_eq!(
        run(args(json!({"namespaces": {"exclude": ["a"]}})), &s),
        vec!["y", "z"]
    );
    assert_eq!(
        run(
            args(json!({"labelSelector": {"matchLabels": {"tier": "db"}}})),
            &s
        ),
        vec!["y"]
    );
    assert_eq!(
        run(
            args(json!({
                "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                "namespaces": {"exclude": ["b"]}
            })),
            &s
        ),
        vec!["x"]
    );
}

#[test]
fn protected_pods_are_not_planned() {
    let s = snapshot(
        vec![tnode("n1").build()],
        vec![
            rpod("default", "ds", "n1", 9)
                .owner("DaemonSet", "ds")
                .build(),
            rpod("default", "mirror", "n1", 9).mirror().build(),
            rpod("default", "static", "n1", 9).static_pod().build(),
            rpod("default", "critical", "n1", 9)
                .priority(SYSTEM_CRITICAL_PRIORITY)
                .build(),
            rpod("default", "local", "n1", 9).local_storage().build(),
            rpod("default", "terminating", "n1", 9)
                .terminating()
                .build(),
            rpod("default", "bare", "n1", 9).bare().build(),
        ],
    );
    let args = json!({"podRestartThreshold": 1});
    assert!(run(args.clone(), &s).is_empty());
    assert_eq!(
        run_ev(args.clone(), json!({"evictSystemCriticalPods": true}), &s),
        vec!["critical"]
    );
    assert_eq!(
        run_ev(args.clone(), json!({"evictLocalStoragePods": true}), &s),
        vec!["local"]
    );
    assert_eq!(
        run_ev(args, json!({"evictDaemonSetPods": true}), &s),
        vec!["ds"]
    );
}

#[test]
fn finished_pods_are_considered_as_upstream() {
    // upstream lists every pod of the node (ListAllPodsOnANode), whatever its phase
    let s = snapshot(
        vec![tnode("n1").build()],
        vec![
            rpod("default", "failed", "n1", 5)
                .phase(Phase::Failed)
                .build(),
            rpod("default", "succeeded", "n1", 5)
                .phase(Phase::Succeeded)
                .build(),
            rpod("default", "failed-bare", "n1", 5)
                .phase(Phase::Failed)
                .bare()
                .build(),
        ],
    );
    assert_eq!(
        run(json!({"podRestartThreshold": 5}), &s),
        vec!["failed", "succeeded"]
    );
    // but not with states: Running
    assert!(run(json!({"podRestartThreshold": 5, "states": ["Running"]}), &s).is_empty());
}

fn two_nodes() -> ClusterSnapshot {
    snapshot(
        vec![tnode("n1").build(), tnode("n2").build()],
        vec![
            rpod("x", "a1", "n1", 5).build(),
            rpod("x", "a2", "n1", 5).build(),
            rpod("y", "a3", "n1", 5).build(),
            rpod("y", "b1", "n2", 5).build(),
        ],
    )
}

#[test]
fn node_limit_ends_the_node() {
    let s = two_nodes();
    let args = json!({"podRestartThreshold": 5});
    assert_eq!(
        limited(args.clone(), Limits::default(), &s),
        vec!["a1", "a2", "a3", "b1"]
    );
    assert_eq!(limited(args.clone(), per_node(1), &s), vec!["a1", "b1"]);
    assert_eq!(limited(args, per_node(2), &s), vec!["a1", "a2", "b1"]);
}

#[test]
fn total_limit_ends_the_plugin() {
    let s = two_nodes();
    let args = json!({"podRestartThreshold": 5});
    let total = |t| Limits {
        total: Some(t),
        ..Default::default()
    };
    assert_eq!(limited(args.clone(), total(2), &s), vec!["a1", "a2"]);
    assert_eq!(limited(args.clone(), total(3), &s), vec!["a1", "a2", "a3"]);
    let both = Limits {
        per_node: Some(1),
        total: Some(1),
        ..Default::default()
    };
    assert_eq!(limited(args, both, &s), vec!["a1"]);
}

#[test]
fn namespace_limit_and_budgets_skip_the_pod() {
    let s = two_nodes();
    let args = json!({"podRestartThreshold": 5});
    let ns1 = Limits {
        per_namespace: Some(1),
        ..Default::default()
    };
    // a2 is skipped (namespace x spent), a3 in namespace y still goes, then b1 is skipped
    assert_eq!(limited(args.clone(), ns1, &s), vec!["a1", "a3"]);
    let s = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![tnode("n1").build()],
        pods: vec![
            rpod("default", "guarded", "n1", 5)
                .label("app", "guarded")
                .build(),
            rpod("default", "z-free", "n1", 5).build(),
        ],
        pdbs: vec![pdb("default", "guard", "app", "guarded", 0)],
        ..Default::default()
    });
    assert_eq!(run(args, &s), vec!["z-free"]);
}

#[test]
fn node_fit_needs_another_node_with_room() {
    let args = json!({"podRestartThreshold": 5});
    let fit = json!({"nodeFit": true});
    // the only other node is too small for the pod
    let s = snapshot(
        vec![
            tnode("n1").build(),
            node("n2").cpu(50).memory(3000).pods(10).build(),
        ],
        vec![rpod("default", "a", "n1", 5).build()],
    );
    assert_eq!(run(args.clone(), &s), vec!["a"]);
    assert!(run_ev(args.clone(), fit.clone(), &s).is_empty());
    // nodeFit is checked against the plan so far, placements included: x (on a) fits b;
    // once x is planned away its replacement is placed (back on a, the scheduler's pick
    // among equally full nodes), so y (on b) still finds no room on a
    let x = rpod("default", "x", "a", 5).build();
    let y = rpod("default", "y", "b", 5).build();
    let nodes = || {
        vec![
            node("a").cpu(100).memory(3000).pods(10).build(),
            node("b").cpu(200).memory(3000).pods(10).build(),
        ]
    };
    let s = snapshot(nodes(), vec![x.clone(), y.clone()]);
    assert_eq!(run_ev(args.clone(), fit.clone(), &s), vec!["x"]);
    let mut calm_x = x;
    calm_x.status_mut().containers[0].restart_count = 0;
    let s = snapshot(nodes(), vec![calm_x, y]);
    assert!(run_ev(args, fit, &s).is_empty());
}

#[test]
fn eviction_order_is_deterministic() {
    let pods = vec![
        rpod("default", "important", "n1", 5).priority(1000).build(),
        rpod("default", "cheap", "n1", 5).priority(-10).build(),
        rpod("default", "guaranteed", "n1", 5)
            .qos(crate::snapshot::Qos::Guaranteed)
            .build(),
        pod("default", "best-effort")
            .node("n1")
            .container_status(5, ContainerState::Running)
            .build(),
        rpod("default", "burstable", "n1", 5).build(),
    ];
    let forward = snapshot(vec![tnode("n1").build()], pods.clone());
    let mut reversed_pods = pods;
    reversed_pods.reverse();
    let reversed = snapshot(vec![tnode("n1").build()], reversed_pods);
    let args = json!({"podRestartThreshold": 5});
    let want = vec![
        "best-effort",
        "burstable",
        "guaranteed",
        "cheap",
        "important",
    ];
    assert_eq!(run(args.clone(), &forward), want);
    assert_eq!(run(args.clone(), &reversed), want);
    // a limit cuts at the least important pods
    assert_eq!(
        limited(args.clone(), per_node(2), &reversed),
        vec!["best-effort", "burstable"]
    );
    // nodes go in the order given (name order from run_alone)
    let s = snapshot(
        vec![tnode("b").build(), tnode("a").build()],
        vec![
            rpod("default", "on-b", "b", 5).build(),
            rpod("default", "on-a", "a", 5).build(),
        ],
    );
    assert_eq!(run(args, &s), vec!["on-a", "on-b"]);
}

#[test]
fn reasons_give_restarts_threshold_and_state() {
    let s = snapshot(
        vec![tnode("n1").build()],
        vec![pod("default", "x")
            .node("n1")
            .init_container_status(2, ContainerState::Running)
            .container_status(5, waiting("CrashLoopBackOff"))
            .build()],
    );
    let ev = DefaultEvictor::default();
    let plan = plan_full(
        &json!({"podRestartThreshold": 5}),
        &s,
        &ev,
        Limits::default(),
    );
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].plugin, NAME);
    assert_eq!(
        plan[0].reason,
        "pod has 5 container restarts, at or above the threshold of 5"
    );
    let plan = plan_full(
        &json!({"podRestartThreshold": 6, "includingInitContainers": true, "states": ["Running", "CrashLoopBackOff"]}),
        &s,
        &ev,
        Limits::default(),
    );
    assert_eq!(
        plan[0].reason,
        "pod has 7 container restarts (init containers included), at or above the threshold of 6, and is in state Running"
    );
}

#[test]
fn args_validation_names_fields() {
    for (args, path, says) in [
        (json!({}), "podRestartThreshold", "at least 1"),
        (json!(null), "podRestartThreshold", "at least 1"),
        (
            json!({"podRestartThreshold": 0}),
            "podRestartThreshold",
            "invalid PodsHavingTooManyRestarts threshold",
        ),
        (
            json!({"podRestartThreshold": -3}),
            "podRestartThreshold",
            "at least 1",
        ),
        (
            json!({"podRestartThreshold": 1, "states": ["Failed"]}),
            "states[0]",
            "states must be one of [CrashLoopBackOff Running]",
        ),
        (
            json!({"podRestartThreshold": 1, "states": ["Running", "crashloopbackoff"]}),
            "states[1]",
            "CrashLoopBackOff",
        ),
        // upstream's order: the threshold is checked before the states
        (
            json!({"podRestartThreshold": 0, "states": ["Failed"]}),
            "podRestartThreshold",
            "threshold",
        ),
        (
            json!({"podRestartThreshold": 1, "namespaces": {"include": ["a"], "exclude": ["b"]}}),
            "namespaces",
            "only one of include and exclude",
        ),
        (
            json!({"podRestartThreshold": 1, "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
            "labelSelector",
            "failed to get label selectors",
        ),
        (
            json!({"podRestartThreshold": "5"}),
            "podRestartThreshold",
            "",
        ),
        (
            json!({"podRestartThreshold": 3_000_000_000u64}),
            "podRestartThreshold",
            "",
        ),
        (
            json!({"podRestartThreshold": 1, "includingInitContainers": "yes"}),
            "includingInitContainers",
            "",
        ),
        (
            json!({"podRestartThreshold": 1, "states": "Running"}),
            "states",
            "",
        ),
        (
            json!({"podRestartThreshold": 1, "maxRestarts": 3}),
            "maxRestarts",
            "",
        ),
    ] {
        let e = RemovePodsHavingTooManyRestarts::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e:?}");
        assert!(e.message.contains(says), "{args}: {e:?}");
    }
    for ok in [
        json!({"podRestartThreshold": 1}),
        json!({"podRestartThreshold": 1, "states": ["Running"]}),
        json!({"podRestartThreshold": 1, "states": ["CrashLoopBackOff", "Running", "Running"]}),
        json!({
            "kind": "RemovePodsHavingTooManyRestartsArgs",
            "apiVersion": "descheduler/v1alpha2",
            "podRestartThreshold": 100,
            "includingInitContainers": true,
            "states": null,
            "namespaces": {"exclude": ["kube-system"]},
            "labelSelector": {"matchLabels": {"app": "web"}}
        }),
    ] {
        let plugin = RemovePodsHavingTooManyRestarts::from_json(&ok);
        assert!(plugin.is_ok(), "{ok}: {plugin:?}");
    }
    let p = RemovePodsHavingTooManyRestarts::from_json(
        &json!({"podRestartThreshold": 7, "includingInitContainers": true}),
    )
    .unwrap();
    assert_eq!(p.args().pod_restart_threshold, 7);
    assert!(p.args().including_init_containers);
    assert!(p.args().states.is_empty());
}

#[test]
fn runs_from_a_policy() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
profiles:
- name: restarts
  pluginConfig:
  - name: RemovePodsHavingTooManyRestarts
    args:
      podRestartThreshold: 10
      includingInitContainers: true
      states: [CrashLoopBackOff]
  plugins: {deschedule: {enabled: [RemovePodsHavingTooManyRestarts]}}
"#,
    );
    // Two Ready nodes: upstream plans nothing on fewer.
    let s = snapshot(
        vec![tnode("n1").build(), tnode("n2").build()],
        vec![
            pod("default", "a")
                .node("n1")
                .init_container_status(4, ContainerState::Running)
                .container_status(6, waiting("CrashLoopBackOff"))
                .build(),
            pod("default", "b")
                .node("n1")
                .container_status(20, ContainerState::Running)
                .build(),
            pod("default", "c")
                .node("n1")
                .container_status(9, waiting("CrashLoopBackOff"))
                .build(),
        ],
    );
    let plan = plan::plan(&pipeline, &s, 0).unwrap();
    let names: Vec<&str> = plan.evictions.iter().map(|e| &*s.pod(e.pod).name).collect();
    assert_eq!(names, vec!["a"]);

    let bad = crate::policy::Policy::from_yaml(
        "p.yaml",
        r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: restarts
  pluginConfig:
  - name: RemovePodsHavingTooManyRestarts
    args:
      podRestartThreshold: 10
      states: [Running, Failed]
  plugins: {deschedule: {enabled: [RemovePodsHavingTooManyRestarts]}}
"#,
        &crate::plugins::REGISTRY,
    )
    .unwrap();
    let e = Pipeline::build(&bad, "p.yaml", &crate::plugins::REGISTRY).unwrap_err();
    let shown = e.to_string();
    assert!(shown.contains("states[1]"), "{shown}");
}
