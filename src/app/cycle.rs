//! One cycle, the same in every mode: read the cluster ([`Cluster`]), attach what the plugins
//! measure, then one loop ([`run_cycle`]) for both acts ([`Act`]): plan with what earlier
//! cycles and this one left, attempt (a dry run attempts nothing), absorb what happened,
//! plan again or finish; then one report, built once and written once, and the cycle
//! remembered for the next.

use super::decision_log::DecisionLog;
use crate::framework::{History, Overutilized, Pipeline, PlanNote};
use crate::live::executor::{LiveCycle, LiveExecutor};
use crate::live::source::{list_snapshot, WatchSource};
use crate::live::{client::ApiClient, LiveError};
use crate::metrics::{CycleSkip, Metrics, StrategyLabels};
use crate::outcome::{Attempt, Attempts, Next, Outcome};
use crate::plan::{
    plan_with, BackgroundEvictions, CycleMemory, EvictionPlan, PlanError, PlanObserver,
};
use crate::report::{Format, Input, Report};
use crate::snapshot::decode::SnapshotError;
use crate::snapshot::{ClusterSnapshot, PodId};
use crate::usage::{UsageError, UsageFetcher};
use std::future::Future;
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
                let workloads = pipeline.surges();
                Ok(held.insert(list_snapshot(api, node_selector, workloads).await?))
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

/// What acts on a cycle's plans: a dry run attempts nothing ([`DryRun`]); the live executor
/// calls the Eviction API ([`LiveCycle`]).
pub trait Attempter {
    /// Attempts `plan`'s evictions until the plan ends or something asks for a re-plan;
    /// `memory` holds what the cycle absorbed so far.
    fn attempt(
        &mut self,
        snap: &ClusterSnapshot,
        plan: &EvictionPlan,
        memory: &CycleMemory,
    ) -> impl Future<Output = Attempts>;
}

/// A dry run: attempts nothing, so the cycle finishes with its first plan.
pub struct DryRun;

impl Attempter for DryRun {
    async fn attempt(
        &mut self,
        _: &ClusterSnapshot,
        _: &EvictionPlan,
        _: &CycleMemory,
    ) -> Attempts {
        Attempts::default()
    }
}

impl Attempter for LiveCycle<'_> {
    fn attempt(
        &mut self,
        snap: &ClusterSnapshot,
        plan: &EvictionPlan,
        memory: &CycleMemory,
    ) -> impl Future<Output = Attempts> {
        LiveCycle::attempt(self, snap, plan, memory)
    }
}

/// What one cycle did: the plan its report shows (the last plan as planned when nothing was
/// attempted, as carried out otherwise), each of its evictions' attempt in the plan's order
/// (none in a dry run), the pods evicted, and why it stopped before the plan's end.
#[derive(Debug)]
pub struct CycleRecord {
    pub plan: EvictionPlan,
    pub attempts: Vec<Attempt>,
    pub evicted: Vec<PodId>,
    pub stopped: Option<String>,
}

impl CycleRecord {
    /// What became of each eviction of the plan (empty in a dry run).
    pub fn outcomes(&self) -> Vec<Outcome> {
        self.attempts.iter().map(|a| a.outcome).collect()
    }

    /// What the cycle's report is written from.
    pub fn input<'a>(&'a self, snap: &'a ClusterSnapshot) -> Input<'a> {
        Input::Plan {
            snap,
            plan: &self.plan,
            attempts: &self.attempts,
        }
    }

    /// The cycle's report, built.
    pub fn report(&self, snap: &ClusterSnapshot) -> Report {
        Report::of(snap, &self.plan, &self.attempts)
    }
}

/// One cycle's loop, the same for a dry run and a real run: plan, attempt (a dry run
/// attempts nothing), absorb what happened into the cycle's memory, then plan again or
/// finish. So what a dry run reports is what a real run would attempt first.
pub async fn run_cycle(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
    history: &History,
    attempter: &mut impl Attempter,
    observer: &mut dyn PlanObserver,
) -> Result<CycleRecord, PlanError> {
    let memory = CycleMemory::new(history.clone());
    run_cycle_with(pipeline, snap, now, memory, attempter, observer).await
}

/// [`run_cycle`], starting from `memory` (what earlier cycles left, and the evictions in
/// the background in progress).
pub async fn run_cycle_with(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    now: i64,
    mut memory: CycleMemory,
    attempter: &mut impl Attempter,
    observer: &mut dyn PlanObserver,
) -> Result<CycleRecord, PlanError> {
    let mut attempts: Vec<Attempt> = Vec::new();
    loop {
        let planning = Instant::now();
        let plan = plan_with(pipeline, snap, now, &memory, observer)?;
        tracing::info!(
            evictions = plan.evictions.len(),
            seconds = planning.elapsed().as_secs_f64(),
            "plan ready"
        );
        let pass = attempter.attempt(snap, &plan, &memory).await;
        for a in &pass.done {
            memory.absorb(snap, Overutilized::of(&plan.findings), a);
        }
        memory.gone.extend(pass.gone);
        attempts.extend(pass.done);
        let stopped = match pass.next {
            Next::Replan => continue,
            Next::Finish => None,
            Next::Stop(why) => why,
        };
        // Nothing attempted: the plan as planned is what the report shows.
        let plan = if attempts.is_empty() {
            plan
        } else {
            plan.carried_out(snap, &attempts)
        };
        return Ok(CycleRecord {
            plan,
            attempts,
            evicted: memory.evicted,
            stopped,
        });
    }
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
    /// Upstream's EvictionsInBackground (`--feature-gates`): the evictions in the background
    /// in progress, carried from one cycle to the next (None: the gate is off).
    pub background: Option<BackgroundEvictions>,
}

impl Cycles<'_> {
    /// One cycle over the cluster just read, at `now` (unix seconds): measured usage attached,
    /// the cycle's loop ([`run_cycle`]) run with what earlier cycles left, its report written
    /// to `out`, and the cycle remembered.
    pub async fn run(
        &mut self,
        snap: &mut ClusterSnapshot,
        now: i64,
        act: &Act<'_>,
        out: &mut dyn Write,
    ) -> Result<CycleEnd, CycleError> {
        match act {
            Act::Report => self.cycle(snap, now, &mut DryRun, true, out).await,
            Act::Execute(executor) => {
                // Surges an earlier run left in flight (it died mid-surge) are completed or
                // rolled back first; the planner leaves their Deployments alone this cycle.
                if self.pipeline.surges() {
                    executor.recover_surges(snap, now).await;
                }
                self.cycle(snap, now, &mut executor.cycle(), false, out)
                    .await
            }
        }
    }

    async fn cycle(
        &mut self,
        snap: &mut ClusterSnapshot,
        now: i64,
        attempter: &mut impl Attempter,
        dry_run: bool,
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
        let mut memory = CycleMemory::new(self.history.clone());
        if let Some(background) = &mut self.background {
            memory.in_background = observe_background(background, snap, now, self.metrics.as_ref());
        }
        let record = run_cycle_with(pipeline, snap, now, memory, attempter, &mut times).await?;
        // The evictions the API refused (a disruption budget, several budgets, another
        // error): their workloads back off. A pod gone or replaced meanwhile was not refused.
        let refused: Vec<_> = record
            .attempts
            .iter()
            .filter(|a| {
                matches!(
                    a.outcome,
                    Outcome::BlockedByDisruptionBudget | Outcome::MultipleBudgets | Outcome::Failed
                )
            })
            .map(|a| a.eviction.pod)
            .collect();
        if let Some(background) = &mut self.background {
            for a in &record.attempts {
                if a.outcome == Outcome::EvictionInBackground {
                    let e = &a.eviction;
                    background.assume(snap, e.pod, &e.profile, e.plugin, now);
                }
            }
            tracing::info!(
                in_progress = background.tracked().len(),
                "evictions in the background"
            );
        }
        self.history = self
            .history
            .advance(Overutilized::of(&record.plan.findings))
            .record_evictions(snap, &record.evicted, now)
            .record_refusals(snap, &refused, now)
            .record_budget_spends(
                &pipeline.budgets,
                record
                    .attempts
                    .iter()
                    .filter(|a| a.outcome.moved())
                    .map(|a| a.eviction.budgets.as_slice()),
                now,
            );
        if let Some(m) = &self.metrics {
            m.workloads_backed_off
                .set(self.history.frozen_at(now) as i64);
        }
        if !dry_run {
            let evicted = record.evicted.len();
            tracing::info!(attempted = record.attempts.len(), evicted, "cycle done");
        }
        self.count_skips(&record.plan.notes);
        self.count_rules(&record);
        self.report(snap, now, dry_run, &record, out)?;
        let stopped = record.stopped.clone();
        if self.once {
            // The process exits right after: handing millions of small allocations back one
            // by one would take longer than the exit that reclaims them all at once.
            std::mem::forget(record);
        }
        Ok(CycleEnd { stopped })
    }

    /// Writes the cycle's report to `out`, once, and keeps it in the decision log.
    fn report(
        &self,
        snap: &ClusterSnapshot,
        now: i64,
        dry_run: bool,
        record: &CycleRecord,
        out: &mut dyn Write,
    ) -> Result<(), CycleError> {
        let rendering = Instant::now();
        // The report is built whole only where it is kept (a large plan's JSON is written
        // row by row without it).
        let kept = self.decision_log.as_ref().map(|_| record.report(snap));
        let input = kept.as_ref().map_or(record.input(snap), Input::Report);
        let mut counted = Counted { out, bytes: 0 };
        match crate::report::write(input, self.output, &mut counted).and_then(|_| counted.flush()) {
            Ok(()) => tracing::info!(
                bytes = counted.bytes,
                seconds = rendering.elapsed().as_secs_f64(),
                "report rendered"
            ),
            Err(e) if dry_run => return Err(CycleError::Report(e)),
            // The evictions are done: a report that cannot be written does not hide how the
            // cycle ended.
            Err(e) => tracing::warn!(error = %e, "the cycle's report was not printed"),
        }
        if let (Some(log), Some(report)) = (&self.decision_log, &kept) {
            keep_decision(log, snap, now, dry_run, record.stopped.clone(), report);
        }
        Ok(())
    }

    /// Counts the plugins that skipped the cycle (the planner's own notes, of no plugin,
    /// are not a plugin's).
    fn count_skips(&self, notes: &[PlanNote]) {
        if let Some(m) = &self.metrics {
            for n in notes.iter().filter(|n| n.skipped() && !n.plugin.is_empty()) {
                m.strategy_skipped(n.plugin, &n.profile);
            }
        }
    }

    /// Counts what each rule (plugin and profile) did this cycle: the evictions it planned
    /// (a real run: those attempted), the candidates it did not choose by kind of reason, the
    /// evictions refused; and the cycle itself when it was skipped for want of nodes.
    fn count_rules(&self, record: &CycleRecord) {
        let Some(m) = &self.metrics else {
            return;
        };
        if record.plan.too_few_nodes() {
            m.cycle_skipped(CycleSkip::TooFewNodes);
        }
        for e in &record.plan.evictions {
            m.planned(e.plugin, &e.profile);
        }
        m.candidates_skipped(&record.plan.skips);
        for a in record.attempts.iter().filter(|a| a.refused()) {
            m.refused(a.eviction.plugin, &a.eviction.profile, a.outcome.as_str());
        }
    }
}

/// The tracking of evictions in the background, assumed ones timing out after `timeout`.
pub fn background_evictions(timeout: Duration) -> BackgroundEvictions {
    BackgroundEvictions::new(i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX))
}

/// Brings the evictions in the background up to date with the cluster (upstream's pod
/// informer); the pods of `snap` whose eviction is in progress. An assumed eviction whose pod
/// is gone counts as a successful eviction, as upstream counts it.
fn observe_background(
    background: &mut BackgroundEvictions,
    snap: &ClusterSnapshot,
    now: i64,
    metrics: Option<&Metrics>,
) -> Vec<PodId> {
    use crate::plan::background::Ended;
    let seen = background.observe(snap, now);
    for pod in &seen.found {
        tracing::info!(%pod, "eviction in the background in progress found");
    }
    for (e, why) in &seen.ended {
        let pod = format!("{}/{}", e.namespace, e.name);
        match why {
            Ended::TimedOut => tracing::warn!(
                %pod,
                timeout_seconds = background.timeout_seconds,
                "assumed eviction in the background timed out; it may be requested again"
            ),
            _ => tracing::info!(%pod, why = why.as_str(), "eviction in the background over"),
        }
        if let (Ended::PodGone, Some((profile, plugin)), Some(m)) = (why, &e.requested_by, metrics)
        {
            m.eviction("success", plugin, profile, &e.namespace, &e.node);
        }
    }
    seen.in_progress
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

#[cfg(test)]
mod tests;
