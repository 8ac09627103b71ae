use super::*;
use crate::snapshot::builders::{node, pod, snapshot};
use crate::snapshot::{PodId, TaintEffect, WhenUnsatisfiable::DoNotSchedule};
use InclusionPolicy::{Honor, Ignore};

/// Zones a (a1, a2: tainted), b (b1: no ssd) and c (c1, off the planning nodes), and x (no
/// zone).
fn cluster() -> ClusterSnapshot {
    snapshot(
        vec![
            node("a1").label("zone", "a").label("disk", "ssd").build(),
            node("a2")
                .label("zone", "a")
                .label("disk", "ssd")
                .taint("gpu", "", TaintEffect::NoSchedule)
                .build(),
            node("b1").label("zone", "b").build(),
            node("c1").label("zone", "c").label("disk", "ssd").build(),
            node("x").label("disk", "ssd").build(),
        ],
        vec![
            pod("d", "p1").node("a1").build(),
            pod("d", "p2").node("a2").build(),
            pod("d", "p3").node("a2").build(),
            pod("d", "p4").node("b1").build(),
            pod("d", "p5").node("c1").build(),
            pod("d", "p6").node("x").build(),
        ],
    )
}

fn ids(s: &ClusterSnapshot, names: &[&str]) -> Vec<NodeId> {
    names.iter().map(|n| s.node_id(n).unwrap()).collect()
}

#[test]
fn domains_are_the_values_of_the_counted_nodes() {
    let s = cluster();
    let [a1, a2, b1, c1, x] = ids(&s, &["a1", "a2", "b1", "c1", "x"])[..] else {
        unreachable!()
    };
    // over every node: a node without the key is in no domain
    let all = TopologyDomains::new(&s, "zone", s.node_ids(), |_| true);
    assert_eq!(all.key(), "zone");
    assert_eq!(all.values(), ["a", "b", "c"]);
    assert_eq!(all.len(), 3);
    assert_eq!(all.domain_of(a1), Some(0));
    assert_eq!(all.domain_of(a2), Some(0));
    assert_eq!(all.domain_of(c1), Some(2));
    assert_eq!(all.domain_of(x), None);
    assert_eq!(all.domain_of_value("b"), Some(1));
    assert_eq!(all.domain_of_value("z"), None);
    assert_eq!(all.nodes(0).collect::<Vec<_>>(), vec![a1, a2]);
    assert_eq!(
        all.nodes_where(|d| d != 0).collect::<Vec<_>>(),
        vec![b1, c1]
    );
    // a1 and a2 share zone a, b1 is apart; x (no zone) is in no domain
    assert_eq!(all.domain_of(a1), all.domain_of(a2));
    assert!(all.domain_of(a1).is_some());
    assert_ne!(all.domain_of(a1), all.domain_of(b1));
    assert_eq!(all.domain_of(x), None);
    // over some nodes (a plugin's planning nodes): c is no domain; c1's value is not one
    let some = TopologyDomains::new(&s, "zone", [a1, b1, x], |_| true);
    assert_eq!(some.values(), ["a", "b"]);
    assert_eq!(some.domain_of(a2), None);
    assert_eq!(some.domain_at(s.node(a2)), Some(0));
    assert_eq!(some.domain_at(s.node(c1)), None);
    assert_eq!(some.domain_at(s.node(x)), None);
    // a domain with no counted pod is still a domain
    let empty = TopologyDomains::new(&s, "zone", [b1], |_| true);
    assert_eq!(empty.count(std::iter::empty()), vec![0]);
    assert!(!empty.is_empty());
    assert!(TopologyDomains::new(&s, "rack", [a1, b1], |_| true).is_empty());
}

#[test]
fn eligible_nodes_follow_the_inclusion_policies() {
    let s = cluster();
    let nodes: Vec<NodeId> = s.node_ids().collect();
    let [a1, a2, b1, c1] = ids(&s, &["a1", "a2", "b1", "c1"])[..] else {
        unreachable!()
    };
    let ssd = pod("d", "w").node_selector("disk", "ssd").build();
    let spreading = pod("d", "w")
        .spread(1, "zone", DoNotSchedule, "app", "w")
        .build();
    let c = &spreading.topology_spread[0];
    let honoured = |affinity, taints| Inclusion {
        node_affinity_policy: affinity,
        node_taints_policy: taints,
        pod: &ssd,
    };
    // nodeAffinityPolicy Honor: b1 lacks disk=ssd, so zone b is no domain
    let by_affinity =
        TopologyDomains::for_inclusion(&s, "zone", nodes.iter().copied(), honoured(Honor, Ignore));
    assert_eq!(by_affinity.values(), ["a", "c"]);
    assert_eq!(by_affinity.domain_of(b1), None);
    assert_eq!(by_affinity.domain_at(s.node(b1)), None);
    // nodeTaintsPolicy Honor as well: a2's taint is not tolerated, a1 still counts zone a
    let by_both =
        TopologyDomains::for_inclusion(&s, "zone", nodes.iter().copied(), honoured(Honor, Honor));
    assert_eq!(by_both.values(), ["a", "c"]);
    assert_eq!(by_both.domain_of(a2), None);
    assert_eq!(by_both.domain_at(s.node(a2)), Some(0));
    assert_eq!(by_both.nodes(0).collect::<Vec<_>>(), vec![a1]);
    // Ignore both: every node with the key
    let ignored =
        TopologyDomains::for_inclusion(&s, "zone", nodes.iter().copied(), honoured(Ignore, Ignore));
    assert_eq!(ignored.values(), ["a", "b", "c"]);
    assert_eq!(ignored.domain_of(c1), Some(2));
    // a constraint's own policies (the builder's: Honor affinity, Ignore taints)
    let plain = pod("d", "v").build();
    let inclusion = Inclusion::of(c, &plain);
    assert!(inclusion.admits(s.node(a2)));
    assert!(!inclusion.same(&honoured(Honor, Ignore)));
    assert!(Inclusion::of(c, &ssd).same(&honoured(Honor, Ignore)));
    // with taints ignored, tolerations do not tell inclusions apart
    let tolerant = pod("d", "t")
        .node_selector("disk", "ssd")
        .toleration("gpu", "", None)
        .build();
    let tolerant_inclusion = |taints| Inclusion {
        node_affinity_policy: Honor,
        node_taints_policy: taints,
        pod: &tolerant,
    };
    assert!(tolerant_inclusion(Ignore).same(&honoured(Honor, Ignore)));
    assert!(!tolerant_inclusion(Honor).same(&honoured(Honor, Honor)));
}

#[test]
fn pods_are_counted_and_grouped_by_their_nodes_domain() {
    let s = cluster();
    let [a1, b1, x] = ids(&s, &["a1", "b1", "x"])[..] else {
        unreachable!()
    };
    let domains = TopologyDomains::new(&s, "zone", [a1, b1, x], |_| true);
    let placed: Vec<(NodeId, PodId)> = s.pod_ids().map(|p| (s.pod_node(p).unwrap(), p)).collect();
    // a2 and c1 are not among the nodes, x has no zone: their pods are not counted
    assert_eq!(domains.count(placed.iter().map(|&(n, _)| n)), vec![1, 1]);
    let groups = domains.group(placed.iter().copied());
    let names =
        |g: &Vec<PodId>| -> Vec<String> { g.iter().map(|&p| s.pod(p).name.to_string()).collect() };
    assert_eq!(names(&groups[0]), ["p1"]);
    assert_eq!(names(&groups[1]), ["p4"]);
    // the same pods twice count twice (the caller gives the set)
    assert_eq!(domains.count([a1, a1, b1]), vec![2, 1]);
}

#[test]
fn a_cache_shares_an_index_between_constraints_that_count_the_same_nodes() {
    let s = cluster();
    let nodes: Vec<NodeId> = s.node_ids().collect();
    let ssd = pod("d", "w").node_selector("disk", "ssd").build();
    let ssd_too = pod("d", "v").node_selector("disk", "ssd").build();
    let plain = pod("d", "u").build();
    let inclusion = |pod| Inclusion {
        node_affinity_policy: Honor,
        node_taints_policy: Ignore,
        pod,
    };
    let cache = DomainCache::default();
    let first = cache.get(&s, &nodes, "zone", inclusion(&ssd));
    let shared = cache.get(&s, &nodes, "zone", inclusion(&ssd_too));
    assert!(Arc::ptr_eq(&first, &shared));
    let other = cache.get(&s, &nodes, "zone", inclusion(&plain));
    assert!(!Arc::ptr_eq(&first, &other));
    assert_eq!(first.values(), ["a", "c"]);
    assert_eq!(other.values(), ["a", "b", "c"]);
    let by_disk = cache.get(&s, &nodes, "disk", inclusion(&ssd));
    assert_eq!(by_disk.values(), ["ssd"]);
    assert_eq!(by_disk.count(nodes.iter().copied()), vec![4]);
}
