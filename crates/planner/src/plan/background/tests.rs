use super::*;
use crate::snapshot::builders::{node, pod, snapshot};
use crate::snapshot::{Phase, Pod};

const T0: i64 = 1_796_032_800;

fn vm(name: &str) -> crate::snapshot::builders::PodBuilder {
    pod("vms", name).node("n1").request_evict_only()
}

fn cluster(pods: Vec<Pod>) -> ClusterSnapshot {
    snapshot(vec![node("n1").build(), node("n2").build()], pods)
}

fn id(snap: &ClusterSnapshot, name: &str) -> PodId {
    snap.pod_ids()
        .find(|&p| &*snap.pod(p).name == name)
        .unwrap()
}

#[test]
fn an_assumed_eviction_is_in_progress_until_its_timeout() {
    let snap = cluster(vec![vm("a").build(), vm("b").build()]);
    let mut bg = BackgroundEvictions::new(600);
    bg.assume(&snap, id(&snap, "a"), "default", "PodLifeTime", T0);
    let entry = &bg.tracked()["uid-vms-a"];
    assert_eq!(entry.node, "n1");
    assert_eq!(
        entry.requested_by,
        Some(("default".to_string(), "PodLifeTime"))
    );
    // Still in progress at the timeout (upstream drops it once older than the timeout).
    let seen = bg.observe(&snap, T0 + 600);
    assert_eq!(seen.in_progress, [id(&snap, "a")]);
    assert!(seen.ended.is_empty());
    // Assumed again (another plugin, a later cycle): the first request stays.
    bg.assume(
        &snap,
        id(&snap, "a"),
        "other",
        "LowNodeUtilization",
        T0 + 300,
    );
    assert_eq!(bg.tracked()["uid-vms-a"].assumed_at, Some(T0));
    let seen = bg.observe(&snap, T0 + 601);
    assert!(seen.in_progress.is_empty());
    assert_eq!(seen.ended.len(), 1);
    assert_eq!(seen.ended[0].1, Ended::TimedOut);
    assert!(bg.tracked().is_empty());
}

#[test]
fn an_eviction_ends_when_its_pod_goes_finishes_or_loses_an_annotation() {
    let before = cluster(vec![
        vm("gone").build(),
        vm("replaced").build(),
        vm("done").build(),
        vm("failed").build(),
        vm("unmarked").build(),
        vm("cancelled").eviction_in_progress().build(),
        vm("waiting").build(),
    ]);
    let mut bg = BackgroundEvictions::new(600);
    for p in before.pod_ids() {
        bg.assume(&before, p, "default", "PodLifeTime", T0);
    }
    // "cancelled" is seen with eviction-in-progress.
    let seen = bg.observe(&before, T0 + 1);
    assert_eq!(seen.in_progress.len(), 7);
    assert!(bg.tracked()["uid-vms-cancelled"].seen_in_progress);
    let mut replaced = vm("replaced").build();
    replaced.uid = "uid-vms-replaced-2".into();
    let after = cluster(vec![
        replaced,
        vm("done").phase(Phase::Succeeded).build(),
        vm("failed").phase(Phase::Failed).build(),
        pod("vms", "unmarked").node("n1").build(),
        vm("cancelled").build(),
        vm("waiting").build(),
    ]);
    let seen = bg.observe(&after, T0 + 2);
    let mut ended: Vec<(String, Ended)> = seen
        .ended
        .iter()
        .map(|(e, why)| (e.name.clone(), *why))
        .collect();
    ended.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        ended,
        [
            ("cancelled".to_string(), Ended::NoLongerInProgress),
            ("done".to_string(), Ended::Finished),
            ("failed".to_string(), Ended::Finished),
            ("gone".to_string(), Ended::PodGone),
            ("replaced".to_string(), Ended::PodGone),
            ("unmarked".to_string(), Ended::NoLongerRequestEvictOnly),
        ]
    );
    // Never seen in progress, not timed out: still assumed in progress.
    assert_eq!(seen.in_progress, [id(&after, "waiting")]);
}

#[test]
fn an_eviction_in_progress_is_found_by_its_annotations() {
    let snap = cluster(vec![
        vm("migrating").eviction_in_progress().build(),
        // Both are needed, as upstream's informer asks.
        pod("vms", "marked-only")
            .node("n1")
            .eviction_in_progress()
            .build(),
        vm("asked-only").build(),
        vm("finished")
            .eviction_in_progress()
            .phase(Phase::Succeeded)
            .build(),
    ]);
    let mut bg = BackgroundEvictions::default();
    assert_eq!(bg.timeout_seconds, 600, "upstream's 10 minutes");
    let seen = bg.observe(&snap, T0);
    assert_eq!(seen.found, ["vms/migrating"]);
    assert_eq!(seen.in_progress, [id(&snap, "migrating")]);
    let entry = &bg.tracked()["uid-vms-migrating"];
    assert_eq!(entry.assumed_at, None);
    assert!(entry.seen_in_progress);
    // Found, not assumed: no timeout, however long it takes.
    let seen = bg.observe(&snap, T0 + 100_000);
    assert_eq!(seen.in_progress, [id(&snap, "migrating")]);
    assert!(seen.found.is_empty() && seen.ended.is_empty());
    // Answered by the API later (a request crossing the annotation): assumed from then, and
    // timed out as upstream's cache times it out, then taken up again while the annotations
    // stay.
    bg.assume(
        &snap,
        id(&snap, "migrating"),
        "default",
        "PodLifeTime",
        T0 + 100_000,
    );
    let seen = bg.observe(&snap, T0 + 100_601);
    assert_eq!(seen.ended.len(), 1);
    assert_eq!(seen.ended[0].1, Ended::TimedOut);
    assert_eq!(seen.found, ["vms/migrating"]);
    assert_eq!(seen.in_progress, [id(&snap, "migrating")]);
}

#[test]
fn the_pods_in_progress_count_against_the_limits_of_the_next_plan() {
    use crate::framework::{Limits, PlanningState};
    let snap = cluster(vec![
        vm("a").eviction_in_progress().build(),
        vm("b").build(),
    ]);
    let mut bg = BackgroundEvictions::default();
    let seen = bg.observe(&snap, T0);
    let mut st = PlanningState::new(
        &snap,
        Limits {
            per_node: Some(1),
            ..Default::default()
        },
    );
    for &p in &seen.in_progress {
        st.record_in_background(p);
    }
    assert_eq!(
        st.ledger().admit(id(&snap, "b")),
        Err(crate::framework::EvictError::NodeLimit(1))
    );
}
