//! Live mode: read the cluster, plan, evict (or only report, with --dry-run), and repeat on
//! the schedule. One cycle and exit for a Job or CronJob; a loop with watch caches and
//! optional leader election for a Deployment. SIGTERM finishes the eviction in flight and
//! stops.

use super::admin;
use super::client::ApiClient;
use super::executor::{ExecutorConfig, Gate, LiveExecutor};
use super::leader::{LeaderConfig, LeaderElector};
use super::source::{list_snapshot, WatchSource};
use super::LiveError;
use crate::framework::Pipeline;
use crate::metrics::{Metrics, StrategyLabels};
use crate::plan::{plan_with, CycleMemory, PlanObserver};
use crate::report::Format;
use crate::schedule::Schedule;
use crate::snapshot::ClusterSnapshot;
use prometheus_client::registry::Registry;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub kubeconfig: Option<PathBuf>,
    pub qps: f64,
    pub burst: u32,
    pub dry_run: bool,
    pub schedule: Schedule,
    pub leader: Option<LeaderConfig>,
    /// The admin servers to start (HTTPS on the secure port, plain HTTP when asked for).
    pub admin: Vec<admin::AdminServer>,
    pub executor: ExecutorConfig,
    pub output: Format,
    pub sync_timeout: Duration,
    /// Continuous mode: how long a workload that had a pod evicted, and a node that received
    /// rescheduled pods, are left alone (zero: no memory of evictions).
    pub eviction_cooldown: Duration,
    /// The planning time (`--now`, unix seconds) of a one-shot cycle; None: the clock's.
    pub now: Option<i64>,
    /// Lists of pods and nodes in the API's protobuf encoding (else JSON).
    pub protobuf: bool,
}

/// Why live mode stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("planning failed: {0}")]
    Plan(#[from] crate::plan::PlanError),
    #[error("metrics source: {0}")]
    Usage(#[from] crate::usage::UsageError),
}

struct Timing<'m> {
    metrics: &'m Metrics,
    started: Option<Instant>,
}

impl PlanObserver for Timing<'_> {
    fn plugin_started(&mut self, _profile: &str, _plugin: &'static str) {
        self.started = Some(Instant::now());
    }
    fn plugin_finished(&mut self, profile: &str, plugin: &'static str, _planned: usize) {
        if let Some(t) = self.started.take() {
            self.metrics
                .strategy_duration
                .get_or_create(&StrategyLabels {
                    strategy: plugin.to_string(),
                    profile: profile.to_string(),
                })
                .observe(t.elapsed().as_secs_f64());
        }
    }
}

enum Source {
    List,
    /// Boxed: the source holds the whole model's store.
    Watch(Box<WatchSource>),
}

fn watch_signals(shutdown: Arc<AtomicBool>) {
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "cannot listen for SIGTERM");
                    return;
                }
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down: finishing the eviction in flight");
        shutdown.store(true, Ordering::SeqCst);
    });
}

/// Sleeps for `d`, waking early on shutdown. Returns false on shutdown.
async fn sleep_unless(d: Duration, shutdown: &AtomicBool) -> bool {
    let step = Duration::from_millis(100);
    let end = Instant::now() + d;
    while Instant::now() < end {
        if shutdown.load(Ordering::SeqCst) {
            return false;
        }
        tokio::time::sleep(step.min(end - Instant::now())).await;
    }
    !shutdown.load(Ordering::SeqCst)
}

fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Counts the plugins that skipped the cycle.
fn count_skips(metrics: &Metrics, report: &crate::report::Report) {
    for n in report.notes.iter().filter(|n| n.skipped) {
        metrics.strategy_skipped(&n.plugin, &n.profile);
    }
}

/// Runs live mode until the schedule ends, a signal arrives or leadership is lost.
pub async fn run(pipeline: &Pipeline, opts: LiveOptions) -> Result<(), RunError> {
    let mut api = ApiClient::new(opts.kubeconfig.as_deref(), opts.qps, opts.burst).await?;
    api.protobuf = opts.protobuf;
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let registry = Arc::new(registry);
    let ready = Arc::new(AtomicBool::new(false));
    for server in &opts.admin {
        let bound = admin::serve(server, registry.clone(), ready.clone(), &api.client).await?;
        let scheme = match server.transport {
            admin::Transport::Https(_) => "https",
            admin::Transport::Http => "http",
        };
        tracing::info!(address = %bound, scheme, metrics = server.metrics, "serving /healthz and /readyz");
    }
    let shutdown = Arc::new(AtomicBool::new(false));
    watch_signals(shutdown.clone());

    let (leading, mut elector) = match &opts.leader {
        Some(cfg) => {
            let e = LeaderElector::new(api.client.clone(), cfg.clone());
            let leading = e.leading();
            (leading, Some(tokio::spawn(e.run(shutdown.clone()))))
        }
        None => (Arc::new(AtomicBool::new(true)), None),
    };
    let gate = Gate::new(shutdown.clone(), leading.clone());
    let executor = LiveExecutor::new(api.clone(), opts.executor.clone(), metrics.clone(), gate);
    let mut source = match opts.schedule {
        Schedule::Once => Source::List,
        // Every node: the policy's nodeSelector picks the nodes plugins work on (the planner
        // applies it), but a pod evicted from them may land on any node of the cluster, which
        // the DefaultEvictor's nodeFit and the placement simulator consider, as upstream's do.
        _ => Source::Watch(Box::new(WatchSource::start(&api, ""))),
    };

    let continuous = !matches!(opts.schedule, Schedule::Once);
    let mut usage = crate::usage::UsageFetcher::new(
        pipeline,
        Some(api.client.clone()),
        continuous,
        Some(metrics.clone()),
    )
    .await?;
    // Memory across cycles; a single cycle has none, so it has no cooldown either.
    let cooldown = if continuous {
        opts.eviction_cooldown.as_secs() as i64
    } else {
        0
    };
    let mut history = crate::framework::History::with_cooldown(cooldown);
    let result = loop {
        if shutdown.load(Ordering::SeqCst) {
            break Ok(());
        }
        // Only the leader plans and evicts.
        if !leading.load(Ordering::SeqCst) {
            if let Some(h) = &elector {
                if h.is_finished() {
                    let h = elector.take().expect("present");
                    break match h.await {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(e.into()),
                        Err(e) => Err(LiveError::Leader(e.to_string()).into()),
                    };
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        let started = chrono::Utc::now();
        let t0 = Instant::now();
        // One-shot: the snapshot listed now; continuous: the watched state, kept in the source.
        let mut listed: Option<ClusterSnapshot> = None;
        let snap: Result<&mut ClusterSnapshot, LiveError> = match &mut source {
            Source::List => match list_snapshot(&api, "").await {
                Ok(s) => Ok(listed.insert(s)),
                Err(e) => Err(e),
            },
            Source::Watch(w) => w.snapshot(opts.sync_timeout).await,
        };
        match snap {
            Err(e) if matches!(opts.schedule, Schedule::Once) => break Err(e.into()),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the cluster; nothing is evicted this cycle")
            }
            Ok(snap) => {
                ready.store(true, Ordering::SeqCst);
                if usage.is_needed() {
                    usage.attach(pipeline, snap).await;
                }
                tracing::info!(
                    nodes = snap.nodes.len(),
                    pods = snap.pods.len(),
                    "cluster read"
                );
                let now = opts.now.unwrap_or_else(|| chrono::Utc::now().timestamp());
                // Where the replacements of recently evicted workloads landed.
                history = history.observe(snap, now);
                let mut timing = Timing {
                    metrics: &metrics,
                    started: None,
                };
                if opts.dry_run {
                    let memory = CycleMemory {
                        history: history.clone(),
                        ..CycleMemory::default()
                    };
                    match plan_with(pipeline, snap, now, &memory, &mut timing) {
                        Ok(plan) => {
                            // Nothing was evicted: no eviction to remember.
                            history = history.advance(&plan.over);
                            let report = crate::report::Report::new(snap, &plan);
                            count_skips(&metrics, &report);
                            print(&report.render(opts.output))
                        }
                        Err(e) => break Err(e.into()),
                    }
                } else {
                    match executor
                        .run_cycle(pipeline, snap, now, &history, &mut timing)
                        .await
                    {
                        Ok(r) => {
                            history = history
                                .record_evictions(snap, &r.evicted, now)
                                .advance(&r.over);
                            let evicted = r
                                .outcomes
                                .iter()
                                .filter(|o| **o == crate::outcome::Outcome::Evicted)
                                .count();
                            tracing::info!(attempted = r.outcomes.len(), evicted, "cycle done");
                            count_skips(&metrics, &r.report);
                            print(&r.report.render(opts.output));
                            // One cycle cannot go on: exit non-zero (the Job's controller
                            // retries). Continuous mode tries again next cycle.
                            if let (Some(why), Schedule::Once) = (r.stopped, &opts.schedule) {
                                break Err(LiveError::Stopped(why).into());
                            }
                        }
                        Err(e) => break Err(e.into()),
                    }
                }
                metrics.loop_duration.observe(t0.elapsed().as_secs_f64());
            }
        }
        match opts.schedule.wait(started, chrono::Utc::now()) {
            None => {
                // One cycle, then the process exits: handing the snapshot's many small
                // allocations back one by one would take longer than the exit that reclaims
                // them all at once (as offline).
                std::mem::forget(listed);
                break Ok(());
            }
            Some(d) => {
                if !sleep_unless(d, &shutdown).await {
                    break Ok(());
                }
            }
        }
    };
    // Let the elector release the lease.
    shutdown.store(true, Ordering::SeqCst);
    if let Some(h) = elector {
        match h.await {
            Ok(Err(e)) if result.is_ok() => return Err(e.into()),
            _ => {}
        }
    }
    result
}
