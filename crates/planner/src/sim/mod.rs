//! The scheduler's filters, evaluated over the snapshot: taints and tolerations, nodeSelector
//! and required node affinity, resources, pod count and host ports; and the pieces of
//! inter-pod (anti-)affinity and preferred node affinity the plugins share.
//!
//! [`score`] holds kube-scheduler's score plugins, which pick among the nodes that pass;
//! [`domains`] the topology domains (nodes grouped by a topology key, pods counted in each)
//! that the topology spread filter and the spread and anti-affinity plugins share.
//!
//! These are the checks kube-scheduler's Filter plugins make (TaintToleration, NodeAffinity,
//! NodeResourcesFit, NodePorts, NodeUnschedulable, InterPodAffinity). Callers pass in what a
//! node holds now, so the same functions answer for the cluster as it is and as a plan
//! leaves it.

pub mod domains;
pub mod placement;
pub mod score;

pub use domains::{DomainCache, Inclusion, TopologyDomains};
pub use placement::{queue_order, NoFit, Prediction, Simulation, Termination};
pub use score::ScoreProfile;

use crate::labels::Labels;
use crate::snapshot::{
    InclusionPolicy, Node, Pod, PodAffinityTerm, Resources, Taint, TaintEffect, Toleration,
};

/// Whether some toleration tolerates the taint.
pub(crate) fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

/// Every taint with NoSchedule or NoExecute effect is tolerated (what scheduling needs).
pub(crate) fn tolerates_scheduling_taints(pod: &Pod, node: &Node) -> bool {
    node.taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .all(|t| tolerated(&pod.tolerations, t))
}

/// Every taint of the node is tolerated, whatever its effect (upstream's
/// `PodToleratesTaints`, used by LowNodeUtilization to pick pods that may move).
pub(crate) fn tolerates_all_taints(pod: &Pod, taints: &[Taint]) -> bool {
    taints.iter().all(|t| tolerated(&pod.tolerations, t))
}

/// nodeSelector and required node affinity (`PodMatchNodeSelector`).
pub(crate) fn matches_node_selector(pod: &Pod, node: &Node) -> bool {
    if !pod
        .node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v))
    {
        return false;
    }
    if let Some(a) = &pod.affinity {
        if let Some(terms) = &a.node_required {
            return terms.iter().any(|t| t.matches(node));
        }
    }
    true
}

/// Whether a node counts for one of the pod's topology spread constraints, given the
/// constraint's `nodeAffinityPolicy` and `nodeTaintsPolicy` (kube-scheduler's
/// `matchNodeInclusionPolicies`): with `Honor`, the node must match the pod's nodeSelector and
/// required node affinity, or, for taints, every NoSchedule/NoExecute taint must be tolerated.
/// `Ignore` counts the node whatever its labels or taints.
pub(crate) fn matches_node_inclusion_policies(
    pod: &Pod,
    node: &Node,
    node_affinity_policy: InclusionPolicy,
    node_taints_policy: InclusionPolicy,
) -> bool {
    if node_affinity_policy == InclusionPolicy::Honor && !matches_node_selector(pod, node) {
        return false;
    }
    if node_taints_policy == InclusionPolicy::Honor && !tolerates_scheduling_taints(pod, node) {
        return false;
    }
    true
}

/// The resources the pod asks for fit in what the node has left. `requested` is what the
/// node's pods already request, with `pods` counting them.
pub(crate) fn fits_resources<'a>(
    pod: &'a Pod,
    node: &Node,
    requested: &Resources,
) -> Result<(), Unfit<'a>> {
    if requested.pods + 1 > node.allocatable.pods {
        return Err(Unfit::TooManyPods);
    }
    for (name, want) in pod.requests.iter() {
        if want <= 0 || name == "pods" {
            continue;
        }
        let free = node.allocatable.get(name) - requested.get(name);
        if want > free {
            return Err(Unfit::Insufficient(name));
        }
    }
    Ok(())
}

/// The first check a node fails for a pod ([`node_fits`], [`fits_resources`]). No text is
/// made unless it is shown: most callers only ask whether some node fits, over many nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unfit<'a> {
    Unschedulable,
    NodeSelector,
    Taint,
    TooManyPods,
    /// Not enough of this resource left.
    Insufficient(&'a str),
}

impl std::fmt::Display for Unfit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::Unschedulable => f.write_str("node is unschedulable"),
            Unfit::NodeSelector => {
                f.write_str("node does not match the pod's node selector or affinity")
            }
            Unfit::Taint => f.write_str("node has a taint the pod does not tolerate"),
            Unfit::TooManyPods => f.write_str("too many pods"),
            Unfit::Insufficient(r) => write!(f, "insufficient {r}"),
        }
    }
}

/// Every filter a node must pass for the pod to be placed on it, given what it holds now.
/// Returns the first failing check, named as kube-scheduler names it.
pub(crate) fn node_fits<'a>(
    pod: &'a Pod,
    node: &Node,
    requested: &Resources,
) -> Result<(), Unfit<'a>> {
    if node.unschedulable {
        return Err(Unfit::Unschedulable);
    }
    if !matches_node_selector(pod, node) {
        return Err(Unfit::NodeSelector);
    }
    if !tolerates_scheduling_taints(pod, node) {
        return Err(Unfit::Taint);
    }
    fits_resources(pod, node, requested)
}

/// Whether a pod (anti-)affinity term of a pod in `owner_namespace` covers pods of
/// `namespace` (kube-scheduler's `AffinityTerm`): the namespaces the term lists, plus the
/// namespaces its `namespaceSelector` selects (`{}` selects every namespace). A term with
/// neither covers only its owner's namespace. `namespace_labels` are the labels of
/// `namespace` (None when the snapshot does not have it: no labels).
pub(crate) fn term_covers_namespace(
    term: &PodAffinityTerm,
    owner_namespace: &str,
    namespace: &str,
    namespace_labels: Option<&Labels>,
) -> bool {
    if term.namespaces.is_empty() && term.namespace_selector.is_none() {
        return namespace == owner_namespace;
    }
    if term.namespaces.iter().any(|n| **n == *namespace) {
        return true;
    }
    match &term.namespace_selector {
        Some(sel) => match namespace_labels {
            Some(labels) => sel.matches(labels),
            None => sel.matches(&Labels::default()),
        },
        None => false,
    }
}

/// Whether a pod (anti-)affinity term of a pod in `owner_namespace` matches `pod`: the pod's
/// namespace is covered ([`term_covers_namespace`]) and its labels match the term's
/// labelSelector (a term without one matches no pod). `namespace_labels` are the labels of the
/// pod's namespace.
pub(crate) fn term_matches_pod(
    term: &PodAffinityTerm,
    owner_namespace: &str,
    pod: &Pod,
    namespace_labels: Option<&Labels>,
) -> bool {
    term.label_selector
        .as_ref()
        .is_some_and(|s| s.matches(&pod.labels))
        && term_covers_namespace(term, owner_namespace, &pod.namespace, namespace_labels)
}

/// Whether a topology spread constraint counts pod `q`: its labelSelector (None: no pod)
/// matches, and `q` has the incoming pod's values of the constraint's matchLabelKeys.
pub(crate) fn spread_selects(
    selector: Option<&crate::labels::Selector>,
    match_labels: &[(&str, &str)],
    q: &Pod,
) -> bool {
    selector.is_some_and(|s| s.matches(&q.labels))
        && match_labels
            .iter()
            .all(|(k, v)| q.labels.get(k) == Some(*v))
}

/// The score a pod's preferred node affinity gives a node: the sum of the weights of the
/// `preferredDuringSchedulingIgnoredDuringExecution` terms the node matches (an empty term
/// matches no node), as upstream's `GetNodeWeightGivenPodPreferredAffinity`.
pub(crate) fn preferred_node_affinity_score(pod: &Pod, node: &Node) -> i64 {
    pod.affinity.as_ref().map_or(0, |a| {
        a.node_preferred
            .iter()
            .filter(|t| t.preference.matches(node))
            .map(|t| i64::from(t.weight))
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Requirement;
    use crate::snapshot::builders::{node, pod};
    use crate::snapshot::{Affinity, NodeSelectorTerm};

    #[test]
    fn taints_need_tolerations() {
        let n = node("n")
            .taint("gpu", "true", TaintEffect::NoSchedule)
            .build();
        let p = pod("d", "p").build();
        assert!(!tolerates_scheduling_taints(&p, &n));
        let p = pod("d", "p")
            .toleration("gpu", "true", Some(TaintEffect::NoSchedule))
            .build();
        assert!(tolerates_scheduling_taints(&p, &n));
        let p = pod("d", "p").toleration("gpu", "", None).build();
        assert!(tolerates_scheduling_taints(&p, &n));
        let soft = node("n")
            .taint("x", "", TaintEffect::PreferNoSchedule)
            .build();
        assert!(tolerates_scheduling_taints(&pod("d", "p").build(), &soft));
        assert!(!tolerates_all_taints(&pod("d", "p").build(), &soft.taints));
    }

    #[test]
    fn node_affinity_terms_are_ored() {
        let n = node("n").label("zone", "b").build();
        let term = |z: &str| NodeSelectorTerm {
            match_expressions: vec![Requirement::In("zone".into(), vec![z.into()])],
            match_fields: vec![],
        };
        let p = pod("d", "p")
            .affinity(Affinity {
                node_required: Some(vec![term("a"), term("b")]),
                ..Default::default()
            })
            .build();
        assert!(matches_node_selector(&p, &n));
        let p = pod("d", "p")
            .affinity(Affinity {
                node_required: Some(vec![term("a")]),
                ..Default::default()
            })
            .build();
        assert!(!matches_node_selector(&p, &n));
        assert!(!matches_node_selector(
            &pod("d", "p").node_selector("zone", "a").build(),
            &n
        ));
    }

    #[test]
    fn node_inclusion_policies() {
        use InclusionPolicy::{Honor, Ignore};
        let tainted = node("t")
            .label("zone", "a")
            .taint("gpu", "", TaintEffect::NoSchedule)
            .build();
        let soft = node("s")
            .label("zone", "a")
            .taint("x", "", TaintEffect::PreferNoSchedule)
            .build();
        let zone_b = node("b").label("zone", "b").build();
        let p = pod("d", "p").node_selector("zone", "a").build();
        // nodeAffinityPolicy
        assert!(matches_node_inclusion_policies(&p, &tainted, Honor, Ignore));
        assert!(!matches_node_inclusion_policies(&p, &zone_b, Honor, Ignore));
        assert!(matches_node_inclusion_policies(&p, &zone_b, Ignore, Ignore));
        // nodeTaintsPolicy: only NoSchedule and NoExecute taints exclude a node
        assert!(!matches_node_inclusion_policies(&p, &tainted, Honor, Honor));
        assert!(matches_node_inclusion_policies(&p, &soft, Honor, Honor));
        let tolerant = pod("d", "p").toleration("gpu", "", None).build();
        assert!(matches_node_inclusion_policies(
            &tolerant, &tainted, Honor, Honor
        ));
    }

    fn ns_selector(k: &str, v: &str) -> crate::labels::Selector {
        crate::labels::Selector::from_requirements(vec![Requirement::In(k.into(), vec![v.into()])])
    }

    #[test]
    fn affinity_term_namespaces() {
        use crate::labels::Selector;
        use crate::snapshot::builders::affinity_term;
        let team_a = crate::snapshot::builders::namespace("db", &[("team", "a")]).labels;
        let term = affinity_term("zone", "app", "db");
        // no namespaces, no selector: the owner's namespace only
        assert!(term_covers_namespace(&term, "shop", "shop", None));
        assert!(!term_covers_namespace(&term, "shop", "db", Some(&team_a)));
        // listed namespaces replace the owner's
        let mut listed = term.clone();
        listed.namespaces = vec!["db".into()];
        assert!(term_covers_namespace(&listed, "shop", "db", None));
        assert!(!term_covers_namespace(&listed, "shop", "shop", None));
        // a selector adds the namespaces it selects, by their labels
        let mut selected = term.clone();
        selected.namespace_selector = Some(ns_selector("team", "a"));
        assert!(term_covers_namespace(
            &selected,
            "shop",
            "db",
            Some(&team_a)
        ));
        assert!(!term_covers_namespace(&selected, "shop", "shop", None));
        assert!(!term_covers_namespace(&selected, "shop", "gone", None));
        selected.namespaces = vec!["shop".into()];
        assert!(term_covers_namespace(&selected, "shop", "shop", None));
        // `{}` selects every namespace, even one the snapshot does not have
        let mut all = term.clone();
        all.namespace_selector = Some(Selector::everything());
        assert!(term_covers_namespace(&all, "shop", "db", Some(&team_a)));
        assert!(term_covers_namespace(&all, "shop", "gone", None));
    }

    #[test]
    fn affinity_term_matches_pods() {
        use crate::snapshot::builders::affinity_term;
        let term = affinity_term("zone", "app", "db");
        let db = pod("shop", "db-1").label("app", "db").build();
        let web = pod("shop", "web-1").label("app", "web").build();
        let other_ns = pod("other", "db-2").label("app", "db").build();
        assert!(term_matches_pod(&term, "shop", &db, None));
        assert!(!term_matches_pod(&term, "shop", &web, None));
        assert!(!term_matches_pod(&term, "shop", &other_ns, None));
        // a term without a labelSelector matches no pod
        let mut nil = term.clone();
        nil.label_selector = None;
        nil.namespace_selector = Some(crate::labels::Selector::everything());
        assert!(!term_matches_pod(&nil, "shop", &db, None));
    }

    #[test]
    fn preferred_node_affinity_scores() {
        use crate::snapshot::builders::node_term;
        let p = pod("d", "p")
            .preferred_node_affinity(10, node_term("zone", &["a"]))
            .preferred_node_affinity(5, node_term("disk", &["ssd"]))
            .preferred_node_affinity(7, NodeSelectorTerm::default())
            .build();
        let a = node("a").label("zone", "a").build();
        let a_ssd = node("s").label("zone", "a").label("disk", "ssd").build();
        let b = node("b").label("zone", "b").build();
        assert_eq!(preferred_node_affinity_score(&p, &a), 10);
        assert_eq!(preferred_node_affinity_score(&p, &a_ssd), 15);
        assert_eq!(preferred_node_affinity_score(&p, &b), 0);
        assert_eq!(preferred_node_affinity_score(&pod("d", "q").build(), &a), 0);
    }

    #[test]
    fn resources_and_pod_count() {
        let n = node("n").cpu(1000).pods(2).build();
        let p = pod("d", "p").cpu(600).build();
        assert!(fits_resources(&p, &n, &Resources::new(400, 0, 1)).is_ok());
        assert_eq!(
            fits_resources(&p, &n, &Resources::new(500, 0, 1))
                .unwrap_err()
                .to_string(),
            "insufficient cpu"
        );
        assert_eq!(
            fits_resources(&p, &n, &Resources::new(0, 0, 2))
                .unwrap_err()
                .to_string(),
            "too many pods"
        );
        let gpu = pod("d", "g").resource("nvidia.com/gpu", 1).build();
        assert!(fits_resources(&gpu, &n, &Resources::default()).is_err());
    }
}
