//! Topology domains: which nodes share a value of a topology key, and how many of a set of
//! pods are in each.
//!
//! One index, [`TopologyDomains`], serves everything that groups nodes by a topology key: the
//! simulation's PodTopologySpread filter, RemovePodsViolatingTopologySpreadConstraint and
//! RemovePodsViolatingInterPodAntiAffinity. It is built for one key over a set of nodes (the
//! snapshot's, or a plugin's planning nodes) and counts the nodes of that set that carry the
//! key and that the caller admits: a topology spread constraint admits the nodes its node
//! inclusion policies let in ([`Inclusion`], kube-scheduler's `matchNodeInclusionPolicies`).
//! A domain is a value of the key on at least one counted node, so a domain that holds no pod
//! is a domain all the same (kube-scheduler counts it in the skew and in minDomains), and a
//! value found only on nodes that are not counted is no domain.
//!
//! [`DomainCache`] builds an index once per key and inclusion over one set of nodes and shares
//! it, across threads, between the constraints that differ only in the pods they select.

use super::matches_node_inclusion_policies;
use crate::snapshot::{
    ClusterSnapshot, InclusionPolicy, Node, NodeId, NodeSelectorTerm, Pod, TopologySpreadConstraint,
};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

/// The domains of one topology key over a set of nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyDomains<'s> {
    key: &'s str,
    /// The domains' values, sorted: a domain is its index here.
    values: Vec<&'s str>,
    /// Each node's domain, by node id; None when the node is not counted (not among the nodes
    /// the index was built over, without the key, or not admitted).
    of_node: Vec<Option<u32>>,
}

impl<'s> TopologyDomains<'s> {
    /// The domains of `key` over `nodes`: each node that has the key and that `admits`
    /// accepts is counted, in the domain of its value.
    pub fn new(
        snap: &'s ClusterSnapshot,
        key: &'s str,
        nodes: impl IntoIterator<Item = NodeId>,
        mut admits: impl FnMut(&'s Node) -> bool,
    ) -> Self {
        // each counted node's value, numbered as first seen, then the values sorted
        let mut first_seen: FxHashMap<&'s str, u32> = FxHashMap::default();
        let counted: Vec<(NodeId, u32)> = nodes
            .into_iter()
            .filter_map(|n| {
                let node = snap.node(n);
                let value = node.labels.get(key)?;
                admits(node).then(|| {
                    let next = first_seen.len() as u32;
                    (n, *first_seen.entry(value).or_insert(next))
                })
            })
            .collect();
        let mut values: Vec<&'s str> = first_seen.keys().copied().collect();
        values.sort_unstable();
        let mut rank = vec![0u32; values.len()];
        for (i, v) in values.iter().enumerate() {
            rank[first_seen[v] as usize] = i as u32;
        }
        let mut of_node = vec![None; snap.nodes.len()];
        for (n, seen) in counted {
            of_node[n.index()] = Some(rank[seen as usize]);
        }
        TopologyDomains {
            key,
            values,
            of_node,
        }
    }

    /// The domains of `key` over `nodes` for a topology spread constraint: the nodes its
    /// inclusion policies admit.
    pub(crate) fn for_inclusion(
        snap: &'s ClusterSnapshot,
        key: &'s str,
        nodes: impl IntoIterator<Item = NodeId>,
        inclusion: Inclusion<'_>,
    ) -> Self {
        Self::new(snap, key, nodes, |node| inclusion.admits(node))
    }

    /// The topology key.
    pub fn key(&self) -> &'s str {
        self.key
    }

    /// How many domains there are.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there is no domain (no counted node has the key).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The domains' values, sorted (a domain is its index here).
    pub fn values(&self) -> &[&'s str] {
        &self.values
    }

    /// A domain's value.
    pub fn value(&self, domain: u32) -> &'s str {
        self.values[domain as usize]
    }

    /// The domain of a counted node; None for a node that is not counted.
    pub(crate) fn domain_of(&self, node: NodeId) -> Option<u32> {
        self.of_node.get(node.index()).copied().flatten()
    }

    /// The domain whose value is `value`, if some counted node has it.
    pub(crate) fn domain_of_value(&self, value: &str) -> Option<u32> {
        self.values.binary_search(&value).ok().map(|d| d as u32)
    }

    /// The domain of the node's value of the key, whether or not the node itself is counted
    /// (kube-scheduler's filter looks a node's value up among the counted domains).
    pub(crate) fn domain_at(&self, node: &Node) -> Option<u32> {
        self.domain_of_value(node.labels.get(self.key)?)
    }

    /// The counted nodes of a domain, by node id.
    pub fn nodes(&self, domain: u32) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes_where(move |d| d == domain)
    }

    /// The counted nodes of the domains `pick` selects, by node id.
    pub(crate) fn nodes_where<'a>(
        &'a self,
        mut pick: impl FnMut(u32) -> bool + 'a,
    ) -> impl Iterator<Item = NodeId> + 'a {
        self.of_node
            .iter()
            .enumerate()
            .filter(move |(_, d)| d.is_some_and(&mut pick))
            .map(|(n, _)| NodeId::from_index(n))
    }

    /// How many of a set of pods, given by their nodes, are in each domain (by domain); pods
    /// on nodes that are not counted are not counted.
    pub fn count(&self, pod_nodes: impl IntoIterator<Item = NodeId>) -> Vec<u32> {
        let mut counts = vec![0u32; self.values.len()];
        for n in pod_nodes {
            if let Some(d) = self.domain_of(n) {
                counts[d as usize] += 1;
            }
        }
        counts
    }

    /// A set of items, each with its node, grouped by domain (in the order given); items on
    /// nodes that are not counted are left out.
    pub fn group<T>(&self, items: impl IntoIterator<Item = (NodeId, T)>) -> Vec<Vec<T>> {
        let mut groups: Vec<Vec<T>> = std::iter::repeat_with(Vec::new)
            .take(self.values.len())
            .collect();
        for (n, item) in items {
            if let Some(d) = self.domain_of(n) {
                groups[d as usize].push(item);
            }
        }
        groups
    }
}

/// The nodes a topology spread constraint counts beyond those with its key: its node
/// inclusion policies, with the pod whose nodeSelector, required node affinity and
/// tolerations they honour.
#[derive(Debug, Clone, Copy)]
pub struct Inclusion<'p> {
    /// `nodeAffinityPolicy`: Honor counts only nodes matching the pod's nodeSelector and
    /// required node affinity.
    pub node_affinity_policy: InclusionPolicy,
    /// `nodeTaintsPolicy`: Honor counts only nodes whose taints the pod tolerates.
    pub node_taints_policy: InclusionPolicy,
    /// The pod whose selector, affinity and tolerations the policies honour.
    pub pod: &'p Pod,
}

impl<'p> Inclusion<'p> {
    /// The inclusion policies of a constraint of `pod`.
    pub fn of(c: &TopologySpreadConstraint, pod: &'p Pod) -> Self {
        Inclusion {
            node_affinity_policy: c.node_affinity_policy,
            node_taints_policy: c.node_taints_policy,
            pod,
        }
    }

    /// Whether the node is counted ([`matches_node_inclusion_policies`]).
    pub fn admits(&self, node: &Node) -> bool {
        matches_node_inclusion_policies(
            self.pod,
            node,
            self.node_affinity_policy,
            self.node_taints_policy,
        )
    }

    /// Whether two inclusions admit the same nodes: the same policies, and the same node
    /// affinity or tolerations where a policy honours them.
    pub fn same(&self, o: &Inclusion<'_>) -> bool {
        self.node_affinity_policy == o.node_affinity_policy
            && self.node_taints_policy == o.node_taints_policy
            && (self.node_affinity_policy == InclusionPolicy::Ignore
                || same_node_affinity(self.pod, o.pod))
            && (self.node_taints_policy == InclusionPolicy::Ignore
                || self.pod.tolerations == o.pod.tolerations)
    }
}

fn required_terms(p: &Pod) -> Option<&[NodeSelectorTerm]> {
    p.affinity.as_ref()?.node_required.as_deref()
}

/// Same nodeSelector and required node affinity (`nodeaffinity.GetRequiredNodeAffinity`).
pub(crate) fn same_node_affinity(a: &Pod, b: &Pod) -> bool {
    if a.node_selector != b.node_selector {
        return false;
    }
    match (required_terms(a), required_terms(b)) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(t, u)| {
                    t.match_expressions == u.match_expressions && t.match_fields == u.match_fields
                })
        }
        _ => false,
    }
}

/// Indexes built over one set of nodes, by topology key and inclusion: constraints that
/// differ only in the pods they select (their selector, `maxSkew`) share one. It may be read
/// from several threads; an index is built once, under the lock.
#[derive(Debug, Default)]
pub struct DomainCache<'s> {
    by_key: Mutex<FxHashMap<&'s str, Vec<Shared<'s>>>>,
}

/// An index in a [`DomainCache`], with the inclusion it was built for.
type Shared<'s> = (Inclusion<'s>, Arc<TopologyDomains<'s>>);

impl<'s> DomainCache<'s> {
    /// The domains of `key` over `nodes` (the same nodes at every call) for a constraint
    /// with this inclusion.
    pub fn get(
        &self,
        snap: &'s ClusterSnapshot,
        nodes: &[NodeId],
        key: &'s str,
        inclusion: Inclusion<'s>,
    ) -> Arc<TopologyDomains<'s>> {
        let mut by_key = self.by_key.lock().unwrap_or_else(|e| e.into_inner());
        let entries = by_key.entry(key).or_default();
        if let Some((_, domains)) = entries.iter().find(|(i, _)| i.same(&inclusion)) {
            return domains.clone();
        }
        let domains = Arc::new(TopologyDomains::for_inclusion(
            snap,
            key,
            nodes.iter().copied(),
            inclusion,
        ));
        entries.push((inclusion, domains.clone()));
        domains
    }
}

#[cfg(test)]
mod tests;
