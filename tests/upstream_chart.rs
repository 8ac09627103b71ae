//! Drop-in: kubernetes-sigs/descheduler v0.36.0's own Helm chart, rendered by helm, and its
//! kustomize manifests run this binary with nothing changed but the image. The rendered objects are accepted by the
//! API server; the chart's ServiceAccount, ClusterRole and policy are installed for real; the
//! container's arguments are run as they stand (the policy ConfigMap's mount becoming a
//! folder), as the chart's account; the CronJob's run evicts what the chart's policy asks
//! for, and the Deployment's, with leader election, answers the chart's liveness probe.
//!
//! The same for the kustomize Job, CronJob and Deployment, as their own ServiceAccount.
//!
//! The chart and manifests come from the release's Go module and helm from its own
//! (`scripts/build-control-plane` puts them beside the control-plane binaries).

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

/// `kubectl kustomize` of upstream's `kubernetes/<overlay>`; the rendered objects.
async fn kustomize(cluster: &Cluster, overlay: &str) -> Vec<Value> {
    let dir = bin_dir().join("upstream-kustomize").join(overlay);
    let (ok, text) = kubectl_run(
        cluster.kubeconfig(),
        &["kustomize", dir.to_str().unwrap()],
        None,
    )
    .await;
    assert!(ok, "kustomize {overlay}: {text}");
    serde_saphyr::from_multiple::<Value>(&text)
        .expect("kustomize's output is YAML")
        .into_iter()
        .filter(|d| d.is_object())
        .collect()
}

/// The first container of a workload's pod template.
fn container(workload: &Value) -> &Value {
    let template = match workload["kind"].as_str() {
        Some("CronJob") => &workload["spec"]["jobTemplate"]["spec"]["template"],
        _ => &workload["spec"]["template"],
    };
    &template["spec"]["containers"][0]
}

/// Installs the account, its rights and the policy of `docs` (not the workloads: their
/// pods are the tests' runs); a kubeconfig of that account.
async fn install(cluster: &Cluster, docs: &[Value], dir: &Path) -> PathBuf {
    let installed = docs
        .iter()
        .filter(|d| {
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "ConfigMap",
            ]
            .contains(&d["kind"].as_str().unwrap_or(""))
        })
        .cloned();
    apply(cluster, &list(installed), false).await;
    let account = of_kind(docs, "ServiceAccount");
    let name = account["metadata"]["name"].as_str().unwrap();
    let kubeconfig = dir.join(format!("{name}-kubeconfig"));
    cluster
        .service_account_kubeconfig(
            account["metadata"]["namespace"].as_str().unwrap(),
            name,
            &kubeconfig,
        )
        .await;
    kubeconfig
}

/// Runs a one-shot workload's container to its end: it succeeds, and nothing but the
/// PodGroups is refused.
async fn run_one_shot(docs: &[Value], workload: &str, kubeconfig: &Path, dir: &Path) -> String {
    let policy_dir = dir.join(format!("{workload}-policy"));
    std::fs::create_dir_all(&policy_dir).unwrap();
    let args = container_args(docs, container(of_kind(docs, workload)), &policy_dir);
    let run = run_deployed(&args, kubeconfig).await;
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
    run.stdout + &run.stderr
}

/// Starts a Deployment's container and waits until its liveness probe is answered; `lease`:
/// the Lease it must come to hold (leader election on).
async fn run_deployment(
    docs: &[Value],
    kubeconfig: &Path,
    dir: &Path,
    lease: Option<(&kube::Client, &str)>,
) {
    let policy_dir = dir.join("deployment-policy");
    std::fs::create_dir_all(&policy_dir).unwrap();
    let container = container(of_kind(docs, "Deployment"));
    let args = container_args(docs, container, &policy_dir);
    let p = Descheduler::spawn_deployed(&args, kubeconfig);
    let liveness = &container["livenessProbe"];
    assert_eq!(liveness["httpGet"]["scheme"], "HTTPS");
    assert!(
        wait_until(TIMEOUT, || async { probe(liveness).await == Some(200) }).await,
        "the liveness probe {liveness}: {}",
        p.stderr()
    );
    if let Some((client, lease)) = lease {
        assert!(
            wait_until(TIMEOUT, || async {
                lease_holder(client, "kube-system", lease).await.is_some()
            })
            .await,
            "the Lease {lease} is held: {}",
            p.stderr()
        );
    }
    assert_eq!(p.terminate().await, Some(0), "SIGTERM ends it cleanly");
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
    let kubeconfig = install(&cluster, &deployment, dir.path()).await;

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
    let out = run_one_shot(&cronjob, "CronJob", &kubeconfig, dir.path()).await;
    let after = uids(&client, &ns).await;
    assert_eq!(
        before.difference(&after).count(),
        2,
        "two of the stacked replicas evicted: {out}"
    );

    // The Deployment's container, with leader election (the chart's Go-style boolean
    // `--leader-elect=true`): the chart's liveness probe is answered and it holds the
    // chart's Lease.
    let args = container(of_kind(&deployment, "Deployment"))["args"].to_string();
    assert!(args.contains("--leader-elect=true"), "{args}");
    run_deployment(
        &deployment,
        &kubeconfig,
        dir.path(),
        Some((&client, "descheduler")),
    )
    .await;

    // Upstream's kustomize manifests, as their own account.
    let job = kustomize(&cluster, "job").await;
    apply(&cluster, &list(job.iter().cloned()), true).await;
    let kubeconfig = install(&cluster, &job, dir.path()).await;
    run_one_shot(&job, "Job", &kubeconfig, dir.path()).await;
    let cron = kustomize(&cluster, "cronjob").await;
    apply(&cluster, &list(cron.iter().cloned()), true).await;
    run_one_shot(&cron, "CronJob", &kubeconfig, dir.path()).await;
    let deploy = kustomize(&cluster, "deployment").await;
    apply(&cluster, &list(deploy.iter().cloned()), true).await;
    run_deployment(&deploy, &kubeconfig, dir.path(), None).await;
}
