//! OutcomeBalance: plans toward the state the policy describes rather than plugin after
//! plugin. Not an upstream plugin: opt-in, a `balance` plugin a profile enables in place of
//! LowNodeUtilization (and, with its defaults, of RemoveDuplicates and the topology spread
//! plugin's DoNotSchedule repairs); upstream's plugins stay as they are.
//!
//! It searches for the evictions that bring the cluster closest to the policy's outcome with
//! the fewest evictions, one move at a time:
//! - **The outcome.** Every planning node inside `thresholds` / `targetThresholds` (percent of
//!   allocatable per resource, as LowNodeUtilization: over when any resource is above its
//!   target, under when schedulable and every resource is at or below its threshold); with
//!   `topologySpread` (default true), every workload's DoNotSchedule topology spread within
//!   its maxSkew; with `duplicates` (default true), no workload with more pods on a node than
//!   its fair share (its pods over the schedulable planning nodes, rounded up).
//! - **A move** is the eviction of one pod and its replacement where the kube-scheduler
//!   simulation predicts it lands, as the plan so far leaves the cluster. Where kube-scheduler
//!   picks at random among tied nodes, the move counts at its worst tied node: a move counts
//!   only where the replacement lands where the search needs it, ties included.
//! - **The search** is greedy on the gain per eviction: each step plans the move that lowers
//!   the distance to the outcome most, and stops when no move lowers it. The distance weighs,
//!   in this order, the pods above their DoNotSchedule spread, the pods above their fair
//!   share, the nodes outside the thresholds, then the percentage points outside: a hard
//!   spread repair or a duplicate repair may leave one more node outside (availability before
//!   balance). Moves are ranked with a credit toward finishing a node (see [`Model::credit`]);
//!   within one plan no workload loses a pod from a node it gains one on. A repair whose
//!   replacement would take an inside node over its target goes only with a second move
//!   that brings that node back inside ([`Search::room_on`]).
//!   Candidates are bounded from above without the simulator (what leaving their node gains,
//!   plus the most any destination could); the simulator is asked in that order until no
//!   bound can beat the best move found. Pods of one workload on one node with the same
//!   requests are one candidate.
//! - **Safety** is the framework's: every move goes through the profile's evictor (filters,
//!   nodeFit), the limits, PodDisruptionBudgets, gangs and the eviction cooldown; a refused pod
//!   is a candidate not chosen, and the search goes on without it.
//! - **Memory** (continuous mode, within the eviction cooldown): a replacement an earlier
//!   cycle placed is not moved again, no replacement lands on a node its workload lost a pod
//!   from, and no pod leaves a node its workload just gained one on, except to repair its
//!   DoNotSchedule spread (and, for the last, its duplicates) ([`Search::remember_recent`]).
//! - **No trailing moves for points alone**: when the search ends within a run of moves that
//!   changed no node's standing and repaired nothing, the run is taken back ([`Search::run`]).
//! - **Randomized rounds** (`randomizedRounds`): after its rounds, plans a step off the
//!   greedy path now and then (seeded by the round's number), kept where closer to the
//!   outcome ([`Round::closer_than`]).
//! - **Plan ahead** (`planAhead`): where PodDisruptionBudgets held candidates back, a plan
//!   over the next cycles (as if each budget came back every cycle) is made too; where it
//!   leaves fewer nodes outside, the cycle carries out the moves of it the budgets allow now,
//!   in its order, and the others wait ([`OutcomeBalance::over_cycles`]).
//! - **Bounded**: at most `maxEvaluations` simulated placements per cycle (default 20,000);
//!   when it runs out, a note says so and the moves planned so far stand.

use crate::framework::SkipReason;
use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Attempt, Context, EvictError, Overutilized, PlacementTarget, Plugin};
use crate::plugins::node_utilization::{
    amount, at_or_below, capacity, fmt_pct, pct, validate_threshold_pair,
};
use crate::plugins::shared::Namespaces;
use crate::sim::Prediction;
use crate::snapshot::{ClusterSnapshot, NodeId, PodId, WhenUnsatisfiable};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::fmt::Write as _;

/// The plugin's name in a policy.
pub const NAME: &str = "OutcomeBalance";

/// The registry entry: a `balance` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::balance::<OutcomeBalance>(NAME);

/// The default bound on simulated placements per cycle.
pub(crate) const DEFAULT_MAX_EVALUATIONS: u32 = 20_000;

/// How many plans a cycle makes at most, by default (`rounds`). The search is greedy: moves
/// for the thresholds off a node it does not bring inside in the end (the room elsewhere ran
/// out first) spend room that another node needed to come inside. Each later round plans
/// again from the cycle's start without such moves off the nodes the earlier rounds left over
/// (repairs still go), within what is left of `maxEvaluations`; a later round is kept only
/// where it leaves fewer nodes outside and no more spread or duplicate excess. Rounds are
/// made only where the planning nodes hold fewer pods than half of `maxEvaluations`.
pub(crate) const DEFAULT_ROUNDS: u32 = 3;

/// Randomized plans a cycle makes after its `rounds`, by default (`randomizedRounds`), where
/// it makes rounds, within what is left of `maxEvaluations`. In each, one step in two, four or
/// eight (by turns, from a fixed seed per round: the same cluster gets the same plans) plans
/// its second best move instead of the best; one is kept where it leaves the cluster closer
/// to the outcome ([`Round::closer_than`]). The greedy's first moves decide where later
/// replacements land, and the best plan kube-scheduler carries out is often one a step off
/// the greedy path.
pub(crate) const DEFAULT_RANDOMIZED_ROUNDS: u32 = 24;

/// The most `randomizedRounds` a policy may ask for.
const MAX_RANDOMIZED_ROUNDS: u32 = 100;

fn default_randomized_rounds() -> u32 {
    DEFAULT_RANDOMIZED_ROUNDS
}

/// The most `rounds` a policy may ask for.
const MAX_ROUNDS: u32 = 10;

/// What a node outside the thresholds weighs against percentage points: more than any
/// distance a single move can close.
const OUTSIDE: f64 = 1_000.0;

/// What a pod above its DoNotSchedule spread weighs: a hard constraint goes before the
/// thresholds (a repair may leave one more node outside).
const SPREAD: f64 = 2_000.0;

/// What a pod above its workload's fair share on a node weighs: more than a node outside (and
/// than any distance a single move can close), less than a pod above its spread. Spreading
/// replicas is availability (a node lost takes fewer of them), the thresholds are balance:
/// a duplicate is repaired even where that leaves a node outside the thresholds, as upstream's
/// RemoveDuplicates (first in its profiles) does and as the best possible counts it (a limit).
const DUPLICATE: f64 = 1_500.0;

/// How many candidates one step asks the simulator about, at most, once it has found a move
/// (the best of them is planned).
const STEP_EVALUATIONS: u32 = 16;

/// Gains below this are rounding noise, not a reason to evict.
const MIN_GAIN: f64 = 1e-6;

fn yes() -> bool {
    true
}

fn default_max_evaluations() -> u32 {
    DEFAULT_MAX_EVALUATIONS
}

fn default_rounds() -> u32 {
    DEFAULT_ROUNDS
}

/// OutcomeBalance's args (not upstream's). `thresholds` and `targetThresholds` must be given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutcomeBalanceArgs {
    /// `thresholds`: percent per resource at or below which (every resource) a node is
    /// underutilized.
    #[serde(default)]
    pub thresholds: BTreeMap<String, f64>,
    /// `targetThresholds`: percent per resource above which (any resource) a node is overutilized.
    #[serde(default)]
    pub target_thresholds: BTreeMap<String, f64>,
    /// `topologySpread`: also repair workloads' DoNotSchedule topology spread (default true).
    #[serde(default = "yes")]
    pub topology_spread: bool,
    /// `duplicates`: also spread workloads with more pods on a node than their fair share (default
    /// true).
    #[serde(default = "yes")]
    pub duplicates: bool,
    /// `evictableNamespaces`: namespaces whose pods are not evicted (`exclude` only).
    #[serde(default)]
    pub evictable_namespaces: Option<Namespaces>,
    /// `maxEvaluations`: the most simulated placements per cycle (default 20,000; at least 1).
    #[serde(default = "default_max_evaluations")]
    pub max_evaluations: u32,
    /// `rounds`: the most plans per cycle (default 3, 1 to 10), each from the same start;
    /// the best is kept ([`DEFAULT_ROUNDS`]).
    #[serde(default = "default_rounds")]
    pub rounds: u32,
    /// `randomizedRounds`: randomized plans per cycle after `rounds` (default 24, 0 to 100;
    /// none where `rounds` is 1) ([`DEFAULT_RANDOMIZED_ROUNDS`]).
    #[serde(default = "default_randomized_rounds")]
    pub randomized_rounds: u32,
    /// `planAhead`: where PodDisruptionBudgets hold moves back, also plan over the next
    /// cycles, as if each budget came back every cycle, and carry out the moves the budgets
    /// allow now, in that plan's order, where that plan leaves fewer nodes outside than this
    /// cycle's best alone (default true).
    #[serde(default = "yes")]
    pub plan_ahead: bool,
}

/// A validated OutcomeBalance plugin.
#[derive(Debug, Clone)]
pub struct OutcomeBalance {
    /// The plugin's args.
    pub args: OutcomeBalanceArgs,
    /// The thresholds' resources, sorted, with their low and target percentages.
    resources: Vec<String>,
    low: Vec<f64>,
    high: Vec<f64>,
}

impl PluginArgs for OutcomeBalanceArgs {
    fn validate(&self) -> Result<(), ArgsError> {
        validate_threshold_pair(
            &self.thresholds,
            &self.target_thresholds,
            false,
            self.evictable_namespaces.as_ref(),
        )?;
        if !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(ArgsError::new(
                "rounds",
                format!(
                    "{} plans per cycle is out of range: give 1 to {MAX_ROUNDS} (default {DEFAULT_ROUNDS}; 1 keeps the first plan alone)",
                    self.rounds
                ),
            ));
        }
        if self.randomized_rounds > MAX_RANDOMIZED_ROUNDS {
            return Err(ArgsError::new(
                "randomizedRounds",
                format!(
                    "{} randomized plans per cycle is out of range: give 0 to {MAX_RANDOMIZED_ROUNDS} (default {DEFAULT_RANDOMIZED_ROUNDS}; 0 makes none)",
                    self.randomized_rounds
                ),
            ));
        }
        if self.max_evaluations == 0 {
            return Err(ArgsError::new(
                "maxEvaluations",
                "0 simulated placements would plan nothing; give a positive bound (default 20000), or disable the plugin",
            ));
        }
        Ok(())
    }
}

impl FromArgs for OutcomeBalance {
    type Args = OutcomeBalanceArgs;

    fn from_args(args: OutcomeBalanceArgs) -> Result<Self, ArgsError> {
        let resources: Vec<String> = args.thresholds.keys().cloned().collect();
        let low = resources.iter().map(|r| args.thresholds[r]).collect();
        let high = resources
            .iter()
            .map(|r| args.target_thresholds[r])
            .collect();
        Ok(OutcomeBalance {
            args,
            resources,
            low,
            high,
        })
    }
}

/// One workload's topology spread rule (a DoNotSchedule constraint of its pods), over the
/// planning nodes.
#[derive(Debug, Clone)]
struct SpreadRule {
    key: String,
    max_skew: i64,
    /// Each planning node's domain (by position in the model's nodes); None: not counted.
    domain: Vec<Option<u32>>,
    domains: usize,
    names: Vec<String>,
}

/// One workload (pods of one controller): how many of its pods each planning node holds.
#[derive(Debug, Clone)]
struct Workload {
    name: String,
    counts: HashMap<usize, i64>,
    total: i64,
    spread: Vec<SpreadRule>,
    /// The most one of its pods requests of each threshold resource.
    request: Vec<i64>,
    /// Whether a pod of it is above the target of every planning node on its own.
    oversized: bool,
}

/// The distance of the cluster to the policy's outcome, kept as moves are planned.
#[derive(Clone)]
struct Model<'s> {
    snap: &'s ClusterSnapshot,
    /// The planning nodes; a node's position here is its index in the vectors below.
    nodes: Vec<NodeId>,
    position: HashMap<NodeId, usize>,
    schedulable: Vec<bool>,
    capacity: Vec<Vec<i64>>,
    load: Vec<Vec<i64>>,
    low: Vec<f64>,
    high: Vec<f64>,
    resources: Vec<String>,
    workloads: Vec<Workload>,
    workload_of: HashMap<PodId, usize>,
    /// The fair share per node a duplicate counts above (None: duplicates not counted).
    duplicates: bool,
    schedulable_nodes: i64,
    /// Per resource, the largest target amount among the planning nodes: a pod requesting
    /// more is above the target wherever it runs ([`Model::is_oversized`]).
    roomiest: Vec<i64>,
    /// Per node, how many of its pods are above the target on their own: the node is over
    /// for as long as it holds one, whatever else leaves it.
    oversized: Vec<i64>,
    /// Per node and resource, the most it could still receive without a workload going
    /// above its fair share there (None: duplicates not counted, no bound).
    receivable: Option<Vec<Vec<i64>>>,
}

/// What a node holds, as the standing against the thresholds reads it.
struct Holding<'a> {
    load: &'a [i64],
    /// Pods above the target on their own.
    oversized: i64,
    /// What it could still receive within its workloads' fair shares (None: no bound).
    receivable: Option<&'a [i64]>,
}

/// How a node stands against the thresholds.
///
/// The percentage points outside are a node's way in, counted only where there is one: a node
/// over for good (it holds a pod above the target on its own, which would put any node it
/// moved to over) or under for good (every workload's fair share there would still leave it at
/// or below its thresholds) counts as outside, without points. A move that only closes such
/// points would bring no node inside, however many followed it.
struct Standing {
    over: bool,
    under: bool,
    distance: f64,
    /// Outside with no way in.
    for_good: bool,
}

impl Standing {
    fn outside(&self) -> bool {
        self.over || self.under
    }
    fn badness(&self) -> f64 {
        if self.outside() {
            OUTSIDE + self.distance
        } else {
            0.0
        }
    }
}

impl<'s> Model<'s> {
    /// What node `i` holds as the plan stands.
    fn holding(&self, i: usize) -> Holding<'_> {
        Holding {
            load: &self.load[i],
            oversized: self.oversized[i],
            receivable: self.receivable.as_ref().map(|r| r[i].as_slice()),
        }
    }

    fn standing(&self, i: usize, h: &Holding<'_>) -> Standing {
        let cap = &self.capacity[i];
        let load = h.load;
        let mut over = false;
        let mut distance = 0.0;
        for r in 0..self.resources.len() {
            let p = pct(load[r], cap[r]);
            if p > self.high[r] && load[r] > amount(cap[r], self.high[r]) {
                over = true;
                distance += p - self.high[r];
            }
        }
        if h.oversized > 0 {
            // Over for good: no way in to count.
            distance = 0.0;
        }
        let under = self.schedulable[i]
            && (0..self.resources.len()).all(|r| at_or_below(load[r], cap[r], self.low[r]));
        let for_good = h.receivable.is_some_and(|recv| {
            (0..self.resources.len()).all(|r| at_or_below(load[r] + recv[r], cap[r], self.low[r]))
        });
        if under && !for_good {
            for r in 0..self.resources.len() {
                distance += (self.low[r] - pct(load[r], cap[r])).max(0.0);
            }
        }
        Standing {
            over,
            under,
            distance,
            for_good: (over && h.oversized > 0) || (under && for_good),
        }
    }

    /// Whether `i` is outside the thresholds as the plan stands.
    fn is_outside(&self, i: usize) -> bool {
        self.standing(i, &self.holding(i)).outside()
    }

    /// The nodes outside the thresholds with no way in as the plan stands: over for good (a
    /// pod above the target on its own), under for good (too little to take within fair
    /// shares).
    fn outside_for_good(&self) -> (usize, usize) {
        let mut n = (0, 0);
        for i in 0..self.nodes.len() {
            let s = self.standing(i, &self.holding(i));
            if s.for_good {
                if s.over {
                    n.0 += 1;
                } else {
                    n.1 += 1;
                }
            }
        }
        n
    }

    /// Whether `i` is over its targets as the plan stands.
    fn is_over(&self, i: usize) -> bool {
        self.standing(i, &self.holding(i)).over
    }

    /// Whether `i` is over its targets with `pod` added (`sign` 1) or taken off (-1).
    fn over_with(&self, i: usize, pod: PodId, sign: i64) -> bool {
        let req = &self.snap.pod(pod).requests;
        self.resources.iter().enumerate().any(|(r, name)| {
            let (load, cap) = (self.load[i][r] + sign * req.get(name), self.capacity[i][r]);
            pct(load, cap) > self.high[r] && load > amount(cap, self.high[r])
        })
    }

    fn node_badness(&self, i: usize) -> f64 {
        self.standing(i, &self.holding(i)).badness()
    }

    /// The node's badness with `pod` added (`sign` 1) or taken off (-1).
    fn node_badness_with(&self, i: usize, pod: PodId, sign: i64) -> f64 {
        let req = &self.snap.pod(pod).requests;
        let load: Vec<i64> = self
            .resources
            .iter()
            .zip(&self.load[i])
            .map(|(r, l)| l + sign * req.get(r))
            .collect();
        let oversized = self.oversized[i] + if self.is_oversized(pod) { sign } else { 0 };
        let receivable = self.receivable.as_ref().map(|recv| {
            let mut recv = recv[i].clone();
            if let Some(&wi) = self.workload_of.get(&pod) {
                let w = &self.workloads[wi];
                let c = w.counts.get(&i).copied().unwrap_or(0);
                let room = self.room(w, c + sign) - self.room(w, c);
                for (v, q) in recv.iter_mut().zip(&w.request) {
                    *v += room * q;
                }
            }
            recv
        });
        self.standing(
            i,
            &Holding {
                load: &load,
                oversized,
                receivable: receivable.as_deref(),
            },
        )
        .badness()
    }

    /// Whether `pod` requests more of a threshold resource than the roomiest planning node's
    /// target: it is above the target wherever it runs.
    fn is_oversized(&self, pod: PodId) -> bool {
        let req = &self.snap.pod(pod).requests;
        self.resources
            .iter()
            .zip(&self.roomiest)
            .any(|(r, &most)| req.get(r) > most)
    }

    /// How many more pods of `w` a node holding `count` of them may take within its fair
    /// share (none for a workload whose pods are above the target on their own: they bring
    /// no node inside).
    fn room(&self, w: &Workload, count: i64) -> i64 {
        if w.oversized {
            0
        } else {
            (self.fair_share(w).max(1) - count).max(0)
        }
    }

    /// Per node and resource, what it could still receive within every workload's fair share:
    /// the sum over workloads of their room there times their request.
    fn receivable_per_node(&self) -> Vec<Vec<i64>> {
        let mut all = vec![0i64; self.resources.len()];
        for w in &self.workloads {
            let room = self.room(w, 0);
            for (v, q) in all.iter_mut().zip(&w.request) {
                *v += room * q;
            }
        }
        let mut per = vec![all; self.nodes.len()];
        for w in &self.workloads {
            for (&i, &c) in &w.counts {
                let taken = self.room(w, 0) - self.room(w, c);
                for (v, q) in per[i].iter_mut().zip(&w.request) {
                    *v -= taken * q;
                }
            }
        }
        per
    }

    fn fair_share(&self, w: &Workload) -> i64 {
        (w.total + self.schedulable_nodes - 1) / self.schedulable_nodes.max(1)
    }

    /// Pods of the workload above its fair share on their nodes.
    fn duplicate_excess(&self, w: &Workload, counts: &HashMap<usize, i64>) -> i64 {
        if !self.duplicates {
            return 0;
        }
        let share = self.fair_share(w).max(1);
        counts.values().map(|c| (c - share).max(0)).sum()
    }

    /// Pods of the workload above what its spread rules allow in their domains.
    fn spread_excess(w: &Workload, counts: &HashMap<usize, i64>) -> i64 {
        let mut excess = 0;
        for rule in &w.spread {
            let mut per = vec![0i64; rule.domains];
            for (&i, &c) in counts {
                if let Some(d) = rule.domain[i] {
                    per[d as usize] += c;
                }
            }
            let Some(&min) = per.iter().min() else {
                continue;
            };
            excess += per
                .iter()
                .map(|c| (c - min - rule.max_skew).max(0))
                .sum::<i64>();
        }
        excess
    }

    fn workload_badness(&self, w: &Workload, counts: &HashMap<usize, i64>) -> f64 {
        DUPLICATE * self.duplicate_excess(w, counts) as f64
            + SPREAD * Self::spread_excess(w, counts) as f64
    }

    /// What moving `pod` from its node to `to` (a planning node's position, or None: a node
    /// outside the planning nodes) lowers the distance by; negative where it raises it.
    fn gain(&self, pod: PodId, from: usize, to: Option<usize>) -> f64 {
        if to == Some(from) {
            return 0.0;
        }
        let mut gain = self.node_badness(from) - self.node_badness_with(from, pod, -1);
        if let Some(t) = to {
            gain += self.node_badness(t) - self.node_badness_with(t, pod, 1);
        }
        gain + self.workload_gain(pod, from, to)
    }

    /// What moving `pod` from `from` to `to` lowers its workload's spread and duplicate
    /// excess by (weighed); 0 for a pod of no workload.
    fn workload_gain(&self, pod: PodId, from: usize, to: Option<usize>) -> f64 {
        let Some(&wi) = self.workload_of.get(&pod) else {
            return 0.0;
        };
        let w = &self.workloads[wi];
        let mut after = w.counts.clone();
        *after.entry(from).or_default() -= 1;
        if let Some(t) = to {
            *after.entry(t).or_default() += 1;
        }
        self.workload_badness(w, &w.counts) - self.workload_badness(w, &after)
    }

    /// Whether moving `pod` from `from` to `to` changes what the outcome counts: a node
    /// inside or outside the thresholds, or its workload's spread or duplicate excess.
    fn changes_standing(&self, pod: PodId, from: usize, to: Option<usize>) -> bool {
        let outside = |badness: f64| badness >= OUTSIDE;
        outside(self.node_badness(from)) != outside(self.node_badness_with(from, pod, -1))
            || to.is_some_and(|t| {
                outside(self.node_badness(t)) != outside(self.node_badness_with(t, pod, 1))
            })
            || self.workload_gain(pod, from, to).abs() > MIN_GAIN
    }

    /// Whether moving `pod` from `from` to `to` lowers its workload's DoNotSchedule spread
    /// excess (a hard constraint repaired).
    fn repairs_spread(&self, pod: PodId, from: usize, to: Option<usize>) -> bool {
        let Some(&wi) = self.workload_of.get(&pod) else {
            return false;
        };
        let w = &self.workloads[wi];
        if w.spread.is_empty() {
            return false;
        }
        let mut after = w.counts.clone();
        *after.entry(from).or_default() -= 1;
        if let Some(t) = to {
            *after.entry(t).or_default() += 1;
        }
        Self::spread_excess(w, &after) < Self::spread_excess(w, &w.counts)
    }

    /// The most any destination could gain from receiving `pod`, before the cap of the
    /// worst underutilized node's badness: unbounded for a pod that requests a resource of
    /// the thresholds (it may bring an underutilized node inside), nothing for one that
    /// requests none.
    fn destination_bound(&self, pod: PodId) -> f64 {
        let req = &self.snap.pod(pod).requests;
        if self.resources.iter().any(|r| req.get(r) > 0) {
            f64::INFINITY
        } else {
            0.0
        }
    }

    /// What moving `pod` off its node can gain at most, wherever it goes: its node's
    /// badness it takes away, and its workload's whole excess.
    fn local_bound(&self, pod: PodId, from: usize) -> f64 {
        let mut b = self.node_badness(from) - self.node_badness_with(from, pod, -1);
        if let Some(&wi) = self.workload_of.get(&pod) {
            let w = &self.workloads[wi];
            b += self.workload_badness(w, &w.counts);
        }
        b
    }

    /// What a move off an over node that stays over earns toward ranking, not toward the
    /// distance: the node's share of [`OUTSIDE`] per move still needed to bring it under its
    /// targets, counted in pods like this one (none where pods like it never would). Greedy
    /// on the distance alone spreads moves over every hot node, each closing a few points;
    /// this ranks first the moves that bring one node inside with the fewest evictions.
    fn credit(&self, pod: PodId, from: usize) -> f64 {
        if self.oversized[from] > i64::from(self.is_oversized(pod)) {
            // Over for good, whatever else leaves it.
            return 0.0;
        }
        let req = &self.snap.pod(pod).requests;
        let mut needed = 0i64;
        for (r, name) in self.resources.iter().enumerate() {
            let cap = self.capacity[from][r];
            let left = self.load[from][r] - req.get(name);
            let excess = left - amount(cap, self.high[r]);
            if excess <= 0 || pct(left, cap) <= self.high[r] {
                continue;
            }
            let per = req.get(name);
            if per <= 0 {
                return 0.0;
            }
            needed = needed.max((excess + per - 1) / per);
        }
        if needed == 0 {
            // The move brings the node inside: the distance counts it already.
            return 0.0;
        }
        OUTSIDE / (needed + 1) as f64
    }

    fn totals(&self) -> (usize, i64, i64) {
        let outside = (0..self.nodes.len())
            .filter(|&i| self.is_outside(i))
            .count();
        let spread = self
            .workloads
            .iter()
            .map(|w| Self::spread_excess(w, &w.counts))
            .sum();
        let dup = self
            .workloads
            .iter()
            .map(|w| self.duplicate_excess(w, &w.counts))
            .sum();
        (outside, spread, dup)
    }

    /// Why a move is planned: what it improves.
    fn describe(&self, pod: PodId, from: usize, to: Option<usize>) -> String {
        let mut parts = Vec::new();
        let s = self.standing(from, &self.holding(from));
        let name = |i: usize| self.snap.node(self.nodes[i]).name.to_string();
        let usage = |i: usize| {
            self.resources
                .iter()
                .enumerate()
                .map(|(r, n)| format!("{n} {}", fmt_pct(pct(self.load[i][r], self.capacity[i][r]))))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if s.over {
            parts.push(format!(
                "{} is over its target ({})",
                name(from),
                usage(from)
            ));
        }
        if let Some(t) = to {
            if self.standing(t, &self.holding(t)).under {
                parts.push(format!("{} is underutilized ({})", name(t), usage(t)));
            }
            if self.is_oversized(pod) {
                parts.push(format!(
                    "the pod requests more than any node's target on its own, so {} holds it over its target instead of {}",
                    name(t),
                    name(from)
                ));
            }
        }
        if let Some(&wi) = self.workload_of.get(&pod) {
            let w = &self.workloads[wi];
            let mut after = w.counts.clone();
            *after.entry(from).or_default() -= 1;
            if let Some(t) = to {
                *after.entry(t).or_default() += 1;
            }
            if Self::spread_excess(w, &after) < Self::spread_excess(w, &w.counts) {
                for rule in &w.spread {
                    let mut per = vec![0i64; rule.domains];
                    for (&i, &c) in &w.counts {
                        if let Some(d) = rule.domain[i] {
                            per[d as usize] += c;
                        }
                    }
                    let counts: Vec<String> = rule
                        .names
                        .iter()
                        .zip(&per)
                        .map(|(n, c)| format!("{n}: {c}"))
                        .collect();
                    parts.push(format!(
                        "{} is spread beyond its maxSkew {} over {} ({})",
                        w.name,
                        rule.max_skew,
                        rule.key,
                        counts.join(", ")
                    ));
                }
            }
            if self.duplicate_excess(w, &after) < self.duplicate_excess(w, &w.counts) {
                parts.push(format!(
                    "{} has {} pods on {}, above its share of {} per node",
                    w.name,
                    w.counts.get(&from).copied().unwrap_or(0),
                    name(from),
                    self.fair_share(w).max(1)
                ));
            }
        }
        let dest = to.map_or("a node outside the planning nodes".to_string(), name);
        format!(
            "moved toward the policy's outcome, its replacement predicted on {dest}: {}",
            if parts.is_empty() {
                "closer to the thresholds".to_string()
            } else {
                parts.join("; ")
            }
        )
    }

    /// Takes a planned eviction into the model: the pod off its node, its replacement on its
    /// destination (the simulation's loads are the truth).
    fn absorb(
        &mut self,
        sim: &crate::sim::Simulation<'_>,
        pod: PodId,
        node: NodeId,
        to: Option<NodeId>,
    ) {
        for n in std::iter::once(node).chain(to) {
            if let Some(&i) = self.position.get(&n) {
                let l = sim.load(n);
                self.load[i] = self.resources.iter().map(|r| l.get(r)).collect();
            }
        }
        let from = self.position.get(&node).copied();
        let dest = to.and_then(|t| self.position.get(&t).copied());
        if self.is_oversized(pod) {
            for (i, sign) in [(from, -1), (dest, 1)] {
                if let Some(i) = i {
                    self.oversized[i] += sign;
                }
            }
        }
        if let Some(&wi) = self.workload_of.get(&pod) {
            for (i, sign) in [(from, -1), (dest, 1)] {
                let Some(i) = i else { continue };
                let c = self.workloads[wi].counts.get(&i).copied().unwrap_or(0);
                let room =
                    self.room(&self.workloads[wi], c + sign) - self.room(&self.workloads[wi], c);
                if let Some(recv) = self.receivable.as_mut() {
                    for (v, q) in recv[i].iter_mut().zip(&self.workloads[wi].request) {
                        *v += room * q;
                    }
                }
                *self.workloads[wi].counts.entry(i).or_default() += sign;
            }
        }
    }
}

/// A candidate: pods of one workload on one node with the same requests, most evictable
/// first.
struct Class {
    from: usize,
    pods: Vec<PodId>,
    /// Replacements of pods evicted within the eviction cooldown: moved again only to
    /// repair their workload's DoNotSchedule spread ([`Context::replacement_hold`]).
    held: bool,
}

impl Class {
    /// The pods of the classes held by the cooldown (replacements placed within it).
    fn held(classes: &[Class]) -> Vec<PodId> {
        classes
            .iter()
            .filter(|c| c.held)
            .flat_map(|c| c.pods.iter().copied())
            .collect()
    }
}

/// A class in the search's heap: its priority (a bound, or the exact gain of its move as of
/// step `exact_at`), and the class's version it was computed for (older entries are stale).
struct Entry {
    priority: f64,
    class: usize,
    version: u32,
    exact_at: Option<usize>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Highest priority first; among equal ones an exact gain before a bound, then the
    /// earlier class (eviction order).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.priority
            .total_cmp(&other.priority)
            .then_with(|| self.exact_at.is_some().cmp(&other.exact_at.is_some()))
            .then_with(|| other.class.cmp(&self.class))
    }
}

impl OutcomeBalance {
    fn model<'s>(&self, cx: &Context<'_, 's>, nodes: &[NodeId]) -> Model<'s> {
        let snap = cx.snap();
        let sim = cx.placement().sim();
        let position: HashMap<NodeId, usize> =
            nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let schedulable: Vec<bool> = nodes.iter().map(|&n| !snap.node(n).unschedulable).collect();
        let capacity: Vec<Vec<i64>> = nodes
            .iter()
            .map(|&n| {
                self.resources
                    .iter()
                    .map(|r| capacity(snap.node(n), r))
                    .collect()
            })
            .collect();
        let load = nodes
            .iter()
            .map(|&n| {
                let l = sim.load(n);
                self.resources.iter().map(|r| l.get(r)).collect()
            })
            .collect();
        let roomiest: Vec<i64> = (0..self.resources.len())
            .map(|r| {
                capacity
                    .iter()
                    .map(|cap| amount(cap[r], self.high[r]))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let oversized_pod = |p: PodId| {
            let req = &snap.pod(p).requests;
            self.resources
                .iter()
                .zip(&roomiest)
                .any(|(r, &most)| req.get(r) > most)
        };
        let mut workloads: Vec<Workload> = Vec::new();
        let mut by_uid: HashMap<&str, usize> = HashMap::new();
        let mut workload_of = HashMap::new();
        let mut oversized = vec![0i64; nodes.len()];
        for (i, &n) in nodes.iter().enumerate() {
            for p in sim.pods_on(n) {
                let big = oversized_pod(p);
                oversized[i] += i64::from(big);
                let pod = snap.pod(p);
                let Some(owner) = pod.controller() else {
                    continue;
                };
                if pod.is_daemonset_pod() {
                    continue;
                }
                let wi = *by_uid.entry(&owner.uid).or_insert_with(|| {
                    workloads.push(Workload {
                        name: format!("{}/{} {}", pod.namespace, owner.name, owner.kind),
                        counts: HashMap::new(),
                        total: 0,
                        spread: if self.args.topology_spread {
                            spread_rules(snap, nodes, pod)
                        } else {
                            Vec::new()
                        },
                        request: vec![0; self.resources.len()],
                        oversized: false,
                    });
                    workloads.len() - 1
                });
                let w = &mut workloads[wi];
                w.total += 1;
                *w.counts.entry(i).or_default() += 1;
                w.oversized |= big;
                for (q, r) in w.request.iter_mut().zip(&self.resources) {
                    *q = (*q).max(pod.requests.get(r));
                }
                workload_of.insert(p, wi);
            }
        }
        let schedulable_nodes = schedulable.iter().filter(|s| **s).count() as i64;
        let mut model = Model {
            snap,
            nodes: nodes.to_vec(),
            position,
            schedulable,
            capacity,
            load,
            low: self.low.clone(),
            high: self.high.clone(),
            resources: self.resources.clone(),
            workloads,
            workload_of,
            duplicates: self.args.duplicates,
            schedulable_nodes,
            roomiest,
            oversized,
            receivable: None,
        };
        if model.duplicates {
            model.receivable = Some(model.receivable_per_node());
        }
        model
    }
}

/// A pod's DoNotSchedule spread constraints that select its own pods, over the planning nodes.
fn spread_rules(
    snap: &ClusterSnapshot,
    nodes: &[NodeId],
    pod: &crate::snapshot::Pod,
) -> Vec<SpreadRule> {
    let mut rules = Vec::new();
    for c in pod.topology_spread.iter() {
        if c.when_unsatisfiable != WhenUnsatisfiable::DoNotSchedule {
            continue;
        }
        if !c
            .label_selector
            .as_ref()
            .is_some_and(|s| s.matches(&pod.labels))
        {
            continue;
        }
        let mut names: Vec<String> = Vec::new();
        let domain = nodes
            .iter()
            .map(|&n| {
                let node = snap.node(n);
                if !crate::sim::matches_node_inclusion_policies(
                    pod,
                    node,
                    c.node_affinity_policy,
                    c.node_taints_policy,
                ) {
                    return None;
                }
                let v = node.labels.get(&c.topology_key)?;
                let at = match names.iter().position(|x| x == v) {
                    Some(at) => at,
                    None => {
                        names.push(v.to_string());
                        names.len() - 1
                    }
                };
                Some(at as u32)
            })
            .collect();
        rules.push(SpreadRule {
            key: c.topology_key.to_string(),
            max_skew: i64::from(c.max_skew.max(1)),
            domain,
            domains: names.len(),
            names,
        });
    }
    rules
}

impl OutcomeBalance {
    /// The targets of the evictor's destination checks (each planning node's target
    /// thresholds, the nodes not over them wanted), and the nodes found over them.
    fn publish_targets(&self, cx: &mut Context<'_, '_>, model: &Model<'_>) {
        let snap = cx.snap();
        let targets = (0..model.nodes.len())
            .map(|i| PlacementTarget {
                node: model.nodes[i],
                limit: self
                    .resources
                    .iter()
                    .enumerate()
                    .map(|(r, name)| (name.clone(), amount(model.capacity[i][r], self.high[r])))
                    .collect(),
                wanted: !model.is_over(i),
            })
            .collect();
        cx.set_placement_targets(targets);
        let over: Vec<String> = (0..model.nodes.len())
            .filter(|&i| model.is_over(i))
            .map(|i| snap.node(model.nodes[i]).name.to_string())
            .collect();
        cx.report(Overutilized(over));
    }

    /// The candidates: evictable pods of the planning nodes, one class per workload, node
    /// and requests; and how many pods were left out because they go only with their whole
    /// gang.
    fn candidates(&self, cx: &Context<'_, '_>, model: &Model<'_>) -> (Vec<Class>, usize) {
        let snap = cx.snap();
        let mut classes: Vec<Class> = Vec::new();
        let mut class_of: HashMap<(usize, usize, String), usize> = HashMap::new();
        let mut whole = 0usize;
        for (i, &n) in model.nodes.iter().enumerate() {
            let mut pods: Vec<PodId> = cx.pods_on_node(n).collect();
            cx.sort_by_eviction_order(&mut pods);
            for p in pods {
                let pod = snap.pod(p);
                if !pod.is_active() {
                    continue;
                }
                if let Some(ns) = &self.args.evictable_namespaces {
                    if !ns.allows(&pod.namespace) {
                        continue;
                    }
                }
                if cx.filter(p).is_err() {
                    continue;
                }
                if snap.goes_whole(p, cx.evicts_whole_gangs()) {
                    whole += 1;
                    continue;
                }
                // A replacement of a pod evicted within the cooldown: moved again, it would
                // restart the same replica twice (churn).
                let held = cx.replacement_hold(p).is_err();
                let key = match model.workload_of.get(&p) {
                    Some(&w) => (i, w, format!("{held} {:?}", pod.requests)),
                    None => (i, usize::MAX - p.index(), String::new()),
                };
                let at = *class_of.entry(key).or_insert_with(|| {
                    classes.push(Class {
                        from: i,
                        pods: Vec::new(),
                        held,
                    });
                    classes.len() - 1
                });
                classes[at].pods.push(p);
            }
        }
        (classes, whole)
    }
}

/// What the search does after a candidate was asked of the simulator or refused.
enum Flow {
    /// Go on with the next entry of the heap.
    Next,
    /// The cycle's total limit is reached.
    Stop,
    /// `maxEvaluations` is spent.
    OutOfBudget,
}

/// The lazy greedy search over the candidate classes: every class enters with its bound;
/// the top entry is asked of the simulator and goes back with its exact gain, until the top
/// entry's gain is exact for the cluster as it stands (asked since the last planned move):
/// that move is planned. A planned move changes two nodes and a workload: the classes there
/// enter again with fresh bounds, the others keep their gains until they reach the top.
struct Search {
    classes: Vec<Class>,
    /// Each class's bound without the simulator, in two parts: what leaving its node and its
    /// workload's excess can gain (kept until its node or workload changes), and the most a
    /// destination could (its requests' share of the smallest node, at most).
    destination_bound: Vec<f64>,
    by_node: Vec<Vec<usize>>,
    by_workload: HashMap<usize, Vec<usize>>,
    version: Vec<u32>,
    heap: BinaryHeap<Entry>,
    /// Per workload, the nodes it loses a pod from and the nodes a replacement of it may
    /// land on (the predicted node and its ties) in this plan: the two stay apart, since a
    /// pod taken off a node its workload gains one on (or the reverse) is an eviction that
    /// leaves the counts as they were, and its replacement looks restarted onto its source.
    left: HashSet<(usize, usize)>,
    arrived: HashSet<(usize, usize)>,
    /// The same from earlier cycles, within the eviction cooldown (see
    /// [`Search::remember_recent`]): held to as well, except by a move that repairs its
    /// workload's DoNotSchedule spread (or, off a node gained, its duplicates).
    left_before: HashSet<(usize, usize)>,
    arrived_before: HashSet<(usize, usize)>,
    /// Nodes whose eviction limit is reached.
    exhausted: Vec<bool>,
    evaluations: u32,
    planned: usize,
    /// Moves planned so far: an entry's gain is exact for the step it was asked at.
    step: usize,
    step_evaluations: u32,
    step_best: Option<(f64, usize)>,
    /// The second best move asked about in this step.
    step_second: Option<(f64, usize)>,
    /// In a randomized round, the state of its generator (splitmix64): now and then the
    /// second best move of a step is planned instead of the best.
    shuffle: Option<u64>,
    /// One step in `odds` plans its second best move, in a randomized round.
    odds: u64,
    /// Nodes whose pods move only to repair their workload in this round: an earlier round
    /// moved pods off them for the thresholds and left them over anyway.
    excluded: HashSet<usize>,
    /// Nodes this round moved a pod off for the thresholds alone (no repair).
    balance_sources: HashSet<usize>,
    /// Whether trailing moves that only close percentage points are taken back at the end
    /// (each run of them costs a copy of the planning state).
    trim: bool,
    /// Moves taken back so.
    trimmed: usize,
    /// Candidates refused because their PodDisruptionBudget allowed no more now.
    budget_refused: usize,
}

/// The worst badness among the nodes under their low thresholds.
fn most_under(model: &Model<'_>) -> f64 {
    (0..model.nodes.len())
        .filter(|&i| model.standing(i, &model.holding(i)).under)
        .map(|i| model.node_badness(i))
        .fold(0.0, f64::max)
}

impl Search {
    fn new(classes: Vec<Class>, model: &Model<'_>) -> Search {
        let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); model.nodes.len()];
        let mut by_workload: HashMap<usize, Vec<usize>> = HashMap::new();
        for (k, c) in classes.iter().enumerate() {
            by_node[c.from].push(k);
            if let Some(&w) = model.workload_of.get(&c.pods[0]) {
                by_workload.entry(w).or_default().push(k);
            }
        }
        let destination_bound = classes
            .iter()
            .map(|c| model.destination_bound(c.pods[0]))
            .collect();
        let mut search = Search {
            version: vec![0; classes.len()],
            heap: BinaryHeap::with_capacity(classes.len()),
            classes,
            destination_bound,
            by_node,
            by_workload,
            left: HashSet::new(),
            arrived: HashSet::new(),
            left_before: HashSet::new(),
            arrived_before: HashSet::new(),
            exhausted: vec![false; model.nodes.len()],
            evaluations: 0,
            planned: 0,
            step: 0,
            step_evaluations: 0,
            step_best: None,
            step_second: None,
            shuffle: None,
            odds: 4,
            excluded: HashSet::new(),
            balance_sources: HashSet::new(),
            trim: false,
            trimmed: 0,
            budget_refused: 0,
        };
        let under = most_under(model);
        for k in 0..search.classes.len() {
            search.push_bound(model, k, under);
        }
        search
    }

    /// In a randomized round, true one time in four (a step plans its second best move).
    fn coin(&mut self) -> bool {
        let Some(state) = self.shuffle.as_mut() else {
            return false;
        };
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % self.odds == 0
    }

    /// Carries the run's memory of earlier cycles into this plan, much as if their moves were
    /// this plan's: a workload's replacements placed within the eviction cooldown count as
    /// pods it gained on their nodes (none of its pods leaves those), and the nodes it lost
    /// pods from within the cooldown as nodes it left (none of its replacements may land
    /// there), except for a move that repairs its DoNotSchedule spread (a hard constraint)
    /// or, off a node it gained pods on, its duplicates. Without this, the next cycles undo
    /// what the earlier ones did: a replica moved twice, or one restarted where its workload
    /// was just moved off.
    fn remember_recent(&mut self, cx: &Context<'_, '_>, model: &Model<'_>) {
        if cx.history().recent.is_empty() {
            return;
        }
        let snap = cx.snap();
        let mut asked: HashSet<usize> = HashSet::new();
        for (&p, &w) in &model.workload_of {
            if cx.replacement_hold(p).is_err() {
                if let Some(&i) = snap.pod_node(p).and_then(|n| model.position.get(&n)) {
                    self.arrived_before.insert((w, i));
                }
            }
            if asked.insert(w) {
                for n in cx.left_recently(p) {
                    if let Some(&i) = model.position.get(&n) {
                        self.left_before.insert((w, i));
                    }
                }
            }
        }
    }

    /// Puts class `k` on the heap with its bound, for its current version.
    fn push_bound(&mut self, model: &Model<'_>, k: usize, under: f64) {
        let c = &self.classes[k];
        let priority = model.local_bound(c.pods[0], c.from)
            + model.credit(c.pods[0], c.from)
            + under.min(self.destination_bound[k]);
        self.heap.push(Entry {
            priority,
            class: k,
            version: self.version[k],
            exact_at: None,
        });
    }

    /// Plans moves until no class gains, the limits stop it or `max_evaluations` simulated
    /// placements are spent (then true).
    fn run<'s>(
        &mut self,
        max_evaluations: u32,
        cx: &mut Context<'_, 's>,
        model: &mut Model<'s>,
    ) -> bool {
        let mut tail = None;
        let out = self.search(max_evaluations, cx, model, &mut tail);
        if let Some(t) = tail {
            // The moves since changed no node's standing and repaired nothing: taken back.
            self.trimmed = self.planned - t.planned;
            self.planned = t.planned;
            self.balance_sources = t.balance_sources;
            cx.restore(t.state);
            *model = t.model;
        }
        out
    }

    /// [`Search::run`] without taking back the trailing moves that only close percentage
    /// points (the plan as it stood before them is in `tail`).
    fn search<'s>(
        &mut self,
        max_evaluations: u32,
        cx: &mut Context<'_, 's>,
        model: &mut Model<'s>,
        tail: &mut Option<Tail<'s>>,
    ) -> bool {
        while let Some(top) = self.heap.pop() {
            let k = top.class;
            if top.version != self.version[k]
                || self.classes[k].pods.is_empty()
                || self.exhausted[self.classes[k].from]
            {
                continue;
            }
            if top.priority <= MIN_GAIN {
                break;
            }
            let k = if top.exact_at == Some(self.step) {
                k
            } else if let Some((_, best)) = self
                .step_best
                .filter(|_| self.step_evaluations >= STEP_EVALUATIONS)
            {
                // Enough candidates asked this step: the best of them is planned.
                self.heap.push(top);
                best
            } else {
                match self.evaluate(max_evaluations, cx, model, k) {
                    Flow::Next => continue,
                    Flow::Stop => break,
                    Flow::OutOfBudget => return true,
                }
            };
            let k = match (self.step_second, self.coin()) {
                (Some((_, second)), true)
                    if second != k && !self.classes[second].pods.is_empty() =>
                {
                    // The best goes back with its bound, to be asked again.
                    let under = most_under(model);
                    self.version[k] += 1;
                    self.push_bound(model, k, under);
                    second
                }
                _ => k,
            };
            self.step_evaluations = 0;
            self.step_best = None;
            self.step_second = None;
            if !self.plan(max_evaluations, cx, model, k, tail) {
                break;
            }
        }
        false
    }

    /// Asks the simulator for class `k`'s move (or offers a refused candidate once, so that
    /// its refusal is on record), and puts the class back with its exact gain.
    fn evaluate(
        &mut self,
        max_evaluations: u32,
        cx: &mut Context<'_, '_>,
        model: &Model<'_>,
        k: usize,
    ) -> Flow {
        let (pod, from) = (self.classes[k].pods[0], self.classes[k].from);
        let workload = model.workload_of.get(&pod).copied();
        if workload.is_some_and(|w| self.arrived.contains(&(w, from))) {
            // Its workload gains a pod on this node in this plan.
            self.classes[k].pods.clear();
            return Flow::Next;
        }
        // A candidate the limits, budgets, gangs or the cooldown refuse now is offered
        // once, so the refusal is on record as a candidate not chosen, and its class
        // leaves the search (its pods share the workload, the node and the budget).
        let refused = match cx.ledger().admit(pod) {
            Err(EvictError::NodeLimit(_)) => {
                self.exhausted[from] = true;
                return Flow::Next;
            }
            Err(EvictError::TotalLimit(_)) => return Flow::Stop,
            Err(EvictError::DisruptionBudget(_)) => {
                self.budget_refused += 1;
                true
            }
            Err(_) => true,
            Ok(_) => cx.cooldown(pod).is_err(),
        };
        if refused {
            let reason = model.describe(pod, from, None);
            let _ = cx.try_evict(pod, reason);
            self.classes[k].pods.clear();
            return Flow::Next;
        }
        if self.evaluations >= max_evaluations {
            return Flow::OutOfBudget;
        }
        self.evaluations += 1;
        self.step_evaluations += 1;
        let Ok(prediction) = cx.placement().sim().predict(pod, cx.placement().nodes()) else {
            // No node for its replacement now: it leaves the search until its node
            // or workload changes.
            return Flow::Next;
        };
        // Where it may land: the predicted node and its ties (None: not a planning node).
        let lands: Vec<Option<usize>> = std::iter::once(prediction.node)
            .chain(prediction.alternatives.iter().copied())
            .map(|d| model.position.get(&d).copied())
            .collect();
        if workload.is_some_and(|w| lands.iter().flatten().any(|&d| self.left.contains(&(w, d)))) {
            // It may land where its workload loses a pod in this plan: it leaves the
            // search until its node or workload changes.
            return Flow::Next;
        }
        if self.excluded.contains(&from)
            && lands
                .iter()
                .any(|&d| model.workload_gain(pod, from, d) <= MIN_GAIN)
        {
            // Off a node an earlier round left over for all its moves, only repairs go: it
            // leaves the search until its node or workload changes.
            return Flow::Next;
        }
        let before = |set: &HashSet<(usize, usize)>, d: usize| {
            workload.is_some_and(|w| set.contains(&(w, d)))
        };
        let repairs_spread = lands.iter().all(|&d| model.repairs_spread(pod, from, d));
        let repairs = lands
            .iter()
            .all(|&d| model.workload_gain(pod, from, d) > MIN_GAIN);
        if ((self.classes[k].held
            || lands
                .iter()
                .flatten()
                .any(|&d| before(&self.left_before, d)))
            && !repairs_spread)
            || (before(&self.arrived_before, from) && !repairs)
        {
            // It would move a replica placed within the cooldown again, or land one back on
            // a node its workload was just moved off, and repair no DoNotSchedule spread; or
            // take its workload off a node it was just moved onto, and repair neither its
            // spread nor its duplicates: it leaves the search until its node or workload
            // changes.
            return Flow::Next;
        }
        // The move counts at its worst tied node.
        let gain = lands
            .iter()
            .map(|&d| model.gain(pod, from, d))
            .fold(f64::INFINITY, f64::min);
        // Ranked with its credit; planned only where the distance itself falls.
        let rank = if gain > MIN_GAIN {
            gain + model.credit(pod, from)
        } else {
            gain
        };
        if gain > MIN_GAIN && self.step_best.is_none_or(|(g, _)| rank > g) {
            self.step_second = self.step_best.filter(|&(_, b)| b != k);
            self.step_best = Some((rank, k));
        } else if gain > MIN_GAIN
            && self.step_best.is_some_and(|(_, b)| b != k)
            && self.step_second.is_none_or(|(g, _)| rank > g)
        {
            self.step_second = Some((rank, k));
        }
        self.heap.push(Entry {
            priority: rank,
            class: k,
            version: self.version[k],
            exact_at: Some(self.step),
        });
        Flow::Next
    }

    /// Plans class `k`'s best move, exact for the cluster as it stands, and gives the classes
    /// it changes fresh bounds; false when the cycle's total limit is reached.
    fn plan<'s>(
        &mut self,
        max_evaluations: u32,
        cx: &mut Context<'_, 's>,
        model: &mut Model<'s>,
        k: usize,
        tail: &mut Option<Tail<'s>>,
    ) -> bool {
        let from = self.classes[k].from;
        // The best move, exact for the cluster as it stands.
        let pod = self.classes[k].pods.remove(0);
        let prediction = cx
            .placement()
            .sim()
            .predict(pod, cx.placement().nodes())
            .ok();
        let to = prediction
            .as_ref()
            .and_then(|p| model.position.get(&p.node).copied());
        let mut reason = model.describe(pod, from, to);
        let first = cx.ledger().evictions().len();
        // A pod above the target on its own puts any node over: onto a node that is under
        // (outside either way), the move may go over its target, which the gain weighed; the
        // node it leaves may come inside. A repair whose replacement would take an inside
        // node over goes there only with a second move that brings that node back inside
        // ([`Search::room_on`]). Every other move stays held to its destination's target.
        let lands: Vec<NodeId> = prediction
            .iter()
            .flat_map(|p| std::iter::once(p.node).chain(p.alternatives.iter().copied()))
            .collect();
        let onto_under = model.is_oversized(pod)
            && !lands.is_empty()
            && lands.iter().all(|d| {
                model
                    .position
                    .get(d)
                    .is_some_and(|&i| model.standing(i, &model.holding(i)).under)
            });
        let room = match (onto_under, &prediction) {
            (false, Some(p)) => self.room_on(max_evaluations, cx, model, pod, from, p),
            _ => None,
        };
        // A move that changes no node's standing and repairs nothing only closes percentage
        // points: worth it only where a later move brings a node inside. The plan before a
        // run of such moves is kept, to go back to if the search ends within it.
        let points_only = self.trim && room.is_none() && !model.changes_standing(pod, from, to);
        if points_only && tail.is_none() {
            *tail = Some(Tail {
                state: cx.checkpoint(),
                model: model.clone(),
                planned: self.planned,
                balance_sources: self.balance_sources.clone(),
            });
        }
        let attempt = if onto_under {
            cx.try_evict_checked_beyond_targets(pod, reason, &lands)
        } else if let Some(r) = &room {
            let _ = write!(
                reason,
                "; {} goes over its target with it until {} leaves it",
                model.snap.node(r.node).name,
                model.snap.pod(r.pod).key()
            );
            cx.try_evict_checked_beyond_targets(pod, reason, &[r.node])
        } else {
            cx.try_evict_checked(pod, reason)
        };
        let balance = model.workload_gain(pod, from, to) <= MIN_GAIN;
        if !self.settle(attempt, cx, model, k, first) {
            return false;
        }
        if balance && self.planned_at(cx, first, pod) {
            self.balance_sources.insert(from);
        }
        if !points_only && self.planned_at(cx, first, pod) {
            *tail = None;
        }
        let Some(r) = room.filter(|_| self.planned_at(cx, first, pod)) else {
            return true;
        };
        // The second move: the pod that makes room where the repair's replacement went.
        let from = self.classes[r.class].from;
        self.classes[r.class].pods.retain(|&p| p != r.pod);
        let to = model.position.get(&r.to).copied();
        let reason = format!(
            "{}; makes room on {} for {}, moved there to repair its workload",
            model.describe(r.pod, from, to),
            model.snap.node(r.node).name,
            model.snap.pod(pod).key()
        );
        let first = cx.ledger().evictions().len();
        let attempt = cx.try_evict_checked(r.pod, reason);
        self.settle(attempt, cx, model, r.class, first)
    }

    /// Whether `pod` is among the evictions planned since `first`.
    fn planned_at(&self, cx: &Context<'_, '_>, first: usize, pod: PodId) -> bool {
        cx.ledger().evictions()[first..]
            .iter()
            .any(|e| e.pod == pod)
    }

    /// Takes an attempt of class `k`'s pod into the search (`first`: the ledger's evictions
    /// before it); false when the cycle's total limit is reached.
    fn settle(
        &mut self,
        attempt: Attempt,
        cx: &mut Context<'_, '_>,
        model: &mut Model<'_>,
        k: usize,
        first: usize,
    ) -> bool {
        let from = self.classes[k].from;
        match attempt {
            Attempt::Planned { .. } => {
                self.planned += 1;
                self.step += 1;
                let new: Vec<(PodId, NodeId, Option<NodeId>, Vec<NodeId>)> =
                    cx.ledger().evictions()[first..]
                        .iter()
                        .map(|e| (e.pod, e.node, e.destination, e.alternatives.clone()))
                        .collect();
                let mut dirty: Vec<usize> = Vec::new();
                for (p, n, d, ties) in new {
                    if let Some(&w) = model.workload_of.get(&p) {
                        self.left.extend(model.position.get(&n).map(|&i| (w, i)));
                        for t in d.iter().chain(&ties) {
                            self.arrived.extend(model.position.get(t).map(|&i| (w, i)));
                        }
                    }
                    model.absorb(cx.placement().sim(), p, n, d);
                    for m in std::iter::once(n).chain(d) {
                        if let Some(&i) = model.position.get(&m) {
                            dirty.extend(&self.by_node[i]);
                        }
                    }
                    if let Some(w) = model
                        .workload_of
                        .get(&p)
                        .and_then(|w| self.by_workload.get(w))
                    {
                        dirty.extend(w);
                    }
                }
                // The class itself goes on with its next pod.
                dirty.push(k);
                dirty.sort_unstable();
                dirty.dedup();
                let under = most_under(model);
                for j in dirty {
                    if !self.classes[j].pods.is_empty() {
                        self.version[j] += 1;
                        self.push_bound(model, j, under);
                    }
                }
            }
            // Refused (the evictor's filters, a budget): its class shares why.
            Attempt::SkipPod => self.classes[k].pods.clear(),
            Attempt::SkipNode => self.exhausted[from] = true,
            Attempt::Stop => return false,
        }
        true
    }

    /// For a move of `pod` that repairs its workload's spread or duplicates but whose
    /// replacement, predicted on one node with no tie, would take that node over its
    /// target: the best pod on that node to move next, whose own replacement (predicted
    /// with the repair's in place) lands inside the thresholds elsewhere and which brings
    /// the node back inside, where the pair lowers the distance. A node inside can take
    /// the repair's replacement only once something leaves it, and kube-scheduler puts the
    /// pod that leaves first back on the node it emptied; in this order the node is fuller
    /// than another when that pod is placed. Each pod asked about counts toward
    /// `maxEvaluations`.
    fn room_on(
        &mut self,
        max_evaluations: u32,
        cx: &Context<'_, '_>,
        model: &Model<'_>,
        pod: PodId,
        from: usize,
        prediction: &Prediction,
    ) -> Option<Room> {
        let t = *model.position.get(&prediction.node)?;
        if !prediction.alternatives.is_empty()
            || model.is_over(t)
            || !model.over_with(t, pod, 1)
            || model.workload_gain(pod, from, Some(t)) <= MIN_GAIN
        {
            return None;
        }
        let workload = model.workload_of.get(&pod).copied();
        let candidates: Vec<(usize, PodId)> = self.by_node[t]
            .iter()
            .filter(|&&j| !self.classes[j].held)
            .filter_map(|&j| Some((j, *self.classes[j].pods.first()?)))
            .filter(|&(_, q)| model.workload_of.get(&q).copied() != workload)
            .collect();
        if candidates.is_empty() || self.evaluations >= max_evaluations {
            return None;
        }
        // The repair's replacement in place, on copies.
        let nodes = cx.placement().nodes();
        let mut sim = cx.placement().sim().clone();
        let placed = sim.replace(pod, nodes).ok()?;
        if placed.node != prediction.node || !placed.alternatives.is_empty() {
            return None;
        }
        let mut after = model.clone();
        after.absorb(&sim, pod, model.nodes[from], Some(prediction.node));
        let repair = model.gain(pod, from, Some(t));
        let mut best: Option<(f64, Room)> = None;
        for (j, q) in candidates {
            if self.evaluations >= max_evaluations {
                break;
            }
            let wq = after.workload_of.get(&q).copied();
            if after.over_with(t, q, -1)
                || wq.is_some_and(|w| {
                    self.arrived.contains(&(w, t)) || self.arrived_before.contains(&(w, t))
                })
                || cx.ledger().admit(q).is_err()
                || cx.cooldown(q).is_err()
            {
                continue;
            }
            self.evaluations += 1;
            let Ok(p) = sim.predict(q, nodes) else {
                continue;
            };
            let lands: Option<Vec<usize>> = std::iter::once(p.node)
                .chain(p.alternatives.iter().copied())
                .map(|d| after.position.get(&d).copied())
                .collect();
            let Some(lands) = lands else { continue };
            if lands.iter().any(|&u| {
                u == t
                    || after.over_with(u, q, 1)
                    || wq.is_some_and(|w| {
                        self.left.contains(&(w, u)) || self.left_before.contains(&(w, u))
                    })
            }) {
                continue;
            }
            let gain = repair
                + lands
                    .iter()
                    .map(|&u| after.gain(q, t, Some(u)))
                    .fold(f64::INFINITY, f64::min);
            if gain > MIN_GAIN && best.as_ref().is_none_or(|(g, _)| gain > *g) {
                best = Some((
                    gain,
                    Room {
                        node: prediction.node,
                        pod: q,
                        class: j,
                        to: p.node,
                    },
                ));
            }
        }
        best.map(|(_, r)| r)
    }
}

/// The plan as it stood before a run of moves that only close percentage points.
struct Tail<'s> {
    state: crate::framework::PlanningState<'s>,
    model: Model<'s>,
    planned: usize,
    balance_sources: HashSet<usize>,
}

/// The second move of a repair whose replacement takes a node over its target: `pod` (of
/// class `class`) leaves `node` for `to`.
struct Room {
    node: NodeId,
    pod: PodId,
    class: usize,
    to: NodeId,
}

/// What one round planned.
struct Round {
    round: usize,
    planned: usize,
    /// Trailing moves that only closed percentage points, taken back.
    trimmed: usize,
    evaluations: u32,
    out_of_budget: bool,
    /// Nodes outside, spread excess, duplicate excess, after the round's moves.
    totals: (usize, i64, i64),
    /// Nodes the round moved pods off for the thresholds alone that it left over.
    wasted: HashSet<usize>,
    /// Nodes the round moved pods off only to repair their workloads.
    excluded: usize,
    /// Candidates refused because their PodDisruptionBudget allowed no more now.
    budget_refused: usize,
    /// Its evictions in order.
    order: Vec<PodId>,
    /// One step in how many planned its second best move (None: not a randomized round).
    odds: Option<u64>,
    /// Pods left to the other plugins (they go only with their whole gang).
    whole: usize,
    /// Nodes outside, spread excess, duplicate excess at the start (every round's).
    before: (usize, i64, i64),
    /// Nodes outside with no way in at the start ([`Model::outside_for_good`]).
    for_good: (usize, usize),
    /// The planning nodes.
    nodes: usize,
}

impl Round {
    /// Fewer nodes outside, and no more spread or duplicate excess. Kept to that: a later
    /// round that only evicts fewer, or trades one measure for another, takes the next
    /// cycles elsewhere than the first plan would, not closer (measured over three cycles on
    /// the seeded clusters of `tests/outcome_planning.rs`).
    fn better_than(&self, other: &Round) -> bool {
        let (a, b) = (self.totals, other.totals);
        a.0 < b.0 && a.1 <= b.1 && a.2 <= b.2
    }

    /// Closer to the outcome as the search weighs it (pods above their spread, above their
    /// fair share, nodes outside), with no more spread excess; as close with fewer
    /// evictions.
    fn closer_than(&self, other: &Round) -> bool {
        let weigh = |t: (usize, i64, i64)| {
            SPREAD * t.1 as f64 + DUPLICATE * t.2 as f64 + OUTSIDE * t.0 as f64
        };
        let (a, b) = (weigh(self.totals), weigh(other.totals));
        self.totals.1 <= other.totals.1
            && (a < b - MIN_GAIN || (a <= b + MIN_GAIN && self.planned < other.planned))
    }
}

impl OutcomeBalance {
    /// One plan from the state as it stands, moving pods for the thresholds alone off no node
    /// of `excluded`, within `budget` simulated placements; with `trim`, the trailing moves
    /// that only close percentage points taken back.
    fn plan_round(
        &self,
        cx: &mut Context<'_, '_>,
        nodes: &[NodeId],
        excluded: &HashSet<usize>,
        budget: u32,
        trim: bool,
        shuffle: Option<u64>,
    ) -> Round {
        let mut model = self.model(cx, nodes);
        let (before, for_good) = (model.totals(), model.outside_for_good());
        self.publish_targets(cx, &model);
        let (classes, whole) = self.candidates(cx, &model);
        let held = Class::held(&classes);
        let mut search = Search::new(classes, &model);
        search.remember_recent(cx, &model);
        search.excluded = excluded.clone();
        search.trim = trim;
        search.shuffle = shuffle;
        search.odds = [2, 4, 8][shuffle.unwrap_or(0) as usize % 3];
        let out_of_budget = search.run(budget, cx, &mut model);
        Self::skip_held(cx, &held);
        let wasted = search
            .balance_sources
            .iter()
            .copied()
            .filter(|&i| model.is_over(i))
            .collect();
        Round {
            round: 0,
            planned: search.planned,
            trimmed: search.trimmed,
            evaluations: search.evaluations,
            out_of_budget,
            totals: model.totals(),
            wasted,
            excluded: excluded.len(),
            budget_refused: search.budget_refused,
            odds: shuffle.map(|_| search.odds),
            order: cx.ledger().evictions().iter().map(|e| e.pod).collect(),
            whole,
            before,
            for_good,
            nodes: model.nodes.len(),
        }
    }
}

impl OutcomeBalance {
    /// Records the replacements the cooldown holds back (`held`) that are not planned as
    /// candidates not chosen, with the time left.
    fn skip_held(cx: &mut Context<'_, '_>, held: &[PodId]) {
        let planned: HashSet<PodId> = cx.ledger().evictions().iter().map(|e| e.pod).collect();
        for &p in held.iter().filter(|p| !planned.contains(p)) {
            if let Err(why) = cx.replacement_hold(p) {
                cx.skip_candidate(p, why, SkipReason::Cooldown);
            }
        }
    }

    /// A plan over the next cycles from `start` (the cycle's start), past the disruption
    /// budgets, within `budget` simulated placements (added to `evaluations`). Where it
    /// leaves fewer nodes outside than `chosen` (this cycle's best plan within the budgets)
    /// and no more spread or duplicate excess, the state is this cycle's part of it
    /// ([`OutcomeBalance::carry_out`]), returned with the plan over the cycles; otherwise it
    /// is `chosen`'s, as it was.
    fn over_cycles<'s>(
        &self,
        cx: &mut Context<'_, 's>,
        nodes: &[NodeId],
        start: crate::framework::PlanningState<'s>,
        chosen: Round,
        budget: u32,
        evaluations: &mut u32,
    ) -> (Round, Option<Round>) {
        let kept = cx.checkpoint();
        cx.restore(start.clone());
        cx.look_past_disruption_budgets();
        let over = Round {
            budget_refused: chosen.budget_refused,
            ..self.plan_round(cx, nodes, &HashSet::new(), budget, true, None)
        };
        *evaluations += over.evaluations;
        if !over.better_than(&chosen) {
            cx.restore(kept);
            return (chosen, None);
        }
        cx.restore(start);
        let now = self.carry_out(cx, nodes, &over);
        (now, Some(over))
    }

    /// The moves of a plan over the next cycles (`over`, planned past the disruption
    /// budgets) that the budgets allow now, in its order, each checked again against the
    /// simulation and the targets as this cycle's plan leaves the cluster; the others wait,
    /// each a candidate not chosen that says so. Returns the round this cycle carries out.
    fn carry_out(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId], over: &Round) -> Round {
        let mut model = self.model(cx, nodes);
        self.publish_targets(cx, &model);
        let (classes, _) = self.candidates(cx, &model);
        let held = Class::held(&classes);
        let mut planned = 0;
        for &pod in &over.order {
            let Some(from) = cx
                .snap()
                .pod_node(pod)
                .and_then(|n| model.position.get(&n).copied())
            else {
                continue;
            };
            match cx.ledger().admit(pod) {
                Err(EvictError::DisruptionBudget(pdb)) => {
                    cx.skip_candidate(
                        pod,
                        format!(
                            "waits for a later cycle: PodDisruptionBudget {pdb} allows no more disruptions now; the plan over the next cycles moves it once the budget is back"
                        ),
                        SkipReason::Pdb,
                    );
                    continue;
                }
                Err(EvictError::TotalLimit(_)) => break,
                _ => {}
            }
            let to = cx
                .placement()
                .sim()
                .predict(pod, cx.placement().nodes())
                .ok()
                .and_then(|p| model.position.get(&p.node).copied());
            let reason = format!(
                "{}; a move of the plan over the next cycles",
                model.describe(pod, from, to)
            );
            let first = cx.ledger().evictions().len();
            if let Attempt::Planned { .. } = cx.try_evict_checked(pod, reason) {
                planned += 1;
                let new: Vec<(PodId, NodeId, Option<NodeId>)> = cx.ledger().evictions()[first..]
                    .iter()
                    .map(|e| (e.pod, e.node, e.destination))
                    .collect();
                for (p, n, d) in new {
                    model.absorb(cx.placement().sim(), p, n, d);
                }
            }
        }
        Self::skip_held(cx, &held);
        Round {
            planned,
            trimmed: 0,
            totals: model.totals(),
            order: cx.ledger().evictions().iter().map(|e| e.pod).collect(),
            wasted: HashSet::new(),
            ..*over
        }
    }
}

impl Plugin for OutcomeBalance {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Every move is checked against the kube-scheduler simulation.
    fn needs_placement(&self) -> bool {
        true
    }

    /// Every planning node's targets, the nodes not over them wanted.
    fn sets_placement_targets(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        if !cx.placement().predicts() {
            cx.note_skipped("skipped this cycle: the placement simulation is off, and every move is checked against it");
            return;
        }
        // Each round plans from the same start; the best is kept (see [`DEFAULT_ROUNDS`]).
        // More than one only where the first plan is likely to leave evaluations for
        // another: a cluster whose planning nodes hold fewer pods than half the bound (a
        // larger one plans once, without copying the planning state). The same bound decides
        // whether trailing moves that only close percentage points are taken back (a copy
        // of the planning state per run of them).
        let pods: usize = nodes.iter().map(|&n| cx.snap().pods_on_node(n).len()).sum();
        let small = pods.saturating_mul(2) < self.args.max_evaluations as usize;
        let rounds = if small { self.args.rounds as usize } else { 1 };
        let start = small.then(|| cx.checkpoint());
        let mut excluded: HashSet<usize> = HashSet::new();
        let mut best: Option<(Round, Option<crate::framework::PlanningState<'_>>)> = None;
        let mut evaluations = 0u32;
        let mut ran = 0;
        for round in 0..rounds {
            if let Some(start) = start.as_ref().filter(|_| round > 0) {
                cx.restore(start.clone());
            }
            ran += 1;
            let budget = self.args.max_evaluations - evaluations;
            let r = Round {
                round,
                ..self.plan_round(cx, nodes, &excluded, budget, small, None)
            };
            evaluations += r.evaluations;
            let more: HashSet<usize> = excluded.union(&r.wasted).copied().collect();
            let last = round + 1 == rounds
                || r.out_of_budget
                || more.len() == excluded.len()
                || evaluations >= self.args.max_evaluations;
            let better = best.as_ref().is_none_or(|(b, _)| r.better_than(b));
            if better {
                // The state stays as this round left it if no round follows.
                let kept = (!last).then(|| cx.checkpoint());
                best = Some((r, kept));
            }
            if last {
                break;
            }
            excluded = more;
        }
        // Randomized rounds: a step now and then plans its second best move; one is kept
        // where it leaves the cluster closer to the outcome (see [`Round::closer_than`]).
        if let (Some(start), Some((b, state))) = (start.as_ref(), best.as_mut()) {
            if state.is_none() {
                *state = Some(cx.checkpoint());
            }
            let randomized = if self.args.rounds > 1 {
                self.args.randomized_rounds
            } else {
                0
            };
            for r in 0..u64::from(randomized) {
                if evaluations >= self.args.max_evaluations {
                    break;
                }
                cx.restore(start.clone());
                let budget = self.args.max_evaluations - evaluations;
                let round = Round {
                    round: ran,
                    ..self.plan_round(cx, nodes, &HashSet::new(), budget, true, Some(r))
                };
                ran += 1;
                evaluations += round.evaluations;
                if round.closer_than(b) {
                    *b = round;
                    *state = Some(cx.checkpoint());
                }
            }
        }
        let Some((chosen, state)) = best else {
            return;
        };
        let (before, for_good) = (chosen.before, chosen.for_good);
        if let Some(state) = state {
            cx.restore(state);
        }
        // Where the disruption budgets held moves back, a plan over the next cycles.
        let (chosen, over) = match start.filter(|_| {
            self.args.plan_ahead
                && chosen.budget_refused > 0
                && evaluations < self.args.max_evaluations
        }) {
            Some(start) => {
                let budget = self.args.max_evaluations - evaluations;
                self.over_cycles(cx, nodes, start, chosen, budget, &mut evaluations)
            }
            None => (chosen, None),
        };
        if chosen.whole > 0 {
            cx.note(
                None,
                format!(
                    "{} pods that go only with their whole gang are left to the other plugins",
                    chosen.whole
                ),
            );
        }
        if chosen.trimmed > 0 {
            cx.note(
                None,
                format!(
                    "{} moves that only brought nodes closer to the thresholds, with no node brought inside after them, were taken back",
                    chosen.trimmed
                ),
            );
        }
        if chosen.out_of_budget {
            cx.note(
                None,
                format!(
                    "stopped after {} simulated placements (maxEvaluations); the {} moves planned so far stand",
                    self.args.max_evaluations, chosen.planned
                ),
            );
        }
        if let Some(over) = &over {
            cx.note(
                None,
                format!(
                    "disruption budgets held back {} candidate{}; planned over the next cycles as if each budget came back every cycle, {} moves would leave nodes outside the thresholds {} -> {}, spread excess {} -> {}, duplicate excess {} -> {}: {} of them, those the budgets allow now, are planned in its order, the others wait for a later cycle",
                    over.budget_refused,
                    if over.budget_refused == 1 { "" } else { "s" },
                    over.planned,
                    before.0,
                    over.totals.0,
                    before.1,
                    over.totals.1,
                    before.2,
                    over.totals.2,
                    chosen.planned
                ),
            );
        }
        if ran > 1 {
            let kept = if chosen.round == 0 {
                "the first plan is kept: no later one left fewer nodes outside".to_string()
            } else if let Some(odds) = chosen.odds {
                format!(
                    "plan {} is kept: a randomized one (one step in {odds} planned its second best move) that leaves the cluster closer to the outcome",
                    chosen.round + 1
                )
            } else {
                format!(
                    "plan {} is kept: it moves pods for the thresholds alone off none of the {} nodes earlier plans moved them off and left over anyway, and leaves fewer nodes outside",
                    chosen.round + 1,
                    chosen.excluded
                )
            };
            cx.note(
                None,
                format!("planned {ran} times from the cycle's start ({evaluations} placements simulated in all); {kept}"),
            );
        }
        if for_good != (0, 0) {
            cx.note(
                None,
                format!(
                    "{} of the {} nodes outside the thresholds cannot come inside, and no move is planned for their percentage points alone: {} hold a pod above the target on its own (it would put any node over), {} would stay under with every workload at its fair share there",
                    for_good.0 + for_good.1,
                    before.0,
                    for_good.0,
                    for_good.1
                ),
            );
        }
        let after = chosen.totals;
        cx.note(
            None,
            format!(
                "{} evictions toward the policy's outcome ({} placements simulated): nodes outside the thresholds {} -> {} of {}, spread excess {} -> {}, duplicate excess {} -> {}",
                chosen.planned,
                chosen.evaluations,
                before.0,
                after.0,
                chosen.nodes,
                before.1,
                after.1,
                before.2,
                after.2
            ),
        );
    }
}

#[cfg(test)]
mod tests;
