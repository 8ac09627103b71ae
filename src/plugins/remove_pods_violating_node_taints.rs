//! RemovePodsViolatingNodeTaints (deschedule): evicts pods from nodes whose `NoSchedule`
//! taints they do not tolerate, typically because the taint was added after the pod was
//! placed, as upstream's `pkg/framework/plugins/removepodsviolatingnodetaints`.
//!
//! Followed: the newest upstream `node_taint.go`, `types.go` and `validation.go` stored
//! (with `includedTaints`, the error handling of the limits and `ListPodsOnANode`).
//! - Taints looked at: effect `NoSchedule`, and `PreferNoSchedule` with
//!   `includePreferNoSchedule: true`. `NoExecute` taints are left to Kubernetes, whose taint
//!   manager evicts such pods itself.
//! - `excludedTaints` drops taints from that set, `includedTaints` keeps only the listed
//!   ones; both lists hold `key` (any value) or `key=value` entries, and at most one of the
//!   two may be given. A `key=value` entry never matches a taint with an empty value (as
//!   upstream). An explicit empty `includedTaints: []` includes no taint at all, so nothing
//!   is evicted (upstream's nil-versus-empty behaviour); leaving it out includes every taint.
//! - A pod is evicted when some looked-at taint of its node is tolerated by none of its
//!   tolerations. Only active pods (not Succeeded or Failed) are considered, in `namespaces`
//!   (include or exclude) and matching `labelSelector`, that pass the evictor's Filter and
//!   PreEvictionFilter.
//! - Limits: a node eviction limit ends that node, the cycle's total limit ends the plugin,
//!   any other refusal (namespace limit, disruption budget) skips the pod.
//!
//! Where this differs from upstream, knowingly:
//! - Pods of a node go in the framework's eviction order (lowest priority first, then QoS,
//!   then namespace/name) instead of informer order, so limits cut deterministically and
//!   spare the more important pods.
//! - The PreEvictionFilter (nodeFit) is checked just before each eviction, against the plan
//!   so far, rather than when the node's pods are listed.
//! - Entries of `excludedTaints` and `includedTaints` that can never match a taint (empty,
//!   an empty key, `key=` with no value, or characters a taint key or value cannot have,
//!   such as `key:NoSchedule`) are refused with the entry's path; upstream silently ignores
//!   them.
//! - `cordon` (newer upstream: cordon a node before evicting from it) is refused: this
//!   descheduler never writes to nodes.

use crate::framework::{Attempt, Context, Plugin};
use crate::labels::{LabelSelectorSpec, Selector};
use crate::plugins::shared::{namespace_allowed, selector_arg, Namespaces};
use crate::policy::{decode_args, null_as_default, ArgsError};
use crate::sim;
use crate::snapshot::{NodeId, PodId, Taint, TaintEffect};
use serde::{Deserialize, Serialize};
use std::fmt;

pub const NAME: &str = "RemovePodsViolatingNodeTaints";

/// The registry entry: a `deschedule` plugin.
pub const SPEC: crate::framework::PluginSpec =
    crate::framework::PluginSpec::deschedule(NAME, |args| {
        Ok(Box::new(RemovePodsViolatingNodeTaints::new(args)?))
    });

/// `RemovePodsViolatingNodeTaintsArgs`. No args at all: every pod not tolerating a
/// `NoSchedule` taint of its node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsViolatingNodeTaintsArgs {
    #[serde(default)]
    pub namespaces: Option<Namespaces>,
    #[serde(default)]
    pub label_selector: Option<LabelSelectorSpec>,
    /// Also look at `PreferNoSchedule` taints.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_prefer_no_schedule: bool,
    /// Taints (`key` or `key=value`) to ignore.
    #[serde(default, deserialize_with = "null_as_default")]
    pub excluded_taints: Vec<String>,
    /// Only these taints (`key` or `key=value`); None: every taint.
    #[serde(default)]
    pub included_taints: Option<Vec<String>>,
    /// Newer upstream's node cordoning; refused when true.
    #[serde(default, deserialize_with = "null_as_default")]
    pub cordon: bool,
}

impl RemovePodsViolatingNodeTaintsArgs {
    /// Upstream's `ValidateRemovePodsViolatingNodeTaintsArgs`, plus the form of each taint
    /// entry, with the field's path in every error.
    pub fn validate(&self) -> Result<(), ArgsError> {
        if let Some(ns) = &self.namespaces {
            ns.validate("namespaces")?;
        }
        selector_arg(self.label_selector.as_ref(), "labelSelector")?;
        let included = self.included_taints.as_deref().unwrap_or_default();
        if !self.excluded_taints.is_empty() && !included.is_empty() {
            return Err(ArgsError::new(
                "includedTaints",
                "either includedTaints or excludedTaints can be set, but not both; list the taints to look at, or the ones to ignore",
            ));
        }
        for (field, list) in [
            ("excludedTaints", &self.excluded_taints[..]),
            ("includedTaints", included),
        ] {
            for (i, entry) in list.iter().enumerate() {
                validate_taint_entry(entry)
                    .map_err(|why| ArgsError::new(format!("{field}[{i}]"), why))?;
            }
        }
        if self.cordon {
            return Err(ArgsError::new(
                "cordon",
                "cordoning nodes is not supported: this descheduler never writes to nodes; cordon them with kubectl cordon, or remove cordon",
            ));
        }
        Ok(())
    }
}

/// An entry of `excludedTaints` or `includedTaints`: `key` or `key=value`, in the forms a
/// taint key (a qualified name) and value (a label value) can take.
fn validate_taint_entry(entry: &str) -> Result<(), String> {
    let (key, value) = match entry.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (entry, None),
    };
    if key.is_empty() {
        return Err(format!("{entry:?} has no taint key; give key or key=value"));
    }
    if !is_qualified_name(key) {
        return Err(format!(
            "{key:?} is not a valid taint key (a qualified name such as example.com/dedicated); give key or key=value, without the effect"
        ));
    }
    match value {
        Some("") => Err(format!(
            "{entry:?} has an empty value and would match no taint; give {key:?} alone to match the key whatever its value"
        )),
        Some(v) if !is_name_part(v) => Err(format!(
            "{v:?} is not a valid taint value (up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
        )),
        _ => Ok(()),
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// An optional DNS-subdomain prefix and `/`, then a name part.
fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        None => is_name_part(s),
        Some((prefix, name)) => {
            !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|label| {
                    let l = label.as_bytes();
                    !l.is_empty()
                        && l.len() <= 63
                        && l[0].is_ascii_alphanumeric()
                        && l[l.len() - 1].is_ascii_alphanumeric()
                        && l.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                })
                && is_name_part(name)
        }
    }
}

/// Whether a taint is named by a list of `key` / `key=value` entries (upstream's set lookup
/// of `key`, or of `key=value` when the taint has a value).
fn listed(list: &[String], taint: &Taint) -> bool {
    list.iter().any(|e| match e.split_once('=') {
        None => *e == *taint.key,
        Some((k, v)) => !taint.value.is_empty() && k == &*taint.key && v == &*taint.value,
    })
}

/// A taint as kubectl prints it: `key=value:Effect`, or `key:Effect` without a value.
struct ShowTaint<'a>(&'a Taint);

impl fmt::Display for ShowTaint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        if t.value.is_empty() {
            write!(f, "{}:{:?}", t.key, t.effect)
        } else {
            write!(f, "{}={}:{:?}", t.key, t.value, t.effect)
        }
    }
}

/// A validated RemovePodsViolatingNodeTaints plugin.
#[derive(Debug, Clone)]
pub struct RemovePodsViolatingNodeTaints {
    args: RemovePodsViolatingNodeTaintsArgs,
    label_selector: Option<Selector>,
}

impl RemovePodsViolatingNodeTaints {
    pub fn new(args: &serde_json::Value) -> Result<Self, ArgsError> {
        let args: RemovePodsViolatingNodeTaintsArgs = decode_args(args)?;
        args.validate()?;
        let label_selector =
            selector_arg(args.label_selector.as_ref(), "labelSelector").expect("validated");
        Ok(RemovePodsViolatingNodeTaints {
            args,
            label_selector,
        })
    }

    pub fn args(&self) -> &RemovePodsViolatingNodeTaintsArgs {
        &self.args
    }

    /// Upstream's taint filter: the effects looked at, minus excluded, within included.
    fn looks_at(&self, taint: &Taint) -> bool {
        let effect = match taint.effect {
            TaintEffect::NoSchedule => true,
            TaintEffect::PreferNoSchedule => self.args.include_prefer_no_schedule,
            TaintEffect::NoExecute => false,
        };
        effect
            && !listed(&self.args.excluded_taints, taint)
            && self
                .args
                .included_taints
                .as_deref()
                .is_none_or(|inc| listed(inc, taint))
    }

    /// Whether the pod is in scope: active, in `namespaces`, matching `labelSelector`.
    fn in_scope(&self, cx: &Context<'_, '_>, id: PodId) -> bool {
        let pod = cx.snap().pod(id);
        pod.is_active()
            && namespace_allowed(&self.args.namespaces, &pod.namespace)
            && self
                .label_selector
                .as_ref()
                .is_none_or(|s| s.matches(&pod.labels))
    }
}

/// The first of `taints` the pod does not tolerate.
fn untolerated<'t>(cx: &Context<'_, '_>, id: PodId, taints: &[&'t Taint]) -> Option<&'t Taint> {
    let tolerations = &cx.snap().pod(id).tolerations;
    taints
        .iter()
        .copied()
        .find(|t| !sim::tolerated(tolerations, t))
}

impl Plugin for RemovePodsViolatingNodeTaints {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A taint the pod does not tolerate keeps new pods off the node: a hard constraint.
    fn repairs_hard_constraints(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Context<'_, '_>, nodes: &[NodeId]) {
        let snap = cx.snap();
        'nodes: for &node_id in nodes {
            let node = snap.node(node_id);
            let taints: Vec<&Taint> = node.taints.iter().filter(|t| self.looks_at(t)).collect();
            if taints.is_empty() {
                continue;
            }
            let mut violating: Vec<PodId> = cx
                .pods_on_node(node_id)
                .filter(|&p| self.in_scope(cx, p) && untolerated(cx, p, &taints).is_some())
                .collect();
            cx.sort_by_eviction_order(&mut violating);
            for pod_id in violating {
                let pod = snap.pod(pod_id);
                if let Err(why) = cx.filter(pod_id) {
                    tracing::trace!(pod = %pod.key(), %why, "not evictable");
                    continue;
                }
                let taint = untolerated(cx, pod_id, &taints).expect("violating pod");
                let reason = format!(
                    "pod does not tolerate taint {} of node {}",
                    ShowTaint(taint),
                    node.name
                );
                match cx.try_evict_checked(pod_id, reason) {
                    Attempt::SkipNode => continue 'nodes,
                    Attempt::Stop => return,
                    Attempt::Planned { .. } | Attempt::SkipPod => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::{Limits, Pipeline};
    use crate::plan;
    use crate::plugins::default_evictor::DefaultEvictor;
    use crate::snapshot::builders::{node, pdb, pod, snapshot, NodeBuilder, PodBuilder};
    use crate::snapshot::{ClusterSnapshot, Node, Phase, Pod, SnapshotParts};
    use serde_json::json;
    use TaintEffect::{NoExecute, NoSchedule, PreferNoSchedule};

    fn run_full(
        args: serde_json::Value,
        snap: &ClusterSnapshot,
        evictor: &DefaultEvictor,
        limits: Limits,
    ) -> Vec<String> {
        let plugin = RemovePodsViolatingNodeTaints::new(&args).expect("valid args");
        crate::framework::testing::run_alone_names(&plugin, snap, evictor, limits, 0)
    }

    fn run(args: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
        run_full(args, snap, &DefaultEvictor::default(), Limits::default())
    }

    fn run_ev(evictor: serde_json::Value, snap: &ClusterSnapshot) -> Vec<String> {
        let ev = DefaultEvictor::from_args(&evictor).unwrap();
        run_full(json!({}), snap, &ev, Limits::default())
    }

    fn limited(limits: Limits, snap: &ClusterSnapshot) -> Vec<String> {
        run_full(json!({}), snap, &DefaultEvictor::default(), limits)
    }

    /// Upstream's test node: 2 CPUs, 3000 bytes, 10 pods.
    fn tnode(name: &str) -> NodeBuilder {
        node(name).cpu(2000).memory(3000).pods(10)
    }

    /// `testTaint1=test1:NoSchedule`.
    fn with_test_taint(n: NodeBuilder) -> NodeBuilder {
        n.taint("testTaint1", "test1", NoSchedule)
    }

    /// `testingTaint1=testing1:NoSchedule`.
    fn with_testing_taint(n: NodeBuilder) -> NodeBuilder {
        n.taint("testingTaint1", "testing1", NoSchedule)
    }

    fn tpod(name: &str, node: &str) -> PodBuilder {
        pod("default", name).node(node).cpu(100)
    }

    /// Upstream's pods p1..p15.
    fn p(name: &str) -> Pod {
        let tolerates_test = |b: PodBuilder| b.toleration("testTaint1", "test1", Some(NoSchedule));
        match name {
            "p1" | "p3" => tolerates_test(tpod(name, "n1")).build(),
            "p2" | "p5" | "p6" => tpod(name, "n1").build(),
            "p4" => tpod(name, "n1")
                .toleration("testTaintX1", "testX1", Some(NoSchedule))
                .build(),
            "p7" => pod("kube-system", "p7")
                .node("n2")
                .cpu(100)
                .priority(2_000_000_000)
                .build(),
            "p8" => tpod(name, "n2").owner("DaemonSet", "ds").build(),
            "p9" => tpod(name, "n2").local_storage().build(),
            "p10" => tpod(name, "n2").mirror().build(),
            "p11" => tpod(name, "n2").build(),
            "p12" => tpod(name, "n1").node_selector("datacenter", "west").build(),
            "p13" => tpod(name, "n5")
                .toleration("testTaint0", "test0", Some(PreferNoSchedule))
                .build(),
            "p14" => tolerates_test(tpod(name, "n7")).build(),
            "p15" => tolerates_test(tpod(name, "n7"))
                .toleration("testingTaint1", "testing1", Some(NoSchedule))
                .build(),
            _ => unreachable!(),
        }
    }

    fn pods(names: &[&str]) -> Vec<Pod> {
        names.iter().map(|n| p(n)).collect()
    }

    fn snap(nodes: Vec<Node>, names: &[&str]) -> ClusterSnapshot {
        snapshot(nodes, pods(names))
    }

    fn n1() -> Node {
        with_test_taint(tnode("n1")).build()
    }

    fn n2() -> Node {
        with_testing_taint(tnode("n2")).build()
    }

    #[test]
    fn pods_not_tolerating_the_taint_are_evicted() {
        assert_eq!(
            run(json!({}), &snap(vec![n1()], &["p1", "p2", "p3"])),
            vec!["p2"]
        );
        // tolerations for another taint do not help
        assert_eq!(
            run(json!({}), &snap(vec![n1()], &["p1", "p3", "p4"])),
            vec!["p4"]
        );
        // no taint, nothing to do
        assert!(run(json!({}), &snap(vec![tnode("n1").build()], &["p2"])).is_empty());
    }

    #[test]
    fn limits_per_node_namespace_and_total() {
        let s = snap(vec![n1()], &["p1", "p5", "p6"]);
        let l = |per_node, per_namespace, total| Limits {
            per_node,
            per_namespace,
            total,
        };
        assert_eq!(limited(l(Some(2), None, Some(1)), &s), vec!["p5"]);
        assert_eq!(limited(l(Some(1), None, None), &s), vec!["p5"]);
        assert_eq!(limited(l(None, Some(1), None), &s), vec!["p5"]);
        assert_eq!(limited(Limits::default(), &s), vec!["p5", "p6"]);
        // a node limit ends only that node
        let other = with_test_taint(tnode("n9")).build();
        let mut pods = pods(&["p5", "p6"]);
        pods.push(tpod("q", "n9").build());
        let s = snapshot(vec![n1(), other], pods);
        assert_eq!(limited(l(Some(1), None, None), &s), vec!["p5", "q"]);
        // the total limit ends the plugin
        assert_eq!(limited(l(None, None, Some(1)), &s), vec!["p5"]);
    }

    #[test]
    fn protected_pods_stay() {
        let s = snap(vec![n2()], &["p7", "p8", "p9", "p10"]);
        assert!(run(json!({}), &s).is_empty());
        assert_eq!(
            run_ev(json!({"evictLocalStoragePods": true}), &s),
            vec!["p9"]
        );
        let s = snap(vec![n2()], &["p7", "p8", "p10", "p11"]);
        assert_eq!(run(json!({}), &s), vec!["p11"]);
        let s = snap(vec![n1(), n2()], &["p2", "p7", "p9", "p10"]);
        assert_eq!(
            run_ev(json!({"evictSystemCriticalPods": true}), &s),
            vec!["p2", "p7"]
        );
        // terminating, bare, and finished pods stay too
        let s = snapshot(
            vec![n1()],
            vec![
                tpod("term", "n1").terminating().build(),
                tpod("bare", "n1").bare().build(),
                tpod("done", "n1").phase(Phase::Succeeded).build(),
                tpod("failed", "n1").phase(Phase::Failed).build(),
            ],
        );
        assert!(run(json!({}), &s).is_empty());
    }

    #[test]
    fn node_fit_keeps_pods_with_nowhere_to_go() {
        let fit = json!({"nodeFit": true});
        // the other node has a taint p2 does not tolerate either
        assert!(run_ev(fit.clone(), &snap(vec![n1(), n2()], &["p1", "p2", "p3"])).is_empty());
        // the other node does not match p12's node selector
        let east = tnode("n3").label("datacenter", "east").build();
        assert!(run_ev(fit.clone(), &snap(vec![n1(), east], &["p1", "p3", "p12"])).is_empty());
        // the other node is cordoned
        let cordoned = tnode("n4").unschedulable().build();
        assert!(run_ev(
            fit.clone(),
            &snap(vec![n1(), cordoned], &["p1", "p2", "p3"])
        )
        .is_empty());
        // the other node is too small
        let tiny = node("n6")
            .cpu(1)
            .memory(1)
            .pods(1)
            .taint("testTaint1", "test1", PreferNoSchedule)
            .build();
        let ev = json!({"nodeFit": true, "evictSystemCriticalPods": true});
        assert!(run_ev(ev, &snap(vec![n1(), tiny], &["p2", "p7", "p9", "p10"])).is_empty());
        // a free untainted node lets p2 go
        let free = tnode("n8").build();
        assert_eq!(
            run_ev(fit, &snap(vec![n1(), free], &["p1", "p2", "p3"])),
            vec!["p2"]
        );
    }

    #[test]
    fn prefer_no_schedule_only_when_included() {
        let n5 = tnode("n5")
            .taint("testTaint1", "test1", PreferNoSchedule)
            .build();
        let s = snap(vec![n5], &["p13"]);
        assert!(run(json!({}), &s).is_empty());
        assert_eq!(
            run(json!({"includePreferNoSchedule": true}), &s),
            vec!["p13"]
        );
    }

    #[test]
    fn no_execute_is_left_to_kubernetes() {
        let n = tnode("n1").taint("gone", "", NoExecute).build();
        let s = snapshot(vec![n], vec![tpod("x", "n1").build()]);
        assert!(run(json!({}), &s).is_empty());
        assert!(run(
            json!({"includePreferNoSchedule": true, "includedTaints": ["gone"]}),
            &s
        )
        .is_empty());
    }

    #[test]
    fn excluded_taints_by_key_or_key_value() {
        let s = snap(vec![n1()], &["p2"]);
        assert!(run(
            json!({"excludedTaints": ["excludedTaint1", "testTaint1"]}),
            &s
        )
        .is_empty());
        assert!(run(json!({"excludedTaints": ["testTaint1=test1"]}), &s).is_empty());
        assert_eq!(
            run(json!({"excludedTaints": ["testTaint1=test2"]}), &s),
            vec!["p2"]
        );
        // key=value never matches a taint without a value; the key alone does
        let bare = tnode("n1").taint("maintenance", "", NoSchedule).build();
        let s = snapshot(vec![bare], vec![tpod("x", "n1").build()]);
        assert!(run(json!({"excludedTaints": ["maintenance"]}), &s).is_empty());
    }

    #[test]
    fn included_taints_restrict_what_counts() {
        let both = with_testing_taint(with_test_taint(tnode("n7"))).build();
        let p1 = tpod("p1", "n7")
            .toleration("testTaint1", "test1", Some(NoSchedule))
            .build();
        let s = snapshot(vec![both.clone()], vec![p1]);
        // p1 tolerates the included taint; the other one is not looked at
        assert!(run(json!({"includedTaints": ["testTaint1=test1"]}), &s).is_empty());
        assert_eq!(run(json!({}), &s), vec!["p1"]);
        // a taint that is not included does not count
        let s = snap(vec![n1()], &["p1", "p2", "p4"]);
        assert!(run(json!({"includedTaints": ["testTaint2=test2"]}), &s).is_empty());
        let s = snap(vec![n1()], &["p1", "p2", "p3"]);
        assert_eq!(
            run(json!({"includedTaints": ["testTaint1=test1"]}), &s),
            vec!["p2"]
        );
        assert_eq!(
            run(json!({"includedTaints": ["testTaint1"]}), &s),
            vec!["p2"]
        );
        // without includedTaints every taint counts: p14 tolerates only one of the two
        let s = snap(vec![both.clone()], &["p14", "p15"]);
        assert_eq!(run(json!({}), &s), vec!["p14"]);
        assert_eq!(run(json!({"includedTaints": null}), &s), vec!["p14"]);
        // an explicit empty list includes nothing, as upstream
        assert!(run(json!({"includedTaints": []}), &s).is_empty());
        // an empty includedTaints may go with excludedTaints
        assert!(RemovePodsViolatingNodeTaints::new(
            &json!({"includedTaints": [], "excludedTaints": ["a"]})
        )
        .is_ok());
    }

    #[test]
    fn namespaces_and_label_selector() {
        let s = snapshot(
            vec![n1()],
            vec![
                pod("a", "x").node("n1").label("tier", "web").build(),
                pod("b", "y").node("n1").label("tier", "db").build(),
                pod("c", "z").node("n1").build(),
            ],
        );
        assert_eq!(
            run(json!({"namespaces": {"include": ["a", "c"]}}), &s),
            vec!["x", "z"]
        );
        assert_eq!(
            run(json!({"namespaces": {"exclude": ["a"]}}), &s),
            vec!["y", "z"]
        );
        assert_eq!(
            run(
                json!({"labelSelector": {"matchLabels": {"tier": "db"}}}),
                &s
            ),
            vec!["y"]
        );
        assert_eq!(
            run(
                json!({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, "namespaces": {"exclude": ["b"]}}),
                &s
            ),
            vec!["x"]
        );
    }

    #[test]
    fn eviction_order_budgets_and_toleration_forms() {
        let n = tnode("n1").taint("dedicated", "gpu", NoSchedule).build();
        let s = ClusterSnapshot::build(SnapshotParts {
            nodes: vec![n],
            pods: vec![
                tpod("important", "n1").priority(1000).build(),
                tpod("cheap", "n1").priority(-10).build(),
                tpod("guarded", "n1").label("app", "guarded").build(),
                tpod("wildcard", "n1").toleration("", "", None).build(),
                tpod("by-key", "n1")
                    .toleration("dedicated", "", None)
                    .build(),
                tpod("wrong-value", "n1")
                    .toleration("dedicated", "cpu", Some(NoSchedule))
                    .build(),
                tpod("wrong-effect", "n1")
                    .toleration("dedicated", "gpu", Some(PreferNoSchedule))
                    .build(),
            ],
            pdbs: vec![pdb("default", "guard", "app", "guarded", 0)],
            ..Default::default()
        });
        // lowest priority first (no priority is the lowest); the budget keeps "guarded";
        // the pods whose tolerations cover the taint stay
        assert_eq!(
            run(json!({}), &s),
            vec!["wrong-effect", "wrong-value", "cheap", "important"]
        );
        assert_eq!(
            limited(
                Limits {
                    per_node: Some(1),
                    ..Default::default()
                },
                &s
            ),
            vec!["wrong-effect"]
        );
    }

    #[test]
    fn unschedulable_and_other_nodes_are_processed_in_order() {
        // a cordoned node's taints count like any other
        let a = tnode("a")
            .unschedulable()
            .taint("x", "", NoSchedule)
            .build();
        let b = tnode("b").taint("y", "1", NoSchedule).build();
        let s = snapshot(
            vec![b, a],
            vec![tpod("on-b", "b").build(), tpod("on-a", "a").build()],
        );
        assert_eq!(run(json!({}), &s), vec!["on-a", "on-b"]);
    }

    #[test]
    fn reasons_name_the_taint_and_node() {
        let n = tnode("n1").taint("dedicated", "gpu", NoSchedule).build();
        let s = snapshot(vec![n], vec![tpod("x", "n1").build()]);
        let plugin = RemovePodsViolatingNodeTaints::new(&json!({})).unwrap();
        let plan = crate::framework::testing::run_alone(
            &plugin,
            &s,
            &DefaultEvictor::default(),
            Limits::default(),
            0,
        );
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].plugin, NAME);
        assert_eq!(
            plan[0].reason,
            "pod does not tolerate taint dedicated=gpu:NoSchedule of node n1"
        );
        let n = tnode("n1")
            .taint("maintenance", "", PreferNoSchedule)
            .build();
        let s = snapshot(vec![n], vec![tpod("x", "n1").build()]);
        let plugin =
            RemovePodsViolatingNodeTaints::new(&json!({"includePreferNoSchedule": true})).unwrap();
        let plan = crate::framework::testing::run_alone(
            &plugin,
            &s,
            &DefaultEvictor::default(),
            Limits::default(),
            0,
        );
        assert_eq!(
            plan[0].reason,
            "pod does not tolerate taint maintenance:PreferNoSchedule of node n1"
        );
    }

    #[test]
    fn args_validation_names_fields() {
        for (args, path) in [
            (
                json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}),
                "namespaces",
            ),
            (
                json!({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
                "labelSelector",
            ),
            (
                json!({"excludedTaints": ["a"], "includedTaints": ["b"]}),
                "includedTaints",
            ),
            (json!({"excludedTaints": [""]}), "excludedTaints[0]"),
            (json!({"excludedTaints": ["ok", "=v"]}), "excludedTaints[1]"),
            (json!({"excludedTaints": ["key="]}), "excludedTaints[0]"),
            (
                json!({"excludedTaints": ["key:NoSchedule"]}),
                "excludedTaints[0]",
            ),
            (json!({"includedTaints": ["k=a b"]}), "includedTaints[0]"),
            (json!({"includedTaints": ["/k"]}), "includedTaints[0]"),
            (
                json!({"includePreferNoSchedule": "yes"}),
                "includePreferNoSchedule",
            ),
            (json!({"excludedTaints": "a"}), "excludedTaints"),
            (json!({"cordon": true}), "cordon"),
            (json!({"taints": ["a"]}), "taints"),
        ] {
            let e = RemovePodsViolatingNodeTaints::new(&args).unwrap_err();
            assert_eq!(e.path, path, "{args}: {e:?}");
        }
        for ok in [
            json!(null),
            json!({"kind": "RemovePodsViolatingNodeTaintsArgs", "apiVersion": "descheduler/v1alpha2"}),
            json!({"excludedTaints": ["node.kubernetes.io/unschedulable", "dedicated=gpu", "example.com/x=y.z-1"]}),
            json!({"excludedTaints": null, "includePreferNoSchedule": null, "cordon": false}),
            json!({"labelSelector": {"matchLabels": {"role.kubernetes.io/node": ""}}}),
        ] {
            assert!(RemovePodsViolatingNodeTaints::new(&ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn runs_from_a_policy() {
        let policy = crate::policy::Policy::from_yaml(
            "p.yaml",
            r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: taints
  pluginConfig:
  - name: RemovePodsViolatingNodeTaints
    args:
      includePreferNoSchedule: true
      excludedTaints: [node.kubernetes.io/unschedulable]
  plugins: {deschedule: {enabled: [RemovePodsViolatingNodeTaints]}}
"#,
        )
        .unwrap();
        let pipeline = Pipeline::build(&policy, "p.yaml", &crate::plugins::REGISTRY).unwrap();
        let s = snapshot(
            vec![
                tnode("n1")
                    .taint("node.kubernetes.io/unschedulable", "", NoSchedule)
                    .build(),
                tnode("n2").taint("soft", "", PreferNoSchedule).build(),
            ],
            vec![tpod("a", "n1").build(), tpod("b", "n2").build()],
        );
        let plan = plan::plan(&pipeline, &s, 0).unwrap();
        let names: Vec<&str> = plan.evictions.iter().map(|e| &*s.pod(e.pod).name).collect();
        assert_eq!(names, vec!["b"]);
    }
}
