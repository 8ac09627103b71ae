//! RemoveDuplicates (balance): spreads the replicas of one owner evenly over the nodes they
//! can run on, as upstream's `pkg/framework/plugins/removeduplicates`.
//!
//! Two pods are duplicates when they are on the same node, in the same namespace, with the
//! same ownerReferences (kind and name of every one) and the same container images. For each
//! owner (namespace, kind, name, sorted images) the plugin counts the owner's pods on all the
//! planning nodes, divides by the number of nodes its duplicates could land on, rounds up
//! (the "upper average"), and on every node evicts the duplicates above that number.
//!
//! What counts, as upstream:
//! - Only pods the evictor accepts are listed: Succeeded and Failed pods, pods outside
//!   `namespaces`, pods the DefaultEvictor's Filter refuses (DaemonSet, mirror, static,
//!   local storage, critical, ... pods) and pods its PreEvictionFilter (nodeFit) refuses are
//!   neither counted nor evicted. Upstream applies both filters while listing, so a pod that
//!   fits nowhere else does not count towards the average either.
//! - Pods without ownerReferences, and pods with an owner whose kind is in
//!   `excludeOwnerKinds`, are skipped.
//! - A pod with several ownerReferences counts for each of them.
//! - Target nodes of an owner: the planning nodes where at least one of its duplicate pods
//!   could be scheduled by nodeSelector, required node affinity and NoSchedule/NoExecute
//!   taints, counting only pods that have more than one such node. With fewer than two target
//!   nodes, the owner is skipped.
//! - Limits: a node whose eviction limit is reached ends that node; the cycle's total limit
//!   ends the plugin; a pod blocked by a namespace limit or a disruption budget is skipped.
//!
//! Where this differs from upstream, on purpose:
//! - Which duplicates go. Upstream keeps the pods its informer happens to list first (map
//!   order). Here the pods of a node are ranked by the framework's eviction order (lowest
//!   priority, then BestEffort before Burstable before Guaranteed, pods with the
//!   prefer-no-eviction annotation last, then namespace/name): the pods latest in that order
//!   stay, the others are evicted, earliest first. With equal priorities and QoS this is plain
//!   namespace/name order.
//! - Owners are handled in sorted order (namespace, kind, name, images) and nodes in the
//!   given order, so the plan never depends on hash-map order.
//! - A cordoned node (`spec.unschedulable`) is a target only for pods that tolerate the
//!   `node.kubernetes.io/unschedulable:NoSchedule` taint. Upstream checks taints only; on a
//!   real cluster the node controller puts that taint on cordoned nodes, so both agree there,
//!   and here a snapshot that has the flag without the taint agrees too.
//! - A pod with two ownerReferences is evicted at most once; upstream's dry-run counts it
//!   once per owner.

use crate::framework::{ArgsError, Attempt, Context, FromArgs, Plugin, PluginArgs};
use crate::plugins::shared::{namespace_allowed, Namespaces};
use crate::policy::null_as_default;
use crate::sim;
use crate::snapshot::{
    ClusterSnapshot, Node, NodeId, NodeSelectorTerm, Pod, PodId, Taint, TaintEffect,
};
use rayon::iter::{IntoParallelRefIterator, ParallelIterator};
use rustc_hash::{FxHashMap, FxHasher};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// The plugin's name in a policy.
pub const NAME: &str = "RemoveDuplicates";

/// The registry entry: a `balance` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::balance::<RemoveDuplicates>(NAME);

/// The taint kube-scheduler reads `spec.unschedulable` as.
const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// `RemoveDuplicatesArgs`. Both fields are optional; no args at all means no restriction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RemoveDuplicatesArgs {
    /// Owner kinds (such as `Job`) whose pods are never treated as duplicates.
    #[serde(deserialize_with = "null_as_default")]
    pub exclude_owner_kinds: Vec<String>,
    /// Namespaces to include or to exclude (only one of the two).
    pub namespaces: Option<Namespaces>,
}

impl PluginArgs for RemoveDuplicatesArgs {
    /// Upstream's `ValidateRemoveDuplicatesArgs`: at most one of include and exclude.
    fn validate(&self) -> Result<(), ArgsError> {
        if let Some(ns) = &self.namespaces {
            ns.validate("namespaces")?;
        }
        Ok(())
    }
}

/// A validated RemoveDuplicates plugin.
#[derive(Debug, Clone)]
pub struct RemoveDuplicates {
    args: RemoveDuplicatesArgs,
}

impl FromArgs for RemoveDuplicates {
    type Args = RemoveDuplicatesArgs;

    fn from_args(args: RemoveDuplicatesArgs) -> Result<Self, ArgsError> {
        Ok(RemoveDuplicates { args })
    }
}

impl RemoveDuplicates {
    /// The plugin's args.
    pub fn args(&self) -> &RemoveDuplicatesArgs {
        &self.args
    }

    /// Upstream's pod listing for this plugin, without the PreEvictionFilter (which
    /// [`Plugin::run`] applies only where it can change the result): active, in scope, owned
    /// by no excluded kind, and accepted by the evictor's Filter.
    fn is_candidate(&self, cx: &Context<'_, '_>, id: PodId) -> bool {
        let pod = cx.snap().pod(id);
        pod.is_active()
            && !pod.owners.is_empty()
            // Every real pod has a container; a pod without images has no duplicate key.
            && !pod.images.is_empty()
            && namespace_allowed(&self.args.namespaces, &pod.namespace)
            && !pod
                .owners
                .iter()
                .any(|o| self.args.exclude_owner_kinds.iter().any(|k| *k == *o.kind))
            && cx.filter(id).is_ok()
    }
}

/// One owner of duplicates: upstream's `podOwner` (namespace, kind, name, images hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct OwnerKey<'s> {
    namespace: &'s str,
    kind: &'s str,
    name: &'s str,
    /// Sorted container images.
    images: &'s [Box<str>],
}

/// One entry of a pod's duplicate key: namespace, owner kind, owner name, image.
type KeyPart<'s> = (&'s str, &'s str, &'s str, &'s str);

/// A pod that may be a duplicate. `key` identifies its full key (one part per
/// (ownerReference, image), sorted): two pods on a node with equal keys are duplicates.
/// `owners` is the range of its owners' ids (one per ownerReference, in order) in
/// [`Interner::cand_owners`].
#[derive(Clone, Copy)]
struct Candidate {
    pod: PodId,
    key: u32,
    owners: (u32, u32),
}

/// No entry in a bucket chain.
const NONE: u32 = u32::MAX;

fn fx_hash<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = FxHasher::default();
    value.hash(&mut h);
    h.finish()
}

/// Gives every distinct owner and every distinct full key a small id, so each pod's key is
/// built and hashed once per run.
struct Interner<'s> {
    owners: Vec<OwnerKey<'s>>,
    owner_ids: FxHashMap<OwnerKey<'s>, u32>,
    /// The owner ids of every candidate, back to back.
    cand_owners: Vec<u32>,
    /// The parts of every distinct full key, back to back; `keys[id]` is its range.
    parts: Vec<KeyPart<'s>>,
    keys: Vec<(u32, u32)>,
    /// Hash of a full key to the first key id with that hash; `next_key` chains the rest.
    key_heads: FxHashMap<u64, u32>,
    next_key: Vec<u32>,
    scratch: Vec<KeyPart<'s>>,
}

impl<'s> Interner<'s> {
    /// Room for `shapes` pods of distinct shapes (each has its key, and usually its owner):
    /// the tables are not regrown, and copied, as they fill.
    fn with_capacity(shapes: usize) -> Self {
        Interner {
            owners: Vec::with_capacity(shapes),
            owner_ids: FxHashMap::with_capacity_and_hasher(shapes, Default::default()),
            cand_owners: Vec::with_capacity(shapes),
            parts: Vec::with_capacity(shapes),
            keys: Vec::with_capacity(shapes),
            key_heads: FxHashMap::with_capacity_and_hasher(shapes, Default::default()),
            next_key: Vec::with_capacity(shapes),
            scratch: Vec::new(),
        }
    }

    fn candidate(&mut self, id: PodId, pod: &'s Pod) -> Candidate {
        let start = self.cand_owners.len() as u32;
        for key in owner_keys(pod) {
            let next = self.owners.len() as u32;
            let oid = *self.owner_ids.entry(key).or_insert_with(|| {
                self.owners.push(key);
                next
            });
            self.cand_owners.push(oid);
        }
        let owners = (start, self.cand_owners.len() as u32);

        self.scratch.clear();
        self.scratch.extend(pod.owners.iter().flat_map(|o| {
            pod.images
                .iter()
                .map(move |i| (&*pod.namespace, &*o.kind, &*o.name, &**i))
        }));
        self.scratch.sort_unstable();
        let hash = fx_hash(&self.scratch[..]);
        let mut kid = self.key_heads.get(&hash).copied().unwrap_or(NONE);
        while kid != NONE {
            let (a, b) = self.keys[kid as usize];
            if self.parts[a as usize..b as usize] == self.scratch[..] {
                break;
            }
            kid = self.next_key[kid as usize];
        }
        if kid == NONE {
            kid = self.keys.len() as u32;
            let a = self.parts.len() as u32;
            self.parts.extend_from_slice(&self.scratch);
            self.keys.push((a, self.parts.len() as u32));
            let head = self.key_heads.entry(hash).or_insert(NONE);
            self.next_key.push(*head);
            *head = kid;
        }
        Candidate {
            pod: id,
            key: kid,
            owners,
        }
    }

    fn owners_of(&self, c: &Candidate) -> &[u32] {
        &self.cand_owners[c.owners.0 as usize..c.owners.1 as usize]
    }
}

fn owner_keys(pod: &Pod) -> impl Iterator<Item = OwnerKey<'_>> {
    pod.owners.iter().map(move |o| OwnerKey {
        namespace: &pod.namespace,
        kind: &o.kind,
        name: &o.name,
        images: &pod.images,
    })
}

/// The duplicates of one owner on one node (`node` indexes the plugin's node list), best
/// kept first: upstream's `duplicatePods[owner][node]`, without the first pod of each key.
type NodeDuplicates = Vec<(usize, Vec<PodId>)>;

impl Plugin for RemoveDuplicates {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        let (interner, mut per_node) = self.candidates(cx, nodes);
        let owner_count = interner.owners.len();
        if !keep_owners_with_duplicates(cx, &interner, &mut per_node) {
            return;
        }
        let mut seen_on: Vec<u32> = vec![0; interner.keys.len()];

        // 3. Upstream's count: pods per owner over all nodes, and the duplicates per owner
        // and node (every pod after the first with the same full key).
        let mut occurrences: Vec<u32> = vec![0; owner_count];
        let mut duplicates: Vec<NodeDuplicates> = vec![Vec::new(); owner_count];
        for (ni, cands) in per_node.iter().enumerate() {
            let stamp = ni as u32 + 1;
            for c in cands {
                let owners = interner.owners_of(c);
                for &o in owners {
                    occurrences[o as usize] += 1;
                }
                let seen = &mut seen_on[c.key as usize];
                if *seen != stamp {
                    *seen = stamp;
                    continue;
                }
                for &o in owners {
                    let on_nodes = &mut duplicates[o as usize];
                    match on_nodes.last_mut() {
                        Some((n, pods)) if *n == ni => pods.push(c.pod),
                        _ => on_nodes.push((ni, vec![c.pod])),
                    }
                }
            }
        }
        let mut order: Vec<u32> = (0..owner_count as u32)
            .filter(|&o| !duplicates[o as usize].is_empty())
            .collect();
        order.sort_unstable_by_key(|&o| interner.owners[o as usize]);

        // 4. Evict what exceeds the upper average on each node.
        let mut targets_cache = TargetNodes::new(snap, nodes);
        for o in order {
            let owner = &interner.owners[o as usize];
            let on_nodes = &duplicates[o as usize];
            let targets = targets_cache.count(on_nodes);
            if targets < 2 {
                tracing::debug!(
                    owner = %owner_display(owner),
                    targets,
                    "fewer than two nodes where the duplicates could land, skipping"
                );
                continue;
            }
            let total = occurrences[o as usize];
            let upper_avg = total.div_ceil(targets as u32) as usize;
            tracing::debug!(owner = %owner_display(owner), total, targets, upper_avg, "duplicates found");
            'nodes: for (ni, dups) in on_nodes {
                // The duplicates do not include the first pod of their key.
                let on_node = dups.len() + 1;
                if on_node <= upper_avg {
                    continue;
                }
                let node_name = &snap.node(nodes[*ni]).name;
                // `dups` is best-kept first: evict its tail, the earliest in eviction order first.
                for &pod in dups[upper_avg - 1..].iter().rev() {
                    let reason = format!(
                        "duplicate of {}: {on_node} on node {node_name}, at most {upper_avg} per node (ceil of {total} pods over {targets} nodes)",
                        owner_display(owner)
                    );
                    match cx.try_evict(pod, reason) {
                        Attempt::SkipNode => continue 'nodes,
                        Attempt::Stop => return,
                        Attempt::Planned { .. } | Attempt::SkipPod => {}
                    }
                }
            }
        }
    }
}

impl RemoveDuplicates {
    /// Step 1 of the run: the candidates of every node, best kept first (reverse eviction
    /// order). Choosing reads the state and records nothing, so the nodes are looked at on
    /// all cores. Pods of one shape (namespace, owners, images) have the same keys: they are
    /// built once per shape, in node order.
    fn candidates<'s>(
        &self,
        cx: &Context<'_, 's>,
        nodes: &[NodeId],
    ) -> (Interner<'s>, Vec<Vec<Candidate>>) {
        let snap = cx.snap();
        let shared: &Context<'_, '_> = cx;
        let node_pods: Vec<Vec<PodId>> = nodes
            .par_iter()
            .map(|&node| {
                let mut pods: Vec<PodId> = shared
                    .pods_on_node(node)
                    .filter(|&id| self.is_candidate(shared, id))
                    .collect();
                shared.sort_by_eviction_order(&mut pods);
                pods
            })
            .collect();
        let mut interner = Interner::with_capacity(snap.shape_count());
        let mut of_shape: Vec<Option<(u32, (u32, u32))>> = vec![None; snap.shape_count()];
        let per_node: Vec<Vec<Candidate>> = node_pods
            .iter()
            .map(|pods| {
                pods.iter()
                    .rev()
                    .map(|&pod| {
                        let p = snap.pod(pod);
                        let (key, owners) = *of_shape[p.shape as usize].get_or_insert_with(|| {
                            let c = interner.candidate(pod, p);
                            (c.key, c.owners)
                        });
                        Candidate { pod, key, owners }
                    })
                    .collect()
            })
            .collect();
        (interner, per_node)
    }
}

/// Step 2 of [`RemoveDuplicates`]' run: upstream lists only pods that also pass the
/// PreEvictionFilter. That check can cost a scan of the nodes per pod (nodeFit), and it
/// only matters for pods of owners that have duplicates before it: an owner without two
/// equal keys on some node has none after it either. So check those pods only, and drop
/// the others. False when no owner has duplicates.
fn keep_owners_with_duplicates(
    cx: &Context<'_, '_>,
    interner: &Interner<'_>,
    per_node: &mut [Vec<Candidate>],
) -> bool {
    let owner_count = interner.owners.len();
    // `seen_on[key]` is the last node (plus one) where a pod with that key was seen.
    let mut seen_on: Vec<u32> = vec![0; interner.keys.len()];
    let mut has_duplicates = vec![false; owner_count];
    let mut any_duplicates = false;
    for (ni, cands) in per_node.iter().enumerate() {
        let stamp = ni as u32 + 1;
        for c in cands {
            let seen = &mut seen_on[c.key as usize];
            if *seen == stamp {
                for &o in interner.owners_of(c) {
                    has_duplicates[o as usize] = true;
                }
                any_duplicates = true;
            } else {
                *seen = stamp;
            }
        }
    }
    if !any_duplicates {
        return false;
    }
    for cands in per_node.iter_mut() {
        cands.retain(|c| {
            interner
                .owners_of(c)
                .iter()
                .any(|&o| has_duplicates[o as usize])
                && cx.pre_eviction_filter(c.pod).is_ok()
        });
    }

    true
}

fn owner_display(owner: &OwnerKey<'_>) -> String {
    format!("{} {}/{}", owner.kind, owner.namespace, owner.name)
}

/// Upstream's `getTargetNodes`: the nodes where an owner's duplicates could land. Pods that
/// agree on tolerations, nodeSelector and required node affinity (a placement) land on the
/// same nodes, so each placement is checked against the nodes once per run, whatever the
/// owner; a placement that fits on only one node adds nothing.
struct TargetNodes<'s, 'n> {
    snap: &'s ClusterSnapshot,
    nodes: &'n [NodeId],
    unschedulable: Taint,
    /// One pod per distinct placement.
    reps: Vec<&'s Pod>,
    /// Per placement: the nodes it fits on as a bitset (None when it fits on fewer than
    /// two), and how many.
    fits: Vec<(Option<Box<[u64]>>, usize)>,
    /// Hash of a placement to its first id; `next` chains the other ids with that hash.
    heads: FxHashMap<u64, u32>,
    next: Vec<u32>,
    /// Scratch: the placements of one owner, and the union of their nodes.
    ids: Vec<u32>,
    union: Vec<u64>,
}

impl<'s, 'n> TargetNodes<'s, 'n> {
    fn new(snap: &'s ClusterSnapshot, nodes: &'n [NodeId]) -> Self {
        TargetNodes {
            snap,
            nodes,
            unschedulable: Taint {
                key: UNSCHEDULABLE_TAINT_KEY.into(),
                value: "".into(),
                effect: TaintEffect::NoSchedule,
            },
            reps: Vec::new(),
            fits: Vec::new(),
            heads: FxHashMap::default(),
            next: Vec::new(),
            ids: Vec::new(),
            union: Vec::new(),
        }
    }

    /// The id of the pod's placement, checking it against the nodes if it is new.
    fn placement(&mut self, pod: &'s Pod) -> u32 {
        let hash = placement_hash(pod);
        let mut id = self.heads.get(&hash).copied().unwrap_or(NONE);
        while id != NONE {
            if same_placement(self.reps[id as usize], pod) {
                return id;
            }
            id = self.next[id as usize];
        }
        let id = self.reps.len() as u32;
        let mut bits = vec![0u64; self.nodes.len().div_ceil(64)];
        let mut count = 0;
        for (i, &n) in self.nodes.iter().enumerate() {
            if could_land(pod, self.snap.node(n), &self.unschedulable) {
                bits[i / 64] |= 1 << (i % 64);
                count += 1;
            }
        }
        self.reps.push(pod);
        self.fits.push(if count > 1 {
            (Some(bits.into_boxed_slice()), count)
        } else {
            (None, 0)
        });
        let head = self.heads.entry(hash).or_insert(NONE);
        self.next.push(*head);
        *head = id;
        id
    }

    /// How many nodes the owner's duplicates could land on.
    fn count(&mut self, on_nodes: &NodeDuplicates) -> usize {
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        for &pod in on_nodes.iter().flat_map(|(_, pods)| pods) {
            let id = self.placement(self.snap.pod(pod));
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids.retain(|&id| self.fits[id as usize].0.is_some());
        let count = match ids[..] {
            [] => 0,
            [id] => self.fits[id as usize].1,
            _ => {
                self.union.clear();
                self.union.resize(self.nodes.len().div_ceil(64), 0);
                for &id in &ids {
                    if let Some(bits) = &self.fits[id as usize].0 {
                        for (u, b) in self.union.iter_mut().zip(bits.iter()) {
                            *u |= b;
                        }
                    }
                }
                self.union.iter().map(|w| w.count_ones() as usize).sum()
            }
        };
        self.ids = ids;
        count
    }
}

/// A hash of what [`same_placement`] compares (the shape of required node affinity only):
/// equal placements hash equally.
fn placement_hash(pod: &Pod) -> u64 {
    let mut h = FxHasher::default();
    for t in pod.tolerations.iter() {
        (&t.key, t.exists, &t.value, t.effect).hash(&mut h);
    }
    pod.tolerations.len().hash(&mut h);
    pod.node_selector.hash(&mut h);
    match pod
        .affinity
        .as_ref()
        .and_then(|a| a.node_required.as_deref())
    {
        None => 0usize.hash(&mut h),
        Some(terms) => {
            (1 + terms.len()).hash(&mut h);
            for t in terms {
                (t.match_expressions.len(), t.match_fields.len()).hash(&mut h);
            }
        }
    }
    h.finish()
}

/// Whether the scheduler could place the pod on the node, by taints, nodeSelector and
/// required node affinity (resources are not considered, as upstream).
fn could_land(pod: &Pod, node: &Node, unschedulable: &Taint) -> bool {
    sim::tolerates_scheduling_taints(pod, node)
        && sim::matches_node_selector(pod, node)
        && (!node.unschedulable || sim::tolerated(&pod.tolerations, unschedulable))
}

fn same_placement(a: &Pod, b: &Pod) -> bool {
    fn required(p: &Pod) -> Option<&[NodeSelectorTerm]> {
        p.affinity.as_ref()?.node_required.as_deref()
    }
    fn terms_equal(a: &[NodeSelectorTerm], b: &[NodeSelectorTerm]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                x.match_expressions == y.match_expressions && x.match_fields == y.match_fields
            })
    }
    a.tolerations == b.tolerations
        && a.node_selector == b.node_selector
        && match (required(a), required(b)) {
            (None, None) => true,
            (Some(x), Some(y)) => terms_equal(x, y),
            _ => false,
        }
}

#[cfg(test)]
mod tests;
