//! MakeRoomForPendingPods against a real control plane (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and the fake kubelet): a training gang of four pods,
//! each asking for two GPUs, stays Pending on a cluster whose free GPUs are spread one per
//! node. One descheduler cycle moves the four one-GPU inference pods that fragment the
//! GPU nodes; kube-scheduler places every member of the gang, every moved pod runs again on
//! another node, and nothing the plan did not name was evicted.

mod support;

use descheduler::framework::Pipeline;
use descheduler::live::client::ApiClient;
use descheduler::live::executor::ExecutorConfig;
use descheduler::live::source::list_snapshot;
use descheduler::outcome::Outcome;
use descheduler::policy::Policy;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;
use support::*;

const GROUP_LABEL: &str = "descheduler-test";
const GPU: &str = "nvidia.com/gpu";
const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

fn policy(group: &str) -> String {
    format!(
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "{GROUP_LABEL}={group}"
profiles:
- name: batch
  pluginConfig:
  - name: MakeRoomForPendingPods
    args:
      minPendingSeconds: 0
  plugins:
    balance:
      enabled: [MakeRoomForPendingPods]
"#
    )
}

/// The scheduler-plugins PodGroup CRD, and a PodGroup of it.
async fn pod_group(client: &kube::Client, ns: &str, name: &str, min_member: i32) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
        "spec": {
            "group": "scheduling.x-k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup", "listKind": "PodGroupList"},
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("scheduling.x-k8s.io", "v1alpha1", "PodGroup"),
        "podgroups",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let obj =
        DynamicObject::new(name, &ar).data(serde_json::json!({"spec": {"minMember": min_member}}));
    // The API may take a moment to serve a new CRD's resource.
    wait_for(
        &format!("creating PodGroup {ns}/{name}"),
        Duration::from_secs(60),
        || {
            let (api, obj) = (&api, &obj);
            async move { api.create(&PostParams::default(), obj).await.ok() }
        },
    )
    .await;
}

/// Runs the binary once in dry-run with a JSON report.
async fn dry_run(kubeconfig: &Path, policy: &Path) -> serde_json::Value {
    let out = tokio::process::Command::new(bin())
        .env("DESCHEDULER_SECURE_PORT", support::process::NO_SECURE_PORT)
        .args(["--policy-config-file", policy.to_str().unwrap()])
        .args(["--kubeconfig", kubeconfig.to_str().unwrap()])
        .args(["--dry-run", "-o", "json"])
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn unschedulable(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            })
        })
}

#[tokio::test]
async fn one_cycle_makes_room_for_a_pending_gpu_gang() {
    let cluster = Cluster::start(Components::realistic());
    let client = cluster.client();
    let group = unique("g");
    let ns = create_namespace(&client, "pending").await;
    pod_group(&client, &ns, "train", 4).await;
    let gpu_node = |name: &str| {
        NodeConfig::new(name)
            .cpu("8")
            .memory("32Gi")
            .resource(GPU, "2")
            .label(GROUP_LABEL, &group)
    };

    // Four busy GPU nodes, each with much cpu held by a pod that stays, and one inference
    // pod of one GPU each (kube-scheduler spreads them).
    let busy: Vec<String> = (1..=4).map(|i| format!("busy-{i}")).collect();
    for n in &busy {
        create_node(&client, gpu_node(n)).await;
        let hold = PodConfig::new().cpu("5").memory("1Gi");
        create_pod(&client, &ns, &format!("hold-{n}"), Some(n), &hold).await;
        wait_pod_running(&client, &ns, &format!("hold-{n}")).await;
    }
    let infer = PodConfig::new()
        .cpu("500m")
        .memory("1Gi")
        .resource(GPU, "1");
    let before = run_replicaset(&client, &ns, "infer", 4, &infer).await;
    let infer_nodes: BTreeSet<String> = before.iter().map(node_of).collect();
    assert_eq!(
        infer_nodes,
        busy.iter().cloned().collect(),
        "one inference pod per busy node: {}",
        describe_pods(&before)
    );
    // Four spare GPU nodes with one GPU taken by a pod that stays: one GPU free each.
    for i in 1..=4 {
        let n = format!("spare-{i}");
        create_node(&client, gpu_node(&n)).await;
        let hold = PodConfig::new()
            .cpu("100m")
            .memory("1Gi")
            .resource(GPU, "1");
        create_pod(&client, &ns, &format!("gpu-{n}"), Some(&n), &hold).await;
        wait_pod_running(&client, &ns, &format!("gpu-{n}")).await;
    }

    // The training gang: four pods of two GPUs each; eight GPUs are free, none two on a node.
    let member = PodConfig::new()
        .cpu("1")
        .memory("2Gi")
        .resource(GPU, "2")
        .label(POD_GROUP_LABEL, "train");
    for i in 0..4 {
        create_pod(&client, &ns, &format!("train-{i}"), None, &member).await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    wait_for("the gang reported Unschedulable", TIMEOUT, || {
        let pods = &pods;
        async move {
            let list = pods
                .list(&ListParams::default().labels(&format!("{POD_GROUP_LABEL}=train")))
                .await
                .ok()?;
            (list.items.len() == 4 && list.items.iter().all(unschedulable)).then_some(())
        }
    })
    .await;

    // The dry-run names the four moves and where the gang goes.
    let dir = tempfile::tempdir().unwrap();
    let text = policy(&group);
    let policy_file = write_policy(dir.path(), &text);
    let report = dry_run(cluster.kubeconfig(), &policy_file).await;
    let pending = report["pending"].as_array().expect("a pending list");
    assert_eq!(pending.len(), 1, "{report:#}");
    let unit = &pending[0];
    assert_eq!(unit["group"], format!("{ns}/train"), "{unit}");
    let destinations: BTreeSet<&str> = unit["destinations"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        destinations,
        busy.iter().map(String::as_str).collect(),
        "{unit}"
    );
    let made_room_by: BTreeSet<String> = unit["madeRoomBy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let infer_keys: BTreeSet<String> = before
        .iter()
        .map(|p| format!("{ns}/{}", p.metadata.name.as_deref().unwrap()))
        .collect();
    assert_eq!(made_room_by, infer_keys, "{unit}");
    for row in report["evictions"].as_array().unwrap() {
        let to = row["destination"].as_str().unwrap();
        assert!(to.starts_with("spare-"), "{row}");
    }

    // Every pod before the cycle, by uid.
    let all_before: BTreeMap<String, String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| {
            (
                p.metadata.uid.clone().unwrap(),
                p.metadata.name.clone().unwrap(),
            )
        })
        .collect();

    // One real cycle.
    let pipeline = {
        let p = Policy::from_yaml("pending.yaml", &text, &descheduler::plugins::REGISTRY).unwrap();
        Pipeline::build(&p, "pending.yaml", &descheduler::plugins::REGISTRY).unwrap()
    };
    let api = ApiClient::from_client(client.clone(), 0.0, 1);
    let snap = list_snapshot(&api, &format!("{GROUP_LABEL}={group}"), false)
        .await
        .unwrap();
    let result = support::executor::real_cycle(
        &support::executor::executor(&client, ExecutorConfig::default()),
        &pipeline,
        &snap,
    )
    .await;
    let evicted: BTreeSet<String> = result
        .report
        .evictions
        .iter()
        .zip(&result.outcomes)
        .filter(|(_, o)| **o == Outcome::Evicted)
        .map(|(row, _)| row.pod.clone())
        .collect();
    assert_eq!(evicted, infer_keys, "{:?}", result.outcomes);
    assert_eq!(result.report.findings.pending.len(), 1);

    // kube-scheduler places the whole gang, on the nodes the inference pods left.
    let gang = wait_running_pods(&client, &ns, &format!("{POD_GROUP_LABEL}=train"), 4).await;
    let gang_nodes: BTreeSet<String> = gang.iter().map(node_of).collect();
    assert_eq!(gang_nodes, busy.iter().cloned().collect());
    // Every moved pod runs again (its replacement), on another node: a spare one.
    let after = wait_running_pods(&client, &ns, &app_selector("infer"), 4).await;
    for p in &after {
        assert!(
            node_of(p).starts_with("spare-"),
            "{}",
            describe_pods(&after)
        );
        assert!(!all_before.contains_key(p.metadata.uid.as_deref().unwrap()));
    }
    // Nothing the plan did not name is gone.
    let now: BTreeSet<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| p.metadata.uid.clone().unwrap())
        .collect();
    for (uid, name) in &all_before {
        if !now.contains(uid) {
            assert!(
                infer_keys.contains(&format!("{ns}/{name}")),
                "{name} was evicted but the plan did not name it"
            );
        }
    }
}

/// The shipped example (`examples/pending/`): the four inference pods move to the notebook
/// nodes and the training gang goes to the nodes they leave; the evaluation pod that no node
/// can hold is reported with the scheduler's reason; the notebooks (a higher priority than
/// the gang) and the feature caches (local storage) stay.
#[test]
fn the_pending_example_makes_room_for_the_gang() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/pending");
    let report = offline_plan(&root.join("policy.yaml"), &root.join("cluster.yaml"));
    let moved: Vec<(&str, &str, &str)> = report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["pod"].as_str().unwrap(),
                r["node"].as_str().unwrap(),
                r["destination"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        moved,
        [
            ("serve/serve-7c9d8-q7x2k", "gpu-1", "gpu-5"),
            ("serve/serve-7c9d8-m4d9s", "gpu-2", "gpu-6"),
            ("serve/serve-7c9d8-p2w8f", "gpu-3", "gpu-7"),
            ("serve/serve-7c9d8-z6c3n", "gpu-4", "gpu-8"),
        ]
    );
    assert_eq!(
        report["pending"],
        serde_json::json!([
            {"pod": "ml/eval-large", "destination": null, "madeRoomBy": [],
             "reason": "0/8 nodes are available: 8 Insufficient nvidia.com/gpu; no set of at most 4 running pods to move makes room (no node would have room for it even with every pod that may move gone)"},
            {"group": "ml/train",
             "pods": ["ml/train-worker-0", "ml/train-worker-1", "ml/train-worker-2", "ml/train-worker-3"],
             "destinations": {"ml/train-worker-0": "gpu-1", "ml/train-worker-1": "gpu-2",
                              "ml/train-worker-2": "gpu-3", "ml/train-worker-3": "gpu-4"},
             "madeRoomBy": ["serve/serve-7c9d8-q7x2k", "serve/serve-7c9d8-m4d9s",
                            "serve/serve-7c9d8-p2w8f", "serve/serve-7c9d8-z6c3n"]}
        ])
    );
}

/// Bad args stop the binary before anything is read or evicted, with the file, the field's
/// path and what to write instead.
#[test]
fn bad_args_name_the_file_the_field_and_the_fix() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/pending");
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root.join("policy.yaml")).unwrap();
    for (from, to, field, fix) in [
        (
            "maxPodsToMove: 4",
            "maxPodsToMove: 0",
            "profiles[0].pluginConfig[0].args.maxPodsToMove",
            "must be between 1 and 64",
        ),
        (
            "minPendingSeconds: 300",
            "minPendingSeconds: -5",
            "profiles[0].pluginConfig[0].args.minPendingSeconds",
            "must be 0 or more seconds",
        ),
        (
            "maxSimulations: 500",
            "maxSimulation: 500",
            "profiles[0].pluginConfig[0].args",
            "unknown field `maxSimulation`",
        ),
    ] {
        assert!(text.contains(from));
        let policy = write_policy(dir.path(), &text.replace(from, to));
        let out = std::process::Command::new(bin())
            .args(["--policy-config-file", policy.to_str().unwrap()])
            .args(["--snapshot", root.join("cluster.yaml").to_str().unwrap()])
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        assert!(out.stdout.is_empty(), "no plan is printed");
        assert!(stderr.contains(policy.to_str().unwrap()), "{stderr}");
        assert!(stderr.contains(field), "{stderr}");
        assert!(stderr.contains(fix), "{stderr}");
    }
}
