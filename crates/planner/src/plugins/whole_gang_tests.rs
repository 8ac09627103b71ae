//! `gangPolicy: WholeGang`: a running member goes only with its whole gang, all or nothing.

use crate::framework::*;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{
    k8s_pod_group, node, pdb, pod, pod_group, volcano_group, PodBuilder,
};
use crate::snapshot::{ClusterSnapshot, DisruptionMode};
use crate::snapshot::{Phase, SnapshotParts, TaintEffect};
use serde_json::json;

const NOW: i64 = crate::snapshot::builders::T0 + 86_400;

fn whole() -> DefaultEvictor {
    DefaultEvictor::from_json(&json!({"gangPolicy": "WholeGang"})).unwrap()
}

fn member(name: &str, node: &str) -> PodBuilder {
    pod("ml", name)
        .node(node)
        .cpu(1000)
        .owner("Job", "train")
        .pod_group("train")
}

/// A gang of three (two on n1, one on n2), minMember 3, and room for all of them on n3/n4.
fn parts() -> SnapshotParts {
    SnapshotParts {
        nodes: vec![
            node("n1").cpu(4000).build(),
            node("n2").cpu(4000).build(),
            node("n3").cpu(4000).build(),
            node("n4").cpu(4000).build(),
        ],
        pods: vec![
            member("a", "n1").build(),
            member("b", "n1").build(),
            member("c", "n2").build(),
            pod("ml", "other").node("n1").cpu(500).build(),
        ],
        pod_groups: vec![pod_group("ml", "train", 3)],
        ..Default::default()
    }
}

/// Asks for the eviction of `pod` as a plugin would; returns the result and the pods planned.
fn evict(
    snap: &ClusterSnapshot,
    evictor: &DefaultEvictor,
    limits: Limits,
    pod: &str,
    prepare: impl FnOnce(&mut PlanningState<'_>),
) -> (Result<(), EvictError>, Vec<PlannedEviction>) {
    let nodes = snap.ready_nodes(&Default::default());
    let mut state = PlanningState::new(snap, limits);
    prepare(&mut state);
    let mut cx = Context::new(&mut state, evictor, "p", "T", NOW, &nodes, None);
    let id = snap.pod_id("ml", pod).unwrap();
    let r = cx.evict(id, "chosen");
    (r, state.ledger().evictions().to_vec())
}

fn names(snap: &ClusterSnapshot, e: &[PlannedEviction]) -> Vec<String> {
    e.iter().map(|e| snap.pod(e.pod).name.to_string()).collect()
}

#[test]
fn a_running_member_goes_with_its_whole_gang() {
    let snap = ClusterSnapshot::build(parts());
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "b", |_| {});
    r.unwrap();
    // the chosen pod first, then the other members in order, one after the other
    assert_eq!(names(&snap, &planned), ["b", "a", "c"]);
    let gang = snap.gangs_of_pod(planned[0].pod)[0];
    for e in &planned {
        assert_eq!(e.gang, Some(gang));
        assert!(e.destination.is_some(), "every member has a destination");
    }
    // 3 cpus of members on 2 free nodes of 4 cpus: placed cumulatively, never on n1 for b
    let dests: Vec<&str> = planned
        .iter()
        .map(|e| &*snap.node(e.destination.unwrap()).name)
        .collect();
    assert_ne!(dests[0], "n1");
    assert!(
        planned[0].reason.contains("whole gang PodGroup ml/train"),
        "{}",
        planned[0].reason
    );
    assert!(
        planned[1].reason.contains("evicted whole with ml/b"),
        "{}",
        planned[1].reason
    );
    // the default policy refuses the same pick: the gang has no member to spare
    let (r, planned) = evict(
        &snap,
        &DefaultEvictor::default(),
        Limits::default(),
        "b",
        |_| {},
    );
    assert!(matches!(r, Err(EvictError::GangMinMember(_))), "{r:?}");
    assert!(planned.is_empty());
}

#[test]
fn members_that_do_not_run_stay_or_go_alone() {
    let mut p = parts();
    p.pods
        .push(member("failed", "n2").phase(Phase::Failed).build());
    p.pods.push(member("going", "n2").terminating().build());
    p.pods
        .push(member("pending", "n2").phase(Phase::Pending).build());
    let snap = ClusterSnapshot::build(p);
    // a failed member goes alone: the gang does not miss it
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "failed", |_| {});
    r.unwrap();
    assert_eq!(names(&snap, &planned), ["failed"]);
    assert_eq!(planned[0].gang, None);
    // a running member takes the bound, active members with it: not the failed one, not the
    // terminating one
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "a", |_| {});
    r.unwrap();
    assert_eq!(names(&snap, &planned), ["a", "b", "c", "pending"]);
}

#[test]
fn limits_and_budgets_count_the_whole_gang() {
    let snap = ClusterSnapshot::build(parts());
    let refused = |limits: Limits, want: &str| {
        let (r, planned) = evict(&snap, &whole(), limits, "a", |_| {});
        let e = r.unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
        assert!(
            planned.is_empty(),
            "nothing is planned when the gang cannot go whole"
        );
    };
    refused(
        Limits {
            per_node: Some(1),
            ..Default::default()
        },
        "2 members to evict together on node n1",
    );
    refused(
        Limits {
            total: Some(2),
            ..Default::default()
        },
        "3 members to evict together",
    );
    refused(
        Limits {
            per_namespace: Some(2),
            ..Default::default()
        },
        "in namespace ml",
    );
    // exactly enough: all three go
    let (r, planned) = evict(
        &snap,
        &whole(),
        Limits {
            per_node: Some(2),
            per_namespace: Some(3),
            total: Some(3),
        },
        "a",
        |_| {},
    );
    r.unwrap();
    assert_eq!(planned.len(), 3);

    // a budget allowing one disruption over two members
    let mut p = parts();
    p.pods[0] = member("a", "n1").label("guard", "yes").build();
    p.pods[1] = member("b", "n1").label("guard", "yes").build();
    p.pdbs = vec![pdb("ml", "guard", "guard", "yes", 1)];
    let snap = ClusterSnapshot::build(p);
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "c", |_| {});
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("2 members under PodDisruptionBudget ml/guard, which allows 1"),
        "{e}"
    );
    assert!(planned.is_empty());
}

#[test]
fn a_protected_member_keeps_the_whole_gang() {
    let mut p = parts();
    p.pods[1] = member("b", "n1").local_storage().build();
    let snap = ClusterSnapshot::build(p);
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "a", |_| {});
    let e = r.unwrap_err().to_string();
    assert!(e.contains("its member ml/b may not be evicted"), "{e}");
    assert!(e.contains("local storage"), "{e}");
    assert!(planned.is_empty());
}

#[test]
fn the_gang_goes_only_where_every_member_fits() {
    // n3 is tainted and n4 small: with the gang gone, c's best place is n2 again. The members
    // are gone at once (a kubelet that ignores grace periods), so their room is free for the
    // replacements.
    let instant = |s: &mut PlanningState<'_>| {
        s.placement_mut()
            .set_termination(crate::sim::Termination::INSTANT)
    };
    let mut p = parts();
    p.nodes[2] = node("n3")
        .cpu(4000)
        .taint("gpu", "none", TaintEffect::NoSchedule)
        .build();
    p.nodes[3] = node("n4").cpu(1000).build();
    let snap = ClusterSnapshot::build(p.clone());
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "c", instant);
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("the simulated destination of the pod is its own node n2"),
        "{e}"
    );
    assert!(planned.is_empty());
    // n1 cordoned, n2 holds two members, n4 none: the third member has no node at all
    p.nodes[0] = node("n1").cpu(4000).unschedulable().build();
    p.nodes[1] = node("n2").cpu(2000).build();
    p.nodes[3] = node("n4").cpu(900).build();
    let snap = ClusterSnapshot::build(p);
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "a", instant);
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("the simulator finds no node for member ml/c: 0/4 nodes are available"),
        "{e}"
    );
    assert!(planned.is_empty());
}

#[test]
fn a_refused_member_keeps_the_rest_of_the_gang() {
    let snap = ClusterSnapshot::build(parts());
    let b = snap.pod_id("ml", "b").unwrap();
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "a", |s| s.pin(b));
    let e = r.unwrap_err().to_string();
    assert!(e.contains("the API refused to evict ml/b"), "{e}");
    assert!(planned.is_empty());
    // a member evicted earlier in the cycle (then another refused): the rest stays
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "a", |s| {
        s.record_evicted_earlier(b, None)
    });
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("ml/b, a member of gang PodGroup ml/train (scheduling.x-k8s.io), is planned or evicted already"),
        "{e}"
    );
    assert!(planned.is_empty());
}

#[test]
fn an_unknown_pod_group_keeps_every_member() {
    let mut p = parts();
    p.pod_groups = vec![volcano_group("ml", "elsewhere", 1)];
    let snap = ClusterSnapshot::build(p);
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "a", |_| {});
    assert!(
        matches!(
            r,
            Err(EvictError::WholeGang(_)) | Err(EvictError::GangUnknown(_))
        ),
        "{r:?}"
    );
    assert!(planned.is_empty());
}

/// Kubernetes' own PodGroup (`scheduling.k8s.io`): the gang of [`parts`], its members naming
/// it in `spec.schedulingGroup`, with gang `minCount` and `disruptionMode`.
fn k8s_parts(min_count: i32, mode: Option<DisruptionMode>) -> SnapshotParts {
    let m = |name: &str, node: &str| {
        pod("ml", name)
            .node(node)
            .cpu(1000)
            .owner("Job", "train")
            .scheduling_group("train")
            .build()
    };
    SnapshotParts {
        pods: vec![
            m("a", "n1"),
            m("b", "n1"),
            m("c", "n2"),
            pod("ml", "other").node("n1").cpu(500).build(),
        ],
        pod_groups: vec![k8s_pod_group("ml", "train", min_count, mode)],
        ..parts()
    }
}

fn admits(snap: &ClusterSnapshot, evictor: &DefaultEvictor, pod: &str) -> Result<(), String> {
    evictor.filter(snap, snap.pod_id("ml", pod).unwrap(), NOW)
}

#[test]
fn disruption_mode_all_goes_whole_whatever_the_gang_policy() {
    let snap = ClusterSnapshot::build(k8s_parts(3, Some(DisruptionMode::All)));
    for evictor in [DefaultEvictor::default(), whole()] {
        // no member to spare, yet the filter admits it: the gang goes whole (its members gone
        // at once, so that each replacement finds the room of the gang free)
        admits(&snap, &evictor, "b").unwrap();
        let (r, planned) = evict(&snap, &evictor, Limits::default(), "b", |s| {
            s.placement_mut()
                .set_termination(crate::sim::Termination::INSTANT)
        });
        r.unwrap();
        assert_eq!(names(&snap, &planned), ["b", "a", "c"]);
        let gang = snap.gangs_of_pod(planned[0].pod)[0];
        assert_eq!(
            snap.gang(gang).describe(),
            "PodGroup ml/train (scheduling.k8s.io)"
        );
        for e in &planned {
            assert_eq!(e.gang, Some(gang));
            assert_ne!(e.destination, Some(e.node), "every member elsewhere");
        }
        assert!(
            planned[0].reason.contains("(disruptionMode all)"),
            "{}",
            planned[0].reason
        );
    }
    // all or nothing: a limit that leaves room for two of the three plans none
    let limits = Limits {
        total: Some(2),
        ..Limits::default()
    };
    let (r, planned) = evict(&snap, &DefaultEvictor::default(), limits, "b", |_| {});
    assert!(
        matches!(&r, Err(EvictError::WholeGang(why)) if why.contains("disruptionMode all")),
        "{r:?}"
    );
    assert!(planned.is_empty());
}

#[test]
fn disruption_mode_single_keeps_min_count_whatever_the_gang_policy() {
    let snap = ClusterSnapshot::build(k8s_parts(2, Some(DisruptionMode::Single)));
    for evictor in [DefaultEvictor::default(), whole()] {
        let nodes = snap.ready_nodes(&Default::default());
        let mut state = PlanningState::new(&snap, Limits::default());
        let mut cx = Context::new(&mut state, &evictor, "p", "T", NOW, &nodes, None);
        let id = |n: &str| snap.pod_id("ml", n).unwrap();
        // three running, minCount 2: one goes, alone
        cx.evict(id("b"), "chosen").unwrap();
        let r = cx.evict(id("a"), "chosen");
        assert!(matches!(r, Err(EvictError::GangMinMember(_))), "{r:?}");
        let r = cx.evict(id("c"), "chosen");
        assert!(matches!(r, Err(EvictError::GangMinMember(_))), "{r:?}");
        let planned = state.ledger().evictions();
        assert_eq!(names(&snap, planned), ["b"]);
        assert_eq!(planned[0].gang, None);
    }
    // minCount 3 of 3 running: the filter spares none, and says why
    let snap = ClusterSnapshot::build(k8s_parts(3, Some(DisruptionMode::Single)));
    let why = admits(&snap, &whole(), "b").unwrap_err();
    assert!(
        why.contains("no member to spare (disruptionMode single)"),
        "{why}"
    );
}

#[test]
fn without_a_disruption_mode_the_gang_policy_decides() {
    let snap = ClusterSnapshot::build(k8s_parts(3, None));
    let why = admits(&snap, &DefaultEvictor::default(), "b").unwrap_err();
    assert!(why.contains("(gangPolicy SurplusOnly)"), "{why}");
    let (r, planned) = evict(
        &snap,
        &DefaultEvictor::default(),
        Limits::default(),
        "b",
        |_| {},
    );
    assert!(matches!(r, Err(EvictError::GangMinMember(_))), "{r:?}");
    assert!(planned.is_empty());
    admits(&snap, &whole(), "b").unwrap();
    let (r, planned) = evict(&snap, &whole(), Limits::default(), "b", |_| {});
    r.unwrap();
    assert_eq!(names(&snap, &planned), ["b", "a", "c"]);
    assert!(planned[0].reason.contains("(gangPolicy WholeGang)"));
}

#[test]
fn a_kubernetes_group_that_was_not_read_keeps_every_member() {
    let mut p = k8s_parts(1, Some(DisruptionMode::Single));
    p.pod_groups.clear();
    let snap = ClusterSnapshot::build(p);
    for evictor in [DefaultEvictor::default(), whole()] {
        let why = admits(&snap, &evictor, "b").unwrap_err();
        assert!(why.contains("not in the snapshot"), "{why}");
        let (r, planned) = evict(&snap, &evictor, Limits::default(), "b", |_| {});
        assert!(r.is_err(), "{r:?}");
        assert!(planned.is_empty());
    }
}
