//! Command line: upstream's flags where they apply, plus offline planning from a snapshot.
//!
//! Exit codes: 0 planning succeeded (also with nothing to evict), 2 invalid input (policy,
//! snapshot, flags), 1 anything else.

use crate::executor::{DryRun, Executor};
use crate::framework::Pipeline;
use crate::plan;
use crate::report::Format;
use crate::source::{ClusterSource, FileSource};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

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

/// Runs one invocation and returns what to print on stdout.
pub fn run(cli: &Cli) -> Result<String, Failure> {
    let now = match &cli.now {
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|e| {
                Failure::invalid(format!(
                    "--now {t:?}: not an RFC 3339 time ({e}); use e.g. 2026-12-01T00:00:00Z"
                ))
            })?
            .timestamp(),
        None => chrono::Utc::now().timestamp(),
    };
    crate::policy::parse_duration(&cli.descheduling_interval)
        .map_err(|e| Failure::invalid(format!("--descheduling-interval: {e}")))?;
    // Nothing runs on an invalid policy.
    let pipeline = Pipeline::load(&cli.policy_config_file).map_err(Failure::invalid)?;
    let Some(snapshot_path) = &cli.snapshot else {
        return Err(Failure::other(
            "planning against a live cluster is not available in this build; plan offline with --snapshot FILE (which implies --dry-run)",
        ));
    };
    let mut source = FileSource {
        path: snapshot_path.clone(),
    };
    let snap = source.snapshot().map_err(Failure::invalid)?;
    tracing::info!(
        nodes = snap.nodes.len(),
        pods = snap.pods.len(),
        pdbs = snap.pdbs.len(),
        "snapshot loaded"
    );
    let plan = plan::plan(&pipeline, &snap, now).map_err(Failure::invalid)?;
    tracing::info!(evictions = plan.evictions.len(), "plan ready");
    let cycle = DryRun.execute(&snap, &plan);
    Ok(cycle.report.render(cli.output))
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);
    match run(&cli) {
        Ok(out) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            if stdout
                .write_all(out.as_bytes())
                .and_then(|_| stdout.flush())
                .is_err()
            {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
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
        assert_eq!(cli.verbosity, 4);
        assert_eq!(cli.output, Format::Json);
        assert!(
            Cli::try_parse_from(["descheduler", "--policy-config-file", "p", "-o", "xml"]).is_err()
        );
    }
}
