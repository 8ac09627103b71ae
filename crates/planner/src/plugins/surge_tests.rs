//! Moves by surge (`crate::framework::surge`) under DefaultEvictor's `moveMode`.

use crate::framework::{
    Context, EvictError, FromArgs, Limits, Mechanism, PlannedEviction, PlanningState,
};
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{deployment, node, pdb, pod, pod_group};
use crate::snapshot::{
    Autoscaler, ClusterSnapshot, Deployment, PodId, ResourceQuota, SnapshotParts, Workloads,
};

const GIB: i64 = 1 << 30;

/// Node `hot` (4 cpu) holds `web`'s pod `web-0` (1 cpu) and an unevictable 1.5 cpu pod;
/// `cold-a` and `cold-b` are empty. `web` has `replicas`, and its PDB allows `allowed`.
fn cluster(
    replicas: i32,
    allowed: i32,
    change: impl FnOnce(&mut Deployment, &mut Workloads),
) -> ClusterSnapshot {
    let mut web = deployment("app", "web", replicas);
    let mut workloads = Workloads::default();
    change(&mut web, &mut workloads);
    workloads.deployments.push(web);
    ClusterSnapshot::build(SnapshotParts {
        nodes: ["hot", "cold-a", "cold-b"]
            .iter()
            .map(|n| node(n).cpu(4000).memory(16 * GIB).build())
            .collect(),
        pods: vec![
            pod("app", "web-0")
                .node("hot")
                .cpu(1000)
                .of_deployment("web")
                .build(),
            pod("app", "web-1")
                .node("cold-a")
                .cpu(100)
                .of_deployment("web")
                .build(),
            pod("app", "set-0")
                .node("hot")
                .cpu(100)
                .owner("StatefulSet", "set")
                .label("app", "web")
                .build(),
            pod("kube-system", "pinned")
                .node("hot")
                .cpu(1500)
                .bare()
                .build(),
        ],
        pdbs: vec![pdb("app", "web", "app", "web", allowed)],
        workloads,
        ..Default::default()
    })
}

fn evictor(mode: &str) -> DefaultEvictor {
    DefaultEvictor::from_json(&serde_json::json!({ "moveMode": mode })).unwrap()
}

/// Plans `pods` (by name, namespace `app`) one after the other under `mode`: what each
/// answered, and the plan.
fn plan(
    snap: &ClusterSnapshot,
    mode: &str,
    limits: Limits,
    pods: &[&str],
) -> (Vec<Result<(), EvictError>>, Vec<PlannedEviction>) {
    let ev = evictor(mode);
    let nodes = snap.ready_nodes(&Default::default());
    let mut state = PlanningState::new(snap, limits);
    let answers = {
        let mut cx = Context::new(&mut state, &ev, "default", "T", 0, &nodes, None);
        pods.iter()
            .map(|p| cx.evict(snap.pod_id("app", p).unwrap(), "r"))
            .collect()
    };
    (answers, state.into_output().evictions)
}

fn id(snap: &ClusterSnapshot, name: &str) -> PodId {
    snap.pod_id("app", name).unwrap()
}

#[test]
fn a_single_replica_behind_a_budget_with_nothing_left_is_surged_only_when_asked() {
    let snap = cluster(1, 0, |_, _| {});
    let (answers, plan_evict) = plan(&snap, "Evict", Limits::default(), &["web-0"]);
    assert_eq!(
        answers,
        vec![Err(EvictError::DisruptionBudget("app/web".into()))]
    );
    assert!(plan_evict.is_empty());

    let (answers, planned) = plan(&snap, "SurgeWhenBlocked", Limits::default(), &["web-0"]);
    assert_eq!(answers, vec![Ok(())]);
    assert_eq!(planned.len(), 1);
    let e = &planned[0];
    assert_eq!(e.pod, id(&snap, "web-0"));
    assert_eq!(
        e.mechanism,
        Mechanism::Surge {
            deployment: "app/web".into()
        }
    );
    assert!(
        e.reason.contains("moved by a surge of Deployment app/web"),
        "{}",
        e.reason
    );
    assert!(e.reason.contains("no disruptions left"), "{}", e.reason);
    // The new pod is predicted beside the pod, which still holds its cpu on `hot`.
    let dest = e.destination.map(|n| snap.node(n).name.to_string());
    assert!(
        matches!(dest.as_deref(), Some("cold-a") | Some("cold-b")),
        "{dest:?}"
    );
}

#[test]
fn a_surge_spends_no_disruption_budget_so_every_replica_behind_it_may_go_one_by_one() {
    let snap = cluster(2, 0, |_, _| {});
    let (answers, planned) = plan(
        &snap,
        "SurgeWhenBlocked",
        Limits::default(),
        &["web-0", "web-1"],
    );
    assert_eq!(answers, vec![Ok(()), Ok(())]);
    assert!(planned.iter().all(|e| e.mechanism.as_str() == "surge"));
    // Evicting would spend the budget: with one disruption allowed, the first goes by
    // eviction (SurgeWhenBlocked), and the second is then blocked, so surged.
    let snap = cluster(2, 1, |_, _| {});
    let (answers, planned) = plan(
        &snap,
        "SurgeWhenBlocked",
        Limits::default(),
        &["web-0", "web-1"],
    );
    assert_eq!(answers, vec![Ok(()), Ok(())]);
    let how: Vec<_> = planned.iter().map(|e| e.mechanism.as_str()).collect();
    assert_eq!(how, ["evict", "surge"]);
}

#[test]
fn surge_mode_surges_every_deployment_pod_and_evicts_the_rest() {
    let snap = cluster(3, 3, |_, _| {});
    let (answers, planned) = plan(&snap, "Surge", Limits::default(), &["web-0", "set-0"]);
    assert_eq!(answers, vec![Ok(()), Ok(())]);
    let how: Vec<_> = planned
        .iter()
        .map(|e| (snap.pod(e.pod).name.to_string(), e.mechanism.as_str()))
        .collect();
    assert_eq!(
        how,
        [
            ("web-0".to_string(), "surge"),
            ("set-0".to_string(), "evict")
        ]
    );
    // SurgeWhenBlocked evicts where the budget allows and replicas are several.
    let (_, planned) = plan(&snap, "SurgeWhenBlocked", Limits::default(), &["web-0"]);
    assert_eq!(planned[0].mechanism, Mechanism::Evict);
}

#[test]
fn a_surge_counts_against_the_limits_per_node_namespace_and_cycle() {
    let snap = cluster(3, 0, |_, _| {});
    for limits in [
        Limits {
            per_namespace: Some(1),
            ..Limits::default()
        },
        Limits {
            total: Some(1),
            ..Limits::default()
        },
    ] {
        // `web-0` surges and spends the one move the limit allows.
        let (answers, planned) = plan(&snap, "Surge", limits, &["web-0", "web-1"]);
        assert_eq!(answers[0], Ok(()), "{limits:?}");
        assert_eq!(planned.len(), 1, "{limits:?}");
        assert!(
            matches!(
                answers[1],
                Err(EvictError::NamespaceLimit(1) | EvictError::TotalLimit(1))
            ),
            "{limits:?}: {:?}",
            answers[1]
        );
    }
    let per_node = Limits {
        per_node: Some(1),
        ..Limits::default()
    };
    let snap = cluster(3, 0, |_, _| {});
    // Both on `hot`: the second move from it is over the limit per node.
    let (answers, _) = plan(&snap, "Surge", per_node, &["web-0", "set-0"]);
    assert_eq!(answers[1], Err(EvictError::NodeLimit(1)));
}

#[test]
fn a_deployment_that_cannot_surge_is_refused_with_both_reasons_when_its_eviction_is_blocked() {
    type Change = fn(&mut Deployment, &mut Workloads);
    let cases: [(&str, Change); 5] = [
        ("is paused", |d, _| d.paused = true),
        (
            "in the middle of a rollout: 0 of 1 replicas run the current template",
            |d, _| d.updated_replicas = 0,
        ),
        (
            "target of HorizontalPodAutoscaler app/web, which would fight the scale",
            |_, w| {
                w.autoscalers.push(Autoscaler {
                    namespace: "app".into(),
                    name: "web".into(),
                    target_kind: "Deployment".into(),
                    target_name: "web".into(),
                })
            },
        ),
        (
            "ResourceQuota app/pods has no room for one more pod",
            |_, w| {
                w.quotas.push(ResourceQuota {
                    namespace: "app".into(),
                    name: "pods".into(),
                    hard: vec![("pods".into(), 3)],
                    used: vec![("pods".into(), 3)],
                })
            },
        ),
        ("a surge of Deployment app/web is in flight", |d, _| {
            d.surge_in_flight = Some("{}".into())
        }),
    ];
    for (why, change) in cases {
        let snap = cluster(1, 0, change);
        let (answers, planned) = plan(&snap, "SurgeWhenBlocked", Limits::default(), &["web-0"]);
        assert!(planned.is_empty(), "{why}");
        let Err(EvictError::NoSurge(text)) = &answers[0] else {
            panic!("{why}: {:?}", answers[0]);
        };
        assert!(text.contains("PodDisruptionBudget app/web"), "{text}");
        assert!(text.contains(why), "{why}: {text}");
        // Its eviction allowed, the pod is evicted as before.
        let snap = cluster(1, 1, change);
        let (answers, planned) = plan(&snap, "SurgeWhenBlocked", Limits::default(), &["web-0"]);
        assert_eq!(answers, vec![Ok(())], "{why}");
        assert_eq!(planned[0].mechanism, Mechanism::Evict, "{why}");
    }
}

#[test]
fn a_quota_with_room_an_hpa_of_another_deployment_and_other_namespaces_do_not_refuse() {
    let snap = cluster(1, 0, |_, w| {
        w.autoscalers.push(Autoscaler {
            namespace: "app".into(),
            name: "api".into(),
            target_kind: "Deployment".into(),
            target_name: "api".into(),
        });
        w.quotas.push(ResourceQuota {
            namespace: "app".into(),
            name: "cpu".into(),
            hard: vec![("requests.cpu".into(), 2000)],
            used: vec![("requests.cpu".into(), 1000)],
        });
        w.quotas.push(ResourceQuota {
            namespace: "other".into(),
            name: "full".into(),
            hard: vec![("pods".into(), 0)],
            used: vec![("pods".into(), 0)],
        });
    });
    let (answers, planned) = plan(&snap, "SurgeWhenBlocked", Limits::default(), &["web-0"]);
    assert_eq!(answers, vec![Ok(())]);
    assert_eq!(planned[0].mechanism.as_str(), "surge");
    // One more millicore used and the pod's 1000m no longer fits.
    let snap = cluster(1, 0, |_, w| {
        w.quotas.push(ResourceQuota {
            namespace: "app".into(),
            name: "cpu".into(),
            hard: vec![("requests.cpu".into(), 2000)],
            used: vec![("requests.cpu".into(), 1001)],
        });
    });
    let (answers, _) = plan(&snap, "SurgeWhenBlocked", Limits::default(), &["web-0"]);
    assert!(
        matches!(&answers[0], Err(EvictError::NoSurge(t)) if t.contains("requests.cpu used 1001 of 2000")),
        "{answers:?}"
    );
}

#[test]
fn gang_members_and_pods_without_their_deployment_in_the_snapshot_are_never_surged() {
    // A gang member: its group's rule applies, never a surge.
    let web = deployment("app", "web", 1);
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![node("n").cpu(4000).build(), node("m").cpu(4000).build()],
        pods: vec![pod("app", "web-0")
            .node("n")
            .cpu(100)
            .of_deployment("web")
            .pod_group("g")
            .build()],
        pdbs: vec![pdb("app", "web", "app", "web", 0)],
        pod_groups: vec![pod_group("app", "g", 1)],
        workloads: Workloads {
            deployments: vec![web],
            ..Workloads::default()
        },
        ..Default::default()
    });
    let (answers, _) = plan(&snap, "Surge", Limits::default(), &["web-0"]);
    assert!(
        matches!(
            answers[0],
            Err(EvictError::GangMinMember(_) | EvictError::DisruptionBudget(_))
        ),
        "{answers:?}"
    );
    // The Deployment not in the snapshot (not read): evicted as before, or blocked.
    let snap = cluster(1, 0, |_, _| {});
    let parts = snap.into_parts();
    let snap = ClusterSnapshot::build(SnapshotParts {
        workloads: Workloads::default(),
        ..parts
    });
    let (answers, _) = plan(&snap, "Surge", Limits::default(), &["web-0"]);
    assert_eq!(
        answers,
        vec![Err(EvictError::DisruptionBudget("app/web".into()))]
    );
}
