//! The outcome of continuous descheduling, measured against upstream and against the best
//! possible (issue 29).
//!
//! [`Scenario::build`] makes, in a fresh namespace on fresh nodes carrying a label of their own
//! ([`GROUP_LABEL`], named by the policy's nodeSelector), a start state of one scenario family
//! drawn from a seed. [`run`] records the start placement, runs a binary (ours or upstream
//! v0.36.0) in continuous mode for a number of cycles, watches the namespace's pods and
//! PodDisruptionBudgets while it runs (both binaries are measured the same way: by the pods
//! deleted, never by their own logs), stops it, waits for the Deployments to settle and
//! measures the end state ([`Figures`]). [`Model::solve`] is the lower bound: an integer program
//! (good_lp; COIN-OR CBC's program, or microlp where it is missing) for the fewest moves that reach the policy's thresholds from the start
//! state.

use super::process::NO_SECURE_PORT;
use super::states::{app_of, node_of, Rng, Workload, GROUP_LABEL, ZONE};
use super::*;
use good_lp::{
    constraint, variable, Constraint, Expression, ProblemVariables, ResolutionError, Solution,
    SolutionStatus, SolverModel, Variable, WithInitialSolution, WithTimeLimit,
};
use lp_solvers::lp_format::LpProblem;
use lp_solvers::solvers::{CbcSolver, SolverProgram, SolverWithSolutionParsing, WithMaxSeconds};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tokio::io::AsyncBufReadExt;

/// cpu and memory, the resources the policies' thresholds name (index into [`Res`]).
pub const CPU: usize = 0;
pub const MEMORY: usize = 1;
pub type Res = [f64; 2];

// ---------------------------------------------------------------------------------------------
// Quantities

/// A Kubernetes quantity in base units (cores, bytes, pods).
pub fn quantity(s: &str) -> f64 {
    let s = s.trim();
    let suffixes: [(&str, f64); 11] = [
        ("Ki", 1024.0),
        ("Mi", 1024.0 * 1024.0),
        ("Gi", 1024.0 * 1024.0 * 1024.0),
        ("Ti", 1024.0f64.powi(4)),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("u", 1e-6),
        ("n", 1e-9),
    ];
    for (suffix, factor) in suffixes {
        if let Some(number) = s.strip_suffix(suffix) {
            return number.parse::<f64>().unwrap_or(0.0) * factor;
        }
    }
    s.parse().unwrap_or(0.0)
}

// ---------------------------------------------------------------------------------------------
// Thresholds

/// What a percentage computed from quantities in floating point may be off by (800m of 4 cpu
/// is 20%, not 20.000000000000004%).
const PERCENT_NOISE: f64 = 1e-9;

/// The least a request of resource `r` exceeds a threshold by when it exceeds it: a
/// millicore, a byte.
fn least_unit(r: usize) -> f64 {
    if r == CPU {
        1e-3
    } else {
        1.0
    }
}

/// LowNodeUtilization's thresholds, in percent of allocatable, per resource (None: not named).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    pub low: [Option<f64>; 2],
    pub high: [Option<f64>; 2],
}

impl Thresholds {
    pub fn cpu_memory(low: f64, high: f64) -> Self {
        Thresholds {
            low: [Some(low), Some(low)],
            high: [Some(high), Some(high)],
        }
    }

    pub fn cpu(low: f64, high: f64) -> Self {
        Thresholds {
            low: [Some(low), None],
            high: [Some(high), None],
        }
    }

    /// The resources named, with their (low, high).
    pub fn named(&self) -> Vec<(usize, f64, f64)> {
        (0..2)
            .filter_map(|r| Some((r, self.low[r]?, self.high[r]?)))
            .collect()
    }

    /// Above the high threshold on any resource (LowNodeUtilization's overutilized).
    pub fn over(&self, percent: &Res) -> bool {
        self.named()
            .iter()
            .any(|(r, _, high)| percent[*r] > *high + PERCENT_NOISE)
    }

    /// At or below the low threshold on every resource (LowNodeUtilization's
    /// underutilized: a node exactly on its threshold is under).
    pub fn under(&self, percent: &Res) -> bool {
        let named = self.named();
        !named.is_empty()
            && named
                .iter()
                .all(|(r, low, _)| percent[*r] <= *low + PERCENT_NOISE)
    }

    /// Outside the thresholds: over or under.
    pub fn outside(&self, percent: &Res) -> bool {
        self.over(percent) || self.under(percent)
    }
}

// ---------------------------------------------------------------------------------------------
// Placements: the nodes and pods of a state, as read from the cluster

#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub name: String,
    pub zone: String,
    pub labels: BTreeMap<String, String>,
    /// Allocatable cpu (cores) and memory (bytes).
    pub alloc: Res,
    pub max_pods: f64,
    pub unschedulable: bool,
    /// NoSchedule / NoExecute taints (key) other than the cordon's.
    pub taints: Vec<String>,
}

impl NodeInfo {
    pub fn of(node: &Node) -> NodeInfo {
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let alloc = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        let get = |k: &str| alloc.get(k).map(|q| quantity(&q.0)).unwrap_or(0.0);
        let spec = node.spec.clone().unwrap_or_default();
        NodeInfo {
            name: node.metadata.name.clone().unwrap_or_default(),
            zone: labels.get(ZONE).cloned().unwrap_or_default(),
            alloc: [get("cpu"), get("memory")],
            max_pods: get("pods"),
            unschedulable: spec.unschedulable == Some(true),
            taints: spec
                .taints
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.effect != "PreferNoSchedule" && t.key != UNSCHEDULABLE_TAINT)
                .map(|t| t.key)
                .collect(),
            labels,
        }
    }
}

#[derive(Clone, Debug)]
pub struct PodInfo {
    pub uid: String,
    pub name: String,
    pub app: String,
    /// Empty while unbound.
    pub node: String,
    pub requests: Res,
    pub running: bool,
    pub terminating: bool,
    pub node_selector: BTreeMap<String, String>,
    /// maxSkew of a DoNotSchedule spread constraint on the zone.
    pub zone_skew: Option<i64>,
    /// Unix seconds.
    pub created: f64,
    /// When it was deleted (deletionTimestamp less the grace period), unix seconds.
    pub deleted: Option<f64>,
}

fn unix(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> f64 {
    t.0.as_millisecond() as f64 / 1000.0
}

pub fn now_unix() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

impl PodInfo {
    pub fn of(p: &Pod) -> PodInfo {
        let spec = p.spec.clone().unwrap_or_default();
        let mut requests = [0.0; 2];
        for c in &spec.containers {
            if let Some(r) = c.resources.as_ref().and_then(|r| r.requests.as_ref()) {
                requests[CPU] += r.get("cpu").map(|q| quantity(&q.0)).unwrap_or(0.0);
                requests[MEMORY] += r.get("memory").map(|q| quantity(&q.0)).unwrap_or(0.0);
            }
        }
        let zone_skew = spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .find(|c| c.topology_key == ZONE && c.when_unsatisfiable == "DoNotSchedule")
            .map(|c| i64::from(c.max_skew));
        let deleted = p
            .metadata
            .deletion_timestamp
            .as_ref()
            .map(|t| unix(t) - p.metadata.deletion_grace_period_seconds.unwrap_or(0) as f64);
        PodInfo {
            uid: p.metadata.uid.clone().unwrap_or_default(),
            name: p.metadata.name.clone().unwrap_or_default(),
            app: app_of(p),
            node: node_of(p),
            requests,
            running: pod_is_running(p),
            terminating: p.metadata.deletion_timestamp.is_some(),
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            zone_skew,
            created: p
                .metadata
                .creation_timestamp
                .as_ref()
                .map(unix)
                .unwrap_or(0.0),
            deleted,
        }
    }

    /// Whether the pod may be placed on `node` (nodeSelector, taints, cordon).
    pub fn fits(&self, node: &NodeInfo) -> bool {
        !node.unschedulable
            && node.taints.is_empty()
            && self
                .node_selector
                .iter()
                .all(|(k, v)| node.labels.get(k) == Some(v))
    }
}

// ---------------------------------------------------------------------------------------------
// Figures of a placement

/// What a placement looks like against the policy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub nodes: usize,
    /// Nodes above the high threshold on any resource, or below the low on all.
    pub outside: usize,
    pub over: usize,
    pub under: usize,
    /// Standard deviation across the nodes of requested cpu and memory, % of allocatable.
    pub cpu_sd: f64,
    pub memory_sd: f64,
    /// Sum over the DoNotSchedule zone spread constraints of the pods above the allowed skew.
    pub spread_excess: i64,
    /// Pods beyond the per-node share RemoveDuplicates allows (ceil(replicas / feasible nodes)).
    pub duplicates_excess: i64,
    /// Pods not bound to a node (and not terminating).
    pub pending: usize,
}

fn stddev(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64).sqrt()
}

/// Requested % of allocatable per node (in `nodes`' order), of the bound pods not terminating.
pub fn utilization(nodes: &[NodeInfo], pods: &[PodInfo]) -> Vec<Res> {
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut used = vec![[0.0; 2]; nodes.len()];
    for p in pods.iter().filter(|p| !p.terminating) {
        if let Some(i) = index.get(p.node.as_str()) {
            used[*i][CPU] += p.requests[CPU];
            used[*i][MEMORY] += p.requests[MEMORY];
        }
    }
    used.iter()
        .zip(nodes)
        .map(|(u, n)| {
            let pct = |r: usize| {
                if n.alloc[r] > 0.0 {
                    100.0 * u[r] / n.alloc[r]
                } else {
                    0.0
                }
            };
            [pct(CPU), pct(MEMORY)]
        })
        .collect()
}

/// The figures of the placement of `pods` (those of the state's namespace) on `nodes`.
pub fn figures(nodes: &[NodeInfo], pods: &[PodInfo], thresholds: &Thresholds) -> Figures {
    let util = utilization(nodes, pods);
    let live: Vec<&PodInfo> = pods.iter().filter(|p| !p.terminating).collect();
    let mut by_app: BTreeMap<&str, Vec<&PodInfo>> = BTreeMap::new();
    for p in &live {
        by_app.entry(p.app.as_str()).or_default().push(p);
    }
    let mut spread_excess = 0;
    let mut duplicates_excess = 0;
    for ps in by_app.values() {
        let first = ps[0];
        let feasible: Vec<&NodeInfo> = nodes.iter().filter(|n| first.fits(n)).collect();
        let bound: Vec<&&PodInfo> = ps.iter().filter(|p| !p.node.is_empty()).collect();
        if let Some(skew) = first.zone_skew {
            let mut per_zone: BTreeMap<&str, i64> =
                feasible.iter().map(|n| (n.zone.as_str(), 0)).collect();
            let zone_of: HashMap<&str, &str> = nodes
                .iter()
                .map(|n| (n.name.as_str(), n.zone.as_str()))
                .collect();
            for p in &bound {
                if let Some(z) = zone_of.get(p.node.as_str()) {
                    *per_zone.entry(z).or_default() += 1;
                }
            }
            let min = per_zone.values().copied().min().unwrap_or(0);
            spread_excess += per_zone
                .values()
                .map(|c| (c - min - skew).max(0))
                .sum::<i64>();
        }
        if !feasible.is_empty() {
            let limit = (ps.len() as i64 + feasible.len() as i64 - 1) / feasible.len() as i64;
            let mut per_node: BTreeMap<&str, i64> = BTreeMap::new();
            for p in &bound {
                *per_node.entry(p.node.as_str()).or_default() += 1;
            }
            duplicates_excess += per_node.values().map(|c| (c - limit).max(0)).sum::<i64>();
        }
    }
    Figures {
        nodes: nodes.len(),
        outside: util.iter().filter(|u| thresholds.outside(u)).count(),
        over: util.iter().filter(|u| thresholds.over(u)).count(),
        under: util.iter().filter(|u| thresholds.under(u)).count(),
        cpu_sd: stddev(&util.iter().map(|u| u[CPU]).collect::<Vec<_>>()),
        memory_sd: stddev(&util.iter().map(|u| u[MEMORY]).collect::<Vec<_>>()),
        spread_excess,
        duplicates_excess,
        pending: live.iter().filter(|p| p.node.is_empty()).count(),
    }
}

// ---------------------------------------------------------------------------------------------
// The lower bound: an integer program

/// A node of the integer program.
#[derive(Clone, Debug)]
pub struct ModelNode {
    pub zone: String,
    /// Allocatable cpu (cores) and memory (bytes), and pods.
    pub alloc: Res,
    pub max_pods: f64,
}

/// A workload of the integer program: its pods are interchangeable.
#[derive(Clone, Debug)]
pub struct ModelWorkload {
    pub name: String,
    pub requests: Res,
    /// Where its pods may go, per node.
    pub feasible: Vec<bool>,
    /// Its pods per node at the start.
    pub start: Vec<i64>,
    /// maxSkew of a hard zone spread constraint.
    pub zone_skew: Option<i64>,
}

impl ModelWorkload {
    pub fn replicas(&self) -> i64 {
        self.start.iter().sum()
    }
}

/// The fewest moves (pods taken off a node) that bring the most nodes within the thresholds.
#[derive(Clone, Debug)]
pub struct Model {
    pub nodes: Vec<ModelNode>,
    pub workloads: Vec<ModelWorkload>,
    pub thresholds: Thresholds,
    /// Per-node limit ceil(replicas / feasible nodes) (the policy has RemoveDuplicates).
    pub duplicates: bool,
}

/// What the integer program found.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub moves: f64,
    pub outside: f64,
    /// The integer program proved its optimum: `moves` is the fewest moves that leave
    /// `outside` nodes outside the thresholds (and no fewer outside is possible).
    pub optimal: bool,
    /// Not proven within the time bound: `moves` and `outside` are the LP relaxation's.
    pub relaxed: bool,
    pub seconds: f64,
    /// What was dropped or went wrong, if anything.
    pub note: String,
    /// The solver ([`IlpSolver::name`]).
    pub solver: &'static str,
    /// Not proven: the nodes outside of the best whole placement the solver found within the
    /// time bound (so the best possible leaves at most these), if it found one.
    pub incumbent_outside: Option<f64>,
}

/// What another binary's run ended with from the same start: the most moves and the most
/// duplicates excess a placement may have, and whether it must keep every hard zone spread
/// ([`Model::solve_within`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cap {
    pub moves: f64,
    pub duplicates_excess: f64,
    pub spread: bool,
}

impl Bound {
    /// Whether the issue's targets conflict on the start state this is the best possible of,
    /// given `within`, the bound capped at another run's figures ([`Model::solve_within`]):
    /// `Some(true)` where no plan within the cap comes within one node of the best possible's
    /// nodes outside (the best's nodes outside proven, or at most its integer incumbent's;
    /// the capped figure proven, or its LP relaxation's lower bound above that);
    /// `Some(false)` where both are proven and a placement within the cap does; `None`
    /// where neither is shown.
    pub fn conflicts_with(&self, within: &Bound) -> Option<bool> {
        if within.outside.is_nan() || !(within.optimal || within.relaxed) {
            return None;
        }
        let most = if self.optimal {
            Some(self.outside.round())
        } else {
            self.incumbent_outside
        };
        if most.is_some_and(|most| within.outside > most + 1.0 + 1e-6) {
            return Some(true);
        }
        (self.optimal && within.optimal && within.outside.round() <= self.outside.round() + 1.0)
            .then_some(false)
    }

    pub fn describe(&self) -> String {
        let kind = if self.optimal {
            "proven optimal"
        } else if self.relaxed {
            "LP relaxation (integer program not solved within the time bound)"
        } else {
            "not proven"
        };
        let mut s = format!(
            "best possible: {:.0} moves, {:.0} outside ({kind} by {}, {:.1} s)",
            self.moves, self.outside, self.solver, self.seconds
        );
        if self.relaxed {
            s = format!(
                "lower bound: {:.1} moves, {:.1} outside ({kind}, by {}, {:.1} s)",
                self.moves, self.outside, self.solver, self.seconds
            );
        }
        if !self.note.is_empty() {
            let _ = write!(s, "; {}", self.note);
        }
        s
    }
}

impl Model {
    /// The model of a placement: pods grouped by their `app` label.
    pub fn of(
        nodes: &[NodeInfo],
        pods: &[PodInfo],
        thresholds: Thresholds,
        duplicates: bool,
    ) -> Model {
        let index: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let mut by_app: BTreeMap<&str, Vec<&PodInfo>> = BTreeMap::new();
        for p in pods.iter().filter(|p| !p.terminating) {
            by_app.entry(p.app.as_str()).or_default().push(p);
        }
        let workloads = by_app
            .iter()
            .map(|(app, ps)| {
                let mut start = vec![0; nodes.len()];
                for p in ps {
                    if let Some(i) = index.get(p.node.as_str()) {
                        start[*i] += 1;
                    }
                }
                ModelWorkload {
                    name: app.to_string(),
                    requests: ps[0].requests,
                    feasible: nodes.iter().map(|n| ps[0].fits(n)).collect(),
                    start,
                    zone_skew: ps[0].zone_skew,
                }
            })
            .collect();
        Model {
            nodes: nodes
                .iter()
                .map(|n| ModelNode {
                    zone: n.zone.clone(),
                    alloc: n.alloc,
                    max_pods: n.max_pods,
                })
                .collect(),
            workloads,
            thresholds,
            duplicates,
        }
    }

    /// Solves the integer program within `time_limit` seconds; if it does not prove its
    /// optimum, the LP relaxation's figures instead (a lower bound). If the limits (spread,
    /// duplicates) leave no feasible placement, solved again without them, and said so.
    pub fn solve(&self, time_limit: f64) -> Bound {
        self.solve_using(&IlpSolver::detect(), time_limit)
    }

    /// [`Model::solve`] with the given solver.
    pub fn solve_using(&self, solver: &IlpSolver, time_limit: f64) -> Bound {
        Bound {
            solver: solver.name(),
            ..self.bound_using(solver, time_limit)
        }
    }

    /// The fewest nodes outside the thresholds (then the fewest moves) within `cap`: at most
    /// `cap.moves` moves and `cap.duplicates_excess` pods above their fair share in all, the
    /// hard zone spreads kept only with `cap.spread`. With another binary's evictions and end
    /// state as the cap, a planner that matches that binary on evictions, duplicates and
    /// spread cannot leave fewer nodes outside than this (its evictions count at least its
    /// moves). Not proven within `time_limit`: the LP relaxation's figures, still a lower
    /// bound on the nodes outside.
    pub fn solve_within(&self, solver: &IlpSolver, cap: Cap, time_limit: f64) -> Bound {
        let started = Instant::now();
        let result = match self.solve_capped(solver, true, time_limit, Some(cap)) {
            Ok(b) if b.optimal => Ok(b),
            _ => self
                .solve_capped(solver, false, time_limit, Some(cap))
                .map(|b| Bound { relaxed: true, ..b }),
        };
        match result {
            Ok(b) => Bound {
                seconds: started.elapsed().as_secs_f64(),
                solver: solver.name(),
                ..b
            },
            Err(e) => self.failed(e, started),
        }
    }

    fn bound_using(&self, solver: &IlpSolver, time_limit: f64) -> Bound {
        let started = Instant::now();
        let (result, mut note) = match self.solve_with(solver, true, time_limit, true) {
            Err(ResolutionError::Infeasible) => (
                self.solve_with(solver, true, time_limit, false),
                "infeasible with the spread and duplicate limits: without them".to_string(),
            ),
            r => (r, String::new()),
        };
        let limits = note.is_empty();
        let incumbent = match result {
            Ok(mut b) if b.optimal => {
                b.note = note;
                b.seconds = started.elapsed().as_secs_f64();
                return b;
            }
            Ok(b) => {
                if !b.note.is_empty() {
                    note = join(&note, &b.note);
                }
                Some(b)
            }
            Err(ResolutionError::Infeasible) => {
                return self.failed(ResolutionError::Infeasible, started)
            }
            Err(e) => {
                note = join(&note, &format!("integer program: {e}"));
                None
            }
        };
        let mut bound = match self.solve_with(solver, false, time_limit, limits) {
            Ok(b) => b,
            Err(e) => return self.failed(e, started),
        };
        if let Some(i) = incumbent.filter(|i| i.moves.is_finite()) {
            note = join(
                &note,
                &format!(
                    "integer incumbent {:.0} moves, {:.0} outside",
                    i.moves, i.outside
                ),
            );
            // A refused answer (fractional) is no placement.
            if i.note.is_empty() {
                bound.incumbent_outside = Some(i.outside.round());
            }
        }
        bound.relaxed = true;
        bound.note = note;
        bound.seconds = started.elapsed().as_secs_f64();
        bound
    }

    /// Per node, how far outside the thresholds a placement leaves it: (outside, distance in
    /// points), for the local search of [`Model::heuristic`].
    fn badness(&self, n: usize, load: &[f64; 3]) -> (i64, f64) {
        let node = &self.nodes[n];
        let pct = [
            100.0 * load[CPU] / node.alloc[CPU].max(1e-9),
            100.0 * load[MEMORY] / node.alloc[MEMORY].max(1e-9),
        ];
        let named = self.thresholds.named();
        let over: f64 = named.iter().map(|(r, _, h)| (pct[*r] - h).max(0.0)).sum();
        let under = if self.thresholds.under(&pct) {
            named
                .iter()
                .map(|(r, l, _)| l - pct[*r])
                .fold(f64::INFINITY, f64::min)
        } else {
            0.0
        };
        (i64::from(self.thresholds.outside(&pct)), over + under)
    }

    /// A placement honouring capacity, feasibility and (with `limits`) the duplicate and spread
    /// limits, found by repairing the start placement and then moving single pods while that
    /// lowers (nodes outside, distance outside): an incumbent for the branch and bound. None
    /// if the repair fails.
    pub fn heuristic(&self, limits: bool) -> Option<Vec<Vec<i64>>> {
        let nn = self.nodes.len();
        let mut y: Vec<Vec<i64>> = self.workloads.iter().map(|w| w.start.clone()).collect();
        let mut load = vec![[0.0f64; 3]; nn];
        for (wi, w) in self.workloads.iter().enumerate() {
            for n in 0..nn {
                let c = y[wi][n] as f64;
                load[n][CPU] += c * w.requests[CPU];
                load[n][MEMORY] += c * w.requests[MEMORY];
                load[n][2] += c;
            }
        }
        let limit: Vec<i64> = self
            .workloads
            .iter()
            .map(|w| {
                let feasible = w.feasible.iter().filter(|f| **f).count() as i64;
                if limits && self.duplicates && feasible > 0 {
                    (w.replicas() + feasible - 1) / feasible
                } else {
                    i64::MAX
                }
            })
            .collect();
        let fits = |load: &[[f64; 3]], wi: usize, m: usize| {
            let w = &self.workloads[wi];
            let node = &self.nodes[m];
            w.feasible[m]
                && load[m][CPU] + w.requests[CPU] <= node.alloc[CPU] + 1e-9
                && load[m][MEMORY] + w.requests[MEMORY] <= node.alloc[MEMORY] + 1e-9
                && load[m][2] + 1.0 <= node.max_pods
        };
        let shift =
            |y: &mut Vec<Vec<i64>>, load: &mut Vec<[f64; 3]>, wi: usize, from: usize, to: usize| {
                let w = &self.workloads[wi];
                y[wi][from] -= 1;
                y[wi][to] += 1;
                for (r, sign) in [(from, -1.0), (to, 1.0)] {
                    load[r][CPU] += sign * w.requests[CPU];
                    load[r][MEMORY] += sign * w.requests[MEMORY];
                    load[r][2] += sign;
                }
            };
        let zone_counts = |y: &Vec<Vec<i64>>, wi: usize| -> BTreeMap<&str, i64> {
            let w = &self.workloads[wi];
            let mut c: BTreeMap<&str, i64> = (0..nn)
                .filter(|n| w.feasible[*n])
                .map(|n| (self.nodes[n].zone.as_str(), 0))
                .collect();
            for (node, count) in self.nodes.iter().zip(&y[wi]) {
                if let Some(v) = c.get_mut(node.zone.as_str()) {
                    *v += count;
                }
            }
            c
        };
        // Repair: duplicates, then spread.
        for wi in 0..self.workloads.len() {
            for _ in 0..1000 {
                let Some(from) = (0..nn).find(|n| y[wi][*n] > limit[wi]) else {
                    break;
                };
                let to = (0..nn)
                    .filter(|m| y[wi][*m] < limit[wi] && fits(&load, wi, *m))
                    .min_by(|a, b| load[*a][CPU].total_cmp(&load[*b][CPU]))?;
                shift(&mut y, &mut load, wi, from, to);
            }
            if let (true, Some(skew)) = (limits, self.workloads[wi].zone_skew) {
                for _ in 0..1000 {
                    let counts = zone_counts(&y, wi);
                    let (Some((zmax, cmax)), Some((zmin, cmin))) = (
                        counts.iter().max_by_key(|(_, c)| **c),
                        counts.iter().min_by_key(|(_, c)| **c),
                    ) else {
                        break;
                    };
                    if cmax - cmin <= skew {
                        break;
                    }
                    let (zmax, zmin) = (zmax.to_string(), zmin.to_string());
                    let from = (0..nn).find(|n| self.nodes[*n].zone == zmax && y[wi][*n] > 0)?;
                    let to = (0..nn)
                        .filter(|m| self.nodes[*m].zone == zmin)
                        .filter(|m| y[wi][*m] < limit[wi] && fits(&load, wi, *m))
                        .min_by(|a, b| load[*a][CPU].total_cmp(&load[*b][CPU]))?;
                    shift(&mut y, &mut load, wi, from, to);
                }
            }
        }
        // Local search: single moves that lower (outside, distance) of the two nodes.
        for _ in 0..2000 {
            let mut best: Option<((i64, f64), usize, usize, usize)> = None;
            for from in 0..nn {
                let before_from = self.badness(from, &load[from]);
                for wi in 0..self.workloads.len() {
                    if y[wi][from] == 0 {
                        continue;
                    }
                    let w = &self.workloads[wi];
                    let mut lf = load[from];
                    lf[CPU] -= w.requests[CPU];
                    lf[MEMORY] -= w.requests[MEMORY];
                    lf[2] -= 1.0;
                    let after_from = self.badness(from, &lf);
                    for to in 0..nn {
                        if to == from || y[wi][to] >= limit[wi] || !fits(&load, wi, to) {
                            continue;
                        }
                        if limits
                            && w.zone_skew.is_some()
                            && self.nodes[to].zone != self.nodes[from].zone
                        {
                            continue;
                        }
                        let before_to = self.badness(to, &load[to]);
                        let mut lt = load[to];
                        lt[CPU] += w.requests[CPU];
                        lt[MEMORY] += w.requests[MEMORY];
                        lt[2] += 1.0;
                        let after_to = self.badness(to, &lt);
                        let delta = (
                            after_from.0 + after_to.0 - before_from.0 - before_to.0,
                            after_from.1 + after_to.1 - before_from.1 - before_to.1,
                        );
                        let better = delta.0 < 0 || (delta.0 == 0 && delta.1 < -1e-9);
                        if better
                            && best.is_none_or(|b| {
                                delta.0 < b.0 .0 || (delta.0 == b.0 .0 && delta.1 < b.0 .1)
                            })
                        {
                            best = Some((delta, wi, from, to));
                        }
                    }
                }
            }
            let Some((_, wi, from, to)) = best else {
                break;
            };
            shift(&mut y, &mut load, wi, from, to);
        }
        Some(y)
    }

    fn failed(&self, e: ResolutionError, started: Instant) -> Bound {
        Bound {
            moves: f64::NAN,
            outside: f64::NAN,
            optimal: false,
            relaxed: false,
            seconds: started.elapsed().as_secs_f64(),
            note: format!("solver failed: {e}"),
            solver: "",
            incumbent_outside: None,
        }
    }

    fn solve_with(
        &self,
        solver: &IlpSolver,
        integer: bool,
        time_limit: f64,
        limits: bool,
    ) -> Result<Bound, ResolutionError> {
        if limits {
            self.solve_capped(solver, integer, time_limit, None)
        } else {
            let free = Cap {
                moves: f64::INFINITY,
                duplicates_excess: f64::INFINITY,
                spread: false,
            };
            self.solve_capped(solver, integer, time_limit, Some(free))
        }
    }

    /// The program: with no cap, the duplicate and spread limits hard; with a cap, as it says
    /// (an infinite figure is no constraint).
    fn solve_capped(
        &self,
        solver: &IlpSolver,
        integer: bool,
        time_limit: f64,
        cap: Option<Cap>,
    ) -> Result<Bound, ResolutionError> {
        let limits = cap.is_none();
        let spread_limits = cap.is_none_or(|c| c.spread);
        let nn = self.nodes.len();
        let units = self.units();
        let total_pods: i64 = self.workloads.iter().map(|w| w.replicas()).sum();
        let named = self.thresholds.named();
        let mut vars = ProblemVariables::new();
        // y[w][n]: pods of w on n (None where w may not go, unless it is there at the start:
        // a pod in place stays feasible where it is).
        let mut y: Vec<Vec<Option<Variable>>> = Vec::new();
        // d[w][n] >= start - y: pods of w taken off n.
        let mut d: Vec<Vec<Option<Variable>>> = Vec::new();
        // Every variable is named (y W N, d W N, x W N, o N, z N K, in letters: an LP file's names
        // keep only ASCII letters): CBC's start solution names them.
        let mut names: HashMap<Variable, String> = HashMap::new();
        let mut add =
            |vars: &mut ProblemVariables, def: good_lp::VariableDefinition, name: String| {
                let v = vars.add(def.name(name.clone()));
                names.insert(v, name);
                v
            };
        for (wi, w) in self.workloads.iter().enumerate() {
            let r = w.replicas() as f64;
            let mut yw = Vec::new();
            let mut dw = Vec::new();
            for n in 0..nn {
                let allowed = w.feasible[n] || w.start[n] > 0;
                yw.push(allowed.then(|| {
                    let max = if w.feasible[n] { r } else { w.start[n] as f64 };
                    let v = variable().min(0.0).max(max);
                    let v = if integer { v.integer() } else { v };
                    add(&mut vars, v, lp_name('y', &[wi, n]))
                }));
                dw.push((w.start[n] > 0).then(|| {
                    let v = variable().min(0.0).max(w.start[n] as f64);
                    add(&mut vars, v, lp_name('d', &[wi, n]))
                }));
            }
            y.push(yw);
            d.push(dw);
        }
        let mut binary = |vars: &mut ProblemVariables, name: String| {
            let v = variable().min(0.0).max(1.0);
            add(vars, if integer { v.integer() } else { v }, name)
        };
        let o: Vec<Variable> = (0..nn)
            .map(|n| binary(&mut vars, lp_name('o', &[n])))
            .collect();
        // z[n][k]: node n reaches the low threshold of the k-th named resource.
        let z: Vec<Vec<Variable>> = if named.len() > 1 {
            (0..nn)
                .map(|n| {
                    (0..named.len())
                        .map(|k| binary(&mut vars, lp_name('z', &[n, k])))
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        let moves: Expression = d.iter().flatten().flatten().copied().sum();
        let outside: Expression = o.iter().copied().sum();
        let objective = outside.clone() * (total_pods + 1) as f64 + moves.clone();
        let mut constraints: Vec<Constraint> = Vec::new();
        // x[w][n] >= y - limit: pods of w above its fair share on n (a finite duplicates cap).
        let mut excess: Vec<Variable> = Vec::new();
        for (wi, w) in self.workloads.iter().enumerate() {
            let placed: Expression = y[wi].iter().flatten().copied().sum();
            constraints.push(constraint!(placed == w.replicas() as f64));
            for n in 0..nn {
                if let (Some(dv), Some(yv)) = (d[wi][n], y[wi][n]) {
                    constraints.push(constraint!(dv + yv >= w.start[n] as f64));
                } else if let Some(dv) = d[wi][n] {
                    constraints.push(constraint!(dv >= w.start[n] as f64));
                }
            }
            let feasible = w.feasible.iter().filter(|f| **f).count() as i64;
            if self.duplicates && feasible > 0 {
                let limit = ((w.replicas() + feasible - 1) / feasible) as f64;
                for (n, yv) in y[wi].iter().enumerate() {
                    let Some(yv) = *yv else { continue };
                    match cap {
                        None => constraints.push(constraint!(yv <= limit)),
                        Some(c) if c.duplicates_excess.is_finite() => {
                            let e = add(&mut vars, variable().min(0.0), lp_name('x', &[wi, n]));
                            constraints.push(constraint!(e - yv >= -limit));
                            excess.push(e);
                        }
                        Some(_) => {}
                    }
                }
            }
            if let (true, Some(skew)) = (spread_limits, w.zone_skew) {
                let zones: BTreeSet<&str> = (0..nn)
                    .filter(|n| w.feasible[*n])
                    .map(|n| self.nodes[n].zone.as_str())
                    .collect();
                let in_zone = |zone: &str| -> Expression {
                    (0..nn)
                        .filter(|n| self.nodes[*n].zone == zone)
                        .filter_map(|n| y[wi][n])
                        .sum()
                };
                for a in &zones {
                    for b in &zones {
                        if a != b {
                            constraints.push(constraint!(in_zone(a) - in_zone(b) <= skew as f64));
                        }
                    }
                }
            }
        }
        if let Some(c) = cap {
            if c.duplicates_excess.is_finite() {
                let total: Expression = excess.iter().copied().sum();
                constraints.push(constraint!(total <= c.duplicates_excess));
            }
            if c.moves.is_finite() {
                constraints.push(constraint!(moves.clone() <= c.moves));
            }
        }
        for (n, node) in self.nodes.iter().enumerate() {
            // Requests in whole units of the resource (`units`), so every amount below is an
            // integer: a node's load is a sum of its pods' requests.
            let on = |r: Option<usize>| -> Expression {
                self.workloads
                    .iter()
                    .enumerate()
                    .filter_map(|(wi, w)| {
                        y[wi][n].map(|v| v * r.map(|r| units.of(r, w.requests[r])).unwrap_or(1.0))
                    })
                    .sum()
            };
            for r in [CPU, MEMORY] {
                constraints.push(constraint!(on(Some(r)) <= units.floor(r, node.alloc[r])));
            }
            constraints.push(constraint!(on(None) <= node.max_pods));
            // Within the thresholds unless o[n]: at most high on every named resource, and
            // above low on one of them (LowNodeUtilization: a node at or below its low
            // thresholds on every resource is underutilized): in whole units, at most the
            // last unit within high, at least the first above low.
            for (k, (r, low, high)) in named.iter().enumerate() {
                let cap = units.floor(*r, node.alloc[*r]);
                let within_high = units.floor(*r, node.alloc[*r] * high / 100.0);
                let above_low = units.floor(*r, node.alloc[*r] * low / 100.0) + 1.0;
                constraints.push(constraint!(
                    on(Some(*r)) - (cap - within_high).max(0.0) * o[n] <= within_high
                ));
                if named.len() == 1 {
                    constraints.push(constraint!(on(Some(*r)) + above_low * o[n] >= above_low));
                } else {
                    constraints.push(constraint!(on(Some(*r)) - above_low * z[n][k] >= 0.0));
                }
            }
            if named.len() > 1 {
                let reached: Expression = z[n].iter().copied().sum();
                constraints.push(constraint!(reached + o[n] >= 1.0));
            }
        }
        let mut hint: Vec<(Variable, f64)> = Vec::new();
        // The start solution keeps the limits or none: not one for a finite cap.
        let capped = cap.is_some_and(|c| c.moves.is_finite() || c.duplicates_excess.is_finite());
        if integer && !capped {
            if let Some(h) = self.heuristic(limits) {
                let mut load = vec![[0.0f64; 3]; nn];
                for (wi, w) in self.workloads.iter().enumerate() {
                    for n in 0..nn {
                        if let Some(v) = y[wi][n] {
                            hint.push((v, h[wi][n] as f64));
                        }
                        if let Some(v) = d[wi][n] {
                            hint.push((v, (w.start[n] - h[wi][n]).max(0) as f64));
                        }
                        load[n][CPU] += h[wi][n] as f64 * w.requests[CPU];
                        load[n][MEMORY] += h[wi][n] as f64 * w.requests[MEMORY];
                    }
                }
                for n in 0..nn {
                    let node = &self.nodes[n];
                    let pct = [
                        100.0 * load[n][CPU] / node.alloc[CPU].max(1e-9),
                        100.0 * load[n][MEMORY] / node.alloc[MEMORY].max(1e-9),
                    ];
                    let out = self.thresholds.outside(&pct);
                    hint.push((o[n], f64::from(u8::from(out))));
                    if named.len() > 1 {
                        for (k, (r, low, _)) in named.iter().enumerate() {
                            let reached = pct[*r] > *low + PERCENT_NOISE;
                            hint.push((z[n][k], f64::from(u8::from(reached))));
                        }
                    }
                }
            }
        }
        let integers: Vec<Variable> = y
            .iter()
            .chain(&d)
            .flatten()
            .flatten()
            .chain(&o)
            .chain(z.iter().flatten())
            .copied()
            .collect();
        let move_vars: Vec<Variable> = d.iter().flatten().flatten().copied().collect();
        let answer = |solution: &dyn Solution, optimal: bool| {
            // An integer program's answer is whole pods and whole nodes, or it is not one.
            let fractional = integers
                .iter()
                .filter(|&&v| (solution.value(v) - solution.value(v).round()).abs() > 1e-6)
                .count();
            let refused = integer && fractional > 0;
            Bound {
                moves: move_vars.iter().map(|&v| solution.value(v)).sum(),
                outside: o.iter().map(|&v| solution.value(v)).sum(),
                optimal: integer && optimal && !refused,
                relaxed: !integer,
                seconds: 0.0,
                note: if refused {
                    format!("the solver's answer has {fractional} fractional values: refused")
                } else {
                    String::new()
                },
                solver: solver.name(),
                incumbent_outside: None,
            }
        };
        match solver {
            IlpSolver::Microlp => {
                let mut problem = vars
                    .minimise(objective)
                    .using(good_lp::microlp)
                    .with_time_limit(time_limit);
                for c in constraints {
                    problem.add_constraint(c);
                }
                if !hint.is_empty() {
                    problem = problem.with_initial_solution(hint);
                }
                let solution = problem.solve()?;
                let optimal = matches!(solution.status(), SolutionStatus::Optimal);
                Ok(answer(&solution, optimal))
            }
            IlpSolver::Cbc(program) => {
                let start = hint.iter().map(|(v, x)| (names[v].clone(), *x)).collect();
                let cbc = DeadlineCbc::new(program, time_limit).with_start(start);
                let mut problem = vars
                    .minimise(objective)
                    .using(good_lp::LpSolver(cbc.clone()));
                for c in constraints {
                    problem.add_constraint(c);
                }
                let solution = problem.solve()?;
                let optimal = cbc.status() == Some(lp_solvers::solvers::Status::Optimal);
                Ok(answer(&solution, optimal))
            }
        }
    }

    /// The units the program counts each resource in: the largest that divides every
    /// workload's request (a millicore and a byte at least), so that loads, capacities and
    /// thresholds are whole numbers of similar size for cpu and memory (bytes alone run to
    /// 1e10 against millicores' 1e4, which the solver's tolerances do not take well).
    fn units(&self) -> Units {
        let mut unit = [0i64; 2];
        for w in &self.workloads {
            for r in [CPU, MEMORY] {
                let q = (w.requests[r] / least_unit(r)).round() as i64;
                if q > 0 {
                    unit[r] = gcd(unit[r], q);
                }
            }
        }
        Units {
            of: [CPU, MEMORY].map(|r| unit[r].max(1) as f64 * least_unit(r)),
        }
    }
}

/// A variable's name in letters only: `kind`, then each number's digits as the letters a-j,
/// the numbers separated by q (`lp_name('y', &[12, 3])` is `ybcqd`).
fn lp_name(kind: char, numbers: &[usize]) -> String {
    let mut name = String::from(kind);
    for (i, n) in numbers.iter().enumerate() {
        if i > 0 {
            name.push('q');
        }
        name.extend(n.to_string().bytes().map(|b| char::from(b - b'0' + b'a')));
    }
    name
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}; {b}")
    }
}

/// Each resource's unit in the integer program, in its quantity (cores, bytes).
struct Units {
    of: [f64; 2],
}

impl Units {
    /// A request in whole units.
    fn of(&self, r: usize, quantity: f64) -> f64 {
        (quantity / self.of[r]).round()
    }

    /// The whole units within `quantity` (a capacity or a threshold's amount).
    fn floor(&self, r: usize, quantity: f64) -> f64 {
        let x = quantity / self.of[r];
        (x + PERCENT_NOISE * x.abs().max(1.0)).floor()
    }
}

/// The solver of the integer program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IlpSolver {
    /// COIN-OR CBC's command-line program (Debian's `coinor-cbc`), given the program as an LP
    /// file and run as a child process, killed at its deadline ([`DeadlineCbc`]).
    Cbc(PathBuf),
    /// good_lp's pure-Rust microlp, in process.
    Microlp,
}

impl IlpSolver {
    /// `OUTCOME_SOLVER=microlp` or `OUTCOME_SOLVER=cbc` (or a path to a `cbc`); otherwise
    /// CBC when `cbc` is on PATH, microlp when it is not.
    pub fn detect() -> IlpSolver {
        match std::env::var("OUTCOME_SOLVER").ok().as_deref() {
            Some("microlp") => IlpSolver::Microlp,
            Some("cbc") | None => match which("cbc") {
                Some(p) => IlpSolver::Cbc(p),
                None => IlpSolver::Microlp,
            },
            Some(path) => IlpSolver::Cbc(PathBuf::from(path)),
        }
    }

    /// CBC, which must be installed (`scripts/install-cbc`).
    pub fn cbc() -> IlpSolver {
        IlpSolver::Cbc(which("cbc").expect(
            "cbc is not on PATH: install COIN-OR CBC's program (scripts/install-cbc: Debian's coinor-cbc)",
        ))
    }

    pub fn name(&self) -> &'static str {
        match self {
            IlpSolver::Cbc(_) => "CBC",
            IlpSolver::Microlp => "microlp",
        }
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// Programs kept for `OUTCOME_CBC_KEEP`, numbered.
static KEPT: AtomicU32 = AtomicU32::new(0);

/// How long past its own time limit CBC may run before it is killed: its limit is checked
/// between nodes of the branch and bound, and an LP solve may not return to the check
/// (Clp has been seen running for minutes past it).
const CBC_GRACE: Duration = Duration::from_secs(5);

/// CBC's command-line program as lp-solvers runs it (`cbc FILE.lp seconds N solve solution
/// FILE`), but as a child process with a hard deadline: at `seconds` plus [`CBC_GRACE`] it is
/// killed and the solve fails. The solution file's status (proven optimal or not) is kept
/// for the caller, since good_lp's external-solver solutions do not carry it.
#[derive(Clone)]
pub struct DeadlineCbc {
    program: PathBuf,
    seconds: f64,
    /// A feasible solution to start from (variable name, value), given to cbc's `mips`.
    start: Vec<(String, f64)>,
    status: Arc<std::sync::Mutex<Option<lp_solvers::solvers::Status>>>,
}

impl DeadlineCbc {
    pub fn new(program: &Path, seconds: f64) -> DeadlineCbc {
        DeadlineCbc {
            program: program.to_path_buf(),
            seconds,
            start: Vec::new(),
            status: Default::default(),
        }
    }

    /// Starts the branch and bound from a feasible solution (CBC checks it; one that is not
    /// feasible is dropped).
    pub fn with_start(self, start: Vec<(String, f64)>) -> DeadlineCbc {
        DeadlineCbc { start, ..self }
    }

    /// The status of the last solve (None: it failed).
    pub fn status(&self) -> Option<lp_solvers::solvers::Status> {
        self.status.lock().expect("status lock").clone()
    }
}

impl lp_solvers::solvers::SolverTrait for DeadlineCbc {
    fn run<'a, P: LpProblem<'a>>(
        &self,
        problem: &'a P,
    ) -> Result<lp_solvers::solvers::Solution, String> {
        *self.status.lock().expect("status lock") = None;
        let cbc = CbcSolver::new().with_max_seconds(self.seconds.ceil().max(1.0) as u32);
        let lp = problem
            .to_tmp_file()
            .map_err(|e| format!("writing the LP file: {e}"))?;
        let dir = tempfile::tempdir().map_err(|e| format!("a directory for cbc: {e}"))?;
        let (solution_file, log_file) = (dir.path().join("solution"), dir.path().join("log"));
        let log = std::fs::File::create(&log_file).map_err(|e| format!("cbc's log: {e}"))?;
        let mut args: Vec<std::ffi::OsString> = vec![lp.path().into()];
        if !self.start.is_empty() {
            // cbc reads a start in its own solution format: a status line, then one line per
            // variable (index, name, value).
            let mut text = String::from("Stopped on time - objective value 0\n");
            for (i, (name, value)) in self.start.iter().enumerate() {
                let _ = writeln!(text, "{i} {name} {value}");
            }
            let start_file = dir.path().join("start");
            std::fs::write(&start_file, text).map_err(|e| format!("cbc's start: {e}"))?;
            args.extend(["mips".into(), start_file.into()]);
        }
        // lp-solvers' own arguments after the file: the time limit, solve, the solution file.
        args.extend(cbc.arguments(lp.path(), &solution_file).into_iter().skip(1));
        let mut child = std::process::Command::new(&self.program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("running {}: {e}", self.program.display()))?;
        let deadline = Instant::now() + Duration::from_secs_f64(self.seconds) + CBC_GRACE;
        let exit = loop {
            match child.try_wait() {
                Ok(Some(exit)) => break exit,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "cbc ran {:.0} s past its {:.0} s limit and was killed",
                        CBC_GRACE.as_secs_f64(),
                        self.seconds
                    ));
                }
                Err(e) => return Err(format!("waiting for cbc: {e}")),
            }
        };
        if let Some(keep) = std::env::var_os("OUTCOME_CBC_KEEP") {
            // The program, its start and cbc's log, to run again by hand.
            let keep = PathBuf::from(keep);
            let stem = format!(
                "{}-{}",
                std::process::id(),
                KEPT.fetch_add(1, Ordering::Relaxed)
            );
            let _ = std::fs::create_dir_all(&keep);
            let _ = std::fs::copy(lp.path(), keep.join(format!("{stem}.lp")));
            let _ = std::fs::copy(dir.path().join("start"), keep.join(format!("{stem}.start")));
            let _ = std::fs::copy(&log_file, keep.join(format!("{stem}.log")));
        }
        if !exit.success() {
            return Err(format!("cbc exited with {exit}"));
        }
        let solution = cbc.read_solution_from_path(&solution_file, Some(problem))?;
        *self.status.lock().expect("status lock") = Some(solution.status.clone());
        Ok(solution)
    }
}

// ---------------------------------------------------------------------------------------------
// Scenario families

/// The scenario families of the benchmark. Each leaves rebalancing work on fresh nodes; all
/// use the same policy ([`policy_yaml`]): RemoveDuplicates,
/// RemovePodsViolatingTopologySpreadConstraint and LowNodeUtilization on cpu and memory,
/// DefaultEvictor `nodeFit: true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scenario {
    /// 8 to 14 nodes filled above the high threshold, then 4 to 8 empty nodes join.
    NewNodes,
    /// 2 or 3 nodes filled far above (about 90%) while the others are cordoned; the others
    /// open and more Deployments fill them to the middle of the band.
    HotSpots,
    /// Zones a and b (2 or 3 nodes each) take Deployments with DoNotSchedule zone spread
    /// (maxSkew 1) and plain ones; then zone c's nodes come (back); the spread Deployment
    /// `web` has a PDB allowing one disruption.
    SpreadDrift,
    /// 3 or 4 nodes hold Deployments of 4 to 8 small replicas (in the band), then 3 to 5
    /// empty nodes join: duplicates to spread, little to balance.
    Duplicates,
    /// Pods big enough (55% of a node's cpu) to overload any node they land on (upstream
    /// #1695), with small ones, on 4 nodes; then 3 or 4 empty nodes join. Thresholds 20/50.
    BigPods,
    /// As NewNodes, smaller, every Deployment under a PDB of minAvailable = replicas - 1.
    PdbTight,
}

impl Scenario {
    pub const ALL: [Scenario; 6] = [
        Scenario::NewNodes,
        Scenario::HotSpots,
        Scenario::SpreadDrift,
        Scenario::Duplicates,
        Scenario::BigPods,
        Scenario::PdbTight,
    ];

    /// The family of a seed when one per seed: `(seed - 1) % 6`, so seeds 1-6 cover them all.
    pub fn of(seed: u64) -> Scenario {
        Scenario::ALL[(seed.max(1) - 1) as usize % Scenario::ALL.len()]
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::NewNodes => "new-nodes",
            Scenario::HotSpots => "hot-spots",
            Scenario::SpreadDrift => "spread-drift",
            Scenario::Duplicates => "duplicates",
            Scenario::BigPods => "big-pods",
            Scenario::PdbTight => "pdb-tight",
        }
    }

    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The thresholds of the scenario and seed: low 15-30, high 45-60 (the same for cpu and
    /// memory); big pods 20/50.
    pub fn thresholds(self, seed: u64) -> Thresholds {
        if self == Scenario::BigPods {
            return Thresholds::cpu_memory(20.0, 50.0);
        }
        let mut rng = Rng::new(seed.wrapping_mul(7919).wrapping_add(self as u64));
        let low = 5 * rng.range(3, 6);
        let high = 5 * rng.range(9, 12);
        Thresholds::cpu_memory(low as f64, high as f64)
    }
}

/// The policy file, confined to the nodes labelled `GROUP_LABEL=group`.
pub fn policy_yaml(group: &str, t: &Thresholds) -> String {
    let (low, high) = (t.low[CPU].unwrap_or(0.0), t.high[CPU].unwrap_or(100.0));
    let (mlow, mhigh) = (
        t.low[MEMORY].unwrap_or(0.0),
        t.high[MEMORY].unwrap_or(100.0),
    );
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
profiles:
- name: rebalance
  pluginConfig:
  - name: DefaultEvictor
    args: {{nodeFit: true}}
  - name: RemoveDuplicates
  - name: RemovePodsViolatingTopologySpreadConstraint
  - name: LowNodeUtilization
    args:
      thresholds: {{cpu: {low}, memory: {mlow}}}
      targetThresholds: {{cpu: {high}, memory: {mhigh}}}
  plugins:
    balance:
      enabled: [RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint, LowNodeUtilization]
"#
    )
}

/// The policy of [`Binary::OursOutcome`]: the same thresholds, spreads and duplicates planned
/// together by OutcomeBalance instead of RemoveDuplicates, the topology spread plugin and
/// LowNodeUtilization.
pub fn outcome_policy_yaml(group: &str, t: &Thresholds) -> String {
    let (low, high) = (t.low[CPU].unwrap_or(0.0), t.high[CPU].unwrap_or(100.0));
    let (mlow, mhigh) = (
        t.low[MEMORY].unwrap_or(0.0),
        t.high[MEMORY].unwrap_or(100.0),
    );
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
profiles:
- name: rebalance
  pluginConfig:
  - name: DefaultEvictor
    args: {{nodeFit: true}}
  - name: OutcomeBalance
    args:
      thresholds: {{cpu: {low}, memory: {mlow}}}
      targetThresholds: {{cpu: {high}, memory: {mhigh}}}
  plugins:
    balance:
      enabled: [OutcomeBalance]
"#
    )
}

/// A start state on the cluster.
#[derive(Clone, Debug)]
pub struct Built {
    pub scenario: Scenario,
    pub seed: u64,
    pub group: String,
    pub namespace: String,
    pub thresholds: Thresholds,
    pub policy_yaml: String,
    /// Each Deployment's name and replicas.
    pub workloads: Vec<(String, i32)>,
    pub nodes: usize,
    pub summary: String,
}

impl Built {
    pub fn pods(&self) -> usize {
        self.workloads.iter().map(|(_, r)| *r as usize).sum()
    }
}

/// Creates nodes of (cpu, zone, cordoned) all at once (memory 4 GiB per cpu); their names.
async fn make_nodes(client: &Client, group: &str, plans: &[(i64, &str, bool)]) -> Vec<String> {
    let made = plans.iter().map(|(cpu, zone, cordoned)| {
        let name = unique("o");
        let mut config = NodeConfig::new(&name)
            .label(GROUP_LABEL, group)
            .label(ZONE, zone)
            .cpu(&cpu.to_string())
            .memory(&format!("{}Gi", 4 * cpu));
        if *cordoned {
            config = config.unschedulable();
        }
        let client = client.clone();
        async move {
            create_node(&client, config).await;
            name
        }
    });
    futures::future::join_all(made).await
}

async fn uncordon(client: &Client, name: &str) {
    let nodes: Api<Node> = Api::all(client.clone());
    let patch = serde_json::json!({ "spec": { "unschedulable": null } });
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("uncordoning {name}: {e}"));
    wait_for(&format!("node {name} uncordoned"), TIMEOUT, || {
        let nodes = &nodes;
        async move {
            let node = nodes.get(name).await.ok()?;
            let spec = node.spec.as_ref()?;
            let cordon = spec
                .taints
                .iter()
                .flatten()
                .any(|t| t.key == UNSCHEDULABLE_TAINT);
            (spec.unschedulable != Some(true) && !cordon).then_some(())
        }
    })
    .await
}

/// Creates the workloads and waits until each has its replicas Running.
async fn place(client: &Client, namespace: &str, workloads: &[Workload]) {
    for w in workloads {
        w.create(client, namespace).await;
    }
    for w in workloads {
        wait_running_pods(
            client,
            namespace,
            &app_selector(&w.name),
            w.replicas as usize,
        )
        .await;
    }
}

fn pod(group: &str, cpu: i64, memory_per_milli: i64) -> PodConfig {
    PodConfig::new()
        .node_selector(GROUP_LABEL, group)
        .cpu(&format!("{cpu}m"))
        .memory(&format!("{}Mi", cpu * memory_per_milli))
}

/// `count` workloads named `prefix-i` sharing `budget` millicores: a cpu request per pod of
/// 100 to `max_pod` near `budget / pods` (pods drawn in `pods`), replicas >= 2.
fn draw(
    rng: &mut Rng,
    group: &str,
    prefix: &str,
    count: usize,
    budget: i64,
    pods: (i64, i64),
    max_pod: i64,
) -> Vec<Workload> {
    let target = rng.range(pods.0, pods.1);
    let average = (budget / target.max(1)).clamp(100, max_pod);
    let weights: Vec<i64> = (0..count).map(|_| rng.range(1, 3)).collect();
    let total: i64 = weights.iter().sum();
    weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let share = budget * w / total;
            let factor = rng.pick(&[60, 80, 100, 120, 140]);
            let cpu = (average * factor / 100 / 50 * 50).clamp(100, max_pod);
            let replicas = ((share + cpu / 2) / cpu).max(2) as i32;
            Workload::new(
                &format!("{prefix}-{i}"),
                replicas,
                pod(group, cpu, rng.range(1, 4)),
            )
        })
        .collect()
}

fn zone(i: usize) -> &'static str {
    ["a", "b", "c"][i % 3]
}

impl Scenario {
    /// Builds the scenario's start state of `seed` (the same seed draws the same nodes and
    /// Deployments; kube-scheduler places the pods).
    pub async fn build(self, client: &Client, seed: u64) -> Built {
        let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(self as u64));
        let thresholds = self.thresholds(seed);
        let (low, high) = (
            thresholds.low[CPU].unwrap() as i64,
            thresholds.high[CPU].unwrap() as i64,
        );
        let group = unique(&format!("o{seed}"));
        let namespace = create_namespace(client, &format!("outcome{seed}")).await;
        let mut workloads: Vec<Workload> = Vec::new();
        let nodes;
        let summary;
        match self {
            Scenario::NewNodes | Scenario::PdbTight => {
                let (filled, joining, pods) = if self == Scenario::NewNodes {
                    (rng.range(8, 14), rng.range(4, 8), (50, 80))
                } else {
                    (rng.range(6, 9), rng.range(3, 5), (30, 50))
                };
                let fill = rng.range((high + 10).max(66), 78);
                let plans: Vec<(i64, &str, bool)> = (0..filled as usize)
                    .map(|i| (rng.pick(&[4, 8]), zone(i), false))
                    .collect();
                let cores: i64 = plans.iter().map(|p| p.0).sum();
                make_nodes(client, &group, &plans).await;
                let count = rng.range(4, 7) as usize;
                workloads = draw(&mut rng, &group, "app", count, cores * 10 * fill, pods, 750);
                place(client, &namespace, &workloads).await;
                if self == Scenario::PdbTight {
                    for w in &workloads {
                        create_pdb(
                            client,
                            &namespace,
                            &w.name,
                            &[("app", &w.name)],
                            Budget::MinAvailable(IntOrString::Int(w.replicas - 1)),
                        )
                        .await;
                        wait_pdb(client, &namespace, &w.name, w.replicas, 1).await;
                    }
                }
                let joiners: Vec<(i64, &str, bool)> = (0..joining as usize)
                    .map(|i| (rng.pick(&[4, 8]), zone(i), false))
                    .collect();
                make_nodes(client, &group, &joiners).await;
                nodes = plans.len() + joiners.len();
                summary =
                    format!("{filled} nodes filled to {fill}% ({cores} cpu), {joining} joined");
            }
            Scenario::HotSpots => {
                let hot = rng.range(2, 3) as usize;
                let total = rng.range(10, 16) as usize;
                let plans: Vec<(i64, &str, bool)> =
                    (0..total).map(|i| (8, zone(i), i >= hot)).collect();
                let names = make_nodes(client, &group, &plans).await;
                let fill = rng.range(86, 92);
                let count = rng.range(2, 3) as usize;
                workloads = draw(
                    &mut rng,
                    &group,
                    "hot",
                    count,
                    hot as i64 * 8 * 10 * fill,
                    (16, 30),
                    500,
                );
                place(client, &namespace, &workloads).await;
                for n in &names[hot..] {
                    uncordon(client, n).await;
                }
                let mid = (low + high) / 2;
                let count = rng.range(2, 4) as usize;
                let rest = draw(
                    &mut rng,
                    &group,
                    "mid",
                    count,
                    (total - hot) as i64 * 8 * 10 * mid,
                    (25, 45),
                    750,
                );
                place(client, &namespace, &rest).await;
                workloads.extend(rest);
                nodes = total;
                summary = format!("{hot} hot nodes at {fill}% of {total}, the rest near {mid}%");
            }
            Scenario::SpreadDrift => {
                let per_zone = rng.range(2, 3) as usize;
                let plans: Vec<(i64, &str, bool)> = (0..2 * per_zone)
                    .map(|i| (8, ["a", "b"][i % 2], false))
                    .collect();
                make_nodes(client, &group, &plans).await;
                let fill = rng.range(55, 70);
                let spread = rng.range(2, 3) as usize;
                let plain = rng.range(1, 2) as usize;
                let budget = (2 * per_zone) as i64 * 8 * 10 * fill;
                let mut drawn = draw(
                    &mut rng,
                    &group,
                    "spread",
                    spread + plain,
                    budget,
                    (30, 50),
                    750,
                );
                for (i, w) in drawn.iter_mut().enumerate() {
                    if i < spread {
                        w.pod = w.pod.clone().spread(1, ZONE, "DoNotSchedule");
                        w.name = if i == 0 {
                            "web".to_string()
                        } else {
                            format!("spread-{i}")
                        };
                    } else {
                        w.name = format!("plain-{i}");
                    }
                }
                workloads = drawn;
                place(client, &namespace, &workloads).await;
                let web = &workloads[0];
                create_pdb(
                    client,
                    &namespace,
                    "web",
                    &[("app", "web")],
                    Budget::MaxUnavailable(IntOrString::Int(1)),
                )
                .await;
                wait_pdb(client, &namespace, "web", web.replicas, 1).await;
                let zone_c: Vec<(i64, &str, bool)> =
                    (0..per_zone).map(|_| (8, "c", false)).collect();
                make_nodes(client, &group, &zone_c).await;
                nodes = 3 * per_zone;
                summary = format!(
                    "{per_zone} nodes per zone, zones a and b filled to {fill}%, zone c joined; {spread} spread Deployments, PDB on web"
                );
            }
            Scenario::Duplicates => {
                let first = rng.range(3, 4) as usize;
                let joining = rng.range(3, 5) as usize;
                let plans: Vec<(i64, &str, bool)> =
                    (0..first).map(|i| (8, zone(i), false)).collect();
                make_nodes(client, &group, &plans).await;
                let fill = rng.range(low + 5, high - 5);
                let count = rng.range(3, 5) as usize;
                let budget = first as i64 * 8 * 10 * fill;
                workloads = draw(&mut rng, &group, "dup", count, budget, (16, 30), 500);
                for w in &mut workloads {
                    w.replicas = w.replicas.clamp(4, 8);
                }
                place(client, &namespace, &workloads).await;
                let joiners: Vec<(i64, &str, bool)> =
                    (0..joining).map(|i| (8, zone(i + first), false)).collect();
                make_nodes(client, &group, &joiners).await;
                nodes = first + joining;
                summary = format!("{first} nodes near {fill}%, {joining} joined");
            }
            Scenario::BigPods => {
                let first = 4;
                let joining = rng.range(3, 4) as usize;
                let plans: Vec<(i64, &str, bool)> =
                    (0..first).map(|i| (4, zone(i), false)).collect();
                make_nodes(client, &group, &plans).await;
                let big = rng.range(2, 3) as i32;
                workloads.push(Workload::new("big", big, pod(&group, 2200, 2)));
                let small_budget = first as i64 * 4 * 10 * 65 - i64::from(big) * 2200;
                let count = rng.range(2, 3) as usize;
                workloads.extend(draw(
                    &mut rng,
                    &group,
                    "small",
                    count,
                    small_budget,
                    (12, 20),
                    400,
                ));
                place(client, &namespace, &workloads).await;
                let joiners: Vec<(i64, &str, bool)> =
                    (0..joining).map(|i| (4, zone(i + first), false)).collect();
                make_nodes(client, &group, &joiners).await;
                nodes = first + joining;
                summary = format!(
                    "{big} pods of 2.2 cpu on 4-cpu nodes, {first} filled, {joining} joined"
                );
            }
        }
        let summary = format!(
            "{summary}; workloads {}",
            workloads
                .iter()
                .map(|w| format!(
                    "{}x{}({})",
                    w.name,
                    w.replicas,
                    w.pod.cpu.as_deref().unwrap_or("-")
                ))
                .collect::<Vec<_>>()
                .join(" ")
        );
        Built {
            scenario: self,
            seed,
            policy_yaml: policy_yaml(&group, &thresholds),
            group,
            namespace,
            thresholds,
            workloads: workloads
                .iter()
                .map(|w| (w.name.clone(), w.replicas))
                .collect(),
            nodes,
            summary,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Running a binary in continuous mode, and watching

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Binary {
    Ours,
    /// Our binary with the outcome planner ([`outcome_policy_yaml`]).
    OursOutcome,
    Upstream,
}

impl Binary {
    pub fn name(self) -> &'static str {
        match self {
            Binary::Ours => "ours",
            Binary::OursOutcome => "ours-outcome",
            Binary::Upstream => "upstream",
        }
    }

    /// Whether this is our binary (either policy).
    pub fn is_ours(self) -> bool {
        self != Binary::Upstream
    }
}

/// Upstream v0.36.0: `$DESCHEDULER_UPSTREAM_BIN`, or `.cache/upstream/bin/descheduler-upstream`
/// of the crate (made by `scripts/build-upstream`).
pub fn upstream_bin() -> PathBuf {
    match std::env::var_os("DESCHEDULER_UPSTREAM_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/upstream/bin/descheduler-upstream"),
    }
}

/// How a binary is run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub cycles: usize,
    pub interval: Duration,
    /// Our `--eviction-cooldown` (None: its default).
    pub cooldown: Option<String>,
    /// Our binary with `--await-placement` (the closed loop).
    pub await_placement: bool,
    /// The integer program's time bound, in seconds.
    pub ilp_seconds: f64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            cycles: 5,
            interval: Duration::from_secs(20),
            cooldown: None,
            await_placement: false,
            ilp_seconds: 20.0,
        }
    }
}

/// One cycle's figures.
#[derive(Clone, Debug, Default)]
pub struct Cycle {
    pub evictions: usize,
    /// Evictions of pods that were themselves replacements (created during the run).
    pub reevicted: usize,
    /// Replacements that landed on a node a pod of their workload had just been evicted from.
    pub home: usize,
}

/// A run's outcome.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub binary: Binary,
    pub start: Figures,
    pub end: Figures,
    pub bound: Bound,
    /// The start state's integer program, for bounds with other caps ([`Model::solve_within`]).
    pub model: Model,
    /// The start state as our binary read it (its first cycle's snapshot), for
    /// [`super::witness::search`]; None for upstream, or where it could not be read (a note
    /// says why).
    pub start_snapshot: Option<WitnessStart>,
    pub cycles: Vec<Cycle>,
    pub evictions: usize,
    /// reevicted + home, over the run.
    pub churn: usize,
    /// Pods left Pending at the end (every pod was Running at the start).
    pub pending: usize,
    /// PDBs seen with currentHealthy below desiredHealthy at some poll.
    pub pdb_overruns: usize,
    /// The last cycle that evicted anything (0: none did).
    pub settle: usize,
    pub notes: Vec<String>,
    pub seconds: f64,
}

/// What [`super::witness::search`] starts from.
#[derive(Clone, Debug)]
pub struct WitnessStart {
    pub snapshot: Arc<descheduler::snapshot::ClusterSnapshot>,
    pub namespace: String,
    /// The planning nodes' group (their `GROUP_LABEL`), and the nodes, by name.
    pub group: String,
    pub nodes: Vec<String>,
    pub thresholds: Thresholds,
}

impl WitnessStart {
    /// [`super::witness::search`] from this start, within `cap`.
    pub fn search(
        &self,
        cap: Cap,
        effort: super::witness::Effort,
    ) -> Option<super::witness::Witness> {
        super::witness::search(
            &self.snapshot,
            &self.namespace,
            &self.nodes,
            self.thresholds,
            cap,
            effort,
        )
    }
}

/// The first snapshot in a decision log folder (its first cycle's), or why there is none.
pub fn first_snapshot(dir: &Path) -> Result<descheduler::snapshot::ClusterSnapshot, String> {
    let first = first_snapshot_file(dir)?;
    descheduler::snapshot::decode::load_file(&first).map_err(|e| e.to_string())
}

/// The file of [`first_snapshot`].
pub fn first_snapshot_file(dir: &Path) -> Result<PathBuf, String> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".snapshot.json.gz"))
        .collect();
    files.sort();
    files
        .into_iter()
        .next()
        .ok_or_else(|| format!("{}: no *.snapshot.json.gz", dir.display()))
}

/// The planning time (Unix seconds) of the decision a decision log's snapshot file belongs
/// to (its `now`).
pub fn decision_now(snapshot_file: &Path) -> Result<i64, String> {
    let name = snapshot_file.to_string_lossy();
    let decision = PathBuf::from(format!(
        "{}.json",
        name.strip_suffix(".snapshot.json.gz").unwrap_or(&name)
    ));
    let text = fs::read_to_string(&decision).map_err(|e| format!("{}: {e}", decision.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", decision.display()))?;
    v["now"]
        .as_i64()
        .ok_or_else(|| format!("{}: no `now`", decision.display()))
}

async fn state_nodes(client: &Client, group: &str) -> Vec<NodeInfo> {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut out: Vec<NodeInfo> = nodes
        .list(&ListParams::default().labels(&format!("{GROUP_LABEL}={group}")))
        .await
        .unwrap()
        .items
        .iter()
        .map(NodeInfo::of)
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

async fn list_pods(client: &Client, namespace: &str) -> Option<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    Some(pods.list(&ListParams::default()).await.ok()?.items)
}

/// The start state's figures and bound, read from the cluster.
pub async fn start_state(
    client: &Client,
    built: &Built,
    ilp_seconds: f64,
) -> (Vec<NodeInfo>, Vec<PodInfo>, Figures, Bound) {
    let nodes = state_nodes(client, &built.group).await;
    let pods: Vec<PodInfo> = list_pods(client, &built.namespace)
        .await
        .unwrap_or_default()
        .iter()
        .map(PodInfo::of)
        .collect();
    let figures = figures(&nodes, &pods, &built.thresholds);
    let model = Model::of(&nodes, &pods, built.thresholds, true);
    let bound = tokio::task::spawn_blocking(move || model.solve(ilp_seconds))
        .await
        .unwrap();
    (nodes, pods, figures, bound)
}

/// A running binary: the times its cycles ended (unix seconds), as they come.
struct Running {
    child: tokio::process::Child,
    ends: Arc<Mutex<Vec<f64>>>,
    log: Arc<Mutex<String>>,
    decision_log: Option<PathBuf>,
}

impl Running {
    fn ends(&self) -> Vec<f64> {
        if let Some(dir) = &self.decision_log {
            // One record per cycle, written at its end.
            let mut times: Vec<f64> = fs::read_dir(dir)
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                        .filter_map(|e| e.metadata().ok()?.modified().ok())
                        .map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64())
                        .collect()
                })
                .unwrap_or_default();
            times.sort_by(f64::total_cmp);
            return times;
        }
        self.ends.lock().unwrap().clone()
    }
}

fn spawn(binary: Binary, cluster: &Cluster, policy: &Path, dir: &Path, cfg: &RunConfig) -> Running {
    let interval = format!("{}s", cfg.interval.as_secs().max(1));
    let mut command = match binary {
        Binary::Ours | Binary::OursOutcome => {
            let mut c = tokio::process::Command::new(bin());
            // The first cycle's snapshot is the start state as our binary read it, for the
            // search of plans kube-scheduler carries out (`super::witness`).
            c.arg("--decision-log").arg(dir.join("decisions")).args([
                "-o",
                "json",
                "--decision-log-snapshot",
            ]);
            if let Some(cooldown) = &cfg.cooldown {
                c.args(["--eviction-cooldown", cooldown]);
            }
            if cfg.await_placement {
                c.arg("--await-placement");
            }
            c.env("DESCHEDULER_SECURE_PORT", NO_SECURE_PORT);
            c
        }
        Binary::Upstream => {
            let path = upstream_bin();
            assert!(
                path.is_file(),
                "upstream descheduler v0.36.0 not found at {}: run `scripts/build-upstream`, \
                 or point DESCHEDULER_UPSTREAM_BIN at it",
                path.display()
            );
            let mut c = tokio::process::Command::new(path);
            c.args(["--secure-port", "0", "--v", "1"]);
            c
        }
    };
    command
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .arg("--policy-config-file")
        .arg(policy)
        .args(["--descheduling-interval", &interval])
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("starting the descheduler");
    let ends = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().unwrap();
    let (e, l) = (ends.clone(), log.clone());
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            // Upstream logs this line at the end of each cycle.
            if line.contains("\"Number of evictions/requests\"") {
                e.lock().unwrap().push(now_unix());
            }
            let mut l = l.lock().unwrap();
            if l.len() < 4 << 20 {
                l.push_str(&line);
                l.push('\n');
            }
        }
    });
    Running {
        child,
        ends,
        log,
        decision_log: binary.is_ours().then(|| dir.join("decisions")),
    }
}

/// Runs `binary` on the start state `built` for `cfg.cycles` cycles, watching the pods and
/// PDBs, then waits (up to a minute) for the Deployments to settle and measures.
pub async fn run(cluster: &Cluster, built: &Built, binary: Binary, cfg: &RunConfig) -> RunOutcome {
    let started = Instant::now();
    let client = cluster.client();
    let ns = built.namespace.as_str();
    let (nodes, start_pods, start, bound) = start_state(&client, built, cfg.ilp_seconds).await;
    let start_uids: BTreeSet<String> = start_pods.iter().map(|p| p.uid.clone()).collect();
    let dir = tempfile::tempdir().unwrap();
    let policy = if binary == Binary::OursOutcome {
        write_policy(
            dir.path(),
            &outcome_policy_yaml(&built.group, &built.thresholds),
        )
    } else {
        write_policy(dir.path(), &built.policy_yaml)
    };
    let mut notes = Vec::new();

    // Every pod seen, by uid, as last seen; and when each was seen gone.
    let mut seen: BTreeMap<String, PodInfo> = BTreeMap::new();
    let mut overrun: BTreeSet<String> = BTreeSet::new();
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), ns);
    let mut running = spawn(binary, cluster, &policy, dir.path(), cfg);
    let mut target = cfg.cycles;
    let mut skipped_first = false;
    let mut decided = false;
    let deadline =
        Instant::now() + cfg.interval * (cfg.cycles as u32 + 3) + Duration::from_secs(90);
    let poll = |seen: &mut BTreeMap<String, PodInfo>, items: Vec<Pod>| {
        let now = now_unix();
        let present: BTreeSet<String> = items
            .iter()
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        for p in &items {
            let info = PodInfo::of(p);
            seen.insert(info.uid.clone(), info);
        }
        for (uid, p) in seen.iter_mut() {
            if !present.contains(uid) && p.deleted.is_none() {
                p.deleted = Some(now);
            }
        }
    };
    loop {
        if let Some(items) = list_pods(&client, ns).await {
            poll(&mut seen, items);
        }
        if let Ok(list) = pdbs.list(&ListParams::default()).await {
            for pdb in list.items {
                if let Some(s) = &pdb.status {
                    if s.current_healthy < s.desired_healthy {
                        overrun.insert(pdb.metadata.name.clone().unwrap_or_default());
                    }
                }
            }
        }
        let ends = running.ends();
        if binary == Binary::Upstream && !decided && !ends.is_empty() {
            // Upstream's first cycle may plan on an empty cache (upstream #1917): if it evicted
            // nothing, its cycles are counted from the second.
            decided = true;
            let first = ends[0];
            let evicted = seen
                .values()
                .filter(|p| start_uids.contains(&p.uid) && p.deleted.is_some_and(|t| t <= first))
                .count();
            if evicted == 0 {
                skipped_first = true;
                target += 1;
            }
        }
        if ends.len() >= target {
            break;
        }
        if let Some(status) = running.child.try_wait().ok().flatten() {
            notes.push(format!(
                "{} exited early ({status}) after {} cycles: {}",
                binary.name(),
                ends.len(),
                tail_of(&running.log.lock().unwrap(), 3)
            ));
            break;
        }
        if Instant::now() > deadline {
            notes.push(format!(
                "{} cycles of {target} before the deadline",
                ends.len()
            ));
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut ends = running.ends();
    let stopped = now_unix();
    let _ = running.child.kill().await;
    if skipped_first {
        notes.push(format!(
            "{}'s first cycle evicted nothing (empty cache, upstream #1917): counted from its second",
            binary.name()
        ));
    }

    // Settle: every Deployment back at its replicas, Running, nothing terminating.
    let settled = wait_until(Duration::from_secs(60), || {
        let client = client.clone();
        async move {
            let Some(items) = list_pods(&client, ns).await else {
                return false;
            };
            let want: usize = built.pods();
            items.len() == want && items.iter().all(pod_is_running)
        }
    })
    .await;
    let end_pods = list_pods(&client, ns).await.unwrap_or_default();
    poll(&mut seen, end_pods.clone());
    if !settled {
        notes.push("the Deployments had not settled a minute after the run".to_string());
    }
    let end_infos: Vec<PodInfo> = end_pods.iter().map(PodInfo::of).collect();
    let end_nodes = state_nodes(&client, &built.group).await;
    let end = figures(&end_nodes, &end_infos, &built.thresholds);
    let _ = nodes;

    // Evictions: the pods deleted during the run, by cycle (the first cycle end after).
    ends.truncate(target);
    let first_counted = usize::from(skipped_first);
    let cycle_of = |t: f64| ends.iter().filter(|e| **e < t).count();
    let mut cycles = vec![Cycle::default(); target.max(1)];
    let mut evicted: Vec<&PodInfo> = seen
        .values()
        .filter(|p| p.deleted.is_some_and(|t| t <= stopped + 1.0))
        .collect();
    evicted.sort_by(|a, b| a.deleted.unwrap().total_cmp(&b.deleted.unwrap()));
    for p in &evicted {
        let c = cycle_of(p.deleted.unwrap()).min(cycles.len() - 1);
        cycles[c].evictions += 1;
        if !start_uids.contains(&p.uid) {
            cycles[c].reevicted += 1;
        }
    }
    // Replacements back on a node their workload just lost a pod from.
    let mut open: Vec<(String, String, f64, bool)> = evicted
        .iter()
        .map(|p| (p.app.clone(), p.node.clone(), p.deleted.unwrap(), false))
        .collect();
    let mut replacements: Vec<&PodInfo> = seen
        .values()
        .filter(|p| !start_uids.contains(&p.uid) && !p.node.is_empty())
        .collect();
    replacements.sort_by(|a, b| a.created.total_cmp(&b.created));
    for r in replacements {
        if let Some(o) = open
            .iter_mut()
            .find(|o| !o.3 && o.0 == r.app && o.1 == r.node && o.2 <= r.created + 1.0)
        {
            o.3 = true;
            let c = cycle_of(r.created).min(cycles.len() - 1);
            cycles[c].home += 1;
        }
    }
    // Upstream's skipped first cycle: it evicted nothing; its slot goes.
    let cycles: Vec<Cycle> = cycles.into_iter().skip(first_counted).collect();
    // To read a run's plans afterwards: OUTCOME_KEEP_DECISIONS=DIR keeps our decision log
    // under DIR/<namespace>-<binary>.
    if let (Some(keep), true) = (std::env::var_os("OUTCOME_KEEP_DECISIONS"), binary.is_ours()) {
        let to = Path::new(&keep).join(format!("{ns}-{}", binary.name()));
        fs::create_dir_all(&to).unwrap();
        for e in fs::read_dir(dir.path().join("decisions"))
            .into_iter()
            .flatten()
            .flatten()
        {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
        // Every pod seen, to set the plans beside where the replacements landed.
        let mut rows: Vec<&PodInfo> = seen.values().collect();
        rows.sort_by(|a, b| a.created.total_cmp(&b.created));
        let t0 = rows.first().map_or(0.0, |p| p.created);
        let mut tsv = String::from("name\tapp\tnode\tstart\tcreated\tdeleted\n");
        for p in rows {
            tsv.push_str(&format!(
                "{}\t{}\t{}\t{}\t{:.1}\t{}\n",
                p.name,
                p.app,
                p.node,
                start_uids.contains(&p.uid),
                p.created - t0,
                p.deleted
                    .map_or(String::new(), |d| format!("{:.1}", d - t0)),
            ));
        }
        fs::write(to.join("pods.tsv"), tsv).unwrap();
    }
    let start_snapshot = match binary
        .is_ours()
        .then(|| first_snapshot(&dir.path().join("decisions")))
    {
        Some(Ok(snapshot)) => Some(WitnessStart {
            snapshot: Arc::new(snapshot),
            namespace: ns.to_string(),
            group: built.group.clone(),
            nodes: nodes.iter().map(|n| n.name.clone()).collect(),
            thresholds: built.thresholds,
        }),
        Some(Err(e)) => {
            notes.push(format!("no start snapshot for the search of plans: {e}"));
            None
        }
        None => None,
    };
    let evictions = cycles.iter().map(|c| c.evictions).sum();
    let churn = cycles.iter().map(|c| c.reevicted + c.home).sum();
    let settle = cycles
        .iter()
        .rposition(|c| c.evictions > 0)
        .map_or(0, |i| i + 1);
    RunOutcome {
        binary,
        pending: end.pending,
        start,
        end,
        bound,
        model: Model::of(&nodes, &start_pods, built.thresholds, true),
        start_snapshot,
        cycles,
        evictions,
        churn,
        pdb_overruns: overrun.len(),
        settle,
        notes,
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn tail_of(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// Deletes the state's namespace (its nodes stay, empty, outside every later state's group).
pub async fn discard(client: &Client, built: &Built) {
    let _ = Api::<Namespace>::all(client.clone())
        .delete(&built.namespace, &Default::default())
        .await;
}
