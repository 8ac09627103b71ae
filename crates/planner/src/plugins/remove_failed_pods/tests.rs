use super::*;
use crate::framework::{Limits, PlanningState};
use crate::plan;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pod, snapshot, PodBuilder, T0};
use crate::snapshot::{ClusterSnapshot, ContainerState, Node, Pod};
use serde_json::json;

/// Planning time: a day after the builders' creation time.
const NOW: i64 = T0 + 86_400;
const OLD: i64 = T0 - 10 * 86_400;

fn run_full(
    args: serde_json::Value,
    snap: &ClusterSnapshot,
    evictor: &DefaultEvictor,
    limits: Limits,
) -> Vec<String> {
    let plugin = RemoveFailedPods::from_json(&args).expect("valid args");
    crate::framework::testing::run_alone_names(&plugin, snap, evictor, limits, NOW)
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

/// Upstream's test node: 2 CPUs, 3000 bytes, 10 pods.
fn tnode(name: &str) -> Node {
    node(name).cpu(2000).memory(3000).pods(10).build()
}

/// A failed pod owned by a ReplicaSet, created long ago, on `node`.
fn failed(name: &str, node: &str) -> PodBuilder {
    pod("default", name)
        .node(node)
        .cpu(1)
        .memory(1)
        .created(OLD)
        .phase(Phase::Failed)
}

fn terminated(reason: &str) -> ContainerState {
    ContainerState::Terminated {
        reason: Some(reason.into()),
        exit_code: 1,
    }
}

fn waiting(reason: &str) -> ContainerState {
    ContainerState::Waiting {
        reason: Some(reason.into()),
    }
}

fn one_node(pods: Vec<Pod>) -> ClusterSnapshot {
    snapshot(vec![tnode("node1")], pods)
}

#[test]
fn failed_pods_are_evicted_and_others_stay() {
    assert!(run(json!({}), &one_node(vec![])).is_empty());
    let s = one_node(vec![
        failed("p1", "node1")
            .container_status(0, terminated("NodeAffinity"))
            .build(),
        failed("running", "node1").phase(Phase::Running).build(),
        failed("pending", "node1")
            .phase(Phase::Pending)
            .status_reason("NodeAffinity")
            .build(),
        failed("done", "node1").phase(Phase::Succeeded).build(),
        failed("unknown", "node1").phase(Phase::Unknown).build(),
    ]);
    assert_eq!(run(json!({}), &s), vec!["p1"]);
    // a matching reason does not make a pod failed
    assert_eq!(run(json!({"reasons": ["NodeAffinity"]}), &s), vec!["p1"]);
    assert_eq!(
        run(json!({"reasons": ["Running", "Succeeded"]}), &s),
        Vec::<String>::new()
    );
}

#[test]
fn pods_on_every_node() {
    let s = snapshot(
        vec![tnode("node1"), tnode("node2")],
        vec![
            failed("p1", "node1")
                .init_container_status(0, terminated("CreateContainerConfigError"))
                .build(),
            failed("p2", "node2")
                .init_container_status(0, terminated("CreateContainerConfigError"))
                .build(),
        ],
    );
    assert_eq!(
        run(json!({"includingInitContainers": true}), &s),
        vec!["p1", "p2"]
    );
}

#[test]
fn min_pod_lifetime_defaults_to_an_hour() {
    let s = one_node(vec![
        failed("young", "node1").created(NOW - 60).build(),
        failed("hour", "node1").created(NOW - 3_600).build(),
        failed("older", "node1").created(NOW - 3_601).build(),
    ]);
    // A pod exactly as old as the minimum is evicted: upstream keeps a failed pod only
    // while `podAgeSeconds < minPodLifetimeSeconds` (failedpods.go, v0.36.0).
    assert_eq!(run(json!({}), &s), vec!["older", "hour"]);
    assert_eq!(
        run(json!({"minPodLifetimeSeconds": null}), &s),
        vec!["older", "hour"]
    );
    assert_eq!(
        run(json!({"minPodLifetimeSeconds": 30}), &s),
        vec!["older", "hour", "young"]
    );
    assert_eq!(
        run(json!({"minPodLifetimeSeconds": 7_200}), &s),
        Vec::<String>::new()
    );
    let p = RemoveFailedPods::from_json(&json!(null)).unwrap();
    assert_eq!(p.args().min_pod_lifetime_seconds, Some(3_600));
    let p = RemoveFailedPods::from_json(&json!({"minPodLifetimeSeconds": 0})).unwrap();
    assert_eq!(p.args().min_pod_lifetime_seconds, Some(0));
}

#[test]
fn reasons_match_pod_and_container_reasons() {
    let s = one_node(vec![failed("p1", "node1")
        .container_status(0, terminated("CreateContainerConfigError"))
        .build()]);
    assert_eq!(
        run(json!({"reasons": ["CreateContainerConfigError"]}), &s),
        vec!["p1"]
    );
    assert_eq!(
        run(
            json!({"reasons": ["CreateContainerConfigError", "NodeAffinity"]}),
            &s
        ),
        vec!["p1"]
    );
    assert!(run(json!({"reasons": ["NodeAffinity"]}), &s).is_empty());
    // status reason, as upstream's Shutdown cases
    let s = one_node(vec![
        failed("p1", "node1").status_reason("Shutdown").build(),
        failed("p2", "node1").status_reason("Shutdown").build(),
        failed("p3", "node1").status_reason("Evicted").build(),
    ]);
    assert_eq!(run(json!({"reasons": ["Shutdown"]}), &s), vec!["p1", "p2"]);
    // waiting reasons of application containers count too (PodLifeTime's states)
    let s = one_node(vec![failed("p1", "node1")
        .container_status(4, waiting("CrashLoopBackOff"))
        .build()]);
    assert_eq!(
        run(json!({"reasons": ["CrashLoopBackOff"]}), &s),
        vec!["p1"]
    );
    // the phase is one of the states: "Failed" matches every failed pod
    let s = one_node(vec![
        failed("p1", "node1").build(),
        failed("p2", "node1").status_reason("NodeLost").build(),
    ]);
    assert_eq!(run(json!({"reasons": ["Failed"]}), &s), vec!["p1", "p2"]);
    // any reason is accepted, not only PodLifeTime's states
    assert!(run(json!({"reasons": ["ReasonDoesNotMatch"]}), &s).is_empty());
    let s = one_node(vec![failed("p1", "node1")
        .status_reason("NodeShutdown")
        .build()]);
    assert_eq!(run(json!({"reasons": ["NodeShutdown"]}), &s), vec!["p1"]);
}

#[test]
fn init_containers_only_when_included_and_ephemeral_never() {
    let s = one_node(vec![
        failed("init", "node1")
            .init_container_status(0, waiting("CreateContainerConfigError"))
            .build(),
        failed("eph", "node1")
            .ephemeral_container_status(waiting("CreateContainerConfigError"))
            .build(),
    ]);
    let reasons = json!({"reasons": ["CreateContainerConfigError"]});
    assert!(run(reasons.clone(), &s).is_empty());
    assert_eq!(
        run(
            json!({"reasons": ["CreateContainerConfigError"], "includingInitContainers": true}),
            &s
        ),
        vec!["init"]
    );
    let p = RemoveFailedPods::from_json(&reasons).unwrap();
    assert!(!p.delegate.args().including_ephemeral_containers);
}

#[test]
fn exit_codes() {
    let exited = |name: &str, code: i32| {
        failed(name, "node1").container_status(
            0,
            ContainerState::Terminated {
                reason: Some("Error".into()),
                exit_code: code,
            },
        )
    };
    let s = one_node(vec![
        exited("one", 1).build(),
        exited("two", 2).build(),
        failed("init", "node1")
            .init_container_status(
                0,
                ContainerState::Terminated {
                    reason: None,
                    exit_code: 1,
                },
            )
            .build(),
        failed("none", "node1").build(),
    ]);
    assert_eq!(run(json!({"exitCodes": [1]}), &s), vec!["one"]);
    assert_eq!(run(json!({"exitCodes": [1, 2]}), &s), vec!["one", "two"]);
    assert_eq!(
        run(
            json!({"exitCodes": [1], "includingInitContainers": true}),
            &s
        ),
        vec!["init", "one"]
    );
    // reasons and exit codes must both hold
    assert_eq!(
        run(json!({"exitCodes": [2], "reasons": ["Error"]}), &s),
        vec!["two"]
    );
    assert!(run(json!({"exitCodes": [3], "reasons": ["Error"]}), &s).is_empty());
}

#[test]
fn exclude_owner_kinds() {
    let s = one_node(vec![failed("p1", "node1")
        .init_container_status(0, terminated("NodeAffinity"))
        .build()]);
    let incl = |kinds: serde_json::Value| {
        run(
            json!({"includingInitContainers": true, "excludeOwnerKinds": kinds}),
            &s,
        )
    };
    assert!(incl(json!(["ReplicaSet"])).is_empty());
    assert_eq!(incl(json!(["DaemonSet"])), vec!["p1"]);
    assert_eq!(incl(json!(null)), vec!["p1"]);
    let s = one_node(vec![
        failed("job", "node1").owner("Job", "j").build(),
        failed("rs", "node1").build(),
    ]);
    assert_eq!(run(json!({"excludeOwnerKinds": ["Job"]}), &s), vec!["rs"]);
}

#[test]
fn protected_and_terminating_pods_stay() {
    let s = one_node(vec![
        failed("terminating", "node1").terminating().build(),
        failed("bare", "node1").bare().build(),
        failed("ds", "node1").owner("DaemonSet", "ds").build(),
        failed("mirror", "node1").mirror().build(),
        failed("critical", "node1").priority(2_000_000_000).build(),
        failed("local", "node1").local_storage().build(),
    ]);
    assert!(run(json!({}), &s).is_empty());
    // bare failed pods go once the FailedBarePods protection is off
    assert_eq!(
        run_ev(
            json!({}),
            json!({"podProtections": {"defaultDisabled": ["FailedBarePods", "DaemonSetPods"]}}),
            &s
        ),
        vec!["bare", "ds"]
    );
    assert_eq!(
        run_ev(json!({}), json!({"evictFailedBarePods": true}), &s),
        vec!["bare"]
    );
}

#[test]
fn node_fit_needs_room_elsewhere() {
    let fit = json!({"nodeFit": true});
    let pod = |n: &str| {
        failed(n, "node1")
            .container_status(0, terminated("CreateContainerConfigError"))
            .build()
    };
    // the other node is cordoned
    let cordoned = node("node2")
        .cpu(2000)
        .memory(2000)
        .pods(10)
        .unschedulable()
        .build();
    let s = snapshot(vec![tnode("node1"), cordoned], vec![pod("p1")]);
    assert!(run_ev(json!({}), fit.clone(), &s).is_empty());
    assert_eq!(run(json!({}), &s), vec!["p1"]);
    // the other node has no room
    let tiny = node("node2").cpu(0).memory(0).pods(10).build();
    let s = snapshot(vec![tnode("node1"), tiny], vec![pod("p1")]);
    assert!(run_ev(
        json!({"reasons": ["CreateContainerConfigError"]}),
        fit.clone(),
        &s
    )
    .is_empty());
    // a single node: nowhere to go
    let s = one_node(vec![failed("p1", "node1")
        .status_reason("Shutdown")
        .build()]);
    assert!(run_ev(json!({}), fit.clone(), &s).is_empty());
    // a free node lets it go
    let s = snapshot(vec![tnode("node1"), tnode("node2")], vec![pod("p1")]);
    assert_eq!(run_ev(json!({}), fit, &s), vec!["p1"]);
}

#[test]
fn namespaces_and_label_selector() {
    let s = one_node(vec![
        pod("a", "x")
            .node("node1")
            .created(OLD)
            .phase(Phase::Failed)
            .label("app", "web")
            .build(),
        pod("b", "y")
            .node("node1")
            .created(OLD)
            .phase(Phase::Failed)
            .build(),
    ]);
    assert_eq!(
        run(json!({"namespaces": {"include": ["a"]}}), &s),
        vec!["x"]
    );
    assert_eq!(
        run(json!({"namespaces": {"exclude": ["a"]}}), &s),
        vec!["y"]
    );
    assert_eq!(
        run(
            json!({"labelSelector": {"matchLabels": {"app": "web"}}}),
            &s
        ),
        vec!["x"]
    );
    assert_eq!(
        run(
            json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}}),
            &s
        ),
        vec!["y"]
    );
}

#[test]
fn oldest_first_and_limits() {
    let s = snapshot(
        vec![tnode("node1"), tnode("node2")],
        vec![
            failed("a", "node1").created(OLD + 30).build(),
            failed("b", "node1").created(OLD + 10).build(),
            failed("c", "node2").created(OLD + 20).build(),
            failed("d", "node2").created(OLD).build(),
        ],
    );
    assert_eq!(run(json!({}), &s), vec!["d", "b", "c", "a"]);
    let limited = |limits| run_full(json!({}), &s, &DefaultEvictor::default(), limits);
    assert_eq!(
        limited(Limits {
            total: Some(3),
            ..Default::default()
        }),
        vec!["d", "b", "c"]
    );
    assert_eq!(
        limited(Limits {
            per_node: Some(1),
            ..Default::default()
        }),
        vec!["d", "b"]
    );
    assert_eq!(
        limited(Limits {
            per_namespace: Some(2),
            ..Default::default()
        }),
        vec!["d", "b"]
    );
}

#[test]
fn failed_pods_free_no_resources() {
    let s = one_node(vec![
        pod("default", "running").node("node1").cpu(300).build(),
        failed("gone", "node1").cpu(500).build(),
    ]);
    let plugin = RemoveFailedPods::from_json(&json!({})).unwrap();
    let nodes = s.ready_nodes(&Default::default());
    let evictor = DefaultEvictor::default();
    let mut state = PlanningState::new(&s, Limits::default());
    assert_eq!(state.ledger().requested(NodeId::new(0)).cpu, 300);
    crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, NOW);
    assert_eq!(state.ledger().evictions().len(), 1);
    assert_eq!(state.ledger().evictions()[0].plugin, NAME);
    assert_eq!(
        state.ledger().requested(NodeId::new(0)).cpu,
        300,
        "the running pod still holds its CPU"
    );
    assert_eq!(state.ledger().requested(NodeId::new(0)).pods, 1);
    assert_eq!(
        state.ledger().evicted_from_node(NodeId::new(0)),
        1,
        "but the eviction counts"
    );
}

#[test]
fn delegates_with_converted_args() {
    let p = RemoveFailedPods::from_json(&json!({
        "namespaces": {"include": ["default"]},
        "labelSelector": {"matchLabels": {"app": "x"}},
        "excludeOwnerKinds": ["Job"],
        "minPodLifetimeSeconds": 60,
        "reasons": ["NodeAffinity"],
        "exitCodes": [1],
        "includingInitContainers": true,
    }))
    .unwrap();
    let lt = p.delegate.args();
    assert_eq!(
        lt.namespaces.as_ref().map(|n| n.include.clone()),
        Some(vec!["default".to_string()])
    );
    assert!(lt.label_selector.is_some());
    assert_eq!(
        lt.owner_kinds,
        Some(OwnerKinds {
            include: vec![],
            exclude: vec!["Job".into()]
        })
    );
    assert_eq!(lt.max_pod_life_time_seconds, Some(60));
    assert_eq!(lt.states, vec!["NodeAffinity"]);
    assert_eq!(lt.exit_codes, vec![1]);
    assert!(lt.including_init_containers);
    assert!(lt.conditions.is_empty());
    // no excluded kinds: no ownerKinds filter at all
    let p = RemoveFailedPods::from_json(&json!({"excludeOwnerKinds": []})).unwrap();
    assert_eq!(p.delegate.args().owner_kinds, None);
    assert_eq!(p.delegate.args().max_pod_life_time_seconds, Some(3_600));
}

#[test]
fn reasons_say_what_matched() {
    let s = one_node(vec![failed("p1", "node1")
        .container_status(0, terminated("NodeAffinity"))
        .build()]);
    let plugin =
        RemoveFailedPods::from_json(&json!({"reasons": ["NodeAffinity"], "exitCodes": [1]}))
            .unwrap();
    let plan = crate::framework::testing::run_alone(
        &plugin,
        &s,
        &DefaultEvictor::default(),
        Limits::default(),
        NOW,
    );
    assert_eq!(plan.len(), 1);
    assert_eq!(plan[0].plugin, NAME);
    assert_eq!(
        plan[0].reason,
        format!(
            "pod failed: age {}s >= minPodLifetimeSeconds 3600; container terminated with reason NodeAffinity; container exited with code 1",
            NOW - OLD
        )
    );
}

#[test]
fn args_validation_names_fields() {
    for (args, path) in [
        (
            json!({"namespaces": {"include": ["default"], "exclude": ["kube-system"]}}),
            "namespaces",
        ),
        (
            json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}),
            "labelSelector",
        ),
        (json!({"reasons": ["NodeAffinity", ""]}), "reasons[1]"),
        (json!({"reasons": "NodeAffinity"}), "reasons"),
        (
            json!({"minPodLifetimeSeconds": -1}),
            "minPodLifetimeSeconds",
        ),
        (json!({"exitCodes": ["1"]}), "exitCodes[0]"),
        (json!({"excludeOwnerKinds": "Job"}), "excludeOwnerKinds"),
        (
            json!({"includingInitContainers": "yes"}),
            "includingInitContainers",
        ),
        // PodLifeTime's spelling is not RemoveFailedPods'
        (
            json!({"maxPodLifeTimeSeconds": 60}),
            "maxPodLifeTimeSeconds",
        ),
        (json!({"states": ["Failed"]}), "states"),
    ] {
        let e = RemoveFailedPods::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e:?}");
    }
    for ok in [
        json!(null),
        json!({}),
        json!({"kind": "RemoveFailedPodsArgs", "apiVersion": "descheduler/v1alpha2"}),
        json!({"namespaces": {"include": ["default"]}, "excludeOwnerKinds": ["Job"],
               "reasons": ["ReasonDoesNotMatch"], "minPodLifetimeSeconds": 3600}),
        json!({"labelSelector": {"matchLabels": {"foo": "bar"}}}),
        json!({"reasons": null, "exitCodes": null, "excludeOwnerKinds": null,
               "includingInitContainers": null, "namespaces": null, "labelSelector": null}),
    ] {
        assert!(RemoveFailedPods::from_json(&ok).is_ok(), "{ok}");
    }
}

#[test]
fn runs_from_a_policy() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
profiles:
- name: failed
  pluginConfig:
  - name: RemoveFailedPods
    args:
      reasons: [NodeAffinity]
      exitCodes: [1]
      excludeOwnerKinds: [Job]
      minPodLifetimeSeconds: 3600
      includingInitContainers: true
  plugins: {deschedule: {enabled: [RemoveFailedPods]}}
"#,
    );
    // Two Ready nodes: upstream plans nothing on fewer.
    let s = snapshot(
        vec![tnode("node1"), tnode("node2")],
        vec![
            failed("init", "node1")
                .init_container_status(0, terminated("NodeAffinity"))
                .build(),
            failed("job", "node1")
                .owner("Job", "j")
                .container_status(0, terminated("NodeAffinity"))
                .build(),
            failed("young", "node1")
                .created(NOW - 600)
                .container_status(0, terminated("NodeAffinity"))
                .build(),
            failed("oom", "node1")
                .container_status(0, terminated("OOMKilled"))
                .build(),
        ],
    );
    let plan = plan::plan(&pipeline, &s, NOW).unwrap();
    let names: Vec<&str> = plan.evictions.iter().map(|e| &*s.pod(e.pod).name).collect();
    assert_eq!(names, vec!["init"]);
}
