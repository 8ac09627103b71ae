//! Cases from kube-scheduler v1.36's own unit tests (the test and case names are given),
//! with cpu in millicores as this model keeps it.
use super::*;
use crate::sim::Simulation;
use crate::snapshot::builders::{affinity_term, node, pod, snapshot, PodBuilder};
use crate::snapshot::{Affinity, ClusterSnapshot, IdRange, Node, WeightedPodAffinityTerm};
use WhenUnsatisfiable::ScheduleAnyway;

/// A profile with only `plugin`, weight 1.
fn only(plugin: &str) -> ScoreProfile {
    let mut p = ScoreProfile::default();
    for name in SCORE_PLUGINS {
        p.set_weight(name, i64::from(name == plugin));
    }
    p
}

/// The incoming pod (unbound, named "in") among `pods`, scored on every node.
fn scores_with(
    profile: &ScoreProfile,
    nodes: Vec<Node>,
    pods: Vec<PodBuilder>,
    incoming: PodBuilder,
) -> Vec<i64> {
    let mut all: Vec<_> = pods.into_iter().map(PodBuilder::build).collect();
    all.push(incoming.build());
    let s = snapshot(nodes, all);
    scored(&s, profile)
}

fn scored(s: &ClusterSnapshot, profile: &ScoreProfile) -> Vec<i64> {
    let id = PodId::from_index(s.pods.iter().position(|p| &*p.name == "in").unwrap());
    let sim = Simulation::new(s);
    let feasible: Vec<NodeId> = s.node_ids().collect();
    total_scores(&sim, profile, id, &feasible)
}

fn scores(plugin: &str, nodes: Vec<Node>, pods: Vec<PodBuilder>, incoming: PodBuilder) -> Vec<i64> {
    scores_with(&only(plugin), nodes, pods, incoming)
}

#[test]
fn default_normalize_score() {
    // TestDefaultNormalizeScore, every case
    let cases: &[(bool, [i64; 4], [i64; 4])] = &[
        (false, [1, 2, 3, 4], [25, 50, 75, 100]),
        (true, [1, 2, 3, 4], [75, 50, 25, 0]),
        (false, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (true, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (false, [1, 1, 1, 1], [100, 100, 100, 100]),
        (false, [1000, 1, 1, 1], [100, 0, 0, 0]),
        (true, [0, 1, 1, 1], [100, 0, 0, 0]),
        (false, [0, 0, 0, 0], [0, 0, 0, 0]),
        (true, [0, 0, 0, 0], [100, 100, 100, 100]),
    ];
    for (reverse, input, want) in cases {
        let mut s = input.to_vec();
        default_normalize(MAX_NODE_SCORE, *reverse, &mut s);
        assert_eq!(s, want.to_vec(), "{input:?} reverse {reverse}");
    }
}

#[test]
fn broken_linear_function() {
    // TestBrokenLinearFunction, every case
    // (the shape's points, then (utilization, expected score) pairs)
    type Points = &'static [(i64, i64)];
    let cases: &[(Points, Points)] = &[
        (
            &[(10, 1), (90, 9)],
            &[
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
        ),
        (
            &[(0, 2), (40, 10), (100, 0)],
            &[
                (-10, 2),
                (0, 2),
                (20, 6),
                (30, 8),
                (40, 10),
                (70, 5),
                (100, 0),
                (110, 0),
            ],
        ),
        (
            &[(0, 2), (40, 2), (100, 2)],
            &[
                (-10, 2),
                (0, 2),
                (20, 2),
                (30, 2),
                (40, 2),
                (70, 2),
                (100, 2),
                (110, 2),
            ],
        ),
    ];
    for (shape, points) in cases {
        for &(p, want) in *points {
            assert_eq!(broken_linear(shape, p), want, "{shape:?} at {p}");
        }
    }
}

#[test]
fn least_and_most_allocated() {
    // TestLeastAllocatedScoringStrategy "nothing scheduled, resources requested,
    // differently sized nodes": 37 and 50
    let nodes = || {
        vec![
            node("node1").cpu(4000).memory(10000).build(),
            node("node2").cpu(6000).memory(10000).build(),
        ]
    };
    let incoming = || pod("d", "in").cpu(3000).memory(5000);
    assert_eq!(
        scores(NODE_RESOURCES_FIT, nodes(), vec![], incoming()),
        vec![37, 50]
    );
    // TestMostAllocatedScoringStrategy, the same case: 62 and 50
    let mut most = only(NODE_RESOURCES_FIT);
    most.fit_strategy = ScoringStrategy::MostAllocated;
    assert_eq!(
        scores_with(&most, nodes(), vec![], incoming()),
        vec![62, 50]
    );
    // TestLeastAllocatedScoringStrategy "resources requested, pods scheduled with
    // resources, differently sized nodes", with memory 5000 requested on node1 as on
    // node2 (this model has no explicit zero request: a pod without one counts 200Mi):
    // cpu 40 on both, memory 50 and 80: 45 and 60
    let nodes = vec![
        node("node1").cpu(10000).memory(20000).build(),
        node("node2").cpu(10000).memory(50000).build(),
    ];
    let existing = vec![
        pod("d", "e1").node("node1").cpu(3000).memory(5000),
        pod("d", "e2").node("node2").cpu(3000).memory(5000),
    ];
    assert_eq!(
        scores(NODE_RESOURCES_FIT, nodes, existing, incoming()),
        vec![45, 60]
    );
    // a pod without requests counts as 100m and 200Mi
    let big = vec![node("node1").cpu(1000).memory(400 << 20).build()];
    assert_eq!(
        scores(NODE_RESOURCES_FIT, big, vec![], pod("d", "in")),
        vec![(90 + 50) / 2]
    );
}

#[test]
fn requested_to_capacity_ratio() {
    // TestRequestedToCapacityRatioScoringStrategy "nothing scheduled, resources
    // requested, differently sized nodes", shape (0,10),(100,0): 38 and 50
    let mut p = only(NODE_RESOURCES_FIT);
    p.fit_strategy = ScoringStrategy::RequestedToCapacityRatio(vec![(0, 10), (100, 0)]);
    let nodes = vec![
        node("node1").cpu(4000).memory(10000).build(),
        node("node2").cpu(6000).memory(10000).build(),
    ];
    assert_eq!(
        scores_with(&p, nodes, vec![], pod("d", "in").cpu(3000).memory(5000)),
        vec![38, 50]
    );
    // the arithmetic alone: weights, the 0..=10 shape scaled to 0..=100, rounding
    let s = ScoringStrategy::RequestedToCapacityRatio(vec![(0, 0), (100, 10)]);
    assert_eq!(resource_strategy_score(&s, &[1, 3], &[1, 3], &[4, 4]), 63);
    assert_eq!(resource_strategy_score(&s, &[1], &[5], &[4]), 100);
}

#[test]
fn balanced_allocation() {
    // TestNodeResourcesBalancedAllocation
    let pod35 = || pod("d", "in").cpu(3000).memory(5000);
    // "nothing scheduled, resources requested, differently sized nodes": 68, 75
    let nodes = vec![
        node("node1").cpu(4000).memory(10000).build(),
        node("node2").cpu(6000).memory(10000).build(),
    ];
    assert_eq!(
        scores(BALANCED_ALLOCATION, nodes, vec![], pod35()),
        vec![68, 75]
    );
    // "resources requested, pods scheduled with resources": 73, 74
    let nodes = || {
        vec![
            node("node1").cpu(10000).memory(20000).build(),
            node("node2").cpu(10000).memory(20000).build(),
        ]
    };
    let existing = || {
        vec![
            pod("d", "e1").node("node1").cpu(3000),
            pod("d", "e2").node("node2").cpu(3000).memory(5000),
        ]
    };
    assert_eq!(
        scores(BALANCED_ALLOCATION, nodes(), existing(), pod35()),
        vec![73, 74]
    );
    // "... nodes to reach min/max score": 100, 50
    let nodes = vec![
        node("node1").cpu(3000).memory(5000).build(),
        node("node2").cpu(3000).memory(5000).build(),
    ];
    assert_eq!(
        scores(
            BALANCED_ALLOCATION,
            nodes,
            vec![pod("d", "e1").node("node1").cpu(3000)],
            pod("d", "in").memory(5000)
        ),
        vec![100, 50]
    );
    // "scalar resource is included in the score computation if pod requests the scalar
    // resource": 75, 76
    let mut p = only(BALANCED_ALLOCATION);
    p.balanced_resources = vec![
        ResourceSpec::new("cpu", 1),
        ResourceSpec::new("memory", 1),
        ResourceSpec::new("nvidia.com/gpu", 1),
    ];
    let gpu_node = |n: &str| {
        node(n)
            .cpu(3500)
            .memory(40000)
            .resource("nvidia.com/gpu", 8)
            .build()
    };
    let existing = vec![
        pod("d", "e1")
            .node("node1")
            .cpu(3000)
            .memory(5000)
            .resource("nvidia.com/gpu", 3),
        pod("d", "e2").node("node2").cpu(3000).memory(5000),
    ];
    assert_eq!(
        scores_with(
            &p,
            vec![gpu_node("node1"), gpu_node("node2")],
            existing,
            pod("d", "in").resource("nvidia.com/gpu", 1)
        ),
        vec![75, 76]
    );
    // "nothing scheduled, nothing requested": a best-effort pod is skipped
    let nodes = vec![node("node1").build(), node("node2").cpu(1000).build()];
    assert_eq!(
        scores(BALANCED_ALLOCATION, nodes, vec![], pod("d", "in")),
        vec![0, 0]
    );
}

#[test]
fn taint_toleration() {
    use TaintEffect::{NoSchedule, PreferNoSchedule};
    // TestTaintTolerationScore "the more intolerable taints a node has, the lower score
    // it gets": 100, 50, 0
    let nodes = vec![
        node("nodeA").build(),
        node("nodeB")
            .taint("cpu-type", "arm64", PreferNoSchedule)
            .build(),
        node("nodeC")
            .taint("cpu-type", "arm64", PreferNoSchedule)
            .taint("disk-type", "ssd", PreferNoSchedule)
            .build(),
    ];
    let incoming = pod("d", "in").toleration("foo", "bar", Some(PreferNoSchedule));
    assert_eq!(
        scores(TAINT_TOLERATION, nodes, vec![], incoming),
        vec![100, 50, 0]
    );
    // "node with taints tolerated by the pod, gets a higher score ...": 100, 0
    let nodes = vec![
        node("nodeA").taint("foo", "bar", PreferNoSchedule).build(),
        node("nodeB").taint("foo", "blah", PreferNoSchedule).build(),
    ];
    let incoming = pod("d", "in").toleration("foo", "bar", Some(PreferNoSchedule));
    assert_eq!(
        scores(TAINT_TOLERATION, nodes, vec![], incoming),
        vec![100, 0]
    );
    // "only taints and tolerations that have effect PreferNoSchedule are checked": a
    // NoSchedule toleration does not tolerate a PreferNoSchedule taint
    let nodes = vec![
        node("nodeA").build(),
        node("nodeB")
            .taint("cpu-type", "arm64", PreferNoSchedule)
            .build(),
    ];
    let incoming = pod("d", "in").toleration("cpu-type", "arm64", Some(NoSchedule));
    assert_eq!(
        scores(TAINT_TOLERATION, nodes, vec![], incoming),
        vec![100, 0]
    );
}

#[test]
fn node_affinity_preferred_terms() {
    use crate::snapshot::builders::node_term;
    // TestNodeAffinityPriority "only node1 matches the preferred scheduling requirements
    // of pod" and the weighted sum: 100 for the best, the rest scaled
    let nodes = vec![
        node("node1").label("foo", "bar").build(),
        node("node2").label("key", "value").build(),
        node("node3")
            .label("foo", "bar")
            .label("key", "value")
            .build(),
    ];
    let incoming = pod("d", "in")
        .preferred_node_affinity(2, node_term("foo", &["bar"]))
        .preferred_node_affinity(4, node_term("key", &["value"]));
    assert_eq!(
        scores(NODE_AFFINITY, nodes, vec![], incoming),
        vec![33, 66, 100]
    );
}

fn preferred(weight: i32, key: &str, label: &str, value: &str) -> WeightedPodAffinityTerm {
    WeightedPodAffinityTerm {
        weight,
        term: affinity_term(key, label, value),
    }
}

#[test]
fn inter_pod_affinity_both_directions() {
    let china = |n: &str| node(n).label("region", "China").build();
    let india = |n: &str| node(n).label("region", "India").build();
    let az1 = |n: &str| node(n).label("az", "az1").build();
    let s1 = |n: &str, on: &str| pod("d", n).node(on).label("security", "S1");
    let s2 = |n: &str, on: &str| pod("d", n).node(on).label("security", "S2");
    // TestPreferredAffinity "Affinity: pod that matches topology key & pods in nodes will
    // get high score ...": 100, 0, 0
    let stay_with_s1 = Affinity {
        pod_affinity_preferred: vec![preferred(5, "region", "security", "S1")],
        ..Default::default()
    };
    let incoming = pod("d", "in")
        .label("security", "S1")
        .affinity(stay_with_s1.clone());
    assert_eq!(
        scores(
            INTER_POD_AFFINITY,
            vec![china("node1"), india("node2"), az1("node3")],
            vec![s1("a", "node1"), s2("b", "node2"), s1("c", "node3")],
            incoming
        ),
        vec![100, 0, 0]
    );
    // "nodes in one region has more matching pods ...": China 100, India 0
    let stay_with_s2 = Affinity {
        pod_affinity_preferred: vec![preferred(6, "region", "security", "S2")],
        ..Default::default()
    };
    let nodes = vec![
        china("node1"),
        india("node2"),
        china("node3"),
        china("node4"),
        india("node5"),
    ];
    let existing = vec![
        s2("a", "node1"),
        s2("b", "node1"),
        s2("c", "node2"),
        s2("d", "node3"),
        s2("e", "node4"),
        s2("f", "node5"),
    ];
    let incoming = pod("d", "in")
        .label("security", "S1")
        .affinity(stay_with_s2);
    assert_eq!(
        scores(INTER_POD_AFFINITY, nodes, existing, incoming),
        vec![100, 0, 100, 100, 0]
    );
    // "Anti Affinity: one node has more matching pods comparing to other node ...": 0, 100
    let away_from_s1 = Affinity {
        pod_anti_affinity_preferred: vec![preferred(5, "az", "security", "S1")],
        ..Default::default()
    };
    let incoming = pod("d", "in")
        .label("security", "S1")
        .affinity(away_from_s1.clone());
    assert_eq!(
        scores(
            INTER_POD_AFFINITY,
            vec![az1("node1"), india("node2")],
            vec![s1("a", "node1"), s1("b", "node1"), s2("c", "node2")],
            incoming
        ),
        vec![0, 100]
    );
    // "Anti Affinity symmetry: the existing pods in node which has anti affinity match
    // will get high score": the existing pods' terms score the incoming pod
    let away_from_s2 = Affinity {
        pod_anti_affinity_preferred: vec![preferred(5, "az", "security", "S2")],
        ..Default::default()
    };
    let az2 = node("node2").label("az", "az2").build();
    let existing = vec![
        s1("a", "node1").affinity(away_from_s2),
        s2("b", "node2").affinity(away_from_s1),
    ];
    assert_eq!(
        scores(
            INTER_POD_AFFINITY,
            vec![az1("node1"), az2],
            existing,
            pod("d", "in").label("security", "S2")
        ),
        vec![0, 100]
    );
    // TestPreferredAffinityWithHardPodAffinitySymmetricWeight "with default weight" and
    // "with zero weight": existing pods' required affinity scores by hardPodAffinityWeight
    let hard = Affinity {
        pod_affinity_required: vec![affinity_term("region", "service", "S1")],
        ..Default::default()
    };
    let nodes = || vec![china("node1"), india("node2"), az1("node3")];
    let existing = || {
        vec![
            pod("d", "a").node("node1").affinity(hard.clone()),
            pod("d", "b").node("node2").affinity(hard.clone()),
        ]
    };
    let incoming = || pod("d", "in").label("service", "S1");
    assert_eq!(
        scores(INTER_POD_AFFINITY, nodes(), existing(), incoming()),
        vec![100, 100, 0]
    );
    let mut zero = only(INTER_POD_AFFINITY);
    zero.hard_pod_affinity_weight = 0;
    assert_eq!(
        scores_with(&zero, nodes(), existing(), incoming()),
        vec![0, 0, 0]
    );
}

#[test]
fn pod_topology_spread_soft_constraints() {
    let host = |n: &str| node(n).build();
    let foo = |n: &str, on: &str| pod("d", n).node(on).label("foo", "");
    let incoming = |skew: i32| {
        pod("d", "in")
            .label("foo", "")
            .spread(skew, LABEL_HOSTNAME, ScheduleAnyway, "foo", "")
    };
    // TestPodTopologySpreadScore "one constraint on node, all 4 nodes are candidates"
    // (2/1/0/3): 20, 60, 100, 0; and with maxSkew 2: 33, 66, 100, 16
    let nodes = || {
        vec![
            host("node-a"),
            host("node-b"),
            host("node-c"),
            host("node-d"),
        ]
    };
    let existing = || {
        vec![
            foo("a1", "node-a"),
            foo("a2", "node-a"),
            foo("b1", "node-b"),
            foo("d1", "node-d"),
            foo("d2", "node-d"),
            foo("d3", "node-d"),
        ]
    };
    assert_eq!(
        scores(POD_TOPOLOGY_SPREAD, nodes(), existing(), incoming(1)),
        vec![20, 60, 100, 0]
    );
    assert_eq!(
        scores(POD_TOPOLOGY_SPREAD, nodes(), existing(), incoming(2)),
        vec![33, 66, 100, 16]
    );
    // "one constraint on node, all 4 nodes are candidates, maxSkew=3" (4/3/2/1): 44, 66,
    // 77, 100
    let spread4321 = || {
        let mut v = Vec::new();
        for (node_name, count) in [("node-a", 4), ("node-b", 3), ("node-c", 2), ("node-d", 1)] {
            for i in 0..count {
                v.push(foo(&format!("{node_name}-{i}"), node_name));
            }
        }
        v
    };
    assert_eq!(
        scores(POD_TOPOLOGY_SPREAD, nodes(), spread4321(), incoming(3)),
        vec![44, 66, 77, 100]
    );
    // "system defaulting, nodes don't have zone, pods match service": the same scores from
    // the default constraints alone (here the pods share their ReplicaSet)
    assert_eq!(
        scores(
            POD_TOPOLOGY_SPREAD,
            nodes(),
            spread4321(),
            pod("d", "in").label("foo", "")
        ),
        vec![44, 66, 77, 100]
    );
    // ... and with defaultingType List and no constraints, nothing to score
    let mut list = only(POD_TOPOLOGY_SPREAD);
    list.default_constraints = DefaultConstraints::List(Vec::new());
    assert_eq!(
        scores_with(&list, nodes(), spread4321(), pod("d", "in")),
        vec![0, 0, 0, 0]
    );
    // "one constraint on zone, 3 out of 4 nodes are candidates" (4/2/1/~3~): 75, 75, 100
    let zone = |n: &str, z: &str| node(n).label("zone", z).build();
    let nodes = vec![
        zone("node-a", "zone1"),
        zone("node-b", "zone1"),
        zone("node-x", "zone2"),
        zone("node-y", "zone2"),
    ];
    let mut existing = Vec::new();
    for (node_name, count) in [("node-a", 4), ("node-b", 2), ("node-x", 1), ("node-y", 3)] {
        for i in 0..count {
            existing.push(foo(&format!("{node_name}-{i}"), node_name));
        }
    }
    let incoming = pod("d", "in")
        .label("foo", "")
        .spread(1, "zone", ScheduleAnyway, "foo", "");
    let mut all: Vec<_> = existing.into_iter().map(PodBuilder::build).collect();
    all.push(incoming.build());
    let s = snapshot(nodes, all);
    let sim = Simulation::new(&s);
    let id = PodId::from_index(s.pods.iter().position(|p| &*p.name == "in").unwrap());
    assert_eq!(
        total_scores(
            &sim,
            &only(POD_TOPOLOGY_SPREAD),
            id,
            &[NodeId::new(0), NodeId::new(1), NodeId::new(2)]
        ),
        vec![75, 75, 100]
    );
}

#[test]
fn image_locality() {
    const MB: i64 = 1024 * 1024;
    // TestImageLocalityPriority "two images on one node, prefer this node": 7, 0
    let nodes = vec![
        node("node1")
            .image("gcr.io/40:latest", 40 * MB)
            .image("gcr.io/300:latest", 300 * MB)
            .image("gcr.io/300:v1", 300 * MB)
            .build(),
        node("node2")
            .image("gcr.io/250:latest", 250 * MB)
            .image("gcr.io/10:latest", 10 * MB)
            .build(),
    ];
    let incoming = pod("d", "in").images(&["gcr.io/40", "gcr.io/300"]);
    assert_eq!(scores(IMAGE_LOCALITY, nodes, vec![], incoming), vec![7, 0]);
    // "two images spread on two nodes, prefer the larger image one": 0, 5
    let nodes = vec![
        node("node1")
            .image("gcr.io/40:latest", 40 * MB)
            .image("gcr.io/300:latest", 300 * MB)
            .build(),
        node("node2")
            .image("gcr.io/250:latest", 250 * MB)
            .image("gcr.io/10:latest", 10 * MB)
            .build(),
    ];
    let incoming = pod("d", "in").images(&["gcr.io/40", "gcr.io/250"]);
    assert_eq!(scores(IMAGE_LOCALITY, nodes, vec![], incoming), vec![0, 5]);
    // TestNormalizedImageName
    assert_eq!(normalized_image_name("root"), "root:latest");
    assert_eq!(
        normalized_image_name("gcr.io:5000/root"),
        "gcr.io:5000/root:latest"
    );
    assert_eq!(normalized_image_name("root:tag"), "root:tag");
    assert_eq!(
        normalized_image_name("gcr.io:5000/root:tag"),
        "gcr.io:5000/root:tag"
    );
}

#[test]
fn weights_sum_and_ties_are_alternatives() {
    use TaintEffect::PreferNoSchedule;
    // three equal empty nodes, one with a PreferNoSchedule taint: the two others tie
    let nodes = vec![
        node("a").build(),
        node("b").taint("x", "", PreferNoSchedule).build(),
        node("c").build(),
    ];
    let s = snapshot(nodes, vec![pod("d", "in").cpu(500).memory(1 << 30).build()]);
    let sim = Simulation::new(&s);
    let p = ScoreProfile::default();
    let totals = total_scores(
        &sim,
        &p,
        PodId::new(0),
        &[NodeId::new(0), NodeId::new(1), NodeId::new(2)],
    );
    // TaintToleration weight 3: 300 for a and c, 0 for b; the rest equal
    assert_eq!(totals[0] - totals[1], 300);
    assert_eq!(totals[0], totals[2]);
    let prediction = sim
        .predict(
            PodId::new(0),
            &[NodeId::new(0), NodeId::new(1), NodeId::new(2)],
        )
        .unwrap();
    assert_eq!(prediction.node, NodeId::new(0));
    assert_eq!(prediction.alternatives, vec![NodeId::new(2)]);
    // with the taint's weight set to 0 all three tie
    let mut flat = p.clone();
    flat.taint_toleration_weight = 0;
    let sim = Simulation::with_profile(&s, std::sync::Arc::new(flat));
    assert_eq!(
        sim.predict(
            PodId::new(0),
            &[NodeId::new(0), NodeId::new(1), NodeId::new(2)]
        )
        .unwrap()
        .alternatives,
        vec![NodeId::new(1), NodeId::new(2)]
    );
    // one feasible node: nothing to score, no alternatives
    assert_eq!(
        sim.predict(PodId::new(0), &[NodeId::new(1)]).unwrap(),
        crate::sim::Prediction {
            node: NodeId::new(1),
            alternatives: vec![]
        }
    );
}

#[test]
fn default_spreading_spreads_a_replica_set_over_new_nodes() {
    // the case the issue measured: three replicas leave a full node; three equal empty
    // nodes: kube-scheduler's default spreading puts one on each
    let mut nodes = vec![node("full").cpu(4000).unschedulable().build()];
    for n in ["new-1", "new-2", "new-3"] {
        nodes.push(node(n).label(LABEL_ZONE, "z1").build());
    }
    let pods = (0..3)
        .map(|i| {
            pod("d", &format!("r{i}"))
                .node("full")
                .cpu(100)
                .memory(64 << 20)
                .label("app", "web")
                .build()
        })
        .collect();
    let s = snapshot(nodes, pods);
    let mut sim = Simulation::new(&s);
    let targets = [1, 2, 3].map(NodeId::new);
    let mut got = Vec::new();
    for p in IdRange::first(3) {
        sim.remove(p);
    }
    for p in IdRange::first(3) {
        got.push(sim.schedule(p, &targets).unwrap());
    }
    got.sort();
    assert_eq!(got, [1, 2, 3].map(NodeId::new));
}

#[test]
fn default_spreading_counts_the_controllers_pods_of_the_namespace_where_the_plan_leaves_them() {
    // Each half weighs the resources against the spreading: the node with more requests must
    // win on spreading alone.
    let nodes = || {
        vec![
            node("a").cpu(64_000).memory(256 << 30).build(),
            node("b").cpu(64_000).memory(256 << 30).build(),
        ]
    };
    let of = |ns: &str, name: &str, owner: &str, on: &str, cpu: i64| {
        pod(ns, name)
            .node(on)
            .cpu(cpu)
            .memory(16 << 20)
            .owner("ReplicaSet", owner)
            .build()
    };
    let both = [NodeId::new(0), NodeId::new(1)];
    // The incoming pod's ReplicaSet `web` (namespace d) has one pod on a. On b, with more
    // requests: pods of another ReplicaSet of d and of a `web` of namespace e. Neither
    // counts, so b is the emptier domain.
    let mut pods = vec![
        of("d", "incoming", "web", "a", 10),
        of("d", "w1", "web", "a", 10),
    ];
    for i in 0..3 {
        pods.push(of("d", &format!("o{i}"), "other", "b", 1000));
        pods.push(of("e", &format!("w{i}"), "web", "b", 1000));
    }
    let s = snapshot(nodes(), pods);
    let incoming = s.pod_id("d", "incoming").unwrap();
    let mut sim = Simulation::new(&s);
    sim.remove(incoming);
    assert_eq!(sim.predict(incoming, &both).unwrap().node, NodeId::new(1));
    // Two `web` pods on a, with more requests there; the plan moves both to b: they count
    // where the plan leaves them, and a is preferred.
    let pods = vec![
        of("d", "incoming", "web", "a", 10),
        of("d", "w1", "web", "a", 10),
        of("d", "w2", "web", "a", 10),
        of("d", "heavy", "other", "a", 6000),
    ];
    let s = snapshot(nodes(), pods);
    let incoming = s.pod_id("d", "incoming").unwrap();
    let mut sim = Simulation::new(&s);
    sim.remove(incoming);
    for name in ["w1", "w2"] {
        let w = s.pod_id("d", name).unwrap();
        sim.remove(w);
        assert_eq!(sim.schedule(w, &[NodeId::new(1)]).unwrap(), NodeId::new(1));
    }
    assert_eq!(sim.predict(incoming, &both).unwrap().node, NodeId::new(0));
}

#[test]
fn a_placed_replacements_preferred_anti_affinity_scores_where_the_plan_put_it() {
    // `guard` prefers to be away from `web` pods within a node; it starts on b and the plan
    // moves it to a: an incoming `web` pod, which has no terms of its own, is scored by the
    // guard's term where the guard now is, and goes to b
    let away_from_web = Affinity {
        pod_anti_affinity_preferred: vec![preferred(100, LABEL_HOSTNAME, "app", "web")],
        ..Default::default()
    };
    let host = |n: &str| node(n).label(LABEL_HOSTNAME, n).build();
    let s = snapshot(
        vec![host("a"), host("b")],
        vec![
            pod("d", "guard").node("b").affinity(away_from_web).build(),
            pod("d", "web").node("a").label("app", "web").build(),
        ],
    );
    let (guard, web) = (
        s.pod_id("d", "guard").unwrap(),
        s.pod_id("d", "web").unwrap(),
    );
    let both = [NodeId::new(0), NodeId::new(1)];
    let mut sim = Simulation::new(&s);
    sim.remove(web);
    assert_eq!(sim.predict(web, &both).unwrap().node, NodeId::new(0));
    sim.remove(guard);
    assert_eq!(
        sim.schedule(guard, &[NodeId::new(0)]).unwrap(),
        NodeId::new(0)
    );
    assert_eq!(sim.predict(web, &both).unwrap().node, NodeId::new(1));
}
