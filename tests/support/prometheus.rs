//! A real Prometheus for integration tests, fed with series the test chooses.
//!
//! [`Prometheus::start`] serves a tiny exporter on loopback (the text exposition format, from
//! a string the test sets and may change with [`Prometheus::set_exposition`]), writes a
//! configuration that scrapes it every second (`honor_labels: true`, so a series' own
//! `instance` label wins over the target's address), and runs `prometheus` on a free loopback
//! port with its storage in a fresh temporary folder and its log in `prometheus.log` there. It
//! waits until `/-/ready` answers and a given query returns data.
//!
//! [`Prometheus::stop`] ends the server (to test "Prometheus is down"); dropping the value does
//! too, and removes the folder (kept, with the log, when `DESCHEDULER_TEST_KEEP=1`). The server
//! also ends when the test process is gone (a watchdog, as for the control plane).
//!
//! The `prometheus` binary is taken from `DESCHEDULER_TEST_PROMETHEUS` or else from PATH;
//! `scripts/install-prometheus` installs Debian's package. Missing, the test panics saying so.
//!
//! Every call blocks the calling thread (the exporter runs on a thread and runtime of its own),
//! so it may be used from a plain `#[test]` or from within a tokio test.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long start-up and the waits for data may take.
pub const PROMETHEUS_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `"$0" "$@"` in place of the shell after starting a watchdog that stops it (SIGTERM,
/// then SIGKILL) once the test process ($TESTPID) is gone.
const WRAPPER: &str = r#"
(
  exec </dev/null >/dev/null 2>&1
  while kill -0 "$TESTPID"; do
    kill -0 "$$" || exit 0
    sleep 1
  done
  kill -TERM "$$"
  i=0
  while [ "$i" -lt 10 ] && kill -0 "$$"; do sleep 0.5; i=$((i + 1)); done
  kill -KILL "$$"
) &
exec "$0" "$@"
"#;

/// The `prometheus` binary: `$DESCHEDULER_TEST_PROMETHEUS`, or the first on PATH. Panics with
/// what to run when there is none.
pub fn prometheus_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("DESCHEDULER_TEST_PROMETHEUS").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "DESCHEDULER_TEST_PROMETHEUS={} is not a file",
            p.display()
        );
        return p;
    }
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("prometheus"))
            .find(|p| p.is_file())
    });
    match found {
        Some(p) => p,
        None => panic!(
            "the `prometheus` binary is not on PATH: run `scripts/install-prometheus` in {} \
             (it installs Debian's prometheus package), or point DESCHEDULER_TEST_PROMETHEUS at \
             a prometheus 2.x binary",
            env!("CARGO_MANIFEST_DIR")
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// The exporter

/// A loopback HTTP server answering `GET /metrics` with the current exposition text.
struct Exporter {
    addr: SocketAddr,
    text: Arc<Mutex<String>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Exporter {
    fn start(text: &str) -> Exporter {
        let text = Arc::new(Mutex::new(text.to_string()));
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the exporter's port");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the exporter's address");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let served = Arc::clone(&text);
        let thread = std::thread::Builder::new()
            .name("prometheus-exporter".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the exporter's runtime");
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("the exporter's listener");
                    let app = axum::Router::new().route(
                        "/metrics",
                        axum::routing::get(move || {
                            let served = Arc::clone(&served);
                            async move {
                                let body = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
                                (
                                    [(
                                        http::header::CONTENT_TYPE,
                                        "text/plain; version=0.0.4; charset=utf-8",
                                    )],
                                    body,
                                )
                            }
                        }),
                    );
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stop_rx.await;
                        })
                        .await;
                });
            })
            .expect("starting the exporter thread");
        Exporter {
            addr,
            text,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Prometheus

/// The series of an instant vector: (labels, value as Prometheus prints it, such as `0.5`,
/// `NaN` or `+Inf`).
pub type Series = Vec<(BTreeMap<String, String>, String)>;

/// A running Prometheus scraping the test's exporter every second.
pub struct Prometheus {
    child: Option<Child>,
    exited: Option<ExitStatus>,
    exporter: Exporter,
    url: String,
    log: PathBuf,
    path: PathBuf,
    // Last: the folder goes after the process stopped.
    dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Prometheus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prometheus")
            .field("url", &self.url)
            .field("exporter", &self.exporter.addr)
            .field("dir", &self.path)
            .finish()
    }
}

impl Prometheus {
    /// Serves `exposition` (text format, such as `"m{instance=\"a\"} 1\n"`), starts Prometheus
    /// scraping it, and waits until it is ready and `ready_query` returns at least one series.
    /// Panics, with the end of Prometheus' log, if that does not happen within
    /// [`PROMETHEUS_TIMEOUT`].
    pub fn start(exposition: &str, ready_query: &str) -> Prometheus {
        let binary = prometheus_binary();
        let mut last = String::new();
        // A port picked as free may be taken by someone else before Prometheus binds it.
        for _ in 0..3 {
            match Prometheus::try_start(&binary, exposition) {
                Ok(p) => {
                    p.wait_for_series(ready_query, 1..=usize::MAX);
                    return p;
                }
                Err(e) if e.contains("address already in use") => last = e,
                Err(e) => panic!("{e}"),
            }
        }
        panic!("{last}")
    }

    fn try_start(binary: &Path, exposition: &str) -> Result<Prometheus, String> {
        let keep = std::env::var("DESCHEDULER_TEST_KEEP").is_ok_and(|v| !v.is_empty() && v != "0");
        let tmp = tempfile::Builder::new()
            .prefix("descheduler-prometheus-")
            .tempdir()
            .map_err(|e| format!("creating a temporary folder: {e}"))?;
        let path = tmp.path().to_path_buf();
        let exporter = Exporter::start(exposition);
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("binding: {e}"))?;
            l.local_addr().map_err(|e| e.to_string())?.port()
        };
        let config = format!(
            "global:\n  \
               scrape_interval: 1s\n  \
               scrape_timeout: 1s\n  \
               evaluation_interval: 1s\n\
             scrape_configs:\n\
             - job_name: test\n  \
               honor_labels: true\n  \
               static_configs:\n  \
               - targets: ['{}']\n",
            exporter.addr
        );
        let config_file = path.join("prometheus.yml");
        fs::write(&config_file, config).map_err(|e| format!("writing the config: {e}"))?;
        let log = path.join("prometheus.log");
        let out = fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(WRAPPER)
            .arg(binary)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                path.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--storage.tsdb.retention.time=1h")
            .arg("--log.level=info")
            .env("TESTPID", std::process::id().to_string())
            .current_dir(&path)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let mut prometheus = Prometheus {
            child: Some(child),
            exited: None,
            exporter,
            url: format!("http://127.0.0.1:{port}"),
            log,
            path: path.clone(),
            dir: None,
        };
        if keep {
            eprintln!("support::prometheus: folder kept: {}", tmp.keep().display());
        } else {
            prometheus.dir = Some(tmp);
        }
        let deadline = Instant::now() + PROMETHEUS_TIMEOUT;
        loop {
            let last = match http_get(&prometheus.url, "/-/ready") {
                Ok((200, _)) => return Ok(prometheus),
                Ok((status, body)) => format!("HTTP {status}: {}", body.trim()),
                Err(e) => e,
            };
            let failure = if let Some(status) = prometheus.exit_status() {
                format!("prometheus exited ({status}) before it was ready")
            } else if Instant::now() >= deadline {
                format!(
                    "prometheus at {} not ready after {PROMETHEUS_TIMEOUT:?} (last: {last})",
                    prometheus.url
                )
            } else {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            };
            prometheus.stop();
            // Keep the folder (config, log) of a failed start for reading.
            if let Some(dir) = prometheus.dir.take() {
                let _ = dir.keep();
            }
            return Err(format!(
                "{failure}; last lines of {}:\n{}",
                prometheus.log.display(),
                prometheus.log_tail(30)
            ));
        }
    }

    /// `http://127.0.0.1:<port>`, the base URL of the API.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `127.0.0.1:<port>` of the exporter Prometheus scrapes (also the `instance` label of
    /// series that carry none of their own).
    pub fn exporter_address(&self) -> SocketAddr {
        self.exporter.addr
    }

    /// Prometheus' log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of Prometheus' log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Replaces what the exporter serves; Prometheus sees it at its next scrape (within about
    /// a second; series no longer served turn stale then). Wait with
    /// [`Prometheus::wait_until`] for the change to show.
    pub fn set_exposition(&self, text: &str) {
        *self.exporter.text.lock().unwrap_or_else(|e| e.into_inner()) = text.to_string();
    }

    /// Runs an instant query through the HTTP API (directly, not through the code under test)
    /// and returns the vector's series as (labels, value text).
    pub fn query_vector(&self, query: &str) -> Result<Series, String> {
        let path = format!("/api/v1/query?query={}", percent_encode(query));
        let (status, body) = http_get(&self.url, &path)?;
        let json: serde_json::Value = serde_json::from_str(&body)
            .map_err(|e| format!("HTTP {status}, not JSON ({e}): {body}"))?;
        if json["status"] != "success" {
            return Err(format!("HTTP {status}: {body}"));
        }
        if json["data"]["resultType"] != "vector" {
            return Err(format!("not a vector: {body}"));
        }
        let result = json["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(result
            .into_iter()
            .map(|s| {
                let labels = serde_json::from_value(s["metric"].clone()).unwrap_or_default();
                let value = s["value"][1].as_str().unwrap_or_default().to_string();
                (labels, value)
            })
            .collect())
    }

    /// Waits until `check` accepts the vector `query` returns; returns it. Panics after
    /// [`PROMETHEUS_TIMEOUT`] with the last answer and the end of the log.
    pub fn wait_until(
        &self,
        query: &str,
        what: &str,
        mut check: impl FnMut(&[(BTreeMap<String, String>, String)]) -> bool,
    ) -> Series {
        let deadline = Instant::now() + PROMETHEUS_TIMEOUT;
        loop {
            let last = match self.query_vector(query) {
                Ok(v) if check(&v) => return v,
                Ok(v) => format!("{v:?}"),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                panic!(
                    "prometheus at {}: query {query:?} did not give {what} within \
                     {PROMETHEUS_TIMEOUT:?}; last answer: {last}\nlast lines of {}:\n{}",
                    self.url,
                    self.log.display(),
                    self.log_tail(30)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until `query` returns a number of series within `count`.
    pub fn wait_for_series(&self, query: &str, count: std::ops::RangeInclusive<usize>) -> Series {
        let what = format!("{count:?} series");
        self.wait_until(query, &what, |v| count.contains(&v.len()))
    }

    /// Stops Prometheus (SIGTERM, then SIGKILL after 5 s) and waits until it is gone; its port
    /// then refuses connections. The exporter keeps running. Idempotent.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
            if child.try_wait().ok().flatten().is_none() {
                let _ = child.kill();
            }
        }
        self.exited = child.wait().ok();
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.exit_status().is_none() && self.child.is_some()
    }

    fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            if let Some(child) = self.child.as_mut() {
                self.exited = child.try_wait().ok().flatten();
            }
        }
        self.exited
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------------------------
// A minimal blocking HTTP client (no runtime needed)

/// `GET {base}{path}` over HTTP/1.0; returns (status, body).
fn http_get(base: &str, path: &str) -> Result<(u16, String), String> {
    let host = base
        .strip_prefix("http://")
        .ok_or_else(|| format!("{base} is not an http:// URL"))?;
    let addr: SocketAddr = host.parse().map_err(|e| format!("{host}: {e}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connecting to {base}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("writing to {base}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("reading from {base}: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{base}: no HTTP header in {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("{base}: no status in {head:?}"))?;
    Ok((status, body.to_string()))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
