//! RemovePodsViolatingInterPodAntiAffinity (deschedule): evicts pods whose required pod
//! anti-affinity is violated by another pod in the same topology domain, so the scheduler
//! places them where their anti-affinity holds.
//!
//! As upstream (`removepodsviolatinginterpodantiaffinity/pod_antiaffinity.go` and
//! `utils.CheckPodsWithAntiAffinityExist`, newest version, the one with `EvictOptions` and the
//! typed eviction errors):
//! - Nodes are handled in the order given. A node's candidate pods (in `namespaces` and
//!   matching `labelSelector`) are taken lowest priority first (no priority is lowest), then
//!   BestEffort before Burstable before Guaranteed, as `SortPodsBasedOnPriorityLowToHigh`.
//! - A pod is evicted when one of its own `requiredDuringSchedulingIgnoredDuringExecution`
//!   anti-affinity terms matches another pod whose node is in the same topology domain: the
//!   same node, or a planning node with the same value of the term's `topologyKey` label
//!   (`hasSameLabelValue`). Only the pod's own terms count, as upstream: a pod without
//!   anti-affinity is never evicted because another pod's anti-affinity selects it (the pod
//!   with the term is the one that moves). Preferred anti-affinity never evicts.
//! - Once a pod is planned for eviction it no longer counts against its peers (upstream
//!   removes evicted pods from its lists); pods earlier plugins planned to evict do not count
//!   either.
//! - The evictor's Filter and PreEvictionFilter apply. A per-node limit moves on to the next
//!   node, the cycle's total limit stops the plugin, any other refusal skips the pod.
//!
//! Deliberate differences from upstream v0.36:
//! - `namespaceSelector` is honoured, as kube-scheduler honours it: a term covers the
//!   namespaces it lists plus those its `namespaceSelector` selects (by the namespaces'
//!   labels in the snapshot; `{}` selects every namespace); with neither, the owner's
//!   namespace. Upstream ignores `namespaceSelector` and so misses violations across
//!   namespaces.
//! - The pods a term is checked against are all the pods on the planning nodes, as the
//!   scheduler sees them; `namespaces` and `labelSelector` only limit which pods are evicted.
//!   Upstream lists only pods in scope, so a violation by a pod outside them went unseen.
//! - Finished (Succeeded/Failed) and terminating pods neither violate anything nor are
//!   evicted: they hold no place, or are leaving it. Upstream counts them.
//! - Pods are told apart by namespace and name (upstream compares names only, so a
//!   same-named pod in another namespace was never a violator); equal priority and QoS keep
//!   namespace/name order, and pods with the prefer-no-eviction annotation go last, as the
//!   framework's eviction order has it.

use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::framework::{Attempt, Context, Plugin};
use crate::labels::LabelSelectorSpec;
use crate::plugins::shared::{Namespaces, PodScope};
use crate::sim;
use crate::sim::TopologyDomains;
use crate::snapshot::{ClusterSnapshot, NodeId, Pod, PodAffinityTerm, PodId};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// The plugin's name in a policy.
pub const NAME: &str = "RemovePodsViolatingInterPodAntiAffinity";

/// The registry entry: a `deschedule` plugin.
pub(crate) const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::deschedule::<RemovePodsViolatingInterPodAntiAffinity>(NAME);

/// `RemovePodsViolatingInterPodAntiAffinityArgs`. No args at all means no restriction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RemovePodsViolatingInterPodAntiAffinityArgs {
    /// Namespaces whose pods may be evicted (include or exclude, not both).
    pub namespaces: Option<Namespaces>,
    /// Only pods matching it may be evicted.
    pub label_selector: Option<LabelSelectorSpec>,
}

impl PluginArgs for RemovePodsViolatingInterPodAntiAffinityArgs {
    /// Upstream's `ValidateRemovePodsViolatingInterPodAntiAffinityArgs`, with field paths.
    fn validate(&self) -> Result<(), ArgsError> {
        PodScope::new(self.namespaces.as_ref(), self.label_selector.as_ref())?;
        Ok(())
    }
}

/// A validated RemovePodsViolatingInterPodAntiAffinity plugin.
#[derive(Debug)]
pub struct RemovePodsViolatingInterPodAntiAffinity {
    /// The plugin's args.
    pub args: RemovePodsViolatingInterPodAntiAffinityArgs,
    scope: PodScope,
}

impl FromArgs for RemovePodsViolatingInterPodAntiAffinity {
    type Args = RemovePodsViolatingInterPodAntiAffinityArgs;

    fn from_args(args: RemovePodsViolatingInterPodAntiAffinityArgs) -> Result<Self, ArgsError> {
        let scope = PodScope::new(args.namespaces.as_ref(), args.label_selector.as_ref())?;
        Ok(RemovePodsViolatingInterPodAntiAffinity { args, scope })
    }
}

impl RemovePodsViolatingInterPodAntiAffinity {
    /// Whether the args allow evicting the pod (upstream's `podFilter`).
    fn in_scope(&self, pod: &Pod) -> bool {
        self.scope.allows(pod)
    }
}

/// The pod's required anti-affinity terms.
fn anti_affinity_terms(pod: &Pod) -> &[PodAffinityTerm] {
    pod.affinity
        .as_deref()
        .map_or(&[], |a| &a.pod_anti_affinity_required)
}

/// Whether a pod holds its place: running or pending, and not on its way out.
fn holds_place(pod: &Pod) -> bool {
    pod.is_active() && !pod.terminating
}

/// For each topology key a term asks about (built once per key), its domains over the
/// planning nodes (every planning node with the key) and the pods of each domain that hold a
/// place, sorted by pod id, so by namespace, then name.
type DomainPods<'s> = FxHashMap<&'s str, (TopologyDomains<'s>, Vec<Vec<PodId>>)>;

/// The pods in the same `key` domain as `node` (the node's own pods, including ones that do
/// not hold a place, when it lacks the label).
fn peers<'a, 's>(
    snap: &'s ClusterSnapshot,
    nodes: &[NodeId],
    domains: &'a mut DomainPods<'s>,
    key: &'s str,
    node: NodeId,
) -> &'a [PodId] {
    let (index, pods) = domains.entry(key).or_insert_with(|| {
        let index = TopologyDomains::new(snap, key, nodes.iter().copied(), |_| true);
        let mut pods = index.group(nodes.iter().flat_map(|&n| {
            snap.pods_on_node(n)
                .iter()
                .filter(|&&p| holds_place(snap.pod(p)))
                .map(move |&p| (n, p))
        }));
        for group in &mut pods {
            group.sort_unstable();
        }
        (index, pods)
    });
    match index.domain_at(snap.node(node)) {
        Some(d) => &pods[d as usize],
        None if snap.node(node).labels.get(key).is_some() => &[],
        None => snap.pods_on_node(node),
    }
}

/// The pods of `ns` in a slice sorted by id (namespaces are contiguous runs).
fn namespace_run<'a>(snap: &ClusterSnapshot, pods: &'a [PodId], ns: &str) -> &'a [PodId] {
    let start = pods.partition_point(|&p| *snap.pod(p).namespace < *ns);
    let len = pods[start..].partition_point(|&p| *snap.pod(p).namespace == *ns);
    &pods[start..start + len]
}

/// The first pod (in the term's namespace order, then namespace/name order) that violates one
/// of the candidate's required anti-affinity terms, with the term.
fn find_violation<'s>(
    cx: &Context<'_, 's>,
    nodes: &[NodeId],
    domains: &mut DomainPods<'s>,
    candidate: PodId,
    node: NodeId,
) -> Option<(PodId, &'s PodAffinityTerm)> {
    let snap: &'s ClusterSnapshot = cx.snap();
    let pod = snap.pod(candidate);
    let owner_ns: &str = &pod.namespace;
    for term in anti_affinity_terms(pod) {
        let Some(selector) = &term.label_selector else {
            continue; // a term without a labelSelector selects no pod
        };
        let violates = |p: PodId| {
            let peer = snap.pod(p);
            p != candidate
                && !cx.is_planned(p)
                && holds_place(peer)
                && selector.matches(&peer.labels)
        };
        let peers = peers(snap, nodes, domains, &term.topology_key, node);
        if term.namespace_selector.is_none() {
            // Only listed namespaces (or the owner's): look at their runs alone.
            let owner = std::iter::once(owner_ns).filter(|_| term.namespaces.is_empty());
            let names = term.namespaces.iter().map(|n| &**n).chain(owner);
            for ns in names {
                if let Some(&p) = namespace_run(snap, peers, ns)
                    .iter()
                    .find(|&&p| violates(p))
                {
                    return Some((p, term));
                }
            }
        } else {
            // A namespaceSelector: decide each namespace run once, by its labels.
            let mut last: Option<(&str, bool)> = None;
            for &p in peers {
                let ns: &str = &snap.pod(p).namespace;
                let covered = match last {
                    Some((l, c)) if l == ns => c,
                    _ => {
                        let labels = snap.namespace(ns).map(|n| &n.labels);
                        let c = sim::term_covers_namespace(term, owner_ns, ns, labels);
                        last = Some((ns, c));
                        c
                    }
                };
                if covered && violates(p) {
                    return Some((p, term));
                }
            }
        }
    }
    None
}

impl Plugin for RemovePodsViolatingInterPodAntiAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Required pod anti-affinity is a hard constraint.
    fn repairs_hard_constraints(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        let mut domains = DomainPods::default();
        'nodes: for &node in nodes {
            let mut candidates: Vec<PodId> = cx
                .pods_on_node(node)
                .filter(|&p| {
                    let pod = snap.pod(p);
                    pod.is_active() && !anti_affinity_terms(pod).is_empty() && self.in_scope(pod)
                })
                .collect();
            if candidates.is_empty() {
                continue;
            }
            cx.sort_by_eviction_order(&mut candidates);
            for p in candidates {
                let pod = snap.pod(p);
                let Some((peer, term)) = find_violation(cx, nodes, &mut domains, p, node) else {
                    continue;
                };
                let n = snap.node(node);
                let key = &*term.topology_key;
                let domain = match n.labels.get(key) {
                    Some(v) => format!("{key}={v}"),
                    None => format!("node {} (which has no {key} label)", n.name),
                };
                let reason = format!(
                    "pod violates required anti-affinity with {} on topology {domain}",
                    snap.pod(peer).key()
                );
                tracing::debug!(pod = %pod.key(), node = %n.name, %reason, "anti-affinity violated");
                if let Err(why) = cx.filter(p) {
                    tracing::debug!(pod = %pod.key(), reason = %why, "pod is not evictable");
                    continue;
                }
                match cx.try_evict_checked(p, reason) {
                    Attempt::SkipNode => continue 'nodes,
                    Attempt::Stop => return,
                    Attempt::Planned { .. } | Attempt::SkipPod => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
