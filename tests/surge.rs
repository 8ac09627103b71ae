//! Make before break (DefaultEvictor's `moveMode`), on a real control plane with the
//! Deployment and ReplicaSet controllers, kube-scheduler and a kubelet that honours grace
//! periods and readiness delays: a pod whose eviction its budget forbids is moved by a surge of
//! its Deployment with no moment unavailable; a surge whose new pod cannot run is rolled back;
//! a surge left in flight by a killed run is finished by the next; Deployments that must not
//! be surged are refused with the reason in the report; upstream moves none of these pods.

mod support;

use descheduler::live::client::ApiClient;
use descheduler::live::executor::Gate;
use descheduler::live::surge::{SurgeEnd, Surger, Victim};
use descheduler::snapshot::{POD_DELETION_COST_ANNOTATION, SURGE_IN_FLIGHT_ANNOTATION};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::*;

/// One test's part of the shared cluster: its namespace and its three nodes (labelled
/// `surge=<id>`; its pods select them), `hot` holding the Deployment `web` and a pinned pod.
struct Stage {
    client: Client,
    ns: String,
    id: String,
    hot: String,
    cold: [String; 2],
}

/// `web`: `replicas` pods of `pod_cpu` on `hot` beside a bare `pinned_cpu` pod (4 cpu
/// nodes), a PDB over `web` with `minAvailable: replicas` (no disruption allowed); the cold nodes cordoned while `web`
/// starts, then left `cold_open` or cordoned.
async fn stage(replicas: i32, pod_cpu: &str, pinned_cpu: &str, cold_open: bool) -> Stage {
    let cluster = shared_realistic();
    let client = cluster.client();
    let ns = create_namespace(&client, "surge").await;
    let id = ns.clone();
    let node = |name: &str| {
        NodeConfig::new(name)
            .cpu("4")
            .memory("16Gi")
            .pods(110)
            .label("surge", &id)
    };
    let hot = format!("{id}-hot");
    let cold = [format!("{id}-cold-a"), format!("{id}-cold-b")];
    create_node(&client, node(&hot)).await;
    for c in &cold {
        create_node(&client, node(c).unschedulable()).await;
    }
    let on_ours = PodConfig::new().node_selector("surge", &id);
    create_pod(
        &client,
        &ns,
        "pinned",
        Some(&hot),
        &on_ours.clone().cpu(pinned_cpu).label("role", "pinned"),
    )
    .await;
    let pods = run_deployment(&client, &ns, "web", replicas, &on_ours.cpu(pod_cpu)).await;
    assert!(pods
        .iter()
        .all(|p| p.spec.as_ref().unwrap().node_name.as_deref() == Some(hot.as_str())));
    create_pdb(
        &client,
        &ns,
        "web",
        &[("app", "web")],
        Budget::MinAvailable(IntOrString::Int(replicas)),
    )
    .await;
    wait_pdb(&client, &ns, "web", replicas, 0).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    wait_for("web available", Duration::from_secs(60), || {
        let deployments = deployments.clone();
        async move {
            let s = deployments.get("web").await.ok()?.status?;
            (s.available_replicas == Some(replicas) && s.updated_replicas == Some(replicas))
                .then_some(())
        }
    })
    .await;
    if cold_open {
        for c in &cold {
            set_cordon(&client, c, false).await;
        }
    }
    Stage {
        client,
        ns,
        id,
        hot,
        cold,
    }
}

async fn set_cordon(client: &Client, node: &str, cordoned: bool) {
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "unschedulable": cordoned } })),
        )
        .await
        .unwrap();
    // The node lifecycle controller adds or takes off the cordon's taint.
    wait_for(
        &format!("{node} cordoned: {cordoned}"),
        Duration::from_secs(30),
        || {
            let nodes = nodes.clone();
            async move {
                let n = nodes.get(node).await.ok()?;
                let tainted = n
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_some_and(|t| {
                        t.iter()
                            .any(|t| t.key == "node.kubernetes.io/unschedulable")
                    });
                (tainted == cordoned).then_some(())
            }
        },
    )
    .await;
}

/// What a watcher saw of the Deployment and its PDB, sampled every 50 ms.
#[derive(Debug, Default)]
struct Seen {
    samples: usize,
    /// The fewest available replicas of `web`, and the most replicas it was scaled to.
    min_available: i32,
    max_replicas: i32,
    /// Samples where the PDB had fewer healthy pods than it wants.
    pdb_short: usize,
    /// Every pod of `web` seen, by name, with whether it was seen terminating or gone.
    pods: std::collections::BTreeMap<String, bool>,
}

fn watch(st: &Stage) -> (Arc<AtomicBool>, tokio::task::JoinHandle<Seen>) {
    let stop = Arc::new(AtomicBool::new(false));
    let deployments: Api<Deployment> = Api::namespaced(st.client.clone(), &st.ns);
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(st.client.clone(), &st.ns);
    let pods: Api<Pod> = Api::namespaced(st.client.clone(), &st.ns);
    let flag = stop.clone();
    let task = tokio::spawn(async move {
        let mut seen = Seen {
            min_available: i32::MAX,
            ..Seen::default()
        };
        while !flag.load(Ordering::Relaxed) {
            let d = deployments.get("web").await.unwrap();
            let status = d.status.unwrap_or_default();
            seen.min_available = seen
                .min_available
                .min(status.available_replicas.unwrap_or(0));
            seen.max_replicas = seen.max_replicas.max(d.spec.replicas.unwrap_or(1));
            let pdb = pdbs.get("web").await.unwrap().status.unwrap_or_default();
            if pdb.current_healthy < pdb.desired_healthy {
                seen.pdb_short += 1;
            }
            let list = pods
                .list(&ListParams::default().labels("app=web"))
                .await
                .unwrap();
            let now: std::collections::BTreeSet<String> = list
                .items
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            for p in &list.items {
                seen.pods
                    .entry(p.metadata.name.clone().unwrap())
                    .or_insert(false);
            }
            for (name, went) in seen.pods.iter_mut() {
                if !now.contains(name) {
                    *went = true;
                }
            }
            seen.samples += 1;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        seen
    });
    (stop, task)
}

async fn stop(watcher: (Arc<AtomicBool>, tokio::task::JoinHandle<Seen>)) -> Seen {
    watcher.0.store(true, Ordering::Relaxed);
    watcher.1.await.unwrap()
}

async fn web_pods(st: &Stage) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(st.client.clone(), &st.ns);
    pods.list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items
}

fn node_of(p: &Pod) -> String {
    p.spec
        .as_ref()
        .unwrap()
        .node_name
        .clone()
        .unwrap_or_default()
}

fn annotation(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<String> {
    meta.annotations.as_ref()?.get(key).cloned()
}

async fn deployment(st: &Stage) -> Deployment {
    Api::<Deployment>::namespaced(st.client.clone(), &st.ns)
        .get("web")
        .await
        .unwrap()
}

/// Moves `web`'s first pod by a surge through the protocol itself, with a timeout of
/// `seconds`, a watcher started first: the pod's name and UID, the watcher, how it ended.
async fn surge_web(
    st: &Stage,
    seconds: u64,
) -> (
    String,
    String,
    (Arc<AtomicBool>, tokio::task::JoinHandle<Seen>),
    SurgeEnd,
) {
    let victim = web_pods(st).await.remove(0);
    let (name, uid) = (
        victim.metadata.name.clone().unwrap(),
        victim.metadata.uid.clone().unwrap(),
    );
    let watcher = watch(st);
    let api = ApiClient::from_client(st.client.clone(), 50.0, 100);
    let gate = Gate::default();
    let surger = Surger {
        api: &api,
        timeout: Duration::from_secs(seconds),
        poll: Duration::from_millis(200),
        gate: &gate,
    };
    let victim = Victim {
        namespace: &st.ns,
        name: &name,
        uid: &uid,
        node: &st.hot,
    };
    let end = surger
        .surge("web", &victim, chrono::Utc::now().timestamp())
        .await;
    (name, uid, watcher, end)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_moves_a_single_replica_behind_its_budget_with_the_new_pod_first() {
    let st = stage(1, "1", "1500m", true).await;
    let (name, _, watcher, end) = surge_web(&st, 60).await;
    let SurgeEnd::Completed { landed, new_pod } = &end else {
        panic!("{end:?}");
    };
    assert!(st.cold.contains(landed), "landed on {landed}");
    // The victim goes (its grace period on this kubelet), the new pod stays.
    let pods = wait_running_pods(&st.client, &st.ns, "app=web", 1).await;
    let seen = stop(watcher).await;
    assert_eq!(pods[0].metadata.name.as_deref(), Some(new_pod.as_str()));
    assert_eq!(node_of(&pods[0]), *landed);
    assert!(seen.samples > 10, "{seen:?}");
    assert_eq!(
        seen.min_available, 1,
        "never fewer than one available: {seen:?}"
    );
    assert_eq!(seen.pdb_short, 0, "{seen:?}");
    assert_eq!(seen.max_replicas, 2, "{seen:?}");
    // Only the victim went.
    let went: Vec<&String> = seen
        .pods
        .iter()
        .filter(|(_, w)| **w)
        .map(|(n, _)| n)
        .collect();
    assert_eq!(went, vec![&name], "{seen:?}");
    let d = deployment(&st).await;
    assert_eq!(d.spec.replicas, Some(1));
    assert_eq!(annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surge_whose_new_pod_finds_no_room_is_rolled_back_and_the_pod_left_as_it_was() {
    // The cold nodes stay cordoned and `hot` has 0.5 cpu left: the new pod stays Pending.
    let st = stage(1, "1", "2500m", false).await;
    let (_, uid, watcher, end) = surge_web(&st, 6).await;
    let SurgeEnd::RolledBack(why) = &end else {
        panic!("{end:?}");
    };
    assert!(why.contains("not Ready within 6 s"), "{why}");
    assert!(why.contains("is not scheduled"), "{why}");
    // The new pod is deleted by the scale-back; the victim stays, unmarked.
    let pods = wait_running_pods(&st.client, &st.ns, "app=web", 1).await;
    let seen = stop(watcher).await;
    assert_eq!(pods[0].metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(
        annotation(&pods[0].metadata, POD_DELETION_COST_ANNOTATION),
        None
    );
    assert_eq!(seen.min_available, 1, "{seen:?}");
    assert_eq!(seen.max_replicas, 2, "it was surged: {seen:?}");
    let d = deployment(&st).await;
    assert_eq!(d.spec.replicas, Some(1));
    assert_eq!(annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION), None);
    let _ = &st.id;
}

// ---------------------------------------------------------------------------------------------
// The binary, end to end.

/// LowNodeUtilization 20/50 on cpu with nodeFit over the stage's nodes; DefaultEvictor's
/// `moveMode` as given (none when empty: upstream's policy, which refuses the field).
fn policy(st: &Stage, mode: &str) -> std::path::PathBuf {
    let mode = if mode.is_empty() {
        String::new()
    } else {
        format!(", moveMode: {mode}")
    };
    let dir = tempfile::tempdir().unwrap().keep();
    write_policy(
        &dir,
        &format!(
            "apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: surge={id}
profiles:
- name: move
  pluginConfig:
  - name: DefaultEvictor
    args: {{nodeFit: true{mode}}}
  - name: LowNodeUtilization
    args: {{thresholds: {{cpu: 20}}, targetThresholds: {{cpu: 50}}}}
  plugins:
    balance: {{enabled: [LowNodeUtilization]}}
",
            id = st.id
        ),
    )
}

/// Runs one cycle of the binary (`more` added), its JSON report.
async fn run_once(policy: &std::path::Path, more: &[&str]) -> (serde_json::Value, String) {
    let kubeconfig = shared_realistic()
        .kubeconfig()
        .to_str()
        .unwrap()
        .to_string();
    let policy = policy.to_str().unwrap().to_string();
    let mut args = vec![
        "--kubeconfig",
        kubeconfig.as_str(),
        "--policy-config-file",
        policy.as_str(),
        "-o",
        "json",
    ];
    args.extend(more);
    let run = support::process::run_bin(&args).await;
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let report = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (report, run.stderr)
}

fn rows<'a>(report: &'a serde_json::Value, key: &str) -> Vec<&'a serde_json::Value> {
    report[key]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// Upstream v0.36.0's binary, when built (`scripts/build-upstream`).
fn upstream_bin() -> std::path::PathBuf {
    match std::env::var_os("DESCHEDULER_UPSTREAM_BIN") {
        Some(p) => p.into(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(".cache/upstream/bin/descheduler-upstream"),
    }
}

/// Runs upstream for real (no dry run) in continuous mode until its second cycle ended
/// (its first may plan on an empty cache): its log.
async fn run_upstream(policy: &std::path::Path) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(upstream_bin())
        .arg("--kubeconfig")
        .arg(shared_realistic().kubeconfig())
        .arg("--policy-config-file")
        .arg(policy)
        .args([
            "--descheduling-interval",
            "3s",
            "--secure-port",
            "0",
            "--v",
            "3",
        ])
        .env_remove("KUBECONFIG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("upstream's binary (scripts/build-upstream)");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let mut cycles = 0;
    let read = async {
        while let Ok(Some(line)) = lines.next_line().await {
            log.push_str(&line);
            log.push('\n');
            if line.contains("Number of evictions/requests") {
                cycles += 1;
                if cycles == 2 {
                    break;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(90), read)
        .await
        .unwrap_or_else(|_| panic!("upstream did not end two cycles in 90 s:\n{log}"));
    let _ = child.kill().await;
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_replica_behind_its_budget_is_moved_by_a_surge_where_upstream_and_evict_mode_cannot(
) {
    let st = stage(1, "1", "1500m", true).await;
    let victim = web_pods(&st).await.remove(0);
    let (name, uid) = (
        victim.metadata.name.clone().unwrap(),
        victim.metadata.uid.clone().unwrap(),
    );
    let key = format!("{}/{name}", st.ns);
    // Upstream, for real: refused by the budget, the pod stays.
    let log = run_upstream(&policy(&st, "")).await;
    assert!(
        log.contains("disruption budget") || log.contains("Cannot evict"),
        "upstream said nothing of the budget:\n{}",
        log.lines()
            .filter(|l| !l.contains("eature gate"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Our Evict mode: not chosen, blocked by the budget.
    let (report, _) = run_once(&policy(&st, "Evict"), &["--dry-run"]).await;
    assert!(rows(&report, "evictions").is_empty(), "{report:#}");
    let blocked = rows(&report, "notChosen");
    assert!(
        blocked.iter().any(|r| r["pod"] == key.as_str()
            && r["reason"]
                .as_str()
                .unwrap()
                .contains("PodDisruptionBudget")),
        "{report:#}"
    );
    let pods = web_pods(&st).await;
    assert_eq!(pods.len(), 1);
    assert_eq!(
        pods[0].metadata.uid.as_deref(),
        Some(uid.as_str()),
        "upstream moved it"
    );
    // The dry run says surge, exactly as the real run then does it.
    let surge = policy(&st, "SurgeWhenBlocked");
    let (planned, _) = run_once(&surge, &["--dry-run"]).await;
    let e = rows(&planned, "evictions");
    assert_eq!(e.len(), 1, "{planned:#}");
    assert_eq!(e[0]["pod"], key.as_str());
    assert_eq!(e[0]["mechanism"], "surge");
    assert!(e[0].get("result").is_none());
    let watcher = watch(&st);
    let (done, stderr) = run_once(&surge, &["--surge-timeout", "60s"]).await;
    let pods = wait_running_pods(&st.client, &st.ns, "app=web", 1).await;
    let seen = stop(watcher).await;
    let d = rows(&done, "evictions");
    assert_eq!(d.len(), 1, "{done:#}\n{stderr}");
    assert_eq!(d[0]["pod"], key.as_str());
    assert_eq!(d[0]["mechanism"], "surge");
    assert_eq!(d[0]["result"], "surged", "{done:#}\n{stderr}");
    assert_eq!(d[0]["destination"], planned["evictions"][0]["destination"]);
    let landed = d[0]["landed"].as_str().unwrap();
    assert!(st.cold.iter().any(|c| c == landed), "{done:#}");
    assert_eq!(node_of(&pods[0]), landed);
    assert_eq!(seen.min_available, 1, "{seen:?}");
    assert_eq!(seen.pdb_short, 0, "{seen:?}");
    assert_eq!(seen.max_replicas, 2, "{seen:?}");
    let went: Vec<&String> = seen
        .pods
        .iter()
        .filter(|(_, w)| **w)
        .map(|(n, _)| n)
        .collect();
    assert_eq!(went, vec![&name], "only the victim went: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_a_budget_allowing_none_are_surged_one_at_a_time() {
    // `hot`: 3 x 600m + 1 cpu of 4 (70%): two moves bring it under 50%.
    let st = stage(3, "600m", "1", true).await;
    let watcher = watch(&st);
    let (done, stderr) = run_once(
        &policy(&st, "SurgeWhenBlocked"),
        &["--surge-timeout", "60s"],
    )
    .await;
    wait_running_pods(&st.client, &st.ns, "app=web", 3).await;
    let seen = stop(watcher).await;
    let d = rows(&done, "evictions");
    assert!(d.len() >= 2, "{done:#}\n{stderr}");
    assert!(d.iter().all(|e| e["mechanism"] == "surge"), "{done:#}");
    assert!(
        d.iter().all(|e| e["result"] == "surged"),
        "{done:#}\n{stderr}"
    );
    let victims: std::collections::BTreeSet<String> = d
        .iter()
        .map(|e| {
            e["pod"]
                .as_str()
                .unwrap()
                .split('/')
                .nth(1)
                .unwrap()
                .to_string()
        })
        .collect();
    let went: std::collections::BTreeSet<String> = seen
        .pods
        .iter()
        .filter(|(_, w)| **w)
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(
        went, victims,
        "every pod deleted is a planned victim: {seen:?}"
    );
    assert!(seen.max_replicas <= 4, "one surge at a time: {seen:?}");
    assert_eq!(seen.min_available, 3, "{seen:?}");
    assert_eq!(seen.pdb_short, 0, "{seen:?}");
    assert_eq!(deployment(&st).await.spec.replicas, Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surge_left_in_flight_by_a_killed_run_is_finished_by_the_next() {
    // No room for the new pod: it stays Pending, and the run is killed while it waits.
    let st = stage(1, "1", "2500m", false).await;
    let victim = web_pods(&st).await.remove(0);
    let uid = victim.metadata.uid.clone().unwrap();
    let kubeconfig = shared_realistic()
        .kubeconfig()
        .to_str()
        .unwrap()
        .to_string();
    // Cold nodes cordoned: nodeFit would refuse, so this policy checks no fit.
    let dir = tempfile::tempdir().unwrap().keep();
    let policy = write_policy(
        &dir,
        &format!(
            "apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: surge={id}
profiles:
- name: move
  pluginConfig:
  - name: DefaultEvictor
    args: {{moveMode: SurgeWhenBlocked}}
  - name: RemovePodsViolatingNodeTaints
    args: {{}}
  plugins:
    deschedule: {{enabled: [RemovePodsViolatingNodeTaints]}}
",
            id = st.id
        ),
    );
    let nodes: Api<Node> = Api::all(st.client.clone());
    nodes
        .patch(
            &st.hot,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"taints": [{"key": "drain", "value": "now", "effect": "NoSchedule"}]}})),
        )
        .await
        .unwrap();
    let policy_path = policy.to_str().unwrap().to_string();
    let args = [
        "--kubeconfig",
        kubeconfig.as_str(),
        "--policy-config-file",
        policy_path.as_str(),
        "--surge-timeout",
        "20s",
    ];
    let first = support::process::Descheduler::spawn(&args);
    let deployments: Api<Deployment> = Api::namespaced(st.client.clone(), &st.ns);
    wait_for("web surged to 2", Duration::from_secs(60), || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get("web").await.ok()?;
            (d.spec.replicas == Some(2)).then_some(())
        }
    })
    .await;
    first.kill().await;
    let d = deployment(&st).await;
    assert_eq!(d.spec.replicas, Some(2), "killed one up");
    let mark = annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION).expect("the mark");
    let mark = descheduler::snapshot::SurgeMark::decode(&mark).unwrap();
    assert_eq!(mark.victim_uid, uid);
    // Before its deadline, another run leaves it alone and surges nothing of `web`.
    let run = support::process::run_bin(&args).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        deployment(&st).await.spec.replicas,
        Some(2),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("in flight"), "{}", run.stdout);
    // After it: scaled back to 1 (the Pending new pod goes first), the victim unmarked.
    let wait = mark.deadline - chrono::Utc::now().timestamp() + 1;
    if wait > 0 {
        tokio::time::sleep(Duration::from_secs(wait as u64)).await;
    }
    // Its eviction would still be blocked by the budget, so the next run only recovers.
    // (Another test's run on this shared cluster may get to it first once the deadline has
    // passed, as any descheduler would: the event says it was finished, by whichever run.)
    let run = support::process::run_bin(&args).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(st.client.clone(), &st.ns);
    wait_for("the SurgeRecovered event", Duration::from_secs(30), || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("SurgeRecovered")
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("web")
                })
                .then_some(())
        }
    })
    .await;
    let pods = wait_running_pods(&st.client, &st.ns, "app=web", 1).await;
    let d = deployment(&st).await;
    assert_eq!(d.spec.replicas, Some(1));
    assert_eq!(annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION), None);
    assert_eq!(pods[0].metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(
        annotation(&pods[0].metadata, POD_DELETION_COST_ANNOTATION),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autoscaled_paused_and_rolling_deployments_are_refused_with_the_reason_in_the_report() {
    // `web` aside (it stays within its budget's room), three one-replica Deployments behind
    // budgets allowing nothing on `hot`.
    let st = stage(1, "100m", "500m", true).await;
    let on_ours = PodConfig::new().node_selector("surge", &st.id).cpu("1");
    // The cold nodes cordoned while they start, so that they start on `hot`.
    for c in &st.cold {
        set_cordon(&st.client, c, true).await;
    }
    for name in ["scaled", "paused", "rolling"] {
        run_deployment(&st.client, &st.ns, name, 1, &on_ours).await;
        create_pdb(
            &st.client,
            &st.ns,
            name,
            &[("app", name)],
            Budget::MinAvailable(IntOrString::Int(1)),
        )
        .await;
        wait_pdb(&st.client, &st.ns, name, 1, 0).await;
    }
    for c in &st.cold {
        set_cordon(&st.client, c, false).await;
    }
    let hpa = serde_json::json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "scaled"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "scaled"},
            "minReplicas": 1,
            "maxReplicas": 1,
        }
    });
    let hpas: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(st.client.clone(), &st.ns);
    hpas.create(&Default::default(), &serde_json::from_value(hpa).unwrap())
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(st.client.clone(), &st.ns);
    deployments
        .patch(
            "paused",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    // A rollout whose new pod never becomes Ready: it stays in the middle.
    deployments
        .patch(
            "rolling",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"template": {"metadata": {"annotations": {"fake-kubelet/ready": "false"}}}}})),
        )
        .await
        .unwrap();
    wait_for("rolling's rollout started", Duration::from_secs(60), || {
        let deployments = deployments.clone();
        async move {
            let s = deployments.get("rolling").await.ok()?.status?;
            (s.replicas == Some(2)).then_some(())
        }
    })
    .await;
    let (report, stderr) = run_once(&policy(&st, "SurgeWhenBlocked"), &["--dry-run"]).await;
    let planned: Vec<&str> = rows(&report, "evictions")
        .iter()
        .map(|e| e["pod"].as_str().unwrap())
        .collect();
    let not_chosen = rows(&report, "notChosen");
    for (app, why) in [
        ("scaled", "is the target of HorizontalPodAutoscaler"),
        ("paused", "is paused"),
        ("rolling", "in the middle of a rollout"),
    ] {
        assert!(
            !planned.iter().any(|p| p.contains(&format!("/{app}-"))),
            "{app} planned: {report:#}"
        );
        let row = not_chosen
            .iter()
            .find(|r| r["pod"].as_str().unwrap().contains(&format!("/{app}-")))
            .unwrap_or_else(|| panic!("no row for {app}: {report:#}\n{stderr}"));
        let reason = row["reason"].as_str().unwrap();
        assert!(reason.contains("PodDisruptionBudget"), "{reason}");
        assert!(reason.contains(why), "{app}: {reason}");
    }
}
