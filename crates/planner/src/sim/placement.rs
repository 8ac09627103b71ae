//! The placement simulator: kube-scheduler's Filter plugins over the snapshot as a plan leaves
//! it, and a pick among the nodes that pass. Placements are cumulative: once the simulator puts
//! a pod on a node, the next pod sees that node fuller (its requests, its pod count, its host
//! ports, its labels for inter-pod affinity and topology spread).
//!
//! Filters, in kube-scheduler's order and with its messages: NodeUnschedulable, NodeAffinity
//! (nodeSelector and required node affinity), NodePorts, NodeResourcesFit (requests against
//! allocatable minus what is placed, and the pod count), TaintToleration (NoSchedule and
//! NoExecute), InterPodAffinity (the pod's required affinity and anti-affinity, and the
//! existing pods' required anti-affinity: both directions), PodTopologySpread
//! (`DoNotSchedule` constraints, with minDomains, matchLabelKeys and the node inclusion
//! policies).
//!
//! As kube-scheduler, a search for a destination stops once it has found
//! [`feasible_nodes_to_find`] feasible nodes (all of them below 100 nodes; 10% of 5,000), and
//! the next search starts where the last one stopped.
//!
//! The pick among the nodes that pass ([`Simulation::predict`]) scores them as kube-scheduler's
//! score plugins do ([`super::score`]: every default plugin with its weight and normalisation,
//! or those of the profile given by `--scheduler-config`). kube-scheduler picks among the
//! nodes with the best score at random; the simulator takes the first by name and gives the
//! others as alternatives. With one feasible node there is nothing to score, as in
//! kube-scheduler.
//!
//! The pod being placed is the replacement of a pod the plan evicts: the simulator reads its
//! spec from that pod.
//!
//! **What kube-scheduler sees while pods terminate** ([`Termination`]). A real kubelet lets an
//! evicted pod stop for its grace period (the policy's `gracePeriodSeconds`, else the pod's
//! `terminationGracePeriodSeconds`, 30 s by default), and kube-scheduler keeps the pod on its
//! node until the pod object is gone. Its replacement is created at once and scheduled while
//! the evicted pod still terminates, so by default ([`Termination::GRACEFUL`]) an evicted pod
//! with a grace period is still there when replacements are scheduled: its requests count on
//! its node (NodeResourcesFit, the pod count, the resource scores), and so do its host ports
//! and its labels and terms for inter-pod affinity and anti-affinity; PodTopologySpread alone
//! leaves it out, as kube-scheduler's `countPodsMatchSelector` skips terminating pods. Its own
//! replacement sees it too: the room a pod leaves on its node is not there for its
//! replacement. Pods with grace period 0, and every pod under [`Termination::INSTANT`] (a
//! kubelet that deletes evicted pods at once), are gone when their replacements are scheduled.
//! Every eviction of a cycle is taken to happen within the shortest grace period, so the pods
//! a plan evicts are all still terminating while their replacements are scheduled. A pod
//! already terminating when the snapshot was read (an earlier cycle's eviction within its
//! grace period) is treated the same way from the start: kube-scheduler sees it, the cluster
//! once it is gone does not.
//!
//! The cluster once the evicted pods are gone (what [`Simulation::load`] says each node
//! requests, and where pending pods go: [`Simulation::schedule_settled`]) never counts them.
//! Replacements scheduled together (a whole gang, MakeRoomForPendingPods' moves) go in
//! kube-scheduler's queue order ([`queue_order`]): higher priority first, then the order they
//! were created in (the order of the evictions).

use super::domains::{Inclusion, TopologyDomains};
use super::score::{self, ClusterView, Ranking, ScoreProfile};
use super::{matches_node_selector, spread_selects, term_matches_pod, tolerated};
use crate::snapshot::{
    ClusterSnapshot, IdVec, Node, NodeId, Pod, PodAffinityTerm, PodId, Resources, Taint,
    TaintEffect, WhenUnsatisfiable,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// How kube-scheduler sees an evicted pod while its replacement is scheduled (see the module
/// docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Termination {
    /// Evicted pods with a grace period stay on their node while their replacements are
    /// scheduled (a real kubelet); false: every evicted pod is gone at once.
    pub graceful: bool,
    /// The grace period every eviction asks for (the policy's `gracePeriodSeconds`), which
    /// overrides each pod's `terminationGracePeriodSeconds`.
    pub grace_override: Option<i64>,
}

impl Termination {
    /// A real kubelet: each evicted pod stops within its grace period (the default).
    pub const GRACEFUL: Termination = Termination {
        graceful: true,
        grace_override: None,
    };
    /// A kubelet that deletes every evicted pod at once, whatever its grace period.
    pub const INSTANT: Termination = Termination {
        graceful: false,
        grace_override: None,
    };

    /// Whether an evicted `pod` is still on its node while replacements are scheduled.
    pub(crate) fn lingers(&self, pod: &Pod) -> bool {
        self.graceful && pod.is_active() && pod.grace_seconds(self.grace_override) > 0
    }
}

impl Default for Termination {
    fn default() -> Self {
        Termination::GRACEFUL
    }
}

/// Sorts pods whose replacements wait to be scheduled together into kube-scheduler's queue
/// order (its default `PrioritySort`): higher priority first, then the earlier created; the
/// replacements are created in the order of `pods` (the order of their evictions), which a
/// stable sort keeps among equal priorities.
pub fn queue_order(snap: &ClusterSnapshot, pods: &mut [PodId]) {
    pods.sort_by_key(|&p| std::cmp::Reverse(snap.pod(p).priority.unwrap_or(0)));
}

/// Each pod template's topology spread domains, by (controller uid, pod when it has no
/// controller, constraint).
type SpreadDomains<'s> = FxHashMap<(Option<&'s str>, PodId, usize), Arc<TopologyDomains<'s>>>;

/// The pods a topology spread selector picks in a namespace (not terminating, sorted), by
/// (namespace, the selector and its matchLabelKeys values written out): the same for every
/// pod of a template, and computed once per plan instead of walking the namespace for every
/// placement.
type SelectedPods<'s> = FxHashMap<(&'s str, String), Arc<[PodId]>>;

/// The pods of a large namespace by label (key and value), in id order: a selector with an
/// equality requirement is matched against the pods carrying its rarest pair instead of the
/// whole namespace ([`Simulation::selected_pods`]). Built once per plan and namespace.
type LabelIndex<'s> = FxHashMap<&'s str, Arc<FxHashMap<(&'s str, &'s str), Vec<PodId>>>>;

/// The namespace size from which a selector's pods are found through the label index: below
/// it, walking the namespace costs less than building the index.
const INDEXED_NAMESPACE: usize = 2048;

/// The taint kube-scheduler's NodeUnschedulable filter lets a pod tolerate.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// What a pod counts for in scoring: its cpu and memory requests, with kube-scheduler's
/// defaults (100m, 200Mi) for what it does not request.
fn non_zero(pod: &Pod) -> (i64, i64) {
    let r = &pod.requests;
    (
        if r.cpu == 0 {
            score::DEFAULT_MILLI_CPU_REQUEST
        } else {
            r.cpu
        },
        if r.memory == 0 {
            score::DEFAULT_MEMORY_REQUEST
        } else {
            r.memory
        },
    )
}

/// Whether a pod has any pod affinity or anti-affinity term (required or preferred).
fn has_pod_affinity(pod: &Pod) -> bool {
    pod.affinity.as_ref().is_some_and(|a| {
        !a.pod_affinity_required.is_empty()
            || !a.pod_affinity_preferred.is_empty()
            || !a.pod_anti_affinity_required.is_empty()
            || !a.pod_anti_affinity_preferred.is_empty()
    })
}

/// The cluster as a plan leaves it: pods gone, replacements placed, what each node requests.
#[derive(Debug, Clone)]
pub struct Simulation<'s> {
    snap: &'s ClusterSnapshot,
    gone: IdVec<PodId, bool>,
    /// Replacements placed on each node, by the id of the pod they replace.
    placed: IdVec<NodeId, Vec<PodId>>,
    /// What each node's pods request, placements included (`pods` counts them).
    load: IdVec<NodeId, Resources>,
    /// Each node's cpu and memory requests as scoring counts them ([`non_zero`]).
    non_zero: IdVec<NodeId, (i64, i64)>,
    /// The score plugins and their weights.
    profile: Arc<ScoreProfile>,
    /// How evicted pods terminate.
    termination: Termination,
    /// Evicted pods still terminating on their node while replacements are scheduled, and
    /// how many they are.
    lingering: IdVec<PodId, bool>,
    lingering_count: usize,
    /// What the lingering pods request on each node (`pods` counts them), and their cpu and
    /// memory as scoring counts them.
    linger_load: IdVec<NodeId, Resources>,
    linger_non_zero: IdVec<NodeId, (i64, i64)>,
    /// Whether the filters and scores see the lingering pods (false while a pending pod is
    /// placed: kube-scheduler places it once they are gone).
    see_lingering: Flag,
    /// Whether the pod being placed is a surge's new pod, placed while the pod it replaces
    /// still runs ([`Simulation::surge`]): that pod counts as any other then.
    beside: Flag,
    /// Every placement, by pod: where a pod's replacements were put (a surge's new pod beside
    /// the pod itself).
    placed_of: FxHashMap<PodId, Vec<NodeId>>,
    /// The placements of pods with required pod anti-affinity.
    placed_anti: Vec<(PodId, NodeId)>,
    /// The placements of pods with any pod (anti-)affinity term.
    placed_affinity: Vec<(PodId, NodeId)>,
    /// Where the next search for a destination starts (kube-scheduler's
    /// `nextStartNodeIndex`).
    next_start: usize,
    /// Each pod template's topology spread domains (the nodes counted for each DoNotSchedule
    /// constraint, by their value of its key).
    domains: Cache<SpreadDomains<'s>>,
    /// The pods each topology spread selector picks ([`SelectedPods`]).
    selected: Cache<SelectedPods<'s>>,
    /// Large namespaces' pods by label ([`LabelIndex`]).
    labelled: Cache<LabelIndex<'s>>,
    /// The snapshot's bound pods with required pod anti-affinity (the only ones that can
    /// refuse an incoming pod).
    anti_holders: Vec<PodId>,
    /// The snapshot's bound pods with any pod (anti-)affinity term (the only ones that score
    /// an incoming pod without terms of its own).
    affinity_holders: Vec<PodId>,
    /// How many nodes have each image (by each of its names), for ImageLocality: node images
    /// do not change while a cycle is planned.
    image_nodes: Arc<FxHashMap<&'s str, usize>>,
    /// The last node picked ([`Simulation::pick`]) and for what, until the simulation
    /// changes: a planned eviction's destination is predicted by the evictor's check, then
    /// again when its replacement is placed, on the same state (the pod itself aside).
    last_pick: Cache<Option<PickMemo>>,
}

/// A [`Simulation::pick`] result with what it was picked for.
#[derive(Debug, Clone)]
struct PickMemo {
    pod: PodId,
    nodes: (usize, usize),
    next_start: usize,
    see_lingering: bool,
    picked: (Ranking, usize),
}

/// Where the simulator predicts a replacement lands: the node and the others kube-scheduler
/// is as likely to pick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// The node the scheduler would pick.
    pub node: NodeId,
    /// The other feasible nodes with the same final score (kube-scheduler picks among them
    /// at random), sorted by name.
    pub alternatives: Vec<NodeId>,
}

/// Why the simulator found no node for a pod: each node and the first filter it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoFit {
    /// Each node considered, with the first filter it failed.
    pub nodes: Vec<(NodeId, String)>,
}

impl std::fmt::Display for NoFit {
    /// As kube-scheduler's FitError: `0/3 nodes are available: 1 Insufficient cpu, 2 ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for (_, r) in &self.nodes {
            *counts.entry(r.as_str()).or_default() += 1;
        }
        write!(f, "0/{} nodes are available", self.nodes.len())?;
        let mut first = true;
        for (reason, n) in counts {
            write!(f, "{} {n} {reason}", if first { ":" } else { "," })?;
            first = false;
        }
        Ok(())
    }
}

/// How many feasible nodes kube-scheduler looks for before it scores (its
/// `numFeasibleNodesToFind` with the default `percentageOfNodesToScore`): every node below 100
/// nodes, else 50% minus 1% per 125 nodes, at least 5% and at least 100 nodes.
pub(crate) fn feasible_nodes_to_find(all: usize) -> usize {
    if all < 100 {
        return all;
    }
    let percentage = (50 - all as i64 / 125).max(5);
    ((all as i64 * percentage / 100) as usize).max(100)
}

/// What one pod's filters need from the whole cluster, computed once per pod and reused for
/// every node.
struct PodScope<'p> {
    pod: &'p Pod,
    /// Topology pairs where an existing pod's required anti-affinity matches the pod.
    existing_anti: FxHashSet<(&'p str, &'p str)>,
    /// For each required affinity term of the pod, the topology values holding a match.
    affinity: Vec<FxHashSet<&'p str>>,
    /// Whether any existing pod matches any affinity term of the pod.
    affinity_any: bool,
    /// For each required anti-affinity term of the pod, the topology values holding a match.
    anti: Vec<FxHashSet<&'p str>>,
    /// Per DoNotSchedule spread constraint: (max skew, self match, domains, counts, min).
    spread: Vec<Spread<'p>>,
}

struct Spread<'p> {
    max_skew: i64,
    self_match: i64,
    /// The domains of the constraint's key over the nodes counted.
    domains: Arc<TopologyDomains<'p>>,
    /// The matching pods in each domain.
    counts: Vec<u32>,
    min: i64,
}

/// A cache filled while the simulation is read (behind a lock, so the simulation can be read
/// from several threads); cloned with what it holds.
#[derive(Debug, Default)]
struct Cache<T>(std::sync::Mutex<T>);

/// A boolean a prediction may turn off for its own duration ([`Simulation::predict_settled`]).
#[derive(Debug)]
struct Flag(std::sync::atomic::AtomicBool);

impl Flag {
    fn new(v: bool) -> Self {
        Flag(std::sync::atomic::AtomicBool::new(v))
    }
    fn get(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn set(&self, v: bool) {
        self.0.store(v, std::sync::atomic::Ordering::Relaxed)
    }
}

impl Clone for Flag {
    fn clone(&self) -> Self {
        Flag::new(self.get())
    }
}

impl<T> Cache<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Clone> Clone for Cache<T> {
    fn clone(&self) -> Self {
        Cache(std::sync::Mutex::new(self.lock().clone()))
    }
}

impl<'s> Simulation<'s> {
    /// A simulation of the snapshot as it is, scored as kube-scheduler's default profile does.
    pub fn new(snap: &'s ClusterSnapshot) -> Self {
        Self::with_profile(snap, Arc::new(ScoreProfile::default()))
    }

    /// The simulation scoring with a scheduler profile's plugins and weights.
    pub fn with_profile(snap: &'s ClusterSnapshot, profile: Arc<ScoreProfile>) -> Self {
        let mut non_zero_load = vec![(0i64, 0i64); snap.nodes.len()];
        for (n, load) in non_zero_load.iter_mut().enumerate() {
            for &p in snap.pods_on_node(NodeId::from_index(n)) {
                let pod = snap.pod(p);
                if pod.is_active() {
                    let (c, m) = non_zero(pod);
                    load.0 += c;
                    load.1 += m;
                }
            }
        }
        let mut sim = Simulation {
            snap,
            gone: IdVec::filled(false, snap.pods.len()),
            placed: IdVec::filled(Vec::new(), snap.nodes.len()),
            load: snap
                .node_ids()
                .map(|n| snap.node_requested(n).clone())
                .collect(),
            non_zero: non_zero_load.into(),
            profile,
            termination: Termination::default(),
            lingering: IdVec::filled(false, snap.pods.len()),
            lingering_count: 0,
            linger_load: IdVec::filled(Resources::default(), snap.nodes.len()),
            linger_non_zero: IdVec::filled((0, 0), snap.nodes.len()),
            see_lingering: Flag::new(true),
            beside: Flag::new(false),
            placed_of: FxHashMap::default(),
            placed_anti: Vec::new(),
            placed_affinity: Vec::new(),
            next_start: 0,
            domains: Default::default(),
            selected: Default::default(),
            labelled: Default::default(),
            anti_holders: snap
                .pod_ids()
                .filter(|&p| {
                    snap.pod_node(p).is_some()
                        && snap
                            .pod(p)
                            .affinity
                            .as_ref()
                            .is_some_and(|a| !a.pod_anti_affinity_required.is_empty())
                })
                .collect(),
            affinity_holders: snap
                .pod_ids()
                .filter(|&p| snap.pod_node(p).is_some() && has_pod_affinity(snap.pod(p)))
                .collect(),
            image_nodes: {
                let mut counts: FxHashMap<&'s str, usize> = FxHashMap::default();
                for node in &snap.nodes {
                    // sorted by name: a name listed twice counts the node once
                    let mut last: Option<&str> = None;
                    for (name, _) in node.images.iter() {
                        if last != Some(&**name) {
                            *counts.entry(&**name).or_insert(0) += 1;
                        }
                        last = Some(&**name);
                    }
                }
                Arc::new(counts)
            },
            last_pick: Default::default(),
        };
        // A pod already terminating when the snapshot was read (evicted or deleted earlier,
        // within its grace period) is on its way out: kube-scheduler still sees it while it
        // schedules, the cluster once it is gone does not.
        for (i, pod) in snap.pods.iter().enumerate() {
            if pod.terminating && pod.is_active() {
                if let Some(n) = snap.pod_node(PodId::from_index(i)) {
                    sim.linger(PodId::from_index(i), n);
                }
            }
        }
        sim
    }

    /// Takes an active pod on `node` out of the settled cluster and keeps it in
    /// kube-scheduler's view until it is gone ([`Simulation::terminated`]).
    fn linger(&mut self, pod: PodId, node: NodeId) {
        let p = self.snap.pod(pod);
        let (c, m) = non_zero(p);
        let (n, i) = (node, pod);
        self.gone[i] = true;
        self.load[n].sub_pod(&p.requests);
        self.non_zero[n].0 -= c;
        self.non_zero[n].1 -= m;
        self.lingering[i] = true;
        self.lingering_count += 1;
        self.linger_load[n].add_pod(&p.requests);
        self.linger_non_zero[n].0 += c;
        self.linger_non_zero[n].1 += m;
    }

    /// The state changed: the last pick no longer holds.
    fn forget_pick(&mut self) {
        *self.last_pick.lock() = None;
    }

    /// The score profile the simulation picks nodes with.
    pub fn profile(&self) -> &ScoreProfile {
        &self.profile
    }

    /// Sets how evicted pods terminate ([`Termination`]). Call before anything is removed.
    pub(crate) fn set_termination(&mut self, termination: Termination) {
        self.forget_pick();
        self.termination = termination;
    }

    /// How evicted pods terminate while their replacements are scheduled.
    pub fn termination(&self) -> Termination {
        self.termination
    }

    /// Where a snapshot pod is as the plan leaves it: its node, unless it is gone or done.
    /// (Topology spread counts these: a terminating pod counts nowhere.)
    fn present(&self, pod: PodId) -> Option<NodeId> {
        if self.gone[pod] || !self.snap.pod(pod).is_active() {
            return None;
        }
        self.snap.pod_node(pod)
    }

    /// The pod where the plan leaves it, with its node: on its own node while present, and
    /// wherever its replacements were placed.
    fn where_the_plan_leaves(&self, pod: PodId) -> impl Iterator<Item = (PodId, NodeId)> + '_ {
        self.present(pod)
            .into_iter()
            .chain(self.placed_of.get(&pod).into_iter().flatten().copied())
            .map(move |n| (pod, n))
    }

    /// Whether kube-scheduler sees the snapshot pod `pod` on its node while it schedules the
    /// replacement of (or the pending pod) `subject`: present, or evicted and still
    /// terminating. `subject` itself counts only where it lingers once evicted.
    fn seen(&self, pod: PodId, subject: PodId) -> bool {
        let i = pod;
        if !self.snap.pod(pod).is_active() {
            return false;
        }
        let lingering = self.see_lingering.get() && (self.lingering[i] || !self.gone[i]);
        if pod == subject {
            if self.beside.get() {
                return !self.gone[i];
            }
            return lingering && self.termination.lingers(self.snap.pod(pod));
        }
        !self.gone[i] || (self.see_lingering.get() && self.lingering[i])
    }

    /// [`Simulation::present`] as kube-scheduler sees it while it schedules `subject`
    /// ([`Simulation::seen`]).
    fn seen_at(&self, pod: PodId, subject: PodId) -> Option<NodeId> {
        self.seen(pod, subject)
            .then(|| self.snap.pod_node(pod))
            .flatten()
    }

    /// The cluster snapshot being simulated.
    pub fn snap(&self) -> &'s ClusterSnapshot {
        self.snap
    }

    /// Takes a pod off its node (its eviction is planned). With a grace period
    /// ([`Termination::lingers`]) it stays in kube-scheduler's view until
    /// [`Simulation::settle`].
    pub fn remove(&mut self, pod: PodId) {
        if std::mem::replace(&mut self.gone[pod], true) {
            return;
        }
        // A pick for this very pod holds: its replacement sees it as it will be now.
        if self.last_pick.lock().as_ref().is_some_and(|m| m.pod != pod) {
            self.forget_pick();
        }
        let p = self.snap.pod(pod);
        if let Some(n) = self.snap.pod_node(pod) {
            if p.is_active() {
                if self.termination.lingers(p) {
                    self.linger(pod, n);
                } else {
                    let (c, m) = non_zero(p);
                    self.load[n].sub_pod(&p.requests);
                    self.non_zero[n].0 -= c;
                    self.non_zero[n].1 -= m;
                }
            }
        }
    }

    /// Whether an evicted pod still terminates on its node in kube-scheduler's view.
    pub fn is_lingering(&self, pod: PodId) -> bool {
        self.lingering[pod]
    }

    /// An evicted pod is gone: it no longer terminates on its node in kube-scheduler's view.
    pub fn terminated(&mut self, pod: PodId) {
        if !std::mem::replace(&mut self.lingering[pod], false) {
            return;
        }
        self.forget_pick();
        self.lingering_count -= 1;
        let p = self.snap.pod(pod);
        if let Some(n) = self.snap.pod_node(pod) {
            let (c, m) = non_zero(p);
            self.linger_load[n].sub_pod(&p.requests);
            self.linger_non_zero[n].0 -= c;
            self.linger_non_zero[n].1 -= m;
        }
    }

    /// Whether any evicted pod still terminates in kube-scheduler's view.
    pub(crate) fn any_lingering(&self) -> bool {
        self.lingering_count > 0
    }

    /// The evicted pods are gone: every pod still terminating is taken out of
    /// kube-scheduler's view.
    pub fn settle(&mut self) {
        if self.lingering_count == 0 {
            return;
        }
        self.forget_pick();
        self.lingering_count = 0;
        self.lingering.iter_mut().for_each(|l| *l = false);
        self.linger_load
            .iter_mut()
            .for_each(|l| *l = Resources::default());
        self.linger_non_zero.iter_mut().for_each(|l| *l = (0, 0));
    }

    pub(crate) fn is_gone(&self, pod: PodId) -> bool {
        self.gone[pod]
    }

    /// Puts the replacement of `pod` on `node`.
    pub fn place(&mut self, pod: PodId, node: NodeId) {
        self.forget_pick();
        self.placed[node].push(pod);
        self.placed_of.entry(pod).or_default().push(node);
        if has_pod_affinity(self.snap.pod(pod)) {
            self.placed_affinity.push((pod, node));
        }
        if self
            .snap
            .pod(pod)
            .affinity
            .as_ref()
            .is_some_and(|a| !a.pod_anti_affinity_required.is_empty())
        {
            self.placed_anti.push((pod, node));
        }
        self.load[node].add_pod(&self.snap.pod(pod).requests);
        let (c, m) = non_zero(self.snap.pod(pod));
        self.non_zero[node].0 += c;
        self.non_zero[node].1 += m;
    }

    /// The replacements placed on a node so far.
    pub fn placed(&self, node: NodeId) -> &[PodId] {
        &self.placed[node]
    }

    /// What a node's pods request, placements included.
    pub fn load(&self, node: NodeId) -> &Resources {
        &self.load[node]
    }

    /// The pods on a node as the plan leaves it: the active pods not gone, then the
    /// replacements placed there.
    pub(crate) fn pods_on(&self, node: NodeId) -> impl Iterator<Item = PodId> + use<'_, 's> {
        self.snap
            .pods_on_node(node)
            .iter()
            .copied()
            .filter(move |&p| !self.gone[p] && self.snap.pod(p).is_active())
            .chain(self.placed[node].iter().copied())
    }

    /// The pods on a node as kube-scheduler sees them while it schedules `subject`
    /// ([`Simulation::seen`]), then the replacements placed there, without `subject`'s own.
    fn pods_seen_on(
        &self,
        node: NodeId,
        subject: PodId,
    ) -> impl Iterator<Item = PodId> + use<'_, 's> {
        self.snap
            .pods_on_node(node)
            .iter()
            .copied()
            .filter(move |&p| self.seen(p, subject))
            .chain(
                self.placed[node]
                    .iter()
                    .copied()
                    .filter(move |&p| p != subject),
            )
    }

    /// Whether the replacement of `pod` passes every filter on `node`. The pod itself is not
    /// counted where it is now.
    pub fn check(&self, pod: PodId, node: NodeId) -> Result<(), String> {
        let scope = self.scope(pod);
        self.filter(&scope, pod, node)
    }

    /// The nodes among `nodes` where the replacement of `pod` passes every filter, or why
    /// each fails.
    pub fn feasible(&self, pod: PodId, nodes: &[NodeId]) -> Result<Vec<NodeId>, NoFit> {
        self.search(pod, nodes, 0, usize::MAX).map(|(ok, _)| ok)
    }

    /// Some node among `nodes` where the replacement of `pod` passes every filter (the first
    /// in order), or why each fails: nodeFit's question, answered without checking them all.
    pub(crate) fn any_feasible(&self, pod: PodId, nodes: &[NodeId]) -> Result<NodeId, NoFit> {
        self.search(pod, nodes, 0, 1).map(|(ok, _)| ok[0])
    }

    /// Filters nodes from `start` on (wrapping around) until `want` pass; returns them and
    /// how many nodes were looked at, or, when none passes, why each failed.
    fn search(
        &self,
        pod: PodId,
        nodes: &[NodeId],
        start: usize,
        want: usize,
    ) -> Result<(Vec<NodeId>, usize), NoFit> {
        let scope = self.scope(pod);
        let mut ok = Vec::new();
        let mut why = Vec::new();
        let len = nodes.len();
        let mut processed = 0;
        for i in 0..len {
            let n = nodes[(start + i) % len];
            processed += 1;
            match self.filter(&scope, pod, n) {
                Ok(()) => {
                    ok.push(n);
                    if ok.len() >= want {
                        break;
                    }
                }
                Err(e) => why.push((n, e)),
            }
        }
        if ok.is_empty() {
            why.sort_by_key(|(n, _)| *n);
            Err(NoFit { nodes: why })
        } else {
            Ok((ok, processed))
        }
    }

    /// Where kube-scheduler would put the replacement of `pod` among `nodes`: as its
    /// scheduling cycle does, it filters nodes from where the previous placement stopped until
    /// it has found [`feasible_nodes_to_find`] of them, and takes the best score (see the
    /// module docs).
    pub fn destination(&self, pod: PodId, nodes: &[NodeId]) -> Result<NodeId, NoFit> {
        self.pick(pod, nodes).map(|(r, _)| r.best)
    }

    /// [`Simulation::destination`] with the alternatives: the other nodes with the same best
    /// score.
    pub fn predict(&self, pod: PodId, nodes: &[NodeId]) -> Result<Prediction, NoFit> {
        self.pick(pod, nodes).map(|(r, _)| Prediction {
            node: r.best,
            alternatives: r.alternatives,
        })
    }

    /// [`Simulation::predict`] once the evicted pods are gone: where the replacement of `pod`
    /// goes when it finds no node while they terminate (it waits in kube-scheduler's queue
    /// until the deletions free room, as [`Simulation::replace`] places it), its own node
    /// included once the pod itself is gone.
    pub(crate) fn predict_settled(
        &self,
        pod: PodId,
        nodes: &[NodeId],
    ) -> Result<Prediction, NoFit> {
        let was = self.see_lingering.get();
        self.see_lingering.set(false);
        let predicted = self.predict(pod, nodes);
        self.see_lingering.set(was);
        predicted
    }

    fn pick(&self, pod: PodId, nodes: &[NodeId]) -> Result<(Ranking, usize), NoFit> {
        let key = (nodes.as_ptr() as usize, nodes.len());
        let memo = self.last_pick.lock().clone().filter(|m| {
            m.pod == pod
                && m.nodes == key
                && m.next_start == self.next_start
                && m.see_lingering == self.see_lingering.get()
        });
        if let Some(m) = memo {
            // In tests, every reuse is checked against a fresh pick.
            debug_assert_eq!(
                Ok(&m.picked),
                self.pick_afresh(pod, nodes).as_ref(),
                "a remembered pick differs from a fresh one"
            );
            return Ok(m.picked);
        }
        let picked = self.pick_afresh(pod, nodes)?;
        *self.last_pick.lock() = Some(PickMemo {
            pod,
            nodes: key,
            next_start: self.next_start,
            see_lingering: self.see_lingering.get(),
            picked: picked.clone(),
        });
        Ok(picked)
    }

    fn pick_afresh(&self, pod: PodId, nodes: &[NodeId]) -> Result<(Ranking, usize), NoFit> {
        let start = if nodes.is_empty() {
            0
        } else {
            self.next_start % nodes.len()
        };
        let (feasible, processed) =
            self.search(pod, nodes, start, feasible_nodes_to_find(nodes.len()))?;
        if feasible.len() == 1 {
            // kube-scheduler does not score a single feasible node
            let ranking = Ranking {
                best: feasible[0],
                alternatives: Vec::new(),
                score: 0,
            };
            return Ok((ranking, processed));
        }
        let scores = score::total_scores(self, &self.profile, pod, &feasible);
        Ok((score::rank(self, &feasible, &scores), processed))
    }

    /// [`Simulation::destination`], then places the pod there (and, as kube-scheduler, starts
    /// the next search where this one stopped).
    pub fn schedule(&mut self, pod: PodId, nodes: &[NodeId]) -> Result<NodeId, NoFit> {
        self.schedule_predicted(pod, nodes).map(|p| p.node)
    }

    /// [`Simulation::schedule_predicted`] once the evicted pods are gone: where kube-scheduler
    /// puts a pod it places after they terminated (a pending pod, which waits in its queue
    /// until a deletion frees room). The pods still terminating stay so for later placements.
    pub(crate) fn schedule_settled(
        &mut self,
        pod: PodId,
        nodes: &[NodeId],
    ) -> Result<Prediction, NoFit> {
        self.see_lingering.set(false);
        let placed = self.schedule_predicted(pod, nodes);
        self.see_lingering.set(true);
        placed
    }

    /// Places the new pod of a surge (make before break) of `pod`'s Deployment while `pod`
    /// itself still runs on its node, as kube-scheduler sees the extra replica: `pod` counts
    /// for resources, scores, ports, inter-pod affinity and topology spread like any other
    /// running pod. Then takes `pod` off ([`Simulation::remove`]): it is deleted once the new
    /// pod is Ready, and terminates as an evicted pod does.
    pub fn surge(&mut self, pod: PodId, nodes: &[NodeId]) -> Result<Prediction, NoFit> {
        self.forget_pick();
        self.beside.set(true);
        let placed = self.schedule_predicted(pod, nodes);
        self.beside.set(false);
        self.forget_pick();
        self.remove(pod);
        placed
    }

    /// Evicts `pod` ([`Simulation::remove`]) and places its replacement where kube-scheduler
    /// would put it: while the evicted pods terminate or, when it finds no node then, once
    /// they are gone (it waits in kube-scheduler's queue until the deletions free room, and
    /// later replacements see them gone too: [`Simulation::settle`]).
    pub fn replace(&mut self, pod: PodId, nodes: &[NodeId]) -> Result<Prediction, NoFit> {
        self.remove(pod);
        match self.schedule_predicted(pod, nodes) {
            Err(_) if self.any_lingering() => {
                self.settle();
                self.schedule_predicted(pod, nodes)
            }
            placed => placed,
        }
    }

    /// [`Simulation::predict`], then places the pod on the predicted node.
    pub fn schedule_predicted(
        &mut self,
        pod: PodId,
        nodes: &[NodeId],
    ) -> Result<Prediction, NoFit> {
        let (r, processed) = self.pick(pod, nodes)?;
        self.next_start = self.next_start.wrapping_add(processed);
        self.place(pod, r.best);
        Ok(Prediction {
            node: r.best,
            alternatives: r.alternatives,
        })
    }

    /// Whether the pod is counted on the node now (in [`Simulation::load`], or terminating
    /// there in kube-scheduler's view) but not as its replacement sees it.
    fn counted_on(&self, pod: PodId, node: NodeId) -> bool {
        let i = pod;
        let p = self.snap.pod(pod);
        if self.snap.pod_node(pod) != Some(node) || !p.is_active() {
            return false;
        }
        let counted = !self.gone[i] || (self.see_lingering.get() && self.lingering[i]);
        counted && !self.seen(pod, pod)
    }

    fn ns_labels(&self, ns: &str) -> Option<&'s crate::labels::Labels> {
        self.snap.namespace(ns).map(|n| &n.labels)
    }

    fn scope(&self, id: PodId) -> PodScope<'s> {
        let snap = self.snap;
        let pod = snap.pod(id);
        let pod_ns_labels = self.ns_labels(&pod.namespace);
        let empty: &[PodAffinityTerm] = &[];
        let (aff, anti) = pod.affinity.as_ref().map_or((empty, empty), |a| {
            (
                a.pod_affinity_required.as_slice(),
                a.pod_anti_affinity_required.as_slice(),
            )
        });
        let mut scope = PodScope {
            pod,
            existing_anti: FxHashSet::default(),
            affinity: vec![FxHashSet::default(); aff.len()],
            affinity_any: false,
            anti: vec![FxHashSet::default(); anti.len()],
            spread: Vec::new(),
        };
        // existing pods' required anti-affinity against the incoming pod: only the pods that
        // have such terms
        let holders = self
            .anti_holders
            .iter()
            .filter_map(|&e| self.seen_at(e, id).map(|n| (e, n)))
            .chain(self.placed_anti.iter().copied().filter(|&(e, _)| e != id));
        for (e, n) in holders {
            let ep = snap.pod(e);
            let node = snap.node(n);
            if let Some(a) = &ep.affinity {
                for t in &a.pod_anti_affinity_required {
                    if term_matches_pod(t, &ep.namespace, pod, pod_ns_labels) {
                        if let Some(v) = node.labels.get(&t.topology_key) {
                            scope.existing_anti.insert((&*t.topology_key, v));
                        }
                    }
                }
            }
        }
        if !aff.is_empty() || !anti.is_empty() {
            for (e, n) in self.all_pods(id) {
                let ep = snap.pod(e);
                let node = snap.node(n);
                let e_ns = self.ns_labels(&ep.namespace);
                for (i, t) in aff.iter().enumerate() {
                    if term_matches_pod(t, &pod.namespace, ep, e_ns) {
                        if let Some(v) = node.labels.get(&t.topology_key) {
                            scope.affinity[i].insert(v);
                            scope.affinity_any = true;
                        }
                    }
                }
                for (i, t) in anti.iter().enumerate() {
                    if term_matches_pod(t, &pod.namespace, ep, e_ns) {
                        if let Some(v) = node.labels.get(&t.topology_key) {
                            scope.anti[i].insert(v);
                        }
                    }
                }
            }
        }
        scope.spread = self.spread_scope(id);
        scope
    }

    /// The pod's DoNotSchedule topology spread constraints as kube-scheduler counts them
    /// now: each constraint's domains (cached per controller) and the matching pods in each.
    fn spread_scope(&self, id: PodId) -> Vec<Spread<'s>> {
        let snap = self.snap;
        let pod = snap.pod(id);
        let mut spread = Vec::new();
        // topology spread: DoNotSchedule constraints only
        let hard: Vec<_> = pod
            .topology_spread
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
            .collect();
        for (ci, c) in hard.iter().enumerate() {
            let match_labels: Vec<(&str, &str)> = c
                .match_label_keys
                .iter()
                .filter_map(|k| pod.labels.get(k).map(|v| (&**k, v)))
                .collect();
            let selects = |q: &Pod| spread_selects(c.label_selector.as_ref(), &match_labels, q);
            // the domains: every node that has all the constraints' keys and passes the
            // inclusion policies (whatever its readiness, as kube-scheduler counts them)
            let build = || {
                let inclusion = Inclusion::of(c, pod);
                let nodes = snap.node_ids();
                Arc::new(TopologyDomains::new(snap, &c.topology_key, nodes, |node| {
                    hard.iter()
                        .all(|c| node.labels.get(&c.topology_key).is_some())
                        && inclusion.admits(node)
                }))
            };
            // the domains a pod template sees never change: cached by controller
            let key = (
                pod.controller().map(|o| &*o.uid),
                if pod.controller().is_some() {
                    PodId::MAX
                } else {
                    id
                },
                ci,
            );
            let eligible = self.domains.lock().entry(key).or_insert_with(build).clone();
            // the matching pods of the pod's namespace, where the plan leaves them
            let counts = eligible.count(
                self.selected_pods(id, c.label_selector.as_ref(), &match_labels)
                    .filter_map(|(q, n)| (q != id).then_some(n)),
            );
            let mut min = counts.iter().copied().min().map_or(0, i64::from);
            if c.min_domains
                .is_some_and(|m| (counts.len() as i64) < i64::from(m))
            {
                min = 0;
            }
            spread.push(Spread {
                max_skew: i64::from(c.max_skew),
                self_match: i64::from(selects(pod)),
                domains: eligible,
                counts,
                min,
            });
        }
        spread
    }

    fn filter(&self, scope: &PodScope<'_>, id: PodId, n: NodeId) -> Result<(), String> {
        let pod = scope.pod;
        let node: &Node = self.snap.node(n);
        // NodeUnschedulable
        if node.unschedulable {
            let t = Taint {
                key: UNSCHEDULABLE_TAINT.into(),
                value: "".into(),
                effect: TaintEffect::NoSchedule,
            };
            if !tolerated(&pod.tolerations, &t) {
                return Err("node(s) were unschedulable".into());
            }
        }
        // NodeAffinity
        if !matches_node_selector(pod, node) {
            return Err("node(s) didn't match Pod's node affinity/selector".into());
        }
        // NodePorts
        if !pod.host_ports.is_empty() {
            let used: FxHashSet<_> = self
                .pods_seen_on(n, id)
                .flat_map(|q| self.snap.pod(q).host_ports.iter().copied())
                .collect();
            if pod.host_ports.iter().any(|hp| used.contains(hp)) {
                return Err("node(s) didn't have free ports for the requested pod ports".into());
            }
        }
        // NodeResourcesFit
        super::fits_resources(pod, node, &self.load_without(id, n)).map_err(|e| match e {
            super::Unfit::Insufficient(r) => format!("Insufficient {r}"),
            super::Unfit::TooManyPods => "Too many pods".to_string(),
            other => other.to_string(),
        })?;
        // TaintToleration
        if let Some(t) = node.taints.iter().find(|t| {
            matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
                && !tolerated(&pod.tolerations, t)
        }) {
            return Err(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                t.key, t.value
            ));
        }
        // InterPodAffinity
        let value = |key: &str| node.labels.get(key);
        if scope
            .existing_anti
            .iter()
            .any(|(k, v)| value(k) == Some(*v))
        {
            return Err("node(s) didn't satisfy existing pods anti-affinity rules".into());
        }
        if let Some(a) = &pod.affinity {
            for (t, values) in a.pod_anti_affinity_required.iter().zip(&scope.anti) {
                if value(&t.topology_key).is_some_and(|v| values.contains(v)) {
                    return Err("node(s) didn't match pod anti-affinity rules".into());
                }
            }
            let terms = &a.pod_affinity_required;
            let all_here = terms
                .iter()
                .zip(&scope.affinity)
                .all(|(t, values)| value(&t.topology_key).is_some_and(|v| values.contains(v)));
            if !all_here {
                // kube-scheduler lets the first pod of a group in when no pod anywhere matches
                // and the pod matches all its own terms.
                let ns_labels = self.ns_labels(&pod.namespace);
                let self_match = terms
                    .iter()
                    .all(|t| term_matches_pod(t, &pod.namespace, pod, ns_labels));
                let keys_present = terms.iter().all(|t| value(&t.topology_key).is_some());
                if scope.affinity_any || !self_match || !keys_present {
                    return Err("node(s) didn't match pod affinity rules".into());
                }
            }
        }
        // PodTopologySpread
        for s in &scope.spread {
            let Some(v) = value(s.domains.key()) else {
                return Err(
                    "node(s) didn't match pod topology spread constraints (missing required label)"
                        .into(),
                );
            };
            // the node's domain among those counted, by its value (the node itself may not
            // be counted)
            let here = s
                .domains
                .domain_of_value(v)
                .map_or(0, |d| i64::from(s.counts[d as usize]));
            if here + s.self_match - s.min > s.max_skew {
                return Err("node(s) didn't match pod topology spread constraints".into());
            }
        }
        Ok(())
    }
}

/// What the score plugins read: the cluster as kube-scheduler sees it while it schedules a
/// replacement.
impl<'s> ClusterView<'s> for Simulation<'s> {
    fn snap(&self) -> &'s ClusterSnapshot {
        self.snap
    }

    /// How many nodes of the snapshot have an image (by one of its names).
    fn nodes_with_image(&self, name: &str) -> usize {
        self.image_nodes.get(name).copied().unwrap_or(0)
    }

    /// What the node requests as kube-scheduler sees it while it schedules the replacement of
    /// `pod`: with the pods still terminating there, and without `pod` itself unless it will
    /// still be terminating there ([`Simulation::seen`]).
    fn load_without(&self, pod: PodId, node: NodeId) -> Resources {
        let mut load = self.load[node].clone();
        if self.see_lingering.get() {
            load.add(&self.linger_load[node]);
        }
        if self.counted_on(pod, node) {
            load.sub_pod(&self.snap.pod(pod).requests);
        }
        load
    }

    /// The node's cpu and memory requests as scoring counts them, as
    /// [`Simulation::load_without`] counts pods.
    fn non_zero_without(&self, pod: PodId, node: NodeId) -> (i64, i64) {
        let (mut c, mut m) = self.non_zero[node];
        if self.see_lingering.get() {
            c += self.linger_non_zero[node].0;
            m += self.linger_non_zero[node].1;
        }
        if self.counted_on(pod, node) {
            let (pc, pm) = non_zero(self.snap.pod(pod));
            c -= pc;
            m -= pm;
        }
        (c, m)
    }

    fn selected_pods(
        &self,
        pod: PodId,
        selector: Option<&crate::labels::Selector>,
        match_labels: &[(&str, &str)],
    ) -> impl Iterator<Item = (PodId, NodeId)> {
        let snap = self.snap;
        let ns: &'s str = &snap.pod(pod).namespace;
        // the selection written out: the same text, the same selection
        let key = format!("{selector:?} {match_labels:?}");
        let selects = |q: &Pod| spread_selects(selector, match_labels, q);
        let members = self
            .selected
            .lock()
            .entry((ns, key))
            .or_insert_with(|| {
                let keep = |&q: &PodId| {
                    let qp = snap.pod(q);
                    !qp.terminating && selects(qp)
                };
                let range = snap.pods_in_namespace(ns);
                if range.end.index() - range.start.index() >= INDEXED_NAMESPACE {
                    if let Some(narrow) = self.narrowest(ns, selector, match_labels) {
                        return narrow.into_iter().filter(keep).collect();
                    }
                }
                range.filter(keep).collect()
            })
            .clone();
        (0..members.len()).flat_map(move |i| self.where_the_plan_leaves(members[i]))
    }

    fn controller_pods(&self, ns: &str, uid: &str) -> impl Iterator<Item = (PodId, NodeId)> {
        let range = self.snap.pods_in_namespace(ns);
        self.snap
            .pods_of_owner(uid)
            .iter()
            .copied()
            .filter(move |&q| {
                range.contains(&q)
                    && self
                        .snap
                        .pod(q)
                        .owners
                        .iter()
                        .any(|o| o.controller && &*o.uid == uid)
            })
            .flat_map(|q| self.where_the_plan_leaves(q))
    }

    /// The pods with pod (anti-)affinity terms as kube-scheduler sees them while it
    /// schedules `subject` ([`Simulation::seen`]), and the replacements placed but
    /// `subject`'s.
    fn affinity_pods(&self, subject: PodId) -> impl Iterator<Item = (PodId, NodeId)> {
        self.affinity_holders
            .iter()
            .filter_map(move |&e| self.seen_at(e, subject).map(|n| (e, n)))
            .chain(
                self.placed_affinity
                    .iter()
                    .copied()
                    .filter(move |&(p, _)| p != subject),
            )
    }

    /// Every (pod, node) of the cluster as kube-scheduler sees it while it schedules
    /// `subject` ([`Simulation::pods_seen_on`]).
    fn all_pods(&self, subject: PodId) -> impl Iterator<Item = (PodId, NodeId)> {
        self.snap
            .node_ids()
            .flat_map(move |n| self.pods_seen_on(n, subject).map(move |p| (p, n)))
    }
}

#[cfg(test)]
mod tests;

impl<'s> Simulation<'s> {
    /// The pods of namespace `ns` (a large one) carrying the rarest label pair that a pod
    /// must carry to be selected (a matchLabelKeys pair, or a selector's `In` with one value),
    /// in id order: a superset of the selection. None when the selection requires no pair.
    fn narrowest(
        &self,
        ns: &'s str,
        selector: Option<&crate::labels::Selector>,
        match_labels: &[(&str, &str)],
    ) -> Option<Vec<PodId>> {
        let required: Vec<(&str, &str)> = match_labels
            .iter()
            .copied()
            .chain(
                selector
                    .into_iter()
                    .flat_map(|s| s.requirements())
                    .filter_map(|r| match r {
                        crate::labels::Requirement::In(k, v) if v.len() == 1 => {
                            Some((&**k, &*v[0]))
                        }
                        _ => None,
                    }),
            )
            .collect();
        if required.is_empty() {
            return None;
        }
        let index = self
            .labelled
            .lock()
            .entry(ns)
            .or_insert_with(|| {
                let mut by: FxHashMap<(&'s str, &'s str), Vec<PodId>> = FxHashMap::default();
                for q in self.snap.pods_in_namespace(ns) {
                    for (k, v) in self.snap.pod(q).labels.iter() {
                        by.entry((k, v)).or_default().push(q);
                    }
                }
                Arc::new(by)
            })
            .clone();
        let rarest = required
            .iter()
            .map(|pair| index.get(pair).map_or(&[][..], Vec::as_slice))
            .min_by_key(|pods| pods.len())?;
        Some(rarest.to_vec())
    }
}
