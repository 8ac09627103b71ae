//! The planner: (pipeline, snapshot, now) → EvictionPlan. Pure and deterministic.
//!
//! Profiles run as upstream runs them: every deschedule plugin of every profile, then every
//! balance plugin of every profile. All plugins share one [`PlanningState`], so each sees the
//! evictions planned before it (the pods gone, their requests moved off their nodes), and the
//! limits and disruption budgets hold across the whole cycle.
//!
//! A profile whose `sort` extension point enables a plugin (such as DominantResourceFairness)
//! orders its candidates as that plugin's [`CandidateOrder`] says, kept current as the plan
//! proceeds (one per distinct [`SortPlugin::share_key`], shared by the profiles that give it,
//! fed by every eviction of every profile); the plan then reports what each order summarizes
//! (each tenant's share before and after, a [`TenantShare`] finding).
//!
//! What plugins report of their own (their [`Finding`]s) the plan carries in one
//! collection, [`EvictionPlan::findings`], beside the targets each plugin held destinations
//! to and the tenants' shares, which the planner reports there too.

#[cfg(doc)]
use crate::framework::Finding;
#[cfg(doc)]
use crate::framework::SortPlugin;
use crate::framework::{
    CandidateOrder, Context, Findings, NoteKind, PendingUnit, Pipeline, PlacementTarget, PlanNote,
    PlannedEviction, PlanningState, Plugin, Reporter, SkipCounts, TenantShare,
};
use crate::snapshot::{ClusterSnapshot, NodeId, Resources};

pub mod background;
mod memory;

pub use background::BackgroundEvictions;
pub use memory::{stops_workload, CycleMemory};

/// The result of planning one cycle.
#[derive(Debug, Clone)]
pub struct EvictionPlan {
    /// In the order they were planned (and will be attempted).
    pub evictions: Vec<PlannedEviction>,
    /// The planning nodes (Ready, matching the policy's nodeSelector).
    pub nodes: Vec<NodeId>,
    /// What each node of the snapshot requests after the plan, by node id: the evicted pods
    /// gone, their replacements (and the pending pods the plan makes room for) where they are
    /// predicted to land ([`AfterState`]).
    pub requested_after: AfterState,
    /// Plugins that skipped the cycle, nodes left out, and why.
    pub notes: Vec<PlanNote>,
    /// What plugins reported of their own, by kind ([`Finding`]): measured usage
    /// ([`crate::framework::MeasuredUsage`]), the nodes each found overutilized (for the next
    /// cycle's [`crate::framework::History`]: [`crate::framework::Overutilized`]), the
    /// utilization thresholds they classified nodes with, the pending units they made room
    /// for ([`PendingUnit`]); and what the planner reports there: each tenant's dominant
    /// share when a profile orders by DominantResourceFairness ([`TenantShare`], sorted by
    /// tenant label, then tenant), the targets plugins held destinations to
    /// ([`PlacementTarget`], with the plugin's name, in plugin order).
    pub findings: Findings,
    /// How many candidates each plugin did not choose, by (profile, plugin, kind of reason):
    /// the candidates not chosen among the notes, counted.
    pub skips: SkipCounts,
}

/// What upstream logs when it skips a cycle for want of nodes (fewer than 2 Ready nodes
/// matching the policy's nodeSelector), word for word.
pub const TOO_FEW_NODES: &str =
    "The cluster size is 0 or 1 meaning eviction causes service disruption or degradation. So aborting..";

impl EvictionPlan {
    /// Nodes the after-state puts over a target a plugin held destinations to, where a
    /// replacement landed that was predicted elsewhere (a prediction miss, seen live with
    /// `--await-placement`): `(eviction index, the note)`, one per such eviction.
    pub(crate) fn landing_misses(
        &self,
        snap: &ClusterSnapshot,
        landed: &[(usize, NodeId)],
    ) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for &(i, node) in landed {
            let Some(e) = self.evictions.get(i) else {
                continue;
            };
            if e.destination == Some(node) {
                continue;
            }
            let load = &self.requested_after.predicted[node.index()];
            let over = self
                .findings
                .list::<PlacementTarget, _>()
                .iter()
                .filter(|(_, t)| t.node == node)
                .find_map(|(plugin, t)| t.over(load).map(|(r, max)| (*plugin, r, max)));
            if let Some((plugin, r, max)) = over {
                let predicted = e
                    .destination
                    .map_or("no node".to_string(), |d| snap.node(d).name.to_string());
                out.push((
                    i,
                    format!(
                        "the replacement of {} landed on {}, not on the predicted {predicted}: the node is over its {plugin} target now ({r} {} > {max})",
                        snap.pod(e.pod).key(),
                        snap.node(node).name,
                        load.get(r),
                    ),
                ));
            }
        }
        out
    }
}

/// What each node requests once the plan is carried out, by node id.
///
/// `evicted`: the evicted pods gone, nothing placed. `predicted`: their replacements added where
/// the simulator predicts kube-scheduler puts them (each eviction's `destination`), and the
/// pending pods the plan makes room for where they are placed. Where kube-scheduler picks at
/// random among tied nodes (an eviction's `alternatives`), `low` counts on a node only the
/// replacements that can land nowhere else and `high` every replacement that may land there, so
/// `low <= predicted <= high`. Without predictions (no `nodeFit`, `placementCheck` or
/// `--predict-destinations`) the three equal `evicted`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AfterState {
    /// Each node's requests with the evicted pods gone and nothing placed.
    pub evicted: Vec<Resources>,
    /// `evicted` with the replacements and placed pending pods added where predicted.
    pub predicted: Vec<Resources>,
    /// `evicted` with only the replacements and pending pods that can land nowhere else added.
    pub low: Vec<Resources>,
    /// `evicted` with every replacement and pending pod added on every node it may land on.
    pub high: Vec<Resources>,
}

/// Where one replacement (or a pending pod) lands: its requests, the predicted node and the
/// nodes tied with it.
pub struct Landing<'a> {
    /// What the pod requests.
    pub requests: &'a Resources,
    /// The node the simulator predicts.
    pub node: NodeId,
    /// The other nodes tied with `node` (kube-scheduler picks among them at random).
    pub alternatives: &'a [NodeId],
}

impl AfterState {
    /// The after-state of `evicted` (each node's requests with the evicted pods gone) and the
    /// replacements' `landings`.
    pub fn new<'a>(
        evicted: Vec<Resources>,
        landings: impl IntoIterator<Item = Landing<'a>>,
    ) -> Self {
        let mut predicted = evicted.clone();
        let mut low = evicted.clone();
        let mut high = evicted.clone();
        for l in landings {
            let Some(at) = predicted.get_mut(l.node.index()) else {
                continue;
            };
            at.add_pod(l.requests);
            if l.alternatives.is_empty() {
                low[l.node.index()].add_pod(l.requests);
            }
            for &n in std::iter::once(&l.node).chain(l.alternatives) {
                if let Some(h) = high.get_mut(n.index()) {
                    h.add_pod(l.requests);
                }
            }
        }
        AfterState {
            evicted,
            predicted,
            low,
            high,
        }
    }

    /// Whether a node's after-state depends on a tie kube-scheduler breaks at random.
    pub fn uncertain(&self, node: NodeId) -> bool {
        let n = node.index();
        self.low.get(n) != self.high.get(n)
    }

    /// The after-state of a plan's evictions, their replacements at their destinations, and
    /// the pending pods it places (its [`PendingUnit`] findings).
    pub fn of_plan(
        snap: &ClusterSnapshot,
        evicted: Vec<Resources>,
        evictions: &[PlannedEviction],
        findings: &Findings,
    ) -> Self {
        let pending = findings.list::<PendingUnit, _>();
        let replacements = evictions.iter().filter_map(|e| {
            Some(Landing {
                requests: &snap.pod(e.pod).requests,
                node: e.destination?,
                alternatives: &e.alternatives,
            })
        });
        let placed = pending.iter().flat_map(|u| {
            u.pods.iter().zip(&u.destinations).filter_map(|(&p, d)| {
                Some(Landing {
                    requests: &snap.pod(p).requests,
                    node: (*d)?,
                    alternatives: &[],
                })
            })
        });
        AfterState::new(evicted, replacements.chain(placed))
    }
}

/// Why a cycle could not be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A profile's evictor cannot run on this snapshot (for example, its `priorityThreshold`
    /// names a PriorityClass that does not exist).
    #[error("profile {profile:?}: {message}")]
    Profile {
        /// The profile's name.
        profile: String,
        /// What the evictor could not resolve.
        message: String,
    },
}

/// Told when each plugin starts and ends (the runner times strategies with it; the planner
/// itself has no clock).
pub trait PlanObserver {
    /// A plugin of `profile` starts planning.
    fn plugin_started(&mut self, _profile: &str, _plugin: &'static str) {}
    /// A plugin of `profile` ends, having planned `planned` evictions.
    fn plugin_finished(&mut self, _profile: &str, _plugin: &'static str, _planned: usize) {}
}

impl PlanObserver for () {}

/// Plans one cycle.
pub fn plan(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
) -> Result<EvictionPlan, PlanError> {
    plan_with(pipeline, snap, now, &CycleMemory::default(), &mut ())
}

/// Plans one cycle, given what happened earlier in it.
pub fn plan_with(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
    memory: &CycleMemory,
    observer: &mut dyn PlanObserver,
) -> Result<EvictionPlan, PlanError> {
    // Everything that can make the cycle impossible is checked before any plugin runs.
    for p in &pipeline.profiles {
        p.evictor
            .check(snap)
            .map_err(|message| PlanError::Profile {
                profile: p.name.clone(),
                message,
            })?;
    }
    let nodes = snap.ready_nodes(&pipeline.node_selector);
    // As upstream: fewer than 2 Ready nodes matching the nodeSelector plan nothing (an
    // eviction could only disrupt, with nowhere else to go).
    if nodes.len() <= 1 {
        return Ok(too_few_nodes(pipeline, snap, now, memory, nodes));
    }
    // Upstream's order: every profile's deschedule plugins, then every profile's balance
    // plugins.
    let deschedule = pipeline
        .profiles
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.deschedule.iter().map(move |pl| (i, &**pl)));
    let balance = pipeline
        .profiles
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.balance.iter().map(move |pl| (i, &**pl)));
    let steps: Vec<Step<'_>> = deschedule.chain(balance).collect();
    let mut pass = run_pass(pipeline, snap, now, memory, observer, &nodes, &steps);
    // Scarce budgets spent where they fix most: when a plugin repairing hard constraints was
    // refused for want of budget (a disruption budget, a limit) that plugins before it
    // spent, plan again with the hard repairs first. The second pass is not timed: the
    // observer saw the plugins run once.
    if let Some(hard_first) = hard_first(&steps, pass.state.journal().scarce_refusals()) {
        let second = run_pass(pipeline, snap, now, memory, &mut (), &nodes, &hard_first);
        if hard_planned(pipeline, &steps, &second) > hard_planned(pipeline, &steps, &pass) {
            let waited: Vec<(String, &'static str, u32)> = second
                .state
                .journal()
                .scarce_refusals()
                .iter()
                .filter(|(_, (hard, _))| !hard)
                .map(|((profile, plugin), (_, n))| (profile.clone(), *plugin, *n))
                .collect();
            let repairs: Vec<&'static str> = hard_first
                .iter()
                .map(|(_, pl)| *pl)
                .filter(|pl| pl.repairs_hard_constraints())
                .map(|pl| pl.name())
                .collect();
            pass = second;
            for (profile, plugin, n) in waited {
                let message = format!(
                    "{n} of its evictions waited: the disruption budgets and limits allowed fewer evictions than the profiles want, and went first to the plugins repairing hard constraints ({})",
                    repairs.join(", ")
                );
                tracing::info!(%profile, plugin, "{message}");
                pass.state.journal_mut().note(PlanNote {
                    profile,
                    plugin,
                    node: None,
                    message,
                    kind: NoteKind::Info,
                });
            }
        }
    }
    let Pass { state, orders } = pass;
    let mut tenants: Vec<TenantShare> = orders
        .iter()
        .flat_map(|(_, o)| o.summary(state.ledger()))
        .collect();
    tenants.sort_by(|a, b| (&a.tenant_label, &a.tenant).cmp(&(&b.tenant_label, &b.tenant)));
    let mut out = state.into_output();
    // The shares are the orders', reported by the planner rather than by one plugin.
    let planner = Reporter {
        profile: "",
        plugin: "",
    };
    for t in tenants {
        out.findings.report(planner, t);
    }
    let requested_after = AfterState::of_plan(snap, out.requested, &out.evictions, &out.findings);
    Ok(EvictionPlan {
        evictions: out.evictions,
        nodes,
        requested_after,
        notes: out.notes,
        findings: out.findings,
        skips: out.skips,
    })
}

/// The plan of a cycle skipped for want of nodes: nothing planned, and a note (the
/// planner's, of no profile nor plugin) that says why, as upstream logs it.
fn too_few_nodes(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
    memory: &CycleMemory,
    nodes: Vec<NodeId>,
) -> EvictionPlan {
    tracing::info!(ready_nodes = nodes.len(), "{TOO_FEW_NODES}");
    let mut pass = run_pass(pipeline, snap, now, memory, &mut (), &nodes, &[]);
    pass.state.journal_mut().note(PlanNote {
        profile: String::new(),
        plugin: "",
        node: None,
        message: format!(
            "{TOO_FEW_NODES} ({} Ready node(s) match the policy's nodeSelector; at least 2 are needed)",
            nodes.len()
        ),
        kind: NoteKind::Skipped,
    });
    let out = pass.state.into_output();
    let requested_after = AfterState::of_plan(snap, out.requested, &out.evictions, &out.findings);
    EvictionPlan {
        evictions: out.evictions,
        nodes,
        requested_after,
        notes: out.notes,
        findings: out.findings,
        skips: out.skips,
    }
}

impl EvictionPlan {
    /// Whether the whole cycle was skipped because fewer than 2 Ready nodes match the
    /// policy's nodeSelector (upstream's rule).
    pub fn too_few_nodes(&self) -> bool {
        self.nodes.len() <= 1
    }
}

/// One plugin run of a cycle: its profile (index) and the plugin.
type Step<'p> = (usize, &'p dyn Plugin);

/// What one pass over the plugins leaves.
struct Pass<'s> {
    state: PlanningState<'s>,
    orders: Vec<(String, Box<dyn CandidateOrder + 's>)>,
}

/// Runs the plugins in `steps` order on a fresh planning state.
fn run_pass<'s>(
    pipeline: &'s Pipeline,
    snap: &'s ClusterSnapshot,
    now: i64,
    memory: &'s CycleMemory,
    observer: &mut dyn PlanObserver,
    nodes: &[NodeId],
    steps: &[Step<'s>],
) -> Pass<'s> {
    let mut state = PlanningState::new(snap, pipeline.limits)
        .with_history(&memory.history)
        .with_budgets(&pipeline.budgets, now);
    state.placement_mut().set_termination(pipeline.termination);
    if let Some(profile) = &pipeline.scheduler_profile {
        state.placement_mut().set_profile(profile.clone());
    }
    state
        .placement_mut()
        .set_predict(pipeline.needs_placement());
    for &p in &memory.evicted {
        let by = memory
            .evicted_by
            .iter()
            .find(|(q, ..)| *q == p)
            .map(|(_, profile, plugin)| (profile.as_str(), *plugin));
        match memory.landed.iter().find(|(q, _)| *q == p) {
            Some(&(_, node)) => state.record_landed(p, node, by),
            None => state.record_evicted_earlier(p, by),
        }
    }
    for &p in &memory.gone {
        state.placement_mut().terminated(p);
    }
    for &p in &memory.refused {
        state.pin(p);
    }
    for &p in &memory.in_background {
        state.record_in_background(p);
    }
    // The order of each distinct sort plugin in use, and each profile's.
    let mut orders: Vec<(String, Box<dyn CandidateOrder + 's>)> = Vec::new();
    let order_of: Vec<Option<usize>> = pipeline
        .profiles
        .iter()
        .map(|p| {
            let sort = p.sort.as_ref()?;
            let key = sort.share_key();
            Some(match orders.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    orders.push((key, sort.start(snap)));
                    orders.len() - 1
                }
            })
        })
        .collect();
    if !nodes.is_empty() {
        for &(pi, plugin) in steps {
            let profile = &pipeline.profiles[pi];
            let _span =
                tracing::debug_span!("plugin", profile = %profile.name, plugin = plugin.name())
                    .entered();
            let before = state.ledger().evictions().len();
            observer.plugin_started(&profile.name, plugin.name());
            state.placement_mut().set_relocating(plugin.relocates());
            let mut cx = Context::new(
                &mut state,
                &*profile.evictor,
                &profile.name,
                plugin.name(),
                now,
                nodes,
                order_of[pi].map(|i| &*orders[i].1),
            )
            .repairing_hard_constraints(plugin.repairs_hard_constraints());
            plugin.run(&mut cx, nodes);
            state.placement_mut().set_relocating(false);
            // The targets the plugin held destinations to, for the landings that miss them.
            let by = Reporter {
                profile: &profile.name,
                plugin: plugin.name(),
            };
            for t in state.placement_mut().clear_targets() {
                state.journal_mut().report(by, t);
            }
            let planned = state.ledger().evictions().len() - before;
            observer.plugin_finished(&profile.name, plugin.name(), planned);
            tracing::debug!(planned, "plugin finished");
        }
    }
    Pass { state, orders }
}

/// The plugins repairing hard constraints first (each group in upstream's order), when one
/// of them was refused for want of budget and another plugin ran before it; None otherwise
/// (the order would not change, or nothing repairing a hard constraint waited).
fn hard_first<'p>(
    steps: &[Step<'p>],
    scarce: &std::collections::BTreeMap<(String, &'static str), (bool, u32)>,
) -> Option<Vec<Step<'p>>> {
    if !scarce.values().any(|(hard, _)| *hard) {
        return None;
    }
    let (hard, soft): (Vec<Step<'p>>, Vec<Step<'p>>) = steps
        .iter()
        .partition(|(_, pl)| pl.repairs_hard_constraints());
    let reordered: Vec<Step<'p>> = hard.into_iter().chain(soft).collect();
    let same = reordered
        .iter()
        .zip(steps)
        .all(|(a, b)| a.0 == b.0 && std::ptr::addr_eq(a.1, b.1));
    (!same).then_some(reordered)
}

/// How many evictions a pass planned for plugins repairing hard constraints.
fn hard_planned(pipeline: &Pipeline, steps: &[Step<'_>], pass: &Pass<'_>) -> usize {
    let hard: Vec<(&str, &str)> = steps
        .iter()
        .filter(|(_, pl)| pl.repairs_hard_constraints())
        .map(|(pi, pl)| (pipeline.profiles[*pi].name.as_str(), pl.name()))
        .collect();
    pass.state
        .ledger()
        .evictions()
        .iter()
        .filter(|e| hard.contains(&(e.profile.as_str(), e.plugin)))
        .count()
}

#[cfg(test)]
mod after_state_tests {
    use super::*;

    #[test]
    fn landings_count_where_predicted_and_ties_make_a_range() {
        let evicted = vec![
            Resources::new(1000, 0, 1),
            Resources::default(),
            Resources::default(),
        ];
        let pod = Resources::new(500, 0, 0);
        let after = AfterState::new(
            evicted.clone(),
            [
                // certain: on node 1
                Landing {
                    requests: &pod,
                    node: NodeId::new(1),
                    alternatives: &[],
                },
                // on node 1, or node 2 as likely
                Landing {
                    requests: &pod,
                    node: NodeId::new(1),
                    alternatives: &[NodeId::new(2)],
                },
                // a node the snapshot does not have is ignored
                Landing {
                    requests: &pod,
                    node: NodeId::new(9),
                    alternatives: &[],
                },
            ],
        );
        assert_eq!(after.evicted, evicted);
        assert_eq!(after.predicted[0].cpu, 1000);
        assert_eq!(after.predicted[1].cpu, 1000);
        assert_eq!(after.predicted[1].pods, 2);
        assert_eq!(after.predicted[2].cpu, 0);
        assert_eq!((after.low[1].cpu, after.high[1].cpu), (500, 1000));
        assert_eq!((after.low[2].cpu, after.high[2].cpu), (0, 500));
        assert!(!after.uncertain(NodeId::new(0)));
        assert!(after.uncertain(NodeId::new(1)) && after.uncertain(NodeId::new(2)));
    }
}
