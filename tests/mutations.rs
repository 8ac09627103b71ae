//! Seeded mutations of the surfaces added last, through the binary as users run it: the
//! scheduler configuration (`--scheduler-config`), gzip-compressed snapshots (from a file
//! and from a pipe), every flag's value, kubeconfigs, and what an API server answers to the
//! lists of a one-shot run. Whatever the input, the process ends within its bound with an
//! exit code of its own (0, 1 or 2): never a panic (exit 101), an abort (exit 134, SIGABRT,
//! "memory allocation of ... failed"), another signal, or a run that does not end; and the
//! kubeconfig's token is never printed.
//!
//! A few hundred runs in every test run; `DESCHEDULER_FUZZ_ITERATIONS` (per surface) runs
//! more, `DESCHEDULER_FUZZ_SEED` another sequence. A failure names the seed, the surface and
//! the input (kept under the test's temporary folder, whose path it prints).

use descheduler::snapshot::synthetic::Rng;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NOW: &str = "2026-12-01T00:00:00Z";
const POLICY: &str = "policies/combined.yaml";
const SNAPSHOT: &str = "examples/cluster-hotspot.yaml";
/// The kubeconfig's bearer token: it must never reach stdout or stderr.
const TOKEN: &str = "sekret-token-7f3a9c1e5b2d4680";
/// The longest any one run may take: a one-shot run's list retries take about 15 s, the
/// request deadlines less.
const RUN_BOUND: Duration = Duration::from_secs(90);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A shipped file's absolute path: runs start in their own temporary directory, so a flag
/// value that names a relative path lands there and not in the checkout.
fn shipped_path(path: &str) -> String {
    root().join(path).to_str().unwrap().to_string()
}

fn iterations(default: usize) -> usize {
    std::env::var("DESCHEDULER_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    std::env::var("DESCHEDULER_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(33)
}

// ---------------------------------------------------------------------------------------------
// Running the binary, bounded

/// How one run ended.
struct Ended {
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

/// Runs the binary with `args` (and stdin from `stdin`, or nothing), killed past
/// [`RUN_BOUND`]. Output goes to files, so a large report never blocks the process.
fn run(dir: &Path, args: &[String], stdin: Option<&Path>) -> Ended {
    let out = dir.join("stdout");
    let err = dir.join("stderr");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_descheduler"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .env("HOME", dir)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("DESCHEDULER_") {
            cmd.env_remove(k);
        }
    }
    cmd.stdin(match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
        None => Stdio::null(),
    });
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RUN_BOUND {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    use std::os::unix::process::ExitStatusExt;
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    Ended {
        code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout: read(&out),
        stderr: read(&err),
    }
}

/// What is wrong with how a run ended, if anything.
fn verdict(e: &Ended) -> Option<String> {
    let tail = |s: &str| {
        let start = s.len().saturating_sub(1500);
        let start = (start..=s.len())
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(s.len());
        s[start..].to_string()
    };
    if e.timed_out {
        return Some(format!(
            "did not end within {RUN_BOUND:?}; stderr: {}",
            tail(&e.stderr)
        ));
    }
    if let Some(signal) = e.signal {
        return Some(format!(
            "killed by signal {signal}; stderr: {}",
            tail(&e.stderr)
        ));
    }
    match e.code {
        Some(0..=2) => {}
        Some(code) => return Some(format!("exit {code}; stderr: {}", tail(&e.stderr))),
        None => return Some("no exit code".into()),
    }
    for bad in ["panicked at", "memory allocation of", "RUST_BACKTRACE"] {
        if e.stderr.contains(bad) {
            return Some(format!("stderr says {bad:?}: {}", tail(&e.stderr)));
        }
    }
    if e.stdout.contains(TOKEN) || e.stderr.contains(TOKEN) {
        return Some("the kubeconfig's token was printed".into());
    }
    None
}

/// The failures of one surface, kept with their inputs.
struct Failures {
    surface: &'static str,
    dir: tempfile::TempDir,
    found: Vec<String>,
    runs: usize,
    /// Runs by exit code: what the inputs did, shown at the end.
    codes: std::collections::BTreeMap<i32, usize>,
}

impl Failures {
    fn new(surface: &'static str) -> Failures {
        Failures {
            surface,
            dir: tempfile::tempdir().unwrap(),
            found: Vec::new(),
            runs: 0,
            codes: Default::default(),
        }
    }

    /// The folder of this surface's inputs and outputs.
    fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// Records a run of `what` (with the input kept at `input`, if any).
    fn check(&mut self, what: &str, input: Option<&Path>, e: &Ended) {
        self.runs += 1;
        *self.codes.entry(e.code.unwrap_or(-1)).or_default() += 1;
        if let Some(why) = verdict(e) {
            let kept = input.map(|p| {
                let kept = self
                    .dir
                    .path()
                    .join(format!("failure-{}", self.found.len()));
                std::fs::copy(p, &kept).unwrap();
                kept
            });
            self.found
                .push(format!("{what} (input kept at {kept:?}): {why}"));
        }
    }

    fn assert_none(self) {
        // The folder is kept when something failed, for the inputs.
        if !self.found.is_empty() {
            let dir = self.dir.keep();
            panic!(
                "{}: {} of {} runs ended badly (seed {}; inputs under {}):\n{}",
                self.surface,
                self.found.len(),
                self.runs,
                seed(),
                dir.display(),
                self.found
                    .iter()
                    .take(12)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        eprintln!(
            "{}: {} runs, all ended well; by exit code: {:?}",
            self.surface, self.runs, self.codes
        );
    }
}

/// The arguments every run takes (the policy, the time, JSON output), then `more`.
fn args_with(more: &[&str]) -> Vec<String> {
    let policy = shipped_path(POLICY);
    ["--policy-config-file", &policy, "--now", NOW, "-o", "json"]
        .iter()
        .chain(more)
        .map(|s| s.to_string())
        .collect()
}

fn offline_args(extra: &[&str]) -> Vec<String> {
    let mut args = args_with(&["--snapshot", &shipped_path(SNAPSHOT)]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn shipped(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Mutations

/// `text` with one to three bytes removed, inserted or replaced, a line duplicated, indented
/// or dropped, a value swapped for an odd one, or the text cut short.
fn mutated(rng: &mut Rng, text: &str) -> Vec<u8> {
    const BYTES: &[u8] = b"\"'\\,:{}[]-#&*!|>?% \n\t0x1.e+~\x01\xff";
    const VALUES: &[&str] = &[
        "-1",
        "0",
        "1e400",
        "100000000000000000000",
        "~",
        "[]",
        "{}",
        "\"\"",
        "*a",
        "&a x",
        "!!binary AAAA",
        "0x10",
        ".nan",
        "-.inf",
        "<<: *a",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        "\u{202e}evil",
    ];
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(3) {
        if lines.is_empty() {
            break;
        }
        let at = rng.below(lines.len());
        match rng.below(6) {
            0 => {
                let line = lines[at].clone();
                lines.insert(at, line);
            }
            1 => lines[at].insert_str(0, "  "),
            2 => {
                lines.remove(at);
            }
            3 => {
                // A value for the key of this line.
                if let Some(colon) = lines[at].find(": ") {
                    let key = lines[at][..colon + 2].to_string();
                    lines[at] = format!("{key}{}", rng.pick(VALUES));
                }
            }
            4 => lines.truncate(at),
            _ => {
                // A key misspelled.
                let line = &mut lines[at];
                if let Some(colon) = line.find(':') {
                    if colon > 1 {
                        line.insert(colon - 1, 'x');
                    }
                }
            }
        }
    }
    let mut b = lines.join("\n").into_bytes();
    if rng.chance(0.5) && !b.is_empty() {
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(b.len());
            match rng.below(3) {
                0 => {
                    b.remove(at);
                }
                1 => b.insert(at, *rng.pick(BYTES)),
                _ => b[at] = *rng.pick(BYTES),
            }
            if b.is_empty() {
                break;
            }
        }
    }
    b
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A gzip stream damaged at random: a byte flipped past the header, cut short, garbage
/// after it, a header that promises fields it lacks, or a second member.
fn damaged_gzip(rng: &mut Rng, plain: &[u8]) -> Vec<u8> {
    let mut gz = gzip(plain);
    match rng.below(6) {
        0 => {
            let at = 10 + rng.below(gz.len() - 10);
            gz[at] ^= 1 << rng.below(8);
        }
        1 => gz.truncate(rng.below(gz.len())),
        2 => gz.extend((0..1 + rng.below(64)).map(|_| rng.next_u64() as u8)),
        3 => {
            // FEXTRA | FNAME | FCOMMENT | FHCRC with no such fields.
            gz[3] = 1 << (1 + rng.below(4));
        }
        4 => {
            let second = gzip(&mutated(rng, &String::from_utf8_lossy(plain)));
            gz.extend(second);
        }
        _ => {
            // The trailer's CRC or size wrong.
            let n = gz.len();
            gz[n - 1 - rng.below(8)] ^= 0x55;
        }
    }
    gz
}

// ---------------------------------------------------------------------------------------------
// Surfaces offline

#[test]
fn mutated_scheduler_configs_end_well() {
    let mut failures = Failures::new("--scheduler-config");
    let dir = failures.dir();
    let base = shipped("examples/scheduler-config.yaml");
    let mut rng = Rng::new(seed());
    let mut inputs: Vec<Vec<u8>> = vec![
        base.clone().into_bytes(),
        Vec::new(),
        b"---\n---\n".to_vec(),
        "[".repeat(100_000).into_bytes(),
        format!("a: &a [{}]\n", "x,".repeat(1000)).into_bytes(),
        billion_laughs().into_bytes(),
        format!("{base}\n---\n{base}").into_bytes(),
        base.replace("weight: 5", "weight: 99999999999999999999")
            .into_bytes(),
        base.replace("weight: 1", "weight: -1").into_bytes(),
        base.replace("MostAllocated", "RequestedToCapacityRatio")
            .into_bytes(),
        b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n- urlPrefix: http://x\n  prioritizeVerb: p\n  weight: 0\n".to_vec(),
    ];
    for _ in 0..iterations(60) {
        inputs.push(mutated(&mut rng, &base));
    }
    let file = dir.as_path().join("scheduler.yaml");
    for (i, input) in inputs.iter().enumerate() {
        std::fs::write(&file, input).unwrap();
        let e = run(
            dir.as_path(),
            &offline_args(&[
                "--predict-destinations",
                "--scheduler-config",
                file.to_str().unwrap(),
            ]),
            None,
        );
        failures.check(&format!("scheduler config {i}"), Some(&file), &e);
    }
    failures.assert_none();
}

/// YAML aliases that expand to a billion strings if a reader follows them blindly.
fn billion_laughs() -> String {
    let mut s = String::from(
        "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..9 {
        let p = i - 1;
        s.push_str(&format!(
            "a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
        ));
    }
    s
}

#[test]
fn damaged_gzip_snapshots_end_well_from_a_file_and_from_a_pipe() {
    let mut failures = Failures::new("--snapshot FILE.gz");
    let dir = failures.dir();
    let plain = shipped(SNAPSHOT);
    let mut rng = Rng::new(seed() + 1);
    let mut inputs: Vec<Vec<u8>> = vec![
        gzip(plain.as_bytes()),
        gzip(b""),
        vec![0x1f, 0x8b],
        vec![0x1f],
        // Inflates about a thousandfold: some 64 KiB of gzip into 64 MiB of spaces.
        gzip(&vec![b' '; 64 << 20]),
        gzip(&[gzip(plain.as_bytes()), gzip(plain.as_bytes())].concat()),
    ];
    for _ in 0..iterations(40) {
        inputs.push(damaged_gzip(&mut rng, plain.as_bytes()));
        inputs.push(gzip(&mutated(&mut rng, &plain)));
    }
    let file = dir.as_path().join("snapshot.yaml.gz");
    for (i, input) in inputs.iter().enumerate() {
        std::fs::write(&file, input).unwrap();
        let mut args = offline_args(&[]);
        args[3] = file.to_str().unwrap().to_string();
        let e = run(dir.as_path(), &args, None);
        failures.check(&format!("gzip snapshot {i}"), Some(&file), &e);
        // The same bytes through a pipe.
        if i % 4 == 0 {
            args[3] = "/dev/stdin".into();
            let e = run(dir.as_path(), &args, Some(&file));
            failures.check(&format!("gzip snapshot {i} on stdin"), Some(&file), &e);
        }
    }
    failures.assert_none();
}

/// Every flag that takes a value, with odd values for its kind; each run offline, so the
/// values are checked where no cluster is at hand.
#[test]
fn odd_flag_values_end_well() {
    let mut failures = Failures::new("flags");
    let dir = failures.dir();
    let mut rng = Rng::new(seed() + 2);
    let long = "x".repeat(100_000);
    let dir_path = dir.as_path().to_str().unwrap().to_string();
    let missing = dir.as_path().join("missing").to_str().unwrap().to_string();
    let generic: Vec<&str> = vec![
        "",
        " ",
        "-",
        "--",
        "\n",
        "\u{202e}",
        "é",
        long.as_str(),
        "/dev/null",
        "/dev/zero",
        dir_path.as_str(),
        missing.as_str(),
    ];
    const DURATIONS: &[&str] = &[
        "0",
        "-5m",
        "500ms",
        "1ns",
        "1.5h",
        "1e3s",
        "9223372036854775807ns",
        "99999999999999h",
        "5",
        "m",
        "1h-1m",
        "+3s",
        "NaN",
        "1µs",
        "0.0000001s",
        "18446744073709551616s",
        "soon",
    ];
    const NUMBERS: &[&str] = &[
        "-1",
        "0",
        "1e309",
        "NaN",
        "inf",
        "-inf",
        "4294967296",
        "18446744073709551616",
        "0x10",
        "1_000",
        " 5",
        "0.5",
    ];
    const ADDRESSES: &[&str] = &[
        "not-an-address",
        ":99999",
        "[::1]:0",
        "0.0.0.0:65536",
        "::::",
        "localhost:8443",
        "1.2.3.4.5:80",
        "999.1.1.1",
        "[::1",
    ];
    const QUANTITIES: &[&str] = &["-1", "1Ki", "1e400", "99999999Ei", "1.5", "Mi", "0"];
    const TIMES: &[&str] = &[
        "2026-02-30T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "0000-01-01T00:00:00Z",
        "2026-12-01T00:00:00+99:00",
        "yesterday",
    ];
    const CRON_FIELDS: &[&str] = &[
        "*",
        "*/0",
        "0-59",
        "61",
        "L",
        "?",
        "1,2",
        "-",
        "7",
        "MON",
        "JAN",
        "32",
        "30",
        "2",
        "0",
        "*/1000000000",
        "1-0",
        "W",
        "#",
    ];
    let durations = [
        "--descheduling-interval",
        "--eviction-cooldown",
        "--await-placement-timeout",
        "--leader-elect-lease-duration",
        "--leader-elect-renew-deadline",
        "--leader-elect-retry-period",
        "--cache-sync-timeout",
    ];
    let numbers = [
        "--client-connection-qps",
        "--client-connection-burst",
        "--eviction-qps",
        "--eviction-burst",
        "--node-eviction-qps",
        "--node-eviction-burst",
        "--secure-port",
        "--decision-log-max-files",
        "--v",
    ];
    let files = [
        "--tls-cert-file",
        "--tls-private-key-file",
        "--node-metrics",
        "--pod-metrics",
        "--decision-log",
        "--scheduler-config",
        "--kubeconfig",
    ];
    let names = [
        "--scheduler-name",
        "--context",
        "--leader-elect-resource-name",
        "--leader-elect-resource-namespace",
        "--leader-elect-identity",
        "--leader-elect-resource-lock",
        "--kube-api-content-type",
        "--log-format",
        "--output",
        "--dry-run",
        "--predict-destinations",
        "--await-placement",
        "--leader-elect",
        "--disable-metrics",
        "--authorize-metrics",
        "--decision-log-snapshot",
    ];
    let mut runs: Vec<(String, String)> = Vec::new();
    for flag in durations {
        for v in DURATIONS {
            runs.push((flag.into(), v.to_string()));
        }
    }
    for flag in numbers {
        for v in NUMBERS {
            runs.push((flag.into(), v.to_string()));
        }
    }
    for flag in ["--bind-address", "--metrics-bind-address"] {
        for v in ADDRESSES {
            runs.push((flag.into(), v.to_string()));
        }
    }
    for v in QUANTITIES {
        runs.push(("--decision-log-max-bytes".into(), v.to_string()));
    }
    for v in TIMES {
        runs.push(("--now".into(), v.to_string()));
    }
    for _ in 0..iterations(40) {
        let fields: Vec<&str> = (0..[5, 5, 5, 4, 6][rng.below(5)])
            .map(|_| *rng.pick(CRON_FIELDS))
            .collect();
        runs.push(("--schedule".into(), fields.join(" ")));
    }
    for v in [
        "0 0 30 2 *",
        "0 0 31 4 *",
        "a b c d e",
        "@yearly",
        "@reboot",
    ] {
        runs.push(("--schedule".into(), v.into()));
    }
    for flag in files.iter().chain(names.iter()) {
        for v in &generic {
            runs.push((flag.to_string(), v.to_string()));
        }
    }
    // And every other flag with a generic value, at random.
    for _ in 0..iterations(40) {
        let flag = *rng.pick(&[&durations[..], &numbers[..], &names[..]].concat());
        runs.push((flag.into(), rng.pick(&generic).to_string()));
    }
    for (flag, value) in &runs {
        // `--flag=value`, so that values starting with `-` are values.
        let e = run(
            dir.as_path(),
            &offline_args(&[&format!("{flag}={value}")]),
            None,
        );
        let shown: String = value.chars().take(60).collect();
        failures.check(&format!("{flag}={shown:?}"), None, &e);
    }
    failures.assert_none();
}

// ---------------------------------------------------------------------------------------------
// An API server that answers oddly (a mock: a real one cannot be made to answer garbage)

/// How the server answers one request.
#[derive(Clone, Debug)]
enum Answer {
    /// The list as it is.
    Plain,
    /// Status and body as given, in JSON.
    Raw(u16, Vec<u8>),
    /// The list, its body mutated.
    Mutated(Vec<u8>),
    /// The list with a Content-Length of more than is sent, then the connection closed.
    Cut(usize),
    /// Protobuf's content type and magic, then these bytes.
    Protobuf(Vec<u8>),
    /// Bytes that are not HTTP.
    NotHttp(Vec<u8>),
    /// A chunked body whose chunk size is not a number.
    BadChunk,
}

/// What the server does in the coming run: the first request for `path` is answered with
/// `answer`, every other as it is.
#[derive(Default)]
struct Script {
    fault: Option<(String, Answer)>,
}

struct FakeApi {
    port: u16,
    script: Arc<Mutex<Script>>,
}

/// The example snapshot's objects as the API's lists, by path.
fn lists() -> Vec<(&'static str, Vec<u8>)> {
    let value: serde_json::Value = serde_saphyr::from_str(&shipped(SNAPSHOT)).unwrap();
    let items = value["items"].as_array().unwrap();
    let of = |kind: &str, api_version: &str| {
        let items: Vec<&serde_json::Value> = items.iter().filter(|i| i["kind"] == kind).collect();
        serde_json::to_vec(&serde_json::json!({
            "kind": format!("{kind}List"),
            "apiVersion": api_version,
            "metadata": {"resourceVersion": "100"},
            "items": items,
        }))
        .unwrap()
    };
    vec![
        ("/api/v1/nodes", of("Node", "v1")),
        ("/api/v1/pods", of("Pod", "v1")),
        (
            "/apis/policy/v1/poddisruptionbudgets",
            of("PodDisruptionBudget", "policy/v1"),
        ),
        ("/api/v1/namespaces", of("Namespace", "v1")),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            of("PriorityClass", "scheduling.k8s.io/v1"),
        ),
    ]
}

const NOT_FOUND: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","code":404}"#;

impl FakeApi {
    fn start() -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let script = Arc::new(Mutex::new(Script::default()));
        let lists = Arc::new(lists());
        let shared = script.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let script = shared.clone();
                let lists = lists.clone();
                std::thread::spawn(move || serve(conn, &script, &lists));
            }
        });
        FakeApi { port, script }
    }

    fn set(&self, path: &str, answer: Answer) {
        self.script.lock().unwrap().fault = Some((path.to_string(), answer));
    }
}

fn serve(mut conn: TcpStream, script: &Mutex<Script>, lists: &[(&'static str, Vec<u8>)]) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.split(' ').nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/");
    let list = lists.iter().find(|(p, _)| *p == path).map(|(_, b)| b);
    let answer = {
        let mut s = script.lock().unwrap();
        match &s.fault {
            Some((p, _)) if p == path => s.fault.take().map(|(_, a)| a).unwrap(),
            _ => Answer::Plain,
        }
    };
    let reply = |status: u16, content_type: &str, body: &[u8], length: usize| {
        let mut r = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    };
    let bytes = match (answer, list) {
        (Answer::Plain, Some(body)) => reply(200, "application/json", body, body.len()),
        (Answer::Plain, None) => reply(404, "application/json", NOT_FOUND.as_bytes(), NOT_FOUND.len()),
        (Answer::Raw(status, body), _) => reply(status, "application/json", &body, body.len()),
        (Answer::Mutated(body), _) => reply(200, "application/json", &body, body.len()),
        (Answer::Cut(at), Some(body)) => {
            let at = at.min(body.len());
            reply(200, "application/json", &body[..at], body.len() + 1)
        }
        (Answer::Cut(_), None) => reply(404, "application/json", b"{", 100),
        (Answer::Protobuf(junk), _) => {
            let body = [b"k8s\0".as_slice(), &junk].concat();
            reply(200, "application/vnd.kubernetes.protobuf", &body, body.len())
        }
        (Answer::NotHttp(junk), _) => junk,
        (Answer::BadChunk, _) => b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n".to_vec(),
    };
    let _ = conn.write_all(&bytes);
    let _ = conn.flush();
}

fn kubeconfig(port: u16) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: http://127.0.0.1:{port}
contexts:
- name: fake
  context:
    cluster: fake
    user: someone
    namespace: default
current-context: fake
users:
- name: someone
  user:
    token: {TOKEN}
"
    )
}

fn live_args(kubeconfig: &Path) -> Vec<String> {
    args_with(&[
        "--dry-run",
        // Runs go side by side: none holds the admin port.
        "--secure-port=0",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ])
}

#[test]
fn odd_api_answers_end_well() {
    let mut failures = Failures::new("API answers");
    let dir = failures.dir();
    let api = FakeApi::start();
    let config = dir.as_path().join("kubeconfig");
    std::fs::write(&config, kubeconfig(api.port)).unwrap();

    // The fake server is right when nothing is wrong: the run plans the example.
    let e = run(dir.as_path(), &live_args(&config), None);
    assert_eq!(e.code, Some(0), "{}", e.stderr);
    let report: serde_json::Value = serde_json::from_str(&e.stdout).unwrap();
    assert!(
        !report["evictions"].as_array().unwrap().is_empty(),
        "{}",
        e.stdout
    );

    let lists = lists();
    let mut rng = Rng::new(seed() + 3);
    let mut runs: Vec<(String, Answer)> = Vec::new();
    let status = |code: u16, body: &str| Answer::Raw(code, body.as_bytes().to_vec());
    for (path, _) in &lists {
        for answer in [
            status(200, "{}"),
            status(200, "[]"),
            status(200, "null"),
            status(
                200,
                r#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#,
            ),
            status(200, r#"{"items":{}}"#),
            status(200, r#"{"items":[1,2,3]}"#),
            status(200, ""),
            status(500, "not json"),
            status(410, r#"{"kind":"Status","code":410,"reason":"Expired"}"#),
            status(403, r#"{"kind":"Status","code":403,"reason":"Forbidden"}"#),
            status(401, ""),
            Answer::BadChunk,
            Answer::NotHttp(b"SSH-2.0-OpenSSH\r\n".to_vec()),
            Answer::Protobuf(Vec::new()),
        ] {
            runs.push((path.to_string(), answer));
        }
    }
    for _ in 0..iterations(40) {
        let (path, body) = rng.pick(&lists);
        let answer = match rng.below(4) {
            0 | 1 => Answer::Mutated(mutated(&mut rng, &String::from_utf8_lossy(body))),
            2 => Answer::Cut(rng.below(body.len())),
            _ => Answer::Protobuf((0..rng.below(512)).map(|_| rng.next_u64() as u8).collect()),
        };
        runs.push((path.to_string(), answer));
    }
    let input = dir.as_path().join("answer");
    for (i, (path, answer)) in runs.into_iter().enumerate() {
        if let Answer::Mutated(body) | Answer::Raw(_, body) | Answer::Protobuf(body) = &answer {
            std::fs::write(&input, body).unwrap();
        }
        let what = format!("{path} answered {}", describe(&answer));
        api.set(&path, answer);
        let e = run(dir.as_path(), &live_args(&config), None);
        failures.check(
            &format!("{i}: {what}"),
            Some(&input).filter(|p| p.exists()).map(|p| p.as_path()),
            &e,
        );
    }
    failures.assert_none();
}

fn describe(a: &Answer) -> String {
    match a {
        Answer::Plain => "as it is".into(),
        Answer::Raw(s, b) => format!(
            "{s} with {:?}",
            String::from_utf8_lossy(&b[..b.len().min(60)])
        ),
        Answer::Mutated(b) => format!("a mutated list of {} bytes", b.len()),
        Answer::Cut(at) => format!("a list cut at byte {at}"),
        Answer::Protobuf(b) => format!("protobuf with {} bytes of garbage", b.len()),
        Answer::NotHttp(_) => "bytes that are not HTTP".into(),
        Answer::BadChunk => "a chunked body with a bad chunk size".into(),
    }
}

#[test]
fn mutated_kubeconfigs_end_well_and_keep_their_token() {
    let mut failures = Failures::new("--kubeconfig");
    let dir = failures.dir();
    let api = FakeApi::start();
    let base = kubeconfig(api.port);
    let mut rng = Rng::new(seed() + 4);
    let mut inputs: Vec<Vec<u8>> = vec![
        base.replace("current-context: fake", "current-context: other")
            .into_bytes(),
        base.replace("    token:", "    token:\n    token:")
            .into_bytes(),
        base.replace("  user:\n    token:", "  user:\n   token:")
            .into_bytes(),
        format!("{base}users: []\n").into_bytes(),
        base.replace("http://127.0.0.1", "https://127.0.0.1").into_bytes(),
        base.replace("http://127.0.0.1", "ftp://127.0.0.1").into_bytes(),
        base.replace(
            &format!("    token: {TOKEN}"),
            "    tokenFile: /nonexistent/token",
        )
        .into_bytes(),
        base.replace(
            &format!("    token: {TOKEN}"),
            &format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /nonexistent/plugin\n      args: [\"--secret={TOKEN}\"]\n      env:\n      - name: SECRET\n        value: {TOKEN}\n"
            ),
        )
        .into_bytes(),
        // A plugin that prints its credential and fails: what it printed is never said. (Its
        // stderr is the user's terminal, as client-go's, so it prints nothing there.)
        base.replace(
            &format!("    token: {TOKEN}"),
            &format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n      args: [\"-c\", \"echo {TOKEN}; exit 3\"]\n"
            ),
        )
        .into_bytes(),
        base.replace(
            &format!("    token: {TOKEN}"),
            &format!(
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n      args: [\"-c\", \"echo '{{\\\"status\\\": {{\\\"token\\\": 5, \\\"x\\\": \\\"{TOKEN}\\\"}}}}'\"]\n"
            ),
        )
        .into_bytes(),
    ];
    for _ in 0..iterations(40) {
        inputs.push(mutated(&mut rng, &base));
    }
    let file = dir.as_path().join("kubeconfig");
    for (i, input) in inputs.iter().enumerate() {
        std::fs::write(&file, input).unwrap();
        let e = run(dir.as_path(), &live_args(&file), None);
        failures.check(&format!("kubeconfig {i}"), Some(&file), &e);
    }
    failures.assert_none();
}
