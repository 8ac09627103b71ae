//! The Helm chart (manifests/helm/descheduler), with helm built from its Go module beside the
//! control-plane binaries (`scripts/build-control-plane`): `helm lint` and `helm template`
//! for each kind, the rendered objects accepted by the API server (a server-side dry-run
//! apply on the local control plane), upstream kubernetes-sigs/descheduler's own values file
//! rendering the same policy and options, and the rendered container arguments run by this
//! binary.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::*;

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/helm/descheduler")
}

fn helm(args: &[&str]) -> String {
    let out = std::process::Command::new(bin_dir().join("helm"))
        .args(args)
        .output()
        .expect("running helm");
    assert!(
        out.status.success(),
        "helm {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `helm template` of the chart in kube-system with `extra` arguments: its text and objects.
fn render(extra: &[&str]) -> (String, Vec<Value>) {
    let chart = chart();
    let mut args = vec![
        "template",
        "descheduler",
        chart.to_str().unwrap(),
        "--namespace",
        "kube-system",
    ];
    args.extend(extra);
    let text = helm(&args);
    let docs = serde_saphyr::from_multiple::<Value>(&text)
        .expect("helm's output is YAML")
        .into_iter()
        .filter(|d| d.is_object())
        .collect();
    (text, docs)
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}

fn kinds(docs: &[Value]) -> Vec<&str> {
    let mut k: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    k.sort();
    k
}

fn pod_spec(workload: &Value) -> &Value {
    match workload["kind"].as_str() {
        Some("CronJob") => &workload["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        _ => &workload["spec"]["template"]["spec"],
    }
}

fn args(workload: &Value) -> Vec<String> {
    pod_spec(workload)["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// The policy of the rendered ConfigMap, loaded as this binary loads it.
fn policy(docs: &[Value]) -> (String, descheduler::policy::Policy) {
    let map = of_kind(docs, "ConfigMap");
    assert_eq!(map["metadata"]["name"], "descheduler-policy");
    let text = map["data"]["policy.yaml"].as_str().unwrap().to_string();
    let policy = descheduler::policy::Policy::from_yaml(
        "rendered policy.yaml",
        &text,
        &descheduler::plugins::REGISTRY,
    )
    .unwrap_or_else(|e| panic!("the chart's policy does not load: {e}\n{text}"));
    (text, policy)
}

#[test]
fn the_chart_lints_and_renders_each_kind() {
    let chart = chart();
    for kind in ["CronJob", "Deployment"] {
        let out = helm(&[
            "lint",
            "--strict",
            chart.to_str().unwrap(),
            "--set",
            &format!("kind={kind}"),
        ]);
        assert!(out.contains("0 chart(s) failed"), "{out}");
    }
    // CronJob, the default.
    let (_, docs) = render(&[]);
    assert_eq!(
        kinds(&docs),
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "CronJob",
            "ServiceAccount"
        ]
    );
    let cron = of_kind(&docs, "CronJob");
    assert_eq!(cron["spec"]["schedule"], "*/2 * * * *");
    let a = args(cron);
    assert_eq!(a[0], "--policy-config-file=/policy-dir/policy.yaml");
    assert!(a.contains(&"--v=2".to_string()), "{a:?}");
    assert!(!a.iter().any(|x| x.starts_with("--descheduling-interval")));
    assert!(!a.iter().any(|x| x.starts_with("--cycle-on-change")));
    let resources = &pod_spec(cron)["containers"][0]["resources"];
    // The measured figures (docs/user-guide.md, "Reading a live cluster"): 320 MiB peak at
    // 5,000 nodes and 150,000 pods.
    assert_eq!(resources["requests"]["memory"], "256Mi");
    assert_eq!(resources["limits"]["memory"], "512Mi");
    let (_, p) = policy(&docs);
    assert_eq!(p.profiles[0].name, "default");

    // Deployment with leader election, two replicas, the decision log, the metrics service.
    let (_, docs) = render(&[
        "--set",
        "kind=Deployment",
        "--set",
        "replicas=2",
        "--set",
        "leaderElection.enabled=true",
        "--set",
        "leaderElection.resourceNamespace=kube-system",
        "--set",
        "decisionLog.enabled=true",
        "--set",
        "decisionLog.snapshot=true",
        "--set",
        "rateLimits.nodeEvictionQps=0.2",
        "--set",
        "serviceMonitor.enabled=true",
        "--set",
        "cycleOnChange.enabled=true",
    ]);
    assert_eq!(
        kinds(&docs),
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "Deployment",
            "Service",
            "ServiceAccount",
            "ServiceMonitor"
        ]
    );
    let deployment = of_kind(&docs, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let a = args(deployment);
    for want in [
        "--descheduling-interval=5m",
        "--leader-elect=true",
        "--leader-elect-resource-namespace=kube-system",
        "--node-eviction-qps=0.2",
        "--eviction-cooldown=10m",
        "--eviction-backoff-max=1h",
        "--cycle-on-change=true",
        "--cycle-debounce=200ms",
        "--min-cycle-gap=1s",
        "--decision-log=/var/lib/descheduler/decisions",
        "--decision-log-snapshot=true",
        "--decision-log-max-files=100",
        "--decision-log-max-bytes=1Gi",
    ] {
        assert!(a.contains(&want.to_string()), "{want} not in {a:?}");
    }
    let spec = pod_spec(deployment);
    let mounts = spec["containers"][0]["volumeMounts"].as_array().unwrap();
    assert!(mounts
        .iter()
        .any(|m| m["mountPath"] == "/var/lib/descheduler/decisions"));
    assert!(spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["name"] == "decision-log" && v["emptyDir"].is_object()));
    assert_eq!(
        spec["containers"][0]["livenessProbe"]["httpGet"]["scheme"],
        "HTTPS"
    );
    // Two replicas without leader election are refused, as upstream's chart refuses them.
    let refused = std::process::Command::new(bin_dir().join("helm"))
        .args(["template", "d", chart.to_str().unwrap()])
        .args(["--set", "kind=Deployment", "--set", "replicas=2"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("leaderElection.enabled"));
}

/// The rules a surge needs (DefaultEvictor's moveMode), as `(apiGroup, resource, verb)`.
const SURGE_RULES: &[(&str, &str, &str)] = &[
    ("apps", "deployments", "get"),
    ("apps", "deployments", "list"),
    ("apps", "deployments", "watch"),
    ("apps", "deployments", "patch"),
    ("apps", "deployments/scale", "get"),
    ("apps", "deployments/scale", "update"),
    ("apps", "deployments/scale", "patch"),
    ("autoscaling", "horizontalpodautoscalers", "get"),
    ("autoscaling", "horizontalpodautoscalers", "list"),
    ("autoscaling", "horizontalpodautoscalers", "watch"),
    ("", "resourcequotas", "get"),
    ("", "resourcequotas", "list"),
    ("", "resourcequotas", "watch"),
    ("", "pods", "patch"),
];

/// Every (apiGroup, resource, verb) the ClusterRoles of `docs` grant.
fn granted(docs: &[Value]) -> Vec<(String, String, String)> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for role in docs.iter().filter(|d| d["kind"] == "ClusterRole") {
        for rule in role["rules"].as_array().unwrap() {
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    for verb in strings(&rule["verbs"]) {
                        out.push((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    out
}

fn grants(docs: &[Value], (group, resource, verb): (&str, &str, &str)) -> bool {
    granted(docs)
        .iter()
        .any(|(g, r, v)| g == group && r == resource && v == verb)
}

/// `kubectl kustomize` of a kustomization of the deployment overlay, with the surge component
/// when `surge`: the objects it renders.
fn kustomize_deployment(surge: bool) -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    // Kustomize takes relative paths only.
    let up = "../".repeat(dir.path().components().count() - 1);
    let rel = |p: &str| {
        format!(
            "{up}{}",
            root.join(p).display().to_string().trim_start_matches('/')
        )
    };
    let mut text = format!("resources: [{}]\n", rel("manifests/overlays/deployment"));
    if surge {
        text.push_str(&format!(
            "components: [{}]\n",
            rel("manifests/components/surge")
        ));
    }
    std::fs::write(dir.path().join("kustomization.yaml"), text).unwrap();
    let out = std::process::Command::new(bin_dir().join("kubectl"))
        .args(["kustomize", dir.path().to_str().unwrap()])
        .output()
        .expect("running kubectl kustomize");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_saphyr::from_multiple::<Value>(&String::from_utf8(out.stdout).unwrap())
        .unwrap()
        .into_iter()
        .filter(|d| d.is_object())
        .collect()
}

#[test]
fn the_surge_rules_are_granted_only_when_enabled() {
    // The chart: off by default, also with upstream's values file.
    let (_, plain) = render(&[]);
    let (_, upstream) = render(&["-f", upstream_v037_values().to_str().unwrap()]);
    let (_, surge) = render(&["--set", "surge.enabled=true"]);
    for rule in SURGE_RULES {
        assert!(!grants(&plain, *rule), "{rule:?} granted by default");
        assert!(
            !grants(&upstream, *rule),
            "{rule:?} granted with upstream's values"
        );
        assert!(
            grants(&surge, *rule),
            "{rule:?} not granted with surge.enabled"
        );
    }
    // Nothing else changes: the default rules are all still there.
    let base = granted(&plain);
    let with = granted(&surge);
    assert!(base.iter().all(|r| with.contains(r)));
    assert_eq!(with.len(), base.len() + SURGE_RULES.len());

    // The kustomize manifests: the component, bound to the descheduler's ServiceAccount.
    let plain = kustomize_deployment(false);
    let surge = kustomize_deployment(true);
    for rule in SURGE_RULES {
        assert!(!grants(&plain, *rule), "{rule:?} granted by the base");
        assert!(
            grants(&surge, *rule),
            "{rule:?} not granted by the component"
        );
    }
    let binding = surge
        .iter()
        .find(|d| d["kind"] == "ClusterRoleBinding" && d["roleRef"]["name"] == "descheduler-surge")
        .expect("the surge ClusterRoleBinding");
    assert_eq!(binding["subjects"][0]["name"], "descheduler");
    assert_eq!(binding["subjects"][0]["namespace"], "kube-system");
}

/// The values upstream's chart gained in v0.37 (`tests/data/upstream-chart-v0.37-values.yaml`
/// names its source): upstream's defaults render nothing new.
fn upstream_v037_values() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/upstream-chart-v0.37-values.yaml")
}

#[test]
fn upstreams_v037_values_render_a_budget_and_the_pod_fields() {
    let defaults = upstream_v037_values();
    let defaults = defaults.to_str().unwrap();
    // Upstream's defaults, as ours: no budget, no scheduler or runtime class.
    for extra in [vec![], vec!["-f", defaults]] {
        for kind in ["CronJob", "Deployment"] {
            let mut a = extra.clone();
            let k = format!("kind={kind}");
            a.extend(["--set", &k]);
            let (text, docs) = render(&a);
            assert!(!kinds(&docs).contains(&"PodDisruptionBudget"), "{kind}");
            let spec = pod_spec(of_kind(&docs, kind));
            assert!(spec.get("schedulerName").is_none(), "{text}");
            assert!(spec.get("runtimeClassName").is_none(), "{text}");
        }
    }
    // schedulerName and runtimeClassName: on the pod of either kind.
    for kind in ["CronJob", "Deployment"] {
        let k = format!("kind={kind}");
        let (_, docs) = render(&[
            "-f",
            defaults,
            "--set",
            &k,
            "--set",
            "schedulerName=batch-scheduler",
            "--set",
            "runtimeClassName=gvisor",
        ]);
        let spec = pod_spec(of_kind(&docs, kind));
        assert_eq!(spec["schedulerName"], "batch-scheduler", "{kind}");
        assert_eq!(spec["runtimeClassName"], "gvisor", "{kind}");
    }
    // podDisruptionBudget: for a Deployment, upstream's minAvailable 1 by default, over the
    // Deployment's own pods.
    let (_, docs) = render(&[
        "-f",
        defaults,
        "--set",
        "kind=Deployment",
        "--set",
        "replicas=2",
        "--set",
        "leaderElection.enabled=true",
        "--set",
        "podDisruptionBudget.enabled=true",
        "--set",
        "podDisruptionBudget.unhealthyPodEvictionPolicy=AlwaysAllow",
        "--set",
        "podDisruptionBudget.annotations.team=platform",
    ]);
    let pdb = of_kind(&docs, "PodDisruptionBudget");
    assert_eq!(pdb["apiVersion"], "policy/v1");
    assert_eq!(pdb["metadata"]["name"], "descheduler");
    assert_eq!(pdb["metadata"]["namespace"], "kube-system");
    assert_eq!(pdb["metadata"]["annotations"]["team"], "platform");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(pdb["spec"].get("maxUnavailable").is_none(), "{pdb}");
    assert_eq!(pdb["spec"]["unhealthyPodEvictionPolicy"], "AlwaysAllow");
    let deployment = of_kind(&docs, "Deployment");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    // The selector picks the Deployment's pods.
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in pdb["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&pod_labels[k], v, "{k}");
    }
    // maxUnavailable instead, as a percentage.
    let (_, docs) = render(&[
        "-f",
        defaults,
        "--set",
        "kind=Deployment",
        "--set",
        "podDisruptionBudget.enabled=true",
        "--set-string",
        "podDisruptionBudget.minAvailable=",
        "--set-string",
        "podDisruptionBudget.maxUnavailable=50%",
    ]);
    let pdb = of_kind(&docs, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["maxUnavailable"], "50%");
    assert!(pdb["spec"].get("minAvailable").is_none(), "{pdb}");
    // A CronJob's pods get no budget, as upstream's chart renders none.
    let (_, docs) = render(&["--set", "podDisruptionBudget.enabled=true"]);
    assert!(!kinds(&docs).contains(&"PodDisruptionBudget"));
    // Both bounds: refused with the fix, where the API server would refuse the object.
    let refused = std::process::Command::new(bin_dir().join("helm"))
        .args(["template", "d", chart().to_str().unwrap()])
        .args([
            "--set",
            "kind=Deployment",
            "--set",
            "podDisruptionBudget.enabled=true",
        ])
        .args(["--set", "podDisruptionBudget.maxUnavailable=1"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("podDisruptionBudget: set minAvailable or maxUnavailable, not both"),
        "{err}"
    );
}

#[test]
fn a_values_file_written_for_upstreams_chart_works_unchanged() {
    // Upstream v0.36.0's own values.yaml (its chart, from the release's Go module), with the
    // values its chart gained in v0.37 set as a user of that chart would set them.
    let upstream = bin_dir().join("upstream-chart/values.yaml");
    let text = std::fs::read_to_string(&upstream).unwrap();
    let values: Value = serde_saphyr::from_str(&text).unwrap();
    let v037 = upstream_v037_values();
    let dir = tempfile::tempdir().unwrap();
    for kind in ["CronJob", "Deployment"] {
        let (_, docs) = render(&[
            "-f",
            upstream.to_str().unwrap(),
            "-f",
            v037.to_str().unwrap(),
            "--set",
            &format!("kind={kind}"),
            "--set",
            "image.repository=descheduler",
            "--set",
            "image.tag=0.1.0",
            "--set",
            "podDisruptionBudget.enabled=true",
            "--set",
            "schedulerName=batch-scheduler",
            "--set",
            "runtimeClassName=gvisor",
            "--set",
            "cmdOptions.feature-gates=EvictionsInBackground=true",
        ]);
        assert_eq!(
            kinds(&docs).contains(&"PodDisruptionBudget"),
            kind == "Deployment",
            "{kind}"
        );
        let spec = pod_spec(of_kind(&docs, kind));
        assert_eq!(spec["schedulerName"], "batch-scheduler");
        assert_eq!(spec["runtimeClassName"], "gvisor");
        // The rendered arguments, upstream's feature gate among them, run by this binary.
        let (policy_text, _) = policy(&docs);
        let policy_file = dir.path().join(format!("{kind}-policy.yaml"));
        std::fs::write(&policy_file, policy_text).unwrap();
        let mut a: Vec<String> = args(of_kind(&docs, kind))
            .into_iter()
            .map(|x| x.replace("/policy-dir/policy.yaml", policy_file.to_str().unwrap()))
            .collect();
        assert!(
            a.contains(&"--feature-gates=EvictionsInBackground=true".to_string()),
            "{a:?}"
        );
        a.extend(
            [
                "--snapshot",
                "examples/cluster-hotspot.yaml",
                "--now",
                "2026-12-01T00:00:00Z",
                "-o",
                "json",
            ]
            .map(String::from),
        );
        let out = std::process::Command::new(bin())
            .args(&a)
            .env("DESCHEDULER_SECURE_PORT", "0")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind}: {a:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("no effect here"), "{stderr}");
        // Its policy, as upstream's chart would install it, and loadable here.
        let (_, p) = policy(&docs);
        let wanted = &values["deschedulerPolicy"];
        assert_eq!(
            p.profiles.len(),
            wanted["profiles"].as_array().unwrap().len()
        );
        let rendered: Value = serde_saphyr::from_str(
            of_kind(&docs, "ConfigMap")["data"]["policy.yaml"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(rendered["profiles"], wanted["profiles"]);
        assert_eq!(rendered["apiVersion"], "descheduler/v1alpha2");
        let workload = of_kind(&docs, kind);
        let a = args(workload);
        // cmdOptions (v: 3 there), and its resources as given.
        assert!(a.contains(&"--v=3".to_string()), "{a:?}");
        let resources = &pod_spec(workload)["containers"][0]["resources"];
        assert_eq!(resources, &values["resources"]);
        assert_eq!(
            pod_spec(workload)["priorityClassName"],
            values["priorityClassName"]
        );
        if kind == "CronJob" {
            assert_eq!(workload["spec"]["schedule"], values["schedule"]);
        } else {
            assert!(a.contains(&format!(
                "--descheduling-interval={}",
                values["deschedulingInterval"].as_str().unwrap()
            )));
        }
    }
}

/// The rendered container's arguments, with the policy's and the decision log's paths made
/// local, run by this binary on the shipped example snapshot: every flag is one it reads.
#[test]
fn the_rendered_arguments_are_the_binarys_own() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["CronJob", "Deployment"] {
        let (_, docs) = render(&[
            "--set",
            &format!("kind={kind}"),
            "--set",
            "leaderElection.enabled=true",
            "--set",
            "decisionLog.enabled=true",
            "--set",
            "decisionLog.snapshot=true",
        ]);
        let (text, _) = policy(&docs);
        let policy_file = dir.path().join(format!("{kind}-policy.yaml"));
        std::fs::write(&policy_file, text).unwrap();
        let log = dir.path().join(format!("{kind}-decisions"));
        let mut a: Vec<String> = args(of_kind(&docs, kind))
            .into_iter()
            .map(|x| {
                x.replace("/policy-dir/policy.yaml", policy_file.to_str().unwrap())
                    .replace("/var/lib/descheduler/decisions", log.to_str().unwrap())
            })
            .collect();
        a.extend(
            [
                "--snapshot",
                "examples/cluster-hotspot.yaml",
                "--now",
                "2026-12-01T00:00:00Z",
                "-o",
                "json",
            ]
            .map(String::from),
        );
        let out = std::process::Command::new(bin())
            .args(&a)
            .env("DESCHEDULER_SECURE_PORT", "0")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind}: {a:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let records = descheduler::app::decision_log::read_all(&log).unwrap();
        assert_eq!(records.len(), 1, "{kind}: one cycle, one record");
        assert!(records[0].1.snapshot.is_some());
    }
}

#[tokio::test]
async fn the_rendered_objects_are_accepted_by_the_api_server() {
    let cluster = shared();
    for extra in [
        vec![],
        vec![
            "--set",
            "kind=Deployment",
            "--set",
            "replicas=2",
            "--set",
            "leaderElection.enabled=true",
            "--set",
            "service.enabled=true",
            "--set",
            "decisionLog.enabled=true",
            "--set",
            "podDisruptionBudget.enabled=true",
            "--set",
            "schedulerName=default-scheduler",
            "--set",
            "runtimeClassName=gvisor",
            "--set",
            "surge.enabled=true",
        ],
    ] {
        let (text, docs) = render(&extra);
        assert!(docs.len() >= 5);
        let (ok, out) = kubectl_run(
            cluster.kubeconfig(),
            &["apply", "--server-side", "--dry-run=server", "-f", "-"],
            Some(&text),
        )
        .await;
        assert!(ok, "server-side dry-run apply {extra:?}: {out}");
        for d in &docs {
            let name = d["metadata"]["name"].as_str().unwrap();
            assert!(
                out.contains(name),
                "{} {name} not in the apply's output: {out}",
                d["kind"]
            );
        }
    }
}
