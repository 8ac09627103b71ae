use super::*;
use crate::snapshot::builders::{affinity_term, node, pod, snapshot};
use crate::snapshot::{Affinity, IdRange, WhenUnsatisfiable::DoNotSchedule};

fn id(s: &ClusterSnapshot, name: &str) -> PodId {
    PodId::from_index(s.pods.iter().position(|p| &*p.name == name).unwrap())
}

fn all(s: &ClusterSnapshot) -> Vec<NodeId> {
    s.node_ids().collect()
}

/// The incoming pod is modelled as a pod on a separate "src" node (the node it leaves).
fn with_src(
    mut nodes: Vec<Node>,
    mut pods: Vec<Pod>,
    incoming: crate::snapshot::builders::PodBuilder,
) -> ClusterSnapshot {
    nodes.push(node("src").cpu(100_000).pods(1000).unschedulable().build());
    pods.push(incoming.node("src").build());
    snapshot(nodes, pods)
}

#[test]
fn resources_are_cumulative() {
    let s = snapshot(
        vec![
            node("a").cpu(1000).build(),
            node("b").cpu(1000).build(),
            node("src").cpu(4000).unschedulable().build(),
        ],
        vec![
            pod("d", "p1").node("src").cpu(700).build(),
            pod("d", "p2").node("src").cpu(700).build(),
            pod("d", "p3").node("src").cpu(700).build(),
        ],
    );
    let mut sim = Simulation::new(&s);
    let nodes = all(&s);
    for p in IdRange::first(3) {
        sim.remove(p);
    }
    let a = sim.schedule(PodId::new(0), &nodes).unwrap();
    let b = sim.schedule(PodId::new(1), &nodes).unwrap();
    assert_ne!(a, b, "the second pod sees the first one's node fuller");
    assert_eq!(sim.load(a).cpu, 700);
    let err = sim.schedule(PodId::new(2), &nodes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable"
    );
}

#[test]
fn pod_count_and_host_ports() {
    let s = with_src(
        vec![node("full").pods(1).build(), node("port").build()],
        vec![
            pod("d", "x").node("full").build(),
            pod("d", "y").node("port").host_port(8080).build(),
        ],
        pod("d", "in").host_port(8080),
    );
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    assert_eq!(sim.check(p, NodeId::new(0)).unwrap_err(), "Too many pods");
    assert_eq!(
        sim.check(p, NodeId::new(1)).unwrap_err(),
        "node(s) didn't have free ports for the requested pod ports"
    );
    // a placed replacement holds its port too
    let s2 = snapshot(
        vec![node("n").build(), node("src").unschedulable().build()],
        vec![
            pod("d", "a").node("src").host_port(80).build(),
            pod("d", "b").node("src").host_port(80).build(),
        ],
    );
    let mut sim = Simulation::new(&s2);
    sim.remove(PodId::new(0));
    sim.remove(PodId::new(1));
    assert_eq!(
        sim.schedule(PodId::new(0), &[NodeId::new(0)]).unwrap(),
        NodeId::new(0)
    );
    assert!(sim.schedule(PodId::new(1), &[NodeId::new(0)]).is_err());
}

#[test]
fn unschedulable_and_taints() {
    let s = with_src(
        vec![
            node("cordoned").unschedulable().build(),
            node("gpu")
                .taint("gpu", "true", TaintEffect::NoSchedule)
                .build(),
            node("soft")
                .taint("x", "", TaintEffect::PreferNoSchedule)
                .build(),
            node("exec").taint("e", "1", TaintEffect::NoExecute).build(),
        ],
        vec![],
        pod("d", "in"),
    );
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    let n = |name: &str| s.node_id(name).unwrap();
    assert_eq!(
        sim.check(p, n("cordoned")).unwrap_err(),
        "node(s) were unschedulable"
    );
    assert_eq!(
        sim.check(p, n("gpu")).unwrap_err(),
        "node(s) had untolerated taint {gpu: true}"
    );
    assert!(sim.check(p, n("soft")).is_ok());
    assert_eq!(
        sim.check(p, n("exec")).unwrap_err(),
        "node(s) had untolerated taint {e: 1}"
    );
    // with a choice, PreferNoSchedule counts against a node
    let s2 = with_src(
        vec![
            node("a-soft")
                .taint("x", "", TaintEffect::PreferNoSchedule)
                .build(),
            node("b").build(),
        ],
        vec![],
        pod("d", "in"),
    );
    let b = s2.node_id("b").unwrap();
    assert_eq!(
        Simulation::new(&s2)
            .destination(id(&s2, "in"), &all(&s2))
            .unwrap(),
        b
    );
    // tolerating the unschedulable taint passes NodeUnschedulable
    let s = with_src(
        vec![node("cordoned").unschedulable().build()],
        vec![],
        pod("d", "in").toleration(UNSCHEDULABLE_TAINT, "", Some(TaintEffect::NoSchedule)),
    );
    assert!(Simulation::new(&s)
        .check(id(&s, "in"), NodeId::new(0))
        .is_ok());
}

#[test]
fn node_selector_and_affinity() {
    use crate::snapshot::builders::node_term;
    let s = with_src(
        vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
        ],
        vec![],
        pod("d", "in").required_node_affinity(vec![node_term("zone", &["b"])]),
    );
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    assert_eq!(
        sim.check(p, NodeId::new(0)).unwrap_err(),
        "node(s) didn't match Pod's node affinity/selector"
    );
    assert_eq!(sim.destination(p, &all(&s)).unwrap(), NodeId::new(1));
}

#[test]
fn pod_anti_affinity_both_directions() {
    let nodes = || {
        vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
            node("c").label("zone", "b").build(),
        ]
    };
    // the incoming pod avoids app=db by zone
    let s = with_src(
        nodes(),
        vec![pod("d", "db").node("b").label("app", "db").build()],
        pod("d", "in").anti_affinity(affinity_term("zone", "app", "db")),
    );
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    assert!(sim.check(p, NodeId::new(0)).is_ok());
    assert_eq!(
        sim.check(p, NodeId::new(2)).unwrap_err(),
        "node(s) didn't match pod anti-affinity rules"
    );
    // an existing pod avoids the incoming one
    let s = with_src(
        nodes(),
        vec![pod("d", "db")
            .node("b")
            .anti_affinity(affinity_term("zone", "app", "web"))
            .build()],
        pod("d", "in").label("app", "web"),
    );
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    assert!(sim.check(p, NodeId::new(0)).is_ok());
    assert_eq!(
        sim.check(p, NodeId::new(2)).unwrap_err(),
        "node(s) didn't satisfy existing pods anti-affinity rules"
    );
    // self anti-affinity: replicas placed one after another spread out
    let s = snapshot(
        vec![
            node("a").label("kubernetes.io/hostname", "a").build(),
            node("b").label("kubernetes.io/hostname", "b").build(),
            node("src").unschedulable().build(),
        ],
        (0..3)
            .map(|i| {
                pod("d", &format!("r{i}"))
                    .node("src")
                    .label("app", "r")
                    .anti_affinity(affinity_term("kubernetes.io/hostname", "app", "r"))
                    .build()
            })
            .collect(),
    );
    let mut sim = Simulation::new(&s);
    for p in IdRange::first(3) {
        sim.remove(p);
    }
    let x = sim
        .schedule(PodId::new(0), &[NodeId::new(0), NodeId::new(1)])
        .unwrap();
    let y = sim
        .schedule(PodId::new(1), &[NodeId::new(0), NodeId::new(1)])
        .unwrap();
    assert_ne!(x, y);
    assert!(sim
        .schedule(PodId::new(2), &[NodeId::new(0), NodeId::new(1)])
        .is_err());
}

#[test]
fn pod_affinity_and_the_first_pod_of_a_group() {
    let aff = |p: crate::snapshot::builders::PodBuilder| {
        p.affinity(Affinity {
            pod_affinity_required: vec![affinity_term("zone", "app", "cache")],
            ..Default::default()
        })
    };
    let nodes = || {
        vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
            node("bare").build(),
        ]
    };
    let s = with_src(
        nodes(),
        vec![pod("d", "cache").node("b").label("app", "cache").build()],
        aff(pod("d", "in")),
    );
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    assert_eq!(
        sim.check(p, NodeId::new(0)).unwrap_err(),
        "node(s) didn't match pod affinity rules"
    );
    assert!(sim.check(p, NodeId::new(1)).is_ok());
    assert!(sim.check(p, NodeId::new(2)).is_err());
    // no match anywhere, and the pod matches its own term: allowed where the key exists
    let s = with_src(nodes(), vec![], aff(pod("d", "in").label("app", "cache")));
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    assert!(sim.check(p, NodeId::new(0)).is_ok());
    assert!(sim.check(p, NodeId::new(2)).is_err());
    // no match anywhere, and the pod does not match its own term: nowhere
    let s = with_src(nodes(), vec![], aff(pod("d", "in")));
    let sim = Simulation::new(&s);
    assert!(sim
        .feasible(
            id(&s, "in"),
            &[NodeId::new(0), NodeId::new(1), NodeId::new(2)]
        )
        .is_err());
}

#[test]
fn topology_spread_do_not_schedule() {
    let spread = |p: crate::snapshot::builders::PodBuilder| {
        p.label("app", "w")
            .spread(1, "zone", DoNotSchedule, "app", "w")
    };
    let s = with_src(
        vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
            node("c").label("zone", "c").build(),
            node("nolabel").build(),
        ],
        vec![
            pod("d", "w1").node("a").label("app", "w").build(),
            pod("d", "w2").node("a").label("app", "w").build(),
            pod("d", "w3").node("b").label("app", "w").build(),
            // another namespace does not count
            pod("e", "w4").node("c").label("app", "w").build(),
        ],
        spread(pod("d", "in")),
    );
    let sim = Simulation::new(&s);
    let p = id(&s, "in");
    // counts a=2 b=1 c=0, min 0: only c keeps the skew at 1
    assert!(sim.check(p, NodeId::new(0)).is_err());
    assert!(sim.check(p, NodeId::new(1)).is_err());
    assert!(sim.check(p, NodeId::new(2)).is_ok());
    assert_eq!(
        sim.check(p, NodeId::new(3)).unwrap_err(),
        "node(s) didn't match pod topology spread constraints (missing required label)"
    );
    assert_eq!(sim.destination(p, &all(&s)).unwrap(), NodeId::new(2));
    // cumulative: after c gets one, a still fails, b and c pass
    let s = snapshot(
        vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
            node("src").unschedulable().build(),
        ],
        vec![
            pod("d", "w1").node("a").label("app", "w").build(),
            spread(pod("d", "m1")).node("src").build(),
            spread(pod("d", "m2")).node("src").build(),
            spread(pod("d", "m3")).node("src").build(),
        ],
    );
    let mut sim = Simulation::new(&s);
    let m = |n| id(&s, n);
    for n in ["m1", "m2", "m3"] {
        sim.remove(m(n));
    }
    assert_eq!(
        sim.schedule(m("m1"), &[NodeId::new(0), NodeId::new(1)])
            .unwrap(),
        NodeId::new(1)
    );
    let second = sim
        .schedule(m("m2"), &[NodeId::new(0), NodeId::new(1)])
        .unwrap();
    let third = sim
        .schedule(m("m3"), &[NodeId::new(0), NodeId::new(1)])
        .unwrap();
    assert_ne!(second, third, "spread keeps alternating");
}

#[test]
fn min_domains_and_match_label_keys() {
    let mut c = pod("d", "x")
        .spread(1, "zone", DoNotSchedule, "app", "w")
        .build()
        .topology_spread[0]
        .clone();
    c.min_domains = Some(3);
    let s = with_src(
        vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
        ],
        vec![
            pod("d", "w1").node("a").label("app", "w").build(),
            pod("d", "w2").node("b").label("app", "w").build(),
        ],
        pod("d", "in")
            .label("app", "w")
            .spread_constraint(c.clone()),
    );
    let sim = Simulation::new(&s);
    // 2 domains < minDomains 3: the global minimum is 0, so 1 + 1 - 0 > 1 everywhere
    assert!(sim
        .feasible(id(&s, "in"), &[NodeId::new(0), NodeId::new(1)])
        .is_err());
    // matchLabelKeys: only pods with the same pod-template-hash count
    let mut c2 = c;
    c2.min_domains = None;
    c2.match_label_keys = vec!["hash".into()];
    let s = with_src(
        vec![
            node("a").label("zone", "a").build(),
            node("b").label("zone", "b").build(),
        ],
        vec![
            pod("d", "old1")
                .node("a")
                .label("app", "w")
                .label("hash", "1")
                .build(),
            pod("d", "old2")
                .node("a")
                .label("app", "w")
                .label("hash", "1")
                .build(),
        ],
        pod("d", "in")
            .label("app", "w")
            .label("hash", "2")
            .spread_constraint(c2),
    );
    let sim = Simulation::new(&s);
    assert!(sim.check(id(&s, "in"), NodeId::new(0)).is_ok());
}

#[test]
fn the_pod_itself_counts_where_it_is_while_it_terminates() {
    // a full node: the pod's own requests free up only once it is gone
    let s = snapshot(
        vec![node("a").cpu(1000).build()],
        vec![pod("d", "p").node("a").cpu(1000).host_port(80).build()],
    );
    let mut sim = Simulation::new(&s);
    assert_eq!(sim.termination(), Termination::GRACEFUL);
    let ports = "node(s) didn't have free ports for the requested pod ports";
    assert_eq!(sim.check(PodId::new(0), NodeId::new(0)).unwrap_err(), ports);
    sim.remove(PodId::new(0));
    assert!(sim.is_lingering(PodId::new(0)));
    assert_eq!(sim.check(PodId::new(0), NodeId::new(0)).unwrap_err(), ports);
    assert_eq!(sim.load_without(PodId::new(0), NodeId::new(0)).cpu, 1000);
    // what the node requests once everything settled: the pod gone
    assert_eq!(sim.load(NodeId::new(0)).cpu, 0);
    sim.settle();
    assert!(sim.check(PodId::new(0), NodeId::new(0)).is_ok());
    // a kubelet that deletes at once: the room is free for the replacement at once
    let mut sim = Simulation::new(&s);
    sim.set_termination(Termination::INSTANT);
    assert!(sim.check(PodId::new(0), NodeId::new(0)).is_ok());
    assert_eq!(
        sim.destination(PodId::new(0), &[NodeId::new(0)]).unwrap(),
        NodeId::new(0)
    );
    sim.remove(PodId::new(0));
    assert!(!sim.is_lingering(PodId::new(0)));
    assert!(sim.check(PodId::new(0), NodeId::new(0)).is_ok());
}

#[test]
fn a_grace_period_of_zero_frees_the_room_at_once() {
    let s = snapshot(
        vec![node("a").cpu(1000).build()],
        vec![
            pod("d", "zero").node("a").cpu(600).grace(0).build(),
            pod("d", "thirty").node("a").cpu(400).build(),
        ],
    );
    let (zero, thirty) = (id(&s, "zero"), id(&s, "thirty"));
    let mut sim = Simulation::new(&s);
    sim.remove(zero);
    sim.remove(thirty);
    assert!(!sim.is_lingering(zero));
    assert!(sim.is_lingering(thirty));
    // 400m still terminating: 600m free
    assert!(sim.check(zero, NodeId::new(0)).is_ok());
    assert_eq!(sim.load_without(zero, NodeId::new(0)).cpu, 400);
    // the policy's gracePeriodSeconds overrides each pod's own
    for (grace, lingers) in [(Some(0), [false, false]), (Some(5), [true, true])] {
        let mut sim = Simulation::new(&s);
        sim.set_termination(Termination {
            graceful: true,
            grace_override: grace,
        });
        sim.remove(zero);
        sim.remove(thirty);
        assert_eq!([sim.is_lingering(zero), sim.is_lingering(thirty)], lingers);
    }
}

#[test]
fn terminating_pods_hold_their_room_for_other_replacements() {
    // big leaves n1 and still terminates there while replacements are scheduled
    let s = snapshot(
        vec![node("n1").cpu(2000).build(), node("n2").cpu(2000).build()],
        vec![
            pod("d", "big").node("n1").cpu(1500).build(),
            pod("d", "fill").node("n2").cpu(1000).build(),
            pod("d", "small").node("n2").cpu(400).build(),
        ],
    );
    let (big, small) = (id(&s, "big"), id(&s, "small"));
    let nodes = all(&s);
    let mut sim = Simulation::new(&s);
    sim.remove(big);
    // its replacement finds 500m free on n1 and 600m on n2: none until big is gone
    assert!(sim.predict(big, &nodes).is_err());
    // another replacement finds big's room taken
    sim.remove(small);
    assert_eq!(sim.load_without(small, NodeId::new(0)).cpu, 1500);
    assert_eq!(sim.load_without(small, NodeId::new(1)).cpu, 1400);
    // the cluster once everything settled: both gone
    assert_eq!(
        (sim.load(NodeId::new(0)).cpu, sim.load(NodeId::new(1)).cpu),
        (0, 1000)
    );
    // once big is seen gone, its room is free; small still terminates
    sim.terminated(big);
    assert!(!sim.is_lingering(big) && sim.is_lingering(small));
    assert_eq!(sim.load_without(small, NodeId::new(0)).cpu, 0);
    assert_eq!(sim.load_without(small, NodeId::new(1)).cpu, 1400);
    sim.settle();
    assert_eq!(sim.schedule(big, &nodes).unwrap(), NodeId::new(0));
    // instant: big's room is free at once
    let mut sim = Simulation::new(&s);
    sim.set_termination(Termination::INSTANT);
    sim.remove(big);
    assert_eq!(sim.schedule(big, &nodes).unwrap(), NodeId::new(0));
    sim.remove(small);
    assert_eq!(sim.load_without(small, NodeId::new(1)).cpu, 1000);
}

#[test]
fn pods_terminating_in_the_snapshot_hold_their_room_until_gone() {
    // old was evicted an earlier cycle and still terminates on n1 when the snapshot is read
    let s = snapshot(
        vec![node("n1").cpu(2000).build(), node("n2").cpu(2000).build()],
        vec![
            pod("d", "old").node("n1").cpu(1500).terminating().build(),
            pod("d", "live").node("n1").cpu(200).build(),
            pod("d", "other").node("n2").cpu(1000).build(),
        ],
    );
    let (old, live, other) = (id(&s, "old"), id(&s, "live"), id(&s, "other"));
    let nodes = all(&s);
    let mut sim = Simulation::new(&s);
    // the cluster once it is gone: not on n1, not among n1's pods
    assert_eq!(sim.load(NodeId::new(0)).cpu, 200);
    assert_eq!(sim.pods_on(NodeId::new(0)).collect::<Vec<_>>(), vec![live]);
    assert!(sim.is_lingering(old));
    // kube-scheduler still sees it: other's replacement (1000m) finds 300m free on n1
    sim.remove(other);
    assert_eq!(sim.load_without(other, NodeId::new(0)).cpu, 1700);
    assert_eq!(sim.schedule(other, &nodes).unwrap(), NodeId::new(1));
    // once it is seen gone, its room is free
    let mut sim = Simulation::new(&s);
    sim.terminated(old);
    assert_eq!(sim.load_without(other, NodeId::new(0)).cpu, 200);
    assert!(!sim.any_lingering());
}

#[test]
fn terminating_pods_count_in_scores_but_not_in_topology_spread() {
    // LeastAllocated: with p still on n1 (2 of 4 cpus), n1 and n2 tie for its
    // replacement; gone at once, n1 is the emptiest (p and q of different workloads, so
    // that default spreading scores nothing)
    let s = snapshot(
        vec![node("n1").cpu(4000).build(), node("n2").cpu(4000).build()],
        vec![
            pod("d", "p")
                .node("n1")
                .cpu(2000)
                .owner("ReplicaSet", "p")
                .build(),
            pod("d", "q")
                .node("n2")
                .cpu(2000)
                .owner("ReplicaSet", "q")
                .build(),
        ],
    );
    let p = id(&s, "p");
    let mut sim = Simulation::new(&s);
    sim.remove(p);
    assert_eq!(
        sim.predict(p, &all(&s)).unwrap(),
        Prediction {
            node: NodeId::new(0),
            alternatives: vec![NodeId::new(1)]
        }
    );
    let mut sim = Simulation::new(&s);
    sim.set_termination(Termination::INSTANT);
    sim.remove(p);
    assert_eq!(
        sim.predict(p, &all(&s)).unwrap(),
        Prediction {
            node: NodeId::new(0),
            alternatives: vec![]
        }
    );
    // DoNotSchedule zone spread (maxSkew 1): w1 and w2 leave zone a; terminating, they
    // count nowhere, so w1's replacement must go to zone a (0 there, 1 in zone b)
    let w = |name: &str, n: &str| {
        pod("d", name)
            .node(n)
            .label("app", "w")
            .spread(1, "zone", DoNotSchedule, "app", "w")
            .build()
    };
    let s = snapshot(
        vec![
            node("a1").label("zone", "a").build(),
            node("b1").label("zone", "b").build(),
        ],
        vec![w("w1", "a1"), w("w2", "a1"), w("w3", "b1")],
    );
    let mut sim = Simulation::new(&s);
    sim.remove(id(&s, "w1"));
    sim.remove(id(&s, "w2"));
    assert!(sim.is_lingering(id(&s, "w2")));
    assert_eq!(
        sim.check(id(&s, "w1"), NodeId::new(1)).unwrap_err(),
        "node(s) didn't match pod topology spread constraints"
    );
    assert!(sim.check(id(&s, "w1"), NodeId::new(0)).is_ok());
}

#[test]
fn terminating_pods_keep_their_anti_affinity_and_affinity() {
    // w1 repels app=w on its host; while it terminates, its own replacement cannot land
    // there, nor can another w; db attracts app=api to its host until it is gone
    let anti = Affinity {
        pod_anti_affinity_required: vec![affinity_term("kubernetes.io/hostname", "app", "w")],
        ..Default::default()
    };
    let s = snapshot(
        vec![node("n1").build(), node("n2").build()],
        vec![
            pod("d", "w1")
                .node("n1")
                .label("app", "w")
                .affinity(anti.clone())
                .build(),
            pod("d", "w2")
                .node("n2")
                .label("app", "w")
                .affinity(anti)
                .build(),
        ],
    );
    let (w1, w2) = (id(&s, "w1"), id(&s, "w2"));
    let mut sim = Simulation::new(&s);
    sim.remove(w1);
    sim.remove(w2);
    for (pod, node) in [(w1, 0), (w1, 1), (w2, 0), (w2, 1)] {
        let node = NodeId::new(node);
        assert!(sim.check(pod, node).is_err(), "{pod:?} on {node:?}");
    }
    sim.settle();
    assert!(sim.check(w1, NodeId::new(0)).is_ok());
    let mut sim = Simulation::new(&s);
    sim.set_termination(Termination::INSTANT);
    sim.remove(w1);
    sim.remove(w2);
    assert!(sim.check(w1, NodeId::new(0)).is_ok());
}

#[test]
fn pending_pods_are_placed_once_the_evicted_pods_are_gone() {
    let s = snapshot(
        vec![node("n1").cpu(1000).build()],
        vec![
            pod("d", "old").node("n1").cpu(1000).build(),
            pod("d", "pending").cpu(1000).build(),
        ],
    );
    let (old, pending) = (id(&s, "old"), id(&s, "pending"));
    let mut sim = Simulation::new(&s);
    sim.remove(old);
    assert!(sim.check(pending, NodeId::new(0)).is_err());
    assert_eq!(
        sim.schedule_settled(pending, &[NodeId::new(0)])
            .unwrap()
            .node,
        NodeId::new(0)
    );
    // later replacements still see old terminating
    assert!(sim.is_lingering(old));
    assert_eq!(sim.load(NodeId::new(0)).cpu, 1000);
}

#[test]
fn replacements_queue_by_priority_then_creation() {
    let s = snapshot(
        vec![node("n").build()],
        vec![
            pod("d", "low").node("n").priority(1).build(),
            pod("d", "none").node("n").build(),
            pod("d", "high").node("n").priority(100).build(),
            pod("d", "low-later").node("n").priority(1).build(),
            pod("d", "high-later").node("n").priority(100).build(),
        ],
    );
    let mut order: Vec<PodId> = ["low", "none", "high", "low-later", "high-later"]
        .iter()
        .map(|n| id(&s, n))
        .collect();
    queue_order(&s, &mut order);
    let names: Vec<&str> = order.iter().map(|&p| &*s.pod(p).name).collect();
    assert_eq!(names, ["high", "high-later", "low", "low-later", "none"]);
}

#[test]
fn feasible_nodes_to_find_as_kube_scheduler() {
    assert_eq!(feasible_nodes_to_find(0), 0);
    assert_eq!(feasible_nodes_to_find(99), 99);
    assert_eq!(feasible_nodes_to_find(100), 100);
    assert_eq!(feasible_nodes_to_find(1000), 420);
    assert_eq!(feasible_nodes_to_find(5000), 500);
    assert_eq!(feasible_nodes_to_find(10_000), 500);
}

#[test]
fn destination_prefers_the_least_allocated_node() {
    let s = snapshot(
        vec![
            node("busy").cpu(4000).memory(8 << 30).build(),
            node("idle").cpu(4000).memory(8 << 30).build(),
            node("src").unschedulable().build(),
        ],
        vec![
            pod("d", "x").node("busy").cpu(3000).memory(6 << 30).build(),
            pod("d", "in").node("src").cpu(100).memory(1 << 20).build(),
        ],
    );
    let mut sim = Simulation::new(&s);
    let p = id(&s, "in");
    sim.remove(p);
    let nodes = [s.node_id("busy").unwrap(), s.node_id("idle").unwrap()];
    assert_eq!(sim.destination(p, &nodes).unwrap(), nodes[1]);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    struct N {
        cpu: i64,
        pods: i64,
        zone: u8,
        tainted: bool,
    }

    #[derive(Debug, Clone)]
    struct P {
        cpu: i64,
        app: u8,
        port: bool,
        anti: bool,
        spread: bool,
        tolerates: bool,
    }

    fn n() -> impl Strategy<Value = N> {
        (
            prop::sample::select(vec![500i64, 1000, 2000]),
            1i64..5,
            0u8..3,
            prop::bool::weighted(0.2),
        )
            .prop_map(|(cpu, pods, zone, tainted)| N {
                cpu,
                pods,
                zone,
                tainted,
            })
    }

    fn p() -> impl Strategy<Value = P> {
        (
            prop::sample::select(vec![0i64, 100, 300, 700]),
            0u8..3,
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.3),
            prop::bool::weighted(0.3),
        )
            .prop_map(|(cpu, app, port, anti, spread, tolerates)| P {
                cpu,
                app,
                port,
                anti,
                spread,
                tolerates,
            })
    }

    /// Nodes n00.., and every pod on an unschedulable `zz-src` node, to be placed in
    /// order. Spread pods are app 9 in their own group.
    fn cluster(nodes: &[N], pods: &[P]) -> ClusterSnapshot {
        let mut ns: Vec<Node> = nodes
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let name = format!("n{i:02}");
                let mut b = node(&name)
                    .cpu(x.cpu)
                    .pods(x.pods)
                    .label("kubernetes.io/hostname", &name)
                    .label("zone", &format!("z{}", x.zone));
                if x.tainted {
                    b = b.taint("t", "", TaintEffect::NoSchedule);
                }
                b.build()
            })
            .collect();
        ns.push(
            node("zz-src")
                .cpu(1_000_000)
                .pods(1000)
                .unschedulable()
                .build(),
        );
        let ps = pods
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let app = if x.spread { 9 } else { x.app };
                let mut b = pod("d", &format!("p{i:02}"))
                    .node("zz-src")
                    .cpu(x.cpu)
                    .label("app", &app.to_string());
                if x.port {
                    b = b.host_port(8080);
                }
                if x.anti {
                    b = b.anti_affinity(affinity_term(
                        "kubernetes.io/hostname",
                        "app",
                        &app.to_string(),
                    ));
                }
                if x.spread {
                    b = b.spread(1, "zone", DoNotSchedule, "app", "9");
                }
                if x.tolerates {
                    b = b.toleration("t", "", None);
                }
                b.build()
            })
            .collect();
        snapshot(ns, ps)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Placing pods one after another never overcommits a node, never puts two
        /// users of a host port or two pods that refuse each other on one node, never
        /// puts a pod on a taint it does not tolerate, and keeps zone spread within its
        /// skew; a pod that fits nowhere fails every node's check.
        #[test]
        fn cumulative_placements_respect_every_filter(
            nodes in prop::collection::vec(n(), 1..6),
            pods in prop::collection::vec(p(), 1..14),
        ) {
            let s = cluster(&nodes, &pods);
            let targets: Vec<NodeId> = IdRange::first(nodes.len()).collect();
            let mut sim = Simulation::new(&s);
            for id in IdRange::first(pods.len()) {
                sim.remove(id);
            }
            let mut spread_zones: FxHashMap<String, i64> = FxHashMap::default();
            for x in &nodes {
                spread_zones.entry(format!("z{}", x.zone)).or_insert(0);
            }
            for id in IdRange::first(pods.len()) {
                match sim.schedule(id, &targets) {
                    Ok(dest) => {
                        let node = s.node(dest);
                        let spec = &pods[id.index()];
                        prop_assert!(sim.load(dest).cpu <= node.allocatable.cpu);
                        prop_assert!(sim.load(dest).pods <= node.allocatable.pods);
                        prop_assert!(!nodes[dest.index()].tainted || spec.tolerates);
                        let here: Vec<&Pod> =
                            sim.placed(dest).iter().map(|&q| s.pod(q)).collect();
                        let ports = here.iter().filter(|q| !q.host_ports.is_empty()).count();
                        prop_assert!(ports <= 1, "host port used twice on {}", node.name);
                        for a in &here {
                            for b in &here {
                                if std::ptr::eq(*a, *b) {
                                    continue;
                                }
                                let refuses = a.affinity.as_ref().is_some_and(|x| {
                                    !x.pod_anti_affinity_required.is_empty()
                                });
                                prop_assert!(
                                    !(refuses && a.labels.get("app") == b.labels.get("app")),
                                    "{} and {} share {}", a.name, b.name, node.name
                                );
                            }
                        }
                        if spec.spread {
                            let z = node.labels.get("zone").unwrap().to_string();
                            *spread_zones.get_mut(&z).unwrap() += 1;
                            let min = spread_zones.values().min().copied().unwrap();
                            let max = spread_zones.values().max().copied().unwrap();
                            prop_assert!(max - min <= 1, "{spread_zones:?}");
                        }
                    }
                    Err(nofit) => {
                        prop_assert_eq!(nofit.nodes.len(), targets.len());
                        for &t in &targets {
                            prop_assert!(sim.check(id, t).is_err());
                        }
                    }
                }
            }
        }
    }
}

/// In a namespace large enough for the label index, every selection is the one walking the
/// namespace gives: the pods carrying the rarest required pair, filtered by the whole
/// selector; selectors with no pair to narrow by (several values, NotIn, Exists) walk it.
#[test]
fn a_large_namespaces_selections_through_the_label_index_are_the_walks() {
    use super::super::score::ClusterView;
    let nodes: Vec<_> = (0..4).map(|i| node(&format!("n{i}")).build()).collect();
    let pods: Vec<_> = (0..INDEXED_NAMESPACE + 500)
        .map(|i| {
            let mut p = pod("big", &format!("p{i:05}"))
                .label("app", &format!("a{}", i % 7))
                .label("tier", if i % 3 == 0 { "web" } else { "db" })
                .node(&format!("n{}", i % 4));
            if i % 5 == 0 {
                p = p.label("canary", "yes");
            }
            if i % 11 == 0 {
                p = p.terminating();
            }
            p.build()
        })
        .collect();
    let snap = snapshot(nodes, pods);
    let sim = Simulation::new(&snap);
    let someone = snap.pod_id("big", "p00000").unwrap();
    for (text, keys) in [
        ("app=a3", vec![]),
        ("app=a3,tier=web", vec![]),
        ("tier=web", vec![("canary", "yes")]),
        ("app in (a1,a2)", vec![]),
        ("app in (a1,a2)", vec![("tier", "db")]),
        ("tier notin (web)", vec![]),
        ("canary", vec![]),
        ("app=nowhere", vec![]),
        ("", vec![("app", "a6")]),
    ] {
        let selector = crate::labels::Selector::parse(text).unwrap();
        let got: Vec<PodId> = sim
            .selected_pods(someone, Some(&selector), &keys)
            .map(|(p, _)| p)
            .collect();
        let want: Vec<PodId> = snap
            .pods_in_namespace("big")
            .filter(|&q| {
                let qp = snap.pod(q);
                !qp.terminating && super::super::spread_selects(Some(&selector), &keys, qp)
            })
            .collect();
        assert_eq!(got, want, "{text} {keys:?}");
        if text == "app=nowhere" {
            assert!(got.is_empty());
        } else {
            assert!(!got.is_empty(), "{text} {keys:?} selects some pods");
        }
    }
    assert_eq!(sim.labelled.lock().len(), 1, "one namespace indexed, once");
}
