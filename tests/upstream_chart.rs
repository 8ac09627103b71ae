//! Drop-in: kubernetes-sigs/descheduler v0.36.0's own Helm chart, rendered by helm, runs
//! this binary with nothing changed but the image. The rendered objects are accepted by the
//! API server; the chart's ServiceAccount, ClusterRole and policy are installed for real; the
//! container's arguments are run as they stand (the policy ConfigMap's mount becoming a
//! folder), as the chart's account; the CronJob's run evicts what the chart's policy asks
//! for, and the Deployment's, with leader election, answers the chart's liveness probe.
//!
//! The chart comes from the release's Go module and helm from its own
//! (`scripts/build-control-plane` puts both beside the control-plane binaries).

mod support;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::process::{run_deployed, Descheduler};
use support::*;

fn chart() -> PathBuf {
    bin_dir().join("upstream-chart")
}

/// `helm template` of upstream's chart with `values`; the rendered objects.
fn render(values: &[&str]) -> Vec<Value> {
    let mut cmd = std::process::Command::new(bin_dir().join("helm"));
    cmd.args(["template", "descheduler"])
        .arg(chart())
        .args(["--namespace", "kube-system"])
        // The image is the only thing changed.
        .args([
            "--set",
            "image.repository=descheduler",
            "--set",
            "image.tag=0.1.0",
        ]);
    for v in values {
        cmd.args(["--set", v]);
    }
    let out = cmd.output().expect("running helm");
    assert!(
        out.status.success(),
        "helm template: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    serde_saphyr::from_multiple::<Value>(&text)
        .expect("helm's output is YAML")
        .into_iter()
        .filter(|d| d.is_object())
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}

fn list(items: impl IntoIterator<Item = Value>) -> String {
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items.into_iter().collect::<Vec<_>>()})
        .to_string()
}

/// The container's arguments with the policy ConfigMap's mount path turned into `dir`,
/// where the ConfigMap's files are written, as the kubelet would mount them.
fn container_args(docs: &[Value], container: &Value, dir: &Path) -> Vec<String> {
    let config = of_kind(docs, "ConfigMap");
    for (name, text) in config["data"].as_object().unwrap() {
        std::fs::write(dir.join(name), text.as_str().unwrap()).unwrap();
    }
    let mounts: Vec<&str> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    assert_eq!(
        container["command"],
        serde_json::json!(["/bin/descheduler"]),
        "the chart runs the image's /bin/descheduler (where our image has it too)"
    );
    container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let mut a = a.as_str().unwrap().to_string();
            for m in &mounts {
                a = a.replace(m, dir.to_str().unwrap());
            }
            a
        })
        .collect()
}

async fn apply(cluster: &Cluster, text: &str, dry_run: bool) {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    if dry_run {
        args.push("--dry-run=server");
    }
    let (ok, out) = kubectl_run(cluster.kubeconfig(), &args, Some(text)).await;
    assert!(ok, "kubectl {args:?}: {out}");
}

async fn uids(client: &kube::Client, ns: &str) -> BTreeSet<String> {
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(pod_is_running)
        .filter_map(|p| p.metadata.uid)
        .collect()
}

/// GET `path` of the probe's port and scheme on loopback (any certificate, as the kubelet's
/// probes take any).
async fn probe(probe: &Value) -> Option<u16> {
    let get = &probe["httpGet"];
    let scheme = get["scheme"].as_str().unwrap_or("HTTP").to_lowercase();
    let url = format!(
        "{scheme}://127.0.0.1:{}{}",
        get["port"].as_u64()?,
        get["path"].as_str()?
    );
    let client = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(5))
        .build()
        .ok()?;
    Some(client.get(url).send().await.ok()?.status().as_u16())
}

#[tokio::test]
async fn upstream_chart_runs_this_binary_unchanged() {
    // A cluster of its own: the chart's policy evicts for real, anywhere.
    let cluster = Cluster::start(Components::all());
    let client = cluster.client();
    let dir = tempfile::tempdir().unwrap();

    let cronjob = render(&[]);
    let deployment = render(&["kind=Deployment", "leaderElection.enabled=true"]);
    // Everything rendered is accepted by the API server.
    apply(&cluster, &list(cronjob.iter().cloned()), true).await;
    apply(&cluster, &list(deployment.iter().cloned()), true).await;
    // The account, its rights and the policy, for real (the workloads' pods are the runs
    // below).
    let installed = deployment
        .iter()
        .filter(|d| {
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "ConfigMap",
            ]
            .contains(&d["kind"].as_str().unwrap_or(""))
        })
        .cloned();
    apply(&cluster, &list(installed), false).await;
    let account = of_kind(&deployment, "ServiceAccount");
    let kubeconfig = dir.path().join("chart-account-kubeconfig");
    cluster
        .service_account_kubeconfig(
            account["metadata"]["namespace"].as_str().unwrap(),
            account["metadata"]["name"].as_str().unwrap(),
            &kubeconfig,
        )
        .await;

    // Four replicas on the one node there is, then a second node: the chart's policy
    // (RemoveDuplicates among others) moves two of them.
    let first = unique("n");
    create_node(&client, NodeConfig::new(&first)).await;
    let ns = create_namespace(&client, "chart").await;
    let pods = run_replicaset(&client, &ns, "web", 4, &PodConfig::new().cpu("100m")).await;
    assert!(pods
        .iter()
        .all(|p| p.spec.as_ref().unwrap().node_name.as_deref() == Some(first.as_str())));
    create_node(&client, NodeConfig::new(&unique("n"))).await;
    let before = uids(&client, &ns).await;

    // The CronJob's container, run to its end.
    let job = &of_kind(&cronjob, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        ["containers"][0];
    let policy_dir = dir.path().join("cronjob-policy");
    std::fs::create_dir(&policy_dir).unwrap();
    let args = container_args(&cronjob, job, &policy_dir);
    let run = run_deployed(&args, &kubeconfig).await;
    assert_eq!(
        run.code,
        Some(0),
        "{args:?}\n{}\n{}",
        run.stdout,
        run.stderr
    );
    // Upstream's ClusterRole grants no PodGroups: said, and nothing else refused.
    assert!(
        run.stderr.contains("may not read PodGroups"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.lines().any(|l| l.contains("ERROR")
            || (l.contains("forbidden") && !l.contains("may not read PodGroups"))),
        "{}",
        run.stderr
    );
    let after = uids(&client, &ns).await;
    assert_eq!(
        before.difference(&after).count(),
        2,
        "two of the stacked replicas evicted: {}\n{}",
        run.stdout,
        run.stderr
    );

    // The Deployment's container, with leader election: the chart's liveness probe is
    // answered and it holds the chart's Lease.
    let container =
        &of_kind(&deployment, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    let policy_dir = dir.path().join("deployment-policy");
    std::fs::create_dir(&policy_dir).unwrap();
    let args = container_args(&deployment, container, &policy_dir);
    assert!(
        args.iter().any(|a| a == "--leader-elect=true"),
        "the chart's Go-style boolean: {args:?}"
    );
    let p = Descheduler::spawn_deployed(&args, &kubeconfig);
    let liveness = &container["livenessProbe"];
    assert_eq!(liveness["httpGet"]["scheme"], "HTTPS");
    assert!(
        wait_until(TIMEOUT, || async { probe(liveness).await == Some(200) }).await,
        "the chart's liveness probe {liveness}: {}",
        p.stderr()
    );
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "kube-system");
    assert!(
        wait_until(TIMEOUT, || async {
            leases
                .get_opt("descheduler")
                .await
                .ok()
                .flatten()
                .and_then(|l| l.spec?.holder_identity)
                .is_some()
        })
        .await,
        "the Lease is held: {}",
        p.stderr()
    );
    assert_eq!(p.terminate().await, Some(0));
}
