//! A synthetic cluster, for benchmarks and scale tests: a `kind: List` in the JSON form
//! `kubectl get nodes,pods,poddisruptionbudgets,namespaces,priorityclasses -A -o json`
//! prints, deterministic from a seed.
//!
//! The objects look like real ones (metadata with labels, annotations and ownerReferences;
//! pods with containers, requests and limits, ports, env, volume mounts, tolerations, node
//! selectors, topology spread constraints, and a status with conditions and container
//! statuses; nodes with capacity, allocatable, conditions, addresses, node info and an image
//! list), so that decoding pays for the bytes a real snapshot holds. The list is written
//! compact (one object per line). A pod as the API server returns it is 1.5 to 3 kB of
//! JSON; most pods here are written lean (the metadata, spec and status fields that matter,
//! no admission defaults, no status conditions), and only a share
//! ([`Config::full_percent`]) in full. 5,000 nodes and 150,000 pods come to about 168 MB
//! with the default share, 154 MB with none, and 427 MB with every pod in full; 5,000 nodes
//! and 84,000 pods make a 100 MB file.
//!
//! The load is uneven so that every balancing strategy has work to do:
//! - some nodes are cold and some are hot (LowNodeUtilization);
//! - some deployments have several replicas stacked on one node (RemoveDuplicates);
//! - deployments with a zone spread constraint are placed skewed across the zones
//!   (RemovePodsViolatingTopologySpreadConstraint).
//!
//! Besides the workload there are DaemonSet pods on every node, mirror pods on the
//! control-plane nodes, StatefulSet pods with claims, finished Job pods, a few bare pods,
//! GPU nodes with a taint, cordoned and NotReady nodes, PodDisruptionBudgets and
//! PriorityClasses.

use super::{decode, ClusterSnapshot};
use chrono::{DateTime, SecondsFormat};
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// The shape of a synthetic cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub nodes: usize,
    /// Every pod, DaemonSet and mirror pods included.
    pub pods: usize,
    pub seed: u64,
    /// The share of pods, in percent, written with every field a live pod has (status
    /// conditions, container statuses, the admission defaults, ...); the others carry the
    /// metadata, spec and status fields that matter, and no more. See the module
    /// documentation for the sizes this gives.
    pub full_percent: u8,
    /// How many namespaces the workloads share (beside kube-system, monitoring and default);
    /// None: one per 750 pods, between 3 and 400. One namespace is what large batch and AI
    /// clusters often have.
    pub namespaces: Option<usize>,
}

impl Config {
    pub(crate) const DEFAULT_FULL_PERCENT: u8 = 5;

    pub fn new(nodes: usize, pods: usize, seed: u64) -> Self {
        Config {
            nodes,
            pods,
            seed,
            full_percent: Self::DEFAULT_FULL_PERCENT,
            namespaces: None,
        }
    }
}

/// splitmix64: tiny, fast, and good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Index drawn with the given weights.
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.unit() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }

    fn uid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | ((b >> 48) & 0x3fff),
            b & 0xffff_ffff_ffff
        )
    }

    /// The random suffix Kubernetes gives generated names.
    fn suffix(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..len)
            .map(|_| ALPHABET[self.below(ALPHABET.len())] as char)
            .collect()
    }

    fn hex(&mut self, len: usize) -> String {
        let mut s = String::with_capacity(len);
        while s.len() < len {
            s.push_str(&format!("{:016x}", self.next_u64()));
        }
        s.truncate(len);
        s
    }
}

const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];
const REGION: &str = "us-east-1";
/// 2025-06-01T00:00:00Z: nodes and pods are created in the half year after it.
const EPOCH: i64 = 1_748_736_000;
const MI: i64 = 1 << 20;
const GI: i64 = 1 << 30;
const KUBELET_VERSION: &str = "v1.33.2";

fn ts(t: i64) -> String {
    DateTime::from_timestamp(t, 0)
        .expect("timestamp in range")
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn cpu_text(milli: i64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

fn mem_text(bytes: i64) -> String {
    if bytes % GI == 0 {
        format!("{}Gi", bytes / GI)
    } else {
        format!("{}Mi", bytes / MI)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeKind {
    ControlPlane,
    Gpu,
    Worker,
}

struct NodePlan {
    name: String,
    kind: NodeKind,
    zone: usize,
    instance_type: &'static str,
    cpu: i64,
    memory: i64,
    max_pods: i64,
    gpus: i64,
    ready: bool,
    unschedulable: bool,
    /// How attractive the node is when placing pods.
    weight: f64,
    used_cpu: i64,
    used_memory: i64,
    used_pods: i64,
    ip: [u8; 2],
}

impl NodePlan {
    fn allocatable_cpu(&self) -> i64 {
        self.cpu - 110
    }
    fn allocatable_memory(&self) -> i64 {
        self.memory - 1536 * MI
    }
    fn fits(&self, cpu: i64, memory: i64) -> bool {
        self.used_pods < self.max_pods
            && self.used_cpu + cpu <= self.allocatable_cpu()
            && self.used_memory + memory <= self.allocatable_memory()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerKind {
    Deployment,
    StatefulSet,
    Job,
    Bare,
    DaemonSet,
    Mirror,
}

/// What the pods of one workload share.
struct Template {
    namespace: String,
    app: String,
    owner: OwnerKind,
    /// The owner object's name (ReplicaSet, StatefulSet, Job, DaemonSet) and uid.
    owner_name: String,
    owner_uid: String,
    hash: String,
    images: Vec<String>,
    cpu: i64,
    memory: i64,
    /// 0 none, 1 requests only, 2 requests and limits at twice, 3 limits equal (Guaranteed).
    resources: u8,
    port: Option<u16>,
    host_port: Option<u16>,
    env: usize,
    config_mount: bool,
    empty_dir: bool,
    pvc: bool,
    default_tolerations: bool,
    gpu: bool,
    control_plane: bool,
    node_selector: bool,
    spread: Option<&'static str>,
    priority_class: Option<(&'static str, i32)>,
    last_applied: bool,
    extra_annotations: bool,
}

/// The pods, grouped by workload, and the nodes they sit on.
struct Layout {
    nodes: Vec<NodePlan>,
    namespaces: Vec<String>,
    templates: Vec<Template>,
    /// (template, node or None for Pending, replica index)
    pods: Vec<(usize, Option<usize>, usize)>,
    /// Each pod's name, by index in `pods`.
    pod_names: Vec<String>,
    pdbs: Vec<(usize, i32)>,
}

const APP_WORDS: &[&str] = &[
    "web",
    "api",
    "worker",
    "cache",
    "frontend",
    "backend",
    "search",
    "payments",
    "orders",
    "auth",
    "ingest",
    "metrics",
    "gateway",
    "catalog",
    "billing",
    "notifier",
    "scheduler",
    "reports",
];

fn plan_nodes(cfg: &Config, rng: &mut Rng) -> Vec<NodePlan> {
    let n = cfg.nodes.max(1);
    let control_planes = if n >= 10 { 3 } else { 0 };
    let gpus = n * 3 / 100;
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let kind = if i < control_planes {
            NodeKind::ControlPlane
        } else if i < control_planes + gpus {
            NodeKind::Gpu
        } else {
            NodeKind::Worker
        };
        let (instance_type, cpu, memory, max_pods, gpu_count) = match kind {
            NodeKind::ControlPlane => ("m5.2xlarge", 8000, 32 * GI, 110, 0),
            NodeKind::Gpu => ("p3.8xlarge", 32000, 244 * GI, 110, 4),
            NodeKind::Worker => match rng.weighted(&[0.25, 0.6, 0.15]) {
                0 => ("m5.2xlarge", 8000, 32 * GI, 110, 0),
                1 => ("m5.4xlarge", 16000, 64 * GI, 110, 0),
                _ => ("m5.8xlarge", 32000, 128 * GI, 234, 0),
            },
        };
        // Cold, hot and ordinary nodes; the weight scales with the node's size.
        let load = match kind {
            NodeKind::ControlPlane => 0.0,
            NodeKind::Gpu => 0.3,
            NodeKind::Worker => match rng.weighted(&[0.12, 0.15, 0.73]) {
                0 => 0.1,
                1 => 2.6,
                _ => 0.8 + 0.4 * rng.unit(),
            },
        };
        let zone = i % ZONES.len();
        let ip = [(i / 250) as u8 + 16, (i % 250) as u8 + 2];
        let name = format!("ip-10-0-{}-{}", ip[0], ip[1]);
        nodes.push(NodePlan {
            name,
            kind,
            zone,
            instance_type,
            cpu,
            memory,
            max_pods,
            gpus: gpu_count,
            ready: kind == NodeKind::ControlPlane || i % 300 != 11,
            unschedulable: kind == NodeKind::Worker && i % 200 == 17,
            weight: load * cpu as f64 / 16000.0,
            used_cpu: 0,
            used_memory: 0,
            used_pods: 0,
            ip,
        });
    }
    nodes
}

/// Cumulative weights for picking nodes, over all nodes and per zone.
struct Picker {
    all: Vec<(f64, usize)>,
    zones: Vec<Vec<(f64, usize)>>,
    gpu: Vec<(f64, usize)>,
}

impl Picker {
    fn new(nodes: &[NodePlan]) -> Self {
        let cumulative = |filter: &dyn Fn(&NodePlan) -> bool| {
            let mut acc = 0.0;
            let mut out = Vec::new();
            for (i, n) in nodes.iter().enumerate() {
                if n.kind == NodeKind::Worker && filter(n) && n.weight > 0.0 {
                    acc += n.weight;
                    out.push((acc, i));
                }
            }
            out
        };
        let mut gpu = Vec::new();
        let mut acc = 0.0;
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Gpu {
                acc += 1.0;
                gpu.push((acc, i));
            }
        }
        Picker {
            all: cumulative(&|_| true),
            zones: (0..ZONES.len())
                .map(|z| cumulative(&|n: &NodePlan| n.zone == z))
                .collect(),
            gpu,
        }
    }

    fn draw(table: &[(f64, usize)], rng: &mut Rng) -> Option<usize> {
        let total = table.last()?.0;
        let x = rng.unit() * total;
        let i = table.partition_point(|(c, _)| *c <= x);
        Some(table[i.min(table.len() - 1)].1)
    }
}

fn plan_layout(cfg: &Config, rng: &mut Rng) -> Layout {
    let mut nodes = plan_nodes(cfg, rng);
    let picker = Picker::new(&nodes);
    let namespace_count = cfg
        .namespaces
        .unwrap_or((cfg.pods / 750).clamp(3, 400))
        .max(1);
    let mut namespaces: Vec<String> = ["kube-system", "monitoring", "default"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for i in 0..namespace_count {
        namespaces.push(format!("team-{i:03}"));
    }
    let mut templates: Vec<Template> = Vec::new();
    let mut pods: Vec<(usize, Option<usize>, usize)> = Vec::with_capacity(cfg.pods);
    let mut pdbs = Vec::new();

    let base = |rng: &mut Rng, namespace: &str, app: String, owner: OwnerKind| Template {
        namespace: namespace.to_string(),
        owner_name: app.clone(),
        app,
        owner,
        owner_uid: rng.uid(),
        hash: rng.suffix(9),
        images: Vec::new(),
        cpu: 100,
        memory: 128 * MI,
        resources: 1,
        port: None,
        host_port: None,
        env: 0,
        config_mount: false,
        empty_dir: false,
        pvc: false,
        default_tolerations: true,
        gpu: false,
        control_plane: false,
        node_selector: false,
        spread: None,
        priority_class: None,
        last_applied: false,
        extra_annotations: false,
    };

    // Mirror pods of the control plane: never evictable.
    for (ni, node) in nodes.iter_mut().enumerate() {
        if node.kind != NodeKind::ControlPlane {
            continue;
        }
        for component in [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
        ] {
            if pods.len() >= cfg.pods {
                break;
            }
            let mut t = base(rng, "kube-system", component.to_string(), OwnerKind::Mirror);
            t.owner_name = node.name.clone();
            t.images = vec![format!("registry.k8s.io/{component}:{KUBELET_VERSION}")];
            t.cpu = 250;
            t.memory = 256 * MI;
            t.priority_class = Some(("system-node-critical", 2_000_001_000));
            t.control_plane = true;
            t.default_tolerations = false;
            node.used_cpu += t.cpu;
            node.used_memory += t.memory;
            node.used_pods += 1;
            templates.push(t);
            pods.push((templates.len() - 1, Some(ni), 0));
        }
    }

    // Two DaemonSets, on every node that has room for them in the pod budget.
    let daemonset_pods = (2 * nodes.len()).min(cfg.pods / 5);
    for (di, (ns, name, image)) in [
        (
            "kube-system",
            "kube-proxy",
            format!("registry.k8s.io/kube-proxy:{KUBELET_VERSION}"),
        ),
        (
            "monitoring",
            "node-exporter",
            "quay.io/prometheus/node-exporter:v1.9.1".to_string(),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut t = base(rng, ns, name.to_string(), OwnerKind::DaemonSet);
        t.images = vec![image];
        t.cpu = 100;
        t.memory = 128 * MI;
        t.resources = 2;
        t.port = Some(9100);
        t.host_port = (di == 1).then_some(9100);
        t.priority_class = Some(("system-node-critical", 2_000_001_000));
        templates.push(t);
        let ti = templates.len() - 1;
        let count = daemonset_pods / 2 + if di == 0 { daemonset_pods % 2 } else { 0 };
        for (ni, node) in nodes.iter_mut().enumerate().take(count) {
            node.used_cpu += 100;
            node.used_memory += 128 * MI;
            node.used_pods += 1;
            pods.push((ti, Some(ni), ni));
        }
    }

    // The workload.
    let mut group = 0usize;
    while pods.len() < cfg.pods {
        let left = cfg.pods - pods.len();
        let owner = match rng.weighted(&[0.84, 0.07, 0.06, 0.03]) {
            0 => OwnerKind::Deployment,
            1 => OwnerKind::StatefulSet,
            2 => OwnerKind::Job,
            _ => OwnerKind::Bare,
        };
        let replicas = match owner {
            OwnerKind::Bare => 1,
            OwnerKind::Job => 1 + rng.below(8),
            _ => match rng.weighted(&[0.35, 0.37, 0.22, 0.06]) {
                0 => 1 + rng.below(3),
                1 => 4 + rng.below(9),
                2 => 13 + rng.below(48),
                _ => 61 + rng.below(240),
            },
        }
        .min(left);
        let ns = 3 + rng.below(namespace_count);
        let namespace = namespaces[ns].clone();
        let app = format!("{}-{group:05}", rng.pick(APP_WORDS));
        group += 1;
        let mut t = base(rng, &namespace, app, owner);
        t.owner_name = match owner {
            OwnerKind::Deployment => format!("{}-{}", t.app, t.hash),
            OwnerKind::Job => format!("{}-{}", t.app, 29_000_000 + rng.below(100_000)),
            _ => t.app.clone(),
        };
        let registry = if rng.chance(0.7) {
            "registry.example.com"
        } else {
            "ghcr.io/example"
        };
        t.images = vec![format!(
            "{registry}/{namespace}/{}:1.{}.{}",
            t.app,
            rng.below(40),
            rng.below(20)
        )];
        if rng.chance(0.15) {
            t.images
                .push("docker.io/envoyproxy/envoy:v1.34.1".to_string());
        }
        t.cpu = *rng.pick(&[50, 100, 100, 150, 200, 250, 250, 300, 500, 750]);
        t.memory = t.cpu * (2 + rng.below(3) as i64) * MI;
        t.resources = rng.weighted(&[0.06, 0.2, 0.54, 0.2]) as u8;
        t.port = rng
            .chance(0.75)
            .then(|| *rng.pick(&[80, 8080, 8443, 9090, 3000]));
        t.host_port = (owner == OwnerKind::Deployment && replicas <= 3 && rng.chance(0.03))
            .then(|| 30000 + rng.below(2000) as u16);
        t.env = if rng.chance(0.1) { 1 + rng.below(3) } else { 0 };
        t.config_mount = rng.chance(0.1);
        t.empty_dir = rng.chance(0.04);
        t.pvc = owner == OwnerKind::StatefulSet;
        t.default_tolerations = rng.chance(0.03);
        t.gpu = owner == OwnerKind::Job && rng.chance(0.3) && !picker.gpu.is_empty();
        t.node_selector = rng.chance(0.2);
        let spread = owner == OwnerKind::Deployment && replicas >= 6 && rng.chance(0.3);
        t.spread = spread.then(|| {
            if rng.chance(0.8) {
                "DoNotSchedule"
            } else {
                "ScheduleAnyway"
            }
        });
        t.priority_class = match rng.weighted(&[0.8, 0.1, 0.1]) {
            0 => None,
            1 => Some(("high-priority", 100_000)),
            _ => Some(("low-priority", -100)),
        };
        t.last_applied = owner == OwnerKind::Bare || rng.chance(0.005);
        t.extra_annotations = rng.chance(0.1);
        if t.gpu {
            t.cpu = 4000;
            t.memory = 16 * GI;
        }
        let stacked = owner == OwnerKind::Deployment && replicas >= 3 && rng.chance(0.25);
        // Zone weights, skewed for spread-constrained workloads.
        let zone_weights: [f64; 3] = if spread {
            let mut w = [0.62, 0.26, 0.12];
            let r = rng.below(3);
            w.rotate_left(r);
            w
        } else {
            [1.0, 1.0, 1.0]
        };
        let pending_chance = if owner == OwnerKind::Job { 0.0 } else { 0.004 };
        if matches!(owner, OwnerKind::Deployment | OwnerKind::StatefulSet)
            && replicas >= 2
            && rng.chance(0.25)
        {
            let allowed = if rng.chance(0.1) {
                0
            } else {
                1 + rng.below(3) as i32
            };
            pdbs.push((templates.len(), allowed));
        }
        templates.push(t);
        let ti = templates.len() - 1;
        let (cpu, memory) = {
            let t = &templates[ti];
            // The sidecar requests 50m and 64Mi.
            let sidecars = t.images.len() as i64 - 1;
            (t.cpu + 50 * sidecars, t.memory + 64 * MI * sidecars)
        };
        let mut previous: Option<usize> = None;
        for r in 0..replicas {
            if rng.chance(pending_chance) {
                pods.push((ti, None, r));
                continue;
            }
            let mut chosen = None;
            if stacked && rng.chance(0.35) {
                if let Some(p) = previous.filter(|&p| nodes[p].fits(cpu, memory)) {
                    chosen = Some(p);
                }
            }
            for _ in 0..8 {
                if chosen.is_some() {
                    break;
                }
                let table = if templates[ti].gpu {
                    &picker.gpu
                } else if spread {
                    &picker.zones[rng.weighted(&zone_weights)]
                } else {
                    &picker.all
                };
                if let Some(n) = Picker::draw(table, rng) {
                    if nodes[n].fits(cpu, memory) {
                        chosen = Some(n);
                    }
                }
            }
            if let Some(n) = chosen {
                let node = &mut nodes[n];
                node.used_cpu += cpu;
                node.used_memory += memory;
                node.used_pods += 1;
                previous = Some(n);
            }
            pods.push((ti, chosen, r));
        }
    }
    // Random suffixes can collide; draw again so that every pod has its own name.
    let mut taken = std::collections::HashSet::with_capacity(pods.len());
    let pod_names = pods
        .iter()
        .map(|&(ti, _, replica)| loop {
            let name = pod_name(&templates[ti], replica, rng);
            if taken.insert((templates[ti].namespace.clone(), name.clone())) {
                break name;
            }
        })
        .collect();
    Layout {
        nodes,
        namespaces,
        templates,
        pods,
        pod_names,
        pdbs,
    }
}

fn last_applied(rng: &mut Rng, kind: &str, name: &str, namespace: &str, extra: usize) -> String {
    let mut labels = Map::new();
    labels.insert("app.kubernetes.io/name".into(), json!(name));
    labels.insert("app.kubernetes.io/part-of".into(), json!(namespace));
    labels.insert("app.kubernetes.io/managed-by".into(), json!("kubectl"));
    let notes: Vec<String> = (0..extra).map(|_| rng.hex(48)).collect();
    let v = json!({
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "annotations": {"owner": format!("{namespace}@example.com"), "notes": notes},
            "labels": labels,
            "name": name,
            "namespace": namespace,
        },
    });
    let mut s = v.to_string();
    s.push('\n');
    s
}

fn node_json(n: &NodePlan, rng: &mut Rng) -> Value {
    let mut labels = Map::new();
    for (k, v) in [
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/instance-type", n.instance_type),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/hostname", n.name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("node.kubernetes.io/instance-type", n.instance_type),
        ("topology.kubernetes.io/region", REGION),
        ("topology.kubernetes.io/zone", ZONES[n.zone]),
    ] {
        labels.insert(k.into(), json!(v));
    }
    match n.kind {
        NodeKind::ControlPlane => {
            labels.insert("node-role.kubernetes.io/control-plane".into(), json!(""));
        }
        NodeKind::Gpu => {
            labels.insert("nvidia.com/gpu.present".into(), json!("true"));
        }
        NodeKind::Worker => {
            labels.insert("node-role.kubernetes.io/worker".into(), json!(""));
        }
    }
    let mut taints = Vec::new();
    match n.kind {
        NodeKind::ControlPlane => taints
            .push(json!({"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"})),
        NodeKind::Gpu => taints
            .push(json!({"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"})),
        NodeKind::Worker => {}
    }
    if n.unschedulable {
        taints.push(json!({"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "timeAdded": ts(EPOCH + 170 * 86400)}));
    }
    if !n.ready {
        taints.push(json!({"effect": "NoSchedule", "key": "node.kubernetes.io/not-ready", "timeAdded": ts(EPOCH + 175 * 86400)}));
        taints.push(json!({"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "timeAdded": ts(EPOCH + 175 * 86400)}));
    }
    let created = EPOCH + rng.below(90 * 86400) as i64;
    let provider_id = format!("aws:///{}/i-0{}", ZONES[n.zone], rng.hex(16));
    let mut spec = Map::new();
    spec.insert(
        "podCIDR".into(),
        json!(format!("10.{}.{}.0/24", 100 + n.ip[0] as u32 / 4, n.ip[1])),
    );
    spec.insert(
        "podCIDRs".into(),
        json!([format!("10.{}.{}.0/24", 100 + n.ip[0] as u32 / 4, n.ip[1])]),
    );
    spec.insert("providerID".into(), json!(provider_id));
    if !taints.is_empty() {
        spec.insert("taints".into(), Value::Array(taints));
    }
    if n.unschedulable {
        spec.insert("unschedulable".into(), json!(true));
    }
    let resources = |cpu: i64, memory: i64| {
        let mut m = Map::new();
        m.insert("cpu".into(), json!(cpu_text(cpu)));
        m.insert(
            "ephemeral-storage".into(),
            json!(if cpu == n.cpu {
                "104845292Ki".to_string()
            } else {
                "95551679124".to_string()
            }),
        );
        m.insert("hugepages-1Gi".into(), json!("0"));
        m.insert("hugepages-2Mi".into(), json!("0"));
        m.insert("memory".into(), json!(format!("{}Ki", memory / 1024)));
        if n.gpus > 0 {
            m.insert("nvidia.com/gpu".into(), json!(n.gpus.to_string()));
        }
        m.insert("pods".into(), json!(n.max_pods.to_string()));
        Value::Object(m)
    };
    let heartbeat = ts(EPOCH + 180 * 86400 - rng.below(60) as i64);
    let since = ts(created + 60);
    let condition = |t: &str, status: &str, reason: &str, message: &str| {
        json!({
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": since,
            "message": message,
            "reason": reason,
            "status": status,
            "type": t,
        })
    };
    let ready = if n.ready {
        condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        )
    } else {
        condition(
            "Ready",
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
    };
    let image_count = 2 + rng.below(4);
    let images: Vec<Value> = (0..image_count)
        .map(|i| {
            let name = match i {
                0 => format!("registry.k8s.io/kube-proxy:{KUBELET_VERSION}"),
                1 => "quay.io/prometheus/node-exporter:v1.9.1".to_string(),
                _ => format!(
                    "registry.example.com/team-{:03}/{}:1.{}.0",
                    rng.below(200),
                    rng.pick(APP_WORDS),
                    rng.below(40)
                ),
            };
            let repo = name.split(':').next().unwrap_or_default().to_string();
            json!({
                "names": [format!("{repo}@sha256:{}", rng.hex(64)), name],
                "sizeBytes": 10_000_000 + rng.below(400_000_000),
            })
        })
        .collect();
    let ip = format!("10.0.{}.{}", n.ip[0], n.ip[1]);
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": ip,
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": ts(created),
            "labels": labels,
            "name": n.name,
            "resourceVersion": (100_000_000 + rng.below(900_000_000)).to_string(),
            "uid": rng.uid(),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": ip, "type": "InternalIP"},
                {"address": n.name, "type": "Hostname"},
            ],
            "allocatable": resources(n.allocatable_cpu(), n.allocatable_memory()),
            "capacity": resources(n.cpu, n.memory),
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ready,
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": rng.uid(),
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.134-152.225.amzn2023.x86_64",
                "kubeProxyVersion": KUBELET_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "machineID": rng.hex(32),
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250623",
                "systemUUID": rng.uid(),
            },
        },
    })
}

fn pod_name(t: &Template, replica: usize, rng: &mut Rng) -> String {
    match t.owner {
        OwnerKind::Deployment => format!("{}-{}", t.owner_name, rng.suffix(5)),
        OwnerKind::StatefulSet => format!("{}-{replica}", t.app),
        OwnerKind::Job => format!("{}-{}", t.owner_name, rng.suffix(5)),
        OwnerKind::DaemonSet => format!("{}-{}", t.app, rng.suffix(5)),
        OwnerKind::Mirror => format!("{}-{}", t.app, t.owner_name),
        OwnerKind::Bare => t.app.clone(),
    }
}

fn pod_json(
    layout: &Layout,
    name: &str,
    ti: usize,
    node: Option<usize>,
    replica: usize,
    full_percent: u8,
    rng: &mut Rng,
) -> Value {
    let t = &layout.templates[ti];
    // Full pods carry everything a live pod has; lean ones what matters (see Config).
    let full = rng.below(100) < full_percent as usize;
    let created = EPOCH + 90 * 86400 + rng.below(80 * 86400) as i64;
    let started = created + 1 + rng.below(20) as i64;

    let mut labels = Map::new();
    labels.insert("app".into(), json!(t.app));
    match t.owner {
        OwnerKind::Deployment => {
            labels.insert("pod-template-hash".into(), json!(t.hash));
        }
        OwnerKind::StatefulSet => {
            labels.insert(
                "apps.kubernetes.io/pod-index".into(),
                json!(replica.to_string()),
            );
            labels.insert("statefulset.kubernetes.io/pod-name".into(), json!(name));
        }
        OwnerKind::Job => {
            labels.insert("batch.kubernetes.io/job-name".into(), json!(t.owner_name));
        }
        OwnerKind::DaemonSet => {
            labels.insert("controller-revision-hash".into(), json!(t.hash));
        }
        OwnerKind::Mirror => {
            labels.insert("tier".into(), json!("control-plane"));
        }
        OwnerKind::Bare => {}
    }

    let mut annotations = Map::new();
    if t.extra_annotations {
        annotations.insert("prometheus.io/scrape".into(), json!("true"));
        annotations.insert(
            "prometheus.io/port".into(),
            json!(t.port.unwrap_or(9090).to_string()),
        );
    }
    if t.owner == OwnerKind::Mirror {
        annotations.insert("kubernetes.io/config.hash".into(), json!(rng.hex(32)));
        annotations.insert("kubernetes.io/config.mirror".into(), json!(rng.hex(32)));
        annotations.insert("kubernetes.io/config.seen".into(), json!(ts(created)));
        annotations.insert("kubernetes.io/config.source".into(), json!("file"));
    }
    if t.last_applied {
        let notes = 20 + rng.below(12);
        let text = last_applied(rng, "Pod", name, &t.namespace, notes);
        annotations.insert(
            "kubectl.kubernetes.io/last-applied-configuration".into(),
            json!(text),
        );
    }

    let mut metadata = Map::new();
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    metadata.insert("creationTimestamp".into(), json!(ts(created)));
    if full
        && matches!(
            t.owner,
            OwnerKind::Deployment | OwnerKind::Job | OwnerKind::DaemonSet
        )
    {
        metadata.insert("generateName".into(), json!(format!("{}-", t.owner_name)));
    }
    metadata.insert("labels".into(), Value::Object(labels));
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(t.namespace));
    let owner = match t.owner {
        OwnerKind::Deployment => Some(("apps/v1", "ReplicaSet")),
        OwnerKind::StatefulSet => Some(("apps/v1", "StatefulSet")),
        OwnerKind::DaemonSet => Some(("apps/v1", "DaemonSet")),
        OwnerKind::Job => Some(("batch/v1", "Job")),
        OwnerKind::Mirror => Some(("v1", "Node")),
        OwnerKind::Bare => None,
    };
    if let Some((api, kind)) = owner {
        let uid = if t.owner == OwnerKind::Mirror {
            rng.uid()
        } else {
            t.owner_uid.clone()
        };
        let mut r = json!({
            "apiVersion": api,
            "controller": true,
            "kind": kind,
            "name": t.owner_name,
            "uid": uid,
        });
        if full {
            r["blockOwnerDeletion"] = json!(true);
        }
        metadata.insert("ownerReferences".into(), json!([r]));
    }
    if full {
        metadata.insert(
            "resourceVersion".into(),
            json!((100_000_000 + rng.below(900_000_000)).to_string()),
        );
    }
    metadata.insert("uid".into(), json!(rng.uid()));

    // Containers.
    let resources = |cpu: i64, memory: i64| -> Value {
        let req = json!({"cpu": cpu_text(cpu), "memory": mem_text(memory)});
        match t.resources {
            0 => json!({}),
            1 => json!({"requests": req}),
            2 => {
                json!({"limits": {"cpu": cpu_text(cpu * 2), "memory": mem_text(memory * 2)}, "requests": req})
            }
            _ => json!({"limits": req.clone(), "requests": req}),
        }
    };
    let mut containers = Vec::new();
    for (ci, image) in t.images.iter().enumerate() {
        let mut c = Map::new();
        let cname = if ci == 0 {
            t.app.split('-').next().unwrap_or("app")
        } else {
            "envoy"
        };
        if ci == 0 && t.env > 0 {
            let env: Vec<Value> = (0..t.env)
                .map(|i| match i {
                    0 => json!({"name": "LOG_LEVEL", "value": "info"}),
                    1 => json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}),
                    _ => json!({"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"key": "url", "name": format!("{}-db", t.app)}}}),
                })
                .collect();
            c.insert("env".into(), Value::Array(env));
        }
        c.insert("image".into(), json!(image));
        if full {
            c.insert("imagePullPolicy".into(), json!("IfNotPresent"));
            c.insert(
                "terminationMessagePath".into(),
                json!("/dev/termination-log"),
            );
            c.insert("terminationMessagePolicy".into(), json!("File"));
        }
        c.insert("name".into(), json!(cname));
        if ci == 0 {
            if let Some(port) = t.port {
                let mut p = json!({"containerPort": port});
                if full {
                    p["name"] = json!("http");
                    p["protocol"] = json!("TCP");
                }
                if let Some(hp) = t.host_port {
                    p["hostPort"] = json!(hp);
                }
                c.insert("ports".into(), json!([p]));
            }
        }
        let (cpu, memory) = if ci == 0 {
            (t.cpu, t.memory)
        } else {
            (50, 64 * MI)
        };
        let mut res = resources(cpu, memory);
        if t.gpu && ci == 0 {
            res["limits"] = json!({"nvidia.com/gpu": "1"});
            res["requests"]["nvidia.com/gpu"] = json!("1");
        }
        c.insert("resources".into(), res);
        let mut mounts = Vec::new();
        if ci == 0 && t.config_mount {
            mounts.push(json!({"mountPath": "/etc/config", "name": "config", "readOnly": true}));
        }
        if ci == 0 && t.empty_dir {
            mounts.push(json!({"mountPath": "/tmp/cache", "name": "cache"}));
        }
        if ci == 0 && t.pvc {
            mounts.push(json!({"mountPath": "/data", "name": "data"}));
        }
        if !mounts.is_empty() {
            c.insert("volumeMounts".into(), Value::Array(mounts));
        }
        containers.push(Value::Object(c));
    }

    let mut spec = Map::new();
    spec.insert("containers".into(), Value::Array(containers));
    if full {
        spec.insert("dnsPolicy".into(), json!("ClusterFirst"));
        spec.insert("enableServiceLinks".into(), json!(true));
        spec.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
        spec.insert("serviceAccount".into(), json!("default"));
        spec.insert("serviceAccountName".into(), json!("default"));
        spec.insert("terminationGracePeriodSeconds".into(), json!(30));
    }
    if let Some(n) = node {
        spec.insert("nodeName".into(), json!(layout.nodes[n].name));
    }
    if t.node_selector {
        spec.insert("nodeSelector".into(), json!({"kubernetes.io/os": "linux"}));
    }
    match t.priority_class {
        Some((name, value)) => {
            spec.insert("priority".into(), json!(value));
            spec.insert("priorityClassName".into(), json!(name));
        }
        None => {
            spec.insert("priority".into(), json!(0));
        }
    }
    if full {
        spec.insert(
            "restartPolicy".into(),
            json!(if t.owner == OwnerKind::Job {
                "Never"
            } else {
                "Always"
            }),
        );
        spec.insert("schedulerName".into(), json!("default-scheduler"));
    }
    let mut tolerations = Vec::new();
    if t.gpu {
        tolerations
            .push(json!({"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}));
    }
    if t.control_plane || t.owner == OwnerKind::DaemonSet {
        tolerations.push(json!({"operator": "Exists"}));
    } else if full || t.default_tolerations {
        tolerations.push(json!({"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300}));
        tolerations.push(json!({"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}));
    }
    if !tolerations.is_empty() {
        spec.insert("tolerations".into(), Value::Array(tolerations));
    }
    if let Some(when) = t.spread {
        spec.insert(
            "topologySpreadConstraints".into(),
            json!([{
                "labelSelector": {"matchLabels": {"app": t.app}},
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": when,
            }]),
        );
    }
    let mut volumes = Vec::new();
    if t.config_mount {
        volumes.push(json!({"configMap": {"defaultMode": 420, "name": format!("{}-config", t.app)}, "name": "config"}));
    }
    if t.empty_dir {
        volumes.push(json!({"emptyDir": {}, "name": "cache"}));
    }
    if t.pvc {
        volumes.push(
            json!({"name": "data", "persistentVolumeClaim": {"claimName": format!("data-{name}")}}),
        );
    }
    if !volumes.is_empty() {
        spec.insert("volumes".into(), Value::Array(volumes));
    }

    // Status.
    let qos = match t.resources {
        0 => "BestEffort",
        3 => "Guaranteed",
        _ => "Burstable",
    };
    let mut status = Map::new();
    let phase = if node.is_none() {
        "Pending"
    } else if t.owner == OwnerKind::Job && replica % 3 != 0 {
        "Succeeded"
    } else {
        "Running"
    };
    if full || node.is_none() {
        let tr = ts(started);
        let cond = |ty: &str, st: &str| json!({"lastProbeTime": null, "lastTransitionTime": tr, "status": st, "type": ty});
        let conditions = if node.is_none() {
            vec![
                json!({"lastProbeTime": null, "lastTransitionTime": tr, "message": "0/1 nodes are available: 1 Insufficient cpu.", "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}),
            ]
        } else {
            vec![
                cond("PodReadyToStartContainers", "True"),
                cond("Initialized", "True"),
                cond("Ready", "True"),
                cond("ContainersReady", "True"),
                cond("PodScheduled", "True"),
            ]
        };
        status.insert("conditions".into(), Value::Array(conditions));
    }
    if let Some(n) = node {
        let n = &layout.nodes[n];
        if full {
            let statuses: Vec<Value> = t
                .images
                .iter()
                .enumerate()
                .map(|(ci, image)| {
                    json!({
                        "containerID": format!("containerd://{}", rng.hex(64)),
                        "image": image,
                        "imageID": format!("{}@sha256:{}", image.split(':').next().unwrap_or_default(), rng.hex(64)),
                        "lastState": {},
                        "name": if ci == 0 { t.app.split('-').next().unwrap_or("app") } else { "envoy" },
                        "ready": phase == "Running",
                        "restartCount": rng.below(3),
                        "started": phase == "Running",
                        "state": {"running": {"startedAt": ts(started + 2)}},
                    })
                })
                .collect();
            status.insert("containerStatuses".into(), Value::Array(statuses));
        }
        if full {
            status.insert(
                "hostIPs".into(),
                json!([{"ip": format!("10.0.{}.{}", n.ip[0], n.ip[1])}]),
            );
        }
        status.insert(
            "hostIP".into(),
            json!(format!("10.0.{}.{}", n.ip[0], n.ip[1])),
        );
    }
    status.insert("phase".into(), json!(phase));
    if full && node.is_some() {
        status.insert(
            "podIP".into(),
            json!(format!(
                "10.{}.{}.{}",
                100 + rng.below(64),
                rng.below(256),
                1 + rng.below(254)
            )),
        );
    }
    if full {
        status.insert("qosClass".into(), json!(qos));
    }
    if node.is_some() {
        status.insert("startTime".into(), json!(ts(started)));
    }

    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

fn namespace_json(name: &str, rng: &mut Rng) -> Value {
    let applied = name.starts_with("team-");
    let mut annotations = Map::new();
    if applied {
        annotations.insert(
            "kubectl.kubernetes.io/last-applied-configuration".into(),
            json!(last_applied(rng, "Namespace", name, name, 4)),
        );
    }
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "annotations": annotations,
            "creationTimestamp": ts(EPOCH + rng.below(86400) as i64),
            "labels": {"kubernetes.io/metadata.name": name, "team": name},
            "name": name,
            "resourceVersion": (1000 + rng.below(100_000)).to_string(),
            "uid": rng.uid(),
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

fn pdb_json(t: &Template, allowed: i32, pods: usize, rng: &mut Rng) -> Value {
    let name = format!("{}-pdb", t.app);
    json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration":
                    last_applied(rng, "PodDisruptionBudget", &name, &t.namespace, 2),
            },
            "creationTimestamp": ts(EPOCH + 80 * 86400 + rng.below(86400) as i64),
            "generation": 1,
            "name": name,
            "namespace": t.namespace,
            "resourceVersion": (100_000_000 + rng.below(900_000_000)).to_string(),
            "uid": rng.uid(),
        },
        "spec": {"maxUnavailable": allowed.max(1), "selector": {"matchLabels": {"app": t.app}}},
        "status": {
            "conditions": [{
                "lastTransitionTime": ts(EPOCH + 100 * 86400),
                "message": "",
                "observedGeneration": 1,
                "reason": if allowed > 0 { "SufficientPods" } else { "InsufficientPods" },
                "status": if allowed > 0 { "True" } else { "False" },
                "type": "DisruptionAllowed",
            }],
            "currentHealthy": pods,
            "desiredHealthy": pods.saturating_sub(allowed.max(1) as usize),
            "disruptionsAllowed": allowed,
            "expectedPods": pods,
            "observedGeneration": 1,
        },
    })
}

fn priority_class_json(name: &str, value: i32, rng: &mut Rng) -> Value {
    let mut v = json!({
        "apiVersion": "scheduling.k8s.io/v1",
        "description": format!("{name} workloads"),
        "kind": "PriorityClass",
        "metadata": {
            "creationTimestamp": ts(EPOCH),
            "generation": 1,
            "name": name,
            "resourceVersion": (70 + rng.below(1000)).to_string(),
            "uid": rng.uid(),
        },
        "preemptionPolicy": "PreemptLowerPriority",
        "value": value,
    });
    if !name.starts_with("system-") {
        v["metadata"]["annotations"] = json!({
            "kubectl.kubernetes.io/last-applied-configuration":
                last_applied(rng, "PriorityClass", name, "", 2),
        });
    }
    v
}

/// Writes the cluster as one `kind: List` JSON document.
pub fn write_list<W: Write>(cfg: &Config, out: W) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let mut rng = Rng::new(cfg.seed);
    let layout = plan_layout(cfg, &mut rng);
    out.write_all(b"{\"apiVersion\":\"v1\",\"items\":[\n")?;
    let mut first = true;
    let mut item = |out: &mut io::BufWriter<W>, v: &Value| -> io::Result<()> {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        serde_json::to_writer(&mut *out, v).map_err(io::Error::other)
    };
    // In the order the API server lists them: nodes by name, the rest by namespace and name.
    let mut node_order: Vec<usize> = (0..layout.nodes.len()).collect();
    node_order.sort_by(|&a, &b| layout.nodes[a].name.cmp(&layout.nodes[b].name));
    for n in node_order {
        let v = node_json(&layout.nodes[n], &mut rng);
        item(&mut out, &v)?;
    }
    let mut pod_order: Vec<usize> = (0..layout.pods.len()).collect();
    let pod_key = |i: usize| {
        (
            layout.templates[layout.pods[i].0].namespace.as_str(),
            layout.pod_names[i].as_str(),
        )
    };
    pod_order.sort_by(|&a, &b| pod_key(a).cmp(&pod_key(b)));
    for i in pod_order {
        let (ti, node, replica) = layout.pods[i];
        let name = &layout.pod_names[i];
        let v = pod_json(&layout, name, ti, node, replica, cfg.full_percent, &mut rng);
        item(&mut out, &v)?;
    }
    let mut pods_of_template = vec![0usize; layout.templates.len()];
    for &(ti, _, _) in &layout.pods {
        pods_of_template[ti] += 1;
    }
    let mut pdbs = layout.pdbs.clone();
    pdbs.sort_by(|a, b| {
        let (x, y) = (&layout.templates[a.0], &layout.templates[b.0]);
        (&x.namespace, &x.app).cmp(&(&y.namespace, &y.app))
    });
    for &(ti, allowed) in &pdbs {
        let v = pdb_json(
            &layout.templates[ti],
            allowed,
            pods_of_template[ti],
            &mut rng,
        );
        item(&mut out, &v)?;
    }
    let mut namespaces = layout.namespaces.clone();
    namespaces.sort();
    for ns in &namespaces {
        let v = namespace_json(ns, &mut rng);
        item(&mut out, &v)?;
    }
    for (name, value) in [
        ("system-cluster-critical", 2_000_000_000),
        ("system-node-critical", 2_000_001_000),
        ("high-priority", 100_000),
        ("low-priority", -100),
    ] {
        let v = priority_class_json(name, value, &mut rng);
        item(&mut out, &v)?;
    }
    out.write_all(b"\n],\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"}}\n")?;
    out.flush()
}

/// The cluster as JSON bytes.
pub fn generate_json(cfg: &Config) -> Vec<u8> {
    // About 1.1 kB per pod and 3.2 kB per node with the default share of full pods.
    let mut buf = Vec::with_capacity(cfg.pods * 1100 + cfg.nodes * 3300 + 4096);
    write_list(cfg, &mut buf).expect("writing to memory cannot fail");
    buf
}

/// The same cluster as a snapshot, decoded from [`generate_json`]'s bytes (so it is exactly
/// what a run on the generated file plans on).
pub fn snapshot(cfg: &Config) -> ClusterSnapshot {
    decode::load_bytes("synthetic.json", &generate_json(cfg))
        .expect("the synthetic cluster decodes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::PodId;

    #[test]
    fn deterministic_and_decodable() {
        let cfg = Config::new(60, 1800, 7);
        let a = generate_json(&cfg);
        assert_eq!(a, generate_json(&cfg));
        assert_ne!(a, generate_json(&Config::new(60, 1800, 8)));
        let snap = decode::load_bytes("s.json", &a).unwrap();
        assert_eq!(snap.nodes.len(), 60);
        assert_eq!(snap.pods.len(), 1800);
        assert!(!snap.pdbs.is_empty());
        assert_eq!(snap.priority_classes.len(), 4);
        assert!(snap.pods.iter().any(|p| p.is_mirror));
        assert!(snap.pods.iter().any(|p| !p.topology_spread.is_empty()));
        assert!(snap.pods.iter().any(|p| p.node_name.is_none()));
        assert!(!snap.nodes.iter().all(|n| n.ready));
        // Requests never exceed what a node can hold.
        for id in snap.node_ids() {
            let node = snap.node(id);
            let req = snap.node_requested(id);
            assert!(req.cpu <= node.allocatable.cpu, "{}", node.name);
            assert!(req.memory <= node.allocatable.memory, "{}", node.name);
        }
    }

    #[test]
    fn one_namespace_holds_every_workload_when_asked() {
        let namespaces = |cfg: &Config| -> std::collections::BTreeSet<String> {
            snapshot(cfg)
                .pods
                .iter()
                .map(|p| p.namespace.to_string())
                .filter(|ns| ns.starts_with("team-"))
                .collect()
        };
        assert!(namespaces(&Config::new(30, 3000, 3)).len() > 1);
        let one = Config {
            namespaces: Some(1),
            ..Config::new(30, 3000, 3)
        };
        assert_eq!(
            namespaces(&one).into_iter().collect::<Vec<_>>(),
            ["team-000"]
        );
        assert_eq!(snapshot(&one).pods.len(), 3000);
    }

    #[test]
    fn load_is_uneven_with_duplicates() {
        let snap = snapshot(&Config::new(90, 2700, 1));
        let cpu_share: Vec<f64> = snap
            .node_ids()
            .filter(|&n| {
                !snap
                    .node(n)
                    .labels
                    .contains_key("node-role.kubernetes.io/control-plane")
            })
            .map(|n| snap.node_requested(n).cpu as f64 / snap.node(n).allocatable.cpu as f64)
            .collect();
        assert!(cpu_share.iter().any(|&s| s < 0.2), "a cold node");
        assert!(cpu_share.iter().any(|&s| s > 0.5), "a hot node");
        // Two pods of one ReplicaSet on one node.
        let mut seen = std::collections::HashSet::new();
        let duplicate = snap.pods.iter().enumerate().any(|(i, p)| {
            let owner = p.controller().filter(|o| &*o.kind == "ReplicaSet");
            match (owner, snap.pod_node(PodId::from_index(i))) {
                (Some(o), Some(n)) => !seen.insert((o.uid.clone(), n)),
                _ => false,
            }
        });
        assert!(duplicate);
    }
}
