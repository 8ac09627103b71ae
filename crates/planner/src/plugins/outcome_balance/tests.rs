use super::*;
use crate::framework::testing::{run_alone, run_on};
use crate::framework::{Limits, PlanningState};
use crate::plugins::default_evictor::DefaultEvictor;
use crate::plugins::node_utilization::low::LowNodeUtilization;
use crate::snapshot::builders::{node, pdb, pod, snapshot};
use crate::snapshot::{Pod, SnapshotParts};
use serde_json::json;

fn plugin(args: serde_json::Value) -> OutcomeBalance {
    OutcomeBalance::from_json(&args).expect("valid args")
}

fn cpu_args(low: f64, high: f64) -> serde_json::Value {
    json!({"thresholds": {"cpu": low}, "targetThresholds": {"cpu": high}})
}

fn node_fit() -> DefaultEvictor {
    DefaultEvictor::from_json(&json!({"nodeFit": true})).expect("valid evictor args")
}

/// The plugin with thresholds 20/50 on cpu under `nodeFit`, without limits: the plan and its
/// notes.
fn plan_20_50(snap: &ClusterSnapshot) -> crate::framework::PlanningOutput {
    plan_20_50_with(snap, &crate::framework::History::EMPTY, 0)
}

/// Nodes of `milli` cpu each, by name.
fn nodes_of(names: &[&str], milli: i64) -> Vec<crate::snapshot::Node> {
    names.iter().map(|n| node(n).cpu(milli).build()).collect()
}

/// The pods of workload `w` (a ReplicaSet of its own): `n` of `milli` on `node`.
fn pods(w: &str, node_name: &str, n: usize, milli: i64) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            pod("d", &format!("{w}-{node_name}-{i}"))
                .owner("ReplicaSet", w)
                .label("app", w)
                .node(node_name)
                .cpu(milli)
                .build()
        })
        .collect()
}

/// Nodes outside cpu thresholds `low`/`high` once `evictions` are carried out as planned.
fn outside_after(
    snap: &ClusterSnapshot,
    evictions: &[crate::framework::PlannedEviction],
    low: f64,
    high: f64,
) -> usize {
    let mut load: Vec<i64> = snap
        .node_ids()
        .map(|n| {
            snap.pods_on_node(n)
                .iter()
                .map(|&p| snap.pod(p).requests.cpu)
                .sum()
        })
        .collect();
    for e in evictions {
        let cpu = snap.pod(e.pod).requests.cpu;
        load[e.node.index()] -= cpu;
        load[e.destination.expect("every move has a destination").index()] += cpu;
    }
    (0..snap.nodes.len())
        .filter(|&n| {
            let p =
                100.0 * load[n] as f64 / snap.node(NodeId::from_index(n)).allocatable.cpu as f64;
            p > high || p <= low
        })
        .count()
}

/// Pods above their workload's fair share (its pods over the schedulable nodes, rounded up;
/// a workload is its `app` label) once `evictions` are carried out as planned.
fn duplicates_after(
    snap: &ClusterSnapshot,
    evictions: &[crate::framework::PlannedEviction],
) -> i64 {
    let mut on: BTreeMap<(String, NodeId), i64> = BTreeMap::new();
    let mut total: BTreeMap<String, i64> = BTreeMap::new();
    let moved: HashMap<PodId, NodeId> = evictions
        .iter()
        .map(|e| (e.pod, e.destination.expect("every move has a destination")))
        .collect();
    for n in snap.node_ids() {
        for &p in snap.pods_on_node(n) {
            let Some(w) = snap.pod(p).labels.get("app") else {
                continue;
            };
            let at = moved.get(&p).copied().unwrap_or(n);
            *on.entry((w.to_string(), at)).or_default() += 1;
            *total.entry(w.to_string()).or_default() += 1;
        }
    }
    let nodes = snap
        .node_ids()
        .filter(|&n| !snap.node(n).unschedulable)
        .count() as i64;
    on.iter()
        .map(|((w, _), c)| (c - (total[w] + nodes - 1) / nodes).max(0))
        .sum()
}

/// New nodes join a packed cluster: two nodes at 90% and 80% of 4 cpu (pods of 500m and
/// 1000m), two empty ones, thresholds 20/50. Every node can end inside the band; the search
/// gets there with fewer evictions than LowNodeUtilization, whose order takes the small pods.
#[test]
fn new_nodes_end_inside_the_band_with_fewer_evictions_than_low_node_utilization() {
    let mut all = pods("small", "a", 4, 500);
    all.extend(pods("big", "a", 1, 1600));
    all.extend(pods("small2", "b", 2, 500));
    all.extend(pods("big2", "b", 2, 1100));
    let snap = snapshot(nodes_of(&["a", "b", "c", "d"], 4000), all);
    // Against LowNodeUtilization, which knows nothing of duplicates: the thresholds alone.
    let ours = run_alone(
        &plugin(
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "duplicates": false}),
        ),
        &snap,
        &node_fit(),
        Limits::default(),
        0,
    );
    let lnu = LowNodeUtilization::from_json(&cpu_args(20.0, 50.0)).unwrap();
    let theirs = run_alone(&lnu, &snap, &node_fit(), Limits::default(), 0);
    assert_eq!(outside_after(&snap, &ours, 20.0, 50.0), 0, "{ours:#?}");
    assert!(
        ours.len() <= theirs.len(),
        "ours {} evictions, LowNodeUtilization {}",
        ours.len(),
        theirs.len()
    );
    assert!(ours.len() <= 3, "{ours:#?}");
    for e in &ours {
        assert!(
            e.reason.contains("moved toward the policy's outcome")
                && e.reason.contains("is over its target"),
            "{}",
            e.reason
        );
    }
}

/// The cycle after a move: two pods evicted from `a` still terminate there (a real kubelet
/// takes the grace period). Counted, they would put `a` over its target (52.5%) and its
/// workload above its share; the plan counts the cluster as it is once they are gone (`a` at
/// 37.5%, `b` at 25%) and evicts nothing more.
#[test]
fn pods_still_terminating_from_an_earlier_cycle_are_not_moved_for_again() {
    let cluster = |going: bool| {
        let mut all = pods("x", "a", 3, 500);
        all.extend(pods("x", "b", 2, 500));
        for i in 0..2 {
            let p = pod("d", &format!("x-going-{i}"))
                .owner("ReplicaSet", "x")
                .label("app", "x")
                .node("a")
                .cpu(300);
            all.push(if going { p.terminating() } else { p }.build());
        }
        snapshot(
            vec![node("a").cpu(4000).build(), node("b").cpu(4000).build()],
            all,
        )
    };
    let plan_of = |snap: &ClusterSnapshot| {
        run_alone(
            &plugin(cpu_args(20.0, 50.0)),
            snap,
            &node_fit(),
            Limits::default(),
            0,
        )
    };
    let plan = plan_of(&cluster(true));
    assert!(plan.is_empty(), "{plan:#?}");
    // The same cluster with the two pods running on `a` is one move from the band.
    let snap = cluster(false);
    let plan = plan_of(&snap);
    assert_eq!(plan.len(), 1, "{plan:#?}");
    assert_eq!(outside_after(&snap, &plan, 20.0, 50.0), 0, "{plan:#?}");
}

/// A cluster already inside its thresholds is left alone: no move lowers the distance.
/// Room for a few moves only: node a is 150m over its target (two 100m pods from inside),
/// node b 1,600m over (four 450m pods). Each of b's moves closes more points than a's, so
/// greedy on the distance alone would spend the room on b and bring no node inside; ranked
/// toward finishing a node, a goes first and ends inside.
#[test]
fn the_moves_that_finish_a_node_go_before_bigger_ones_that_finish_none() {
    let mut all = pods("near-big", "a", 1, 1950);
    // One pod per workload: a replacement is not drawn back by its workload's spread.
    all.extend(pods("near-0", "a", 1, 100));
    all.extend(pods("near-1", "a", 1, 100));
    for i in 0..8 {
        all.extend(pods(&format!("far-{i}"), "b", 1, 450));
    }
    all.extend(pods("rest", "c", 1, 1100));
    let snap = snapshot(
        vec![
            node("a").cpu(4000).build(),
            node("b").cpu(4000).build(),
            node("c").cpu(4000).build(),
        ],
        all,
    );
    let args =
        json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "duplicates": false});
    let plan = run_alone(&plugin(args), &snap, &node_fit(), Limits::default(), 0);
    let load = |n: &str| {
        let id = snap.node_id(n).unwrap();
        let mut l: i64 = snap
            .pods_on_node(id)
            .iter()
            .map(|&p| snap.pod(p).requests.cpu)
            .sum();
        for e in &plan {
            if e.node == id {
                l -= snap.pod(e.pod).requests.cpu;
            }
            if e.destination == Some(id) {
                l += snap.pod(e.pod).requests.cpu;
            }
        }
        l
    };
    assert!(load("a") <= 2000, "a is brought inside: {plan:#?}");
    assert!(load("c") <= 2000, "c stays within its target: {plan:#?}");
    assert_eq!(outside_after(&snap, &plan, 20.0, 50.0), 1, "{plan:#?}");
}

#[test]
fn a_cluster_inside_its_thresholds_is_left_alone() {
    let mut all = Vec::new();
    for i in 0..3 {
        all.extend(pods(&format!("x{i}"), "a", 1, 500));
        all.extend(pods(&format!("y{i}"), "b", 1, 500));
    }
    let snap = snapshot(
        vec![node("a").cpu(4000).build(), node("b").cpu(4000).build()],
        all,
    );
    let plan = plan_20_50(&snap).evictions;
    assert!(plan.is_empty(), "{plan:#?}");
}

/// Zone-spread drift: six pods of `web` with a DoNotSchedule zone spread of maxSkew 1, three
/// in zone a and three in zone b, and zone c empty (spread excess 4). Two moves bring every
/// zone to two pods; the thresholds are wide enough not to ask for more.
#[test]
fn zone_spread_drift_is_repaired_with_the_fewest_moves() {
    let spread = |p: crate::snapshot::builders::PodBuilder| {
        p.spread(1, "zone", WhenUnsatisfiable::DoNotSchedule, "app", "web")
    };
    let mut all = Vec::new();
    for (n, count) in [("a1", 2), ("a2", 1), ("b1", 2), ("b2", 1)] {
        for i in 0..count {
            all.push(
                spread(
                    pod("d", &format!("web-{n}-{i}"))
                        .owner("ReplicaSet", "web")
                        .label("app", "web")
                        .node(n)
                        .cpu(500),
                )
                .build(),
            );
        }
    }
    let zoned = |name: &str, zone: &str| node(name).cpu(8000).label("zone", zone).build();
    let snap = snapshot(
        vec![
            zoned("a1", "a"),
            zoned("a2", "a"),
            zoned("b1", "b"),
            zoned("b2", "b"),
            zoned("c1", "c"),
            zoned("c2", "c"),
        ],
        all,
    );
    let args =
        json!({"thresholds": {"cpu": 0}, "targetThresholds": {"cpu": 90}, "duplicates": false});
    let plan = run_alone(&plugin(args), &snap, &node_fit(), Limits::default(), 0);
    assert_eq!(plan.len(), 2, "{plan:#?}");
    let zone = |n: NodeId| snap.node(n).labels.get("zone").unwrap().to_string();
    let mut to: Vec<String> = plan.iter().map(|e| zone(e.destination.unwrap())).collect();
    let mut from: Vec<String> = plan.iter().map(|e| zone(e.node)).collect();
    to.sort();
    from.sort();
    assert_eq!(to, ["c", "c"]);
    assert_eq!(from, ["a", "b"]);
    assert!(
        plan.iter().all(|e| e
            .reason
            .contains("spread beyond its maxSkew 1 over zone (a: ")),
        "{plan:#?}"
    );
}

/// Duplicates: four replicas of one workload stacked on one of four nodes go one to each of
/// the others (three moves); the workload's fair share is one per node.
#[test]
fn stacked_replicas_spread_one_per_node() {
    let mut all = pods("web", "n1", 4, 100);
    all.extend(pods("base", "n2", 1, 100));
    let snap = snapshot(
        (1..=4)
            .map(|i| node(&format!("n{i}")).cpu(4000).build())
            .collect(),
        all,
    );
    // Thresholds that every node satisfies: only the duplicates count.
    let plan = run_alone(
        &plugin(cpu_args(0.0, 100.0)),
        &snap,
        &node_fit(),
        Limits::default(),
        0,
    );
    assert_eq!(plan.len(), 3, "{plan:#?}");
    let mut dest: Vec<&str> = plan
        .iter()
        .map(|e| &*snap.node(e.destination.unwrap()).name)
        .collect();
    dest.sort();
    assert_eq!(dest, ["n2", "n3", "n4"]);
    assert!(plan
        .iter()
        .all(|e| e.reason.contains("above its share of 1 per node")));
}

/// Availability before balance: two replicas of `web` share n1 (4 cpu) where n2 (8 cpu)
/// holds none; moving one to n2 leaves n1 at 20%, on its low threshold (outside), where both
/// nodes are inside now. The duplicate is repaired all the same (it weighs more than a node
/// outside), its replacement predicted on n2.
#[test]
fn a_duplicate_is_repaired_even_where_it_leaves_a_node_outside_the_thresholds() {
    let mut all = pods("web", "n1", 2, 500);
    all.extend(pods("base", "n1", 1, 300));
    all.extend(pods("other", "n2", 1, 1700));
    let snap = snapshot(
        vec![node("n1").cpu(4000).build(), node("n2").cpu(8000).build()],
        all,
    );
    let before = outside_after(&snap, &[], 20.0, 50.0);
    assert_eq!(before, 0, "both nodes start inside the band");
    let plan = plan_20_50(&snap).evictions;
    assert_eq!(plan.len(), 1, "{plan:#?}");
    let e = &plan[0];
    assert!(snap.pod(e.pod).name.starts_with("web-n1-"), "{plan:#?}");
    assert_eq!(&*snap.node(e.destination.unwrap()).name, "n2", "{plan:#?}");
    assert!(
        e.reason.contains("above its share of 1 per node"),
        "{}",
        e.reason
    );
    assert_eq!(
        outside_after(&snap, &plan, 20.0, 50.0),
        1,
        "n1 ends on its low threshold"
    );
}

/// A duplicate whose replacement would take an inside node over its target is repaired
/// with a second move that brings that node back inside. `web` has both its pods on n1 (a
/// share of 1 over four nodes); kube-scheduler would put the replacement on n2, the
/// emptiest (40% + 12.5% = 52.5%, target 50%; n3 is at 47.5%, n4 at 45%). Moving `s`
/// (200m) off n2 first would not do: its replacement would come back to n2, then the
/// emptiest. In the other order `s` goes to n4 (n1 still holds the evicted `web` pod while
/// it terminates): n1 35%, n2 47.5%, n3 47.5%, n4 50%, every node inside and no duplicate,
/// with two evictions.
#[test]
fn a_duplicate_is_repaired_with_a_second_move_where_its_replacement_would_take_a_node_over() {
    let mut all = pods("web", "n1", 2, 500);
    all.extend(pods("base", "n1", 1, 900));
    all.extend(pods("x", "n2", 1, 1400));
    all.extend(pods("s", "n2", 1, 200));
    all.extend(pods("z", "n3", 1, 1900));
    all.extend(pods("y", "n4", 1, 1800));
    let snap = snapshot(nodes_of(&["n1", "n2", "n3", "n4"], 4000), all);
    assert_eq!(outside_after(&snap, &[], 20.0, 50.0), 0);
    assert_eq!(duplicates_after(&snap, &[]), 1);
    let plan = plan_20_50(&snap).evictions;
    let moves: Vec<(String, String)> = plan
        .iter()
        .map(|e| {
            (
                snap.pod(e.pod).name.split('-').next().unwrap().to_string(),
                snap.node(e.destination.unwrap()).name.to_string(),
            )
        })
        .collect();
    assert_eq!(
        moves,
        [
            ("web".to_string(), "n2".to_string()),
            ("s".to_string(), "n4".to_string())
        ],
        "{plan:#?}"
    );
    assert!(
        plan[0]
            .reason
            .contains("n2 goes over its target with it until d/s-n2-0 leaves it"),
        "{}",
        plan[0].reason
    );
    assert!(
        plan[1].reason.contains("makes room on n2 for d/web-n1-"),
        "{}",
        plan[1].reason
    );
    assert_eq!(duplicates_after(&snap, &plan), 0);
    assert_eq!(outside_after(&snap, &plan, 20.0, 50.0), 0);
}

/// Where no second move brings the node back inside (every pod on n2 would take whichever
/// node it went to over), the repair is not planned: n2 is held to its target.
#[test]
fn a_repair_without_a_second_move_never_takes_an_inside_node_over() {
    let mut all = pods("web", "n1", 2, 500);
    all.extend(pods("base", "n1", 1, 900));
    all.extend(pods("x", "n2", 1, 1600));
    all.extend(pods("z", "n3", 1, 1900));
    all.extend(pods("y", "n4", 1, 1800));
    let snap = snapshot(nodes_of(&["n1", "n2", "n3", "n4"], 4000), all);
    let plan = plan_20_50(&snap).evictions;
    assert!(plan.is_empty(), "{plan:#?}");
    assert_eq!(duplicates_after(&snap, &plan), 1);
}

/// Upstream #1695: a pod above the target on its own (2,200m of a 4-cpu node, 50% target)
/// puts whichever node holds it over, and the joined nodes cannot reach their low threshold
/// with every workload at its fair share there (a node could take 2 `sx`, 1 `sy`, 1 `sz`:
/// 450m, 11%). No node can come inside, so the only moves worth an eviction are the
/// duplicates (`sx`, 4 pods on each of a and b, a share of 2): moving `sy` and `sz` would
/// close percentage points toward thresholds no node can reach, and moving a big pod would
/// only carry its node's overload to another. The plan repairs the duplicates and says why
/// it stops there.
#[test]
fn nodes_that_cannot_come_inside_are_not_moved_for_their_percentage_points() {
    let mut all = pods("big", "a", 1, 2200);
    all.extend(pods("big", "b", 1, 2200));
    for n in ["a", "b"] {
        all.extend(pods("sx", n, 4, 100));
        all.extend(pods("sy", n, 1, 100));
        all.extend(pods("sz", n, 1, 150));
    }
    let snap = snapshot(nodes_of(&["a", "b", "c", "d"], 4000), all);
    assert_eq!(outside_after(&snap, &[], 20.0, 50.0), 4);
    assert_eq!(duplicates_after(&snap, &[]), 4);
    let out = plan_20_50(&snap);
    let plan = &out.evictions;
    assert_eq!(duplicates_after(&snap, plan), 0, "{plan:#?}");
    assert_eq!(plan.len(), 4, "only the duplicates move: {plan:#?}");
    for e in plan {
        assert!(snap.pod(e.pod).name.starts_with("sx-"), "{plan:#?}");
        assert!(
            e.reason.contains("above its share of 2 per node"),
            "{}",
            e.reason
        );
    }
    assert_eq!(outside_after(&snap, plan, 20.0, 50.0), 4);
    assert!(
        out.notes.iter().any(|n| n.message.contains(
            "4 of the 4 nodes outside the thresholds cannot come inside, and no move is planned for their percentage points alone: 2 hold a pod above the target on its own"
        )),
        "{:#?}",
        out.notes
    );
}

/// A pod above the target on its own (2,200m of 4 cpu, 50% target) puts whichever node holds
/// it over. Moved from a (85%, with three pods of 400m of their own workloads) onto the empty
/// b, it takes b from under to over and a comes inside (30%): one node outside instead of two,
/// with one eviction, where filling b with a's small pods takes three. The evictor's
/// destination check is lifted for this move alone (b is outside either way); the reason
/// says why.
#[test]
fn a_pod_above_the_target_on_its_own_moves_onto_an_underutilized_node_where_that_brings_one_inside()
{
    let mut all = pods("big", "a", 1, 2200);
    for w in ["s1", "s2", "s3"] {
        all.extend(pods(w, "a", 1, 400));
    }
    let snap = snapshot(
        vec![node("a").cpu(4000).build(), node("b").cpu(4000).build()],
        all,
    );
    assert_eq!(outside_after(&snap, &[], 20.0, 50.0), 2);
    let plan = plan_20_50(&snap).evictions;
    assert_eq!(plan.len(), 1, "{plan:#?}");
    let e = &plan[0];
    assert!(snap.pod(e.pod).name.starts_with("big-a-"), "{plan:#?}");
    assert_eq!(&*snap.node(e.destination.unwrap()).name, "b", "{plan:#?}");
    assert!(
        e.reason.contains(
            "the pod requests more than any node's target on its own, so b holds it over its target instead of a"
        ),
        "{}",
        e.reason
    );
    assert_eq!(outside_after(&snap, &plan, 20.0, 50.0), 1);
}

/// A move that repairs nothing is still held to its destination's target: `solo` (one
/// replica, no duplicate) would take n2 over, so n1 stays over rather than trade places.
#[test]
fn a_move_that_repairs_nothing_never_takes_a_node_over_its_target() {
    let mut all = pods("solo", "n1", 1, 1200);
    all.extend(pods("base", "n1", 1, 1000));
    all.extend(pods("other", "n2", 1, 1700));
    let snap = snapshot(
        vec![node("n1").cpu(4000).build(), node("n2").cpu(4000).build()],
        all,
    );
    assert_eq!(outside_after(&snap, &[], 20.0, 50.0), 1, "n1 starts over");
    let plan = plan_20_50(&snap).evictions;
    assert!(plan.is_empty(), "{plan:#?}");
}

/// The state of the two tests below: three 1000m `web` pods (a budget of one disruption)
/// and a 600m `api` pod on `a` (90%), two empty nodes, 20/50.
fn budget_state() -> ClusterSnapshot {
    let mut all = pods("web", "a", 3, 1000);
    all.extend(pods("api", "a", 1, 600));
    ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("a").cpu(4000).build(),
            node("b").cpu(4000).build(),
            node("c").cpu(4000).build(),
        ],
        pods: all,
        pdbs: vec![pdb("d", "web", "app", "web", 1)],
        ..Default::default()
    })
}

/// `planAhead: false`, 20/50, on [`budget_state`].
fn plan_one_cycle(snap: &ClusterSnapshot) -> crate::framework::PlanningOutput {
    let mut args = cpu_args(20.0, 50.0);
    args["planAhead"] = json!(false);
    let mut state = PlanningState::new(snap, Limits::default());
    let nodes = snap.ready_nodes(&Default::default());
    run_on(&plugin(args), &mut state, &node_fit(), &nodes, 0);
    state.into_output()
}

fn named(snap: &ClusterSnapshot, out: &crate::framework::PlanningOutput, prefix: &str) -> usize {
    out.evictions
        .iter()
        .filter(|e| snap.pod(e.pod).name.starts_with(prefix))
        .count()
}

/// A PodDisruptionBudget that allows one disruption lets one move through; the others are
/// candidates not chosen, and the search goes on with other workloads (`planAhead` off:
/// this cycle's plan alone). It leaves `c` under with `api` alone on it.
#[test]
fn a_disruption_budget_holds_moves_back_and_the_search_goes_on() {
    let snap = budget_state();
    let out = plan_one_cycle(&snap);
    assert_eq!(named(&snap, &out, "web"), 1, "{:#?}", out.evictions);
    assert_eq!(named(&snap, &out, "api"), 1, "{:#?}", out.evictions);
    assert!(
        out.notes.iter().any(
            |n| matches!(n.kind, crate::framework::NoteKind::NotChosen(_))
                && n.message.contains("blocked by PodDisruptionBudget d/web")
        ),
        "{:#?}",
        out.notes
    );
    assert!(!out.notes.iter().any(|n| n.message.contains("next cycles")));
}

/// Planned ahead (the default), the same state: two `web` moves bring every node inside
/// (`a` at 40%, `b` and `c` at 25%), where this cycle's plan alone leaves `c` under (3
/// outside at the start: `a` over, `b` and `c` empty). The one
/// the budget allows now is planned; the other waits for a later cycle, said in the report;
/// `api`, in no move of that plan, stays.
#[test]
fn planned_ahead_a_budget_s_held_back_move_waits_for_a_later_cycle() {
    let snap = budget_state();
    let out = plan_20_50(&snap);
    assert_eq!(named(&snap, &out, "web"), 1, "{:#?}", out.evictions);
    assert_eq!(named(&snap, &out, "api"), 0, "{:#?}", out.evictions);
    let waits: Vec<_> = out
        .notes
        .iter()
        .filter(|n| {
            matches!(n.kind, crate::framework::NoteKind::NotChosen(_))
                && n.message.contains("waits for a later cycle: PodDisruptionBudget d/web allows no more disruptions now")
        })
        .collect();
    assert_eq!(waits.len(), 1, "{:#?}", out.notes);
    assert!(
        out.notes.iter().any(|n| n.message.contains(
            "planned over the next cycles as if each budget came back every cycle, 2 moves would leave nodes outside the thresholds 3 -> 0"
        )),
        "{:#?}",
        out.notes
    );
}

/// The bound on simulated placements stops the search, says so, and keeps what it planned.
#[test]
fn the_evaluation_bound_stops_the_search_and_says_so() {
    let mut all = pods("web", "a", 8, 500);
    all.extend(pods("api", "b", 8, 500));
    let snap = snapshot(nodes_of(&["a", "b", "c", "d"], 4000), all);
    let mut args = cpu_args(20.0, 50.0);
    args["maxEvaluations"] = json!(2);
    let mut state = PlanningState::new(&snap, Limits::default());
    let nodes = snap.ready_nodes(&Default::default());
    run_on(&plugin(args), &mut state, &node_fit(), &nodes, 0);
    let out = state.into_output();
    assert!(
        !out.evictions.is_empty() && out.evictions.len() <= 2,
        "{:#?}",
        out.evictions
    );
    assert!(
        out.notes.iter().any(|n| n
            .message
            .contains("stopped after 2 simulated placements (maxEvaluations)")),
        "{:#?}",
        out.notes
    );
}

/// The limits hold: with a node limit of one, one pod leaves each overutilized node.
#[test]
fn the_node_limit_holds() {
    let mut all = pods("web", "a", 8, 500);
    all.extend(pods("api", "b", 8, 500));
    let snap = snapshot(
        (1..=4)
            .map(|i| node(["a", "b", "c", "d"][i - 1]).cpu(4000).build())
            .collect(),
        all,
    );
    let limits = Limits {
        per_node: Some(1),
        ..Default::default()
    };
    let plan = run_alone(&plugin(cpu_args(20.0, 50.0)), &snap, &node_fit(), limits, 0);
    let mut from: Vec<&str> = plan.iter().map(|e| &*snap.node(e.node).name).collect();
    from.sort();
    assert_eq!(from, ["a", "b"], "{plan:#?}");
}

/// Seeded clusters: the plan never names a pod twice, never plans a move whose replacement
/// is predicted back on its node, and never ends farther from the policy's outcome than it
/// started: pods above their share and nodes outside the thresholds, weighed as the
/// distance weighs them (1,500 and 1,000), never more after than before.
#[test]
fn on_seeded_clusters_the_plan_never_ends_worse_than_it_started() {
    for seed in 1..=40u64 {
        let mut rng = descheduler_ingest::snapshot::synthetic::Rng::new(seed);
        let n = 3 + rng.below(6);
        let nodes: Vec<_> = (0..n)
            .map(|i| {
                node(&format!("n{i}"))
                    .cpu(if rng.chance(0.5) { 4000 } else { 8000 })
                    .build()
            })
            .collect();
        let mut all = Vec::new();
        for w in 0..(2 + rng.below(5)) {
            let milli = 100 * (1 + rng.below(12)) as i64;
            let home = rng.below(n.min(3));
            for i in 0..(1 + rng.below(6)) {
                let on = if rng.chance(0.7) { home } else { rng.below(n) };
                all.push(
                    pod("d", &format!("w{w}-{i}"))
                        .owner("ReplicaSet", &format!("w{w}"))
                        .label("app", &format!("w{w}"))
                        .node(&format!("n{on}"))
                        .cpu(milli)
                        .build(),
                );
            }
        }
        let snap = snapshot(nodes, all);
        let (low, high) = (
            5.0 * (2 + rng.below(4)) as f64,
            5.0 * (9 + rng.below(4)) as f64,
        );
        let plan = run_alone(
            &plugin(cpu_args(low, high)),
            &snap,
            &node_fit(),
            Limits::default(),
            0,
        );
        let mut seen = std::collections::BTreeSet::new();
        let mut left = std::collections::BTreeSet::new();
        let mut arrived = std::collections::BTreeSet::new();
        for e in &plan {
            assert!(seen.insert(e.pod), "seed {seed}: a pod planned twice");
            assert_ne!(e.destination, Some(e.node), "seed {seed}: a move back home");
            let w = snap.pod(e.pod).labels.get("app").unwrap().to_string();
            left.insert((w.clone(), e.node));
            for d in e.destination.iter().chain(&e.alternatives) {
                arrived.insert((w.clone(), *d));
            }
        }
        // A workload never both loses a pod from a node and gains one there in one plan:
        // two evictions where one (or none) would leave the same counts, and a replacement
        // that looks restarted onto its source.
        let both: Vec<_> = left.intersection(&arrived).collect();
        assert!(both.is_empty(), "seed {seed}: {both:?} in {plan:#?}");
        let weighed = |evictions: &[crate::framework::PlannedEviction]| {
            3 * duplicates_after(&snap, evictions)
                + 2 * outside_after(&snap, evictions, low, high) as i64
        };
        assert!(weighed(&plan) <= weighed(&[]), "seed {seed}: {plan:#?}");
    }
}

#[test]
fn bad_args_are_clear_errors() {
    let err = |v: serde_json::Value| OutcomeBalance::from_json(&v).unwrap_err().to_string();
    assert!(err(json!({})).contains("thresholds"), "{}", err(json!({})));
    let e = err(json!({"thresholds": {"cpu": 20}, "targetThresholds": {"memory": 50}}));
    assert!(e.contains("different resources"), "{e}");
    let e = err(json!({"thresholds": {"cpu": 60}, "targetThresholds": {"cpu": 50}}));
    assert!(
        e.contains("thresholds.cpu") && e.contains("must not exceed"),
        "{e}"
    );
    let e = err(json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 150}}));
    assert!(e.contains("[0, 100]"), "{e}");
    let e = err(
        json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "maxEvaluations": 0}),
    );
    assert!(e.contains("maxEvaluations"), "{e}");
    for rounds in [0, 11] {
        let e = err(
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "rounds": rounds}),
        );
        assert!(e.contains("rounds") && e.contains("1 to 10"), "{e}");
    }
    let e = err(
        json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "randomizedRounds": 101}),
    );
    assert!(
        e.contains("randomizedRounds") && e.contains("0 to 100"),
        "{e}"
    );
    let e = err(
        json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "planAhead": "yes"}),
    );
    assert!(e.contains("planAhead"), "{e}");
    let e =
        err(json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}, "spread": true}));
    assert!(e.contains("spread"), "{e}");
}

/// The plugin with thresholds 20/50 on cpu under `nodeFit`, planning at `now` with what
/// earlier cycles of a run left (`history`).
fn plan_20_50_with(
    snap: &ClusterSnapshot,
    history: &crate::framework::History,
    now: i64,
) -> crate::framework::PlanningOutput {
    let mut state = PlanningState::new(snap, Limits::default()).with_history(history);
    let nodes = snap.ready_nodes(&Default::default());
    run_on(
        &plugin(cpu_args(20.0, 50.0)),
        &mut state,
        &node_fit(),
        &nodes,
        now,
    );
    state.into_output()
}

/// A history with the eviction cooldown of 10 minutes in which workload `d/ReplicaSet/<w>`
/// lost a pod from `source` at `at`, its replacement (a uid) seen placed.
fn moved(w: &str, source: &str, replacement: Option<&str>, at: i64) -> crate::framework::History {
    use crate::framework::{History, Recent};
    let recent = Recent {
        sources: vec![(source.to_string(), at)],
        replacements: replacement
            .map(|uid| (uid.to_string(), at))
            .into_iter()
            .collect(),
    };
    History {
        recent: BTreeMap::from([(format!("d/ReplicaSet/{w}"), recent)]),
        ..History::with_cooldown(600)
    }
}

/// n1 at 85% of 4 cpu: four pods of 600m (each its own workload) and `a-new`, 1000m, the
/// replacement of a pod of workload `a` an earlier cycle moved off n3; n2 and n3 empty.
/// Without the run's memory the cheapest way inside moves `a-new` again; with it, `a-new`
/// stays, its refusal is on record with the time left, and n1 still comes inside.
#[test]
fn a_replacement_placed_within_the_cooldown_is_not_moved_again() {
    let mut pods_ = Vec::new();
    for i in 0..4 {
        pods_.extend(pods(&format!("b{i}"), "n1", 1, 600));
    }
    pods_.push(
        pod("d", "a-new")
            .owner("ReplicaSet", "a")
            .label("app", "a")
            .node("n1")
            .cpu(1000)
            .build(),
    );
    let snap = snapshot(nodes_of(&["n1", "n2", "n3"], 4000), pods_);
    let a_new = snap.pods.iter().position(|p| &*p.name == "a-new").unwrap();
    let uid = snap.pods[a_new].uid.to_string();
    let names = |out: &crate::framework::PlanningOutput| -> Vec<String> {
        out.evictions
            .iter()
            .map(|e| snap.pod(e.pod).name.to_string())
            .collect()
    };
    let now = 1_000_000;
    let without = plan_20_50_with(&snap, &crate::framework::History::with_cooldown(600), now);
    assert!(
        names(&without).contains(&"a-new".to_string()),
        "without the memory the plan moves a-new: {:?}",
        names(&without)
    );
    let history = moved("a", "n3", Some(&uid), now - 120);
    let with = plan_20_50_with(&snap, &history, now);
    assert!(
        !names(&with).contains(&"a-new".to_string()),
        "{:?}",
        names(&with)
    );
    let n1 = snap.node_id("n1").unwrap();
    let left_on_n1: i64 = snap
        .pods_on_node(n1)
        .iter()
        .filter(|&&p| with.evictions.iter().all(|e| e.pod != p))
        .map(|&p| snap.pod(p).requests.cpu)
        .sum();
    assert!(left_on_n1 <= 2000, "n1 comes inside: {left_on_n1}m left");
    let held: Vec<&str> = with
        .notes
        .iter()
        .filter(|n| n.kind == crate::framework::NoteKind::NotChosen(PodId::from_index(a_new)))
        .map(|n| n.message.as_str())
        .collect();
    assert!(
        held.iter()
            .any(|m| m.contains("not moved again within the 10m eviction cooldown (8m left)")),
        "{held:?}"
    );
}

/// n1 at 85% of 4 cpu: four pods of 600m (each its own workload) and `c-x`, 1000m, of
/// workload `c`; n2 empty, n3 at 1,500m. Without the run's memory, `c-x` goes to n2, the
/// emptiest; with an earlier cycle having moved a pod of `c` off n2, no replacement of `c`
/// may land there (it would look restarted where its workload was just moved off).
#[test]
fn no_replacement_lands_where_its_workload_was_moved_off_within_the_cooldown() {
    let mut pods_ = Vec::new();
    for i in 0..4 {
        pods_.extend(pods(&format!("b{i}"), "n1", 1, 600));
    }
    pods_.extend(pods("c", "n1", 1, 1000));
    pods_.extend(pods("e", "n3", 1, 1500));
    let snap = snapshot(nodes_of(&["n1", "n2", "n3"], 4000), pods_);
    let n2 = snap.node_id("n2").unwrap();
    let is_c = |p: PodId| snap.pod(p).labels.get("app").is_some_and(|a| a == "c");
    let now = 1_000_000;
    let without = plan_20_50_with(&snap, &crate::framework::History::with_cooldown(600), now);
    assert!(
        without
            .evictions
            .iter()
            .any(|e| is_c(e.pod) && e.destination == Some(n2)),
        "without the memory a pod of c goes to n2"
    );
    let with = plan_20_50_with(&snap, &moved("c", "n2", None, now - 60), now);
    for e in with.evictions.iter().filter(|e| is_c(e.pod)) {
        assert!(
            e.destination != Some(n2) && !e.alternatives.contains(&n2),
            "a replacement of c may land on n2: {e:?}"
        );
    }
    assert!(!with.evictions.is_empty(), "n1 is still relieved");
    // Once the cooldown is over, n2 is open to it again.
    let later = plan_20_50_with(&snap, &moved("c", "n2", None, now - 600), now);
    assert_eq!(later.evictions, without.evictions);
}

/// n1 at 45% of 4 cpu (three pods of 600m, each its own workload) and n2 empty, thresholds
/// 20/50: moving one pod to n2 closes 15 points of n2's underutilization, but n2 stays under
/// and a second move would put n1 under. Such a move brings no node inside: it is taken
/// back, and a note says so. n3 at 75% (five such pods) beside them needs two moves to come
/// under its target: the first closes points only (n3 still over, n2 still under), the
/// second brings both inside, and both stay.
#[test]
fn moves_that_only_close_points_are_taken_back_unless_a_node_comes_inside_after_them() {
    let mut pods_ = Vec::new();
    for i in 0..3 {
        pods_.extend(pods(&format!("a{i}"), "n1", 1, 600));
    }
    let alone = snapshot(nodes_of(&["n1", "n2"], 4000), pods_.clone());
    let out = plan_20_50(&alone);
    assert!(out.evictions.is_empty(), "{:?}", out.evictions);
    assert!(
        out.notes.iter().any(|n| n.message
            == "1 moves that only brought nodes closer to the thresholds, with no node brought inside after them, were taken back"),
        "{:?}",
        out.notes.iter().map(|n| &n.message).collect::<Vec<_>>()
    );
    for i in 0..5 {
        pods_.extend(pods(&format!("b{i}"), "n3", 1, 600));
    }
    let snap = snapshot(nodes_of(&["n1", "n2", "n3"], 4000), pods_);
    let out = plan_20_50(&snap);
    let n3 = snap.node_id("n3").unwrap();
    assert_eq!(out.evictions.len(), 2, "{:?}", out.evictions);
    assert!(out.evictions.iter().all(|e| e.node == n3));
    assert_eq!(
        outside_after(&snap, &out.evictions, 20.0, 50.0),
        0,
        "n3 and n2 come inside"
    );
}
