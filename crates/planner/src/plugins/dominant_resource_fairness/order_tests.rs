use super::*;
use crate::framework::{Limits, PlanningState};
use crate::snapshot::builders::{node, pod, snapshot};

const GPU: &str = "nvidia.com/gpu";

/// 100 CPUs and 100 GPUs over two nodes; A: 2 CPU + 1 GPU per pod, B: 1 CPU + 2 GPU.
fn classic(a: usize, b: usize) -> ClusterSnapshot {
    let nodes = vec![
        node("n1").cpu(50_000).resource(GPU, 50).build(),
        node("n2").cpu(50_000).resource(GPU, 50).build(),
        node("down")
            .cpu(1_000_000)
            .resource(GPU, 1000)
            .not_ready()
            .build(),
    ];
    let mut pods = Vec::new();
    for i in 0..a {
        pods.push(
            pod("a", &format!("a{i:02}"))
                .node(if i % 2 == 0 { "n1" } else { "n2" })
                .cpu(2000)
                .resource(GPU, 1)
                .build(),
        );
    }
    for i in 0..b {
        pods.push(
            pod("b", &format!("b{i:02}"))
                .node(if i % 2 == 0 { "n1" } else { "n2" })
                .cpu(1000)
                .resource(GPU, 2)
                .build(),
        );
    }
    // Not counted: pending, failed, or on a node that is not Ready.
    pods.push(pod("c", "pending").cpu(50_000).build());
    pods.push(
        pod("c", "failed")
            .node("n1")
            .cpu(50_000)
            .phase(crate::snapshot::Phase::Failed)
            .build(),
    );
    pods.push(pod("d", "lost").node("down").cpu(50_000).build());
    snapshot(nodes, pods)
}

#[test]
fn dominant_shares_of_the_classic_example() {
    let s = classic(30, 15);
    let f = Fairness::new(&s, None);
    let st = PlanningState::new(&s, Limits::default());
    let a = f.share(st.ledger(), "a").unwrap();
    let b = f.share(st.ledger(), "b").unwrap();
    assert_eq!(f.resource_name(&a), Some("cpu"));
    assert_eq!(a.fraction(), 0.6);
    assert_eq!(f.resource_name(&b), Some(GPU));
    assert_eq!(b.fraction(), 0.3);
    assert_eq!(f.share(st.ledger(), "c").unwrap(), Share::ZERO);
    assert_eq!(f.share(st.ledger(), "d").unwrap(), Share::ZERO);
    let summary = f.summary(st.ledger());
    let names: Vec<&str> = summary.iter().map(|t| t.tenant.as_str()).collect();
    assert_eq!(
        names,
        ["a", "b"],
        "tenants holding nothing are not reported"
    );
}

#[test]
fn equal_shares_of_different_resources_tie_exactly() {
    let s = classic(15, 15);
    let f = Fairness::new(&s, None);
    let st = PlanningState::new(&s, Limits::default());
    assert_eq!(
        f.share(st.ledger(), "a")
            .unwrap()
            .cmp(&f.share(st.ledger(), "b").unwrap()),
        Ordering::Equal
    );
}

#[test]
fn shares_follow_the_plan_and_order_the_candidates() {
    let s = classic(30, 15);
    let f = Fairness::new(&s, None);
    let mut st = PlanningState::new(&s, Limits::default());
    let a0 = s.pod_id("a", "a00").unwrap();
    let b0 = s.pod_id("b", "b00").unwrap();
    let mut pods = vec![b0, a0];
    f.sort(st.ledger(), &mut pods);
    assert_eq!(pods, [a0, b0], "A holds more");
    // Plan 15 of A's pods away: A falls to 30% cpu, level with B.
    for i in 1..=15 {
        let p = s.pod_id("a", &format!("a{i:02}")).unwrap();
        st.plan_eviction(p, "p", "T", "r".into()).unwrap();
    }
    assert_eq!(f.share(st.ledger(), "a").unwrap().fraction(), 0.3);
    // A tie: the upstream order (here namespace/name) decides.
    let mut pods = vec![b0, a0];
    f.sort(st.ledger(), &mut pods);
    assert_eq!(pods, [a0, b0]);
    st.plan_eviction(a0, "p", "T", "r".into()).unwrap();
    let a1 = s.pod_id("a", "a16").unwrap();
    let mut pods = vec![a1, b0];
    assert_eq!(
        f.take_next(st.ledger(), &mut pods),
        Some(b0),
        "B holds more now"
    );
    assert_eq!(pods, [a1]);
    let summary = f.summary(st.ledger());
    assert_eq!(summary[0].before, 0.6);
    assert_eq!(summary[0].before_resource.as_deref(), Some("cpu"));
    assert!((summary[0].after - 0.28).abs() < 1e-9);
    assert_eq!(summary[1].after, 0.3);
}

#[test]
fn pods_evicted_before_the_first_call_count() {
    let s = classic(30, 15);
    let mut st = PlanningState::new(&s, Limits::default());
    st.record_evicted_earlier(s.pod_id("a", "a00").unwrap(), None);
    st.plan_eviction(s.pod_id("a", "a01").unwrap(), "p", "T", "r".into())
        .unwrap();
    let f = Fairness::new(&s, None);
    assert!((f.share(st.ledger(), "a").unwrap().fraction() - 0.56).abs() < 1e-9);
    // ... and only once.
    assert!((f.share(st.ledger(), "a").unwrap().fraction() - 0.56).abs() < 1e-9);
}

#[test]
fn tenants_by_label_and_unlabelled_pods() {
    let nodes = vec![node("n1").cpu(10_000).build()];
    let pods = vec![
        pod("x", "p1")
            .node("n1")
            .cpu(1000)
            .label("team", "red")
            .build(),
        pod("y", "p2")
            .node("n1")
            .cpu(3000)
            .label("team", "red")
            .build(),
        pod("x", "p3")
            .node("n1")
            .cpu(2000)
            .label("team", "blue")
            .build(),
        pod("x", "p4").node("n1").cpu(500).build(),
        pod("y", "p5").node("n1").cpu(500).build(),
    ];
    let s = snapshot(nodes, pods);
    let f = Fairness::new(&s, Some("team"));
    let st = PlanningState::new(&s, Limits::default());
    assert_eq!(f.tenant(s.pod_id("y", "p2").unwrap()), "red");
    assert_eq!(f.tenant(s.pod_id("y", "p5").unwrap()), "");
    assert_eq!(f.share(st.ledger(), "red").unwrap().fraction(), 0.4);
    assert_eq!(f.share(st.ledger(), "blue").unwrap().fraction(), 0.2);
    assert_eq!(
        f.share(st.ledger(), "").unwrap().fraction(),
        0.1,
        "pods without the label form one tenant, whatever their namespace"
    );
    assert_eq!(
        f.share(st.ledger(), "x"),
        None,
        "namespaces are not tenants here"
    );
    let names: Vec<String> = f
        .summary(st.ledger())
        .into_iter()
        .map(|t| t.tenant)
        .collect();
    assert_eq!(names, ["", "blue", "red"]);
}

#[test]
fn memory_and_extended_resources_count_but_not_pods_or_storage() {
    let nodes = vec![node("n1")
        .cpu(10_000)
        .memory(100)
        .resource("ephemeral-storage", 10)
        .build()];
    let pods = vec![pod("a", "p")
        .node("n1")
        .cpu(1000)
        .memory(30)
        .resource("ephemeral-storage", 9)
        .build()];
    let s = snapshot(nodes, pods);
    let f = Fairness::new(&s, None);
    let st = PlanningState::new(&s, Limits::default());
    let a = f.share(st.ledger(), "a").unwrap();
    assert_eq!(f.resource_name(&a), Some("memory"));
    assert_eq!(a.fraction(), 0.3);
}
