//! MakeRoomForPendingPods (balance): moves a few running pods so that a pod, or a whole gang,
//! that kube-scheduler leaves Pending although the cluster has room in total finds a place.
//! Not an upstream plugin; its args follow upstream's conventions.
//!
//! - A **pending unit** is a pod that is Pending, bound to no node, not terminating, and whose
//!   `PodScheduled` condition is `False` with reason `Unschedulable` since at least
//!   `minPendingSeconds` (its `lastTransitionTime`; its creation time when that is absent).
//!   The pending members of a gang (a scheduler-plugins or Volcano PodGroup) are one unit:
//!   as many of them as the gang needs to reach its minMember with the members already bound
//!   (all of them when the PodGroup is not in the snapshot), placed all together or not at all.
//! - Units go by priority (highest first), then the longest pending first, at most
//!   `maxPendingUnits` a cycle. With `pendingPriorityThreshold`, only units of at least that
//!   priority are looked at.
//! - **Moves, not kills**: a running pod is chosen only if the evictor's Filter and
//!   PreEvictionFilter admit it, the limits, its disruption budget and its gang allow it
//!   (jointly with the other pods of the set), its priority is at most the unit's (unless
//!   `moveHigherPriority`), and the simulator places its replacement on a node other than its
//!   own. Its eviction is planned through the same path every plugin uses.
//! - The placement simulator (kube-scheduler's filters and scores, cumulative) decides: each
//!   moved pod's replacement is placed where kube-scheduler would put it, one after the other,
//!   and then every pod of the unit; the unit fits only when all of them are placed.
//! - **Search**: the fewest moves first (sets of 1, 2, ... up to `maxPodsToMove` pods), and
//!   within a size the lowest priority and disruption cost first (priority, the
//!   `prefer-no-eviction` annotation, then the most recently started). Candidates are the
//!   movable pods of the nodes where a unit's pod would fit once they are gone, the nodes that
//!   need the fewest moves first, at most `maxCandidates` of them per unit. Every set tried
//!   costs one simulation, and a cycle runs at most `maxSimulations`: the search is bounded
//!   whatever the cluster's size, and deterministic.
//! - The report lists each unit (`pending`): where its pods go and which moves make the room,
//!   or, when no set of moves within the bounds can place it, the scheduler's reason.
//!
//! A unit that fits without any move is placed in the simulation (later units see it) and
//! reported with no moves: kube-scheduler places it on its next attempt.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Attempt, Context, PendingUnit, Plugin, PluginSpec};
use crate::plugins::shared::PriorityThreshold;
use crate::sim::{node_fits, queue_order, Simulation};
use crate::snapshot::{ClusterSnapshot, ConditionStatus, GangId, IdVec, NodeId, Phase, PodId};
use serde::{Deserialize, Serialize};

/// The plugin's name in a policy.
pub const NAME: &str = "MakeRoomForPendingPods";

/// The registry entry: a `balance` plugin whose args all have defaults.
pub(crate) const SPEC: PluginSpec =
    PluginSpec::balance::<MakeRoomForPendingPods>(NAME).args_optional();

/// The most pods one unit may move (`maxPodsToMove`).
pub(crate) const MAX_PODS_TO_MOVE: u32 = 64;

/// `MakeRoomForPendingPodsArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MakeRoomForPendingPodsArgs {
    /// How long a pod must have been unschedulable before room is made for it (seconds).
    #[serde(default = "default_min_pending_seconds")]
    pub min_pending_seconds: i64,
    /// The most running pods moved for one pending pod or gang.
    #[serde(default = "default_max_pods_to_move")]
    pub max_pods_to_move: u32,
    /// The most candidate pods the search considers for one unit.
    #[serde(default = "default_max_candidates")]
    pub max_candidates: u32,
    /// The most sets of moves simulated in one cycle, over all units: the search budget.
    #[serde(default = "default_max_simulations")]
    pub max_simulations: u32,
    /// The most pending units looked at in one cycle.
    #[serde(default = "default_max_pending_units")]
    pub max_pending_units: u32,
    /// Only pending pods of at least this priority (`value` or priority class `name`).
    #[serde(default)]
    pub pending_priority_threshold: Option<PriorityThreshold>,
    /// Whether pods of higher priority than the pending pod may be moved.
    #[serde(default)]
    pub move_higher_priority: bool,
}

fn default_min_pending_seconds() -> i64 {
    60
}
fn default_max_pods_to_move() -> u32 {
    4
}
fn default_max_candidates() -> u32 {
    24
}
fn default_max_simulations() -> u32 {
    500
}
fn default_max_pending_units() -> u32 {
    10
}

impl Default for MakeRoomForPendingPodsArgs {
    fn default() -> Self {
        MakeRoomForPendingPodsArgs {
            min_pending_seconds: default_min_pending_seconds(),
            max_pods_to_move: default_max_pods_to_move(),
            max_candidates: default_max_candidates(),
            max_simulations: default_max_simulations(),
            max_pending_units: default_max_pending_units(),
            pending_priority_threshold: None,
            move_higher_priority: false,
        }
    }
}

impl PluginArgs for MakeRoomForPendingPodsArgs {
    /// Every bound in range, with the field's path in every error.
    fn validate(&self) -> Result<(), ArgsError> {
        if self.min_pending_seconds < 0 {
            return Err(ArgsError::new(
                "minPendingSeconds",
                format!(
                    "must be 0 or more seconds, got {}; give how long a pod must have been unschedulable, such as 300",
                    self.min_pending_seconds
                ),
            ));
        }
        if self.max_pods_to_move == 0 || self.max_pods_to_move > MAX_PODS_TO_MOVE {
            return Err(ArgsError::new(
                "maxPodsToMove",
                format!(
                    "must be between 1 and {MAX_PODS_TO_MOVE}, got {}; it bounds the running pods moved for one pending pod or gang",
                    self.max_pods_to_move
                ),
            ));
        }
        for (field, v) in [
            ("maxCandidates", self.max_candidates),
            ("maxSimulations", self.max_simulations),
            ("maxPendingUnits", self.max_pending_units),
        ] {
            if v == 0 {
                return Err(ArgsError::new(
                    field,
                    "must be at least 1; leave it out for the default, or disable the plugin",
                ));
            }
        }
        if let Some(t) = &self.pending_priority_threshold {
            t.validate("pendingPriorityThreshold")?;
        }
        Ok(())
    }
}

/// A validated MakeRoomForPendingPods plugin.
#[derive(Debug, Clone)]
pub struct MakeRoomForPendingPods {
    /// The plugin's args.
    pub args: MakeRoomForPendingPodsArgs,
}

impl FromArgs for MakeRoomForPendingPods {
    type Args = MakeRoomForPendingPodsArgs;

    fn from_args(args: MakeRoomForPendingPodsArgs) -> Result<Self, ArgsError> {
        Ok(MakeRoomForPendingPods { args })
    }
}

/// Since when a pod has been pending and unschedulable (unix seconds), if it is: Pending,
/// bound to no node, not terminating, `PodScheduled=False` with reason `Unschedulable`.
pub(crate) fn unschedulable_since(snap: &ClusterSnapshot, pod: PodId) -> Option<i64> {
    let p = snap.pod(pod);
    if p.phase != Phase::Pending || p.node_name.is_some() || p.terminating {
        return None;
    }
    let c = p.status().conditions.iter().find(|c| {
        &*c.kind == "PodScheduled"
            && c.status == ConditionStatus::False
            && c.reason.as_deref() == Some("Unschedulable")
    })?;
    Some(c.last_transition.unwrap_or(p.created))
}

/// A pending pod, or the pending members of a gang, to place together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// The gang, when the unit is the pending members of one.
    pub gang: Option<GangId>,
    /// The pods to place, in id order.
    pub pods: Vec<PodId>,
    /// The priority of the unit (the highest of its pods; no priority counts as 0).
    pub priority: i32,
    /// Unschedulable since (the latest of its pods), unix seconds.
    pub since: i64,
}

impl Unit {
    fn describe(&self, snap: &ClusterSnapshot) -> String {
        match self.gang {
            Some(g) => format!(
                "gang {} ({} pending pods)",
                snap.gang(g).describe(),
                self.pods.len()
            ),
            None => format!("pod {}", snap.pod(self.pods[0]).key()),
        }
    }
}

fn priority(snap: &ClusterSnapshot, pod: PodId) -> i32 {
    snap.pod(pod).priority.unwrap_or(0)
}

/// The pending units of the snapshot that have been unschedulable since `now - min_pending`
/// at least, highest priority first, then the longest pending, then by pod.
pub fn pending_units(snap: &ClusterSnapshot, now: i64, min_pending: i64) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut gang_seen = vec![false; snap.gangs.len()];
    for pod in snap.pod_ids() {
        let Some(since) = unschedulable_since(snap, pod) else {
            continue;
        };
        match snap.gangs_of_pod(pod).first() {
            None => {
                if since <= now - min_pending {
                    units.push(Unit {
                        gang: None,
                        pods: vec![pod],
                        priority: priority(snap, pod),
                        since,
                    });
                }
            }
            Some(&g) => {
                if std::mem::replace(&mut gang_seen[g as usize], true) {
                    continue;
                }
                let gang = snap.gang(g);
                let mut pending: Vec<(PodId, i64)> = gang
                    .members
                    .iter()
                    .filter_map(|&m| unschedulable_since(snap, m).map(|s| (m, s)))
                    .collect();
                let bound = gang
                    .members
                    .iter()
                    .filter(|&&m| {
                        let p = snap.pod(m);
                        snap.pod_node(m).is_some() && p.is_active() && !p.terminating
                    })
                    .count() as i64;
                let need = match gang.min_member {
                    Some(min) => (i64::from(min) - bound).max(1) as usize,
                    None => pending.len(),
                };
                pending.truncate(need.min(pending.len()));
                let since = pending.iter().map(|&(_, s)| s).max().unwrap_or(since);
                if since > now - min_pending {
                    continue;
                }
                let pods: Vec<PodId> = pending.iter().map(|&(m, _)| m).collect();
                units.push(Unit {
                    gang: Some(g),
                    priority: pods.iter().map(|&m| priority(snap, m)).max().unwrap_or(0),
                    pods,
                    since,
                });
            }
        }
    }
    units.sort_by_key(|u| (std::cmp::Reverse(u.priority), u.since, u.pods[0]));
    units
}

/// What moving a pod costs, lowest first: its priority, whether it asks not to be evicted,
/// and how long it has run (the most recently started loses the least).
fn move_cost(snap: &ClusterSnapshot, pod: PodId) -> (i32, bool, std::cmp::Reverse<i64>, PodId) {
    let p = snap.pod(pod);
    (
        priority(snap, pod),
        p.has_prefer_no_eviction_annotation,
        std::cmp::Reverse(p.started.unwrap_or(p.created)),
        pod,
    )
}

/// Where a set of moves leaves the unit: each moved pod's replacement and each unit pod
/// placed, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trial {
    /// Where each moved pod's replacement lands, in the order of the moves.
    pub moved_to: Vec<NodeId>,
    /// Where each pod of the unit is placed, in the unit's order.
    pub placed_on: Vec<NodeId>,
    /// The moves whose replacement must win a score tie for the set to work: (the moved
    /// pod, the node it must land on, how many nodes tie). Empty for [`simulate`].
    pub ties: Vec<(PodId, NodeId, usize)>,
}

/// Simulates a set of moves on a copy of `sim`: each pod of `moves` evicted and its
/// replacement placed where kube-scheduler would put it (on a node other than its pod's own,
/// or the set fails), one after the other as the plan records them ([`Simulation::replace`]:
/// with a grace period, the evicted pods keep their room while the replacements are placed);
/// then, once they are gone, every pod of `unit` placed. None when something finds no place.
/// The caller gives the moves in kube-scheduler's queue order ([`queue_order`]).
///
/// Where a moved pod is gone at once (grace period 0, or `--termination-model instant`),
/// kube-scheduler may also take the pending pods first (they wait in its queue while the
/// replacements are created), so the set must work that way too: with the moved pods gone,
/// every pod of the unit placed, and then every replacement placed somewhere. A set that
/// would leave a replacement with no node if the unit went first is refused: nothing is
/// killed to make room.
pub fn simulate(
    sim: &Simulation<'_>,
    nodes: &[NodeId],
    moves: &[PodId],
    unit: &[PodId],
) -> Option<Trial> {
    simulate_moves(sim, nodes, moves, unit, false, &mut false)
}

/// [`simulate`]; a move whose replacement's own node ties for the best score with others
/// fails it (the replacement may land back there; `home_tie` is set), unless `ties`: then the replacement is taken to land on
/// another of the tied nodes (kube-scheduler picks among them at random), recorded in
/// [`Trial::ties`].
fn simulate_moves(
    sim: &Simulation<'_>,
    nodes: &[NodeId],
    moves: &[PodId],
    unit: &[PodId],
    ties: bool,
    home_tie: &mut bool,
) -> Option<Trial> {
    let snap = sim.snap();
    let mut t = sim.clone();
    let mut won = Vec::new();
    let instant = moves
        .iter()
        .any(|&m| !sim.termination().lingers(snap.pod(m)));
    let mut moved_to = Vec::with_capacity(moves.len());
    for &m in moves {
        let own = snap.pod_node(m);
        let mut trial = t.clone();
        let d = trial.replace(m, nodes).ok()?;
        // A replacement whose own node ties for the best score may land back there: the
        // move works only if kube-scheduler breaks the tie the other way.
        let home = own.is_some_and(|o| d.node == o || d.alternatives.contains(&o));
        let to = if !home {
            t = trial;
            d.node
        } else {
            let other = std::iter::once(d.node)
                .chain(d.alternatives.iter().copied())
                .find(|&n| Some(n) != own);
            match other {
                Some(other) if ties => {
                    if other == d.node {
                        t = trial;
                    } else {
                        t.remove(m);
                        t.place(m, other);
                    }
                    won.push((m, other, 1 + d.alternatives.len()));
                    other
                }
                Some(_) => {
                    *home_tie = true;
                    return None;
                }
                None => return None,
            }
        };
        moved_to.push(to);
    }
    let mut placed_on = Vec::with_capacity(unit.len());
    for &p in unit {
        placed_on.push(t.schedule_settled(p, nodes).ok()?.node);
    }
    if instant {
        let mut first = sim.clone();
        for &m in moves {
            first.remove(m);
        }
        for &p in unit {
            first.schedule_settled(p, nodes).ok()?;
        }
        for &m in moves {
            first.schedule_predicted(m, nodes).ok()?;
        }
    }
    Some(Trial {
        moved_to,
        placed_on,
        ties: won,
    })
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

/// For a unit of several pods of one shape (a gang's workers): how many of them each node has
/// the resources for, as the plan leaves the cluster. A set of moves after which the nodes
/// have room for fewer pods than the unit holds cannot place it (replacements only add load,
/// and the other filters only refuse more), so it is not simulated.
struct Capacity {
    /// By node id; nodes kube-scheduler may not choose count nothing.
    on_node: IdVec<NodeId, usize>,
    total: usize,
    /// The unit's first pod (all have its shape) and how many the unit holds.
    shape: PodId,
    want: usize,
}

impl Capacity {
    fn of(cx: &Context<'_, '_>, unit: &Unit) -> Option<Capacity> {
        let snap = cx.snap();
        let first = snap.pod(unit.pods[0]);
        let same_shape = unit.pods.iter().all(|&p| {
            let q = snap.pod(p);
            q.requests == first.requests
                && q.node_selector == first.node_selector
                && q.tolerations == first.tolerations
                && q.affinity == first.affinity
        });
        if unit.pods.len() < 2 || !same_shape {
            return None;
        }
        let want = unit.pods.len();
        let sim = cx.placement().sim();
        let mut on_node = IdVec::filled(0, snap.nodes.len());
        for &n in cx.placement().nodes() {
            on_node[n] = Self::copies(cx, unit.pods[0], want, n, sim.load(n).clone());
        }
        let total = on_node.iter().sum();
        Some(Capacity {
            on_node,
            total,
            shape: unit.pods[0],
            want,
        })
    }

    /// How many pods of the unit's shape fit on a node requesting `load` (at most the unit's).
    fn copies(
        cx: &Context<'_, '_>,
        shape: PodId,
        want: usize,
        n: NodeId,
        mut load: crate::snapshot::Resources,
    ) -> usize {
        let snap = cx.snap();
        let pod = snap.pod(shape);
        let node = snap.node(n);
        let mut count = 0;
        while count < want && node_fits(pod, node, &load).is_ok() {
            load.add_pod(&pod.requests);
            count += 1;
        }
        count
    }

    /// Whether, with `moves` gone, the nodes have the resources for the whole unit.
    fn enough(&self, cx: &Context<'_, '_>, moves: &[PodId]) -> bool {
        let snap = cx.snap();
        let sim = cx.placement().sim();
        let mut nodes: Vec<NodeId> = moves.iter().filter_map(|&m| snap.pod_node(m)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut total = self.total;
        for n in nodes {
            if !cx.placement().nodes().contains(&n) {
                continue;
            }
            let mut load = sim.load(n).clone();
            for &m in moves {
                if snap.pod_node(m) == Some(n) {
                    load.sub_pod(&snap.pod(m).requests);
                }
            }
            total = total - self.on_node[n] + Self::copies(cx, self.shape, self.want, n, load);
        }
        total >= self.want
    }
}

/// How the search for one unit ended.
enum Search {
    Found(Vec<PodId>, Trial),
    /// No set within the bounds; whether the simulation budget cut the search short.
    NotFound {
        budget_spent: bool,
        /// Whether some set failed only because a replacement's own node tied for the best
        /// score with other nodes.
        home_tie: bool,
    },
}

impl MakeRoomForPendingPods {
    /// The lowest priority a pending unit must have (None: any), or why it cannot be known.
    fn threshold(&self, snap: &ClusterSnapshot) -> Result<Option<i32>, String> {
        let Some(t) = &self.args.pending_priority_threshold else {
            return Ok(None);
        };
        if let Some(v) = t.value {
            return Ok(Some(v));
        }
        match t.name.as_deref().filter(|n| !n.is_empty()) {
            None => Ok(None),
            Some(name) => snap.priority_class(name).map(|c| Some(c.value)).ok_or_else(|| {
                format!("pendingPriorityThreshold names priority class {name}, which the snapshot does not hold; nothing is moved")
            }),
        }
    }

    /// Whether a running pod may be considered for a move at all, before the evictor is
    /// asked: on a planning node, not planned, active, and not above the unit's priority
    /// (unless allowed); with `gangPolicy: WholeGang`, no gang member (it would take its gang).
    fn may_move(&self, cx: &Context<'_, '_>, planning: &[bool], unit: &Unit, pod: PodId) -> bool {
        let snap = cx.snap();
        let p = snap.pod(pod);
        let Some(n) = snap.pod_node(pod) else {
            return false;
        };
        planning[n.index()]
            && !cx.is_planned(pod)
            && p.is_active()
            && !p.terminating
            && (self.args.move_higher_priority || priority(snap, pod) <= unit.priority)
            && (!cx.evicts_whole_gangs() || snap.gangs_of_pod(pod).is_empty())
    }

    /// The candidates to move for a unit, in search order: the movable pods of the nodes
    /// where a pod of the unit would fit once they are gone, the nodes that need the fewest
    /// moves first (nodes where it fits already last), each node's pods by [`move_cost`], the
    /// pods that make room on each node (as many as it needs) before all others;
    /// then, from the returned index on, the movable pods of the other nodes (moving one of
    /// them can make room for a replacement: a chain of moves).
    fn candidates(
        &self,
        cx: &Context<'_, '_>,
        planning: &[bool],
        unit: &Unit,
    ) -> (Vec<PodId>, usize) {
        let snap = cx.snap();
        let sim = cx.placement().sim();
        // A node's movable pods, cheapest to move first.
        let movable_on = |n: NodeId| -> Vec<PodId> {
            let mut movable: Vec<PodId> = snap
                .pods_on_node(n)
                .iter()
                .copied()
                .filter(|&q| !sim.is_gone(q) && self.may_move(cx, planning, unit, q))
                .collect();
            movable.sort_by_key(|&q| move_cost(snap, q));
            movable
        };
        let mut ranked: Vec<(usize, NodeId, Vec<PodId>)> = Vec::new();
        for &n in cx.nodes() {
            let node = snap.node(n);
            let movable = movable_on(n);
            if movable.is_empty() {
                continue;
            }
            let mut relaxed = sim.load(n).clone();
            for &q in &movable {
                relaxed.sub_pod(&snap.pod(q).requests);
            }
            let fits_once_empty = unit
                .pods
                .iter()
                .any(|&p| node_fits(snap.pod(p), node, &relaxed).is_ok());
            if !fits_once_empty {
                continue;
            }
            // the moves this node needs for the unit's first pod, cheapest first
            let first = snap.pod(unit.pods[0]);
            let mut load = sim.load(n).clone();
            let mut needed = 0;
            while node_fits(first, node, &load).is_err() && needed < movable.len() {
                load.sub_pod(&snap.pod(movable[needed]).requests);
                needed += 1;
            }
            let rank = if needed == 0 { usize::MAX - 1 } else { needed };
            ranked.push((rank, n, movable));
        }
        // Then the movable pods of the other nodes: moving one may make room there for a
        // replacement from the nodes above (a chain of moves). None when no node would have
        // room for the unit even with all its movable pods gone.
        let relevant = ranked.len();
        for &n in cx.nodes() {
            if relevant == 0 {
                break;
            }
            if ranked.iter().any(|(_, m, _)| *m == n) {
                continue;
            }
            let movable = movable_on(n);
            if !movable.is_empty() {
                ranked.push((usize::MAX, n, movable));
            }
        }
        ranked.sort_by_key(|(rank, n, _)| (*rank, *n));
        let max = self.args.max_candidates as usize;
        let admitted = |q: PodId| {
            cx.filter(q).is_ok()
                && cx.cooldown(q).is_ok()
                && cx.ledger().admit(q).is_ok()
                && cx.check_pre_eviction(q).is_ok()
        };
        let mut out = Vec::new();
        let mut seen: rustc_hash::FxHashSet<PodId> = Default::default();
        // First the pods that make room on each node needing moves (as many as it needs), so
        // that a gang finds room on several nodes among few candidates; then the rest.
        let limit = self.args.max_pods_to_move as usize;
        'first: for (rank, _, movable) in &ranked {
            if *rank > limit {
                continue;
            }
            for &q in &movable[..*rank] {
                if out.len() >= max {
                    break 'first;
                }
                seen.insert(q);
                if admitted(q) {
                    out.push(q);
                }
            }
        }
        let mut chain_start = None;
        'nodes: for (rank, _, movable) in ranked {
            for q in movable {
                if out.len() >= max {
                    break 'nodes;
                }
                if rank == usize::MAX && chain_start.is_none() {
                    chain_start = Some(out.len());
                }
                if seen.insert(q) && admitted(q) {
                    out.push(q);
                }
            }
        }
        let chain_start = chain_start.unwrap_or(out.len()).min(out.len());
        (out, chain_start)
    }

    /// Whether, with `moves` gone, some node of theirs has the resources for a pod of the
    /// unit: a set that frees no such node cannot help (replacements only add load).
    fn frees_a_node(cx: &Context<'_, '_>, unit: &Unit, moves: &[PodId]) -> bool {
        let snap = cx.snap();
        let sim = cx.placement().sim();
        let mut nodes: Vec<NodeId> = moves.iter().filter_map(|&m| snap.pod_node(m)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes.iter().any(|&n| {
            let mut load = sim.load(n).clone();
            for &m in moves {
                if snap.pod_node(m) == Some(n) {
                    load.sub_pod(&snap.pod(m).requests);
                }
            }
            unit.pods
                .iter()
                .any(|&p| node_fits(snap.pod(p), snap.node(n), &load).is_ok())
        })
    }

    /// The fewest, cheapest moves that let the simulator place the whole unit, within the
    /// bounds; `budget` is what is left of the cycle's simulations.
    /// With `ties`, a set that works only if replacements win score ties counts too
    /// ([`Trial::ties`]).
    fn search(
        &self,
        cx: &Context<'_, '_>,
        unit: &Unit,
        pool: &[PodId],
        chain_start: usize,
        budget: &mut u32,
        ties: bool,
    ) -> Search {
        let mut home_tie = false;
        let sim = cx.placement().sim();
        let nodes = cx.placement().nodes();
        let capacity = Capacity::of(cx, unit);
        let max_k = (self.args.max_pods_to_move as usize).min(pool.len());
        for k in 1..=max_k {
            let mut idx: Vec<usize> = (0..k).collect();
            loop {
                // pods of a chain go first: their room is what the others' replacements need
                let moves: Vec<PodId> = idx
                    .iter()
                    .filter(|&&i| i >= chain_start)
                    .chain(idx.iter().filter(|&&i| i < chain_start))
                    .map(|&i| pool[i])
                    .collect();
                if Self::frees_a_node(cx, unit, &moves)
                    && capacity.as_ref().is_none_or(|c| c.enough(cx, &moves))
                    && cx.ledger().admit_together(&moves).is_ok()
                {
                    // in search order, then (for two or more) the other way round: which
                    // replacement takes which room depends on the order
                    let reversed: Vec<PodId> = moves.iter().rev().copied().collect();
                    let orders = if k > 1 {
                        vec![moves, reversed]
                    } else {
                        vec![moves]
                    };
                    for mut order in orders {
                        // kube-scheduler takes the replacements by priority first
                        queue_order(cx.snap(), &mut order);
                        if *budget == 0 {
                            return Search::NotFound {
                                budget_spent: true,
                                home_tie,
                            };
                        }
                        *budget -= 1;
                        if let Some(t) =
                            simulate_moves(sim, nodes, &order, &unit.pods, ties, &mut home_tie)
                        {
                            return Search::Found(order, t);
                        }
                    }
                }
                if !next_combination(&mut idx, pool.len()) {
                    break;
                }
            }
        }
        Search::NotFound {
            budget_spent: false,
            home_tie,
        }
    }

    /// What a set of moves that works only through score ties needs, with its odds.
    fn describe_ties(snap: &ClusterSnapshot, moves: &[PodId], trial: &Trial) -> String {
        let names: Vec<String> = moves.iter().map(|&m| snap.pod(m).key()).collect();
        let mut chance = 1.0;
        let needs: Vec<String> = trial
            .ties
            .iter()
            .map(|&(m, to, k)| {
                chance /= k as f64;
                let from = snap.pod_node(m).map_or("?", |n| &*snap.node(n).name);
                format!(
                    "the replacement of {} lands on {} rather than back on {from} (1 in {k}: kube-scheduler picks among {k} nodes of equal score at random)",
                    snap.pod(m).key(),
                    snap.node(to).name
                )
            })
            .collect();
        format!(
            " for certain; moving {} makes room only if {}: {:.0}% likely, so it is not planned",
            names.join(", "),
            needs.join(" and "),
            100.0 * chance
        )
    }

    /// Why the unit finds no place as the plan leaves the cluster: the scheduler's reason for
    /// the first of its pods that does not fit once the others before it are placed.
    fn scheduler_reason(cx: &Context<'_, '_>, unit: &Unit) -> String {
        let snap = cx.snap();
        let mut t = cx.placement().sim().clone();
        for &p in &unit.pods {
            if let Err(e) = t.schedule_predicted(p, cx.placement().nodes()) {
                return if unit.pods.len() > 1 {
                    format!("{}: {e}", snap.pod(p).key())
                } else {
                    e.to_string()
                };
            }
        }
        "the pods fit one by one, but not as kube-scheduler would place them together".into()
    }

    fn record(
        cx: &mut Context<'_, '_>,
        unit: &Unit,
        destinations: Vec<Option<NodeId>>,
        made_room_by: Vec<PodId>,
        reason: Option<String>,
    ) {
        cx.report(PendingUnit {
            profile: String::new(),
            plugin: NAME,
            gang: unit.gang,
            pods: unit.pods.clone(),
            destinations,
            made_room_by,
            reason,
        });
    }

    /// Places the unit's pods in the plan's simulation; the nodes, in order.
    /// Plans the moves the search found for a unit, places the unit, and records whether
    /// the plan leaves the room the search found.
    fn plan_moves(
        cx: &mut Context<'_, '_>,
        unit: &Unit,
        name: &str,
        moves: &[PodId],
        trial: &Trial,
    ) {
        let snap = cx.snap();
        let pending_for = cx.now() - unit.since;
        let reason = format!(
            "moved to make room for pending {name}, unschedulable for {pending_for}s; its replacement fits on another node"
        );
        let mut planned = Vec::with_capacity(moves.len());
        for &m in moves {
            match cx.try_evict(m, reason.clone()) {
                Attempt::Planned { .. } => planned.push(m),
                other => {
                    tracing::warn!(pod = %snap.pod(m).key(), ?other, "a move the search admitted was refused");
                }
            }
        }
        let placed = Self::place(cx, unit);
        let placed_all = planned.len() == moves.len()
            && placed
                .iter()
                .zip(&trial.placed_on)
                .all(|(a, b)| *a == Some(*b));
        let why = (!placed_all).then(|| {
            format!(
                "the plan does not leave the room the search found: {}",
                Self::scheduler_reason(cx, unit)
            )
        });
        cx.note(
            None,
            format!(
                "{name}: {} moved to make room",
                planned
                    .iter()
                    .map(|&m| snap.pod(m).key())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        Self::record(cx, unit, placed, planned, why);
    }

    fn place(cx: &mut Context<'_, '_>, unit: &Unit) -> Vec<Option<NodeId>> {
        unit.pods
            .iter()
            .map(|&p| cx.place_pending(p).ok().map(|d| d.node))
            .collect()
    }
}

impl Plugin for MakeRoomForPendingPods {
    fn name(&self) -> &'static str {
        NAME
    }

    fn needs_placement(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        let threshold = match self.threshold(snap) {
            Ok(t) => t,
            Err(why) => {
                cx.note_skipped(why);
                return;
            }
        };
        if !cx.placement().predicts() {
            cx.note_skipped("the placement simulation does not place replacements in this cycle; nothing is moved");
            return;
        }
        let mut units: Vec<Unit> = pending_units(snap, cx.now(), self.args.min_pending_seconds)
            .into_iter()
            .filter(|u| threshold.is_none_or(|t| u.priority >= t))
            .collect();
        if units.is_empty() {
            return;
        }
        let max_units = self.args.max_pending_units as usize;
        if units.len() > max_units {
            cx.note(
                None,
                format!(
                    "{} pending units; looking at the first {max_units} (maxPendingUnits)",
                    units.len()
                ),
            );
            units.truncate(max_units);
        }
        let mut planning = vec![false; snap.nodes.len()];
        for &n in nodes {
            planning[n.index()] = true;
        }
        let mut budget = self.args.max_simulations;
        // The search for sets that work only through score ties has a budget of its own.
        let mut tie_budget = self.args.max_simulations;
        for unit in &units {
            let name = unit.describe(snap);
            // Room already: nothing to move.
            if simulate(
                cx.placement().sim(),
                cx.placement().nodes(),
                &[],
                &unit.pods,
            )
            .is_some()
            {
                let placed = Self::place(cx, unit);
                Self::record(cx, unit, placed, Vec::new(), None);
                cx.note(
                    None,
                    format!("{name} fits as the plan leaves the cluster; nothing to move"),
                );
                continue;
            }
            let (pool, chain_start) = self.candidates(cx, &planning, unit);
            let found = if pool.is_empty() {
                Search::NotFound {
                    budget_spent: false,
                    home_tie: false,
                }
            } else {
                self.search(cx, unit, &pool, chain_start, &mut budget, false)
            };
            match found {
                Search::Found(moves, trial) => Self::plan_moves(cx, unit, &name, &moves, &trial),
                Search::NotFound {
                    budget_spent,
                    home_tie,
                } => {
                    let mut why = format!(
                        "{}; no set of at most {} running pods to move makes room",
                        Self::scheduler_reason(cx, unit),
                        self.args.max_pods_to_move
                    );
                    if pool.is_empty() {
                        why.push_str(" (no node would have room for it even with every pod that may move gone)");
                    }
                    if budget_spent {
                        why.push_str(&format!(
                            " within the search budget (maxSimulations {})",
                            self.args.max_simulations
                        ));
                    } else if home_tie {
                        // A set that works only if kube-scheduler breaks ties its way is
                        // reported, with the odds, not planned.
                        if let Search::Found(moves, trial) =
                            self.search(cx, unit, &pool, chain_start, &mut tie_budget, true)
                        {
                            why.push_str(&Self::describe_ties(snap, &moves, &trial));
                        }
                    }
                    Self::record(cx, unit, vec![None; unit.pods.len()], Vec::new(), Some(why));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
