//! One cycle, the same in every mode: read the cluster ([`Cluster`]), attach what the plugins
//! measure, plan with what earlier cycles left, then report the plan or execute it ([`Act`])
//! and report what happened, and remember the cycle for the next.

use super::decision_log::DecisionLog;
use crate::framework::{History, Pipeline, PlanNote};
use crate::live::executor::LiveExecutor;
use crate::live::source::{list_snapshot, WatchSource};
use crate::live::{client::ApiClient, LiveError};
use crate::metrics::{Metrics, StrategyLabels};
use crate::outcome::Outcome;
use crate::plan::{plan_with, CycleMemory, PlanError, PlanObserver};
use crate::report::{Format, Report, ThresholdRow};
use crate::snapshot::decode::SnapshotError;
use crate::snapshot::ClusterSnapshot;
use crate::usage::{UsageError, UsageFetcher};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where the cluster comes from.
pub enum Cluster {
    /// A snapshot file (what `kubectl get ... -o yaml|json` prints), with metrics-server
    /// figures from files when the policy reads them.
    File(SnapshotFiles),
    /// The API server, listed once (one-shot mode).
    List {
        api: ApiClient,
        node_selector: String,
    },
    /// The API server's watch caches, kept current between cycles (continuous mode). Boxed:
    /// the source holds the whole model's store.
    Watch {
        source: Box<WatchSource>,
        sync_timeout: Duration,
    },
}

/// The files an offline run reads.
#[derive(Debug, Clone)]
pub struct SnapshotFiles {
    pub snapshot: PathBuf,
    /// metrics-server node metrics (`kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes`).
    pub node_metrics: Option<PathBuf>,
    /// metrics-server pod metrics (`.../pods`).
    pub pod_metrics: Option<PathBuf>,
}

/// Why the cluster could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    UsageFiles(#[from] UsageError),
    #[error(transparent)]
    Live(#[from] LiveError),
}

impl Cluster {
    /// The cluster as it is now. A snapshot read whole (from a file or a list) is kept in
    /// `held`; the watch caches hand out their own.
    pub async fn read<'a>(
        &'a mut self,
        pipeline: &Pipeline,
        held: &'a mut Option<ClusterSnapshot>,
    ) -> Result<&'a mut ClusterSnapshot, ReadError> {
        match self {
            Cluster::File(files) => {
                let started = Instant::now();
                let mut snap = crate::snapshot::decode::load_file(&files.snapshot)?;
                tracing::info!(
                    nodes = snap.nodes.len(),
                    pods = snap.pods.len(),
                    pdbs = snap.pdbs.len(),
                    seconds = started.elapsed().as_secs_f64(),
                    "snapshot loaded"
                );
                crate::usage::attach_files(
                    pipeline,
                    &mut snap,
                    files.node_metrics.as_deref(),
                    files.pod_metrics.as_deref(),
                )?;
                Ok(held.insert(snap))
            }
            Cluster::List { api, node_selector } => {
                Ok(held.insert(list_snapshot(api, node_selector).await?))
            }
            Cluster::Watch {
                source,
                sync_timeout,
            } => Ok(source.snapshot(*sync_timeout).await?),
        }
    }
}

/// What a cycle does with its plan.
pub enum Act<'a> {
    /// Report it (a dry run, and every offline run).
    Report,
    /// Execute it through the Eviction API, then report what happened.
    Execute(&'a LiveExecutor),
}

/// How a cycle ended.
#[derive(Debug, Default)]
pub struct CycleEnd {
    /// Why the executor stopped before the plan's end, when the API kept failing.
    pub stopped: Option<String>,
}

/// Why a cycle failed.
#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("writing the report: {0}")]
    Report(#[source] std::io::Error),
}

/// The cycles of one run: the pipeline, what the plugins measure, and the memory carried from
/// one cycle to the next.
pub struct Cycles<'p> {
    pub pipeline: &'p Pipeline,
    pub usage: UsageFetcher,
    /// What earlier cycles left (continuous mode); a single cycle starts with none.
    pub history: History,
    pub output: Format,
    /// Where strategy durations and skips are counted (live mode); offline, plugin times are
    /// logged instead.
    pub metrics: Option<Metrics>,
    /// Whether the process exits after this run's only cycle (its large allocations are then
    /// left to the exit).
    pub once: bool,
    /// Where each cycle's report is kept (`--decision-log`).
    pub decision_log: Option<DecisionLog>,
    /// The policy's utilization thresholds, drawn on the HTML report's node bars.
    pub thresholds: Vec<ThresholdRow>,
}

impl Cycles<'_> {
    /// One cycle over the cluster just read, at `now` (unix seconds): measured usage attached,
    /// the plan made with what earlier cycles left, then reported to `out`, or executed and
    /// what happened reported.
    pub async fn run(
        &mut self,
        snap: &mut ClusterSnapshot,
        now: i64,
        act: &Act<'_>,
        out: &mut dyn Write,
    ) -> Result<CycleEnd, CycleError> {
        let pipeline = self.pipeline;
        if self.usage.is_needed() {
            self.usage.attach(pipeline, snap).await;
        }
        // Where the replacements of recently evicted workloads landed.
        self.history = self.history.observe(snap, now);
        let mut times = PluginTimes {
            metrics: self.metrics.as_ref(),
            started: None,
        };
        match act {
            Act::Report => {
                let memory = CycleMemory {
                    history: self.history.clone(),
                    ..CycleMemory::default()
                };
                let planning = Instant::now();
                let plan = plan_with(pipeline, snap, now, &memory, &mut times)?;
                tracing::info!(
                    evictions = plan.evictions.len(),
                    seconds = planning.elapsed().as_secs_f64(),
                    "plan ready"
                );
                // Nothing was evicted: no eviction to remember.
                self.history = self.history.advance(&plan.over);
                self.count_skips(&plan.notes);
                let rendering = Instant::now();
                let mut counted = Counted { out, bytes: 0 };
                // The report is built whole only where it is needed (a large plan's JSON is
                // written row by row without it).
                let report = (self.output == Format::Html || self.decision_log.is_some())
                    .then(|| Report::new(snap, &plan));
                match &report {
                    Some(report) if self.output == Format::Html => {
                        crate::report::write_html(report, &self.thresholds, &mut counted)
                    }
                    _ => crate::report::write_plan(snap, &plan, self.output, &mut counted),
                }
                .and_then(|_| counted.flush())
                .map_err(CycleError::Report)?;
                tracing::info!(
                    bytes = counted.bytes,
                    seconds = rendering.elapsed().as_secs_f64(),
                    "report rendered"
                );
                if let (Some(log), Some(report)) = (&self.decision_log, &report) {
                    keep_decision(log, snap, now, true, None, report);
                }
                if self.once {
                    // The process exits right after: handing millions of small allocations
                    // back one by one would take longer than the exit that reclaims them all
                    // at once.
                    std::mem::forget(plan);
                }
                Ok(CycleEnd::default())
            }
            Act::Execute(executor) => {
                let r = executor
                    .run_cycle(pipeline, snap, now, &self.history, &mut times)
                    .await?;
                self.history = self
                    .history
                    .advance(&r.over)
                    .record_evictions(snap, &r.evicted, now);
                let evicted = r
                    .outcomes
                    .iter()
                    .filter(|o| **o == Outcome::Evicted)
                    .count();
                tracing::info!(attempted = r.outcomes.len(), evicted, "cycle done");
                if let Some(m) = &self.metrics {
                    for n in r.report.notes.iter().filter(|n| n.skipped) {
                        m.strategy_skipped(&n.plugin, &n.profile);
                    }
                }
                // The evictions are done: a report that cannot be written does not hide how
                // the cycle ended.
                let written = match self.output {
                    Format::Html => crate::report::write_html(&r.report, &self.thresholds, out),
                    format => r.report.write_to(format, out),
                };
                if let Err(e) = written.and_then(|_| out.flush()) {
                    tracing::warn!(error = %e, "the cycle's report was not printed");
                }
                if let Some(log) = &self.decision_log {
                    keep_decision(log, snap, now, false, r.stopped.clone(), &r.report);
                }
                Ok(CycleEnd { stopped: r.stopped })
            }
        }
    }

    /// Counts the plugins that skipped the cycle.
    fn count_skips(&self, notes: &[PlanNote]) {
        if let Some(m) = &self.metrics {
            for n in notes.iter().filter(|n| n.skipped()) {
                m.strategy_skipped(n.plugin, &n.profile);
            }
        }
    }
}

/// Writes the cycle's record to the decision log; a record that cannot be written is
/// logged, and does not stop the cycles (as a report that cannot be printed).
fn keep_decision(
    log: &DecisionLog,
    snap: &ClusterSnapshot,
    now: i64,
    dry_run: bool,
    stopped: Option<String>,
    report: &Report,
) {
    let started = Instant::now();
    match log.write(snap, now, dry_run, stopped, report) {
        Ok(path) => tracing::info!(
            file = %path.display(),
            seconds = started.elapsed().as_secs_f64(),
            "decision recorded"
        ),
        Err(e) => tracing::warn!(error = %e, "the cycle's decision was not recorded"),
    }
}

/// Times each plugin of a plan: into the strategy duration metric when there are metrics
/// (live), in the log otherwise (offline, `-v 1` and up).
struct PluginTimes<'m> {
    metrics: Option<&'m Metrics>,
    started: Option<Instant>,
}

impl PlanObserver for PluginTimes<'_> {
    fn plugin_started(&mut self, _profile: &str, _plugin: &'static str) {
        self.started = Some(Instant::now());
    }
    fn plugin_finished(&mut self, profile: &str, plugin: &'static str, planned: usize) {
        let Some(t) = self.started.take() else {
            return;
        };
        match self.metrics {
            Some(m) => m
                .strategy_duration
                .get_or_create(&StrategyLabels {
                    strategy: plugin.to_string(),
                    profile: profile.to_string(),
                })
                .observe(t.elapsed().as_secs_f64()),
            None => tracing::info!(
                profile,
                plugin,
                planned,
                seconds = t.elapsed().as_secs_f64(),
                "plugin finished"
            ),
        }
    }
}

/// A writer that counts the bytes written through it.
struct Counted<'w> {
    out: &'w mut dyn Write,
    bytes: usize,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
