//! The decision log (`--decision-log DIR`): every cycle's report (the plan, what happened to
//! each eviction, notes, candidates not chosen, the snapshot's counts) as one JSON file named
//! by the cycle's time, so that "why was this pod evicted at 03:12?" has an answer on disk.
//! With `--decision-log-snapshot` the snapshot the cycle planned from is kept beside it,
//! gzip-compressed, as a `kind: List` that `--snapshot` reads: the cycle can be planned again
//! offline (`--now` set to the record's `now`).
//!
//! Files are written under a temporary name of their own, made new (never opened through a
//! link someone planted), and renamed, so a reader never sees half a file. After each cycle
//! the oldest records (each with its snapshot) are removed until at most `max_files` records
//! and `max_bytes` bytes are left; the record just written always stays. Only the log's own
//! records count and go: regular files named exactly as it names them
//! (`decision-<time>[-<n>].json`, `decision-<time>[-<n>].snapshot.json.gz`) and holding what
//! it writes there (a record opens with the `time` its name says; a snapshot is gzip),
//! ordered by that time. Anything else in the directory is left alone.

use crate::report::{ReadRow, Report};
use crate::snapshot::ClusterSnapshot;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the records go, and how many are kept.
#[derive(Debug, Clone)]
pub struct DecisionLog {
    pub dir: PathBuf,
    /// Keep the snapshot of each cycle beside its record.
    pub keep_snapshot: bool,
    /// The most records kept (at least 1).
    pub max_files: usize,
    /// The most bytes the records and snapshots take together.
    pub max_bytes: u64,
}

/// What a record says besides the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// When the record was written (RFC 3339, UTC).
    pub time: String,
    /// The cycle's planning time, unix seconds: `--now` for a replay.
    pub now: i64,
    /// The planning time as RFC 3339, ready for `--now`.
    pub now_rfc3339: String,
    /// `dry-run` (the plan was reported) or `evict` (it was executed; each eviction carries
    /// its `result`).
    pub mode: String,
    /// How many objects of each kind the cycle planned from.
    pub read: ReadRow,
    /// The kept snapshot's file name in the same directory, when one was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// Why the executor stopped before the plan's end, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub report: Report,
}

/// Why the decision log cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DecisionLogError {
    #[error("--decision-log {dir}: cannot create or write the directory ({source}); give a writable directory (in a pod, mount a volume there)")]
    Dir {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--decision-log {dir}: reading the earlier records for the eviction budgets: {source}; fix or remove the damaged record, or give another directory")]
    Read {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--decision-log {dir}: writing {file}: {source}")]
    Write {
        dir: String,
        file: String,
        #[source]
        source: std::io::Error,
    },
}

const PREFIX: &str = "decision-";
const RECORD: &str = ".json";
const SNAPSHOT: &str = ".snapshot.json.gz";
/// The time in a record's name: `20261202T031200.123Z`.
const TIME: &str = "%Y%m%dT%H%M%S%.3fZ";

impl DecisionLog {
    /// Creates the directory when missing and checks that files can be written in it.
    pub fn open(&self) -> Result<(), DecisionLogError> {
        let dir_error = |source| DecisionLogError::Dir {
            dir: self.dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(dir_error)?;
        // A file of a name no one else uses, made new: whatever else is in the directory
        // (a link planted at a fixed name) is left alone.
        let (probe, file) = create_new_unique(&self.dir, ".write-check").map_err(dir_error)?;
        drop(file);
        std::fs::remove_file(&probe).map_err(dir_error)?;
        Ok(())
    }

    /// Writes one cycle's record (and its snapshot when kept), then removes the oldest
    /// records past the bounds. Returns the record's path.
    pub fn write(
        &self,
        snap: &ClusterSnapshot,
        now: i64,
        dry_run: bool,
        stopped: Option<String>,
        report: &Report,
    ) -> Result<PathBuf, DecisionLogError> {
        let written = chrono::Utc::now();
        // To the millisecond, as the name says it.
        let stamp = self.free_stamp(chrono::SubsecRound::trunc_subsecs(written.naive_utc(), 3));
        let stem = stamp.stem();
        let snapshot = if self.keep_snapshot {
            let name = format!("{stem}{SNAPSHOT}");
            self.atomic(&name, |out| {
                let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
                crate::snapshot::encode::write_list(snap, &mut gz)?;
                gz.finish()?.flush()
            })?;
            Some(name)
        } else {
            None
        };
        let record = DecisionRef {
            time: stamp.rfc3339(),
            now,
            now_rfc3339: chrono::DateTime::from_timestamp(now, 0)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_default(),
            mode: if dry_run { "dry-run" } else { "evict" },
            read: ReadRow::of(snap),
            snapshot: snapshot.as_deref(),
            stopped: stopped.as_deref(),
            report,
        };
        let name = format!("{stem}{RECORD}");
        let result = self.atomic(&name, |out| {
            serde_json::to_writer_pretty(&mut *out, &record)?;
            out.write_all(b"\n")?;
            out.flush()
        });
        if let (Err(_), Some(snapshot)) = (&result, &snapshot) {
            // A snapshot without its record is no use to anyone.
            let _ = std::fs::remove_file(self.dir.join(snapshot));
        }
        result?;
        self.prune(stamp)?;
        Ok(self.dir.join(name))
    }

    /// The stamp of `time`, with a counter when a record or a snapshot of that name, or
    /// anything else by that name, is in the directory.
    fn free_stamp(&self, time: chrono::NaiveDateTime) -> Stamp {
        let taken = |stamp: &Stamp| {
            let stem = stamp.stem();
            [RECORD, SNAPSHOT].iter().any(|suffix| {
                // Not `exists`: a link counts whether or not it leads anywhere.
                std::fs::symlink_metadata(self.dir.join(format!("{stem}{suffix}"))).is_ok()
            })
        };
        (0..)
            .map(|counter| Stamp { time, counter })
            .find(|s| !taken(s))
            .expect("a free name")
    }

    /// Writes `name` through a temporary file made new and renamed into place (a rename
    /// replaces a link at `name`, never what it points to).
    fn atomic(
        &self,
        name: &str,
        fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
    ) -> Result<(), DecisionLogError> {
        let error = |source| DecisionLogError::Write {
            dir: self.dir.display().to_string(),
            file: name.to_string(),
            source,
        };
        let (tmp, f) = create_new_unique(&self.dir, &format!(".{name}")).map_err(error)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, f);
        let result = fill(&mut out)
            .and_then(|()| out.into_inner().map_err(|e| e.into_error()))
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&tmp, self.dir.join(name)));
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(error)
    }

    /// Removes the oldest of the log's own records, each with its snapshot, until the
    /// bounds hold; the record just written (`just`) stays whatever its size. Files that
    /// are not the log's own (by name and content) are neither counted nor touched.
    fn prune(&self, just: Stamp) -> Result<(), DecisionLogError> {
        let error = |source| DecisionLogError::Dir {
            dir: self.dir.display().to_string(),
            source,
        };
        let records = records(&self.dir).map_err(error)?;
        let mut total: u64 = records.iter().map(|r| r.bytes).sum();
        let mut count = records.len();
        // Oldest first, by the records' own time.
        for oldest in records.iter().filter(|r| r.stamp != just) {
            if count <= self.max_files.max(1) && total <= self.max_bytes {
                break;
            }
            for (_, path) in &oldest.files {
                match std::fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(error(e)),
                }
            }
            total -= oldest.bytes;
            count -= 1;
        }
        Ok(())
    }
}

/// A file made new in `dir`, named `prefix` and a suffix no other file has; never opened
/// through a link (a name taken by anything, a link included, is passed over).
fn create_new_unique(dir: &Path, prefix: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut last = None;
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{prefix}.{}-{nanos}-{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// A record's own time: when it was written (the time in its name, to the millisecond),
/// then its counter among records of the same millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Stamp {
    time: chrono::NaiveDateTime,
    counter: u32,
}

impl Stamp {
    /// `decision-<time>`, and `-<counter>` after the first of a millisecond.
    fn stem(&self) -> String {
        let time = self.time.format(TIME);
        match self.counter {
            0 => format!("{PREFIX}{time}"),
            n => format!("{PREFIX}{time}-{n}"),
        }
    }

    /// The time as a record's `time` field holds it.
    fn rfc3339(&self) -> String {
        self.time
            .and_utc()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }
}

/// Which of a record's files a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Record,
    Snapshot,
}

/// The stamp and part of a file the log names, exactly as it names them; None for any
/// other name (`decision-notes.json`, a time the log would not write).
fn own_name(name: &str) -> Option<(Stamp, Part)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (stem, part) = match rest.strip_suffix(SNAPSHOT) {
        Some(stem) => (stem, Part::Snapshot),
        None => (rest.strip_suffix(RECORD)?, Part::Record),
    };
    let (time, counter) = match stem.split_once('-') {
        Some((time, counter)) => {
            let digits = counter.bytes().all(|b| b.is_ascii_digit());
            if !digits || counter.starts_with('0') {
                return None;
            }
            (time, counter.parse().ok()?)
        }
        None => (stem, 0),
    };
    let time = chrono::NaiveDateTime::parse_from_str(time, TIME).ok()?;
    let stamp = Stamp { time, counter };
    // Only the form the log writes: the same text back.
    (stamp.stem() == format!("{PREFIX}{stem}")).then_some((stamp, part))
}

/// Whether the regular file at `path` holds what the log writes under that name: a record
/// opens with its `time`, the one its name says; a snapshot is gzip-compressed.
fn own_content(path: &Path, stamp: &Stamp, part: Part) -> std::io::Result<bool> {
    use std::io::Read;
    let expected = match part {
        Part::Record => format!("{{\n  \"time\": \"{}\"", stamp.rfc3339()).into_bytes(),
        Part::Snapshot => vec![0x1f, 0x8b],
    };
    let mut head = Vec::with_capacity(expected.len());
    std::fs::File::open(path)?
        .take(expected.len() as u64)
        .read_to_end(&mut head)?;
    Ok(head == expected)
}

/// A record as written (borrowing the report; [`Decision`] is what reads it back).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DecisionRef<'a> {
    time: String,
    now: i64,
    now_rfc3339: String,
    mode: &'static str,
    read: ReadRow,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<&'a str>,
    report: &'a Report,
}

/// One record on disk: its own time, its files (the record, and its snapshot when kept;
/// the record first) and their size.
struct OnDisk {
    stamp: Stamp,
    files: Vec<(Part, PathBuf)>,
    bytes: u64,
}

/// The log's own records in `dir` (regular files of its names and content), oldest first.
fn records(dir: &Path) -> std::io::Result<Vec<OnDisk>> {
    let mut stamps: std::collections::BTreeMap<Stamp, OnDisk> = Default::default();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some((stamp, part)) = name.to_str().and_then(own_name) else {
            continue;
        };
        // Not a link, a directory or a device (the entry's own type, not its target's).
        let meta = match entry.metadata() {
            Ok(meta) if meta.is_file() => meta,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let path = entry.path();
        match own_content(&path, &stamp, part) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
        let on_disk = stamps.entry(stamp).or_insert(OnDisk {
            stamp,
            files: Vec::new(),
            bytes: 0,
        });
        on_disk.files.push((part, path));
        on_disk.files.sort();
        on_disk.bytes += meta.len();
    }
    Ok(stamps.into_values().collect())
}

impl DecisionLog {
    /// What earlier cycles recorded here that counts against the policy's eviction `budgets`
    /// at `now`: budget name → the planning time of each eviction carried out (`result:
    /// evicted`) that counted against it, within its period. This is how a one-shot run (a
    /// CronJob) and a restarted Deployment count evictions made before they started. Records
    /// written before the longest period (with an hour's margin for long cycles) are not read.
    pub fn budget_spends(
        &self,
        budgets: &[crate::policy::EvictionBudget],
        now: i64,
    ) -> Result<std::collections::BTreeMap<String, Vec<i64>>, DecisionLogError> {
        let mut out: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
        let Some(longest) = budgets.iter().filter_map(|b| b.period).max() else {
            return Ok(out);
        };
        let read = |e: std::io::Error| DecisionLogError::Read {
            dir: self.dir.display().to_string(),
            source: e,
        };
        let from = now - longest - 3600;
        for r in records(&self.dir).map_err(read)? {
            if r.stamp.time.and_utc().timestamp() < from {
                continue;
            }
            let Some((_, path)) = r.files.iter().find(|(part, _)| *part == Part::Record) else {
                continue;
            };
            let text = std::fs::read(path).map_err(read)?;
            let d: Decision = serde_json::from_slice(&text).map_err(|e| {
                read(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                ))
            })?;
            if d.now > now {
                continue;
            }
            for e in d
                .report
                .evictions
                .iter()
                .filter(|e| e.result.as_deref() == Some("evicted"))
            {
                for name in &e.budgets {
                    let Some(period) = budgets
                        .iter()
                        .find(|b| &b.name == name)
                        .and_then(|b| b.period)
                    else {
                        continue;
                    };
                    if d.now > now - period {
                        out.entry(name.clone()).or_default().push(d.now);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The records in `dir`, oldest first, read back (for tools and tests).
pub fn read_all(dir: &Path) -> std::io::Result<Vec<(PathBuf, Decision)>> {
    records(dir)?
        .into_iter()
        .filter_map(|r| r.files.into_iter().find(|(part, _)| *part == Part::Record))
        .map(|(_, p)| {
            let text = std::fs::read(&p)?;
            let d = serde_json::from_slice(&text).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: {e}", p.display()),
                )
            })?;
            Ok((p, d))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::builders::{node, pod};

    fn snapshot() -> ClusterSnapshot {
        crate::snapshot::builders::snapshot(
            vec![node("n1").cpu(4000).build()],
            vec![pod("ns", "p1").node("n1").cpu(500).build()],
        )
    }

    fn empty_report() -> Report {
        Report {
            evictions: Vec::new(),
            nodes: Vec::new(),
            notes: Vec::new(),
            not_chosen: Vec::new(),
            findings: Default::default(),
            read: None,
            thresholds: Vec::new(),
        }
    }

    /// A log in `dir` that keeps at most `max_files` records, of any size.
    fn log_in(dir: PathBuf, keep_snapshot: bool, max_files: usize) -> DecisionLog {
        DecisionLog {
            dir,
            keep_snapshot,
            max_files,
            max_bytes: u64::MAX,
        }
    }

    /// A file outside the log that no write may touch.
    fn precious(dir: &Path) -> PathBuf {
        let target = dir.join("precious");
        std::fs::write(&target, "keep me").unwrap();
        target
    }

    #[test]
    fn earlier_evictions_count_against_the_budgets_with_a_period() {
        let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nevictionBudgets:\n- {name: hourly, evictions: 2, period: 1h}\n- {name: per-cycle, evictions: 2}\nprofiles:\n- name: p\n  pluginConfig:\n  - {name: PodLifeTime, args: {maxPodLifeTimeSeconds: 60}}\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n";
        let policy =
            crate::policy::Policy::from_yaml("p.yaml", text, &crate::plugins::REGISTRY).unwrap();
        let budgets = policy.budgets("p.yaml", &crate::plugins::REGISTRY).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path().join("log"), false, 100);
        log.open().unwrap();
        let snap = snapshot();
        let row = |result: Option<&str>, budgets: &[&str]| crate::report::EvictionRow {
            mechanism: "evict".into(),
            pod: "ns/p1".into(),
            node: "n1".into(),
            profile: "p".into(),
            plugin: "PodLifeTime".into(),
            reason: "old".into(),
            destination: None,
            alternatives: Vec::new(),
            gang: None,
            budgets: budgets.iter().map(|b| b.to_string()).collect(),
            result: result.map(str::to_string),
            landed: None,
        };
        let with = |evictions| Report {
            evictions,
            ..empty_report()
        };
        let now = 100_000;
        // Within the hour: two evicted (one also of a budget the policy no longer has), one
        // refused, and a dry run's plan.
        log.write(
            &snap,
            now - 600,
            false,
            None,
            &with(vec![
                row(Some("evicted"), &["hourly", "gone"]),
                row(Some("blocked_by_disruption_budget"), &["hourly"]),
            ]),
        )
        .unwrap();
        log.write(
            &snap,
            now - 60,
            false,
            None,
            &with(vec![row(Some("evicted"), &["hourly"])]),
        )
        .unwrap();
        log.write(
            &snap,
            now - 30,
            true,
            None,
            &with(vec![row(None, &["hourly"])]),
        )
        .unwrap();
        // Over an hour ago, and later than now: not counted.
        log.write(
            &snap,
            now - 3_600,
            false,
            None,
            &with(vec![row(Some("evicted"), &["hourly"])]),
        )
        .unwrap();
        log.write(
            &snap,
            now + 5,
            false,
            None,
            &with(vec![row(Some("evicted"), &["hourly"])]),
        )
        .unwrap();
        let spent = log.budget_spends(&budgets, now).unwrap();
        assert_eq!(
            spent,
            std::collections::BTreeMap::from([("hourly".to_string(), vec![now - 600, now - 60])])
        );
        // No budget with a period: nothing is read.
        assert!(log.budget_spends(&budgets[1..], now).unwrap().is_empty());
        // A damaged record is an error that names the directory and the fix.
        let mut records: Vec<_> = std::fs::read_dir(&log.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        records.sort();
        // Cut in the middle: it still opens as a record of the log.
        let whole = std::fs::read(&records[0]).unwrap();
        std::fs::write(&records[0], &whole[..whole.len() / 2]).unwrap();
        let e = log.budget_spends(&budgets, now).unwrap_err().to_string();
        assert!(
            e.contains("--decision-log")
                && e.contains("reading the earlier records")
                && e.contains("fix or remove"),
            "{e}"
        );
    }

    #[test]
    fn records_are_kept_within_the_count_and_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path().join("log"), true, 3);
        log.open().unwrap();
        let snap = snapshot();
        let mut written = Vec::new();
        for i in 0..5 {
            written.push(
                log.write(&snap, 1_000 + i, true, None, &empty_report())
                    .unwrap(),
            );
        }
        let kept = read_all(&log.dir).unwrap();
        let kept_paths: Vec<_> = kept.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(kept_paths, written[2..], "the three newest stay");
        let nows: Vec<i64> = kept.iter().map(|(_, d)| d.now).collect();
        assert_eq!(nows, [1_002, 1_003, 1_004]);
        // Each record names its snapshot, which is there; the removed ones' are gone.
        let files = std::fs::read_dir(&log.dir).unwrap().count();
        assert_eq!(files, 6, "three records and three snapshots");
        for (_, d) in &kept {
            let name = d.snapshot.as_ref().unwrap();
            let back = crate::snapshot::decode::load_file(&log.dir.join(name)).unwrap();
            assert_eq!(back.pods.len(), 1);
            assert_eq!(d.read.pods, 1);
            assert_eq!(d.mode, "dry-run");
            assert_eq!(
                d.now_rfc3339,
                format!("1970-01-01T00:16:{:02}Z", d.now - 960)
            );
        }
        // A bound in bytes: room for about two records, so the older ones go.
        let one = kept
            .iter()
            .map(|(p, d)| {
                std::fs::metadata(p).unwrap().len()
                    + std::fs::metadata(log.dir.join(d.snapshot.as_ref().unwrap()))
                        .unwrap()
                        .len()
            })
            .max()
            .unwrap();
        let by_bytes = DecisionLog {
            max_files: 100,
            max_bytes: 2 * one + one / 2,
            ..log.clone()
        };
        by_bytes
            .write(&snap, 2_000, false, None, &empty_report())
            .unwrap();
        let kept = read_all(&log.dir).unwrap();
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert_eq!(kept[1].1.now, 2_000);
        assert_eq!(kept[1].1.mode, "evict");
        // The newest stays even when it alone is past the bound.
        let tiny = DecisionLog {
            max_bytes: 1,
            ..by_bytes
        };
        tiny.write(&snap, 3_000, true, None, &empty_report())
            .unwrap();
        let kept = read_all(&log.dir).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].1.now, 3_000);
    }

    #[test]
    fn an_unwritable_directory_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        let log = DecisionLog {
            dir: file.join("log"),
            keep_snapshot: false,
            max_files: 1,
            max_bytes: 1,
        };
        let e = log.open().unwrap_err().to_string();
        assert!(e.contains("--decision-log") && e.contains("a-file"), "{e}");
        assert!(e.contains("writable directory"), "{e}");
    }

    /// Links to `target` at every name a record written in the `ms` milliseconds from
    /// `from` would have had, and at the temporary names the log once used for them.
    #[cfg(unix)]
    fn plant_links(dir: &Path, target: &Path, from: chrono::DateTime<chrono::Utc>, ms: i64) {
        for i in 0..ms {
            let t = from + chrono::Duration::milliseconds(i);
            let stem = format!("{PREFIX}{}", t.format("%Y%m%dT%H%M%S%.3fZ"));
            for name in [
                format!(".{stem}{RECORD}.tmp"),
                format!(".{stem}{SNAPSHOT}.tmp"),
                format!("{stem}{RECORD}"),
                format!("{stem}{SNAPSHOT}"),
            ] {
                std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_planted_in_the_directory_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = precious(dir.path());
        let log = log_in(dir.path().join("log"), true, 100);
        std::fs::create_dir(&log.dir).unwrap();
        // The writability check's name, and every name of the next two seconds' records.
        std::os::unix::fs::symlink(&target, log.dir.join(".write-check")).unwrap();
        log.open().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        plant_links(&log.dir, &target, chrono::Utc::now(), 2_000);
        let written = log
            .write(&snapshot(), 1_000, true, None, &empty_report())
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        // The record is a file of its own, and it names its snapshot, also one.
        assert!(std::fs::symlink_metadata(&written).unwrap().is_file());
        let kept = read_all(&log.dir).unwrap();
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert_eq!(kept[0].0, written);
        let snap = log.dir.join(kept[0].1.snapshot.as_ref().unwrap());
        assert!(std::fs::symlink_metadata(&snap).unwrap().is_file());
        assert_eq!(
            crate::snapshot::decode::load_file(&snap)
                .unwrap()
                .pods
                .len(),
            1
        );
        // The planted links are left as they were: not removed, not counted as records.
        assert!(std::fs::symlink_metadata(log.dir.join(".write-check"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[cfg(unix)]
    #[test]
    fn a_file_renamed_over_a_link_replaces_the_link_not_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = precious(dir.path());
        let log = log_in(dir.path().join("log"), false, 1);
        log.open().unwrap();
        let name = log.dir.join("decision-x.json");
        std::os::unix::fs::symlink(&target, &name).unwrap();
        log.atomic("decision-x.json", |out| out.write_all(b"new"))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(std::fs::symlink_metadata(&name).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&name).unwrap(), "new");
    }

    /// Files a user keeps beside the records, by name and content.
    fn foreign_files(dir: &Path) -> Vec<(&'static str, &'static str)> {
        let files = vec![
            ("decision-notes.json", "{\"mine\": true}\n"),
            ("decision-zzz.json", "zzz\n"),
            // A record's name, not a record's content.
            ("decision-20990101T000000.000Z.json", "{\"user\": 1}\n"),
            (
                "decision-20000101T000000.000Z.snapshot.json.gz",
                "not gzip\n",
            ),
            ("decision-2026.json", "{}\n"),
            ("notes.txt", "hello\n"),
        ];
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        files
    }

    #[test]
    fn retention_removes_only_its_own_records_and_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let snap = snapshot();
        for (max_files, max_bytes) in [(1, u64::MAX), (100, 1)] {
            let log = DecisionLog {
                dir: dir.path().join(format!("log-{max_files}")),
                keep_snapshot: true,
                max_files,
                max_bytes,
            };
            log.open().unwrap();
            let foreign = foreign_files(&log.dir);
            let mut last = None;
            for i in 0..3 {
                last = Some(
                    log.write(&snap, 1_000 + i, true, None, &empty_report())
                        .unwrap(),
                );
            }
            for (name, text) in &foreign {
                assert_eq!(
                    std::fs::read_to_string(log.dir.join(name)).unwrap(),
                    *text,
                    "{name} (max files {max_files}, max bytes {max_bytes})"
                );
            }
            let kept = read_all(&log.dir).unwrap();
            assert_eq!(kept.len(), 1, "{kept:?}");
            assert_eq!(Some(&kept[0].0), last.as_ref());
            assert_eq!(kept[0].1.now, 1_002);
            let names: Vec<String> = std::fs::read_dir(&log.dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names.len(), foreign.len() + 2, "{names:?}");
        }
    }

    #[test]
    fn the_record_just_written_stays_even_behind_a_later_one() {
        // A record of a clock ahead of this one's (another replica's, copied in).
        let dir = tempfile::tempdir().unwrap();
        let log = log_in(dir.path().to_path_buf(), false, 1);
        log.open().unwrap();
        let first = log
            .write(&snapshot(), 1_000, true, None, &empty_report())
            .unwrap();
        let text = std::fs::read_to_string(&first).unwrap();
        let (_, d) = &read_all(&log.dir).unwrap()[0];
        let later = text.replace(&d.time, "2099-01-01T00:00:00.000Z");
        std::fs::remove_file(&first).unwrap();
        let ahead = log.dir.join("decision-20990101T000000.000Z.json");
        std::fs::write(&ahead, later).unwrap();
        let written = log
            .write(&snapshot(), 2_000, true, None, &empty_report())
            .unwrap();
        assert!(written.exists());
        assert!(
            !ahead.exists(),
            "the other record is the one past the bound"
        );
        let kept = read_all(&log.dir).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].1.now, 2_000);
    }

    #[test]
    fn records_are_ordered_by_their_own_time() {
        let later = own_name("decision-20260101T000000.000Z-10.json").unwrap();
        let earlier = own_name("decision-20260101T000000.000Z-9.json").unwrap();
        let first = own_name("decision-20260101T000000.000Z.json").unwrap();
        assert!(first < earlier && earlier < later);
        assert!(
            own_name("decision-20260101T000000.000Z.snapshot.json.gz")
                .unwrap()
                .0
                == first.0
        );
        for foreign in [
            "decision-notes.json",
            "decision-zzz.json",
            "decision-20261301T000000.000Z.json",
            "decision-20260101T000000.000Z-0.json",
            "decision-20260101T000000.000Z-01.json",
            "decision-20260101T000000.000Zx.json",
            "decision-20260101T000000Z.json",
            "decision-20260101T000000.000Z.json.bak",
            ".decision-20260101T000000.000Z.json.tmp",
        ] {
            assert!(own_name(foreign).is_none(), "{foreign}");
        }
    }
}
