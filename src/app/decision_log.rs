//! The decision log (`--decision-log DIR`): every cycle's report (the plan, what happened to
//! each eviction, notes, candidates not chosen, the snapshot's counts) as one JSON file named
//! by the cycle's time, so that "why was this pod evicted at 03:12?" has an answer on disk.
//! With `--decision-log-snapshot` the snapshot the cycle planned from is kept beside it,
//! gzip-compressed, as a `kind: List` that `--snapshot` reads: the cycle can be planned again
//! offline (`--now` set to the record's `now`).
//!
//! Files are written under a temporary name and renamed, so a reader never sees half a file.
//! After each cycle the oldest records (each with its snapshot) are removed until at most
//! `max_files` records and `max_bytes` bytes are left; the newest record always stays.

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

impl DecisionLog {
    /// Creates the directory when missing and checks that files can be written in it.
    pub fn open(&self) -> Result<(), DecisionLogError> {
        let dir_error = |source| DecisionLogError::Dir {
            dir: self.dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(dir_error)?;
        let probe = self.dir.join(".write-check");
        std::fs::write(&probe, b"").map_err(dir_error)?;
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
        let stem = self.free_stem(&written.format("%Y%m%dT%H%M%S%.3fZ").to_string());
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
            time: written.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
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
        self.atomic(&name, |out| {
            serde_json::to_writer_pretty(&mut *out, &record)?;
            out.write_all(b"\n")?;
            out.flush()
        })?;
        self.prune()?;
        Ok(self.dir.join(name))
    }

    /// `decision-<time>`, with a counter when a record of that name exists.
    fn free_stem(&self, time: &str) -> String {
        let base = format!("{PREFIX}{time}");
        let taken = |stem: &str| self.dir.join(format!("{stem}{RECORD}")).exists();
        if !taken(&base) {
            return base;
        }
        (1..)
            .map(|i| format!("{base}-{i}"))
            .find(|s| !taken(s))
            .expect("a free name")
    }

    /// Writes `name` through a temporary file renamed into place.
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
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let result = std::fs::File::create(&tmp).and_then(|f| {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, f);
            fill(&mut out)?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&tmp, self.dir.join(name))
        });
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(error)
    }

    /// Removes the oldest records, each with its snapshot, until the bounds hold; the
    /// newest record stays whatever its size.
    fn prune(&self) -> Result<(), DecisionLogError> {
        let error = |source| DecisionLogError::Dir {
            dir: self.dir.display().to_string(),
            source,
        };
        let mut records = records(&self.dir).map_err(error)?;
        let mut total: u64 = records.iter().map(|r| r.bytes).sum();
        let mut count = records.len();
        // Newest first (names sort by time): the oldest is the last.
        while count > 1 && (count > self.max_files.max(1) || total > self.max_bytes) {
            let Some(oldest) = records.pop() else { break };
            for path in &oldest.files {
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

/// One record on disk: its files (the record, and its snapshot when kept) and their size.
struct OnDisk {
    files: Vec<PathBuf>,
    bytes: u64,
}

/// The records in `dir`, newest first.
fn records(dir: &Path) -> std::io::Result<Vec<OnDisk>> {
    let mut stems: std::collections::BTreeMap<String, OnDisk> = Default::default();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let stem = match rest.strip_suffix(SNAPSHOT) {
            Some(stem) => stem,
            None => match rest.strip_suffix(RECORD) {
                Some(stem) => stem,
                None => continue,
            },
        };
        let bytes = entry.metadata()?.len();
        let on_disk = stems.entry(stem.to_string()).or_insert(OnDisk {
            files: Vec::new(),
            bytes: 0,
        });
        on_disk.files.push(entry.path());
        on_disk.bytes += bytes;
    }
    Ok(stems.into_values().rev().collect())
}

/// The records in `dir`, oldest first, read back (for tools and tests).
pub fn read_all(dir: &Path) -> std::io::Result<Vec<(PathBuf, Decision)>> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(RECORD))
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
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
            tenants: Vec::new(),
            pending: Vec::new(),
            read: None,
        }
    }

    #[test]
    fn records_are_kept_within_the_count_and_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let log = DecisionLog {
            dir: dir.path().join("log"),
            keep_snapshot: true,
            max_files: 3,
            max_bytes: u64::MAX,
        };
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
}
