//! The plugin framework: the contracts a plugin implements, the planning state every plugin of
//! a cycle shares, the context a plugin runs in, and the pipeline of profiles built from a
//! policy through the plugin registry.
//!
//! The framework owns its interfaces and knows no implementation: a profile's evictor is an
//! [`EvictorPlugin`], its order a [`SortPlugin`], its deschedule and balance plugins are
//! [`Plugin`]s, and each plugin declares its extension points in its [`PluginSpec`].
//!
//! Plugins never evict anything: they ask the context to *plan* an eviction. The context
//! checks the evictor's filters, the [`PlanningState`]'s safety [`Ledger`] admits the
//! eviction (limits, disruption budgets, gangs), and the eviction is recorded in every part of
//! the state, so later plugins see the pod as gone, its requests moved off its node and its
//! replacement placed. No client, no clock: time comes in as `now`.

mod args;
mod findings;
mod history;
mod pipeline;
mod registry;
mod sort;
mod state;
pub(crate) mod surge;
#[cfg(test)]
pub(crate) mod testing;

pub use args::{args_from_json, decode_args, ArgsError, FromArgs, PluginArgs};
pub use findings::{
    Finding, Findings, MeasuredNode, MeasuredUsage, Overutilized, PendingUnit, Reporter,
    Thresholds, UtilizationThresholds,
};
pub use history::{Frozen, History, Move, Recent};
pub use pipeline::{Pipeline, ProfilePipeline};
pub use registry::{Built, Constructor, ExtensionPoint, PluginSpec, Registry};
pub use sort::{
    sort_by_eviction_order, upstream_cmp, upstream_tie, CandidateOrder, SortPlugin, TenantShare,
};
pub use state::{
    EvictError, Journal, Ledger, Limits, Mechanism, NoteKind, Placement, PlacementTarget,
    PlacementTargets, PlanNote, PlannedEviction, PlanningOutput, PlanningState, SkipCounts,
    SkipReason,
};

use crate::snapshot::{ClusterSnapshot, NodeId, PodId, Resources};

/// A profile's evictor: its `filter` and `preEvictionFilter` extension points. The context
/// asks it about every candidate before an eviction is planned.
pub trait EvictorPlugin: Send + Sync + std::fmt::Debug {
    /// The Filter extension point: may this pod be evicted at all? `Err` says why not.
    fn filter(&self, snap: &ClusterSnapshot, pod: PodId, now: i64) -> Result<(), String>;
    /// The PreEvictionFilter extension point, checked just before a plugin plans an eviction,
    /// against the cluster as the plan so far leaves it. `Err` says why not.
    fn pre_eviction_filter(&self, placement: &Placement<'_>, pod: PodId) -> Result<(), String>;
    /// Whether a running member of a gang goes only with its whole gang, all or nothing.
    fn evicts_whole_gangs(&self) -> bool;
    /// Whether the filters rely on the placement simulation.
    fn needs_placement(&self) -> bool;
    /// Whether the filters check predicted destinations under a plugin that sets placement
    /// targets ([`Plugin::sets_placement_targets`]): the simulation runs for such profiles.
    fn checks_destinations(&self) -> bool {
        false
    }
    /// What makes a cycle impossible for this evictor (an argument the snapshot cannot
    /// resolve), checked before any plugin runs.
    fn check(&self, snap: &ClusterSnapshot) -> Result<(), String>;
    /// How the profile moves a pod of a Deployment: by eviction (the default), or by a surge
    /// that creates the replacement first ([`MoveMode`]).
    fn move_mode(&self) -> MoveMode {
        MoveMode::Evict
    }
}

/// How a profile moves a pod (DefaultEvictor's `moveMode`, an extension).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MoveMode {
    /// Evict through the Eviction API: the pod goes first, its replacement comes later
    /// (upstream's only way, the default).
    #[default]
    Evict,
    /// Surge (make before break) only where an eviction is forbidden or would leave the
    /// Deployment with no replica: its PodDisruptionBudget has no disruptions left, or it has
    /// a single replica. Elsewhere: evict.
    SurgeWhenBlocked,
    /// Surge every pod of a Deployment that can be surged; evict the others.
    Surge,
}

impl MoveMode {
    /// The values of `moveMode`, as a policy writes them.
    pub const NAMES: &'static [&'static str] = &["Evict", "SurgeWhenBlocked", "Surge"];

    /// Reads `moveMode`.
    pub fn parse(text: &str) -> Option<MoveMode> {
        match text {
            "Evict" => Some(MoveMode::Evict),
            "SurgeWhenBlocked" => Some(MoveMode::SurgeWhenBlocked),
            "Surge" => Some(MoveMode::Surge),
            _ => None,
        }
    }
}

/// A strategy plugin (deschedule or balance): looks at the nodes and plans evictions.
pub trait Plugin: Send + Sync + std::fmt::Debug {
    /// The upstream plugin name, such as `LowNodeUtilization`.
    fn name(&self) -> &'static str;
    /// Plans evictions among the pods of `nodes` (the Ready nodes matching the policy's
    /// nodeSelector, in name order).
    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]);
    /// What the plugin needs measured before it runs (real usage); nothing by default.
    fn usage_needs(&self) -> Vec<crate::snapshot::usage::UsageNeed> {
        Vec::new()
    }
    /// Whether the plugin relies on the placement simulation (every planned eviction's
    /// replacement placed); false by default.
    fn needs_placement(&self) -> bool {
        false
    }
    /// Whether the plugin sets placement targets ([`Context::set_placement_targets`]), which
    /// the evictor checks predicted destinations against; false by default.
    fn sets_placement_targets(&self) -> bool {
        false
    }
    /// Whether the plugin's evictions help only where the replacement lands on another node
    /// (the topology spread plugin: a replacement back on its own node
    /// leaves the counts as they were, and the next cycle evicts it again). With
    /// `placementCheck` unset the evictor refuses an eviction whose replacement kube-scheduler
    /// may put back on the pod's node, as under a plugin that sets placement targets. False
    /// by default (plugins that restart pods on purpose, PodLifeTime and the like).
    fn relocates(&self) -> bool {
        false
    }
    /// Whether the plugin's evictions repair a hard constraint (a DoNotSchedule topology
    /// spread, a required node affinity or pod anti-affinity, a taint the pod does not
    /// tolerate): when the disruption budgets and limits allow fewer evictions than the
    /// profiles want, such plugins spend them first (see [`crate::plan::plan_with`]).
    /// False by default.
    fn repairs_hard_constraints(&self) -> bool {
        false
    }
}

/// What became of a candidate offered through [`Context::try_evict`]: the caller's next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Planned. With `gangPolicy: WholeGang`, `with` holds the other members of its gang
    /// planned together with it, and the destination simulated for each (if any).
    Planned {
        /// The other members of the gang planned with it, each with its simulated destination.
        with: Vec<(PodId, Option<NodeId>)>,
    },
    /// Refused (pre-eviction filter, namespace limit, disruption budget, gang): try the next pod.
    SkipPod,
    /// The node's eviction limit is reached: go on with the next node.
    SkipNode,
    /// The cycle's total eviction limit is reached: stop.
    Stop,
}

/// What a plugin sees while it runs: the shared planning state, its profile's evictor and
/// order, and the time. Its fields are private: a plugin reads through the accessors below and
/// plans through [`Context::try_evict`].
pub struct Context<'a, 's> {
    state: &'a mut PlanningState<'s>,
    evictor: &'a dyn EvictorPlugin,
    profile: &'a str,
    plugin: &'static str,
    /// Planning time, unix seconds.
    now: i64,
    /// The planning nodes (Ready, matching the policy's nodeSelector).
    nodes: &'a [NodeId],
    /// The profile's order, when its `sort` extension point enables a plugin; None:
    /// upstream's order.
    order: Option<&'a dyn CandidateOrder>,
    /// Whether the plugin repairs hard constraints ([`Plugin::repairs_hard_constraints`]).
    hard: bool,
}

impl<'a, 's> Context<'a, 's> {
    /// The context of `plugin` of `profile`, planning at `now` (unix seconds) over the
    /// planning `nodes`.
    pub fn new(
        state: &'a mut PlanningState<'s>,
        evictor: &'a dyn EvictorPlugin,
        profile: &'a str,
        plugin: &'static str,
        now: i64,
        nodes: &'a [NodeId],
        order: Option<&'a dyn CandidateOrder>,
    ) -> Self {
        Context {
            state,
            evictor,
            profile,
            plugin,
            now,
            nodes,
            order,
            hard: false,
        }
    }

    /// The context of a plugin that repairs hard constraints (or not): its refusals for
    /// want of budget are counted as such ([`crate::framework::Journal::scarce`]).
    pub(crate) fn repairing_hard_constraints(self, hard: bool) -> Self {
        Context { hard, ..self }
    }

    /// Planning time, unix seconds.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// The running plugin's name.
    pub fn plugin(&self) -> &'static str {
        self.plugin
    }

    /// The planning nodes: Ready, matching the policy's nodeSelector, in name order.
    pub fn nodes(&self) -> &'a [NodeId] {
        self.nodes
    }

    /// What earlier cycles observed (continuous mode); read-only.
    pub fn history(&self) -> &'s History {
        self.state.history()
    }

    /// Reports a finding of this plugin's own (as this profile's and this plugin's): the
    /// nodes it found overutilized ([`Overutilized`], for the next cycle's [`History`]), the
    /// thresholds it classifies nodes with ([`Thresholds`], drawn by the report), the
    /// measured usage it plans with ([`MeasuredUsage`]), a pending unit it made room for
    /// ([`PendingUnit`]), or any other kind of [`Finding`]. The plan carries them in its
    /// [`Findings`], and the report shows each kind under its key.
    pub fn report<F: Finding>(&mut self, finding: F) {
        let by = Reporter {
            profile: self.profile,
            plugin: self.plugin,
        };
        self.state.journal_mut().report(by, finding);
    }

    /// Where this plugin wants evicted pods to go, and how full each may become
    /// ([`Placement::set_targets`]); cleared when the plugin ends.
    pub(crate) fn set_placement_targets(&mut self, targets: PlacementTargets) {
        self.state.placement_mut().set_targets(targets);
    }

    /// The cluster snapshot being planned on.
    pub fn snap(&self) -> &'s ClusterSnapshot {
        self.state.snap()
    }

    /// The planning state as it stands (what is planned, spent, placed and journaled), to
    /// go back to with [`Context::restore`]: a plugin that tries more than one plan keeps the
    /// best. A copy of the state, the placement simulation included.
    pub(crate) fn checkpoint(&self) -> PlanningState<'s> {
        self.state.clone()
    }

    /// Puts back a state taken by [`Context::checkpoint`] in this plugin's run: everything
    /// planned, spent, placed or journaled since is as if it had not been.
    pub(crate) fn restore(&mut self, state: PlanningState<'s>) {
        *self.state = state;
    }

    /// From now until the next [`Context::restore`], plans as if every PodDisruptionBudget
    /// that allows a disruption now allowed any number: a trial plan over the next cycles,
    /// whose evictions are not carried out as such
    /// ([`Ledger::look_past_disruption_budgets`]).
    pub(crate) fn look_past_disruption_budgets(&mut self) {
        self.state.ledger_mut().look_past_disruption_budgets();
    }

    /// The placement simulation, as the plan so far leaves the cluster.
    pub fn placement(&self) -> &Placement<'s> {
        self.state.placement()
    }

    /// The safety ledger: what is planned and what is spent so far.
    pub fn ledger(&self) -> &Ledger<'s> {
        self.state.ledger()
    }

    /// Whether the profile's evictor moves a running gang member only with its whole gang.
    pub fn evicts_whole_gangs(&self) -> bool {
        self.evictor.evicts_whole_gangs()
    }

    /// Places a pending pod where the simulator predicts kube-scheduler puts it
    /// ([`PlanningState::place_pending`]); later plugins see it there.
    pub(crate) fn place_pending(
        &mut self,
        pod: PodId,
    ) -> Result<crate::sim::Prediction, crate::sim::NoFit> {
        self.state.place_pending(pod)
    }

    /// Whether an earlier plugin (or this one) already planned to evict the pod.
    pub(crate) fn is_planned(&self, pod: PodId) -> bool {
        self.state.ledger().is_planned(pod)
    }

    /// The pods on a node that no plugin has planned to evict yet, in namespace/name order.
    pub fn pods_on_node(&self, node: NodeId) -> impl Iterator<Item = PodId> + use<'_, 's> {
        let ledger: &Ledger<'s> = self.state.ledger();
        self.snap()
            .pods_on_node(node)
            .iter()
            .copied()
            .filter(move |&p| !ledger.is_planned(p))
    }

    /// What the node's active pods request now (after planned evictions); `pods` counts them.
    pub fn requested(&self, node: NodeId) -> &Resources {
        self.state.ledger().requested(node)
    }

    /// The evictor's Filter extension point: may this pod be evicted at all?
    /// Returns why not.
    pub fn filter(&self, pod: PodId) -> Result<(), String> {
        let ledger = self.state.ledger();
        if ledger.is_planned(pod) {
            return Err("already planned for eviction".into());
        }
        if ledger.is_pinned(pod) {
            return Err("the API refused to evict it earlier in this cycle".into());
        }
        let r = self.evictor.filter(self.snap(), pod, self.now);
        // A protection the user wrote on the pod (do-not-evict-until, another disruptor's
        // do-not-disrupt) is named in the report, unlike the evictor's other refusals, which
        // every pod of a kind shares.
        if let Err(why) = &r {
            let p = self.snap().pod(pod);
            if p.do_not_disrupt.is_some() || p.protected_until.is_some_and(|t| t > self.now) {
                self.not_chosen(pod, why.clone(), SkipReason::Protection);
            }
        }
        r
    }

    /// Whether the eviction cooldown holds the pod back (its workload was just moved and its
    /// replacements are not placed yet, or it is frozen for ping-pong), and why, with the
    /// time left. Checked when a plugin plans the eviction, so a candidate held back is in
    /// the not-chosen list.
    pub fn cooldown(&self, pod: PodId) -> Result<(), String> {
        match self
            .history()
            .cooldown_refusal(self.snap().pod(pod), self.now)
        {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Why a pod is not moved again now: it replaced a pod evicted within the cooldown
    /// ([`History::replacement_hold`]). For plugins that plan toward an outcome (a replica
    /// restarted twice within the cooldown is churn); upstream's plugins do not ask.
    pub fn replacement_hold(&self, pod: PodId) -> Result<(), String> {
        match self
            .history()
            .replacement_hold(self.snap().pod(pod), self.now)
        {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// The planning nodes the pod's workload lost pods from within the cooldown
    /// ([`History::left_recently`]).
    pub fn left_recently(&self, pod: PodId) -> Vec<NodeId> {
        let snap = self.snap();
        self.history()
            .left_recently(snap.pod(pod), self.now)
            .into_iter()
            .filter_map(|n| snap.node_id(n))
            .collect()
    }

    /// Records that this plugin did not choose a candidate, and why (a refusal of its own).
    pub(crate) fn skip_candidate(&self, pod: PodId, why: String, reason: SkipReason) {
        self.not_chosen(pod, why, reason);
    }

    /// The evictor's PreEvictionFilter extension point (nodeFit), checked just before a
    /// plugin plans an eviction.
    /// A pod it refuses is recorded as a candidate not chosen, with why.
    pub fn pre_eviction_filter(&self, pod: PodId) -> Result<(), String> {
        let r = self
            .evictor
            .pre_eviction_filter(self.state.placement(), pod);
        if let Err(why) = &r {
            self.not_chosen(pod, why.clone(), SkipReason::Placement);
        }
        r
    }

    /// The evictor's PreEvictionFilter, asked about a pod the plugin only considers: a refusal
    /// is not recorded as a candidate not chosen.
    pub(crate) fn check_pre_eviction(&self, pod: PodId) -> Result<(), String> {
        self.evictor
            .pre_eviction_filter(self.state.placement(), pod)
    }

    /// Records in the journal that this plugin did not choose a candidate, and why.
    fn not_chosen(&self, pod: PodId, why: String, reason: SkipReason) {
        let node = self.snap().pod_node(pod);
        self.state
            .journal()
            .not_chosen(self.profile, self.plugin, pod, node, why, reason);
    }

    /// Records a note about this plugin's cycle (and logs it).
    pub fn note(&mut self, node: Option<NodeId>, message: impl Into<String>) {
        let message = message.into();
        let node_name = node.map(|n| self.snap().node(n).name.to_string());
        tracing::info!(
            profile = self.profile,
            plugin = self.plugin,
            node = node_name.as_deref(),
            "{message}"
        );
        self.state.journal_mut().note(PlanNote {
            profile: self.profile.to_string(),
            plugin: self.plugin,
            node,
            message,
            kind: NoteKind::Info,
        });
    }

    /// Records that this plugin skips the cycle, and why (logged as a warning).
    pub(crate) fn note_skipped(&mut self, message: impl Into<String>) {
        let message = message.into();
        tracing::warn!(profile = self.profile, plugin = self.plugin, "{message}");
        self.state.journal_mut().note(PlanNote {
            profile: self.profile.to_string(),
            plugin: self.plugin,
            node: None,
            message,
            kind: NoteKind::Skipped,
        });
    }

    /// The key of this plugin's memory across cycles: `profile/plugin`.
    pub(crate) fn history_key(&self) -> String {
        format!("{}/{}", self.profile, self.plugin)
    }

    /// Plans the eviction of a pod that passed [`Context::filter`]: the ledger checks the
    /// limits, disruption budgets and gangs ([`Ledger::admit`]), then it is recorded. On success the pod is gone for every later check.
    /// A pod refused here (a limit, a budget, a gang) is recorded as a candidate not chosen.
    ///
    /// With `gangPolicy: WholeGang` (or a Kubernetes PodGroup's `disruptionMode: all`, see
    /// [`crate::snapshot::Gang::goes_whole`]), a running member of a gang goes only with its
    /// whole gang, all or nothing: every other member bound to a node must pass the evictor's filter too, the
    /// limits and budgets must allow all of them together, and the simulator must place every
    /// one ([`PlanningState::plan_whole_gang`]); then all are planned, one after the other.
    pub fn evict(&mut self, pod: PodId, reason: impl Into<String>) -> Result<(), EvictError> {
        // A member that does not run (failed, say) goes alone: the gang does not miss it.
        let whole_gang = self
            .snap()
            .goes_whole(pod, self.evictor.evicts_whole_gangs())
            && self.snap().counts_as_running(pod);
        if let Err(why) = self.cooldown(pod) {
            tracing::info!(pod = %self.snap().pod(pod).key(), plugin = self.plugin, %why, "held back by the eviction cooldown");
            let e = EvictError::Cooldown(why);
            self.not_chosen(pod, e.to_string(), e.skip_reason());
            return Err(e);
        }
        let r = if whole_gang {
            self.evict_gang(pod, reason.into())
        } else {
            let mode = self.evictor.move_mode();
            match surge::choose(self.snap(), self.state.ledger(), pod, mode) {
                surge::Choice::Evict => {
                    self.state
                        .plan_eviction(pod, self.profile, self.plugin, reason.into())
                }
                surge::Choice::Surge { deployment, why } => {
                    let reason = format!(
                        "{}; moved by a surge of Deployment {deployment} (its new pod first): {why}",
                        reason.into()
                    );
                    self.state
                        .plan_surge(pod, self.profile, self.plugin, reason, deployment)
                }
                surge::Choice::Refuse(e) => Err(e),
            }
        };
        if let Err(e) = &r {
            if *e != EvictError::AlreadyPlanned {
                self.not_chosen(pod, e.to_string(), e.skip_reason());
            }
            if e.is_scarcity() {
                self.state
                    .journal_mut()
                    .scarce(self.profile, self.plugin, self.hard);
            }
        }
        r
    }

    /// The one door most plugins plan through: [`Context::evict`], with what happened said as
    /// the caller's next step (see [`Attempt`]). A refusal other than a limit is logged.
    pub(crate) fn try_evict(&mut self, pod: PodId, reason: String) -> Attempt {
        let before = self.state.ledger().evictions().len();
        match self.evict(pod, reason) {
            Ok(()) => Attempt::Planned {
                with: self.state.ledger().evictions()[before + 1..]
                    .iter()
                    .map(|e| (e.pod, e.destination))
                    .collect(),
            },
            Err(EvictError::NodeLimit(_)) => Attempt::SkipNode,
            Err(EvictError::TotalLimit(_)) => Attempt::Stop,
            Err(e) => {
                tracing::debug!(pod = %self.snap().pod(pod).key(), error = %e, "eviction not planned");
                Attempt::SkipPod
            }
        }
    }

    /// [`Context::try_evict`] after the evictor's PreEvictionFilter
    /// ([`Context::pre_eviction_filter`]); a pod it refuses is [`Attempt::SkipPod`].
    pub(crate) fn try_evict_checked(&mut self, pod: PodId, reason: String) -> Attempt {
        if let Err(why) = self.pre_eviction_filter(pod) {
            tracing::debug!(pod = %self.snap().pod(pod).key(), %why, "refused by the pre-eviction filter");
            return Attempt::SkipPod;
        }
        self.try_evict(pod, reason)
    }

    /// [`Context::try_evict_checked`] with the limits of the running plugin's placement
    /// targets lifted on `nodes` for this one move, for a plugin that weighed the
    /// replacement taking one of them over its target (OutcomeBalance: a pod above the
    /// target on its own, onto an underutilized node, which is outside either way). Every
    /// other check holds.
    pub(crate) fn try_evict_checked_beyond_targets(
        &mut self,
        pod: PodId,
        reason: String,
        nodes: &[NodeId],
    ) -> Attempt {
        let lifted: Vec<_> = nodes
            .iter()
            .filter_map(|&n| Some((n, self.state.placement_mut().lift_limits(n)?)))
            .collect();
        let attempt = self.try_evict_checked(pod, reason);
        for (n, limits) in lifted {
            self.state.placement_mut().restore_limits(n, limits);
        }
        attempt
    }

    fn evict_gang(&mut self, pod: PodId, reason: String) -> Result<(), EvictError> {
        let rule = self.snap().whole_rule(pod);
        let ledger = self.state.ledger();
        let members = ledger.gang_members(pod);
        ledger.admit_gang_members(&members)?;
        for &m in &members[1..] {
            if let Err(why) = self.filter(m).and_then(|_| self.cooldown(m)) {
                return Err(EvictError::WholeGang(format!(
                    "gang {} goes whole or not at all ({rule}), and its member {} may not be evicted: {why}",
                    self.state.ledger().gang_description(pod),
                    self.snap().pod(m).key()
                )));
            }
        }
        self.state
            .plan_whole_gang(&members, self.profile, self.plugin, reason)
    }

    /// The profile's eviction order (its `sort` extension point), most evictable first:
    /// upstream's ([`sort_by_eviction_order`]) unless a sort plugin is enabled, which orders
    /// as the plan so far leaves the cluster ([`CandidateOrder::sort`]).
    pub fn sort_by_eviction_order(&self, pods: &mut [PodId]) {
        match self.order {
            None => sort_by_eviction_order(self.snap(), pods),
            Some(o) => o.sort(self.state.ledger(), pods),
        }
    }

    /// Whether the profile's `sort` extension point enables a plugin (then it, not upstream's
    /// order, says which candidate goes next).
    pub(crate) fn has_sort_plugin(&self) -> bool {
        self.order.is_some()
    }

    /// Removes and returns the next pod to try from candidates sorted by
    /// [`Context::sort_by_eviction_order`]. Upstream's order: the first. With a sort plugin:
    /// the most evictable *now*, after every eviction planned so far, so a loop that evicts as
    /// it goes follows the order as it changes ([`CandidateOrder::take_next`]).
    pub(crate) fn next_by_order(&self, pods: &mut Vec<PodId>) -> Option<PodId> {
        match self.order {
            None if pods.is_empty() => None,
            None => Some(pods.remove(0)),
            Some(o) => o.take_next(self.state.ledger(), pods),
        }
    }
}
