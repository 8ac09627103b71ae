//! The descheduler binary run by tests: to its end ([`run_bin`]), or in the background with
//! its stdout and stderr collected as it runs ([`Descheduler`]: continuous mode, leader
//! election).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

/// How a descheduler run to its end ended.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// What the processes of the tests get for `--secure-port` unless their arguments say
/// otherwise: no HTTPS server (tests run side by side; upstream's port 10258 is one port).
pub const NO_SECURE_PORT: &str = "0";

/// Runs the binary with `args` to its end (no RUST_LOG, no KUBECONFIG from the environment).
pub async fn run_bin(args: &[&str]) -> Run {
    let mut command = tokio::process::Command::new(super::bin());
    command
        .args(args)
        .env_remove("KUBECONFIG")
        .env("DESCHEDULER_SECURE_PORT", NO_SECURE_PORT);
    run(command).await
}

/// Runs the binary to its end as [`Descheduler::spawn_deployed`] starts it.
pub async fn run_deployed(args: &[String], kubeconfig: &std::path::Path) -> Run {
    run(deployed(args, kubeconfig)).await
}

/// The binary with `args` and `kubeconfig`, and none of the descheduler's variables from
/// this environment.
fn deployed(args: &[String], kubeconfig: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(super::bin());
    command.args(args).env("KUBECONFIG", kubeconfig);
    for (name, _) in std::env::vars() {
        if name.starts_with("DESCHEDULER_") {
            command.env_remove(name);
        }
    }
    command
}

async fn run(mut command: tokio::process::Command) -> Run {
    let out = command.env_remove("RUST_LOG").output().await.unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The arguments of a replica that runs continuous cycles every `interval` with leader
/// election on Lease `namespace/lease` as `id` (lease 3 s, renew deadline 2 s, retry every
/// 500 ms: a handover within seconds), JSON reports, and `more`.
pub fn leader_elected(
    policy: &std::path::Path,
    kubeconfig: &std::path::Path,
    interval: &str,
    (namespace, lease): (&str, &str),
    id: &str,
    more: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--descheduling-interval",
        interval,
        "--leader-elect",
        "--leader-elect-resource-namespace",
        namespace,
        "--leader-elect-resource-name",
        lease,
        "--leader-elect-identity",
        id,
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=500ms",
        "-o",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(more.iter().map(|s| s.to_string()));
    args
}

pub struct Descheduler {
    child: tokio::process::Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

/// Collects a pipe's lines into a string as they come.
fn collect(pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let sink = out.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(pipe).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    out
}

impl Descheduler {
    /// Starts the binary with `args` (no RUST_LOG, no KUBECONFIG from the environment); it
    /// is killed when dropped.
    pub fn spawn(args: &[&str]) -> Descheduler {
        let mut command = tokio::process::Command::new(super::bin());
        command
            .args(args)
            .env_remove("KUBECONFIG")
            .env("DESCHEDULER_SECURE_PORT", NO_SECURE_PORT);
        Descheduler::start(command)
    }

    /// Starts the binary as a pod of `kubeconfig`'s account would run it with `args`:
    /// nothing else set (the port of `--secure-port` is the arguments' own or the default).
    pub fn spawn_deployed(args: &[String], kubeconfig: &std::path::Path) -> Descheduler {
        Descheduler::start(deployed(args, kubeconfig))
    }

    fn start(mut command: tokio::process::Command) -> Descheduler {
        let mut child = command
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Descheduler {
            child,
            stdout,
            stderr,
        }
    }

    /// What it printed so far.
    pub fn output(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    /// What it logged so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Its exit status, if it exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kills it with SIGKILL (a crash, an OOM kill, a node lost) and waits for its end.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }

    /// Sends SIGTERM and waits for the exit code.
    pub async fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id().unwrap().to_string();
        let status = tokio::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .unwrap();
        assert!(status.success());
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("exits after SIGTERM")
            .unwrap()
            .code()
    }
}
