//! Gangs against a real control plane: PodGroups of scheduler-plugins
//! (`scheduling.x-k8s.io/v1alpha1`) and Volcano (`scheduling.volcano.sh/v1beta1`), read from
//! the API in one-shot mode (the binary) and by the watch caches of continuous mode (the
//! library); only members beyond minMember are planned, a group whose PodGroup cannot be found
//! keeps every member, and a cluster without the CRDs plans as before, without an error.
//! Kubernetes' own PodGroups (`scheduling.k8s.io/v1beta1`, 1.37, with kube-scheduler's
//! GangScheduling on): a group with `disruptionMode: all` is moved whole and placed again by
//! kube-scheduler; with `single` no plan takes it below its `minCount`.
//!
//! The CRD test runs on a control plane of its own (etcd and kube-apiserver only), so that the
//! shared one of this binary never has the CRDs; the tests of Kubernetes' own PodGroups run on
//! control planes of their own too, so that the shared one never holds a PodGroup.

mod support;

use descheduler::framework::Pipeline;
use descheduler::live::client::ApiClient;
use descheduler::live::source::{list_snapshot, WatchSource};
use descheduler::plan::plan;
use descheduler::policy::Policy;
use descheduler::snapshot::GangKind;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use support::*;

const GROUP_LABEL: &str = "descheduler-test";
const EVICT: &str = "descheduler.alpha.kubernetes.io/evict";

/// PodLifeTime over every Running pod of the namespace, on the group's nodes: it would evict
/// every pod it may.
fn lifetime_policy(group: &str, ns: &str) -> String {
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
profiles:
- name: gangs
  pluginConfig:
  - name: PodLifeTime
    args:
      states: [Running]
      namespaces: {{include: ["{ns}"]}}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
"#
    )
}

/// Runs the binary once in dry-run with a JSON report; returns the report.
async fn dry_run(kubeconfig: &Path, policy: &Path) -> serde_json::Value {
    let out = tokio::process::Command::new(bin())
        .env("DESCHEDULER_SECURE_PORT", support::process::NO_SECURE_PORT)
        .args([
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--dry-run",
            "-o",
            "json",
        ])
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}): {stdout}\nstderr: {stderr}"))
}

/// Planned evictions per pod-name prefix (`train`, `sim`, ...): the part before the last `-`.
fn planned_by_prefix(report: &serde_json::Value) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in report["evictions"].as_array().expect("evictions") {
        let pod = e["pod"].as_str().unwrap();
        let name = pod.split('/').nth(1).unwrap();
        let prefix = name.rsplit_once('-').map_or(name, |(p, _)| p);
        *out.entry(prefix.to_string()).or_default() += 1;
    }
    out
}

fn crd(group: &str, version: &str) -> CustomResourceDefinition {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("podgroups.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup", "listKind": "PodGroupList"},
            "versions": [{
                "name": version,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap()
}

async fn install_crds(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (group, version) in [
        ("scheduling.x-k8s.io", "v1alpha1"),
        ("scheduling.volcano.sh", "v1beta1"),
    ] {
        crds.create(&PostParams::default(), &crd(group, version))
            .await
            .unwrap_or_else(|e| panic!("creating the PodGroup CRD of {group}: {e}"));
        let name = format!("podgroups.{group}");
        wait_for(
            &format!("CRD {name} Established"),
            Duration::from_secs(60),
            || {
                let (crds, name) = (&crds, &name);
                async move {
                    let c = crds.get(name).await.ok()?;
                    let established = c
                        .status?
                        .conditions?
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True");
                    established.then_some(())
                }
            },
        )
        .await;
    }
}

async fn create_pod_group(
    client: &kube::Client,
    ns: &str,
    group: &str,
    version: &str,
    name: &str,
    min_member: Option<i32>,
) {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, "PodGroup"),
        "podgroups",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let spec = match min_member {
        Some(m) => serde_json::json!({"minMember": m}),
        None => serde_json::json!({}),
    };
    let obj = DynamicObject::new(name, &ar).data(serde_json::json!({ "spec": spec }));
    // The API may take a moment to serve a new CRD's resource.
    wait_for(
        &format!("creating PodGroup {ns}/{name} ({group})"),
        Duration::from_secs(60),
        || {
            let (api, obj) = (&api, &obj);
            async move { api.create(&PostParams::default(), obj).await.ok() }
        },
    )
    .await;
}

/// The two PodGroup APIs.
#[derive(Clone, Copy)]
enum Gang {
    SchedulerPlugins,
    Volcano,
}

/// A PodGroup and `n` Running members naming it (see [`members`]).
async fn gang(
    client: &kube::Client,
    ns: &str,
    node: &str,
    kind: Gang,
    name: &str,
    min_member: Option<i32>,
    n: usize,
) {
    let (group, version) = match kind {
        Gang::SchedulerPlugins => ("scheduling.x-k8s.io", "v1alpha1"),
        Gang::Volcano => ("scheduling.volcano.sh", "v1beta1"),
    };
    create_pod_group(client, ns, group, version, name, min_member).await;
    members(client, ns, node, name, n, |c| match kind {
        Gang::SchedulerPlugins => c.label("scheduling.x-k8s.io/pod-group", name),
        Gang::Volcano => c.annotation("scheduling.k8s.io/group-name", name),
    })
    .await;
}

/// `n` Running members (bare pods with the evict annotation, so only the gang rule protects
/// them) on `node`, named `{prefix}-{i}`, each made a member by `member`.
async fn members(
    client: &kube::Client,
    ns: &str,
    node: &str,
    prefix: &str,
    n: usize,
    member: impl Fn(PodConfig) -> PodConfig,
) {
    for i in 0..n {
        let name = format!("{prefix}-{i}");
        let config = member(PodConfig::new().cpu("100m").annotation(EVICT, "true"));
        create_pod(client, ns, &name, Some(node), &config).await;
        mark_pod_running(client, ns, &name).await;
    }
}

#[tokio::test]
async fn only_members_beyond_min_member_are_planned() {
    let cluster = Cluster::start(Components::apiserver_only());
    let client = cluster.client();
    install_crds(&client).await;
    let group = unique("g");
    let node = unique("n");
    create_node(&client, NodeConfig::new(&node).label(GROUP_LABEL, &group)).await;
    // A second Ready node in the group: a cycle with fewer plans nothing, as upstream's.
    create_node(
        &client,
        NodeConfig::new(&unique("n")).label(GROUP_LABEL, &group),
    )
    .await;
    let ns = create_namespace(&client, "gangs").await;

    // scheduler-plugins: 5 running, minMember 3 -> 2 may go.
    gang(
        &client,
        &ns,
        &node,
        Gang::SchedulerPlugins,
        "train",
        Some(3),
        5,
    )
    .await;
    // Volcano: 3 running, minMember 2 -> 1 may go.
    gang(&client, &ns, &node, Gang::Volcano, "sim", Some(2), 3).await;
    // Volcano without minMember: read as 1 -> 1 of 2 may go.
    gang(&client, &ns, &node, Gang::Volcano, "bare", None, 2).await;
    // Exactly minMember running: none may go.
    gang(
        &client,
        &ns,
        &node,
        Gang::SchedulerPlugins,
        "tight",
        Some(2),
        2,
    )
    .await;
    // A PodGroup that does not exist: every member stays.
    members(&client, &ns, &node, "ghost", 3, |c| {
        c.label("scheduling.x-k8s.io/pod-group", "ghost")
    })
    .await;
    // Not in a gang: goes.
    members(&client, &ns, &node, "solo", 1, |c| c).await;

    let dir = tempfile::tempdir().unwrap();
    let policy_text = lifetime_policy(&group, &ns);
    let policy = write_policy(dir.path(), &policy_text);
    let want: BTreeMap<String, usize> = [("train", 2), ("sim", 1), ("bare", 1), ("solo", 1)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();

    // One-shot mode, through the binary.
    let report = dry_run(cluster.kubeconfig(), &policy).await;
    assert_eq!(planned_by_prefix(&report), want, "{report:#}");

    // The same from the list and from the watch caches of continuous mode.
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let pipeline = {
        let p =
            Policy::from_yaml("gangs.yaml", &policy_text, &descheduler::plugins::REGISTRY).unwrap();
        Pipeline::build(&p, "gangs.yaml", &descheduler::plugins::REGISTRY).unwrap()
    };
    let selector = format!("{GROUP_LABEL}={group}");
    let listed = list_snapshot(&api, &selector, false).await.unwrap();
    let train = listed
        .gang_id(GangKind::SchedulerPlugins, &ns, "train")
        .expect("the train gang");
    assert_eq!(listed.gang(train).min_member, Some(3));
    assert_eq!(listed.gang(train).running, 5);
    let ghost = listed
        .gang_id(GangKind::SchedulerPlugins, &ns, "ghost")
        .expect("the ghost gang");
    assert_eq!(listed.gang(ghost).min_member, None);
    let mut watch = WatchSource::start(&api, &selector, false);
    let watched = watch.snapshot(Duration::from_secs(60)).await.unwrap();
    assert_eq!(watched.pod_groups, listed.pod_groups);
    assert_eq!(watched.gangs, listed.gangs);
    let now = chrono::Utc::now().timestamp();
    let planned = plan(&pipeline, watched, now).unwrap();
    let mut by_prefix: BTreeMap<String, usize> = BTreeMap::new();
    for e in &planned.evictions {
        let name = &*watched.pod(e.pod).name;
        let prefix = name.rsplit_once('-').map_or(name, |(p, _)| p);
        *by_prefix.entry(prefix.to_string()).or_default() += 1;
    }
    assert_eq!(by_prefix, want);
}

#[tokio::test]
async fn without_podgroup_crds_gangs_are_absent_not_an_error() {
    let cluster = shared();
    let client = cluster.client();
    let group = unique("g");
    let node = unique("n");
    create_node(&client, NodeConfig::new(&node).label(GROUP_LABEL, &group)).await;
    // A second Ready node in the group: a cycle with fewer plans nothing, as upstream's.
    create_node(
        &client,
        NodeConfig::new(&unique("n")).label(GROUP_LABEL, &group),
    )
    .await;
    let ns = create_namespace(&client, "nocrd").await;
    // Pods naming PodGroups that cannot exist (no CRD): protected, and the run succeeds.
    members(&client, &ns, &node, "train", 2, |c| {
        c.label("scheduling.x-k8s.io/pod-group", "train")
    })
    .await;
    members(&client, &ns, &node, "sim", 2, |c| {
        c.annotation("scheduling.k8s.io/group-name", "sim")
    })
    .await;
    members(&client, &ns, &node, "solo", 2, |c| c).await;
    let dir = tempfile::tempdir().unwrap();
    let policy_text = lifetime_policy(&group, &ns);
    let policy = write_policy(dir.path(), &policy_text);
    let report = dry_run(cluster.kubeconfig(), &policy).await;
    let want: BTreeMap<String, usize> = [("solo".to_string(), 2)].into_iter().collect();
    assert_eq!(planned_by_prefix(&report), want, "{report:#}");

    // The watch caches of continuous mode too: 404 is "no PodGroups", not an unsynced cache.
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let selector = format!("{GROUP_LABEL}={group}");
    let mut watch = WatchSource::start(&api, &selector, false);
    let snap = watch.snapshot(Duration::from_secs(60)).await.unwrap();
    assert!(snap.pod_groups.is_empty());
    let train = snap
        .gang_id(GangKind::SchedulerPlugins, &ns, "train")
        .expect("the train gang");
    assert_eq!(snap.gang(train).min_member, None);
}

/// `gangPolicy: WholeGang` against a real control plane: the dry-run plans each gang whole,
/// members one after the other with their gang named; a real run evicts a gang whose members
/// the API all accepts, and none of a gang one of whose members a disruption budget (created
/// after the cluster was read) protects: every member is first asked with `dryRun=All`.
#[tokio::test]
async fn a_whole_gang_is_evicted_all_or_nothing() {
    use descheduler::live::executor::ExecutorConfig;
    use descheduler::outcome::Outcome;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let cluster = Cluster::start(Components {
        controller_manager: true,
        scheduler: false,
        fake_kubelet: true,
        kubelet: Kubelet::INSTANT,
        apiserver_args: &[],
    });
    let client = cluster.client();
    install_crds(&client).await;
    let group = unique("g");
    // The members run on a cordoned node: the simulator places them on the other one.
    let (cordoned, open) = (unique("n"), unique("n"));
    create_node(
        &client,
        NodeConfig::new(&cordoned)
            .label(GROUP_LABEL, &group)
            .unschedulable(),
    )
    .await;
    create_node(&client, NodeConfig::new(&open).label(GROUP_LABEL, &group)).await;
    let ns = create_namespace(&client, "whole").await;
    gang(
        &client,
        &ns,
        &cordoned,
        Gang::SchedulerPlugins,
        "train",
        Some(3),
        3,
    )
    .await;
    create_pod_group(
        &client,
        &ns,
        "scheduling.volcano.sh",
        "v1beta1",
        "sim",
        Some(3),
    )
    .await;
    for i in 0..3 {
        let name = format!("sim-{i}");
        let mut config = PodConfig::new()
            .cpu("100m")
            .annotation(EVICT, "true")
            .annotation("scheduling.k8s.io/group-name", "sim");
        if i == 1 {
            config = config.label("guard", "yes");
        }
        create_pod(&client, &ns, &name, Some(&cordoned), &config).await;
        mark_pod_running(&client, &ns, &name).await;
    }

    let dir = tempfile::tempdir().unwrap();
    let policy_text = lifetime_policy(&group, &ns).replace(
        "  pluginConfig:\n",
        "  pluginConfig:\n  - name: DefaultEvictor\n    args: {gangPolicy: WholeGang}\n",
    );
    let policy = write_policy(dir.path(), &policy_text);

    // Dry-run through the binary: both gangs whole, each a block of its members.
    let report = dry_run(cluster.kubeconfig(), &policy).await;
    let rows = report["evictions"].as_array().expect("evictions");
    assert_eq!(rows.len(), 6, "{report:#}");
    let gang_of = |row: &serde_json::Value| row["gang"].as_str().unwrap_or("-").to_string();
    let blocks: Vec<String> = rows.iter().map(gang_of).collect();
    let mut distinct = blocks.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 2, "two blocks of one gang each: {blocks:?}");
    assert!(
        distinct.contains(&format!("PodGroup {ns}/train (scheduling.x-k8s.io)")),
        "{distinct:?}"
    );
    assert!(
        distinct.contains(&format!("PodGroup {ns}/sim (scheduling.volcano.sh)")),
        "{distinct:?}"
    );
    for row in rows {
        assert_eq!(row["destination"].as_str(), Some(open.as_str()), "{row}");
    }

    // The cluster is read, then a budget protecting sim-1 appears.
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, &format!("{GROUP_LABEL}={group}"), false)
        .await
        .unwrap();
    create_pdb(
        &client,
        &ns,
        "guard",
        &[("guard", "yes")],
        // minAvailable: the disruption controller computes maxUnavailable only for pods
        // with a controller, and these are bare.
        Budget::MinAvailable(IntOrString::Int(1)),
    )
    .await;
    wait_pdb(&client, &ns, "guard", 1, 0).await;
    let pipeline = {
        let p =
            Policy::from_yaml("gangs.yaml", &policy_text, &descheduler::plugins::REGISTRY).unwrap();
        Pipeline::build(&p, "gangs.yaml", &descheduler::plugins::REGISTRY).unwrap()
    };
    let result = support::executor::real_cycle(
        &support::executor::executor(&client, ExecutorConfig::default()),
        &pipeline,
        &snap,
    )
    .await;
    let outcomes: BTreeMap<String, Outcome> = result
        .report
        .evictions
        .iter()
        .zip(&result.outcomes)
        .map(|(row, o)| (row.pod.split('/').nth(1).unwrap().to_string(), *o))
        .collect();
    let want: BTreeMap<String, Outcome> = [
        ("train-0", Outcome::Evicted),
        ("train-1", Outcome::Evicted),
        ("train-2", Outcome::Evicted),
        ("sim-0", Outcome::GangNotAttempted),
        ("sim-1", Outcome::BlockedByDisruptionBudget),
        ("sim-2", Outcome::GangNotAttempted),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(outcomes, want);
    assert_eq!(result.outcomes.len(), 6, "each member attempted once");

    // In the cluster: the train pods are going or gone, every sim pod is untouched.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    for i in 0..3 {
        let train = pods.get_opt(&format!("train-{i}")).await.unwrap();
        assert!(
            train.is_none_or(|p| p.metadata.deletion_timestamp.is_some()),
            "train-{i} was evicted"
        );
        let sim = pods.get(&format!("sim-{i}")).await.unwrap();
        assert!(
            sim.metadata.deletion_timestamp.is_none(),
            "sim-{i} must stay: its gang cannot go whole"
        );
    }
}

/// The shipped batch example (`examples/batch/`): with `gangPolicy: WholeGang` the training
/// gang leaves the tainted node whole, each worker with a GPU to go to; with the default
/// SurplusOnly only the notebook goes.
#[test]
fn the_batch_example_moves_the_gang_whole() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/batch");
    let run = |policy: &Path| offline_plan(policy, &root.join("cluster.yaml"));
    let whole = run(&root.join("policy.yaml"));
    let rows = whole["evictions"].as_array().unwrap();
    let pods: Vec<&str> = rows.iter().map(|r| r["pod"].as_str().unwrap()).collect();
    assert_eq!(
        pods,
        [
            "ml/notebook-5d8f9-x2kq7",
            "ml/train-worker-0",
            "ml/train-worker-1",
            "ml/train-worker-2",
            "ml/train-worker-3"
        ]
    );
    for row in &rows[1..] {
        assert_eq!(
            row["gang"], "PodGroup ml/train (scheduling.x-k8s.io)",
            "{row}"
        );
        assert_ne!(row["destination"], "gpu-a", "{row}");
        assert!(row["destination"].is_string(), "{row}");
    }
    // The same policy with the default gang policy.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root.join("policy.yaml"))
        .unwrap()
        .replace("gangPolicy: WholeGang", "gangPolicy: SurplusOnly");
    let surplus = run(&write_policy(dir.path(), &text));
    let pods: Vec<&str> = surplus["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pod"].as_str().unwrap())
        .collect();
    assert_eq!(pods, ["ml/notebook-5d8f9-x2kq7"]);
}

// ---------------------------------------------------------------------------------------------
// Kubernetes' own gangs (scheduling.k8s.io, 1.37)

/// A Kubernetes PodGroup (`scheduling.k8s.io/v1beta1`) with gang `minCount` and, when given,
/// `disruptionMode` (`all` or `single`; the API defaults an absent one).
async fn create_k8s_pod_group(
    client: &kube::Client,
    ns: &str,
    name: &str,
    min_count: i32,
    mode: Option<&str>,
) {
    use k8s_openapi::api::scheduling::v1beta1::PodGroup;
    let mut spec = serde_json::json!({"schedulingPolicy": {"gang": {"minCount": min_count}}});
    if let Some(mode) = mode {
        let mut union = serde_json::Map::new();
        union.insert(mode.to_string(), serde_json::json!({}));
        spec["disruptionMode"] = serde_json::Value::Object(union);
    }
    let group: PodGroup =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "spec": spec}))
            .unwrap();
    Api::<PodGroup>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &group)
        .await
        .unwrap_or_else(|e| panic!("creating PodGroup {ns}/{name} (scheduling.k8s.io): {e}"));
}

/// Waits until kube-scheduler has scheduled the PodGroup as a group: its status condition
/// `PodGroupInitiallyScheduled` True, which only its gang scheduling path sets.
async fn wait_pod_group_scheduled(client: &kube::Client, ns: &str, name: &str) {
    use k8s_openapi::api::scheduling::v1beta1::PodGroup;
    let groups: Api<PodGroup> = Api::namespaced(client.clone(), ns);
    wait_for(
        &format!("PodGroup {ns}/{name} scheduled by kube-scheduler"),
        Duration::from_secs(60),
        || {
            let groups = &groups;
            async move {
                let g = groups.get(name).await.ok()?;
                let scheduled = g
                    .status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "PodGroupInitiallyScheduled" && c.status == "True");
                scheduled.then_some(())
            }
        },
    )
    .await;
}

async fn cordon(client: &kube::Client, node: &str) {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Patch, PatchParams};
    Api::<Node>::all(client.clone())
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap_or_else(|e| panic!("cordoning {node}: {e}"));
}

fn node_of(pod: &k8s_openapi::api::core::v1::Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("-")
}

fn uid_of(pod: &k8s_openapi::api::core::v1::Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

/// Runs one real cycle of `policy_text` through the library's executor on the cluster as
/// listed now; returns each planned pod's name with its outcome.
async fn real_cycle(
    client: &kube::Client,
    selector: &str,
    policy_text: &str,
) -> Vec<(String, descheduler::outcome::Outcome)> {
    use descheduler::live::executor::ExecutorConfig;
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, selector, false).await.unwrap();
    let pipeline = {
        let p =
            Policy::from_yaml("gangs.yaml", policy_text, &descheduler::plugins::REGISTRY).unwrap();
        Pipeline::build(&p, "gangs.yaml", &descheduler::plugins::REGISTRY).unwrap()
    };
    let result = support::executor::real_cycle(
        &support::executor::executor(client, ExecutorConfig::default()),
        &pipeline,
        &snap,
    )
    .await;
    result
        .report
        .evictions
        .iter()
        .zip(&result.outcomes)
        .map(|(row, o)| (row.pod.split('/').nth(1).unwrap().to_string(), *o))
        .collect()
}

/// `disruptionMode: all`, under the default `gangPolicy: SurplusOnly`: the plan takes the
/// whole group (a block of rows naming it, every member bound for the open node), the
/// executor evicts every member, and kube-scheduler's GangScheduling places the group again:
/// all three new members Running on the open node.
#[tokio::test]
async fn a_kubernetes_gang_with_disruption_mode_all_moves_whole() {
    use descheduler::outcome::Outcome;
    use descheduler::snapshot::DisruptionMode;
    use k8s_openapi::api::core::v1::Pod;
    // A control plane of its own: the shared one never holds a PodGroup (see
    // `without_podgroup_crds_gangs_are_absent_not_an_error`).
    let cluster = Cluster::start(Components::all());
    let client = cluster.client();
    let group = unique("g");
    let (first, second) = (unique("n"), unique("n"));
    create_node(&client, NodeConfig::new(&first).label(GROUP_LABEL, &group)).await;
    let ns = create_namespace(&client, "k8sall").await;
    create_k8s_pod_group(&client, &ns, "train", 3, Some("all")).await;
    let config = PodConfig::new()
        .cpu("100m")
        .node_selector(GROUP_LABEL, &group)
        .pod_group("train");
    let before = run_replicaset(&client, &ns, "train", 3, &config).await;
    for p in &before {
        assert_eq!(
            node_of(p),
            first,
            "kube-scheduler placed the gang on the only node"
        );
    }
    wait_pod_group_scheduled(&client, &ns, "train").await;
    // A second node, and the first cordoned: the gang belongs there now.
    create_node(&client, NodeConfig::new(&second).label(GROUP_LABEL, &group)).await;
    cordon(&client, &first).await;

    let dir = tempfile::tempdir().unwrap();
    let policy_text = lifetime_policy(&group, &ns);
    let policy = write_policy(dir.path(), &policy_text);
    let report = dry_run(cluster.kubeconfig(), &policy).await;
    let rows = report["evictions"].as_array().expect("evictions");
    assert_eq!(rows.len(), 3, "{report:#}");
    for row in rows {
        assert_eq!(
            row["gang"].as_str(),
            Some(format!("PodGroup {ns}/train (scheduling.k8s.io)").as_str()),
            "{row}"
        );
        assert_eq!(row["destination"].as_str(), Some(second.as_str()), "{row}");
        assert!(
            row["reason"]
                .as_str()
                .unwrap()
                .contains("disruptionMode all"),
            "{row}"
        );
    }

    // As read from the API.
    let selector = format!("{GROUP_LABEL}={group}");
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, &selector, false).await.unwrap();
    let train = snap
        .gang_id(GangKind::Kubernetes, &ns, "train")
        .expect("the train gang");
    let g = snap.gang(train);
    assert_eq!(
        (g.min_member, g.disruption, g.running),
        (Some(3), Some(DisruptionMode::All), 3)
    );

    // For real: every member evicted.
    let outcomes = real_cycle(&client, &selector, &policy_text).await;
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert!(
        outcomes.iter().all(|(_, o)| *o == Outcome::Evicted),
        "{outcomes:?}"
    );

    // kube-scheduler places the group again: three new members, all Running on the second
    // node, and nothing else left of the group.
    let old: Vec<String> = before.iter().map(uid_of).collect();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let app = app_selector("train");
    let after = wait_for(
        "the gang placed again, every member Running on the open node",
        Duration::from_secs(120),
        || {
            let (pods, app, old, second) = (&pods, &app, &old, &second);
            async move {
                let list = pods.list(&ListParams::default().labels(app)).await.ok()?;
                let done = list.items.len() == 3
                    && list.items.iter().all(|p| {
                        pod_is_running(p) && !old.contains(&uid_of(p)) && node_of(p) == second
                    });
                done.then_some(list.items)
            }
        },
    )
    .await;
    assert_eq!(after.len(), 3);
}

/// `disruptionMode: single`, even under `gangPolicy: WholeGang`: members go one by one,
/// only while at least `minCount` keep running. A PodGroup created without a mode is
/// defaulted to `single` by the API. After the real cycle the groups never have fewer than
/// `minCount` members running, and kube-scheduler places the replacements.
#[tokio::test]
async fn a_kubernetes_gang_with_disruption_mode_single_keeps_min_count() {
    use descheduler::outcome::Outcome;
    use descheduler::snapshot::DisruptionMode;
    let cluster = Cluster::start(Components::all());
    let client = cluster.client();
    let group = unique("g");
    let node = unique("n");
    create_node(&client, NodeConfig::new(&node).label(GROUP_LABEL, &group)).await;
    let ns = create_namespace(&client, "k8ssingle").await;
    create_k8s_pod_group(&client, &ns, "serve", 3, Some("single")).await;
    create_k8s_pod_group(&client, &ns, "plain", 2, None).await;
    let config = |name: &str| {
        PodConfig::new()
            .cpu("100m")
            .node_selector(GROUP_LABEL, &group)
            .pod_group(name)
    };
    run_replicaset(&client, &ns, "serve", 4, &config("serve")).await;
    run_replicaset(&client, &ns, "plain", 2, &config("plain")).await;
    // A second Ready node in the group, once the pods run on the first: a cycle with fewer
    // plans nothing, as upstream's.
    create_node(
        &client,
        NodeConfig::new(&unique("n")).label(GROUP_LABEL, &group),
    )
    .await;

    let selector = format!("{GROUP_LABEL}={group}");
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, &selector, false).await.unwrap();
    let gang = |name: &str| {
        let id = snap.gang_id(GangKind::Kubernetes, &ns, name).unwrap();
        let g = snap.gang(id);
        (g.min_member, g.disruption, g.running)
    };
    assert_eq!(gang("serve"), (Some(3), Some(DisruptionMode::Single), 4));
    assert_eq!(
        gang("plain"),
        (Some(2), Some(DisruptionMode::Single), 2),
        "the API defaults disruptionMode to single"
    );
    // The watch caches of continuous mode read the same.
    let mut watch = WatchSource::start(&api, &selector, false);
    let watched = watch.snapshot(Duration::from_secs(60)).await.unwrap();
    assert_eq!(watched.pod_groups, snap.pod_groups);
    assert_eq!(watched.gangs, snap.gangs);
    drop(watch);

    let dir = tempfile::tempdir().unwrap();
    let policy_text = lifetime_policy(&group, &ns).replace(
        "  pluginConfig:\n",
        "  pluginConfig:\n  - name: DefaultEvictor\n    args: {gangPolicy: WholeGang}\n",
    );
    let policy = write_policy(dir.path(), &policy_text);
    let report = dry_run(cluster.kubeconfig(), &policy).await;
    let want: BTreeMap<String, usize> = [("serve".to_string(), 1)].into_iter().collect();
    assert_eq!(planned_by_prefix(&report), want, "{report:#}");
    for row in report["evictions"].as_array().unwrap() {
        assert!(row["gang"].is_null(), "one by one, not whole: {row}");
    }

    // For real: one serve member goes; at least minCount of each group keep running.
    let outcomes = real_cycle(&client, &selector, &policy_text).await;
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(outcomes[0].0.starts_with("serve-"), "{outcomes:?}");
    assert_eq!(outcomes[0].1, Outcome::Evicted);
    assert!(
        running_pods(&client, &ns, &app_selector("serve"))
            .await
            .len()
            >= 3
    );
    assert_eq!(
        running_pods(&client, &ns, &app_selector("plain"))
            .await
            .len(),
        2
    );
    // The replacement joins its running gang: kube-scheduler places it.
    wait_running_pods(&client, &ns, &app_selector("serve"), 4).await;
}

/// Where the API serves Kubernetes' PodGroups only as `v1alpha3` (v1beta1 turned off), they
/// are read from there, listed and watched, with their gang size and disruption mode.
#[tokio::test]
async fn kubernetes_pod_groups_are_read_from_v1alpha3_where_only_it_is_served() {
    use descheduler::snapshot::DisruptionMode;
    let cluster = Cluster::start(Components {
        apiserver_args: &["--runtime-config=scheduling.k8s.io/v1beta1=false"],
        ..Components::apiserver_only()
    });
    let client = cluster.client();
    let group = unique("g");
    let node = unique("n");
    create_node(&client, NodeConfig::new(&node).label(GROUP_LABEL, &group)).await;
    let ns = create_namespace(&client, "alpha").await;
    let beta: Api<k8s_openapi::api::scheduling::v1beta1::PodGroup> =
        Api::namespaced(client.clone(), &ns);
    let e = beta.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_error_code(&e), Some(404), "v1beta1 is not served: {e}");
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("scheduling.k8s.io", "v1alpha3", "PodGroup"),
        "podgroups",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
    let obj = DynamicObject::new("train", &ar).data(serde_json::json!({"spec": {
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "disruptionMode": {"all": {}},
    }}));
    api.create(&PostParams::default(), &obj)
        .await
        .expect("creating a v1alpha3 PodGroup");
    members(&client, &ns, &node, "train", 2, |c| c.pod_group("train")).await;

    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let selector = format!("{GROUP_LABEL}={group}");
    let listed = list_snapshot(&api, &selector, false).await.unwrap();
    let train = listed
        .gang_id(GangKind::Kubernetes, &ns, "train")
        .expect("the train gang");
    let g = listed.gang(train);
    assert_eq!(
        (g.min_member, g.disruption, g.running, g.members.len()),
        (Some(2), Some(DisruptionMode::All), 2, 2)
    );
    let mut watch = WatchSource::start(&api, &selector, false);
    let watched = watch.snapshot(Duration::from_secs(60)).await.unwrap();
    assert_eq!(watched.pod_groups, listed.pod_groups);
    assert_eq!(watched.gangs, listed.gangs);
}
