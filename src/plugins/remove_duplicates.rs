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

use crate::framework::{Attempt, Context, Plugin};
use crate::plugins::shared::{namespace_allowed, Namespaces};
use crate::policy::{decode_args, null_as_default, ArgsError};
use crate::sim;
use crate::snapshot::{
    ClusterSnapshot, Node, NodeId, NodeSelectorTerm, Pod, PodId, Taint, TaintEffect,
};
use rayon::iter::{IntoParallelRefIterator, ParallelIterator};
use rustc_hash::{FxHashMap, FxHasher};
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

pub const NAME: &str = "RemoveDuplicates";

/// The registry entry: a `balance` plugin.
pub const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::balance(NAME, |args| Ok(Box::new(RemoveDuplicates::new(args)?)));

/// The taint kube-scheduler reads `spec.unschedulable` as.
const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// `RemoveDuplicatesArgs`. Both fields are optional; no args at all means no restriction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveDuplicatesArgs {
    /// Owner kinds (such as `Job`) whose pods are never treated as duplicates.
    #[serde(default, deserialize_with = "null_as_default")]
    pub exclude_owner_kinds: Vec<String>,
    /// Namespaces to include or to exclude (only one of the two).
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
}

impl RemoveDuplicatesArgs {
    /// Upstream's `ValidateRemoveDuplicatesArgs`: at most one of include and exclude.
    pub fn validate(&self) -> Result<(), ArgsError> {
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

impl RemoveDuplicates {
    pub fn new(args: &serde_json::Value) -> Result<Self, ArgsError> {
        let args: RemoveDuplicatesArgs = decode_args(args)?;
        args.validate()?;
        Ok(RemoveDuplicates { args })
    }

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

    /// A duplicate restarted on its own node is a duplicate still.
    fn relocates(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();

        // 1. The candidates of every node, best kept first (reverse eviction order). Choosing
        // reads the state and records nothing, so the nodes are looked at on all cores. Pods
        // of one shape (namespace, owners, images) have the same keys: they are built once
        // per shape, in node order.
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
        let mut per_node: Vec<Vec<Candidate>> = node_pods
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
        let owner_count = interner.owners.len();

        // 2. Upstream lists only pods that also pass the PreEvictionFilter. That check can
        // cost a scan of the nodes per pod (nodeFit), and it only matters for pods of owners
        // that have duplicates before it: an owner without two equal keys on some node has
        // none after it either. So check those pods only, and drop the others.
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
            return;
        }
        for cands in &mut per_node {
            cands.retain(|c| {
                interner
                    .owners_of(c)
                    .iter()
                    .any(|&o| has_duplicates[o as usize])
                    && cx.pre_eviction_filter(c.pod).is_ok()
            });
        }

        // 3. Upstream's count: pods per owner over all nodes, and the duplicates per owner
        // and node (every pod after the first with the same full key).
        seen_on.iter_mut().for_each(|s| *s = 0);
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
mod tests {
    use super::*;
    use crate::framework::{Limits, PlanningState};
    use crate::labels::{Requirement, Selector};
    use crate::plugins::default_evictor::DefaultEvictor;
    use crate::snapshot::builders::{node, pdb, pod, PodBuilder, T0};
    use crate::snapshot::{Affinity, OwnerRef, SnapshotParts};
    use serde_json::{json, Value};

    /// Runs the plugin over every Ready node and returns the evicted pods' keys, in order.
    fn run_with(
        snap: &ClusterSnapshot,
        args: Value,
        evictor: Value,
        limits: Limits,
    ) -> Vec<String> {
        let plugin = RemoveDuplicates::new(&args).unwrap();
        let evictor = DefaultEvictor::from_args(&evictor).unwrap();
        let nodes = snap.ready_nodes(&Selector::default());
        let mut state = PlanningState::new(snap, limits);
        crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0 + 3600);
        state
            .ledger()
            .evictions()
            .iter()
            .map(|e| snap.pod(e.pod).key())
            .collect()
    }

    fn run(snap: &ClusterSnapshot) -> Vec<String> {
        run_with(snap, Value::Null, Value::Null, Limits::default())
    }

    fn snap(nodes: Vec<Node>, pods: Vec<PodBuilder>) -> ClusterSnapshot {
        ClusterSnapshot::build(SnapshotParts {
            nodes,
            pods: pods.into_iter().map(PodBuilder::build).collect(),
            ..Default::default()
        })
    }

    fn nodes(names: &[&str]) -> Vec<Node> {
        names.iter().map(|n| node(n).build()).collect()
    }

    /// `count` replicas of ReplicaSet `rs` in namespace `ns` on `node`, named `<prefix><i>`.
    fn replicas(
        ns: &str,
        rs: &str,
        prefix: &str,
        node_name: &str,
        count: usize,
    ) -> Vec<PodBuilder> {
        (0..count)
            .map(|i| {
                pod(ns, &format!("{prefix}{i}"))
                    .owner("ReplicaSet", rs)
                    .node(node_name)
            })
            .collect()
    }

    /// Pods on nodes n1, n2, n3 as upstream's "(5,3,1)" layout.
    fn spread(counts: &[(&str, usize)]) -> Vec<PodBuilder> {
        let mut pods = Vec::new();
        for (node_name, count) in counts {
            pods.extend(replicas(
                "d",
                "rs",
                &format!("{node_name}-p"),
                node_name,
                *count,
            ));
        }
        pods
    }

    #[test]
    fn three_replicas_on_one_of_three_nodes_two_are_evicted() {
        let s = snap(
            nodes(&["n1", "n2", "n3"]),
            replicas("d", "web", "p", "n1", 3),
        );
        // All equal in priority and QoS: eviction order is name order, the last stays.
        assert_eq!(run(&s), vec!["d/p0", "d/p1"]);
        let mut state = PlanningState::new(&s, Limits::default());
        let evictor = DefaultEvictor::default();
        let nodes = s.ready_nodes(&Selector::default());
        let plugin = RemoveDuplicates::new(&Value::Null).unwrap();
        crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0);
        let e = &state.ledger().evictions()[0];
        assert_eq!(e.plugin, NAME);
        assert_eq!(
            e.reason,
            "duplicate of ReplicaSet d/web: 3 on node n1, at most 1 per node (ceil of 3 pods over 3 nodes)"
        );
    }

    #[test]
    fn upstream_uniform_cases() {
        // (name, planning nodes, pods per node, evictions wanted)
        type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, usize)>, usize);
        let cases: Vec<Case<'_>> = vec![
            (
                "(5,3,1) -> (3,3,3)",
                vec!["n1", "n2", "n3"],
                vec![("n1", 5), ("n2", 3), ("n3", 1)],
                2,
            ),
            // n3 is not a planning node: its pod is not counted either.
            (
                "(5,3) over two nodes -> (4,4)",
                vec!["n1", "n2"],
                vec![("n1", 5), ("n2", 3)],
                1,
            ),
            (
                "(2,0,0) -> (1,1,0)",
                vec!["n1", "n2", "n3"],
                vec![("n1", 2)],
                1,
            ),
            ("a single pod", vec!["n1", "n2", "n3"], vec![("n1", 1)], 0),
            (
                "already even",
                vec!["n1", "n2", "n3"],
                vec![("n1", 2), ("n2", 2), ("n3", 2)],
                0,
            ),
            (
                "(3,1) over two nodes",
                vec!["n1", "n2"],
                vec![("n1", 3), ("n2", 1)],
                1,
            ),
        ];
        for (name, node_names, counts, want) in cases {
            let s = snap(nodes(&node_names), spread(&counts));
            assert_eq!(run(&s).len(), want, "{name}");
        }
    }

    #[test]
    fn each_owner_is_balanced_on_its_own() {
        // RS a: (5,3,1), RS b: (1,3,5): two evictions each.
        let mut pods = spread(&[("n1", 5), ("n2", 3), ("n3", 1)]);
        for (node_name, count) in [("n1", 1), ("n2", 3), ("n3", 5)] {
            pods.extend(replicas(
                "d",
                "other",
                &format!("{node_name}-q"),
                node_name,
                count,
            ));
        }
        let s = snap(nodes(&["n1", "n2", "n3"]), pods);
        let got = run(&s);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got.iter().filter(|k| k.contains("n1-p")).count(), 2);
        assert_eq!(got.iter().filter(|k| k.contains("n3-q")).count(), 2);
        // Same names in two namespaces are two owners.
        let mut pods = replicas("dev", "rs", "p", "n1", 3);
        pods.extend(replicas("test", "rs", "p", "n1", 3));
        let s = snap(nodes(&["n1", "n2"]), pods);
        assert_eq!(run(&s), vec!["dev/p0", "test/p0"]);
    }

    #[test]
    fn pods_with_two_owners_are_evicted_once() {
        // Upstream's "two replica sets" case: every pod names rs-1 and rs-2. Upstream's
        // dry-run counts 4 (each pod once per owner); the pods are the same two.
        let two_owners = |b: PodBuilder| {
            let mut p = b.owner("ReplicaSet", "rs-1").build();
            let second = OwnerRef {
                kind: "ReplicaSet".into(),
                name: "rs-2".into(),
                uid: "uid-rs-2".into(),
                controller: false,
            };
            p.owners = p.owners.iter().cloned().chain([second]).collect();
            p
        };
        let mut all = Vec::new();
        for (node_name, count) in [("n1", 5), ("n2", 3), ("n3", 1)] {
            for i in 0..count {
                all.push(two_owners(
                    pod("d", &format!("{node_name}-p{i}")).node(node_name),
                ));
            }
        }
        let s = ClusterSnapshot::build(SnapshotParts {
            nodes: nodes(&["n1", "n2", "n3"]),
            pods: all,
            ..Default::default()
        });
        assert_eq!(run(&s), vec!["d/n1-p0", "d/n1-p1"]);
    }

    #[test]
    fn exclude_owner_kinds() {
        let mut pods = replicas("d", "rs", "p", "n1", 3);
        pods.extend((0..3).map(|i| pod("d", &format!("j{i}")).owner("Job", "batch").node("n1")));
        let s = snap(nodes(&["n1", "n2"]), pods);
        assert_eq!(run(&s).len(), 2);
        let got = run_with(
            &s,
            json!({"excludeOwnerKinds": ["Job"]}),
            Value::Null,
            Limits::default(),
        );
        assert_eq!(got, vec!["d/p0"]);
        let got = run_with(
            &s,
            json!({"excludeOwnerKinds": ["ReplicaSet", "Job"]}),
            Value::Null,
            Limits::default(),
        );
        assert!(got.is_empty());
    }

    #[test]
    fn namespaces_include_and_exclude() {
        let mut pods = replicas("a", "rs", "p", "n1", 2);
        pods.extend(replicas("b", "rs", "p", "n1", 2));
        let s = snap(nodes(&["n1", "n2"]), pods);
        assert_eq!(run(&s), vec!["a/p0", "b/p0"]);
        let include = json!({"namespaces": {"include": ["a"]}});
        assert_eq!(
            run_with(&s, include, Value::Null, Limits::default()),
            vec!["a/p0"]
        );
        let exclude = json!({"namespaces": {"exclude": ["a"]}});
        assert_eq!(
            run_with(&s, exclude, Value::Null, Limits::default()),
            vec!["b/p0"]
        );
    }

    #[test]
    fn different_images_are_not_duplicates() {
        let two = |name: &str, images: &[&str]| pod("d", name).node("n1").images(images);
        let cases: Vec<(&str, Vec<PodBuilder>, usize)> = vec![
            (
                "different images",
                vec![two("p1", &["foo"]), two("p2", &["bar"])],
                0,
            ),
            (
                "one shared image of two",
                vec![two("p1", &["foo"]), two("p2", &["foo", "bar"])],
                0,
            ),
            (
                "a multi-container pod does not match itself",
                vec![two("p1", &["a", "b"])],
                0,
            ),
            (
                "same images in another order",
                vec![two("p1", &["a", "b"]), two("p2", &["b", "a"])],
                1,
            ),
            (
                // Upstream: only p1 and p4 are real duplicates; the owner key includes images.
                "same owner, only some images equal",
                vec![
                    two("p1", &["foo"]),
                    two("p2", &["bar"]),
                    two("p3", &["baz"]),
                    two("p4", &["foo"]),
                ],
                1,
            ),
        ];
        for (name, pods, want) in cases {
            let s = snap(nodes(&["n1", "n2", "n3"]), pods);
            let got = run(&s);
            assert_eq!(got.len(), want, "{name}: {got:?}");
        }
    }

    #[test]
    fn taints_and_selectors_decide_the_target_nodes() {
        // 4 on n1, 2 on n2: with n3 usable the average is 2 (evict 2), without it 3 (evict 1).
        let layout = |extra: fn(PodBuilder) -> PodBuilder, n3: Node| {
            let mut pods: Vec<PodBuilder> = spread(&[("n1", 4), ("n2", 2)]);
            pods = pods.into_iter().map(extra).collect();
            snap(
                vec![
                    node("n1").label("pool", "a").build(),
                    node("n2").label("pool", "a").build(),
                    n3,
                ],
                pods,
            )
        };
        let plain = |b: PodBuilder| b;
        assert_eq!(
            run(&layout(plain, node("n3").label("pool", "a").build())).len(),
            2
        );
        let tainted = node("n3")
            .label("pool", "a")
            .taint("gpu", "true", TaintEffect::NoSchedule)
            .build();
        assert_eq!(run(&layout(plain, tainted.clone())).len(), 1);
        let tolerating = |b: PodBuilder| b.toleration("gpu", "", None);
        assert_eq!(run(&layout(tolerating, tainted)).len(), 2);
        let soft = node("n3")
            .label("pool", "a")
            .taint("x", "", TaintEffect::PreferNoSchedule)
            .build();
        assert_eq!(
            run(&layout(plain, soft)).len(),
            2,
            "PreferNoSchedule does not exclude a node"
        );
        let selecting = |b: PodBuilder| b.node_selector("pool", "a");
        assert_eq!(
            run(&layout(selecting, node("n3").label("pool", "b").build())).len(),
            1
        );
        assert_eq!(
            run(&layout(selecting, node("n3").label("pool", "a").build())).len(),
            2
        );
        let affinity = |b: PodBuilder| {
            b.affinity(Affinity {
                node_required: Some(vec![NodeSelectorTerm {
                    match_expressions: vec![Requirement::DoesNotExist("control-plane".into())],
                    match_fields: vec![],
                }]),
                ..Default::default()
            })
        };
        let control_plane = node("n3").label("control-plane", "").build();
        assert_eq!(run(&layout(affinity, control_plane)).len(), 1);
        assert_eq!(run(&layout(affinity, node("n3").build())).len(), 2);
        let cordoned = node("n3").unschedulable().build();
        assert_eq!(run(&layout(plain, cordoned.clone())).len(), 1);
        let tolerates_cordon = |b: PodBuilder| {
            b.toleration(UNSCHEDULABLE_TAINT_KEY, "", Some(TaintEffect::NoSchedule))
        };
        assert_eq!(run(&layout(tolerates_cordon, cordoned)).len(), 2);
    }

    #[test]
    fn pods_that_fit_one_node_only_add_no_target() {
        // Six duplicates on n1: three pinned to n1 by hostname (one node: adds nothing, as
        // upstream), three selecting pool=a (n2 and n3). Two target nodes: average 3.
        let mut pods: Vec<PodBuilder> = (0..3)
            .map(|i| {
                pod("d", &format!("pinned{i}"))
                    .node("n1")
                    .node_selector("kubernetes.io/hostname", "n1")
            })
            .collect();
        pods.extend((0..3).map(|i| {
            pod("d", &format!("pool{i}"))
                .node("n1")
                .node_selector("pool", "a")
        }));
        let s = snap(
            vec![
                node("n1").label("pool", "b").build(),
                node("n2").label("pool", "a").build(),
                node("n3").label("pool", "a").build(),
            ],
            pods,
        );
        assert_eq!(run(&s).len(), 3);
    }

    #[test]
    fn upstream_taint_and_selector_cases() {
        // Workers w1..w3 and three control-plane nodes; pods split between two kinds of
        // tolerations / selectors that exclude the control plane: (5,3,1) -> 2 evictions.
        let workers = |labelled: bool| -> Vec<Node> {
            let mut v: Vec<Node> = ["w1", "w2", "w3"]
                .iter()
                .map(|n| {
                    if labelled {
                        node(n).label("worker", "k2").build()
                    } else {
                        node(n).build()
                    }
                })
                .collect();
            v.extend(["m1", "m2", "m3"].iter().map(|n| {
                node(n)
                    .label("control-plane", "")
                    .taint("control-plane", "", TaintEffect::NoSchedule)
                    .build()
            }));
            v
        };
        let layout = |f: &dyn Fn(PodBuilder, usize) -> PodBuilder| -> Vec<PodBuilder> {
            let mut i = 0;
            let mut pods = Vec::new();
            for (node_name, count) in [("w1", 5), ("w2", 3), ("w3", 1)] {
                for _ in 0..count {
                    pods.push(f(pod("d", &format!("p{i}")).node(node_name), i));
                    i += 1;
                }
            }
            pods
        };
        let k = |i: usize| if i % 2 == 0 { "k1" } else { "k2" };
        let tolerations =
            |b: PodBuilder, i: usize| b.toleration(k(i), "v", Some(TaintEffect::NoSchedule));
        assert_eq!(run(&snap(workers(false), layout(&tolerations))).len(), 2);
        // As upstream, the workers are labelled worker=k2 only: the pods selecting k1 fit
        // nowhere and add no target node; those selecting k2 give the three workers.
        let selector = |b: PodBuilder, i: usize| b.node_selector("worker", k(i));
        assert_eq!(run(&snap(workers(true), layout(&selector))).len(), 2);
        // Nothing carries the selected label: no target node at all.
        assert_eq!(run(&snap(workers(false), layout(&selector))).len(), 0);
    }

    #[test]
    fn a_single_target_node_means_no_eviction() {
        let pods = replicas("d", "rs", "p", "n1", 3)
            .into_iter()
            .map(|b| b.node_selector("kubernetes.io/hostname", "n1"))
            .collect();
        let s = snap(nodes(&["n1", "n2", "n3"]), pods);
        assert!(run(&s).is_empty());
        let s = snap(nodes(&["n1"]), replicas("d", "rs", "p", "n1", 3));
        assert!(run(&s).is_empty());
    }

    #[test]
    fn protected_pods_are_neither_evicted_nor_counted() {
        let protected = vec![
            pod("d", "ds1").owner("DaemonSet", "ds").node("n1"),
            pod("d", "ds2").owner("DaemonSet", "ds").node("n1"),
            pod("d", "ls1")
                .owner("ReplicaSet", "ls")
                .local_storage()
                .node("n1"),
            pod("d", "ls2")
                .owner("ReplicaSet", "ls")
                .local_storage()
                .node("n1"),
            pod("d", "m1").owner("ReplicaSet", "m").mirror().node("n1"),
            pod("d", "m2").owner("ReplicaSet", "m").mirror().node("n1"),
            pod("d", "c1")
                .owner("ReplicaSet", "c")
                .priority(2_000_000_000)
                .node("n1"),
            pod("d", "c2")
                .owner("ReplicaSet", "c")
                .priority(2_000_000_000)
                .node("n1"),
            pod("d", "t1")
                .owner("ReplicaSet", "t")
                .terminating()
                .node("n1"),
            pod("d", "t2")
                .owner("ReplicaSet", "t")
                .terminating()
                .node("n1"),
            pod("d", "b1").bare().node("n1"),
            pod("d", "b2").bare().node("n1"),
        ];
        let s = snap(nodes(&["n1", "n2"]), protected);
        assert!(run(&s).is_empty());
        // Protected replicas of an owner do not count towards its average either: 3 plain
        // replicas and 3 with local storage on n1 of 3 nodes: average 1, 2 evictions.
        let mut pods = replicas("d", "rs", "p", "n1", 3);
        pods.extend((0..3).map(|i| {
            pod("d", &format!("ls{i}"))
                .owner("ReplicaSet", "rs")
                .local_storage()
                .node("n1")
        }));
        pods.extend((0..2).map(|i| {
            pod("d", &format!("done{i}"))
                .owner("ReplicaSet", "rs")
                .phase(crate::snapshot::Phase::Succeeded)
                .node("n1")
        }));
        let s = snap(nodes(&["n1", "n2", "n3"]), pods);
        assert_eq!(run(&s), vec!["d/p0", "d/p1"]);
    }

    #[test]
    fn limits_end_the_node_or_the_plugin() {
        // 4 on n1 and 4 on n2 over 4 nodes: average 2, two evictions on each.
        let pods = spread(&[("n1", 4), ("n2", 4)]);
        let s = snap(nodes(&["n1", "n2", "n3", "n4"]), pods);
        assert_eq!(run(&s), vec!["d/n1-p0", "d/n1-p1", "d/n2-p0", "d/n2-p1"]);
        let per_node = Limits {
            per_node: Some(1),
            ..Default::default()
        };
        assert_eq!(
            run_with(&s, Value::Null, Value::Null, per_node),
            vec!["d/n1-p0", "d/n2-p0"]
        );
        let total = Limits {
            total: Some(3),
            ..Default::default()
        };
        assert_eq!(
            run_with(&s, Value::Null, Value::Null, total),
            vec!["d/n1-p0", "d/n1-p1", "d/n2-p0"]
        );
        let per_namespace = Limits {
            per_namespace: Some(1),
            ..Default::default()
        };
        assert_eq!(
            run_with(&s, Value::Null, Value::Null, per_namespace),
            vec!["d/n1-p0"]
        );
    }

    #[test]
    fn disruption_budgets_block() {
        let pods: Vec<Pod> = replicas("d", "rs", "p", "n1", 3)
            .into_iter()
            .map(|b| b.label("app", "web").build())
            .collect();
        let with_budget = |allowed: i32| {
            ClusterSnapshot::build(SnapshotParts {
                nodes: nodes(&["n1", "n2", "n3"]),
                pods: pods.clone(),
                pdbs: vec![pdb("d", "web", "app", "web", allowed)],
                ..Default::default()
            })
        };
        assert!(run(&with_budget(0)).is_empty());
        assert_eq!(run(&with_budget(1)), vec!["d/p0"]);
        assert_eq!(run(&with_budget(5)).len(), 2);
    }

    #[test]
    fn node_fit_drops_pods_that_fit_nowhere_else() {
        // Upstream: n2 has 200m; with 150m requested there, 100m replicas cannot move.
        let cluster = |other: PodBuilder| {
            let mut pods: Vec<PodBuilder> = replicas("d", "rs", "p", "n1", 3)
                .into_iter()
                .map(|b| b.cpu(100))
                .collect();
            pods.push(other.bare().node("n2"));
            snap(
                vec![node("n1").cpu(2000).build(), node("n2").cpu(200).build()],
                pods,
            )
        };
        let fit = json!({"nodeFit": true});
        let s = cluster(pod("o", "eater").cpu(150));
        assert!(run_with(&s, Value::Null, fit.clone(), Limits::default()).is_empty());
        assert_eq!(run(&s).len(), 1, "without nodeFit the pod is evicted");
        let s = cluster(pod("o", "saver").cpu(50));
        assert_eq!(run_with(&s, Value::Null, fit, Limits::default()).len(), 1);
    }

    #[test]
    fn lower_priority_duplicates_go_first() {
        let pods = vec![
            pod("d", "a").node("n1").priority(100).cpu(10),
            pod("d", "b").node("n1").priority(10).cpu(10),
            pod("d", "c")
                .node("n1")
                .priority(100)
                .cpu(10)
                .prefer_no_eviction(),
            pod("d", "e").node("n1").priority(100),
        ];
        let s = snap(nodes(&["n1", "n2", "n3", "n4"]), pods);
        // Average 1: three go, lowest priority first, then BestEffort before Burstable; the
        // pod that prefers no eviction stays.
        assert_eq!(run(&s), vec!["d/b", "d/e", "d/a"]);
    }

    #[test]
    fn invalid_args_name_the_field() {
        for (args, path) in [
            (
                json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}),
                "namespaces",
            ),
            (json!({"excludeOwnerKinds": "Job"}), "excludeOwnerKinds"),
            (json!({"excludeOwnerKind": ["Job"]}), "excludeOwnerKind"),
            (json!({"namespaces": {"only": ["a"]}}), "namespaces.only"),
        ] {
            let e = RemoveDuplicates::new(&args).unwrap_err();
            assert_eq!(e.path, path, "{args}: {e}");
        }
    }

    #[test]
    fn args_default_when_absent() {
        for args in [
            Value::Null,
            json!({}),
            json!({"excludeOwnerKinds": null, "namespaces": null}),
        ] {
            let p = RemoveDuplicates::new(&args).unwrap();
            assert_eq!(p.args(), &RemoveDuplicatesArgs::default(), "{args}");
        }
        let p = RemoveDuplicates::new(
            &json!({"excludeOwnerKinds": ["Job"], "namespaces": {"include": ["default"]}}),
        )
        .unwrap();
        assert_eq!(p.args().exclude_owner_kinds, vec!["Job"]);
        assert!(p.args().namespaces.as_ref().unwrap().allows("default"));
    }

    #[test]
    fn shuffled_input_gives_the_same_plan() {
        let mut pods: Vec<Pod> = Vec::new();
        for (owner, layout) in [("a", [5, 1, 0]), ("b", [0, 4, 2]), ("c", [3, 3, 0])] {
            for (ni, count) in layout.iter().enumerate() {
                for i in 0..*count {
                    pods.push(
                        pod(
                            if owner == "c" { "other" } else { "d" },
                            &format!("{owner}-{ni}-{i}"),
                        )
                        .owner("ReplicaSet", owner)
                        .priority(i % 2)
                        .node(&format!("n{}", ni + 1))
                        .build(),
                    );
                }
            }
        }
        let plan = |pods: Vec<Pod>, node_list: Vec<Node>| {
            let s = ClusterSnapshot::build(SnapshotParts {
                nodes: node_list,
                pods,
                ..Default::default()
            });
            run(&s)
        };
        let first = plan(pods.clone(), nodes(&["n1", "n2", "n3"]));
        assert!(!first.is_empty());
        for seed in 1..20usize {
            let mut shuffled = pods.clone();
            // A deterministic Fisher-Yates with a tiny LCG.
            let mut x = seed as u64;
            for i in (1..shuffled.len()).rev() {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                shuffled.swap(i, ((x >> 33) % (i as u64 + 1)) as usize);
            }
            let mut node_list = nodes(&["n1", "n2", "n3"]);
            node_list.rotate_left(seed % 3);
            assert_eq!(plan(shuffled, node_list), first, "seed {seed}");
        }
    }

    #[test]
    fn pods_planned_earlier_are_not_seen() {
        let s = snap(
            nodes(&["n1", "n2", "n3"]),
            replicas("d", "rs", "p", "n1", 3),
        );
        let evictor = DefaultEvictor::default();
        let nodes = s.ready_nodes(&Selector::default());
        let mut state = PlanningState::new(&s, Limits::default());
        state
            .plan_eviction(0, "default", "Earlier", "r".into())
            .unwrap();
        let plugin = RemoveDuplicates::new(&Value::Null).unwrap();
        crate::framework::testing::run_on(&plugin, &mut state, &evictor, &nodes, T0);
        // p1 and p2 remain: average 1 over 3 nodes, one more eviction.
        let planned: Vec<String> = state
            .ledger()
            .evictions()
            .iter()
            .map(|e| s.pod(e.pod).key())
            .collect();
        assert_eq!(planned, vec!["d/p0", "d/p1"]);
        // And a plugin through the registry builds the same thing.
        let built = crate::plugins::REGISTRY
            .get(NAME)
            .unwrap()
            .build(&Value::Null);
        assert!(
            matches!(&built, Ok(crate::framework::Built::Strategy(p)) if p.name() == NAME),
            "{built:?}"
        );
    }
}
