use super::*;

fn load(text: &str) -> Result<SchedulerConfig, SchedulerConfigError> {
    SchedulerConfig::from_yaml("sched.yaml", text)
}

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

#[test]
fn no_profiles_is_the_default_profile() {
    let c = load(HEAD).unwrap();
    assert_eq!(c.profiles.len(), 1);
    assert_eq!(c.profiles[0].0, "default-scheduler");
    assert_eq!(*c.profiles[0].1, ScoreProfile::default());
}

#[test]
fn weights_strategies_and_profiles_by_scheduler_name() {
    let text = format!(
        "{HEAD}profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{{name: ImageLocality}}, {{name: NodeResourcesBalancedAllocation}}]
      enabled: [{{name: NodeResourcesFit, weight: 5}}, {{name: TaintToleration}}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{{name: cpu, weight: 3}}, {{name: nvidia.com/gpu, weight: 7}}]
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {{maxSkew: 2, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}}
  - name: InterPodAffinity
    args: {{hardPodAffinityWeight: 7}}
- schedulerName: packer
  plugins:
    multiPoint:
      disabled: [{{name: '*'}}]
      enabled: [{{name: NodeResourcesFit, weight: 2}}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape: [{{utilization: 0, score: 0}}, {{utilization: 100, score: 10}}]
"
    );
    let c = load(&text).unwrap();
    let d = c.profile("f", "default-scheduler").unwrap();
    assert_eq!(d.fit_weight, 5);
    assert_eq!(d.image_locality_weight, 0);
    assert_eq!(d.balanced_weight, 0);
    assert_eq!(d.taint_toleration_weight, 1, "enabled without a weight: 1");
    assert_eq!(d.node_affinity_weight, 2, "left as the default");
    assert_eq!(d.fit_strategy, ScoringStrategy::MostAllocated);
    assert_eq!(
        d.fit_resources,
        vec![
            ResourceSpec::new("cpu", 3),
            ResourceSpec::new("nvidia.com/gpu", 7)
        ]
    );
    assert_eq!(d.hard_pod_affinity_weight, 7);
    match &d.default_constraints {
        DefaultConstraints::List(l) => {
            assert_eq!(l.len(), 1);
            assert_eq!(&*l[0].topology_key, "topology.kubernetes.io/zone");
            assert_eq!(l[0].max_skew, 2);
        }
        other => panic!("{other:?}"),
    }
    let packer = c.profile("f", "packer").unwrap();
    for plugin in SCORE_PLUGINS {
        let want = if plugin == "NodeResourcesFit" { 2 } else { 0 };
        assert_eq!(packer.weight(plugin), want, "{plugin}");
    }
    assert_eq!(
        packer.fit_strategy,
        ScoringStrategy::RequestedToCapacityRatio(vec![(0, 0), (100, 10)])
    );
    let e = c.profile("sched.yaml", "other").unwrap_err();
    assert_eq!(
            e.to_string(),
            "scheduler config sched.yaml: profiles: no profile has schedulerName \"other\" (there are: default-scheduler, packer); add one, or pass the name of one with --scheduler-name"
        );
}

#[test]
fn bad_input_names_the_file_the_field_and_the_fix() {
    let cases: &[(&str, &str)] = &[
            ("", "scheduler config sched.yaml: (document): the file is empty; expected a KubeSchedulerConfiguration (apiVersion: kubescheduler.config.k8s.io/v1)"),
            ("apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
             "scheduler config sched.yaml: apiVersion: \"kubescheduler.config.k8s.io/v1beta3\" is no longer served by kube-scheduler; convert the file to \"kubescheduler.config.k8s.io/v1\""),
            ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Policy\n",
             "scheduler config sched.yaml: kind: \"Policy\" is not allowed; set it to \"KubeSchedulerConfiguration\""),
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Fancy}}\n",
             "scheduler config sched.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.type: \"Fancy\" is not a scoring strategy; use LeastAllocated, MostAllocated or RequestedToCapacityRatio"),
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 101}]}}\n",
             "scheduler config sched.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: 101 is not allowed; use a whole number from 0 to 100"),
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 50, score: 1}, {utilization: 20, score: 5}]}}}\n",
             "scheduler config sched.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: utilization values must be increasing; sort the points by utilization and give each value once"),
            ("profiles:\n- plugins:\n    score:\n      enabled: [{name: MyScorer, weight: 3}]\n",
             "scheduler config sched.yaml: profiles[0].plugins.score.enabled[0].name: \"MyScorer\" is not a kube-scheduler plugin the simulator knows; its score cannot be predicted. The score plugins are TaintToleration, NodeAffinity, NodeResourcesFit, PodTopologySpread, InterPodAffinity, NodeResourcesBalancedAllocation, ImageLocality; remove it from this file to predict without it"),
            ("profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}\n",
             "scheduler config sched.yaml: profiles[0].pluginConfig[0].args.defaultConstraints: must be empty with defaultingType System; set defaultingType: List to use your own"),
            ("profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Maybe}]}\n",
             "scheduler config sched.yaml: profiles[0].pluginConfig[0].args.defaultConstraints[0].whenUnsatisfiable: \"Maybe\" is not allowed; use ScheduleAnyway or DoNotSchedule"),
            ("profiles:\n- schedulerName: a\n- schedulerName: a\n",
             "scheduler config sched.yaml: profiles[1].schedulerName: \"a\" names two profiles; give each profile its own schedulerName"),
        ];
    for (body, want) in cases {
        let text = if body.is_empty() || body.starts_with("apiVersion") {
            body.to_string()
        } else {
            format!("{HEAD}{body}")
        };
        assert_eq!(load(&text).unwrap_err().to_string(), *want, "{body}");
    }
}

fn error(body: &str) -> SchedulerConfigError {
    load(&format!("{HEAD}{body}")).unwrap_err()
}

/// A message names the field's path and what to do, in plain words: no library terms.
fn assert_plain(e: &SchedulerConfigError) {
    let m = e.to_string();
    assert!(m.starts_with("scheduler config sched.yaml: "), "{m}");
    for term in [
        "from_str",
        "Option<",
        "budget",
        "Depth {",
        "DuplicateKeyPolicy",
        "serde",
    ] {
        assert!(!m.contains(term), "{term} in {m}");
    }
}

#[test]
fn a_misspelled_key_is_an_error_with_its_path_and_the_name_meant() {
    let cases: &[(&str, &str, &str)] = &[
            // top level
            ("percentageOfNodeToScore: 50\n", "percentageOfNodeToScore", "percentageOfNodesToScore"),
            // in a profile
            ("profiles:\n- schedulerName: a\n  plugin: {}\n", "profiles[0].plugin", "plugins"),
            // in plugins, and in a plugin entry
            ("profiles:\n- plugins:\n    scores: {}\n", "profiles[0].plugins.scores", "score"),
            ("profiles:\n- plugins:\n    score:\n      enabled: [{name: NodeResourcesFit, wieght: 5}]\n",
             "profiles[0].plugins.score.enabled[0].wieght", "weight"),
            // in pluginConfig args
            ("profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWieght: 5}\n",
             "profiles[0].pluginConfig[0].args.hardPodAffinityWieght", "hardPodAffinityWeight"),
            // MostAllocated under a misspelled key: not silently lost
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategey: {type: MostAllocated}}\n",
             "profiles[0].pluginConfig[0].args.scoringStrategey", "scoringStrategy"),
            // in scoringStrategy
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {typ: MostAllocated}}\n",
             "profiles[0].pluginConfig[0].args.scoringStrategy.typ", "type"),
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, wight: 2}]}}\n",
             "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].wight", "weight"),
            ("profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomain: 2}]}\n",
             "profiles[0].pluginConfig[0].args.defaultConstraints[0].minDomain", "minDomains"),
            ("leaderElection: {leaderElect: true, leaseDurration: 15s}\n", "leaderElection.leaseDurration", "leaseDuration"),
            ("extenders:\n- urlPrefix: http://x\n  bindVerbs: bind\n", "extenders[0].bindVerbs", "bindVerb"),
        ];
    for (body, path, meant) in cases {
        let e = error(body);
        assert_eq!(e.path, *path, "{body}");
        assert!(
            e.message.contains(&format!("did you mean {meant:?}?")),
            "{body}: {e}"
        );
        assert!(e.message.contains("kube-scheduler refuses"), "{e}");
        assert_plain(&e);
    }
    // A name close to none: no guess, the list of fields.
    let e = error("zzzzzzzz: 1\n");
    assert_eq!(e.path, "zzzzzzzz");
    assert!(!e.message.contains("did you mean"), "{e}");
    assert!(
        e.message
            .contains("The fields are apiVersion, kind, parallelism"),
        "{e}"
    );
}

#[test]
fn values_out_of_kube_schedulers_ranges_are_errors() {
    let cases: &[(&str, &str)] = &[
            ("percentageOfNodesToScore: 101\n", "percentageOfNodesToScore"),
            ("percentageOfNodesToScore: -1\n", "percentageOfNodesToScore"),
            ("profiles:\n- percentageOfNodesToScore: 150\n", "profiles[0].percentageOfNodesToScore"),
            ("parallelism: 0\n", "parallelism"),
            ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds"),
            ("podInitialBackoffSeconds: 20\n", "podMaxBackoffSeconds"),
            ("enableProfiling: sometimes\n", "enableProfiling"),
            ("leaderElection: {leaseDuration: soon}\n", "leaderElection.leaseDuration"),
            ("profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: 101}\n",
             "profiles[0].pluginConfig[0].args.hardPodAffinityWeight"),
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args: {resources: [{name: cpu, weight: -1}]}\n",
             "profiles[0].pluginConfig[0].args.resources[0].weight"),
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 0, score: 11}]}}}\n",
             "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[0].score"),
            ("profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}\n",
             "profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute"),
            ("profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args: {minCandidateNodesPercentage: 120}\n",
             "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage"),
            ("profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}]}\n",
             "profiles[0].pluginConfig[0].args.defaultConstraints[0].minDomains"),
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {kind: InterPodAffinityArgs}\n",
             "profiles[0].pluginConfig[0].args.kind"),
            ("profiles:\n- schedulerName: a\n- plugins: {}\n", "profiles[1].schedulerName"),
        ];
    for (body, path) in cases {
        let e = error(body);
        assert_eq!(e.path, *path, "{body}: {e}");
        assert_plain(&e);
    }
    let e = error("percentageOfNodesToScore: 101\n");
    assert_eq!(
            e.to_string(),
            "scheduler config sched.yaml: percentageOfNodesToScore: 101 is not allowed; use a whole number from 0 to 100"
        );
}

#[test]
fn resources_are_defaulted_as_kube_scheduler_defaults_them() {
    let c = load(&format!(
        "{HEAD}profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {{scoringStrategy: {{type: MostAllocated, resources: []}}}}
  - name: NodeResourcesBalancedAllocation
    args: {{resources: [{{name: cpu, weight: 0}}, {{name: nvidia.com/gpu}}]}}
"
    ))
    .unwrap();
    let p = c.profile("f", "default-scheduler").unwrap();
    assert_eq!(p.fit_strategy, ScoringStrategy::MostAllocated);
    // empty: cpu:1, memory:1, as kube-scheduler's SetDefaults_NodeResourcesFitArgs
    assert_eq!(p.fit_resources, default_resources());
    // weight 0 (or none): 1
    assert_eq!(
        p.balanced_resources,
        vec![
            ResourceSpec::new("cpu", 1),
            ResourceSpec::new("nvidia.com/gpu", 1)
        ]
    );
    let c = load(&format!(
        "{HEAD}profiles:
- pluginConfig:
  - name: NodeResourcesBalancedAllocation
    args: {{resources: []}}
  - name: NodeResourcesFit
    args: {{scoringStrategy: {{resources: [{{name: memory, weight: 0}}]}}}}
"
    ))
    .unwrap();
    let p = c.profile("f", "default-scheduler").unwrap();
    assert_eq!(p.balanced_resources, default_resources());
    assert_eq!(p.fit_resources, vec![ResourceSpec::new("memory", 1)]);
}

#[test]
fn extenders_that_filter_or_score_are_refused_by_their_url() {
    let e = error(
            "extenders:\n- urlPrefix: http://gpu-extender:8888/\n  prioritizeVerb: prioritize\n  weight: 5\n",
        );
    assert_eq!(e.path, "extenders[0].prioritizeVerb");
    assert!(
        e.message
            .contains("\"http://gpu-extender:8888/\" scores nodes"),
        "{e}"
    );
    assert!(e.message.contains("without the extender"), "{e}");
    assert_plain(&e);
    let e =
        error("extenders:\n- {urlPrefix: http://a}\n- {urlPrefix: http://b, filterVerb: filter}\n");
    assert_eq!(e.path, "extenders[1].filterVerb");
    assert!(e.message.contains("\"http://b\" filters nodes"), "{e}");
    // one that only binds changes no node choice
    load(&format!(
        "{HEAD}extenders:\n- {{urlPrefix: http://a, bindVerb: bind}}\n"
    ))
    .unwrap();
    let e = error("profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}\n");
    assert_eq!(e.path, "profiles[0].pluginConfig[0].args.addedAffinity");
}

#[test]
fn disabled_filter_plugins_are_named_in_a_warning() {
    let c = load(&format!(
        "{HEAD}profiles:
- schedulerName: loose
  plugins:
    filter:
      disabled: [{{name: TaintToleration}}, {{name: NodePorts}}]
- schedulerName: tight
"
    ))
    .unwrap();
    let w = c.warnings_for("sched.yaml", "loose");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
            w[0].starts_with("scheduler config sched.yaml: profiles[0].plugins: the filter plugin(s) TaintToleration, NodePorts are disabled, but the simulator still applies them"),
            "{w:?}"
        );
    assert!(c.warnings_for("sched.yaml", "tight").is_empty());
    // everything disabled, one enabled again: the others are named
    let c = load(&format!(
        "{HEAD}profiles:
- plugins:
    multiPoint:
      disabled: [{{name: '*'}}]
      enabled: [{{name: NodeResourcesFit}}]
"
    ))
    .unwrap();
    let w = c.warnings_for("f", "default-scheduler");
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, PodTopologySpread, InterPodAffinity are disabled"), "{w:?}");
    // an unknown filter cannot be applied: refused
    let e = error("profiles:\n- plugins:\n    filter:\n      enabled: [{name: MyFilter}]\n");
    assert_eq!(e.path, "profiles[0].plugins.filter.enabled[0].name");
    // ignoredResources: a warning too
    let c = load(&format!(
            "{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {{ignoredResources: [example.com/foo]}}\n"
        ))
        .unwrap();
    assert!(c.warnings_for("f", "default-scheduler")[0].contains("does not check example.com/foo"));
}

#[test]
fn yaml_errors_are_in_plain_words() {
    // a key given twice
    let e = error("percentageOfNodesToScore: 10\npercentageOfNodesToScore: 20\n");
    assert!(
        e.message
            .contains("a key given twice in one mapping (\"percentageOfNodesToScore\")"),
        "{e}"
    );
    assert_plain(&e);
    let e = error("profiles:\n- schedulerName: a\n  schedulerName: b\n");
    assert!(e.message.contains("given twice"), "{e}");
    // two documents
    let e = error("---\napiVersion: kubescheduler.config.k8s.io/v1\n");
    assert!(e.message.contains("more than one YAML document"), "{e}");
    assert_plain(&e);
    // nested too deep
    let e = error(&format!("profiles: {}{}\n", "[".repeat(70), "]".repeat(70)));
    assert!(e.message.contains("nested more than 64 levels deep"), "{e}");
    assert_plain(&e);
    // a wrong type
    let e = error("profiles: {schedulerName: a}\n");
    assert_eq!(e.path, "profiles");
    assert!(e.message.starts_with("expected a list"), "{e}");
}

#[test]
fn a_large_file_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.yaml");
    let mut text = String::from(HEAD);
    text.push_str("profiles:\n");
    while text.len() < 40 << 20 {
        text.push_str(
            "- {schedulerName: s, plugins: {score: {enabled: [{name: NodeResourcesFit}]}}}\n",
        );
    }
    std::fs::write(&path, &text).unwrap();
    let t = std::time::Instant::now();
    let e = SchedulerConfig::load(&path).unwrap_err();
    assert!(
        t.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(e.path, "(file)");
    assert!(e.message.contains("more than 4 MiB"), "{e}");
    let e = SchedulerConfig::from_yaml("big.yaml", &text).unwrap_err();
    assert!(e.message.contains("more than 4 MiB"), "{e}");
}
