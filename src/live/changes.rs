//! What a change the watch sees means for `--cycle-on-change`: whether it can create work for
//! a cycle (a node added, becoming Ready or schedulable, its taints or labels changed; a pod
//! Pending, past MakeRoomForPendingPods' threshold when that plugin is configured, else any
//! newly Pending pod; a PodDisruptionBudget or a PodGroup changed), or only changed the
//! model. Pure: it is told the time, and keeps only what it needs to compare a node with how
//! it was.

use crate::labels::Labels;
use crate::snapshot::decode::stream::Object;
use crate::snapshot::store::{Change, Resource};
use crate::snapshot::{ClusterSnapshot, ConditionStatus, Node, Phase, Pod, Taint};
use std::collections::{HashMap, HashSet};

/// What a change means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    /// The model changed; no new work for a cycle.
    Changed,
    /// A pending pod crosses the pending threshold at this time (unix seconds).
    WorkAt(i64),
    /// The change can create work now.
    Work,
}

impl Signal {
    /// The more pressing of two signals (the earlier time of two `WorkAt`).
    pub fn max(self, other: Signal) -> Signal {
        match (self, other) {
            (Signal::WorkAt(a), Signal::WorkAt(b)) => Signal::WorkAt(a.min(b)),
            (a, b) => Ord::max(a, b),
        }
    }
}

/// What of a node can make work when it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeShape {
    ready: bool,
    unschedulable: bool,
    taints: Vec<Taint>,
    labels: Labels,
}

impl NodeShape {
    fn of(n: &Node) -> NodeShape {
        NodeShape {
            ready: n.ready,
            unschedulable: n.unschedulable,
            taints: n.taints.clone(),
            labels: n.labels.clone(),
        }
    }

    /// Whether going from `old` to this can create work: a node added or back (Ready and
    /// schedulable), newly Ready or schedulable, its taints or labels changed.
    fn makes_work(&self, old: Option<&NodeShape>) -> bool {
        match old {
            None => self.ready && !self.unschedulable,
            Some(old) => {
                (self.ready && !old.ready)
                    || (!self.unschedulable && old.unschedulable)
                    || self.taints != old.taints
                    || self.labels != old.labels
            }
        }
    }
}

/// Since when a pod has waited unschedulable (unix seconds), if it is Pending, bound to no
/// node, not terminating, and kube-scheduler marked it `PodScheduled=False` `Unschedulable`
/// (as MakeRoomForPendingPods counts it).
fn unschedulable_since(p: &Pod) -> Option<i64> {
    if !waits(p) {
        return None;
    }
    let c = p.status().conditions.iter().find(|c| {
        &*c.kind == "PodScheduled"
            && c.status == ConditionStatus::False
            && c.reason.as_deref() == Some("Unschedulable")
    })?;
    Some(c.last_transition.unwrap_or(p.created))
}

/// Whether a pod waits to be scheduled: Pending, bound to no node, not terminating.
fn waits(p: &Pod) -> bool {
    p.phase == Phase::Pending && p.node_name.is_none() && !p.terminating
}

/// Classifies the watch's changes.
#[derive(Debug, Default)]
pub struct WorkWatch {
    /// MakeRoomForPendingPods' `minPendingSeconds` when the policy enables it (the smallest
    /// of its profiles'); None: any newly Pending pod is work.
    pending_after: Option<i64>,
    /// Each node as last seen.
    nodes: HashMap<Box<str>, NodeShape>,
    /// The pending pods (namespace, name) already signalled as work.
    pending: HashSet<(Box<str>, Box<str>)>,
    /// The resources listed once already (their first list is what the first cycle reads).
    listed: HashSet<Resource>,
}

impl WorkWatch {
    pub fn new(pending_after: Option<i64>) -> WorkWatch {
        WorkWatch {
            pending_after,
            ..WorkWatch::default()
        }
    }

    /// What `change`, seen at `now` (unix seconds), means.
    pub fn seen(&mut self, change: &Change, now: i64) -> Signal {
        match change {
            Change::Replace(resource, parts) => {
                let first = self.listed.insert(*resource);
                match resource {
                    Resource::Nodes => {
                        let mut signal = Signal::Changed;
                        let mut nodes = HashMap::with_capacity(parts.nodes.len());
                        for n in &parts.nodes {
                            let shape = NodeShape::of(n);
                            if !first && shape.makes_work(self.nodes.get(&n.name)) {
                                signal = Signal::Work;
                            }
                            nodes.insert(n.name.clone(), shape);
                        }
                        self.nodes = nodes;
                        signal
                    }
                    Resource::Pods => {
                        let mut signal = Signal::Changed;
                        let was = std::mem::take(&mut self.pending);
                        for p in &parts.pods {
                            let key = (p.namespace.clone(), p.name.clone());
                            if waits(p) && was.contains(&key) {
                                self.pending.insert(key);
                            }
                            let s = self.pod(p, now);
                            // What the first cycle reads is no news; a pending pod not yet
                            // past the threshold is still to be waited for.
                            let s = match s {
                                Signal::Work if first => Signal::Changed,
                                s => s,
                            };
                            signal = signal.max(s);
                        }
                        signal
                    }
                    Resource::PodDisruptionBudgets | Resource::PodGroups(_) if !first => {
                        Signal::Work
                    }
                    _ => Signal::Changed,
                }
            }
            Change::Upsert(obj) => match obj {
                Object::Node(n) => {
                    let shape = NodeShape::of(n);
                    let work = shape.makes_work(self.nodes.get(&n.name));
                    self.nodes.insert(n.name.clone(), shape);
                    if work {
                        Signal::Work
                    } else {
                        Signal::Changed
                    }
                }
                Object::Pod(p) => self.pod(p, now),
                Object::Pdb(_) | Object::PodGroup(_) => Signal::Work,
                Object::Namespace(_)
                | Object::PriorityClass(_)
                | Object::Deployment(_)
                | Object::Autoscaler(_)
                | Object::ResourceQuota(_) => Signal::Changed,
            },
            Change::Delete(obj) => {
                match obj {
                    Object::Node(n) => {
                        self.nodes.remove(&n.name);
                    }
                    Object::Pod(p) => {
                        self.pending.remove(&(p.namespace.clone(), p.name.clone()));
                    }
                    Object::Pdb(_) | Object::PodGroup(_) => return Signal::Work,
                    Object::Namespace(_)
                    | Object::PriorityClass(_)
                    | Object::Deployment(_)
                    | Object::Autoscaler(_)
                    | Object::ResourceQuota(_) => {}
                }
                Signal::Changed
            }
        }
    }

    /// A pod added or modified: work once when it waits (past the threshold, if any).
    fn pod(&mut self, p: &Pod, now: i64) -> Signal {
        let key = (p.namespace.clone(), p.name.clone());
        if !waits(p) {
            self.pending.remove(&key);
            return Signal::Changed;
        }
        let due = match self.pending_after {
            None => now,
            Some(after) => match unschedulable_since(p) {
                Some(since) => since + after,
                // Not marked unschedulable yet: kube-scheduler's verdict is another event.
                None => return Signal::Changed,
            },
        };
        if due > now {
            return Signal::WorkAt(due);
        }
        if self.pending.insert(key) {
            Signal::Work
        } else {
            Signal::Changed
        }
    }
}

/// The earliest time after `now` (unix seconds) a pod of `snap` crosses the pending
/// threshold `after` (seconds), if one will.
pub fn pending_due(snap: &ClusterSnapshot, after: i64, now: i64) -> Option<i64> {
    snap.pods
        .iter()
        .filter_map(|p| unschedulable_since(p).map(|s| s + after))
        .filter(|&due| due > now)
        .min()
}

/// The earliest time after `now` (unix seconds) a pod's time-bounded protection ends, if one
/// will.
pub fn protection_ends(snap: &ClusterSnapshot, now: i64) -> Option<i64> {
    snap.pods
        .iter()
        .filter_map(|p| p.protected_until)
        .filter(|&end| end > now)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::{node, pod};
    use crate::snapshot::{PodCondition, SnapshotParts};

    const NOW: i64 = 1_800_000_000;

    fn up(o: Object) -> Change {
        Change::Upsert(o)
    }

    fn nodes(list: Vec<Node>) -> Change {
        Change::Replace(
            Resource::Nodes,
            SnapshotParts {
                nodes: list,
                ..SnapshotParts::default()
            },
        )
    }

    fn unschedulable(name: &str, since: i64) -> Pod {
        let mut p = pod("ns", name).phase(Phase::Pending).created(since).build();
        p.status_mut().conditions.push(PodCondition {
            kind: "PodScheduled".into(),
            status: ConditionStatus::False,
            reason: Some("Unschedulable".into()),
            last_transition: Some(since),
        });
        p
    }

    #[test]
    fn nodes_make_work_when_added_ready_schedulable_or_retainted_or_relabelled() {
        let mut w = WorkWatch::new(None);
        // The first list is what the first cycle reads.
        assert_eq!(
            w.seen(&nodes(vec![node("a").build()]), NOW),
            Signal::Changed
        );
        // A node added NotReady: nothing yet; Ready: work.
        let mut b = node("b").build();
        b.ready = false;
        assert_eq!(w.seen(&up(Object::Node(b.clone())), NOW), Signal::Changed);
        b.ready = true;
        assert_eq!(w.seen(&up(Object::Node(b.clone())), NOW), Signal::Work);
        // The same again (a status heartbeat): only a change.
        assert_eq!(w.seen(&up(Object::Node(b.clone())), NOW), Signal::Changed);
        // Cordoned: a change; uncordoned: work.
        b.unschedulable = true;
        assert_eq!(w.seen(&up(Object::Node(b.clone())), NOW), Signal::Changed);
        b.unschedulable = false;
        assert_eq!(w.seen(&up(Object::Node(b.clone())), NOW), Signal::Work);
        // Tainted, relabelled: work.
        let tainted = node("b")
            .taint("k", "v", crate::snapshot::TaintEffect::NoSchedule)
            .build();
        assert_eq!(w.seen(&up(Object::Node(tainted)), NOW), Signal::Work);
        let labelled = node("b").label("zone", "z1").build();
        assert_eq!(w.seen(&up(Object::Node(labelled)), NOW), Signal::Work);
        // Going NotReady, or deleted: a change.
        let mut down = node("b").label("zone", "z1").build();
        down.ready = false;
        assert_eq!(
            w.seen(&up(Object::Node(down.clone())), NOW),
            Signal::Changed
        );
        assert_eq!(
            w.seen(&Change::Delete(Object::Node(down)), NOW),
            Signal::Changed
        );
        // A list again (after a watch expired) with a new Ready node: work.
        assert_eq!(
            w.seen(&nodes(vec![node("a").build(), node("c").build()]), NOW),
            Signal::Work
        );
        assert_eq!(
            w.seen(&nodes(vec![node("a").build(), node("c").build()]), NOW),
            Signal::Changed
        );
    }

    #[test]
    fn without_make_room_a_newly_pending_pod_is_work_once() {
        let mut w = WorkWatch::new(None);
        let pending = pod("ns", "p").phase(Phase::Pending).build();
        assert_eq!(
            w.seen(&up(Object::Pod(Box::new(pending.clone()))), NOW),
            Signal::Work
        );
        // Its status updated while it still waits: no new work.
        assert_eq!(
            w.seen(&up(Object::Pod(Box::new(pending.clone()))), NOW),
            Signal::Changed
        );
        // Bound, running: a change.
        let bound = pod("ns", "p").node("a").build();
        assert_eq!(
            w.seen(&up(Object::Pod(Box::new(bound))), NOW),
            Signal::Changed
        );
        // A PDB or a PodGroup changed: work.
        let pdb = crate::snapshot::builders::pdb("ns", "b", "app", "x", 1);
        assert_eq!(w.seen(&up(Object::Pdb(pdb)), NOW), Signal::Work);
    }

    #[test]
    fn the_workloads_a_surge_reads_change_the_model_but_make_no_work() {
        let mut w = WorkWatch::new(None);
        let autoscaler = crate::snapshot::Autoscaler {
            namespace: "ns".into(),
            name: "h".into(),
            target_kind: "Deployment".into(),
            target_name: "web".into(),
        };
        let quota = crate::snapshot::ResourceQuota {
            namespace: "ns".into(),
            name: "q".into(),
            hard: vec![("pods".into(), 2)],
            used: vec![("pods".into(), 2)],
        };
        for obj in [Object::Autoscaler(autoscaler), Object::ResourceQuota(quota)] {
            assert_eq!(w.seen(&up(obj.clone()), NOW), Signal::Changed);
            assert_eq!(w.seen(&Change::Delete(obj), NOW), Signal::Changed);
        }
    }

    #[test]
    fn with_make_room_a_pending_pod_is_work_once_past_the_threshold() {
        let mut w = WorkWatch::new(Some(60));
        // Pending, not marked unschedulable yet: a change.
        let fresh = pod("ns", "p").phase(Phase::Pending).build();
        assert_eq!(
            w.seen(&up(Object::Pod(Box::new(fresh))), NOW),
            Signal::Changed
        );
        // Unschedulable since 10 s: work in 50 s.
        let p = unschedulable("p", NOW - 10);
        assert_eq!(
            w.seen(&up(Object::Pod(Box::new(p.clone()))), NOW),
            Signal::WorkAt(NOW + 50)
        );
        // Seen again past the threshold: work, once.
        assert_eq!(
            w.seen(&up(Object::Pod(Box::new(p.clone()))), NOW + 60),
            Signal::Work
        );
        assert_eq!(
            w.seen(&up(Object::Pod(Box::new(p.clone()))), NOW + 70),
            Signal::Changed
        );
        // The model tells when the next pending pod crosses the threshold.
        let snap = ClusterSnapshot::build(SnapshotParts {
            nodes: vec![node("a").build()],
            pods: vec![
                unschedulable("q", NOW - 30),
                unschedulable("r", NOW - 50),
                p,
            ],
            ..SnapshotParts::default()
        });
        assert_eq!(pending_due(&snap, 60, NOW), Some(NOW + 10));
        assert_eq!(pending_due(&snap, 10, NOW), None);
    }

    #[test]
    fn the_end_of_a_time_bounded_protection_is_work_then() {
        let protected = |name: &str, until: i64| {
            let mut p = pod("ns", name).node("a").build();
            p.protected_until = Some(until);
            p
        };
        let snap = ClusterSnapshot::build(SnapshotParts {
            nodes: vec![node("a").build()],
            pods: vec![
                protected("over", NOW - 5),
                protected("later", NOW + 300),
                protected("soon", NOW + 30),
                pod("ns", "plain").node("a").build(),
            ],
            ..SnapshotParts::default()
        });
        assert_eq!(protection_ends(&snap, NOW), Some(NOW + 30));
        assert_eq!(protection_ends(&snap, NOW + 300), None);
    }

    #[test]
    fn the_more_pressing_signal_wins() {
        assert_eq!(Signal::Changed.max(Signal::WorkAt(5)), Signal::WorkAt(5));
        assert_eq!(Signal::WorkAt(9).max(Signal::WorkAt(5)), Signal::WorkAt(5));
        assert_eq!(Signal::WorkAt(9).max(Signal::Work), Signal::Work);
    }
}
