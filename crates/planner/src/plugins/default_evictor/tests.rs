use super::*;
use crate::framework::{Limits, PlanningState};
use crate::snapshot::builders::{
    namespace, node, pdb, pod, pod_group, volcano_group, PodBuilder, T0,
};
use crate::snapshot::{PriorityClass, SnapshotParts, TaintEffect};
use serde_json::json;

fn evictor(args: serde_json::Value) -> DefaultEvictor {
    DefaultEvictor::from_json(&args).unwrap()
}

fn check(ev: &DefaultEvictor, p: PodBuilder) -> Result<(), String> {
    let snap = ClusterSnapshot::build(SnapshotParts {
        workloads: Default::default(),
        nodes: vec![node("n1").build()],
        pods: vec![
            p.node("n1").build(),
            pod("other", "sibling").node("n1").build(),
        ],
        pdbs: vec![pdb("d", "budget", "app", "guarded", 1)],
        namespaces: vec![namespace("d", &[("team", "a")])],
        priority_classes: vec![PriorityClass {
            name: "high".into(),
            value: 1000,
        }],
        pod_groups: vec![pod_group("d", "gang", 2), volcano_group("d", "vgang", 1)],
    });
    let id = PodId::from_index(snap.pods.iter().position(|p| &*p.namespace == "d").unwrap());
    ev.filter(&snap, id, T0 + 3600)
}

#[test]
fn default_protections() {
    let ev = DefaultEvictor::default();
    let cases: Vec<(&str, PodBuilder, bool)> = vec![
        ("plain replica", pod("d", "p"), true),
        ("mirror", pod("d", "p").mirror(), false),
        ("static", pod("d", "p").static_pod(), false),
        ("terminating", pod("d", "p").terminating(), false),
        (
            "mirror with evict annotation",
            pod("d", "p").mirror().evict_annotation(),
            false,
        ),
        ("bare", pod("d", "p").bare(), false),
        (
            "bare with evict annotation",
            pod("d", "p").bare().evict_annotation(),
            true,
        ),
        ("daemonset", pod("d", "p").owner("DaemonSet", "ds"), false),
        ("critical", pod("d", "p").priority(2_000_000_000), false),
        ("local storage", pod("d", "p").local_storage(), false),
        (
            "local storage with evict annotation",
            pod("d", "p").local_storage().evict_annotation(),
            true,
        ),
        (
            "pvc (not protected by default)",
            pod("d", "p").pvc("data"),
            true,
        ),
        (
            "prefer-no-eviction is only a preference",
            pod("d", "p").prefer_no_eviction(),
            true,
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(check(&ev, p).is_ok(), want, "{name}");
    }
}

#[test]
fn protections_can_be_changed() {
    let ev = evictor(
        json!({"podProtections": {"defaultDisabled": ["PodsWithLocalStorage", "DaemonSetPods", "SystemCriticalPods", "FailedBarePods"], "extraEnabled": ["PodsWithPVC", "PodsWithoutPDB"]}}),
    );
    assert!(check(&ev, pod("d", "p").local_storage().label("app", "guarded")).is_ok());
    assert!(check(
        &ev,
        pod("d", "p")
            .owner("DaemonSet", "x")
            .label("app", "guarded")
    )
    .is_ok());
    assert!(check(
        &ev,
        pod("d", "p")
            .priority(2_000_000_001)
            .label("app", "guarded")
    )
    .is_ok());
    assert!(check(
        &ev,
        pod("d", "p")
            .bare()
            .phase(Phase::Failed)
            .label("app", "guarded")
    )
    .is_ok());
    assert!(check(&ev, pod("d", "p").bare().label("app", "guarded")).is_err());
    assert!(check(&ev, pod("d", "p").pvc("x").label("app", "guarded")).is_err());
    // no PDB covers it
    assert!(check(&ev, pod("d", "p")).is_err());
}

#[test]
fn deprecated_booleans_map_to_protections() {
    let ev = evictor(
        json!({"evictLocalStoragePods": true, "evictSystemCriticalPods": true, "ignorePvcPods": true}),
    );
    assert!(check(&ev, pod("d", "p").local_storage()).is_ok());
    assert!(check(&ev, pod("d", "p").priority(2_000_000_000)).is_ok());
    assert!(check(&ev, pod("d", "p").pvc("x")).is_err());
    let err = DefaultEvictor::from_json(&json!({"evictLocalStoragePods": true, "podProtections": {"extraEnabled": ["PodsWithPVC"]}})).unwrap_err();
    assert_eq!(err.path, "podProtections");
}

#[test]
fn priority_threshold_value_and_name() {
    let ev = evictor(json!({"priorityThreshold": {"value": 100}}));
    assert!(check(&ev, pod("d", "p").priority(99)).is_ok());
    assert!(check(&ev, pod("d", "p").priority(100)).is_err());
    assert!(check(&ev, pod("d", "p")).is_ok());
    let ev = evictor(json!({"priorityThreshold": {"name": "high"}}));
    assert!(check(&ev, pod("d", "p").priority(999)).is_ok());
    assert!(check(&ev, pod("d", "p").priority(1000)).is_err());
    let ev = evictor(json!({"priorityThreshold": {"name": "missing"}}));
    assert!(check(&ev, pod("d", "p").priority(1))
        .unwrap_err()
        .contains("does not exist"));
    assert!(
        DefaultEvictor::from_json(&json!({"priorityThreshold": {"name": "high", "value": 1}}))
            .is_err()
    );
}

#[test]
fn selectors_replicas_age_and_no_eviction_policy() {
    let ev = evictor(json!({"labelSelector": {"matchLabels": {"tier": "batch"}}}));
    assert!(check(&ev, pod("d", "p").label("tier", "batch")).is_ok());
    assert!(check(&ev, pod("d", "p")).is_err());
    let ev = evictor(json!({"namespaceLabelSelector": {"matchLabels": {"team": "a"}}}));
    assert!(check(&ev, pod("d", "p")).is_ok());
    let ev = evictor(json!({"namespaceLabelSelector": {"matchLabels": {"team": "b"}}}));
    assert!(check(&ev, pod("d", "p")).is_err());
    let ev = evictor(json!({"minReplicas": 2}));
    assert!(check(&ev, pod("d", "p"))
        .unwrap_err()
        .contains("minReplicas"));
    let ev = evictor(json!({"minPodAge": "30m"}));
    assert!(check(&ev, pod("d", "p").started(Some(T0))).is_ok());
    assert!(check(&ev, pod("d", "p").started(Some(T0 + 3000))).is_err());
    assert!(check(&ev, pod("d", "p").started(None)).is_err());
    let ev = evictor(json!({"noEvictionPolicy": "Mandatory"}));
    assert!(check(&ev, pod("d", "p").prefer_no_eviction()).is_err());
    assert!(check(&ev, pod("d", "p")).is_ok());
}

#[test]
fn invalid_args_name_the_field() {
    for (args, path) in [
        (json!({"noEvictionPolicy": "Sometimes"}), "noEvictionPolicy"),
        (
            json!({"podProtections": {"extraEnabled": ["Everything"]}}),
            "podProtections.extraEnabled[0]",
        ),
        (
            json!({"podProtections": {"defaultDisabled": ["PodsWithPVC"]}}),
            "podProtections.defaultDisabled[0]",
        ),
        (json!({"minPodAge": "soon"}), "minPodAge"),
        (json!({"nodeFit": "yes"}), "nodeFit"),
        (
            json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}}),
            "labelSelector",
        ),
        (json!({"evictEverything": true}), "evictEverything"),
    ] {
        let e = DefaultEvictor::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e}");
    }
}

#[test]
fn gang_policy_is_validated() {
    assert_eq!(
        DefaultEvictor::default().gang_policy,
        GangPolicy::SurplusOnly
    );
    assert_eq!(
        evictor(json!({"gangPolicy": "SurplusOnly"})).gang_policy,
        GangPolicy::SurplusOnly
    );
    assert_eq!(
        evictor(json!({"gangPolicy": "WholeGang"})).gang_policy,
        GangPolicy::WholeGang
    );
    let e = DefaultEvictor::from_json(&json!({"gangPolicy": "Some"})).unwrap_err();
    assert_eq!(e.path, "gangPolicy");
    assert!(e.message.contains("SurplusOnly"), "{e}");
    assert!(e.message.contains("WholeGang"), "{e}");
}

#[test]
fn gang_members_beyond_min_member_only() {
    let gang = |name: &str| pod("ml", name).node("n1").pod_group("train");
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![node("n1").build()],
        pods: vec![
            gang("a").build(),
            gang("b").build(),
            gang("pending")
                .phase(Phase::Pending)
                .bare()
                .evict_annotation()
                .build(),
            pod("ml", "v").node("n1").volcano_group("tiny").build(),
            pod("ml", "w")
                .node("n1")
                .volcano_group("unknown")
                .evict_annotation()
                .build(),
        ],
        pod_groups: vec![pod_group("ml", "train", 1), volcano_group("ml", "tiny", 1)],
        ..Default::default()
    });
    let ev = DefaultEvictor::default();
    let id = |n: &str| snap.pod_id("ml", n).unwrap();
    // two running, minMember 1: one to spare (the planning state counts the planned one)
    assert!(ev.filter(&snap, id("a"), T0).is_ok());
    assert!(ev.filter(&snap, id("pending"), T0).is_ok());
    let why = ev.filter(&snap, id("v"), T0).unwrap_err();
    assert!(
        why.contains("PodGroup ml/tiny (scheduling.volcano.sh)"),
        "{why}"
    );
    assert!(why.contains("minMember 1"), "{why}");
    // the evict annotation does not lift the gang rule
    let why = ev.filter(&snap, id("w"), T0).unwrap_err();
    assert!(why.contains("not in the snapshot"), "{why}");
    assert!(why.contains("every member is protected"), "{why}");
    let mut state = PlanningState::new(&snap, Limits::default());
    state.plan_eviction(id("a"), "p", "T", "r".into()).unwrap();
    assert!(matches!(
        state.plan_eviction(id("b"), "p", "T", "r".into()),
        Err(crate::framework::EvictError::GangMinMember(_))
    ));
}

#[test]
fn node_fit_uses_planned_state() {
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("n1").cpu(1000).build(),
            node("n2").cpu(1000).build(),
            node("n3")
                .cpu(1000)
                .taint("x", "", TaintEffect::NoSchedule)
                .build(),
        ],
        pods: vec![
            pod("d", "a").node("n1").cpu(600).build(),
            pod("d", "b").node("n2").cpu(600).build(),
        ],
        ..Default::default()
    });
    let ev = evictor(json!({"nodeFit": true}));
    let mut state = PlanningState::new(&snap, Limits::default());
    // a (600m) does not fit n2 (600m used of 1000m) and n3 is tainted.
    let err = ev
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .unwrap_err();
    assert!(
        err.contains("1 Insufficient cpu") && err.contains("1 node(s) had untolerated taint"),
        "{err}"
    );
    state
        .plan_eviction(PodId::new(1), "p", "T", "r".into())
        .unwrap();
    // b is planned away, but its replacement can only go back to n2 (placements are
    // cumulative): still no room for a.
    assert_eq!(
        state.ledger().evictions()[0].destination,
        Some(NodeId::new(1))
    );
    assert!(ev
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .is_err());
    assert!(DefaultEvictor::default()
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .is_ok());
}

#[test]
fn node_fit_looks_at_every_ready_node_or_those_of_its_node_selector() {
    // As upstream's PreEvictionFilter: every Ready node of the cluster, whatever the
    // policy's nodeSelector (a replacement may land anywhere), or those of the evictor's
    // own `nodeSelector`. Only "pool-b" has room for a.
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("a1").label("pool", "a").cpu(1000).build(),
            node("a2").label("pool", "a").cpu(1000).build(),
            node("b1").label("pool", "b").cpu(1000).build(),
            node("b2").label("pool", "b").cpu(1000).not_ready().build(),
        ],
        pods: vec![
            pod("d", "a").node("a1").cpu(600).build(),
            pod("d", "full").node("a2").cpu(600).build(),
        ],
        ..Default::default()
    });
    let state = PlanningState::new(&snap, Limits::default());
    assert!(evictor(json!({"nodeFit": true}))
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .is_ok());
    assert!(evictor(json!({"nodeFit": true, "nodeSelector": "pool=b"}))
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .is_ok());
    let err = evictor(json!({"nodeFit": true, "nodeSelector": "pool=a"}))
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .unwrap_err();
    assert!(err.contains("Insufficient cpu"), "{err}");
    // A NotReady node does not count: b2 alone is no place.
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("a1").label("pool", "a").cpu(1000).build(),
            node("b2").label("pool", "b").cpu(1000).not_ready().build(),
        ],
        pods: vec![pod("d", "a").node("a1").cpu(600).build()],
        ..Default::default()
    });
    let state = PlanningState::new(&snap, Limits::default());
    assert!(evictor(json!({"nodeFit": true}))
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .is_err());
}

#[test]
fn node_fit_honours_topology_spread() {
    use crate::snapshot::WhenUnsatisfiable::DoNotSchedule;
    // upstream's nodeFit ignores topology spread; ours does not: a replica of a spread
    // group in zone a may not move to zone b, which already holds one more.
    let w = |name: &str, n: &str| {
        pod("d", name)
            .node(n)
            .label("app", "w")
            .spread(1, "zone", DoNotSchedule, "app", "w")
    };
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
        ],
        pods: vec![
            w("w1", "a").build(),
            w("w2", "b").build(),
            w("w3", "b").build(),
        ],
        ..Default::default()
    });
    let ev = evictor(json!({"nodeFit": true}));
    let state = PlanningState::new(&snap, Limits::default());
    // w1 leaving a: a=0, b=2; moving it to b gives skew 3 > 1
    let err = ev
        .pre_eviction_filter(state.placement(), PodId::new(0))
        .unwrap_err();
    assert!(err.contains("topology spread"), "{err}");
    // w2 leaving b: a=1, b=1: it may go to a
    assert!(ev
        .pre_eviction_filter(state.placement(), PodId::new(1))
        .is_ok());
}

/// A LowNodeUtilization-like target: `node` may reach `cpu` millicores; `wanted` when it is
/// an underutilized node.
fn target(node: NodeId, cpu: i64, wanted: bool) -> crate::framework::PlacementTarget {
    crate::framework::PlacementTarget {
        node,
        limit: [("cpu".to_string(), cpu)].into(),
        wanted,
    }
}

#[test]
fn by_default_an_eviction_predicted_back_home_is_refused_under_placement_targets() {
    // hot holds 2 x 1500m, cold 1000m: once a is planned onto cold (2500m), b's best place
    // is hot, where only b is left.
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("hot").cpu(4000).build(),
            node("cold").cpu(4000).build(),
        ],
        pods: vec![
            pod("d", "a").node("hot").cpu(1500).build(),
            pod("d", "b").node("hot").cpu(1500).build(),
            pod("d", "x").node("cold").cpu(1000).build(),
        ],
        ..Default::default()
    });
    let p = |name: &str| snap.pod_id("d", name).unwrap();
    let (hot, cold) = (snap.node_id("hot").unwrap(), snap.node_id("cold").unwrap());
    let targets = || vec![target(cold, 4000, true), target(hot, 4000, false)];
    let mut state = PlanningState::new(&snap, Limits::default());
    state
        .placement_mut()
        .set_termination(crate::sim::Termination::INSTANT);
    state.placement_mut().set_targets(targets());
    for args in [json!({}), json!({"nodeFit": true})] {
        let ev = evictor(args);
        assert!(ev.checks_destinations());
        assert!(ev.pre_eviction_filter(state.placement(), p("a")).is_ok());
    }
    state.plan_eviction(p("a"), "p", "T", "r".into()).unwrap();
    for args in [json!({}), json!({"nodeFit": true})] {
        let err = evictor(args)
            .pre_eviction_filter(state.placement(), p("b"))
            .unwrap_err();
        assert_eq!(
            err,
            "its replacement is predicted to land back on its own node hot: the eviction would change nothing (placementCheck unset; false turns it off)"
        );
    }
    // `placementCheck: false`: upstream's behaviour
    let plain = evictor(json!({"placementCheck": false}));
    assert!(!plain.checks_destinations());
    assert!(plain.pre_eviction_filter(state.placement(), p("b")).is_ok());
    // without targets (PodLifeTime and the like restart pods on purpose): allowed
    state.placement_mut().clear_targets();
    assert!(evictor(json!({}))
        .pre_eviction_filter(state.placement(), p("b"))
        .is_ok());
}

#[test]
fn a_replacement_that_waits_for_room_and_then_goes_home_is_refused_under_a_relocating_plugin() {
    // own holds a (2000m) and y (1500m), full holds z (3000m), 4 cpu each. While a
    // terminates (its grace period), no node has 2000m free: its replacement waits, and
    // once a is gone the room is on own, where it lands.
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("own").cpu(4000).build(),
            node("full").cpu(4000).build(),
        ],
        pods: vec![
            pod("d", "a").node("own").cpu(2000).build(),
            pod("d", "y").node("own").cpu(1500).build(),
            pod("d", "z").node("full").cpu(3000).build(),
        ],
        ..Default::default()
    });
    let a = snap.pod_id("d", "a").unwrap();
    let mut state = PlanningState::new(&snap, Limits::default());
    state
        .placement_mut()
        .set_termination(crate::sim::Termination::GRACEFUL);
    assert!(
        state
            .placement()
            .sim()
            .predict(a, state.placement().nodes())
            .is_err(),
        "no node fits while a terminates"
    );
    // Without a relocating plugin (PodLifeTime and the like): allowed.
    assert!(evictor(json!({}))
        .pre_eviction_filter(state.placement(), a)
        .is_ok());
    state.placement_mut().set_relocating(true);
    let err = evictor(json!({}))
        .pre_eviction_filter(state.placement(), a)
        .unwrap_err();
    assert_eq!(
        err,
        "its replacement is predicted to land back on its own node own: the eviction would change nothing (placementCheck unset; false turns it off)"
    );
    assert!(evictor(json!({"placementCheck": false}))
        .pre_eviction_filter(state.placement(), a)
        .is_ok());
}

#[test]
fn by_default_an_eviction_that_may_land_home_on_a_tie_or_push_a_node_over_its_target_is_refused() {
    // Three equal nodes: hot with 3600m, cold-a and cold-b with 1500m each.
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("cold-a").cpu(4000).build(),
            node("cold-b").cpu(4000).build(),
            node("hot").cpu(4000).build(),
        ],
        pods: vec![
            pod("d", "w").node("hot").cpu(600).build(),
            pod("d", "big").node("hot").cpu(1500).build(),
            pod("d", "z").node("hot").cpu(1500).build(),
            pod("d", "x").node("cold-a").cpu(1500).build(),
            pod("d", "y").node("cold-b").cpu(1500).build(),
        ],
        ..Default::default()
    });
    let p = |name: &str| snap.pod_id("d", name).unwrap();
    let n = |name: &str| snap.node_id(name).unwrap();
    let ev = evictor(json!({}));
    let mut state = PlanningState::new(&snap, Limits::default());
    state
        .placement_mut()
        .set_termination(crate::sim::Termination::INSTANT);
    // big (1500m) lands on cold-a or cold-b (1500m each, tied): 3000m, over a 2000m
    // target on either.
    state.placement_mut().set_targets(vec![
        target(n("cold-a"), 2000, false),
        target(n("cold-b"), 2000, false),
        target(n("hot"), 2000, false),
    ]);
    let err = ev
        .pre_eviction_filter(state.placement(), p("big"))
        .unwrap_err();
    assert_eq!(
        err,
        "its replacement may land on cold-a (tied with cold-b: kube-scheduler picks among them at random), which would go over its target cpu with it (3000 > 2000) (placementCheck unset; false turns it off)"
    );
    // Within the targets it goes.
    state.placement_mut().set_targets(vec![
        target(n("cold-a"), 3000, false),
        target(n("cold-b"), 3000, false),
    ]);
    assert!(ev.pre_eviction_filter(state.placement(), p("big")).is_ok());
    // A node without a target (outside the plugin's nodes) is not held to one.
    state
        .placement_mut()
        .set_targets(vec![target(n("hot"), 1000, false)]);
    assert!(ev.pre_eviction_filter(state.placement(), p("big")).is_ok());
    // Once every other pod is gone (instant), w's replacement ties between the three
    // nodes, its own among them.
    let mut state = PlanningState::new(&snap, Limits::default());
    state
        .placement_mut()
        .set_termination(crate::sim::Termination::INSTANT);
    for q in ["big", "z", "x", "y"] {
        state.plan_eviction(p(q), "p", "T", "r".into()).unwrap();
    }
    let predicted = state
        .placement()
        .sim()
        .predict(p("w"), state.placement().nodes())
        .unwrap();
    let mut tied: Vec<NodeId> = std::iter::once(predicted.node)
        .chain(predicted.alternatives.iter().copied())
        .collect();
    tied.sort();
    assert!(tied.contains(&n("hot")) && tied.len() > 1, "{predicted:?}");
    state.placement_mut().set_targets(vec![
        target(n("cold-a"), 4000, true),
        target(n("cold-b"), 4000, true),
        target(n("hot"), 4000, false),
    ]);
    let err = ev
        .pre_eviction_filter(state.placement(), p("w"))
        .unwrap_err();
    assert!(
        err.starts_with("its replacement may land back on its own node hot (tied with "),
        "{err}"
    );
}

#[test]
fn placement_check_wants_a_better_node() {
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("hot").cpu(4000).build(),
            node("cold").cpu(4000).build(),
            node("gpu")
                .cpu(4000)
                .taint("gpu", "", TaintEffect::NoSchedule)
                .build(),
        ],
        pods: vec![
            pod("d", "a").node("hot").cpu(1500).build(),
            pod("d", "b").node("hot").cpu(1500).build(),
            pod("d", "c").node("hot").cpu(1500).build(),
            pod("d", "x").node("cold").cpu(1000).build(),
        ],
        ..Default::default()
    });
    let ev = evictor(json!({"placementCheck": true}));
    assert_eq!(ev.args.placement_check, Some(true));
    let n = |name: &str| snap.node_id(name).unwrap();
    let p = |name: &str| snap.pod_id("d", name).unwrap();
    let check = |state: &PlanningState<'_>, pod| {
        destination_check(state.placement(), pod, Strictness::PlacementCheck)
    };
    let mut state = PlanningState::new(&snap, Limits::default());
    // evicted pods gone at once: their room is free for later replacements
    state
        .placement_mut()
        .set_termination(crate::sim::Termination::INSTANT);
    assert_eq!(check(&state, p("a")), Ok(Some(n("cold"))));
    assert!(ev.pre_eviction_filter(state.placement(), p("a")).is_ok());
    // with targets: cold may reach 2500m
    state
        .placement_mut()
        .set_targets(vec![target(n("cold"), 2500, true)]);
    assert!(ev.pre_eviction_filter(state.placement(), p("a")).is_ok());
    state.plan_eviction(p("a"), "p", "T", "r".into()).unwrap();
    assert_eq!(state.ledger().evictions()[0].destination, Some(n("cold")));
    // cold holds 2500m now: b's best place is hot itself (now the least allocated),
    // which is no better than where it is
    let err = ev
        .pre_eviction_filter(state.placement(), p("b"))
        .unwrap_err();
    assert!(err.contains("(placementCheck)"), "{err}");
    state.placement_mut().clear_targets();
    assert_eq!(
        check(&state, p("b")).unwrap_err(),
        "its replacement is predicted to land back on its own node hot: the eviction would change nothing (placementCheck)"
    );
    // a target the destination would cross
    let snap2 = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("hot").cpu(4000).build(),
            node("cold").cpu(4000).build(),
        ],
        pods: vec![
            pod("d", "a").node("hot").cpu(1000).build(),
            pod("d", "y").node("hot").cpu(2500).build(),
            pod("d", "x").node("cold").cpu(500).build(),
        ],
        ..Default::default()
    });
    let mut state = PlanningState::new(&snap2, Limits::default());
    let cold = snap2.node_id("cold").unwrap();
    let a = snap2.pod_id("d", "a").unwrap();
    let check = |state: &PlanningState<'_>| {
        destination_check(state.placement(), a, Strictness::PlacementCheck)
    };
    state
        .placement_mut()
        .set_targets(vec![target(cold, 1200, true)]);
    let err = check(&state).unwrap_err();
    assert!(err.contains("over its target cpu"), "{err}");
    // a node the plugin does not want: refused with placementCheck, not by default
    state
        .placement_mut()
        .set_targets(vec![target(cold, 4000, false)]);
    assert!(check(&state)
        .unwrap_err()
        .contains("not an underutilized node"));
    assert_eq!(
        destination_check(state.placement(), a, Strictness::Default),
        Ok(Some(cold))
    );
    state.placement_mut().set_targets(vec![]);
    assert!(check(&state)
        .unwrap_err()
        .contains("not an underutilized node"));
}

#[test]
fn protections_users_write_on_pods() {
    use crate::snapshot::{DoNotDisrupt, PROTECTED_UNTIL_UNREADABLE};
    let plain = DefaultEvictor::default();
    let honoring = evictor(json!({"honorDoNotDisrupt": true}));
    let owned = || pod("d", "p").owner("ReplicaSet", "web");
    // `check` looks at T0 + 1h.
    let now = T0 + 3600;
    // Another disruptor's annotation: honoured only when the evictor is told to.
    for which in [DoNotDisrupt::Karpenter, DoNotDisrupt::ClusterAutoscaler] {
        assert_eq!(check(&plain, owned().do_not_disrupt(which)), Ok(()));
        let why = check(&honoring, owned().do_not_disrupt(which)).unwrap_err();
        assert!(
            why.contains(which.annotation()) && why.contains("honorDoNotDisrupt is on"),
            "{why}"
        );
        // The evict annotation does not lift it.
        assert!(check(&honoring, owned().do_not_disrupt(which).evict_annotation()).is_err());
    }
    // The time-bounded protection holds until its time, whatever the evictor's args.
    let why = check(&plain, owned().protected_until(now + 1)).unwrap_err();
    assert_eq!(
        why,
        "pod is protected until 2026-01-01T01:00:01Z (descheduler.alpha.kubernetes.io/do-not-evict-until)"
    );
    assert!(check(&plain, owned().protected_until(now + 1).evict_annotation()).is_err());
    assert_eq!(check(&plain, owned().protected_until(now)), Ok(()));
    let why = check(&plain, owned().protected_until(PROTECTED_UNTIL_UNREADABLE)).unwrap_err();
    assert!(why.contains("not an RFC 3339 time"), "{why}");
    // The arg is refused where it is not a boolean.
    let e = DefaultEvictor::from_json(&json!({"honorDoNotDisrupt": "yes"})).unwrap_err();
    assert!(e.to_string().contains("honorDoNotDisrupt"), "{e}");
}
