//! Command line: upstream's flags where they apply, plus offline planning from a snapshot.
//!
//! Exit codes: 0 planning succeeded (also with nothing to evict), 2 invalid input (policy,
//! snapshot, flags), 1 anything else.

use crate::framework::Pipeline;
use crate::live::executor::ExecutorConfig;
use crate::live::leader::LeaderConfig;
use crate::live::runner::{self, LiveOptions};
use crate::plan;
use crate::policy::{parse_duration, Policy};
use crate::report::Format;
use crate::schedule::Schedule;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// A Kubernetes descheduler: finds running pods in the wrong place and evicts them, safely.
#[derive(Debug, Parser)]
#[command(name = "descheduler", version, about)]
pub struct Cli {
    /// DeschedulerPolicy file (descheduler/v1alpha2).
    #[arg(
        long = "policy-config-file",
        env = "DESCHEDULER_POLICY_CONFIG_FILE",
        value_name = "FILE"
    )]
    pub policy_config_file: PathBuf,

    /// Plan and print the evictions without performing them.
    #[arg(long = "dry-run", env = "DESCHEDULER_DRY_RUN")]
    pub dry_run: bool,

    /// Plan offline from a snapshot file (kubectl get ... -o yaml|json output). Implies --dry-run.
    #[arg(long, env = "DESCHEDULER_SNAPSHOT", value_name = "FILE")]
    pub snapshot: Option<PathBuf>,

    /// With --snapshot: metrics-server node metrics, as `kubectl get --raw
    /// /apis/metrics.k8s.io/v1beta1/nodes` prints them (for metricsUtilization.source:
    /// KubernetesMetrics).
    #[arg(
        long = "node-metrics",
        env = "DESCHEDULER_NODE_METRICS",
        value_name = "FILE",
        requires = "snapshot"
    )]
    pub node_metrics: Option<PathBuf>,

    /// With --snapshot: metrics-server pod metrics (`kubectl get --raw
    /// /apis/metrics.k8s.io/v1beta1/pods`), so that several pods can leave a hot node.
    #[arg(
        long = "pod-metrics",
        env = "DESCHEDULER_POD_METRICS",
        value_name = "FILE",
        requires = "node_metrics"
    )]
    pub pod_metrics: Option<PathBuf>,

    /// Predict where each evicted pod's replacement goes (the placement simulator), shown as
    /// each eviction's `destination`. Always on for profiles with nodeFit or placementCheck;
    /// costs time on very large clusters.
    #[arg(
        long = "predict-destinations",
        env = "DESCHEDULER_PREDICT_DESTINATIONS"
    )]
    pub predict_destinations: bool,

    /// Path to a kubeconfig (live mode).
    #[arg(long, env = "KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Time between cycles in continuous mode, as a Go duration (0: run one cycle and exit).
    #[arg(
        long = "descheduling-interval",
        env = "DESCHEDULER_DESCHEDULING_INTERVAL",
        default_value = "0"
    )]
    pub descheduling_interval: String,

    /// Continuous mode: after a workload has a pod evicted, leave its pods alone for this
    /// long, and do not treat a node that received its rescheduled pods as overutilized
    /// (no ping-pong). A Go duration; 0 turns it off. A single cycle has no memory.
    #[arg(
        long = "eviction-cooldown",
        env = "DESCHEDULER_EVICTION_COOLDOWN",
        default_value = "10m",
        value_name = "DURATION"
    )]
    pub eviction_cooldown: String,

    /// The planning time (RFC 3339), for reproducible runs; defaults to now.
    #[arg(long, env = "DESCHEDULER_NOW", value_name = "RFC3339")]
    pub now: Option<String>,

    /// Report format.
    #[arg(long, short = 'o', value_enum, default_value_t = Format::Table, env = "DESCHEDULER_OUTPUT")]
    pub output: Format,

    /// Log verbosity, as upstream's klog levels (0: warnings, 1-2: info, 3-4: debug, 5+: trace).
    #[arg(short = 'v', long = "v", default_value_t = 0, env = "DESCHEDULER_V")]
    pub verbosity: u8,

    /// Log format on stderr.
    #[arg(long = "log-format", value_enum, default_value_t = LogFormat::Text, env = "DESCHEDULER_LOG_FORMAT")]
    pub log_format: LogFormat,

    /// Run cycles on a 5-field cron schedule (as for a CronJob), instead of an interval.
    #[arg(long, env = "DESCHEDULER_SCHEDULE", value_name = "CRON")]
    pub schedule: Option<String>,

    /// Elect a leader among replicas through a Lease; only the leader evicts.
    #[arg(long = "leader-elect", env = "DESCHEDULER_LEADER_ELECT")]
    pub leader_elect: bool,

    /// How long a lease is valid without renewal.
    #[arg(
        long = "leader-elect-lease-duration",
        default_value = "15s",
        value_name = "DURATION"
    )]
    pub leader_elect_lease_duration: String,

    /// How long the leader keeps trying to renew before giving up leadership.
    #[arg(
        long = "leader-elect-renew-deadline",
        default_value = "10s",
        value_name = "DURATION"
    )]
    pub leader_elect_renew_deadline: String,

    /// How often candidates try to acquire or renew the lease.
    #[arg(
        long = "leader-elect-retry-period",
        default_value = "2s",
        value_name = "DURATION"
    )]
    pub leader_elect_retry_period: String,

    /// The lock type; only `leases` is supported.
    #[arg(long = "leader-elect-resource-lock", default_value = "leases")]
    pub leader_elect_resource_lock: String,

    /// The Lease's name.
    #[arg(long = "leader-elect-resource-name", default_value = "descheduler")]
    pub leader_elect_resource_name: String,

    /// The Lease's namespace.
    #[arg(
        long = "leader-elect-resource-namespace",
        default_value = "kube-system"
    )]
    pub leader_elect_resource_namespace: String,

    /// This instance's identity in the Lease and in events (default: POD_NAME or the hostname).
    #[arg(long = "leader-elect-identity", env = "POD_NAME")]
    pub leader_elect_identity: Option<String>,

    /// Client-side requests per second to the API server.
    #[arg(long = "client-connection-qps", default_value_t = 50.0)]
    pub client_connection_qps: f64,

    /// Client-side burst of requests to the API server.
    #[arg(long = "client-connection-burst", default_value_t = 100)]
    pub client_connection_burst: u32,

    /// Evictions per second, across all nodes (0: unlimited).
    #[arg(
        long = "eviction-qps",
        default_value_t = 0.0,
        env = "DESCHEDULER_EVICTION_QPS"
    )]
    pub eviction_qps: f64,

    /// Burst of evictions allowed by --eviction-qps.
    #[arg(long = "eviction-burst", default_value_t = 1)]
    pub eviction_burst: u32,

    /// Evictions per second from any one node (0: unlimited), so no node loses many pods at once.
    #[arg(
        long = "node-eviction-qps",
        default_value_t = 0.0,
        env = "DESCHEDULER_NODE_EVICTION_QPS"
    )]
    pub node_eviction_qps: f64,

    /// Burst of evictions from one node allowed by --node-eviction-qps.
    #[arg(long = "node-eviction-burst", default_value_t = 1)]
    pub node_eviction_burst: u32,

    /// Address for /metrics, /healthz and /readyz (empty: no server), e.g. 0.0.0.0:10258.
    #[arg(
        long = "metrics-bind-address",
        default_value = "",
        env = "DESCHEDULER_METRICS_BIND_ADDRESS"
    )]
    pub metrics_bind_address: String,

    /// Continuous mode: how long a cycle waits for every resource to be listed, and how long a
    /// resource's watch may fail before cycles stop planning from the stale picture.
    #[arg(
        long = "cache-sync-timeout",
        default_value = "2m",
        value_name = "DURATION"
    )]
    pub cache_sync_timeout: String,
}

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    fn invalid(message: impl ToString) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }
    fn other(message: impl ToString) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
}

fn init_logging(cli: &Cli) {
    let level = match cli.verbosity {
        0 => "warn",
        1 | 2 => "info",
        3 | 4 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match cli.log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// Runs one invocation; a plan's report goes to `out`.
pub fn run(cli: &Cli, out: &mut dyn std::io::Write) -> Result<(), Failure> {
    let given_now = match &cli.now {
        Some(t) => Some(
            chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|e| {
                    Failure::invalid(format!(
                        "--now {t:?}: not an RFC 3339 time ({e}); use e.g. 2026-12-01T00:00:00Z"
                    ))
                })?
                .timestamp(),
        ),
        None => None,
    };
    let now = given_now.unwrap_or_else(|| chrono::Utc::now().timestamp());
    crate::policy::parse_duration(&cli.descheduling_interval)
        .map_err(|e| Failure::invalid(format!("--descheduling-interval: {e}")))?;
    crate::policy::parse_duration(&cli.eviction_cooldown)
        .map_err(|e| Failure::invalid(format!("--eviction-cooldown: {e}")))?;
    // Nothing runs on an invalid policy.
    let policy = Policy::load(&cli.policy_config_file).map_err(Failure::invalid)?;
    let mut pipeline = Pipeline::build(
        &policy,
        &cli.policy_config_file.display().to_string(),
        &crate::plugins::REGISTRY,
    )
    .map_err(Failure::invalid)?;
    pipeline.predict_destinations = cli.predict_destinations;
    let Some(snapshot_path) = &cli.snapshot else {
        return run_live(cli, &policy, pipeline, given_now);
    };
    let started = std::time::Instant::now();
    let mut snap = crate::snapshot::decode::load_file(snapshot_path).map_err(Failure::invalid)?;
    tracing::info!(
        nodes = snap.nodes.len(),
        pods = snap.pods.len(),
        pdbs = snap.pdbs.len(),
        seconds = started.elapsed().as_secs_f64(),
        "snapshot loaded"
    );
    crate::usage::attach_files(
        &pipeline,
        &mut snap,
        cli.node_metrics.as_deref(),
        cli.pod_metrics.as_deref(),
    )
    .map_err(Failure::invalid)?;
    let wants_prometheus = pipeline
        .usage_needs()
        .iter()
        .any(|n| matches!(n, crate::snapshot::usage::UsageNeed::Query { .. }));
    if wants_prometheus {
        // Offline planning with live Prometheus figures: the queries run now.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Failure::other)?;
        rt.block_on(async {
            let mut fetcher = crate::usage::UsageFetcher::new(&pipeline, None, false, None)
                .await
                .map_err(Failure::invalid)?;
            fetcher.attach(&pipeline, &mut snap).await;
            Ok::<_, Failure>(())
        })?;
    }
    let planning = std::time::Instant::now();
    let plan = plan::plan_with(
        &pipeline,
        &snap,
        now,
        &plan::CycleMemory::default(),
        &mut PluginTimes::default(),
    )
    .map_err(Failure::invalid)?;
    tracing::info!(
        evictions = plan.evictions.len(),
        seconds = planning.elapsed().as_secs_f64(),
        "plan ready"
    );
    use std::io::Write as _;
    let rendering = std::time::Instant::now();
    let mut counted = Counted { out, bytes: 0 };
    crate::report::write_plan(&snap, &plan, cli.output, &mut counted)
        .and_then(|_| counted.flush())
        .map_err(|e| Failure::other(format!("writing the report: {e}")))?;
    tracing::info!(
        bytes = counted.bytes,
        seconds = rendering.elapsed().as_secs_f64(),
        "report rendered"
    );
    // The process exits right after printing: handing millions of small allocations back one
    // by one would take longer than the exit that reclaims them all at once.
    std::mem::forget(snap);
    std::mem::forget(plan);
    Ok(())
}

/// A writer that counts the bytes written through it.
struct Counted<'w> {
    out: &'w mut dyn std::io::Write,
    bytes: usize,
}

impl std::io::Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Logs how long each plugin of an offline plan took (`-v 4`).
#[derive(Default)]
struct PluginTimes {
    started: Option<std::time::Instant>,
}

impl plan::PlanObserver for PluginTimes {
    fn plugin_started(&mut self, _profile: &str, _plugin: &'static str) {
        self.started = Some(std::time::Instant::now());
    }
    fn plugin_finished(&mut self, profile: &str, plugin: &'static str, planned: usize) {
        if let Some(t) = self.started.take() {
            tracing::info!(
                profile,
                plugin,
                planned,
                seconds = t.elapsed().as_secs_f64(),
                "plugin finished"
            );
        }
    }
}

fn duration_flag(name: &str, value: &str) -> Result<Duration, Failure> {
    parse_duration(value)
        .map(|s| Duration::from_secs(s.max(0) as u64))
        .map_err(|e| Failure::invalid(format!("{name}: {e}")))
}

fn identity() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "descheduler".into())
}

/// Live mode: against the cluster of --kubeconfig (or in-cluster).
fn run_live(
    cli: &Cli,
    policy: &Policy,
    pipeline: Pipeline,
    now: Option<i64>,
) -> Result<(), Failure> {
    let schedule = Schedule::from_flags(&cli.descheduling_interval, cli.schedule.as_deref())
        .map_err(Failure::invalid)?;
    // A fixed planning time makes sense for one cycle, not for a loop of them.
    if now.is_some() && !matches!(schedule, Schedule::Once) {
        return Err(Failure::invalid(
            "--now fixes the planning time of one cycle; continuous mode (--descheduling-interval or --schedule) plans each cycle at its own time: drop --now, or run one cycle",
        ));
    }
    let leader = if cli.leader_elect {
        if cli.leader_elect_resource_lock != "leases" {
            return Err(Failure::invalid(format!(
                "--leader-elect-resource-lock {:?}: only \"leases\" is supported",
                cli.leader_elect_resource_lock
            )));
        }
        let base = cli.leader_elect_identity.clone().unwrap_or_else(identity);
        Some(LeaderConfig {
            name: cli.leader_elect_resource_name.clone(),
            namespace: cli.leader_elect_resource_namespace.clone(),
            identity: format!("{base}_{}", std::process::id()),
            lease_duration: duration_flag(
                "--leader-elect-lease-duration",
                &cli.leader_elect_lease_duration,
            )?,
            renew_deadline: duration_flag(
                "--leader-elect-renew-deadline",
                &cli.leader_elect_renew_deadline,
            )?,
            retry_period: duration_flag(
                "--leader-elect-retry-period",
                &cli.leader_elect_retry_period,
            )?,
        })
    } else {
        None
    };
    let metrics_addr = if cli.metrics_bind_address.is_empty() {
        None
    } else {
        Some(cli.metrics_bind_address.parse().map_err(|e| {
            Failure::invalid(format!(
                "--metrics-bind-address {:?}: {e}; use host:port such as 0.0.0.0:10258",
                cli.metrics_bind_address
            ))
        })?)
    };
    let opts = LiveOptions {
        kubeconfig: cli.kubeconfig.clone(),
        qps: cli.client_connection_qps,
        burst: cli.client_connection_burst,
        dry_run: cli.dry_run,
        schedule,
        leader,
        metrics_addr,
        executor: ExecutorConfig {
            grace_period_seconds: policy.grace_period_seconds,
            failure_events: policy.eviction_failure_event_notification.unwrap_or(false),
            global_rate: crate::live::client::quota(cli.eviction_qps, cli.eviction_burst),
            node_rate: crate::live::client::quota(cli.node_eviction_qps, cli.node_eviction_burst),
            instance: cli
                .leader_elect_identity
                .clone()
                .or_else(|| Some(identity())),
        },
        node_selector: policy.node_selector.clone().unwrap_or_default(),
        output: cli.output,
        sync_timeout: duration_flag("--cache-sync-timeout", &cli.cache_sync_timeout)?,
        eviction_cooldown: duration_flag("--eviction-cooldown", &cli.eviction_cooldown)?,
        now,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(Failure::other)?;
    rt.block_on(runner::run(&pipeline, opts))
        .map_err(Failure::other)
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);
    let stdout = std::io::stdout();
    match run(&cli, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_upstream_flags() {
        let cli = Cli::try_parse_from([
            "descheduler",
            "--policy-config-file",
            "p.yaml",
            "--dry-run",
            "--descheduling-interval",
            "5m",
            "-v",
            "4",
            "--snapshot",
            "s.yaml",
            "-o",
            "json",
        ])
        .unwrap();
        assert!(cli.dry_run);
        assert_eq!(
            cli.eviction_cooldown, "10m",
            "the cooldown is on by default"
        );
        assert_eq!(cli.verbosity, 4);
        assert_eq!(cli.output, Format::Json);
        assert!(
            Cli::try_parse_from(["descheduler", "--policy-config-file", "p", "-o", "xml"]).is_err()
        );
        let off = Cli::try_parse_from([
            "descheduler",
            "--policy-config-file",
            "p",
            "--eviction-cooldown",
            "0",
        ])
        .unwrap();
        assert_eq!(off.eviction_cooldown, "0");
    }
}
