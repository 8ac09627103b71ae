//! The scheduler's filters, evaluated over the snapshot: taints and tolerations, nodeSelector
//! and required node affinity, resources, pod count and host ports.
//!
//! These are the checks kube-scheduler's Filter plugins make (TaintToleration, NodeAffinity,
//! NodeResourcesFit, NodePorts, NodeUnschedulable). Callers pass in what a node holds now,
//! so the same functions answer for the cluster as it is and as a plan leaves it.

use crate::snapshot::{InclusionPolicy, Node, Pod, Resources, Taint, TaintEffect, Toleration};

/// Whether some toleration tolerates the taint.
pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

/// Every taint with NoSchedule or NoExecute effect is tolerated (what scheduling needs).
pub fn tolerates_scheduling_taints(pod: &Pod, node: &Node) -> bool {
    node.taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .all(|t| tolerated(&pod.tolerations, t))
}

/// Every taint of the node is tolerated, whatever its effect (upstream's
/// `PodToleratesTaints`, used by LowNodeUtilization to pick pods that may move).
pub fn tolerates_all_taints(pod: &Pod, taints: &[Taint]) -> bool {
    taints.iter().all(|t| tolerated(&pod.tolerations, t))
}

/// nodeSelector and required node affinity (`PodMatchNodeSelector`).
pub fn matches_node_selector(pod: &Pod, node: &Node) -> bool {
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
pub fn matches_node_inclusion_policies(
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
pub fn fits_resources(pod: &Pod, node: &Node, requested: &Resources) -> Result<(), String> {
    if requested.pods + 1 > node.allocatable.pods {
        return Err("too many pods".into());
    }
    for (name, want) in pod.requests.iter() {
        if want <= 0 || name == "pods" {
            continue;
        }
        let free = node.allocatable.get(name) - requested.get(name);
        if want > free {
            return Err(format!("insufficient {name}"));
        }
    }
    Ok(())
}

/// Every filter a node must pass for the pod to be placed on it, given what it holds now.
/// Returns the first failing check, named as kube-scheduler names it.
pub fn node_fits(pod: &Pod, node: &Node, requested: &Resources) -> Result<(), String> {
    if node.unschedulable {
        return Err("node is unschedulable".into());
    }
    if !matches_node_selector(pod, node) {
        return Err("node does not match the pod's node selector or affinity".into());
    }
    if !tolerates_scheduling_taints(pod, node) {
        return Err("node has a taint the pod does not tolerate".into());
    }
    fits_resources(pod, node, requested)
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

    #[test]
    fn resources_and_pod_count() {
        let n = node("n").cpu(1000).pods(2).build();
        let p = pod("d", "p").cpu(600).build();
        assert!(fits_resources(&p, &n, &Resources::new(400, 0, 1)).is_ok());
        assert_eq!(
            fits_resources(&p, &n, &Resources::new(500, 0, 1)).unwrap_err(),
            "insufficient cpu"
        );
        assert_eq!(
            fits_resources(&p, &n, &Resources::new(0, 0, 2)).unwrap_err(),
            "too many pods"
        );
        let gpu = pod("d", "g").resource("nvidia.com/gpu", 1).build();
        assert!(fits_resources(&gpu, &n, &Resources::default()).is_err());
    }
}
