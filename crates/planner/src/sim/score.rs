//! kube-scheduler's score plugins (v1.36), ported: each plugin's raw score for a node, its
//! normalisation over the feasible nodes, and its weight in the sum that picks the node.
//!
//! | plugin | raw score | normalised | default weight |
//! |---|---|---|---|
//! | NodeResourcesFit | LeastAllocated (default), MostAllocated or RequestedToCapacityRatio over its resources (cpu and memory, weight 1 each), with non-zero requests (100m cpu, 200Mi memory for a pod that asks for none) | as is | 1 |
//! | NodeResourcesBalancedAllocation | how much the node's balance across the resources improves with the pod (real requests) | as is | 1 |
//! | TaintToleration | untolerated PreferNoSchedule taints | reversed: fewest gets 100 | 3 |
//! | NodeAffinity | sum of the matching preferred terms' weights | max gets 100 | 2 |
//! | InterPodAffinity | preferred (anti-)affinity of the pod to existing pods and of existing pods to the pod, plus existing pods' required affinity (`hardPodAffinityWeight`) | min-max to 0..100 | 2 |
//! | PodTopologySpread | ScheduleAnyway constraints, or the default constraints (hostname 3, zone 5) for a pod without its own | fewest matching pods gets 100 | 2 |
//! | ImageLocality | sizes of the pod's images already on the node, scaled by how many nodes have them | as is | 1 |
//!
//! The sum ranks the nodes; kube-scheduler takes one of the best at random, so every node
//! with the best sum is an equally likely destination ([`Ranking`]).
//!
//! What kube-scheduler knows that the snapshot does not, and what is used instead: requests
//! per container (the non-zero defaults are applied per pod), Services selecting a pod (the
//! default spread selector is the pod's controller: ReplicaSet, StatefulSet or
//! ReplicationController), image volumes.

use super::{term_matches_pod, tolerated};
use crate::snapshot::{
    ClusterSnapshot, InclusionPolicy, NodeId, Pod, PodId, Resources, TaintEffect,
    TopologySpreadConstraint, WhenUnsatisfiable,
};
use rustc_hash::FxHashMap;

/// kube-scheduler's `MaxNodeScore`.
pub(crate) const MAX_NODE_SCORE: i64 = 100;
/// The most a RequestedToCapacityRatio shape point may score (`MaxCustomPriorityScore`).
pub(crate) const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;
/// What kube-scheduler counts for a pod without cpu or memory requests, in scoring only.
pub(crate) const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// What kube-scheduler counts for a pod without a memory request, in scoring only: 200 MiB.
pub(crate) const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;
/// kube-scheduler's well-known topology label of a node: its hostname.
pub(crate) const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// kube-scheduler's well-known topology label of a node: its zone.
pub(crate) const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
/// ImageLocality's thresholds: 23 MB and 1000 MB per container.
const IMAGE_MIN_THRESHOLD: i64 = 23 * 1024 * 1024;
const IMAGE_MAX_CONTAINER_THRESHOLD: i64 = 1000 * 1024 * 1024;

/// The score plugin that prefers nodes by their free (or used) resources.
pub(crate) const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
/// The score plugin that prefers nodes whose resources are used alike.
pub(crate) const BALANCED_ALLOCATION: &str = "NodeResourcesBalancedAllocation";
/// The score plugin that prefers nodes with fewer PreferNoSchedule taints the pod does not tolerate.
pub(crate) const TAINT_TOLERATION: &str = "TaintToleration";
/// The score plugin that prefers nodes matching the pod's preferred node affinity.
pub(crate) const NODE_AFFINITY: &str = "NodeAffinity";
/// The score plugin of preferred inter-pod affinity and anti-affinity.
pub(crate) const INTER_POD_AFFINITY: &str = "InterPodAffinity";
/// The score plugin of soft topology spread constraints.
pub(crate) const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";
/// The score plugin that prefers nodes holding the pod's images.
pub(crate) const IMAGE_LOCALITY: &str = "ImageLocality";

/// Every score plugin, in kube-scheduler's default order.
pub(crate) const SCORE_PLUGINS: [&str; 7] = [
    TAINT_TOLERATION,
    NODE_AFFINITY,
    NODE_RESOURCES_FIT,
    POD_TOPOLOGY_SPREAD,
    INTER_POD_AFFINITY,
    BALANCED_ALLOCATION,
    IMAGE_LOCALITY,
];

/// One resource a resource scorer looks at, with its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSpec {
    /// The resource's name (`cpu`, `memory`, an extended resource).
    pub name: Box<str>,
    /// Its weight among the scorer's resources.
    pub weight: i64,
}

impl ResourceSpec {
    /// A resource and its weight.
    pub fn new(name: &str, weight: i64) -> Self {
        ResourceSpec {
            name: name.into(),
            weight,
        }
    }
}

/// cpu and memory, weight 1 each: both resource scorers' default.
pub(crate) fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

/// NodeResourcesFit's `scoringStrategy.type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScoringStrategy {
    /// `LeastAllocated`: nodes with more left free score higher (the default).
    LeastAllocated,
    /// `MostAllocated`: nodes with more requested score higher.
    MostAllocated,
    /// The shape: (utilization 0..=100, score 0..=10) points, utilization increasing.
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

/// The default topology spread constraints for pods without their own
/// (`PodTopologySpreadArgs.defaultingType`).
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultConstraints {
    /// kube-scheduler's built-in ones: hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway.
    System,
    /// `defaultingType: List` with these `defaultConstraints` (possibly none).
    List(Vec<TopologySpreadConstraint>),
}

/// What one scheduler profile scores with: each plugin's weight (0: disabled) and args.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreProfile {
    /// NodeResourcesFit's weight.
    pub fit_weight: i64,
    /// `NodeResourcesFitArgs.scoringStrategy.type` and its shape.
    pub fit_strategy: ScoringStrategy,
    /// `NodeResourcesFitArgs.scoringStrategy.resources`.
    pub fit_resources: Vec<ResourceSpec>,
    /// NodeResourcesBalancedAllocation's weight.
    pub balanced_weight: i64,
    /// `NodeResourcesBalancedAllocationArgs.resources`.
    pub balanced_resources: Vec<ResourceSpec>,
    /// TaintToleration's weight.
    pub taint_toleration_weight: i64,
    /// NodeAffinity's weight.
    pub node_affinity_weight: i64,
    /// InterPodAffinity's weight.
    pub inter_pod_affinity_weight: i64,
    /// `InterPodAffinityArgs.hardPodAffinityWeight` (default 1).
    pub hard_pod_affinity_weight: i64,
    /// `InterPodAffinityArgs.ignorePreferredTermsOfExistingPods`.
    pub ignore_preferred_terms_of_existing_pods: bool,
    /// PodTopologySpread's weight.
    pub topology_spread_weight: i64,
    /// `PodTopologySpreadArgs.defaultingType` and `defaultConstraints`.
    pub default_constraints: DefaultConstraints,
    /// ImageLocality's weight.
    pub image_locality_weight: i64,
}

impl Default for ScoreProfile {
    /// kube-scheduler's default profile.
    fn default() -> Self {
        ScoreProfile {
            fit_weight: 1,
            fit_strategy: ScoringStrategy::LeastAllocated,
            fit_resources: default_resources(),
            balanced_weight: 1,
            balanced_resources: default_resources(),
            taint_toleration_weight: 3,
            node_affinity_weight: 2,
            inter_pod_affinity_weight: 2,
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
            topology_spread_weight: 2,
            default_constraints: DefaultConstraints::System,
            image_locality_weight: 1,
        }
    }
}

impl ScoreProfile {
    /// A plugin's weight by its name (0: disabled or not a score plugin).
    pub fn weight(&self, plugin: &str) -> i64 {
        match plugin {
            NODE_RESOURCES_FIT => self.fit_weight,
            BALANCED_ALLOCATION => self.balanced_weight,
            TAINT_TOLERATION => self.taint_toleration_weight,
            NODE_AFFINITY => self.node_affinity_weight,
            INTER_POD_AFFINITY => self.inter_pod_affinity_weight,
            POD_TOPOLOGY_SPREAD => self.topology_spread_weight,
            IMAGE_LOCALITY => self.image_locality_weight,
            _ => 0,
        }
    }

    /// Sets a plugin's weight by its name; false when it is not a score plugin.
    pub(crate) fn set_weight(&mut self, plugin: &str, weight: i64) -> bool {
        let w = match plugin {
            NODE_RESOURCES_FIT => &mut self.fit_weight,
            BALANCED_ALLOCATION => &mut self.balanced_weight,
            TAINT_TOLERATION => &mut self.taint_toleration_weight,
            NODE_AFFINITY => &mut self.node_affinity_weight,
            INTER_POD_AFFINITY => &mut self.inter_pod_affinity_weight,
            POD_TOPOLOGY_SPREAD => &mut self.topology_spread_weight,
            IMAGE_LOCALITY => &mut self.image_locality_weight,
            _ => return false,
        };
        *w = weight;
        true
    }
}

// ---- the arithmetic, as kube-scheduler has it ----

/// `leastRequestedScore`: the share of the node left free, 0..=100.
pub(crate) fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// `mostRequestedScore`: the share of the node requested, 0..=100.
pub(crate) fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

/// `BuildBrokenLinearFunction`: the shape's points joined by straight lines, flat outside.
pub(crate) fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for (i, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if i == 0 {
                return s;
            }
            let (pu, ps) = shape[i - 1];
            return ps + (s - ps) * (p - pu) / (u - pu);
        }
    }
    shape.last().map_or(0, |&(_, s)| s)
}

/// A resource scorer's score of a node: `requested` (with the pod) and `allocatable` per
/// resource, weighted; resources the node has none of are left out.
pub(crate) fn resource_strategy_score(
    strategy: &ScoringStrategy,
    weights: &[i64],
    requested: &[i64],
    allocatable: &[i64],
) -> i64 {
    let (mut score, mut weight_sum) = (0i64, 0i64);
    match strategy {
        ScoringStrategy::LeastAllocated | ScoringStrategy::MostAllocated => {
            for i in 0..requested.len() {
                if allocatable[i] == 0 {
                    continue;
                }
                let s = if *strategy == ScoringStrategy::LeastAllocated {
                    least_requested_score(requested[i], allocatable[i])
                } else {
                    most_requested_score(requested[i], allocatable[i])
                };
                score += s * weights[i];
                weight_sum += weights[i];
            }
            if weight_sum == 0 {
                return 0;
            }
            score / weight_sum
        }
        ScoringStrategy::RequestedToCapacityRatio(shape) => {
            // the shape's scores scaled from 0..=10 to 0..=100
            let scaled: Vec<(i64, i64)> = shape
                .iter()
                .map(|&(u, s)| (u, s * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE)))
                .collect();
            for i in 0..requested.len() {
                if allocatable[i] == 0 {
                    continue;
                }
                let s = if requested[i] > allocatable[i] {
                    broken_linear(&scaled, 100)
                } else {
                    broken_linear(&scaled, requested[i] * 100 / allocatable[i])
                };
                if s > 0 {
                    score += s * weights[i];
                    weight_sum += weights[i];
                }
            }
            if weight_sum == 0 {
                return 0;
            }
            (score as f64 / weight_sum as f64).round() as i64
        }
    }
}

/// `balancedResourceScore`: 100 times one minus the standard deviation of the requested
/// fractions (each at most 1).
pub(crate) fn balanced_resource_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let fractions: Vec<f64> = requested
        .iter()
        .zip(allocatable)
        .filter(|(_, a)| **a != 0)
        .map(|(r, a)| (*r as f64 / *a as f64).min(1.0))
        .collect();
    let std = match fractions.len() {
        0 | 1 => 0.0,
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            let sum: f64 = fractions.iter().map(|f| (f - mean) * (f - mean)).sum();
            (sum / n as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// `balancedResourceScorer`: how the node's balance changes with the pod, 50..=100 (75: no
/// change).
pub(crate) fn balanced_allocation_score(
    requested: &[i64],
    allocated: &[i64],
    allocatable: &[i64],
) -> i64 {
    let with = balanced_resource_score(requested, allocatable);
    let without = balanced_resource_score(allocated, allocatable);
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with - without) / 2
}

/// `DefaultNormalizeScore`: scaled so that the highest is `max` (reversed: the highest gets
/// 0, the lowest `max`); all zero stays zero (reversed: all `max`).
pub(crate) fn default_normalize(max: i64, reverse: bool, scores: &mut [i64]) {
    let top = scores.iter().copied().max().unwrap_or(0).max(0);
    if top == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max);
        }
        return;
    }
    for s in scores.iter_mut() {
        let v = max * *s / top;
        *s = if reverse { max - v } else { v };
    }
}

/// InterPodAffinity's normalisation: min to 0, max to 100, linearly (truncated).
pub(crate) fn min_max_normalize(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    let diff = max - min;
    for s in scores.iter_mut() {
        *s = if diff > 0 {
            (MAX_NODE_SCORE as f64 * ((*s - min) as f64 / diff as f64)) as i64
        } else {
            0
        };
    }
}

/// PodTopologySpread's normalisation: the fewest matching pods gets 100; ignored nodes
/// (None) get 0.
pub(crate) fn spread_normalize(scores: &[Option<i64>]) -> Vec<i64> {
    let valid = scores.iter().flatten();
    let min = valid.clone().min().copied().unwrap_or(i64::MAX);
    let max = valid.max().copied().unwrap_or(0).max(0);
    scores
        .iter()
        .map(|s| match *s {
            None => 0,
            Some(_) if max == 0 => MAX_NODE_SCORE,
            Some(s) => MAX_NODE_SCORE * (max + min - s) / max,
        })
        .collect()
}

/// `topologyNormalizingWeight`: ln(domains + 2).
pub(crate) fn topology_normalizing_weight(size: usize) -> f64 {
    ((size + 2) as f64).ln()
}

/// `scoreForCount`.
pub(crate) fn score_for_count(count: i64, max_skew: i32, weight: f64) -> f64 {
    count as f64 * weight + f64::from(max_skew - 1)
}

/// `normalizedImageName`: `:latest` added to an image without a tag.
pub(crate) fn normalized_image_name(name: &str) -> std::borrow::Cow<'_, str> {
    let colon = name.rfind(':').map_or(-1, |i| i as i64);
    let slash = name.rfind('/').map_or(-1, |i| i as i64);
    if colon <= slash {
        format!("{name}:latest").into()
    } else {
        name.into()
    }
}

/// `scaledImageScore`: an image's size times the share of nodes that have it.
pub(crate) fn scaled_image_score(size: i64, nodes_with_image: usize, total_nodes: usize) -> i64 {
    (size as f64 * (nodes_with_image as f64 / total_nodes as f64)) as i64
}

/// `calculatePriority`: the summed image scores, clamped to 23 MB ..= 1000 MB per container,
/// scaled to 0..=100.
pub(crate) fn image_priority(sum: i64, containers: usize) -> i64 {
    let max = IMAGE_MAX_CONTAINER_THRESHOLD * containers as i64;
    let sum = if sum < IMAGE_MIN_THRESHOLD {
        IMAGE_MIN_THRESHOLD
    } else if sum > max {
        max
    } else {
        sum
    };
    MAX_NODE_SCORE * (sum - IMAGE_MIN_THRESHOLD) / (max - IMAGE_MIN_THRESHOLD)
}

// ---- the plugins over the simulation ----

/// What the score plugins read of the cluster, as kube-scheduler sees it while it schedules
/// one pod (the placement simulation gives it, as the plan so far leaves the cluster):
/// requests per node, the pods that count for affinity and spread, where images are.
pub(crate) trait ClusterView<'s> {
    fn snap(&self) -> &'s ClusterSnapshot;
    /// How many nodes of the snapshot have an image (by one of its names).
    fn nodes_with_image(&self, name: &str) -> usize;
    /// What the node requests while `pod`'s replacement is scheduled, without `pod` itself
    /// unless it is still counted there.
    fn load_without(&self, pod: PodId, node: NodeId) -> Resources;
    /// The node's cpu and memory requests as scoring counts them (non-zero defaults), as
    /// [`ClusterView::load_without`] counts pods.
    fn non_zero_without(&self, pod: PodId, node: NodeId) -> (i64, i64);
    /// The pods of a namespace that name `uid` as their controller, each with its node: the
    /// pods a default spread constraint counts, without walking the whole namespace.
    fn controller_pods(&self, ns: &str, uid: &str) -> impl Iterator<Item = (PodId, NodeId)>;
    /// The pods of `pod`'s namespace, not terminating, that a spread constraint with
    /// `selector` and the matchLabelKeys values `match_labels` counts
    /// ([`super::spread_selects`]), each with its node; picked once per simulation.
    fn selected_pods(
        &self,
        pod: PodId,
        selector: Option<&crate::labels::Selector>,
        match_labels: &[(&str, &str)],
    ) -> impl Iterator<Item = (PodId, NodeId)>;
    /// The pods with pod (anti-)affinity terms seen while `subject` is scheduled.
    fn affinity_pods(&self, subject: PodId) -> impl Iterator<Item = (PodId, NodeId)>;
    /// Every (pod, node) seen while `subject` is scheduled.
    fn all_pods(&self, subject: PodId) -> impl Iterator<Item = (PodId, NodeId)>;
}

/// Each enabled plugin's weighted, normalised score of each feasible node, in the order of
/// `feasible`; plugins with weight 0 are left out.
pub(crate) fn plugin_scores<'s>(
    sim: &impl ClusterView<'s>,
    profile: &ScoreProfile,
    pod: PodId,
    feasible: &[NodeId],
) -> Vec<(&'static str, Vec<i64>)> {
    let mut out = Vec::new();
    for plugin in SCORE_PLUGINS {
        let weight = profile.weight(plugin);
        if weight == 0 {
            continue;
        }
        let mut scores = match plugin {
            NODE_RESOURCES_FIT => fit_scores(sim, profile, pod, feasible),
            BALANCED_ALLOCATION => balanced_scores(sim, profile, pod, feasible),
            TAINT_TOLERATION => taint_scores(sim, pod, feasible),
            NODE_AFFINITY => node_affinity_scores(sim, pod, feasible),
            INTER_POD_AFFINITY => inter_pod_affinity_scores(sim, profile, pod, feasible),
            POD_TOPOLOGY_SPREAD => spread_scores(sim, profile, pod, feasible),
            _ => image_scores(sim, pod, feasible),
        };
        scores.iter_mut().for_each(|s| *s *= weight);
        out.push((plugin, scores));
    }
    out
}

/// The final score of each feasible node: the sum of [`plugin_scores`].
pub(crate) fn total_scores<'s>(
    sim: &impl ClusterView<'s>,
    profile: &ScoreProfile,
    pod: PodId,
    feasible: &[NodeId],
) -> Vec<i64> {
    let mut total = vec![0i64; feasible.len()];
    for (_, scores) in plugin_scores(sim, profile, pod, feasible) {
        for (t, s) in total.iter_mut().zip(scores) {
            *t += s;
        }
    }
    total
}

/// The nodes ranked: the destination (the best score; among equals, the first by name, as
/// the simulator must pick one) and the alternatives (every other node with the same best
/// score, which kube-scheduler is as likely to pick).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ranking {
    /// The destination.
    pub best: NodeId,
    /// Every other node with the best score.
    pub alternatives: Vec<NodeId>,
    /// The best score.
    pub score: i64,
}

/// Ranks scored nodes ([`Ranking`]); `scored` is not empty.
pub(crate) fn rank<'s>(sim: &impl ClusterView<'s>, feasible: &[NodeId], scores: &[i64]) -> Ranking {
    let top = scores.iter().copied().max().expect("feasible is not empty");
    let snap = sim.snap();
    let mut tied: Vec<NodeId> = feasible
        .iter()
        .zip(scores)
        .filter(|(_, s)| **s == top)
        .map(|(n, _)| *n)
        .collect();
    tied.sort_by(|a, b| snap.node(*a).name.cmp(&snap.node(*b).name));
    let best = tied.remove(0);
    Ranking {
        best,
        alternatives: tied,
        score: top,
    }
}

/// Whether a resource is a scalar one (extended, hugepages, ...): scored only when the pod
/// asks for it.
fn is_scalar(name: &str) -> bool {
    !matches!(name, "cpu" | "memory" | "ephemeral-storage" | "pods")
}

/// The pod's requests for `resources`: with kube-scheduler's non-zero defaults for cpu and
/// memory when `non_zero`.
fn pod_requests(pod: &Pod, resources: &[ResourceSpec], non_zero: bool) -> Vec<i64> {
    resources
        .iter()
        .map(|r| {
            let v = pod.requests.get(&r.name);
            match &*r.name {
                "cpu" if non_zero && v == 0 => DEFAULT_MILLI_CPU_REQUEST,
                "memory" if non_zero && v == 0 => DEFAULT_MEMORY_REQUEST,
                _ => v,
            }
        })
        .collect()
}

/// `calculateNodeAllocatableRequest`: (requested with the pod, allocated, allocatable) per
/// resource; a resource left at 0 allocatable is not scored.
fn node_vectors<'s>(
    sim: &impl ClusterView<'s>,
    pod: PodId,
    node: NodeId,
    resources: &[ResourceSpec],
    pod_req: &[i64],
    non_zero: bool,
) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let n = resources.len();
    let (mut requested, mut allocated, mut allocatable) = (vec![0; n], vec![0; n], vec![0; n]);
    let alloc = &sim.snap().node(node).allocatable;
    let load = sim.load_without(pod, node);
    let nz = sim.non_zero_without(pod, node);
    for (i, r) in resources.iter().enumerate() {
        if pod_req[i] == 0 && is_scalar(&r.name) {
            continue;
        }
        let a = alloc.get(&r.name);
        if a == 0 {
            continue;
        }
        let used = match &*r.name {
            "cpu" if non_zero => nz.0,
            "memory" if non_zero => nz.1,
            name => load.get(name),
        };
        allocatable[i] = a;
        allocated[i] = used;
        requested[i] = used + pod_req[i];
    }
    (requested, allocated, allocatable)
}

fn fit_scores<'s>(
    sim: &impl ClusterView<'s>,
    p: &ScoreProfile,
    pod: PodId,
    feasible: &[NodeId],
) -> Vec<i64> {
    let spec = sim.snap().pod(pod);
    let req = pod_requests(spec, &p.fit_resources, true);
    let weights: Vec<i64> = p.fit_resources.iter().map(|r| r.weight).collect();
    feasible
        .iter()
        .map(|&n| {
            let (requested, _, allocatable) =
                node_vectors(sim, pod, n, &p.fit_resources, &req, true);
            resource_strategy_score(&p.fit_strategy, &weights, &requested, &allocatable)
        })
        .collect()
}

fn balanced_scores<'s>(
    sim: &impl ClusterView<'s>,
    p: &ScoreProfile,
    pod: PodId,
    feasible: &[NodeId],
) -> Vec<i64> {
    let spec = sim.snap().pod(pod);
    let req = pod_requests(spec, &p.balanced_resources, false);
    if req.iter().all(|&r| r == 0) {
        // a best-effort pod: the plugin skips it
        return vec![0; feasible.len()];
    }
    feasible
        .iter()
        .map(|&n| {
            let (requested, allocated, allocatable) =
                node_vectors(sim, pod, n, &p.balanced_resources, &req, false);
            balanced_allocation_score(&requested, &allocated, &allocatable)
        })
        .collect()
}

fn taint_scores<'s>(sim: &impl ClusterView<'s>, pod: PodId, feasible: &[NodeId]) -> Vec<i64> {
    let spec = sim.snap().pod(pod);
    let tolerations: Vec<_> = spec
        .tolerations
        .iter()
        .filter(|t| t.effect.is_none_or(|e| e == TaintEffect::PreferNoSchedule))
        .cloned()
        .collect();
    let mut scores: Vec<i64> = feasible
        .iter()
        .map(|&n| {
            sim.snap()
                .node(n)
                .taints
                .iter()
                .filter(|t| {
                    t.effect == TaintEffect::PreferNoSchedule && !tolerated(&tolerations, t)
                })
                .count() as i64
        })
        .collect();
    default_normalize(MAX_NODE_SCORE, true, &mut scores);
    scores
}

fn node_affinity_scores<'s>(
    sim: &impl ClusterView<'s>,
    pod: PodId,
    feasible: &[NodeId],
) -> Vec<i64> {
    let spec = sim.snap().pod(pod);
    let mut scores: Vec<i64> = feasible
        .iter()
        .map(|&n| super::preferred_node_affinity_score(spec, sim.snap().node(n)))
        .collect();
    default_normalize(MAX_NODE_SCORE, false, &mut scores);
    scores
}

fn inter_pod_affinity_scores<'s>(
    sim: &impl ClusterView<'s>,
    p: &ScoreProfile,
    pod: PodId,
    feasible: &[NodeId],
) -> Vec<i64> {
    let snap = sim.snap();
    let spec = snap.pod(pod);
    let ns_labels = |ns: &str| snap.namespace(ns).map(|n| &n.labels);
    let (pref, anti) = spec.affinity.as_ref().map_or((&[][..], &[][..]), |a| {
        (
            a.pod_affinity_preferred.as_slice(),
            a.pod_anti_affinity_preferred.as_slice(),
        )
    });
    let has_constraints = !pref.is_empty() || !anti.is_empty();
    if p.ignore_preferred_terms_of_existing_pods && !has_constraints {
        return vec![0; feasible.len()];
    }
    let pod_ns_labels = ns_labels(&spec.namespace);
    // (topology key, value) -> score
    let mut topo: FxHashMap<(&'s str, &'s str), i64> = FxHashMap::default();
    let mut add = |key: &'s str, node: NodeId, w: i64| {
        if let Some(v) = snap.node(node).labels.get(key) {
            *topo.entry((key, v)).or_insert(0) += w;
        }
    };
    let mut process = |e: PodId, n: NodeId| {
        if snap.node(n).labels.is_empty() {
            return;
        }
        let ep = snap.pod(e);
        let e_ns = ns_labels(&ep.namespace);
        for t in pref {
            if term_matches_pod(&t.term, &spec.namespace, ep, e_ns) {
                add(&t.term.topology_key, n, i64::from(t.weight));
            }
        }
        for t in anti {
            if term_matches_pod(&t.term, &spec.namespace, ep, e_ns) {
                add(&t.term.topology_key, n, -i64::from(t.weight));
            }
        }
        let Some(a) = &ep.affinity else { return };
        if p.hard_pod_affinity_weight > 0 {
            for t in &a.pod_affinity_required {
                if term_matches_pod(t, &ep.namespace, spec, pod_ns_labels) {
                    add(&t.topology_key, n, p.hard_pod_affinity_weight);
                }
            }
        }
        for t in &a.pod_affinity_preferred {
            if term_matches_pod(&t.term, &ep.namespace, spec, pod_ns_labels) {
                add(&t.term.topology_key, n, i64::from(t.weight));
            }
        }
        for t in &a.pod_anti_affinity_preferred {
            if term_matches_pod(&t.term, &ep.namespace, spec, pod_ns_labels) {
                add(&t.term.topology_key, n, -i64::from(t.weight));
            }
        }
    };
    if has_constraints {
        for (e, n) in sim.all_pods(pod) {
            process(e, n);
        }
    } else {
        for (e, n) in sim.affinity_pods(pod) {
            process(e, n);
        }
    }
    if topo.is_empty() {
        // no pod gave any node a score: the plugin skips the pod
        return vec![0; feasible.len()];
    }
    let mut scores: Vec<i64> = feasible
        .iter()
        .map(|&n| {
            snap.node(n)
                .labels
                .iter()
                .map(|(k, v)| topo.get(&(k, v)).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    min_max_normalize(&mut scores);
    scores
}

/// A soft spread constraint as PodTopologySpread scores it.
struct SoftConstraint<'a> {
    key: &'a str,
    max_skew: i32,
    node_affinity_policy: InclusionPolicy,
    node_taints_policy: InclusionPolicy,
    selects: Selects<'a>,
}

/// Which pods a soft constraint counts.
enum Selects<'a> {
    /// The constraint's labelSelector (None: no pod), and the pod's values of its
    /// matchLabelKeys.
    Labels(Option<&'a crate::labels::Selector>, Vec<(&'a str, &'a str)>),
    /// A default constraint: the pods of the same controller.
    Controller(&'a str),
}

impl Selects<'_> {
    fn matches(&self, q: &Pod) -> bool {
        match self {
            Selects::Labels(sel, keys) => super::spread_selects(*sel, keys, q),
            Selects::Controller(uid) => q.owners.iter().any(|o| o.controller && &*o.uid == *uid),
        }
    }
}

/// kube-scheduler's built-in default constraints.
fn system_default_constraints() -> [(&'static str, i32); 2] {
    [(LABEL_HOSTNAME, 3), (LABEL_ZONE, 5)]
}

/// The soft constraints PodTopologySpread scores a pod with, and whether every node must have
/// all their keys (the pod's own constraints, or defaults given as a list).
fn soft_constraints<'a>(p: &'a ScoreProfile, spec: &'a Pod) -> (Vec<SoftConstraint<'a>>, bool) {
    let own = |c: &'a TopologySpreadConstraint| SoftConstraint {
        key: &c.topology_key,
        max_skew: c.max_skew,
        node_affinity_policy: c.node_affinity_policy,
        node_taints_policy: c.node_taints_policy,
        selects: Selects::Labels(
            c.label_selector.as_ref(),
            c.match_label_keys
                .iter()
                .filter_map(|k| spec.labels.get(k).map(|v| (&**k, v)))
                .collect(),
        ),
    };
    if !spec.topology_spread.is_empty() {
        let cs = spec
            .topology_spread
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
            .map(own)
            .collect();
        return (cs, true);
    }
    // the default selector: the pod's controller, when kube-scheduler knows its selector
    let Some(owner) = spec.owners.iter().find(|o| {
        o.controller
            && matches!(
                &*o.kind,
                "ReplicaSet" | "StatefulSet" | "ReplicationController"
            )
    }) else {
        return (Vec::new(), false);
    };
    let defaulted = |key: &'a str, max_skew: i32| SoftConstraint {
        key,
        max_skew,
        node_affinity_policy: InclusionPolicy::Honor,
        node_taints_policy: InclusionPolicy::Ignore,
        selects: Selects::Controller(&owner.uid),
    };
    match &p.default_constraints {
        DefaultConstraints::System => (
            system_default_constraints()
                .into_iter()
                .map(|(k, s)| defaulted(k, s))
                .collect(),
            false,
        ),
        DefaultConstraints::List(list) => (
            list.iter()
                .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
                .map(|c| SoftConstraint {
                    node_affinity_policy: c.node_affinity_policy,
                    node_taints_policy: c.node_taints_policy,
                    ..defaulted(&c.topology_key, c.max_skew)
                })
                .collect(),
            true,
        ),
    }
}

fn spread_scores<'s>(
    sim: &impl ClusterView<'s>,
    p: &ScoreProfile,
    pod: PodId,
    feasible: &[NodeId],
) -> Vec<i64> {
    let snap = sim.snap();
    let spec = snap.pod(pod);
    let (cs, require_all) = soft_constraints(p, spec);
    if cs.is_empty() {
        return vec![0; feasible.len()];
    }
    let has_keys = |n: NodeId| {
        let labels = &snap.node(n).labels;
        cs.iter().all(|c| labels.get(c.key).is_some())
    };
    let ignored: Vec<bool> = feasible
        .iter()
        .map(|&n| require_all && !has_keys(n))
        .collect();
    let value = |n: NodeId, key: &str| snap.node(n).labels.get(key).unwrap_or("");
    // the domains: the values among the feasible nodes not ignored
    let mut domains: Vec<FxHashMap<&str, i64>> = vec![FxHashMap::default(); cs.len()];
    for (&n, _) in feasible.iter().zip(&ignored).filter(|(_, i)| !**i) {
        for (i, c) in cs.iter().enumerate() {
            if c.key != LABEL_HOSTNAME {
                domains[i].entry(value(n, c.key)).or_insert(0);
            }
        }
    }
    let kept = ignored.iter().filter(|i| !**i).count();
    let weights: Vec<f64> = cs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            topology_normalizing_weight(if c.key == LABEL_HOSTNAME {
                kept
            } else {
                domains[i].len()
            })
        })
        .collect();
    // matching pods per node, per constraint (the pod's namespace, not terminating); only
    // nodes holding some are kept, so a call costs the matching pods, not the cluster's
    // nodes
    let mut per_node: Vec<FxHashMap<NodeId, i64>> = vec![FxHashMap::default(); cs.len()];
    for (i, c) in cs.iter().enumerate() {
        let count = |(q, n): (PodId, NodeId)| {
            if q != pod && !snap.pod(q).terminating && c.selects.matches(snap.pod(q)) {
                *per_node[i].entry(n).or_insert(0) += 1;
            }
        };
        // default constraints select the pod's controller's pods: those, from the snapshot's
        // index by owner; a selector's pods are picked from the namespace once per
        // simulation. Either way not the whole namespace per call (one namespace of 30,000
        // pods made that walk most of a plan's time).
        match &c.selects {
            Selects::Controller(uid) => sim.controller_pods(&spec.namespace, uid).for_each(count),
            Selects::Labels(sel, keys) => sim.selected_pods(pod, *sel, keys).for_each(count),
        }
    }
    // each domain's count, over every node the constraint counts (a node without matching
    // pods adds nothing)
    for (i, c) in cs.iter().enumerate() {
        if c.key == LABEL_HOSTNAME {
            continue;
        }
        for (&n, &count) in &per_node[i] {
            if require_all && !has_keys(n) {
                continue;
            }
            let node = snap.node(n);
            if !super::matches_node_inclusion_policies(
                spec,
                node,
                c.node_affinity_policy,
                c.node_taints_policy,
            ) {
                continue;
            }
            if let Some(d) = domains[i].get_mut(value(n, c.key)) {
                *d += count;
            }
        }
    }
    let raw: Vec<Option<i64>> = feasible
        .iter()
        .zip(&ignored)
        .map(|(&n, &ign)| {
            if ign {
                return None;
            }
            let labels = &snap.node(n).labels;
            let mut score = 0.0;
            for (i, c) in cs.iter().enumerate() {
                let Some(v) = labels.get(c.key) else { continue };
                let count = if c.key == LABEL_HOSTNAME {
                    per_node[i].get(&n).copied().unwrap_or(0)
                } else {
                    domains[i].get(v).copied().unwrap_or(0)
                };
                score += score_for_count(count, c.max_skew, weights[i]);
            }
            Some(score.round() as i64)
        })
        .collect();
    spread_normalize(&raw)
}

fn image_scores<'s>(sim: &impl ClusterView<'s>, pod: PodId, feasible: &[NodeId]) -> Vec<i64> {
    let snap = sim.snap();
    let spec = snap.pod(pod);
    let total = snap.nodes.len();
    let containers = spec.images.len();
    if containers == 0 || total == 0 {
        return vec![0; feasible.len()];
    }
    let names: Vec<_> = spec
        .images
        .iter()
        .map(|i| normalized_image_name(i))
        .collect();
    // how many nodes have each of the pod's images
    let spread: Vec<usize> = names
        .iter()
        .map(|name| sim.nodes_with_image(name))
        .collect();
    if spread.iter().all(|&k| k == 0) {
        return vec![0; feasible.len()];
    }
    feasible
        .iter()
        .map(|&n| {
            let node = snap.node(n);
            let sum = names
                .iter()
                .zip(&spread)
                .filter_map(|(name, &k)| {
                    node.image_size(name)
                        .map(|size| scaled_image_score(size, k, total))
                })
                .sum();
            image_priority(sum, containers)
        })
        .collect()
}

#[cfg(test)]
mod tests;
