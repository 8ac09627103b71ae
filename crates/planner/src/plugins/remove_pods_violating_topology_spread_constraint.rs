//! RemovePodsViolatingTopologySpreadConstraint: evicts the fewest pods needed to bring each
//! topology spread constraint back within its `maxSkew`, so the scheduler spreads them again.
//!
//! As upstream (`removepodsviolatingtopologyspreadconstraint/topologyspreadconstraint.go`):
//! - Namespaces are handled one at a time (in name order here). A namespace's constraints are
//!   the distinct topology spread constraints of its pods whose `whenUnsatisfiable` is listed in
//!   `constraints` (default `[DoNotSchedule]`). `matchLabelKeys` extends a constraint's selector
//!   with the pod's values for those keys; with `nodeAffinityPolicy: Honor` (the default) the
//!   pod's nodeSelector and required node affinity are part of the constraint, and so are its
//!   tolerations with `nodeTaintsPolicy: Honor`.
//! - A constraint's domains are the values of its `topologyKey` on the planning nodes that
//!   match its inclusion policies (Honor: the node matches the pod's node affinity / tolerates
//!   its NoSchedule and NoExecute taints); a domain with no matching pod still counts.
//!   The pods counted are the namespace's running, non-terminating pods matching the selector,
//!   minus the pods earlier plugins already planned to evict.
//! - When the largest and smallest domain differ by more than `maxSkew`, `balanceDomains`
//!   moves pods from the largest domains toward the smallest: domains sorted by size, at most
//!   half the excess skew at a time, never taking a domain below the ideal average nor filling
//!   one above it. Within a domain, pods that may not be evicted stay; of the others, pods
//!   that fit a node of a below-average domain leave first, then pods without a nodeSelector
//!   or node affinity, then by priority. A pod that may not be evicted but is picked anyway
//!   (too few others) counts as moved and stays.
//! - With `topologyBalanceNodeFit` (default true) a pod is only chosen when it fits some
//!   other node of a domain below the ideal average (`sim::node_fits`, against what the node
//!   holds after the evictions planned so far); a chosen pod that does not fit still counts
//!   as moved, so the balancing completes.
//! - The chosen pods are then evicted in the order they were chosen, each checked against the
//!   evictor's Filter, the `labelSelector` arg and PreEvictionFilter. A per-node limit skips
//!   the rest of that node, the total limit stops the plugin, any other refusal skips the pod.
//!
//! Deliberate differences from upstream v0.36:
//! - Every pod matching a constraint is counted, as kube-scheduler counts them, even when the
//!   evictor or the `labelSelector` arg protects it (upstream counts only the pods that pass
//!   both, which misjudges the skew and can evict pods the scheduler puts straight back).
//!   Such pods are kept, as upstream keeps non-evictable pods; `labelSelector` only limits
//!   which pods are evicted, as upstream's documentation says.
//! - Only pods on nodes matching the constraint's inclusion policies are counted (as
//!   kube-scheduler); upstream counts pods on every planning node with the topology label.
//! - By priority, the lowest leaves first, as upstream's comments describe (its sort takes
//!   the highest first). Pods with the prefer-no-eviction annotation leave after the others
//!   (an addition, as in the framework's eviction order). Ties keep node order, then name.
//! - Map-order randomness is gone: domains tie-break by value, chosen pods keep their order.
//!   Namespaces are balanced on all cores (choosing reads the state the plugin started with
//!   and records nothing); their chosen pods are then taken in namespace order, so the plan
//!   is the one a single pass makes.
//! - Constraints with `maxSkew` below 1 (which the API rejects) are skipped.
//! - `includeSoftConstraints` (v1alpha1 only; gone from v1alpha2) is an error that names its
//!   replacement, `constraints: [DoNotSchedule, ScheduleAnyway]`.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Attempt, Context, Plugin};
use crate::labels::{LabelSelectorSpec, Labels, Selector};
use crate::plugins::shared::{each_one_of, namespace_allowed, selector_arg, Namespaces, PodScope};
use crate::sim;
use crate::sim::domains::{DomainCache, Inclusion, TopologyDomains};
use crate::snapshot::{
    ClusterSnapshot, IdRange, InclusionPolicy, NodeId, Pod, PodId, TopologySpreadConstraint,
    WhenUnsatisfiable,
};
use rayon::iter::{IntoParallelIterator, ParallelIterator};
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::hash::{Hash, Hasher};

/// The plugin's name in a policy.
pub const NAME: &str = "RemovePodsViolatingTopologySpreadConstraint";

/// The registry entry: a `balance` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::balance::<RemovePodsViolatingTopologySpreadConstraint>(NAME);

pub(crate) const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
pub(crate) const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";

/// `RemovePodsViolatingTopologySpreadConstraintArgs`, with upstream's defaults for `constraints`
/// and `topologyBalanceNodeFit`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RemovePodsViolatingTopologySpreadConstraintArgs {
    /// `namespaces`: the namespaces whose pods' constraints are balanced (include or exclude;
    /// None: all).
    pub namespaces: Option<Namespaces>,
    /// Only pods matching it are evicted (every matching pod is still counted).
    pub label_selector: Option<LabelSelectorSpec>,
    /// Which `whenUnsatisfiable` values to act on. Absent or null: `[DoNotSchedule]`;
    /// an empty list acts on none, as upstream.
    pub constraints: Option<Vec<String>>,
    /// Absent or null: true.
    pub topology_balance_node_fit: Option<bool>,
    /// The v1alpha1 field; accepted only to say what replaced it.
    #[serde(skip_serializing)]
    pub include_soft_constraints: Option<serde_json::Value>,
}

impl PluginArgs for RemovePodsViolatingTopologySpreadConstraintArgs {
    /// Upstream's `SetDefaults_RemovePodsViolatingTopologySpreadConstraintArgs`.
    fn set_defaults(&mut self) {
        if self.constraints.is_none() {
            self.constraints = Some(vec![DO_NOT_SCHEDULE.to_string()]);
        }
        if self.topology_balance_node_fit.is_none() {
            self.topology_balance_node_fit = Some(true);
        }
    }

    /// Upstream's `ValidateRemovePodsViolatingTopologySpreadConstraintArgs`, with field paths.
    fn validate(&self) -> Result<(), ArgsError> {
        if self.include_soft_constraints.is_some() {
            return Err(ArgsError::new(
                "includeSoftConstraints",
                "is a v1alpha1 parameter that v1alpha2 no longer has; use constraints: [DoNotSchedule, ScheduleAnyway] to include soft constraints",
            ));
        }
        PodScope::new(self.namespaces.as_ref(), self.label_selector.as_ref())?;
        each_one_of(
            "constraints",
            self.constraints.as_deref().unwrap_or_default(),
            &[DO_NOT_SCHEDULE, SCHEDULE_ANYWAY],
            |c| format!("constraint {c:?} is not one of {DO_NOT_SCHEDULE}, {SCHEDULE_ANYWAY}"),
        )
    }
}

/// A validated plugin, args defaulted.
#[derive(Debug)]
pub struct RemovePodsViolatingTopologySpreadConstraint {
    /// The args, defaulted.
    pub args: RemovePodsViolatingTopologySpreadConstraintArgs,
    label_selector: Option<Selector>,
    do_not_schedule: bool,
    schedule_anyway: bool,
    topology_balance_node_fit: bool,
}

impl FromArgs for RemovePodsViolatingTopologySpreadConstraint {
    type Args = RemovePodsViolatingTopologySpreadConstraintArgs;

    fn from_args(args: RemovePodsViolatingTopologySpreadConstraintArgs) -> Result<Self, ArgsError> {
        let label_selector = selector_arg(args.label_selector.as_ref(), "labelSelector")?;
        let listed = |v: &str| args.constraints.iter().flatten().any(|c| c == v);
        Ok(RemovePodsViolatingTopologySpreadConstraint {
            label_selector,
            do_not_schedule: listed(DO_NOT_SCHEDULE),
            schedule_anyway: listed(SCHEDULE_ANYWAY),
            topology_balance_node_fit: args.topology_balance_node_fit.unwrap_or(true),
            args,
        })
    }
}

impl RemovePodsViolatingTopologySpreadConstraint {
    fn acts_on(&self, c: &TopologySpreadConstraint) -> bool {
        match c.when_unsatisfiable {
            WhenUnsatisfiable::DoNotSchedule => self.do_not_schedule,
            WhenUnsatisfiable::ScheduleAnyway => self.schedule_anyway,
        }
    }
}

impl Plugin for RemovePodsViolatingTopologySpreadConstraint {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A pod restarted on its own node leaves the skew as it was.
    fn relocates(&self) -> bool {
        true
    }

    /// A DoNotSchedule spread is a hard constraint (the default `constraints`).
    fn repairs_hard_constraints(&self) -> bool {
        self.do_not_schedule
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        if nodes.is_empty() || !(self.do_not_schedule || self.schedule_anyway) {
            return;
        }
        let mut node_pos: Vec<Option<u32>> = vec![None; snap.nodes.len()];
        for (i, &n) in nodes.iter().enumerate() {
            node_pos[n.index()] = Some(i as u32);
        }
        // Pods are sorted by namespace, so each namespace is one contiguous range.
        let mut namespaces: Vec<IdRange<PodId>> = Vec::new();
        let mut start = PodId::new(0);
        while start.index() < snap.pods.len() {
            let ns = &*snap.pod(start).namespace;
            let range = snap.pods_in_namespace(ns);
            start = range.end;
            if namespace_allowed(&self.args.namespaces, ns) {
                namespaces.push(range);
            }
        }
        // Namespaces are balanced on their own and nothing is evicted until all are (the
        // state every namespace sees is the one this plugin started with), so they are
        // balanced on all cores; the pods chosen are then taken in namespace order, as one
        // pass would choose them.
        let domain_cache = DomainCache::default();
        let shared: &Context<'_, '_> = cx;
        let per_namespace: Vec<Chosen> = namespaces
            .into_par_iter()
            .map(|range| {
                let mut chosen = Chosen::default();
                self.balance_namespace(shared, nodes, &node_pos, range, &domain_cache, &mut chosen);
                chosen
            })
            .collect();
        let mut chosen = Chosen::default();
        for c in per_namespace {
            chosen.pods.extend(c.pods);
        }
        self.evict(cx, chosen);
    }
}

/// Pods chosen for eviction, in the order they were chosen, each once.
#[derive(Default)]
struct Chosen {
    pods: Vec<(PodId, String)>,
    seen: FxHashSet<PodId>,
}

/// A pod counted by the plugin: its node's position among the planning nodes, its id, its node.
type Counted = (u32, PodId, NodeId);

/// One distinct constraint of a namespace, with what upstream's `topologySpreadConstraint`
/// compares: the selector (with matchLabelKeys applied) and the node inclusion policies,
/// together with the pod affinity / tolerations those policies honour.
struct Constraint<'s> {
    max_skew: i32,
    topology_key: &'s str,
    /// None selects no pod (a nil labelSelector).
    selector: Option<&'s Selector>,
    /// `matchLabelKeys` with the defining pod's values, sorted by key.
    match_labels: Vec<(&'s str, &'s str)>,
    /// The node inclusion policies, with the pod that defined the constraint: its node
    /// affinity and tolerations are the ones the Honor policies use (every pod sharing the
    /// constraint has the same ones).
    inclusion: Inclusion<'s>,
}

impl<'s> Constraint<'s> {
    fn new(c: &'s TopologySpreadConstraint, pod: &'s Pod) -> Self {
        let mut match_labels: Vec<(&str, &str)> = c
            .match_label_keys
            .iter()
            .filter_map(|k| pod.labels.get(k).map(|v| (&**k, v)))
            .collect();
        match_labels.sort_unstable();
        match_labels.dedup();
        Constraint {
            max_skew: c.max_skew,
            topology_key: &c.topology_key,
            selector: c.label_selector.as_ref(),
            match_labels,
            inclusion: Inclusion::of(c, pod),
        }
    }

    /// A hash of what [`Constraint::same`] compares but the defining pods.
    fn hash(&self) -> u64 {
        let mut h = FxHasher::default();
        self.max_skew.hash(&mut h);
        self.topology_key.hash(&mut h);
        self.selector.hash(&mut h);
        self.match_labels.hash(&mut h);
        (self.inclusion.node_affinity_policy == InclusionPolicy::Honor).hash(&mut h);
        (self.inclusion.node_taints_policy == InclusionPolicy::Honor).hash(&mut h);
        h.finish()
    }

    /// Upstream's `hasIdenticalConstraints`.
    fn same(&self, o: &Constraint<'_>) -> bool {
        self.max_skew == o.max_skew
            && self.topology_key == o.topology_key
            && self.selector == o.selector
            && self.match_labels == o.match_labels
            && self.inclusion.same(&o.inclusion)
    }

    /// A label every pod the constraint selects carries, if there is one.
    fn required_label(&self) -> Option<(&'s str, &'s str)> {
        self.selector
            .and_then(|s| s.required_label())
            .or_else(|| self.match_labels.first().copied())
    }

    fn selects(&self, labels: &Labels) -> bool {
        self.selector.is_some_and(|s| s.matches(labels))
            && self
                .match_labels
                .iter()
                .all(|&(k, v)| labels.get(k) == Some(v))
    }
}

/// Upstream's `hasSelectorOrAffinity`.
fn has_selector_or_affinity(p: &Pod) -> bool {
    !p.node_selector.is_empty()
        || p.affinity
            .as_ref()
            .is_some_and(|a| a.node_required.is_some() || !a.node_preferred.is_empty())
}

/// A domain while its constraint is balanced: its value and its pods.
struct Domain<'s> {
    value: &'s str,
    pods: Vec<PodId>,
}

/// Upstream's sortDomains: in each domain the pods that stay first, pods to evict first at
/// the back; the domains smallest first.
fn sort_domains<'s>(
    cx: &Context<'_, 's>,
    domains: Vec<Vec<PodId>>,
    values: &[&'s str],
    is_evictable: &mut impl FnMut(PodId) -> bool,
) -> Vec<Domain<'s>> {
    let snap = cx.snap();
    let mut sorted: Vec<Domain<'s>> = domains
        .into_iter()
        .zip(values)
        .map(|(mut pods, &value)| {
            pods.sort_by_cached_key(|&p| {
                let pod = snap.pod(p);
                (
                    is_evictable(p),
                    // A pod the eviction cooldown holds back is chosen last (and, if
                    // chosen, refused with the time left, in the not-chosen list).
                    cx.cooldown(p).is_ok(),
                    !has_selector_or_affinity(pod),
                    !pod.has_prefer_no_eviction_annotation,
                    Reverse(pod.priority.map(i64::from).unwrap_or(i64::MIN)),
                )
            });
            Domain { value, pods }
        })
        .collect();
    sorted.sort_by_key(|d| d.pods.len());
    sorted
}

impl RemovePodsViolatingTopologySpreadConstraint {
    /// Whether the plugin may evict the pod: the evictor's Filter and the `labelSelector` arg
    /// (upstream's `podFilter`; the namespace is already in scope).
    fn may_evict(&self, cx: &Context<'_, '_>, pod: PodId) -> Result<(), String> {
        if let Some(sel) = &self.label_selector {
            if !sel.matches(&cx.snap().pod(pod).labels) {
                return Err("pod labels do not match the plugin's labelSelector".into());
            }
        }
        cx.filter(pod)
    }

    fn balance_namespace<'s>(
        &self,
        cx: &Context<'_, 's>,
        nodes: &[NodeId],
        node_pos: &[Option<u32>],
        range: IdRange<PodId>,
        domain_cache: &DomainCache<'s>,
        chosen: &mut Chosen,
    ) {
        let snap = cx.snap();
        // The namespace's pods that count: on a planning node, running, not terminating and
        // not already planned away; in node order, then name order, as upstream lists them.
        let mut pods: Vec<Counted> = range
            .filter(|&p| !cx.is_planned(p))
            .filter_map(|p| {
                let pod = snap.pod(p);
                if !pod.is_active() || pod.terminating {
                    return None;
                }
                let node = snap.pod_node(p)?;
                Some((node_pos[node.index()]?, p, node))
            })
            .collect();
        if pods.is_empty() {
            return;
        }
        pods.sort_unstable();

        // The distinct constraints, in the order pods first carry them (compared only with
        // those of the same hash: a namespace may hold many workloads, each with its own).
        let mut constraints: Vec<Constraint<'_>> = Vec::new();
        let mut by_hash: FxHashMap<u64, Vec<u32>> = FxHashMap::default();
        for &(_, p, _) in &pods {
            let pod = snap.pod(p);
            for c in pod.topology_spread.iter().filter(|c| self.acts_on(c)) {
                let c = Constraint::new(c, pod);
                let same_hash = by_hash.entry(c.hash()).or_default();
                if !same_hash.iter().any(|&o| constraints[o as usize].same(&c)) {
                    same_hash.push(constraints.len() as u32);
                    constraints.push(c);
                }
            }
        }
        if constraints.is_empty() {
            return;
        }
        // With several constraints (one per workload, typically), each looks only at the pods
        // carrying a label its selector requires, not at the whole namespace: the pods are
        // indexed by their values of the label keys some constraint requires.
        let indexed = constraints.len() > 1;
        let mut by_label: FxHashMap<(&'s str, &'s str), Vec<u32>> = FxHashMap::default();
        if indexed {
            let mut keys: Vec<&'s str> = constraints
                .iter()
                .filter_map(|c| c.required_label())
                .map(|(k, _)| k)
                .collect();
            keys.sort_unstable();
            keys.dedup();
            for (i, &(_, p, _)) in pods.iter().enumerate() {
                let labels = &snap.pod(p).labels;
                for &k in &keys {
                    if let Some(v) = labels.get(k) {
                        by_label.entry((k, v)).or_default().push(i as u32);
                    }
                }
            }
        }
        let mut evictable: FxHashMap<PodId, bool> = FxHashMap::default();
        for c in &constraints {
            if c.max_skew < 1 {
                tracing::debug!(
                    namespace = %snap.pod(pods[0].1).namespace,
                    topology_key = c.topology_key,
                    max_skew = c.max_skew,
                    "skipping a topology spread constraint with maxSkew below 1"
                );
                continue;
            }
            let domains = domain_cache.get(snap, nodes, c.topology_key, c.inclusion);
            // The pods the constraint selects, in the order of `pods`.
            let selected: Vec<Counted> = match c.required_label().filter(|_| indexed) {
                Some(label) => by_label
                    .get(&label)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|&i| pods[i as usize])
                    .filter(|&(_, p, _)| c.selects(&snap.pod(p).labels))
                    .collect(),
                None => pods
                    .iter()
                    .copied()
                    .filter(|&(_, p, _)| c.selects(&snap.pod(p).labels))
                    .collect(),
            };
            self.balance_constraint(cx, &selected, c, &domains, &mut evictable, chosen);
        }
    }

    /// Balances one constraint over `pods`, the namespace's counted pods it selects, in the
    /// constraint's domains over the planning nodes.
    fn balance_constraint<'s>(
        &self,
        cx: &Context<'_, 's>,
        pods: &[Counted],
        c: &Constraint<'_>,
        node_domains: &TopologyDomains<'s>,
        evictable: &mut FxHashMap<PodId, bool>,
        chosen: &mut Chosen,
    ) {
        let snap: &'s ClusterSnapshot = cx.snap();
        let domains = node_domains.group(pods.iter().map(|&(_, p, n)| (n, p)));
        let counts: Vec<u32> = domains.iter().map(|d| d.len() as u32).collect();
        let sum: usize = domains.iter().map(Vec::len).sum();
        let (min, max) = counts.iter().fold((usize::MAX, 0), |(lo, hi), &n| {
            (lo.min(n as usize), hi.max(n as usize))
        });
        let domain_count = counts.len();
        if domain_count < 2 || (max - min) as i64 <= c.max_skew as i64 {
            return;
        }
        tracing::debug!(
            namespace = %c.inclusion.pod.namespace,
            topology_key = c.topology_key,
            max_skew = c.max_skew,
            domains = domain_count,
            largest = max,
            smallest = min,
            "topology spread constraint is violated"
        );

        let mut is_evictable = |p: PodId| -> bool {
            *evictable
                .entry(p)
                .or_insert_with(|| self.may_evict(cx, p).is_ok())
        };
        let ideal_avg = sum as f64 / domain_count as f64;
        let mut sorted = sort_domains(cx, domains, node_domains.values(), &mut is_evictable);
        // The nodes of the domains below the ideal average (a domain's size before balancing
        // is its count), where moved pods should land.
        let below: Vec<bool> = counts.iter().map(|&n| (n as f64) < ideal_avg).collect();
        let nodes_below: Vec<NodeId> = node_domains.nodes_where(|d| below[d as usize]).collect();
        let mut fit_cache: FxHashMap<PodId, bool> = FxHashMap::default();
        let mut fits = |p: PodId| -> bool {
            *fit_cache.entry(p).or_insert_with(|| {
                let pod = snap.pod(p);
                let current = snap.pod_node(p);
                nodes_below.iter().any(|&n| {
                    Some(n) != current && sim::node_fits(pod, snap.node(n), cx.requested(n)).is_ok()
                })
            })
        };

        let key = c.topology_key;
        let max_skew = c.max_skew as f64;
        let mut i = 0usize;
        let mut j = sorted.len() - 1;
        while i < j {
            // j has nothing more to give without falling below the average: next one down.
            if sorted[j].pods.len() as f64 <= ideal_avg {
                j -= 1;
            }
            let (len_i, len_j) = (sorted[i].pods.len(), sorted[j].pods.len());
            let skew = len_j as f64 - len_i as f64;
            if skew <= max_skew {
                i += 1;
                continue;
            }
            // At most half the excess skew, without taking j below the average or filling i
            // above it.
            let above_avg = (len_j as f64 - ideal_avg).ceil();
            let below_avg = (ideal_avg - len_i as f64).ceil();
            let half_skew = ((skew - max_skew) / 2.0).ceil();
            let move_pods = above_avg.min(below_avg).min(half_skew);
            if move_pods <= 0.0 {
                i += 1;
                continue;
            }
            let move_pods = move_pods as usize;
            // Prefer moving pods that may be evicted and fit a below-average node.
            sorted[j]
                .pods
                .sort_by_cached_key(|&p| is_evictable(p) && fits(p));
            let keep = len_j - move_pods;
            let moved: Vec<PodId> = sorted[j].pods.split_off(keep);
            // the back of the list is the most evictable: it goes first
            for &p in moved.iter().rev() {
                if !is_evictable(p) {
                    // counted as moved so the balancing completes, but never evicted
                    continue;
                }
                if self.topology_balance_node_fit && !fits(p) {
                    tracing::debug!(
                        pod = %snap.pod(p).key(),
                        "not choosing the pod: it fits no node of a domain below the ideal average"
                    );
                    continue;
                }
                if chosen.seen.insert(p) {
                    let reason = format!(
                        "topology spread: {key}={} has {len_j} matching pods, {key}={} has {len_i}, maxSkew {}",
                        sorted[j].value, sorted[i].value, c.max_skew
                    );
                    chosen.pods.push((p, reason));
                }
            }
            sorted[i].pods.extend(moved);
        }
    }

    fn evict(&self, cx: &mut Context<'_, '_>, chosen: Chosen) {
        let snap = cx.snap();
        let mut node_full: FxHashSet<NodeId> = FxHashSet::default();
        for (p, reason) in chosen.pods {
            let pod = snap.pod(p);
            let Some(node) = snap.pod_node(p) else {
                continue;
            };
            if node_full.contains(&node) {
                continue;
            }
            if let Err(why) = self.may_evict(cx, p) {
                tracing::debug!(pod = %pod.key(), reason = %why, "pod is not evictable");
                continue;
            }
            match cx.try_evict_checked(p, reason) {
                Attempt::SkipNode => {
                    node_full.insert(node);
                }
                Attempt::Stop => return,
                Attempt::Planned { .. } | Attempt::SkipPod => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
