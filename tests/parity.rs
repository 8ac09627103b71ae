//! Differential parity suite: upstream kubernetes-sigs/descheduler v0.36.0 and this descheduler,
//! in dry-run, on the same objects in the same real cluster (etcd and kube-apiserver from
//! tests/support; nothing else runs, so nothing changes the objects while both plan), with the
//! same policy; the pods each plans to evict are compared, scenario by scenario.
//!
//! Each scenario has its own nodes (labelled `parity-group=<group>`, which its policy's
//! `nodeSelector` picks) and its own namespace, so scenarios share the cluster and run side by
//! side. Upstream runs in continuous mode and its **second** cycle is read: its one-shot dry
//! run (and its first cycle) may plan on a cache still being filled (upstream issue #1917). It
//! logs each planned eviction at `--v 1` ("Evicted pod in dry run mode") and each cycle's end
//! ("Number of evictions/requests"). Ours runs one-shot with `--dry-run -o json`.
//!
//! Where the two knowingly differ (the README's "Deliberate differences from upstream"), the
//! scenario states the exact difference and the test asserts it, so a change on either side
//! fails it.
//!
//! Upstream's binary comes from `scripts/build-upstream` (`.cache/upstream/bin/`), or from
//! `DESCHEDULER_UPSTREAM_BIN`.

mod support;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use support::process::run_bin;
use support::*;
use tokio::io::AsyncBufReadExt;

const GROUP_LABEL: &str = "parity-group";
const ZONE: &str = "topology.kubernetes.io/zone";

/// The ages PodLifeTime, RemoveFailedPods and `minPodAge` compare with: "old" pods are created
/// at least `OLD_AFTER` before the runs, "young" ones just before, and both runs end well within
/// `AGE_LIMIT` seconds of that.
const AGE_LIMIT: u64 = 25;
const OLD_AFTER: Duration = Duration::from_secs(AGE_LIMIT + 3);

/// Upstream's cycle period; its second cycle starts this long after the first.
const UPSTREAM_INTERVAL: &str = "3s";

/// Scenarios run this many at a time (each runs both binaries at once).
const PARALLEL: usize = 4;

// ---------------------------------------------------------------------------------------------
// Binaries

/// Upstream's binary: `$DESCHEDULER_UPSTREAM_BIN`, or `.cache/upstream/bin/descheduler-upstream`.
fn upstream_bin() -> PathBuf {
    let path = match std::env::var_os("DESCHEDULER_UPSTREAM_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/upstream/bin/descheduler-upstream"),
    };
    assert!(
        path.is_file(),
        "upstream descheduler v0.36.0 not found at {}: run `scripts/build-upstream` in {} \
         (it builds it from the Go module proxy), or point DESCHEDULER_UPSTREAM_BIN at it",
        path.display(),
        env!("CARGO_MANIFEST_DIR"),
    );
    path
}

/// The cluster of this test binary: etcd and kube-apiserver only. No controller adds, deletes
/// or garbage-collects pods (their owners need not exist), no scheduler binds them and no
/// kubelet changes their status: both binaries see exactly the objects the scenarios wrote.
fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| Cluster::start(Components::apiserver_only()))
}

// ---------------------------------------------------------------------------------------------
// Scenario objects

/// Deep-merges `patch` into `base` (objects merge key by key; anything else replaces).
fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p,
    }
}

#[derive(Clone)]
struct NodeDef {
    name: &'static str,
    zone: Option<&'static str>,
    labels: Vec<(&'static str, &'static str)>,
    taints: Vec<(&'static str, &'static str, &'static str)>,
    cpu: &'static str,
}

fn node(name: &'static str) -> NodeDef {
    NodeDef {
        name,
        zone: None,
        labels: Vec::new(),
        taints: Vec::new(),
        cpu: "4",
    }
}

impl NodeDef {
    fn zone(mut self, zone: &'static str) -> Self {
        self.zone = Some(zone);
        self
    }
    fn label(mut self, key: &'static str, value: &'static str) -> Self {
        self.labels.push((key, value));
        self
    }
    fn taint(mut self, key: &'static str, value: &'static str, effect: &'static str) -> Self {
        self.taints.push((key, value, effect));
        self
    }
}

/// When a pod is created, relative to the runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Age {
    /// At least [`OLD_AFTER`] before the runs (older than [`AGE_LIMIT`] seconds).
    Old,
    /// Just before the runs.
    Young,
}

#[derive(Clone)]
struct PodDef {
    name: &'static str,
    node: &'static str,
    object: Value,
    status: Value,
    age: Age,
}

/// A Running pod of one container (100m cpu, 64Mi) on `node`, owned by ReplicaSet `rs`.
fn pod(name: &'static str, node: &'static str) -> PodDef {
    let object = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {}},
        "spec": {
            "containers": [{
                "name": "main",
                "image": PAUSE_IMAGE,
                "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"cpu": "100m", "memory": "64Mi"},
                },
            }],
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 30,
        },
    });
    let mut p = PodDef {
        name,
        node,
        object,
        status: json!({}),
        age: Age::Old,
    };
    p = p.owner("ReplicaSet", "rs");
    p
}

impl PodDef {
    /// Owned (as controller) by `kind`/`owner`; replaces earlier owners.
    fn owner(mut self, kind: &str, owner: &str) -> Self {
        let api_version = match kind {
            "ReplicaSet" | "DaemonSet" | "StatefulSet" => "apps/v1",
            "Job" => "batch/v1",
            _ => "v1",
        };
        self.object["metadata"]["ownerReferences"] = json!([{
            "apiVersion": api_version,
            "kind": kind,
            "name": owner,
            "uid": format!("00000000-0000-4000-8000-{:012x}", fnv(&format!("{kind}/{owner}")) & 0xffff_ffff_ffff),
            "controller": true,
        }]);
        self
    }
    /// No owner (a bare pod).
    fn bare(mut self) -> Self {
        self.object["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("ownerReferences");
        self
    }
    fn label(mut self, key: &str, value: &str) -> Self {
        self.object["metadata"]["labels"][key] = json!(value);
        self
    }
    fn annotation(mut self, key: &str, value: &str) -> Self {
        merge(
            &mut self.object["metadata"],
            json!({"annotations": {key: value}}),
        );
        self
    }
    /// Requests and limits of cpu (memory stays 64Mi).
    fn cpu(mut self, cpu: &str) -> Self {
        let resources = &mut self.object["spec"]["containers"][0]["resources"];
        resources["requests"]["cpu"] = json!(cpu);
        resources["limits"]["cpu"] = json!(cpu);
        self
    }
    fn priority(mut self, class: &str) -> Self {
        self.object["spec"]["priorityClassName"] = json!(class);
        self
    }
    /// Merged into `spec`.
    fn spec(mut self, patch: Value) -> Self {
        merge(&mut self.object["spec"], patch);
        self
    }
    /// Merged into the status [`create`] writes (see [`running_status`]).
    fn status(mut self, patch: Value) -> Self {
        merge(&mut self.status, patch);
        self
    }
    fn young(mut self) -> Self {
        self.age = Age::Young;
        self
    }
    fn restarts(self, n: i32) -> Self {
        self.status(json!({"containerStatuses": [container_status(n, json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}))]}))
    }
    /// phase Failed, the container terminated with `reason` and `exit_code`.
    fn failed(self, reason: &str, exit_code: i32) -> Self {
        let terminated = json!({"terminated": {
            "reason": reason, "exitCode": exit_code,
            "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:01:00Z",
        }});
        let mut cs = container_status(0, terminated);
        cs["ready"] = json!(false);
        cs["started"] = json!(false);
        self.status(json!({
            "phase": "Failed",
            "conditions": conditions("False"),
            "containerStatuses": [cs],
        }))
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn conditions(ready: &str) -> Value {
    let t = "2026-01-01T00:00:00Z";
    json!([
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": t},
        {"type": "Initialized", "status": "True", "lastTransitionTime": t},
        {"type": "ContainersReady", "status": ready, "lastTransitionTime": t},
        {"type": "Ready", "status": ready, "lastTransitionTime": t},
    ])
}

fn container_status(restarts: i32, state: Value) -> Value {
    json!({
        "name": "main",
        "image": PAUSE_IMAGE,
        "imageID": "",
        "ready": true,
        "started": true,
        "restartCount": restarts,
        "state": state,
    })
}

/// What a kubelet writes for a Running pod.
fn running_status() -> Value {
    json!({
        "phase": "Running",
        "startTime": "2026-01-01T00:00:00Z",
        "hostIP": "10.200.0.1",
        "podIP": "10.244.0.10",
        "conditions": conditions("True"),
        "containerStatuses": [container_status(0, json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}))],
    })
}

/// A PodDisruptionBudget over `app=<app>`, with the status the disruption controller would
/// write (no controller runs here).
#[derive(Clone)]
struct PdbDef {
    app: &'static str,
    max_unavailable: i32,
    healthy: i32,
}

/// What the two binaries are expected to plan in a scenario.
#[derive(Clone)]
enum Expect {
    /// The same pods (by name), each by the same plugin.
    Same,
    /// A deliberate difference (see the README): these pods only upstream plans, these only ours.
    Differs {
        upstream_only: &'static [&'static str],
        ours_only: &'static [&'static str],
    },
    /// The policy is invalid: both refuse it before any cycle, saying these words.
    BothRefuse {
        upstream: &'static str,
        ours: &'static str,
    },
    /// Upstream picks which of several equal pods go by its informer's map order (a different
    /// choice from run to run): the same number of pods per node and plugin, upstream's chosen
    /// among `candidates`, ours exactly `ours` (the first in the eviction order).
    SameCountsUpstreamByMapOrder {
        candidates: &'static [&'static str],
        ours: &'static [&'static str],
    },
    /// A deliberate difference where upstream's choice is its informer's map order: ours
    /// plans exactly `ours`, upstream some of `candidates`, never fewer pods per node and
    /// plugin than ours (it takes the tied pods in any order; ours the fewest that do).
    FewerThanUpstreamByMapOrder {
        candidates: &'static [&'static str],
        ours: &'static [&'static str],
    },
}

#[derive(Clone)]
struct Scenario {
    name: &'static str,
    /// What it checks (for failure messages).
    what: &'static str,
    nodes: Vec<NodeDef>,
    pods: Vec<PodDef>,
    pdbs: Vec<PdbDef>,
    /// Pods with [`Age::Old`] are created this far apart, in the listed order (for orders by
    /// age; PodLifeTime sorts by creation time, which has one-second resolution).
    age_steps: bool,
    /// The policy after `nodeSelector`: top-level fields and `profiles`.
    policy: String,
    expect: Expect,
}

fn profile(plugin_config: &str, plugins: &str) -> String {
    format!(
        "profiles:\n- name: parity\n  pluginConfig:\n{}\n  plugins:\n{}\n",
        indent(plugin_config, 2),
        indent(plugins, 4)
    )
}

fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.trim_matches('\n')
        .lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One plugin with its args (YAML, indented under `args:`) and the DefaultEvictor's.
fn single(plugin: &str, point: &str, args: &str, evictor_args: &str) -> String {
    let mut config = format!("- name: {plugin}\n  args:\n{}\n", indent(args, 4));
    if !evictor_args.trim().is_empty() {
        config.push_str(&format!(
            "- name: DefaultEvictor\n  args:\n{}\n",
            indent(evictor_args, 4)
        ));
    }
    profile(&config, &format!("{point}:\n  enabled: [{plugin}]"))
}

fn lifetime_args() -> String {
    format!("maxPodLifeTimeSeconds: {AGE_LIMIT}")
}

// ---------------------------------------------------------------------------------------------
// The scenarios

fn scenarios() -> Vec<Scenario> {
    let base = |name, what, nodes, pods, policy| Scenario {
        name,
        what,
        nodes,
        pods,
        pdbs: Vec::new(),
        age_steps: false,
        policy,
        expect: Expect::Same,
    };
    let three = || vec![node("a"), node("b"), node("c")];
    vec![
        // LowNodeUtilization: a at 75% cpu, b and c at 2.5%; the lowest priorities leave a
        // until it is at 50%.
        base(
            "lnu",
            "LowNodeUtilization by requests",
            three(),
            vec![
                pod("h1", "a").cpu("500m").priority("parity-p1"),
                pod("h2", "a").cpu("500m").priority("parity-p2"),
                pod("h3", "a").cpu("500m").priority("parity-p3"),
                pod("h4", "a").cpu("500m").priority("parity-p4"),
                pod("h5", "a").cpu("500m").priority("parity-p5"),
                pod("h6", "a").cpu("500m").priority("parity-p6"),
                pod("b1", "b"),
                pod("c1", "c"),
            ],
            single(
                "LowNodeUtilization",
                "balance",
                "thresholds: {cpu: 20}\ntargetThresholds: {cpu: 50}",
                "",
            ),
        ),
        // LowNodeUtilization where no single cold node has room for the hot pod: b and c have
        // 1400m each below the 50% target, o1 needs 1500m. Upstream moves it on their summed
        // room (2800m), overfilling whichever node takes it; ours moves a pod only when it
        // fits below one underutilized node's target.
        Scenario {
            expect: Expect::Differs {
                upstream_only: &["o1"],
                ours_only: &[],
            },
            ..base(
                "lnu-room",
                "LowNodeUtilization, room summed over the cold nodes",
                three(),
                vec![
                    pod("o1", "a").cpu("1500m").priority("parity-p1"),
                    pod("o2", "a").cpu("1500m").priority("parity-p2"),
                    pod("b1", "b").cpu("600m"),
                    pod("c1", "c").cpu("600m"),
                ],
                single(
                    "LowNodeUtilization",
                    "balance",
                    "thresholds: {cpu: 20}\ntargetThresholds: {cpu: 50}",
                    "",
                ),
            )
        },
        // LowNodeUtilization with a choice upstream leaves free: a (87.5%) holds four 500m
        // pods and one of 1500m (x-big), all of equal priority and QoS; 1500m above the 50% target.
        // Upstream takes them in its informer's order (up to three evictions); ours the one
        // pod that alone brings a under its target.
        Scenario {
            expect: Expect::FewerThanUpstreamByMapOrder {
                candidates: &["s1", "s2", "s3", "s4", "x-big"],
                ours: &["x-big"],
            },
            ..base(
                "lnu-fewest-evictions",
                "LowNodeUtilization, the fewest evictions among pods upstream's order ties",
                ["a", "b", "c"]
                    .into_iter()
                    .map(|n| node(n).label("parity-fe", "lnu-fewest-evictions"))
                    .collect(),
                vec![
                    pod("s1", "a").cpu("500m"),
                    pod("s2", "a").cpu("500m"),
                    pod("x-big", "a").cpu("1500m"),
                    pod("s3", "a").cpu("500m"),
                    pod("s4", "a").cpu("500m"),
                ],
                single(
                    "LowNodeUtilization",
                    "balance",
                    "thresholds: {cpu: 20}\ntargetThresholds: {cpu: 50}",
                    "",
                ),
            )
        },
        // LowNodeUtilization where the replacements would not go where the room is: b is
        // underutilized by cpu (2.5%) but its memory is three-quarters requested, m sits
        // between the thresholds (40% cpu) with its memory free. Upstream moves h1 and h2 on
        // b's room; kube-scheduler (LeastAllocated and BalancedAllocation, simulated) would put
        // each replacement on m, pushing it over its 50% target (2100m > 2000m): ours refuses
        // them, by default (`placementCheck` unset; `placementCheck: false`, which upstream's
        // evictor does not read, evicts as upstream).
        Scenario {
            expect: Expect::Differs {
                upstream_only: &["h1", "h2"],
                ours_only: &[],
            },
            ..base(
                "lnu-over-target",
                "LowNodeUtilization, replacements predicted to push a node over its target",
                ["a", "b", "m"]
                    .into_iter()
                    .map(|n| node(n).label("parity-ot", "lnu-over-target"))
                    .collect(),
                lnu_over_target_pods(),
                single(
                    "LowNodeUtilization",
                    "balance",
                    "thresholds: {cpu: 20}\ntargetThresholds: {cpu: 50}",
                    "",
                ),
            )
        },
        // LowNodeUtilization with deviation thresholds: mean 30%, a at 70% is above mean+10,
        // b and c at 10% below mean-10; a gives its lowest priorities until at mean+10.
        base(
            "lnu-deviation",
            "LowNodeUtilization useDeviationThresholds",
            three(),
            vec![
                pod("h1", "a").cpu("400m").priority("parity-p1"),
                pod("h2", "a").cpu("400m").priority("parity-p2"),
                pod("h3", "a").cpu("400m").priority("parity-p3"),
                pod("h4", "a").cpu("400m").priority("parity-p4"),
                pod("h5", "a").cpu("400m").priority("parity-p5"),
                pod("h6", "a").cpu("400m").priority("parity-p6"),
                pod("h7", "a").cpu("400m").priority("parity-p7"),
                pod("b1", "b").cpu("400m"),
                pod("c1", "c").cpu("400m"),
            ],
            single(
                "LowNodeUtilization",
                "balance",
                "useDeviationThresholds: true\nthresholds: {cpu: 10}\ntargetThresholds: {cpu: 10}",
                "",
            ),
        ),
        // HighNodeUtilization: a at 10% gives its pod to the fuller nodes.
        base(
            "hnu",
            "HighNodeUtilization by requests",
            three(),
            vec![
                pod("u1", "a").cpu("400m"),
                pod("f1", "b").cpu("1000m"),
                pod("f2", "b").cpu("1000m"),
                pod("f3", "c").cpu("1000m"),
                pod("f4", "c").cpu("1000m"),
            ],
            single("HighNodeUtilization", "balance", "thresholds: {cpu: 20}", ""),
        ),
        // RemoveDuplicates: three of ReplicaSet web on a, at most one per node.
        Scenario {
            expect: Expect::SameCountsUpstreamByMapOrder {
                candidates: &["w1", "w2", "w3"],
                ours: &["w1", "w2"],
            },
            ..base(
                "dup",
                "RemoveDuplicates",
                three(),
                vec![
                    pod("w1", "a").owner("ReplicaSet", "web"),
                    pod("w2", "a").owner("ReplicaSet", "web"),
                    pod("w3", "a").owner("ReplicaSet", "web"),
                    pod("x1", "a").owner("ReplicaSet", "api"),
                    pod("x2", "b").owner("ReplicaSet", "api"),
                ],
                single("RemoveDuplicates", "balance", "{}", ""),
            )
        },
        // Topology spread: zone z1 holds 3, z2 none, maxSkew 1: one pod of z1 goes. Ours
        // takes the lowest priority (t1), as upstream's comments say; upstream's sort inverts
        // its own comparison and takes the highest (t3).
        Scenario {
            expect: Expect::Differs {
                upstream_only: &["t3"],
                ours_only: &["t1"],
            },
            ..base(
            "spread",
            "RemovePodsViolatingTopologySpreadConstraint",
            vec![
                node("a").zone("z1"),
                node("b").zone("z1"),
                node("c").zone("z2"),
            ],
            ["t1", "t2", "t3"]
                .into_iter()
                .zip(["a", "a", "b"])
                .zip(["parity-p1", "parity-p2", "parity-p3"])
                .map(|((name, n), class)| {
                    pod(name, n)
                        .label("app", "t")
                        .priority(class)
                        .spec(json!({"topologySpreadConstraints": [{
                            "maxSkew": 1,
                            "topologyKey": ZONE,
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": {"app": "t"}},
                        }]}))
                })
                .collect(),
            single(
                "RemovePodsViolatingTopologySpreadConstraint",
                "balance",
                "constraints: [DoNotSchedule]",
                "",
            ),
        )
        },
        // Node taints, default args: NoSchedule counts, PreferNoSchedule does not.
        base(
            "taints",
            "RemovePodsViolatingNodeTaints",
            vec![
                node("a").taint("dedicated", "x", "NoSchedule"),
                node("b").taint("soft", "y", "PreferNoSchedule"),
                node("c"),
            ],
            taint_pods(),
            single("RemovePodsViolatingNodeTaints", "deschedule", "{}", ""),
        ),
        // ... with PreferNoSchedule included and the NoSchedule taint excluded.
        base(
            "taints-opts",
            "RemovePodsViolatingNodeTaints includePreferNoSchedule, excludedTaints",
            vec![
                node("a").taint("dedicated", "x", "NoSchedule"),
                node("b").taint("soft", "y", "PreferNoSchedule"),
                node("c"),
            ],
            taint_pods(),
            single(
                "RemovePodsViolatingNodeTaints",
                "deschedule",
                "includePreferNoSchedule: true\nexcludedTaints: [dedicated]",
                "",
            ),
        ),
        // ... only the included taint counts.
        base(
            "taints-incl",
            "RemovePodsViolatingNodeTaints includedTaints",
            vec![
                node("a").taint("dedicated", "x", "NoSchedule"),
                node("b").taint("other", "y", "NoExecute"),
                node("c"),
            ],
            vec![pod("i1", "a"), pod("i2", "b"), pod("i3", "c")],
            single(
                "RemovePodsViolatingNodeTaints",
                "deschedule",
                "includedTaints: [dedicated=x]",
                "",
            ),
        ),
        // Required node affinity: f1 fits b (disk=ssd), f2 fits nowhere.
        base(
            "affinity",
            "RemovePodsViolatingNodeAffinity required",
            vec![node("a"), node("b").label("disk", "ssd"), node("c")],
            vec![
                pod("f1", "a").spec(required_affinity("disk", "ssd")),
                pod("f2", "a").spec(required_affinity("disk", "nvme")),
                pod("f3", "b").spec(required_affinity("disk", "ssd")),
                pod("f4", "a"),
            ],
            single(
                "RemovePodsViolatingNodeAffinity",
                "deschedule",
                "nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]",
                "",
            ),
        ),
        // Preferred node affinity: g1 prefers disk=ssd (node b), g2 is where it prefers.
        base(
            "affinity-pref",
            "RemovePodsViolatingNodeAffinity preferred",
            vec![node("a"), node("b").label("disk", "ssd"), node("c")],
            vec![
                pod("g1", "a").spec(preferred_affinity("disk", "ssd")),
                pod("g2", "b").spec(preferred_affinity("disk", "ssd")),
                pod("g3", "a"),
            ],
            single(
                "RemovePodsViolatingNodeAffinity",
                "deschedule",
                "nodeAffinityType: [preferredDuringSchedulingIgnoredDuringExecution]",
                "",
            ),
        ),
        // Inter-pod anti-affinity: x1 must not share a node with app=y, and does.
        base(
            "anti",
            "RemovePodsViolatingInterPodAntiAffinity",
            three(),
            vec![
                pod("x1", "a").label("app", "x").spec(json!({"affinity": {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{
                        "labelSelector": {"matchLabels": {"app": "y"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }],
                }}})),
                pod("y1", "a").label("app", "y"),
                pod("y2", "b").label("app", "y"),
                pod("z1", "b").label("app", "x"),
            ],
            single("RemovePodsViolatingInterPodAntiAffinity", "deschedule", "{}", ""),
        ),
        // Restarts: the threshold counts init containers too here.
        base(
            "restarts",
            "RemovePodsHavingTooManyRestarts",
            three(),
            vec![
                pod("r1", "a").restarts(10),
                pod("r2", "a").restarts(3),
                pod("r3", "b")
                    .spec(json!({"initContainers": [{"name": "init", "image": PAUSE_IMAGE}]}))
                    .status(json!({"initContainerStatuses": [{
                        "name": "init", "image": PAUSE_IMAGE, "imageID": "", "ready": true,
                        "restartCount": 4,
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                            "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z"}},
                    }]}))
                    .restarts(2),
                pod("r4", "b").restarts(5),
            ],
            single(
                "RemovePodsHavingTooManyRestarts",
                "deschedule",
                "podRestartThreshold: 5\nincludingInitContainers: true",
                "",
            ),
        ),
        // Restarts, only in CrashLoopBackOff.
        base(
            "restarts-states",
            "RemovePodsHavingTooManyRestarts states",
            three(),
            vec![
                pod("s1", "a").status(json!({"containerStatuses": [container_status(
                    10,
                    json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}),
                )]})),
                pod("s2", "a").restarts(10),
            ],
            single(
                "RemovePodsHavingTooManyRestarts",
                "deschedule",
                "podRestartThreshold: 5\nstates: [CrashLoopBackOff]",
                "",
            ),
        ),
        // PodLifeTime: old Running pods go; young ones and other phases stay.
        base(
            "lifetime",
            "PodLifeTime with states",
            three(),
            vec![
                pod("l1", "a"),
                pod("l2", "a").young(),
                pod("l3", "b").status(json!({
                    "phase": "Pending",
                    "conditions": conditions("False"),
                    "containerStatuses": [container_status(0, json!({"waiting": {"reason": "ContainerCreating"}}))],
                })),
                pod("l4", "c"),
            ],
            single(
                "PodLifeTime",
                "deschedule",
                &format!("{}\nstates: [Running]", lifetime_args()),
                "",
            ),
        ),
        // PodLifeTime by condition and exit code, not by age.
        base(
            "lifetime-cond",
            "PodLifeTime conditions, ownerKinds",
            three(),
            vec![
                pod("c1", "a").status(json!({"conditions": conditions("False")})),
                pod("c2", "a"),
                pod("c3", "b")
                    .status(json!({"conditions": conditions("False")}))
                    .owner("StatefulSet", "db"),
            ],
            single(
                "PodLifeTime",
                "deschedule",
                "conditions: [{type: Ready, status: \"False\"}]\nownerKinds: {exclude: [StatefulSet]}",
                "",
            ),
        ),
        // RemoveFailedPods by exit code (init containers included), no minimum age, and
        // failed bare pods allowed.
        base(
            "failed-codes",
            "RemoveFailedPods exitCodes, includingInitContainers, evictFailedBarePods",
            three(),
            vec![
                pod("y1", "a").failed("Error", 3),
                pod("y2", "a").failed("Error", 1),
                pod("y3", "b").failed("Error", 3).bare(),
                pod("y4", "b")
                    .spec(json!({"initContainers": [{"name": "init", "image": PAUSE_IMAGE}]}))
                    .failed("Error", 1)
                    .status(json!({"initContainerStatuses": [{
                        "name": "init", "image": PAUSE_IMAGE, "imageID": "", "ready": false,
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": 3, "reason": "Error",
                            "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z"}},
                    }]})),
            ],
            single(
                "RemoveFailedPods",
                "deschedule",
                "minPodLifetimeSeconds: 0\nexitCodes: [3]\nincludingInitContainers: true",
                "evictFailedBarePods: true",
            ),
        ),
        // RemoveFailedPods: old, OOMKilled, not owned by a Job.
        base(
            "failed",
            "RemoveFailedPods",
            three(),
            vec![
                pod("x1", "a").failed("OOMKilled", 137),
                pod("x2", "a").failed("Error", 1),
                pod("x3", "b").failed("OOMKilled", 137).young(),
                pod("x4", "b").failed("OOMKilled", 137).owner("Job", "batch"),
                pod("x5", "c"),
            ],
            single(
                "RemoveFailedPods",
                "deschedule",
                &format!(
                    "minPodLifetimeSeconds: {AGE_LIMIT}\nreasons: [OOMKilled]\nexcludeOwnerKinds: [Job]"
                ),
                "",
            ),
        ),
        // The DefaultEvictor's default protections, under PodLifeTime (every pod is old).
        base(
            "evictor",
            "DefaultEvictor defaults",
            three(),
            evictor_pods(),
            single("PodLifeTime", "deschedule", &lifetime_args(), ""),
        ),
        // ... with the deprecated switches off and a priority threshold.
        base(
            "evictor-opts",
            "DefaultEvictor evictLocalStoragePods, evictDaemonSetPods, ignorePvcPods, priorityThreshold",
            three(),
            evictor_pods(),
            single(
                "PodLifeTime",
                "deschedule",
                &lifetime_args(),
                "evictLocalStoragePods: true\nevictDaemonSetPods: true\nignorePvcPods: true\n\
                 priorityThreshold: {value: 500}",
            ),
        ),
        // ... with podProtections, a label selector and minPodAge.
        base(
            "evictor-prot",
            "DefaultEvictor podProtections, labelSelector, minPodAge",
            three(),
            {
                let mut pods = evictor_pods();
                pods.push(pod("e-young", "b").label("tier", "web").young());
                pods.push(pod("e-other", "b").label("tier", "db"));
                pods
            },
            single(
                "PodLifeTime",
                "deschedule",
                "states: [Running]",
                &format!(
                    "podProtections:\n  defaultDisabled: [PodsWithLocalStorage, DaemonSetPods]\n  \
                     extraEnabled: [PodsWithPVC]\nlabelSelector: {{matchExpressions: [{{key: tier, operator: NotIn, values: [db]}}]}}\n\
                     minPodAge: {AGE_LIMIT}s"
                ),
            ),
        ),
        // The evict annotation: upstream lets it override every protection, mirror pods
        // included; ours never evicts a mirror (static) pod.
        Scenario {
            expect: Expect::Differs {
                upstream_only: &["m-mirror"],
                ours_only: &[],
            },
            ..base(
                "annotation",
                "descheduler.alpha.kubernetes.io/evict",
                three(),
                vec![
                    pod("m-mirror", "a")
                        .annotation("kubernetes.io/config.mirror", "mirror")
                        .owner("Node", "a")
                        .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
                    pod("m-bare", "a")
                        .bare()
                        .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
                    pod("m-ds", "b")
                        .owner("DaemonSet", "agent")
                        .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
                    pod("m-critical", "b")
                        .priority("system-cluster-critical")
                        .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
                    pod("m-plain-ds", "b").owner("DaemonSet", "agent"),
                ],
                single("PodLifeTime", "deschedule", &lifetime_args(), ""),
            )
        },
        // The prefer-no-eviction annotation: only a preference by default ...
        base(
            "prefer",
            "prefer-no-eviction, noEvictionPolicy Preferred (default)",
            three(),
            prefer_pods(),
            single("PodLifeTime", "deschedule", "states: [Running]", ""),
        ),
        // ... a refusal with noEvictionPolicy: Mandatory.
        base(
            "prefer-mandatory",
            "prefer-no-eviction, noEvictionPolicy Mandatory",
            three(),
            prefer_pods(),
            single(
                "PodLifeTime",
                "deschedule",
                "states: [Running]",
                "noEvictionPolicy: Mandatory",
            ),
        ),
        // One eviction per namespace: the oldest.
        Scenario {
            age_steps: true,
            ..base(
                "ns-limit",
                "maxNoOfPodsToEvictPerNamespace",
                three(),
                vec![pod("j1", "b"), pod("j2", "a"), pod("j3", "c")],
                format!(
                    "maxNoOfPodsToEvictPerNamespace: 1\n{}",
                    single("PodLifeTime", "deschedule", &lifetime_args(), "")
                ),
            )
        },
        // nodeFit looks at every Ready node of the cluster, not only the policy's nodeSelector
        // (the other scenarios' nodes have room for k1) ...
        base(
            "nodefit",
            "DefaultEvictor nodeFit, whole cluster",
            nodefit_nodes("nodefit"),
            nodefit_pods(),
            single(
                "RemovePodsViolatingNodeTaints",
                "deschedule",
                "{}",
                "nodeFit: true",
            ),
        ),
        // ... or at those of the evictor's own nodeSelector: here only this scenario's, where
        // only k2 fits (on b).
        base(
            "nodefit-sel",
            "DefaultEvictor nodeFit with its nodeSelector",
            nodefit_nodes("nodefit-sel"),
            nodefit_pods(),
            single(
                "RemovePodsViolatingNodeTaints",
                "deschedule",
                "{}",
                "nodeFit: true\nnodeSelector: parity-fit=nodefit-sel",
            ),
        ),
        // An invalid policy (PodLifeTime without any criterion): both refuse it.
        Scenario {
            expect: Expect::BothRefuse {
                upstream: "at least one filtering criterion must be specified",
                ours: "PodLifeTime needs at least one filtering criterion",
            },
            ..base(
                "refused",
                "policy validation",
                three(),
                vec![pod("v1", "a")],
                single("PodLifeTime", "deschedule", "{}", ""),
            )
        },
        // Limits per node and in total: the oldest on each node goes.
        Scenario {
            age_steps: true,
            ..base(
                "limits",
                "maxNoOfPodsToEvictPerNode, maxNoOfPodsToEvictTotal",
                three(),
                vec![
                    pod("q1", "a"),
                    pod("q2", "a"),
                    pod("q3", "b"),
                    pod("q4", "b"),
                    pod("q5", "c"),
                ],
                format!(
                    "maxNoOfPodsToEvictPerNode: 1\nmaxNoOfPodsToEvictTotal: 2\n{}",
                    single("PodLifeTime", "deschedule", &lifetime_args(), "")
                ),
            )
        },
        // A disruption budget allowing one disruption over three old pods: upstream's dry run
        // ignores it (upstream issue #1805); ours spends it on the oldest.
        Scenario {
            age_steps: true,
            pdbs: vec![PdbDef {
                app: "d",
                max_unavailable: 1,
                healthy: 3,
            }],
            expect: Expect::Differs {
                upstream_only: &["d2", "d3"],
                ours_only: &[],
            },
            ..base(
                "pdb",
                "PodDisruptionBudget in dry run",
                three(),
                vec![
                    pod("d1", "a").label("app", "d"),
                    pod("d2", "a").label("app", "d"),
                    pod("d3", "b").label("app", "d"),
                ],
                single("PodLifeTime", "deschedule", &lifetime_args(), ""),
            )
        },
    ]
}

/// Nodes labelled `parity-fit=<fit>`: a and c tainted.
/// a at 75% cpu (six 500m pods, the lowest priorities first), b at 2.5% cpu and 75% memory,
/// m at 40% cpu. Every pod selects the scenario's nodes (label `parity-ot`), so that its
/// replacement can go to no other scenario's node of the shared cluster.
fn lnu_over_target_pods() -> Vec<PodDef> {
    let mut pods: Vec<PodDef> = ["h1", "h2", "h3", "h4", "h5", "h6"]
        .into_iter()
        .zip([
            "parity-p1",
            "parity-p2",
            "parity-p3",
            "parity-p4",
            "parity-p5",
            "parity-p6",
        ])
        .map(|(name, class)| pod(name, "a").cpu("500m").priority(class))
        .collect();
    pods.push(pod("b1", "b").spec(json!({"containers": [{
        "name": "main",
        "image": PAUSE_IMAGE,
        "resources": {
            "requests": {"cpu": "100m", "memory": "6Gi"},
            "limits": {"cpu": "100m", "memory": "6Gi"},
        },
    }]})));
    pods.push(pod("m1", "m").cpu("1600m"));
    pods.into_iter()
        .map(|p| p.spec(json!({"nodeSelector": {"parity-ot": "lnu-over-target"}})))
        .collect()
}

fn nodefit_nodes(fit: &'static str) -> Vec<NodeDef> {
    vec![
        node("a")
            .taint("dedicated", "x", "NoSchedule")
            .label("parity-fit", fit),
        node("b").label("parity-fit", fit),
        node("c")
            .taint("dedicated", "x", "NoSchedule")
            .label("parity-fit", fit),
    ]
}

/// On tainted a: k1 (2 cpu) fits no other node of the scenario (b has 500m left, c is
/// tainted), k2 (100m) fits b.
fn nodefit_pods() -> Vec<PodDef> {
    vec![
        pod("k1", "a").cpu("2000m"),
        pod("k2", "a").cpu("100m"),
        pod("fill", "b").cpu("3500m"),
    ]
}

fn prefer_pods() -> Vec<PodDef> {
    vec![
        pod("v1", "a").annotation("descheduler.alpha.kubernetes.io/prefer-no-eviction", "true"),
        pod("v2", "b"),
    ]
}

fn taint_pods() -> Vec<PodDef> {
    let tolerate = |key: &str| json!({"tolerations": [{"key": key, "operator": "Exists"}]});
    vec![
        pod("n1", "a"),
        pod("n2", "a").spec(tolerate("dedicated")),
        pod("n3", "b"),
        pod("n4", "b").spec(tolerate("soft")),
        pod("n5", "c"),
    ]
}

fn required_affinity(key: &str, value: &str) -> Value {
    json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}],
    }}}})
}

fn preferred_affinity(key: &str, value: &str) -> Value {
    json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 10,
        "preference": {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]},
    }]}}})
}

/// Pods each of which one DefaultEvictor protection or option is about; all on node a or b.
fn evictor_pods() -> Vec<PodDef> {
    let empty_dir = json!({"volumes": [{"name": "scratch", "emptyDir": {}}]});
    let pvc =
        json!({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]});
    vec![
        pod("e-rs", "a").label("tier", "web"),
        pod("e-bare", "a").label("tier", "web").bare(),
        pod("e-ds", "a")
            .label("tier", "web")
            .owner("DaemonSet", "agent"),
        pod("e-local", "a")
            .label("tier", "web")
            .spec(empty_dir.clone()),
        pod("e-local-evict", "a")
            .label("tier", "web")
            .spec(empty_dir)
            .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
        pod("e-pvc", "b").label("tier", "web").spec(pvc),
        pod("e-critical", "b")
            .label("tier", "web")
            .priority("system-cluster-critical"),
        pod("e-high", "b")
            .label("tier", "web")
            .priority("parity-p9"),
        pod("e-low", "b").label("tier", "web").priority("parity-p1"),
        pod("e-mirror", "b")
            .label("tier", "web")
            .annotation("kubernetes.io/config.mirror", "mirror")
            .owner("Node", "a"),
    ]
}

// ---------------------------------------------------------------------------------------------
// Setting a scenario up

struct Staged {
    scenario: Scenario,
    namespace: String,
    group: String,
    /// Short node name -> real node name.
    nodes: BTreeMap<&'static str, String>,
    /// When the last old pod was created.
    old_at: Instant,
}

async fn create_priority_classes(client: &kube::Client) {
    let api: Api<PriorityClass> = Api::all(client.clone());
    for i in 1..=9 {
        let pc: PriorityClass = serde_json::from_value(json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": format!("parity-p{i}")},
            "value": i * 100,
        }))
        .unwrap();
        match api.create(&PostParams::default(), &pc).await {
            Ok(_) => {}
            Err(e) if api_error_code(&e) == Some(409) => {}
            Err(e) => panic!("creating priority class parity-p{i}: {e}"),
        }
    }
}

async fn create_pod_def(client: &kube::Client, st: &Staged, def: &PodDef) {
    let mut object = def.object.clone();
    object["spec"]["nodeName"] = json!(st.nodes[def.node]);
    let pod: Pod = serde_json::from_value(object).unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &st.namespace);
    pods.create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("{}: creating pod {}: {e}", st.scenario.name, def.name));
    let mut status = running_status();
    // Started when created (minPodAge counts from the start).
    status["startTime"] = json!(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
    merge(&mut status, def.status.clone());
    pods.patch_status(
        def.name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "status": status })),
    )
    .await
    .unwrap_or_else(|e| panic!("{}: status of pod {}: {e}", st.scenario.name, def.name));
}

/// Nodes, the budgets and the old pods.
async fn stage(client: &kube::Client, scenario: Scenario) -> Staged {
    let namespace = create_namespace(client, &format!("p-{}", scenario.name)).await;
    let group = unique("pg");
    let mut nodes = BTreeMap::new();
    for n in &scenario.nodes {
        let name = format!("{group}-{}", n.name);
        let mut config = NodeConfig::new(&name).label(GROUP_LABEL, &group).cpu(n.cpu);
        if let Some(zone) = n.zone {
            config = config.label(ZONE, zone);
        }
        for (k, v) in &n.labels {
            config = config.label(k, v);
        }
        for (k, v, e) in &n.taints {
            config = config.taint(k, v, e);
        }
        create_node(client, config).await;
        nodes.insert(n.name, name);
    }
    let mut st = Staged {
        scenario,
        namespace,
        group,
        nodes,
        old_at: Instant::now(),
    };
    for p in &st.scenario.pdbs {
        let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &st.namespace);
        let pdb: PodDisruptionBudget = serde_json::from_value(json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": p.app},
            "spec": {"maxUnavailable": p.max_unavailable, "selector": {"matchLabels": {"app": p.app}}},
        }))
        .unwrap();
        let created = pdbs.create(&PostParams::default(), &pdb).await.unwrap();
        let status = json!({"status": {
            "observedGeneration": created.metadata.generation,
            "disruptionsAllowed": p.max_unavailable,
            "currentHealthy": p.healthy,
            "desiredHealthy": p.healthy - p.max_unavailable,
            "expectedPods": p.healthy,
        }});
        pdbs.patch_status(p.app, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .unwrap();
    }
    let old: Vec<PodDef> = st
        .scenario
        .pods
        .iter()
        .filter(|p| p.age == Age::Old)
        .cloned()
        .collect();
    for (i, p) in old.iter().enumerate() {
        if st.scenario.age_steps && i > 0 {
            tokio::time::sleep(Duration::from_millis(1100)).await;
        }
        create_pod_def(client, &st, p).await;
    }
    st.old_at = Instant::now();
    st
}

// ---------------------------------------------------------------------------------------------
// Running both

/// Planned evictions: pod name (in the scenario's namespace) -> plugin.
type Planned = BTreeMap<String, String>;

/// What a binary did with a scenario.
#[derive(Debug)]
enum Outcome {
    Planned(Planned),
    /// It refused the policy (exited before any cycle), with this log.
    Refused(String),
}

fn policy_text(st: &Staged) -> String {
    format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nnodeSelector: \"{GROUP_LABEL}={}\"\n{}",
        st.group, st.scenario.policy
    )
}

async fn run_ours(st: &Staged, policy: &Path) -> Result<Outcome, String> {
    let kubeconfig = cluster().kubeconfig().to_str().unwrap().to_string();
    let run = run_bin(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        &kubeconfig,
        "--dry-run",
        "-o",
        "json",
    ])
    .await;
    if run.code == Some(2) {
        return Ok(Outcome::Refused(run.stderr));
    }
    if run.code != Some(0) {
        return Err(format!(
            "ours exited {:?}\nstdout: {}\nstderr: {}",
            run.code, run.stdout, run.stderr
        ));
    }
    let report: Value = serde_json::from_str(&run.stdout)
        .map_err(|e| format!("ours printed no JSON report ({e}): {}", run.stdout))?;
    let mut planned = Planned::new();
    for e in report["evictions"].as_array().into_iter().flatten() {
        let pod = e["pod"].as_str().unwrap_or_default();
        let (ns, name) = pod.split_once('/').unwrap_or(("", pod));
        if ns != st.namespace {
            return Err(format!("ours planned a pod outside the scenario: {pod}"));
        }
        let plugin = e["plugin"].as_str().unwrap_or_default().to_string();
        if planned.insert(name.to_string(), plugin).is_some() {
            return Err(format!("ours planned {pod} twice"));
        }
    }
    Ok(Outcome::Planned(planned))
}

/// The value of `key="..."` (or `key=word`) in a klog structured line.
fn klog_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[start..];
    if let Some(quoted) = rest.strip_prefix('"') {
        quoted.split('"').next()
    } else {
        rest.split_whitespace().next()
    }
}

async fn run_upstream(st: &Staged, policy: &Path) -> Result<Outcome, String> {
    let mut child = tokio::process::Command::new(upstream_bin())
        .args(["--kubeconfig"])
        .arg(cluster().kubeconfig())
        .arg("--policy-config-file")
        .arg(policy)
        .args([
            "--dry-run",
            "--descheduling-interval",
            UPSTREAM_INTERVAL,
            "--secure-port",
            "0",
            "--v",
            "1",
        ])
        .env_remove("KUBECONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting upstream: {e}"))?;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let mut cycle = 0;
    let mut planned = Planned::new();
    let read = async {
        while let Ok(Some(line)) = lines.next_line().await {
            log.push_str(&line);
            log.push('\n');
            if line.contains("\"Number of evictions/requests\"") {
                cycle += 1;
                if cycle == 2 {
                    return Ok(());
                }
            } else if line.contains("\"Evicted pod in dry run mode\"") && cycle == 1 {
                let pod = klog_value(&line, "pod").unwrap_or_default();
                let (ns, name) = pod.split_once('/').unwrap_or(("", pod));
                if ns != st.namespace {
                    return Err(format!(
                        "upstream planned a pod outside the scenario: {line}"
                    ));
                }
                let plugin = klog_value(&line, "strategy").unwrap_or_default();
                if planned
                    .insert(name.to_string(), plugin.to_string())
                    .is_some()
                {
                    return Err(format!("upstream planned {pod} twice in a cycle"));
                }
            }
        }
        Err("upstream's log ended before its second cycle did".to_string())
    };
    let result = tokio::time::timeout(Duration::from_secs(90), read).await;
    if matches!(result, Ok(Err(_))) && cycle == 0 {
        // It exited before its first cycle: a refused policy (exit code 1, as upstream's
        // command fails).
        let status = child.wait().await.map_err(|e| e.to_string())?;
        return if status.code() == Some(1) {
            Ok(Outcome::Refused(log))
        } else {
            Err(format!(
                "upstream exited {status} before its first cycle:\n{log}"
            ))
        };
    }
    let _ = child.kill().await;
    match result {
        Ok(Ok(())) => Ok(Outcome::Planned(planned)),
        Ok(Err(e)) => Err(format!("{e}\nupstream's log:\n{log}")),
        Err(_) => Err(format!(
            "upstream did not finish two cycles in 90 s\nupstream's log:\n{log}"
        )),
    }
}

/// Young pods, then both binaries at once.
async fn run_scenario(client: kube::Client, st: Staged) -> Result<(Outcome, Outcome), String> {
    let young: Vec<PodDef> = st
        .scenario
        .pods
        .iter()
        .filter(|p| p.age == Age::Young)
        .cloned()
        .collect();
    let t0 = Instant::now();
    for p in &young {
        create_pod_def(&client, &st, p).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), &policy_text(&st));
    let (ours, upstream) = tokio::join!(run_ours(&st, &policy), run_upstream(&st, &policy));
    let elapsed = t0.elapsed();
    if !young.is_empty() && elapsed >= Duration::from_secs(AGE_LIMIT - 2) {
        return Err(format!(
            "the runs took {elapsed:?}: young pods may have aged past {AGE_LIMIT}s"
        ));
    }
    Ok((upstream?, ours?))
}

fn show(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Planned(planned) => {
            let v: Vec<String> = planned
                .iter()
                .map(|(pod, plugin)| format!("{pod} ({plugin})"))
                .collect();
            format!("[{}]", v.join(", "))
        }
        Outcome::Refused(log) => format!(
            "refused the policy: {}",
            log.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default()
        ),
    }
}

/// Planned pods per (node, plugin).
fn counts(
    p: &Planned,
    node_of: &dyn Fn(&str) -> &'static str,
) -> BTreeMap<(String, String), usize> {
    let mut c = BTreeMap::<(String, String), usize>::new();
    for (pod, plugin) in p {
        *c.entry((node_of(pod).to_string(), plugin.clone()))
            .or_default() += 1;
    }
    c
}

/// Checks a scenario's two plans against its expectation; an error says how they differ.
fn check(sc: &Scenario, upstream_outcome: &Outcome, ours_outcome: &Outcome) -> Result<(), String> {
    let fail = |why: String| {
        Err(format!(
            "{} ({}): {why}\n  upstream: {}\n  ours:     {}",
            sc.name,
            sc.what,
            show(upstream_outcome),
            show(ours_outcome)
        ))
    };
    let (upstream, ours) = match (upstream_outcome, ours_outcome, &sc.expect) {
        (Outcome::Refused(u), Outcome::Refused(o), Expect::BothRefuse { upstream, ours }) => {
            if !u.contains(upstream) || !o.contains(ours) {
                return fail(format!(
                    "both refuse, but not saying {upstream:?} and {ours:?}"
                ));
            }
            return Ok(());
        }
        (_, _, Expect::BothRefuse { .. }) => return fail("both should refuse the policy".into()),
        (Outcome::Planned(u), Outcome::Planned(o), _) => (u, o),
        _ => return fail("one refused the policy, the other planned".into()),
    };
    let names = |p: &Planned| p.keys().cloned().collect::<BTreeSet<String>>();
    let (u, o) = (names(upstream), names(ours));
    let node_of = |pod: &str| {
        sc.pods
            .iter()
            .find(|p| p.name == pod)
            .map(|p| p.node)
            .unwrap_or("?")
    };
    match &sc.expect {
        Expect::BothRefuse { .. } => unreachable!("handled above"),
        Expect::Same => {
            if upstream != ours {
                return fail("the plans differ".to_string());
            }
        }
        Expect::Differs {
            upstream_only,
            ours_only,
        } => {
            let want_u: BTreeSet<String> = upstream_only.iter().map(|s| s.to_string()).collect();
            let want_o: BTreeSet<String> = ours_only.iter().map(|s| s.to_string()).collect();
            let got_u: BTreeSet<String> = u.difference(&o).cloned().collect();
            let got_o: BTreeSet<String> = o.difference(&u).cloned().collect();
            if got_u != want_u || got_o != want_o {
                return fail(format!(
                    "expected exactly this difference: only upstream {want_u:?}, only ours {want_o:?}"
                ));
            }
            if u.intersection(&o).any(|p| upstream[p] != ours[p]) {
                return fail("a pod both plan is planned by different plugins".to_string());
            }
        }
        Expect::SameCountsUpstreamByMapOrder {
            candidates,
            ours: want,
        } => {
            let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
            if o != want {
                return fail(format!("ours should plan exactly {want:?}"));
            }
            if !u.iter().all(|p| candidates.contains(&p.as_str())) {
                return fail(format!("upstream planned a pod outside {candidates:?}"));
            }
            if counts(upstream, &node_of) != counts(ours, &node_of) {
                return fail("different numbers of pods per node and plugin".to_string());
            }
        }
        Expect::FewerThanUpstreamByMapOrder {
            candidates,
            ours: want,
        } => {
            let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
            if o != want {
                return fail(format!("ours should plan exactly {want:?}"));
            }
            if !u.iter().all(|p| candidates.contains(&p.as_str())) {
                return fail(format!("upstream planned a pod outside {candidates:?}"));
            }
            let (cu, co) = (counts(upstream, &node_of), counts(ours, &node_of));
            if co.iter().any(|(k, n)| cu.get(k).copied().unwrap_or(0) < *n) {
                return fail("ours planned more pods than upstream on some node".to_string());
            }
            eprintln!("parity: {} upstream planned {u:?}, ours {o:?}", sc.name);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The test

#[test]
fn evictions_match_upstream_v0_36_0() {
    let upstream = upstream_bin();
    let started = Instant::now();
    let cluster = cluster();
    eprintln!(
        "parity: control plane ready in {:.1?}; upstream {}",
        cluster.startup_time(),
        upstream.display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let results = rt.block_on(async {
        let client = cluster.client();
        create_priority_classes(&client).await;
        let all = scenarios();
        // Stage every scenario (nodes, budgets, old pods), side by side.
        let mut staging = tokio::task::JoinSet::new();
        for sc in all {
            let client = client.clone();
            staging.spawn(async move { stage(&client, sc).await });
        }
        let mut staged: Vec<Staged> = staging.join_all().await;
        staged.sort_by_key(|s| s.scenario.name);
        eprintln!(
            "parity: {} scenarios staged in {:.1?}",
            staged.len(),
            started.elapsed()
        );
        // Old pods must be older than AGE_LIMIT when the runs start.
        let last_old = staged.iter().map(|s| s.old_at).max().unwrap();
        tokio::time::sleep_until((last_old + OLD_AFTER).into()).await;

        let gate = Arc::new(tokio::sync::Semaphore::new(PARALLEL));
        let mut runs = tokio::task::JoinSet::new();
        for st in staged {
            let (client, gate) = (client.clone(), gate.clone());
            runs.spawn(async move {
                let _permit = gate.acquire().await.unwrap();
                let t0 = Instant::now();
                let sc = st.scenario.clone();
                let result = run_scenario(client, st).await;
                eprintln!("parity: {} ran in {:.1?}", sc.name, t0.elapsed());
                (sc, result)
            });
        }
        runs.join_all().await
    });

    let mut failures = Vec::new();
    let mut results = results;
    results.sort_by_key(|(sc, _)| sc.name);
    for (sc, result) in &results {
        match result {
            Ok((upstream, ours)) => {
                eprintln!(
                    "parity: {:<16} upstream {}  ours {}",
                    sc.name,
                    show(upstream),
                    show(ours)
                );
                if let Err(e) = check(sc, upstream, ours) {
                    failures.push(e);
                }
            }
            Err(e) => failures.push(format!("{} ({}): {e}", sc.name, sc.what)),
        }
    }
    eprintln!(
        "parity: {} scenarios in {:.1?}",
        results.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {} scenarios differ from upstream v0.36.0 other than expected:\n\n{}",
        failures.len(),
        results.len(),
        failures.join("\n\n")
    );
}
