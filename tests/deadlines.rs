//! The binary against API endpoints that misbehave as no real API server does, each served
//! by the test on loopback: one that accepts connections and never writes a byte (neither
//! a TLS handshake nor an HTTP answer), and one that answers `{}` to every request. Every
//! request has a deadline, SIGTERM ends a run that is only reading at once, and an answer
//! that is not a List is refused, never read as an empty cluster.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A listener that accepts every connection and holds it open, silent.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for conn in listener.incoming() {
            match conn {
                Ok(c) => held.push(c),
                Err(_) => return,
            }
        }
    });
    port
}

/// A plain HTTP server that answers every request with `body` (JSON, status 200).
fn answering_server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let Ok(n) = c.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if c.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    port
}

/// A kubeconfig in `dir` for `server`.
fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    path
}

fn descheduler(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_descheduler"));
    c.args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The binary under the kubectl plugin's name, in a directory of its own.
fn plugin(dir: &Path, args: &[&str]) -> Command {
    let link = dir.join("kubectl-descheduler");
    if !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_descheduler"), &link).unwrap();
    }
    let mut c = Command::new(link);
    c.args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits for `child` up to `limit`; kills it (and fails) past that.
fn wait_within(mut child: Child, limit: Duration, what: &str) -> (Output, Duration) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), started.elapsed());
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

const POLICY: &str = "policies/lifecycle.yaml";

/// A one-shot dry-run of [`POLICY`] against the cluster of `kubeconfig`, with `more` flags.
fn dry_run(kubeconfig: &Path, more: &[&str]) -> Command {
    let mut args = vec![
        "--policy-config-file",
        POLICY,
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--secure-port=0",
        "--dry-run",
    ];
    args.extend_from_slice(more);
    descheduler(&args)
}

#[test]
fn a_one_shot_run_against_a_silent_server_fails_within_the_request_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let port = silent_server();
    // https: the TLS handshake gets no answer; http: the request gets none.
    for scheme in ["https", "http"] {
        let server = format!("{scheme}://127.0.0.1:{port}");
        let kc = kubeconfig(dir.path(), &server);
        let child = dry_run(&kc, &["--request-timeout=2s"]).spawn().unwrap();
        let (out, took) = wait_within(child, Duration::from_secs(10), &server);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(took >= Duration::from_secs(2), "{server}: {took:?}: {err}");
        assert!(took < Duration::from_secs(6), "{server}: {took:?}: {err}");
        assert!(err.contains(&server), "{err}");
        assert!(err.contains("did not answer"), "{err}");
        assert!(err.contains("within 2 s"), "{err}");
    }
}

/// With the default request deadline (60 s), a server that takes the connection and never
/// begins the TLS handshake is given up on after client-go's 10 s, once: each of the list's
/// five tries used to wait for the server to drop the connection itself.
#[test]
fn a_server_that_does_not_speak_tls_is_given_up_on_after_the_handshake_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let port = silent_server();
    let server = format!("https://127.0.0.1:{port}");
    let kc = kubeconfig(dir.path(), &server);
    let child = dry_run(&kc, &[]).spawn().unwrap();
    let (out, took) = wait_within(child, Duration::from_secs(30), &server);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(took >= Duration::from_secs(10), "{took:?}: {err}");
    assert!(
        took < Duration::from_secs(20),
        "not tried again: {took:?}: {err}"
    );
    assert!(
        err.contains(&format!("{server} accepted the connection"))
            && err.contains("did not begin a TLS handshake within 10 s")
            && err.contains("HTTPS port"),
        "{err}"
    );
    assert!(!err.contains("trying again"), "{err}");
}

#[test]
fn sigterm_ends_a_run_that_is_waiting_for_the_cluster_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!("https://127.0.0.1:{}", silent_server());
    let kc = kubeconfig(dir.path(), &server);
    let kc = kc.to_str().unwrap();
    let policy_file = root().join(POLICY);
    let runs: Vec<(&str, Command)> = vec![
        (
            "one-shot",
            descheduler(&[
                "--policy-config-file",
                POLICY,
                "--kubeconfig",
                kc,
                "--secure-port=0",
            ]),
        ),
        (
            "continuous",
            descheduler(&[
                "--policy-config-file",
                POLICY,
                "--kubeconfig",
                kc,
                "--secure-port=0",
                "--descheduling-interval=5m",
            ]),
        ),
        (
            "kubectl descheduler plan",
            plugin(
                dir.path(),
                &[
                    "plan",
                    "--kubeconfig",
                    kc,
                    "--policy-config-file",
                    policy_file.to_str().unwrap(),
                ],
            ),
        ),
    ];
    for (what, mut command) in runs {
        let child = command.spawn().unwrap();
        std::thread::sleep(Duration::from_secs(1));
        sigterm(&child);
        let (out, took) = wait_within(child, Duration::from_secs(2), what);
        let err = stderr(&out);
        assert!(!err.contains("eviction in flight"), "{what}: {err}");
        if what == "continuous" {
            // A Deployment's pod stopped: as on any SIGTERM.
            assert_eq!(out.status.code(), Some(0), "{what}: {err}");
        } else {
            // The one cycle did not happen.
            assert_eq!(out.status.code(), Some(1), "{what}: {err}");
            assert!(err.contains("stopped by SIGTERM"), "{what}: {err}");
        }
        assert!(took < Duration::from_secs(2), "{what}: {took:?}");
    }
}

#[test]
fn the_kubectl_plugin_gives_up_on_a_silent_server_within_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!("https://127.0.0.1:{}", silent_server());
    let kc = kubeconfig(dir.path(), &server);
    let policy = root().join(POLICY);
    // The ConfigMap read, and the cycle's lists.
    for extra in [
        &[][..],
        &["--policy-config-file", policy.to_str().unwrap()][..],
    ] {
        let mut args = vec![
            "plan",
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--request-timeout=2s",
        ];
        args.extend_from_slice(extra);
        let child = plugin(dir.path(), &args).spawn().unwrap();
        let (out, took) = wait_within(child, Duration::from_secs(10), "plan");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(took < Duration::from_secs(6), "{took:?}: {err}");
        assert!(err.contains(&server), "{err}");
        assert!(err.contains("did not answer"), "{err}");
    }
}

#[test]
fn continuous_mode_gives_up_on_the_first_list_within_the_cache_sync_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = format!("https://127.0.0.1:{}", silent_server());
    let kc = kubeconfig(dir.path(), &server);
    let mut child = descheduler(&[
        "--policy-config-file",
        POLICY,
        "--kubeconfig",
        kc.to_str().unwrap(),
        "--secure-port=0",
        "--descheduling-interval=1h",
        "--cache-sync-timeout=3s",
    ])
    .spawn()
    .unwrap();
    // The cycle is skipped with an error naming the server; the process waits for the next
    // cycle (it neither exits nor spins).
    let started = Instant::now();
    let mut err = String::new();
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = pipe.read_to_string(&mut all);
        all
    });
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        child.try_wait().unwrap().is_none(),
        "continuous mode keeps running"
    );
    sigterm(&child);
    let status = child.wait().unwrap();
    err.push_str(&reader.join().unwrap());
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(started.elapsed() < Duration::from_secs(8), "{err}");
    assert!(err.contains("did not sync within 3 s"), "{err}");
    assert!(err.contains(&server), "{err}");
    assert_eq!(
        err.matches("cannot read the cluster").count(),
        1,
        "one failed cycle, then a wait: {err}"
    );
}

#[test]
fn a_list_answer_that_is_not_a_list_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for body in [
        "{}",
        r#"{"kind":"Status","apiVersion":"v1"}"#,
        r#"{"kind":"PodList","apiVersion":"v1","metadata":{}}"#,
    ] {
        let server = format!("http://127.0.0.1:{}", answering_server(body));
        let kc = kubeconfig(dir.path(), &server);
        let child = dry_run(&kc, &["-o", "json"]).spawn().unwrap();
        let (out, _) = wait_within(child, Duration::from_secs(20), body);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{body}: {err}");
        assert!(out.stdout.is_empty(), "no plan from it: {body}");
        // Named by resource and server.
        assert!(err.contains(&format!("list of {server}")), "{body}: {err}");
        assert!(
            err.contains("not a list") || err.contains("a Status"),
            "{body}: {err}"
        );
    }
}
