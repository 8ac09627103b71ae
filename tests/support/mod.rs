//! A real Kubernetes control plane for integration tests, and helpers to fill it.
//!
//! [`Cluster::start`] runs etcd and kube-apiserver (and, per [`Components`],
//! kube-controller-manager, kube-scheduler and the fake kubelet of
//! `hack/control-plane/cmd/fake-kubelet`) on loopback, on free ports, in a fresh temporary
//! folder, with certificates made here with rcgen. [`shared`] starts one full cluster per test
//! binary, lazily, for all its tests: each test isolates itself in its own namespace
//! ([`create_namespace`]) and with its own node names and labels ([`unique`]).
//!
//! The binaries come from `.cache/control-plane/bin/` of the crate (made by
//! `scripts/build-control-plane`), or from the folder named by `DESCHEDULER_TEST_BIN_DIR` (or
//! `CONTROL_PLANE_BIN_DIR`, as the scripts read it).
//! Env `DESCHEDULER_TEST_KEEP=1` keeps the cluster's folder (certificates, kubeconfig, logs)
//! after the tests; `DESCHEDULER_TEST_START_TIMEOUT` (seconds, default 120) bounds each
//! readiness wait of the start-up.
//!
//! Processes end when the [`Cluster`] is dropped, and also when the test process exits (the
//! shared cluster is never dropped): every component is started through `sh -c` with a
//! watchdog that stops it once the test process is gone.
//!
//! Include with `mod support;` from a test file.
#![allow(dead_code)]

pub mod chaos;
pub mod churn;
pub mod executor;
pub mod metrics_api;
pub mod outcome;
pub mod process;
pub mod prometheus;
pub mod replay;
pub mod soak;
pub mod states;
pub mod webhook;
pub mod witness;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{
    Container, Namespace, Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, Pod,
    PodSchedulingGroup, PodSpec, PodTemplateSpec, ResourceRequirements, ServiceAccount, Taint,
    TopologySpreadConstraint,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// How long helpers wait for the cluster to do something (pods Running, nodes Ready, ...).
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The image of every container the helpers create (the fake kubelet runs nothing).
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

const SERVICE_CLUSTER_IP_RANGE: &str = "10.0.0.0/24";

/// The feature gates of every Kubernetes component: `GenericWorkload` serves Kubernetes' own
/// Workload and PodGroup (`scheduling.k8s.io`, beta in 1.37 but off by default), lets pods
/// name their group (`spec.schedulingGroup`), and turns kube-scheduler's GangScheduling
/// plugin on.
pub const FEATURE_GATES: &str = "GenericWorkload=true";

/// The API versions kube-apiserver serves besides its defaults: the Workload and PodGroup
/// APIs, beta and alpha.
pub const RUNTIME_CONFIG: &str = "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true";
const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

// ---------------------------------------------------------------------------------------------
// Components and binaries

/// Which components run besides etcd and kube-apiserver (always started).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Components {
    /// kube-controller-manager with all default controllers (ReplicaSet, Deployment,
    /// disruption, garbage collector, service account and its token, namespace, ...). The node
    /// lifecycle controller runs only together with the fake kubelet, which keeps the nodes'
    /// leases fresh.
    pub controller_manager: bool,
    /// kube-scheduler.
    pub scheduler: bool,
    /// The fake kubelet: keeps every Node Ready (and its Lease renewed), marks pods bound to a
    /// node Running, and completes their graceful deletion.
    pub fake_kubelet: bool,
    /// How the fake kubelet ends and starts pods ([`Kubelet::INSTANT`] or
    /// [`Kubelet::REALISTIC`]).
    pub kubelet: Kubelet,
    /// Flags given to kube-apiserver besides the harness's own (such as
    /// `--watch-cache=false`).
    pub apiserver_args: &'static [&'static str],
}

/// How the fake kubelet ends and starts pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kubelet {
    /// How much of each terminating pod's grace period it stays Running on its node, in
    /// thousandths (100: a pod with the default 30 s stays 3 s); 0 deletes it at once.
    pub grace_per_mille: u32,
    /// How long a started pod runs before it becomes Ready.
    pub ready_delay: Duration,
}

impl Kubelet {
    /// Evicted pods are deleted at once and started pods are Ready at once: for tests that
    /// do not measure what kube-scheduler sees while pods terminate (and are faster so).
    pub const INSTANT: Kubelet = Kubelet {
        grace_per_mille: 0,
        ready_delay: Duration::ZERO,
    };
    /// As a real kubelet, on a shorter clock: a terminating pod keeps its place (and its
    /// requests, for kube-scheduler) for 30% of its grace period (9 s for the default 30 s),
    /// and a started pod becomes Ready a second after it starts. For the tests that measure
    /// predictions. (At a tenth, 3 s, a pod often vanishes between the moment a cycle
    /// re-plans and the moment the next replacement is scheduled, which a real 30 s grace
    /// period makes rare.)
    pub const REALISTIC: Kubelet = Kubelet {
        grace_per_mille: 300,
        ready_delay: Duration::from_secs(1),
    };
}

impl Components {
    /// Every component, with a kubelet that deletes evicted pods at once
    /// ([`Kubelet::INSTANT`]).
    pub fn all() -> Self {
        Components {
            controller_manager: true,
            scheduler: true,
            fake_kubelet: true,
            kubelet: Kubelet::INSTANT,
            apiserver_args: &[],
        }
    }

    /// Every component, with a kubelet that honours grace periods and readiness delays
    /// ([`Kubelet::REALISTIC`]): what kube-scheduler sees on a real cluster.
    pub fn realistic() -> Self {
        Components {
            kubelet: Kubelet::REALISTIC,
            ..Components::all()
        }
    }

    /// etcd and kube-apiserver only: nothing schedules, runs or replaces pods.
    pub fn apiserver_only() -> Self {
        Components {
            controller_manager: false,
            scheduler: false,
            fake_kubelet: false,
            kubelet: Kubelet::INSTANT,
            apiserver_args: &[],
        }
    }
}

impl Default for Components {
    fn default() -> Self {
        Components::all()
    }
}

/// The folder holding the control-plane binaries: `$DESCHEDULER_TEST_BIN_DIR`, else
/// `$CONTROL_PLANE_BIN_DIR` (where `scripts/build-control-plane` puts them when set), else
/// `.cache/control-plane/bin` of the crate.
pub fn bin_dir() -> PathBuf {
    ["DESCHEDULER_TEST_BIN_DIR", "CONTROL_PLANE_BIN_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/control-plane/bin"))
}

fn binaries(components: Components) -> Vec<&'static str> {
    let mut names = vec!["etcd", "kube-apiserver"];
    if components.controller_manager {
        names.push("kube-controller-manager");
    }
    if components.scheduler {
        names.push("kube-scheduler");
    }
    if components.fake_kubelet {
        names.push("fake-kubelet");
    }
    names
}

fn check_binaries(dir: &Path, components: Components) {
    let missing: Vec<_> = binaries(components)
        .into_iter()
        .filter(|name| !dir.join(name).is_file())
        .collect();
    if !missing.is_empty() {
        panic!(
            "control-plane binaries missing from {}: {}.\n\
             Run `scripts/build-control-plane` in {} (it builds etcd, kube-apiserver, \
             kube-controller-manager, kube-scheduler, kubectl and fake-kubelet into \
             .cache/control-plane/bin), or point DESCHEDULER_TEST_BIN_DIR at a folder holding them.",
            dir.display(),
            missing.join(", "),
            env!("CARGO_MANIFEST_DIR"),
        );
    }
}

fn start_timeout() -> Duration {
    let secs = std::env::var("DESCHEDULER_TEST_START_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(120);
    Duration::from_secs(secs)
}

// ---------------------------------------------------------------------------------------------
// Names

/// The descheduler binary of this build.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_descheduler")
}

/// The JSON report of an offline plan of `snapshot` with `policy` at the examples' fixed time
/// (2026-12-01T00:00:00Z); the run must exit 0.
pub fn offline_plan(policy: &Path, snapshot: &Path) -> serde_json::Value {
    let out = std::process::Command::new(bin())
        .args(["--policy-config-file", policy.to_str().unwrap()])
        .args(["--snapshot", snapshot.to_str().unwrap()])
        .args(["--now", "2026-12-01T00:00:00Z", "-o", "json"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap()
}

/// Writes a policy file with a unique name in `dir`; returns its path.
pub fn write_policy(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join(format!("{}.yaml", unique("policy")));
    fs::write(&path, text).unwrap();
    path
}

/// A name nobody else in this test process got: `prefix-<n><random>`, lowercase, usable as a
/// namespace, node or object name (keep `prefix` short: names are at most 63 characters).
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let salt = (u64::from(nanos) ^ u64::from(std::process::id()).rotate_left(20)) % 36u64.pow(4);
    let name = format!("{prefix}-{}{}", base36(n), base36_padded(salt, 4));
    assert!(name.len() <= 63, "unique({prefix:?}) is too long: {name}");
    name
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ascii")
}

fn base36_padded(n: u64, width: usize) -> String {
    format!("{:0>width$}", base36(n))
}

// ---------------------------------------------------------------------------------------------
// Certificates

struct Pki {
    dir: PathBuf,
    ca_pem: String,
}

impl Pki {
    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    fn read(&self, file: &str) -> String {
        fs::read_to_string(self.dir.join(file)).expect("reading a certificate file")
    }
}

fn pki_error(e: rcgen::Error) -> String {
    format!("generating certificates: {e}")
}

/// A CA (for the apiserver, its clients and the serving certs of kcm and the scheduler); a
/// serving cert for 127.0.0.1/localhost; client certs for admin (O=system:masters), kcm and the
/// scheduler; a front-proxy CA and client (for aggregated APIs); the service-account key pair.
fn write_pki(dir: &Path) -> Result<Pki, String> {
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let write = |name: &str, contents: &str| {
        fs::write(dir.join(name), contents).map_err(|e| format!("writing {name}: {e}"))
    };

    let ca = |cn: &str| -> Result<(CertificateParams, KeyPair, String), String> {
        let key = KeyPair::generate().map_err(pki_error)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(pki_error)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).map_err(pki_error)?;
        Ok((params, key, cert.pem()))
    };
    let leaf = |issuer: &Issuer<'_, &KeyPair>,
                file: &str,
                cn: &str,
                orgs: &[&str],
                sans: &[&str],
                usage: ExtendedKeyUsagePurpose|
     -> Result<(), String> {
        let key = KeyPair::generate().map_err(pki_error)?;
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).map_err(pki_error)?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        for org in orgs {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *org);
        }
        params.distinguished_name.push(DnType::CommonName, cn);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, issuer).map_err(pki_error)?;
        write(&format!("{file}.crt"), &cert.pem())?;
        write(&format!("{file}.key"), &key.serialize_pem())
    };

    let (ca_params, ca_key, ca_pem) = ca("descheduler-test-ca")?;
    write("ca.crt", &ca_pem)?;
    write("ca.key", &ca_key.serialize_pem())?;
    let issuer = Issuer::new(ca_params, &ca_key);
    leaf(
        &issuer,
        "serving",
        "kube-apiserver",
        &[],
        &[
            "127.0.0.1",
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "10.0.0.1",
        ],
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let client = ExtendedKeyUsagePurpose::ClientAuth;
    leaf(
        &issuer,
        "admin",
        "descheduler-test-admin",
        &["system:masters"],
        &[],
        client.clone(),
    )?;
    leaf(
        &issuer,
        "controller-manager",
        "system:kube-controller-manager",
        &[],
        &[],
        client.clone(),
    )?;
    leaf(
        &issuer,
        "scheduler",
        "system:kube-scheduler",
        &[],
        &[],
        client.clone(),
    )?;

    let (fp_params, fp_key, fp_pem) = ca("descheduler-test-front-proxy-ca")?;
    write("front-proxy-ca.crt", &fp_pem)?;
    let fp_issuer = Issuer::new(fp_params, &fp_key);
    leaf(
        &fp_issuer,
        "front-proxy-client",
        "front-proxy-client",
        &[],
        &[],
        client,
    )?;

    let sa = KeyPair::generate().map_err(pki_error)?;
    write("service-account.key", &sa.serialize_pem())?;
    write("service-account.pub", &sa.public_key_pem())?;

    Ok(Pki {
        dir: dir.to_path_buf(),
        ca_pem,
    })
}

fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A self-contained kubeconfig (certificates inlined) for the client cert `user`.
fn write_kubeconfig(path: &Path, server: &str, pki: &Pki, user: &str) -> Result<(), String> {
    let text = format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: test\n  \
           cluster:\n    \
             server: {server}\n    \
             certificate-authority-data: {ca}\n\
         users:\n\
         - name: {user}\n  \
           user:\n    \
             client-certificate-data: {cert}\n    \
             client-key-data: {key}\n\
         contexts:\n\
         - name: test\n  \
           context:\n    \
             cluster: test\n    \
             user: {user}\n    \
             namespace: default\n\
         current-context: test\n",
        ca = base64(pki.ca_pem.as_bytes()),
        cert = base64(pki.read(&format!("{user}.crt")).as_bytes()),
        key = base64(pki.read(&format!("{user}.key")).as_bytes()),
    );
    fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// Processes

/// Runs `"$0" "$@"` in place of the shell (so the child's pid is the component's) after
/// starting a watchdog subshell that stops the component once the test process ($TESTPID) is
/// gone: SIGTERM (after $STOP_DELAY seconds: etcd outlives the apiserver's shutdown), then
/// SIGKILL after 5 s.
const WRAPPER: &str = r#"
(
  exec </dev/null >/dev/null 2>&1
  while kill -0 "$TESTPID"; do
    kill -0 "$$" || exit 0
    sleep 1
  done
  sleep "${STOP_DELAY:-0}"
  kill -TERM "$$"
  i=0
  while [ "$i" -lt 10 ] && kill -0 "$$"; do sleep 0.5; i=$((i + 1)); done
  kill -KILL "$$"
) &
exec "$0" "$@"
"#;

/// Removes the cluster's folder some seconds after the test process is gone.
const CLEANUP: &str = r#"
exec </dev/null >/dev/null 2>&1
while kill -0 "$TESTPID"; do sleep 1; done
sleep 7
rm -rf "$0"
"#;

struct Proc {
    name: &'static str,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
    /// How it was started, to start it again.
    exe: PathBuf,
    args: Vec<String>,
}

impl Proc {
    fn spawn(name: &'static str, exe: &Path, args: &[String], log: &Path) -> Result<Proc, String> {
        // At the test process's exit, the apiserver and etcd outlive their clients.
        let stop_delay = match name {
            "etcd" => 3,
            "kube-apiserver" => 1,
            _ => 0,
        };
        let out = fs::File::create(log).map_err(|e| format!("creating {}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(WRAPPER)
            .arg(exe)
            .args(args)
            .env("TESTPID", std::process::id().to_string())
            .env("STOP_DELAY", stop_delay.to_string())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("starting {name} ({}): {e}", exe.display()))?;
        Ok(Proc {
            name,
            child,
            log: log.to_path_buf(),
            exited: None,
            exe: exe.to_path_buf(),
            args: args.to_vec(),
        })
    }

    /// The exit status once the process ended.
    fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }
}

/// The last `lines` lines of a file (or a note that it cannot be read).
pub fn tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

fn describe_failure(proc: &mut Proc, what: &str) -> String {
    let state = match proc.exit_status() {
        Some(status) => format!("{} exited ({status})", proc.name),
        None => format!("{} is running", proc.name),
    };
    format!(
        "{what}; {state}. Last lines of {}:\n{}",
        proc.log.display(),
        indent(&tail(&proc.log, 40))
    )
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// All processes of a cluster; dropping it stops them (SIGTERM, then SIGKILL after 10 s).
struct Procs {
    list: Vec<Proc>,
    cleanup: Option<Child>,
}

impl Procs {
    fn get(&mut self, name: &str) -> &mut Proc {
        self.list
            .iter_mut()
            .find(|p| p.name == name)
            .expect("a started component")
    }

    /// Stops the API clients first, then the apiserver, then etcd (an apiserver without its
    /// etcd hangs in its shutdown): SIGTERM, then SIGKILL after 10 s.
    fn stop(&mut self) {
        let tiers: [&[&str]; 3] = [
            &["fake-kubelet", "kube-scheduler", "kube-controller-manager"],
            &["kube-apiserver"],
            &["etcd"],
        ];
        for tier in tiers {
            let mut group: Vec<&mut Proc> = self
                .list
                .iter_mut()
                .filter(|p| tier.contains(&p.name))
                .collect();
            for p in group.iter_mut() {
                if p.exit_status().is_none() {
                    let _ = Command::new("kill")
                        .arg("-TERM")
                        .arg(p.child.id().to_string())
                        .stderr(Stdio::null())
                        .status();
                }
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && group.iter_mut().any(|p| p.exit_status().is_none()) {
                std::thread::sleep(Duration::from_millis(20));
            }
            for p in group.iter_mut() {
                if p.exit_status().is_none() {
                    let _ = p.child.kill();
                    let _ = p.child.wait();
                }
            }
        }
        self.list.clear();
        if let Some(mut c) = self.cleanup.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    // Hold all listeners until every port is picked, so no port comes twice.
    let listeners = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("binding 127.0.0.1:0: {e}"))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("local_addr: {e}"))
}

// ---------------------------------------------------------------------------------------------
// The cluster

/// A running control plane. Dropping it stops the processes and removes its folder.
pub struct Cluster {
    components: Components,
    // Declared before `dir`: processes stop before their folder goes.
    procs: Mutex<Procs>,
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    kubeconfig: PathBuf,
    server: String,
    config: Config,
    startup: Duration,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .field("dir", &self.path)
            .field("components", &self.components)
            .finish()
    }
}

struct Ports {
    etcd: u16,
    etcd_peer: u16,
    apiserver: u16,
    controller_manager: u16,
    scheduler: u16,
}

impl Cluster {
    /// Starts a control plane and waits until it is ready; panics with the end of the failing
    /// component's log if it does not get ready. Blocks the calling thread (callable from
    /// within a tokio runtime too: the start-up runs on a thread of its own).
    pub fn start(components: Components) -> Cluster {
        match Cluster::try_start(components) {
            Ok(cluster) => cluster,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`Cluster::start`], but returns the failure as an error.
    pub fn try_start(components: Components) -> Result<Cluster, String> {
        let bin = bin_dir();
        check_binaries(&bin, components);
        let mut last = String::new();
        // A port picked as free may be taken by someone else before the component binds it.
        for attempt in 1..=3 {
            let bin = bin.clone();
            let result = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("building a tokio runtime: {e}"))?;
                rt.block_on(start_cluster(components, &bin))
            })
            .join()
            .unwrap_or_else(|_| Err("the start-up thread panicked".to_string()));
            match result {
                Ok(cluster) => return Ok(cluster),
                Err(e) if e.contains("address already in use") && attempt < 3 => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// An admin client (O=system:masters). Needs a tokio runtime (make one per test: a client
    /// must not outlive the runtime it was made in). Requests are not retried on 429/503/504, so
    /// a test sees an eviction refused by a PodDisruptionBudget as it is.
    pub fn client(&self) -> Client {
        Client::try_from(self.config()).expect("building a kube client")
    }

    /// The admin client's configuration.
    pub fn config(&self) -> Config {
        let mut config = self.config.clone();
        config.default_retry = false;
        config
    }

    /// The admin kubeconfig (self-contained: certificates are inlined).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:<port>` of kube-apiserver.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The CA that signed the apiserver's serving certificate and the client certificates.
    pub fn ca_file(&self) -> PathBuf {
        self.path.join("pki/ca.crt")
    }

    /// The cluster's folder (pki/, logs/, etcd/, kubeconfigs).
    pub fn dir(&self) -> &Path {
        &self.path
    }

    /// The log file of a component ("etcd", "kube-apiserver", "kube-controller-manager",
    /// "kube-scheduler", "fake-kubelet").
    pub fn log(&self, component: &str) -> PathBuf {
        self.path.join("logs").join(format!("{component}.log"))
    }

    pub fn components(&self) -> Components {
        self.components
    }

    /// How long [`Cluster::start`] took until everything was ready.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// (component, pid) of every process.
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        let procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        procs.list.iter().map(|p| (p.name, p.child.id())).collect()
    }

    /// Panics, with the end of its log, if a component has exited.
    pub fn assert_running(&self) {
        let mut procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        for p in procs.list.iter_mut() {
            if p.exit_status().is_some() {
                panic!(
                    "{}",
                    describe_failure(p, "a control-plane component stopped")
                );
            }
        }
    }

    /// A bearer token (valid one hour) of ServiceAccount `namespace/name`, created if missing,
    /// from the TokenRequest API.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> String {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        create_ignoring_conflict(&accounts, &service_account(name)).await;
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                audiences: Some(Vec::new()),
                expiration_seconds: Some(3600),
                ..Default::default()
            }),
            ..Default::default()
        };
        let response: TokenRequest = accounts
            .create_subresource("token", name, &PostParams::default(), &request)
            .await
            .unwrap_or_else(|e| panic!("TokenRequest for {namespace}/{name}: {e}"));
        response
            .status
            .and_then(|s| s.token)
            .expect("TokenRequest without a token")
    }

    /// Kills component `name` (SIGKILL, as a crash or an OOM kill would) and waits for its end.
    pub fn kill(&self, name: &str) {
        let mut procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        let p = procs.get(name);
        let _ = p.child.kill();
        let _ = p.child.wait();
    }

    /// Starts component `name` again as it was started (same flags, same ports) after
    /// [`Cluster::kill`], and waits until the API server answers again.
    pub async fn restart(&self, name: &str) {
        {
            let mut procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
            let old = procs.get(name);
            let (exe, args) = (old.exe.clone(), old.args.clone());
            let log = old.log.with_extension("restarted.log");
            let fresh = Proc::spawn(old.name, &exe, &args, &log)
                .unwrap_or_else(|e| panic!("restarting {name}: {e}"));
            *old = fresh;
        }
        let client = self.client();
        assert!(
            wait_until(TIMEOUT, || async {
                client.apiserver_version().await.is_ok()
            })
            .await,
            "the API server did not answer again after {name} restarted"
        );
    }

    /// Stops component `name` (SIGSTOP: a hung process, its connections open) until
    /// [`Cluster::resume`].
    pub fn pause(&self, name: &str) {
        self.signal(name, "-STOP");
    }

    /// Lets a paused component run again (SIGCONT).
    pub fn resume(&self, name: &str) {
        self.signal(name, "-CONT");
    }

    fn signal(&self, name: &str, signal: &str) {
        let mut procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        let pid = procs.get(name).child.id().to_string();
        let ok = Command::new("kill")
            .args([signal, &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {signal} {name} ({pid})");
    }

    /// A client authenticated as ServiceAccount `namespace/name` (created if missing),
    /// trusting the cluster's CA.
    pub async fn service_account_client(&self, namespace: &str, name: &str) -> Client {
        let token = self.service_account_token(namespace, name).await;
        let mut config = self.config();
        config.auth_info = AuthInfo {
            token: Some(token.into()),
            ..Default::default()
        };
        config.default_namespace = namespace.to_string();
        Client::try_from(config).expect("building a kube client")
    }

    /// Writes `path`: a kubeconfig that reaches this cluster as ServiceAccount
    /// `namespace/name` (created if missing), as a pod of that account would.
    pub async fn service_account_kubeconfig(&self, namespace: &str, name: &str, path: &Path) {
        let token = self.service_account_token(namespace, name).await;
        fs::write(
            path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
                self.server(),
                self.ca_file().display()
            ),
        )
        .unwrap();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.procs
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .stop();
    }
}

/// The holder of Lease `namespace/name`, if it exists and is held.
pub async fn lease_holder(client: &Client, namespace: &str, name: &str) -> Option<String> {
    Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.holder_identity)
}

/// Waits up to `within` until the replica `id` holds Lease `namespace/name` (leader
/// election names a holder `<id>_<pid>`); whether it came to.
pub async fn comes_to_hold(
    client: &Client,
    namespace: &str,
    name: &str,
    id: &str,
    within: Duration,
) -> bool {
    let prefix = format!("{id}_");
    wait_until(within, || async {
        lease_holder(client, namespace, name)
            .await
            .is_some_and(|h| h.starts_with(&prefix))
    })
    .await
}

/// The kubectl binary of the control plane.
pub fn kubectl() -> PathBuf {
    bin_dir().join("kubectl")
}

/// Runs kubectl against `kubeconfig` with `stdin`; whether it succeeded, and its stdout and
/// stderr together.
pub async fn kubectl_run(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String) {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new(kubectl());
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("running {}: {e}", kubectl().display()));
    if let Some(input) = stdin {
        let mut s = child.stdin.take().unwrap();
        s.write_all(input.as_bytes()).await.unwrap();
        drop(s);
    }
    let out = child.wait_with_output().await.unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The full cluster (all components, [`Components::all`]) shared by the tests of this test
/// binary, started on first use. Its processes stop, and its folder goes, when the test
/// process exits.
pub fn shared() -> &'static Cluster {
    static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();
    shared_in(&SHARED, Components::all(), "shared")
}

/// Like [`shared`], with the kubelet that honours grace periods and readiness delays
/// ([`Components::realistic`]): for the tests that measure predictions.
pub fn shared_realistic() -> &'static Cluster {
    static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();
    shared_in(&SHARED, Components::realistic(), "shared_realistic")
}

fn shared_in(
    cell: &'static OnceLock<Result<Cluster, String>>,
    components: Components,
    name: &str,
) -> &'static Cluster {
    match cell.get_or_init(|| {
        let cluster = Cluster::try_start(components);
        if let Ok(c) = &cluster {
            eprintln!(
                "support::{name}(): control plane ready in {:.1?}",
                c.startup_time()
            );
        }
        cluster
    }) {
        Ok(cluster) => cluster,
        Err(e) => panic!("the {name} control plane did not start: {e}"),
    }
}

async fn start_cluster(components: Components, bin: &Path) -> Result<Cluster, String> {
    let started = Instant::now();
    let timeout = start_timeout();
    let keep = std::env::var("DESCHEDULER_TEST_KEEP").is_ok_and(|v| !v.is_empty() && v != "0");
    let tmp = tempfile::Builder::new()
        .prefix("descheduler-control-plane-")
        .tempdir()
        .map_err(|e| format!("creating a temporary folder: {e}"))?;
    let path = tmp.path().to_path_buf();
    let logs = path.join("logs");
    fs::create_dir_all(&logs).map_err(|e| format!("creating {}: {e}", logs.display()))?;

    let mut procs = Procs {
        list: Vec::new(),
        cleanup: None,
    };
    let dir = if keep {
        eprintln!(
            "support: control plane folder kept: {}",
            tmp.keep().display()
        );
        None
    } else {
        procs.cleanup = Some(
            Command::new("sh")
                .arg("-c")
                .arg(CLEANUP)
                .arg(&path)
                .env("TESTPID", std::process::id().to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("starting the clean-up watchdog: {e}"))?,
        );
        Some(tmp)
    };
    let fail = |procs: &mut Procs, dir: Option<tempfile::TempDir>, e: String| -> String {
        procs.stop();
        // Keep the logs of a failed start for reading.
        if let Some(dir) = dir {
            let _ = dir.keep();
        }
        format!(
            "control plane start-up failed after {:.1?}: {e}\n(all logs are in {})",
            started.elapsed(),
            path.join("logs").display()
        )
    };

    let pki = match write_pki(&path.join("pki")) {
        Ok(pki) => pki,
        Err(e) => return Err(fail(&mut procs, dir, e)),
    };
    let ports = match free_ports(5) {
        Ok(p) => Ports {
            etcd: p[0],
            etcd_peer: p[1],
            apiserver: p[2],
            controller_manager: p[3],
            scheduler: p[4],
        },
        Err(e) => return Err(fail(&mut procs, dir, e)),
    };
    let server = format!("https://127.0.0.1:{}", ports.apiserver);
    let kubeconfig = path.join("admin.kubeconfig");
    let result = async {
        write_kubeconfig(&kubeconfig, &server, &pki, "admin")?;
        write_kubeconfig(
            &path.join("controller-manager.kubeconfig"),
            &server,
            &pki,
            "controller-manager",
        )?;
        write_kubeconfig(
            &path.join("scheduler.kubeconfig"),
            &server,
            &pki,
            "scheduler",
        )?;
        launch_store(&mut procs, bin, &path, &pki, &ports, components)?;
        let config = admin_config(&kubeconfig).await?;
        let mut probe = config.clone();
        probe.default_retry = false;
        probe.connect_timeout = Some(Duration::from_secs(2));
        let client = Client::try_from(probe.clone()).map_err(|e| format!("kube client: {e}"))?;
        poll_ready(
            &mut procs,
            "kube-apiserver",
            "kube-apiserver /readyz",
            timeout,
            || async { get_text(&client, "/readyz").await.map(drop) },
        )
        .await?;
        // The others need the apiserver: start them together, then wait for each.
        launch_clients(&mut procs, components, bin, &path, &pki, &ports)?;
        wait_clients(&mut procs, components, &probe, &client, &ports, timeout).await?;
        Ok::<_, String>(config)
    }
    .await;
    let config = match result {
        Ok(config) => config,
        Err(e) => return Err(fail(&mut procs, dir, e)),
    };
    Ok(Cluster {
        components,
        procs: Mutex::new(procs),
        dir,
        path,
        kubeconfig,
        server,
        config,
        startup: started.elapsed(),
    })
}

async fn admin_config(kubeconfig: &Path) -> Result<Config, String> {
    let file = Kubeconfig::read_from(kubeconfig)
        .map_err(|e| format!("reading {}: {e}", kubeconfig.display()))?;
    Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
        .await
        .map_err(|e| format!("loading {}: {e}", kubeconfig.display()))
}

fn arg(name: &str, value: impl std::fmt::Display) -> String {
    format!("--{name}={value}")
}

/// Starts etcd and kube-apiserver at once (the apiserver retries etcd until it answers).
fn launch_store(
    procs: &mut Procs,
    bin: &Path,
    dir: &Path,
    pki: &Pki,
    ports: &Ports,
    components: Components,
) -> Result<(), String> {
    let log = |name: &str| dir.join("logs").join(format!("{name}.log"));
    let etcd_url = format!("http://127.0.0.1:{}", ports.etcd);
    let peer_url = format!("http://127.0.0.1:{}", ports.etcd_peer);
    let etcd = vec![
        arg("name", "test"),
        arg("data-dir", dir.join("etcd").display()),
        arg("listen-client-urls", &etcd_url),
        arg("advertise-client-urls", &etcd_url),
        arg("listen-peer-urls", &peer_url),
        arg("initial-advertise-peer-urls", &peer_url),
        arg("initial-cluster", format!("test={peer_url}")),
        arg("initial-cluster-state", "new"),
        // No fsync: the data lives as long as the test process.
        arg("unsafe-no-fsync", true),
        arg("quota-backend-bytes", 512u64 << 20),
        arg("snapshot-count", 100_000),
        arg("log-level", "warn"),
    ];
    procs
        .list
        .push(Proc::spawn("etcd", &bin.join("etcd"), &etcd, &log("etcd"))?);

    let apiserver = vec![
        arg("etcd-servers", &etcd_url),
        arg("bind-address", "127.0.0.1"),
        arg("advertise-address", "127.0.0.1"),
        arg("secure-port", ports.apiserver),
        arg("endpoint-reconciler-type", "none"),
        arg("cert-dir", dir.join("apiserver").display()),
        arg("tls-cert-file", pki.path("serving.crt")),
        arg("tls-private-key-file", pki.path("serving.key")),
        arg("client-ca-file", pki.path("ca.crt")),
        arg("authorization-mode", "Node,RBAC"),
        arg("service-account-issuer", SERVICE_ACCOUNT_ISSUER),
        arg("service-account-key-file", pki.path("service-account.pub")),
        arg(
            "service-account-signing-key-file",
            pki.path("service-account.key"),
        ),
        arg("service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE),
        arg("allow-privileged", true),
        arg(
            "requestheader-client-ca-file",
            pki.path("front-proxy-ca.crt"),
        ),
        arg("requestheader-allowed-names", "front-proxy-client"),
        arg("requestheader-username-headers", "X-Remote-User"),
        arg("requestheader-group-headers", "X-Remote-Group"),
        arg("requestheader-extra-headers-prefix", "X-Remote-Extra-"),
        arg("proxy-client-cert-file", pki.path("front-proxy-client.crt")),
        arg("proxy-client-key-file", pki.path("front-proxy-client.key")),
        arg("feature-gates", FEATURE_GATES),
        arg("runtime-config", RUNTIME_CONFIG),
        // Less work at start-up and per request.
        arg("enable-priority-and-fairness", false),
        arg("profiling", false),
        arg("v", 1),
    ];
    let apiserver: Vec<String> = apiserver
        .into_iter()
        .chain(components.apiserver_args.iter().map(|a| a.to_string()))
        .collect();
    let apiserver_exe = bin.join("kube-apiserver");
    procs.list.push(Proc::spawn(
        "kube-apiserver",
        &apiserver_exe,
        &apiserver,
        &log("kube-apiserver"),
    )?);
    Ok(())
}

/// The components that need a ready apiserver.
fn launch_clients(
    procs: &mut Procs,
    components: Components,
    bin: &Path,
    dir: &Path,
    pki: &Pki,
    ports: &Ports,
) -> Result<(), String> {
    let log = |name: &str| dir.join("logs").join(format!("{name}.log"));
    if components.controller_manager {
        let kubeconfig = dir.join("controller-manager.kubeconfig");
        // Without the fake kubelet nothing renews leases: the node lifecycle controller would
        // mark every node NotReady and taint it.
        let controllers = if components.fake_kubelet {
            "*"
        } else {
            "*,-node-lifecycle-controller"
        };
        let args = vec![
            arg("kubeconfig", kubeconfig.display()),
            arg("authentication-kubeconfig", kubeconfig.display()),
            arg("authorization-kubeconfig", kubeconfig.display()),
            arg("bind-address", "127.0.0.1"),
            arg("secure-port", ports.controller_manager),
            arg("tls-cert-file", pki.path("serving.crt")),
            arg("tls-private-key-file", pki.path("serving.key")),
            arg("leader-elect", false),
            arg("controllers", controllers),
            arg("use-service-account-credentials", true),
            arg(
                "service-account-private-key-file",
                pki.path("service-account.key"),
            ),
            arg("root-ca-file", pki.path("ca.crt")),
            arg("cluster-signing-cert-file", pki.path("ca.crt")),
            arg("cluster-signing-key-file", pki.path("ca.key")),
            arg("service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE),
            arg("allocate-node-cidrs", false),
            arg("kube-api-qps", 200),
            arg("kube-api-burst", 400),
            arg("feature-gates", FEATURE_GATES),
            arg("profiling", false),
            arg("v", 1),
        ];
        let exe = bin.join("kube-controller-manager");
        procs.list.push(Proc::spawn(
            "kube-controller-manager",
            &exe,
            &args,
            &log("kube-controller-manager"),
        )?);
    }
    if components.scheduler {
        let kubeconfig = dir.join("scheduler.kubeconfig");
        let args = vec![
            arg("kubeconfig", kubeconfig.display()),
            arg("authentication-kubeconfig", kubeconfig.display()),
            arg("authorization-kubeconfig", kubeconfig.display()),
            arg("bind-address", "127.0.0.1"),
            arg("secure-port", ports.scheduler),
            arg("tls-cert-file", pki.path("serving.crt")),
            arg("tls-private-key-file", pki.path("serving.key")),
            arg("leader-elect", false),
            arg("feature-gates", FEATURE_GATES),
            arg("profiling", false),
            arg("v", 1),
        ];
        let exe = bin.join("kube-scheduler");
        procs.list.push(Proc::spawn(
            "kube-scheduler",
            &exe,
            &args,
            &log("kube-scheduler"),
        )?);
    }
    if components.fake_kubelet {
        let args = vec![
            arg("kubeconfig", dir.join("admin.kubeconfig").display()),
            arg("heartbeat", "5s"),
            arg(
                "grace-scale",
                format!("{}", f64::from(components.kubelet.grace_per_mille) / 1000.0),
            ),
            arg(
                "ready-delay",
                format!("{}ms", components.kubelet.ready_delay.as_millis()),
            ),
            arg("v", 1),
        ];
        let exe = bin.join("fake-kubelet");
        procs.list.push(Proc::spawn(
            "fake-kubelet",
            &exe,
            &args,
            &log("fake-kubelet"),
        )?);
    }
    Ok(())
}

/// Polls `check` until it succeeds; fails when any component exits, or after `timeout` (with
/// the log of `component`, the one awaited).
async fn poll_ready<F, Fut>(
    procs: &mut Procs,
    component: &str,
    what: &str,
    timeout: Duration,
    mut check: F,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match check().await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if let Some(dead) = procs
            .list
            .iter_mut()
            .find_map(|p| p.exit_status().is_some().then_some(p))
        {
            return Err(describe_failure(dead, &format!("waiting for {what}")));
        }
        if Instant::now() >= deadline {
            let what = format!("timed out after {timeout:?} waiting for {what} (last: {last})");
            return Err(describe_failure(procs.get(component), &what));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn get_text(client: &Client, path: &str) -> Result<String, String> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    tokio::time::timeout(Duration::from_secs(5), client.request_text(request))
        .await
        .map_err(|_| format!("GET {path}: no answer within 5s"))?
        .map_err(|e| format!("GET {path}: {e}"))
}

/// Waits for what `launch_clients` started.
async fn wait_clients(
    procs: &mut Procs,
    components: Components,
    config: &Config,
    client: &Client,
    ports: &Ports,
    timeout: Duration,
) -> Result<(), String> {
    let component_client = |port: u16| {
        let mut c = config.clone();
        c.cluster_url = format!("https://127.0.0.1:{port}").parse().expect("a URL");
        Client::try_from(c).map_err(|e| format!("kube client: {e}"))
    };
    if components.controller_manager {
        let kcm = component_client(ports.controller_manager)?;
        let name = "kube-controller-manager";
        poll_ready(
            procs,
            name,
            "kube-controller-manager /healthz",
            timeout,
            || async { get_text(&kcm, "/healthz").await.map(drop) },
        )
        .await?;
    }
    if components.scheduler {
        let scheduler = component_client(ports.scheduler)?;
        poll_ready(
            procs,
            "kube-scheduler",
            "kube-scheduler /healthz",
            timeout,
            || async { get_text(&scheduler, "/healthz").await.map(drop) },
        )
        .await?;
    }
    if components.fake_kubelet {
        let log = procs.get("fake-kubelet").log.clone();
        poll_ready(
            procs,
            "fake-kubelet",
            "fake-kubelet to start",
            timeout,
            || {
                let log = log.clone();
                async move {
                    let text = fs::read_to_string(&log).unwrap_or_default();
                    if text.contains("fake-kubelet started") {
                        Ok(())
                    } else {
                        Err("no \"fake-kubelet started\" in its log yet".to_string())
                    }
                }
            },
        )
        .await?;
    }
    if components.controller_manager {
        // Pods are admitted once the service account controller made the namespace's account.
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
        let what = "ServiceAccount default/default (made by the service account controller)";
        poll_ready(procs, "kube-controller-manager", what, timeout, || async {
            match accounts.get_opt("default").await {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err("not found".to_string()),
                Err(e) => Err(e.to_string()),
            }
        })
        .await?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Waiting

/// Polls `condition` (every 200 ms) until it returns true or `timeout` passes; returns whether
/// it became true.
pub async fn wait_until<F, Fut>(timeout: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls `f` until it returns `Some(value)` and returns the value; panics after `timeout`
/// saying what was awaited.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = f().await {
            return value;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The HTTP status code of an API error (`None` for other errors).
pub fn api_error_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

async fn create_ignoring_conflict<K>(api: &Api<K>, object: &K)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => {}
        Err(e) if api_error_code(&e) == Some(409) => {}
        Err(e) => panic!("creating {object:?}: {e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Namespaces

fn service_account(name: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Creates a namespace named `unique(prefix)` and its `default` ServiceAccount (which the
/// service account controller would make a moment later: pods are refused until it exists).
/// Returns the name.
pub async fn create_namespace(client: &Client, prefix: &str) -> String {
    let name = unique(prefix);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
    create_ignoring_conflict(&accounts, &service_account("default")).await;
    name
}

// ---------------------------------------------------------------------------------------------
// Nodes

/// A Node to create with [`create_node`].
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// status.capacity and status.allocatable.
    pub cpu: String,
    pub memory: String,
    pub pods: String,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    /// Extended resources in status.capacity and status.allocatable, such as
    /// `nvidia.com/gpu: "2"`.
    pub extended: BTreeMap<String, String>,
}

impl NodeConfig {
    /// 4 cpu, 8Gi memory, 110 pods, label kubernetes.io/hostname=name.
    pub fn new(name: &str) -> Self {
        let mut labels = BTreeMap::new();
        labels.insert("kubernetes.io/hostname".to_string(), name.to_string());
        labels.insert("kubernetes.io/os".to_string(), "linux".to_string());
        NodeConfig {
            name: name.to_string(),
            labels,
            cpu: "4".to_string(),
            memory: "8Gi".to_string(),
            pods: "110".to_string(),
            taints: Vec::new(),
            unschedulable: false,
            extended: BTreeMap::new(),
        }
    }

    /// An extended resource (such as `nvidia.com/gpu`) the node has, in capacity and
    /// allocatable.
    pub fn resource(mut self, name: &str, quantity: &str) -> Self {
        self.extended.insert(name.to_string(), quantity.to_string());
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    pub fn cpu(mut self, cpu: &str) -> Self {
        self.cpu = cpu.to_string();
        self
    }

    pub fn memory(mut self, memory: &str) -> Self {
        self.memory = memory.to_string();
        self
    }

    pub fn pods(mut self, pods: u32) -> Self {
        self.pods = pods.to_string();
        self
    }

    /// A taint (effect: NoSchedule, PreferNoSchedule or NoExecute).
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.taints.push(Taint {
            key: key.to_string(),
            value: Some(value.to_string()),
            effect: effect.to_string(),
            ..Default::default()
        });
        self
    }

    pub fn unschedulable(mut self) -> Self {
        self.unschedulable = true;
        self
    }
}

fn node_status(config: &NodeConfig, ip: &str) -> NodeStatus {
    let resources: BTreeMap<String, Quantity> = [
        ("cpu", &config.cpu),
        ("memory", &config.memory),
        ("pods", &config.pods),
        ("ephemeral-storage", &"100Gi".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Quantity(v.clone())))
    .chain(
        config
            .extended
            .iter()
            .map(|(k, v)| (k.clone(), Quantity(v.clone()))),
    )
    .collect();
    let now = Time(Timestamp::now());
    let condition = |type_: &str, status: &str, reason: &str| NodeCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(format!("set by the test harness ({reason})")),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    };
    NodeStatus {
        capacity: Some(resources.clone()),
        allocatable: Some(resources),
        conditions: Some(vec![
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID"),
            condition("Ready", "True", "KubeletReady"),
        ]),
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".to_string(),
                address: ip.to_string(),
            },
            NodeAddress {
                type_: "Hostname".to_string(),
                address: config.name.clone(),
            },
        ]),
        ..Default::default()
    }
}

/// Whether a node's Ready condition is True.
pub fn node_is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The taint kube-controller-manager puts on a cordoned node.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Creates a Ready node with the given labels, allocatable resources and taints, and waits
/// until it is so: Ready, with exactly the requested allocatable and taints (the apiserver's
/// admission adds a `node.kubernetes.io/not-ready` taint to every new node; this removes it).
/// The status is set by the harness (a node may be created with its status), so this works with
/// or without the fake kubelet, which then keeps it Ready.
pub async fn create_node(client: &Client, config: NodeConfig) -> Node {
    static NEXT_IP: AtomicU32 = AtomicU32::new(0);
    let n = NEXT_IP.fetch_add(1, Ordering::Relaxed);
    let ip = format!("10.200.{}.{}", (n / 250) % 250, n % 250 + 2);
    let nodes: Api<Node> = Api::all(client.clone());
    let taints = (!config.taints.is_empty()).then(|| config.taints.clone());
    let node = Node {
        metadata: ObjectMeta {
            name: Some(config.name.clone()),
            labels: Some(config.labels.clone()),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: taints.clone(),
            unschedulable: config.unschedulable.then_some(true),
            ..Default::default()
        }),
        status: Some(node_status(&config, &ip)),
    };
    let created = nodes
        .create(&PostParams::default(), &node)
        .await
        .unwrap_or_else(|e| panic!("creating node {}: {e}", config.name));
    // The server's canonical form of the quantities.
    let want_allocatable = created.status.as_ref().and_then(|s| s.allocatable.clone());
    let name = config.name.clone();
    let patch_params = PatchParams::default();
    wait_for(
        &format!("node {name} Ready with its allocatable and taints"),
        TIMEOUT,
        || {
            let (nodes, name, config, ip) = (&nodes, &name, &config, &ip);
            let (want_allocatable, taints, patch_params) =
                (&want_allocatable, &taints, &patch_params);
            async move {
                let node = nodes.get(name).await.ok()?;
                let allocatable = node.status.as_ref().and_then(|s| s.allocatable.clone());
                let status_ok = node_is_ready(&node) && allocatable == *want_allocatable;
                // The node lifecycle controller taints a cordoned node (with the controller
                // manager running): that taint is the cordon's, not one to remove.
                let have_taints = node.spec.as_ref().and_then(|s| s.taints.clone()).map(|t| {
                    t.into_iter()
                        .filter(|t| !(config.unschedulable && t.key == UNSCHEDULABLE_TAINT))
                        .collect::<Vec<_>>()
                });
                let taints_ok = have_taints.as_ref().filter(|t| !t.is_empty()) == taints.as_ref();
                if status_ok && taints_ok {
                    return Some(node);
                }
                if !status_ok {
                    let status = serde_json::json!({ "status": node_status(config, ip) });
                    let _ = nodes
                        .patch_status(name, patch_params, &Patch::Merge(&status))
                        .await;
                }
                if !taints_ok {
                    let spec = serde_json::json!({ "spec": { "taints": taints } });
                    let _ = nodes.patch(name, patch_params, &Patch::Merge(&spec)).await;
                }
                None
            }
        },
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Pods

/// What the pods of [`create_pod`], [`create_replicaset`] and [`create_deployment`] look like.
#[derive(Clone, Debug, Default)]
pub struct PodConfig {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// Requests (and limits) of the single container, e.g. "100m" and "64Mi".
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    pub priority_class: Option<String>,
    pub termination_grace_period_seconds: Option<i64>,
    /// Topology spread constraints over the pod's own `app` label (see [`PodConfig::spread`]).
    pub spread: Vec<(i32, String, String)>,
    /// Extended resources requested (and limited to the same), such as `nvidia.com/gpu`.
    pub extended: BTreeMap<String, String>,
    /// The Kubernetes PodGroup the pod belongs to (`spec.schedulingGroup.podGroupName`).
    pub pod_group: Option<String>,
}

impl PodConfig {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.to_string(), value.to_string());
        self
    }

    pub fn cpu(mut self, cpu: &str) -> Self {
        self.cpu = Some(cpu.to_string());
        self
    }

    pub fn memory(mut self, memory: &str) -> Self {
        self.memory = Some(memory.to_string());
        self
    }

    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.node_selector
            .insert(key.to_string(), value.to_string());
        self
    }

    pub fn priority_class(mut self, name: &str) -> Self {
        self.priority_class = Some(name.to_string());
        self
    }

    /// Requests (and limits) an extended resource, such as `nvidia.com/gpu`.
    pub fn resource(mut self, name: &str, quantity: &str) -> Self {
        self.extended.insert(name.to_string(), quantity.to_string());
        self
    }

    /// A member of the Kubernetes PodGroup `name` (`scheduling.k8s.io`): kube-scheduler's
    /// GangScheduling places the group's pods together.
    pub fn pod_group(mut self, name: &str) -> Self {
        self.pod_group = Some(name.to_string());
        self
    }

    /// A topology spread constraint over the pods of the same workload (its `app` label):
    /// `max_skew` over `topology_key`, `when` ScheduleAnyway or DoNotSchedule.
    pub fn spread(mut self, max_skew: i32, topology_key: &str, when: &str) -> Self {
        self.spread
            .push((max_skew, topology_key.to_string(), when.to_string()));
        self
    }

    fn spec(&self, node_name: Option<&str>) -> PodSpec {
        let requests: BTreeMap<String, Quantity> = [("cpu", &self.cpu), ("memory", &self.memory)]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_string(), Quantity(v.clone()))))
            .chain(
                self.extended
                    .iter()
                    .map(|(k, v)| (k.clone(), Quantity(v.clone()))),
            )
            .collect();
        let resources = (!requests.is_empty()).then(|| ResourceRequirements {
            requests: Some(requests.clone()),
            limits: Some(requests),
            ..Default::default()
        });
        PodSpec {
            containers: vec![Container {
                name: "main".to_string(),
                image: Some(PAUSE_IMAGE.to_string()),
                resources,
                ..Default::default()
            }],
            node_name: node_name.map(str::to_string),
            node_selector: (!self.node_selector.is_empty()).then(|| self.node_selector.clone()),
            priority_class_name: self.priority_class.clone(),
            termination_grace_period_seconds: self.termination_grace_period_seconds,
            automount_service_account_token: Some(false),
            scheduling_group: self.pod_group.as_ref().map(|name| PodSchedulingGroup {
                pod_group_name: Some(name.clone()),
            }),
            topology_spread_constraints: (!self.spread.is_empty()).then(|| {
                let app = self.labels.get("app").cloned().unwrap_or_default();
                self.spread
                    .iter()
                    .map(|(max_skew, key, when)| TopologySpreadConstraint {
                        max_skew: *max_skew,
                        topology_key: key.clone(),
                        when_unsatisfiable: when.clone(),
                        label_selector: Some(LabelSelector {
                            match_labels: Some([("app".to_string(), app.clone())].into()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }
    }

    fn metadata(&self, name: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: name.map(str::to_string),
            labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
            annotations: (!self.annotations.is_empty()).then(|| self.annotations.clone()),
            ..Default::default()
        }
    }
}

/// Creates a bare pod (owned by nothing) bound to `node` (spec.nodeName set: no scheduler
/// involved), or left for the scheduler with `node` None. With the fake kubelet it becomes
/// Running by itself ([`wait_pod_running`]); without, see [`mark_pod_running`].
pub async fn create_pod(
    client: &Client,
    namespace: &str,
    name: &str,
    node: Option<&str>,
    config: &PodConfig,
) -> Pod {
    let pod = Pod {
        metadata: config.metadata(Some(name)),
        spec: Some(config.spec(node)),
        status: None,
    };
    Api::<Pod>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("creating pod {namespace}/{name}: {e}"))
}

/// Whether a pod is Running and not being deleted.
pub fn pod_is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// Waits until the pod is Running (the fake kubelet does that for a bound pod).
pub async fn wait_pod_running(client: &Client, namespace: &str, name: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    wait_for(&format!("pod {namespace}/{name} Running"), TIMEOUT, || {
        let pods = &pods;
        async move { pods.get(name).await.ok().filter(pod_is_running) }
    })
    .await
}

/// Sets a bound pod's status to Running through the status subresource, as a kubelet would:
/// for clusters without the fake kubelet.
pub async fn mark_pod_running(client: &Client, namespace: &str, name: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let now = Time(Timestamp::now());
    let conditions: Vec<_> = ["PodScheduled", "Initialized", "ContainersReady", "Ready"]
        .iter()
        .map(|t| {
            serde_json::json!({ "type": t, "status": "True", "lastTransitionTime": now.clone() })
        })
        .collect();
    let patch = serde_json::json!({
        "status": {
            "phase": "Running",
            "startTime": now,
            "conditions": conditions,
        }
    });
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap_or_else(|e| panic!("marking pod {namespace}/{name} Running: {e}"))
}

/// Pods matching a label selector that are Running and not being deleted.
pub async fn running_pods(client: &Client, namespace: &str, selector: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap_or_else(|e| panic!("listing pods {namespace}/{selector}: {e}"));
    list.items.into_iter().filter(pod_is_running).collect()
}

/// Waits until exactly `count` pods matching `selector` are Running, and no other pod matching
/// it exists (none Pending, none terminating). Returns the pods.
pub async fn wait_running_pods(
    client: &Client,
    namespace: &str,
    selector: &str,
    count: usize,
) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let what = format!("exactly {count} Running pods {selector} in {namespace}");
    wait_for(&what, TIMEOUT, || {
        let pods = &pods;
        async move {
            let list = pods
                .list(&ListParams::default().labels(selector))
                .await
                .ok()?;
            let all = list.items.len();
            let running: Vec<Pod> = list.items.into_iter().filter(pod_is_running).collect();
            (running.len() == count && all == count).then_some(running)
        }
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// Workloads

fn workload_parts(name: &str, pod: &PodConfig) -> (LabelSelector, PodTemplateSpec) {
    let mut selector = BTreeMap::new();
    selector.insert("app".to_string(), name.to_string());
    let mut pod = pod.clone();
    pod.labels.extend(selector.clone());
    let template = PodTemplateSpec {
        metadata: Some(pod.metadata(None)),
        spec: Some(pod.spec(None)),
    };
    (
        LabelSelector {
            match_labels: Some(selector),
            ..Default::default()
        },
        template,
    )
}

/// The label selector of the pods of [`create_replicaset`] / [`create_deployment`] `name`.
pub fn app_selector(name: &str) -> String {
    format!("app={name}")
}

/// Creates a ReplicaSet whose pods carry `app=<name>` besides the labels of `pod`.
pub async fn create_replicaset(
    client: &Client,
    namespace: &str,
    name: &str,
    replicas: i32,
    pod: &PodConfig,
) -> ReplicaSet {
    let (selector, template) = workload_parts(name, pod);
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            selector,
            template: Some(template),
            ..Default::default()
        },
        status: None,
    };
    Api::<ReplicaSet>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &rs)
        .await
        .unwrap_or_else(|e| panic!("creating replicaset {namespace}/{name}: {e}"))
}

/// Creates a Deployment whose pods carry `app=<name>` besides the labels of `pod`.
pub async fn create_deployment(
    client: &Client,
    namespace: &str,
    name: &str,
    replicas: i32,
    pod: &PodConfig,
) -> Deployment {
    let (selector, template) = workload_parts(name, pod);
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector,
            template,
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_string()),
                ..Default::default()
            }),
            ..Default::default()
        },
        status: None,
    };
    Api::<Deployment>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap_or_else(|e| panic!("creating deployment {namespace}/{name}: {e}"))
}

/// Creates a ReplicaSet and waits until its `replicas` pods are Running.
pub async fn run_replicaset(
    client: &Client,
    namespace: &str,
    name: &str,
    replicas: i32,
    pod: &PodConfig,
) -> Vec<Pod> {
    create_replicaset(client, namespace, name, replicas, pod).await;
    let count = usize::try_from(replicas).expect("replicas >= 0");
    wait_running_pods(client, namespace, &app_selector(name), count).await
}

/// Creates a Deployment and waits until its `replicas` pods are Running.
pub async fn run_deployment(
    client: &Client,
    namespace: &str,
    name: &str,
    replicas: i32,
    pod: &PodConfig,
) -> Vec<Pod> {
    create_deployment(client, namespace, name, replicas, pod).await;
    let count = usize::try_from(replicas).expect("replicas >= 0");
    wait_running_pods(client, namespace, &app_selector(name), count).await
}

// ---------------------------------------------------------------------------------------------
// PodDisruptionBudgets

/// The budget of a PodDisruptionBudget.
#[derive(Clone, Debug)]
pub enum Budget {
    MinAvailable(IntOrString),
    MaxUnavailable(IntOrString),
}

/// Creates a PodDisruptionBudget over the pods matching `match_labels`.
pub async fn create_pdb(
    client: &Client,
    namespace: &str,
    name: &str,
    match_labels: &[(&str, &str)],
    budget: Budget,
) -> PodDisruptionBudget {
    let labels: BTreeMap<String, String> = match_labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (min_available, max_unavailable) = match budget {
        Budget::MinAvailable(v) => (Some(v), None),
        Budget::MaxUnavailable(v) => (None, Some(v)),
    };
    let pdb = PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels),
                ..Default::default()
            }),
            min_available,
            max_unavailable,
            ..Default::default()
        }),
        status: None,
    };
    Api::<PodDisruptionBudget>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &pdb)
        .await
        .unwrap_or_else(|e| panic!("creating pdb {namespace}/{name}: {e}"))
}

/// Waits until the disruption controller has processed the PDB's current generation and its
/// status says `disruptions_allowed` (with `expected_pods` pods). Returns the PDB.
pub async fn wait_pdb(
    client: &Client,
    namespace: &str,
    name: &str,
    expected_pods: i32,
    disruptions_allowed: i32,
) -> PodDisruptionBudget {
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), namespace);
    let what = format!(
        "pdb {namespace}/{name} observed with {expected_pods} pods and \
         disruptionsAllowed={disruptions_allowed}"
    );
    wait_for(&what, TIMEOUT, || {
        let pdbs = &pdbs;
        async move {
            let pdb = pdbs.get(name).await.ok()?;
            let status = pdb.status.as_ref()?;
            let observed = status.observed_generation >= pdb.metadata.generation;
            (observed
                && status.expected_pods == Some(expected_pods)
                && status.disruptions_allowed == Some(disruptions_allowed))
            .then_some(pdb)
        }
    })
    .await
}

/// A short human summary of where pods run, for assertion messages.
pub fn describe_pods(pods: &[Pod]) -> String {
    let mut out = String::new();
    for pod in pods {
        let _ = write!(
            out,
            "{}@{}({}) ",
            pod.metadata.name.as_deref().unwrap_or("?"),
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .unwrap_or("-"),
            pod.status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("?"),
        );
    }
    out
}

/// GET over plain HTTP on loopback (the admin server's `--metrics-bind-address`): the status
/// and the body.
pub async fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).await.ok()?;
    let code = buf.split_whitespace().nth(1)?.parse().ok()?;
    let body = buf
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((code, body))
}

/// A loopback port free now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
