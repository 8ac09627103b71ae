//! Snapshots that arrive through a pipe (`kubectl get ... -o json | descheduler --snapshot
//! /dev/stdin`, a process substitution, a FIFO) plan as the file of the same bytes; inputs
//! that would take all memory or read for ever are refused with exit 2.
#![cfg(target_os = "linux")]

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const POLICY: &str = "policies/combined.yaml";
/// Starts with a comment, as a YAML stream may.
const EXAMPLE: &str = "examples/cluster-hotspot.yaml";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// The example as YAML (its comment first), as JSON, and each gzip-compressed.
fn variants() -> Vec<(&'static str, Vec<u8>)> {
    let yaml = std::fs::read(root().join(EXAMPLE)).unwrap();
    assert!(yaml.starts_with(b"# "));
    let value: serde_json::Value =
        serde_saphyr::from_str(std::str::from_utf8(&yaml).unwrap()).unwrap();
    let json = serde_json::to_vec_pretty(&value).unwrap();
    vec![
        ("yaml", yaml.clone()),
        ("json", json.clone()),
        ("yaml.gz", gzip(&yaml)),
        ("json.gz", gzip(&json)),
    ]
}

fn plan_args() -> Vec<String> {
    let policy = root().join(POLICY);
    [
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--now",
        "2026-12-01T00:00:00Z",
        "-o",
        "json",
    ]
    .map(String::from)
    .to_vec()
}

/// Waits for `child` at most `limit`; a child still running then is killed, and the test
/// fails (a read that hangs is the defect looked for).
fn wait(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn report(out: &Output) -> serde_json::Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `bytes` written to `to` in `pieces`, `pause` apart.
fn write_slowly(mut to: impl Write, bytes: &[u8], pieces: usize, pause: Duration) {
    for piece in bytes.chunks(bytes.len().div_ceil(pieces)) {
        // The reader may have stopped (a failed run): the test says so, not the writer.
        if to.write_all(piece).and_then(|()| to.flush()).is_err() {
            return;
        }
        std::thread::sleep(pause);
    }
}

#[test]
fn a_snapshot_on_standard_input_plans_as_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let policy = root().join(POLICY);
    let mut planned = Vec::new();
    for (name, bytes) in variants() {
        let file = dir.path().join(format!("cluster.{name}"));
        std::fs::write(&file, &bytes).unwrap();
        let from_file = support::offline_plan(&policy, &file);
        assert!(!from_file["evictions"].as_array().unwrap().is_empty());
        let mut child = Command::new(support::bin())
            .args(plan_args())
            .args(["--snapshot", "/dev/stdin"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            write_slowly(stdin, &bytes, 4, Duration::from_millis(10));
        });
        let piped = report(&wait(child, Duration::from_secs(60)));
        writer.join().unwrap();
        assert_eq!(piped, from_file, "{name} through a pipe");
        planned.push(piped);
    }
    // YAML or JSON, compressed or not: one plan.
    assert!(planned.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn a_process_substitution_plans_as_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let policy = root().join(POLICY);
    for (name, bytes) in variants() {
        let file = dir.path().join(format!("cluster.{name}"));
        std::fs::write(&file, &bytes).unwrap();
        let from_file = support::offline_plan(&policy, &file);
        // `descheduler ... --snapshot <(cat FILE)`, as bash runs it.
        let child = Command::new("bash")
            .arg("-c")
            .arg(r#"bin="$1"; file="$2"; shift 2; exec "$bin" "$@" --snapshot <(cat "$file")"#)
            .arg("bash")
            .arg(support::bin())
            .arg(&file)
            .args(plan_args())
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait(child, Duration::from_secs(60));
        assert_eq!(report(&out), from_file, "{name} through <(...)");
    }
}

/// A FIFO at `dir/name`.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let made = Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success());
    path
}

#[test]
fn a_fifo_whose_writer_is_slow_is_waited_for_and_plans_as_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let policy = root().join(POLICY);
    let (_, bytes) = variants().remove(3);
    let file = dir.path().join("cluster.json.gz");
    std::fs::write(&file, &bytes).unwrap();
    let from_file = support::offline_plan(&policy, &file);
    let path = fifo(dir.path(), "cluster.fifo");
    let child = Command::new(support::bin())
        .args(plan_args())
        .arg("--snapshot")
        .arg(&path)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The writer opens the FIFO once, late (as a slow kubectl would), and writes it in
    // pieces: the descheduler waits, says so, and reads it once.
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(6));
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            write_slowly(f, &bytes, 20, Duration::from_millis(50));
        })
    };
    let out = wait(child, Duration::from_secs(90));
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(report(&out), from_file, "{stderr}");
    assert!(
        stderr.contains("waiting for the writer") && stderr.contains("cluster.fifo"),
        "{stderr}"
    );
}

fn run(args: &[&str]) -> Output {
    let child = Command::new(support::bin())
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait(child, Duration::from_secs(60))
}

#[test]
fn a_gzip_stream_of_blank_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // 512 MiB of spaces, in about 500 kB.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..512 {
        gz.write_all(&spaces).unwrap();
    }
    let bomb = dir.path().join("spaces.json.gz");
    std::fs::write(&bomb, gz.finish().unwrap()).unwrap();
    let started = Instant::now();
    let out = run(&[
        "--policy-config-file",
        POLICY,
        "--snapshot",
        bomb.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("spaces.json.gz") && stderr.contains("is it the right file?"),
        "{stderr}"
    );
    // Refused from its first mebibytes, not after inflating it whole.
    assert!(started.elapsed() < Duration::from_secs(20), "{stderr}");
}

#[test]
fn a_snapshot_larger_than_memory_allows_is_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    // 3 GiB, sparse: read whole, it would need that much memory at once.
    let big = dir.path().join("big.yaml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 2000000 && exec "$@""#)
        .arg("sh")
        .arg(support::bin())
        .args(["--policy-config-file", POLICY, "--snapshot"])
        .arg(&big)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("big.yaml") && stderr.contains("not enough memory to read the file"),
        "{stderr}"
    );
}

#[test]
fn certificate_files_that_are_devices_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    let fifo = fifo(dir.path(), "key.fifo");
    for key in [Path::new("/dev/zero"), Path::new("/dev/urandom"), &fifo] {
        let out = run(&[
            "--policy-config-file",
            POLICY,
            "--tls-cert-file",
            cert.to_str().unwrap(),
            "--tls-private-key-file",
            key.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("--tls-private-key-file {}", key.display()))
                && stderr.contains("not a regular file"),
            "{stderr}"
        );
    }
}
