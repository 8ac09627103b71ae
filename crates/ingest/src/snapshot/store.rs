//! The cluster as lists and watch events leave it, for continuous mode: one copy of the
//! compact model, kept current between cycles. Changes wait in a queue of their own until a
//! cycle asks for the snapshot; then they are merged into the model's sorted lists in one
//! pass and the indexes are built again. A cycle on an unchanged cluster reuses the last
//! snapshot as it is (only its measured usage is dropped), so it costs about the planning
//! alone.
//!
//! A resource counts as read once its first complete list has been taken in
//! ([`Change::Replace`]); [`ClusterStore::missing`] names those still unread, and no
//! snapshot should be planned from while any is.

use super::decode::{self, stream::Object};
use super::{
    Autoscaler, ClusterSnapshot, Deployment, GangKind, Namespace, Node, Pdb, Pod, PodGroup,
    PriorityClass, ResourceQuota, SnapshotParts, NO_SHAPE,
};
use std::collections::BTreeMap;

/// The resources a cluster is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Nodes,
    Pods,
    PodDisruptionBudgets,
    Namespaces,
    PriorityClasses,
    PodGroups(GangKind),
    /// The workloads a surge reads (read only when a profile surges).
    Deployments,
    HorizontalPodAutoscalers,
    ResourceQuotas,
}

impl Resource {
    /// Every resource, in the order they are listed.
    pub const ALL: [Resource; 11] = [
        Resource::Nodes,
        Resource::Pods,
        Resource::PodDisruptionBudgets,
        Resource::Namespaces,
        Resource::PriorityClasses,
        Resource::PodGroups(GangKind::SchedulerPlugins),
        Resource::PodGroups(GangKind::Volcano),
        Resource::PodGroups(GangKind::Kubernetes),
        Resource::Deployments,
        Resource::HorizontalPodAutoscalers,
        Resource::ResourceQuotas,
    ];

    /// The resources a cluster is read from: all of them with `workloads` (a profile moves
    /// pods by surge), else all but the workloads.
    pub fn read(workloads: bool) -> impl Iterator<Item = Resource> {
        Resource::ALL
            .into_iter()
            .filter(move |r| workloads || !r.is_workload())
    }

    /// Whether this is one of the workloads only a surge reads.
    pub fn is_workload(self) -> bool {
        matches!(
            self,
            Resource::Deployments | Resource::HorizontalPodAutoscalers | Resource::ResourceQuotas
        )
    }

    fn index(self) -> usize {
        match self {
            Resource::Nodes => 0,
            Resource::Pods => 1,
            Resource::PodDisruptionBudgets => 2,
            Resource::Namespaces => 3,
            Resource::PriorityClasses => 4,
            Resource::PodGroups(GangKind::SchedulerPlugins) => 5,
            Resource::PodGroups(GangKind::Volcano) => 6,
            Resource::PodGroups(GangKind::Kubernetes) => 7,
            Resource::Deployments => 8,
            Resource::HorizontalPodAutoscalers => 9,
            Resource::ResourceQuotas => 10,
        }
    }

    /// As the API names it (`pods`, `podgroups.scheduling.volcano.sh`).
    pub fn name(self) -> &'static str {
        match self {
            Resource::Nodes => "nodes",
            Resource::Pods => "pods",
            Resource::PodDisruptionBudgets => "poddisruptionbudgets",
            Resource::Namespaces => "namespaces",
            Resource::PriorityClasses => "priorityclasses",
            Resource::PodGroups(GangKind::SchedulerPlugins) => "podgroups.scheduling.x-k8s.io",
            Resource::PodGroups(GangKind::Volcano) => "podgroups.scheduling.volcano.sh",
            Resource::PodGroups(GangKind::Kubernetes) => "podgroups.scheduling.k8s.io",
            Resource::Deployments => "deployments.apps",
            Resource::HorizontalPodAutoscalers => "horizontalpodautoscalers.autoscaling",
            Resource::ResourceQuotas => "resourcequotas",
        }
    }
}

/// A change to the cluster's state.
#[derive(Debug)]
pub enum Change {
    /// A complete list of one resource: it replaces what was known of it (first list, or a
    /// list again after a watch expired). Objects of other resources in `parts` are ignored.
    Replace(Resource, SnapshotParts),
    /// An object added or modified.
    Upsert(Object),
    /// An object deleted.
    Delete(Object),
}

/// An object's place in its sorted list: (gang kind, namespace, name), as the snapshot sorts.
type Key = (u8, Box<str>, Box<str>);

trait Keyed: Sized {
    fn key(&self) -> (u8, &str, &str);
    /// Takes `old`'s storage for what this one holds the same of.
    fn share_with(&mut self, _old: &Self) {}
}

impl Keyed for Node {
    fn key(&self) -> (u8, &str, &str) {
        (0, "", &self.name)
    }
}

impl Keyed for Pod {
    fn key(&self) -> (u8, &str, &str) {
        (0, &self.namespace, &self.name)
    }
    fn share_with(&mut self, old: &Pod) {
        decode::share(&mut self.images, &old.images);
        decode::share_template(self, old);
    }
}

impl Keyed for Pdb {
    fn key(&self) -> (u8, &str, &str) {
        (0, &self.namespace, &self.name)
    }
}

impl Keyed for Namespace {
    fn key(&self) -> (u8, &str, &str) {
        (0, "", &self.name)
    }
}

impl Keyed for PriorityClass {
    fn key(&self) -> (u8, &str, &str) {
        (0, "", &self.name)
    }
}

impl Keyed for PodGroup {
    fn key(&self) -> (u8, &str, &str) {
        (self.kind as u8, &self.namespace, &self.name)
    }
}

impl Keyed for Deployment {
    fn key(&self) -> (u8, &str, &str) {
        (0, &self.namespace, &self.name)
    }
}

impl Keyed for Autoscaler {
    fn key(&self) -> (u8, &str, &str) {
        (0, &self.namespace, &self.name)
    }
}

impl Keyed for ResourceQuota {
    fn key(&self) -> (u8, &str, &str) {
        (0, &self.namespace, &self.name)
    }
}

fn owned((k, a, b): (u8, &str, &str)) -> Key {
    (k, a.into(), b.into())
}

/// The changes to one list since the snapshot was built.
struct Pending<T> {
    /// A complete list that replaces the old one.
    replace: Option<Vec<T>>,
    /// Then, by key: the object now (None: deleted).
    changes: BTreeMap<Key, Option<T>>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            replace: None,
            changes: BTreeMap::new(),
        }
    }
}

impl<T: Keyed> Pending<T> {
    fn is_empty(&self) -> bool {
        self.replace.is_none() && self.changes.is_empty()
    }

    fn replace(&mut self, list: Vec<T>) {
        self.changes.clear();
        self.replace = Some(list);
    }

    fn upsert(&mut self, obj: T) {
        self.changes.insert(owned(obj.key()), Some(obj));
    }

    fn delete(&mut self, obj: &T) {
        self.changes.insert(owned(obj.key()), None);
    }

    /// `old` (sorted by key, each key once) with these changes: one pass over both.
    fn merge(self, old: Vec<T>) -> Vec<T> {
        let Pending { replace, changes } = self;
        let (mut base, had) = match replace {
            Some(mut list) => {
                if !list.windows(2).all(|w| w[0].key() < w[1].key()) {
                    list.sort_by(|a, b| a.key().cmp(&b.key()));
                    list.dedup_by(|a, b| a.key() == b.key());
                }
                (list, Some(old))
            }
            None => (old, None),
        };
        // A new list's objects share with the ones they replace (a list again after a
        // watch expired holds mostly the same objects).
        if let Some(had) = had {
            share_all(&mut base, &had);
        }
        if changes.is_empty() {
            return base;
        }
        let mut out = Vec::with_capacity(base.len() + changes.len());
        let mut base = base.into_iter().peekable();
        for (key, change) in changes {
            let k = (key.0, &*key.1, &*key.2);
            while base.peek().is_some_and(|o| o.key() < k) {
                out.extend(base.next());
            }
            let old = base.next_if(|o| o.key() == k);
            if let Some(mut new) = change {
                if let Some(old) = &old {
                    new.share_with(old);
                }
                out.push(new);
            }
        }
        out.extend(base);
        out
    }
}

/// Shares storage between the objects of `new` and those with the same key in `old`
/// (both sorted).
fn share_all<T: Keyed>(new: &mut [T], old: &[T]) {
    let mut j = 0;
    for obj in new.iter_mut() {
        while j < old.len() && old[j].key() < obj.key() {
            j += 1;
        }
        if j < old.len() && old[j].key() == obj.key() {
            obj.share_with(&old[j]);
        }
    }
}

/// Keeps the objects of `list` whose key is not of gang kind `kind`, and returns the others.
fn split_kind(list: &mut Vec<PodGroup>, kind: GangKind) -> Vec<PodGroup> {
    let (of, rest): (Vec<_>, Vec<_>) = std::mem::take(list)
        .into_iter()
        .partition(|g| g.kind == kind);
    *list = rest;
    of
}

/// The cluster's state, kept from lists and watch events.
#[derive(Default)]
pub struct ClusterStore {
    snapshot: ClusterSnapshot,
    nodes: Pending<Node>,
    pods: Pending<Pod>,
    pdbs: Pending<Pdb>,
    namespaces: Pending<Namespace>,
    priority_classes: Pending<PriorityClass>,
    pod_groups: [Pending<PodGroup>; 3],
    deployments: Pending<Deployment>,
    autoscalers: Pending<Autoscaler>,
    quotas: Pending<ResourceQuota>,
    /// Which resources have had a complete list (those not read count as listed: empty).
    listed: [bool; Resource::ALL.len()],
    /// Changes taken in since the snapshot was built.
    changes: usize,
}

impl ClusterStore {
    /// A store of every resource but the workloads a surge reads.
    pub fn new() -> Self {
        ClusterStore::reading(false)
    }

    /// A store of the resources [`Resource::read`] names: a snapshot waits for each of
    /// them, and holds none of the others.
    pub fn reading(workloads: bool) -> Self {
        let mut store = ClusterStore::default();
        for r in Resource::ALL {
            store.listed[r.index()] = !Resource::read(workloads).any(|x| x == r);
        }
        store
    }

    /// Takes in a change.
    pub fn apply(&mut self, change: Change) {
        self.changes += 1;
        match change {
            Change::Replace(resource, parts) => {
                self.listed[resource.index()] = true;
                match resource {
                    Resource::Nodes => self.nodes.replace(parts.nodes),
                    Resource::Pods => self.pods.replace(parts.pods),
                    Resource::PodDisruptionBudgets => self.pdbs.replace(parts.pdbs),
                    Resource::Namespaces => self.namespaces.replace(parts.namespaces),
                    Resource::PriorityClasses => {
                        self.priority_classes.replace(parts.priority_classes)
                    }
                    Resource::PodGroups(kind) => {
                        let mut groups = parts.pod_groups;
                        groups.retain(|g| g.kind == kind);
                        self.pod_groups[kind as usize].replace(groups)
                    }
                    Resource::Deployments => self.deployments.replace(parts.workloads.deployments),
                    Resource::HorizontalPodAutoscalers => {
                        self.autoscalers.replace(parts.workloads.autoscalers)
                    }
                    Resource::ResourceQuotas => self.quotas.replace(parts.workloads.quotas),
                }
            }
            Change::Upsert(obj) => match obj {
                Object::Node(o) => self.nodes.upsert(o),
                Object::Pod(o) => self.pods.upsert(*o),
                Object::Pdb(o) => self.pdbs.upsert(o),
                Object::Namespace(o) => self.namespaces.upsert(o),
                Object::PriorityClass(o) => self.priority_classes.upsert(o),
                Object::PodGroup(o) => self.pod_groups[o.kind as usize].upsert(o),
                Object::Deployment(o) => self.deployments.upsert(o),
                Object::Autoscaler(o) => self.autoscalers.upsert(o),
                Object::ResourceQuota(o) => self.quotas.upsert(o),
            },
            Change::Delete(obj) => match &obj {
                Object::Node(o) => self.nodes.delete(o),
                Object::Pod(o) => self.pods.delete(o),
                Object::Pdb(o) => self.pdbs.delete(o),
                Object::Namespace(o) => self.namespaces.delete(o),
                Object::PriorityClass(o) => self.priority_classes.delete(o),
                Object::PodGroup(o) => self.pod_groups[o.kind as usize].delete(o),
                Object::Deployment(o) => self.deployments.delete(o),
                Object::Autoscaler(o) => self.autoscalers.delete(o),
                Object::ResourceQuota(o) => self.quotas.delete(o),
            },
        }
    }

    /// The resources not listed completely yet (a snapshot now would miss them).
    pub fn missing(&self) -> Vec<Resource> {
        Resource::ALL
            .into_iter()
            .filter(|r| !self.listed[r.index()])
            .collect()
    }

    /// How many changes were taken in since the last snapshot.
    pub fn changes(&self) -> usize {
        self.changes
    }

    /// The snapshot of the state now: built again when anything changed, else the last one
    /// (without the measured usage attached to it).
    pub fn snapshot(&mut self) -> &mut ClusterSnapshot {
        let pending = !(self.nodes.is_empty()
            && self.pods.is_empty()
            && self.pdbs.is_empty()
            && self.namespaces.is_empty()
            && self.priority_classes.is_empty()
            && self.pod_groups.iter().all(Pending::is_empty)
            && self.deployments.is_empty()
            && self.autoscalers.is_empty()
            && self.quotas.is_empty());
        if pending {
            let mut parts = std::mem::take(&mut self.snapshot).into_parts();
            let pods_changed = !self.pods.is_empty();
            parts.nodes = std::mem::take(&mut self.nodes).merge(parts.nodes);
            parts.pods = std::mem::take(&mut self.pods).merge(parts.pods);
            parts.pdbs = std::mem::take(&mut self.pdbs).merge(parts.pdbs);
            parts.namespaces = std::mem::take(&mut self.namespaces).merge(parts.namespaces);
            parts.priority_classes =
                std::mem::take(&mut self.priority_classes).merge(parts.priority_classes);
            let mut groups = Vec::new();
            for kind in [
                GangKind::SchedulerPlugins,
                GangKind::Volcano,
                GangKind::Kubernetes,
            ] {
                let of = split_kind(&mut parts.pod_groups, kind);
                groups.extend(std::mem::take(&mut self.pod_groups[kind as usize]).merge(of));
            }
            parts.pod_groups = groups;
            let w = &mut parts.workloads;
            w.deployments =
                std::mem::take(&mut self.deployments).merge(std::mem::take(&mut w.deployments));
            w.autoscalers =
                std::mem::take(&mut self.autoscalers).merge(std::mem::take(&mut w.autoscalers));
            w.quotas = std::mem::take(&mut self.quotas).merge(std::mem::take(&mut w.quotas));
            if pods_changed {
                // Shapes are numbered by the pods' places: find them again.
                for p in &mut parts.pods {
                    p.shape = NO_SHAPE;
                }
            }
            self.snapshot = ClusterSnapshot::build(parts);
        } else {
            self.snapshot.clear_usage();
        }
        self.changes = 0;
        &mut self.snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::{node, pod};

    fn names(s: &ClusterSnapshot) -> Vec<String> {
        s.pods.iter().map(|p| p.key()).collect()
    }

    fn parts(nodes: Vec<Node>, pods: Vec<Pod>) -> SnapshotParts {
        SnapshotParts {
            nodes,
            pods,
            ..SnapshotParts::default()
        }
    }

    #[test]
    fn lists_then_events_give_the_state_a_fresh_list_would() {
        let mut store = ClusterStore::new();
        assert_eq!(store.missing().len(), Resource::read(false).count());
        let n1 = node("n1").cpu(4000).build();
        let n2 = node("n2").cpu(4000).build();
        store.apply(Change::Replace(
            Resource::Nodes,
            parts(vec![n1.clone(), n2], vec![]),
        ));
        let pods: Vec<Pod> = ["a", "c", "e"]
            .iter()
            .map(|n| pod("ns", n).node("n1").cpu(100).build())
            .collect();
        store.apply(Change::Replace(Resource::Pods, parts(vec![], pods)));
        for r in Resource::read(false).skip(2) {
            store.apply(Change::Replace(r, SnapshotParts::default()));
        }
        assert!(store.missing().is_empty());
        assert_eq!(names(store.snapshot()), ["ns/a", "ns/c", "ns/e"]);
        assert_eq!(store.changes(), 0);

        // Added, modified, deleted; a node goes NotReady.
        store.apply(Change::Upsert(Object::Pod(Box::new(
            pod("ns", "b").node("n2").cpu(300).build(),
        ))));
        store.apply(Change::Upsert(Object::Pod(Box::new(
            pod("ns", "c").node("n2").cpu(200).build(),
        ))));
        store.apply(Change::Delete(Object::Pod(Box::new(
            pod("ns", "e").build(),
        ))));
        store.apply(Change::Upsert(Object::Pod(Box::new(
            pod("aa", "z").node("n1").cpu(50).build(),
        ))));
        let mut n1_down = n1;
        n1_down.ready = false;
        store.apply(Change::Upsert(Object::Node(n1_down)));
        assert_eq!(store.changes(), 5);
        let s = store.snapshot();
        assert_eq!(names(s), ["aa/z", "ns/a", "ns/b", "ns/c"]);
        let n2 = s.node_id("n2").unwrap();
        assert_eq!(s.node_requested(n2).get("cpu"), 500);
        assert!(!s.node(s.node_id("n1").unwrap()).ready);

        // The same as building the end state at once.
        let fresh =
            ClusterSnapshot::build(parts(s.nodes.clone(), s.pods.iter().cloned().collect()));
        assert_eq!(names(&fresh), names(s));
        assert_eq!(fresh.shape_count(), s.shape_count());
    }

    #[test]
    fn a_list_again_replaces_what_events_left() {
        let mut store = ClusterStore::new();
        let pods = vec![pod("ns", "a").build(), pod("ns", "b").build()];
        store.apply(Change::Replace(Resource::Pods, parts(vec![], pods)));
        store.apply(Change::Upsert(Object::Pod(Box::new(
            pod("ns", "c").build(),
        ))));
        // A watch expired (410 Gone): the list again is the truth, whatever came before.
        store.apply(Change::Replace(
            Resource::Pods,
            parts(vec![], vec![pod("ns", "b").build(), pod("ns", "d").build()]),
        ));
        assert_eq!(names(store.snapshot()), ["ns/b", "ns/d"]);
        // Unchanged: the same snapshot again.
        let before = store.snapshot() as *const ClusterSnapshot;
        assert_eq!(names(store.snapshot()), ["ns/b", "ns/d"]);
        assert_eq!(before, store.snapshot() as *const ClusterSnapshot);
    }

    #[test]
    fn pod_groups_of_each_gang_scheduler_are_listed_apart() {
        let mut store = ClusterStore::new();
        // Replaces the pod groups of one gang scheduler with the named ones.
        let replace = |store: &mut ClusterStore, kind: GangKind, names: &[&str]| {
            let pod_groups = names
                .iter()
                .map(|name| PodGroup {
                    kind,
                    namespace: "ns".into(),
                    name: (*name).into(),
                    min_member: 2,
                    disruption: None,
                })
                .collect();
            let parts = SnapshotParts {
                pod_groups,
                ..SnapshotParts::default()
            };
            store.apply(Change::Replace(Resource::PodGroups(kind), parts));
        };
        replace(&mut store, GangKind::SchedulerPlugins, &["a"]);
        replace(&mut store, GangKind::Volcano, &["v"]);
        replace(&mut store, GangKind::Kubernetes, &["k"]);
        assert_eq!(store.snapshot().pod_groups.len(), 3);
        replace(&mut store, GangKind::Volcano, &[]);
        let s = store.snapshot();
        assert_eq!(s.pod_groups.len(), 2);
        assert_eq!(s.pod_groups[0].kind, GangKind::SchedulerPlugins);
        assert_eq!(s.pod_groups[1].kind, GangKind::Kubernetes);
        replace(&mut store, GangKind::Kubernetes, &[]);
        let s = store.snapshot();
        assert_eq!(s.pod_groups.len(), 1);
        assert_eq!(s.pod_groups[0].kind, GangKind::SchedulerPlugins);
    }

    #[test]
    fn workloads_are_kept_current_from_lists_and_events_when_read() {
        use crate::snapshot::{Deployment, ResourceQuota, Workloads};
        let deployment = |name: &str, replicas: i32| Deployment {
            namespace: "app".into(),
            name: name.into(),
            uid: format!("u-{name}").into(),
            replicas,
            paused: false,
            generation: 1,
            observed_generation: 1,
            status_replicas: replicas,
            updated_replicas: replicas,
            available_replicas: replicas,
            surge_in_flight: None,
        };
        let autoscaler = |name: &str, target: &str| Autoscaler {
            namespace: "app".into(),
            name: name.into(),
            target_kind: "Deployment".into(),
            target_name: target.into(),
        };
        let quota = |name: &str, used: i64| ResourceQuota {
            namespace: "app".into(),
            name: name.into(),
            hard: vec![("pods".into(), 10)],
            used: vec![("pods".into(), used)],
        };
        // Without surges the workloads are not waited for, and none are held.
        let plain = ClusterStore::new();
        assert!(plain.missing().iter().all(|r| !r.is_workload()));
        assert_eq!(plain.missing().len(), Resource::ALL.len() - 3);
        let mut store = ClusterStore::reading(true);
        assert_eq!(store.missing().len(), Resource::ALL.len());
        for r in Resource::read(false) {
            store.apply(Change::Replace(r, SnapshotParts::default()));
        }
        assert_eq!(
            store.missing(),
            [
                Resource::Deployments,
                Resource::HorizontalPodAutoscalers,
                Resource::ResourceQuotas
            ]
        );
        let listed = |w: Workloads| SnapshotParts {
            workloads: w,
            ..SnapshotParts::default()
        };
        store.apply(Change::Replace(
            Resource::Deployments,
            listed(Workloads {
                deployments: vec![deployment("web", 2), deployment("api", 1)],
                ..Workloads::default()
            }),
        ));
        store.apply(Change::Replace(
            Resource::HorizontalPodAutoscalers,
            listed(Workloads {
                autoscalers: vec![autoscaler("web", "web")],
                ..Workloads::default()
            }),
        ));
        store.apply(Change::Replace(
            Resource::ResourceQuotas,
            listed(Workloads {
                quotas: vec![quota("q", 3)],
                ..Workloads::default()
            }),
        ));
        assert!(store.missing().is_empty());
        let w = &store.snapshot().workloads;
        let names: Vec<&str> = w.deployments.iter().map(|d| &*d.name).collect();
        assert_eq!(
            names,
            ["api", "web"],
            "sorted, as the snapshot looks them up"
        );
        assert_eq!(w.autoscalers.len(), 1);

        // Added, modified, deleted.
        store.apply(Change::Upsert(Object::Deployment(deployment("web", 3))));
        store.apply(Change::Upsert(Object::Deployment(deployment("db", 1))));
        store.apply(Change::Delete(Object::Deployment(deployment("api", 1))));
        store.apply(Change::Delete(Object::Autoscaler(autoscaler("web", "web"))));
        store.apply(Change::Upsert(Object::Autoscaler(autoscaler("db", "db"))));
        store.apply(Change::Upsert(Object::ResourceQuota(quota("q", 4))));
        store.apply(Change::Upsert(Object::ResourceQuota(quota("a", 0))));
        let w = &store.snapshot().workloads;
        let replicas: Vec<(&str, i32)> = w
            .deployments
            .iter()
            .map(|d| (&*d.name, d.replicas))
            .collect();
        assert_eq!(replicas, [("db", 1), ("web", 3)]);
        assert_eq!(w.deployment("app", "web").unwrap().replicas, 3);
        let targets: Vec<&str> = w.autoscalers.iter().map(|a| &*a.target_name).collect();
        assert_eq!(targets, ["db"]);
        let used: Vec<(&str, i64)> = w.quotas.iter().map(|q| (&*q.name, q.used[0].1)).collect();
        assert_eq!(used, [("a", 0), ("q", 4)]);
        // Nothing else changed: the same snapshot again.
        let before = store.snapshot() as *const ClusterSnapshot;
        assert_eq!(before, store.snapshot() as *const ClusterSnapshot);
        // A list again is the truth.
        store.apply(Change::Replace(
            Resource::Deployments,
            SnapshotParts::default(),
        ));
        let w = &store.snapshot().workloads;
        assert!(w.deployments.is_empty());
        assert_eq!(w.quotas.len(), 2);
    }
}
