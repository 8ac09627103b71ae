//! The differential check of the soak (`tests/soak.rs`, `benches/soak/run`): continuous mode
//! runs the whole time (`--dry-run`, a short interval, `--decision-log DIR
//! --decision-log-snapshot`, `-o json`); at each checkpoint, once the churn has stopped, the
//! plan and snapshot of a cycle that started after the last change (and a settling margin for
//! the watch events to arrive) are compared with a one-shot run's, listed fresh at that
//! moment with the same `--now`, and with the offline plan of the kept snapshot. Any
//! difference saves all of them to a folder the failure names.
//!
//! Meanwhile the process's resident memory and CPU time are sampled after every cycle (from
//! `/proc/<pid>/status` and `/proc/<pid>/stat`), its live heap (`descheduler_heap_live_bytes`
//! from its `--metrics-bind-address`), with the churn's counts of changes started
//! and done: a cycle during which none started or was in flight (nor during the cycle before
//! it, so no watch event of a change was still arriving) is idle.

use super::churn::Activity;
use super::process::{run_bin, Descheduler};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One sample of the process after a cycle.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Cycles recorded so far.
    pub cycle: usize,
    pub rss_kib: u64,
    /// The live heap (bytes allocated and not freed), when the metric answered.
    pub heap_bytes: Option<u64>,
    /// User + system time, in clock ticks.
    pub cpu_ticks: u64,
    /// The churn's changes started and done when the sample was taken.
    pub started: u64,
    pub done: u64,
}

impl Sample {
    /// Nothing in flight when the sample was taken.
    fn quiet(&self) -> bool {
        self.started == self.done
    }
}

/// Whether the cycle of `samples[i]` was idle: no change started or in flight since two
/// samples before it (the cycle before it saw the last change's watch events arrive).
pub fn idle(samples: &[Sample], i: usize) -> bool {
    i >= 2
        && samples[i - 2..=i]
            .iter()
            .all(|s| s.quiet() && s.started == samples[i].started)
        && samples[i].cycle == samples[i - 1].cycle + 1
}

/// Continuous mode under watch, and the checkpoints' results.
pub struct Soak {
    d: Descheduler,
    pub log: PathBuf,
    policy: PathBuf,
    kubeconfig: String,
    work: PathBuf,
    seed: u64,
    samples: Arc<Mutex<Vec<Sample>>>,
    sampler: tokio::task::JoinHandle<()>,
    pub checkpoints: usize,
}

/// What one checkpoint compared.
#[derive(Debug)]
pub struct Checkpoint {
    pub evictions: usize,
    pub nodes: usize,
    pub pods: usize,
    /// How long after the churn stopped the compared cycle's record was written.
    pub waited: Duration,
}

/// The decision log's records (`decision-<time>[-<n>].json`), oldest first: (file, the time
/// its name says, to the millisecond). Only the chosen one is read.
fn records(log: &Path) -> Vec<(PathBuf, DateTime<Utc>)> {
    let mut out: Vec<(PathBuf, DateTime<Utc>, u32)> = std::fs::read_dir(log)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let stem = name.strip_prefix("decision-")?.strip_suffix(".json")?;
                    let (time, counter) = match stem.split_once("Z-") {
                        Some((t, n)) => (format!("{t}Z"), n.parse().ok()?),
                        None => (stem.to_string(), 0),
                    };
                    let at = chrono::NaiveDateTime::parse_from_str(&time, "%Y%m%dT%H%M%S%.3fZ")
                        .ok()?
                        .and_utc();
                    Some((e.path(), at, counter))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|(_, at, n)| (*at, *n));
    out.into_iter().map(|(p, at, _)| (p, at)).collect()
}

/// A record of the decision log.
fn read_record(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The resident memory (KiB) and CPU time (ticks) of `pid`.
pub fn resources(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((rss, ticks))
}

/// `descheduler_heap_live_bytes` from the process's plain-HTTP metrics.
async fn live_heap(addr: &str) -> Option<u64> {
    let (code, body) = super::http_get(addr, "/metrics").await?;
    if code != 200 {
        return None;
    }
    body.lines()
        .find_map(|l| l.strip_prefix("descheduler_heap_live_bytes "))?
        .trim()
        .parse()
        .ok()
}

/// A gzip-compressed snapshot as JSON, its items sorted by kind, namespace and name.
fn snapshot(path: &Path) -> Value {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut list: Value = serde_json::from_str(&text).unwrap();
    if let Some(items) = list["items"].as_array_mut() {
        items.sort_by_key(key);
    }
    list
}

fn key(item: &Value) -> String {
    format!(
        "{}/{}/{}",
        item["kind"].as_str().unwrap_or_default(),
        item["metadata"]["namespace"].as_str().unwrap_or_default(),
        item["metadata"]["name"].as_str().unwrap_or_default()
    )
}

/// What differs between two snapshots: objects in one only, and objects that differ (a few).
fn snapshot_diff(a: &Value, b: &Value) -> Vec<String> {
    let index = |v: &Value| -> BTreeMap<String, Value> {
        v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| (key(i), i.clone()))
            .collect()
    };
    let (a, b) = (index(a), index(b));
    let mut out = Vec::new();
    for (k, v) in &a {
        match b.get(k) {
            None => out.push(format!("only in the watch-fed model: {k}")),
            Some(w) if w != v => out.push(format!("differs: {k}\n  watch: {v}\n  list:  {w}")),
            _ => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        out.push(format!("only in the fresh list: {k}"));
    }
    out
}

fn evictions(report: &Value) -> Vec<String> {
    let mut v: Vec<String> = report["evictions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["pod"].as_str().unwrap_or_default().to_string())
        .collect();
    v.sort();
    v
}

impl Soak {
    /// Starts continuous mode on `kubeconfig` with `policy`, cycles every `interval`; its
    /// decision log and the checkpoints' files go under `work`.
    /// `activity` counts the churn's changes, sampled with each cycle.
    pub fn start(
        policy: &Path,
        kubeconfig: &str,
        work: &Path,
        interval: &str,
        seed: u64,
        activity: Arc<Activity>,
    ) -> Soak {
        let log = work.join("decision-log");
        let metrics = format!("127.0.0.1:{}", super::free_port());
        let d = Descheduler::spawn(&[
            "--metrics-bind-address",
            &metrics,
            "--policy-config-file",
            policy.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig,
            "--dry-run",
            "--descheduling-interval",
            interval,
            "--decision-log",
            log.to_str().unwrap(),
            "--decision-log-snapshot",
            "--decision-log-max-files",
            "30",
            "-o",
            "json",
        ]);
        let pid = d.pid().expect("the descheduler's pid");
        let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
        let (s, dir) = (samples.clone(), log.clone());
        // After each new record: one sample.
        let sampler = tokio::spawn(async move {
            let activity = activity;
            let mut last = None;
            let mut cycle = 0;
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let names: Vec<String> = std::fs::read_dir(&dir)
                    .map(|d| {
                        d.filter_map(Result::ok)
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .filter(|n| n.starts_with("decision-") && n.ends_with(".json"))
                            .collect()
                    })
                    .unwrap_or_default();
                // Every record since the last sample is a cycle (two may end between samples).
                let new = names.iter().filter(|&n| Some(n) > last.as_ref()).count();
                if new > 0 {
                    last = names.into_iter().max();
                    cycle += new;
                    // Done first: a change that ends in between counts as in flight.
                    let done = activity.done.load(std::sync::atomic::Ordering::SeqCst);
                    let started = activity.started.load(std::sync::atomic::Ordering::SeqCst);
                    let heap_bytes = live_heap(&metrics).await;
                    match resources(pid) {
                        Some((rss_kib, cpu_ticks)) => s.lock().unwrap().push(Sample {
                            cycle,
                            rss_kib,
                            heap_bytes,
                            cpu_ticks,
                            started,
                            done,
                        }),
                        None => return,
                    }
                }
            }
        });
        Soak {
            d,
            log,
            policy: policy.to_path_buf(),
            kubeconfig: kubeconfig.to_string(),
            work: work.to_path_buf(),
            seed,
            samples,
            sampler,
            checkpoints: 0,
        }
    }

    /// Panics (with its log) when the process exited or logged a panic.
    pub fn assert_alive(&mut self, what: &str) {
        if let Some(status) = self.d.exited() {
            panic!(
                "{what}: the descheduler exited ({status}); seed {}\n{}",
                self.seed,
                self.d.stderr()
            );
        }
        let stderr = self.d.stderr();
        assert!(
            !stderr.contains("panicked"),
            "{what}: the descheduler panicked; seed {}\n{stderr}",
            self.seed
        );
    }

    /// Writes the samples taken so far as CSV (cycle, resident KiB, live heap KiB (empty when
    /// the metric did not answer), CPU ticks, changes done, whether the cycle was idle).
    pub fn write_samples(&self, path: &Path) {
        let samples = self.samples();
        let mut csv = String::from("cycle,rss_kib,heap_kib,cpu_ticks,changes,idle\n");
        for (i, s) in samples.iter().enumerate() {
            csv.push_str(&format!(
                "{},{},{},{},{},{}\n",
                s.cycle,
                s.rss_kib,
                s.heap_bytes
                    .map(|b| (b / 1024).to_string())
                    .unwrap_or_default(),
                s.cpu_ticks,
                s.done,
                u8::from(idle(&samples, i))
            ));
        }
        std::fs::write(path, csv).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }

    /// Waits for `n` more cycles (their samples), the churn stopped: idle cycles.
    pub async fn idle_cycles(&mut self, n: usize) {
        let from = self.samples().len();
        let waited = Instant::now();
        while self.samples().len() < from + n {
            self.assert_alive("the idle cycles");
            assert!(
                waited.elapsed() < Duration::from_secs(120 + 60 * n as u64),
                "{n} idle cycles did not complete (seed {})",
                self.seed
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The samples taken so far.
    pub fn samples(&self) -> Vec<Sample> {
        self.samples.lock().unwrap().clone()
    }

    /// Waits for a cycle that started at least `settle` after `quiet_since` (the end of the
    /// last change), then compares its plan and snapshot with a fresh one-shot run's (same
    /// `--now`) and with the offline plan of its snapshot. Err names the folder holding both
    /// sides.
    pub async fn checkpoint(
        &mut self,
        quiet_since: DateTime<Utc>,
        settle: Duration,
    ) -> Result<Checkpoint, String> {
        self.checkpoints += 1;
        let n = self.checkpoints;
        let since = quiet_since + chrono::Duration::from_std(settle).unwrap();
        let waited_from = Instant::now();
        // The first record written after `since` ends a cycle that may have started before
        // it; the next one's cycle started after it.
        let record = loop {
            self.assert_alive(&format!("checkpoint {n}"));
            let after: Vec<_> = records(&self.log)
                .into_iter()
                .filter(|(_, at)| *at > since)
                .collect();
            if let Some((path, _)) = after.get(1) {
                break (path.clone(), read_record(path));
            }
            if waited_from.elapsed() > Duration::from_secs(120) {
                return Err(format!(
                    "checkpoint {n}: no cycle completed in 120 s after the churn stopped (seed {})\n{}",
                    self.seed,
                    last_lines(&self.d.stderr(), 40)
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let waited = (Utc::now() - quiet_since).to_std().unwrap_or_default();
        let mut c = self
            .compare(&record.0, &record.1, &format!("checkpoint-{n}"))
            .await?;
        c.waited = waited;
        Ok(c)
    }

    /// The newest record written before `t` (its cycle read the cluster before `t`).
    pub fn record_before(&self, t: DateTime<Utc>) -> Option<(PathBuf, Value)> {
        records(&self.log)
            .into_iter()
            .rev()
            .find(|(_, at)| *at < t)
            .map(|(path, _)| {
                let record = read_record(&path);
                (path, record)
            })
    }

    /// Compares the cycle of `record` (at `record_path`) with a one-shot run listing the
    /// cluster now with the record's `--now`, and with the offline plan of its snapshot;
    /// `label` names the folder where both sides are kept when they differ.
    pub async fn compare(
        &self,
        record_path: &Path,
        record: &Value,
        label: &str,
    ) -> Result<Checkpoint, String> {
        let now = record["nowRfc3339"].as_str().unwrap().to_string();
        let continuous = record["report"].clone();
        let kept = self.log.join(record["snapshot"].as_str().unwrap());
        // The record and its snapshot may be pruned later: keep copies with the checkpoint.
        let dir = self.work.join(label);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(record_path, dir.join("continuous-record.json")).unwrap();
        std::fs::copy(&kept, dir.join("continuous-snapshot.json.gz")).unwrap();
        let kept = dir.join("continuous-snapshot.json.gz");

        // Listed fresh, planned at the same time.
        let once_log = dir.join("one-shot-log");
        let policy = self.policy.to_str().unwrap().to_string();
        let once = run_bin(&[
            "--policy-config-file",
            &policy,
            "--kubeconfig",
            &self.kubeconfig,
            "--dry-run",
            "-o",
            "json",
            "--now",
            &now,
            "--decision-log",
            once_log.to_str().unwrap(),
            "--decision-log-snapshot",
        ])
        .await;
        if once.code != Some(0) {
            return Err(format!(
                "{label}: the one-shot run failed ({:?}): {}",
                once.code, once.stderr
            ));
        }
        std::fs::write(dir.join("one-shot-report.json"), &once.stdout).unwrap();
        let fresh: Value = serde_json::from_str(&once.stdout).unwrap();
        let (once_path, _) = records(&once_log).pop().expect("the one-shot run's record");
        let once_record = read_record(&once_path);
        let listed = once_log.join(once_record["snapshot"].as_str().unwrap());

        // The kept snapshot, planned offline.
        let offline = run_bin(&[
            "--policy-config-file",
            &policy,
            "--snapshot",
            kept.to_str().unwrap(),
            "-o",
            "json",
            "--now",
            &now,
        ])
        .await;
        if offline.code != Some(0) {
            return Err(format!(
                "{label}: the offline run of the kept snapshot failed ({:?}): {}",
                offline.code, offline.stderr
            ));
        }
        std::fs::write(dir.join("offline-report.json"), &offline.stdout).unwrap();
        let offline: Value = serde_json::from_str(&offline.stdout).unwrap();

        let (watched, fresh_snap) = (snapshot(&kept), snapshot(&listed));
        let mut problems = snapshot_diff(&watched, &fresh_snap);
        if continuous != fresh {
            problems.push(format!(
                "the plans differ: continuous evicts {:?}, a fresh one-shot run {:?} (see the reports)",
                evictions(&continuous),
                evictions(&fresh)
            ));
        }
        if continuous != offline {
            problems.push(format!(
                "the continuous plan and the offline plan of its snapshot differ: {:?} and {:?}",
                evictions(&continuous),
                evictions(&offline)
            ));
        }
        if !problems.is_empty() {
            std::fs::write(
                dir.join("one-shot-snapshot.json"),
                serde_json::to_string_pretty(&fresh_snap).unwrap(),
            )
            .unwrap();
            std::fs::write(
                dir.join("continuous-snapshot.json"),
                serde_json::to_string_pretty(&watched).unwrap(),
            )
            .unwrap();
            std::fs::write(dir.join("differences.txt"), problems.join("\n")).unwrap();
            let shown: Vec<&String> = problems.iter().take(20).collect();
            return Err(format!(
                "{label} (seed {}, --now {now}): the watch-fed model and a fresh list differ in {} ways; both sides are kept in {}:\n{}",
                self.seed,
                problems.len(),
                dir.display(),
                shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
            ));
        }
        // Nothing to look at: keep the disk small.
        let _ = std::fs::remove_dir_all(&dir);
        let count = |kind: &str| {
            watched["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["kind"] == kind)
                .count()
        };
        Ok(Checkpoint {
            evictions: evictions(&continuous).len(),
            nodes: count("Node"),
            pods: count("Pod"),
            waited: Duration::ZERO,
        })
    }

    /// Stops the process (SIGTERM; it must exit 0) and the sampler.
    pub async fn stop(self) -> String {
        self.sampler.abort();
        let stderr = self.d.stderr();
        let code = self.d.terminate().await;
        assert_eq!(
            code,
            Some(0),
            "the descheduler's exit after SIGTERM\n{stderr}"
        );
        stderr
    }
}

/// What the samples after warm-up say: a line for the log, and the growth (percent) of
/// resident memory and of the live heap.
pub struct Resources {
    pub line: String,
    pub rss_growth: Option<f64>,
    pub heap_growth: Option<f64>,
}

/// The median of `xs` (not empty).
fn median(mut xs: Vec<u64>) -> u64 {
    xs.sort_unstable();
    xs[xs.len() / 2]
}

/// From the first to the last fifth (at least 3 samples each) of `xs`: the medians and the
/// growth in percent (medians, so a single sample taken mid-cycle does not count).
fn fifths(xs: &[u64]) -> (u64, u64, f64) {
    let fifth = (xs.len() / 5).max(3);
    let first = median(xs[..fifth].to_vec());
    let last = median(xs[xs.len() - fifth..].to_vec());
    (
        first,
        last,
        (last as f64 - first as f64) * 100.0 / first.max(1) as f64,
    )
}

/// The least-squares slope of `ys` over `xs`.
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let cov: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if var == 0.0 {
        0.0
    } else {
        cov / var
    }
}

/// Resident memory, the live heap and CPU per cycle after `warmup` cycles: growth from the
/// first to the last fifth of the samples after warm-up, and the live heap's linear trend.
pub fn resource_summary(samples: &[Sample], warmup: usize) -> Resources {
    let after: Vec<&Sample> = samples.iter().filter(|s| s.cycle > warmup).collect();
    if after.len() < 10 {
        return Resources {
            line: format!(
                "resources: {} cycles sampled, too few after a warm-up of {warmup}",
                samples.len()
            ),
            rss_growth: None,
            heap_growth: None,
        };
    }
    let (first, last, growth) = fifths(&after.iter().map(|s| s.rss_kib).collect::<Vec<_>>());
    let (a, b) = (after[0], after[after.len() - 1]);
    let ms_per_cycle = (b.cpu_ticks - a.cpu_ticks) as f64 * 1000.0
        / clock_ticks() as f64
        / (b.cycle - a.cycle).max(1) as f64;
    let peak = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    // An idle cycle's CPU: the ticks since the sample before it (the cycle before).
    let idle_ticks: Vec<u64> = (0..samples.len())
        .filter(|&i| samples[i].cycle > warmup && idle(samples, i))
        .map(|i| samples[i].cpu_ticks - samples[i - 1].cpu_ticks)
        .collect();
    let idle_line = if idle_ticks.is_empty() {
        "no idle cycle".to_string()
    } else {
        format!(
            "{} idle cycles: CPU {:.1} ms per idle cycle",
            idle_ticks.len(),
            idle_ticks.iter().sum::<u64>() as f64 * 1000.0
                / clock_ticks() as f64
                / idle_ticks.len() as f64
        )
    };
    let heap: Vec<(usize, u64)> = after
        .iter()
        .filter_map(|s| Some((s.cycle, s.heap_bytes?)))
        .collect();
    let (heap_line, heap_growth) = if heap.len() < 10 {
        (
            format!("live heap sampled {} times, too few", heap.len()),
            None,
        )
    } else {
        let bytes: Vec<u64> = heap.iter().map(|h| h.1).collect();
        let (first, last, growth) = fifths(&bytes);
        let trend = slope(
            &heap.iter().map(|h| h.0 as f64).collect::<Vec<_>>(),
            &bytes.iter().map(|&b| b as f64).collect::<Vec<_>>(),
        );
        let mib = |b: f64| b / (1 << 20) as f64;
        (
            format!(
                "live heap {:.1} MiB -> {:.1} MiB ({growth:+.1}%), trend {:+.1} KiB per cycle ({} samples)",
                mib(first as f64),
                mib(last as f64),
                trend / 1024.0,
                heap.len()
            ),
            Some(growth),
        )
    };
    Resources {
        line: format!(
            "resources: {} cycles sampled; after {warmup} cycles of warm-up: RSS {:.1} MiB -> {:.1} MiB ({growth:+.1}%), peak {:.1} MiB; {heap_line}; CPU {ms_per_cycle:.1} ms per cycle; {idle_line}",
            samples.len(),
            first as f64 / 1024.0,
            last as f64 / 1024.0,
            peak as f64 / 1024.0,
        ),
        rss_growth: Some(growth),
        heap_growth,
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}
