//! Command line: upstream's flags where they apply, plus offline planning from a snapshot.
//! The flags are checked here and turned into a mode of [`crate::app`], which runs it.
//!
//! Exit codes: 0 planning succeeded (also with nothing to evict), 2 invalid input (policy,
//! snapshot, flags), 1 anything else.

use crate::app::{self, LiveOptions, SnapshotFiles};
use crate::framework::Pipeline;
use crate::live::admin::{AdminServer, Certificate, Transport};
use crate::live::executor::ExecutorConfig;
use crate::live::leader::LeaderConfig;
use crate::policy::Policy;
use crate::report::Format;
use crate::schedule::Schedule;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// How the simulator sees an evicted pod while its replacement is scheduled
/// (`--termination-model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TerminationModel {
    /// A real kubelet: an evicted pod keeps its requests on its node for its grace period
    /// (gracePeriodSeconds, else its terminationGracePeriodSeconds).
    Graceful,
    /// A kubelet that deletes evicted pods at once (grace periods ignored).
    Instant,
}

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

    /// Plan and print the evictions without performing them (`--dry-run`, `--dry-run=true`;
    /// `--dry-run=false` as upstream's flags take it).
    #[arg(long = "dry-run", env = "DESCHEDULER_DRY_RUN", num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true", value_parser = go_bool,
        action = clap::ArgAction::Set)]
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
    #[arg(long = "predict-destinations", env = "DESCHEDULER_PREDICT_DESTINATIONS",
        num_args = 0..=1, require_equals = true, default_value = "false",
        default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub predict_destinations: bool,

    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), as given to
    /// kube-scheduler's --config: predicted destinations are scored with its profile's score
    /// plugins, weights and args instead of kube-scheduler's defaults.
    #[arg(
        long = "scheduler-config",
        env = "DESCHEDULER_SCHEDULER_CONFIG",
        value_name = "FILE"
    )]
    pub scheduler_config: Option<PathBuf>,

    /// The profile of --scheduler-config to score with, by its schedulerName.
    #[arg(
        long = "scheduler-name",
        env = "DESCHEDULER_SCHEDULER_NAME",
        value_name = "NAME",
        default_value = "default-scheduler",
        requires = "scheduler_config"
    )]
    pub scheduler_name: String,

    /// How predictions see an evicted pod while its replacement is scheduled: `graceful` (a
    /// real kubelet: the pod stays on its node, its requests counted there by kube-scheduler,
    /// for its grace period, the policy's gracePeriodSeconds or else the pod's
    /// terminationGracePeriodSeconds) or `instant` (a kubelet that deletes evicted pods at
    /// once).
    #[arg(
        long = "termination-model",
        env = "DESCHEDULER_TERMINATION_MODEL",
        value_enum,
        default_value_t = TerminationModel::Graceful
    )]
    pub termination_model: TerminationModel,

    /// Path to a kubeconfig (live mode); also upstream's `--client-connection-kubeconfig`.
    /// Default: kubectl's rules (KUBECONFIG, a list whose missing files are skipped; else
    /// ~/.kube/config; else the in-cluster service account).
    #[arg(long, value_name = "FILE", alias = "client-connection-kubeconfig")]
    pub kubeconfig: Option<PathBuf>,

    /// The deadline of each API request, as kubectl's flag (a Go duration; 0: none): its
    /// answer must begin within it, and a list's answer may pause no longer than that.
    #[arg(
        long = "request-timeout",
        env = "DESCHEDULER_REQUEST_TIMEOUT",
        default_value = "60s",
        value_name = "DURATION"
    )]
    pub request_timeout: String,

    /// The kubeconfig context to use (live mode); default: its current context.
    #[arg(long, env = "DESCHEDULER_CONTEXT", value_name = "NAME")]
    pub context: Option<String>,

    /// Time between cycles in continuous mode, as a Go duration (0: run one cycle and exit).
    #[arg(
        long = "descheduling-interval",
        env = "DESCHEDULER_DESCHEDULING_INTERVAL",
        default_value = "0"
    )]
    pub descheduling_interval: String,

    /// Continuous mode: a workload that had a pod evicted waits until its replacements are
    /// placed; if one lands back where it came from or on an overutilized node, its pods are
    /// left alone for this long, and a node that received rescheduled pods is not treated as
    /// overutilized for this long (no ping-pong). A Go duration; 0 turns it off. A single
    /// cycle has no memory.
    #[arg(
        long = "eviction-cooldown",
        env = "DESCHEDULER_EVICTION_COOLDOWN",
        default_value = "10m",
        value_name = "DURATION"
    )]
    pub eviction_cooldown: String,

    /// Continuous mode: the longest a workload whose moves keep failing is left alone. Each
    /// failed move in a row (a replacement that landed back or on an overutilized node,
    /// replacements still Pending when the cooldown ends, an eviction the API refused)
    /// doubles the eviction cooldown, with a little jitter, up to this. A Go duration; never
    /// shorter than --eviction-cooldown.
    #[arg(
        long = "eviction-backoff-max",
        env = "DESCHEDULER_EVICTION_BACKOFF_MAX",
        default_value = "1h",
        value_name = "DURATION"
    )]
    pub eviction_backoff_max: String,

    /// Continuous mode: also start a cycle as soon as the watch sees a change that can
    /// create work (a node added, Ready, schedulable, retainted or relabelled; a pod Pending,
    /// past MakeRoomForPendingPods' minPendingSeconds when that plugin is enabled; a
    /// PodDisruptionBudget or PodGroup changed). --descheduling-interval stays the longest
    /// wait; a cycle due then on a cluster nothing changed is skipped (counted in
    /// descheduler_cycles_skipped_total{reason="unchanged"}) unless the policy's rules depend
    /// on the clock or measured usage.
    #[arg(long = "cycle-on-change", env = "DESCHEDULER_CYCLE_ON_CHANGE",
        num_args = 0..=1, require_equals = true, default_value = "false",
        default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub cycle_on_change: bool,

    /// With --cycle-on-change: changes within this long after the first coalesce into one
    /// cycle (a Go duration).
    #[arg(
        long = "cycle-debounce",
        env = "DESCHEDULER_CYCLE_DEBOUNCE",
        default_value = "200ms",
        value_name = "DURATION"
    )]
    pub cycle_debounce: String,

    /// With --cycle-on-change: the least time between the starts of two cycles (a Go
    /// duration).
    #[arg(
        long = "min-cycle-gap",
        env = "DESCHEDULER_MIN_CYCLE_GAP",
        default_value = "1s",
        value_name = "DURATION"
    )]
    pub min_cycle_gap: String,

    /// Live mode, a closed loop: after each eviction wait until the replacement is bound,
    /// compare its node with the prediction, and plan the rest of the cycle from where it
    /// landed; a replacement back on its source node (or on an overutilized node) stops its
    /// workload for the cycle.
    #[arg(long = "await-placement", env = "DESCHEDULER_AWAIT_PLACEMENT",
        num_args = 0..=1, require_equals = true, default_value = "false",
        default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub await_placement: bool,

    /// How long --await-placement waits for one replacement (a Go duration).
    #[arg(
        long = "await-placement-timeout",
        env = "DESCHEDULER_AWAIT_PLACEMENT_TIMEOUT",
        default_value = "60s",
        value_name = "DURATION"
    )]
    pub await_placement_timeout: String,

    /// How long a surge (DefaultEvictor's `moveMode`) waits for its new pod to be Ready
    /// before it is rolled back (a Go duration).
    #[arg(
        long = "surge-timeout",
        env = "DESCHEDULER_SURGE_TIMEOUT",
        default_value = "5m",
        value_name = "DURATION"
    )]
    pub surge_timeout: String,

    /// The planning time (RFC 3339), for reproducible runs; defaults to now.
    #[arg(long, env = "DESCHEDULER_NOW", value_name = "RFC3339")]
    pub now: Option<String>,

    /// Report format.
    #[arg(long, short = 'o', value_enum, default_value_t = Format::Table, env = "DESCHEDULER_OUTPUT")]
    pub output: Format,

    /// Log verbosity, as upstream's klog levels (0: warnings, 1-2: info, 3-4: debug, 5+: trace).
    #[arg(short = 'v', long = "v", default_value_t = 0, env = "DESCHEDULER_V")]
    pub verbosity: u8,

    /// Log format on stderr; also upstream's `--logging-format`.
    #[arg(long = "log-format", alias = "logging-format", value_enum, default_value_t = LogFormat::Text, env = "DESCHEDULER_LOG_FORMAT")]
    pub log_format: LogFormat,

    /// Upstream's feature gates, in upstream's syntax: `Key=true,Other=false` (the flag may be
    /// given more than once). Known: EvictionsInBackground (alpha, off by default), and
    /// AllAlpha / AllBeta (every alpha / beta gate not set otherwise).
    #[arg(long = "feature-gates", env = "DESCHEDULER_FEATURE_GATES", value_name = "KEY=BOOL,...",
        action = clap::ArgAction::Append)]
    pub feature_gates: Vec<String>,

    /// With --feature-gates=EvictionsInBackground=true: how long an eviction the API answered
    /// as carried out in the background is taken to be in progress while its pod does not go
    /// (upstream's is 10 minutes); then it may be requested again. A Go duration.
    #[arg(
        long = "eviction-in-background-timeout",
        env = "DESCHEDULER_EVICTION_IN_BACKGROUND_TIMEOUT",
        default_value = "10m",
        value_name = "DURATION"
    )]
    pub eviction_in_background_timeout: String,

    /// Run cycles on a 5-field cron schedule (as for a CronJob), instead of an interval.
    #[arg(long, env = "DESCHEDULER_SCHEDULE", value_name = "CRON")]
    pub schedule: Option<String>,

    /// Elect a leader among replicas through a Lease; only the leader evicts
    /// (`--leader-elect`, `--leader-elect=true|false`).
    #[arg(long = "leader-elect", env = "DESCHEDULER_LEADER_ELECT", num_args = 0..=1,
        require_equals = true, default_value = "false", default_missing_value = "true",
        value_parser = go_bool, action = clap::ArgAction::Set)]
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

    /// The encoding asked of the API server for lists of pods and nodes: its protobuf
    /// (smaller and much cheaper to read) or JSON (for a proxy in front of the API server
    /// that does not pass protobuf). Other kinds and watches are always JSON.
    #[arg(
        long = "kube-api-content-type",
        default_value = "application/vnd.kubernetes.protobuf",
        value_parser = ["application/vnd.kubernetes.protobuf", "application/json"]
    )]
    pub kube_api_content_type: String,

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

    /// Live mode: serve /metrics, /healthz and /readyz over HTTPS on this port, as upstream
    /// does (0: no HTTPS server).
    #[arg(
        long = "secure-port",
        default_value_t = 10258,
        env = "DESCHEDULER_SECURE_PORT"
    )]
    pub secure_port: u16,

    /// The address the HTTPS server listens on.
    #[arg(long = "bind-address", default_value = "0.0.0.0", value_name = "IP")]
    pub bind_address: std::net::IpAddr,

    /// The HTTPS server's certificate (PEM, leaf first); without it and
    /// --tls-private-key-file, a self-signed certificate is made at start.
    #[arg(
        long = "tls-cert-file",
        value_name = "FILE",
        requires = "tls_private_key_file"
    )]
    pub tls_cert_file: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert-file.
    #[arg(
        long = "tls-private-key-file",
        value_name = "FILE",
        requires = "tls_cert_file"
    )]
    pub tls_private_key_file: Option<PathBuf>,

    /// Serve no /metrics (/healthz and /readyz stay).
    #[arg(long = "disable-metrics", num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true", value_parser = go_bool,
        action = clap::ArgAction::Set)]
    pub disable_metrics: bool,

    /// Serve /metrics only to callers whose bearer token the API server authenticates
    /// (TokenReview) and authorizes to get the non-resource URL /metrics (SubjectAccessReview).
    #[arg(long = "authorize-metrics", num_args = 0..=1, require_equals = true,
        default_value = "false", default_missing_value = "true", value_parser = go_bool,
        action = clap::ArgAction::Set, env = "DESCHEDULER_AUTHORIZE_METRICS")]
    pub authorize_metrics: bool,

    /// Also serve /metrics, /healthz and /readyz over plain HTTP at this address (empty: not),
    /// e.g. 127.0.0.1:10259.
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

    /// Keep each cycle's report (the plan, what happened to each eviction, notes, candidates
    /// not chosen, the snapshot's counts) as one JSON file named by its time in this
    /// directory (made when missing).
    #[arg(
        long = "decision-log",
        env = "DESCHEDULER_DECISION_LOG",
        value_name = "DIR"
    )]
    pub decision_log: Option<PathBuf>,

    /// With --decision-log: keep the snapshot each cycle planned from beside its record,
    /// gzip-compressed, so that `--snapshot FILE --now TIME` (TIME: the record's
    /// nowRfc3339) plans the cycle again.
    #[arg(long = "decision-log-snapshot", env = "DESCHEDULER_DECISION_LOG_SNAPSHOT",
        num_args = 0..=1, require_equals = true, default_value = "false",
        default_missing_value = "true", value_parser = go_bool, action = clap::ArgAction::Set)]
    pub decision_log_snapshot: bool,

    /// With --decision-log: the most records kept; the oldest go first (with their
    /// snapshots).
    #[arg(
        long = "decision-log-max-files",
        env = "DESCHEDULER_DECISION_LOG_MAX_FILES",
        default_value_t = 100,
        value_name = "N"
    )]
    pub decision_log_max_files: usize,

    /// With --decision-log: the most bytes the records and snapshots take together, as a
    /// quantity (`512Mi`, `2Gi`, or bytes); the newest record always stays.
    #[arg(
        long = "decision-log-max-bytes",
        env = "DESCHEDULER_DECISION_LOG_MAX_BYTES",
        default_value = "1Gi",
        value_name = "QUANTITY"
    )]
    pub decision_log_max_bytes: String,
}

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub(crate) fn invalid(message: impl ToString) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }
    pub(crate) fn other(message: impl ToString) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
}

fn init_logging(cli: &Cli) {
    init_logging_at(cli.verbosity, cli.log_format)
}

/// Logs on stderr at upstream's klog `verbosity`, in `format`.
pub(crate) fn init_logging_at(verbosity: u8, format: LogFormat) {
    let level = match verbosity {
        0 => "warn",
        1 | 2 => "info",
        3 | 4 => "debug",
        _ => "trace",
    };
    // The verbosity is the descheduler's own; the libraries under it say only warnings
    // (upstream's `--v=3` does not print every HTTP connection either).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("warn,descheduler={level}"))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// Runs one invocation; a plan's report goes to `out`.
pub fn run(cli: &Cli, out: &mut dyn std::io::Write) -> Result<(), Failure> {
    let given_now = check_flags(cli)?;
    check_file(
        "--policy-config-file",
        &cli.policy_config_file,
        FileKind::Input,
    )?;
    // Nothing runs on an invalid policy.
    let (policy, pipeline) = app::load_policy(&cli.policy_config_file, cli.predict_destinations)
        .map_err(Failure::invalid)?;
    run_with(cli, given_now, &policy, pipeline, out)
}

/// [`run`] with a policy already loaded (the kubectl plugin's, from a ConfigMap).
pub(crate) fn run_with_policy(
    cli: &Cli,
    policy: &Policy,
    pipeline: Pipeline,
    out: &mut dyn std::io::Write,
) -> Result<(), Failure> {
    let given_now = check_flags(cli)?;
    run_with(cli, given_now, policy, pipeline, out)
}

/// Checks every flag that does not need the policy, whatever the mode (a value a live run
/// would use is checked offline too), before anything is read; returns `--now` (unix
/// seconds). The policy file is checked by the caller (the kubectl plugin may read the
/// policy from a ConfigMap instead).
fn check_flags(cli: &Cli) -> Result<Option<i64>, Failure> {
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
    Schedule::from_flags(
        &cli.descheduling_interval,
        cli.schedule.as_deref(),
        chrono::Utc::now(),
    )
    .map_err(Failure::invalid)?;
    duration_flag("--eviction-cooldown", &cli.eviction_cooldown)?;
    duration_flag("--eviction-backoff-max", &cli.eviction_backoff_max)?;
    on_change_timing(
        cli,
        &Schedule::from_flags(
            &cli.descheduling_interval,
            cli.schedule.as_deref(),
            chrono::Utc::now(),
        )
        .map_err(Failure::invalid)?,
    )?;
    feature_gates(&cli.feature_gates)?;
    positive_duration_flag(
        "--eviction-in-background-timeout",
        &cli.eviction_in_background_timeout,
    )?;
    positive_duration_flag("--await-placement-timeout", &cli.await_placement_timeout)?;
    positive_duration_flag("--surge-timeout", &cli.surge_timeout)?;
    positive_duration_flag("--cache-sync-timeout", &cli.cache_sync_timeout)?;
    // Every number given is checked, whether this run uses it or not.
    rate_flag("--client-connection-qps", cli.client_connection_qps)?;
    rate_flag("--eviction-qps", cli.eviction_qps)?;
    rate_flag("--node-eviction-qps", cli.node_eviction_qps)?;
    leader_durations(cli)?;
    leader_lease_flags(cli)?;
    metrics_bind_address(cli)?;
    decision_log_limits(cli)?;
    if cli.decision_log_snapshot && cli.decision_log.is_none() {
        return Err(Failure::invalid(
            "--decision-log-snapshot keeps snapshots beside the decision log's records: \
             give --decision-log DIR too",
        ));
    }
    if cli.scheduler_name.is_empty() {
        return Err(Failure::invalid(
            "--scheduler-name is empty; give the schedulerName of a profile of --scheduler-config",
        ));
    }
    // Files named by flags: there, and files (a directory given by mistake shows here, not
    // after the policy and the snapshot are read).
    let inputs = [
        ("--snapshot", &cli.snapshot),
        ("--node-metrics", &cli.node_metrics),
        ("--pod-metrics", &cli.pod_metrics),
        ("--scheduler-config", &cli.scheduler_config),
    ];
    for (flag, path) in inputs {
        if let Some(path) = path {
            check_file(flag, path, FileKind::Input)?;
        }
    }
    for (flag, path) in [
        ("--tls-cert-file", &cli.tls_cert_file),
        ("--tls-private-key-file", &cli.tls_private_key_file),
    ] {
        if let Some(path) = path {
            check_file(flag, path, FileKind::Regular)?;
        }
    }
    // `--kubeconfig` names one file (KUBECONFIG's list is read by the client's own rules); a
    // run from a snapshot does not read it.
    if let (Some(path), None) = (&cli.kubeconfig, &cli.snapshot) {
        check_file("--kubeconfig", path, FileKind::Input)?;
    }
    if let Some(dir) = cli
        .decision_log
        .as_deref()
        .filter(|d| d.exists() && !d.is_dir())
    {
        return Err(Failure::invalid(format!(
            "--decision-log {}: not a directory; name a directory (it is made when missing)",
            dir.display()
        )));
    }
    request_timeout(&cli.request_timeout)?;
    Ok(given_now)
}

/// What a file named by a flag must be.
#[derive(Clone, Copy)]
enum FileKind {
    /// Read whole as text: a file, or a pipe (`--snapshot <(kubectl get ...)`), not a
    /// directory.
    Input,
    /// A regular file (TLS certificates and keys).
    Regular,
}

/// The file a flag names is there and is of the kind the flag needs.
fn check_file(flag: &str, path: &std::path::Path, kind: FileKind) -> Result<(), Failure> {
    let meta = std::fs::metadata(path).map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            "no such file".to_string()
        } else {
            e.to_string()
        };
        Failure::invalid(format!(
            "{flag} {}: {why}; give the path of an existing file",
            path.display()
        ))
    })?;
    let ok = match kind {
        FileKind::Input => !meta.is_dir(),
        FileKind::Regular => meta.is_file(),
    };
    if !ok {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(Failure::invalid(format!(
            "{flag} {}: {what}; give the path of a file",
            path.display()
        )));
    }
    Ok(())
}

/// A duration flag that must be more than 0.
/// `--cycle-on-change` and its timing flags: None when it is off. It needs continuous mode on
/// an interval, the longest wait between cycles.
fn on_change_timing(
    cli: &Cli,
    schedule: &Schedule,
) -> Result<Option<crate::app::trigger::OnChange>, Failure> {
    let debounce = duration_flag("--cycle-debounce", &cli.cycle_debounce)?;
    let min_gap = duration_flag("--min-cycle-gap", &cli.min_cycle_gap)?;
    if !cli.cycle_on_change {
        return Ok(None);
    }
    let Schedule::Interval(interval) = schedule else {
        return Err(Failure::invalid(
            "--cycle-on-change starts cycles in continuous mode, with --descheduling-interval as the longest wait between them: give --descheduling-interval (such as 10m), and no --schedule",
        ));
    };
    Ok(Some(crate::app::trigger::OnChange {
        debounce,
        min_gap,
        interval: *interval,
    }))
}

fn positive_duration_flag(name: &str, value: &str) -> Result<Duration, Failure> {
    let d = duration_flag(name, value)?;
    if d.is_zero() {
        return Err(Failure::invalid(format!(
            "{name} {value}: give a duration of more than 0, such as 30s or 2m"
        )));
    }
    Ok(d)
}

/// `--metrics-bind-address`: empty (no plain HTTP server) or host:port.
fn metrics_bind_address(cli: &Cli) -> Result<Option<std::net::SocketAddr>, Failure> {
    if cli.metrics_bind_address.is_empty() {
        return Ok(None);
    }
    cli.metrics_bind_address.parse().map(Some).map_err(|_| {
        Failure::invalid(format!(
            "--metrics-bind-address {:?}: not an IP address and port; use host:port such as 127.0.0.1:10259, or \"\" for none",
            cli.metrics_bind_address
        ))
    })
}

/// The Lease's lock type, name and namespace, as the API server would take them.
fn leader_lease_flags(cli: &Cli) -> Result<(), Failure> {
    if cli.leader_elect_resource_lock != "leases" {
        return Err(Failure::invalid(format!(
            "--leader-elect-resource-lock {:?}: only \"leases\" is supported",
            cli.leader_elect_resource_lock
        )));
    }
    let label = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    };
    let name = &cli.leader_elect_resource_name;
    if name.len() > 253 || !name.split('.').all(label) {
        return Err(Failure::invalid(format!(
            "--leader-elect-resource-name {name:?}: not a Lease name; use lowercase letters, digits, '-' and '.', such as descheduler"
        )));
    }
    let ns = &cli.leader_elect_resource_namespace;
    if !label(ns) {
        return Err(Failure::invalid(format!(
            "--leader-elect-resource-namespace {ns:?}: not a namespace name; use lowercase letters, digits and '-', such as kube-system"
        )));
    }
    Ok(())
}

fn run_with(
    cli: &Cli,
    given_now: Option<i64>,
    policy: &Policy,
    mut pipeline: Pipeline,
    out: &mut dyn std::io::Write,
) -> Result<(), Failure> {
    if let Some(path) = &cli.scheduler_config {
        app::load_scheduler_config(&mut pipeline, path, &cli.scheduler_name)
            .map_err(Failure::invalid)?;
    }
    pipeline.termination.graceful = cli.termination_model == TerminationModel::Graceful;
    let now = given_now.unwrap_or_else(|| chrono::Utc::now().timestamp());
    let decision_log = decision_log(cli)?;
    let Some(snapshot) = &cli.snapshot else {
        return run_live(cli, policy, pipeline, given_now, decision_log, out);
    };
    let files = SnapshotFiles {
        snapshot: snapshot.clone(),
        node_metrics: cli.node_metrics.clone(),
        pod_metrics: cli.pod_metrics.clone(),
    };
    let background = background_evictions(cli)?;
    app::run_offline(
        &pipeline,
        files,
        now,
        cli.output,
        decision_log,
        background,
        out,
    )
    .map_err(|e| {
        if e.is_invalid_input() {
            Failure::invalid(e)
        } else {
            Failure::other(e)
        }
    })
}

/// The timeout of an assumed eviction in the background, when `--feature-gates` turns
/// EvictionsInBackground on (None: the gate is off).
fn background_evictions(cli: &Cli) -> Result<Option<Duration>, Failure> {
    if !feature_gates(&cli.feature_gates)?.evictions_in_background {
        return Ok(None);
    }
    positive_duration_flag(
        "--eviction-in-background-timeout",
        &cli.eviction_in_background_timeout,
    )
    .map(Some)
}

/// The decision log the flags ask for, its directory made and checked.
fn decision_log(cli: &Cli) -> Result<Option<app::DecisionLog>, Failure> {
    let Some(dir) = &cli.decision_log else {
        if cli.decision_log_snapshot {
            return Err(Failure::invalid(
                "--decision-log-snapshot keeps snapshots beside the decision log's records: \
                 give --decision-log DIR too",
            ));
        }
        return Ok(None);
    };
    let max_bytes = decision_log_limits(cli)?;
    let log = app::DecisionLog {
        dir: dir.clone(),
        keep_snapshot: cli.decision_log_snapshot,
        max_files: cli.decision_log_max_files,
        max_bytes: max_bytes as u64,
    };
    log.open().map_err(Failure::invalid)?;
    Ok(Some(log))
}

/// `--decision-log-max-files` and `--decision-log-max-bytes` (the bytes), checked whether
/// or not a decision log is kept.
fn decision_log_limits(cli: &Cli) -> Result<i64, Failure> {
    if cli.decision_log_max_files == 0 {
        return Err(Failure::invalid(
            "--decision-log-max-files 0: keep at least 1 record",
        ));
    }
    let text = &cli.decision_log_max_bytes;
    crate::quantity::Quantity::parse(text)
        .ok()
        .and_then(|q| q.checked_value())
        .filter(|b| *b > 0)
        .ok_or_else(|| {
            Failure::invalid(format!(
                "--decision-log-max-bytes {text:?}: give a positive size in bytes or as a \
                 quantity such as 512Mi or 2Gi"
            ))
        })
}

/// `--request-timeout`: a Go duration, 0 for no deadline (as kubectl's).
pub(crate) fn request_timeout(value: &str) -> Result<Option<Duration>, Failure> {
    let d = duration_flag("--request-timeout", value)?;
    Ok(Some(d).filter(|d| !d.is_zero()))
}

fn duration_flag(name: &str, value: &str) -> Result<Duration, Failure> {
    crate::policy::parse_go_duration(value).map_err(|e| Failure::invalid(format!("{name}: {e}")))
}

/// The slowest rate a rate flag may ask for (one a day); 0 means unlimited.
const MIN_RATE: f64 = 1.0 / 86_400.0;

/// A rate flag's value: a finite number, 0 (unlimited) or at least one a day.
fn rate_flag(name: &str, qps: f64) -> Result<f64, Failure> {
    if !qps.is_finite() || qps < 0.0 || (qps > 0.0 && qps < MIN_RATE) {
        return Err(Failure::invalid(format!(
            "{name} {qps}: give a rate per second of 0 (unlimited) or from {MIN_RATE:.3e} (one \
             a day) up"
        )));
    }
    Ok(qps)
}

/// The leader election flags, checked as client-go checks them (a lease longer than the
/// renew deadline, longer than the retry period; a lease a Lease object can hold).
fn leader_durations(cli: &Cli) -> Result<(Duration, Duration, Duration), Failure> {
    let lease = duration_flag(
        "--leader-elect-lease-duration",
        &cli.leader_elect_lease_duration,
    )?;
    let renew = duration_flag(
        "--leader-elect-renew-deadline",
        &cli.leader_elect_renew_deadline,
    )?;
    let retry = duration_flag(
        "--leader-elect-retry-period",
        &cli.leader_elect_retry_period,
    )?;
    if lease.as_secs() > i32::MAX as u64 {
        return Err(Failure::invalid(format!(
            "--leader-elect-lease-duration {}: longer than a Lease holds ({} s)",
            cli.leader_elect_lease_duration,
            i32::MAX
        )));
    }
    if retry.is_zero() || renew <= retry || lease <= renew {
        return Err(Failure::invalid(format!(
            "--leader-elect-lease-duration {}, --leader-elect-renew-deadline {} and \
             --leader-elect-retry-period {}: each must be longer than the next, and the retry \
             period more than 0",
            cli.leader_elect_lease_duration,
            cli.leader_elect_renew_deadline,
            cli.leader_elect_retry_period
        )));
    }
    Ok((lease, renew, retry))
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
    decision_log: Option<app::DecisionLog>,
    out: &mut dyn std::io::Write,
) -> Result<(), Failure> {
    let schedule = Schedule::from_flags(
        &cli.descheduling_interval,
        cli.schedule.as_deref(),
        chrono::Utc::now(),
    )
    .map_err(Failure::invalid)?;
    // A fixed planning time makes sense for one cycle, not for a loop of them.
    if now.is_some() && !matches!(schedule, Schedule::Once) {
        return Err(Failure::invalid(
            "--now fixes the planning time of one cycle; continuous mode (--descheduling-interval or --schedule) plans each cycle at its own time: drop --now, or run one cycle",
        ));
    }
    let on_change = on_change_timing(cli, &schedule)?
        .map(|timing| crate::app::runner::OnChangeOptions::of(timing, policy, &pipeline));
    let leader = if cli.leader_elect {
        let base = cli.leader_elect_identity.clone().unwrap_or_else(identity);
        let (lease_duration, renew_deadline, retry_period) = leader_durations(cli)?;
        Some(LeaderConfig {
            name: cli.leader_elect_resource_name.clone(),
            namespace: cli.leader_elect_resource_namespace.clone(),
            identity: format!("{base}_{}", std::process::id()),
            lease_duration,
            renew_deadline,
            retry_period,
        })
    } else {
        None
    };
    let admin = admin_servers(cli)?;
    // Certificate files are read and checked now: a bad one is bad input, found before
    // anything runs.
    for server in &admin {
        if let Transport::Https(cert @ Certificate::Files { .. }) = &server.transport {
            crate::live::admin::tls_config(cert, "").map_err(Failure::invalid)?;
        }
    }
    let opts = LiveOptions {
        kubeconfig: cli.kubeconfig.clone(),
        context: cli.context.clone(),
        qps: rate_flag("--client-connection-qps", cli.client_connection_qps)?,
        burst: cli.client_connection_burst,
        request_timeout: request_timeout(&cli.request_timeout)?,
        protobuf: cli.kube_api_content_type != "application/json",
        dry_run: cli.dry_run,
        schedule,
        leader,
        admin,
        executor: ExecutorConfig {
            grace_period_seconds: policy.grace_period_seconds,
            failure_events: policy.eviction_failure_event_notification.unwrap_or(false),
            global_rate: crate::live::client::quota(
                rate_flag("--eviction-qps", cli.eviction_qps)?,
                cli.eviction_burst,
            ),
            node_rate: crate::live::client::quota(
                rate_flag("--node-eviction-qps", cli.node_eviction_qps)?,
                cli.node_eviction_burst,
            ),
            instance: cli
                .leader_elect_identity
                .clone()
                .or_else(|| Some(identity())),
            evictions_in_background: feature_gates(&cli.feature_gates)?.evictions_in_background,
            await_placement: if cli.await_placement {
                Some(duration_flag(
                    "--await-placement-timeout",
                    &cli.await_placement_timeout,
                )?)
            } else {
                None
            },
            surge_timeout: duration_flag("--surge-timeout", &cli.surge_timeout)?,
        },
        output: cli.output,
        sync_timeout: duration_flag("--cache-sync-timeout", &cli.cache_sync_timeout)?,
        eviction_cooldown: duration_flag("--eviction-cooldown", &cli.eviction_cooldown)?,
        eviction_backoff_max: duration_flag("--eviction-backoff-max", &cli.eviction_backoff_max)?,
        background: background_evictions(cli)?,
        now,
        decision_log,
        on_change,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(Failure::other)?;
    rt.block_on(app::runner::run(&pipeline, opts, out))
        .map_err(|e| {
            if e.is_invalid_input() {
                Failure::invalid(e)
            } else {
                Failure::other(e)
            }
        })
}

/// The admin servers the flags ask for: HTTPS on --bind-address:--secure-port unless the
/// port is 0, and plain HTTP on --metrics-bind-address when given.
fn admin_servers(cli: &Cli) -> Result<Vec<AdminServer>, Failure> {
    let mut servers = Vec::new();
    if cli.secure_port != 0 {
        let certificate = match (&cli.tls_cert_file, &cli.tls_private_key_file) {
            (Some(cert), Some(key)) => Certificate::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            _ => Certificate::SelfSigned,
        };

        servers.push(AdminServer {
            addr: std::net::SocketAddr::new(cli.bind_address, cli.secure_port),
            transport: Transport::Https(certificate),
            metrics: !cli.disable_metrics,
            authorize: cli.authorize_metrics,
        });
    }
    if let Some(addr) = metrics_bind_address(cli)? {
        servers.push(AdminServer {
            addr,
            transport: Transport::Http,
            metrics: !cli.disable_metrics,
            authorize: cli.authorize_metrics,
        });
    }
    Ok(servers)
}

/// Upstream's feature gates (`--feature-gates`), as set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureGates {
    /// `EvictionsInBackground` (alpha, off by default): evictions of pods annotated
    /// `descheduler.alpha.kubernetes.io/request-evict-only` are requested only, and tracked
    /// while carried out in the background (KubeVirt's live migration).
    pub evictions_in_background: bool,
}

/// The feature gates upstream v0.36 knows (its `pkg/features` and component-base's
/// AllAlpha / AllBeta), with their stage and default.
const KNOWN_FEATURE_GATES: &[(&str, &str)] = &[
    ("AllAlpha", "ALPHA, default=false"),
    ("AllBeta", "BETA, default=false"),
    ("EvictionsInBackground", "ALPHA, default=false"),
];

/// Reads `--feature-gates` as upstream does (component-base's `MapStringBool` and
/// `SetFromMap`): comma-separated `Key=bool` pairs, later ones winning, values as Go's
/// `strconv.ParseBool`; an unknown gate is refused. AllAlpha sets every alpha gate not set
/// by name.
fn feature_gates(values: &[String]) -> Result<FeatureGates, Failure> {
    let known = || {
        KNOWN_FEATURE_GATES
            .iter()
            .map(|(k, stage)| format!("{k} ({stage})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut set: Vec<(String, bool)> = Vec::new();
    for value in values {
        for pair in value.split(',').filter(|p| !p.is_empty()) {
            let Some((key, v)) = pair.split_once('=') else {
                return Err(Failure::invalid(format!(
                    "--feature-gates {value:?}: {pair:?} is not a Key=true|false pair; write e.g. --feature-gates=EvictionsInBackground=true"
                )));
            };
            let (key, v) = (key.trim(), v.trim());
            let on = match v {
                "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
                "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
                _ => {
                    return Err(Failure::invalid(format!(
                        "--feature-gates {value:?}: the value of {key} is {v:?}, not a boolean; use {key}=true or {key}=false"
                    )))
                }
            };
            if !KNOWN_FEATURE_GATES.iter().any(|(k, _)| *k == key) {
                return Err(Failure::invalid(format!(
                    "--feature-gates {value:?}: unknown feature gate {key:?}; the known gates are {}",
                    known()
                )));
            }
            set.retain(|(k, _)| k != key);
            set.push((key.to_string(), on));
        }
    }
    let get = |key: &str| set.iter().find(|(k, _)| k == key).map(|&(_, on)| on);
    Ok(FeatureGates {
        evictions_in_background: get("EvictionsInBackground")
            .or(get("AllAlpha"))
            .unwrap_or(false),
    })
}

/// A boolean as Go's flags read one (`strconv.ParseBool`), and clap's `yes`/`no`/`on`/`off`.
pub(crate) fn go_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" | "yes" | "on" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" | "no" | "off" => Ok(false),
        _ => Err(format!("{text:?} is not a boolean; use true or false")),
    }
}

/// Upstream v0.36's flags that have no effect here, and whether each takes a value (a
/// boolean flag takes none, or one after `=`). They are accepted, so that upstream's
/// manifests and Helm chart run this binary unchanged, and each one given is warned about.
const UPSTREAM_ONLY_FLAGS: &[(&str, bool)] = &[
    // Tracing.
    ("otel-collector-endpoint", true),
    ("otel-transport-ca-cert", true),
    ("otel-service-name", true),
    ("otel-trace-namespace", true),
    ("otel-sample-rate", true),
    ("otel-fallback-no-op-on-error", false),
    // Serving: the certificate is made in memory; HTTP/1.1 only.
    ("enable-http2", false),
    ("disable-http2-serving", false),
    ("cert-dir", true),
    ("tls-cipher-suites", true),
    ("tls-curve-preferences", true),
    ("tls-min-version", true),
    ("tls-sni-cert-key", true),
    ("http2-max-streams-per-connection", true),
    ("permit-port-sharing", false),
    ("permit-address-sharing", false),
    // klog's knobs.
    ("vmodule", true),
    ("log-flush-frequency", true),
    ("log-text-split-stream", false),
    ("log-text-info-buffer-size", true),
    ("log-json-split-stream", false),
    ("log-json-info-buffer-size", true),
];

/// The command line without upstream's flags that mean nothing here, and those flags.
fn without_upstream_only_flags(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> (Vec<std::ffi::OsString>, Vec<String>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            kept.push(arg);
            kept.extend(args);
            break;
        }
        // Go's flags take one dash or two.
        let flag = text
            .strip_prefix("--")
            .or_else(|| text.strip_prefix('-').filter(|f| f.len() > 1));
        let Some(flag) = flag else {
            kept.push(arg);
            continue;
        };
        let (name, has_value) = match flag.split_once('=') {
            Some((name, _)) => (name, true),
            None => (flag, false),
        };
        match UPSTREAM_ONLY_FLAGS.iter().find(|(n, _)| *n == name) {
            Some(&(name, takes_value)) => {
                if takes_value && !has_value {
                    args.next();
                }
                dropped.push(name.to_string());
            }
            None => kept.push(arg),
        }
    }
    (kept, dropped)
}

/// The descheduler's main (the binary's, unless it was started as the kubectl plugin:
/// [`crate::kubectl::main`]).
pub fn main() -> ExitCode {
    let (args, ignored) = without_upstream_only_flags(std::env::args_os());
    let cli = Cli::parse_from(args);
    init_logging(&cli);
    for flag in ignored {
        tracing::warn!(
            flag = format!("--{flag}"),
            "an upstream flag with no effect here; ignored"
        );
    }
    exit(run(&cli, &mut std::io::stdout()))
}

/// The process's exit for how a run ended; a failure's message goes to stderr.
pub(crate) fn exit(result: Result<(), Failure>) -> ExitCode {
    match result {
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

    fn parse(args: &[&str]) -> Cli {
        let (args, _) = without_upstream_only_flags(args.iter().map(Into::into));
        Cli::try_parse_from(args).unwrap()
    }

    #[test]
    fn booleans_take_go_style_values() {
        let p = ["descheduler", "--policy-config-file", "p.yaml"];
        let with = |extra: &[&str]| parse(&[&p[..], extra].concat());
        assert!(!with(&[]).dry_run);
        assert!(with(&["--dry-run"]).dry_run);
        assert!(with(&["--dry-run=true"]).dry_run);
        assert!(!with(&["--dry-run=false"]).dry_run);
        assert!(with(&["--dry-run=1"]).dry_run);
        assert!(!with(&["--dry-run=F"]).dry_run);
        assert!(with(&["--leader-elect=True"]).leader_elect);
        assert!(!with(&["--leader-elect=false"]).leader_elect);
        assert!(with(&["--disable-metrics"]).disable_metrics);
        assert!(!with(&["--predict-destinations=0"]).predict_destinations);
        // A bare boolean does not swallow the next argument.
        let c = with(&["--dry-run", "--v=3"]);
        assert!(c.dry_run);
        assert_eq!(c.verbosity, 3);
        let bad = Cli::try_parse_from([&p[..], &["--dry-run=maybe"]].concat());
        assert!(bad.unwrap_err().to_string().contains("not a boolean"));
    }

    #[test]
    fn upstream_serving_flags_are_read() {
        let c = parse(&["descheduler", "--policy-config-file", "p"]);
        assert_eq!(c.secure_port, 10258, "upstream's default port");
        assert_eq!(c.bind_address.to_string(), "0.0.0.0");
        let servers = admin_servers(&c).unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(
            servers[0].transport,
            Transport::Https(Certificate::SelfSigned)
        );
        assert!(servers[0].metrics);
        let c = parse(&[
            "descheduler",
            "--policy-config-file",
            "p",
            "--secure-port=10300",
            "--bind-address=127.0.0.1",
            "--tls-cert-file=c.pem",
            "--tls-private-key-file=k.pem",
            "--disable-metrics=true",
            "--client-connection-kubeconfig=kc",
            "--logging-format=json",
        ]);
        let servers = admin_servers(&c).unwrap();
        assert_eq!(servers[0].addr.to_string(), "127.0.0.1:10300");
        assert_eq!(
            servers[0].transport,
            Transport::Https(Certificate::Files {
                cert: "c.pem".into(),
                key: "k.pem".into()
            })
        );
        assert!(!servers[0].metrics);
        assert_eq!(c.kubeconfig.as_deref(), Some(std::path::Path::new("kc")));
        assert_eq!(c.log_format, LogFormat::Json);
        let c = parse(&[
            "descheduler",
            "--policy-config-file",
            "p",
            "--secure-port=0",
        ]);
        assert!(admin_servers(&c).unwrap().is_empty(), "0: no HTTPS server");
        // A certificate without its key is refused.
        assert!(Cli::try_parse_from([
            "descheduler",
            "--policy-config-file",
            "p",
            "--tls-cert-file=c.pem"
        ])
        .is_err());
    }

    #[test]
    fn upstream_only_flags_are_dropped_and_named() {
        let args = [
            "descheduler",
            "--policy-config-file",
            "p",
            "--log-flush-frequency",
            "5s",
            "--otel-sample-rate=0.5",
            "--enable-http2",
            "--cert-dir=/tmp/c",
            "--permit-port-sharing=true",
            "-vmodule",
            "x=2",
            "--dry-run",
            "--",
            "--feature-gates",
        ];
        let (kept, dropped) = without_upstream_only_flags(args.iter().map(Into::into));
        let kept: Vec<_> = kept.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(
            kept,
            [
                "descheduler",
                "--policy-config-file",
                "p",
                "--dry-run",
                "--",
                "--feature-gates"
            ]
        );
        assert_eq!(
            dropped,
            [
                "log-flush-frequency",
                "otel-sample-rate",
                "enable-http2",
                "cert-dir",
                "permit-port-sharing",
                "vmodule"
            ]
        );
    }

    #[test]
    fn feature_gates_are_read_in_upstreams_syntax() {
        let gates = |values: &[&str]| {
            feature_gates(&values.iter().map(|v| v.to_string()).collect::<Vec<_>>())
        };
        let on = FeatureGates {
            evictions_in_background: true,
        };
        assert_eq!(gates(&[]).unwrap(), FeatureGates::default());
        assert_eq!(gates(&["EvictionsInBackground=true"]).unwrap(), on);
        assert_eq!(gates(&["EvictionsInBackground=T"]).unwrap(), on);
        assert_eq!(
            gates(&["EvictionsInBackground=true,EvictionsInBackground=false"]).unwrap(),
            FeatureGates::default(),
            "the later pair wins"
        );
        // Repeated flags merge, as upstream's map does.
        assert_eq!(
            gates(&[
                "EvictionsInBackground=false",
                " EvictionsInBackground = 1 ,"
            ])
            .unwrap(),
            on
        );
        // AllAlpha turns on the alpha gates not set by name.
        assert_eq!(gates(&["AllAlpha=true"]).unwrap(), on);
        assert_eq!(
            gates(&["AllAlpha=true,EvictionsInBackground=false"]).unwrap(),
            FeatureGates::default()
        );
        assert_eq!(gates(&["AllBeta=true"]).unwrap(), FeatureGates::default());
        // Unknown gates, bad values and malformed pairs: refused, naming the flag and the fix.
        let err = gates(&["EvictionsInBackground=true,LiveMigration=true"]).unwrap_err();
        assert_eq!(err.code, 2);
        assert!(
            err.message.starts_with("--feature-gates "),
            "{}",
            err.message
        );
        assert!(
            err.message
                .contains("unknown feature gate \"LiveMigration\"")
                && err
                    .message
                    .contains("EvictionsInBackground (ALPHA, default=false)")
                && err.message.contains("AllAlpha"),
            "{}",
            err.message
        );
        let err = gates(&["evictionsinbackground=true"]).unwrap_err();
        assert!(
            err.message.contains("unknown feature gate"),
            "case matters, as upstream's"
        );
        let err = gates(&["EvictionsInBackground=yes"]).unwrap_err();
        assert!(
            err.message
                .contains("the value of EvictionsInBackground is \"yes\", not a boolean")
                && err.message.contains("EvictionsInBackground=true"),
            "{}",
            err.message
        );
        let err = gates(&["EvictionsInBackground"]).unwrap_err();
        assert!(
            err.message.contains("not a Key=true|false pair"),
            "{}",
            err.message
        );
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
