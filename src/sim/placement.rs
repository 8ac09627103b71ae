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

use super::score::{self, Ranking, ScoreProfile};
use super::{matches_node_inclusion_policies, matches_node_selector, term_matches_pod, tolerated};
use crate::snapshot::{
    ClusterSnapshot, Node, NodeId, Pod, PodAffinityTerm, PodId, Resources, Taint, TaintEffect,
    WhenUnsatisfiable,
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
    pub fn lingers(&self, pod: &Pod) -> bool {
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

type DomainCache<'s> = FxHashMap<(Option<&'s str>, PodId, usize), Arc<Domains<'s>>>;

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
    gone: Vec<bool>,
    /// Replacements placed on each node, by the id of the pod they replace.
    placed: Vec<Vec<PodId>>,
    /// What each node's pods request, placements included (`pods` counts them).
    load: Vec<Resources>,
    /// Each node's cpu and memory requests as scoring counts them ([`non_zero`]).
    non_zero: Vec<(i64, i64)>,
    /// The score plugins and their weights.
    profile: Arc<ScoreProfile>,
    /// How evicted pods terminate.
    termination: Termination,
    /// Evicted pods still terminating on their node while replacements are scheduled, and
    /// how many they are.
    lingering: Vec<bool>,
    lingering_count: usize,
    /// What the lingering pods request on each node (`pods` counts them), and their cpu and
    /// memory as scoring counts them.
    linger_load: Vec<Resources>,
    linger_non_zero: Vec<(i64, i64)>,
    /// Whether the filters and scores see the lingering pods (false while a pending pod is
    /// placed: kube-scheduler places it once they are gone).
    see_lingering: Flag,
    /// Every placement, in order.
    placed_all: Vec<(PodId, NodeId)>,
    /// The placements of pods with required pod anti-affinity.
    placed_anti: Vec<(PodId, NodeId)>,
    /// Where the next search for a destination starts (kube-scheduler's
    /// `nextStartNodeIndex`).
    next_start: usize,
    /// Each pod template's topology spread domains by node (the node's value of the
    /// constraint's key, None when the node is not counted), by (controller uid, pod when
    /// it has no controller, constraint).
    domains: Cache<DomainCache<'s>>,
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
    pub node: NodeId,
    /// The other feasible nodes with the same final score (kube-scheduler picks among them
    /// at random), sorted by name.
    pub alternatives: Vec<NodeId>,
}

/// Why the simulator found no node for a pod: each node and the first filter it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoFit {
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
pub fn feasible_nodes_to_find(all: usize) -> usize {
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
    /// Per DoNotSchedule spread constraint: (key, max skew, self match, counts, min).
    spread: Vec<Spread<'p>>,
}

struct Spread<'p> {
    key: &'p str,
    max_skew: i64,
    self_match: i64,
    /// The domains (values of the key) and the matching pods in each.
    domains: Arc<Domains<'p>>,
    counts: Vec<i64>,
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

/// A pod template's spread domains: each node's domain (None: not counted) and the domains'
/// values.
#[derive(Debug)]
struct Domains<'s> {
    of_node: Vec<Option<u32>>,
    values: Vec<&'s str>,
}

impl<'s> Simulation<'s> {
    pub fn new(snap: &'s ClusterSnapshot) -> Self {
        Self::with_profile(snap, Arc::new(ScoreProfile::default()))
    }

    /// The simulation scoring with a scheduler profile's plugins and weights.
    pub fn with_profile(snap: &'s ClusterSnapshot, profile: Arc<ScoreProfile>) -> Self {
        let mut non_zero_load = vec![(0i64, 0i64); snap.nodes.len()];
        for (n, load) in non_zero_load.iter_mut().enumerate() {
            for &p in snap.pods_on_node(n as NodeId) {
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
            gone: vec![false; snap.pods.len()],
            placed: vec![Vec::new(); snap.nodes.len()],
            load: (0..snap.nodes.len() as NodeId)
                .map(|n| snap.node_requested(n).clone())
                .collect(),
            non_zero: non_zero_load,
            profile,
            termination: Termination::default(),
            lingering: vec![false; snap.pods.len()],
            lingering_count: 0,
            linger_load: vec![Resources::default(); snap.nodes.len()],
            linger_non_zero: vec![(0, 0); snap.nodes.len()],
            see_lingering: Flag::new(true),
            placed_all: Vec::new(),
            placed_anti: Vec::new(),
            next_start: 0,
            domains: Default::default(),
            anti_holders: (0..snap.pods.len() as PodId)
                .filter(|&p| {
                    snap.pod_node(p).is_some()
                        && snap
                            .pod(p)
                            .affinity
                            .as_ref()
                            .is_some_and(|a| !a.pod_anti_affinity_required.is_empty())
                })
                .collect(),
            affinity_holders: (0..snap.pods.len() as PodId)
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
                if let Some(n) = snap.pod_node(i as PodId) {
                    sim.linger(i as PodId, n);
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
        let (n, i) = (node as usize, pod as usize);
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

    /// How many nodes of the snapshot have an image (by one of its names).
    pub(crate) fn nodes_with_image(&self, name: &str) -> usize {
        self.image_nodes.get(name).copied().unwrap_or(0)
    }

    /// The score profile the simulation picks nodes with.
    pub fn profile(&self) -> &ScoreProfile {
        &self.profile
    }

    /// Sets how evicted pods terminate ([`Termination`]). Call before anything is removed.
    pub fn set_termination(&mut self, termination: Termination) {
        self.forget_pick();
        self.termination = termination;
    }

    pub fn termination(&self) -> Termination {
        self.termination
    }

    /// Where a snapshot pod is as the plan leaves it: its node, unless it is gone or done.
    /// (Topology spread counts these: a terminating pod counts nowhere.)
    fn present(&self, pod: PodId) -> Option<NodeId> {
        if self.gone[pod as usize] || !self.snap.pod(pod).is_active() {
            return None;
        }
        self.snap.pod_node(pod)
    }

    /// Whether kube-scheduler sees the snapshot pod `pod` on its node while it schedules the
    /// replacement of (or the pending pod) `subject`: present, or evicted and still
    /// terminating. `subject` itself counts only where it lingers once evicted.
    fn seen(&self, pod: PodId, subject: PodId) -> bool {
        let i = pod as usize;
        if !self.snap.pod(pod).is_active() {
            return false;
        }
        let lingering = self.see_lingering.get() && (self.lingering[i] || !self.gone[i]);
        if pod == subject {
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

    pub fn snap(&self) -> &'s ClusterSnapshot {
        self.snap
    }

    /// Takes a pod off its node (its eviction is planned). With a grace period
    /// ([`Termination::lingers`]) it stays in kube-scheduler's view until
    /// [`Simulation::settle`].
    pub fn remove(&mut self, pod: PodId) {
        if std::mem::replace(&mut self.gone[pod as usize], true) {
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
                    self.load[n as usize].sub_pod(&p.requests);
                    self.non_zero[n as usize].0 -= c;
                    self.non_zero[n as usize].1 -= m;
                }
            }
        }
    }

    /// Whether an evicted pod still terminates on its node in kube-scheduler's view.
    pub fn is_lingering(&self, pod: PodId) -> bool {
        self.lingering[pod as usize]
    }

    /// An evicted pod is gone: it no longer terminates on its node in kube-scheduler's view.
    pub fn terminated(&mut self, pod: PodId) {
        if !std::mem::replace(&mut self.lingering[pod as usize], false) {
            return;
        }
        self.forget_pick();
        self.lingering_count -= 1;
        let p = self.snap.pod(pod);
        if let Some(n) = self.snap.pod_node(pod) {
            let (c, m) = non_zero(p);
            self.linger_load[n as usize].sub_pod(&p.requests);
            self.linger_non_zero[n as usize].0 -= c;
            self.linger_non_zero[n as usize].1 -= m;
        }
    }

    /// Whether any evicted pod still terminates in kube-scheduler's view.
    pub fn any_lingering(&self) -> bool {
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

    pub fn is_gone(&self, pod: PodId) -> bool {
        self.gone[pod as usize]
    }

    /// Puts the replacement of `pod` on `node`.
    pub fn place(&mut self, pod: PodId, node: NodeId) {
        self.forget_pick();
        self.placed[node as usize].push(pod);
        self.placed_all.push((pod, node));
        if self
            .snap
            .pod(pod)
            .affinity
            .as_ref()
            .is_some_and(|a| !a.pod_anti_affinity_required.is_empty())
        {
            self.placed_anti.push((pod, node));
        }
        self.load[node as usize].add_pod(&self.snap.pod(pod).requests);
        let (c, m) = non_zero(self.snap.pod(pod));
        self.non_zero[node as usize].0 += c;
        self.non_zero[node as usize].1 += m;
    }

    /// The replacements placed on a node so far.
    pub fn placed(&self, node: NodeId) -> &[PodId] {
        &self.placed[node as usize]
    }

    /// What a node's pods request, placements included.
    pub fn load(&self, node: NodeId) -> &Resources {
        &self.load[node as usize]
    }

    /// The pods on a node as the plan leaves it: the active pods not gone, then the
    /// replacements placed there.
    pub fn pods_on(&self, node: NodeId) -> impl Iterator<Item = PodId> + use<'_, 's> {
        self.snap
            .pods_on_node(node)
            .iter()
            .copied()
            .filter(move |&p| !self.gone[p as usize] && self.snap.pod(p).is_active())
            .chain(self.placed[node as usize].iter().copied())
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
                self.placed[node as usize]
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
    pub fn any_feasible(&self, pod: PodId, nodes: &[NodeId]) -> Result<NodeId, NoFit> {
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
    pub fn predict_settled(&self, pod: PodId, nodes: &[NodeId]) -> Result<Prediction, NoFit> {
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
    pub fn schedule_settled(&mut self, pod: PodId, nodes: &[NodeId]) -> Result<Prediction, NoFit> {
        self.see_lingering.set(false);
        let placed = self.schedule_predicted(pod, nodes);
        self.see_lingering.set(true);
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

    /// What the node requests as kube-scheduler sees it while it schedules the replacement of
    /// `pod`: with the pods still terminating there, and without `pod` itself unless it will
    /// still be terminating there ([`Simulation::seen`]).
    pub(crate) fn load_without(&self, pod: PodId, node: NodeId) -> Resources {
        let mut load = self.load[node as usize].clone();
        if self.see_lingering.get() {
            load.add(&self.linger_load[node as usize]);
        }
        if self.counted_on(pod, node) {
            load.sub_pod(&self.snap.pod(pod).requests);
        }
        load
    }

    /// The node's cpu and memory requests as scoring counts them, as
    /// [`Simulation::load_without`] counts pods.
    pub(crate) fn non_zero_without(&self, pod: PodId, node: NodeId) -> (i64, i64) {
        let (mut c, mut m) = self.non_zero[node as usize];
        if self.see_lingering.get() {
            c += self.linger_non_zero[node as usize].0;
            m += self.linger_non_zero[node as usize].1;
        }
        if self.counted_on(pod, node) {
            let (pc, pm) = non_zero(self.snap.pod(pod));
            c -= pc;
            m -= pm;
        }
        (c, m)
    }

    /// Whether the pod is counted on the node now (in [`Simulation::load`], or terminating
    /// there in kube-scheduler's view) but not as its replacement sees it.
    fn counted_on(&self, pod: PodId, node: NodeId) -> bool {
        let i = pod as usize;
        let p = self.snap.pod(pod);
        if self.snap.pod_node(pod) != Some(node) || !p.is_active() {
            return false;
        }
        let counted = !self.gone[i] || (self.see_lingering.get() && self.lingering[i]);
        counted && !self.seen(pod, pod)
    }

    /// The pods of a namespace where the plan leaves them (each with its node).
    pub(crate) fn namespace_pods(
        &self,
        ns: &str,
    ) -> impl Iterator<Item = (PodId, NodeId)> + use<'_, 's> {
        let range = self.snap.pods_in_namespace(ns);
        let placed = self
            .placed_all
            .iter()
            .copied()
            .filter(move |&(q, _)| range.contains(&q));
        self.snap
            .pods_in_namespace(ns)
            .filter_map(|q| self.present(q).map(|n| (q, n)))
            .chain(placed)
    }

    /// The pods with pod (anti-)affinity terms as kube-scheduler sees them while it
    /// schedules `subject` ([`Simulation::seen`]), and the replacements placed but
    /// `subject`'s.
    pub(crate) fn affinity_pods(
        &self,
        subject: PodId,
    ) -> impl Iterator<Item = (PodId, NodeId)> + use<'_, 's> {
        self.affinity_holders
            .iter()
            .filter_map(move |&e| self.seen_at(e, subject).map(|n| (e, n)))
            .chain(
                self.placed_all
                    .iter()
                    .copied()
                    .filter(move |&(p, _)| p != subject && has_pod_affinity(self.snap.pod(p))),
            )
    }

    fn ns_labels(&self, ns: &str) -> Option<&'s crate::labels::Labels> {
        self.snap.namespace(ns).map(|n| &n.labels)
    }

    /// Every (pod, node) of the cluster as kube-scheduler sees it while it schedules
    /// `subject` ([`Simulation::pods_seen_on`]).
    pub(crate) fn all_pods(
        &self,
        subject: PodId,
    ) -> impl Iterator<Item = (PodId, NodeId)> + use<'_, 's> {
        (0..self.snap.nodes.len() as NodeId)
            .flat_map(move |n| self.pods_seen_on(n, subject).map(move |p| (p, n)))
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
            let selects = |q: &Pod| {
                c.label_selector
                    .as_ref()
                    .is_some_and(|s| s.matches(&q.labels))
                    && match_labels
                        .iter()
                        .all(|(k, v)| q.labels.get(k) == Some(*v))
            };
            // the domains: every node that has all the constraints' keys and passes the
            // inclusion policies (whatever its readiness, as kube-scheduler counts them)
            let build = || -> Arc<Domains<'s>> {
                let mut values: Vec<&'s str> = Vec::new();
                let of_node = snap
                    .nodes
                    .iter()
                    .map(|node| {
                        let ok = hard
                            .iter()
                            .all(|c| node.labels.get(&c.topology_key).is_some())
                            && matches_node_inclusion_policies(
                                pod,
                                node,
                                c.node_affinity_policy,
                                c.node_taints_policy,
                            );
                        let v = node.labels.get(&c.topology_key).filter(|_| ok)?;
                        Some(match values.iter().position(|x| *x == v) {
                            Some(i) => i as u32,
                            None => {
                                values.push(v);
                                values.len() as u32 - 1
                            }
                        })
                    })
                    .collect();
                Arc::new(Domains { of_node, values })
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
            let mut counts = vec![0i64; eligible.values.len()];
            // the matching pods of the pod's namespace, where the plan leaves them
            for (q, n) in self.namespace_pods(&pod.namespace) {
                let qp = snap.pod(q);
                if q == id || qp.terminating || !selects(qp) {
                    continue;
                }
                if let Some(d) = eligible.of_node[n as usize] {
                    counts[d as usize] += 1;
                }
            }
            let mut min = counts.iter().copied().min().unwrap_or(0);
            if c.min_domains
                .is_some_and(|m| (counts.len() as i64) < i64::from(m))
            {
                min = 0;
            }
            scope.spread.push(Spread {
                key: &c.topology_key,
                max_skew: i64::from(c.max_skew),
                self_match: i64::from(selects(pod)),
                domains: eligible,
                counts,
                min,
            });
        }
        scope
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
            let Some(v) = value(s.key) else {
                return Err(
                    "node(s) didn't match pod topology spread constraints (missing required label)"
                        .into(),
                );
            };
            let here = s
                .domains
                .values
                .iter()
                .position(|x| *x == v)
                .map_or(0, |d| s.counts[d]);
            if here + s.self_match - s.min > s.max_skew {
                return Err("node(s) didn't match pod topology spread constraints".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::{affinity_term, node, pod, snapshot};
    use crate::snapshot::{Affinity, WhenUnsatisfiable::DoNotSchedule};

    fn id(s: &ClusterSnapshot, name: &str) -> PodId {
        s.pods.iter().position(|p| &*p.name == name).unwrap() as PodId
    }

    fn all(s: &ClusterSnapshot) -> Vec<NodeId> {
        (0..s.nodes.len() as NodeId).collect()
    }

    /// The incoming pod is modelled as a pod on a separate "src" node (the node it leaves).
    fn with_src(
        mut nodes: Vec<Node>,
        mut pods: Vec<Pod>,
        incoming: crate::snapshot::builders::PodBuilder,
    ) -> ClusterSnapshot {
        nodes.push(node("src").cpu(100_000).pods(1000).unschedulable().build());
        pods.push(incoming.node("src").build());
        snapshot(nodes, pods)
    }

    #[test]
    fn resources_are_cumulative() {
        let s = snapshot(
            vec![
                node("a").cpu(1000).build(),
                node("b").cpu(1000).build(),
                node("src").cpu(4000).unschedulable().build(),
            ],
            vec![
                pod("d", "p1").node("src").cpu(700).build(),
                pod("d", "p2").node("src").cpu(700).build(),
                pod("d", "p3").node("src").cpu(700).build(),
            ],
        );
        let mut sim = Simulation::new(&s);
        let nodes = all(&s);
        for p in 0..3 {
            sim.remove(p);
        }
        let a = sim.schedule(0, &nodes).unwrap();
        let b = sim.schedule(1, &nodes).unwrap();
        assert_ne!(a, b, "the second pod sees the first one's node fuller");
        assert_eq!(sim.load(a).cpu, 700);
        let err = sim.schedule(2, &nodes).unwrap_err();
        assert_eq!(
            err.to_string(),
            "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable"
        );
    }

    #[test]
    fn pod_count_and_host_ports() {
        let s = with_src(
            vec![node("full").pods(1).build(), node("port").build()],
            vec![
                pod("d", "x").node("full").build(),
                pod("d", "y").node("port").host_port(8080).build(),
            ],
            pod("d", "in").host_port(8080),
        );
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        assert_eq!(sim.check(p, 0).unwrap_err(), "Too many pods");
        assert_eq!(
            sim.check(p, 1).unwrap_err(),
            "node(s) didn't have free ports for the requested pod ports"
        );
        // a placed replacement holds its port too
        let s2 = snapshot(
            vec![node("n").build(), node("src").unschedulable().build()],
            vec![
                pod("d", "a").node("src").host_port(80).build(),
                pod("d", "b").node("src").host_port(80).build(),
            ],
        );
        let mut sim = Simulation::new(&s2);
        sim.remove(0);
        sim.remove(1);
        assert_eq!(sim.schedule(0, &[0]).unwrap(), 0);
        assert!(sim.schedule(1, &[0]).is_err());
    }

    #[test]
    fn unschedulable_and_taints() {
        let s = with_src(
            vec![
                node("cordoned").unschedulable().build(),
                node("gpu")
                    .taint("gpu", "true", TaintEffect::NoSchedule)
                    .build(),
                node("soft")
                    .taint("x", "", TaintEffect::PreferNoSchedule)
                    .build(),
                node("exec").taint("e", "1", TaintEffect::NoExecute).build(),
            ],
            vec![],
            pod("d", "in"),
        );
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        let n = |name: &str| s.node_id(name).unwrap();
        assert_eq!(
            sim.check(p, n("cordoned")).unwrap_err(),
            "node(s) were unschedulable"
        );
        assert_eq!(
            sim.check(p, n("gpu")).unwrap_err(),
            "node(s) had untolerated taint {gpu: true}"
        );
        assert!(sim.check(p, n("soft")).is_ok());
        assert_eq!(
            sim.check(p, n("exec")).unwrap_err(),
            "node(s) had untolerated taint {e: 1}"
        );
        // with a choice, PreferNoSchedule counts against a node
        let s2 = with_src(
            vec![
                node("a-soft")
                    .taint("x", "", TaintEffect::PreferNoSchedule)
                    .build(),
                node("b").build(),
            ],
            vec![],
            pod("d", "in"),
        );
        let b = s2.node_id("b").unwrap();
        assert_eq!(
            Simulation::new(&s2)
                .destination(id(&s2, "in"), &all(&s2))
                .unwrap(),
            b
        );
        // tolerating the unschedulable taint passes NodeUnschedulable
        let s = with_src(
            vec![node("cordoned").unschedulable().build()],
            vec![],
            pod("d", "in").toleration(UNSCHEDULABLE_TAINT, "", Some(TaintEffect::NoSchedule)),
        );
        assert!(Simulation::new(&s).check(id(&s, "in"), 0).is_ok());
    }

    #[test]
    fn node_selector_and_affinity() {
        use crate::snapshot::builders::node_term;
        let s = with_src(
            vec![
                node("a").label("zone", "a").build(),
                node("b").label("zone", "b").build(),
            ],
            vec![],
            pod("d", "in").required_node_affinity(vec![node_term("zone", &["b"])]),
        );
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        assert_eq!(
            sim.check(p, 0).unwrap_err(),
            "node(s) didn't match Pod's node affinity/selector"
        );
        assert_eq!(sim.destination(p, &all(&s)).unwrap(), 1);
    }

    #[test]
    fn pod_anti_affinity_both_directions() {
        let nodes = || {
            vec![
                node("a").label("zone", "a").build(),
                node("b").label("zone", "b").build(),
                node("c").label("zone", "b").build(),
            ]
        };
        // the incoming pod avoids app=db by zone
        let s = with_src(
            nodes(),
            vec![pod("d", "db").node("b").label("app", "db").build()],
            pod("d", "in").anti_affinity(affinity_term("zone", "app", "db")),
        );
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        assert!(sim.check(p, 0).is_ok());
        assert_eq!(
            sim.check(p, 2).unwrap_err(),
            "node(s) didn't match pod anti-affinity rules"
        );
        // an existing pod avoids the incoming one
        let s = with_src(
            nodes(),
            vec![pod("d", "db")
                .node("b")
                .anti_affinity(affinity_term("zone", "app", "web"))
                .build()],
            pod("d", "in").label("app", "web"),
        );
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        assert!(sim.check(p, 0).is_ok());
        assert_eq!(
            sim.check(p, 2).unwrap_err(),
            "node(s) didn't satisfy existing pods anti-affinity rules"
        );
        // self anti-affinity: replicas placed one after another spread out
        let s = snapshot(
            vec![
                node("a").label("kubernetes.io/hostname", "a").build(),
                node("b").label("kubernetes.io/hostname", "b").build(),
                node("src").unschedulable().build(),
            ],
            (0..3)
                .map(|i| {
                    pod("d", &format!("r{i}"))
                        .node("src")
                        .label("app", "r")
                        .anti_affinity(affinity_term("kubernetes.io/hostname", "app", "r"))
                        .build()
                })
                .collect(),
        );
        let mut sim = Simulation::new(&s);
        for p in 0..3 {
            sim.remove(p);
        }
        let x = sim.schedule(0, &[0, 1]).unwrap();
        let y = sim.schedule(1, &[0, 1]).unwrap();
        assert_ne!(x, y);
        assert!(sim.schedule(2, &[0, 1]).is_err());
    }

    #[test]
    fn pod_affinity_and_the_first_pod_of_a_group() {
        let aff = |p: crate::snapshot::builders::PodBuilder| {
            p.affinity(Affinity {
                pod_affinity_required: vec![affinity_term("zone", "app", "cache")],
                ..Default::default()
            })
        };
        let nodes = || {
            vec![
                node("a").label("zone", "a").build(),
                node("b").label("zone", "b").build(),
                node("bare").build(),
            ]
        };
        let s = with_src(
            nodes(),
            vec![pod("d", "cache").node("b").label("app", "cache").build()],
            aff(pod("d", "in")),
        );
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        assert_eq!(
            sim.check(p, 0).unwrap_err(),
            "node(s) didn't match pod affinity rules"
        );
        assert!(sim.check(p, 1).is_ok());
        assert!(sim.check(p, 2).is_err());
        // no match anywhere, and the pod matches its own term: allowed where the key exists
        let s = with_src(nodes(), vec![], aff(pod("d", "in").label("app", "cache")));
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        assert!(sim.check(p, 0).is_ok());
        assert!(sim.check(p, 2).is_err());
        // no match anywhere, and the pod does not match its own term: nowhere
        let s = with_src(nodes(), vec![], aff(pod("d", "in")));
        let sim = Simulation::new(&s);
        assert!(sim.feasible(id(&s, "in"), &[0, 1, 2]).is_err());
    }

    #[test]
    fn topology_spread_do_not_schedule() {
        let spread = |p: crate::snapshot::builders::PodBuilder| {
            p.label("app", "w")
                .spread(1, "zone", DoNotSchedule, "app", "w")
        };
        let s = with_src(
            vec![
                node("a").label("zone", "a").build(),
                node("b").label("zone", "b").build(),
                node("c").label("zone", "c").build(),
                node("nolabel").build(),
            ],
            vec![
                pod("d", "w1").node("a").label("app", "w").build(),
                pod("d", "w2").node("a").label("app", "w").build(),
                pod("d", "w3").node("b").label("app", "w").build(),
                // another namespace does not count
                pod("e", "w4").node("c").label("app", "w").build(),
            ],
            spread(pod("d", "in")),
        );
        let sim = Simulation::new(&s);
        let p = id(&s, "in");
        // counts a=2 b=1 c=0, min 0: only c keeps the skew at 1
        assert!(sim.check(p, 0).is_err());
        assert!(sim.check(p, 1).is_err());
        assert!(sim.check(p, 2).is_ok());
        assert_eq!(
            sim.check(p, 3).unwrap_err(),
            "node(s) didn't match pod topology spread constraints (missing required label)"
        );
        assert_eq!(sim.destination(p, &all(&s)).unwrap(), 2);
        // cumulative: after c gets one, a still fails, b and c pass
        let s = snapshot(
            vec![
                node("a").label("zone", "a").build(),
                node("b").label("zone", "b").build(),
                node("src").unschedulable().build(),
            ],
            vec![
                pod("d", "w1").node("a").label("app", "w").build(),
                spread(pod("d", "m1")).node("src").build(),
                spread(pod("d", "m2")).node("src").build(),
                spread(pod("d", "m3")).node("src").build(),
            ],
        );
        let mut sim = Simulation::new(&s);
        let m = |n| id(&s, n);
        for n in ["m1", "m2", "m3"] {
            sim.remove(m(n));
        }
        assert_eq!(sim.schedule(m("m1"), &[0, 1]).unwrap(), 1);
        let second = sim.schedule(m("m2"), &[0, 1]).unwrap();
        let third = sim.schedule(m("m3"), &[0, 1]).unwrap();
        assert_ne!(second, third, "spread keeps alternating");
    }

    #[test]
    fn min_domains_and_match_label_keys() {
        let mut c = pod("d", "x")
            .spread(1, "zone", DoNotSchedule, "app", "w")
            .build()
            .topology_spread[0]
            .clone();
        c.min_domains = Some(3);
        let s = with_src(
            vec![
                node("a").label("zone", "a").build(),
                node("b").label("zone", "b").build(),
            ],
            vec![
                pod("d", "w1").node("a").label("app", "w").build(),
                pod("d", "w2").node("b").label("app", "w").build(),
            ],
            pod("d", "in")
                .label("app", "w")
                .spread_constraint(c.clone()),
        );
        let sim = Simulation::new(&s);
        // 2 domains < minDomains 3: the global minimum is 0, so 1 + 1 - 0 > 1 everywhere
        assert!(sim.feasible(id(&s, "in"), &[0, 1]).is_err());
        // matchLabelKeys: only pods with the same pod-template-hash count
        let mut c2 = c;
        c2.min_domains = None;
        c2.match_label_keys = vec!["hash".into()];
        let s = with_src(
            vec![
                node("a").label("zone", "a").build(),
                node("b").label("zone", "b").build(),
            ],
            vec![
                pod("d", "old1")
                    .node("a")
                    .label("app", "w")
                    .label("hash", "1")
                    .build(),
                pod("d", "old2")
                    .node("a")
                    .label("app", "w")
                    .label("hash", "1")
                    .build(),
            ],
            pod("d", "in")
                .label("app", "w")
                .label("hash", "2")
                .spread_constraint(c2),
        );
        let sim = Simulation::new(&s);
        assert!(sim.check(id(&s, "in"), 0).is_ok());
    }

    #[test]
    fn the_pod_itself_counts_where_it_is_while_it_terminates() {
        // a full node: the pod's own requests free up only once it is gone
        let s = snapshot(
            vec![node("a").cpu(1000).build()],
            vec![pod("d", "p").node("a").cpu(1000).host_port(80).build()],
        );
        let mut sim = Simulation::new(&s);
        assert_eq!(sim.termination(), Termination::GRACEFUL);
        let ports = "node(s) didn't have free ports for the requested pod ports";
        assert_eq!(sim.check(0, 0).unwrap_err(), ports);
        sim.remove(0);
        assert!(sim.is_lingering(0));
        assert_eq!(sim.check(0, 0).unwrap_err(), ports);
        assert_eq!(sim.load_without(0, 0).cpu, 1000);
        // what the node requests once everything settled: the pod gone
        assert_eq!(sim.load(0).cpu, 0);
        sim.settle();
        assert!(sim.check(0, 0).is_ok());
        // a kubelet that deletes at once: the room is free for the replacement at once
        let mut sim = Simulation::new(&s);
        sim.set_termination(Termination::INSTANT);
        assert!(sim.check(0, 0).is_ok());
        assert_eq!(sim.destination(0, &[0]).unwrap(), 0);
        sim.remove(0);
        assert!(!sim.is_lingering(0));
        assert!(sim.check(0, 0).is_ok());
    }

    #[test]
    fn a_grace_period_of_zero_frees_the_room_at_once() {
        let s = snapshot(
            vec![node("a").cpu(1000).build()],
            vec![
                pod("d", "zero").node("a").cpu(600).grace(0).build(),
                pod("d", "thirty").node("a").cpu(400).build(),
            ],
        );
        let (zero, thirty) = (id(&s, "zero"), id(&s, "thirty"));
        let mut sim = Simulation::new(&s);
        sim.remove(zero);
        sim.remove(thirty);
        assert!(!sim.is_lingering(zero));
        assert!(sim.is_lingering(thirty));
        // 400m still terminating: 600m free
        assert!(sim.check(zero, 0).is_ok());
        assert_eq!(sim.load_without(zero, 0).cpu, 400);
        // the policy's gracePeriodSeconds overrides each pod's own
        for (grace, lingers) in [(Some(0), [false, false]), (Some(5), [true, true])] {
            let mut sim = Simulation::new(&s);
            sim.set_termination(Termination {
                graceful: true,
                grace_override: grace,
            });
            sim.remove(zero);
            sim.remove(thirty);
            assert_eq!([sim.is_lingering(zero), sim.is_lingering(thirty)], lingers);
        }
    }

    #[test]
    fn terminating_pods_hold_their_room_for_other_replacements() {
        // big leaves n1 and still terminates there while replacements are scheduled
        let s = snapshot(
            vec![node("n1").cpu(2000).build(), node("n2").cpu(2000).build()],
            vec![
                pod("d", "big").node("n1").cpu(1500).build(),
                pod("d", "fill").node("n2").cpu(1000).build(),
                pod("d", "small").node("n2").cpu(400).build(),
            ],
        );
        let (big, small) = (id(&s, "big"), id(&s, "small"));
        let nodes = all(&s);
        let mut sim = Simulation::new(&s);
        sim.remove(big);
        // its replacement finds 500m free on n1 and 600m on n2: none until big is gone
        assert!(sim.predict(big, &nodes).is_err());
        // another replacement finds big's room taken
        sim.remove(small);
        assert_eq!(sim.load_without(small, 0).cpu, 1500);
        assert_eq!(sim.load_without(small, 1).cpu, 1400);
        // the cluster once everything settled: both gone
        assert_eq!((sim.load(0).cpu, sim.load(1).cpu), (0, 1000));
        // once big is seen gone, its room is free; small still terminates
        sim.terminated(big);
        assert!(!sim.is_lingering(big) && sim.is_lingering(small));
        assert_eq!(sim.load_without(small, 0).cpu, 0);
        assert_eq!(sim.load_without(small, 1).cpu, 1400);
        sim.settle();
        assert_eq!(sim.schedule(big, &nodes).unwrap(), 0);
        // instant: big's room is free at once
        let mut sim = Simulation::new(&s);
        sim.set_termination(Termination::INSTANT);
        sim.remove(big);
        assert_eq!(sim.schedule(big, &nodes).unwrap(), 0);
        sim.remove(small);
        assert_eq!(sim.load_without(small, 1).cpu, 1000);
    }

    #[test]
    fn pods_terminating_in_the_snapshot_hold_their_room_until_gone() {
        // old was evicted an earlier cycle and still terminates on n1 when the snapshot is read
        let s = snapshot(
            vec![node("n1").cpu(2000).build(), node("n2").cpu(2000).build()],
            vec![
                pod("d", "old").node("n1").cpu(1500).terminating().build(),
                pod("d", "live").node("n1").cpu(200).build(),
                pod("d", "other").node("n2").cpu(1000).build(),
            ],
        );
        let (old, live, other) = (id(&s, "old"), id(&s, "live"), id(&s, "other"));
        let nodes = all(&s);
        let mut sim = Simulation::new(&s);
        // the cluster once it is gone: not on n1, not among n1's pods
        assert_eq!(sim.load(0).cpu, 200);
        assert_eq!(sim.pods_on(0).collect::<Vec<_>>(), vec![live]);
        assert!(sim.is_lingering(old));
        // kube-scheduler still sees it: other's replacement (1000m) finds 300m free on n1
        sim.remove(other);
        assert_eq!(sim.load_without(other, 0).cpu, 1700);
        assert_eq!(sim.schedule(other, &nodes).unwrap(), 1);
        // once it is seen gone, its room is free
        let mut sim = Simulation::new(&s);
        sim.terminated(old);
        assert_eq!(sim.load_without(other, 0).cpu, 200);
        assert!(!sim.any_lingering());
    }

    #[test]
    fn terminating_pods_count_in_scores_but_not_in_topology_spread() {
        // LeastAllocated: with p still on n1 (2 of 4 cpus), n1 and n2 tie for its
        // replacement; gone at once, n1 is the emptiest (p and q of different workloads, so
        // that default spreading scores nothing)
        let s = snapshot(
            vec![node("n1").cpu(4000).build(), node("n2").cpu(4000).build()],
            vec![
                pod("d", "p")
                    .node("n1")
                    .cpu(2000)
                    .owner("ReplicaSet", "p")
                    .build(),
                pod("d", "q")
                    .node("n2")
                    .cpu(2000)
                    .owner("ReplicaSet", "q")
                    .build(),
            ],
        );
        let p = id(&s, "p");
        let mut sim = Simulation::new(&s);
        sim.remove(p);
        assert_eq!(
            sim.predict(p, &all(&s)).unwrap(),
            Prediction {
                node: 0,
                alternatives: vec![1]
            }
        );
        let mut sim = Simulation::new(&s);
        sim.set_termination(Termination::INSTANT);
        sim.remove(p);
        assert_eq!(
            sim.predict(p, &all(&s)).unwrap(),
            Prediction {
                node: 0,
                alternatives: vec![]
            }
        );
        // DoNotSchedule zone spread (maxSkew 1): w1 and w2 leave zone a; terminating, they
        // count nowhere, so w1's replacement must go to zone a (0 there, 1 in zone b)
        let w = |name: &str, n: &str| {
            pod("d", name)
                .node(n)
                .label("app", "w")
                .spread(1, "zone", DoNotSchedule, "app", "w")
                .build()
        };
        let s = snapshot(
            vec![
                node("a1").label("zone", "a").build(),
                node("b1").label("zone", "b").build(),
            ],
            vec![w("w1", "a1"), w("w2", "a1"), w("w3", "b1")],
        );
        let mut sim = Simulation::new(&s);
        sim.remove(id(&s, "w1"));
        sim.remove(id(&s, "w2"));
        assert!(sim.is_lingering(id(&s, "w2")));
        assert_eq!(
            sim.check(id(&s, "w1"), 1).unwrap_err(),
            "node(s) didn't match pod topology spread constraints"
        );
        assert!(sim.check(id(&s, "w1"), 0).is_ok());
    }

    #[test]
    fn terminating_pods_keep_their_anti_affinity_and_affinity() {
        // w1 repels app=w on its host; while it terminates, its own replacement cannot land
        // there, nor can another w; db attracts app=api to its host until it is gone
        let anti = Affinity {
            pod_anti_affinity_required: vec![affinity_term("kubernetes.io/hostname", "app", "w")],
            ..Default::default()
        };
        let s = snapshot(
            vec![node("n1").build(), node("n2").build()],
            vec![
                pod("d", "w1")
                    .node("n1")
                    .label("app", "w")
                    .affinity(anti.clone())
                    .build(),
                pod("d", "w2")
                    .node("n2")
                    .label("app", "w")
                    .affinity(anti)
                    .build(),
            ],
        );
        let (w1, w2) = (id(&s, "w1"), id(&s, "w2"));
        let mut sim = Simulation::new(&s);
        sim.remove(w1);
        sim.remove(w2);
        for (pod, node) in [(w1, 0), (w1, 1), (w2, 0), (w2, 1)] {
            assert!(sim.check(pod, node).is_err(), "{pod} on {node}");
        }
        sim.settle();
        assert!(sim.check(w1, 0).is_ok());
        let mut sim = Simulation::new(&s);
        sim.set_termination(Termination::INSTANT);
        sim.remove(w1);
        sim.remove(w2);
        assert!(sim.check(w1, 0).is_ok());
    }

    #[test]
    fn pending_pods_are_placed_once_the_evicted_pods_are_gone() {
        let s = snapshot(
            vec![node("n1").cpu(1000).build()],
            vec![
                pod("d", "old").node("n1").cpu(1000).build(),
                pod("d", "pending").cpu(1000).build(),
            ],
        );
        let (old, pending) = (id(&s, "old"), id(&s, "pending"));
        let mut sim = Simulation::new(&s);
        sim.remove(old);
        assert!(sim.check(pending, 0).is_err());
        assert_eq!(sim.schedule_settled(pending, &[0]).unwrap().node, 0);
        // later replacements still see old terminating
        assert!(sim.is_lingering(old));
        assert_eq!(sim.load(0).cpu, 1000);
    }

    #[test]
    fn replacements_queue_by_priority_then_creation() {
        let s = snapshot(
            vec![node("n").build()],
            vec![
                pod("d", "low").node("n").priority(1).build(),
                pod("d", "none").node("n").build(),
                pod("d", "high").node("n").priority(100).build(),
                pod("d", "low-later").node("n").priority(1).build(),
                pod("d", "high-later").node("n").priority(100).build(),
            ],
        );
        let mut order: Vec<PodId> = ["low", "none", "high", "low-later", "high-later"]
            .iter()
            .map(|n| id(&s, n))
            .collect();
        queue_order(&s, &mut order);
        let names: Vec<&str> = order.iter().map(|&p| &*s.pod(p).name).collect();
        assert_eq!(names, ["high", "high-later", "low", "low-later", "none"]);
    }

    #[test]
    fn feasible_nodes_to_find_as_kube_scheduler() {
        assert_eq!(feasible_nodes_to_find(0), 0);
        assert_eq!(feasible_nodes_to_find(99), 99);
        assert_eq!(feasible_nodes_to_find(100), 100);
        assert_eq!(feasible_nodes_to_find(1000), 420);
        assert_eq!(feasible_nodes_to_find(5000), 500);
        assert_eq!(feasible_nodes_to_find(10_000), 500);
    }

    #[test]
    fn destination_prefers_the_least_allocated_node() {
        let s = snapshot(
            vec![
                node("busy").cpu(4000).memory(8 << 30).build(),
                node("idle").cpu(4000).memory(8 << 30).build(),
                node("src").unschedulable().build(),
            ],
            vec![
                pod("d", "x").node("busy").cpu(3000).memory(6 << 30).build(),
                pod("d", "in").node("src").cpu(100).memory(1 << 20).build(),
            ],
        );
        let mut sim = Simulation::new(&s);
        let p = id(&s, "in");
        sim.remove(p);
        let nodes = [s.node_id("busy").unwrap(), s.node_id("idle").unwrap()];
        assert_eq!(sim.destination(p, &nodes).unwrap(), nodes[1]);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        struct N {
            cpu: i64,
            pods: i64,
            zone: u8,
            tainted: bool,
        }

        #[derive(Debug, Clone)]
        struct P {
            cpu: i64,
            app: u8,
            port: bool,
            anti: bool,
            spread: bool,
            tolerates: bool,
        }

        fn n() -> impl Strategy<Value = N> {
            (
                prop::sample::select(vec![500i64, 1000, 2000]),
                1i64..5,
                0u8..3,
                prop::bool::weighted(0.2),
            )
                .prop_map(|(cpu, pods, zone, tainted)| N {
                    cpu,
                    pods,
                    zone,
                    tainted,
                })
        }

        fn p() -> impl Strategy<Value = P> {
            (
                prop::sample::select(vec![0i64, 100, 300, 700]),
                0u8..3,
                prop::bool::weighted(0.2),
                prop::bool::weighted(0.2),
                prop::bool::weighted(0.3),
                prop::bool::weighted(0.3),
            )
                .prop_map(|(cpu, app, port, anti, spread, tolerates)| P {
                    cpu,
                    app,
                    port,
                    anti,
                    spread,
                    tolerates,
                })
        }

        /// Nodes n00.., and every pod on an unschedulable `zz-src` node, to be placed in
        /// order. Spread pods are app 9 in their own group.
        fn cluster(nodes: &[N], pods: &[P]) -> ClusterSnapshot {
            let mut ns: Vec<Node> = nodes
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let name = format!("n{i:02}");
                    let mut b = node(&name)
                        .cpu(x.cpu)
                        .pods(x.pods)
                        .label("kubernetes.io/hostname", &name)
                        .label("zone", &format!("z{}", x.zone));
                    if x.tainted {
                        b = b.taint("t", "", TaintEffect::NoSchedule);
                    }
                    b.build()
                })
                .collect();
            ns.push(
                node("zz-src")
                    .cpu(1_000_000)
                    .pods(1000)
                    .unschedulable()
                    .build(),
            );
            let ps = pods
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    let app = if x.spread { 9 } else { x.app };
                    let mut b = pod("d", &format!("p{i:02}"))
                        .node("zz-src")
                        .cpu(x.cpu)
                        .label("app", &app.to_string());
                    if x.port {
                        b = b.host_port(8080);
                    }
                    if x.anti {
                        b = b.anti_affinity(affinity_term(
                            "kubernetes.io/hostname",
                            "app",
                            &app.to_string(),
                        ));
                    }
                    if x.spread {
                        b = b.spread(1, "zone", DoNotSchedule, "app", "9");
                    }
                    if x.tolerates {
                        b = b.toleration("t", "", None);
                    }
                    b.build()
                })
                .collect();
            snapshot(ns, ps)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            /// Placing pods one after another never overcommits a node, never puts two
            /// users of a host port or two pods that refuse each other on one node, never
            /// puts a pod on a taint it does not tolerate, and keeps zone spread within its
            /// skew; a pod that fits nowhere fails every node's check.
            #[test]
            fn cumulative_placements_respect_every_filter(
                nodes in prop::collection::vec(n(), 1..6),
                pods in prop::collection::vec(p(), 1..14),
            ) {
                let s = cluster(&nodes, &pods);
                let targets: Vec<NodeId> = (0..nodes.len() as NodeId).collect();
                let mut sim = Simulation::new(&s);
                for id in 0..pods.len() as PodId {
                    sim.remove(id);
                }
                let mut spread_zones: FxHashMap<String, i64> = FxHashMap::default();
                for x in &nodes {
                    spread_zones.entry(format!("z{}", x.zone)).or_insert(0);
                }
                for id in 0..pods.len() as PodId {
                    match sim.schedule(id, &targets) {
                        Ok(dest) => {
                            let node = s.node(dest);
                            let spec = &pods[id as usize];
                            prop_assert!(sim.load(dest).cpu <= node.allocatable.cpu);
                            prop_assert!(sim.load(dest).pods <= node.allocatable.pods);
                            prop_assert!(!nodes[dest as usize].tainted || spec.tolerates);
                            let here: Vec<&Pod> =
                                sim.placed(dest).iter().map(|&q| s.pod(q)).collect();
                            let ports = here.iter().filter(|q| !q.host_ports.is_empty()).count();
                            prop_assert!(ports <= 1, "host port used twice on {}", node.name);
                            for a in &here {
                                for b in &here {
                                    if std::ptr::eq(*a, *b) {
                                        continue;
                                    }
                                    let refuses = a.affinity.as_ref().is_some_and(|x| {
                                        !x.pod_anti_affinity_required.is_empty()
                                    });
                                    prop_assert!(
                                        !(refuses && a.labels.get("app") == b.labels.get("app")),
                                        "{} and {} share {}", a.name, b.name, node.name
                                    );
                                }
                            }
                            if spec.spread {
                                let z = node.labels.get("zone").unwrap().to_string();
                                *spread_zones.get_mut(&z).unwrap() += 1;
                                let min = spread_zones.values().min().copied().unwrap();
                                let max = spread_zones.values().max().copied().unwrap();
                                prop_assert!(max - min <= 1, "{spread_zones:?}");
                            }
                        }
                        Err(nofit) => {
                            prop_assert_eq!(nofit.nodes.len(), targets.len());
                            for &t in &targets {
                                prop_assert!(sim.check(id, t).is_err());
                            }
                        }
                    }
                }
            }
        }
    }
}
