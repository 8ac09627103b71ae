use super::*;
use crate::framework::{Limits, PlanningState};
use crate::labels::Requirement;
use crate::plan;
use crate::plugins::default_evictor::DefaultEvictor;
use crate::snapshot::builders::{node, pdb, pod, snapshot, PodBuilder, T0};
use crate::snapshot::{Affinity, Node, NodeSelectorTerm, SnapshotParts, TaintEffect};
use serde_json::{json, Value};

const DNS: WhenUnsatisfiable = WhenUnsatisfiable::DoNotSchedule;
const SA: WhenUnsatisfiable = WhenUnsatisfiable::ScheduleAnyway;

fn zone_node(name: &str, zone: &str) -> Node {
    node(name).label("zone", zone).build()
}

/// A pod in ns1 labelled foo=bar, with a zone constraint over foo=bar.
fn spread_pod(name: &str, node: &str, max_skew: i32) -> PodBuilder {
    pod("ns1", name)
        .node(node)
        .label("foo", "bar")
        .spread(max_skew, "zone", DNS, "foo", "bar")
}

/// `counts[i]` pods named `p<k>` (k running over all pods) on `nodes[i]`.
fn spread_pods(nodes: &[&str], counts: &[usize], max_skew: i32) -> Vec<crate::snapshot::Pod> {
    let mut out = Vec::new();
    for (n, &count) in nodes.iter().zip(counts) {
        for _ in 0..count {
            let name = format!("p{:03}", out.len());
            out.push(spread_pod(&name, n, max_skew).build());
        }
    }
    out
}

struct Run {
    /// Evicted pods, in plan order.
    names: Vec<String>,
    /// The same, as `<namespace>/<name>`.
    keys: Vec<String>,
    reasons: Vec<String>,
}

fn run_full(
    snap: &ClusterSnapshot,
    args: Value,
    evictor: Value,
    limits: Limits,
    before: &[&str],
) -> Run {
    let plugin = RemovePodsViolatingTopologySpreadConstraint::from_json(&args).unwrap();
    let evictor = DefaultEvictor::from_json(&evictor).unwrap();
    let nodes = snap.ready_nodes(&Selector::everything());
    let mut state = PlanningState::new(snap, limits);
    for name in before {
        let id = PodId::from_index(snap.pods.iter().position(|p| &*p.name == *name).unwrap());
        state.plan_eviction(id, "p", "Earlier", "r".into()).unwrap();
    }
    crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0 + 3600);
    let ev: Vec<_> = state
        .ledger()
        .evictions()
        .iter()
        .filter(|e| e.plugin == NAME)
        .collect();
    Run {
        names: ev
            .iter()
            .map(|e| snap.pod(e.pod).name.to_string())
            .collect(),
        keys: ev.iter().map(|e| snap.pod(e.pod).key()).collect(),
        reasons: ev.iter().map(|e| e.reason.clone()).collect(),
    }
}

fn run(snap: &ClusterSnapshot, args: Value) -> Vec<String> {
    run_full(snap, args, Value::Null, Limits::default(), &[]).names
}

fn run_node_fit(snap: &ClusterSnapshot, args: Value) -> Vec<String> {
    run_full(snap, args, json!({"nodeFit": true}), Limits::default(), &[]).names
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn simple_zone_skew_moves_half() {
    let snap = snapshot(
        vec![zone_node("a1", "a"), zone_node("b1", "b")],
        spread_pods(&["a1"], &[4], 1),
    );
    let r = run_full(&snap, Value::Null, Value::Null, Limits::default(), &[]);
    // the last pods of the domain go first
    assert_eq!(r.names, ["p003", "p002"]);
    assert_eq!(
        r.reasons[0],
        "topology spread: zone=a has 4 matching pods, zone=b has 0, maxSkew 1"
    );
}

#[test]
fn namespaces_balanced_on_all_cores_evict_in_namespace_order() {
    // 60 namespaces, skewed differently (k mod 5 + 2 pods on a1, none on b1), so that
    // neighbouring choices differ; the chosen pods are evicted namespace after namespace,
    // each namespace's in the order one pass would choose them, under a node limit that
    // makes the order matter.
    let mut pods = Vec::new();
    let mut want_per_ns = Vec::new();
    for k in 0..60usize {
        let ns = format!("ns{k:02}");
        let n = k % 5 + 2;
        for i in 0..n {
            pods.push(
                pod(&ns, &format!("p{i}"))
                    .node("a1")
                    .label("foo", "bar")
                    .spread(1, "zone", DNS, "foo", "bar")
                    .build(),
            );
        }
        // [n,0] with maxSkew 1 ends as even as it gets: n/2 move, the last pods first.
        let moves = n / 2;
        want_per_ns.push((
            ns,
            (n - moves..n)
                .rev()
                .map(|i| format!("p{i}"))
                .collect::<Vec<_>>(),
        ));
    }
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    let want: Vec<String> = want_per_ns
        .iter()
        .flat_map(|(ns, names)| names.iter().map(move |n| format!("{ns}/{n}")))
        .collect();
    let keys = |limits: Limits| run_full(&snap, Value::Null, Value::Null, limits, &[]).keys;
    assert_eq!(keys(Limits::default()), want);
    // With at most 25 evictions per node, the first 25 chosen are the ones planned.
    let limited = Limits {
        per_node: Some(25),
        ..Limits::default()
    };
    for _ in 0..5 {
        assert_eq!(keys(limited), want[..25]);
    }
}

#[test]
fn each_workload_of_a_namespace_is_balanced_on_its_own() {
    // Three workloads in one namespace, each with its own constraint: web skewed 4/0, api
    // balanced 1/1, and jobs selected by an expression (no single required label) skewed
    // 3/0 — the index by label finds web's and api's pods, jobs' are scanned. (As
    // upstream: half the skew moves, rounded up: 2 of web, 1 of the jobs.)
    let mut pods = Vec::new();
    for i in 0..4 {
        pods.push(
            pod("ns1", &format!("web-{i}"))
                .node("a1")
                .label("app", "web")
                .spread(1, "zone", DNS, "app", "web")
                .build(),
        );
    }
    for (i, n) in ["a1", "b1"].iter().enumerate() {
        pods.push(
            pod("ns1", &format!("api-{i}"))
                .node(n)
                .label("app", "api")
                .spread(1, "zone", DNS, "app", "api")
                .build(),
        );
    }
    let jobs = crate::labels::Selector::compile(&crate::labels::LabelSelectorSpec {
        match_labels: Default::default(),
        match_expressions: vec![crate::labels::LabelSelectorRequirement {
            key: "tier".into(),
            operator: "In".into(),
            values: vec!["batch".into(), "etl".into()],
        }],
    })
    .unwrap();
    assert_eq!(jobs.required_label(), None);
    let web = &pods[0].topology_spread[0];
    assert_eq!(
        web.label_selector.as_ref().unwrap().required_label(),
        Some(("app", "web"))
    );
    for i in 0..3 {
        pods.push(
            pod("ns1", &format!("job-{i}"))
                .node("a1")
                .label("tier", if i == 0 { "etl" } else { "batch" })
                .spread_constraint(TopologySpreadConstraint {
                    max_skew: 1,
                    topology_key: "zone".into(),
                    when_unsatisfiable: DNS,
                    label_selector: Some(jobs.clone()),
                    min_domains: None,
                    node_affinity_policy: InclusionPolicy::Honor,
                    node_taints_policy: InclusionPolicy::Ignore,
                    match_label_keys: Vec::new(),
                })
                .build(),
        );
    }
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    assert_eq!(sorted(run(&snap, Value::Null)), ["job-2", "web-2", "web-3"]);
}

#[test]
fn upstream_domain_tables() {
    // (name, zones of the nodes, pods per node, maxSkew, evictions), from upstream's tests.
    type Case = (
        &'static str,
        &'static [&'static str],
        &'static [usize],
        i32,
        usize,
    );
    let cases: &[Case] = &[
        ("[2,1] within maxSkew", &["a", "b"], &[2, 1], 1, 0),
        ("[3,1] → [2,2]", &["a", "b"], &[3, 1], 1, 1),
        ("[5,2] → [4,3]", &["a", "b"], &[5, 2], 1, 1),
        ("[4,0] → [2,2]", &["a", "b"], &[4, 0], 1, 2),
        (
            "[0,1,100] → [34,33,34]",
            &["a", "b", "c"],
            &[0, 1, 100],
            1,
            66,
        ),
        (
            "[0,1,3,5] → [2,2,3,2]",
            &["a", "b", "c", "d"],
            &[0, 1, 3, 5],
            1,
            3,
        ),
        ("[2,6] maxSkew 2 → [3,5]", &["a", "b"], &[2, 6], 2, 1),
        ("[5,5,5] balanced", &["a", "b", "c"], &[5, 5, 5], 1, 0),
        ("[3,3,2] within maxSkew", &["a", "b", "c"], &[3, 3, 2], 1, 0),
    ];
    for (name, zones, counts, skew, want) in cases {
        let nodes: Vec<Node> = zones
            .iter()
            .map(|z| zone_node(&format!("{z}1"), z))
            .collect();
        let names: Vec<String> = zones.iter().map(|z| format!("{z}1")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let snap = snapshot(nodes, spread_pods(&names, counts, *skew));
        assert_eq!(run(&snap, Value::Null).len(), *want, "{name}");
    }
}

#[test]
fn picks_the_pods_upstream_picks() {
    // upstream: "3 domains size [8 7 0], maxSkew=1, should move 5 to get [5 5 5]"
    let snap = snapshot(
        vec![
            zone_node("n1", "a"),
            zone_node("n2", "b"),
            zone_node("n3", "c"),
        ],
        spread_pods(&["n1", "n2"], &[8, 7], 1),
    );
    assert_eq!(
        sorted(run(&snap, Value::Null)),
        ["p005", "p006", "p007", "p013", "p014"]
    );
    // upstream: "2 domains, sizes [[1,4], [2,1]], NodeFit is enabled; should move 1":
    // zone a holds A1 (1 pod) and A2 (4 pods); the last pod of the last node goes.
    let nodes = vec![
        zone_node("A1", "a"),
        zone_node("A2", "a"),
        zone_node("B1", "b"),
        zone_node("B2", "b"),
    ];
    let snap = snapshot(
        nodes,
        spread_pods(&["A1", "A2", "B1", "B2"], &[1, 4, 2, 1], 1),
    );
    assert_eq!(run_node_fit(&snap, Value::Null), ["p004"]);
}

#[test]
fn soft_constraints_only_when_listed() {
    let pods: Vec<_> = (0..4)
        .map(|i| {
            pod("ns1", &format!("p{i}"))
                .node("a1")
                .label("foo", "bar")
                .spread(1, "zone", SA, "foo", "bar")
                .build()
        })
        .collect();
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    assert!(run(&snap, Value::Null).is_empty());
    assert!(run(&snap, json!({"constraints": ["DoNotSchedule"]})).is_empty());
    assert_eq!(
        run(
            &snap,
            json!({"constraints": ["DoNotSchedule", "ScheduleAnyway"]})
        )
        .len(),
        2
    );
    assert_eq!(
        run(&snap, json!({"constraints": ["ScheduleAnyway"]})).len(),
        2
    );
    // an explicit empty list acts on nothing, as upstream
    let hard = snapshot(
        vec![zone_node("a1", "a"), zone_node("b1", "b")],
        spread_pods(&["a1"], &[4], 1),
    );
    assert!(run(&hard, json!({"constraints": []})).is_empty());
    assert!(run(&hard, json!({"constraints": ["ScheduleAnyway"]})).is_empty());
}

#[test]
fn multiple_constraints_hostname_and_zone() {
    // upstream issue #564: 3 nodes per zone, pods on n1 n2 n3 (zone a) and n4 (zone b);
    // the soft zone constraint moves one pod.
    let mut nodes = Vec::new();
    for (i, z) in ["a", "a", "a", "b", "b", "b"].iter().enumerate() {
        nodes.push(zone_node(&format!("n{}", i + 1), z));
    }
    let pods: Vec<_> = ["n1", "n2", "n3", "n4"]
        .iter()
        .enumerate()
        .map(|(i, n)| {
            pod("ns1", &format!("p{i}"))
                .node(n)
                .label("app", "whoami")
                .spread(1, "zone", SA, "app", "whoami")
                .spread(1, "kubernetes.io/hostname", DNS, "app", "whoami")
                .build()
        })
        .collect();
    let snap = snapshot(nodes, pods);
    assert_eq!(
        run(
            &snap,
            json!({"constraints": ["DoNotSchedule", "ScheduleAnyway"]})
        )
        .len(),
        1
    );
    assert!(run(&snap, Value::Null).is_empty());
}

#[test]
fn namespaces_include_and_exclude() {
    let mut pods = spread_pods(&["a1"], &[4], 1);
    for i in 0..4 {
        pods.push(
            pod("ns2", &format!("q{i}"))
                .node("a1")
                .label("foo", "bar")
                .spread(1, "zone", DNS, "foo", "bar")
                .build(),
        );
    }
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    assert_eq!(run(&snap, Value::Null).len(), 4);
    let only2 = run(&snap, json!({"namespaces": {"include": ["ns2"]}}));
    assert_eq!(only2, ["q3", "q2"]);
    let not2 = run(&snap, json!({"namespaces": {"exclude": ["ns2"]}}));
    assert_eq!(not2, ["p003", "p002"]);
}

#[test]
fn constraints_are_per_namespace() {
    // ns2's pods match the selector but live in another namespace: they never count.
    let mut pods = spread_pods(&["a1", "b1"], &[2, 1], 1);
    for i in 0..5 {
        pods.push(
            pod("ns2", &format!("q{i}"))
                .node("a1")
                .label("foo", "bar")
                .build(),
        );
    }
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    assert!(run(&snap, Value::Null).is_empty());
}

#[test]
fn label_selector_limits_evictions_not_counting() {
    // Four pods in zone a: only those labelled evict=yes may go; all four count.
    let mk = |labelled: &[usize]| {
        let pods: Vec<_> = (0..4)
            .map(|i| {
                let p = spread_pod(&format!("p{i}"), "a1", 1);
                if labelled.contains(&i) {
                    p.label("evict", "yes").build()
                } else {
                    p.build()
                }
            })
            .collect();
        snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods)
    };
    let args = json!({"labelSelector": {"matchLabels": {"evict": "yes"}}});
    assert_eq!(sorted(run(&mk(&[0, 1]), args.clone())), ["p0", "p1"]);
    assert_eq!(run(&mk(&[0]), args.clone()), ["p0"]);
    assert!(run(&mk(&[]), args.clone()).is_empty());
    // upstream: "move 0 pod for node with unmatched label filtering"
    let snap = mk(&[]);
    assert!(run(
        &snap,
        json!({"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["baz"]}]}})
    )
    .is_empty());
    assert_eq!(
        run(
            &snap,
            json!({"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "NotIn", "values": ["baz"]}]}})
        )
        .len(),
        2
    );
}

fn hash_constraint() -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        match_label_keys: vec!["pod-template-hash".into()],
        ..spread_pod("x", "a1", 1).build().topology_spread[0].clone()
    }
}

#[test]
fn match_label_keys_split_replica_sets() {
    let mk = |hashes: [&str; 2]| {
        let pods: Vec<_> = hashes
            .iter()
            .enumerate()
            .map(|(i, h)| {
                pod("ns1", &format!("p{i}"))
                    .node("a1")
                    .label("foo", "bar")
                    .label("pod-template-hash", h)
                    .spread_constraint(hash_constraint())
                    .build()
            })
            .collect();
        snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods)
    };
    // same ReplicaSet: [2,0] → one moves (upstream "matchLabelKeys on same replicaset")
    assert_eq!(run(&mk(["h1", "h1"]), Value::Null), ["p1"]);
    // two ReplicaSets: each has [1,0], within maxSkew
    assert!(run(&mk(["h1", "h2"]), Value::Null).is_empty());
}

#[test]
fn nil_selector_selects_nothing() {
    let mut c = hash_constraint();
    c.label_selector = None;
    let pods: Vec<_> = (0..4)
        .map(|i| {
            pod("ns1", &format!("p{i}"))
                .node("a1")
                .label("foo", "bar")
                .label("pod-template-hash", "h")
                .spread_constraint(c.clone())
                .build()
        })
        .collect();
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    assert!(run(&snap, Value::Null).is_empty());
}

fn policy_constraint(
    affinity: InclusionPolicy,
    taints: InclusionPolicy,
) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        node_affinity_policy: affinity,
        node_taints_policy: taints,
        ..spread_pod("x", "a1", 1).build().topology_spread[0].clone()
    }
}

#[test]
fn node_affinity_policy_decides_which_domains_count() {
    // Pods select pool=x; zone c only has a pool=y node.
    let nodes = vec![
        node("a1").label("zone", "a").label("pool", "x").build(),
        node("b1").label("zone", "b").label("pool", "x").build(),
        node("c1").label("zone", "c").label("pool", "y").build(),
    ];
    let mk = |policy: InclusionPolicy| {
        let pods: Vec<_> = [("p0", "a1"), ("p1", "a1"), ("p2", "b1")]
            .iter()
            .map(|(n, on)| {
                pod("ns1", n)
                    .node(on)
                    .label("foo", "bar")
                    .node_selector("pool", "x")
                    .spread_constraint(policy_constraint(policy, InclusionPolicy::Ignore))
                    .build()
            })
            .collect();
        snapshot(nodes.clone(), pods)
    };
    let no_fit = json!({"topologyBalanceNodeFit": false});
    // Honor: domains a and b only, [2,1] is within maxSkew.
    assert!(run(&mk(InclusionPolicy::Honor), no_fit.clone()).is_empty());
    // Ignore: zone c counts too, [2,1,0] is skewed...
    assert_eq!(run(&mk(InclusionPolicy::Ignore), no_fit), ["p1"]);
    // ...but no pod fits c1, so topologyBalanceNodeFit keeps them.
    assert!(run(&mk(InclusionPolicy::Ignore), Value::Null).is_empty());
}

#[test]
fn node_affinity_policy_ignore_prefers_pods_that_fit() {
    // upstream: "3 domains, sizes [2, 1, 0] with selectors, maxSkew=1, should move 1"
    let nodes = vec![
        node("A1")
            .label("zone", "zoneA")
            .label("arch", "arm64")
            .build(),
        node("B1")
            .label("zone", "zoneB")
            .label("arch", "arm64")
            .build(),
        node("C1")
            .label("zone", "zoneC")
            .label("arch", "arm64")
            .build(),
    ];
    let c = policy_constraint(InclusionPolicy::Ignore, InclusionPolicy::Ignore);
    let pods = vec![
        pod("ns1", "pod-0")
            .node("A1")
            .label("foo", "bar")
            .node_selector("arch", "arm64")
            .spread_constraint(c.clone())
            .build(),
        pod("ns1", "pod-1")
            .node("A1")
            .label("foo", "bar")
            .node_selector("arch", "arm64")
            .node_selector("zone", "zoneA")
            .spread_constraint(c.clone())
            .build(),
        pod("ns1", "pod-2")
            .node("B1")
            .label("foo", "bar")
            .node_selector("arch", "arm64")
            .spread_constraint(c)
            .build(),
    ];
    let snap = snapshot(nodes, pods);
    assert_eq!(run(&snap, Value::Null), ["pod-0"]);
}

#[test]
fn node_taints_policy_decides_which_domains_count() {
    let nodes = vec![
        zone_node("a1", "a"),
        node("b1")
            .label("zone", "b")
            .taint("dedicated", "gpu", TaintEffect::NoSchedule)
            .build(),
    ];
    let mk = |policy: InclusionPolicy| {
        let pods: Vec<_> = (0..2)
            .map(|i| {
                pod("ns1", &format!("p{i}"))
                    .node("a1")
                    .label("foo", "bar")
                    .spread_constraint(policy_constraint(InclusionPolicy::Honor, policy))
                    .build()
            })
            .collect();
        snapshot(nodes.clone(), pods)
    };
    let no_fit = json!({"topologyBalanceNodeFit": false});
    // Ignore (default): the tainted zone counts, [2,0] is skewed; the pod does not
    // tolerate the taint, so only without topologyBalanceNodeFit is one evicted.
    assert_eq!(run(&mk(InclusionPolicy::Ignore), no_fit.clone()), ["p1"]);
    assert!(run(&mk(InclusionPolicy::Ignore), Value::Null).is_empty());
    // Honor: zone b does not count; one domain is always balanced.
    assert!(run(&mk(InclusionPolicy::Honor), no_fit).is_empty());
}

#[test]
fn tolerating_pod_moves_pinned_pod_stays() {
    // upstream: "2 domains, sizes [2,0], maxSkew=1, move 1 pod since pod tolerates the
    // node with taint" and the NoSchedule / PreferNoSchedule variants.
    let mk = |effect: TaintEffect, tolerate: bool| {
        let nodes = vec![
            zone_node("n1", "zoneA"),
            node("n2")
                .label("zone", "zoneB")
                .taint("taint-test", "test", effect)
                .build(),
        ];
        let mut p0 = pod("ns1", "pod-0")
            .node("n1")
            .label("foo", "bar")
            .spread(1, "zone", DNS, "foo", "bar");
        if tolerate {
            p0 = p0.toleration("taint-test", "test", Some(TaintEffect::NoSchedule));
        }
        let p1 = pod("ns1", "pod-1")
            .node("n1")
            .label("foo", "bar")
            .node_selector("zone", "zoneA");
        snapshot(nodes, vec![p0.build(), p1.build()])
    };
    assert_eq!(
        run(&mk(TaintEffect::NoSchedule, true), Value::Null),
        ["pod-0"]
    );
    assert!(run(&mk(TaintEffect::NoSchedule, false), Value::Null).is_empty());
    assert!(run_node_fit(&mk(TaintEffect::NoSchedule, false), Value::Null).is_empty());
    assert_eq!(
        run(&mk(TaintEffect::PreferNoSchedule, false), Value::Null),
        ["pod-0"]
    );
}

#[test]
fn topology_balance_node_fit_needs_room_below_average() {
    // upstream: "3 domains, sizes [2,3,4], NodeFit is enabled, and not enough cpu on
    // zoneA; nothing should be moved" and its topologyBalanceNodeFit: false twin.
    let nodes = vec![
        node("n1").label("zone", "a").cpu(250).build(),
        node("n2").label("zone", "b").cpu(1000).build(),
        node("n3").label("zone", "c").cpu(1000).build(),
    ];
    let mut pods = Vec::new();
    for (n, count) in [("n1", 2), ("n2", 3), ("n3", 4)] {
        for _ in 0..count {
            let name = format!("p{}", pods.len());
            pods.push(spread_pod(&name, n, 1).cpu(100).build());
        }
    }
    let snap = snapshot(nodes, pods);
    assert!(run_node_fit(&snap, Value::Null).is_empty());
    // Upstream evicts p8 here: its nodeFit ignores topology spread. Ours does not: p8
    // leaving zone c (a=2, b=3, c=3) fits neither n1 (cpu) nor n2 (zone b would hold 4,
    // skew 2 > 1), so the evictor's nodeFit keeps it.
    assert!(run_node_fit(&snap, json!({"topologyBalanceNodeFit": false})).is_empty());
    assert_eq!(run(&snap, json!({"topologyBalanceNodeFit": false})), ["p8"]);
}

#[test]
fn node_fit_sees_earlier_plans() {
    // b1 is full until an earlier plugin plans its other pod away.
    let nodes = vec![
        zone_node("a1", "a"),
        node("b1").label("zone", "b").pods(1).build(),
    ];
    let mut pods = spread_pods(&["a1"], &[3], 1);
    pods.push(pod("ns1", "other").node("b1").build());
    let snap = snapshot(nodes, pods);
    let r = run_full(&snap, Value::Null, Value::Null, Limits::default(), &[]);
    assert!(r.names.is_empty());
    let r = run_full(
        &snap,
        Value::Null,
        Value::Null,
        Limits::default(),
        &["other"],
    );
    assert_eq!(r.names, ["p002"]);
}

#[test]
fn planned_pods_do_not_count() {
    // [2,1] is balanced; once an earlier plugin takes zone b's pod it is [2,0].
    let snap = snapshot(
        vec![zone_node("a1", "a"), zone_node("b1", "b")],
        spread_pods(&["a1", "b1"], &[2, 1], 1),
    );
    assert!(run(&snap, Value::Null).is_empty());
    let r = run_full(
        &snap,
        Value::Null,
        Value::Null,
        Limits::default(),
        &["p002"],
    );
    assert_eq!(r.names, ["p001"]);
}

#[test]
fn terminating_and_finished_pods_do_not_count() {
    // upstream: "2 domains, sizes [4,2], maxSkew=1, 2 pods in termination"
    let mut pods = spread_pods(&["a1", "b1"], &[2, 2], 1);
    pods.push(spread_pod("t0", "a1", 1).terminating().build());
    pods.push(spread_pod("t1", "a1", 1).terminating().build());
    pods.push(
        spread_pod("f0", "a1", 1)
            .phase(crate::snapshot::Phase::Succeeded)
            .build(),
    );
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    assert!(run(&snap, Value::Null).is_empty());
}

#[test]
fn protected_pods_count_but_stay() {
    // zone a: one plain pod and three with local storage; [4,0] needs two moves, the
    // protected pods are kept at the front, so only the plain pod goes.
    let mut pods = vec![spread_pod("p0", "a1", 1).build()];
    for i in 1..4 {
        pods.push(
            spread_pod(&format!("p{i}"), "a1", 1)
                .local_storage()
                .build(),
        );
    }
    let snap = snapshot(vec![zone_node("a1", "a"), zone_node("b1", "b")], pods);
    assert_eq!(run(&snap, Value::Null), ["p0"]);

    // Protected pods still count: zone a has 3 protected pods, zone b 3 plain ones,
    // zone c none. The ideal average is 2, so one pod leaves b; a's would-be move is
    // protected. (Counting only evictable pods would see [0,3,0] and move two from b.)
    let mut pods = Vec::new();
    for i in 0..3 {
        pods.push(
            spread_pod(&format!("a{i}"), "a1", 1)
                .local_storage()
                .build(),
        );
        pods.push(spread_pod(&format!("b{i}"), "b1", 1).build());
    }
    let snap = snapshot(
        vec![
            zone_node("a1", "a"),
            zone_node("b1", "b"),
            zone_node("c1", "c"),
        ],
        pods,
    );
    assert_eq!(run(&snap, Value::Null), ["b2"]);
}

#[test]
fn eviction_order_within_a_domain() {
    // Node selectors and higher priorities stay; the lowest priority goes first.
    let nodes = vec![
        node("a1").label("zone", "a").label("os", "linux").build(),
        node("b1").label("zone", "b").label("os", "linux").build(),
    ];
    let pods = vec![
        spread_pod("high", "a1", 1).priority(1000).build(),
        spread_pod("low", "a1", 1).priority(1).build(),
        spread_pod("mid", "a1", 1).priority(500).build(),
        spread_pod("pinned", "a1", 1)
            .priority(0)
            .node_selector("os", "linux")
            .build(),
        spread_pod("noprio", "a1", 1).prefer_no_eviction().build(),
        spread_pod("daemon", "a1", 1)
            .owner("DaemonSet", "ds")
            .build(),
    ];
    let snap = snapshot(nodes, pods);
    // [6,0]: three move.
    assert_eq!(run(&snap, Value::Null), ["low", "mid", "high"]);
}

#[test]
fn affinity_counts_as_selector() {
    // upstream: "2 domains, sizes [4,0], maxSkew=1, only move 1 pod since pods with
    // nodeSelector and nodeAffinity aren't evicted"
    let term = NodeSelectorTerm {
        match_expressions: vec![Requirement::In("foo".into(), vec!["bar".into()])],
        match_fields: vec![],
    };
    let pods = vec![
        spread_pod("p0", "n1", 1)
            .node_selector("zone", "zoneA")
            .build(),
        spread_pod("p1", "n1", 1)
            .node_selector("zone", "zoneA")
            .build(),
        spread_pod("p2", "n1", 1)
            .affinity(Affinity {
                node_required: Some(vec![term]),
                ..Default::default()
            })
            .build(),
        spread_pod("p3", "n1", 1).build(),
    ];
    let nodes = vec![
        node("n1").label("zone", "zoneA").build(),
        node("n2").label("zone", "zoneB").build(),
    ];
    let snap = snapshot(nodes, pods);
    assert_eq!(run_node_fit(&snap, Value::Null), ["p3"]);
}

#[test]
fn limits_and_budgets_hold() {
    let snap = snapshot(
        vec![
            zone_node("a1", "a"),
            zone_node("a2", "a"),
            zone_node("b1", "b"),
        ],
        spread_pods(&["a1", "a2"], &[3, 3], 1),
    );
    // [6,0] → three move, from the back: a2's pods.
    assert_eq!(run(&snap, Value::Null), ["p005", "p004", "p003"]);
    let per_node = Limits {
        per_node: Some(1),
        ..Default::default()
    };
    let r = run_full(&snap, Value::Null, Value::Null, per_node, &[]);
    assert_eq!(r.names, ["p005"]);
    let total = Limits {
        total: Some(2),
        ..Default::default()
    };
    let r = run_full(&snap, Value::Null, Value::Null, total, &[]);
    assert_eq!(r.names, ["p005", "p004"]);

    let with_pdb = ClusterSnapshot::build(SnapshotParts {
        nodes: snap.nodes.clone(),
        pods: snap.pods.to_vec(),
        pdbs: vec![pdb("ns1", "budget", "foo", "bar", 1)],
        ..Default::default()
    });
    assert_eq!(run(&with_pdb, Value::Null), ["p005"]);
}

#[test]
fn pre_eviction_filter_applies() {
    // DefaultEvictor nodeFit: the pod must fit another node; b1 is full.
    let nodes = vec![
        zone_node("a1", "a"),
        node("b1").label("zone", "b").pods(0).build(),
    ];
    let snap = snapshot(nodes, spread_pods(&["a1"], &[4], 1));
    assert_eq!(
        run(&snap, json!({"topologyBalanceNodeFit": false})).len(),
        2
    );
    assert!(run_node_fit(&snap, json!({"topologyBalanceNodeFit": false})).is_empty());
}

#[test]
fn deterministic_under_shuffled_input() {
    let nodes = vec![
        zone_node("a1", "a"),
        zone_node("a2", "a"),
        zone_node("b1", "b"),
        zone_node("c1", "c"),
    ];
    let mut pods = spread_pods(&["a1", "a2", "b1"], &[5, 4, 2], 1);
    for i in 0..6 {
        pods.push(
            pod("ns2", &format!("q{i}"))
                .node(if i % 2 == 0 { "a1" } else { "b1" })
                .label("app", "q")
                .priority(i)
                .spread(1, "kubernetes.io/hostname", DNS, "app", "q")
                .build(),
        );
    }
    let base = run_full(
        &snapshot(nodes.clone(), pods.clone()),
        Value::Null,
        Value::Null,
        Limits::default(),
        &[],
    );
    assert!(!base.names.is_empty());
    for k in 1..pods.len() {
        let mut p = pods.clone();
        p.rotate_left(k);
        if k % 2 == 0 {
            p.reverse();
        }
        let mut n = nodes.clone();
        n.rotate_left(k % nodes.len());
        let r = run_full(
            &snapshot(n, p),
            Value::Null,
            Value::Null,
            Limits::default(),
            &[],
        );
        assert_eq!(r.names, base.names, "rotation {k}");
        assert_eq!(r.reasons, base.reasons, "rotation {k}");
    }
}

#[test]
fn runs_through_the_planner() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
maxNoOfPodsToEvictTotal: 5
profiles:
- name: spread
  pluginConfig:
  - name: RemovePodsViolatingTopologySpreadConstraint
    args:
      constraints: [DoNotSchedule, ScheduleAnyway]
      topologyBalanceNodeFit: true
  plugins:
    balance:
      enabled: [RemovePodsViolatingTopologySpreadConstraint]
"#,
    );
    let snap = snapshot(
        vec![zone_node("a1", "a"), zone_node("b1", "b")],
        spread_pods(&["a1"], &[4], 1),
    );
    let plan = plan::plan(&pipeline, &snap, T0).unwrap();
    let names: Vec<&str> = plan
        .evictions
        .iter()
        .map(|e| &*snap.pod(e.pod).name)
        .collect();
    assert_eq!(names, ["p003", "p002"]);
    assert!(plan
        .evictions
        .iter()
        .all(|e| e.plugin == NAME && e.profile == "spread"));
    assert_eq!(plan.requested_after.evicted[1].pods, 0);
}

#[test]
fn defaults() {
    let p = RemovePodsViolatingTopologySpreadConstraint::from_json(&Value::Null).unwrap();
    assert_eq!(
        p.args.constraints.as_deref(),
        Some(&["DoNotSchedule".to_string()][..])
    );
    assert_eq!(p.args.topology_balance_node_fit, Some(true));
    assert!(p.do_not_schedule && !p.schedule_anyway && p.topology_balance_node_fit);
    let p = RemovePodsViolatingTopologySpreadConstraint::from_json(
        &json!({"constraints": null, "topologyBalanceNodeFit": null, "namespaces": null, "labelSelector": null}),
    )
    .unwrap();
    assert!(p.do_not_schedule && p.topology_balance_node_fit);
    let p = RemovePodsViolatingTopologySpreadConstraint::from_json(
        &json!({"constraints": ["ScheduleAnyway"], "topologyBalanceNodeFit": false}),
    )
    .unwrap();
    assert!(!p.do_not_schedule && p.schedule_anyway && !p.topology_balance_node_fit);
}

#[test]
fn invalid_args_name_the_field() {
    for (args, path) in [
        (
            json!({"constraints": ["DoNotSchedule", "Sometimes"]}),
            "constraints[1]",
        ),
        (json!({"constraints": "DoNotSchedule"}), "constraints"),
        (
            json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}),
            "namespaces",
        ),
        (json!({"namespaces": {"only": ["a"]}}), "namespaces.only"),
        (
            json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}}),
            "labelSelector",
        ),
        (
            json!({"topologyBalanceNodeFit": "yes"}),
            "topologyBalanceNodeFit",
        ),
        (
            json!({"includeSoftConstraints": true}),
            "includeSoftConstraints",
        ),
        (json!({"nodeFit": true}), "nodeFit"),
    ] {
        let e = RemovePodsViolatingTopologySpreadConstraint::from_json(&args).unwrap_err();
        assert_eq!(e.path, path, "{args}: {e}");
    }
    let e = RemovePodsViolatingTopologySpreadConstraint::from_json(
        &json!({"includeSoftConstraints": true}),
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("constraints: [DoNotSchedule, ScheduleAnyway]"),
        "{e}"
    );
    let e = RemovePodsViolatingTopologySpreadConstraint::from_json(
        &json!({"constraints": ["DoNotSchedule", "Sometimes"]}),
    )
    .unwrap_err();
    assert!(e.message.contains("\"Sometimes\""), "{e}");
}
