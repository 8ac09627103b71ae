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
    wait_for(&format!("{node} cordoned: {cordoned}"), Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(node).await.ok()?;
            let tainted = n
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|t| t.iter().any(|t| t.key == "node.kubernetes.io/unschedulable"));
            (tainted == cordoned).then_some(())
        }
    })
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
            seen.min_available = seen.min_available.min(status.available_replicas.unwrap_or(0));
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
    p.spec.as_ref().unwrap().node_name.clone().unwrap_or_default()
}

fn annotation(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref()?.get(key).cloned()
}

async fn deployment(st: &Stage) -> Deployment {
    Api::<Deployment>::namespaced(st.client.clone(), &st.ns)
        .get("web")
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_moves_a_single_replica_behind_its_budget_with_the_new_pod_first() {
    let st = stage(1, "1", "1500m", true).await;
    let victim = web_pods(&st).await.remove(0);
    let (name, uid) = (
        victim.metadata.name.clone().unwrap(),
        victim.metadata.uid.clone().unwrap(),
    );
    let watcher = watch(&st);
    let api = ApiClient::from_client(st.client.clone(), 50.0, 100);
    let gate = Gate::default();
    let surger = Surger {
        api: &api,
        timeout: Duration::from_secs(60),
        poll: Duration::from_millis(200),
        gate: &gate,
    };
    let end = surger
        .surge(
            "web",
            &Victim {
                namespace: &st.ns,
                name: &name,
                uid: &uid,
                node: &st.hot,
            },
            chrono::Utc::now().timestamp(),
        )
        .await;
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
    assert_eq!(seen.min_available, 1, "never fewer than one available: {seen:?}");
    assert_eq!(seen.pdb_short, 0, "{seen:?}");
    assert_eq!(seen.max_replicas, 2, "{seen:?}");
    // Only the victim went.
    let went: Vec<&String> = seen.pods.iter().filter(|(_, w)| **w).map(|(n, _)| n).collect();
    assert_eq!(went, vec![&name], "{seen:?}");
    let d = deployment(&st).await;
    assert_eq!(d.spec.replicas, Some(1));
    assert_eq!(annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surge_whose_new_pod_finds_no_room_is_rolled_back_and_the_pod_left_as_it_was() {
    // The cold nodes stay cordoned and `hot` has 0.5 cpu left: the new pod stays Pending.
    let st = stage(1, "1", "2500m", false).await;
    let victim = web_pods(&st).await.remove(0);
    let (name, uid) = (
        victim.metadata.name.clone().unwrap(),
        victim.metadata.uid.clone().unwrap(),
    );
    let watcher = watch(&st);
    let api = ApiClient::from_client(st.client.clone(), 50.0, 100);
    let gate = Gate::default();
    let surger = Surger {
        api: &api,
        timeout: Duration::from_secs(6),
        poll: Duration::from_millis(200),
        gate: &gate,
    };
    let end = surger
        .surge(
            "web",
            &Victim {
                namespace: &st.ns,
                name: &name,
                uid: &uid,
                node: &st.hot,
            },
            chrono::Utc::now().timestamp(),
        )
        .await;
    let SurgeEnd::RolledBack(why) = &end else {
        panic!("{end:?}");
    };
    assert!(why.contains("not Ready within 6 s"), "{why}");
    assert!(why.contains("is not scheduled"), "{why}");
    // The new pod is deleted by the scale-back; the victim stays, unmarked.
    let pods = wait_running_pods(&st.client, &st.ns, "app=web", 1).await;
    let seen = stop(watcher).await;
    assert_eq!(pods[0].metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(annotation(&pods[0].metadata, POD_DELETION_COST_ANNOTATION), None);
    assert_eq!(seen.min_available, 1, "{seen:?}");
    assert_eq!(seen.max_replicas, 2, "it was surged: {seen:?}");
    let d = deployment(&st).await;
    assert_eq!(d.spec.replicas, Some(1));
    assert_eq!(annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION), None);
    let _ = &st.id;
}
