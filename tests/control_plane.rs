//! The test harness itself (tests/support): a real control plane starts, RBAC is on, the
//! scheduler, controllers and fake kubelet do their part, and the eviction API behaves as the
//! descheduler relies on (pods go and come back; a PodDisruptionBudget refuses with 429).

mod support;

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams, PostParams};
use support::*;

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        ..Default::default()
    }
}

/// Two fresh Ready nodes carrying `group=<group>`; returns their names.
async fn two_nodes(client: &kube::Client, group: &str) -> Vec<String> {
    let mut names = Vec::new();
    for _ in 0..2 {
        let name = unique("node");
        create_node(client, NodeConfig::new(&name).label("group", group)).await;
        names.push(name);
    }
    names
}

#[tokio::test]
async fn apiserver_answers_and_rbac_forbids_a_service_account_without_roles() {
    let cluster = shared();
    let admin = cluster.client();
    let version = admin.apiserver_version().await.expect("GET /version");
    assert_eq!(version.major, "1", "{version:?}");

    let ns = create_namespace(&admin, "rbac").await;
    let sa = cluster.service_account_client(&ns, "nobody").await;
    let pods: Api<Pod> = Api::namespaced(sa.clone(), &ns);
    let err = pods
        .list(&ListParams::default())
        .await
        .expect_err("a SA without roles lists pods");
    // 403, not 401: the token authenticates, RBAC says no.
    assert_eq!(api_error_code(&err), Some(403), "{err}");
    let kube::Error::Api(status) = &err else {
        unreachable!()
    };
    assert!(
        status
            .message
            .contains(&format!("system:serviceaccount:{ns}:nobody")),
        "{status:?}"
    );

    // With a Role bound, the same token may list pods: the 403 was RBAC's.
    let role = Role {
        metadata: meta("pod-reader"),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["pods".to_string()]),
            verbs: vec!["list".to_string()],
            ..Default::default()
        }]),
    };
    Api::<Role>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &role)
        .await
        .expect("create role");
    let binding = RoleBinding {
        metadata: meta("nobody-reads-pods"),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_string()),
            kind: "Role".to_string(),
            name: "pod-reader".to_string(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_string(),
            name: "nobody".to_string(),
            namespace: Some(ns.clone()),
            ..Default::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("create rolebinding");
    let allowed = wait_until(TIMEOUT, || {
        let pods = &pods;
        async move { pods.list(&ListParams::default()).await.is_ok() }
    })
    .await;
    assert!(
        allowed,
        "the service account still cannot list pods after the RoleBinding"
    );
    // Listing pods of another namespace stays forbidden.
    let elsewhere: Api<Pod> = Api::namespaced(sa, "default");
    let err = elsewhere
        .list(&ListParams::default())
        .await
        .expect_err("other namespace");
    assert_eq!(api_error_code(&err), Some(403), "{err}");
    cluster.assert_running();
}

#[tokio::test]
async fn nodes_become_ready_and_deployment_pods_are_scheduled_and_run() {
    let cluster = shared();
    let client = cluster.client();
    let nodes: Api<Node> = Api::all(client.clone());

    // A bare Node (no status at all): the fake kubelet makes it Ready, fills its capacity and
    // keeps a Lease; the node lifecycle controller then lifts the not-ready taint.
    let bare = unique("bare");
    let node = Node {
        metadata: meta(&bare),
        ..Default::default()
    };
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create bare node");
    let ready = wait_for(
        "the bare node Ready without the not-ready taint",
        TIMEOUT,
        || {
            let (nodes, bare) = (&nodes, &bare);
            async move {
                let node = nodes.get(bare).await.ok()?;
                let tainted = node
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_some_and(|ts| ts.iter().any(|t| t.key.starts_with("node.kubernetes.io/")));
                (node_is_ready(&node) && !tainted).then_some(node)
            }
        },
    )
    .await;
    let allocatable = ready.status.and_then(|s| s.allocatable).unwrap_or_default();
    assert_eq!(
        allocatable.get("cpu").map(|q| q.0.as_str()),
        Some("4"),
        "{allocatable:?}"
    );
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = leases.get(&bare).await.expect("the fake kubelet's lease");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity),
        Some(bare.clone())
    );

    // Nodes from the helper, and a Deployment restricted to them.
    let group = unique("g");
    let names = two_nodes(&client, &group).await;
    for name in &names {
        let node = nodes.get(name).await.expect("get node");
        assert!(node_is_ready(&node), "{name} not Ready");
        let allocatable = node.status.and_then(|s| s.allocatable).unwrap_or_default();
        assert_eq!(allocatable["memory"].0, "8Gi");
        assert_eq!(allocatable["pods"].0, "110");
    }
    let ns = create_namespace(&client, "sched").await;
    let pod = PodConfig::new()
        .cpu("1")
        .memory("1Gi")
        .node_selector("group", &group);
    let pods = run_deployment(&client, &ns, "web", 3, &pod).await;
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        assert!(
            names.contains(&node),
            "pod on {node:?}, not one of {names:?}"
        );
        let status = pod.status.as_ref().expect("status");
        assert!(status.pod_ip.is_some(), "no podIP: {status:?}");
        let scheduled = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True");
        assert!(scheduled, "{status:?}");
        let owner = pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .next()
            .expect("an owner");
        assert_eq!(owner.kind, "ReplicaSet");
    }

    // A pod asking more than any node has stays Pending: the scheduler really checks fit.
    let huge = PodConfig::new().cpu("64").node_selector("group", &group);
    create_pod(&client, &ns, "too-big", None, &huge).await;
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let unschedulable = wait_until(TIMEOUT, || {
        let api = &api;
        async move {
            let Ok(pod) = api.get("too-big").await else {
                return false;
            };
            pod.status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .any(|c| {
                    c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable")
                })
        }
    })
    .await;
    assert!(
        unschedulable,
        "the oversized pod was not reported Unschedulable"
    );
    let pod = api.get("too-big").await.expect("get");
    assert_eq!(pod.spec.and_then(|s| s.node_name), None);
    cluster.assert_running();
}

#[tokio::test]
async fn eviction_removes_the_pod_and_the_replicaset_replaces_it() {
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    let names = two_nodes(&client, &group).await;
    let ns = create_namespace(&client, "evict").await;
    let pod = PodConfig::new().cpu("100m").node_selector("group", &group);
    let before = run_replicaset(&client, &ns, "app", 2, &pod).await;
    let victim = before[0].metadata.name.clone().expect("name");
    let victim_uid = before[0].metadata.uid.clone().expect("uid");

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let status = pods
        .evict(&victim, &EvictParams::default())
        .await
        .expect("eviction");
    assert!(status.is_success(), "{status:?}");

    // The fake kubelet finishes the graceful deletion; the ReplicaSet makes a new pod, which
    // the scheduler places on one of the two nodes and the fake kubelet runs.
    let gone = wait_until(TIMEOUT, || {
        let (pods, victim) = (&pods, &victim);
        async move { matches!(pods.get_opt(victim).await, Ok(None)) }
    })
    .await;
    assert!(gone, "evicted pod {victim} still exists");
    let after = wait_running_pods(&client, &ns, &app_selector("app"), 2).await;
    assert!(
        after
            .iter()
            .all(|p| p.metadata.uid.as_deref() != Some(victim_uid.as_str())),
        "{}",
        describe_pods(&after)
    );
    let survivor = before[1].metadata.uid.as_deref();
    assert!(
        after.iter().any(|p| p.metadata.uid.as_deref() == survivor),
        "{}",
        describe_pods(&after)
    );
    for p in &after {
        let node = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        assert!(names.contains(&node), "{}", describe_pods(&after));
    }

    // Evicting a pod that is not there is a 404.
    let err = pods
        .evict(&victim, &EvictParams::default())
        .await
        .expect_err("evicting a gone pod");
    assert_eq!(api_error_code(&err), Some(404), "{err}");
    cluster.assert_running();
}

#[tokio::test]
async fn a_pdb_with_no_disruptions_allowed_refuses_eviction_with_429() {
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    two_nodes(&client, &group).await;
    let ns = create_namespace(&client, "pdb").await;
    let pod = PodConfig::new().cpu("100m").node_selector("group", &group);
    let pods = run_deployment(&client, &ns, "db", 2, &pod).await;
    create_pdb(
        &client,
        &ns,
        "db",
        &[("app", "db")],
        Budget::MinAvailable(IntOrString::Int(2)),
    )
    .await;
    let pdb = wait_pdb(&client, &ns, "db", 2, 0).await;
    assert_eq!(pdb.status.as_ref().and_then(|s| s.current_healthy), Some(2));

    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let target = pods[0].metadata.name.clone().expect("name");
    let started = std::time::Instant::now();
    let err = api
        .evict(&target, &EvictParams::default())
        .await
        .expect_err("eviction past a PDB");
    assert_eq!(api_error_code(&err), Some(429), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the 429 was retried: {:?}",
        started.elapsed()
    );
    let kube::Error::Api(status) = &err else {
        unreachable!()
    };
    assert!(status.message.contains("disruption budget"), "{status:?}");
    let still = api.get(&target).await.expect("the pod is still there");
    assert!(
        pod_is_running(&still),
        "the refused pod is not Running any more"
    );

    // With one disruption allowed, the same eviction goes through.
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
    let patch = serde_json::json!({ "spec": { "minAvailable": 1 } });
    pdbs.patch("db", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch pdb");
    wait_pdb(&client, &ns, "db", 2, 1).await;
    let status = api
        .evict(&target, &EvictParams::default())
        .await
        .expect("eviction");
    assert!(status.is_success(), "{status:?}");
    wait_running_pods(&client, &ns, &app_selector("db"), 2).await;
    cluster.assert_running();
}

/// A cluster of its own with etcd and kube-apiserver only: the helpers still give Ready nodes
/// and Running pods; dropping it stops the processes and removes its folder.
#[test]
fn an_apiserver_only_cluster_works_and_drop_cleans_up() {
    let cluster = Cluster::start(Components::apiserver_only());
    eprintln!(
        "apiserver-only control plane ready in {:.1?}",
        cluster.startup_time()
    );
    let pids = cluster.pids();
    let names: Vec<_> = pids.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["etcd", "kube-apiserver"]);
    let dir = cluster.dir().to_path_buf();
    assert!(cluster.kubeconfig().is_file());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = cluster.client();
        let node = unique("solo");
        let created = create_node(
            &client,
            NodeConfig::new(&node).cpu("2").memory("4Gi").pods(20),
        )
        .await;
        assert!(node_is_ready(&created));
        assert_eq!(
            created.spec.and_then(|s| s.taints),
            None,
            "the not-ready taint stayed"
        );
        let ns = create_namespace(&client, "solo").await;
        create_pod(
            &client,
            &ns,
            "p",
            Some(&node),
            &PodConfig::new().cpu("500m"),
        )
        .await;
        let pod = mark_pod_running(&client, &ns, "p").await;
        assert!(pod_is_running(&pod));
        assert_eq!(running_pods(&client, &ns, "").await.len(), 1);
        // A kubeconfig-based client works too (the file is self-contained).
        let file = kube::config::Kubeconfig::read_from(cluster.kubeconfig()).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
            .await
            .expect("config from kubeconfig");
        let other = kube::Client::try_from(config).expect("client");
        let nodes: Api<Node> = Api::all(other);
        assert!(nodes.get(&node).await.is_ok());
    });
    drop(rt);

    drop(cluster);
    for (name, pid) in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "{name} (pid {pid}) still runs"
        );
    }
    if std::env::var_os("DESCHEDULER_TEST_KEEP").is_none() {
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }
}
