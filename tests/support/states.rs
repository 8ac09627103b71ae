//! Live cluster states drawn from a seed, and the measure of the descheduler's predictions on
//! them (issue 28: predictions measured on many states).
//!
//! [`State::build`] makes, in a fresh namespace on fresh nodes carrying a label of their own
//! ([`GROUP_LABEL`], which the policy's nodeSelector names, so the plan is confined to them), a
//! state of one [`Family`] (`seed % 6`) with its node sizes, counts and requests drawn from a
//! small deterministic generator seeded with the seed, and one of three policies ([`Policy`]).
//! Its Deployments' pods are placed by the real kube-scheduler. Every family leaves work to do:
//! nodes filled above the policy's high threshold, then empty nodes join or cordoned ones open.
//!
//! [`measure`] runs the binary with `--predict-destinations -o json`, first `--dry-run` and
//! then for real, waits until every Deployment is back at its replicas, and compares: the pods
//! the dry-run names against the ones the real run evicted, each replacement's node against the
//! predictions for its workload, and the predicted after-state of each node against the real
//! one ([`Outcome`]).

use super::process::{run_bin, Run};
use super::*;
use k8s_openapi::api::core::v1::{
    Affinity, PodAffinityTerm, PodAntiAffinity, WeightedPodAffinityTerm,
};
use std::collections::BTreeSet;

/// The node label whose value names a state's nodes (the policy's nodeSelector).
pub const GROUP_LABEL: &str = "descheduler-test";
pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// The taint of the tainted nodes; no pod tolerates it.
pub const TAINT: (&str, &str, &str) = ("dedicated", "infra", "NoSchedule");

/// The most pods a state holds, and the least.
const MAX_PODS: i32 = 80;
const MIN_PODS: i32 = 20;

// ---------------------------------------------------------------------------------------------
// The generator

/// splitmix64: a tiny deterministic generator, so that a seed always draws the same state.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() as i64 - 1) as usize]
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: i64) -> bool {
        self.range(1, 100) <= percent
    }
}

/// The kinds of state. Each has its own trait (below) and leaves rebalancing work: its nodes
/// are filled above the policy's high cpu threshold, then empty nodes join (or, for
/// [`Family::Hotspot`], cordoned ones open).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// Three zones of the same make-up; Deployments with hard (DoNotSchedule) and soft
    /// (ScheduleAnyway) zone spread and some without; then one or two empty nodes join in
    /// each zone.
    Zones,
    /// Nodes of 2 to 4 sizes (2, 4, 8, 16 cpu), one or two of them tainted with a taint no pod
    /// tolerates (they stay empty: underutilized, and no destination); then 2 or 3 empty nodes
    /// join.
    Sizes,
    /// Some Deployments with required, some with preferred pod anti-affinity on the hostname;
    /// then 2 to 4 empty nodes join.
    AntiAffinity,
    /// Two or three Deployments under PodDisruptionBudgets (minAvailable or maxUnavailable)
    /// that allow one or two disruptions, fewer than a rebalance would take; then 2 to 4 empty
    /// nodes join.
    Budgets,
    /// A few nodes filled, a first wave of empty nodes joins, more Deployments are placed
    /// (mostly on the new nodes), and a second wave joins.
    Joining,
    /// Pods placed while only 2 to 4 nodes are schedulable (the others created cordoned),
    /// then the rest are uncordoned: a few hot nodes among empty ones.
    Hotspot,
}

impl Family {
    pub const ALL: [Family; 6] = [
        Family::Zones,
        Family::Sizes,
        Family::AntiAffinity,
        Family::Budgets,
        Family::Joining,
        Family::Hotspot,
    ];

    pub fn of(seed: u64) -> Family {
        Family::ALL[(seed % Family::ALL.len() as u64) as usize]
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Zones => "zones",
            Family::Sizes => "sizes",
            Family::AntiAffinity => "anti-affinity",
            Family::Budgets => "budgets",
            Family::Joining => "joining",
            Family::Hotspot => "hotspot",
        }
    }
}

/// The policies a state is measured with; each with DefaultEvictor `nodeFit: true`.
/// Thresholds are percentages of allocatable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// LowNodeUtilization alone, on cpu.
    Lnu { low: i64, high: i64 },
    /// RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint and LowNodeUtilization
    /// on cpu.
    Trio { low: i64, high: i64 },
    /// LowNodeUtilization on cpu and memory.
    CpuMemory { cpu: (i64, i64), memory: (i64, i64) },
}

impl Policy {
    /// The policy of `seed`: over any 18 consecutive seeds, every family meets every policy
    /// (the kind is `(seed % 6 + seed / 6) % 3`); thresholds drawn: low 15-30, high 45-65.
    fn draw(seed: u64, rng: &mut Rng) -> Policy {
        let mut threshold = |lo: i64, hi: i64| 5 * rng.range(lo / 5, hi / 5);
        let (low, high) = (threshold(15, 30), threshold(45, 65));
        match (seed % 6 + seed / 6) % 3 {
            0 => Policy::Lnu { low, high },
            1 => Policy::Trio { low, high },
            _ => Policy::CpuMemory {
                cpu: (low, high),
                memory: (threshold(15, 30), threshold(45, 65)),
            },
        }
    }

    /// The high cpu threshold: the state's nodes are filled above it.
    pub fn high_cpu(self) -> i64 {
        match self {
            Policy::Lnu { high, .. } | Policy::Trio { high, .. } => high,
            Policy::CpuMemory { cpu, .. } => cpu.1,
        }
    }

    pub fn name(self) -> String {
        match self {
            Policy::Lnu { low, high } => format!("lnu cpu {low}/{high}"),
            Policy::Trio { low, high } => format!("dup+spread+lnu cpu {low}/{high}"),
            Policy::CpuMemory { cpu, memory } => {
                format!("lnu cpu {}/{} mem {}/{}", cpu.0, cpu.1, memory.0, memory.1)
            }
        }
    }

    /// The policy file, confined to the nodes labelled `GROUP_LABEL=group`.
    pub fn yaml(self, group: &str) -> String {
        let (plugins, thresholds, targets): (&[&str], String, String) = match self {
            Policy::Lnu { low, high } => (
                &["LowNodeUtilization"],
                format!("{{cpu: {low}}}"),
                format!("{{cpu: {high}}}"),
            ),
            Policy::Trio { low, high } => (
                &[
                    "RemoveDuplicates",
                    "RemovePodsViolatingTopologySpreadConstraint",
                    "LowNodeUtilization",
                ],
                format!("{{cpu: {low}}}"),
                format!("{{cpu: {high}}}"),
            ),
            Policy::CpuMemory { cpu, memory } => (
                &["LowNodeUtilization"],
                format!("{{cpu: {}, memory: {}}}", cpu.0, memory.0),
                format!("{{cpu: {}, memory: {}}}", cpu.1, memory.1),
            ),
        };
        let mut config = String::new();
        for p in plugins.iter().filter(|p| **p != "LowNodeUtilization") {
            let _ = writeln!(config, "  - name: {p}");
        }
        format!(
            r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
profiles:
- name: rebalance
  pluginConfig:
  - name: DefaultEvictor
    args: {{nodeFit: true}}
{config}  - name: LowNodeUtilization
    args:
      thresholds: {thresholds}
      targetThresholds: {targets}
  plugins:
    balance:
      enabled: [{}]
"#,
            plugins.join(", ")
        )
    }
}

/// The generator of `seed`, once it has drawn the state's family and policy.
fn draw(seed: u64) -> (Rng, Family, Policy) {
    let mut rng = Rng::new(seed);
    let policy = Policy::draw(seed, &mut rng);
    (rng, Family::of(seed), policy)
}

/// The family and policy of `seed`'s state (what [`State::build`] builds).
pub fn plan_of(seed: u64) -> (Family, Policy) {
    let (_, family, policy) = draw(seed);
    (family, policy)
}

// ---------------------------------------------------------------------------------------------
// Workloads with pod anti-affinity

/// Pod anti-affinity of a workload's pods to each other, on the hostname.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AntiAffinity {
    /// requiredDuringSchedulingIgnoredDuringExecution: at most one per node.
    Required,
    /// preferredDuringSchedulingIgnoredDuringExecution, weight 100.
    Preferred,
}

/// A Deployment: [`PodConfig`] and what it lacks (pod anti-affinity).
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub replicas: i32,
    pub pod: PodConfig,
    pub anti_affinity: Option<AntiAffinity>,
}

impl Workload {
    pub fn new(name: &str, replicas: i32, pod: PodConfig) -> Self {
        Workload {
            name: name.to_string(),
            replicas,
            pod,
            anti_affinity: None,
        }
    }

    /// The pods keep apart from each other on the hostname, required or preferred.
    pub fn anti_affinity(mut self, kind: AntiAffinity) -> Self {
        self.anti_affinity = Some(kind);
        self
    }

    /// Creates the Deployment (as [`create_deployment`] does, with the anti-affinity).
    pub async fn create(&self, client: &Client, namespace: &str) -> Deployment {
        let (selector, mut template) = workload_parts(&self.name, &self.pod);
        if let (Some(kind), Some(spec)) = (self.anti_affinity, template.spec.as_mut()) {
            let term = PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some([("app".to_string(), self.name.clone())].into()),
                    ..Default::default()
                }),
                topology_key: HOSTNAME.to_string(),
                ..Default::default()
            };
            let anti = match kind {
                AntiAffinity::Required => PodAntiAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![term]),
                    ..Default::default()
                },
                AntiAffinity::Preferred => PodAntiAffinity {
                    preferred_during_scheduling_ignored_during_execution: Some(vec![
                        WeightedPodAffinityTerm {
                            weight: 100,
                            pod_affinity_term: term,
                        },
                    ]),
                    ..Default::default()
                },
            };
            spec.affinity = Some(Affinity {
                pod_anti_affinity: Some(anti),
                ..Default::default()
            });
        }
        let deployment = Deployment {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..Default::default()
            },
            spec: DeploymentSpec {
                replicas: Some(self.replicas),
                selector,
                template,
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".to_string()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            status: None,
        };
        Api::<Deployment>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &deployment)
            .await
            .unwrap_or_else(|e| panic!("creating deployment {namespace}/{}: {e}", self.name))
    }
}

/// Creates the workloads, then waits until each has its replicas Running (kube-scheduler
/// places them as they come).
async fn place(client: &Client, namespace: &str, workloads: &[Workload]) {
    for w in workloads {
        w.create(client, namespace).await;
    }
    for w in workloads {
        wait_running_pods(
            client,
            namespace,
            &app_selector(&w.name),
            w.replicas as usize,
        )
        .await;
    }
}

// ---------------------------------------------------------------------------------------------
// States

/// A node of a state: its name, allocatable cpu in millicores, and what it is in the state
/// (`filled`, `joined`, `tainted`, `hot`, `opened`).
#[derive(Clone, Debug)]
pub struct StateNode {
    pub name: String,
    pub cpu_milli: i64,
    pub role: &'static str,
}

/// A state on the cluster, ready to be measured.
#[derive(Clone, Debug)]
pub struct State {
    pub seed: u64,
    pub family: String,
    pub policy: String,
    pub policy_yaml: String,
    pub group: String,
    pub namespace: String,
    pub nodes: Vec<StateNode>,
    /// Each Deployment's name and replicas.
    pub workloads: Vec<(String, i32)>,
    /// What was drawn, in a line.
    pub summary: String,
}

/// A node to create.
#[derive(Clone, Copy, Debug)]
struct NodePlan {
    cpu: i64,
    zone: &'static str,
    role: &'static str,
    tainted: bool,
    cordoned: bool,
}

impl NodePlan {
    fn new(cpu: i64, zone: &'static str, role: &'static str) -> Self {
        NodePlan {
            cpu,
            zone,
            role,
            tainted: false,
            cordoned: false,
        }
    }
}

const ZONES: [&str; 3] = ["a", "b", "c"];

fn zone(i: usize) -> &'static str {
    ZONES[i % ZONES.len()]
}

/// Creates the nodes (all at once) and returns them.
async fn create_nodes(client: &Client, group: &str, plans: &[NodePlan]) -> Vec<StateNode> {
    let made = plans.iter().map(|p| {
        let name = unique("n");
        let mut config = NodeConfig::new(&name)
            .label(GROUP_LABEL, group)
            .label(ZONE, p.zone)
            .cpu(&p.cpu.to_string())
            .memory(&format!("{}Gi", 4 * p.cpu));
        if p.tainted {
            config = config.taint(TAINT.0, TAINT.1, TAINT.2);
        }
        if p.cordoned {
            config = config.unschedulable();
        }
        let client = client.clone();
        async move {
            create_node(&client, config).await;
            StateNode {
                name,
                cpu_milli: p.cpu * 1000,
                role: p.role,
            }
        }
    });
    futures::future::join_all(made).await
}

/// Uncordons a node and waits until its cordon taint is gone.
async fn uncordon(client: &Client, name: &str) {
    let nodes: Api<Node> = Api::all(client.clone());
    let patch = serde_json::json!({ "spec": { "unschedulable": null } });
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("uncordoning {name}: {e}"));
    wait_for(&format!("node {name} uncordoned"), TIMEOUT, || {
        let nodes = &nodes;
        async move {
            let node = nodes.get(name).await.ok()?;
            let spec = node.spec.as_ref()?;
            let cordon = spec
                .taints
                .iter()
                .flatten()
                .any(|t| t.key == UNSCHEDULABLE_TAINT);
            (spec.unschedulable != Some(true) && !cordon).then_some(())
        }
    })
    .await
}

/// Draws `count` workloads sharing `budget` millicores of requests: each with a cpu request
/// near `budget / pods` (at most `max_pod`), replicas to fill its share (at least 2, at most
/// `caps[i]` where given), a memory request of 1 to 4 MiB per millicore (nodes have 4 MiB);
/// at most [`MAX_PODS`] pods in all (`have` pods already placed). Returns (replicas, cpu, memory
/// MiB) per workload.
fn draw_workloads(
    rng: &mut Rng,
    count: usize,
    budget: i64,
    max_pod: i64,
    caps: &[Option<i32>],
    have: i32,
) -> Vec<(i32, i64, i64)> {
    let pods = rng.range(24, 60).min(i64::from(MAX_PODS - have));
    let average = (budget / pods.max(1)).clamp(150, max_pod);
    let weights: Vec<i64> = (0..count).map(|_| rng.range(1, 3)).collect();
    let total: i64 = weights.iter().sum();
    let mut drawn: Vec<(i32, i64, i64)> = weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let share = budget * w / total;
            let factor = rng.pick(&[50, 75, 100, 125, 150]);
            let mut cpu = (average * factor / 100 / 50 * 50).clamp(100, max_pod);
            let mut replicas = ((share + cpu / 2) / cpu).max(2) as i32;
            if let Some(cap) = caps.get(i).copied().flatten() {
                if replicas > cap {
                    replicas = cap;
                    cpu = (share / i64::from(cap) / 50 * 50).clamp(100, max_pod);
                }
            }
            let memory = cpu * rng.range(1, 4);
            (replicas, cpu, memory)
        })
        .collect();
    while have + drawn.iter().map(|d| d.0).sum::<i32>() > MAX_PODS {
        let most = drawn
            .iter_mut()
            .filter(|d| d.0 > 2)
            .max_by_key(|d| d.0)
            .expect("more than MAX_PODS pods with 2 replicas each");
        most.0 -= 1;
    }
    drawn
}

fn pod(group: &str, cpu: i64, memory: i64) -> PodConfig {
    PodConfig::new()
        .node_selector(GROUP_LABEL, group)
        .cpu(&format!("{cpu}m"))
        .memory(&format!("{memory}Mi"))
}

/// Draws node sizes from `sizes` until `count` nodes or `cap` cores.
fn draw_sizes(rng: &mut Rng, sizes: &[i64], count: i64, cap: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for _ in 0..count {
        let cpu = rng.pick(sizes);
        if !out.is_empty() && out.iter().sum::<i64>() + cpu > cap {
            break;
        }
        out.push(cpu);
    }
    out
}

/// The most cores a state fills at first, so that its pods stay under [`MAX_PODS`].
const FILL_CAP_CORES: i64 = 56;

impl State {
    /// Builds the state of `seed` on the cluster of `client` (see [`Family`] and [`Policy`]).
    pub async fn build(client: &Client, seed: u64) -> State {
        let (mut rng, family, policy) = draw(seed);
        // Filled above the high threshold, so that there is something to move.
        let fill = rng.range((policy.high_cpu() + 8).max(66), 80);
        let group = unique(&format!("s{seed}"));
        let namespace = create_namespace(client, &format!("states{seed}")).await;
        let mut nodes: Vec<StateNode> = Vec::new();
        let mut workloads: Vec<Workload> = Vec::new();
        let mut summary = format!("fill {fill}%");
        let schedulable_cores = |plans: &[NodePlan]| -> i64 {
            plans
                .iter()
                .filter(|p| !p.tainted && !p.cordoned)
                .map(|p| p.cpu)
                .sum()
        };
        let pods_in = |ws: &[Workload]| ws.iter().map(|w| w.replicas).sum::<i32>();
        match family {
            Family::Zones => {
                let per_zone = rng.range(2, 4);
                let sizes: Vec<i64> = (0..per_zone).map(|_| rng.pick(&[4, 8])).collect();
                let initial: Vec<NodePlan> = ZONES
                    .iter()
                    .flat_map(|z| sizes.iter().map(move |c| NodePlan::new(*c, z, "filled")))
                    .collect();
                let budget = schedulable_cores(&initial) * 10 * fill;
                nodes.extend(create_nodes(client, &group, &initial).await);
                let count = rng.range(4, 6) as usize;
                let drawn = draw_workloads(&mut rng, count, budget, 1000, &[], 0);
                for (i, (replicas, cpu, memory)) in drawn.into_iter().enumerate() {
                    // The first hard, the second soft, the rest drawn.
                    let kind = match i {
                        0 => "hard",
                        1 => "soft",
                        _ => rng.pick(&["hard", "soft", "plain"]),
                    };
                    let mut p = pod(&group, cpu, memory);
                    match kind {
                        "hard" => p = p.spread(1, ZONE, "DoNotSchedule"),
                        "soft" => p = p.spread(1, ZONE, "ScheduleAnyway"),
                        _ => {}
                    }
                    workloads.push(Workload::new(&format!("{kind}-{i}"), replicas, p));
                }
                place(client, &namespace, &workloads).await;
                let joining = rng.range(1, 2);
                let joiners: Vec<NodePlan> = ZONES
                    .iter()
                    .flat_map(|z| (0..joining).map(move |_| NodePlan::new(8, z, "joined")))
                    .collect();
                nodes.extend(create_nodes(client, &group, &joiners).await);
                let _ = write!(
                    summary,
                    "; {per_zone} nodes per zone {sizes:?} cpu; {joining} joined per zone"
                );
            }
            Family::Sizes => {
                let kinds = rng.range(2, 4) as usize;
                let first = rng.range(0, (4 - kinds) as i64) as usize;
                let sizes = &[2, 4, 8, 16][first..first + kinds];
                // One of each size, then drawn ones.
                let mut cores: Vec<i64> = sizes.to_vec();
                let more = rng.range(6, 12) - kinds as i64;
                let cap = FILL_CAP_CORES - cores.iter().sum::<i64>();
                cores.extend(draw_sizes(&mut rng, sizes, more, cap.max(0)));
                let mut initial: Vec<NodePlan> = cores
                    .iter()
                    .enumerate()
                    .map(|(i, c)| NodePlan::new(*c, zone(i), "filled"))
                    .collect();
                let tainted = rng.range(1, 2);
                for i in 0..tainted {
                    initial.push(NodePlan {
                        tainted: true,
                        ..NodePlan::new(rng.pick(sizes), zone(i as usize), "tainted")
                    });
                }
                let budget = schedulable_cores(&initial) * 10 * fill;
                let max_pod = (sizes[0] * 500).min(1000);
                nodes.extend(create_nodes(client, &group, &initial).await);
                let count = rng.range(3, 6) as usize;
                for (i, (replicas, cpu, memory)) in
                    draw_workloads(&mut rng, count, budget, max_pod, &[], 0)
                        .into_iter()
                        .enumerate()
                {
                    workloads.push(Workload::new(
                        &format!("plain-{i}"),
                        replicas,
                        pod(&group, cpu, memory),
                    ));
                }
                place(client, &namespace, &workloads).await;
                let joiners: Vec<NodePlan> = (0..rng.range(2, 3))
                    .map(|i| NodePlan::new(rng.pick(sizes), zone(i as usize), "joined"))
                    .collect();
                nodes.extend(create_nodes(client, &group, &joiners).await);
                let _ = write!(
                    summary,
                    "; sizes {sizes:?} cpu; filled {cores:?}; {tainted} tainted; {} joined",
                    joiners.len()
                );
            }
            Family::AntiAffinity => {
                let count = rng.range(6, 10);
                let cores = draw_sizes(&mut rng, &[4, 8], count, FILL_CAP_CORES);
                let initial: Vec<NodePlan> = cores
                    .iter()
                    .enumerate()
                    .map(|(i, c)| NodePlan::new(*c, zone(i), "filled"))
                    .collect();
                let budget = schedulable_cores(&initial) * 10 * fill;
                nodes.extend(create_nodes(client, &group, &initial).await);
                let count = rng.range(4, 6) as usize;
                // The first required, the second preferred, the rest drawn.
                let kinds: Vec<&str> = (0..count)
                    .map(|i| match i {
                        0 => "required",
                        1 => "preferred",
                        _ => rng.pick(&["required", "preferred", "plain", "plain"]),
                    })
                    .collect();
                let spread_cap = cores.len() as i32 - 2;
                let caps: Vec<Option<i32>> = kinds
                    .iter()
                    .map(|k| (*k == "required").then_some(spread_cap))
                    .collect();
                for (i, (replicas, cpu, memory)) in
                    draw_workloads(&mut rng, count, budget, 1000, &caps, 0)
                        .into_iter()
                        .enumerate()
                {
                    let kind = kinds[i];
                    let mut w =
                        Workload::new(&format!("{kind}-{i}"), replicas, pod(&group, cpu, memory));
                    match kind {
                        "required" => w = w.anti_affinity(AntiAffinity::Required),
                        "preferred" => w = w.anti_affinity(AntiAffinity::Preferred),
                        _ => {}
                    }
                    workloads.push(w);
                }
                place(client, &namespace, &workloads).await;
                let joiners: Vec<NodePlan> = (0..rng.range(2, 4))
                    .map(|i| NodePlan::new(rng.pick(&[4, 8]), zone(i as usize), "joined"))
                    .collect();
                nodes.extend(create_nodes(client, &group, &joiners).await);
                let _ = write!(summary, "; filled {cores:?} cpu; {} joined", joiners.len());
            }
            Family::Budgets => {
                let count = rng.range(6, 12);
                let cores = draw_sizes(&mut rng, &[4, 8], count, FILL_CAP_CORES);
                let initial: Vec<NodePlan> = cores
                    .iter()
                    .enumerate()
                    .map(|(i, c)| NodePlan::new(*c, zone(i), "filled"))
                    .collect();
                let budget = schedulable_cores(&initial) * 10 * fill;
                nodes.extend(create_nodes(client, &group, &initial).await);
                let count = rng.range(4, 6) as usize;
                let budgeted = rng.range(2, 3) as usize;
                for (i, (replicas, cpu, memory)) in
                    draw_workloads(&mut rng, count, budget, 1000, &[], 0)
                        .into_iter()
                        .enumerate()
                {
                    let kind = if i < budgeted { "pdb" } else { "plain" };
                    workloads.push(Workload::new(
                        &format!("{kind}-{i}"),
                        replicas,
                        pod(&group, cpu, memory),
                    ));
                }
                place(client, &namespace, &workloads).await;
                let mut budgets = Vec::new();
                for (i, w) in workloads.iter().take(budgeted).enumerate() {
                    let allowed = rng.range(1, 2) as i32;
                    let budget = if i % 2 == 0 {
                        Budget::MinAvailable(IntOrString::Int(w.replicas - allowed))
                    } else {
                        Budget::MaxUnavailable(IntOrString::Int(allowed))
                    };
                    budgets.push(format!("{} {budget:?}", w.name));
                    create_pdb(client, &namespace, &w.name, &[("app", &w.name)], budget).await;
                    wait_pdb(client, &namespace, &w.name, w.replicas, allowed).await;
                }
                let joiners: Vec<NodePlan> = (0..rng.range(2, 4))
                    .map(|i| NodePlan::new(rng.pick(&[4, 8]), zone(i as usize), "joined"))
                    .collect();
                nodes.extend(create_nodes(client, &group, &joiners).await);
                let _ = write!(
                    summary,
                    "; filled {cores:?} cpu; budgets {budgets:?}; {} joined",
                    joiners.len()
                );
            }
            Family::Joining => {
                let count = rng.range(4, 8);
                let cores = draw_sizes(&mut rng, &[4, 8], count, 40);
                let initial: Vec<NodePlan> = cores
                    .iter()
                    .enumerate()
                    .map(|(i, c)| NodePlan::new(*c, zone(i), "filled"))
                    .collect();
                let budget = schedulable_cores(&initial) * 10 * fill;
                nodes.extend(create_nodes(client, &group, &initial).await);
                let count = rng.range(3, 4) as usize;
                for (i, (replicas, cpu, memory)) in
                    draw_workloads(&mut rng, count, budget, 1000, &[], 0)
                        .into_iter()
                        .enumerate()
                {
                    workloads.push(Workload::new(
                        &format!("early-{i}"),
                        replicas,
                        pod(&group, cpu, memory),
                    ));
                }
                place(client, &namespace, &workloads).await;
                // A first wave; more pods (kube-scheduler puts most on the new nodes), then a
                // second wave.
                let wave1: Vec<NodePlan> = (0..rng.range(2, 4))
                    .map(|i| NodePlan::new(rng.pick(&[4, 8]), zone(i as usize), "joined"))
                    .collect();
                nodes.extend(create_nodes(client, &group, &wave1).await);
                let have = pods_in(&workloads);
                let room = schedulable_cores(&wave1) * 10 * rng.range(30, 60);
                let later = rng.range(1, 2) as usize;
                let mut late = Vec::new();
                for (i, (replicas, cpu, memory)) in
                    draw_workloads(&mut rng, later, room, 1000, &[], have)
                        .into_iter()
                        .enumerate()
                {
                    late.push(Workload::new(
                        &format!("late-{i}"),
                        replicas,
                        pod(&group, cpu, memory),
                    ));
                }
                place(client, &namespace, &late).await;
                workloads.extend(late);
                let wave2: Vec<NodePlan> = (0..rng.range(2, 4))
                    .map(|i| NodePlan::new(rng.pick(&[4, 8, 16]), zone(i as usize + 1), "joined"))
                    .collect();
                nodes.extend(create_nodes(client, &group, &wave2).await);
                let _ = write!(
                    summary,
                    "; filled {cores:?} cpu; wave 1 {:?}, wave 2 {:?} cpu",
                    wave1.iter().map(|p| p.cpu).collect::<Vec<_>>(),
                    wave2.iter().map(|p| p.cpu).collect::<Vec<_>>()
                );
            }
            Family::Hotspot => {
                let hot = rng.range(2, 4);
                let total = rng.range(8, 16);
                let mut initial: Vec<NodePlan> = (0..hot)
                    .map(|i| NodePlan::new(8, zone(i as usize), "hot"))
                    .collect();
                for i in hot..total {
                    initial.push(NodePlan {
                        cordoned: true,
                        ..NodePlan::new(rng.pick(&[4, 8]), zone(i as usize), "opened")
                    });
                }
                let budget = schedulable_cores(&initial) * 10 * fill;
                nodes.extend(create_nodes(client, &group, &initial).await);
                let count = rng.range(3, 5) as usize;
                for (i, (replicas, cpu, memory)) in
                    draw_workloads(&mut rng, count, budget, 1000, &[], 0)
                        .into_iter()
                        .enumerate()
                {
                    workloads.push(Workload::new(
                        &format!("plain-{i}"),
                        replicas,
                        pod(&group, cpu, memory),
                    ));
                }
                place(client, &namespace, &workloads).await;
                for n in nodes.iter().filter(|n| n.role == "opened") {
                    uncordon(client, &n.name).await;
                }
                let _ = write!(summary, "; {hot} hot of {total} nodes");
            }
        }
        let _ = write!(
            summary,
            "; workloads {}",
            workloads
                .iter()
                .map(|w| format!(
                    "{}x{}({})",
                    w.name,
                    w.replicas,
                    w.pod.cpu.as_deref().unwrap_or("-")
                ))
                .collect::<Vec<_>>()
                .join(" ")
        );
        State {
            seed,
            family: family.name().to_string(),
            policy: policy.name(),
            policy_yaml: policy.yaml(&group),
            group,
            namespace,
            nodes,
            workloads: workloads
                .iter()
                .map(|w| (w.name.clone(), w.replicas))
                .collect(),
            summary,
        }
    }

    pub fn pods(&self) -> usize {
        self.workloads.iter().map(|(_, r)| *r as usize).sum()
    }
}

// ---------------------------------------------------------------------------------------------
// Reading pods and reports

/// The JSON report of a run that exited 0.
pub fn report(run: &Run) -> serde_json::Value {
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}): {}\n{}", run.stdout, run.stderr))
}

pub fn node_of(p: &Pod) -> String {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

pub fn app_of(p: &Pod) -> String {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app").cloned())
        .unwrap_or_default()
}

/// The cpu request of the pod's first container, in millicores.
pub fn cpu_milli(p: &Pod) -> i64 {
    let q = p
        .spec
        .as_ref()
        .and_then(|s| s.containers[0].resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("cpu"))
        .map(|q| q.0.clone())
        .unwrap_or_default();
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap(),
        None => q.parse::<i64>().map(|c| c * 1000).unwrap_or(0),
    }
}

/// The pods a report names for eviction, in its order.
pub fn eviction_names(report: &serde_json::Value) -> Vec<String> {
    report["evictions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["pod"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Where one evicted pod's replacement is predicted to land.
#[derive(Clone, Debug)]
pub struct Prediction {
    pub pod: String,
    pub from: String,
    pub destination: String,
    pub alternatives: Vec<String>,
}

/// The predictions of a real run's evicted pods, by workload (`app` label of the pod as it
/// was before the run, from `by_name`).
pub fn predictions(
    evictions: &[serde_json::Value],
    by_name: &BTreeMap<String, Pod>,
) -> BTreeMap<String, Vec<Prediction>> {
    let mut out: BTreeMap<String, Vec<Prediction>> = BTreeMap::new();
    for e in evictions.iter().filter(|e| e["result"] == "evicted") {
        let pod = e["pod"].as_str().unwrap_or_default();
        let app = by_name.get(pod).map(app_of).unwrap_or_default();
        out.entry(app).or_default().push(Prediction {
            pod: pod.to_string(),
            from: e["node"].as_str().unwrap_or_default().to_string(),
            destination: e["destination"].as_str().unwrap_or("-").to_string(),
            alternatives: e["alternatives"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    out
}

/// How the replacements matched the predictions.
#[derive(Clone, Debug, Default)]
pub struct Matching {
    /// Replacements on the predicted node.
    pub exact: usize,
    /// On the predicted node or one of its alternatives.
    pub within: usize,
    /// Replacements seen.
    pub total: usize,
    /// Each replacement that matched no prediction of its workload.
    pub misses: Vec<String>,
}

/// Compared per workload (the ReplicaSet controller recreates pods in its own order): each
/// replacement (its node, in `landed` by workload) takes a prediction of its workload naming
/// its node, exactly first, then among the alternatives. `describe` names a node in messages.
pub fn match_landings(
    landed: &BTreeMap<String, Vec<String>>,
    predicted: &BTreeMap<String, Vec<Prediction>>,
    describe: impl Fn(&str) -> String,
) -> Matching {
    let mut m = Matching::default();
    for (app, nodes_landed) in landed {
        let mut open = predicted.get(app).cloned().unwrap_or_default();
        let mut rest = Vec::new();
        for n in nodes_landed {
            m.total += 1;
            if let Some(i) = open.iter().position(|p| &p.destination == n) {
                open.remove(i);
                m.exact += 1;
                m.within += 1;
            } else {
                rest.push(n.clone());
            }
        }
        for n in rest {
            if let Some(i) = open.iter().position(|p| p.alternatives.contains(&n)) {
                open.remove(i);
                m.within += 1;
            } else {
                let open: Vec<String> = open
                    .iter()
                    .map(|p| {
                        format!(
                            "{} from {} -> {} alts [{}]",
                            p.pod.rsplit('/').next().unwrap_or_default(),
                            describe(&p.from),
                            describe(&p.destination),
                            p.alternatives
                                .iter()
                                .map(|a| describe(a))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })
                    .collect();
                m.misses.push(format!(
                    "{app} landed on {}, open predictions {open:?}",
                    describe(&n)
                ));
            }
        }
    }
    m
}

/// The predicted after-state of each node of `nodes` the report lists: its requested cpu as a
/// percentage of allocatable once the plan is carried out, the report's `nodes[].after` (the
/// evicted pods gone, their replacements where they are predicted to land).
pub fn predicted_after(report: &serde_json::Value, nodes: &[StateNode]) -> BTreeMap<String, f64> {
    let after: BTreeMap<String, f64> = report["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            (
                n["name"].as_str().unwrap_or_default().to_string(),
                n["after"]["cpu"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    nodes
        .iter()
        .filter_map(|n| Some((n.name.clone(), *after.get(&n.name)?)))
        .collect()
}

/// Each node's requested cpu as a percentage of allocatable, from the pods on it.
pub fn real_after(pods: &[Pod], nodes: &[StateNode]) -> BTreeMap<String, f64> {
    let mut cpu: BTreeMap<String, i64> = BTreeMap::new();
    for p in pods {
        *cpu.entry(node_of(p)).or_default() += cpu_milli(p);
    }
    nodes
        .iter()
        .map(|n| {
            let c = *cpu.get(&n.name).unwrap_or(&0) as f64;
            (n.name.clone(), 100.0 * c / n.cpu_milli as f64)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Measuring

/// What [`measure`] found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Evictions the dry-run planned.
    pub planned: usize,
    /// Evictions of the real run that were carried out (`result: evicted`).
    pub evicted: usize,
    /// Whether the dry-run named exactly the pods the real run planned, in order.
    pub dry_equals_real: bool,
    /// Replacements on the predicted node / on it or an alternative / replacements seen.
    pub exact: usize,
    pub within: usize,
    pub total: usize,
    /// |predicted - real| requested cpu, in points of allocatable, over `error_nodes` nodes.
    pub mean_error: f64,
    pub max_error: f64,
    pub error_nodes: usize,
    pub misses: Vec<String>,
    /// Evicted pods whose predicted destination is the node they were evicted from.
    pub own_node: usize,
    pub dry: serde_json::Value,
    pub real: serde_json::Value,
    pub before: Vec<Pod>,
    pub after: Vec<Pod>,
    /// Per node (`name [role cpu]`): the predicted and the real after-state cpu, where they
    /// differ by more than a point.
    pub after_differences: Vec<String>,
}

/// Runs the binary on `state` with `--predict-destinations -o json`, `--dry-run` then for
/// real, waits until every Deployment is back at its replicas and compares (see [`Outcome`]).
/// Panics if a run fails or the Deployments do not come back within the harness's timeout.
pub async fn measure(cluster: &Cluster, state: &State) -> Outcome {
    let client = cluster.client();
    let ns = &state.namespace;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let before = pods.list(&ListParams::default()).await.unwrap().items;
    let before_uids: BTreeSet<String> = before
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    // The pods before the run, by `<namespace>/<name>` as the report names them.
    let by_name: BTreeMap<String, Pod> = before
        .iter()
        .map(|p| {
            (
                format!("{ns}/{}", p.metadata.name.clone().unwrap()),
                p.clone(),
            )
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &state.policy_yaml);
    let policy = policy.to_str().unwrap();
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let args = |dry: bool| {
        let mut a = vec![
            "--policy-config-file",
            policy,
            "--kubeconfig",
            kubeconfig.as_str(),
            "--predict-destinations",
            "-o",
            "json",
        ];
        if dry {
            a.push("--dry-run");
        }
        a
    };
    let dry = report(&run_bin(&args(true)).await);
    let real = report(&run_bin(&args(false)).await);
    let planned = eviction_names(&dry);
    let evictions = real["evictions"].as_array().cloned().unwrap_or_default();
    let evicted = evictions
        .iter()
        .filter(|e| e["result"] == "evicted")
        .count();
    let own_node = evictions
        .iter()
        .filter(|e| {
            e["result"] == "evicted"
                && (e["destination"] == e["node"]
                    || e["alternatives"]
                        .as_array()
                        .is_some_and(|a| a.contains(&e["node"])))
        })
        .count();

    // Every Deployment back to its replicas; the replacements are the pods not there before.
    let mut after = Vec::new();
    for (name, replicas) in &state.workloads {
        after.extend(wait_running_pods(&client, ns, &app_selector(name), *replicas as usize).await);
    }
    let mut landed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in &after {
        if !before_uids.contains(p.metadata.uid.as_deref().unwrap_or_default()) {
            landed.entry(app_of(p)).or_default().push(node_of(p));
        }
    }
    let roles: BTreeMap<&str, &StateNode> =
        state.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let describe = |name: &str| match roles.get(name) {
        Some(n) => format!("{name} [{} {}]", n.role, n.cpu_milli / 1000),
        None => name.to_string(),
    };
    let m = match_landings(&landed, &predictions(&evictions, &by_name), describe);

    let predicted = predicted_after(&real, &state.nodes);
    let real_cpu = real_after(&after, &state.nodes);
    let mut errors = Vec::new();
    let mut after_differences = Vec::new();
    for (name, want) in &predicted {
        let got = real_cpu.get(name).copied().unwrap_or(0.0);
        let error = (want - got).abs();
        if error > 1.0 {
            after_differences.push(format!(
                "{}: predicted {want:.1}% real {got:.1}%",
                describe(name)
            ));
        }
        errors.push(error);
    }
    Outcome {
        planned: planned.len(),
        evicted,
        dry_equals_real: planned == eviction_names(&real),
        exact: m.exact,
        within: m.within,
        total: m.total,
        mean_error: errors.iter().sum::<f64>() / errors.len().max(1) as f64,
        max_error: errors.iter().copied().fold(0.0, f64::max),
        error_nodes: errors.len(),
        misses: m.misses,
        own_node,
        dry,
        real,
        before,
        after,
        after_differences,
    }
}
