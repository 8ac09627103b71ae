//! No ping-pong: LowNodeUtilization never plans more onto its destinations than their room
//! below the target (so replacements landing there leave none overutilized), and in
//! continuous mode the memory of recent evictions keeps a workload that was just moved, and
//! a node that just received the moved pods, out of the next cycles' plans.

mod support;

use descheduler::framework::{History, NoteKind, Overutilized, Pipeline};
use descheduler::plan::{plan, plan_with, CycleMemory, EvictionPlan};
use descheduler::policy::Policy;
use descheduler::snapshot::builders::{node, pod, GIB, T0};
use descheduler::snapshot::{ClusterSnapshot, Pod, PodId, SnapshotParts};
use proptest::prelude::*;

fn lnu(thresholds: &str, targets: &str) -> Pipeline {
    let text = format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: LowNodeUtilization\n    args: {{thresholds: {{{thresholds}}}, targetThresholds: {{{targets}}}}}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n"
    );
    let policy = Policy::from_yaml("lnu.yaml", &text, &descheduler::plugins::REGISTRY).unwrap();
    Pipeline::build(&policy, "lnu.yaml", &descheduler::plugins::REGISTRY).unwrap()
}

/// `percent` of `capacity`, truncated, as the plugin computes its thresholds.
fn amount(capacity: i64, percent: u32) -> i64 {
    (percent as f64 * 0.01 * capacity as f64) as i64
}

#[derive(Debug, Clone)]
struct Case {
    /// (cpu, unschedulable)
    nodes: Vec<(i64, bool)>,
    /// (node, cpu, memory, owner)
    pods: Vec<(usize, i64, i64, u8)>,
    low: u32,
    high: u32,
    with_pods: bool,
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec(
        (
            prop::sample::select(vec![2000i64, 4000, 8000]),
            prop::bool::weighted(0.15),
        ),
        2..7,
    )
    .prop_flat_map(|nodes| {
        let n = nodes.len();
        (
            Just(nodes),
            prop::collection::vec(
                (
                    0..n,
                    prop::sample::select(vec![100i64, 250, 400, 700, 1000, 1500, 2500]),
                    prop::sample::select(vec![0i64, GIB / 4, GIB, 3 * GIB]),
                    0u8..5,
                ),
                0..50,
            ),
            5u32..40,
            0u32..50,
            any::<bool>(),
        )
            .prop_map(|(nodes, pods, low, extra, with_pods)| Case {
                nodes,
                pods,
                low,
                high: (low + extra).min(100),
                with_pods,
            })
    })
}

fn build(c: &Case) -> ClusterSnapshot {
    let nodes = c
        .nodes
        .iter()
        .enumerate()
        .map(|(i, &(cpu, unschedulable))| {
            let mut b = node(&format!("n{i}")).cpu(cpu).memory(8 * GIB).pods(20);
            if unschedulable {
                b = b.unschedulable();
            }
            b.build()
        })
        .collect();
    let pods: Vec<Pod> = c
        .pods
        .iter()
        .enumerate()
        .map(|(i, &(n, cpu, memory, owner))| {
            pod("shop", &format!("p{i:03}"))
                .node(&format!("n{n}"))
                .cpu(cpu)
                .memory(memory)
                .owner("ReplicaSet", &format!("rs{owner}"))
                .build()
        })
        .collect();
    ClusterSnapshot::build(SnapshotParts {
        nodes,
        pods,
        ..Default::default()
    })
}

/// (resource, amount the pod takes, capacity of a node, use of a node)
fn resources(with_pods: bool) -> Vec<&'static str> {
    let mut r = vec!["cpu", "memory"];
    if with_pods {
        r.push("pods");
    }
    r
}

fn take(snap: &ClusterSnapshot, p: PodId, r: &str) -> i64 {
    match r {
        "pods" => 1,
        _ => snap.pod(p).requests.get(r),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The requests moved off the sources never exceed the destinations' room below their
    /// target, in total and destination by destination (the moved pods fit, first fit in
    /// plan order, each below one underutilized node's target).
    #[test]
    fn lnu_never_plans_past_the_destinations_target(c in case()) {
        let snap = build(&c);
        let rs = resources(c.with_pods);
        let list = |p: u32| rs.iter().map(|r| format!("{r}: {p}")).collect::<Vec<_>>().join(", ");
        let pipeline = lnu(&list(c.low), &list(c.high));
        let plan = plan(&pipeline, &snap, T0).unwrap();
        // The underutilized nodes: schedulable, at or below the low threshold everywhere.
        let mut rooms: Vec<Vec<i64>> = Vec::new();
        for id in snap.node_ids() {
            let n = snap.node(id);
            let used = snap.node_requested(id);
            let low = rs.iter().all(|r| used.get(r) <= amount(n.allocatable.get(r), c.low));
            if !n.unschedulable && low {
                rooms.push(rs.iter().map(|r| amount(n.allocatable.get(r), c.high) - used.get(r)).collect());
            }
        }
        for (i, r) in rs.iter().enumerate() {
            let moved: i64 = plan.evictions.iter().map(|e| take(&snap, e.pod, r)).sum();
            let room: i64 = rooms.iter().map(|d| d[i]).sum();
            prop_assert!(moved <= room.max(0), "{r}: moved {moved} > room {room}");
        }
        for e in &plan.evictions {
            let need: Vec<i64> = rs.iter().map(|r| take(&snap, e.pod, r)).collect();
            let fit = rooms.iter_mut().find(|d| d.iter().zip(&need).all(|(room, n)| room >= n));
            prop_assert!(fit.is_some(), "{} fits below no destination's target", snap.pod(e.pod).key());
            for (room, n) in fit.unwrap().iter_mut().zip(&need) {
                *room -= n;
            }
        }
    }
}

/// One hot node (n1: 8 pods of 400m of 4000m = 80%), two cold ones; the hot pods belong to
/// two workloads, web and api.
fn hot_cold() -> ClusterSnapshot {
    hot_cold_and(Vec::new())
}

/// [`hot_cold`] with more pods.
fn hot_cold_and(extra: Vec<Pod>) -> ClusterSnapshot {
    let mut pods: Vec<Pod> = (0..8)
        .map(|i| {
            let owner = if i % 2 == 0 { "web" } else { "api" };
            pod("shop", &format!("{owner}-{i}"))
                .created(T0 - 3600)
                .node("n1")
                .cpu(400)
                .owner("ReplicaSet", owner)
                .build()
        })
        .collect();
    pods.push(
        pod("shop", "db-0")
            .node("n2")
            .cpu(400)
            .owner("ReplicaSet", "db")
            .build(),
    );
    pods.push(
        pod("shop", "db-1")
            .node("n3")
            .cpu(400)
            .owner("ReplicaSet", "db")
            .build(),
    );
    pods.extend(extra);
    ClusterSnapshot::build(SnapshotParts {
        nodes: vec![node("n1").build(), node("n2").build(), node("n3").build()],
        pods,
        ..Default::default()
    })
}

fn names(snap: &ClusterSnapshot, p: &EvictionPlan) -> Vec<String> {
    p.evictions
        .iter()
        .map(|e| snap.pod(e.pod).name.to_string())
        .collect()
}

fn with_history(snap: &ClusterSnapshot, history: History, now: i64) -> EvictionPlan {
    let memory = CycleMemory {
        history,
        ..CycleMemory::default()
    };
    plan_with(&lnu("cpu: 20", "cpu: 50"), snap, now, &memory, &mut ()).unwrap()
}

#[test]
fn a_workload_moved_within_the_cooldown_is_not_moved_again() {
    let snap = hot_cold();
    let api = snap.pod_id("shop", "api-1").unwrap();
    let history = History::with_cooldown(600).record_evictions(&snap, &[api], T0);
    let now = T0 + 120;
    let p = with_history(&snap, history.clone(), now);
    let moved = names(&snap, &p);
    assert!(!moved.is_empty(), "web pods still move");
    assert!(
        moved.iter().all(|n| n.starts_with("web-")),
        "api is cooling down: {moved:?}"
    );
    // The cooldown says why, with the time left, and every api pod LowNodeUtilization would
    // have taken is in the not-chosen list with that reason.
    let why = "workload shop/ReplicaSet/api had a pod evicted 2m ago and waits until its replacement is placed; at most 8m more";
    assert_eq!(
        history.cooldown_refusal(snap.pod(api), now).as_deref(),
        Some(why)
    );
    let held: Vec<String> = p
        .notes
        .iter()
        .filter_map(|n| match n.kind {
            NoteKind::NotChosen(pod) if n.message == why => Some(snap.pod(pod).name.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        !held.is_empty() && held.iter().all(|n| n.starts_with("api-")),
        "{:?}",
        p.notes
    );
    // Once its replacement is placed on a cold node, api may move again at once.
    let placed = hot_cold_and(vec![pod("shop", "api-new")
        .node("n2")
        .cpu(400)
        .owner("ReplicaSet", "api")
        .created(T0 + 5)
        .build()]);
    let released = history.observe(&placed, now);
    assert!(released.moves.is_empty() && released.frozen.is_empty());
    assert!(names(&placed, &with_history(&placed, released, now))
        .iter()
        .any(|n| n.starts_with("api-")));
    // Without memory, api pods go first (upstream's order). After the cooldown, api may move
    // again; with the cooldown off it always may.
    let later = with_history(&snap, history.observe(&snap, T0 + 600), T0 + 600);
    assert!(names(&snap, &later).iter().any(|n| n.starts_with("api-")));
    let off = History::default().record_evictions(&snap, &[api], T0);
    assert!(names(&snap, &with_history(&snap, off, now))
        .iter()
        .any(|n| n.starts_with("api-")));
}

#[test]
fn a_node_that_received_moved_pods_is_not_a_source() {
    // Cycle 1: n1 is hot; three of its pods move.
    let before = hot_cold();
    let history = History::with_cooldown(600);
    let p1 = with_history(&before, history.clone(), T0 + 100);
    assert_eq!(p1.evictions.len(), 3, "{:?}", names(&before, &p1));
    let evicted: Vec<PodId> = p1.evictions.iter().map(|e| e.pod).collect();
    let history = history
        .record_evictions(&before, &evicted, T0 + 100)
        .advance(Overutilized::of(&p1.findings));
    // Cycle 2: the scheduler put the three replacements on n2, which also runs five db pods:
    // 8 x 400m = 80%, now the hot node; n1 and n3 are cold. Without memory pods would
    // leave n2 again (ping-pong).
    let mut pods = vec![
        pod("shop", "api-1")
            .node("n1")
            .cpu(400)
            .owner("ReplicaSet", "api")
            .build(),
        pod("shop", "db-1")
            .node("n3")
            .cpu(400)
            .owner("ReplicaSet", "db")
            .build(),
    ];
    for i in [0, 2, 3, 4, 5] {
        pods.push(
            pod("shop", &format!("db-{i}"))
                .node("n2")
                .cpu(400)
                .owner("ReplicaSet", "db")
                .build(),
        );
    }
    for (i, &e) in evicted.iter().enumerate() {
        let owner = before.pod(e).controller().unwrap().name.to_string();
        pods.push(
            pod("shop", &format!("{owner}-new-{i}"))
                .node("n2")
                .cpu(400)
                .owner("ReplicaSet", &owner)
                .created(T0 + 130)
                .build(),
        );
    }
    let after = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![node("n1").build(), node("n2").build(), node("n3").build()],
        pods,
        ..Default::default()
    });
    let from_n2 = |p: &EvictionPlan| {
        p.evictions
            .iter()
            .filter(|e| after.node(e.node).name.as_ref() == "n2")
            .count()
    };
    let now = T0 + 190;
    assert!(
        from_n2(&with_history(&after, History::default(), now)) > 0,
        "without memory, n2 (the receiver) is a source"
    );
    // The workloads' cooldown alone does not help: n2's db pods would move.
    let owners_only = with_history(&after, history.clone(), now);
    assert!(
        from_n2(&owners_only) > 0,
        "{:?}",
        names(&after, &owners_only)
    );
    // Looking at the new snapshot finds where the replacements landed.
    let history = history.observe(&after, now);
    assert_eq!(history.received_within("n2", now), Some(T0 + 130));
    assert_eq!(history.received_within("n1", now), None);
    let p2 = with_history(&after, history.clone(), now);
    assert_eq!(from_n2(&p2), 0, "{:?}", names(&after, &p2));
    assert!(
        p2.notes.iter().any(|n| n.message
            == "received rescheduled pods 1m ago (eviction cooldown 10m); not treated as overutilized this cycle"),
        "{:?}",
        p2.notes
    );
    // Once the cooldown is over, n2 is a source like any other.
    let late = T0 + 130 + 600;
    let p3 = with_history(&after, history.observe(&after, late), late);
    assert!(from_n2(&p3) > 0, "{:?}", names(&after, &p3));
}

// Against a real control plane (tests/support): continuous mode with a workload pinned to a
// hot node, so each of its replacements lands on the same hot node again.

const GROUP_LABEL: &str = "descheduler-test";

/// The descheduler in continuous mode; its JSON reports collected as they come.
struct Run {
    child: tokio::process::Child,
    stdout: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Run {
    fn spawn(args: &[&str]) -> Run {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(support::bin())
            .env("DESCHEDULER_SECURE_PORT", support::process::NO_SECURE_PORT)
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("KUBECONFIG")
            .env_remove("DESCHEDULER_EVICTION_COOLDOWN")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let out = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = out.clone();
        let stdout = child.stdout.take().unwrap();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Run { child, stdout: out }
    }

    fn output(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// (cycles reported, cycles that evicted something)
    fn cycles(&self) -> (usize, usize) {
        let out = self.output();
        let reports: Vec<&str> = out.split("\"evictions\"").skip(1).collect();
        let evicting = reports
            .iter()
            .filter(|r| r.contains("\"result\": \"evicted\""))
            .count();
        (reports.len(), evicting)
    }

    async fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id().unwrap().to_string();
        let status = tokio::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(std::time::Duration::from_secs(30), self.child.wait())
            .await
            .expect("exits after SIGTERM")
            .unwrap()
            .code()
    }
}

/// Three 4-cpu nodes in a fresh group and six 500m pods of one ReplicaSet pinned to the first
/// (75%, over a 50% target, however often its pods are replaced); returns the policy file.
async fn pinned_hot_workload(
    client: &kube::Client,
    dir: &std::path::Path,
    prefix: &str,
) -> std::path::PathBuf {
    use support::*;
    let group = unique("g");
    let mut nodes = Vec::new();
    for _ in 0..3 {
        let name = unique("n");
        create_node(client, NodeConfig::new(&name).label(GROUP_LABEL, &group)).await;
        nodes.push(name);
    }
    let ns = create_namespace(client, prefix).await;
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector("kubernetes.io/hostname", &nodes[0]);
    run_replicaset(client, &ns, "hot", 6, &pod).await;
    let policy = format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nnodeSelector: \"{GROUP_LABEL}={group}\"\nprofiles:\n- name: rebalance\n  pluginConfig:\n  - name: DefaultEvictor\n    args: {{placementCheck: false}}\n  - name: LowNodeUtilization\n    args: {{thresholds: {{cpu: 20}}, targetThresholds: {{cpu: 50}}}}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n"
    );
    // The pods are pinned to their node, so their replacements come back: the evictor's
    // default check refuses such evictions as pointless. The cooldown is what is tested
    // here, so the check is off (`placementCheck: false`, as upstream).
    let path = dir.join(format!("{}.yaml", unique("policy")));
    std::fs::write(&path, policy).unwrap();
    path
}

#[tokio::test]
async fn live_continuous_mode_moves_a_workload_once_per_cooldown() {
    let cluster = support::shared();
    let client = cluster.client();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let args = |policy: &std::path::Path, cooldown: &str| -> Vec<String> {
        [
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--kubeconfig",
            &kubeconfig,
            "--descheduling-interval",
            "2s",
            "--eviction-cooldown",
            cooldown,
            "-o",
            "json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let without = pinned_hot_workload(&client, dir.path(), "pingpong").await;
    let with = pinned_hot_workload(&client, dir.path(), "cooldown").await;
    let a = args(&without, "0");
    let b = args(&with, "1h");
    let pingpong = Run::spawn(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let cooled = Run::spawn(&b.iter().map(String::as_str).collect::<Vec<_>>());
    // Without a cooldown the same workload is moved again and again (upstream's ping-pong).
    assert!(
        support::wait_until(std::time::Duration::from_secs(120), || async {
            pingpong.cycles().1 >= 2
        })
        .await,
        "no second evicting cycle without a cooldown: {}",
        pingpong.output()
    );
    // With one, it is moved in one cycle only, however many cycles run.
    let needed = pingpong.cycles().0 + 2;
    assert!(
        support::wait_until(std::time::Duration::from_secs(120), || async {
            cooled.cycles().0 >= needed
        })
        .await,
        "{}",
        cooled.output()
    );
    let (cycles, evicting) = cooled.cycles();
    assert_eq!(evicting, 1, "{cycles} cycles: {}", cooled.output());
    assert_eq!(pingpong.terminate().await, Some(0));
    assert_eq!(cooled.terminate().await, Some(0));
}

/// A job half done goes on: a workload whose replacements land on cold nodes is released as
/// soon as they are placed, so a per-node limit of one eviction a cycle moves it in several
/// cycles, well within the cooldown; then, balanced, nothing more moves.
#[tokio::test]
async fn live_a_workload_whose_moves_succeed_is_not_frozen() {
    use support::*;
    let cluster = support::shared();
    let client = cluster.client();
    let dir = tempfile::tempdir().unwrap();
    let group = unique("g");
    let hot = unique("n");
    create_node(&client, NodeConfig::new(&hot).label(GROUP_LABEL, &group)).await;
    let ns = create_namespace(&client, "progress").await;
    // Six 500m pods on the only node of the group: 75%, over the 50% target.
    let pod = PodConfig::new()
        .cpu("500m")
        .memory("64Mi")
        .node_selector(GROUP_LABEL, &group);
    run_replicaset(&client, &ns, "web", 6, &pod).await;
    for _ in 0..2 {
        create_node(
            &client,
            NodeConfig::new(&unique("n")).label(GROUP_LABEL, &group),
        )
        .await;
    }
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nnodeSelector: \"{GROUP_LABEL}={group}\"\nmaxNoOfPodsToEvictPerNode: 1\nprofiles:\n- name: rebalance\n  pluginConfig:\n  - name: LowNodeUtilization\n    args: {{thresholds: {{cpu: 20}}, targetThresholds: {{cpu: 50}}}}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n"
        ),
    )
    .unwrap();
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let run = Run::spawn(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        &kubeconfig,
        "--descheduling-interval",
        "2s",
        "--eviction-cooldown",
        "1h",
        "-o",
        "json",
    ]);
    let pods_on_hot = || async {
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(client.clone(), &ns);
        pods.list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(hot.as_str()))
            .count()
    };
    // 6 x 500m on 4 cpu: down to 50% or below takes two evictions at least, one a cycle.
    assert!(
        wait_until(std::time::Duration::from_secs(120), || async {
            pods_on_hot().await <= 4
        })
        .await,
        "the workload stopped after its first move: {}",
        run.output()
    );
    let (_, evicting) = run.cycles();
    assert!(evicting >= 2, "{}", run.output());
    // Balanced now: a few more cycles move nothing.
    let settled = run.cycles().0;
    assert!(
        wait_until(std::time::Duration::from_secs(60), || async {
            run.cycles().0 >= settled + 3
        })
        .await
    );
    let evicted_total = run.output().matches("\"result\": \"evicted\"").count();
    assert!(
        evicted_total <= 3,
        "{evicted_total} evictions for a 6-pod workload: {}",
        run.output()
    );
    assert!(pods_on_hot().await >= 3, "moved too far: {}", run.output());
    assert_eq!(run.terminate().await, Some(0));
}
