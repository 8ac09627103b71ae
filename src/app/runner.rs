//! Live mode: the cycles of [`super::cycle`] against the API server (read, plan, evict or
//! only report with --dry-run), repeated on the schedule. One cycle and exit for a Job or
//! CronJob; a loop with watch caches and optional leader election for a Deployment. SIGTERM
//! finishes the eviction in flight and stops; while the cluster is being read (no eviction
//! can be in flight then) it stops at once. Every call to the API server goes through
//! `live`, each under its deadline.

use super::cycle::{Act, Cluster, CycleEnd, CycleError, Cycles, ReadError};
use super::trigger::{OnChange, Step, Trigger};
use crate::framework::{History, Pipeline};
use crate::live::admin;
use crate::live::cancel::{Cancel, Leadership};
use crate::live::changes::{pending_due, protection_ends, Signal, WorkWatch};
use crate::live::client::ApiClient;
use crate::live::executor::{ExecutorConfig, Gate, LiveExecutor};
use crate::live::leader::{LeaderConfig, LeaderElector};
use crate::live::source::WatchSource;
use crate::live::LiveError;
use crate::metrics::{CycleSkip, Metrics};
use crate::report::Format;
use crate::schedule::Schedule;
use crate::snapshot::ClusterSnapshot;
use crate::usage::UsageFetcher;
use prometheus_client::registry::Registry;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig's context to use; None: its current context.
    pub context: Option<String>,
    pub qps: f64,
    pub burst: u32,
    /// The deadline of each API request (`--request-timeout`; None: none).
    pub request_timeout: Option<Duration>,
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
    /// Continuous mode: the longest freeze of a workload whose moves keep failing (the
    /// cooldown doubles per failure in a row, up to this).
    pub eviction_backoff_max: Duration,
    /// Upstream's EvictionsInBackground (`--feature-gates`): how long an assumed eviction in
    /// the background stays in progress (None: the gate is off).
    pub background: Option<Duration>,
    /// The planning time (`--now`, unix seconds) of a one-shot cycle; None: the clock's.
    pub now: Option<i64>,
    /// Lists of pods and nodes in the API's protobuf encoding (else JSON).
    pub protobuf: bool,
    /// Where each cycle's report (and snapshot) is kept.
    pub decision_log: Option<super::DecisionLog>,
    /// `--cycle-on-change`: cycles started by what the watch sees, the interval the longest
    /// wait (continuous mode with `--descheduling-interval` only).
    pub on_change: Option<OnChangeOptions>,
}

/// How `--cycle-on-change` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnChangeOptions {
    pub timing: OnChange,
    /// MakeRoomForPendingPods' `minPendingSeconds` when the policy enables it: a pending pod
    /// is work once past it; None: any newly Pending pod is work.
    pub pending_after: Option<i64>,
    /// The plan may differ on an unchanged cluster (a rule that depends on pods' ages or on
    /// measured usage): a cycle due by the interval always runs.
    pub clock_driven: bool,
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
    #[error("stopped by SIGTERM while reading the cluster; nothing was evicted")]
    Interrupted,
    #[error(transparent)]
    DecisionLog(#[from] super::DecisionLogError),
}

impl RunError {
    /// Whether the input is at fault (exit 2), not the cluster or the machine.
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, RunError::Live(e) if e.is_invalid_input())
    }
}

impl From<ReadError> for RunError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Live(e) => RunError::Live(e),
            ReadError::Snapshot(e) => RunError::Live(LiveError::Decode(e)),
            ReadError::UsageFiles(e) => RunError::Usage(e),
        }
    }
}

/// Cancels `shutdown` on SIGTERM (or Ctrl-C).
fn watch_signals(shutdown: Cancel) {
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
        tracing::warn!("SIGTERM: stopping; no eviction is started from now on");
        shutdown.cancel();
    });
}

/// Sleeps for `d`, waking early on shutdown or when leadership is lost. Returns false on
/// shutdown.
async fn sleep_unless(d: Duration, shutdown: &Cancel, leading: &Leadership) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = shutdown.cancelled() => {}
        _ = leading.lost() => {}
    }
    !shutdown.is_cancelled()
}

/// With `--cycle-on-change`, how soon a cycle that could not read the cluster is tried again
/// (at the latest: the interval).
const RETRY_AFTER_READ_ERROR: Duration = Duration::from_secs(10);

/// The plugins whose plans change with the clock alone (pods' ages, time pending, time
/// since a failure).
const CLOCK_DRIVEN: [&str; 3] = ["PodLifeTime", "RemoveFailedPods", "MakeRoomForPendingPods"];

impl OnChangeOptions {
    /// `--cycle-on-change` with `timing`, for `policy` and its `pipeline`.
    pub fn of(timing: OnChange, policy: &crate::policy::Policy, pipeline: &Pipeline) -> Self {
        let enabled_in = |p: &crate::framework::ProfilePipeline, name: &str| {
            p.deschedule
                .iter()
                .chain(&p.balance)
                .any(|pl| pl.name() == name)
        };
        let enabled = |name: &str| pipeline.profiles.iter().any(|p| enabled_in(p, name));
        let pending_after = policy
            .profiles
            .iter()
            .filter(|p| {
                pipeline
                    .profiles
                    .iter()
                    .any(|q| q.name == p.name && enabled_in(q, "MakeRoomForPendingPods"))
            })
            .map(|p| {
                p.plugin_config("MakeRoomForPendingPods")
                    .and_then(|(_, c)| {
                        serde_json::from_value::<
                            crate::plugins::make_room_for_pending_pods::MakeRoomForPendingPodsArgs,
                        >(c.args.clone())
                        .ok()
                    })
                    .unwrap_or_default()
                    .min_pending_seconds
            })
            .min();
        let min_pod_age = policy.profiles.iter().any(|p| {
            p.plugin_config("DefaultEvictor")
                .is_some_and(|(_, c)| c.args.get("minPodAge").is_some_and(|v| !v.is_null()))
        });
        OnChangeOptions {
            timing,
            pending_after,
            clock_driven: CLOCK_DRIVEN.iter().any(|n| enabled(n))
                || min_pod_age
                || !policy.eviction_budgets.is_empty()
                || !pipeline.usage_needs().is_empty(),
        }
    }
}

/// Whether a cycle due by the interval must run on an unchanged cluster: the policy's rules
/// depend on the clock or measured usage (or it has eviction budgets, whose windows and
/// periods move with it), or the memory of earlier cycles (evictions in their cooldown or
/// back-off, nodes overutilized in a row) changes with time.
fn time_matters(on_change: &OnChangeOptions, history: &History) -> bool {
    on_change.clock_driven
        || !history.moves.is_empty()
        || !history.frozen.is_empty()
        || !history.received.is_empty()
        || !history.over_nodes.is_empty()
}

/// The instant of a time in unix seconds, seen at `now` (unix seconds).
fn instant_of(at: i64, now: i64) -> Instant {
    Instant::now() + Duration::from_secs(at.saturating_sub(now).max(0) as u64)
}

/// `--cycle-on-change`: waits until the next cycle is due, taking in what the watch sees
/// meanwhile; a cycle due on an unchanged cluster is skipped and counted. False on shutdown.
async fn wait_for_work(
    trigger: &mut Trigger,
    source: &mut WatchSource,
    time_matters: bool,
    metrics: &Metrics,
    shutdown: &Cancel,
    leading: &Leadership,
) -> bool {
    loop {
        let until = match trigger.step(Instant::now(), time_matters) {
            Step::Run(cause) => {
                tracing::debug!(?cause, "cycle due");
                return true;
            }
            Step::SkipUnchanged => {
                metrics.cycle_skipped(CycleSkip::Unchanged);
                tracing::info!("no change to the cluster since the last cycle; cycle skipped");
                continue;
            }
            Step::WaitUntil(at) => at,
        };
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => {}
            signal = source.next_change() => {
                let now = chrono::Utc::now().timestamp();
                match signal {
                    None => {}
                    Some(Signal::Changed) => trigger.changed(),
                    Some(Signal::Work) => {
                        trigger.changed();
                        trigger.work_at(Instant::now());
                    }
                    Some(Signal::WorkAt(at)) => {
                        trigger.changed();
                        trigger.work_at(instant_of(at, now));
                    }
                }
            }
            _ = shutdown.cancelled() => return false,
            // Not leading: the loop waits to lead again.
            _ = leading.lost() => return true,
        }
    }
}

/// The cycles of a live run: memory across cycles, which a single cycle has none of (so no
/// cooldown either); what the decision log says earlier runs spent of the eviction budgets.
fn cycles<'p>(
    pipeline: &'p Pipeline,
    usage: UsageFetcher,
    opts: &LiveOptions,
    once: bool,
    metrics: &Metrics,
) -> Result<Cycles<'p>, RunError> {
    let cooldown = if once {
        0
    } else {
        opts.eviction_cooldown.as_secs() as i64
    };
    let mut history = History::with_cooldown(cooldown)
        .with_backoff_cap(opts.eviction_backoff_max.as_secs() as i64);
    // Evictions of earlier runs count against the eviction budgets' periods: a CronJob's
    // run, or a restarted Deployment, reads them from the decision log.
    if let Some(log) = &opts.decision_log {
        let now = opts.now.unwrap_or_else(|| chrono::Utc::now().timestamp());
        history.budget_spent = log.budget_spends(&pipeline.budgets, now)?;
        let counted: usize = history.budget_spent.values().map(Vec::len).sum();
        if counted > 0 {
            tracing::info!(
                evictions = counted,
                "evictions of earlier runs in the decision log count against the eviction budgets"
            );
        }
    }
    Ok(Cycles {
        pipeline,
        usage,
        history,
        output: opts.output,
        metrics: Some(metrics.clone()),
        once,
        decision_log: opts.decision_log.clone(),
        background: opts.background.map(super::cycle::background_evictions),
    })
}

/// The API client of `opts`.
async fn connect(opts: &LiveOptions) -> Result<ApiClient, LiveError> {
    let mut api = ApiClient::connect(
        opts.kubeconfig.as_deref(),
        opts.context.as_deref(),
        opts.qps,
        opts.burst,
        opts.request_timeout,
    )
    .await?;
    api.protobuf = opts.protobuf;
    Ok(api)
}

/// Where live cycles read the cluster: listed once (`once`), or the watch caches. Every
/// node: the policy's nodeSelector picks the nodes plugins work on (the planner applies
/// it), but a pod evicted from them may land on any node of the cluster, which the
/// DefaultEvictor's nodeFit and the placement simulator consider, as upstream's do.
/// The workloads a surge reads are read only when a profile surges (`workloads`).
fn cluster(opts: &LiveOptions, api: &ApiClient, once: bool, workloads: bool) -> Cluster {
    if once {
        Cluster::List {
            api: api.clone(),
            node_selector: String::new(),
        }
    } else {
        Cluster::Watch {
            source: Box::new(WatchSource::start(api, "", workloads)),
            sync_timeout: opts.sync_timeout,
        }
    }
}

/// Starts the admin servers (`/healthz`, `/readyz`, `/metrics`).
async fn serve_admin(
    opts: &LiveOptions,
    registry: &Arc<Registry>,
    ready: &Arc<AtomicBool>,
    api: &ApiClient,
) -> Result<(), RunError> {
    for server in &opts.admin {
        let bound = admin::serve(server, registry.clone(), ready.clone(), &api.client).await?;
        let scheme = match server.transport {
            admin::Transport::Https(_) => "https",
            admin::Transport::Http => "http",
        };
        tracing::info!(address = %bound, scheme, metrics = server.metrics, "serving /healthz and /readyz");
    }
    Ok(())
}

/// The leader election's task, when asked for, and whether this instance leads (always,
/// without election).
fn elect(opts: &LiveOptions, api: &ApiClient, shutdown: &Cancel) -> (Leadership, Option<Elector>) {
    match &opts.leader {
        Some(cfg) => {
            let e = LeaderElector::new(api.client.clone(), cfg.clone());
            let leading = e.leading();
            (leading, Some(tokio::spawn(e.run(shutdown.clone()))))
        }
        None => (Leadership::always(), None),
    }
}

type Elector = tokio::task::JoinHandle<Result<(), LiveError>>;

/// Waits, while this instance does not lead, until it does, a signal asks to stop, or the
/// leader election's task ends (then how the run ends; the task is taken).
async fn follow(
    elector: &mut Option<Elector>,
    leading: &Leadership,
    shutdown: &Cancel,
) -> Option<Result<(), RunError>> {
    // Without an election this instance leads for good: not leading then (no election left
    // to wait for) ends the run rather than spinning.
    let Some(h) = elector.as_mut() else {
        return Some(Ok(()));
    };
    let joined = tokio::select! {
        joined = h => joined,
        _ = leading.gained() => return None,
        _ = shutdown.cancelled() => return None,
    };
    *elector = None;
    Some(match joined {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.into()),
        Err(e) => Err(LiveError::Leader(e.to_string()).into()),
    })
}

/// How the run ends after a cycle that ended as `cycle`; None when it goes on.
fn run_ends(cycle: Result<CycleEnd, CycleError>, once: bool) -> Option<Result<(), RunError>> {
    match cycle {
        // One cycle cannot go on: exit non-zero (the Job's controller retries). Continuous
        // mode tries again next cycle.
        Ok(CycleEnd {
            stopped: Some(why), ..
        }) if once => Some(Err(LiveError::Stopped(why).into())),
        Ok(_) => None,
        Err(CycleError::Plan(e)) => Some(Err(e.into())),
        // A report that cannot be written does not stop the evictions.
        Err(e @ CycleError::Report(_)) => {
            tracing::warn!(error = %e, "the cycle's report was not printed");
            None
        }
    }
}

/// Runs live mode until the schedule ends, a signal arrives or leadership is lost; each
/// cycle's report goes to `out`.
pub async fn run(
    pipeline: &Pipeline,
    opts: LiveOptions,
    out: &mut dyn Write,
) -> Result<(), RunError> {
    let shutdown = Cancel::new();
    watch_signals(shutdown.clone());
    let once = matches!(opts.schedule, Schedule::Once);
    // Until the first cycle's plan, no eviction can be in flight: a signal ends the run at
    // once (a one-shot run did not do its work: exit 1; continuous mode stops as on any
    // SIGTERM).
    let interrupted = || {
        if once {
            Err(RunError::Interrupted)
        } else {
            tracing::warn!("stopped by SIGTERM while reading the cluster; nothing was evicted");
            Ok(())
        }
    };
    let api = tokio::select! {
        api = connect(&opts) => api?,
        _ = shutdown.cancelled() => return interrupted(),
    };
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    let registry = Arc::new(registry);
    let ready = Arc::new(AtomicBool::new(false));
    serve_admin(&opts, &registry, &ready, &api).await?;
    let (leading, mut elector) = elect(&opts, &api, &shutdown);
    let gate = Gate::new(shutdown.clone(), leading.clone());
    let executor = LiveExecutor::new(api.clone(), opts.executor.clone(), metrics.clone(), gate);
    let act = if opts.dry_run {
        Act::Report
    } else {
        Act::Execute(&executor)
    };
    let mut cluster = cluster(&opts, &api, once, pipeline.surges());
    let mut trigger = match (&opts.on_change, &mut cluster) {
        (Some(o), Cluster::Watch { source, .. }) => {
            source.watch_for_work(WorkWatch::new(o.pending_after));
            let mut t = Trigger::new(o.timing, Instant::now());
            // The first cycle runs at once.
            let _ = t.step(Instant::now(), false);
            Some(t)
        }
        _ => None,
    };
    let usage = tokio::select! {
        usage = UsageFetcher::new(
            pipeline,
            Some(api.client.clone()),
            !once,
            Some(metrics.clone()),
        ) => usage?,
        _ = shutdown.cancelled() => return interrupted(),
    };
    let mut cycles = cycles(pipeline, usage, &opts, once, &metrics)?;
    let result = loop {
        if shutdown.is_cancelled() {
            break Ok(());
        }
        // Only the leader plans and evicts.
        if !leading.is_leading() {
            if let Some(ended) = follow(&mut elector, &leading, &shutdown).await {
                break ended;
            }
            continue;
        }
        let started = chrono::Utc::now();
        let t0 = Instant::now();
        // One-shot: the snapshot listed now; continuous: the watched state, kept in the source.
        let mut listed: Option<ClusterSnapshot> = None;
        let read = tokio::select! {
            read = cluster.read(pipeline, &mut listed) => read,
            _ = shutdown.cancelled() => break interrupted(),
        };
        match read {
            Err(e) if once => break Err(e.into()),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the cluster; nothing is evicted this cycle");
                // With --cycle-on-change, try again soon rather than after an interval.
                if let Some(t) = &mut trigger {
                    t.work_at(Instant::now() + RETRY_AFTER_READ_ERROR);
                }
            }
            Ok(snap) => {
                ready.store(true, Ordering::SeqCst);
                tracing::info!(
                    nodes = snap.nodes.len(),
                    pods = snap.pods.len(),
                    "cluster read"
                );
                let now = opts.now.unwrap_or_else(|| chrono::Utc::now().timestamp());
                // A pending pod that crosses MakeRoomForPendingPods' threshold later is work
                // then, with no event to say so.
                if let (Some(t), Some(o)) = (&mut trigger, &opts.on_change) {
                    if let Some(due) = o.pending_after.and_then(|a| pending_due(snap, a, now)) {
                        t.work_at(instant_of(due, now));
                    }
                    // So is a pod whose time-bounded protection ends.
                    if let Some(end) = protection_ends(snap, now) {
                        t.work_at(instant_of(end, now));
                    }
                }
                if let Some(ended) = run_ends(cycles.run(snap, now, &act, out).await, once) {
                    break ended;
                }
                metrics.loop_duration.observe(t0.elapsed().as_secs_f64());
            }
        }
        if let (Some(t), Some(o), Cluster::Watch { source, .. }) =
            (&mut trigger, &opts.on_change, &mut cluster)
        {
            let time_matters = time_matters(o, &cycles.history);
            if !wait_for_work(t, source, time_matters, &metrics, &shutdown, &leading).await {
                break Ok(());
            }
            continue;
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
                if !sleep_unless(d, &shutdown, &leading).await {
                    break Ok(());
                }
            }
        }
    };
    // Let the elector release the lease.
    shutdown.cancel();
    released(elector, result).await
}

/// The run's `result` once the leader election's task, if any, has ended (released the
/// lease); its error when the run had none.
async fn released(elector: Option<Elector>, result: Result<(), RunError>) -> Result<(), RunError> {
    if let Some(h) = elector {
        match h.await {
            Ok(Err(e)) if result.is_ok() => return Err(e.into()),
            _ => {}
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(policy: &str) -> OnChangeOptions {
        let yaml = format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n{policy}");
        let (policy, pipeline) = crate::app::policy_from_text("p.yaml", &yaml, false).unwrap();
        let timing = OnChange {
            debounce: Duration::from_millis(200),
            min_gap: Duration::from_secs(1),
            interval: Duration::from_secs(600),
        };
        OnChangeOptions::of(timing, &policy, &pipeline)
    }

    #[test]
    fn the_pending_threshold_and_the_clock_come_from_the_policy() {
        // Requests only, no rule that ages: an unchanged cluster plans the same.
        let o = options(
            "profiles:\n- name: a\n  pluginConfig:\n  - name: LowNodeUtilization\n    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}\n  plugins: {balance: {enabled: [LowNodeUtilization]}}\n",
        );
        assert_eq!((o.pending_after, o.clock_driven), (None, false));
        // MakeRoomForPendingPods: its threshold (the smallest of the profiles enabling it;
        // a pluginConfig of a profile that does not enable it does not count), and pending
        // time is the clock's.
        let o = options(
            "profiles:\n- name: a\n  pluginConfig:\n  - name: MakeRoomForPendingPods\n    args: {minPendingSeconds: 120}\n  plugins: {balance: {enabled: [MakeRoomForPendingPods]}}\n- name: b\n  pluginConfig:\n  - name: MakeRoomForPendingPods\n    args: {minPendingSeconds: 5}\n  - name: RemoveDuplicates\n  plugins: {balance: {enabled: [RemoveDuplicates]}}\n",
        );
        assert_eq!((o.pending_after, o.clock_driven), (Some(120), true));
        // Its default threshold.
        let o = options(
            "profiles:\n- name: a\n  plugins: {balance: {enabled: [MakeRoomForPendingPods]}}\n",
        );
        assert_eq!(o.pending_after, Some(60));
        // Eviction budgets: their windows open and close, their periods pass.
        let o = options(
            "evictionBudgets:\n- name: hourly\n  evictions: 1\n  period: 1h\nprofiles:\n- name: a\n  pluginConfig:\n  - name: RemoveDuplicates\n  plugins: {balance: {enabled: [RemoveDuplicates]}}\n",
        );
        assert!(o.clock_driven);
        // Ages: PodLifeTime, or the evictor's minPodAge.
        let o = options(
            "profiles:\n- name: a\n  pluginConfig:\n  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 60}\n  plugins: {deschedule: {enabled: [PodLifeTime]}}\n",
        );
        assert!(o.clock_driven);
        let o = options(
            "profiles:\n- name: a\n  pluginConfig:\n  - name: DefaultEvictor\n    args: {minPodAge: 1h}\n  - name: RemoveDuplicates\n  plugins: {balance: {enabled: [RemoveDuplicates]}}\n",
        );
        assert!(o.clock_driven);
    }

    #[test]
    fn a_memory_of_recent_evictions_makes_time_matter() {
        let o = options(
            "profiles:\n- name: a\n  pluginConfig:\n  - name: RemoveDuplicates\n  plugins: {balance: {enabled: [RemoveDuplicates]}}\n",
        );
        assert!(!time_matters(&o, &History::with_cooldown(600)));
        let mut h = History::with_cooldown(600);
        h.received.insert("n1".into(), 0);
        assert!(time_matters(&o, &h));
        let mut h = History::with_cooldown(600);
        h.over_nodes.insert("n1".into());
        assert!(time_matters(&o, &h));
    }
}
