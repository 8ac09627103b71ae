//! Property tests over random clusters and policies: whatever the input, a plan never exceeds
//! a limit or a disruption budget (moves by surge included), never names a protected pod or a pod twice, never leaves a
//! gang below its minMember, and does not depend on the order of the input.

use descheduler::framework::Pipeline;
use descheduler::plan::plan;
use descheduler::plugins::default_evictor::DefaultEvictor;
use descheduler::policy::Policy;
use descheduler::snapshot::builders::{node, pdb, pod, pod_group, volcano_group, T0};
use descheduler::snapshot::{
    ClusterSnapshot, DisruptionMode, GangKind, NodeId, Pdb, Phase, Pod, PodGroup, PodId,
    SnapshotParts, TaintEffect, WhenUnsatisfiable,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct NodeSpec {
    cpu: i64,
    zone: u8,
    tainted: bool,
    unschedulable: bool,
    ready: bool,
}

#[derive(Debug, Clone)]
struct PodSpec {
    ns: u8,
    owner: u8,
    node: usize,
    cpu: i64,
    app: u8,
    priority: Option<i32>,
    flags: u8,
    spread: bool,
    image: u8,
}

#[derive(Debug, Clone)]
struct Case {
    nodes: Vec<NodeSpec>,
    pods: Vec<PodSpec>,
    budgets: Vec<(u8, u8, i32)>,
    per_node: Option<u32>,
    per_ns: Option<u32>,
    total: Option<u32>,
    low: u32,
    high: u32,
    seed: u64,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        prop::sample::select(vec![2000i64, 4000, 8000]),
        0u8..3,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(cpu, zone, tainted, unschedulable, ready)| NodeSpec {
            cpu,
            zone,
            tainted,
            unschedulable,
            ready,
        })
}

fn pod_spec(nodes: usize) -> impl Strategy<Value = PodSpec> {
    (
        0u8..3,
        0u8..6,
        0..nodes,
        prop::sample::select(vec![100i64, 250, 500, 1000, 2000]),
        0u8..3,
        prop::option::weighted(0.3, prop::sample::select(vec![-10, 0, 100, 2_000_000_000])),
        any::<u8>(),
        prop::bool::weighted(0.3),
        0u8..2,
    )
        .prop_map(
            |(ns, owner, node, cpu, app, priority, flags, spread, image)| PodSpec {
                ns,
                owner,
                node,
                cpu,
                app,
                priority,
                flags,
                spread,
                image,
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec(node_spec(), 2..8).prop_flat_map(|nodes| {
        let n = nodes.len();
        (
            Just(nodes),
            prop::collection::vec(pod_spec(n), 0..70),
            prop::collection::vec((0u8..3, 0u8..3, 0i32..3), 0..4),
            prop::option::of(0u32..4),
            prop::option::of(0u32..5),
            prop::option::of(0u32..8),
            5u32..40,
            0u32..50,
            any::<u64>(),
        )
            .prop_map(
                |(nodes, pods, budgets, per_node, per_ns, total, low, extra, seed)| Case {
                    nodes,
                    pods,
                    budgets,
                    per_node,
                    per_ns,
                    total,
                    low,
                    high: (low + extra).min(100),
                    seed,
                },
            )
    })
}

const NS: [&str; 3] = ["alpha", "beta", "gamma"];
const APPS: [&str; 3] = ["web", "api", "db"];

fn build_pods(c: &Case) -> Vec<Pod> {
    build_pods_of(c, false)
}

/// The case's pods; with `deployments`, those of the ReplicaSets `rs<k>` belong to the
/// Deployments `d<k>` instead (their ReplicaSet `d<k>-5f6d`, as the Deployment controller
/// names it).
fn build_pods_of(c: &Case, deployments: bool) -> Vec<Pod> {
    c.pods
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let ns = NS[s.ns as usize];
            let mut b = pod(ns, &format!("p{i:03}"))
                .node(&format!("n{}", s.node))
                .cpu(s.cpu)
                .label("app", APPS[s.app as usize])
                .image(if s.image == 0 { "img:1" } else { "img:2" });
            b = match s.owner {
                0..=2 if deployments => b
                    .owner("ReplicaSet", &format!("d{}-5f6d", s.owner))
                    .label("pod-template-hash", "5f6d"),
                0..=2 => b.owner("ReplicaSet", &format!("rs{}", s.owner)),
                3 => b.owner("DaemonSet", "ds"),
                4 => b.owner("StatefulSet", "sts"),
                _ => b.bare(),
            };
            if let Some(p) = s.priority {
                b = b.priority(p);
            }
            if s.flags & 1 != 0 && s.flags & 64 != 0 {
                b = b.mirror();
            }
            if s.flags & 2 != 0 && s.flags & 64 != 0 {
                b = b.static_pod();
            }
            if s.flags & 4 != 0 && s.flags & 128 != 0 {
                b = b.terminating();
            }
            if s.flags & 8 != 0 {
                b = b.local_storage();
            }
            if s.flags & 16 != 0 && s.flags & 32 != 0 {
                b = b.evict_annotation();
            }
            if s.spread {
                b = b.spread(
                    1,
                    "zone",
                    WhenUnsatisfiable::DoNotSchedule,
                    "app",
                    APPS[s.app as usize],
                );
            }
            b.build()
        })
        .collect()
}

fn build(c: &Case, pods: Vec<Pod>) -> ClusterSnapshot {
    let nodes = c
        .nodes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut b = node(&format!("n{i}"))
                .cpu(s.cpu)
                .label("zone", &format!("z{}", s.zone));
            if s.tainted {
                b = b.taint("dedicated", "x", TaintEffect::NoSchedule);
            }
            if s.unschedulable {
                b = b.unschedulable();
            }
            if !s.ready {
                b = b.not_ready();
            }
            b.build()
        })
        .collect();
    let pdbs: Vec<Pdb> = c
        .budgets
        .iter()
        .enumerate()
        .map(|(i, (ns, app, allowed))| {
            pdb(
                NS[*ns as usize],
                &format!("b{i}"),
                "app",
                APPS[*app as usize],
                *allowed,
            )
        })
        .collect();
    ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods,
        pdbs,
        ..Default::default()
    })
}

fn pipeline(c: &Case) -> Pipeline {
    let opt = |k: &str, v: Option<u32>| v.map(|v| format!("{k}: {v}\n")).unwrap_or_default();
    let text = format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n{}{}{}profiles:\n- name: p\n  pluginConfig:\n  - name: RemoveDuplicates\n  - name: RemovePodsViolatingTopologySpreadConstraint\n  - name: LowNodeUtilization\n    args: {{thresholds: {{cpu: {}}}, targetThresholds: {{cpu: {}}}}}\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint, LowNodeUtilization]\n",
        opt("maxNoOfPodsToEvictPerNode", c.per_node),
        opt("maxNoOfPodsToEvictPerNamespace", c.per_ns),
        opt("maxNoOfPodsToEvictTotal", c.total),
        c.low,
        c.high
    );
    let policy = Policy::from_yaml("prop.yaml", &text, &descheduler::plugins::REGISTRY).unwrap();
    Pipeline::build(&policy, "prop.yaml", &descheduler::plugins::REGISTRY).unwrap()
}

fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

/// The plan as (pod, node, plugin, reason), independent of internal ids.
fn described(c: &Case, pods: Vec<Pod>) -> (ClusterSnapshot, Vec<(String, String, String, String)>) {
    let snap = build(c, pods);
    let p = plan(&pipeline(c), &snap, 0).unwrap();
    let rows = p
        .evictions
        .iter()
        .map(|e| {
            (
                snap.pod(e.pod).key(),
                snap.node(e.node).name.to_string(),
                e.plugin.to_string(),
                e.reason.clone(),
            )
        })
        .collect();
    (snap, rows)
}

/// One gang: its kind, its PodGroup (None: not in the snapshot) and its members.
#[derive(Debug, Clone)]
struct GangSpec {
    volcano: bool,
    /// None: the pods name a PodGroup the snapshot lacks.
    min_member: Option<i32>,
    ns: u8,
    /// Per member: node, cpu, and its state (0-5 running, 6 pending, 7 failed, 8 terminating).
    members: Vec<(usize, i64, u8)>,
}

fn gang_spec(nodes: usize) -> impl Strategy<Value = GangSpec> {
    (
        any::<bool>(),
        prop::option::weighted(0.85, 0i32..7),
        0u8..3,
        prop::collection::vec(
            (
                0..nodes,
                prop::sample::select(vec![250i64, 500, 1000, 1500]),
                0u8..9,
            ),
            1..8,
        ),
    )
        .prop_map(|(volcano, min_member, ns, members)| GangSpec {
            volcano,
            min_member,
            ns,
            members,
        })
}

fn gang_case() -> impl Strategy<Value = (Case, Vec<GangSpec>)> {
    case().prop_flat_map(|c| {
        let n = c.nodes.len();
        (Just(c), prop::collection::vec(gang_spec(n), 1..6))
    })
}

/// The gang pods (all of one owner per gang, with the same image and labels, so
/// RemoveDuplicates sees the surplus) and their PodGroups.
fn build_gangs(gangs: &[GangSpec]) -> (Vec<Pod>, Vec<PodGroup>) {
    let mut pods = Vec::new();
    let mut groups = Vec::new();
    for (gi, g) in gangs.iter().enumerate() {
        let ns = NS[g.ns as usize];
        let name = format!("gang{gi}");
        if let Some(m) = g.min_member {
            groups.push(if g.volcano {
                volcano_group(ns, &name, m.max(1))
            } else {
                pod_group(ns, &name, m.max(1))
            });
        }
        for (mi, &(node, cpu, state)) in g.members.iter().enumerate() {
            let mut b = pod(ns, &format!("{name}-{mi}"))
                .node(&format!("n{node}"))
                .cpu(cpu)
                .owner("Job", &name)
                .label("app", &name)
                .image("trainer:1");
            b = if g.volcano {
                b.volcano_group(&name)
            } else {
                b.pod_group(&name)
            };
            b = match state {
                6 => b.phase(Phase::Pending),
                7 => b.phase(Phase::Failed),
                8 => b.terminating(),
                _ => b,
            };
            pods.push(b.build());
        }
    }
    (pods, groups)
}

/// Several profiles and plugins that all want to evict gang members: old pods (PodLifeTime),
/// failed pods, duplicates, spread and utilization.
/// With `whole`, both profiles' DefaultEvictor has `gangPolicy: WholeGang`.
fn gang_pipeline(c: &Case, whole: bool) -> Pipeline {
    let opt = |k: &str, v: Option<u32>| v.map(|v| format!("{k}: {v}\n")).unwrap_or_default();
    let text = format!(
        "apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
{}{}profiles:
- name: lifecycle
  pluginConfig:
  - name: PodLifeTime
    args: {{maxPodLifeTimeSeconds: 60}}
  - name: RemoveFailedPods
  plugins:
    deschedule:
      enabled: [PodLifeTime, RemoveFailedPods]
- name: balance
  pluginConfig:
  - name: RemoveDuplicates
  - name: RemovePodsViolatingTopologySpreadConstraint
  - name: LowNodeUtilization
    args: {{thresholds: {{cpu: {}}}, targetThresholds: {{cpu: {}}}}}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
    balance:
      enabled: [RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint, LowNodeUtilization]
",
        opt("maxNoOfPodsToEvictPerNode", c.per_node),
        opt("maxNoOfPodsToEvictTotal", c.total),
        c.low,
        c.high
    );
    let text = text.replace(
        "  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n    balance:",
        "  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 30}\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n    balance:",
    );
    let text = if whole {
        text.replace(
            "  pluginConfig:\n",
            "  pluginConfig:\n  - name: DefaultEvictor\n    args: {gangPolicy: WholeGang}\n",
        )
    } else {
        text
    };
    let policy = Policy::from_yaml("gangs.yaml", &text, &descheduler::plugins::REGISTRY).unwrap();
    Pipeline::build(&policy, "gangs.yaml", &descheduler::plugins::REGISTRY).unwrap()
}

/// The case's nodes and pods with the gangs' pods and PodGroups.
fn gang_snapshot(c: &Case, gangs: &[GangSpec]) -> ClusterSnapshot {
    let (pods, groups) = build_gangs(gangs);
    snapshot_with(c, pods, groups)
}

/// The gangs as Kubernetes' own PodGroups (`scheduling.k8s.io`), each with its disruption
/// mode (None: the field absent), the pods naming them in `spec.schedulingGroup`.
fn k8s_gang_snapshot(
    c: &Case,
    gangs: &[GangSpec],
    modes: &[Option<DisruptionMode>],
) -> ClusterSnapshot {
    let named: Vec<GangSpec> = gangs
        .iter()
        .cloned()
        .map(|g| GangSpec { volcano: true, ..g })
        .collect();
    let (mut pods, mut groups) = build_gangs(&named);
    for p in &mut pods {
        p.pod_group = p.volcano_group.take();
    }
    for g in &mut groups {
        let gi: usize = g.name.strip_prefix("gang").unwrap().parse().unwrap();
        g.kind = GangKind::Kubernetes;
        g.disruption = modes[gi];
    }
    snapshot_with(c, pods, groups)
}

fn k8s_gang_case() -> impl Strategy<Value = (Case, Vec<GangSpec>, Vec<Option<DisruptionMode>>, bool)>
{
    gang_case().prop_flat_map(|(c, gangs)| {
        let n = gangs.len();
        let mode = prop::sample::select(vec![
            None,
            Some(DisruptionMode::Single),
            Some(DisruptionMode::All),
        ]);
        (
            Just(c),
            Just(gangs),
            prop::collection::vec(mode, n),
            any::<bool>(),
        )
    })
}

fn snapshot_with(c: &Case, mut pods: Vec<Pod>, groups: Vec<PodGroup>) -> ClusterSnapshot {
    pods.extend(build_pods(c));
    ClusterSnapshot::build(SnapshotParts {
        nodes: build(c, Vec::new()).nodes,
        pods,
        pod_groups: groups,
        ..Default::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn plans_never_leave_a_gang_below_min_member((c, gangs) in gang_case()) {
        let snap = gang_snapshot(&c, &gangs);
        let p = plan(&gang_pipeline(&c, false), &snap, T0 + 3600).unwrap();
        let planned: std::collections::BTreeSet<PodId> = p.evictions.iter().map(|e| e.pod).collect();
        prop_assert_eq!(planned.len(), p.evictions.len(), "pod planned twice");
        for gang in &snap.gangs {
            let running_before = gang
                .members
                .iter()
                .filter(|&&m| snap.counts_as_running(m))
                .count() as i32;
            let taken = gang.members.iter().filter(|m| planned.contains(m)).count();
            let running_after = gang
                .members
                .iter()
                .filter(|&&m| snap.counts_as_running(m) && !planned.contains(&m))
                .count() as i32;
            match gang.min_member {
                None => prop_assert_eq!(taken, 0, "a member of {} (unknown minMember) was planned", gang.describe()),
                Some(min) => prop_assert!(
                    running_after >= min.min(running_before),
                    "{}: minMember {}, {} running before, {} after",
                    gang.describe(), min, running_before, running_after
                ),
            }
        }
    }

    /// `gangPolicy: WholeGang`: of each gang, either no running member is planned or every
    /// running one is, one after the other, all marked with the gang; and never a member of a
    /// gang whose PodGroup is unknown.
    #[test]
    fn plans_never_evict_part_of_a_whole_gang((c, gangs) in gang_case()) {
        let snap = gang_snapshot(&c, &gangs);
        let pipeline = gang_pipeline(&c, true);
        prop_assert!(pipeline.profiles.iter().all(|p| p.evictor.evicts_whole_gangs()));
        let p = plan(&pipeline, &snap, T0 + 3600).unwrap();
        let position: std::collections::BTreeMap<PodId, usize> =
            p.evictions.iter().enumerate().map(|(i, e)| (e.pod, i)).collect();
        prop_assert_eq!(position.len(), p.evictions.len(), "pod planned twice");
        for (g, gang) in snap.gangs.iter().enumerate() {
            let running: Vec<PodId> = gang.members.iter().copied().filter(|&m| snap.counts_as_running(m)).collect();
            let taken: Vec<usize> = running.iter().filter_map(|m| position.get(m).copied()).collect();
            if gang.min_member.is_none() {
                prop_assert!(gang.members.iter().all(|m| !position.contains_key(m)), "a member of {} (unknown minMember) was planned", gang.describe());
                continue;
            }
            if taken.is_empty() {
                continue;
            }
            prop_assert_eq!(taken.len(), running.len(), "{}: {} of {} running members planned", gang.describe(), taken.len(), running.len());
            // one block, each marked with the gang, holding every running member
            let first = *taken.iter().min().unwrap();
            let block = p.evictions[first..].iter().take_while(|e| e.gang == Some(g as u32)).count();
            prop_assert!(block >= taken.len(), "{}: the first member is not marked with its gang", gang.describe());
            prop_assert!(taken.iter().all(|&i| i < first + block), "{}: members not one after the other", gang.describe());
        }
    }

    /// Kubernetes' own PodGroups, each `disruptionMode` (or none) under either gang policy: a
    /// gang that goes whole (`all`, or no mode under WholeGang) loses none or all of its
    /// running members, in one block marked with it; any other keeps minCount running (or
    /// as many as ran) and has no member marked; a gang whose PodGroup is unknown loses none.
    #[test]
    fn kubernetes_gangs_follow_their_disruption_mode((c, gangs, modes, whole) in k8s_gang_case()) {
        let snap = k8s_gang_snapshot(&c, &gangs, &modes);
        let p = plan(&gang_pipeline(&c, whole), &snap, T0 + 3600).unwrap();
        let position: std::collections::BTreeMap<PodId, usize> =
            p.evictions.iter().enumerate().map(|(i, e)| (e.pod, i)).collect();
        prop_assert_eq!(position.len(), p.evictions.len(), "pod planned twice");
        for (g, gang) in snap.gangs.iter().enumerate() {
            prop_assert_eq!(gang.kind, GangKind::Kubernetes);
            let running: Vec<PodId> = gang.members.iter().copied().filter(|&m| snap.counts_as_running(m)).collect();
            let taken: Vec<usize> = running.iter().filter_map(|m| position.get(m).copied()).collect();
            let Some(min) = gang.min_member else {
                prop_assert!(gang.members.iter().all(|m| !position.contains_key(m)), "a member of {} (unknown minCount) was planned", gang.describe());
                continue;
            };
            let goes_whole = match gang.disruption {
                Some(DisruptionMode::All) => true,
                Some(DisruptionMode::Single) => false,
                None => whole,
            };
            if goes_whole {
                if taken.is_empty() {
                    continue;
                }
                prop_assert_eq!(taken.len(), running.len(), "{} ({:?}): {} of {} running members planned", gang.describe(), gang.disruption, taken.len(), running.len());
                let first = *taken.iter().min().unwrap();
                let block = p.evictions[first..].iter().take_while(|e| e.gang == Some(g as u32)).count();
                prop_assert!(taken.iter().all(|&i| i < first + block), "{}: members not one block marked with the gang", gang.describe());
            } else {
                let before = running.len() as i32;
                let after = before - taken.len() as i32;
                prop_assert!(after >= min.min(before), "{} ({:?}): minCount {}, {} running before, {} after", gang.describe(), gang.disruption, min, before, after);
                prop_assert!(p.evictions.iter().all(|e| e.gang != Some(g as u32)), "{}: a member marked as evicted whole", gang.describe());
            }
        }
    }

    #[test]
    fn plans_respect_limits_budgets_and_protections(c in case()) {
        let snap = build(&c, build_pods(&c));
        let p = plan(&pipeline(&c), &snap, 0).unwrap();
        let evictor = DefaultEvictor::default();
        let mut seen = std::collections::BTreeSet::new();
        let mut per_node: BTreeMap<NodeId, u32> = BTreeMap::new();
        let mut per_ns: BTreeMap<String, u32> = BTreeMap::new();
        let mut per_pdb: BTreeMap<u32, i32> = BTreeMap::new();
        for e in &p.evictions {
            prop_assert!(seen.insert(e.pod), "pod planned twice");
            let pod = snap.pod(e.pod);
            prop_assert!(!pod.is_mirror && !pod.is_static && !pod.terminating, "{} is never evictable", pod.key());
            prop_assert!(evictor.filter(&snap, e.pod, 0).is_ok(), "{} is protected", pod.key());
            prop_assert!(snap.node(e.node).ready);
            prop_assert_eq!(snap.pod_node(e.pod), Some(e.node));
            *per_node.entry(e.node).or_default() += 1;
            *per_ns.entry(pod.namespace.to_string()).or_default() += 1;
            let pdbs = snap.pdbs_of_pod(e.pod);
            prop_assert!(pdbs.len() <= 1, "pod under two budgets was evicted");
            for &b in pdbs {
                *per_pdb.entry(b).or_default() += 1;
            }
        }
        if let Some(l) = c.per_node { prop_assert!(per_node.values().all(|v| *v <= l)); }
        if let Some(l) = c.per_ns { prop_assert!(per_ns.values().all(|v| *v <= l)); }
        if let Some(l) = c.total { prop_assert!(p.evictions.len() as u32 <= l); }
        for (b, n) in per_pdb {
            prop_assert!(n <= snap.pdbs[b as usize].disruptions_allowed.max(0), "budget exceeded");
        }
    }

    /// With moves by surge (DefaultEvictor `moveMode`): every move counts against the
    /// limits, the evictions alone against the disruption budgets (a surge spends none), and
    /// only pods of a Deployment that may be surged (in the snapshot, not paused) are surged.
    #[test]
    fn surges_count_against_every_limit_and_never_against_a_disruption_budget(c in case()) {
        use descheduler::snapshot::builders::deployment;
        use descheduler::snapshot::Workloads;
        let parts = build(&c, build_pods_of(&c, true)).into_parts();
        let mut paused = deployment(NS[(c.seed % 3) as usize], "d2", 3);
        paused.paused = true;
        let mut deployments: Vec<_> = NS
            .iter()
            .flat_map(|ns| (0..2).map(move |k| deployment(ns, &format!("d{k}"), k + 1)))
            .collect();
        deployments.push(paused.clone());
        let snap = ClusterSnapshot::build(SnapshotParts {
            workloads: Workloads {
                deployments,
                ..Workloads::default()
            },
            ..parts
        });
        let mode = if c.seed % 2 == 0 { "Surge" } else { "SurgeWhenBlocked" };
        let mut pipeline = pipeline(&c);
        let text = format!(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: DefaultEvictor\n    args: {{moveMode: {mode}}}\n  - name: RemoveDuplicates\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates]\n"
        );
        let policy = Policy::from_yaml("surge.yaml", &text, &descheduler::plugins::REGISTRY).unwrap();
        let with_mode = Pipeline::build(&policy, "surge.yaml", &descheduler::plugins::REGISTRY).unwrap();
        pipeline.profiles[0].evictor = with_mode.profiles.into_iter().next().unwrap().evictor;
        prop_assert!(pipeline.surges());
        let p = plan(&pipeline, &snap, 0).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        let mut per_node: BTreeMap<NodeId, u32> = BTreeMap::new();
        let mut per_ns: BTreeMap<String, u32> = BTreeMap::new();
        let mut per_pdb: BTreeMap<u32, i32> = BTreeMap::new();
        for e in &p.evictions {
            prop_assert!(seen.insert(e.pod), "pod planned twice");
            let pod = snap.pod(e.pod);
            *per_node.entry(e.node).or_default() += 1;
            *per_ns.entry(pod.namespace.to_string()).or_default() += 1;
            match &e.mechanism {
                descheduler::framework::Mechanism::Evict => {
                    for &b in snap.pdbs_of_pod(e.pod) {
                        *per_pdb.entry(b).or_default() += 1;
                    }
                }
                descheduler::framework::Mechanism::Surge { deployment } => {
                    let d = snap.workloads.deployment_of(pod);
                    prop_assert!(d.is_some_and(|d| d.key() == *deployment), "{} surged without its Deployment", pod.key());
                    prop_assert!(!d.unwrap().paused, "{} of a paused Deployment surged", pod.key());
                    prop_assert!(snap.gangs_of_pod(e.pod).is_empty());
                }
            }
        }
        if let Some(l) = c.per_node { prop_assert!(per_node.values().all(|v| *v <= l)); }
        if let Some(l) = c.per_ns { prop_assert!(per_ns.values().all(|v| *v <= l)); }
        if let Some(l) = c.total { prop_assert!(p.evictions.len() as u32 <= l); }
        for (b, n) in per_pdb {
            prop_assert!(n <= snap.pdbs[b as usize].disruptions_allowed.max(0), "budget exceeded");
        }
    }

    #[test]
    fn plans_do_not_depend_on_input_order(c in case()) {
        let pods = build_pods(&c);
        let (_, a) = described(&c, pods.clone());
        let mut shuffled = pods;
        shuffle(&mut shuffled, c.seed | 1);
        let (_, b) = described(&c, shuffled);
        prop_assert_eq!(a, b);
    }
}

// ---------------------------------------------------------------------------------------------
// What kube-scheduler sees while evicted pods terminate

use descheduler::plan::EvictionPlan;
use descheduler::sim::{queue_order, Simulation, Termination};

/// The pods of a case, each with `grace` seconds of terminationGracePeriodSeconds.
fn with_grace(pods: Vec<Pod>, grace: i64) -> Vec<Pod> {
    pods.into_iter()
        .map(|mut p| {
            p.termination_grace_seconds = Some(grace);
            p
        })
        .collect()
}

/// The case's pipeline, predicting destinations with `termination`.
fn predicting(c: &Case, termination: Termination) -> Pipeline {
    let mut p = pipeline(c);
    p.predict_destinations = true;
    p.termination = termination;
    p
}

/// Each planned eviction with its predicted destination and alternatives.
fn predictions(p: &EvictionPlan) -> Vec<(PodId, Option<NodeId>, Vec<NodeId>)> {
    p.evictions
        .iter()
        .map(|e| (e.pod, e.destination, e.alternatives.clone()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, .. ProptestConfig::default() })]

    /// Pods with grace period 0 are gone at once, as with a kubelet that deletes at once; so
    /// are all pods when the policy's gracePeriodSeconds is 0.
    #[test]
    fn grace_period_zero_predicts_as_instant_deletion(c in case()) {
        let graceful = predicting(&c, Termination::GRACEFUL);
        let instant = predicting(&c, Termination::INSTANT);
        let zero = build(&c, with_grace(build_pods(&c), 0));
        prop_assert_eq!(
            predictions(&plan(&graceful, &zero, T0 + 3600).unwrap()),
            predictions(&plan(&instant, &zero, T0 + 3600).unwrap())
        );
        let snap = build(&c, build_pods(&c));
        let override_zero = predicting(&c, Termination { graceful: true, grace_override: Some(0) });
        prop_assert_eq!(
            predictions(&plan(&override_zero, &snap, T0 + 3600).unwrap()),
            predictions(&plan(&instant, &snap, T0 + 3600).unwrap())
        );
    }

    /// Evicted pods with a grace period keep their requests on their node while the
    /// replacements are scheduled: every node a replacement lands on holds, within its
    /// allocatable cpu and pod count, every pod bound there before (the evicted ones still
    /// terminating) and the replacements placed there. Once everything settled, the evicted
    /// pods, and those already terminating in the snapshot, are off their nodes.
    #[test]
    fn replacements_fit_beside_the_pods_still_terminating(
        c in case(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 1..10),
    ) {
        let snap = build(&c, build_pods(&c));
        let nodes = snap.ready_nodes(&Default::default());
        let bound: Vec<PodId> = snap.pod_ids()
            .filter(|&p| snap.pod_node(p).is_some() && snap.pod(p).is_active() && !snap.pod(p).terminating)
            .collect();
        prop_assume!(!bound.is_empty());
        let mut evicted: Vec<PodId> = picks.iter().map(|i| bound[i.index(bound.len())]).collect();
        evicted.sort_unstable();
        evicted.dedup();
        let mut sim = Simulation::new(&snap);
        for &p in &evicted {
            sim.remove(p);
            prop_assert!(sim.is_lingering(p));
        }
        let mut queue = evicted.clone();
        queue_order(&snap, &mut queue);
        let mut placed: Vec<(PodId, NodeId)> = Vec::new();
        for &p in &queue {
            if let Ok(d) = sim.schedule_predicted(p, &nodes) {
                placed.push((p, d.node));
            }
        }
        for n in snap.node_ids() {
            let before: Vec<PodId> = snap
                .pods_on_node(n)
                .iter()
                .copied()
                .filter(|&q| snap.pod(q).is_active())
                .collect();
            let landed: Vec<PodId> = placed.iter().filter(|(_, d)| *d == n).map(|(p, _)| *p).collect();
            let cpu = |ps: &[PodId]| ps.iter().map(|&q| snap.pod(q).requests.cpu).sum::<i64>();
            let alloc = &snap.node(n).allocatable;
            if !landed.is_empty() {
                prop_assert!(
                    cpu(&before) + cpu(&landed) <= alloc.cpu,
                    "{}: {}m before, {}m landed, {}m allocatable",
                    snap.node(n).name, cpu(&before), cpu(&landed), alloc.cpu
                );
                prop_assert!((before.len() + landed.len()) as i64 <= alloc.pods);
            }
            // Off their nodes once settled: the evicted pods and those already terminating
            // in the snapshot (an earlier cycle's evictions within their grace period).
            let gone: Vec<PodId> = before
                .iter()
                .copied()
                .filter(|&q| evicted.contains(&q) || snap.pod(q).terminating)
                .collect();
            prop_assert_eq!(
                sim.load(n).cpu,
                cpu(&before) - cpu(&gone) + cpu(&landed),
                "{} once settled", &snap.node(n).name
            );
        }
    }

    /// Replacements waiting together go in kube-scheduler's queue order: higher priority
    /// first (none counts as 0), then in the order they were created (the order given).
    #[test]
    fn replacements_queue_by_priority_then_creation(
        priorities in prop::collection::vec(prop::option::of(-3i32..3), 0..20),
    ) {
        let pods: Vec<Pod> = priorities
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let b = pod("q", &format!("p{i:02}")).node("n0");
                match p {
                    Some(p) => b.priority(*p).build(),
                    None => b.build(),
                }
            })
            .collect();
        let snap = ClusterSnapshot::build(SnapshotParts {
            nodes: vec![node("n0").build()],
            pods,
            ..Default::default()
        });
        let given: Vec<PodId> = snap.pod_ids().rev().collect();
        let mut order = given.clone();
        queue_order(&snap, &mut order);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        let mut all = given.clone();
        all.sort_unstable();
        prop_assert_eq!(sorted, all, "a permutation");
        let prio = |p: PodId| snap.pod(p).priority.unwrap_or(0);
        for w in order.windows(2) {
            let pos = |p: PodId| given.iter().position(|&q| q == p).unwrap();
            prop_assert!(
                prio(w[0]) > prio(w[1]) || (prio(w[0]) == prio(w[1]) && pos(w[0]) < pos(w[1])),
                "{:?}", order
            );
        }
    }
}
