//! A seeded churn generator for the differential soak (`tests/soak.rs`, `benches/soak/run`):
//! it loads a cluster of nodes and ReplicaSets through the API, then changes it as a busy
//! cluster changes: pods created, deleted (at once, or left terminating), relabelled, going
//! Pending, Running and Failed; ReplicaSets scaled; nodes added, removed, tainted, cordoned,
//! going NotReady and back; disruption budgets and (Kubernetes') PodGroups created, changed and
//! deleted. Only kube-apiserver needs to run: the generator writes what the controllers and the
//! kubelet would (statuses, the pods of a scaled ReplicaSet, the pods of a removed node
//! deleted).
//!
//! The same seed draws the same changes in the same order, so a failure replays (the bursts and
//! quiet spells come from a random source of their own, so how many seconds pass between two
//! changes does not change which are drawn; how many are applied in a given time depends on
//! the machine). The changes are drawn one after another from the generator's model of the
//! cluster ([`Model`], updated as each is drawn) and applied concurrently ([`Pool`]): a bounded number in flight, never two
//! on the same object (a change on an object still being written waits for it, and the changes
//! drawn after it wait too, so changes start in the order drawn). Only the interleaving of the
//! requests of different objects varies from run to run. [`Churn::run`] and [`Churn::drain`]
//! return once every change started is done: the cluster is then what the model says.

use super::states::Rng;
use super::{create_namespace, create_node, NodeConfig, PAUSE_IMAGE};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1beta1::PodGroup;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

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
pub enum Phase {
    /// Bound to a node, not started yet.
    Pending,
    /// Not bound to any node.
    Unscheduled,
    Running,
    Failed,
    /// Deleted with a grace period: no kubelet finishes it, it stays terminating.
    Terminating,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PodState {
    name: String,
    node: Option<String>,
    phase: Phase,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rs {
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

/// The churned cluster as the generator wrote it, and its random source: what the changes
/// are drawn from. Pure (no client): drawing a change updates the model at once, so the next
/// draw sees it whether or not its requests have been answered yet; the same seed draws the
/// same changes in the same order however many are in flight.
pub struct Model {
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
}

/// One request of a change.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A pod of the ReplicaSet (without its pods), marked Running when its phase says so.
    CreatePod {
        rs: Rs,
        pod: PodState,
        tier: &'static str,
    },
    DeletePod {
        name: String,
        grace: u32,
    },
    PatchPod {
        name: String,
        patch: Value,
    },
    PodRunning {
        name: String,
    },
    PodStatus {
        name: String,
        patch: Value,
    },
    ScaleReplicaSet {
        name: String,
        replicas: usize,
    },
    CreateNode {
        name: String,
    },
    DeleteNode {
        name: String,
    },
    PatchNode {
        name: String,
        patch: Value,
    },
    SetReady {
        name: String,
        ready: bool,
    },
    CreateBudget {
        name: String,
        min: i64,
    },
    PatchBudget {
        name: String,
        patch: Value,
    },
    BudgetStatus {
        name: String,
        patch: Value,
    },
    DeleteBudget {
        name: String,
    },
    CreateGroup {
        name: String,
        min_count: i64,
    },
    DeleteGroup {
        name: String,
    },
}

/// One drawn change: its kind and its requests, sent in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub kind: &'static str,
    pub ops: Vec<Op>,
}

impl Op {
    /// The object the request writes (`pod/<name>`, `node/<name>`, ...).
    pub fn object(&self) -> String {
        match self {
            Op::CreatePod { pod, .. } => format!("pod/{}", pod.name),
            Op::DeletePod { name, .. }
            | Op::PatchPod { name, .. }
            | Op::PodRunning { name }
            | Op::PodStatus { name, .. } => format!("pod/{name}"),
            Op::ScaleReplicaSet { name, .. } => format!("replicaset/{name}"),
            Op::CreateNode { name }
            | Op::DeleteNode { name }
            | Op::PatchNode { name, .. }
            | Op::SetReady { name, .. } => format!("node/{name}"),
            Op::CreateBudget { name, .. }
            | Op::PatchBudget { name, .. }
            | Op::BudgetStatus { name, .. }
            | Op::DeleteBudget { name } => format!("pdb/{name}"),
            Op::CreateGroup { name, .. } | Op::DeleteGroup { name } => {
                format!("podgroup/{name}")
            }
        }
    }

    /// Sends the request (in `ns`); panics on an answer the change did not expect.
    async fn apply(&self, client: &Client, ns: &str) {
        match self {
            Op::CreatePod { rs, pod, tier } => create_pod(client, ns, rs, pod, tier).await,
            Op::DeletePod { name, grace } => delete_pod(client, ns, name, *grace).await,
            Op::PatchPod { name, patch } => {
                Api::<Pod>::namespaced(client.clone(), ns)
                    .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .unwrap_or_else(|e| panic!("patching pod {ns}/{name}: {e}"));
            }
            Op::PodRunning { name } => {
                super::mark_pod_running(client, ns, name).await;
            }
            Op::PodStatus { name, patch } => {
                Api::<Pod>::namespaced(client.clone(), ns)
                    .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .unwrap_or_else(|e| panic!("patching the status of pod {ns}/{name}: {e}"));
            }
            Op::ScaleReplicaSet { name, replicas } => {
                let patch = json!({"spec": {"replicas": replicas}});
                Api::<ReplicaSet>::namespaced(client.clone(), ns)
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap_or_else(|e| panic!("scaling {ns}/{name}: {e}"));
            }
            Op::CreateNode { name } => {
                create_node(client, node_config(name)).await;
            }
            Op::DeleteNode { name } => {
                Api::<Node>::all(client.clone())
                    .delete(name, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("removing node {name}: {e}"));
            }
            Op::PatchNode { name, patch } => {
                Api::<Node>::all(client.clone())
                    .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .unwrap_or_else(|e| panic!("patching node {name}: {e}"));
            }
            Op::SetReady { name, ready } => set_ready(client, name, *ready).await,
            Op::CreateBudget { name, min } => {
                let pdb: PodDisruptionBudget = serde_json::from_value(json!({
                    "metadata": {"name": name},
                    "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": name}}}
                }))
                .unwrap();
                Api::<PodDisruptionBudget>::namespaced(client.clone(), ns)
                    .create(&PostParams::default(), &pdb)
                    .await
                    .unwrap_or_else(|e| panic!("creating pdb {name}: {e}"));
            }
            Op::PatchBudget { name, patch } => {
                Api::<PodDisruptionBudget>::namespaced(client.clone(), ns)
                    .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .unwrap_or_else(|e| panic!("changing pdb {name}: {e}"));
            }
            Op::BudgetStatus { name, patch } => {
                Api::<PodDisruptionBudget>::namespaced(client.clone(), ns)
                    .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .unwrap_or_else(|e| panic!("pdb status {name}: {e}"));
            }
            Op::DeleteBudget { name } => {
                Api::<PodDisruptionBudget>::namespaced(client.clone(), ns)
                    .delete(name, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("deleting pdb {name}: {e}"));
            }
            Op::CreateGroup { name, min_count } => {
                let group: PodGroup = serde_json::from_value(json!({
                    "metadata": {"name": name},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}
                }))
                .unwrap();
                Api::<PodGroup>::namespaced(client.clone(), ns)
                    .create(&PostParams::default(), &group)
                    .await
                    .unwrap_or_else(|e| panic!("creating PodGroup {ns}/{name}: {e}"));
            }
            Op::DeleteGroup { name } => {
                delete_group(&Api::namespaced(client.clone(), ns), name).await;
            }
        }
    }
}

impl Change {
    /// The objects its requests write, each once, in a stable order.
    pub fn objects(&self) -> Vec<String> {
        let set: BTreeSet<String> = self.ops.iter().map(Op::object).collect();
        set.into_iter().collect()
    }
}

/// How many changes were started and how many are done, for the samples: a cycle is idle
/// when no change started or was in flight while it ran.
#[derive(Debug, Default)]
pub struct Activity {
    pub started: AtomicU64,
    pub done: AtomicU64,
}

/// Runs changes concurrently, at most `workers` at a time, never two on the same object: a
/// change whose objects an earlier change still writes waits for it (and holds back the
/// changes after it, so the changes start in the order they were drawn, and two on one object
/// reach the apiserver in that order).
pub struct Pool {
    workers: usize,
    /// The objects of the changes in flight.
    busy: BTreeSet<String>,
    tasks: JoinSet<Vec<String>>,
    pub activity: Arc<Activity>,
    /// The most changes in flight at once.
    pub peak: usize,
}

impl Pool {
    pub fn new(workers: usize) -> Pool {
        Pool {
            workers: workers.max(1),
            busy: BTreeSet::new(),
            tasks: JoinSet::new(),
            activity: Arc::default(),
            peak: 0,
        }
    }

    /// Starts `job`, which writes `objects`, once a worker is free and none of its objects is
    /// written by a change in flight.
    pub async fn submit<F>(&mut self, objects: Vec<String>, job: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        while self.tasks.len() >= self.workers || objects.iter().any(|o| self.busy.contains(o)) {
            self.join_one().await;
        }
        self.busy.extend(objects.iter().cloned());
        self.activity.started.fetch_add(1, Ordering::SeqCst);
        let activity = self.activity.clone();
        self.tasks.spawn(async move {
            job.await;
            activity.done.fetch_add(1, Ordering::SeqCst);
            objects
        });
        self.peak = self.peak.max(self.tasks.len());
    }

    /// Changes in flight.
    pub fn in_flight(&self) -> usize {
        self.tasks.len()
    }

    /// Waits for one change in flight to end and frees its objects; a change that panicked
    /// panics here.
    async fn join_one(&mut self) {
        match self.tasks.join_next().await {
            Some(Ok(objects)) => {
                for o in objects {
                    self.busy.remove(&o);
                }
            }
            Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Some(Err(e)) => panic!("a change was cancelled: {e}"),
            None => {}
        }
    }

    /// Waits for every change in flight.
    pub async fn drain(&mut self) {
        while !self.tasks.is_empty() {
            self.join_one().await;
        }
    }
}

/// The churn: the model, and the pool that applies its changes through the API.
pub struct Churn {
    client: Client,
    pub namespace: String,
    pub seed: u64,
    model: Model,
    /// Bursts and quiet spells, drawn apart from the changes: how many seconds pass between
    /// two changes depends on the machine, and must not change which changes are drawn.
    schedule: Rng,
    pool: Pool,
    /// Changes applied (or in flight, until [`Churn::drain`]) so far, by kind.
    pub applied: BTreeMap<&'static str, u64>,
    /// Each burst's changes, and how long they took to start (the last of them started
    /// with at most a worker's worth still in flight).
    pub bursts: Vec<(usize, Duration)>,
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
    /// of ten (placed unevenly: a third of the nodes get most), `workers` requests at a time;
    /// the churn then runs `workers` changes at a time.
    pub async fn load(
        client: &Client,
        seed: u64,
        nodes: usize,
        pods: usize,
        workers: usize,
    ) -> Churn {
        let namespace = create_namespace(client, "soak").await;
        let mut model = Model::load(seed, nodes, pods);
        let ns = namespace.as_str();
        futures::stream::iter(
            model
                .nodes
                .keys()
                .map(|n| create_node(client, node_config(n))),
        )
        .buffer_unordered(workers)
        .collect::<Vec<_>>()
        .await;
        let uids: BTreeMap<String, String> =
            futures::stream::iter(model.replicasets.iter().map(|rs| async move {
                (
                    rs.name.clone(),
                    create_replicaset(client, ns, &rs.name, PODS_PER_RS as i32).await,
                )
            }))
            .buffer_unordered(workers)
            .collect()
            .await;
        for rs in &mut model.replicasets {
            rs.uid = uids[&rs.name].clone();
        }
        let to_create: Vec<(Rs, &PodState)> = model
            .replicasets
            .iter()
            .flat_map(|rs| rs.pods.iter().map(|p| (rs.clone_meta(), p)))
            .collect();
        futures::stream::iter(to_create.iter().map(|(rs, p)| async move {
            create_pod(client, ns, rs, p, c_label(0)).await;
        }))
        .buffer_unordered(workers)
        .collect::<Vec<_>>()
        .await;
        Churn {
            client: client.clone(),
            namespace,
            seed,
            model,
            schedule: Rng::new(seed ^ 0x5EED_B025),
            pool: Pool::new(workers),
            applied: KINDS.iter().map(|k| (*k, 0)).collect(),
            bursts: Vec::new(),
        }
    }

    /// How many pods the generator keeps, terminating ones included.
    pub fn pods(&self) -> usize {
        self.model.pods()
    }

    pub fn nodes(&self) -> usize {
        self.model.nodes()
    }

    /// Changes applied (or in flight) so far.
    pub fn total(&self) -> u64 {
        self.applied.values().sum()
    }

    /// The changes started and done, shared with whoever samples them.
    pub fn activity(&self) -> Arc<Activity> {
        self.pool.activity.clone()
    }

    /// The most changes that were in flight at once.
    pub fn peak_in_flight(&self) -> usize {
        self.pool.peak
    }

    /// Draws one random change and starts it (waiting for a free worker, and for any change
    /// in flight on one of its objects); its kind. [`Churn::drain`] waits for it to end.
    pub async fn step(&mut self) -> &'static str {
        let change = self.model.draw();
        let (client, ns) = (self.client.clone(), self.namespace.clone());
        let objects = change.objects();
        let kind = change.kind;
        self.pool
            .submit(objects, async move {
                for op in &change.ops {
                    op.apply(&client, &ns).await;
                }
            })
            .await;
        *self.applied.entry(kind).or_default() += 1;
        kind
    }

    /// Waits for every change in flight: the cluster is then what the model says.
    pub async fn drain(&mut self) {
        self.pool.drain().await;
    }

    /// Applies changes for `duration`: `rate` a second on average, and with `burst_percent`
    /// chance a second a burst of `burst` changes at once, or a quiet spell of one to three
    /// seconds with none. Returns once every change started is done.
    pub async fn run(&mut self, duration: Duration, rate: f64, burst: usize, burst_percent: i64) {
        let end = Instant::now() + duration;
        let tick = Duration::from_millis(100);
        let mut owed = 0.0;
        let mut next_second = Instant::now();
        while Instant::now() < end {
            let started = Instant::now();
            if started >= next_second {
                next_second = started + Duration::from_secs(1);
                if self.schedule.chance(burst_percent) {
                    for _ in 0..burst {
                        self.step().await;
                    }
                    self.bursts.push((burst, started.elapsed()));
                    continue;
                }
                if self.schedule.chance(10) {
                    // A quiet spell: nothing new starts (what is in flight ends).
                    let quiet = Duration::from_millis(self.schedule.range(1000, 3000) as u64);
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
        self.drain().await;
    }
}

impl Model {
    /// The loaded cluster: `nodes` nodes and ReplicaSets of ten Running pods (about `pods`),
    /// a third of the nodes getting most; the ReplicaSets' uids are set once created.
    pub fn load(seed: u64, nodes: usize, pods: usize) -> Model {
        let mut m = Model {
            seed,
            rng: Rng::new(seed),
            nodes: BTreeMap::new(),
            replicasets: Vec::new(),
            budgets: BTreeMap::new(),
            groups: BTreeMap::new(),
            next: 0,
            target_nodes: nodes.max(2),
            target_pods: pods.max(PODS_PER_RS),
        };
        let names: Vec<String> = (0..nodes).map(|_| m.fresh("node")).collect();
        for n in names {
            m.nodes.insert(n, NodeState::default());
        }
        let hot: Vec<String> = m.nodes.keys().take(nodes.div_ceil(3)).cloned().collect();
        let all: Vec<String> = m.nodes.keys().cloned().collect();
        for _ in 0..pods.div_ceil(PODS_PER_RS) {
            let name = m.fresh("rs");
            let cpu = m.rng.pick(&CPUS);
            // One ReplicaSet in four is a gang: its pods name a PodGroup, made later (or
            // never: then every member is protected).
            let group = m.rng.chance(25).then(|| format!("gang-{name}"));
            let mut rs = Rs {
                name,
                uid: String::new(),
                cpu,
                group,
                pods: Vec::new(),
            };
            for _ in 0..PODS_PER_RS {
                let node = if m.rng.chance(70) {
                    pick(&mut m.rng, &hot)
                } else {
                    pick(&mut m.rng, &all)
                };
                let pod = PodState {
                    name: m.fresh(&rs.name),
                    node: Some(node),
                    phase: Phase::Running,
                };
                rs.pods.push(pod);
            }
            m.replicasets.push(rs);
        }
        m
    }

    /// A name not used before in this run.
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{}", self.next)
    }

    /// Nodes (and pods in them) in a stable order.
    fn node_names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// How many pods the model keeps, terminating ones included.
    pub fn pods(&self) -> usize {
        self.replicasets.iter().map(|r| r.pods.len()).sum()
    }

    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Draws one random change and applies it to the model; the requests that apply it to
    /// the cluster.
    pub fn draw(&mut self) -> Change {
        loop {
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
            let mut ops = Vec::new();
            if let Some(kind) = self.plan(kind, &mut ops) {
                return Change { kind, ops };
            }
        }
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

    /// Applies a change of `kind` to the model and pushes its requests onto `ops`; None (and
    /// nothing changed) when none applies now (draw another).
    fn plan(&mut self, kind: &'static str, ops: &mut Vec<Op>) -> Option<&'static str> {
        match kind {
            "pod-created" | "pod-created-pending" => {
                if self.pods() * 10 > self.target_pods * 11 {
                    return None;
                }
                let r = self.some_rs();
                self.add_pod(r, kind == "pod-created-pending", ops);
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
                ops.push(Op::DeletePod {
                    name: pod.name,
                    grace: 0,
                });
            }
            "pod-deleted-graceful" => {
                let (r, i) = self.some_pod(&[Phase::Running])?;
                let name = self.replicasets[r].pods[i].name.clone();
                ops.push(Op::DeletePod { name, grace: 30 });
                self.replicasets[r].pods[i].phase = Phase::Terminating;
            }
            "pod-relabelled" => {
                let (r, i) = self.some_pod(&[Phase::Running, Phase::Pending, Phase::Failed])?;
                let tier = c_label(self.rng.range(0, 3));
                let name = self.replicasets[r].pods[i].name.clone();
                let patch = json!({"metadata": {"labels": {"tier": tier}}});
                ops.push(Op::PatchPod { name, patch });
            }
            "pod-running" => {
                let (r, i) = self.some_pod(&[Phase::Pending])?;
                let name = self.replicasets[r].pods[i].name.clone();
                ops.push(Op::PodRunning { name });
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
                ops.push(Op::PodStatus { name, patch });
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
                    self.add_pod(r, false, ops);
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
                    ops.push(Op::DeletePod {
                        name: pod.name,
                        grace: 0,
                    });
                }
                ops.push(Op::ScaleReplicaSet {
                    name: self.replicasets[r].name.clone(),
                    replicas: self.replicasets[r].pods.len(),
                });
            }
            "node-added" => {
                if self.nodes.len() * 10 >= self.target_nodes * 11 {
                    return None;
                }
                let name = self.fresh("node");
                ops.push(Op::CreateNode { name: name.clone() });
                self.nodes.insert(name, NodeState::default());
            }
            "node-removed" => {
                if self.nodes.len() * 10 <= self.target_nodes * 9 {
                    return None;
                }
                let name = self.some_node();
                ops.push(Op::DeleteNode { name: name.clone() });
                self.nodes.remove(&name);
                // What the pod garbage collector does with the pods of a node gone.
                for r in 0..self.replicasets.len() {
                    let (gone, kept): (Vec<PodState>, Vec<PodState>) = self.replicasets[r]
                        .pods
                        .drain(..)
                        .partition(|p| p.node.as_deref() == Some(name.as_str()));
                    self.replicasets[r].pods = kept;
                    for p in gone {
                        ops.push(Op::DeletePod {
                            name: p.name,
                            grace: 0,
                        });
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
                ops.push(Op::PatchNode { name, patch });
                return Some(applied);
            }
            "node-ready-flipped" => {
                let name = self.some_node();
                let state = self.nodes.get_mut(&name).unwrap();
                state.not_ready = !state.not_ready;
                let ready = !state.not_ready;
                ops.push(Op::SetReady { name, ready });
            }
            "pdb-created-or-changed" => {
                let r = self.some_rs();
                let app = self.replicasets[r].name.clone();
                let allowed = self.rng.range(0, 3) as i32;
                let min = self.rng.range(1, 8);
                if !self.budgets.contains_key(&app) {
                    ops.push(Op::CreateBudget {
                        name: app.clone(),
                        min,
                    });
                } else {
                    let patch = json!({"spec": {"minAvailable": min}});
                    ops.push(Op::PatchBudget {
                        name: app.clone(),
                        patch,
                    });
                }
                // What the disruption controller would write.
                let status = json!({"status": {
                    "disruptionsAllowed": allowed, "currentHealthy": min + allowed as i64,
                    "desiredHealthy": min, "expectedPods": min + allowed as i64,
                    "observedGeneration": 1
                }});
                ops.push(Op::BudgetStatus {
                    name: app.clone(),
                    patch: status,
                });
                self.budgets.insert(app, allowed);
            }
            "pdb-deleted" => {
                let names: Vec<String> = self.budgets.keys().cloned().collect();
                if names.is_empty() {
                    return None;
                }
                let app = pick(&mut self.rng, &names);
                ops.push(Op::DeleteBudget { name: app.clone() });
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
                // Its spec cannot change: a changed group is one made again.
                if self.groups.contains_key(&name) {
                    ops.push(Op::DeleteGroup { name: name.clone() });
                }
                ops.push(Op::CreateGroup {
                    name: name.clone(),
                    min_count,
                });
                self.groups.insert(name, min_count);
            }
            "podgroup-deleted" => {
                let names: Vec<String> = self.groups.keys().cloned().collect();
                if names.is_empty() {
                    return None;
                }
                let name = pick(&mut self.rng, &names);
                ops.push(Op::DeleteGroup { name: name.clone() });
                self.groups.remove(&name);
            }
            other => unreachable!("{other}"),
        }
        Some(kind)
    }

    /// A new pod of ReplicaSet `r`: on a node and Running, or (`pending`) bound and not
    /// started, or not bound to any node.
    fn add_pod(&mut self, r: usize, pending: bool, ops: &mut Vec<Op>) {
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
        ops.push(Op::CreatePod {
            rs: self.replicasets[r].clone_meta(),
            pod: pod.clone(),
            tier,
        });
        self.replicasets[r].pods.push(pod);
    }
}

/// One of `items`, at random.
fn pick(rng: &mut Rng, items: &[String]) -> String {
    items[rng.range(0, items.len() as i64 - 1) as usize].clone()
}

fn c_label(i: i64) -> &'static str {
    ["a", "b", "c", "d"][i as usize % 4]
}

async fn create_replicaset(client: &Client, ns: &str, name: &str, replicas: i32) -> String {
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
    Api::<ReplicaSet>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &rs)
        .await
        .unwrap_or_else(|e| panic!("creating replicaset {name}: {e}"))
        .metadata
        .uid
        .unwrap()
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
