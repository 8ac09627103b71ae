//! Every upstream plugin enabled in one profile, as upstream's documentation writes a policy:
//! each with its pluginConfig, at its documented extension point. The policy loads, plans the
//! shipped example cluster, and every plugin that has something to do there does it. An
//! invalid arg of any plugin is refused with the path of its pluginConfig entry, the field
//! and what is allowed.

use descheduler::framework::Pipeline;
use descheduler::plan::plan;
use descheduler::policy::{Policy, PolicyError};
use descheduler::report::{Format, Report};
use descheduler::snapshot::decode;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// 2026-12-01T00:00:00Z
const NOW: i64 = 1_796_083_200;

/// One profile, every plugin. Deschedule: PodLifeTime, RemovePodsHavingTooManyRestarts,
/// RemoveFailedPods, RemovePodsViolatingNodeTaints, RemovePodsViolatingNodeAffinity,
/// RemovePodsViolatingInterPodAntiAffinity. Balance: RemoveDuplicates,
/// RemovePodsViolatingTopologySpreadConstraint, LowNodeUtilization, HighNodeUtilization.
const ALL_PLUGINS: &str = r#"
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: everything
    pluginConfig:
      - name: "DefaultEvictor"
        args:
          podProtections:
            extraEnabled:
              - "PodsWithPVC"
          minPodAge: "10m"
      - name: "PodLifeTime"
        args:
          states:
            - "Succeeded"
          conditions:
            - reason: "PodCompleted"
              status: "True"
              minTimeSinceLastTransitionSeconds: 14400
      - name: "RemovePodsHavingTooManyRestarts"
        args:
          podRestartThreshold: 100
          includingInitContainers: true
      - name: "RemoveFailedPods"
        args:
          reasons:
            - "OOMKilled"
          includingInitContainers: true
          minPodLifetimeSeconds: 3600
      - name: "RemovePodsViolatingNodeTaints"
        args:
          excludedTaints:
            - "node.kubernetes.io/unschedulable"
      - name: "RemovePodsViolatingNodeAffinity"
        args:
          nodeAffinityType:
            - "requiredDuringSchedulingIgnoredDuringExecution"
      - name: "RemovePodsViolatingInterPodAntiAffinity"
        args:
          namespaces:
            exclude:
              - "kube-system"
      - name: "RemoveDuplicates"
        args:
          excludeOwnerKinds:
            - "Job"
      - name: "RemovePodsViolatingTopologySpreadConstraint"
        args:
          constraints:
            - "DoNotSchedule"
      - name: "LowNodeUtilization"
        args:
          thresholds:
            cpu: 20
            memory: 20
            pods: 20
          targetThresholds:
            cpu: 50
            memory: 50
            pods: 50
      - name: "HighNodeUtilization"
        # bin-packing, at odds with LowNodeUtilization: low thresholds keep it out of the way
        args:
          thresholds:
            cpu: 5
            memory: 5
          evictableNamespaces:
            exclude:
              - "kube-system"
    plugins:
      deschedule:
        enabled:
          - "PodLifeTime"
          - "RemovePodsHavingTooManyRestarts"
          - "RemoveFailedPods"
          - "RemovePodsViolatingNodeTaints"
          - "RemovePodsViolatingNodeAffinity"
          - "RemovePodsViolatingInterPodAntiAffinity"
      balance:
        enabled:
          - "RemoveDuplicates"
          - "RemovePodsViolatingTopologySpreadConstraint"
          - "LowNodeUtilization"
          - "HighNodeUtilization"
"#;

/// Every plugin of the policy above, with the index of its pluginConfig entry.
const PLUGINS: [(&str, usize); 11] = [
    ("DefaultEvictor", 0),
    ("PodLifeTime", 1),
    ("RemovePodsHavingTooManyRestarts", 2),
    ("RemoveFailedPods", 3),
    ("RemovePodsViolatingNodeTaints", 4),
    ("RemovePodsViolatingNodeAffinity", 5),
    ("RemovePodsViolatingInterPodAntiAffinity", 6),
    ("RemoveDuplicates", 7),
    ("RemovePodsViolatingTopologySpreadConstraint", 8),
    ("LowNodeUtilization", 9),
    ("HighNodeUtilization", 10),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn build(text: &str) -> Result<Pipeline, PolicyError> {
    let policy = Policy::from_yaml("all-plugins.yaml", text, &descheduler::plugins::REGISTRY)?;
    Pipeline::build(&policy, "all-plugins.yaml", &descheduler::plugins::REGISTRY)
}

fn plan_example(text: &str) -> Report {
    let pipeline = build(text).unwrap_or_else(|e| panic!("{e}"));
    let snap = decode::load_file(&root().join("examples/cluster-hotspot.yaml")).unwrap();
    let plan = plan(&pipeline, &snap, NOW).unwrap();
    serde_json::from_str(&Report::new(&snap, &plan).render(Format::Json)).unwrap()
}

#[test]
fn the_documented_shape_with_every_plugin_loads() {
    let pipeline = build(ALL_PLUGINS).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(pipeline.profiles.len(), 1);
    let profile = &pipeline.profiles[0];
    let names = |v: &[Box<dyn descheduler::framework::Plugin>]| {
        v.iter().map(|p| p.name()).collect::<Vec<_>>()
    };
    assert_eq!(
        names(&profile.deschedule),
        [
            "PodLifeTime",
            "RemovePodsHavingTooManyRestarts",
            "RemoveFailedPods",
            "RemovePodsViolatingNodeTaints",
            "RemovePodsViolatingNodeAffinity",
            "RemovePodsViolatingInterPodAntiAffinity",
        ]
    );
    assert_eq!(
        names(&profile.balance),
        [
            "RemoveDuplicates",
            "RemovePodsViolatingTopologySpreadConstraint",
            "LowNodeUtilization",
            "HighNodeUtilization",
        ]
    );
}

#[test]
fn every_plugin_plans_the_example_cluster() {
    let report = plan_example(ALL_PLUGINS);
    let by_pod: BTreeMap<&str, &str> = report
        .evictions
        .iter()
        .map(|e| (e.pod.as_str(), e.plugin.as_str()))
        .collect();
    let listing = || {
        report
            .evictions
            .iter()
            .map(|e| format!("{} {} {}: {}", e.pod, e.node, e.plugin, e.reason))
            .collect::<Vec<_>>()
            .join("\n")
    };

    // no pod is planned twice
    assert_eq!(
        by_pod.len(),
        report.evictions.len(),
        "a pod appears twice:\n{}",
        listing()
    );

    // each plugin evicts the pods the example cluster has for it
    for (pod, plugin) in [
        // Succeeded, PodCompleted for about 22 hours
        ("batch/report-28829280-w2r9t", "PodLifeTime"),
        // CrashLoopBackOff, 214 restarts
        (
            "batch/queue-worker-7b9c6d5f4-2mxkq",
            "RemovePodsHavingTooManyRestarts",
        ),
        // Failed, OOMKilled (exit code 137), about 22 hours old
        ("batch/report-28829280-7vq4m", "RemoveFailedPods"),
        // on node-b3, which has a dedicated=batch:NoSchedule taint it does not tolerate
        (
            "shop/search-5f7d8c9b6-qk8vn",
            "RemovePodsViolatingNodeTaints",
        ),
        // requires disktype=ssd, which node-b3 lost and node-b2 has
        (
            "batch/dataset-cache-6c8d9f7b5-vz5rp",
            "RemovePodsViolatingNodeAffinity",
        ),
        // shop/api and shop/web have more copies on node-a1 than their fair share
        ("shop/api-7c9d8f6b4-b8d2f", "RemoveDuplicates"),
        ("shop/web-6b7f9c8d5-4k2lp", "RemoveDuplicates"),
        ("shop/web-6b7f9c8d5-8xq9z", "RemoveDuplicates"),
        // zone-a keeps 3 shop/web pods against zone-b's 1, maxSkew 1
        (
            "shop/web-6b7f9c8d5-h3j8k",
            "RemovePodsViolatingTopologySpreadConstraint",
        ),
    ] {
        assert_eq!(
            by_pod.get(pod).copied(),
            Some(plugin),
            "{pod} should be evicted by {plugin}; the plan:\n{}",
            listing()
        );
    }
    // node-a1 is still above its 50% cpu target after the duplicates leave: one more shop/web
    // pod (the lowest priority, then name order) brings it to 49.4%
    assert_eq!(
        by_pod.get("shop/web-6b7f9c8d5-c7m2d").copied(),
        Some("LowNodeUtilization"),
        "{}",
        listing()
    );
    // Nothing else: no pod's required anti-affinity is violated in the example cluster, and
    // HighNodeUtilization (bin-packing, the opposite of LowNodeUtilization, here only to
    // check that it runs alongside) finds below 5% only nodes left with DaemonSet pods.
    assert_eq!(report.evictions.len(), 10, "{}", listing());
    for idle in [
        "RemovePodsViolatingInterPodAntiAffinity",
        "HighNodeUtilization",
    ] {
        assert!(
            report.evictions.iter().all(|e| e.plugin != idle),
            "{idle} has nothing to do here:\n{}",
            listing()
        );
    }

    // what the evictor protects never appears: DaemonSet, system-critical, bare, local
    // storage and PVC pods
    for e in &report.evictions {
        for protected in [
            "kube-proxy",
            "coredns",
            "cart-debug",
            "train-resnet",
            "redis-0",
        ] {
            assert!(
                !e.pod.contains(protected),
                "{} must not be evicted:\n{}",
                e.pod,
                listing()
            );
        }
        assert_eq!(e.profile, "everything");
    }
    // the NotReady node is not planning input
    assert!(report.nodes.iter().all(|n| n.name != "node-c1"));
    assert!(report.evictions.iter().all(|e| e.node != "node-c1"));
}

/// Replaces the args of the pluginConfig entry at `index` of the policy above.
fn with_args(index: usize, args: serde_json::Value) -> String {
    let mut policy: serde_json::Value = serde_saphyr::from_str(ALL_PLUGINS).unwrap();
    policy["profiles"][0]["pluginConfig"][index]["args"] = args;
    // JSON is YAML
    serde_json::to_string(&policy).unwrap()
}

#[test]
fn an_invalid_arg_of_each_plugin_names_its_path_and_what_is_allowed() {
    use serde_json::json;
    // (plugin, its args with one invalid field, the field's path under args, what the
    // message must say is allowed)
    let cases: [(&str, serde_json::Value, &str, &[&str]); 11] = [
        (
            "DefaultEvictor",
            json!({"noEvictionPolicy": "Sometimes"}),
            "noEvictionPolicy",
            &["Preferred", "Mandatory"],
        ),
        (
            "PodLifeTime",
            json!({"maxPodLifeTimeSeconds": 86400, "states": ["Pending", "Stuck"]}),
            "states[1]",
            &[
                "Pending",
                "CrashLoopBackOff",
                "PodInitializing",
                "Succeeded",
            ],
        ),
        (
            "RemovePodsHavingTooManyRestarts",
            json!({"podRestartThreshold": 100, "states": ["Pending"]}),
            "states[0]",
            &["CrashLoopBackOff", "Running"],
        ),
        (
            // upstream spells it minPodLifetimeSeconds here, maxPodLifeTimeSeconds in
            // PodLifeTime: an easy typo
            "RemoveFailedPods",
            json!({"minPodLifeTimeSeconds": 3600}),
            "minPodLifeTimeSeconds",
            &["minPodLifetimeSeconds", "reasons", "excludeOwnerKinds"],
        ),
        (
            "RemovePodsViolatingNodeTaints",
            json!({"excludedTaints": ["node.kubernetes.io/unschedulable", "dedicated=batch:NoSchedule"]}),
            "excludedTaints[1]",
            &["not a valid taint value", "letters, digits"],
        ),
        (
            "RemovePodsViolatingNodeAffinity",
            json!({"nodeAffinityType": ["requiredDuringSchedulingRequiredDuringExecution"]}),
            "nodeAffinityType[0]",
            &[
                "requiredDuringSchedulingIgnoredDuringExecution",
                "preferredDuringSchedulingIgnoredDuringExecution",
            ],
        ),
        (
            "RemovePodsViolatingInterPodAntiAffinity",
            json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}]}}),
            "labelSelector",
            &[
                "matchExpressions[0]",
                "In",
                "NotIn",
                "Exists",
                "DoesNotExist",
            ],
        ),
        (
            "RemoveDuplicates",
            json!({"excludedOwnerKinds": ["Job"]}),
            "excludedOwnerKinds",
            &["excludeOwnerKinds", "namespaces"],
        ),
        (
            "RemovePodsViolatingTopologySpreadConstraint",
            json!({"constraints": ["DoNotSchedule", "Never"]}),
            "constraints[1]",
            &["DoNotSchedule", "ScheduleAnyway"],
        ),
        (
            "LowNodeUtilization",
            json!({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 150}}),
            "targetThresholds.cpu",
            &["[0, 100]"],
        ),
        (
            "HighNodeUtilization",
            json!({"thresholds": {"cpu": 20}, "evictionModes": ["OnlyThresholdingResources", "Greedy"]}),
            "evictionModes[1]",
            &["OnlyThresholdingResources"],
        ),
    ];
    assert_eq!(cases.len(), PLUGINS.len());
    for (plugin, args, field, allowed) in cases {
        let index = PLUGINS.iter().find(|(p, _)| *p == plugin).unwrap().1;
        let err = match build(&with_args(index, args)) {
            Ok(_) => panic!("{plugin}: the invalid arg {field} was accepted"),
            Err(e) => e,
        };
        let msg = err.to_string();
        let args_path = format!("profiles[0].pluginConfig[{index}].args");
        assert_eq!(err.path, format!("{args_path}.{field}"), "{plugin}: {msg}");
        assert!(
            msg.contains(&args_path) && msg.contains(field),
            "{plugin}: {msg}"
        );
        assert!(msg.contains("all-plugins.yaml"), "{plugin}: {msg}");
        for a in allowed {
            assert!(msg.contains(a), "{plugin}: {msg:?} should name {a:?}");
        }
    }
}

#[test]
fn the_lifecycle_policy_plans_a_pod_for_each_of_its_plugins() {
    let text = std::fs::read_to_string(root().join("policies/lifecycle.yaml")).unwrap();
    let report = plan_example(&text);
    let got: Vec<(&str, &str)> = report
        .evictions
        .iter()
        .map(|e| (e.pod.as_str(), e.plugin.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("batch/report-28829280-w2r9t", "PodLifeTime"),
            (
                "batch/queue-worker-7b9c6d5f4-2mxkq",
                "RemovePodsHavingTooManyRestarts"
            ),
            ("batch/report-28829280-7vq4m", "RemoveFailedPods"),
        ]
    );
}
