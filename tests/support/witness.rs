//! Plans kube-scheduler carries out: a randomized search over eviction sequences whose
//! replacements land where the kube-scheduler simulation puts them (issue 29).
//!
//! The integer program of [`super::outcome::Model`] places pods wherever it likes; no
//! descheduler does. It only chooses which pods to evict and when, and kube-scheduler places
//! the replacements. Where our planner ends short of the program's best, the question is
//! whether any plan kube-scheduler carries out does better. [`search`] looks for one: from a
//! start snapshot, many randomized greedy sequences of moves, each move an eviction whose
//! replacement is placed by [`Simulation`] (the simulator the planner asks, checked against
//! kube-scheduler in `tests/predictions.rs`), and it keeps the sequence prefix with the fewest
//! nodes outside the thresholds within a cap on moves and duplicates excess.
//!
//! A plan is a run's worth of cycles: before each move the search may start a new cycle
//! (every pod evicted before it has finished terminating, and the PodDisruptionBudgets allow
//! again what they allowed at the start) or stay in the cycle (the evicted pods still count
//! in kube-scheduler's view, and each budget allows what it allowed at the start, less this
//! cycle's evictions of its pods), up to the run's number of cycles.
//!
//! It is more permissive than a descheduler run in three ways, so that a target it cannot
//! reach is out of reach of a run too (as far as a search shows: it is evidence, not a
//! proof): no eviction limit, evictor filter or cooldown holds a move back; a new cycle
//! starts with every earlier eviction's pod gone; and where kube-scheduler ties between
//! nodes, the search picks the tied node it likes best.
//!
//! It keeps two rules of a churn-free run (the targets ask for churn 0): only pods of
//! the start state move (a replacement is never evicted again), and no replacement lands on
//! a node its workload lost a pod from in the sequence.

use super::outcome::{Cap, Thresholds};
use super::states::Rng;
use descheduler::sim::Simulation;
use descheduler::snapshot::{ClusterSnapshot, NodeId, PodId, WhenUnsatisfiable};
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// What one node outside the thresholds weighs in the search's distance, against percentage
/// points outside and pods above their share.
const OUTSIDE: f64 = 1_000.0;

/// What a pod above its share weighs, in nodes outside, in the sequences that repair
/// duplicates first.
const DUPLICATES_FIRST: f64 = 10.0;

/// The zone label.
const ZONE: &str = "topology.kubernetes.io/zone";

/// The best plan found.
#[derive(Clone, Debug, PartialEq)]
pub struct Witness {
    /// Evictions (each a replacement placed by the simulation).
    pub moves: usize,
    /// Nodes outside the thresholds at its end.
    pub outside: usize,
    /// Pods above their per-node share at its end.
    pub duplicates_excess: i64,
    /// The moves, as `pod: from -> to`, with `(new cycle)` where the evicted pods before it
    /// are let finish terminating first.
    pub plan: Vec<String>,
    /// The sequences tried, and the seconds they took.
    pub sequences: usize,
    pub seconds: f64,
}

impl Witness {
    pub fn describe(&self) -> String {
        format!(
            "{} moves, {} outside, {} duplicates excess (best of {} kube-scheduler-placed sequences, {:.1} s)",
            self.moves, self.outside, self.duplicates_excess, self.sequences, self.seconds
        )
    }
}

/// The start state as the search sees it: the namespace's workloads on the planning nodes.
struct Start<'s> {
    snap: &'s ClusterSnapshot,
    nodes: Vec<NodeId>,
    /// Each pod of the start state that may move, with its workload (index into `shares`).
    pods: Vec<(PodId, usize)>,
    /// Per workload: its pods' per-node share, ceil(replicas / planning nodes it may run on).
    shares: Vec<i64>,
    /// Per workload with a DoNotSchedule zone spread: its maxSkew, and the zone (index) of
    /// each planning node it may run on (None: one it may not).
    zone_skew: Vec<Option<(i64, Vec<Option<usize>>)>>,
    thresholds: Thresholds,
}

/// A state of one sequence.
#[derive(Clone)]
struct State<'s> {
    sim: Simulation<'s>,
    /// Per workload and planning node (index into `Start::nodes`): its pods there.
    count: Vec<Vec<i64>>,
    moved: HashSet<PodId>,
    /// (workload, node index) it lost a pod from.
    lost: HashSet<(usize, usize)>,
    plan: Vec<String>,
    /// The cycle of the last move (0: the first), and per PodDisruptionBudget of the
    /// snapshot, its pods evicted in that cycle.
    cycle: usize,
    spent: Vec<i32>,
}

/// How long and how wide [`search`] looks.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    /// The run's cycles: the most a plan may take.
    pub cycles: usize,
    /// Randomized sequences, at most.
    pub sequences: usize,
    /// Seconds, at most.
    pub seconds: f64,
    pub seed: u64,
}

/// Searches randomized sequences from `snap` for the plan with the fewest nodes outside
/// `thresholds` among the planning `nodes` (by name), with at most `cap.moves` moves and
/// `cap.duplicates_excess` pods above their share at its end (with `cap.spread`, no pod
/// above its DoNotSchedule zone spread's skew either), moving the pods of `namespace`. None
/// when no prefix of any sequence is within the cap (not even the empty plan).
pub fn search(
    snap: &ClusterSnapshot,
    namespace: &str,
    nodes: &[String],
    thresholds: Thresholds,
    cap: Cap,
    effort: Effort,
) -> Option<Witness> {
    let Effort {
        cycles,
        sequences,
        seconds,
        seed,
    } = effort;
    let started = Instant::now();
    let (start, first) = begin(snap, namespace, nodes, thresholds);
    let mut best: Option<Witness> = None;
    start.offer(&first, cap, &mut best);
    let mut rng = Rng::new(seed);
    let max_moves = cap.moves.max(0.0).floor() as usize;
    let mut tried = 0;
    while tried < sequences && started.elapsed().as_secs_f64() < seconds {
        tried += 1;
        // Every other sequence repairs duplicates first (a pod above its share weighs ten
        // nodes outside), the others weigh them as a node outside each.
        let duplicate = if tried % 2 == 1 {
            DUPLICATES_FIRST
        } else {
            1.0
        };
        let mut state = first.clone();
        while state.plan.len() < max_moves {
            let mut options = start.options(&state, cycles, duplicate);
            if options.is_empty() {
                break;
            }
            options.sort_by(|a, b| a.0.total_cmp(&b.0));
            // The best option half the time, the second a quarter, and so on; the first two
            // sequences are plainly greedy.
            let mut pick = 0;
            while tried > 2 && pick + 1 < options.len() && rng.chance(50) {
                pick += 1;
            }
            state = options.swap_remove(pick).1;
            start.offer(&state, cap, &mut best);
        }
    }
    best.map(|mut b| {
        b.sequences = tried;
        b.seconds = started.elapsed().as_secs_f64();
        b
    })
}

/// The start state as the search sees it, and the empty plan's state.
fn begin<'s>(
    snap: &'s ClusterSnapshot,
    namespace: &str,
    nodes: &[String],
    thresholds: Thresholds,
) -> (Start<'s>, State<'s>) {
    let nodes: Vec<NodeId> = nodes.iter().filter_map(|n| snap.node_id(n)).collect();
    let position: BTreeMap<NodeId, usize> =
        nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut workload_of: BTreeMap<String, usize> = BTreeMap::new();
    let mut pods = Vec::new();
    let mut replicas: Vec<i64> = Vec::new();
    let mut first_pod: Vec<PodId> = Vec::new();
    for (i, p) in snap.pods.iter().enumerate() {
        let id = PodId::from_index(i);
        if &*p.namespace != namespace || !p.is_active() {
            continue;
        }
        if !snap.pod_node(id).is_some_and(|n| position.contains_key(&n)) {
            continue;
        }
        let key = p
            .controller()
            .map(|o| o.name.to_string())
            .unwrap_or_else(|| p.name.to_string());
        let next = workload_of.len();
        let w = *workload_of.entry(key).or_insert(next);
        if w == replicas.len() {
            replicas.push(0);
            first_pod.push(id);
        }
        replicas[w] += 1;
        pods.push((id, w));
    }
    let sim = Simulation::new(snap);
    let shares: Vec<i64> = (0..replicas.len())
        .map(|w| {
            let feasible = nodes
                .iter()
                .filter(|&&n| fits_statically(snap, first_pod[w], n))
                .count()
                .max(1) as i64;
            (replicas[w] + feasible - 1) / feasible
        })
        .collect();
    let mut zones: Vec<String> = Vec::new();
    let zone_skew = first_pod
        .iter()
        .map(|&p| {
            let c = snap.pod(p).topology_spread.iter().find(|c| {
                &*c.topology_key == ZONE && c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule
            })?;
            let of_node = nodes
                .iter()
                .map(|&n| {
                    let zone = snap.node(n).labels.get(ZONE)?.to_string();
                    if !fits_statically(snap, p, n) {
                        return None;
                    }
                    Some(zones.iter().position(|z| *z == zone).unwrap_or_else(|| {
                        zones.push(zone);
                        zones.len() - 1
                    }))
                })
                .collect();
            Some((i64::from(c.max_skew), of_node))
        })
        .collect();
    let start = Start {
        snap,
        nodes,
        pods,
        shares,
        zone_skew,
        thresholds,
    };
    let mut count = vec![vec![0i64; start.nodes.len()]; replicas.len()];
    for &(p, w) in &start.pods {
        let n = snap.pod_node(p).unwrap();
        count[w][position[&n]] += 1;
    }
    let first = State {
        sim,
        count,
        moved: HashSet::new(),
        lost: HashSet::new(),
        plan: Vec::new(),
        cycle: 0,
        spent: vec![0; snap.pdbs.len()],
    };
    (start, first)
}

/// What a state leaves: nodes outside the thresholds, pods above their per-node share and
/// pods above their DoNotSchedule zone spread's skew, as [`search`] counts them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    pub outside: usize,
    pub duplicates_excess: i64,
    pub spread_excess: i64,
    /// Where the duplicates are: `<workload> on <node>: <pods> (share <share>)`.
    pub duplicates_at: Vec<String>,
}

/// [`Measure`] of `snap`: the pods of `namespace` on the planning `nodes` (by name).
pub fn measure(
    snap: &ClusterSnapshot,
    namespace: &str,
    nodes: &[String],
    thresholds: Thresholds,
) -> Measure {
    let (start, state) = begin(snap, namespace, nodes, thresholds);
    let mut duplicates_at = Vec::new();
    for (w, per_node) in state.count.iter().enumerate() {
        let share = start.shares[w];
        let Some(&(pod, _)) = start.pods.iter().find(|&&(_, v)| v == w) else {
            continue;
        };
        let name = snap
            .pod(pod)
            .controller()
            .map_or_else(|| snap.pod(pod).name.to_string(), |o| o.name.to_string());
        for (i, &c) in per_node.iter().enumerate() {
            if c > share {
                duplicates_at.push(format!(
                    "{name} on {}: {c} (share {share})",
                    snap.node(start.nodes[i]).name
                ));
            }
        }
    }
    Measure {
        outside: start.outside(&state.sim).0,
        duplicates_excess: start.duplicates(&state.count),
        spread_excess: start.spread(&state.count),
        duplicates_at,
    }
}

/// nodeSelector and taints alone (a node too full for the pod now is still one it may run
/// on, for its share).
fn fits_statically(snap: &ClusterSnapshot, pod: PodId, node: NodeId) -> bool {
    let (p, n) = (snap.pod(pod), snap.node(node));
    !n.unschedulable
        && n.taints.is_empty()
        && p.node_selector
            .iter()
            .all(|(k, v)| n.labels.get(k) == Some(v))
}

impl<'s> Start<'s> {
    /// Keeps `state` as the best plan where it is within the cap on duplicates and leaves
    /// fewer nodes outside, or as many with fewer moves.
    fn offer(&self, state: &State<'s>, cap: Cap, best: &mut Option<Witness>) {
        let (outside, _) = self.outside(&state.sim);
        let dups = self.duplicates(&state.count);
        if dups as f64 > cap.duplicates_excess + 1e-9
            || (cap.spread && self.spread(&state.count) > 0)
        {
            return;
        }
        let better = best
            .as_ref()
            .is_none_or(|b| (outside, state.plan.len()) < (b.outside, b.moves));
        if better {
            *best = Some(Witness {
                moves: state.plan.len(),
                outside,
                duplicates_excess: dups,
                plan: state.plan.clone(),
                sequences: 0,
                seconds: 0.0,
            });
        }
    }

    /// Nodes outside the thresholds, and the percentage points outside summed.
    fn outside(&self, sim: &Simulation<'s>) -> (usize, f64) {
        let mut outside = 0;
        let mut points = 0.0;
        for &n in &self.nodes {
            let alloc = &self.snap.node(n).allocatable;
            let load = sim.load(n);
            let pct = |used: i64, of: i64| {
                if of > 0 {
                    100.0 * used as f64 / of as f64
                } else {
                    0.0
                }
            };
            let percent = [pct(load.cpu, alloc.cpu), pct(load.memory, alloc.memory)];
            if self.thresholds.outside(&percent) {
                outside += 1;
            }
            let under = self.thresholds.under(&percent);
            for (r, low, high) in self.thresholds.named() {
                let v = percent[r];
                points += (v - high).max(0.0);
                if under {
                    points += (low - v).max(0.0);
                }
            }
        }
        (outside, points)
    }

    /// Pods above their DoNotSchedule zone spread's skew, summed over the workloads.
    fn spread(&self, count: &[Vec<i64>]) -> i64 {
        let mut excess = 0;
        for (per_node, skew) in count.iter().zip(&self.zone_skew) {
            let Some((skew, zone_of)) = skew else {
                continue;
            };
            let mut per_zone: BTreeMap<usize, i64> =
                zone_of.iter().flatten().map(|&z| (z, 0)).collect();
            for (c, z) in per_node.iter().zip(zone_of) {
                if let Some(z) = z {
                    *per_zone.entry(*z).or_default() += c;
                }
            }
            let min = per_zone.values().copied().min().unwrap_or(0);
            excess += per_zone
                .values()
                .map(|c| (c - min - skew).max(0))
                .sum::<i64>();
        }
        excess
    }

    fn duplicates(&self, count: &[Vec<i64>]) -> i64 {
        count
            .iter()
            .zip(&self.shares)
            .map(|(per_node, share)| per_node.iter().map(|c| (c - share).max(0)).sum::<i64>())
            .sum()
    }

    /// The search's distance: nodes outside, pods above their share (weighing `duplicate`
    /// nodes outside each), points outside.
    fn distance(&self, state: &State<'s>, duplicate: f64) -> f64 {
        let (outside, points) = self.outside(&state.sim);
        OUTSIDE
            * (outside as f64
                + duplicate * self.duplicates(&state.count) as f64
                + DUPLICATES_FIRST * self.spread(&state.count) as f64)
            + points
    }

    /// Every next move from `state`, with the distance it leaves: one pod of each workload
    /// on each node (pods of a workload on a node are alike), its replacement on the node
    /// kube-scheduler picks or any node tied with it, in this cycle or after the evicted
    /// pods are gone.
    fn options(&self, state: &State<'s>, cycles: usize, duplicate: f64) -> Vec<(f64, State<'s>)> {
        let mut out = Vec::new();
        let mut seen: HashSet<(usize, NodeId)> = HashSet::new();
        for &(pod, w) in &self.pods {
            if state.moved.contains(&pod) {
                continue;
            }
            let from = self.snap.pod_node(pod).unwrap();
            if !seen.insert((w, from)) {
                continue;
            }
            let from_i = self.nodes.iter().position(|&n| n == from).unwrap();
            let budgets = self.snap.pdbs_of_pod(pod);
            for new_cycle in [false, true] {
                if new_cycle && state.cycle + 1 >= cycles {
                    continue;
                }
                let allowed = budgets.iter().all(|&b| {
                    let spent = if new_cycle {
                        0
                    } else {
                        state.spent[b as usize]
                    };
                    spent < self.snap.pdbs[b as usize].disruptions_allowed
                });
                if !allowed {
                    continue;
                }
                let mut sim = state.sim.clone();
                if new_cycle {
                    sim.settle();
                }
                sim.remove(pod);
                let prediction = match sim.predict(pod, &self.nodes) {
                    Ok(p) => p,
                    Err(_) if !new_cycle => {
                        sim.settle();
                        match sim.predict(pod, &self.nodes) {
                            Ok(p) => p,
                            Err(_) => continue,
                        }
                    }
                    Err(_) => continue,
                };
                for to in std::iter::once(prediction.node).chain(prediction.alternatives) {
                    let Some(to_i) = self.nodes.iter().position(|&n| n == to) else {
                        continue;
                    };
                    if to_i == from_i || state.lost.contains(&(w, to_i)) {
                        continue;
                    }
                    let mut next = State {
                        sim: sim.clone(),
                        count: state.count.clone(),
                        moved: state.moved.clone(),
                        lost: state.lost.clone(),
                        plan: state.plan.clone(),
                        cycle: state.cycle + usize::from(new_cycle),
                        spent: if new_cycle {
                            vec![0; state.spent.len()]
                        } else {
                            state.spent.clone()
                        },
                    };
                    for &b in budgets {
                        next.spent[b as usize] += 1;
                    }
                    next.sim.place(pod, to);
                    next.count[w][from_i] -= 1;
                    next.count[w][to_i] += 1;
                    next.moved.insert(pod);
                    next.lost.insert((w, from_i));
                    next.plan.push(format!(
                        "cycle {}: {}: {} -> {}",
                        next.cycle + 1,
                        self.snap.pod(pod).name,
                        self.snap.node(from).name,
                        self.snap.node(to).name,
                    ));
                    out.push((self.distance(&next, duplicate), next));
                }
            }
        }
        out
    }
}
