//! The safety ledger of one cycle: which pods are planned (in order), which the API refused,
//! what each node requests after the plan, and what is spent of the limits per node, per
//! namespace and per cycle, of each disruption budget and of each gang's running members. It
//! holds counters, never a copy of the cluster.
//!
//! Every check that keeps a plan safe is here, and answers before anything is recorded:
//! [`Ledger::admit`] for one pod, [`Ledger::admit_whole_gang`] for a gang that goes whole.
//!
//! Gangs (`gangPolicy: SurplusOnly`): a running member may be planned only while the gang
//! keeps at least minMember running members without it, checked at the moment each eviction
//! is planned, so that no two plugins of a cycle can together break a gang.

use super::budgets::Budgets;
use super::{EvictError, Limits, PlannedEviction};
use crate::snapshot::{ClusterSnapshot, GangId, IdVec, NodeId, PodId, Resources};
use rustc_hash::FxHashMap;

/// What a cycle has planned and spent so far.
#[derive(Clone)]
pub struct Ledger<'s> {
    snap: &'s ClusterSnapshot,
    limits: Limits,
    planned: IdVec<PodId, bool>,
    /// Pods whose eviction the API refused in this cycle: never planned again.
    pinned: IdVec<PodId, bool>,
    requested: Vec<Resources>,
    pdb_left: Vec<i32>,
    /// Running members of each gang planned (or evicted earlier in the cycle).
    gang_planned: Vec<u32>,
    per_node: IdVec<NodeId, u32>,
    per_namespace: FxHashMap<&'s str, u32>,
    /// The policy's `evictionBudgets` that apply this cycle, and what is spent of each.
    budgets: Budgets<'s>,
    evictions: Vec<PlannedEviction>,
    /// What counts against the limit per cycle besides the plan: pods evicted earlier in the
    /// cycle, and evictions in the background in progress.
    spent_before: u32,
    /// Pods whose eviction in the background is in progress (upstream's
    /// `EvictionsInBackground`): counted against the limits, never planned.
    in_background: Vec<PodId>,
}

impl<'s> Ledger<'s> {
    /// Nothing planned, nothing spent.
    pub fn new(snap: &'s ClusterSnapshot, limits: Limits) -> Self {
        Ledger {
            snap,
            limits,
            planned: IdVec::filled(false, snap.pods.len()),
            pinned: IdVec::filled(false, snap.pods.len()),
            requested: snap
                .node_ids()
                .map(|n| snap.node_requested(n).clone())
                .collect(),
            pdb_left: snap.pdbs.iter().map(|p| p.disruptions_allowed).collect(),
            gang_planned: vec![0; snap.gangs.len()],
            per_node: IdVec::filled(0, snap.nodes.len()),
            per_namespace: FxHashMap::default(),
            budgets: Budgets::default(),
            // At most one eviction per pod: room for all up front, so a plan of tens of
            // thousands of evictions is never copied to a larger vector (capacity never used is
            // never touched, so it costs no memory).
            evictions: Vec::with_capacity(snap.pods.len()),
            spent_before: 0,
            in_background: Vec::new(),
        }
    }

    /// Plans within these `evictionBudgets` from now on.
    pub(super) fn set_budgets(&mut self, budgets: Budgets<'s>) {
        self.budgets = budgets;
    }

    /// Whether `pods`, planned together by `plugin` of `profile`, fit every eviction budget
    /// of the policy that applies now. Records nothing.
    pub(crate) fn admit_by_budgets(
        &self,
        pods: &[PodId],
        profile: &str,
        plugin: &str,
    ) -> Result<(), EvictError> {
        self.budgets.admit(self.snap, pods, profile, plugin)
    }

    /// Evictions counted against the limit per cycle: the plan's, the pods evicted earlier in
    /// the cycle and the evictions in the background in progress.
    fn spent_total(&self) -> usize {
        self.evictions.len() + self.spent_before as usize
    }

    /// Records a pod whose eviction in the background is in progress (upstream's
    /// `EvictionsInBackground`): it counts against the limits per node, per namespace and per
    /// cycle, as upstream counts its eviction requests, and is never planned; it stays on its
    /// node (it runs until whoever carries out the eviction is done). Returns false when the
    /// pod is bound to no node or recorded already (nothing recorded).
    pub(crate) fn record_in_background(&mut self, pod: PodId) -> bool {
        let Some(node) = self.snap.pod_node(pod) else {
            return false;
        };
        if self.in_background.contains(&pod) || self.is_planned(pod) {
            return false;
        }
        self.in_background.push(pod);
        self.per_node[node] += 1;
        *self
            .per_namespace
            .entry(&self.snap.pod(pod).namespace)
            .or_insert(0) += 1;
        self.spent_before += 1;
        true
    }

    /// Plans as if every PodDisruptionBudget that allows a disruption now allowed any number:
    /// what a plan over the next cycles may spend, each budget coming back once the pods
    /// evicted before are replaced and Ready. A budget that allows none now stays at none
    /// (no eviction of ours brings it back). Only for a trial plan on a copy of the state
    /// ([`crate::framework::Context::checkpoint`]); never for evictions carried out.
    pub(crate) fn look_past_disruption_budgets(&mut self) {
        for left in self.pdb_left.iter_mut().filter(|l| **l > 0) {
            *left = i32::MAX / 2;
        }
    }

    /// Whether a pod is planned for eviction (or was evicted earlier in the cycle).
    pub(crate) fn is_planned(&self, pod: PodId) -> bool {
        self.planned[pod]
    }

    /// Whether the API refused this pod's eviction earlier in the cycle.
    pub(crate) fn is_pinned(&self, pod: PodId) -> bool {
        self.pinned[pod]
    }

    /// Marks a pod whose eviction was refused: it is never admitted again this cycle.
    pub fn pin(&mut self, pod: PodId) {
        self.pinned[pod] = true;
    }

    /// What the node's active pods request after the evictions planned so far; `pods` counts
    /// them.
    pub fn requested(&self, node: NodeId) -> &Resources {
        &self.requested[node.index()]
    }

    /// The evictions planned so far, in order.
    pub fn evictions(&self) -> &[PlannedEviction] {
        &self.evictions
    }

    /// Running members a gang has left after the evictions planned so far.
    pub(crate) fn gang_running(&self, gang: GangId) -> u32 {
        self.snap
            .gang(gang)
            .running
            .saturating_sub(self.gang_planned[gang as usize])
    }

    /// Evictions planned so far on a node.
    #[cfg(test)]
    pub(crate) fn evicted_from_node(&self, node: NodeId) -> u32 {
        self.per_node[node]
    }

    /// Whether one more eviction, of `pod`, is allowed: [`Ledger::admit_by_limits`] and
    /// [`Ledger::admit_by_gangs`]. Returns the pod's node. Records nothing.
    pub fn admit(&self, pod: PodId) -> Result<NodeId, EvictError> {
        let node = self.admit_by_limits(pod)?;
        self.admit_by_gangs(pod)?;
        Ok(node)
    }

    /// Whether the pod may be planned as far as the limits and its disruption budget go: not
    /// planned or refused already, bound to a node, within the limits per cycle, per node and
    /// per namespace, and covered by at most one budget that allows one more disruption.
    /// Returns the pod's node.
    pub(crate) fn admit_by_limits(&self, pod: PodId) -> Result<NodeId, EvictError> {
        let node = self.admit_surge(pod)?;
        let p = self.snap.pod(pod);
        let pdbs = self.snap.pdbs_of_pod(pod);
        if pdbs.len() > 1 {
            let names: Vec<String> = pdbs
                .iter()
                .map(|&i| self.snap.pdbs[i as usize].name.to_string())
                .collect();
            return Err(EvictError::MultipleBudgets(names.join(", ")));
        }
        if let Some(&i) = pdbs.first() {
            if self.pdb_left[i as usize] <= 0 {
                return Err(EvictError::DisruptionBudget(format!(
                    "{}/{}",
                    p.namespace, self.snap.pdbs[i as usize].name
                )));
            }
        }
        Ok(node)
    }

    /// Whether the pod may be moved by a surge of its Deployment as far as the limits go: as
    /// [`Ledger::admit_by_limits`], but its disruption budgets are not asked (a surge keeps
    /// every ready replica). Returns the pod's node.
    pub(crate) fn admit_surge(&self, pod: PodId) -> Result<NodeId, EvictError> {
        if self.is_planned(pod) {
            return Err(EvictError::AlreadyPlanned);
        }
        if self.is_pinned(pod) {
            return Err(EvictError::Refused);
        }
        if self.in_background.contains(&pod) {
            return Err(EvictError::InBackground);
        }
        let node = self.snap.pod_node(pod).ok_or(EvictError::NotOnNode)?;
        let p = self.snap.pod(pod);
        if let Some(t) = self.limits.total {
            if self.spent_total() as u32 >= t {
                return Err(EvictError::TotalLimit(t));
            }
        }
        if let Some(n) = self.limits.per_node {
            if self.per_node[node] >= n {
                return Err(EvictError::NodeLimit(n));
            }
        }
        if let Some(n) = self.limits.per_namespace {
            if self.per_namespace.get(&*p.namespace).copied().unwrap_or(0) >= n {
                return Err(EvictError::NamespaceLimit(n));
            }
        }
        Ok(node)
    }

    /// Whether the gangs of a pod allow planning it alone (`gangPolicy: SurplusOnly`): a
    /// running member may go only while its gang keeps at least minMember running members
    /// without it; a member of a gang whose PodGroup is not in the snapshot never goes (its
    /// minMember is unknown). Evicting a member that does not run (pending, finished) takes
    /// nothing away.
    pub(crate) fn admit_by_gangs(&self, pod: PodId) -> Result<(), EvictError> {
        let snap = self.snap;
        let gangs = snap.gangs_of_pod(pod);
        if gangs.is_empty() {
            return Ok(());
        }
        for &g in gangs {
            let gang = snap.gang(g);
            let Some(min) = gang.min_member else {
                return Err(unknown_gang(snap, g));
            };
            if !snap.counts_as_running(pod) {
                continue;
            }
            let running = self.gang_running(g);
            if i64::from(running) - 1 < i64::from(min) {
                return Err(EvictError::GangMinMember(format!(
                    "evicting the pod would leave gang {} with {} running members, below its minMember {min} ({running} running now)",
                    gang.describe(),
                    running.saturating_sub(1),
                )));
            }
        }
        Ok(())
    }

    /// The pods a whole-gang eviction of `pod` takes (`gangPolicy: WholeGang`): `pod` first,
    /// then every other member of its gangs that is bound to a node and neither finished nor
    /// terminating, in id order. Just `pod` when it is in no gang.
    pub(crate) fn gang_members(&self, pod: PodId) -> Vec<PodId> {
        let snap = self.snap;
        let mut others: Vec<PodId> = snap
            .gangs_of_pod(pod)
            .iter()
            .flat_map(|&g| snap.gang(g).members.iter().copied())
            .filter(|&m| {
                let p = snap.pod(m);
                m != pod && snap.pod_node(m).is_some() && p.is_active() && !p.terminating
            })
            .collect();
        others.sort_unstable();
        others.dedup();
        let mut members = vec![pod];
        members.extend(others);
        members
    }

    /// Whether the members of a whole gang are all still free to go, before any limit is
    /// looked at: none planned already (by another profile) and none refused by the API
    /// earlier in the cycle (the rest of a gang is never attempted after a refusal).
    pub(crate) fn admit_gang_members(&self, members: &[PodId]) -> Result<(), EvictError> {
        let Some((&first, others)) = members.split_first() else {
            return Ok(());
        };
        if self.is_planned(first) {
            return Err(EvictError::AlreadyPlanned);
        }
        let gang = self.gang_description(first);
        let rule = self.snap.whole_rule(first);
        for &m in members {
            if self.is_pinned(m) {
                let key = self.snap.pod(m).key();
                return Err(EvictError::WholeGang(format!(
                    "the API refused to evict {key}, a member of gang {gang}, earlier in this cycle: no other member is attempted ({rule})"
                )));
            }
        }
        for &m in others {
            if self.is_planned(m) {
                return Err(EvictError::WholeGang(format!(
                    "{}, a member of gang {gang}, is planned or evicted already, so the gang cannot go whole ({rule})",
                    self.snap.pod(m).key()
                )));
            }
        }
        Ok(())
    }

    /// The gangs of a pod, described for reasons (`PodGroup ns/name (group)`).
    pub(crate) fn gang_description(&self, pod: PodId) -> String {
        self.snap
            .gangs_of_pod(pod)
            .iter()
            .map(|&g| self.snap.gang(g).describe())
            .collect::<Vec<_>>()
            .join(" and ")
    }

    /// Whether a whole gang may go at once (`gangPolicy: WholeGang`), as far as the ledger
    /// goes: `members` as [`Ledger::gang_members`] gives them are free to go
    /// ([`Ledger::admit_gang_members`]), their gangs are known, each member passes
    /// [`Ledger::admit_by_limits`] alone, and the limits and each budget allow all of them
    /// together (no minMember check, since the whole gang goes). Returns each member's node.
    pub(crate) fn admit_whole_gang(&self, members: &[PodId]) -> Result<Vec<NodeId>, EvictError> {
        let snap = self.snap;
        let Some(&first) = members.first() else {
            return Ok(Vec::new());
        };
        self.admit_gang_members(members)?;
        let gang_name = self.gang_description(first);
        let rule = snap.whole_rule(first);
        for &g in snap.gangs_of_pod(first) {
            if snap.gang(g).min_member.is_none() {
                return Err(unknown_gang(snap, g));
            }
        }
        let whole = |m: PodId, e: EvictError| {
            EvictError::WholeGang(format!(
                "gang {gang_name} goes whole or not at all ({rule}), and its member {} cannot go: {e}",
                snap.pod(m).key()
            ))
        };
        // Every member alone, then all of them together.
        let mut nodes = Vec::with_capacity(members.len());
        for &m in members {
            match self.admit_by_limits(m) {
                Ok(n) => nodes.push(n),
                Err(e) if m == first => return Err(e),
                Err(e) => return Err(whole(m, e)),
            }
        }
        if let Some(t) = self.limits.total {
            if self.spent_total() + members.len() > t as usize {
                return Err(EvictError::WholeGang(format!(
                    "gang {gang_name} has {} members to evict together ({rule}), more than the {} the limit of {t} evictions per cycle leaves",
                    members.len(),
                    (t as usize).saturating_sub(self.spent_total())
                )));
            }
        }
        let mut on_node: FxHashMap<NodeId, u32> = FxHashMap::default();
        let mut in_namespace: FxHashMap<&str, u32> = FxHashMap::default();
        let mut of_budget: FxHashMap<u32, i32> = FxHashMap::default();
        for (&m, &n) in members.iter().zip(&nodes) {
            *on_node.entry(n).or_default() += 1;
            *in_namespace.entry(&snap.pod(m).namespace).or_default() += 1;
            if let Some(&b) = snap.pdbs_of_pod(m).first() {
                *of_budget.entry(b).or_default() += 1;
            }
        }
        if let Some(limit) = self.limits.per_node {
            for (&n, &count) in &on_node {
                if self.per_node[n] + count > limit {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} has {count} members to evict together on node {} ({rule}), over the limit of {limit} evictions per node",
                        snap.node(n).name
                    )));
                }
            }
        }
        if let Some(limit) = self.limits.per_namespace {
            for (&ns, &count) in &in_namespace {
                let spent = self.per_namespace.get(ns).copied().unwrap_or(0);
                if spent + count > limit {
                    return Err(EvictError::WholeGang(format!(
                        "gang {gang_name} has {count} members to evict together in namespace {ns} ({rule}), over the limit of {limit} evictions per namespace"
                    )));
                }
            }
        }
        for (&b, &count) in &of_budget {
            if self.pdb_left[b as usize] < count {
                let pdb = &snap.pdbs[b as usize];
                return Err(EvictError::WholeGang(format!(
                    "gang {gang_name} has {count} members under PodDisruptionBudget {}/{}, which allows {} more disruptions ({rule})",
                    pdb.namespace,
                    pdb.name,
                    self.pdb_left[b as usize].max(0)
                )));
            }
        }
        Ok(nodes)
    }

    /// Whether `pods` may all be planned, one after the other, as far as the ledger goes: each
    /// passes [`Ledger::admit`] as the ledger would stand once the ones before it are planned
    /// (the limits, each budget and each gang's minMember counted jointly). Records nothing.
    /// Returns the first pod refused, and why.
    pub fn admit_together(&self, pods: &[PodId]) -> Result<(), (PodId, EvictError)> {
        let snap = self.snap;
        let mut on_node: FxHashMap<NodeId, u32> = FxHashMap::default();
        let mut in_namespace: FxHashMap<&str, u32> = FxHashMap::default();
        let mut of_budget: FxHashMap<u32, i32> = FxHashMap::default();
        let mut of_gang: FxHashMap<GangId, u32> = FxHashMap::default();
        for (i, &p) in pods.iter().enumerate() {
            if pods[..i].contains(&p) {
                return Err((p, EvictError::AlreadyPlanned));
            }
            let node = self.admit(p).map_err(|e| (p, e))?;
            let pod = snap.pod(p);
            if let Some(t) = self.limits.total {
                if (self.spent_total() + i) as u32 >= t {
                    return Err((p, EvictError::TotalLimit(t)));
                }
            }
            let here = on_node.entry(node).or_default();
            if let Some(n) = self.limits.per_node {
                if self.per_node[node] + *here >= n {
                    return Err((p, EvictError::NodeLimit(n)));
                }
            }
            *here += 1;
            let ns = in_namespace.entry(&pod.namespace).or_default();
            if let Some(n) = self.limits.per_namespace {
                if self
                    .per_namespace
                    .get(&*pod.namespace)
                    .copied()
                    .unwrap_or(0)
                    + *ns
                    >= n
                {
                    return Err((p, EvictError::NamespaceLimit(n)));
                }
            }
            *ns += 1;
            if let Some(&b) = snap.pdbs_of_pod(p).first() {
                let spent = of_budget.entry(b).or_default();
                if self.pdb_left[b as usize] - *spent <= 0 {
                    return Err((
                        p,
                        EvictError::DisruptionBudget(format!(
                            "{}/{}",
                            pod.namespace, snap.pdbs[b as usize].name
                        )),
                    ));
                }
                *spent += 1;
            }
            if snap.counts_as_running(p) {
                for &g in snap.gangs_of_pod(p) {
                    let gang = snap.gang(g);
                    let spent = of_gang.entry(g).or_default();
                    let running = self.gang_running(g).saturating_sub(*spent);
                    if let Some(min) = gang.min_member {
                        if i64::from(running) - 1 < i64::from(min) {
                            return Err((
                                p,
                                EvictError::GangMinMember(format!(
                                    "evicting the pod with the others would leave gang {} with {} running members, below its minMember {min}",
                                    gang.describe(),
                                    running.saturating_sub(1),
                                )),
                            ));
                        }
                    }
                    *spent += 1;
                }
            }
        }
        Ok(())
    }

    /// Records a planned eviction (admitted first): the pod is gone, its requests are off its
    /// node, and it counts against the limits, its budget and its gangs.
    pub(super) fn record(&mut self, mut eviction: PlannedEviction) {
        let surge = eviction.mechanism != super::Mechanism::Evict;
        self.spend(eviction.pod, eviction.node, !surge);
        eviction.budgets =
            self.budgets
                .spend(self.snap, eviction.pod, &eviction.profile, eviction.plugin);
        self.evictions.push(eviction);
    }

    /// Records a pod evicted earlier in this cycle (when re-planning after a refusal): it is
    /// gone and counts like a planned one (against the eviction budgets of the profile and
    /// plugin that planned it, `by`), but it is not part of the new plan. Returns its node, or
    /// None when it is planned already or bound to no node (nothing recorded).
    pub(crate) fn record_evicted_earlier(
        &mut self,
        pod: PodId,
        by: Option<(&str, &str)>,
    ) -> Option<NodeId> {
        if self.is_planned(pod) {
            return None;
        }
        let node = self.snap.pod_node(pod)?;
        self.spend(pod, node, true);
        if let Some((profile, plugin)) = by {
            self.budgets.spend(self.snap, pod, profile, plugin);
        }
        self.spent_before += 1;
        Some(node)
    }

    /// Marks the pod gone from `node` and spends what its eviction spends (its disruption
    /// budget's only when `disrupts`: a surge spends none).
    fn spend(&mut self, pod: PodId, node: NodeId, disrupts: bool) {
        let snap = self.snap;
        let p = snap.pod(pod);
        self.planned[pod] = true;
        if p.is_active() {
            self.requested[node.index()].sub_pod(&p.requests);
        }
        self.per_node[node] += 1;
        *self.per_namespace.entry(&p.namespace).or_insert(0) += 1;
        if let Some(&i) = snap.pdbs_of_pod(pod).first().filter(|_| disrupts) {
            self.pdb_left[i as usize] -= 1;
        }
        if snap.counts_as_running(pod) {
            for &g in snap.gangs_of_pod(pod) {
                self.gang_planned[g as usize] += 1;
            }
        }
    }

    /// The evictions planned, and what each node requests after them.
    pub fn into_parts(self) -> (Vec<PlannedEviction>, Vec<Resources>) {
        (self.evictions, self.requested)
    }
}

/// A gang whose PodGroup the snapshot does not hold: its minMember is unknown.
fn unknown_gang(snap: &ClusterSnapshot, gang: GangId) -> EvictError {
    EvictError::GangUnknown(format!(
        "pod belongs to gang {}, which is not in the snapshot: its minMember is unknown, so no member of the gang is evicted",
        snap.gang(gang).describe()
    ))
}
