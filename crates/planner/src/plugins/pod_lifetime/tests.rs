use super::*;
use crate::framework::Limits;
use crate::plan;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pdb, pod, snapshot, PodBuilder, T0};
use crate::snapshot::{ClusterSnapshot, ContainerState, Pod, SnapshotParts};
use serde_json::json;
use ConditionStatus::{False, True};

/// Planning time: a day after the builders' creation time.
const NOW: i64 = T0 + 86_400;
/// Upstream's "older" pods: created long before.
const OLD: i64 = T0 - 10 * 86_400;
/// Two hours and one minute before NOW (upstream's old and new transition times).
const OLD_TRANSITION: i64 = NOW - 7_200;
const NEW_TRANSITION: i64 = NOW - 60;

fn run_full(
    args: serde_json::Value,
    snap: &ClusterSnapshot,
    evictor: &DefaultEvictor,
    limits: Limits,
) -> Vec<String> {
    let plugin = PodLifeTime::from_json(&args).expect("valid args");
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

fn limited(args: serde_json::Value, limits: Limits, snap: &ClusterSnapshot) -> Vec<String> {
    run_full(args, snap, &DefaultEvictor::default(), limits)
}

fn one_node(pods: Vec<Pod>) -> ClusterSnapshot {
    snapshot(vec![node("n1").build()], pods)
}

/// A pod on n1 owned by a ReplicaSet, created at OLD.
fn old(name: &str) -> PodBuilder {
    pod("default", name).node("n1").cpu(100).created(OLD)
}

fn waiting(reason: &str) -> ContainerState {
    ContainerState::Waiting {
        reason: Some(reason.into()),
    }
}

fn terminated(reason: Option<&str>, exit_code: i32) -> ContainerState {
    ContainerState::Terminated {
        reason: reason.map(Into::into),
        exit_code,
    }
}

fn max600() -> serde_json::Value {
    json!({"maxPodLifeTimeSeconds": 600})
}

fn with(mut base: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[test]
fn age_threshold_is_strict() {
    let s = one_node(vec![
        old("p2").build(),
        pod("default", "p1").node("n1").created(NOW).build(),
        pod("default", "p6").node("n1").created(NOW - 605).build(),
        pod("default", "p8").node("n1").created(NOW - 595).build(),
        pod("default", "exact")
            .node("n1")
            .created(NOW - 600)
            .build(),
        pod("default", "future")
            .node("n1")
            .created(NOW + 60)
            .build(),
    ]);
    assert_eq!(run(max600(), &s), vec!["p2", "p6"]);
    // zero: every pod older than a second, but not one created right now
    assert_eq!(
        run(json!({"maxPodLifeTimeSeconds": 0}), &s),
        vec!["p2", "p6", "exact", "p8"]
    );
}

#[test]
fn states_match_the_phase() {
    let s = one_node(vec![
        old("p9").phase(Phase::Pending).build(),
        old("p10").build(),
        old("done").phase(Phase::Succeeded).build(),
        old("failed").phase(Phase::Failed).build(),
        old("lost").phase(Phase::Unknown).build(),
    ]);
    let st = |states: serde_json::Value| run(with(max600(), json!({ "states": states })), &s);
    assert_eq!(st(json!(["Pending"])), vec!["p9"]);
    assert_eq!(st(json!(["Running"])), vec!["p10"]);
    assert_eq!(st(json!(["Succeeded"])), vec!["done"]);
    assert_eq!(st(json!(["Failed"])), vec!["failed"]);
    assert_eq!(st(json!(["Unknown"])), vec!["lost"]);
    // entries OR together
    assert_eq!(st(json!(["Succeeded", "Failed"])), vec!["done", "failed"]);
    // states alone, without an age
    assert_eq!(run(json!({"states": ["Pending"]}), &s), vec!["p9"]);
}

#[test]
fn states_match_the_pod_status_reason() {
    for reason in [
        "NodeLost",
        "NodeAffinity",
        "Shutdown",
        "UnexpectedAdmissionError",
    ] {
        let s = one_node(vec![
            old("p9")
                .phase(Phase::Pending)
                .status_reason(reason)
                .build(),
            old("other")
                .phase(Phase::Pending)
                .status_reason("Evicted")
                .build(),
        ]);
        assert_eq!(
            run(with(max600(), json!({"states": [reason]})), &s),
            vec!["p9"],
            "{reason}"
        );
    }
}

#[test]
fn states_match_container_waiting_and_terminated_reasons() {
    for reason in [
        "ContainerCreating",
        "PodInitializing",
        "ImagePullBackOff",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "ErrImagePull",
        "CreateContainerError",
        "InvalidImageName",
    ] {
        let s = one_node(vec![
            old("stuck")
                .phase(Phase::Pending)
                .container_status(0, ContainerState::Running)
                .container_status(3, waiting(reason))
                .build(),
            old("p9").phase(Phase::Pending).build(),
        ]);
        assert_eq!(
            run(with(max600(), json!({"states": [reason]})), &s),
            vec!["stuck"],
            "{reason}"
        );
    }
    // a different waiting reason does not match
    let s = one_node(vec![old("p9")
        .phase(Phase::Pending)
        .container_status(0, waiting("ImagePullBackOff"))
        .build()]);
    assert!(run(with(max600(), json!({"states": ["ContainerCreating"]})), &s).is_empty());
    // terminated reasons too (upstream's newest behaviour)
    for reason in [
        "OOMKilled",
        "Error",
        "Completed",
        "DeadlineExceeded",
        "Evicted",
        "ContainerCannotRun",
        "StartError",
        "NodeAffinity",
    ] {
        let s = one_node(vec![
            old("p1")
                .phase(Phase::Failed)
                .container_status(0, terminated(Some(reason), 137))
                .build(),
            old("p2").phase(Phase::Failed).build(),
        ]);
        assert_eq!(run(json!({"states": [reason]}), &s), vec!["p1"], "{reason}");
    }
    // upstream's case: Failed or NodeAffinity
    let s = one_node(vec![old("p1")
        .phase(Phase::Failed)
        .container_status(0, terminated(Some("NodeAffinity"), 0))
        .build()]);
    assert_eq!(
        run(json!({"states": ["Failed", "NodeAffinity"]}), &s),
        vec!["p1"]
    );
}

#[test]
fn init_and_ephemeral_containers_only_when_included() {
    let s = one_node(vec![
        old("init")
            .phase(Phase::Pending)
            .init_container_status(0, waiting("CreateContainerError"))
            .build(),
        old("eph")
            .phase(Phase::Pending)
            .ephemeral_container_status(waiting("CreateContainerError"))
            .build(),
        old("init-term")
            .init_container_status(1, terminated(Some("CreateContainerConfigError"), 1))
            .build(),
        old("eph-oom")
            .ephemeral_container_status(terminated(Some("OOMKilled"), 137))
            .build(),
    ]);
    let states =
        json!({"states": ["CreateContainerError", "CreateContainerConfigError", "OOMKilled"]});
    assert!(run(with(max600(), states.clone()), &s).is_empty());
    assert_eq!(
        run(
            with(states.clone(), json!({"includingInitContainers": true})),
            &s
        ),
        vec!["init", "init-term"]
    );
    assert_eq!(
        run(
            with(
                states.clone(),
                json!({"includingEphemeralContainers": true})
            ),
            &s
        ),
        vec!["eph", "eph-oom"]
    );
    assert_eq!(
        run(
            with(
                states,
                json!({"includingInitContainers": true, "includingEphemeralContainers": true})
            ),
            &s
        ),
        vec!["eph", "eph-oom", "init", "init-term"]
    );
}

#[test]
fn conditions_match_the_fields_they_set() {
    let s = one_node(vec![
        old("p1")
            .condition(
                "Initialized",
                True,
                Some("PodCompleted"),
                Some(OLD_TRANSITION),
            )
            .build(),
        old("p2")
            .condition(
                "Initialized",
                True,
                Some("OtherReason"),
                Some(OLD_TRANSITION),
            )
            .build(),
        old("p3")
            .condition("Ready", False, None, Some(OLD_TRANSITION))
            .build(),
        old("p4")
            .condition("Ready", True, Some("SomethingElse"), None)
            .build(),
    ]);
    let c = |f: serde_json::Value| run(json!({"conditions": [f]}), &s);
    assert_eq!(
        c(json!({"reason": "PodCompleted", "status": "True"})),
        vec!["p1"]
    );
    assert_eq!(c(json!({"type": "Ready"})), vec!["p3", "p4"]);
    assert_eq!(c(json!({"type": "Ready", "status": "False"})), vec!["p3"]);
    assert_eq!(c(json!({"status": "True"})), vec!["p1", "p2", "p4"]);
    assert!(c(json!({"reason": "Missing"})).is_empty());
    // a reason filter never matches a condition without a reason
    assert!(c(json!({"type": "Ready", "reason": "X"})).is_empty());
    // entries OR together
    assert_eq!(
        run(
            json!({"conditions": [{"reason": "OtherReason"}, {"type": "Ready", "status": "False"}]}),
            &s
        ),
        vec!["p2", "p3"]
    );
}

#[test]
fn condition_minimum_time_since_last_transition() {
    let completed = |name: &str, at: Option<i64>| {
        old(name)
            .phase(Phase::Succeeded)
            .condition("Initialized", True, Some("PodCompleted"), at)
            .condition("Ready", False, Some("PodCompleted"), at)
            .build()
    };
    let s = one_node(vec![
        completed("stale-completed", Some(OLD_TRANSITION)),
        completed("recent-completed", Some(NEW_TRANSITION)),
        completed("no-transition", None),
        completed("future", Some(NOW + 600)),
        old("running-pod").build(),
    ]);
    // upstream's user scenario
    let args = json!({"states": ["Succeeded"], "conditions": [
        {"reason": "PodCompleted", "status": "True", "minTimeSinceLastTransitionSeconds": 300}]});
    assert_eq!(run(args, &s), vec!["stale-completed"]);
    // the minimum alone; four hours is more than two
    let only_min = |secs: u64| {
        run(
            json!({"states": ["Succeeded"], "conditions": [
            {"minTimeSinceLastTransitionSeconds": secs}]}),
            &s,
        )
    };
    assert!(only_min(14_400).is_empty());
    assert_eq!(only_min(7_200), vec!["stale-completed"]);
    assert_eq!(only_min(60), vec!["stale-completed", "recent-completed"]);
    // without a minimum, the transition time does not matter
    assert_eq!(
        run(
            json!({"states": ["Succeeded"], "conditions": [{"reason": "PodCompleted"}]}),
            &s
        ),
        // all created at OLD: namespace/name order
        vec![
            "future",
            "no-transition",
            "recent-completed",
            "stale-completed"
        ]
    );
    // the minimum is checked on the condition matching the other fields only
    let s = one_node(vec![old("p1")
        .condition(
            "Initialized",
            True,
            Some("PodCompleted"),
            Some(OLD_TRANSITION),
        )
        .condition("Ready", True, Some("OtherReason"), Some(NEW_TRANSITION))
        .build()]);
    let scoped = |reason: &str| {
        run(
            json!({"conditions": [{"reason": reason, "minTimeSinceLastTransitionSeconds": 300}]}),
            &s,
        )
    };
    assert_eq!(scoped("PodCompleted"), vec!["p1"]);
    assert!(scoped("OtherReason").is_empty());
    // a pod without conditions never matches
    let s = one_node(vec![old("p1").build()]);
    assert!(run(
        json!({"states": ["Running"], "conditions": [
        {"minTimeSinceLastTransitionSeconds": 300}]}),
        &s
    )
    .is_empty());
}

#[test]
fn exit_codes_of_containers_and_init_containers() {
    let s = one_node(vec![
        old("p1")
            .phase(Phase::Failed)
            .container_status(0, terminated(None, 1))
            .build(),
        old("p2")
            .phase(Phase::Failed)
            .container_status(0, terminated(Some("Error"), 2))
            .build(),
        old("init")
            .phase(Phase::Failed)
            .init_container_status(0, terminated(None, 1))
            .build(),
        old("eph")
            .phase(Phase::Failed)
            .ephemeral_container_status(terminated(None, 1))
            .build(),
        old("waiting")
            .container_status(0, waiting("CrashLoopBackOff"))
            .build(),
    ]);
    assert_eq!(
        run(json!({"states": ["Failed"], "exitCodes": [1]}), &s),
        vec!["p1"]
    );
    assert!(run(json!({"states": ["Failed"], "exitCodes": [3]}), &s).is_empty());
    assert_eq!(run(json!({"exitCodes": [2, 1]}), &s), vec!["p1", "p2"]);
    // init containers with the switch; ephemeral containers never, as upstream
    assert_eq!(
        run(
            json!({"exitCodes": [1], "includingInitContainers": true, "includingEphemeralContainers": true}),
            &s
        ),
        vec!["init", "p1"]
    );
}

#[test]
fn owner_kinds_include_and_exclude() {
    let s = one_node(vec![
        old("p1").phase(Phase::Failed).owner("Job", "job1").build(),
        old("p2").phase(Phase::Failed).build(),
        old("bare").phase(Phase::Failed).bare().build(),
    ]);
    let ev = json!({"podProtections": {"defaultDisabled": ["FailedBarePods"]}});
    assert_eq!(
        run_ev(
            json!({"states": ["Failed"], "ownerKinds": {"exclude": ["Job"]}}),
            ev.clone(),
            &s
        ),
        vec!["bare", "p2"]
    );
    assert_eq!(
        run_ev(
            json!({"states": ["Failed"], "ownerKinds": {"include": ["Job"]}}),
            ev.clone(),
            &s
        ),
        vec!["p1"]
    );
    assert_eq!(
        run_ev(
            json!({"states": ["Failed"], "ownerKinds": {"include": ["Job", "ReplicaSet"]}}),
            ev.clone(),
            &s
        ),
        vec!["p1", "p2"]
    );
    // empty lists do not filter
    assert_eq!(
        run_ev(
            json!({"states": ["Failed"], "ownerKinds": {"include": [], "exclude": null}}),
            ev,
            &s
        ),
        vec!["bare", "p1", "p2"]
    );
}

#[test]
fn every_criterion_set_must_hold() {
    let s = one_node(vec![
        old("all")
            .phase(Phase::Failed)
            .container_status(0, terminated(Some("Error"), 1))
            .condition("Ready", False, Some("PodFailed"), Some(OLD_TRANSITION))
            .build(),
        pod("default", "young")
            .node("n1")
            .created(NOW - 10)
            .phase(Phase::Failed)
            .container_status(0, terminated(Some("Error"), 1))
            .condition("Ready", False, Some("PodFailed"), Some(OLD_TRANSITION))
            .build(),
        old("other-code")
            .phase(Phase::Failed)
            .container_status(0, terminated(Some("Error"), 2))
            .condition("Ready", False, Some("PodFailed"), Some(OLD_TRANSITION))
            .build(),
        old("recent")
            .phase(Phase::Failed)
            .container_status(0, terminated(Some("Error"), 1))
            .condition("Ready", False, Some("PodFailed"), Some(NEW_TRANSITION))
            .build(),
        old("running")
            .container_status(0, terminated(Some("Error"), 1))
            .condition("Ready", False, Some("PodFailed"), Some(OLD_TRANSITION))
            .build(),
    ]);
    let args = json!({
        "maxPodLifeTimeSeconds": 600,
        "states": ["Failed"],
        "exitCodes": [1],
        "conditions": [{"type": "Ready", "minTimeSinceLastTransitionSeconds": 3600}],
    });
    assert_eq!(run(args, &s), vec!["all"]);
    // upstream's failed-pod compatibility case: Failed, any age, not a Job
    let s = one_node(vec![
        old("failed-rs")
            .phase(Phase::Failed)
            .container_status(0, terminated(Some("Error"), 1))
            .build(),
        old("failed-job")
            .phase(Phase::Failed)
            .owner("Job", "job1")
            .build(),
    ]);
    assert_eq!(
        run(
            json!({"states": ["Failed"], "maxPodLifeTimeSeconds": 0, "ownerKinds": {"exclude": ["Job"]}}),
            &s
        ),
        vec!["failed-rs"]
    );
}

#[test]
fn namespaces_and_label_selector() {
    let s = one_node(vec![
        pod("a", "x")
            .node("n1")
            .created(OLD)
            .label("foo", "bar")
            .build(),
        pod("b", "y")
            .node("n1")
            .created(OLD)
            .label("foo", "bar1")
            .build(),
        pod("c", "z").node("n1").created(OLD).build(),
    ]);
    assert_eq!(
        run(
            with(max600(), json!({"namespaces": {"include": ["a", "c"]}})),
            &s
        ),
        vec!["x", "z"]
    );
    assert_eq!(
        run(
            with(max600(), json!({"namespaces": {"exclude": ["a"]}})),
            &s
        ),
        vec!["y", "z"]
    );
    assert_eq!(
        run(
            with(
                max600(),
                json!({"labelSelector": {"matchLabels": {"foo": "bar"}}})
            ),
            &s
        ),
        vec!["x"]
    );
    assert_eq!(
        run(
            with(
                max600(),
                json!({"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
                       "namespaces": {"exclude": ["a"]}})
            ),
            &s
        ),
        vec!["y"]
    );
}

#[test]
fn protected_pods_are_not_planned() {
    let s = one_node(vec![
        old("mirror").mirror().build(),
        old("static").static_pod().build(),
        old("ds").owner("DaemonSet", "ds").build(),
        old("critical").priority(2_000_000_000).build(),
        old("local").local_storage().build(),
        old("terminating").terminating().build(),
        old("bare").bare().build(),
        old("pvc").pvc("data").build(),
    ]);
    // upstream: PVC pods are evicted unless ignorePvcPods
    assert_eq!(run(max600(), &s), vec!["pvc"]);
    assert!(run_ev(max600(), json!({"ignorePvcPods": true}), &s).is_empty());
    assert_eq!(
        run_ev(
            max600(),
            json!({"evictLocalStoragePods": true, "evictDaemonSetPods": true, "evictSystemCriticalPods": true}),
            &s
        ),
        vec!["critical", "ds", "local", "pvc"]
    );
}

#[test]
fn succeeded_and_failed_pods_are_looked_at_too() {
    let s = one_node(vec![
        old("done").phase(Phase::Succeeded).build(),
        old("failed").phase(Phase::Failed).build(),
        old("pending").phase(Phase::Pending).build(),
    ]);
    assert_eq!(run(max600(), &s), vec!["done", "failed", "pending"]);
}

#[test]
fn oldest_first_across_nodes_and_limits_cut_in_that_order() {
    let p = |ns: &str, name: &str, node: &str, created: i64| {
        pod(ns, name).node(node).cpu(100).created(created).build()
    };
    let s = snapshot(
        vec![node("n1").build(), node("n2").build()],
        vec![
            p("default", "a", "n1", OLD + 300),
            p("default", "b", "n1", OLD + 100),
            p("default", "c", "n2", OLD + 200),
            p("other", "d", "n2", OLD),
            p("default", "new", "n1", NOW),
        ],
    );
    assert_eq!(run(max600(), &s), vec!["d", "b", "c", "a"]);
    let l = |per_node, per_namespace, total| Limits {
        per_node,
        per_namespace,
        total,
    };
    // the total limit ends the plugin after the oldest
    assert_eq!(
        limited(max600(), l(None, None, Some(2)), &s),
        vec!["d", "b"]
    );
    // a node limit ends only that node: the oldest of each node
    assert_eq!(
        limited(max600(), l(Some(1), None, None), &s),
        vec!["d", "b"]
    );
    assert_eq!(
        limited(max600(), l(Some(2), None, None), &s),
        vec!["d", "b", "c", "a"]
    );
    // a namespace limit skips the pod, not the rest
    assert_eq!(
        limited(max600(), l(None, Some(1), None), &s),
        vec!["d", "b"]
    );
    assert_eq!(limited(max600(), l(None, Some(2), Some(1)), &s), vec!["d"]);
    // upstream's cases: one node, the oldest goes first
    let s = one_node(vec![
        p("default", "p1", "n1", NOW - 700),
        p("default", "p2", "n1", OLD),
    ]);
    assert_eq!(limited(max600(), l(Some(1), None, None), &s), vec!["p2"]);
    assert_eq!(limited(max600(), l(None, Some(1), None), &s), vec!["p2"]);
    assert_eq!(limited(max600(), l(None, Some(2), Some(1)), &s), vec!["p2"]);
}

#[test]
fn ties_break_by_namespace_and_name_whatever_the_input_order() {
    let mut pods: Vec<Pod> = ["b/x", "a/y", "a/x", "c/a"]
        .iter()
        .map(|k| {
            let (ns, name) = k.split_once('/').unwrap();
            pod(ns, name).node("n1").created(OLD).build()
        })
        .collect();
    let first = run(max600(), &one_node(pods.clone()));
    assert_eq!(first, vec!["x", "y", "x", "a"]);
    let keys = |snap: &ClusterSnapshot| -> Vec<String> {
        let plugin = PodLifeTime::from_json(&max600()).unwrap();
        crate::framework::testing::run_alone(
            &plugin,
            snap,
            &DefaultEvictor::default(),
            Limits::default(),
            NOW,
        )
        .iter()
        .map(|e| snap.pod(e.pod).key())
        .collect()
    };
    let expected = vec!["a/x", "a/y", "b/x", "c/a"];
    assert_eq!(keys(&one_node(pods.clone())), expected);
    pods.reverse();
    assert_eq!(keys(&one_node(pods.clone())), expected);
    pods.swap(0, 2);
    assert_eq!(keys(&one_node(pods)), expected);
}

#[test]
fn transition_time_orders_pods_when_a_condition_has_a_minimum() {
    // "late" was created first but completed last
    let s = one_node(vec![
        pod("default", "late")
            .node("n1")
            .created(OLD)
            .phase(Phase::Succeeded)
            .condition("Ready", False, Some("PodCompleted"), Some(NOW - 3_600))
            .build(),
        pod("default", "early")
            .node("n1")
            .created(OLD + 1_000)
            .phase(Phase::Succeeded)
            .condition("Ready", False, Some("PodCompleted"), Some(NOW - 7_200))
            // a more recent matching transition wins over the older one
            .condition(
                "ContainersReady",
                False,
                Some("PodCompleted"),
                Some(NOW - 5_000),
            )
            .build(),
        pod("default", "mid")
            .node("n1")
            .created(OLD + 500)
            .phase(Phase::Succeeded)
            .condition("Ready", False, Some("PodCompleted"), Some(NOW - 4_000))
            .build(),
    ]);
    let total1 = Limits {
        total: Some(1),
        ..Default::default()
    };
    let with_min = json!({"conditions": [{"reason": "PodCompleted", "minTimeSinceLastTransitionSeconds": 60}]});
    assert_eq!(run(with_min.clone(), &s), vec!["early", "mid", "late"]);
    assert_eq!(limited(with_min, total1, &s), vec!["early"]);
    // without a minimum time, creation time orders them
    let without = json!({"conditions": [{"reason": "PodCompleted"}]});
    assert_eq!(run(without.clone(), &s), vec!["late", "mid", "early"]);
    assert_eq!(limited(without, total1, &s), vec!["late"]);
}

#[test]
fn node_fit_is_checked_before_each_eviction() {
    let fit = json!({"nodeFit": true});
    // the only other node is cordoned
    let s = snapshot(
        vec![node("n1").build(), node("n2").unschedulable().build()],
        vec![old("p1").build()],
    );
    assert!(run_ev(max600(), fit.clone(), &s).is_empty());
    // the other node has room for the small pod only
    let s = snapshot(
        vec![node("n1").build(), node("n2").cpu(1_500).build()],
        vec![
            pod("default", "big")
                .node("n1")
                .cpu(2_000)
                .created(OLD)
                .build(),
            pod("default", "small")
                .node("n1")
                .cpu(100)
                .created(OLD + 1)
                .build(),
        ],
    );
    assert_eq!(run_ev(max600(), fit, &s), vec!["small"]);
    assert_eq!(run(max600(), &s), vec!["big", "small"]);
}

#[test]
fn budgets_skip_the_pod_not_the_rest() {
    let s = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![node("n1").build()],
        pods: vec![
            old("a").label("app", "guarded").build(),
            old("b").label("app", "guarded").created(OLD + 1).build(),
            old("c").created(OLD + 2).build(),
        ],
        pdbs: vec![pdb("default", "guard", "app", "guarded", 1)],
        ..Default::default()
    });
    assert_eq!(run(max600(), &s), vec!["a", "c"]);
}

#[test]
fn reasons_say_what_matched() {
    let s = one_node(vec![old("p1")
        .phase(Phase::Failed)
        .container_status(0, terminated(Some("Error"), 1))
        .condition("Ready", False, Some("PodFailed"), Some(OLD_TRANSITION))
        .build()]);
    let plugin = PodLifeTime::from_json(&json!({
        "maxPodLifeTimeSeconds": 600,
        "states": ["Error"],
        "conditions": [{"type": "Ready", "minTimeSinceLastTransitionSeconds": 300}],
        "exitCodes": [1],
    }))
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
            "PodLifeTime criteria met: age {}s > maxPodLifeTimeSeconds 600; container terminated with reason Error; condition Ready=False (PodFailed) unchanged for 7200s >= 300s; container exited with code 1",
            NOW - OLD
        )
    );
    let plugin = PodLifeTime::from_json(&json!({"states": ["Failed"]})).unwrap();
    let plan = crate::framework::testing::run_alone(
        &plugin,
        &s,
        &DefaultEvictor::default(),
        Limits::default(),
        NOW,
    );
    assert_eq!(plan[0].reason, "PodLifeTime criteria met: phase Failed");
}

#[test]
fn args_validation_names_fields() {
    for (args, path) in [
        (json!({}), ""),
        (json!(null), ""),
        (
            json!({"states": [], "conditions": null, "exitCodes": []}),
            "",
        ),
        (
            json!({"namespaces": {"include": ["labels"]}, "labelSelector": {}, "ownerKinds": {"exclude": ["Job"]}}),
            "",
        ),
        (
            json!({"maxPodLifeTimeSeconds": 1, "namespaces": {"include": ["a"], "exclude": ["b"]}}),
            "namespaces",
        ),
        (
            json!({"states": ["Running"], "ownerKinds": {"include": ["Job"], "exclude": ["ReplicaSet"]}}),
            "ownerKinds",
        ),
        (
            json!({"maxPodLifeTimeSeconds": 1, "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
            "labelSelector",
        ),
        (json!({"states": ["NotAState"]}), "states[0]"),
        (
            json!({"states": ["Running", "Failed", "running"]}),
            "states[2]",
        ),
        (json!({"states": [""]}), "states[0]"),
        (json!({"conditions": [{}]}), "conditions[0]"),
        (
            json!({"conditions": [{"type": "Ready"}, {"type": "", "reason": null}]}),
            "conditions[1]",
        ),
        (
            json!({"conditions": [{"status": "true"}]}),
            "conditions[0].status",
        ),
        (
            json!({"conditions": [{"minTimeSinceLastTransitionSeconds": -1}]}),
            "conditions[0].minTimeSinceLastTransitionSeconds",
        ),
        (
            json!({"conditions": [{"lastTransitionTime": 5}]}),
            "conditions[0].lastTransitionTime",
        ),
        (
            json!({"maxPodLifeTimeSeconds": -5}),
            "maxPodLifeTimeSeconds",
        ),
        (
            json!({"maxPodLifeTimeSeconds": "1h"}),
            "maxPodLifeTimeSeconds",
        ),
        (json!({"exitCodes": [4_294_967_296u64]}), "exitCodes[0]"),
        (json!({"states": "Running"}), "states"),
        (
            json!({"maxPodLifeTimeSeconds": 1, "ownerKinds": {"kinds": ["Job"]}}),
            "ownerKinds.kinds",
        ),
        (
            json!({"maxPodLifeTimeSeconds": 1, "maxPodLifetimeSeconds": 1}),
            "maxPodLifetimeSeconds",
        ),
    ] {
        let e = PodLifeTime::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e:?}");
    }
    let none = PodLifeTime::from_json(&json!({})).unwrap_err();
    assert!(none.message.contains("PodLifeTime"), "{none:?}");
    assert!(none.message.contains("maxPodLifeTimeSeconds"), "{none:?}");
    let bad = PodLifeTime::from_json(&json!({"states": ["Runing"]})).unwrap_err();
    assert!(bad.message.contains("\"Runing\""), "{bad:?}");
    assert!(bad.message.contains("CrashLoopBackOff"), "{bad:?}");
    assert!(bad.message.contains("Running"), "{bad:?}");
}

#[test]
fn valid_args_are_accepted() {
    for ok in [
        json!({"maxPodLifeTimeSeconds": 1, "states": ["Running"]}),
        json!({"maxPodLifeTimeSeconds": 1, "states": ["Succeeded", "Failed"]}),
        json!({"maxPodLifeTimeSeconds": 1, "states": ["CrashLoopBackOff"]}),
        json!({"states": ["Running"]}),
        json!({"conditions": [{"reason": "PodCompleted"}]}),
        json!({"conditions": [{"minTimeSinceLastTransitionSeconds": 300}]}),
        json!({"conditions": [{"status": "Unknown"}]}),
        json!({"exitCodes": [1, -1, 137]}),
        json!({"maxPodLifeTimeSeconds": 0}),
        json!({"kind": "PodLifeTimeArgs", "apiVersion": "descheduler/v1alpha2", "maxPodLifeTimeSeconds": 86_400,
               "namespaces": {"include": ["default"]}, "ownerKinds": {"include": ["Job"], "exclude": []},
               "labelSelector": {"matchLabels": {"app": "x"}}, "includingInitContainers": null,
               "includingEphemeralContainers": true}),
    ] {
        assert!(PodLifeTime::from_json(&ok).is_ok(), "{ok}");
    }
    for s in ALLOWED_STATES {
        assert!(
            PodLifeTime::from_json(&json!({"states": [s]})).is_ok(),
            "{s}"
        );
    }
    assert!(
        ALLOWED_STATES.is_sorted(),
        "listed as upstream's sorted error shows them"
    );
}

#[test]
fn runs_from_a_policy() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
profiles:
- name: lifetime
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 86400
      states: [Running]
      namespaces:
        include: [default]
  plugins: {deschedule: {enabled: [PodLifeTime]}}
"#,
    );
    let pods = vec![
        pod("default", "old")
            .node("n1")
            .created(NOW - 90_000)
            .build(),
        pod("default", "young")
            .node("n1")
            .created(NOW - 3_600)
            .build(),
        pod("default", "old-pending")
            .node("n1")
            .created(NOW - 90_000)
            .phase(Phase::Pending)
            .build(),
        pod("kube-system", "old")
            .node("n1")
            .created(NOW - 90_000)
            .build(),
    ];
    // Two Ready nodes: upstream plans nothing on fewer (see below).
    let s = snapshot(vec![node("n1").build(), node("n2").build()], pods.clone());
    let plan = plan::plan(&pipeline, &s, NOW).unwrap();
    let names: Vec<String> = plan.evictions.iter().map(|e| s.pod(e.pod).key()).collect();
    assert_eq!(names, vec!["default/old"]);
    assert!(!plan.too_few_nodes());

    // One node, or a second one not Ready: the cycle is skipped as upstream skips it, and
    // the plan says why.
    let mut not_ready = node("n2").build();
    not_ready.ready = false;
    for s in [
        one_node(pods.clone()),
        snapshot(vec![node("n1").build(), not_ready], pods),
    ] {
        let plan = plan::plan(&pipeline, &s, NOW).unwrap();
        assert!(plan.evictions.is_empty(), "{:?}", plan.evictions);
        assert!(plan.too_few_nodes());
        let skipped: Vec<&str> = plan
            .notes
            .iter()
            .filter(|n| n.skipped())
            .map(|n| n.message.as_str())
            .collect();
        assert_eq!(skipped.len(), 1, "{:?}", plan.notes);
        assert!(
            skipped[0].starts_with(plan::TOO_FEW_NODES),
            "{}",
            skipped[0]
        );
        assert!(skipped[0].contains("1 Ready node(s)"), "{}", skipped[0]);
    }
}

#[test]
fn candidates_not_chosen_are_counted_by_kind_of_reason() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
maxNoOfPodsToEvictPerNode: 1
profiles:
- name: lifetime
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 86400
  plugins: {deschedule: {enabled: [PodLifeTime]}}
"#,
    );
    // Three old pods on n1: the first planned, the next held back by the per-node limit (the
    // plugin then leaves the node); one old pod on n2 covered by a PodDisruptionBudget with no disruptions left.
    let mut pods: Vec<Pod> = ["a", "b", "c"].iter().map(|n| old(n).build()).collect();
    pods.push(
        pod("default", "guarded")
            .node("n2")
            .label("app", "guarded")
            .created(OLD)
            .build(),
    );
    let mut parts = SnapshotParts {
        nodes: vec![node("n1").build(), node("n2").build()],
        pods,
        ..SnapshotParts::default()
    };
    parts
        .pdbs
        .push(pdb("default", "guard", "app", "guarded", 0));
    let s = ClusterSnapshot::build(parts);
    let plan = plan::plan(&pipeline, &s, NOW).unwrap();
    assert_eq!(plan.evictions.len(), 1, "{:?}", plan.notes);
    let counted: Vec<(&str, &str, &str, u32)> = plan
        .skips
        .iter()
        .map(|((profile, plugin, reason), n)| (profile.as_str(), *plugin, reason.label(), *n))
        .collect();
    assert_eq!(
        counted,
        [
            ("lifetime", "PodLifeTime", "limits", 1),
            ("lifetime", "PodLifeTime", "pdb", 1)
        ]
    );
    // One count per candidate not chosen in the notes.
    let not_chosen = plan.notes.iter().filter(|n| n.pod().is_some()).count();
    assert_eq!(not_chosen as u32, plan.skips.values().sum::<u32>());
}
