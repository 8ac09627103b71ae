//! The outcome benchmark's bounded version (benches/outcome.rs, issue 29): the integer
//! program's lower bound on hand-made placements whose optimum is known, and one small live
//! "new nodes" state run by our binary in continuous mode for three 5-second cycles.

mod support;

use descheduler::snapshot::builders;
use std::time::Duration;
use support::outcome::{
    figures, run, Binary, Bound, Cap, IlpSolver, Model, ModelNode, ModelWorkload, NodeInfo,
    PodInfo, RunConfig, RunOutcome, Scenario, Thresholds, CPU,
};

const GI: f64 = 1024.0 * 1024.0 * 1024.0;

fn node(zone: &str, cpu: f64) -> ModelNode {
    ModelNode {
        zone: zone.to_string(),
        alloc: [cpu, 4.0 * cpu * GI],
        max_pods: 110.0,
    }
}

/// A workload of pods of `cpu` cores and `memory` GiB, `start[n]` of them on node n.
fn workload(name: &str, cpu: f64, memory: f64, start: &[i64]) -> ModelWorkload {
    ModelWorkload {
        name: name.to_string(),
        requests: [cpu, memory * GI],
        feasible: vec![true; start.len()],
        start: start.to_vec(),
        zone_skew: None,
    }
}

/// The fewest moves and nodes outside, proven by CBC and by microlp alike.
fn solve(model: &Model) -> (f64, f64) {
    let answers: Vec<(f64, f64)> = [IlpSolver::cbc(), IlpSolver::Microlp]
        .iter()
        .map(|solver| {
            let b = model.solve_using(solver, 30.0);
            assert!(b.optimal, "{}: not proven optimal: {b:?}", solver.name());
            (b.moves.round(), b.outside.round())
        })
        .collect();
    assert_eq!(answers[0], answers[1], "CBC and microlp disagree");
    answers[0]
}

/// A `cbc` that runs `script` (a shell script's body), in a directory kept while it lives.
fn fake_cbc(script: &str) -> (tempfile::TempDir, IlpSolver) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cbc = dir.path().join("cbc");
    std::fs::write(&cbc, format!("#!/bin/sh\n{script}")).expect("write");
    std::fs::set_permissions(&cbc, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    (dir, IlpSolver::Cbc(cbc))
}

/// 9 pods of 1 cpu on a 10-cpu node, an empty 10-cpu node, 20/50 on cpu: 4 moves, none
/// outside.
fn nine_pods_over_one_node() -> Model {
    Model {
        nodes: vec![node("a", 10.0), node("a", 10.0)],
        workloads: vec![workload("w", 1.0, 0.0, &[9, 0])],
        thresholds: Thresholds::cpu(20.0, 50.0),
        duplicates: false,
    }
}

#[test]
fn a_solver_that_runs_past_its_deadline_is_killed_and_nothing_is_claimed() {
    // A `cbc` that never answers: the solve must come back soon after its limit (1 s here,
    // plus the grace), with no bound claimed.
    let (_dir, cbc) = fake_cbc("exec sleep 120\n");
    let started = std::time::Instant::now();
    let b = nine_pods_over_one_node().solve_using(&cbc, 1.0);
    let took = started.elapsed();
    assert!(
        !b.optimal && !b.moves.is_finite(),
        "a bound was claimed: {b:?}"
    );
    assert!(b.note.contains("was killed"), "{}", b.note);
    // Two solves (the integer program, then its relaxation), each killed at 1 s + 5 s.
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_fractional_answer_said_optimal_is_refused() {
    // A `cbc` that answers "Optimal" with half pods (as CBC 2.10 did through its library
    // given a start): no bound is claimed from it.
    let (_dir, cbc) = fake_cbc(
        "while [ $# -gt 0 ]; do [ \"$1\" = solution ] && out=\"$2\"; shift; done\n\
         printf 'Optimal - objective value 4.5\\n 0 yaqa 4.5 0\\n 1 yaqb 4.5 0\\n 2 daqa 4.5 0\\n' > \"$out\"\n",
    );
    let b = nine_pods_over_one_node().solve_using(&cbc, 5.0);
    assert!(!b.optimal, "a fractional answer was taken as proven: {b:?}");
    assert!(b.note.contains("fractional values: refused"), "{}", b.note);
}

#[test]
fn within_another_run_s_evictions_and_duplicates_the_program_finds_the_fewest_nodes_outside() {
    // 4 pods of 2 cpu on a 10-cpu node (80%), an empty one; 20/50 on cpu; at most 2 pods of
    // the workload per node (4 over 2 nodes). Unbounded: 2 moves, 40% and 40%, none outside.
    let model = Model {
        nodes: vec![node("a", 10.0), node("a", 10.0)],
        workloads: vec![workload("w", 2.0, 0.0, &[4, 0])],
        thresholds: Thresholds::cpu(20.0, 50.0),
        duplicates: true,
    };
    assert_eq!(solve(&model), (2.0, 0.0));
    let within = |moves: f64, duplicates_excess: f64| -> Vec<(f64, f64, bool)> {
        let cap = Cap {
            moves,
            duplicates_excess,
            spread: true,
        };
        [IlpSolver::cbc(), IlpSolver::Microlp]
            .iter()
            .map(|solver| {
                let b = model.solve_within(solver, cap, 30.0);
                (b.moves.round(), b.outside.round(), b.optimal)
            })
            .collect()
    };
    // One move and one pod above the share allowed: 60% (over) and 20% (at the low
    // threshold: under), both outside.
    assert_eq!(within(1.0, 1.0), vec![(1.0, 2.0, true); 2]);
    // No cap on moves, none above the share: the unbounded answer.
    assert_eq!(within(f64::INFINITY, 0.0), vec![(2.0, 0.0, true); 2]);
    // One move cannot leave no pod above the share: no placement, nothing claimed.
    for (moves, outside, optimal) in within(1.0, 0.0) {
        assert!(moves.is_nan() && outside.is_nan() && !optimal);
    }
}

#[test]
fn the_targets_conflict_only_where_the_capped_bound_is_shown_above_the_best_plus_one() {
    let bound = |outside: f64, optimal: bool, relaxed: bool, incumbent: Option<f64>| Bound {
        moves: 10.0,
        outside,
        optimal,
        relaxed,
        seconds: 0.0,
        note: String::new(),
        solver: "CBC",
        incumbent_outside: incumbent,
    };
    let proven = |outside| bound(outside, true, false, None);
    // The best possible proven at 0 outside.
    let best = proven(0.0);
    assert_eq!(best.conflicts_with(&proven(5.0)), Some(true));
    assert_eq!(best.conflicts_with(&proven(2.0)), Some(true));
    assert_eq!(best.conflicts_with(&proven(1.0)), Some(false));
    // A capped LP relaxation's figure is a lower bound: it shows a conflict, never its absence.
    assert_eq!(
        best.conflicts_with(&bound(1.5, false, true, None)),
        Some(true)
    );
    assert_eq!(best.conflicts_with(&bound(0.5, false, true, None)), None);
    // No capped answer (infeasible, failed): nothing shown.
    assert_eq!(
        best.conflicts_with(&bound(f64::NAN, false, false, None)),
        None
    );
    // The best not proven (its LP relaxation's 2.8 outside) with an integer incumbent of 7:
    // the best leaves at most 7, so 9 within the cap is a conflict and 8 is not decided.
    let unproven = bound(2.8, false, true, Some(7.0));
    assert_eq!(unproven.conflicts_with(&proven(9.0)), Some(true));
    assert_eq!(unproven.conflicts_with(&proven(8.0)), None);
    assert_eq!(unproven.conflicts_with(&proven(3.0)), None);
    // Not proven and no incumbent: nothing shown.
    assert_eq!(
        bound(2.8, false, true, None).conflicts_with(&proven(9.0)),
        None
    );
}

/// A node of the search's group `g`, of `milli` cpu and 16 GiB.
fn group_node(name: &str, milli: i64) -> descheduler::snapshot::Node {
    builders::node(name)
        .cpu(milli)
        .memory(16 * builders::GIB)
        .pods(110)
        .label(support::states::GROUP_LABEL, "g")
        .build()
}

/// A pod of workload `app` (a ReplicaSet) in namespace `w`, of `milli` cpu and 1 GiB, on
/// node `on`, confined to the group `g`.
fn group_pod(app: &str, name: &str, on: &str, milli: i64) -> descheduler::snapshot::Pod {
    builders::pod("w", name)
        .owner("ReplicaSet", app)
        .label("app", app)
        .node(on)
        .cpu(milli)
        .memory(builders::GIB)
        .node_selector(support::states::GROUP_LABEL, "g")
        .build()
}

fn witness_of(
    snap: &descheduler::snapshot::ClusterSnapshot,
    thresholds: Thresholds,
    moves: f64,
    cycles: usize,
) -> Option<support::witness::Witness> {
    let nodes: Vec<String> = snap.nodes.iter().map(|n| n.name.to_string()).collect();
    support::witness::search(
        snap,
        "w",
        &nodes,
        thresholds,
        Cap {
            moves,
            duplicates_excess: 100.0,
            spread: false,
        },
        support::witness::Effort {
            cycles,
            sequences: 50,
            seconds: 60.0,
            seed: 1,
        },
    )
}

/// Six pods of 500m, each its own workload, on a 4-cpu node (75%), two empty 4-cpu nodes,
/// 30/50 on cpu. The integer program packs three pods onto one empty node: A and B at 37.5%,
/// C under, 1 outside in 3 moves. kube-scheduler puts each replacement on the emptier node,
/// so within 3 moves no plan it carries out leaves fewer than 2 outside (A inside after two
/// moves, B and C at 12.5%), and 1 outside takes all six pods off A (B and C at 37.5%).
#[test]
fn kube_scheduler_spreads_what_the_integer_program_packs() {
    let model = Model {
        nodes: vec![node("a", 4.0), node("a", 4.0), node("a", 4.0)],
        workloads: (0..6)
            .map(|i| workload(&format!("p{i}"), 0.5, 1.0, &[1, 0, 0]))
            .collect(),
        thresholds: Thresholds::cpu(30.0, 50.0),
        duplicates: false,
    };
    assert_eq!(
        solve(&model),
        (3.0, 1.0),
        "the program packs three pods onto B"
    );
    let snap = builders::snapshot(
        vec![
            group_node("a", 4000),
            group_node("b", 4000),
            group_node("c", 4000),
        ],
        (0..6)
            .map(|i| group_pod(&format!("p{i}"), &format!("p{i}-x"), "a", 500))
            .collect(),
    );
    let w = witness_of(&snap, Thresholds::cpu(30.0, 50.0), 3.0, 5).expect("a plan");
    assert_eq!((w.moves, w.outside), (2, 2), "{w:?}");
    let targets: Vec<&str> = w
        .plan
        .iter()
        .map(|m| m.rsplit(" -> ").next().unwrap())
        .collect();
    assert!(
        targets.contains(&"b") && targets.contains(&"c"),
        "one replacement on each empty node: {w:?}"
    );
    let w = witness_of(&snap, Thresholds::cpu(30.0, 50.0), 10.0, 5).expect("a plan");
    assert_eq!((w.moves, w.outside), (6, 1), "{w:?}");
}

/// Three pods of one workload (1 cpu each) on a 4-cpu node (75%), two empty 4-cpu nodes,
/// 10/30 on cpu, and a PodDisruptionBudget that allows one disruption: two moves bring every
/// node inside, one per cycle. In a one-cycle run the search moves one pod (two nodes stay
/// outside); in two cycles, both, one in each, and no replacement lands where its workload
/// lost a pod.
#[test]
fn the_search_keeps_to_the_budgets_and_to_the_run_s_cycles() {
    let pods: Vec<_> = (0..3)
        .map(|i| group_pod("web", &format!("web-{i}"), "a", 1000))
        .collect();
    let snap =
        descheduler::snapshot::ClusterSnapshot::build(descheduler::snapshot::SnapshotParts {
            nodes: vec![
                group_node("a", 4000),
                group_node("b", 4000),
                group_node("c", 4000),
            ],
            pods,
            pdbs: vec![builders::pdb("w", "web", "app", "web", 1)],
            ..Default::default()
        });
    let t = Thresholds::cpu(10.0, 30.0);
    let one = witness_of(&snap, t, 3.0, 1).expect("a plan");
    assert_eq!((one.moves, one.outside), (1, 2), "{one:?}");
    let two = witness_of(&snap, t, 3.0, 2).expect("a plan");
    assert_eq!((two.moves, two.outside), (2, 0), "{two:?}");
    assert!(
        two.plan[0].starts_with("cycle 1: ") && two.plan[1].starts_with("cycle 2: "),
        "{two:?}"
    );
    for m in &two.plan {
        assert!(!m.ends_with("-> a"), "back onto the node it left: {two:?}");
    }
    // Capped at one move, two cycles are no help.
    let capped = witness_of(&snap, t, 1.0, 2).expect("a plan");
    assert_eq!((capped.moves, capped.outside), (1, 2), "{capped:?}");
}

#[test]
fn one_node_above_high_needs_exactly_the_pods_above_it() {
    // 9 pods of 1 cpu on a 10-cpu node (90%), an empty 10-cpu node; 20/50 on cpu: the first
    // keeps at most 5 (50%), the second takes the 4 (40%).
    assert_eq!(solve(&nine_pods_over_one_node()), (4.0, 0.0));
}

#[test]
fn an_underutilized_node_needs_one_move() {
    // 3 pods of 1 cpu on a 4-cpu node (75%), an empty one: one move leaves 50% and 25%.
    let model = Model {
        nodes: vec![node("a", 4.0), node("a", 4.0)],
        workloads: vec![workload("w", 1.0, 0.0, &[3, 0])],
        thresholds: Thresholds::cpu(20.0, 50.0),
        duplicates: false,
    };
    assert_eq!(solve(&model), (1.0, 0.0));
}

#[test]
fn a_pod_above_the_high_threshold_on_its_own_stays_outside_wherever_it_goes() {
    // One 2.2-cpu pod (55% of a 4-cpu node): whichever node holds it is over, the other
    // under; no move helps, so none is made.
    let model = Model {
        nodes: vec![node("a", 4.0), node("b", 4.0)],
        workloads: vec![workload("big", 2.2, 0.0, &[1, 0])],
        thresholds: Thresholds::cpu(20.0, 50.0),
        duplicates: false,
    };
    assert_eq!(solve(&model), (0.0, 2.0));
}

#[test]
fn a_node_exactly_on_its_low_threshold_is_under() {
    // 6 pods of 0.4 cpu on a 4-cpu node (60%), an empty one; 20/50 on cpu. Two pods (20%)
    // leave the second node on its low threshold, which LowNodeUtilization reads as
    // underutilized: it takes three (30%), and the first keeps three (30%).
    let model = Model {
        nodes: vec![node("a", 4.0), node("a", 4.0)],
        workloads: vec![workload("w", 0.4, 0.0, &[6, 0])],
        thresholds: Thresholds::cpu(20.0, 50.0),
        duplicates: false,
    };
    assert_eq!(solve(&model), (3.0, 0.0));
    let t = Thresholds::cpu(20.0, 50.0);
    assert!(
        t.under(&[100.0 * 0.8 / 4.0, 0.0]),
        "800m of 4 cpu is on 20%"
    );
    assert!(
        !t.over(&[100.0 * 2.0 / 4.0, 0.0]),
        "2 cpu of 4 is on 50%, not over"
    );
}

#[test]
fn on_two_resources_a_node_under_on_one_only_is_within() {
    // cpu 30%, memory 10% of allocatable with 20/50 on both: not under (cpu reaches 20), not
    // over: nothing to move. Another node at 10% cpu, 5% memory is under on both.
    let model = Model {
        nodes: vec![node("a", 10.0), node("a", 10.0)],
        workloads: vec![
            workload("w", 3.0, 4.0, &[1, 0]),
            workload("v", 1.0, 2.0, &[0, 1]),
        ],
        thresholds: Thresholds::cpu_memory(20.0, 50.0),
        duplicates: false,
    };
    // Moving the 1-cpu pod onto the first node leaves the second empty (still under); the
    // best is one outside and no move.
    assert_eq!(solve(&model), (0.0, 1.0));
}

#[test]
fn hard_zone_spread_takes_the_moves_to_the_empty_zone() {
    // 6 pods, maxSkew 1, zones a=3 b=3 c=0: two moves make 2/2/2. Thresholds that no node
    // can leave (0/100).
    let mut w = workload("web", 0.1, 0.0, &[3, 3, 0]);
    w.zone_skew = Some(1);
    let model = Model {
        nodes: vec![node("a", 8.0), node("b", 8.0), node("c", 8.0)],
        workloads: vec![w],
        thresholds: Thresholds::cpu(0.0, 100.0),
        duplicates: false,
    };
    assert_eq!(solve(&model), (2.0, 0.0));
}

#[test]
fn duplicates_limit_each_node_to_its_share() {
    // 4 replicas on one of two nodes, RemoveDuplicates: at most ceil(4/2) = 2 per node.
    let model = Model {
        nodes: vec![node("a", 8.0), node("a", 8.0)],
        workloads: vec![workload("w", 0.1, 0.0, &[4, 0])],
        thresholds: Thresholds::cpu(0.0, 100.0),
        duplicates: true,
    };
    assert_eq!(solve(&model), (2.0, 0.0));
}

#[test]
fn a_workload_goes_only_where_it_may() {
    // 9 pods of 1 cpu on a 10-cpu node; of the two empty nodes, the first is infeasible for
    // the workload (a taint, a selector): the 4 moves all go to the second.
    let mut w = workload("w", 1.0, 0.0, &[9, 0, 0]);
    w.feasible = vec![true, false, true];
    let model = Model {
        nodes: vec![node("a", 10.0), node("a", 10.0), node("a", 10.0)],
        workloads: vec![w],
        thresholds: Thresholds::cpu(20.0, 50.0),
        duplicates: false,
    };
    // The infeasible node stays empty (under): one outside, 4 moves.
    assert_eq!(solve(&model), (4.0, 1.0));
}

#[test]
fn figures_count_outside_nodes_and_excess() {
    let node = |name: &str, zone: &str| NodeInfo {
        name: name.to_string(),
        zone: zone.to_string(),
        labels: Default::default(),
        alloc: [4.0, 16.0 * GI],
        max_pods: 110.0,
        unschedulable: false,
        taints: Vec::new(),
    };
    let pod = |app: &str, node: &str, skew: Option<i64>| PodInfo {
        uid: format!("{app}-{node}-{}", rand_suffix()),
        name: app.to_string(),
        app: app.to_string(),
        node: node.to_string(),
        requests: [1.0, GI],
        running: true,
        terminating: false,
        node_selector: Default::default(),
        zone_skew: skew,
        created: 0.0,
        deleted: None,
    };
    let nodes = vec![node("n1", "a"), node("n2", "b"), node("n3", "c")];
    // n1: 3 cpu (75%: over), n2: 1 cpu (25%), n3: empty (under).
    let pods = vec![
        pod("web", "n1", Some(1)),
        pod("web", "n1", Some(1)),
        pod("web", "n1", Some(1)),
        pod("web", "n2", Some(1)),
    ];
    let f = figures(&nodes, &pods, &Thresholds::cpu(20.0, 50.0));
    assert_eq!((f.outside, f.over, f.under), (2, 1, 1));
    // Zones 3/1/0 with maxSkew 1: 2 above the skew in a; duplicates: ceil(4/3) = 2 per node,
    // one too many on n1.
    assert_eq!(f.spread_excess, 2);
    assert_eq!(f.duplicates_excess, 1);
    assert!((f.cpu_sd - 31.18).abs() < 0.01, "{}", f.cpu_sd);
    assert_eq!(f.pending, 0);
    let _ = CPU;
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A state of `scenario` and `seed` (new nodes: nodes filled above the high threshold, then
/// empty ones join) run by `binary` in continuous mode for three 5-second cycles (with the
/// closed loop, `--await-placement`, where `await_placement`); the run, with a description
/// of it for the assertions, after the state is discarded.
async fn three_cycles(
    scenario: Scenario,
    seed: u64,
    binary: Binary,
    await_placement: bool,
) -> (RunOutcome, String) {
    // One run at a time: the integer program's bound is wall-clock (20 s), and two runs at
    // once on a small machine starve each other's solver (a state proven in 1 s alone was
    // left unproven so).
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = support::shared_realistic();
    let client = cluster.client();
    let built = scenario.build(&client, seed).await;
    let cfg = RunConfig {
        cycles: 3,
        interval: Duration::from_secs(5),
        cooldown: None,
        await_placement,
        ilp_seconds: 20.0,
    };
    let o = run(cluster, &built, binary, &cfg).await;
    let what = format!(
        "{}\n{}\nstart {:?}\nend {:?}\ncycles {:?}\nevictions {}\nnotes {:?}",
        built.summary,
        o.bound.describe(),
        o.start,
        o.end,
        o.cycles,
        o.evictions,
        o.notes
    );
    if std::env::var_os("OUTCOME_DEBUG").is_some() {
        eprintln!("{what}");
    }
    support::outcome::discard(&client, &built).await;
    (o, what)
}

/// What every run must show: three cycles without a harness note, work to do and moves made,
/// no churn, no PDB overrun, nothing left Pending.
fn assert_moved_safely(o: &RunOutcome, what: &str) {
    assert!(o.notes.is_empty(), "{what}");
    assert_eq!(o.cycles.len(), 3, "{what}");
    assert!(o.start.outside > 0, "the state leaves work to do: {what}");
    assert!(o.evictions > 0, "{what}");
    assert_eq!(o.churn, 0, "{what}");
    assert_eq!(o.pdb_overruns, 0, "{what}");
    assert_eq!(o.pending, 0, "{what}");
}

/// Within one node of the best possible's nodes outside, with at most `ratio` times its
/// moves. The integer program proves its optimum on most of these states in well under a
/// second; on some (the state kube-scheduler built differs from run to run) its branch and
/// bound does not close within the time bound on a loaded machine, and the bound is the LP
/// relaxation's. The relaxation minimises the same weighted objective (a node outside weighs
/// more than every move), so its moves are a lower bound on the optimum's only where the
/// optimum leaves no node outside. An end state with no node outside, no duplicate and no
/// spread excess is a placement the program allows, so it proves that; then the comparisons
/// against the relaxation are at least as strict. Otherwise an unproven bound fails the test.
fn assert_near_the_best_possible(o: &RunOutcome, what: &str, ratio: f64) {
    if !o.bound.optimal {
        assert!(o.bound.relaxed, "{what}");
        assert!(
            o.end.outside == 0 && o.end.duplicates_excess == 0 && o.end.spread_excess == 0,
            "an unproven bound compares only against an end state with nothing outside: {what}"
        );
    }
    assert!(o.end.outside as f64 <= o.bound.outside + 1.0, "{what}");
    assert!(o.evictions as f64 <= ratio * o.bound.moves, "{what}");
}

/// One small "new nodes" state (seed 1), our binary with the upstream plugins.
#[tokio::test(flavor = "multi_thread")]
async fn new_nodes_three_cycles_of_ours() {
    let (o, what) = three_cycles(Scenario::NewNodes, 1, Binary::Ours, false).await;
    assert_moved_safely(&o, &what);
    assert!(o.end.outside <= o.start.outside, "{what}");
    assert!(o.end.cpu_sd < o.start.cpu_sd, "{what}");
    // The bound: the fewest moves reaching the thresholds. An end state at least as good as
    // the bound's, within the limits it honours, took at least its moves.
    assert!(o.bound.optimal || o.bound.relaxed, "{what}");
    if o.end.outside as f64 <= o.bound.outside
        && o.end.duplicates_excess == 0
        && o.end.spread_excess == 0
    {
        assert!(o.evictions as f64 >= o.bound.moves - 1e-6, "{what}");
    }
}

/// A "new nodes" state (seed 7) with the outcome planner (OutcomeBalance in place of the
/// three plugins): it moves, never churns, leaves nothing Pending, overruns no PDB and ends
/// within one node of the best possible with at most 1.25x its moves.
#[tokio::test(flavor = "multi_thread")]
async fn new_nodes_three_cycles_of_the_outcome_planner() {
    let (o, what) = three_cycles(Scenario::NewNodes, 7, Binary::OursOutcome, false).await;
    assert_moved_safely(&o, &what);
    assert!(o.end.outside < o.start.outside, "{what}");
    assert!(o.end.cpu_sd < o.start.cpu_sd, "{what}");
    // The targets against the best possible: within one node of its nodes outside,
    // at most 1.25x its moves. The evictions of one cycle are still terminating when the next
    // reads the cluster; counted as staying, they would be moved for again.
    assert_near_the_best_possible(&o, &what, 1.25);
    // The start state the search of plans kube-scheduler carries out starts from (our
    // binary's first snapshot) is the one the benchmark measured: with no move allowed, the
    // same nodes outside. Within the run's evictions, a plan it finds that repairs every
    // duplicate leaves no fewer nodes outside than the proven best possible.
    let start = o
        .start_snapshot
        .as_ref()
        .expect("the first cycle's snapshot");
    let search = |moves: f64| {
        start.search(
            Cap {
                moves,
                duplicates_excess: if moves == 0.0 { f64::INFINITY } else { 0.0 },
                spread: false,
            },
            support::witness::Effort {
                cycles: 3,
                sequences: 20,
                seconds: 30.0,
                seed: 7,
            },
        )
    };
    let none = search(0.0).expect("the empty plan");
    assert_eq!((none.moves, none.outside), (0, o.start.outside), "{what}");
    if let (Some(w), true) = (search(o.evictions as f64), o.bound.optimal) {
        assert!(w.moves <= o.evictions, "{w:?}\n{what}");
        assert!(
            w.outside as f64 >= o.bound.outside.round(),
            "a plan below the proven best: {w:?}\n{what}"
        );
    }
}

/// A "big pods" state (seed 17, upstream #1695: pods above the high threshold on their own)
/// with the outcome planner and the closed loop: it moves the big pods onto joined nodes
/// (outside either way) so that the nodes they leave come inside, repairs the duplicates,
/// evicts nothing only to close percentage points, never churns, and ends within one node of
/// the best possible's nodes outside.
///
/// Evictions: the 1.25x of the best possible's moves holds on most runs of this state
/// (7 or 8 against 7), not on all: where a big pod leaves a node exactly on its low threshold
/// (20%, under), the fill that brings it inside waits for a later cycle, since kube-scheduler
/// still sees the big pod there while it terminates (9 against 7 in two of six runs). So
/// this asserts 1.5x, and the benchmark's tables carry the ratio per seed.
#[tokio::test(flavor = "multi_thread")]
async fn big_pods_three_cycles_of_the_outcome_planner() {
    let (o, what) = three_cycles(Scenario::BigPods, 17, Binary::OursOutcome, true).await;
    assert_moved_safely(&o, &what);
    assert_eq!(o.end.duplicates_excess, 0, "{what}");
    assert_near_the_best_possible(&o, &what, 1.5);
}
