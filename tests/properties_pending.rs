//! MakeRoomForPendingPods on small random clusters: every plan is sound (every moved pod's
//! replacement and every pod of the pending unit placed by the simulator, budgets, limits and
//! gangs kept, nothing moved above the pending pod's priority), never smaller than a
//! brute-force minimum over every set and order of moves (which would be a bug in one of the
//! two), and equal to it in most cases. `DESCHEDULER_FUZZ_ITERATIONS` sets the number of
//! clusters (400 by default).

use descheduler::framework::{
    Context, EvictorPlugin, FromArgs, Ledger, Limits, PendingUnit, PlanningState, Plugin,
};
use descheduler::plugins::default_evictor::DefaultEvictor;
use descheduler::plugins::make_room_for_pending_pods::{
    pending_units, simulate, MakeRoomForPendingPods, Unit,
};
use descheduler::sim::score::{ResourceSpec, ScoringStrategy};
use descheduler::sim::{ScoreProfile, Simulation};
use descheduler::snapshot::builders::{node, pdb, pod, pod_group, PodBuilder, T0};
use descheduler::snapshot::{ClusterSnapshot, ConditionStatus, Phase, PodId, SnapshotParts};
use serde_json::json;
use std::sync::Arc;

const NOW: i64 = T0 + 3600;
const GPU: &str = "nvidia.com/gpu";
const GI: i64 = 1 << 30;

fn pending(ns: &str, name: &str) -> PodBuilder {
    pod(ns, name)
        .phase(Phase::Pending)
        .started(None)
        .cpu(1000)
        .memory(2 * GI)
        .resource(GPU, 2)
        .owner("Job", name)
        .condition(
            "PodScheduled",
            ConditionStatus::False,
            Some("Unschedulable"),
            Some(T0),
        )
}

fn evictor() -> DefaultEvictor {
    DefaultEvictor::from_json(&json!({})).unwrap()
}

fn priority(snap: &ClusterSnapshot, pod: PodId) -> i32 {
    snap.pod(pod).priority.unwrap_or(0)
}

/// The next k-combination of `0..n` in lexicographic order; false after the last.
fn next_combination(idx: &mut [usize], n: usize) -> bool {
    let k = idx.len();
    let mut i = k;
    while i > 0 {
        i -= 1;
        if idx[i] < n - k + i {
            idx[i] += 1;
            for j in i + 1..k {
                idx[j] = idx[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

struct Outcome {
    evicted: Vec<(String, String, Option<String>)>,
    pending: Vec<PendingUnit>,
}

/// The plugin alone over the snapshot's Ready nodes, scoring with `profile`.
fn run_scored(
    snap: &ClusterSnapshot,
    p: &MakeRoomForPendingPods,
    ev: &DefaultEvictor,
    limits: Limits,
    profile: Option<Arc<ScoreProfile>>,
) -> Outcome {
    let nodes = snap.ready_nodes(&Default::default());
    let mut state = PlanningState::new(snap, limits);
    if let Some(profile) = profile {
        state.placement_mut().set_profile(profile);
    }
    let mut cx = Context::new(&mut state, ev, "default", p.name(), NOW, &nodes, None);
    p.run(&mut cx, &nodes);
    let out = state.into_output();
    Outcome {
        evicted: out
            .evictions
            .iter()
            .map(|e| {
                (
                    snap.pod(e.pod).name.to_string(),
                    snap.node(e.node).name.to_string(),
                    e.destination.map(|d| snap.node(d).name.to_string()),
                )
            })
            .collect(),
        pending: out.findings.list::<PendingUnit, _>().to_vec(),
    }
}

/// A small deterministic generator (splitmix64) for the random clusters below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A small random cluster: GPU nodes with movable and pinned pods (some GPU, some cpu
/// only, some of a higher priority, some under a budget), and a pending pod or gang.
fn random_cluster(rng: &mut Rng) -> SnapshotParts {
    let mut parts = SnapshotParts::default();
    let nodes = 3 + rng.below(2);
    for n in 0..nodes {
        let name = format!("n{n}");
        let gpus = if rng.chance(25) { 4 } else { 2 };
        parts.nodes.push(
            node(&name)
                .cpu(4000)
                .memory(16 * GI)
                .resource(GPU, gpus)
                .build(),
        );
        let mut free = gpus;
        for i in 0..1 + rng.below(3) {
            let pname = format!("p{n}-{i}");
            let cpu = 100 * (1 + rng.below(25) as i64);
            let mut b = pod("w", &pname).node(&name).cpu(cpu).memory(GI);
            if free > 0 && rng.chance(75) {
                let g = (1 + rng.below(2) as i64).min(free);
                free -= g;
                b = b.resource(GPU, g);
            }
            if rng.chance(20) {
                b = b.bare();
            }
            if rng.chance(15) {
                b = b.priority(100);
            }
            if rng.chance(20) {
                b = b.label("app", "guarded");
            }
            parts.pods.push(b.build());
        }
    }
    if rng.chance(50) {
        parts
            .pdbs
            .push(pdb("w", "guarded", "app", "guarded", rng.below(2) as i32));
    }
    let gang = 1 + rng.below(3);
    for g in 0..gang {
        let mut b = pending("ml", &format!("m{g}"))
            .cpu(100 * (1 + rng.below(10) as i64))
            .resource(GPU, if rng.chance(70) { 2 } else { 1 });
        if gang > 1 {
            b = b.pod_group("job");
        }
        parts.pods.push(b.build());
    }
    if gang > 1 {
        parts.pod_groups.push(pod_group("ml", "job", gang as i32));
    }
    parts
}

/// The fewest moves (at most `max`) after which the simulator places the whole unit, by
/// trying every set of movable pods in every order; None when no such set exists.
fn brute_force_minimum(
    snap: &ClusterSnapshot,
    profile: &Arc<ScoreProfile>,
    unit: &Unit,
    max: usize,
) -> Option<usize> {
    let ev = evictor();
    let sim = Simulation::with_profile(snap, profile.clone());
    let nodes = snap.ready_nodes(&Default::default());
    let ledger = Ledger::new(snap, Limits::default());
    let movable: Vec<PodId> = snap
        .pod_ids()
        .filter(|&p| {
            snap.pod_node(p).is_some()
                && priority(snap, p) <= unit.priority
                && EvictorPlugin::filter(&ev, snap, p, NOW).is_ok()
                && ledger.admit(p).is_ok()
        })
        .collect();
    fn permutations(items: &mut Vec<PodId>, k: usize, f: &mut dyn FnMut(&[PodId]) -> bool) -> bool {
        if k == items.len() {
            return f(items);
        }
        for i in k..items.len() {
            items.swap(k, i);
            if permutations(items, k + 1, f) {
                return true;
            }
            items.swap(k, i);
        }
        false
    }
    for size in 0..=max.min(movable.len()) {
        let mut idx: Vec<usize> = (0..size).collect();
        loop {
            let mut set: Vec<PodId> = idx.iter().map(|&i| movable[i]).collect();
            let found = permutations(&mut set, 0, &mut |order| {
                ledger.admit_together(order).is_ok()
                    && simulate(&sim, &nodes, order, &unit.pods).is_some()
            });
            if found {
                return Some(size);
            }
            if size == 0 || !next_combination(&mut idx, movable.len()) {
                break;
            }
        }
    }
    None
}

/// On small random clusters: every plan is sound (every moved pod placed elsewhere, the
/// unit placed, budgets kept, no gang broken), never smaller than the brute-force
/// minimum (which would be a bug in one of the two), and equal to it in most cases.
#[test]
fn plans_are_sound_and_usually_minimal_on_random_clusters() {
    let cases: u64 = std::env::var("DESCHEDULER_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let max = 3;
    // kube-scheduler's default scoring, and a bin-packing profile (MostAllocated, GPUs
    // weighed most), as GPU clusters often run
    let default = Arc::new(ScoreProfile::default());
    let packing = Arc::new(ScoreProfile {
        fit_strategy: ScoringStrategy::MostAllocated,
        fit_resources: vec![
            ResourceSpec::new("cpu", 1),
            ResourceSpec::new("memory", 1),
            ResourceSpec::new(GPU, 3),
        ],
        balanced_weight: 0,
        ..ScoreProfile::default()
    });
    let mut missed_seeds = Vec::new();
    let p = MakeRoomForPendingPods::from_json(
        &json!({"maxPodsToMove": max, "maxCandidates": 64, "maxSimulations": 100000}),
    )
    .unwrap();
    let (mut solvable, mut minimal, mut missed, mut placed_units) = (0, 0, 0, 0);
    let mut needing_moves = 0;
    for seed in 0..cases {
        let mut rng = Rng(seed);
        let profile = if seed % 2 == 0 { &default } else { &packing };
        // a cluster where the unit does not fit as it is
        let snap = loop {
            let snap = ClusterSnapshot::build(random_cluster(&mut rng));
            let unit = &pending_units(&snap, NOW, 60)[0];
            let sim = Simulation::with_profile(&snap, profile.clone());
            let nodes = snap.ready_nodes(&Default::default());
            let free: i64 = snap
                .node_ids()
                .map(|n| snap.node(n).allocatable.get(GPU) - sim.load(n).get(GPU))
                .sum();
            let wanted: i64 = unit
                .pods
                .iter()
                .map(|&p| snap.pod(p).requests.get(GPU))
                .sum();
            if free >= wanted && simulate(&sim, &nodes, &[], &unit.pods).is_none() {
                break snap;
            }
        };
        let units = pending_units(&snap, NOW, 60);
        assert_eq!(units.len(), 1, "seed {seed}");
        let unit = &units[0];
        let out = run_scored(
            &snap,
            &p,
            &evictor(),
            Limits::default(),
            Some(profile.clone()),
        );
        let u = &out.pending[0];
        let moved = u.made_room_by.clone();
        let planned = u.reason.is_none();
        // soundness
        if planned {
            placed_units += 1;
            assert!(u.destinations.iter().all(Option::is_some), "seed {seed}");
            assert_eq!(
                out.evicted.len(),
                moved.len(),
                "seed {seed}: only the moves are planned"
            );
            for (pod, from, to) in &out.evicted {
                let to = to
                    .as_deref()
                    .unwrap_or_else(|| panic!("seed {seed}: {pod} has no place"));
                assert_ne!(to, from, "seed {seed}: {pod} moved to its own node");
            }
            let sim = Simulation::with_profile(&snap, profile.clone());
            let nodes = snap.ready_nodes(&Default::default());
            let trial = simulate(&sim, &nodes, &moved, &unit.pods)
                .unwrap_or_else(|| panic!("seed {seed}: the plan does not place the unit"));
            assert_eq!(
                trial.placed_on.iter().map(|&n| Some(n)).collect::<Vec<_>>(),
                u.destinations,
                "seed {seed}"
            );
            let ledger = Ledger::new(&snap, Limits::default());
            assert!(
                ledger.admit_together(&moved).is_ok(),
                "seed {seed}: budgets or gangs broken"
            );
            for &m in &moved {
                assert!(priority(&snap, m) <= unit.priority, "seed {seed}");
                assert!(
                    snap.pod(m).controller().is_some(),
                    "seed {seed}: a bare pod moved"
                );
            }
        } else {
            assert!(
                out.evicted.is_empty(),
                "seed {seed}: moves for a unit that stays pending"
            );
        }
        let best = brute_force_minimum(&snap, profile, unit, max as usize);
        match (best, planned) {
            (Some(b), true) => {
                solvable += 1;
                needing_moves += usize::from(b > 0);
                assert!(
                    moved.len() >= b,
                    "seed {seed}: fewer moves than the minimum"
                );
                if moved.len() == b {
                    minimal += 1;
                } else {
                    missed_seeds.push(seed);
                }
            }
            (Some(b), false) => {
                solvable += 1;
                needing_moves += usize::from(b > 0);
                missed += 1;
                missed_seeds.push(seed);
            }
            (None, true) => panic!("seed {seed}: planned where no set of moves works"),
            (None, false) => {}
        }
    }
    let rate = minimal as f64 / solvable.max(1) as f64;
    eprintln!(
        "{cases} random clusters: {solvable} solvable within {max} moves ({needing_moves} of them only with moves), {placed_units} placed, {minimal} with the brute-force minimum ({:.1}%), {missed} missed (seeds not minimal: {missed_seeds:?})",
        100.0 * rate
    );
    assert_eq!(needing_moves, solvable, "every case needs moves");
    assert!(
        solvable * 5 >= cases as usize,
        "the generator makes too few solvable cases"
    );
    // 100% of the 400 cases by default; 98.7% of 3,000 (the misses find no set, none
    // finds a larger one)
    assert!(
        rate >= 0.9,
        "minimal in {:.1}% of the solvable cases",
        100.0 * rate
    );
}
