//! A seeded churn generator for the differential soak (`tests/soak.rs`, `benches/soak/run`):
//! it loads a cluster of nodes and ReplicaSets through the API, then changes it as a busy
//! cluster changes: pods created, deleted (at once, or left terminating), relabelled, going
//! Pending, Running and Failed; ReplicaSets scaled; nodes added, removed, tainted, cordoned,
//! going NotReady and back; disruption budgets and (Kubernetes') PodGroups created, changed and
//! deleted. Only kube-apiserver needs to run: the generator writes what the controllers and the
//! kubelet would (statuses, the pods of a scaled ReplicaSet, the pods of a removed node
//! deleted).
//!
//! The same seed draws the same changes in the same order, so a failure replays.

use super::states::Rng;
use super::{create_namespace, create_node, NodeConfig, PAUSE_IMAGE};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The generator's kinds of change, counted as they are applied.
pub const KINDS: [&str; 19] = [
    "pod-created",
    "pod-created-pending",
    "pod-deleted",
    "pod-deleted-graceful",
    "pod-relabelled",
    "pod-running",
    "pod-failed",
    "replicaset-scaled",
    "node-added",
    "node-removed",
    "node-tainted",
    "node-untainted",
    "node-cordoned",
    "node-uncordoned",
    "node-ready-flipped",
    "pdb-created-or-changed",
    "pdb-deleted",
    "podgroup-created-or-changed",
    "podgroup-deleted",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Bound to a node, not started yet.
    Pending,
    /// Not bound to any node.
    Unscheduled,
    Running,
    Failed,
    /// Deleted with a grace period: no kubelet finishes it, it stays terminating.
    Terminating,
}

#[derive(Clone, Debug)]
struct PodState {
    name: String,
    node: Option<String>,
    phase: Phase,
}

#[derive(Clone, Debug)]
struct Rs {
    name: String,
    uid: String,
    cpu: &'static str,
    /// The Kubernetes PodGroup (`scheduling.k8s.io`) its pods name, for a gang.
    group: Option<String>,
    pods: Vec<PodState>,
}

#[derive(Clone, Debug, Default)]
struct NodeState {
    tainted: bool,
    cordoned: bool,
    not_ready: bool,
}

/// The churned cluster's state as the generator wrote it, and its random source.
pub struct Churn {
    client: Client,
    pub namespace: String,
    pub seed: u64,
    rng: Rng,
    nodes: BTreeMap<String, NodeState>,
    replicasets: Vec<Rs>,
    budgets: BTreeMap<String, i32>,
    /// The PodGroups that exist, by name.
    groups: BTreeMap<String, i64>,
    next: u64,
    /// The node and pod counts of the load: creations stop 10% above them, deletions 10%
    /// below (a removed node's pods go with it), so memory figures compare like with like.
    target_nodes: usize,
    target_pods: usize,
    /// Changes applied so far, by kind.
    pub applied: BTreeMap<&'static str, u64>,
}

/// Pods per ReplicaSet at load.
const PODS_PER_RS: usize = 10;
const CPUS: [&str; 4] = ["100m", "200m", "300m", "500m"];

impl Rs {
    /// The ReplicaSet without its pods.
    fn clone_meta(&self) -> Rs {
        Rs {
            pods: Vec::new(),
            ..self.clone()
        }
    }
}

impl Churn {
    /// Creates a namespace, `nodes` Ready nodes and about `pods` Running pods in ReplicaSets
    /// of ten (placed unevenly: a third of the nodes get most), `workers` requests at a time.
    pub async fn load(
        client: &Client,
        seed: u64,
        nodes: usize,
        pods: usize,
        workers: usize,
    ) -> Churn {
        let namespace = create_namespace(client, "soak").await;
        let mut c = Churn {
            client: client.clone(),
            namespace,
            seed,
            rng: Rng::new(seed),
            nodes: BTreeMap::new(),
            replicasets: Vec::new(),
            budgets: BTreeMap::new(),
            groups: BTreeMap::new(),
            next: 0,
            target_nodes: nodes.max(2),
            target_pods: pods.max(PODS_PER_RS),
            applied: KINDS.iter().map(|k| (*k, 0)).collect(),
        };
        let names: Vec<String> = (0..nodes).map(|_| c.fresh("node")).collect();
        futures::stream::iter(names.iter().map(|n| create_node(client, node_config(n))))
            .buffer_unordered(workers)
            .collect::<Vec<_>>()
            .await;
        for n in names {
            c.nodes.insert(n, NodeState::default());
        }
        let hot: Vec<String> = c.nodes.keys().take(nodes.div_ceil(3)).cloned().collect();
        let all: Vec<String> = c.nodes.keys().cloned().collect();
        let mut to_create = Vec::new();
        for _ in 0..pods.div_ceil(PODS_PER_RS) {
            let name = c.fresh("rs");
            let cpu = c.rng.pick(&CPUS);
            let uid = c.create_replicaset(&name, PODS_PER_RS as i32).await;
            // One ReplicaSet in four is a gang: its pods name a PodGroup, made later (or
            // never: then every member is protected).
            let group = c.rng.chance(25).then(|| format!("gang-{name}"));
            let mut rs = Rs {
                name,
                uid,
                cpu,
                group,
                pods: Vec::new(),
            };
            for _ in 0..PODS_PER_RS {
                let node = if c.rng.chance(70) {
                    pick(&mut c.rng, &hot)
                } else {
                    pick(&mut c.rng, &all)
                };
                let pod = PodState {
                    name: c.fresh(&rs.name),
                    node: Some(node),
                    phase: Phase::Running,
                };
                to_create.push((rs.clone_meta(), pod.clone()));
                rs.pods.push(pod);
            }
            c.replicasets.push(rs);
        }
        let (client, ns) = (&c.client, c.namespace.as_str());
        futures::stream::iter(to_create.iter().map(|(rs, p)| async move {
            create_pod(client, ns, rs, p, c_label(0)).await;
        }))
        .buffer_unordered(workers)
        .collect::<Vec<_>>()
        .await;
        c
    }

    /// A name not used before in this run.
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{}", self.next)
    }

    async fn create_replicaset(&self, name: &str, replicas: i32) -> String {
        let rs: ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": PAUSE_IMAGE}]}
                }
            }
        }))
        .unwrap();
        Api::<ReplicaSet>::namespaced(self.client.clone(), &self.namespace)
            .create(&PostParams::default(), &rs)
            .await
            .unwrap_or_else(|e| panic!("creating replicaset {name}: {e}"))
            .metadata
            .uid
            .unwrap()
    }

    fn pods_api(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Nodes (and pods in them) in a stable order.
    fn node_names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// How many pods the generator keeps, terminating ones included.
    pub fn pods(&self) -> usize {
        self.replicasets.iter().map(|r| r.pods.len()).sum()
    }

    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Changes applied so far.
    pub fn total(&self) -> u64 {
        self.applied.values().sum()
    }

    /// One random change, applied through the API; its kind.
    pub async fn step(&mut self) -> &'static str {
        let kind = loop {
            let roll = self.rng.range(1, 106);
            // Below the load's pods by more than 10% (a removed node takes its pods along):
            // half the changes are pods created, as the ReplicaSet controller would.
            let roll = if self.pods() * 10 < self.target_pods * 9 && self.rng.chance(50) {
                1
            } else {
                roll
            };
            let kind = match roll {
                1..=18 => "pod-created",
                19..=22 => "pod-created-pending",
                23..=35 => "pod-deleted",
                36..=39 => "pod-deleted-graceful",
                40..=51 => "pod-relabelled",
                52..=57 => "pod-running",
                58..=63 => "pod-failed",
                64..=70 => "replicaset-scaled",
                71..=73 => "node-added",
                74..=75 => "node-removed",
                76..=79 => "node-tainted",
                80..=82 => "node-cordoned",
                83..=88 => "node-ready-flipped",
                89..=96 => "pdb-created-or-changed",
                97..=100 => "pdb-deleted",
                101..=104 => "podgroup-created-or-changed",
                _ => "podgroup-deleted",
            };
            if let Some(applied) = self.apply(kind).await {
                break applied;
            }
        };
        *self.applied.entry(kind).or_default() += 1;
        kind
    }

    /// A random node's name.
    fn some_node(&mut self) -> String {
        let names = self.node_names();
        pick(&mut self.rng, &names)
    }

    /// A random ReplicaSet's index.
    fn some_rs(&mut self) -> usize {
        self.rng.range(0, self.replicasets.len() as i64 - 1) as usize
    }

    /// A pod in `phases`, picked at random: (ReplicaSet, pod) indexes.
    fn some_pod(&mut self, phases: &[Phase]) -> Option<(usize, usize)> {
        let r = self.some_rs();
        let candidates: Vec<usize> = (0..self.replicasets[r].pods.len())
            .filter(|&i| phases.contains(&self.replicasets[r].pods[i].phase))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        Some((r, self.rng.pick(&candidates)))
    }

    /// Applies a change of `kind`; None when none applies now (draw another).
    async fn apply(&mut self, kind: &'static str) -> Option<&'static str> {
        let ns = self.namespace.clone();
        match kind {
            "pod-created" | "pod-created-pending" => {
                if self.pods() * 10 > self.target_pods * 11 {
                    return None;
                }
                let r = self.some_rs();
                self.add_pod(r, kind == "pod-created-pending").await;
            }
            "pod-deleted" => {
                if self.pods() * 10 < self.target_pods * 9 {
                    return None;
                }
                let (r, i) = self.some_pod(&[
                    Phase::Running,
                    Phase::Pending,
                    Phase::Unscheduled,
                    Phase::Failed,
                    Phase::Terminating,
                ])?;
                let pod = self.replicasets[r].pods.remove(i);
                delete_pod(&self.client, &ns, &pod.name, 0).await;
            }
            "pod-deleted-graceful" => {
                let (r, i) = self.some_pod(&[Phase::Running])?;
                let name = self.replicasets[r].pods[i].name.clone();
                delete_pod(&self.client, &ns, &name, 30).await;
                self.replicasets[r].pods[i].phase = Phase::Terminating;
            }
            "pod-relabelled" => {
                let (r, i) = self.some_pod(&[Phase::Running, Phase::Pending, Phase::Failed])?;
                let tier = c_label(self.rng.range(0, 3));
                let name = self.replicasets[r].pods[i].name.clone();
                let patch = json!({"metadata": {"labels": {"tier": tier}}});
                self.pods_api()
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap_or_else(|e| panic!("relabelling {ns}/{name}: {e}"));
            }
            "pod-running" => {
                let (r, i) = self.some_pod(&[Phase::Pending])?;
                let name = self.replicasets[r].pods[i].name.clone();
                super::mark_pod_running(&self.client, &ns, &name).await;
                self.replicasets[r].pods[i].phase = Phase::Running;
            }
            "pod-failed" => {
                let (r, i) = self.some_pod(&[Phase::Running])?;
                let name = self.replicasets[r].pods[i].name.clone();
                let reason = self.rng.pick(&["Evicted", "OOMKilled", "Error"]);
                let patch = json!({"status": {
                    "phase": "Failed",
                    "reason": reason,
                    "containerStatuses": [{
                        "name": "c", "image": PAUSE_IMAGE, "imageID": "", "ready": false,
                        "restartCount": self.rng.range(0, 5),
                        "state": {"terminated": {"exitCode": 1, "reason": reason}}
                    }]
                }});
                self.pods_api()
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap_or_else(|e| panic!("failing {ns}/{name}: {e}"));
                self.replicasets[r].pods[i].phase = Phase::Failed;
            }
            "replicaset-scaled" => {
                let r = self.some_rs();
                let by = self.rng.range(-4, 4);
                let (pods, target) = (self.pods() * 10, self.target_pods * 10);
                if by == 0
                    || (by > 0 && pods > target * 11 / 10)
                    || (by < 0 && pods < target * 9 / 10)
                {
                    return None;
                }
                for _ in 0..by.max(0) {
                    self.add_pod(r, false).await;
                }
                for _ in 0..(-by).max(0) {
                    let Some(i) = self.replicasets[r]
                        .pods
                        .iter()
                        .position(|p| p.phase != Phase::Terminating)
                    else {
                        break;
                    };
                    let pod = self.replicasets[r].pods.remove(i);
                    delete_pod(&self.client, &ns, &pod.name, 0).await;
                }
                let replicas = self.replicasets[r].pods.len();
                let name = self.replicasets[r].name.clone();
                let patch = json!({"spec": {"replicas": replicas}});
                Api::<ReplicaSet>::namespaced(self.client.clone(), &ns)
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap_or_else(|e| panic!("scaling {ns}/{name}: {e}"));
            }
            "node-added" => {
                if self.nodes.len() * 10 >= self.target_nodes * 11 {
                    return None;
                }
                let name = self.fresh("node");
                create_node(&self.client, node_config(&name)).await;
                self.nodes.insert(name, NodeState::default());
            }
            "node-removed" => {
                if self.nodes.len() * 10 <= self.target_nodes * 9 {
                    return None;
                }
                let name = self.some_node();
                Api::<Node>::all(self.client.clone())
                    .delete(&name, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("removing node {name}: {e}"));
                self.nodes.remove(&name);
                // What the pod garbage collector does with the pods of a node gone.
                for r in 0..self.replicasets.len() {
                    let (gone, kept): (Vec<PodState>, Vec<PodState>) = self.replicasets[r]
                        .pods
                        .drain(..)
                        .partition(|p| p.node.as_deref() == Some(name.as_str()));
                    self.replicasets[r].pods = kept;
                    for p in gone {
                        delete_pod(&self.client, &ns, &p.name, 0).await;
                    }
                }
            }
            "node-tainted" | "node-cordoned" => {
                let name = self.some_node();
                let state = self.nodes.get_mut(&name).unwrap();
                let (patch, applied) = if kind == "node-tainted" {
                    state.tainted = !state.tainted;
                    let taints = if state.tainted {
                        json!([{"key": "soak/dedicated", "value": "x", "effect": "NoSchedule"}])
                    } else {
                        json!(null)
                    };
                    let applied = if state.tainted {
                        "node-tainted"
                    } else {
                        "node-untainted"
                    };
                    (json!({"spec": {"taints": taints}}), applied)
                } else {
                    state.cordoned = !state.cordoned;
                    let applied = if state.cordoned {
                        "node-cordoned"
                    } else {
                        "node-uncordoned"
                    };
                    (json!({"spec": {"unschedulable": state.cordoned}}), applied)
                };
                Api::<Node>::all(self.client.clone())
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap_or_else(|e| panic!("patching node {name}: {e}"));
                return Some(applied);
            }
            "node-ready-flipped" => {
                let name = self.some_node();
                let state = self.nodes.get_mut(&name).unwrap();
                state.not_ready = !state.not_ready;
                set_ready(&self.client, &name, !state.not_ready).await;
            }
            "pdb-created-or-changed" => {
                let r = self.some_rs();
                let app = self.replicasets[r].name.clone();
                let allowed = self.rng.range(0, 3) as i32;
                let min = self.rng.range(1, 8);
                let api = Api::<PodDisruptionBudget>::namespaced(self.client.clone(), &ns);
                if !self.budgets.contains_key(&app) {
                    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
                        "metadata": {"name": app},
                        "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": app}}}
                    }))
                    .unwrap();
                    api.create(&PostParams::default(), &pdb)
                        .await
                        .unwrap_or_else(|e| panic!("creating pdb {app}: {e}"));
                } else {
                    let patch = json!({"spec": {"minAvailable": min}});
                    api.patch(&app, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .unwrap_or_else(|e| panic!("changing pdb {app}: {e}"));
                }
                // What the disruption controller would write.
                let status = json!({"status": {
                    "disruptionsAllowed": allowed, "currentHealthy": min + allowed as i64,
                    "desiredHealthy": min, "expectedPods": min + allowed as i64,
                    "observedGeneration": 1
                }});
                api.patch_status(&app, &PatchParams::default(), &Patch::Merge(&status))
                    .await
                    .unwrap_or_else(|e| panic!("pdb status {app}: {e}"));
                self.budgets.insert(app, allowed);
            }
            "pdb-deleted" => {
                let names: Vec<String> = self.budgets.keys().cloned().collect();
                if names.is_empty() {
                    return None;
                }
                let app = pick(&mut self.rng, &names);
                Api::<PodDisruptionBudget>::namespaced(self.client.clone(), &ns)
                    .delete(&app, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("deleting pdb {app}: {e}"));
                self.budgets.remove(&app);
            }
            "podgroup-created-or-changed" => {
                let gangs: Vec<String> = self
                    .replicasets
                    .iter()
                    .filter_map(|r| r.group.clone())
                    .collect();
                if gangs.is_empty() {
                    return None;
                }
                let name = pick(&mut self.rng, &gangs);
                let min_count = self.rng.range(1, 12);
                let api = Api::<PodGroup>::namespaced(self.client.clone(), &ns);
                // Its spec cannot change: a changed group is one made again.
                if self.groups.contains_key(&name) {
                    delete_group(&api, &name).await;
                }
                let group: PodGroup = serde_json::from_value(json!({
                    "metadata": {"name": name},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}
                }))
                .unwrap();
                api.create(&PostParams::default(), &group)
                    .await
                    .unwrap_or_else(|e| panic!("creating PodGroup {ns}/{name}: {e}"));
                self.groups.insert(name, min_count);
            }
            "podgroup-deleted" => {
                let names: Vec<String> = self.groups.keys().cloned().collect();
                if names.is_empty() {
                    return None;
                }
                let name = pick(&mut self.rng, &names);
                delete_group(&Api::namespaced(self.client.clone(), &ns), &name).await;
                self.groups.remove(&name);
            }
            other => unreachable!("{other}"),
        }
        Some(kind)
    }

    /// A new pod of ReplicaSet `r`: on a node and Running, or (`pending`) bound and not
    /// started, or not bound to any node.
    async fn add_pod(&mut self, r: usize, pending: bool) {
        let name = self.fresh(&self.replicasets[r].name.clone());
        let (node, phase) = if !pending {
            let node = self.some_node();
            (Some(node), Phase::Running)
        } else if self.rng.chance(50) {
            let node = self.some_node();
            (Some(node), Phase::Pending)
        } else {
            (None, Phase::Unscheduled)
        };
        let pod = PodState { name, node, phase };
        let tier = c_label(self.rng.range(0, 3));
        create_pod(
            &self.client,
            &self.namespace,
            &self.replicasets[r],
            &pod,
            tier,
        )
        .await;
        self.replicasets[r].pods.push(pod);
    }

    /// Applies changes for `duration`: `rate` a second on average, and with `burst_percent`
    /// chance a second a burst of `burst` changes at once, or a quiet spell of one to three
    /// seconds with none.
    pub async fn run(&mut self, duration: Duration, rate: f64, burst: usize, burst_percent: i64) {
        let end = Instant::now() + duration;
        let tick = Duration::from_millis(100);
        let mut owed = 0.0;
        let mut next_second = Instant::now();
        while Instant::now() < end {
            let started = Instant::now();
            if started >= next_second {
                next_second = started + Duration::from_secs(1);
                if self.rng.chance(burst_percent) {
                    for _ in 0..burst {
                        self.step().await;
                    }
                    continue;
                }
                if self.rng.chance(10) {
                    let quiet = Duration::from_millis(self.rng.range(1000, 3000) as u64);
                    tokio::time::sleep(quiet.min(end.saturating_duration_since(started))).await;
                    continue;
                }
            }
            owed += rate * tick.as_secs_f64();
            while owed >= 1.0 {
                self.step().await;
                owed -= 1.0;
            }
            tokio::time::sleep(tick.saturating_sub(started.elapsed())).await;
        }
    }
}

/// One of `items`, at random.
fn pick(rng: &mut Rng, items: &[String]) -> String {
    items[rng.range(0, items.len() as i64 - 1) as usize].clone()
}

fn c_label(i: i64) -> &'static str {
    ["a", "b", "c", "d"][i as usize % 4]
}

fn node_config(name: &str) -> NodeConfig {
    NodeConfig::new(name).cpu("8").memory("32Gi").label(
        "topology.kubernetes.io/zone",
        &format!("z{}", name.len() % 3),
    )
}

async fn create_pod(client: &Client, ns: &str, rs: &Rs, pod: &PodState, tier: &str) {
    let (cpu, rs_uid) = (rs.cpu, &rs.uid);
    let mut spec = json!({
        "automountServiceAccountToken": false,
        "containers": [{
            "name": "c", "image": PAUSE_IMAGE,
            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}
        }]
    });
    if let Some(node) = &pod.node {
        spec["nodeName"] = json!(node);
    }
    if let Some(group) = &rs.group {
        spec["schedulingGroup"] = json!({"podGroupName": group});
    }
    let rs = &rs.name;
    let object: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": pod.name,
            "labels": {"app": rs, "tier": tier},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": rs_uid,
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": spec
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating pod {ns}/{}: {e}", pod.name));
    if pod.phase == Phase::Running {
        super::mark_pod_running(client, ns, &pod.name).await;
    }
}

async fn delete_pod(client: &Client, ns: &str, name: &str, grace: u32) {
    match Api::<Pod>::namespaced(client.clone(), ns)
        .delete(name, &DeleteParams::default().grace_period(grace))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => panic!("deleting pod {ns}/{name}: {e}"),
    }
}

/// Deletes a PodGroup and removes its finalizers, as its controller would once no pod of it
/// is scheduling.
async fn delete_group(api: &Api<PodGroup>, name: &str) {
    api.delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting PodGroup {name}: {e}"));
    let patch = json!({"metadata": {"finalizers": null}});
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => panic!("removing the finalizers of PodGroup {name}: {e}"),
    }
}

async fn set_ready(client: &Client, node: &str, ready: bool) {
    let api = Api::<Node>::all(client.clone());
    let mut n = api
        .get_status(node)
        .await
        .unwrap_or_else(|e| panic!("reading node {node}: {e}"));
    let status = if ready { "True" } else { "False" };
    for c in n.status.as_mut().unwrap().conditions.as_mut().unwrap() {
        if c.type_ == "Ready" {
            c.status = status.to_string();
        }
    }
    api.replace_status(node, &PostParams::default(), &n)
        .await
        .unwrap_or_else(|e| panic!("setting node {node} Ready={ready}: {e}"));
}
