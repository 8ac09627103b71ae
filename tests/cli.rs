//! The binary as users run it: exit codes, messages and output formats.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_descheduler"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

const SNAP: &str = "examples/cluster-hotspot.yaml";
const NOW: &str = "2026-12-01T00:00:00Z";

#[test]
fn plans_the_example_and_exits_zero() {
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ev = v["evictions"].as_array().unwrap();
    assert!(!ev.is_empty());
    for e in ev {
        for k in ["pod", "node", "profile", "plugin", "reason"] {
            assert!(e[k].is_string(), "eviction field {k} missing: {e}");
        }
    }
    for n in v["nodes"].as_array().unwrap() {
        assert!(
            n["before"]["cpu"].is_number() && n["after"]["cpu"].is_number(),
            "{n}"
        );
    }
}

#[test]
fn table_and_yaml_outputs() {
    let o = run(&[
        "--policy-config-file",
        "policies/lownodeutilization.yaml",
        "--snapshot",
        SNAP,
        "--now",
        NOW,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("Planned evictions:"), "{out}");
    assert!(out.contains("node-a1"), "{out}");
    assert!(out.contains("->"), "before -> after expected: {out}");
    let o = run(&[
        "--policy-config-file",
        "policies/lownodeutilization.yaml",
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "-o",
        "yaml",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value =
        serde_saphyr::from_str(&String::from_utf8(o.stdout).unwrap()).unwrap();
    assert!(v["evictions"].is_array());
}

#[test]
fn nothing_to_evict_still_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: LowNodeUtilization\n    args: {thresholds: {cpu: 1}, targetThresholds: {cpu: 99}}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n",
    )
    .unwrap();
    let o = run(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["evictions"].as_array().unwrap().len(), 0);
}

#[test]
fn invalid_policy_exits_two_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("bad.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: LowNodeUtilization\n    args: {thresholds: {cpu: 120}, targetThresholds: {cpu: 150}}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n",
    )
    .unwrap();
    let o = run(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--snapshot",
        SNAP,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.yaml"), "{e}");
    assert!(
        e.contains("profiles[0].pluginConfig[0].args.thresholds.cpu"),
        "{e}"
    );
    assert!(e.contains("[0, 100]"), "{e}");
    assert!(
        o.stdout.is_empty(),
        "nothing is planned on an invalid policy"
    );

    std::fs::write(&policy, "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n  pluginConfig:\n  - name: PodLifeTime\n").unwrap();
    let o = run(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--snapshot",
        SNAP,
    ]);
    // upstream: PodLifeTime without any criterion is invalid
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("profiles[0].pluginConfig[0].args"), "{e}");
    assert!(e.contains("PodLifeTime"), "{e}");
    assert!(e.contains("maxPodLifeTimeSeconds"), "{e}");
    assert!(!e.contains("does not implement yet"), "{e}");
    assert!(
        o.stdout.is_empty(),
        "nothing is planned on an invalid policy"
    );

    let o = run(&[
        "--policy-config-file",
        "does-not-exist.yaml",
        "--snapshot",
        SNAP,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does-not-exist.yaml"));
}

#[test]
fn broken_snapshot_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("broken.json");
    std::fs::write(&snap, r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":"lots"}}}]}"#).unwrap();
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        snap.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("broken.json") && e.contains("Node n") && e.contains("status.allocatable.cpu"),
        "{e}"
    );
    std::fs::write(&snap, "{\"kind\": \"List\", \"items\": [").unwrap();
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        snap.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_flags_exit_two() {
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        SNAP,
        "--now",
        "yesterday",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--now"));
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--output",
        "xml",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn live_mode_without_a_reachable_cluster_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    // A cluster nobody serves: a port on loopback that refuses connections.
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
    )
    .unwrap();
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--secure-port=0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // A kubeconfig that is not there is bad input, named with its flag.
    let missing = dir.path().join("no-such-kubeconfig");
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--kubeconfig",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("no-such-kubeconfig") && e.contains("--kubeconfig"),
        "{e}"
    );
}

#[test]
fn bad_live_flags_exit_two() {
    for args in [
        &["--schedule", "*/5 * * *"][..],
        &["--schedule", "* * * * *", "--descheduling-interval", "5m"][..],
        &[
            "--leader-elect",
            "--leader-elect-resource-lock",
            "configmaps",
        ][..],
        &["--metrics-bind-address", "nowhere"][..],
        // Cycles on change need an interval (the longest wait), not one cycle nor a cron.
        &["--cycle-on-change"][..],
        &["--cycle-on-change", "--schedule", "*/5 * * * *"][..],
        &[
            "--cycle-on-change",
            "--descheduling-interval",
            "10m",
            "--min-cycle-gap",
            "soon",
        ][..],
    ] {
        let mut all = vec!["--policy-config-file", "policies/combined.yaml"];
        all.extend_from_slice(args);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

#[cfg(unix)]
#[test]
fn an_endless_input_is_an_error_not_a_read_until_memory_runs_out() {
    let o = run(&["--policy-config-file", "/dev/zero", "--snapshot", SNAP]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/dev/zero") && stderr(&o).contains("NUL"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        "/dev/zero",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/dev/zero") && stderr(&o).contains("NUL"),
        "{}",
        stderr(&o)
    );
}

/// Rates and durations are checked before anything runs: tiny rates panicked (exit 101),
/// NaN and inf meant unlimited, a lease duration past an int32 was truncated.
#[test]
fn numbers_out_of_range_are_refused() {
    for (flag, value) in [
        ("--eviction-qps", "1e-300"),
        ("--node-eviction-qps", "1e-320"),
        ("--client-connection-qps", "5e-324"),
        ("--eviction-qps", "NaN"),
        ("--eviction-qps", "inf"),
        ("--node-eviction-qps", "-1"),
        ("--leader-elect-lease-duration", "2562047h"),
        ("--leader-elect-retry-period", "0"),
        ("--leader-elect-renew-deadline", "20s"),
        ("--descheduling-interval", "2562048h"),
    ] {
        let arg = format!("{flag}={value}");
        let o = run(&[
            "--policy-config-file",
            "policies/combined.yaml",
            "--snapshot",
            SNAP,
            &arg,
        ]);
        assert_eq!(o.status.code(), Some(2), "{arg}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{arg}: {}", stderr(&o));
    }
}

/// `--kube-api-content-type` takes the two encodings the live path reads, and names them
/// when given another.
#[test]
fn an_unknown_api_content_type_is_refused_with_the_choices() {
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        SNAP,
        "--kube-api-content-type",
        "application/yaml",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    for want in [
        "--kube-api-content-type",
        "application/vnd.kubernetes.protobuf",
        "application/json",
    ] {
        assert!(stderr(&o).contains(want), "{want}: {}", stderr(&o));
    }
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        SNAP,
        "--kube-api-content-type=application/json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The destination predicted for one pod in a JSON report.
fn destination_of(o: &Output, pod: &str) -> String {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = v["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["pod"] == pod)
        .unwrap_or_else(|| panic!("{pod} not planned: {v}"));
    e["destination"].as_str().unwrap_or("-").to_string()
}

#[test]
fn a_scheduler_config_scores_destinations_as_that_scheduler_and_bad_ones_exit_two() {
    let base = [
        "--policy-config-file",
        "policies/lownodeutilization.yaml",
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "--predict-destinations",
        "-o",
        "json",
    ];
    let pod = "shop/api-7c9d8f6b4-b8d2f";
    let default = run(&base);
    assert_eq!(default.status.code(), Some(0), "{}", stderr(&default));
    // kube-scheduler's default profile (LeastAllocated) spreads to the emptier node-b2
    assert_eq!(destination_of(&default, pod), "node-b2");
    // the example profile packs (MostAllocated, weight 5): back to the fuller node-a1, its
    // own node, so the eviction would change nothing and is not planned
    let mut args = base.to_vec();
    args.extend(["--scheduler-config", "examples/scheduler-config.yaml"]);
    let packed = run(&args);
    assert_eq!(packed.status.code(), Some(0), "{}", stderr(&packed));
    let v: serde_json::Value = serde_json::from_slice(&packed.stdout).unwrap();
    assert!(
        v["evictions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["pod"] != pod),
        "{v}"
    );
    let why = v["notChosen"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["pod"] == pod)
        .unwrap_or_else(|| panic!("{pod} not among the candidates not chosen: {v}"));
    assert!(
        why["reason"]
            .as_str()
            .unwrap()
            .starts_with("its replacement is predicted to land back on its own node node-a1"),
        "{why}"
    );
    // a profile the file does not have
    let mut args = base.to_vec();
    args.extend([
        "--scheduler-config",
        "examples/scheduler-config.yaml",
        "--scheduler-name",
        "batch",
    ]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("scheduler config examples/scheduler-config.yaml: profiles: no profile has schedulerName \"batch\" (there are: default-scheduler)"),
        "{}",
        stderr(&o)
    );
    // a bad field: the file, the field's path and the fix
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("sched.yaml");
    std::fs::write(
        &bad,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Fancy}}\n",
    )
    .unwrap();
    let mut args = base.to_vec();
    let bad_path = bad.display().to_string();
    args.extend(["--scheduler-config", &bad_path]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("scheduler config {bad_path}: profiles[0].pluginConfig[0].args.scoringStrategy.type: \"Fancy\" is not a scoring strategy; use LeastAllocated, MostAllocated or RequestedToCapacityRatio")),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty(), "nothing is planned on a bad file");
}

/// One candidate's nodeFit "why not" over 2,000 nodes with a taint each is about 120,000
/// characters: the table cut it (a width past 65,535 panicked, exit 101, in every cycle of
/// a live run); the JSON carries it whole.
#[test]
fn a_why_not_wider_than_sixty_four_kilobytes_prints_cut_in_the_table() {
    use serde_json::json;
    let ready = json!({
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}]
    });
    let mut items = vec![json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "web"}, "status": {"phase": "Active"}
    })];
    for i in 0..2_000 {
        let name = format!("node-{i:04}");
        // The pod's node has no taint; every other has one of its own.
        let spec = if i == 0 {
            json!({})
        } else {
            json!({"taints": [{"key": format!("dedicated-{i:04}"), "value": format!("team-{i:04}"),
                               "effect": "NoSchedule"}]})
        };
        items.push(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name},
                         "creationTimestamp": "2026-10-01T00:00:00Z"},
            "spec": spec, "status": ready
        }));
    }
    items.push(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "old", "namespace": "web", "uid": "u-old",
                     "creationTimestamp": "2026-11-01T00:00:00Z",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                          "name": "web-1", "uid": "rs", "controller": true}]},
        "spec": {"nodeName": "node-0000",
                 "containers": [{"name": "main", "image": "web",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
        "status": {"phase": "Running", "startTime": "2026-11-01T00:00:00Z",
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }));
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}});
    std::fs::write(&cluster, serde_json::to_vec(&list).unwrap()).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n  - name: old\n    \
         pluginConfig:\n      - name: DefaultEvictor\n        args: {nodeFit: true}\n      \
         - name: PodLifeTime\n        args: {maxPodLifeTimeSeconds: 3600}\n    plugins:\n      \
         deschedule:\n        enabled: [PodLifeTime]\n",
    )
    .unwrap();
    let args = [
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--snapshot",
        cluster.to_str().unwrap(),
        "--now",
        NOW,
    ];
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("Candidates not chosen:"), "{table}");
    let line = table
        .lines()
        .find(|l| l.starts_with("web/old "))
        .unwrap_or_else(|| panic!("the candidate's row: {table}"));
    assert!(line.contains("(nodeFit): 0/1999 nodes are available: 1 node(s) had untolerated taint {dedicated-0001: team-0001}"), "{line}");
    assert!(line.ends_with('\u{2026}'), "{line}");
    assert!(
        line.chars().count() < 400,
        "{} characters",
        line.chars().count()
    );
    assert!(
        table.contains("-o json, -o yaml and -o html have the full text"),
        "{table}"
    );

    let o = run(&[&args[..], &["-o", "json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let why = json["notChosen"][0]["reason"].as_str().unwrap();
    assert!(why.len() > 65_535, "{} bytes", why.len());
    assert!(
        why.ends_with("1 node(s) had untolerated taint {dedicated-1999: team-1999}"),
        "{}",
        &why[why.len() - 200..]
    );
    assert!(line.starts_with("web/old "));
    let cell = line[line.find("pod does not fit").unwrap()..].trim_end_matches('\u{2026}');
    assert!(
        why.starts_with(cell),
        "the table's cell is the start of the reason"
    );
}

/// Flags whose values cannot work are refused at start, in every mode: offline too, before
/// the policy or the snapshot is read.
#[test]
fn every_flag_value_is_checked_offline_too() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such.pem");
    let missing = missing.to_str().unwrap();
    let key = dir.path().join("key.pem");
    std::fs::write(&key, "not used").unwrap();
    let key = format!("--tls-private-key-file={}", key.display());
    let tmp = dir.path().display().to_string();
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (
            vec!["--schedule=a b c d e".into()],
            "--schedule",
            "not a cron schedule",
        ),
        (
            vec!["--schedule=0 0 30 2 *".into()],
            "--schedule",
            "never fires",
        ),
        (
            vec!["--schedule=0 0 31 4 *".into()],
            "--schedule",
            "never fires",
        ),
        (
            vec!["--descheduling-interval=500ms".into()],
            "--descheduling-interval",
            "shorter than a second",
        ),
        (
            vec!["--cycle-debounce=soon".into()],
            "--cycle-debounce",
            "not a duration",
        ),
        (
            vec!["--cycle-on-change".into()],
            "--cycle-on-change",
            "give --descheduling-interval",
        ),
        (
            vec!["--cache-sync-timeout=soon".into()],
            "--cache-sync-timeout",
            "not a duration",
        ),
        (
            vec!["--cache-sync-timeout=0".into()],
            "--cache-sync-timeout",
            "more than 0",
        ),
        (
            vec!["--await-placement-timeout=-5m".into()],
            "--await-placement-timeout",
            "negative",
        ),
        (
            vec!["--eviction-cooldown=10".into()],
            "--eviction-cooldown",
            "without a unit",
        ),
        (
            vec!["--metrics-bind-address=not-an-address".into()],
            "--metrics-bind-address",
            "host:port",
        ),
        (
            vec!["--leader-elect-resource-lock=configmaps".into()],
            "--leader-elect-resource-lock",
            "leases",
        ),
        (
            vec!["--leader-elect-resource-namespace=Kube_System".into()],
            "--leader-elect-resource-namespace",
            "namespace",
        ),
        (
            vec!["--decision-log-max-bytes=lots".into()],
            "--decision-log-max-bytes",
            "positive size",
        ),
        (
            vec!["--decision-log-snapshot".into()],
            "--decision-log-snapshot",
            "--decision-log DIR",
        ),
        (
            vec![format!("--tls-cert-file={missing}"), key.clone()],
            "--tls-cert-file",
            "no such file",
        ),
        (
            vec![format!("--tls-cert-file={tmp}"), key.clone()],
            "--tls-cert-file",
            "a directory",
        ),
        (
            vec![format!("--scheduler-config={missing}")],
            "--scheduler-config",
            "no such file",
        ),
        (
            vec![format!("--scheduler-config={tmp}")],
            "--scheduler-config",
            "a directory",
        ),
    ];
    for (extra, flag, says) in cases {
        let mut args: Vec<String> = [
            "--policy-config-file",
            "policies/combined.yaml",
            "--snapshot",
            SNAP,
            "--now",
            NOW,
        ]
        .map(String::from)
        .to_vec();
        args.extend(extra.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {e}");
        assert!(e.contains(flag) && e.contains(says), "{extra:?}: {e}");
        assert!(o.stdout.is_empty(), "{extra:?}: nothing is planned");
    }
    // A missing snapshot or policy file: exit 2, naming the flag and the file.
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        missing,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("--snapshot {missing}: no such file")),
        "{}",
        stderr(&o)
    );
    let o = run(&["--policy-config-file", missing, "--snapshot", SNAP]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("--policy-config-file {missing}: no such file")),
        "{}",
        stderr(&o)
    );
}

/// In live mode too: a TLS certificate that is not there is bad input (2), found before any
/// connection is tried, not a failure to serve (1).
#[test]
fn a_missing_tls_certificate_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("tls.crt");
    let key = dir.path().join("tls.key");
    std::fs::write(&key, "key").unwrap();
    let o = run(&[
        "--policy-config-file",
        "policies/combined.yaml",
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-private-key-file",
        key.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--tls-cert-file") && e.contains("tls.crt"),
        "{e}"
    );
}

/// A scheduler config kube-scheduler would refuse is refused here too, with the field's path.
#[test]
fn a_scheduler_config_with_a_misspelled_key_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("sched.yaml");
    std::fs::write(
        &bad,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategey: {type: MostAllocated}}\n",
    )
    .unwrap();
    let bad_path = bad.display().to_string();
    let o = run(&[
        "--policy-config-file",
        "policies/lownodeutilization.yaml",
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "--scheduler-config",
        &bad_path,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("scheduler config {bad_path}: profiles[0].pluginConfig[0].args.scoringStrategey: \"scoringStrategey\" is not a field of NodeResourcesFit's args; did you mean \"scoringStrategy\"?")),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
}

/// `--feature-gates` in upstream's syntax: the gates upstream v0.36 knows are taken, any
/// other gate or a value that is not a boolean is refused with the flag, the gate and the fix.
#[test]
fn feature_gates_are_upstreams_and_unknown_ones_exit_two() {
    let base = [
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        SNAP,
        "--now",
        NOW,
        "-o",
        "json",
    ];
    let with = |gates: &str| run(&[&base[..], &[gates]].concat());
    for ok in [
        "--feature-gates=EvictionsInBackground=true",
        "--feature-gates=EvictionsInBackground=false,AllAlpha=false",
        "--feature-gates=AllAlpha=true",
    ] {
        let o = with(ok);
        assert_eq!(o.status.code(), Some(0), "{ok}: {}", stderr(&o));
        assert!(
            !stderr(&o).contains("no effect here"),
            "{ok}: {}",
            stderr(&o)
        );
    }
    let o = with("--feature-gates=EvictionsInBackground=true,SomeGate=true");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--feature-gates")
            && err.contains("unknown feature gate \"SomeGate\"")
            && err.contains("EvictionsInBackground (ALPHA, default=false)"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "nothing planned on a bad flag");
    let o = with("--feature-gates=EvictionsInBackground=on");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the value of EvictionsInBackground is \"on\", not a boolean"),
        "{}",
        stderr(&o)
    );
}

/// With EvictionsInBackground on, a pod whose eviction in the background is in progress (its
/// two annotations, as KubeVirt leaves them) is not planned again and counts against the
/// limits, offline as live; with the gate off, it is a pod like any other.
#[test]
fn an_eviction_in_the_background_in_progress_counts_against_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 2
profiles:
  - name: default
    pluginConfig:
      - name: PodLifeTime
        args:
          maxPodLifeTimeSeconds: 60
    plugins:
      deschedule:
        enabled: [PodLifeTime]
"#,
    )
    .unwrap();
    let pod = |name: &str, annotations: &str| {
        format!(
            r#"- apiVersion: v1
  kind: Pod
  metadata:
    name: {name}
    namespace: vms
    uid: uid-{name}
    creationTimestamp: "2026-11-01T00:00:00Z"
    annotations: {{{annotations}}}
    ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: rs1, controller: true}}]
  spec:
    nodeName: n1
    containers: [{{name: c, image: i}}]
  status:
    phase: Running
    startTime: "2026-11-01T00:00:00Z"
"#
        )
    };
    let snapshot = dir.path().join("snapshot.yaml");
    std::fs::write(
        &snapshot,
        format!(
            r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {{name: n1}}
  status:
    allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
    conditions: [{{type: Ready, status: "True"}}]
- apiVersion: v1
  kind: Node
  metadata: {{name: n2}}
  status:
    allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
    conditions: [{{type: Ready, status: "True"}}]
{}{}{}"#,
            pod(
                "vm-a",
                r#""descheduler.alpha.kubernetes.io/request-evict-only": "", "descheduler.alpha.kubernetes.io/eviction-in-progress": "kubevirt""#
            ),
            pod("vm-b", r#""descheduler.alpha.kubernetes.io/request-evict-only": """#),
            pod("vm-c", ""),
        ),
    )
    .unwrap();
    let planned = |gates: &[&str]| -> Vec<String> {
        let args = [
            &[
                "--policy-config-file",
                policy.to_str().unwrap(),
                "--snapshot",
                snapshot.to_str().unwrap(),
                "--now",
                NOW,
                "-o",
                "json",
            ][..],
            gates,
        ]
        .concat();
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["evictions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["pod"].as_str().unwrap().to_string())
            .collect()
    };
    // Gate off (upstream's default): the two oldest of three, as the limit per node allows.
    assert_eq!(planned(&[]), ["vms/vm-a", "vms/vm-b"]);
    // Gate on: vm-a is being evicted in the background: not planned, and it takes one of the
    // node's two evictions.
    assert_eq!(
        planned(&["--feature-gates=EvictionsInBackground=true"]),
        ["vms/vm-b"]
    );
}

/// A cluster of one Ready node (and one that is not Ready) with an old pod on it.
const ONE_NODE: &str = r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: only}
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: v1
  kind: Node
  metadata: {name: down}
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
    conditions: [{type: Ready, status: "False"}]
- apiVersion: v1
  kind: Pod
  metadata:
    name: old
    namespace: shop
    creationTimestamp: "2026-01-01T00:00:00Z"
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: u1, controller: true}]
  spec:
    nodeName: only
    containers: [{name: c, image: web}]
  status: {phase: Running}
"#;

const LIFETIME: &str = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: ages\n  pluginConfig:\n  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 3600}\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n";

#[test]
fn a_cluster_of_fewer_than_two_ready_nodes_plans_nothing_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(&policy, LIFETIME).unwrap();
    let one = dir.path().join("one.yaml");
    std::fs::write(&one, ONE_NODE).unwrap();
    let args = |snap: &std::path::Path, format: &'static str| {
        run(&[
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--snapshot",
            snap.to_str().unwrap(),
            "--now",
            NOW,
            "-o",
            format,
            "-v",
            "1",
        ])
    };
    let o = args(&one, "json");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["evictions"].as_array().unwrap().len(), 0, "{v}");
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n["message"].as_str().is_some_and(|m| m.starts_with(
            "The cluster size is 0 or 1 meaning eviction causes service disruption or degradation. So aborting.."
        ) && m.contains("1 Ready node(s)"))),
        "{v}"
    );
    // The log says it as upstream does.
    assert!(
        stderr(&o).contains("The cluster size is 0 or 1 meaning eviction causes service disruption or degradation. So aborting.."),
        "{}",
        stderr(&o)
    );
    let o = args(&one, "table");
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("Notes:\n- The cluster size is 0 or 1 meaning eviction"),
        "{table}"
    );
    // The same pod with the second node Ready: PodLifeTime plans its eviction.
    let two = dir.path().join("two.yaml");
    std::fs::write(
        &two,
        ONE_NODE.replace(
            "[{type: Ready, status: \"False\"}]",
            "[{type: Ready, status: \"True\"}]",
        ),
    )
    .unwrap();
    let o = args(&two, "json");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ev = v["evictions"].as_array().unwrap();
    assert_eq!(ev.len(), 1, "{v}");
    assert_eq!(ev[0]["pod"], "shop/old");
}
