//! The kubectl plugin: the same binary, installed (or linked) as `kubectl-descheduler`,
//! answers `kubectl descheduler plan`: the plan of a dry run against the cluster of the
//! current kubeconfig context, with the policy from the ConfigMap the manifests install
//! (kube-system/descheduler-policy, key policy.yaml) unless a policy file is given.
//!
//! It only turns its flags into the descheduler's own ([`crate::cli::Cli`]: one cycle,
//! `--dry-run`, no HTTPS server) and runs that; nothing is evicted. That command line is
//! the plugin's alone: the descheduler's environment variables (`DESCHEDULER_*`, meant for
//! its Deployment or CronJob) do not reach it. The cluster is found by kubectl's loading
//! rules (`--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`).

use crate::cli::{go_bool, Cli, Failure};
use crate::live::policy_map;
use crate::report::Format;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// The name the binary answers to as a kubectl plugin.
pub const PLUGIN_NAME: &str = "kubectl-descheduler";

/// Whether the program was started under the plugin's name (`argv[0]`'s file name, with or
/// without an extension such as `.exe`).
pub fn started_as_plugin(argv0: Option<&std::ffi::OsStr>) -> bool {
    argv0
        .map(std::path::Path::new)
        .and_then(|p| p.file_stem())
        .is_some_and(|name| name == PLUGIN_NAME)
}

/// kubectl descheduler: see what the descheduler would evict in the current context's cluster.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl descheduler",
    bin_name = "kubectl descheduler",
    version,
    about
)]
pub struct KubectlCli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the plan of a dry run: the pods the descheduler would evict now, from where,
    /// to where, by which plugin and why. Nothing is evicted.
    Plan(PlanArgs),
}

#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Report format.
    #[arg(long, short = 'o', value_enum, default_value_t = Format::Table)]
    pub output: Format,

    /// A DeschedulerPolicy file to plan with, instead of the cluster's ConfigMap.
    #[arg(long = "policy-config-file", value_name = "FILE")]
    pub policy_config_file: Option<PathBuf>,

    /// The ConfigMap holding the policy under the key `policy.yaml`.
    #[arg(long = "policy-configmap", value_name = "NAMESPACE/NAME",
        default_value_t = format!("{}/{}", policy_map::DEFAULT_NAMESPACE, policy_map::DEFAULT_NAME),
        conflicts_with = "policy_config_file")]
    pub policy_configmap: String,

    /// A kubeconfig file; default: $KUBECONFIG or ~/.kube/config, as kubectl.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context; default: its current context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// Predict where each evicted pod's replacement goes (shown as its destination).
    #[arg(long = "predict-destinations", num_args = 0..=1, require_equals = true,
        default_value = "true", default_missing_value = "true", value_parser = go_bool,
        action = clap::ArgAction::Set)]
    pub predict_destinations: bool,

    /// The planning time (RFC 3339); defaults to now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,

    /// The deadline of each API request, as kubectl's flag (a Go duration; 0: none).
    #[arg(
        long = "request-timeout",
        value_name = "DURATION",
        default_value = "60s"
    )]
    pub request_timeout: String,

    /// Log verbosity (0: warnings only).
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    pub verbosity: u8,
}

impl PlanArgs {
    /// The descheduler's command line for this plan: one cycle, a dry run, no HTTPS server;
    /// `policy` stands for the policy file (the ConfigMap's description when it comes from
    /// one).
    pub fn descheduler_args(&self, policy: &str) -> Vec<String> {
        let output = self
            .output
            .to_possible_value()
            .expect("every format has a name")
            .get_name()
            .to_string();
        let mut args: Vec<String> = vec![
            PLUGIN_NAME.into(),
            "--policy-config-file".into(),
            policy.into(),
            "--dry-run=true".into(),
            "--descheduling-interval=0".into(),
            "--secure-port=0".into(),
            "--leader-elect=false".into(),
            format!("--output={output}"),
            format!("--predict-destinations={}", self.predict_destinations),
            format!("--v={}", self.verbosity),
            format!("--request-timeout={}", self.request_timeout),
        ];
        if let Some(k) = &self.kubeconfig {
            args.push("--kubeconfig".into());
            args.push(k.display().to_string());
        }
        if let Some(c) = &self.context {
            args.push(format!("--context={c}"));
        }
        if let Some(n) = &self.now {
            args.push(format!("--now={n}"));
        }
        args
    }
}

/// `NAMESPACE/NAME` of `--policy-configmap`.
fn configmap_ref(text: &str) -> Result<(&str, &str), Failure> {
    match text.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns, name))
        }
        _ => Err(Failure::invalid(format!(
            "--policy-configmap {text:?}: give NAMESPACE/NAME, e.g. {}/{}",
            policy_map::DEFAULT_NAMESPACE,
            policy_map::DEFAULT_NAME
        ))),
    }
}

/// The plan: the policy from the file or the ConfigMap, then one dry-run cycle.
pub fn plan(args: &PlanArgs, out: &mut dyn std::io::Write) -> Result<(), Failure> {
    if let Some(file) = &args.policy_config_file {
        let cli = descheduler_cli(args, &file.display().to_string())?;
        return crate::cli::run(&cli, out);
    }
    let (namespace, name) = configmap_ref(&args.policy_configmap)?;
    let source = policy_map::describe(namespace, name);
    let cli = descheduler_cli(args, &source)?;
    let request_timeout = crate::cli::request_timeout(&args.request_timeout)?;
    // The ConfigMap is read on a runtime of its own; the cycle starts another.
    let text = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failure::other)?
        .block_on(async {
            let api = crate::live::client::ApiClient::connect(
                args.kubeconfig.as_deref(),
                args.context.as_deref(),
                0.0,
                1,
                request_timeout,
            )
            .await?;
            policy_map::read(&api.client, namespace, name).await
        })
        .map_err(|e| {
            if e.is_invalid_input() {
                Failure::invalid(e)
            } else {
                Failure::other(e)
            }
        })?;
    let (policy, pipeline) =
        crate::app::policy_from_text(&source, &text, args.predict_destinations)
            .map_err(Failure::invalid)?;
    crate::cli::run_with_policy(&cli, &policy, pipeline, out)
}

/// The descheduler's command line of a plan, from the plugin's flags only: no flag falls
/// back on an environment variable (`DESCHEDULER_SCHEDULE` in a shell must not make a plan
/// a loop, nor `DESCHEDULER_SNAPSHOT` plan a file).
fn descheduler_cli(args: &PlanArgs, policy: &str) -> Result<Cli, Failure> {
    let command = Cli::command().mut_args(|a| a.env(None));
    let matches = command
        .try_get_matches_from(args.descheduler_args(policy))
        .map_err(Failure::invalid)?;
    Cli::from_arg_matches(&matches).map_err(Failure::invalid)
}

/// The plugin's main.
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    let cli = match KubectlCli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match &cli.command {
        Command::Plan(args) => {
            crate::cli::init_logging_at(args.verbosity, crate::cli::LogFormat::Text);
            crate::cli::exit(plan(args, &mut std::io::stdout()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_cli_is_well_formed() {
        KubectlCli::command().debug_assert();
    }

    #[test]
    fn the_plugin_answers_to_its_name_only() {
        let yes = |s: &str| started_as_plugin(Some(std::ffi::OsStr::new(s)));
        assert!(yes("kubectl-descheduler"));
        assert!(yes("/usr/local/bin/kubectl-descheduler"));
        assert!(yes("kubectl-descheduler.exe"));
        assert!(!yes("descheduler"));
        assert!(!yes("/bin/kubectl-descheduler-old"));
        assert!(!started_as_plugin(None));
    }

    #[test]
    fn a_plan_is_one_dry_run_cycle_with_the_given_flags() {
        let cli = KubectlCli::try_parse_from([
            "kubectl descheduler",
            "plan",
            "-o",
            "json",
            "--context",
            "prod",
            "--kubeconfig",
            "kc",
        ])
        .unwrap();
        let Command::Plan(args) = &cli.command;
        let d = descheduler_cli(
            args,
            "ConfigMap kube-system/descheduler-policy key policy.yaml",
        )
        .unwrap();
        assert!(d.dry_run);
        assert_eq!(d.output, Format::Json);
        assert_eq!(d.descheduling_interval, "0");
        assert_eq!(d.secure_port, 0);
        assert!(!d.leader_elect);
        assert!(d.predict_destinations);
        assert_eq!(d.context.as_deref(), Some("prod"));
        assert_eq!(d.kubeconfig.as_deref(), Some(std::path::Path::new("kc")));
        assert_eq!(
            configmap_ref(&args.policy_configmap).unwrap(),
            ("kube-system", "descheduler-policy")
        );
        for bad in ["descheduler-policy", "/x", "ns/", "a/b/c"] {
            let e = configmap_ref(bad).unwrap_err();
            assert!(e.message.contains("NAMESPACE/NAME"), "{}", e.message);
        }
        // A policy file and a ConfigMap are one or the other.
        assert!(KubectlCli::try_parse_from([
            "kubectl descheduler",
            "plan",
            "--policy-config-file",
            "p.yaml",
            "--policy-configmap",
            "a/b"
        ])
        .is_err());
    }
}
