//! Kubeconfigs as kubectl reads them, and their errors without their secrets: every kind of
//! broken kubeconfig, with distinct secrets planted in it, run through the binary and the
//! kubectl plugin at the highest verbosity; no secret may appear on stdout or stderr, and
//! the message names the file (and the line where there is one). No cluster is needed:
//! each run fails before its first request, or plans a snapshot offline.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const SECRETS: &[&str] = &[
    "TOKEN-7f3a9c",
    "PASSWORD-51be02",
    "S0VZLURBVEEtOWQ0NGUx",   // client-key-data
    "Q0VSVC1EQVRBLTJhYjc3Ng", // client-certificate-data
    "EXECENV-83c1d5",
    "EXECARG-c0ffee",
    "PROVIDER-aa19e4",
    "STDOUT-6d02b8",
];

/// A kubeconfig with every kind of secret; `user_extra` goes under the user.
fn kubeconfig(user_extra: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
current-context: c
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: c
  context:
    cluster: c
    user: u
users:
- name: u
  user:
    token: TOKEN-7f3a9c
    username: admin
    password: PASSWORD-51be02
    client-key-data: S0VZLURBVEEtOWQ0NGUx
    client-certificate-data: Q0VSVC1EQVRBLTJhYjc3Ng
    auth-provider:
      name: oidc
      config:
        id-token: PROVIDER-aa19e4
{user_extra}"
    )
}

fn exec(command: &str) -> String {
    format!(
        "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: {command}
      args: [--secret, EXECARG-c0ffee]
      env:
      - name: SECRET_ENV
        value: EXECENV-83c1d5
      interactiveMode: Never
"
    )
}

/// A user with only an exec plugin (the other credentials would win over it).
fn exec_only(command: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
current-context: c
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: c
  context:
    cluster: c
    user: u
users:
- name: u
  user:
{}",
        exec(command)
    )
}

/// An executable script in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The binary (or, as `plugin`, the kubectl plugin) with `args`, logging everything.
fn run(dir: &Path, plugin: bool, args: &[&str], env: &[(&str, &str)]) -> Output {
    let program = if plugin {
        let link = dir.join("kubectl-descheduler");
        if !link.exists() {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_descheduler"), &link).unwrap();
        }
        link
    } else {
        PathBuf::from(env!("CARGO_BIN_EXE_descheduler"))
    };
    let mut c = Command::new(program);
    c.args(args)
        .current_dir(root())
        .env_remove("KUBECONFIG")
        .env("HOME", dir)
        .env("RUST_LOG", "trace")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes: a full pipe would stop the program.
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = pipe.read_to_end(&mut all);
            all
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!(
                "{args:?}: still running after 60 s: {}",
                String::from_utf8_lossy(&stderr.join().unwrap())
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

const POLICY: &str = "policies/lifecycle.yaml";

#[test]
fn no_kubeconfig_error_shows_a_secret_at_any_verbosity() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let failing = script(
        d,
        "failing-plugin",
        "echo 'STDOUT-6d02b8'; echo \"$SECRET_ENV\" >&2; exit 3",
    );
    let garbage = script(d, "garbage-plugin", "echo '{\"token\": STDOUT-6d02b8 ]]'");
    let base = kubeconfig("");
    let cases: Vec<(&str, String, Option<u32>, &str)> = vec![
        (
            "duplicate key",
            base.replace(
                "    password: PASSWORD-51be02\n",
                "    password: PASSWORD-51be02\n    token: TOKEN-7f3a9c\n",
            ),
            Some(19),
            "a key given twice",
        ),
        (
            "bad indentation",
            base.replace(
                "    password: PASSWORD-51be02\n",
                "   password: PASSWORD-51be02\n",
            ),
            Some(18),
            "not valid YAML",
        ),
        (
            "wrong type",
            base.replace("    token: TOKEN-7f3a9c\n", "    token: [TOKEN-7f3a9c]\n"),
            Some(16),
            "wrong type",
        ),
        (
            "unknown context",
            base.replace("current-context: c", "current-context: nowhere"),
            None,
            "nowhere",
        ),
        (
            "missing file referenced",
            base.replace(
                "    client-key-data: S0VZLURBVEEtOWQ0NGUx\n",
                "    client-key: /nonexistent/key.pem\n",
            )
            .replace(
                "    client-certificate-data: Q0VSVC1EQVRBLTJhYjc3Ng\n",
                "    client-certificate: /nonexistent/cert.pem\n",
            ),
            None,
            "/nonexistent/",
        ),
        (
            "exec plugin that fails",
            exec_only(failing.to_str().unwrap()),
            None,
            "exit status: 3",
        ),
        (
            "exec plugin that prints garbage",
            exec_only(garbage.to_str().unwrap()),
            None,
            "not an ExecCredential",
        ),
        (
            "exec plugin that is missing",
            exec_only("/nonexistent/credential-plugin"),
            None,
            "could not be started",
        ),
    ];
    for (what, text, line, says) in cases {
        let kc = d.join(format!("{}.kubeconfig", what.replace(' ', "-")));
        std::fs::write(&kc, &text).unwrap();
        let kc = kc.to_str().unwrap();
        let policy = root().join(POLICY);
        let runs = [
            (
                false,
                vec![
                    "--policy-config-file",
                    POLICY,
                    "--kubeconfig",
                    kc,
                    "--secure-port=0",
                    "--dry-run",
                    "-v",
                    "10",
                ],
                vec![],
            ),
            // Through KUBECONFIG, as most users give it.
            (
                false,
                vec![
                    "--policy-config-file",
                    POLICY,
                    "--secure-port=0",
                    "--dry-run",
                    "--v=10",
                ],
                vec![("KUBECONFIG", kc)],
            ),
            (true, vec!["plan", "--kubeconfig", kc, "-v", "10"], vec![]),
            (
                true,
                vec![
                    "plan",
                    "--policy-config-file",
                    policy.to_str().unwrap(),
                    "-v",
                    "10",
                ],
                vec![("KUBECONFIG", kc)],
            ),
        ];
        for (plugin, args, env) in runs {
            let out = run(d, plugin, &args, &env);
            let shown = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let name = if plugin { "plugin" } else { "descheduler" };
            // A kubeconfig that cannot be used is bad input; a plugin that fails is not.
            let code = if what.starts_with("exec") { 1 } else { 2 };
            assert_eq!(out.status.code(), Some(code), "{what} ({name}): {shown}");
            for secret in SECRETS {
                assert!(
                    !shown.contains(secret),
                    "{what} ({name}): {secret} shown:\n{shown}"
                );
            }
            assert!(
                shown.contains(kc),
                "{what} ({name}) names the file: {shown}"
            );
            if let Some(line) = line {
                assert!(
                    shown.contains(&format!("line {line},")),
                    "{what} ({name}) names the line: {shown}"
                );
            }
            assert!(shown.contains(says), "{what} ({name}): {shown}");
        }
    }
}

#[test]
fn kubeconfig_lists_follow_kubectls_rules() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policy = root().join(POLICY);
    let snapshot = root().join("examples/cluster-hotspot.yaml");
    let offline = [
        "--policy-config-file",
        POLICY,
        "--snapshot",
        snapshot.to_str().unwrap(),
        "--now",
        "2026-12-01T00:00:00Z",
    ];
    // An empty KUBECONFIG is no KUBECONFIG: an offline run runs.
    let out = run(d, false, &offline, &[("KUBECONFIG", "")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Missing files and empty entries are skipped; the first file that exists is read
    // (its broken YAML proves it was read, and that the list got that far).
    let broken = d.join("broken");
    std::fs::write(&broken, "users: [\n").unwrap();
    let missing = d.join("missing");
    let list = format!("{}::{}", missing.display(), broken.display());
    for plugin in [false, true] {
        let args: Vec<&str> = if plugin {
            vec!["plan", "--policy-config-file", policy.to_str().unwrap()]
        } else {
            vec![
                "--policy-config-file",
                POLICY,
                "--secure-port=0",
                "--dry-run",
            ]
        };
        let out = run(d, plugin, &args, &[("KUBECONFIG", &list)]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "bad input: {err}");
        assert!(
            err.contains(&format!("{}: line", broken.display())),
            "{plugin}: {err}"
        );
        // None of the files exists: said so.
        let none = format!("{}:", missing.display());
        let out = run(d, plugin, &args, &[("KUBECONFIG", &none)]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("KUBECONFIG names no file that exists"),
            "{plugin}: {err}"
        );
        assert!(err.contains("missing"), "{plugin}: {err}");
    }
}

#[test]
fn the_plugin_reads_no_descheduler_environment_variables() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policy = root().join(POLICY);
    let snapshot = root().join("examples/cluster-hotspot.yaml");
    let log = d.join("decisions");
    // A kubeconfig pointing at nothing that listens: the plan must try the cluster (and
    // fail at once), not loop on a schedule, plan the snapshot, nor keep records.
    let kc = d.join("kc");
    std::fs::write(&kc, exec_only("x").replace(&exec("x"), "    token: t\n")).unwrap();
    let out = run(
        d,
        true,
        &[
            "plan",
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--request-timeout=5s",
        ],
        &[
            ("DESCHEDULER_SCHEDULE", "* * * * *"),
            ("DESCHEDULER_DESCHEDULING_INTERVAL", "1m"),
            ("DESCHEDULER_SNAPSHOT", snapshot.to_str().unwrap()),
            ("DESCHEDULER_DECISION_LOG", log.to_str().unwrap()),
            ("DESCHEDULER_DRY_RUN", "false"),
            ("DESCHEDULER_OUTPUT", "yaml"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    // Against the cluster (nothing there), once.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("https://127.0.0.1:1"), "{err}");
    assert!(out.stdout.is_empty(), "no plan of the snapshot");
    assert!(!log.exists(), "no decision log");
}
