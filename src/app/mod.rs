//! What both modes orchestrate, in one place: load the policy, read the cluster, plan, report,
//! act.
//!
//! A cycle's sequence is written once ([`Cycles`]); the modes differ only in where the cluster
//! comes from ([`Cluster`]: a snapshot file, one list, or the watch caches) and whether
//! evictions are executed ([`Act`]: report the plan, or execute it and report what happened).
//! Offline ([`run_offline`]) is one cycle over a file, reported; live ([`runner::run`])
//! repeats cycles against the API server on a schedule, with leader election, the admin
//! servers and clean shutdown.
//!
//! `cli` turns flags into one of the two; `live` holds everything that talks to the API
//! server; the planner (`framework`, `plan`, `plugins`, `sim`) knows nothing of this module.

pub mod cycle;
pub mod decision_log;
pub mod runner;
pub mod trigger;

pub use cycle::{
    run_cycle, Act, Attempter, Cluster, CycleEnd, CycleError, CycleRecord, Cycles, DryRun,
    ReadError, SnapshotFiles,
};
pub use decision_log::{DecisionLog, DecisionLogError};
pub use runner::{LiveOptions, RunError};

use crate::framework::{History, Pipeline};
use crate::policy::scheduler_config::{SchedulerConfig, SchedulerConfigError};
use crate::policy::{Policy, PolicyError};
use crate::report::Format;
use crate::usage::{UsageError, UsageFetcher};
use std::io::Write;
use std::path::Path;

/// Loads the policy and builds its pipeline through the plugin registry: the first step of
/// every mode. Nothing runs on an invalid policy.
pub fn load_policy(
    path: &Path,
    predict_destinations: bool,
) -> Result<(Policy, Pipeline), PolicyError> {
    let policy = Policy::load(path, &crate::plugins::REGISTRY)?;
    with_pipeline(policy, &path.display().to_string(), predict_destinations)
}

/// [`load_policy`] for a policy given as text (a ConfigMap's); `source` names it in errors.
pub fn policy_from_text(
    source: &str,
    text: &str,
    predict_destinations: bool,
) -> Result<(Policy, Pipeline), PolicyError> {
    let policy = Policy::from_yaml(source, text, &crate::plugins::REGISTRY)?;
    with_pipeline(policy, source, predict_destinations)
}

fn with_pipeline(
    policy: Policy,
    source: &str,
    predict_destinations: bool,
) -> Result<(Policy, Pipeline), PolicyError> {
    let mut pipeline = Pipeline::build(&policy, source, &crate::plugins::REGISTRY)?;
    pipeline.predict_destinations = predict_destinations;
    Ok((policy, pipeline))
}

/// Reads a KubeSchedulerConfiguration (`--scheduler-config`) and gives the pipeline the
/// profile of `scheduler_name`, so that destinations are scored as that scheduler scores.
pub fn load_scheduler_config(
    pipeline: &mut Pipeline,
    path: &Path,
    scheduler_name: &str,
) -> Result<(), SchedulerConfigError> {
    let config = SchedulerConfig::load(path)?;
    let file = path.display().to_string();
    let profile = config.profile(&file, scheduler_name)?;
    for warning in config.warnings_for(&file, scheduler_name) {
        tracing::warn!("{warning}");
    }
    pipeline.scheduler_profile = Some(profile);
    Ok(())
}

/// Why an offline run failed.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The Prometheus source cannot be set up.
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error(transparent)]
    Cycle(#[from] CycleError),
    #[error("{0}")]
    Runtime(#[source] std::io::Error),
}

impl OfflineError {
    /// Whether the input is at fault (the snapshot, the metrics files, the Prometheus
    /// settings, a policy the snapshot cannot satisfy), not the machine.
    pub fn is_invalid_input(&self) -> bool {
        !matches!(
            self,
            OfflineError::Runtime(_) | OfflineError::Cycle(CycleError::Report(_))
        )
    }
}

/// Offline: one cycle over a snapshot file (`--snapshot`), planned at `now` (unix seconds)
/// and reported to `out`. Nothing is evicted.
pub fn run_offline(
    pipeline: &Pipeline,
    files: SnapshotFiles,
    now: i64,
    output: Format,
    decision_log: Option<DecisionLog>,
    background: Option<std::time::Duration>,
    out: &mut dyn Write,
) -> Result<(), OfflineError> {
    // Offline planning may still read live Prometheus figures: the queries run now.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(OfflineError::Runtime)?;
    rt.block_on(async {
        let mut cluster = Cluster::File(files);
        let mut held = None;
        let snap = cluster.read(pipeline, &mut held).await?;
        // Without a cluster client only the Prometheus queries are fetched; metrics-server
        // figures come from the files.
        let usage = UsageFetcher::new(pipeline, None, false, None).await?;
        let mut cycles = Cycles {
            pipeline,
            usage,
            history: History::default(),
            output,
            metrics: None,
            once: true,
            decision_log,
            background: background.map(cycle::background_evictions),
        };
        cycles.run(snap, now, &Act::Report, out).await?;
        // The process exits right after printing (see `Cycles`).
        std::mem::forget(held);
        Ok(())
    })
}
